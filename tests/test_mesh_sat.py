"""engine/collision/mesh_sat.py (polytope vs one-sided triangle SAT) and the face-axis cull of
engine/collision/mesh_contacts.py, against brute force: the exhaustive edge query (every edge pair,
full projections), the exact signed distance of the Minkowski difference (tests/oracle.py),
and the uncut contact routine."""
import numpy as np
import pytest
from oracle import random_hull_points, random_rotations, signed_distance

from engine.collision import mesh_contacts, mesh_sat
from engine.collision.shape_table import ShapeTable
from engine.shapes.hull import ConvexHull
from engine.shapes.primitives import Box
from engine.shapes.trimesh import TriangleMesh

SHAPES = [Box([0.5, 0.3, 0.2]), Box([0.2, 0.2, 0.2]),
          ConvexHull(random_hull_points(np.random.default_rng(11), 20, 0.5)),
          ConvexHull(random_hull_points(np.random.default_rng(12), 40, 0.4,
                                        stretch=(1.0, 0.6, 0.3)))]


def _local_rows(rng, m):
    """M (polytope, triangle) rows in the polytope's frame, the triangle's normal turned to
    the polytope's centre (what mesh_contacts hands to mesh_sat), many of them overlapping."""
    table = ShapeTable(SHAPES)
    ids = rng.integers(0, len(SHAPES), m)
    rot = random_rotations(rng, m)
    t = rng.normal(size=(m, 3, 3)) * 0.6
    t += (rng.normal(size=(m, 1, 3)) * 0.5 - t.mean(axis=1, keepdims=True))
    t = np.matmul(t, rot)
    cr = np.cross(t[:, 1] - t[:, 0], t[:, 2] - t[:, 0])
    n = cr / np.linalg.norm(cr, axis=1)[:, None]
    cen = mesh_contacts.vertex_mean(table.points[ids], table.npoints[ids])
    side = np.where(np.einsum("mi,mi->m", n, cen - t[:, 0]) >= 0, 1.0, -1.0)
    return table, ids, t, n * side[:, None]


def _queries(table, ids, t, N):
    vmax = int(table.npoints[ids].max())
    fmax = int(table.nfaces[ids].max())
    sep_t, sep_f, _ = mesh_sat.face_queries(table.points[ids, :vmax], table.planes[ids, :fmax],
                                            t, N)
    return sep_t, sep_f


def test_face_queries_match_brute_force():
    rng = np.random.default_rng(3)
    table, ids, t, N = _local_rows(rng, 200)
    sep_t, sep_f = _queries(table, ids, t, N)
    for i in range(len(ids)):
        sh = SHAPES[ids[i]]
        assert sep_t[i] == pytest.approx(np.min(sh.vertices @ N[i]) - t[i, 0] @ N[i], abs=1e-12)
        gaps = np.min(t[i] @ sh.planes[:, :3].T, axis=0) - sh.planes[:, 3]
        assert sep_f[i] == pytest.approx(gaps.max(), abs=1e-12)


