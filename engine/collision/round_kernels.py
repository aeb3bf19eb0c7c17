"""Sphere and capsule contacts as compiled kernels, one pair at a time.

A sphere's core is a point, a capsule's a segment (engine/collision/narrowphase.py describes
the routes; convex_pairs.shape_rows runs these for every pair of the kinds):

- ``round_round_pair``: closest points of the two core segments, one point, and a second one for
  two near-parallel capsules overlapping along their axes;
- ``round_polytope_pair``: cores apart, GJK on the cores (gjk_kernels.gjk_pair) for the exact
  distance and normal, and a capsule whose normal is a face normal clipped to that face (2
  points lying on it); cores overlapping, the SAT of the point/segment against the polytope
  (exact), face axes clipped to the face, edge axes one point.

Both fill a row of the Manifolds arrays of narrowphase with the same feature ids as always
(bits 59-61 ID_ROUND; bits 56-58 the route: 0 the core's closest points, 1 a face with the face
in bits 8-23 and the end in bit 0, 2 an edge in bits 0-23), so the pair table's warm starting
keeps working. The table is passed as the tuple ``round_table`` names.
"""
import math

import numpy as np

from ..core.jit import kernel
from ..core.vec_kernels import dot, pose_into, tangent_basis, unpose_into
from .clip_kernels import ID_ROUND, SNAP, _segment_closest
from .gjk_kernels import gjk_pair, gjk_scratch
from .sat_kernels import PARALLEL_SIN

AXIS_ROUND = 3       # narrowphase.AXIS_ROUND
AXIS_CORE_FACE = 4   # narrowphase.AXIS_CORE_FACE
AXIS_CORE_EDGE = 5   # narrowphase.AXIS_CORE_EDGE
GJK_TOL = 1e-10      # gjk.DEFAULT_TOL
GJK_ITERATIONS = 64
_BASE = np.int64(ID_ROUND) << 59


def round_table(table):
    """The ShapeTable arrays the kernels read, in the order ``_unpack`` names them."""
    t = table
    return (t.points, t.npoints, t.radius, t.bound_radius, t.nfaces, t.planes, t.patch_sizes,
            t.patch_loops, t.nedges, t.edges, t.edge_dirs, t.edge_normals)


@kernel
def perpendicular(axis, hint, out, basis):
    """Unit vector along hint with its component along axis removed, or any unit normal to
    axis (basis: 3x3 scratch)."""
    ax2 = dot(axis, axis)
    k = dot(hint, axis) / (ax2 if ax2 > 0 else 1.0)
    h0 = hint[0] - k * axis[0]
    h1 = hint[1] - k * axis[1]
    h2 = hint[2] - k * axis[2]
    hn = math.sqrt(h0 * h0 + h1 * h1 + h2 * h2)
    if hn > 1e-12 * max(math.sqrt(dot(hint, hint)), 1e-300):
        out[0] = h0 / hn
        out[1] = h1 / hn
        out[2] = h2 / hn
    elif ax2 > 0:
        s = max(math.sqrt(ax2), 1e-300)
        basis[2, 0] = axis[0] / s
        basis[2, 1] = axis[1] / s
        basis[2, 2] = axis[2] / s
        tangent_basis(basis[2], basis[0], basis[1])
        out[0] = basis[0, 0]
        out[1] = basis[0, 1]
        out[2] = basis[0, 2]
    else:
        out[0] = 0.0
        out[1] = 0.0
        out[2] = 1.0


@kernel
def perpendicular_rows(axis, hint, out):
    """perpendicular over rows (queries' round-round distance)."""
    basis = np.empty((3, 3))
    for i in range(axis.shape[0]):
        perpendicular(axis[i], hint[i], out[i], basis)


@kernel(inline="always")
def _core(points, rot, pos, s, p0, p1):
    """World core segment (p0, p1) of round shape s (a sphere's second point repeats the first)."""
    pose_into(rot, points[s, 0], pos, p0)
    pose_into(rot, points[s, min(1, points.shape[1] - 1)], pos, p1)


