"""Soft-step contact solver (the Box2D v3 / Solver2D "soft step" scheme), batched with numpy.

Per step the world calls, in order::

    s = ContactSolver(...)            # prepare: everything constant over the step
    for each substep h:
        integrate velocities          # (integrate.py)
        s.warm_start(vel)
        s.solve(vel, dpose, True)     # soft contacts with position bias
        integrate positions; dpose += h * vel
        s.solve(vel, dpose, False)    # relax: remove the bias velocity
    s.restitution(vel)
    impulses = s.impulses()           # stored in the pair table for warm starting

Layout. Every contact point carries three scalar constraints (normal, tangent 1, tangent 2). A
constraint row acts on the 12 velocity components [v_a, w_a, v_b, w_b] of its two bodies, so a
row is a (12,) Jacobian J and a (12,) "M^-1 J^T" vector MJ: the velocity change per unit
impulse. Rows are stored as (4 point slots, 3 directions, M manifolds, 12) with the manifolds
sorted by graph colour, so colour c is one contiguous slice and every per-point operation is a
handful of numpy calls on an (m, 12) block: gather the colour's body velocities once, sweep the
4 point slots (Gauss-Seidel inside a manifold), scatter once. Within a colour no dynamic body
appears twice, so the scatter is conflict free; static, kinematic and sleeping bodies have a
zero MJ and are written back unchanged.

Current separation inside the substeps is the separation from collision detection plus the
relative motion of the anchors along the normal, linearised: s = s0 + J_n . dpose, where dpose
holds each body's displacement and accumulated rotation vector since the step began. Collision
detection runs once per step.

Softness (Box2D v3): contact hertz = min(contact_hertz, substep rate / 4), damping ratio 10,
push-out speed capped at ``max_push``. A soft contact is a spring of that frequency on the
contact's effective mass, so a stack compresses by load / (m_eff (2 pi hertz)^2): at 30 Hz a
10-cube tower sinks 3 cm, hence the world's defaults of 90 Hz at 360 Hz substeps with two relax
sweeps (measured: one relax sweep jitters above rate/4, and without the compliance term the
solver jitters at any rate). A point that is still apart (s > 0) is a speculative
constraint with bias s/h: it lets the bodies close exactly the gap in this substep and no more,
which is what stops fast bodies at the surface.

Restitution. Collision runs once per frame, so at 1/24 s the approach speed seen at the start of
the step can be off by g*dt from the speed at impact. We compute the impact speed instead: under
the relative normal acceleration a (gravity of the two bodies along n) the semi-implicit Euler
positions lie exactly on the parabola whose velocity at a position sample is v + a h / 2, so a
point at separation s0 > 0 with normal velocity v0 hits at
    v_impact = -sqrt((v0 + a h/2)^2 - 2 a s0).
The restitution pass then sets the normal velocity so that the next parabola leaves the surface
at -e * v_impact: target = -e v_impact - a h / 2. A dropped ball thus rebounds to e^2 of its drop
height up to the frame sampling, at any frame rate, and e = 1 neither gains nor loses energy.
"""
import math

import numpy as np

# Row kinds inside a point slot.
NORMAL, TANGENT1, TANGENT2 = 0, 1, 2
# Separation given to unused point slots: finite (inf * 0 would be NaN) and far apart.
UNUSED_SEPARATION = 1.0e3


def soft_params(hertz, damping_ratio, h):
    """(bias_rate, mass_scale, impulse_scale) of a soft constraint (Catto, Solver2D)."""
    if hertz <= 0.0:
        return 0.0, 1.0, 0.0
    omega = 2.0 * math.pi * hertz
    a1 = 2.0 * damping_ratio + h * omega
    a2 = h * omega * a1
    a3 = 1.0 / (1.0 + a2)
    return omega / a1, a2 * a3, a3


