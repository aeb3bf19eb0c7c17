"""engine.dynamics.joint_points' kernels (engine.dynamics.joint_point_kernels) against independent truth: the
rows' Jacobian by finite differences of the joint's A-frame separation, K = G M^-1 G^T and its
inverse by numpy, a lone joint made rigid by one relax sweep with momentum conserved,
Gauss-Seidel converging on a grid with loops, the warm start keeping a steady load and
dropping an impact, breaking, and worlds stepped in two threads at once as each alone."""
import threading

import numpy as np

from engine import Sphere, World
from engine.core import quat
from engine.dynamics.joint_points import PointLocks

H = 1.0 / 360.0
SOFT = (30.0, 0.8, 0.1)     # bias rate, mass scale, impulse scale


def _bodies(rng, n):
    """Poses, masses and anisotropic inertias of n bodies (the last one static)."""
    x = rng.normal(size=(n, 3))
    q = quat.normalize(rng.normal(size=(n, 4)))
    inv_mass = rng.uniform(0.5, 2.0, n)
    inv_body = np.zeros((n, 3, 3))
    for i in range(n):
        inv_body[i] = np.diag(rng.uniform(0.5, 5.0, 3))
    inv_mass[-1] = 0.0
    inv_body[-1] = 0.0
    rot = quat.to_matrix(q)
    inv_world = np.einsum("nij,njk,nlk->nil", rot, inv_body, rot)
    return x, q, inv_mass, inv_body, inv_world


def _locks(rng, pairs, world, x, q, inv_mass, inv_body, inv_world, lam0=None,
           break_force=None, max_push=np.inf):
    m = len(pairs)
    a, b = np.array(pairs).T
    anchor_a = rng.normal(scale=0.3, size=(m, 3))
    anchor_b = rng.normal(scale=0.3, size=(m, 3))
    frame_a = quat.normalize(rng.normal(size=(m, 4)))
    lam0 = np.zeros((m, 3)) if lam0 is None else lam0
    bf = np.full(m, np.inf) if break_force is None else break_force
    # inv_world is stale on purpose: the anisotropic ends are retaken at prepare
    pts = PointLocks(a, b, world, anchor_a, anchor_b, frame_a, lam0, inv_mass,
                     np.zeros_like(inv_world), H, SOFT, bf, inv_body=inv_body,
                     max_push=max_push)
    return pts, a, b, anchor_a, anchor_b


def _separation(x, q, a, b, world, anchor_a, anchor_b):
    """Per joint: frame A's rotation (m, 3, 3) and d = p_b - p_a (m, 3) (world)."""
    qa = np.where(world[:, None], [1.0, 0.0, 0.0, 0.0], q[a])
    xa = np.where(world[:, None], 0.0, x[a])
    ra = np.einsum("mij,mj->mi", quat.to_matrix(qa), anchor_a)
    rb = np.einsum("mij,mj->mi", quat.to_matrix(q[b]), anchor_b)
    return quat.to_matrix(qa), x[b] + rb - xa - ra


def _jacobian_fd(x, q, a, b, world, anchor_a, anchor_b, eps=1e-6):
    """G (m, 3, 12) from d/dt of the A-frame separation: G v = R_A d/dt(R_A^T d), one
    velocity component of one joint's bodies at a time (central differences)."""
    m = len(a)
    g = np.zeros((m, 3, 12))
    ra, _ = _separation(x, q, a, b, world, anchor_a, anchor_b)
    for j in range(m):
        for c in range(12):
            side, comp = divmod(c, 6)
            if side == 0 and world[j]:
                continue
            body = (a, b)[side][j]
            cs = []
            for sgn in (1.0, -1.0):
                xx, qq = x.copy(), q.copy()
                if comp < 3:
                    xx[body, comp] += sgn * eps
                else:
                    axis = np.zeros(3)
                    axis[comp - 3] = sgn
                    dq = np.concatenate(([np.cos(eps / 2)], np.sin(eps / 2) * axis))
                    qq[body] = quat.multiply(dq, q[body])
                fa, d = _separation(xx, qq, a[j:j + 1], b[j:j + 1], world[j:j + 1],
                                    anchor_a[j:j + 1], anchor_b[j:j + 1])
                cs.append(fa[0].T @ d[0])
            g[j, :, c] = ra[j] @ ((cs[0] - cs[1]) / (2 * eps))
    return g


