"""Public queries (distance, intersect, contact_manifold) against the Qhull oracle and geometry."""
import numpy as np
import oracle
import pytest
from test_sat import make_hull

from engine.collision.queries import contact_manifold, distance, intersect
from engine.core import quat
from engine.core.errors import EngineError
from engine.shapes.hull import ConvexHull
from engine.shapes.primitives import Box, Capsule, Sphere

EYE = np.array([1.0, 0.0, 0.0, 0.0])


def surface_offset(shape, pos, q, p):
    """Signed offset of world point p from the shape's surface (0 on it); exact for points on or
    inside a polytope and for round shapes."""
    rot = quat.to_matrix(q)
    local = rot.T @ (np.asarray(p) - pos)
    if shape.kind == 0:
        return float(np.max(shape.planes[:, :3] @ local - shape.planes[:, 3]))
    a, b = shape.core_points[0], shape.core_points[-1]
    c = oracle.closest_point_segment(local, a, b)
    return float(np.linalg.norm(local - c) - shape.radius)


def shapes_zoo(rng):
    return [Box([0.5, 0.3, 0.2]), Box([1.0, 1.0, 1.0]), Sphere(0.3), Sphere(0.05),
            Capsule(0.2, 0.4), Capsule(0.1, 1.0), make_hull(rng.normal(size=(20, 3)) * 0.5),
            ConvexHull(rng.uniform(-0.5, 0.5, (40, 3)))]


def test_distance_matches_oracle_all_kinds():
    rng = np.random.default_rng(31)
    zoo = shapes_zoo(rng)
    n_in = n_out = 0
    for _trial in range(500):
        sa, sb = zoo[rng.integers(len(zoo))], zoo[rng.integers(len(zoo))]
        pa = rng.uniform(-100, 100, 3)
        pb = pa + rng.normal(size=3) * 0.7
        qa, qb = quat.normalize(rng.normal(size=4)), quat.normalize(rng.normal(size=4))
        r = distance(sa, pa, qa, sb, pb, qb)
        exact, n_exact, _ = oracle.signed_distance_local(
            sa.core_points, pa, quat.to_matrix(qa), sb.core_points, pb, quat.to_matrix(qb),
            sa.radius, sb.radius)
        assert r.distance == pytest.approx(exact, abs=1e-8)
        assert np.linalg.norm(r.normal) == pytest.approx(1.0, abs=1e-9)
        assert np.allclose(r.point_b - r.point_a, r.distance * r.normal, atol=1e-8)
        assert surface_offset(sa, pa, qa, r.point_a) == pytest.approx(0.0, abs=1e-8)
        assert surface_offset(sb, pb, qb, r.point_b) == pytest.approx(0.0, abs=1e-8)
        if np.any(n_exact) and abs(exact) > 1e-6:
            # The normal is unique except on ties between faces of equal depth.
            along = np.dot(r.normal, n_exact)
            assert along > 1 - 1e-6 or exact < 0
        n_in += exact < 0
        n_out += exact > 0
        assert intersect(sa, pa, qa, sb, pb, qb) == (exact <= 1e-9)
    assert n_in > 100 and n_out > 100


def test_touching_counts_as_intersecting():
    box = Box([1.0, 1.0, 1.0])
    assert intersect(box, [0, 0, 0], EYE, box, [0, 0, 2.0], EYE)
    assert not intersect(box, [0, 0, 0], EYE, box, [0, 0, 2.0 + 1e-6], EYE)
    s = Sphere(0.5)
    assert intersect(s, [0, 0, 0], EYE, s, [1.0, 0, 0], EYE)
    r = distance(box, [0, 0, 0], EYE, box, [0.3, 0.1, 2.0], EYE)
    assert r.distance == pytest.approx(0.0, abs=1e-12)


def test_penetration_depths_analytic():
    box = Box([1.0, 1.0, 1.0])
    q = quat.from_axis_angle([0, 0, 1], 0.3)
    r = distance(box, [0, 0, 0], EYE, box, [0.2, 0.1, 1.7], q)
    assert r.distance == pytest.approx(-0.3)
    assert np.allclose(r.normal, [0, 0, 1])
    assert r.method == "sat"
    # Capsule core poking 0.15 into a box side: depth 0.15 + radius.
    cap = Capsule(0.1, 0.5)
    r = distance(cap, [1.35, 0.2, 0.0], quat.from_axis_angle([0, 1, 0], np.pi / 2), box, [0, 0, 0], EYE)
    assert r.distance == pytest.approx(-(1.0 - 0.85) - 0.1)
    assert np.allclose(r.normal, [-1, 0, 0])
    # Sphere centre inside a box, nearest face +y at 0.2.
    r = distance(Sphere(0.25), [0.1, 0.8, -0.3], EYE, box, [0, 0, 0], EYE)
    assert r.distance == pytest.approx(-0.2 - 0.25)
    assert np.allclose(r.normal, [0, -1, 0])


