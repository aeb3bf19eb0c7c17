"""The contact solver's preparation and per-substep passes as compiled kernels (engine.core.jit).

ContactSolver (engine/dynamics/solver.py) prepares, once per collision pass, the rows of every manifold
as flat per-manifold arrays (manifold first, in the order the passes sweep them):

    idx (m, 2)         body indices a, b
    count (m,)         used point slots (0-4)
    dirs (m, 3, 3)     normal (from a to b) and the two tangents
    ima, imb (m,)      inverse masses of a and b (0 for a body the solver must not move)
    jang (m, 12, 6)    per row, the angular part of its Jacobian J over [v_a, w_a, v_b, w_b]:
                       J = [-d, jang[:3], d, jang[3:]], d the row's direction
    mang (m, 12, 6)    the angular part of M^-1 J^T: [-ima d, mang[:3], imb d, mang[3:]]
    kmat (m, 12, 12)   the Delassus matrix K = J M^-1 J^T of the manifold's rows
    eff (m, 12)        1 / K_rr (0 on unused rows)
    kp (m, 4, 4)       pseudo-inverse of the normal block of K (the block normal step)
    sep0 (m, 4)        separation at dpose = 0 (UNUSED_SEPARATION on unused slots)
    imp (m, 12)        accumulated impulses, max_normal (m, 4) their largest normal values
    friction (m,)      combined friction coefficient

Rows of a manifold (engine.dynamics.solver.ROWS): 0-3 the normals of point slots 0-3, then per slot p
its two tangents at 4 + 2p and 5 + 2p. Only the rows of used slots are read. The linear
parts of the rows are the manifold's directions, stored once: J v = d . (v_b - v_a) + the
angular part, 9 products a row instead of 12, and about half the bytes a sweep reads (it
reads every row of every manifold each time). Velocities vel (N, 6) = [linear, angular] and
the pass's displacements dpose (N, 6) are updated in place.

Each pass is plain sequential Gauss-Seidel over the manifolds in array order, deterministic.
Inside a manifold it works in impulse space: the row velocities u = J v are taken once, an
impulse change d on row r moves them by K[r] d, and the body velocities take M^-1 J^T (the
manifold's impulse change) at the end. The same arithmetic as a sweep in velocity space,
with 12-long updates instead of two 12-long dot products per row.

Numbers (soft) are a (6,) array: 1/h, bias rate, mass scale, impulse scale, max push (see
engine.dynamics.solver.soft_params and WorldSettings), and engine.dynamics.solver.RELAX_SLOP.
"""
import math

import numpy as np

from ..core.jit import kernel

# Separation given to unused point slots: finite (inf * 0 would be NaN) and far apart.
UNUSED_SEPARATION = 1.0e3
# Floor of a friction magnitude before it divides the friction limit: 0 / tiny = 0 keeps a
# zero limit at zero impulse.
TINY = 1e-200


@kernel(inline="always")
def _row_slot(r):
    """(point slot, direction: 0 normal, 1-2 tangents) of row r."""
    if r < 4:
        return r, 0
    return (r - 4) >> 1, 1 + ((r - 4) & 1)


@kernel(inline="always")
def _live_row(x, npts):
    """The x-th live row of a manifold of npts used slots: its normal rows, then their
    tangents (rows 0 .. npts - 1, 4 .. 3 + 2 npts)."""
    return x if x < npts else 4 + x - npts


@kernel(inline="always")
def _row_velocity(i, r, dirs, jang, v):
    """J v of manifold i's row r at the pair's velocities v (12,) = [v_a, w_a, v_b, w_b]."""
    _, di = _row_slot(r)
    s = 0.0
    for k in range(3):
        s += dirs[i, di, k] * (v[6 + k] - v[k])
    for k in range(3):
        s += jang[i, r, k] * v[3 + k] + jang[i, r, 3 + k] * v[9 + k]
    return s


@kernel(refcount=False)
def warm_start(vel, idx, count, dirs, ima, imb, mang, imp):
    """vel += M^-1 J^T imp for every manifold (the impulses carried into the substep).

    _push's arithmetic written out (lam0 = 0: imp - 0.0 is imp exactly): an inlined helper
    given seven arrays took and dropped a reference on each, per manifold (atomic calls)."""
    for i in range(idx.shape[0]):
        a = idx[i, 0]
        b = idx[i, 1]
        f0 = 0.0
        f1 = 0.0
        f2 = 0.0
        wa0 = 0.0
        wa1 = 0.0
        wa2 = 0.0
        wb0 = 0.0
        wb1 = 0.0
        wb2 = 0.0
        for p in range(count[i]):
            for di in range(3):
                r = p if di == 0 else 3 + 2 * p + di
                d = imp[i, r]
                f0 += d * dirs[i, di, 0]
                f1 += d * dirs[i, di, 1]
                f2 += d * dirs[i, di, 2]
                wa0 += d * mang[i, r, 0]
                wa1 += d * mang[i, r, 1]
                wa2 += d * mang[i, r, 2]
                wb0 += d * mang[i, r, 3]
                wb1 += d * mang[i, r, 4]
                wb2 += d * mang[i, r, 5]
        ma = ima[i]
        mb = imb[i]
        vel[a, 0] -= ma * f0
        vel[a, 1] -= ma * f1
        vel[a, 2] -= ma * f2
        vel[a, 3] += wa0
        vel[a, 4] += wa1
        vel[a, 5] += wa2
        vel[b, 0] += mb * f0
        vel[b, 1] += mb * f1
        vel[b, 2] += mb * f2
        vel[b, 3] += wb0
        vel[b, 4] += wb1
        vel[b, 5] += wb2


@kernel(inline="always")
def _push(i, a, b, vel, npts, dirs, ima, imb, mang, imp, lam0, tangents):
    """Bodies a, b of manifold i take M^-1 J^T (imp[i] - lam0) over the rows of its npts
    used slots (their tangent rows too if tangents), lam0 (12,). Fixed bodies have zero
    inverse mass and inertia: they keep their velocities."""
    f0 = 0.0
    f1 = 0.0
    f2 = 0.0
    wa0 = 0.0
    wa1 = 0.0
    wa2 = 0.0
    wb0 = 0.0
    wb1 = 0.0
    wb2 = 0.0
    for p in range(npts):
        for di in range(3 if tangents else 1):
            r = p if di == 0 else 3 + 2 * p + di
            d = imp[i, r] - lam0[r]
            f0 += d * dirs[i, di, 0]
            f1 += d * dirs[i, di, 1]
            f2 += d * dirs[i, di, 2]
            wa0 += d * mang[i, r, 0]
            wa1 += d * mang[i, r, 1]
            wa2 += d * mang[i, r, 2]
            wb0 += d * mang[i, r, 3]
            wb1 += d * mang[i, r, 4]
            wb2 += d * mang[i, r, 5]
    ma = ima[i]
    mb = imb[i]
    vel[a, 0] -= ma * f0
    vel[a, 1] -= ma * f1
    vel[a, 2] -= ma * f2
    vel[a, 3] += wa0
    vel[a, 4] += wa1
    vel[a, 5] += wa2
    vel[b, 0] += mb * f0
    vel[b, 1] += mb * f1
    vel[b, 2] += mb * f2
    vel[b, 3] += wb0
    vel[b, 4] += wb1
    vel[b, 5] += wb2


