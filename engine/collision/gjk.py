"""Batched GJK (Gilbert-Johnson-Keerthi) on the convex cores of M shape pairs at once.

Shapes are cores (point sets) swollen by radii. GJK finds the point v of the Minkowski
difference D = B - A of the cores closest to the origin; |v| is the core distance and the radii
are subtracted afterwards, so spheres and capsules cost the same as points and segments.

Design notes (why it looks like this):
- Precision: B is first expressed in A's local frame (A at the origin, identity rotation), so two
  shapes 10 km from the world origin are handled as accurately as at the origin; results are
  rotated/translated back at the end.
- Sub-simplex solver: exhaustive and exact. The closest point of conv(simplex) to the origin lies
  in the relative interior of one face F (vertex, edge, triangle or the tetrahedron) and is then
  the projection of the origin onto aff(F) with all barycentric coordinates positive. We evaluate
  all 15 faces of the (up to) 4-point simplex at once, keep the candidates whose barycentric
  coordinates are all positive (each one is a genuine point of the hull), and take the one of
  least norm; that is exactly the closest point, with no Voronoi-region shortcut to get wrong
  (this is Johnson's subset enumeration done as its "backup procedure" every time, which in
  numpy costs the same as the incremental version). Barycentrics are ratios of signed
  areas/volumes measured from the first vertex (as in Montanari et al. 2017's signed-volume
  method) to limit cancellation. Near-ties prefer the smaller face, keeping the simplex minimal.
- Termination per pair (all in A's frame, `scale` = size of the shapes): the gap between the
  upper bound |v| and the lower bound v.w/|v| is below tol*(scale + |v|); the new support point
  is already in the simplex; |v| did not decrease (the step is undone); the simplex became a
  tetrahedron containing the origin or |v| <= tol*scale (overlap); or the iteration cap.
- Batching: every iteration handles only the still-active pairs (a shrinking working set);
  pairs that finish are written out and frozen. No Python loop over pairs.

Minkowski convention: simplex points are on D = B - A, i.e. ``simplex = simplex_b - simplex_a``.
"""
import numpy as np

__all__ = [
    "GJKResult",
    "IntersectResult",
    "closest_on_simplex",
    "gjk",
    "gjk_intersect",
    "prepare_pairs",
    "relative_frame",
    "support",
]

# Relative convergence tolerance of the distance: a few hundred ulps, so GJK stops at the
# round-off floor without cycling.
DEFAULT_TOL = 1e-10

# The 15 faces of a 4-slot simplex, smallest first (tie-breaking prefers earlier = smaller).
_EI = np.array([0, 0, 0, 1, 1, 2])
_EJ = np.array([1, 2, 3, 2, 3, 3])
_TI = np.array([0, 0, 0, 1])
_TJ = np.array([1, 1, 2, 2])
_TK = np.array([2, 3, 3, 3])
_E6 = np.arange(6)
_T4 = np.arange(4)


def _dot(a, b):
    # Component form: much faster than np.sum(a * b, axis=-1) over a length-3 axis.
    return a[..., 0] * b[..., 0] + a[..., 1] * b[..., 1] + a[..., 2] * b[..., 2]


def _cross(a, b):
    # Faster than np.cross on small trailing axes, and identical in result.
    return np.stack((a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1],
                     a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2],
                     a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]), axis=-1)