def test_swapped_queries_flip():
    rng = np.random.default_rng(8)
    zoo = shapes_zoo(rng)
    for _ in range(60):
        sa, sb = zoo[rng.integers(len(zoo))], zoo[rng.integers(len(zoo))]
        pa = rng.uniform(-1, 1, 3)
        pb = pa + rng.normal(size=3) * 0.5
        qa, qb = quat.normalize(rng.normal(size=4)), quat.normalize(rng.normal(size=4))
        ab = distance(sa, pa, qa, sb, pb, qb)
        ba = distance(sb, pb, qb, sa, pa, qa)
        assert ab.distance == pytest.approx(ba.distance, abs=1e-9)
        if abs(ab.distance) > 1e-6 and ab.method != "sat":
            assert np.allclose(ab.normal, -ba.normal, atol=1e-6)


def test_contact_manifold_trimmed_and_consistent():
    box, ground = Box([0.5, 0.5, 0.5]), Box([5.0, 5.0, 0.5])
    m = contact_manifold(ground, [0, 0, 0], EYE, box, [1.0, 2.0, 0.99], EYE)
    assert len(m) == 4 and m.points.shape == (4, 3) and m.separations.shape == (4,)
    assert np.allclose(m.separations, -0.01) and np.allclose(m.normal, [0, 0, 1])
    assert m.ids.dtype == np.int64 and len(set(m.ids.tolist())) == 4
    m = contact_manifold(ground, [0, 0, 0], EYE, box, [1.0, 2.0, 1.02], EYE)
    assert len(m) == 0
    m = contact_manifold(ground, [0, 0, 0], EYE, box, [1.0, 2.0, 1.02], EYE, margin=0.05)
    assert len(m) == 4 and np.allclose(m.separations, 0.02)


def test_nasty_cases():
    rng = np.random.default_rng(17)
    hull = make_hull(rng.normal(size=(25, 3)))
    # Identical shapes at the same pose: depth = the smallest width of the hull over directions
    # (the oracle computes it independently).
    q = quat.normalize(rng.normal(size=4))
    r = distance(hull, [1, 2, 3], q, hull, [1, 2, 3], q)
    exact, _, _ = oracle.signed_distance_local(hull.vertices, [1, 2, 3], quat.to_matrix(q),
                                               hull.vertices, [1, 2, 3], quat.to_matrix(q))
    assert r.distance == pytest.approx(exact, abs=1e-9)
    m = contact_manifold(hull, [1, 2, 3], q, hull, [1, 2, 3], q)
    assert 1 <= len(m) <= 4 and np.all(np.isfinite(m.points))
    # Coplanar faces, resting exactly: distance 0, and the manifold reports the 4 corners.
    box = Box([1.0, 1.0, 1.0])
    m = contact_manifold(box, [0, 0, 0], EYE, box, [0.5, 0.5, 2.0], EYE)
    assert len(m) == 4 and np.allclose(m.separations, 0.0, atol=1e-12)
    # 10 km from the origin: same answers as near it.
    far = np.array([1e4, -1e4, 5e3])
    near = distance(box, [0, 0, 0], EYE, hull, [0.3, 1.9, 0.2], q)
    away = distance(box, far, EYE, hull, far + [0.3, 1.9, 0.2], q)
    assert away.distance == pytest.approx(near.distance, abs=1e-9)
    assert np.allclose(away.normal, near.normal, atol=1e-7)
    # 1 mm against 100 m: a small cube 0.1 mm into a huge slab, and 0.1 mm above it.
    tiny, slab = Box([5e-4, 5e-4, 5e-4]), Box([100.0, 100.0, 1.0])
    for gap in (-1e-4, 1e-4):
        r = distance(slab, [0, 0, 0], EYE, tiny, [37.0, -12.0, 1.0 + 5e-4 + gap],
                     quat.from_axis_angle([0, 0, 1], 0.7))
        assert r.distance == pytest.approx(gap, abs=1e-10)
        assert np.allclose(r.normal, [0, 0, 1])
    m = contact_manifold(slab, [0, 0, 0], EYE, tiny, [37.0, -12.0, 1.0 + 5e-4 - 1e-4], EYE)
    assert len(m) == 4 and np.allclose(m.separations, -1e-4, atol=1e-12)
    m = contact_manifold(Sphere(5e-4), [0, 0, 1.0 + 4e-4], EYE, slab, [0, 0, 0], EYE)
    assert len(m) == 1 and m.separations[0] == pytest.approx(-1e-4, abs=1e-12)
    assert np.allclose(m.normal, [0, 0, -1])


def test_bad_inputs_raise_clear_errors():
    box = Box([1.0, 1.0, 1.0])
    with pytest.raises(EngineError, match="position"):
        distance(box, [0, 0], EYE, box, [0, 0, 1], EYE)
    with pytest.raises(EngineError, match="quaternion"):
        distance(box, [0, 0, 0], [0, 0, 0, 0], box, [0, 0, 1], EYE)
    with pytest.raises(EngineError, match="finite"):
        intersect(box, [0, np.nan, 0], EYE, box, [0, 0, 1], EYE)
    with pytest.raises(EngineError, match="engine shape"):
        contact_manifold("box", [0, 0, 0], EYE, box, [0, 0, 1], EYE)
