"""A pass's solver inputs in one kernel (engine/world/pass_kernels.py), against their
definitions computed apart: the world inverse inertia as the inverse of R I R^T (numpy's
matrix inverse), gravity's relative acceleration along each normal, Blender's mixed
friction and restitution (products)."""
import numpy as np
from scipy.spatial.transform import Rotation

from engine.world.pass_kernels import solver_inputs


def test_solver_inputs_match_their_definitions():
    rng = np.random.default_rng(7)
    n, m = 9, 14
    rot = Rotation.random(n, random_state=3).as_matrix()
    moments = rng.uniform(0.1, 5.0, size=(n, 3))
    inv_body = (1.0 / moments)[:, :, None] * np.eye(3)
    awake = rng.random(n) < 0.7
    inv_mass = rng.uniform(0.2, 3.0, n)
    friction, restitution = rng.uniform(0, 1, n), rng.uniform(0, 1, n)
    ia, ib = rng.integers(0, n, m), rng.integers(0, n, m)
    normal = rng.normal(size=(m, 3))
    normal /= np.linalg.norm(normal, axis=1)[:, None]
    gravity = np.array([0.3, -0.2, -9.81])
    out_m, out_i = np.full(n, np.nan), np.full((n, 3, 3), np.nan)
    accel, mu, e = np.full(m, np.nan), np.full(m, np.nan), np.full(m, np.nan)
    solver_inputs(ia, ib, normal, awake, inv_mass, inv_body, rot, gravity, friction,
                  restitution, out_m, out_i, accel, mu, e)
    inertia_world = rot @ (moments[:, :, None] * np.eye(3)) @ np.swapaxes(rot, 1, 2)
    np.testing.assert_allclose(out_i[awake], np.linalg.inv(inertia_world[awake]),
                               rtol=1e-12, atol=1e-13)
    assert (out_i[~awake] == 0.0).all() and (out_m[~awake] == 0.0).all()
    np.testing.assert_array_equal(out_m[awake], inv_mass[awake])
    g = awake[:, None] * gravity
    np.testing.assert_allclose(accel, np.einsum("mi,mi->m", g[ib] - g[ia], normal),
                               rtol=1e-14, atol=1e-14)
    np.testing.assert_array_equal(mu, friction[ia] * friction[ib])
    np.testing.assert_array_equal(e, restitution[ia] * restitution[ib])