@kernel(refcount=False)
def separations(rows, idx, count, dirs, jang, sep0, dpose, out):
    """out (K, 4) = the separation now of each point of the manifolds rows (K,): sep0 + J_n
    dpose (linearised; see solver); unused slots keep sep0."""
    for j in range(rows.shape[0]):
        i = rows[j]
        a = idx[i, 0]
        b = idx[i, 1]
        # Scalars, no helper given arrays (see solve_pass): the motion of point p is
        # n . (dpose_b - dpose_a) + the angular part of its normal row.
        m0 = dpose[b, 0] - dpose[a, 0]
        m1 = dpose[b, 1] - dpose[a, 1]
        m2 = dpose[b, 2] - dpose[a, 2]
        ta0, ta1, ta2 = dpose[a, 3], dpose[a, 4], dpose[a, 5]
        tb0, tb1, tb2 = dpose[b, 3], dpose[b, 4], dpose[b, 5]
        for p in range(4):
            out[j, p] = sep0[i, p]
            if p < count[i]:
                s = 0.0
                s += dirs[i, 0, 0] * m0
                s += dirs[i, 0, 1] * m1
                s += dirs[i, 0, 2] * m2
                s += jang[i, p, 0] * ta0 + jang[i, p, 3] * tb0
                s += jang[i, p, 1] * ta1 + jang[i, p, 4] * tb1
                s += jang[i, p, 2] * ta2 + jang[i, p, 5] * tb2
                out[j, p] += s


@kernel
def _rebase(rows, idx, count, dirs, jang, sep0, dpose, sep_now):
    """sep0 of the manifolds rows, whose rows were just built again, such that each used
    point keeps its separation now sep_now (K, 4): sep0 = sep_now - J_n dpose
    (UNUSED_SEPARATION on unused slots)."""
    moved = np.empty((rows.shape[0], 4))
    for j in range(rows.shape[0]):
        for p in range(4):
            sep0[rows[j], p] = 0.0
    separations(rows, idx, count, dirs, jang, sep0, dpose, moved)
    for j in range(rows.shape[0]):
        i = rows[j]
        for p in range(4):
            sep0[i, p] = sep_now[j, p] - moved[j, p] if p < count[i] else UNUSED_SEPARATION


# Rows of solve_pass's work array (SWEEP_WORK, ROWS): per manifold, the row velocities u and
# the impulses before the sweep (12 each), and per normal row its gain (0: the row keeps its
# impulse), gain * bias, u + bias of the block step, soft mass scale, soft impulse scale (the
# leak of the accumulated impulse) and the new impulses.
SWEEP_WORK = 8


@kernel(refcount=False)
def solve_pass(vel, dpose, use_bias, idx, count, dirs, ima, imb, jang, mang, kmat, eff, kp,
               sep0, imp, max_normal, friction, soft, work):
    """One Gauss-Seidel sweep over all manifolds: the biased pass (use_bias) or relax. work
    (SWEEP_WORK, 12): scratch.

    Per manifold (_sweep_manifold): the soft coefficients of its normal rows from their
    separation now, the block normal step where it needs no clamping, the sequential normal
    sweep with accumulated-impulse clamping, Coulomb friction with the disc clamp, then the
    body velocities (why each stage is there: ContactSolver.solve).

    A manifold of no points (a pair engine.world.recollide found apart: a fifth to a
    quarter of a tumbling pile's) has nothing to sweep. The stages are compiled twice: for 4
    points (box faces), the count a constant so that the loops unroll (~10 % off the sweep
    of the 1000-cube pile), and for any count. A copy per count 1-4 was no faster, and each
    copy costs ~4-9 s of cold compile and is compiled again into every kernel that calls
    solve_pass (run_substeps, three times). Without reference counting (the scratch comes
    from the caller): numba takes a reference on every array an inlined helper is given and
    drops it at the helper's end (atomic calls), which made the sweep twice as slow."""
    for i in range(idx.shape[0]):
        n = count[i]
        if n == 0:      # a pair engine.world.recollide found apart: nothing to sweep
            continue
        if n == 4:
            _sweep_manifold(i, 4, use_bias, vel, dpose, idx, dirs, ima, imb, jang, mang, kmat,
                            eff, kp, sep0, imp, max_normal, friction, soft, work)
        else:
            _sweep_manifold(i, n, use_bias, vel, dpose, idx, dirs, ima, imb, jang, mang, kmat,
                            eff, kp, sep0, imp, max_normal, friction, soft, work)


