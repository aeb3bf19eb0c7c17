"""Compiled kernels of engine.dynamics.joint_solver: the six-axis joints' geometry and their
Gauss-Seidel sweep, one call over all joints each.

Rows are flat joint-major arrays (engine.dynamics.joint_solver's module docstring gives the
maths): jac and mj (m, nr, 12) the rows' Jacobians and M^-1 J^T over [v_a, w_a, v_b, w_b],
imp (m, 5, 6) the carried impulses by row type (joints.LOCK, LOWER, UPPER, SPRING, MOTOR) and
axis. The sweep visits the joints one after the other in their stored order (joint_solver
sorts them by colour): plain sequential Gauss-Seidel, the same updates the coloured numpy
batches made (within a colour no moving body appears twice, so they commuted). Per joint the
rows go motors, spring blocks, limits (lower, then upper), lock blocks, as before.

As in engine.dynamics.joint_point_kernels, the small products are spelled out in the joint
loop: helpers taking several arrays, called per joint, cost more than the arithmetic.
"""

import math

import numpy as np

from ..core.jit import kernel
from ..core.vec_kernels import cross_parts
from .joint_chain import chain_factor, chain_solve, spd_inverse
from .joint_inertia import retake
from .joint_springs import limit_as_spring, spring_blocks
from .joint_warm import kept_fraction

# Row types (engine.dynamics.joints' order; repeated here as plain ints for the kernels).
_LOCK, _LOWER, _UPPER, _SPRING, _MOTOR = 0, 1, 2, 3, 4


@kernel
def _scalar_row(j, t, k, sign, v, jac, mj, imp, gain, bias, leak, lo, hi):
    """One scalar row (type t, axis k) of joint j on its bodies' velocities v (12,):
    new = clip(lam - gain sign u - bias - leak lam, lo, hi)."""
    u = 0.0
    for c in range(12):
        u += jac[j, k, c] * v[c]
    u *= sign
    lam = imp[j, t, k]
    new = lam - gain[j, t, k] * u - bias[j, t, k] - leak[j, t, k] * lam
    new = min(max(new, lo[j, t, k]), hi[j, t, k])
    imp[j, t, k] = new
    dl = sign * (new - lam)
    for c in range(12):
        v[c] += dl * mj[j, k, c]


@kernel(refcount=False)
def sweep(vel, a, b, world, jac, mj, imp, present, gain, bias, leak, lo, hi, springs,
          sgain, sbias, sleak, locks, w_op, err, use_bias, bias_rate, mscale, iscale, v):
    """One Gauss-Seidel sweep over all joints in order.

    present (5, 6) bool: the scalar rows (MOTOR, LOWER, UPPER by axis) visited, each with
    gain, bias, leak, lo, hi (m, 5, 6) (joint_solver._row_coefficients). springs (2,) bool:
    the spring blocks (linear, angular) visited (biased pass only), each with sgain, sleak
    (m, 2, 3, 3), sbias (m, 2, 3): dl = -(leak lam + gain u + bias). locks (2,) bool: the lock
    blocks visited (Gauss-Seidel mode) with w_op = K^-1 J (m, 2, 3, 12) and err = K^-1 C
    (m, 2, 3): dl = -ms (W v + bias_rate err) - is lam biased, -W v relaxed. v (12,) scratch."""
    for j in range(len(a)):
        ia, ib = a[j], b[j]
        for c in range(6):
            v[c] = vel[ia, c]
            v[6 + c] = vel[ib, c]
        for k in range(6):
            if present[_MOTOR, k]:
                _scalar_row(j, _MOTOR, k, 1.0, v, jac, mj, imp, gain, bias, leak, lo, hi)
        for e in range(2):
            if not springs[e]:
                continue
            r0 = 3 * e
            u0, u1, u2 = 0.0, 0.0, 0.0
            for c in range(12):
                u0 += jac[j, r0, c] * v[c]
                u1 += jac[j, r0 + 1, c] * v[c]
                u2 += jac[j, r0 + 2, c] * v[c]
            l0, l1, l2 = imp[j, _SPRING, r0], imp[j, _SPRING, r0 + 1], imp[j, _SPRING, r0 + 2]
            d0 = -((sleak[j, e, 0, 0] * l0 + sleak[j, e, 0, 1] * l1 + sleak[j, e, 0, 2] * l2)
                   + (sgain[j, e, 0, 0] * u0 + sgain[j, e, 0, 1] * u1 + sgain[j, e, 0, 2] * u2)
                   + sbias[j, e, 0])
            d1 = -((sleak[j, e, 1, 0] * l0 + sleak[j, e, 1, 1] * l1 + sleak[j, e, 1, 2] * l2)
                   + (sgain[j, e, 1, 0] * u0 + sgain[j, e, 1, 1] * u1 + sgain[j, e, 1, 2] * u2)
                   + sbias[j, e, 1])
            d2 = -((sleak[j, e, 2, 0] * l0 + sleak[j, e, 2, 1] * l1 + sleak[j, e, 2, 2] * l2)
                   + (sgain[j, e, 2, 0] * u0 + sgain[j, e, 2, 1] * u1 + sgain[j, e, 2, 2] * u2)
                   + sbias[j, e, 2])
            imp[j, _SPRING, r0] = l0 + d0
            imp[j, _SPRING, r0 + 1] = l1 + d1
            imp[j, _SPRING, r0 + 2] = l2 + d2
            for c in range(12):
                v[c] += d0 * mj[j, r0, c] + d1 * mj[j, r0 + 1, c] + d2 * mj[j, r0 + 2, c]
        for k in range(6):
            if present[_LOWER, k]:
                _scalar_row(j, _LOWER, k, 1.0, v, jac, mj, imp, gain, bias, leak, lo, hi)
        for k in range(6):
            if present[_UPPER, k]:
                _scalar_row(j, _UPPER, k, -1.0, v, jac, mj, imp, gain, bias, leak, lo, hi)
        for e in range(2):
            if not locks[e]:
                continue
            r0 = 3 * e
            w0, w1, w2 = 0.0, 0.0, 0.0
            for c in range(12):
                w0 += w_op[j, e, 0, c] * v[c]
                w1 += w_op[j, e, 1, c] * v[c]
                w2 += w_op[j, e, 2, c] * v[c]
            l0, l1, l2 = imp[j, _LOCK, r0], imp[j, _LOCK, r0 + 1], imp[j, _LOCK, r0 + 2]
            if use_bias:
                d0 = -mscale * (w0 + bias_rate * err[j, e, 0]) - iscale * l0
                d1 = -mscale * (w1 + bias_rate * err[j, e, 1]) - iscale * l1
                d2 = -mscale * (w2 + bias_rate * err[j, e, 2]) - iscale * l2
            else:
                d0, d1, d2 = -w0, -w1, -w2
            imp[j, _LOCK, r0] = l0 + d0
            imp[j, _LOCK, r0 + 1] = l1 + d1
            imp[j, _LOCK, r0 + 2] = l2 + d2
            for c in range(12):
                v[c] += d0 * mj[j, r0, c] + d1 * mj[j, r0 + 1, c] + d2 * mj[j, r0 + 2, c]
        if not world[j]:   # a world joint's A side is no body (a == b: B's value must win)
            for c in range(6):
                vel[ia, c] = v[c]
        for c in range(6):
            vel[ib, c] = v[6 + c]


