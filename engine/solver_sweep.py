"""The colour sweeps of ContactSolver.solve, written for numpy call overhead.

On small scenes a sweep costs what its numpy calls cost, not their arithmetic: 27 tumbling
cubes hold 43 manifolds in 6 colours, about 7 manifolds a colour, and a colour took some 140
calls per sweep (fancy indexing, np.where, .all(), views made afresh, Python scalars converted
per call) at 47 sweeps a frame. This module runs the same arithmetic as the sweep described in
engine/solver.py, in the same order on every element, with fewer and cheaper calls:

- each colour's views of the solver's arrays (rows, Delassus blocks, impulses, the per-point
  slices the sequential sweeps read) are made once per solver and held across the sweeps of
  all substeps (the manifolds and their colours do not change within a collision pass;
  refresh_inertia updates those arrays in place, so the views stay valid);
- body velocities move through flat take / put with precomputed indices instead of fancy
  indexing, and scratch results go to preallocated buffers (out=);
- negations are folded into the next subtraction: IEEE rounding is symmetric, so
  -(a + b) == (-a) - b and sum(k * -x) == -sum(k * x) bit for bit;
- "all rows >= 0" is count_nonzero of a comparison (a NaN fails it, as it failed .all()),
  clamps take array operands (a Python float is converted on every call);
- work that provably changes nothing is skipped: a block step that no manifold of the colour
  accepts (it would add K * 0 to the row velocities).

The results equal those of the reference sweep (tests/solver_reference.py) bit for bit, up to
the sign of a zero (x + 0.0 turns -0.0 into +0.0; no later operation can tell the two apart):
tests/test_solver_sweep.py checks it on random manifolds and whole world runs.
"""
import numpy as np

try:  # np.einsum without its Python wrapper and dispatch (the same C routine: same bits)
    from numpy._core.multiarray import c_einsum as _einsum
except ImportError:  # pragma: no cover - numpy without the private module
    _einsum = np.einsum

# After a colour's one-product sweep had to fall back to the sequential sweep, the number of
# solve passes it goes straight to the sequential sweep (see ContactSolver.solve).
RETRY_AFTER = 4
# Floor of a friction magnitude before it divides the friction limit: 0 / tiny = 0 keeps a
# zero limit at zero impulse.
_TINY = 1e-200


class Colour:
    """One colour's views of a ContactSolver's arrays and its scratch buffers (see module
    docstring). ``ci`` is the colour's index in ContactSolver.offsets."""

    def __init__(self, s, ci, c0, c1, shared):
        sl = slice(c0, c1)
        mc = c1 - c0
        npts = s.max_count[ci]
        self.ci, self.sl, self.mc, self.npts, self.shared = ci, sl, mc, npts, shared
        self.idx = s.idx[sl]
        rows = self.idx.reshape(-1)
        self.flat = (rows[:, None] * 6 + np.arange(6)).reshape(-1)  # into vel.reshape(-1)
        self.jr, self.mjr = s.jr[sl], s.mjr[sl]
        imp, kmat, eff = s.imp, s.kmat, s.eff
        self.kp = s.k_pinv[:, :, sl]
        self.k4 = kmat[:4, :, sl]
        self.k4t = kmat[:4, 4:, sl]
        self.imp, self.imp4 = imp[:, sl], imp[:4, sl]
        self.lam0 = np.empty((12, mc))
        self.lam04 = self.lam0[:4]
        self.zero4 = np.zeros((4, mc))   # never written: an array operand of the clamps
        self.zero = self.zero4[0]
        self.ge = np.empty((4, mc), dtype=bool)
        self.buf4 = np.empty((4, mc))
        # Sequential normal sweep over the npts used slots.
        self.impn = [imp[p, sl] for p in range(npts)]
        self.impn_all = imp[:npts, sl]
        self.kn = [kmat[p, p + 1:npts, sl] for p in range(npts)]
        self.knt = kmat[:npts, 4:, sl]
        self.start = np.empty((npts, mc))
        self.mx = s.max_normal[:npts, sl]
        self.fric = s.friction[sl]
        self.lim = np.empty((npts, mc))
        # Friction sweeps: one-product operator, then per point slot its two tangent rows.
        nf = 2 * npts
        self.sf = s.sweep_friction[:nf, :nf, sl]
        self.impf_all = imp[4:4 + nf, sl]
        self.impf = [imp[4 + 2 * p:6 + 2 * p, sl] for p in range(npts)]
        self.efft = [eff[4 + 2 * p:6 + 2 * p, sl] for p in range(npts)]
        self.kf = [kmat[4 + 2 * p:6 + 2 * p, 6 + 2 * p:4 + nf, sl] for p in range(npts)]
        self.f2 = np.empty((2, mc))
        self.df = np.empty((2, mc))
        self.mag = np.empty(mc)
        self.tiny = np.full(mc, _TINY)
        self.one = np.ones(mc)
        self.sq = np.empty((2, npts, mc))
        self.lim2 = np.empty((npts, mc))
        self.inside = np.empty((npts, mc), dtype=bool)


