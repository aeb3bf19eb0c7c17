"""World bounding boxes of every body, in one compiled pass over the bodies.

A collision pass needs, for every body, its rotation matrix and its world box: the box of its
shape at its pose, swelled by the shape's radius, swept by the motion the pass may bring
(its linear displacement plus what its spin can move any point: |w| dt times its reach about
the centre of mass) and fattened by ``aabb_margin``. Static bodies are not swept.

- Polytopes, spheres, capsules, triangle meshes (whose core points are the 8 corners of their
  local box): the min/max of the rotated core points, each shape read up to its own point
  count (the table pads every shape to the largest one).
- Cylinders and cones: in closed form (a disc of radius r and unit normal a spans
  r sqrt(1 - a_i^2) along world axis i), as engine.shapes.curved.curved_aabb gives them to
  the offline callers (compound part boxes, the overlays).

The rotation matrices are the ones engine.core.quat.to_matrix gives, term for term
(quat.matrix_of).
"""
import math

import numpy as np

from ..core.jit import kernel
from ..core.kinds import ShapeKind
from ..core.quat import matrix_of

_CYLINDER = int(ShapeKind.CYLINDER)
_CONE = int(ShapeKind.CONE)


@kernel
def _shape_box(s, r, kind, npoints, points, radius, curved_radius, half_height, lo, hi):
    """lo, hi (3,) = the box of shape s rotated by r, about its origin."""
    if kind[s] == _CYLINDER or kind[s] == _CONE:
        rad, hh = curved_radius[s], half_height[s]
        for i in range(3):
            a = r[i, 2]
            disc = rad * math.sqrt(max(1.0 - a * a, 0.0))
            top, bot = hh * a, -hh * a
            top_lo, top_hi = top, top
            if kind[s] == _CYLINDER:
                top_lo, top_hi = top - disc, top + disc
            lo[i] = min(top_lo, bot - disc)
            hi[i] = max(top_hi, bot + disc)
        return
    for i in range(3):
        lo[i] = np.inf
        hi[i] = -np.inf
    for v in range(npoints[s]):
        p = points[s, v]
        for i in range(3):
            c = r[i, 0] * p[0] + r[i, 1] * p[1] + r[i, 2] * p[2]
            lo[i] = min(lo[i], c)
            hi[i] = max(hi[i], c)
    for i in range(3):
        lo[i] -= radius[s]
        hi[i] += radius[s]


@kernel
def body_bounds(sid, q, pos, com, vel, moving, sweep, margin, kind, npoints, points, radius,
                curved_radius, half_height, bound_radius, rot, lo, hi):
    """rot (N, 3, 3), lo, hi (N, 3) of every body: shape ids sid (N,), orientations q (N, 4),
    origins pos (N, 3), centres of mass com (N, 3, body frame), velocities vel (N, 6);
    moving (N,) bool sweeps a body by its motion over ``sweep`` seconds (0: no sweep); every
    box grows by margin. The rest is the ShapeTable's arrays."""
    for n in range(len(sid)):
        s = sid[n]
        matrix_of(q[n], rot[n])
        _shape_box(s, rot[n], kind, npoints, points, radius, curved_radius, half_height,
                   lo[n], hi[n])
        grow = margin
        if moving[n]:
            c = com[n]
            reach = bound_radius[s] + math.sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2])
            w = vel[n, 3:]
            grow += math.sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]) * sweep * reach
        for i in range(3):
            d = vel[n, i] * sweep if moving[n] else 0.0
            lo[n, i] += pos[n, i] + min(d, 0.0) - grow
            hi[n, i] += pos[n, i] + max(d, 0.0) + grow


def world_bounds(table, sid, q, pos, com, vel, moving, sweep, margin):
    """(rot (N, 3, 3), lo (N, 3), hi (N, 3)): see body_bounds. table: the ShapeTable."""
    n = len(sid)
    rot, lo, hi = np.empty((n, 3, 3)), np.empty((n, 3)), np.empty((n, 3))
    body_bounds(np.ascontiguousarray(sid, dtype=np.int64), q, pos, com, vel, moving,
                float(sweep), float(margin), table.kind, table.npoints, table.points,
                table.radius, table.curved_radius, table.half_height, table.bound_radius,
                rot, lo, hi)
    return rot, lo, hi


@kernel(inline="always")
def _len3(x, y, z):
    return math.sqrt(x * x + y * y + z * z)


@kernel
def pair_margins(ia, ib, sid, bound_radius, com, x, pos, vel, spec, dt, out):
    """out (M,): the speculative margin of each body pair (World._speculative_margin): spec
    plus how far the two surfaces can close over dt, the relative speed of the centres of
    mass plus each body's spin times its arm, the arm bounded by its reach and by the distance
    to the other body's far side."""
    for i in range(ia.shape[0]):
        a = ia[i]
        b = ib[i]
        ra = bound_radius[sid[a]]
        rb = bound_radius[sid[b]]
        reach_a = ra + _len3(com[a, 0], com[a, 1], com[a, 2])
        reach_b = rb + _len3(com[b, 0], com[b, 1], com[b, 2])
        arm_a = min(reach_a, _len3(pos[b, 0] - x[a, 0], pos[b, 1] - x[a, 1],
                                   pos[b, 2] - x[a, 2]) + rb)
        arm_b = min(reach_b, _len3(pos[a, 0] - x[b, 0], pos[a, 1] - x[b, 1],
                                   pos[a, 2] - x[b, 2]) + ra)
        rel = _len3(vel[b, 0] - vel[a, 0], vel[b, 1] - vel[a, 1], vel[b, 2] - vel[a, 2])
        spin = (_len3(vel[a, 3], vel[a, 4], vel[a, 5]) * arm_a
                + _len3(vel[b, 3], vel[b, 4], vel[b, 5]) * arm_b)
        out[i] = spec + dt * (rel + spin)