@kernel
def _quat_mul(aw, ax, ay, az, bw, bx, by, bz):
    """The Hamilton product a b of two quaternions given by components."""
    return (aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw)


@kernel
def _frame(q, i, identity, f, j, out):
    """out[j] (3, 3) = the rotation matrix of q[i] f[j] (q the identity where identity):
    columns are the frame's axes in the world (quat.to_matrix's arithmetic)."""
    if identity:
        w, x, y, z = f[j, 0], f[j, 1], f[j, 2], f[j, 3]
    else:
        w, x, y, z = _quat_mul(q[i, 0], q[i, 1], q[i, 2], q[i, 3],
                               f[j, 0], f[j, 1], f[j, 2], f[j, 3])
    xx, yy, zz = x * x, y * y, z * z
    xy, xz, yz = x * y, x * z, y * z
    wx, wy, wz = w * x, w * y, w * z
    out[j, 0, 0] = 1 - 2 * (yy + zz)
    out[j, 0, 1] = 2 * (xy - wz)
    out[j, 0, 2] = 2 * (xz + wy)
    out[j, 1, 0] = 2 * (xy + wz)
    out[j, 1, 1] = 1 - 2 * (xx + zz)
    out[j, 1, 2] = 2 * (yz - wx)
    out[j, 2, 0] = 2 * (xz - wy)
    out[j, 2, 1] = 2 * (yz + wx)
    out[j, 2, 2] = 1 - 2 * (xx + yy)


