"""Compound bodies and the non-convex collision layer: exact mass properties (vs trimesh on the
union), expansion of compound/mesh body pairs into part and triangle pairs (vs the oracle)."""
import numpy as np
import pytest
from oracle import random_hull_points, signed_distance

from engine.collision.nonconvex import CLUSTER_STRIDE, body_mass_properties, collide_bodies
from engine.collision.shape_table import ShapeTable
from engine.core import quat
from engine.core.errors import EngineError
from engine.shapes.compound import Compound
from engine.shapes.hull import ConvexHull
from engine.shapes.mass import mass_properties
from engine.shapes.primitives import Box, Capsule, Sphere
from engine.shapes.trimesh import TriangleMesh

trimesh = pytest.importorskip("trimesh")  # test-only oracle (mass, torus mesh)


def _tm_of(shape, pos, q):
    """trimesh mesh of a polytope part placed in the body frame."""
    if isinstance(shape, Box):
        m = trimesh.creation.box(extents=2 * shape.half_extents)
    else:
        m = trimesh.convex.convex_hull(shape.vertices)
    t = np.eye(4)
    t[:3, :3] = quat.to_matrix(np.asarray(q, float))
    t[:3, 3] = pos
    m.apply_transform(t)
    return m


def test_mass_properties_equal_trimesh_on_the_union():
    rng = np.random.default_rng(4)
    hull = ConvexHull(random_hull_points(rng, 30, 0.4))
    parts = [(Box([0.5, 0.2, 0.1]), [0.0, 0.0, 0.0], [1, 0, 0, 0]),
             (Box([0.1, 0.3, 0.4]), [0.8, 0.1, 0.3], quat.from_axis_angle([0, 0, 1.0], 0.3)),
             (hull, [-1.5, 0.4, -0.2], quat.from_axis_angle([1.0, 2.0, 0.5], 1.1))]
    c = Compound(parts)
    mp = c.mass_properties(density=700.0)
    union = trimesh.util.concatenate([_tm_of(*p) for p in parts])
    union.density = 700.0
    assert mp.mass == pytest.approx(union.mass, rel=1e-10)
    np.testing.assert_allclose(mp.center, union.center_mass, atol=1e-10)
    np.testing.assert_allclose(mp.inertia, union.moment_inertia, atol=1e-9 * np.abs(mp.inertia).max())
    # Sum of the parts (mass and volume), and a given total mass rescales exactly.
    parts_mp = [mass_properties(s, 700.0) for s, _, _ in parts]
    assert mp.mass == pytest.approx(sum(p.mass for p in parts_mp), rel=1e-12)
    assert mp.volume == pytest.approx(sum(p.volume for p in parts_mp), rel=1e-12)
    m2 = body_mass_properties(c, mass=3.0)
    assert m2.mass == pytest.approx(3.0)
    np.testing.assert_allclose(m2.inertia, mp.inertia * 3.0 / mp.mass, rtol=1e-12)


def test_round_parts_mass_is_parallel_axis_sum():
    # Two spheres 2 m apart: I_xx = 2 * (2/5 m r^2), I_yy = I_zz = that + 2 m 1^2.
    s = Sphere(0.25)
    c = Compound([(s, [-1, 0, 0], [1, 0, 0, 0]), (s, [1, 0, 0], [1, 0, 0, 0])])
    mp = c.mass_properties(1000.0)
    m1 = 1000.0 * 4 / 3 * np.pi * 0.25 ** 3
    i0 = 0.4 * m1 * 0.25 ** 2
    np.testing.assert_allclose(np.diag(mp.inertia), [2 * i0, 2 * i0 + 2 * m1, 2 * i0 + 2 * m1], rtol=1e-12)
    np.testing.assert_allclose(mp.center, 0.0, atol=1e-15)


def test_compound_validation():
    with pytest.raises(EngineError):
        Compound([])
    with pytest.raises(EngineError, match="convex"):
        Compound([(TriangleMesh([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 2]]), [0, 0, 0], [1, 0, 0, 0])])
    with pytest.raises(EngineError, match="zero length"):
        Compound([(Box(1), [0, 0, 0], [0, 0, 0, 0])])
    with pytest.raises(EngineError):
        Compound([(Box(1), [0, np.nan, 0], [1, 0, 0, 0])])
    with pytest.raises(EngineError, match="convex hull"):
        body_mass_properties(TriangleMesh([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 2]]))


def test_compound_bounding_box_contains_parts():
    rng = np.random.default_rng(8)
    parts = [(Capsule(0.1, 0.3), rng.normal(size=3), quat.normalize(rng.normal(size=4))) for _ in range(4)]
    c = Compound(parts)
    lo, hi = c.core_points.min(axis=0), c.core_points.max(axis=0)
    for s, p, q in parts:
        w = s.core_points @ quat.to_matrix(quat.normalize(np.asarray(q))).T + p
        assert np.all(w - s.radius >= lo - 1e-12) and np.all(w + s.radius <= hi + 1e-12)


