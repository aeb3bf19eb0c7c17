"""A body struck within a collision pass ends the pass (engine.dynamics.struck), so it cannot cross into
a neighbour its contacts never saw; bodies that only bounce do not."""
import numpy as np
import pytest
from oracle import box_points, signed_distance

from engine.core import quat
from engine.shapes.primitives import Box, Sphere
from engine.world import world as world_module
from engine.world.world import World

HALF = np.array([0.2, 0.2, 0.2])


def _corners(w, i):
    return quat.rotate(np.repeat(w.orientations[i][None], 8, 0), box_points(HALF)) + w.positions[i]


def _struck_scene():
    """Two 2 kg boxes 0.2 m apart on the ground; a 300 kg ball at 40 m/s hits the first within
    the step's first pass (its fuzz origin: bench/fuzz_world.py seed 1134)."""
    w = World()
    w.add_body(Box([20.0, 20.0, 0.5]), position=(0, 0, -0.5), kind="static")
    a = w.add_body(Box(HALF), position=(0, 0, 0.2), mass=2.0)
    b = w.add_body(Box(HALF), position=(0.6, 0, 0.2), mass=2.0)
    w.add_body(Sphere(0.5), position=(-1.1, 0, 0.3), mass=300.0, linear_velocity=(40.0, 0, 0))
    return w, a, b


def _deepest_overlap(w, a, b, steps=6):
    worst = 0.0
    for _ in range(steps):
        w.step(1 / 24)
        s, _, _ = signed_distance(_corners(w, a), _corners(w, b))   # exact (Qhull)
        worst = min(worst, s)
    return -worst


def test_struck_box_does_not_cross_into_its_neighbour(monkeypatch):
    w, a, b = _struck_scene()
    assert _deepest_overlap(w, a, b) < 0.01
    # Without the early end the struck box crosses a quarter of a metre into its neighbour
    # in one pass: the check is not vacuous.
    monkeypatch.setattr(world_module, "MAX_EARLY_ENDS", 0)
    w, a, b = _struck_scene()
    assert _deepest_overlap(w, a, b) > 0.1


def _passes(w, steps, dt):
    count = [0]
    inner = w._step

    def counted(*args, **kw):
        count[0] += 1
        return inner(*args, **kw)
    w._step = counted
    for _ in range(steps):
        w.step(dt)
    return count[0]


@pytest.mark.parametrize("dt", [1 / 24, 1 / 60])
def test_a_bounce_takes_no_extra_pass(dt):
    """A ball bouncing at 8 m/s (e = 1) turns back at the same speed: its contacts' margins
    (speeds, whatever the direction) still cover it, so no pass ends early."""
    def scene():
        w = World()
        w.add_body(Box([5.0, 5.0, 0.5]), position=(0, 0, -0.5), kind="static", restitution=1.0)
        w.add_body(Sphere(0.25), position=(0, 0, 0.3), linear_velocity=(0, 0, -8.0),
                   restitution=1.0)
        return w
    w = scene()
    k = w.collision_steps_for(dt)
    assert _passes(w, 12, dt) == 12 * k


def test_early_ends_replay_to_the_bit():
    w, a, b = _struck_scene()
    start = w.get_state()
    for _ in range(4):
        w.step(1 / 24)
    first = w.get_state()
    w.set_state(start)
    for _ in range(4):
        w.step(1 / 24)
    again = w.get_state()
    for key in ("x", "q", "vel"):
        assert np.array_equal(first[key], again[key])
