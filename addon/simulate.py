"""The bake: read the scene, simulate the frame range with the engine, write keys.

``BakeJob`` splits a bake into ``prepare()`` (read and validate; touches nothing),
``advance(n)`` (simulate n frames; the scene changes only by frame changes when animated
objects must be sampled) and ``finish()`` (write every key at once) or ``cancel()``. The modal
operator calls ``advance`` from a timer, so ESC between chunks leaves the scene exactly as it
was; scripts call ``run()``.

Frames: the objects' poses at the first frame are the initial state; each later frame is one
engine step of 1 / fps seconds (the engine substeps internally).
"""
import re
import time

import numpy as np

from .. import engine
from ..engine.core import quat
from ..engine.world.guard import SpeedWatch
from . import animation, cache, channels, fields, fracture, handoff, joints, rb_import, transforms
from .collect import Problem, SceneReader, mesh_points, world_matrices

# How far below the lowest point of all passive / animated bodies a dynamic body must end to
# be reported as fallen out of the world.
FALLEN_DEPTH = 2.0


class BakeError(Exception):
    """A problem that stops the bake before anything is changed (message for the user)."""


def frame_range(scene):
    s = scene.hullabaloo
    if s.use_scene_frame_range:
        return scene.frame_start, scene.frame_end
    return s.frame_start, s.frame_end


def world_settings(scene):
    """The engine.WorldSettings of a scene: Scene > Hullabaloo and the scene's gravity (times
    the effector weights, see fields.gravity_weight); every other tunable keeps the engine's
    default."""
    s = scene.hullabaloo
    # Gravity scaled by the rigid-body world's effector weights (Gravity x All), as Blender.
    w = fields.gravity_weight(scene)
    gravity = tuple(float(g) * w for g in scene.gravity) if scene.use_gravity else (0.0, 0.0, 0.0)
    return engine.WorldSettings(gravity=gravity, substeps=s.substeps or None,
                                iterations=s.iterations, sleeping=s.use_sleeping, ccd=s.use_ccd)


def _obj_matrix(obj):
    return np.array(obj.matrix_world, dtype=np.float64)