def colours(s):
    """The non-empty colours of solver s as Colour records."""
    out = []
    last = len(s.offsets) - 2
    for ci, (c0, c1) in enumerate(zip(s.offsets[:-1], s.offsets[1:])):
        if c1 > c0:
            out.append(Colour(s, ci, c0, c1, s.overflow and ci == last))
    return out


def sweep(s, cols, vel, coef):
    """One Gauss-Seidel sweep of solver s over its colours cols. coef: the sweep's soft
    coefficients from ContactSolver.solve, (use_bias, bias, ab, a_n, mscale, iscale, keep,
    sweep_n, skip_m): in relax ab, mscale, iscale, keep are None and skip_m is None or the
    manifolds whose block step is skipped."""
    use_bias, bias, ab, a_n, mscale, iscale, keep, sweep_n, skip_m = coef
    fast = s.one_product_sweeps
    wait_n, wait_f = s._wait_normal, s._wait_friction
    flat_vel = vel.reshape(-1)
    if not np.shares_memory(flat_vel, vel):  # pragma: no cover - vel is C-contiguous in use
        raise ValueError("vel must be a C-contiguous (N, 6) array")
    for c in cols:
        sl, ci, npts = c.sl, c.ci, c.npts
        v = flat_vel.take(c.flat).reshape(c.mc, 12)
        u = _einsum("mrk,mk->rm", c.jr, v)  # (12, mc) row velocities
        u4 = u[:4]
        lam0, l4 = c.lam0, c.lam04
        np.copyto(lam0, c.imp)
        # Block normal step: new = lam0 + dl, dl = -Kp (u + bias) [* mscale - iscale lam0].
        e = c.buf4
        if use_bias:
            _einsum("pqm,qm->pm", c.kp, u4 + bias[:, sl], out=e)
            e *= mscale[:, sl]
            e += iscale[:, sl] * l4
        else:
            _einsum("pqm,qm->pm", c.kp, u4, out=e)
        new = l4 - e
        # Taken only where no row needs clamping (see ContactSolver.solve).
        ge = np.greater_equal(new, c.zero4, out=c.ge)
        if skip_m is None and np.count_nonzero(ge) == ge.size:
            take = True  # every manifold takes it
        else:
            ok = ge.all(axis=0)
            if skip_m is not None:
                ok &= ~skip_m[sl]
            n_ok = np.count_nonzero(ok)
            take = n_ok > 0  # else no manifold takes it: it would add K * 0 to u
            if take and n_ok < c.mc:
                new = np.where(ok, new, l4)
        if take:
            u += _einsum("psm,pm->sm", c.k4, new - l4)
            np.copyto(c.imp4, new)
        # Normal sweep: one product when no row clamps, else sequential (see solve).
        seq = npts
        if wait_n[ci] or not fast:
            wait_n[ci] = max(wait_n[ci] - 1, 0)
        else:
            lam = c.imp4
            x = a_n[:, sl] * u4          # r = -x: x = a u + ab + iscale lam
            if use_bias:
                x += ab[:, sl]
                x += iscale[:, sl] * lam
            d = _einsum("pqm,qm->pm", sweep_n[:, :, sl], x)  # -(one-product d)
            new = lam - d
            if np.count_nonzero(np.greater_equal(new, c.zero4, out=c.ge)) == 4 * c.mc:
                np.copyto(lam, new)
                u[4:] -= _einsum("psm,pm->sm", c.k4t, d)
                seq = 0
            else:
                wait_n[ci] = RETRY_AFTER
        if seq:
            _normal_sequential(c, u, a_n, ab, keep, sl)
        np.maximum(c.mx, c.impn_all, out=c.mx)
        lim = np.multiply(c.fric, c.impn_all, out=c.lim)
        seq = npts
        if wait_f[ci] or not fast:
            wait_f[ci] = max(wait_f[ci] - 1, 0)
        else:
            f = c.impf_all - _einsum("rsm,sm->rm", c.sf, u[4:4 + 2 * npts])
            sq = c.sq
            np.multiply(f[0::2], f[0::2], out=sq[0])
            np.multiply(f[1::2], f[1::2], out=sq[1])
            np.add(sq[0], sq[1], out=sq[0])
            np.multiply(lim, lim, out=c.lim2)
            inside = np.less_equal(sq[0], c.lim2, out=c.inside)
            if np.count_nonzero(inside) == inside.size:
                np.copyto(c.impf_all, f)
                seq = 0
            else:
                wait_f[ci] = RETRY_AFTER
        if seq:
            _friction_sequential(c, u, lim)
        dimp = np.subtract(c.imp, lam0, out=lam0)
        dv = _einsum("rm,mrk->mk", dimp, c.mjr)
        if c.shared:
            scatter_add(vel, c.idx, dv)
        else:
            v += dv
            flat_vel[c.flat] = v.reshape(-1)  # conflict-free colour: plain writes