def _inv_mass_matrix(j, a, b, world, inv_mass, inv_world):
    minv = np.zeros((12, 12))
    if not world[j]:
        minv[:3, :3] = inv_mass[a[j]] * np.eye(3)
        minv[3:6, 3:6] = inv_world[a[j]]
    minv[6:9, 6:9] = inv_mass[b[j]] * np.eye(3)
    minv[9:, 9:] = inv_world[b[j]]
    return minv


def test_geometry_is_the_inverse_of_g_m_g_and_the_clamped_error():
    rng = np.random.default_rng(11)
    x, q, inv_mass, inv_body, inv_world = _bodies(rng, 6)
    pairs = [(0, 1), (1, 2), (2, 3), (3, 0), (4, 5), (1, 4), (2, 2)]
    world = np.array([False] * 6 + [True])
    pts, a, b, anc_a, anc_b = _locks(rng, pairs, world, x, q, inv_mass, inv_body, inv_world,
                                     max_push=0.5)
    pts.prepare(x, q)
    g = _jacobian_fd(x, q, a, b, world, anc_a, anc_b)
    _, d = _separation(x, q, a, b, world, anc_a, anc_b)
    reach = 0.5 / SOFT[0]
    assert (np.linalg.norm(d, axis=1) > reach).any()     # some errors are clamped
    for j in range(len(a)):
        k = g[j] @ _inv_mass_matrix(j, a, b, world, inv_mass, inv_world) @ g[j].T
        np.testing.assert_allclose(pts.kinv[j], np.linalg.inv(k), rtol=2e-6,
                                   atol=2e-6 * np.abs(np.linalg.inv(k)).max())
        dj = d[j] * min(1.0, reach / np.linalg.norm(d[j]))
        np.testing.assert_allclose(pts.err[j], SOFT[1] * SOFT[0] * np.linalg.inv(k) @ dj,
                                   rtol=2e-6, atol=1e-9)


def _gv(pts, vel, g, a, b, world):
    v = np.concatenate((np.where(world[:, None], 0.0, vel[a]), vel[b]), axis=1)
    return np.einsum("mrc,mc->mr", g, v)


def test_one_relax_sweep_makes_lone_joints_rigid_and_keeps_momentum():
    rng = np.random.default_rng(12)
    x, q, inv_mass, inv_body, inv_world = _bodies(rng, 5)
    inv_mass[-1], inv_world[-1] = 1.3, inv_world[0]       # all dynamic here
    inv_body[-1] = inv_body[0]
    pairs = [(0, 1), (2, 3), (4, 4)]                      # disjoint; the last to the world
    world = np.array([False, False, True])
    pts, a, b, anc_a, anc_b = _locks(rng, pairs, world, x, q, inv_mass, inv_body, inv_world)
    pts.prepare(x, q)
    vel = rng.normal(size=(5, 6))
    before = vel.copy()
    pts.solve(vel, False)
    g = _jacobian_fd(x, q, a, b, world, anc_a, anc_b)
    np.testing.assert_allclose(_gv(pts, vel, g, a, b, world), 0.0, atol=1e-7)
    mass = 1.0 / inv_mass
    for j in range(2):     # the pair's linear momentum is conserved, B got the impulse
        p0 = mass[a[j]] * before[a[j], :3] + mass[b[j]] * before[b[j], :3]
        p1 = mass[a[j]] * vel[a[j], :3] + mass[b[j]] * vel[b[j], :3]
        np.testing.assert_allclose(p1, p0, atol=1e-12)
    np.testing.assert_allclose(mass[b][:, None] * (vel[b, :3] - before[b, :3]), pts.imp,
                               atol=1e-12)
    # a projection in the mass metric: kinetic energy never rises
    inertia = np.linalg.inv(inv_world)
    ke = [0.5 * (mass[:, None] * v[:, :3] ** 2).sum()
          + 0.5 * np.einsum("ni,nij,nj->", v[:, 3:], inertia, v[:, 3:]) for v in (before, vel)]
    assert ke[1] <= ke[0]


