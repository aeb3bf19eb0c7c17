"""A joint torn open closes at WorldSettings.joint_max_push, not at its bias rate times the gap.

Two 1 kg spheres joined by a joint at their midpoint; one is then moved 5 m away (as a violent
impact or a conflicting constraint can tear a joint open). The soft step corrects an error C at
bias_rate C (158/s at 180 Hz on the 1/360 s substep): 160 m/s for a metre, which on a needle
with a long arm became 1e5 m/s (the jointed fuzzer's seed 280, issue 11). Capped, the anchors
close at no more than joint_max_push (30 m/s, 1.25 m per 1/24 s frame), and the joint still
closes fully.
"""
import numpy as np
import pytest

from engine import Sphere, World

TEAR = 5.0
DT = 1 / 24

KINDS = [pytest.param("point", id="point"), pytest.param("fixed", id="fixed"),
         pytest.param("generic", id="generic-limited")]


def torn(kind, **settings):
    w = World(gravity=(0, 0, 0), sleeping=False, **settings)
    a = w.add_body(Sphere(0.1), position=(0, 0, 0), mass=1.0)
    b = w.add_body(Sphere(0.1), position=(0.5, 0, 0), mass=1.0)
    limits = {"lin_x": (0.0, 0.0), "lin_y": (0.0, 0.0), "lin_z": (0.0, 0.0)} \
        if kind == "generic" else None
    w.add_joint(kind, a, b, position=(0.25, 0, 0), limits=limits)
    w.set_pose(b, position=(TEAR + 0.5, 0, 0))   # torn open along x
    return w, a, b


def gaps(w, a, b, frames):
    """The tear (centre distance beyond the joined 0.5 m) at the start and after each frame."""
    out = [TEAR]
    for _ in range(frames):
        w.step(DT)
        out.append(np.linalg.norm(w.positions[b] - w.positions[a]) - 0.5)
    return np.array(out)


@pytest.mark.parametrize("kind", KINDS)
def test_a_torn_joint_closes_at_the_capped_speed(kind):
    w, a, b = torn(kind)
    g = gaps(w, a, b, 24)
    closed = -np.diff(g)
    assert closed.max() <= w.settings.joint_max_push * DT * 1.02   # per frame, at most
    assert closed[0] >= w.settings.joint_max_push * DT * 0.9       # ... and at about the cap
    assert abs(g[-1]) < 1e-3                                       # and it does close


def test_without_the_cap_it_closes_at_the_bias_rate():
    """The control: with the cap lifted, the same joint closes far faster than the cap."""
    w, a, b = torn("point", joint_max_push=1e9)
    g = gaps(w, a, b, 1)
    assert g[0] - g[1] > 2.0 * 30.0 * DT


def test_a_torn_point_grid_closes_at_the_capped_speed():
    """The same on engine.dynamics.joint_points' path (large point-lock systems with loops): an 8 x 8
    sheet of linked spheres with its corner sphere torn 5 m out of the sheet."""
    w = World(gravity=(0, 0, 0), sleeping=False)
    n, s = 8, 0.5
    ids = [w.add_body(Sphere(0.1), position=(i * s, j * s, 0), mass=1.0)
           for i in range(n) for j in range(n)]
    for i in range(n):
        for j in range(n):
            if i + 1 < n:
                w.add_joint("point", ids[i * n + j], ids[(i + 1) * n + j],
                            position=((i + 0.5) * s, j * s, 0))
            if j + 1 < n:
                w.add_joint("point", ids[i * n + j], ids[i * n + j + 1],
                            position=(i * s, (j + 0.5) * s, 0))
    w.set_pose(ids[0], position=(0, 0, TEAR))
    g = [TEAR]   # joint 0's gap: the corner's anchor to its +x neighbour's
    for _ in range(24):
        w.step(DT)
        g.append(np.linalg.norm(w.joint_coordinates[0, :3]))
    closed = -np.diff(g)
    assert closed.max() <= w.settings.joint_max_push * DT * 1.02
    assert g[-1] < 5e-3   # closed (Gauss-Seidel on a swinging sheet: millimetres, not metres)
