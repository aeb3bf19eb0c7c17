"""Issue 26: Settle Selected on 200 objects dropped onto a mesh ground, against Blender's own
way of doing it (a Rigid Body bake, then Apply Visual Transform), one process, same scene.

    .venv/bin/python bench/bench_settle.py [--bodies 200] [--time-limit 30] [--flat]

The scene: bench_mesh_ground's ground (a 60 x 60 quad grid, 7,200 triangles, 12 m across,
3 cm bumps, a 32 degree slope on one side; ``--flat``: the same grid flat at z = 0) and N
bodies alternating boxes and 16-point hulls (rocks), 1 kg, friction 0.5, on a 10 x 10 grid
1 m apart in layers 0.9 m apart, 0.5 m and more above the ground, randomly turned. Blender
objects, built the same way for both runs.

- ours: ``bpy.ops.hullabaloo.settle(onto='ACTIVE')`` with the ground the active object (a
  Mesh shape: it has no Hullabaloo settings and is not convex) and the bodies selected (no
  settings either: Convex Hull, 1 kg; friction is the default 0.5). It runs until the
  engine puts every body to sleep. A 2-body settle runs first, so compiling the engine's
  kernels (numba) is not timed; its time is printed apart.
- Blender: a Rigid Body World at its defaults (10 substeps, 10 iterations), ground PASSIVE
  Mesh, bodies ACTIVE Convex Hull, collision margin 0.001 m (bench_mesh_ground's choice),
  baked with ``ptcache.bake_all`` over as many frames (24 fps) as our settle simulated,
  then the last frame set and ``object.visual_transform_apply`` on the bodies: the resting
  transforms as their own (Blender's answer to "settle"). Deactivation off, its default.

Printed: CPU seconds (process_time) of each and the ratio ours / Blender; per engine the
bodies that ended off the ground's edge or through it (a vertex 0.1 m under it), and over
the others the deepest point under the ground (exact height field:
bench_mesh_ground._surface_depth) and the deepest body-body overlap (python-fcl on the true
hulls, when installed); Blender's fastest body vertex speed over the last frame (whether its
bodies were at rest at that time).
"""
import argparse
import math
import os
import sys
import time

import numpy as np

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
for p in (ROOT, BENCH):
    if p not in sys.path:
        sys.path.insert(0, p)

from bench_mesh_ground import (
    HALF,
    MARGIN_BLENDER,
    Body,
    _surface_depth,
    ground_height,
    ground_mesh,
    rock,
)
from bpy_scene import add_rigid_bodies, bake_rigid_world, rigid_body_world, start_bpy

from engine.core import quat

FPS = 24


class Ground:
    """bench_mesh_ground's bumpy ground with its slope, or (flat) the same 60 x 60 grid of
    7,200 triangles at z = 0."""

    def __init__(self, flat=False):
        self.flat = flat

    def mesh(self):
        v, t = ground_mesh()
        if self.flat:
            v = v.copy()
            v[:, 2] = 0.0
        return v, t

    def height(self, x, y):
        return 0.0 if self.flat else float(ground_height(x, y))

    def depth(self, p):
        """Depth of points (V, 3) under the surface along its normal (< 0 above)."""
        if self.flat:
            return -p[:, 2]
        h, nz = _surface_depth(p)
        return -h * nz


