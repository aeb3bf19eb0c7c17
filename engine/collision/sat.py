"""Batched separating-axis test (SAT) for pairs of convex polytopes (Box, ConvexHull).

For two convex polytopes the candidate axes are the face normals of A, the face normals of B
and the cross products of edge pairs that form a face of the Minkowski difference A - B. The
largest separation over these axes is the exact signed distance when the shapes overlap
(minus the penetration depth) and a lower bound of the distance when they are apart.

Edge pairs are pruned with Gregorius' Gauss-map test (GDC 2013, "The Separating Axis Test
between Convex Polyhedra"): edges a (faces with normals na1, na2) and b (nb1, nb2) build a
Minkowski face iff the arcs na1-na2 and -nb1 - -nb2 cross on the unit sphere. This is not an
optimisation only: the cheap edge separation ``axis . (pb - pa)`` is only valid when both
edges are the supporting features along the axis, which is exactly what the test guarantees.

Everything is vectorised over M pairs: the work is done in A's local frame (B is mapped in
with the relative pose), face queries are (M, F, V) batched products and the edge query is
(M, Ea, Eb) built from triple products so it needs only batched matrix products:
    (da x db) . p  =  da . (db x p)  =  db . (p x da).
Padding in the ShapeTable repeats element 0, so no masks are needed over faces, points or
edges (a padded edge pair is a copy of a real one).

Two paths share the output format: box-box pairs use the analytic 15-axis OBB test (no vertex
or edge arrays at all; bench/bench_narrowphase.py times it); other pairs run the face queries,
drop the edges that provably cannot beat the best face axis, and test the remaining edge pairs
in cost-sorted chunks.
Both prunings are exact (the answer is the exhaustive one, bit for bit in the tests) and make
big hulls cheap (bench/bench_hull_cap.py, 64-vertex rocks: 370 -> 48 us per touching pair):
- face query (face_query_pruned): a few probe points of the other shape bound every face's
  separation from above; only faces whose bound reaches the best exact face value are
  evaluated over all points (used from FACE_PRUNE_MIN plane-point products up);
- edges (_covered_edges): the support function of A - B is Lipschitz on the Gauss sphere, so
  each evaluated face axis rules out a cap of axes around it; an edge whose Gauss-map arc (it
  joins two face axes) is covered by its two end caps drops out. About 10 edges per shape
  survive even for 128-vertex hulls 0.3 deep (was ~110 with the distance test, _near_edges,
  which remains for the exhaustive route, PRUNE_GAUSS = False).

The axis chosen for the manifold is biased towards faces (A's, then B's) as Box2D and Bullet
do, so resting contacts keep multi-point manifolds; ``separation`` is always the exact max.
An edge axis between nearly parallel faces still gets a multi-point manifold (clip.py clips
the faces beside the two edges along the edge axis), so the bias need not be stronger: making
faces win whenever they are within the speculative margin of the edge made a tower of tipping
beams sink deeper and changed nothing on crossed-beam drops (likely because such a face axis is
farther from the direction of least penetration: its gaps overstate the depth or the clip drops
the part outside the face); a larger relative tolerance (Gregorius and Box2D v3 use 10 %)
behaved the same as REL_TOL.
SAT axis caching (trying last step's axis first) is not implemented: the box path costs about
as much as one cached-axis test would, and for hulls it would only speed up pairs already
farther apart than the margin, which the broadphase mostly filters out.
"""
import numpy as np

from ..core import detmath
from ..core.vec import cross

# Axis kinds of a SAT answer (StepRecord.axis_kind); KIND_NONE for rows without one.
FACE_A, FACE_B, EDGE = 0, 1, 2
KIND_NONE = -1

# Edge pairs closer to parallel than this (sine of the angle) give no axis: the cross
# product's direction is noise there, and the adjacent face axes already bound the answer.
PARALLEL_SIN = 1e-5
# Bias towards face axes (stable, multi-point manifolds): an edge axis (or B's face over A's)
# is used for the manifold only if it beats the other by this much. Relative to the
# separation, plus an absolute part relative to the smaller shape's size.
REL_TOL = 0.05
ABS_TOL = 1e-3