@kernel(refcount=False)
def geometry(x, q, a, b, world, frame_a, frame_b, la_f, lb_f, nr, fa, fb, jac, coord, rel):
    """Per joint at the poses x (N, 3), q (N, 4): the frames fa, fb (m, 3, 3) (columns are the
    axes in the world), the linear rows' Jacobians and coordinates, rel = FA^T FB (m, 3, 3)
    (whose Euler angles joint_solver.continuous_euler takes) and, where nr == 6, the angular
    rows' Jacobians by the dual basis of the Euler rates (for the first triple: joint_solver's
    module docstring; angular_rows finishes them). la_f / lb_f (m, 3): the anchors in their
    frame's axes. A joint to the world has the world as side A (its A columns stay zero)."""
    for j in range(len(a)):
        ia, ib = a[j], b[j]
        ext = not world[j]
        _frame(q, ia, not ext, frame_a, j, fa)
        _frame(q, ib, False, frame_b, j, fb)
        ra0 = fa[j, 0, 0] * la_f[j, 0] + fa[j, 0, 1] * la_f[j, 1] + fa[j, 0, 2] * la_f[j, 2]
        ra1 = fa[j, 1, 0] * la_f[j, 0] + fa[j, 1, 1] * la_f[j, 1] + fa[j, 1, 2] * la_f[j, 2]
        ra2 = fa[j, 2, 0] * la_f[j, 0] + fa[j, 2, 1] * la_f[j, 1] + fa[j, 2, 2] * la_f[j, 2]
        rb0 = fb[j, 0, 0] * lb_f[j, 0] + fb[j, 0, 1] * lb_f[j, 1] + fb[j, 0, 2] * lb_f[j, 2]
        rb1 = fb[j, 1, 0] * lb_f[j, 0] + fb[j, 1, 1] * lb_f[j, 1] + fb[j, 1, 2] * lb_f[j, 2]
        rb2 = fb[j, 2, 0] * lb_f[j, 0] + fb[j, 2, 1] * lb_f[j, 1] + fb[j, 2, 2] * lb_f[j, 2]
        if ext:
            xa0, xa1, xa2 = x[ia, 0], x[ia, 1], x[ia, 2]
        else:
            xa0, xa1, xa2 = 0.0, 0.0, 0.0
        d0 = x[ib, 0] + rb0 - xa0 - ra0
        d1 = x[ib, 1] + rb1 - xa1 - ra1
        d2 = x[ib, 2] + rb2 - xa2 - ra2
        for c in range(12):
            for k in range(nr):
                jac[j, k, c] = 0.0
        for k in range(3):
            # axis k of frame A; J = [-a, -(r_a + d) x a, a, r_b x a]
            a0, a1, a2 = fa[j, 0, k], fa[j, 1, k], fa[j, 2, k]
            coord[j, k] = a0 * d0 + a1 * d1 + a2 * d2
            jac[j, k, 6], jac[j, k, 7], jac[j, k, 8] = a0, a1, a2
            jac[j, k, 9], jac[j, k, 10], jac[j, k, 11] = cross_parts(rb0, rb1, rb2, a0, a1, a2)
            if ext:
                c0, c1, c2 = cross_parts(ra0 + d0, ra1 + d1, ra2 + d2, a0, a1, a2)
                jac[j, k, 0], jac[j, k, 1], jac[j, k, 2] = -a0, -a1, -a2
                jac[j, k, 3], jac[j, k, 4], jac[j, k, 5] = -c0, -c1, -c2
        for r in range(3):
            for c in range(3):
                rel[j, r, c] = fa[j, 0, r] * fb[j, 0, c] + fa[j, 1, r] * fb[j, 1, c] \
                    + fa[j, 2, r] * fb[j, 2, c]
        if nr < 6:
            continue
        # e0 = A's x, e2 = B's z, e1 = e2 x e0 normalised; the rates' dual basis
        # (e1 x e2, e2 x e0, e0 x e1) / det
        e00, e01, e02 = fa[j, 0, 0], fa[j, 1, 0], fa[j, 2, 0]
        e20, e21, e22 = fb[j, 0, 2], fb[j, 1, 2], fb[j, 2, 2]
        e10, e11, e12 = cross_parts(e20, e21, e22, e00, e01, e02)
        n = max(np.sqrt(e10 * e10 + e11 * e11 + e12 * e12), 1e-9)
        e10, e11, e12 = e10 / n, e11 / n, e12 / n
        u0, u1, u2 = cross_parts(e10, e11, e12, e20, e21, e22)
        det = e00 * u0 + e01 * u1 + e02 * u2
        if abs(det) < 1e-3:   # gimbal lock
            det = np.copysign(1e-3, det)
        for r in range(3):
            if r == 0:
                g0, g1, g2 = u0, u1, u2
            elif r == 1:
                g0, g1, g2 = cross_parts(e20, e21, e22, e00, e01, e02)
            else:
                g0, g1, g2 = cross_parts(e00, e01, e02, e10, e11, e12)
            g0, g1, g2 = g0 / det, g1 / det, g2 / det
            jac[j, 3 + r, 9], jac[j, 3 + r, 10], jac[j, 3 + r, 11] = g0, g1, g2
            if ext:
                jac[j, 3 + r, 3], jac[j, 3 + r, 4], jac[j, 3 + r, 5] = -g0, -g1, -g2


@kernel(refcount=False)
def angular_rows(jac, flip, ima, imb, iia, iib, mj, kdiag, eff):
    """Finish the rows: the y rate's row reversed where the joint measures the second Euler
    triple (flip (m,): its y runs back), then mj = M^-1 J^T, the rows' inverse effective
    masses kdiag = J M^-1 J^T and effective masses eff (0 where kdiag <= 1e-12)."""
    nr = jac.shape[1]
    for j in range(jac.shape[0]):
        if nr == 6 and flip[j]:
            for c in range(12):
                jac[j, 4, c] = -jac[j, 4, c]
        for k in range(nr):
            s = 0.0
            for c in range(3):
                mj[j, k, c] = ima[j] * jac[j, k, c]
                mj[j, k, 6 + c] = imb[j] * jac[j, k, 6 + c]
                mj[j, k, 3 + c] = (iia[j, c, 0] * jac[j, k, 3] + iia[j, c, 1] * jac[j, k, 4]
                                   + iia[j, c, 2] * jac[j, k, 5])
                mj[j, k, 9 + c] = (iib[j, c, 0] * jac[j, k, 9] + iib[j, c, 1] * jac[j, k, 10]
                                   + iib[j, c, 2] * jac[j, k, 11])
            for c in range(12):
                s += jac[j, k, c] * mj[j, k, c]
            kdiag[j, k] = s
            eff[j, k] = 1.0 / s if s > 1e-12 else 0.0


