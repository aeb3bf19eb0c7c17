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
  takes (it would add K * 0 to the row velocities); a friction slot whose limit is zero in
  every manifold of the colour only takes its old impulse back out of the later rows; a relax
  normal slot whose gain is zero in every manifold (speculative or unused rows); the largest
  normal impulses are taken once per sweep, not per colour.

The results equal those of the reference sweep (tests/solver_reference.py) bit for bit, up to
the sign of a zero (x + 0.0 turns -0.0 into +0.0; no later operation can tell the two apart),
for finite inputs: tests/test_solver_sweep.py checks it on random manifolds and whole world
runs. On top of that, with ContactSolver.skip_inert_colours (the default), a colour that
provably changes nothing in a sweep is passed over altogether (_inert): that differs from the
reference by round-off only (a block step that is zero in exact arithmetic, and which later
pass a colour next tries its one-product sweeps in).
"""
import numpy as np

# np.einsum and np.count_nonzero without their Python wrappers (the same C routines, so the
# same bits; a few microseconds a call saved, and the sweeps make tens of thousands a frame).
try:
    from numpy._core import multiarray as _multiarray
    _einsum = getattr(_multiarray, "c_einsum", np.einsum)
    _count = getattr(_multiarray, "count_nonzero", np.count_nonzero)
except ImportError:  # pragma: no cover - a numpy without the private module: the wrappers
    _einsum, _count = np.einsum, np.count_nonzero

# After a colour's one-product sweep had to fall back to the sequential sweep, the number of
# solve passes it goes straight to the sequential sweep (see ContactSolver.solve).
RETRY_AFTER = 4
# For engine.solver.
einsum, count = _einsum, _count


def same(a, b):
    """Whether bool arrays a and b (same shape, or b None) are equal (np.array_equal costs
    several microseconds in Python wrappers, and solve asks once per sweep)."""
    return b is not None and not _count(a != b)


# Module-level names for the calls of the hot loops (one global lookup instead of two).
_copyto = np.copyto
_add, _sub, _mul, _div = np.add, np.subtract, np.multiply, np.divide
_max, _min, _hypot, _ge, _le = np.maximum, np.minimum, np.hypot, np.greater_equal, np.less_equal
_max_reduce, _and_reduce = np.maximum.reduce, np.logical_and.reduce
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
        nf = 2 * npts
        self.ci, self.sl, self.mc, self.npts, self.shared = ci, sl, mc, npts, shared
        self.idx = s.idx[sl]
        rows = self.idx.reshape(-1)
        self.flat = (rows[:, None] * 6 + np.arange(6)).reshape(-1)  # into vel.reshape(-1)
        self.v = np.empty(mc * 12)
        self.v2 = self.v.reshape(mc, 12)
        self.u = u = np.empty((12, mc))  # row velocities u = J v
        self.u4, self.ut = u[:4], u[4:]
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
        self.new4 = np.empty((4, mc))
        # Sequential normal sweep over the npts used slots: per slot p, its impulse row, its
        # row velocity, the later normal rows' velocities and their Delassus column.
        self.nslots = [(p, imp[p, sl], u[p], u[p + 1:npts], kmat[p, p + 1:npts, sl],
                        p + 1 < npts) for p in range(npts)]
        self.impn_all = imp[:npts, sl]
        self.knt = kmat[:npts, 4:, sl]
        self.start = np.empty((npts, mc))
        self.nbuf = np.empty(mc)
        self.dn = np.empty(mc)
        self.fric = s.friction[sl]
        self.lim = np.empty((npts, mc))
        self.relax_key = self.relax_slots = self.relax_block = None  # see _relax_pattern
        # Friction sweeps: one-product operator, then per point slot its two tangent rows.
        self.sf = s.sweep_friction[:nf, :nf, sl]
        self.impf_all = imp[4:4 + nf, sl]
        self.uf_all = u[4:4 + nf]
        self.fslots = [(p, imp[4 + 2 * p:6 + 2 * p, sl], eff[4 + 2 * p:6 + 2 * p, sl],
                        u[4 + 2 * p:6 + 2 * p], u[6 + 2 * p:4 + nf],
                        kmat[4 + 2 * p:6 + 2 * p, 6 + 2 * p:4 + nf, sl], p + 1 < npts)
                       for p in range(npts)]
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
    fast, skip_inert = s.one_product_sweeps, s.skip_inert_colours
    wait_n, wait_f = s._wait_normal, s._wait_friction
    flat_vel = vel.reshape(-1)
    if not np.may_share_memory(flat_vel, vel):  # a copy: the world's vel is C-contiguous
        raise ValueError("ContactSolver.solve: vel must be a C-contiguous (N, 6) array "
                         "(the sweep writes through a flat view of it)")
    for c in cols:
        sl, ci = c.sl, c.ci
        idle = skip_inert and not _count(c.imp)  # no impulse in the colour yet
        if not use_bias:
            _relax_pattern(c, a_n, skip_m, sl)
            if idle and not c.relax_slots:
                _pass_over(wait_n, wait_f, ci)  # every row speculative: see _inert
                continue
        v = c.v2
        flat_vel.take(c.flat, out=c.v)
        u, u4 = c.u, c.u4
        _einsum("mrk,mk->rm", c.jr, v, out=u)
        if idle and use_bias and _inert(c, u4, bias[:, sl]):
            _pass_over(wait_n, wait_f, ci)
            continue
        lam0, l4 = c.lam0, c.lam04
        lam0[...] = c.imp
        # Block normal step: new = lam0 + dl, dl = -Kp (u + bias) [* mscale - iscale lam0].
        e = c.buf4
        if use_bias:
            _einsum("pqm,qm->pm", c.kp, _add(u4, bias[:, sl], out=c.new4), out=e)
            e *= mscale[:, sl]
            e += _mul(iscale[:, sl], l4, out=c.new4)
            _block_step(c, u, _sub(l4, e, out=c.new4), None)
        elif c.relax_block is not False:  # False: every manifold skips it
            _einsum("pqm,qm->pm", c.kp, u4, out=e)
            _block_step(c, u, _sub(l4, e, out=c.new4), c.relax_block)
        # Normal sweep: one product when no row clamps, else sequential (see solve).
        seq = True
        if wait_n[ci] or not fast:
            wait_n[ci] = max(wait_n[ci] - 1, 0)
        else:
            lam = c.imp4
            x = _mul(a_n[:, sl], u4, out=e)  # r = -x: x = a u + ab + iscale lam
            if use_bias:
                x += ab[:, sl]
                x += _mul(iscale[:, sl], lam, out=c.new4)
            d = _einsum("pqm,qm->pm", sweep_n[:, :, sl], x)  # -(one-product d)
            new = _sub(lam, d, out=c.new4)
            if _count(_ge(new, c.zero4, out=c.ge)) == 4 * c.mc:
                _copyto(lam, new)
                c.ut -= _einsum("psm,pm->sm", c.k4t, d)
                seq = False
            else:
                wait_n[ci] = RETRY_AFTER
        if seq:
            if keep is not None:
                _normal_sequential_biased(c, a_n, ab, keep, sl)
            else:
                _normal_sequential_relax(c, a_n, sl)
        lim = _mul(c.fric, c.impn_all, out=c.lim)
        seq = True
        if wait_f[ci] or not fast:
            wait_f[ci] = max(wait_f[ci] - 1, 0)
        else:
            f = c.impf_all - _einsum("rsm,sm->rm", c.sf, c.uf_all)
            sq = c.sq
            _mul(f[0::2], f[0::2], out=sq[0])
            _mul(f[1::2], f[1::2], out=sq[1])
            _add(sq[0], sq[1], out=sq[0])
            _mul(lim, lim, out=c.lim2)
            inside = _le(sq[0], c.lim2, out=c.inside)
            if _count(inside) == inside.size:
                _copyto(c.impf_all, f)
                seq = False
            else:
                wait_f[ci] = RETRY_AFTER
        if seq:
            _friction_sequential(c, lim)
        dimp = _sub(c.imp, lam0, out=lam0)
        dv = _einsum("rm,mrk->mk", dimp, c.mjr)
        if c.shared:
            scatter_add(vel, c.idx, dv)
        else:
            v += dv
            flat_vel[c.flat] = c.v  # conflict-free colour: plain writes
    # Largest normal impulses (restitution reads them): a colour's rows change only while it
    # is swept, so their values at the end of the sweep are those at the end of its turn.
    _max(s.max_normal, s.imp[:4], out=s.max_normal)


def _inert(c, u4, bias):
    """Whether a colour without impulse keeps none in this biased sweep: every normal row
    has u + bias >= 0 (on a speculative row bias = s / h: the bodies do not close the gap
    within the substep; on a touching one u + bias >= 0 asks for no push). The sequential
    sweep then leaves each row at max(-a (u + bias), 0) = 0 and u unchanged, so every
    friction limit stays zero and with it the friction; the block step is -Kp (u + bias),
    and as Kp is positive semi-definite, where it is taken (no entry negative) it is zero up
    to round-off. The whole colour would change nothing.

    In relax a colour without impulse whose rows are all speculative (zero gain, no block
    step) changes nothing either, exactly."""
    return _count(_ge(_add(u4, bias, out=c.new4), c.zero4, out=c.ge)) == c.ge.size


def _pass_over(wait_n, wait_f, ci):
    """A skipped colour's one-product retry counters count the pass like a waiting one."""
    if wait_n[ci]:
        wait_n[ci] -= 1
    if wait_f[ci]:
        wait_f[ci] -= 1