@kernel
def round_round_pair(tab, a, b, rot_a, pos_a, rot_b, pos_b, margin, i, normal, points,
                      separation, ids, count, axis_kind, distance, ws, basis):
    points_t, radius, bound = tab[0], tab[2], tab[3]
    p0 = ws[0:3]
    p1 = ws[3:6]
    q0 = ws[6:9]
    q1 = ws[9:12]
    cp = ws[12:15]
    cq = ws[15:18]
    d1 = ws[18:21]
    d2 = ws[21:24]
    n = ws[24:27]
    c = ws[27:30]
    pa = ws[30:33]
    _core(points_t, rot_a, pos_a, a, p0, p1)
    _core(points_t, rot_b, pos_b, b, q0, q1)
    _segment_closest(p0, p1, q0, q1, 1e-12, cp, cq)
    ra = radius[a]
    rb = radius[b]
    for k in range(3):
        d1[k] = p1[k] - p0[k]
        d2[k] = q1[k] - q0[k]
        n[k] = cq[k] - cp[k]
    dist = math.sqrt(dot(n, n))
    scale = min(bound[a], bound[b])
    if dist <= 1e-12 * scale:
        # Cores touching: no direction from the closest points; the centres' offset made
        # normal to A's axis (or B's), else any direction normal to it.
        for k in range(3):
            c[k] = 0.5 * (q0[k] + q1[k]) - 0.5 * (p0[k] + p1[k])
        perpendicular(d1 if dot(d1, d1) > 0 else d2, c, n, basis)
    else:
        s = max(dist, 1e-300)
        for k in range(3):
            n[k] = n[k] / s
    sep = dist - ra - rb
    for k in range(3):
        normal[i, k] = n[k]
        points[i, 0, k] = 0.5 * (((cp[k] + ra * n[k]) + cq[k]) - rb * n[k])
    distance[i] = sep
    axis_kind[i] = AXIS_ROUND
    separation[i, 0] = sep
    ids[i, 0] = _BASE
    count[i] = 1 if sep <= margin else 0
    # Near-parallel capsules: a second point at the far end of the stretch where the axes run
    # side by side (B's ends projected on A's axis give it), so a capsule lying on another does
    # not rock on one point. The first point stays the exact closest pair; the second gets its
    # own true core distance (never deeper than the truth).
    l1 = dot(d1, d1)
    l2 = dot(d2, d2)
    cx = d1[1] * d2[2] - d1[2] * d2[1]
    cy = d1[2] * d2[0] - d1[0] * d2[2]
    cz = d1[0] * d2[1] - d1[1] * d2[0]
    if not (l1 > 0 and l2 > 0
            and cx * cx + cy * cy + cz * cz <= CAPSULE_PARALLEL_SIN ** 2 * l1 * l2):
        return
    length = math.sqrt(l1)
    t0 = ((q0[0] - p0[0]) * d1[0] + (q0[1] - p0[1]) * d1[1] + (q0[2] - p0[2]) * d1[2]) / l1
    t1 = (((q0[0] + d2[0]) - p0[0]) * d1[0] + ((q0[1] + d2[1]) - p0[1]) * d1[1]
          + ((q0[2] + d2[2]) - p0[2]) * d1[2]) / l1
    lo = min(max(min(t0, t1), 0.0), 1.0)
    hi = min(max(max(t0, t1), 0.0), 1.0)
    sc = ((cp[0] - p0[0]) * d1[0] + (cp[1] - p0[1]) * d1[1] + (cp[2] - p0[2]) * d1[2]) / l1
    far_lo = sc - lo > hi - sc
    tf = lo if far_lo else hi
    snap = SNAP * scale
    for k in range(3):
        pa[k] = p0[k] + tf * d1[k]
    u = ((pa[0] - q0[0]) * d2[0] + (pa[1] - q0[1]) * d2[1] + (pa[2] - q0[2]) * d2[2]) / l2
    u = min(max(u, 0.0), 1.0)
    g0 = (q0[0] + u * d2[0]) - pa[0]
    g1 = (q0[1] + u * d2[1]) - pa[1]
    g2 = (q0[2] + u * d2[2]) - pa[2]
    s2 = math.sqrt(g0 * g0 + g1 * g1 + g2 * g2) - ra - rb
    if not (abs(tf - sc) * length > snap and s2 <= margin and sep <= margin):
        return
    # Ids by place: 1 = low end, 2 = high end, 3 = in between (the axes cross).
    if abs(sc - lo) * length <= snap:
        ids[i, 0] = _BASE | 1
    elif abs(sc - hi) * length <= snap:
        ids[i, 0] = _BASE | 2
    else:
        ids[i, 0] = _BASE | 3
    for k in range(3):
        points[i, 1, k] = pa[k] + (ra + 0.5 * s2) * n[k]
    separation[i, 1] = s2
    ids[i, 1] = _BASE | (1 if far_lo else 2)
    count[i] = 2


