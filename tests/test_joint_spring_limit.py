"""A spring pulled past its own limit: the limit folds into the spring block (issue 11).

A 2 kg box hangs on a generic_spring to the world by an anchor 5.4 m from its centre, with
stiff damped springs on lin_x and lin_y (3e4 N/m) and a limit on lin_x of (-0.8, -0.65) m,
which excludes the rest pose: the limit drags the anchor against the spring. Solved by
Gauss-Seidel as two rows on one axis, the pair never converged in a sweep and their unbalanced
impulses at the long arm spun the box up: 1e5 J of spring energy became 5e5 J (the jointed
fuzzer's spring class). Folded, the violated limit is the implicit spring its soft step is
(stiffness kl = m_eff omega^2 and damping sl, omega = 2 pi joint_hertz on the substep;
m_eff the box's mass once the arm lies along the axis), pulling at most at
WorldSettings.joint_max_push: kl dev <= sl joint_max_push, dev the violation. So it settles
where the spring's pull k |C| meets min(kl dev, sl joint_max_push): two springs in series
while the violation is small, a force-capped limit beyond.
"""
import math

import numpy as np
import pytest

from engine import Box, World
from engine.dynamics.joint_springs import limit_as_spring

C, KY = 2324.0, 3e4
LO, HI = -0.8, -0.65
STEPS = [pytest.param(1 / 24, id="24fps"), pytest.param(1 / 60, id="60fps")]


def run(dt, k, seconds=2.0):
    w = World(gravity=(0, 0, 0), sleeping=False)
    b = w.add_body(Box((0.3, 0.2, 0.25)), position=(5.4, 0, 0), mass=2.0)
    w.add_joint("generic_spring", b, None, position=(0, 0, 0), limits={"lin_x": (LO, HI)},
                springs={"lin_x": (k, C), "lin_y": (KY, C)})
    w.set_velocity(b, angular=(0, 0, 1.0))
    coords = []
    for _ in range(round(seconds / dt)):
        w.step(dt)
        coords.append(w.joint_coordinates[0].copy())
    return w, np.array(coords)


def limit_spring(w, dt):
    """(kl, sl) of the limit row on the box's 2 kg effective mass, at the world's substep
    (1/384 s at 24 fps: two collision passes of eight substeps; 1/360 s at 60 fps)."""
    passes = math.ceil(dt / w.settings.max_collision_step - 1e-9)
    h = dt / passes / math.ceil(dt / passes / w.settings.max_substep - 1e-9)
    omega = 2.0 * math.pi * min(w.settings.joint_hertz, 0.5 / h)
    return limit_as_spring(2.0, omega, w.settings.joint_damping_ratio, h)


@pytest.mark.parametrize("dt", STEPS)
def test_spring_held_past_its_limit_stays_bounded(dt):
    k = 8e5
    w, coords = run(dt, k)
    # The springs' energy never exceeds what the limit can force into them (the whole range
    # of the lin_x spring at the far bound) plus the start's spin (1 rad/s: a few mJ).
    spring = 0.5 * k * coords[:, 0] ** 2 + 0.5 * KY * coords[:, 1] ** 2
    assert spring.max() <= 0.5 * k * LO ** 2
    vel = np.concatenate((w.linear_velocities, w.angular_velocities), axis=1)
    assert np.all(np.isfinite(vel))
    assert np.abs(vel).max() < 1.0            # settled (the dampers took the start's motion)
    assert abs(coords[-1, 1]) < 1e-3          # no sideways throw along lin_y


@pytest.mark.parametrize("dt", STEPS)
def test_a_soft_spring_and_the_limit_settle_as_two_springs_in_series(dt):
    k = 8e5
    w, coords = run(dt, k)
    kl, sl = limit_spring(w, dt)
    dev = k * -HI / (k + kl)
    assert kl * dev < sl * w.settings.joint_max_push    # really the uncapped regime
    assert coords[-1, 0] == pytest.approx(HI + dev, rel=0.01)


@pytest.mark.parametrize("dt", STEPS)
def test_a_stiff_spring_pulls_the_limit_as_far_as_its_capped_push_allows(dt):
    k = 2e6
    w, coords = run(dt, k)
    kl, sl = limit_spring(w, dt)
    hold = sl * w.settings.joint_max_push          # the most the limit pulls with
    assert kl * (k * -HI / (k + kl)) > hold         # really the capped regime
    assert coords[-1, 0] == pytest.approx(-hold / k, rel=0.01)
