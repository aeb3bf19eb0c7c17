"""Our bake vs Blender's own Rigid Body bake + Bake To Keyframes, same scene, same process.

    .venv/bin/python bench/bench_bake_vs_blender.py [--configs 1000x250,200x500]
                                                    [--only ours|blender|keys]

Scene: N unit cubes in a loose grid (10 per row, slightly rotated), dropped on a passive
ground box; both engines use the same Blender Rigid Body settings (our settings are taken
with hullabaloo.import_rigid_body, shape Box for both).

Blender's side, as a user does it: bake the point cache (the simulation), then
Object > Rigid Body > Bake To Keyframes. Bake To Keyframes needs a 3D View area in its
context: in background mode there is no window, but the startup file's screens exist, so a
temp_override with a screen, a VIEW_3D area and its region satisfies it.
"From scratch" = point-cache bake + Bake To Keyframes.

Ours: bpy.ops.hullabaloo.bake() (read the scene, simulate, write keys), plus our key-writing
time alone (the add-on's summary). Prints times and ratios.
"""
import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import bpy
import numpy as np

import hullabaloo_cli


def build_scene(n, frames):
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frames
    scene.render.fps = 24
    mesh = bpy.data.meshes.new("cube")
    v = [(x, y, z) for z in (-0.5, 0.5) for y in (-0.5, 0.5) for x in (-0.5, 0.5)]
    f = [(0, 2, 3, 1), (4, 5, 7, 6), (0, 1, 5, 4), (2, 6, 7, 3), (0, 4, 6, 2), (1, 3, 7, 5)]
    mesh.from_pydata(v, [], f)
    ground_mesh = bpy.data.meshes.new("ground")
    ground_mesh.from_pydata([(x * 20, y * 20, z * 0.5 - 0.5) for x, y, z in v], [], f)
    ground = bpy.data.objects.new("Ground", ground_mesh)
    scene.collection.objects.link(ground)
    rng = np.random.default_rng(1)
    cubes = []
    for i in range(n):
        o = bpy.data.objects.new(f"Cube.{i:04d}", mesh)
        scene.collection.objects.link(o)
        gx, gy, gz = i % 10, (i // 10) % 10, i // 100
        o.location = (1.3 * (gx - 4.5), 1.3 * (gy - 4.5), 0.8 + 1.3 * gz)
        o.rotation_euler = tuple(rng.uniform(-0.2, 0.2, 3))
        cubes.append(o)
    # Blender Rigid Body on everything (one operator call per type, on the selection).
    view_layer = bpy.context.view_layer
    for o in scene.objects:
        o.select_set(False)
    ground.select_set(True)
    view_layer.objects.active = ground
    bpy.ops.rigidbody.objects_add(type='PASSIVE')
    ground.select_set(False)
    for o in cubes:
        o.select_set(True)
    view_layer.objects.active = cubes[0]
    bpy.ops.rigidbody.objects_add(type='ACTIVE')
    for o in scene.objects:
        o.rigid_body.collision_shape = 'BOX'
    rbw = scene.rigidbody_world
    rbw.point_cache.frame_start, rbw.point_cache.frame_end = 1, frames
    return scene, cubes


def view3d_override():
    screen = next(s for s in bpy.data.screens if any(a.type == 'VIEW_3D' for a in s.areas))
    area = next(a for a in screen.areas if a.type == 'VIEW_3D')
    region = next(r for r in area.regions if r.type == 'WINDOW')
    return dict(screen=screen, area=area, region=region)


def blender_bake(scene, cubes, frames):
    rbw = scene.rigidbody_world
    rbw.enabled = True
    t0 = time.perf_counter()
    with bpy.context.temp_override(point_cache=rbw.point_cache):
        bpy.ops.ptcache.bake(bake=True)
    t_sim = time.perf_counter() - t0
    for o in cubes:
        o.select_set(True)
    bpy.context.view_layer.objects.active = cubes[0]
    t0 = time.perf_counter()
    with bpy.context.temp_override(active_object=cubes[0], object=cubes[0],
                                   selected_objects=cubes, selected_editable_objects=cubes,
                                   **view3d_override()):
        bpy.ops.rigidbody.bake_to_keyframes(frame_start=1, frame_end=frames)
    t_keys = time.perf_counter() - t0
    return t_sim, t_keys


def our_bake(scene):
    assert bpy.ops.hullabaloo.import_rigid_body(all=True) == {'FINISHED'}
    t0 = time.perf_counter()
    assert bpy.ops.hullabaloo.bake() == {'FINISHED'}
    wall = time.perf_counter() - t0
    from hullabaloo.addon import ops
    return wall, ops.LAST["summary"]


def run(n, frames, only):
    print(f"\n== {n} cubes x {frames} frames ==", flush=True)
    res = {}
    if only in (None, "ours"):
        scene, cubes = build_scene(n, frames)
        wall, s = our_bake(scene)
        res["ours"] = wall
        print(f"ours:    total {wall:8.2f} s  (simulation {s['simulation_seconds']:.2f} s, "
              f"keys (poses to channels + writing) {s['write_seconds']:.3f} s for {s['objects']} "
              f"objects x {s['frames']} frames, scene refresh {s['refresh_seconds']:.2f} s)",
              flush=True)
        scene.frame_set(frames)
        z = np.array([o.matrix_world.translation.z for o in cubes])
        print(f"         final heights: min {z.min():.2f} m, max {z.max():.2f} m", flush=True)
    if only in (None, "blender"):
        scene, cubes = build_scene(n, frames)
        t_sim, t_keys = blender_bake(scene, cubes, frames)
        res["blender"] = t_sim + t_keys
        print(f"blender: total {t_sim + t_keys:8.2f} s  (point cache bake {t_sim:.2f} s, "
              f"Bake To Keyframes {t_keys:.2f} s)", flush=True)
    if len(res) == 2:
        print(f"ratio blender / ours: {res['blender'] / res['ours']:.2f}x "
              f"(target >= 4x)", flush=True)
    return res


def time_key_writing(n=1000, frames=250, repeats=3):
    """Our bulk keyframe writer alone: n objects x frames of location + quaternion keys
    (7 channels) into fresh actions, best of a few runs (the machine may be shared)."""
    from hullabaloo.addon import animation
    rng = np.random.default_rng(5)
    loc = rng.normal(size=(n, frames, 3))
    rot = rng.normal(size=(n, frames, 4))
    f = np.arange(1, frames + 1, dtype=np.float64)
    best = best_cpu = float("inf")
    for _ in range(repeats):
        bpy.ops.wm.read_homefile(use_empty=True)
        scene = bpy.context.scene
        objs = []
        for i in range(n):
            o = bpy.data.objects.new(f"E{i}", None)
            scene.collection.objects.link(o)
            o.rotation_mode = 'QUATERNION'
            objs.append(o)
        t0, c0 = time.perf_counter(), time.process_time()
        for o, l, r in zip(objs, loc, rot):
            animation.write_object_keys(o, f, l, r)
        best = min(best, time.perf_counter() - t0)
        best_cpu = min(best_cpu, time.process_time() - c0)
    print(f"keyframe writing alone: {n} objects x {frames} frames x 7 channels: "
          f"{best:.3f} s wall, {best_cpu:.3f} s CPU (best of {repeats}; target < 0.5 s; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)", flush=True)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--configs", default="1000x250,200x500")
    ap.add_argument("--only", choices=("ours", "blender", "keys"), default=None)
    args = ap.parse_args()
    hullabaloo_cli.load_addon()
    print(f"Blender {bpy.app.version_string}, numpy {np.__version__}")
    time_key_writing()
    if args.only == "keys":
        return
    for cfg in args.configs.split(","):
        n, frames = (int(x) for x in cfg.lower().split("x"))
        run(n, frames, args.only)


if __name__ == "__main__":
    main()
