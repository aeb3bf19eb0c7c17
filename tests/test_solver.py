"""engine/dynamics/solver.py: the one-product sweeps against the sequential sweeps on random manifolds,
and every pass on hand-built contacts whose answer is known in closed form.

Conventions (engine/README.md): the normal points from body a to body b; a row's velocity
u = J v is the normal (or tangential) velocity of b's anchor relative to a's. In the hand-built
cases body 0 is static ground, body 1 the dynamic body above it, n = +z.
"""
import math

import numpy as np
import pytest

from engine import WorldSettings
from engine.dynamics.graph import colour_constraints
from engine.dynamics.solver import ContactSolver, soft_params, tangent_basis

SETTINGS = WorldSettings()
G = 9.81
GRAVITY = np.array([0.0, 0.0, -G])


# ----------------------------------------------------------------------------- building solvers

def build(ia, ib, normal, points, sep, count, friction, restitution, x_com, inv_mass,
          inv_inertia, vel, accel_n=None, warm_n=None, warm_f=None, h=1.0 / 360.0,
          settings=SETTINGS):
    """A ContactSolver coloured as World._solve colours it (bodies with zero inverse mass are
    the fixed ones)."""
    m = len(ia)
    col = colour_constraints(ia, ib, inv_mass == 0.0)
    s = ContactSolver(
        ia, ib, normal, points, sep, count, friction, restitution, x_com, inv_mass, inv_inertia,
        vel, np.zeros(m) if accel_n is None else accel_n,
        np.zeros((m, 4)) if warm_n is None else warm_n,
        np.zeros((m, 4, 3)) if warm_f is None else warm_f,
        h, settings, order=col.order)
    return s


def ground_scene(local_points, vel_b, mass=2.0, inertia=(0.3, 0.4, 0.5), sep=0.0,
                 friction=0.0, restitution=0.0, warm_n=None, warm_f=None, h=1.0 / 360.0,
                 accel_n=0.0, settings=SETTINGS, lock_rotation=False):
    """Body 1 (mass, diagonal inertia, centre of mass at (0, 0, 1)) on static ground (body 0),
    one manifold with the given points (offsets from body 1's centre of mass), n = +z.
    Returns (solver, vel (2, 6))."""
    k = len(local_points)
    x_com = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    pts = np.zeros((1, 4, 3))
    pts[0, :k] = x_com[1] + np.asarray(local_points, dtype=float)
    separation = np.full((1, 4), np.inf)
    separation[0, :k] = sep
    inv_mass = np.array([0.0, 1.0 / mass])
    inv_inertia = np.zeros((2, 3, 3))
    if not lock_rotation:
        inv_inertia[1] = np.diag(1.0 / np.asarray(inertia, dtype=float))
    vel = np.zeros((2, 6))
    vel[1] = vel_b
    wn = None if warm_n is None else np.asarray(warm_n, dtype=float).reshape(1, 4)
    wf = None if warm_f is None else np.asarray(warm_f, dtype=float).reshape(1, 4, 3)
    s = build(np.array([0]), np.array([1]), np.array([[0.0, 0.0, 1.0]]), pts, separation,
              np.array([k]), np.array([friction]), np.array([restitution]), x_com, inv_mass,
              inv_inertia, vel, np.array([accel_n]), wn, wf, h=h, settings=settings)
    return s, vel


def point_velocity(vel, r):
    """Velocity of body 1's material point at offset r from its centre of mass."""
    return vel[1, :3] + np.cross(vel[1, 3:], r)


# ------------------------------------------------------------------- soft_params, tangent_basis

def test_soft_params_match_the_spring_damper_closed_form():
    """Catto's soft step from a spring k = m w^2 and damper c = 2 m zeta w on effective mass
    m, integrated implicitly: ERP beta = h k / (c + h k) (bias rate beta / h), CFM
    gamma = 1 / (h (c + h k)), soft mass 1 / (1/m + gamma) = mass_scale * m, and the
    accumulated-impulse leak gamma * soft mass = impulse_scale. m cancels out."""
    for hz, zeta, h, m in ((30.0, 10.0, 1.0 / 360.0, 2.0), (90.0, 1.0, 1.0 / 240.0, 0.1),
                           (5.0, 0.0, 1.0 / 60.0, 50.0), (1000.0, 3.0, 1e-3, 1.0)):
        w = 2.0 * math.pi * hz
        k, c = m * w * w, 2.0 * m * zeta * w
        beta = h * k / (c + h * k)
        gamma = 1.0 / (h * (c + h * k))
        soft_mass = 1.0 / (1.0 / m + gamma)
        bias_rate, mass_scale, impulse_scale = soft_params(hz, zeta, h)
        assert bias_rate == pytest.approx(beta / h, rel=1e-13)
        assert mass_scale == pytest.approx(soft_mass / m, rel=1e-13)
        assert impulse_scale == pytest.approx(gamma * soft_mass, rel=1e-13)
    # Zero stiffness: rigid, no bias.
    assert soft_params(0.0, 10.0, 0.01) == (0.0, 1.0, 0.0)


