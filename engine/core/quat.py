"""Batched quaternion and rotation helpers. Quaternions are (w, x, y, z), shape (..., 4).

Everything here broadcasts over leading axes so the step works on all bodies at once.
"""
import math

import numpy as np

from . import detmath
from .jit import kernel
from .vec import columns, cross, norm


def normalize(q):
    q = np.asarray(q, dtype=np.float64)
    return q / norm(q, axis=-1, keepdims=True)


def conjugate(q):
    q = np.asarray(q, dtype=np.float64)
    return q * np.array([1.0, -1.0, -1.0, -1.0])


def multiply(a, b):
    """Hamilton product a*b (apply b first, then a)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    aw, ax, ay, az = np.moveaxis(a, -1, 0)
    bw, bx, by, bz = np.moveaxis(b, -1, 0)
    return np.stack((
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    ), axis=-1)


def to_matrix(q):
    """Rotation matrices (..., 3, 3) of unit quaternions (..., 4)."""
    q = np.asarray(q, dtype=np.float64)
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    xx, yy, zz = x * x, y * y, z * z
    xy, xz, yz = x * y, x * z, y * z
    wx, wy, wz = w * x, w * y, w * z
    m = columns(
        1 - 2 * (yy + zz), 2 * (xy - wz), 2 * (xz + wy),
        2 * (xy + wz), 1 - 2 * (xx + zz), 2 * (yz - wx),
        2 * (xz - wy), 2 * (yz + wx), 1 - 2 * (xx + yy),
    )
    return m.reshape(q.shape[:-1] + (3, 3))


@kernel
def matrix_of(q, r):
    """r (3, 3) = to_matrix of one unit quaternion q (4,), term for term: the kernels' form."""
    w, x, y, z = q[0], q[1], q[2], q[3]
    xx, yy, zz = x * x, y * y, z * z
    xy, xz, yz = x * y, x * z, y * z
    wx, wy, wz = w * x, w * y, w * z
    r[0, 0], r[0, 1], r[0, 2] = 1 - 2 * (yy + zz), 2 * (xy - wz), 2 * (xz + wy)
    r[1, 0], r[1, 1], r[1, 2] = 2 * (xy + wz), 1 - 2 * (xx + zz), 2 * (yz - wx)
    r[2, 0], r[2, 1], r[2, 2] = 2 * (xz - wy), 2 * (yz + wx), 1 - 2 * (xx + yy)


@kernel(inline="always")
def normalize_row(q, b, out):
    """out[b] = q[b] / |q[b]| (out may be q), normalize's numbers: numpy sums a row's four
    squares left to right."""
    n = math.sqrt(q[b, 0] * q[b, 0] + q[b, 1] * q[b, 1] + q[b, 2] * q[b, 2]
                  + q[b, 3] * q[b, 3])
    for k in range(4):
        out[b, k] = q[b, k] / n


@kernel(inline="always")
def origin_row(x, q, com, b, pos):
    """pos[b] = x[b] - rotate(q[b], com[b]) with rotate's arithmetic: a body's origin from its
    centre of mass x, unit orientation q and the centre's offset com in the body frame."""
    w, u0, u1, u2 = q[b, 0], q[b, 1], q[b, 2], q[b, 3]
    v0, v1, v2 = com[b, 0], com[b, 1], com[b, 2]
    t0 = 2.0 * (u1 * v2 - u2 * v1)
    t1 = 2.0 * (u2 * v0 - u0 * v2)
    t2 = 2.0 * (u0 * v1 - u1 * v0)
    pos[b, 0] = x[b, 0] - (v0 + w * t0 + (u1 * t2 - u2 * t1))
    pos[b, 1] = x[b, 1] - (v1 + w * t1 + (u2 * t0 - u0 * t2))
    pos[b, 2] = x[b, 2] - (v2 + w * t2 + (u0 * t1 - u1 * t0))


def to_matrix_normalized(q):
    """Rotation matrices of quaternions of any non-zero length (a Blender object's stored
    quaternion need not be unit; Blender normalises it the same way)."""
    return to_matrix(normalize(q))


