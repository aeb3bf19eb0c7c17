"""Cost of one hull-hull contact query vs the hull's vertex cap (ConvexHull max_vertices).

Together with bench/bench_hull.py (shape error of each cap on a 100k-point sculpt) this picks
the cap the add-on passes for Convex Hull shapes (addon/collect.py HULL_VERTEX_CAP).

Two contact depths: "deep" (centres 1.9 apart for rock-like hulls of radius ~1: ~0.3 deep, the
historical figure) and "resting" (signed distance -5..0 mm: a settled pile). Each is timed with
the pruning of engine/collision/sat.py on (the default) and off (sat.PRUNE_GAUSS = False: the previous
exhaustive route), and the two routes' distances are compared. Best of REPEAT runs (the machine
is shared).

    .venv/bin/python bench/bench_hull_cap.py
"""
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import engine
from engine.collision import sat
from engine.core import quat

M = 500
REPEAT = 5


def best_time(fn):
    fn()
    best = np.inf
    for _ in range(REPEAT):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def resting_offsets(h, rng, qa, qb):
    """B's centres so each pair's signed distance is -5..0 mm (a settled pile): B starts at the
    support gap along a random direction u (apart or overlapping), then moves along the GJK
    normal by the distance still to go (a few rounds settle the pairs that overlapped)."""
    from engine.collision.gjk import gjk
    u = rng.normal(size=(M, 3))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    ra, rb = quat.to_matrix(qa), quat.to_matrix(qb)
    wa = np.matmul(h.vertices[None], ra.transpose(0, 2, 1))
    wb = np.matmul(h.vertices[None], rb.transpose(0, 2, 1))
    ha = np.einsum("mvi,mi->mv", wa, u).max(axis=1)
    hb = np.einsum("mvi,mi->mv", wb, -u).max(axis=1)
    pb = u * (ha + hb + 0.05)[:, None]   # apart: GJK's distance and normal are exact
    target = -rng.uniform(0.0, 0.005, M)
    g = gjk(h.vertices, 0.0, np.zeros((M, 3)), ra, h.vertices, 0.0, pb, rb)
    return pb + (target - g.distance)[:, None] * g.normal


def main():
    rng = np.random.default_rng(0)
    print(f"{'cap':>4} {'V':>4} {'F':>4} {'E':>4}  {'case':8} {'exhaustive':>11} {'pruned':>9}  max |dsep|")
    for nv in (16, 32, 64, 128):
        pts = rng.normal(size=(20000, 3))
        pts /= np.linalg.norm(pts, axis=1, keepdims=True)
        pts *= 1 + 0.05 * rng.normal(size=(20000, 1))
        h = engine.ConvexHull(pts, max_vertices=nv)
        t = engine.ShapeTable([h])
        ids = np.zeros(M, dtype=np.int64)
        pa = np.zeros((M, 3))
        qa = quat.normalize(rng.normal(size=(M, 4)))
        qb = quat.normalize(rng.normal(size=(M, 4)))
        deep = rng.normal(size=(M, 3))
        deep *= 1.9 / np.linalg.norm(deep, axis=1, keepdims=True)
        for case, pb in (("deep", deep), ("resting", resting_offsets(h, rng, qa, qb))):
            out = {}
            times = {}
            for prune in (False, True):
                sat.PRUNE_GAUSS = prune
                def run(t=t, ids=ids, pa=pa, qa=qa, pb=pb, qb=qb):
                    return engine.collide(t, ids, pa, qa, ids, pb, qb, margin=0.02)
                times[prune] = best_time(run) / M
                out[prune] = run()
            sat.PRUNE_GAUSS = True
            dsep = np.abs(out[True].distance - out[False].distance).max()
            print(f"{nv:4d} {len(h.vertices):4d} {len(h.faces):4d} {len(h.edges):4d}  {case:8} "
                  f"{times[False] * 1e6:8.1f} us {times[True] * 1e6:6.1f} us  {dsep:.1e}")


if __name__ == "__main__":
    main()
