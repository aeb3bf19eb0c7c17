"""Keyframe channel maths (addon/channels.py, addon/transforms.py) in plain Python: baked world
poses turned into an object's location / rotation channels must rebuild the same world matrix
the way Blender composes it, checked with scipy's rotations as the independent oracle."""
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from hullabaloo.addon import channels, transforms

ORDERS = transforms.EULER_ORDERS


def blender_rotation(mode, value):
    """Rotation matrix (3, 3) of one channel value, as Blender reads it (scipy builds it)."""
    if mode == "QUATERNION":
        w, x, y, z = value
        return Rotation.from_quat([x, y, z, w]).as_matrix()
    if mode == "AXIS_ANGLE":
        angle, axis = value[0], np.asarray(value[1:])
        return Rotation.from_rotvec(angle * axis / np.linalg.norm(axis)).as_matrix()
    return scipy_euler(mode, value).as_matrix()


def scipy_euler(order, xyz):
    """Blender's Euler (x, y, z angles, order 'XZY'...: X applied first, i.e. R = Ry Rz Rx) as
    scipy's extrinsic rotation: scipy takes the angles in the order's sequence."""
    xyz = np.asarray(xyz, dtype=np.float64)
    seq = [{"X": 0, "Y": 1, "Z": 2}[a] for a in order]
    return Rotation.from_euler(order.lower(), xyz[..., seq])


@pytest.mark.parametrize("order", ORDERS)
def test_euler_to_matrix_matches_scipy_and_both_solutions_rebuild_it(order):
    rng = np.random.default_rng(11)
    e = rng.uniform(-np.pi, np.pi, size=(64, 3))
    np.testing.assert_allclose(transforms.euler_to_matrix(e, order),
                               scipy_euler(order, e).as_matrix(), atol=1e-12)
    m = Rotation.random(64, random_state=3).as_matrix()
    for sol in transforms.matrix_to_euler_pair(m, order):
        np.testing.assert_allclose(transforms.euler_to_matrix(sol, order), m, atol=1e-10)


def random_scene(rng, frames, n):
    """World poses over frames of n objects with random scales, delta rotations and locations,
    under one fixed parent space (a rotation and a translation)."""
    pos = rng.normal(size=(frames, n, 3)) * 3.0
    q = Rotation.random(frames * n, random_state=rng.integers(1 << 30)).as_quat()
    qw = np.concatenate((q[:, 3:], q[:, :3]), axis=1).reshape(frames, n, 4)
    scale = rng.uniform(0.3, 2.5, size=(n, 3))
    dscale = rng.uniform(0.8, 1.25, size=(n, 3))
    K = np.einsum("ni,ij->nij", scale * dscale, np.eye(3))   # the body leaves out the scale
    dloc = rng.normal(size=(n, 3))
    P = np.eye(4)
    P[:3, :3] = Rotation.from_rotvec([0.3, -0.2, 0.9]).as_matrix()
    P[:3, 3] = (1.0, -2.0, 0.5)
    parents = channels.ParentSpaces(np.tile(P, (n, 1, 1)), np.tile(np.eye(4), (n, 1, 1)),
                                    np.full(n, -1))
    return pos, qw, K, scale * dscale, dloc, parents, P


@pytest.mark.parametrize("mode", ["QUATERNION", "AXIS_ANGLE", *ORDERS])
def test_channels_rebuild_the_world_matrix_as_blender_composes_it(mode):
    rng = np.random.default_rng(sum(map(ord, mode)))
    F, n = 30, 4
    pos, qw, K, total_scale, dloc, parents, P = random_scene(rng, F, n)
    modes = np.array([mode] * n)
    dq = Rotation.random(n, random_state=5).as_quat()
    delta_quat = np.concatenate((dq[:, 3:], dq[:, :3]), axis=1)
    delta_euler = rng.uniform(-1, 1, size=(n, 3))
    D = channels.delta_rotations(modes, delta_quat, delta_euler)
    if mode == "AXIS_ANGLE":       # Blender ignores the delta rotation in axis-angle mode
        np.testing.assert_array_equal(D, np.tile(np.eye(3), (n, 1, 1)))
    start = [(mode, (0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0), (0.0, 0.0, 1.0, 0.0))] * n
    out = channels.channel_values(pos, qw, K, dloc, total_scale, modes, D, parents, start)
    Rw = Rotation.from_quat(qw.reshape(-1, 4)[:, [1, 2, 3, 0]]).as_matrix().reshape(F, n, 3, 3)
    for j, (loc, rot) in enumerate(out):
        assert loc.shape == (F, 3) and rot.shape == (F, 4 if mode in ("QUATERNION", "AXIS_ANGLE") else 3)
        for f in range(F):
            # Blender: world = P @ T(loc + dloc) @ D @ R(rot) @ S(scale * delta scale).
            basis = np.eye(4)
            basis[:3, :3] = D[j] @ blender_rotation(mode, rot[f]) @ np.diag(total_scale[j])
            basis[:3, 3] = loc[f] + dloc[j]
            world = P @ basis
            np.testing.assert_allclose(world[:3, :3], Rw[f, j] @ K[j], atol=1e-9)
            np.testing.assert_allclose(world[:3, 3], pos[f, j], atol=1e-9)


def test_channels_are_continuous_over_a_tumble():
    """A body spinning steadily through several turns (0.16 rad per frame): Euler channels never
    jump by a wrap or a flip (pi or more; near gimbal lock an angle may legitimately move fast),
    quaternion channels never flip sign, and every frame still rebuilds the rotation."""
    F = 200
    t = np.arange(F) / 24.0
    rot = Rotation.from_rotvec(np.outer(t, [2.0, 3.0, -1.5]))
    q = rot.as_quat()
    qw = np.concatenate((q[:, 3:], q[:, :3]), axis=1)[:, None, :]
    for mode in ("QUATERNION", *ORDERS):
        start = [(mode, (0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0), (0.0, 0.0, 1.0, 0.0))]
        vals = channels.rotation_channels(qw, np.array([mode]), start)[0]
        step = np.abs(np.diff(vals, axis=0)).max()
        assert step < (0.1 if mode == "QUATERNION" else np.pi / 2), (mode, step)
        rebuilt = np.array([blender_rotation(mode, v) for v in vals])
        np.testing.assert_allclose(rebuilt, rot.as_matrix(), atol=1e-9)
