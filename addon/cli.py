"""Headless baking: ``blender -b --command hullabaloo bake ...`` and plain Python with bpy.

    hullabaloo bake [SCENE.blend] [--out DIR] [--frames N] [--preview K] [--size WxH]
                    [--no-render] [--record]

Bakes the given .blend (or the file Blender already has open, or, with neither, a demo scene:
a tower and a pile of convex-hull rocks hit by a heavy ball), saves ``DIR/baked.blend``,
renders K frames with Workbench to ``DIR/preview_####.png`` plus ``DIR/preview_strip.png``,
and prints a summary (objects, frames, time, max penetration). Exit code 0 on success.
"""
import argparse
import math
import os
import sys
import time

import bpy
import numpy as np


def parser():
    ap = argparse.ArgumentParser(prog="hullabaloo", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    b = sub.add_parser("bake", help="bake a scene (or the demo scene) and render a preview")
    b.add_argument("blend", nargs="?", default=None, help=".blend file to bake (default: the "
                   "open file, else the built-in demo scene)")
    b.add_argument("--out", default="hullabaloo_out", help="output folder (default: "
                   "./hullabaloo_out)")
    b.add_argument("--frames", type=int, default=None, help="bake frames start..start+N-1 "
                   "(default: the scene's range; the demo uses 120)")
    b.add_argument("--preview", type=int, default=6, help="number of preview frames to render")
    b.add_argument("--size", default="320x180", help="preview size WxH (default 320x180)")
    b.add_argument("--no-render", action="store_true", help="skip the preview renders")
    b.add_argument("--no-record", dest="record", action="store_false",
                   help="do not keep per-frame contact records (then no max penetration)")
    sub.add_parser("demo", help="only build and save the demo scene").add_argument(
        "--out", default="hullabaloo_out")
    return ap


# -- demo scene -------------------------------------------------------------------------------

def _mesh_object(name, verts, faces, collection):
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata([tuple(v) for v in verts], [], [tuple(f) for f in faces])
    mesh.update()
    obj = bpy.data.objects.new(name, mesh)
    collection.objects.link(obj)
    return obj


def _box(name, size, location, collection):
    hx, hy, hz = (0.5 * s for s in size)
    v = [(sx * hx, sy * hy, sz * hz) for sz in (-1, 1) for sy in (-1, 1) for sx in (-1, 1)]
    f = [(0, 2, 3, 1), (4, 5, 7, 6), (0, 1, 5, 4), (2, 6, 7, 3), (0, 4, 6, 2), (1, 3, 7, 5)]
    obj = _mesh_object(name, v, f, collection)
    obj.location = location
    return obj


def _uv_sphere(name, radius, location, collection, seg=16, rings=8):
    verts = [(0, 0, radius)]
    for i in range(1, rings):
        th = math.pi * i / rings
        for j in range(seg):
            ph = 2 * math.pi * j / seg
            verts.append((radius * math.sin(th) * math.cos(ph), radius * math.sin(th) *
                          math.sin(ph), radius * math.cos(th)))
    verts.append((0, 0, -radius))
    faces = [(0, 1 + (j + 1) % seg, 1 + j) for j in range(seg)]
    for i in range(rings - 2):
        a, b = 1 + i * seg, 1 + (i + 1) * seg
        faces += [(a + j, a + (j + 1) % seg, b + (j + 1) % seg, b + j) for j in range(seg)]
    last = len(verts) - 1
    base = 1 + (rings - 2) * seg
    faces += [(last, base + j, base + (j + 1) % seg) for j in range(seg)]
    obj = _mesh_object(name, verts, faces, collection)
    obj.location = location
    for p in obj.data.polygons:
        p.use_smooth = True
    return obj


def _rock(name, rng, size, location, collection):
    """A random convex rock: the hull (bmesh's convex hull) of jittered points on a
    flattened ellipsoid, seeded so the demo is the same every run."""
    import bmesh
    n = 24
    d = rng.normal(size=(n, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    pts = d * size * rng.uniform(0.75, 1.0, size=(n, 1)) * np.array([1.0, 0.8, 0.6])
    bm = bmesh.new()
    for p in pts:
        bm.verts.new(tuple(p))
    bmesh.ops.convex_hull(bm, input=bm.verts)
    mesh = bpy.data.meshes.new(name)
    bm.to_mesh(mesh)
    bm.free()
    obj = bpy.data.objects.new(name, mesh)
    collection.objects.link(obj)
    obj.location = location
    obj.rotation_euler = tuple(rng.uniform(0, 2 * math.pi, size=3))
    return obj


def build_demo_scene(frames=120):
    """A tower of boxes and a pile of convex-hull rocks, hit by a heavy ball."""
    scene = bpy.context.scene
    for obj in list(scene.objects):  # start from an empty scene, keeping the add-on loaded
        bpy.data.objects.remove(obj)
    scene.frame_start, scene.frame_end = 1, frames
    scene.render.fps = 24
    col = scene.collection
    rng = np.random.default_rng(7)
    ground = _box("Ground", (30, 30, 1), (0, 0, -0.5), col)
    ground.hullabaloo.enabled = True
    ground.hullabaloo.body_type = 'PASSIVE'
    ground.hullabaloo.shape = 'BOX'
    # Tower: 8 levels of two 1.6 x 0.4 x 0.4 beams, alternating directions (a Jenga tower).
    h = 0.4
    for level in range(8):
        for k in (-1, 1):
            if level % 2 == 0:
                o = _box(f"Beam.{level}.{k}", (1.6, 0.4, h), (0, k * 0.5, h * (level + 0.5)), col)
            else:
                o = _box(f"Beam.{level}.{k}", (0.4, 1.6, h), (k * 0.5, 0, h * (level + 0.5)), col)
            o.hullabaloo.enabled = True
            o.hullabaloo.mass = 2.0
            o.hullabaloo.friction = 0.6
    # Rock pile beside the tower.
    for i in range(18):  # a loose heap: 3 x 3 columns, 2 layers, no initial overlaps
        gx, gy, gz = i % 3, (i // 3) % 3, i // 9
        loc = (3.0 + 0.9 * gx + rng.uniform(-0.05, 0.05), 0.2 + 0.9 * gy, 0.45 + 0.85 * gz)
        o = _rock(f"Rock.{i:02d}", rng, rng.uniform(0.25, 0.38), loc, col)
        o.hullabaloo.enabled = True
        o.hullabaloo.mass_mode = 'DENSITY'
        o.hullabaloo.density = 2500.0
        o.hullabaloo.friction = 0.8
    ball = _uv_sphere("Ball", 0.6, (-7.0, 0.3, 1.4), col)
    ball.hullabaloo.enabled = True
    ball.hullabaloo.shape = 'SPHERE'
    ball.hullabaloo.mass = 60.0  # heavy next to 2 kg beams, within what solvers handle well
    ball.hullabaloo.initial_linear_velocity = (9.0, 0.0, 1.5)
    ball.hullabaloo.restitution = 0.2
    # Camera and light for the preview.
    cam_data = bpy.data.cameras.new("Camera")
    cam = bpy.data.objects.new("Camera", cam_data)
    col.objects.link(cam)
    cam.location = (8.0, -14.0, 4.5)
    direction = np.array([-0.5, 0.5, 0.8]) - np.array(cam.location)
    cam.rotation_mode = 'QUATERNION'
    cam.rotation_quaternion = _look_at(direction)
    scene.camera = cam
    sun = bpy.data.objects.new("Sun", bpy.data.lights.new("Sun", 'SUN'))
    col.objects.link(sun)
    sun.rotation_euler = (0.6, 0.2, 0.8)
    return scene


def _look_at(direction):
    """Quaternion turning a camera (looking down -Z, +Y up) to look along direction."""
    from mathutils import Vector
    return Vector(tuple(direction)).to_track_quat('-Z', 'Y')


# -- preview ---------------------------------------------------------------------------------

def render_preview(scene, out_dir, count, size):
    """Render count evenly spaced frames with Workbench; return (paths, strip path)."""
    w, h = (int(v) for v in size.lower().split("x"))
    r = scene.render
    r.engine = 'BLENDER_WORKBENCH'
    r.resolution_x, r.resolution_y, r.resolution_percentage = w, h, 100
    r.image_settings.file_format = 'PNG'
    if scene.camera is None:
        return [], None
    frames = np.unique(np.linspace(scene.frame_start, scene.frame_end, max(1, count))
                       .round().astype(int))
    paths = []
    for f in frames:
        scene.frame_set(int(f))
        r.filepath = os.path.join(out_dir, f"preview_{f:04d}.png")
        bpy.ops.render.render(write_still=True)
        paths.append(r.filepath)
    strip = os.path.join(out_dir, "preview_strip.png")
    _strip(paths, strip, w, h)
    return paths, strip


def _strip(paths, out, w, h):
    """Put the rendered frames side by side in one PNG (pixels through numpy)."""
    tiles = []
    for p in paths:
        img = bpy.data.images.load(p)
        px = np.empty(img.size[0] * img.size[1] * 4, dtype=np.float32)
        img.pixels.foreach_get(px)
        tiles.append(px.reshape(img.size[1], img.size[0], 4))
        bpy.data.images.remove(img)
    if not tiles:
        return
    strip = np.concatenate(tiles, axis=1)
    img = bpy.data.images.new("hullabaloo_strip", strip.shape[1], strip.shape[0], alpha=True)
    img.pixels.foreach_set(strip.ravel())
    img.filepath_raw = out
    img.file_format = 'PNG'
    img.save()
    bpy.data.images.remove(img)


# -- commands --------------------------------------------------------------------------------

def bake_command(args):
    from . import ops
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    if args.blend:
        bpy.ops.wm.open_mainfile(filepath=os.path.abspath(args.blend))
        scene = bpy.context.scene
    elif bpy.data.filepath:
        scene = bpy.context.scene
    else:
        scene = build_demo_scene(args.frames or 120)
    if args.frames:
        scene.hullabaloo.use_scene_frame_range = True
        scene.frame_end = scene.frame_start + args.frames - 1
    scene.hullabaloo.keep_debug_records = bool(args.record)
    t0 = time.perf_counter()
    try:
        bpy.ops.hullabaloo.bake()
    except RuntimeError as exc:  # the operator's own ERROR report
        print(f"hullabaloo: bake failed: {str(exc).strip()}", file=sys.stderr)
        return 1
    wall = time.perf_counter() - t0
    s = ops.LAST["summary"]
    label = args.blend or bpy.data.filepath or "built-in demo scene"
    blend = os.path.join(out, "baked.blend")
    bpy.ops.wm.save_as_mainfile(filepath=blend, check_existing=False)
    paths, strip = ([], None)
    if not args.no_render:
        paths, strip = render_preview(scene, out, args.preview, args.size)
    pen = s["max_penetration"]
    print("Hullabaloo bake summary")
    print(f"  scene:            {scene.name} ({label})")
    print(f"  objects:          {s['objects']} keyed, {s['bodies']} bodies")
    print(f"  frames:           {s['frames']} ({s['frame_start']}-{s['frame_end']})")
    print(f"  time:             {wall:.2f} s (simulation {s['simulation_seconds']:.2f} s, "
          f"keys {s['write_seconds']:.2f} s)")
    print("  max penetration:  " + ("n/a (run with --record)" if pen is None else
                                    f"{1000 * pen:.2f} mm"))
    for p in s["problems"]:
        print(f"  note: {p}")
    print(f"  saved:            {blend}")
    if strip:
        print(f"  preview:          {strip} ({len(paths)} frames)")
    return 0


def run(argv):
    args = parser().parse_args(list(argv))
    if args.command == "bake":
        return bake_command(args)
    if args.command == "demo":
        build_demo_scene()
        os.makedirs(args.out, exist_ok=True)
        path = os.path.join(os.path.abspath(args.out), "demo.blend")
        bpy.ops.wm.save_as_mainfile(filepath=path, check_existing=False)
        print(path)
        return 0
    return 1


def blender_command(argv):
    """Entry point for ``blender -b --command hullabaloo ...`` (register_cli_command)."""
    try:
        return run(argv)
    except SystemExit as exc:  # argparse --help / usage errors
        return int(exc.code or 0)
