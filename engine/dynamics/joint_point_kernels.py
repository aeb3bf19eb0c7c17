"""Compiled kernels of engine.dynamics.joint_points: block Gauss-Seidel over pure point locks.

Each joint is one world-frame 3 x 3 block (see engine.dynamics.joint_points)

    G = [-I, [s]x, I, -[r_b]x],  K = G M^-1 G^T,  s = x_b + r_b - x_a,
    C = d = x_b + r_b - x_a - r_a,   G v = v_b + w_b x r_b - v_a - w_a x s,

kept per joint in flat joint-major arrays: s, r_b (m, 3), K^-1 (m, 3, 3), the scaled error
(m, 3) and the angular blocks of M^-1 G^T, ang (m, 2, 3, 3): ang[j, 0] = I_a [s]x^T and
ang[j, 1] = I_b (-[r_b]x)^T, so an impulse lam on the rows moves w_a by ang[j, 0] lam, w_b by
ang[j, 1] lam (and v_a by -m_a^-1 lam, v_b by m_b^-1 lam). A joint to the world (world[j])
has no side A: it reads zero velocity there and writes nothing. Broken joints are skipped.

The joints are visited one after the other in their stored order (engine.dynamics.joint_solver sorts
them by colour): plain sequential Gauss-Seidel, the same updates the coloured numpy sweeps
made (within a colour no moving body appears twice, so they commuted).
"""
import numpy as np

from ..core.jit import kernel
from ..core.vec_kernels import cross_parts
from .joint_inertia import rotated_inverse_inertia
from .joint_row_kernels import _quat_mul
from .joint_warm import kept_fraction


@kernel
def rotate(w, x, y, z, v0, v1, v2):
    """v rotated by the unit quaternion (w, x, y, z) (quat.rotate's arithmetic: v + w t +
    u x t, t = 2 u x v)."""
    t0 = 2.0 * (y * v2 - z * v1)
    t1 = 2.0 * (z * v0 - x * v2)
    t2 = 2.0 * (x * v1 - y * v0)
    return (v0 + w * t0 + (y * t2 - z * t1),
            v1 + w * t1 + (z * t0 - x * t2),
            v2 + w * t2 + (x * t1 - y * t0))


# The kernels spell out their small matrix products in the joint loop instead of calling
# helpers that take several arrays: such calls, per joint, cost 5-10x the arithmetic
# (measured at 762 joints: a sweep 150 us with them, 15-20 us without; numba's reference
# counting of the arrays passed, most likely, as inline="always" did not help). Helpers of
# scalars, or tiny reads of one array, are inlined and free.

