"""Quick world benchmark: 1000 unit cubes (10x10x10, 1.2 m spacing) falling on a 40x40x1 m
static ground, 250 steps at 1/24 s. Prints ms/step and the quality figures the issue asks for:
deepest resting penetration (cube-cube and cube-ground) and how many cubes still move.

    python bench/bench_world_quick.py [--steps 250] [--profile] [--no-sleep]
    python bench/bench_world_quick.py --dominoes | --pyramid
    python bench/bench_world_quick.py --small      # fixed per-step cost: 1 spinning box, ...
    python bench/bench_world_quick.py --substeps 10 --hertz 60 --relax 2   # World(...) options
    python bench/bench_world_quick.py --bounce --dt 1/60 --max-substep 1/240

Times are wall clock and process CPU time (the CPU figure is the one to compare on a shared,
loaded machine).
"""
import argparse
import cProfile
import os
import pstats
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from engine.shapes.primitives import Box
from engine.world.world import World


def number(text):
    """A float, or a fraction written a/b (so --dt 1/60 is exact)."""
    a, _, b = text.partition("/")
    return float(a) / float(b) if b else float(a)


def world_options(args):
    """World(...) keyword arguments given on the command line (None: the World default)."""
    opts = {"substeps": args.substeps, "contact_hertz": args.hertz,
            "relax_iterations": args.relax, "max_substep": args.max_substep}
    return {k: v for k, v in opts.items() if v is not None}


class Timer:
    """Wall and process CPU time of a block."""

    def __enter__(self):
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.wall
        self.cpu = time.process_time() - self.cpu

    def per_step(self, steps):
        return (f"{self.wall:.2f} s total, {1000 * self.wall / steps:.1f} ms/step wall, "
                f"{1000 * self.cpu / steps:.1f} ms/step CPU")


def build(n_side=10, spacing=1.2, height0=1.0, sleeping=True, **opts):
    world = World(sleeping=sleeping, **opts)
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
    from engine.collision.broadphase import find_pairs
    from engine.collision.narrowphase import collide
    from engine.core import quat
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
    ap.add_argument("--dt", type=number, default=1.0 / 24.0)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--no-sleep", action="store_true", help="disable sleeping (raw cost)")
    ap.add_argument("--dominoes", action="store_true", help="run the 100-domino line instead")
    ap.add_argument("--pyramid", action="store_true", help="run the 210-box pyramid instead")
    ap.add_argument("--substeps", type=int, default=None, help="World(substeps=...)")
    ap.add_argument("--hertz", type=float, default=None, help="World(contact_hertz=...)")
    ap.add_argument("--relax", type=int, default=None, help="World(relax_iterations=...)")
    ap.add_argument("--max-substep", type=number, default=None, help="World(max_substep=...)")
    ap.add_argument("--bounce", action="store_true",
                    help="e = 1 ball dropped from 1 m: apex heights of ten bounces")
    ap.add_argument("--small", action="store_true",
                    help="small scenes (fixed per-step overhead): a spinning box in zero "
                         "gravity, a resting box, a 10-box tower")
    args = ap.parse_args()
    if args.small:
        return small(args)
    if args.bounce:
        return bounce(args)
    if args.dominoes:
        return dominoes(args)
    if args.pyramid:
        return pyramid(args)
    world = build(sleeping=not args.no_sleep, **world_options(args))
    prof = cProfile.Profile() if args.profile else None
    with Timer() as tm:
        if prof:
            prof.enable()
        for _i in range(args.steps):
            world.step(args.dt)
        if prof:
            prof.disable()
    depth, moving, lowest, asleep = quality(world)
    print(f"1000 cubes, {args.steps} steps at dt={args.dt:.5f}: {tm.per_step(args.steps)}")
    print(f"deepest penetration at the end: {1000 * depth:.2f} mm; lowest cube bottom "
          f"{1000 * lowest:.2f} mm; cubes moving (>0.05 m/s or rad/s): {moving}; asleep: {asleep}")
    if prof:
        pstats.Stats(prof).sort_stats("cumulative").print_stats(30)