# Capsules closer to parallel than this (sine of the angle) get 2 points (each with its own
# honest separation), so a capsule lying on another does not rock on a single point.
CAPSULE_PARALLEL_SIN = 0.02


@kernel
def segment_sat(tab, b, p0, p1, axis):
    """SAT of a core segment p0-p1 (a point when p0 == p1) against polytope b, in b's frame.

    Axes: b's faces, and (segment x edge) for edges whose Gauss-map arc crosses the great
    circle normal to the segment (the segment's Gauss map). Exact for overlapping cores.
    Returns (face sep, face, edge sep (-inf if none), edge); the edge axis (A -> B) into axis.
    """
    points, nfaces, planes, nedges, edges, edge_dirs, edge_normals = (
        tab[0], tab[4], tab[5], tab[8], tab[9], tab[10], tab[11])
    sep_f = -np.inf
    face = 0
    for f in range(nfaces[b]):
        s0 = planes[b, f, 0] * p0[0] + planes[b, f, 1] * p0[1] + planes[b, f, 2] * p0[2]
        s1 = planes[b, f, 0] * p1[0] + planes[b, f, 1] * p1[1] + planes[b, f, 2] * p1[2]
        s = min(s0, s1) - planes[b, f, 3]
        if s > sep_f or f == 0:
            sep_f = s
            face = f
    g0 = p1[0] - p0[0]
    g1 = p1[1] - p0[1]
    g2 = p1[2] - p0[2]
    seglen = math.sqrt(g0 * g0 + g1 * g1 + g2 * g2)
    sep_e = -np.inf
    edge = 0
    for e in range(nedges[b]):
        n0 = edge_normals[b, e, 0]
        n1 = edge_normals[b, e, 1]
        c1 = n0[0] * g0 + n0[1] * g1 + n0[2] * g2
        c2 = n1[0] * g0 + n1[1] * g1 + n1[2] * g2
        dv = edge_dirs[b, e]
        u0 = g1 * dv[2] - g2 * dv[1]
        u1 = g2 * dv[0] - g0 * dv[2]
        u2 = g0 * dv[1] - g1 * dv[0]
        ul = math.sqrt(u0 * u0 + u1 * u1 + u2 * u2)
        if not (c1 * c2 < 0 and ul > PARALLEL_SIN * seglen):
            continue
        u0 /= ul
        u1 /= ul
        u2 /= ul
        # Orient u from A into the polytope: -u lies between the edge's two face normals.
        if u0 * (n0[0] + n1[0]) + u1 * (n0[1] + n1[1]) + u2 * (n0[2] + n1[2]) > 0:
            u0 = -u0
            u1 = -u1
            u2 = -u2
        q = points[b, edges[b, e, 0]]
        s = u0 * (q[0] - p0[0]) + u1 * (q[1] - p0[1]) + u2 * (q[2] - p0[2])
        if s > sep_e:
            sep_e = s
            edge = e
            axis[0] = u0
            axis[1] = u1
            axis[2] = u2
    return sep_f, face, sep_e, edge


