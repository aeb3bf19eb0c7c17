"""Contact manifolds from narrowphase.collide, checked against analytic geometry and a scalar
Sutherland-Hodgman reference clipper written here independently of engine/clip.py."""
import numpy as np
import pytest

import oracle
from engine import quat
from engine.clip import SNAP
from engine.narrowphase import collide
from engine.sat import ABS_TOL, EDGE, REL_TOL
from engine.shape_table import ShapeTable
from engine.shapes import Box
from test_sat import make_hull, random_shapes

EYE_Q = np.array([1.0, 0.0, 0.0, 0.0])


def q_axis(axis, angle):
    return quat.from_axis_angle(axis, angle)


def run(table, a, pa, qa, b, pb, qb, margin=0.0):
    return collide(table, np.array([a]), np.array([pa], float), np.array([qa], float),
                   np.array([b]), np.array([pb], float), np.array([qb], float), margin=margin)


def used(man, k=0):
    c = man.count[k]
    return man.points[k, :c], man.separation[k, :c], man.ids[k, :c]


def test_box_resting_flat_gives_four_corners():
    table = ShapeTable([Box([2.0, 2.0, 0.5]), Box([0.5, 0.5, 0.5])])
    depth = 0.01
    pos_b = np.array([0.3, -0.2, 0.5 + 0.5 - depth])
    man = run(table, 0, [0, 0, 0], EYE_Q, 1, pos_b, EYE_Q)
    assert man.count[0] == 4
    assert np.allclose(man.normal[0], [0, 0, 1])
    pts, sep, ids = used(man)
    assert np.allclose(sep, -depth)
    # Midway between the ground's top (z = 0.5) and the box bottom (z = 0.5 - depth).
    corners = np.array([[x, y, 0.5 - depth / 2] for x in (-0.5, 0.5) for y in (-0.5, 0.5)]) + [0.3, -0.2, 0]
    for c in corners:
        assert np.min(np.linalg.norm(pts - c, axis=1)) < 1e-12
    assert len(set(ids.tolist())) == 4
    assert np.all(np.isinf(man.separation[0, 4:]))


def _octagon(h, angle):
    """Vertices of the intersection of the square |x|,|y| <= h with the same square turned by angle."""
    pts = []
    c, s = np.cos(angle), np.sin(angle)
    rot = np.array([[c, -s], [s, c]])
    # Exact: intersect every edge of one square with every edge line of the other.
    sq = np.array([[-h, -h], [h, -h], [h, h], [-h, h]])
    tq = sq @ rot.T
    for poly_a, poly_b in ((sq, tq), (tq, sq)):
        for i in range(4):
            p, q = poly_a[i], poly_a[(i + 1) % 4]
            for j in range(4):
                r0, r1 = poly_b[j], poly_b[(j + 1) % 4]
                d1, d2 = q - p, r1 - r0
                den = d1[0] * d2[1] - d1[1] * d2[0]
                if abs(den) < 1e-15:
                    continue
                t = ((r0[0] - p[0]) * d2[1] - (r0[1] - p[1]) * d2[0]) / den
                u = ((r0[0] - p[0]) * d1[1] - (r0[1] - p[1]) * d1[0]) / den
                if 0 <= t <= 1 and 0 <= u <= 1:
                    pts.append(p + t * d1)
    pts = np.array(pts)
    keep = [p for i, p in enumerate(pts) if all(np.linalg.norm(p - pts[j]) > 1e-9 for j in range(i))]
    return np.array(keep)


def test_rotated_box_octagon_reduced_to_four():
    """A cube turned 45 deg (and tilted a little) on a same-footprint box: octagon -> 4 points."""
    table = ShapeTable([Box([0.5, 0.5, 1.0]), Box([0.5, 0.5, 0.5])])
    tilt = 0.002
    qb = quat.multiply(q_axis([1, 0, 0], tilt), q_axis([0, 0, 1], np.pi / 4))
    pos_b = np.array([0.0, 0.0, 1.0 + 0.5 - 0.01])
    man = run(table, 0, [0, 0, 0], EYE_Q, 1, pos_b, qb)
    assert man.count[0] == 4
    assert np.allclose(man.normal[0], [0, 0, 1])
    pts, sep, _ = used(man)
    # Where B's bottom face is: plane through B's bottom with B's -z normal.
    rb = quat.to_matrix(qb)
    n_bottom = rb @ [0, 0, -1]
    d_bottom = n_bottom @ (pos_b + rb @ [0, 0, -0.5])
    octo = _octagon(0.5, np.pi / 4)
    assert len(octo) == 8
    # Octagon vertices lifted onto B's bottom plane (the incident face) and their depths.
    z_on_b = (d_bottom - octo @ n_bottom[:2]) / n_bottom[2]
    inc = np.column_stack((octo, z_on_b))
    depths = inc[:, 2] - 1.0
    # Each point: its incident-side point is an octagon vertex (tilt moves them only slightly in
    # xy, so compare the xy footprint loosely and z / separation exactly for that vertex).
    for p, s in zip(pts, sep):
        on_b = p + 0.5 * s * man.normal[0]
        j = np.argmin(np.linalg.norm(inc[:, :2] - on_b[:2], axis=1))
        assert np.linalg.norm(inc[j, :2] - on_b[:2]) < 2e-3
        assert abs(p[2] - (1.0 + 0.5 * s)) < 1e-12  # midway: ground top is z = 1
    assert sep.min() == pytest.approx(depths.min(), abs=2e-5)
    # Reduced quad: close to the largest quad on the octagon's vertices (brute force over subsets).
    from itertools import combinations
    from scipy.spatial import ConvexHull
    best = max(ConvexHull(octo[list(c)]).volume for c in combinations(range(8), 4))
    assert ConvexHull(pts[:, :2]).volume > 0.95 * best