@kernel(inline="always")
def _sweep_manifold(i, npts, use_bias, vel, dpose, idx, dirs, ima, imb, jang, mang, kmat, eff,
                    kp, sep0, imp, max_normal, friction, soft, work):
    """solve_pass on manifold i, of npts used slots. The stages are written out here, with
    scalars where they fit (the arithmetic of _row_velocity, in its order); the bodies take
    the manifold's impulse change by _push."""
    u = work[0]
    lam0 = work[1]
    a_n = work[2]
    ab = work[3]
    rhs = work[4]
    msc = work[5]
    isc = work[6]
    new = work[7]
    inv_h = soft[0]
    a = idx[i, 0]
    b = idx[i, 1]
    # Normal gains. A point apart (s > 0) is speculative: in the biased pass its bias
    # s/h lets the bodies close exactly the gap, rigidly; in relax, if still apart by more
    # than the slop (engine.dynamics.solver.RELAX_SLOP), it keeps its impulse (gain 0) and
    # the manifold skips the block step. A touching point is soft, its bias the spring's
    # push-out, capped. rhs gets each row's bias velocity (u is added below).
    m0 = dpose[b, 0] - dpose[a, 0]
    m1 = dpose[b, 1] - dpose[a, 1]
    m2 = dpose[b, 2] - dpose[a, 2]
    ta0, ta1, ta2 = dpose[a, 3], dpose[a, 4], dpose[a, 5]
    tb0, tb1, tb2 = dpose[b, 3], dpose[b, 4], dpose[b, 5]
    block = True
    for p in range(4):
        s = sep0[i, p]
        if p < npts:     # the separation gained since dpose = 0 (as separations)
            m = 0.0
            m += dirs[i, 0, 0] * m0
            m += dirs[i, 0, 1] * m1
            m += dirs[i, 0, 2] * m2
            m += jang[i, p, 0] * ta0 + jang[i, p, 3] * tb0
            m += jang[i, p, 1] * ta1 + jang[i, p, 4] * tb1
            m += jang[i, p, 2] * ta2 + jang[i, p, 5] * tb2
            s += m
        e = eff[i, p]
        if use_bias:
            if s > 0.0:
                rhs[p] = s * inv_h
                msc[p] = 1.0
                isc[p] = 0.0
            else:
                rhs[p] = max(soft[1] * s, -soft[4])
                msc[p] = soft[2]
                isc[p] = soft[3]
            a_n[p] = e * msc[p]
            ab[p] = a_n[p] * rhs[p]
        else:
            rhs[p] = 0.0
            msc[p] = 1.0
            isc[p] = 0.0
            ab[p] = 0.0
            if s > soft[5] and e > 0.0:
                a_n[p] = 0.0
                block = False
            else:
                a_n[p] = e

    # Row velocities u = J v (0 on the rows of unused slots: only the live rows, the
    # normals of slots < npts and their tangents, are read and applied).
    dv0 = vel[b, 0] - vel[a, 0]
    dv1 = vel[b, 1] - vel[a, 1]
    dv2 = vel[b, 2] - vel[a, 2]
    wa0, wa1, wa2 = vel[a, 3], vel[a, 4], vel[a, 5]
    wb0, wb1, wb2 = vel[b, 3], vel[b, 4], vel[b, 5]
    for r in range(12):
        u[r] = 0.0
    for p in range(npts):
        for di in range(3):
            r = p if di == 0 else 3 + 2 * p + di
            u[r] = (dirs[i, di, 0] * dv0 + dirs[i, di, 1] * dv1 + dirs[i, di, 2] * dv2
                    + jang[i, r, 0] * wa0 + jang[i, r, 1] * wa1 + jang[i, r, 2] * wa2
                    + jang[i, r, 3] * wb0 + jang[i, r, 4] * wb1 + jang[i, r, 5] * wb2)
    for r in range(12):
        lam0[r] = imp[i, r]
    for p in range(4):
        rhs[p] += u[p]

    # Block normal step: the 4 normal rows solved together, lam = lam0 - Kp (u + bias),
    # softened per row; taken only if no row needs a pull (a clamped block answer is far
    # off). Over the used slots only: Kp is exactly 0 in the rows and columns of unused
    # ones (build_rows), whose impulses stay 0, and the u of unused rows is never read.
    if block:
        for p in range(npts):
            s = 0.0
            for q in range(npts):
                s += kp[i, p, q] * rhs[q]
            new[p] = imp[i, p] - s * msc[p] - isc[p] * imp[i, p]
            if not new[p] >= 0.0:      # a NaN fails too
                block = False
                break
    if block:
        for p in range(npts):
            d = new[p] - imp[i, p]
            if d != 0.0:
                for r in range(npts):
                    u[r] += kmat[i, p, r] * d
                for r in range(4, 4 + 2 * npts):
                    u[r] += kmat[i, p, r] * d
            imp[i, p] = new[p]

    # Sequential soft normal rows, new = max((1 - isc) old - a u - ab, 0); the later
    # normal rows read each change at once, the tangent rows all of them after the sweep.
    for p in range(npts):
        new[p] = imp[i, p]          # the impulses before the sweep
    for p in range(npts):
        old = imp[i, p]
        x = (1.0 - isc[p]) * old - a_n[p] * u[p] - ab[p]
        if x < 0.0:
            x = 0.0
        d = x - old
        for q in range(p + 1, npts):
            u[q] += kmat[i, p, q] * d
        imp[i, p] = x
    for p in range(npts):
        d = imp[i, p] - new[p]
        if d != 0.0:
            for r in range(4, 4 + 2 * npts):
                u[r] += kmat[i, p, r] * d
    for p in range(npts):
        if imp[i, p] > max_normal[i, p]:
            max_normal[i, p] = imp[i, p]

    # Coulomb friction point by point: the two tangent impulses clamped together to the
    # disc mu * (the point's normal impulse); later tangent rows read each change.
    mu = friction[i]
    end = 4 + 2 * npts
    for p in range(npts):
        r = 4 + 2 * p
        lim = mu * imp[i, p]
        o0 = imp[i, r]
        o1 = imp[i, r + 1]
        f0 = o0 - eff[i, r] * u[r]
        f1 = o1 - eff[i, r + 1] * u[r + 1]
        # The sqrt of the squares, not hypot: hypot is a libm call, and the sweep took
        # 0.61 instead of 0.43 ms on the 1000-cube pile with it (the same rows swept both
        # ways). Impulses are far from where the squares could overflow.
        mag = math.sqrt(f0 * f0 + f1 * f1)
        den = mag if mag > TINY else TINY
        # lim < den exactly when the rounded lim / den < 1 (lim >= 0): a point inside the
        # cone, most of a resting pile's, skips the division.
        if lim < den:
            scale = lim / den
            f0 *= scale
            f1 *= scale
        d0 = f0 - o0
        d1 = f1 - o1
        for t in range(r + 2, end):
            u[t] += kmat[i, r, t] * d0 + kmat[i, r + 1, t] * d1
        imp[i, r] = f0
        imp[i, r + 1] = f1

    # The bodies take M^-1 J^T (imp - lam0).
    _push(i, a, b, vel, npts, dirs, ima, imb, mang, imp, lam0, True)


