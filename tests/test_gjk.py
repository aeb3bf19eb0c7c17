"""Batched GJK against independent truth: the brute-force hull oracle and analytic distances."""
import numpy as np
import pytest
from oracle import (
    box_points,
    closest_point_triangle,
    pad_points,
    random_hull_points,
    random_pair_batch,
    random_rotations,
    segment_segment_closest,
    signed_distance_local,
    transform_points,
)
from scipy.spatial import ConvexHull

from engine.collision.gjk import closest_on_simplex, gjk, gjk_intersect

I3 = np.eye(3)


_pad = pad_points


def _random_batch(rng, m, spread=1.5, vmin=4, vmax=24):
    return random_pair_batch(rng, m, offset=spread, vmin=vmin, vmax=vmax)


def _hull_violation(point, pts):
    """Signed distance of a point to the hull of pts (<= 0 inside, ~0 on the surface)."""
    eq = ConvexHull(pts).equations
    return float(np.max(eq[:, :3] @ point + eq[:, 3]))


def _check_against_oracle(shapes_a, shapes_b, pos_a, rot_a, pos_b, rot_b, ra, rb, tol):
    res = gjk(_pad(shapes_a), ra, pos_a, rot_a, _pad(shapes_b), rb, pos_b, rot_b)
    m = len(shapes_a)
    for i in range(m):
        scale = max(np.ptp(shapes_a[i], axis=0).max(), np.ptp(shapes_b[i], axis=0).max(), ra[i], rb[i])
        s, n, _ = signed_distance_local(shapes_a[i], pos_a[i], rot_a[i], shapes_b[i], pos_b[i],
                                        rot_b[i], ra[i], rb[i])
        core = s + ra[i] + rb[i]
        expected = max(core, 0.0) - ra[i] - rb[i]
        assert abs(res.distance[i] - expected) <= tol * scale, (i, res.distance[i], expected)
        if core > 1e-6 * scale:
            assert not res.overlap[i]
            assert np.allclose(res.normal[i], n, atol=1e-6), (i, res.normal[i], n)
        elif core < -1e-6 * scale:
            assert res.overlap[i]
            assert np.all(res.normal[i] == 0)
    # Geometric consistency of the witnesses, for all pairs at once.
    sep = ~res.overlap
    gap = res.point_b - res.point_a
    assert np.allclose(gap[sep], res.distance[sep, None] * res.normal[sep], atol=tol * 10)
    assert np.allclose(np.linalg.norm(res.normal[sep], axis=1), 1.0)
    return res


def test_random_hulls_against_oracle():
    rng = np.random.default_rng(12345)
    m = 1500
    sa, sb, pa, qa, pb, qb = _random_batch(rng, m)
    zero = np.zeros(m)
    res = _check_against_oracle(sa, sb, pa, qa, pb, qb, zero, zero, 1e-9)
    # The batch must contain both separated and overlapping pairs to mean anything.
    assert 0.2 * m < res.overlap.sum() < 0.8 * m
    assert res.iterations.max() < 64
    # Closest core points lie on the surfaces of their own shapes (not just anywhere in the hull).
    for i in np.nonzero(~res.overlap)[0][:300]:
        wa = transform_points(sa[i], pa[i], qa[i])
        wb = transform_points(sb[i], pb[i], qb[i])
        assert abs(_hull_violation(res.point_a[i], wa)) < 1e-9
        assert abs(_hull_violation(res.point_b[i], wb)) < 1e-9


def test_random_hulls_with_radii_against_oracle():
    rng = np.random.default_rng(7)
    m = 600
    sa, sb, pa, qa, pb, qb = _random_batch(rng, m, spread=2.0)
    ra = rng.uniform(0.0, 0.5, m)
    rb = rng.uniform(0.0, 0.5, m)
    res = _check_against_oracle(sa, sb, pa, qa, pb, qb, ra, rb, 1e-9)
    # Swollen-but-not-core overlap exists in the batch: distance < 0 without core overlap.
    assert np.any(~res.overlap & (res.distance < 0))
    # Swollen witness points are on the swollen surfaces: exactly ra from A's core hull.
    for i in np.nonzero(~res.overlap)[0][:200]:
        wa = transform_points(sa[i], pa[i], qa[i])
        s, _, _ = signed_distance_local(wa, np.zeros(3), I3, res.point_a[i][None], np.zeros(3), I3)
        assert abs(s - ra[i]) < 1e-9


