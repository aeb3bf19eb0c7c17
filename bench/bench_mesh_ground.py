"""Issue 12: convex bodies on a static triangle-mesh ground, ours against Blender's own Rigid
Body (and pybullet), one process, the same scene.

    .venv/bin/python bench/bench_mesh_ground.py [--frames 120] [--bodies 8]
                                                [--engines ours,blender,pybullet]
                                                [--profile] [--sleeping]

The scene (what a synthetic-data generator's physics positioning does: drop objects on a
scanned or modelled floor and let them settle): a 60 x 60 quad grid (7,200 triangles) 12 m
across, gently bumpy everywhere (3 cm bumps) and rising on one side into a 32 degree slope
(steeper than friction 0.5 holds: bodies there slide down onto the bumpy flat). Bodies:
boxes and 16-point hulls (rocks), 1 kg, friction 0.5, dropped 0.3-0.6 m above the surface
with random tilts, half on the slope, half on the flat. 120 frames at 24 fps (5 s).

Engines, same process, CPU time (process_time) of the simulation only:
- ours: engine.World with the ground a static TriangleMesh, bodies Box / ConvexHull, at its
  defaults, sleeping OFF (Blender never deactivates by default, so both do the same work
  every frame; ``--sleeping`` turns ours on too and prints that as well).
- blender: Blender's Rigid Body through the bpy wheel: a Rigid Body World at its defaults
  (10 substeps per frame, 10 iterations), the ground PASSIVE with shape Mesh, the bodies
  ACTIVE with shape Convex Hull, collision margin 0.001 m on all (``use_margin``: what
  BlenderProc, the synthetic-data generator, sets; Blender's default 0.04 m margin makes
  hulls float visibly), baked with ``ptcache.bake_all``. Deactivation off (its default).
- pybullet: same shapes (a static GEOM_MESH triangle mesh, hulls as GEOM_MESH vertices),
  240 Hz, 10 iterations, sleeping disabled.

The narrowphase column is our CPU time inside engine.world.world.collide_bodies (the BVH query,
the convex-triangle contacts and their reduction per body), to tell it from the solver's.
``--profile`` prints a cProfile of our run (24 warm-up frames first).

Measured on the shared 2-core machine under load (one run each, 120 frames): before the
mesh narrowphase restructure (commit 0c6ff8c) ours 51 ms/frame of which 23 ms narrowphase;
after, ours 36 ms/frame of which 6.5-7.5 ms narrowphase; Blender 1.5 ms/frame, pybullet
1.3 ms/frame. Depth: ours 9.2 mm (a hull sliding off the slope at 4.4 m/s; 9.6 mm before),
Blender 3.7 mm, pybullet 6.1 mm. Issue 27 (the mesh narrowphase compiled, engine/collision/mesh_kernels.py;
same load, numba cache warm): ours 28.9 -> 17.7 ms/frame (7.8x -> 7.4x Blender, whose own
time moved 3.7 -> 2.4 ms under the load), narrowphase 12.8 -> 7.3 ms/frame, of which ~3 ms/frame
is loading the compiled kernels from the cache at the first step (the add-on's warm-up does
that before a bake); frames 24-120 alone: narrowphase 12.1 -> 2.8 ms/frame, ours 22.8 -> 12.9.
Issue 27 again (the mesh kernels without per-pair reference counts: the pair's steps written out
in one loop, the BVH walk, pairs and compaction in one kernel per mesh; bit-identical poses),
same process, load 3-8 on 2 cores: before ours 4.72 ms/frame against Blender's 2.78 (1.70x),
narrowphase 2.68; after, three runs, ours 3.35 / 3.05 / 3.27 against Blender's 3.44 / 3.45 /
2.50 (0.97x / 0.88x / 1.31x: Blender's bake runs after ours, so the load moves the ratio),
narrowphase 1.30 / 1.22 / 1.31; three later runs at load 0.4 (both engines slower on the host
then) 5.59 / 6.58 / 5.01 against 4.76 / 5.67 / 4.02 (1.17x / 1.16x / 1.25x), narrowphase 2.22 /
2.56 / 1.92; depth, rest and gap unchanged (10.08, 2.35, 0.99 mm). Of
ours, the narrowphase is now ~40 %; the solver's substeps and the world's per-pass Python
the rest.

Quality, on the true geometry by brute force (not by any engine's narrowphase):
- depth: deepest point of a body below the ground surface (hull vertices against the
  height field, exact on the triangles) or of a ground vertex inside a body (against the
  hull's planes), over every frame;
- rest: over the last second, the largest distance a body's vertex moved (resting jitter /
  creep; with the default 120 frames every body has stopped sliding by then, so this is what
  still moves at rest: e.g. Blender's boxes on the bumpy flat creep ~15 mm/s);
- gap: at the last frame, the mean over bodies of the lowest vertex's height above the
  surface (a body resting on its margin floats).
"""
import argparse
import cProfile
import math
import os
import pstats
import sys
import time

