"""Batched EPA (Expanding Polytope Algorithm): penetration depth of M pairs of swollen cores.

GJK stops once it knows the cores overlap (the origin is inside D = B - A). EPA then grows a
polytope P inside D, starting from GJK's simplex, always pushing out the face of P closest to the
origin by adding the support point of D along that face's normal, until the closest face lies on
the boundary of D. Swollen shapes add their radii: depth = core depth + radius_a + radius_b.

Runs compiled, one pair at a time (gjk_kernels.epa_pair, over all pairs in one call). Each
update is checked before it is applied (the horizon must be one simple loop, the new faces
non-degenerate with the origin behind them, and the surface must stay a closed sphere:
F = 2 V - 4); a pair whose update fails the check is degenerate (near-coplanar faces at rounding
level): it keeps its last valid polytope and stops, reporting the closest face's answer (a lower
bound within the current gap) with converged=False.

Starting polytope: GJK's tetrahedron when it has one; a smaller simplex (the origin lies on a
vertex, edge or triangle of it) is blown up with support points along directions orthogonal to it
into a triangle and then a tetrahedron with the origin on (or in) it (degenerate simplices are
first demoted to their longest edge / a point). If D has no extent beyond the origin in one of
those directions, the origin is on D's boundary: depth 0 with that direction as the normal.

Conventions: normal is unit A->B (moving B by depth * normal separates the shapes);
point_b - point_a = -depth * normal (= distance * normal, as in gjk). The polytope for debug
drawing holds points of D (world orientation, not translated) and outward faces.
"""
import numpy as np

from . import gjk_kernels
from .gjk import DEFAULT_TOL, core_arrays, prepare_pairs, run_gjk

__all__ = ["EPAResult", "epa"]


class EPAResult:
    """Arrays of a batched epa() call; see epa() for the fields."""

    depth: np.ndarray
    overlap: np.ndarray

    def __init__(self, **fields):
        self.__dict__.update(fields)

    def __repr__(self):
        return f"EPAResult(M={len(self.depth)}, overlap={int(self.overlap.sum())})"


class EPAPolytope:
    """The final polytopes of K pairs (A's frame): vertices V (K, nvc, 3) on B - A, faces F
    (K, 2 nvc, 3) with alive flags, vertex counts nv and iterations (K,)."""

    def __init__(self, k, nvc):
        self.V = np.zeros((k, nvc, 3))
        self.VA = np.zeros((k, nvc, 3))
        self.VB = np.zeros((k, nvc, 3))
        self.F = np.zeros((k, 2 * nvc, 3), dtype=np.int64)
        self.alive = np.zeros((k, 2 * nvc), dtype=bool)
        self.nv = np.zeros(k, dtype=np.int64)
        self.iterations = np.zeros(k, dtype=np.int64)


def _run_epa(pa, pb, scale, S, SA, SB, size, tol, max_vertices):
    """EPA on overlapping pairs (cores in A's frame: padded point sets; GJK's simplices with
    their used slots first). Returns core depth (K,), normal A -> B,
    witnesses on the cores, touch, converged (K,) and the EPAPolytope (all in A's frame)."""
    k = len(scale)
    nvc = max(int(max_vertices), 8)
    P = EPAPolytope(k, nvc)
    depth = np.zeros(k)
    normal = np.zeros((k, 3))
    ca = np.zeros((k, 3))
    cb = np.zeros((k, 3))
    touch = np.zeros(k, dtype=bool)
    converged = np.zeros(k, dtype=bool)
    if k == 0:
        return depth, normal, ca, cb, touch, converged, P
    c = np.ascontiguousarray
    gjk_kernels.epa_rows(*core_arrays(pa), *core_arrays(pb), c(scale, dtype=np.float64),
                         c(S, dtype=np.float64), c(SA, dtype=np.float64),
                         c(SB, dtype=np.float64), c(size, dtype=np.int64), float(tol), P.V,
                         P.VA, P.VB, P.F, P.alive, depth, normal, ca, cb, touch, converged,
                         P.nv, P.iterations)
    return depth, normal, ca, cb, touch, converged, P


