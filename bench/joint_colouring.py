"""Joints coloured apart from the contacts, or with them: how many batches a sweep would run.

    .venv/bin/python bench/joint_colouring.py [--frames 48]

Runs the 20 x 20 jointed sphere grid of bench/bench_joints_grid.py and, every 6th frame, takes
the last collision pass's contact pairs and joints (the arguments of the engine's two
colour_constraints calls) and colours them apart (what the engine does: contacts, then
joints) and as one graph (Box2D v3's single constraint graph). A numpy sweep pays a fixed
number of calls per colour and kind of row in it, so the figure to compare is the number of
(colour, kind) batches: apart, contact colours + joint colours; together, the colours holding
a joint + the colours holding a contact. docs/benchmarks/joints.md, "How it works".
"""
import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), HERE]

import bench_joints_grid as grid

from engine.dynamics import graph, joint_solver
from engine.world import world


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=48)
    args = ap.parse_args(argv)
    seen = {}
    real = graph.colour_constraints

    def spy(tag):
        def colour(a, b, static, *rest):
            seen[tag] = (a.copy(), b.copy(), static.copy())
            return real(a, b, static, *rest)
        return colour
    world.colour_constraints = spy("contacts")
    joint_solver.colour_constraints = spy("joints")
    w = grid.build_ours(20)
    for f in range(args.frames):
        seen.pop("contacts", None)
        w.step(1 / 24)
        if f % 6 != 5 or "contacts" not in seen or "joints" not in seen:
            continue
        ca, cb, st = seen["contacts"]
        ja, jb, _ = seen["joints"]
        apart = real(ca, cb, st).n_colours + real(ja, jb, st).n_colours
        union = real(np.concatenate((ja, ca)), np.concatenate((jb, cb)), st)
        nj = len(ja)
        together = len(np.unique(union.colour[:nj])) + len(np.unique(union.colour[nj:]))
        print(f"frame {f:3d}: {len(ca):4d} contact pairs, {nj} joints: batches apart {apart:3d}, "
              f"one colouring {together:3d} ({union.n_colours} colours)")


if __name__ == "__main__":
    main()
