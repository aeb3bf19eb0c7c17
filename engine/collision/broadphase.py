"""Broadphase: every pair of overlapping axis-aligned boxes, found at once in numpy.

Input is the world AABBs ``lo, hi (N, 3)`` (already fattened by the caller). Boxes that touch
(``lo_a == hi_b``) overlap. Output is two int64 arrays ``(ia, ib)`` with ``ia < ib``, sorted
lexicographically, so the same scene always yields the same pair order (the solver's result
depends on constraint order, and we want bit-for-bit repeatable simulations).

Method: a uniform grid hash built by sorting (``_grid_pairs``). The cell edge is 1.5 x the size
90 % of the boxes stay under, so those cover at most 2 cells per axis (8 cells). Entries
(cell key, box) are sorted by key; boxes sharing a cell are candidate pairs, which are
expanded with a repeat/cumsum trick instead of a Python loop. A pair that shares several cells
is reported only in the cell holding the lower corner of the two boxes' intersection: that
corner lies in both boxes, so that cell holds both, and the test reduces to one bitwise AND of
the entries' 3-bit cell offsets (see ``_grid_small``). No ``np.unique`` pass is needed.

Boxes too big for the grid (ground slabs, walls, a huge box spanning the scene) are paired
with a vectorised sweep-and-prune (``_sweep_self`` and ``_sweep_bipartite``): sort by ``lo``
along one axis, find with ``np.searchsorted`` the range of boxes whose ``lo`` lies within each
box's extent, expand the ranges, and filter by the other two axes.

Why a grid and not sweep-and-prune for everything: in 3D at constant density, the boxes that
overlap a box along one axis form a slab holding O(N^(2/3)) boxes, so a 1D sweep enumerates
O(N^(5/3)) candidates, and in a dense 10x10x10 block of cubes every box has ~100 slab
neighbours for ~10 real ones. The grid's candidates are the boxes in the same few cells: O(N)
for any scene whose boxes are similar in size, and the sort makes the whole O(N log N).
``bench/bench_broadphase.py`` measures both.

Memory: expanded candidates are processed in chunks of ``_CHUNK`` pairs, so the temporaries
stay bounded even when one huge box overlaps everything; only the output can be O(N^2), when
the scene really has that many overlapping pairs.
"""
import numpy as np

from ..core.errors import EngineError

# Candidate pairs expanded per batch. ~1M pairs keeps each temporary at 8 MB.
_CHUNK = 1 << 20
# Cell keys are packed into one int64; coordinates beyond this are left to the sweep.
_MAX_CELL_COORD = 2 ** 40
# Up to this many boxes every pair is tested directly: n (n - 1) / 2 comparisons in a few
# numpy calls cost less than the grid's few hundred calls (27 tumbling cubes: 287 -> ~60
# calls per collision pass; the grid wins from a few hundred boxes on).
BRUTE_MAX = 128
# The grid cell is sized to this quantile of box sizes; bigger boxes go to the sweep.
_CELL_QUANTILE = 0.9


def find_pairs(lo, hi, group=None, mask=None, static=None):
    """Candidate pairs of overlapping boxes.

    lo, hi: (N, 3) world AABB corners, lo <= hi (touching boxes count as overlapping).
    group, mask: optional (N,) int64 collision bits; i and j pair only if
        ``(group[i] & mask[j]) and (group[j] & mask[i])``. Default: everything collides.
    static: optional (N,) bool; two static (or sleeping) boxes never pair.
    Returns (ia, ib): int64 arrays, ia < ib, sorted lexicographically by (ia, ib).
    """
    lo, hi = _check_boxes(lo, hi)
    n = len(lo)
    group, mask, static = _check_filters(n, group, mask, static)
    if n < 2:
        return _empty(), _empty()
    if n <= BRUTE_MAX:
        ia, ib = _all_pairs(lo, hi)
    else:
        ia, ib = _grid_pairs(lo, hi, static)
    return _finish(n, ia, ib, group, mask, static)


def _all_pairs(lo, hi):
    """Overlapping pairs by testing all n (n - 1) / 2 of them (small n), each once, i < j."""
    n = len(lo)
    ia, ib = _upper_pairs(n)
    ok = ((lo[ia] <= hi[ib]) & (lo[ib] <= hi[ia])).all(axis=1)
    return ia[ok], ib[ok]


