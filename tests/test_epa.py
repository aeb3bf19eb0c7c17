"""Batched EPA against independent truth: brute-force hull oracle, analytic boxes/spheres/capsules."""
import numpy as np
import pytest
from oracle import (
    box_points,
    minkowski_difference,
    pad_points,
    random_hull_points,
    random_pair_batch,
    random_rotations,
    signed_distance_local,
    transform_points,
)
from scipy.spatial import ConvexHull

from engine.collision.epa import epa

I3 = np.eye(3)


def _surface_violation(point, pts):
    eq = ConvexHull(pts).equations
    return float(np.max(eq[:, :3] @ point + eq[:, 3]))


def _check_batch(sa, sb, pa, qa, pb, qb, ra, rb, tol=1e-9):
    res = epa(pad_points(sa), ra, pa, qa, pad_points(sb), rb, pb, qb)
    for i in range(len(sa)):
        s, _, _ = signed_distance_local(sa[i], pa[i], qa[i], sb[i], pb[i], qb[i], ra[i], rb[i])
        assert res.depth[i] == pytest.approx(-s, abs=tol), i
        if res.overlap[i]:
            # The normal achieves the depth: D's support along the outward direction -normal
            # equals the core depth (a brute-force check that does not need a unique normal).
            wa = transform_points(sa[i], pa[i], qa[i])
            wb = transform_points(sb[i], pb[i], qb[i])
            d = minkowski_difference(wa, wb)
            assert np.max(d @ -res.normal[i]) == pytest.approx(res.core_depth[i], abs=tol), i
    assert np.allclose(np.linalg.norm(res.normal, axis=1), 1.0)
    assert np.allclose(res.point_b - res.point_a, -res.depth[:, None] * res.normal, atol=10 * tol)
    assert np.all(res.converged)
    return res


def test_random_hulls_against_oracle():
    rng = np.random.default_rng(2024)
    m = 1200
    sa, sb, pa, qa, pb, qb = random_pair_batch(rng, m, offset=1.0)
    zero = np.zeros(m)
    res = _check_batch(sa, sb, pa, qa, pb, qb, zero, zero)
    assert res.overlap.sum() > 0.6 * m
    # Witness points lie on the surfaces of their own shapes.
    for i in np.nonzero(res.overlap)[0][:300]:
        assert abs(_surface_violation(res.point_a[i], transform_points(sa[i], pa[i], qa[i]))) < 1e-9
        assert abs(_surface_violation(res.point_b[i], transform_points(sb[i], pb[i], qb[i]))) < 1e-9


def test_random_hulls_with_radii_and_far_away():
    rng = np.random.default_rng(77)
    m = 500
    sa, sb, pa, qa, pb, qb = random_pair_batch(rng, m, offset=1.0)
    ra, rb = rng.uniform(0, 0.3, m), rng.uniform(0, 0.3, m)
    near = _check_batch(sa, sb, pa, qa, pb, qb, ra, rb)
    shift = np.array([-1e4, 1e4, 1e4])
    far = epa(pad_points(sa), ra, pa + shift, qa, pad_points(sb), rb, pb + shift, qb)
    assert np.allclose(far.depth, near.depth, atol=1e-8)
    assert np.allclose(far.point_a - shift, near.point_a, atol=1e-8)


def test_capsule_and_sphere_cores_against_hulls():
    rng = np.random.default_rng(3)
    m = 400
    hulls = [random_hull_points(rng, int(rng.integers(4, 20)), stretch=rng.uniform(0.4, 1.5, 3))
             for _ in range(m)]
    half = rng.uniform(0.0, 1.0, m)  # half == 0: a sphere core
    segs = [np.array([[0, 0, -h], [0, 0, h]]) for h in half]
    pa = rng.uniform(-1, 1, (m, 3))
    pb = pa + rng.uniform(-0.8, 0.8, (m, 3))
    qa, qb = random_rotations(rng, m), random_rotations(rng, m)
    ra, rb = np.zeros(m), rng.uniform(0.05, 0.5, m)
    res = _check_batch(hulls, segs, pa, qa, pb, qb, ra, rb)
    assert res.overlap.sum() > m // 3


def test_axis_aligned_boxes_analytic():
    rng = np.random.default_rng(9)
    m = 500
    ha, hb = rng.uniform(0.1, 1.0, (m, 3)), rng.uniform(0.1, 1.0, (m, 3))
    pb = rng.uniform(-1, 1, (m, 3)) * (ha + hb)  # centres close enough to overlap often
    res = epa(np.stack([box_points(h) for h in ha]), 0.0, np.zeros(3), I3,
              np.stack([box_points(h) for h in hb]), 0.0, pb, I3)
    # Minkowski difference of two aligned boxes is a box: depth = least overlap over the axes.
    overlap_axes = ha + hb - np.abs(pb)
    inside = np.all(overlap_axes > 0, axis=1)
    assert inside.sum() > 100
    assert np.allclose(res.depth[inside], overlap_axes[inside].min(axis=1), atol=1e-12)
    axis = np.argmin(overlap_axes, axis=1)
    sign = np.sign(pb[np.arange(m), axis])
    expect_n = np.eye(3)[axis] * sign[:, None]
    margin = np.sort(overlap_axes, axis=1)
    unique = inside & (margin[:, 1] - margin[:, 0] > 1e-6)  # the normal is unique
    assert np.allclose(res.normal[unique], expect_n[unique], atol=1e-9)


