"""Live Preview: simulate as the frame advances, without writing keys.

``Scene.hullabaloo.live_preview`` on: a ``frame_change_post`` handler advances a preview
``BakeJob`` (the bake's own machinery, so a preview and a Bake of the same scene give the same
numbers, bit for bit) kept in memory per scene, and poses the dynamic objects by setting their
``matrix_world`` (never keys). Per frame the preview keeps the engine state and the dynamic
bodies' poses, like the bake cache.

- Forward: the frame after the last cached one is simulated in the handler (one engine step,
  sampled at the frame Blender has just evaluated, so no extra scene evaluation). Further
  ahead (a jump), the handler still simulates one frame only, shows the latest cached pose and
  leaves the rest to a timer (``catch_up``), one frame per tick, so the viewport never blocks
  for more than one frame's simulation; catching up with animated scenery re-evaluates the
  scene at each intermediate frame and puts the user's frame back.
- Back: the cached pose, no simulation.
- Edits (``depsgraph_update_post``): a change to an enabled object (transform outside of our
  own posing, mesh, settings), to a force field object, or to the scene's simulation settings
  drops the cached frames after the current one; the next frame change re-simulates from the
  current frame's cached state with the edited scene (BakeJob with ``resume``), so frames up
  to the edit are kept. At (or before) the first frame, the whole preview restarts. As in
  Re-bake From Frame, the state of frame k carries the dynamic bodies' poses and velocities,
  while passive and animated bodies are taken where the scene has them now; so moving a
  dynamic object while the preview shows a later frame changes nothing (move it at the
  first frame to change where it starts; that is also the transform it keeps when the
  preview is turned off).
- Off: every posed object gets its own transform back (its ``matrix_basis`` saved before the
  first posing, or as the user set it at the first frame while previewing), and the frame is
  re-evaluated so animated objects follow their animation, which was never touched.
- Saving the file while previewing stores the objects' own transforms (save_pre puts them
  back, save_post re-poses).
"""
import contextlib
import time
from operator import attrgetter

import bpy
import numpy as np
from mathutils import Matrix

from ..engine import EngineError
from ..engine.core import quat
from . import cache as bake_cache
from . import compiler
from .fields import effector_weights
from .simulate import BakeError, BakeJob, frame_range

_PREVIEWS = {}         # scene name -> Preview
_BUSY = [False]        # our own frame changes / posing: the handlers ignore them
TIMER_INTERVAL = 0.001  # seconds between catch-up ticks (each simulates one frame)


@contextlib.contextmanager
def _busy():
    old = _BUSY[0]
    _BUSY[0] = True
    try:
        yield
    finally:
        _BUSY[0] = old


def _group_values(group):
    """The values of a settings PropertyGroup (nested groups and our bookkeeping left out),
    read through one attrgetter per group type built on first use (walking bl_rna per call
    costs ~0.1 ms per object: 10 ms a frame for 100 bodies)."""
    reader = _READERS.get(type(group))
    if reader is None:
        props = [p for p in group.bl_rna.properties
                 if p.identifier not in _SKIP and p.type not in ('POINTER', 'COLLECTION')]
        arrays = [i for i, p in enumerate(props)
                  if p.type != 'STRING' and getattr(p, "is_array", False)]
        reader = _READERS[type(group)] = (attrgetter(*[p.identifier for p in props]), arrays)
    get, arrays = reader
    values = list(get(group))
    for i in arrays:
        values[i] = tuple(values[i])
    return tuple(values)


_SKIP = frozenset(("rna_type", "name", "live_preview", "cache_file"))
_READERS = {}


def _settings_signature(scene):
    """What changes the simulation besides transforms and meshes (which the depsgraph
    reports): the scene's settings and every object's Hullabaloo settings. Blender sends no
    depsgraph update for an add-on's own properties, so the preview compares this at every
    frame change and depsgraph update."""
    objs = tuple((o.name, _group_values(o.hullabaloo)) for o in scene.objects
                 if o.hullabaloo.enabled or o.hullabaloo.collision_part)
    weights = effector_weights(scene)   # scale gravity and the force fields
    return (_group_values(scene.hullabaloo), tuple(scene.gravity), scene.use_gravity,
            scene.render.fps, scene.render.fps_base, scene.frame_start, scene.frame_end, objs,
            None if weights is None else _group_values(weights))


