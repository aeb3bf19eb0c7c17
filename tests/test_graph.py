"""Constraint colouring and islands against direct checks and brute-force references."""
import numpy as np
import pytest

from engine.core.errors import EngineError
from engine.dynamics.graph import colour_constraints, islands

# ----------------------------------------------------------------------------- references

def check_colouring(a, b, is_static, res, max_colours=64):
    """A valid colouring: no dynamic body twice in a colour (overflow colour excepted),
    and order/offsets slice each colour contiguously."""
    m = len(a)
    col = res.colour
    assert col.shape == (m,) and col.dtype == np.int64
    assert res.n_colours == (col.max() + 1 if m else 0)
    np.testing.assert_array_equal(np.sort(res.order), np.arange(m))
    assert len(res.offsets) == res.n_colours + 1 and res.offsets[-1] == m
    for c in range(res.n_colours):
        sel = res.order[res.offsets[c]:res.offsets[c + 1]]
        assert (col[sel] == c).all()
        assert (np.diff(sel) > 0).all()  # stable: index order inside a colour
        if c == max_colours:
            continue  # overflow colour: may share bodies by contract
        ends = np.concatenate((a[sel][~is_static[a[sel]]],
                               b[sel][~is_static[b[sel]] & (b[sel] != a[sel])]))
        assert len(np.unique(ends)) == len(ends), f"colour {c} shares a dynamic body"
    assert res.overflow == np.count_nonzero(col == max_colours)


def max_dynamic_degree(a, b, is_static, n):
    ends = np.concatenate((a[~is_static[a]], b[~is_static[b] & (b != a)]))
    return int(np.bincount(ends, minlength=n).max()) if len(ends) else 0


def greedy_sequential(a, b, is_static, order, max_colours=64):
    """Plain sequential first-fit colouring, visiting constraints in the given order."""
    taken = [set() for _ in range(len(is_static))]
    colour = np.zeros(len(a), dtype=np.int64)
    for k in order:
        ends = {int(x) for x in (a[k], b[k]) if not is_static[x]}
        used = set().union(*(taken[e] for e in ends)) if ends else set()
        c = 0
        while c in used:
            c += 1
        if c >= max_colours:
            colour[k] = max_colours
            continue
        colour[k] = c
        for e in ends:
            taken[e].add(c)
    return colour


def components_bfs(n, a, b, is_static):
    """Island labels by breadth-first search: smallest body of each island, -1 static."""
    adj = [[] for _ in range(n)]
    for u, v in zip(a, b):
        if not is_static[u] and not is_static[v]:
            adj[u].append(v)
            adj[v].append(u)
    label = np.full(n, -1)
    for s in range(n):
        if is_static[s] or label[s] != -1:
            continue
        label[s] = s  # s is the smallest unvisited body, so the smallest of its island
        queue = [s]
        while queue:
            u = queue.pop()
            for v in adj[u]:
                if label[v] == -1:
                    label[v] = s
                    queue.append(v)
    return label


def pile_graph(nx, ny, nz):
    """Contact graph of a lattice of boxes: face, edge and corner neighbours, plus a static
    ground (the last body) under the bottom layer."""
    idx = np.arange(nx * ny * nz).reshape(nx, ny, nz)
    pairs = []
    for d in np.stack(np.meshgrid(*[[-1, 0, 1]] * 3, indexing="ij"), -1).reshape(-1, 3):
        if tuple(d) <= (0, 0, 0):
            continue  # half the directions: each neighbour pair once
        src = tuple(slice(max(0, -x), s - max(0, x)) for x, s in zip(d, idx.shape))
        dst = tuple(slice(max(0, x), s - max(0, -x)) for x, s in zip(d, idx.shape))
        pairs.append(np.stack((idx[src].ravel(), idx[dst].ravel()), 1))
    ground = nx * ny * nz
    bottom = idx[:, :, 0].ravel()
    pairs.append(np.stack((bottom, np.full_like(bottom, ground)), 1))
    p = np.concatenate(pairs)
    is_static = np.zeros(ground + 1, dtype=bool)
    is_static[ground] = True
    return p[:, 0], p[:, 1], is_static


