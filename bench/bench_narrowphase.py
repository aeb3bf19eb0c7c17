"""Narrowphase throughput: pairs/s of engine.collision.narrowphase.collide for box-box and hull-hull pairs.

Run:  .venv/bin/python bench/bench_narrowphase.py [--pybullet]

Configurations (all pairs in contact or within the margin, as the broadphase would hand them):
  box pile     unit cubes near-aligned (rotations up to 0.1 rad), resting face to face with a
               few mm of penetration: the 1000-cube pile case the world runs every step;
  box random   unit cubes in random orientations, touching: B's lowest corner along a face
               normal of A at that face's centre, 1 cm above to 2 cm into it;
  box deep     random orientations, centres 0.8-1.1 apart (deep overlaps: a worst case);
  hull32       32-vertex random hulls (points on a unit sphere), touching as "box random";
  hull32 deep  centres 1.6-2.2 apart (deep overlaps);
  sphere/box, capsule/box  a sphere / a capsule lying along a face, touching a random box face.
--pybullet also times pybullet.getContactPoints on the same box configurations (one call per
pair from Python, so it mostly measures the binding; shown for scale only).
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from engine.collision.narrowphase import collide
from engine.collision.shape_table import ShapeTable
from engine.core import quat
from engine.shapes.primitives import Box, Capsule, Polytope, Sphere


def hull_shape(rng, n):
    """A 32-vertex convex hull (points on a sphere) as a Polytope, faces from Qhull triangles."""
    from scipy.spatial import ConvexHull  # bench-only dependency
    p = rng.normal(size=(n, 3))
    p /= np.linalg.norm(p, axis=1, keepdims=True)
    h = ConvexHull(p)
    faces = []
    for (a, b, c), eq in zip(h.simplices, h.equations):
        if np.cross(p[b] - p[a], p[c] - p[a]) @ eq[:3] < 0:
            b, c = c, b
        faces.append([a, b, c])
    poly = Polytope.__new__(Polytope)
    poly._finish(p, faces)
    return poly


def random_quats(rng, m, max_angle=None):
    if max_angle is None:
        return quat.normalize(rng.normal(size=(m, 4)))
    axis = rng.normal(size=(m, 3))
    return quat.from_axis_angle(axis, rng.uniform(-max_angle, max_angle, m))


def config(rng, m, kind, shape):
    """Poses of m pairs of ``shape`` with itself (see module doc)."""
    pa = rng.uniform(-50, 50, (m, 3))
    if kind == "box pile":
        axis = np.eye(3)[rng.integers(0, 3, m)] * rng.choice([-1.0, 1.0], (m, 1))
        pb = pa + axis * rng.uniform(0.99, 1.0, (m, 1)) + rng.uniform(-0.5, 0.5, (m, 3)) * (1 - np.abs(axis))
        return pa, random_quats(rng, m, 0.1), pb, random_quats(rng, m, 0.1)
    qa, qb = random_quats(rng, m), random_quats(rng, m)
    if kind.endswith("deep"):
        d = rng.normal(size=(m, 3))
        d /= np.linalg.norm(d, axis=1, keepdims=True)
        return pa, qa, pa + d * rng.uniform(0.8, 1.1, (m, 1)) * 2 * np.abs(shape.vertices).max(), qb
    # Touching: B's lowest point along a face normal of A sits at that face's centre, between
    # 1 cm above and 2 cm below the face plane (A lies below that plane, so that is the depth).
    f = rng.integers(0, len(shape.faces), m)
    centre = np.array([shape.vertices[loop].mean(axis=0) for loop in shape.faces])[f]
    ra, rb = quat.to_matrix(qa), quat.to_matrix(qb)
    n = np.matmul(ra, shape.planes[f, :3, None])[:, :, 0]
    c = np.matmul(ra, centre[:, :, None])[:, :, 0] + pa
    wb = np.matmul(shape.vertices[None], rb.transpose(0, 2, 1))
    reach = (wb @ -n[:, :, None]).max(axis=(1, 2))
    return pa, qa, c + n * (reach - rng.uniform(-0.01, 0.02, m))[:, None], qb
def round_on_box(rng, m, box, radius, lying):
    """Sphere or capsule (axis along the face when lying) touching a random face of a box."""
    pa = rng.uniform(-50, 50, (m, 3))
    qa = random_quats(rng, m)
    f = rng.integers(0, 6, m)
    n = np.matmul(quat.to_matrix(qa), box.planes[f, :3, None])[:, :, 0]
    c = np.matmul(quat.to_matrix(qa), (box.planes[f, :3] * box.planes[f, 3:])[:, :, None])[:, :, 0] + pa
    qb = random_quats(rng, m)
    if lying:  # turn B's z axis into the face plane: rotate z onto a unit vector normal to n
        t = np.cross(n, rng.normal(size=(m, 3)))
        t /= np.linalg.norm(t, axis=1, keepdims=True)
        z = np.array([0.0, 0.0, 1.0])
        ax = np.cross(z, t)
        ang = np.arccos(np.clip(t[:, 2], -1, 1))
        ax = np.where(np.linalg.norm(ax, axis=1, keepdims=True) > 1e-9, ax, [1.0, 0, 0])
        qb = quat.from_axis_angle(ax, ang)
    pb = c + n * (radius - rng.uniform(-0.01, 0.02, m))[:, None]
    return pa, qa, pb, qb


def best_time(fn, repeat):
    best = np.inf
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def bench_pybullet(shape_half, pa, qa, pb, qb):
    import pybullet as p
    cid = p.connect(p.DIRECT)
    col = p.createCollisionShape(p.GEOM_BOX, halfExtents=shape_half, physicsClientId=cid)
    a = p.createMultiBody(0, col, physicsClientId=cid)
    b = p.createMultiBody(0, col, physicsClientId=cid)
    xyzw_a = np.roll(qa, -1, axis=1)
    xyzw_b = np.roll(qb, -1, axis=1)
    t = time.perf_counter()
    for k in range(len(pa)):
        p.resetBasePositionAndOrientation(a, pa[k], xyzw_a[k], physicsClientId=cid)
        p.resetBasePositionAndOrientation(b, pb[k], xyzw_b[k], physicsClientId=cid)
        p.getClosestPoints(a, b, 0.02, physicsClientId=cid)
    dt = time.perf_counter() - t
    p.disconnect(cid)
    return dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pybullet", action="store_true")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    box = Box([0.5, 0.5, 0.5])
    hull = hull_shape(rng, 32)
    table = ShapeTable([box, hull, Sphere(0.3), Capsule(0.2, 0.5)])
    margin = 0.02
    print(f"numpy {np.__version__}; margin {margin}")
    cases = (("box pile", 0), ("box random", 0), ("box deep", 0), ("hull32", 1), ("hull32 deep", 1))
    for kind, sid in cases:
        for m in (1000, 10000):
            pa, qa, pb, qb = config(rng, m, kind, table.shapes[sid])
            ids = np.full(m, sid)
            man = collide(table, ids, pa, qa, ids, pb, qb, margin=margin)
            dt = best_time(lambda: collide(table, ids, pa, qa, ids, pb, qb, margin=margin), args.repeat)
            touching = np.mean(man.count > 0)
            line = (f"{kind:11s} {m:6d} pairs: {dt * 1e3:8.2f} ms  {m / dt:10.0f} pairs/s  "
                    f"({dt / m * 1e6:.2f} us/pair, {touching:.0%} with contacts, "
                    f"mean {man.count[man.count > 0].mean():.2f} points)")
            if args.pybullet and kind.startswith("box") and m == 1000:
                dtp = bench_pybullet([0.5, 0.5, 0.5], pa, qa, pb, qb)
                line += f"   pybullet getClosestPoints loop: {m / dtp:.0f} pairs/s"
            print(line)
    for name, sid, lying in (("sphere/box", 2, False), ("capsule/box", 3, True)):
        for m in (1000, 10000):
            pa, qa, pb, qb = round_on_box(rng, m, box, table.shapes[sid].radius, lying)
            ia, ib = np.zeros(m, dtype=np.int64), np.full(m, sid)
            man = collide(table, ia, pa, qa, ib, pb, qb, margin=margin)
            dt = best_time(lambda: collide(table, ia, pa, qa, ib, pb, qb, margin=margin), args.repeat)
            print(f"{name:11s} {m:6d} pairs: {dt * 1e3:8.2f} ms  {m / dt:10.0f} pairs/s  "
                  f"({dt / m * 1e6:.2f} us/pair, {np.mean(man.count > 0):.0%} with contacts, "
                  f"mean {man.count[man.count > 0].mean():.2f} points)")


if __name__ == "__main__":
    main()