@kernel
def restitution(vel, idx, count, dirs, ima, imb, jang, mang, kmat, eff, kp, imp, max_normal,
                v_impact, coef, accel_n, h, threshold):
    """After the substeps: each manifold's closing points leave at -e * (impact speed).

    Per manifold with a bouncing point (impact faster than threshold, an impulse taken at
    some sweep, e > 0): the block answer over its normal rows, points that do not bounce
    holding their normal velocity; used only where every used point bounces and none needs
    a pull, else one sequential sweep (see ContactSolver.restitution)."""
    v = np.empty(12)
    vn = np.empty(4)
    target = np.empty(4)
    want = np.zeros(4, dtype=np.bool_)
    lam0 = np.empty(12)
    new = np.empty(4)
    for i in range(idx.shape[0]):
        e = coef[i]
        anyw = False
        for p in range(4):
            want[p] = v_impact[i, p] < -threshold and max_normal[i, p] > 0.0 and e > 0.0
            anyw = anyw or want[p]
        if not anyw:
            continue
        a = idx[i, 0]
        b = idx[i, 1]
        npts = count[i]
        for k in range(6):
            v[k] = vel[a, k]
            v[6 + k] = vel[b, k]
        for r in range(12):
            lam0[r] = imp[i, r]
        ok = True
        for p in range(4):
            vn[p] = _row_velocity(i, p, dirs, jang, v) if p < npts else 0.0
            target[p] = -e * v_impact[i, p] - 0.5 * accel_n[i] * h
            if not want[p] and eff[i, p] != 0.0:
                ok = False          # a used point that does not bounce
        if ok:
            for p in range(4):
                s = 0.0
                for q in range(4):
                    if want[q]:
                        s += kp[i, p, q] * (vn[q] - target[q])
                new[p] = lam0[p] - s if want[p] else lam0[p]
                if not new[p] >= 0.0:
                    ok = False
        if ok:
            for p in range(4):
                d = new[p] - lam0[p]
                for q in range(4):
                    vn[q] += kmat[i, p, q] * d
                imp[i, p] = new[p]
        else:
            for p in range(4):
                if not want[p]:
                    continue
                old = imp[i, p]
                x = old - eff[i, p] * (vn[p] - target[p])
                if x < 0.0:
                    x = 0.0
                d = x - old
                imp[i, p] = x
                for q in range(4):
                    vn[q] += kmat[i, p, q] * d
        _push(i, a, b, vel, npts, dirs, ima, imb, mang, imp, lam0, False)


@kernel(refcount=False)
def build_rows(rows, idx, count, ra, rb, dirs, ima, imb, inv_inertia, axa, axb, jang, mang,
               kmat, eff, kp):
    """The rows of manifolds rows (K,) into jang, mang (m, 12, 6), kmat (m, 12, 12), eff
    (m, 12) and kp (m, 4, 4), from their body indices idx (m, 2), used slots count (m,),
    lever arms ra, rb (m, 4, 3), directions dirs (m, 3, 3) (normal, tangents), inverse
    masses ima, imb (m,), the world inverse inertias inv_inertia (N, 3, 3) and the axes
    axa, axb (m, 3) of round bodies (zero elsewhere), which their normal rows leave out (see
    engine.dynamics.solver).

    Row r is J = [-d, -ra x d, d, rb x d] with d the direction of row r at its point slot,
    and M^-1 J^T the same weighted by the inverse mass and inertia; rows of unused slots are
    zero. K = J M^-1 J^T by parts: the angular part is the product over the 6 angular terms;
    the directions of a manifold are orthonormal, so the linear part is 1/m_a + 1/m_b
    exactly where two live rows share a direction and exactly 0 elsewhere (a product over J
    would give that to round-off). K is symmetric: each pair of rows is taken once. kp: the
    pseudo-inverse of K's normal block (the block normal step's; four coplanar points are
    rank 3, and the least-norm answer is the symmetric split).

    Written for speed (about 4 builds a frame of every manifold): the two bodies' inverse
    inertias are read once per manifold into scalars, the products run over the live rows
    only (the rest of K is zeroed only where a slot is unused), and no helper is given
    arrays (numba takes and drops a reference on each array an inlined helper gets: atomic
    calls). The arithmetic is the same, in the same order, as a plain product over J. It
    allocates nothing, so it runs without reference counting (replace_rows calls it)."""
    for j in range(rows.shape[0]):
        i = rows[j]
        npts = count[i]
        a = idx[i, 0]
        b = idx[i, 1]
        ia00, ia01, ia02 = inv_inertia[a, 0, 0], inv_inertia[a, 0, 1], inv_inertia[a, 0, 2]
        ia10, ia11, ia12 = inv_inertia[a, 1, 0], inv_inertia[a, 1, 1], inv_inertia[a, 1, 2]
        ia20, ia21, ia22 = inv_inertia[a, 2, 0], inv_inertia[a, 2, 1], inv_inertia[a, 2, 2]
        ib00, ib01, ib02 = inv_inertia[b, 0, 0], inv_inertia[b, 0, 1], inv_inertia[b, 0, 2]
        ib10, ib11, ib12 = inv_inertia[b, 1, 0], inv_inertia[b, 1, 1], inv_inertia[b, 1, 2]
        ib20, ib21, ib22 = inv_inertia[b, 2, 0], inv_inertia[b, 2, 1], inv_inertia[b, 2, 2]
        na0, na1, na2 = axa[i, 0], axa[i, 1], axa[i, 2]
        nb0, nb1, nb2 = axb[i, 0], axb[i, 1], axb[i, 2]
        for r in range(12):
            p, di = _row_slot(r)
            if p >= npts:
                for k in range(6):
                    jang[i, r, k] = 0.0
                    mang[i, r, k] = 0.0
                continue
            d0 = dirs[i, di, 0]
            d1 = dirs[i, di, 1]
            d2 = dirs[i, di, 2]
            # Body a: -(ra x d), body b: rb x d. A round body's normal rows have no part along
            # its axis (its surface does not move as it rolls).
            x0, x1, x2 = ra[i, p, 0], ra[i, p, 1], ra[i, p, 2]
            c0 = x1 * d2 - x2 * d1
            c1 = x2 * d0 - x0 * d2
            c2 = x0 * d1 - x1 * d0
            if r < 4:
                t = c0 * na0 + c1 * na1 + c2 * na2
                c0 -= t * na0
                c1 -= t * na1
                c2 -= t * na2
            c0, c1, c2 = -c0, -c1, -c2
            jang[i, r, 0] = c0
            jang[i, r, 1] = c1
            jang[i, r, 2] = c2
            mang[i, r, 0] = ia00 * c0 + ia01 * c1 + ia02 * c2
            mang[i, r, 1] = ia10 * c0 + ia11 * c1 + ia12 * c2
            mang[i, r, 2] = ia20 * c0 + ia21 * c1 + ia22 * c2
            x0, x1, x2 = rb[i, p, 0], rb[i, p, 1], rb[i, p, 2]
            c0 = x1 * d2 - x2 * d1
            c1 = x2 * d0 - x0 * d2
            c2 = x0 * d1 - x1 * d0
            if r < 4:
                t = c0 * nb0 + c1 * nb1 + c2 * nb2
                c0 -= t * nb0
                c1 -= t * nb1
                c2 -= t * nb2
            jang[i, r, 3] = c0
            jang[i, r, 4] = c1
            jang[i, r, 5] = c2
            mang[i, r, 3] = ib00 * c0 + ib01 * c1 + ib02 * c2
            mang[i, r, 4] = ib10 * c0 + ib11 * c1 + ib12 * c2
            mang[i, r, 5] = ib20 * c0 + ib21 * c1 + ib22 * c2
        nl = 3 * npts     # the live rows: the normals of the used slots, then their tangents
        if nl < 12:
            for r in range(12):
                eff[i, r] = 0.0
                for s in range(12):
                    kmat[i, r, s] = 0.0
        lin = ima[i] + imb[i]
        for x in range(nl):
            r = _live_row(x, npts)
            dr = _row_slot(r)[1]
            j0, j1, j2 = jang[i, r, 0], jang[i, r, 1], jang[i, r, 2]
            j3, j4, j5 = jang[i, r, 3], jang[i, r, 4], jang[i, r, 5]
            for y in range(x, nl):
                s = _live_row(y, npts)
                acc = 0.0       # from 0.0 as a plain sum: 0.0 + (-0.0) is 0.0
                acc += j0 * mang[i, s, 0]
                acc += j1 * mang[i, s, 1]
                acc += j2 * mang[i, s, 2]
                acc += j3 * mang[i, s, 3]
                acc += j4 * mang[i, s, 4]
                acc += j5 * mang[i, s, 5]
                if dr == _row_slot(s)[1]:
                    acc += lin
                kmat[i, r, s] = acc
                kmat[i, s, r] = acc
            kr = kmat[i, r, r]
            eff[i, r] = 1.0 / kr if kr > 1e-12 else 0.0
        # kp: eigenvalues below PINV_RTOL x the largest are taken as zero, the rest inverted.
        ev = _eigen_psd4(kmat[i, 0, 0], kmat[i, 0, 1], kmat[i, 0, 2], kmat[i, 0, 3],
                         kmat[i, 1, 1], kmat[i, 1, 2], kmat[i, 1, 3], kmat[i, 2, 2],
                         kmat[i, 2, 3], kmat[i, 3, 3])
        cut = PINV_RTOL * max(max(ev[0], ev[1]), max(ev[2], ev[3]))
        for p in range(4):
            for q in range(4):
                kp[i, p, q] = 0.0
        for k in range(4):
            e = ev[k]
            if e > cut:
                inv = 1.0 / e
                for p in range(4):
                    w = ev[4 + 4 * p + k] * inv
                    for q in range(4):
                        kp[i, p, q] += w * ev[4 + 4 * q + k]