def test_sphere_and_capsule_analytic():
    # Sphere centre inside a box: depth = r + distance to the nearest face.
    rng = np.random.default_rng(4)
    m = 300
    h = np.array([0.6, 0.4, 0.9])
    c = rng.uniform(-1, 1, (m, 3)) * h * 0.95
    r = rng.uniform(0.01, 0.3, m)
    res = epa(box_points(h)[None], 0.0, np.zeros(3), I3, np.zeros((m, 1, 3)), r, c, I3)
    assert np.allclose(res.depth, r + np.min(h - np.abs(c), axis=1), atol=1e-12)
    # Overlapping spheres (cores separate): depth = ra + rb - centre distance.
    ca, cb = rng.uniform(-0.3, 0.3, (m, 3)), rng.uniform(-0.3, 0.3, (m, 3))
    ra, rb = rng.uniform(0.3, 0.6, m), rng.uniform(0.3, 0.6, m)
    res = epa(np.zeros((m, 1, 3)), ra, ca, I3, np.zeros((m, 1, 3)), rb, cb, I3)
    assert np.allclose(res.depth, ra + rb - np.linalg.norm(cb - ca, axis=1), atol=1e-12)
    # Crossing capsule cores (segments intersect): the depth is exactly ra + rb.
    seg = np.array([[[0, 0, -1.0], [0, 0, 1.0]]])
    qb = random_rotations(rng, m)
    res = epa(seg, ra, np.zeros(3), I3, seg, rb, np.zeros(3), qb)
    assert np.all(res.overlap)
    assert np.allclose(res.depth, ra + rb)
    # Concentric spheres.
    res = epa(np.zeros((1, 1, 3)), 0.5, np.ones(3), I3, np.zeros((1, 1, 3)), 0.25, np.ones(3), I3)
    assert res.depth[0] == pytest.approx(0.75) and np.linalg.norm(res.normal[0]) == pytest.approx(1.0)


def test_nasty_configurations():
    rng = np.random.default_rng(6)
    box = box_points(0.5)
    cases = [
        (box, I3, box, [0, 0, 0], I3, 1.0),                      # identical, same pose
        (box, I3, box, [0, 0, 1.0], I3, 0.0),                    # touching faces
        (box, I3, box, [0.2, 0.3, 0.9], I3, 0.1),                # coplanar side faces
        (box_points(50.0), I3, box_points(0.0005), [3, 4, 49.9998], I3, 0.0007),  # tiny in huge
        (box_points([50, .005, .005]), I3, box_points([50, .005, .005]), [3, 4, 0.003],
         np.array([[0, -1.0, 0], [1.0, 0, 0], [0, 0, 1]]), 0.007),               # crossed slivers
    ]
    for shift in (np.zeros(3), np.array([1e4, -1e4, 1e4])):
        for A, qa, B, pb, qb, depth in cases:
            q = random_rotations(rng, 1)[0]  # rotate the whole configuration: depth is invariant
            res = epa(A[None], 0.0, shift[None], (q @ qa)[None], B[None], 0.0,
                      (shift + q @ np.asarray(pb, float))[None], (q @ qb)[None])
            assert res.depth[0] == pytest.approx(depth, abs=1e-9 * max(1.0, np.ptp(A))), (depth, res.depth)
            assert res.converged[0]


def test_polytope_output_is_a_closed_outward_hull_of_points_of_d():
    rng = np.random.default_rng(12)
    m = 200
    sa, sb, pa, qa, pb, qb = random_pair_batch(rng, m, offset=0.6)
    res = epa(pad_points(sa), 0.0, pa, qa, pad_points(sb), 0.0, pb, qb)
    checked = 0
    for i in np.nonzero(res.overlap & (res.polytope_num_faces > 0))[0]:
        nv, nf = res.polytope_num_vertices[i], res.polytope_num_faces[i]
        faces = res.polytope_faces[i, :nf]
        verts = res.polytope_vertices[i]
        assert np.all(res.polytope_faces[i, nf:] == -1)
        assert np.all((faces >= 0) & (faces < nv))
        # Closed: every directed edge has its reverse exactly once.
        edges = {(int(f[j]), int(f[(j + 1) % 3])) for f in faces for j in range(3)}
        assert len(edges) == 3 * nf and all((b, a) in edges for a, b in edges)
        # Outward with the origin inside: each face plane has the origin behind it.
        a, b, c = verts[faces[:, 0]], verts[faces[:, 1]], verts[faces[:, 2]]
        n = np.cross(b - a, c - a)
        assert np.all(np.einsum("ij,ij->i", n, a) >= -1e-9)
        # Vertices are points of D = B - A (differences of actual vertices, world orientation).
        d = minkowski_difference(transform_points(sa[i], pa[i], qa[i]),
                                 transform_points(sb[i], pb[i], qb[i]))
        used = np.unique(faces)
        gap = np.min(np.linalg.norm(verts[used][:, None] - d[None], axis=2), axis=1)
        assert np.all(gap < 1e-9)
        checked += 1
    assert checked > m // 2


