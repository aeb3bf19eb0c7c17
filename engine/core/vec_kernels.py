"""3-vector helpers of the compiled kernels, one copy each (engine/core/vec.py is the numpy side).

Each kernel module used to carry its own ``_dot``, pose and basis helpers; they live here so
that every kernel computes them with the same operations in the same order (bit-identical
results wherever they are called). Vectors are 1-d float64 arrays (or rows of one), ``rot`` a
3x3 rotation; the ``*_into`` helpers compute every component before writing ``out``, so
``out`` may be one of the inputs.
"""
from .jit import kernel


@kernel(inline="always")
def dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@kernel(inline="always")
def dot_parts(a0, a1, a2, b0, b1, b2):
    """dot for two vectors given by components."""
    return a0 * b0 + a1 * b1 + a2 * b2


@kernel
def cross_parts(a0, a1, a2, b0, b1, b2):
    """a x b of two 3-vectors given by components."""
    return a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0


@kernel(inline="always")
def cross_into(a, b, out):
    x = a[1] * b[2] - a[2] * b[1]
    y = a[2] * b[0] - a[0] * b[2]
    z = a[0] * b[1] - a[1] * b[0]
    out[0] = x
    out[1] = y
    out[2] = z


@kernel(inline="always")
def pose_into(rot, p, off, out):
    """out = rot @ p + off."""
    x = rot[0, 0] * p[0] + rot[0, 1] * p[1] + rot[0, 2] * p[2]
    y = rot[1, 0] * p[0] + rot[1, 1] * p[1] + rot[1, 2] * p[2]
    z = rot[2, 0] * p[0] + rot[2, 1] * p[1] + rot[2, 2] * p[2]
    out[0] = x + off[0]
    out[1] = y + off[1]
    out[2] = z + off[2]


@kernel(inline="always")
def unpose_into(rot, p, off, out):
    """out = rot^T @ (p - off): pose_into undone."""
    x = p[0] - off[0]
    y = p[1] - off[1]
    z = p[2] - off[2]
    out[0] = rot[0, 0] * x + rot[1, 0] * y + rot[2, 0] * z
    out[1] = rot[0, 1] * x + rot[1, 1] * y + rot[2, 1] * z
    out[2] = rot[0, 2] * x + rot[1, 2] * y + rot[2, 2] * z


@kernel(inline="always")
def tangent_basis(n, u, v):
    """Unit u, v with (u, v, n) right-handed for a unit normal n (clip.tangent_basis; Duff et
    al. 2017). u and v must not be n itself."""
    sign = 1.0 if n[2] >= 0 else -1.0
    a = -1.0 / (sign + n[2])
    b = n[0] * n[1] * a
    u[0] = 1.0 + sign * n[0] * n[0] * a
    u[1] = sign * b
    u[2] = -sign * n[0]
    v[0] = n[1] * u[2] - n[2] * u[1]
    v[1] = n[2] * u[0] - n[0] * u[2]
    v[2] = n[0] * u[1] - n[1] * u[0]