class Preview:
    """The live preview of one scene: a BakeJob advanced on demand and its per-frame cache."""

    def __init__(self, scene):
        self.scene_name = scene.name
        self.job = None
        self.start = None
        self.frames = []      # per frame from start: (dynamic BodySpecs, positions, orientations)
        self.states = []      # per frame: the engine state (World.get_state)
        self.names = None
        self.saved = {}       # object name -> its own matrix_basis (Matrix), before posing
        self.applied = {}     # object name -> matrix_world we set (4x4 array)
        self.bodies = set()   # names of the objects simulated (for edit detection)
        self.problems = []
        self.error = None     # a BakeError message: nothing to preview until an edit
        self.steps = 0        # frames simulated so far (tests count them)
        self.sim_seconds = 0.0
        self.shown = scene.frame_current   # the frame the user last saw (edits happen there)
        self.signature = _settings_signature(scene)

    @property
    def last(self):
        """Last cached frame (start - 1 before anything is cached)."""
        return (self.start if self.start is not None else 0) + len(self.frames) - 1

    # -- simulation -------------------------------------------------------------------------
    def _restore_own(self):
        """Objects get their own transforms back (before reading the scene, and when off)."""
        for name, basis in self.saved.items():
            obj = bpy.data.objects.get(name)
            if obj is not None:
                obj.matrix_basis = basis
        self.applied.clear()

    def _build(self, scene):
        """A new job: from the first frame, or resuming at the last cached frame."""
        self._restore_own()
        depsgraph = bpy.context.evaluated_depsgraph_get()
        resume_at = self.last if self.frames else None
        resume = (bake_cache.BakeCache(self.start, self.last, self.names, self.states)
                  if resume_at is not None else None)
        job = BakeJob(scene, depsgraph, from_frame=resume_at, record=False, resume=resume,
                      preview=True)
        try:
            compiler.prepare()   # compiling on first use: the console says what the pause is
        except Exception as exc:
            self._fail(f"{compiler.PREPARING} failed ({type(exc).__name__}: {exc})")
            return False
        try:
            with _busy():
                problems = job.prepare()
        except (BakeError, EngineError) as exc:
            self._fail(str(exc))
            return False
        self.problems = list(problems)
        self.job = job
        self.names = job.names
        self.bodies = {b.name for b in job.bodies}
        pose = (job.dynamic, job.positions[0].copy(), job.orientations[0].copy())
        if resume_at is None:
            self.start = job.first
            self.frames, self.states = [pose], [job.states[0]]
        else:   # the same state, now with the edited scene's bodies
            self.frames[-1], self.states[-1] = pose, job.states[0]
        return True

    def advance(self, scene):
        """Simulate the frame after the last cached one (at most one engine step). Returns
        False when there is nothing (more) to simulate."""
        if self.error is not None:
            return False
        if self.job is None and not self._build(scene):
            return False
        job = self.job
        if job.frame >= job.frame_end:
            return False
        t0 = time.perf_counter()
        job.saved_frame = (scene.frame_current, scene.frame_subframe)
        try:
            with _busy():
                job.advance(1)
        except Exception as exc:
            self._fail(f"the simulation failed after frame {job.frame} "
                       f"({type(exc).__name__}: {exc})")
            return False
        k = job.frame - job.first
        self.frames.append((job.dynamic, job.positions[k].copy(), job.orientations[k].copy()))
        self.states.append(job.states[-1])
        self.problems = list(job.problems)
        self.steps += 1
        self.sim_seconds += time.perf_counter() - t0
        return True

    def _fail(self, message):
        """Stop simulating until the next edit; say why once, in the console and the
        Live Preview's status (``error``)."""
        self.error = message
        self.job = None
        print(f"Hullabaloo Live Preview ({self.scene_name}): {message}", flush=True)

    def behind(self, scene):
        """Whether the current frame is ahead of the cache and simulation can reach it."""
        if self.error is not None:
            return False
        _, end = frame_range(scene)
        return scene.frame_current > self.last and self.last < end

    def invalidate(self, scene, frame):
        """Drop the cached frames after ``frame`` (all of them at or before the first frame);
        the next advance re-simulates from there with the scene as it is now."""
        self.error = None
        self.job = None
        self.signature = _settings_signature(scene)
        if self.start is None or frame <= self.start:
            self.frames, self.states, self.start = [], [], None
            return
        keep = min(frame, self.last) - self.start + 1
        del self.frames[keep:]
        del self.states[keep:]

    # -- posing -----------------------------------------------------------------------------
    def show(self, scene, frame=None):
        """Pose the dynamic objects at ``frame`` (default: the current one), or at the
        nearest cached frame."""
        if not self.frames:
            return
        f = scene.frame_current if frame is None else frame
        self.shown = f
        i = int(np.clip(f - self.start, 0, len(self.frames) - 1))
        bodies, pos, ori = self.frames[i]
        mats = np.tile(np.eye(4), (len(bodies), 1, 1))
        K = np.array([b.shape_matrix for b in bodies]).reshape(-1, 3, 3)
        mats[:, :3, :3] = quat.to_matrix(ori) @ K
        mats[:, :3, 3] = pos
        with _busy():
            for b, m in zip(bodies, mats):
                obj = bpy.data.objects.get(b.name)
                if obj is None:
                    continue
                if b.name not in self.saved:
                    self.saved[b.name] = obj.matrix_basis.copy()
                obj.matrix_world = Matrix(m.tolist())
                self.applied[b.name] = m

    def stop(self, scene):
        """Give every posed object its own transform back and re-evaluate the frame, so
        animated objects show their (untouched) animation."""
        self._restore_own()
        self.saved.clear()
        with _busy():
            scene.frame_set(scene.frame_current, subframe=scene.frame_subframe)

    # -- edits ------------------------------------------------------------------------------
    def _ours(self, obj):
        m = self.applied.get(obj.name)
        return m is not None and np.allclose(np.array(obj.matrix_world), m, atol=1e-5)

    def settings_changed(self, scene):
        """Re-simulate from the frame the user was at if a setting changed since."""
        if _settings_signature(scene) != self.signature:
            self.invalidate(scene, self.shown)

    def depsgraph_updated(self, scene, depsgraph):
        self.settings_changed(scene)
        edited = False
        for u in depsgraph.updates:
            idd = getattr(u.id, "original", u.id)
            if isinstance(idd, bpy.types.Object):
                field = getattr(idd, "field", None)
                relevant = (idd.name in self.bodies or idd.hullabaloo.enabled
                            or (field is not None and field.type != 'NONE'))
                if not relevant:
                    continue
                if u.is_updated_transform and not u.is_updated_geometry and self._ours(idd):
                    continue
                edited = True
                if idd.name in self.saved and scene.frame_current <= (self.start or 0):
                    self.saved[idd.name] = idd.matrix_basis.copy()   # a new initial pose
        if edited:
            self.invalidate(scene, scene.frame_current)


