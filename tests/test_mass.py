"""Mass properties: analytic formulas, trimesh (test-only oracle), frame covariance, combine()."""
import itertools

import numpy as np
import pytest
import trimesh
from scipy.spatial.transform import Rotation

from engine.core import quat
from engine.core.errors import EngineError
from engine.shapes.hull import ConvexHull
from engine.shapes.mass import MassProperties, combine, mass_properties, mass_properties_from_mass
from engine.shapes.primitives import Box, Capsule, Sphere

CORNERS = np.array(list(itertools.product((-1.0, 1.0), repeat=3)))


def box_inertia(mass, half):
    hx, hy, hz = half
    return mass / 3.0 * np.diag([hy * hy + hz * hz, hx * hx + hz * hz, hx * hx + hy * hy])


def trimesh_truth(points, density):
    """Mass, centre and inertia about the centre of the convex hull of points, by trimesh (Qhull
    hull + its own surface-integral mass properties): independent of our hull and integrator."""
    mesh = trimesh.convex.convex_hull(points)
    mesh.density = density
    mp = mesh.mass_properties
    return mp["mass"], np.asarray(mp["center_mass"]), np.asarray(mp["inertia"]), mesh.volume


def assert_principal_frame(props):
    axes, moments = props.principal_axes, props.principal_moments
    np.testing.assert_allclose(axes @ axes.T, np.eye(3), atol=1e-12)
    assert np.linalg.det(axes) > 0  # a rotation, right-handed
    assert np.all(np.diff(moments) >= 0)
    scale = np.abs(props.inertia).max()
    np.testing.assert_allclose(axes @ np.diag(moments) @ axes.T, props.inertia, atol=1e-12 * scale)
    np.testing.assert_allclose(quat.to_matrix(props.principal_rotation), axes, atol=1e-12)
    # Triangle inequality of a physical inertia tensor.
    assert moments[0] + moments[1] >= moments[2] * (1 - 1e-12)


# --------------------------------------------------------------------------- analytic shapes

@pytest.mark.parametrize("half", [(1.0, 1.0, 1.0), (0.5, 2.0, 0.1), (3e-3, 1e-3, 2e-3)])
def test_box_matches_the_analytic_formula(half):
    props = mass_properties(Box(half), density=700.0)
    mass = 700.0 * 8 * np.prod(half)
    np.testing.assert_allclose(props.mass, mass, rtol=1e-13)
    np.testing.assert_allclose(props.volume, 8 * np.prod(half), rtol=1e-13)
    np.testing.assert_allclose(props.center, 0.0, atol=1e-15 * max(half))
    np.testing.assert_allclose(props.inertia, box_inertia(mass, half), rtol=1e-12,
                               atol=1e-14 * mass * max(half) ** 2)
    assert_principal_frame(props)


def test_sphere_is_two_fifths_m_r_squared():
    props = mass_properties(Sphere(0.3), density=2500.0)
    mass = 2500.0 * 4 / 3 * np.pi * 0.3 ** 3
    np.testing.assert_allclose(props.mass, mass, rtol=1e-14)
    np.testing.assert_allclose(props.inertia, np.eye(3) * 0.4 * mass * 0.09, rtol=1e-14)
    np.testing.assert_allclose(props.center, 0.0)


@pytest.mark.parametrize("r, h", [(0.5, 1.0), (0.2, 0.0), (1.0, 0.05), (0.01, 3.0)])
def test_capsule_matches_the_textbook_formula(r, h):
    density = 1200.0
    props = mass_properties(Capsule(r, h), density=density)
    # Textbook form with cylinder length H = 2h: m_c = rho pi r^2 H, m_s = rho 4/3 pi r^3,
    # I_zz = m_c r^2/2 + 2/5 m_s r^2; I_xx = m_c (r^2/4 + H^2/12) + m_s (2/5 r^2 + H^2/4 + 3/8 H r).
    big_h = 2 * h
    m_c = density * np.pi * r * r * big_h
    m_s = density * 4 / 3 * np.pi * r ** 3
    izz = m_c * r * r / 2 + 0.4 * m_s * r * r
    ixx = m_c * (r * r / 4 + big_h ** 2 / 12) + m_s * (0.4 * r * r + big_h ** 2 / 4 + 3 / 8 * big_h * r)
    np.testing.assert_allclose(props.mass, m_c + m_s, rtol=1e-14)
    np.testing.assert_allclose(props.inertia, np.diag([ixx, ixx, izz]), rtol=1e-13)
    np.testing.assert_allclose(props.volume, (m_c + m_s) / density, rtol=1e-14)