class SatResult:
    """Per-pair SAT answer.

    separation (M,): exact max over all candidate axes (the exact signed distance if < 0).
    kind (M,): FACE_A / FACE_B / EDGE of the axis chosen for the manifold (face-biased).
    index (M, 2): (face, -1) for face axes, (edge of A, edge of B) for edge axes.
    axis_separation (M,): separation along the chosen axis (<= separation by the bias).
    normal (M, 3): world unit normal of the chosen axis, from A to B.
    face_a, face_b, edge (M,): best separations of each query (edge is -inf where unused).
    edge_index (M, 2), edge_axis (M, 3): best edge pair and its unit axis in A's frame.
    rot, trans: pose of B in A's frame (x_A = rot @ x_B + trans), reused by the clipper.
    """
    __slots__ = (
        "axis_separation",
        "edge",
        "edge_axis",
        "edge_index",
        "face_a",
        "face_b",
        "index",
        "kind",
        "local_normal",
        "normal",
        "rot",
        "separation",
        "trans",
    )

    def __init__(self, **kw):
        for k, v in kw.items():
            setattr(self, k, v)


def relative_pose(pos_a, rot_a, pos_b, rot_b):
    """Pose of B in A's frame: x_A = rot @ x_B + trans."""
    rt = rot_a.transpose(0, 2, 1)
    rot = np.matmul(rt, rot_b)
    trans = np.matmul(rt, (pos_b - pos_a)[:, :, None])[:, :, 0]
    return rot, trans


def transform(rot, trans, pts):
    """Apply per-pair poses to points (M, V, 3)."""
    return np.matmul(pts, rot.transpose(0, 2, 1)) + trans[:, None, :]


def _count_slice(counts):
    """Width needed for a batch: the largest real count (padding repeats element 0)."""
    return int(counts.max()) if len(counts) else 1


def face_query(planes, points):
    """Max over faces of the min signed distance of the other shape's points to each plane.

    planes (M, F, 4) and points (M, V, 3) in the same frame -> (separation (M,), face (M,),
    signed distances (M, F, V) of every point to every plane, per-plane separations (M, F),
    per-plane index of the point attaining them (M, F)).
    """
    d = np.matmul(planes[:, :, :3], points.transpose(0, 2, 1)) - planes[:, :, 3:]  # (M, F, V)
    low = d.argmin(axis=2)
    s = np.take_along_axis(d, low[:, :, None], 2)[:, :, 0]
    f = s.argmax(axis=1)
    return np.take_along_axis(s, f[:, None], 1)[:, 0], f, d, s, low


# Points of the other shape that give the cheap first bound of the pruned face query.
FACE_PROBE = 8
# Plane-point products (F_a V_b + F_b V_a of a chunk) from which the pruned face query is used:
# below it the exhaustive one costs the same (bench/bench_hull_cap.py, rock hulls: even at 16
# vertices per hull (896), 2-2.5x faster at 32 (3840), 4x at 64, 5x at 128).
FACE_PRUNE_MIN = 2000


