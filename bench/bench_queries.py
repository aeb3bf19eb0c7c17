"""Throughput of the batched convex queries (pairs/s) against a C++ reference on the same pairs.

Run: .venv/bin/python bench/bench_queries.py [--quick]

Reference: coal if importable, else python-fcl, else pybullet getClosestPoints, called once per pair
from Python (how a Python engine would have to use them); objects are built before timing.
Our numbers are best-of-N wall time of one batched call over all pairs.
"""
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]

from oracle import box_points, random_hull_points, random_rotations

from engine.collision.epa import epa
from engine.collision.gjk import gjk, gjk_intersect


def make_pairs(rng, m, kind):
    if kind == "box":
        pts_a = np.broadcast_to(box_points([0.5, 0.4, 0.3]), (m, 8, 3))
        pts_b = pts_a
    else:
        pts_a = np.stack([random_hull_points(rng, 32) for _ in range(m)]) * 0.5
        pts_b = np.stack([random_hull_points(rng, 32) for _ in range(m)]) * 0.5
    pos_a = rng.uniform(-50, 50, (m, 3))
    pos_b = pos_a + rng.normal(size=(m, 3)) * 1.2  # a mix of near, touching and overlapping
    return pts_a, pos_a, random_rotations(rng, m), pts_b, pos_b, random_rotations(rng, m)


def best_time(fn, repeat):
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


class Reference:
    """Per-pair distance with whichever C++ library is installed."""

    def __init__(self):
        self.name = None
        for name in ("coal", "fcl", "pybullet"):
            try:
                self.lib = __import__(name)
                self.name = "python-fcl" if name == "fcl" else name
                break
            except ImportError:
                continue

    def _hull_faces(self, pts):
        from scipy.spatial import ConvexHull
        return ConvexHull(pts).simplices

    def prepare(self, pairs):
        pts_a, pos_a, rot_a, pts_b, pos_b, rot_b = pairs
        m = len(pos_a)
        if self.name == "python-fcl":
            fcl = self.lib

            def geom(p):
                f = self._hull_faces(p)
                return fcl.Convex(p, len(f), np.hstack([np.full((len(f), 1), 3), f]).ravel())
            self.objs = [(fcl.CollisionObject(geom(pts_a[i]), fcl.Transform(rot_a[i], pos_a[i])),
                          fcl.CollisionObject(geom(pts_b[i]), fcl.Transform(rot_b[i], pos_b[i])))
                         for i in range(m)]
        elif self.name == "coal":
            coal = self.lib

            def geom(p):
                vec = coal.StdVec_Vec3s()
                for x in p:
                    vec.append(np.asarray(x, dtype=np.float64))
                return coal.Convex.convexHull(vec, False, "")
            self.objs = [(geom(pts_a[i]), coal.Transform3s(rot_a[i], pos_a[i]),
                          geom(pts_b[i]), coal.Transform3s(rot_b[i], pos_b[i])) for i in range(m)]
        elif self.name == "pybullet":
            pb = self.lib
            self.client = pb.connect(pb.DIRECT)
            self.objs = []
            for i in range(m):
                ids = []
                for pts, pos, rot in ((pts_a[i], pos_a[i], rot_a[i]), (pts_b[i], pos_b[i], rot_b[i])):
                    from engine.core.quat import from_matrix
                    w, x, y, z = from_matrix(rot)
                    shape = pb.createCollisionShape(pb.GEOM_MESH, vertices=pts.tolist(),
                                                    physicsClientId=self.client)
                    ids.append(pb.createMultiBody(0, shape, basePosition=pos.tolist(),
                                                  baseOrientation=[x, y, z, w],
                                                  physicsClientId=self.client))
                self.objs.append(ids)

    def run(self):
        out = np.empty(len(self.objs))
        if self.name == "python-fcl":
            fcl = self.lib
            req = fcl.DistanceRequest(enable_nearest_points=True)
            for i, (a, b) in enumerate(self.objs):
                out[i] = fcl.distance(a, b, req, fcl.DistanceResult())
        elif self.name == "coal":
            coal = self.lib
            req = coal.DistanceRequest()
            for i, (ga, ta, gb, tb) in enumerate(self.objs):
                res = coal.DistanceResult()
                out[i] = coal.distance(ga, ta, gb, tb, req, res)
        elif self.name == "pybullet":
            pb = self.lib
            for i, (a, b) in enumerate(self.objs):
                pts = pb.getClosestPoints(a, b, 1e9, physicsClientId=self.client)
                out[i] = min(p[8] for p in pts) if pts else np.nan
        return out

    def close(self):
        if self.name == "pybullet":
            self.lib.disconnect(self.client)


def main():
    quick = "--quick" in sys.argv
    rng = np.random.default_rng(0)
    sizes = (1000,) if quick else (1000, 10000)
    ref = Reference()
    rows = []
    for kind in ("box", "hull32"):
        for m in sizes:
            pairs = make_pairs(rng, m, kind)
            pts_a, pos_a, rot_a, pts_b, pos_b, rot_b = pairs
            args = (pts_a, 0.0, pos_a, rot_a, pts_b, 0.0, pos_b, rot_b)
            res = gjk(*args)
            t_gjk = best_time(lambda: gjk(*args), 3)
            t_int = best_time(lambda: gjk_intersect(*args), 3)
            t_epa = best_time(lambda: epa(*args), 1)
            ref_rate, agree = np.nan, np.nan
            if ref.name:
                ref.prepare(pairs)
                t_ref = best_time(ref.run, 1)
                d_ref = ref.run()
                sep = (res.distance > 1e-3) & np.isfinite(d_ref)
                agree = float(np.max(np.abs(d_ref[sep] - res.distance[sep]))) if sep.any() else np.nan
                ref_rate = m / t_ref
                ref.close() if ref.name == "pybullet" else None
            rows.append((kind, m, m / t_gjk, m / t_int, m / t_epa, ref_rate,
                         (m / t_gjk) / ref_rate, agree, res.iterations.mean(), res.overlap.mean()))
    ref_name = ref.name or "none"
    print(f"numpy {np.__version__}; reference: {ref_name} (per-pair calls from Python)")
    print(f"{'shapes':8} {'pairs':>6} {'gjk/s':>10} {'intersect/s':>12} {'epa/s':>10} "
          f"{ref_name + '/s':>14} {'gjk/ref':>8} {'max|dd|':>9} {'iters':>6} {'overlap':>8}")
    for kind, m, g, i, e, r, ratio, agree, it, ov in rows:
        print(f"{kind:8} {m:6d} {g:10.0f} {i:12.0f} {e:10.0f} {r:14.0f} {ratio:8.2f} "
              f"{agree:9.1e} {it:6.2f} {ov:8.2f}")


if __name__ == "__main__":
    main()
