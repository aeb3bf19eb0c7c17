"""Joint rows under bad set-ups (issue 11): limits that exclude the start pose, bodies whose
tensors turn within a pass."""
import numpy as np

from engine import Box, World, WorldSettings, quat
from engine.joint_inertia import CurrentInertia, isotropic


def test_a_limit_excluding_the_start_pose_pulls_in_no_faster_than_joint_max_push():
    """A door hinged to the world, made shut with its range at 29-57 degrees: the limit
    corrects the start pose at no more than WorldSettings.joint_max_push (rad/s; it used to
    kick the door to 14 rad/s), and the door ends inside its range."""
    w = World(gravity=(0.0, 0.0, 0.0))
    d = w.add_body(Box((0.5, 0.05, 1.0)), position=(0.5, 0.0, 0.0), mass=20.0)
    w.add_joint("hinge", d, None, position=(0.0, 0.0, 0.0), limits={"ang_z": (0.5, 1.0)})
    peak = 0.0
    for _ in range(48):
        w.step(1.0 / 24.0)
        peak = max(peak, float(np.linalg.norm(w.angular_velocities[d])))
    assert 0.0 < peak <= w.settings.joint_max_push
    assert 0.5 - 1e-3 <= w.joint_coordinates[0, 5] <= 1.0 + 1e-3


def test_a_lower_joint_max_push_pulls_in_slower():
    """The setting is what bounds it: at 1 rad/s the door comes in at most that fast."""
    w = World(WorldSettings(gravity=(0.0, 0.0, 0.0), joint_max_push=1.0))
    d = w.add_body(Box((0.5, 0.05, 1.0)), position=(0.5, 0.0, 0.0), mass=20.0)
    w.add_joint("hinge", d, None, position=(0.0, 0.0, 0.0), limits={"ang_z": (0.5, 1.0)})
    peak = 0.0
    for _ in range(48):
        w.step(1.0 / 24.0)
        peak = max(peak, float(np.linalg.norm(w.angular_velocities[d])))
    assert 0.0 < peak <= 1.0
    assert 0.5 - 1e-3 <= w.joint_coordinates[0, 5] <= 1.0 + 1e-3


def test_current_inertia_is_r_inverse_inertia_r_transposed_now():
    """The anisotropic ends' world tensors are R I^-1 R^T at the orientations given (brute
    force, one by one); isotropic ends and still sides keep the tensors they started with,
    bit for bit."""
    rng = np.random.default_rng(3)
    n = 6
    inv_body = np.zeros((n, 3, 3))
    inv_body[0] = np.diag([1.0, 2.0, 50.0])            # a plate
    inv_body[1] = 4.0 * np.eye(3)                      # a sphere
    inv_body[2] = np.diag([4e8, 2e4, 2e4])             # a needle
    inv_body[3] = 0.0                                  # the world side
    inv_body[4] = np.diag([3.0, 3.0, 3.0])
    inv_body[5] = np.diag([1.0, 1.0, 1.0 + 1e-12])     # nearly a cube: retaken
    assert isotropic(inv_body).tolist() == [False, True, False, True, True, False]
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1)[:, None]
    start = rng.normal(size=(n, 3, 3))
    cur = CurrentInertia(np.arange(n), inv_body, start)
    got = cur.update(q)
    for k in range(n):
        if isotropic(inv_body[k:k + 1])[0]:
            assert np.array_equal(got[k], start[k])
        else:
            r = quat.to_matrix(q[k:k + 1])[0]
            np.testing.assert_allclose(got[k], r @ inv_body[k] @ r.T, rtol=1e-12,
                                       atol=1e-12 * np.abs(inv_body[k]).max())
