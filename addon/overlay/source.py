"""Where the overlay's data for a frame comes from (the only part of the overlay that reads
the scene; geometry.py turns the result into pictures).

Three sources, best first:
1. the bake cache (addon/cache.py): the stored state of the frame (poses, velocities, centres
   of mass, sleeping) and, when the bake kept debug records, the engine's record of the step
   into that frame (contacts, impulses, AABBs);
2. a Debug Frame result (``debug_frame``): the scene re-simulated up to the current frame with
   the full engine record of the last step, for bakes that kept no records;
3. live: the objects' current poses (shapes, AABBs, inertia and the GJK/EPA/SAT queries of the
   selection still work; there are no contacts without a simulation).

The engine shapes come from the add-on's own scene reader (collect.SceneReader), built once
per bake / body set and cached: they are exactly the shapes the bake used.
"""
import dataclasses

import numpy as np

from ...engine import BodyKind, StepRecord
from ...engine.core import quat
from ...engine.shapes import mass as mass_mod
from .. import cache, collect, transforms
from . import geometry

_MODELS = {}   # scene_key -> (names tuple, SceneModel)
_DEBUG = {}    # scene_key -> dict(frame, names, state, record, model)
_COUNTER = {"depsgraph": 0}



def scene_key(scene):
    """Scenes of another file may share names (no load_post handler of our own is needed):
    key by name, the file and the scene's address."""
    import bpy
    return (scene.name, bpy.data.filepath, scene.as_pointer())


def debug_result(scene):
    return _DEBUG.get(scene_key(scene))


def clear():
    _MODELS.clear()
    _DEBUG.clear()


def _mass_inertia(bodies):
    """Masses (N,) and inertias about the centre of mass (N, 3, 3) in the shape frame, as the
    bake computes them (engine.shapes.mass); zero for static and kinematic bodies."""
    n = len(bodies)
    masses, inertias = np.zeros(n), np.zeros((n, 3, 3))
    for i, b in enumerate(bodies):  # once per bake, one call per body's shape
        if b.kind != "dynamic":
            continue
        p = b.params or {}
        try:
            if p.get("density") is not None:
                mp = mass_mod.mass_properties(b.shape, p["density"])
            else:
                mp = mass_mod.mass_properties_from_mass(b.shape, p.get("mass") or 1.0)
        except Exception:  # an exotic shape without mass properties: no axes for it
            continue
        masses[i], inertias[i] = mp.mass, mp.inertia
    return masses, inertias


def model_from_bodies(bodies):
    """SceneModel of collect.BodySpec bodies (shapes shared by identity, as in the engine)."""
    shapes, index, ids = [], [], {}
    for b in bodies:
        key = id(b.shape)
        if key not in ids:
            ids[key] = len(shapes)
            shapes.append(b.shape)
        index.append(ids[key])
    masses, inertias = _mass_inertia(bodies)
    return geometry.SceneModel([b.name for b in bodies], shapes, index,
                               [BodyKind.parse(b.kind) for b in bodies], masses, inertias)


def _depsgraph(context):
    try:
        return context.evaluated_depsgraph_get()
    except (AttributeError, RuntimeError):
        return None


def scene_model(scene, context, names=None):
    """The engine's view of the bodies named (default: every enabled object), cached per body
    list. Objects that vanished or fail to build are left out (their state rows are dropped by
    the caller through the returned names)."""
    if names is None:
        names = [o.name for o in scene.objects if o.hullabaloo.enabled]
    objs = [scene.objects.get(n) for n in names]
    objs = [o for o in objs if o is not None]
    # What the shapes depend on: a changed shape type, mesh or scale rebuilds the model.
    key = tuple((o.name, o.hullabaloo.shape, o.hullabaloo.body_type,
                 len(getattr(o.data, "vertices", ())), tuple(round(v, 6) for v in o.scale))
                for o in objs)
    got = _MODELS.get(scene_key(scene))
    if got is not None and got[0] == key:
        return got[1]
    if len(_MODELS) > 16:  # models of scenes from files opened earlier
        _MODELS.clear()
    reader = collect.SceneReader(scene, _depsgraph(context), objects=objs).read()
    model = model_from_bodies(reader.bodies)
    _MODELS[scene_key(scene)] = (key, model)
    return model