def closest_on_simplex(S, used):
    """Closest point to the origin of conv(S[used]) for each row (exhaustive, see module doc).

    S (k, 4, 3) points, used (k, 4) bool (at least one True per row).
    Returns lam (k, 4) barycentric weights (0 on slots not in the chosen face) and v (k, 3).
    """
    k = S.shape[0]
    cand_v = np.zeros((k, 15, 3))
    cand_lam = np.zeros((k, 15, 4))
    ok = np.zeros((k, 15), dtype=bool)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # Vertices (always valid when used).
        cand_v[:, 0:4] = S
        cand_lam[:, _T4, _T4] = 1.0
        ok[:, 0:4] = used
        # Edges: projection parameter t on [P, Q]; valid when strictly inside (NaN compares False).
        P, Q = S[:, _EI], S[:, _EJ]
        e = Q - P
        t = -_dot(P, e) / _dot(e, e)
        ok[:, 4:10] = used[:, _EI] & used[:, _EJ] & (t > 0) & (t < 1)
        cand_v[:, 4:10] = P + t[..., None] * e
        cand_lam[:, 4 + _E6, _EI] = 1.0 - t
        cand_lam[:, 4 + _E6, _EJ] = t
        # Triangles (only rows with >= 3 points): barycentrics of the origin's projection as
        # signed sub-area ratios.
        nused = used.sum(axis=1)
        tr = np.nonzero(nused >= 3)[0]
        St, ut = S[tr], used[tr]
        A, B, C = St[:, _TI], St[:, _TJ], St[:, _TK]
        ab, ac = B - A, C - A
        n = _cross(ab, ac)
        nn = _dot(n, n)
        lb = _dot(n, _cross(-A, ac)) / nn
        lc = _dot(n, _cross(ab, -A)) / nn
        la = 1.0 - lb - lc
        ok[tr, 10:14] = ut[:, _TI] & ut[:, _TJ] & ut[:, _TK] & (la > 0) & (lb > 0) & (lc > 0)
        cand_v[tr, 10:14] = A + lb[..., None] * ab + lc[..., None] * ac
        lam_t = np.zeros((tr.size, 4, 4))
        lam_t[:, _T4, _TI] = la
        lam_t[:, _T4, _TJ] = lb
        lam_t[:, _T4, _TK] = lc
        cand_lam[tr, 10:14] = lam_t
        # Tetrahedron (rows with 4 points): barycentrics of the origin as sub-volume ratios.
        te = np.nonzero(nused == 4)[0]
        Se = S[te]
        A, B, C, D = Se[:, 0], Se[:, 1], Se[:, 2], Se[:, 3]
        ab, ac, ad = B - A, C - A, D - A
        acd = _cross(ac, ad)
        det = _dot(ab, acd)
        lb = _dot(-A, acd) / det
        lc = _dot(ab, _cross(-A, ad)) / det
        ld = _dot(ab, _cross(ac, -A)) / det
        la = 1.0 - lb - lc - ld
        ok[te, 14] = (la > 0) & (lb > 0) & (lc > 0) & (ld > 0)
        # The point is computed (not set to 0) so a nearly flat tetrahedron with noisy weights
        # still yields a genuine hull point and cannot win the minimum spuriously.
        cand_v[te, 14] = A + lb[:, None] * ab + lc[:, None] * ac + ld[:, None] * ad
        cand_lam[te, 14] = np.stack((la, lb, lc, ld), axis=-1)
        norm2 = np.where(ok, _dot(cand_v, cand_v), np.inf)
    best = norm2.min(axis=1)
    pick = np.argmax(norm2 <= best[:, None] * (1.0 + 1e-12), axis=1)
    rows = np.arange(k)
    return cand_lam[rows, pick], cand_v[rows, pick]


def support(points, d):
    """Support points of padded point sets (k, V, 3) along directions d (k, 3), and their indices.
    A curved.SupportSet (cylinders/cones mixed with point sets) answers with its own support."""
    if not isinstance(points, np.ndarray):
        return points.support(d)
    idx = np.argmax(np.matmul(points, d[:, :, None])[:, :, 0], axis=1)
    return points[np.arange(len(points)), idx], idx


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


class _State:
    """GJK state of a set of pairs (full batch for the output, or the active working set)."""
    fields = ("S", "SA", "SB", "used", "lam", "v", "vv", "iterations", "overlap")

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

    def take(self, sel):
        out = _State.__new__(_State)
        for f in self.fields:
            setattr(out, f, getattr(self, f)[sel])
        return out

    def put(self, rows, other, sel):
        for f in self.fields:
            getattr(self, f)[rows] = getattr(other, f)[sel]


