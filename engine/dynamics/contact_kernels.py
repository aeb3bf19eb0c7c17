"""The contact solver's per-substep passes as compiled kernels (engine.core.jit).

ContactSolver (engine/dynamics/solver.py) prepares, once per collision pass, the rows of every manifold
as flat per-manifold arrays (manifold first, in the order the passes sweep them):

    idx (m, 2)         body indices a, b
    count (m,)         used point slots (0-4)
    jr, mjr (m, 12, 12) per row: the Jacobian J over [v_a, w_a, v_b, w_b] and M^-1 J^T
    kmat (m, 12, 12)   the Delassus matrix K = J M^-1 J^T of the manifold's rows
    eff (m, 12)        1 / K_rr (0 on unused rows)
    kp (m, 4, 4)       pseudo-inverse of the normal block of K (the block normal step)
    sep0 (m, 4)        separation at dpose = 0 (UNUSED_SEPARATION on unused slots)
    imp (m, 12)        accumulated impulses, max_normal (m, 4) their largest normal values
    friction (m,)      combined friction coefficient

Rows of a manifold (engine.dynamics.solver.ROWS): 0-3 the normals of point slots 0-3, then per slot p
its two tangents at 4 + 2p and 5 + 2p. Velocities vel (N, 6) = [linear, angular] and the
pass's displacements dpose (N, 6) are updated in place.

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

# Floor of a friction magnitude before it divides the friction limit: 0 / tiny = 0 keeps a
# zero limit at zero impulse.
TINY = 1e-200


@kernel
def warm_start(vel, idx, count, mjr, imp):
    """vel += M^-1 J^T imp for every manifold (the impulses carried into the substep)."""
    for i in range(idx.shape[0]):
        a = idx[i, 0]
        b = idx[i, 1]
        npts = count[i]
        for k in range(6):
            da = 0.0
            db = 0.0
            for r in range(4 + 2 * npts):
                if npts <= r < 4:
                    continue            # unused slots' rows: no impulse
                da += imp[i, r] * mjr[i, r, k]
                db += imp[i, r] * mjr[i, r, 6 + k]
            vel[a, k] += da
            vel[b, k] += db


@kernel
def separations(idx, jr, sep0, dpose, out):
    """out (m, 4) = each point's separation now: sep0 + J_n dpose (linearised; see solver)."""
    for i in range(idx.shape[0]):
        a = idx[i, 0]
        b = idx[i, 1]
        for p in range(4):
            s = 0.0
            for k in range(6):
                s += jr[i, p, k] * dpose[a, k] + jr[i, p, 6 + k] * dpose[b, k]
            out[i, p] = sep0[i, p] + s


@kernel
def solve_pass(vel, dpose, use_bias, idx, count, jr, mjr, kmat, eff, kp, sep0, imp,
               max_normal, friction, soft):
    """One Gauss-Seidel sweep over all manifolds: the biased pass (use_bias) or relax.

    Per manifold: the soft coefficients of its normal rows from their separation now, the
    block normal step where it needs no clamping, the sequential normal sweep with
    accumulated-impulse clamping, Coulomb friction with the disc clamp, then the body
    velocities (why each stage is there: ContactSolver.solve)."""
    v = np.empty(12)
    u = np.empty(12)
    lam0 = np.empty(12)
    a_n = np.empty(4)       # gain of each normal row (0: the row keeps its impulse)
    ab = np.empty(4)        # gain * bias
    rhs = np.empty(4)       # u + bias of the block step
    msc = np.empty(4)       # soft mass scale
    isc = np.empty(4)       # soft impulse scale (the leak of the accumulated impulse)
    scratch = np.empty(4)
    for i in range(idx.shape[0]):
        a = idx[i, 0]
        b = idx[i, 1]
        for k in range(6):
            v[k] = vel[a, k]
            v[6 + k] = vel[b, k]
        block = _normal_gains(i, a, b, use_bias, dpose, jr, sep0, eff, soft, a_n, ab, rhs,
                              msc, isc)
        npts = count[i]
        # Rows of unused slots are zero and keep a zero impulse: only the live rows (the
        # normals of slots < npts, their tangents) are read and applied.
        for r in range(12):
            lam0[r] = imp[i, r]
            u[r] = 0.0
            if r < npts or 4 <= r < 4 + 2 * npts:
                s = 0.0
                for k in range(12):
                    s += jr[i, r, k] * v[k]
                u[r] = s
        for p in range(4):
            rhs[p] += u[p]
        if block:
            _block_step(i, kp, kmat, imp, u, rhs, msc, isc, scratch)
        _normal_sweep(i, npts, kmat, imp, u, a_n, ab, isc, scratch)
        for p in range(npts):
            if imp[i, p] > max_normal[i, p]:
                max_normal[i, p] = imp[i, p]
        _friction_sweep(i, npts, kmat, eff, imp, u, friction[i])
        _apply(i, a, b, vel, v, mjr, imp, lam0, npts, True)


