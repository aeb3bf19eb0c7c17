"""Batched SAT against independent truth: analytic box cases and the Qhull oracle on random hulls."""
import numpy as np
import oracle
import pytest
from scipy.spatial import ConvexHull

from engine.collision.sat import EDGE, FACE_A, FACE_B, polytope_sat
from engine.collision.shape_table import ShapeTable
from engine.core import quat
from engine.shapes.primitives import Box, Polytope


def make_hull(points):
    """Polytope from the convex hull of points (scipy triangles, oriented outward): test-only."""
    points = np.asarray(points, dtype=np.float64)
    h = ConvexHull(points)
    remap = -np.ones(len(points), dtype=np.int64)
    remap[h.vertices] = np.arange(len(h.vertices))
    faces = []
    for (a, b, c), eq in zip(h.simplices, h.equations):
        if np.cross(points[b] - points[a], points[c] - points[a]) @ eq[:3] < 0:
            b, c = c, b
        faces.append(remap[[a, b, c]])
    poly = Polytope.__new__(Polytope)
    poly._finish(points[h.vertices], faces)
    return poly


def random_shapes(rng, n):
    shapes = [make_hull(oracle.random_hull_points(rng, int(rng.integers(4, 24)),
                                                  stretch=rng.uniform(0.2, 1.5, 3),
                                                  kind=("sphere", "cube")[i % 2]))
              for i in range(n)]
    shapes.append(Box([0.5, 0.3, 0.2]))
    shapes.append(Box([0.4, 0.4, 0.4]))
    return shapes


def random_batch(rng, n_shapes, m, spread, reach, rotations):
    """m random pairs over random_shapes(rng, n_shapes): A within +-spread of the origin, B
    within +-reach of A; rotations as "matrices" (M, 3, 3) or unit "quaternions" (M, 4).
    Returns shapes, table, ia, ib, pa, pb, rot_a, rot_b."""
    shapes = random_shapes(rng, n_shapes)
    table = ShapeTable(shapes)
    ia = rng.integers(0, len(shapes), m)
    ib = rng.integers(0, len(shapes), m)
    pa = rng.uniform(-spread, spread, (m, 3))
    pb = pa + rng.uniform(-reach, reach, (m, 3))
    if rotations == "matrices":
        ra, rb = oracle.random_rotations(rng, m), oracle.random_rotations(rng, m)
    else:
        ra = quat.normalize(rng.normal(size=(m, 4)))
        rb = quat.normalize(rng.normal(size=(m, 4)))
    return shapes, table, ia, ib, pa, pb, ra, rb


def rot_z(angle):
    return quat.to_matrix(quat.from_axis_angle([0, 0, 1], angle))


def one(table, a, pa, ra, b, pb, rb, **kw):
    return polytope_sat(table, np.array([a]), np.array([pa], float), np.array([ra], float),
                        np.array([b]), np.array([pb], float), np.array([rb], float), **kw)


def test_random_hulls_match_oracle():
    """Overlapping: SAT separation == exact signed distance. Apart: a lower bound of it."""
    rng = np.random.default_rng(7)
    m = 2500
    shapes, table, ia, ib, pa, pb, ra, rb = random_batch(
        rng, 14, m, 5, 1.2, "matrices")
    res = polytope_sat(table, ia, pa, ra, ib, pb, rb)
    n_over = n_apart = 0
    for k in range(0, m, 2):  # the oracle is the slow part: check every other pair
        s, n, _ = oracle.signed_distance_local(shapes[ia[k]].vertices, pa[k], ra[k],
                                               shapes[ib[k]].vertices, pb[k], rb[k])
        if s < 0:
            n_over += 1
            assert res.separation[k] == pytest.approx(s, abs=1e-9)
        else:
            n_apart += 1
            assert res.separation[k] <= s + 1e-9
        # The reported normal is a unit vector and the chosen axis' separation is a lower bound.
        assert np.linalg.norm(res.normal[k]) == pytest.approx(1.0, abs=1e-12)
        assert res.axis_separation[k] <= res.separation[k] + 1e-12
    assert n_over > 200 and n_apart > 200


def test_normal_is_a_true_separating_direction():
    """Along the reported axis, the support gap of B minus A equals the axis separation."""
    rng = np.random.default_rng(3)
    m = 1500
    shapes, table, ia, ib, pa, pb, ra, rb = random_batch(
        rng, 8, m, 1, 1, "matrices")
    res = polytope_sat(table, ia, pa, ra, ib, pb, rb)
    for k in range(m):
        wa = oracle.transform_points(shapes[ia[k]].vertices, pa[k], ra[k])
        wb = oracle.transform_points(shapes[ib[k]].vertices, pb[k], rb[k])
        n = res.normal[k]
        gap = (wb @ n).min() - (wa @ n).max()
        assert gap == pytest.approx(res.axis_separation[k], abs=1e-9)