@kernel
def direct_solve(vel, rj, rk, ra, rb, jac, mj, off_c, live, imp, use_bias, bias_rate, mscale,
                 iscale, chain, kinv, sinv, off, lower, pos, rhs, x, blk):
    """All lock rows at once (joint_solver's direct mode): dl = -ms K^-1 (u + bias_rate C)
    - is lam biased, -K^-1 u relaxed, the soft update of a block row with the whole system as
    the block. Rows r: joint rj, axis rk, bodies ra / rb, Jacobian jac and M^-1 J^T mj
    (r, 12), clipped position error off_c, live (0 / 1: broken joints' rows get nothing).
    K^-1 is the dense kinv (r, r), or with chain the chain factor (sinv, off, lower: joint_chain.
    chain_factor) over blocks blk (n, d), row r at blk[pos[rj], rk]. rhs, x (r,) scratch."""
    nrow = len(rj)
    for r in range(nrow):
        s = 0.0
        for c in range(6):
            s += jac[r, c] * vel[ra[r], c] + jac[r, 6 + c] * vel[rb[r], c]
        if use_bias:
            s += bias_rate * off_c[r]
        rhs[r] = s
    if chain:
        blk[:, :] = 0.0
        for r in range(nrow):
            blk[pos[rj[r]], rk[r]] = rhs[r]
        chain_solve(sinv, off, lower, blk)
        for r in range(nrow):
            x[r] = blk[pos[rj[r]], rk[r]]
    else:
        for r in range(nrow):
            s = 0.0
            for t in range(nrow):
                s += kinv[r, t] * rhs[t]
            x[r] = s
    for r in range(nrow):
        lam = imp[rj[r], _LOCK, rk[r]]
        dl = -mscale * x[r]
        if use_bias:
            dl -= iscale * lam
        dl *= live[r]
        imp[rj[r], _LOCK, rk[r]] = lam + dl
        for c in range(6):
            vel[ra[r], c] += dl * mj[r, c]
            vel[rb[r], c] += dl * mj[r, 6 + c]


@kernel(refcount=False)
def lock_blocks(jac, mj, lock, coord, target, reach, on, w_op, err, k, kinv):
    """The Gauss-Seidel lock blocks (sweep's locks) of every joint: for each block e on
    (linear, angular) K = J M^-1 J^T (3 x 3) over the locked rows lock (m, 6) (the others
    replaced by the identity's), K^-1 by the adjugate (joint_math.inv3's arithmetic: zero
    where the determinant is not positive and finite), its unlocked rows zeroed, then
    w_op = K^-1 J and err = K^-1 clip(C - target, +-reach). k, kinv (3, 3) scratch."""
    for j in range(jac.shape[0]):
        for e in range(2):
            if not on[e]:
                continue
            r0 = 3 * e
            for r in range(3):
                for s in range(3):
                    if lock[j, r0 + r] and lock[j, r0 + s]:
                        t = 0.0
                        for c in range(12):
                            t += jac[j, r0 + r, c] * mj[j, r0 + s, c]
                        k[r, s] = t
                    else:
                        k[r, s] = 1.0 if r == s else 0.0
            # cofactor row i = K[i + 1] x K[i + 2], stored transposed
            for i in range(3):
                i1, i2 = (i + 1) % 3, (i + 2) % 3
                for c in range(3):
                    c1, c2 = (c + 1) % 3, (c + 2) % 3
                    kinv[c, i] = k[i1, c1] * k[i2, c2] - k[i1, c2] * k[i2, c1]
            det = k[0, 0] * kinv[0, 0] + k[0, 1] * kinv[1, 0] + k[0, 2] * kinv[2, 0]
            inv = 1.0 / det if det > 0.0 and np.isfinite(det) else 0.0
            for r in range(3):
                live = inv if lock[j, r0 + r] else 0.0
                for s in range(3):
                    kinv[r, s] *= live
            for r in range(3):
                for c in range(12):
                    w_op[j, e, r, c] = (kinv[r, 0] * jac[j, r0, c] + kinv[r, 1] * jac[j, r0 + 1, c]
                                        + kinv[r, 2] * jac[j, r0 + 2, c])
                t = 0.0
                for s in range(3):
                    t += kinv[r, s] * min(max(coord[j, r0 + s] - target[j, r0 + s], -reach),
                                          reach)
                err[j, e, r] = t


@kernel(refcount=False)
def row_coefficients(eff, coord, limited, lower, upper, motor, motor_speed, motor_max, broken,
                     fold, present, use_bias, h, bias_rate, mscale, iscale, max_push, gain,
                     bias, leak, lo, hi):
    """The scalar rows' coefficients (m, 5, 6) of the present rows (sweep's update new =
    clip(lam - gain sign u - bias - leak lam, lo, hi)); rows of broken joints, of joints
    without the motor or limit, and limits in fold (m, 6: solved in their spring block) get
    zero gain, bias and leak. Motors: a velocity row clamped to +-max h. Limits: a row inside
    its range is speculative (bias sep / h: it may reach the limit in this substep and no
    further), a violated one soft in the biased pass (its push capped at max_push) and rigid
    in relax."""
    for j in range(eff.shape[0]):
        for t in (_MOTOR, _LOWER, _UPPER):
            for k in range(6):
                if not present[t, k]:
                    continue
                e = eff[j, k]
                if t == _MOTOR:
                    on = motor[j, k]
                    lim = motor_max[j, k] * h
                    g, b, lk = e, -e * motor_speed[j, k], 0.0
                    lo[j, t, k], hi[j, t, k] = -lim, lim
                else:
                    on = limited[j, k] and not fold[j, k]
                    if t == _LOWER:
                        sep = coord[j, k] - lower[j, k]
                    else:
                        sep = upper[j, k] - coord[j, k]
                    spec = sep > 0.0
                    if use_bias and spec:
                        g, b, lk = e, e * (sep / h), 0.0
                    elif use_bias:
                        g = e * mscale
                        b, lk = g * max(bias_rate * sep, -max_push), iscale
                    else:
                        g, b, lk = e, e * (sep / h if spec else 0.0), 0.0
                    lo[j, t, k], hi[j, t, k] = 0.0, np.inf
                if not on or broken[j]:
                    g, b, lk = 0.0, 0.0, 0.0
                gain[j, t, k], bias[j, t, k], leak[j, t, k] = g, b, lk


