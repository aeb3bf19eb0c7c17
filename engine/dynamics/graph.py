"""Constraint graph: colouring (the contact solver's sweep order, the joint solver's batches)
and islands for sleeping, as compiled kernels (engine.core.jit).

Colouring. No two constraints of one colour touch the same *dynamic* body. Static and
kinematic bodies are never written, so they are shared freely, as in Box2D v3's graph
colouring; this matters, since every box on the ground touches the same ground body. The
contact solver sweeps the manifolds colour by colour (measured to stack better than the
narrowphase's order: engine.dynamics.solver), the joint solver batches a colour at once.

We compute the greedy "first free colour" colouring of the constraints taken in a fixed
order (the colouring Box2D computes in creation order), one constraint at a time in a kernel
(each body keeps a 64-bit mask of the colours its constraints took). Two orders are tried:
a hash of the index, and the input order (pairs sorted by body, from the broadphase), which
gives fewer colours when bodies are numbered coherently in space, as scenes usually are: 26
instead of 29-32 on a 1000-cube pile whose busiest body has D = 26 constraints. The input
order is kept when it uses fewer colours than the hash order and its chains of
consecutive constraints are not much longer (INPUT_ORDER_DEPTH_FACTOR: the sweep order
this gives stacks better).

Greedy first fit uses at most 2*D - 1 colours (D = most constraints at one dynamic body);
no colouring can use fewer than D.

Islands. Bodies linked by a constraint chain through dynamic bodies form an island (they
sleep and wake together). Static bodies join nothing: the ground does not merge every pile
resting on it into one island. Labels come from a union-find that always hooks the larger
root under the smaller, so the label of a body is the smallest body index in its island.
"""
from typing import NamedTuple

import numpy as np

from ..core.errors import EngineError
from ..core.jit import kernel

# Colours before the rest go to one shared overflow colour (one 64-bit mask per body; a
# 1000-cube pile needs 26).
DEFAULT_MAX_COLOURS = 64
# The input order is kept only if its longest falling chain (see _first_fit) is at most this
# many times the hash order's (+ 16). The colour order is the contact solver's sweep order,
# and this is the rule the colouring was measured with: first fit in the input order taken
# whatever its chains, the 210-box pyramid of bench/quality_figures.py drifted 34 mm at
# 1/24 s instead of 3.8 mm (a pile listed row by row is one long falling chain).
INPUT_ORDER_DEPTH_FACTOR = 3


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
    colour = np.zeros(len(a), dtype=np.int64)
    order, offsets = _colour(a, b, is_static, hash_order(len(a)), max_colours, colour)
    n_colours = len(offsets) - 1
    overflow = int(offsets[-1] - offsets[-2]) if n_colours > max_colours else 0
    return Colouring(colour, n_colours, order, offsets, overflow)


@kernel
def sweep_order(body_a, body_b, awake, visit):
    """colour_constraints(body_a, body_b, ~awake).order, without its checks: for the world's
    own arrays (int64 body indices within awake's), once a collision pass, from its kernel
    (engine.world.pass_kernels.contact_setup). visit: hash_order(M)."""
    is_static = np.empty(awake.shape[0], dtype=np.bool_)
    for i in range(awake.shape[0]):
        is_static[i] = not awake[i]
    colour = np.zeros(body_a.shape[0], dtype=np.int64)
    return _colour(body_a, body_b, is_static, visit, DEFAULT_MAX_COLOURS, colour)[0]


def islands(n_bodies, body_a, body_b, is_static):
    """Island label per body: the smallest body index in its island, -1 for static bodies.

    Constraints (body_a[k], body_b[k]) link two dynamic bodies into one island; a constraint
    to a static body links nothing. A dynamic body with no links is an island of its own.
    """
    a, b, is_static = _check_graph(body_a, body_b, is_static)
    if len(is_static) != n_bodies:
        raise EngineError(f"islands: is_static has {len(is_static)} entries for {n_bodies} "
                          "bodies; pass one flag per body")
    label = np.empty(n_bodies, dtype=np.int64)
    _label_islands(a, b, is_static, label)
    return label


@kernel
def _label_islands(a, b, is_static, parent):
    """parent (N,) = the smallest body of each dynamic body's island, -1 for static ones."""
    for i in range(parent.shape[0]):
        parent[i] = i
    for k in range(a.shape[0]):
        u = a[k]
        v = b[k]
        if is_static[u] or is_static[v] or u == v:
            continue
        ru = _root(parent, u)
        rv = _root(parent, v)
        # The larger root goes under the smaller: a root is the smallest body of its tree.
        if ru < rv:
            parent[rv] = ru
        elif rv < ru:
            parent[ru] = rv
    for i in range(parent.shape[0]):
        parent[i] = -1 if is_static[i] else _root(parent, i)


@kernel(inline="always")
def _root(parent, x):
    """The root of x, halving the path on the way (each visited node skips to its
    grandparent, which keeps it in its tree)."""
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


