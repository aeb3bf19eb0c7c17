"""Settle Selected: drop the selected objects among the scene's bodies until they rest, and
keep where they come to rest as their own location and rotation.

What set dressing and synthetic-data pipelines do with physics (BlenderProc's physics
positioning, the "drop to floor" add-ons): no keys, no animation and no physics settings are
left behind, only the resting transforms.

``SettleJob`` splits a run as ``simulate.BakeJob`` does: ``prepare()`` reads the scene and
builds an ``engine.World`` (touching nothing), ``advance(n)`` steps it, ``finish()`` writes
the transforms (the only moment the scene changes), ``cancel()`` drops it. The operator
(``HULLABALOO_OT_settle``) steps it from a timer in the UI, so Esc between steps leaves the
scene exactly as it was.

For the run, and only for it:
- the objects to settle are Dynamic, whatever they were: their own Hullabaloo settings if
  Hullabaloo is on for them (a Mesh shape becomes its convex hull), else the settings'
  defaults (a Convex Hull of 1 kg); they start from rest (no initial velocity, none asleep);
- the scenery is either every other Hullabaloo object of the scene ("Everything"), held
  where it is (dynamic and animated ones too), or the active object alone ("Active Object"),
  as Passive; without Hullabaloo on it, its shape is Mesh unless it is a closed convex mesh
  (a bowl, a plane, a terrain collide as they are);
- at rest means the engine's own sleep (``WorldSettings`` linear / angular sleep tolerance
  and time to sleep), with sleeping on whatever the scene says; joints, glue and force
  fields are not part of it, gravity is the scene's.

An object that falls far below all the scenery (``simulate.FALLEN_DEPTH``) or whose
simulation fails is left where it was and named in the report; one still moving at the time
limit keeps its last pose and is named too.
"""
import time

import bpy
import numpy as np
from bpy.props import BoolProperty, EnumProperty, FloatProperty, IntProperty

from .. import engine
from ..engine.core import quat
from . import channels, compiler, jitter, simulate
from .collect import (
    Problem,
    SceneReader,
    is_closed,
    is_collision_part,
    mesh_points,
    mesh_triangles,
)

# Simulated seconds per World.step: the engine splits it into collision passes and substeps
# of its own; a constant (not the scene's frame rate) so a settle does not depend on it.
STEP = 1.0 / 24.0
# A closed mesh is convex when no edge folds inwards by more than this (relative to the
# mesh's size): float32 vertices of a flat face are coplanar only to about 1e-7.
CONVEX_TOLERANCE = 1e-5

# The last run's summary and problems, for scripts, the command line and tests.
LAST = {"summary": None, "problems": [], "cancelled": False}
MAX_REPORTS = 8


class SettleError(Exception):
    """A problem that stops the settle before anything is changed (message for the user)."""


class RunSettings:
    """An object's Hullabaloo settings for one run: its own (or the defaults, when Hullabaloo
    is off for it) with some replaced. Read like ``obj.hullabaloo``; writes nothing."""

    def __init__(self, obj, **replace):
        self._group = obj.hullabaloo
        self._own = obj.hullabaloo.enabled
        self._replace = replace

    def __getattr__(self, name):
        if name in self._replace:
            return self._replace[name]
        if self._own:
            return getattr(self._group, name)
        return default_setting(self._group, name)


def default_setting(group, name):
    """The default value of a property of a PropertyGroup (what an object never set up has)."""
    prop = group.bl_rna.properties[name]
    if prop.type in {'POINTER', 'COLLECTION'}:
        return getattr(group, name)
    if prop.type == 'ENUM':
        return set(prop.default_flag) if prop.is_enum_flag else prop.default
    if getattr(prop, "is_array", False):
        return tuple(prop.default_array)
    return prop.default


