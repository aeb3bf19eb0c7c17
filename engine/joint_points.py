"""Large systems of point joints (nets, cloth, grids of balls) by lean block Gauss-Seidel.

engine.joint_solver solves small systems exactly and larger ones by coloured block Gauss-
Seidel over its general six-axis rows. When every joint of a large system only locks its three
linear axes (Blender's Point, a generic joint with the linear axes locked at zero), the three
lock rows of a joint are one 3 x 3 block, and that block is the same in any basis: the rows
along frame A's axes (C = A^T d, J = A^T G) give K^-1 J = A^T K_w^-1 G and the applied impulse
A dl is the world-frame impulse of the world-frame block

    G = [-I, [s]x, I, -[r_b]x],  K_w = G M^-1 G^T,  s = r_a + d = x_b + r_b - x_a,
    C = d = x_b + r_b - x_a - r_a

(G v = v_b + w_b x r_b - v_a - w_a x s; the s, not r_a, is the "axes turn with A" term of the
general rows). So this path keeps the impulses as world vectors and never builds the joint
frames, Euler angles or 12-wide row Jacobians of the six axes; per substep it costs a fixed
number of numpy calls (about 50 for the geometry, 8 per colour in a sweep) whatever the
number of joints. The stored A-frame impulses of engine.joints are read on
the first warm start and written back by finish, so either path can pick up the other's.

Arrays are component-major, joints last ((3, 3, m) matrices, (3, m) vectors): numpy's
elementwise calls then run long contiguous loops, where the joint-major (m, 3, 3) products of
np.einsum("mij,mjk->mik") spend their time in loop overhead (6x slower at 1500 blocks).

Velocities live in a padded flat copy: a joint to the world reads and writes its A side in a
spare zero slot, so one gather and one scatter per colour serve every joint (within a colour
no awake body appears twice; bodies that do not move may, and get their own values back).

prepare (every substep) writes into preallocated buffers: its temporaries, up to 110 kB each
at 760 joints, made glibc trim the heap top and fault the pages back in, some 150 page faults
a call (0.16 ms -> 0.45 ms, measured); the scratch is pooled by size over the collision passes
(_scratch) and the per-pass arrays it fills (K^-1, the errors, G and MJ's angular blocks) are
written in place, so the per-colour views the sweeps read are made once per pass. Same
arithmetic in the same order as before: results are bit for bit those of the temporaries.
"""
import itertools
import threading

import numpy as np

from .joint_inertia import CurrentInertia
from .joint_math import quat_matrix, quat_mul
from .joint_warm import impact_scale
from .joints import pure_point_locks
from .solver_sweep import einsum as _einsum

_P1 = np.array([1, 2, 0])
_P2 = np.array([2, 0, 1])
# Skew matrix [t]x of t (3, k) as (t[_SKEW_IDX] * _SKEW_SIGN[:, None]).reshape(3, 3, k).
_SKEW_IDX = np.array([0, 2, 1, 2, 0, 0, 1, 0, 0])
_SKEW_SIGN = np.array([0.0, -1.0, 1.0, 1.0, 0.0, -1.0, -1.0, 1.0, 0.0])
_NEG_SKEW_SIGN = -_SKEW_SIGN


def point_lock_only(g):
    """Is every joint (engine.joints fields gathered in g) a pure point lock: the three linear
    axes locked at zero, nothing else locked, limited, sprung or driven?"""
    return bool(pure_point_locks(g).all())


# Flat (9,) indices into a (9, K) view of (3, 3, K) matrices for the adjugate's cofactors
# (joint_math.cross_rows(m[_P1], m[_P2]):
# cof[r, c] = m[P1r, P1c] m[P2r, P2c] - m[P1r, P2c] m[P2r, P1c]).
_R, _C = np.divmod(np.arange(9), 3)
_COF = [_P1[_R] * 3 + _P1[_C], _P2[_R] * 3 + _P2[_C], _P1[_R] * 3 + _P2[_C],
        _P2[_R] * 3 + _P1[_C]]


