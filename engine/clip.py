"""Contact manifolds for polytope pairs: face clipping, edge-edge points, reduction to 4 points.

Face contact (the SAT chose a face axis). The reference face is the SAT face; the incident face
is the face of the other shape most anti-parallel to it. Clipping the incident polygon against
the side planes of the reference face (Sutherland-Hodgman) yields the intersection of the two
polygons seen along the reference normal. Its vertices are exactly

    (1) incident vertices inside every reference side plane,
    (2) reference vertices inside the incident polygon (lifted onto the incident plane),
    (3) crossings of an incident edge with a reference side plane, within that reference edge,

so instead of clipping plane after plane (a sequential pass with data-dependent output sizes
per pair) we evaluate all three candidate sets at once on fixed-size padded arrays: the same
polygon, branch-free over M pairs, and every point knows which features made it. Those
features become the warm-starting ids; a crossing within SNAP of a vertex takes that vertex's id
(a reference vertex takes a coincident incident vertex's id), so stacked boxes with coincident
edges keep their ids when jitter moves a corner from one side of a plane to the other.

Points are kept if their separation along the reference normal is <= margin (speculative
contacts), stored midway between the two surfaces, and reduced to at most 4 by the usual rule
(Box2D, Bullet, Jolt): deepest, farthest from it, largest triangle, largest quad.
"""
import numpy as np

# Feature-id layout (int64). Face contacts:
#   bits 0-11 reference loop index r, 12-23 incident loop index k, 24-25 feature type,
#   26-41 incident face, 42-57 reference face, 58 "reference face is on B", 59-61 contact kind.
# Edge contacts: bits 0-23 edge of B, 24-47 edge of A, 59-61 kind.
T_INC_VERTEX, T_REF_VERTEX, T_CROSSING = 0, 1, 2
ID_FACE, ID_EDGE, ID_ROUND, ID_FALLBACK = 1, 2, 3, 4

# Distances below SNAP * shape size count as coincident features (ids) and duplicate points.
SNAP = 1e-4
# Inclusion tolerance of the inside tests, relative to shape size.
INSIDE_TOL = 1e-9


def _face_ids(kind_flip, ref_face, inc_face, ftype, k, r):
    return ((np.int64(ID_FACE) << 59) | (kind_flip.astype(np.int64) << 58)
            | (ref_face.astype(np.int64) << 42) | (inc_face.astype(np.int64) << 26)
            | (ftype.astype(np.int64) << 24) | (k.astype(np.int64) << 12) | r.astype(np.int64))


def edge_ids(edge_a, edge_b):
    return (np.int64(ID_EDGE) << 59) | (edge_a.astype(np.int64) << 24) | edge_b.astype(np.int64)


def _dot(a, b):
    return np.einsum("...i,...i->...", a, b)


def _unit(v, tiny=1e-300):
    n = np.sqrt(_dot(v, v))
    return v / np.maximum(n, tiny)[..., None], n


def _pick(score, valid, tol, rank):
    """Argmax of score over valid candidates; near-ties (within tol) go to the lowest rank.

    Exact ties are common (a cube resting flat, a 45 deg octagon): without the rank, jitter
    of 1e-9 would pick a different point each step and break warm starting."""
    best = np.max(np.where(valid, score, -np.inf), axis=1)
    best = np.where(np.isfinite(best), best, 0.0)  # rows without candidates
    near = valid & (score >= (best - tol)[:, None])
    return np.argmin(np.where(near, rank, np.iinfo(np.int64).max), axis=1), best