def test_tangent_basis_is_orthonormal_and_right_handed():
    rng = np.random.default_rng(7)
    n = rng.normal(size=(500, 3))
    n = np.concatenate((n, np.eye(3), -np.eye(3)))
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    t1, t2 = tangent_basis(n)
    basis = np.stack((t1, t2, n), axis=1)  # rows t1, t2, n
    np.testing.assert_allclose(basis @ np.swapaxes(basis, 1, 2),
                               np.broadcast_to(np.eye(3), basis.shape), atol=1e-15)
    np.testing.assert_allclose(np.linalg.det(basis), 1.0, atol=1e-14)


def test_tangent_basis_is_continuous_away_from_the_helper_switch():
    rng = np.random.default_rng(8)
    n = rng.normal(size=(2000, 3))
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    n = n[np.abs(np.abs(n[:, 0]) - 0.57735) > 1e-3]
    eps = 1e-7
    dn = rng.normal(size=n.shape) * eps
    n2 = (n + dn) / np.linalg.norm(n + dn, axis=1, keepdims=True)
    t1, t2 = tangent_basis(n)
    u1, u2 = tangent_basis(n2)
    # Lipschitz: the helper is at least sin(~35 deg) away from n, so |dt| <= ~ 4 |dn|.
    step = np.linalg.norm(n2 - n, axis=1)
    assert np.max(np.linalg.norm(u1 - t1, axis=1) / step) < 5.0
    assert np.max(np.linalg.norm(u2 - t2, axis=1) / step) < 5.0


def test_empty_solver_passes_are_no_ops():
    vel = np.arange(12.0).reshape(2, 6)
    before = vel.copy()
    z3 = np.zeros((0, 3))
    s = build(np.zeros(0, np.int64), np.zeros(0, np.int64), z3, np.zeros((0, 4, 3)),
              np.zeros((0, 4)), np.zeros(0, np.int64), np.zeros(0), np.zeros(0),
              np.zeros((2, 3)), np.ones(2), np.broadcast_to(np.eye(3), (2, 3, 3)).copy(), vel)
    s.warm_start(vel)
    s.solve(vel, np.zeros((2, 6)), True)
    s.solve(vel, np.zeros((2, 6)), False)
    s.restitution(vel, 1.0)
    np.testing.assert_array_equal(vel, before)
    normal, fworld, fr, tang = s.impulses()
    assert normal.shape == (0, 4) and fworld.shape == (0, 4, 3)
    assert fr.shape == (0, 4, 2) and tang.shape == (0, 2, 3)


# ----------------------------------------------------------------------------- normal rows

def test_normal_impulse_stops_an_approach_below_the_centre_of_mass():
    """Point straight below the centre of mass: r x n = 0, effective mass exactly m. One
    rigid (zero bias) sweep gives impulse m v and leaves the body at rest."""
    m, v = 2.0, 3.0
    s, vel = ground_scene([(0.0, 0.0, -0.5)], [0.0, 0.0, -v, 0.0, 0.0, 0.0], mass=m)
    s.solve(vel, np.zeros((2, 6)), False)
    normal = s.impulses()[0]
    assert normal[0, 0] == pytest.approx(m * v, rel=1e-14)
    np.testing.assert_array_equal(normal[0, 1:], 0.0)
    np.testing.assert_allclose(vel[1], 0.0, atol=1e-15)
    np.testing.assert_array_equal(vel[0], 0.0)  # the ground is never written


def test_normal_impulse_with_a_lever_arm_uses_the_effective_mass():
    """Point at lateral offset d: K = 1/m + d^2 / I_yy, impulse v / K; afterwards the
    point's normal velocity is zero, with dv = P n / m and dw = I^-1 (r x n) P."""
    m, inertia, v, d = 2.0, np.array([0.3, 0.4, 0.5]), 1.5, 0.35
    r = np.array([d, 0.0, -0.5])
    s, vel = ground_scene([r], [0.0, 0.0, -v, 0.0, 0.0, 0.0], mass=m, inertia=inertia)
    s.solve(vel, np.zeros((2, 6)), False)
    p = v / (1.0 / m + d * d / inertia[1])
    assert s.impulses()[0][0, 0] == pytest.approx(p, rel=1e-14)
    n = np.array([0.0, 0.0, 1.0])
    np.testing.assert_allclose(vel[1, :3], [0.0, 0.0, -v + p / m], atol=1e-14)
    np.testing.assert_allclose(vel[1, 3:], np.cross(r, n) * p / inertia, atol=1e-14)
    assert point_velocity(vel, r)[2] == pytest.approx(0.0, abs=1e-14)


def test_separating_point_gets_no_pull():
    s, vel = ground_scene([(0.0, 0.0, -0.5)], [0.0, 0.0, 2.0, 0.0, 0.0, 0.0])
    before = vel.copy()
    s.solve(vel, np.zeros((2, 6)), False)
    assert s.impulses()[0][0, 0] == 0.0
    np.testing.assert_array_equal(vel, before)


