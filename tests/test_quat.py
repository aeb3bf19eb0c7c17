"""engine/core/quat.py against closed forms and scipy's Rotation (test-only oracle).

scipy stores quaternions scalar-last (x, y, z, w); the engine stores them (w, x, y, z).
A quaternion and its negative are the same rotation, so quaternions from two routes are compared
up to sign (``same_rotation``) unless the engine promises a sign (from_matrix: w >= 0).
"""
import numpy as np
import pytest
from scipy.spatial.transform import Rotation, Slerp

from engine.core import quat

RNG_SEED = 1234


def random_quats(rng, n):
    q = rng.normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def to_scipy(q):
    """Engine (w, x, y, z) -> scipy Rotation (scalar-last)."""
    return Rotation.from_quat(np.asarray(q)[..., [1, 2, 3, 0]])


def from_scipy(r):
    """scipy Rotation -> engine (w, x, y, z)."""
    return r.as_quat()[..., [3, 0, 1, 2]]


def same_rotation(a, b, atol=1e-12):
    """a == b or a == -b, row by row."""
    a = np.asarray(a).reshape(-1, 4)
    b = np.asarray(b).reshape(-1, 4)
    err = np.minimum(np.abs(a - b).max(axis=1), np.abs(a + b).max(axis=1))
    assert err.max() <= atol, f"largest quaternion mismatch {err.max():.3g}"


def rotation_angle(q):
    """Angle (0..pi) of the rotation of unit quaternions q."""
    q = np.asarray(q)
    return 2.0 * np.arctan2(np.linalg.norm(q[..., 1:], axis=-1), np.abs(q[..., 0]))


@pytest.fixture
def rng():
    return np.random.default_rng(RNG_SEED)


# ------------------------------------------------------------------------------ matrices

def test_to_matrix_matches_scipy(rng):
    q = random_quats(rng, 200)
    np.testing.assert_allclose(quat.to_matrix(q), to_scipy(q).as_matrix(), rtol=0, atol=1e-14)


def test_to_matrix_is_a_rotation_and_broadcasts(rng):
    q = random_quats(rng, 24).reshape(2, 3, 4, 4)
    m = quat.to_matrix(q)
    assert m.shape == (2, 3, 4, 3, 3)
    eye = np.broadcast_to(np.eye(3), m.shape)
    np.testing.assert_allclose(m @ np.swapaxes(m, -1, -2), eye, atol=1e-14)
    np.testing.assert_allclose(np.linalg.det(m), 1.0, atol=1e-14)
    # One quaternion alone and its batch give the same matrix.
    np.testing.assert_array_equal(quat.to_matrix(q[1, 2, 3]), m[1, 2, 3])


def test_identity_quaternion_is_identity_matrix():
    np.testing.assert_array_equal(quat.to_matrix([1.0, 0.0, 0.0, 0.0]), np.eye(3))


@pytest.mark.parametrize("scale", [1e-3, 0.5, 2.0, 1e3, -3.0])
def test_to_matrix_normalized_is_scale_invariant(rng, scale):
    q = random_quats(rng, 50)
    np.testing.assert_allclose(quat.to_matrix_normalized(scale * q), quat.to_matrix(q),
                               rtol=0, atol=1e-14)


def test_from_matrix_round_trip_with_non_negative_w(rng):
    q = random_quats(rng, 300)
    back = quat.from_matrix(quat.to_matrix(q))
    assert (back[:, 0] >= 0.0).all()
    np.testing.assert_allclose(np.linalg.norm(back, axis=1), 1.0, atol=1e-15)
    sign = np.where(q[:, :1] < 0, -1.0, 1.0)
    np.testing.assert_allclose(back, sign * q, atol=1e-14)
    # Against scipy's own conversion (up to sign: scipy does not promise w >= 0).
    same_rotation(back, from_scipy(Rotation.from_matrix(quat.to_matrix(q))), atol=1e-14)


def test_from_matrix_near_half_turns(rng):
    """Half turns (w = 0) and rotations within 1e-9 of them: the trace is about -1, so
    Shepperd's method must use an axis candidate. The matrix must come back exactly."""
    axes = np.concatenate((np.eye(3), -np.eye(3), rng.normal(size=(40, 3))))
    axes /= np.linalg.norm(axes, axis=1, keepdims=True)
    angles = np.pi - np.array([0.0, 1e-12, 1e-9, -1e-9, 1e-6])
    ax = np.repeat(axes, len(angles), axis=0)
    an = np.tile(angles, len(axes))
    m = Rotation.from_rotvec(ax * an[:, None]).as_matrix()
    q = quat.from_matrix(m)
    assert np.isfinite(q).all() and (q[:, 0] >= 0.0).all()
    np.testing.assert_allclose(np.linalg.norm(q, axis=1), 1.0, atol=1e-15)
    np.testing.assert_allclose(quat.to_matrix(q), m, atol=1e-14)
    # The rotation axis is recovered (up to the sign a half turn leaves free).
    half = np.abs(np.einsum("ni,ni->n", q[:, 1:], ax))
    np.testing.assert_allclose(half, np.abs(np.sin(0.5 * an)), atol=1e-12)


