"""Collision passes for spin (World.collision_steps_for) are paid only where a turn changes a
row: not for a ball centred on its centre of mass (its contact normal runs through its centre,
so a contact's normal row has no angular part), not for a wheel's roll about its own axis
(engine.dynamics.round_bodies), not for a body held only by point joints (their rows are rebuilt from
the poses at every substep). Balls and wheels rolling on those fewer passes still come out
right against the closed forms."""
import math

import numpy as np
import pytest

from engine import Box, Capsule, Cylinder, Sphere, World

R = 0.5
DT = 1.0 / 24.0


def spinning_on_ground(shape, spin, friction=0.5):
    """shape resting on a large static ground, spinning at spin rad/s about X."""
    w = World(sleeping=False)
    w.add_body(Box((200.0, 200.0, 0.5)), position=(0, 0, -0.5), kind="static",
               friction=friction)
    b = w.add_body(shape, position=(0, 0, R), angular_velocity=(spin, 0, 0),
                   friction=friction)
    w.step(DT)   # the pair is in the pair table from now on
    return w, b


def test_a_spinning_ball_takes_no_spin_passes_where_a_box_does():
    w, _ = spinning_on_ground(Sphere(R), 60.0)
    base = w.collision_steps_for(DT)
    assert base == 2                     # ceil(dt / max_collision_step), nothing more
    # The control: a cube of the same size, spinning as fast (2.5 rad a pass at 2 passes).
    box, _ = spinning_on_ground(Box((R, R, R)), 60.0)
    assert box.collision_steps_for(DT) > base


@pytest.mark.parametrize("dt", [1.0 / 24.0, 1.0 / 60.0])
def test_a_ball_spun_on_the_ground_rolls_off_at_two_sevenths_of_its_rim_speed(dt):
    """A solid ball spinning at w0 about a horizontal axis, set on the ground: friction turns
    spin into rolling, keeping the angular momentum about the contact point, so it ends
    rolling at v = (2/7) w0 R whatever the friction (I = 2/5 m R^2)."""
    w0 = 60.0
    w, b = spinning_on_ground(Sphere(R), w0, friction=0.8)
    for _ in range(round(2.5 / dt)):
        w.step(dt)
    v = w.linear_velocities[b]
    spin = w.angular_velocities[b]
    expect = 2.0 / 7.0 * w0 * R
    print(f"\nspun ball at dt={dt:.4f}: rolls at {np.linalg.norm(v):.4f} m/s "
          f"(closed form {expect:.4f}), rim speed {abs(spin[0]) * R:.4f}")
    assert abs(abs(v[1]) - expect) < 0.01 * expect
    assert abs(v[0]) < 1e-3 and abs(v[2]) < 1e-2
    assert abs(abs(spin[0]) * R - abs(v[1])) < 0.01 * expect      # rolling, not sliding
    assert w.positions[b][2] == pytest.approx(R, abs=2e-3)


@pytest.mark.parametrize("dt", [1.0 / 24.0, 1.0 / 60.0])
@pytest.mark.parametrize("name,shape", [("cylinder", Cylinder(R, 1.0)),
                                        ("capsule", Capsule(R, 0.4))])
def test_a_wheel_spinning_on_frictionless_ground_keeps_its_spin(dt, name, shape):
    """A wheel lying on its side, its axis along X, spinning at 60 rad/s about it on
    frictionless ground for 2 s: nothing acts about the axis, so the spin (and the energy)
    stays and the wheel stays where it is. Before the solver's normal rows left out round
    bodies' axes and their rows followed the axis (engine.dynamics.round_bodies) the capsule lost a
    fifth of its spin at 1/24 s and wobbled at 2.1 rad/s at 1/60 s (26 rad/s after 3 s)."""
    w0 = 60.0
    w = World(sleeping=False)
    w.add_body(Box((20.0, 20.0, 0.5)), position=(0, 0, -0.5), kind="static", friction=0.0)
    b = w.add_body(shape, position=(0, 0, R), angular_velocity=(w0, 0, 0), friction=0.0,
                   orientation=(math.cos(math.pi / 4), 0.0, math.sin(math.pi / 4), 0.0))
    for _ in range(round(2.0 / dt)):
        w.step(dt)
    spin = w.angular_velocities[b]
    moved = np.linalg.norm(w.positions[b] - (0, 0, R))
    print(f"\nfrictionless {name} at dt={dt:.4f}: spin {spin[0]:.4f} rad/s, wobble "
          f"{np.linalg.norm(spin[1:]):.4f} rad/s, moved {moved * 1000:.3f} mm")
    assert abs(spin[0] - w0) < 0.005 * w0
    assert np.linalg.norm(spin[1:]) < 0.05
    assert moved < 2e-3