_UPPER: dict = {}


def _upper_pairs(n):
    """(i, j) of all pairs i < j of n boxes, cached per n (a world keeps its n for a while)."""
    pairs = _UPPER.get(n)
    if pairs is None:
        if len(_UPPER) > 16:
            _UPPER.clear()
        pairs = _UPPER[n] = tuple(np.triu_indices(n, 1))
    return pairs


def sweep_pairs(lo, hi, group=None, mask=None, static=None):
    """Same contract as `find_pairs`, by sweep-and-prune only (kept as the reference method)."""
    lo, hi = _check_boxes(lo, hi)
    n = len(lo)
    group, mask, static = _check_filters(n, group, mask, static)
    if n < 2:
        return _empty(), _empty()
    ia, ib = _sweep_self(lo, hi, _sweep_axis(lo, hi))
    return _finish(n, ia, ib, group, mask, static)


# ----------------------------------------------------------------------------- validation

def _empty():
    return np.zeros(0, dtype=np.int64)


def _check_boxes(lo, hi):
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    if lo.ndim != 2 or lo.shape[1] != 3 or lo.shape != hi.shape:
        raise EngineError(f"broadphase needs lo and hi of shape (N, 3), got {lo.shape} and "
                          f"{hi.shape}; pass one row per body")
    # Whole-array checks first (fast); per-row detail only to word the error.
    if np.isnan(lo).any() or np.isnan(hi).any() or (lo > hi).any():
        bad = np.isnan(lo).any(axis=1) | np.isnan(hi).any(axis=1) | (lo > hi).any(axis=1)
        raise EngineError(f"broadphase got {int(bad.sum())} invalid boxes (NaN or lo > hi), "
                          f"first at body {int(np.argmax(bad))}; check that body's pose and "
                          "velocity for NaN")
    return lo, hi


def _check_filters(n, group, mask, static):
    def as_array(x, dtype, what):
        if x is None:
            return None
        a = np.asarray(x)
        if a.shape != (n,):
            raise EngineError(f"broadphase {what} must have shape ({n},), got {a.shape}")
        return a.astype(dtype, copy=False)
    group = as_array(group, np.int64, "group")
    mask = as_array(mask, np.int64, "mask")
    if group is not None and mask is None:
        mask = np.full(n, -1, dtype=np.int64)
    if mask is not None and group is None:
        group = np.full(n, -1, dtype=np.int64)
    return group, mask, as_array(static, bool, "static")


def _finish(n, ia, ib, group, mask, static):
    """Apply the pair filters, then order each pair (i < j) and all pairs lexicographically."""
    keep = None
    if static is not None:
        keep = ~(static[ia] & static[ib])
    if group is not None:
        ok = ((group[ia] & mask[ib]) != 0) & ((group[ib] & mask[ia]) != 0)
        keep = ok if keep is None else keep & ok
    if keep is not None:
        ia, ib = ia[keep], ib[keep]
    # One int64 key per pair sorts (i, j) lexicographically in a single np.sort.
    key = np.minimum(ia, ib) * np.int64(n) + np.maximum(ia, ib)
    key.sort()
    return key // n, key % n


# ----------------------------------------------------------------------------- range expansion

def _expand(first, count, chunk=None):
    """Yield (row, col) arrays listing col in [first[r], first[r] + count[r]) for every row r.

    This is the vectorised form of ``for r: for c in range(first[r], first[r]+count[r])``:
    rows are repeated count times, and each row's run of columns is an arange shifted by
    the row's start. Rows are batched so a batch expands to about `chunk` entries (a single
    row bigger than `chunk` forms its own batch)."""
    chunk = _CHUNK if chunk is None else chunk
    count = np.maximum(count, 0)
    csum = np.cumsum(count)
    total = int(csum[-1]) if len(csum) else 0
    if total == 0:
        return
    nrows = len(count)
    r0 = 0
    while r0 < nrows:
        done = int(csum[r0 - 1]) if r0 else 0
        r1 = int(np.searchsorted(csum, done + chunk, side="right"))
        r1 = min(max(r1, r0 + 1), nrows)
        rows = r0 + np.flatnonzero(count[r0:r1])
        r0 = r1
        if len(rows) == 0:
            continue
        c = count[rows]
        ends = np.cumsum(c)
        row = np.repeat(rows, c)
        col = np.arange(ends[-1], dtype=np.int64) + np.repeat(first[rows] - (ends - c), c)
        yield row, col