# Relative cut of build_rows' pseudo-inverse: eigenvalues below PINV_RTOL x the largest count as zero.
PINV_RTOL = 1e-9
# Jacobi sweeps of _eigen_psd4: each sweep squares the off-diagonal's relative size, so a
# 4 x 4 is diagonal to round-off in 4-6; the cap only bounds a pathological input.
JACOBI_SWEEPS = 30
# Done when the off-diagonal's sum of squares is below this times the diagonal's: entries
# 1e-15 of the diagonal's size, the round-off the rotations leave (asking for less never
# stops), which moves an eigenvalue by ~1e-30 of the largest.
JACOBI_TOL = 1e-30


@kernel(inline="always")
def _jacobi_angle(app, aqq, apq):
    """(cos, sin) of the Jacobi rotation that zeroes apq (apq != 0): t = tan(angle), the
    smaller root of t^2 + 2 theta t - 1 = 0."""
    theta = (aqq - app) / (2.0 * apq)
    if abs(theta) > 1e150:
        t = 0.5 / theta
    else:
        t = 1.0 / (abs(theta) + math.sqrt(theta * theta + 1.0))
        if theta < 0.0:
            t = -t
    c = 1.0 / math.sqrt(t * t + 1.0)
    return c, t * c


@kernel(inline="always")
def _turn(x, y, c, sn):
    """Entries x (column p), y (column q) of a row of a matrix times the rotation."""
    return c * x - sn * y, sn * x + c * y


@kernel(inline="always")
def _turn_diagonal(app, aqq, apq, c, sn):
    """a[p, p], a[q, q] of R^T a R, a symmetric: columns p, q of a R, then rows p, q."""
    bpp = c * app - sn * apq
    bpq = sn * app + c * apq
    bqp = c * apq - sn * aqq
    bqq = sn * apq + c * aqq
    return c * bpp - sn * bqp, sn * bpq + c * bqq


