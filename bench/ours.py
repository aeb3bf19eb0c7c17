"""Our engine the way users run it: the installed Hullabaloo extension's bake operator in real
Blender (the bpy module), on objects built from a bench scene.

``run(scene_def, zip_path, profile=None)`` returns (result dict, positions, quaternions):
timings split as the add-on reports them (simulation = stepping frames, keys = writing every
key in bulk, the rest of the operator = reading the scene and building shapes), the key count,
peak memory, and the per-frame poses of the dynamic bodies read from the add-on's per-frame
state cache (the same poses the keys hold). Scene settings are the add-on's defaults
(automatic substeps = 240 Hz, i.e. 10 per frame at 24 fps; 1 solver iteration; sleeping;
continuous collision); body settings come from the scene (Blender's defaults).
"""
import sys
import time

import numpy as np
from bpy_scene import build_objects, key_count, maxrss_mb, start_bpy

MODULE = "bl_ext.user_default.hullabaloo"
SHAPES = {"box": "BOX", "hull": "CONVEX_HULL", "sphere": "SPHERE"}


def install(bpy, zip_path):
    """Install and enable the extension zip (as a user dropping it on Blender would)."""
    if MODULE not in bpy.context.preferences.addons:
        res = bpy.ops.extensions.package_install_files(filepath=zip_path, repo="user_default",
                                                       enable_on_install=True)
        if res != {'FINISHED'} or MODULE not in bpy.context.preferences.addons:
            raise RuntimeError(f"could not install {zip_path}: {res}")
    return sys.modules[MODULE]


def setup(bpy, s):
    """Objects with Hullabaloo settings; frame range 1..frames."""
    objs = build_objects(bpy, s, quaternion_mode=s.has_velocities)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, s.frames
    scene.frame_set(1)
    for i, obj in enumerate(objs):
        h = obj.hullabaloo
        h.enabled = True
        h.shape = SHAPES[s.shapes[s.shape_id[i]].kind]
        h.friction = s.friction[i]
        h.restitution = s.restitution[i]
        if s.kind[i] == 0:
            h.body_type = 'DYNAMIC'
            h.mass_mode = 'MASS'
            h.mass = s.mass[i]
            h.linear_damping = s.lin_damp[i]
            h.angular_damping = s.ang_damp[i]
            h.initial_linear_velocity = tuple(s.lin_vel[i])
            h.initial_angular_velocity = tuple(s.ang_vel[i])
        else:
            h.body_type = 'PASSIVE'
    return scene, objs


def run(s, zip_path, profile=None):
    bpy = start_bpy()
    pkg = install(bpy, zip_path)
    scene, objs = setup(bpy, s)
    rss0 = maxrss_mb()
    prof = None
    if profile:
        import cProfile
        prof = cProfile.Profile()
        prof.enable()
    t0 = time.perf_counter()
    res = bpy.ops.hullabaloo.bake()
    wall = time.perf_counter() - t0
    if prof:
        prof.disable()
        prof.dump_stats(profile)
    rss1 = maxrss_mb()
    if res != {'FINISHED'}:
        raise RuntimeError(f"hullabaloo.bake returned {res}: {pkg.addon.ops.LAST['problems']}")
    summ = pkg.addon.ops.LAST["summary"]
    dyn = [objs[i] for i in s.dynamic]
    cache = pkg.addon.cache.get(scene)
    where = {n: k for k, n in enumerate(cache.names)}
    rows = np.array([where[o.name] for o in dyn])
    pos = np.array([st["pos"][rows] for st in cache.states])
    quat = np.array([st["q"][rows] for st in cache.states])
    result = dict(
        sim_seconds=summ["simulation_seconds"],
        keys_seconds=summ["write_seconds"],
        setup_seconds=wall - summ["simulation_seconds"] - summ["write_seconds"],
        wall_seconds=wall,
        keys=key_count(dyn),
        rss_before_mb=rss0,
        rss_peak_mb=rss1,
        frames=len(pos),
        problems=summ["problems"],
    )
    return result, pos, quat