def face_query_pruned(planes, nfaces, points, toward):
    """Same answer as face_query (separation, face), without all F x V distances.

    Every point p of the other shape bounds a face's separation from above (the separation is
    the min over points): a probe of FACE_PROBE points, the other shape's points deepest
    along ``toward`` (M, 3) (roughly from the other shape towards this one's faces; any choice is
    correct, a good one prunes more), gives upper bounds ub (M, F). The face with the largest ub
    is evaluated exactly; its separation lb is a lower bound of the max, so only faces with
    ub >= lb can hold it and only those are evaluated over all points (compacted, padded).
    Ties keep the lowest face index, as face_query's argmax does.

    Returns (separation (M,), face (M,), per-plane separations (M, F) (exact for evaluated faces,
    the upper bound elsewhere), per-plane point index attaining them (M, F)): the last two are
    valid inputs of _covered_edges and _near_edges, which need only a point of the other shape
    and an upper bound of each face's separation.
    """
    m, nf = planes.shape[0], planes.shape[1]
    rows = np.arange(m)[:, None]
    k = min(FACE_PROBE, points.shape[1])
    depth = np.matmul(points, toward[:, :, None])[:, :, 0]
    probe = np.argpartition(depth, k - 1, axis=1)[:, :k] if k < points.shape[1] else \
        np.broadcast_to(np.arange(k), (m, k))
    d = np.matmul(planes[:, :, :3], points[rows, probe].transpose(0, 2, 1)) - planes[:, :, 3:]
    j = d.argmin(axis=2)
    ub = np.take_along_axis(d, j[:, :, None], 2)[:, :, 0]
    low = probe[rows, j]
    real = np.arange(nf)[None, :] < nfaces[:, None]
    ub = np.where(real, ub, -np.inf)  # padded faces copy face 0: never needed
    top = ub.argmax(axis=1)
    pl = planes[np.arange(m), top]
    lb = (np.matmul(points, pl[:, :3, None])[:, :, 0] - pl[:, 3:]).min(axis=1)
    # Rounding of the two products may differ: a relative slack keeps the top face in.
    slack = 1e-12 * (np.abs(lb) + np.abs(planes[:, :1, 3]).max(axis=1) + 1.0)
    order, mask = _compact(ub >= (lb - slack)[:, None])
    ps = planes[rows, order]
    ds = np.matmul(ps[:, :, :3], points.transpose(0, 2, 1)) - ps[:, :, 3:]  # (M, S, V)
    low_s = ds.argmin(axis=2)
    sep_s = np.where(mask, np.take_along_axis(ds, low_s[:, :, None], 2)[:, :, 0], -np.inf)
    best = sep_s.argmax(axis=1)
    est = ub.copy()
    np.put_along_axis(est, order, np.where(mask, sep_s, np.take_along_axis(ub, order, 1)), 1)
    np.put_along_axis(low, order, np.where(mask, low_s, np.take_along_axis(low, order, 1)), 1)
    est = np.where(real, est, est[:, :1])
    low = np.where(real, low, low[:, :1])
    return sep_s[np.arange(m), best], order[np.arange(m), best], est, low


def _covered_edges(table, ids, plane_sep, k_len, face_best, tol):
    """Mask (M, E) of the edges whose whole Gauss-map arc is proven unable to beat face_best.

    The SAT value of an axis u is sep(u) = -h_K(u), h_K the support function of K = A - B
    (B's points subtracted, in one frame). For a face axis n with support point k of K,
    h_K(u) >= k . u >= h_K(n) - |k| |u - n|, so every axis within chord (h_K(n) - r) / |k| of n
    has h_K > r, i.e. sep < -r. With r = -face_best (+ tol), the face axes already evaluated
    by the face queries are the centres of caps on the unit sphere where no axis can beat the
    best face. An edge's candidate axes lie on the arc between its two face normals, which are
    two of those centres: when the two caps meet, no axis of that edge can be the answer and
    the edge drops out of the quadratic edge-pair step, exactly (Lipschitz bound of the support
    function, in the spirit of Gregorius' Gauss-map pruning). The caps are widest where the
    support points of A and B are close, i.e. around the contact, which leaves only the edges
    of the few faces whose axes are nearly as good as the best.

    plane_sep (M, F): separation of this shape's face axes, k_len (M, F): |k| at each of them.
    """
    gap = np.maximum(face_best[:, None] - plane_sep - tol[:, None], 0.0)
    chord = gap / np.maximum(k_len, 1e-300)
    theta = 2.0 * detmath.arcsin(np.minimum(0.5 * chord, 1.0))  # cap radius (angle)
    ne = _count_slice(table.nedges[ids])
    ef = table.edge_faces[ids, :ne]
    rows = np.arange(len(ids))[:, None]
    arc = _edge_arcs(table)[ids, :ne]
    covered = theta[rows, ef[:, :, 0]] + theta[rows, ef[:, :, 1]] > arc * (1.0 + 1e-9) + 1e-12
    return covered | (np.arange(ne)[None, :] >= table.nedges[ids][:, None])


_ARCS: dict = {}


def _edge_arcs(table):
    """Angle (S, E) between the two face normals of every edge of a ShapeTable (its Gauss-map
    arc length), computed once per table (the cache holds the normals array it was made from)."""
    key = id(table)
    hit = _ARCS.get(key)
    if hit is not None and hit[0] is table.edge_normals:
        return hit[1]
    n = table.edge_normals
    c = cross(n[..., 0, :], n[..., 1, :])
    arc = detmath.arctan2(np.sqrt(_dot3(c, c)), _dot3(n[..., 0, :], n[..., 1, :]))
    if len(_ARCS) > 64:
        _ARCS.clear()
    _ARCS[key] = (table.edge_normals, arc)
    return arc


