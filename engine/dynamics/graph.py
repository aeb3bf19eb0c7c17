"""Constraint graph: colouring for the batched solver, islands for sleeping.

Colouring. The solver updates all constraints of one colour at once with fancy indexing, which
is only a correct Gauss-Seidel sweep if no two of them touch the same *dynamic* body (two
writes to one body's velocity in one batch would lose one). Static and kinematic bodies are
never written, so they are shared freely, as in Box2D v3's graph colouring; this matters,
since every box on the ground touches the same ground body.

We compute the greedy "first free colour" colouring of the constraints taken in a fixed
order (the colouring Box2D computes in creation order), but in parallel rounds, as in Jones &
Plassmann (1993): a constraint is coloured in the round where it comes first, in that order,
among the still-uncoloured constraints at each of its dynamic bodies. Its earlier neighbours
are then all coloured, so it sees what sequential first fit would see, and the constraints
coloured in one round share no dynamic body, so their colour bits can be written at once.
Each body keeps its constraints sorted by the order, so "first uncoloured at this body" is
a pointer that advances by one when that constraint is coloured.

The number of rounds is the longest path of adjacent constraints along which the order falls, so
the order matters twice. A hash of the index keeps chains short on any graph (about 85 rounds
on a 1000-cube pile). The input order (pairs sorted by body, from the broadphase) gives fewer
colours when bodies are numbered coherently in space, as scenes usually are: 26 instead of
29-32 on a 1000-cube pile whose busiest body has D = 26 constraints, but it can take one round
per link on a chain listed link by link. We run the hash order, then the input order with a
round budget of a few times what the hash order took, and keep the one with fewer colours.

Greedy first fit uses at most 2*D - 1 colours (D = most constraints at one dynamic body);
no colouring can use fewer than D.

Islands. Bodies linked by a constraint chain through dynamic bodies form an island (they
sleep and wake together). Static bodies join nothing: the ground does not merge every pile
resting on it into one island. Labels come from min-label hooking with pointer jumping, a
vectorised union-find: each round, every root hooks to the smallest root across its edges,
then all pointers jump to their roots. Parents only ever decrease, so the final label of a
body is the smallest body index in its island.
"""
from typing import NamedTuple

import numpy as np

from ..core.errors import EngineError

# Colours before the rest go to one shared (Jacobi, scatter-add) overflow colour: each colour
# costs a solver pass of numpy calls, and a 1000-cube pile needs 26.
DEFAULT_MAX_COLOURS = 64
# The input-order first fit is abandoned past this many times the rounds the hash order took
# (a long chain of consecutive constraints takes one round per link in that order).
INPUT_ORDER_ROUND_FACTOR = 3


class Colouring(NamedTuple):
    colour: np.ndarray     # (M,) int64 colour of each constraint, 0 .. n_colours - 1
    n_colours: int
    order: np.ndarray      # (M,) constraint indices sorted by colour (stable: by index inside)
    offsets: np.ndarray    # (n_colours + 1,) colour c is order[offsets[c]:offsets[c + 1]]
    overflow: int          # constraints that found no colour below max_colours (see below)