# -- one substep's work on the packed rows (JointSolver.pack; engine.dynamics.substeps) ------
# The six-axis joints' per-substep calls are kernels over one tuple of the JointSolver's
# arrays, in the order JointSolver.pack gives them (PACK below names them), so that the
# compiled substep loop (engine.dynamics.substeps) and JointSolver's own methods run the same
# code. par: h, bias_rate, mscale, iscale, max_push, limit_omega, limit_zeta, reach (the
# locks' error cap); flags: direct,
# chain, breakable, stale (the poses moved since the rows were measured) (FLAG_* below).
PACK = ("a", "b", "world", "jac", "mj", "imp", "coord", "eff", "kdiag", "limited", "lower",
        "upper", "motor", "motor_speed", "motor_max", "spring", "stiffness", "damping",
        "broken", "fold", "no_fold", "present", "gain", "bias", "leak", "lo", "hi",
        "spring_on", "no_blocks", "lock_on", "sgain", "sbias", "sleak", "w_op", "err", "v12",
        "k33", "rj", "rk", "d_a", "d_b", "d_jac", "d_mj", "d_off", "d_live", "kinv", "sinv",
        "soff", "slower", "chain_pos", "d_rhs", "d_x", "d_blk", "lock", "force", "torque",
        "break_force", "break_torque", "add", "wterms", "scale", "par", "flags")
FLAG_DIRECT, FLAG_CHAIN, FLAG_BREAKABLE, FLAG_STALE = range(4)
# Biased sweeps per substep while a spring is stiff (joint_solver.STIFF_SPRING_SWEEPS, whose
# reasons are given there).
STIFF_HOMEGA, STIFF_SWEEPS = 4.0, 16


@kernel
def axis_impulse(imp, j, k):
    """Net impulse of joint j along axis k's Jacobian (upper rows push back)."""
    return (imp[j, _LOCK, k] + imp[j, _LOWER, k] - imp[j, _UPPER, k] + imp[j, _SPRING, k]
            + imp[j, _MOTOR, k])


@kernel
def rows_warm_start(vel, a, b, world, imp, jac, mj, add, wterms, scale):
    """The carried impulses applied to the bodies, each joint's cut by joint_warm.kept_fraction
    judged after all of them are applied (lam K lam, lam . J v before and after: wterms
    (m, 3)). add (N, 6) and scale (m,) scratch."""
    m, nr = jac.shape[0], jac.shape[1]
    for rnd in range(2):   # 0: the whole impulses; 1 (if any is cut): the kept parts
        add[:, :] = 0.0
        for j in range(m):
            ia, ib = a[j], b[j]
            q, w0 = 0.0, 0.0
            for c in range(12):
                dv, p = 0.0, 0.0
                for k in range(nr):
                    lam = axis_impulse(imp, j, k)
                    dv += lam * mj[j, k, c]
                    p += lam * jac[j, k, c]
                q += p * dv
                w0 += p * (vel[ia, c] if c < 6 else vel[ib, c - 6])
                if c < 6:
                    if not world[j]:   # (a world joint's A side is no body)
                        add[ia, c] += dv
                else:
                    add[ib, c - 6] += dv
            wterms[j, 0], wterms[j, 1] = q, w0
        if rnd == 1:
            break
        cut = False
        for j in range(m):
            ia, ib = a[j], b[j]
            w1 = 0.0
            for c in range(12):
                p = 0.0
                for k in range(nr):
                    p += axis_impulse(imp, j, k) * jac[j, k, c]
                if c < 6:
                    w1 += p * (vel[ia, c] + (0.0 if world[j] else add[ia, c]))
                else:
                    w1 += p * (vel[ib, c - 6] + add[ib, c - 6])
            scale[j] = kept_fraction(wterms[j, 0], wterms[j, 1], w1)
            if scale[j] != 1.0:
                cut = True
        if not cut:
            break
        for j in range(m):
            for t in range(5):
                for k in range(6):
                    imp[j, t, k] *= scale[j]
    for i in range(vel.shape[0]):
        for c in range(6):
            vel[i, c] += add[i, c]


