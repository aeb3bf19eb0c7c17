"""Big convex hulls (64 and 128 vertices, the add-on's cap and twice it): the pruned SAT
(Gauss-map caps + pruned face query, engine/collision/sat.py) against the Qhull oracle, against the
exhaustive route, and the manifolds it feeds (4-point face contacts, stable ids)."""
import numpy as np
import oracle
import pytest

from engine.collision import sat
from engine.collision.clip import ID_FALLBACK
from engine.collision.narrowphase import collide
from engine.collision.sat import ABS_TOL, REL_TOL, polytope_sat
from engine.collision.shape_table import ShapeTable
from engine.core import quat
from engine.shapes.hull import ConvexHull


def rock(rng, nv, stretch=(1.0, 1.0, 1.0)):
    """A rock-like hull capped at nv vertices (noisy sphere, optionally stretched)."""
    p = rng.normal(size=(4000, 3))
    p /= np.linalg.norm(p, axis=1, keepdims=True)
    p *= 1.0 + 0.05 * rng.normal(size=(4000, 1))
    return ConvexHull(p * np.asarray(stretch), max_vertices=nv)


def flat_rock(rng, nv, z=-0.6):
    """A rock with a large flat face at height z (normal -z): the part of a noisy sphere above
    z plus a ring of points on the plane."""
    p = rng.normal(size=(4000, 3))
    p /= np.linalg.norm(p, axis=1, keepdims=True)
    p = p[p[:, 2] > z + 0.05]
    ang = np.linspace(0, 2 * np.pi, 24, endpoint=False)
    r = np.sqrt(1 - z * z)
    ring = np.stack((r * np.cos(ang), r * np.sin(ang), np.full(24, z)), axis=1)
    return ConvexHull(np.concatenate((p, ring)), max_vertices=nv)


def pairs(rng, table, m, spread):
    ids = np.zeros(m, dtype=np.int64)
    pa = rng.uniform(-3, 3, (m, 3))
    d = oracle.random_unit_vectors(rng, m)
    pb = pa + d * rng.uniform(*spread, (m, 1))
    return ids, pa, oracle.random_rotations(rng, m), ids + 1, pb, oracle.random_rotations(rng, m)


@pytest.mark.parametrize("nv", [64, 128])
def test_big_hull_depth_and_normal_match_oracle(nv):
    """Overlapping pairs: separation == the exact signed distance and (exact axis, no bias) the
    normal == the oracle's minimum translation direction; manifolds report the same distance."""
    rng = np.random.default_rng(nv)
    a, b = rock(rng, nv), rock(rng, nv, stretch=(1.3, 0.8, 0.6))
    assert len(a.vertices) == nv and len(b.vertices) == nv
    table = ShapeTable([a, b])
    m = 24 if nv == 64 else 12
    ia, pa, ra, ib, pb, rb = pairs(rng, table, m, (1.2, 1.9))
    res = polytope_sat(table, ia, pa, ra, ib, pb, rb, bias=False)
    biased = polytope_sat(table, ia, pa, quat.to_matrix(quat.from_matrix(ra)), ib, pb,
                          quat.to_matrix(quat.from_matrix(rb)), margin=0.02)
    man = collide(table, ia, pa, quat.from_matrix(ra), ib, pb, quat.from_matrix(rb), margin=0.02)
    checked = 0
    for k in range(m):
        s, n, _ = oracle.signed_distance_local(a.vertices, pa[k], ra[k], b.vertices, pb[k], rb[k])
        if s >= 0:
            assert res.separation[k] <= s + 1e-9  # apart: a lower bound
            continue
        checked += 1
        assert res.separation[k] == pytest.approx(s, abs=1e-9)
        assert man.distance[k] == pytest.approx(s, abs=1e-9)
        assert np.dot(res.normal[k], n) > 1 - 1e-9
        # Manifold: every gap is at least the chosen axis' support gap, which the face bias
        # lets fall below the exact value by at most its tolerance.
        assert man.count[k] >= 1
        deepest = man.separation[k, :man.count[k]].min()
        axis_sep = biased.axis_separation[k]
        assert deepest >= axis_sep - 1e-9
        assert axis_sep >= s - REL_TOL * abs(s) - ABS_TOL * 1.3 - 1e-9
    assert checked >= m // 2