@kernel(inline="always")
def _eigen_psd4(a00, a01, a02, a03, a11, a12, a13, a22, a23, a33):
    """The eigen-decomposition of the symmetric 4 x 4 a (its upper triangle) by cyclic Jacobi
    rotations (exact to round-off on a symmetric matrix): (the eigenvalues (4), the
    eigenvectors as columns of v (16, row by row)).

    On scalars, not on a 4 x 4 array: the matrix stays in registers (an array's entries were
    stored and loaded again at every rotation, ~500 ns a matrix on cubes1000, most of
    build_rows). Each rotation is R^T a R with a[p, q] zeroed; outside the p, q block a
    row's entries are its column's (the same products of the same numbers), so the
    symmetric matrix is kept once."""
    v00, v01, v02, v03 = 1.0, 0.0, 0.0, 0.0
    v10, v11, v12, v13 = 0.0, 1.0, 0.0, 0.0
    v20, v21, v22, v23 = 0.0, 0.0, 1.0, 0.0
    v30, v31, v32, v33 = 0.0, 0.0, 0.0, 1.0
    for _ in range(JACOBI_SWEEPS):
        diag = 0.0
        diag += a00 * a00
        diag += a11 * a11
        diag += a22 * a22
        diag += a33 * a33
        off = 0.0
        off += a01 * a01
        off += a02 * a02
        off += a03 * a03
        off += a12 * a12
        off += a13 * a13
        off += a23 * a23
        if not off > JACOBI_TOL * diag:   # diagonal to round-off (a NaN stops too)
            break
        if a01 != 0.0:
            c, sn = _jacobi_angle(a00, a11, a01)
            a02, a12 = _turn(a02, a12, c, sn)
            a03, a13 = _turn(a03, a13, c, sn)
            a00, a11 = _turn_diagonal(a00, a11, a01, c, sn)
            a01 = 0.0
            v00, v01 = _turn(v00, v01, c, sn)
            v10, v11 = _turn(v10, v11, c, sn)
            v20, v21 = _turn(v20, v21, c, sn)
            v30, v31 = _turn(v30, v31, c, sn)
        if a02 != 0.0:
            c, sn = _jacobi_angle(a00, a22, a02)
            a01, a12 = _turn(a01, a12, c, sn)
            a03, a23 = _turn(a03, a23, c, sn)
            a00, a22 = _turn_diagonal(a00, a22, a02, c, sn)
            a02 = 0.0
            v00, v02 = _turn(v00, v02, c, sn)
            v10, v12 = _turn(v10, v12, c, sn)
            v20, v22 = _turn(v20, v22, c, sn)
            v30, v32 = _turn(v30, v32, c, sn)
        if a03 != 0.0:
            c, sn = _jacobi_angle(a00, a33, a03)
            a01, a13 = _turn(a01, a13, c, sn)
            a02, a23 = _turn(a02, a23, c, sn)
            a00, a33 = _turn_diagonal(a00, a33, a03, c, sn)
            a03 = 0.0
            v00, v03 = _turn(v00, v03, c, sn)
            v10, v13 = _turn(v10, v13, c, sn)
            v20, v23 = _turn(v20, v23, c, sn)
            v30, v33 = _turn(v30, v33, c, sn)
        if a12 != 0.0:
            c, sn = _jacobi_angle(a11, a22, a12)
            a01, a02 = _turn(a01, a02, c, sn)
            a13, a23 = _turn(a13, a23, c, sn)
            a11, a22 = _turn_diagonal(a11, a22, a12, c, sn)
            a12 = 0.0
            v01, v02 = _turn(v01, v02, c, sn)
            v11, v12 = _turn(v11, v12, c, sn)
            v21, v22 = _turn(v21, v22, c, sn)
            v31, v32 = _turn(v31, v32, c, sn)
        if a13 != 0.0:
            c, sn = _jacobi_angle(a11, a33, a13)
            a01, a03 = _turn(a01, a03, c, sn)
            a12, a23 = _turn(a12, a23, c, sn)
            a11, a33 = _turn_diagonal(a11, a33, a13, c, sn)
            a13 = 0.0
            v01, v03 = _turn(v01, v03, c, sn)
            v11, v13 = _turn(v11, v13, c, sn)
            v21, v23 = _turn(v21, v23, c, sn)
            v31, v33 = _turn(v31, v33, c, sn)
        if a23 != 0.0:
            c, sn = _jacobi_angle(a22, a33, a23)
            a02, a03 = _turn(a02, a03, c, sn)
            a12, a13 = _turn(a12, a13, c, sn)
            a22, a33 = _turn_diagonal(a22, a33, a23, c, sn)
            a23 = 0.0
            v02, v03 = _turn(v02, v03, c, sn)
            v12, v13 = _turn(v12, v13, c, sn)
            v22, v23 = _turn(v22, v23, c, sn)
            v32, v33 = _turn(v32, v33, c, sn)
    return (a00, a11, a22, a33,
            v00, v01, v02, v03, v10, v11, v12, v13, v20, v21, v22, v23, v30, v31, v32, v33)


# -- preparation (ContactSolver.__init__, replace, refresh_inertia) ----------------------

@kernel(inline="always")
def _tangents(n0, n1, n2):
    """Two unit tangents of the unit normal (n0, n1, n2): t1 = n x helper / |.|, t2 = n x t1,
    the helper the x axis unless n is close to it (then y): continuous away from that switch,
    so warm-start impulses project consistently (engine.dynamics.solver.tangent_basis)."""
    h0, h1 = (1.0, 0.0) if abs(n0) < 0.57735 else (0.0, 1.0)
    a0 = n1 * 0.0 - n2 * h1
    a1 = n2 * h0 - n0 * 0.0
    a2 = n0 * h1 - n1 * h0
    ln = math.sqrt(a0 * a0 + a1 * a1 + a2 * a2)
    a0 /= ln
    a1 /= ln
    a2 /= ln
    return a0, a1, a2, n1 * a2 - n2 * a1, n2 * a0 - n0 * a2, n0 * a1 - n1 * a0


@kernel(refcount=False)
def set_directions(rows, src, normal, dirs):
    """dirs[rows[j]] (3, 3) = (normal, tangent 1, tangent 2) of the unit normal normal[src[j]]
    (see _tangents)."""
    for j in range(rows.shape[0]):
        i = rows[j]
        n0, n1, n2 = normal[src[j], 0], normal[src[j], 1], normal[src[j], 2]
        a0, a1, a2, b0, b1, b2 = _tangents(n0, n1, n2)
        dirs[i, 0, 0], dirs[i, 0, 1], dirs[i, 0, 2] = n0, n1, n2
        dirs[i, 1, 0], dirs[i, 1, 1], dirs[i, 1, 2] = a0, a1, a2
        dirs[i, 2, 0], dirs[i, 2, 1], dirs[i, 2, 2] = b0, b1, b2


@kernel(refcount=False)
def set_arms(rows, src, idx, count, points, x_com, box_axes, box_lo, box_hi, reach, ra, rb):
    """Lever arms ra, rb (m, 4, 3) of manifolds rows (K,) from the narrowphase's manifolds
    src (K,) of points (., 4, 3): the points' arms about the centres of mass x_com, clamped
    into each body's principal box (axes, lo, hi (N, ...); engine.dynamics.arm_box: an arm
    inside it is kept bit for bit) and then to its reach (N,) (the bounding radius about its
    centre of mass); zero on unused slots.

    Why the reach: a contact point lies on the other body's surface; in a deep overlap of a
    big body and a small one it can be metres outside the small one, and its arm then gives
    the small body torques its own shape never could: a 27 g needle (smallest inertia 7e-8
    kg m^2) 0.8 m from such a point was spun to 1e4 rad/s and flung at 3e5 m/s (issue 11,
    fuzzer seed 137). Arms within reach are unchanged.

    One loop, no helper given arrays: numba takes and drops a reference on each array an
    inlined helper gets (atomic calls), which cost more than the clamp itself."""
    for j in range(rows.shape[0]):
        i = rows[j]
        s = src[j]
        for p in range(4):
            if p >= count[i]:
                for k in range(3):
                    ra[i, p, k] = 0.0
                    rb[i, p, k] = 0.0
                continue
            for side in range(2):
                body = idx[i, side]
                a0 = points[s, p, 0] - x_com[body, 0]
                a1 = points[s, p, 1] - x_com[body, 1]
                a2 = points[s, p, 2] - x_com[body, 2]
                inside = True
                loc0 = 0.0
                loc1 = 0.0
                loc2 = 0.0
                for k in range(3):   # the arm along the box's axes (its columns)
                    c = box_axes[body, 0, k] * a0 + box_axes[body, 1, k] * a1 \
                        + box_axes[body, 2, k] * a2
                    if not (box_lo[body, k] <= c <= box_hi[body, k]):
                        inside = False
                    if k == 0:
                        loc0 = c
                    elif k == 1:
                        loc1 = c
                    else:
                        loc2 = c
                if not inside:
                    loc0 = min(max(loc0, box_lo[body, 0]), box_hi[body, 0])
                    loc1 = min(max(loc1, box_lo[body, 1]), box_hi[body, 1])
                    loc2 = min(max(loc2, box_lo[body, 2]), box_hi[body, 2])
                    a0 = box_axes[body, 0, 0] * loc0 + box_axes[body, 0, 1] * loc1 \
                        + box_axes[body, 0, 2] * loc2
                    a1 = box_axes[body, 1, 0] * loc0 + box_axes[body, 1, 1] * loc1 \
                        + box_axes[body, 1, 2] * loc2
                    a2 = box_axes[body, 2, 0] * loc0 + box_axes[body, 2, 1] * loc1 \
                        + box_axes[body, 2, 2] * loc2
                length = math.sqrt(a0 * a0 + a1 * a1 + a2 * a2)
                lim = reach[body]
                if length > lim:
                    f = lim / length
                    a0 *= f
                    a1 *= f
                    a2 *= f
                if side == 0:
                    ra[i, p, 0], ra[i, p, 1], ra[i, p, 2] = a0, a1, a2
                else:
                    rb[i, p, 0], rb[i, p, 1], rb[i, p, 2] = a0, a1, a2


