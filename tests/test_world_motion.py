"""World motion without contacts: integrator closed forms, gyroscopic flip, damping, kinematic
bodies, COM offsets and input validation."""
import math

import numpy as np
import pytest

from engine.core import quat
from engine.core.errors import EngineError
from engine.shapes.primitives import Box, Sphere
from engine.world.world import World

G = 9.81


@pytest.mark.parametrize("dt", [1 / 24, 1 / 60])
def test_free_fall_matches_semi_implicit_euler_closed_form(dt):
    w = World(sleeping=False)
    x0, v0 = np.array([1.0, -2.0, 50.0]), np.array([0.5, 0.25, 3.0])
    i = w.add_body(Sphere(0.1), position=x0, linear_velocity=v0)
    n = w.substeps_for(dt)
    h = dt / n
    g = np.array([0.0, 0.0, -G])
    for step in range(1, 31):
        w.step(dt)
        k = step * n  # substeps so far: v_k = v0 + k g h, x_k = x0 + k h v0 + g h^2 k (k + 1) / 2
        np.testing.assert_allclose(w.linear_velocities[i], v0 + k * h * g, rtol=0, atol=1e-9)
        np.testing.assert_allclose(w.positions[i], x0 + k * h * v0 + g * h * h * k * (k + 1) / 2,
                                   rtol=0, atol=1e-9)


@pytest.mark.parametrize("dt", [1 / 24, 1 / 60])
def test_projectile_range(dt):
    speed, angle = 12.0, math.radians(35.0)
    w = World(sleeping=False)
    w.add_body(Sphere(0.05), linear_velocity=(speed * math.cos(angle), 0.0, speed * math.sin(angle)))
    prev = w.positions[0].copy()
    while True:
        w.step(dt)
        cur = w.positions[0].copy()
        if cur[2] < 0.0:
            break
        prev = cur
    f = prev[2] / (prev[2] - cur[2])  # linear interpolation of the landing point
    landing = prev[0] + f * (cur[0] - prev[0])
    expected = speed ** 2 * math.sin(2 * angle) / G
    assert abs(landing - expected) / expected < 0.01


def _angular_momentum(w, i):
    rot = quat.to_matrix(w.orientations[i])
    inertia_world = rot @ w._a["inertia"][i] @ rot.T
    return inertia_world @ w.angular_velocities[i]


@pytest.mark.parametrize("dt", [1 / 24, 1 / 60])
def test_dzhanibekov_flip_and_angular_momentum(dt):
    """A box with three distinct principal moments spun about the intermediate axis (y) flips
    periodically, while |L| (and L itself, no torque acts) stays constant."""
    w = World(gravity=(0, 0, 0), sleeping=False)
    i = w.add_body(Box([0.1, 0.4, 0.7]), angular_velocity=(1e-3, 6.0, 1e-3), mass=2.0)
    l0 = _angular_momentum(w, i)
    y_dots, l_err = [], 0.0
    for _ in range(round(10.0 / dt)):
        w.step(dt)
        y_axis = quat.rotate(w.orientations[i], [0.0, 1.0, 0.0])
        y_dots.append(y_axis @ l0 / np.linalg.norm(l0))
        l_err = max(l_err, np.linalg.norm(_angular_momentum(w, i) - l0) / np.linalg.norm(l0))
    y_dots = np.array(y_dots)
    assert y_dots.min() < -0.9, "the intermediate axis never flipped"
    # It flips back too (the motion is periodic, not a decay onto another axis).
    first_flip = np.argmax(y_dots < -0.9)
    assert (y_dots[first_flip:] > 0.9).any()
    assert l_err < 0.01


def test_spin_about_principal_axis_is_steady_and_exact():
    w = World(gravity=(0, 0, 0), sleeping=False)
    i = w.add_body(Box([0.2, 0.3, 0.5]), angular_velocity=(0.0, 0.0, 2.0))
    for _ in range(24):
        w.step(1 / 24)
    np.testing.assert_allclose(w.angular_velocities[i], [0, 0, 2.0], atol=1e-12)
    expected = quat.from_axis_angle([0, 0, 1], 2.0)  # 1 s at 2 rad/s
    assert abs(abs(np.dot(w.orientations[i], expected)) - 1.0) < 1e-12