def test_edge_query_matches_exhaustive_and_exact_depth():
    """Overlapping rows: max(face, Minkowski edge) equals the exhaustive query's max and the
    exact penetration depth (unless the triangle's back face, which neither query tests,
    would be the answer). Every row: the Minkowski value is a true projection gap along its
    axis, never above the exhaustive one, and the two agree on apart / overlapping."""
    rng = np.random.default_rng(4)
    table, ids, t, N = _local_rows(rng, 400)
    sep_t, sep_f = _queries(table, ids, t, N)
    sep_e, e, k, axis = mesh_sat.edge_query(table, ids, t, N)
    sep_x, _, _, _ = mesh_sat.edge_query_exhaustive(table, ids, t)
    face = np.maximum(sep_t, sep_f)
    best, best_x = np.maximum(face, sep_e), np.maximum(face, sep_x)
    n_edge_wins = n_exact = 0
    for i in range(len(ids)):
        sh = SHAPES[ids[i]]
        scale = sh.bounding_radius()
        assert sep_e[i] <= sep_x[i] + 1e-12 * scale
        if np.isfinite(sep_e[i]):
            # The axis is unit, a normal of the edge pair's Minkowski face, and the value is
            # the gap of the full projections of both shapes along it.
            a0, a1 = sh.vertices[sh.edges[e[i]]]
            b0, b1 = t[i, k[i]], t[i, (k[i] + 1) % 3]
            assert np.linalg.norm(axis[i]) == pytest.approx(1.0, abs=1e-12)
            assert abs(axis[i] @ (a1 - a0)) < 1e-9 and abs(axis[i] @ (b1 - b0)) < 1e-9
            gap = np.min(t[i] @ axis[i]) - np.max(sh.vertices @ axis[i])
            assert sep_e[i] == pytest.approx(gap, abs=1e-12 * scale)
        s, _, _ = signed_distance(sh.vertices, t[i])
        assert best[i] <= s + 1e-9 * scale                 # a lower bound, always
        assert (best[i] > 0) == (best_x[i] > 0) or abs(s) < 1e-9
        if s < 0:
            back = t[i, 0] @ N[i] - np.max(sh.vertices @ N[i])    # the triangle's -N face
            assert best[i] == pytest.approx(best_x[i], abs=1e-12 * scale)
            if back < best[i] - 1e-9:
                n_exact += 1
                assert best[i] == pytest.approx(s, abs=1e-9 * scale)
            if sep_e[i] > face[i] + 1e-6:
                n_edge_wins += 1
    assert n_exact > 100 and n_edge_wins > 10


def _ground(rng):
    """A bumpy 24 x 24 grid (1,152 triangles) 4.8 m across."""
    g = np.linspace(-2.4, 2.4, 25)
    x, y = np.meshgrid(g, g, indexing="ij")
    z = 0.04 * np.sin(3.1 * x) * np.sin(2.3 * y) + rng.uniform(-0.01, 0.01, x.shape)
    v = np.stack((x, y, z), -1).reshape(-1, 3)
    i, j = np.meshgrid(np.arange(24), np.arange(24), indexing="ij")
    a = (i * 25 + j).reshape(-1)
    return TriangleMesh(v, np.concatenate((np.stack((a, a + 25, a + 26), 1),
                                           np.stack((a, a + 26, a + 1), 1))))


def test_face_cull_changes_nothing(monkeypatch):
    """Bodies resting on, sinking into and hovering over a bumpy mesh: the contacts with the
    cull are exactly those without it (every row through every route)."""
    rng = np.random.default_rng(8)
    mesh = _ground(rng)
    table = ShapeTable(SHAPES)
    n = 60
    ids = rng.integers(0, len(SHAPES), n)
    rot = random_rotations(rng, n)
    pos = np.column_stack((rng.uniform(-2, 2, n), rng.uniform(-2, 2, n), np.zeros(n)))
    low = np.array([np.min((SHAPES[s].vertices @ r.T)[:, 2]) for s, r in zip(ids, rot)])
    pos[:, 2] = -low + rng.uniform(-0.06, 0.08, n)
    grow = 0.1
    lo = np.array([np.min(SHAPES[s].vertices @ r.T, axis=0) for s, r in zip(ids, rot)]) + pos
    hi = np.array([np.max(SHAPES[s].vertices @ r.T, axis=0) for s, r in zip(ids, rot)]) + pos
    qi, tri = mesh.query(lo - grow, hi + grow)
    margin = rng.uniform(0.005, 0.08, n)[qi]
    args = (table, ids[qi], pos[qi], rot[qi], mesh.triangle_vertices[tri], mesh.normals[tri],
            mesh.active_front[tri], mesh.active_back[tri], np.ones(len(qi), bool), margin, tri)
    slack = mesh_contacts.CULL_SLACK
    cut = mesh_contacts.collide_convex_triangles(*args)
    monkeypatch.setattr(mesh_contacts, "CULL_SLACK", np.inf)
    full = mesh_contacts.collide_convex_triangles(*args)
    # The cull did cut: the rows whose face gap (brute force, in the body's frame, from the
    # side of the body's centre) exceeds margin + CULL_SLACK * scale are most of them.
    tl = np.matmul(mesh.triangle_vertices[tri] - pos[qi][:, None], rot[qi])
    nl = np.matmul(mesh.normals[tri][:, None], rot[qi])[:, 0]
    table_ids = ids[qi]
    gap = np.empty(len(qi))
    for i, s in enumerate(table_ids):
        v = SHAPES[s].vertices
        n = nl[i] if (v.mean(axis=0) - tl[i, 0]) @ nl[i] >= 0 else -nl[i]
        sep_t = np.min(v @ n) - tl[i, 0] @ n
        sep_f = np.max(np.min(tl[i] @ SHAPES[s].planes[:, :3].T, axis=0) - SHAPES[s].planes[:, 3])
        gap[i] = max(sep_t, sep_f)
    near = gap <= margin + slack * table.bound_radius[table_ids]
    assert near.sum() < 0.8 * len(qi)
    assert (cut.count > 0).sum() > 100 and (cut.count == 0).sum() > 100
    np.testing.assert_array_equal(cut.count, full.count)
    live = cut.count > 0
    np.testing.assert_array_equal(cut.ids, full.ids)
    np.testing.assert_array_equal(cut.normal[live], full.normal[live])
    used = np.arange(4)[None] < cut.count[:, None]
    np.testing.assert_array_equal(cut.points[used], full.points[used])
    np.testing.assert_array_equal(cut.separation, full.separation)


