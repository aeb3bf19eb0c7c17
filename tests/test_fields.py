"""Force fields (engine.features.fields) against closed forms: Blender's effector laws applied to single
bodies in an otherwise empty world (no gravity, no damping, no contacts) give ordinary
differential equations with known solutions (constant push, spring, exponential and
hyperbolic drag, cyclotron circles, terminal velocity), plus the falloff law, direction
tests, weights, waking and input checks. Blender's own trajectories are the oracle in
tests/addon/test_addon_fields.py."""
import math

import numpy as np
import pytest

from engine.core.errors import EngineError
from engine.features.fields import FieldKind, FieldTable, ForceField, field_forces, gradient_noise
from engine.shapes.primitives import Box, Sphere
from engine.world.world import World

RATE = 24.0   # Blender divides field forces by the scene's frames per second


def free_world(field, position=(0.0, 0.0, 0.0), velocity=(0.0, 0.0, 0.0), mass=1.0,
               rate=RATE, exempt=()):
    w = World(gravity=(0.0, 0.0, 0.0), sleeping=False)
    w.add_body(Sphere(0.1), position=position, linear_velocity=velocity, mass=mass)
    w.set_fields(FieldTable([field], rate=rate), exempt=exempt)
    return w


def run(w, seconds, dt=1 / 24):
    """Positions and velocities of body 0 at each step (times dt, 2 dt, ...)."""
    n = round(seconds / dt)
    pos, vel = np.empty((n, 3)), np.empty((n, 3))
    for k in range(n):
        w.step(dt)
        pos[k], vel[k] = w.positions[0], w.linear_velocities[0]
    return np.arange(1, n + 1) * dt, pos, vel


def force_at(field, points, velocities=None, rate=RATE):
    p = np.atleast_2d(np.asarray(points, dtype=float))
    v = np.zeros_like(p) if velocities is None else np.atleast_2d(velocities)
    return field_forces(FieldTable([field], rate=rate), p, v)


# -- constant pushes and their trajectories ---------------------------------------------------
def test_force_field_constant_pull_is_uniform_acceleration():
    # Strength -10, no falloff: |F| = 10 / 24 N towards the origin, so from 20 m along x a
    # 2 kg body accelerates at 10 / 48 m/s^2 and moves a t^2 / 2 (it stays on its side).
    w = free_world(ForceField("FORCE", strength=-10.0), position=(20.0, 0.0, 0.0), mass=2.0)
    t, pos, _ = run(w, 2.0)
    a = -10.0 / RATE / 2.0
    np.testing.assert_allclose(pos[:, 0], 20.0 + 0.5 * a * t ** 2, rtol=0, atol=2e-3)
    np.testing.assert_allclose(pos[:, 1:], 0.0, atol=1e-12)


def test_wind_with_flow_reaches_terminal_velocity():
    # Wind s along the field's axis with flow c: m v' = s / k - c v, so v -> s / (k c) with
    # time constant m / c and x(t) = v_t (t - tau (1 - e^(-t / tau))).
    s, c, m = 6.0, 0.5, 1.5
    axis = np.array([1.0, 2.0, 2.0]) / 3.0
    w = free_world(ForceField("WIND", strength=s, flow=c, shape="PLANE", axis=axis,
                              position=(3.0, -1.0, 0.5)), mass=m)
    t, pos, vel = run(w, 4.0)
    vt, tau = s / (RATE * c), m / c
    expect = vt * (t - tau * (1.0 - np.exp(-t / tau)))
    np.testing.assert_allclose(pos @ axis, expect, rtol=0.01, atol=1e-4)
    np.testing.assert_allclose(np.cross(pos, axis), 0.0, atol=1e-12)   # along the axis only


