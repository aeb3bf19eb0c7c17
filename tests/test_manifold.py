"""Contact manifolds from narrowphase.collide, checked against analytic geometry and a scalar
Sutherland-Hodgman reference clipper written here independently of engine/collision/clip.py."""
import numpy as np
import oracle
import pytest
from test_sat import make_hull, random_batch

from engine.collision.clip import ID_FALLBACK, SNAP
from engine.collision.narrowphase import collide
from engine.collision.patches import face_patches
from engine.collision.sat import ABS_TOL, EDGE, FACE_B, REL_TOL
from engine.collision.shape_table import ShapeTable
from engine.core import quat
from engine.shapes.primitives import Box

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
    m = 300
    shapes, table, ia, ib, pa, pb, qa, qb = random_batch(
        rng, 5, m, 1, 0.8, "quaternions")
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
    m = 600
    shapes, table, ia, ib, pa, pb, qa, qb = random_batch(
        rng, 10, m, 1, 0.9, "quaternions")
    margin = 0.02
    man = collide(table, ia, pa, qa, ib, pb, qb, margin=margin)
    checked = sunk_rows = patched = 0
    for k in range(m):
        if man.count[k] == 0 or man.axis_kind[k] == EDGE or man.ids[k, 0] >> 59 == ID_FALLBACK:
            continue  # clipping is checked here; the last-resort point has its own test
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
        # The incident face is the most anti-parallel one of the faces around the incident
        # shape's deepest vertex along -n (clip.incident_face).
        dots = (ri @ inc.planes[:, :3].T).T @ n
        low = inc.vertices @ ri.T @ n
        deepest = np.flatnonzero(low <= low.min() + 1e-12)       # ties: any of them
        arounds = [[f for f, lp in enumerate(inc.faces) if v in lp] for v in deepest]
        assert any(fi in around and dots[fi] == pytest.approx(dots[around].min(), abs=1e-12)
                   for around in arounds)
        # The faces clip as their patches (engine.collision.patches, tested in tests/test_patches.py):
        # the face itself unless it is part of a flat side of faces within PATCH_DEG.
        inc_loop, ref_loop = face_patches(inc)[fi], face_patches(ref)[fr]
        if not (np.array_equal(inc_loop, inc.faces[fi]) and np.array_equal(ref_loop, ref.faces[fr])):
            # A patch is not planar: its points are held to the true surfaces instead (ray
            # casting through both hulls), to within how far the patches sag under their faces.
            sag = _sag(inc, fi, inc_loop) + _sag(ref, fr, ref_loop)
            wa, wb = _world_planes(sa, pa[k], qa[k]), _world_planes(sb, pb[k], qb[k])
            pts, sep, ids = used(man, k)
            for p, s_ in zip(pts, sep):
                assert abs(_column_gap(wa, wb, p, man.normal[k]) - s_) <= sag + 1e-9
            assert len(set(ids.tolist())) == len(ids)
            patched += 1
            continue
        poly = inc.vertices[inc_loop] @ ri.T + pi
        ref_poly = ref.vertices[ref_loop] @ rr.T + pr
        clipped = _clip_reference(poly, ref_poly, n)
        # Plus the incident vertices off that face under the reference plane, inside its face,
        # on a face of the incident shape facing it (a deep or faceted contact:
        # clip._sunk_vertices).
        verts = inc.vertices @ ri.T + pi
        off_face = np.zeros(len(verts), bool)
        for f, lp in enumerate(inc.faces):
            if (ri @ inc.planes[f, :3]) @ n < 0:
                off_face[lp] = True
        off_face[inc_loop] = False
        sides = [np.cross(ref_poly[(i + 1) % len(ref_poly)] - a, n) @ (verts - a).T
                 for i, a in enumerate(ref_poly)]
        sunk = off_face & (verts @ n - d < 0) & (np.max(sides, axis=0) <= 1e-9)
        clipped = np.concatenate((clipped, verts[sunk]))
        sunk_rows += bool(sunk.any())
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
        assert man.count[k] == min(4, len(distinct)) or (man.count[k] < min(4, len(distinct)) and \
            _collinear(np.array(distinct), n))
        assert len(set(ids.tolist())) == len(ids)
        checked += 1
    assert checked > 150
    assert sunk_rows > 10 and patched > 5


def _sag(shape, face, loop):
    """How far a patch's vertices lie under its face's plane."""
    return float(np.max(shape.planes[face, 3] - shape.vertices[loop] @ shape.planes[face, :3]))


def _collinear(pts, n):
    """True when the points are (nearly) on a line seen along n (the reduction may stop early)."""
    if len(pts) < 3:
        return True
    c = pts - pts.mean(axis=0)
    c -= np.outer(c @ n, n)
    sv = np.linalg.svd(c, compute_uv=False)
    return sv[1] < 1e-3 * max(sv[0], 1e-12)