def _block_step(c, u, new, allowed):
    """Take the block normal step's answer new (4, mc) in the manifolds where no row needs
    clamping (see ContactSolver.solve) and that are allowed (None: all); update u."""
    l4, e = c.lam04, c.buf4
    ge = _ge(new, c.zero4, out=c.ge)
    if allowed is None and _count(ge) == ge.size:  # every manifold takes it
        u += _einsum("psm,pm->sm", c.k4, _sub(new, l4, out=e))
        c.imp4[...] = new
        return
    ok = _and_reduce(ge, axis=0)
    if allowed is not None:
        ok &= allowed
    if _count(ok):  # else no manifold takes it: it would add K * 0 to u
        # (new - lam0) * ok is new - lam0 where taken and 0 elsewhere, as the change of
        # np.where(ok, new, lam0) is.
        u += _einsum("psm,pm->sm", c.k4, _mul(_sub(new, l4, out=e), ok, out=e))
        _copyto(c.imp4, new, where=ok)


def _relax_pattern(c, a_n, skip_m, sl):
    """Per-colour view of the relax pattern (which rows are speculative: see
    ContactSolver.solve), kept while the pattern's gain array a_n is the same object:
    c.relax_slots, the normal slots whose gain is nonzero in some manifold of the colour (the
    others keep their impulse and change nothing); c.relax_block, the manifolds allowed the
    block step (a mask, None: all are, False: none is)."""
    if c.relax_key is a_n:
        return
    gain = _max_reduce(a_n[:c.npts, sl], axis=1).tolist()
    c.relax_key = a_n
    c.relax_slots = [t for t, g in zip(c.nslots, gain) if g != 0.0]
    if skip_m is None:
        c.relax_block = None
    else:
        allowed = ~skip_m[sl]
        c.relax_block = allowed if _count(allowed) else False