def reduce4(points, sep, valid, normal, eps, rank):
    """Pick at most 4 of C candidate points per pair: deepest, farthest, max triangle, max quad.

    points (M, C, 3), sep (M, C), valid (M, C), normal (M, 3) (areas are measured in the plane
    normal to it), eps (M,) length below which a point adds nothing (also the tie tolerance),
    rank (M, C) int64 tie-break order (feature codes). Returns (idx (M, 4), ok (M, 4)); ok is
    monotone (ok[:, j] implies ok[:, j-1]) so the chosen points are a prefix.
    """
    m = len(points)
    rows = np.arange(m)
    i1, _ = _pick(-sep, valid, eps, rank)
    ok1 = valid.any(axis=1)
    p1 = points[rows, i1]
    dist = np.sqrt(_dot(points - p1[:, None], points - p1[:, None]))
    i2, d12 = _pick(dist, valid, eps, rank)
    ok2 = ok1 & (d12 > eps)
    p2 = points[rows, i2]
    area = _dot(np.cross((p2 - p1)[:, None], points - p1[:, None]), normal[:, None])  # 2 x signed
    i3, a3 = _pick(np.abs(area), valid, eps * d12, rank)
    ok3 = ok2 & (a3 > eps * d12)
    p3 = points[rows, i3]
    # Orient the triangle counter-clockwise about the normal, then the 4th point is the one
    # farthest outside any of its edges (largest area added to the quad).
    ccw = (area[rows, i3] >= 0)[:, None]
    q2 = np.where(ccw, p2, p3)
    q3 = np.where(ccw, p3, p2)
    s1 = _dot(np.cross((q2 - p1)[:, None], points - p1[:, None]), normal[:, None])
    s2 = _dot(np.cross((q3 - q2)[:, None], points - q2[:, None]), normal[:, None])
    s3 = _dot(np.cross((p1 - q3)[:, None], points - q3[:, None]), normal[:, None])
    outside = -np.minimum(np.minimum(s1, s2), s3)
    i4, a4 = _pick(outside, valid, eps * d12, rank)
    ok4 = ok3 & (a4 > eps * d12)
    return np.stack((i1, i2, i3, i4), axis=1), np.stack((ok1, ok2, ok3, ok4), axis=1)


def _loop(table, ids, face):
    """Face loops (M, P) (padding replaced by the first vertex), their mask and sizes."""
    size = table.face_sizes[ids, face]
    width = int(size.max()) if len(size) else 3
    loop = table.face_loops[ids, face, :width]
    mask = np.arange(width) < size[:, None]
    loop = np.where(mask, loop, loop[:, :1])
    nxt = (np.arange(width)[None, :] + 1) % size[:, None]
    return loop, mask, size, nxt


