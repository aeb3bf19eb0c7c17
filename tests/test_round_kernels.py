"""The compiled sphere/capsule narrowphase (engine.collision.round_kernels) against oracles.

Random sphere/capsule pairs and sphere/capsule-polytope pairs, apart and overlapping, through
narrowphase.collide with a margin wide enough that every pair reports its contacts. Truth:
the brute-force signed distance of tests/oracle.py (Qhull on the Minkowski difference of the
cores, radii subtracted) and, for separated pairs, python-fcl's distance.
"""
import numpy as np
import pytest
from oracle import random_hull_points, random_rotations, signed_distance_local

from engine.collision.narrowphase import AXIS_CORE_FACE, collide
from engine.collision.shape_table import ShapeTable
from engine.core import quat
from engine.shapes.hull import ConvexHull
from engine.shapes.primitives import Box, Capsule, Sphere

ROUND = 4     # shapes[:ROUND] are spheres and capsules


def _batch(seed, m=300):
    rng = np.random.default_rng(seed)
    shapes = [Sphere(0.3), Sphere(0.12), Capsule(0.1, 0.25), Capsule(0.2, 0.05),
              Box([0.3, 0.2, 0.1]), ConvexHull(random_hull_points(rng, 14, size=0.4))]
    table = ShapeTable(shapes)
    ia = rng.integers(0, ROUND, m)                       # A round
    ib = rng.integers(0, len(shapes), m)
    pa = rng.uniform(-50.0, 50.0, (m, 3))                # far from the origin too
    pb = pa + rng.normal(size=(m, 3)) * 0.4
    qa = quat.from_matrix(random_rotations(rng, m))
    qb = quat.from_matrix(random_rotations(rng, m))
    return shapes, table, ia, pa, qa, ib, pb, qb


def _truth(shapes, table, ia, pa, qa, ib, pb, qb):
    ra, rb = quat.to_matrix(qa), quat.to_matrix(qb)
    out = []
    for i in range(len(ia)):
        a, b = shapes[ia[i]], shapes[ib[i]]
        s, n, _ = signed_distance_local(a.core_points, pa[i], ra[i], b.core_points, pb[i], rb[i],
                                        table.radius[ia[i]], table.radius[ib[i]])
        out.append((s, n))
    return out


@pytest.mark.parametrize("seed", [3, 4])
def test_round_pairs_match_the_brute_force_distance(seed):
    shapes, table, ia, pa, qa, ib, pb, qb = _batch(seed)
    man = collide(table, ia, pa, qa, ib, pb, qb, margin=10.0)
    truth = _truth(shapes, table, ia, pa, qa, ib, pb, qb)
    apart = 0
    for i, (s, n) in enumerate(truth):
        k = man.count[i]
        assert k >= 1, i
        sep = man.separation[i, :k]
        # A capsule clipped to a face whose normal is within FACE_ALIGN (1 - cos) of the
        # closest points' direction has its points measured along the face normal.
        tol = 1e-7 + (2e-4 * abs(s) if man.axis_kind[i] == AXIS_CORE_FACE and s > 0 else 0.0)
        # The pair's distance is exact; no point is deeper than the truth.
        assert man.distance[i] == pytest.approx(s, abs=1e-7), (i, ia[i], ib[i])
        assert np.all(sep >= s - tol), (i, sep, s)
        assert np.linalg.norm(man.normal[i]) == pytest.approx(1.0, abs=1e-12)
        if s > 1e-6:
            apart += 1
            # Apart: the closest pair is among the points, and the normal is the unique
            # direction between the closest points (or that face normal).
            assert sep.min() == pytest.approx(s, abs=tol), (i, sep, s)
            assert man.normal[i] @ n > 1.0 - 1e-4, (i, man.normal[i], n)
    assert 50 < apart < len(truth) - 50          # both regimes are exercised


def test_swapping_the_shapes_flips_the_normal_and_keeps_the_contact():
    shapes, table, ia, pa, qa, ib, pb, qb = _batch(7)
    ab = collide(table, ia, pa, qa, ib, pb, qb, margin=10.0)
    ba = collide(table, ib, pb, qb, ia, pa, qa, margin=10.0)
    assert np.allclose(ab.distance, ba.distance, atol=1e-12)
    assert np.allclose(ab.normal, -ba.normal, atol=1e-12)
    assert np.array_equal(ab.count, ba.count) and np.array_equal(ab.ids, ba.ids)


def test_a_pair_answers_the_same_alone_and_in_a_batch():
    """One loop over pairs inside the kernel: no row depends on another (warm starting reads
    the ids, and a pair's contacts must not change with what else the pass holds)."""
    shapes, table, ia, pa, qa, ib, pb, qb = _batch(8, m=60)
    whole = collide(table, ia, pa, qa, ib, pb, qb, margin=0.05)
    order = np.random.default_rng(1).permutation(len(ia))
    shuffled = collide(table, ia[order], pa[order], qa[order], ib[order], pb[order], qb[order],
                       margin=0.05)
    for name in ("normal", "points", "separation", "ids", "count", "distance"):
        assert np.array_equal(getattr(whole, name)[order], getattr(shuffled, name)), name


def test_separated_round_pairs_match_python_fcl():
    fcl = pytest.importorskip("fcl")
    shapes, table, ia, pa, qa, ib, pb, qb = _batch(11)
    keep = ib != 5                      # fcl's primitives: spheres, capsules, boxes
    man = collide(table, ia, pa, qa, ib, pb, qb, margin=10.0)
    ra, rb = quat.to_matrix(qa), quat.to_matrix(qb)

    def geom(shape):
        if isinstance(shape, Sphere):
            return fcl.Sphere(shape.radius)
        if isinstance(shape, Capsule):
            return fcl.Capsule(shape.radius, 2.0 * shape.half_height)
        return fcl.Box(*(2.0 * np.asarray(shape.half_extents)))

    checked = 0
    for i in np.flatnonzero(keep & (man.distance > 1e-3)):
        # fcl near the origin (its GJK is in single frames): B posed relative to A.
        oa = fcl.CollisionObject(geom(shapes[ia[i]]), fcl.Transform(ra[i], np.zeros(3)))
        ob = fcl.CollisionObject(geom(shapes[ib[i]]), fcl.Transform(rb[i], pb[i] - pa[i]))
        d = fcl.distance(oa, ob, fcl.DistanceRequest(), fcl.DistanceResult())
        assert man.distance[i] == pytest.approx(d, abs=1e-5), (i, ia[i], ib[i])
        checked += 1
    assert checked > 40
