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
"""
import itertools

import numpy as np

from .joint_math import inv3_soa, quat_matrix, quat_mul

_P1 = np.array([1, 2, 0])
_P2 = np.array([2, 0, 1])
# Skew matrix [t]x of t (3, k) as (t[_SKEW_IDX] * _SKEW_SIGN[:, None]).reshape(3, 3, k).
_SKEW_IDX = np.array([0, 2, 1, 2, 0, 0, 1, 0, 0])
_SKEW_SIGN = np.array([0.0, -1.0, 1.0, 1.0, 0.0, -1.0, -1.0, 1.0, 0.0])


def point_lock_only(g):
    """Is every joint (engine.joints fields gathered in g) a pure point lock: the three linear
    axes locked at zero, nothing else locked, limited, sprung or driven?"""
    lock = g["lock"]
    return bool(lock[:, :3].all() and not lock[:, 3:].any() and not g["limited"].any()
                and not g["spring"].any() and not g["motor"].any()
                and not g["target"][:, :3].any())


def _cross0(a, b):
    """Cross products along the first axis of (3, ...) arrays."""
    return a[_P1] * b[_P2] - a[_P2] * b[_P1]


def _rotate0(q, v):
    """Rotate vectors v (3, k) by unit quaternions q (4, k) (quat.rotate's arithmetic)."""
    u = q[1:]
    t = _cross0(u, v)
    t *= 2.0
    out = q[:1] * t
    out += v
    out += _cross0(u, t)
    return out


def _mm3(a, b):
    """Products of component-major 3 x 3 matrices (3, 3, ...) (elementwise numpy only)."""
    return a[:, 0, None] * b[None, 0] + a[:, 1, None] * b[None, 1] + a[:, 2, None] * b[None, 2]


def _mm3t(a, b):
    """a b^T of component-major 3 x 3 matrices (3, 3, ...)."""
    return (a[:, 0, None] * b[None, :, 0] + a[:, 1, None] * b[None, :, 1]
            + a[:, 2, None] * b[None, :, 2])


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
                 inv_inertia, h, soft, break_force):
        n = len(inv_mass)
        m = len(a)
        self.n, self.m, self.h = n, m, h
        self.frame_a, self.lam0 = frame_a, lam0
        ia = np.where(world, n, a)          # the world side reads the spare slot n
        self.idx2 = np.concatenate((ia, b))
        self.anc2 = np.ascontiguousarray(np.concatenate((anchor_a, anchor_b)).T)  # (3, 2m)
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
        iip = np.concatenate((inv_inertia, np.zeros((1, 3, 3))))
        self.inert2 = np.ascontiguousarray(iip[self.idx2].transpose(1, 2, 0))  # (3, 3, 2m)
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
        self.sign2 = np.concatenate((np.broadcast_to(_SKEW_SIGN[:, None], (9, m)),
                                     np.broadcast_to(-_SKEW_SIGN[:, None], (9, m))), axis=1)
        self.t2 = np.empty((3, 2 * m))
        self.bias_rate, self.mscale, self.iscale = soft
        self.breakable = bool(np.isfinite(break_force).any())
        self.break_force = break_force
        self.broken = np.zeros(m, dtype=bool)
        self.imp = np.zeros((3, m))         # world impulses, read at the first warm start
        self.loaded = False
        self.tmp = np.empty((3, m))

    # -- geometry ---------------------------------------------------------------------------
    def prepare(self, x, q):
        """Anchors, G, K_w^-1, MJ and the scaled errors."""
        n, m = self.n, self.m
        self.xs[:, :n] = x.T
        self.qs[:, :n] = q.T
        r2 = _rotate0(self.qs[:, self.idx2], self.anc2)   # [r_a, r_b] (3, 2m)
        x2 = self.xs[:, self.idx2]
        t2 = self.t2
        np.add(x2[:, m:], r2[:, m:], out=t2[:, :m])        # p_b
        d = t2[:, :m] - r2[:, :m]
        d -= x2[:, :m]                                     # C = p_b - p_a
        t2[:, :m] -= x2[:, :m]                             # s = p_b - x_a
        t2[:, m:] = r2[:, m:]
        skew = (t2[_SKEW_IDX] * self.sign2).reshape(3, 3, 2 * m)  # [[s]x, -[r_b]x]
        si = _mm3(skew, self.inert2)                       # M^-1 G^T's angular blocks, ^T
        kk = _mm3t(si, skew)
        k = kk[:, :, :m] + kk[:, :, m:]
        k.reshape(9, m)[::4] += self.msum                 # contiguous: reshape is a view
        kinv = inv3_soa(k)
        # G and MJ's angular blocks; the sweeps apply K^-1 after G (two small products per
        # colour are cheaper than forming K^-1 G here).
        self.g4[:, 1::2] = skew.reshape(3, 3, 2, m).transpose(0, 2, 1, 3)
        self.mj4[:, 1::2] = si.reshape(3, 3, 2, m).transpose(0, 2, 1, 3)
        err = np.einsum("rsm,sm->rm", kinv, d)
        if self.broken.any():
            keep = ~self.broken
            kinv *= keep
            err *= keep
            self.mj *= keep
        self.kinv = kinv
        self.kinvb = kinv * self.mscale
        err *= self.mscale * self.bias_rate
        self.err = err

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
        dv = np.einsum("rm,rcm->cm", self.imp, self.mj)
        add = np.bincount(self.flat_all, weights=dv.ravel(), minlength=(self.n + 1) * 6)
        vel += add[:self.n * 6].reshape(self.n, 6)

    def solve(self, vel, use_bias):
        """One coloured sweep: dl = -ms K^-1 (G v + br C) - is lam (biased), -K^-1 G v (relax)."""
        n = self.n
        vp = self.vp
        vp[:n * 6] = vel.ravel()
        imp, mj, g = self.imp, self.mj, self.g
        kinv, err = self.kinv, None
        if use_bias:
            # A colour's impulses are still the carried ones when its turn comes, so the
            # leak is * lam of the whole sweep joins the bias term up front.
            kinv, err = self.kinvb, self.tmp
            np.multiply(imp, self.iscale, out=err)
            err += self.err
        for sl, idx in zip(self.cols, self.idx_c):
            v = vp[idx]
            t = np.einsum("rsm,sm->rm", kinv[:, :, sl], np.einsum("rcm,cm->rm", g[:, :, sl], v))
            if err is not None:
                t += err[:, sl]
            imp[:, sl] -= t
            v -= np.einsum("rm,rcm->cm", t, mj[:, :, sl])
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
