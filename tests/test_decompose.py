"""Approximate convex decomposition: a torus and an L-shaped prism. The parts' union covers the
solid (random points inside the analytic solid are inside some part's hull), no part strays
outside the solid by more than the tolerance (plus the sampling spacing), the part count is
within budget, and the result is deterministic. Also the building blocks: the exact clip of a
solid to a box and the ray-parity inside test, against analytic truth."""
import numpy as np
import pytest
from oracle import closest_point_triangle as oracle_cpt
from scipy.spatial import ConvexHull as QHull

from engine.core.errors import EngineError
from engine.shapes.compound import Compound
from engine.shapes.decompose import clip_solid_to_box, closest_point_triangle, decompose, inside_mesh
from engine.shapes.hull import ConvexHull
from engine.shapes.trimesh import TriangleMesh

trimesh = pytest.importorskip("trimesh")  # test-only oracle (mass, torus mesh)

R_MAJOR, R_MINOR = 1.0, 0.3


def torus():
    t = trimesh.creation.torus(R_MAJOR, R_MINOR, major_sections=32, minor_sections=12)
    return np.asarray(t.vertices), np.asarray(t.faces)


def torus_inside(p, shrink=0.0):
    rho = np.hypot(p[:, 0], p[:, 1])
    return (rho - R_MAJOR) ** 2 + p[:, 2] ** 2 < (R_MINOR - shrink) ** 2


def torus_distance(p):
    """Distance from outside points to the true torus (the mesh is inscribed in it)."""
    rho = np.hypot(p[:, 0], p[:, 1])
    return np.maximum(np.hypot(rho - R_MAJOR, p[:, 2]) - R_MINOR, 0.0)


L_POLY = np.array([[0, 0], [2, 0], [2, 0.8], [0.8, 0.8], [0.8, 2], [0, 2]], float)
L_HEIGHT = 0.5


def l_shape():
    """Closed L prism: the polygon extruded from z=0 to z=L_HEIGHT (CCW outward triangles)."""
    n = len(L_POLY)
    V = np.concatenate([np.c_[L_POLY, np.zeros(n)], np.c_[L_POLY, np.full(n, L_HEIGHT)]])
    fan = [[3, 4, 5], [3, 5, 0], [3, 0, 1], [3, 1, 2]]   # from the reflex corner (0.8, 0.8)
    bottom = [[a, c, b] for a, b, c in fan]            # facing -z
    top = [[a + n, b + n, c + n] for a, b, c in fan]   # facing +z
    sides = []
    for i in range(n):
        j = (i + 1) % n
        sides += [[i, j, j + n], [i, j + n, i + n]]
    return V, np.array(bottom + top + sides)


def l_inside(p, shrink=0.0):
    inz = (p[:, 2] > shrink) & (p[:, 2] < L_HEIGHT - shrink)
    a = (p[:, 0] > shrink) & (p[:, 0] < 2 - shrink) & (p[:, 1] > shrink) & (p[:, 1] < 0.8 - shrink)
    b = (p[:, 0] > shrink) & (p[:, 0] < 0.8 - shrink) & (p[:, 1] > shrink) & (p[:, 1] < 2 - shrink)
    return inz & (a | b)


def l_distance(p):
    def box(lo, hi):
        d = np.maximum(np.maximum(lo - p, p - hi), 0.0)
        return np.linalg.norm(d, axis=1)
    return np.minimum(box(np.zeros(3), np.array([2, 0.8, L_HEIGHT])),
                      box(np.zeros(3), np.array([0.8, 2, L_HEIGHT])))


def test_l_shape_mesh_is_a_closed_outward_solid():
    V, T = l_shape()
    m = trimesh.Trimesh(V, T, process=False)
    assert m.is_watertight and m.is_winding_consistent
    assert m.volume == pytest.approx((2 * 0.8 + 0.8 * 1.2) * L_HEIGHT)


def _hull_eq(parts):
    return [QHull(p).equations for p in parts]


def _in_any(eqs, p, tol):
    inside = np.zeros(len(p), bool)
    for eq in eqs:
        inside |= np.all(p @ eq[:, :3].T + eq[:, 3] <= tol, axis=1)
    return inside


@pytest.fixture(scope="module")
def torus_parts():
    V, T = torus()
    calls = []
    parts = decompose(V, T, max_parts=16, tolerance=0.05, resolution=24,
                      progress=lambda f, msg: calls.append(f))
    return parts, calls


