"""Compiled kernels of engine.joint_points: block Gauss-Seidel over pure point locks.

Each joint is one world-frame 3 x 3 block (see engine.joint_points)

    G = [-I, [s]x, I, -[r_b]x],  K = G M^-1 G^T,  s = x_b + r_b - x_a,
    C = d = x_b + r_b - x_a - r_a,   G v = v_b + w_b x r_b - v_a - w_a x s,

kept per joint in flat joint-major arrays: s, r_b (m, 3), K^-1 (m, 3, 3), the scaled error
(m, 3) and the angular blocks of M^-1 G^T, ang (m, 2, 3, 3): ang[j, 0] = I_a [s]x^T and
ang[j, 1] = I_b (-[r_b]x)^T, so an impulse lam on the rows moves w_a by ang[j, 0] lam, w_b by
ang[j, 1] lam (and v_a by -m_a^-1 lam, v_b by m_b^-1 lam). A joint to the world (world[j])
has no side A: it reads zero velocity there and writes nothing. Broken joints are skipped.

The joints are visited one after the other in their stored order (engine.joint_solver sorts
them by colour): plain sequential Gauss-Seidel, the same updates the coloured numpy sweeps
made (within a colour no moving body appears twice, so they commuted).
"""
import numpy as np

from .jit import kernel
from .joint_inertia import rotated_inverse_inertia
from .joint_warm import kept_fraction


@kernel
def rotate(q, v0, v1, v2):
    """v rotated by the unit quaternion q (4,) (quat.rotate's arithmetic: v + w t + u x t,
    t = 2 u x v)."""
    w, x, y, z = q[0], q[1], q[2], q[3]
    t0 = 2.0 * (y * v2 - z * v1)
    t1 = 2.0 * (z * v0 - x * v2)
    t2 = 2.0 * (x * v1 - y * v0)
    return (v0 + w * t0 + (y * t2 - z * t1),
            v1 + w * t1 + (z * t0 - x * t2),
            v2 + w * t2 + (x * t1 - y * t0))


@kernel
def skew(v0, v1, v2, sign, out):
    """out (3, 3) = sign [v]x ([v]x y = v x y)."""
    out[0, 0] = 0.0
    out[0, 1] = -sign * v2
    out[0, 2] = sign * v1
    out[1, 0] = sign * v2
    out[1, 1] = 0.0
    out[1, 2] = -sign * v0
    out[2, 0] = -sign * v1
    out[2, 1] = sign * v0
    out[2, 2] = 0.0


@kernel
def inverse3(k, out):
    """out = k^-1 by the adjugate (joint_math.inv3's arithmetic); zero where the determinant
    is not positive and finite (a block whose bodies cannot move along some direction:
    joint_math._inverse_det)."""
    # cofactor rows: row i = k[i + 1] x k[i + 2]
    for i in range(3):
        i1 = (i + 1) % 3
        i2 = (i + 2) % 3
        for c in range(3):
            c1 = (c + 1) % 3
            c2 = (c + 2) % 3
            out[c, i] = k[i1, c1] * k[i2, c2] - k[i1, c2] * k[i2, c1]   # transposed
    det = k[0, 0] * out[0, 0] + k[0, 1] * out[1, 0] + k[0, 2] * out[2, 0]
    inv = 1.0 / det if det > 0.0 and np.isfinite(det) else 0.0
    for r in range(3):
        for c in range(3):
            out[r, c] *= inv