def _normal_sequential(c, u, a_n, ab, keep, sl):
    """Gauss-Seidel over the normal rows with accumulated-impulse clamping; only the later
    normal rows are read again, the tangent rows take all the normal changes at once after."""
    npts = c.npts
    np.copyto(c.start, c.impn_all)
    for p in range(npts):
        pn = c.impn[p]
        new = a_n[p, sl] * u[p]
        if keep is not None:
            new = np.subtract(pn * keep[p, sl], new, out=new)
            new -= ab[p, sl]
        else:
            new = np.subtract(pn, new, out=new)
        np.maximum(new, c.zero, out=new)
        if p + 1 < npts:
            u[p + 1:npts] += c.kn[p] * (new - pn)
        np.copyto(pn, new)
    u[4:] += _einsum("psm,pm->sm", c.knt, np.subtract(c.impn_all, c.start, out=c.start))


def _friction_sequential(c, u, lim):
    """Coulomb friction point by point, two tangents clamped together to the disc mu * Pn;
    only the later tangent rows are read again."""
    npts = c.npts
    f, df, mag = c.f2, c.df, c.mag
    for p in range(npts):
        r = 4 + 2 * p
        old = c.impf[p]
        np.multiply(c.efft[p], u[r:r + 2], out=f)
        np.subtract(old, f, out=f)
        np.hypot(f[0], f[1], out=mag)
        # min(1, lim / mag): 1 inside the disc, and 0/tiny = 0 keeps mag = lim = 0 at 0.
        np.maximum(mag, c.tiny, out=mag)
        np.divide(lim[p], mag, out=mag)
        np.minimum(mag, c.one, out=mag)
        f *= mag
        if p + 1 < npts:
            u[r + 2:4 + 2 * npts] += _einsum("qsm,qm->sm", c.kf[p],
                                             np.subtract(f, old, out=df))
        np.copyto(old, f)


def scatter_add(vel, idx, dv):
    """vel[idx[:, 0]] += dv[:, :6]; vel[idx[:, 1]] += dv[:, 6:], summing duplicates (bincount)."""
    n = vel.shape[0]
    flat = (idx.reshape(-1, 1) * 6 + np.arange(6)).ravel()
    vel += np.bincount(flat, weights=dv.reshape(-1), minlength=n * 6).reshape(n, 6)
