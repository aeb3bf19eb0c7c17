"""Collision passes for spin (World.collision_steps_for) are paid only where a turn changes a
row: not for a ball centred on its centre of mass (its contact normal runs through its centre,
so a contact's normal row has no angular part), not for a body held only by point joints
(their rows are rebuilt from the poses at every substep). A fast-spinning ball then still
comes out right against the closed form."""
import math

import numpy as np
import pytest

from engine import Box, Sphere, World

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
