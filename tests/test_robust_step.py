"""Robustness of the step against violent input (issue 11): root causes found by the scene
fuzzer (tests/fuzzworld.py), each with the closed-form truth it breaks."""
import numpy as np

from engine import Box, World
from engine.core import quat


def _rot_energy_and_momentum(world):
    rot = quat.to_matrix(world.orientations)
    inertia = rot @ world._v("inertia") @ np.swapaxes(rot, 1, 2)
    w = world.angular_velocities
    e = 0.5 * np.einsum("ni,nij,nj->n", w, inertia, w)
    return e, np.linalg.norm(np.einsum("nij,nj->ni", inertia, w), axis=1)


def test_fast_free_spin_of_a_thin_box_keeps_its_energy_and_momentum():
    """A free rigid body conserves rotational energy and |L| exactly. A 4 cm stick spinning at
    10^4 rad/s (h |w| ~ 14 per substep: what a hit gives a small thin body in the fuzzer)
    gained x19 energy in 1 s before the fix (x10 in the 0.5 s run here): Newton's two steps
    diverge for h |w| > 1."""
    for spin in (1.0e3, 1.0e4, 3.0e4):
        world = World(gravity=(0.0, 0.0, 0.0))
        world.add_body(Box((0.001, 0.005, 0.02)), mass=1.0,
                       angular_velocity=(spin, 0.1 * spin, 0.01 * spin))
        e0, l0 = _rot_energy_and_momentum(world)
        worst = 0.0
        for _ in range(12):
            world.step(1.0 / 24.0)
            e, l = _rot_energy_and_momentum(world)
            worst = max(worst, float(e[0] / e0[0]))
        assert worst < 1.0 + 1e-9, (spin, worst)
        assert abs(l[0] / l0[0] - 1.0) < 1e-4, (spin, l[0] / l0[0])
        assert np.all(np.isfinite(world.orientations))


def test_an_absurd_spin_neither_stalls_the_step_nor_gains_energy():
    """A body spun to 1e12 rad/s (what a solver blow-up elsewhere leaves behind) used to make
    the gyroscopic update loop ceil(h |w|) ~ 3e9 times: the step never returned. The split is
    capped (integrate.MAX_GYRO_SPLIT) and the energy clamp bounds the rest."""
    from engine.dynamics.integrate import MAX_GYRO_SPLIT, gyro_kick
    inertia = np.diag([1e-4, 2e-3, 3e-3])[None]
    w0 = np.array([[1e12, 3e11, -2e11]])
    q = np.array([[1.0, 0.0, 0.0, 0.0]])
    vel = np.zeros((1, 6))
    vel[0, 3:] = w0
    steps = gyro_kick(vel, np.array([0]), q, inertia, 1.0 / 360.0, 2)
    w1 = vel[:, 3:]
    assert steps == MAX_GYRO_SPLIT     # ceil(h |w|) would be 3e9
    e0 = w0[0] @ inertia[0] @ w0[0]
    e1 = w1[0] @ inertia[0] @ w1[0]
    assert np.isfinite(w1).all() and e1 <= e0 * (1 + 1e-12)


def _three_boxes():
    world = World()
    world.add_body(Box((5.0, 5.0, 0.5)), position=(0, 0, -0.5), kind="static")
    for k in range(3):
        world.add_body(Box((0.5, 0.5, 0.5)), position=(3.0 * k - 3.0, 0.0, 2.0 + k))
    return world