# --------------------------------------------------------------------------- spheres, capsules

from engine.collision.narrowphase import AXIS_CORE_EDGE, AXIS_CORE_FACE  # noqa: E402
from engine.shapes.primitives import Capsule, Sphere  # noqa: E402


def test_sphere_sphere_and_sphere_capsule_analytic():
    table = ShapeTable([Sphere(0.5), Sphere(0.25), Capsule(0.2, 0.6)])
    a, b = np.array([1.0, 2.0, 3.0]), np.array([1.3, 2.4, 3.0])   # centres 0.5 apart
    man = run(table, 0, a, EYE_Q, 1, b, EYE_Q)
    assert man.count[0] == 1
    assert man.separation[0, 0] == pytest.approx(0.5 - 0.75)
    assert np.allclose(man.normal[0], [0.6, 0.8, 0.0])
    # Midway between the surface points a + 0.5 n and b - 0.25 n.
    assert np.allclose(man.points[0, 0], 0.5 * (a + 0.5 * man.normal[0] + b - 0.25 * man.normal[0]))
    # Sphere beside a vertical capsule's side, and above its end cap.
    man = run(table, 1, [0.4, 0.0, 0.3], EYE_Q, 2, [0, 0, 0], EYE_Q)
    assert man.separation[0, 0] == pytest.approx(0.4 - 0.45)
    assert np.allclose(man.normal[0], [-1, 0, 0])
    man = run(table, 1, [0.0, 0.0, 1.0], EYE_Q, 2, [0, 0, 0], EYE_Q, margin=1.0)
    assert man.separation[0, 0] == pytest.approx(0.4 - 0.45)
    assert np.allclose(man.normal[0], [0, 0, -1])
    # Concentric spheres: any unit normal, depth = sum of radii.
    man = run(table, 0, a, EYE_Q, 1, a, EYE_Q)
    assert man.separation[0, 0] == pytest.approx(-0.75)
    assert np.linalg.norm(man.normal[0]) == pytest.approx(1.0)


def test_capsule_capsule_crossed_and_parallel():
    table = ShapeTable([Capsule(0.1, 1.0), Capsule(0.2, 0.5)])
    qx = q_axis([0, 1, 0], np.pi / 2)   # axis along x
    qy = q_axis([1, 0, 0], np.pi / 2)   # axis along y
    # Crossed: one point between the axes, at the crossing.
    man = run(table, 0, [0.0, 0.0, 0.0], qx, 1, [0.3, 0.1, 0.25], qy)
    assert man.count[0] == 1
    assert man.separation[0, 0] == pytest.approx(0.25 - 0.3)
    assert np.allclose(man.normal[0], [0, 0, 1])
    assert np.allclose(man.points[0, 0], [0.3, 0.0, 0.1 + (0.25 - 0.3) / 2])
    # Parallel, overlapping along x over [0.5, 1.0]: two points at the ends of the overlap.
    man = run(table, 0, [0.0, 0.0, 0.0], qx, 1, [1.0, 0.0, 0.29], qx)
    assert man.count[0] == 2
    assert np.allclose(man.separation[0, :2], 0.29 - 0.3)
    assert np.allclose(man.normal[0], [0, 0, 1])
    xs = np.sort(man.points[0, :2, 0])
    assert np.allclose(xs, [0.5, 1.0])
    assert np.allclose(man.points[0, :2, 2], 0.1 - 0.005)
    # Slightly tilted: still 2 points, each with its own exact separation.
    tilt = quat.multiply(q_axis([0, 1, 0], 0.01), qx)
    man = run(table, 0, [0.0, 0.0, 0.0], qx, 1, [1.0, 0.0, 0.29], tilt, margin=0.05)
    assert man.count[0] == 2
    rb = quat.to_matrix(tilt)
    for p, s in zip(man.points[0, :2], man.separation[0, :2]):
        on_a = p - 0.5 * s * man.normal[0]
        # the A-side point is 0.1 from A's axis (the x axis), the B-side point 0.2 from B's.
        assert np.hypot(on_a[1], on_a[2]) == pytest.approx(0.1, abs=1e-4)
        on_b = p + 0.5 * s * man.normal[0]
        core = oracle.closest_point_segment(on_b, [1.0, 0, 0.29] + rb @ [0, 0, -0.5],
                                            [1.0, 0, 0.29] + rb @ [0, 0, 0.5])
        assert np.linalg.norm(on_b - core) == pytest.approx(0.2, abs=1e-3)