def is_convex_closed(points, triangles):
    """A closed, connected mesh none of whose edges folds inwards (faces wound outwards):
    the boundary of a convex solid, its own convex hull. O(T log T), so a scanned rock of a
    million triangles is judged in a moment; a doubt (a flipped face) answers False, and
    the Mesh shape it leads to is right for any scenery."""
    if not is_closed(triangles):
        return False
    t = np.asarray(triangles, dtype=np.int64)
    p = np.asarray(points, dtype=np.float64)
    n = np.cross(p[t[:, 1]] - p[t[:, 0]], p[t[:, 2]] - p[t[:, 0]])
    n /= np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-300)
    # Every edge of a closed mesh has two triangles: each one's far vertex must lie behind
    # (or on) the other's plane.
    start = t.reshape(-1)                        # edge k of triangle f: (t[f, k], t[f, k+1])
    end = t[:, [1, 2, 0]].reshape(-1)
    far = t[:, [2, 0, 1]].reshape(-1)
    tri = np.repeat(np.arange(len(t)), 3)
    order = np.lexsort((np.maximum(start, end), np.minimum(start, end)))
    a, b = order[0::2], order[1::2]              # the two sides of each edge
    tol = CONVEX_TOLERANCE * max(float(np.ptp(p, axis=0).max()), 1e-12)
    for this, other in ((a, b), (b, a)):
        rise = np.einsum("ij,ij->i", n[tri[this]], p[far[other]] - p[start[this]])
        if rise.max() > tol:
            return False
    return _connected(len(p), np.stack((start, end), axis=1))


def _connected(count, edges):
    """The edges join the vertices they use into one piece (min-label propagation)."""
    used = np.unique(edges)
    label = np.arange(count)
    while True:
        lo = np.minimum(label[edges[:, 0]], label[edges[:, 1]])
        new = label.copy()
        np.minimum.at(new, edges[:, 0], lo)
        np.minimum.at(new, edges[:, 1], lo)
        new = new[new]
        if np.array_equal(new, label):
            return len(np.unique(label[used])) == 1
        label = new


def parent_spaces(objs):
    """channels.ParentSpaces of objects whose parents stay where they are during the run,
    except a parent that is settled too (its row in objs), whose new pose counts."""
    n = len(objs)
    row = {o.name: i for i, o in enumerate(objs)}
    world0 = np.tile(np.eye(4), (n, 1, 1))
    const = np.tile(np.eye(4), (n, 1, 1))
    body = np.full(n, -1, dtype=np.int64)
    for i, obj in enumerate(objs):
        if obj.parent is None:
            continue
        # The parent space P = matrix_world @ matrix_basis^-1 works for every parent type.
        P = np.array(obj.matrix_world, dtype=np.float64) @ np.linalg.inv(
            np.array(obj.matrix_basis, dtype=np.float64))
        world0[i] = np.array(obj.parent.matrix_world, dtype=np.float64)
        const[i] = np.linalg.inv(world0[i]) @ P
        body[i] = row.get(obj.parent.name, -1)
    return channels.ParentSpaces(world0, const, body)