# -- handlers and the timer ------------------------------------------------------------------
def get(scene):
    return _PREVIEWS.get(scene.name)


def release(scene):
    """Before another job reads the scene (a Bake, a Debug Frame): the previewed objects get
    their own transforms back; the next frame change poses them again."""
    p = _PREVIEWS.get(scene.name)
    if p is not None:
        p._restore_own()
        p.saved.clear()


def frame_changed(scene):
    """One frame change: at most one frame simulated, then the pose shown; a timer catches
    up when the frame is further ahead."""
    p = _PREVIEWS.get(scene.name)
    if p is None:
        p = _PREVIEWS[scene.name] = Preview(scene)
    else:
        p.settings_changed(scene)
    if p.start is None and p.error is None:
        p._build(scene)            # the first frame's state: nothing simulated yet
    if p.behind(scene):
        p.advance(scene)
    p.show(scene)
    # Headless (background) Blender runs no timers: scripts call catch_up() themselves.
    timer = not bpy.app.background and not bpy.app.timers.is_registered(catch_up)
    if p.behind(scene) and timer:
        bpy.app.timers.register(catch_up, first_interval=TIMER_INTERVAL)


def catch_up():
    """Timer tick: every previewing scene behind its current frame simulates one more frame
    and shows its latest pose. Returns the next interval, or None when all have caught up."""
    more = False
    for name, p in list(_PREVIEWS.items()):
        scene = bpy.data.scenes.get(name)
        if scene is None or not scene.hullabaloo.live_preview:
            continue
        if p.behind(scene):
            p.advance(scene)
            p.show(scene)
        more |= p.behind(scene)
    return TIMER_INTERVAL if more else None