def test_box_landing_flat_gets_four_equal_impulses():
    """The block normal step: four coplanar points (statically indeterminate) share the
    landing symmetrically, m v / 4 each, and the box stops without tipping."""
    m, v, a = 3.0, 2.0, 0.5
    inertia = np.full(3, m * (2 * a) ** 2 / 6.0)  # a cube of side 2a
    corners = [(sx * a, sy * a, -a) for sx in (-1, 1) for sy in (-1, 1)]
    s, vel = ground_scene(corners, [0.0, 0.0, -v, 0.0, 0.0, 0.0], mass=m, inertia=inertia,
                          friction=0.6)
    s.solve(vel, np.zeros((2, 6)), False)
    normal = s.impulses()[0][0]
    np.testing.assert_allclose(normal, m * v / 4.0, rtol=1e-13)
    np.testing.assert_allclose(vel[1], 0.0, atol=1e-14)


# ----------------------------------------------------------------------------- friction

def test_friction_stops_a_slow_slide_exactly():
    """Rotation locked, so the tangential effective mass is m: impulse -m v_t, inside the
    cone mu m v_n."""
    m, vn, mu = 2.0, 1.0, 0.8
    vt = np.array([0.3, -0.4, 0.0])  # |vt| = 0.5 < mu vn
    s, vel = ground_scene([(0.0, 0.0, -0.5)], np.r_[vt + [0, 0, -vn], 0, 0, 0], mass=m,
                          friction=mu, lock_rotation=True)
    s.solve(vel, np.zeros((2, 6)), False)
    normal, fworld, fr, tang = s.impulses()
    assert normal[0, 0] == pytest.approx(m * vn, rel=1e-14)
    np.testing.assert_allclose(fworld[0, 0], -m * vt, atol=1e-14)
    np.testing.assert_allclose(vel[1], 0.0, atol=1e-15)
    # The tangent-frame components are the world vector's coordinates on the tangents.
    np.testing.assert_allclose(fr[0, 0], tang[0] @ fworld[0, 0], atol=1e-15)


def test_friction_clamps_a_fast_slide_at_the_cone():
    m, vn, mu = 2.0, 1.0, 0.5
    vt = np.array([3.0, 4.0, 0.0])  # |vt| = 5 >> mu vn
    s, vel = ground_scene([(0.0, 0.0, -0.5)], np.r_[vt + [0, 0, -vn], 0, 0, 0], mass=m,
                          friction=mu, lock_rotation=True)
    s.solve(vel, np.zeros((2, 6)), False)
    normal, fworld = s.impulses()[:2]
    pn = m * vn
    assert normal[0, 0] == pytest.approx(pn, rel=1e-14)
    unit = vt / np.linalg.norm(vt)
    np.testing.assert_allclose(fworld[0, 0], -mu * pn * unit, atol=1e-14)
    np.testing.assert_allclose(vel[1, :3], vt - mu * vn * unit, atol=1e-14)


def test_sliding_sphere_starts_rolling_at_five_sevenths():
    """A solid sphere (I = 2/5 m R^2) sliding on the ground: tangential effective mass
    1 / (1/m + R^2/I) = 2m/7; with enough friction one sweep makes the contact point stick,
    leaving the centre at 5/7 of the sliding speed and spinning at v / R."""
    m, R, v, mu = 1.5, 0.5, 0.7, 1.0
    inertia = np.full(3, 0.4 * m * R * R)
    r = np.array([0.0, 0.0, -R])
    s, vel = ground_scene([r], [v, 0.0, -1.0, 0.0, 0.0, 0.0], mass=m, inertia=inertia,
                          friction=mu)
    s.solve(vel, np.zeros((2, 6)), False)
    fworld = s.impulses()[1]
    np.testing.assert_allclose(fworld[0, 0], [-2.0 * m * v / 7.0, 0.0, 0.0], atol=1e-14)
    np.testing.assert_allclose(vel[1, :3], [5.0 * v / 7.0, 0.0, 0.0], atol=1e-14)
    np.testing.assert_allclose(vel[1, 3:], [0.0, 5.0 * v / 7.0 / R, 0.0], atol=1e-14)
    np.testing.assert_allclose(point_velocity(vel, r), 0.0, atol=1e-14)


# ----------------------------------------------------------------------------- warm start

