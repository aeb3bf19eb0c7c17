"""Quick world benchmark: 1000 unit cubes (10x10x10, 1.2 m spacing) falling on a 40x40x1 m
static ground, 250 steps at 1/24 s. Prints ms/step and the quality figures the issue asks for:
deepest resting penetration (cube-cube and cube-ground) and how many cubes still move.

    python bench/bench_world_quick.py [--steps 250] [--profile]
"""
import argparse
import cProfile
import os
import pstats
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from engine.shapes import Box  # noqa: E402
from engine.world import World  # noqa: E402


def build(n_side=10, spacing=1.2, height0=1.0, sleeping=True):
    world = World(sleeping=sleeping)
    world.add_body(Box([20.0, 20.0, 0.5]), position=(0.0, 0.0, -0.5), kind="static")
    cube = Box([0.5, 0.5, 0.5])
    off = (n_side - 1) * spacing / 2.0
    for k in range(n_side):
        for j in range(n_side):
            for i in range(n_side):
                world.add_body(cube, position=(i * spacing - off, j * spacing - off,
                                               height0 + 0.5 + k * spacing))
    return world


def quality(world):
    """Deepest penetration over every touching pair of the final poses (fresh broadphase and
    narrowphase, independent of the solver's own contact list), and how many cubes move."""
    from engine.broadphase import find_pairs
    from engine.narrowphase import collide
    from engine import quat
    t = world.table
    sid = world._v("shape")
    rot = quat.to_matrix(world.orientations)
    pts = np.einsum("nij,nvj->nvi", rot, t.points[sid]) + world.positions[:, None, :]
    ia, ib = find_pairs(pts.min(axis=1) - 0.01, pts.max(axis=1) + 0.01)
    man = collide(t, sid[ia], world.positions[ia], world.orientations[ia], sid[ib],
                  world.positions[ib], world.orientations[ib], margin=0.0)
    sep = man.separation[man.count > 0]
    depth = float(max(0.0, -sep.min())) if sep.size else 0.0
    v = np.linalg.norm(world.linear_velocities[1:], axis=1)
    w = np.linalg.norm(world.angular_velocities[1:], axis=1)
    moving = int(np.sum((v > 0.05) | (w > 0.05)))
    bottom = world.positions[1:, 2] - 0.5
    return depth, moving, float(bottom.min()), int(world.sleeping[1:].sum())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=250)
    ap.add_argument("--dt", type=float, default=1.0 / 24.0)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--no-sleep", action="store_true", help="disable sleeping (raw cost)")
    ap.add_argument("--dominoes", action="store_true", help="run the 100-domino line instead")
    args = ap.parse_args()
    if args.dominoes:
        return dominoes(args)
    world = build(sleeping=not args.no_sleep)
    prof = cProfile.Profile() if args.profile else None
    t0 = time.perf_counter()
    if prof:
        prof.enable()
    for i in range(args.steps):
        world.step(args.dt)
    if prof:
        prof.disable()
    elapsed = time.perf_counter() - t0
    depth, moving, lowest, asleep = quality(world)
    print(f"1000 cubes, {args.steps} steps at dt={args.dt:.5f}: {elapsed:.2f} s total, "
          f"{1000 * elapsed / args.steps:.1f} ms/step")
    print(f"deepest penetration at the end: {1000 * depth:.2f} mm; lowest cube bottom "
          f"{1000 * lowest:.2f} mm; cubes moving (>0.05 m/s or rad/s): {moving}; asleep: {asleep}")
    if prof:
        pstats.Stats(prof).sort_stats("cumulative").print_stats(30)


def dominoes(args):
    """100 dominoes 0.1 x 0.5 x 1 m, 0.5 m apart, the first one tipped; 480 frames at 24 fps."""
    from engine import quat
    world = World()
    world.add_body(Box([40.0, 40.0, 0.5]), position=(0.0, 0.0, -0.5), kind="static")
    d = Box([0.05, 0.25, 0.5])
    ids = [world.add_body(d, position=(0.5 * i - 25.0, 0.0, 0.5), friction=0.6)
           for i in range(100)]
    world.set_velocity(ids[0], angular=(0.0, 1.5, 0.0))
    steps = 480
    t0 = time.perf_counter()
    for _ in range(steps):
        world.step(1.0 / 24.0)
    elapsed = time.perf_counter() - t0
    up = quat.rotate(world.orientations[ids], np.array([0.0, 0.0, 1.0]))
    tilt = np.degrees(np.arccos(np.clip(up[:, 2], -1.0, 1.0)))
    print(f"100 dominoes, {steps} steps at 1/24: {elapsed:.2f} s total, "
          f"{1000 * elapsed / steps:.1f} ms/step; fallen (tilt > 45 deg): {int((tilt > 45).sum())}"
          f"/100, least tilt {tilt.min():.1f} deg")


if __name__ == "__main__":
    main()