def _rows(model, names):
    """Row of each model body in a state of the given names."""
    where = {n: i for i, n in enumerate(names)}
    return np.array([where[n] for n in model.names], dtype=np.int64)


def _subset(state, rows, n_all):
    out = {}
    for k in ("pos", "q", "x", "vel", "sleeping"):
        v = state.get(k)
        if v is not None and len(v) == n_all:
            out[k] = np.asarray(v)[rows]
    return out


def _subset_record(rec, rows, n_all):
    """The record with per-body arrays (aabbs, sleeping) reduced to the model's rows; contact
    arrays are kept as they are (pairs index the bake's body order)."""
    if rec is None:
        return rec
    per_body = {k: np.asarray(getattr(rec, k))[rows] for k in ("aabbs", "sleeping")
                if len(getattr(rec, k)) == n_all}
    return dataclasses.replace(rec, **per_body)


def live_frame(scene, model):
    """Poses of the model's bodies from the objects' current world matrices."""
    mats = np.array([np.array(scene.objects[n].matrix_world, dtype=np.float64)
                     for n in model.names]).reshape(-1, 4, 4)
    if not len(mats):
        return {"pos": np.zeros((0, 3)), "q": np.zeros((0, 4))}
    R, _ = transforms.polar_decompose(mats[:, :3, :3])
    return {"pos": mats[:, :3, 3], "q": quat.from_matrix(R)}


def joint_model(scene, model, first_pos, first_q):
    """The joints of the scene (Object.hullabaloo_joint, enabled, both objects model bodies,
    one of them dynamic, in scene order as the bake adds them) for joint_geometry: anchors and
    frames in the bodies' origin frames from their poses at the bake's first frame."""
    from .. import joints as addon_joints
    rows = {n: i for i, n in enumerate(model.names)}
    picked = []
    for obj in scene.objects:
        js = getattr(obj, "hullabaloo_joint", None)
        if js is None or not js.enabled:
            continue
        o1, o2 = js.object1, js.object2
        if o1 is None or o2 is None or o1 == o2 or o1.name not in rows or o2.name not in rows:
            continue
        ia, ib = rows[o1.name], rows[o2.name]
        if model.kinds[ia] != BodyKind.DYNAMIC and model.kinds[ib] != BodyKind.DYNAMIC:
            continue
        fr = addon_joints.frame_of(obj)
        if fr is not None:
            picked.append((ia, ib, fr, addon_joints.joint_kwargs(js), js))
    n = len(picked)
    out = {"a": np.zeros(n, np.int64), "b": np.zeros(n, np.int64),
           "anchor_a": np.zeros((n, 3)), "anchor_b": np.zeros((n, 3)),
           "frame_a": np.zeros((n, 3, 3)), "ang_limits": np.full((n, 2), np.nan),
           "lin_limits": np.full((n, 2), np.nan), "spring": np.zeros(n, bool)}
    if not n:
        return _with_glue(out, scene, rows, first_pos, first_q)
    rot0 = quat.to_matrix(np.asarray(first_q, dtype=np.float64))
    for j, (ia, ib, (p, q), kw, _js) in enumerate(picked):
        r = quat.to_matrix(q)
        out["a"][j], out["b"][j] = ia, ib
        out["anchor_a"][j] = rot0[ia].T @ (p - first_pos[ia])
        out["anchor_b"][j] = rot0[ib].T @ (p - first_pos[ib])
        out["frame_a"][j] = rot0[ia].T @ r
        limits = kw["limits"] or {}
        if "ang_z" in limits:
            out["ang_limits"][j] = limits["ang_z"]
        if "lin_x" in limits:
            out["lin_limits"][j] = limits["lin_x"]
        out["spring"][j] = bool(kw["springs"])
    return _with_glue(out, scene, rows, first_pos, first_q)


def _with_glue(out, scene, rows, first_pos, first_q):
    """Append the glue bonds of fractured collections (addon.fracture), after the scene's
    joints as the bake adds them, as fixed joints (drawn piece centre - bond - piece centre,
    intact and broken in the joint colours)."""
    from .. import fracture as addon_fracture
    rot0 = quat.to_matrix(np.asarray(first_q, dtype=np.float64).reshape(-1, 4))
    a, b, pa, pb, fa = addon_fracture.bond_model(scene, rows, np.asarray(first_pos), rot0)
    if not len(a):
        return out
    m = len(a)
    add = {"a": a, "b": b, "anchor_a": pa, "anchor_b": pb, "frame_a": fa,
           "ang_limits": np.full((m, 2), np.nan), "lin_limits": np.full((m, 2), np.nan),
           "spring": np.zeros(m, bool)}
    return {k: np.concatenate((out[k], add[k])) for k in out}