class SettleJob:
    """One settle run. objects: what to settle; surface: None (the scene's other Hullabaloo
    objects are the scenery) or the one object to settle onto."""

    def __init__(self, scene, depsgraph, objects, surface=None, time_limit=20.0,
                 jitter_amount=0.0, seed=0):
        self.scene, self.depsgraph = scene, depsgraph
        self.requested = list(objects)
        self.surface = surface
        self.time_limit = float(time_limit)
        self.jitter_amount, self.seed = float(jitter_amount), int(seed)
        self.problems = []
        self.world = None
        self.steps = 0
        self.sim_seconds = 0.0
        self.fallen, self.failed = set(), {}
        self.done = False

    # -- prepare ----------------------------------------------------------------------------
    def prepare(self):
        """Read the scene and build the world. Raises SettleError (nothing was changed) or
        returns the problems of skipped or caveated objects."""
        if self.time_limit <= 0:
            raise SettleError(f"The time limit must be positive, got {self.time_limit} s.")
        if self.jitter_amount < 0:
            raise SettleError(f"The jitter must be >= 0 m, got {self.jitter_amount}.")
        from . import preview  # imports simulate: import on use
        preview.release(self.scene)   # previewed objects show their own transforms again
        movers = self._movers()
        scenery = self._scenery(movers)
        settings = {o.name: self._mover_settings(o) for o in movers}
        settings.update({o.name: self._scenery_settings(o) for o in scenery})
        reader = SceneReader(self.scene, self.depsgraph, objects=movers + scenery,
                             settings=lambda o: settings[o.name], check_animation=False)
        reader.read()
        self.problems.extend(reader.problems)
        wanted = {o.name for o in movers}
        self.bodies = [b for b in reader.bodies if b.name in wanted]
        ground = [b for b in reader.bodies if b.name not in wanted]
        if not self.bodies:
            raise SettleError("Nothing to settle: " + ("; ".join(
                str(p) for p in self.problems if p.level == "ERROR") or "no usable object"))
        if not ground:
            raise SettleError(self._no_scenery_message())
        self._build_world(ground)
        return self.problems

    def _movers(self):
        objs, skipped = [], []
        for o in self.requested:
            if o == self.surface:
                continue
            if o.type != 'MESH' or o.data is None:
                skipped.append(o.name)
            elif is_collision_part(o):
                self.problems.append(Problem("WARNING", o.name, "is a collision part of "
                                             f"{o.parent.name!r}, which it moves with; settle "
                                             "the parent instead. Left as it is."))
            else:
                objs.append(o)
        if skipped:
            self.problems.append(Problem("INFO", "", f"Not meshes, left as they are: "
                                         f"{', '.join(sorted(skipped))}"))
        if not objs:
            raise SettleError("Nothing to settle: select the mesh objects to drop" +
                              (" (besides the active object, the surface)"
                               if self.surface is not None else ""))
        for o in objs:
            self._check_overrides(o)
        return sorted(objs, key=lambda o: o.name)   # a stable order: deterministic runs

    def _scenery(self, movers):
        if self.surface is not None:
            if self.surface.type != 'MESH' or self.surface.data is None:
                raise SettleError(f"{self.surface.name}: the active object is the surface to "
                                  "settle onto and must be a mesh object.")
            return [self.surface]
        moving = {o.name for o in movers}
        return sorted((o for o in self.scene.objects if o.hullabaloo.enabled and
                       o.name not in moving and not is_collision_part(o)),
                      key=lambda o: o.name)

    def _no_scenery_message(self):
        if self.surface is not None:
            why = "; ".join(p.message for p in self.problems
                            if p.level == "ERROR" and p.name == self.surface.name)
            return (f"{self.surface.name}: the active object cannot be collided with"
                    + (f" ({why})" if why else "") + "; nothing to settle onto.")
        return ("Nothing to settle onto: no other object of the scene has Hullabaloo on. "
                "Make the ground Passive (Object > Hullabaloo > Add Passive), or settle onto "
                "the active object (Onto: Active Object).")

    @staticmethod
    def _mover_settings(obj):
        s = RunSettings(obj)
        shape = "CONVEX_HULL" if s.shape == "MESH" else s.shape
        return RunSettings(obj, body_type="DYNAMIC", shape=shape, use_deform=False,
                           initial_linear_velocity=(0.0, 0.0, 0.0),
                           initial_angular_velocity=(0.0, 0.0, 0.0))

    def _scenery_settings(self, obj):
        if obj.hullabaloo.enabled or obj != self.surface:
            return RunSettings(obj, body_type="PASSIVE", use_deform=False)
        convex = is_convex_closed(mesh_points(obj, self.depsgraph),
                                  mesh_triangles(obj, self.depsgraph))
        return RunSettings(obj, body_type="PASSIVE",
                           shape="CONVEX_HULL" if convex else "MESH")

    def _check_overrides(self, obj):
        """What would undo the settled transform: keys, drivers, constraints."""
        ad = obj.animation_data
        keyed = ad is not None and (
            (ad.action is not None and _action_moves(ad.action))
            or any(d.data_path.startswith(("location", "rotation")) for d in ad.drivers))
        if keyed:
            self.problems.append(Problem("WARNING", obj.name, "has keys or drivers on its "
                                         "location or rotation, which replace the settled "
                                         "transform at the next frame change; clear them "
                                         "(Object > Animation > Clear Keyframes) to keep it."))
        if any(c.enabled and c.influence > 0 for c in obj.constraints):
            self.problems.append(Problem("WARNING", obj.name, "has constraints, which act on "
                                         "top of the settled transform."))

    def _build_world(self, ground):
        scene = self.scene
        ws = simulate.world_settings(scene).replace(sleeping=True)
        if not np.any(ws.gravity):
            raise SettleError("Gravity is off (Scene > Gravity): nothing would fall.")
        world = engine.World(settings=ws)
        ground = self._add(world, ground, lambda b: (b.position, b.rotation), "static")
        self.bodies = self._add(world, self.bodies, self._start_pose, "dynamic")
        if not ground or not self.bodies:
            raise SettleError(self._no_scenery_message() if not ground else
                              "Nothing to settle: every object was skipped (see the "
                              "console)")
        self.low = min(float(b.position[2] + (b.shape.core_points @ b.rotation.T)[:, 2].min()
                             - b.shape.radius) for b in ground)
        self.world = world
        self.names = [b.name for b in sorted(ground + self.bodies, key=lambda b: b.index)]
        self.idx = np.array([b.index for b in self.bodies], dtype=np.int64)
        self._guard_seen = 0

    def _add(self, world, bodies, pose, kind):
        """Add bodies of one kind; one the engine refuses is reported by name and skipped."""
        kept = []
        for b in bodies:
            pos, R = pose(b)
            try:
                b.index = world.add_body(b.shape, position=pos, orientation=quat.from_matrix(R),
                                         kind=kind, **b.params)
            except engine.EngineError as exc:
                self.problems.append(Problem("ERROR", b.name, f"{exc}. Skipped."))
                continue
            kept.append(b)
        return kept

    def _start_pose(self, b):
        """The body's start pose, jittered (addon/jitter.py: seeded per object name)."""
        if self.jitter_amount <= 0:
            return b.position, b.rotation
        radius = 0.5 * float(max(b.obj.dimensions))
        offset, R = jitter.perturbation(self.seed, b.name, self.jitter_amount, radius)
        return b.position + offset, R @ b.rotation

    # -- simulate ---------------------------------------------------------------------------
    @property
    def time(self):
        return self.steps * STEP

    @property
    def progress(self):
        return min(1.0, self.time / self.time_limit)

    def _still(self):
        """(N,) the settled bodies that need no more steps: asleep, fallen or failed."""
        w = self.world
        out = np.array(w.sleeping[self.idx])
        for j, b in enumerate(self.bodies):
            out[j] |= b.name in self.fallen or b.name in self.failed
        return out

    @property
    def moving(self):
        """Names of the objects still moving."""
        return [b.name for b, s in zip(self.bodies, self._still()) if not s]

    def advance(self, count=1):
        """Up to count steps; True when everything rests or the time limit is reached."""
        t0 = time.perf_counter()
        try:
            for _ in range(count):
                if self.done or self._still().all() or self.time >= self.time_limit - 1e-9:
                    self.done = True
                    break
                try:
                    self.world.step(STEP)
                except engine.EngineError as exc:
                    raise engine.EngineError(self._name_bodies(str(exc))) from exc
                self.steps += 1
                self._watch()
        finally:
            self.sim_seconds += time.perf_counter() - t0
        if self._still().all() or self.time >= self.time_limit - 1e-9:
            self.done = True
        return self.done

    def _name_bodies(self, message):
        import re

        def name(m):
            i = int(m.group(1))
            return f'object "{self.names[i]}"' if 0 <= i < len(self.names) else m.group(0)
        return re.sub(r"\bbody (\d+)", name, message)

    def _watch(self):
        """Bodies fallen far below all the scenery, and engine guard firings."""
        w = self.world
        z = w.positions[self.idx, 2]
        for j in np.flatnonzero(z < self.low - simulate.FALLEN_DEPTH):
            self.fallen.add(self.bodies[j].name)
        for ev in w.guard_events[self._guard_seen:]:
            self.failed.setdefault(self.names[ev.body], ev.reason)
        self._guard_seen = len(w.guard_events)

    def cancel(self):
        self.world = None
        self.done = True

    # -- write ------------------------------------------------------------------------------
    def finish(self, apply_scale=False, keep_physics=False):
        """Write each settled object's resting location and rotation (nothing else); returns
        the summary."""
        t0 = time.perf_counter()
        w = self.world
        left = self.fallen | set(self.failed)
        pos = np.array(w.positions[self.idx])
        q = np.array(w.orientations[self.idx])
        for j, b in enumerate(self.bodies):   # left where it was: its own start pose
            if b.name in left:
                pos[j], q[j] = b.position, b.orientation
        moving = set(self.moving)
        objs = [b.obj for b in self.bodies]
        values = self._channel_values(objs, pos, q)
        for j, obj in enumerate(objs):
            if obj.name not in left:
                _write_transform(obj, *values[j])
        written = [o for o in objs if o.name not in left]
        if apply_scale:
            for obj in written:
                _apply_scale(obj)
        if keep_physics:
            for obj in written:
                _enable_as_settled(obj)
        self._report_left(moving)
        self.done = True
        return self.summary(written, moving, time.perf_counter() - t0)

    def _channel_values(self, objs, pos, q):
        """Per object (location (3,), rotation) in its rotation mode, through the bake's key
        maths (addon/channels.py) with one frame: deltas, parents, continuity from its own
        rotation values."""
        modes = np.array([o.rotation_mode for o in objs])
        delta = channels.delta_rotations(
            modes, [tuple(o.delta_rotation_quaternion) for o in objs],
            [tuple(o.delta_rotation_euler) for o in objs])
        start = [(o.rotation_mode, tuple(o.rotation_euler), tuple(o.rotation_quaternion),
                  tuple(o.rotation_axis_angle)) for o in objs]
        scale = np.array([tuple(o.scale) for o in objs]) * \
            np.array([tuple(o.delta_scale) for o in objs])
        vals = channels.channel_values(
            pos[None], q[None], np.array([b.shape_matrix for b in self.bodies]),
            np.array([tuple(o.delta_location) for o in objs]), scale, modes, delta,
            parent_spaces(objs), start)
        return [(loc[0], rot[0]) for loc, rot in vals]

    def _report_left(self, moving):
        for name in sorted(self.fallen):
            self.problems.append(Problem("WARNING", name, "fell off the scenery (more than "
                                         f"{simulate.FALLEN_DEPTH:g} m below it) and was left "
                                         "where it was; move it over a surface."))
        for name, reason in sorted(self.failed.items()):
            self.problems.append(Problem("WARNING", name, f"its simulation failed ({reason}); "
                                         "it was left where it was. Please report this with "
                                         "the .blend file."))
        if moving:
            self.problems.append(Problem("WARNING", "", f"{len(moving)} object(s) did not "
                                         f"come to rest within {self.time_limit:g} s and keep "
                                         "their last pose: " + ", ".join(sorted(moving))
                                         + ". Raise the time limit."))

    def summary(self, written=(), moving=(), write_seconds=0.0):
        names = {o.name for o in written}
        return {
            "objects": len(self.bodies),
            "settled": sorted(names - set(moving)),
            "moving": sorted(moving),
            "fallen": sorted(self.fallen),
            "failed": sorted(self.failed),
            "simulated_seconds": self.time,
            "steps": self.steps,
            "simulation_seconds": self.sim_seconds,
            "write_seconds": write_seconds,
            "problems": [str(p) for p in self.problems],
        }


