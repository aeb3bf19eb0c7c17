"""Time of impact by conservative advancement, against analytic and brute-force truth."""
import numpy as np
import pytest
from oracle import (
    box_points,
    minkowski_difference,
    pad_points,
    random_hull_points,
    signed_distance_local,
)
from scipy.spatial import ConvexHull

from engine.collision.gjk import gjk
from engine.collision.toi import HIT, OVERLAPPED, SEPARATED, toi
from engine.core import quat

Q0 = np.array([1.0, 0.0, 0.0, 0.0])
Z3 = np.zeros(3)
DT = 1.0 / 24.0


def test_fast_sphere_hits_thin_wall():
    # 0.1 m sphere at 200 m/s (8.3 m per step) towards a 5 cm thick wall 5 m away.
    wall = box_points([0.025, 2.0, 2.0])
    slop = 0.005
    res = toi(wall[None], 0.0, [[5.025, 0, 0]], Q0, Z3, Z3,
              np.zeros((1, 1, 3)), 0.1, [[0.0, 0.3, -0.2]], Q0, [[200.0, 0, 0]], Z3, DT, target=slop)
    t_true = (5.0 - 0.1 - slop) / 200.0 / DT  # first time the gap equals the target
    assert res.status[0] == HIT
    assert t_true - 0.25 * slop / 200.0 / DT <= res.t[0] <= t_true + 1e-12
    assert slop - 1e-9 <= res.distance[0] <= 1.25 * slop + 1e-9
    assert np.allclose(res.normal[0], [-1.0, 0, 0])  # A (wall) -> B (sphere, on the -x side)
    # The same sphere after passing the wall's far side would have tunnelled with discrete steps:
    # at the end of the step it is 3.3 m beyond the wall, not touching it at all.
    end = gjk(wall[None], 0.0, [[5.025, 0, 0]], np.eye(3), np.zeros((1, 1, 3)), 0.1,
              [[200.0 * DT, 0.3, -0.2]], np.eye(3))
    assert end.distance[0] > 3.0


def test_thin_boxes_passing_at_50_mps():
    plate = box_points([0.005, 0.5, 0.5])  # 1 cm thick plates, approaching face to face
    res = toi(plate[None], 0.0, [[0, 0, 0]], Q0, [[50.0, 0, 0]], Z3,
              plate[None], 0.0, [[2.0, 0.2, 0.1]], Q0, [[-50.0, 0, 0]], Z3, DT, target=0.001)
    t_true = (2.0 - 0.01 - 0.001) / 100.0 / DT
    assert res.status[0] == HIT
    assert res.t[0] == pytest.approx(t_true, abs=0.25 * 0.001 / 100.0 / DT)
    assert res.t[0] <= t_true + 1e-12
    # Edge-on plates crossing at right angles, passing each other along the other axis.
    rz = quat.from_axis_angle([0, 0, 1.0], np.pi / 2)
    res = toi(plate[None], 0.0, [[0, 0, 0]], Q0, [[0, 50.0, 0]], Z3,
              plate[None], 0.0, [[0, 2.0, 0.3]], rz, [[0, -50.0, 0]], Z3, DT, target=0.0)
    # Crossed plates: B's thin side reaches A's big face ... the first contact is at gap 0.
    t_true = (2.0 - 0.5 - 0.005) / 100.0 / DT
    assert res.status[0] == HIT and res.t[0] <= t_true + 1e-12
    assert res.t[0] == pytest.approx(t_true, abs=1e-5)


def _ray_toi(D, u):
    """First s in [0, 1] with -s*u inside conv(D) (exact clipping against the hull facets)."""
    eq = ConvexHull(D).equations
    n, off = eq[:, :3], eq[:, 3]
    # Inside: n . (-s u) + off <= 0  <=>  s * (-n . u) <= -off
    a = -(n @ u)
    lo, hi = 0.0, 1.0
    for ai, bi in zip(a, -off):
        if ai > 0:
            hi = min(hi, bi / ai)
        elif ai < 0:
            lo = max(lo, bi / ai)
        elif bi < 0:
            return None
    return lo if lo <= hi else None


