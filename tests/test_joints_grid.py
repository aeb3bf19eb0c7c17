"""Large systems of point joints (engine.dynamics.joint_points): the lean world-frame block path agrees
with the general six-axis block Gauss-Seidel it replaces, carries a hanging net's weight to its
pins (closed form), breaks and holds by its thresholds, and replays bit for bit."""
import numpy as np
import pytest

import engine.dynamics.joint_solver as joint_solver
from engine import Box, Sphere, World, WorldSettings

SPACING = 0.1


def _net(n, pins, shape=None, vertical=False, spin=0.0, break_force=None, settings=None):
    """n x n bodies 0.1 m apart joined to their +i / +j neighbours by point joints at the
    midpoints, the listed (i, j) nodes pinned to the world at their centres. vertical: the
    net hangs in the XZ plane (j downwards), else it lies flat at z = 2. spin: initial
    angular velocity about (1, 2, 3) / |.| (rad/s) of every body, so rotations matter."""
    w = World(settings) if settings is not None else World()
    ij = np.stack(np.meshgrid(np.arange(n), np.arange(n), indexing="ij"), -1).reshape(-1, 2)
    pos = np.zeros((n * n, 3))
    pos[:, 0] = ij[:, 0] * SPACING
    if vertical:
        pos[:, 2] = 2.0 - ij[:, 1] * SPACING
    else:
        pos[:, 1] = ij[:, 1] * SPACING
        pos[:, 2] = 2.0
    axis = np.array([1.0, 2.0, 3.0]) / np.sqrt(14.0)
    for p in pos:
        w.add_body(shape if shape is not None else Sphere(0.04), position=p, mass=1.0,
                   angular_velocity=spin * axis)
    idx = np.arange(n * n).reshape(n, n)
    links = np.concatenate((np.stack((idx[:-1].ravel(), idx[1:].ravel()), 1),
                            np.stack((idx[:, :-1].ravel(), idx[:, 1:].ravel()), 1)))
    for a, b in links:
        w.add_joint("point", int(a), int(b), position=0.5 * (pos[a] + pos[b]))
    pin_joints = [w.add_joint("point", int(idx[i, j]), None, position=pos[idx[i, j]],
                              break_force=break_force) for i, j in pins]
    return w, links, pin_joints


def _stretch(w, links):
    p = w.positions
    return np.abs(np.linalg.norm(p[links[:, 1]] - p[links[:, 0]], axis=1) - SPACING)


def _uses_point_path(w):
    seen = []
    orig = joint_solver.JointSolver.finish

    def spy(self):
        seen.append(self.points is not None)
        orig(self)
    joint_solver.JointSolver.finish = spy
    try:
        w.step(1.0 / 240.0)
    finally:
        joint_solver.JointSolver.finish = orig
    return all(seen) and bool(seen)


def _run(n, steps, dt, **kw):
    w, links, _ = _net(n, [(0, 0), (n - 1, 0)], **kw)
    for _ in range(steps):
        w.step(dt)
    return w


def test_grid_takes_the_point_path():
    w, _, _ = _net(6, [(0, 0), (5, 0)])          # 60 + 2 joints: 186 rows > DIRECT_ROWS
    assert _uses_point_path(w)
    w, _, _ = _net(3, [(0, 0)])                   # 12 + 1 joints with loops: block GS too
    assert _uses_point_path(w)
    w = World()                                    # a short chain keeps the exact direct solve
    a = w.add_body(Sphere(0.04), position=(0, 0, 2))
    b = w.add_body(Sphere(0.04), position=(0.1, 0, 2))
    w.add_joint("point", a, b, position=(0.05, 0, 2))
    assert not _uses_point_path(w)


def _box_net_state(steps, dt=1.0 / 60.0, **settings):
    box = Box((0.06, 0.04, 0.03))
    w, links, _ = _net(4, [(0, 0), (3, 0)], shape=box, spin=3.0,
                       settings=WorldSettings(sleeping=False, **settings))
    for _ in range(steps):
        w.step(dt)
    return w.positions.copy(), w.orientations.copy(), w.joint_forces.copy(), \
        w.joints.v("impulse").copy()


