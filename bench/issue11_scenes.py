"""The scenes described in issue 11, reconstructed from its text, with their worst figures.

    python bench/issue11_scenes.py [--frames 60]

- wall: a wall of 100 light boxes (10 x 10, 0.5 m, 0.5-5 kg, half of them passive, chosen
  at random) on a ground, hit by a ball of radius 1.5 m: a convex hull of Blender's UV sphere
  (32 x 16) of 1000 kg at 17 m/s with CCD at 1/24 s frames (and the variants the issue says
  ran: an exact sphere, CCD off, a 10 kg ball);
- stack: a 300 kg exact sphere at 12 m/s into a stack of light boxes (0.5-5 kg, 4 x 5 x 5,
  random sizes, a fifth of them passive), CCD off, 60 frames.

Prints per scene: frames run, NaN or error, the largest speed of any body (m/s) and the
World.guard_events count.
"""
import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

from fuzzworld import uv_sphere

from engine import Box, ConvexHull, EngineError, Sphere, World


def wall(ball="hull", mass=1000.0, speed=17.0, ccd=True, seed=0, radius=1.5):
    rng = np.random.default_rng(seed)
    w = World(ccd=ccd)
    w.add_body(Box((30, 30, 0.5)), position=(0, 0, -0.5), kind="static")
    s = 0.5
    for i in range(10):
        for k in range(10):
            w.add_body(Box((s / 2,) * 3), position=(0.0, (i - 4.5) * s * 1.01, s / 2 + k * s * 1.001),
                       kind="static" if rng.random() < 0.5 else "dynamic",
                       mass=float(rng.uniform(0.5, 5.0)))
    shape = ConvexHull(uv_sphere(radius)) if ball == "hull" else Sphere(radius)
    w.add_body(shape, position=(-8.0, 0.0, radius + 0.3), linear_velocity=(speed, 0, 0), mass=mass)
    return w


def stack(mass=300.0, speed=12.0, ccd=False, seed=0, passive=0.2):
    rng = np.random.default_rng(seed)
    w = World(ccd=ccd)
    w.add_body(Box((40, 40, 0.5)), position=(0, 0, -0.5), kind="static")
    for i in range(4):
        for j in range(5):
            z = 0.0
            for _ in range(5):
                he = rng.uniform(0.15, 0.3, 3)
                w.add_body(Box(he), position=(i * 0.62, (j - 2.5) * 0.62, z + he[2] + 0.001),
                           kind="static" if rng.random() < passive else "dynamic",
                           mass=float(rng.uniform(0.5, 5.0)))
                z += 2 * he[2] + 0.002
    w.add_body(Sphere(1.5), position=(-6.0, rng.uniform(-1, 1), 3.5),
               linear_velocity=(speed, 0, 0), mass=mass)
    return w


def run(world, frames, dt=1.0 / 24.0):
    top = 0.0
    for f in range(frames):
        try:
            world.step(dt)
        except EngineError as exc:
            return f, f"error: {exc}", top
        if not np.all(np.isfinite(world.linear_velocities)):
            return f, "NaN", top
        top = max(top, float(np.linalg.norm(world.linear_velocities, axis=1).max()))
    return frames, "finite", top


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=60)
    args = ap.parse_args()
    cases = [("wall, hull ball 1000 kg 17 m/s, CCD", lambda: wall()),
             ("wall, exact sphere 1000 kg 17 m/s, CCD", lambda: wall(ball="sphere")),
             ("wall, hull ball 1000 kg 17 m/s, no CCD", lambda: wall(ccd=False)),
             ("wall, hull ball 10 kg 17 m/s, CCD", lambda: wall(mass=10.0)),
             ("stack, sphere 300 kg 12 m/s, no CCD", lambda: stack()),
             ("stack, sphere 100 kg 12 m/s, no passive, no CCD", lambda: stack(100.0, passive=0.0))]
    for name, make in cases:
        t0 = time.perf_counter()
        world = make()
        frames, state, top = run(world, args.frames)
        print(f"{name:50s} frames {frames:3d}  {state:8s} max |v| {top:8.3g} m/s  guard "
              f"{len(getattr(world, 'guard_events', ()))}  ({time.perf_counter() - t0:.1f} s)",
              flush=True)


if __name__ == "__main__":
    main()