def _dot3(a, b):
    return a[..., 0] * b[..., 0] + a[..., 1] * b[..., 1] + a[..., 2] * b[..., 2]


def _norm(v):
    return np.sqrt(_dot3(v, v))


def vertex_mean(points, counts):
    """Mean of the real points of padded rows (an interior point of a polytope)."""
    v = points.shape[1]
    total = points.sum(axis=1) - (v - counts)[:, None] * points[:, 0]
    return total / counts[:, None]


def edge_query(pa, ea, dir_a, nrm_a, mask_a, cen_a, pb, eb, dir_b, nrm_b, mask_b):
    """Best edge-edge axis over Minkowski-face edge pairs; everything in A's frame.

    pa (M, Va, 3) points, ea (M, Ea, 2) edge vertex indices, dir_a (M, Ea, 3) unit directions,
    nrm_a (M, Ea, 2, 3) normals of the two faces at each edge, mask_a (M, Ea) edges to use,
    cen_a (M, 3) an interior point of A; same for B (already mapped into A's frame). Returns
    (separation (M,), position of the edge in ea, in eb, unit axis (M, 3) oriented A -> B);
    separation is -inf where no pair is valid.
    """
    m = len(pa)
    rows = np.arange(m)[:, None]
    a0 = pa[rows, ea[:, :, 0]]  # (M, Ea, 3) a point of each edge
    b0 = pb[rows, eb[:, :, 0]]
    na1, na2 = nrm_a[:, :, 0], nrm_a[:, :, 1]
    # Gauss map of A - B: B's normals are negated. Arc (na1, na2) vs arc (-nb1, -nb2).
    nc, nd = -nrm_b[:, :, 0], -nrm_b[:, :, 1]
    bxa = cross(na2, na1)  # (M, Ea, 3)
    dxc = cross(nd, nc)    # (M, Eb, 3)
    bxa_t = bxa.transpose(0, 2, 1)
    cba = np.matmul(nc, bxa_t).transpose(0, 2, 1)  # (M, Ea, Eb): C . (B x A)
    dba = np.matmul(nd, bxa_t).transpose(0, 2, 1)
    dxc_t = dxc.transpose(0, 2, 1)
    adc = np.matmul(na1, dxc_t)                    # A . (D x C)
    bdc = np.matmul(na2, dxc_t)
    valid = (cba * dba < 0) & (adc * bdc < 0) & (cba * bdc > 0)
    valid &= mask_a[:, :, None] & mask_b[:, None, :]

    # Axis u = da x db (unnormalised); every dot product with it is a triple product.
    dir_b_t = dir_b.transpose(0, 2, 1)
    cosang = np.matmul(dir_a, dir_b_t)                       # (M, Ea, Eb)
    len2 = np.maximum(1.0 - cosang * cosang, 0.0)            # |u|^2 for unit directions
    valid &= len2 > PARALLEL_SIN * PARALLEL_SIN
    u_pb = np.matmul(dir_a, cross(dir_b, b0).transpose(0, 2, 1))   # u . b0
    u_pa = np.matmul(cross(a0, dir_a), dir_b_t)                    # u . a0
    u_ca = np.matmul(cross(cen_a[:, None, :], dir_a), dir_b_t)     # u . cen_a
    # Orient u away from A's interior: the plane through edge a with normal u supports A.
    sign = np.where(u_pa - u_ca < 0, -1.0, 1.0)
    sep = sign * (u_pb - u_pa) / np.sqrt(np.where(valid, len2, 1.0))
    sep = np.where(valid, sep, -np.inf)
    flat = sep.reshape(m, -1).argmax(axis=1)
    nb = sep.shape[2]
    ia, ib = flat // nb, flat % nb
    best = sep[np.arange(m), ia, ib]
    r = np.arange(m)
    axis = cross(dir_a[r, ia], dir_b[r, ib])
    axis *= (sign[r, ia, ib] / np.sqrt(np.maximum(len2[r, ia, ib], 1e-300)))[:, None]
    return best, ia, ib, axis


# Slack of the edge pruning below, relative to the pair's size.
PRUNE_TOL = 1e-6


