"""Broadphase: every pair of overlapping axis-aligned boxes, found by compiled kernels.

Input is the world AABBs ``lo, hi (N, 3)`` (already fattened by the caller). Boxes that touch
(``lo_a == hi_b``) overlap. Output is two int64 arrays ``(ia, ib)`` with ``ia < ib``, sorted
lexicographically, so the same scene always yields the same pair order (the solver's result
depends on constraint order, and we want bit-for-bit repeatable simulations).

Method: a uniform grid. The cell edge is 1.5 x the size 90 % of the boxes stay under, so those
("small" boxes) cover at most 2 cells per axis. Each small box is entered in the cells it
covers (``_grid_entries``: a hash of the cell's coordinates, the box and the offset of the cell
within the box's 2 x 2 x 2 block); the entries are sorted by hash, and the boxes sharing a cell
are tested against each other (``_cell_pairs``). A pair sharing several cells is reported only
in the cell holding the lower corner of the two boxes' intersection (that corner lies in both
boxes, so that cell holds both): per axis, no offset of 1 in both entries. Two cells whose
hashes collide only share a run of the sorted entries; their coordinates tell them apart.

Boxes too big for the grid (ground slabs, walls, a box spanning the scene, boxes far out at
coordinates no cell index holds) are tested against the boxes sorted by ``lo`` along x whose
``lo`` lies within reach of theirs (``_big_pairs``: a small box starts at most one small
extent before a big one it overlaps), and against each other directly.

Why a grid and not sweep-and-prune: in 3D at constant density, the boxes that overlap a box
along one axis form a slab holding O(N^(2/3)) boxes, so a 1D sweep enumerates O(N^(5/3))
candidates (10,000 random boxes: 45 ms for a compiled sweep, against a few for the grid). The
grid's candidates are the boxes in the same few cells: O(N) for any scene whose boxes are
similar in size, and the sort makes the whole O(N log N). ``bench/bench_broadphase.py``
measures it.
"""
import numpy as np

from ..core.errors import EngineError
from ..core.jit import kernel

# The grid cell is sized to this quantile of box sizes; bigger boxes are "big".
_CELL_QUANTILE = 0.9
# Cell coordinates beyond this (in cells) are left to the big-box path, so that every cell
# index is an exact int64 however far out a box is.
_MAX_CELL_COORD = 2.0 ** 40
# Pairs the first pass of a kernel makes room for, per box (each counts them all, and a
# second pass fills a buffer of the right size when they do not fit).
_PAIRS_PER_BOX = 16
# Up to this many box tests (rebuilt fat boxes x all boxes), the persistent broadphase tests
# the rebuilt boxes against all others and keeps the other pairs, instead of a full search
# (1000-cube heap, 2 % of the boxes moving: 0.1 ms against a 2 ms search).
_REPAIR_TESTS = 200_000
# The cell hash takes each coordinate modulo this (cells this many apart share a hash, and
# are told apart by their coordinates): 3 x 14 bits, which leaves room to pack the entry's
# number beside the hash in one int64 for the sort.
_WRAP = 1 << 14
_HASH_BITS = 42


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
    if group is None:
        group = mask = np.full(n, -1, dtype=np.int64)
    if static is None:
        static = np.zeros(n, dtype=bool)
    cell, small = _cells(lo, hi)
    filters = (group, mask, static)
    keys = _run(_cell_pairs, n, *_grid_entries_of(cell, small), *cell, lo, hi, *filters)
    big = np.flatnonzero(~small)
    if len(big):
        order = np.argsort(lo[:, 0], kind="stable")
        ext = (hi[small, 0] - lo[small, 0]).max() if small.any() else 0.0
        keys = np.concatenate((keys, _run(_big_pairs, n, big, small, order, lo[order, 0],
                                          float(ext), lo, hi, *filters)))
    keys.sort()
    return keys // n, keys % n


def _run(pair_kernel, n, *args):
    """The int64 pair keys a pair kernel writes: a first pass into room for
    _PAIRS_PER_BOX * n, a second with room for all when they did not fit."""
    keys = np.empty(_PAIRS_PER_BOX * n, dtype=np.int64)
    count = pair_kernel(*args, keys)
    if count > len(keys):
        keys = np.empty(count, dtype=np.int64)
        pair_kernel(*args, keys)
    return keys[:count]