def epa(points_a, radius_a, pos_a, rot_a, points_b, radius_b, pos_b, rot_b,
        max_vertices=64, tol=DEFAULT_TOL, max_gjk_iterations=64):
    """Penetration depth, normal and witness points of M pairs (GJK first, EPA on core overlaps).

    Same inputs as gjk(). Every pair gets an answer: pairs whose cores do not overlap report
    GJK's values (depth = -distance, which is > 0 when only the swollen shapes overlap).

    Result fields (M leading):
      depth         penetration depth of the swollen shapes (core depth + radii); < 0: separated
      distance      -depth (signed distance, as in gjk)
      normal        unit A->B; moving B by depth * normal separates the shapes
      point_a/_b    world witness points on the swollen surfaces; point_b - point_a = -depth * normal
      core_depth    depth of the cores (0 for pairs whose cores do not overlap)
      overlap       the cores overlap (EPA was run)
      converged     False where EPA hit its vertex cap or a degenerate update (answer is the best
                    lower bound found; see module doc)
      iterations    EPA iterations (0 where not run)
      polytope_vertices (M, max_vertices, 3) points of D = B - A, world orientation
      polytope_faces    (M, 2 * max_vertices, 3) outward vertex triples, alive first, -1 padded
      polytope_num_vertices, polytope_num_faces (M,)
    """
    pa, pb, ra, rb, pos_a, rot_a, scale, rel = prepare_pairs(points_a, radius_a, pos_a, rot_a,
                                                             points_b, radius_b, pos_b, rot_b)
    m = pa.shape[0]
    g = run_gjk(pa, pb, scale, max_gjk_iterations, tol, d0=rel)
    nvc = max(int(max_vertices), 8)
    # Defaults from GJK (separated cores).
    with np.errstate(invalid="ignore", divide="ignore"):
        n_loc = np.where(g.overlap[:, None], 0.0, g.v / np.sqrt(g.vv)[:, None])
    core = np.where(g.overlap, 0.0, np.sqrt(g.vv))
    ca = np.einsum("mk,mki->mi", g.lam, g.SA)
    cb = np.einsum("mk,mki->mi", g.lam, g.SB)
    core_depth = np.zeros(m)
    converged = np.ones(m, dtype=bool)
    iterations = np.zeros(m, dtype=np.int64)
    poly_v = np.zeros((m, nvc, 3))
    poly_f = np.full((m, 2 * nvc, 3), -1, dtype=np.int64)
    poly_nv = np.zeros(m, dtype=np.int64)
    poly_nf = np.zeros(m, dtype=np.int64)
    idx = np.nonzero(g.overlap)[0]
    if idx.size:
        order = np.argsort(~g.used[idx], axis=1, kind="stable")
        r = np.arange(idx.size)[:, None]
        S, SA, SB = g.S[idx][r, order], g.SA[idx][r, order], g.SB[idx][r, order]
        size = g.used[idx].sum(axis=1)
        d, n, ea, eb, touch, conv, P = _run_epa(pa[idx], pb[idx], scale[idx], S, SA, SB, size,
                                                tol, nvc)
        core_depth[idx] = d
        n_loc[idx] = n
        ca[idx] = np.where(touch[:, None], ca[idx], ea)
        cb[idx] = np.where(touch[:, None], cb[idx], eb)
        converged[idx] = conv
        iterations[idx] = P.iterations
        poly_v[idx] = np.where((np.arange(nvc)[None, :] < P.nv[:, None])[:, :, None], P.V, 0.0)
        forder = np.argsort(~P.alive, axis=1, kind="stable")
        fr = np.arange(idx.size)[:, None]
        faces = P.F[fr, forder]
        nf = P.alive.sum(axis=1)
        faces[np.arange(2 * nvc)[None, :] >= nf[:, None]] = -1
        faces[touch] = -1
        poly_f[idx] = faces
        poly_nv[idx] = np.where(touch, 0, P.nv)
        poly_nf[idx] = np.where(touch, 0, nf)
    rt = np.swapaxes(rot_a, 1, 2)
    normal = np.matmul(n_loc[:, None, :], rt)[:, 0]
    core_a = np.matmul(ca[:, None, :], rt)[:, 0] + pos_a
    core_b = np.matmul(cb[:, None, :], rt)[:, 0] + pos_a
    depth = np.where(g.overlap, core_depth, -core) + ra + rb
    return EPAResult(depth=depth, distance=-depth, normal=normal,
                     point_a=core_a + ra[:, None] * normal, point_b=core_b - rb[:, None] * normal,
                     core_depth=core_depth, overlap=g.overlap.copy(), converged=converged,
                     iterations=iterations, polytope_vertices=np.matmul(poly_v, rt),
                     polytope_faces=poly_f, polytope_num_vertices=poly_nv,
                     polytope_num_faces=poly_nf)