def from_matrix(m):
    """Unit quaternions (w >= 0) of rotation matrices (..., 3, 3) (Shepperd's method)."""
    m = np.asarray(m, dtype=np.float64)
    shape = m.shape[:-2]
    m = m.reshape(-1, 3, 3)
    tr = m[:, 0, 0] + m[:, 1, 1] + m[:, 2, 2]
    cand = np.stack((
        np.stack((1 + tr, m[:, 2, 1] - m[:, 1, 2], m[:, 0, 2] - m[:, 2, 0], m[:, 1, 0] - m[:, 0, 1]), -1),
        np.stack((m[:, 2, 1] - m[:, 1, 2], 1 + 2 * m[:, 0, 0] - tr, m[:, 0, 1] + m[:, 1, 0],
                  m[:, 0, 2] + m[:, 2, 0]), -1),
        np.stack((m[:, 0, 2] - m[:, 2, 0], m[:, 0, 1] + m[:, 1, 0], 1 + 2 * m[:, 1, 1] - tr,
                  m[:, 1, 2] + m[:, 2, 1]), -1),
        np.stack((m[:, 1, 0] - m[:, 0, 1], m[:, 0, 2] + m[:, 2, 0], m[:, 1, 2] + m[:, 2, 1],
                  1 + 2 * m[:, 2, 2] - tr), -1),
    ), axis=1)
    # Pick the numerically largest candidate (largest diagonal term) per matrix.
    diag = np.stack((tr, m[:, 0, 0], m[:, 1, 1], m[:, 2, 2]), -1)
    best = np.argmax(diag, axis=-1)
    q = cand[np.arange(len(m)), best]
    q = normalize(q)
    q = np.where(q[:, :1] < 0, -q, q)
    return q.reshape(shape + (4,))


def rotate(q, v):
    """Rotate vectors v (..., 3) by unit quaternions q (..., 4)."""
    q = np.asarray(q, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    u = q[..., 1:]
    w = q[..., :1]
    t = 2.0 * cross(u, v)
    return v + w * t + cross(u, t)


def rotate_inverse(q, v):
    """Rotate vectors v by the inverse of unit quaternions q."""
    return rotate(conjugate(q), v)


def from_axis_angle(axis, angle):
    axis = np.asarray(axis, dtype=np.float64)
    axis = axis / np.linalg.norm(axis, axis=-1, keepdims=True)
    half = 0.5 * np.asarray(angle, dtype=np.float64)[..., None]
    return np.concatenate((detmath.cos(half), detmath.sin(half) * axis), axis=-1)


def exp_map(omega, dt):
    """Quaternion of the rotation by angular velocity omega (..., 3) over dt (exact, not linearised)."""
    omega = np.asarray(omega, dtype=np.float64)
    angle = np.linalg.norm(omega, axis=-1, keepdims=True) * dt
    half = 0.5 * angle
    # sin(h)/|omega| written so that tiny rates stay finite: sinc form.
    scale = np.where(angle > 1e-12, detmath.sin(half) / np.where(angle > 1e-12, angle, 1.0),
                     0.5 - angle * angle / 48.0) * dt
    return np.concatenate((detmath.cos(half), omega * scale), axis=-1)


def integrate(q, omega, dt):
    """Advance orientations q by world angular velocities omega over dt, renormalised."""
    return normalize(multiply(exp_map(omega, dt), q))


def slerp(q0, q1, t):
    """Spherical interpolation from q0 (t = 0) to q1 (t = 1) the shorter way round."""
    q0 = np.asarray(q0, dtype=np.float64)
    q1 = np.asarray(q1, dtype=np.float64)
    t = np.asarray(t, dtype=np.float64)[..., None]
    d = np.sum(q0 * q1, axis=-1, keepdims=True)
    q1 = np.where(d < 0, -q1, q1)
    d = np.abs(d)
    theta = detmath.arccos(np.clip(d, -1.0, 1.0))
    s = detmath.sin(theta)
    near = s < 1e-6  # nearly equal: the chord is the arc
    w0 = np.where(near, 1.0 - t, detmath.sin((1.0 - t) * theta) / np.where(near, 1.0, s))
    w1 = np.where(near, t, detmath.sin(t * theta) / np.where(near, 1.0, s))
    return normalize(w0 * q0 + w1 * q1)
