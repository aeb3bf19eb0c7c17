"""A plain reference of the contact solver's passes, for tests/test_contact_kernels.py.

Written from the scheme's description (engine/dynamics/solver.py's docstrings), not from the kernels:
rows built point by point with np.cross, Delassus blocks as J M^-1 J^T products, the
pseudo-inverse by np.linalg.pinv, and every pass in velocity space (each row reads J v of the
pair's current velocities and adds M^-1 J^T d), where the kernels work in impulse space (row
velocities updated through K). The two agree to round-off.

Manifolds are swept in the order given; arrays are manifold first, in the kernels' layout
(engine/dynamics/contact_kernels.py), so a test can hand this reference's rows to the kernels.
"""
import math

import numpy as np

from engine.dynamics.contact_kernels import SWEEP_WORK, UNUSED_SEPARATION
from engine.dynamics.solver import RELAX_SLOP, soft_params, tangent_basis

# Row r of a manifold: point slot ROW_POINT[r], direction ROW_DIR[r] (0 normal, 1-2 tangents).
ROW_POINT = [0, 1, 2, 3, 0, 0, 1, 1, 2, 2, 3, 3]
ROW_DIR = [0, 0, 0, 0, 1, 2, 1, 2, 1, 2, 1, 2]


class Reference:
    """The solver of one pass for a scene dict (tests/test_solver.py's random_scene keys),
    substep h and WorldSettings settings."""

    def __init__(self, scene, h, settings):
        ia, ib = scene["ia"], scene["ib"]
        m = len(ia)
        self.m, self.h = m, h
        self.idx = np.stack((ia, ib), axis=1).astype(np.int64)
        self.count = np.asarray(scene["count"], dtype=np.int64)
        self.friction = np.asarray(scene["friction"], dtype=float)
        self.coef = np.asarray(scene["restitution"], dtype=float)
        self.accel_n = np.asarray(scene["accel_n"], dtype=float)
        hz = min(settings.contact_hertz, 0.25 / h)
        self.bias_rate, self.mass_scale, self.impulse_scale = soft_params(
            hz, settings.damping_ratio, h)
        self.max_push = settings.max_push
        n = scene["normal"]
        t1, t2 = tangent_basis(n)
        dirs = np.stack((n, t1, t2), axis=1)
        self.dirs = dirs
        x, im, ii = scene["x_com"], scene["inv_mass"], scene["inv_inertia"]
        self.ima, self.imb = im[ia].astype(float), im[ib].astype(float)
        self.jr = np.zeros((m, 12, 12))
        self.mjr = np.zeros((m, 12, 12))
        for i in range(m):
            a, b = ia[i], ib[i]
            for r in range(12):
                p, d = ROW_POINT[r], dirs[i, ROW_DIR[r]]
                if p >= self.count[i]:
                    continue
                ra = scene["points"][i, p] - x[a]
                rb = scene["points"][i, p] - x[b]
                self.jr[i, r] = np.r_[-d, -np.cross(ra, d), d, np.cross(rb, d)]
                self.mjr[i, r] = np.r_[-im[a] * d, -ii[a] @ np.cross(ra, d), im[b] * d,
                                       ii[b] @ np.cross(rb, d)]
        self.kmat = np.einsum("mrk,msk->mrs", self.jr, self.mjr)
        diag = np.einsum("mrr->mr", self.kmat)
        self.eff = np.where(diag > 1e-12, 1.0 / np.where(diag > 1e-12, diag, 1.0), 0.0)
        self.k_pinv = np.stack([np.linalg.pinv(k[:4, :4], rcond=1e-9, hermitian=True)
                                for k in self.kmat]).reshape(m, 4, 4)
        valid = np.arange(4)[None, :] < self.count[:, None]
        self.sep0 = np.where(valid, scene["sep"], UNUSED_SEPARATION)
        self.imp = np.zeros((m, 12))
        self.imp[:, :4] = np.where(valid, scene["warm_n"], 0.0)
        for i in range(m):
            for p in range(self.count[i]):
                f = np.array([scene["warm_f"][i, p] @ t1[i], scene["warm_f"][i, p] @ t2[i]])
                cap = self.friction[i] * self.imp[i, p]
                if np.hypot(*f) > cap:
                    f *= cap / np.hypot(*f)
                self.imp[i, 4 + 2 * p:6 + 2 * p] = f
        self.max_normal = np.zeros((m, 4))
        vab = scene["vel"][self.idx].reshape(m, 12)
        self.v_impact = np.zeros((m, 4))
        for i in range(m):
            for p in range(4):
                vn0 = self.jr[i, p] @ vab[i]
                c0 = vn0 + 0.5 * self.accel_n[i] * h
                s = self.sep0[i, p]
                self.v_impact[i, p] = (-math.sqrt(max(c0 * c0 - 2.0 * self.accel_n[i] * s, 0.0))
                                       if s > 0.0 else min(c0, vn0))

    def kernel_arrays(self):
        """The rows in the kernels' argument order after (vel, dpose, use_bias)."""
        ang = [3, 4, 5, 9, 10, 11]
        return (self.idx, self.count, self.dirs, self.ima, self.imb, self.jr[..., ang],
                self.mjr[..., ang], self.kmat, self.eff, self.k_pinv, self.sep0, self.imp,
                self.max_normal, self.friction,
                np.array([1.0 / self.h, self.bias_rate, self.mass_scale, self.impulse_scale,
                          self.max_push, RELAX_SLOP]),
                np.empty((SWEEP_WORK, 12)))

    # -- passes ---------------------------------------------------------------------------
    def warm_start(self, vel):
        for i, (a, b) in enumerate(self.idx):
            dv = self.mjr[i].T @ self.imp[i]
            vel[a] += dv[:6]
            vel[b] += dv[6:]

    def solve(self, vel, dpose, use_bias):
        for i, (a, b) in enumerate(self.idx):
            v = np.r_[vel[a], vel[b]]
            s = self.sep0[i] + self.jr[i, :4] @ np.r_[dpose[a], dpose[b]]
            self._manifold(i, v, s, use_bias)
            vel[a], vel[b] = v[:6], v[6:]

    def _manifold(self, i, v, s, use_bias):
        jr, mjr, imp, eff = self.jr[i], self.mjr[i], self.imp[i], self.eff[i]
        n = self.count[i]
        bias, msc, isc, gain = np.zeros(4), np.ones(4), np.zeros(4), eff[:4].copy()
        block = True
        for p in range(4):
            if use_bias and s[p] > 0.0:           # speculative: close the gap, rigidly
                bias[p] = s[p] / self.h
            elif use_bias:                         # soft spring, push-out capped
                bias[p] = max(self.bias_rate * s[p], -self.max_push)
                msc[p], isc[p] = self.mass_scale, self.impulse_scale
                gain[p] = eff[p] * self.mass_scale
            elif s[p] > RELAX_SLOP and eff[p] > 0.0:   # relax: points apart keep theirs
                gain[p] = 0.0
                block = False
        if block:
            lam0 = imp[:4].copy()
            new = lam0 - (self.k_pinv[i] @ (jr[:4] @ v + bias)) * msc - isc * lam0
            if (new >= 0.0).all():
                imp[:4] = new
                v += mjr[:4].T @ (new - lam0)
        for p in range(n):
            old = imp[p]
            new = max((1.0 - isc[p]) * old - gain[p] * (jr[p] @ v + bias[p]), 0.0)
            imp[p] = new
            v += mjr[p] * (new - old)
        self.max_normal[i] = np.maximum(self.max_normal[i], imp[:4])
        for p in range(n):
            t = slice(4 + 2 * p, 6 + 2 * p)
            old = imp[t].copy()
            f = old - eff[t] * (jr[t] @ v)
            mag = np.hypot(*f)
            lim = self.friction[i] * imp[p]
            if mag > lim:
                f *= lim / mag
            imp[t] = f
            v += mjr[t].T @ (f - old)

    def restitution(self, vel, threshold):
        h = self.h
        for i, (a, b) in enumerate(self.idx):
            e = self.coef[i]
            want = (self.v_impact[i] < -threshold) & (self.max_normal[i] > 0.0) & (e > 0.0)
            if not want.any():
                continue
            v = np.r_[vel[a], vel[b]]
            jn, mjn, imp = self.jr[i, :4], self.mjr[i, :4], self.imp[i]
            target = -e * self.v_impact[i] - 0.5 * self.accel_n[i] * h
            vn = jn @ v
            lam0 = imp[:4].copy()
            # Block answer: bouncing points to their target, the others held.
            goal = np.where(want, target, vn)
            new = np.where(want, lam0 - self.k_pinv[i] @ (vn - goal), lam0)
            unused = self.eff[i, :4] == 0.0
            if (new >= 0.0).all() and (want | unused).all():
                imp[:4] = new
                v += mjn.T @ (new - lam0)
            else:
                for p in np.flatnonzero(want):
                    old = imp[p]
                    imp[p] = max(old - self.eff[i, p] * (jn[p] @ v - target[p]), 0.0)
                    v += mjn[p] * (imp[p] - old)
            vel[a], vel[b] = v[:6], v[6:]
