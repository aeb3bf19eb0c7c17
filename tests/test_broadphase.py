"""Broadphase pairs against a brute-force O(N^2) overlap test (the independent truth)."""
import numpy as np
import pytest

from engine.collision import broadphase
from engine.collision.broadphase import find_pairs
from engine.core.errors import EngineError

METHODS = [find_pairs]


def brute_pairs(lo, hi, group=None, mask=None, static=None):
    """Every i < j whose boxes overlap (touching counts), filtered, in row-major order."""
    overlap = ((lo[:, None, :] <= hi[None, :, :]) & (lo[None, :, :] <= hi[:, None, :])).all(axis=2)
    keep = np.triu(overlap, 1)
    if group is not None:
        keep &= ((group[:, None] & mask[None, :]) != 0) & ((group[None, :] & mask[:, None]) != 0)
    if static is not None:
        keep &= ~(static[:, None] & static[None, :])
    i, j = np.nonzero(keep)  # row-major: lexicographic (i, j)
    return i, j


def assert_same(got, want):
    gi, gj = got
    wi, wj = want
    assert gi.dtype == np.int64 and gj.dtype == np.int64
    assert len(gi) == len(wi), f"{len(gi)} pairs, brute force finds {len(wi)}"
    np.testing.assert_array_equal(gi, wi)
    np.testing.assert_array_equal(gj, wj)


def random_boxes(rng, n, spread=5.0, size=0.5, snap=False):
    c = rng.uniform(-spread, spread, (n, 3))
    e = rng.exponential(size, (n, 3))
    e[rng.random((n, 3)) < 0.05] = 0.0  # some flat / zero-size boxes
    if snap:
        # Coordinates on a coarse lattice make exact touching (lo_a == hi_b) common.
        c = np.round(c * 2) / 2
        e = np.round(e * 2) / 2
    return c - e, c + e


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("seed", range(40))
def test_random_boxes_match_brute_force(method, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 300))
    lo, hi = random_boxes(rng, n, spread=rng.uniform(0.5, 10), snap=seed % 2 == 0)
    assert_same(method(lo, hi), brute_pairs(lo, hi))


@pytest.mark.parametrize("method", METHODS)
def test_touching_lattice_of_cubes(method):
    # 6x6x6 unit cubes touching face to face: every cube touches its 26 neighbours
    # (faces, edges and corners all count), so the count is known analytically.
    g = np.stack(np.meshgrid(*[np.arange(6.0)] * 3, indexing="ij"), -1).reshape(-1, 3)
    ia, ib = method(g, g + 1.0)
    # pairs of lattice points differing by at most 1 on every axis: (3^3 - 1)/2 directions
    per_axis = {0: 6, 1: 5}  # number of index positions for offsets 0 and +-1
    want = 0
    for d in np.stack(np.meshgrid(*[[-1, 0, 1]] * 3, indexing="ij"), -1).reshape(-1, 3):
        if (d != 0).any():
            want += np.prod([per_axis[abs(int(x))] for x in d])
    assert len(ia) == want // 2
    assert_same((ia, ib), brute_pairs(g, g + 1.0))


@pytest.mark.parametrize("method", METHODS)
def test_identical_boxes_all_pair(method):
    lo = np.tile([1.0, 2.0, 3.0], (50, 1))
    hi = lo + 0.5
    ia, ib = method(lo, hi)
    assert len(ia) == 50 * 49 // 2
    assert_same((ia, ib), brute_pairs(lo, hi))


@pytest.mark.parametrize("method", METHODS)
def test_zero_size_boxes(method):
    rng = np.random.default_rng(7)
    pts = np.round(rng.uniform(0, 4, (200, 3)))  # many coincident points
    assert_same(method(pts, pts), brute_pairs(pts, pts))
    # a point on the face of a box overlaps it
    lo = np.array([[0.0, 0, 0], [1.0, 0.5, 0.5], [1.0 + 1e-12, 0.5, 0.5]])
    hi = np.array([[1.0, 1, 1], [1.0, 0.5, 0.5], [1.0 + 1e-12, 0.5, 0.5]])
    ia, ib = method(lo, hi)
    assert list(zip(ia, ib)) == [(0, 1)]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("huge", [1e6, np.inf])