def tangent_basis(n):
    """Two unit tangents (M, 3) orthogonal to unit normals n (M, 3), a continuous function of n
    away from the switch between the helper axes, so warm-start impulses project consistently."""
    use_x = np.abs(n[:, 0]) < 0.57735
    helper = np.zeros_like(n)
    helper[use_x, 0] = 1.0
    helper[~use_x, 1] = 1.0
    t1 = np.cross(n, helper)
    t1 /= np.linalg.norm(t1, axis=1, keepdims=True)
    t2 = np.cross(n, t1)
    return t1, t2


def _dot(a, b):
    return np.einsum("ij,ij->i", a, b)


class ContactSolver:
    """Constraints of one step. All arrays are per manifold, in any order; ``order`` and
    ``colour_offsets`` (from graph colouring) say how to batch them.

    ia, ib (M,) body indices; normal (M, 3) from a to b; points (M, 4, 3) world contact points;
    separation (M, 4) (> 0 apart); count (M,) used slots; friction, restitution (M,) combined
    coefficients; x_com (N, 3) centres of mass; inv_mass (N,) and inv_inertia (N, 3, 3) world
    inverse inertia, zero for every body the solver must not move (static, kinematic, asleep);
    vel (N, 6) velocities; accel_n (M,) relative normal acceleration from gravity; warm_normal
    (M, 4) and warm_friction (M, 4, 3) (world vector) impulses carried over from the last step.
    """

    def __init__(self, ia, ib, normal, points, separation, count, friction, restitution,
                 x_com, inv_mass, inv_inertia, vel, accel_n, warm_normal, warm_friction,
                 order, colour_offsets, h, contact_hertz=30.0, damping_ratio=10.0,
                 max_push=3.0, overflow=False):
        # overflow: the last colour may share dynamic bodies (graph.colour_constraints ran out
        # of colours); it is applied Jacobi-style with scatter-adds instead of assignment.
        self.overflow = bool(overflow)
        self.order = order = np.asarray(order, dtype=np.int64)
        self.offsets = [int(o) for o in colour_offsets]
        m = len(order)
        self.m = m
        self.h = h
        hz = min(contact_hertz, 0.25 / h)
        self.bias_rate, self.mass_scale, self.impulse_scale = soft_params(hz, damping_ratio, h)
        self.max_push = max_push

        ia = ia[order]
        ib = ib[order]
        n = normal[order]
        pts = points[order]
        sep = separation[order]
        slot = np.arange(4)
        valid = slot[None, :] < count[order][:, None]  # (m, 4)
        self.idx = np.stack((ia, ib), axis=1)  # (m, 2)
        cnt = count[order]
        # Largest point count per colour (a loop over the few colours, not over contacts).
        self.max_count = [int(cnt[a:b].max()) if b > a else 0
                          for a, b in zip(self.offsets[:-1], self.offsets[1:])]
        self.friction = friction[order]
        self.restitution_coef = restitution[order]

        t1, t2 = tangent_basis(n) if m else (n.copy(), n.copy())
        dirs = np.stack((n, t1, t2), axis=1)  # (m, 3, 3)
        ra = pts - x_com[ia][:, None, :]  # (m, 4, 3)
        rb = pts - x_com[ib][:, None, :]
        # Angular Jacobian parts r x d for every point and direction: (m, 4, 3, 3).
        ra_x_d = np.cross(ra[:, :, None, :], dirs[:, None, :, :])
        rb_x_d = np.cross(rb[:, :, None, :], dirs[:, None, :, :])
        d = np.broadcast_to(dirs[:, None, :, :], ra_x_d.shape)
        jac = np.concatenate((-d, -ra_x_d, d, rb_x_d), axis=-1)  # (m, 4, 3, 12)
        ima = inv_mass[ia][:, None, None, None]
        imb = inv_mass[ib][:, None, None, None]
        iia = inv_inertia[ia]
        iib = inv_inertia[ib]
        mj = np.concatenate((
            -ima * d,
            -np.einsum("mij,mpkj->mpki", iia, ra_x_d),
            imb * d,
            np.einsum("mij,mpkj->mpki", iib, rb_x_d),
        ), axis=-1)
        k = np.einsum("mpki,mpki->mpk", jac, mj)
        live = valid[:, :, None] & (k > 1e-12)
        eff = np.where(live, 1.0 / np.where(live, k, 1.0), 0.0)  # (m, 4, 3)
        jac = np.where(valid[:, :, None, None], jac, 0.0)
        mj = np.where(valid[:, :, None, None], mj, 0.0)

        # Solver layout: (4, 3, m, 12) so one (point, direction) over a colour is contiguous.
        self.jac = np.ascontiguousarray(jac.transpose(1, 2, 0, 3))
        self.mj = np.ascontiguousarray(mj.transpose(1, 2, 0, 3))
        self.eff = np.ascontiguousarray(eff.transpose(1, 2, 0))  # (4, 3, m)
        self.sep0 = np.ascontiguousarray(np.where(valid, sep, UNUSED_SEPARATION).T)  # (4, m)
        self.dirs = dirs
        self.ra = ra
        self.valid = valid
        # Block normal solve: the 4 normal rows of a manifold solved together first, so a box
        # landing flat gets 4 equal impulses instead of a Gauss-Seidel cascade that tips it
        # (and lets friction turn the tip into sideways drift). Four coplanar points are
        # statically indeterminate (rank 3), hence the pseudo-inverse: the least-norm, i.e.
        # symmetric, split. Where it would need a negative (pulling) entry the block step is
        # skipped and the sequential sweep does the work.
        kn = np.einsum("mpk,mqk->mpq", jac[:, :, 0], mj[:, :, 0])  # (m, 4, 4)
        self.k_pinv = _pinv_psd(kn)

        # Warm start impulses: normal as is, friction projected on this step's tangents.
        wn = warm_normal[order]
        wf = warm_friction[order]
        imp = np.zeros((4, 3, m))
        imp[:, 0] = np.where(valid, wn, 0.0).T
        imp[:, 1] = np.where(valid, np.einsum("mpi,mi->mp", wf, t1), 0.0).T
        imp[:, 2] = np.where(valid, np.einsum("mpi,mi->mp", wf, t2), 0.0).T
        # Friction impulses must start inside the cone of the carried normal impulse.
        lim = self.friction[None, :] * imp[:, 0]
        mag = np.hypot(imp[:, 1], imp[:, 2])
        scale = np.where(mag > lim, lim / np.where(mag > 0, mag, 1.0), 1.0)
        imp[:, 1:] *= scale[:, None]
        self.imp = imp
        self.max_normal = np.zeros((4, m))

        # Impact speed for restitution (see module docstring).
        vab = vel[self.idx].reshape(m, 12)
        vn0 = np.einsum("pmk,mk->pm", self.jac[:, 0], vab)  # (4, m)
        a = accel_n[order][None, :]
        c0 = vn0 + 0.5 * a * h
        ballistic = -np.sqrt(np.maximum(c0 * c0 - 2.0 * a * self.sep0, 0.0))
        self.v_impact = np.where(self.sep0 > 0.0, ballistic, np.minimum(c0, vn0))
        self.accel_n = a[0]

    # -- passes ---------------------------------------------------------------------------
    def warm_start(self, vel):
        """Apply the accumulated impulses to the velocities (all manifolds at once)."""
        if self.m == 0:
            return
        dv = np.einsum("prm,prmk->mk", self.imp, self.mj)  # (m, 12)
        _scatter_add(vel, self.idx, dv)

    def solve(self, vel, dpose, use_bias):
        """One Gauss-Seidel sweep over the colours. use_bias: the soft pass (True) or relax."""
        m = self.m
        if m == 0:
            return
        h = self.h
        inv_h = 1.0 / h
        dp = dpose[self.idx].reshape(m, 12)
        sep = self.sep0 + np.einsum("pmk,mk->pm", self.jac[:, 0], dp)  # (4, m)
        spec = sep > 0.0
        if use_bias:
            bias = np.where(spec, sep * inv_h, np.maximum(self.bias_rate * sep, -self.max_push))
            mscale = np.where(spec, 1.0, self.mass_scale)
            iscale = np.where(spec, 0.0, self.impulse_scale)
        else:
            bias = np.where(spec, sep * inv_h, 0.0)
            mscale = None
            iscale = None
        jac, mj, eff, imp = self.jac, self.mj, self.eff, self.imp
        jn, mjn = jac[:, 0], mj[:, 0]
        for ci, (c0, c1) in enumerate(zip(self.offsets[:-1], self.offsets[1:])):
            if c1 <= c0:
                continue
            sl = slice(c0, c1)
            idx = self.idx[sl]
            v = vel[idx].reshape(c1 - c0, 12)
            v_in = v.copy() if self._shared(c1) else None
            mu = self.friction[sl]
            # Block normal step (see prepare), then the sequential sweep.
            vn = np.einsum("pmk,mk->pm", jn[:, sl], v)
            lam = imp[:, 0, sl]
            rhs = vn + bias[:, sl]
            dl = -np.einsum("mpq,qm->pm", self.k_pinv[sl], rhs)
            if use_bias:
                dl = dl * mscale[:, sl] - iscale[:, sl] * lam
            new = lam + dl
            # Accept the block solution only where it needs no clamping: a clamped block
            # answer (the lifting edge of a tipping box asks for a pull) is far off, and
            # the sequential sweep below is the right tool there.
            ok = (new >= 0.0).all(axis=0)
            new = np.where(ok, new, lam)
            v += np.einsum("pmk,pm->mk", mjn[:, sl], new - lam)
            imp[:, 0, sl] = new
            # Slots beyond the colour's largest point count are empty: skip them.
            npts = self.max_count[ci]
            # The sequential sweep always runs: skipping it where the block step succeeded
            # changed the soft response (the soft update is not idempotent) and cost energy
            # conservation of bounces at e = 1.
            for p in range(npts):
                # Normal: soft non-penetration with accumulated-impulse clamping.
                vn = _dot(jac[p, 0, sl], v)
                pn = imp[p, 0, sl]
                if use_bias:
                    delta = (-eff[p, 0, sl] * mscale[p, sl] * (vn + bias[p, sl])
                             - iscale[p, sl] * pn)
                else:
                    delta = -eff[p, 0, sl] * (vn + bias[p, sl])
                new = np.maximum(pn + delta, 0.0)
                delta = new - pn
                imp[p, 0, sl] = new
                v += mj[p, 0, sl] * delta[:, None]
                np.maximum(self.max_normal[p, sl], new, out=self.max_normal[p, sl])
            for p in range(npts):
                # Coulomb friction, two tangents clamped together to the disc mu * Pn.
                vt = np.einsum("rmk,mk->rm", jac[p, 1:, sl], v)
                old = imp[p, 1:, sl]
                f = old - eff[p, 1:, sl] * vt
                lim = mu * imp[p, 0, sl]
                mag = np.hypot(f[0], f[1])
                f *= np.where(mag > lim, lim / np.where(mag > 0.0, mag, 1.0), 1.0)
                v += np.einsum("rmk,rm->mk", mj[p, 1:, sl], f - old)
                imp[p, 1:, sl] = f
            self._write(vel, idx, v, v_in)

    def restitution(self, vel, threshold=1.0):
        """After the substeps: make closing points leave at -e * (impact speed)."""
        if self.m == 0:
            return
        e = self.restitution_coef
        want = (self.v_impact < -threshold) & (self.max_normal > 0.0) & (e[None, :] > 0.0)
        if not want.any():
            return
        target = -e[None, :] * self.v_impact - 0.5 * self.accel_n[None, :] * self.h
        jac, mj, eff, imp = self.jac, self.mj, self.eff, self.imp
        for c0, c1 in zip(self.offsets[:-1], self.offsets[1:]):
            if c1 <= c0 or not want[:, c0:c1].any():
                continue
            sl = slice(c0, c1)
            idx = self.idx[sl]
            v = vel[idx].reshape(c1 - c0, 12)
            v_in = v.copy() if self._shared(c1) else None
            # Simultaneous (block) restitution over the manifold's points: a sequential sweep
            # over-rotates a box hitting flat and can gain energy at e = 1. Points that do not
            # bounce keep their current normal velocity as the target.
            vn = np.einsum("pmk,mk->pm", jac[:, 0, sl], v)
            w = want[:, sl]
            tgt = np.where(w, target[:, sl], vn)
            lam = imp[:, 0, sl]
            dl = -np.einsum("mpq,qm->pm", self.k_pinv[sl], vn - tgt)
            new = np.where(w, lam + dl, lam)
            ok = (new >= 0.0).all(axis=0)
            new = np.where(ok, new, np.maximum(new, 0.0))
            v += np.einsum("pmk,pm->mk", mj[:, 0, sl], new - lam)
            imp[:, 0, sl] = new
            # Where the block answer had to be clamped, finish with one sequential sweep.
            bad = ~ok
            if bad.any():
                for p in range(4):
                    wp = w[p] & bad
                    vnp = _dot(jac[p, 0, sl], v)
                    pn = imp[p, 0, sl]
                    newp = np.maximum(pn - eff[p, 0, sl] * (vnp - target[p, sl]), 0.0)
                    delta = np.where(wp, newp - pn, 0.0)
                    imp[p, 0, sl] = pn + delta
                    v += mj[p, 0, sl] * delta[:, None]
            self._write(vel, idx, v, v_in)

    def _shared(self, c1):
        return self.overflow and c1 == self.offsets[-1]

    @staticmethod
    def _write(vel, idx, v, v_in):
        if v_in is None:
            vel[idx] = v.reshape(-1, 2, 6)  # conflict-free colour: plain writes
        else:
            _scatter_add(vel, idx, v - v_in)

    # -- results --------------------------------------------------------------------------
    def impulses(self):
        """(normal (M, 4), friction world vectors (M, 4, 3), friction (M, 4, 2) along the
        tangents, tangents (M, 2, 3)) in the caller's original manifold order."""
        m = self.m
        inv = np.empty(m, dtype=np.int64)
        inv[self.order] = np.arange(m)
        normal = self.imp[:, 0].T[inv]
        fr = np.stack((self.imp[:, 1].T, self.imp[:, 2].T), axis=-1)[inv]  # (M, 4, 2)
        tang = self.dirs[inv, 1:]  # (M, 2, 3)
        fworld = fr[..., 0:1] * tang[:, None, 0, :] + fr[..., 1:2] * tang[:, None, 1, :]
        return normal, fworld, fr, tang


def _pinv_psd(k, rtol=1e-9):
    """Pseudo-inverses of symmetric positive semi-definite matrices (..., n, n)."""
    if k.shape[0] == 0:
        return k.copy()
    e, vec = np.linalg.eigh(k)
    cut = rtol * e.max(axis=-1, keepdims=True)
    inv_e = np.where(e > cut, 1.0 / np.where(e > cut, e, 1.0), 0.0)
    return np.einsum("...ik,...k,...jk->...ij", vec, inv_e, vec)


def _scatter_add(vel, idx, dv):
    """vel[idx[:, 0]] += dv[:, :6]; vel[idx[:, 1]] += dv[:, 6:], summing duplicates (bincount)."""
    n = vel.shape[0]
    flat = (idx.reshape(-1, 1) * 6 + np.arange(6)).ravel()
    vel += np.bincount(flat, weights=dv.reshape(-1), minlength=n * 6).reshape(n, 6)
