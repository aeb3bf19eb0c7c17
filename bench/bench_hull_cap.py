"""Cost of one touching hull-hull contact query vs the hull's vertex cap (ConvexHull max_vertices).

Together with bench/bench_hull.py (shape error of each cap on a 100k-point sculpt) this picks
the cap the add-on passes for Convex Hull shapes (addon/collect.py HULL_VERTEX_CAP).

    .venv/bin/python bench/bench_hull_cap.py
"""
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import engine
from engine import quat
rng = np.random.default_rng(0)
for nv in (16, 32, 64, 128):
    pts = rng.normal(size=(20000, 3)); pts /= np.linalg.norm(pts, axis=1, keepdims=True)
    pts *= 1 + 0.05 * rng.normal(size=(20000, 1))
    h = engine.ConvexHull(pts, max_vertices=nv)
    t = engine.ShapeTable([h])
    m = 500
    ids = np.zeros(m, dtype=np.int64)
    pa = np.zeros((m, 3)); pb = rng.normal(size=(m, 3)); pb *= 1.9 / np.linalg.norm(pb, axis=1, keepdims=True)
    qa = quat.normalize(rng.normal(size=(m, 4))); qb = quat.normalize(rng.normal(size=(m, 4)))
    engine.collide(t, ids, pa, qa, ids, pb, qb, margin=0.02)
    t0 = time.perf_counter(); n = 3
    for _ in range(n):
        engine.collide(t, ids, pa, qa, ids, pb, qb, margin=0.02)
    dtp = (time.perf_counter() - t0) / n / m
    print(f"{nv:4d}-vertex cap: {len(h.vertices)} verts, {len(h.faces)} faces, {len(h.edges)} edges: {dtp*1e6:7.1f} us per touching pair")
