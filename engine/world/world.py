"""The rigid-body world: bodies in structure-of-arrays form and the soft-step pipeline.

One ``World.step(dt)``:

1. kinematic targets -> kinematic velocities for this step;
2. world AABBs, fattened by a margin and swept by each body's motion over dt (speculative
   contacts need the pair *before* it touches), and the broadphase (engine.collision.broadphase's
   persistent Broadphase, its pairs filtered to this step's exact box overlaps);
3. waking: a sleeping island whose box overlaps a moving body wakes up (then the broadphase
   is redone so the woken bodies' own pairs are found);
4. narrowphase once for all candidate pairs with at least one awake dynamic body (convex
   pairs in one kernel, engine.collision.polytope_pairs; a pass with a compound or a mesh
   through engine.collision.nonconvex.collide_bodies too), keeping points within a per-pair speculative
   distance (base + how far the surfaces can close over dt). Convex pairs give one manifold; a Compound
   expands into its parts and a TriangleMesh (static or kinematic only) into the triangles
   its BVH returns, so a body pair may give several manifolds, told apart by a ``sub`` key;
5. the pair table (engine.collision.contacts, keyed by (body pair, sub)) matches points by feature id
   and hands back last step's impulses for warm starting;
6. graph colouring (engine.dynamics.graph) and the soft-step solver (engine.dynamics.solver) over
   the substeps, with integration (engine.dynamics.integrate) in between;
7. restitution, impulses stored, kinematic bodies snapped to their targets;
8. sleep timers and per-island sleeping (engine.dynamics.graph.islands); optional debug record.

Frames. Public poses are those of the body *origin* (the frame the shape is defined in, what
Blender keys); internally the dynamics uses centre-of-mass positions, since a body rotates
about its centre of mass, which for a hull or a compound need not be the origin.

Shapes: Box, Sphere, Capsule, ConvexHull, Compound (dynamic or not; exact mass properties of
its parts) and TriangleMesh (static or kinematic scenery only: a mesh has no volume to give
it mass, so add_body refuses a dynamic one and says what to use instead).

Mixing rule (the same as Blender's Bullet, so imported scenes mean the same): the friction of a
pair is friction_a * friction_b and its restitution is restitution_a * restitution_b. Damping
is Bullet's: v *= (1 - damping) ** dt.

Substeps: ``substeps=None`` picks ceil(dt / max_substep) per step, so the solver runs at about
the same rate whether the bake steps at 1/24 s or 1/60 s.
"""
import math
from typing import Any, NamedTuple

import numpy as np

from ..collision import manifold_cache
from ..collision.bounds import world_bounds
from ..collision.broadphase import Broadphase, overlapping
from ..collision.contacts import PairTable, check_body_count, key_bodies, pair_keys
from ..collision.nonconvex import body_mass_properties, check_body_shape, collide_bodies
from ..collision.polytope_pairs import (
    NO_REUSE,
    REUSE_ALL,
    REUSE_EACH,
    collide_convex_bodies,
    collide_polytope_bodies,
)
from ..collision.shape_table import ShapeTable
from ..core import detmath, quat
from ..core.errors import EngineError
from ..core.kinds import BodyKind, ShapeKind
from ..dynamics.arm_box import ArmBoxes
from ..dynamics.field_kernels import field_kick
from ..dynamics.graph import hash_order, islands
from ..dynamics.inertia_refresh import InertiaRefresh
from ..dynamics.integrate import settle_poses
from ..dynamics.round_bodies import fastest_turns
from ..dynamics.solver import NO_AXES, ContactSolver
from ..dynamics.struck import MAX_EARLY_ENDS, StruckBodies
from ..dynamics.substeps import run_pass
from ..features.deform import deform_mesh_body
from ..features.fields import FieldTable, field_forces
from .body_control import BodyControl
from .guard import StateGuard, sound_manifolds, unit_quaternion
from .pass_kernels import (
    body_reach,
    calm_awake,
    contact_setup,
    finite_or_zero,
    pair_inputs,
    pass_bodies,
    pass_bounds,
    passive_bodies,
)
from .recollide import EVERY, Recollide
from .record import StepRecord
from .settings import WorldSettings
from .world_joints import JointSet, JointWorldMixin

# Plain ints: numpy compares arrays with an enum member through its dunder probes (2,000
# enum lookups a frame of 27 cubes).
DYNAMIC, STATIC, KINEMATIC = int(BodyKind.DYNAMIC), int(BodyKind.STATIC), int(BodyKind.KINEMATIC)
POLYTOPE, TRIANGLE_MESH = int(ShapeKind.POLYTOPE), int(ShapeKind.TRIANGLE_MESH)
# Collision passes for spin (collision_steps_for), as multiples of the passes dt needs: for
# the surface travel, and for the turn per pass (rad), which only absurd spins reach.
MAX_SPIN_PASSES = 4
MAX_PASS_TURN = 1.0
MAX_TURN_PASSES = 16

# Per-body arrays: name -> (trailing shape, dtype, fill value for new rows).
_FIELDS = {
    "x": ((3,), np.float64, 0.0),          # centre of mass, world
    "pos": ((3,), np.float64, 0.0),        # origin, world (public)
    "q": ((4,), np.float64, 0.0),
    "vel": ((6,), np.float64, 0.0),        # [linear of the COM, angular], world
    "com": ((3,), np.float64, 0.0),        # centre of mass in the shape frame
    "inv_mass": ((), np.float64, 0.0),
    "inertia": ((3, 3), np.float64, 0.0),  # about the COM, shape-frame axes
    "inv_inertia": ((3, 3), np.float64, 0.0),
    "isotropic": ((), bool, True),
    "kind": ((), np.int8, DYNAMIC),
    "shape": ((), np.int64, 0),
    "friction": ((), np.float64, 0.5),
    "restitution": ((), np.float64, 0.0),
    "lin_damp": ((), np.float64, 0.0),
    "ang_damp": ((), np.float64, 0.0),
    "group": ((), np.int64, 1),
    "mask": ((), np.int64, -1),
    "sleep_time": ((), np.float64, 0.0),
    "sleeping": ((), bool, False),
    "island": ((), np.int64, -1),
    "has_target": ((), bool, False),
    "target_pos": ((3,), np.float64, 0.0),
    "target_q": ((4,), np.float64, 0.0),
    # Hand-off and deactivation (engine.world.body_control): the mass to switch back to dynamic
    # with, whether the body may sleep, its own sleep tolerances (< 0: the world's).
    "mass": ((), np.float64, 0.0),
    "can_sleep": ((), bool, True),
    "sleep_lin": ((), np.float64, -1.0),
    "sleep_ang": ((), np.float64, -1.0),
}
# Arrays that make up the simulation state (get_state / set_state); the rest is set-up.
_STATE_FIELDS = ("x", "pos", "q", "vel", "sleep_time", "sleeping", "island", "has_target",
                 "target_pos", "target_q")
# Restored by set_state when present (a body's kind may change mid-simulation, with its
# inverse mass and inertia: engine.world.body_control).
_KIND_FIELD = "kind"


# What a collision pass's kernel (engine.world.pass_kernels.pass_bodies) writes per body: name ->
# (trailing shape, dtype). Grow-only buffers kept across passes (World._pass_buffers).
_PASS_BUFFERS = {
    "awake": ((), bool), "act": ((), np.int64), "movers": ((), np.int64),
    "gyro": ((), np.int64), "reach": ((), np.float64), "ball": ((), bool),
    "axial": ((), bool), "rolling": ((), bool), "inv_mass": ((), np.float64),
    "inv_i": ((3, 3), np.float64), "box_axes": ((3, 3), np.float64),
    "box_lo": ((3,), np.float64), "box_hi": ((3,), np.float64),
    "round_axes": ((3,), np.float64), "lin_f": ((), np.float64), "ang_f": ((), np.float64),
    "saved_x": ((3,), np.float64), "saved_q": ((4,), np.float64),
    "saved_v": ((6,), np.float64), "arm": ((), np.float64), "start": ((), np.float64),
    "allow": ((), np.float64),
    # engine.world.pass_kernels.pass_bounds: boxes, rotations, who moves
    "rot": ((3, 3), np.float64), "lo": ((3,), np.float64), "hi": ((3,), np.float64),
    "swept": ((), bool), "moving": ((), bool), "passive": ((), bool),
}


