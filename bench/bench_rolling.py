"""Round bodies rolling: our time per frame and collision passes (engine/dynamics/round_bodies.py).

    .venv/bin/python bench/bench_rolling.py [--shape cylinder|capsule] [--frames 72]
    HB_ENGINE_ROOT=/path/to/an/exported/commit .venv/bin/python bench/bench_rolling.py ...
                                          # measure another commit's engine (before/after)

100 barrels (Cylinder r 0.3 m x 0.9 m, or Capsule r 0.3 m with a 0.6 m core) lying on their
sides in a 10 x 10 block, rolling across a static ground at 2.5-3.5 m/s (rolling without
slipping at the start), 72 frames at 24 fps, sleeping off. Printed: CPU ms per frame, collision
passes per frame, and the state at the end (mean forward speed, largest sideways speed, the
range of the centres' heights: a barrel that rolls true stays at z = r).
"""
import argparse
import math
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.environ.get("HB_ENGINE_ROOT", ROOT))  # the engine measured

from bench_speed import timed_steps  # after the engine path is set

from engine import Box, Capsule, Cylinder, World

R = 0.3


def build(shape):
    w = World(sleeping=False)
    w.add_body(Box((60, 60, 0.5)), position=(0, 0, -0.5), kind="static")
    rng = np.random.default_rng(1)
    q = (math.cos(math.pi / 4), math.sin(math.pi / 4), 0.0, 0.0)   # the axis along world Y
    for i in range(10):
        for j in range(10):
            body = Cylinder(R, 0.9) if shape == "cylinder" else Capsule(R, 0.3)
            v = 3.0 + rng.uniform(-0.5, 0.5)
            w.add_body(body, position=(i * 1.0 - 5, j * 1.2 - 6, R), orientation=q,
                       linear_velocity=(v, 0, 0), angular_velocity=(0, v / R, 0))
    return w


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="cylinder", choices=("cylinder", "capsule"))
    ap.add_argument("--frames", type=int, default=72)
    a = ap.parse_args()
    w = build(a.shape)
    cpu, passes = timed_steps(w, 1.0 / 24.0, a.frames)
    v, z = w.linear_velocities[1:], w.positions[1:, 2]
    print(f"{a.shape}: {1000 * cpu:.1f} CPU ms/frame, "
          f"{passes:.2f} passes/frame, mean forward speed {v[:, 0].mean():.4f} "
          f"m/s, largest sideways {np.abs(v[:, 1]).max():.4f} m/s, "
          f"centre heights {z.min():.4f}-{z.max():.4f} m")


if __name__ == "__main__":
    main()