@pytest.mark.parametrize("nv", [64, 128])
def test_pruned_route_equals_exhaustive_route(nv, monkeypatch):
    """Pruning is exact: the same separations, axes and manifolds as evaluating every face and
    every edge pair (sat.PRUNE_GAUSS = False), on deep, shallow and separated pairs."""
    rng = np.random.default_rng(100 + nv)
    table = ShapeTable([rock(rng, nv), rock(rng, nv, stretch=(1.5, 0.7, 0.9))])
    m = 300
    ia, pa, ra, ib, pb, rb = pairs(rng, table, m, (1.0, 2.6))
    qa, qb = quat.from_matrix(ra), quat.from_matrix(rb)
    out = {}
    for prune in (True, False):
        monkeypatch.setattr(sat, "PRUNE_GAUSS", prune)
        out[prune] = (polytope_sat(table, ia, pa, ra, ib, pb, rb, margin=0.05),
                      collide(table, ia, pa, qa, ib, pb, qb, margin=0.05))
    (s1, m1), (s0, m0) = out[True], out[False]
    assert (s0.separation < 0).sum() > 50 and (s0.separation > 0.05).sum() > 20
    near = s0.separation <= 0.05
    np.testing.assert_allclose(s1.separation[near], s0.separation[near], rtol=0, atol=1e-12)
    assert np.array_equal(s1.kind[near], s0.kind[near])
    assert np.array_equal(s1.index[near], s0.index[near])
    # Manifolds: identical wherever the SAT axis was used as is. (Where clipping along a face
    # axis finds nothing, the fallback uses the best surviving edge pair, and which edges
    # survive differs between the two prunings: both are valid single-point answers.)
    plain = (m0.axis_kind == s0.kind) & (m1.axis_kind == s1.kind)
    plain &= ((m0.ids[:, 0] >> 59) != ID_FALLBACK) & ((m1.ids[:, 0] >> 59) != ID_FALLBACK)
    assert plain.mean() > 0.8
    assert np.array_equal(m1.count[plain], m0.count[plain])
    assert np.array_equal(m1.ids[plain], m0.ids[plain])
    np.testing.assert_allclose(m1.points[plain], m0.points[plain], atol=1e-9)
    assert np.all((m1.count > 0) == (m0.count > 0))


def test_flat_faces_resting_give_four_points_with_stable_ids():
    """Two 64-vertex rocks resting flat face on flat face: a 4-point manifold at the (uniform)
    depth, inside both faces; ids unchanged under 1e-6 jitter of position and orientation."""
    rng = np.random.default_rng(5)
    a = flat_rock(rng, 64)
    table = ShapeTable([a])
    flip = quat.from_axis_angle([1.0, 0.0, 0.0], np.pi)   # B upside down: flat face up
    spin = quat.from_axis_angle([0.0, 0.0, 1.0], 0.4)
    qb0 = np.array([1.0, 0, 0, 0])
    qa0 = quat.multiply(spin, flip)
    # A's flat face (after the flip) is at z = +0.6 in world; B's flat face at z = pb_z - 0.6.
    depth = 0.003
    pb0 = np.array([0.15, -0.1, 1.2 - depth])

    def run(pa, qa, pb, qb):
        return collide(table, [0], np.array([pa]), np.array([qa]), [0], np.array([pb]),
                       np.array([qb]), margin=0.01)

    base = run([0.0, 0, 0], qa0, pb0, qb0)
    assert base.count[0] == 4
    np.testing.assert_allclose(base.normal[0], [0, 0, 1], atol=1e-9)
    np.testing.assert_allclose(base.separation[0], -depth, atol=1e-9)
    # Every point lies inside both flat discs (radius 0.8 about each body's axis).
    p = base.points[0]
    assert np.all(np.hypot(p[:, 0], p[:, 1]) < 0.8 + 1e-9)
    assert np.all(np.hypot(p[:, 0] - pb0[0], p[:, 1] - pb0[1]) < 0.8 + 1e-9)
    for _ in range(20):
        dq = quat.from_axis_angle(rng.normal(size=3), 1e-6)
        man = run(rng.normal(size=3) * 1e-6, quat.multiply(dq, qa0),
                  pb0 + rng.normal(size=3) * 1e-6, qb0)
        assert man.count[0] == 4
        for q, i in zip(man.points[0], man.ids[0]):
            j = np.argmin(np.linalg.norm(base.points[0] - q, axis=1))
            assert np.linalg.norm(base.points[0, j] - q) < 1e-4
            assert base.ids[0, j] == i