class _Scratch:
    """Buffers of prepare's temporaries. prepare runs every substep, and its temporaries
    (tens to a hundred kB each at 760 joints), freed at the top of the heap, made glibc give
    the pages back and fault them in again: a few hundred page faults per call (0.16 ->
    0.45 ms). Pooled by size over the collision passes (_scratch): fresh buffers every pass
    cost their first-touch faults instead. They hold nothing from one prepare to the next."""

    def __init__(self, m):
        m2 = 2 * m
        self.q2 = np.empty((4, m2))
        self.x2 = np.empty((3, m2))
        self.u1, self.u2 = np.empty((3, m2)), np.empty((3, m2))
        self.t, self.c, self.r2 = np.empty((3, m2)), np.empty((3, m2)), np.empty((3, m2))
        self.tp = np.empty((3, m2))
        self.d = np.empty((3, m))
        self.skew = np.empty((9, m2))
        self.si, self.kk, self.p = (np.empty((3, 3, m2)) for _ in range(3))
        self.k = np.empty((3, 3, m))
        self.cof, self.c2 = np.empty((9, m)), np.empty((9, m))
        self.det = np.empty((3, m))


_POOL: dict[tuple[int, int], _Scratch] = {}


def _scratch(m):
    """The pooled _Scratch for m joints (the last few sizes asked for), one per thread (two
    worlds stepped in two threads must not share one)."""
    key = (m, threading.get_ident())
    sc = _POOL.pop(key, None) or _Scratch(m)
    _POOL[key] = sc               # most recent last
    while len(_POOL) > 4:
        del _POOL[next(iter(_POOL))]
    return sc


def _rotate0(q, v, v1, v2, sc):
    """Rotate vectors v (3, k) by unit quaternions q (4, k) (quat.rotate's arithmetic: v +
    w t + u x t, t = 2 u x v) into sc.r2; v1, v2 are v's rows permuted by _P1, _P2."""
    u1, u2, t, c, out = sc.u1, sc.u2, sc.t, sc.c, sc.r2
    np.take(q[1:], _P1, axis=0, out=u1)
    np.take(q[1:], _P2, axis=0, out=u2)
    np.multiply(u1, v2, out=t)
    np.multiply(u2, v1, out=c)
    t -= c
    t *= 2.0
    np.multiply(q[:1], t, out=out)
    out += v
    tp = sc.tp
    np.take(t, _P2, axis=0, out=tp)
    np.multiply(u1, tp, out=c)
    np.take(t, _P1, axis=0, out=tp)
    u2 *= tp
    c -= u2
    out += c
    return out


def _inv3_soa(m, out, sc):
    """joint_math.inv3_soa of (3, 3, K) matrices into out: the same arithmetic, in buffers."""
    m9 = m.reshape(9, -1)
    cof, c2 = sc.cof, sc.c2
    np.multiply(m9[_COF[0]], m9[_COF[1]], out=cof)
    np.multiply(m9[_COF[2]], m9[_COF[3]], out=c2)
    cof -= c2
    cof = cof.reshape(3, 3, -1)
    np.multiply(m[0], cof[0], out=sc.det)
    det = sc.det.sum(axis=0)
    ok = (det > 0.0) & np.isfinite(det)
    inv = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)
    np.multiply(cof.transpose(1, 0, 2), inv, out=out)
    return out


def _mm3_into(a, b, out, tmp):
    """_mm3(a, b) into out, tmp a scratch of out's shape (same sums in the same order)."""
    np.multiply(a[:, 0, None], b[None, 0], out=out)
    np.multiply(a[:, 1, None], b[None, 1], out=tmp)
    out += tmp
    np.multiply(a[:, 2, None], b[None, 2], out=tmp)
    out += tmp
    return out


