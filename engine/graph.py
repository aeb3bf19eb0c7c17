"""Constraint graph: colouring for the batched solver, islands for sleeping.

Colouring. The solver updates all constraints of one colour at once with fancy indexing, which
is only a correct Gauss-Seidel sweep if no two of them touch the same *dynamic* body (two
writes to one body's velocity in one batch would lose one). Static and kinematic bodies are
never written, so they are shared freely, as in Box2D v3's graph colouring; this matters,
since every box on the ground touches the same ground body.

We compute exactly the greedy "first free colour" colouring of the constraints taken in a
fixed pseudo-random priority order (the colouring Box2D computes in creation order), but in
parallel rounds, as in Jones & Plassmann (1993): a constraint is coloured in the round where
it has the best priority among the still-uncoloured constraints at each of its dynamic bodies.
Its earlier neighbours are then all coloured, so it sees what sequential greedy would see,
and the constraints coloured in one round share no dynamic body, so their colour bits can be
written at once. Each body keeps its constraints sorted by priority, so "best uncoloured at
this body" is just a pointer that advances by one when that constraint is coloured. With random
priorities the longest chain of decreasing priorities, hence the number of rounds, stays short
(O(log m) in practice), which is why the order is a hash of the index and not the index
itself (a row of boxes in index order would take one round per box).

Greedy first-fit uses at most 2*D - 1 colours (D = most constraints at one dynamic body) and
in practice close to D + 1; no colouring can use fewer than D.

Islands. Bodies linked by a constraint chain through dynamic bodies form an island (they
sleep and wake together). Static bodies join nothing: the ground does not merge every pile
resting on it into one island. Labels come from min-label hooking with pointer jumping, a
vectorised union-find: each round, every root hooks to the smallest root across its edges,
then all pointers jump to their roots. Parents only ever decrease, so the final label of a
body is the smallest body index in its island.
"""
from typing import NamedTuple

import numpy as np

from .errors import EngineError

DEFAULT_MAX_COLOURS = 64


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
    # Colour of each constraint as a one-bit mask; 0 = none found (overflow). A constraint
    # touching no dynamic body conflicts with nothing and keeps colour 0 (bit 1).
    cbit = np.ones(m, dtype=np.uint64)
    if m:
        # Incidence entries (body, constraint, other end) for each dynamic end, sorted by
        # body then by the constraint's priority rank. "Other end" is the body itself when
        # the other end is static, so the readiness test below needs no special case.
        rank = _priority_rank(m)
        ca, cb = np.flatnonzero(dyn_a), np.flatnonzero(dyn_b)
        cons = np.concatenate((ca, cb))
        body = np.concatenate((a[ca], b[cb]))
        other = np.concatenate((np.where(dyn_b[ca], b[ca], a[ca]), np.where(dyn_a[cb], a[cb], b[cb])))
        # Each constraint is coloured from one canonical entry: its `a` end if dynamic.
        canon = np.concatenate((np.ones(len(ca), bool), ~dyn_a[cb]))
        srt = np.argsort(body * np.int64(m) + rank[cons], kind="stable")
        inc_cons, inc_body, inc_other, inc_canon = cons[srt], body[srt], other[srt], canon[srt]
        # Bodies renumbered 0..B-1 (only those with constraints) to keep arrays small.
        ubody, start, deg = np.unique(inc_body, return_index=True, return_counts=True)
        inc_body = np.searchsorted(ubody, inc_body)
        inc_other = np.searchsorted(ubody, inc_other)
        allowed = ~np.uint64(0) >> np.uint64(64 - max_colours)
        used = np.zeros(len(ubody), dtype=np.uint64)  # colour bits taken at each body
        head = np.zeros(len(ubody), dtype=np.int64)   # best uncoloured constraint at a body
        live = np.arange(len(ubody))                  # bodies with uncoloured constraints
        ptr, end = start, start + deg                 # their current entry, and list end
        while len(live):
            h = inc_cons[ptr]
            head[live] = h
            # h is ready when it is the head at its other end too.
            ready = head[inc_other[ptr]] == h
            e = ptr[ready & inc_canon[ptr]]
            v, o = inc_body[e], inc_other[e]
            free = ~(used[v] | used[o]) & allowed
            low = free & -free  # lowest free colour bit (0 if none: overflow)
            cbit[inc_cons[e]] = low
            # In one round no two ready constraints share a dynamic body: plain writes.
            used[v] |= low
            used[o] |= low
            # Every body whose head was coloured moves on to its next constraint.
            ptr = ptr + ready
            alive = ptr < end
            live, ptr, end = live[alive], ptr[alive], end[alive]
    # frexp(2^k) = (0.5, k + 1) exactly; frexp(0) = (0, 0) gives -1: the overflow colour.
    colour = np.frexp(cbit.astype(np.float64))[1].astype(np.int64) - 1
    overflow = int(np.count_nonzero(cbit == 0))
    colour[cbit == 0] = max_colours
    n_colours = int(colour.max()) + 1 if m else 0
    order = np.argsort(colour, kind="stable")
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


def _priority_rank(m):
    """Distinct pseudo-random ranks 0..m-1 from a hash of the index (no RNG state)."""
    x = np.arange(m, dtype=np.uint64)
    # splitmix64 finaliser: a bijection on 64-bit integers, so no two indices collide.
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        x = x ^ (x >> np.uint64(31))
    rank = np.empty(m, dtype=np.int64)
    rank[np.argsort(x, kind="stable")] = np.arange(m)
    return rank