def test_a_tumbling_capsule_takes_spin_passes_where_a_rolling_one_does_not():
    """The same capsule on the ground at the same 30 rad/s: rolling about its axis it needs
    no extra pass; tumbling end over end (the spin across its axis), its surface turns and
    it does."""
    def on_ground(w_body):
        w = World(sleeping=False)
        w.add_body(Box((20.0, 20.0, 0.5)), position=(0, 0, -0.5), kind="static")
        q = np.array([math.cos(math.pi / 4), 0.0, math.sin(math.pi / 4), 0.0])  # axis along X
        b = w.add_body(Capsule(R, 0.4), position=(0, 0, R), orientation=q)
        w.step(DT)
        w.set_velocity(b, angular=w_body)
        return w.collision_steps_for(DT)
    assert on_ground((30.0, 0.0, 0.0)) == 2
    assert on_ground((0.0, 30.0, 0.0)) > 2


def test_point_joints_take_no_spin_passes_where_a_hinge_does():
    """A cube on a point joint to the world spinning at 100 rad/s needs no extra pass; on a
    limited hinge it does (without them a spun door overshot its limit at 1/24 s:
    tests/test_joints_physics.py)."""
    def pinned(kind):
        w = World(sleeping=False, gravity=(0.0, 0.0, 0.0))
        b = w.add_body(Box((0.2, 0.2, 0.2)), position=(0, 0, 1),
                       angular_velocity=(0, 0, 100.0))
        w.add_joint(kind, b, None, position=(0, 0, 1), limits=(
            {"ang_z": (-math.pi, math.pi)} if kind == "hinge" else None))
        return w
    assert pinned("point").collision_steps_for(DT) == 2
    assert pinned("hinge").collision_steps_for(DT) > 2


def incline(theta, shape, radius, q_body=(1.0, 0.0, 0.0, 0.0)):
    """A static slope at theta (downhill along +x) and shape resting on it at rest."""
    w = World(sleeping=False)
    n = np.array([math.sin(theta), 0.0, math.cos(theta)])
    w.add_body(Box((30.0, 5.0, 0.5)), position=-0.5 * n, kind="static", friction=1.0,
               orientation=(math.cos(theta / 2), 0.0, math.sin(theta / 2), 0.0))
    b = w.add_body(shape, position=(radius + 1e-4) * n, orientation=q_body, friction=1.0)
    return w, b


# Local Z along the world Y (horizontal, across the slope): the roll is about Z.
ACROSS = (math.cos(math.pi / 4), -math.sin(math.pi / 4), 0.0, 0.0)


@pytest.mark.parametrize("dt", [1.0 / 24.0, 1.0 / 60.0])
@pytest.mark.parametrize("name,shape,radius,k_inertia", [
    ("cylinder", Cylinder(0.3, 1.0), 0.3, 0.5),
    ("capsule", Capsule(0.3, 0.5), 0.3, None),
    ("ball", Sphere(0.3), 0.3, 0.4)])
def test_round_bodies_roll_down_a_slope_at_the_closed_form(dt, name, shape, radius, k_inertia):
    """Rolling without slipping down a 20 degree slope: a = g sin(theta) / (1 + I / (m R^2))
    (I about the roll axis: 1/2 m R^2 for a cylinder, 2/5 for a ball, the capsule's own from
    its mass properties), on the passes a frame needs however fast it rolls: the roll moves
    none of their surface (engine.dynamics.round_bodies)."""
    theta = math.radians(20.0)
    w, b = incline(theta, shape, radius, ACROSS)
    if k_inertia is None:
        inertia = np.asarray(w._a["inertia"][b]).reshape(3, 3)[2, 2]     # about local Z
        k_inertia = inertia / (w.masses[b] * radius ** 2)
    a = 9.81 * math.sin(theta) / (1.0 + k_inertia)
    steps, passes = round(1.5 / dt), set()
    for _ in range(steps):
        passes.add(w.collision_steps_for(dt))
        w.step(dt)
    t = steps * dt
    v = w.linear_velocities[b]
    speed = float(np.linalg.norm(v))
    roll = float(np.linalg.norm(w.angular_velocities[b]))
    print(f"\n{name} dt={dt:.4f}: {speed:.4f} m/s after {t:.2f} s (closed form {a * t:.4f}), "
          f"rim {roll * radius:.4f} m/s, passes a step {sorted(passes)}")
    assert abs(speed - a * t) < 0.01 * a * t
    assert abs(roll * radius - speed) < 0.01 * speed               # rolling, not sliding
    assert abs(v[1]) < 1e-3                                         # straight down the slope
    assert passes == {max(1, math.ceil(dt * 48 - 1e-9))}            # no pass for the roll
