"""Exact lock solve of chains (ropes, hanging chains, loose links) by block elimination.

engine.dynamics.joint_solver's direct mode solves all lock rows of a small loop-free system together,
K dl = rhs with K = J M^-1 J^T, refactoring every substep. Dense, that is a Gauss-Jordan
inverse of ~150 rows (4.8 ms) per substep for a 50-link rope. When every moving body carries at
most two of the joints, the joints form paths (chains), and K, with the joints ordered along
their paths and each joint's d rows (3 for point joints, 6 otherwise; rows that are not locks
padded as identity) kept together, is block tridiagonal: D_i = K_ii, E_i = K_(i, i+1) (nonzero
only when joints i and i + 1 share a moving body; zero between two paths). Several paths are
one system (their E between them is zero).

Compiled (chain_factor, chain_solve), the solve is block Gaussian elimination along the chain
(block LDL^T: the Schur complement of each block in turn, O(n d^3) in one kernel call) then a
forward and a back substitution: exact like the dense inverse, SPD blocks (the Schur
complements of an SPD matrix) inverted by Gauss-Jordan without pivoting, in a fixed order, so
replays are bit identical. (The numpy version of this module used block cyclic reduction, whose
log2(n) batched levels kept the numpy calls few; a kernel has no such need.)
"""
import numpy as np

from ..core.jit import kernel


def chain_order(a, b, world, awake):
    """The joints (a[k], b[k]) ordered along their paths, or None when some moving body has
    three or more of them (a tree with branches, or a star: the dense path takes it).

    Returns (order, side_prev, side_next, link): order (m,) the joint indices along the paths
    (paths one after another); for each consecutive pair (order[i], order[i + 1]), link[i]
    whether they share a moving body and on which side of each it is (0: A, 1: B). Call it on
    loop-free systems only (engine.dynamics.joint_solver._has_cycle). Runs when the joint structure of
    a collision pass changes (the caller caches it), not per substep."""
    m = len(a)
    ea = np.where(world | ~awake[a], -1, a)
    eb = np.where(~awake[b], -1, b)
    ends = np.concatenate((ea, eb))
    moving = ends[ends >= 0]
    if len(moving) and np.bincount(moving).max() > 2:
        return None
    # Joint neighbours through each shared moving body (at most one per side).
    nb = np.full((m, 2), -1)
    nside = np.zeros((m, 2), dtype=np.int64)    # the shared body's side in the neighbour
    srt = np.argsort(ends, kind="stable")
    se = ends[srt]
    pair = np.flatnonzero((se[1:] == se[:-1]) & (se[1:] >= 0))
    for p in pair.tolist():   # one pair per shared body (structure change only)
        u, v = int(srt[p]), int(srt[p + 1])
        ju, su, jv, sv = u % m, u // m, v % m, v // m
        nb[ju, su], nside[ju, su] = jv, sv
        nb[jv, sv], nside[jv, sv] = ju, su
    order, side_prev, side_next, link = [], [], [], []
    seen = np.zeros(m, dtype=bool)
    starts = [j for j in range(m) if (nb[j] < 0).any()]   # path ends (loop-free: every path has one)
    for s in starts:
        if seen[s]:
            continue
        j, came = s, -1
        while True:
            seen[j] = True
            order.append(j)
            nxt = [(int(nb[j, k]), k, int(nside[j, k])) for k in (0, 1)
                   if nb[j, k] >= 0 and nb[j, k] != came]
            if not nxt:
                break
            jn, k, sn = nxt[0]
            side_prev.append(k)
            side_next.append(sn)
            link.append(True)
            came, j = j, jn
        side_prev.append(0)
        side_next.append(0)
        link.append(False)
    if len(order) != m:
        return None
    return (np.array(order), np.array(side_prev[:-1], dtype=np.int64),
            np.array(side_next[:-1], dtype=np.int64), np.array(link[:-1], dtype=bool))


