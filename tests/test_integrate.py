"""engine/dynamics/integrate.py against closed forms of the discrete schemes and of rigid-body motion.

Semi-implicit Euler under constant gravity g with substep h: v_k = v0 + k g h and
x_k = x0 + h sum_{j=1..k} v_j = x0 + v0 t + g t^2 / 2 + g h t / 2 (t = k h), exactly.
The gyroscopic step is the implicit midpoint rule, which keeps |L| and the kinetic energy of a
free body; for an axisymmetric body its body-frame rotation of (w1, w2) is the midpoint
(Cayley) map of z' = i Omega z: an angle of exactly 2 atan(Omega h / 2) per step, which tends
to the torque-free closed form Omega t with Omega = (I3 - I1) / I1 * w3.
"""
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from engine.core import quat
from engine.core.vec import cross
from engine.dynamics.integrate import (
    damping_factors,
    gyroscopic,
    integrate_positions,
    integrate_velocities,
    skew,
)

GRAVITY = np.array([0.0, 0.0, -9.81])


@pytest.fixture
def rng():
    return np.random.default_rng(2024)


def random_quats(rng, n):
    q = rng.normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def same_rotation(a, b, atol):
    err = np.minimum(np.abs(a - b).max(axis=-1), np.abs(a + b).max(axis=-1))
    assert err.max() <= atol, f"largest quaternion mismatch {err.max():.3g}"


# ------------------------------------------------------------------------------ small algebra

def test_skew_is_the_cross_product_matrix(rng):
    a, b = rng.normal(size=(50, 3)), rng.normal(size=(50, 3))
    s = skew(a)
    np.testing.assert_allclose(np.einsum("nij,nj->ni", s, b), np.cross(a, b), atol=1e-15)
    np.testing.assert_array_equal(s, -np.swapaxes(s, 1, 2))


def test_cross_equals_numpy_cross_bit_for_bit(rng):
    a, b = rng.normal(size=(7, 5, 3)), rng.normal(size=(7, 5, 3))
    np.testing.assert_array_equal(cross(a, b), np.cross(a, b))
    np.testing.assert_array_equal(cross(a[0, 0], b), np.cross(a[0, 0], b))  # broadcasting


# ------------------------------------------------------------------------------ linear motion

def test_free_fall_matches_the_discrete_closed_form(rng):
    n, h, steps = 6, 1.0 / 360.0, 720
    x0 = rng.normal(size=(n, 3))
    v0 = rng.normal(size=(n, 6))
    x, q, vel = x0.copy(), random_quats(rng, n), v0.copy()
    active = np.array([0, 2, 3, 5])
    idle = np.array([1, 4])
    ones = np.ones(len(active))
    for _ in range(steps):
        integrate_velocities(vel, active, GRAVITY, ones, ones, h)
        integrate_positions(x, q, vel, active, h)
    t = steps * h
    a = active
    np.testing.assert_allclose(vel[a, :3], v0[a, :3] + GRAVITY * t, rtol=0, atol=1e-12)
    np.testing.assert_allclose(vel[a, 3:], v0[a, 3:], rtol=0, atol=0)
    expect = x0[a] + v0[a, :3] * t + 0.5 * GRAVITY * t * t + 0.5 * GRAVITY * h * t
    np.testing.assert_allclose(x[a], expect, rtol=0, atol=1e-11)
    # Bodies not in the index are not touched at all.
    np.testing.assert_array_equal(vel[idle], v0[idle])
    np.testing.assert_array_equal(x[idle], x0[idle])


def test_damping_factor_compounds_to_the_per_second_factor():
    d = np.array([0.0, 0.04, 0.1, 0.5, 0.999, 1.0, 1.5, -0.2])
    h = 1.0 / 240.0
    f, f_ang = damping_factors(d, d[::-1].copy(), np.arange(len(d)), h)
    np.testing.assert_array_equal(f_ang, f[::-1])
    np.testing.assert_allclose(f, np.clip(1.0 - d, 0.0, 1.0) ** h, rtol=1e-15)
    np.testing.assert_allclose(f ** 240, np.clip(1.0 - d, 0.0, 1.0), rtol=1e-12, atol=0)
    assert f[0] == 1.0 and f[-1] == 1.0  # no damping (negative damping is clipped to none)
    assert f[5] == 0.0 and f[6] == 0.0   # d >= 1 stops the body