@kernel(refcount=False)
def point_geometry(x, q, a, b, world, anchor_a, anchor_b, msum, inertia, aniso, inv_body,
                   broken, reach, err_scale, s, rb, kinv, err, ang, qa, work):
    """Per joint at the poses x (N, 3), q (N, 4): s, r_b, K^-1 (the adjugate, joint_math.inv3's
    arithmetic, zero where the determinant is not positive and finite: joint_math.
    _inverse_det), err = err_scale K^-1 d with d shortened to reach (the gap whose correction
    reaches joint_max_push), the angular blocks ang and frame A's body orientation qa (m, 4).
    inertia (m, 2, 3, 3) the ends' world inverse inertias, retaken where aniso (m, 2) from
    inv_body (m, 2, 3, 3) (engine.dynamics.joint_inertia); msum (m,) the inverse masses' sum; work a
    (1, 3, 3) scratch."""
    k = work[0]
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
        ra0, ra1, ra2 = rotate(qa[j, 0], qa[j, 1], qa[j, 2], qa[j, 3],
                               anchor_a[j, 0], anchor_a[j, 1], anchor_a[j, 2])
        rb0, rb1, rb2 = rotate(q[ib, 0], q[ib, 1], q[ib, 2], q[ib, 3],
                               anchor_b[j, 0], anchor_b[j, 1], anchor_b[j, 2])
        pb0, pb1, pb2 = x[ib, 0] + rb0, x[ib, 1] + rb1, x[ib, 2] + rb2
        d0, d1, d2 = pb0 - ra0 - xa0, pb1 - ra1 - xa1, pb2 - ra2 - xa2
        s[j, 0], s[j, 1], s[j, 2] = pb0 - xa0, pb1 - xa1, pb2 - xa2
        rb[j, 0], rb[j, 1], rb[j, 2] = rb0, rb1, rb2
        for r in range(3):
            for c in range(3):
                k[r, c] = 0.0
            k[r, r] = msum[j]
        for e in range(2):
            # G's angular block S = [v]x (e = 0: v = s, 1: v = -r_b); ang = I S^T, whose row
            # r is v x I[r] (I symmetric); K += S ang, whose column c is v x ang[:, c]
            if e == 0:
                v0, v1, v2 = s[j, 0], s[j, 1], s[j, 2]
            else:
                v0, v1, v2 = -rb0, -rb1, -rb2
            for r in range(3):
                ang[j, e, r, 0], ang[j, e, r, 1], ang[j, e, r, 2] = cross_parts(
                    v0, v1, v2, inertia[j, e, r, 0], inertia[j, e, r, 1], inertia[j, e, r, 2])
            for c in range(3):
                c0, c1, c2 = cross_parts(v0, v1, v2, ang[j, e, 0, c], ang[j, e, 1, c], ang[j, e, 2, c])
                k[0, c] += c0
                k[1, c] += c1
                k[2, c] += c2
        # K^-1 = adj(K) / det: cofactor row i = K[i + 1] x K[i + 2], stored transposed
        for i in range(3):
            i1, i2 = (i + 1) % 3, (i + 2) % 3
            for c in range(3):
                c1, c2 = (c + 1) % 3, (c + 2) % 3
                kinv[j, c, i] = k[i1, c1] * k[i2, c2] - k[i1, c2] * k[i2, c1]
        det = k[0, 0] * kinv[j, 0, 0] + k[0, 1] * kinv[j, 1, 0] + k[0, 2] * kinv[j, 2, 0]
        inv = 1.0 / det if det > 0.0 and np.isfinite(det) else 0.0
        for r in range(3):
            for c in range(3):
                kinv[j, r, c] *= inv
        gap = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
        f = min(1.0, reach / max(gap, 1e-300))
        e0, e1, e2 = _block_vec(kinv, j, d0 * f, d1 * f, d2 * f)
        err[j, 0], err[j, 1], err[j, 2] = err_scale * e0, err_scale * e1, err_scale * e2


@kernel
def _block_vec(m, j, v0, v1, v2):
    """m[j] (3, 3) times the vector v."""
    return (m[j, 0, 0] * v0 + m[j, 0, 1] * v1 + m[j, 0, 2] * v2,
            m[j, 1, 0] * v0 + m[j, 1, 1] * v1 + m[j, 1, 2] * v2,
            m[j, 2, 0] * v0 + m[j, 2, 1] * v1 + m[j, 2, 2] * v2)


@kernel
def _side_vec(ang, j, e, v0, v1, v2):
    """ang[j, e] (3, 3) times the vector v."""
    return (ang[j, e, 0, 0] * v0 + ang[j, e, 0, 1] * v1 + ang[j, e, 0, 2] * v2,
            ang[j, e, 1, 0] * v0 + ang[j, e, 1, 1] * v1 + ang[j, e, 1, 2] * v2,
            ang[j, e, 2, 0] * v0 + ang[j, e, 2, 1] * v1 + ang[j, e, 2, 2] * v2)