def test_sphere_on_box_face_edge_and_inside():
    table = ShapeTable([Box([1.0, 1.0, 0.5]), Sphere(0.3)])
    man = run(table, 0, [0, 0, 0], EYE_Q, 1, [0.2, -0.4, 0.79], EYE_Q)
    assert man.count[0] == 1
    assert man.separation[0, 0] == pytest.approx(-0.01)
    assert np.allclose(man.normal[0], [0, 0, 1])
    assert np.allclose(man.points[0, 0], [0.2, -0.4, 0.495])
    # Near the +x+z edge: normal from the edge point to the centre.
    c = np.array([1.1, 0.3, 0.6])
    man = run(table, 0, [0, 0, 0], EYE_Q, 1, c, EYE_Q)
    expect = np.array([0.1, 0.0, 0.1])
    assert man.separation[0, 0] == pytest.approx(np.linalg.norm(expect) - 0.3)
    assert np.allclose(man.normal[0], expect / np.linalg.norm(expect))
    # Centre inside the box, 0.1 below the top: pushed out through the top.
    man = run(table, 0, [0, 0, 0], EYE_Q, 1, [0.1, 0.2, 0.4], EYE_Q)
    assert man.count[0] == 1 and man.axis_kind[0] == AXIS_CORE_FACE
    assert man.separation[0, 0] == pytest.approx(-0.1 - 0.3)
    assert np.allclose(man.normal[0], [0, 0, 1])


def test_capsule_lying_on_box_gives_two_points():
    table = ShapeTable([Box([2.0, 2.0, 0.5]), Capsule(0.25, 0.75)])
    lying = q_axis([0, 1, 0], np.pi / 2)  # axis along x
    man = run(table, 0, [0, 0, 0], EYE_Q, 1, [0.3, 0.2, 0.74], lying)
    assert man.count[0] == 2 and man.axis_kind[0] == AXIS_CORE_FACE
    assert np.allclose(man.normal[0], [0, 0, 1])
    assert np.allclose(man.separation[0, :2], -0.01)
    assert np.allclose(np.sort(man.points[0, :2, 0]), [0.3 - 0.75, 0.3 + 0.75])
    assert np.allclose(man.points[0, :2, 2], 0.495)
    # Hanging over the box's edge at x = 2: the second point is clipped at the edge.
    man = run(table, 0, [0, 0, 0], EYE_Q, 1, [1.6, 0.2, 0.74], lying)
    assert man.count[0] == 2
    assert np.allclose(np.sort(man.points[0, :2, 0]), [1.6 - 0.75, 2.0])
    # Core dipping into the box (deeper than the radius): SAT path, still 2 points.
    man = run(table, 0, [0, 0, 0], EYE_Q, 1, [0.3, 0.2, 0.45], lying)
    assert man.count[0] == 2
    assert np.allclose(man.separation[0, :2], -0.3)
    # Tilted: 2 points with different, exact separations (the higher one within the margin).
    tilt = quat.multiply(q_axis([0, 1, 0], 0.01), lying)
    man = run(table, 0, [0, 0, 0], EYE_Q, 1, [0.3, 0.2, 0.75], tilt, margin=0.05)
    assert man.count[0] == 2
    ends = np.array([0.3, 0.2, 0.75]) + np.outer([-0.75, 0.75], quat.to_matrix(tilt) @ [0, 0, 1])
    assert np.allclose(np.sort(man.separation[0, :2]), np.sort(ends[:, 2] - 0.25 - 0.5), atol=1e-12)
    # Standing upright: one point.
    man = run(table, 0, [0, 0, 0], EYE_Q, 1, [0.3, 0.2, 1.49], EYE_Q)
    assert man.count[0] == 1 and man.separation[0, 0] == pytest.approx(-0.01)


def test_capsule_across_box_edge_penetrating():
    """Capsule core cutting through a box's top edge: SAT picks the edge axis, exact depth."""
    table = ShapeTable([Box([0.5, 0.5, 0.5]), Capsule(0.1, 1.0)])
    across = q_axis([0, 1, 0], 0.75 * np.pi)  # axis (1, 0, -1)/sqrt2, crossing the y edge
    # Core 0.05 inside the +x+z edge (along y), along the diagonal.
    d = 0.05
    c = np.array([0.5, 0.0, 0.5]) - d * np.array([1, 0, 1]) / np.sqrt(2)
    man = run(table, 0, [0, 0, 0], EYE_Q, 1, c, across)
    exact, _, _ = oracle.signed_distance_local(Box([0.5, 0.5, 0.5]).vertices, [0, 0, 0], np.eye(3),
                                               Capsule(0.1, 1.0).core_points, c,
                                               quat.to_matrix(across), 0.0, 0.1)
    assert exact == pytest.approx(-d - 0.1)
    assert man.distance[0] == pytest.approx(exact, abs=1e-9)
    assert man.axis_kind[0] == AXIS_CORE_EDGE and man.count[0] == 1
    assert np.allclose(man.normal[0], np.array([1, 0, 1]) / np.sqrt(2))
    assert man.separation[0, 0] == pytest.approx(exact)
    # The point is midway between the edge point (0.5, 0, 0.5) and the capsule surface.
    assert np.allclose(man.points[0, 0], [0.5, 0, 0.5] + 0.5 * exact * man.normal[0])


