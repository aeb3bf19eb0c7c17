"""Small batched helpers of the joint solvers (engine.dynamics.joint_solver, engine.dynamics.joint_points):
3 x 3 inverses and quaternion products and matrices, written with elementwise numpy only so
replays are bit identical."""
import numpy as np

from ..core.vec import cross

_P1 = np.array([1, 2, 0])
_P2 = np.array([2, 0, 1])


def inv3(m):
    """Inverses of (K, 3, 3) matrices by the adjugate (einsum-free, deterministic)."""
    cof = cross(m[:, _P1], m[:, _P2])  # row i = r_{i+1} x r_{i+2}
    # Summed left to right, as inv3_soa sums its rows: einsum's own order depends on the
    # CPU's vector width, which made the two differ in the last bit on some machines.
    det = m[:, 0, 0] * cof[:, 0, 0] + m[:, 0, 1] * cof[:, 0, 1] + m[:, 0, 2] * cof[:, 0, 2]
    return np.swapaxes(cof, 1, 2) * _inverse_det(det)[:, None, None]


def inv3_soa(m):
    """Inverses of component-major (3, 3, K) matrices by the adjugate (inv3's arithmetic)."""
    cof = cross_rows(m[_P1], m[_P2])
    det = (m[0] * cof[0]).sum(axis=0)
    return cof.transpose(1, 0, 2) * _inverse_det(det)


def _inverse_det(det):
    """1 / det where det is positive and finite, else 0. The joint blocks are effective-mass
    matrices K = J M^-1 J^T (positive semi-definite): a zero determinant means the block's
    bodies cannot move along some direction (both ends immovable, an inverse inertia that
    underflowed); its rows then get no impulse (a zero inverse) instead of inf / NaN, which
    blew a whipping 100-link chain up to 1e9 m."""
    ok = (det > 0.0) & np.isfinite(det)
    return np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)


def cross_rows(a, b):
    """Cross products over axis 1 of (r, 3, K) arrays (rows of component-major matrices)."""
    return a[:, _P1] * b[:, _P2] - a[:, _P2] * b[:, _P1]


def quat_mul(a, b):
    """Hamilton products of (m, 4) arrays (quat.multiply without moveaxis/stack)."""
    aw, ax, ay, az = a[:, 0], a[:, 1], a[:, 2], a[:, 3]
    bw, bx, by, bz = b[:, 0], b[:, 1], b[:, 2], b[:, 3]
    out = np.empty_like(a)
    out[:, 0] = aw * bw - ax * bx - ay * by - az * bz
    out[:, 1] = aw * bx + ax * bw + ay * bz - az * by
    out[:, 2] = aw * by - ax * bz + ay * bw + az * bx
    out[:, 3] = aw * bz + ax * by - ay * bx + az * bw
    return out


def quat_matrix(q):
    """Rotation matrices (m, 3, 3) of unit quaternions (m, 4) (quat.to_matrix's arithmetic)."""
    w, x, y, z = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
    xx, yy, zz = x * x, y * y, z * z
    xy, xz, yz = x * y, x * z, y * z
    wx, wy, wz = w * x, w * y, w * z
    m = np.empty((len(q), 3, 3))
    m[:, 0, 0] = 1 - 2 * (yy + zz)
    m[:, 0, 1] = 2 * (xy - wz)
    m[:, 0, 2] = 2 * (xz + wy)
    m[:, 1, 0] = 2 * (xy + wz)
    m[:, 1, 1] = 1 - 2 * (xx + zz)
    m[:, 1, 2] = 2 * (yz - wx)
    m[:, 2, 0] = 2 * (xz - wy)
    m[:, 2, 1] = 2 * (yz + wx)
    m[:, 2, 2] = 1 - 2 * (xx + yy)
    return m
