"""Transform maths between Blender objects and engine bodies, batched with numpy.

No bpy here: the functions take plain arrays, so they are exact, fast on thousands of objects
and testable against mathutils. Conventions follow Blender:

- matrices act on column vectors (world = M @ local), stored (..., 4, 4) or (..., 3, 3);
- Euler order "XYZ" means X is applied first: R = Rz @ Ry @ Rx; the angles are stored per
  axis (euler.x is always the angle about X), whatever the order;
- an object's world matrix is ``P @ B`` with P its parent space (parent world matrix times
  matrix_parent_inverse, identity without a parent) and B its basis matrix
  ``T(location + delta_location) @ (D @ R) @ S(scale * delta_scale)``, D the delta rotation.

A body's pose is a rotation and the origin's position; whatever else the 3x3 part of the
world matrix holds (scale, mirroring, shear from a non-uniformly scaled parent) goes into the
shape: ``world 3x3 = R @ K`` with R a proper rotation (polar decomposition) and K the "shape
matrix" applied to the mesh vertices.
"""
import numpy as np

from ..engine.core import quat

EULER_ORDERS = ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")
_AXIS = {"X": 0, "Y": 1, "Z": 2}
TWO_PI = 2.0 * np.pi


def polar_decompose(linear):
    """Split (N, 3, 3) matrices into proper rotations R and shape matrices K with L = R @ K.

    Without shear (orthogonal columns: any rotation and signed axis scale) K is diagonal:
    R is L with unit columns, all three negated when det(L) < 0, as Blender's own
    decomposition does, so a mirrored object keeps an axis-aligned, mirrored shape.
    A sheared L (child of a non-uniformly scaled, rotated parent) falls back to the polar
    decomposition (the rotation nearest to L, from the SVD), K then symmetric.
    """
    L = np.asarray(linear, dtype=np.float64)
    norms = np.linalg.norm(L, axis=-2)
    R = L / np.where(norms > 0, norms, 1.0)[..., None, :]
    neg = np.linalg.det(L) < 0
    R = np.where(neg[..., None, None], -R, R)
    sheared = np.abs(np.swapaxes(R, -1, -2) @ R - np.eye(3)).max(axis=(-1, -2)) > 1e-6
    if sheared.any():
        U, _, Vt = np.linalg.svd(L[sheared])
        Rs = U @ Vt
        flip = np.linalg.det(Rs) < 0
        U[flip, :, 2] *= -1.0
        R[sheared] = U @ Vt
    K = np.swapaxes(R, -1, -2) @ L
    # A diagonal K is the world scale, which artists type (1, 0.5, 2.37...) but which reaches
    # us through float32 matrices, possibly rebuilt from float32 keys: rounding to 6
    # significant digits makes the shape the same at every frame, so a re-bake from a later
    # frame rebuilds exactly the same shapes.
    diag = ~sheared
    if diag.any():
        d = np.diagonal(K[diag], axis1=-2, axis2=-1)
        K[diag] = np.einsum("ni,ij->nij", _round_significant(d, 6), np.eye(3))
    return R, K


def _round_significant(x, digits):
    x = np.asarray(x, dtype=np.float64)
    mag = np.floor(np.log10(np.where(x != 0, np.abs(x), 1.0)))
    scale = 10.0 ** (digits - 1 - mag)
    return np.round(x * scale) / scale


def shear_amount(K):
    """How far each shape matrix is from a pure (signed) axis scale, relative to its size."""
    K = np.asarray(K, dtype=np.float64)
    off = K - K * np.eye(3)
    size = np.abs(K).max(axis=(-1, -2))
    return np.abs(off).max(axis=(-1, -2)) / np.where(size > 0, size, 1.0)


def axis_matrix(axis, angle):
    """Rotation matrices (..., 3, 3) about a coordinate axis (0, 1, 2) by angles (...)."""
    angle = np.asarray(angle, dtype=np.float64)
    c, s = np.cos(angle), np.sin(angle)
    m = np.zeros(angle.shape + (3, 3))
    i, j = [(1, 2), (2, 0), (0, 1)][axis]
    m[..., axis, axis] = 1.0
    m[..., i, i] = c
    m[..., j, j] = c
    m[..., j, i] = s
    m[..., i, j] = -s
    return m


def euler_to_matrix(euler, order):
    """Rotation matrices of Euler angles (..., 3) in a Blender rotation order ("XYZ", ...)."""
    e = np.asarray(euler, dtype=np.float64)
    a, b, c = (_AXIS[ch] for ch in order)
    return axis_matrix(c, e[..., c]) @ axis_matrix(b, e[..., b]) @ axis_matrix(a, e[..., a])