@kernel(refcount=False)
def start_state(src, count, friction, warm_normal, warm_friction, sep, dirs, imp, sep0):
    """Per manifold i (from the caller's manifold src[i]): the warm-start impulses imp (m, 12)
    (normal as carried, friction world vectors projected on the tangents, scaled into the
    friction disc) and the separations sep0 (m, 4) (UNUSED_SEPARATION on unused slots)."""
    for i in range(src.shape[0]):
        s = src[i]
        mu = friction[i]
        for r in range(12):
            imp[i, r] = 0.0
        for p in range(4):
            if p < count[i]:
                sep0[i, p] = sep[s, p]
                n = warm_normal[s, p]
                f0 = 0.0
                f1 = 0.0
                for k in range(3):
                    f0 += warm_friction[s, p, k] * dirs[i, 1, k]
                    f1 += warm_friction[s, p, k] * dirs[i, 2, k]
                lim = mu * n
                mag = math.hypot(f0, f1)
                if mag > lim:
                    scale = lim / (mag if mag > 0.0 else 1.0)
                    f0 *= scale
                    f1 *= scale
                imp[i, p] = n
                imp[i, 4 + 2 * p] = f0
                imp[i, 5 + 2 * p] = f1
            else:
                sep0[i, p] = UNUSED_SEPARATION


@kernel(refcount=False)
def impact_speeds(rows, idx, count, dirs, jang, vel, accel_n, h, sep, out):
    """out (K, 4) = the impact speeds of the manifolds rows (K,) (engine.dynamics.solver's
    docstring), accel_n (K,) and sep (K, 4) theirs: under the relative normal acceleration
    a, a point at separation s > 0 closing at v0 hits at -sqrt((v0 + a h/2)^2 - 2 a s); a
    touching one at min(v0 + a h/2, v0)."""
    for j in range(rows.shape[0]):
        i = rows[j]
        ia = idx[i, 0]
        ib = idx[i, 1]
        # Scalars, no helper given arrays (see solve_pass); the arithmetic of _row_velocity.
        dv0 = vel[ib, 0] - vel[ia, 0]
        dv1 = vel[ib, 1] - vel[ia, 1]
        dv2 = vel[ib, 2] - vel[ia, 2]
        wa0, wa1, wa2 = vel[ia, 3], vel[ia, 4], vel[ia, 5]
        wb0, wb1, wb2 = vel[ib, 3], vel[ib, 4], vel[ib, 5]
        a = accel_n[j]
        for p in range(4):
            vn0 = 0.0
            if p < count[i]:
                vn0 += dirs[i, 0, 0] * dv0
                vn0 += dirs[i, 0, 1] * dv1
                vn0 += dirs[i, 0, 2] * dv2
                vn0 += jang[i, p, 0] * wa0 + jang[i, p, 3] * wb0
                vn0 += jang[i, p, 1] * wa1 + jang[i, p, 4] * wb1
                vn0 += jang[i, p, 2] * wa2 + jang[i, p, 5] * wb2
            c0 = vn0 + 0.5 * a * h
            s = sep[j, p]
            if s > 0.0:
                out[j, p] = -math.sqrt(max(c0 * c0 - 2.0 * a * s, 0.0))
            else:
                out[j, p] = min(c0, vn0)


@kernel
def prepare(order, ia, ib, normal, points, separation, count, friction, restitution, accel_n,
            inv_mass, x_com, box_axes, box_lo, box_hi, reach, inv_inertia, round_axes, vel,
            warm_normal, warm_friction, h, idx, cnt, fr, rest, acc, ima, imb, axa, axb, dirs,
            ra, rb, jang, mang, kmat, eff, kp, imp, sep0, v_impact):
    """A pass's whole preparation (ContactSolver.__init__), manifold i of the sweep being the
    caller's order[i]: the gathers into sweep order, the directions, the clamped arms, the
    rows (build_rows), the warm-start impulses and separations (start_state) and the impact
    speeds. round_axes (N, 3), or (0, 3) when no body is round about an axis."""
    m = order.shape[0]
    for i in range(m):
        s = order[i]
        a = ia[s]
        b = ib[s]
        idx[i, 0] = a
        idx[i, 1] = b
        cnt[i] = count[s]
        fr[i] = friction[s]
        rest[i] = restitution[s]
        acc[i] = accel_n[s]
        ima[i] = inv_mass[a]
        imb[i] = inv_mass[b]
        for k in range(3):
            axa[i, k] = round_axes[a, k] if round_axes.shape[0] else 0.0
            axb[i, k] = round_axes[b, k] if round_axes.shape[0] else 0.0
    every = np.arange(m)
    set_directions(every, order, normal, dirs)
    set_arms(every, order, idx, cnt, points, x_com, box_axes, box_lo, box_hi, reach, ra, rb)
    build_rows(every, idx, cnt, ra, rb, dirs, ima, imb, inv_inertia, axa, axb, jang, mang, kmat,
               eff, kp)
    start_state(order, cnt, fr, warm_normal, warm_friction, separation, dirs, imp, sep0)
    impact_speeds(every, idx, cnt, dirs, jang, vel, acc, h, sep0, v_impact)