def test_from_matrix_keeps_batch_shape(rng):
    q = random_quats(rng, 6).reshape(2, 3, 4)
    assert quat.from_matrix(quat.to_matrix(q)).shape == (2, 3, 4)


# ------------------------------------------------------------------------------ algebra

def test_multiply_composes_like_matrices(rng):
    a, b = random_quats(rng, 100), random_quats(rng, 100)
    ab = quat.multiply(a, b)
    np.testing.assert_allclose(quat.to_matrix(ab), quat.to_matrix(a) @ quat.to_matrix(b),
                               atol=1e-14)
    # "apply b first, then a", as scipy's a * b.
    same_rotation(ab, from_scipy(to_scipy(a) * to_scipy(b)), atol=1e-14)
    np.testing.assert_allclose(np.linalg.norm(ab, axis=1), 1.0, atol=1e-15)


def test_multiply_is_associative_with_identity_and_conjugate_inverse(rng):
    a, b, c = random_quats(rng, 30), random_quats(rng, 30), random_quats(rng, 30)
    np.testing.assert_allclose(quat.multiply(quat.multiply(a, b), c),
                               quat.multiply(a, quat.multiply(b, c)), atol=1e-14)
    one = np.array([1.0, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(quat.multiply(one, a), a)
    np.testing.assert_array_equal(quat.multiply(a, one), a)
    np.testing.assert_allclose(quat.multiply(a, quat.conjugate(a)),
                               np.broadcast_to(one, a.shape), atol=1e-15)


def test_rotate_and_rotate_inverse(rng):
    q = random_quats(rng, 100)
    v = rng.normal(size=(100, 3))
    m = quat.to_matrix(q)
    np.testing.assert_allclose(quat.rotate(q, v), np.einsum("nij,nj->ni", m, v), atol=1e-14)
    np.testing.assert_allclose(quat.rotate_inverse(q, v), np.einsum("nji,nj->ni", m, v),
                               atol=1e-14)
    np.testing.assert_allclose(quat.rotate(q, v), to_scipy(q).apply(v), atol=1e-14)
    np.testing.assert_allclose(quat.rotate_inverse(q, quat.rotate(q, v)), v, atol=1e-14)
    # One quaternion rotating many vectors broadcasts.
    np.testing.assert_allclose(quat.rotate(q[0], v), v @ m[0].T, atol=1e-14)


def test_from_axis_angle_matches_rotvec(rng):
    axis = rng.normal(size=(100, 3)) * rng.uniform(0.1, 10.0, size=(100, 1))  # not unit
    angle = rng.uniform(-2 * np.pi, 2 * np.pi, size=100)
    q = quat.from_axis_angle(axis, angle)
    unit = axis / np.linalg.norm(axis, axis=1, keepdims=True)
    same_rotation(q, from_scipy(Rotation.from_rotvec(unit * angle[:, None])), atol=1e-14)
    # Exact form: (cos(a/2), sin(a/2) axis), the sign included.
    np.testing.assert_allclose(q[:, 0], np.cos(0.5 * angle), atol=1e-15)
    np.testing.assert_allclose(q[:, 1:], np.sin(0.5 * angle)[:, None] * unit, atol=1e-15)
    # A vector along the axis is fixed.
    np.testing.assert_allclose(quat.rotate(q, unit), unit, atol=1e-14)


# ------------------------------------------------------------------------------ exponential map

def test_exp_map_closed_form(rng):
    omega = rng.normal(size=(200, 3)) * rng.uniform(0.01, 50.0, size=(200, 1))
    dt = 1.0 / 60.0
    q = quat.exp_map(omega, dt)
    rate = np.linalg.norm(omega, axis=1)
    half = 0.5 * rate * dt
    np.testing.assert_allclose(q[:, 0], np.cos(half), atol=1e-15)
    np.testing.assert_allclose(q[:, 1:], (np.sin(half) / rate)[:, None] * omega, atol=1e-15)
    # The rotation vector is omega * dt (scipy's exponential map).
    same_rotation(q, from_scipy(Rotation.from_rotvec(omega * dt)), atol=1e-14)


def test_exp_map_tiny_rates_are_finite_and_continuous():
    """Below angle 1e-12 the sinc is its series; across the switch it must be continuous."""
    axis = np.array([0.36, -0.48, 0.8])
    dt = 0.01
    angles = np.array([0.0, 1e-300, 1e-200, 1e-30, 1e-16, 1e-13, 1e-12 * (1 - 1e-6), 1e-12,
                       1e-12 * (1 + 1e-6), 1e-11, 1e-8, 1e-4])
    omega = axis * (angles / dt)[:, None]
    q = quat.exp_map(omega, dt)
    assert np.isfinite(q).all()
    # Closed form sin(a/2) axis, evaluated in a form that is exact for tiny a.
    np.testing.assert_allclose(q[:, 1:], np.sin(0.5 * angles)[:, None] * axis,
                               rtol=1e-12, atol=0)
    np.testing.assert_allclose(q[:, 0], np.cos(0.5 * angles), rtol=0, atol=1e-16)
    np.testing.assert_array_equal(quat.exp_map(np.zeros(3), dt), [1.0, 0.0, 0.0, 0.0])


def test_integrate_turns_a_constant_spin_by_rate_times_time(rng):
    q0 = random_quats(rng, 20)
    omega = rng.normal(size=(20, 3)) * 4.0
    h, steps = 1.0 / 240.0, 480
    q = q0
    for _ in range(steps):
        q = quat.integrate(q, omega, h)
    t = h * steps
    expect = quat.multiply(quat.from_axis_angle(omega, np.linalg.norm(omega, axis=1) * t), q0)
    same_rotation(q, expect, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(q, axis=1), 1.0, atol=1e-15)


# ------------------------------------------------------------------------------ slerp

def test_slerp_endpoints(rng):
    q0, q1 = random_quats(rng, 50), random_quats(rng, 50)
    np.testing.assert_allclose(quat.slerp(q0, q1, 0.0), q0, atol=1e-15)
    # t = 1 lands on q1 or -q1 (the same rotation: slerp goes the shorter way round).
    same_rotation(quat.slerp(q0, q1, 1.0), q1, atol=1e-14)


def test_slerp_constant_angular_speed_the_shorter_way(rng):
    q0, q1 = random_quats(rng, 50), random_quats(rng, 50)
    rel = quat.multiply(q1, quat.conjugate(q0))
    total = rotation_angle(rel)  # the shorter way: <= pi
    ts = np.linspace(0.0, 1.0, 11)
    for t in ts:
        qt = quat.slerp(q0, q1, np.full(50, t))
        np.testing.assert_allclose(np.linalg.norm(qt, axis=1), 1.0, atol=1e-15)
        np.testing.assert_allclose(rotation_angle(quat.multiply(qt, quat.conjugate(q0))),
                                   t * total, atol=1e-12)
        np.testing.assert_allclose(rotation_angle(quat.multiply(q1, quat.conjugate(qt))),
                                   (1.0 - t) * total, atol=1e-12)
    # Against scipy's Slerp on the same pair.
    for i in range(5):
        ref = Slerp([0.0, 1.0], to_scipy(np.stack((q0[i], q1[i]))))(ts)
        same_rotation(quat.slerp(q0[i], q1[i], ts), from_scipy(ref), atol=1e-13)


@pytest.mark.parametrize("angle", [1e-1, 1e-2, 1e-3, 1e-4])
def test_slerp_small_angles_keep_constant_speed(angle):
    """Small but not negligible angles still follow the arc (a normalised chord, nlerp,
    is off by a relative ~angle^2 / 100 at t = 1/4)."""
    q0 = quat.from_axis_angle([0.2, -0.5, 0.8], 1.1)
    q1 = quat.multiply(quat.from_axis_angle([1.0, 1.0, 0.0], angle), q0)
    for t in (0.1, 0.25, 0.5, 0.8):
        qt = quat.slerp(q0, q1, t)
        got = rotation_angle(quat.multiply(qt, quat.conjugate(q0)))
        assert got == pytest.approx(t * angle, rel=1e-10)


def test_slerp_takes_the_shorter_way_for_a_negated_end():
    q0 = np.array([1.0, 0.0, 0.0, 0.0])
    q1 = quat.from_axis_angle([0.0, 0.0, 1.0], 0.6)
    a = quat.slerp(q0, q1, 0.5)
    b = quat.slerp(q0, -q1, 0.5)  # same rotation as q1: must not go the long way (2 pi - 0.6)
    same_rotation(a, b, atol=1e-15)
    same_rotation(a, quat.from_axis_angle([0.0, 0.0, 1.0], 0.3), atol=1e-15)


def test_slerp_nearly_equal_ends_is_finite():
    q0 = quat.from_axis_angle([1.0, 2.0, 3.0], 0.4)
    q1 = quat.multiply(quat.from_axis_angle([0.0, 1.0, 0.0], 1e-9), q0)
    mid = quat.slerp(q0, q1, 0.5)
    assert np.isfinite(mid).all()
    same_rotation(mid, quat.multiply(quat.from_axis_angle([0.0, 1.0, 0.0], 0.5e-9), q0),
                  atol=1e-15)
    np.testing.assert_allclose(quat.slerp(q0, q0, 0.3), q0, atol=1e-15)
