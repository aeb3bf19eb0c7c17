"""World.add_joint: validation, disable_collisions, enable/disable, breaking for good, sleeping
islands linked by joints, get_state / set_state replays bit for bit, determinism."""
import math

import numpy as np
import pytest

from engine import Box, Sphere, World
from engine.core.errors import EngineError


def _two_boxes(**kw):
    w = World(**kw)
    a = w.add_body(Box((0.5, 0.5, 0.5)), position=(0, 0, 2))
    b = w.add_body(Box((0.5, 0.5, 0.5)), position=(0.8, 0, 2))   # overlapping a by 0.2 m
    return w, a, b


@pytest.mark.parametrize("call, words", [
    (lambda w, a, b: w.add_joint("rope", a, b), "unknown joint kind"),
    (lambda w, a, b: w.add_joint("point", a, a), "itself"),
    (lambda w, a, b: w.add_joint("point", a, 7), "out of range"),
    (lambda w, a, b: w.add_joint("hinge", a, b, limits={"ang_z": (1.0, -1.0)}), "lower"),
    (lambda w, a, b: w.add_joint("hinge", a, b, limits={"lin_x": (0, 1)}), "lin_x"),
    (lambda w, a, b: w.add_joint("generic_spring", a, b, springs={"lin_z": (-5.0, 0.0)}),
     ">= 0"),
    (lambda w, a, b: w.add_joint("generic", a, b, springs={"lin_z": (5.0, 0.0)}), "springs"),
    (lambda w, a, b: w.add_joint("point", a, b, orientation=(0, 0, 0, 0)), "zero length"),
    (lambda w, a, b: w.add_joint("point", a, b, position=(0, math.nan, 0)), "finite"),
    (lambda w, a, b: w.add_joint("point", a, b, break_force=-1.0), "break_force"),
])
def test_bad_input_raises_a_clear_error(call, words):
    w, a, b = _two_boxes()
    with pytest.raises(EngineError, match=words):
        call(w, a, b)
    assert w.joint_count == 0


def test_joint_between_static_bodies_is_refused():
    w = World()
    a = w.add_body(Box((1, 1, 1)), kind="static")
    b = w.add_body(Box((1, 1, 1)), position=(3, 0, 0), kind="static")
    with pytest.raises(EngineError, match="neither is dynamic"):
        w.add_joint("fixed", a, b)


def test_disable_collisions_lets_joined_bodies_overlap():
    """Two overlapping boxes: free, they push apart; joined by a point joint with
    disable_collisions they keep their overlap and have no contact; with
    disable_collisions=False the contact is there (joint and contact then fight)."""
    w0, a0, b0 = _two_boxes(gravity=(0, 0, 0))
    w1, a1, b1 = _two_boxes(gravity=(0, 0, 0))
    w1.add_joint("point", a1, b1, position=(0.4, 0, 2))
    for _ in range(12):
        w0.step(1 / 24)
        w1.step(1 / 24)
    assert w0.positions[b0, 0] - w0.positions[a0, 0] > 0.95      # pushed apart
    assert abs(w1.positions[b1, 0] - w1.positions[a1, 0] - 0.8) < 1e-9  # untouched
    w2, a2, b2 = _two_boxes(gravity=(0, 0, 0))
    w2.add_joint("point", a2, b2, position=(0.4, 0, 2), disable_collisions=False)
    w1.step(1 / 24, record=True)
    w2.step(1 / 24, record=True)
    assert len(w1.last_record.manifold_pairs) == 0
    assert [list(p) for p in w2.last_record.manifold_pairs] == [[a2, b2]]


def test_disabled_joint_does_nothing_and_enabling_wakes_it():
    w = World()
    b = w.add_body(Sphere(0.1), position=(0, 0, -1))
    j = w.add_joint("point", b, None, position=(0, 0, 0), enabled=False)
    w.step(1 / 24)
    assert w.positions[b, 2] < -1.0 - 0.5 * 9.81 / 24 ** 2 * 0.9   # falls freely
    w.set_joint_enabled(j, True)
    z = w.positions[b, 2]
    for _ in range(24):
        w.step(1 / 24)
    assert abs(w.positions[b, 2] - z) < 0.02                     # held (hangs at its new pose)
    assert w.joint_enabled[j]


