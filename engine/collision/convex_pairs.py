"""Contact manifolds of convex shape pairs of any kinds, compiled: one kernel call a batch.

``shape_rows`` takes M pairs of shape ids with their world poses (rotation matrices) and
fills Manifolds rows (narrowphase.Manifolds' arrays), every pair on its own route without
grouping them first: the rounder shape of a pair is put first (sphere < capsule < polytope <
cylinder, cone; narrowphase.RANK), the route is picked by the kinds, and a swapped pair gets
its normal (and GJK simplex) flipped back:

    sphere/capsule pairs       round_kernels.round_round_pair
    sphere/capsule - polytope  round_kernels.round_polytope_pair
    a cylinder or cone         curved_kernels.curved_pair
    polytope - polytope        gathered and run together (polytope_rows: the SAT queries
                               and the face-biased choice of sat_kernels, every manifold by
                               clip_kernels.manifolds), as polytope_pairs does

``culled_rows`` is the world's pass over its body pairs that are not two polytopes (spheres,
capsules, cylinders and cones among them; polytope_pairs runs it in the same kernel as the
polytope pairs): the bounding-sphere cull, the rotation matrices of the normalised body
quaternions (quat.matrix_of: quat.to_matrix term for term) and shape_rows.
narrowphase.collide and nonconvex.collide_bodies (compound parts) are the Python entry points
of shape_rows.
"""
import numpy as np

from ..core.jit import kernel
from ..core.quat import matrix_of
from . import clip_kernels, curved_kernels, round_kernels, sat_kernels
from .sat import ABS_TOL, KIND_NONE, REL_TOL

POLYTOPE, COMPOUND, TRIANGLE_MESH = 0, 3, 4    # engine.core.kinds.ShapeKind, as plain ints


@kernel
def polytope_rows(ids_a, ids_b, pos_a, rot_a, pos_b, rot_b, marg, sat_tab, arcs, lut,
                  clip_tab, consts, prune, clip_faces, edge_fallback, nrm, a_kind, a_index, pts,
                  s4, id4, cnt, separation):
    """Manifolds of F polytope pairs (world poses, rotation matrices, margins marg): the SAT
    (sat_kernels.queries and choose with the face bias, as sat.polytope_sat), then every
    pair's manifold (clip_kernels.manifolds):

    - face axes clip the reference face against the incident face (clip.py);
    - edge axes give one point at the closest points of the two edges, or, between nearly
      parallel faces, those faces clipped along the axis (2-4 points, the deepest at the SAT
      depth);
    - a face axis whose clipping found nothing (the face bias kept a face axis where an edge
      pair is the real contact) takes the edge route, but only if the SAT's best edge pair is
      within the face bias of the pair's separation: the best of the edges its pruning kept
      can be a useless axis (metres deep) when the face axis is far better;
    - last resort (not seen in tests, kept so an overlap can never lose its contact): one point
      at B's deepest vertex along the normal, with the support gap along it as separation.

    Writes the normal nrm, axis a_kind, a_index,
    points pts, separations s4, ids id4, count cnt (unused slots as given: +inf / 0) and the
    SAT's separation of each pair. sat_tab: the ShapeTable arrays sat_kernels.queries reads
    (polytope_pairs builds the tuple); consts, clip_faces: clip_kernels.manifolds';
    edge_fallback False (a test hook) hides the SAT's best edge pair from the clipper."""
    f = ids_a.shape[0]
    rot = np.empty((f, 3, 3))
    trans = np.empty((f, 3))
    out_f = np.empty((f, 3))
    out_i = np.empty((f, 4), np.int64)
    axis_e = np.empty((f, 3))
    (is_box, box_half, npoints, points_t, nfaces, planes, face_loops, nedges, edges,
     edge_dirs, edge_normals, edge_faces, bound_radius) = sat_tab
    sat_kernels.queries(ids_a, ids_b, True, pos_a, rot_a, pos_b, rot_b, rot, trans, marg,
                        True, prune, is_box, box_half, lut, npoints, points_t, nfaces, planes,
                        face_loops, nedges, edges, edge_dirs, edge_normals, edge_faces, arcs,
                        bound_radius, out_f, out_i, axis_e)
    kind = np.empty(f, np.int8)
    index = np.empty((f, 2), np.int64)
    axis_sep = np.empty(f)
    local = np.empty((f, 3))
    sat_kernels.choose(ids_a, ids_b, rot_a, rot, planes, bound_radius, out_f, out_i, axis_e,
                       REL_TOL, ABS_TOL, separation, kind, index, axis_sep, local, nrm)
    for i in range(f):              # the SAT's answer in, the manifold's axis out
        a_kind[i] = kind[i]
        a_index[i, 0] = index[i, 0]
        a_index[i, 1] = index[i, 1]
    edge_sep = out_f[:, 2].copy()
    if not edge_fallback:
        edge_sep[:] = -np.inf
    clip_kernels.manifolds(clip_tab, ids_a, ids_b, pos_a, rot_a, pos_b, rot_b, rot, trans,
                           marg, separation, kind, index, edge_sep, out_i[:, 2:].copy(),
                           axis_e, consts, clip_faces, nrm, a_kind, a_index, pts, s4, id4, cnt)


