"""GJK (Gilbert-Johnson-Keerthi) on the convex cores of M shape pairs: the public entry points.

Shapes are cores (point sets) swollen by radii. GJK finds the point v of the Minkowski
difference D = B - A of the cores closest to the origin; |v| is the core distance and the radii
are subtracted afterwards, so spheres and capsules cost the same as points and segments.

The algorithm runs compiled, one pair at a time (gjk_kernels.gjk_pair, over all pairs in one
call); this module prepares the batch and shapes the answers. Design notes:
- Precision: B is first expressed in A's local frame (A at the origin, identity rotation), so two
  shapes 10 km from the world origin are handled as accurately as at the origin; results are
  rotated/translated back at the end.
- Sub-simplex solver: exhaustive and exact. The closest point of conv(simplex) to the origin lies
  in the relative interior of one face F (vertex, edge, triangle or the tetrahedron) and is then
  the projection of the origin onto aff(F) with all barycentric coordinates positive. All 15
  faces of the (up to) 4-point simplex are evaluated, the candidates whose barycentric
  coordinates are all positive kept (each one is a genuine point of the hull), and the one of
  least norm taken; that is exactly the closest point, with no Voronoi-region shortcut to get
  wrong (Johnson's subset enumeration done as its "backup procedure" every time). Barycentrics
  are ratios of signed areas/volumes measured from the first vertex (as in Montanari et al.
  2017's signed-volume method) to limit cancellation. Near-ties prefer the smaller face,
  keeping the simplex minimal.
- Termination per pair (all in A's frame, `scale` = size of the shapes): the gap between the
  upper bound |v| and the lower bound v.w/|v| is below tol*(scale + |v|); the new support point
  is already in the simplex; |v| did not decrease (the step is undone); the simplex became a
  tetrahedron containing the origin or |v| <= tol*scale (overlap); or the iteration cap.

Minkowski convention: simplex points are on D = B - A, i.e. ``simplex = simplex_b - simplex_a``.
"""
import numpy as np

from ..core.vec import per_row
from . import gjk_kernels

__all__ = [
    "GJKResult",
    "IntersectResult",
    "closest_on_simplex",
    "gjk",
    "gjk_intersect",
    "prepare_pairs",
    "relative_frame",
    "run_gjk",
]

# Relative convergence tolerance of the distance: a few hundred ulps, so GJK stops at the
# round-off floor without cycling.
DEFAULT_TOL = 1e-10


def _dot(a, b):
    return a[..., 0] * b[..., 0] + a[..., 1] * b[..., 1] + a[..., 2] * b[..., 2]


def closest_on_simplex(S, used):
    """Closest point to the origin of conv(S[used]) for each row (gjk_kernels.closest_on_simplex).

    S (k, 4, 3) points, used (k, 4) bool (at least one True per row).
    Returns lam (k, 4) barycentric weights (0 on slots not in the chosen face) and v (k, 3).
    """
    S = np.ascontiguousarray(S, dtype=np.float64)
    used = np.ascontiguousarray(used, dtype=bool)
    k = S.shape[0]
    lam = np.zeros((k, 4))
    v = np.zeros((k, 3))
    ws, cand_v, cand_lam, _, _ = gjk_kernels.gjk_scratch()
    for i in range(k):     # (tests and debugging only: one compiled call per row)
        gjk_kernels.closest_on_simplex(S[i], used[i], lam[i], v[i], cand_v, cand_lam,
                                       ws[16:31], ws[32:56])
    return lam, v

def _as_batch(points_a, radius_a, pos_a, rot_a, points_b, radius_b, pos_b, rot_b):
    pos_a = np.asarray(pos_a, dtype=np.float64)
    pos_b = np.asarray(pos_b, dtype=np.float64)
    rot_a = np.asarray(rot_a, dtype=np.float64)
    rot_b = np.asarray(rot_b, dtype=np.float64)
    points_a = np.asarray(points_a, dtype=np.float64)
    points_b = np.asarray(points_b, dtype=np.float64)
    lead = [x.shape[0] for x, nd in ((pos_a, 2), (pos_b, 2), (rot_a, 3), (rot_b, 3),
                                     (points_a, 3), (points_b, 3)) if x.ndim == nd]
    m = max(lead) if lead else 1
    pos_a = np.broadcast_to(pos_a, (m, 3))
    pos_b = np.broadcast_to(pos_b, (m, 3))
    rot_a = np.broadcast_to(rot_a, (m, 3, 3))
    rot_b = np.broadcast_to(rot_b, (m, 3, 3))
    points_a = np.broadcast_to(points_a, (m,) + points_a.shape[-2:])
    points_b = np.broadcast_to(points_b, (m,) + points_b.shape[-2:])
    radius_a = np.broadcast_to(np.asarray(radius_a, dtype=np.float64), (m,))
    radius_b = np.broadcast_to(np.asarray(radius_b, dtype=np.float64), (m,))
    return points_a, radius_a, pos_a, rot_a, points_b, radius_b, pos_b, rot_b