def test_ids_stable_under_tiny_perturbations():
    rng = np.random.default_rng(2)
    table = ShapeTable([Box([2.0, 2.0, 0.5]), Box([0.5, 0.5, 0.5]), Box([0.5, 0.5, 0.5])])
    cases = [
        (0, 1, [0.3, -0.2, 0.99], EYE_Q),                                 # inside a bigger face
        (2, 1, [0.0, 0.0, 0.99], q_axis([0, 0, 1], np.pi / 4)),           # octagon
        (2, 1, [0.0, 0.0, 0.99], EYE_Q),                                  # coincident faces
        (2, 1, [0.25, 0.0, 0.99], EYE_Q),                                 # coincident edges
        (2, 1, [0.1, 0.2, 0.99], q_axis([0, 0, 1], 0.3)),
    ]
    for a, b, pos, qb in cases:
        base = run(table, a, [0, 0, 0], EYE_Q, b, pos, qb)
        ref = {tuple(np.round(p, 3)): i for p, i in zip(*used(base)[::2])}
        assert base.count[0] == 4
        for _ in range(20):
            dq = q_axis(rng.normal(size=3), 1e-6)
            dp = rng.normal(size=3) * 1e-6
            man = run(table, a, [0, 0, 0], EYE_Q, b, np.add(pos, dp), quat.multiply(dq, qb))
            assert man.count[0] == 4
            pts, _, ids = used(man)
            for p, i in zip(pts, ids):
                key = tuple(np.round(p, 3))
                assert ref.get(key) == i


def test_crossed_edges_one_point():
    table = ShapeTable([Box([0.5, 0.5, 0.5])])
    h = 0.5 * np.sqrt(2.0)
    qa = q_axis([1, 0, 0], np.pi / 4)   # top edge along x at z = h
    qb = q_axis([0, 1, 0], np.pi / 4)   # bottom edge along y at z = zb - h
    zb = 2 * h - 0.02
    man = run(table, 0, [0.1, 0.0, 0.0], qa, 0, [0.0, 0.2, zb], qb)
    assert man.count[0] == 1 and man.axis_kind[0] == EDGE
    assert np.allclose(man.normal[0], [0, 0, 1])
    assert man.separation[0, 0] == pytest.approx(-0.02)
    # The edges cross above (x = 0, y = 0): top edge of A is y = 0, bottom edge of B is x = 0.
    assert np.allclose(man.points[0, 0], [0.0, 0.0, h - 0.01])


def test_swapped_order_flips_normal_only():
    rng = np.random.default_rng(4)
    shapes = random_shapes(rng, 5)
    table = ShapeTable(shapes)
    m = 300
    ia = rng.integers(0, len(shapes), m)
    ib = rng.integers(0, len(shapes), m)
    pa = rng.uniform(-1, 1, (m, 3))
    pb = pa + rng.uniform(-0.8, 0.8, (m, 3))
    qa = quat.normalize(rng.normal(size=(m, 4)))
    qb = quat.normalize(rng.normal(size=(m, 4)))
    ab = collide(table, ia, pa, qa, ib, pb, qb, margin=0.01)
    ba = collide(table, ib, pb, qb, ia, pa, qa, margin=0.01)
    assert np.array_equal(ab.count > 0, ba.count > 0)
    both = (ab.count > 0) & (ba.count > 0)
    assert both.sum() > 100
    assert np.allclose(ab.distance, ba.distance, atol=1e-12)
    # Normals are opposite unless the face bias broke a near tie the other way; either way the
    # normal is a valid axis whose support gap is within the bias tolerance of the exact value.
    same = both & (np.abs(np.einsum("ij,ij->i", ab.normal, ba.normal) + 1) < 1e-9)
    assert same.sum() > 0.8 * both.sum()
    for k in np.nonzero(both & ~same)[0]:
        wa = oracle.transform_points(shapes[ia[k]].vertices, pa[k], quat.to_matrix(qa[k]))
        wb = oracle.transform_points(shapes[ib[k]].vertices, pb[k], quat.to_matrix(qb[k]))
        size = min(shapes[ia[k]].bounding_radius(), shapes[ib[k]].bounding_radius())
        tol = REL_TOL * abs(ab.distance[k]) * 2.5 + ABS_TOL * size * 2.5
        for n in (ab.normal[k], -ba.normal[k]):
            gap = (wb @ n).min() - (wa @ n).max()
            assert ab.distance[k] - tol <= gap <= ab.distance[k] + 1e-12