def test_harmonic_oscillates_with_the_spring_period_and_decays_at_the_damping_rate():
    # Harmonic: F = -(s / k) x - 2 c sqrt(s) v, so omega0 = sqrt(s / (k m)) and the
    # amplitude decays as e^(-c sqrt(s) t / m).
    s, m, c = 240.0, 1.0, 0.02
    w = free_world(ForceField("HARMONIC", strength=s, damping=c), position=(0.5, 0.0, 0.0),
                   mass=m)
    t, pos, _ = run(w, 6.0, dt=1 / 120)
    x = pos[:, 0]
    omega0 = math.sqrt(s / (RATE * m))
    gamma = c * math.sqrt(s) / m
    omega = math.sqrt(omega0 ** 2 - gamma ** 2)
    up = np.flatnonzero((x[:-1] < 0) & (x[1:] >= 0))      # upward zero crossings
    tc = t[up] - x[up] * (t[up + 1] - t[up]) / (x[up + 1] - x[up])
    period = np.mean(np.diff(tc))
    assert abs(period - 2 * math.pi / omega) < 0.005 * (2 * math.pi / omega), period
    peaks = np.flatnonzero((x[1:-1] > x[:-2]) & (x[1:-1] >= x[2:])) + 1
    rate = -np.polyfit(t[peaks], np.log(x[peaks]), 1)[0]
    assert abs(rate - gamma) < 0.05 * gamma, (rate, gamma)


def test_harmonic_rest_length_is_an_equilibrium():
    f = ForceField("HARMONIC", strength=50.0, damping=0.0, rest_length=2.0)
    F = force_at(f, [[2.0, 0, 0], [3.0, 0, 0], [0, 1.0, 0]])
    np.testing.assert_allclose(F[0], 0.0, atol=1e-12)
    np.testing.assert_allclose(F[1], [-50.0 / RATE, 0, 0], rtol=1e-12)   # stretched 1 m
    np.testing.assert_allclose(F[2], [0, 50.0 / RATE, 0], rtol=1e-12)    # pushed out 1 m


def test_linear_drag_decays_exponentially():
    # Drag with linear coefficient c only: F = -c v, so v = v0 e^(-c t / m).
    c, m, v0 = 0.8, 2.0, 3.0
    w = free_world(ForceField("DRAG", strength=0.0, damping=c), velocity=(v0, 0, 0), mass=m)
    t, pos, vel = run(w, 3.0)
    np.testing.assert_allclose(vel[:, 0], v0 * np.exp(-c * t / m), rtol=2e-3)
    np.testing.assert_allclose(pos[:, 0], v0 * m / c * (1 - np.exp(-c * t / m)), rtol=3e-3)


def test_quadratic_drag_decays_hyperbolically_and_clamps_at_two():
    # Quadratic coefficient q: F = -q k |v| v, so v = v0 / (1 + q k v0 t / m); Blender caps q
    # (and the linear one) at 2.
    m, v0 = 5.0, 2.0
    for q, q_eff in ((0.05, 0.05), (7.0, 2.0)):
        w = free_world(ForceField("DRAG", strength=q, damping=0.0), velocity=(0, v0, 0), mass=m)
        t, _, vel = run(w, 2.0)
        expect = v0 / (1 + q_eff * RATE * v0 * t / m)
        np.testing.assert_allclose(vel[:, 1], expect, rtol=0.02)


def test_magnetic_plane_field_bends_a_moving_body_into_a_circle():
    # Plane shape: F = v x (s n); a body moving across n circles with omega = s / m at
    # constant speed, radius m |v| / s.
    s, m, speed = 2.0, 4.0, 1.5
    w = free_world(ForceField("MAGNET", strength=s, shape="PLANE"), velocity=(speed, 0, 0),
                   mass=m)
    t, pos, vel = run(w, 2 * math.pi * m / s, dt=1 / 240)
    # Explicit in the velocity-dependent force (as Bullet): the speed gains about
    # pi h omega (0.3 % here) per turn.
    np.testing.assert_allclose(np.linalg.norm(vel, axis=1), speed, rtol=5e-3)
    radius = m * speed / s
    centre = np.array([0.0, -radius, 0.0])      # v x z for v = +x points to -y
    np.testing.assert_allclose(np.linalg.norm(pos - centre, axis=1), radius, rtol=5e-3)
    np.testing.assert_allclose(pos[-1], 0.0, atol=0.02)   # one full turn, back at the start


