"""Jointed chain scenes shared by the tests that assert on them (tests/test_joints_physics.py,
tests/test_joints_chain.py) and bench/bench_joints_chain.py, so the bench times the very scenes
the tests check.

Each builder returns the world and its ``pins``: one ``(body_a, body_b, local_a, local_b)`` per
point joint between two bodies (the joint's point in each body's frame), for ``worst_gap``.
"""
import math

import numpy as np

from engine import Box, Capsule, Sphere, World
from engine.core import quat


def anchor(w, body, local):
    """A body-frame point in world coordinates."""
    return w.positions[body] + quat.rotate(w.orientations[body], local)


def local_point(w, body, point):
    """A world point in the body's frame."""
    return quat.rotate_inverse(w.orientations[body], np.asarray(point) - w.positions[body])


def worst_gap(w, pins):
    """The widest a pinned point has come apart between its two bodies (m)."""
    return max(float(np.linalg.norm(anchor(w, a, la) - anchor(w, b, lb)))
               for a, b, la, lb in pins)


def heavy_end_chain(n=10, link=0.1, link_mass=0.1):
    """The 100:1 chain: n rod links (link long, link_mass each) along +X from a point joint to
    the world at the origin, and a ball of 100 link masses (radius 5 cm) at the end, released
    horizontally. Returns (world, bodies: the links then the ball, pins)."""
    w = World()
    ex = np.array([1.0, 0.0, 0.0])
    links = [w.add_body(Box((0.05, 0.01, 0.01)), position=(i + 0.5) * link * ex, mass=link_mass)
             for i in range(n)]
    end = w.add_body(Sphere(0.05), position=(n * link + 0.05) * ex, mass=100 * link_mass)
    bodies = links + [end]
    w.add_joint("point", links[0], None, position=(0, 0, 0))
    pins = []
    for i in range(1, n + 1):
        p = i * link * ex
        w.add_joint("point", bodies[i - 1], bodies[i], position=p)
        pins.append((bodies[i - 1], bodies[i], local_point(w, bodies[i - 1], p),
                     local_point(w, bodies[i], p)))
    return w, bodies, pins


def capsule_rope(n=50, both_ends=False):
    """n capsules (r 12 mm, 0.05 kg) along X at z = 1.2, neighbours overlapping at point joints,
    pinned to the world at the first end (and the last with both_ends) above a static table
    (top at z = 0.75). Returns (world, capsules, pins, the world pins' joint ids)."""
    w = World()
    w.add_body(Box((1.6, 1.6, 0.05)), position=(0, 0, 0.7), kind="static")
    step = 0.06
    along_x = quat.from_axis_angle(np.array([0.0, 1.0, 0.0]), math.pi / 2)
    x0 = -step * (n - 1) / 2
    caps = [w.add_body(Capsule(0.012, 0.03), position=(x0 + step * i, 0, 1.2),
                       orientation=along_x, mass=0.05) for i in range(n)]
    pins = []
    for i in range(n - 1):
        p = np.array([x0 + step * (i + 0.5), 0, 1.2])
        w.add_joint("point", caps[i], caps[i + 1], position=p)
        pins.append((caps[i], caps[i + 1], local_point(w, caps[i], p),
                     local_point(w, caps[i + 1], p)))
    ends = [w.add_joint("point", caps[0], None, position=(x0, 0, 1.2))]
    if both_ends:
        ends.append(w.add_joint("point", caps[-1], None, position=(-x0, 0, 1.2)))
    return w, caps, pins, ends
