"""Triangle meshes: validation, adjacency and active edges, BVH queries (vs brute force),
convex-vs-triangle contacts (vs the exact Minkowski-difference oracle), internal-edge handling
and the reduction of many triangle contacts into manifolds."""
import numpy as np
import pytest
from oracle import random_hull_points, random_rotations, signed_distance

from engine.collision.mesh_contacts import collide_convex_triangles, reduce_manifolds
from engine.collision.shape_table import ShapeTable
from engine.core import quat
from engine.core.errors import EngineError
from engine.shapes.hull import ConvexHull
from engine.shapes.primitives import Box, Capsule, Sphere
from engine.shapes.trimesh import TriangleMesh, check_body_shape


def grid_mesh(n, size=1.0, z=None, jitter=0.0, rng=None):
    """An n x n grid of quads (2 triangles each) over [0, size]^2, heights z(x, y) or 0."""
    xs = np.linspace(0.0, size, n + 1)
    X, Y = np.meshgrid(xs, xs, indexing="ij")
    if jitter:
        X = X + rng.uniform(-jitter, jitter, X.shape) * (size / n) * ((X > 0) & (size > X))
        Y = Y + rng.uniform(-jitter, jitter, Y.shape) * (size / n) * ((Y > 0) & (size > Y))
    Z = np.zeros_like(X) if z is None else z(X, Y)
    V = np.stack([X.ravel(), Y.ravel(), Z.ravel()], axis=1)
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    a = (i * (n + 1) + j).ravel()
    b, c, d = a + (n + 1), a + (n + 1) + 1, a + 1
    T = np.concatenate([np.stack([a, b, c], 1), np.stack([a, c, d], 1)])
    return V, T


def cube_mesh(h=0.5):
    V = np.array([[x, y, z] for z in (-h, h) for y in (-h, h) for x in (-h, h)], dtype=float)
    quads = [[0, 2, 3, 1], [4, 5, 7, 6], [0, 1, 5, 4], [2, 6, 7, 3], [0, 4, 6, 2], [1, 3, 7, 5]]
    T = [[q[0], q[1], q[2]] for q in quads] + [[q[0], q[2], q[3]] for q in quads]
    return V, np.array(T)


# ------------------------------------------------------------------------------ validation

def test_degenerate_and_nan_triangles_are_dropped_and_counted():
    V = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [2, 0, 0], [np.nan, 0, 0], [1, 1, 0]], float)
    T = np.array([[0, 1, 2],      # good
                  [0, 1, 3],      # collinear: zero area
                  [0, 4, 2],      # NaN vertex
                  [1, 1, 2],      # repeated index
                  [1, 5, 2]])     # good
    m = TriangleMesh(V, T)
    assert m.dropped == 3
    assert len(m.triangles) == 2
    assert np.all(np.isfinite(m.vertices))


def test_empty_and_bad_input_raise_engine_errors():
    V = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], float)
    with pytest.raises(EngineError, match="no triangles"):
        TriangleMesh(V, np.zeros((0, 3), int))
    with pytest.raises(EngineError, match="degenerate"):
        TriangleMesh(np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0]], float), [[0, 1, 2]])
    with pytest.raises(EngineError, match="indices"):
        TriangleMesh(V, [[0, 1, 3]])
    with pytest.raises(EngineError):
        TriangleMesh(V[:, :2], [[0, 1, 2]])


def test_dynamic_mesh_is_refused_with_advice():
    m = TriangleMesh(*grid_mesh(2))
    with pytest.raises(EngineError, match="convex hull, a compound"):
        check_body_shape(m, "dynamic")
    check_body_shape(m, "static")
    check_body_shape(m, "kinematic")
    check_body_shape(Box(0.5), "dynamic")


# ------------------------------------------------------------------------------ adjacency

def _brute_neighbours(tri):
    edges = {}
    for t, (a, b, c) in enumerate(tri):
        for k, (u, v) in enumerate(((a, b), (b, c), (c, a))):
            edges.setdefault(frozenset((u, v)), []).append((t, k))
    nb = -np.ones((len(tri), 3), int)
    for users in edges.values():
        if len(users) == 2:
            (t1, k1), (t2, k2) = users
            nb[t1, k1], nb[t2, k2] = t2, t1
    return nb