def test_one_substep_matches_the_general_path(monkeypatch):
    """One substep from a cold start: same rows, same colours, same sweeps, so the motion
    differs by rounding only. The reported force differs by the turn of frame A between the
    biased and the relax sweep (the general path keeps its impulse along A's axes, which
    turn 8 mrad here; this path keeps the world vector it applied)."""
    fast = _box_net_state(1, dt=1.0 / 360.0, substeps=1)
    monkeypatch.setattr(joint_solver, "point_lock_only", lambda g: False)
    slow = _box_net_state(1, dt=1.0 / 360.0, substeps=1)
    np.testing.assert_allclose(fast[0], slow[0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(fast[1], slow[1], rtol=0, atol=1e-12)
    assert np.abs(fast[2] - slow[2]).max() < 0.02 * np.abs(slow[2]).max()


def test_spinning_box_net_stays_close_to_the_general_path(monkeypatch):
    """Ten steps of spinning, falling boxes (60 substeps): the world-frame warm start (the
    general path turns the carried impulse with body A) moves nothing by 0.1 mm. (Over a
    second the folding net is chaotic and the two drift apart, as any two roundings do.)"""
    fast = _box_net_state(10)
    monkeypatch.setattr(joint_solver, "point_lock_only", lambda g: False)
    slow = _box_net_state(10)
    assert np.abs(fast[0] - slow[0]).max() < 1e-4
    assert np.abs(fast[2] - slow[2]).max() < 0.02 * np.abs(slow[2]).max()


def test_hanging_net_carries_its_weight_to_the_pins():
    """A 6 x 6 net hung by its whole top row, starting at rest in its equilibrium (vertical
    links carry the weight below, horizontal ones nothing): once the start-up sloshing of the
    Gauss-Seidel load path has died out (about 1.5 s; kept awake), the pins' reaction is the
    net's weight, each pin's the weight of its column, and each link stretches as the soft
    lock it is: a spring of stiffness m_eff omega^2 (m_eff = 0.5 kg for two 1 kg balls along
    their link, omega = 2 pi joint_solver.lock_hertz) under the weight below it."""
    n = 6
    w, links, pins = _net(n, [(i, 0) for i in range(n)], vertical=True,
                          settings=WorldSettings(sleeping=False))
    assert _uses_point_path(w)
    for _ in range(60):
        w.step(1.0 / 24.0)
    f = w.joint_forces[pins]
    weight = n * 1.0 * 9.81
    np.testing.assert_allclose(f[:, 2], weight, rtol=1e-3)          # each column
    assert abs(f[:, 2].sum() - n * weight) < 1e-3 * n * weight       # the whole net
    assert np.abs(f[:, :2]).max() < 1e-3 * weight
    h = 1.0 / 24.0 / 2 / 8          # two collision passes of eight substeps
    omega = 2.0 * np.pi * joint_solver.lock_hertz(w.settings.joint_hertz, h, swept=True)
    j = np.arange(n * n) % n         # row of each ball (body i * n + j), 0 at the pins
    below = np.where(j[links[:, 0]] != j[links[:, 1]], n - 1 - j[links[:, 0]], 0)
    expected = below * 9.81 / (0.5 * omega ** 2)     # horizontal links carry nothing
    np.testing.assert_allclose(_stretch(w, links), expected, rtol=1e-3, atol=1e-7)


@pytest.mark.parametrize("threshold, breaks", [(0.7, True), (2.0, False)])
def test_pins_break_and_hold_by_their_threshold(threshold, breaks):
    """Each top pin of the hanging net carries its column's weight, 6 x 9.81 N, after a
    start-up swing of its load up to 1.62 times that (the column settling under 1-2 sweeps
    per substep): below the weight every pin snaps, above the peak all hold."""
    n = 6
    column = n * 9.81
    w, links, pins = _net(n, [(i, 0) for i in range(n)], vertical=True,
                          break_force=threshold * column)
    for _ in range(12):
        w.step(1.0 / 24.0)
    assert bool(w.joint_broken[pins].all()) == breaks
    if breaks:    # fallen free: every pin broke, the net dropped
        assert w.positions[:, 2].max() < 2.0 - 0.5
        assert not w.joint_broken[:len(links)].any()
    else:
        assert abs(w.positions[0, 2] - 2.0) < 1e-3


def test_point_path_replays_bit_for_bit():
    w1 = _run(8, 6, 1.0 / 24.0)
    saved = w1.get_state()
    for _ in range(6):
        w1.step(1.0 / 24.0)
    w2 = _run(8, 6, 1.0 / 24.0)
    w2.set_state(saved)
    for _ in range(6):
        w2.step(1.0 / 24.0)
    assert np.array_equal(w1.positions, w2.positions)
    assert np.array_equal(w1.joints.v("impulse"), w2.joints.v("impulse"))
    w1.set_state(saved)
    for _ in range(6):
        w1.step(1.0 / 24.0)
    assert np.array_equal(w1.positions, w2.positions)


def test_singular_joint_blocks_get_a_zero_inverse_not_nan():
    """joint_math's 3 x 3 inverses: exact against numpy for regular SPD blocks; a block
    whose bodies cannot move (zero or rank-deficient K) inverts to zeros, never inf/NaN."""
    from engine.dynamics.joint_math import inv3, inv3_soa
    rng = np.random.default_rng(4)
    a = rng.normal(size=(6, 3, 3))
    k = a @ np.swapaxes(a, 1, 2) + 0.1 * np.eye(3)
    k[4] = 0.0                                   # both ends immovable
    k[5] = np.outer([1.0, 2.0, 0.5], [1.0, 2.0, 0.5])   # rank one
    with np.errstate(all="raise"):
        inv = inv3(k)
        soa = inv3_soa(np.ascontiguousarray(k.transpose(1, 2, 0)))
    np.testing.assert_allclose(inv[:4], np.linalg.inv(k[:4]), rtol=1e-10)
    assert np.all(inv[4:] == 0.0)
    np.testing.assert_array_equal(soa.transpose(2, 0, 1), inv)