def test_far_from_origin_10km():
    rng = np.random.default_rng(99)
    m = 400
    sa, sb, pa, qa, pb, qb = _random_batch(rng, m)
    shift = np.array([1.0e4, -1.0e4, 0.7e4])
    near = gjk(_pad(sa), 0.0, pa, qa, _pad(sb), 0.0, pb, qb)
    far = gjk(_pad(sa), 0.0, pa + shift, qa, _pad(sb), 0.0, pb + shift, qb)
    for i in range(m):
        s, _, _ = signed_distance_local(sa[i], pa[i], qa[i], sb[i], pb[i], qb[i])
        assert abs(far.distance[i] - max(s, 0.0)) < 1e-8
    assert np.allclose(far.point_a - shift, near.point_a, atol=1e-8)
    assert np.array_equal(far.overlap, near.overlap)


def test_spheres_analytic():
    rng = np.random.default_rng(3)
    m = 500
    ca, cb = rng.uniform(-2, 2, (m, 3)), rng.uniform(-2, 2, (m, 3))
    ra, rb = rng.uniform(0.1, 1, m), rng.uniform(0.1, 1, m)
    pt = np.zeros((m, 1, 3))
    res = gjk(pt, ra, ca, random_rotations(rng, m), pt, rb, cb, random_rotations(rng, m))
    d = np.linalg.norm(cb - ca, axis=1)
    assert np.allclose(res.distance, d - ra - rb, atol=1e-12)
    n = (cb - ca) / d[:, None]
    assert np.allclose(res.normal, n, atol=1e-12)
    assert np.allclose(res.point_a, ca + ra[:, None] * n, atol=1e-12)
    assert np.allclose(res.point_b, cb - rb[:, None] * n, atol=1e-12)


def test_concentric_spheres_overlap_flagged():
    res = gjk(np.zeros((1, 1, 3)), 0.5, [[1.0, 2.0, 3.0]], I3[None], np.zeros((1, 1, 3)), 0.25,
              [[1.0, 2.0, 3.0]], I3[None])
    assert res.overlap[0] and res.core_distance[0] == 0.0
    assert res.distance[0] == pytest.approx(-0.75)
    assert np.all(res.normal[0] == 0)


def _capsule_world(half, pos, rot):
    return transform_points(np.array([[0, 0, -half], [0, 0, half]]), pos, rot)


def test_capsules_analytic():
    rng = np.random.default_rng(5)
    m = 400
    ha, hb = rng.uniform(0.0, 1.5, m), rng.uniform(0.0, 1.5, m)
    ra, rb = rng.uniform(0.05, 0.4, m), rng.uniform(0.05, 0.4, m)
    pa, pb = rng.uniform(-1.5, 1.5, (m, 3)), rng.uniform(-1.5, 1.5, (m, 3))
    qa, qb = random_rotations(rng, m), random_rotations(rng, m)
    seg_a = np.stack([np.array([[0, 0, -h], [0, 0, h]]) for h in ha])
    seg_b = np.stack([np.array([[0, 0, -h], [0, 0, h]]) for h in hb])
    res = gjk(seg_a, ra, pa, qa, seg_b, rb, pb, qb)
    for i in range(m):
        a = _capsule_world(ha[i], pa[i], qa[i])
        b = _capsule_world(hb[i], pb[i], qb[i])
        c1, c2 = segment_segment_closest(a[0], a[1], b[0], b[1])
        d = np.linalg.norm(c2 - c1)
        assert res.distance[i] == pytest.approx(d - ra[i] - rb[i], abs=1e-9)
        if not res.overlap[i] and d > 1e-6:
            assert np.allclose(res.core_point_b[i] - res.core_point_a[i], c2 - c1, atol=1e-6)


def test_sphere_vs_box_analytic():
    rng = np.random.default_rng(8)
    m = 500
    h = np.array([0.5, 1.0, 0.25])
    c = rng.uniform(-2.5, 2.5, (m, 3))  # sphere centres in the box's frame (box at origin)
    r = rng.uniform(0.05, 0.5, m)
    res = gjk(box_points(h)[None], 0.0, np.zeros(3), I3, np.zeros((m, 1, 3)), r, c, I3)
    outside = np.linalg.norm(np.maximum(np.abs(c) - h, 0.0), axis=1)  # exact box distance
    inside = np.all(np.abs(c) < h, axis=1)
    assert np.allclose(res.distance[~inside], outside[~inside] - r[~inside], atol=1e-12)
    assert np.all(res.overlap[inside])
    assert np.allclose(res.distance[inside], -r[inside])