def _mm3t_into(a, b, out, tmp):
    """_mm3t(a, b) = a b^T into out (same sums in the same order)."""
    np.multiply(a[:, 0, None], b[None, :, 0], out=out)
    np.multiply(a[:, 1, None], b[None, :, 1], out=tmp)
    out += tmp
    np.multiply(a[:, 2, None], b[None, :, 2], out=tmp)
    out += tmp
    return out


def _frame_a(qa, frame_a):
    """Frame A's axes as matrix columns (m, 3, 3): body A's rotation qa (the identity for the
    world) times the joint frame in A."""
    return quat_matrix(quat_mul(qa, frame_a))


class PointLocks:
    """Point-lock rows of one collision pass (see the module docstring).

    a, b: (m,) body indices sorted by colour, offsets the colour bounds; world (m,) bool
    (A is the world: anchor_a is then a world point); anchor_a, anchor_b (m, 3) relative to
    the centres of mass in the bodies' frames; frame_a (m, 4) the joint frame in A (to read
    and write the A-frame impulses); lam0 (m, 3) the carried A-frame lock impulses;
    inv_mass (N,), inv_inertia (N, 3, 3) world (zero for bodies not moved); soft the biased
    pass's (bias_rate, mass_scale, impulse_scale); break_force (m,)."""

    def __init__(self, a, b, offsets, world, anchor_a, anchor_b, frame_a, lam0, inv_mass,
                 inv_inertia, h, soft, break_force, inv_body=None, max_push=np.inf):
        n = len(inv_mass)
        m = len(a)
        self.n, self.m, self.h = n, m, h
        self.frame_a, self.lam0 = frame_a, lam0
        ia = np.where(world, n, a)          # the world side reads the spare slot n
        self.idx2 = np.concatenate((ia, b))
        self.anc2 = np.ascontiguousarray(np.concatenate((anchor_a, anchor_b)).T)  # (3, 2m)
        self.anc2_1, self.anc2_2 = self.anc2[_P1], self.anc2[_P2]
        # Flat (12, m) indices of [v_a, w_a, v_b, w_b] in the padded velocity copy.
        six = np.arange(6)[:, None]
        flat = np.concatenate((ia[None] * 6 + six, b[None] * 6 + six))
        self.flat_all = flat.ravel()
        self.cols = [slice(int(c0), int(c1)) for c0, c1 in itertools.pairwise(offsets)
                     if c1 > c0]
        self.idx_c = [np.ascontiguousarray(flat[:, sl]) for sl in self.cols]
        self.vp = np.zeros((n + 1) * 6)
        self.xs = np.zeros((3, n + 1))
        self.qs = np.zeros((4, n + 1))
        self.qs[0, n] = 1.0
        ima = np.where(world, 0.0, inv_mass[a])
        imb = inv_mass[b]
        iip = np.zeros((9, n + 1))          # component-major, the spare slot zero
        iip[:, :n] = inv_inertia.reshape(n, 9).T
        self.inert2 = iip.take(self.idx2, axis=1).reshape(3, 3, 2 * m)   # (3, 3, 2m)
        # Anisotropic ends' tensors at the present orientation (engine.joint_inertia); a
        # world side reads the spare slot n (no inertia, identity orientation).
        self.inertia = None
        if inv_body is not None:
            ib = np.concatenate((np.where(world[:, None, None], 0.0, inv_body[a]),
                                 inv_body[b]))
            inertia = CurrentInertia(self.idx2, ib, self.inert2.transpose(2, 0, 1))
            self.inertia = inertia if len(inertia.aniso) else None
        self.msum = ima + imb
        eye = np.eye(3)[:, :, None]
        # G and MJ = (M^-1 G^T)^T as (3 rows, 4 blocks, 3, m): G's blocks are
        # [-I, [s]x, I, -[r_b]x]; the linear blocks of both are constant over the pass.
        self.g4 = np.zeros((3, 4, 3, m))
        self.g4[:, 0] = -eye
        self.g4[:, 2] = eye
        self.g = self.g4.reshape(3, 12, m)
        self.mj4 = np.zeros((3, 4, 3, m))
        self.mj4[:, 0] = -ima * eye
        self.mj4[:, 2] = imb * eye
        self.mj = self.mj4.reshape(3, 12, m)
        self.t2 = np.empty((3, 2 * m))
        self.kinv = np.zeros((3, 3, m))
        self.kinvb = np.zeros((3, 3, m))
        self.err = np.zeros((3, m))
        # Per colour: the views the sweeps read (prepare writes kinv, kinvb, err, g, mj in
        # place, so they stay valid over the pass) and scratch buffers.
        self.col_views = [
            (idx, self.g[:, :, sl], self.kinv[:, :, sl], self.kinvb[:, :, sl],
             self.mj[:, :, sl], np.empty((3, sl.stop - sl.start)),
             np.empty((3, sl.stop - sl.start)), np.empty(idx.shape), sl)
            for sl, idx in zip(self.cols, self.idx_c)]
        self.bias_rate, self.mscale, self.iscale = soft
        # The gap whose correction reaches max_push (engine.settings.joint_max_push): longer
        # gaps are corrected at that speed.
        self.reach = max_push / self.bias_rate if self.bias_rate > 0.0 else np.inf
        self.breakable = bool(np.isfinite(break_force).any())
        self.break_force = break_force
        self.broken = np.zeros(m, dtype=bool)
        self.imp = np.zeros((3, m))         # world impulses, read at the first warm start
        self.loaded = False
        self.tmp = np.empty((3, m))

    # -- geometry ---------------------------------------------------------------------------
    def prepare(self, x, q):
        """Anchors, G, K_w^-1, MJ and the scaled errors (all in preallocated buffers)."""
        n, m = self.n, self.m
        sc = _scratch(m)
        self.xs[:, :n] = x.T
        self.qs[:, :n] = q.T
        if self.inertia is not None:
            self.inert2[...] = self.inertia.update(self.qs.T).transpose(1, 2, 0)
        np.take(self.qs, self.idx2, axis=1, out=sc.q2)
        r2 = _rotate0(sc.q2, self.anc2, self.anc2_1, self.anc2_2, sc)   # [r_a, r_b] (3, 2m)
        x2 = np.take(self.xs, self.idx2, axis=1, out=sc.x2)
        t2 = self.t2
        np.add(x2[:, m:], r2[:, m:], out=t2[:, :m])        # p_b
        d = np.subtract(t2[:, :m], r2[:, :m], out=sc.d)
        d -= x2[:, :m]                                     # C = p_b - p_a
        t2[:, :m] -= x2[:, :m]                             # s = p_b - x_a
        t2[:, m:] = r2[:, m:]
        skew = np.take(t2, _SKEW_IDX, axis=0, out=sc.skew)
        skew[:, :m] *= _SKEW_SIGN[:, None]
        skew[:, m:] *= _NEG_SKEW_SIGN[:, None]
        skew = skew.reshape(3, 3, 2 * m)                   # [[s]x, -[r_b]x]
        si = _mm3_into(skew, self.inert2, sc.si, sc.p)     # M^-1 G^T's angular blocks, ^T
        kk = _mm3t_into(si, skew, sc.kk, sc.p)
        k = np.add(kk[:, :, :m], kk[:, :, m:], out=sc.k)
        k.reshape(9, m)[::4] += self.msum                 # contiguous: reshape is a view
        kinv = _inv3_soa(k, self.kinv, sc)
        # G and MJ's angular blocks; the sweeps apply K^-1 after G (two small products per
        # colour are cheaper than forming K^-1 G here).
        self.g4[:, 1::2] = skew.reshape(3, 3, 2, m).transpose(0, 2, 1, 3)
        self.mj4[:, 1::2] = si.reshape(3, 3, 2, m).transpose(0, 2, 1, 3)
        if np.isfinite(self.reach):
            gap = np.sqrt(np.einsum("rm,rm->m", d, d))
            d *= np.minimum(1.0, self.reach / np.maximum(gap, 1e-300))
        err = _einsum("rsm,sm->rm", kinv, d, out=self.err)
        if self.broken.any():
            keep = ~self.broken
            kinv *= keep
            err *= keep
            self.mj *= keep
        np.multiply(kinv, self.mscale, out=self.kinvb)
        err *= self.mscale * self.bias_rate

    # -- passes -----------------------------------------------------------------------------
    def warm_start(self, vel):
        """The carried impulses applied to the bodies (after prepare)."""
        if not self.loaded:
            self.loaded = True
            # The carried A-frame impulses as world vectors (frame A's axes at the pose the
            # last prepare read: this one).
            qa = np.ascontiguousarray(self.qs[:, self.idx2[:self.m]].T)
            fa = _frame_a(qa, self.frame_a)
            self.imp = np.einsum("mij,mj->im", fa, self.lam0) * ~self.broken
        dv = _einsum("rm,rcm->cm", self.imp, self.mj)
        n6 = (self.n + 1) * 6
        add = np.bincount(self.flat_all, weights=dv.ravel(), minlength=n6)
        # Impacts are not carried over (engine.joint_solver.impact_scale).
        vp = self.vp
        vp[:self.n * 6] = vel.ravel()
        p = _einsum("rm,rcm->cm", self.imp, self.g)
        v0 = vp[self.flat_all].reshape(12, self.m)
        vp[:self.n * 6] += add[:self.n * 6]
        s = impact_scale(p.T, dv.T, v0.T, vp[self.flat_all].reshape(12, self.m).T)
        if s is not None:
            self.imp *= s
            dv *= s
            add = np.bincount(self.flat_all, weights=dv.ravel(), minlength=n6)
        vel += add[:self.n * 6].reshape(self.n, 6)

    def solve(self, vel, use_bias):
        """One coloured sweep: dl = -ms K^-1 (G v + br C) - is lam (biased), -K^-1 G v (relax)."""
        n = self.n
        vp = self.vp
        vp[:n * 6] = vel.ravel()
        imp, err = self.imp, None
        if use_bias:
            # A colour's impulses are still the carried ones when its turn comes, so the
            # leak is * lam of the whole sweep joins the bias term up front.
            err = self.tmp
            np.multiply(imp, self.iscale, out=err)
            err += self.err
        sub = np.subtract
        for idx, g, kinv, kinvb, mj, gv, t, dv, sl in self.col_views:
            v = vp[idx]     # fancy indexing: faster than take / put at these sizes
            _einsum("rcm,cm->rm", g, v, out=gv)
            if err is None:
                _einsum("rsm,sm->rm", kinv, gv, out=t)
            else:
                _einsum("rsm,sm->rm", kinvb, gv, out=t)
                t += err[:, sl]
            imp_c = imp[:, sl]
            sub(imp_c, t, out=imp_c)
            _einsum("rm,rcm->cm", t, mj, out=dv)
            v -= dv
            vp[idx] = v
        vel[...] = vp[:n * 6].reshape(n, 6)

    def end_substep(self):
        """Breaking: the substep's reaction |lam| / h against break_force."""
        if not self.breakable:
            return
        f = np.sqrt(np.einsum("rm,rm->m", self.imp, self.imp)) / self.h
        snap = (f > self.break_force) & ~self.broken
        if snap.any():
            self.broken |= snap
            self.imp[:, snap] = 0.0
            self.kinv[:, :, snap] = 0.0
            self.kinvb[:, :, snap] = 0.0
            self.err[:, snap] = 0.0
            self.mj[:, :, snap] = 0.0

    def force(self):
        """(m, 3) the last substep's force on B (world)."""
        return self.imp.T / self.h

    def impulse_a_frame(self):
        """(m, 3) the lock impulses along frame A's axes at the current pose (engine.joints'
        storage)."""
        if not self.loaded:
            return self.lam0
        qa = np.ascontiguousarray(self.qs[:, self.idx2[:self.m]].T)
        return np.einsum("mji,jm->mi", _frame_a(qa, self.frame_a), self.imp)