def _cells(lo, hi):
    """((cell, span): each box's lowest cell (N, 3) int64 and the cells it covers beyond it
    per axis (0 or 1), small (N,) bool: the box covers at most 2 cells per axis, at
    coordinates an int64 holds exactly)."""
    n = len(lo)
    cell, span = np.zeros((n, 3), dtype=np.int64), np.zeros((n, 3), dtype=np.int64)
    small = np.empty(n, dtype=bool)
    _grid_cells(lo, hi, 1.0 / _cell_size(lo, hi), cell, span, small)
    return (cell, span), small


def _grid_entries_of(cell_span, small):
    """(hash, box, code) of every small box's entries, sorted by hash."""
    cell, span = cell_span
    boxes = np.flatnonzero(small)
    count = (1 + span[boxes]).prod(axis=1)
    first = np.concatenate(([0], np.cumsum(count)))
    m = int(first[-1])
    h, box, code = (np.empty(m, dtype=np.int64) for _ in range(3))
    _grid_entries(boxes, cell, span, first, h, box, code)
    # The order within a cell does not matter (the pairs are sorted at the end): hash and
    # entry packed in one int64 sort faster than an argsort.
    bits = max(1, m.bit_length())
    if _HASH_BITS + bits <= 63:
        packed = (h << bits) | np.arange(m, dtype=np.int64)
        packed.sort()
        order = packed & ((1 << bits) - 1)
    else:
        order = np.argsort(h)
    return h[order], box[order], code[order]


@kernel
def _grid_cells(lo, hi, inv, cell, span, small):
    """Per box: its lowest cell, its span (cells beyond it per axis), and whether it is small.
    lo * inv is monotonic in lo, which the lower-corner rule relies on; the test is made on
    the floored values themselves, so rounding never leaves a box out of a cell it covers
    (and an infinite or NaN extent fails it)."""
    for n in range(len(lo)):
        ok = True
        for k in range(3):
            fl = np.floor(lo[n, k] * inv)
            fh = np.floor(hi[n, k] * inv)
            if not (fh - fl <= 1.0 and abs(fl) < _MAX_CELL_COORD and abs(fh) < _MAX_CELL_COORD):
                ok = False
                break
            cell[n, k] = int(fl)
            span[n, k] = int(fh - fl)
        small[n] = ok


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


@kernel(inline="always")
def _cell_hash(x, y, z):
    return ((x % _WRAP) * _WRAP + (y % _WRAP)) * _WRAP + (z % _WRAP)


@kernel
def _grid_entries(boxes, cell, span, first, h, box, code):
    """For each small box, one entry per cell it covers: the cell's hash, the box, and the
    cell's offset in the box's block as 3 bits (x, y, z)."""
    for k in range(len(boxes)):
        b = boxes[k]
        e = first[k]
        for c in range(8):
            ox, oy, oz = c & 1, (c >> 1) & 1, (c >> 2) & 1
            if ox > span[b, 0] or oy > span[b, 1] or oz > span[b, 2]:
                continue
            h[e] = _cell_hash(cell[b, 0] + ox, cell[b, 1] + oy, cell[b, 2] + oz)
            box[e] = b
            code[e] = c
            e += 1