def test_big_hull_ids_stable_on_random_resting_pairs():
    """Random 64-vertex rock pairs within 2 mm of touching: manifolds keep their ids under 1e-6
    jitter whenever the contact features stay the same (compared point by point)."""
    rng = np.random.default_rng(9)
    table = ShapeTable([rock(rng, 64), rock(rng, 64, stretch=(1.2, 1.0, 0.7))])
    m = 60
    ia = np.zeros(m, dtype=np.int64)
    ib = ia + 1
    ra, rb = oracle.random_rotations(rng, m), oracle.random_rotations(rng, m)
    # Place B along u at the support gap (apart or overlapping), then move it along the oracle's
    # normal to a signed distance of -2..0 mm.
    u = oracle.random_unit_vectors(rng, m)
    va = np.einsum("vi,mji->mvj", table.points[0, :64], ra)
    vb = np.einsum("vi,mji->mvj", table.points[1, :64], rb)
    gap = np.einsum("mvi,mi->mv", va, u).max(1) + np.einsum("mvi,mi->mv", vb, -u).max(1)
    pa = np.zeros((m, 3))
    pb = u * gap[:, None]
    target = -rng.uniform(0, 0.002, m)
    for k in range(m):
        s, n, _ = oracle.signed_distance_local(table.points[0, :64], pa[k], ra[k],
                                               table.points[1, :64], pb[k], rb[k])
        pb[k] += (target[k] - s) * n
    qa, qb = quat.from_matrix(ra), quat.from_matrix(rb)
    base = collide(table, ia, pa, qa, ib, pb, qb, margin=0.01)
    assert (base.count > 0).all()
    half = rng.normal(size=(m, 3))
    half *= 0.5e-6 / np.linalg.norm(half, axis=1, keepdims=True)   # 1e-6 rad turns
    dq = quat.normalize(np.concatenate((np.ones((m, 1)), half), axis=1))
    man = collide(table, ia, pa + rng.normal(size=(m, 3)) * 1e-6, quat.multiply(dq, qa), ib,
                  pb + rng.normal(size=(m, 3)) * 1e-6, qb, margin=0.01)
    same = (man.axis_kind == base.axis_kind) & np.all(man.axis_index == base.axis_index, axis=1)
    assert same.mean() > 0.9
    for k in np.nonzero(same)[0]:
        for q, i in zip(man.points[k, :man.count[k]], man.ids[k, :man.count[k]]):
            d = np.linalg.norm(base.points[k, :base.count[k]] - q, axis=1)
            j = np.argmin(d)
            if d[j] < 1e-4:
                assert base.ids[k, j] == i


def test_pruned_route_exact_on_small_and_degenerate_hulls(monkeypatch):
    """The Gauss-map pruning on small, sliver and box-like hulls, mixed sizes in one batch:
    the same answer as the exhaustive route."""
    from test_sat import random_shapes
    rng = np.random.default_rng(21)
    shapes = random_shapes(rng, 12) + [rock(rng, 64)]
    table = ShapeTable(shapes)
    m = 1500
    ia = rng.integers(0, len(shapes), m)
    ib = rng.integers(0, len(shapes), m)
    pa = rng.uniform(-2, 2, (m, 3))
    pb = pa + rng.uniform(-1.2, 1.2, (m, 3))
    ra, rb = oracle.random_rotations(rng, m), oracle.random_rotations(rng, m)
    monkeypatch.setattr(sat, "PRUNE_GAUSS", False)
    ref = polytope_sat(table, ia, pa, ra, ib, pb, rb)
    monkeypatch.setattr(sat, "PRUNE_GAUSS", True)
    res = polytope_sat(table, ia, pa, ra, ib, pb, rb)
    assert (ref.separation < 0).sum() > 300
    np.testing.assert_allclose(res.separation, ref.separation, rtol=0, atol=1e-12)
    np.testing.assert_allclose(res.face_a, ref.face_a, rtol=0, atol=1e-12)
    np.testing.assert_allclose(res.face_b, ref.face_b, rtol=0, atol=1e-12)
    assert np.array_equal(res.kind, ref.kind) and np.array_equal(res.index, ref.index)
