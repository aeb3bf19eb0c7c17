"""Separating-axis queries of a polytope against one-sided triangles, batched over M pairs.

Everything is in the polytope's local frame: its points, planes and edges come from the
ShapeTable, the triangles t (M, 3, 3) and their unit normals N (M, 3) (pointing at the
polytope's side, see mesh_contacts) are given in that frame.

Axes and their separation (the projection gap from the polytope A to the triangle B):
- the triangle's face axis -N: min(P . N) - t0 . N;
- the polytope's face axes n_f: min_k(n_f . t_k) - d_f;
- edge-edge axes, only those of *Minkowski-face* pairs (Gregorius, GDC 2013): a polytope
  edge e (Gauss-map arc from n1 to n2, its two face normals) and a triangle edge k. The
  triangle, a flat polytope, has faces N and -N; its edge k's arc runs from N to -N through
  the edge's outward in-plane normal o_k, and the Minkowski difference A - B negates it.
  The arcs meet iff the great circle normal to the triangle edge direction d_k crosses the
  arc (n1, n2) strictly, i.e. (n1 . d_k) and (n2 . d_k) have opposite signs, at
  u = |n2 . d_k| n1 + |n1 . d_k| n2 (a positive mix of n1 and n2, so on the arc), and that
  crossing lies on the negated half circle: u . o_k < 0. Then u is an outward normal of A at
  e and -u one of the triangle at edge k, so the support points along u are the edges
  themselves and the separation is exactly (t_k - a_e) . u / |u| (a_e a point of edge e), with
  no projection of the other points: O(E) per triangle edge instead of O(E (V + 3)).

The maximum over these candidates is the exact separating-axis answer for a polytope against
the triangle seen from its front (the triangle's back face -N is not a candidate: the shape's
centre is on the front side by construction). Every value is a true projection gap, so the
maximum is a lower bound of the distance when apart and minus the penetration depth when
overlapping, like the exhaustive query over every edge pair (full projections) it replaces;
tests/test_mesh_sat.py checks both against brute force.

Degenerate pairs (an edge of A parallel to the triangle's plane or to a triangle edge, or an
arc ending exactly on the crossing great circle) are left out: their axis is then one of the
face axes (N or n1, n2), which are always evaluated.
"""
import numpy as np

from . import mesh_kernels

# A crossing counts if |u| (u a mix of two unit normals weighted by sines of the angles to
# the triangle edge) exceeds this times the edge length: the axis direction is then defined
# to ~1e-11 relative (the exhaustive query used the same threshold on |d_e x d_k|).
PARALLEL_SIN = 1e-5


def face_queries(points, planes, t, N):
    """Triangle face and polytope face separations.

    points (M, V, 3) polytope points (padding repeats a real point), planes (M, F, 4) (padding
    repeats a real plane), t (M, 3, 3), N (M, 3). Returns sep_t (M,), sep_f (M,) the best
    polytope face (the first of equals), face (M,) its index (mesh_kernels.face_row per
    row)."""
    m = len(t)
    sep_t, sep_f, face = np.empty(m), np.empty(m), np.zeros(m, np.int64)
    f64 = np.float64
    points, planes = np.asarray(points, f64), np.asarray(planes, f64)
    t, N = np.asarray(t, f64), np.asarray(N, f64)
    for r in range(m):      # (tests and tools: the step runs face_row inside its kernel)
        sep_t[r], sep_f[r], face[r] = mesh_kernels.face_row(
            points, planes, r, points.shape[1], planes.shape[1], t[r], N[r, 0], N[r, 1],
            N[r, 2])
    return sep_t, sep_f, face


_CONSTS: dict = {}