def test_capsule_agrees_with_a_fine_tessellation():
    # Independent route: the hull of many points on the capsule's surface converges to it.
    r, h = 0.4, 0.7
    mesh = trimesh.creation.capsule(height=2 * h, radius=r, count=[96, 96])
    mesh.density = 1000.0
    ref = mesh.mass_properties
    props = mass_properties(Capsule(r, h))
    np.testing.assert_allclose(props.mass, ref["mass"], rtol=2e-3)
    np.testing.assert_allclose(np.diag(props.inertia), np.diag(ref["inertia"]), rtol=4e-3)


@pytest.mark.parametrize("n", [3, 6, 40, 400])
def test_prism_hull_matches_the_analytic_prism(n):
    # Regular n-gon prism, circumradius R, height H. A triangle (0, p1, p2) with |p| = R and angle
    # t = 2 pi / n has polar moment A/6 (2 R^2 + R^2 cos t), so J/A = R^2 (2 + cos t) / 6.
    big_r, big_h, density = 0.8, 2.5, 300.0
    t = 2 * np.pi / n
    ang = np.arange(n) * t
    ring = big_r * np.c_[np.cos(ang), np.sin(ang)]
    pts = np.concatenate((np.c_[ring, np.zeros(n)], np.c_[ring, np.full(n, big_h)]))
    props = mass_properties(ConvexHull(pts), density=density)
    area = n / 2 * big_r ** 2 * np.sin(t)
    mass = density * area * big_h
    polar = mass * big_r ** 2 * (2 + np.cos(t)) / 6
    np.testing.assert_allclose(props.mass, mass, rtol=1e-13)
    np.testing.assert_allclose(props.center, [0, 0, big_h / 2], atol=1e-13)
    # In-plane moments are isotropic for every n >= 3 (n-fold symmetry), so I_xx = I_yy = J / 2.
    expected = np.diag([polar / 2 + mass * big_h ** 2 / 12] * 2 + [polar])
    np.testing.assert_allclose(props.inertia, expected, rtol=1e-12, atol=1e-12 * polar)
    if n >= 40:  # approaching the solid cylinder: I_zz -> m R^2 / 2
        np.testing.assert_allclose(props.inertia[2, 2], mass * big_r ** 2 / 2, rtol=5e-3)


def test_box_hull_equals_box_shape():
    half = np.array([0.3, 1.1, 0.7])
    a = mass_properties(Box(half), density=10.0)
    b = mass_properties(ConvexHull(CORNERS * half + [5.0, -2.0, 1.0]), density=10.0)
    np.testing.assert_allclose(b.mass, a.mass, rtol=1e-13)
    np.testing.assert_allclose(b.center, [5.0, -2.0, 1.0], atol=1e-13)
    np.testing.assert_allclose(b.inertia, a.inertia, rtol=1e-12, atol=1e-13 * a.mass)


# --------------------------------------------------------------------------- random hulls vs trimesh

@pytest.mark.parametrize("seed", range(8))
def test_random_hulls_match_trimesh(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(8, 400))
    pts = rng.normal(size=(n, 3)) * rng.uniform(0.2, 3.0, 3) + rng.normal(size=3) * 5
    density = float(rng.uniform(10, 5000))
    props = mass_properties(ConvexHull(pts), density=density)
    mass, center, inertia, volume = trimesh_truth(pts, density)
    np.testing.assert_allclose(props.mass, mass, rtol=1e-11)
    np.testing.assert_allclose(props.volume, volume, rtol=1e-11)
    np.testing.assert_allclose(props.center, center, rtol=0, atol=1e-11 * np.abs(pts).max())
    np.testing.assert_allclose(props.inertia, inertia, rtol=0, atol=1e-10 * np.abs(inertia).max())
    assert_principal_frame(props)