def test_damped_velocities_follow_the_geometric_series(rng):
    """v_k = f (v_{k-1} + g h): v_n = f^n v0 + g h sum_{k=1..n} f^k (gravity first, then
    damping), and without gravity v(t) = (1 - d)^t v0 whatever the substep."""
    n = 5
    v0 = rng.normal(size=(n, 6))
    d_lin, d_ang = rng.uniform(0.0, 0.9, n), rng.uniform(0.0, 0.9, n)
    active = np.arange(n)
    for h, steps in ((1.0 / 60.0, 60), (1.0 / 240.0, 240)):
        f_lin, f_ang = damping_factors(d_lin, d_ang, active, h)
        vel = v0.copy()
        for _ in range(steps):
            integrate_velocities(vel, active, np.zeros(3), f_lin, f_ang, h)
        np.testing.assert_allclose(vel[:, :3], v0[:, :3] * (1.0 - d_lin[:, None]), rtol=1e-12)
        np.testing.assert_allclose(vel[:, 3:], v0[:, 3:] * (1.0 - d_ang[:, None]), rtol=1e-12)
        vel = v0.copy()
        for _ in range(steps):
            integrate_velocities(vel, active, GRAVITY, f_lin, f_ang, h)
        fk = f_lin[:, None] ** np.arange(1, steps + 1)[None, :]  # (n, steps)
        expect = fk[:, -1:] * v0[:, :3] + (h * fk.sum(axis=1))[:, None] * GRAVITY
        np.testing.assert_allclose(vel[:, :3], expect, rtol=1e-12, atol=1e-13)


# ------------------------------------------------------------------------------ orientation

def test_integrate_positions_turns_as_quat_integrate(rng):
    """The compiled pose update against quat.integrate (exp map, product, renormalisation in
    numpy) and x + h v, to round-off; tiny and zero rates take the sinc series."""
    n = 300
    q = random_quats(rng, n)
    omega = rng.normal(size=(n, 3)) * rng.uniform(0.0, 60.0, size=(n, 1))
    omega[:20] *= 1e-13  # tiny rates: the sinc series branch
    omega[20:25] = 0.0
    v = rng.normal(size=(n, 3))
    for h in (1.0 / 360.0, 1.0 / 24.0, 0.3):
        x, q1 = np.ones((n, 3)), q.copy()
        integrate_positions(x, q1, np.concatenate((v, omega), axis=1), np.arange(n), h)
        np.testing.assert_allclose(q1, quat.integrate(q, omega, h), rtol=0, atol=4e-16)
        np.testing.assert_allclose(x, 1.0 + h * v, rtol=0, atol=1e-15)


def test_constant_spin_turns_by_rate_times_time_about_its_axis(rng):
    n, h, steps = 8, 1.0 / 360.0, 1080
    q0 = random_quats(rng, n)
    omega = rng.normal(size=(n, 3)) * 5.0
    x = np.zeros((n, 3))
    q = q0.copy()
    vel = np.concatenate((np.zeros((n, 3)), omega), axis=1)
    for _ in range(steps):
        integrate_positions(x, q, vel, np.arange(n), h)
    t = steps * h
    rotvec = omega * t
    expect = quat.multiply(quat.from_axis_angle(omega, np.linalg.norm(omega, axis=1) * t), q0)
    same_rotation(q, expect, atol=1e-12)
    # Independent check: relative rotation q q0^-1 is exp(omega t) (scipy's rotation vector;
    # mod 2 pi, so compare the matrices).
    rel = quat.to_matrix(quat.multiply(q, quat.conjugate(q0)))
    np.testing.assert_allclose(rel, Rotation.from_rotvec(rotvec).as_matrix(), atol=1e-12)


# ------------------------------------------------------------------------------ gyroscopic

def body_invariants(q, w_world, inertia_body):
    """|L| and 2 E of world angular velocities w (body frame: R^T w)."""
    wb = np.einsum("kji,kj->ki", quat.to_matrix(q), w_world)
    lb = np.einsum("kij,kj->ki", inertia_body, wb)
    return np.linalg.norm(lb, axis=1), np.einsum("ki,ki->k", wb, lb)


def run_free_body(q, w, inertia_body, h, steps, record=None):
    """The world's substep for lone free bodies: velocities (gyroscopic) then poses."""
    n = len(q)
    vel = np.concatenate((np.zeros((n, 3)), w), axis=1)
    x = np.zeros((n, 3))
    q = q.copy()
    idx = np.arange(n)
    ones = np.ones(n)
    for _ in range(steps):
        integrate_velocities(vel, idx, np.zeros(3), ones, ones, h, gyro_index=idx, q=q,
                             inertia_body=inertia_body)
        integrate_positions(x, q, vel, idx, h)
        if record is not None:
            record(q, vel[:, 3:])
    return q, vel[:, 3:]