def _normal_sequential_biased(c, a_n, ab, keep, sl):
    """Gauss-Seidel over the normal rows with accumulated-impulse clamping,
    new = max(keep * old - a u - ab, 0); only the later normal rows are read again, the
    tangent rows take all the normal changes at once after."""
    new, dn, zero = c.nbuf, c.dn, c.zero
    _copyto(c.start, c.impn_all)
    for p, pn, up, ulater, kcol, later in c.nslots:
        _mul(a_n[p, sl], up, out=new)
        _sub(_mul(pn, keep[p, sl], out=dn), new, out=new)
        new -= ab[p, sl]
        _max(new, zero, out=new)
        if later:
            ulater += kcol * _sub(new, pn, out=dn)
        _copyto(pn, new)
    c.ut += _einsum("psm,pm->sm", c.knt, _sub(c.impn_all, c.start, out=c.start))


def _normal_sequential_relax(c, a_n, sl):
    """The relax sweep's normal rows: new = max(old - a u, 0). A slot whose gain is zero in
    every manifold of the colour (speculative or unused: see ContactSolver.solve) keeps its
    impulse and changes nothing: it is skipped."""
    slots = c.relax_slots
    if not slots:
        return
    new, dn, zero = c.nbuf, c.dn, c.zero
    _copyto(c.start, c.impn_all)
    for p, pn, up, ulater, kcol, later in slots:
        _mul(a_n[p, sl], up, out=new)
        _sub(pn, new, out=new)
        _max(new, zero, out=new)
        if later:
            ulater += kcol * _sub(new, pn, out=dn)
        _copyto(pn, new)
    c.ut += _einsum("psm,pm->sm", c.knt, _sub(c.impn_all, c.start, out=c.start))


def _friction_sequential(c, lim):
    """Coulomb friction point by point, two tangents clamped together to the disc mu * Pn;
    only the later tangent rows are read again. A slot whose limit is zero in every manifold
    of the colour ends at zero friction (the clamp scales it by 0 / |f| = 0): it only takes
    its old impulse back out of the later rows, and does nothing where that is zero."""
    f, df, mag, tiny, one = c.f2, c.df, c.mag, c.tiny, c.one
    top = _max_reduce(lim, axis=1).tolist()  # lim >= 0 (or NaN: then not zero)
    for p, old, eff, urow, ulater, kf, later in c.fslots:
        if top[p] == 0.0:
            if _count(old):
                if later:
                    ulater -= _einsum("qsm,qm->sm", kf, old)
                old[...] = 0.0
            continue
        _mul(eff, urow, out=f)
        _sub(old, f, out=f)
        _hypot(f[0], f[1], out=mag)
        # min(1, lim / mag): 1 inside the disc, and 0/tiny = 0 keeps mag = lim = 0 at 0.
        _max(mag, tiny, out=mag)
        _div(lim[p], mag, out=mag)
        _min(mag, one, out=mag)
        f *= mag
        if later:
            ulater += _einsum("qsm,qm->sm", kf, _sub(f, old, out=df))
        _copyto(old, f)


def scatter_add(vel, idx, dv):
    """vel[idx[:, 0]] += dv[:, :6]; vel[idx[:, 1]] += dv[:, 6:], summing duplicates (bincount)."""
    n = vel.shape[0]
    flat = (idx.reshape(-1, 1) * 6 + np.arange(6)).ravel()
    vel += np.bincount(flat, weights=dv.reshape(-1), minlength=n * 6).reshape(n, 6)