def face_contact(table, ref_ids, ref_face, inc_ids, rot, trans, margin, flip):
    """Manifold of M face contacts, in the reference shape's frame.

    ref_ids, ref_face: reference shape ids and face; inc_ids: incident shape ids; rot, trans:
    incident pose in the reference frame; margin (scalar or (M,)); flip (M,) bool: reference
    is shape B (only used for the ids). Returns points (M, 4, 3) midway between the surfaces,
    separation (M, 4) (+inf unused), ids (M, 4), count (M,), incident face (M,).
    """
    m = len(ref_ids)
    rows = np.arange(m)
    scale = np.minimum(table.bound_radius[ref_ids], table.bound_radius[inc_ids])
    snap = SNAP * scale
    tol = INSIDE_TOL * scale
    plane = table.planes[ref_ids, ref_face]
    n, d = plane[:, :3], plane[:, 3]

    # Incident face: most anti-parallel to the reference normal.
    n_inc_frame = np.matmul(rot.transpose(0, 2, 1), n[:, :, None])[:, :, 0]
    fi = int(table.nfaces[inc_ids].max())
    inc_face = np.argmin(np.matmul(table.planes[inc_ids, :fi, :3], n_inc_frame[:, :, None])[:, :, 0], axis=1)
    inc_plane = table.planes[inc_ids, inc_face]
    n_inc = np.matmul(rot, inc_plane[:, :3, None])[:, :, 0]
    d_inc = inc_plane[:, 3] + _dot(n_inc, trans)

    loop_i, mask_i, size_i, nxt_i = _loop(table, inc_ids, inc_face)
    loop_r, mask_r, size_r, nxt_r = _loop(table, ref_ids, ref_face)
    vi = np.matmul(table.points[inc_ids[:, None], loop_i], rot.transpose(0, 2, 1)) + trans[:, None]
    vr = table.points[ref_ids[:, None], loop_r]                                  # (M, Pr, 3)
    pi, pr = vi.shape[1], vr.shape[1]

    # Reference side planes (unit outward normals; CCW loop about n => cross(edge, n) is outward).
    er = vr[rows[:, None], nxt_r] - vr
    side, er_len = _unit(np.cross(er, n[:, None]))
    side_off = _dot(side, vr)
    dist = np.matmul(vi, side.transpose(0, 2, 1)) - side_off[:, None, :]      # (M, Pi, Pr)
    dist = np.where(mask_r[:, None, :], dist, -1.0)  # padded planes: everything is inside
    inside_i = np.all(dist <= tol[:, None, None], axis=2) & mask_i

    # Reference vertices inside the incident polygon seen along n. The incident loop is CCW
    # about its own normal (~ -n), so cross(n, edge) points out of it.
    ei = vi[rows[:, None], nxt_i] - vi
    iside, _ = _unit(np.cross(n[:, None], ei))
    idist = np.matmul(vr, iside.transpose(0, 2, 1)) - _dot(iside, vi)[:, None, :]  # (M, Pr, Pi)
    idist = np.where(mask_i[:, None, :], idist, -1.0)
    inside_r = np.all(idist <= tol[:, None, None], axis=2) & mask_r
    cosn = np.minimum(_dot(n_inc, n), -1e-6)  # < 0 by the choice of incident face
    lift = (d_inc[:, None] - _dot(vr, n_inc[:, None])) / cosn[:, None]
    vr_lift = vr + lift[:, :, None] * n[:, None]

    # Crossings of incident edge k (vi[k] -> vi[k+1]) with reference side plane r.
    da = dist
    db = dist[rows[:, None], nxt_i]                                           # (M, Pi, Pr)
    cross = (da * db < 0) & mask_i[:, :, None] & mask_r[:, None, :]
    u = da / np.where(cross, da - db, 1.0)
    xp = vi[:, :, None] + u[..., None] * ei[:, :, None]                         # (M, Pi, Pr, 3)
    w = _dot(xp - vr[:, None], er[:, None]) / np.maximum(er_len * er_len, 1e-300)[:, None]
    wl = er_len[:, None]
    cross &= (w * wl >= -tol[:, None, None]) & ((1 - w) * wl >= -tol[:, None, None])

    # Feature ids with snapping to nearby vertices.
    k_idx = np.broadcast_to(np.arange(pi)[None, :, None], (m, pi, pr))
    r_idx = np.broadcast_to(np.arange(pr)[None, None, :], (m, pi, pr))
    ei_len = np.sqrt(_dot(ei, ei))[:, :, None]
    near_k0 = u * ei_len < snap[:, None, None]
    near_k1 = (1 - u) * ei_len < snap[:, None, None]
    near_r0 = w * wl < snap[:, None, None]
    near_r1 = (1 - w) * wl < snap[:, None, None]
    k_next = np.broadcast_to(nxt_i[:, :, None], (m, pi, pr))
    r_next = np.broadcast_to(nxt_r[:, None, :], (m, pi, pr))
    x_type = np.where(near_k0 | near_k1, T_INC_VERTEX,
                      np.where(near_r0 | near_r1, T_REF_VERTEX, T_CROSSING))
    x_k = np.where(near_k0, k_idx, np.where(near_k1, k_next, np.where(near_r0 | near_r1, 0, k_idx)))
    x_r = np.where(near_k0 | near_k1, 0, np.where(near_r0, r_idx, np.where(near_r1, r_next, r_idx)))
    gap = vr_lift[:, :, None] - vi[:, None]                                     # (M, Pr, Pi, 3)
    gap2 = np.where(mask_i[:, None, :], _dot(gap, gap), np.inf)
    near_i = np.argmin(gap2, axis=2)
    snapped = np.take_along_axis(gap2, near_i[:, :, None], 2)[:, :, 0] < (snap * snap)[:, None]
    r_type = np.where(snapped, T_INC_VERTEX, T_REF_VERTEX)
    r_k = np.where(snapped, near_i, 0)
    r_r = np.where(snapped, 0, np.arange(pr)[None, :])

    cand = np.concatenate((vi, vr_lift, xp.reshape(m, pi * pr, 3)), axis=1)
    ok = np.concatenate((inside_i, inside_r, cross.reshape(m, -1)), axis=1)
    ftype = np.concatenate((np.full((m, pi), T_INC_VERTEX), r_type, x_type.reshape(m, -1)), axis=1)
    fk = np.concatenate((np.broadcast_to(np.arange(pi), (m, pi)), r_k, x_k.reshape(m, -1)), axis=1)
    fr = np.concatenate((np.zeros((m, pi), dtype=np.int64), r_r, x_r.reshape(m, -1)), axis=1)

    sep = _dot(cand, n[:, None]) - d[:, None]
    ok &= sep <= np.broadcast_to(margin, (m,))[:, None]
    mid = cand - (0.5 * sep)[:, :, None] * n[:, None]
    rank = (ftype.astype(np.int64) << 24) | (fk.astype(np.int64) << 12) | fr
    pick, good = reduce4(mid, sep, ok, n, snap, rank)
    points = np.take_along_axis(mid, pick[:, :, None], 1)
    psep = np.where(good, np.take_along_axis(sep, pick, 1), np.inf)
    ids = _face_ids(flip[:, None], ref_face[:, None], inc_face[:, None],
                    np.take_along_axis(ftype, pick, 1), np.take_along_axis(fk, pick, 1),
                    np.take_along_axis(fr, pick, 1))
    ids = _unique_ids(ids, good)
    return points, psep, ids, good.sum(axis=1), inc_face