@kernel
def _first_fit(a, b, is_static, visit, max_colours, give_up_at, max_depth, colour):
    """First-fit colouring visiting constraints in the order visit (M,): each takes the
    lowest colour none of its dynamic bodies has yet, or max_colours (overflow) if all
    below are taken; a constraint touching no dynamic body takes colour 0.

    Returns (colours used: highest + 1, overflow counting as colour max_colours; depth), or
    colours -1 (colour then unfinished) as soon as a constraint needs colour give_up_at or
    more (this order then cannot beat one that used give_up_at + 1 colours) or the depth
    passes max_depth. The depth is the longest chain of constraints, each sharing a dynamic
    body with the next, that the visit order walks in order (a colouring in parallel rounds,
    Jones-Plassmann, would take that many rounds)."""
    n = is_static.shape[0]
    used = np.zeros(n, dtype=np.uint64)
    chain = np.zeros(n, dtype=np.int64)   # depth of the last constraint visited at a body
    one = np.uint64(1)
    top = 0
    depth = 0
    for j in range(visit.shape[0]):
        c = visit[j]
        u = a[c]
        v = b[c]
        dyn_u = not is_static[u]
        dyn_v = not is_static[v] and v != u
        taken = np.uint64(0)
        if dyn_u:
            taken |= used[u]
        if dyn_v:
            taken |= used[v]
        col = 0
        while col < max_colours and (taken >> np.uint64(col)) & one:
            col += 1
        k = 1 + max(chain[u] if dyn_u else 0, chain[v] if dyn_v else 0)
        if dyn_u:
            chain[u] = k
        if dyn_v:
            chain[v] = k
        depth = max(depth, k)
        if col >= give_up_at or depth > max_depth:
            return -1, depth
        colour[c] = col
        if col < max_colours:
            bit = one << np.uint64(col)
            if dyn_u:
                used[u] |= bit
            if dyn_v:
                used[v] |= bit
        if col + 1 > top:
            top = col + 1
    return top, depth


@kernel
def _colour(a, b, is_static, visit, max_colours, colour):
    """colour_constraints' colouring into colour (M,), in one call: first fit in the hash
    order visit; then, unless that already reached the lower bound D without overflow, in
    the input order, kept if it needs fewer colours with chains not much longer. Returns
    (order, offsets) (_sort_by_colour's)."""
    m = a.shape[0]
    if m:
        top, depth = _first_fit(a, b, is_static, visit, max_colours, max_colours + 1, m,
                                colour)
        if top > _max_degree(a, b, is_static, is_static.shape[0]) or top > max_colours:
            again = np.empty(m, dtype=np.int64)
            if _first_fit(a, b, is_static, np.arange(m), max_colours, top - 1,
                          INPUT_ORDER_DEPTH_FACTOR * depth + 16, again)[0] >= 0:
                colour[:] = again
    n_colours = colour.max() + 1 if m else 0
    order = np.empty(m, dtype=np.int64)
    offsets = np.zeros(n_colours + 1, dtype=np.int64)
    _sort_by_colour(colour, order, offsets)
    return order, offsets


@kernel
def _max_degree(a, b, is_static, n):
    """D: the most constraints at one dynamic body (a constraint from a body to itself
    counts once)."""
    deg = np.zeros(n, dtype=np.int64)
    best = 0
    for k in range(a.shape[0]):
        u = a[k]
        v = b[k]
        if not is_static[u]:
            deg[u] += 1
            best = max(best, deg[u])
        if not is_static[v] and v != u:
            deg[v] += 1
            best = max(best, deg[v])
    return best


@kernel
def _sort_by_colour(colour, order, offsets):
    """Constraint indices by colour, in index order inside a colour (a counting sort):
    colour c is order[offsets[c]:offsets[c + 1]]."""
    for k in range(colour.shape[0]):
        offsets[colour[k] + 1] += 1
    for c in range(offsets.shape[0] - 1):
        offsets[c + 1] += offsets[c]
    fill = offsets[:-1].copy()
    for k in range(colour.shape[0]):
        order[fill[colour[k]]] = k
        fill[colour[k]] += 1


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
_ORDER_CACHE: dict = {}      # m -> hash_order(m)


def hash_order(m):
    """0..m-1 in the order of a hash of the index (no RNG state): decreasing runs of
    neighbouring constraints stay short on any graph.

    The hash order of 0..M-1 (M = m rounded up to a power of two) is computed once and
    cached; the order for any m <= M is that order restricted to indices below m, so
    changing m from step to step costs no sort; the order for each m is kept too (a world
    asks for a few counts of manifolds, pass after pass)."""
    order = _ORDER_CACHE.get(m)
    if order is not None:
        return order
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
    # (shared by every call for m, so never written: _colour only reads it; left writable,
    # since numba types a read-only array apart and would compile _colour twice)
    if len(_ORDER_CACHE) > 64:
        _ORDER_CACHE.clear()
    _ORDER_CACHE[m] = order
    return order
