"""Nets and ladders of joints, at rest and swinging, at the default settings (issue 25).

The layout of a peer engine's joint benchmark (bench/bench_joint_nets.py): spheres of radius
0.4 m (density 1000) in a vertical grid 1 m apart, each joined to its right and lower
neighbour by a point joint at the midpoint, gravity -10. Hanging from a static top row this
is equilibrium; the truth each test holds to is that and the energy it starts with.

Before the fix (joint locks solved by Gauss-Seidel at h omega = pi, relaxed once a substep)
the 2 x 12 ladder reached 150 m/s, the 30 x 30 net opened 0.18-0.53 m, and the net hung by two
corners gained 3.5e6 J (bench/bench_joint_nets.py with HB_ENGINE_ROOT on the old engine).
"""
import numpy as np
import pytest

from engine import Sphere, World
from engine.core import quat

RADIUS, SPACING, G = 0.4, 1.0, 10.0
# pybullet at Blender's settings (240 Hz, 10 iterations) on the net hung by two corners, as
# issue 25 measured it: worst link stretch 23.5 mm. bench/bench_joint_nets.py's pybullet runs
# of this layout read otherwise: with the corners as static spheres it lets the net fall
# away (11 m); with dynamic corners pinned to static anchors, 3.3 mm, where ours stretches
# 6.4 mm at 1/24 and 7.3 mm at 1/60 (the soft locks' give under 54 t: see
# engine.dynamics.joint_solver.SWEPT_HERTZ_RATE).
PYBULLET_CORNERS_STRETCH = 0.0235


def _net(cols, rows, pins, **settings):
    """The world, the links (L, 2), the start centres and the static mask."""
    c, r = (a.ravel() for a in np.meshgrid(np.arange(cols), np.arange(rows), indexing="ij"))
    pos = np.stack((c * SPACING, 0.0 * c, -r * SPACING), 1).astype(float)
    static = (r == 0) if pins == "top" else ((r == 0) & ((c == 0) | (c == cols - 1)))
    w = World(gravity=(0, 0, -G), sleeping=False, **settings)
    for p, s in zip(pos, static):
        w.add_body(Sphere(RADIUS), position=p, kind="static" if s else "dynamic", density=1000)
    idx = np.arange(cols * rows).reshape(cols, rows)
    links = np.concatenate((np.stack((idx[:-1].ravel(), idx[1:].ravel()), 1),
                            np.stack((idx[:, :-1].ravel(), idx[:, 1:].ravel()), 1)))
    links = links[~(static[links[:, 0]] & static[links[:, 1]])]
    for a, b in links:
        w.add_joint("point", int(a), int(b), position=0.5 * (pos[a] + pos[b]))
    return w, links, pos, static


def _gaps(w, links, pos0):
    """Distance between each joint's two anchors (fixed in each sphere at the midpoint)."""
    half = 0.5 * (pos0[links[:, 1]] - pos0[links[:, 0]])
    q = w.orientations
    pa = w.positions[links[:, 0]] + quat.rotate(q[links[:, 0]], half)
    pb = w.positions[links[:, 1]] - quat.rotate(q[links[:, 1]], half)
    return np.linalg.norm(pb - pa, axis=1)


def _energy(w, static):
    """Kinetic (a sphere's inertia is the same about every axis) plus gravity's, J."""
    dyn = ~static
    m = w.masses[dyn]
    v, om = w.linear_velocities[dyn], w.angular_velocities[dyn]
    i = 0.4 * m * RADIUS ** 2
    return float(np.sum(0.5 * m * (v * v).sum(1) + 0.5 * i * (om * om).sum(1)
                        + m * G * w.positions[dyn, 2]))


def _run(w, links, pos0, static, dt, seconds=2.0):
    """Per frame: (time, fastest body m/s, worst gap m, worst stretch m, energy J)."""
    rows = []
    for f in range(round(seconds / dt)):
        w.step(dt)
        dist = np.linalg.norm(w.positions[links[:, 1]] - w.positions[links[:, 0]], axis=1)
        rows.append(((f + 1) * dt,
                     float(np.linalg.norm(w.linear_velocities[~static], axis=1).max()),
                     float(_gaps(w, links, pos0).max()),
                     float(np.maximum(dist - SPACING, 0.0).max()), _energy(w, static)))
    return np.array(rows)


@pytest.mark.parametrize("dt", [1 / 24, 1 / 60])
def test_a_ladder_hanging_at_rest_stays_at_rest(dt):
    """2 x 12, top row static: once the joints have taken up the load (their soft step sags
    each link well under a millimetre), nothing moves faster than 1 mm/s; it never gains
    energy. Before: 150 m/s."""
    w, links, pos0, static = _net(2, 12, "top")
    e0 = _energy(w, static)
    t, speed, gap, _, energy = _run(w, links, pos0, static, dt).T
    assert speed[t >= 0.5].max() < 1e-3, speed[t >= 0.5].max()
    assert speed.max() < 0.2, speed.max()       # the take-up of the load, nothing more
    assert gap.max() < 2e-3, gap.max()
    assert energy.max() <= e0 + 1e-9 * abs(e0), energy.max() - e0


@pytest.mark.parametrize("dt", [1 / 24, 1 / 60])
def test_a_30_by_30_net_hung_from_its_top_row_holds(dt):
    """The worst joint gap over 2 s stays under 20 mm (pybullet at Blender's settings: 6.5 mm
    in the same bench run; ours before: 178-532 mm), it settles (under 1 mm/s by 3 s: the
    load reaches the 30th row by Gauss-Seidel, 0.4-2 mm/s at 2 s) and never gains energy."""
    w, links, pos0, static = _net(30, 30, "top")
    e0 = _energy(w, static)
    t, speed, gap, _, energy = _run(w, links, pos0, static, dt, seconds=3.0).T
    assert gap[t <= 2.0].max() <= 0.020, gap.max()
    assert speed[-1] < 1e-3, speed[-1]
    assert energy.max() <= e0 + 1e-9 * abs(e0), energy.max() - e0


@pytest.mark.parametrize("dt", [1 / 24, 1 / 60])
def test_a_net_hung_by_two_corners_swings_without_gaining_energy(dt):
    """20 x 20 hung by its two top corners falls into a swinging catenary: its energy is
    never above its start, and no link stretches more than pybullet's does (before: the net
    gained 3.5e6 J and links stretched 40-51 mm)."""
    w, links, pos0, static = _net(20, 20, "corners")
    e0 = _energy(w, static)
    _, speed, _, stretch, energy = _run(w, links, pos0, static, dt).T
    assert speed.max() > 0.1            # it does swing
    assert energy.max() <= e0 + 1e-9 * abs(e0), energy.max() - e0
    assert stretch.max() <= PYBULLET_CORNERS_STRETCH, stretch.max()