def _columns(lo, hi):
    """Per-axis contiguous copies [(lo_x, hi_x), ...]: gathering from 1D arrays with np.take
    is several times faster than gathering (M, 3) rows and slicing their columns."""
    return [(np.ascontiguousarray(lo[:, k]), np.ascontiguousarray(hi[:, k])) for k in range(3)]


def _overlap(cols, a, b, axes=range(3)):
    """Do boxes a[k] and b[k] overlap (touching counts) on the given axes? cols from _columns."""
    ok = None
    for ax in axes:
        lo, hi = cols[ax]
        t = np.take(lo, a) <= np.take(hi, b)
        t &= np.take(lo, b) <= np.take(hi, a)
        ok = t if ok is None else ok & t
    return ok


def _concat(parts):
    if not parts:
        return _empty(), _empty()
    return (np.concatenate([p[0] for p in parts]).astype(np.int64, copy=False),
            np.concatenate([p[1] for p in parts]).astype(np.int64, copy=False))


# ----------------------------------------------------------------------------- sweep and prune

def _sweep_axis(lo, hi):
    """Axis of largest variance of the box centres (the one that separates boxes best)."""
    # Clip so boxes reaching +-inf do not turn the centres into NaN.
    c = np.clip(lo, -1e150, 1e150) + np.clip(hi, -1e150, 1e150)
    return int(np.argmax(c.var(axis=0)))


def _sweep_self(lo, hi, axis):
    """Overlapping pairs within one set of boxes (unordered, unsorted, each pair once)."""
    n = len(lo)
    order = np.argsort(lo[:, axis], kind="stable")
    slo, shi = lo[order], hi[order]
    cols = _columns(slo, shi)
    # Box k overlaps along the axis exactly the later boxes whose lo is <= its hi
    # (their lo is >= its lo by the sort). Equal lo values: the later one in the sort
    # order is found from the earlier one, so every pair is met once.
    end = np.searchsorted(cols[axis][0], cols[axis][1], side="right")
    k = np.arange(n)
    others = [a for a in range(3) if a != axis]
    parts = []
    for r, c in _expand(k + 1, end - k - 1):
        ok = _overlap(cols, r, c, others)
        parts.append((order[r[ok]], order[c[ok]]))
    return _concat(parts)


def _sweep_bipartite(lo_a, hi_a, lo_b, hi_b, axis):
    """Overlapping pairs (a, b) with a from set A and b from set B, indices local to each set.

    Along the axis, a and b overlap iff lo_b <= hi_a and lo_a <= hi_b. Split by which lo is
    first: lo_b in [lo_a, hi_a] is found from a's side, lo_a in (lo_b, hi_b] from b's side,
    so every pair is met exactly once and pairs within A or within B are never enumerated."""
    oa = np.argsort(lo_a[:, axis], kind="stable")
    ob = np.argsort(lo_b[:, axis], kind="stable")
    ca, cb = _columns(lo_a[oa], hi_a[oa]), _columns(lo_b[ob], hi_b[ob])
    (la, ha), (lb, hb) = ca[axis], cb[axis]
    others = [x for x in range(3) if x != axis]
    parts = []
    s = np.searchsorted(lb, la, side="left")
    e = np.searchsorted(lb, ha, side="right")
    for r, c in _expand(s, e - s):
        ok = _overlap_ab(ca, cb, r, c, others)
        parts.append((oa[r[ok]], ob[c[ok]]))
    s = np.searchsorted(la, lb, side="right")
    e = np.searchsorted(la, hb, side="right")
    for r, c in _expand(s, e - s):
        ok = _overlap_ab(ca, cb, c, r, others)
        parts.append((oa[c[ok]], ob[r[ok]]))
    return _concat(parts)


