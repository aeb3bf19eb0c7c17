"""Contact manifolds for polytope pairs: face clipping, edge-edge points, reduction to 4 points.

Face contact (the SAT chose a face axis). The reference face is the SAT face; the incident face
is the face of the other shape most anti-parallel to it. Clipping the incident polygon against
the side planes of the reference face (Sutherland-Hodgman) yields the intersection of the two
polygons seen along the reference normal. Its vertices are exactly

    (1) incident vertices inside every reference side plane,
    (2) reference vertices inside the incident polygon (lifted onto the incident plane),
    (3) crossings of an incident edge with a reference side plane, within that reference edge,

so instead of clipping plane after plane we evaluate the three candidate sets in a fixed
feature order (engine/collision/clip_kernels.py, compiled, one pair at a time): the same polygon, and
every point knows which features made it. Those
features become the warm-starting ids; a crossing within SNAP of a vertex takes that vertex's id
(a reference vertex takes a coincident incident vertex's id), so stacked boxes with coincident
edges keep their ids when jitter moves a corner from one side of a plane to the other.

Points are kept if their separation along the contact normal is <= margin (speculative
contacts), stored midway between the two surfaces, and reduced to at most 4 by the usual rule
(Box2D, Bullet, Jolt): deepest, farthest from it, largest triangle, largest quad.

Edge contact (the SAT chose an edge-edge axis). Crossing edges touch at one point, but when the
faces beside the edges are within EDGE_CLIP_DEG of the axis (two crossed beams a few degrees
apart: the edge axis beats the faces by more than the face bias, yet the beams touch over an
area) those faces are clipped as above, with the SAT axis as the contact normal and every
separation measured along it; otherwise one point at the closest points of the two edges.
convex_pairs.polytope_rows runs all of it for every pair in one kernel call
(clip_kernels.manifolds; clip_kernels.reduce4_row picks the 4 points).
"""
import numpy as np

from ..core import detmath
from ..core.vec import columns, cross
from .clip_kernels import (  # noqa: F401  (the ids' layout, imported by other modules from here)
    ID_EDGE,
    ID_FACE,
    ID_FALLBACK,
    ID_ROUND,
    INSIDE_TOL,
    SNAP,
    T_CROSSING,
    T_HULL_VERTEX,
    T_INC_VERTEX,
    T_REF_VERTEX,
    segment_closest_rows,
)

# Feature-id layout (int64). Face contacts, written in terms of A and B (not reference and
# incident), so a point keeps its id when the SAT switches between A's face, B's face and an
# edge axis clipped between the same two faces (warm starting survives the switch):
#   bits 0-11 loop index on A's face, 12-23 loop index on B's face, 24-25 feature type
#   (vertex of B, vertex of A, crossing), 26-41 B's face, 42-57 A's face, 59-61 contact kind.
# A sunk vertex (T_HULL_VERTEX) holds the incident shape's vertex index in bits 0-23.
# Edge contacts: bits 0-23 edge of B, 24-47 edge of A, 59-61 kind.
# SNAP: distances below SNAP * shape size count as coincident features (ids) and duplicate
# points; INSIDE_TOL: inclusion tolerance of the inside tests, relative to shape size.


def tangent_basis(n):
    """Unit u, v with (u, v, n) right-handed (Duff et al. 2017, branch-free)."""
    sign = np.where(n[:, 2] >= 0, 1.0, -1.0)
    a = -1.0 / (sign + n[:, 2])
    b = n[:, 0] * n[:, 1] * a
    u = columns(1.0 + sign * n[:, 0] * n[:, 0] * a, sign * b, -sign * n[:, 0])
    v = cross(n, u)
    return u, v


def segment_closest(p0, p1, q0, q1, eps=1e-12):
    """Closest points of segments [p0, p1] and [q0, q1] (all (M, 3)) -> (s, t, cp, cq), one
    compiled call (clip_kernels._segment_closest per row)."""
    p0, p1, q0, q1 = (np.ascontiguousarray(x, dtype=np.float64) for x in (p0, p1, q0, q1))
    m = len(p0)
    s, t = np.empty(m), np.empty(m)
    cp, cq = np.empty((m, 3)), np.empty((m, 3))
    segment_closest_rows(p0, p1, q0, q1, float(eps), s, t, cp, cq)
    return s, t, cp, cq


# Edge axes between nearly parallel faces get a clipped face manifold (see edge_face_contact)
# when the better aligned of the two edges' faces is within EDGE_CLIP_DEG of the axis, and the
# other face within EDGE_INC_DEG (so it is a well-conditioned height field along the axis).
# Every clipped point has its true gap along the axis, so any threshold is safe; it only
# decides where a lone edge point is enough. Beams tipping across each other meet edge axes
# a few degrees off their faces: a threshold of 3-5 deg still let a beam end sink several cm,
# while 10 deg and anything up to 89 deg (Jolt clips whenever both faces exist) behaved the
# same on a beam tower and on crossed-beam drops. Above 10 deg the contact is
# mostly a ridge crossing whose clipped points only cluster near the crossing: one point.
EDGE_CLIP_DEG = 10.0
EDGE_INC_DEG = 75.0
EDGE_CLIP_COS = float(detmath.cos(np.radians(EDGE_CLIP_DEG)))
EDGE_INC_COS = float(detmath.cos(np.radians(EDGE_INC_DEG)))