def run_gjk(pa, pb, scale, max_iterations=64, tol=DEFAULT_TOL, margin=None, d0=None):
    """Run GJK on cores already in A's frame. Returns the full-batch _State.

    margin None: distance mode, run to convergence. margin (M,) array: boolean mode for the
    swollen shapes; a pair stops as soon as a separating plane with clearance > margin is found
    (overlap False) or |v| <= margin (overlap True). d0 (M,3): rough direction from A to B for
    the first support point (default: between the point-set centroids).
    """
    m = pa.shape[0]
    out = _State(m)
    if m == 0:
        return out
    tol_abs = tol * scale
    # Start from the support point of D towards the origin from D's rough centre.
    d0 = pb.mean(axis=1) - pa.mean(axis=1) if d0 is None else np.array(d0, dtype=np.float64)
    d0[_dot(d0, d0) == 0] = (1.0, 0.0, 0.0)
    wa, _ = support(pa, d0)
    wb, _ = support(pb, -d0)
    st = _State(m)
    st.S[:, 0], st.SA[:, 0], st.SB[:, 0] = wb - wa, wa, wb
    st.used[:, 0] = True
    st.lam[:, 0] = 1.0
    st.v = wb - wa
    st.vv = _dot(st.v, st.v)
    rows = np.arange(m)
    pa_w, pb_w, tol_w = pa, pb, tol_abs
    marg_w = margin
    touch = st.vv <= tol_w * tol_w
    st.overlap = touch.copy()
    if margin is not None:
        st.overlap |= np.sqrt(st.vv) <= marg_w + tol_w
        touch = st.overlap
    if touch.any():
        out.put(rows[touch], st, touch)
        keep = ~touch
        st, rows, pa_w, pb_w, tol_w = st.take(keep), rows[keep], pa_w[keep], pb_w[keep], tol_w[keep]
        if margin is not None:
            marg_w = marg_w[keep]
    for _ in range(max_iterations):
        if rows.size == 0:
            break
        st.iterations += 1
        v = st.v
        wa, _ = support(pa_w, v)
        wb, _ = support(pb_w, -v)
        w = wb - wa
        nv = np.sqrt(st.vv)
        vw = _dot(v, w)
        # Gap between the upper bound |v| and the lower bound v.w/|v| of the distance.
        done = st.vv - vw <= nv * (tol_w + tol * nv)
        # Duplicate support point: no new information, v cannot improve.
        same = ((st.S[:, :, 0] == w[:, None, 0]) & (st.S[:, :, 1] == w[:, None, 1])
                & (st.S[:, :, 2] == w[:, None, 2]))
        done |= np.any(st.used & same, axis=1)
        if margin is not None:
            # A plane normal to v with all of D beyond margin: separated (overlap stays False).
            done |= vw > (marg_w + tol_w) * nv
        go = ~done
        # Insert w into the first free slot of the continuing pairs and solve.
        new = st.take(go)
        gi = np.nonzero(go)[0]
        slot = np.argmin(new.used, axis=1)
        r = np.arange(gi.size)
        new.S[r, slot], new.SA[r, slot], new.SB[r, slot] = w[gi], wa[gi], wb[gi]
        new.used[r, slot] = True
        lam, vnew = closest_on_simplex(new.S, new.used)
        vvnew = _dot(vnew, vnew)
        progress = vvnew < new.vv
        new.lam, new.v, new.vv = lam, vnew, vvnew
        new.used = lam > 0
        size4 = new.used.sum(axis=1) == 4
        ov = size4 | (vvnew <= tol_w[gi] ** 2)
        if margin is not None:
            ov |= np.sqrt(vvnew) <= marg_w[gi] + tol_w[gi]
        new.overlap = ov
        # Pairs that made progress take the new state; the others keep the old one and stop.
        upd = gi[progress]
        st.put(upd, new, progress)
        finished = done.copy()
        finished[gi[~progress | ov | size4]] = True
        if finished.any():
            out.put(rows[finished], st, finished)
            keep = ~finished
            st, rows, pa_w, pb_w, tol_w = st.take(keep), rows[keep], pa_w[keep], pb_w[keep], tol_w[keep]
            if margin is not None:
                marg_w = marg_w[keep]
    if rows.size:
        out.put(rows, st, np.ones(rows.size, dtype=bool))
    return out


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
