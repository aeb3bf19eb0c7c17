"""Stiff generic_spring joints keep their energy (issue 11, the jointed fuzzer's seeds 2 and 4).

A joint's three linear spring rows share the bodies' turning when the anchor is off a body's
centre of mass; solved one row at a time in a single Gauss-Seidel sweep, a stiff spring
(h omega >> 1) gained energy every substep. engine.dynamics.joint_springs solves them as one block."""
import numpy as np
import pytest

from engine import Box, Sphere, World
from engine.core import quat


def _kinetic(w):
    rot = quat.to_matrix(w.orientations)
    inertia = rot @ w._v("inertia") @ np.swapaxes(rot, 1, 2)
    v, om = w.linear_velocities, w.angular_velocities
    return float(0.5 * np.sum(w.masses * np.einsum("ij,ij->i", v, v))
                 + 0.5 * np.einsum("ni,nij,nj->", om, inertia, om))


@pytest.mark.parametrize("lever", [1.0, 5.4])
@pytest.mark.parametrize("k", [1e4, 8e5])
def test_a_stiff_spring_on_a_long_arm_gains_no_energy(lever, k):
    """No gravity, no contact: a 1000 kg ball at 25 m/s drags a 2 kg box by an undamped
    spring on all three linear axes whose anchor lies `lever` m off the box. Nothing feeds
    the system, so its kinetic energy can never exceed the start's (the spring's potential
    is >= 0), and the joint forces being internal, the momentum is kept. Row by row the box
    reached 9e4 m/s and 1e14 J within two seconds (8e5 N/m)."""
    w = World(gravity=(0.0, 0.0, 0.0))
    a = w.add_body(Sphere(0.4), position=(0, 0, 0), linear_velocity=(25, 0, 0), mass=1000)
    b = w.add_body(Box((0.2, 0.2, 0.2)), position=(lever, 0.3, 0.2), mass=2.0)
    w.add_joint("generic_spring", a, b, position=(0.0, 0.0, 0.0),
                springs=dict.fromkeys(("lin_x", "lin_y", "lin_z"), (k, 0.0)))
    e0 = _kinetic(w)
    p0 = w.masses @ w.linear_velocities
    top = 0.0
    for _ in range(48):
        w.step(1 / 24)
        top = max(top, _kinetic(w))
    assert top <= 1.001 * e0, (top, e0)
    np.testing.assert_allclose(w.masses @ w.linear_velocities, p0, atol=1e-6 * 25000)
    assert np.linalg.norm(w.linear_velocities[b] - w.linear_velocities[a]) < 25.0 * 1.01