def pyramid_graph(base=20):
    """Contact graph of a 2D box pyramid (base 20 -> 210 boxes): each box touches its row
    neighbours and the two boxes under it; the bottom row rests on a static ground."""
    rows = [np.arange(base - r) for r in range(base)]
    start = np.cumsum([0] + [len(r) for r in rows])
    a, b = [], []
    for r, row in enumerate(rows):
        ids = start[r] + row
        a += list(ids[:-1])
        b += list(ids[1:])
        if r:
            below = start[r - 1] + row
            a += list(ids) + list(ids)
            b += list(below) + list(below + 1)
    ground = start[-1]
    a += list(start[0] + rows[0])
    b += [ground] * base
    is_static = np.zeros(ground + 1, dtype=bool)
    is_static[ground] = True
    return np.array(a), np.array(b), is_static


# ----------------------------------------------------------------------------- colouring

@pytest.mark.parametrize("seed", range(30))
def test_colouring_valid_on_random_graphs(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 200))
    m = int(rng.integers(0, 4 * n))
    a = rng.integers(0, n, m)
    b = rng.integers(0, n, m)
    is_static = rng.random(n) < rng.uniform(0, 0.5)
    res = colour_constraints(a, b, is_static)
    check_colouring(a, b, is_static, res)
    d = max_dynamic_degree(a, b, is_static, n)
    if res.overflow == 0 and m:
        # no colouring uses fewer than D; first fit never needs more than 2D - 1
        assert max(d, 1) <= res.n_colours <= max(2 * d - 1, 1)


def first_fit_property(a, b, is_static, col):
    """First fit in *any* order: a constraint of colour c has, for every lower colour, a
    neighbour (sharing a dynamic body) of that colour, else it would have taken it."""
    m = len(a)
    for k in range(m):
        nb = np.zeros(m, dtype=bool)
        for e in (a[k], b[k]):
            if not is_static[e]:
                nb |= (a == e) | (b == e)
        nb[k] = False
        assert set(range(col[k])) <= set(col[nb].tolist()), f"constraint {k} could go lower"


@pytest.mark.parametrize("seed", range(10))
def test_colouring_is_sequential_first_fit(seed):
    # The kernel must reproduce sequential first fit exactly, in one of the two orders the
    # library tries (a hash of the index, or the input order), and never be worse than the
    # hash order. First fit is re-implemented here with Python sets.
    from engine.dynamics.graph import hash_order
    rng = np.random.default_rng(200 + seed)
    n = 60
    m = 150
    a = rng.integers(0, n, m)
    b = rng.integers(0, n, m)
    is_static = rng.random(n) < 0.1
    col = colour_constraints(a, b, is_static).colour
    first_fit_property(a, b, is_static, col)
    by_hash = greedy_sequential(a, b, is_static, hash_order(m))
    by_input = greedy_sequential(a, b, is_static, np.arange(m))
    assert np.array_equal(col, by_hash) or np.array_equal(col, by_input)
    assert col.max() <= by_hash.max()