@kernel
def segment_sat_rows(tab, ids, p0, p1, sep_f, face, sep_e, edge, axis):
    """segment_sat over rows (queries' round-polytope depth)."""
    for i in range(len(ids)):
        r = segment_sat(tab, ids[i], p0[i], p1[i], axis[i])
        sep_f[i] = r[0]
        face[i] = r[1]
        sep_e[i] = r[2]
        edge[i] = r[3]


@kernel
def _clip_segment_to_face(tab, b, f, p0, p1):
    """Cyrus-Beck: the part [t0, t1] of the segment p0 -> p1 (b's frame) inside the side
    planes of the flat side around face f of b (engine.collision.patches). Returns
    (t0, t1, ok); ok False where nothing is inside."""
    points, planes, patch_sizes, patch_loops = tab[0], tab[5], tab[6], tab[7]
    size = patch_sizes[b, f]
    n = planes[b, f]
    t0 = 0.0
    t1 = 1.0
    outside = False
    for k in range(size):
        v = points[b, patch_loops[b, f, k]]
        w = points[b, patch_loops[b, f, (k + 1) % size]]
        e0x = w[0] - v[0]
        e0y = w[1] - v[1]
        e0z = w[2] - v[2]
        sx = e0y * n[2] - e0z * n[1]
        sy = e0z * n[0] - e0x * n[2]
        sz = e0x * n[1] - e0y * n[0]
        off = sx * v[0] + sy * v[1] + sz * v[2]
        a = (sx * p0[0] + sy * p0[1] + sz * p0[2]) - off
        c = (sx * p1[0] + sy * p1[1] + sz * p1[2]) - off
        den = a - c
        t = a / (den if den != 0 else 1.0)
        if a > 0 and c <= 0:
            t0 = max(t0, t)
        if c > 0 and a <= 0:
            t1 = min(t1, t)
        if a > 0 and c > 0:
            outside = True
    return t0, t1, not outside and t0 <= t1


@kernel
def _face_contact(tab, b, f, p0, p1, rad, scale, margin, rot_b, pos_b, i, normal, points,
                  separation, ids, count, axis_kind, axis_index, ws):
    """The core segment p0-p1 (b's frame) clipped to face f of b: 1-2 points at their own
    heights above the face plane."""
    planes = tab[5]
    mid = ws[0:3]
    pt = ws[3:6]
    t0, t1, ok = _clip_segment_to_face(tab, b, f, p0, p1)
    n = planes[b, f]
    h0 = (n[0] * p0[0] + n[1] * p0[1] + n[2] * p0[2]) - n[3]
    h1 = (n[0] * p1[0] + n[1] * p1[1] + n[2] * p1[2]) - n[3]
    if not ok:
        # Nothing inside the face's prism (a corner case of the bias): the deepest end.
        t0 = 1.0 if h1 < h0 else 0.0
        t1 = t0
    seglen = math.sqrt((p1[0] - p0[0]) ** 2 + (p1[1] - p0[1]) ** 2 + (p1[2] - p0[2]) ** 2)
    two = (t1 - t0) * seglen > SNAP * scale
    base = _BASE | (np.int64(1) << 56) | (np.int64(f) << 8)
    slot = 0
    for end in range(2):
        t = t0 if end == 0 else t1
        h = h0 + t * (h1 - h0)
        s = h - rad
        if not (s <= margin) or (end == 1 and not two):
            continue
        # A's surface is rad below the core along n; B's surface is the face plane: midway.
        for k in range(3):
            mid[k] = (p0[k] + t * (p1[k] - p0[k])) - (0.5 * (h + rad)) * n[k]
        pose_into(rot_b, mid, pos_b, pt)
        for k in range(3):
            points[i, slot, k] = pt[k]
        separation[i, slot] = s
        ids[i, slot] = base | end
        slot += 1
    count[i] = slot
    for k in range(3):
        normal[i, k] = -(rot_b[k, 0] * n[0] + rot_b[k, 1] * n[1] + rot_b[k, 2] * n[2])
    axis_kind[i] = AXIS_CORE_FACE
    axis_index[i, 0] = f
    axis_index[i, 1] = -1


