"""The contact solver's sweep as it was written before engine/solver_sweep.py: the oracle
tests/test_solver_sweep.py holds the rewritten sweep to, bit for bit.

It is the readable form (one colour after another, each stage a few numpy calls on the
colour's slices, no views kept, no work skipped); solver_sweep runs the same arithmetic with
fewer calls. Kept verbatim apart from the module-level names it now reaches by import and the
biased pass's coefficient set-up, which it shares with the engine (ContactSolver._bias_coefficients).
"""
import numpy as np

from engine.solver import RETRY_AFTER, _normal_sweep_operator, _scatter_add, _tangent_row


def use_reference(solver):
    """Make ``solver`` (a ContactSolver instance) sweep with reference_solve."""
    solver.solve = lambda vel, dpose, use_bias: reference_solve(solver, vel, dpose, use_bias)
    return solver


def reference_solve(self, vel, dpose, use_bias):
    """ContactSolver.solve as it was before engine/solver_sweep.py (commit f807ed1), run on
    a ContactSolver ``self``: one Gauss-Seidel sweep over the colours."""
    m = self.m
    if m == 0:
        return
    inv_h = 1.0 / self.h
    dp = dpose[self.idx].reshape(m, 12)
    sep = self.sep0 + np.einsum("pmk,mk->pm", self.jn, dp)  # (4, m)
    spec = sep > 0.0
    eff_n = self.eff[:4]
    # Per normal row, the soft update is new = max(keep * old - a * (u + bias), 0): one
    # set of (4, m) coefficients per sweep, so the colour loop does no per-row set-up.
    if use_bias:
        bias = np.where(spec, sep * inv_h, np.maximum(self.bias_rate * sep, -self.max_push))
        mscale, iscale, a_n, keep, sweep_n = self._bias_coefficients(spec)  # the engine's
        skip = None
        ab = a_n * bias
    else:
        # mscale, iscale and keep belong to the biased pass only (never read by relax).
        # Relax solves touching points only: speculative ones (s > 0) keep their impulse
        # (see the module docstring). Their rows get a zero gain and skip the block step.
        skip = spec & (eff_n > 0.0)
        if skip.any():
            skip_m = skip.any(axis=0)  # manifolds whose block step is skipped
            a_n = np.where(skip, 0.0, eff_n)
            sweep_n = _normal_sweep_operator(a_n, self.kmat[:4, :4])
        else:
            a_n, skip, sweep_n = eff_n, None, self.sweep_relax
        bias = ab = np.zeros((4, m))  # relax has no bias (a_n * 0 = 0 exactly)
    imp, kmat, eff, kp = self.imp, self.kmat, self.eff, self.k_pinv
    fast = self.one_product_sweeps
    for ci, (c0, c1) in enumerate(zip(self.offsets[:-1], self.offsets[1:])):
        if c1 <= c0:
            continue
        sl = slice(c0, c1)
        idx = self.idx[sl]
        v = vel[idx].reshape(c1 - c0, 12)
        u = np.einsum("mrk,mk->rm", self.jr[sl], v)  # (12, mc) row velocities
        lam0 = imp[:, sl].copy()
        # Block normal step (see prepare), then the sequential sweep.
        rhs = u[:4] + bias[:, sl]
        dl = -np.einsum("pqm,qm->pm", kp[:, :, sl], rhs)
        if use_bias:
            dl = dl * mscale[:, sl] - iscale[:, sl] * lam0[:4]
        new = lam0[:4] + dl
        # Accept the block solution only where it needs no clamping: a clamped block
        # answer (the lifting edge of a tipping box asks for a pull) is far off, and
        # the sequential sweep below is the right tool there.
        ok = (new >= 0.0).all(axis=0)
        if skip is not None:
            ok &= ~skip_m[sl]
        new = np.where(ok, new, lam0[:4])
        u += np.einsum("psm,pm->sm", kmat[:4, :, sl], new - lam0[:4])
        imp[:4, sl] = new
        # Slots beyond the colour's largest point count are empty: skip them.
        npts = self.max_count[ci]
        # The sequential sweep always runs: skipping it where the block step succeeded
        # changed the soft response (the soft update is not idempotent) and cost energy
        # conservation of bounces at e = 1. Unclamped, the sweep is linear: row p sets
        #   d_p = r_p - a_p sum_{q<p} K_pq d_q,  r = -a (u + bias) - (1 - keep) lam,
        # i.e. d = (I + A L)^-1 r with L the strictly lower part of K. That operator is
        # built once per pass for all manifolds, so a colour first tries the whole sweep
        # in one product and keeps it if no row went negative (then every row of the
        # sequential sweep would have been unclamped and given the same d); otherwise it
        # runs the sequential sweep with its per-row clamping.
        # A colour whose attempt failed (tipping or lifting boxes clamp every pass) skips
        # the next few attempts, so scenes that always clamp pay little for trying.
        npts_seq = npts
        if self._wait_normal[ci] or not fast:
            self._wait_normal[ci] = max(self._wait_normal[ci] - 1, 0)
        else:
            lam = imp[:4, sl]
            r = -(a_n[:, sl] * u[:4] + ab[:, sl])
            if use_bias:
                r -= iscale[:, sl] * lam
            d = np.einsum("pqm,qm->pm", sweep_n[:, :, sl], r)
            new = lam + d
            if (new >= 0.0).all():
                imp[:4, sl] = new
                u[4:] += np.einsum("psm,pm->sm", kmat[:4, 4:, sl], d)
                npts_seq = 0
            else:
                self._wait_normal[ci] = RETRY_AFTER
        if npts_seq:
            start = imp[:npts_seq, sl].copy()
        for p in range(npts_seq):
            # Normal: soft non-penetration with accumulated-impulse clamping.
            pn = imp[p, sl]
            old = pn * keep[p, sl] if use_bias else pn
            new = np.maximum(old - a_n[p, sl] * u[p] - ab[p, sl], 0.0)
            # Only the later normal rows are read again in the normal sweep; the
            # tangent rows take all the normal changes at once after it.
            if p + 1 < npts_seq:
                u[p + 1:npts_seq] += kmat[p, p + 1:npts_seq, sl] * (new - pn)
            imp[p, sl] = new  # (pn is a view: after its last use)
        if npts_seq:
            u[4:] += np.einsum("psm,pm->sm", kmat[:npts_seq, 4:, sl],
                               imp[:npts_seq, sl] - start)
        np.maximum(self.max_normal[:npts, sl], imp[:npts, sl],
                   out=self.max_normal[:npts, sl])
        lim = self.friction[sl] * imp[:npts, sl]  # (npts, mc)
        # Friction sweep, the same way: unclamped it is f = old - F u with the operator F
        # of prepare (constant over the step); taken where every point stays inside its
        # disc (then no row of the sequential sweep would have been clamped).
        npts_seq = npts
        if self._wait_friction[ci] or not fast:
            self._wait_friction[ci] = max(self._wait_friction[ci] - 1, 0)
        else:
            rows = slice(4, 4 + 2 * npts)
            old = imp[rows, sl]
            f = old - np.einsum("rsm,sm->rm", self.sweep_friction[:2 * npts, :2 * npts, sl],
                                u[rows])
            if (f[0::2] ** 2 + f[1::2] ** 2 <= lim * lim).all():
                imp[rows, sl] = f
                npts_seq = 0
            else:
                self._wait_friction[ci] = RETRY_AFTER
        for p in range(npts_seq):
            # Coulomb friction, two tangents clamped together to the disc mu * Pn.
            r = _tangent_row(p)
            old = imp[r:r + 2, sl]
            f = old - eff[r:r + 2, sl] * u[r:r + 2]
            mag = np.hypot(f[0], f[1])
            # min(1, lim / mag): 1 inside the disc, and 0/tiny = 0 keeps mag = lim = 0 at 0.
            f *= np.minimum(lim[p] / np.maximum(mag, 1e-200), 1.0)
            if p + 1 < npts:
                # Later tangent rows only (the normal rows are not read again).
                rest = slice(r + 2, 4 + 2 * npts)
                u[rest] += np.einsum("qsm,qm->sm", kmat[r:r + 2, rest, sl], f - old)
            imp[r:r + 2, sl] = f
        dv = np.einsum("rm,mrk->mk", imp[:, sl] - lam0, self.mjr[sl])
        if (self.overflow and c1 == self.offsets[-1]):
            _scatter_add(vel, idx, dv)
        else:
            vel[idx] = (v + dv).reshape(-1, 2, 6)  # conflict-free colour: plain writes