def test_far_from_origin_hull_keeps_its_inertia():
    # Inertia about the centre must not suffer from the 10 km offset (reference point = vertex mean).
    rng = np.random.default_rng(20)
    pts = rng.normal(size=(200, 3))
    near = mass_properties(ConvexHull(pts))
    far = mass_properties(ConvexHull(pts + [1e4, -7e3, 2e3]))
    np.testing.assert_allclose(far.inertia, near.inertia, rtol=0, atol=1e-8 * np.abs(near.inertia).max())
    np.testing.assert_allclose(far.center - [1e4, -7e3, 2e3], near.center, atol=1e-10)


def test_hull_volume_and_centroid_properties():
    rng = np.random.default_rng(21)
    pts = rng.uniform(-1, 1, (300, 3)) * [1.0, 2.0, 0.5]
    hull = ConvexHull(pts)
    _, center, _, volume = trimesh_truth(pts, 1.0)
    np.testing.assert_allclose(hull.volume, volume, rtol=1e-12)
    np.testing.assert_allclose(hull.centroid, center, atol=1e-12)


# --------------------------------------------------------------------------- covariance

def test_rotation_and_translation_covariance():
    rng = np.random.default_rng(22)
    pts = rng.normal(size=(150, 3)) * [2.0, 1.0, 0.3]
    base = mass_properties(ConvexHull(pts), density=800.0)
    for _ in range(5):
        rot = Rotation.random(random_state=rng).as_matrix()
        shift = rng.normal(size=3) * 10
        moved = mass_properties(ConvexHull(pts @ rot.T + shift), density=800.0)
        np.testing.assert_allclose(moved.mass, base.mass, rtol=1e-12)
        np.testing.assert_allclose(moved.center, rot @ base.center + shift, atol=1e-11)
        np.testing.assert_allclose(moved.inertia, rot @ base.inertia @ rot.T, rtol=0,
                                   atol=1e-11 * np.abs(base.inertia).max())
        np.testing.assert_allclose(moved.principal_moments, base.principal_moments, rtol=1e-11)


def test_principal_axes_diagonalise_a_tilted_box():
    rot = Rotation.from_rotvec([0.5, -0.3, 0.8]).as_matrix()
    half = np.array([0.5, 1.5, 1.0])
    props = mass_properties(ConvexHull(CORNERS * half @ rot.T))
    box = mass_properties(Box(half))
    np.testing.assert_allclose(props.principal_moments, np.sort(np.diag(box.inertia)), rtol=1e-12)
    # The principal axis of the smallest moment is the box's long axis (its local y).
    np.testing.assert_allclose(np.abs(props.principal_axes[:, 0] @ rot[:, 1]), 1.0, atol=1e-12)
    assert_principal_frame(props)


# --------------------------------------------------------------------------- from mass, combine

def test_mass_properties_from_mass_scales_to_the_given_mass():
    shape = Capsule(0.3, 0.4)
    props = mass_properties_from_mass(shape, 12.5)
    ref = mass_properties(shape, density=1.0)
    np.testing.assert_allclose(props.mass, 12.5, rtol=1e-15)
    np.testing.assert_allclose(props.inertia, ref.inertia * 12.5 / ref.volume, rtol=1e-14)
    np.testing.assert_allclose(props.volume, ref.volume, rtol=1e-15)
    np.testing.assert_allclose(props.density, 12.5 / ref.volume, rtol=1e-14)


def test_combine_two_half_boxes_is_the_whole_box():
    half = np.array([1.0, 0.4, 0.25])
    whole = mass_properties(Box(half), density=900.0)
    # Two halves split along x, each a Box of half extents (0.5, 0.4, 0.25) at x = -/+ 0.5.
    piece = mass_properties(Box(half * [0.5, 1, 1]), density=900.0)
    parts = [(piece, [-0.5, 0, 0], [1, 0, 0, 0]), (piece, [0.5, 0, 0], [1, 0, 0, 0])]
    got = combine(parts)
    np.testing.assert_allclose(got.mass, whole.mass, rtol=1e-14)
    np.testing.assert_allclose(got.center, 0.0, atol=1e-15)
    np.testing.assert_allclose(got.inertia, whole.inertia, rtol=1e-13, atol=1e-14 * whole.mass)
    np.testing.assert_allclose(got.volume, whole.volume, rtol=1e-14)