@kernel(refcount=False)
def limit_folds(vel, a, b, jac, coord, limited, lower, upper, spring, eff, broken, spring_on,
                omega, zeta, h, fold):
    """fold (m, 6): the violated limits the biased pass solves inside their joint's spring
    block, on joints with a live spring in that block and eff > 0.

    A spring and a limit on one axis (a generic_spring pulled past its limit) are two rows
    with one Jacobian; Gauss-Seidel between a stiff spring and the limit holding it converges
    like hsK / (1 + hsK) per sweep, near 1, and the unconverged pair, pushing opposite ways at
    the anchor, left torques of 1e5 N at a 5 m arm on a 2 kg box (the jointed fuzzer's spring
    class, issue 11: 1e5 J became 1.6e6). A violated limit is a soft-step row, i.e. an
    implicit spring pulling to its bound (limit_as_spring), so it joins the block's exact
    coupled solve. Only violated limits fold (a limit still ahead stays a speculative row),
    and only where the limit's own impulse -h (kl (C - bound) + sl u) at the present velocity
    would push (a limit never pulls): a joint leaving its violation faster than the limit's
    recovery speed kl |C - bound| / sl is left to the scalar row (clamped at zero)."""
    kl, sl = limit_as_spring(1.0, omega, zeta, h)
    for j in range(jac.shape[0]):
        for k in range(6):
            fold[j, k] = False
        for e in range(2):
            if not spring_on[e] or broken[j]:
                continue
            r0 = 3 * e
            if not (spring[j, r0] or spring[j, r0 + 1] or spring[j, r0 + 2]):
                continue
            for i in range(r0, r0 + 3):
                cb = coord[j, i]
                if not limited[j, i] or eff[j, i] <= 0.0 or lower[j, i] <= cb <= upper[j, i]:
                    continue
                u = 0.0
                for c in range(6):
                    u += jac[j, i, c] * vel[a[j], c] + jac[j, i, 6 + c] * vel[b[j], c]
                if cb < lower[j, i]:
                    fold[j, i] = kl * (cb - lower[j, i]) + sl * u < 0.0
                else:
                    fold[j, i] = kl * (cb - upper[j, i]) + sl * u > 0.0


@kernel(refcount=False)
def stiff_springs(spring, stiffness, kdiag, broken, spring_on, h):
    """Whether a live spring row is stiffer than STIFF_HOMEGA (h omega, omega^2 = k K on the
    row's own inverse effective mass K)."""
    for j in range(spring.shape[0]):
        if broken[j]:
            continue
        for e in range(2):
            if not spring_on[e]:
                continue
            for i in range(3 * e, 3 * e + 3):
                if spring[j, i] and h * np.sqrt(max(stiffness[j, i] * kdiag[j, i], 0.0)) \
                        > STIFF_HOMEGA:
                    return True
    return False


@kernel(refcount=False)
def reaction(imp, jac, h, force, torque):
    """Force and torque on B (m, 3) of the last substep, from its impulses along B's
    Jacobians (torque from the angular rows, where there are any)."""
    nr = jac.shape[1]
    for j in range(jac.shape[0]):
        for c in range(3):
            f, t = 0.0, 0.0
            for k in range(3):
                f += axis_impulse(imp, j, k) / h * jac[j, k, 6 + c]
                if nr == 6:
                    t += axis_impulse(imp, j, 3 + k) / h * jac[j, 3 + k, 9 + c]
            force[j, c] = f
            if nr == 6:
                torque[j, c] = t


@kernel(refcount=False)
def rows_breaks(imp, jac, h, break_force, break_torque, broken, lock, w_op, err, force,
                torque):
    """The substep's reaction (force, torque), then breaking: joints whose reaction exceeds
    break_force or break_torque break for good, their impulses and lock rows dropped.
    Returns how many broke."""
    reaction(imp, jac, h, force, torque)
    n = 0
    for j in range(jac.shape[0]):
        if broken[j]:
            continue
        f = np.sqrt(force[j, 0] ** 2 + force[j, 1] ** 2 + force[j, 2] ** 2)
        t = np.sqrt(torque[j, 0] ** 2 + torque[j, 1] ** 2 + torque[j, 2] ** 2)
        if f > break_force[j] or t > break_torque[j]:
            broken[j] = True
            n += 1
            imp[j, :, :] = 0.0
            lock[j, :] = False
            w_op[j, :, :, :] = 0.0
            err[j, :, :] = 0.0
    return n


@kernel(refcount=False)
def rows_warm(vel, p):
    """JointSolver.warm_start on the packed rows p (after the prepare)."""
    rows_warm_start(vel, p[0], p[1], p[2], p[5], p[3], p[4], p[58], p[59], p[60])


@kernel(refcount=False)
def rows_biased_sweeps(p):
    """Biased sweeps this substep: STIFF_SWEEPS while a spring is stiff, else 1."""
    spring_on = p[27]
    if (spring_on[0] or spring_on[1]) and stiff_springs(p[15], p[16], p[8], p[18], spring_on,
                                                        p[61][0]):
        return STIFF_SWEEPS
    return 1


