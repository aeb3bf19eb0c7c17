"""Exact distance and closest points of a polytope and a triangle that are apart, batched.

For two disjoint convex polyhedra a closest pair of points can always be taken as one of
    (1) a vertex of A and its closest point on the triangle,
    (2) the closest points of an edge of A and an edge of the triangle,
    (3) a triangle vertex and its projection into the interior of a face of A
(a vertex of the triangle whose closest point on A is on an edge of A is covered by (2), since
the vertex ends a triangle edge). Every candidate is a distance between actual points of the
two shapes, so the minimum is the exact distance: no iteration, no tolerance, a fixed number
of numpy calls (mesh_contacts uses it for the few rows per step whose face clipping found
nothing, where GJK's iterations cost far more than the arithmetic).

Rows must be apart (a SAT gap > 0): for overlapping shapes the minimum above is meaningless.
"""
import numpy as np

from ..shapes.decompose import closest_point_triangle
from .clip import segment_closest


def _dot(a, b):
    return np.einsum("...i,...i->...", a, b)


def polytope_triangle_closest(table, ids, t):
    """Closest points of R (polytope, triangle) rows, all in the polytope's local frame.

    ids (R,) shape ids of ``table`` (polytopes), t (R, 3, 3) triangles. Returns distance (R,),
    point_a (R, 3) on the polytope, point_b (R, 3) on the triangle, normal (R, 3) unit from
    the polytope to the triangle."""
    r = len(ids)
    rows = np.arange(r)
    vmax = int(table.npoints[ids].max())
    emax = int(table.nedges[ids].max())
    fmax = int(table.nfaces[ids].max())
    P = table.points[ids, :vmax]                                         # padding repeats
    # (1) vertices of A against the triangle.
    tv = np.repeat(t, vmax, axis=0)
    q1 = closest_point_triangle(P.reshape(-1, 3), tv[:, 0], tv[:, 1], tv[:, 2]).reshape(r, vmax, 3)
    d1 = _dot(q1 - P, q1 - P)
    # (2) edges of A against the triangle's edges (padded edges repeat edge 0).
    ed = table.edges[ids, :emax]
    a0 = np.take_along_axis(P, ed[:, :, :1], axis=1)
    a1 = np.take_along_axis(P, ed[:, :, 1:], axis=1)
    b0, b1 = t, np.roll(t, -1, axis=1)
    sh = (r, emax, 3, 3)
    _, _, cp, cq = segment_closest(np.broadcast_to(a0[:, :, None], sh).reshape(-1, 3),
                                   np.broadcast_to(a1[:, :, None], sh).reshape(-1, 3),
                                   np.broadcast_to(b0[:, None], sh).reshape(-1, 3),
                                   np.broadcast_to(b1[:, None], sh).reshape(-1, 3))
    cp, cq = cp.reshape(r, 3 * emax, 3), cq.reshape(r, 3 * emax, 3)
    d2 = _dot(cq - cp, cq - cp)
    # (3) triangle vertices projected into A's faces (outside the face's plane only).
    pl = table.planes[ids, :fmax]
    s = np.matmul(t, pl[:, :, :3].transpose(0, 2, 1)) - pl[:, None, :, 3]   # (R, 3, F)
    x = t[:, :, None] - s[..., None] * pl[:, None, :, :3]                 # (R, 3, F, 3)
    loops = table.face_loops[ids, :fmax]                                 # (R, F, W), -1 pads
    loops = np.where(loops >= 0, loops, loops[:, :, :1])
    lv = P[rows[:, None, None], loops]                                   # (R, F, W, 3)
    ev = np.roll(lv, -1, axis=2) - lv
    side = _dot(np.cross(ev[:, None], x[:, :, :, None] - lv[:, None]),
                pl[:, None, :, None, :3])                                # (R, 3, F, W)
    real = np.arange(fmax) < table.nfaces[ids][:, None]
    inside = np.all(side >= 0.0, axis=3) & (s > 0.0) & real[:, None]
    d3 = np.where(inside, s * s, np.inf).reshape(r, -1)
    # The nearest candidate of the three kinds.
    dist2 = np.concatenate((d1, d2, d3), axis=1)
    pa = np.concatenate((P, cp, x.reshape(r, -1, 3)), axis=1)
    pb = np.concatenate((q1, cq, np.broadcast_to(t[:, :, None], x.shape).reshape(r, -1, 3)),
                        axis=1)
    best = np.argmin(dist2, axis=1)
    point_a, point_b = pa[rows, best], pb[rows, best]
    dist = np.sqrt(dist2[rows, best])
    normal = (point_b - point_a) / np.maximum(dist, 1e-300)[:, None]
    return dist, point_a, point_b, normal