@kernel(refcount=False)
def impulses_by_manifold(order, imp, dirs, normal, world, tangent):
    """ContactSolver.impulses: the accumulated impulses of sweep manifold i (the caller's
    order[i]) back in the caller's order: normal (M, 4), friction along the tangents
    tangent (M, 4, 2) and as world vectors world (M, 4, 3)."""
    for i in range(order.shape[0]):
        s = order[i]
        for p in range(4):
            normal[s, p] = imp[i, p]
            f0 = imp[i, 4 + 2 * p]
            f1 = imp[i, 5 + 2 * p]
            tangent[s, p, 0] = f0
            tangent[s, p, 1] = f1
            for k in range(3):
                world[s, p, k] = f0 * dirs[i, 1, k] + f1 * dirs[i, 2, k]


@kernel
def replace_rows(r, f_normal, f_points, f_sep, f_count, f_ids, f_old_ids, f_accel, x_com,
                 box_axes, box_lo, box_hi, reach, inv_inertia, vel, dpose, h, idx, count,
                 friction, dirs, ra, rb, ima, imb, axa, axb, jang, mang, kmat, eff, kp, sep0,
                 imp, max_normal, v_impact, accel_n):
    """ContactSolver.replace: the sweep manifolds r (K,) taken again (f_...: their new
    normal, points, separations now, count, point ids, old point ids, accel_n). A new point
    whose feature id an old one had keeps its impulses (friction as a world vector, put on
    the new tangents and into the friction disc), its largest normal impulse and, once
    touching, its impact speed; the rest start at zero. Then the directions, arms, rows,
    separations at dpose = 0 (rebased on the new rows) and impact speeds of the new ones."""
    k = r.shape[0]
    every = np.arange(k)
    kept = np.zeros((k, 4), np.bool_)
    v_old = np.zeros((k, 4))
    new_imp = np.zeros((k, 12))
    new_max = np.zeros((k, 4))
    new_dirs = np.empty((k, 3, 3))
    set_directions(every, every, f_normal, new_dirs)
    for j in range(k):
        i = r[j]
        for p in range(f_count[j]):
            for s in range(count[i]):
                if f_ids[j, p] != f_old_ids[j, s]:
                    continue
                kept[j, p] = True
                new_imp[j, p] = imp[i, s]
                new_max[j, p] = max_normal[i, s]
                v_old[j, p] = v_impact[i, s]
                w0 = imp[i, 4 + 2 * s] * dirs[i, 1, 0] + imp[i, 5 + 2 * s] * dirs[i, 2, 0]
                w1 = imp[i, 4 + 2 * s] * dirs[i, 1, 1] + imp[i, 5 + 2 * s] * dirs[i, 2, 1]
                w2 = imp[i, 4 + 2 * s] * dirs[i, 1, 2] + imp[i, 5 + 2 * s] * dirs[i, 2, 2]
                f0 = w0 * new_dirs[j, 1, 0] + w1 * new_dirs[j, 1, 1] + w2 * new_dirs[j, 1, 2]
                f1 = w0 * new_dirs[j, 2, 0] + w1 * new_dirs[j, 2, 1] + w2 * new_dirs[j, 2, 2]
                lim = friction[i] * new_imp[j, p]
                mag = math.hypot(f0, f1)
                if mag > lim:
                    scale = lim / (mag if mag > 0.0 else 1.0)
                    f0 *= scale
                    f1 *= scale
                new_imp[j, 4 + 2 * p] = f0
                new_imp[j, 5 + 2 * p] = f1
                break
    sep_now = np.empty((k, 4))
    for j in range(k):
        i = r[j]
        dirs[i] = new_dirs[j]
        count[i] = f_count[j]
        for p in range(4):
            sep_now[j, p] = f_sep[j, p] if p < f_count[j] else UNUSED_SEPARATION
    set_arms(r, every, idx, count, f_points, x_com, box_axes, box_lo, box_hi, reach, ra, rb)
    build_rows(r, idx, count, ra, rb, dirs, ima, imb, inv_inertia, axa, axb, jang, mang, kmat,
               eff, kp)
    v_new = np.empty((k, 4))
    impact_speeds(r, idx, count, dirs, jang, vel, f_accel, h, sep_now, v_new)
    _rebase(r, idx, count, dirs, jang, sep0, dpose, sep_now)
    for j in range(k):
        i = r[j]
        for p in range(4):
            max_normal[i, p] = new_max[j, p]
            keep = kept[j, p] and sep_now[j, p] <= 0.0
            v_impact[i, p] = v_old[j, p] if keep else v_new[j, p]
        for c in range(12):
            imp[i, c] = new_imp[j, c]
        accel_n[i] = f_accel[j]


@kernel
def refresh_rows(bodies, turn, n, idx, count, ra, rb, axa, axb, dirs, ima, imb, inv_inertia,
                 jang, mang, kmat, eff, kp, sep0, dpose):
    """ContactSolver.refresh_inertia: the rows of every manifold touching bodies (K,) taken
    again, their arms (and round axes) turned by turn (K, 3, 3), each body's, with the world
    inverse inertia now; sep0 rebased so that each point keeps its separation now. n: the
    number of bodies."""
    slot = np.full(n, -1, np.int64)
    for k in range(bodies.shape[0]):
        slot[bodies[k]] = k
    m = idx.shape[0]
    rows = np.empty(m, np.int64)
    nr = 0
    for i in range(m):
        if slot[idx[i, 0]] >= 0 or slot[idx[i, 1]] >= 0:
            rows[nr] = i
            nr += 1
    rows = rows[:nr]
    sep_now = np.empty((nr, 4))          # the separations now, on the rows as they were
    separations(rows, idx, count, dirs, jang, sep0, dpose, sep_now)
    v = np.empty(3)
    for j in range(nr):
        i = rows[j]
        for side in range(2):
            s = slot[idx[i, side]]
            if s < 0:
                continue
            arm = ra if side == 0 else rb
            ax = axa if side == 0 else axb
            t = turn[s]
            for p in range(4):
                for c in range(3):
                    v[c] = arm[i, p, c]
                for c in range(3):
                    arm[i, p, c] = t[c, 0] * v[0] + t[c, 1] * v[1] + t[c, 2] * v[2]
            for c in range(3):
                v[c] = ax[i, c]
            for c in range(3):
                ax[i, c] = t[c, 0] * v[0] + t[c, 1] * v[1] + t[c, 2] * v[2]
    build_rows(rows, idx, count, ra, rb, dirs, ima, imb, inv_inertia, axa, axb, jang, mang,
               kmat, eff, kp)
    _rebase(rows, idx, count, dirs, jang, sep0, dpose, sep_now)