def _unique_ids(ids, good):
    """Make ids distinct within each manifold (rare: two points snapped to one vertex)."""
    out = ids.copy()
    for j in range(1, ids.shape[1]):
        dup = np.zeros(len(ids), dtype=bool)
        for i in range(j):
            dup |= out[:, i] == out[:, j]
        out[:, j] = np.where(dup & good[:, j], out[:, j] ^ (np.int64(j) << 56), out[:, j])
    return out


def segment_closest(p0, p1, q0, q1, eps=1e-12):
    """Closest points of segments [p0, p1] and [q0, q1] (all (M, 3)) -> (s, t, cp, cq).

    Ericson's clamped parametric solution; parallel segments (den ~ 0) take s = 0 then
    clamp, which yields one valid closest pair (callers wanting the overlap use segment_overlap).
    """
    d1 = p1 - p0
    d2 = q1 - q0
    r = p0 - q0
    a = _dot(d1, d1)
    e = _dot(d2, d2)
    f = _dot(d2, r)
    c = _dot(d1, r)
    b = _dot(d1, d2)
    a_ok = a > eps
    e_ok = e > eps
    sa = np.where(a_ok, a, 1.0)
    se = np.where(e_ok, e, 1.0)
    den = a * e - b * b
    par = den <= eps * np.maximum(a * e, eps)
    # General case: s from the lines' closest points, t from s, then clamp t and redo s.
    s = np.where(par, 0.0, np.clip((b * f - c * e) / np.where(par, 1.0, den), 0.0, 1.0))
    t = (b * s + f) / se
    s = np.where(t < 0, np.clip(-c / sa, 0.0, 1.0), np.where(t > 1, np.clip((b - c) / sa, 0.0, 1.0), s))
    t = np.clip(t, 0.0, 1.0)
    # Second segment a point: t = 0, s from the point. First segment a point: s = 0.
    s = np.where(e_ok, s, np.clip(-c / sa, 0.0, 1.0))
    t = np.where(e_ok, t, 0.0)
    s = np.where(a_ok, s, 0.0)
    t = np.where(a_ok, t, np.where(e_ok, np.clip(f / se, 0.0, 1.0), 0.0))
    cp = p0 + s[:, None] * d1
    cq = q0 + t[:, None] * d2
    return s, t, cp, cq


def edge_contact(table, ids_a, edge_a, ids_b, edge_b, rot, trans, normal_local):
    """One point per pair at the closest points of the two SAT edges (A's frame).

    normal_local (M, 3) is the SAT edge axis (A -> B) in A's frame. Returns point (M, 3) midway,
    separation (M,) along the axis and ids (M,).
    """
    ea = table.edges[ids_a, edge_a]
    eb = table.edges[ids_b, edge_b]
    pa0 = table.points[ids_a, ea[:, 0]]
    pa1 = table.points[ids_a, ea[:, 1]]
    pb0 = np.matmul(rot, table.points[ids_b, eb[:, 0], :, None])[:, :, 0] + trans
    pb1 = np.matmul(rot, table.points[ids_b, eb[:, 1], :, None])[:, :, 0] + trans
    _, _, ca, cb = segment_closest(pa0, pa1, pb0, pb1)
    sep = _dot(cb - ca, normal_local)
    return 0.5 * (ca + cb), sep, edge_ids(edge_a, edge_b)