@kernel
def _blank(i, normal, points, separation, ids, count, axis_kind, axis_index, distance, simplex,
           simplex_size):
    """Row i as narrowphase.Manifolds starts it: no points, normal +Z, no axis."""
    normal[i, 0] = 0.0
    normal[i, 1] = 0.0
    normal[i, 2] = 1.0
    for j in range(4):
        for k in range(3):
            points[i, j, k] = 0.0
            simplex[i, j, k] = 0.0
        separation[i, j] = np.inf
        ids[i, j] = 0
    count[i] = 0
    axis_kind[i] = KIND_NONE
    axis_index[i, 0] = -1
    axis_index[i, 1] = -1
    distance[i] = np.inf
    simplex_size[i] = 0


@kernel
def shape_rows(ids_a, pos_a, rot_a, ids_b, pos_b, rot_b, margin, tabs, consts, normal, points,
               separation, ids, count, axis_kind, axis_index, distance, simplex, simplex_size):
    """Manifolds (narrowphase.Manifolds' arrays, every row written) of M convex shape pairs
    (ids into the ShapeTable, world positions and rotation matrices, margins), normals from A
    to B. tabs, consts: what narrowphase.shape_args builds (the table's arrays for each
    route; the kind ranks, the feature width, the face bias, the clipper's constants and
    switches)."""
    kind, round_tab, curved_tab, sat_tab, arcs, lut, clip_tab = tabs
    rank, width, bias, clip_consts, prune, clip_faces, edge_fallback = consts
    m = ids_a.shape[0]
    n_poly = 0
    n_round = 0
    n_curved = 0
    for i in range(m):
        _blank(i, normal, points, separation, ids, count, axis_kind, axis_index, distance,
               simplex, simplex_size)
        ka = kind[ids_a[i]]
        kb = kind[ids_b[i]]
        if ka == POLYTOPE and kb == POLYTOPE:
            n_poly += 1
        elif curved_kernels._is_curved(ka) or curved_kernels._is_curved(kb):
            n_curved += 1
        else:
            n_round += 1
    # Each route's scratch only where it has pairs (a pass of balls needs no EPA arrays).
    if n_round:
        rs = round_kernels.round_scratch(round_tab, bias)
        ws, basis, pa, pb, rel_rot, S, SA, SB, used, lam, gs, rconsts = rs
        for i in range(m):
            a, b, ka, kb, swap = _oriented(i, ids_a, ids_b, kind, rank)
            if ka == POLYTOPE or curved_kernels._is_curved(kb):
                continue
            ra, xa, rb, xb = _poses(swap, rot_a[i], pos_a[i], rot_b[i], pos_b[i])
            if kb != POLYTOPE:
                round_kernels.round_round_pair(round_tab, a, b, ra, xa, rb, xb, margin[i], i,
                                               normal, points, separation, ids, count,
                                               axis_kind, distance, ws, basis)
            else:
                round_kernels.round_polytope_pair(round_tab, a, b, ra, xa, rb, xb, margin[i],
                                                  rconsts, i, normal, points, separation, ids,
                                                  count, axis_kind, axis_index, distance,
                                                  simplex, simplex_size, ws, pa, pb, rel_rot,
                                                  S, SA, SB, used, lam, gs)
            _flip(swap, i, normal, simplex)
    if n_curved:
        cs = curved_kernels.pair_scratch(curved_tab, width)
        for i in range(m):
            a, b, ka, kb, swap = _oriented(i, ids_a, ids_b, kind, rank)
            if not (curved_kernels._is_curved(ka) or curved_kernels._is_curved(kb)):
                continue
            ra, xa, rb, xb = _poses(swap, rot_a[i], pos_a[i], rot_b[i], pos_b[i])
            curved_kernels.curved_pair(curved_tab, a, b, ra, xa, rb, xb, margin[i], width, i,
                                       normal, points, separation, ids, count, axis_kind,
                                       distance, cs)
            _flip(swap, i, normal, simplex)
    if n_poly:
        _polytope_part(ids_a, pos_a, rot_a, ids_b, pos_b, rot_b, margin, kind, n_poly, sat_tab,
                       arcs, lut, clip_tab, clip_consts, prune, clip_faces, edge_fallback,
                       normal, points, separation, ids, count, axis_kind, axis_index, distance)
    for i in range(m):
        # Unused slots: +inf separation, zero id and point (routes may leave scratch there).
        for j in range(count[i], 4):
            separation[i, j] = np.inf
            ids[i, j] = 0
            for k in range(3):
                points[i, j, k] = 0.0