def test_neighbours_match_brute_force_on_welded_seams():
    rng = np.random.default_rng(3)
    V, T = grid_mesh(6, jitter=0.3, rng=rng)
    # Split the vertices along a seam (duplicates at identical positions): welding must rejoin.
    V2 = np.concatenate([V, V])
    T2 = T.copy()
    T2[len(T) // 2:] += len(V)
    m = TriangleMesh(V2, T2)
    np.testing.assert_array_equal(m.neighbors, _brute_neighbours(m.triangles))
    # Boundary edges of a 6x6 grid: 4 * 6; each interior edge counted from both sides.
    assert (m.neighbors < 0).sum() == 24


def test_active_edges_flat_grid_and_cube():
    m = TriangleMesh(*grid_mesh(5))
    boundary = m.neighbors < 0
    np.testing.assert_array_equal(m.active_front, boundary)
    np.testing.assert_array_equal(m.active_back, boundary)
    c = TriangleMesh(*cube_mesh())
    # Cube: the 12 real edges are convex from outside (front), concave from inside (back);
    # the 6 face diagonals are flat. Each real edge appears in 2 triangles.
    tv = c.triangle_vertices
    e0, e1 = tv, np.roll(tv, -1, axis=1)
    diag = np.sum(np.abs(e1 - e0) > 1e-9, axis=2) == 2
    np.testing.assert_array_equal(c.active_front, ~diag)
    assert not c.active_back.any()
    assert c.active_front.sum() == 24


# ------------------------------------------------------------------------------ BVH

@pytest.mark.parametrize("n_tri", [1, 3, 5, 200, 2000])
def test_bvh_query_equals_brute_force(n_tri):
    rng = np.random.default_rng(n_tri)
    centre = rng.uniform(-5, 5, (n_tri, 1, 3))
    V = (centre + rng.normal(scale=0.3, size=(n_tri, 3, 3))).reshape(-1, 3)
    T = np.arange(3 * n_tri).reshape(-1, 3)
    m = TriangleMesh(V, T)
    lo = rng.uniform(-6, 6, (300, 3))
    hi = lo + rng.uniform(0, 2.0, (300, 3))
    q, t = m.query(lo, hi)
    tl, th = m.tri_lo, m.tri_hi
    hit = np.all((tl[None] <= hi[:, None]) & (lo[:, None] <= th[None]), axis=2)
    bq, bt = np.nonzero(hit)
    np.testing.assert_array_equal(q, bq)
    np.testing.assert_array_equal(t, bt)
    # Triangle boxes from the original corners (independent of the BVH's own arrays).
    tv = m.vertices[m.triangles]
    np.testing.assert_array_equal(tl, tv.min(axis=1))
    assert len(m.query(np.full((1, 3), 100.0), np.full((1, 3), 101.0))[0]) == 0


def test_bvh_node_boxes_contain_their_triangles():
    rng = np.random.default_rng(7)
    m = TriangleMesh(*grid_mesh(12, z=lambda x, y: 0.2 * np.sin(5 * x) * np.cos(3 * y)))
    d = m.bvh_depth
    first = 2 ** d - 1
    for leaf in range(2 ** d):
        s, c = m.bvh_leaf_start[leaf], m.bvh_leaf_count[leaf]
        tris = m.bvh_order[s:s + c]
        node = first + leaf
        while True:   # every ancestor contains the leaf's triangles
            assert np.all(m.bvh_lo[node] <= m.tri_lo[tris]) and np.all(m.tri_hi[tris] <= m.bvh_hi[node])
            if node == 0:
                break
            node = (node - 1) // 2
    assert sorted(m.bvh_order.tolist()) == list(range(len(m.triangles)))
    assert m.bvh_leaf_count.max() <= 4 and m.bvh_leaf_count.min() >= 1
    del rng


# ------------------------------------------------------------------------------ contacts

SHAPES = [Box([0.5, 0.3, 0.2]), Sphere(0.4), Capsule(0.2, 0.4),
          ConvexHull(random_hull_points(np.random.default_rng(11), 20, 0.5))]


def _random_triangle_pairs(rng, m):
    sid = rng.integers(0, len(SHAPES), m)
    rot = random_rotations(rng, m)
    tri = rng.normal(size=(m, 3, 3)) * 0.8
    cr = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    nrm = cr / np.linalg.norm(cr, axis=1)[:, None]
    pos = tri.mean(axis=1) + rng.normal(size=(m, 3)) * 0.5
    return sid, rot, tri, nrm, pos


def test_isolated_triangle_contacts_match_oracle():
    """All edges active (an isolated triangle): penetration depth = the exact depth from the
    Minkowski-difference oracle (up to the face bias), every contact point lies on the shape's
    surface (or inside, for round shapes' secondary points) and on the triangle."""
    rng = np.random.default_rng(1)
    table = ShapeTable(SHAPES)
    m = 300
    sid, rot, tri, nrm, pos = _random_triangle_pairs(rng, m)
    act = np.ones((m, 3), bool)
    out = collide_convex_triangles(table, sid, pos, rot, tri, nrm, act, act, np.ones(m, bool),
                                   margin=0.05, tri_index=np.arange(m))
    n_pen = n_near = 0
    for i in range(m):
        sh = SHAPES[sid[i]]
        pa = sh.core_points @ rot[i].T + pos[i]
        s, _, _ = signed_distance(pa, tri[i], sh.radius, 0.0)
        c = out.count[i]
        scale = sh.bounding_radius()
        if s < 0:
            n_pen += 1
            assert c > 0
            ms = out.separation[i, :c].min()
            assert ms <= s + 1e-4 * scale            # never shallower than the truth
            assert ms >= 1.05 * s - 1e-3 * scale - 1e-9  # deeper only by the face bias
        elif s < 0.04:
            n_near += 1
            assert c > 0, "speculative contact missed"
        for j in range(c):
            p, sj, nn = out.points[i, j], out.separation[i, j], out.normal[i]
            da, _, _ = signed_distance(pa, (p - 0.5 * sj * nn)[None], sh.radius, 0.0)
            db, _, _ = signed_distance(tri[i], (p + 0.5 * sj * nn)[None])
            assert da <= 1e-7 and abs(db) <= 1e-7
    assert n_pen > 100 and n_near > 5


def test_one_sided_triangles_ignore_shapes_behind():
    table = ShapeTable([Box(0.5), Sphere(0.5)])
    tri = np.array([[[-2, -2, 0], [2, -2, 0], [0, 2, 0]]], float)
    nrm = np.array([[0, 0, 1.0]])
    act = np.ones((1, 3), bool)
    for sid in (0, 1):
        for z, two, expect, nz in ((0.49, False, 1, -1), (-0.49, False, 0, 0), (-0.49, True, 1, 1)):
            out = collide_convex_triangles(table, [sid], np.array([[0, 0, z]]), np.eye(3)[None], tri,
                                           nrm, act, act, np.array([two]), margin=0.02)
            assert (out.count[0] > 0) == bool(expect)
            if expect:
                assert out.normal[0, 2] == pytest.approx(nz)
                assert out.separation[0, :out.count[0]].min() == pytest.approx(-0.01)


def _core_beside(core, tri, samples=201):
    """A core segment (2, 3) against a triangle, by brute force over samples along the core:
    None if some point of it projects inside the triangle (its prism), else the height of its
    point nearest the triangle along the normal facing the core's centre (the closest point
    of the triangle to any point outside the prism lies on an edge)."""
    p = core[0] + np.linspace(0.0, 1.0, samples)[:, None] * (core[1] - core[0])
    a, b, c = tri
    n = np.cross(b - a, c - a)
    side = [np.cross(v1 - v0, p - v0) @ n for v0, v1 in ((a, b), (b, c), (c, a))]
    if np.any((side[0] >= 0) & (side[1] >= 0) & (side[2] >= 0)):
        return None
    dist = np.full(samples, np.inf)
    for v0, v1 in ((a, b), (b, c), (c, a)):
        e = v1 - v0
        u = np.clip((p - v0) @ e / (e @ e), 0.0, 1.0)
        dist = np.minimum(dist, np.linalg.norm(p - (v0 + u[:, None] * e), axis=1))
    n = n / np.linalg.norm(n)
    n = n * (1.0 if (core.mean(axis=0) - a) @ n >= 0 else -1.0)
    return float((p[np.argmin(dist)] - a) @ n)


def test_round_shapes_beside_inactive_features():
    """Spheres and capsules near triangles whose edges are all inactive (flat or concave
    seams: every contact takes the face normal), where no point of the core lies over the
    triangle. Such a row reads the core's height along the normal, which holds next to the
    seam only (where the neighbour continues the surface): no contact farther than the
    margin from the triangle (brute force), and none deeper than the true distance once the
    core's nearest point is behind the plane (there the height is no depth). Fuzz seed 1197:
    a capsule 2.4 m beside a small closed mesh, its far end behind one triangle's plane, read
    3 m deep and was thrown."""
    rng = np.random.default_rng(7)
    shapes = [Sphere(0.4), Capsule(0.2, 0.6)]
    table = ShapeTable(shapes)
    m, margin = 2000, 0.05
    sid = rng.integers(0, 2, m)
    rot = random_rotations(rng, m)
    tri = rng.normal(size=(m, 3, 3)) * 0.8
    cr = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    nrm = cr / np.linalg.norm(cr, axis=1)[:, None]
    pos = tri.mean(axis=1) + rng.normal(size=(m, 3)) * 1.0
    off = np.zeros((m, 3), bool)
    out = collide_convex_triangles(table, sid, pos, rot, tri, nrm, off, off, np.ones(m, bool),
                                   margin=margin, tri_index=np.arange(m))
    beside = behind = 0
    for i in range(m):
        sh = shapes[sid[i]]
        pts = sh.core_points @ rot[i].T + pos[i]
        h = _core_beside(pts[[0, -1]], tri[i])
        if h is None:
            continue
        s, _, _ = signed_distance(pts, tri[i], sh.radius, 0.0)
        beside += 1
        if out.count[i]:
            assert s <= margin + 1e-9
            if h < 0.0:
                behind += 1
                assert out.separation[i, :out.count[i]].min() >= s - 1e-9
    assert beside > 800 and behind > 5


def _floor_contacts(mesh, sid, table, pos, q, active=True):
    lo = pos - 1.0
    hi = pos + 1.0
    _, tris = mesh.query(lo[None], hi[None])
    k = len(tris)
    af = mesh.active_front[tris] if active else np.ones((k, 3), bool)
    ab = mesh.active_back[tris] if active else np.ones((k, 3), bool)
    out = collide_convex_triangles(table, np.full(k, sid), np.repeat(pos[None], k, 0),
                                   np.repeat(quat.to_matrix(q)[None], k, 0),
                                   mesh.triangle_vertices[tris], mesh.normals[tris], af, ab,
                                   np.ones(k, bool), margin=0.02, tri_index=tris)
    return out, tris


def test_internal_edges_give_no_ghost_normals_on_a_tessellated_floor():
    """A box sinking 1 mm into a floor of 20 x 20 cm triangles, at random positions and yaw:
    every contact normal is the floor normal and the reduced manifold is one 4-point plane
    contact at the box's bottom corners. Without the active-edge flags the same queries do
    produce sideways (ghost) normals: the check is not vacuous."""
    rng = np.random.default_rng(5)
    mesh = TriangleMesh(*grid_mesh(20, size=4.0))
    table = ShapeTable([Box([0.5, 0.5, 0.5]), Sphere(0.5), Capsule(0.3, 0.4)])
    ghosts_without = 0
    for trial in range(40):
        sid = trial % 3
        yaw = rng.uniform(0, 2 * np.pi)
        q = quat.from_axis_angle([0, 0, 1.0], yaw)
        if sid == 2:
            q = quat.multiply(q, quat.from_axis_angle([1.0, 0, 0], np.pi / 2))  # lying down
        bottom = (0.5, 0.5, 0.3)[sid]
        pos = np.array([rng.uniform(1, 3), rng.uniform(1, 3), bottom - 0.001])
        out, tris = _floor_contacts(mesh, sid, table, pos, q)
        live = out.count > 0
        assert live.any()
        np.testing.assert_allclose(out.normal[live], np.tile([0, 0, -1.0], (live.sum(), 1)), atol=1e-12)
        red, grp, _ = reduce_manifolds(out, np.zeros(len(tris), int))
        assert len(red) == 1
        c = red.count[0]
        np.testing.assert_allclose(red.separation[0, :c], -0.001, atol=1e-9)
        if sid == 0:
            assert c == 4
            bottom = np.array([[sx, sy, -1] for sx in (-1, 1) for sy in (-1, 1)]) * 0.5
            corners = (quat.to_matrix(q) @ bottom.T).T + pos
            for p in red.points[0, :4]:
                assert np.min(np.linalg.norm(corners[:, :2] - p[:2], axis=1)) < 1e-9
        elif sid == 2:
            assert c == 2
        raw, _ = _floor_contacts(mesh, sid, table, pos, q, active=False)
        ghosts_without += np.sum((raw.count > 0) & (np.abs(raw.normal[:, 2]) < 0.999))
    assert ghosts_without > 0


def test_bowl_contacts_cluster_by_normal():
    """A box in the corner of a mesh box (floor + wall): two manifolds, one per surface."""
    V = np.array([[0, 0, 0], [4, 0, 0], [4, 4, 0], [0, 4, 0], [0, 0, 4], [0, 4, 4]], float)
    T = np.array([[0, 1, 2], [0, 2, 3], [0, 3, 5], [0, 5, 4]])   # floor z=0, wall x=0 (facing +x)
    mesh = TriangleMesh(V, T)
    table = ShapeTable([Box(0.5)])
    pos = np.array([0.499, 2.0, 0.498])
    out, tris = _floor_contacts(mesh, 0, table, pos, np.array([1.0, 0, 0, 0]))
    red, grp, rank = reduce_manifolds(out, np.zeros(len(tris), int))
    assert len(red) == 2
    normals = sorted(map(tuple, np.round(red.normal, 12)))
    assert normals == [(-1.0, 0.0, 0.0), (0.0, 0.0, -1.0)]
    for k in range(2):
        expect = -0.001 if red.normal[k, 0] < 0 else -0.002
        np.testing.assert_allclose(red.separation[k, :red.count[k]], expect, atol=1e-9)
        assert red.count[k] == 4


def test_reduce_manifolds_groups_independently():
    rng = np.random.default_rng(2)
    mesh = TriangleMesh(*grid_mesh(10, size=2.0))
    table = ShapeTable([Sphere(0.1)])
    k = 30
    pos = np.stack([rng.uniform(0.2, 1.8, k), rng.uniform(0.2, 1.8, k), np.full(k, 0.095)], 1)
    lo, hi = pos - 0.15, pos + 0.15
    qi, tris = mesh.query(lo, hi)
    out = collide_convex_triangles(table, np.zeros(len(qi), int), pos[qi],
                                   np.repeat(np.eye(3)[None], len(qi), 0),
                                   mesh.triangle_vertices[tris], mesh.normals[tris],
                                   mesh.active_front[tris], mesh.active_back[tris],
                                   np.ones(len(qi), bool), margin=0.01, tri_index=tris)
    red, grp, rank = reduce_manifolds(out, qi, n_groups=k)
    np.testing.assert_array_equal(grp, np.arange(k))   # one manifold per sphere
    np.testing.assert_allclose(red.separation[:, 0], -0.005, atol=1e-12)
    # The contact point is under each sphere's centre, midway into the overlap.
    np.testing.assert_allclose(red.points[:, 0, :2], pos[:, :2], atol=1e-12)
    np.testing.assert_allclose(red.points[:, 0, 2], -0.0025, atol=1e-12)

# World tests (plane, slide, bowl): tests/test_nonconvex_world.py.