@kernel
def _cell_pairs(h, box, code, cell, span, lo, hi, group, mask, static, keys):
    """Pairs among the entries of each cell (runs of equal hash), each reported once: in the
    cell of the lower corner of the boxes' intersection. Writes min * N + max keys (as many
    as fit) and returns how many pairs there are."""
    n = len(lo)
    count = 0
    start = 0
    m = len(h)
    while start < m:
        end = start + 1
        while end < m and h[end] == h[start]:
            end += 1
        for s in range(start, end):
            i, ci = box[s], code[s]
            for t in range(s + 1, end):
                j, cj = box[t], code[t]
                if ci & cj:       # an axis where both are in their upper cell: not the corner
                    continue
                # The overlap and filter test is written out here and in _big_pairs: as a
                # kernel of its own, its array arguments' reference counting cost 6x the test
                # (1000 cubes: 1.1 ms against 0.18).
                if (lo[i, 0] > hi[j, 0] or lo[j, 0] > hi[i, 0] or lo[i, 1] > hi[j, 1]
                        or lo[j, 1] > hi[i, 1] or lo[i, 2] > hi[j, 2] or lo[j, 2] > hi[i, 2]
                        or (static[i] and static[j])
                        or (group[i] & mask[j]) == 0 or (group[j] & mask[i]) == 0):
                    continue
                if (cell[i, 0] + (ci & 1) != cell[j, 0] + (cj & 1)
                        or cell[i, 1] + ((ci >> 1) & 1) != cell[j, 1] + ((cj >> 1) & 1)
                        or cell[i, 2] + ((ci >> 2) & 1) != cell[j, 2] + ((cj >> 2) & 1)):
                    continue      # two cells whose hashes collide
                if count < len(keys):
                    keys[count] = min(i, j) * n + max(i, j)
                count += 1
        start = end
    return count


@kernel
def _big_pairs(big, small, order, sorted_lo, reach, lo, hi, group, mask, static, keys):
    """Pairs with a big box: each big box against the small boxes whose lo along x lies in
    [lo - reach, hi] (reach: the largest small extent along x; order sorts the boxes by lo
    along x, sorted_lo is that sorted lo), and the big boxes against each other."""
    n = len(lo)
    count = 0
    for k in range(len(big)):
        b = big[k]
        first = np.searchsorted(sorted_lo, lo[b, 0] - reach, side="left")
        for t in range(first, n):
            j = order[t]
            if sorted_lo[t] > hi[b, 0]:
                break
            if (not small[j] or lo[b, 1] > hi[j, 1] or lo[j, 1] > hi[b, 1]
                    or lo[b, 2] > hi[j, 2] or lo[j, 2] > hi[b, 2] or hi[j, 0] < lo[b, 0]
                    or (static[b] and static[j])
                    or (group[b] & mask[j]) == 0 or (group[j] & mask[b]) == 0):
                continue
            if count < len(keys):
                keys[count] = min(b, j) * n + max(b, j)
            count += 1
        for k2 in range(k + 1, len(big)):
            j = big[k2]
            if (lo[b, 0] > hi[j, 0] or lo[j, 0] > hi[b, 0] or lo[b, 1] > hi[j, 1]
                    or lo[j, 1] > hi[b, 1] or lo[b, 2] > hi[j, 2] or lo[j, 2] > hi[b, 2]
                    or (static[b] and static[j])
                    or (group[b] & mask[j]) == 0 or (group[j] & mask[b]) == 0):
                continue
            if count < len(keys):
                keys[count] = min(b, j) * n + max(b, j)
            count += 1
    return count


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


# ----------------------------------------------------------------------------- persistent fat boxes