# Planes of the other shape used to prune edges: the few it is most "outside" of.
PRUNE_PLANES = 6
# Gauss-map pruning (see _covered_edges); False restores the exhaustive route (benchmarks).
PRUNE_GAUSS = True


def _near_edges(table, ids, planes, points, plane_sep, tau):
    """Mask (M, E) of the edges that may come within tau of the other shape.

    planes (M, F, 4): the other shape's face planes, points (M, V, 3): this shape's points in
    the same frame, plane_sep (M, F) the planes' separations (or upper bounds of them). Any
    plane bounds the distance of a segment to the other (convex) shape from below by the
    smaller of its two ends' distances, so an edge more than tau outside some plane is too far
    to form the best axis (see _general_queries). Any subset of planes gives a valid (weaker)
    bound: the PRUNE_PLANES planes with the largest separations do nearly all the work."""
    k = min(PRUNE_PLANES, planes.shape[1])
    top = np.argpartition(-plane_sep, k - 1, axis=1)[:, :k] if k < planes.shape[1] else \
        np.broadcast_to(np.arange(k), plane_sep.shape)
    rows = np.arange(len(ids))[:, None]
    pl = planes[rows, top]
    d = np.matmul(points, pl[:, :, :3].transpose(0, 2, 1)) - pl[:, None, :, 3]  # (M, V, k)
    ne = _count_slice(table.nedges[ids])
    edges = table.edges[ids, :ne]
    lower = np.minimum(d[rows, edges[:, :, 0]], d[rows, edges[:, :, 1]]).max(axis=2)
    return (lower <= tau[:, None]) & (np.arange(ne)[None, :] < table.nedges[ids][:, None])


def _compact(keep):
    """Indices of the True entries moved to the front (M, K) and their mask, K = max count."""
    count = keep.sum(axis=1)
    k = max(int(count.max()), 1)
    order = np.argsort(~keep, axis=1, kind="stable")[:, :k]
    return order, np.arange(k)[None, :] < count[:, None]


# Edge pairs per chunk of the edge query: bounds the (chunk, Ea, Eb) temporaries (~16 MB each).
EDGE_CHUNK = 1 << 21
# Plane-point distances per chunk of general pairs (cache-sized temporaries, ~8 MB).
FACE_CHUNK = 1 << 20


def _chunks(cost):
    """Split pairs sorted by cost into runs whose size * max cost stays under EDGE_CHUNK."""
    order = np.argsort(cost, kind="stable")
    c = cost[order]
    bounds, start, n = [], 0, len(c)
    while start < n:
        # Largest end with (end - start) * c[end - 1] <= budget (c ascending), at least one pair.
        fits = (np.arange(start + 1, n + 1) - start) * c[start:] <= EDGE_CHUNK
        end = start + max(int(np.argmin(fits)) if not fits.all() else n - start, 1)
        bounds.append(order[start:end])
        start = end
    return bounds