def test_mixed_pairs_swap_flips_normal_exactly():
    rng = np.random.default_rng(12)
    shapes = [Sphere(0.3), Capsule(0.2, 0.4), Box([0.5, 0.3, 0.4]), make_hull(rng.normal(size=(12, 3)) * 0.5)]
    table = ShapeTable(shapes)
    m = 400
    ia = rng.integers(0, 2, m)          # round
    ib = rng.integers(0, 4, m)          # anything
    pa = rng.uniform(-1, 1, (m, 3))
    pb = pa + rng.uniform(-1, 1, (m, 3))
    qa = quat.normalize(rng.normal(size=(m, 4)))
    qb = quat.normalize(rng.normal(size=(m, 4)))
    ab = collide(table, ia, pa, qa, ib, pb, qb, margin=0.1)
    ba = collide(table, ib, pb, qb, ia, pa, qa, margin=0.1)
    mixed = ib >= 2
    for man1, man2, sel in ((ab, ba, mixed),):
        assert np.array_equal(man1.count[sel], man2.count[sel])
        assert np.allclose(man1.normal[sel], -man2.normal[sel], atol=1e-12)
        assert np.allclose(man1.points[sel], man2.points[sel], atol=1e-12)
        assert np.array_equal(man1.ids[sel], man2.ids[sel])
    assert (ab.count[mixed] > 0).sum() > 50


def test_round_and_polytope_distances_match_oracle():
    """Signed distance of every kind pairing (either order) against the Qhull oracle, and the
    manifold's points lie on the two surfaces with the reported separations."""
    rng = np.random.default_rng(13)
    shapes = [Sphere(0.3), Capsule(0.2, 0.4), Sphere(0.05), Capsule(0.1, 1.0), Box([0.5, 0.3, 0.4]),
              make_hull(rng.normal(size=(15, 3)) * 0.5), make_hull(rng.uniform(-0.6, 0.6, (30, 3)))]
    table = ShapeTable(shapes)
    m = 1200
    ia = rng.integers(0, len(shapes), m)
    ib = rng.integers(0, len(shapes), m)
    pa = rng.uniform(-1, 1, (m, 3))
    pb = pa + rng.normal(size=(m, 3)) * 0.6
    qa = quat.normalize(rng.normal(size=(m, 4)))
    qb = quat.normalize(rng.normal(size=(m, 4)))
    margin = 0.05
    man = collide(table, ia, pa, qa, ib, pb, qb, margin=margin)
    n_round = 0
    for k in range(0, m, 2):
        sa, sb = shapes[ia[k]], shapes[ib[k]]
        if sa.kind == 0 and sb.kind == 0:
            continue  # polytope pairs are covered above and in test_sat
        n_round += 1
        ra, rb = quat.to_matrix(qa[k]), quat.to_matrix(qb[k])
        exact, n_exact, _ = oracle.signed_distance_local(sa.core_points, pa[k], ra, sb.core_points,
                                                         pb[k], rb, sa.radius, sb.radius)
        assert man.distance[k] == pytest.approx(exact, abs=1e-7)
        assert (man.count[k] > 0) == (exact <= margin)
        if man.count[k] == 0:
            continue
        # The deepest point's separation is the exact signed distance; when the cores overlap
        # the face bias may keep a face axis slightly worse than an edge axis (as for polytopes).
        core = exact + sa.radius + sb.radius
        size = min(sa.bounding_radius(), sb.bounding_radius())
        tol = 1e-7 if core > 0 else REL_TOL * abs(core) + ABS_TOL * size
        deepest = man.separation[k, :man.count[k]].min()
        assert exact - tol <= deepest <= exact + 1e-7
        if exact > 1e-6:
            assert np.allclose(man.normal[k], n_exact, atol=1e-5)
    assert n_round > 300