@kernel(inline="always")
def _oriented(i, ids_a, ids_b, kind, rank):
    """Row i's shapes and kinds with the rounder first (a, b, kind of a, kind of b), and
    whether that swapped them."""
    a = ids_a[i]
    b = ids_b[i]
    ka = kind[a]
    kb = kind[b]
    if rank[ka] > rank[kb]:
        return b, a, kb, ka, True
    return a, b, ka, kb, False


@kernel(inline="always")
def _poses(swap, rot_a, pos_a, rot_b, pos_b):
    """A row's two poses in _oriented's order."""
    if swap:
        return rot_b, pos_b, rot_a, pos_a
    return rot_a, pos_a, rot_b, pos_b


@kernel(inline="always")
def _flip(swap, i, normal, simplex):
    """A swapped row's normal (and GJK simplex, which lives on B - A) back to A -> B."""
    if swap:
        for k in range(3):
            normal[i, k] = normal[i, k] * -1.0
        for j in range(4):
            for k in range(3):
                simplex[i, j, k] = simplex[i, j, k] * -1.0


@kernel
def _polytope_part(ids_a, pos_a, rot_a, ids_b, pos_b, rot_b, margin, kind, n_poly, sat_tab,
                   arcs, lut, clip_tab, clip_consts, prune, clip_faces, edge_fallback, normal,
                   points, separation, ids, count, axis_kind, axis_index, distance):
    """shape_rows' polytope pairs: gathered, run by polytope_rows, put back in their rows."""
    rows = np.empty(n_poly, np.int64)
    j = 0
    for i in range(ids_a.shape[0]):
        if kind[ids_a[i]] == POLYTOPE and kind[ids_b[i]] == POLYTOPE:
            rows[j] = i
            j += 1
    pa = np.ascontiguousarray(pos_a[rows])
    pb = np.ascontiguousarray(pos_b[rows])
    ra = np.ascontiguousarray(rot_a[rows])
    rb = np.ascontiguousarray(rot_b[rows])
    sa = ids_a[rows]
    sb = ids_b[rows]
    marg = margin[rows]
    nrm = np.empty((n_poly, 3))
    a_kind = np.empty(n_poly, np.int8)
    a_index = np.empty((n_poly, 2), np.int64)
    pts = np.zeros((n_poly, 4, 3))
    s4 = np.full((n_poly, 4), np.inf)
    id4 = np.zeros((n_poly, 4), np.int64)
    cnt = np.zeros(n_poly, np.int64)
    sep = np.empty(n_poly)
    polytope_rows(sa, sb, pa, ra, pb, rb, marg, sat_tab, arcs, lut, clip_tab, clip_consts,
                  prune, clip_faces, edge_fallback, nrm, a_kind, a_index, pts, s4, id4, cnt, sep)
    for j in range(n_poly):
        i = rows[j]
        for k in range(3):
            normal[i, k] = nrm[j, k]
        for p in range(4):
            for k in range(3):
                points[i, p, k] = pts[j, p, k]
            separation[i, p] = s4[j, p]
            ids[i, p] = id4[j, p]
        count[i] = cnt[j]
        axis_kind[i] = a_kind[j]
        axis_index[i, 0] = a_index[j, 0]
        axis_index[i, 1] = a_index[j, 1]
        distance[i] = sep[j]