def _general_queries(table, ids_a, ids_b, rot, trans, margin):
    """Face queries of A and B, then the edge query for pairs not already apart by margin.

    Edge pruning keeps the answer exact: with PRUNE_GAUSS the Gauss-map caps of the face axes
    (_covered_edges) drop edges none of whose axes can beat the best face. Without it, the
    distance test: for overlapping shapes the best edge pair's Minkowski face is within depth
    <= -face_best of the origin, so both edges lie within that distance of the other shape; for
    shapes apart by d <= margin the closest edges are d apart; edges farther than
    tau = max(-face_best, margin) from the other shape are dropped. Either way the quadratic
    edge-pair step only sees the edges near the contact. Pairs are then processed in chunks of
    similar cost so one deep pair does not widen everybody's arrays."""
    m = len(ids_a)
    margin = np.broadcast_to(np.asarray(margin, dtype=np.float64), (m,))
    va = _count_slice(table.npoints[ids_a])
    vb = _count_slice(table.npoints[ids_b])
    fa = _count_slice(table.nfaces[ids_a])
    fb = _count_slice(table.nfaces[ids_b])
    pts_a = table.points[ids_a, :va]
    pts_b = transform(rot, trans, table.points[ids_b, :vb])  # B's points in A's frame

    # Face query of A: B's points against A's planes. Face query of B: A's points in B's frame.
    rot_t = rot.transpose(0, 2, 1)
    trans_inv = -np.matmul(rot_t, trans[:, :, None])[:, :, 0]
    pts_a_in_b = transform(rot_t, trans_inv, pts_a)
    pl_a, pl_b = table.planes[ids_a, :fa], table.planes[ids_b, :fb]
    if PRUNE_GAUSS and fa * vb + fb * va >= FACE_PRUNE_MIN:
        # Probes: B's points deepest towards A's centre, A's points deepest towards B's.
        cen_a = vertex_mean(pts_a, table.npoints[ids_a])
        cen_b = vertex_mean(pts_b, table.npoints[ids_b])
        sep_a, face_a, planes_a, low_b = face_query_pruned(pl_a, table.nfaces[ids_a], pts_b,
                                                           cen_b - cen_a)
        sep_b, face_b, planes_b, low_a = face_query_pruned(
            pl_b, table.nfaces[ids_b], pts_a_in_b, np.matmul(rot_t, (cen_a - cen_b)[:, :, None])[:, :, 0])
    else:
        sep_a, face_a, _, planes_a, low_b = face_query(pl_a, pts_b)
        sep_b, face_b, _, planes_b, low_a = face_query(pl_b, pts_a_in_b)

    sep_e = np.full(m, -np.inf)
    edge_a = np.zeros(m, dtype=np.int64)
    edge_b = np.zeros(m, dtype=np.int64)
    axis_e = np.zeros((m, 3))
    face_best = np.maximum(sep_a, sep_b)
    todo = np.nonzero(face_best <= margin)[0]
    if not len(todo):
        return sep_a, face_a, sep_b, face_b, sep_e, edge_a, edge_b, axis_e
    scale = np.minimum(table.bound_radius[ids_a[todo]], table.bound_radius[ids_b[todo]])
    ta, tb = ids_a[todo], ids_b[todo]
    if PRUNE_GAUSS:
        # Support points of K = A - B at every face axis: a vertex of the face and the other
        # shape's deepest point (|k| does not depend on the frame). The Gauss-map caps alone
        # leave ~10 edges per shape even for 128-vertex hulls 0.3 deep; the distance test
        # below would only trim a few more at a cost larger than the edge step it saves.
        rows = np.arange(len(todo))[:, None]
        ka = table.points[ta[:, None], table.face_loops[ta, :fa, 0]] - pts_b[todo][rows, low_b[todo]]
        kb = pts_a_in_b[todo][rows, low_a[todo]] - table.points[tb[:, None], table.face_loops[tb, :fb, 0]]
        tol = PRUNE_TOL * scale
        keep_a = ~_covered_edges(table, ta, planes_a[todo], _norm(ka), face_best[todo], tol)
        keep_b = ~_covered_edges(table, tb, planes_b[todo], _norm(kb), face_best[todo], tol)
    else:
        tau = np.maximum(-face_best[todo], margin[todo]) + PRUNE_TOL * scale
        keep_a = _near_edges(table, ta, pl_b[todo], pts_a_in_b[todo], planes_b[todo], tau)
        keep_b = _near_edges(table, tb, pl_a[todo], pts_b[todo], planes_a[todo], tau)
    cost = np.maximum(keep_a.sum(axis=1), 1) * np.maximum(keep_b.sum(axis=1), 1)
    for part in _chunks(cost):
        sel = todo[part]
        ia, ib = ids_a[sel], ids_b[sel]
        ka, mask_a = _compact(keep_a[part])
        kb, mask_b = _compact(keep_b[part])
        r_t = rot[sel].transpose(0, 2, 1)
        ea = table.edges[ia[:, None], ka]
        eb = table.edges[ib[:, None], kb]
        dir_b = np.matmul(table.edge_dirs[ib[:, None], kb], r_t)
        nrm_b = np.matmul(table.edge_normals[ib[:, None], kb], r_t[:, None])
        pa_s = pts_a[sel]
        cen = vertex_mean(pa_s, table.npoints[ia])
        s, i, j, ax = edge_query(pa_s, ea, table.edge_dirs[ia[:, None], ka],
                                 table.edge_normals[ia[:, None], ka], mask_a, cen,
                                 pts_b[sel], eb, dir_b, nrm_b, mask_b)
        rows = np.arange(len(sel))
        sep_e[sel], axis_e[sel] = s, ax
        edge_a[sel] = ka[rows, i]
        edge_b[sel] = kb[rows, j]
    return sep_a, face_a, sep_b, face_b, sep_e, edge_a, edge_b, axis_e