def test_vertex_cap_gives_lower_bound_and_flags_it():
    rng = np.random.default_rng(13)
    m = 60
    # Many-vertex round hulls need many EPA steps; a tiny cap must stop them and say so.
    sa = [random_hull_points(rng, 200) for _ in range(m)]
    sb = [random_hull_points(rng, 200) for _ in range(m)]
    pa = np.zeros((m, 3))
    pb = rng.uniform(-0.5, 0.5, (m, 3))
    qa, qb = random_rotations(rng, m), random_rotations(rng, m)
    capped = epa(pad_points(sa), 0.0, pa, qa, pad_points(sb), 0.0, pb, qb, max_vertices=8)
    full = epa(pad_points(sa), 0.0, pa, qa, pad_points(sb), 0.0, pb, qb, max_vertices=256)
    assert np.any(~capped.converged)
    assert np.all(capped.depth <= full.depth + 1e-12)
    for i in range(0, m, 6):
        s, _, _ = signed_distance_local(sa[i], pa[i], qa[i], sb[i], pb[i], qb[i])
        if full.converged[i]:
            assert full.depth[i] == pytest.approx(-s, abs=1e-9)
    assert full.converged.mean() > 0.9


def test_start_from_one_two_three_point_simplices():
    """EPA must grow GJK simplices of 1, 2 and 3 points (origin on a vertex/edge/triangle) into a
    full polytope. Concentric, centrally symmetric boxes give D points p and -p (opposite
    vertices), so crafted simplices {0}, {p, -p} and {p, -p, q} contain the origin."""
    from engine.collision.epa import _run_epa
    rng = np.random.default_rng(29)
    m = 120
    ha, hb = rng.uniform(0.2, 1.0, (m, 3)), rng.uniform(0.2, 1.0, (m, 3))
    A = np.stack([box_points(h) for h in ha])
    rb = random_rotations(rng, m)
    B = np.einsum("mij,mvj->mvi", rb, np.stack([box_points(h) for h in hb]))  # in A's frame
    B_shared = B.copy()
    B_shared += (A[:, 0] - B[:, 0])[:, None]  # vertex 0 of both coincides: D has a point at 0
    S = np.zeros((m, 4, 3))
    SA = np.zeros((m, 4, 3))
    SB = np.zeros((m, 4, 3))
    size = rng.integers(1, 4, m)
    r = np.arange(m)
    i, j = rng.integers(0, 8, m), rng.integers(0, 8, m)
    k, l2 = rng.integers(0, 8, m), rng.integers(0, 8, m)
    Bs = np.where((size == 1)[:, None, None], B_shared, B)
    # Slot 0: b_i - a_j (or 0 for size 1), slot 1: the opposite vertices (7 - index), slot 2: any.
    # Every fourth triangle is degenerate on purpose (third point = first point).
    k = np.where(r % 4 == 0, i, k)
    l2 = np.where(r % 4 == 0, j, l2)
    idx = [(np.where(size == 1, 0, i), np.where(size == 1, 0, j)), (7 - i, 7 - j), (k, l2)]
    for s, (bi, aj) in enumerate(idx):
        SA[:, s], SB[:, s] = A[r, aj], Bs[r, bi]
    S = SB - SA
    scale = np.maximum(np.linalg.norm(A, axis=2).max(1), np.linalg.norm(Bs, axis=2).max(1))
    depth, normal, ca, cb, touch, conv, _ = _run_epa(A, Bs, scale, S, SA, SB, size, 1e-10, 64)
    for q in range(m):
        s, _, _ = signed_distance_local(A[q], np.zeros(3), I3, Bs[q], np.zeros(3), I3)
        assert depth[q] == pytest.approx(-s, abs=1e-9), (q, size[q])
        assert np.max(minkowski_difference(A[q], Bs[q]) @ -normal[q]) == pytest.approx(depth[q], abs=1e-9)
    assert np.all(conv)
    # Touching exits only where the origin really is on D's boundary (shared corners can do it).
    truth = np.array([-signed_distance_local(A[q], np.zeros(3), I3, Bs[q], np.zeros(3), I3)[0]
                      for q in range(m)])
    assert np.all(truth[touch] < 1e-9)
    for n in (1, 2, 3):  # each start size really grew into a polytope in enough cases
        assert np.sum((size == n) & ~touch & (truth > 0.05)) >= 10