def test_collide_bodies_compound_parts_match_oracle():
    """A U-shaped compound (3 boxes) against spheres and boxes at random poses: one manifold per
    touching part, each as deep as the exact part-vs-shape penetration."""
    rng = np.random.default_rng(9)
    u = Compound([(Box([1.0, 0.5, 0.1]), [0, 0, 0], [1, 0, 0, 0]),
                  (Box([0.1, 0.5, 0.5]), [-0.9, 0, 0.6], [1, 0, 0, 0]),
                  (Box([0.1, 0.5, 0.5]), [0.9, 0, 0.6], [1, 0, 0, 0])])
    other = [Sphere(0.3), Box([0.2, 0.3, 0.25])]
    table = ShapeTable([u] + other)
    m = 60
    sid_b = rng.integers(1, 3, m)
    pos_b = rng.uniform([-1.2, -0.6, -0.2], [1.2, 0.6, 1.2], (m, 3))
    q_b = quat.normalize(rng.normal(size=(m, 4)))
    pos_a = np.tile([0.3, -0.2, 0.1], (m, 1))
    q_a = np.tile(quat.from_axis_angle([0, 0, 1.0], 0.4), (m, 1))
    res = collide_bodies(table, np.zeros(m, int), pos_a, q_a, sid_b, pos_b, q_b, margin=0.0)
    assert np.all(np.diff(res.pair) >= 0)
    checked = 0
    for i in range(m):
        sh = table.shapes[sid_b[i]]
        pb = sh.core_points @ quat.to_matrix(q_b[i]).T + pos_b[i]
        for j, (ps, pp, pq) in enumerate(zip(u.shapes, u.positions, u.orientations)):
            pw = quat.rotate(q_a[i], pp) + pos_a[i]
            qw = quat.multiply(q_a[i], pq)
            pa = ps.core_points @ quat.to_matrix(qw).T + pw
            s, n, _ = signed_distance(pa, pb, 0.0, sh.radius)
            rows = np.flatnonzero((res.pair == i) & (res.sub // CLUSTER_STRIDE == j)
                                  & (res.manifolds.count > 0))
            if s < -1e-6:
                assert len(rows) == 1
                man = res.manifolds
                ms = man.separation[rows[0], :man.count[rows[0]]].min()
                assert 1.05 * s - 2e-3 <= ms <= s + 1e-7
                checked += 1
            elif s > 1e-6:
                assert len(rows) == 0
    assert checked > 20


def test_collide_bodies_mesh_both_orders_and_compound_on_mesh():
    plane = TriangleMesh([[-5, -5, 0], [5, -5, 0], [5, 5, 0], [-5, 5, 0]], [[0, 1, 2], [0, 2, 3]])
    dumbbell = Compound([(Box(0.2), [-0.5, 0, 0], [1, 0, 0, 0]), (Sphere(0.2), [0.5, 0, 0], [1, 0, 0, 0])])
    table = ShapeTable([plane, Box(0.5), dumbbell])
    ident = np.array([[1.0, 0, 0, 0]])
    # Box over the plane, in both orders.
    r1 = collide_bodies(table, [1], [[0.3, 0.2, 0.499]], ident, [0], [[0, 0, 0]], ident, margin=0.01)
    r2 = collide_bodies(table, [0], [[0, 0, 0]], ident, [1], [[0.3, 0.2, 0.499]], ident, margin=0.01)
    assert len(r1.pair) == 1 and len(r2.pair) == 1
    np.testing.assert_allclose(r1.manifolds.normal[0], [0, 0, -1.0])
    np.testing.assert_allclose(r2.manifolds.normal[0], [0, 0, 1.0])
    assert r1.manifolds.count[0] == 4
    np.testing.assert_allclose(r1.manifolds.separation[0], -0.001, atol=1e-12)
    # A moved plane (kinematic meshes move with their pose): lifted by 1 m and tilted.
    tilt = quat.from_axis_angle([1.0, 0, 0], 0.2)
    up = quat.rotate(tilt, [0, 0, 1.0])
    r3 = collide_bodies(table, [1], [[0, 0, 1] + 0.499 * up], tilt[None], [0], [[0, 0, 1.0]],
                        tilt[None], margin=0.01)
    np.testing.assert_allclose(r3.manifolds.normal[0], -up, atol=1e-12)
    np.testing.assert_allclose(r3.manifolds.separation[0], -0.001, atol=1e-9)
    # Dumbbell resting on the plane: a box manifold (4 points) and a sphere manifold (1 point).
    r4 = collide_bodies(table, [2], [[0, 0, 0.199]], ident, [0], [[0, 0, 0]], ident, margin=0.01)
    assert len(r4.pair) == 2
    assert sorted(r4.manifolds.count.tolist()) == [1, 4]
    np.testing.assert_allclose(r4.manifolds.separation[r4.manifolds.count == 4], -0.001, atol=1e-12)
    assert r4.manifolds.separation[r4.manifolds.count == 1, 0] == pytest.approx(-0.001)
    # Mesh-mesh pairs produce nothing.
    r5 = collide_bodies(table, [0], [[0, 0, 0]], ident, [0], [[0, 0, 0]], ident)
    assert len(r5.pair) == 0


# World tests (cup, lever rule, ring on a peg): tests/test_nonconvex_world.py.