import numpy as np

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
for p in (ROOT, BENCH):
    if p not in sys.path:
        sys.path.insert(0, p)

from engine.core import quat
from engine.shapes.hull import ConvexHull
from engine.shapes.primitives import Box
from engine.shapes.trimesh import TriangleMesh
from engine.world.world import World

FPS = 24
CELLS = 60          # 60 x 60 quads = 7,200 triangles
HALF = 6.0          # ground spans [-6, 6]^2 m
SLOPE_DEG = 32.0    # steeper than atan(0.5) = 26.6 deg: friction 0.5 cannot hold a body
BUMP = 0.03         # m
MARGIN_BLENDER = 0.001


def ground_height(x, y):
    """Height of the ground surface: bumps plus a smooth ramp up towards -x."""
    s = math.tan(math.radians(SLOPE_DEG))
    ramp = s * 0.5 * (-x + np.sqrt(x * x + 0.25))
    return ramp + BUMP * np.sin(2 * np.pi * x / 1.5) * np.sin(2 * np.pi * y / 1.7)


def ground_mesh():
    """Vertices (61*61, 3), triangles (7200, 3) (CCW from above)."""
    g = np.linspace(-HALF, HALF, CELLS + 1)
    x, y = np.meshgrid(g, g, indexing="ij")
    v = np.stack((x, y, ground_height(x, y)), -1).reshape(-1, 3)
    i, j = np.meshgrid(np.arange(CELLS), np.arange(CELLS), indexing="ij")
    a = (i * (CELLS + 1) + j).reshape(-1)
    b, c, d = a + (CELLS + 1), a + (CELLS + 1) + 1, a + 1
    tris = np.concatenate((np.stack((a, b, c), 1), np.stack((a, c, d), 1)))
    return v, tris


class Body:
    """kind 'box' (half extents) or 'hull' (points centred on the centroid); pose."""

    def __init__(self, kind, data, pos, q):
        self.kind, self.data, self.pos, self.q = kind, np.asarray(data, float), pos, q

    def vertices(self):
        if self.kind == "box":
            s = np.array([[1 if i & 1 else -1, 1 if i & 2 else -1, 1 if i & 4 else -1]
                          for i in range(8)], dtype=float)
            return s * self.data
        return self.data

    def engine_shape(self):
        return Box(self.data) if self.kind == "box" else ConvexHull(self.data)

    def faces(self):
        if self.kind == "box":
            return [(0, 2, 3, 1), (4, 5, 7, 6), (0, 1, 5, 4), (2, 6, 7, 3), (0, 4, 6, 2),
                    (1, 3, 7, 5)]
        return [tuple(int(i) for i in f) for f in ConvexHull(self.data).faces]