def test_boxes_analytic():
    table = ShapeTable([Box([1.0, 1.0, 1.0]), Box([0.5, 0.5, 0.5])])
    eye = np.eye(3)
    # Face contact: small box 0.1 deep in the +z face of the big one.
    r = one(table, 0, [0, 0, 0], eye, 1, [0.2, -0.3, 1.4], eye)
    assert r.separation[0] == pytest.approx(-0.1)
    assert r.kind[0] == FACE_A and r.index[0, 0] == 5  # +z face of Box
    assert np.allclose(r.normal[0], [0, 0, 1])
    # Swapped order, faces tie (A's bottom, B's top): A's face is kept, normal still A -> B.
    r = one(table, 1, [0.2, -0.3, 1.4], eye, 0, [0, 0, 0], rot_z(0.3))
    assert r.separation[0] == pytest.approx(-0.1)
    assert r.kind[0] == FACE_A and np.allclose(r.normal[0], [0, 0, -1])
    # A tilted about x, its lowest edge 0.1 into B's top face: B's face is the clear best.
    tilt = quat.to_matrix(quat.from_axis_angle([1, 0, 0], 0.5))
    low = 0.5 * (np.cos(0.5) + np.sin(0.5))
    r = one(table, 1, [0.2, -0.3, 1.0 + low - 0.1], tilt, 0, [0, 0, 0], rot_z(0.3))
    assert r.separation[0] == pytest.approx(-0.1)
    assert r.kind[0] == FACE_B and r.index[0, 0] == 5
    assert np.allclose(r.normal[0], [0, 0, -1])
    # Separated by 0.25 along x.
    r = one(table, 0, [0, 0, 0], eye, 1, [1.75, 0.1, 0.2], eye)
    assert r.separation[0] == pytest.approx(0.25)
    assert np.allclose(r.normal[0], [1, 0, 0])


def test_crossed_edges():
    """Two boxes standing on edges, crossed at 90 deg: the edge-edge axis is the answer."""
    table = ShapeTable([Box([0.5, 0.5, 0.5])])
    ra = quat.to_matrix(quat.from_axis_angle([1, 0, 0], np.pi / 4))  # edge along x on top
    rb = quat.to_matrix(quat.from_axis_angle([0, 1, 0], np.pi / 4))  # edge along y at bottom
    h = 0.5 * np.sqrt(2.0)
    r = one(table, 0, [0, 0, 0], ra, 0, [0, 0, 2 * h - 0.05], rb)
    assert r.kind[0] == EDGE
    assert r.separation[0] == pytest.approx(-0.05)
    assert np.allclose(r.normal[0], [0, 0, 1])
    # Apart by 0.05: still the edge axis, separation exact here (edges are the closest features).
    r = one(table, 0, [0, 0, 0], ra, 0, [0, 0, 2 * h + 0.05], rb)
    assert r.kind[0] == EDGE and r.separation[0] == pytest.approx(0.05)


def test_face_bias_prefers_faces_on_ties():
    """Resting face to face, edge axes tie with the face axis: the face wins."""
    table = ShapeTable([Box([1.0, 1.0, 1.0])])
    r = one(table, 0, [0, 0, 0], np.eye(3), 0, [0.0, 0.0, 1.99], np.eye(3))
    assert r.kind[0] == FACE_A
    r = one(table, 0, [0, 0, 0], np.eye(3), 0, [0.3, 0.2, 1.99], rot_z(0.7))
    assert r.kind[0] in (FACE_A, FACE_B) and r.separation[0] == pytest.approx(-0.01)