# -- field geometry -------------------------------------------------------------------------
def test_force_falloff_power_two_is_inverse_square_of_one_plus_distance():
    # Blender's falloff is (1 + d - d_min)^-power; with use_gravity_falloff also 1 / d^2.
    pts = np.array([[0.5, 0, 0], [0, 2.0, 0], [0, 0, -4.0]])
    d = np.linalg.norm(pts, axis=1)
    F = force_at(ForceField("FORCE", strength=3.0, power=2.0), pts)
    np.testing.assert_allclose(F, 3.0 / RATE * pts / d[:, None] / (1 + d[:, None]) ** 2,
                               rtol=1e-12)
    G = force_at(ForceField("FORCE", strength=3.0, power=2.0, gravity_falloff=True), pts)
    np.testing.assert_allclose(G, F / d[:, None] ** 2, rtol=1e-12)
    H = force_at(ForceField("FORCE", strength=3.0, power=2.0, use_min=True, min_distance=1.0,
                            use_max=True, max_distance=3.0), pts)
    np.testing.assert_allclose(H[0], 3.0 / RATE * pts[0] / d[0], rtol=1e-12)   # inside min
    np.testing.assert_allclose(H[1], 3.0 / RATE * pts[1] / d[1] / (1 + d[1] - 1.0) ** 2,
                               rtol=1e-12)
    np.testing.assert_allclose(H[2], 0.0)                                      # beyond max


def test_tube_and_cone_falloffs_and_z_direction():
    # Tube: axial falloff on |height|, radial falloff on the distance from the Z axis.
    # Cone: radial falloff on the angle (degrees) from the axis.
    p = np.array([[3.0, 4.0, 2.0], [3.0, 4.0, -2.0]])
    tube = force_at(ForceField("WIND", strength=24.0, falloff="TUBE", power=1.0,
                               radial_power=2.0), p)
    np.testing.assert_allclose(tube[:, 2], 1.0 / 3.0 / 36.0, rtol=1e-12)   # 1/(1+2) / (1+5)^2
    ang = math.degrees(math.acos(2.0 / math.sqrt(29.0)))
    cone = force_at(ForceField("WIND", strength=24.0, falloff="CONE", power=1.0,
                               radial_power=1.0, use_radial_max=True, radial_max=80.0), p)
    np.testing.assert_allclose(cone[0, 2], 1.0 / 3.0 / (1 + ang), rtol=1e-12)
    np.testing.assert_allclose(cone[1, 2], 0.0)                  # 112 degrees > 80
    pos_only = force_at(ForceField("WIND", strength=24.0, z_direction="POSITIVE"), p)
    np.testing.assert_allclose(pos_only[:, 2], [1.0, 0.0])
    neg_only = force_at(ForceField("WIND", strength=24.0, z_direction="NEGATIVE"), p)
    np.testing.assert_allclose(neg_only[:, 2], [0.0, 1.0])


def test_plane_and_line_shapes_measure_distance_from_the_plane_and_the_axis():
    # Wind (Plane shape) falls off with the height above the plane; a Force field with a
    # Line shape pushes straight out from its axis.
    p = np.array([[10.0, -7.0, 1.0], [0.0, 0.0, 3.0]])
    F = force_at(ForceField("WIND", strength=24.0, shape="PLANE", power=1.0), p)
    np.testing.assert_allclose(F[:, 2], [0.5, 0.25], rtol=1e-12)
    L = force_at(ForceField("FORCE", strength=24.0, shape="LINE", position=(1.0, 1.0, 0.0)),
                 [[4.0, 5.0, 9.0]])
    np.testing.assert_allclose(L[0], [0.6, 0.8, 0.0], rtol=1e-12)