@kernel(refcount=False)
def point_sweep(vel, a, b, world, broken, ima, imb, s, rb, kinv, err, ang, imp, use_bias,
                mscale, iscale):
    """One Gauss-Seidel sweep in joint order: dl = -(ms K^-1 G v + err + is lam) biased,
    -K^-1 G v relaxed (Box2D v3's soft step; err already holds ms br K^-1 C)."""
    for j in range(len(a)):
        if broken[j]:
            continue
        ia, ib = a[j], b[j]
        # G v = v_b + w_b x r_b - v_a - w_a x s
        c0, c1, c2 = cross_parts(vel[ib, 3], vel[ib, 4], vel[ib, 5], rb[j, 0], rb[j, 1], rb[j, 2])
        g0, g1, g2 = vel[ib, 0] + c0, vel[ib, 1] + c1, vel[ib, 2] + c2
        if not world[j]:
            c0, c1, c2 = cross_parts(vel[ia, 3], vel[ia, 4], vel[ia, 5], s[j, 0], s[j, 1], s[j, 2])
            g0 -= vel[ia, 0] + c0
            g1 -= vel[ia, 1] + c1
            g2 -= vel[ia, 2] + c2
        t0, t1, t2 = _block_vec(kinv, j, g0, g1, g2)
        if use_bias:
            t0 = mscale * t0 + err[j, 0] + iscale * imp[j, 0]
            t1 = mscale * t1 + err[j, 1] + iscale * imp[j, 1]
            t2 = mscale * t2 + err[j, 2] + iscale * imp[j, 2]
        imp[j, 0] -= t0
        imp[j, 1] -= t1
        imp[j, 2] -= t2
        # the impulse -t: M^-1 G^T (-t)
        d0, d1, d2 = _side_vec(ang, j, 1, t0, t1, t2)
        vel[ib, 0] -= imb[j] * t0
        vel[ib, 1] -= imb[j] * t1
        vel[ib, 2] -= imb[j] * t2
        vel[ib, 3] -= d0
        vel[ib, 4] -= d1
        vel[ib, 5] -= d2
        if not world[j]:
            d0, d1, d2 = _side_vec(ang, j, 0, t0, t1, t2)
            vel[ia, 0] += ima[j] * t0
            vel[ia, 1] += ima[j] * t1
            vel[ia, 2] += ima[j] * t2
            vel[ia, 3] -= d0
            vel[ia, 4] -= d1
            vel[ia, 5] -= d2


@kernel(inline="always")
def _copy_rows(src, dst):
    """dst[:] = src for (N, 6) arrays, element by element: a slice assignment may copy its
    source (numba checks for overlap), which needs numba's allocator, not there in the
    kernels compiled without reference counting."""
    for i in range(src.shape[0]):
        for k in range(6):
            dst[i, k] = src[i, k]


@kernel(refcount=False)
def point_warm_start(vel, a, b, world, broken, ima, imb, s, rb, ang, imp, terms, vel0):
    """The carried impulses imp applied to the bodies, each cut by engine.dynamics.joint_warm's
    kept_fraction (impacts are not carried over), judged after all of them are applied
    (q = lam K lam and w0 = lam . G v before, into terms (m, 2); w1 = lam . G v after).
    vel0 (like vel) is scratch."""
    m = len(a)
    _copy_rows(vel, vel0)
    cut = False
    for rnd in range(2):     # 0: before the warm starts, 1: after
        for j in range(m):
            if broken[j]:
                continue
            ia, ib = a[j], b[j]
            l0, l1, l2 = imp[j, 0], imp[j, 1], imp[j, 2]
            # lam . G v, G v = v_b + w_b x r_b - v_a - w_a x s
            c0, c1, c2 = cross_parts(vel[ib, 3], vel[ib, 4], vel[ib, 5], rb[j, 0], rb[j, 1],
                                rb[j, 2])
            g0, g1, g2 = vel[ib, 0] + c0, vel[ib, 1] + c1, vel[ib, 2] + c2
            if not world[j]:
                c0, c1, c2 = cross_parts(vel[ia, 3], vel[ia, 4], vel[ia, 5], s[j, 0], s[j, 1],
                                    s[j, 2])
                g0 -= vel[ia, 0] + c0
                g1 -= vel[ia, 1] + c1
                g2 -= vel[ia, 2] + c2
            w = l0 * g0 + l1 * g1 + l2 * g2
            if rnd == 1:
                keep = kept_fraction(terms[j, 0], terms[j, 1], w)
                if keep != 1.0:
                    cut = True
                    imp[j, 0] *= keep
                    imp[j, 1] *= keep
                    imp[j, 2] *= keep
                continue
            # lam K lam: the sum over the blocks of p . dv, p = G^T lam, dv = M^-1 G^T lam
            ll = l0 * l0 + l1 * l1 + l2 * l2
            qk = imb[j] * ll
            p0, p1, p2 = cross_parts(rb[j, 0], rb[j, 1], rb[j, 2], l0, l1, l2)   # p_wb = r_b x lam
            d0, d1, d2 = _side_vec(ang, j, 1, l0, l1, l2)
            qk += p0 * d0 + p1 * d1 + p2 * d2
            if not world[j]:
                qk += ima[j] * ll
                p0, p1, p2 = cross_parts(l0, l1, l2, s[j, 0], s[j, 1], s[j, 2])  # p_wa = lam x s
                d0, d1, d2 = _side_vec(ang, j, 0, l0, l1, l2)
                qk += p0 * d0 + p1 * d1 + p2 * d2
            terms[j, 0] = qk
            terms[j, 1] = w
        if rnd == 0:
            point_warm_start_apply(vel, a, b, world, broken, ima, imb, ang, imp)
    if cut:   # again from the start, with the impulses kept
        _copy_rows(vel0, vel)
        point_warm_start_apply(vel, a, b, world, broken, ima, imb, ang, imp)
    return cut


