"""Where a World.step spends its time, and a check of the solver's one-product sweeps.

    python bench/profile_world.py [--scene cubes|pyramid|dominoes] [--warm 110] [--steps 5]
    python bench/profile_world.py --check      # one-product vs sequential sweeps, all scenes

Profile: runs the scene for --warm steps (into its active phase), then profiles --steps steps
and prints the top functions by own time plus the solver's share (prepare / solve passes).

Check: from the same saved state, one step with ContactSolver.one_product_sweeps on and one
with it off (the plain sequential sweeps) must agree up to round-off. Contact clamping can
amplify round-off within a step, so the figure to look at is the typical (median) difference
over many steps, with the maximum printed next to it.
"""
import argparse
import cProfile
import os
import pstats
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from engine import solver
from engine.shapes import Box
from engine.world import World


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


SCENES = {"cubes": (cubes, 110), "pyramid": (pyramid, 24), "dominoes": (dominoes, 150)}


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
        if path.endswith(os.path.join("engine", "solver.py")) and func in ("__init__", "solve"):
            share[func] = v[3]  # cumulative
    print(f"{name}: {steps} steps, {1000 * cpu / steps:.1f} ms/step CPU under the profiler; "
          f"solver prepare {100 * share.get('__init__', 0) / total:.0f}%, "
          f"solve passes {100 * share.get('solve', 0) / total:.0f}%")
    stats.sort_stats("tottime").print_stats(15)


def check(dt, steps):
    for name, (build, warm) in SCENES.items():
        w = build()
        for _ in range(warm):
            w.step(dt)
        diffs = []
        for _ in range(steps):
            state = w.get_state()
            solver.ContactSolver.one_product_sweeps = False
            w.step(dt)
            ref = w.get_state()["vel"].copy()
            w.set_state(state)
            solver.ContactSolver.one_product_sweeps = True
            w.step(dt)
            diffs.append(np.abs(w.get_state()["vel"] - ref).max())
        diffs = np.array(diffs)
        print(f"{name}: velocity difference after one step, one-product vs sequential sweeps: "
              f"median {np.median(diffs):.1e}, max {diffs.max():.1e} m/s or rad/s "
              f"over {steps} steps")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scene", choices=sorted(SCENES), default="cubes")
    ap.add_argument("--warm", type=int, default=None, help="steps before profiling")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--dt", type=float, default=1.0 / 24.0)
    ap.add_argument("--check", action="store_true", help="one-product vs sequential sweeps")
    args = ap.parse_args()
    if args.check:
        check(args.dt, max(args.steps, 20))
    else:
        profile(args.scene, args.warm, args.steps, args.dt)


if __name__ == "__main__":
    main()
