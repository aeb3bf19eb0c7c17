"""Issue 12's quality figures, to compare a commit before and after a speed change.

    .venv/bin/python bench/quality_figures.py [--root PATH_TO_A_CHECKOUT] [--quick]

Runs the engine of ``--root`` (default: this checkout; give an exported older commit to get
the "before" column) on the scenes the quality tests use, at 1/24 s and 1/60 s steps, and
prints each figure against its independent truth:

- pyramid: the 210-box pyramid of tests/test_world_stacking.py (built by tests/scenes_stacking.py,
  as are the tower and heavy on light), 10 s: largest drift (mm);
- tower: 10 stacked unit boxes, 10 s: largest drift (mm);
- resting gap: a unit box dropped from 5 cm, 3 s: bottom height above the ground (mm, < 0 is
  penetration), against 0;
- bounce: an e = 1 ball (r 0.1 m) dropped from 1 m, ten bounces: highest rebound over the
  drop height (1 is exact);
- heavy on light: 100 kg box on a 1 kg box, 5 s: how far the heavy box sank into it (mm);
- rocks: the 125-rock pile of bench/bench_speed.py, 72 frames: deepest penetration on the
  true shapes (fcl), and CPU ms/frame.
"""
import argparse
import os
import sys
import time

import numpy as np

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(BENCH), "tests"))

import scenes_stacking as stacking  # the scenes of tests/test_world_stacking.py
from scenes_stacking import ground, run


def engine_from(root):
    sys.path.insert(0, root)
    from engine.shapes.primitives import Box, Sphere
    from engine.world.world import World
    return World, Box, Sphere


def drift_mm(World, Box, build, dt):
    """Largest drift (mm) over 10 s of the boxes build(w, Box) stacks on the ground."""
    w = World(sleeping=False)
    ground(w, Box)
    ids = build(w, Box)
    start = w.positions[ids].copy()
    run(w, dt, 10.0)
    return 1000 * np.linalg.norm(w.positions[ids] - start, axis=1).max()


def pyramid(World, Box, Sphere, dt):
    return drift_mm(World, Box, stacking.pyramid, dt)


def tower(World, Box, Sphere, dt):
    return drift_mm(World, Box, stacking.tower, dt)


def resting_gap(World, Box, Sphere, dt):
    w = World(sleeping=False)
    ground(w, Box)
    b = w.add_body(Box([0.5] * 3), position=(0, 0, 0.55))
    run(w, dt, 3.0)
    return 1000 * (w.positions[b, 2] - 0.5)


def bounce(World, Box, Sphere, dt):
    w = World(sleeping=False)
    ground(w, Box, restitution=1.0)
    b = w.add_body(Sphere(0.1), position=(0, 0, 1.1), restitution=1.0)
    best, low = 0.0, False
    for _ in range(round(6.0 / dt)):
        w.step(dt)
        z = w.positions[b, 2] - 0.1
        low = low or z < 0.5
        if low:
            best = max(best, z)
    return best / 1.0


def heavy_on_light(World, Box, Sphere, dt):
    w = World(sleeping=False)
    ground(w, Box)
    light, heavy = stacking.heavy_on_light(w, Box)
    run(w, dt, 5.0)
    return -1000 * ((w.positions[heavy, 2] - 0.5) - (w.positions[light, 2] + 0.5))


def rocks(World, Box, Sphere, dt):
    if BENCH not in sys.path:
        sys.path.insert(0, BENCH)
    import bench_speed
    s = bench_speed.rocks(125, 72)
    poses = []
    w = bench_speed.build_ours(s)
    cpu = 0.0
    for _ in range(round(3.0 / dt)):
        t0 = time.process_time()
        w.step(dt)
        cpu += time.process_time() - t0
        poses.append((w.positions.copy(), w.orientations.copy()))
    pen = bench_speed.deepest_penetration(s, poses, every=max(1, round(1 / 24 / dt)))
    return 1000 * pen, 1000 * cpu / len(poses)


FIGURES = [("pyramid drift mm (< 10)", pyramid), ("tower drift mm (< 10)", tower),
           ("resting gap mm (0)", resting_gap), ("e=1 bounce height ratio (1)", bounce),
           ("heavy on light sink mm (< 10)", heavy_on_light)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=os.path.dirname(BENCH))
    ap.add_argument("--quick", action="store_true", help="skip the pyramid and the rocks")
    a = ap.parse_args()
    World, Box, Sphere = engine_from(os.path.abspath(a.root))
    print(f"engine at {a.root}")
    for name, fn in FIGURES:
        if a.quick and fn is pyramid:
            continue
        vals = [fn(World, Box, Sphere, dt) for dt in (1 / 24, 1 / 60)]
        print(f"{name:34s} 1/24: {vals[0]:9.3f}   1/60: {vals[1]:9.3f}", flush=True)
    if not a.quick:
        vals = [rocks(World, Box, Sphere, dt) for dt in (1 / 24, 1 / 60)]
        print(f"{'rocks125 deepest penetration mm':34s} 1/24: {vals[0][0]:9.3f}   "
              f"1/60: {vals[1][0]:9.3f}")
        print(f"{'rocks125 CPU ms per step':34s} 1/24: {vals[0][1]:9.3f}   "
              f"1/60: {vals[1][1]:9.3f}")


if __name__ == "__main__":
    main()