def test_gauss_seidel_converges_on_a_grid_with_loops():
    rng = np.random.default_rng(13)
    n = 4
    x, q, inv_mass, inv_body, inv_world = _bodies(rng, n * n + 1)
    idx = np.arange(n * n).reshape(n, n)
    pairs = [tuple(p) for p in np.concatenate((
        np.stack((idx[:-1].ravel(), idx[1:].ravel()), 1),
        np.stack((idx[:, :-1].ravel(), idx[:, 1:].ravel()), 1),
        [[n * n, 0]]))]                                     # and to the static body
    world = np.zeros(len(pairs), dtype=bool)
    pts, a, b, anc_a, anc_b = _locks(rng, pairs, world, x, q, inv_mass, inv_body, inv_world)
    pts.prepare(x, q)
    vel = rng.normal(size=(n * n + 1, 6))
    vel[-1] = 0.0
    g = _jacobian_fd(x, q, a, b, world, anc_a, anc_b)
    start = np.abs(_gv(pts, vel, g, a, b, world)).max()
    for _ in range(3000):
        pts.solve(vel, False)
    assert np.abs(_gv(pts, vel, g, a, b, world)).max() < 1e-6 * start
    assert not vel[-1].any()                                # the static body never moves


def test_warm_start_keeps_a_steady_load_and_drops_an_impact():
    """A pendulum bob at the end of a world joint: a carried impulse that cancels the drift
    since the last substep (v0 = -dv) is applied whole; one applied to a bob at rest
    (an impact that stopped a motion gone now) would start it moving: dropped."""
    rng = np.random.default_rng(14)
    x, q, inv_mass, inv_body, inv_world = _bodies(rng, 2)
    world = np.array([True])
    lam0 = np.array([[0.3, -0.2, 0.5]])
    for steady in (True, False):
        pts, a, b, anc_a, anc_b = _locks(np.random.default_rng(1), [(0, 0)], world, x, q,
                                         inv_mass, inv_body, inv_world, lam0=lam0)
        pts.prepare(x, q)
        pts.loaded = True                      # world impulse: lam0 as it is
        pts.imp = lam0.copy()
        g = _jacobian_fd(x, q, a, b, world, anc_a, anc_b)[0]
        dv = (_inv_mass_matrix(0, a, b, world, inv_mass, inv_world) @ g.T @ lam0[0])[6:]
        vel = np.zeros((2, 6))
        if steady:
            vel[0] = -dv
        pts.warm_start(vel)
        if steady:
            np.testing.assert_allclose(vel, 0.0, atol=1e-8)
            np.testing.assert_array_equal(pts.imp, lam0)
        else:
            assert not vel.any() and not pts.imp.any()


def test_a_joint_breaks_past_its_force_and_then_holds_nothing():
    rng = np.random.default_rng(15)
    x, q, inv_mass, inv_body, inv_world = _bodies(rng, 4)
    pts, a, b, _, _ = _locks(rng, [(0, 1), (1, 2)], np.zeros(2, dtype=bool), x, q, inv_mass,
                             inv_body, inv_world, break_force=np.array([1.0, 1e9]))
    pts.prepare(x, q)
    pts.loaded = True
    pts.imp = np.array([[0.0, 0.0, 2.0 * H], [0.0, 0.0, 2.0 * H]])   # 2 N each
    pts.end_substep()
    assert pts.broken.tolist() == [True, False]
    assert not pts.imp[0].any() and pts.imp[1, 2] == 2.0 * H
    vel = rng.normal(size=(4, 6))
    vel[1:] = 0.0
    pts.prepare(x, q)
    pts.solve(vel, True)
    assert not pts.imp[0].any()                 # the broken joint takes no impulse


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


def test_worlds_stepped_in_two_threads_step_as_alone():
    """The kernels keep no state between calls: two worlds of the same size stepped at the
    same time in two threads give each one's numbers alone, bit for bit."""
    alone = []
    for spin in (0.0, 5.0):
        w = _grid_world(8, spin)
        for _ in range(4):
            w.step(1.0 / 24.0)
        alone.append((w.positions.copy(), w.orientations.copy()))
    worlds = [_grid_world(8, 0.0), _grid_world(8, 5.0)]

    def run(w):
        for _ in range(4):
            w.step(1.0 / 24.0)
    threads = [threading.Thread(target=run, args=(w,)) for w in worlds]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for w, (p, q) in zip(worlds, alone):
        np.testing.assert_array_equal(w.positions, p)
        np.testing.assert_array_equal(w.orientations, q)
