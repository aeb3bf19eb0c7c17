"""Exact Cylinder and Cone shapes (issue 14 item 4): shape checks, mass properties, support
functions, AABBs, distance/penetration, contact manifolds and their physics in the World.

Truth: closed-form mass properties and fine ConvexHull approximations; dense samples of the
surfaces; signed distances as max over unit n of -(h_A(n) + h_B(-n)) with the closed-form
support values of the shapes (a route independent of GJK/EPA) and python-fcl for separated
pairs; closed-form rolling (a = 2/3 g sin(slope)) and statics for the World.
"""
import numpy as np
import pytest
from scipy.optimize import minimize

import engine
from engine.collision.queries import pair_distance
from engine.collision.shape_table import ShapeTable
from engine.core import quat
from engine.core.errors import DegenerateShapeError
from engine.shapes.curved import CAP_N, curved_aabb

G = 9.81


# --------------------------------------------------------------------------- helpers

def qaxis(axis, angle):
    axis = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    return np.concatenate(([np.cos(angle / 2)], np.sin(angle / 2) * axis))


def random_quats(rng, k):
    q = rng.normal(size=(k, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def surface_samples(shape, n=4096):
    """Dense points of the rim circles (and the apex): their hull is the shape."""
    phi = 2 * np.pi * np.arange(n) / n
    ring = np.stack((shape.radius * np.cos(phi), shape.radius * np.sin(phi), np.zeros(n)), 1)
    hh = shape.half_height
    if isinstance(shape, engine.Cylinder):
        return np.concatenate((ring - [0, 0, hh], ring + [0, 0, hh]))
    return np.concatenate((ring - [0, 0, hh], [[0, 0, hh]]))


def hval(shape, rot, pos, n):
    """Closed-form support value of a posed shape along unit directions n (K, 3)."""
    loc = n @ rot
    if isinstance(shape, engine.Cylinder):
        h = shape.radius * np.hypot(loc[:, 0], loc[:, 1]) + shape.half_height * np.abs(loc[:, 2])
    elif isinstance(shape, engine.Cone):
        h = np.maximum(shape.half_height * loc[:, 2],
                       shape.radius * np.hypot(loc[:, 0], loc[:, 1]) - shape.half_height * loc[:, 2])
    elif isinstance(shape, engine.Box):
        h = np.abs(loc) @ shape.half_extents
    else:  # Sphere
        h = np.full(len(n), shape.radius)
    return h + n @ pos


def fibonacci(k):
    i = np.arange(k) + 0.5
    phi, th = np.arccos(1 - 2 * i / k), np.pi * (1 + 5 ** 0.5) * i
    return np.stack((np.cos(th) * np.sin(phi), np.sin(th) * np.sin(phi), np.cos(phi)), 1)


DIRS = fibonacci(20000)


def brute_signed_distance(sa, ra, pa, sb, rb, pb):
    """max over unit n (A -> B) of the gap -(h_A(n) + h_B(-n)): the signed distance of two
    convex bodies (positive apart, minus the penetration depth when overlapping)."""
    def gap(n):
        return -hval(sa, ra, pa, n) - hval(sb, rb, pb, -n)

    v = gap(DIRS)
    n0 = DIRS[np.argmax(v)]

    def f(x):
        n = np.array([[np.sin(x[0]) * np.cos(x[1]), np.sin(x[0]) * np.sin(x[1]), np.cos(x[0])]])
        return -gap(n)[0]

    res = minimize(f, [np.arccos(np.clip(n0[2], -1, 1)), np.arctan2(n0[1], n0[0])],
                   method="Nelder-Mead", options=dict(xatol=1e-11, fatol=1e-14, maxiter=4000))
    return max(-res.fun, v.max())


def slope_world(angle_deg=10.0, ground="box"):
    """A World with a static slope through the origin falling towards +x by angle_deg."""
    w = engine.World()
    th = np.radians(angle_deg)
    q = qaxis((0, 1, 0), th)
    if ground == "box":
        w.add_body(engine.Box((20.0, 5.0, 0.5)), position=-0.5 * quat.rotate(q, np.array([0, 0, 1.0])),
                   orientation=q, kind="static")
    else:
        w.add_body(ground_mesh(), orientation=q, kind="static")
    return w, quat.rotate(q, np.array([0, 0, 1.0])), quat.rotate(q, np.array([1.0, 0, 0]))


def ground_mesh(half=6.0, n=12):
    xs = np.linspace(-half, half, n + 1)
    X, Y = np.meshgrid(xs, xs)
    v = np.stack((X.ravel(), Y.ravel(), np.zeros(X.size)), 1)
    f = []
    for i in range(n):
        for j in range(n):
            a = i * (n + 1) + j
            f += [[a, a + 1, a + n + 2], [a, a + n + 2, a + n + 1]]
    return engine.TriangleMesh(v, np.array(f))


def flat_world(ground="box"):
    w = engine.World()
    if ground == "box":
        w.add_body(engine.Box((5.0, 5.0, 0.5)), position=(0, 0, -0.5), kind="static")
    else:
        w.add_body(ground_mesh(), kind="static")
    return w


def axis_tilt_deg(q):
    a = quat.rotate(np.asarray(q, dtype=float), np.array([0, 0, 1.0]))
    return float(np.degrees(np.arccos(np.clip(a[2], -1.0, 1.0))))


def run(w, body, seconds, dt):
    for _ in range(round(seconds / dt)):
        w.step(dt)
    return w.positions[body].copy(), w.orientations[body].copy()


# --------------------------------------------------------------------------- shapes

@pytest.mark.parametrize("cls", [engine.Cylinder, engine.Cone])
@pytest.mark.parametrize("args", [(0.0, 1.0), (-1.0, 1.0), (1.0, 0.0), (1.0, -2.0),
                                  (float("nan"), 1.0), (1.0, float("inf")), ("wide", 1.0)])
def test_bad_dimensions_raise_clear_error(cls, args):
    with pytest.raises(DegenerateShapeError, match=f"{cls.__name__} (radius|height)"):
        cls(*args)


def test_frame_conventions_and_bounds():
    cyl, cone = engine.Cylinder(0.5, 2.0), engine.Cone(0.5, 2.0)
    assert cyl.radius == 0.5 and cyl.height == 2.0 and cyl.half_height == 1.0
    assert cyl.support([0, 0, 1])[2] == 1.0 and cyl.support([0, 0, -1])[2] == -1.0   # caps
    np.testing.assert_allclose(cone.support([0, 0, 1]), [0, 0, 1])          # apex at +h/2
    np.testing.assert_allclose(cone.support([1, 0, -1]), [0.5, 0, -1])      # base at -h/2
    for s in (cyl, cone):
        lo, hi = s.local_aabb()
        pts = surface_samples(s)
        np.testing.assert_allclose(lo, pts.min(axis=0), atol=1e-6)
        np.testing.assert_allclose(hi, pts.max(axis=0), atol=1e-6)
        assert s.bounding_radius() == pytest.approx(np.linalg.norm(pts, axis=1).max(), rel=1e-9)
    # The table swells neither (their .radius is their own size).
    t = ShapeTable([cyl, cone])
    assert np.all(t.radius == 0.0)


def test_world_aabbs_exact_under_rotation():
    rng = np.random.default_rng(3)
    for s in (engine.Cylinder(0.3, 1.1), engine.Cone(0.6, 0.9)):
        q = random_quats(rng, 50)
        rot = quat.to_matrix(q)
        pos = rng.normal(size=(50, 3))
        k = len(q)
        lo, hi = curved_aabb(np.full(k, s.kind), np.full(k, s.radius), np.full(k, s.half_height),
                             rot, pos)
        pts = np.einsum("kij,vj->kvi", rot, surface_samples(s)) + pos[:, None]
        np.testing.assert_allclose(lo, pts.min(axis=1), atol=2e-6)
        np.testing.assert_allclose(hi, pts.max(axis=1), atol=2e-6)


# --------------------------------------------------------------------------- mass

def test_mass_properties_closed_forms():
    r, h, rho = 0.3, 1.2, 700.0
    mp = engine.mass_properties(engine.Cylinder(r, h), density=rho)
    m = rho * np.pi * r * r * h
    assert mp.mass == pytest.approx(m, rel=1e-12)
    np.testing.assert_allclose(mp.center, 0.0, atol=1e-15)
    np.testing.assert_allclose(np.diag(mp.inertia), [m * (3 * r * r + h * h) / 12] * 2 + [m * r * r / 2],
                               rtol=1e-12)
    mp = engine.mass_properties(engine.Cone(r, h), density=rho)
    m = rho * np.pi * r * r * h / 3
    assert mp.mass == pytest.approx(m, rel=1e-12)
    np.testing.assert_allclose(mp.center, [0, 0, -h / 4], atol=1e-15)     # h/4 above the base
    ix = m * (3 * r * r / 20 + 3 * h * h / 80)
    np.testing.assert_allclose(np.diag(mp.inertia), [ix, ix, 3 * m * r * r / 10], rtol=1e-12)


@pytest.mark.parametrize("cls", [engine.Cylinder, engine.Cone])
def test_mass_properties_match_fine_hulls(cls):
    """Inscribed N-gon prisms/pyramids converge to the exact values as O(1/N^2)."""
    shape = cls(0.4, 0.9)
    exact = engine.mass_properties(shape)
    errs = []
    for n in (16, 64, 256):
        phi = 2 * np.pi * np.arange(n) / n
        ring = np.stack((0.4 * np.cos(phi), 0.4 * np.sin(phi), np.zeros(n)), 1)
        pts = (np.concatenate((ring - [0, 0, 0.45], ring + [0, 0, 0.45])) if cls is engine.Cylinder
               else np.concatenate((ring - [0, 0, 0.45], [[0, 0, 0.45]])))
        mp = engine.mass_properties(engine.ConvexHull(pts))
        errs.append(max(abs(mp.mass / exact.mass - 1),
                        np.abs(mp.inertia - exact.inertia).max() / np.abs(exact.inertia).max(),
                        np.abs(mp.center - exact.center).max()))
    assert errs[0] > errs[1] > errs[2]
    assert errs[1] / errs[2] > 12          # quadratic convergence (16x per 4x facets)
    assert errs[2] < 3e-4


# --------------------------------------------------------------------------- support

@pytest.mark.parametrize("cls", [engine.Cylinder, engine.Cone])
def test_support_matches_dense_surface_samples(cls):
    from engine.shapes.curved import local_support
    rng = np.random.default_rng(5)
    shape = cls(0.35, 0.8)
    k = 500
    d = rng.normal(size=(k, 3))
    d[:20, :2] = 0.0                       # along the axis
    d[20:40, 2] = 0.0                      # normal to it
    rot = quat.to_matrix(random_quats(rng, k))
    off = rng.normal(size=(k, 3))
    dl = np.einsum("kji,kj->ki", rot, d)                      # local directions
    p = np.einsum("kij,kj->ki", rot, local_support(np.full(k, shape.kind), np.full(k, shape.radius),
                                                   np.full(k, shape.half_height), dl)) + off
    samples = np.einsum("kij,vj->kvi", rot, surface_samples(shape, 8192)) + off[:, None]
    best = np.max(np.einsum("kvi,ki->kv", samples, d), axis=1)
    got = np.einsum("ki,ki->k", p, d)
    dn = np.linalg.norm(d, axis=1)
    assert np.all(got >= best - 1e-12 * dn)                    # never below a surface point
    assert np.all(got - best <= 1e-6 * dn)                     # and on the surface
    # The support point is on the shape: on the rim circles (or the apex / a cap centre).
    loc = np.einsum("kji,kj->ki", rot, p - off)
    rho = np.hypot(loc[:, 0], loc[:, 1])
    on_rim = np.isclose(rho, shape.radius) & np.isclose(np.abs(loc[:, 2]), shape.half_height)
    apex = np.isclose(rho, 0.0, atol=1e-12) & np.isclose(loc[:, 2], shape.half_height)
    assert np.all(on_rim | (apex & (shape.kind == engine.Cone.kind)))


# --------------------------------------------------------------------------- distances

SHAPES = [engine.Cylinder(0.5, 1.2), engine.Cone(0.4, 1.0), engine.Box((0.3, 0.6, 0.4)),
          engine.Sphere(0.35), engine.Cylinder(0.1, 0.02)]


def _random_pairs(seed, m, near):
    rng = np.random.default_rng(seed)
    ia = rng.integers(0, 2, m)
    ia[::5] = 4
    ib = rng.integers(0, 5, m)
    q = random_quats(rng, 2 * m).reshape(m, 2, 4)
    d = rng.normal(size=(m, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    pb = d * (near[0] + (near[1] - near[0]) * rng.random(m))[:, None]
    return ia, ib, quat.to_matrix(q[:, 0]), quat.to_matrix(q[:, 1]), q, np.zeros((m, 3)), pb


def test_signed_distance_matches_brute_force():
    """300 random poses of cylinders/cones against every shape, separated and overlapping."""
    ia, ib, ra, rb, _, pa, pb = _random_pairs(2, 300, (0.3, 1.5))
    table = ShapeTable(SHAPES)
    r = pair_distance(table, ia, pa, ra, ib, pb, rb)
    ref = np.array([brute_signed_distance(SHAPES[ia[i]], ra[i], pa[i], SHAPES[ib[i]], rb[i], pb[i])
                    for i in range(len(ia))])
    err = np.abs(r["distance"] - ref)
    sep, shallow = ref > 0, (ref <= 0) & (ref > -0.1)
    assert sep.sum() > 100 and shallow.sum() > 20
    assert err[sep].max() < 1e-8
    assert err[shallow].max() < 1e-6                 # contact-sized penetrations: exact
    assert np.all(err[~sep] < 0.01 * np.abs(ref[~sep]) + 1e-6)   # deep ones within 1 %
    # Witness points: on the surfaces, their gap along the normal is the distance.
    gap = np.einsum("ki,ki->k", r["point_b"] - r["point_a"], r["normal"])
    np.testing.assert_allclose(gap[sep], r["distance"][sep], atol=1e-9)


def test_separated_distance_agrees_with_fcl():
    fcl = pytest.importorskip("fcl")
    ia, ib, ra, rb, q, pa, pb = _random_pairs(7, 200, (1.6, 2.6))
    table = ShapeTable(SHAPES)
    r = pair_distance(table, ia, pa, ra, ib, pb, rb)

    def geom(s):
        if isinstance(s, engine.Cylinder):
            return fcl.Cylinder(s.radius, s.height)     # fcl: centred, axis Z, like ours
        if isinstance(s, engine.Cone):
            return fcl.Cone(s.radius, s.height)         # fcl: base at -h/2, apex +h/2, like ours
        if isinstance(s, engine.Box):
            return fcl.Box(*(2 * s.half_extents))
        return fcl.Sphere(s.radius)

    ref = np.array([fcl.distance(fcl.CollisionObject(geom(SHAPES[ia[i]]), fcl.Transform(q[i, 0], pa[i])),
                                 fcl.CollisionObject(geom(SHAPES[ib[i]]), fcl.Transform(q[i, 1], pb[i])),
                                 fcl.DistanceRequest(), fcl.DistanceResult()) for i in range(len(ia))])
    assert np.all(ref > 0)
    # fcl (libccd GJK on curved shapes) is accurate to ~1e-4 here; ours is the tighter bound:
    # GJK's |v| is the length of a point of B - A, so it can only over-estimate, and fcl's
    # larger answers are its error (the brute-force test above pins ours to 1e-8).
    err = r["distance"] - ref
    assert np.abs(err).max() < 3e-4 and np.median(np.abs(err)) < 1e-5
    assert err.max() < 1e-8                   # fcl is never below ours


# --------------------------------------------------------------------------- manifolds

def manifold(a, pa, qa, b, pb, qb, margin=0.01):
    return engine.contact_manifold(a, pa, qa, b, pb, qb, margin=margin)


def test_cylinder_lying_on_box_gets_its_side_line():
    cyl, box = engine.Cylinder(0.3, 1.0), engine.Box((2.0, 2.0, 0.5))
    lying = qaxis((1, 0, 0), np.pi / 2)
    m = manifold(cyl, (0.1, 0.2, 0.5 + 0.3 - 0.002), lying, box, (0, 0, 0), (1, 0, 0, 0))
    assert len(m) == 2
    np.testing.assert_allclose(m.normal, [0, 0, -1], atol=1e-12)
    np.testing.assert_allclose(m.separations, -0.002, atol=1e-12)
    np.testing.assert_allclose(sorted(m.points[:, 1]), [0.2 - 0.5, 0.2 + 0.5], atol=1e-9)
    np.testing.assert_allclose(m.points[:, 0], 0.1, atol=1e-9)
    # Over the box's edge: the side line is clipped to the face.
    m = manifold(cyl, (0.1, 1.8, 0.5 + 0.3 - 0.002), lying, box, (0, 0, 0), (1, 0, 0, 0))
    assert len(m) == 2 and np.isclose(m.points[:, 1].max(), 2.0)


def test_cylinder_standing_gets_four_rim_points_and_tilted_rim_one():
    cyl, box = engine.Cylinder(0.3, 1.0), engine.Box((2.0, 2.0, 0.5))
    m = manifold(cyl, (0, 0, 1.0 - 0.001), (1, 0, 0, 0), box, (0, 0, 0), (1, 0, 0, 0))
    assert len(m) == 4
    np.testing.assert_allclose(np.hypot(m.points[:, 0], m.points[:, 1]), 0.3, atol=1e-12)
    np.testing.assert_allclose(m.separations, -0.001, atol=1e-12)
    # The 4 points span the rim (a square inscribed in it): the area a stable stance needs.
    ang = np.sort(np.arctan2(m.points[:, 1], m.points[:, 0]))
    np.testing.assert_allclose(np.diff(ang), np.pi / 2, atol=1e-9)
    # Tilted 30 degrees: the rim touches at one point, at the exact depth.
    q = qaxis((1, 0, 0), np.radians(30))
    low = quat.rotate(q, np.array([0, -0.3, -0.5]))
    m = manifold(cyl, (0, 0, 0.5 - low[2] - 0.003), q, box, (0, 0, 0), (1, 0, 0, 0))
    assert len(m) == 1
    assert m.separations[0] == pytest.approx(-0.003, abs=1e-9)
    np.testing.assert_allclose(m.normal, [0, 0, -1], atol=1e-7)
    # A slightly tilted coin: points on the low side only, each with its true height.
    q = qaxis((1, 0, 0), np.radians(1.0))
    m = manifold(cyl, (0, 0, 1.0 + 0.0005), q, box, (0, 0, 0), (1, 0, 0, 0), margin=0.002)
    rim_z = np.array([quat.rotate(q, np.array([0.3 * np.cos(a), 0.3 * np.sin(a), -0.5]))[2]
                      for a in 2 * np.pi * np.arange(CAP_N) / CAP_N]) + 1.0005 - 0.5
    assert 1 <= len(m) <= 4
    assert m.separations.min() == pytest.approx(rim_z.min(), abs=1e-9)
    assert np.all(m.separations <= 0.002)


def test_feature_ids_stable_under_small_motion():
    cyl, box = engine.Cylinder(0.3, 1.0), engine.Box((2.0, 2.0, 0.5))
    a = manifold(cyl, (0, 0, 0.999), (1, 0, 0, 0), box, (0, 0, 0), (1, 0, 0, 0))
    b = manifold(cyl, (0.01, -0.02, 0.9985), (1, 0, 0, 0), box, (0, 0, 0), (1, 0, 0, 0))
    assert set(a.ids.tolist()) == set(b.ids.tolist()) and len(set(a.ids.tolist())) == 4
    lying = qaxis((1, 0, 0), np.pi / 2)
    a = manifold(cyl, (0, 0, 0.799), lying, box, (0, 0, 0), (1, 0, 0, 0))
    rolled = quat.multiply(qaxis((0, 1, 0), 0.3), lying)       # rolled about its own axis
    b = manifold(cyl, (0.09, 0, 0.799), rolled, box, (0, 0, 0), (1, 0, 0, 0))
    assert set(a.ids.tolist()) == set(b.ids.tolist()) and len(a) == 2


def test_curved_pairs_manifolds():
    cyl, cone, sph = engine.Cylinder(0.3, 1.0), engine.Cone(0.4, 0.8), engine.Sphere(0.2)
    lying = qaxis((1, 0, 0), np.pi / 2)
    # Coin on coin (cap on cap): 4 points.
    coin = engine.Cylinder(0.1, 0.01)
    m = manifold(coin, (0, 0, 0), (1, 0, 0, 0), coin, (0.03, 0, 0.0099), (1, 0, 0, 0))
    assert len(m) == 4 and np.allclose(m.normal, [0, 0, 1]) and np.allclose(m.separations, -1e-4)
    # Two parallel cylinders side by side: the two ends of the overlap.
    m = manifold(cyl, (0, 0, 0), lying, cyl, (0, 0.4, 0.599), lying)
    # (EPA on two curved surfaces: normal to ~1e-3 rad, depths to ~1e-7 m.)
    assert len(m) == 2 and np.allclose(m.separations, -0.001, atol=1e-6)
    np.testing.assert_allclose(m.normal, [0, 0, 1], atol=1e-3)
    np.testing.assert_allclose(sorted(m.points[:, 1]), [-0.1, 0.5], atol=1e-6)
    # Crossed cylinders: one point.
    m = manifold(cyl, (0, 0, 0), lying, cyl, (0, 0, 0.599), qaxis((0, 1, 0), np.pi / 2))
    assert len(m) == 1 and m.separations[0] == pytest.approx(-0.001, abs=1e-7)
    # Sphere on the side and on the cap of a cylinder.
    m = manifold(cyl, (0, 0, 0), (1, 0, 0, 0), sph, (0.499, 0, 0.1), (1, 0, 0, 0))
    assert len(m) == 1 and m.separations[0] == pytest.approx(-0.001, abs=1e-9)
    np.testing.assert_allclose(m.normal, [1, 0, 0], atol=1e-7)
    m = manifold(sph, (0.1, 0, 0.699), (1, 0, 0, 0), cyl, (0, 0, 0), (1, 0, 0, 0))
    assert len(m) == 1 and m.separations[0] == pytest.approx(-0.001, abs=1e-9)
    np.testing.assert_allclose(m.normal, [0, 0, -1], atol=1e-7)
    # Cone on its base on a box: 4 rim points; on its side: its side line.
    box = engine.Box((2.0, 2.0, 0.5))
    m = manifold(cone, (0, 0, 0.899), (1, 0, 0, 0), box, (0, 0, 0), (1, 0, 0, 0))
    assert len(m) == 4 and np.allclose(m.separations, -0.001)
    half = np.arctan2(0.4, 0.8)
    q = qaxis((1, 0, 0), np.pi / 2 + half)
    low = min(quat.rotate(q, np.array([0, 0, 0.4]))[2], quat.rotate(q, np.array([0, 0.4, -0.4]))[2])
    m = manifold(cone, (0, 0, 0.5 - low - 0.001), q, box, (0, 0, 0), (1, 0, 0, 0))
    assert len(m) == 2 and np.allclose(m.separations, -0.001, atol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(m.points[0] - m.points[1]), np.hypot(0.4, 0.8), rtol=1e-6)


# --------------------------------------------------------------------------- physics

@pytest.mark.parametrize("dt", [1 / 24, 1 / 60])
def test_solid_cylinder_rolls_down_10_degree_slope(dt):
    """a = 2/3 g sin(10 deg) (I = m r^2 / 2, rolling without slipping) within 1.5 % over 2 s,
    never more than 0.5 mm off the slope."""
    r = 0.3
    w, nrm, down = slope_world(10.0)
    start = nrm * r - down * 4.0
    b = w.add_body(engine.Cylinder(r, 0.4), position=start, orientation=qaxis((1, 0, 0), np.pi / 2),
                   mass=2.0, friction=0.8)
    s, lift = [], []
    for _ in range(round(2.0 / dt)):
        w.step(dt)
        p = w.positions[b]
        s.append(np.dot(p - start, down))
        lift.append(np.dot(p, nrm) - r)
    t = dt * np.arange(1, len(s) + 1)
    a = 2 * np.polyfit(t, s, 2)[0]
    a_ref = 2 / 3 * G * np.sin(np.radians(10))
    assert abs(a / a_ref - 1) < 0.015, (a, a_ref)
    assert abs(s[-1] / (0.5 * a_ref * 4.0) - 1) < 0.015
    assert max(np.abs(lift)) < 5e-4
    # Rolling, not sliding: the spin matches v / r.
    v = np.dot(w.linear_velocities[b], down)
    assert np.linalg.norm(w.angular_velocities[b]) == pytest.approx(v / r, rel=0.02)


@pytest.mark.parametrize("ground", ["box", "mesh"])
def test_coin_dropped_flat_rests_flat(ground):
    w = flat_world(ground)
    b = w.add_body(engine.Cylinder(0.1, 0.01), position=(0.13, -0.07, 0.3), mass=0.01)
    p, q = run(w, b, 1.5, 1 / 60)
    assert axis_tilt_deg(q) < 0.5
    assert p[2] == pytest.approx(0.005, abs=5e-4)
    np.testing.assert_allclose(p[:2], (0.13, -0.07), atol=2e-3)


@pytest.mark.parametrize("ground", ["box", "mesh"])
def test_cylinder_on_cap_stays_upright_and_lying_stays(ground):
    w = flat_world(ground)
    up = w.add_body(engine.Cylinder(0.2, 0.8), position=(-1, 0, 0.41), mass=3.0)
    lying = w.add_body(engine.Cylinder(0.2, 0.8), position=(1, 0, 0.21),
                       orientation=qaxis((1, 0, 0), np.pi / 2), mass=3.0)
    run(w, up, 2.0, 1 / 60)
    assert axis_tilt_deg(w.orientations[up]) < 0.1
    assert w.positions[up][2] == pytest.approx(0.4, abs=5e-4)
    assert abs(axis_tilt_deg(w.orientations[lying]) - 90) < 0.1
    assert w.positions[lying][2] == pytest.approx(0.2, abs=5e-4)
    assert np.linalg.norm(w.positions[lying][:2] - (1, 0)) < 5e-3


def test_cone_rests_on_base_and_tips_past_its_critical_angle():
    """COM h/4 above the base: a cone resting on its rim falls back onto its base below
    atan(4 r / h) of tilt and onto its side above it (apex on the ground, so the axis from
    base to apex points atan(r / h) below the horizontal: 90 + atan(r / h) from vertical)."""
    r, h = 0.2, 0.8
    crit = np.degrees(np.arctan(4 * r / h))          # 45 deg
    side = 90 + np.degrees(np.arctan(r / h))         # 104.04 deg
    cone = engine.Cone(r, h)
    out = {}
    for tilt in (crit - 6, crit + 6, 0.0):
        w = flat_world()
        q = qaxis((1, 0, 0), np.radians(tilt))
        rim = quat.rotate(q, np.array([0, -r, -h / 2]))
        b = w.add_body(cone, position=(0, 0, -rim[2] + 1e-3), orientation=q, mass=1.0, friction=0.9)
        p, qq = run(w, b, 2.5, 1 / 60)
        out[tilt] = (axis_tilt_deg(qq), p)
    assert out[0.0][0] < 0.1 and out[0.0][1][2] == pytest.approx(h / 2, abs=5e-4)
    assert out[crit - 6][0] < 0.5
    assert abs(out[crit + 6][0] - side) < 0.5


def test_cylinder_cylinder_and_cone_box_stacks():
    w = flat_world()
    base = w.add_body(engine.Cylinder(0.3, 0.4), position=(0, 0, 0.201), mass=2.0)
    top = w.add_body(engine.Cylinder(0.2, 0.3), position=(0.05, 0, 0.552), mass=1.0)
    box = w.add_body(engine.Box((0.3, 0.3, 0.1)), position=(1, 0, 0.101), mass=1.0)  # under the cone
    cone = w.add_body(engine.Cone(0.2, 0.4), position=(1, 0, 0.402), mass=0.5)
    ball = w.add_body(engine.Sphere(0.1), position=(-0.97, 0, 0.5), mass=0.2)
    lying = w.add_body(engine.Cylinder(0.2, 1.0), position=(-1, 0, 0.2),
                       orientation=qaxis((1, 0, 0), np.pi / 2), kind="static")
    run(w, top, 2.0, 1 / 60)
    assert w.positions[base][2] == pytest.approx(0.2, abs=5e-4)
    assert w.positions[top][2] == pytest.approx(0.55, abs=1e-3)
    assert axis_tilt_deg(w.orientations[top]) < 0.2
    assert w.positions[box][2] == pytest.approx(0.1, abs=5e-4)
    assert w.positions[cone][2] == pytest.approx(0.4, abs=1e-3)
    assert axis_tilt_deg(w.orientations[cone]) < 0.2
    # A ball set just off the top of a static lying cylinder (axis along y) rolls off its side
    # (+x) onto the ground, and stays clear of the cylinder.
    assert w.positions[ball][2] == pytest.approx(0.1, abs=1e-3)
    assert w.positions[ball][0] > -1 + 0.2
    assert np.linalg.norm(w.positions[lying] - (-1, 0, 0.2)) == 0.0


def test_cylinder_rolls_on_triangle_mesh_slope():
    r = 0.25
    w, nrm, down = slope_world(10.0, ground="mesh")
    start = nrm * r - down * 2.0 + np.array([0, 0.3, 0])
    b = w.add_body(engine.Cylinder(r, 0.3), position=start, orientation=qaxis((1, 0, 0), np.pi / 2),
                   mass=1.0, friction=0.8)
    dt, s, lift = 1 / 60, [], []
    for _ in range(60):
        w.step(dt)
        p = w.positions[b]
        s.append(np.dot(p - start, down))
        lift.append(np.dot(p, nrm) - r)
    a = 2 * np.polyfit(dt * np.arange(1, 61), s, 2)[0]
    assert a == pytest.approx(2 / 3 * G * np.sin(np.radians(10)), rel=0.015)
    assert max(np.abs(lift)) < 5e-4


def test_deterministic():
    def sim():
        w = flat_world()
        for i in range(3):
            w.add_body(engine.Cylinder(0.1, 0.3), position=(0.05 * i, 0, 0.3 + 0.35 * i),
                       orientation=qaxis((1, 1, 0), 0.3 * i), mass=1.0)
            w.add_body(engine.Cone(0.15, 0.3), position=(1 + 0.05 * i, 0, 0.3 + 0.35 * i),
                       orientation=qaxis((0, 1, 1), 0.4 * i), mass=1.0)
        for _ in range(60):
            w.step(1 / 60)
        return w.positions.copy(), w.orientations.copy()
    a, b = sim(), sim()
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert np.all(np.isfinite(a[0]))


def test_compound_with_cylinder_wheels_rests_on_them():
    """A dumbbell (two cylinder wheels on a box bar) lying on the ground rests on its wheels;
    its mass properties combine the exact parts."""
    wheel, bar = engine.Cylinder(0.2, 0.1), engine.Box((0.05, 0.05, 0.3))
    c = engine.Compound([(wheel, (0, 0, -0.3), (1, 0, 0, 0)), (bar, (0, 0, 0), (1, 0, 0, 0)),
                         (wheel, (0, 0, 0.3), (1, 0, 0, 0))])
    mp = c.mass_properties(density=1.0)
    assert mp.volume == pytest.approx(2 * np.pi * 0.04 * 0.1 + 0.1 * 0.1 * 0.6, rel=1e-12)
    lo, hi = c.part_aabbs()
    np.testing.assert_allclose(lo[0], [-0.2, -0.2, -0.35])
    np.testing.assert_allclose(hi[2], [0.2, 0.2, 0.35])
    w = flat_world()
    b = w.add_body(c, position=(0, 0, 0.3), orientation=qaxis((1, 0, 0), np.pi / 2), mass=2.0)
    p, q = run(w, b, 2.0, 1 / 60)
    assert p[2] == pytest.approx(0.2, abs=5e-4)
    assert abs(axis_tilt_deg(q) - 90) < 0.1


# --------------------------------------------------------------------------- add-on overlays

def test_overlay_wireframes_and_boxes_of_curved_shapes():
    """addon/overlay/geometry.py (Blender-free) outlines them on their surfaces and boxes them
    exactly."""
    from hullabaloo.addon.overlay import geometry as geo
    eng = engine
    cyl, cone = eng.Cylinder(0.3, 0.8), eng.Cone(0.5, 1.0)
    seg = geo.local_wireframe(cyl, segments=24).reshape(-1, 3)
    assert len(seg) == 2 * (2 * 24 + 4)
    np.testing.assert_allclose(np.hypot(seg[:, 0], seg[:, 1]), 0.3, atol=1e-12)
    assert set(np.round(seg[:, 2], 12)) == {-0.4, 0.4}
    seg = geo.local_wireframe(cone, segments=24).reshape(-1, 3)
    base = np.isclose(seg[:, 2], -0.5)
    np.testing.assert_allclose(np.hypot(seg[base, 0], seg[base, 1]), 0.5, atol=1e-12)
    np.testing.assert_allclose(seg[~base], [[0, 0, 0.5]] * int((~base).sum()), atol=1e-12)
    # Posed AABBs: exact (from dense rim samples).
    rng = np.random.default_rng(1)
    q = rng.normal(size=(5, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    rot = quat.to_matrix(q)
    pos = rng.normal(size=(5, 3))
    lo, hi = geo.world_aabbs([cyl, cone], np.array([0, 1, 0, 1, 0]), pos, rot)
    phi = np.linspace(0, 2 * np.pi, 4001)
    for i, sh in enumerate([cyl, cone, cyl, cone, cyl]):
        ring = np.stack((sh.radius * np.cos(phi), sh.radius * np.sin(phi), 0 * phi), 1)
        hh = sh.half_height
        pts = np.concatenate((ring - [0, 0, hh], ring + [0, 0, hh] if sh is cyl else [[0, 0, hh]]))
        w = pts @ rot[i].T + pos[i]
        np.testing.assert_allclose(lo[i], w.min(axis=0), atol=1e-6)
        np.testing.assert_allclose(hi[i], w.max(axis=0), atol=1e-6)


def test_overlay_query_layers_use_exact_witnesses_for_curved_pairs():
    from hullabaloo.addon.overlay import geometry as geo
    cyl, box = engine.Cylinder(0.3, 0.8), engine.Box((1.0, 1.0, 0.5))
    pos = np.array([[0.0, 0.0, 0.5 + 0.4 + 0.05], [0.0, 0.0, 0.0]])
    rot = quat.to_matrix(np.array([[1.0, 0, 0, 0], [1.0, 0, 0, 0]]))
    layers = geo.query_layers([cyl, box], [0, 1], pos, rot, [[0, 1]], {})
    by = {ly.name: ly for ly in layers}
    wit = by["witness"].coords.reshape(-1, 2, 3)[0]
    assert wit[0][2] == pytest.approx(0.5 + 0.05) and wit[1][2] == pytest.approx(0.5)
    assert "simplex" not in by and "epa" not in by          # no bounding-prism pictures