def _overlap_ab(ca, cb, a, b, axes):
    """_overlap for a from one set of columns and b from another."""
    ok = None
    for ax in axes:
        (la, ha), (lb, hb) = ca[ax], cb[ax]
        t = np.take(la, a) <= np.take(hb, b)
        t &= np.take(lb, b) <= np.take(ha, a)
        ok = t if ok is None else ok & t
    return ok


# ----------------------------------------------------------------------------- grid hash

# The 8 cells a box may cover, as offsets from its lower cell; bit b of the code is axis b.
_OFFSETS = np.array([[(k >> a) & 1 for a in range(3)] for k in range(8)], dtype=np.int64)
_CODES = np.arange(8, dtype=np.int64)


def _cell_size(lo, hi):
    """Edge of the grid cell: 1.5 x the size most boxes stay under. Boxes then cover at most
    2 cells per axis; the factor 1.5 makes most cover fewer (1 + size/cell per axis on
    average), which measured fastest on both dense piles and sparse scenes."""
    ext = np.maximum(np.maximum(hi[:, 0] - lo[:, 0], hi[:, 1] - lo[:, 1]), hi[:, 2] - lo[:, 2])
    fin = np.isfinite(ext)
    if not fin.all():
        ext = ext[fin]
    if len(ext) == 0:
        return 1.0
    k = min(int(_CELL_QUANTILE * len(ext)), len(ext) - 1)
    cell = float(np.partition(ext, k)[k])
    if cell <= 0.0:
        # Mostly points: fall back to the largest finite box, else to the mean spacing.
        cell = float(ext.max())
    if cell <= 0.0:
        span = np.ptp(np.clip(lo, -1e150, 1e150), axis=0).max()
        cell = float(span) / max(len(lo), 1) ** (1.0 / 3.0)
    return 1.5 * cell if cell > 0.0 and np.isfinite(cell) else 1.0


def _grid_pairs(lo, hi, static=None):
    """All overlapping pairs (unordered, unsorted, each once): grid for the boxes that fit a
    cell, sweep-and-prune for the big ones."""
    inv = 1.0 / _cell_size(lo, hi)
    cl, span = [], []
    small = np.ones(len(lo), dtype=bool)
    with np.errstate(invalid="ignore", over="ignore"):
        for k in range(3):
            # x * inv is monotonic in x, which the pair dedupe in _grid_small relies on.
            fl = np.floor(lo[:, k] * inv)
            fh = np.floor(hi[:, k] * inv)
            d = fh - fl
            # "Small" = covers at most 2 cells per axis, with coordinates that fit the key.
            # Decided on the floored values themselves, so rounding can never make a box
            # cover a cell it is not entered in. inf - inf is NaN and fails the test.
            ok = (d <= 1.0) & (np.abs(fl) < _MAX_CELL_COORD) & (np.abs(fh) < _MAX_CELL_COORD)
            small &= ok
            cl.append(fl)
            span.append(d)
    if small.all():
        return _grid_small(lo, hi, [c.astype(np.int64) for c in cl],
                           [d.astype(np.int64) for d in span], None)
    idx = np.flatnonzero(small)
    parts = [_grid_small(lo[idx], hi[idx], [c[idx].astype(np.int64) for c in cl],
                         [d[idx].astype(np.int64) for d in span], idx)]
    parts.extend(_big_pairs(lo, hi, np.flatnonzero(~small), idx, static))
    return _concat(parts)


