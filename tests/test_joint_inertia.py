"""Joint rows of bodies whose tensors turn within a collision pass (engine.dynamics.joint_inertia;
issue 11)."""
import numpy as np

from engine.core import quat
from engine.dynamics.joint_inertia import CurrentInertia, isotropic


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