def test_nasty_configurations():
    box = box_points(0.5)
    r45z = np.array([[np.sqrt(0.5), -np.sqrt(0.5), 0], [np.sqrt(0.5), np.sqrt(0.5), 0], [0, 0, 1]])
    r45x = np.array([[1, 0, 0], [0, np.sqrt(0.5), -np.sqrt(0.5)], [0, np.sqrt(0.5), np.sqrt(0.5)]])
    s2 = np.sqrt(0.5)
    cases = [
        # (A points, pos_a, rot_a, B points, pos_b, rot_b, expected distance, expect overlap)
        (box, [0, 0, 0], I3, box, [0, 0, 1.0], I3, 0.0, True),            # touching faces
        (box, [0, 0, 0], I3, box, [0.3, 0.2, 1.25], I3, 0.25, False),      # coplanar, offset faces
        (box, [0, 0, 0], I3, box, [0, 0, 0], I3, 0.0, True),               # identical, same pose
        (box, [0, 0, 0], r45z, box, [0, 0, 0.5 + s2 + 0.1], r45x, 0.1, False),   # edge on edge (crossed)
        (box, [0, 0, 0], I3, box, [1.3, 0, 0], I3, 0.3, False),            # face-face parallel
        (box, [0, 0, 0], I3, box_points(0.1), [0.3, 0.3, 0.7], I3, 0.1, False),  # small box over face
    ]
    # Vertex on face: B is a cube standing on a corner (body diagonal along z) above A's top face.
    diag = np.array([1.0, 1.0, 1.0]) / np.sqrt(3)
    axis = np.cross(diag, [0, 0, 1.0])
    ang = np.arccos(diag[2])
    k = axis / np.linalg.norm(axis)
    kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    rv = I3 + np.sin(ang) * kx + (1 - np.cos(ang)) * kx @ kx
    corner = 0.5 * np.sqrt(3)
    cases.append((box, [0, 0, 0], I3, box, [0.1, -0.2, 0.5 + corner + 0.05], rv, 0.05, False))
    cases.append((box, [0, 0, 0], I3, box, [0.1, -0.2, 0.5 + corner], rv, 0.0, True))
    # Tiny vs huge: a 1 mm cube 0.5 mm above a 100 m cube's face, and touching it.
    big = box_points(50.0)
    tiny = box_points(0.0005)
    cases.append((big, [0, 0, 0], I3, tiny, [3.0, -7.0, 50.001], I3, 0.0005, False))
    cases.append((tiny, [3.0, -7.0, 50.001], I3, big, [0, 0, 0], I3, 0.0005, False))
    # Long slivers: 100 m x 1 cm rods crossing at right angles with a 2 mm gap.
    rod = box_points([50.0, 0.005, 0.005])
    rz90 = np.array([[0, -1.0, 0], [1.0, 0, 0], [0, 0, 1]])
    cases.append((rod, [0, 0, 0], I3, rod, [10.0, 3.0, 0.012], rz90, 0.002, False))
    cases.append((rod, [0, 0, 0], I3, rod, [10.0, 3.0, 0.009], rz90, 0.0, True))
    for shift in (np.zeros(3), np.array([1e4, 1e4, -1e4])):
        for A, pa, qa, B, pb, qb, d, ov in cases:
            res = gjk(np.asarray(A)[None], 0.0, np.add(pa, shift)[None], np.asarray(qa)[None],
                      np.asarray(B)[None], 0.0, np.add(pb, shift)[None], np.asarray(qb)[None])
            scale = max(np.ptp(A, axis=0).max(), np.ptp(B, axis=0).max())
            assert res.distance[0] == pytest.approx(d, abs=1e-9 * max(scale, 1.0)), (d, res.distance[0])
            assert bool(res.overlap[0]) == ov
            # The oracle agrees on the truth of the case itself.
            s, _, _ = signed_distance_local(A, pa, qa, B, pb, qb)
            assert max(s, 0.0) == pytest.approx(d, abs=1e-9 * max(scale, 1.0))


def test_padding_and_point_order_do_not_matter():
    rng = np.random.default_rng(11)
    m = 200
    sa, sb, pa, qa, pb, qb = _random_batch(rng, m, vmin=6, vmax=10)
    base = gjk(_pad(sa), 0.1, pa, qa, _pad(sb), 0.2, pb, qb)
    shuffled_a = [p[rng.permutation(len(p))] for p in sa]
    padded_b = _pad(sb + [np.zeros((40, 3))])[:m]  # wider padding (repeats of point 0)
    other = gjk(_pad(shuffled_a), 0.1, pa, qa, padded_b, 0.2, pb, qb)
    assert np.allclose(base.distance, other.distance, atol=1e-10)
    assert np.array_equal(base.overlap, other.overlap)