# --------------------------------------------------------------------------- boxes
# Box-box: the classic 15-axis OBB test (Gottschalk et al. 1996) with exact support functions,
# so every axis value is a true lower bound and the max over the 15 is exact like the general
# path; much cheaper because it needs neither vertices nor the Gauss-map pruning
# (bench/bench_narrowphase.py compares the two on boxes).
_I1 = np.array([1, 2, 0])
_I2 = np.array([2, 0, 1])
_BOX_EDGE_LUT = None
def _box_edge_lut():
    """Index of the Box edge joining corners (v0, v1): corner bits are x, y, z signs."""
    global _BOX_EDGE_LUT
    if _BOX_EDGE_LUT is None:
        from ..shapes.primitives import Box
        lut = np.full((8, 8), -1, dtype=np.int64)
        for k, (a, b) in enumerate(Box([1.0, 1.0, 1.0]).edges):
            lut[a, b] = lut[b, a] = k
        _BOX_EDGE_LUT = lut
    return _BOX_EDGE_LUT


def _box_queries(ha, hb, rot, trans):
    """Face and edge queries of M box pairs in A's frame (same outputs as _general_queries)."""
    m = len(ha)
    rows = np.arange(m)
    t = trans
    absr = np.abs(rot)
    # Face axes of A: separation along +-e_i, the face on B's side.
    s_a = np.abs(t) - ha - np.matmul(absr, hb[:, :, None])[:, :, 0]
    i = np.argmax(s_a, axis=1)
    sep_a = s_a[rows, i]
    face_a = 2 * i + (t[rows, i] > 0)
    # Face axes of B: A's centre in B's axes decides which face of B looks at A.
    tb = np.matmul(rot.transpose(0, 2, 1), t[:, :, None])[:, :, 0]
    s_b = np.abs(tb) - hb - np.matmul(absr.transpose(0, 2, 1), ha[:, :, None])[:, :, 0]
    j = np.argmax(s_b, axis=1)
    sep_b = s_b[rows, j]
    face_b = 2 * j + (tb[rows, j] <= 0)
    # Edge axes L_ij = e_i x R[:, j] (A's frame): L[i1] = -R[i2, j], L[i2] = R[i1, j].
    r1, r2 = rot[:, _I1, :], rot[:, _I2, :]
    a1, a2 = absr[:, _I1, :], absr[:, _I2, :]
    tl = t[:, _I2, None] * r1 - t[:, _I1, None] * r2
    ra = ha[:, _I1, None] * a2 + ha[:, _I2, None] * a1
    rb = hb[:, None, _I1] * absr[:, :, _I2] + hb[:, None, _I2] * absr[:, :, _I1]
    len2 = 1.0 - rot * rot
    ok = len2 > PARALLEL_SIN * PARALLEL_SIN
    sep = np.where(ok, (np.abs(tl) - ra - rb) / np.sqrt(np.where(ok, len2, 1.0)), -np.inf)
    flat = sep.reshape(m, 9).argmax(axis=1)
    ei, ej = flat // 3, flat % 3
    sep_e = sep.reshape(m, 9)[rows, flat]
    # Unit axis oriented A -> B, and the supporting edges (corner bits from its signs).
    col = rot[rows, :, ej]
    axis = cross(np.eye(3)[ei], col)
    axis *= (np.where(tl[rows, ei, ej] < 0, -1.0, 1.0)
             / np.sqrt(np.maximum(len2[rows, ei, ej], 1e-300)))[:, None]
    bits = (axis > 0).astype(np.int64) * np.array([1, 2, 4])
    va0 = bits.sum(axis=1) - bits[rows, ei]
    w = -np.matmul(rot.transpose(0, 2, 1), axis[:, :, None])[:, :, 0]  # B supports along -axis
    bits_b = (w > 0).astype(np.int64) * np.array([1, 2, 4])
    vb0 = bits_b.sum(axis=1) - bits_b[rows, ej]
    lut = _box_edge_lut()
    edge_a = lut[va0, va0 | (1 << ei)]
    edge_b = lut[vb0, vb0 | (1 << ej)]
    return sep_a, face_a, sep_b, face_b, sep_e, edge_a, edge_b, axis