@pytest.mark.parametrize("which", ["torus", "L"])
def test_decomposition_covers_and_stays_within_tolerance(which, torus_parts):
    rng = np.random.default_rng(12)
    if which == "torus":
        parts, calls = torus_parts
        tol, budget, res = 0.05, 16, 24
        lo, hi = np.array([-1.4, -1.4, -0.4]), np.array([1.4, 1.4, 0.4])
        inside, dist = torus_inside, torus_distance
        # The mesh is inscribed in the analytic torus (12 minor sections): shrink the truth by
        # its sagitta so sampled "inside" points are inside the mesh.
        shrink = R_MINOR * (1 - np.cos(np.pi / 12)) + (R_MAJOR + R_MINOR) * (1 - np.cos(np.pi / 32))
        assert len(parts) > 4  # a torus cannot be 1-4 convex parts within 5 cm
        assert calls and calls[-1] == 1.0 and all(0 <= f <= 1 for f in calls)
    else:
        V, T = l_shape()
        tol, budget, res = 0.03, 8, 32
        parts = decompose(V, T, max_parts=budget, tolerance=tol, resolution=res)
        lo, hi = np.array([-0.1, -0.1, -0.1]), np.array([2.1, 2.1, 0.6])
        inside, dist = l_inside, l_distance
        shrink = 1e-9
        assert 2 <= len(parts) <= 3
    assert 1 <= len(parts) <= budget
    eqs = _hull_eq(parts)
    p = rng.uniform(lo, hi, (40000, 3))
    # Coverage: every point inside the solid is in some part (parts are exact hulls of solid
    # pieces, so this holds to rounding).
    sol = p[inside(p, shrink)]
    assert len(sol) > 1000
    assert _in_any(eqs, sol, 1e-9).all()
    # Straying: points in some part but outside the solid are within tolerance of it (plus one
    # sample spacing: straying is measured on a grid of that spacing).
    spacing = (hi - lo).max() / res
    out = p[_in_any(eqs, p, 0.0) & ~inside(p, 0.0)]
    assert dist(out).max(initial=0.0) <= tol + np.sqrt(3) * spacing
    # Parts are proper hulls, usable as compound parts.
    hulls = [ConvexHull(q) for q in parts]
    vol_sum = sum(h.volume for h in hulls)
    solid_vol = trimesh.Trimesh(*(torus() if which == "torus" else l_shape())).volume
    assert solid_vol <= vol_sum * (1 + 1e-9)       # parts overlap at most on cut planes
    Compound([(h, [0, 0, 0], [1, 0, 0, 0]) for h in hulls])


def test_decomposition_is_deterministic_and_respects_budget():
    V, T = l_shape()
    a = decompose(V, T, max_parts=8, tolerance=0.03, resolution=24)
    b = decompose(V, T, max_parts=8, tolerance=0.03, resolution=24)
    assert len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))
    V, T = torus()
    one = decompose(V, T, max_parts=1, tolerance=0.05, resolution=16)
    assert len(one) == 1
    three = decompose(V, T, max_parts=3, tolerance=0.05, resolution=16)
    assert len(three) <= 3
    stop = decompose(V, T, max_parts=16, tolerance=0.05, resolution=16, progress=lambda f, m: False)
    assert len(stop) == 1


def test_bad_arguments():
    V, T = l_shape()
    with pytest.raises(EngineError):
        decompose(V, T, max_parts=0)
    with pytest.raises(EngineError):
        decompose(V, T, tolerance=-1.0)
    with pytest.raises(EngineError):
        decompose(V, T, resolution=2)
    with pytest.raises(EngineError, match=r"no volume|degenerate"):
        decompose([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 2]])


def test_inside_mesh_and_box_clip_match_analytic():
    rng = np.random.default_rng(3)
    V, T = l_shape()
    mesh = TriangleMesh(V, T)
    p = rng.uniform([-0.2, -0.2, -0.2], [2.2, 2.2, 0.7], (5000, 3))
    np.testing.assert_array_equal(inside_mesh(mesh, p), l_inside(p))
    # solid ∩ box for a box around the inner corner: the hull of the clip equals the hull of the
    # analytic intersection (the L ∩ box is the union of two boxes).
    lo, hi = np.array([0.5, 0.5, 0.1]), np.array([1.5, 1.5, 0.7])
    pts = clip_solid_to_box(mesh, lo, hi)
    q = QHull(pts)
    a = np.array([[x, y, z] for x in (0.5, 1.5) for y in (0.5, 0.8) for z in (0.1, 0.5)])
    b = np.array([[x, y, z] for x in (0.5, 0.8) for y in (0.5, 1.5) for z in (0.1, 0.5)])
    assert q.volume == pytest.approx(QHull(np.concatenate([a, b])).volume, rel=1e-12)


def test_closest_point_triangle_matches_oracle():
    rng = np.random.default_rng(4)
    tri = rng.normal(size=(2000, 3, 3))
    p = rng.normal(size=(2000, 3)) * 2
    got = closest_point_triangle(p, tri[:, 0], tri[:, 1], tri[:, 2])
    want = oracle_cpt(p, tri[:, 0], tri[:, 1], tri[:, 2])
    np.testing.assert_allclose(got, want, atol=1e-12)


def test_ring_from_decomposed_torus_stays_on_a_peg(torus_parts):
    """Issue 6 evidence: the decomposed torus, scaled to a 30 cm ring, dropped tilted and off
    centre over a peg, slides down and stays threaded on it."""
    from engine.shapes.primitives import Box, Capsule
    from engine.world.world import World
    parts, _ = torus_parts
    scale = 0.3
    hulls = [ConvexHull(p * scale, max_vertices=24) for p in parts]
    ring = Compound([(h, [0, 0, 0], [1, 0, 0, 0]) for h in hulls])
    w = World()
    w.add_body(Box([2, 2, 0.5]), position=(0, 0, -0.5), kind="static")
    peg_r = 0.08
    w.add_body(Capsule(peg_r, 0.4), position=(0, 0, 0.48), kind="static")
    from engine.core import quat
    q0 = quat.from_axis_angle([1.0, 0.3, 0], 0.25)
    b = w.add_body(ring, position=(0.06, -0.04, 1.3), orientation=q0, mass=0.3)
    for _ in range(120):
        w.step(1 / 60)
    p = w.positions[b]
    hole = (R_MAJOR - R_MINOR) * scale
    assert np.hypot(p[0], p[1]) < hole - peg_r + 0.01     # the peg is still through the hole
    assert p[2] < 0.3                                     # it slid down the peg
    assert p[2] > -0.01                                   # and did not fall through the ground