class BakeJob:
    def __init__(self, scene, depsgraph, from_frame=None, record=None, package=None,
                 resume=None, preview=False):
        # resume: a cache.BakeCache to continue from at from_frame instead of the scene's
        # bake cache (the live preview keeps its own). preview: this job is the live
        # preview's; any other job first gives the previewed objects their own transforms.
        self.resume = resume
        self.preview = preview
        self.scene = scene
        self.depsgraph = depsgraph
        self.from_frame = from_frame
        self.record = scene.hullabaloo.keep_debug_records if record is None else bool(record)
        self.package = package
        self.problems = []
        self.world = None
        self.frame = None
        self.done = False
        self.sim_seconds = 0.0
        self.write_seconds = 0.0
        self.refresh_seconds = 0.0
        self.max_penetration = 0.0
        self.unstable = {}        # object name -> (frame, speed m/s): absurd speeds (SpeedWatch)
        self.guarded = {}         # object name -> (frame, reason): engine guard firings
        self._guard_seen = 0

    # -- prepare ----------------------------------------------------------------------------
    def prepare(self):
        """Read and validate the scene and build the world. Raises BakeError (nothing was
        changed) or returns the list of problems of skipped or caveated objects."""
        scene = self.scene
        if not self.preview:
            from . import preview  # imports this module: import on use
            preview.release(scene)
        start, end = frame_range(scene)
        if end <= start:
            raise BakeError(f"The frame range {start}-{end} has no length; set an end frame "
                            "after the start frame (Output or Scene properties).")
        self.frame_start, self.frame_end = start, end
        first = start
        prev_cache = None
        if self.from_frame is not None:
            f = int(self.from_frame)
            prev_cache = self.resume if self.resume is not None else cache.get(scene)
            if prev_cache is None or not prev_cache.has_frame(f):
                raise BakeError(f"No stored simulation state at frame {f}: bake the scene "
                                "first (Re-bake From Frame continues an earlier bake).")
            if f >= end:
                raise BakeError(f"Frame {f} is the last frame of the range; move to an "
                                "earlier frame to re-bake from it.")
            first = f
        self.first = first
        self.saved_frame = (scene.frame_current, scene.frame_subframe)
        # Everything about the initial state is read at the first frame (poses, parent
        # spaces, rotation channel values), then the user's frame is put back.
        if (scene.frame_current, scene.frame_subframe) != (first, 0.0):
            scene.frame_set(first)
        try:
            return self._prepare_at_first_frame(prev_cache)
        finally:
            self._restore_frame()

    def _prepare_at_first_frame(self, prev_cache):
        scene, first, end = self.scene, self.first, self.frame_end
        reader = SceneReader(scene, self.depsgraph).read()
        self.problems = reader.problems
        bodies = reader.bodies
        if not bodies:
            errs = "; ".join(str(p) for p in self.problems if p.level == "ERROR")
            raise BakeError(("Nothing to bake: no object has Hullabaloo enabled (Physics "
                             "properties)." + rb_import.import_hint(scene)) if not errs
                            else f"Nothing to bake: {errs}")
        world = engine.World(settings=fracture.glue_world_settings(scene,
                                                                   world_settings(scene)))
        kept = []
        for b in bodies:
            try:
                b.index = world.add_body(b.shape, position=b.position,
                                         orientation=b.orientation, kind=b.kind, **b.params)
                if b.deactivation:
                    world.set_deactivation(b.index, **b.deactivation)
            except engine.EngineError as exc:
                self.problems.append(Problem("ERROR", b.name, f"{exc}. Skipped."))
                continue
            kept.append(b)
        bodies = kept
        self.bodies = bodies
        with joints.bodies_where_joints_were_made(world, bodies, prev_cache):
            self.joints = self._add_joints(world, bodies)
            self.glue = self._add_glue(world, bodies)
        self.dynamic = [b for b in bodies if b.kind == "dynamic"]
        if not self.dynamic:
            errs = "; ".join(str(p) for p in self.problems if p.level == "ERROR")
            raise BakeError("Nothing to bake: no valid dynamic object" +
                            (f". {errs}" if errs else " (set an object's Hullabaloo type "
                             "to Dynamic).") + rb_import.import_hint(scene))
        self.kinematic = [b for b in bodies if b.kind == "kinematic"]
        self.world = world
        self.names = [b.name for b in bodies]
        if prev_cache is not None:
            self._resume_from(prev_cache, first)
        self._start_handoff(first, end)
        self.watch = SpeedWatch(world)
        self._plan_parents()
        # Force fields: poses and settings of the frame each step ends on (fields.py).
        self.fields = fields.SceneFields(scene, self.depsgraph, self.dynamic, self.problems,
                                         Problem)
        self.fields.apply(world, first)
        self.sample = self.sample or self.fields.animated
        self.sample = self.sample or self.handoff.samples
        n_frames = end - first + 1
        nd = len(self.dynamic)
        self.dyn_idx = np.array([b.index for b in self.dynamic], dtype=np.int64)
        self.positions = np.empty((n_frames, nd, 3))
        self.orientations = np.empty((n_frames, nd, 4))
        self.positions[0] = world.positions[self.dyn_idx]
        self.orientations[0] = world.orientations[self.dyn_idx]
        self.states = [world.get_state()]
        # One engine.StepRecord per frame (None for the first: no step led into it).
        self.records = [None] if self.record else None
        self.frame = first
        # Blender's Rigid Body World Speed: simulated seconds per frame, scaled.
        self.dt = scene.render.fps_base / scene.render.fps * scene.hullabaloo.time_scale
        self._start_channels()
        return self.problems

    def _add_joints(self, world, bodies):
        """The scene's joints (Object.hullabaloo_joint), those that cannot be made reported
        by object name and skipped (addon.joints)."""
        from .collect import Problem
        index = {b.name: (b.index, b.kind) for b in bodies}
        return joints.add_scene_joints(
            world, self.scene, index,
            lambda obj, msg, level="ERROR": self.problems.append(Problem(level, obj.name,
                                                                         msg)),
            self.depsgraph)

    def _add_glue(self, world, bodies):
        """Glue bonds of fractured collections (addon.fracture), after the scene's joints."""
        from .collect import Problem
        index = {b.name: (b.index, b.kind) for b in bodies}
        return fracture.add_scene_glue(
            world, self.scene, index,
            lambda owner, msg: self.problems.append(Problem("WARNING", owner.name, msg)))

    def _resume_from(self, prev, frame):
        """Put the world in the stored state of frame (bit-exact when the body set is the
        same; otherwise matched bodies get their stored pose and velocity, new ones start
        from their current pose)."""
        state = prev.state(frame)
        same_joints = int(state.get("joint_count", 0)) == self.world.joint_count
        if prev.names == self.names and same_joints:
            self.world.set_state(state)   # joints too: broken ones stay broken
            self._scenery_as_read()
            return
        where = {n: i for i, n in enumerate(prev.names)}
        for b in self.bodies:
            j = where.get(b.name)
            if j is None or b.kind != "dynamic":
                continue
            self.world.set_pose(b.index, position=state["pos"][j], orientation=state["q"][j])
            self.world.set_velocity(b.index, linear=state["vel"][j, :3],
                                    angular=state["vel"][j, 3:])

    def _start_handoff(self, first, end):
        """Animated / Dynamic keyed on dynamic bodies (addon.handoff): kinds at the first
        frame, and the frames where they switch."""
        from .collect import Problem
        self.handoff = handoff.Schedule(self.dynamic, first, end)
        for name, message in self.handoff.notes:
            self.problems.append(Problem("WARNING", name, message))
        self.handoff_index = np.array([self.dynamic[j].index for j in self.handoff.rows],
                                      dtype=np.int64)
        self.handoff.start(self.world, self.handoff_index)

    def _handoff_poses(self, cols):
        """Poses (positions (K, 3), quaternions (K, 4)) of hand-off columns' objects at the
        current frame, their matrices read in one call."""
        objs = [self.dynamic[self.handoff.rows[c]].obj for c in cols]
        m = world_matrices(self.scene, objs)
        R, _ = transforms.polar_decompose(m[:, :3, :3])
        return m[:, :3, 3], quat.from_matrix(R)

    def _scenery_as_read(self):
        """Passive and animated bodies go where the scene has them now: the stored state
        holds their pose of that frame, and an edit since (an obstacle moved) must count.
        Poses that agree to 1e-9 are left alone, so resuming an unedited scene stays
        bit-exact."""
        w = self.world
        for b in self.bodies:   # a handful of scenery objects
            if b.kind == "dynamic":
                continue
            q = b.orientation
            same_q = abs(float(np.dot(w.orientations[b.index], q))) > 1.0 - 1e-12
            if np.allclose(w.positions[b.index], b.position, rtol=0, atol=1e-9) and same_q:
                continue
            w.set_pose(b.index, position=b.position, orientation=q)

    def _plan_parents(self):
        """Parent spaces of the keyed bodies: P = parent_world(f) @ C with C constant.

        P0 = matrix_world @ matrix_basis^-1 at the first frame works for every parent type
        (object, bone, vertex). A parent simulated by us moves with its body pose; a parent
        that is animated is sampled per frame; any other parent is fixed.
        """
        body_of = {b.name: b for b in self.bodies}
        nd = len(self.dynamic)
        self.parent_const = np.tile(np.eye(4), (nd, 1, 1))
        self.parent_body = np.full(nd, -1, dtype=np.int64)   # dynamic row of a simulated parent
        self.parent_sampled = []                              # (row, parent object)
        self.parent_world0 = np.tile(np.eye(4), (nd, 1, 1))
        dyn_row = {b.name: i for i, b in enumerate(self.dynamic)}
        for i, b in enumerate(self.dynamic):
            obj = b.obj
            if obj.parent is None:
                continue
            P0 = _obj_matrix(obj) @ np.linalg.inv(np.array(obj.matrix_basis, dtype=np.float64))
            par = obj.parent
            pw0 = _obj_matrix(par)
            self.parent_world0[i] = pw0
            self.parent_const[i] = np.linalg.inv(pw0) @ P0
            pb = body_of.get(par.name)
            if pb is not None and pb.kind == "dynamic":
                self.parent_body[i] = dyn_row[par.name]
            elif (pb is not None and pb.kind == "kinematic") or \
                    (pb is None and transforms.may_move(par)):
                self.parent_sampled.append((i, par))
        self.sampled_parent_mats = []
        self.deforming = [b for b in self.bodies if b.deform is not None]
        self.sample = bool(self.kinematic or self.parent_sampled or self.deforming)

    def _start_channels(self):
        """Rotation channel values at the first frame: continuity references for the keys."""
        self.start_rot = []
        for b in self.dynamic:
            o = b.obj
            self.start_rot.append((o.rotation_mode, tuple(o.rotation_euler),
                                   tuple(o.rotation_quaternion), tuple(o.rotation_axis_angle)))

    def restore_frame(self):
        self._restore_frame()

    def _restore_frame(self):
        cur, sub = self.saved_frame
        if (self.scene.frame_current, self.scene.frame_subframe) != (cur, sub):
            self.scene.frame_set(cur, subframe=sub)

    # -- simulate ---------------------------------------------------------------------------
    @property
    def progress(self):
        if self.frame is None:
            return 0.0
        return (self.frame - self.first) / max(1, self.frame_end - self.first)

    def advance(self, count=1, restore=True):
        """Simulate up to count frames; returns True when the range is done. With animated
        objects the scene's frame moves while sampling them; it is put back unless restore
        is False (the caller then calls restore_frame() after a series of calls)."""
        world = self.world
        t0 = time.perf_counter()
        try:
            for _ in range(count):
                if self.frame >= self.frame_end:
                    break
                f = self.frame + 1
                if self.sample:
                    self._sample(f)
                if self.fields.per_frame:
                    self.fields.apply(world, f)
                if self.handoff.any:
                    self.handoff.step(world, f, self.handoff_index, self._handoff_poses)
                try:
                    world.step(self.dt, record=self.record)
                except engine.EngineError as exc:
                    raise engine.EngineError(self.name_bodies(str(exc))) from exc
                self._watch(f)
                k = f - self.first
                self.positions[k] = world.positions[self.dyn_idx]
                self.orientations[k] = world.orientations[self.dyn_idx]
                self.states.append(world.get_state())
                if self.record:
                    rec = world.last_record or engine.StepRecord()
                    self.records.append(rec.compact())
                    if rec.contact_count:
                        self.max_penetration = max(self.max_penetration,
                                                   float(-np.min(rec.separations)))
                self.frame = f
        finally:
            if self.sample and restore:
                self._restore_frame()
            self.sim_seconds += time.perf_counter() - t0
        return self.frame >= self.frame_end

    def name_bodies(self, message):
        """An engine message with every "body <index>" replaced by the object's name (the
        engine only knows indices; the user only knows names)."""
        def name(m):
            i = int(m.group(1))
            return f'object "{self.names[i]}"' if 0 <= i < len(self.names) else m.group(0)
        return re.sub(r"\bbody (\d+)", name, message)

    def _watch(self, f):
        """After the step to frame f: new guard firings and absurd speeds, once per object."""
        events = self.world.guard_events
        for ev in events[self._guard_seen:]:
            name = self.names[ev.body]
            if name not in self.guarded:
                self.guarded[name] = (f, ev.reason)
                self.problems.append(Problem(
                    "WARNING", name, f"the simulation of this object failed at frame {f} "
                    f"({ev.reason}); it was kept at its last good pose and put to sleep, the "
                    "rest of the scene went on. Please report this with the .blend file."))
        self._guard_seen = len(events)
        if self.fields.objects:
            return  # force fields add speed the watch cannot bound: no absurd-speed report
        kin = self.world.kinds == 2     # animated bodies (and hand-offs) this frame
        if kin.any():
            w = self.world
            self.watch.kinematic(float(np.max(
                np.linalg.norm(w.linear_velocities[kin], axis=1)
                + np.linalg.norm(w.angular_velocities[kin], axis=1) * self.watch.reach[kin])))
        idx, speed = self.watch.check(self.world, self.dt)
        for i, v in zip(idx, speed):
            name = self.names[i]
            self.unstable[name] = (f, float(v))
            self.problems.append(Problem(
                "WARNING", name, f"reached {v:.3g} m/s at frame {f}, far beyond any speed at "
                f"the start of the bake or of the animated objects ({self.watch.reference:.3g} "
                "m/s): the simulation went unstable there, its keys from that frame on are "
                "not trustworthy. Try more substeps, or a less extreme mass ratio between "
                "touching objects."))

    def _sample(self, f):
        """Animated bodies' targets, deforming meshes and moving parents' matrices at frame
        f (the scene is evaluated at f unless it already is: the live preview samples the
        frame the user just moved to)."""
        if (self.scene.frame_current, self.scene.frame_subframe) != (f, 0.0):
            self.scene.frame_set(f)
        if self.deforming:
            self._deform(f)
        if self.kinematic:
            mats = np.array([_obj_matrix(b.obj) for b in self.kinematic])
            R, _ = transforms.polar_decompose(mats[:, :3, :3])
            q = quat.from_matrix(R)
            idx = np.array([b.index for b in self.kinematic])
            self._kinematic_speed(idx, mats[:, :3, 3], q)
            # Animated bodies are few (scenery, hand-offs): one call each.
            for j, b in enumerate(self.kinematic):
                self.world.set_kinematic_target(b.index, mats[j, :3, 3], q[j])
        if self.parent_sampled:
            self.sampled_parent_mats.append(np.array([_obj_matrix(p)
                                                      for _, p in self.parent_sampled]))

    def _deform(self, f):
        """Deforming Mesh bodies take their evaluated vertices of frame f. A mesh whose vertex
        count changed (a modifier adding or removing geometry) or that has non-finite
        coordinates is reported by name and goes back to its first-frame shape for the rest
        of the run; the bake goes on."""
        for b in list(self.deforming):   # a few scenery objects: one read each
            d = b.deform
            pts = mesh_points(b.obj, self.depsgraph)
            n = 0 if pts is None else len(pts)
            if n != d["count"]:
                why = (f"its mesh has {n} vertices at frame {f} but {d['count']} at the first "
                       "frame (a modifier or geometry node that adds or removes geometry, "
                       "such as Subdivision, Remesh or Decimate, with Deforming on); a "
                       "deforming mesh needs the same vertices on every frame")
            elif not np.all(np.isfinite(pts)):
                why = f"its deformed mesh has non-finite coordinates at frame {f}"
            else:
                self.world.set_mesh_vertices(b.index, pts @ b.shape_matrix.T)
                continue
            self.problems.append(Problem("WARNING", b.name, f"{why}. It keeps its first-frame "
                                         f"shape from frame {f} on."))
            self.world.set_mesh_vertices(b.index, d["points"])
            self.deforming.remove(b)

    def _kinematic_speed(self, idx, pos, q):
        """Tell the speed watch how fast the animated bodies' surfaces move this frame."""
        w = self.world
        lin = np.linalg.norm(pos - w.positions[idx], axis=1)
        dot = np.abs(np.einsum("ij,ij->i", q, w.orientations[idx]))
        ang = 2.0 * np.arccos(np.clip(dot, 0.0, 1.0))
        self.watch.kinematic(float(np.max((lin + ang * self.watch.reach[idx]) / self.dt)))

    def run(self):
        """Synchronous bake (scripts, headless): prepare, simulate everything, write."""
        if self.world is None:
            self.prepare()
        while not self.advance(64):
            pass
        return self.finish()

    def cancel(self):
        """Abandon the bake: nothing was written, the frame is put back."""
        if self.frame is not None:
            self._restore_frame()
        self.world = None
        self.done = True

    # -- write ------------------------------------------------------------------------------
    def finish(self):
        """Write the keys of every dynamic body (one pass, in bulk) and keep the cache."""
        t0 = time.perf_counter()
        self._report_fallen()
        frames = np.arange(self.first, self.frame + 1, dtype=np.float64)
        values = self.channel_values()
        for b in self.dynamic:
            animation.backup_object(b.obj, self.frame_start, self.frame_end)
        for j, b in enumerate(self.dynamic):
            loc, rot = values[j]
            animation.write_object_keys(b.obj, frames, loc, rot)
        self.write_seconds = time.perf_counter() - t0
        self._store_cache()
        t0 = time.perf_counter()
        # Re-evaluate the scene at the user's frame, so the objects show their baked pose
        # (Blender rebuilds the depsgraph relations for the new actions here).
        self.scene.frame_set(self.saved_frame[0], subframe=self.saved_frame[1])
        self.refresh_seconds = time.perf_counter() - t0
        self.done = True
        return self.summary()

    def channel_values(self):
        """Per dynamic object (location (F, 3), rotation (F, 3|4) in its rotation mode): the
        objects' settings read here, the maths in addon/channels.py (Blender-free)."""
        F = self.frame - self.first + 1
        objs = [b.obj for b in self.dynamic]
        modes = np.array([o.rotation_mode for o in objs])
        delta = channels.delta_rotations(
            modes, [tuple(o.delta_rotation_quaternion) for o in objs],
            [tuple(o.delta_rotation_euler) for o in objs])
        parents = channels.ParentSpaces(
            self.parent_world0, self.parent_const, self.parent_body,
            [r for r, _ in self.parent_sampled], self.sampled_parent_mats)
        return channels.channel_values(
            self.positions[:F], self.orientations[:F],
            np.array([b.shape_matrix for b in self.dynamic]),
            np.array([tuple(o.delta_location) for o in objs]),
            np.array([tuple(o.scale) for o in objs]) * np.array([tuple(o.delta_scale) for o in objs]),
            modes, delta, parents, self.start_rot)

    def _report_fallen(self):
        """A body that ends far below all the scenery fell off or through it: say so (a
        scene whose parts were misread loses bodies this way), naming each one."""
        from .collect import Problem
        scenery = [b for b in self.bodies if b.kind != "dynamic"]
        if not scenery or self.frame is None:
            return
        low = min(float(b.position[2] + (b.shape.core_points @ b.rotation.T)[:, 2].min()
                        - b.shape.radius) for b in scenery)
        z = self.positions[self.frame - self.first, :, 2]
        # A body held by joints to the scenery (a chain from a passive anchor) hangs or swings
        # below it without having fallen (issue 11: a Connect chain's free end was reported).
        held = self.world.joint_anchored()[self.dyn_idx]
        for j in np.flatnonzero((z < low - FALLEN_DEPTH) & ~held):
            self.problems.append(Problem("WARNING", self.dynamic[j].name, (
                f"ends {low - z[j]:.3g} m below the lowest scenery (frame {self.frame}): it "
                "fell off or through it. If that is not intended, check that it does not "
                "start inside another body and that the scenery's shapes are what you see "
                "(Physics > Hullabaloo > Shape).")))

    def _store_cache(self):
        states = self.states
        records = self.records
        prev = cache.get(self.scene) if self.from_frame is not None else None
        if prev is not None and prev.names == self.names:
            keep = self.first - prev.frame_start
            states = prev.states[:keep] + states
            if records is not None and prev.records:
                records = prev.records[:keep] + records
            elif records is not None:
                records = None
            start = prev.frame_start
        else:
            start = self.first
        cache.put(self.scene, cache.BakeCache(start, self.frame, self.names, states, records))

    def summary(self):
        return {
            "objects": len(self.dynamic),
            "bodies": len(self.bodies),
            "fields": len(self.fields.objects),
            "frames": self.frame - self.first + 1,
            "frame_start": self.first,
            "frame_end": self.frame,
            "simulation_seconds": self.sim_seconds,
            "write_seconds": self.write_seconds,
            "refresh_seconds": self.refresh_seconds,
            "max_penetration": self.max_penetration if self.record else None,
            "problems": [str(p) for p in self.problems],
            "unstable": dict(self.unstable),
            "guarded": dict(self.guarded),
        }