def _grid_small(lo, hi, cl, span, idx):
    """Pairs among boxes that cover at most 2 cells per axis. cl: lower cell per axis
    (3 int64 arrays), span: 0 or 1 per axis (3 int64 arrays). idx maps local box numbers to
    global ones (None: identity)."""
    m = len(lo)
    if m < 2:
        return _empty(), _empty()
    base = [int(c.min()) for c in cl]
    dims = [int(c.max()) - b + 2 for c, b in zip(cl, base)]  # +1 size, +1 upper cell
    ncells = dims[0] * dims[1] * dims[2]
    if ncells >= 2 ** 62:
        # Too spread out to pack keys into an int64: sweep instead (extreme scenes only).
        a, b = _sweep_self(lo, hi, _sweep_axis(lo, hi))
        return (a, b) if idx is None else (idx[a], idx[b])
    key0 = ((cl[0] - base[0]) * dims[1] + (cl[1] - base[1])) * dims[2] + (cl[2] - base[2])
    off_key = (_OFFSETS[:, 0] * dims[1] + _OFFSETS[:, 1]) * dims[2] + _OFFSETS[:, 2]
    # Entry = (box, offset code) as flat = 8 * box + code, for each of the 8 candidate cells
    # the box really covers: offset k is covered iff it has no bit outside the box's span.
    scode = span[0] + 2 * span[1] + 4 * span[2]
    flat = np.flatnonzero((_CODES[None, :] & ~scode[:, None]) == 0)
    ent_key = key0[flat >> 3] + off_key[flat & 7]
    fbits = int(8 * m).bit_length()
    if ncells.bit_length() + fbits <= 63:
        # Pack (key, flat) in one int64 and sort values: faster than argsort + gathers.
        ent = (ent_key << fbits) | flat
        ent.sort()
        ent_key, flat = ent >> fbits, ent & ((1 << fbits) - 1)
    else:
        o = np.argsort(ent_key)
        ent_key, flat = ent_key[o], flat[o]
    ent_box, ent_code = flat >> 3, flat & 7
    # Each entry pairs with the entries after it in the same cell.
    ne = len(ent_key)
    starts = np.flatnonzero(np.concatenate(([True], ent_key[1:] != ent_key[:-1])))
    sizes = np.diff(np.append(starts, ne))
    group_end = np.repeat(starts + sizes, sizes)
    p = np.arange(ne)
    cols = _columns(lo, hi)
    parts = []
    for r, q in _expand(p + 1, group_end - p - 1):
        # Report a pair only in the cell holding the lower corner of the boxes'
        # intersection. Per axis that cell is max(lower cells) = shared cell - min(offsets),
        # so it is this cell iff no axis has offset 1 in both entries.
        ok = (ent_code[r] & ent_code[q]) == 0
        a, b = ent_box[r[ok]], ent_box[q[ok]]
        ok = _overlap(cols, a, b)
        a, b = a[ok], b[ok]
        parts.append((a, b) if idx is None else (idx[a], idx[b]))
    return _concat(parts)


def _big_pairs(lo, hi, big, small, static):
    """Pairs involving boxes too big for the grid: big-big and big-small, by sweeps."""
    # Sweep along the axis where the big boxes are thinnest relative to the scene, e.g. the
    # vertical for a ground slab, so few small boxes overlap them along it.
    span = np.ptp(np.clip(np.concatenate((lo, hi)), -1e150, 1e150), axis=0) + 1e-300
    thick = np.clip(hi[big] - lo[big], 0.0, 1e150).sum(axis=0) / span
    axis = int(np.argmin(thick))
    parts = []
    a, b = _sweep_self(lo[big], hi[big], axis)
    parts.append((big[a], big[b]))
    if len(small):
        if static is not None:
            # A static big box needs only the dynamic small ones.
            for bsel, ssel in ((big[static[big]], small[~static[small]]),
                               (big[~static[big]], small)):
                if len(bsel) and len(ssel):
                    a, b = _sweep_bipartite(lo[bsel], hi[bsel], lo[ssel], hi[ssel], axis)
                    parts.append((bsel[a], ssel[b]))
        else:
            a, b = _sweep_bipartite(lo[big], hi[big], lo[small], hi[small], axis)
            parts.append((big[a], small[b]))
    return parts


# ----------------------------------------------------------------------------- persistent fat boxes

# Rebuilding at most this fraction of the fat boxes repairs the cached pairs instead of a
# full search.
_INCREMENTAL_FRACTION = 0.125

