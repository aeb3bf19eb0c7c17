"""Keyframe channel values of baked poses: the bake's key maths, Blender-free.

simulate.BakeJob reads the objects' settings (rotation modes, deltas, scales, parents) and calls
``channel_values`` with plain arrays; animation.py writes the result as keys. Keeping the maths
here lets it be tested in plain Python against independent rotations (tests/test_channels.py).

Conventions: F frames, N keyed objects. Poses are the engine's body-origin poses (world
position (F, N, 3), quaternion (F, N, 4) (w, x, y, z)). K (N, 3, 3) is each object's shape
matrix (what the engine body frame leaves out of the object's world matrix: scale, mirror,
shear), D (N, 3, 3) its delta rotation, total_scale (N, 3) scale * delta scale.
"""
import numpy as np

from ..engine.core import quat
from . import transforms


class ParentSpaces:
    """Where each keyed object's parent space comes from over the frames.

    parent_world0 (N, 4, 4) the parent's world matrix at the first frame (identity without a
    parent); parent_const (N, 4, 4) parent_world^-1 @ the object's parent space (its
    matrix_parent_inverse and parent type), constant; parent_body (N,) the row of the keyed
    object that is this object's simulated parent, or -1; sampled_rows: rows whose parent is
    animated (not simulated) and was sampled every frame into sampled_mats (frames 2.., rows)."""

    def __init__(self, parent_world0, parent_const, parent_body, sampled_rows=(), sampled_mats=()):
        self.parent_world0 = parent_world0
        self.parent_const = parent_const
        self.parent_body = parent_body
        self.sampled_rows = list(sampled_rows)
        self.sampled_mats = sampled_mats

    def moving(self):
        """(N,) rows whose parent space changes over the frames."""
        moving = (self.parent_body >= 0).copy()
        for r in self.sampled_rows:
            moving[r] = True
        return moving

    def at_first_frame(self):
        return self.parent_world0 @ self.parent_const

    def over_frames(self, pos, rot, K):
        """(F or 1, N, 4, 4) parent spaces over the frames: a simulated parent's from its baked
        pose (rot (F, N, 3, 3), pos (F, N, 3), times its shape matrix), a sampled one's from the
        sampled matrices, others constant."""
        F = pos.shape[0]
        if not ((self.parent_body >= 0).any() or self.sampled_rows):
            return self.at_first_frame()[None]
        PW = np.tile(self.parent_world0[None], (F, 1, 1, 1))
        rows = np.flatnonzero(self.parent_body >= 0)
        if len(rows):
            pr = self.parent_body[rows]
            M = np.tile(np.eye(4), (F, len(rows), 1, 1))
            M[:, :, :3, :3] = rot[:, pr] @ K[pr][None]
            M[:, :, :3, 3] = pos[:, pr]
            PW[:, rows] = M
        if self.sampled_rows:
            srows = np.array(self.sampled_rows)
            mats = np.array(self.sampled_mats[:F - 1])
            PW[1:, srows] = mats
        return PW @ self.parent_const[None]


def delta_rotations(modes, delta_quaternions, delta_eulers):
    """(N, 3, 3) delta rotation matrices: from the delta quaternion in QUATERNION mode, the delta
    Euler angles (in the object's order) in the Euler modes, identity otherwise (Blender ignores
    the delta rotation in AXIS_ANGLE mode)."""
    modes = np.asarray(modes)
    D = np.tile(np.eye(3), (len(modes), 1, 1))
    quat_m = modes == "QUATERNION"
    if quat_m.any():
        D[quat_m] = quat.to_matrix_normalized(np.asarray(delta_quaternions, dtype=np.float64)[quat_m])
    for order in transforms.EULER_ORDERS:
        m = modes == order
        if m.any():
            D[m] = transforms.euler_to_matrix(np.asarray(delta_eulers, dtype=np.float64)[m], order)
    return D