def test_off_centre_mass_rotates_about_centre_of_mass():
    """Hull-like bodies have their COM off the shape origin: the COM moves in a straight line
    while the origin circles around it."""
    from engine.shapes.hull import ConvexHull
    pts = np.array([[0, 0, 0], [2, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=float)  # tetrahedron
    hull = ConvexHull(pts)
    w = World(gravity=(0, 0, 0), sleeping=False)
    i = w.add_body(hull, position=(0, 0, 0), angular_velocity=(0, 0, 3.0), density=100.0)
    com_local = np.array([0.5, 0.25, 0.25])  # centroid of a tetrahedron = mean of its vertices
    c0 = w.positions[i] + quat.rotate(w.orientations[i], com_local)
    for _ in range(30):
        w.step(1 / 60)
        c = w.positions[i] + quat.rotate(w.orientations[i], com_local)
        np.testing.assert_allclose(c, c0, atol=1e-9)
    assert np.linalg.norm(w.positions[i] - 0.0) > 0.1  # the origin itself moved


@pytest.mark.parametrize("dt", [1 / 24, 1 / 60])
def test_damping_is_bullets_rule(dt):
    w = World(gravity=(0, 0, 0), sleeping=False)
    i = w.add_body(Sphere(0.1), linear_velocity=(4.0, 0, 0), angular_velocity=(0, 0, 2.0),
                   linear_damping=0.04, angular_damping=0.1)
    t = 0.0
    for _ in range(12):
        w.step(dt)
        t += dt
    np.testing.assert_allclose(w.linear_velocities[i, 0], 4.0 * (1 - 0.04) ** t, rtol=1e-9)
    np.testing.assert_allclose(w.angular_velocities[i, 2], 2.0 * (1 - 0.1) ** t, rtol=1e-9)


def test_kinematic_target_sets_velocity_and_reaches_pose():
    w = World(gravity=(0, 0, 0), sleeping=False)
    k = w.add_body(Box([0.5, 0.5, 0.5]), kind="kinematic")
    q1 = quat.from_axis_angle([0, 0, 1], 0.3)
    w.set_kinematic_target(k, (0.5, 0.0, 0.0), q1)
    w.step(0.25)
    np.testing.assert_allclose(w.positions[k], [0.5, 0, 0], atol=1e-12)
    assert abs(abs(np.dot(w.orientations[k], q1)) - 1) < 1e-12
    np.testing.assert_allclose(w.linear_velocities[k], [2.0, 0, 0], atol=1e-9)
    np.testing.assert_allclose(w.angular_velocities[k], [0, 0, 1.2], atol=1e-9)


def test_add_body_between_steps_and_growth():
    w = World(sleeping=False)
    first = w.add_body(Sphere(0.1), position=(0, 0, 10))
    for _ in range(3):
        w.step(1 / 24)
    ids = [w.add_body(Sphere(0.1), position=(3 * j, 0, 10)) for j in range(1, 40)]
    assert ids == list(range(1, 40)) and w.body_count == 40
    z_first = w.positions[first, 2]
    w.step(1 / 24)
    assert w.positions[first, 2] < z_first
    assert np.all(w.positions[1:, 2] < 10.0)
    assert w.positions.shape == (40, 3) and w.orientations.shape == (40, 4)


@pytest.mark.parametrize("kwargs, words", [
    (dict(position=(0, np.nan, 0)), "finite"),
    (dict(orientation=(1, 0, np.inf, 0)), "finite"),
    (dict(orientation=(0, 0, 0, 0)), "unit quaternion"),
    (dict(mass=0.0), "mass must be positive"),
    (dict(mass=-1.0), "finite and"),
    (dict(density=-5.0), "finite and"),
    (dict(density=1.0, mass=1.0), "not both"),
    (dict(kind="floppy"), "unknown body kind"),
    (dict(friction=-0.1), "friction"),
    (dict(linear_velocity=(1, 2)), "3 numbers"),
])
def test_add_body_validation(kwargs, words):
    w = World()
    with pytest.raises(EngineError, match=words):
        w.add_body(Box([0.5, 0.5, 0.5]), **kwargs)


def test_step_and_target_validation():
    w = World()
    d = w.add_body(Box([0.5, 0.5, 0.5]))
    with pytest.raises(EngineError, match="positive"):
        w.step(0.0)
    with pytest.raises(EngineError, match="not kinematic"):
        w.set_kinematic_target(d, (0, 0, 0))
    with pytest.raises(EngineError, match="out of range"):
        w.set_velocity(5, (0, 0, 0))