def test_per_pair_margins_equal_scalar_calls():
    """collide() takes one margin per pair: same answers as calls with each scalar margin
    (the same contacts and feature ids; positions to round-off: numpy's products of a batch
    of 600 and of its quarter can round the last bit differently on some CPUs)."""
    rng = np.random.default_rng(23)
    shapes = [Sphere(0.3), Capsule(0.2, 0.4), Box([0.5, 0.3, 0.4]), make_hull(rng.normal(size=(12, 3)) * 0.5)]
    table = ShapeTable(shapes)
    m = 600
    ia = rng.integers(0, 4, m)
    ib = rng.integers(0, 4, m)
    pa = rng.uniform(-1, 1, (m, 3))
    pb = pa + rng.normal(size=(m, 3)) * 0.7
    qa = quat.normalize(rng.normal(size=(m, 4)))
    qb = quat.normalize(rng.normal(size=(m, 4)))
    levels = np.array([0.0, 0.02, 0.1, 0.3])
    margin = levels[rng.integers(0, 4, m)]
    mixed = collide(table, ia, pa, qa, ib, pb, qb, margin=margin)
    for lv in levels:
        sel = margin == lv
        one = collide(table, ia[sel], pa[sel], qa[sel], ib[sel], pb[sel], qb[sel], margin=lv)
        for name in ("count", "ids"):
            assert np.array_equal(getattr(mixed, name)[sel], getattr(one, name)), name
        for name in ("normal", "points", "separation"):
            np.testing.assert_allclose(getattr(mixed, name)[sel], getattr(one, name),
                                       rtol=0.0, atol=1e-12, err_msg=name)
    # Every reported point is within its own pair's margin.
    assert np.all(mixed.separation[mixed.count > 0, 0] <= margin[mixed.count > 0])
    with pytest.raises(Exception, match="NaN"):
        collide(table, ia[:2], pa[:2], qa[:2], ib[:2], pb[:2], qb[:2], margin=np.nan)


def test_degenerate_batch_invariants():
    """A mixed batch with nasty poses (coincident centres, identical orientations, 10 km from the
    origin, 1 mm boxes next to 100 m slabs, a flat-sided tetrahedron, zero-length capsule cores):
    outputs stay finite and well-formed, and no overlapping pair loses its contact."""
    from engine.shapes.hull import ConvexHull
    rng = np.random.default_rng(5)
    shapes = [Box([0.5, 0.5, 0.5]), Box([1e-3, 1e-3, 1e-3]), Box([100, 100, 1]), Sphere(0.3),
              Capsule(0.2, 0.5), Capsule(0.2, 0.0), ConvexHull(rng.normal(size=(30, 3))),
              ConvexHull(np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1.0]]))]
    table = ShapeTable(shapes)
    m = 4000
    ia = rng.integers(0, len(shapes), m)
    ib = rng.integers(0, len(shapes), m)
    pa = rng.uniform(-1, 1, (m, 3)) * rng.choice([1.0, 1e4], (m, 1))
    pb = pa + rng.normal(size=(m, 3)) * rng.choice([0.0, 1e-9, 0.1, 1.0], (m, 1))
    qa = quat.normalize(rng.normal(size=(m, 4)))
    qb = np.where(rng.random((m, 1)) < 0.3, qa, quat.normalize(rng.normal(size=(m, 4))))
    margin = 0.02
    man = collide(table, ia, pa, qa, ib, pb, qb, margin=margin)
    used = np.arange(4)[None] < man.count[:, None]
    assert np.all(np.isfinite(man.points[used])) and np.all(np.isfinite(man.separation[used]))
    assert np.all(man.separation[used] <= margin)
    assert np.all(np.isinf(man.separation[~used])) and np.all(man.ids[~used] == 0)
    assert np.allclose(np.linalg.norm(man.normal, axis=1), 1.0)
    for j in range(4):
        for k in range(j):
            both = used[:, j] & used[:, k]
            assert not np.any(man.ids[both, j] == man.ids[both, k])
    assert (man.count == 0).sum() > 100 and (man.count == 4).sum() > 100
    for k in range(0, m, 23):
        sa, sb = shapes[ia[k]], shapes[ib[k]]
        exact, _, _ = oracle.signed_distance_local(sa.core_points, pa[k], quat.to_matrix(qa[k]),
                                                   sb.core_points, pb[k], quat.to_matrix(qb[k]),
                                                   sa.radius, sb.radius)
        if exact < -1e-9:
            assert man.count[k] > 0
        if man.count[k] == 0:
            assert exact > margin - 1e-9


def test_last_resort_point_when_clipping_finds_nothing(monkeypatch):
    """If face clipping ever returned nothing for an overlapping pair, the pair still gets one
    point at B's deepest vertex with the support gap along the normal as its separation."""
    import engine.collision.narrowphase as nph

    monkeypatch.setattr(nph, "CLIP_FACES", False)
    hull = make_hull(np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1.0], [1, 1, 0.2]]))
    table = ShapeTable([Box([1.0, 1.0, 0.5]), hull])
    # The hull's vertex (0, 0, 0) 0.05 below the box top (z = 0.5), the rest above it.
    man = run(table, 0, [0, 0, 0], EYE_Q, 1, [0.2, 0.1, 0.45], EYE_Q, margin=0.0)
    assert man.count[0] == 1
    assert man.separation[0, 0] == pytest.approx(-0.05)
    assert np.allclose(man.points[0, 0], [0.2, 0.1, 0.475])
    from engine.collision.clip import ID_EDGE, ID_FALLBACK
    assert man.ids[0, 0] >> 59 in (ID_EDGE, ID_FALLBACK)
    # Without any edge axis either (the SAT's edge pair hidden), the vertex fallback answers.
    monkeypatch.setattr(nph, "EDGE_FALLBACK", False)    # the SAT's edge pair hidden
    man = run(table, 0, [0, 0, 0], EYE_Q, 1, [0.2, 0.1, 0.45], EYE_Q, margin=0.0)
    assert man.count[0] == 1 and man.ids[0, 0] >> 59 == ID_FALLBACK
    assert man.separation[0, 0] == pytest.approx(-0.05)
    assert np.allclose(man.points[0, 0], [0.2, 0.1, 0.475])



