"""Batched EPA (Expanding Polytope Algorithm): penetration depth of M pairs of swollen cores.

GJK stops once it knows the cores overlap (the origin is inside D = B - A). EPA then grows a
polytope P inside D, starting from GJK's simplex, always pushing out the face of P closest to the
origin by adding the support point of D along that face's normal, until the closest face lies on
the boundary of D. Swollen shapes add their radii: depth = core depth + radius_a + radius_b.

Batching: every pair keeps a padded polytope (``max_vertices`` vertex slots, 2 * max_vertices
face slots, an ``alive`` mask). One iteration updates all active pairs at once:
- the faces a new point sees are found with a plane test;
- the horizon (edges of seen faces whose twin face is not seen) is found by matching integer
  edge keys with np.isin, so no adjacency structure has to be maintained;
- the new faces (horizon edge + new point) go into free face slots, ranked per pair with a cumsum.
Each update is checked (the horizon must be one simple loop, the new faces non-degenerate with
the origin behind them, and the surface must stay a closed sphere: F = 2 V - 4); a pair whose
update fails the check is degenerate (near-coplanar faces at rounding level): it keeps its last
valid polytope and stops, reporting the closest face's answer (a lower bound within the current
gap) with converged=False. This replaces a per-pair fallback loop: no Python loop over pairs.

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

from .gjk import DEFAULT_TOL, _cross, _dot, prepare_pairs, run_gjk, support

__all__ = ["EPAResult", "epa"]


class EPAResult:
    """Arrays of a batched epa() call; see epa() for the fields."""

    depth: np.ndarray
    overlap: np.ndarray

    def __init__(self, **fields):
        self.__dict__.update(fields)

    def __repr__(self):
        return f"EPAResult(M={len(self.depth)}, overlap={int(self.overlap.sum())})"


def _support_d(pa, pb, n):
    """Support point of D = B - A along n, with its parts on A and B."""
    wa, _ = support(pa, -n)
    wb, _ = support(pb, n)
    return wb - wa, wa, wb


def _face_planes(V, F):
    """Unit normals (..., 3), plane offsets and squared raw normal lengths of faces F over V."""
    r = np.arange(V.shape[0])[:, None]
    a, b, c = V[r, F[..., 0]], V[r, F[..., 1]], V[r, F[..., 2]]
    n = _cross(b - a, c - a)
    nn = _dot(n, n)
    with np.errstate(divide="ignore", invalid="ignore"):
        n = n / np.sqrt(nn)[..., None]
    return n, _dot(n, a), nn


class _Poly:
    """The polytopes of the pairs still expanding (see epa()): vertices V (on B - A) with their
    support points VA, VB, vertex counts nv, faces F with alive flags, normals N, distances Dst."""
    fields = ("V", "VA", "VB", "nv", "F", "alive", "N", "Dst", "iterations")
    V: np.ndarray
    VA: np.ndarray
    VB: np.ndarray
    nv: np.ndarray
    F: np.ndarray
    alive: np.ndarray
    N: np.ndarray
    Dst: np.ndarray
    iterations: np.ndarray

    def take(self, sel):
        out = _Poly()
        for f in self.fields:
            setattr(out, f, getattr(self, f)[sel])
        return out

    def put(self, rows, other, sel):
        for f in self.fields:
            getattr(self, f)[rows] = getattr(other, f)[sel]


def _blow_up(pa, pb, S, SA, SB, size, tol_abs):
    """Grow GJK simplices of 1-3 points into tetrahedra containing the origin (vectorised by case).

    Returns (pts, pa_pts, pb_pts, count, touch, touch_normal): the 4 points of the starting
    tetrahedron and the pairs found touching (depth 0) with their outward normal of D.
    """
    k = S.shape[0]
    pts, pts_a, pts_b = S.copy(), SA.copy(), SB.copy()
    size = size.copy()
    touch = np.zeros(k, dtype=bool)
    touch_n = np.zeros((k, 3))
    rows = np.arange(k)

    def extend(sel, d):
        # Add the support point along d to the rows sel, or mark them touching along d.
        w, wa, wb = _support_d(pa[sel], pb[sel], d)
        flat = _dot(w, d) <= tol_abs[sel]
        t = sel[flat]
        touch[t] = True
        touch_n[t] = d[flat]
        g, gi = sel[~flat], size[sel[~flat]]
        pts[g, gi], pts_a[g, gi], pts_b[g, gi] = w[~flat], wa[~flat], wb[~flat]
        size[g] += 1

    # Demote degenerate simplices (GJK keeps none, but callers may pass any): a triangle with
    # (near) collinear points becomes its longest edge, which still contains the origin; a
    # zero-length segment becomes a point.
    tri = rows[size == 3]
    if tri.size:
        p = pts[tri, :3]
        n = _cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
        lens = np.stack([_dot(p[:, b] - p[:, a], p[:, b] - p[:, a]) for a, b in ((0, 1), (1, 2), (2, 0))], 1)
        flat = _dot(n, n) <= 1e-24 * lens.max(axis=1) ** 2  # sin(angle) below 1e-12
        if flat.any():
            t = tri[flat]
            best = np.argmax(lens[flat], axis=1)
            first = np.array([0, 1, 2])[best]
            second = np.array([1, 2, 0])[best]
            for arr in (pts, pts_a, pts_b):
                a0, a1 = arr[t, first].copy(), arr[t, second].copy()
                arr[t, 0], arr[t, 1] = a0, a1
            size[t] = 2
    two = rows[size == 2]
    if two.size:
        e = pts[two, 1] - pts[two, 0]
        size[two[_dot(e, e) <= 1e-24 * np.maximum(_dot(pts[two, 0], pts[two, 0]), tol_abs[two] ** 2)]] = 1
    one = rows[size == 1]
    if one.size:  # the origin is (within tol) the single point: any direction to start
        extend(one, np.tile([1.0, 0.0, 0.0], (one.size, 1)))
    two = rows[(size == 2) & ~touch]
    if two.size:  # the origin is on a segment: go orthogonally to it
        e = pts[two, 1] - pts[two, 0]
        axis = np.eye(3)[np.argmin(np.abs(e), axis=1)]
        d = _cross(e, axis)
        extend(two, d / np.linalg.norm(d, axis=1, keepdims=True))
    tri = rows[(size == 3) & ~touch]
    if tri.size:  # the origin is in a triangle: look at both sides of it
        n = _cross(pts[tri, 1] - pts[tri, 0], pts[tri, 2] - pts[tri, 0])
        n /= np.linalg.norm(n, axis=1, keepdims=True)
        wp, wpa, wpb = _support_d(pa[tri], pb[tri], n)
        wm, wma, wmb = _support_d(pa[tri], pb[tri], -n)
        hp, hm = _dot(wp, n), -_dot(wm, n)
        flat = np.minimum(hp, hm) <= tol_abs[tri]
        t = tri[flat]
        touch[t] = True
        touch_n[t] = np.where((hp <= hm)[flat, None], n[flat], -n[flat])
        # Apex on the higher side. (A bipyramid with both apexes is NOT convex in general, and a
        # non-convex start corrupts EPA.) The origin then lies on the base face, which is fine:
        # EPA only needs it inside the closed polytope, and pushes that face out first.
        g, ok = tri[~flat], ~flat
        up = (hp >= hm)[ok, None]
        pts[g, 3] = np.where(up, wp[ok], wm[ok])
        pts_a[g, 3] = np.where(up, wpa[ok], wma[ok])
        pts_b[g, 3] = np.where(up, wpb[ok], wmb[ok])
        size[g] = 4
    return pts, pts_a, pts_b, size, touch, touch_n


_TET_FACES = np.array([[0, 1, 2], [0, 3, 1], [0, 2, 3], [1, 3, 2]])


def _initial_polytope(pts, pts_a, pts_b, nvc):
    k = pts.shape[0]
    P = _Poly()
    P.V = np.zeros((k, nvc, 3))
    P.VA = np.zeros((k, nvc, 3))
    P.VB = np.zeros((k, nvc, 3))
    P.V[:, :4], P.VA[:, :4], P.VB[:, :4] = pts, pts_a, pts_b
    P.nv = np.full(k, 4, dtype=np.int64)
    nfc = 2 * nvc
    P.F = np.zeros((k, nfc, 3), dtype=np.int64)
    P.alive = np.zeros((k, nfc), dtype=bool)
    P.F[:, :4] = _TET_FACES
    P.alive[:, :4] = True
    # Orient every face outwards: its normal must point away from the centroid (strictly inside).
    centroid = pts.mean(axis=1)
    N, Dst, _ = _face_planes(P.V, P.F)
    flip = _dot(N, centroid[:, None, :]) > Dst
    P.F[flip] = P.F[flip][:, [0, 2, 1]]
    P.N, P.Dst, nn = _face_planes(P.V, P.F)
    P.iterations = np.zeros(k, dtype=np.int64)
    bad = np.any(P.alive & ~(nn > 0), axis=1)
    return P, bad


def _expand(P, w, wa, wb, best, pa, pb, tol_abs):
    """One EPA update of every row of P (a copy) by its new point w. Returns the rows that failed."""
    k, nfc = P.alive.shape
    nvc = P.V.shape[1]
    rows = np.arange(k)
    vis = P.alive & (np.einsum("kfi,ki->kf", P.N, w) - P.Dst > 1e-3 * tol_abs[:, None])
    vis[rows, best] = True
    Fi = P.F
    Fj = P.F[:, :, [1, 2, 0]]
    base = (rows * nvc * nvc)[:, None, None]
    key = base + Fi * nvc + Fj
    rkey = base + Fj * nvc + Fi
    vm = np.broadcast_to(vis[:, :, None], Fi.shape)
    horizon = vm & ~np.isin(rkey, key[vm])
    hr, hf, he = np.nonzero(horizon)
    hi, hj = Fi[hr, hf, he], Fj[hr, hf, he]
    hcount = np.bincount(hr, minlength=k)
    bad = hcount < 3
    # One simple loop: every horizon vertex starts exactly one edge and ends exactly one.
    starts = np.sort(hr * nvc + hi)
    ends = np.sort(hr * nvc + hj)
    bad[starts[starts != ends] // nvc] = True
    dup = starts[1:] == starts[:-1]
    bad[starts[1:][dup] // nvc] = True
    alive = P.alive & ~vis
    free = nfc - alive.sum(axis=1)
    bad |= (hcount > free) | (P.nv >= nvc)
    order = np.argsort(alive, axis=1, kind="stable")  # free slots first
    rank = np.arange(hr.size) - (np.cumsum(hcount) - hcount)[hr]
    slot = order[hr, np.minimum(rank, nfc - 1)]
    newv = np.minimum(P.nv, nvc - 1)
    P.V[rows, newv], P.VA[rows, newv], P.VB[rows, newv] = w, wa, wb
    P.F[hr, slot] = np.stack((hi, hj, newv[hr]), axis=-1)
    alive[hr, slot] = True
    a, b, c = P.V[hr, hi], P.V[hr, hj], w[hr]
    n = _cross(b - a, c - a)
    nn = np.sqrt(_dot(n, n))
    with np.errstate(divide="ignore", invalid="ignore"):
        n = n / nn[:, None]
    d = _dot(n, a)
    face_bad = ~(nn > 0) | ~(d >= -tol_abs[hr])
    bad[hr[face_bad]] = True
    P.N[hr, slot] = n
    P.Dst[hr, slot] = d
    P.alive = alive
    P.nv = P.nv + 1
    # Closed triangulated sphere: F = 2 V - 4 over the vertices still referenced.
    ref = np.zeros((k, nvc), dtype=bool)
    fr = np.nonzero(alive)
    ref[fr[0][:, None], P.F[fr]] = True
    bad |= alive.sum(axis=1) != 2 * ref.sum(axis=1) - 4
    return bad


def _run_epa(pa, pb, scale, S, SA, SB, size, tol, max_vertices):
    """EPA on overlapping pairs (cores in A's frame). Returns per-pair core results (A frame)."""
    k = pa.shape[0]
    tol_abs = tol * scale
    pts, pts_a, pts_b, count, touch, touch_n = _blow_up(pa, pb, S, SA, SB, size, tol_abs)
    nvc = max(int(max_vertices), 8)
    P, bad0 = _initial_polytope(pts, pts_a, pts_b, nvc)
    converged = np.zeros(k, dtype=bool)
    # A zero-area starting face needs an exactly degenerate simplex (GJK never keeps one); such
    # a pair is reported as touching along +z with converged=False rather than with NaNs.
    bad0 &= ~touch
    touch_n[bad0] = (0.0, 0.0, 1.0)
    finished = touch | bad0
    converged[touch] = True
    touch = touch | bad0
    out = P.take(np.arange(k))
    rows = np.nonzero(~finished)[0]
    W = P.take(rows)
    pa_w, pb_w, tol_w = pa[rows], pb[rows], tol_abs[rows]
    for _ in range(nvc):
        if rows.size == 0:
            break
        W.iterations += 1
        r = np.arange(rows.size)
        best = np.argmin(np.where(W.alive, W.Dst, np.inf), axis=1)
        n = W.N[r, best]
        w, wa, wb = _support_d(pa_w, pb_w, n)
        conv = _dot(w, n) - W.Dst[r, best] <= tol_w
        stop = conv | (W.nv >= nvc)
        converged[rows[conv]] = True
        go = np.nonzero(~stop)[0]
        new = W.take(go)
        bad = _expand(new, w[go], wa[go], wb[go], best[go], pa_w[go], pb_w[go], tol_w[go])
        W.put(go[~bad], new, ~bad)
        stop[go[bad]] = True
        if stop.any():
            out.put(rows[stop], W, stop)
            keep = ~stop
            W, rows, pa_w, pb_w, tol_w = W.take(keep), rows[keep], pa_w[keep], pb_w[keep], tol_w[keep]
    if rows.size:
        out.put(rows, W, np.ones(rows.size, dtype=bool))
    # Answer of the closest face: origin projected on its plane, barycentrics -> witnesses.
    r = np.arange(k)
    best = np.argmin(np.where(out.alive, out.Dst, np.inf), axis=1)
    n = out.N[r, best]
    depth = out.Dst[r, best]
    f = out.F[r, best]
    a, b, c = out.V[r, f[:, 0]], out.V[r, f[:, 1]], out.V[r, f[:, 2]]
    p = depth[:, None] * n
    area = _dot(n, _cross(b - a, c - a))
    with np.errstate(divide="ignore", invalid="ignore"):
        lb = _dot(n, _cross(p - a, c - a)) / area
        lc = _dot(n, _cross(b - a, p - a)) / area
    lam = np.stack((1.0 - lb - lc, lb, lc), axis=-1)
    ca = np.einsum("kj,kji->ki", lam, out.VA[r[:, None], f])
    cb = np.einsum("kj,kji->ki", lam, out.VB[r[:, None], f])
    # Touching pairs: depth 0 along the detected direction; witnesses are GJK's common point.
    depth = np.where(touch, 0.0, depth)
    n = np.where(touch[:, None], touch_n, n)
    return depth, -n, ca, cb, touch, converged, out


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