def test_combine_rotated_parts_equals_the_union_hull():
    # An L-free tiling: box [0,2]x[0,1]x[0,1] made of two unit cubes, the second one described in
    # a frame rotated 90 degrees about z and placed at its centre; then the whole moved and turned.
    unit = ConvexHull(CORNERS * 0.5)
    cube = mass_properties(unit, density=400.0)
    q_turn = quat.from_axis_angle([0, 0, 1], np.pi / 2)
    parts = [(cube, [0.5, 0.5, 0.5], [1, 0, 0, 0]), (cube, [1.5, 0.5, 0.5], q_turn)]
    got = combine(parts)
    union = mass_properties(ConvexHull(np.array(list(itertools.product((0.0, 2.0), (0.0, 1.0), (0.0, 1.0))))),
                            density=400.0)
    np.testing.assert_allclose(got.mass, union.mass, rtol=1e-14)
    np.testing.assert_allclose(got.center, union.center, atol=1e-14)
    np.testing.assert_allclose(got.inertia, union.inertia, rtol=1e-13, atol=1e-14 * union.mass)
    # Combining in a rotated, shifted frame transforms like a rigid body.
    q = quat.from_axis_angle([1.0, 2.0, -0.5], 0.7)
    rot = quat.to_matrix(q)
    shift = np.array([3.0, -1.0, 2.0])
    moved = combine([(p, rot @ np.asarray(x) + shift, quat.multiply(q, r)) for p, x, r in parts])
    np.testing.assert_allclose(moved.center, rot @ union.center + shift, atol=1e-13)
    np.testing.assert_allclose(moved.inertia, rot @ union.inertia @ rot.T, atol=1e-12 * union.mass)


def test_combine_unequal_parts_uses_the_parallel_axis_theorem():
    # Two point-like spheres far apart: I about the joint centre -> reduced mass * distance^2.
    tiny = mass_properties(Sphere(1e-4), density=1e6)
    heavy = tiny.scaled(3.0)
    got = combine([(tiny, [0, 0, 0], [1, 0, 0, 0]), (heavy, [0, 0, 4.0], [1, 0, 0, 0])])
    m1, m2 = tiny.mass, heavy.mass
    np.testing.assert_allclose(got.center, [0, 0, 4.0 * m2 / (m1 + m2)], rtol=1e-14)
    reduced = m1 * m2 / (m1 + m2) * 16.0
    np.testing.assert_allclose(got.inertia[0, 0], reduced + tiny.inertia[0, 0] * 4, rtol=1e-12)
    np.testing.assert_allclose(got.inertia[2, 2], tiny.inertia[2, 2] * 4, rtol=1e-12)


# --------------------------------------------------------------------------- errors

@pytest.mark.parametrize("density", [0.0, -1.0, np.nan, np.inf])
def test_bad_density_raises(density):
    with pytest.raises(EngineError, match="density"):
        mass_properties(Box([1, 1, 1]), density=density)


@pytest.mark.parametrize("mass", [0.0, -2.0, np.nan, np.inf])
def test_bad_mass_raises(mass):
    with pytest.raises(EngineError, match="mass"):
        mass_properties_from_mass(Sphere(1.0), mass)


def test_bad_inputs_raise():
    with pytest.raises(EngineError):
        mass_properties("not a shape")
    with pytest.raises(EngineError):
        combine([])
    props = mass_properties(Sphere(1.0))
    with pytest.raises(EngineError):
        combine([(props, [0, 0, np.nan], [1, 0, 0, 0])])
    with pytest.raises(EngineError):
        combine([(props, [0, 0, 0], [0, 0, 0, 0])])


def test_repr_and_type():
    props = mass_properties(Box([1, 2, 3]))
    assert isinstance(props, MassProperties)
    assert repr(props).startswith("MassProperties(mass=")