@kernel(refcount=False)
def point_warm_start_apply(vel, a, b, world, broken, ima, imb, ang, imp):
    """vel += M^-1 G^T lam of every joint's impulse imp."""
    for j in range(len(a)):
        if broken[j]:
            continue
        ia, ib = a[j], b[j]
        l0, l1, l2 = imp[j, 0], imp[j, 1], imp[j, 2]
        d0, d1, d2 = _side_vec(ang, j, 1, l0, l1, l2)
        vel[ib, 0] += imb[j] * l0
        vel[ib, 1] += imb[j] * l1
        vel[ib, 2] += imb[j] * l2
        vel[ib, 3] += d0
        vel[ib, 4] += d1
        vel[ib, 5] += d2
        if not world[j]:
            d0, d1, d2 = _side_vec(ang, j, 0, l0, l1, l2)
            vel[ia, 0] -= ima[j] * l0
            vel[ia, 1] -= ima[j] * l1
            vel[ia, 2] -= ima[j] * l2
            vel[ia, 3] += d0
            vel[ia, 4] += d1
            vel[ia, 5] += d2


@kernel(refcount=False)
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


# -- one substep's work on the packed rows (PointLocks.pack; engine.dynamics.substeps) --------
# PointLocks' arrays in this order; par: reach, err_scale (mscale bias_rate), mscale, iscale, h;
# flags: breakable, stale (the poses moved since the last prepare).
POINT_PACK = ("a", "b", "world", "broken", "ima", "imb", "s", "rb", "kinv", "err", "ang", "imp",
              "terms", "vel0", "anchor_a", "anchor_b", "msum", "inertia", "aniso", "inv_body",
              "qa", "work", "break_force", "par", "flags")
BREAKABLE, STALE = 0, 1


@kernel(refcount=False)
def points_prepare(x, q, p):
    """PointLocks.prepare: the rows' geometry at the poses x, q."""
    (a, b, world, broken, ima, imb, s, rb, kinv, err, ang, imp, terms, vel0, anchor_a,
     anchor_b, msum, inertia, aniso, inv_body, qa, work, break_force, par, flags) = p
    point_geometry(x, q, a, b, world, anchor_a, anchor_b, msum, inertia, aniso, inv_body,
                   broken, par[0], par[1], s, rb, kinv, err, ang, qa, work)
    flags[STALE] = 0


@kernel(refcount=False)
def points_warm(vel, p):
    """PointLocks.warm_start (the rows prepared)."""
    point_warm_start(vel, p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[10], p[11], p[12],
                     p[13])


@kernel(refcount=False)
def points_solve(vel, p, use_bias):
    """PointLocks.solve (the rows prepared); the poses move after a biased sweep."""
    point_sweep(vel, p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9], p[10], p[11],
                use_bias, p[23][2], p[23][3])
    p[24][STALE] = 1 if use_bias else 0


@kernel(refcount=False)
def points_end_substep(p):
    """PointLocks.end_substep: breaking, where a joint can break."""
    if p[24][BREAKABLE]:
        point_breaks(p[11], p[23][4], p[22], p[3])


@kernel(refcount=False)
def frame_impulses(qa, frame_a, v, to_world, out):
    """Impulses between frame A's axes and the world: out[j] = F_j v[j] (to_world) or
    F_j^T v[j], F_j the rotation of qa[j] frame_a[j] (frame A's axes in the world: body A's
    orientation, the identity for the world, times the joint frame in A)."""
    for j in range(v.shape[0]):
        w, x, y, z = _quat_mul(qa[j, 0], qa[j, 1], qa[j, 2], qa[j, 3], frame_a[j, 0],
                               frame_a[j, 1], frame_a[j, 2], frame_a[j, 3])
        if not to_world:
            x, y, z = -x, -y, -z
        out[j, 0], out[j, 1], out[j, 2] = rotate(w, x, y, z, v[j, 0], v[j, 1], v[j, 2])