@kernel
def point_geometry(x, q, a, b, world, anchor_a, anchor_b, msum, inertia, aniso, inv_body,
                   broken, reach, err_scale, s, rb, kinv, err, ang, qa, work):
    """Per joint at the poses x (N, 3), q (N, 4): s, r_b, K^-1, err = err_scale K^-1 d with d
    shortened to reach (the gap whose correction reaches joint_max_push), the angular blocks
    ang and frame A's body orientation qa (m, 4). inertia (m, 2, 3, 3) the ends' world inverse
    inertias, retaken where aniso (m, 2) from inv_body (m, 2, 3, 3) (engine.joint_inertia);
    msum (m,) the inverse masses' sum; work a (3, 3, 3) scratch."""
    sk = work[0]
    k = work[1]
    for j in range(len(a)):
        if broken[j]:
            continue
        ib = b[j]
        if world[j]:
            qa[j, 0] = 1.0
            qa[j, 1] = 0.0
            qa[j, 2] = 0.0
            qa[j, 3] = 0.0
            xa0, xa1, xa2 = 0.0, 0.0, 0.0
        else:
            ia = a[j]
            for c in range(4):
                qa[j, c] = q[ia, c]
            xa0, xa1, xa2 = x[ia, 0], x[ia, 1], x[ia, 2]
            if aniso[j, 0]:
                rotated_inverse_inertia(q[ia], inv_body[j, 0], inertia[j, 0])
        if aniso[j, 1]:
            rotated_inverse_inertia(q[ib], inv_body[j, 1], inertia[j, 1])
        ra0, ra1, ra2 = rotate(qa[j], anchor_a[j, 0], anchor_a[j, 1], anchor_a[j, 2])
        rb0, rb1, rb2 = rotate(q[ib], anchor_b[j, 0], anchor_b[j, 1], anchor_b[j, 2])
        pb0, pb1, pb2 = x[ib, 0] + rb0, x[ib, 1] + rb1, x[ib, 2] + rb2
        d0, d1, d2 = pb0 - ra0 - xa0, pb1 - ra1 - xa1, pb2 - ra2 - xa2
        s[j, 0], s[j, 1], s[j, 2] = pb0 - xa0, pb1 - xa1, pb2 - xa2
        rb[j, 0], rb[j, 1], rb[j, 2] = rb0, rb1, rb2
        for r in range(3):
            for c in range(3):
                k[r, c] = 0.0
            k[r, r] = msum[j]
        for e in range(2):
            # G's angular block S (e = 0: [s]x, 1: -[r_b]x); ang = I S^T; K += S ang
            if e == 0:
                skew(s[j, 0], s[j, 1], s[j, 2], 1.0, sk)
            else:
                skew(rb0, rb1, rb2, -1.0, sk)
            inert = inertia[j, e]
            out = ang[j, e]
            for r in range(3):
                for c in range(3):
                    out[r, c] = (inert[r, 0] * sk[c, 0] + inert[r, 1] * sk[c, 1]
                                 + inert[r, 2] * sk[c, 2])
            for r in range(3):
                for c in range(3):
                    k[r, c] += sk[r, 0] * out[0, c] + sk[r, 1] * out[1, c] + sk[r, 2] * out[2, c]
        ki = kinv[j]
        inverse3(k, ki)
        gap = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
        f = min(1.0, reach / max(gap, 1e-300))
        d0, d1, d2 = d0 * f, d1 * f, d2 * f
        for r in range(3):
            err[j, r] = err_scale * (ki[r, 0] * d0 + ki[r, 1] * d1 + ki[r, 2] * d2)


@kernel
def _apply(vel, j, ia, ib, world, ima, imb, ang, l0, l1, l2):
    """The bodies' velocities moved by the impulse lam = (l0, l1, l2) on joint j's rows
    (M^-1 G^T lam)."""
    for r in range(3):
        vel[ib, 3 + r] += ang[j, 1, r, 0] * l0 + ang[j, 1, r, 1] * l1 + ang[j, 1, r, 2] * l2
    vel[ib, 0] += imb[j] * l0
    vel[ib, 1] += imb[j] * l1
    vel[ib, 2] += imb[j] * l2
    if not world[j]:
        for r in range(3):
            vel[ia, 3 + r] += ang[j, 0, r, 0] * l0 + ang[j, 0, r, 1] * l1 + ang[j, 0, r, 2] * l2
        vel[ia, 0] -= ima[j] * l0
        vel[ia, 1] -= ima[j] * l1
        vel[ia, 2] -= ima[j] * l2


@kernel
def _row_velocity(vel, j, ia, ib, world, s, rb):
    """G v of joint j: v_b + w_b x r_b - v_a - w_a x s."""
    wb0, wb1, wb2 = vel[ib, 3], vel[ib, 4], vel[ib, 5]
    g0 = vel[ib, 0] + (wb1 * rb[j, 2] - wb2 * rb[j, 1])
    g1 = vel[ib, 1] + (wb2 * rb[j, 0] - wb0 * rb[j, 2])
    g2 = vel[ib, 2] + (wb0 * rb[j, 1] - wb1 * rb[j, 0])
    if not world[j]:
        wa0, wa1, wa2 = vel[ia, 3], vel[ia, 4], vel[ia, 5]
        g0 -= vel[ia, 0] + (wa1 * s[j, 2] - wa2 * s[j, 1])
        g1 -= vel[ia, 1] + (wa2 * s[j, 0] - wa0 * s[j, 2])
        g2 -= vel[ia, 2] + (wa0 * s[j, 1] - wa1 * s[j, 0])
    return g0, g1, g2