@kernel
def _edge_contact(tab, b, e, p0, p1, u, s, rot_b, pos_b, rad, margin, i, normal, points,
                  separation, ids, count, axis_kind, axis_index, ws):
    """One point at the closest points of the core segment and edge e of b (b's frame) along
    the SAT axis u, separation s."""
    points_t, edges = tab[0], tab[9]
    cp = ws[0:3]
    cq = ws[3:6]
    mid = ws[6:9]
    pt = ws[9:12]
    _segment_closest(p0, p1, points_t[b, edges[b, e, 0]], points_t[b, edges[b, e, 1]], 1e-12,
                     cp, cq)
    # Surface of A along the normal, surface of B at the edge point; midway.
    for k in range(3):
        mid[k] = 0.5 * ((cp[k] + rad * u[k]) + cq[k])
    pose_into(rot_b, mid, pos_b, pt)
    for k in range(3):
        points[i, 0, k] = pt[k]
        normal[i, k] = rot_b[k, 0] * u[0] + rot_b[k, 1] * u[1] + rot_b[k, 2] * u[2]
    separation[i, 0] = s
    count[i] = 1 if s <= margin else 0
    axis_kind[i] = AXIS_CORE_EDGE
    axis_index[i, 0] = -1
    axis_index[i, 1] = e
    ids[i, 0] = _BASE | (np.int64(2) << 56) | e