class PassBodies(NamedTuple):
    """One collision pass's per-body inputs (World._pass_bodies): views of the world's pass
    buffers, valid until the next pass."""
    awake: np.ndarray       # (N,) bool: awake dynamic bodies
    act: np.ndarray         # awake dynamic bodies (indices)
    movers: np.ndarray      # those and the kinematic bodies
    gyro: np.ndarray        # the anisotropic ones of act
    inv_mass: np.ndarray    # (N,) the solver's: zero but for awake dynamic bodies
    inv_i: np.ndarray       # (N, 3, 3) world inverse inertia, as inv_mass
    box: tuple              # arm boxes (engine.dynamics.arm_box): axes, lo, hi
    rolling: np.ndarray     # (N,) bool: awake and round about an axis (round_bodies)
    round_axes: Any         # (N, 3) their world axes, zero for the rest; None if none
    lin_f: np.ndarray       # damping factors over a substep, aligned with act
    ang_f: np.ndarray
    struck: tuple           # (arm, start, allow) aligned with act (engine.dynamics.struck)


def _vec(value, n, what):
    arr = np.asarray(value, dtype=np.float64)
    if arr.shape != (n,):
        raise EngineError(f"{what} must be {n} numbers, got {value!r}")
    if not np.all(np.isfinite(arr)):
        raise EngineError(f"{what} must be finite, got {value!r}; check the object's transform "
                          "or velocity for NaN/inf")
    return arr


def _scalar(value, what, lo=0.0, hi=None):
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise EngineError(f"{what} must be a number, got {value!r}") from None
    if not math.isfinite(v) or v < lo or (hi is not None and v > hi):
        rng = f"in [{lo}, {hi}]" if hi is not None else f">= {lo}"
        raise EngineError(f"{what} must be finite and {rng}, got {value!r}")
    return v


def _rows_of(man, keep):
    """The manifolds dict (and its "geo" dict) at rows keep."""
    return {k: (_rows_of(v, keep) if isinstance(v, dict) else v[keep]) for k, v in man.items()}