def test_margin_and_edge_pruning_keep_exact_depths():
    """With a margin, far pairs skip the edge query and edges far from the other shape are
    pruned: overlapping pairs keep their exact depth (checked against the oracle), pairs apart
    keep a lower bound, and nothing within the margin is lost."""
    rng = np.random.default_rng(11)
    shapes = random_shapes(rng, 6) + [make_hull(oracle.random_hull_points(rng, 32))]
    table = ShapeTable(shapes)
    m = 1000
    ia = rng.integers(0, len(shapes), m)
    ib = rng.integers(0, len(shapes), m)
    pa = rng.uniform(-1, 1, (m, 3))
    pb = pa + rng.uniform(-1.5, 1.5, (m, 3))
    ra = oracle.random_rotations(rng, m)
    rb = oracle.random_rotations(rng, m)
    full = polytope_sat(table, ia, pa, ra, ib, pb, rb)
    for margin in (0.0, 0.05):
        cut = polytope_sat(table, ia, pa, ra, ib, pb, rb, margin=margin)
        over = full.separation < 0
        assert over.sum() > 200
        assert np.array_equal(cut.separation[over], full.separation[over])
        assert np.all(cut.separation <= full.separation + 1e-15)
        assert np.all((cut.separation <= margin) >= (full.separation <= margin))
    for k in np.nonzero(cut.separation < 0)[0][::5]:
        s, _, _ = oracle.signed_distance_local(shapes[ia[k]].vertices, pa[k], ra[k],
                                               shapes[ib[k]].vertices, pb[k], rb[k])
        assert cut.separation[k] == pytest.approx(s, abs=1e-9)


def test_far_from_origin_and_scales():
    """10 km from the origin, and 1 mm against 100 m: exact depths still."""
    table = ShapeTable([Box([0.0005, 0.0005, 0.0005]), Box([100.0, 100.0, 1.0])])
    far = np.array([1.0e4, -2.0e4, 3.0e3])
    r = one(table, 1, far, np.eye(3), 0, far + [3.0, 7.0, 1.0 + 0.0005 - 1e-4], rot_z(0.4))
    assert r.separation[0] == pytest.approx(-1e-4, abs=1e-9)
    assert np.allclose(r.normal[0], [0, 0, 1])


def test_identical_shapes_same_pose():
    rng = np.random.default_rng(5)
    shapes = random_shapes(rng, 3)
    table = ShapeTable(shapes)
    for i, s in enumerate(shapes):
        rot = oracle.random_rotation(rng)
        r = one(table, i, [1, 2, 3], rot, i, [1, 2, 3], rot)
        exact, _, _ = oracle.signed_distance_local(s.vertices, [1, 2, 3], rot, s.vertices, [1, 2, 3], rot)
        assert r.separation[0] == pytest.approx(exact, abs=1e-9)
        assert np.isfinite(r.normal[0]).all()