def test_vortex_is_tangential_about_the_axis():
    rng = np.random.default_rng(3)
    p = rng.normal(size=(50, 3)) * 3.0
    axis = np.array([0.0, 0.6, 0.8])
    # Point shape ("old" vortex): tangential, |F| = s d / k with d the distance to the origin.
    F = force_at(ForceField("VORTEX", strength=2.0, shape="POINT", axis=axis), p)
    np.testing.assert_allclose(np.einsum("ij,ij->i", F, p), 0.0, atol=1e-12)
    np.testing.assert_allclose(F @ axis, 0.0, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(F, axis=1),
                               2.0 * np.linalg.norm(p, axis=1) / RATE, rtol=1e-12)
    # Plane shape: swirl s rho / k around the axis, inward pull s^2 rho / k, minus v.
    s = 0.5
    v = rng.normal(size=p.shape)
    G = force_at(ForceField("VORTEX", strength=s, shape="PLANE", axis=axis), p, v)
    radial = p - np.outer(p @ axis, axis)
    rho = np.linalg.norm(radial, axis=1)
    out = radial / rho[:, None]
    tang = np.cross(axis, out)
    H = G + v
    np.testing.assert_allclose(np.einsum("ij,ij->i", H, tang), s * rho / RATE, rtol=1e-9)
    np.testing.assert_allclose(np.einsum("ij,ij->i", H, out), -s * s * rho / RATE, rtol=1e-9)
    np.testing.assert_allclose(H @ axis, 0.0, atol=1e-12)


def test_weights_scale_fields_and_non_positive_falloff_switches_them_off():
    p = [[0.0, 0.0, 1.0]]
    one = force_at(ForceField("WIND", strength=5.0, flow=1.0), p, [[0.0, 0.0, 0.3]])
    half = force_at(ForceField("WIND", strength=5.0, flow=1.0, weight=0.5), p, [[0, 0, 0.3]])
    np.testing.assert_allclose(half, 0.5 * one, rtol=1e-12)
    neg = force_at(ForceField("WIND", strength=5.0, flow=1.0, weight=-1.0), p, [[0, 0, 0.3]])
    np.testing.assert_array_equal(neg, 0.0)


def test_lennard_jones_is_zero_and_fields_sum():
    p = np.array([[1.0, 2.0, 3.0]])
    np.testing.assert_array_equal(force_at(ForceField("LENNARDJ", strength=100.0), p), 0.0)
    a = ForceField("WIND", strength=3.0)
    b = ForceField("FORCE", strength=-2.0, power=1.0, position=(1.0, 0.0, 0.0))
    both = field_forces(FieldTable([a, b], rate=RATE), p, np.zeros((1, 3)))
    np.testing.assert_allclose(both, force_at(a, p) + force_at(b, p), rtol=1e-12)


def test_turbulence_is_bounded_smooth_and_deterministic():
    rng = np.random.default_rng(5)
    p = rng.uniform(-5, 5, size=(400, 3))
    f = ForceField("TURBULENCE", strength=12.0, size=1.5)
    F = force_at(f, p)
    assert np.all(np.abs(F) <= 12.0 / RATE + 1e-12)
    assert np.std(F) > 0.05 * 12.0 / RATE            # it does vary over space
    np.testing.assert_array_equal(F, force_at(f, p))
    eps = 1e-4                                       # smooth: small moves, small changes
    dF = force_at(f, p + eps) - F
    assert np.max(np.abs(dF)) < 1e-2 * 12.0 / RATE
    lattice = np.array([[1.0, -3.0, 7.0], [0.0, 0.0, 0.0]])
    np.testing.assert_allclose(gradient_noise(lattice), 0.0, atol=1e-12)