def test_broken_joint_stays_broken_and_state_carries_it():
    w = World()
    b = w.add_body(Box((0.1, 0.1, 0.1)), position=(0, 0, 1), mass=6.0)
    j = w.add_joint("fixed", b, None, position=(0, 0, 1), break_force=30.0)
    saved = w.get_state()
    w.step(1 / 24)
    assert w.joint_broken[j]
    w.set_joint_enabled(j, True)   # re-enabling does not mend it
    w.step(1 / 24)
    assert w.joint_broken[j] and w.linear_velocities[b, 2] < -0.5
    w.set_state(saved)
    assert not w.joint_broken[j]
    after = w.get_state()
    w.step(1 / 24)
    assert w.joint_broken[j]
    w.set_state(after)
    assert not w.joint_broken[j]


def _rig():
    """A hinge door with limits, a spring, a motor and a chain resting on the ground."""
    w = World()
    w.add_body(Box((5, 5, 0.5)), position=(0, 0, -0.5), kind="static")
    door = w.add_body(Box((0.5, 0.025, 1.0)), position=(0.5, 0, 1.0), mass=20.0)
    w.add_joint("hinge", door, None, position=(0, 0, 1), limits={"ang_z": (-0.5, 1.0)})
    w.set_velocity(door, angular=(0, 0, 3.0))
    prev = None
    for i in range(6):
        c = w.add_body(Box((0.05, 0.02, 0.02)), position=(-1 + 0.1 * i, 1, 1.5), mass=0.2)
        if prev is None:
            w.add_joint("point", c, None, position=(-1.05, 1, 1.5))
        else:
            w.add_joint("point", prev, c, position=(-1.05 + 0.1 * i, 1, 1.5))
        prev = c
    s = w.add_body(Box((0.1, 0.1, 0.1)), position=(1, -1, 1))
    w.add_joint("generic_spring", s, None, position=(1, -1, 1),
                springs={"lin_z": (50.0, 1.0), "ang_x": (5.0, 0.1)})
    m = w.add_body(Box((0.2, 0.1, 0.1)), position=(-1, -1, 1))
    w.add_joint("motor", m, None, position=(-1, -1, 1), motor={"ang": (4.0, 2.0)})
    return w


def test_state_replay_is_bit_exact_and_runs_are_deterministic():
    w1, w2 = _rig(), _rig()
    for _ in range(10):
        w1.step(1 / 24)
        w2.step(1 / 24)
    assert np.array_equal(w1.positions, w2.positions)
    saved = w1.get_state()
    for _ in range(10):
        w1.step(1 / 24)
    end = (w1.positions.copy(), w1.orientations.copy(), w1.joint_forces.copy())
    w1.set_state(saved)
    for _ in range(10):
        w1.step(1 / 24)
    assert np.array_equal(end[0], w1.positions)
    assert np.array_equal(end[1], w1.orientations)
    assert np.array_equal(end[2], w1.joint_forces)


def test_joined_bodies_sleep_together_and_wake_together():
    """Two boxes on the ground joined by a fixed joint settle and sleep as one island; a ball
    hitting one of them wakes both."""
    w = World()
    w.add_body(Box((5, 5, 0.5)), position=(0, 0, -0.5), kind="static")
    a = w.add_body(Box((0.2, 0.2, 0.2)), position=(0, 0, 0.2))
    b = w.add_body(Box((0.2, 0.2, 0.2)), position=(2.0, 0, 0.2))
    w.add_joint("fixed", a, b, position=(1.0, 0, 0.2))
    for _ in range(48):
        w.step(1 / 24)
    assert w.sleeping[a] and w.sleeping[b]
    w.add_body(Sphere(0.1), position=(0, 0, 1.0), linear_velocity=(0, 0, -3))
    for _ in range(6):
        w.step(1 / 24)
    assert not w.sleeping[a] and not w.sleeping[b]


def test_reaction_force_of_a_hanging_chain_equals_the_weight_below():
    w = World()
    bodies = [w.add_body(Sphere(0.05), position=(0, 0, -0.2 * (i + 1)), mass=1.0 + i)
              for i in range(3)]
    w.add_joint("point", bodies[0], None, position=(0, 0, 0))
    j1 = w.add_joint("point", bodies[0], bodies[1], position=(0, 0, -0.3))
    j2 = w.add_joint("point", bodies[1], bodies[2], position=(0, 0, -0.5))
    for _ in range(24):
        w.step(1 / 24)
    # The joint pulls the lower body (B) up with the weight hanging from it.
    assert np.allclose(w.joint_forces[j2], (0, 0, 3.0 * 9.81), rtol=0, atol=0.01)
    assert np.allclose(w.joint_forces[j1], (0, 0, 5.0 * 9.81), rtol=0, atol=0.01)
    assert np.allclose(w.joint_forces[0], (0, 0, 6.0 * 9.81), rtol=0, atol=0.01)