def _joint_state(joints, state):
    """Broken flags and reaction forces of the stored state, when its joints are these."""
    broken, force = state.get("joint_broken"), state.get("joint_force")
    if broken is not None and len(broken) == len(joints["a"]):
        joints = dict(joints, broken=np.asarray(broken, bool), force=np.asarray(force))
    return joints


def frame_data(scene, context, frame=None):
    """(model, frame dict for geometry.frame_layers, source name) of a frame."""
    frame = scene.frame_current if frame is None else int(frame)
    c = cache.get(scene)
    dbg = _DEBUG.get(scene_key(scene))
    if c is not None and c.has_frame(frame):
        names = c.names
        rec = c.record(frame)
        src = "bake"
        if rec is None and dbg is not None and dbg["frame"] == frame and dbg["names"] == names:
            rec, src = dbg["record"], "debug frame"
        model = scene_model(scene, context, [n for n in names if n in scene.objects])
        rows = _rows(model, names)
        data = _subset(c.state(frame), rows, len(names))
        data["record"] = _subset_record(rec, rows, len(names))
        first = _subset(c.state(c.frame_start), rows, len(names))
        if "pos" in first:
            data["joints"] = _joint_state(joint_model(scene, model, first["pos"], first["q"]),
                                          c.state(frame))
        return model, data, src if rec is not None else "bake (no contacts)"
    if dbg is not None and dbg["frame"] == frame:
        model = dbg["model"]
        data = _subset(dbg["state"], np.arange(len(model)), len(model))
        data["record"] = dbg["record"]
        data["joints"] = dbg["state"].get("joints")
        return model, data, "debug frame"
    model = scene_model(scene, context)
    data = live_frame(scene, model)
    data["record"] = None
    data["joints"] = joint_model(scene, model, data["pos"], data["q"])
    return model, data, "live"


def selected_rows(context, model):
    objs = getattr(context, "selected_objects", None) or []
    names = {o.name for o in objs}
    return np.array([i for i, n in enumerate(model.names) if n in names], dtype=np.int64)


def debug_frame(scene, context, frame=None):
    """Re-simulate the scene from its first frame up to ``frame`` (default: the current one)
    without writing keys, and keep the last state with the engine's full record of the step
    into it. Returns a short summary string. Raises simulate.BakeError on a scene that cannot
    be simulated."""
    from ..simulate import BakeError, BakeJob
    frame = scene.frame_current if frame is None else int(frame)
    job = BakeJob(scene, _depsgraph(context), record=True)
    job.prepare()
    if frame <= job.first:
        raise BakeError(f"Frame {frame} is not after the simulation's first frame "
                        f"({job.first}): move to a later frame for a Debug Frame.")
    if frame > job.frame_end:
        raise BakeError(f"Frame {frame} is after the simulation's last frame "
                        f"({job.frame_end}).")
    job.frame_end = frame  # simulate only up to here (the job writes nothing)
    while not job.advance(64):
        pass
    rec = job.world.last_record or StepRecord()
    world = job.world
    state = {"pos": world.positions.copy(), "q": world.orientations.copy(),
             "x": world.centers_of_mass.copy(),
             "vel": np.concatenate((world.linear_velocities, world.angular_velocities), 1),
             "sleeping": world.sleeping.copy(),
             "joint_broken": world.joint_broken.copy(), "joint_force": world.joint_forces.copy()}
    model = model_from_bodies(job.bodies)
    first = job.states[0]
    state["joints"] = _joint_state(joint_model(scene, model, first["pos"], first["q"]), state)
    _DEBUG[scene_key(scene)] = dict(frame=frame, names=list(job.names), state=state,
                              record=rec,
                              model=model)
    return f"Debug Frame {frame}: {len(job.bodies)} bodies, {rec.contact_count} contact points"


def on_depsgraph_update(*_args):
    """Live poses change without a frame change: count updates so the handler rebuilds."""
    _COUNTER["depsgraph"] += 1