def polytope_sat(table, ids_a, pos_a, rot_a, ids_b, pos_b, rot_b, margin=np.inf, bias=True):
    """SAT for M polytope pairs (shape ids into ``table``, world poses with rotation matrices).

    margin: scalar or (M,).
    bias=False chooses the exact best axis (queries); the default prefers faces (manifolds).

    Box-box pairs take the analytic 15-axis path, other pairs the general face/edge queries.
    General pairs whose face separation already exceeds ``margin`` skip the (costlier) edge
    query: they are reported with their face axis, which proves them farther apart than margin.
    """
    ids_a = np.asarray(ids_a, dtype=np.int64)
    ids_b = np.asarray(ids_b, dtype=np.int64)
    m = len(ids_a)
    margin = np.broadcast_to(np.asarray(margin, dtype=np.float64), (m,))
    rot, trans = relative_pose(pos_a, rot_a, pos_b, rot_b)
    is_box, half = table.is_box, table.box_half
    boxes = is_box[ids_a] & is_box[ids_b]
    if boxes.all():
        parts = _box_queries(half[ids_a], half[ids_b], rot, trans)
    else:
        parts = [np.zeros(m), np.zeros(m, np.int64), np.zeros(m), np.zeros(m, np.int64),
                 np.zeros(m), np.zeros(m, np.int64), np.zeros(m, np.int64), np.zeros((m, 3))]
        sel = np.nonzero(boxes)[0]
        if len(sel):
            pieces = _box_queries(half[ids_a[sel]], half[ids_b[sel]], rot[sel], trans[sel])
            for whole, piece in zip(parts, pieces):
                whole[sel] = piece
        # General pairs in chunks: the face queries hold (chunk, F, V) distance matrices.
        gen = np.nonzero(~boxes)[0]
        size = table.nfaces[ids_a[gen]].max() * table.npoints[ids_b[gen]].max() + \
            table.nfaces[ids_b[gen]].max() * table.npoints[ids_a[gen]].max()
        step = max(int(FACE_CHUNK // max(int(size), 1)), 64)
        for start in range(0, len(gen), step):
            s = gen[start:start + step]
            pieces = _general_queries(table, ids_a[s], ids_b[s], rot[s], trans[s], margin[s])
            for whole, piece in zip(parts, pieces):
                whole[s] = piece
    sep_a, face_a, sep_b, face_b, sep_e, edge_a, edge_b, axis_e = parts

    # Choice for the manifold, biased towards A's face, then B's face, then edges.
    rel, ab = (REL_TOL, ABS_TOL) if bias else (0.0, 0.0)
    scale = np.minimum(table.bound_radius[ids_a], table.bound_radius[ids_b])
    use_b = sep_b > sep_a + rel * np.abs(sep_a) + ab * scale
    face_sep = np.where(use_b, sep_b, sep_a)
    use_e = sep_e > face_sep + rel * np.abs(face_sep) + ab * scale
    kind = np.where(use_e, EDGE, np.where(use_b, FACE_B, FACE_A)).astype(np.int8)
    index = np.stack((np.where(use_e, edge_a, np.where(use_b, face_b, face_a)),
                      np.where(use_e, edge_b, -1)), axis=1)
    axis_sep = np.where(use_e, sep_e, face_sep)

    # Unit normal A -> B in A's frame: A's face normal, minus B's face normal, or the edge axis.
    n_a = table.planes[ids_a, face_a, :3]
    n_b = np.matmul(rot, table.planes[ids_b, face_b, :3][:, :, None])[:, :, 0]
    local = np.where(use_e[:, None], axis_e, np.where(use_b[:, None], -n_b, n_a))
    normal = np.matmul(rot_a, local[:, :, None])[:, :, 0]
    return SatResult(separation=np.maximum(np.maximum(sep_a, sep_b), sep_e), kind=kind,
                     index=index, axis_separation=axis_sep, normal=normal, local_normal=local,
                     face_a=sep_a, face_b=sep_b, edge=sep_e, edge_index=np.stack((edge_a, edge_b), 1),
                     edge_axis=axis_e, rot=rot, trans=trans)