@kernel(inline="always")
def _normal_gains(i, a, b, use_bias, dpose, jr, sep0, eff, soft, a_n, ab, bias, msc, isc):
    """Soft coefficients of manifold i's normal rows; bias (4,) gets each row's bias
    velocity. Returns whether the block normal step may be tried.

    A point apart (s > 0) is speculative: in the biased pass its bias s/h lets the bodies
    close exactly the gap, rigidly; in relax, if still apart by more than the slop
    (engine.dynamics.solver.RELAX_SLOP), it keeps its impulse (gain 0) and the manifold skips the
    block step. A touching point is soft, its bias the spring's push-out, capped."""
    inv_h = soft[0]
    block = True
    for p in range(4):
        s = sep0[i, p]
        for k in range(6):
            s += jr[i, p, k] * dpose[a, k] + jr[i, p, 6 + k] * dpose[b, k]
        e = eff[i, p]
        if use_bias:
            if s > 0.0:
                bias[p] = s * inv_h
                msc[p] = 1.0
                isc[p] = 0.0
            else:
                bias[p] = max(soft[1] * s, -soft[4])
                msc[p] = soft[2]
                isc[p] = soft[3]
            a_n[p] = e * msc[p]
            ab[p] = a_n[p] * bias[p]
        else:
            bias[p] = 0.0
            msc[p] = 1.0
            isc[p] = 0.0
            ab[p] = 0.0
            if s > soft[5] and e > 0.0:
                a_n[p] = 0.0
                block = False
            else:
                a_n[p] = e
    return block


@kernel(inline="always")
def _block_step(i, kp, kmat, imp, u, rhs, msc, isc, new):
    """The 4 normal rows of manifold i solved together, lam = lam0 - Kp (u + bias), softened
    per row; taken only if no row needs a pull (a clamped block answer is far off). new: (4,)
    scratch."""
    for p in range(4):
        s = 0.0
        for q in range(4):
            s += kp[i, p, q] * rhs[q]
        new[p] = imp[i, p] - s * msc[p] - isc[p] * imp[i, p]
        if not new[p] >= 0.0:      # a NaN fails too
            return
    for p in range(4):
        d = new[p] - imp[i, p]
        if d != 0.0:
            for r in range(12):
                u[r] += kmat[i, p, r] * d
        imp[i, p] = new[p]


@kernel(inline="always")
def _normal_sweep(i, npts, kmat, imp, u, a_n, ab, isc, start):
    """Sequential soft normal rows, new = max((1 - isc) old - a u - ab, 0); the later normal
    rows read each change at once, the tangent rows all of them after the sweep. start: (4,)
    scratch."""
    for p in range(npts):
        start[p] = imp[i, p]
    for p in range(npts):
        old = imp[i, p]
        new = (1.0 - isc[p]) * old - a_n[p] * u[p] - ab[p]
        if new < 0.0:
            new = 0.0
        d = new - old
        for q in range(p + 1, npts):
            u[q] += kmat[i, p, q] * d
        imp[i, p] = new
    for p in range(npts):
        d = imp[i, p] - start[p]
        if d != 0.0:
            for r in range(4, 4 + 2 * npts):
                u[r] += kmat[i, p, r] * d


@kernel(inline="always")
def _friction_sweep(i, npts, kmat, eff, imp, u, mu):
    """Coulomb friction point by point: the two tangent impulses clamped together to the disc
    mu * (the point's normal impulse); later tangent rows read each change."""
    end = 4 + 2 * npts
    for p in range(npts):
        r = 4 + 2 * p
        lim = mu * imp[i, p]
        o0 = imp[i, r]
        o1 = imp[i, r + 1]
        f0 = o0 - eff[i, r] * u[r]
        f1 = o1 - eff[i, r + 1] * u[r + 1]
        mag = math.hypot(f0, f1)
        scale = lim / (mag if mag > TINY else TINY)
        if scale < 1.0:
            f0 *= scale
            f1 *= scale
        d0 = f0 - o0
        d1 = f1 - o1
        for s in range(r + 2, end):
            u[s] += kmat[i, r, s] * d0 + kmat[i, r + 1, s] * d1
        imp[i, r] = f0
        imp[i, r + 1] = f1


@kernel(inline="always")
def _apply(i, a, b, vel, v, mjr, imp, lam0, npts, tangents):
    """Bodies a, b of manifold i leave with v + M^-1 J^T (imp - lam0) over the rows of its
    npts used slots (their tangent rows too if tangents). Fixed bodies have zero M^-1 J^T:
    they are written back unchanged."""
    end = 4 + 2 * npts if tangents else 4
    for k in range(6):
        da = 0.0
        db = 0.0
        for r in range(end):
            if npts <= r < 4:
                continue
            d = imp[i, r] - lam0[r]
            da += d * mjr[i, r, k]
            db += d * mjr[i, r, 6 + k]
        vel[a, k] = v[k] + da
        vel[b, k] = v[6 + k] + db


