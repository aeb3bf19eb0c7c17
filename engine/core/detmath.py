"""Transcendental functions whose results do not depend on where numpy's arrays lie in memory.

numpy evaluates sin, cos, arctan2, ... with SIMD kernels (within a few ulp) or with the C
library's scalar functions (correctly rounded, or nearly), and picks between them per call: an
input whose address range, counted to a stride past its last element, seems to overlap the
output sends the call to the scalar loop. A strided input (``rel[:, 2, 2]``) often does; so does
a contiguous one when the allocator places the fresh output right after it (arcsin, arccos,
arctan2, log, exp: measured, tests/test_detmath.py). The same values then gave results 1 ulp
apart from one run to the next in one process (issue 11: a hinge angle in engine.dynamics.joint_solver,
then an Euler triple picked by a tie in the jointed fuzzer's seed 311, whose replay differed),
and a 1-iteration impact amplified that to millimetres. So every function here copies a
strided input and writes into an output padded by 64 bytes on both sides, which no other array
can touch: always the SIMD kernel. np.hypot, np.sqrt and arithmetic have one kernel (measured)
and are called directly.
"""
import numpy as np

_PAD = 8   # float64 elements of padding on each side of an output


def _contiguous(x):
    if isinstance(x, np.ndarray) and not x.flags.c_contiguous:
        return np.ascontiguousarray(x)
    return x


def _call(f, *xs):
    """f(*xs) with contiguous inputs into a padded output (scalars: as numpy gives them)."""
    xs = tuple(_contiguous(x) for x in xs)
    if all(np.ndim(x) == 0 for x in xs):
        return f(*xs)
    shape = np.broadcast_shapes(*(np.shape(x) for x in xs))
    n = int(np.prod(shape))
    out = np.empty(n + 2 * _PAD)[_PAD:_PAD + n].reshape(shape)
    return f(*xs, out=out)


def sin(x):
    return _call(np.sin, x)


def cos(x):
    return _call(np.cos, x)


def arcsin(x):
    return _call(np.arcsin, x)


def arccos(x):
    return _call(np.arccos, x)


def arctan2(y, x):
    return _call(np.arctan2, y, x)


def power(x, y):
    return _call(np.power, x, y)


def log(x):
    return _call(np.log, x)


def log2(x):
    return _call(np.log2, x)