@pytest.mark.parametrize("gap", [-0.05, 0.03])
def test_last_resort_point_is_on_the_tip_under_b_face(monkeypatch, gap):
    """Where the SAT axis is B's face, the fallback point is A's vertex touching it, not a
    corner of B's face (all of which tie as B's deepest): a rock's tip poking up into a box
    bottom, gap below (overlap) or above (speculative, within the margin) the apex. At the
    corner, 30-50 cm off, the contact spun the falling rock onto the tip (rock_seeds seed 7)."""
    import engine.collision.narrowphase as nph

    monkeypatch.setattr(nph, "CLIP_FACES", False)
    monkeypatch.setattr(nph, "EDGE_FALLBACK", False)    # the SAT's edge pair hidden
    apex = np.array([0.0, 0.0, 1.0])
    pyramid = make_hull(np.array([[-0.5, -0.5, 0], [0.5, -0.5, 0], [0.5, 0.5, 0],
                                  [-0.5, 0.5, 0], apex]))
    table = ShapeTable([pyramid, Box([0.5, 0.5, 0.25])])
    man = run(table, 0, [0, 0, 0], EYE_Q, 1, [0.2, 0.1, 1.25 + gap], EYE_Q, margin=0.05)
    assert man.axis_kind[0] == FACE_B
    assert man.count[0] == 1 and man.ids[0, 0] >> 59 == ID_FALLBACK
    assert man.separation[0, 0] == pytest.approx(gap)
    # Midway between the apex and the box's bottom face above (or below) it.
    assert np.allclose(man.points[0, 0], apex + [0, 0, 0.5 * gap])


# --------------------------------------------------------------------------- edge axes, parallel faces

def _column_gap(planes_a, planes_b, p, n):
    """Gap along n between A's surface and B's through point p, by ray casting against the
    half-spaces (Qhull equations: e[:3] . x + e[3] <= 0 inside): A's exit minus B's entry.
    Independent of the engine's clipping: brute force over every plane of both hulls."""
    def span(eq):
        den = eq[:, :3] @ n
        num = -(eq[:, :3] @ p + eq[:, 3])            # e.n t <= num
        t_hi = np.min(np.where(den > 1e-15, num / np.where(den > 1e-15, den, 1.0), np.inf))
        t_lo = np.max(np.where(den < -1e-15, num / np.where(den < -1e-15, den, 1.0), -np.inf))
        return t_lo, t_hi
    a_lo, a_hi = span(planes_a)
    b_lo, b_hi = span(planes_b)
    assert a_lo <= a_hi + 1e-9 and b_lo <= b_hi + 1e-9, "the column through the point misses a shape"
    return b_lo - a_hi


def _world_planes(shape, pos, q):
    from scipy.spatial import ConvexHull
    return ConvexHull(oracle.transform_points(shape.vertices, pos, quat.to_matrix(q))).equations


def _crossed_beams(rng, count):
    """Poses of beam B lying across beam A, both tilted by 1-2 degrees about random axes,
    slightly penetrating: the SAT mostly picks an edge-edge axis here (checked below)."""
    out = []
    for _ in range(count):
        qa = q_axis(rng.normal(size=3), np.radians(rng.uniform(0.0, 1.0)))
        qb = q_axis(rng.normal(size=3) * [1, 1, 0.2], np.radians(rng.uniform(1.0, 2.0)))
        pb = np.array([rng.uniform(-0.3, 0.3), rng.uniform(-0.3, 0.3), 0.4 - rng.uniform(0.0, 0.01)])
        out.append((qa, pb, qb))
    return out


