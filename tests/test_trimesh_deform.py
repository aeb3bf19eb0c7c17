"""Deforming triangle meshes: TriangleMesh.set_vertices against a mesh built afresh from the
same vertices (normals, active edges, corners), refit BVH queries against brute force,
validation, and a World that collides with the new surface (a box lifted by a rising floor)."""
import numpy as np
import pytest
from test_trimesh import cube_mesh, grid_mesh

from engine import World
from engine.core.errors import EngineError
from engine.shapes.primitives import Box
from engine.shapes.trimesh import TriangleMesh


def wavy(n, amp, phase=0.0, size=4.0):
    V, T = grid_mesh(n, size=size, z=lambda x, y: amp * np.sin(2 * x + phase) * np.cos(y))
    return V - [size / 2, size / 2, 0], T


def test_set_vertices_equals_a_fresh_build():
    V0, T = wavy(10, 0.0)              # flat: every interior edge inactive
    V1, _ = wavy(10, 0.4, phase=0.7)   # wavy: convex and concave edges appear
    m = TriangleMesh(V0, T)
    moved = m.set_vertices(V1)
    fresh = TriangleMesh(V1, T)
    assert moved == pytest.approx(np.abs(V1 - V0).max(axis=0)[2], rel=0, abs=1e-12) or \
        moved == pytest.approx(np.linalg.norm(V1 - V0, axis=1).max(), abs=1e-12)
    np.testing.assert_array_equal(m.triangles, fresh.triangles)
    np.testing.assert_allclose(m.vertices, fresh.vertices, rtol=0, atol=0)
    np.testing.assert_allclose(m.normals, fresh.normals, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(m.active_front, fresh.active_front)
    np.testing.assert_array_equal(m.active_back, fresh.active_back)
    assert m.active_front.sum() > (m.neighbors < 0).sum()   # the waves made edges active
    np.testing.assert_array_equal(m.core_points, fresh.core_points)


def test_refit_bvh_queries_equal_brute_force_and_keep_the_tree():
    rng = np.random.default_rng(3)
    V0, T = wavy(16, 0.1)
    m = TriangleMesh(V0, T)
    order, starts = m.bvh_order.copy(), m.bvh_leaf_start.copy()
    for step in range(3):               # large, non-rigid deformations, one after another
        V = V0 + rng.normal(scale=0.3 * (step + 1), size=V0.shape)
        m.set_vertices(V)
        np.testing.assert_array_equal(m.bvh_order, order)   # refit, not rebuilt
        np.testing.assert_array_equal(m.bvh_leaf_start, starts)
        lo = rng.uniform(-3, 3, (400, 3))
        hi = lo + rng.uniform(0, 1.0, (400, 3))
        q, t = m.query(lo, hi)
        tv = V[T]                        # triangle boxes straight from the input vertices
        tl, th = tv.min(axis=1), tv.max(axis=1)
        hit = np.all((tl[None] <= hi[:, None]) & (lo[:, None] <= th[None]), axis=2)
        bq, bt = np.nonzero(hit)
        np.testing.assert_array_equal(q, bq)
        np.testing.assert_array_equal(t, bt)


def test_welded_seams_and_dropped_triangles_keep_their_numbering():
    V, T = cube_mesh()
    # Split every face's corners (as Blender's split normals/UV seams do): 36 input vertices.
    Vs = V[T].reshape(-1, 3)
    Ts = np.arange(len(Vs)).reshape(-1, 3)
    Ts = np.vstack([Ts, [[0, 0, 1]]])    # one degenerate triangle, dropped
    m = TriangleMesh(Vs, Ts)
    assert m.input_count == 36 and len(m.vertices) == 8 and m.dropped == 1
    m.set_vertices(2.0 * Vs)
    np.testing.assert_allclose(np.sort(m.vertices, axis=0), np.sort(2.0 * V, axis=0))
    assert m.active_front.sum() == 24   # still a closed cube after the weld


def test_bad_updates_raise_and_leave_the_mesh_unchanged():
    V, T = wavy(4, 0.2)
    m = TriangleMesh(V, T)
    before = m.vertices.copy(), m.normals.copy(), m.bvh_lo.copy()
    with pytest.raises(EngineError, match=r"\(25, 3\).*got shape \(24, 3\)"):
        m.set_vertices(V[:-1])
    bad = V.copy()
    bad[7, 2] = np.nan
    with pytest.raises(EngineError, match="vertex 7 is not finite"):
        m.set_vertices(bad)
    for a, b in zip(before, (m.vertices, m.normals, m.bvh_lo)):
        np.testing.assert_array_equal(a, b)


def test_collapsed_triangle_keeps_its_previous_normal():
    V, T = grid_mesh(2)
    m = TriangleMesh(V, T)
    flat = V.copy()
    t0 = m.triangles[0]
    flat[m.source_index[t0[1]]] = flat[m.source_index[t0[0]]]  # triangle 0 loses its area
    m.set_vertices(flat)
    assert np.all(np.isfinite(m.normals))
    np.testing.assert_array_equal(m.normals[0], [0.0, 0.0, 1.0])


def _floor_world(sleeping=True):
    w = World(sleeping=sleeping)
    V, T = wavy(6, 0.0)
    floor = w.add_body(TriangleMesh(V, T), kind="static")
    box = w.add_body(Box([0.25, 0.25, 0.25]), position=(0.1, -0.2, 0.25))
    return w, floor, box, V


@pytest.mark.parametrize("sleeping", [False, True])
def test_world_collides_with_the_new_surface_and_wakes_sleepers(sleeping):
    w, floor, box, V = _floor_world(sleeping)
    for _ in range(60):                  # settle (and fall asleep, when sleeping is on)
        w.step(1 / 24)
    assert w.sleeping[box] == sleeping
    assert w.positions[box, 2] == pytest.approx(0.25, abs=2e-3)
    rise = 0.5 / 48                      # 0.5 m over 2 s: 0.25 m/s, well under max_push
    for k in range(1, 49):
        w.set_mesh_vertices(floor, V + [0.0, 0.0, rise * k])
        w.step(1 / 24)
        # The box's bottom follows the surface within a few mm at every frame (the push is
        # positional: 5.2 mm is the soft contact's depth for a 0.25 m/s push, see deform.py).
        assert abs(w.positions[box, 2] - 0.25 - rise * k) < 6e-3, k
        assert not w.sleeping[box]
    w.set_mesh_vertices(floor, V + [0.0, 0.0, 0.5])
    for _ in range(24):                  # the floor has stopped: the box is not thrown
        w.step(1 / 24)
    assert w.positions[box, 2] == pytest.approx(0.75, abs=3e-3)
    assert abs(w.linear_velocities[box, 2]) < 0.05


def test_world_refuses_shared_and_non_mesh_bodies():
    w = World()
    V, T = wavy(3, 0.0)
    mesh = TriangleMesh(V, T)
    a = w.add_body(mesh, kind="static")
    w.add_body(mesh, position=(5, 0, 0), kind="static")
    c = w.add_body(Box([1, 1, 1]), kind="static", position=(0, 9, 0))
    with pytest.raises(EngineError, match=r"shares its TriangleMesh with bodies \[1\]"):
        w.set_mesh_vertices(a, V)
    with pytest.raises(EngineError, match="not a triangle mesh"):
        w.set_mesh_vertices(c, V)


def test_deforming_is_deterministic():
    runs = []
    for _ in range(2):
        w, floor, box, V = _floor_world()
        for k in range(30):
            w.set_mesh_vertices(floor, V + [0.0, 0.0, 0.02 * np.sin(0.3 * k)] * (V[:, :1] > 0))
            w.step(1 / 24)
        runs.append(w.get_state())
    for key in runs[0]:
        np.testing.assert_array_equal(runs[0][key], runs[1][key])