class World(BodyControl, JointWorldMixin):
    """A rigid-body world.

    ``World(settings=WorldSettings(...))``, or ``World(**overrides)`` as a shorthand for
    ``World(settings=WorldSettings(**overrides))`` (both may be given: the overrides change the
    settings given). Every tunable (gravity, substeps, contact stiffness, sleeping, ccd...) is a
    field of engine.world.settings.WorldSettings, documented there with its unit; ``world.settings``
    reads them and ``world.settings = world.settings.replace(ccd=False)`` changes them between
    steps.

    CCD is by speculative contacts: AABBs are swept by each body's motion over the step and the
    narrowphase keeps points within base + closing distance over the step, so a contact exists
    before the bodies touch and its bias s/h stops them at the surface (a 0.1 m sphere at
    200 m/s stops at a 5 cm wall at 24 fps: tests/test_world_ccd.py).

    Pair coefficients combine by multiplication (Blender/Bullet): mu = mu_a * mu_b,
    e = e_a * e_b. Damping: v *= (1 - d) ** dt (Bullet).

    Public read attributes (views, (N, ...)): positions, orientations (w, x, y, z) of the
    body origins, linear_velocities (of the centres of mass), angular_velocities, sleeping,
    kinds (BodyKind codes), body_count; last_record (a StepRecord when recording). Use
    set_velocity / set_pose to change a body (this wakes it).

    Guard (engine.world.guard): ``guard_events`` is a list of GuardEvent(time, body, reason), one per
    body whose state went non-finite in a step; that body was kept at its last good pose and
    put to sleep, and the step went on for the others. A correct step never adds to it.

    Limits: at most 2**31 bodies (pair keys hold two 31-bit body indices; add_body raises an
    EngineError beyond). A body pair may have any number of manifolds.
    """

    # Turning polytopes have their manifolds taken again between substeps (engine.world.recollide)
    # instead of calling for whole collision passes, in worlds whose pair table holds at
    # least recollide_min_manifolds polytope-pair manifolds. Below, a rebuild's fixed cost (a
    # narrowphase call, ~1.2 ms at 27 cubes) is more than the passes it saves: 27 tumbling
    # cubes 24-25 -> 30 ms/frame, 125 rocks 35-38 -> 40 (docs/benchmarks/speed.md); above,
    # 216 cubes 91-96 -> 75-80 and 1000 cubes 366-377 -> 266-278. recollide_in_pass = False:
    # never (for benchmarks and tests that compare the two).
    recollide_in_pass = True
    recollide_min_manifolds = 256
    # Candidate pairs from which a collision pass reuses part of its manifolds
    # (engine.collision.manifold_cache); below, all or nothing (_reuse_mode). Measured in the
    # numpy engine (partial reuse cost 27 cubes 0.5 ms per pass and saved nothing; 125 rocks
    # late in their pile, ~240 pairs, 6.4 -> 2.9 ms of narrowphase per pass); compiled, 0
    # against 128 changed 27 cubes, the rocks and the pyramid by less than this machine's
    # noise (5.1 / 13.3 / 15.8 against 5.5 / 16.5 / 17.6 ms a frame, the pyramid above 128
    # pairs in both).
    reuse_min_pairs = 128

    def __init__(self, settings=None, **overrides):
        if settings is None:
            settings = WorldSettings()
        elif not isinstance(settings, WorldSettings):
            raise EngineError(f"settings must be an engine.WorldSettings, got {settings!r}")
        self.settings = settings.replace(**overrides) if overrides else settings
        self.joints = JointSet()
        self.table = ShapeTable()
        self.pairs = PairTable()
        self._bp = Broadphase(margin=self.settings.broadphase_slack)
        self.record = False
        self.last_record = None
        self.time = 0.0
        self._n = 0
        self._cap = 0
        self._a = {}
        self._grow(8)
        self._collide = None  # narrowphase function; see _narrowphase
        self._pass_count = 0        # collision passes run: with the body count, keys per-pass caches
        # Per-pass caches, keyed by (passes run, bodies): (key, _reach()), (key,
        # *_round_flags()); and ((pair keys, bodies), _table_pairs()).
        self._reach_of: tuple[Any, ...] = ((-1, -1), None)
        self._round_of: tuple[Any, ...] = ((-1, -1), None, None)
        self._table_pairs_of: tuple[Any, ...] = ((None, -1), None)
        self.fields = None    # force fields (engine.features.fields.FieldTable); see set_fields
        self._field_exempt = np.zeros(0, dtype=np.int64)
        self.guard_events = []     # engine.world.guard.GuardEvent per repaired body (see the class doc)
        self._guard = StateGuard()
        self._pass_buf: dict = {}      # _PASS_BUFFERS, grow-only
        self._pass_views: tuple[int, dict] = (-1, {})
        self._poly_of: tuple[int, Any] = (-1, None)   # _convex_pairs' per-body flags
        self._idle_refresh: tuple[int, Any] = (-1, None)   # _inertia_refresh with no body
        self._arm_boxes = ArmBoxes()   # where a contact may push a body (engine.dynamics.arm_box)
        self.last_recollided = 0       # manifolds taken again in the last pass (recollide)
        self._recollide_on = False     # this step's choice (collision_steps_for)

    @property
    def settings(self):
        """The world's WorldSettings (frozen; assign a new one to change them)."""
        return self._settings

    @settings.setter
    def settings(self, value):
        if not isinstance(value, WorldSettings):
            raise EngineError(f"settings must be an engine.WorldSettings, got {value!r}")
        self._settings = value
        # The step multiplies gravity into arrays: keep it as one.
        self.gravity = np.array(value.gravity, dtype=np.float64)

    # -- storage ----------------------------------------------------------------------------
    def _grow(self, cap):
        for name, (shape, dtype, fill) in _FIELDS.items():
            new = np.full((cap,) + shape, fill, dtype=dtype)
            old = self._a.get(name)
            if old is not None:
                new[:self._n] = old[:self._n]
            self._a[name] = new
        self._cap = cap
        self._views: tuple[int, dict] = (-1, {})    # _v's views, made again for new arrays

    def _v(self, name):
        """The live rows [:N] of a per-body array (views made once per body count: a pass
        reads some fifty of them)."""
        views = self._views
        if views[0] != self._n:
            views = self._views = (self._n, {k: v[:self._n] for k, v in self._a.items()})
        return views[1][name]

    @property
    def body_count(self):
        return self._n

    @property
    def positions(self):
        return self._a["pos"][:self._n]

    @property
    def orientations(self):
        return self._a["q"][:self._n]

    @property
    def linear_velocities(self):
        return self._a["vel"][:self._n, :3]

    @property
    def angular_velocities(self):
        return self._a["vel"][:self._n, 3:]

    @property
    def sleeping(self):
        return self._a["sleeping"][:self._n]

    @property
    def kinds(self):
        return self._a["kind"][:self._n]

    @property
    def masses(self):
        im = self._a["inv_mass"][:self._n]
        return np.where(im > 0, 1.0 / np.where(im > 0, im, 1.0), np.inf)

    @property
    def centers_of_mass(self):
        return self._a["x"][:self._n]

    # -- bodies -----------------------------------------------------------------------------
    def add_body(self, shape, position=(0.0, 0.0, 0.0), orientation=(1.0, 0.0, 0.0, 0.0),
                 linear_velocity=(0.0, 0.0, 0.0), angular_velocity=(0.0, 0.0, 0.0),
                 kind="dynamic", density=None, mass=None, friction=0.5, restitution=0.0,
                 linear_damping=0.0, angular_damping=0.0, group=1, mask=-1):
        """Add a body and return its index. Mass: give ``density`` (kg/m^3) or ``mass`` (kg),
        not both; default 1 kg (Blender's default). Static and kinematic bodies ignore mass.
        shape: Box, Sphere, Capsule, ConvexHull, Compound, or TriangleMesh (kind 'static' or
        'kinematic' only)."""
        k = BodyKind.parse(kind)
        if not hasattr(shape, "core_points") or getattr(shape, "kind", None) is None:
            raise EngineError(f"shape must be an engine shape (Box, Sphere, Capsule, "
                              f"ConvexHull, Compound, TriangleMesh), got {shape!r}")
        check_body_shape(shape, k)   # a TriangleMesh may be static or kinematic only
        check_body_count(self._n + 1)
        pos = _vec(position, 3, "position")
        q = _vec(orientation, 4, "orientation")
        qn = np.linalg.norm(q)
        if qn < 1e-9:
            raise EngineError(f"orientation {orientation!r} has zero length; give a unit "
                              "quaternion (w, x, y, z), e.g. (1, 0, 0, 0)")
        q = q / qn
        lv = _vec(linear_velocity, 3, "linear_velocity")
        av = _vec(angular_velocity, 3, "angular_velocity")
        fr = _scalar(friction, "friction")
        re = _scalar(restitution, "restitution")
        ld = _scalar(linear_damping, "linear_damping", 0.0, 1.0)
        ad = _scalar(angular_damping, "angular_damping", 0.0, 1.0)
        if density is not None and mass is not None:
            raise EngineError("give density or mass, not both")
        if k == DYNAMIC:
            if mass is not None:
                mass = _scalar(mass, "mass")
                if mass <= 0:
                    raise EngineError(f"mass must be positive, got {mass!r}; use kind='static' "
                                      "for an immovable body")
            elif density is not None:
                density = _scalar(density, "density")
                if density <= 0:
                    raise EngineError(f"density must be positive, got {density!r}; use "
                                      "kind='static' for an immovable body")
            else:
                mass = 1.0
            mp = body_mass_properties(shape, density, mass)
            m = float(mp.mass)
            inertia = np.asarray(mp.inertia, dtype=np.float64).reshape(3, 3)
            com = np.asarray(mp.center, dtype=np.float64).reshape(3)
            if not (m > 0 and np.all(np.isfinite(inertia))):
                raise EngineError(f"shape {shape!r} has no usable mass properties")
            inv_mass = 1.0 / m
            inv_inertia = np.linalg.inv(inertia)
            iso = bool(np.allclose(inertia, np.eye(3) * np.trace(inertia) / 3.0,
                                   rtol=1e-9, atol=1e-12 * np.trace(inertia)))
        else:
            com = np.zeros(3)
            inv_mass = 0.0
            inertia = np.zeros((3, 3))
            inv_inertia = np.zeros((3, 3))
            iso = True
            if k == STATIC:
                lv = np.zeros(3)
                av = np.zeros(3)
        if self._n == self._cap:
            self._grow(2 * self._cap)
        i = self._n
        self._n += 1
        a = self._a
        a["q"][i] = q
        a["pos"][i] = pos
        a["com"][i] = com
        a["x"][i] = pos + quat.rotate(q, com)
        a["vel"][i, :3] = lv
        a["vel"][i, 3:] = av
        a["inv_mass"][i] = inv_mass
        a["mass"][i] = m if k == DYNAMIC else 0.0
        a["inertia"][i] = inertia
        a["inv_inertia"][i] = inv_inertia
        a["isotropic"][i] = iso
        a["kind"][i] = k
        a["shape"][i] = self.table.add(shape)
        a["friction"][i] = fr
        a["restitution"][i] = re
        a["lin_damp"][i] = ld
        a["ang_damp"][i] = ad
        a["group"][i] = int(group)
        a["mask"][i] = int(mask)
        for name in ("sleep_time", "sleeping", "island", "has_target", "can_sleep", "sleep_lin",
                     "sleep_ang"):
            a[name][i] = _FIELDS[name][2]
        return i

    def _check_index(self, index):
        if not (0 <= int(index) < self._n):
            raise EngineError(f"body index {index!r} out of range (the world has {self._n} bodies)")
        return int(index)

    def wake(self, index):
        """Wake the body and its island."""
        i = self._check_index(index)
        a = self._a
        if a["sleeping"][i]:
            isl = a["island"][i]
            sel = a["sleeping"][:self._n] & (a["island"][:self._n] == isl)
            sel[i] = True
            a["sleeping"][:self._n][sel] = False
            a["sleep_time"][:self._n][sel] = 0.0
        a["sleep_time"][i] = 0.0

    def set_velocity(self, index, linear=None, angular=None):
        """Set a body's linear (of the COM) and/or angular velocity; wakes it."""
        i = self._check_index(index)
        if linear is not None:
            self._a["vel"][i, :3] = _vec(linear, 3, "linear velocity")
        if angular is not None:
            self._a["vel"][i, 3:] = _vec(angular, 3, "angular velocity")
        self.wake(i)

    def set_pose(self, index, position=None, orientation=None):
        """Teleport a body (origin pose); wakes it."""
        i = self._check_index(index)
        a = self._a
        if position is not None:
            a["pos"][i] = _vec(position, 3, "position")
        if orientation is not None:
            a["q"][i] = unit_quaternion(_vec(orientation, 4, "orientation"), "orientation")
        a["x"][i] = a["pos"][i] + quat.rotate(a["q"][i], a["com"][i])
        self.wake(i)

    def set_kinematic_target(self, index, position, orientation=None):
        """Pose (of the origin) a kinematic body reaches at the end of the next step. Its
        velocities for that step follow from the motion, so it pushes bodies correctly."""
        i = self._check_index(index)
        if self._a["kind"][i] != KINEMATIC:
            raise EngineError(f"body {i} is not kinematic; set_kinematic_target moves "
                              "kinematic bodies only (use set_pose for others)")
        self._a["target_pos"][i] = _vec(position, 3, "target position")
        q = self._a["q"][i] if orientation is None else _vec(orientation, 4, "target orientation")
        self._a["target_q"][i] = unit_quaternion(q, "target orientation")
        self._a["has_target"][i] = True

    # -- force fields (engine.features.fields) -------------------------------------------------------
    def set_fields(self, fields, exempt=()):
        """Force fields acting on the dynamic bodies from the next step on, until replaced:
        an engine.features.fields.FieldTable (or None / empty to clear). ``exempt``: indices of bodies
        the fields leave alone (Blender: a rigid body that is itself a field).

        The fields are evaluated before every solver substep from the bodies' current
        centre-of-mass positions and velocities (Wind's flow, Drag, Magnetic and Harmonic
        damping depend on velocity; Blender too evaluates them per Bullet substep) and the
        sum is applied at the centre of mass (no torque, as Blender's central force). A
        body with a non-zero field force does not fall asleep, and a sleeping one wakes."""
        if fields is not None and not isinstance(fields, FieldTable):
            raise EngineError(f"fields must be an engine.features.fields.FieldTable or None, got "
                              f"{fields!r}")
        ex = np.unique(np.asarray(exempt, dtype=np.int64).reshape(-1))
        if len(ex) and (ex[0] < 0 or ex[-1] >= self._n):
            raise EngineError(f"exempt body indices {exempt!r} out of range (the world has "
                              f"{self._n} bodies)")
        self.fields = fields if fields is not None and len(fields) else None
        self._field_exempt = ex

    def _field_targets(self, index):
        return index[~np.isin(index, self._field_exempt)] if len(self._field_exempt) else index

    def _field_pass(self, act):
        """The compiled substeps' fields tuple for a pass whose awake dynamic bodies are act
        (engine.dynamics.substeps.run_substeps), or None without fields."""
        if self.fields is None:
            return None
        ints, floats = self.fields.pack()
        return (ints, floats, self.fields.rate, self._field_targets(act), self._a["inv_mass"],
                self._a["sleep_time"])

    def _field_kick(self, vel, act, h):
        """Velocity change h F / m of the fields' forces on the awake dynamic bodies act (what
        the compiled substeps do at each substep's start; tests/substep_reference.py)."""
        fields = self._field_pass(act)
        if fields is not None:
            ints, floats, rate, idx, inv_mass, sleep_time = fields
            field_kick(ints, floats, rate, idx, self._a["x"], vel, inv_mass, sleep_time, h)

    def _field_wake(self):
        """Wake the islands of sleeping dynamic bodies that a field pushes."""
        if self.fields is None:
            return
        idx = self._field_targets(np.flatnonzero(self._v("sleeping")
                                                 & (self._v("kind") == DYNAMIC)))
        if not len(idx):
            return
        force = field_forces(self.fields, self._a["x"][idx], self._a["vel"][idx, :3])
        pushed = idx[np.any(force != 0.0, axis=1)]
        if len(pushed):
            sleeping, isl = self._v("sleeping"), self._v("island")
            wake = sleeping & np.isin(isl, isl[pushed])
            wake[pushed] = True
            sleeping[wake] = False
            self._v("sleep_time")[wake] = 0.0

    def set_mesh_vertices(self, index, vertices):
        """New vertex positions (same topology, the count the mesh was built from) for a
        static or kinematic body's TriangleMesh, used from the next step; wakes sleepers
        near the moved part. The motion is positional (no surface velocity): see
        engine/features/deform.py. Returns the largest vertex displacement."""
        return deform_mesh_body(self, index, vertices)

    # -- state ------------------------------------------------------------------------------
    def get_state(self):
        """The full simulation state as a dict of numpy arrays (copies)."""
        state = {name: self._v(name).copy() for name in _STATE_FIELDS + (_KIND_FIELD,)}
        state.update(self.pairs.get_state())
        state.update(self.joints.get_state())
        state["time"] = np.array(self.time)
        state["body_count"] = np.array(self._n)
        return state

    def set_state(self, state):
        """Restore a state from get_state(); stepping then reproduces the original bit for bit."""
        if int(state["body_count"]) != self._n:
            raise EngineError(f"state has {int(state['body_count'])} bodies, the world {self._n}; "
                              "restore a state into the world it came from")
        self._restore_kinds(state.get(_KIND_FIELD))
        for name in _STATE_FIELDS:
            self._v(name)[...] = state[name]
        self.pairs.set_state(state)
        self.joints.set_state(state)
        self.time = float(state["time"])

    # -- step -------------------------------------------------------------------------------
    def step(self, dt, record=None):
        """Advance the world by dt seconds (collision passes and substeps chosen internally).

        A step longer than ``max_collision_step`` (1/48 s: a 1/24 s bake frame) is split into
        equal collision passes, each with its own broadphase, narrowphase and solver substeps:
        contact manifolds are only as good as the poses they were computed at, and over a whole
        1/24 s frame a spinning or sliding hull brings new features into contact that one pass
        cannot see (two passes cut the demo scene's worst penetration to about a third, at no
        extra cost since each pass needs half the substeps: compare ``bash scripts/demo.sh``'s
        max penetration with WorldSettings(max_collision_step=1/24)).
        Kinematic targets are interpolated (lerp, slerp) across the passes.
        """
        dt = _scalar(dt, "dt")
        if dt <= 0:
            raise EngineError(f"dt must be positive, got {dt!r}")
        self._field_wake()
        k = self.collision_steps_for(dt)
        nsub = self.substeps_for(dt, k) // k
        if self._n == 0:
            self._step(dt, nsub, record)
            return
        a = self._a
        kin = np.flatnonzero(self._v("has_target"))
        if len(kin):
            p0, q0 = self._v("pos")[kin].copy(), self._v("q")[kin].copy()
            p1, q1 = a["target_pos"][kin].copy(), a["target_q"][kin].copy()
        h = dt / k / nsub
        early = MAX_EARLY_ENDS
        for j in range(1, k + 1):
            # A pass a struck body ends early (engine.dynamics.struck) leaves the rest of its time,
            # and its kinematic targets, to a new pass at the same substep length.
            left = nsub
            while left:
                if len(kin):
                    f = j / k
                    a["target_pos"][kin] = p1 if j == k else p0 + f * (p1 - p0)
                    a["target_q"][kin] = q1 if j == k else quat.slerp(q0, q1, f)
                    a["has_target"][kin] = True
                # (dt / k itself for a whole pass: h * nsub may differ from it in the last bit)
                done = self._step(dt / k if left == nsub else h * left, left,
                                  record if j == k else False, may_end=early > 0)
                left -= done
                early -= bool(left)

    def _step(self, dt, nsub, record=None, may_end=False):
        """One collision pass: broadphase, narrowphase, solver substeps, sleep. Returns the
        substeps it ran: fewer than nsub when may_end and a struck body ended it early
        (engine.dynamics.struck)."""
        record = self.record if record is None else bool(record)
        self.last_recollided = 0
        self._pass_count += 1
        n = self._n
        if n == 0:
            self.time += dt
            return nsub
        h = dt / nsub
        a = self._a
        x, q, vel, pos = self._v("x"), self._v("q"), self._v("vel"), self._v("pos")
        kind = self._v("kind")
        sleeping = self._v("sleeping")

        # 1. Kinematic targets -> velocities.
        kin_t = np.flatnonzero(self._v("has_target"))
        self._kinematic_velocities(kin_t, dt)

        # 2-3. AABBs, broadphase, waking: candidate pairs with an awake dynamic body.
        rot, lo, hi, moving, passive = self._pass_bounds(dt)
        # (sleeping off: bodies may still start asleep, engine.world.body_control)
        if sleeping.any() and self._joint_wake((kind == DYNAMIC) & ~sleeping, moving):
            passive_bodies(kind, sleeping, moving, STATIC, KINEMATIC, passive)  # joints link islands
        ia, ib = self._broadphase(lo, hi, passive)
        if sleeping.any() and len(ia):
            ia, ib = overlapping(ia, ib, lo, hi)
            if self._wake_touched(ia, ib, sleeping, moving, lo, hi, dt):
                # What woke drags in what it is glued to, in this pass (engine.world.world_joints).
                self._joint_wake((kind == DYNAMIC) & ~sleeping, moving)
                passive_bodies(kind, sleeping, moving, STATIC, KINEMATIC, passive)
                ia, ib = self._broadphase(lo, hi, passive)
        pb = self._pass_bodies(rot, h)
        # The exact overlap of this pass's boxes, pairs with an awake dynamic body only.
        ia, ib = overlapping(ia, ib, lo, hi, pb.awake)
        awake = pb.awake
        ia, ib = self.joints.filter_pairs(ia, ib)  # joints' disable_collisions

        # 4. Narrowphase: manifolds with at least one point; a body pair may have several
        # (compound parts, triangle-mesh normal clusters), told apart by ``sub``. No candidate
        # pair (a free body, a sparse scene in flight) skips it unless a record is wanted.
        if len(ia) or record:
            ia, ib, sub, man = self._narrowphase(ia, ib, vel, dt, rot)
            ids, count = man["ids"], man["count"]
        else:
            sub = np.zeros(0, dtype=np.int64)
            ids, count = np.zeros((0, 4), dtype=np.int64), np.zeros(0, dtype=np.int64)
            man = {"normal": np.zeros((0, 3)), "points": np.zeros((0, 4, 3)),
                   "separation": np.zeros((0, 4)), "count": count, "ids": ids}
        keys = pair_keys(ia, ib)

        act, movers, gyro, lin_f, ang_f = pb.act, pb.movers, pb.gyro, pb.lin_f, pb.ang_f
        inertia_g = a["inertia"][gyro]
        if len(ia) == 0 and not self._joints_active(awake):
            # 5-6. No contact this pass: integration alone (the compiled substeps without
            # contacts or sweeps: what the solver passes would leave unchanged).
            run_pass(None, None, None, None, nsub, h, 0, 0, vel, x, q, np.zeros((n, 6)), act,
                     movers, self.gravity, lin_f, ang_f, gyro, inertia_g,
                     fields=self._field_pass(act))
            imp_n, imp_f, imp_f2 = np.zeros((0, 4)), np.zeros((0, 4, 3)), np.zeros((0, 4, 2))
        else:
            imp_n, imp_f, imp_f2, done = self._solve(ia, ib, sub, man, keys, pb, rot, h,
                                                     nsub, inertia_g, may_end)
            if done < nsub:
                dt, nsub = done * h, done
                kin_t = kin_t[:0]   # the next pass moves them on to their targets
            if not count.all():     # pairs engine.world.recollide found apart: no manifold to keep
                live = count > 0
                ia, ib, sub, keys = ia[live], ib[live], sub[live], keys[live]
                imp_n, imp_f, imp_f2 = imp_n[live], imp_f[live], imp_f2[live]
                man = _rows_of(man, live)
                ids, count = man["ids"], man["count"]

        # 7. Store impulses (never a non-finite one: see engine.world.guard), snap kinematic bodies.
        finite_or_zero(imp_n, imp_f, imp_f2)
        # Old rows are kept only for sleepers (_keep_pair): with none, no old row is asked.
        self.pairs.store(keys, ids, count, imp_n, imp_f, sub=sub, geo=man.get("geo"),
                         keep=self._keep_pair if sleeping.any() else None, owned=True)
        if len(kin_t):
            x[kin_t] = a["target_pos"][kin_t] + quat.rotate(a["target_q"][kin_t], a["com"][kin_t])
            q[kin_t] = a["target_q"][kin_t]
            a["has_target"][kin_t] = False
        if settle_poses(movers, x, q, vel, pos, self._v("com")):
            self.guard_events += self._guard.repair(
                self.time, x, q, vel, pos, lambda b: quat.rotate(q[b], a["com"][b]), sleeping,
                self._v("sleep_time"), self._v("island"))

        # 8. Sleep.
        if self.settings.sleeping:
            touching = (imp_n.max(axis=1) > 0.0) if len(ia) else np.zeros(0, dtype=bool)
            ja, jb = self.joints.edges(awake)
            self._update_sleep(dt, awake, np.concatenate((ia[touching], ja)),
                               np.concatenate((ib[touching], jb)), moving)
        self.time += dt
        if record:
            self.last_record = self._make_record(ia, ib, sub, man, imp_n, imp_f2, lo, hi)
        return nsub

    def _solve(self, ia, ib, sub, man, keys, pb, rot, h, nsub, inertia_g, may_end=False):
        """Steps 5-6 of a pass with contacts: warm start from the pair table, the soft-step
        solver over the substeps with integration in between, restitution. Returns the
        impulses (normal (M, 4), friction world vectors (M, 4, 3), along tangents (M, 4, 2))
        and the substeps run (fewer than nsub if may_end and a body was struck: engine.dynamics.struck).
        pb: the pass's PassBodies."""
        x, q, vel = self._v("x"), self._v("q"), self._v("vel")
        awake, act, movers, inv_mass, inv_i = pb.awake, pb.act, pb.movers, pb.inv_mass, pb.inv_i
        normal = man["normal"]
        # 5-6. Warm start from the pair table, the solver's rows in sweep order: one call.
        t = self.pairs
        solver = ContactSolver.blank(len(ia), h, self.settings, pb.round_axes is not None)
        solver.order = contact_setup(
            t.keys, t.sub, t.ids, t.count, t.normal, t.friction, keys, ia, ib, sub, normal,
            man["points"], man["separation"], man["count"], man["ids"], awake, self.gravity,
            self._v("friction"), self._v("restitution"), hash_order(len(ia)), x, inv_mass,
            inv_i, *pb.box, self._reach(), NO_AXES if pb.round_axes is None else pb.round_axes,
            vel, float(h), self._polytope_bodies(), solver.prepared())
        joints = (self._joint_solver(awake, inv_mass, inv_i, h,  # None without live joints
                                     contact_bodies=np.concatenate((ia, ib)))
                  if self.joints.n else None)
        # Anisotropic bodies that turn far within the pass get their tensor taken again, and
        # round ones their rows whenever their axis tilts (engine.dynamics.inertia_refresh).
        refresh = self._inertia_refresh(pb.gyro, pb.rolling, q, inv_i)
        # Polytope pairs whose bodies turn far are taken again between substeps.
        again = self._recollide(ia, ib, normal, awake)
        struck = None
        if may_end and self.settings.ccd and len(act):
            struck = StruckBodies(act, *pb.struck)
        dpose = np.zeros((self._n, 6))
        done = self._substeps_compiled(solver, joints, refresh, struck, again, man, nsub, h, act,
                                       movers, pb.lin_f, pb.ang_f, pb.gyro, inertia_g, dpose,
                                       inv_i)
        if joints:
            joints.finish()
        self.last_recollided = 0 if again is None else again.taken
        solver.restitution(vel, self.settings.restitution_threshold)
        imp_n, imp_f, imp_f2, _ = solver.impulses(tangents=False)
        return imp_n, imp_f, imp_f2, done

    def _substeps_compiled(self, solver, joints, refresh, struck, again, man, nsub, h, act,
                           movers, lin_f, ang_f, gyro, inertia_g, dpose, inv_i):
        """The substeps of a pass, contacts, joints and fields, compiled
        (engine.dynamics.substeps.run_pass), stopping only where the fields, refresh, struck
        or again have work in Python. Returns the substeps run."""
        x, q, vel = self._v("x"), self._v("q"), self._v("vel")

        def recollide(s):
            again.done = s - 1      # update() counts the substep it follows
            again.update(solver, refresh, man, vel, dpose, h, (nsub - s) * h, inv_i)
        return run_pass(solver, joints, refresh, struck, nsub, h, self.settings.iterations,
                        self.settings.relax_iterations, vel, x, q, dpose, act, movers,
                        self.gravity, lin_f, ang_f, gyro, inertia_g,
                        fields=self._field_pass(act),
                        recollide=None if again is None else recollide, every=EVERY)

    def _recollide(self, ia, ib, normal, awake):
        """The pass's Recollide (engine.world.recollide) over its polytope-pair manifolds, or None
        (not this step: see recollide_min_manifolds; or no such manifold)."""
        if not self._recollide_on:
            return None
        rows = np.flatnonzero(self._convex_pairs(ia, ib))
        return Recollide(self, rows, ia, ib, normal, awake) if len(rows) else None

    def _inertia_refresh(self, gyro, axial, q, inv_i):
        """The pass's InertiaRefresh: the anisotropic awake bodies gyro and the awake bodies
        round about an axis (axial (N,) bool), whose rows follow their axis."""
        bodies = np.union1d(gyro, np.flatnonzero(axial)) if axial.any() else gyro
        if not len(bodies):
            # Nothing to follow (boxes, balls lying still): one empty refresh serves every
            # such pass (it holds no state a pass changes).
            if self._idle_refresh[0] != self._n:
                self._idle_refresh = (self._n, InertiaRefresh(bodies, q, inv_i,
                                                              self._v("inv_inertia")))
            return self._idle_refresh[1]
        return InertiaRefresh(bodies, q, inv_i, self._v("inv_inertia"), axial=axial[bodies],
                              reach=self._reach()[bodies])

    def _pass_buffers(self):
        """Views [:n] of the grow-only buffers the pass kernel writes (_PASS_BUFFERS), kept
        across passes: a pass allocates none of them."""
        n = self._n
        if self._pass_views[0] != n:
            buf = self._pass_buf
            if not buf or len(buf["reach"]) < n:
                buf = {k: np.empty((self._cap,) + shape, dtype)
                       for k, (shape, dtype) in _PASS_BUFFERS.items()}
                self._pass_buf = buf
            self._pass_views = (n, {k: v[:n] for k, v in buf.items()})
        return self._pass_views[1]

    def _pass_bodies(self, rot, h):
        """The pass's PassBodies, in one kernel call (engine.world.pass_kernels.pass_bodies):
        awake and moving bodies, the solver's masses and inertias, arm boxes, reach and
        round flags (cached for _reach and _round_flags), damping factors, the struck test's
        speeds, and the guard's copy of the movers' starting state."""
        b = self._pass_buffers()
        t, arms = self.table, self._arm_boxes
        kind, shape, com = self._v("kind"), self._v("shape"), self._v("com")
        n_act, n_mov, n_gyro, boxes_ok, rolling = pass_bodies(
            kind, self._v("sleeping"), self._v("isotropic"), DYNAMIC, KINEMATIC, shape, t.kind,
            t.bound_radius, com, rot, self._v("inv_mass"), self._v("inv_inertia"),
            self._v("lin_damp"), self._v("ang_damp"), float(h), self._v("x"), self._v("q"),
            self._v("vel"), self.settings.speculative_distance, arms.axes, arms.lo, arms.hi,
            arms.done, b["awake"], b["act"], b["movers"], b["gyro"], b["reach"], b["ball"],
            b["axial"], b["rolling"], b["inv_mass"], b["inv_i"], b["box_axes"], b["box_lo"],
            b["box_hi"], b["round_axes"], b["lin_f"], b["ang_f"], b["saved_x"],
            b["saved_q"], b["saved_v"], b["arm"], b["start"], b["allow"])
        key = (self._pass_count, self._n)
        self._reach_of = (key, b["reach"])
        self._round_of = (key, b["ball"], b["axial"])
        # A shape no dynamic body had before: its principal box, once (arm_box.ArmBoxes).
        box = ((b["box_axes"], b["box_lo"], b["box_hi"]) if boxes_ok
               else arms.world(t, shape, kind, self._v("inertia"), com, rot))
        movers = b["movers"][:n_mov]
        self._guard.keep(movers, b["saved_x"][:n_mov], b["saved_q"][:n_mov],
                         b["saved_v"][:n_mov])
        return PassBodies(b["awake"], b["act"][:n_act], movers, b["gyro"][:n_gyro],
                          b["inv_mass"], b["inv_i"], box, b["rolling"],
                          b["round_axes"] if rolling else None, b["lin_f"][:n_act],
                          b["ang_f"][:n_act],
                          (b["arm"][:n_act], b["start"][:n_act], b["allow"][:n_act]))

    def _reach(self):
        """(N,) bounding radius of each body about its centre of mass (m), taken once a pass
        (the solver, the struck test, the refresh and recollide all read it)."""
        if self._reach_of[0] != (self._pass_count, self._n):
            self._body_reach()
        return self._reach_of[1]

    def _round_flags(self):
        """(balls, axial) (N,) bool: the centred balls and the bodies round about their Z
        axis (engine.dynamics.round_bodies), taken once a pass."""
        if self._round_of[0] != (self._pass_count, self._n):
            self._body_reach()
        return self._round_of[1:]

    def _body_reach(self):
        """_reach and _round_flags outside a pass's kernel (collision_steps_for before the
        first pass)."""
        b = self._pass_buffers()
        body_reach(self._v("shape"), self.table.kind, self.table.bound_radius, self._v("com"),
                   b["reach"], b["ball"], b["axial"])
        key = (self._pass_count, self._n)
        self._reach_of = (key, b["reach"])
        self._round_of = (key, b["ball"], b["axial"])

    def collision_steps_for(self, dt):
        """Collision passes one step of dt is split into: ceil(dt / max_collision_step), more
        while an awake body spins fast enough that its surface would sweep more than
        ``max_spin_travel`` in one pass (speculative contacts cannot see the new features a
        spinning hull turns into contact), at most MAX_SPIN_PASSES times that; and, whatever
        that cap, enough passes (at most MAX_TURN_PASSES times) that no awake body turns more
        than MAX_PASS_TURN in one: contacts are linear in the rotation over a pass, and a 27 g
        needle spun to 2400 rad/s, two turns per pass under the first cap, had its speculative
        contacts pump energy into it (tests/test_fuzz_world.py seed 137, once its manifolds
        held the deepest point: clip.incident_face).

        It also settles whether the step's passes take turning polytopes' manifolds again
        within the pass (engine.world.recollide; World.recollide_min_manifolds): step() asks it
        first, so every pass of a step makes the same choice."""
        k = max(1, math.ceil(dt / self.settings.max_collision_step - 1e-9))
        self._recollide_on = self._recollide_wanted()
        if self._n == 0:
            return k
        # Only bodies in the pair table (touching, or within the speculative margin of the
        # last pass, which with ccd covers the closing distance of a step) or in a joint
        # count: a body spinning in free flight has no manifold to go stale, and made every
        # pass of the whole world pay for a thrown cube's spin (27 tumbling cubes: 4.25 ->
        # 3.06 passes a frame).
        in_pairs, in_joints, handled = self._spinning_candidates()
        if not len(in_pairs) and not len(in_joints):
            return k
        # In a pair, only a turn that moves the body's surface counts (not a ball's:
        # engine.dynamics.round_bodies); in a joint, the whole turn. Bodies in polytope
        # pairs only have theirs taken again within the pass instead (engine.world.recollide);
        # their spin still bounds the turn per pass below.
        vel, q = self._v("vel"), self._v("q")
        balls, axial = self._round_flags()
        radius = self.table.bound_radius[self._v("shape")]
        travel, fastest = fastest_turns(in_pairs, ~handled, vel, q, balls, axial, radius, True)
        if len(in_joints):
            t_j, f_j = fastest_turns(in_joints, np.ones(len(in_joints), dtype=bool), vel, q,
                                     balls, axial, radius, False)
            travel, fastest = max(travel, t_j), max(fastest, f_j)
        k_spin = math.ceil(travel * dt / self.settings.max_spin_travel - 1e-9)
        k_turn = math.ceil(fastest * dt / MAX_PASS_TURN - 1e-9)
        return max(min(max(k, k_spin), MAX_SPIN_PASSES * k), min(k_turn, MAX_TURN_PASSES * k))

    def _spinning_candidates(self):
        """Awake dynamic bodies (indices) in a pair of the pair table, and in a live joint
        other than a pure point lock: a joint's rows (a hinge's limit) are as linear over a
        pass as a contact's, but a point lock (Blender's Point) has its rows rebuilt from the
        poses at every substep, exactly. A 20 x 20 net of balls on point joints spun its balls
        at 100+ rad/s and took 2.8 passes a frame instead of 2 (bench/bench_joints_grid.py)."""
        on = (self._v("kind") == DYNAMIC) & ~self._v("sleeping")
        in_pairs = np.zeros(self._n, dtype=bool)
        if len(self.pairs.keys):
            a, b = key_bodies(self.pairs.keys)
            in_pairs[a] = True
            in_pairs[b] = True
        in_joints = np.zeros(self._n, dtype=bool)
        j = self.joints
        if j.n:
            live = j.live() & ~j.point_locks()
            in_joints[j.v("body_a")[live]] = True
            in_joints[j.v("body_b")[live & ~j.v("world")]] = True
        cand = np.flatnonzero(in_pairs & on)
        return cand, np.flatnonzero(in_joints & on), self._polytope_only(cand)

    def _table_pairs(self):
        """Bodies (a, b) of the pair table's rows, and which are pairs of two polytopes (the
        answer kept until the table or the bodies change: a step asks twice)."""
        keys, n_of = self._table_pairs_of[0]
        if keys is not self.pairs.keys or n_of != self._n:   # (store() makes new arrays)
            a, b = key_bodies(self.pairs.keys)
            n = self._n
            ok = (a < n) & (b < n)
            poly = ok & self._convex_pairs(np.minimum(a, n - 1), np.minimum(b, n - 1))
            self._table_pairs_of = ((self.pairs.keys, n), (a, b, poly, ok))
        return self._table_pairs_of[1]

    def _recollide_wanted(self):
        """Whether this step's passes use engine.world.recollide (see recollide_min_manifolds)."""
        if not self.recollide_in_pass or not self._n or not len(self.pairs):
            return False
        return np.count_nonzero(self._table_pairs()[2]) >= self.recollide_min_manifolds

    def _polytope_only(self, bodies):
        """(K,) bool: which of bodies are in pair-table pairs of two polytopes only, whose
        manifolds engine.world.recollide takes again within a pass (all False when it is off)."""
        if not self._recollide_on or not len(bodies):
            return np.zeros(len(bodies), dtype=bool)
        a, b, poly, ok = self._table_pairs()
        other = ok & ~poly
        hard = np.zeros(self._n, dtype=bool)
        hard[a[other]] = True
        hard[b[other]] = True
        return ~hard[bodies]

    def substeps_for(self, dt, passes=None):
        """Solver substeps one step of dt uses in all (over its collision passes): ``substeps``
        shared out over the passes, or ceil(pass / max_substep) per pass. passes: what
        collision_steps_for(dt) answered, if the caller has it."""
        k = self.collision_steps_for(dt) if passes is None else passes
        if self.settings.substeps:
            return k * max(1, math.ceil(self.settings.substeps / k - 1e-9))
        return k * max(1, math.ceil(dt / k / self.settings.max_substep - 1e-9))

    # -- step helpers -----------------------------------------------------------------------
    def _kinematic_velocities(self, kin_t, dt):
        """Velocities that carry kinematic bodies kin_t exactly onto their targets over dt
        (the rotation as axis * angle / dt, the shorter way round)."""
        if not len(kin_t):
            return
        a = self._a
        x, q, vel = self._v("x"), self._v("q"), self._v("vel")
        tq = a["target_q"][kin_t]
        tx = a["target_pos"][kin_t] + quat.rotate(tq, a["com"][kin_t])
        vel[kin_t, :3] = (tx - x[kin_t]) / dt
        dq = quat.multiply(tq, quat.conjugate(q[kin_t]))
        dq = np.where(dq[:, :1] < 0, -dq, dq)
        s = np.linalg.norm(dq[:, 1:], axis=1)
        angle = 2.0 * detmath.arctan2(s, dq[:, 0])
        axis = dq[:, 1:] / np.where(s > 0, s, 1.0)[:, None]
        vel[kin_t, 3:] = axis * (angle / dt)[:, None]

    def _bounds(self, dt):
        """(rot (N, 3, 3), lo, hi (N, 3)): every body's rotation and world box, swept by its
        motion over dt (with ccd) and fattened by the margin (engine.collision.bounds), in
        new arrays (for callers outside a pass: engine.features.deform)."""
        return world_bounds(self.table, self._v("shape"), self._v("q"), self._v("pos"),
                            self._v("com"), self._v("vel"), self._v("kind") != STATIC,
                            dt if self.settings.ccd else 0.0, self.settings.aabb_margin)

    def _pass_bounds(self, dt):
        """A pass's (rot, lo, hi, moving, passive) in one kernel call, into the pass buffers
        (engine.world.pass_kernels.pass_bounds): _bounds' boxes; the bodies that wake the
        sleepers they touch, fast awake dynamic or moving kinematic ones (engine.dynamics.sleep;
        called after step 1, so a kinematic body's velocity already says whether its target
        moves it); and the broadphase's passive bodies."""
        b, t, st = self._pass_buffers(), self.table, self.settings
        pass_bounds(self._v("shape"), self._v("q"), self._v("pos"), self._v("com"),
                    self._v("vel"), self._v("kind"), self._v("sleeping"), self._v("sleep_lin"),
                    self._v("sleep_ang"), st.linear_sleep_tolerance, st.angular_sleep_tolerance,
                    STATIC, KINEMATIC, float(dt) if st.ccd else 0.0, float(st.aabb_margin),
                    t.kind, t.npoints, t.points, t.radius, t.curved_radius, t.half_height,
                    t.bound_radius, b["swept"], b["rot"], b["lo"], b["hi"], b["moving"],
                    b["passive"])
        return b["rot"], b["lo"], b["hi"], b["moving"], b["passive"]

    def _broadphase(self, lo, hi, passive):
        """Candidate pairs: those of the persistent Broadphase's fat boxes (these boxes plus
        settings.broadphase_slack, kept until a box leaves its fat box: one containment test
        per body in a resting scene), passive (N,) bool the bodies two of which never pair.
        Its own arrays: the caller cuts them down to the exact overlap of this pass's boxes
        (broadphase.overlapping), so the pairs are the same whatever the fat boxes' history
        (restoring a state needs no broadphase state to stay bit-exact)."""
        return self._bp.update(lo, hi, None, self._v("group"), self._v("mask"), passive,
                               copy=False)

    def _wake_touched(self, ia, ib, sleeping, moving, lo, hi, dt):
        """Wake the islands of sleepers whose box overlaps a moving body's (for a moving
        triangle mesh: one of its triangles' boxes, swept by the mesh's motion, since the
        mesh's own box may span a whole level). Returns whether anything woke."""
        wa = sleeping[ia] & moving[ib]
        wb = sleeping[ib] & moving[ia]
        s = np.concatenate((ia[wa], ib[wb]))          # sleeper
        m = np.concatenate((ib[wa], ia[wb]))          # moving body it may touch
        mesh = self.table.kind[self._v("shape")[m]] == TRIANGLE_MESH
        if mesh.any():
            rows = np.flatnonzero(mesh)
            hit = self._near_triangles(s[rows], m[rows], lo, hi, dt)
            keep = np.ones(len(s), dtype=bool)
            keep[rows] = hit
            s = s[keep]
        if not len(s):
            return False
        who = s
        isl = self._v("island")
        labels = np.unique(isl[who])
        wake = sleeping & np.isin(isl, labels)
        self._v("sleeping")[wake] = False
        self._v("sleep_time")[wake] = 0.0
        return True

    def _near_triangles(self, s, m, lo, hi, dt):
        """Per (sleeper s, moving mesh m) row: does the sleeper's box come within reach of a
        triangle of the mesh over dt? The box goes into the mesh frame (its 8 corners' box)
        and is grown by how far any mesh point moves over dt; the BVH answers exactly."""
        out = np.zeros(len(s), dtype=bool)
        sid = self._v("shape")[m]
        vel = self._v("vel")
        reach = self.table.bound_radius[sid] + np.linalg.norm(self._v("com")[m], axis=1)
        grow = dt * (np.linalg.norm(vel[m, :3], axis=1) + np.linalg.norm(vel[m, 3:], axis=1)
                     * reach)
        bit = np.arange(8)
        corners = np.where(((bit[:, None] >> np.arange(3)) & 1).astype(bool)[None],
                           hi[s][:, None], lo[s][:, None])          # (R, 8, 3)
        rot = quat.to_matrix(self._v("q")[m])
        local = np.matmul(corners - self._v("pos")[m][:, None], rot)
        llo = local.min(axis=1) - grow[:, None]
        lhi = local.max(axis=1) + grow[:, None]
        for u in np.unique(sid):                        # distinct moving meshes only
            r = np.flatnonzero(sid == u)
            qi, _ = self.table.shapes[u].query(llo[r], lhi[r])
            out[r[qi]] = True
        return out

    def _narrowphase(self, ia, ib, vel, dt, rot):
        """Contact manifolds of the candidate body pairs. Pairs of convex bodies go through
        one kernel (engine.collision.polytope_pairs), which also reuses a pair table's
        manifold of two polytopes (boxes, hulls) while its bodies barely moved relative to
        each other (engine.collision.manifold_cache); round and curved shapes' manifolds are
        never reused (a round shape's contact point is not a material point). A pass with a
        compound or a mesh (several manifolds per pair) sends its other pairs through
        engine.collision.nonconvex.collide_bodies; a collide hook (tests) sends every pair
        that way.

        Returns (ia, ib, sub, manifolds as a dict of arrays, with "geo" their captured
        geometry for the pair table): one row per manifold with points, sorted by
        (ia, ib, sub)."""
        margin, n_poly = self._pair_inputs(ia, ib, vel, dt)
        res = None
        if self._collide is not None:
            pair, sub, out = self._other_manifolds(ia, ib, margin)
        elif len(ia) and n_poly == len(ia):
            res = self._polytope_manifolds(ia, ib, margin, vel, dt, rot, collide_polytope_bodies)
        else:
            res = self._polytope_manifolds(ia, ib, margin, vel, dt, rot, collide_convex_bodies,
                                           n_poly)
            if res is None:         # a compound or a mesh in the pass
                pair, sub, out = self._mixed_manifolds(ia, ib, margin, n_poly, vel, dt, rot)
        if res is not None:
            pair, out = res
            sub = np.zeros(len(pair), dtype=np.int64)
        if self.settings.manifold_reuse_distance <= 0:
            del out["geo"]                      # nothing is reusable (store: NaN captures)
        return ia[pair], ib[pair], sub, out

    def _mixed_manifolds(self, ia, ib, margin, n_poly, vel, dt, rot):
        """(pair, sub, out) of a pass with a compound or a mesh: the pairs of two polytopes
        through their kernel, the others through collide_bodies, merged in (pair, sub)
        order."""
        if not n_poly:
            return self._other_manifolds(ia, ib, margin)
        poly = self._convex_pairs(ia, ib)
        p, o = np.flatnonzero(poly), np.flatnonzero(~poly)
        pair_p, out_p = self._polytope_manifolds(ia[p], ib[p], margin[p], vel, dt, rot,
                                                 collide_polytope_bodies)
        pair_o, sub_o, out_o = self._other_manifolds(ia[o], ib[o], margin[o])
        pair = np.concatenate((p[pair_p], o[pair_o]))
        sub = np.concatenate((np.zeros(len(pair_p), dtype=np.int64), sub_o))
        order = np.lexsort((sub, pair))
        out = {k: np.concatenate((v, out_o[k]))[order] for k, v in out_p.items()
               if k != "geo"}
        out["geo"] = {k: np.concatenate((v, out_o["geo"][k]))[order]
                      for k, v in out_p["geo"].items()}
        return pair[order], sub[order], out

    def _polytope_manifolds(self, ia, ib, margin, vel, dt, rot, collide, n_poly=None):
        """collide(...) (collide_polytope_bodies or collide_convex_bodies: (pair, out), or
        None) for the pairs, reusing the pair table's manifolds of its n_poly (all) pairs of
        two polytopes as _reuse_mode allows."""
        st = self.settings
        m = len(ia) if n_poly is None else n_poly
        return collide(self.table, self._v("shape"), self._v("pos"), self._v("q"), rot, ia, ib,
                       margin, self.pairs, self._reuse_mode(m, vel, dt),
                       st.manifold_reuse_distance, st.manifold_reuse_angle)

    def _other_manifolds(self, ia, ib, margin):
        """(pair, sub, out) of collide_bodies (compounds, meshes and their partners; every
        pair under a collide hook), with captures that are never reused
        (manifold_cache.empty: a NaN margin)."""
        sid, pos, q = self._v("shape"), self._v("pos"), self._v("q")
        res = collide_bodies(self.table, sid[ia], pos[ia], q[ia], sid[ib], pos[ib], q[ib],
                             margin=margin, collide=self._collide)
        man = res.manifolds
        live = np.flatnonzero((man.count[:] > 0) & sound_manifolds(
            man.normal, man.points, man.separation, man.count))
        out = {k: getattr(man, k)[live] for k in ("normal", "points", "separation", "count",
                                                   "ids", "axis_kind", "axis_index")}
        out["geo"] = manifold_cache.empty(len(live))
        return res.pair[live], res.sub[live], out

    def _reuse_mode(self, m, vel, dt):
        """How a pass of m candidate polytope pairs may reuse the pair table's manifolds (the
        modes of engine.collision.polytope_pairs). A few candidates cost the narrowphase its
        fixed per-call price whatever their number, so below reuse_min_pairs a pass reuses
        only when it can reuse everything, and tries only when no awake body moves by the
        tolerance in this pass (a cheap test that fails at once in a tumbling scene)."""
        d, ang = self.settings.manifold_reuse_distance, self.settings.manifold_reuse_angle
        if d <= 0 or not m or not len(self.pairs):
            return NO_REUSE
        if m >= self.reuse_min_pairs:
            return REUSE_EACH
        calm = calm_awake(vel, self._v("kind"), self._v("sleeping"), STATIC, d * d / (dt * dt),
                          ang * ang / (dt * dt))
        return REUSE_ALL if calm else NO_REUSE

    def _convex_pairs(self, ia, ib):
        """(M,) bool: both bodies are polytopes (Box, ConvexHull): one manifold per pair whose
        points are features of the shapes."""
        poly = self._polytope_bodies()
        return poly[ia] & poly[ib]

    def _polytope_bodies(self):
        """(N,) bool: the bodies whose shape is a polytope."""
        if self._poly_of[0] != self._n:     # (a body's shape never changes)
            self._poly_of = (self._n, self.table.kind[self._v("shape")] == POLYTOPE)
        return self._poly_of[1]

    def _pair_inputs(self, ia, ib, vel, dt):
        """(margin (M,), how many pairs are of two polytopes) in one kernel call
        (engine.world.pass_kernels.pair_inputs; _speculative_margin says what the margin is)."""
        margin = np.empty(len(ia))
        st = self.settings
        n_poly = pair_inputs(ia, ib, self._polytope_bodies(), self._v("shape"),
                             self.table.bound_radius, self._v("com"), self._v("x"),
                             self._v("pos"), vel, float(st.speculative_distance), float(dt),
                             bool(st.ccd), margin)
        return margin, n_poly

    def _speculative_margin(self, ia, ib, vel, dt):
        """Per pair: points closer than this are contacts. The base distance plus, with ccd,
        how far the two surfaces can close over dt: relative COM speed, plus each body's spin
        times the distance from its COM to any point of the contact. That distance is at most
        the body's own reach (bounding radius about the origin + |COM offset|) and at most the
        distance to the other body plus the other's bounding radius: the second bound keeps a
        spinning kinematic triangle mesh (huge reach) from giving every pair a huge margin."""
        return self._pair_inputs(ia, ib, vel, dt)[0]

    def _keep_pair(self, keys):
        """Old pair-table rows to keep when not evaluated: both bodies asleep or static."""
        sleeping = self._v("sleeping")
        a, b = key_bodies(keys)
        n = self._n
        ok = (a < n) & (b < n)
        a, b = np.minimum(a, n - 1), np.minimum(b, n - 1)
        passive = sleeping | (self._v("kind") != DYNAMIC)
        return ok & passive[a] & passive[b] & (sleeping[a] | sleeping[b])

    def _update_sleep(self, dt, awake, ta, tb, moving):
        n = self._n
        vel = self._v("vel")
        kind = self._v("kind")
        timer = self._v("sleep_time")
        lin = np.linalg.norm(vel[:, :3], axis=1)
        ang = np.linalg.norm(vel[:, 3:], axis=1)
        lin_tol, ang_tol = self._sleep_tolerances()
        calm = (lin < lin_tol) & (ang < ang_tol) & self._v("can_sleep")
        timer[:] = np.where(awake & calm, timer + dt, 0.0)
        # A body touching a moving kinematic body must stay awake.
        kin_mov = (kind == KINEMATIC) & moving
        if len(ta):
            pushed = np.concatenate((ta[kin_mov[tb]], tb[kin_mov[ta]]))
            timer[pushed] = 0.0
        label = islands(n, ta, tb, ~awake)
        members = np.flatnonzero(awake)
        if not len(members):
            return
        lab = label[members]
        srt = np.argsort(lab, kind="stable")
        lab_s = lab[srt]
        starts = np.flatnonzero(np.r_[True, lab_s[1:] != lab_s[:-1]])
        tmin = np.minimum.reduceat(timer[members][srt], starts)
        sleepy_labels = lab_s[starts][tmin >= self.settings.time_to_sleep]
        if len(sleepy_labels):
            go = members[np.isin(lab, sleepy_labels)]
            self._v("sleeping")[go] = True
            self._v("island")[go] = label[go]
            vel[go] = 0.0

    def _make_record(self, ia, ib, sub, man, imp_n, imp_f2, lo, hi):
        """The StepRecord of this pass (copies; see engine.world.record)."""
        slot = np.arange(4)
        valid = slot[None, :] < man["count"][:, None]
        mi, pi = np.nonzero(valid)
        return StepRecord(
            positions=man["points"][mi, pi].copy(),
            normals=man["normal"][mi].copy(),
            separations=man["separation"][mi, pi].copy(),
            normal_impulses=imp_n[mi, pi].copy(),
            friction_impulses=imp_f2[mi, pi].copy(),
            pairs=np.stack((ia[mi], ib[mi]), axis=1),
            manifold_pairs=np.stack((ia, ib), axis=1),
            manifold_sub=sub.copy(),
            axis_kind=man["axis_kind"].copy(),
            axis_index=man["axis_index"].copy(),
            aabbs=np.stack((lo, hi), axis=1),
            sleeping=self._v("sleeping").copy(),
        )