def _order_permutation(order):
    """Permutation matrix P sending the order's axes to X, Y, Z, and whether it is odd."""
    idx = [_AXIS[ch] for ch in order]
    P = np.zeros((3, 3))
    P[np.arange(3), idx] = 1.0
    return P, np.linalg.det(P) < 0


def matrix_to_euler_pair(m, order):
    """Both Euler solutions (..., 3) of rotation matrices (..., 3, 3) for a rotation order.

    The order is reduced to XYZ by permuting axes (an odd permutation mirrors the frame and
    so negates the angles); the XYZ case is R = Rz(c) Ry(b) Rx(a). At gimbal lock the two
    solutions coincide and c is taken as 0.
    """
    P, odd = _order_permutation(order)
    idx = [_AXIS[ch] for ch in order]
    M = np.asarray(m, dtype=np.float64)[..., idx, :][..., :, idx]  # = P @ m @ P.T
    cy = np.hypot(M[..., 0, 0], M[..., 1, 0])
    ok = cy > 1e-7
    a1 = np.where(ok, np.arctan2(M[..., 2, 1], M[..., 2, 2]), np.arctan2(-M[..., 1, 2], M[..., 1, 1]))
    b1 = np.arctan2(-M[..., 2, 0], cy)
    c1 = np.where(ok, np.arctan2(M[..., 1, 0], M[..., 0, 0]), 0.0)
    a2 = np.where(ok, np.arctan2(-M[..., 2, 1], -M[..., 2, 2]), a1)
    b2 = np.where(ok, np.arctan2(-M[..., 2, 0], -cy), b1)
    c2 = np.where(ok, np.arctan2(-M[..., 1, 0], -M[..., 0, 0]), c1)
    sign = -1.0 if odd else 1.0
    out = []
    for a, b, c in ((a1, b1, c1), (a2, b2, c2)):
        e = np.empty(M.shape[:-2] + (3,))
        e[..., _AXIS[order[0]]] = sign * a
        e[..., _AXIS[order[1]]] = sign * b
        e[..., _AXIS[order[2]]] = sign * c
        out.append(e)
    return out


def _wrap_near(e, ref):
    """Shift each angle by a multiple of 2 pi to be as close as possible to ref."""
    return e + TWO_PI * np.round((ref - e) / TWO_PI)


def matrices_to_euler_continuous(m, order, start):
    """Euler angles (F, N, 3) for rotation matrices (F, N, 3, 3), continuous over frames.

    Each frame picks, of the two Euler solutions wrapped by whole turns, the one nearest the
    previous frame's angles (``start`` (N, 3) for the first frame), so curves never jump by
    2 pi or flip between equivalent solutions: the same idea as Blender's compatible Euler.
    The loop runs over frames (a sequential dependency); each iteration is batched.
    """
    e1, e2 = matrix_to_euler_pair(m, order)
    out = np.empty_like(e1)
    prev = np.asarray(start, dtype=np.float64)
    for f in range(e1.shape[0]):
        a = _wrap_near(e1[f], prev)
        b = _wrap_near(e2[f], prev)
        pick_b = np.abs(b - prev).sum(axis=-1) < np.abs(a - prev).sum(axis=-1)
        prev = np.where(pick_b[:, None], b, a)
        out[f] = prev
    return out


def quaternions_continuous(q, start):
    """Flip signs of quaternions (F, N, 4) so consecutive frames have a non-negative dot
    product, the first frame agreeing with ``start`` (N, 4): no 360-degree spins when the
    curves are interpolated."""
    q = np.asarray(q, dtype=np.float64)
    prev = np.concatenate((np.asarray(start, dtype=np.float64)[None], q[:-1]), axis=0)
    step = np.where(np.einsum("fni,fni->fn", q, prev) < 0, -1.0, 1.0)
    # The sign of frame f relative to its raw value is the product of the step flips so far,
    # because each comparison above was made against the raw (unflipped) previous frame.
    return q * np.cumprod(step, axis=0)[..., None]


def quaternions_to_axis_angle(q, start_axis):
    """(angle, x, y, z) (F, N, 4) from sign-continuous quaternions; the axis is undefined at
    zero angle, so it holds the previous frame's axis there (``start_axis`` (N, 3) first)."""
    q = np.asarray(q, dtype=np.float64)
    s = np.linalg.norm(q[..., 1:], axis=-1)
    angle = 2.0 * np.arctan2(s, q[..., 0])
    valid = s > 1e-9
    axis = q[..., 1:] / np.where(valid, s, 1.0)[..., None]
    # Forward-fill invalid axes from the last valid frame (or the start axis).
    F = q.shape[0]
    frame_idx = np.where(valid, np.arange(F)[:, None], -1)
    last = np.maximum.accumulate(frame_idx, axis=0)
    n_idx = np.broadcast_to(np.arange(q.shape[1]), last.shape)
    filled = np.where((last >= 0)[..., None], axis[np.maximum(last, 0), n_idx],
                      np.asarray(start_axis, dtype=np.float64)[None])
    return np.concatenate((angle[..., None], filled), axis=-1)