def test_warm_start_applies_exactly_the_stored_impulses():
    """dv = M^-1 J^T lambda, computed here from forces: each point's world impulse
    P = lambda_n n + (tangential part of the stored friction, clipped to the cone mu lambda_n)
    pushes b by +P and a by -P at the contact point. Three manifolds share body 2 (the
    contributions add up), body 0 is static and unused slots carry junk that must be
    ignored. The colouring reorders the manifolds; impulses() answers in the caller's
    order."""
    rng = np.random.default_rng(11)
    nb = 6
    x_com = rng.normal(size=(nb, 3))
    inv_mass = np.array([0.0, 0.5, 2.0, 1.25, 0.8, 3.0])
    rot = np.linalg.qr(rng.normal(size=(nb, 3, 3)))[0]
    inv_inertia = rot @ (rng.uniform(0.5, 3.0, size=(nb, 3))[:, :, None] * np.eye(3)) \
        @ np.swapaxes(rot, 1, 2)
    inv_inertia[0] = 0.0
    ia, ib = np.array([0, 2, 1, 4]), np.array([2, 3, 2, 5])
    m = 4
    normal = rng.normal(size=(m, 3))
    normal /= np.linalg.norm(normal, axis=1, keepdims=True)
    count = np.array([4, 2, 3, 1])
    points = 0.5 * (x_com[ia] + x_com[ib])[:, None, :] + rng.normal(size=(m, 4, 3)) * 0.3
    sep = np.where(np.arange(4) < count[:, None], -0.01, np.inf)
    friction = np.array([0.5, 0.9, 0.3, 0.7])
    warm_n = rng.uniform(0.5, 2.0, size=(m, 4))
    warm_f = rng.normal(size=(m, 4, 3))  # with normal components and some outside the cone
    vel = rng.normal(size=(nb, 6))
    vel[0] = 0.0
    before = vel.copy()
    s = build(ia, ib, normal, points, sep, count, friction, np.zeros(m), x_com, inv_mass,
              inv_inertia, vel, warm_n=warm_n, warm_f=warm_f)
    assert (s.order != np.arange(m)).any()  # the solver's own order differs from ours
    s.warm_start(vel)

    expect = before.copy()
    for k in range(m):
        n = normal[k]
        for p in range(count[k]):
            ft = warm_f[k, p] - n * (warm_f[k, p] @ n)
            cap = friction[k] * warm_n[k, p]
            if np.linalg.norm(ft) > cap:
                ft *= cap / np.linalg.norm(ft)
            imp = warm_n[k, p] * n + ft
            for body, sign in ((ia[k], -1.0), (ib[k], 1.0)):
                r = points[k, p] - x_com[body]
                expect[body, :3] += sign * inv_mass[body] * imp
                expect[body, 3:] += sign * inv_inertia[body] @ np.cross(r, imp)
    np.testing.assert_allclose(vel, expect, rtol=0, atol=1e-13)
    # What the solver keeps as accumulated impulses is the same projected, clipped set.
    normal_imp, fworld = s.impulses()[:2]
    np.testing.assert_array_equal(normal_imp, np.where(np.arange(4) < count[:, None], warm_n, 0))
    for k in range(m):
        for p in range(count[k]):
            n = normal[k]
            ft = warm_f[k, p] - n * (warm_f[k, p] @ n)
            cap = friction[k] * warm_n[k, p]
            ft *= min(1.0, cap / np.linalg.norm(ft))
            np.testing.assert_allclose(fworld[k, p], ft, atol=1e-14)
        np.testing.assert_array_equal(fworld[k, count[k]:], 0.0)


# ----------------------------------------------------------------------------- soft contact

def soft_omega(settings, h):
    """Angular frequency the solver must use: contact_hertz capped at a quarter of 1/h."""
    return 2.0 * math.pi * min(settings.contact_hertz, 0.25 / h)


@pytest.mark.parametrize("penetration", [0.004, 0.5])
def test_soft_push_out_from_rest(penetration):
    """One biased pass on a body at rest with no carried impulse: new = -m*ms*(bias), bias =
    max(bias_rate * s, -max_push), so the body leaves at ms * min(bias_rate * depth,
    max_push), with (bias_rate, ms) the spring-damper closed form of soft_params."""
    h, m = 1.0 / 360.0, 2.0
    w = soft_omega(SETTINGS, h)
    zeta = SETTINGS.damping_ratio
    k, c = m * w * w, 2.0 * m * zeta * w
    bias_rate = k / (c + h * k)  # ERP / h
    ms = 1.0 / (1.0 / m + 1.0 / (h * (c + h * k))) / m  # soft mass / m (CFM gamma)
    speed = ms * min(bias_rate * penetration, SETTINGS.max_push)
    s, vel = ground_scene([(0.0, 0.0, -0.5)], np.zeros(6), mass=m, sep=-penetration, h=h)
    s.solve(vel, np.zeros((2, 6)), True)
    np.testing.assert_allclose(vel[1], [0, 0, speed, 0, 0, 0], rtol=1e-13, atol=1e-16)
    assert s.impulses()[0][0, 0] == pytest.approx(m * speed, rel=1e-13)
    if penetration > 0.1:
        assert bias_rate * penetration > SETTINGS.max_push  # really the capped case



@pytest.mark.parametrize("hertz,h", [(90.0, 1.0 / 360.0), (30.0, 1.0 / 240.0), (90.0, 1.0 / 120.0)])
def test_soft_contact_steady_state_is_a_fixed_point(hertz, h):
    """At rest under gravity the soft contact carries lambda = m g h per substep at depth
    s = -g / w^2, i.e. lambda = m_eff h w^2 (-s) (the module docstring). From that state a
    substep (gravity, warm start, biased pass, relax) changes nothing. At h = 1/120 the
    90 Hz stiffness is capped at 30 Hz."""
    settings = SETTINGS.replace(contact_hertz=hertz)
    m = 2.0
    w = soft_omega(settings, h)
    depth = G / (w * w)
    lam = m * h * w * w * depth
    assert lam == pytest.approx(m * G * h, rel=1e-14)
    s, vel = ground_scene([(0.0, 0.0, -0.5)], np.zeros(6), mass=m, sep=-depth, h=h,
                          warm_n=[lam, 0, 0, 0], settings=settings)
    dpose = np.zeros((2, 6))
    for _ in range(5):
        vel[1, 2] -= G * h
        s.warm_start(vel)
        s.solve(vel, dpose, True)
        dpose[1] += h * vel[1]
        s.solve(vel, dpose, False)
        np.testing.assert_allclose(vel[1], 0.0, atol=1e-15)
        assert s.impulses()[0][0, 0] == pytest.approx(lam, rel=1e-12)


