"""Where a World.step spends its time.

    python bench/profile_world.py [--scene cubes|cubes27|pyramid|dominoes] [--warm 110]
                                  [--steps 5]

Runs the scene for --warm steps (into its active phase; the engine's kernels compile in them),
then profiles --steps steps and prints the top functions by own time plus the contact
solver's share (prepare / its per-substep passes, engine/dynamics/contact_kernels.py).
"""
import argparse
import cProfile
import os
import pstats
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from engine.shapes.primitives import Box
from engine.world.world import World


def cubes():
    """The 1000-cube grid of bench_world_quick.py, sleeping off."""
    w = World(sleeping=False)
    w.add_body(Box([20.0, 20.0, 0.5]), position=(0.0, 0.0, -0.5), kind="static")
    cube = Box([0.5, 0.5, 0.5])
    off = 9 * 1.2 / 2.0
    for k in range(10):
        for j in range(10):
            for i in range(10):
                w.add_body(cube, position=(i * 1.2 - off, j * 1.2 - off, 1.5 + k * 1.2))
    return w


def pyramid():
    """The 210-box pyramid of tests/test_world_stacking.py."""
    w = World(sleeping=False)
    w.add_body(Box([40.0, 40.0, 0.5]), position=(0.0, 0.0, -0.5), kind="static")
    cube = Box([0.5, 0.5, 0.5])
    for row in range(20):
        for i in range(20 - row):
            w.add_body(cube, position=((i - (19 - row) / 2) * 1.05, 0.0, 0.5 + row))
    return w


def dominoes():
    """The 100-domino line of bench_world_quick.py --dominoes, sleeping off."""
    w = World(sleeping=False)
    w.add_body(Box([40.0, 40.0, 0.5]), position=(0.0, 0.0, -0.5), kind="static")
    d = Box([0.05, 0.25, 0.5])
    ids = [w.add_body(d, position=(0.5 * i - 25.0, 0.0, 0.5), friction=0.6) for i in range(100)]
    w.set_velocity(ids[0], angular=(0.0, 1.5, 0.0))
    return w


def cubes27():
    """bench/bench_speed.py's 27 tumbling cubes (sleeping off)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bench_speed
    return bench_speed.build_ours(bench_speed.SCENES["cubes27"](72))


SCENES = {"cubes": (cubes, 110), "cubes27": (cubes27, 24), "pyramid": (pyramid, 24),
          "dominoes": (dominoes, 150)}


PASSES = ("warm_start", "solve", "restitution")


def profile(name, warm, steps, dt):
    build, default_warm = SCENES[name]
    w = build()
    for _ in range(default_warm if warm is None else warm):
        w.step(dt)
    prof = cProfile.Profile()
    t0 = time.process_time()
    prof.enable()
    for _ in range(steps):
        w.step(dt)
    prof.disable()
    cpu = time.process_time() - t0
    stats = pstats.Stats(prof)
    total = sum(v[2] for v in stats.stats.values())  # own time of every function
    share = {}
    for (path, _, func), v in stats.stats.items():
        if path.endswith(os.path.join("engine", "dynamics", "solver.py")) and func in PASSES + ("__init__",):
            share[func] = v[3]  # cumulative
    passes = sum(share.get(f, 0) for f in PASSES)
    print(f"{name}: {steps} steps, {1000 * cpu / steps:.1f} ms/step CPU under the profiler; "
          f"contact solver prepare {100 * share.get('__init__', 0) / total:.0f}%, "
          f"its passes (warm start, sweeps, restitution) {100 * passes / total:.0f}%")
    stats.sort_stats("tottime").print_stats(15)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scene", choices=sorted(SCENES), default="cubes")
    ap.add_argument("--warm", type=int, default=None, help="steps before profiling")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--dt", type=float, default=1.0 / 24.0)
    args = ap.parse_args()
    profile(args.scene, args.warm, args.steps, args.dt)


if __name__ == "__main__":
    main()