def _action_moves(action):
    """The action has F-curves on location or rotation (legacy or layered actions)."""
    from . import animation
    fcs = list(getattr(action, "fcurves", None) or [])
    if not fcs and animation.is_layered(action):
        fcs = [fc for layer in action.layers for strip in layer.strips
               for bag in strip.channelbags for fc in bag.fcurves]
    return any(fc.data_path.startswith(("location", "rotation")) for fc in fcs)


def _write_transform(obj, location, rotation):
    obj.location = tuple(location)
    mode = obj.rotation_mode
    if mode == 'QUATERNION':
        obj.rotation_quaternion = tuple(rotation)
    elif mode == 'AXIS_ANGLE':
        obj.rotation_axis_angle = tuple(rotation)
    else:
        obj.rotation_euler = tuple(rotation)


def _apply_scale(obj):
    """Ctrl+A > Scale: the scale goes into the mesh (a shared mesh is first copied for this
    object; a mirroring scale flips the faces back outwards), the object keeps its size at
    scale 1, its children stay where they are."""
    from mathutils import Matrix
    s = [a * b for a, b in zip(obj.scale, obj.delta_scale)]
    if s == [1.0, 1.0, 1.0]:
        return
    S = Matrix.Diagonal((*s, 1.0))
    if obj.data.users > 1:
        obj.data = obj.data.copy()
    obj.data.transform(S, shape_keys=True)
    if s[0] * s[1] * s[2] < 0:
        obj.data.flip_normals()   # a mirroring scale turned the faces inside out
    obj.data.update()
    obj.scale = obj.delta_scale = (1.0, 1.0, 1.0)
    for child in obj.children:
        if child.parent_type == 'OBJECT':
            child.matrix_parent_inverse = S @ child.matrix_parent_inverse