@pytest.mark.parametrize("hertz,h", [(30.0, 1.0 / 360.0), (30.0, 1.0 / 240.0),
                                     (90.0, 1.0 / 240.0)])
def test_soft_contact_settles_at_the_closed_form_sag(hertz, h):
    """From touching at rest, the world's substep loop settles at depth g / w^2 (the same at
    any substep rate while the stiffness is not capped: 30 Hz at 360 and 240 Hz) and the
    contact then carries m g h per substep."""
    settings = SETTINGS.replace(contact_hertz=hertz)
    m = 2.0
    w = soft_omega(settings, h)
    s, vel = ground_scene([(0.0, 0.0, -0.5)], np.zeros(6), mass=m, sep=0.0, h=h,
                          settings=settings)
    dpose = np.zeros((2, 6))
    for _ in range(round(3.0 / h)):
        vel[1, 2] -= G * h
        s.warm_start(vel)
        s.solve(vel, dpose, True)
        dpose[1] += h * vel[1]
        for _ in range(settings.relax_iterations):
            s.solve(vel, dpose, False)
    sep = dpose[1, 2]  # separation 0 at the start, the point is below the centre of mass
    assert sep == pytest.approx(-G / (w * w), rel=1e-6)
    assert s.impulses()[0][0, 0] == pytest.approx(m * h * w * w * (-sep), rel=1e-6)


def test_speculative_point_closes_exactly_the_gap():
    """A point still apart by s > 0 lets the body close s in this substep and no more:
    approaching faster than s / h it leaves the biased pass at exactly -s / h; slower, it
    is not touched."""
    h, gap, m = 1.0 / 360.0, 0.01, 2.0
    for v in (5.0, 2.0):
        s, vel = ground_scene([(0.0, 0.0, -0.5)], [0, 0, -v, 0, 0, 0], mass=m, sep=gap, h=h)
        s.solve(vel, np.zeros((2, 6)), True)
        closing = min(v, gap / h)
        np.testing.assert_allclose(vel[1], [0, 0, -closing, 0, 0, 0], rtol=1e-14, atol=0)
        assert s.impulses()[0][0, 0] == pytest.approx(m * (v - closing), rel=1e-13, abs=0)


# ----------------------------------------------------------------------------- relax

def test_relax_removes_the_bias_velocity():
    """Relax (no bias) on a touching point moving apart at u with carried impulse lambda:
    new = max(lambda - m u, 0). lambda >= m u stops the body; lambda < m u clamps at 0 and
    leaves u - lambda / m."""
    m, u = 2.0, 0.2
    for lam in (1.0, 0.1):
        s, vel = ground_scene([(0.0, 0.0, -0.5)], [0, 0, u, 0, 0, 0], mass=m, sep=-0.01,
                              warm_n=[lam, 0, 0, 0])
        s.solve(vel, np.zeros((2, 6)), False)
        new = max(lam - m * u, 0.0)
        assert s.impulses()[0][0, 0] == pytest.approx(new, rel=1e-14, abs=1e-16)
        np.testing.assert_allclose(vel[1], [0, 0, u - (lam - new) / m, 0, 0, 0], atol=1e-15)


def test_relax_leaves_speculative_points_alone():
    """A box edge with one point touching and one still apart (s > 0 after the substep's
    motion): relax keeps the apart point's impulse as it is (even while it approaches) and
    solves the touching point alone: its normal velocity goes to zero, as a solver with that
    point only gives."""
    m, inertia = 2.0, (0.3, 0.4, 0.5)
    r_apart, r_touch = np.array([-0.5, 0.0, -0.5]), np.array([0.5, 0.0, -0.5])
    vel_b = [0.1, 0.0, -0.6, 0.0, 0.7, 0.0]
    dpose = np.zeros((2, 6))
    # The body moved down 2 mm this substep: the point 5 mm apart at the start of the step is
    # 3 mm apart now, the touching one 3 mm deep.
    dpose[1, 2] = -0.002
    s, vel = ground_scene([r_apart, r_touch], vel_b, mass=m, inertia=inertia,
                          sep=[0.005, -0.001], warm_n=[0.3, 0.4, 0, 0])
    ref, vref = ground_scene([r_touch], vel_b, mass=m, inertia=inertia, sep=-0.001,
                             warm_n=[0.4, 0, 0, 0])
    assert point_velocity(vel, r_apart)[2] < 0.0  # the apart point approaches
    s.solve(vel, dpose, False)
    ref.solve(vref, dpose, False)
    normal = s.impulses()[0][0]
    assert normal[0] == 0.3  # untouched, bit for bit
    assert point_velocity(vel, r_touch)[2] == pytest.approx(0.0, abs=1e-15)
    assert normal[1] == pytest.approx(ref.impulses()[0][0, 0], rel=1e-14)
    np.testing.assert_allclose(vel, vref, atol=1e-15)