def rock(rng, size):
    d = rng.normal(size=(16, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    pts = d * size * rng.uniform(0.8, 1.0, size=(16, 1)) * np.array([1.0, 0.8, 0.6])
    h = ConvexHull(pts)
    return h.vertices - h.centroid


def bodies(n=8, seed=5):
    """n bodies alternating box / rock, half over the slope (x < -1), half over the flat."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n):
        on_slope = k % 2 == 0
        x = rng.uniform(-4.0, -2.0) if on_slope else rng.uniform(1.5, 4.0)
        y = -4.0 + 8.0 * (k + 0.5) / n
        if k % 4 < 2:
            data = rng.uniform(0.12, 0.25, 3)
            kind = "box"
        else:
            data = rock(rng, rng.uniform(0.2, 0.3))
            kind = "hull"
        axis = rng.normal(size=3)
        q = quat.from_axis_angle(axis / np.linalg.norm(axis), rng.uniform(0, math.pi))
        z = float(ground_height(x, y)) + 0.35 + rng.uniform(0.3, 0.6)
        out.append(Body(kind, data, np.array([x, y, z]), q))
    return out


# -- ours ------------------------------------------------------------------------------------

def build_ours(bl, sleeping=False):
    w = World(sleeping=sleeping)
    v, t = ground_mesh()
    w.add_body(TriangleMesh(v, t), kind="static", friction=0.5)
    for b in bl:
        w.add_body(b.engine_shape(), position=b.pos, orientation=b.q, mass=1.0, friction=0.5,
                   linear_damping=0.04, angular_damping=0.1)
    return w


class NarrowphaseClock:
    """CPU time spent in the world's narrowphase (engine.world.world.collide_bodies: the BVH query,
    the mesh contacts and their reduction), to tell it from the solver's share."""

    def __init__(self):
        import engine.world.world as world_module
        self.module = world_module
        self.inner = world_module.collide_bodies
        self.cpu = 0.0

    def __enter__(self):
        def timed(*args, **kwargs):
            t0 = time.process_time()
            try:
                return self.inner(*args, **kwargs)
            finally:
                self.cpu += time.process_time() - t0
        self.module.collide_bodies = timed
        return self

    def __exit__(self, *exc):
        self.module.collide_bodies = self.inner


def run_ours(bl, frames, sleeping=False):
    """CPU s/frame of World.step, poses (F, N, 3), (F, N, 4), narrowphase CPU s/frame."""
    w = build_ours(bl, sleeping)
    dt = 1.0 / FPS
    cpu = 0.0
    pos = np.empty((frames, len(bl), 3))
    qq = np.empty((frames, len(bl), 4))
    with NarrowphaseClock() as clock:
        for f in range(frames):
            t0 = time.process_time()
            w.step(dt)
            cpu += time.process_time() - t0
            pos[f], qq[f] = w.positions[1:], w.orientations[1:]
    return cpu / frames, pos, qq, clock.cpu / frames


def profile_ours(bl, frames, warm=24, top=30):
    w = build_ours(bl)
    for _ in range(warm):
        w.step(1.0 / FPS)
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(frames - warm):
        w.step(1.0 / FPS)
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(top)
    pstats.Stats(prof).sort_stats("cumulative").print_stats(top)


# -- Blender's Rigid Body --------------------------------------------------------------------

def run_blender(bl, frames):
    from bpy_scene import add_rigid_bodies, bake_rigid_world, rigid_body_world, start_bpy
    bpy = start_bpy()
    from mathutils import Quaternion
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = FPS, 1.0
    col = scene.collection
    v, t = ground_mesh()
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
    rigid_body_world(bpy, scene, frames + 1)
    for sel, rb_type in (([ground], 'PASSIVE'), (objs, 'ACTIVE')):
        add_rigid_bodies(bpy, sel, rb_type)
    ground.rigid_body.collision_shape = 'MESH'
    for o in [ground] + objs:
        rb = o.rigid_body
        rb.use_margin = True
        rb.collision_margin = MARGIN_BLENDER
        rb.friction = 0.5
        rb.restitution = 0.0
    for o in objs:
        rb = o.rigid_body
        rb.collision_shape = 'CONVEX_HULL'
        rb.mass = 1.0
        rb.linear_damping = 0.04
        rb.angular_damping = 0.1
    scene.frame_set(1)
    cpu = bake_rigid_world(bpy, scene, clock=time.process_time)
    pos = np.empty((frames, len(bl), 3))
    qq = np.empty((frames, len(bl), 4))
    for f in range(frames):
        scene.frame_set(f + 2)
        for k, o in enumerate(objs):
            mw = np.array(o.matrix_world)
            pos[f, k] = mw[:3, 3]
            qq[f, k] = quat.from_matrix(mw[:3, :3])
    return cpu / frames, pos, qq, None


# -- pybullet --------------------------------------------------------------------------------

def run_pybullet(bl, frames):
    import pybullet as p
    cid = p.connect(p.DIRECT)
    p.setGravity(0, 0, -9.81, physicsClientId=cid)
    p.setPhysicsEngineParameter(fixedTimeStep=1.0 / FPS, numSubSteps=10,
                                numSolverIterations=10, physicsClientId=cid)
    v, t = ground_mesh()
    gs = p.createCollisionShape(p.GEOM_MESH, vertices=v.tolist(),
                                indices=t.reshape(-1).tolist(), physicsClientId=cid)
    g = p.createMultiBody(0.0, gs, physicsClientId=cid)
    p.changeDynamics(g, -1, lateralFriction=0.5, physicsClientId=cid)
    ids = []
    for b in bl:
        if b.kind == "box":
            s = p.createCollisionShape(p.GEOM_BOX, halfExtents=b.data.tolist(),
                                       physicsClientId=cid)
        else:
            s = p.createCollisionShape(p.GEOM_MESH, vertices=b.data.tolist(),
                                       physicsClientId=cid)
        w_, x_, y_, z_ = b.q
        i = p.createMultiBody(1.0, s, basePosition=b.pos.tolist(),
                              baseOrientation=[x_, y_, z_, w_], useMaximalCoordinates=True,
                              physicsClientId=cid)
        p.changeDynamics(i, -1, lateralFriction=0.5, linearDamping=0.04, angularDamping=0.1,
                         activationState=p.ACTIVATION_STATE_DISABLE_SLEEPING,
                         physicsClientId=cid)
        ids.append(i)
    pos = np.empty((frames, len(bl), 3))
    qq = np.empty((frames, len(bl), 4))
    cpu = 0.0
    for f in range(frames):
        t0 = time.process_time()
        p.stepSimulation(physicsClientId=cid)
        cpu += time.process_time() - t0
        for k, i in enumerate(ids):
            x, r = p.getBasePositionAndOrientation(i, physicsClientId=cid)
            pos[f, k], qq[f, k] = x, (r[3], r[0], r[1], r[2])
    p.disconnect(cid)
    return cpu / frames, pos, qq, None


# -- quality on the true geometry ------------------------------------------------------------

def _surface_depth(p):
    """Signed height of points p (..., 3) above the exact triangle surface (vertical), and
    the local unit normal's z (so depth along the normal = vertical * nz)."""
    h = 2 * HALF / CELLS
    v, _ = ground_mesh()
    z = v[:, 2].reshape(CELLS + 1, CELLS + 1)
    fi = np.clip((p[..., 0] + HALF) / h, 0, CELLS - 1e-9)
    fj = np.clip((p[..., 1] + HALF) / h, 0, CELLS - 1e-9)
    i, j = fi.astype(int), fj.astype(int)
    u, w = fi - i, fj - j
    za, zb, zc, zd = z[i, j], z[i + 1, j], z[i + 1, j + 1], z[i, j + 1]
    # Triangles (a, b, c) where u >= w and (a, c, d) where u < w (the split a-c).
    lower = u >= w
    gx = np.where(lower, zb - za, zc - zd) / h
    gy = np.where(lower, zc - zb, zd - za) / h
    zs = za + gx * u * h + gy * w * h
    nz = 1.0 / np.sqrt(1.0 + gx * gx + gy * gy)
    return p[..., 2] - zs, nz


def quality(bl, pos, qq):
    """(deepest penetration m, resting motion over the last second m, mean rest gap m)."""
    v_ground, _ = ground_mesh()
    deepest = 0.0
    frames = len(pos)
    world_pts = []
    for k, b in enumerate(bl):
        vl = b.vertices()
        r = quat.to_matrix(qq[:, k])                                  # (F, 3, 3)
        wp = np.einsum("fij,vj->fvi", r, vl) + pos[:, k, None]       # (F, V, 3)
        world_pts.append(wp)
        hgt, nz = _surface_depth(wp)
        deepest = max(deepest, float(np.max(-hgt * nz)))
        # Ground vertices inside the body: depth against the hull's planes.
        planes = ConvexHull(vl).planes if b.kind == "hull" else Box(b.data).planes
        rad = np.linalg.norm(vl, axis=1).max()
        for f in range(frames):
            near = np.linalg.norm(v_ground - pos[f, k], axis=1) < rad
            if not near.any():
                continue
            loc = (v_ground[near] - pos[f, k]) @ r[f]
            d = loc @ planes[:, :3].T - planes[:, 3]
            inside = -d.max(axis=1)
            deepest = max(deepest, float(inside.max()))
    last = min(FPS, frames - 1)
    rest = max(float(np.linalg.norm(wp[-1] - wp[-1 - last:], axis=-1).max()) for wp in world_pts)
    gap = float(np.mean([(_surface_depth(wp[-1])[0] * _surface_depth(wp[-1])[1]).min()
                         for wp in world_pts]))
    return deepest, rest, gap


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--frames", type=int, default=120)
    ap.add_argument("--bodies", type=int, default=8)
    ap.add_argument("--engines", default="ours,blender,pybullet")
    ap.add_argument("--sleeping", action="store_true", help="also run ours with sleeping on")
    ap.add_argument("--profile", action="store_true", help="cProfile ours and stop")
    a = ap.parse_args()
    bl = bodies(a.bodies)
    if a.profile:
        profile_ours(bl, a.frames)
        return
    v, t = ground_mesh()
    print(f"ground {len(t)} triangles, {len(bl)} bodies "
          f"({sum(b.kind == 'box' for b in bl)} boxes, {sum(b.kind == 'hull' for b in bl)} "
          f"16-point hulls), {a.frames} frames at {FPS} fps")
    runs = []
    for name in a.engines.split(","):
        if name == "ours":
            # The kernels load (or compile) at their first call, as the add-on's warm-up
            # does before a bake: not part of the time per frame.
            from engine.world.warmup import warm_up
            print(f"warm-up (kernels compiled or loaded, untimed): {warm_up():.2f} s")
            runs.append(("ours (sleeping off)", *run_ours(bl, a.frames)))
            if a.sleeping:
                runs.append(("ours (sleeping on)", *run_ours(bl, a.frames, sleeping=True)))
        elif name == "blender":
            runs.append(("Blender Rigid Body", *run_blender(bl, a.frames)))
        elif name == "pybullet":
            try:
                import pybullet  # noqa: F401
            except ImportError:
                print("pybullet is not installed in this environment: skipped")
                continue
            runs.append(("pybullet", *run_pybullet(bl, a.frames)))
        else:
            raise SystemExit(f"unknown engine {name!r}")
    ref = next((r[1] for r in runs if r[0].startswith("Blender")), None)
    print(f"{'engine':>22} {'CPU ms/frame':>12} {'x Blender':>9} {'narrowphase':>11} "
          f"{'depth mm':>9} {'rest mm':>8} {'gap mm':>7}")
    for name, ms, pos, qq, narrow in runs:
        d, rest, gap = quality(bl, pos, qq)
        ratio = f"{ms / ref:9.2f}" if ref else f"{'-':>9}"
        nar = f"{1000 * narrow:11.2f}" if narrow is not None else f"{'-':>11}"
        print(f"{name:>22} {1000 * ms:12.2f} {ratio} {nar} {1000 * d:9.2f} {1000 * rest:8.2f} "
              f"{1000 * gap:7.2f}", flush=True)
    print("narrowphase: CPU ms/frame inside engine.world.world.collide_bodies (BVH query, mesh "
          "contacts, reduction); the rest of ours is the solver and integration")


if __name__ == "__main__":
    main()