def sync(scene):
    """Follow the scene's Live Preview setting: start (show the current frame) when it was
    turned on, stop (own transforms back) when it was turned off. Called by the message bus
    when the setting changes in the UI and by every handler; a script that sets
    ``live_preview`` calls it (or changes the frame) for it to take effect at once, since
    the message bus only runs in the interactive event loop."""
    if _BUSY[0]:
        return
    p = _PREVIEWS.get(scene.name)
    if scene.hullabaloo.live_preview and p is None:
        frame_changed(scene)
    elif not scene.hullabaloo.live_preview and p is not None:
        del _PREVIEWS[scene.name]
        p.stop(scene)


def _on_setting_changed(*_args):
    for scene in bpy.data.scenes:
        sync(scene)


@bpy.app.handlers.persistent
def on_frame_change_post(scene, depsgraph=None):
    if _BUSY[0]:
        return
    if scene.hullabaloo.live_preview:
        frame_changed(scene)
    else:
        sync(scene)


@bpy.app.handlers.persistent
def on_depsgraph_update_post(scene, depsgraph=None):
    if _BUSY[0] or depsgraph is None:
        return
    sync(scene)
    p = _PREVIEWS.get(scene.name)
    if p is not None:
        p.depsgraph_updated(scene, depsgraph)


@bpy.app.handlers.persistent
def on_undo_redo(*args):
    """Undo rebuilds Blender's data: the jobs' object references are stale, and what was
    undone may be any edit, so every preview re-simulates from the frame shown."""
    for name, p in list(_PREVIEWS.items()):
        scene = bpy.data.scenes.get(name)
        if scene is None:
            del _PREVIEWS[name]
        else:
            p.invalidate(scene, p.shown)


@bpy.app.handlers.persistent
def on_save_pre(*args):
    for p in _PREVIEWS.values():
        p._restore_own()


@bpy.app.handlers.persistent
def on_save_post(*args):
    for name, p in _PREVIEWS.items():
        scene = bpy.data.scenes.get(name)
        if scene is not None:
            p.show(scene)


_OWNER = object()   # message-bus subscription owner


def subscribe():
    """Follow the setting through the message bus (again after a file load, which clears
    the bus)."""
    from .props import HULLABALOO_PG_scene
    bpy.msgbus.clear_by_owner(_OWNER)
    bpy.msgbus.subscribe_rna(key=(HULLABALOO_PG_scene, "live_preview"), owner=_OWNER, args=(),
                             notify=_on_setting_changed)


def forget_all():
    """A new file: the previews' objects belong to the old one."""
    _PREVIEWS.clear()
    subscribe()


HANDLERS = (("frame_change_post", on_frame_change_post),
            ("depsgraph_update_post", on_depsgraph_update_post),
            ("save_pre", on_save_pre), ("save_post", on_save_post),
            ("undo_post", on_undo_redo), ("redo_post", on_undo_redo))


def register():
    for kind, fn in HANDLERS:
        getattr(bpy.app.handlers, kind).append(fn)
    subscribe()


def unregister():
    bpy.msgbus.clear_by_owner(_OWNER)
    for kind, fn in HANDLERS:
        lst = getattr(bpy.app.handlers, kind)
        while fn in lst:
            lst.remove(fn)
    if bpy.app.timers.is_registered(catch_up):
        bpy.app.timers.unregister(catch_up)
    for name, p in list(_PREVIEWS.items()):
        scene = bpy.data.scenes.get(name)
        if scene is not None:
            p.stop(scene)
    _PREVIEWS.clear()