def colour_constraints(body_a, body_b, is_static, max_colours=DEFAULT_MAX_COLOURS):
    """Colour constraints so no two of one colour share a dynamic body.

    body_a, body_b: (M,) int body indices of each constraint; is_static: (N,) bool, True for
    static / kinematic bodies (shared freely). Deterministic: same input, same colouring.
    If some constraint would need colour `max_colours` or more, it goes to an *overflow*
    colour, the last one (index max_colours), whose constraints may share bodies: the solver
    must handle that colour with scatter-adds. `overflow` counts them (0 in normal scenes).
    Returns a `Colouring` (colour, n_colours, order, offsets, overflow).
    """
    a, b, is_static = _check_graph(body_a, body_b, is_static)
    if not 1 <= max_colours <= 64:
        raise EngineError(f"max_colours must be in [1, 64] (one 64-bit mask per body), got "
                          f"{max_colours}; constraints beyond it share the overflow colour")
    m = len(a)
    dyn_a = ~is_static[a]
    dyn_b = ~is_static[b] & (b != a)  # a constraint from a body to itself has one end
    if m:
        # Incidence entries (body, constraint, other end) for each dynamic end. "Other end"
        # is the body itself when the other end is static, so the readiness test needs no
        # special case. Each constraint is coloured from one canonical entry: its `a` end if
        # dynamic, else its `b` end.
        ca, cb = np.flatnonzero(dyn_a), np.flatnonzero(dyn_b)
        inc = (np.concatenate((ca, cb)),
               np.concatenate((a[ca], b[cb])),
               np.concatenate((np.where(dyn_b[ca], b[ca], a[ca]),
                               np.where(dyn_a[cb], a[cb], b[cb]))),
               np.concatenate((np.ones(len(ca), bool), ~dyn_a[cb])))
        n = len(is_static)
        allowed = ~np.uint64(0) >> np.uint64(64 - max_colours)
        # Two first-fit orders, keep the one with fewer colours:
        # - a hash of the index: decreasing chains, hence rounds, stay short on any graph;
        # - the input order: pairs come from the broadphase sorted by body, and when bodies
        #   are numbered coherently in space (as scenes are usually built), first fit in
        #   that order gets close to the D-colour bound (26 instead of 29-32 colours on a
        #   1000-cube pile, D = 26). A long chain of consecutive constraints would take one
        #   round per link in that order, so it is abandoned past a few times the rounds
        #   the hash order took, or as soon as it reaches the hash order's top colour.
        cbit, rounds = _first_fit(inc, _priority_rank(m), n, m, allowed)
        bound = int(np.bincount(inc[1], minlength=n).max()) if len(inc[1]) else 0
        if np.count_nonzero(cbit == 0) or int(cbit.max()).bit_length() > bound:
            # Not yet at the lower bound D: try the input order.
            cbit_in, _ = _first_fit(inc, np.arange(m), n, m, allowed,
                                    max_rounds=INPUT_ORDER_ROUND_FACTOR * rounds + 16,
                                    give_up_at=cbit.max())
            if cbit_in is not None and _worse(cbit, cbit_in):
                cbit = cbit_in
    else:
        cbit = np.ones(0, dtype=np.uint64)
    # frexp(2^k) = (0.5, k + 1) exactly; frexp(0) = (0, 0) gives -1: the overflow colour.
    colour = np.frexp(cbit.astype(np.float64))[1].astype(np.int64) - 1
    overflow = int(np.count_nonzero(cbit == 0))
    colour[cbit == 0] = max_colours
    n_colours = int(colour.max()) + 1 if m else 0
    # Colours fit in a byte, and a stable sort of bytes is a fast radix sort in numpy.
    order = np.argsort(colour.astype(np.uint8), kind="stable")
    offsets = np.zeros(n_colours + 1, dtype=np.int64)
    np.cumsum(np.bincount(colour, minlength=n_colours), out=offsets[1:])
    return Colouring(colour, n_colours, order, offsets, overflow)


def islands(n_bodies, body_a, body_b, is_static):
    """Island label per body: the smallest body index in its island, -1 for static bodies.

    Constraints (body_a[k], body_b[k]) link two dynamic bodies into one island; a constraint
    to a static body links nothing. A dynamic body with no links is an island of its own.
    """
    a, b, is_static = _check_graph(body_a, body_b, is_static)
    if len(is_static) != n_bodies:
        raise EngineError(f"islands: is_static has {len(is_static)} entries for {n_bodies} "
                          "bodies; pass one flag per body")
    keep = ~is_static[a] & ~is_static[b] & (a != b)
    u, v = a[keep], b[keep]
    parent = np.arange(n_bodies, dtype=np.int64)
    while len(u):
        pu, pv = parent[u], parent[v]
        cross = pu != pv
        # An edge inside one tree stays inside it: drop it for good.
        u, v, pu, pv = u[cross], v[cross], pu[cross], pv[cross]
        if not len(u):
            break
        # pu, pv are roots (pointers are fully jumped below): hook the larger root under
        # the smallest root it touches. parent[x] <= x always, so no cycle can form.
        np.minimum.at(parent, np.maximum(pu, pv), np.minimum(pu, pv))
        while True:
            jumped = parent[parent]
            if np.array_equal(jumped, parent):
                break
            parent = jumped
    parent[is_static] = -1
    return parent