def axis_angle_to_matrix(aa):
    """Rotation matrices of Blender axis-angle values (..., 4) = (angle, x, y, z)."""
    aa = np.asarray(aa, dtype=np.float64)
    axis = aa[..., 1:]
    n = np.linalg.norm(axis, axis=-1, keepdims=True)
    axis = np.where(n > 0, axis / np.where(n > 0, n, 1.0), np.array([0.0, 1.0, 0.0]))
    half = 0.5 * aa[..., :1]
    return quat.to_matrix_normalized(
        np.concatenate((np.cos(half), np.sin(half) * axis), axis=-1))


def rotation_matrix(mode, euler, quaternion, axis_angle):
    """Rotation matrices (N, 3, 3) of objects' rotation channels, each in its own mode."""
    mode = np.asarray(mode)
    out = np.empty((len(mode), 3, 3))
    q = mode == "QUATERNION"
    out[q] = quat.to_matrix_normalized(np.asarray(quaternion)[q])
    a = mode == "AXIS_ANGLE"
    out[a] = axis_angle_to_matrix(np.asarray(axis_angle)[a])
    for order in EULER_ORDERS:
        e = mode == order
        out[e] = euler_to_matrix(np.asarray(euler)[e], order)
    return out


def world_to_basis(world_rot, world_pos, shape_matrix, parent_space):
    """Basis matrices' linear parts (F, N, 3, 3) and translations (F, N, 3) of bodies whose
    world pose is (world_rot (F, N, 3, 3), world_pos (F, N, 3)): world matrix
    [R @ K | p] expressed in the parent space (F or 1, N, 4, 4)."""
    lin = world_rot @ shape_matrix[None]
    P = np.asarray(parent_space, dtype=np.float64)
    Pinv = np.linalg.inv(P)
    B3 = Pinv[..., :3, :3] @ lin
    Bt = np.einsum("fnij,fnj->fni", Pinv[..., :3, :3], world_pos) + Pinv[..., :3, 3]
    return B3, Bt


def rigid_factors(L, X, tol=1e-6):
    """For constant per-object matrices L (N, 3, 3) and X (N, 3, 3), whether L = a Lr and
    X = Xr / a with Lr, Xr proper rotations and a > 0 (then L @ R @ X = Lr @ R @ Xr is a
    rotation for every rotation R, and the product can be done on quaternions). Returns
    (ok (N,), qL (N, 4), qX (N, 4))."""
    L = np.asarray(L, dtype=np.float64)
    X = np.asarray(X, dtype=np.float64)
    det = np.linalg.det(L)
    a = np.cbrt(np.where(det > 0, det, 1.0))
    Lr = L / a[:, None, None]
    Xr = X * a[:, None, None]
    eye = np.eye(3)

    def is_rotation(m):
        return (np.abs(np.swapaxes(m, -1, -2) @ m - eye).max(axis=(-1, -2)) < tol) & \
            (np.linalg.det(m) > 0)

    ok = (det > 0) & is_rotation(Lr) & is_rotation(Xr)
    safe = np.where(ok[:, None, None], 1.0, 0.0) * Lr + np.where(ok[:, None, None], 0.0, 1.0) * eye
    safe_x = np.where(ok[:, None, None], Xr, eye)
    return ok, quat.from_matrix(safe), quat.from_matrix(safe_x)


def basis_rotation(B3, total_scale, delta_rot):
    """The rotation channel's matrix from basis linear parts (F, N, 3, 3), given the
    objects' scale * delta_scale (N, 3) (kept as is: scale is never keyed) and their delta
    rotation matrices (N, 3, 3): B3 = D @ R @ diag(s)  ->  R = D^T @ B3 @ diag(1/s), then
    re-orthonormalised (exact unless a non-uniformly scaled parent shears the child)."""
    R = B3 / np.asarray(total_scale, dtype=np.float64)[None, :, None, :]
    R = np.swapaxes(np.asarray(delta_rot), -1, -2)[None] @ R
    q = quat.from_matrix(R)
    return q, quat.to_matrix_normalized(q)


def may_move(obj):
    """Whether a Blender object's pose (or its animated settings) may change over the frames:
    it or a parent has animation data or constraints. Duck-typed, so this module stays free of
    bpy."""
    o = obj
    while o is not None:
        if o.animation_data is not None or len(o.constraints):
            return True
        o = o.parent
    return False