def test_guard_keeps_a_poisoned_body_at_its_last_good_pose_and_lets_the_others_go_on(
        monkeypatch):
    """Fault injection: body 2's velocity turns NaN inside step 5 (as a division by a
    vanishing mass would). The step must not raise nor spread it: body 2 is back at its
    pose before the step, asleep, named in world.guard_events; the other boxes (apart from
    it) move exactly as in a world where nothing went wrong."""
    from engine.world import world as world_mod

    reference = _three_boxes()
    world = _three_boxes()
    real = world_mod.run_pass
    poison = {"on": False}

    def substeps(*args, **kw):      # a pass's substeps (vel: the 9th argument)
        out = real(*args, **kw)
        if poison["on"]:
            args[8][2, 0] = np.nan
        return out

    monkeypatch.setattr(world_mod, "run_pass", substeps)
    for step in range(12):
        before = world.positions[2].copy(), world.orientations[2].copy()
        poison["on"] = step == 5
        world.step(1.0 / 60.0)
        poison["on"] = False
        reference.step(1.0 / 60.0)
        if step == 5:
            assert np.array_equal(world.positions[2], before[0])
            assert np.array_equal(world.orientations[2], before[1])
    assert len(world.guard_events) == 1
    ev = world.guard_events[0]
    assert ev.body == 2 and "velocity" in ev.reason and "body 2" in str(ev)
    assert world.sleeping[2] and np.all(world.linear_velocities[2] == 0.0)
    for b in (1, 3):
        assert np.array_equal(world.positions[b], reference.positions[b])
    assert np.all(np.isfinite(world.positions)) and reference.guard_events == []


def test_zero_quaternion_in_set_pose_or_a_target_is_refused_not_a_nan_pose():
    """Sibling of the NaN hunt: set_pose / set_kinematic_target divided by |q| unchecked, so
    (0, 0, 0, 0) made the body's pose NaN (and the next step's broadphase fail for all)."""
    import pytest

    from engine import EngineError

    world = _three_boxes()
    kin = world.add_body(Box((0.5, 0.5, 0.5)), position=(0, 5, 1), kind="kinematic")
    with pytest.raises(EngineError, match="zero length"):
        world.set_pose(1, orientation=(0.0, 0.0, 0.0, 0.0))
    with pytest.raises(EngineError, match="zero length"):
        world.set_kinematic_target(kin, (0, 5, 2), (0.0, 0.0, 0.0, 0.0))
    world.step(1.0 / 60.0)
    assert np.all(np.isfinite(world.orientations)) and world.guard_events == []


def test_sound_manifolds_drops_zero_normals_and_non_finite_points_only():
    from engine.world.guard import sound_manifolds

    rng = np.random.default_rng(3)
    m = 64
    n = rng.normal(size=(m, 3))
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    pts = rng.normal(size=(m, 4, 3))
    sep = rng.normal(size=(m, 4))
    count = rng.integers(1, 5, m)
    n[3] = 0.0                      # degenerate query
    pts[5, 0] = np.nan              # a used slot
    pts[7, 3] = np.nan              # an unused slot (count 1): harmless
    count[7] = 1
    sep[9, 0] = np.inf
    ok = sound_manifolds(n, pts, sep, count)
    expect = np.ones(m, dtype=bool)
    expect[[3, 5, 9]] = False
    assert np.array_equal(ok, expect)


def test_speed_watch_flags_a_body_launched_from_nowhere_once_and_respects_kinematics():
    from engine.world.guard import SpeedWatch

    world = _three_boxes()
    watch = SpeedWatch(world)
    assert watch.reference == 0.0 and watch.cap() == 50.0
    world.step(1.0 / 60.0)
    assert len(watch.check(world, 1.0 / 60.0)[0]) == 0
    world.set_velocity(2, linear=(0.0, 0.0, 80.0))
    idx, speed = watch.check(world, 1.0 / 60.0)
    assert idx.tolist() == [2] and abs(speed[0] - 80.0) < 1e-9
    assert len(watch.check(world, 1.0 / 60.0)[0]) == 0          # once per body
    watch.kinematic(40.0)                                        # an animated body at 40 m/s
    world.set_velocity(3, linear=(0.0, 0.0, 100.0))
    assert len(watch.check(world, 1.0 / 60.0)[0]) == 0          # 100 < 2 * 40 + 50 + g t