class Broadphase:
    """Broadphase with persistent fat boxes, for stepping a world.

    Each body keeps a fat box (its tight box grown by `margin`, plus its predicted motion)
    until its tight box leaves it; only then is that body's fat box rebuilt. While no fat box
    changes and the filters are the same, the pair set cannot change either, so a resting
    scene costs one containment test per body instead of a full `find_pairs`; when a few
    boxes are rebuilt, only those are tested against the rest and the cached pairs between
    unchanged boxes are kept (_REPAIR_TESTS). The pairs are those of the fat boxes: a
    superset of the tight-box pairs, stable from step to step (which also keeps contact
    warm-starting steady).

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
        self._filters = None

    def update(self, lo, hi, displacement=None, group=None, mask=None, static=None,
               copy=True):
        """Pairs of overlapping fat boxes, as `find_pairs` returns them.

        lo, hi: (N, 3) tight world boxes this step. displacement: optional (N, 3) motion
        expected over the next step (velocity * dt); a rebuilt fat box is stretched along it
        so a moving body does not leave its box every step. group, mask, static: as in
        `find_pairs`. copy=False: the broadphase's own arrays (the caller must not write
        them; they stay valid until the next update), for a caller that filters them anyway.
        """
        lo = np.ascontiguousarray(lo, dtype=np.float64)
        hi = np.ascontiguousarray(hi, dtype=np.float64)
        n = len(lo)
        if lo.ndim != 2 or lo.shape[1:] != (3,) or hi.shape != lo.shape:
            _check_boxes(lo, hi)                 # raises, saying what shape it needs
        disp = (_NO_DISPLACEMENT if displacement is None
                else np.ascontiguousarray(displacement, dtype=np.float64).reshape(n, 3))
        if self.fat_lo is None or self.fat_hi is None or len(self.fat_lo) != n:
            lo, hi = _check_boxes(lo, hi)
            self.reset()
            escaped = np.ones(n, dtype=bool)
            self.fat_lo, self.fat_hi = np.empty((n, 3)), np.empty((n, 3))
        else:
            escaped = np.zeros(n, dtype=bool)
        # Escaped boxes get fat boxes anew, in one kernel; a NaN or inverted box stops it.
        count = _refit(lo, hi, disp, self.margin, escaped, self.fat_lo, self.fat_hi)
        if count < 0:
            _check_boxes(lo, hi)                 # raises, naming the first bad body
        same = _same_filters((group, mask, static), self._filters)
        if count:
            rebuilt = np.flatnonzero(escaped)
            if same and self._pairs is not None and len(rebuilt) * n <= _REPAIR_TESTS:
                self._pairs = self._repair(escaped, rebuilt, group, mask, static)
            else:
                self._pairs = None
        if self._pairs is None or not same:
            self._pairs = find_pairs(self.fat_lo, self.fat_hi, group, mask, static)
            self._filters = tuple(None if x is None else np.array(x, copy=True)
                                  for x in (group, mask, static))
        if not copy:
            return self._pairs
        return self._pairs[0].copy(), self._pairs[1].copy()

    def _repair(self, escaped, rebuilt, group, mask, static):
        """The pairs after the fat boxes of `rebuilt` were rebuilt: the cached pairs between
        other boxes, and the rebuilt boxes tested against every box."""
        assert self._pairs is not None and self.fat_lo is not None and self.fat_hi is not None
        n = len(escaped)
        group, mask, static = _check_filters(n, group, mask, static)
        if group is None:
            group = mask = np.full(n, -1, dtype=np.int64)
        if static is None:
            static = np.zeros(n, dtype=bool)
        ia, ib = self._pairs
        # Room for the kept pairs and _PAIRS_PER_BOX new ones per rebuilt box; a second call
        # with room for all when they did not fit.
        out_a = np.empty(len(ia) + _PAIRS_PER_BOX * len(rebuilt), dtype=np.int64)
        out_b = np.empty_like(out_a)
        count = _repaired(ia, ib, rebuilt, escaped, self.fat_lo, self.fat_hi, group, mask,
                          static, out_a, out_b)
        if count > len(out_a):
            out_a, out_b = np.empty(count, dtype=np.int64), np.empty(count, dtype=np.int64)
            _repaired(ia, ib, rebuilt, escaped, self.fat_lo, self.fat_hi, group, mask, static,
                      out_a, out_b)
        return out_a[:count], out_b[:count]


@kernel
def _repaired(ia, ib, rebuilt, escaped, lo, hi, group, mask, static, out_a, out_b):
    """Broadphase._repair's pairs into out_a, out_b (if they fit; returns how many there are):
    the pairs (ia, ib) between boxes not rebuilt, and the rebuilt boxes' pairs
    (_rebuilt_pairs), sorted by (a, b)."""
    n = len(lo)
    new = np.empty(_PAIRS_PER_BOX * len(rebuilt), dtype=np.int64)
    found = _rebuilt_pairs(rebuilt, escaped, lo, hi, group, mask, static, new)
    if found > new.shape[0]:
        new = np.empty(found, dtype=np.int64)
        _rebuilt_pairs(rebuilt, escaped, lo, hi, group, mask, static, new)
    keys = np.empty(ia.shape[0] + found, dtype=np.int64)
    k = 0
    for p in range(ia.shape[0]):
        if not (escaped[ia[p]] or escaped[ib[p]]):
            keys[k] = ia[p] * n + ib[p]
            k += 1
    for p in range(found):
        keys[k] = new[p]
        k += 1
    srt = np.sort(keys[:k])
    if k <= out_a.shape[0]:
        for p in range(k):
            out_a[p] = srt[p] // n
            out_b[p] = srt[p] % n
    return k


@kernel
def _rebuilt_pairs(rebuilt, escaped, lo, hi, group, mask, static, keys):
    """Pairs of each rebuilt box with every other box (a pair of two rebuilt boxes once, from
    its lower one), as min * N + max keys; returns how many."""
    n = len(lo)
    count = 0
    for k in range(len(rebuilt)):
        i = rebuilt[k]
        for j in range(n):
            if j == i or (escaped[j] and j < i):
                continue
            if (lo[i, 0] > hi[j, 0] or lo[j, 0] > hi[i, 0] or lo[i, 1] > hi[j, 1]
                    or lo[j, 1] > hi[i, 1] or lo[i, 2] > hi[j, 2] or lo[j, 2] > hi[i, 2]
                    or (static[i] and static[j])
                    or (group[i] & mask[j]) == 0 or (group[j] & mask[i]) == 0):
                continue
            if count < len(keys):
                keys[count] = min(i, j) * n + max(i, j)
            count += 1
    return count


def _same_filters(a, b):
    """Whether the filters a (group, mask, static) are those kept in b (once a pass: a plain
    loop with an element-wise compare, not np.array_equal's dispatch)."""
    if b is None:
        return False
    for x, y in zip(a, b):
        if x is None or y is None:
            if x is not y:
                return False
        elif ((x := np.asarray(x)).shape != y.shape or x.dtype != y.dtype
              or not _equal(x, y)):
            return False
    return True


@kernel
def _equal(x, y):
    """Whether two 1-D arrays of one shape are equal element by element."""
    for i in range(x.shape[0]):  # noqa: SIM110 (a loop numba compiles)
        if x[i] != y[i]:
            return False
    return True


@kernel(refcount=False)
def _overlapping(ia, ib, lo, hi, live, out_a, out_b):
    """The pairs (ia, ib) whose boxes (lo, hi) overlap and with a live body (live (N,) bool;
    (0,): every body), packed into out_a, out_b; returns how many (World's broadphase: the fat
    boxes' pairs cut down to this pass's boxes and its awake bodies)."""
    k = 0
    every = live.shape[0] == 0
    for p in range(ia.shape[0]):
        i = ia[p]
        j = ib[p]
        if ((every or live[i] or live[j])
                and lo[i, 0] <= hi[j, 0] and lo[j, 0] <= hi[i, 0] and lo[i, 1] <= hi[j, 1]
                and lo[j, 1] <= hi[i, 1] and lo[i, 2] <= hi[j, 2] and lo[j, 2] <= hi[i, 2]):
            out_a[k] = i
            out_b[k] = j
            k += 1
    return k


_EVERY = np.zeros(0, dtype=bool)


def overlapping(ia, ib, lo, hi, live=None):
    """The body pairs (ia, ib) whose boxes lo, hi (N, 3) overlap, in their order; with live
    (N,) bool, only those with a live body."""
    out_a, out_b = np.empty(len(ia), np.int64), np.empty(len(ia), np.int64)
    k = _overlapping(ia, ib, lo, hi, _EVERY if live is None else live, out_a, out_b)
    return out_a[:k], out_b[:k]


_NO_DISPLACEMENT = np.zeros((0, 3))


@kernel
def _refit(lo, hi, disp, margin, escaped, fat_lo, fat_hi):
    """Mark the boxes (lo, hi) that left their fat boxes (or all already marked in escaped)
    and give them new fat boxes: grown by margin, stretched along disp (N, 3) if given
    ((0, 3): not). Returns how many were rebuilt, or -1 at a NaN or inverted box."""
    count = 0
    for i in range(lo.shape[0]):
        out = escaped[i]
        for k in range(3):
            if not lo[i, k] <= hi[i, k]:          # NaN or lo > hi
                return -1
            out = out or lo[i, k] < fat_lo[i, k] or hi[i, k] > fat_hi[i, k]
        if not out:
            continue
        escaped[i] = True
        count += 1
        for k in range(3):
            d = disp[i, k] if disp.shape[0] else 0.0
            fat_lo[i, k] = lo[i, k] - (margin - min(d, 0.0))
            fat_hi[i, k] = hi[i, k] + (margin + max(d, 0.0))
    return count
