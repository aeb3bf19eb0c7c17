"""Only a name kept for engine/joint_points.py, which imports ``einsum`` from here.

The numpy colour sweeps that lived here went with engine/contact_kernels.py; ``einsum`` (np.einsum
without its Python wrapper) now lives in engine/vec.py. Delete this module once
joint_points.py imports it from there.
"""
from .vec import einsum  # noqa: F401