# ----------------------------------------------------------------------------- restitution

def drop_step(local_points, v0, gap, e, nsub=4, h=1.0 / 240.0, m=1.5,
              inertia=(0.15, 0.15, 0.15)):
    """One world step (nsub substeps) of body 1 falling onto the ground under gravity, as
    World._solve runs it. Returns (vel before the restitution pass, vel after)."""
    s, vel = ground_scene(local_points, [0, 0, v0, 0, 0, 0], mass=m, inertia=inertia,
                          sep=gap, restitution=e, h=h, accel_n=-G)
    dpose = np.zeros((2, 6))
    for _ in range(nsub):
        vel[1, 2] -= G * h
        s.warm_start(vel)
        s.solve(vel, dpose, True)
        dpose[1] += h * vel[1]
        for _ in range(SETTINGS.relax_iterations):
            s.solve(vel, dpose, False)
    before = vel.copy()
    s.restitution(vel, SETTINGS.restitution_threshold)
    return before, vel


def impact_speed(v0, gap, a, h):
    """Normal velocity at impact of semi-implicit Euler free flight, found independently of
    the solver's formula: the sampled positions x_k lie on the parabola
    p(t) = gap + c t + a t^2 / 2 with c = v0 + a h / 2 (checked here against the sampled
    positions), which reaches 0 at its first positive root t*; the velocity there is c + a t*."""
    c = v0 + 0.5 * a * h
    x, v = gap, v0
    for k in range(1, 20):
        v += a * h
        x += h * v
        t = k * h
        assert x == pytest.approx(gap + c * t + 0.5 * a * t * t, abs=1e-15)
    if gap <= 0.0:
        return min(c, v0)  # touching already: the approach speed itself (no flight left)
    roots = np.roots([0.5 * a, c, gap])
    t_hit = min(r.real for r in roots if abs(r.imag) == 0.0 and r.real > 0.0)
    return c + a * t_hit


@pytest.mark.parametrize("e", [0.5, 1.0])
@pytest.mark.parametrize("v0,gap", [(-3.0, 0.02), (-6.0, 0.06), (-2.5, -0.001)])
def test_ball_rebounds_at_e_times_the_impact_speed(e, v0, gap):
    """The restitution pass sets the normal velocity to -e v_impact - a h / 2, so the next
    free flight (on the parabola whose velocity is v + a h / 2) leaves at -e v_impact."""
    h = 1.0 / 240.0
    before, vel = drop_step([(0.0, 0.0, -0.5)], v0, gap, e, h=h)
    assert abs(before[1, 2]) < 2.0 * G * h  # the contact had stopped the ball
    v_imp = impact_speed(v0, gap, -G, h)
    assert v_imp < -SETTINGS.restitution_threshold
    np.testing.assert_allclose(vel[1], [0, 0, -e * v_imp + 0.5 * G * h, 0, 0, 0],
                               rtol=1e-13, atol=1e-14)


def test_no_bounce_at_zero_restitution_below_threshold_or_without_contact():
    # e = 0: the ball stays stopped; the restitution pass does nothing at all.
    before, vel = drop_step([(0.0, 0.0, -0.5)], -3.0, 0.02, 0.0)
    np.testing.assert_array_equal(vel, before)
    assert abs(vel[1, 2]) < 2.0 * G / 240.0
    # Impact slower than the threshold (1 m/s): no bounce even at e = 1.
    assert impact_speed(-0.5, 0.001, -G, 1.0 / 240.0) > -SETTINGS.restitution_threshold
    before, vel = drop_step([(0.0, 0.0, -0.5)], -0.5, 0.001, 1.0)
    np.testing.assert_array_equal(vel, before)
    # A speculative point the ball does not reach within the step carried no impulse: it
    # must not bounce, however fast the ballistic impact speed would be.
    before, vel = drop_step([(0.0, 0.0, -0.5)], -3.0, 0.5, 1.0)
    np.testing.assert_array_equal(vel, before)
    assert vel[1, 2] < -3.0


def test_box_landing_flat_rebounds_without_rotation():
    """Block restitution over the four corners: the box leaves straight up at
    -e v_impact - a h / 2, with no spin (a sequential sweep would over-rotate it)."""
    a_half, e, v0, gap, h = 0.5, 0.5, -4.0, 0.03, 1.0 / 240.0
    corners = [(sx * a_half, sy * a_half, -a_half) for sx in (-1, 1) for sy in (-1, 1)]
    before, vel = drop_step(corners, v0, gap, e, h=h, m=3.0,
                            inertia=(0.5, 0.5, 0.5))
    v_imp = impact_speed(v0, gap, -G, h)
    np.testing.assert_allclose(vel[1], [0, 0, -e * v_imp + 0.5 * G * h, 0, 0, 0],
                               rtol=1e-13, atol=1e-13)


# ----------------------------------------------------------------------------- sweep routes

