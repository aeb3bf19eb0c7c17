"""Sleeping per island and waking."""
import numpy as np

from engine.shapes.primitives import Box, Sphere
from engine.world.world import World


def ground(w):
    return w.add_body(Box([20.0, 20.0, 0.5]), position=(0, 0, -0.5), kind="static")


def test_resting_box_falls_asleep_and_stays_put():
    w = World()
    ground(w)
    b = w.add_body(Box([0.5, 0.5, 0.5]), position=(0, 0, 0.6))
    asleep_at = None
    for k in range(72):
        w.step(1 / 24)
        if asleep_at is None and w.sleeping[b]:
            asleep_at = k
    assert asleep_at is not None and asleep_at * (1 / 24) < 2.0
    p = w.positions[b].copy()
    for _ in range(24):
        w.step(1 / 24)
    assert w.sleeping[b]
    np.testing.assert_array_equal(w.positions[b], p)  # asleep: not integrated at all
    np.testing.assert_array_equal(w.linear_velocities[b], 0.0)


def box_asleep_on_ground():
    """A unit box resting on the ground, asleep after 2 s at 24 fps: (world, box)."""
    w = World()
    ground(w)
    b = w.add_body(Box([0.5, 0.5, 0.5]), position=(0, 0, 0.5))
    for _ in range(48):
        w.step(1 / 24)
    assert w.sleeping[b]
    return w, b


def test_sleeping_box_wakes_when_hit_and_reacts():
    w, b = box_asleep_on_ground()
    ball = w.add_body(Sphere(0.2), position=(-3.0, 0, 0.5), linear_velocity=(8.0, 0, 0), mass=5.0)
    woke = False
    for _ in range(24):
        w.step(1 / 24)
        woke |= not w.sleeping[b]
    assert woke
    assert w.positions[b, 0] > 0.05  # it was pushed
    assert w.positions[ball, 0] < w.positions[b, 0]


def test_island_sleeps_together_and_wakes_together():
    w = World()
    ground(w)
    tower = [w.add_body(Box([0.5, 0.5, 0.5]), position=(0, 0, 0.5 + k)) for k in range(3)]
    for _ in range(48):
        w.step(1 / 24)
    assert w.sleeping[tower].all()
    w.set_velocity(tower[2], linear=(0.5, 0, 0))  # touch the top one: the island wakes
    assert not w.sleeping[tower].any()


def test_kinematic_body_moving_into_sleepers_wakes_and_pushes_them():
    w = World()
    ground(w)
    b = w.add_body(Box([0.5, 0.5, 0.5]), position=(0, 0, 0.5))
    k = w.add_body(Box([0.2, 1.0, 0.5]), position=(-1.5, 0, 0.5), kind="kinematic")
    for _ in range(48):
        w.step(1 / 24)
    assert w.sleeping[b]
    x = -1.5
    for _ in range(48):  # 1 m/s for 2 s
        x += 1.0 / 24
        w.set_kinematic_target(k, (x, 0, 0.5))
        w.step(1 / 24)
    assert w.positions[b, 0] > 0.5 - 0.05
    # The pushed box stays ahead of the pusher's face and does not sink into it.
    assert w.positions[b, 0] - 0.5 > w.positions[k, 0] + 0.2 - 0.01


def test_set_velocity_wakes_a_sleeper():
    w, b = box_asleep_on_ground()
    w.set_velocity(b, linear=(0, 0, 3.0))
    w.step(1 / 24)
    assert not w.sleeping[b] and w.positions[b, 2] > 0.55


def test_sleeping_disabled_never_sleeps():
    w = World(sleeping=False)
    ground(w)
    b = w.add_body(Box([0.5, 0.5, 0.5]), position=(0, 0, 0.5))
    for _ in range(48):
        w.step(1 / 24)
    assert not w.sleeping[b]
