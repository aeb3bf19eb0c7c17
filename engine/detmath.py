"""Transcendental functions whose results do not depend on where numpy's arrays lie in memory.

numpy evaluates sin, cos, arctan2, ... with SIMD kernels (within a few ulp) or with the C
library's scalar functions (correctly rounded, or nearly), and picks between them per call: a
strided input (``rel[:, 2, 2]``) whose address range, counted to a stride past its last
element, seems to overlap the freshly allocated output sends the call to the scalar loop. So
the same values gave results 1 ulp apart from one run to the next in one process (issue 11:
a hinge angle in engine.joint_solver, measured), and a 1-iteration impact amplified that to
millimetres. Contiguous inputs always take the same path, so every function here copies a
strided input first (cheap: the engine's arrays are small). np.hypot, np.sqrt and arithmetic
have one kernel (measured: tests/test_detmath.py) and are called directly.
"""
import numpy as np


def _contiguous(x):
    if isinstance(x, np.ndarray) and not x.flags.c_contiguous:
        return np.ascontiguousarray(x)
    return x


def sin(x):
    return np.sin(_contiguous(x))


def cos(x):
    return np.cos(_contiguous(x))


def arcsin(x):
    return np.arcsin(_contiguous(x))


def arccos(x):
    return np.arccos(_contiguous(x))


def arctan2(y, x):
    return np.arctan2(_contiguous(y), _contiguous(x))


def power(x, y):
    return np.power(_contiguous(x), _contiguous(y))


def log(x):
    return np.log(_contiguous(x))


def log2(x):
    return np.log2(_contiguous(x))