@kernel
def point_sweep(vel, a, b, world, broken, ima, imb, s, rb, kinv, err, ang, imp, use_bias,
                mscale, iscale):
    """One Gauss-Seidel sweep in joint order: dl = -(ms K^-1 G v + err + is lam) biased,
    -K^-1 G v relaxed (Box2D v3's soft step; err already holds ms br K^-1 C)."""
    for j in range(len(a)):
        if broken[j]:
            continue
        ia, ib = a[j], b[j]
        g0, g1, g2 = _row_velocity(vel, j, ia, ib, world, s, rb)
        ki = kinv[j]
        t0 = ki[0, 0] * g0 + ki[0, 1] * g1 + ki[0, 2] * g2
        t1 = ki[1, 0] * g0 + ki[1, 1] * g1 + ki[1, 2] * g2
        t2 = ki[2, 0] * g0 + ki[2, 1] * g1 + ki[2, 2] * g2
        if use_bias:
            t0 = mscale * t0 + err[j, 0] + iscale * imp[j, 0]
            t1 = mscale * t1 + err[j, 1] + iscale * imp[j, 1]
            t2 = mscale * t2 + err[j, 2] + iscale * imp[j, 2]
        imp[j, 0] -= t0
        imp[j, 1] -= t1
        imp[j, 2] -= t2
        _apply(vel, j, ia, ib, world, ima, imb, ang, -t0, -t1, -t2)


@kernel
def _warm_terms(vel, j, ia, ib, world, ima, imb, s, rb, ang, imp):
    """(lam K lam, lam . G v) of joint j's carried impulse lam at the velocities vel."""
    l0, l1, l2 = imp[j, 0], imp[j, 1], imp[j, 2]
    g0, g1, g2 = _row_velocity(vel, j, ia, ib, world, s, rb)
    # K lam = G M^-1 G^T lam: lam . K lam = sum of p . dv over the blocks, p = G^T lam
    q = imb[j] * (l0 * l0 + l1 * l1 + l2 * l2)
    # p_wb = r_b x lam; dv_wb = ang[j, 1] lam
    p0 = rb[j, 1] * l2 - rb[j, 2] * l1
    p1 = rb[j, 2] * l0 - rb[j, 0] * l2
    p2 = rb[j, 0] * l1 - rb[j, 1] * l0
    for r in range(3):
        dv = ang[j, 1, r, 0] * l0 + ang[j, 1, r, 1] * l1 + ang[j, 1, r, 2] * l2
        q += (p0 if r == 0 else p1 if r == 1 else p2) * dv
    if not world[j]:
        q += ima[j] * (l0 * l0 + l1 * l1 + l2 * l2)
        # p_wa = lam x s; dv_wa = ang[j, 0] lam
        p0 = l1 * s[j, 2] - l2 * s[j, 1]
        p1 = l2 * s[j, 0] - l0 * s[j, 2]
        p2 = l0 * s[j, 1] - l1 * s[j, 0]
        for r in range(3):
            dv = ang[j, 0, r, 0] * l0 + ang[j, 0, r, 1] * l1 + ang[j, 0, r, 2] * l2
            q += (p0 if r == 0 else p1 if r == 1 else p2) * dv
    return q, l0 * g0 + l1 * g1 + l2 * g2


@kernel
def point_warm_start(vel, a, b, world, broken, ima, imb, s, rb, ang, imp, terms, vel0):
    """The carried impulses imp applied to the bodies, each cut by engine.joint_warm's
    kept_fraction (impacts are not carried over), judged after all of them are applied.
    terms (m, 2) and vel0 (like vel) are scratch."""
    m = len(a)
    vel0[:] = vel
    for j in range(m):
        if broken[j]:
            continue
        q, w0 = _warm_terms(vel, j, a[j], b[j], world, ima, imb, s, rb, ang, imp)
        terms[j, 0] = q
        terms[j, 1] = w0
    for j in range(m):
        if not broken[j]:
            _apply(vel, j, a[j], b[j], world, ima, imb, ang, imp[j, 0], imp[j, 1], imp[j, 2])
    cut = False
    for j in range(m):
        if broken[j]:
            continue
        w1 = _warm_terms(vel, j, a[j], b[j], world, ima, imb, s, rb, ang, imp)[1]
        keep = kept_fraction(terms[j, 0], terms[j, 1], w1)
        if keep != 1.0:
            cut = True
            for c in range(3):
                imp[j, c] *= keep
    if cut:   # again from the start, with the impulses kept
        vel[:] = vel0
        for j in range(m):
            if not broken[j]:
                _apply(vel, j, a[j], b[j], world, ima, imb, ang, imp[j, 0], imp[j, 1],
                       imp[j, 2])
    return cut


@kernel
def point_breaks(imp, h, break_force, broken):
    """Joints whose substep reaction |lam| / h exceeds break_force break (their impulse
    dropped); returns how many broke."""
    n = 0
    for j in range(len(broken)):
        if broken[j]:
            continue
        f = np.sqrt(imp[j, 0] * imp[j, 0] + imp[j, 1] * imp[j, 1] + imp[j, 2] * imp[j, 2]) / h
        if f > break_force[j]:
            broken[j] = True
            for c in range(3):
                imp[j, c] = 0.0
            n += 1
    return n
