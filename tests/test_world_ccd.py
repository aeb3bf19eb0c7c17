"""No tunnelling: fast bodies against thin static walls and thin dynamic plates."""
import numpy as np
import pytest

from engine.shapes.primitives import Box, Sphere
from engine.world.world import World


@pytest.mark.parametrize("dt", [1 / 24, 1 / 60])
@pytest.mark.parametrize("phase", np.linspace(0.0, 1.0, 5, endpoint=False))
def test_fast_sphere_does_not_pass_thin_static_wall(dt, phase):
    """A 0.1 m sphere at 200 m/s (8.3 m per 1/24 s frame) against a 5 cm wall; the start
    phase moves where inside a frame the hit happens."""
    w = World(gravity=(0, 0, 0), sleeping=False)
    wall_x = 10.0
    w.add_body(Box([0.025, 2.0, 2.0]), position=(wall_x, 0, 0), kind="static")
    s = w.add_body(Sphere(0.05), position=(-phase * 200.0 * dt, 0, 0),
                   linear_velocity=(200.0, 0, 0))
    for _ in range(int(0.3 / dt)):
        w.step(dt)
        assert w.positions[s, 0] < wall_x - 0.025 - 0.05 + 1e-3
    assert w.linear_velocities[s, 0] <= 1e-6  # stopped (restitution 0) or bounced back


@pytest.mark.parametrize("dt", [1 / 24, 1 / 60])
def test_thin_dynamic_plates_do_not_pass_each_other(dt):
    """Two 2 cm plates approaching at 50 m/s each (100 m/s closing) in zero gravity."""
    w = World(gravity=(0, 0, 0), sleeping=False)
    plate = Box([0.01, 0.5, 0.5])
    a = w.add_body(plate, position=(-3.0, 0, 0), linear_velocity=(50.0, 0, 0))
    b = w.add_body(plate, position=(3.0, 0.0, 0.0), linear_velocity=(-50.0, 0, 0))
    for _ in range(int(0.5 / dt)):
        w.step(dt)
        assert w.positions[a, 0] < w.positions[b, 0]
    # Momentum is conserved through the hit (equal masses, opposite velocities).
    np.testing.assert_allclose(w.linear_velocities[a] + w.linear_velocities[b], 0.0, atol=1e-9)


def test_thin_plate_hits_static_wall_at_50_mps():
    w = World(gravity=(0, 0, 0), sleeping=False)
    w.add_body(Box([0.01, 1.0, 1.0]), position=(2.0, 0, 0), kind="static")
    p = w.add_body(Box([0.01, 0.4, 0.4]), position=(0, 0, 0), linear_velocity=(50.0, 0, 0))
    for _ in range(12):
        w.step(1 / 24)
        assert w.positions[p, 0] < 2.0 - 0.02 + 1e-3


def test_fast_box_falling_onto_ground_stops_on_top():
    w = World(sleeping=False)
    w.add_body(Box([5.0, 5.0, 0.05]), position=(0, 0, -0.05), kind="static")
    b = w.add_body(Box([0.1, 0.1, 0.1]), position=(0, 0, 3.0), linear_velocity=(0, 0, -80.0))
    for _ in range(24):
        w.step(1 / 24)
        assert w.positions[b, 2] > 0.1 - 0.01


def test_without_ccd_the_fast_sphere_tunnels():
    """Control: the same shot with ccd=False passes through the wall, so the test above is
    really exercising the speculative contacts."""
    w = World(gravity=(0, 0, 0), sleeping=False, ccd=False)
    w.add_body(Box([0.025, 2.0, 2.0]), position=(10.0, 0, 0), kind="static")
    s = w.add_body(Sphere(0.05), position=(0.0, 0, 0), linear_velocity=(200.0, 0, 0))
    for _ in range(4):
        w.step(1 / 24)
    assert w.positions[s, 0] > 10.0
