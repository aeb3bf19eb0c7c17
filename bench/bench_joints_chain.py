"""Chains in the direct lock solve: block elimination (engine/dynamics/joint_chain.py) against the
dense Gauss-Jordan inverse it replaces, engine only, 1/24 s frames, default settings.

Scenes (built by tests/scenes_chains.py, as the tests build them): the 100:1 chain of
tests/test_joints_physics.py (n light 0.1 kg rod links and a 10 kg ball, pinned, released
horizontally) with 10, 40 and 100 links, and the 50-capsule rope of tests/test_joints_chain.py
pinned at one end swinging down onto a table. Per scene and path: CPU ms per frame, worst
joint gap, and the largest position difference between the two paths at the end. (*) Above 160
lock rows the system without the chain solve is not solved directly but by block Gauss-Seidel
(engine/dynamics/joint_points.py), which is what such a chain got before.

    python bench/bench_joints_chain.py
"""
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

from scenes_chains import capsule_rope, heavy_end_chain, worst_gap

import engine.dynamics.joint_solver as joint_solver


def chain(n):
    w, _, pins = heavy_end_chain(n)
    return w, pins


def rope():
    w, _, pins, _ = capsule_rope(50)
    return w, pins


def run(make, frames, dense):
    joint_solver.chain_order = (lambda *a: None) if dense else ORIGINAL
    w, pins = make()
    gap, cpu = 0.0, 0.0
    for _ in range(frames):
        c0 = time.process_time()
        w.step(1 / 24)
        cpu += time.process_time() - c0
        gap = max(gap, worst_gap(w, pins))
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