def test_simplex_outputs_are_consistent():
    rng = np.random.default_rng(21)
    m = 300
    sa, sb, pa, qa, pb, qb = _random_batch(rng, m)
    res = gjk(_pad(sa), 0.0, pa, qa, _pad(sb), 0.0, pb, qb)
    assert np.all((res.simplex_size >= 1) & (res.simplex_size <= 4))
    assert np.all(res.simplex_size[res.overlap & (res.simplex_size < 4)] >= 1)
    assert np.allclose(res.simplex, res.simplex_b - res.simplex_a, atol=1e-12)
    for i in range(m):
        k = res.simplex_size[i]
        wa = transform_points(sa[i], pa[i], qa[i])
        wb = transform_points(sb[i], pb[i], qb[i])
        # Every simplex point is made of actual vertices of A and B.
        assert np.all(np.min(np.linalg.norm(res.simplex_a[i, :k, None] - wa[None], axis=2), axis=1) < 1e-9)
        assert np.all(np.min(np.linalg.norm(res.simplex_b[i, :k, None] - wb[None], axis=2), axis=1) < 1e-9)
        assert np.all(res.simplex[i, k:] == 0)
        if res.simplex_size[i] == 4:
            assert res.overlap[i]


def test_gjk_intersect_agrees_with_distance():
    rng = np.random.default_rng(31)
    m = 1000
    sa, sb, pa, qa, pb, qb = _random_batch(rng, m, spread=2.0)
    ra, rb = rng.uniform(0, 0.4, m), rng.uniform(0, 0.4, m)
    A, B = _pad(sa), _pad(sb)
    dist = gjk(A, ra, pa, qa, B, rb, pb, qb)
    hit = gjk_intersect(A, ra, pa, qa, B, rb, pb, qb)
    clear = np.abs(dist.distance) > 1e-7
    assert np.array_equal(hit.overlap[clear], dist.distance[clear] <= 0)
    assert 0.2 * m < hit.overlap.sum() < 0.8 * m
    # The early-out makes separated pairs cheaper on average.
    assert hit.iterations[~hit.overlap].sum() <= dist.iterations[~hit.overlap].sum()


def _brute_closest_on_hull(pts):
    """Closest point of conv(pts) (<= 4 points) to the origin by brute force over sub-faces."""
    best = pts[np.argmin(np.sum(pts * pts, axis=1))]
    n = len(pts)
    from itertools import combinations
    for i, j in combinations(range(n), 2):
        a, b = pts[i], pts[j]
        e = b - a
        t = np.clip(-a @ e / (e @ e), 0, 1) if e @ e > 0 else 0.0
        c = a + t * e
        if c @ c < best @ best:
            best = c
    for i, j, k in combinations(range(n), 3):
        c = closest_point_triangle(np.zeros(3), pts[i], pts[j], pts[k])
        if c @ c < best @ best:
            best = c
    if n == 4:
        eq = ConvexHull(pts).equations if abs(np.linalg.det(pts[1:] - pts[0])) > 1e-12 else None
        if eq is not None and np.all(eq[:, 3] < 0):
            best = np.zeros(3)
    return best


def test_subsimplex_solver_all_voronoi_regions():
    """The sub-simplex solver alone, on random tetrahedra/triangles/segments around the origin."""
    rng = np.random.default_rng(41)
    k = 3000
    S = rng.normal(size=(k, 4, 3)) + rng.normal(scale=1.5, size=(k, 1, 3))
    sizes = rng.integers(1, 5, k)
    used = np.arange(4)[None, :] < sizes[:, None]
    lam, v = closest_on_simplex(S, used)
    assert np.allclose(lam.sum(axis=1), 1.0)
    assert np.all(lam >= 0) and np.all(lam[~used] == 0)
    assert np.allclose(np.einsum("kj,kji->ki", lam, S), v, atol=1e-12)
    for i in range(k):
        truth = _brute_closest_on_hull(S[i, :sizes[i]])
        assert np.linalg.norm(v[i] - truth) < 1e-9, (i, v[i], truth)


def test_fcl_cross_check():
    fcl = pytest.importorskip("fcl")
    rng = np.random.default_rng(51)
    for _ in range(100):
        pa = random_hull_points(rng, 12, stretch=rng.uniform(0.3, 1.5, 3))
        pb = random_hull_points(rng, 12, stretch=rng.uniform(0.3, 1.5, 3))
        ta, tb = rng.uniform(-2, 2, 3), rng.uniform(-2, 2, 3) + [2.5, 0, 0]
        qa, qb = random_rotations(rng, 2)
        res = gjk(pa[None], 0.0, ta[None], qa[None], pb[None], 0.0, tb[None], qb[None])
        objs = []
        for p, t, q in ((pa, ta, qa), (pb, tb, qb)):
            h = ConvexHull(p)
            faces = np.hstack([np.full((len(h.simplices), 1), 3), h.simplices]).ravel()
            geom = fcl.Convex(p, len(h.simplices), faces)
            objs.append(fcl.CollisionObject(geom, fcl.Transform(q, t)))
        out = fcl.DistanceResult()
        d = fcl.distance(objs[0], objs[1], fcl.DistanceRequest(enable_nearest_points=True), out)
        if d > 1e-3:
            assert res.distance[0] == pytest.approx(d, abs=1e-5)