@kernel
def restitution(vel, idx, count, jr, mjr, kmat, eff, kp, imp, max_normal, v_impact, coef, accel_n,
                h, threshold):
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
        for k in range(6):
            v[k] = vel[a, k]
            v[6 + k] = vel[b, k]
        for r in range(12):
            lam0[r] = imp[i, r]
        ok = True
        for p in range(4):
            s = 0.0
            for k in range(12):
                s += jr[i, p, k] * v[k]
            vn[p] = s
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
        _apply(i, a, b, vel, v, mjr, imp, lam0, count[i], False)


@kernel
def build_rows(ra, rb, dirs, valid, ima, imb, iia, iib, axa, axb, jr, mjr, kmat, eff):
    """The rows of m manifolds into jr, mjr, kmat (m, 12, 12) and eff (m, 12), from lever arms
    ra, rb (m, 4, 3), directions dirs (m, 3, 3) (normal, tangents), used slots valid (m, 4),
    inverse masses ima, imb (m,), world inverse inertias iia, iib (m, 3, 3) and the axes
    axa, axb (m, 3) of round bodies (zero elsewhere), which their normal rows leave out (see
    engine.dynamics.solver._rows).

    Row r is J = [-d, -ra x d, d, rb x d] with d the direction of row r at its point slot
    (zero on unused slots), and M^-1 J^T the same weighted by the inverse mass and inertia.
    K = J M^-1 J^T by parts: the angular part is the product over the 6 angular terms; the
    directions of a manifold are orthonormal, so the linear part is 1/m_a + 1/m_b exactly
    where two live rows share a direction and exactly 0 elsewhere (a product over J would
    give that to round-off)."""
    ang = np.empty((12, 6))     # (ra x d, rb x d) per row
    ang_m = np.empty((12, 6))   # (I_a^-1 (ra x d), I_b^-1 (rb x d)) per row
    for i in range(ra.shape[0]):
        for r in range(12):
            p = r if r < 4 else (r - 4) // 2
            di = 0 if r < 4 else 1 + (r - 4) % 2
            live = 1.0 if valid[i, p] else 0.0
            d0 = dirs[i, di, 0] * live
            d1 = dirs[i, di, 1] * live
            d2 = dirs[i, di, 2] * live
            for side in range(2):
                arm = ra if side == 0 else rb
                c0 = arm[i, p, 1] * d2 - arm[i, p, 2] * d1
                c1 = arm[i, p, 2] * d0 - arm[i, p, 0] * d2
                c2 = arm[i, p, 0] * d1 - arm[i, p, 1] * d0
                if r < 4:
                    # A round body's normal rows have no part along its axis (its surface
                    # does not move as it rolls).
                    ax = axa if side == 0 else axb
                    t = c0 * ax[i, 0] + c1 * ax[i, 1] + c2 * ax[i, 2]
                    c0 -= t * ax[i, 0]
                    c1 -= t * ax[i, 1]
                    c2 -= t * ax[i, 2]
                ang[r, 3 * side] = c0
                ang[r, 3 * side + 1] = c1
                ang[r, 3 * side + 2] = c2
                inv = iia if side == 0 else iib
                for k in range(3):
                    ang_m[r, 3 * side + k] = (inv[i, k, 0] * c0 + inv[i, k, 1] * c1
                                              + inv[i, k, 2] * c2)
            for k in range(3):
                d = dirs[i, di, k] * live
                jr[i, r, k] = -d
                jr[i, r, 3 + k] = -ang[r, k]
                jr[i, r, 6 + k] = d
                jr[i, r, 9 + k] = ang[r, 3 + k]
                mjr[i, r, k] = -ima[i] * d
                mjr[i, r, 3 + k] = -ang_m[r, k]
                mjr[i, r, 6 + k] = imb[i] * d
                mjr[i, r, 9 + k] = ang_m[r, 3 + k]
        lin = ima[i] + imb[i]
        for r in range(12):
            p = r if r < 4 else (r - 4) // 2
            di = 0 if r < 4 else 1 + (r - 4) % 2
            for s in range(12):
                q = s if s < 4 else (s - 4) // 2
                ds = 0 if s < 4 else 1 + (s - 4) % 2
                acc = 0.0
                for j in range(6):
                    acc += ang[r, j] * ang_m[s, j]
                if di == ds and valid[i, p] and valid[i, q]:
                    acc += lin
                kmat[i, r, s] = acc
            kr = kmat[i, r, r]
            eff[i, r] = 1.0 / kr if kr > 1e-12 else 0.0