def relative_frame(pos_a, rot_a, pos_b, rot_b):
    """Pose of B in A's local frame: rotation rot_a^T rot_b (M,3,3) and translation (M,3)."""
    rel_rot = np.matmul(np.swapaxes(rot_a, 1, 2), rot_b)
    rel_pos = np.matmul(np.swapaxes(rot_a, 1, 2), (pos_b - pos_a)[:, :, None])[:, :, 0]
    return rel_rot, rel_pos


def prepare_pairs(points_a, radius_a, pos_a, rot_a, points_b, radius_b, pos_b, rot_b):
    """Broadcast the batched inputs and express both cores in A's local frame.

    Returns (pa, pb, radius_a, radius_b, pos_a, rot_a, scale, rel_pos): pa (M,Va,3), pb (M,Vb,3)
    in A's frame, scale (M,) = size of the pair (largest bounding radius of a core about its
    local origin, or a radius; 1 if all zero), the reference length for the relative
    tolerances, and rel_pos (M,3) B's origin in A's frame.
    """
    (points_a, radius_a, pos_a, rot_a,
     points_b, radius_b, pos_b, rot_b) = _as_batch(points_a, radius_a, pos_a, rot_a,
                                                   points_b, radius_b, pos_b, rot_b)
    rel_rot, rel_pos = relative_frame(pos_a, rot_a, pos_b, rot_b)
    pa = np.ascontiguousarray(points_a)
    pb = np.matmul(points_b, np.swapaxes(rel_rot, 1, 2)) + rel_pos[:, None, :]
    # Size of the pair = largest bounding radius about the shapes' own origins (shapes are built
    # about their centre of mass), or a radius. Cheaper than per-axis extents (a 3x smaller
    # reduction), which matters: it was the largest single cost of a box-box batch.
    ext_a = np.sqrt(_dot(points_a, points_a).max(axis=1))
    ext_b = np.sqrt(_dot(points_b, points_b).max(axis=1))
    scale = np.maximum(np.maximum(ext_a, ext_b), np.maximum(radius_a, radius_b))
    scale = np.where(scale > 0, scale, 1.0)
    return pa, pb, radius_a, radius_b, pos_a, rot_a, scale, rel_pos


def core_arrays(core):
    """The kernels' flat arrays of a batch of point-set cores (M, V, 3) (padding repeats a
    point): (pts, n, code, radius, half_height, rot, off), code 0. (Cylinders and cones enter
    the kernels through curved_kernels, which poses them pair by pair.)"""
    m, v = core.shape[:2]
    # (writable: a shape's own cores are read-only, a type numba compiles the kernels for apart)
    pts = np.require(core, dtype=np.float64, requirements=("C", "W"))
    return (pts, np.full(m, v, dtype=np.int64),
            np.zeros(m, dtype=np.int64), np.zeros(m), np.zeros(m), np.zeros((m, 3, 3)),
            np.zeros((m, 3)))


class GJKState:
    """GJK's final state of M pairs (A's frame): simplex S = SB - SA (M, 4, 3) with used slots
    (M, 4), barycentrics lam (M, 4), closest point v of D (M, 3), vv = |v|^2, iterations,
    overlap (M,)."""
    __slots__ = ("S", "SA", "SB", "iterations", "lam", "overlap", "used", "v", "vv")

    def __init__(self, m):
        self.S = np.zeros((m, 4, 3))
        self.SA = np.zeros((m, 4, 3))
        self.SB = np.zeros((m, 4, 3))
        self.used = np.zeros((m, 4), dtype=bool)
        self.lam = np.zeros((m, 4))
        self.v = np.zeros((m, 3))
        self.vv = np.zeros(m)
        self.iterations = np.zeros(m, dtype=np.int64)
        self.overlap = np.zeros(m, dtype=bool)


def run_gjk(pa, pb, scale, max_iterations=64, tol=DEFAULT_TOL, margin=None, d0=None):
    """Run GJK on cores already in one frame (A's): all pairs in one compiled call.

    pa, pb: padded point sets (M, V, 3). margin None: distance mode, run
    to convergence. margin (M,) array: boolean mode for the swollen shapes; a pair stops as soon
    as a separating plane with clearance > margin is found (overlap False) or |v| <= margin
    (overlap True). d0 (M,3): rough direction from A to B for the first support point
    (default: between the point-set centroids). Returns a GJKState.
    """
    m = len(scale)
    st = GJKState(m)
    if m == 0:
        return st
    if d0 is None:
        d0 = pb.mean(axis=1) - pa.mean(axis=1)
    d0 = np.ascontiguousarray(d0, dtype=np.float64)
    use_margin = margin is not None
    marg = np.zeros(m) if margin is None else per_row(margin, m)
    gjk_kernels.gjk_rows(*core_arrays(pa), *core_arrays(pb),
                         np.ascontiguousarray(scale, dtype=np.float64), d0, float(tol),
                         int(max_iterations), use_margin, marg, st.S, st.SA, st.SB, st.used,
                         st.lam, st.v, st.vv, st.iterations, st.overlap)
    return st


def _compact(state):
    """Move the used simplex slots to the front (stable); returns (order, size)."""
    order = np.argsort(~state.used, axis=1, kind="stable")
    size = state.used.sum(axis=1)
    return order, size