@kernel
def rows_solve(vel, p, use_bias):
    """One sweep of JointSolver.solve on the packed rows p (after the prepare): motors,
    spring blocks, limits and Gauss-Seidel lock blocks joint by joint (sweep), then the
    direct locks."""
    (a, b, world, jac, mj, imp, coord, eff, kdiag, limited, lower, upper, motor, motor_speed,
     motor_max, spring, stiffness, damping, broken, fold, no_fold, present, gain, bias, leak,
     lo, hi, spring_on, no_blocks, lock_on, sgain, sbias, sleak, w_op, err, v12, k33, rj, rk,
     d_a, d_b, d_jac, d_mj, d_off, d_live, kinv, sinv, soff, slower, chain_pos, d_rhs, d_x,
     d_blk, lock, force, torque, break_force, break_torque, add, wterms, scale, par,
     flags) = p
    h, bias_rate, mscale, iscale, max_push, omega, zeta = (par[0], par[1], par[2], par[3],
                                                          par[4], par[5], par[6])
    direct = flags[FLAG_DIRECT] != 0
    springs = use_bias and (spring_on[0] or spring_on[1])
    folds = no_fold
    if springs:
        limit_folds(vel, a, b, jac, coord, limited, lower, upper, spring, eff, broken,
                    spring_on, omega, zeta, h, fold)
        folds = fold
    row_coefficients(eff, coord, limited, lower, upper, motor, motor_speed, motor_max, broken,
                     folds, present, use_bias, h, bias_rate, mscale, iscale, max_push, gain,
                     bias, leak, lo, hi)
    if springs:
        spring_blocks(jac, mj, eff, kdiag, coord, spring, stiffness, damping, lower, upper,
                      broken, folds, imp, spring_on, h, omega, zeta, max_push, sgain, sbias,
                      sleak, k33)
    if use_bias:
        br, ms, isc = bias_rate, mscale, iscale
    else:
        br, ms, isc = 0.0, 1.0, 0.0
    sweep(vel, a, b, world, jac, mj, imp, present, gain, bias, leak, lo, hi,
          spring_on if use_bias else no_blocks, sgain, sbias, sleak,
          no_blocks if direct else lock_on, w_op, err, use_bias, br, ms, isc, v12)
    if direct:
        direct_solve(vel, rj, rk, d_a, d_b, d_jac, d_mj, d_off, d_live, imp, use_bias, br, ms,
                     isc, flags[FLAG_CHAIN] != 0, kinv, sinv, soff, slower, chain_pos, d_rhs,
                     d_x, d_blk)


@kernel(refcount=False)
def rows_end_substep(p, geo):
    """JointSolver.end_substep on the packed rows p (geo: JointSolver.geometry_pack()): the
    reaction and breaking where a joint can break; a direct solve that lost rows is factored
    again without them. Returns how many broke."""
    flags = p[62]
    if not flags[FLAG_BREAKABLE]:
        return 0
    n = rows_breaks(p[5], p[3], p[61][0], p[56], p[57], p[18], p[53], p[33], p[34], p[54],
                    p[55])
    if n and flags[FLAG_DIRECT]:
        rows_refactor(p, geo)
    return n


@kernel
def _wrap(a):
    """The angle a wrapped to (-pi, pi] (Python's float modulo, numpy's np.mod: the result
    takes the divisor's sign)."""
    return np.pi - (np.pi - a) % (2.0 * np.pi)


@kernel(refcount=False)
def euler_angles(rel, prev, out, flip):
    """XYZ Euler angles (m, 3) of the relative rotations rel (m, 3, 3) into out, the triple
    nearest prev (m, 3) of the two (joint_solver.continuous_euler says why), and which used
    the second triple into flip (m,). out may be prev."""
    for j in range(rel.shape[0]):
        x = math.atan2(-rel[j, 1, 2], rel[j, 2, 2])
        y = math.asin(min(max(rel[j, 0, 2], -1.0), 1.0))
        z = math.atan2(-rel[j, 0, 1], rel[j, 0, 0])
        x2, y2, z2 = _wrap(x + np.pi), math.copysign(np.pi, y) - y, _wrap(z + np.pi)
        far1 = (abs(_wrap(x - prev[j, 0])) + abs(_wrap(y - prev[j, 1]))) \
            + abs(_wrap(z - prev[j, 2]))
        far2 = (abs(_wrap(x2 - prev[j, 0])) + abs(_wrap(y2 - prev[j, 1]))) \
            + abs(_wrap(z2 - prev[j, 2]))
        flip[j] = far2 < far1
        if flip[j]:
            out[j, 0], out[j, 1], out[j, 2] = x2, y2, z2
        else:
            out[j, 0], out[j, 1], out[j, 2] = x, y, z


@kernel
def rows_prepare(x, q, p, geo):
    """JointSolver._prepare's measuring on the packed rows p at the poses x, q: the ends'
    present tensors (joint_inertia), frames, rows and coordinates (geometry), the Euler
    angles (euler_angles, nr == 6), the rows' effective masses (angular_rows), the live locks
    and their blocks (lock_blocks) or the direct solve's factor (rows_refactor).
    geo: JointSolver.geometry_pack()."""
    (frame_a, frame_b, la_f, lb_f, fa, fb, rel, angles, flip, ima, imb, cur, in_idx, in_aniso,
     in_body, g_lock, target, kinv33, la, lb, kdense, order, side_prev, side_next, link, dblk,
     work) = geo
    a, b, world, jac, mj, coord, eff, kdiag = p[0], p[1], p[2], p[3], p[4], p[6], p[7], p[8]
    broken, lock, lock_on, w_op, err, k33, par, flags = (p[18], p[53], p[29], p[33], p[34],
                                                         p[36], p[61], p[62])
    m, nr = jac.shape[0], jac.shape[1]
    retake(q, in_idx, in_aniso, in_body, cur)
    geometry(x, q, a, b, world, frame_a, frame_b, la_f, lb_f, nr, fa, fb, jac, coord, rel)
    if nr == 6:
        euler_angles(rel, angles, angles, flip)
        for j in range(m):
            for c in range(3):
                coord[j, 3 + c] = angles[j, c]
    angular_rows(jac, flip, ima, imb, cur[:m], cur[m:], mj, kdiag, eff)
    for j in range(m):
        for k in range(6):
            lock[j, k] = g_lock[j, k] and not broken[j]
    flags[FLAG_STALE] = 0
    if flags[FLAG_DIRECT]:
        rows_refactor(p, geo)
    else:
        lock_blocks(jac, mj, lock, coord, target, par[7], lock_on, w_op, err, k33, kinv33)