@kernel
def culled_rows(ia, ib, sid, pos, qn, margin, take, tabs, consts):
    """The manifolds of the candidate body pairs i with take[i] (convex shapes sid (N,) into
    the table, at body origins pos and normalised quaternions qn, margins (M,)) whose
    bounding spheres come within the margin (nonconvex._within_reach's test), through
    shape_rows with the rotation matrices of qn (quat.matrix_of). Returns (rows, their pair
    indices in order; normal, points, separation, ids, count, axis_kind, axis_index: their
    narrowphase.Manifolds arrays)."""
    bound = tabs[1][3]
    m = ia.shape[0]
    rows = np.empty(m, np.int64)
    k = 0
    for i in range(m):
        if not take[i]:
            continue
        a = ia[i]
        b = ib[i]
        d0 = pos[b, 0] - pos[a, 0]
        d1 = pos[b, 1] - pos[a, 1]
        d2 = pos[b, 2] - pos[a, 2]
        reach = (bound[sid[a]] + bound[sid[b]]) + margin[i]
        if not (d0 * d0 + d1 * d1 + d2 * d2 > reach * reach):
            rows[k] = i
            k += 1
    ids_a = np.empty(k, np.int64)
    ids_b = np.empty(k, np.int64)
    pos_a = np.empty((k, 3))
    pos_b = np.empty((k, 3))
    rot_a = np.empty((k, 3, 3))
    rot_b = np.empty((k, 3, 3))
    marg = np.empty(k)
    for j in range(k):
        i = rows[j]
        a = ia[i]
        b = ib[i]
        ids_a[j] = sid[a]
        ids_b[j] = sid[b]
        for c in range(3):
            pos_a[j, c] = pos[a, c]
            pos_b[j, c] = pos[b, c]
        matrix_of(qn[a], rot_a[j])
        matrix_of(qn[b], rot_b[j])
        marg[j] = margin[i]
    nrm = np.empty((k, 3))
    pts = np.empty((k, 4, 3))
    s4 = np.empty((k, 4))
    id4 = np.empty((k, 4), np.int64)
    cnt = np.empty(k, np.int64)
    a_kind = np.empty(k, np.int8)
    a_index = np.empty((k, 2), np.int64)
    shape_rows(ids_a, pos_a, rot_a, ids_b, pos_b, rot_b, marg, tabs, consts, nrm, pts, s4,
               id4, cnt, a_kind, a_index, np.empty(k), np.empty((k, 4, 3)),
               np.empty(k, np.int64))
    return rows[:k].copy(), nrm, pts, s4, id4, cnt, a_kind, a_index


@kernel(inline="always")
def sound(n, pts, s, c):
    """world.guard.sound_manifolds for one manifold: a finite unit normal and finite used
    points and separations (a degenerate query's zero normal gave the solver NaN tangents)."""
    n2 = n[0] * n[0] + n[1] * n[1] + n[2] * n[2]
    if not abs(n2 - 1.0) < 1e-6:
        return False
    for j in range(c):
        if not (np.isfinite(s[j]) and np.isfinite(pts[j, 0]) and np.isfinite(pts[j, 1])
                and np.isfinite(pts[j, 2])):
            return False
    return True