class GJKResult:
    """Arrays of a batched gjk() call; see gjk() for the meaning of each field."""

    distance: np.ndarray

    def __init__(self, **fields):
        self.__dict__.update(fields)

    def __repr__(self):
        return f"GJKResult(M={len(self.distance)}, fields={sorted(self.__dict__)})"


class IntersectResult(GJKResult):
    overlap: np.ndarray

    def __repr__(self):
        return f"IntersectResult(M={len(self.overlap)}, overlap={int(self.overlap.sum())})"


def _world_simplex(st, pos_a, rot_a):
    order, size = _compact(st)
    r = np.arange(len(size))[:, None]
    mask = (np.arange(4)[None, :] < size[:, None])[:, :, None]
    rt = np.swapaxes(rot_a, 1, 2)
    sa = np.where(mask, np.matmul(st.SA[r, order], rt) + pos_a[:, None, :], 0.0)
    sb = np.where(mask, np.matmul(st.SB[r, order], rt) + pos_a[:, None, :], 0.0)
    s = np.where(mask, np.matmul(st.S[r, order], rt), 0.0)
    return s, sa, sb, size


def gjk(points_a, radius_a, pos_a, rot_a, points_b, radius_b, pos_b, rot_b,
        max_iterations=64, tol=DEFAULT_TOL):
    """Distance and closest points between M pairs of swollen convex cores.

    Inputs: local core points (M, Va, 3) / (M, Vb, 3) (padded by repeating a point), radii (M,),
    positions (M, 3), rotation matrices (M, 3, 3). ``tol`` is relative to the pair's size.

    Result fields (all arrays, M leading):
      core_distance  distance between the cores (0 when they overlap or touch within tolerance)
      distance       core_distance - radius_a - radius_b (negative: the swollen shapes overlap)
      point_a/_b     world closest points on the swollen surfaces; point_b - point_a = distance * normal
                     (when cores overlap: the common core point, no radius offset)
      normal         unit A->B from the core closest points; zeros where overlap (undefined)
      overlap        bool, the cores intersect (touching within tolerance counts)
      simplex        (M,4,3) final simplex on D = B - A, world orientation (not translated)
      simplex_a/_b   (M,4,3) the support points on A and B, world; unused slots are zero
      simplex_size   (M,) number of simplex points; iterations (M,)
      core_point_a/_b world closest points of the cores
    """
    pa, pb, ra, rb, pos_a, rot_a, scale, rel = prepare_pairs(points_a, radius_a, pos_a, rot_a,
                                                             points_b, radius_b, pos_b, rot_b)
    st = run_gjk(pa, pb, scale, max_iterations, tol, d0=rel)
    ca = np.einsum("mk,mki->mi", st.lam, st.SA)
    cb = np.einsum("mk,mki->mi", st.lam, st.SB)
    core = np.where(st.overlap, 0.0, np.sqrt(st.vv))
    with np.errstate(invalid="ignore", divide="ignore"):
        n_local = np.where(st.overlap[:, None], 0.0, st.v / np.sqrt(st.vv)[:, None])
    rt = np.swapaxes(rot_a, 1, 2)
    normal = np.matmul(n_local[:, None, :], rt)[:, 0]
    core_a = np.matmul(ca[:, None, :], rt)[:, 0] + pos_a
    core_b = np.matmul(cb[:, None, :], rt)[:, 0] + pos_a
    point_a = core_a + ra[:, None] * normal
    point_b = core_b - rb[:, None] * normal
    s, sa, sb, size = _world_simplex(st, pos_a, rot_a)
    return GJKResult(core_distance=core, distance=core - ra - rb, point_a=point_a, point_b=point_b,
                     normal=normal, overlap=st.overlap.copy(), simplex=s, simplex_a=sa,
                     simplex_b=sb, simplex_size=size, iterations=st.iterations,
                     core_point_a=core_a, core_point_b=core_b)


def gjk_intersect(points_a, radius_a, pos_a, rot_a, points_b, radius_b, pos_b, rot_b,
                  max_iterations=64, tol=DEFAULT_TOL):
    """Boolean test: do the swollen shapes intersect (core distance <= radius_a + radius_b)?

    Cheaper than gjk(): a pair stops at the first separating plane with clearance above the radii.
    Returns an IntersectResult with overlap (M,) bool, simplex/simplex_a/simplex_b (M,4,3) world
    (same conventions as gjk), simplex_size (M,), iterations (M,).
    """
    pa, pb, ra, rb, pos_a, rot_a, scale, rel = prepare_pairs(points_a, radius_a, pos_a, rot_a,
                                                             points_b, radius_b, pos_b, rot_b)
    st = run_gjk(pa, pb, scale, max_iterations, tol, margin=ra + rb, d0=rel)
    s, sa, sb, size = _world_simplex(st, pos_a, rot_a)
    return IntersectResult(overlap=st.overlap.copy(), simplex=s, simplex_a=sa, simplex_b=sb,
                           simplex_size=size, iterations=st.iterations)