def bodies(n, ground, seed=26):
    """n bodies alternating box / rock on a 10 x 10 grid, layer after layer."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n):
        i, j, layer = k % 10, (k // 10) % 10, k // 100
        x, y = -4.5 + i + rng.uniform(-0.1, 0.1), -4.5 + j + rng.uniform(-0.1, 0.1)
        if k % 2 == 0:
            kind, data = "box", rng.uniform(0.12, 0.25, 3)
        else:
            kind, data = "hull", rock(rng, rng.uniform(0.2, 0.3))
        axis = rng.normal(size=3)
        q = quat.from_axis_angle(axis / np.linalg.norm(axis), rng.uniform(0, math.pi))
        z = ground.height(x, y) + 0.5 + 0.9 * layer
        out.append(Body(kind, data, np.array([x, y, z]), q))
    return out


def build(bpy, bl, ground_def):
    """An empty file with the ground and the bodies as mesh objects; (ground, bodies)."""
    from mathutils import Quaternion
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = FPS, 1.0
    col = scene.collection
    v, t = ground_def.mesh()
    me = bpy.data.meshes.new("ground")
    me.from_pydata([tuple(map(float, p)) for p in v], [], [tuple(map(int, f)) for f in t])
    me.update()
    ground = bpy.data.objects.new("A_ground", me)
    col.objects.link(ground)
    objs = []
    for k, b in enumerate(bl):
        m = bpy.data.meshes.new(f"body{k}")
        m.from_pydata([tuple(map(float, p)) for p in b.vertices()], [], b.faces())
        m.update()
        o = bpy.data.objects.new(f"B{k:03d}", m)
        col.objects.link(o)
        o.location = tuple(b.pos)
        o.rotation_mode = 'QUATERNION'
        o.rotation_quaternion = Quaternion(tuple(b.q))
        objs.append(o)
    bpy.context.view_layer.update()
    return ground, objs


def select(bpy, objs, active):
    for o in bpy.context.view_layer.objects:
        o.select_set(False)
    for o in objs + [active]:
        o.select_set(True)
    bpy.context.view_layer.objects.active = active


def run_ours(bpy, bl, ground_def, time_limit):
    """(CPU s, simulated s, summary, final world vertices per body)."""
    from hullabaloo.addon import settle
    ground, objs = build(bpy, bl, ground_def)
    select(bpy, objs, ground)
    t0 = time.process_time()
    res = bpy.ops.hullabaloo.settle(onto='ACTIVE', time_limit=time_limit)
    cpu = time.process_time() - t0
    assert res == {'FINISHED'}, res
    s = settle.LAST["summary"]
    return cpu, s["simulated_seconds"], s, world_vertices(bpy, objs)


def run_blender(bpy, bl, ground_def, seconds):
    """(bake CPU s, apply CPU s, frames, fastest vertex speed over the last frame m/s,
    final world vertices)."""
    ground, objs = build(bpy, bl, ground_def)
    scene = bpy.context.scene
    frames = max(2, math.ceil(seconds * FPS))
    last = frames + 1
    rigid_body_world(bpy, scene, last)
    add_rigid_bodies(bpy, [ground], 'PASSIVE')
    add_rigid_bodies(bpy, objs, 'ACTIVE')
    ground.rigid_body.collision_shape = 'MESH'
    for o in [ground] + objs:
        rb = o.rigid_body
        rb.use_margin = True
        rb.collision_margin = MARGIN_BLENDER
        rb.friction = 0.5
        rb.restitution = 0.0
    for o in objs:
        o.rigid_body.collision_shape = 'CONVEX_HULL'
        o.rigid_body.mass = 1.0
    scene.frame_set(1)
    bake = bake_rigid_world(bpy, scene, clock=time.process_time)
    scene.frame_set(last - 1)
    before = world_vertices(bpy, objs)
    t0 = time.process_time()
    scene.frame_set(last)
    select(bpy, objs, objs[0])
    with bpy.context.temp_override(selected_editable_objects=objs, selected_objects=objs,
                                   active_object=objs[0], object=objs[0]):
        assert bpy.ops.object.visual_transform_apply() == {'FINISHED'}
    apply = time.process_time() - t0
    after = world_vertices(bpy, objs)
    speed = max(float(np.linalg.norm(a - b, axis=1).max()) for a, b in zip(after, before)) * FPS
    return bake, apply, frames, speed, after


def world_vertices(bpy, objs):
    bpy.context.view_layer.update()
    out = []
    for o in objs:
        m = np.array(o.matrix_world, dtype=np.float64)
        v = np.array([tuple(p.co) for p in o.data.vertices], dtype=np.float64)
        out.append(v @ m[:3, :3].T + m[:3, 3])
    return out


def depths(verts, ground_def):
    """(bodies off the ground's edge, bodies through the ground (a vertex more than 0.1 m
    under it), deepest vertex under the ground of the others m, deepest body-body overlap m
    or None)."""
    ground, off, through = 0.0, 0, 0
    for v in verts:
        if np.abs(v[:, :2]).max() > HALF:
            off += 1
            continue
        d = float(np.max(ground_def.depth(v)))
        if d > 0.1:
            through += 1
            continue
        ground = max(ground, d)
    try:
        import fcl
        from scipy.spatial import ConvexHull
    except ImportError:
        return off, through, ground, None
    objs = []
    for v in verts:
        h = ConvexHull(v)
        faces = np.hstack([np.full((len(h.simplices), 1), 3), h.simplices]).ravel()
        objs.append(fcl.CollisionObject(fcl.Convex(v, len(h.simplices), faces),
                                        fcl.Transform()))
    centre = np.array([v.mean(axis=0) for v in verts])
    reach = np.array([np.linalg.norm(v - c, axis=1).max() for v, c in zip(verts, centre)])
    deepest = 0.0
    for i in range(len(verts)):
        for j in range(i + 1, len(verts)):
            if np.linalg.norm(centre[i] - centre[j]) > reach[i] + reach[j]:
                continue
            res = fcl.CollisionResult()
            fcl.collide(objs[i], objs[j], fcl.CollisionRequest(num_max_contacts=16,
                                                               enable_contact=True), res)
            deepest = max([deepest] + [c.penetration_depth for c in res.contacts])
    return off, through, ground, deepest


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bodies", type=int, default=200)
    ap.add_argument("--time-limit", type=float, default=30.0)
    ap.add_argument("--flat", action="store_true", help="a flat grid of the same triangles "
                    "instead of the bumpy ground with its slope")
    a = ap.parse_args()
    bpy = start_bpy()
    import hullabaloo_cli
    hullabaloo_cli.load_addon()
    gd = Ground(a.flat)
    bl = bodies(a.bodies, gd)
    t0 = time.process_time()
    run_ours(bpy, bl[:2], gd, 1.0)   # compile the kernels: not timed below
    warm = time.process_time() - t0
    print(f"{'flat' if a.flat else 'bumpy, sloped'} ground {len(gd.mesh()[1])} triangles, "
          f"{len(bl)} bodies ({sum(b.kind == 'box' for b in bl)} boxes, "
          f"{sum(b.kind == 'hull' for b in bl)} 16-point hulls); warm-up (2 bodies, kernels "
          f"compiled or loaded) {warm:.1f} s CPU")
    cpu, sim, s, ours_v = run_ours(bpy, bl, gd, a.time_limit)
    print(f"ours:    settle {cpu:7.2f} s CPU, {sim:.2f} s simulated ({s['steps']} steps), "
          f"{len(s['settled'])} at rest, {len(s['moving'])} still moving, "
          f"{len(s['fallen'])} fell off", flush=True)
    bake, apply, frames, speed, bl_v = run_blender(bpy, bl, gd, sim)
    print(f"Blender: bake    {bake:7.2f} s CPU ({frames} frames), apply {apply:.2f} s; fastest "
          f"vertex over the last frame {speed:.3f} m/s")
    print(f"ratio ours / Blender (bake + apply): {cpu / (bake + apply):.2f}")
    for name, verts in (("ours", ours_v), ("Blender", bl_v)):
        off, through, g, b = depths(verts, gd)
        bb = "n/a (no fcl)" if b is None else f"{1000 * b:.2f} mm"
        print(f"{name:>8}: {off} off the edge, {through} through the ground; the others: "
              f"deepest under the ground {1000 * g:.2f} mm, deepest body-body overlap {bb}")


if __name__ == "__main__":
    main()