@kernel
def spd_inverse(k, out):
    """out = k^-1 of one symmetric positive definite matrix (d, d) by Gauss-Jordan without
    pivoting (k is overwritten). A pivot that is not positive and finite (the rows' bodies
    cannot move along some direction) gives a zero inverse, whose rows then get no impulse,
    as joint_math.inv3 does for a 3 x 3 block."""
    d = k.shape[0]
    for r in range(d):
        for c in range(d):
            out[r, c] = 1.0 if r == c else 0.0
    for i in range(d):
        p = k[i, i]
        if not (p > 0.0 and np.isfinite(p)):
            out[:, :] = 0.0
            return
        inv = 1.0 / p
        for c in range(d):
            k[i, c] *= inv
            out[i, c] *= inv
        for r in range(d):
            if r == i:
                continue
            f = k[r, i]
            if f == 0.0:
                continue
            for c in range(d):
                k[r, c] -= f * k[i, c]
                out[r, c] -= f * out[i, c]


@kernel
def chain_factor(diag, off, sinv, lower, work):
    """Block LDL^T of the block tridiagonal SPD K (diag D (n, d, d), off E (n - 1, d, d),
    E[i] = K_(i, i+1)): the inverse Schur complements sinv (n, d, d), S_0 = D_0,
    S_i = D_i - E_(i-1)^T S_(i-1)^-1 E_(i-1), and lower[i - 1] = E_(i-1)^T S_(i-1)^-1.
    work (d, d) scratch."""
    n, d = diag.shape[0], diag.shape[1]
    for i in range(n):
        for r in range(d):
            for c in range(d):
                work[r, c] = diag[i, r, c]
        if i > 0:
            for r in range(d):
                for c in range(d):
                    s = 0.0
                    for t in range(d):
                        s += off[i - 1, t, r] * sinv[i - 1, t, c]
                    lower[i - 1, r, c] = s
            for r in range(d):
                for c in range(d):
                    s = 0.0
                    for t in range(d):
                        s += lower[i - 1, r, t] * off[i - 1, t, c]
                    work[r, c] -= s
        spd_inverse(work, sinv[i])


@kernel
def chain_solve(sinv, off, lower, b):
    """b (n, d) := K^-1 b with chain_factor's factor: forward y_i = b_i - L_(i-1) y_(i-1),
    back x_i = S_i^-1 (y_i - E_i x_(i+1))."""
    n, d = b.shape[0], b.shape[1]
    for i in range(1, n):
        for r in range(d):
            s = 0.0
            for t in range(d):
                s += lower[i - 1, r, t] * b[i - 1, t]
            b[i, r] -= s
    y = np.empty(d)
    for i in range(n - 1, -1, -1):
        for r in range(d):
            y[r] = b[i, r]
            if i < n - 1:
                for t in range(d):
                    y[r] -= off[i, r, t] * b[i + 1, t]
        for r in range(d):
            s = 0.0
            for t in range(d):
                s += sinv[i, r, t] * y[t]
            b[i, r] = s


class ChainSystem:
    """Factor of a block tridiagonal SPD system (diagonal blocks D (n, d, d), couplings
    E (n - 1, d, d) with E[i] = K_(i, i+1)) by block elimination along the chain
    (chain_factor); solve(b) for b (n, d)."""

    def __init__(self, diag, off):
        n, d = diag.shape[0], diag.shape[1]
        self.off = np.ascontiguousarray(off, dtype=np.float64)
        self.sinv = np.empty((n, d, d))
        self.lower = np.empty((max(n - 1, 0), d, d))
        chain_factor(np.ascontiguousarray(diag, dtype=np.float64), self.off, self.sinv,
                     self.lower, np.empty((d, d)))

    def solve(self, b):
        """x with K x = b, b (n, d)."""
        x = np.array(b, dtype=np.float64)
        chain_solve(self.sinv, self.off, self.lower, x)
        return x