def random_bodies(rng, n_bodies, n_fixed):
    """Inverse masses and rotated anisotropic inverse inertias; the first n_fixed bodies are
    fixed (zero inverses: static, kinematic or asleep)."""
    inv_mass = rng.uniform(0.2, 5.0, n_bodies)
    inv_mass[:n_fixed] = 0.0
    rot = np.linalg.qr(rng.normal(size=(n_bodies, 3, 3)))[0]
    inv_moments = 1.0 / rng.uniform(0.05, 2.0, size=(n_bodies, 3))
    inv_inertia = rot @ (inv_moments[:, :, None] * np.eye(3)) @ np.swapaxes(rot, 1, 2)
    inv_inertia[:n_fixed] = 0.0
    return inv_mass, inv_inertia


def random_pairs(rng, x_com, m, n_fixed):
    """m random body pairs (never two of the first n_fixed, the fixed bodies), unit normals
    and four points each near the pair's midpoint."""
    n_bodies = len(x_com)
    ia = rng.integers(0, n_bodies, m)
    ib = (ia + rng.integers(1, n_bodies, m)) % n_bodies
    both_fixed = (ia < n_fixed) & (ib < n_fixed)
    ib[both_fixed] = rng.integers(n_fixed, n_bodies, both_fixed.sum())
    normal = rng.normal(size=(m, 3))
    normal /= np.linalg.norm(normal, axis=1, keepdims=True)
    points = 0.5 * (x_com[ia] + x_com[ib])[:, None, :] + rng.normal(size=(m, 4, 3)) * 0.3
    return ia, ib, normal, points


def scene_dict(rng, ia, ib, normal, points, sep, count, friction, x_com, inv_mass,
               inv_inertia, vel, warm_n, warm_f):
    """The constructor's keyword arguments, with unused slots at +inf separation (as the
    narrowphase leaves them), random restitution and the normal gravity acceleration."""
    sep = np.where(np.arange(4) < count[:, None], sep, np.inf)
    g_on = (inv_mass > 0.0)[:, None] * GRAVITY
    accel_n = np.einsum("mi,mi->m", g_on[ib] - g_on[ia], normal)
    return dict(ia=ia, ib=ib, normal=normal, points=points, sep=sep, count=count,
                friction=friction, restitution=rng.uniform(0.0, 1.0, len(ia)), x_com=x_com,
                inv_mass=inv_mass, inv_inertia=inv_inertia, vel=vel, accel_n=accel_n,
                warm_n=warm_n, warm_f=warm_f)


def random_scene(rng, n_bodies=14, m=60):
    """Random manifolds between random bodies, built to clamp: random normals and contact
    points (so impulses at one point pull others apart), fast random velocities, separations
    from -5 cm to +2 cm (speculative points), random warm starts (friction partly outside
    the cone and with normal components), friction 0 on some manifolds. Body 0 is static,
    body 1 kinematic (moving, zero inverse mass), body 2 asleep (zero inverse mass, at rest);
    the rest are dynamic. 1-4 points per manifold."""
    inv_mass, inv_inertia = random_bodies(rng, n_bodies, 3)
    x_com = rng.uniform(-2.0, 2.0, size=(n_bodies, 3))
    vel = rng.normal(size=(n_bodies, 6)) * 3.0
    vel[0] = vel[2] = 0.0
    ia, ib, normal, points = random_pairs(rng, x_com, m, 3)
    friction = rng.uniform(0.0, 1.2, m)
    friction[rng.random(m) < 0.1] = 0.0
    warm_n = rng.uniform(0.0, 2.0, size=(m, 4)) * (rng.random((m, 4)) < 0.7)
    return scene_dict(rng, ia, ib, normal, points, rng.uniform(-0.05, 0.02, size=(m, 4)),
                      rng.integers(1, 5, m), friction, x_com, inv_mass, inv_inertia, vel,
                      warm_n, rng.normal(size=(m, 4, 3)) * 2.0)


def stacked_scene(rng, columns=6, height=5, h=1.0 / 240.0):
    """Columns of boxes resting on the ground (body 0) and on each other: normals near +z,
    3-4 points per interface under each box, slight penetration, small velocities, warm
    starts near the weight each interface carries. Sweeps mostly stay unclamped, so the
    one-product route is taken (the common case it exists for)."""
    n_bodies = 1 + columns * height
    inv_mass, inv_inertia = random_bodies(rng, n_bodies, 1)
    col, lev = np.divmod(np.arange(n_bodies - 1), height)
    x_com = np.zeros((n_bodies, 3))
    x_com[1:, 0] = 2.0 * col
    x_com[1:, 2] = 0.5 + lev
    x_com[1:] += rng.normal(size=(n_bodies - 1, 3)) * 0.01
    vel = rng.normal(size=(n_bodies, 6)) * 1e-3
    vel[0] = 0.0
    ib = np.arange(1, n_bodies)
    ia = np.where(lev == 0, 0, ib - 1)
    m = len(ia)
    normal = np.array([0.0, 0.0, 1.0]) + rng.normal(size=(m, 3)) * 1e-3
    normal /= np.linalg.norm(normal, axis=1, keepdims=True)
    corner = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]]) * 0.45
    points = np.zeros((m, 4, 3))
    points[:, :, :2] = x_com[ib, None, :2] + corner + rng.normal(size=(m, 4, 2)) * 0.02
    points[:, :, 2] = (x_com[ib, 2] - 0.5)[:, None]
    load = np.array([(1.0 / inv_mass[ib[(col == c) & (lev >= l)]]).sum()
                     for c, l in zip(col, lev)])  # mass each interface carries
    warm_n = (load * G * h / 4.0)[:, None] * rng.uniform(0.97, 1.03, size=(m, 4))
    return scene_dict(rng, ia, ib, normal, points, rng.uniform(-0.002, -0.001, size=(m, 4)),
                      rng.integers(3, 5, m), rng.uniform(0.5, 1.2, m), x_com, inv_mass,
                      inv_inertia, vel, warm_n, rng.normal(size=(m, 4, 3)) * 1e-3)


