"""The general joint path (engine/dynamics/joint_solver.py: hinges, fixed, generic springs,
limits, motors) on three scenes, engine only, 1/24 s frames, default settings; CPU ms per frame
over 48 frames after one untimed frame (kernels compiled or loaded), and a checksum of the end
positions (sum |x|) to see that a before/after pair simulates the same thing.

- hinge_chain: 24 bars hanging horizontally from the world by hinges with limits, released
  (loop-free, 120 lock rows: the direct solve's chain factor);
- hinge_net: a 10 x 10 net of boxes, hinges with limits across and generic springs (limits and
  springs) down, the top row fixed to the world (loops: Gauss-Seidel);
- glued_wall: a 6 x 6 wall of boxes fixed to their neighbours standing on the ground, with a
  motorised hinged arm on top (loops and contacts).

    python bench/bench_joints_rows.py [scene ...]
    HB_ENGINE_ROOT=/path/to/an/exported/commit python bench/bench_joints_rows.py   # before/after
"""
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.environ.get("HB_ENGINE_ROOT", ROOT))  # the engine measured

from engine import Box, World


def hinge_chain(n=24):
    """n bars joined by hinges with limits (5 lock rows each), one end to the world: the
    direct solve's chain factor."""
    w = World()
    prev = None
    for i in range(n):
        b = w.add_body(Box((0.2, 0.05, 0.05)), position=(0.4 * i + 0.2, 0, 2.0), mass=1.0)
        p = (0.4 * i, 0, 2.0)
        w.add_joint("hinge", b if prev is None else prev, None if prev is None else b,
                    position=p, orientation=(0.7071068, 0.7071068, 0, 0),
                    limits={"ang_z": (-1.0, 1.0)})
        prev = b
    return w


def hinge_net(n=10):
    """Loops (Gauss-Seidel): hinges across, generic springs down, the top row fixed."""
    w = World()
    ids = {}
    for i in range(n):
        for k in range(n):
            ids[i, k] = w.add_body(Box((0.15, 0.15, 0.15)), position=(0.5 * i, 0, 3 - 0.5 * k), mass=1.0)
    for i in range(n):
        w.add_joint("fixed", ids[i, 0], None, position=(0.5 * i, 0, 3.0))
    for i in range(n):
        for k in range(n):
            if i + 1 < n:
                w.add_joint("hinge", ids[i, k], ids[i + 1, k], position=(0.5 * i + 0.25, 0, 3 - 0.5 * k),
                            limits={"ang_z": (-0.5, 0.5)})
            if k + 1 < n:
                w.add_joint("generic_spring", ids[i, k], ids[i, k + 1],
                            position=(0.5 * i, 0, 3 - 0.5 * k - 0.25),
                            limits={"lin_x": (0, 0), "lin_y": (0, 0), "lin_z": (-0.05, 0.05),
                                    "ang_x": (-0.2, 0.2)},
                            springs={"lin_z": (2000.0, 5.0), "ang_x": (50.0, 0.5)})
    return w


def glued_wall(n=6):
    """Fixed joints in loops and contacts with the ground; a motorised hinge on top."""
    w = World()
    w.add_body(Box((5, 5, 0.5)), position=(0, 0, -0.5), kind="static")
    ids = {}
    for i in range(n):
        for k in range(n):
            ids[i, k] = w.add_body(Box((0.25, 0.25, 0.25)), position=(0.5 * i, 0, 0.25 + 0.5 * k), mass=1.0)
    for i in range(n):
        for k in range(n):
            if i + 1 < n:
                w.add_joint("fixed", ids[i, k], ids[i + 1, k], position=(0.5 * i + 0.25, 0, 0.25 + 0.5 * k))
            if k + 1 < n:
                w.add_joint("fixed", ids[i, k], ids[i, k + 1], position=(0.5 * i, 0, 0.5 + 0.5 * k))
    arm = w.add_body(Box((0.5, 0.05, 0.05)), position=(0.5 * (n - 1), 0.5, 0.5 * n), mass=0.5)
    w.add_joint("hinge", ids[n - 1, n - 1], arm, position=(0.5 * (n - 1), 0.25, 0.5 * n),
                orientation=(0.7071068, 0.7071068, 0, 0), motor={"ang": (3.0, 50.0)})
    return w


SCENES = {"hinge_chain": hinge_chain, "hinge_net": hinge_net, "glued_wall": glued_wall}


def run(name, frames=48):
    """CPU ms per frame and the end positions of scene name."""
    w = SCENES[name]()
    w.step(1 / 24)
    cpu = 0.0
    for _ in range(frames):
        c0 = time.process_time()
        w.step(1 / 24)
        cpu += time.process_time() - c0
    x = w.positions
    return 1000 * cpu / frames, x


def main():
    names = sys.argv[1:] or list(SCENES)
    for nm in names:
        ms, x = run(nm)
        print(f"{nm:12s} {ms:8.1f} ms/frame  sum|x| {np.abs(x).sum():.9f} finite {np.isfinite(x).all()}")


if __name__ == "__main__":
    main()
