"""Small 3-vector helpers for the hot paths, with fewer numpy calls than the general ones.

``np.cross`` handles any axis and broadcasting through a dozen Python-level numpy calls
(moveaxis, asarray, broadcast); a collision pass calls it a few times on small arrays, where
that overhead is most of its cost. ``cross`` does the same products in the same order
(a1 b2 - a2 b1, ...), so its results are bit-identical to ``np.cross`` on the last axis.
"""
import numpy as np


def cross(a, b):
    """a x b over the last axis (3) of two arrays of the same shape (or broadcastable)."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    out = np.empty(np.broadcast(a, b).shape)
    out[..., 0] = a1 * b2 - a2 * b1
    out[..., 1] = a2 * b0 - a0 * b2
    out[..., 2] = a0 * b1 - a1 * b0
    return out


def norm(x, axis=-1, keepdims=False):
    """Euclidean norm over an axis: what ``np.linalg.norm(x, axis=axis)`` computes for real x
    (sqrt of the add-reduce of the squares, bit-identical), without its dispatch calls."""
    return np.sqrt(np.add.reduce(x * x, axis=axis, keepdims=keepdims))


def columns(*cols, dtype=None):
    """np.stack(cols, axis=-1) for arrays of one shape, in one allocation."""
    first = np.asarray(cols[0])
    out = np.empty(first.shape + (len(cols),), dtype=dtype or np.result_type(*cols))
    for i, c in enumerate(cols):
        out[..., i] = c
    return out


def per_row(value, m):
    """A scalar or (m,) value as a fresh, writable, contiguous float64 (m,) array.

    For arguments of kernels: numba compiles a kernel (and everything it calls) once per
    argument type, and a read-only array (what np.broadcast_to returns) is a type of its own,
    so a margin passed as a broadcast view compiled the collision routines twice."""
    return np.array(np.broadcast_to(np.asarray(value, dtype=np.float64), (m,)))