def _edge_consts(table):
    """Per-shape edge data laid out for the edge query, computed once per ShapeTable (the
    cache holds the edge-normals array it was made from): face normals n1, n2 of every edge
    as (S, 3, 2, E) (coordinates first, so one matmul gives contiguous (k, e) planes), their
    offsets n . a_e through the edge (S, 2, E) and cos(n1, n2) (S, E)."""
    key = id(table)
    hit = _CONSTS.get(key)
    if hit is not None and hit[0] is table.edge_normals:
        return hit[1]
    nrm = table.edge_normals                                            # (S, E, 2, 3)
    a0 = np.take_along_axis(table.points, table.edges[:, :, :1], axis=1)  # (S, E, 3)
    h = np.einsum("sepi,sei->spe", nrm, a0)
    cos12 = np.einsum("sei,sei->se", nrm[:, :, 0], nrm[:, :, 1])
    consts = (np.ascontiguousarray(nrm.transpose(0, 3, 2, 1)), h, cos12)
    if len(_CONSTS) > 64:
        _CONSTS.clear()
    _CONSTS[key] = (table.edge_normals, consts)
    return consts


def edge_query(table, ids, t, N):
    """Best Minkowski-face edge pair per row.

    Returns sep_e (M,) (-inf where no pair qualifies), edge (M,) the polytope edge, k (M,) the
    triangle edge (t[k] -> t[(k + 1) % 3]), axis (M, 3) unit, oriented from A to the triangle
    (zero where no pair qualifies). Ties go to the lowest (k, edge).

    Per row, triangle edge k and polytope edge e: the crossing test first (the sign of
    n1 . d_k against n2 . d_k), and only the pairs whose arc crosses (the polytope's
    silhouette edges seen along the triangle edge, a small fraction) go on to the
    orientation test and the gap (mesh_kernels.edge_row per row)."""
    nrm_all, h_all, _ = _edge_consts(table)
    ids = np.asarray(ids, dtype=np.int64)
    t, N = np.asarray(t, np.float64), np.asarray(N, np.float64)
    m = len(ids)
    best, edge, k = np.full(m, -np.inf), np.zeros(m, np.int64), np.zeros(m, np.int64)
    axis = np.zeros((m, 3))
    sc = np.empty((6, 3))
    for r in range(m):      # (tests and tools: the step runs edge_row inside its kernel)
        sep, e, kk = mesh_kernels.edge_row(ids[r], table.nedges[ids[r]], t[r], N[r, 0],
                                           N[r, 1], N[r, 2], nrm_all, h_all, PARALLEL_SIN,
                                           axis[r], sc)
        if sep > -np.inf:
            best[r], edge[r], k[r] = sep, e, kk
    return best, edge, k, axis


def edge_query_exhaustive(table, ids, t, emax=None):
    """Every polytope edge x triangle edge axis, both orientations, full projections of all
    points (the query edge_query replaces; for tests and benchmarks). Same returns."""
    m = len(ids)
    rows = np.arange(m)
    ne = table.nedges[ids]
    emax = int(ne.max()) if emax is None else emax
    vmax = int(table.npoints[ids].max())
    P = table.points[ids, :vmax]
    da = table.edge_dirs[ids, :emax]
    te = np.roll(t, -1, axis=1) - t
    dt = te / np.sqrt(np.einsum("mki,mki->mk", te, te))[:, :, None]
    c = np.cross(da[:, :, None, :], dt[:, None, :, :])                 # (M, E, 3, 3)
    cl = np.sqrt(np.einsum("mekx,mekx->mek", c, c))
    ok = (cl > PARALLEL_SIN) & (np.arange(emax)[None, :, None] < ne[:, None, None])
    c = c / np.where(ok, cl, 1.0)[..., None]
    pa = np.einsum("mekx,mvx->mekv", c, P)
    pt = np.einsum("mekx,mjx->mekj", c, t)
    s_plus = pt.min(axis=3) - pa.max(axis=3)
    s_minus = pa.min(axis=3) - pt.max(axis=3)
    se = np.where(ok, np.maximum(s_plus, s_minus), -np.inf).reshape(m, -1)
    flat = np.argmax(se, axis=1)
    sign = np.where(s_plus.reshape(m, -1)[rows, flat] >= s_minus.reshape(m, -1)[rows, flat],
                    1.0, -1.0)
    return se[rows, flat], flat // 3, flat % 3, c.reshape(m, -1, 3)[rows, flat] * sign[:, None]
