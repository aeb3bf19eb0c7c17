"""Persistent manifolds: a convex pair's manifold is reused while its two bodies barely moved
relative to each other since it was computed (Bullet's persistent manifolds; Jolt's body pair
cache, whose default tolerances of 1 mm and 2 degrees WorldSettings copies).

A fresh manifold is captured as it came out (world normal, points, separations) with the two
bodies' poses at that time. A later collision pass that finds the pair's relative pose (B in
A's frame) within ``manifold_reuse_distance`` and ``manifold_reuse_angle`` of the captured one,
and its speculative margin not grown by more than that distance, rebuilds the manifold instead
of running the narrowphase: each point stands for two surface points (midpoint -+ half the
separation along the normal), carried with their bodies to the new poses; the normal turns with
A; the separation is the gap of the two points along it. The points keep their feature ids
(warm starting is unchanged) and the separations follow the bodies' motion exactly to first
order; what reuse can miss is a feature that comes into contact within the tolerance, which is
what the tolerance bounds. The tolerance is measured from the capture, not from the last reuse,
so errors do not accumulate. Capturing is a few gathers; the frame changes are paid only when
a manifold is reused.

The captured geometry lives in the pair table (engine.collision.contacts.PairTable) next to the warm-start
impulses, so get_state / set_state replay bit for bit.
"""
import numpy as np

from ..core import detmath, quat

# Geometry columns per manifold row, and their trailing shapes and dtypes.
COLUMNS = {
    "pos_a": ((3,), np.float64),        # A's and B's poses at capture (origin, quaternion)
    "q_a": ((4,), np.float64),
    "pos_b": ((3,), np.float64),
    "q_b": ((4,), np.float64),
    "normal": ((3,), np.float64),       # the manifold as computed (world)
    "points": ((4, 3), np.float64),
    "separation": ((4,), np.float64),
    "margin": ((), np.float64),         # speculative margin it was computed with
    "axis_kind": ((), np.int8),         # debug: the SAT axis at capture
    "axis_index": ((2,), np.int64),
}


def empty(m=0):
    """Geometry of m rows that can never be reused (NaN capture pose)."""
    out = {}
    for name, (shape, dtype) in COLUMNS.items():
        fill = np.nan if dtype == np.float64 else (-1 if name == "axis_index" else 0)
        out[name] = np.full((m,) + shape, fill, dtype=dtype)
    return out


def capture(man, pos_a, q_a, pos_b, q_b, margin):
    """Geometry of fresh manifolds ``man`` (dict of normal, points, separation, axis_kind,
    axis_index) computed at the given poses with the given margins (M,)."""
    return {"pos_a": pos_a, "q_a": q_a, "pos_b": pos_b, "q_b": q_b,
            "normal": man["normal"], "points": man["points"], "separation": man["separation"],
            "margin": np.asarray(margin, dtype=np.float64),
            "axis_kind": np.asarray(man["axis_kind"], dtype=np.int8),
            "axis_index": np.asarray(man["axis_index"], dtype=np.int64)}


def _relative(pos_a, q_a, pos_b, q_b):
    """B's origin and orientation in A's frame."""
    return (quat.rotate(quat.conjugate(q_a), pos_b - pos_a),
            quat.multiply(quat.conjugate(q_a), q_b))


def still_valid(geo, pos_a, q_a, pos_b, q_b, margin, distance, angle):
    """(M,) bool: the captured rows ``geo`` (dict of (M, ...) arrays) may be reused at these
    poses and margins: the relative translation moved less than ``distance``, the relative
    rotation turned less than ``angle`` (rad), the margin grew by less than ``distance``."""
    p0, q0 = _relative(geo["pos_a"], geo["q_a"], geo["pos_b"], geo["q_b"])
    p1, q1 = _relative(pos_a, q_a, pos_b, q_b)
    d = p1 - p0
    moved = np.einsum("mi,mi->m", d, d)
    cos_half = np.abs(np.einsum("mi,mi->m", q0, q1))
    with np.errstate(invalid="ignore"):      # NaN rows (never reusable) compare False
        return ((moved < distance * distance) & (cos_half > detmath.cos(0.5 * angle))
                & (margin <= geo["margin"] + distance))


def rebuild(geo, count, pos_a, q_a, pos_b, q_b):
    """Manifold arrays (normal (M, 3), points (M, 4, 3), separation (M, 4)) of captured rows
    at the current poses; unused slots get +inf separation and zero points, as collide gives."""
    # Rotations from the capture pose to the current one, per body: R1 R0^T.
    turn_a = quat.to_matrix(quat.multiply(q_a, quat.conjugate(geo["q_a"])))
    turn_b = quat.to_matrix(quat.multiply(q_b, quat.conjugate(geo["q_b"])))
    n0 = geo["normal"]
    sep0 = geo["separation"]
    used = np.arange(4)[None, :] < count[:, None]
    half = np.where(used, 0.5 * sep0, 0.0)[:, :, None] * n0[:, None, :]
    pa = np.matmul(geo["points"] - half - geo["pos_a"][:, None], turn_a.transpose(0, 2, 1))
    pb = np.matmul(geo["points"] + half - geo["pos_b"][:, None], turn_b.transpose(0, 2, 1))
    pa += pos_a[:, None]
    pb += pos_b[:, None]
    n = np.matmul(turn_a, n0[:, :, None])[:, :, 0]
    sep = np.where(used, np.einsum("mki,mi->mk", pb - pa, n), np.inf)
    points = np.where(used[:, :, None], 0.5 * (pa + pb), 0.0)
    return n, points, sep