def assert_close(a, b, what, rtol=1e-12):
    scale = max(np.abs(b).max(), 1.0)
    err = np.abs(a - b).max()
    assert err <= rtol * scale, f"{what}: max difference {err:.3g} (scale {scale:.3g})"


# ----------------------------------------------------------------------------- converged sweeps

@pytest.mark.parametrize("seed", [1, 2])
def test_repeated_relax_sweeps_converge_to_signorini_coulomb(seed):
    """Relax sweeps (rigid, no bias) repeated until nothing changes must satisfy the contact
    conditions, checked on point velocities computed here from the bodies' motion
    (v_b + w_b x r_b - v_a - w_a x r_a): no point approaches (u_n >= 0), impulse only where
    the point is at rest along the normal (lambda u_n = 0), friction inside the cone
    mu lambda, sticking points at rest tangentially, sliding points with friction on the cone
    and opposing their slip (f . u_t < 0). Stacks of boxes thrown about at random."""
    rng = np.random.default_rng(seed)
    scene = stacked_scene(rng, columns=3, height=3)
    n = len(scene["vel"])
    scene["vel"][1:, :3] += rng.normal(size=(n - 1, 3)) * [0.5, 0.5, 1.0]
    scene["vel"][1:, 3:] += rng.normal(size=(n - 1, 3)) * 0.5
    scene["warm_n"] = np.zeros_like(scene["warm_n"])
    vel = scene["vel"].copy()
    s = build(**dict(scene, vel=vel), h=1.0 / 240.0)
    dpose = np.zeros((n, 6))
    for _ in range(400):
        s.solve(vel, dpose, False)
    last = vel.copy()
    s.solve(vel, dpose, False)
    assert np.abs(vel - last).max() < 1e-13  # converged: a further sweep changes nothing

    ia, ib, nrm, pts, x = (scene[k] for k in ("ia", "ib", "normal", "points", "x_com"))
    used = np.arange(4) < scene["count"][:, None]

    def pv(body):
        # Velocities (M, 4, 3) of the material points of bodies `body` at the contact points.
        return vel[body, None, :3] + np.cross(vel[body, None, 3:], pts - x[body][:, None, :])

    rel = pv(ib) - pv(ia)
    un = np.einsum("mpi,mi->mp", rel, nrm)
    ut = rel - un[..., None] * nrm[:, None, :]
    lam, fworld = s.impulses()[:2]
    cone = scene["friction"][:, None] * lam
    fmag = np.linalg.norm(fworld, axis=2)
    tol = 1e-9
    assert (lam[used] >= 0.0).all()
    assert (un[used] >= -tol).all()
    assert (np.abs(lam * un)[used] <= tol).all()
    assert (fmag[used] <= cone[used] + tol).all()
    np.testing.assert_allclose(np.einsum("mpi,mi->mp", fworld, nrm), 0.0, atol=1e-15)
    slip = np.linalg.norm(ut, axis=2)
    stick = used & (fmag < cone - tol)
    slide = used & (slip > 1e-6) & (lam > tol)  # slipping while pressed
    assert (slip[stick] <= tol).all()
    assert (np.abs(fmag - cone)[slide] <= tol).all()
    assert (np.einsum("mpi,mpi->mp", fworld, ut)[slide] < 0.0).all()
    # All three regimes occur: separating points, sticking and sliding contacts.
    assert (used & (lam == 0.0)).any() and stick.any() and slide.any()


def test_a_closing_speculative_contact_stops_at_the_surface():
    """A box 1 cm above static ground falling at 10 m/s closes its gap within a 1/240 s
    substep (s / h = 2.4 m/s): the biased sweep stops it at the surface (normal velocity
    -s/h, the speed that just closes the gap), with equal impulses on its four corners."""
    corners = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]]) * 0.5
    local = np.concatenate((corners, np.full((4, 1), -0.5)), axis=1)
    h = 1.0 / 240.0
    s, vel = ground_scene(local, [0.0, 0.0, -10.0, 0.0, 0.0, 0.0], sep=0.01, h=h)
    s.solve(vel, np.zeros((2, 6)), True)
    assert s.impulses()[0].min() > 0.0
    assert vel[1, 2] == pytest.approx(-0.01 / h, rel=1e-9)
    np.testing.assert_allclose(vel[1, 3:], 0.0, atol=1e-12)
