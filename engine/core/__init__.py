"""Foundations every phase uses: errors, kinds, quaternions, deterministic math, and the one
home of the compiler (``jit``: numba when it can be imported, else the same kernels as plain
Python). Imports nothing from the other packages."""