@kernel
def round_polytope_pair(tab, a, b, rot_a, pos_a, rot_b, pos_b, margin, consts, i, normal,
                         points, separation, ids, count, axis_kind, axis_index, distance,
                         simplex, simplex_size, ws, pa, pb, rel_rot, S, SA, SB, used, lam,
                         scratch):
    points_t, npoints, radius, bound, nfaces, planes = (tab[0], tab[1], tab[2], tab[3], tab[4],
                                                        tab[5])
    rel = ws[0:3]
    v = ws[3:6]
    n_loc = ws[6:9]
    c = ws[9:12]
    w0 = ws[12:15]
    w1 = ws[15:18]
    p0 = ws[18:21]
    p1 = ws[21:24]
    axis = ws[24:27]
    wk = ws[32:48]
    rad = radius[a]
    # GJK on the cores in A's frame (precision far from the origin): A's core as is, B's
    # points posed by rot_a^T rot_b and rot_a^T (pos_b - pos_a).
    unpose_into(rot_a, pos_b, pos_a, rel)
    ext = 0.0
    for j in range(2):
        for k in range(3):
            pa[j, k] = points_t[a, min(j, points_t.shape[1] - 1), k]
        ext = max(ext, dot(pa[j], pa[j]))
    nb = npoints[b]
    for r in range(3):
        for col in range(3):
            rel_rot[r, col] = (rot_a[0, r] * rot_b[0, col] + rot_a[1, r] * rot_b[1, col]
                               + rot_a[2, r] * rot_b[2, col])
    for j in range(nb):
        pose_into(rel_rot, points_t[b, j], rel, pb[j])
        ext = max(ext, dot(points_t[b, j], points_t[b, j]))
    ext = max(math.sqrt(ext), rad)
    scale = ext if ext > 0 else 1.0
    eye = consts[1]
    core_a = (pa, np.int64(2), np.int64(0), 0.0, 0.0, eye, consts[0])
    core_b = (pb, nb, np.int64(0), 0.0, 0.0, eye, consts[0])
    vv, _, overlap = gjk_pair(core_a, core_b, scale, rel, GJK_TOL, GJK_ITERATIONS, False, 0.0,
                              S, SA, SB, used, lam, v, scratch)
    # The final simplex (used slots first), world orientation.
    size = 0
    for j in range(4):
        if used[j]:
            pose_into(rot_a, S[j], consts[0], c)
            for k in range(3):
                simplex[i, size, k] = c[k]
            size += 1
    simplex_size[i] = size
    # Everything below in B's frame.
    _core(points_t, rot_a, pos_a, a, w0, w1)
    unpose_into(rot_b, w0, pos_b, p0)
    unpose_into(rot_b, w1, pos_b, p1)
    scale2 = min(bound[a], bound[b])
    axis_kind[i] = AXIS_ROUND
    ids[i, 0] = _BASE
    if not overlap:
        # ---- cores apart: GJK's answer, then a face check for 2-point capsule contacts.
        nv = math.sqrt(vv)
        for k in range(3):
            n_loc[k] = v[k] / nv
        pose_into(rot_a, n_loc, consts[0], c)           # the world normal
        dist = nv - rad
        for k in range(3):
            normal[i, k] = c[k]
            ca_k = lam[0] * SA[0, k] + lam[1] * SA[1, k] + lam[2] * SA[2, k] + lam[3] * SA[3, k]
            cb_k = lam[0] * SB[0, k] + lam[1] * SB[1, k] + lam[2] * SB[2, k] + lam[3] * SB[3, k]
            w0[k] = ca_k
            w1[k] = cb_k
        pose_into(rot_a, w0, pos_a, wk[0:3])
        pose_into(rot_a, w1, pos_a, wk[3:6])
        for k in range(3):
            points[i, 0, k] = 0.5 * ((wk[k] + rad * c[k]) + wk[3 + k])
        distance[i] = dist
        separation[i, 0] = dist
        count[i] = 1 if dist <= margin else 0
        unpose_into(rot_b, c, consts[0], n_loc)
        best = np.inf
        face = 0
        for f in range(nfaces[b]):
            al = planes[b, f, 0] * n_loc[0] + planes[b, f, 1] * n_loc[1] + planes[b, f, 2] * n_loc[2]
            if al < best:
                best = al
                face = f
        g0 = p1[0] - p0[0]
        g1 = p1[1] - p0[1]
        g2 = p1[2] - p0[2]
        is_cap = g0 * g0 + g1 * g1 + g2 * g2 > (SNAP * scale2) ** 2
        if is_cap and best < -1.0 + FACE_ALIGN and dist <= margin:
            _face_contact(tab, b, face, p0, p1, rad, scale2, margin, rot_b, pos_b, i, normal,
                          points, separation, ids, count, axis_kind, axis_index, wk)
        return
    # ---- cores overlapping: SAT of the segment against B.
    sf, fo, se, eo = segment_sat(tab, b, p0, p1, axis)
    distance[i] = max(sf, se) - rad
    count[i] = 0
    if math.isfinite(se) and se > sf + consts[2][0] * abs(sf) + consts[2][1] * scale2:
        _edge_contact(tab, b, eo, p0, p1, axis, se - rad, rot_b, pos_b, rad, margin, i, normal,
                      points, separation, ids, count, axis_kind, axis_index, wk)
    else:
        _face_contact(tab, b, fo, p0, p1, rad, scale2, margin, rot_b, pos_b, i, normal, points,
                      separation, ids, count, axis_kind, axis_index, wk)


# A capsule whose GJK normal is within this angle (1 - cos) of a polytope face normal is
# clipped against that face: 2 points when it lies along the face.
FACE_ALIGN = 1e-4


@kernel
def round_scratch(tab, bias):
    """round_round_pair's and round_polytope_pair's arrays, allocated once per batch by
    their caller (convex_pairs.shape_rows): ws, basis, then the GJK state (A's core, B's
    points, B in A's frame, simplex, weights, gjk_scratch) and consts (zero, identity, the
    SAT's face bias sat.REL_TOL, sat.ABS_TOL)."""
    vmax = tab[0].shape[1]
    return (np.empty(48), np.empty((3, 3)), np.empty((2, 3)), np.empty((vmax, 3)),
            np.empty((3, 3)), np.empty((4, 3)), np.empty((4, 3)), np.empty((4, 3)),
            np.empty(4, np.bool_), np.empty(4), gjk_scratch(), (np.zeros(3), np.eye(3), bias))