def channel_values(pos, qw, K, dloc, total_scale, modes, D, parents, start_rot):
    """Per object (location (F, 3), rotation (F, 3|4) in its rotation mode).

    Rotation channel R = D^T P^-1 R_world K diag(1/s) (D delta rotation, P parent space,
    K shape matrix, s total scale). For the usual object (fixed parent space without shear) the
    constant factors are rotations up to a scalar, so R is computed as a quaternion product,
    with no (F, N, 3, 3) matrices; other objects take the general matrix path.

    start_rot: per object (mode, euler (3,), quaternion (4,), axis_angle (4,)) at the first
    frame, so the keyed channels continue from the object's own values (no flips or wraps)."""
    F, nd = pos.shape[0], pos.shape[1]
    modes = np.asarray(modes)
    P0 = parents.at_first_frame()            # (N, 4, 4) at the first frame
    moving = parents.moving()
    Pinv0 = np.linalg.inv(P0)
    L = np.swapaxes(D, 1, 2) @ Pinv0[:, :3, :3]
    ok, qL, qX = transforms.rigid_factors(L, K / total_scale[:, None, :])
    fast = ok & ~moving
    q = np.empty((F, nd, 4))
    loc = np.empty((F, nd, 3))
    f = np.flatnonzero(fast)
    if len(f):
        q[:, f] = quat.multiply(quat.multiply(qL[f], qw[:, f]), qX[f])
        loc[:, f] = np.einsum("nij,fnj->fni", Pinv0[f, :3, :3], pos[:, f]) + Pinv0[f, :3, 3]
    g = np.flatnonzero(~fast)
    if len(g):
        rot = quat.to_matrix_normalized(qw)
        P = parents.over_frames(pos, rot, K)
        B3, Bt = transforms.world_to_basis(rot[:, g], pos[:, g], K[g], P[:, g])
        q[:, g], _ = transforms.basis_rotation(B3, total_scale[g], D[g])
        loc[:, g] = Bt
    loc -= dloc[None]
    rot_vals = rotation_channels(q, modes, start_rot)
    return [(loc[:, j], rot_vals[j]) for j in range(nd)]


def rotation_channels(q, modes, start_rot):
    """Per object, its rotation channel values (F, 3|4) from quaternions q (F, N, 4) in its
    rotation mode, continuous from its start values: quaternion signs kept continuous, axis-angle
    near the start axis, Euler angles by the compatible (nearest) solution frame to frame."""
    nd = q.shape[1]
    rot_vals = [None] * nd
    start = start_rot
    quat_m = modes == "QUATERNION"
    if quat_m.any():
        idx = np.flatnonzero(quat_m)
        ref = np.array([start[i][2] for i in idx])
        qc = transforms.quaternions_continuous(q[:, idx], ref)
        for k, i in enumerate(idx):
            rot_vals[i] = qc[:, k]
    aa_m = modes == "AXIS_ANGLE"
    if aa_m.any():
        idx = np.flatnonzero(aa_m)
        aa0 = np.array([start[i][3] for i in idx])
        half = 0.5 * aa0[:, 0]
        ax = aa0[:, 1:] / np.maximum(np.linalg.norm(aa0[:, 1:], axis=1, keepdims=True), 1e-12)
        ref = np.concatenate((np.cos(half)[:, None], np.sin(half)[:, None] * ax), axis=1)
        qc = transforms.quaternions_continuous(q[:, idx], ref)
        aa = transforms.quaternions_to_axis_angle(qc, ax)
        for k, i in enumerate(idx):
            rot_vals[i] = aa[:, k]
    for order in transforms.EULER_ORDERS:
        m = modes == order
        if m.any():
            idx = np.flatnonzero(m)
            e = transforms.matrices_to_euler_continuous(
                quat.to_matrix_normalized(q[:, idx]), order,
                np.array([start[i][1] for i in idx]))
            for k, i in enumerate(idx):
                rot_vals[i] = e[:, k]
    return rot_vals
