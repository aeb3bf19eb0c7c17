"""World's joint API (a mixin of engine.world.world.World): add_joint and the per-step glue.

Kept apart from world.py so the step pipeline there only gains a few calls: pair filtering
(disable_collisions), waking islands a joint links, the JointSolver of each collision pass
(engine.dynamics.joint_solver) and the joints' edges in the sleeping islands.
"""
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.errors import EngineError
from ..dynamics.graph import islands
from ..dynamics.joint_solver import JointSolver, joint_coordinates
from ..dynamics.joints import KINDS, JointSet, parse

__all__ = ["JointSet", "JointWorldMixin"]


def _threshold(value, what):
    if value is None:
        return math.inf
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise EngineError(f"{what} must be a number or None, got {value!r}") from None
    if math.isnan(v) or v < 0:
        raise EngineError(f"{what} must be >= 0 (or None: unbreakable), got {value!r}")
    return v


class JointWorldMixin:
    """Joints in a World. Needs the World's body arrays (_v, _a, _n) and ``self.joints``."""

    # Provided by World (declared for the type checker).
    joints: JointSet
    settings: Any
    _v: Callable[[str], np.ndarray]
    _n: int
    _check_index: Callable[[Any], int]
    wake: Callable[[int], None]

    def add_joint(self, kind, body_a, body_b=None, position=(0.0, 0.0, 0.0),
                  orientation=(1.0, 0.0, 0.0, 0.0), *, limits=None, springs=None, motor=None,
                  break_force=None, break_torque=None, disable_collisions=True, enabled=True):
        """Join two bodies (or body_a and the world, body_b=None) and return the joint index.

        kind: "fixed", "point", "hinge" (turns about the frame's Z), "slider" (along X),
        "piston" (along and about X), "generic", "generic_spring", "motor" (drives X,
        constrains nothing). position / orientation (w, x, y, z): the joint frame in world
        coordinates now; it is fixed in both bodies from here on and the current pose is the
        zero of the limits and the rest pose of the springs.
        limits: {"lin_x" .. "ang_z": (lower, upper)} in m / rad, lower == upper locks.
        springs (generic_spring): {axis: (stiffness, damping)} in N/m, N s/m (N m/rad, N m s/rad).
        motor: {"lin": (target_velocity, max_force), "ang": (target_velocity, max_torque)}:
        B relative to A along / about the driven axis.
        With body_b=None the world is side A and body_a is side B, so limits, motors and
        reactions describe the body's own motion in the world frame.
        break_force (N), break_torque (N m): the joint breaks for good in the first substep
        whose reaction exceeds it. disable_collisions: the two bodies do not collide.
        """
        from .world import DYNAMIC, _vec  # the World module imports this one
        a = self._check_index(body_a)
        b = None if body_b is None else self._check_index(body_b)
        if b == a:
            raise EngineError(f"joint from body {a} to itself; give two different bodies, or "
                              "body_b=None to attach it to the world")
        kinds = self._v("kind")
        if kinds[a] != DYNAMIC and (b is None or kinds[b] != DYNAMIC):
            other = "the world" if b is None else f"body {b}"
            raise EngineError(f"joint between body {a} and {other}: neither is dynamic, so the "
                              "joint could never move anything; make one of them dynamic")
        pos = _vec(position, 3, "joint position")
        q = _vec(orientation, 4, "joint orientation")
        qn = float(np.linalg.norm(q))
        if qn < 1e-9:
            raise EngineError(f"joint orientation {orientation!r} has zero length; give a unit "
                              "quaternion (w, x, y, z)")
        settings = parse(kind, limits, springs, motor)
        x, qb = self._v("x"), self._v("q")
        j = self.joints.add(kind, a, b, x[a], qb[a], None if b is None else x[b],
                            None if b is None else qb[b], pos, q / qn, settings,
                            _threshold(break_force, "break_force"),
                            _threshold(break_torque, "break_torque"), disable_collisions,
                            enabled)
        self._wake_joint_bodies(j)
        return j

    @property
    def joint_count(self):
        return self.joints.n

    @property
    def joint_broken(self):
        """(J,) bool: joints that broke (for good)."""
        return self.joints.v("broken")

    @property
    def joint_enabled(self):
        return self.joints.v("enabled")

    @property
    def joint_forces(self):
        """(J, 3) the force the joint applied to body B (for a joint to the world: to the
        body) in the last substep of the last step, N."""
        return self.joints.v("force")

    @property
    def joint_torques(self):
        """(J, 3) the angular rows' reaction torque on body B, N m (see joint_forces)."""
        return self.joints.v("torque")

    @property
    def joint_coordinates(self):
        """(J, 6) each joint's coordinates now, in m and rad: lin_x, lin_y, lin_z (the
        anchors' separation along the joint frame's axes in body A) and ang_x, ang_y, ang_z
        (XYZ Euler angles of B's frame in A's), zero at the pose the joint was made in; what
        the limits bound and the springs pull back to zero."""
        return joint_coordinates(self.joints, self._v("x"), self._v("q"))

    @property
    def joint_kinds(self):
        return [KINDS[k] for k in self.joints.v("kind")]

    def joint_anchored(self):
        """(N,) bool: dynamic bodies held by live joints, directly or through other bodies,
        to the world or to a static or kinematic body (a chain hanging from a passive anchor):
        such a body may rest or swing far below that anchor without having fallen."""
        from .world import DYNAMIC  # the World module imports this one
        n = self._n
        js = self.joints
        out = np.zeros(n, dtype=bool)
        if not js.n:
            return out
        live = js.live()
        a, b, world = js.v("body_a")[live], js.v("body_b")[live], js.v("world")[live]
        ground = n   # one extra node: the world and every body that is not dynamic
        fixed = self._v("kind") != DYNAMIC
        ea = np.where(world | fixed[a], ground, a)
        eb = np.where(fixed[b], ground, b)
        label = islands(n + 1, ea, eb, np.zeros(n + 1, dtype=bool))
        return (label[:n] == label[ground]) & ~fixed

    def set_joint_enabled(self, j, flag):
        """Switch a joint on or off (a broken joint stays broken); wakes its bodies."""
        j = int(j)
        if not 0 <= j < self.joints.n:
            raise EngineError(f"joint index {j} out of range (the world has {self.joints.n} "
                              "joints)")
        self.joints.v("enabled")[j] = bool(flag)
        if not flag:
            self.joints.v("impulse")[j] = 0.0
        self._wake_joint_bodies(j)

    def _wake_joint_bodies(self, j):
        js = self.joints
        for body in (int(js.v("body_a")[j]), int(js.v("body_b")[j])):
            if self._v("sleeping")[body]:
                self.wake(body)

    # -- per step ----------------------------------------------------------------------------
    def _joint_wake(self, awake_dyn, moving):
        """Wake every sleeper joined to a moving body (a kinematic driver) or an awake dynamic
        one through a chain of live joints, whatever its length, with the islands of those
        sleepers; returns whether anything woke.

        All of it in one go: a joint between an awake body and a sleeping one makes the
        sleeper an immovable anchor for this pass (both solvers give it no mass), and the
        impulse that anchor takes is warm-started into the light body once it wakes in a
        later pass. Waking one hop per pass (as before) did exactly that in a glued wall
        asleep at start, hit by a 1000 kg ball at 1 iteration: 7.9e7 m/s and every bond
        broken (issue 11; tests/test_glue.py)."""
        js = self.joints
        sleeping = self._v("sleeping")
        if not js.n or not sleeping.any():
            return False
        live = js.live() & ~js.v("world")
        a, b = js.v("body_a")[live], js.v("body_b")[live]
        driver = moving | awake_dyn
        # Joint-connected components over sleepers and drivers (the rest links nothing).
        label = islands(self._n, a, b, ~(sleeping | driver))
        hot = np.unique(label[driver & (label >= 0)])
        hit = np.flatnonzero(sleeping & np.isin(label, hot))
        if not len(hit):
            return False
        isl = self._v("island")
        wake = sleeping & np.isin(isl, np.unique(isl[hit]))
        wake[hit] = True
        sleeping[wake] = False
        self._v("sleep_time")[wake] = 0.0
        return True

    def _joint_solver(self, awake, inv_mass, inv_i, h, contact_bodies=None):
        """The JointSolver of this pass for live joints with an awake dynamic end, or None.

        contact_bodies: bodies in this pass's contact manifolds. If one of the joints' bodies
        is among them, the joints relax in every relax sweep, not only in the last: a
        contact relax sweep run while the joints still carry their bias (position-correction)
        velocity answers that velocity with a real impulse, and the joints' later relax takes
        back only their own part, so the bias leaks into motion. A glued 60-piece wall hit by
        a ball at 1 iteration gained energy every frame that way (1.3e5 J to 1e6 J and more in
        16 frames, pieces at 83 m/s; issue 11); relaxing together it only loses energy.
        Without a shared body the joints keep their one last relax sweep (lock rows alone
        need no more). The shared awake bodies are the solver's ``shared_bodies``."""
        js = self.joints
        if not js.n:
            return None
        a, b = js.v("body_a"), js.v("body_b")
        sel = np.flatnonzero(js.live() & (awake[a] | (awake[b] & ~js.v("world"))))
        if not len(sel):
            return None
        solver = JointSolver(js, sel, awake, inv_mass, inv_i, h, self.settings.joint_hertz,
                             self.settings.joint_damping_ratio,
                             inv_body=np.where(awake[:, None, None], self._v("inv_inertia"),
                                               0.0),
                             max_push=self.settings.joint_max_push)
        if contact_bodies is not None and len(contact_bodies):
            mine = np.zeros(self._n, dtype=bool)
            mine[a[sel]] = True
            mine[b[sel]] = True
            touching = np.zeros(self._n, dtype=bool)
            touching[contact_bodies] = True
            solver.shared_bodies = np.flatnonzero(mine & touching & awake)
            solver.relax_every = solver.relax_every or bool((mine & touching).any())
        return solver

    def _joints_active(self, awake):
        """Is there a live joint with an awake dynamic end?"""
        js = self.joints
        if not js.n:
            return False
        a, b = js.v("body_a"), js.v("body_b")
        return bool((js.live() & (awake[a] | (awake[b] & ~js.v("world")))).any())