def _clip_reference(poly, ref_poly, n):
    """Scalar Sutherland-Hodgman: clip polygon (k, 3) against the side planes of ref_poly (CCW about n)."""
    out = list(poly)
    for i in range(len(ref_poly)):
        a, b = ref_poly[i], ref_poly[(i + 1) % len(ref_poly)]
        side = np.cross(b - a, n)
        inp, out = out, []
        for j in range(len(inp)):
            p, q = inp[j], inp[(j + 1) % len(inp)]
            dp, dq = side @ (p - a), side @ (q - a)
            if dp <= 0:
                out.append(p)
            if (dp < 0 < dq) or (dq < 0 < dp):
                out.append(p + dp / (dp - dq) * (q - p))
        if not out:
            break
    return np.array(out).reshape(-1, 3)


def test_random_face_contacts_against_reference_clipper():
    rng = np.random.default_rng(9)
    shapes = random_shapes(rng, 10)
    table = ShapeTable(shapes)
    m = 600
    ia = rng.integers(0, len(shapes), m)
    ib = rng.integers(0, len(shapes), m)
    pa = rng.uniform(-1, 1, (m, 3))
    pb = pa + rng.uniform(-0.9, 0.9, (m, 3))
    qa = quat.normalize(rng.normal(size=(m, 4)))
    qb = quat.normalize(rng.normal(size=(m, 4)))
    margin = 0.02
    man = collide(table, ia, pa, qa, ib, pb, qb, margin=margin)
    checked = 0
    for k in range(m):
        if man.count[k] == 0 or man.axis_kind[k] == EDGE:
            continue
        flip = man.axis_kind[k] == 1
        sa, sb = shapes[ia[k]], shapes[ib[k]]
        ra, rb = quat.to_matrix(qa[k]), quat.to_matrix(qb[k])
        ref, inc = (sb, sa) if flip else (sa, sb)
        rr, ri = (rb, ra) if flip else (ra, rb)
        pr, pi = (pb[k], pa[k]) if flip else (pa[k], pb[k])
        fr, fi = man.axis_index[k]
        n = rr @ ref.planes[fr, :3]
        d = n @ pr + ref.planes[fr, 3]
        # The reported normal is the reference face normal (A -> B).
        assert np.allclose(man.normal[k], -n if flip else n, atol=1e-12)
        # The incident face is the most anti-parallel one.
        dots = (ri @ inc.planes[:, :3].T).T @ n
        assert dots[fi] == pytest.approx(dots.min(), abs=1e-12)
        poly = inc.vertices[inc.faces[fi]] @ ri.T + pi
        ref_poly = ref.vertices[ref.faces[fr]] @ rr.T + pr
        clipped = _clip_reference(poly, ref_poly, n)
        seps = clipped @ n - d
        keep = clipped[seps <= margin]
        pts, sep, ids = used(man, k)
        on_inc = pts + 0.5 * sep[:, None] * n[None]
        scale = min(sa.bounding_radius(), sb.bounding_radius())
        for p in on_inc:  # every point is a vertex of the clipped polygon
            assert np.min(np.linalg.norm(keep - p, axis=1)) < 1e-9
        # The deepest clipped vertex is in (up to the tie tolerance that keeps picks stable),
        # and nothing is dropped while there are fewer than 4 distinct vertices.
        assert sep.min() == pytest.approx(seps[seps <= margin].min(), abs=SNAP * scale)
        distinct = [p for i, p in enumerate(keep)
                    if all(np.linalg.norm(p - keep[j]) > 1e-4 for j in range(i))]
        assert man.count[k] == min(4, len(distinct)) or man.count[k] < min(4, len(distinct)) and \
            _collinear(np.array(distinct), n)
        assert len(set(ids.tolist())) == len(ids)
        checked += 1
    assert checked > 150


def _collinear(pts, n):
    """True when the points are (nearly) on a line seen along n (the reduction may stop early)."""
    if len(pts) < 3:
        return True
    c = pts - pts.mean(axis=0)
    c -= np.outer(c @ n, n)
    sv = np.linalg.svd(c, compute_uv=False)
    return sv[1] < 1e-3 * max(sv[0], 1e-12)