def test_polytope_triangle_closest_matches_exact_distance():
    """Rows apart: the brute-force closest pair gives the exact distance of the Minkowski
    difference, its points lie on the two shapes and the normal joins them."""
    from engine.collision.mesh_distance import polytope_triangle_closest
    rng = np.random.default_rng(9)
    table, ids, t, N = _local_rows(rng, 500)
    sep_t, sep_f = _queries(table, ids, t, N)
    sep_e, _, _, _ = mesh_sat.edge_query(table, ids, t, N)
    apart = np.flatnonzero(np.maximum(np.maximum(sep_t, sep_f), sep_e) > 1e-6)
    assert len(apart) > 80
    dist, pa, pb, nrm = polytope_triangle_closest(table, ids[apart], t[apart])
    for j, i in enumerate(apart):
        sh = SHAPES[ids[i]]
        s, n_true, _ = signed_distance(sh.vertices, t[i])
        assert dist[j] == pytest.approx(s, abs=1e-10)
        assert np.linalg.norm(pb[j] - pa[j]) == pytest.approx(dist[j], abs=1e-12)
        np.testing.assert_allclose(nrm[j], n_true, atol=1e-6)
        # pa on the polytope (inside all planes, on one), pb on the triangle.
        d = sh.planes[:, :3] @ pa[j] - sh.planes[:, 3]
        assert d.max() == pytest.approx(0.0, abs=1e-10)
        s_b, _, _ = signed_distance(t[i], pb[j][None])
        assert s_b == pytest.approx(0.0, abs=1e-10)


def test_per_row_margins_match_one_call_per_margin():
    """One call with a margin per row gives what separate calls with each scalar margin give
    (the world now makes one call per mesh instead of one per margin bucket)."""
    rng = np.random.default_rng(10)
    mesh = _ground(rng)
    table = ShapeTable(SHAPES)
    n = 30
    ids = rng.integers(0, len(SHAPES), n)
    rot = random_rotations(rng, n)
    pos = np.column_stack((rng.uniform(-2, 2, n), rng.uniform(-2, 2, n),
                           rng.uniform(0.1, 0.35, n)))
    qi, tri = mesh.query(pos - 0.7, pos + 0.7)
    choice = np.array([0.01, 0.06])[qi % 2]
    args = (table, ids[qi], pos[qi], rot[qi], mesh.triangle_vertices[tri], mesh.normals[tri],
            mesh.active_front[tri], mesh.active_back[tri], np.ones(len(qi), bool))
    both = mesh_contacts.collide_convex_triangles(*args, choice, tri)
    for margin in (0.01, 0.06):
        sel = np.flatnonzero(choice == margin)
        one = mesh_contacts.collide_convex_triangles(*(a[sel] if isinstance(a, np.ndarray) else a
                                                       for a in args), margin, tri[sel])
        assert (one.count > 0).sum() > 20
        np.testing.assert_array_equal(one.count, both.count[sel])
        np.testing.assert_array_equal(one.ids, both.ids[sel])
        np.testing.assert_array_equal(one.separation, both.separation[sel])