def test_translating_hulls_against_exact_ray_cast():
    rng = np.random.default_rng(17)
    m = 400
    sa = [random_hull_points(rng, int(rng.integers(4, 16)), stretch=rng.uniform(0.2, 1.0, 3))
          for _ in range(m)]
    sb = [random_hull_points(rng, int(rng.integers(4, 16)), stretch=rng.uniform(0.2, 1.0, 3))
          for _ in range(m)]
    pa = rng.uniform(-1, 1, (m, 3))
    pb = pa + rng.normal(size=(m, 3)) * 2.0
    qa = quat.normalize(rng.normal(size=(m, 4)))
    qb = quat.normalize(rng.normal(size=(m, 4)))
    va = rng.normal(size=(m, 3)) * 20
    vb = (pa - pb) / DT * rng.uniform(0.2, 1.5, (m, 1)) + rng.normal(size=(m, 3)) * 10
    tol = 1e-4
    res = toi(pad_points(sa), 0.0, pa, qa, va, Z3, pad_points(sb), 0.0, pb, qb, vb, Z3, DT,
              target=0.0, tolerance=tol)
    ra, rb = quat.to_matrix(qa), quat.to_matrix(qb)
    hits = 0
    for i in range(m):
        wa = sa[i] @ ra[i].T + pa[i]
        wb = sb[i] @ rb[i].T + pb[i]
        D = minkowski_difference(wa, wb)
        s0, _, _ = signed_distance_local(wa, Z3, np.eye(3), wb, Z3, np.eye(3))
        if s0 <= tol:
            assert res.status[i] == OVERLAPPED and res.t[i] == 0
            continue
        t_exact = _ray_toi(D, (vb[i] - va[i]) * DT)
        if res.status[i] == SEPARATED:
            assert t_exact is None, i
            assert res.t[i] == 1.0
        else:
            assert res.status[i] == HIT
            hits += 1
            assert -1e-9 <= res.distance[i] <= tol + 1e-9
            if t_exact is not None:
                assert res.t[i] <= t_exact + 1e-9
    assert hits > m // 4 and np.sum(res.status == SEPARATED) > m // 10


def test_spinning_rod_against_analytic_angle():
    # A capsule core of half length 1 spins about y at w rad/s; a sphere waits at x0 on the x axis.
    # Distance from the sphere centre to the rod axis at angle th (from z to x) is x0 |cos th|.
    w, x0, rc, rs, target = 40.0, 0.8, 0.05, 0.1, 0.002  # contact angle 1.38 rad < 1.67 per step
    rod = np.array([[[0, 0, -1.0], [0, 0, 1.0]]])
    res = toi(rod, rc, Z3[None], Q0, Z3, [[0, w, 0]], np.zeros((1, 1, 3)), rs, [[x0, 0, 0]], Q0,
              Z3, Z3, DT, target=target)
    th = np.arccos((rc + rs + target) / x0)
    t_true = th / w / DT
    assert res.status[0] == HIT
    assert res.t[0] <= t_true + 1e-12
    # Within the tolerance band: the gap closes at x0 * w * sin(th) per second near contact.
    assert res.t[0] >= t_true - 0.25 * target / (x0 * w * np.sin(th)) / DT - 1e-9
    assert target - 1e-9 <= res.distance[0] <= 1.25 * target + 1e-9


def test_never_tunnels_with_rotation_dense_sampling():
    """Mixed linear + angular motion: no sampled time before t has distance below target."""
    rng = np.random.default_rng(23)
    m = 150
    sa = [random_hull_points(rng, 10, stretch=rng.uniform(0.1, 1.0, 3)) for _ in range(m)]
    sb = [random_hull_points(rng, 10, stretch=rng.uniform(0.1, 1.0, 3)) for _ in range(m)]
    A, B = pad_points(sa), pad_points(sb)
    pa = np.zeros((m, 3))
    pb = rng.normal(size=(m, 3)) * 1.5
    qa = quat.normalize(rng.normal(size=(m, 4)))
    qb = quat.normalize(rng.normal(size=(m, 4)))
    va, vb = rng.normal(size=(m, 3)) * 10, -pb / DT * rng.uniform(0.3, 1.5, (m, 1))
    wa, wb = rng.normal(size=(m, 3)) * 40, rng.normal(size=(m, 3)) * 40
    target = 0.01
    res = toi(A, 0.05, pa, qa, va, wa, B, 0.0, pb, qb, vb, wb, DT, target=target)
    assert np.sum(res.status == HIT) > m // 5
    ok = res.status != OVERLAPPED
    for s in np.linspace(0.0, 1.0, 60):
        time = np.minimum(s, res.t) * DT  # sample only up to each pair's TOI
        g = gjk(A, 0.05, pa + va * time[:, None],
                quat.to_matrix(quat.multiply(quat.exp_map(wa, time[:, None]), qa)),
                B, 0.0, pb + vb * time[:, None],
                quat.to_matrix(quat.multiply(quat.exp_map(wb, time[:, None]), qb)))
        assert np.all(g.distance[ok] >= target - 1e-9)
    hit = res.status == HIT
    assert np.all(res.distance[hit] <= 1.25 * target + 1e-9)


def test_static_pairs_and_far_from_origin():
    box = box_points(0.5)
    for shift in (Z3, np.array([1e4, 1e4, -1e4])):
        pos_b = np.array([[3.0, 0, 0], [0.9, 0, 0], [1.5, 0, 0]]) + shift
        vel_b = np.array([[0.0, 0, 0], [0, 0, 0], [-24.0, 0, 0]])  # last one moves 1 m: hits
        res = toi(box[None], 0.0, shift[None], Q0, Z3, Z3, box[None], 0.0, pos_b, Q0, vel_b, Z3, DT)
        assert list(res.status) == [SEPARATED, OVERLAPPED, HIT]
        assert res.t[0] == 1.0 and res.t[1] == 0.0
        assert res.t[2] == pytest.approx(0.5, abs=1e-6) and res.t[2] <= 0.5 + 1e-12
        assert np.allclose(res.normal[2], [1.0, 0, 0])
