"""Exact lock solve of chains (ropes, hanging chains, loose links) by block cyclic reduction.

engine.dynamics.joint_solver's direct mode solves all lock rows of a small loop-free system together,
K dl = rhs with K = J M^-1 J^T, refactoring every substep. Dense, that is a Gauss-Jordan
inverse of ~150 rows (4.8 ms) per substep for a 50-link rope. When every moving body carries at
most two of the joints, the joints form paths (chains), and K, with the joints ordered along
their paths and each joint's d rows (3 for point joints, 6 otherwise; rows that are not locks
padded as identity) kept together, is block tridiagonal: D_i = K_ii, E_i = K_(i, i+1) (nonzero
only when joints i and i + 1 share a moving body; zero between two paths). Several paths are
one system (their E between them is zero).

Block cyclic reduction eliminates every odd block of the current system in one batched step
(each odd block's neighbours are even), leaving a block tridiagonal system of the even blocks
half as long: log2(n) levels for n joints, each a handful of numpy calls on (n / 2^l, d, d)
arrays, so the cost is numpy calls per level, not per joint. It is Gaussian elimination of an
SPD matrix in another order (the reduced blocks are Schur complements, again SPD), so it is
exact like the dense inverse; only elementwise numpy and einsum (no LAPACK/BLAS) are used, so
replays are bit identical.
"""
import numpy as np

from .joint_math import inv3


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


def spd_inverse_batch(k):
    """Inverses of SPD matrices (n, d, d) by Gauss-Jordan without pivoting, batched over n
    (d rank-1 updates; elementwise numpy only); 3 x 3 ones by the adjugate (fewer calls)."""
    n, d, _ = k.shape
    if d == 3:
        return inv3(k)
    a = np.concatenate((k, np.broadcast_to(np.eye(d), (n, d, d))), axis=2)
    for i in range(d):
        a[:, i] /= a[:, i, i][:, None]
        col = a[:, :, i].copy()
        col[:, i] = 0.0
        a -= col[:, :, None] * a[:, i][:, None, :]
    return np.ascontiguousarray(a[:, :, d:])


class ChainSystem:
    """Factor of a block tridiagonal SPD system (diagonal blocks D (n, d, d), couplings
    E (n - 1, d, d) with E[i] = K_(i, i+1)) by block cyclic reduction; solve(b) for b (n, d)."""

    def __init__(self, diag, off):
        self.levels = []
        d = diag.shape[1]
        eye = np.eye(d)
        while len(diag) > 1:
            # Even length: a phantom block (identity, uncoupled) gives the last odd block a
            # right neighbour; it stays uncoupled and is dropped from the reduced system.
            pad = len(diag) % 2 == 0
            if pad:
                diag = np.concatenate((diag, eye[None]))
                off = np.concatenate((off, np.zeros((1, d, d))))
            dinv = spd_inverse_batch(diag[1::2])
            el, er = off[0::2], off[1::2]          # E_(i-1), E_i of each odd block i
            # Terms the odd blocks pass to their even neighbours (Schur complements).
            left = np.einsum("erc,ecs->ers", el, dinv)             # E_(i-1) Dinv_i
            right = np.einsum("ecr,ecs->ers", er, dinv)            # E_i^T Dinv_i
            new = diag[0::2].copy()
            new[:-1] -= np.einsum("erc,esc->ers", left, el)        # E_(i-1) Dinv E_(i-1)^T
            new[1:] -= np.einsum("erc,ecs->ers", right, er)        # E_i^T Dinv E_i
            self.levels.append((pad, dinv, el, er, left, right))
            off = -np.einsum("erc,ecs->ers", left, er)             # -E_(i-1) Dinv_i E_i
            diag = new
            if pad:
                diag, off = diag[:-1], off[:-1]
        self.root = spd_inverse_batch(diag)

    def solve(self, b):
        """x with K x = b, b (n, d)."""
        zero = np.zeros((1, b.shape[1]))
        stack = []
        for pad, _dinv, _el, _er, left, right in self.levels:
            if pad:
                b = np.concatenate((b, zero))
            stack.append(b)
            odd = b[1::2]
            nb = b[0::2].copy()
            nb[:-1] -= np.einsum("ers,es->er", left, odd)
            nb[1:] -= np.einsum("ers,es->er", right, odd)
            b = nb[:-1] if pad else nb
        x = np.einsum("ers,es->er", self.root, b)
        for (pad, dinv, el, er, _l, _r), bl in zip(reversed(self.levels), reversed(stack)):
            if pad:
                x = np.concatenate((x, zero))
            full = np.empty(bl.shape)
            full[0::2] = x
            rhs = (bl[1::2] - np.einsum("ecr,ec->er", el, x[:-1])
                   - np.einsum("erc,ec->er", er, x[1:]))
            full[1::2] = np.einsum("ers,es->er", dinv, rhs)
            x = full[:-1] if pad else full
        return x
