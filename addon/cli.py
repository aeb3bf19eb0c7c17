"""Headless baking: ``blender -b --command hullabaloo bake ...`` and plain Python with bpy.

    hullabaloo bake [SCENE.blend] [--out DIR] [--frames N] [--frame-start S] [--frame-end E]
                    [--set PATH=VALUE ...] [--seed K [--jitter M]] [--preview K] [--size WxH]
                    [--no-render] [--no-record] [--from-frame F] [--import-rigid-body]
    hullabaloo wedge SCENE.blend --out DIR --vary PATH=V1,V2,... [--seeds K] [--workers N]
                    [every bake option]   (see addon/cli_wedge.py)
    hullabaloo preview BAKED.blend --out DIR [--preview K] [--size WxH] [--label TEXT]
    hullabaloo settle SCENE.blend --objects NAME ... [--onto NAME]   (see addon/cli_settle.py)

Bakes the given .blend (or the file Blender already has open, or, with neither, a demo scene:
a tower and a pile of convex-hull rocks hit by a heavy ball) after applying the --set
overrides (addon/overrides.py), the frame range and the --seed start-pose jitter
(with --import-rigid-body, first the menu's Import Blender Rigid Body on every object)
(addon/jitter.py); saves ``DIR/baked.blend`` (its re-bake cache beside it, relative path),
writes ``DIR/summary.json`` (always; addon/summary.py), renders K frames with Workbench to
``DIR/preview_####.png`` plus ``DIR/preview_strip.png`` and the last frame to
``DIR/thumbnail.png``, and prints a summary. Exit code 0 on success, 1 when the bake fails,
2 for bad options.
"""
import argparse
import math
import os
import sys
import time

import bpy
import numpy as np

from . import blend_file


def add_bake_options(p, wedge=False):
    """The options of ``bake``; ``wedge`` takes them all and passes them to every variant."""
    p.add_argument("--out", required=wedge, default=None if wedge else "hullabaloo_out",
                   help="output folder" + ("" if wedge else " (default: ./hullabaloo_out)"))
    p.add_argument("--frames", type=int, default=None, help="bake frames start..start+N-1 "
                   "(default: the scene's range; the demo uses 120)")
    p.add_argument("--frame-start", type=int, default=None, help="first frame of the bake")
    p.add_argument("--frame-end", type=int, default=None, help="last frame of the bake")
    p.add_argument("--set", action="append", default=[], metavar="PATH=VALUE",
                   help="override a setting before baking, e.g. "
                   "'Ball.hullabaloo.initial_linear_velocity=(12,0,0)' or "
                   "'Scene.hullabaloo.substeps=8' (repeatable, applied in order)")
    p.add_argument("--seed", type=int, default=None, help="perturb the dynamic bodies' start "
                   "poses reproducibly with this seed (see --jitter)")
    p.add_argument("--jitter", type=float, default=0.005, help="with --seed: at most this many "
                   "metres of start-pose perturbation (and a matching small angle); "
                   "default 0.005")
    p.add_argument("--preview", type=int, default=0 if wedge else 6,
                   help="number of preview frames to render (besides the thumbnail)")
    p.add_argument("--size", default="320x180", help="preview size WxH (default 320x180)")
    p.add_argument("--no-render", action="store_true", help="skip the preview renders")
    p.add_argument("--no-record", dest="record", action="store_false",
                   help="do not keep per-frame contact records (then no max penetration)")
    p.add_argument("--import-rigid-body", action="store_true",
                   help="first copy Blender's Rigid Body settings and constraints to "
                   "Hullabaloo, as Object > Hullabaloo > Import Blender Rigid Body does for "
                   "every object (for files set up with Blender's Rigid Body only)")


def common_bake_args(ns):
    """The bake options of a parsed namespace as argv words (for the wedge's variants)."""
    out = ["--import-rigid-body"] if ns.import_rigid_body else []
    for flag in ("frames", "frame_start", "frame_end"):
        v = getattr(ns, flag)
        if v is not None:
            out += ["--" + flag.replace("_", "-"), str(v)]
    for s in ns.set:
        out += ["--set", s]
    if ns.seed is not None:
        out += ["--seed", str(ns.seed)]
    out += ["--jitter", repr(float(ns.jitter)), "--preview", str(ns.preview), "--size", ns.size]
    if ns.no_render:
        out.append("--no-render")
    if not ns.record:
        out.append("--no-record")
    return out


