"""Persistent contact pair table: warm-start impulses carried from step to step.

Keyed by body pair: key = (a << 32) | b with a < b, kept sorted, so a step's pairs (which the
broadphase returns sorted) are matched to last step's with one ``searchsorted``. Inside a
matched pair, manifold points are matched by feature id (the narrowphase gives each point an
id that is stable while the same features touch): an (M, 4, 4) equality test picks, for each
new slot, the old slot with the same id. No Python dict, no loop over contacts.

What is stored per pair: the 4 point ids, the accumulated normal impulse of each point and its
friction impulse as a *world* vector (tangent bases may turn between steps; the solver projects
the vector on its new tangents).
"""
import numpy as np

_EMPTY_I = np.zeros(0, dtype=np.int64)


def pair_keys(ia, ib):
    """Sortable int64 keys of body pairs (a < b < 2**31)."""
    return (np.asarray(ia, dtype=np.int64) << 32) | np.asarray(ib, dtype=np.int64)


class PairTable:
    """Warm-start memory. Arrays: keys (P,) sorted, ids (P, 4), normal (P, 4), friction (P, 4, 3)."""

    def __init__(self):
        self.keys = _EMPTY_I.copy()
        self.ids = np.zeros((0, 4), dtype=np.int64)
        self.count = _EMPTY_I.copy()
        self.normal = np.zeros((0, 4))
        self.friction = np.zeros((0, 4, 3))

    def __len__(self):
        return len(self.keys)

    def match(self, keys, ids, count):
        """Warm-start impulses for this step's manifolds.

        keys (M,) pair keys, ids (M, 4) feature ids, count (M,) used slots.
        Returns (normal (M, 4), friction (M, 4, 3), matched (M, 4) bool).
        """
        m = len(keys)
        normal = np.zeros((m, 4))
        friction = np.zeros((m, 4, 3))
        matched = np.zeros((m, 4), dtype=bool)
        if m == 0 or len(self.keys) == 0:
            return normal, friction, matched
        pos = np.searchsorted(self.keys, keys)
        pos_c = np.minimum(pos, len(self.keys) - 1)
        hit = self.keys[pos_c] == keys
        rows = np.flatnonzero(hit)
        if len(rows) == 0:
            return normal, friction, matched
        old = pos_c[rows]
        slot = np.arange(4)
        new_valid = slot[None, :] < count[rows, None]
        old_valid = slot[None, :] < self.count[old, None]
        eq = ((ids[rows][:, :, None] == self.ids[old][:, None, :])
              & new_valid[:, :, None] & old_valid[:, None, :])  # (R, 4 new, 4 old)
        found = eq.any(axis=2)
        which = np.argmax(eq, axis=2)  # first matching old slot
        r_idx = np.broadcast_to(old[:, None], which.shape)
        normal[rows] = np.where(found, self.normal[r_idx, which], 0.0)
        friction[rows] = np.where(found[..., None], self.friction[r_idx, which], 0.0)
        matched[rows] = found
        return normal, friction, matched

    def store(self, keys, ids, count, normal, friction, keep=None):
        """Replace the table by this step's pairs, plus old rows where ``keep(old_keys)`` is
        True and the key was not evaluated this step (e.g. pairs of sleeping bodies)."""
        keys = np.asarray(keys, dtype=np.int64)
        if keep is not None and len(self.keys):
            old_keep = keep(self.keys)
            if len(keys):
                pos = np.minimum(np.searchsorted(keys, self.keys), len(keys) - 1)
                old_keep &= keys[pos] != self.keys
            if old_keep.any():
                keys = np.concatenate((keys, self.keys[old_keep]))
                ids = np.concatenate((ids, self.ids[old_keep]))
                count = np.concatenate((count, self.count[old_keep]))
                normal = np.concatenate((normal, self.normal[old_keep]))
                friction = np.concatenate((friction, self.friction[old_keep]))
                srt = np.argsort(keys, kind="stable")
                keys, ids, count = keys[srt], ids[srt], count[srt]
                normal, friction = normal[srt], friction[srt]
        self.keys = keys.copy()
        self.ids = np.asarray(ids, dtype=np.int64).copy()
        self.count = np.asarray(count, dtype=np.int64).copy()
        self.normal = np.asarray(normal, dtype=np.float64).copy()
        self.friction = np.asarray(friction, dtype=np.float64).copy()

    def get_state(self):
        return {"pair_keys": self.keys.copy(), "pair_ids": self.ids.copy(),
                "pair_count": self.count.copy(), "pair_normal": self.normal.copy(),
                "pair_friction": self.friction.copy()}

    def set_state(self, state):
        self.keys = np.array(state["pair_keys"], dtype=np.int64)
        self.ids = np.array(state["pair_ids"], dtype=np.int64).reshape(-1, 4)
        self.count = np.array(state["pair_count"], dtype=np.int64)
        self.normal = np.array(state["pair_normal"], dtype=np.float64).reshape(-1, 4)
        self.friction = np.array(state["pair_friction"], dtype=np.float64).reshape(-1, 4, 3)
