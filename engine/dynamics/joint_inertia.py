"""The joint solvers' world inverse inertia, kept at the bodies' present orientation.

The world takes each body's world inverse inertia R I^-1 R^T once per collision pass; the
joint rows are rebuilt from the present poses every substep (engine.dynamics.joint_solver), and rows
rebuilt for a turned body but weighted by its old tensor are not a projection: the exact
solve of a fixed joint then added energy instead of removing it. A 438 kg needle (axial
inertia 2.5e-9 kg m^2, 2e4 times below its others) fixed to a 45 g compound went to 1e17 m/s
in one step (fuzz seeds 313, 320, 327, 336, 352). So the tensors of the anisotropic bodies
in joints are taken again at each prepare; isotropic ones (spheres, cubes: R I^-1 R^T = I^-1
whatever R) keep the pass's, bit for bit. rotated_inverse_inertia is the one formula, used
by CurrentInertia (the general path) and engine.dynamics.joint_point_kernels (the point-lock path).
"""
import numpy as np

from ..core.jit import kernel


def isotropic(inv_body):
    """(k,) bool: body-frame inverse inertias (k, 3, 3) that are a multiple of the identity."""
    out = np.empty(len(inv_body), dtype=bool)
    _isotropic(np.ascontiguousarray(inv_body, dtype=np.float64), out)
    return out


@kernel
def _isotropic(inv_body, out):
    for k in range(inv_body.shape[0]):
        d = inv_body[k, 0, 0]
        ok = inv_body[k, 1, 1] == d and inv_body[k, 2, 2] == d
        for r in range(3):
            for c in range(3):
                # (a diagonal that is not finite is no multiple of the identity)
                if inv_body[k, r, c] - inv_body[k, r, r] * (1.0 if r == c else 0.0) != 0.0:
                    ok = False
        out[k] = ok


@kernel
def rotated_inverse_inertia(q, inv_body, out):
    """out (3, 3) = R inv_body R^T, R the rotation of the unit quaternion q (4,)
    (joint_math.quat_matrix's arithmetic)."""
    w, x, y, z = q[0], q[1], q[2], q[3]
    xx, yy, zz = x * x, y * y, z * z
    xy, xz, yz = x * y, x * z, y * z
    wx, wy, wz = w * x, w * y, w * z
    r00, r01, r02 = 1 - 2 * (yy + zz), 2 * (xy - wz), 2 * (xz + wy)
    r10, r11, r12 = 2 * (xy + wz), 1 - 2 * (xx + zz), 2 * (yz - wx)
    r20, r21, r22 = 2 * (xz - wy), 2 * (yz + wx), 1 - 2 * (xx + yy)
    # t = R inv_body, then out = t R^T
    for i in range(3):
        if i == 0:
            a0, a1, a2 = r00, r01, r02
        elif i == 1:
            a0, a1, a2 = r10, r11, r12
        else:
            a0, a1, a2 = r20, r21, r22
        t0 = a0 * inv_body[0, 0] + a1 * inv_body[1, 0] + a2 * inv_body[2, 0]
        t1 = a0 * inv_body[0, 1] + a1 * inv_body[1, 1] + a2 * inv_body[2, 1]
        t2 = a0 * inv_body[0, 2] + a1 * inv_body[1, 2] + a2 * inv_body[2, 2]
        out[i, 0] = t0 * r00 + t1 * r01 + t2 * r02
        out[i, 1] = t0 * r10 + t1 * r11 + t2 * r12
        out[i, 2] = t0 * r20 + t1 * r21 + t2 * r22


@kernel
def retake(q, idx, aniso, inv_body, current):
    """current[e] = the world inverse inertia of joint end e at orientations q (N, 4), for the
    anisotropic ends e in aniso (idx: each end's body; inv_body: the aniso ends' body-frame
    inverse inertias, in aniso's order)."""
    for k in range(len(aniso)):
        e = aniso[k]
        rotated_inverse_inertia(q[idx[e]], inv_body[k], current[e])


class CurrentInertia:
    """World inverse inertias (k, 3, 3) of k joint ends: bodies idx (k,), their body-frame
    inverse inertias inv_body (k, 3, 3) (zero for a side that does not move: the world, a
    sleeping or static body) and the pass's world tensors start (k, 3, 3)."""

    def __init__(self, idx, inv_body, start):
        self.idx = np.ascontiguousarray(idx, dtype=np.int64)
        self.aniso = np.flatnonzero(~isotropic(inv_body))
        self.inv_body = np.ascontiguousarray(inv_body[self.aniso], dtype=np.float64)
        self.current = np.array(start, dtype=float)

    def update(self, q):
        """The tensors at orientations q (N, 4) (the anisotropic ends retaken)."""
        if len(self.aniso):
            retake(np.ascontiguousarray(q, dtype=np.float64), self.idx, self.aniso,
                    self.inv_body, self.current)
        return self.current