def test_colouring_spatially_ordered_pile_reaches_the_bound():
    # Pairs sorted by body as the broadphase returns them, bodies numbered layer by layer:
    # first fit in input order reaches D colours (the lower bound) on this lattice.
    a, b, is_static = pile_graph(10, 10, 10)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    o = np.lexsort((hi, lo))
    a, b = lo[o], hi[o]
    res = colour_constraints(a, b, is_static)
    check_colouring(a, b, is_static, res)
    d = max_dynamic_degree(a, b, is_static, len(is_static))
    assert res.n_colours <= d + 1
    np.testing.assert_array_equal(res.colour, greedy_sequential(a, b, is_static, np.arange(len(a))))
    # shuffled numbering: still valid, and no worse than first fit in hash order allows
    perm = np.random.default_rng(0).permutation(len(is_static))
    res = colour_constraints(perm[a], perm[b], is_static[np.argsort(perm)])
    check_colouring(perm[a], perm[b], is_static[np.argsort(perm)], res)
    assert res.n_colours <= d + max(3, d // 2)


def test_colouring_long_chain_in_input_order():
    # A chain listed link by link: first fit colours it with <= 3 colours in either order.
    n = 5000
    a, b = np.arange(n - 1), np.arange(1, n)
    is_static = np.zeros(n, dtype=bool)
    res = colour_constraints(a, b, is_static)
    check_colouring(a, b, is_static, res)
    assert res.n_colours <= 3


def test_colouring_deterministic():
    a, b, is_static = pile_graph(6, 6, 6)
    r1 = colour_constraints(a, b, is_static)
    r2 = colour_constraints(a.copy(), b.copy(), is_static.copy())
    np.testing.assert_array_equal(r1.colour, r2.colour)
    np.testing.assert_array_equal(r1.order, r2.order)


def test_static_body_is_shared_freely():
    # 100 dynamic bodies each resting on the same ground: no conflicts, one colour.
    n = 101
    is_static = np.zeros(n, dtype=bool)
    is_static[0] = True
    a = np.arange(1, n)
    b = np.zeros(n - 1, dtype=np.int64)
    res = colour_constraints(a, b, is_static)
    assert res.n_colours == 1
    check_colouring(a, b, is_static, res)
    # the same star around a dynamic body needs one colour per constraint
    a, b = a[:40], b[:40]
    res = colour_constraints(a, b, np.zeros(n, dtype=bool))
    assert res.n_colours == 40
    check_colouring(a, b, np.zeros(n, dtype=bool), res)


def test_overflow_colour():
    # 100 constraints on one dynamic body need 100 colours; cap at 64.
    n = 101
    a = np.arange(1, n)
    b = np.zeros(n - 1, dtype=np.int64)
    is_static = np.zeros(n, dtype=bool)
    res = colour_constraints(a, b, is_static, max_colours=64)
    assert res.overflow == 36
    assert res.n_colours == 65
    check_colouring(a, b, is_static, res, max_colours=64)
    # a smaller cap: 10 proper colours, 90 in the overflow colour 10
    res = colour_constraints(a, b, is_static, max_colours=10)
    assert res.overflow == 90 and res.n_colours == 11
    check_colouring(a, b, is_static, res, max_colours=10)
    with pytest.raises(EngineError):
        colour_constraints(a, b, is_static, max_colours=65)


def test_colouring_pile_and_pyramid_use_few_colours():
    for a, b, is_static in (pile_graph(10, 10, 10), pyramid_graph(20)):
        res = colour_constraints(a, b, is_static)
        check_colouring(a, b, is_static, res)
        d = max_dynamic_degree(a, b, is_static, len(is_static))
        assert res.overflow == 0
        # lower bound D; first fit in a random order stays well under its 2D - 1 bound
        assert d <= res.n_colours <= d + max(3, d // 2)


def test_colouring_edge_cases():
    res = colour_constraints(np.zeros(0, int), np.zeros(0, int), np.zeros(3, bool))
    assert res.n_colours == 0 and len(res.order) == 0 and list(res.offsets) == [0]
    # a constraint between two static bodies and a self-constraint touch <= 1 dynamic body
    is_static = np.array([True, True, False])
    res = colour_constraints(np.array([0, 2, 2]), np.array([1, 2, 0]), is_static)
    check_colouring(np.array([0, 2, 2]), np.array([1, 2, 0]), is_static, res)
    with pytest.raises(EngineError):
        colour_constraints(np.array([0, 5]), np.array([1, 2]), np.zeros(3, bool))
    with pytest.raises(EngineError):
        colour_constraints(np.array([0]), np.array([1, 2]), np.zeros(3, bool))


# ----------------------------------------------------------------------------- islands

@pytest.mark.parametrize("seed", range(30))
def test_islands_match_bfs(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    m = int(rng.integers(0, 2 * n))
    a = rng.integers(0, n, m)
    b = rng.integers(0, n, m)
    is_static = rng.random(n) < rng.uniform(0, 0.3)
    np.testing.assert_array_equal(islands(n, a, b, is_static), components_bfs(n, a, b, is_static))


def test_islands_long_chains_and_ground():
    # A chain visited in shuffled order (worst case for naive label propagation) and
    # two piles on one ground: the ground must not merge them.
    rng = np.random.default_rng(1)
    n = 2000
    perm = rng.permutation(n)
    a, b = perm[:-1], perm[1:]
    lab = islands(n, a, b, np.zeros(n, bool))
    assert (lab == 0).all()
    is_static = np.zeros(7, bool)
    is_static[6] = True
    a = np.array([0, 1, 3, 4, 0, 3, 5])
    b = np.array([1, 2, 4, 6, 6, 6, 6])
    np.testing.assert_array_equal(islands(7, a, b, is_static), [0, 0, 0, 3, 3, 5, -1])


def test_islands_pile_matches_bfs():
    a, b, is_static = pile_graph(8, 8, 8)
    n = len(is_static)
    np.testing.assert_array_equal(islands(n, a, b, is_static), components_bfs(n, a, b, is_static))
