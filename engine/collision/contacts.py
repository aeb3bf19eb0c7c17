"""Persistent contact pair table: warm-start impulses carried from step to step.

A row is one *manifold*, identified by two int64 columns: ``keys`` = (a << 32) | b, the body
pair with a < b (``pair_keys``), and ``sub``, which manifold of that pair it is (0 for convex
pairs; part pair and normal cluster for compounds and triangle meshes, see
engine.collision.nonconvex). Rows are kept sorted by (key, sub), so a step's manifolds (which arrive
sorted the same way) are matched to last step's by a binary search on the two columns in a
kernel (engine.core.jit). Keys are exact, not folded into one integer: a body pair may have any
number of manifolds, and bodies only need to fit in 31 bits (``MAX_BODIES``).

Inside a matched manifold, points are matched by feature id (the narrowphase gives each point
an id that is stable while the same features touch): each new slot takes the first old slot
with the same id.

What is stored per manifold: the 4 point ids, the accumulated normal impulse of each point and
its friction impulse as a *world* vector (tangent bases may turn between steps; the solver
projects the vector on its new tangents), and the manifold's captured geometry for reuse
(engine.collision.manifold_cache; ``geo``, rows that cannot be reused hold NaN poses).
"""
import numpy as np

from ..core.errors import EngineError
from ..core.jit import kernel
from . import manifold_cache

# A pair key packs two body indices of 31 bits each into one int64 (sorted, searchsorted).
MAX_BODIES = 1 << 31
_EMPTY_I = np.zeros(0, dtype=np.int64)


def pair_keys(ia, ib):
    """Sortable int64 keys of body pairs (a < b < 2**31)."""
    return (np.asarray(ia, dtype=np.int64) << 32) | np.asarray(ib, dtype=np.int64)


def key_bodies(keys):
    """Inverse of pair_keys: (a, b) int64 arrays."""
    keys = np.asarray(keys, dtype=np.int64)
    return keys >> 32, keys & 0xFFFFFFFF


def check_body_count(n):
    """Refuse worlds whose body indices would not fit the pair keys."""
    if n > MAX_BODIES:
        raise EngineError(f"a world holds at most {MAX_BODIES} bodies (contact pair keys are "
                          f"31-bit body indices), got {n}; split the scene")


@kernel
def match_rows(t_keys, t_sub, t_ids, t_count, t_normal, t_friction, keys, sub, ids, count,
           normal, friction, matched):
    """For each manifold i (keys, sub, ids (M, 4), count (M,)): its row in the table (t_...,
    sorted by (key, sub)) by binary search, then per used slot the first used old slot with
    the same feature id, whose impulses go to normal (M, 4), friction (M, 4, 3) and
    matched (M, 4) (left as they are where nothing matches)."""
    for i in range(keys.shape[0]):
        lo = table_row(t_keys, t_sub, keys[i], sub[i])
        if lo < 0:
            continue
        for p in range(count[i]):
            for q in range(t_count[lo]):
                if ids[i, p] == t_ids[lo, q]:
                    normal[i, p] = t_normal[lo, q]
                    for c in range(3):
                        friction[i, p, c] = t_friction[lo, q, c]
                    matched[i, p] = True
                    break


@kernel(inline="always")
def table_row(t_keys, t_sub, k, s):
    """The row of (k, s) in the table's columns (sorted by (key, sub)), or -1: a binary
    search."""
    n = t_keys.shape[0]
    lo = 0
    hi = n
    while lo < hi:
        mid = (lo + hi) >> 1
        if t_keys[mid] < k or (t_keys[mid] == k and t_sub[mid] < s):
            lo = mid + 1
        else:
            hi = mid
    if lo == n or t_keys[lo] != k or t_sub[lo] != s:
        return -1
    return lo


