"""World.set_body_kind (dynamic <-> kinematic hand-off) and World.set_deactivation, against
closed-form motion: a released body carries the velocity of its keyed motion into free
flight (ballistic, exactly once); a body that starts asleep stays exactly where it is until
something moving touches it."""
import numpy as np
import pytest

from engine import Box, EngineError, Sphere, World

DT = 1.0 / 24.0
G = 9.81


def spin_q(w, t):
    ang = np.linalg.norm(w) * t
    axis = w / np.linalg.norm(w)
    return np.concatenate(([np.cos(ang / 2)], np.sin(ang / 2) * axis))


def test_released_body_carries_keyed_velocity_into_ballistic_flight():
    w = World(gravity=(0, 0, -G))
    b = w.add_body(Sphere(0.25), position=(0, 0, 5), mass=2.0)
    w.set_body_kind(b, "kinematic")
    p0 = np.array([0.0, 0.0, 5.0])
    v = np.array([3.0, -1.0, 2.0])
    spin = np.array([0.0, 0.0, 4.0])
    n_keyed = 12
    for f in range(1, n_keyed + 1):
        w.set_kinematic_target(b, p0 + v * f * DT, spin_q(spin, f * DT))
        w.step(DT)
        np.testing.assert_allclose(w.positions[b], p0 + v * f * DT, atol=1e-12)
    w.set_body_kind(b, "dynamic")          # released: no target from now on
    t_rel = n_keyed * DT
    p_rel = p0 + v * t_rel
    for f in range(1, 25):
        w.step(DT)
        t = f * DT
        expect = p_rel + v * t + 0.5 * np.array([0, 0, -G]) * t * t
        # Semi-implicit Euler at the substep h: error g h t / 2, under 1e-2 m here.
        np.testing.assert_allclose(w.positions[b], expect, atol=2e-2)
        np.testing.assert_allclose(w.linear_velocities[b], v + np.array([0, 0, -G]) * t,
                                   atol=1e-9)
        np.testing.assert_allclose(w.angular_velocities[b], spin, atol=1e-9)


def test_switching_back_and_forth_holds_then_starts_from_rest():
    w = World(gravity=(0, 0, -G), sleeping=False)
    b = w.add_body(Box((0.5, 0.5, 0.5)), position=(0, 0, 10))
    w.set_velocity(b, linear=(1.0, 0.0, 0.0))
    for _ in range(6):
        w.step(DT)
    w.set_body_kind(b, "kinematic")        # held: no target, no velocity
    held = w.positions[b].copy()
    for _ in range(10):
        w.step(DT)
    np.testing.assert_array_equal(w.positions[b], held)
    np.testing.assert_array_equal(w.linear_velocities[b], 0.0)
    w.set_body_kind(b, "dynamic")          # re-enabled: from rest, as Blender does
    for _ in range(12):
        w.step(DT)
    t = 12 * DT
    assert w.positions[b, 0] == held[0]
    np.testing.assert_allclose(w.positions[b, 2], held[2] - 0.5 * G * t * t, atol=2e-2)
    np.testing.assert_allclose(w.linear_velocities[b], (0, 0, -G * t), atol=1e-9)


def test_kinematic_phase_pushes_a_dynamic_body():
    w = World(gravity=(0, 0, 0))
    pusher = w.add_body(Box((0.5, 0.5, 0.5)), position=(0, 0, 0), mass=5.0)
    box = w.add_body(Box((0.5, 0.5, 0.5)), position=(1.2, 0, 0), mass=1.0)
    w.set_body_kind(pusher, "kinematic")
    for f in range(1, 25):
        w.set_kinematic_target(pusher, (2.0 * f * DT, 0, 0))
        w.step(DT)
    # The box is pushed ahead, at least at the pusher's speed (infinite mass while
    # kinematic), never through it.
    np.testing.assert_allclose(w.positions[pusher], (2.0, 0, 0), atol=1e-12)
    assert w.positions[box, 0] >= w.positions[pusher, 0] + 1.0 - 1e-2
    assert w.linear_velocities[box, 0] >= 2.0 - 0.05


def test_state_round_trip_with_kind_switches_is_bit_exact():
    def make():
        w = World(gravity=(0, 0, -G))
        w.add_body(Box((5, 5, 0.5)), position=(0, 0, -0.5), kind="static")
        a = w.add_body(Box((0.3, 0.3, 0.3)), position=(0, 0, 1.0))
        w.add_body(Box((0.3, 0.3, 0.3)), position=(0.1, 0, 2.0))
        return w, a

    def run(w, a, frames):
        out = []
        for f in frames:
            if f == 3:
                w.set_body_kind(a, "kinematic")
            if 3 <= f < 8:
                w.set_kinematic_target(a, (0.3 * f * DT, 0, 1.0))
            if f == 8:
                w.set_body_kind(a, "dynamic")
            w.step(DT)
            out.append(w.positions.copy())
        return out

    w, a = make()
    ref = run(w, a, range(12))
    w2, a2 = make()
    run(w2, a2, range(5))
    state = w2.get_state()
    w3, a3 = make()             # a fresh world, all dynamic: the state carries the kinds
    w3.set_state(state)
    assert w3.kinds[a3] == w2.kinds[a2]
    rest = run(w3, a3, range(5, 12))
    for x, y in zip(ref[5:], rest):
        np.testing.assert_array_equal(x, y)