def _enable_as_settled(obj):
    """Keep Physics: an object that had no Hullabaloo settings gets those it was settled
    with (Dynamic, Convex Hull, the defaults); set-up objects keep their own."""
    s = obj.hullabaloo
    if s.enabled:
        return
    for name, prop in s.bl_rna.properties.items():
        if name != "rna_type" and prop.type not in {'POINTER', 'COLLECTION'} \
                and not prop.is_readonly:
            s.property_unset(name)
    s.enabled = True


# -- the operator ---------------------------------------------------------------------------

SURFACES = [
    ("ALL", "Everything", "Onto the scene's other Hullabaloo objects (any type; they stay "
     "where they are)"),
    ("ACTIVE", "Active Object", "Onto the active object alone, which stays where it is (a "
     "non-convex mesh such as a bowl collides as it is)"),
]


def _report_problems(op, problems):
    for k, p in enumerate(problems):
        if k == MAX_REPORTS:
            op.report({'WARNING'}, f"... and {len(problems) - k} more problem(s); see the "
                      "console")
        if k >= MAX_REPORTS:
            print(f"Hullabaloo: {p.level}: {p}")
        else:
            op.report({'INFO'} if p.level == "INFO" else {'WARNING'}, str(p))


class HULLABALOO_OT_settle(bpy.types.Operator):
    """Drop the selected objects among the scene's Hullabaloo objects until they rest, and \
keep where they come to rest as their own location and rotation (no keys, no settings left; \
Esc cancels)"""
    bl_idname = "hullabaloo.settle"
    bl_label = "Settle Selected"
    bl_options = {'REGISTER', 'UNDO'}

    onto: EnumProperty(name="Onto", items=SURFACES, default="ALL",
                       description="What the selected objects settle onto")
    time_limit: FloatProperty(
        name="Time Limit", default=20.0, min=0.1, soft_max=120.0, max=3600.0, unit='TIME',
        description="Stop after this much simulated time even if some objects still move "
        "(they are named in the report)")
    jitter: FloatProperty(
        name="Jitter", default=0.0, min=0.0, soft_max=0.1, max=1.0, unit='LENGTH',
        precision=3, description="Move each object's start by at most this distance (and turn "
        "it by a matching small angle), randomly: the same seed gives the same result")
    seed: IntProperty(name="Seed", default=0, min=0,
                      description="Random seed of the jitter")
    apply_scale: BoolProperty(
        name="Apply Scale", default=False,
        description="Apply the settled objects' scale to their meshes (as Ctrl+A > Scale), "
        "leaving them at scale 1; off, they keep their scale")
    keep_physics: BoolProperty(
        name="Keep Physics", default=False,
        description="Leave Hullabaloo on (Dynamic) for the settled objects that did not have "
        "it; off, nothing but their transforms changes")

    _job = None
    _timer = None
    _preparing = False   # the engine's first-use warm-up runs in its thread (compiler.start)

    @classmethod
    def poll(cls, context):
        if context.scene is None or context.mode != 'OBJECT':
            cls.poll_message_set("Switch to Object Mode to settle")
            return False
        if not context.selected_objects:
            cls.poll_message_set("Select the objects to settle first")
            return False
        return True

    def _prepare(self, context):
        LAST.update(summary=None, problems=[], cancelled=False)
        surface = context.view_layer.objects.active if self.onto == 'ACTIVE' else None
        if self.onto == 'ACTIVE' and surface is None:
            self.report({'ERROR'}, "Onto Active Object: make the surface the active object "
                        "(click it last)")
            return None
        job = SettleJob(context.scene, context.evaluated_depsgraph_get(),
                        context.selected_objects, surface, self.time_limit, self.jitter,
                        self.seed)
        try:
            job.prepare()
        except (SettleError, engine.EngineError) as exc:
            LAST["problems"] = list(job.problems)
            self.report({'ERROR'}, str(exc))
            return None
        return job

    def _advance(self, job, count):
        """job.advance; an unexpected engine failure cancels cleanly (nothing written)."""
        try:
            return job.advance(count)
        except Exception as exc:  # the engine is a separate component: never a traceback
            job.cancel()
            LAST["cancelled"] = True
            self.report({'ERROR'}, f"The simulation failed after {job.time:.2f} s "
                        f"({type(exc).__name__}: {exc}); nothing was changed. Please report "
                        "this with the .blend file.")
            return None

    def _done(self, context, job):
        summary = job.finish(self.apply_scale, self.keep_physics)
        LAST.update(summary=summary, problems=list(job.problems))
        _report_problems(self, job.problems)
        n = len(summary["settled"]) + len(summary["moving"])
        self.report({'INFO'}, f"Settled {n} object(s) in {summary['simulated_seconds']:.1f} s "
                    "of simulated time" + (f"; {len(summary['moving'])} still moving"
                                           if summary["moving"] else ""))
        return {'FINISHED'}

    def _engine_ready(self, wait):
        """The engine's first-use warm-up (compiler.prepare: the console says what the
        pause is) when wait, and the uncompiled note; False (reported) if it failed."""
        try:
            if wait:
                compiler.prepare()
        except Exception as exc:  # a compiler failure: said, never a traceback
            LAST.update(summary=None, problems=[], cancelled=True)
            self.report({'ERROR'}, f"{compiler.PREPARING} failed ({type(exc).__name__}: "
                        f"{exc}); nothing was changed. Please report this.")
            return False
        note = compiler.uncompiled_note()
        if note:
            self.report({'WARNING'}, note)
        return True

    def execute(self, context):
        if not self._engine_ready(wait=True):
            return {'CANCELLED'}
        job = self._prepare(context)
        if job is None:
            return {'CANCELLED'}
        while True:
            finished = self._advance(job, 24)
            if finished is None:
                return {'CANCELLED'}
            if finished:
                return self._done(context, job)

    def invoke(self, context, event):
        if bpy.app.background or context.window is None:
            return self.execute(context)
        # Compiling on first use runs in a thread of its own while the status bar shows its
        # stage (as the bake does); the scene is read once it is done.
        self._preparing, self._job = not compiler.ready(), None
        if self._preparing:
            compiler.start()
        else:
            if not self._engine_ready(wait=False):
                return {'CANCELLED'}
            job = self._prepare(context)
            if job is None:
                return {'CANCELLED'}
            self._job = job
        wm = context.window_manager
        self._timer = wm.event_timer_add(0.01, window=context.window)
        wm.progress_begin(0, 1000)
        wm.modal_handler_add(self)
        self._status(context)
        return {'RUNNING_MODAL'}

    def _status(self, context):
        if context.workspace is None:
            return
        if self._preparing:
            stage, seconds = self._stage   # (compiler.progress, read by _prepare_tick)
            context.workspace.status_text_set(
                f"Hullabaloo: {compiler.PREPARING.lower()}, compiled on first use "
                f"({stage or 'starting'}, {seconds:.0f} s) \u2014 Esc to cancel")
            return
        if self._job is None:
            return
        j = self._job
        context.workspace.status_text_set(
            f"Hullabaloo: settling, {j.time:.1f} s of {j.time_limit:g} s simulated, "
            f"{len(j.moving)} of {len(j.bodies)} object(s) still moving \u2014 Esc to cancel")

    def _end_modal(self, context):
        wm = context.window_manager
        if self._timer is not None:
            wm.event_timer_remove(self._timer)
            self._timer = None
        wm.progress_end()
        if context.workspace is not None:
            context.workspace.status_text_set(None)

    _stage = ("", 0.0)

    def _prepare_tick(self, context):
        """While the warm-up thread runs: its stage on the status bar. Once done: the scene
        is read. Returns None to go on waiting, False if it failed (reported), True."""
        finished, error, stage, seconds = compiler.progress()
        self._stage = (stage, seconds)
        if error is not None:
            self._preparing = False
            self._end_modal(context)
            LAST.update(summary=None, problems=[], cancelled=True)
            self.report({'ERROR'}, f"{compiler.PREPARING} failed ({type(error).__name__}: "
                        f"{error}); nothing was changed. Please report this.")
            return False
        if not finished:
            self._status(context)
            return None
        self._preparing = False
        if not self._engine_ready(wait=False):
            self._end_modal(context)
            return False
        self._job = self._prepare(context)
        if self._job is None:
            self._end_modal(context)
            return False
        return True

    def modal(self, context, event):
        job = self._job
        if event.type in {'ESC', 'RIGHTMOUSE'} and event.value == 'PRESS':
            if job is not None:   # None: still preparing the engine (it serves the next run)
                job.cancel()
            self._preparing = False
            self._end_modal(context)
            LAST["cancelled"] = True
            self.report({'WARNING'}, "Settle cancelled; nothing was changed")
            return {'CANCELLED'}
        if event.type != 'TIMER':
            return {'RUNNING_MODAL'}   # no edits while settling
        if self._preparing:
            ready = self._prepare_tick(context)
            if ready is None:
                return {'RUNNING_MODAL'}
            if not ready:
                return {'CANCELLED'}
            job = self._job
        budget = time.perf_counter() + 0.1   # ~10 UI updates per second
        finished = False
        while time.perf_counter() < budget and not finished:
            finished = self._advance(job, 1)
            if finished is None:
                self._end_modal(context)
                return {'CANCELLED'}
        context.window_manager.progress_update(int(1000 * job.progress))
        self._status(context)
        if not finished:
            return {'RUNNING_MODAL'}
        self._end_modal(context)
        return self._done(context, job)

    def cancel(self, context):  # window closed / file loaded mid-run
        if self._job is not None:
            self._job.cancel()
        self._end_modal(context)


CLASSES = (HULLABALOO_OT_settle,)