def parser():
    from . import cli_wedge
    ap = argparse.ArgumentParser(prog="hullabaloo", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    b = sub.add_parser("bake", help="bake a scene (or the demo scene) and render a preview")
    b.add_argument("blend", nargs="?", default=None, help=".blend file to bake (default: the "
                   "open file, else the built-in demo scene)")
    add_bake_options(b)
    b.add_argument("--from-frame", type=int, default=None, help="re-bake from this frame on, "
                   "continuing from the simulation state stored with the file")
    b.add_argument("--label", default="", help="text stamped on the thumbnail")
    pv = sub.add_parser("preview", help="render the preview frames and thumbnail of a baked "
                        ".blend (the farm's render task)")
    pv.add_argument("blend")
    pv.add_argument("--out", required=True)
    pv.add_argument("--preview", type=int, default=0)
    pv.add_argument("--size", default="320x180")
    pv.add_argument("--label", default="")
    cli_wedge.add_parser(sub, add_bake_options)
    _add_settle_parser(sub)
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

class UsageError(Exception):
    """Bad command-line input (exit code 2), reported in one line."""


def _open_scene(args):
    if args.blend:
        path = os.path.abspath(args.blend)
        try:
            note = blend_file.open_blend(path)
        except blend_file.OpenError as exc:
            raise UsageError(str(exc)) from None
        if note:
            print(f"hullabaloo: note: {note}", file=sys.stderr)
        return bpy.context.scene, path
    if bpy.data.filepath:
        return bpy.context.scene, bpy.data.filepath
    return build_demo_scene(args.frames or 120), "built-in demo scene"


def _set_frame_range(scene, args):
    """--frame-start/--frame-end/--frames on whichever range the bake uses."""
    if args.frames is not None and args.frame_end is not None:
        raise UsageError("give --frames or --frame-end, not both")
    if args.frames is not None and args.frames < 2:
        raise UsageError(f"--frames {args.frames}: bake at least 2 frames")
    s = scene.hullabaloo
    use_scene = s.use_scene_frame_range
    start = args.frame_start if args.frame_start is not None else \
        (scene.frame_start if use_scene else s.frame_start)
    end = args.frame_end if args.frame_end is not None else \
        (scene.frame_end if use_scene else s.frame_end)
    if args.frames is not None:
        end = start + args.frames - 1
    if use_scene:
        scene.frame_start, scene.frame_end = start, end  # order: end may be < old start
        scene.frame_start, scene.frame_end = start, end
    else:
        s.frame_start, s.frame_end = start, end


def import_rigid_body(scene):
    """--import-rigid-body: the menu's Import Blender Rigid Body on every object of the
    scene (its report lines are printed by Blender). Returns what summary.json records."""
    from . import ops, rb_import
    bodies, constraints = rb_import.not_imported(scene)
    if not bodies and not constraints:
        print("hullabaloo: --import-rigid-body: no Blender Rigid Body or constraint to "
              "import")
        return {"bodies": 0, "constraints": 0}
    try:
        bpy.ops.hullabaloo.import_rigid_body(all=True)
    except RuntimeError as exc:
        raise UsageError(f"--import-rigid-body: {str(exc).strip()}") from None
    return {"bodies": len(bodies), "constraints": len(constraints),
            "general": list(ops.LAST_IMPORT.get("general", []))}


def apply_bake_options(scene, args):
    """--import-rigid-body, --set, the frame range, then --seed/--jitter (at the first
    frame); returns the settings dict recorded in summary.json."""
    from . import jitter, overrides, simulate
    imported = import_rigid_body(scene) if args.import_rigid_body else None
    try:
        pairs = [overrides.split_assignment(a) for a in args.set]
        applied = overrides.apply(pairs, scene, bpy.data.objects)
    except overrides.OverrideError as exc:
        raise UsageError(f"--set {exc}") from None
    _set_frame_range(scene, args)
    settings = {"set": list(args.set), "applied": applied, "seed": args.seed,
                "jitter": float(args.jitter) if args.seed is not None else 0.0,
                "jittered": [], "warnings": []}
    if imported is not None:
        settings["import_rigid_body"] = imported
    if args.seed is not None:
        if not 0 <= args.jitter <= 1:
            raise UsageError(f"--jitter {args.jitter}: give metres between 0 and 1")
        scene.frame_set(simulate.frame_range(scene)[0])
        settings["jittered"], settings["warnings"] = jitter.apply(scene, args.seed, args.jitter)
    return settings


def _render(scene, out, args, label):
    from . import contact_sheet, simulate
    paths, strip = [], None
    if args.preview > 0:
        paths, strip = render_preview(scene, out, args.preview, args.size)
    thumb = contact_sheet.render_thumbnail(scene, out, args.size,
                                           simulate.frame_range(scene)[1], label)
    return paths, strip, thumb


def bake_command(args):
    from . import contact_sheet, ops, summary
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    stale = os.path.join(out, "summary.json")
    if os.path.exists(stale):
        os.remove(stale)
    settings = {"set": list(args.set), "seed": args.seed}
    t_start = time.perf_counter()
    source = args.blend or bpy.data.filepath or "built-in demo scene"
    try:
        contact_sheet.parse_size(args.size)
        scene, source = _open_scene(args)
        t_open = time.perf_counter()
        settings = apply_bake_options(scene, args)
    except (UsageError, ValueError) as exc:
        print(f"hullabaloo: {exc}", file=sys.stderr)
        summary.write(summary.failure(exc, settings, source), out)
        return 2
    scene.hullabaloo.keep_debug_records = bool(args.record)
    t0 = time.perf_counter()
    try:
        if args.from_frame is not None:
            scene.frame_set(args.from_frame)
            bpy.ops.hullabaloo.rebake_from_frame()
        else:
            bpy.ops.hullabaloo.bake()
    except RuntimeError as exc:  # the operator's own ERROR report (or its poll message)
        msg = str(exc).strip().removeprefix("Error: ").strip()
        print(f"hullabaloo: bake failed: {msg}", file=sys.stderr)
        summary.write(summary.failure(f"bake failed: {msg}", settings, source), out)
        return 1
    wall = time.perf_counter() - t0
    s = ops.LAST["summary"]
    blend = os.path.join(out, "baked.blend")
    t1 = time.perf_counter()
    bpy.ops.wm.save_as_mainfile(filepath=blend, check_existing=False)
    t2 = time.perf_counter()
    final = summary.final_poses(scene, s["frame_end"])
    paths, strip, thumb = [], None, None
    t3 = time.perf_counter()
    if not args.no_render:
        paths, strip, thumb = _render(scene, out, args, args.label)
    t4 = time.perf_counter()
    engine = ops.LAST["engine"] or {}
    phases = {"prepare_engine": engine.get("prepare_seconds", 0.0),   # compiling, first bake
              "simulate": s["simulation_seconds"], "write_keys": s["write_seconds"],
              "refresh": s["refresh_seconds"]}
    seconds = {"load": t_open - t_start, "setup": t0 - t_open,
               "prepare": max(0.0, wall - sum(phases.values())), **phases,
               "save": t2 - t1, "render": t4 - t3, "total": t4 - t_start}
    data = summary.build(s, seconds, final, settings, source, scene.name)
    spath = summary.write(data, out)
    _print_summary(scene, source, s, wall, blend, spath, paths, strip, thumb, engine)
    return 0


def _print_summary(scene, label, s, wall, blend, spath, paths, strip, thumb, engine):
    pen = s["max_penetration"]
    print("Hullabaloo bake summary")
    print(f"  scene:            {scene.name} ({label})")
    print(f"  objects:          {s['objects']} keyed, {s['bodies']} bodies")
    print(f"  frames:           {s['frames']} ({s['frame_start']}-{s['frame_end']})")
    print(f"  time:             {wall:.2f} s (simulation {s['simulation_seconds']:.2f} s, "
          f"keys {s['write_seconds']:.2f} s)")
    print("  max penetration:  " + ("n/a (run with --record)" if pen is None else
                                    f"{1000 * pen:.2f} mm"))
    if engine:
        print(f"  engine:           {engine['describe']}" +
              (f" (prepared in {engine['prepare_seconds']:.2f} s)"
               if engine["prepare_seconds"] else ""))
    for p in s["problems"]:
        print(f"  note: {p}")
    print(f"  saved:            {blend}")
    print(f"  summary:          {spath}")
    if strip:
        print(f"  preview:          {strip} ({len(paths)} frames)")
    if thumb:
        print(f"  thumbnail:        {thumb}")


def preview_command(args):
    """Render the previews and the thumbnail of an already baked file (no bake)."""
    from . import contact_sheet
    try:
        contact_sheet.parse_size(args.size)
        scene, _ = _open_scene(args)
    except (UsageError, ValueError) as exc:
        print(f"hullabaloo: {exc}", file=sys.stderr)
        return 2
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    _, strip, thumb = _render(scene, out, args, args.label)
    for p in ([strip] if strip else []) + ([thumb] if thumb else []):
        print(p)
    return 0


def _add_settle_parser(sub):
    from . import cli_settle
    cli_settle.add_parser(sub)


def _settle_command(args):
    from . import cli_settle
    return cli_settle.settle_command(args)


def run(argv):
    from . import cli_wedge
    args = parser().parse_args(list(argv))
    if args.command == "bake":
        return bake_command(args)
    if args.command == "preview":
        return preview_command(args)
    if args.command == "wedge":
        return cli_wedge.wedge_command(args)
    if args.command == "settle":
        return _settle_command(args)
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
