"""Issue 12: our time per frame on everyday scenes against pybullet, same process, same scene.

    .venv/bin/python bench/bench_speed.py [--scenes cubes27,cubes216,cubes1000,rocks125]
                                          [--frames 72] [--calls] [--profile SCENE]
                                          [--repeat 3] [--report docs/benchmarks/speed.md]
    HB_ENGINE_ROOT=/path/to/an/exported/commit .venv/bin/python bench/bench_speed.py ...
                                          # measure another commit's engine (before/after)

Scenes (bench/scenes.py data, so both engines build the same bodies): ``cubesN`` are N unit
cubes thrown into a heap (random tilts, 1-3 m/s, up to 6 rad/s: they tumble the whole run);
``rocks125`` is the 125-rock pile (16-point hulls); ``balls216`` the cubes' pen with 216
balls of 1 m diameter (not in the default list). 72 frames at 24 fps, sleeping off in both
engines, so both do the same work every frame.

pybullet runs at Blender's settings (240 Hz: 10 substeps per frame, 10 iterations); ours at its
defaults (WorldSettings()) with sleeping off. Times are CPU seconds (process_time) of the step
calls only. ``--calls`` also counts the numpy / builtin C calls of one World.step (the cost the
issue is about). Penetration is measured on the true shapes by an independent library (fcl's
GJK/EPA on the same convex shapes) every frame, for both engines, over all touching pairs plus
the ground; the deepest over the run is printed.
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
ENGINE_ROOT = os.environ.get("HB_ENGINE_ROOT", ROOT)
sys.path.insert(0, ENGINE_ROOT)  # the engine measured (scenes.py imports it too)

import scenes
from scenes import STATIC, Scene, ShapeSpec, grid_positions, random_tilts

from engine.core import quat
from engine.world.world import World


def tumbling_cubes(n, frames=72, seed=7, kind="cubes"):
    """n unit cubes (1 kg) in a grid 1.5 m apart, random tilts, thrown with 1-3 m/s sideways
    and up to 6 rad/s of spin into a walled pen (static walls 2 m high, 0.33 m clear of the
    grid): a heap that keeps tumbling and piling up for the 3 s. kind="balls": the same with
    balls of 1 m diameter (a ball pit that keeps rolling)."""
    s = Scene(f"{kind}{n}", f"{n} tumbling {kind}", frames)
    rng = np.random.default_rng(seed)
    layers = min(10, max(1, round(n ** (1 / 3))))
    pos, side = grid_positions(n, 1.5, layers, 1.2)
    scenes._ground(s, half=max(20.0, side * 1.5))
    half = (side - 1) * 0.75 + 1.2  # clear of the grid's tilted cubes (0.87 m half-diagonal)
    wall_x = s.shape(ShapeSpec("box", (0.25, half + 0.5, 1.0)))
    wall_y = s.shape(ShapeSpec("box", (half + 0.5, 0.25, 1.0)))
    for sgn in (-1.0, 1.0):
        s.add(wall_x, (sgn * (half + 0.25), 0.0, 1.0), kind=STATIC)
        s.add(wall_y, (0.0, sgn * (half + 0.25), 1.0), kind=STATIC)
    cube = s.shape(ShapeSpec("box", (0.5, 0.5, 0.5)) if kind == "cubes"
                   else ShapeSpec("sphere", radius=0.5))
    q = random_tilts(rng, n, math.pi)
    heading = rng.uniform(0, 2 * math.pi, n)
    speed = rng.uniform(1.0, 3.0, n)
    v = np.stack((speed * np.cos(heading), speed * np.sin(heading), rng.uniform(-1, 1, n)), 1)
    # Thrown towards the middle a little, so the heap stays a heap.
    v[:, :2] -= 0.3 * pos[:, :2]
    w = rng.uniform(-6.0, 6.0, (n, 3))
    for i in range(n):
        s.add(cube, pos[i], q[i], v=v[i], w=w[i])
    return s.finish()


def rocks(n=125, frames=72):
    return scenes.hull_pile(n=n, frames=frames, seed=3)


SCENES = {"cubes27": lambda f: tumbling_cubes(27, f), "cubes216": lambda f: tumbling_cubes(216, f),
          "cubes1000": lambda f: tumbling_cubes(1000, f), "rocks125": lambda f: rocks(125, f),
          "balls216": lambda f: tumbling_cubes(216, f, kind="balls")}


# -- ours ----------------------------------------------------------------------------------------

def build_ours(s, **settings):
    w = World(sleeping=False, **settings)
    shapes = [spec.engine_shape() for spec in s.shapes]
    for i in range(s.body_count):
        kind = "static" if s.kind[i] == STATIC else "dynamic"
        w.add_body(shapes[s.shape_id[i]], position=s.pos[i], orientation=s.quat[i],
                   linear_velocity=s.lin_vel[i], angular_velocity=s.ang_vel[i], kind=kind,
                   mass=float(s.mass[i]), friction=float(s.friction[i]),
                   restitution=float(s.restitution[i]), linear_damping=float(s.lin_damp[i]),
                   angular_damping=float(s.ang_damp[i]))
    return w


def timed_steps(w, dt, frames, after=None):
    """Step world w frames times by dt: (CPU s per frame of World.step, collision passes per
    frame); after(w) runs after each step, outside the timing."""
    cpu = 0.0
    passes = [0]
    inner = w._step

    def counted(*a, **k):
        passes[0] += 1
        return inner(*a, **k)
    w._step = counted
    try:
        for _f in range(frames):
            t0 = time.process_time()
            w.step(dt)
            cpu += time.process_time() - t0
            if after is not None:
                after(w)
    finally:
        del w._step
    return cpu / frames, passes[0] / frames


def run_ours(s, frames, poses):
    """CPU s per frame, the world, and collision passes per frame."""
    w = build_ours(s)
    cpu, passes = timed_steps(w, 1.0 / s.fps, frames,
                              lambda w: poses.append((w.positions.copy(), w.orientations.copy())))
    return cpu, w, passes


def warm_up():
    """CPU s of a few frames of a small scene, run before any timing: an engine with compiled
    kernels (engine/core/jit.py) compiles them at their first call (seconds), which is no part of
    the time per frame."""
    t0 = time.process_time()
    s = SCENES["cubes27"](6)
    run_ours(s, 6, [])
    return time.process_time() - t0


def count_calls(w, dt):
    """C-level calls (numpy functions, ufuncs, array methods, builtins) of one step."""
    counts = {"c": 0, "py": 0}

    def tracer(frame, event, arg):
        if event == "c_call":
            counts["c"] += 1
        elif event == "call":
            counts["py"] += 1
    sys.setprofile(tracer)
    try:
        w.step(dt)
    finally:
        sys.setprofile(None)
    return counts["c"], counts["py"]


# -- pybullet ------------------------------------------------------------------------------------

def run_pybullet(s, frames, poses):
    import peers_pybullet
    p, ids = peers_pybullet.setup(s)
    for b in ids:
        p.changeDynamics(b, -1, activationState=p.ACTIVATION_STATE_DISABLE_SLEEPING)
    cpu = 0.0
    for _f in range(frames):
        t0 = time.process_time()
        p.stepSimulation()
        cpu += time.process_time() - t0
        pos = np.empty((len(ids), 3))
        q = np.empty((len(ids), 4))
        for k, b in enumerate(ids):
            x, r = p.getBasePositionAndOrientation(b)
            pos[k], q[k] = x, (r[3], r[0], r[1], r[2])
        poses.append((pos, q))
    p.disconnect()
    return cpu / frames


# -- penetration on the true shapes (fcl) --------------------------------------------------------

def fcl_geoms(s):
    import fcl
    out = []
    for spec in s.shapes:
        if spec.kind == "box":
            out.append(lambda spec=spec: fcl.Box(*(2.0 * spec.half_extents)))
        elif spec.kind == "sphere":
            out.append(lambda spec=spec: fcl.Sphere(float(spec.radius)))
        else:
            from engine.shapes.hull import ConvexHull
            h = ConvexHull(spec.points)
            faces = []
            for f in h.faces:
                faces += [len(f)] + list(f)

            out.append(_convex_maker(fcl, h.vertices, faces, len(h.faces)))
    return out


def _convex_maker(fcl, vertices, faces, count):
    return lambda: fcl.Convex(np.asarray(vertices, float), count, np.asarray(faces, np.int64))


def deepest_penetration(s, poses, every=1):
    """Deepest penetration (m) between any two bodies over the run, by fcl (EPA) on the true
    shapes, with a bounding-sphere pre-filter."""
    import fcl
    makers = fcl_geoms(s)
    objs = [fcl.CollisionObject(makers[s.shape_id[i]]()) for i in range(s.body_count)]
    radius = np.array([np.linalg.norm(spec.vertices(), axis=1).max() if spec.kind != "sphere"
                       else spec.radius for spec in s.shapes])[s.shape_id]
    static = s.kind == STATIC
    worst = 0.0
    req = fcl.CollisionRequest(num_max_contacts=1, enable_contact=True)
    for pos, q in poses[::every]:
        for i, o in enumerate(objs):
            o.setTransform(fcl.Transform(quat.to_matrix(q[i]), pos[i]))
        d = pos[:, None, :] - pos[None, :, :]
        near = np.linalg.norm(d, axis=-1) < radius[:, None] + radius[None, :]
        near &= ~(static[:, None] & static[None, :])
        ii, jj = np.nonzero(np.triu(near, 1))
        for i, j in zip(ii.tolist(), jj.tolist()):
            res = fcl.CollisionResult()
            if fcl.collide(objs[i], objs[j], req, res):
                for c in res.contacts:
                    worst = max(worst, float(c.penetration_depth))
    return worst


def profile_ours(name, frames, warm):
    s = SCENES[name](frames)
    w = build_ours(s)
    dt = 1.0 / s.fps
    for _ in range(warm):
        w.step(dt)
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(frames - warm):
        w.step(dt)
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(25)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenes", default="cubes27,cubes216,cubes1000,rocks125")
    ap.add_argument("--frames", type=int, default=72)
    ap.add_argument("--calls", action="store_true", help="count C calls of one step (ours)")
    ap.add_argument("--no-penetration", action="store_true")
    ap.add_argument("--profile", default=None, help="cProfile our run of this scene")
    ap.add_argument("--warm", type=int, default=24, help="frames before profiling")
    ap.add_argument("--repeat", type=int, default=1, help="runs per engine; the fastest counts "
                    "(the machine is shared)")
    a = ap.parse_args()
    if a.profile:
        profile_ours(a.profile, a.frames, a.warm)
        return
    print(f"engine: {ENGINE_ROOT}")
    print(f"warm-up (the engine's kernels compile at their first call, or load from numba's "
          f"cache): {warm_up():.2f} s CPU, outside the timings")
    print(f"{'scene':>10} {'bodies':>6} {'ours ms/f':>10} {'pybullet ms/f':>14} {'ratio':>6}"
          f" {'ours pen mm':>11} {'pyb pen mm':>10} {'passes/f':>8}"
          + ("  calls/step" if a.calls else ""))
    for name in a.scenes.split(","):
        s = SCENES[name](a.frames)
        t_ours = t_pyb = math.inf
        for _ in range(a.repeat):
            ours_poses, pyb_poses = [], []
            t, w, passes = run_ours(s, a.frames, ours_poses)
            t_ours = min(t_ours, t)
            t_pyb = min(t_pyb, run_pybullet(s, a.frames, pyb_poses))
        pen = ("", "")
        if not a.no_penetration:
            every = max(1, a.frames // 24) if s.body_count > 300 else 1
            pen = (f"{1000 * deepest_penetration(s, ours_poses, every):.1f}",
                   f"{1000 * deepest_penetration(s, pyb_poses, every):.1f}")
        calls = ""
        if a.calls:
            c, py = count_calls(w, 1.0 / s.fps)
            calls = f"  {c} C + {py} py"
        print(f"{name:>10} {len(s.dynamic):>6} {1000 * t_ours:>10.1f} {1000 * t_pyb:>14.2f} "
              f"{t_ours / t_pyb:>6.2f} {pen[0]:>11} {pen[1]:>10} {passes:>8.2f}{calls}", flush=True)


if __name__ == "__main__":
    main()