class Broadphase:
    """Broadphase with persistent fat boxes, for stepping a world.

    Each body keeps a fat box (its tight box grown by `margin`, plus its predicted motion)
    until its tight box leaves it; only then is that body's fat box rebuilt. While no fat box
    changes and the filters are the same, the pair set cannot change either, so a resting
    scene costs one containment test per body instead of a full `find_pairs`; when a few
    boxes are rebuilt, only those are searched against the rest and the cached pairs
    between unchanged boxes are kept. The pairs
    are those of the fat boxes: a superset of the tight-box pairs, stable from step to step
    (which also keeps contact warm-starting steady).

    Bodies are identified by their row: call `reset()` when bodies are added, removed or
    reordered (a change of N resets by itself).
    """

    def __init__(self, margin=0.05):
        if not margin >= 0.0:
            raise EngineError(f"Broadphase margin must be >= 0, got {margin!r}")
        self.margin = float(margin)
        self.reset()

    def reset(self):
        """Forget every fat box and the cached pairs."""
        # Fat boxes (N, 3) and the pairs found for them; None until the first update.
        self.fat_lo: np.ndarray | None = None
        self.fat_hi: np.ndarray | None = None
        self._pairs: tuple[np.ndarray, np.ndarray] | None = None
        self._old_pairs: tuple[np.ndarray, np.ndarray] | None = None
        self._filters = None

    def update(self, lo, hi, displacement=None, group=None, mask=None, static=None):
        """Pairs of overlapping fat boxes, as `find_pairs` returns them.

        lo, hi: (N, 3) tight world boxes this step. displacement: optional (N, 3) motion
        expected over the next step (velocity * dt); a rebuilt fat box is stretched along it
        so a moving body does not leave its box every step. group, mask, static: as in
        `find_pairs`.
        """
        lo, hi = _check_boxes(lo, hi)
        n = len(lo)
        if self.fat_lo is None or len(self.fat_lo) != n:
            self.reset()
            escaped = np.ones(n, dtype=bool)
        else:
            escaped = ((lo < self.fat_lo) | (hi > self.fat_hi)).any(axis=1)
        if escaped.any():
            grow_lo = np.full((n, 3), self.margin)
            grow_hi = np.full((n, 3), self.margin)
            if displacement is not None:
                d = np.asarray(displacement, dtype=np.float64).reshape(n, 3)
                grow_lo -= np.minimum(d, 0.0)
                grow_hi += np.maximum(d, 0.0)
            if self.fat_lo is None or self.fat_hi is None:
                self.fat_lo, self.fat_hi = lo - grow_lo, hi + grow_hi
            else:
                self.fat_lo[escaped] = lo[escaped] - grow_lo[escaped]
                self.fat_hi[escaped] = hi[escaped] + grow_hi[escaped]
            self._old_pairs, self._pairs = self._pairs, None
        filters = tuple(None if x is None else np.array(x, copy=True)
                        for x in (group, mask, static))
        same = _same_filters(filters, self._filters)
        if self._pairs is None or not same:
            # (Up to BRUTE_MAX boxes the full search is the cheaper one.)
            if same and n > BRUTE_MAX and escaped.sum() <= _INCREMENTAL_FRACTION * n:
                self._pairs = self._repair(escaped, group, mask, static)
            else:
                self._pairs = find_pairs(self.fat_lo, self.fat_hi, group, mask, static)
            self._filters = filters
        return self._pairs[0].copy(), self._pairs[1].copy()

    def _repair(self, escaped, group, mask, static):
        """Pairs after a few fat boxes were rebuilt: keep the cached pairs between unchanged
        boxes, and search only the rebuilt boxes against all boxes."""
        n = len(escaped)
        group, mask, static = _check_filters(n, group, mask, static)
        assert self._old_pairs is not None and self.fat_lo is not None and self.fat_hi is not None
        ia, ib = self._old_pairs
        keep = ~(escaped[ia] | escaped[ib])
        e, r = np.flatnonzero(escaped), np.flatnonzero(~escaped)
        flo, fhi = self.fat_lo, self.fat_hi
        axis = _sweep_axis(flo, fhi)
        a, b = _sweep_self(flo[e], fhi[e], axis)
        parts = [(e[a], e[b])]
        if len(r):
            a, b = _sweep_bipartite(flo[e], fhi[e], flo[r], fhi[r], axis)
            parts.append((e[a], r[b]))
        pa, pb = _concat(parts)
        na, nb = _finish(n, pa, pb, group, mask, static)
        key = np.concatenate((ia[keep] * np.int64(n) + ib[keep], na * np.int64(n) + nb))
        key.sort()
        return key // n, key % n


def _same_filters(a, b):
    if b is None:
        return False
    return all((x is None and y is None) or
               (x is not None and y is not None and np.array_equal(x, y))
               for x, y in zip(a, b))
