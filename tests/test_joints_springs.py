"""Spring rows against the damped oscillator's closed form, at 1/24 s and 1/60 s steps.

A 2 kg box on a Generic Spring along Z (every other axis locked) to the world, released at the
spring's rest pose under gravity: z(t) = -s + e^(-g t) (a cos w t + b sin w t) with s = m G / k,
w^2 = k / m - g^2, g = c / 2m. The fit (scipy's curve_fit) gives the centre, frequency, decay and
amplitude, compared with the closed form: an undamped spring keeps its amplitude (Blender's
Bullet does; the implicit-Euler soft row this replaced lost 40 % of it per second), a damped one
decays at c / 2m, and stiff springs (omega h from 0.75 to 30 on the 1/360 s substep) stay stable.
"""
import math

import numpy as np
import pytest
from scipy.optimize import curve_fit

from engine import Box, World
from engine.dynamics.joint_springs import spring_beta

G = 9.81
STEPS = [pytest.param(1 / 24, id="24fps"), pytest.param(1 / 60, id="60fps")]


def spring_world(k, c, m, v0=0.0):
    w = World(sleeping=False)
    locks = dict.fromkeys(("lin_x", "lin_y", "ang_x", "ang_y", "ang_z"), (0.0, 0.0))
    b = w.add_body(Box((0.1, 0.1, 0.1)), position=(0, 0, 0), mass=m, linear_velocity=(0, 0, v0))
    w.add_joint("generic_spring", b, None, position=(0, 0, 0), limits=locks,
                springs={"lin_z": (k, c)})
    return w, b


def heights(w, b, dt, seconds):
    z = []
    for _ in range(round(seconds / dt)):
        w.step(dt)
        z.append(w.positions[b, 2])
    return dt * np.arange(1, len(z) + 1), np.array(z)


def oscillator(t, centre, omega, decay, a, b):
    return centre + np.exp(-decay * t) * (a * np.cos(omega * t) + b * np.sin(omega * t))


def fit(t, z, omega, sag):
    p, _ = curve_fit(oscillator, t, z, p0=(-sag, omega, 0.0, sag, 0.0))
    return p


@pytest.mark.parametrize("dt", STEPS)
def test_undamped_spring_keeps_amplitude_period_and_sag(dt):
    m, k = 2.0, 200.0
    w, b = spring_world(k, 0.0, m)
    t, z = heights(w, b, dt, 10.0)
    sag, omega = m * G / k, math.sqrt(k / m)
    centre, om, decay, a, bb = fit(t, z, omega, sag)
    amp0 = math.hypot(a, bb)
    amp10 = amp0 * math.exp(-10.0 * decay)
    closed = -sag * (1 - np.cos(omega * t))
    print(f"\nundamped dt={dt:.4f}: amplitude {1000 * amp0:.3f} -> {1000 * amp10:.3f} mm over "
          f"10 s (m g / k {1000 * sag:.3f}), period {2 * math.pi / om:.5f} vs "
          f"{2 * math.pi / omega:.5f}, centre {1000 * centre:.3f} mm, worst distance to the "
          f"closed form {1000 * np.abs(z - closed).max():.3f} mm")
    assert abs(amp0 / sag - 1) < 0.02 and abs(amp10 / sag - 1) < 0.02
    assert abs(om / omega - 1) < 0.01                        # period 2 pi sqrt(m / k)
    assert abs(-centre / sag - 1) < 0.01                     # static sag m g / k
    # Every frame, not just the fit: within 2 % of the amplitude plus the phase drift of a
    # 1e-3 relative frequency error over 10 s (about 0.1 rad).
    assert np.abs(z - closed).max() < 0.12 * sag


@pytest.mark.parametrize("dt", STEPS)
@pytest.mark.parametrize("c", [1.0, 4.0])
def test_damped_spring_decays_at_c_over_2m(dt, c):
    m, k = 2.0, 200.0
    w, b = spring_world(k, c, m)
    t, z = heights(w, b, dt, 4.0)
    sag, g = m * G / k, c / (2 * m)
    omega_d = math.sqrt(k / m - g * g)
    centre, om, decay, a, bb = fit(t, z, omega_d, sag)
    print(f"\ndamped c={c} dt={dt:.4f}: decay {decay:.4f} /s vs c / 2m {g:.4f} "
          f"({100 * (decay / g - 1):+.2f} %), omega {om:.4f} vs {omega_d:.4f}, centre "
          f"{1000 * centre:.3f} mm vs {-1000 * sag:.3f}")
    assert abs(decay / g - 1) < 0.02
    assert abs(om / omega_d - 1) < 0.01
    assert abs(-centre / sag - 1) < 0.01


@pytest.mark.parametrize("dt", STEPS)
@pytest.mark.parametrize("homega", [0.75, 1.0, 3.0, 30.0])
def test_stiff_springs_stay_stable(dt, homega):
    """Kicked at 1 m/s: no growth, no NaN, and settled at m g / k (the stiffness is implicit
    where omega h approaches explicit Euler's limit of 2)."""
    m, h = 2.0, 1.0 / 360.0                     # the default substep at both frame rates
    k = m * (homega / h) ** 2
    w, b = spring_world(k, 0.0, m, v0=1.0)
    _, z = heights(w, b, dt, 2.0)
    sag, omega = m * G / k, homega / h
    assert np.isfinite(z).all()
    reach = np.abs(z + sag)
    n = round(0.25 / dt)
    print(f"\nstiff h omega={homega}: first {1000 * reach[:n].max():.4f} mm (v0 / omega "
          f"{1000 / omega:.4f}), last {1000 * reach[-n:].max():.6f} mm")
    assert reach.max() <= 1.0 / omega + 1e-9     # never beyond the kick's own amplitude
    assert reach[-n:].max() <= reach[:n].max() + 1e-12


def test_spring_beta_is_explicit_for_soft_springs_and_implicit_for_stiff_ones():
    h, kdiag = 1 / 360, 0.5
    k = np.array([0.25, 0.5, 0.75, 1.0, 3.0]) ** 2 / (h * h * kdiag)
    assert np.allclose([spring_beta(ki, kdiag, h) for ki in k], [0.0, 0.0, 0.5, 1.0, 1.0])
