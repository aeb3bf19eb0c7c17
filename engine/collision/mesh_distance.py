"""Exact distance and closest points of a polytope and a triangle that are apart, batched.

For two disjoint convex polyhedra a closest pair of points can always be taken as one of
    (1) a vertex of A and its closest point on the triangle,
    (2) the closest points of an edge of A and an edge of the triangle,
    (3) a triangle vertex and its projection into the interior of a face of A
(a vertex of the triangle whose closest point on A is on an edge of A is covered by (2), since
the vertex ends a triangle edge). Every candidate is a distance between actual points of the
two shapes, so the minimum is the exact distance: no iteration, no tolerance, one compiled
loop over the candidates (engine.collision.mesh_kernels.closest_row; mesh_contacts uses it for the
few rows per step whose face clipping found nothing, where GJK's iterations cost far more).

Rows must be apart (a SAT gap > 0): for overlapping shapes the minimum above is meaningless.
"""
import numpy as np

from .mesh_kernels import closest_row


def polytope_triangle_closest(table, ids, t):
    """Closest points of R (polytope, triangle) rows, all in the polytope's local frame.

    ids (R,) shape ids of ``table`` (polytopes), t (R, 3, 3) triangles. Returns distance (R,),
    point_a (R, 3) on the polytope, point_b (R, 3) on the triangle, normal (R, 3) unit from
    the polytope to the triangle. Ties go to the first candidate in the order above (vertices,
    then edge pairs by polytope edge then triangle edge, then triangle vertices by face)."""
    ids = np.asarray(ids, dtype=np.int64)
    t = np.asarray(t, dtype=np.float64)
    r = len(ids)
    dist, pa, pb = np.empty(r), np.zeros((r, 3)), np.zeros((r, 3))
    scratch = np.empty((4, 3))
    for i in range(r):      # (tests and tools: the step runs closest_row inside its kernel)
        dist[i] = closest_row(ids[i], t[i], table.points, table.npoints, table.edges,
                              table.nedges, table.planes, table.nfaces, table.face_loops,
                              table.face_sizes, pa[i], pb[i], *scratch)
    normal = (pb - pa) / np.maximum(dist, 1e-300)[:, None]
    return dist, pa, pb, normal