def _first_fit(inc, rank, n, m, allowed, max_rounds=None, give_up_at=None):
    """First-fit colouring in `rank` order by Jones-Plassmann rounds.

    inc: incidence entries (constraint, body, other end, canonical?) of the dynamic ends.
    Returns (cbit, rounds): each constraint's colour as a one-bit mask (0 = no colour below
    the cap: overflow; a constraint touching no dynamic body keeps colour 0, bit 1), and the
    rounds taken. cbit is None if max_rounds ran out first, or if some constraint took the
    colour bit `give_up_at` or a higher one, or overflowed (then this colouring cannot beat
    the one that used `give_up_at` as its top colour)."""
    cons, body, other, canon = inc
    cbit = np.ones(m, dtype=np.uint64)
    if not len(cons):
        return cbit, 0
    used = np.zeros(n, dtype=np.uint64)   # colour bits taken at each body
    head = np.zeros(n, dtype=np.int64)    # best uncoloured constraint at each body
    srt = np.argsort(body * np.int64(m) + rank[cons])  # keys are distinct: any sort
    cons, body, other, canon = cons[srt], body[srt], other[srt], canon[srt]
    ptr = np.flatnonzero(np.concatenate(([True], body[1:] != body[:-1])))  # list starts
    end = np.append(ptr[1:], len(body))
    live = body[ptr]                      # bodies with uncoloured constraints
    rounds = 0
    while len(live):
        if max_rounds is not None and rounds >= max_rounds:
            return None, rounds
        rounds += 1
        h = cons[ptr]
        head[live] = h
        # h is ready when it is the head at its other end too.
        ready = head[other[ptr]] == h
        e = ptr[ready & canon[ptr]]
        v, o = body[e], other[e]
        free = ~(used[v] | used[o]) & allowed
        low = free & -free  # lowest free colour bit (0 if none: overflow)
        cbit[cons[e]] = low
        if give_up_at is not None and len(low) and (low.max() >= give_up_at or not low.min()):
            return None, rounds
        # In one round no two ready constraints share a dynamic body: plain writes.
        used[v] |= low
        used[o] |= low
        # Every body whose head was coloured moves on to its next constraint.
        ptr = ptr + ready
        alive = ptr < end
        live, ptr, end = live[alive], ptr[alive], end[alive]
    return cbit, rounds


def _worse(cbit, other):
    """Does colouring `cbit` have more overflow, or as much and more colours, than `other`?"""
    key = (np.count_nonzero(cbit == 0), int(cbit.max()))
    key_other = (np.count_nonzero(other == 0), int(other.max()))
    return key_other < key


# ----------------------------------------------------------------------------- helpers

def _check_graph(body_a, body_b, is_static):
    a = np.asarray(body_a).astype(np.int64, copy=False).ravel()
    b = np.asarray(body_b).astype(np.int64, copy=False).ravel()
    s = np.asarray(is_static, dtype=bool).ravel()
    if a.shape != b.shape:
        raise EngineError(f"body_a and body_b must have the same length, got {a.shape} and "
                          f"{b.shape}")
    n = len(s)
    if len(a) and (min(a.min(), b.min()) < 0 or max(a.max(), b.max()) >= n):
        raise EngineError(f"constraint body indices must lie in [0, {n}) (is_static has one "
                          "flag per body); check the constraint arrays")
    return a, b, s


_PERM_CACHE: dict = {}


def _priority_rank(m):
    """Distinct pseudo-random ranks 0..m-1 from a hash of the index (no RNG state).

    The hash order of 0..M-1 (M = m rounded up to a power of two) is computed once and
    cached; the ranks for any m <= M are that order restricted to indices below m, so
    changing m from step to step costs no sort."""
    size = 1 << max(int(m - 1).bit_length(), 4)
    perm = _PERM_CACHE.get(size)
    if perm is None:
        x = np.arange(size, dtype=np.uint64)
        # splitmix64 finaliser: a bijection on 64-bit integers, so no two indices collide.
        with np.errstate(over="ignore"):
            x = x + np.uint64(0x9E3779B97F4A7C15)
            x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            x = x ^ (x >> np.uint64(31))
        perm = np.argsort(x)
        if len(_PERM_CACHE) > 8:
            _PERM_CACHE.clear()
        _PERM_CACHE[size] = perm
    order = perm[perm < m]
    rank = np.empty(m, dtype=np.int64)
    rank[order] = np.arange(m)
    return rank