class PairTable:
    """Warm-start memory. Arrays: keys (P,) and sub (P,) sorted by (key, sub), ids (P, 4),
    count (P,), normal (P, 4), friction (P, 4, 3)."""

    def __init__(self):
        self.keys = _EMPTY_I.copy()
        self.sub = _EMPTY_I.copy()
        self.ids = np.zeros((0, 4), dtype=np.int64)
        self.count = _EMPTY_I.copy()
        self.normal = np.zeros((0, 4))
        self.friction = np.zeros((0, 4, 3))
        self.geo = manifold_cache.empty()

    def __len__(self):
        return len(self.keys)

    @staticmethod
    def _sub(sub, m):
        return np.zeros(m, dtype=np.int64) if sub is None else np.asarray(sub, np.int64)

    def match(self, keys, ids, count, sub=None):
        """Warm-start impulses for this step's manifolds.

        keys (M,) pair keys, sub (M,) manifold of the pair (default 0), ids (M, 4) feature
        ids, count (M,) used slots. Returns (normal (M, 4), friction (M, 4, 3), matched (M, 4)).
        """
        keys = np.asarray(keys, dtype=np.int64)
        m = len(keys)
        normal = np.zeros((m, 4))
        friction = np.zeros((m, 4, 3))
        matched = np.zeros((m, 4), dtype=bool)
        if m and len(self.keys):
            match_rows(self.keys, self.sub, self.ids, self.count, self.normal, self.friction, keys,
                   self._sub(sub, m), np.asarray(ids, dtype=np.int64),
                   np.asarray(count, dtype=np.int64), normal, friction, matched)
        return normal, friction, matched

    def store(self, keys, ids, count, normal, friction, keep=None, sub=None, geo=None,
              owned=False):
        """Replace the table by this step's manifolds (sorted by (key, sub)), plus old rows
        whose body pair was not evaluated this step and where ``keep(old_keys)`` is True (e.g.
        pairs of sleeping bodies). A pair evaluated this step keeps only its new manifolds.
        geo: their captured geometry (engine.collision.manifold_cache; None: not reusable).
        owned: the arrays are the caller's to give away (the world's own, made this pass),
        so the table keeps them instead of copies."""
        keys = np.asarray(keys, dtype=np.int64)
        sub = self._sub(sub, len(keys))
        geo = manifold_cache.empty(len(keys)) if geo is None else geo
        if keep is not None and len(self.keys):
            old_keep = keep(self.keys)
            if len(keys):
                pos = np.minimum(np.searchsorted(keys, self.keys), len(keys) - 1)
                old_keep &= keys[pos] != self.keys
            if old_keep.any():
                keys = np.concatenate((keys, self.keys[old_keep]))
                sub = np.concatenate((sub, self.sub[old_keep]))
                ids = np.concatenate((ids, self.ids[old_keep]))
                count = np.concatenate((count, self.count[old_keep]))
                normal = np.concatenate((normal, self.normal[old_keep]))
                friction = np.concatenate((friction, self.friction[old_keep]))
                geo = {k: np.concatenate((v, self.geo[k][old_keep])) for k, v in geo.items()}
                srt = np.lexsort((sub, keys))
                keys, sub, ids, count = keys[srt], sub[srt], ids[srt], count[srt]
                normal, friction = normal[srt], friction[srt]
                geo = {k: v[srt] for k, v in geo.items()}
        take = np.asarray if owned else np.array
        self.keys = take(keys, dtype=np.int64)
        self.sub = take(sub, dtype=np.int64)
        self.ids = take(ids, dtype=np.int64)
        self.count = take(count, dtype=np.int64)
        self.normal = take(normal, dtype=np.float64)
        self.friction = take(friction, dtype=np.float64)
        self.geo = {k: take(v) for k, v in geo.items()}

    def get_state(self):
        state = {"pair_keys": self.keys.copy(), "pair_sub": self.sub.copy(),
                 "pair_ids": self.ids.copy(), "pair_count": self.count.copy(),
                 "pair_normal": self.normal.copy(), "pair_friction": self.friction.copy()}
        state.update({"pair_geo_" + k: v.copy() for k, v in self.geo.items()})
        return state

    def set_state(self, state):
        self.keys = np.array(state["pair_keys"], dtype=np.int64).reshape(-1)
        # States saved before sub keys existed: every manifold was the only one of its pair.
        sub = state.get("pair_sub")
        self.sub = (np.zeros(len(self.keys), np.int64) if sub is None
                    else np.array(sub, dtype=np.int64).reshape(-1))
        self.ids = np.array(state["pair_ids"], dtype=np.int64).reshape(-1, 4)
        self.count = np.array(state["pair_count"], dtype=np.int64)
        self.normal = np.array(state["pair_normal"], dtype=np.float64).reshape(-1, 4)
        self.friction = np.array(state["pair_friction"], dtype=np.float64).reshape(-1, 4, 3)
        # States saved before manifold reuse existed: nothing to reuse.
        geo = manifold_cache.empty(len(self.keys))
        for k, (shape, dtype) in manifold_cache.COLUMNS.items():
            if "pair_geo_" + k in state:
                geo[k] = np.array(state["pair_geo_" + k], dtype=dtype).reshape((-1,) + shape)
        self.geo = geo