def test_set_body_kind_refuses_what_it_cannot_do():
    w = World()
    k = w.add_body(Box((1, 1, 1)), kind="kinematic")
    s = w.add_body(Box((1, 1, 1)), kind="static")
    d = w.add_body(Box((1, 1, 1)))
    with pytest.raises(EngineError, match="no mass"):
        w.set_body_kind(k, "dynamic")
    with pytest.raises(EngineError, match="static"):
        w.set_body_kind(s, "dynamic")
    with pytest.raises(EngineError, match="static"):
        w.set_body_kind(d, "static")
    with pytest.raises(EngineError, match="unknown body kind"):
        w.set_body_kind(d, "floppy")
    with pytest.raises(EngineError, match="deactivation velocity"):
        w.set_deactivation(d, linear=-1.0)
    with pytest.raises(EngineError, match="not dynamic"):
        w.set_deactivation(k, start_asleep=True)
    w.set_body_kind(d, 2)                   # codes / IntEnums work too
    assert w.kinds[d] == 2


@pytest.mark.parametrize("sleeping", [True, False])
def test_start_asleep_body_holds_in_mid_air_until_hit(sleeping):
    w = World(gravity=(0, 0, -G), sleeping=sleeping)
    w.add_body(Box((5, 5, 0.5)), position=(0, 0, -0.5), kind="static")
    c = w.add_body(Box((0.5, 0.5, 0.5)), position=(0, 0, 3.0))
    d = w.add_body(Box((0.5, 0.5, 0.5)), position=(0.2, 0, 6.0))
    w.set_deactivation(c, start_asleep=True)
    start = w.positions[c].copy()
    hit = None
    for f in range(1, 73):
        w.step(DT)
        if hit is None and not w.sleeping[c]:
            hit = f
            # Woken only when the falling cube reached it (its bottom at the top of c).
            assert w.positions[d, 2] - 0.5 < start[2] + 0.5 + 0.2
        if hit is None:
            np.testing.assert_array_equal(w.positions[c], start)
    # d falls 2 m (6 - 1 - 3) before reaching c: about t = sqrt(2 * 2 / g) = 0.64 s.
    assert hit is not None and abs(hit * DT - np.sqrt(4.0 / G)) < 0.15
    assert w.positions[c, 2] < 0.6          # then it falls to the ground


def test_start_asleep_body_woken_by_a_kinematic_body_moving_into_it():
    w = World(gravity=(0, 0, -G))
    c = w.add_body(Box((0.5, 0.5, 0.5)), position=(0, 0, 3.0))
    k = w.add_body(Box((0.5, 0.5, 0.5)), position=(-3, 0, 3.0), kind="kinematic")
    w.set_deactivation(c, start_asleep=True)
    for f in range(1, 49):
        w.set_kinematic_target(k, (-3 + 2.0 * f * DT, 0, 3.0))
        w.step(DT)
        gap = w.positions[c, 0] - w.positions[k, 0] - 1.0
        if w.sleeping[c]:
            assert gap > -1e-9 and w.positions[c, 2] == 3.0
    assert not w.sleeping[c] and w.positions[c, 0] > 0.5


def test_deactivation_disabled_never_sleeps_and_tolerances_are_per_body():
    w = World(gravity=(0, 0, 0), time_to_sleep=0.5)
    a = w.add_body(Box((0.5, 0.5, 0.5)), position=(0, 0, 0), linear_velocity=(0.2, 0, 0))
    b = w.add_body(Box((0.5, 0.5, 0.5)), position=(0, 5, 0), linear_velocity=(0.2, 0, 0))
    c = w.add_body(Box((0.5, 0.5, 0.5)), position=(0, 10, 0))
    w.set_deactivation(b, linear=0.4, angular=0.5)   # Blender's defaults: 0.2 m/s counts as rest
    w.set_deactivation(c, enabled=False)
    for _ in range(48):
        w.step(DT)
    assert not w.sleeping[a] and not w.sleeping[c]
    assert w.sleeping[b]
    # b slept once its timer reached time_to_sleep = 0.5 s, counted in collision passes of
    # 1/48 s (24 of them, 25 with the float sum just under 0.5), and stopped there; a drifts.
    passes = w.positions[b, 0] / (0.2 / 48)
    assert min(abs(passes - 24), abs(passes - 25)) < 1e-6, passes
    np.testing.assert_allclose(w.positions[a, 0], 0.2 * 48 * DT, atol=1e-9)


def test_bulk_kinematic_targets_match_one_by_one_and_refuse_bad_input():
    def make():
        w = World(gravity=(0, 0, -G))
        w.add_body(Box((0.5, 0.5, 0.5)), position=(0, 0, 3))
        ks = [w.add_body(Box((0.3, 0.3, 0.3)), position=(x, 0, 1), kind="kinematic")
              for x in (-2.0, 2.0)]
        return w, ks

    pos = np.array([[-1.0, 0, 2.6], [1.0, 0.5, 1.0]])
    q = np.array([[1.0, 0, 0, 0.2], [0.0, 0, 0, 2.0]])       # normalised by the calls
    one, ks = make()
    for i, p, r in zip(ks, pos, q):
        one.set_kinematic_target(i, p, r)
    bulk, ks2 = make()
    bulk.set_kinematic_targets(ks2, pos, q)
    for _ in range(6):
        one.step(DT)
        bulk.step(DT)
        if _ == 0:
            one.set_kinematic_target(ks[0], pos[0] + 0.1, q[0])
            bulk.set_kinematic_targets(ks2[:1], (pos[0] + 0.1)[None], q[:1])
    np.testing.assert_array_equal(one.positions, bulk.positions)
    np.testing.assert_array_equal(one.orientations, bulk.orientations)
    with pytest.raises(EngineError, match="not kinematic"):
        bulk.set_kinematic_targets([0], pos[:1], q[:1])
    with pytest.raises(EngineError, match="out of range"):
        bulk.set_kinematic_targets([7], pos[:1], q[:1])
    with pytest.raises(EngineError, match="finite"):
        bulk.set_kinematic_targets(ks2[:1], [[np.nan, 0, 0]], q[:1])
