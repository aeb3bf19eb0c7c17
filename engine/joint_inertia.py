"""The joint solvers' world inverse inertia, kept at the bodies' present orientation.

The world takes each body's world inverse inertia R I^-1 R^T once per collision pass; the
joint rows are rebuilt from the present poses every substep (engine.joint_solver), and rows
rebuilt for a turned body but weighted by its old tensor are not a projection: the exact
solve of a fixed joint then added energy instead of removing it. A 438 kg needle (axial
inertia 2.5e-9 kg m^2, 2e4 times below its others) fixed to a 45 g compound went to 1e17 m/s
in one step (fuzz seeds 313, 320, 327, 336, 352). So the tensors of the anisotropic bodies
in joints are taken again at each prepare; isotropic ones (spheres, cubes: R I^-1 R^T = I^-1
whatever R) keep the pass's, bit for bit.
"""
import numpy as np

from .joint_math import quat_matrix


def isotropic(inv_body):
    """(k,) bool: body-frame inverse inertias (k, 3, 3) that are a multiple of the identity."""
    d = np.einsum("kii->ki", inv_body)
    off = inv_body - d[:, :, None] * np.eye(3)
    return (d[:, 0] == d[:, 1]) & (d[:, 1] == d[:, 2]) & ~off.any(axis=(1, 2))


class CurrentInertia:
    """World inverse inertias (k, 3, 3) of k joint ends: bodies idx (k,), their body-frame
    inverse inertias inv_body (k, 3, 3) (zero for a side that does not move: the world, a
    sleeping or static body) and the pass's world tensors start (k, 3, 3)."""

    def __init__(self, idx, inv_body, start):
        self.idx = idx
        self.aniso = np.flatnonzero(~isotropic(inv_body))
        self.inv_body = inv_body[self.aniso]
        self.current = np.array(start, dtype=float)

    def update(self, q):
        """The tensors at orientations q (N, 4) (the anisotropic ends retaken)."""
        k = self.aniso
        if len(k):
            rot = quat_matrix(q[self.idx[k]])
            self.current[k] = np.einsum("kij,kjl,kml->kim", rot, self.inv_body, rot)
        return self.current
