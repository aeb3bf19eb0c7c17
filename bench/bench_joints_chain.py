"""Chains in the direct lock solve: block cyclic reduction (engine/joint_chain.py) against the
dense Gauss-Jordan inverse it replaces, engine only, 1/24 s frames, default settings.

Scenes: the 100:1 chain of tests/test_joints_physics.py (n light 0.1 kg rod links and a 10 kg
ball, pinned, released horizontally) with 10 and 40 links, and a 50-capsule rope pinned at one
end swinging down onto a table. Per scene and path: CPU ms per frame, worst joint gap, and the
largest position difference between the two paths at the end. (*) Above 160 lock rows the
system without the chain solve is not solved directly but by block Gauss-Seidel
(engine/joint_points.py), which is what such a chain got before.

    python bench/bench_joints_chain.py
"""
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import engine.joint_solver as joint_solver
from engine import Box, Capsule, Sphere, World, quat


def anchor(w, body, local):
    return w.positions[body] + quat.rotate(w.orientations[body], local)


def local_point(w, body, point):
    return quat.rotate_inverse(w.orientations[body], np.asarray(point) - w.positions[body])


def chain(n):
    """n 0.1 kg rods and a 10 kg ball, pinned at the origin, horizontal."""
    w = World()
    ex = np.array([1.0, 0.0, 0.0])
    links = [w.add_body(Box((0.05, 0.01, 0.01)), position=(i + 0.5) * 0.1 * ex, mass=0.1)
             for i in range(n)]
    end = w.add_body(Sphere(0.05), position=(n * 0.1 + 0.05) * ex, mass=10.0)
    bodies = links + [end]
    w.add_joint("point", links[0], None, position=(0, 0, 0))
    pins = []
    for i in range(1, n + 1):
        p = i * 0.1 * ex
        w.add_joint("point", bodies[i - 1], bodies[i], position=p)
        pins.append((bodies[i - 1], bodies[i], local_point(w, bodies[i - 1], p),
                     local_point(w, bodies[i], p)))
    return w, pins


def rope(n=50):
    w = World()
    w.add_body(Box((1.6, 1.6, 0.05)), position=(0, 0, 0.7), kind="static")
    step = 0.06
    along_x = quat.from_axis_angle(np.array([0.0, 1.0, 0.0]), math.pi / 2)
    x0 = -step * (n - 1) / 2
    caps = [w.add_body(Capsule(0.012, 0.03), position=(x0 + step * i, 0, 1.2),
                       orientation=along_x, mass=0.05) for i in range(n)]
    pins = []
    for i in range(n - 1):
        p = (x0 + step * (i + 0.5), 0, 1.2)
        w.add_joint("point", caps[i], caps[i + 1], position=p)
        pins.append((caps[i], caps[i + 1], local_point(w, caps[i], p),
                     local_point(w, caps[i + 1], p)))
    w.add_joint("point", caps[0], None, position=(x0, 0, 1.2))
    return w, pins


def run(make, frames, dense):
    joint_solver.chain_order = (lambda *a: None) if dense else ORIGINAL
    w, pins = make()
    gap, cpu = 0.0, 0.0
    for _ in range(frames):
        c0 = time.process_time()
        w.step(1 / 24)
        cpu += time.process_time() - c0
        gap = max(gap, max(float(np.linalg.norm(anchor(w, a, la) - anchor(w, b, lb)))
                           for a, b, la, lb in pins))
    return 1000 * cpu / frames, 1000 * gap, w.positions.copy()


ORIGINAL = joint_solver.chain_order


def main():
    print(f"{'scene':34s} {'rows':>5s} {'ms/frame chain':>15s} {'dense*':>8s} "
          f"{'gap mm chain':>13s} {'dense*':>8s} {'paths apart (m)':>16s}")
    for name, make, rows, frames in (("100:1 chain, 10 links", lambda: chain(10), 33, 72),
                                     ("100:1 chain, 40 links", lambda: chain(40), 123, 72),
                                     ("100:1 chain, 100 links", lambda: chain(100), 303, 48),
                                     ("rope of 50 capsules, one end pinned", rope, 150, 48)):
        c_ms, c_gap, c_x = run(make, frames, False)
        d_ms, d_gap, d_x = run(make, frames, True)
        print(f"{name:34s} {rows:5d} {c_ms:15.1f} {d_ms:8.1f} {c_gap:13.3f} {d_gap:8.3f} "
              f"{np.abs(c_x - d_x).max():16.2g}")
    joint_solver.chain_order = ORIGINAL


if __name__ == "__main__":
    main()
