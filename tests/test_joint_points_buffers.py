"""engine.joint_points' preallocated-buffer arithmetic (prepare's scratch, pooled over the
collision passes): its helpers give the reference helpers' numbers bit for bit (joint_math's
adjugate inverse, quat.rotate's arithmetic), and two worlds of the same size sharing the pooled
scratch step exactly as each does alone."""
import numpy as np

from engine import Sphere, World, joint_points, quat
from engine.joint_math import inv3_soa


def test_buffered_inverse_equals_joint_math_bit_for_bit():
    rng = np.random.default_rng(7)
    m = 300
    a = rng.normal(size=(3, 3, m))
    k = np.einsum("ijm,kjm->ikm", a, a)           # symmetric positive definite blocks
    k[:, :, :5] = 0.0                              # singular blocks: zero inverse, no NaN
    k[:, :, 5] = 1.0                               # rank one: zero determinant
    out = np.empty((3, 3, m))
    got = joint_points._inv3_soa(k, out, joint_points._Scratch(m))
    assert got is out
    want = inv3_soa(k)
    np.testing.assert_array_equal(got, want)
    assert not got[:, :, :6].any()
    # and it is the inverse where one exists (independent truth: numpy's LU inverse)
    np.testing.assert_allclose(np.einsum("ijm,jkm->ikm", k[:, :, 6:], got[:, :, 6:]),
                               np.broadcast_to(np.eye(3)[:, :, None], (3, 3, m - 6)),
                               atol=1e-8)


def test_buffered_rotation_equals_quat_rotate_bit_for_bit():
    rng = np.random.default_rng(8)
    k = 256
    q = quat.normalize(rng.normal(size=(k, 4)))
    v = rng.normal(size=(k, 3))
    sc = joint_points._Scratch(k // 2)
    v0 = np.ascontiguousarray(v.T)
    got = joint_points._rotate0(np.ascontiguousarray(q.T), v0, v0[joint_points._P1],
                                v0[joint_points._P2], sc)
    np.testing.assert_array_equal(got.T, quat.rotate(q, v))
    # independent truth: the rotation matrices
    r = np.stack([quat.to_matrix(qi[None])[0] for qi in q])
    np.testing.assert_allclose(got.T, np.einsum("kij,kj->ki", r, v), atol=1e-12)


def _grid_world(n, spin):
    w = World()
    ij = np.stack(np.meshgrid(np.arange(n), np.arange(n), indexing="ij"), -1).reshape(-1, 2)
    pos = np.zeros((n * n, 3))
    pos[:, :2] = ij * 0.1
    pos[:, 2] = 2.0
    for p in pos:
        w.add_body(Sphere(0.04), position=p, mass=1.0, angular_velocity=(spin, 0.0, 1.0))
    idx = np.arange(n * n).reshape(n, n)
    for a, b in np.concatenate((np.stack((idx[:-1].ravel(), idx[1:].ravel()), 1),
                                np.stack((idx[:, :-1].ravel(), idx[:, 1:].ravel()), 1))):
        w.add_joint("point", int(a), int(b), position=0.5 * (pos[a] + pos[b]))
    w.add_joint("point", 0, None, position=pos[0])
    return w


def test_worlds_sharing_the_scratch_pool_step_as_alone():
    alone = []
    for spin in (0.0, 5.0):
        w = _grid_world(8, spin)
        for _ in range(4):
            w.step(1.0 / 24.0)
        alone.append((w.positions.copy(), w.orientations.copy()))
    w1, w2 = _grid_world(8, 0.0), _grid_world(8, 5.0)   # same joint count: one scratch
    for _ in range(4):
        w1.step(1.0 / 24.0)
        w2.step(1.0 / 24.0)
    for w, (p, q) in zip((w1, w2), alone):
        np.testing.assert_array_equal(w.positions, p)
        np.testing.assert_array_equal(w.orientations, q)


def test_scratch_is_pooled_by_size_and_never_shared_between_threads():
    import threading
    here = joint_points._scratch(37)
    assert joint_points._scratch(37) is here            # reused over the passes
    assert joint_points._scratch(38) is not here
    other = []
    t = threading.Thread(target=lambda: other.append(joint_points._scratch(37)))
    t.start()
    t.join()
    assert other[0] is not here