def test_huge_boxes_spanning_everything(method, huge):
    rng = np.random.default_rng(3)
    lo, hi = random_boxes(rng, 300)
    lo[[5, 17, 100]] = -huge
    hi[[5, 17, 100]] = huge
    # a ground slab: huge in x, y, thin in z
    lo[42], hi[42] = [-huge, -huge, -5.0], [huge, huge, -4.5]
    got = method(lo, hi)
    assert_same(got, brute_pairs(lo, hi))
    # the spanning boxes pair with everything
    assert np.count_nonzero((got[0] == 5) | (got[1] == 5)) == 299


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("seed", range(10))
def test_mixed_sizes_with_static_and_masks(method, seed):
    rng = np.random.default_rng(100 + seed)
    n = 400
    lo, hi = random_boxes(rng, n, spread=8.0, size=0.3)
    big = rng.random(n) < 0.05
    grow = rng.uniform(2, 30, (n, 3))
    lo[big] -= grow[big]
    hi[big] += grow[big]
    static = rng.random(n) < 0.3
    group = np.int64(1) << rng.integers(0, 4, n)
    mask = rng.integers(0, 16, n).astype(np.int64)
    mask[rng.random(n) < 0.5] = -1  # collide with every group
    args = (lo, hi, group, mask, static)
    assert_same(method(*args), brute_pairs(*args))
    # each filter alone
    assert_same(method(lo, hi, static=static), brute_pairs(lo, hi, static=static))
    assert_same(method(lo, hi, group=group, mask=mask),
                brute_pairs(lo, hi, group=group, mask=mask))


def test_group_mask_semantics():
    lo = np.zeros((3, 3))
    hi = np.ones((3, 3))
    # 0 is in group 1 and accepts 2; 1 is in group 2 and accepts 1; 2 accepts nothing.
    group = np.array([1, 2, 4])
    mask = np.array([2, 1, 0])
    ia, ib = find_pairs(lo, hi, group=group, mask=mask)
    assert list(zip(ia, ib)) == [(0, 1)]
    # one-sided interest does not pair: 2 is wanted by 0 but does not want 0
    mask = np.array([6, 1, 0])
    ia, ib = find_pairs(lo, hi, group=group, mask=mask)
    assert list(zip(ia, ib)) == [(0, 1)]
    # static pairs never form, static-dynamic do
    ia, ib = find_pairs(lo, hi, static=np.array([True, True, False]))
    assert list(zip(ia, ib)) == [(0, 2), (1, 2)]


def test_output_is_deterministic_and_independent_of_input_order():
    rng = np.random.default_rng(11)
    lo, hi = random_boxes(rng, 500, spread=6.0)
    ia, ib = find_pairs(lo, hi)
    ia2, ib2 = find_pairs(lo.copy(), hi.copy())
    np.testing.assert_array_equal(ia, ia2)
    np.testing.assert_array_equal(ib, ib2)
    assert (ia < ib).all()
    key = ia * 500 + ib
    assert (np.diff(key) > 0).all()
    # permuting the bodies permutes the pairs, nothing else
    perm = rng.permutation(500)
    pa, pb = find_pairs(lo[perm], hi[perm])
    back = np.sort(np.minimum(perm[pa], perm[pb]) * 500 + np.maximum(perm[pa], perm[pb]))
    np.testing.assert_array_equal(back, key)


def test_pairs_beyond_the_first_buffer(monkeypatch):
    """More pairs than the first sweep made room for: it counts them, the second writes them
    all (one huge box overlapping every other one, and a buffer of no room at all)."""
    rng = np.random.default_rng(5)
    lo, hi = random_boxes(rng, 300, spread=2.0)
    lo[0], hi[0] = -100.0, 100.0
    want = brute_pairs(lo, hi)
    monkeypatch.setattr(broadphase, "_PAIRS_PER_BOX", 0)
    assert_same(find_pairs(lo, hi), want)


def test_far_apart_coordinates_fall_back_correctly():
    # Small boxes spread over 1e15 (the numpy grid could not pack their cell keys).
    rng = np.random.default_rng(9)
    c = rng.uniform(-1e15, 1e15, (100, 3))
    c[50:] = c[:50] + 0.25  # each of the last 50 sits on one of the first 50
    lo, hi = c - 0.5, c + 0.5
    got = find_pairs(lo, hi)
    assert_same(got, brute_pairs(lo, hi))
    assert len(got[0]) >= 50


def test_small_inputs():
    for n in (0, 1):
        ia, ib = find_pairs(np.zeros((n, 3)), np.ones((n, 3)))
        assert len(ia) == len(ib) == 0


@pytest.mark.parametrize("bad", ["nan", "inverted", "shape", "mask_shape"])
def test_bad_input_raises(bad):
    lo = np.zeros((4, 3))
    hi = np.ones((4, 3))
    kw = {}
    if bad == "nan":
        lo[2, 1] = np.nan
    elif bad == "inverted":
        lo[1, 0] = 2.0
    elif bad == "shape":
        hi = np.ones((4, 2))
    else:
        kw = dict(group=np.ones(3, dtype=np.int64))
    with pytest.raises(EngineError):
        find_pairs(lo, hi, **kw)