def dominoes(args):
    """100 dominoes 0.1 x 0.5 x 1 m, 0.5 m apart, the first one tipped; 480 frames at 24 fps."""
    from engine.core import quat
    world = World(**world_options(args))
    world.add_body(Box([40.0, 40.0, 0.5]), position=(0.0, 0.0, -0.5), kind="static")
    d = Box([0.05, 0.25, 0.5])
    ids = [world.add_body(d, position=(0.5 * i - 25.0, 0.0, 0.5), friction=0.6)
           for i in range(100)]
    world.set_velocity(ids[0], angular=(0.0, 1.5, 0.0))
    steps = 480
    with Timer() as tm:
        for _ in range(steps):
            world.step(1.0 / 24.0)
    up = quat.rotate(world.orientations[ids], np.array([0.0, 0.0, 1.0]))
    tilt = np.degrees(np.arccos(np.clip(up[:, 2], -1.0, 1.0)))
    print(f"100 dominoes, {steps} steps at 1/24: {tm.per_step(steps)}; fallen (tilt > 45 deg): "
          f"{int((tilt > 45).sum())}/100, least tilt {tilt.min():.1f} deg")


def pyramid(args):
    """The 210-box pyramid of tests/test_world_stacking.py (20 rows, 1.05 m pitch), sleeping
    off, 240 steps (10 s) at 1/24 s; reports the largest drift of a box from its start."""
    world = World(sleeping=False, **world_options(args))
    world.add_body(Box([40.0, 40.0, 0.5]), position=(0.0, 0.0, -0.5), kind="static")
    cube = Box([0.5, 0.5, 0.5])
    ids = [world.add_body(cube, position=((i - (19 - row) / 2) * 1.05, 0.0, 0.5 + row))
           for row in range(20) for i in range(20 - row)]
    start = world.positions[ids].copy()
    steps = 240
    with Timer() as tm:
        for _ in range(steps):
            world.step(1.0 / 24.0)
    move = world.positions[ids] - start
    drift = np.linalg.norm(move, axis=1)
    print(f"210-box pyramid, {steps} steps at 1/24: {tm.per_step(steps)}; largest drift "
          f"{1000 * drift.max():.2f} mm (sag {-1000 * move[:, 2].min():.2f} mm, sideways "
          f"{1000 * np.linalg.norm(move[:, :2], axis=1).max():.2f} mm)")


def small(args):
    """Per-step cost of small scenes, where numpy call overhead rather than arithmetic is the
    cost: a T-handle-like box (1 x 0.2 x 0.1 m, spun about its intermediate axis with a small
    perturbation) in zero gravity, one box resting on the ground and a 10-box tower (sleeping
    off, so the resting scenes keep paying for their contacts). --steps steps at --dt."""
    def spin():
        w = World(gravity=(0.0, 0.0, 0.0), **world_options(args))
        w.add_body(Box([0.5, 0.1, 0.05]))
        w.set_velocity(0, angular=(0.1, 10.0, 0.0))
        return w

    def ground(n):
        w = World(sleeping=False, **world_options(args))
        w.add_body(Box([5.0, 5.0, 0.5]), position=(0.0, 0.0, -0.5), kind="static")
        for k in range(n):
            w.add_body(Box([0.5, 0.5, 0.5]), position=(0.0, 0.0, 0.5 + k))
        return w

    for name, make in (("spinning box, zero gravity", spin), ("resting box", lambda: ground(1)),
                       ("10-box tower", lambda: ground(10))):
        world = make()
        with Timer() as tm:
            for _ in range(args.steps):
                world.step(args.dt)
        print(f"{name}: {args.steps} steps at dt={args.dt:.5f}: {tm.per_step(args.steps)}")


def bounce(args):
    """A 0.1 m ball with e = 1 dropped from 1 m onto static ground (tests/test_world_contacts.py
    scene) for ten bounces at --dt; prints the apex heights (1 m each with no energy error)."""
    from engine.shapes.primitives import Sphere
    world = World(sleeping=False, **world_options(args))
    world.add_body(Box([20.0, 20.0, 0.5]), position=(0.0, 0.0, -0.5), kind="static",
                   restitution=1.0)
    ball = world.add_body(Sphere(0.1), position=(0.0, 0.0, 1.1), restitution=1.0)
    period = 2.0 * np.sqrt(2.0 / 9.81)
    z = []
    for _ in range(round(10.6 * period / args.dt)):
        world.step(args.dt)
        z.append(world.positions[ball, 2] - 0.1)
    z = np.array(z)
    top = np.flatnonzero((z[1:-1] > z[:-2]) & (z[1:-1] >= z[2:]) & (z[1:-1] > 0.01)) + 1
    print(f"e = 1 bounce at dt={args.dt:.5f}, {world.substeps_for(args.dt)} substeps per step: "
          f"apex heights (m) {np.array2string(z[top][:10], precision=4)}")


if __name__ == "__main__":
    main()