def test_box_fast_path_matches_general_path_and_oracle():
    """The analytic 15-axis box test gives the general path's answers (and the oracle's)."""
    from engine.collision.sat import queries, relative_pose
    rng = np.random.default_rng(21)
    boxes = [Box(rng.uniform(0.1, 1.0, 3)) for _ in range(5)]
    table = ShapeTable(boxes)
    m = 3000
    ia = rng.integers(0, 5, m)
    ib = rng.integers(0, 5, m)
    pa = rng.uniform(-3, 3, (m, 3))
    pb = pa + rng.uniform(-1.2, 1.2, (m, 3))
    ra = oracle.random_rotations(rng, m)
    rb = oracle.random_rotations(rng, m)
    # Some near-aligned pairs too (parallel edges, face ties).
    tiny_turn = quat.from_axis_angle(rng.normal(size=(m // 4, 3)), np.full(m // 4, 1e-7))
    rb[: m // 4] = ra[: m // 4] @ quat.to_matrix(tiny_turn)
    rot, trans = relative_pose(pa, ra, pb, rb)
    fast = queries(table, ia, ib, rot, trans, np.inf)
    slow = queries(table, ia, ib, rot, trans, np.inf, box_path=False)
    for k in (0, 2):  # face separations of A and B
        assert np.allclose(fast[k], slow[k], atol=1e-12)
    # Edge separation: the fast path considers all 9 directions with exact supports, the general
    # path only Minkowski-face pairs; both maxima must agree whenever an edge axis wins overall.
    best_face = np.maximum(fast[0], fast[2])
    edge_wins = slow[4] > best_face + 1e-9
    assert edge_wins.sum() > 100
    assert np.allclose(fast[4][edge_wins], slow[4][edge_wins], atol=1e-12)
    assert np.all(fast[4] <= np.maximum(slow[4], best_face) + 1e-12)
    # The fast path's edge indices and axis reproduce its separation with the general formula.
    for k in np.nonzero(edge_wins)[0][:200]:
        ea, eb, axis = boxes[ia[k]].edges[fast[5][k]], boxes[ib[k]].edges[fast[6][k]], fast[7][k]
        pa0 = boxes[ia[k]].vertices[ea[0]]
        pb0 = rot[k] @ boxes[ib[k]].vertices[eb[0]] + trans[k]
        assert axis @ (pb0 - pa0) == pytest.approx(fast[4][k], abs=1e-12)
    res = polytope_sat(table, ia, pa, ra, ib, pb, rb)
    for k in range(0, m, 10):
        s, _, _ = oracle.signed_distance_local(boxes[ia[k]].vertices, pa[k], ra[k],
                                               boxes[ib[k]].vertices, pb[k], rb[k])
        if s < 0:
            assert res.separation[k] == pytest.approx(s, abs=1e-9)
        else:
            assert res.separation[k] <= s + 1e-9


def _tilted_crossed_beams(rng, m):
    """m poses of beam B (0.4 x 1.6 x 0.4) lying across beam A (1.6 x 0.4 x 0.4), each tilted by
    0-2 degrees about random axes and sunk 0-1 cm: nearly parallel faces."""
    ra = quat.to_matrix(quat.from_axis_angle(rng.normal(size=(m, 3)), np.radians(rng.uniform(0, 1, m))))
    axb = rng.normal(size=(m, 3)) * [1, 1, 0.2]
    rb = quat.to_matrix(quat.from_axis_angle(axb, np.radians(rng.uniform(1, 2, m))))
    pb = np.stack((rng.uniform(-0.3, 0.3, m), rng.uniform(-0.3, 0.3, m), 0.4 - rng.uniform(0, 0.01, m)), 1)
    return ra, pb, rb


def test_tilted_crossed_beams_exact_depth_and_supporting_edges():
    """Crossed beams a degree or two apart (the demo tower's failure): the SAT depth is the exact
    penetration (Qhull oracle), and where an edge axis is chosen its two edges really are the
    supporting features along it (both ends of A's edge at A's support, B's at B's), which the
    manifold clipping relies on; the axis value equals the brute-force support gap."""
    rng = np.random.default_rng(41)
    beams = [Box([0.8, 0.2, 0.2]), Box([0.2, 0.8, 0.2])]
    table = ShapeTable(beams)
    m = 200
    ra, pb, rb = _tilted_crossed_beams(rng, m)
    pa = np.zeros((m, 3))
    res = polytope_sat(table, np.zeros(m, np.int64), pa, ra, np.ones(m, np.int64), pb, rb, margin=0.02)
    n_edge = 0
    for k in range(m):
        wa = oracle.transform_points(beams[0].vertices, pa[k], ra[k])
        wb = oracle.transform_points(beams[1].vertices, pb[k], rb[k])
        exact, _, _ = oracle.signed_distance(wa, wb)
        assert res.separation[k] == pytest.approx(exact, abs=1e-10)
        n = res.normal[k]
        gap = (wb @ n).min() - (wa @ n).max()
        assert gap == pytest.approx(res.axis_separation[k], abs=1e-10)
        if res.kind[k] == EDGE:
            n_edge += 1
            ea = beams[0].edges[res.index[k, 0]]
            eb = beams[1].edges[res.index[k, 1]]
            assert np.allclose(wa[ea] @ n, (wa @ n).max(), atol=1e-10)
            assert np.allclose(wb[eb] @ n, (wb @ n).min(), atol=1e-10)
    assert n_edge > m // 2  # the case the manifold code must handle is common here


def test_edge_axis_edges_are_supporting_on_random_hulls():
    """Random hulls and boxes (both SAT paths): every chosen edge axis names edges that support
    their shapes along it, and its value is the brute-force support gap."""
    rng = np.random.default_rng(42)
    m = 1500
    shapes, table, ia, ib, pa, pb, ra, rb = random_batch(
        rng, 6, m, 1, 0.8, "matrices")
    res = polytope_sat(table, ia, pa, ra, ib, pb, rb, margin=0.05)
    edge = np.nonzero((res.kind == EDGE) & (res.separation <= 0.05))[0]
    assert len(edge) > 50
    for k in edge:
        wa = oracle.transform_points(shapes[ia[k]].vertices, pa[k], ra[k])
        wb = oracle.transform_points(shapes[ib[k]].vertices, pb[k], rb[k])
        n = res.normal[k]
        tol = 1e-9 * (1 + np.abs(wa).max())
        assert (wb @ n).min() - (wa @ n).max() == pytest.approx(res.axis_separation[k], abs=tol)
        ea = shapes[ia[k]].edges[res.index[k, 0]]
        eb = shapes[ib[k]].edges[res.index[k, 1]]
        assert np.allclose(wa[ea] @ n, (wa @ n).max(), atol=tol)
        assert np.allclose(wb[eb] @ n, (wb @ n).min(), atol=tol)