@kernel
def factor_dense(jac, mj, lock, rj, rk, la, lb, world, k, kinv):
    """The direct solve's dense factor: kinv = K^-1 (spd_inverse; k (r, r) scratch) with
    K = J M^-1 J^T over the lock rows (rj, rk): rows meet where they share a body (la, lb:
    each joint's bodies, side A none for a joint to the world). Rows that are not live locks
    (lock) are decoupled with a unit diagonal (plus one: an identity row), live ones get a
    relative 1e-9 on theirs (JointSolver._refactor says why)."""
    r = rj.shape[0]
    for u in range(r):
        ju, ku = rj[u], rk[u]
        live = lock[ju, ku]
        for v in range(r):
            jv, kv = rj[v], rk[v]
            t = 0.0
            if live and lock[jv, kv]:
                for su in range(2):
                    if su == 0 and world[ju]:
                        continue
                    bu = la[ju] if su == 0 else lb[ju]
                    for sv in range(2):
                        if sv == 0 and world[jv]:
                            continue
                        if bu != (la[jv] if sv == 0 else lb[jv]):
                            continue
                        for c in range(6):
                            t += jac[ju, ku, 6 * su + c] * mj[jv, kv, 6 * sv + c]
            k[u, v] = t
        if live:
            k[u, u] = k[u, u] * (1.0 + 1e-9)
        else:
            k[u, u] = 1.0 * (1.0 + 1e-9) + 1.0
    spd_inverse(k, kinv)


@kernel
def factor_chain(jac, mj, lock, order, side_prev, side_next, link, dblk, off, sinv, lower,
                 work):
    """The direct solve's chain factor (joint_chain.chain_factor) of K's blocks along the
    chains: D_i = J_i M^-1 J_i^T over both ends, E_i = J_i M^-1 J_(i+1)^T over their shared
    body (order, side_prev, side_next, link: joint_chain.chain_order); rows that are not live
    locks are zero with a unit diagonal, live ones get a relative 1e-9 on theirs."""
    n, nr = order.shape[0], jac.shape[1]
    for i in range(n):
        j = order[i]
        for r in range(nr):
            for s in range(nr):
                t = 0.0
                if lock[j, r] and lock[j, s]:
                    for c in range(12):
                        t += jac[j, r, c] * mj[j, s, c]
                dblk[i, r, s] = t
            dblk[i, r, r] = dblk[i, r, r] * (1.0 + 1e-9) if lock[j, r] else 1.0
    for i in range(n - 1):
        j0, j1 = order[i], order[i + 1]
        c0, c1 = 6 * side_prev[i], 6 * side_next[i]
        for r in range(nr):
            for s in range(nr):
                t = 0.0
                if link[i] and lock[j0, r] and lock[j1, s]:
                    for c in range(6):
                        t += jac[j0, r, c0 + c] * mj[j1, s, c1 + c]
                off[i, r, s] = t
    chain_factor(dblk, off, sinv, lower, work)


@kernel
def gather_direct(jac, mj, lock, coord, target, rj, rk, reach, d_jac, d_mj, d_off, d_live):
    """The lock rows' Jacobians, M^-1 J^T, clipped position errors and liveness for
    direct_solve."""
    for r in range(rj.shape[0]):
        j, k = rj[r], rk[r]
        d_live[r] = 1.0 if lock[j, k] else 0.0
        for c in range(12):
            d_jac[r, c] = jac[j, k, c]
            d_mj[r, c] = mj[j, k, c]
        d_off[r] = min(max(coord[j, k] - target[j, k], -reach), reach)


@kernel
def rows_refactor(p, geo):
    """The direct solve's factor and rows for the present rows and lock mask (after every
    prepare, and when joints broke)."""
    (frame_a, frame_b, la_f, lb_f, fa, fb, rel, angles, flip, ima, imb, cur, in_idx, in_aniso,
     in_body, g_lock, target, kinv33, la, lb, kdense, order, side_prev, side_next, link, dblk,
     work) = geo
    jac, mj, coord, lock, par, flags = p[3], p[4], p[6], p[53], p[61], p[62]
    rj, rk = p[37], p[38]
    if flags[FLAG_CHAIN]:
        factor_chain(jac, mj, lock, order, side_prev, side_next, link, dblk, p[47], p[46],
                     p[48], work)
    else:
        factor_dense(jac, mj, lock, rj, rk, la, lb, p[2], kdense, p[45])
    gather_direct(jac, mj, lock, coord, target, rj, rk, par[7], p[41], p[42], p[43], p[44])