# ----------------------------------------------------------------------------- Broadphase class

def pair_set(ia, ib):
    return set(zip(ia.tolist(), ib.tolist()))


# Slow motion rebuilds few fat boxes per step; fast motion rebuilds many.
@pytest.mark.parametrize("moving, dt", [(0.3, 0.02), (0.6, 0.3)])
def test_persistent_fat_boxes_over_a_random_walk(moving, dt):
    rng = np.random.default_rng(21)
    n = 300
    lo, hi = random_boxes(rng, n, spread=6.0, size=0.3)
    static = rng.random(n) < 0.2
    group = np.int64(1) << rng.integers(0, 3, n)
    mask = np.where(rng.random(n) < 0.7, -1, 3).astype(np.int64)
    bp = broadphase.Broadphase(margin=0.1)
    for _step in range(30):
        vel = rng.normal(0.0, 1.0, (n, 3)) * (rng.random((n, 1)) < moving)
        vel[static] = 0.0
        disp = vel * dt
        ia, ib = bp.update(lo, hi, disp, group, mask, static)
        # every tight box lies in its fat box ...
        assert (bp.fat_lo <= lo).all() and (bp.fat_hi >= hi).all()
        # ... the pairs are exactly the fat boxes' pairs ...
        assert_same((ia, ib), brute_pairs(bp.fat_lo, bp.fat_hi, group, mask, static))
        # ... so no tight pair is ever missed
        assert pair_set(*brute_pairs(lo, hi, group, mask, static)) <= pair_set(ia, ib)
        lo, hi = lo + disp, hi + disp


def test_fat_boxes_rebuilt_only_when_left(monkeypatch):
    lo = np.array([[0.0, 0, 0], [3.0, 0, 0], [6.0, 0, 0]])
    hi = lo + 1.0
    bp = broadphase.Broadphase(margin=0.5)
    calls = []
    real = broadphase.find_pairs
    monkeypatch.setattr(broadphase, "find_pairs", lambda *a, **k: calls.append(1) or real(*a, **k))
    bp.update(lo, hi)
    fat_lo, fat_hi = bp.fat_lo.copy(), bp.fat_hi.copy()
    np.testing.assert_allclose(fat_lo, lo - 0.5)
    np.testing.assert_allclose(fat_hi, hi + 0.5)
    # moving inside the margin: same fat boxes, cached pairs, no new search
    bp.update(lo + 0.4, hi + 0.4)
    np.testing.assert_array_equal(bp.fat_lo, fat_lo)
    assert len(calls) == 1
    # body 1 leaves its fat box towards body 2: only its box is rebuilt and tested against
    # the others (no full search), the pair appears
    moved_lo = lo.copy()
    moved_lo[1, 0] += 1.2
    ia, ib = bp.update(moved_lo, moved_lo + 1.0)
    assert len(calls) == 1
    np.testing.assert_array_equal(bp.fat_lo[[0, 2]], fat_lo[[0, 2]])
    np.testing.assert_allclose(bp.fat_lo[1], moved_lo[1] - 0.5)
    assert pair_set(ia, ib) == {(1, 2)}
    # beyond the repair's budget a rebuilt box means a full search
    monkeypatch.setattr(broadphase, "_REPAIR_TESTS", 0)
    back = bp.update(lo, hi)
    assert len(calls) == 2 and len(back[0]) == 0
    bp.update(moved_lo, moved_lo + 1.0)
    assert len(calls) == 3
    # a filter change (2 goes static with 1) redoes the search even with no motion
    ia, ib = bp.update(moved_lo, moved_lo + 1.0, static=np.array([False, True, True]))
    assert len(calls) == 4 and len(ia) == 0
    # a different body count starts over
    ia, ib = bp.update(lo[:2], hi[:2])
    np.testing.assert_allclose(bp.fat_lo, lo[:2] - 0.5)


def test_fat_box_stretches_along_displacement():
    bp = broadphase.Broadphase(margin=0.1)
    lo = np.zeros((2, 3))
    hi = np.ones((2, 3))
    lo[1] += 5.0
    hi[1] += 5.0
    bp.update(lo, hi, displacement=np.array([[2.0, 0, -1.0], [0, 0, 0]]))
    np.testing.assert_allclose(bp.fat_lo[0], [-0.1, -0.1, -1.1])
    np.testing.assert_allclose(bp.fat_hi[0], [3.1, 1.1, 1.1])