def test_noise_is_per_frame_deterministic_and_bounded():
    f = ForceField("WIND", strength=1.0, noise=2.0, seed=7)
    s = [FieldTable([f], frame=k).strength[0] for k in range(40)]
    assert s == [FieldTable([f], frame=k).strength[0] for k in range(40)]
    assert len(set(s)) > 20
    assert all(abs(x - 1.0) <= 2.0 for x in s)


# -- world integration ------------------------------------------------------------------------
def test_fields_wake_sleepers_exempt_bodies_and_clearing():
    w = World(gravity=(0.0, 0.0, 0.0))
    a = w.add_body(Box((0.5, 0.5, 0.5)), position=(0, 0, 0))
    b = w.add_body(Box((0.5, 0.5, 0.5)), position=(5, 0, 0))
    for _ in range(30):
        w.step(1 / 24)
    assert w.sleeping.all()
    w.set_fields(FieldTable([ForceField("WIND", strength=24.0, axis=(1, 0, 0))]), exempt=[b])
    for _ in range(24):
        w.step(1 / 24)
    assert not w.sleeping[a] and w.positions[a][0] > 0.4   # a = 1 m/s^2 for 1 s: 0.5 m
    np.testing.assert_array_equal(w.positions[b], [5, 0, 0])
    w.set_fields(None)
    v = w.linear_velocities[a].copy()
    w.step(1 / 24)
    np.testing.assert_array_equal(w.linear_velocities[a], v)


def test_fields_are_deterministic_and_batched_bodies_match_single_ones():
    fields = [ForceField("VORTEX", strength=1.5, shape="PLANE", position=(0.2, 0, 0)),
              ForceField("DRAG", strength=0.1, damping=0.3),
              ForceField("TURBULENCE", strength=3.0, size=2.0)]

    def world(starts):
        w = World(gravity=(0.0, 0.0, -9.81), sleeping=False)
        w.add_body(Box((20, 20, 0.5)), position=(0, 0, -0.5), kind="static")
        for s in starts:
            w.add_body(Box((0.3, 0.3, 0.3)), position=s)
        w.set_fields(FieldTable(fields))
        for _ in range(24):
            w.step(1 / 24)
        return w.get_state()

    starts = [(x, y, 0.31) for x in (-3.0, 0.0, 3.0) for y in (-2.0, 2.0)]
    s1, s2 = world(starts), world(starts)
    for k in s1:
        np.testing.assert_array_equal(s1[k], s2[k])
    lone = world(starts[:1])
    np.testing.assert_allclose(lone["pos"][1], s1["pos"][1], atol=1e-9)


def test_bad_field_input_is_refused_with_a_clear_message():
    with pytest.raises(EngineError, match="field kind must be one of"):
        FieldTable([ForceField("TEXTURE")])
    with pytest.raises(EngineError, match="finite"):
        FieldTable([ForceField("WIND", axis=(0, float("inf"), 0))])
    # A zero axis (zero Z scale) is Blender's zero direction: no wind, a Force still pulls.
    p = [[0.0, 3.0, 0.0]]
    np.testing.assert_array_equal(force_at(ForceField("WIND", axis=(0, 0, 0)), p), 0.0)
    np.testing.assert_allclose(force_at(ForceField("FORCE", strength=-24.0, axis=(0, 0, 0)),
                                        p), [[0.0, -1.0, 0.0]])
    with pytest.raises(EngineError, match="finite"):
        FieldTable([ForceField("WIND", strength=float("nan"))])
    with pytest.raises(EngineError, match="rate"):
        FieldTable([], rate=0)
    w = World()
    with pytest.raises(EngineError, match="FieldTable"):
        w.set_fields([ForceField()])
    with pytest.raises(EngineError, match="out of range"):
        w.set_fields(FieldTable([ForceField()]), exempt=[3])
    assert FieldKind["WIND"] == 4