def test_crossed_beams_edge_axis_gives_clipped_manifold():
    """Two crossed 1.6 x 0.4 x 0.4 beams a degree or two apart touch over a square: even when the
    SAT picks an edge-edge axis, the manifold has >= 2 points, each with the true gap along the
    normal (ray casting), the deepest at the exact penetration depth (Qhull oracle)."""
    rng = np.random.default_rng(31)
    beams = [Box([0.8, 0.2, 0.2]), Box([0.2, 0.8, 0.2])]
    table = ShapeTable(beams)
    n_edge = 0
    for qa, pb, qb in _crossed_beams(rng, 40):
        man = run(table, 0, [0, 0, 0], qa, 1, pb, qb, margin=0.02)
        exact, n_exact, _ = oracle.signed_distance_local(beams[0].vertices, np.zeros(3), quat.to_matrix(qa),
                                                         beams[1].vertices, pb, quat.to_matrix(qb))
        if man.axis_kind[0] != EDGE:
            continue
        n_edge += 1
        n = man.normal[0]
        assert np.allclose(n, n_exact, atol=1e-9)
        pts, sep, ids = used(man)
        assert len(pts) >= 2
        assert sep.min() == pytest.approx(exact, abs=1e-10)
        assert np.all(sep <= 0.02)
        pa_, pb_ = _world_planes(beams[0], np.zeros(3), qa), _world_planes(beams[1], pb, qb)
        for p, s in zip(pts, sep):
            assert _column_gap(pa_, pb_, p, n) == pytest.approx(s, abs=1e-10)
            # Stored midway: the surfaces are s/2 either side along the normal.
            assert _column_gap(pa_, pb_, p - 0.5 * s * n, n) == pytest.approx(s, abs=1e-10)
        # The points span the contact square (side 0.4): not a cluster at one corner.
        assert np.ptp(pts[:, 0]) > 0.2 or np.ptp(pts[:, 1]) > 0.2
        assert len(set(ids.tolist())) == len(ids)
    assert n_edge >= 20


def test_crossed_beams_edge_manifold_ids_stable():
    """Ids of the clipped edge-axis manifold survive 1e-6 pose jitter (same point, same id)."""
    rng = np.random.default_rng(32)
    table = ShapeTable([Box([0.8, 0.2, 0.2]), Box([0.2, 0.8, 0.2])])
    n_edge = 0
    for qa, pb, qb in _crossed_beams(rng, 12):
        base = run(table, 0, [0, 0, 0], qa, 1, pb, qb, margin=0.02)
        if base.axis_kind[0] != EDGE:
            continue
        n_edge += 1
        bp, _, bi = used(base)
        for _ in range(10):
            dq = q_axis(rng.normal(size=3), 1e-6)
            man = run(table, 0, [0, 0, 0], qa, 1, pb + rng.normal(size=3) * 1e-6, quat.multiply(dq, qb),
                      margin=0.02)
            assert man.count[0] == base.count[0]
            pts, _, ids = used(man)
            for p, i in zip(pts, ids):
                k = np.argmin(np.linalg.norm(bp - p, axis=1))
                assert np.linalg.norm(bp[k] - p) < 1e-4 and bi[k] == i
    assert n_edge >= 5


def test_edge_axis_between_steep_faces_keeps_one_point():
    """Boxes crossed edge on edge (faces 45 deg from the axis): a true point contact, no clipping."""
    table = ShapeTable([Box([0.5, 0.5, 0.5])])
    h = 0.5 * np.sqrt(2.0)
    man = run(table, 0, [0, 0, 0], q_axis([1, 0, 0], np.pi / 4), 0, [0, 0, 2 * h - 0.01],
              q_axis([0, 1, 0], np.pi / 4), margin=0.05)
    assert man.axis_kind[0] == EDGE and man.count[0] == 1
    assert man.separation[0, 0] == pytest.approx(-0.01)


def test_random_hull_edge_manifolds_match_ray_truth():
    """Random hulls whose manifold axis is an edge pair: every point's separation is the true
    gap along the normal (ray casting), the deepest equals the support gap along the normal
    (brute force over the vertices), which is the exact signed distance when overlapping and
    the SAT chose the edge axis. (An edge axis also stands in when a deep face clip comes out
    empty; its support gap is then below the exact value, never above.)"""
    rng = np.random.default_rng(33)
    m = 1500
    shapes, table, ia, ib, pa, pb, qa, qb = random_batch(
        rng, 8, m, 1, 0.7, "quaternions")
    man = collide(table, ia, pa, qa, ib, pb, qb, margin=0.05)
    multi = np.nonzero((man.axis_kind == EDGE) & (man.count >= 2))[0]
    assert len(multi) >= 5
    n_exact = n_over = 0
    for k in multi:
        sa, sb = shapes[ia[k]], shapes[ib[k]]
        wa = _world_planes(sa, pa[k], qa[k])
        wb = _world_planes(sb, pb[k], qb[k])
        n = man.normal[k]
        pts, sep, _ = used(man, k)
        for p, s in zip(pts, sep):
            assert _column_gap(wa, wb, p, n) == pytest.approx(s, abs=1e-9)
        wa_v = oracle.transform_points(sa.vertices, pa[k], quat.to_matrix(qa[k]))
        wb_v = oracle.transform_points(sb.vertices, pb[k], quat.to_matrix(qb[k]))
        support_gap = (wb_v @ n).min() - (wa_v @ n).max()
        assert sep.min() >= support_gap - 1e-9
        if man.distance[k] < 0:
            exact, _, _ = oracle.signed_distance_local(sa.vertices, pa[k], quat.to_matrix(qa[k]),
                                                       sb.vertices, pb[k], quat.to_matrix(qb[k]))
            assert support_gap <= exact + 1e-9
            n_over += 1
            if abs(support_gap - exact) < 1e-9:   # the SAT's own edge axis: deepest is exact
                n_exact += 1
                assert sep.min() == pytest.approx(exact, abs=1e-9)
    assert n_over >= 5 and n_exact >= 0.8 * n_over