def test_gyroscopic_conserves_momentum_and_energy_of_a_tumbling_box(rng):
    """Three distinct moments, spun near the intermediate axis (the Dzhanibekov flip):
    |L| and E are the midpoint rule's invariants, kept to round-off every substep."""
    n = 4
    moments = np.array([[1.0, 2.0, 3.0], [0.2, 1.1, 1.5], [4.0, 0.5, 2.5], [1.0, 3.0, 2.0]])
    inertia = moments[:, :, None] * np.eye(3)
    rot_body = random_quats(rng, n)
    # Mostly about the intermediate axis, a little about the others.
    mid = np.argsort(moments, axis=1)[:, 1]
    wb = rng.normal(size=(n, 3)) * 0.05
    wb[np.arange(n), mid] = 8.0
    w = np.einsum("kij,kj->ki", quat.to_matrix(rot_body), wb)
    l0, e0 = body_invariants(rot_body, w, inertia)
    worst = [0.0, 0.0]
    prev = [l0, e0]

    def record(q, w_now):
        ln, en = body_invariants(q, w_now, inertia)
        worst[0] = max(worst[0], np.max(np.abs(ln / prev[0] - 1.0)))
        worst[1] = max(worst[1], np.max(np.abs(en / prev[1] - 1.0)))
        prev[0], prev[1] = ln, en

    h, steps = 1.0 / 240.0, 1200
    q, w_end = run_free_body(rot_body, w, inertia, h, steps, record)
    assert worst[0] < 1e-12 and worst[1] < 1e-12, worst
    ln, en = body_invariants(q, w_end, inertia)
    np.testing.assert_allclose(ln, l0, rtol=1e-10)
    np.testing.assert_allclose(en, e0, rtol=1e-10)


def test_dzhanibekov_flip_happens():
    """Spin about the intermediate axis of a box is unstable: the component flips sign."""
    inertia = np.diag([1.0, 2.0, 3.0])[None]
    q = np.array([[1.0, 0.0, 0.0, 0.0]])
    w = np.array([[0.01, 6.0, 0.01]])
    signs = []
    run_free_body(q, w, inertia, 1.0 / 240.0, 1200,
                  lambda qq, ww: signs.append(np.sign(np.einsum(
                      "ji,j->i", quat.to_matrix(qq[0]), ww[0])[1])))
    assert signs[0] > 0 and min(signs) < 0


@pytest.mark.parametrize("i1,i3", [(2.0, 1.0), (1.0, 1.8)])
def test_axisymmetric_body_precesses_at_the_closed_form_rate(i1, i3):
    """Torque-free symmetric top: in the body frame w3 is constant and (w1, w2) turns at
    Omega = (I3 - I1) / I1 * w3. The midpoint map turns it by 2 atan(Omega h / 2) per step
    exactly; that differs from Omega h by O((Omega h)^3)."""
    inertia = np.diag([i1, i1, i3])[None]
    w3, wp = 7.0, 1.5
    wb0 = np.array([wp, 0.0, w3])
    q0 = quat.from_axis_angle([[0.3, -0.2, 0.9]], [0.7])
    w0 = quat.rotate(q0, wb0)
    omega = (i3 - i1) / i1 * w3
    h, steps = 1.0 / 240.0, 480
    angles = []

    def record(q, w_now):
        wb = quat.rotate_inverse(q[0], w_now[0])
        angles.append(np.arctan2(wb[1], wb[0]))
        np.testing.assert_allclose(wb[2], w3, rtol=1e-13)
        np.testing.assert_allclose(np.hypot(wb[0], wb[1]), wp, rtol=1e-12)

    run_free_body(q0, w0, inertia, h, steps, record)
    phase = np.unwrap(angles)
    k = np.arange(1, steps + 1)
    discrete = k * 2.0 * np.arctan(0.5 * omega * h)
    np.testing.assert_allclose(phase, discrete, rtol=0, atol=1e-10)
    t = k * h
    # Continuous closed form, within the scheme's phase error (Omega h)^3 / 12 per step.
    bound = steps * abs(omega * h) ** 3 / 12.0 * 1.01 + 1e-12
    assert np.max(np.abs(phase - omega * t)) <= bound
    assert bound < 1e-3  # the comparison is meaningful (not a loose bound)


def test_isotropic_inertia_has_no_gyroscopic_change(rng):
    inertia = np.broadcast_to(2.5 * np.eye(3), (10, 3, 3))
    q = random_quats(rng, 10)
    w = rng.normal(size=(10, 3)) * 10.0
    np.testing.assert_allclose(gyroscopic(q, w, inertia, 1.0 / 60.0), w, rtol=0, atol=1e-13)