def test_ids_survive_sat_axis_switches():
    """Tilting beam B across beam A in 0.01 deg steps makes the SAT switch between A's face,
    B's face and edge axes (clipped between the same faces); a contact point that persists
    across a switch keeps its id, so warm starting survives the switch."""
    rng = np.random.default_rng(34)
    table = ShapeTable([Box([0.8, 0.2, 0.2]), Box([0.2, 0.8, 0.2])])
    switches = persisting = 0
    seen = set()
    for _ in range(6):
        qa = q_axis(rng.normal(size=3), np.radians(rng.uniform(0.0, 1.0)))
        axis = rng.normal(size=3) * [1, 1, 0.2]
        pb = np.array([rng.uniform(-0.2, 0.2), rng.uniform(-0.2, 0.2), 0.395])
        prev = None
        for deg in np.arange(0.0, 3.0, 0.01):
            man = run(table, 0, [0, 0, 0], qa, 1, pb, q_axis(axis, np.radians(deg)), margin=0.02)
            seen.add(int(man.axis_kind[0]))
            if prev is not None and man.axis_kind[0] != prev.axis_kind[0]:
                switches += 1
                bp, _, bi = used(prev)
                for p, i in zip(*used(man)[::2]):
                    k = np.argmin(np.linalg.norm(bp - p, axis=1))
                    if np.linalg.norm(bp[k] - p) < 2e-3:
                        persisting += 1
                        assert bi[k] == i
            prev = man
    assert switches >= 5 and persisting >= 2 * switches and seen == {0, 1, EDGE}


def face_contact(table, ref, ref_face, inc, rot, trans, margin, flip, inc_face):
    """clip_kernels.face_clip for one pair, as (points, separation, ids, count) of 1 row."""
    from engine.collision import clip_kernels
    tab = clip_kernels.table_arrays(table)
    sc = clip_kernels.scratch(max(table.face_loops.shape[2], table.patch_loops.shape[2]),
                              table.points.shape[1])
    pts, sep, ids = np.zeros((1, 4, 3)), np.zeros((1, 4)), np.zeros((1, 4), np.int64)
    count, _ = clip_kernels.face_clip(tab, ref, ref_face, inc, np.ascontiguousarray(rot[0]),
                                      np.ascontiguousarray(trans[0]), margin, flip, inc_face,
                                      np.zeros(3), False, sc, pts[0], sep[0], ids[0])
    return pts, sep, ids, np.array([count])


def test_face_ids_name_a_and_b_features_whichever_face_is_reference():
    """Parallel faces (an octagon of two squares): clipping with A's face as reference or with
    B's gives the same points, and the same ids (they name A's and B's features)."""
    from engine.collision.sat import relative_pose
    table = ShapeTable([Box([0.5, 0.5, 0.5]), Box([0.5, 0.5, 0.4])])
    for angle in (0.3, np.pi / 4, 0.0):
        ra = np.eye(3)[None]
        rb = quat.to_matrix(q_axis([0, 0, 1], angle))[None]
        pb = np.array([[0.05, -0.03, 0.9 - 0.01]])
        rot, trans = relative_pose(np.zeros((1, 3)), ra, pb, rb)
        top_a, bottom_b = 5, 4     # +z of A, -z of B
        pa_, sa, ia_, ca = face_contact(table, 0, top_a, 1, rot, trans, 0.0, False, bottom_b)
        rt = rot.transpose(0, 2, 1)
        pb_, sb, ib_, cb = face_contact(table, 1, bottom_b, 0, rt,
                                        -(rt @ trans[:, :, None])[:, :, 0], 0.0, True, top_a)
        assert ca[0] == cb[0] == 4
        pb_world = pb_[0] @ rb[0].T + pb[0]        # B's frame -> A's (= world)
        for p, s, i in zip(pa_[0], sa[0], ia_[0]):
            k = np.argmin(np.linalg.norm(pb_world - p, axis=1))
            assert np.linalg.norm(pb_world[k] - p) < 1e-12
            assert sb[0, k] == pytest.approx(s, abs=1e-12) and ib_[0, k] == i
