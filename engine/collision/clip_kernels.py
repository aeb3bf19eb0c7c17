"""Polytope-polytope contact manifolds as compiled kernels: engine/collision/clip.py's algorithms, one
pair at a time inside one loop over all pairs (``manifolds``).

engine/collision/clip.py explains the geometry (reference/incident face clipping by candidate sets, the
sunk vertices of faceted sides, the reduction to 4 points, the feature ids, edge axes between
nearly parallel faces clipped along the axis, the edge-edge point) and convex_pairs.py's
polytope_rows the order in which a pair falls back from one to the next. The code here
follows the batched numpy it replaced step for step, with the same candidate order (incident
vertices, reference vertices, crossings (incident edge, reference side) row-major, sunk
vertices) so the reduction's tie rule (first candidate) picks the same points, and the same
ids. Each pair only walks its own loops and points: no padding, masks or batch widths.

Table arrays are passed as one tuple, ``tab`` (see ``table_arrays``).
"""
import math

import numpy as np

from ..core.jit import kernel
from ..core.vec_kernels import pose_into, tangent_basis

# Same values as engine/collision/clip.py (which imports them from here).
T_INC_VERTEX, T_REF_VERTEX, T_CROSSING, T_HULL_VERTEX = 0, 1, 2, 3
ID_FACE, ID_EDGE, ID_ROUND, ID_FALLBACK = 1, 2, 3, 4
SNAP = 1e-4
INSIDE_TOL = 1e-9
FACE_A, FACE_B, EDGE = 0, 1, 2


def table_arrays(table):
    """The ShapeTable arrays the kernels read, in the order ``_unpack`` names them."""
    t = table
    return (t.points, t.npoints, t.nfaces, t.planes, t.face_sizes, t.face_loops, t.patch_sizes,
            t.patch_loops, t.patched, t.face_has_point, t.patch_has_point, t.edges,
            t.edge_faces, t.bound_radius)


@kernel(inline="always")
def _pick(score, valid, n, tol):
    """First valid candidate within tol of the best valid score, and that best (0 if none)."""
    best = -np.inf
    for c in range(n):
        if valid[c] and score[c] > best:
            best = score[c]
    if not math.isfinite(best):
        best = 0.0
    for c in range(n):
        if valid[c] and score[c] >= best - tol:
            return c, best
    return 0, best


@kernel(refcount=False)
def reduce4_row(x, y, sep, valid, n, eps, idx, ok, score):
    """clip.reduce4 for one row of n candidates: deepest, farthest from it, largest triangle,
    largest quad. idx (4,) picks, ok (4,) a prefix of True; score: scratch of n floats."""
    for c in range(n):
        score[c] = -sep[c]
    i1, _ = _pick(score, valid, n, eps)
    any_valid = False
    for c in range(n):
        any_valid = any_valid or valid[c]
    x1 = x[i1]
    y1 = y[i1]
    for c in range(n):
        dx = x[c] - x1
        dy = y[c] - y1
        score[c] = math.sqrt(dx * dx + dy * dy)
    i2, d12 = _pick(score, valid, n, eps)
    ok2 = any_valid and d12 > eps
    ex = x[i2] - x1
    ey = y[i2] - y1
    for c in range(n):
        score[c] = abs(ex * (y[c] - y1) - ey * (x[c] - x1))
    tol = eps * d12
    i3, a3 = _pick(score, valid, n, tol)
    ok3 = ok2 and a3 > tol
    # Counter-clockwise triangle, then the point farthest outside any of its edges.
    ccw = ex * (y[i3] - y1) - ey * (x[i3] - x1) >= 0
    qx2 = x[i2] if ccw else x[i3]
    qy2 = y[i2] if ccw else y[i3]
    qx3 = x[i3] if ccw else x[i2]
    qy3 = y[i3] if ccw else y[i2]
    for c in range(n):
        s1 = (qx2 - x1) * (y[c] - y1) - (qy2 - y1) * (x[c] - x1)
        s2 = (qx3 - qx2) * (y[c] - qy2) - (qy3 - qy2) * (x[c] - qx2)
        s3 = (x1 - qx3) * (y[c] - qy3) - (y1 - qy3) * (x[c] - qx3)
        score[c] = -min(min(s1, s2), s3)
    i4, a4 = _pick(score, valid, n, tol)
    ok4 = ok3 and a4 > tol
    idx[0] = i1
    idx[1] = i2
    idx[2] = i3
    idx[3] = i4
    ok[0] = any_valid
    ok[1] = ok2
    ok[2] = ok3
    ok[3] = ok4


@kernel(refcount=False)
def incident_face(tab, inc, rot, n_ref):
    """clip.incident_face for one pair: of the faces around the incident shape's deepest point
    along -n_ref (reference frame; rot: incident -> reference), the most anti-parallel."""
    points, npoints, nfaces, planes = tab[0], tab[1], tab[2], tab[3]
    face_has_point = tab[9]
    m0 = rot[0, 0] * n_ref[0] + rot[1, 0] * n_ref[1] + rot[2, 0] * n_ref[2]
    m1 = rot[0, 1] * n_ref[0] + rot[1, 1] * n_ref[1] + rot[2, 1] * n_ref[2]
    m2 = rot[0, 2] * n_ref[0] + rot[1, 2] * n_ref[1] + rot[2, 2] * n_ref[2]
    deepest = 0
    low = np.inf
    for v in range(npoints[inc]):
        h = points[inc, v, 0] * m0 + points[inc, v, 1] * m1 + points[inc, v, 2] * m2
        if h < low:
            low = h
            deepest = v
    best = np.inf
    face = 0
    for f in range(nfaces[inc]):
        if not face_has_point[inc, f, deepest]:
            continue
        c = planes[inc, f, 0] * m0 + planes[inc, f, 1] * m1 + planes[inc, f, 2] * m2
        if c < best:
            best = c
            face = f
    return face


@kernel(refcount=False)
def _outward_2d(x, y, size, clockwise, nx, ny, off, ex, ey, length):
    """Unit outward edge normals, offsets, edge vectors and lengths of a 2D loop."""
    for k in range(size):
        j = (k + 1) % size
        ex[k] = x[j] - x[k]
        ey[k] = y[j] - y[k]
        length[k] = math.sqrt(ex[k] * ex[k] + ey[k] * ey[k])
        inv = 1.0 / max(length[k], 1e-300)
        if clockwise:
            nx[k] = -ey[k] * inv
            ny[k] = ex[k] * inv
        else:
            nx[k] = ey[k] * inv
            ny[k] = -ex[k] * inv
        off[k] = nx[k] * x[k] + ny[k] * y[k]


@kernel(refcount=False)
def _loop_of(tab, shape, face, plain, out):
    """The loop a face clips with (its patch, or its own loop where plain); returns its size."""
    face_sizes, face_loops, patch_sizes, patch_loops = tab[4], tab[5], tab[6], tab[7]
    if plain:
        size = face_sizes[shape, face]
        for k in range(size):
            out[k] = face_loops[shape, face, k]
    else:
        size = patch_sizes[shape, face]
        for k in range(size):
            out[k] = patch_loops[shape, face, k]
    return size


@kernel(inline="always")
def _to_plane(m, off, p, out):
    """out = m @ p + off (a 3x3 matrix, 3-vectors)."""
    for k in range(3):
        out[k] = (m[k, 0] * p[0] + m[k, 1] * p[1] + m[k, 2] * p[2]) + off[k]


@kernel(refcount=False)
def face_clip(tab, ref, ref_face, inc, rot, trans, margin, flip, inc_face, normal, tilted,
              sc, out_pts, out_sep, out_ids):
    """clip.face_contact for one pair, in the reference shape's frame.

    rot, trans: incident pose in the reference frame; inc_face -1: choose it
    (incident_face); normal: the contact normal where tilted (an edge axis: the faces' own
    loops are clipped and separations are gaps along it), else the reference face normal.
    sc: scratch (``Scratch``). Writes out_pts (4, 3) midway between the surfaces, out_sep (4,)
    (+inf unused), out_ids (4,); returns (count, incident face)."""
    points, planes, patched, bound_radius = tab[0], tab[3], tab[8], tab[13]
    (loop_i, loop_r, xi, yi, hi, xr, yr, own_r, hr, rnx, rny, roff, rex, rey, rlen, inx, iny,
     ioff, iex, iey, ilen, cx, cy, ch, cref, cok, ct, cw, ccode, score, basis, to_plane, tmp,
     off, sunk, nvec) = sc
    scale = min(bound_radius[ref], bound_radius[inc])
    snap = SNAP * scale
    tol = INSIDE_TOL * scale
    n_ref = planes[ref, ref_face, :3]
    d = planes[ref, ref_face, 3]
    for k in range(3):
        nvec[k] = normal[k] if tilted else n_ref[k]
    tangent_basis(nvec, basis[0], basis[1])    # rows u, v, n: (u, v, n) right-handed
    for k in range(3):
        basis[2, k] = nvec[k]
    if inc_face < 0:
        inc_face = incident_face(tab, inc, rot, n_ref)
    for a in range(3):
        for b in range(3):
            to_plane[a, b] = basis[a, 0] * rot[0, b] + basis[a, 1] * rot[1, b] + basis[a, 2] * rot[2, b]
        off[a] = basis[a, 0] * trans[0] + basis[a, 1] * trans[1] + basis[a, 2] * trans[2]
    zero3 = tmp[3:6]
    zero3[:] = 0.0
    pi = _loop_of(tab, inc, inc_face, tilted, loop_i)
    pr = _loop_of(tab, ref, ref_face, tilted, loop_r)
    for k in range(pi):
        _to_plane(to_plane, off, points[inc, loop_i[k]], tmp)
        xi[k] = tmp[0]
        yi[k] = tmp[1]
        hi[k] = tmp[2]
    for k in range(pr):
        _to_plane(basis, zero3, points[ref, loop_r[k]], tmp)
        xr[k] = tmp[0]
        yr[k] = tmp[1]
        own_r[k] = tmp[2]
    _outward_2d(xr, yr, pr, False, rnx, rny, roff, rex, rey, rlen)
    _outward_2d(xi, yi, pi, True, inx, iny, ioff, iex, iey, ilen)
    # Height of the incident plane over (x, y) (its normal's h part is < 0).
    _to_plane(to_plane, zero3, planes[inc, inc_face, :3], tmp)
    nz = min(tmp[2], -1e-12)
    gx = -tmp[0] / nz
    gy = -tmp[1] / nz
    if patched[inc, inc_face] and not tilted:
        # A patch's first vertex may lie under the face's plane: lift onto the plane itself.
        dp = planes[inc, inc_face, 3]
        for k in range(3):
            tmp[6 + k] = planes[inc, inc_face, k] * dp
        _to_plane(to_plane, off, tmp[6:9], tmp)
        h0, x0, y0 = tmp[2], tmp[0], tmp[1]
    else:
        h0, x0, y0 = hi[0], xi[0], yi[0]
    for r in range(pr):
        hr[r] = h0 + gx * (xr[r] - x0) + gy * (yr[r] - y0)
    # Height of the reference plane over (x, y) (constant d when n is the reference normal).
    _to_plane(basis, zero3, n_ref, tmp)
    nrz = max(tmp[2], 1e-12)
    rgx = -tmp[0] / nrz
    rgy = -tmp[1] / nrz
    rh0 = d / nrz

    # Candidates: incident vertices, reference vertices, crossings (k, r), sunk vertices.
    c = 0
    for k in range(pi):
        worst = -np.inf
        for r in range(pr):
            worst = max(worst, xi[k] * rnx[r] + yi[k] * rny[r] - roff[r])
        cx[c] = xi[k]
        cy[c] = yi[k]
        ch[c] = hi[k]
        cref[c] = rh0 + rgx * xi[k] + rgy * yi[k] if tilted else d
        cok[c] = worst <= tol
        c += 1
    for r in range(pr):
        worst = -np.inf
        for k in range(pi):
            worst = max(worst, xr[r] * inx[k] + yr[r] * iny[k] - ioff[k])
        cx[c] = xr[r]
        cy[c] = yr[r]
        ch[c] = hr[r]
        cref[c] = own_r[r] if tilted else d
        cok[c] = worst <= tol
        c += 1
    for k in range(pi):
        kn = (k + 1) % pi
        for r in range(pr):
            da = xi[k] * rnx[r] + yi[k] * rny[r] - roff[r]
            db = xi[kn] * rnx[r] + yi[kn] * rny[r] - roff[r]
            ok = da * db < 0
            t = da / (da - db) if ok else da
            x = xi[k] + t * iex[k]
            y = yi[k] + t * iey[k]
            rl2 = max(rlen[r] * rlen[r], 1e-300)
            w = ((x - xr[r]) * rex[r] + (y - yr[r]) * rey[r]) / rl2
            ok = ok and w * rlen[r] >= -tol and (1.0 - w) * rlen[r] >= -tol
            cx[c] = x
            cy[c] = y
            ch[c] = hi[k] + t * (hi[kn] - hi[k])
            cref[c] = rh0 + rgx * x + rgy * y if tilted else d
            cok[c] = ok
            ct[c] = t
            cw[c] = w
            c += 1
    base = c
    ns = _sunk_vertices(tab, inc, inc_face, rot, trans, n_ref, d, nvec, sunk)
    for q in range(ns):
        _to_plane(to_plane, off, points[inc, sunk[q]], tmp)
        worst = -np.inf
        for r in range(pr):
            worst = max(worst, tmp[0] * rnx[r] + tmp[1] * rny[r] - roff[r])
        cx[c] = tmp[0]
        cy[c] = tmp[1]
        ch[c] = tmp[2]
        cref[c] = rh0 + rgx * tmp[0] + rgy * tmp[1] if tilted else d
        cok[c] = worst <= tol
        c += 1
    for q in range(c):
        ch[q] = ch[q] - cref[q]          # ch is the separation from here on
        cok[q] = cok[q] and ch[q] <= margin
    pick = ccode[c:c + 4]
    good = cok[c + 4:c + 8]
    reduce4_row(cx, cy, ch, cok, c, snap, pick, good, score)
    count = 0
    for j in range(4):
        if not good[j]:
            out_sep[j] = np.inf
            out_ids[j] = 0
            out_pts[j, :] = 0.0
            continue
        count += 1
        p = pick[j]
        s = ch[p]
        h = cref[p] + 0.5 * s
        for k in range(3):
            out_pts[j, k] = cx[p] * basis[0, k] + cy[p] * basis[1, k] + h * basis[2, k]
        out_sep[j] = s
        if p >= base:
            code = (T_HULL_VERTEX << 24) | sunk[p - base]
        else:
            code = _feature_code(p, pi, pr, cx[p], cy[p], xi, yi, ilen, rlen, ct[p], cw[p],
                                 snap)
        out_ids[j] = _face_id(flip, ref_face, inc_face, code)
    # Distinct ids within the manifold (rare: two points snapped to one vertex).
    for j in range(1, 4):
        dup = False
        for i in range(j):
            dup = dup or out_ids[i] == out_ids[j]
        if dup and good[j]:
            out_ids[j] ^= np.int64(j) << 56
    return count, inc_face


@kernel(refcount=False)
def _feature_code(p, pi, pr, px, py, xi, yi, ilen, rlen, t, w, snap):
    """clip._feature_codes for candidate p: vertices keep their code; a crossing within snap
    of a vertex (incident first) takes that vertex's; a reference vertex on an incident vertex
    takes the incident vertex's."""
    if p < pi:
        return (T_INC_VERTEX << 24) | (p << 12)
    if p < pi + pr:
        r = p - pi
        near = 0
        gap = np.inf
        for k in range(pi):
            gx = px - xi[k]
            gy = py - yi[k]
            g = gx * gx + gy * gy
            if g < gap:
                gap = g
                near = k
        if gap < snap * snap:
            return (T_INC_VERTEX << 24) | (near << 12)
        return (T_REF_VERTEX << 24) | r
    j = p - pi - pr
    k = j // pr
    r = j % pr
    il = ilen[k]
    rl = rlen[r]
    near_k0 = t * il < snap
    near_k1 = not near_k0 and (1.0 - t) * il < snap
    near_r0 = w * rl < snap
    near_r1 = not near_r0 and (1.0 - w) * rl < snap
    if near_k0 or near_k1:
        kx = (k + 1) % pi if near_k1 else k
        return (T_INC_VERTEX << 24) | (kx << 12)
    if near_r0 or near_r1:
        rx = (r + 1) % pr if near_r1 else r
        return (T_REF_VERTEX << 24) | rx
    return (T_CROSSING << 24) | (k << 12) | r


@kernel(refcount=False)
def _face_id(flip, ref_face, inc_face, code):
    """clip._face_ids: the code in terms of A and B (the reference is B where flip)."""
    r = code & 0xFFF
    k = (code >> 12) & 0xFFF
    kind = code >> 24
    if flip and kind != T_HULL_VERTEX:
        code = k | (r << 12) | ((kind if kind == T_CROSSING else 1 - kind) << 24)
    face_a = inc_face if flip else ref_face
    face_b = ref_face if flip else inc_face
    return ((np.int64(ID_FACE) << 59) | (np.int64(face_a) << 42) | (np.int64(face_b) << 26)
            | np.int64(code))


@kernel(refcount=False)
def _sunk_vertices(tab, inc, inc_face, rot, trans, n_ref, d, n, out):
    """clip._sunk_vertices for one pair: incident vertices off the incident face's patch under
    the reference plane, on a face of the incident shape that faces against n. Returns how
    many (their indices ascending in out)."""
    points, npoints, nfaces, planes = tab[0], tab[1], tab[2], tab[3]
    face_has_point, patch_has_point = tab[9], tab[10]
    m0 = rot[0, 0] * n_ref[0] + rot[1, 0] * n_ref[1] + rot[2, 0] * n_ref[2]
    m1 = rot[0, 1] * n_ref[0] + rot[1, 1] * n_ref[1] + rot[2, 1] * n_ref[2]
    m2 = rot[0, 2] * n_ref[0] + rot[1, 2] * n_ref[1] + rot[2, 2] * n_ref[2]
    level = d - (n_ref[0] * trans[0] + n_ref[1] * trans[1] + n_ref[2] * trans[2])
    q0 = rot[0, 0] * n[0] + rot[1, 0] * n[1] + rot[2, 0] * n[2]
    q1 = rot[0, 1] * n[0] + rot[1, 1] * n[1] + rot[2, 1] * n[2]
    q2 = rot[0, 2] * n[0] + rot[1, 2] * n[1] + rot[2, 2] * n[2]
    count = 0
    for v in range(npoints[inc]):
        if patch_has_point[inc, inc_face, v]:
            continue
        h = points[inc, v, 0] * m0 + points[inc, v, 1] * m1 + points[inc, v, 2] * m2
        if not h < level:
            continue
        for f in range(nfaces[inc]):
            if face_has_point[inc, f, v] and (planes[inc, f, 0] * q0 + planes[inc, f, 1] * q1
                                               + planes[inc, f, 2] * q2) < 0.0:
                out[count] = v
                count += 1
                break
    return count


@kernel
def scratch(p, v):
    """Scratch arrays of face_clip for loops of up to p vertices and shapes of v points."""
    c = 2 * p + p * p + v + 8
    return (np.empty(p, np.int64), np.empty(p, np.int64), np.empty(p), np.empty(p), np.empty(p),
            np.empty(p), np.empty(p), np.empty(p), np.empty(p), np.empty(p), np.empty(p),
            np.empty(p), np.empty(p), np.empty(p), np.empty(p), np.empty(p), np.empty(p),
            np.empty(p), np.empty(p), np.empty(p), np.empty(p),
            np.empty(c), np.empty(c), np.empty(c), np.empty(c), np.empty(c, np.bool_),
            np.empty(c), np.empty(c), np.empty(c, np.int64), np.empty(c),
            np.empty((3, 3)), np.empty((3, 3)), np.empty(9), np.empty(3), np.empty(v, np.int64),
            np.empty(3))


@kernel
def _scratch_for(tab):
    return scratch(max(tab[5].shape[2], tab[7].shape[2]), tab[0].shape[1])


@kernel(refcount=False)
def _segment_closest(p0, p1, q0, q1, eps, cp, cq):
    """Closest points of segments [p0, p1] and [q0, q1] into cp, cq; returns their parameters
    (s, t). Ericson's clamped parametric solution; parallel segments (den ~ 0) take s = 0 then
    clamp, which yields one valid closest pair (callers wanting the overlap use
    clip.segment_overlap)."""
    d10 = p1[0] - p0[0]
    d11 = p1[1] - p0[1]
    d12 = p1[2] - p0[2]
    d20 = q1[0] - q0[0]
    d21 = q1[1] - q0[1]
    d22 = q1[2] - q0[2]
    r0 = p0[0] - q0[0]
    r1 = p0[1] - q0[1]
    r2 = p0[2] - q0[2]
    a = d10 * d10 + d11 * d11 + d12 * d12
    e = d20 * d20 + d21 * d21 + d22 * d22
    f = d20 * r0 + d21 * r1 + d22 * r2
    c = d10 * r0 + d11 * r1 + d12 * r2
    b = d10 * d20 + d11 * d21 + d12 * d22
    a_ok = a > eps
    e_ok = e > eps
    sa = a if a_ok else 1.0
    se = e if e_ok else 1.0
    den = a * e - b * b
    if den <= eps * max(a * e, eps):
        s = 0.0
    else:
        s = min(max((b * f - c * e) / den, 0.0), 1.0)
    t = (b * s + f) / se
    if t < 0:
        s = min(max(-c / sa, 0.0), 1.0)
    elif t > 1:
        s = min(max((b - c) / sa, 0.0), 1.0)
    t = min(max(t, 0.0), 1.0)
    if not e_ok:
        s = min(max(-c / sa, 0.0), 1.0)
        t = 0.0
    if not a_ok:
        s = 0.0
        t = min(max(f / se, 0.0), 1.0) if e_ok else 0.0
    cp[0] = p0[0] + s * d10
    cp[1] = p0[1] + s * d11
    cp[2] = p0[2] + s * d12
    cq[0] = q0[0] + t * d20
    cq[1] = q0[1] + t * d21
    cq[2] = q0[2] + t * d22
    return s, t


@kernel(refcount=False)
def segment_closest_rows(p0, p1, q0, q1, eps, s, t, cp, cq):
    """_segment_closest of M segment pairs (all (M, 3)): parameters s, t (M,) and closest points
    cp, cq (M, 3) (clip.segment_closest)."""
    for i in range(p0.shape[0]):
        s[i], t[i] = _segment_closest(p0[i], p1[i], q0[i], q1[i], eps, cp[i], cq[i])


@kernel(refcount=False)
def _edge_point(tab, a, b, ea, eb, rot, trans, axis, w):
    """clip.edge_contact for one pair (A's frame): the midpoint of the two SAT edges' closest
    points (into w[0:3]) and their gap along the axis (returned)."""
    points, edges = tab[0], tab[11]
    pb0 = w[3:6]
    pb1 = w[6:9]
    ca = w[9:12]
    cb = w[12:15]
    pose_into(rot, points[b, edges[b, eb, 0]], trans, pb0)
    pose_into(rot, points[b, edges[b, eb, 1]], trans, pb1)
    _segment_closest(points[a, edges[a, ea, 0]], points[a, edges[a, ea, 1]], pb0, pb1, 1e-12,
                     ca, cb)
    s = ((cb[0] - ca[0]) * axis[0] + (cb[1] - ca[1]) * axis[1]) + (cb[2] - ca[2]) * axis[2]
    for k in range(3):
        w[k] = 0.5 * (ca[k] + cb[k])
    return s


@kernel(refcount=False)
def _edge_clip_faces(tab, a, b, ea, eb, rot, axis, consts):
    """The faces beside the two SAT edges that support each shape along the edge axis (the
    better aligned of each edge's two), whether they are close enough to the axis to be
    clipped along it (consts: EDGE_CLIP_COS, EDGE_INC_COS), and which is the reference: the
    better aligned one (flip: B's, ties to A's). Returns (use, flip, face of A, face of B)."""
    planes, edge_faces = tab[3], tab[12]
    ja = 0
    ca = -np.inf
    for s in range(2):
        f = edge_faces[a, ea, s]
        c = (planes[a, f, 0] * axis[0] + planes[a, f, 1] * axis[1]) + planes[a, f, 2] * axis[2]
        if c > ca:
            ca = c
            ja = s
    jb = 0
    cb = -np.inf
    for s in range(2):
        f = edge_faces[b, eb, s]
        n = planes[b, f]
        c = 0.0
        for k in range(3):
            c += (rot[k, 0] * n[0] + rot[k, 1] * n[1] + rot[k, 2] * n[2]) * axis[k]
        c = -c
        if c > cb:
            cb = c
            jb = s
    use = max(ca, cb) >= consts[0] and min(ca, cb) >= consts[1]
    return use, cb > ca, edge_faces[a, ea, ja], edge_faces[b, eb, jb]


@kernel(inline="always")
def _invert_pose(rot, trans, axis, rt, ti, n):
    """rt = rot^T, ti = -rot^T trans (A's pose in B's frame), n = -rot^T axis."""
    for j in range(3):
        for k in range(3):
            rt[j, k] = rot[k, j]
        ti[j] = -(rot[0, j] * trans[0] + rot[1, j] * trans[1] + rot[2, j] * trans[2])
        n[j] = -(rot[0, j] * axis[0] + rot[1, j] * axis[1] + rot[2, j] * axis[2])


@kernel
def manifolds(tab, ids_a, ids_b, pos_a, rot_a, pos_b, rot_b, rot, trans, margin, separation,
              kind, index, edge_sep, edge_index, edge_axis, consts, clip_faces, normal,
              axis_kind, axis_index, points, sep, ids, count):
    """Manifolds of M polytope pairs from their SAT answers (convex_pairs.polytope_rows).

    rot, trans: B's pose in A's frame; separation, kind, index, edge_sep, edge_index,
    edge_axis: sat.polytope_sat's; consts: EDGE_CLIP_COS, EDGE_INC_COS, REL_TOL, ABS_TOL.
    normal, axis_kind, axis_index hold the SAT's answer and are updated where an edge point
    or clip replaces it; points, sep, ids, count (Manifolds arrays, world) are written.
    Per pair, in stages: (0) a face axis clips the reference and incident faces; (1) an edge
    axis, or a face axis whose clip found nothing while an edge pair is about as good, gives
    the edge point, replaced by the faces beside the edges clipped along the axis where those
    are nearly parallel to it; then an overlap still without a point gets B's deepest vertex.
    clip_faces=False (tests) skips stage 0's clip so the fallbacks answer. face_clip has one
    call site per frame with run-time arguments (literal arguments would each compile a
    specialisation of it)."""
    work = (np.empty((4, 3)), np.empty(4), np.empty(4, np.int64), np.empty((3, 3)), np.empty(3),
            np.empty(3), np.empty(15), np.zeros(3))
    _manifold_rows(tab, ids_a, ids_b, pos_a, rot_a, pos_b, rot_b, rot, trans, margin,
                   separation, kind, index, edge_sep, edge_index, edge_axis, consts, clip_faces,
                   normal, axis_kind, axis_index, points, sep, ids, count, _scratch_for(tab),
                   work)


@kernel(refcount=False)
def _manifold_rows(tab, ids_a, ids_b, pos_a, rot_a, pos_b, rot_b, rot, trans, margin,
                   separation, kind, index, edge_sep, edge_index, edge_axis, consts, clip_faces,
                   normal, axis_kind, axis_index, points, sep, ids, count, sc, work):
    """manifolds' loop over the pairs; sc: face_clip's scratch, work: the loop's own (both
    allocated by manifolds: a kernel without reference counting cannot allocate)."""
    bound_radius, points_t, npoints = tab[13], tab[0], tab[1]
    pts, s4, id4, rt, ti, nref, w, zero = work
    for i in range(ids_a.shape[0]):
        a = ids_a[i]
        b = ids_b[i]
        count[i] = 0
        if not separation[i] <= margin[i]:
            continue
        r = rot[i]
        t = trans[i]
        ax = edge_axis[i]
        for stage in range(2):
            if stage == 0:
                if kind[i] == EDGE or not clip_faces:
                    continue
                tilted = kind[i] == EDGE                 # False (a run-time value)
                flip = kind[i] == FACE_B
                ref_face = index[i, 0]
                inc_face = index[i, 1]                   # -1: face_clip chooses it
            else:
                edge = kind[i] == EDGE
                if not edge and count[i] == 0 and math.isfinite(edge_sep[i]):
                    scale = min(bound_radius[a], bound_radius[b])
                    s = separation[i]
                    edge = edge_sep[i] >= s - consts[2] * abs(s) - consts[3] * scale
                if not edge:
                    break
                ea = edge_index[i, 0]
                eb = edge_index[i, 1]
                s = _edge_point(tab, a, b, ea, eb, r, t, ax, w)
                keep = s <= margin[i]
                pose_into(rot_a[i], w[0:3], pos_a[i], points[i, 0])
                sep[i, 0] = s if keep else np.inf
                ids[i, 0] = (np.int64(ID_EDGE) << 59) | (np.int64(ea) << 24) | np.int64(eb)
                count[i] = 1 if keep else 0
                pose_into(rot_a[i], ax, zero, normal[i])
                axis_kind[i] = EDGE
                axis_index[i, 0] = ea
                axis_index[i, 1] = eb
                use, flip, face_a, face_b = _edge_clip_faces(tab, a, b, ea, eb, r, ax, consts)
                if not use:
                    break
                tilted = use
                ref_face = face_b if flip else face_a
                inc_face = face_a if flip else face_b
            # The reference is A, or B where flip (then the pose and normal are inverted).
            _invert_pose(r, t, ax, rt, ti, nref)
            if flip:
                cnt, inc = face_clip(tab, b, ref_face, a, rt, ti, margin[i], flip, inc_face, nref,
                                     tilted, sc, pts, s4, id4)
            else:
                cnt, inc = face_clip(tab, a, ref_face, b, r, t, margin[i], flip, inc_face, ax,
                                     tilted, sc, pts, s4, id4)
            if stage == 0:
                axis_index[i, 1] = inc
                count[i] = cnt
                ref_rot = rot_b[i] if flip else rot_a[i]
                ref_pos = pos_b[i] if flip else pos_a[i]
            elif cnt > 0:                      # clip points to A's frame, then the world
                count[i] = cnt
                if flip:
                    for j in range(cnt):
                        pose_into(r, pts[j], t, w[0:3])
                        for k in range(3):
                            pts[j, k] = w[k]
                ref_rot = rot_a[i]
                ref_pos = pos_a[i]
            else:
                break
            for j in range(4):
                pose_into(ref_rot, pts[j], ref_pos, points[i, j])
                sep[i, j] = s4[j]
                ids[i, j] = id4[j]
        if count[i] == 0:
            _last_resort(points_t, npoints, a, b, pos_a[i], rot_a[i], pos_b[i], rot_b[i],
                         normal[i], margin[i], axis_kind[i] == FACE_B, points[i, 0], sep, ids,
                         count, i, w)
        for j in range(count[i], 4):     # unused slots as Manifolds leaves them
            sep[i, j] = np.inf
            ids[i, j] = 0
            points[i, j, :] = 0.0


@kernel(refcount=False)
def _last_resort(points_t, npoints, a, b, pos_a, rot_a, pos_b, rot_b, n, margin, on_a, out_p,
                 sep, ids, count, i, w):
    """One point at the incident shape's extreme vertex along the normal (A's highest where
    the axis is B's face, on_a; else B's deepest), the support gap along it as its
    separation (so an overlap can never lose its contact). The reference shape's extreme
    vertex is no contact: where the axis is its face, every vertex of that face ties, and the
    one taken lay 25 cm from a rock's tip on it; pushed there, the falling rock was spun into
    the tip by 20 mm (bench/rock_seeds.py seed 7)."""
    top = -np.inf
    k_a = 0
    for v in range(npoints[a]):
        pose_into(rot_a, points_t[a, v], pos_a, w)
        h = (w[0] * n[0] + w[1] * n[1]) + w[2] * n[2]
        if h > top:
            top = h
            k_a = v
    low = np.inf
    k_b = 0
    for v in range(npoints[b]):
        pose_into(rot_b, points_t[b, v], pos_b, w)
        h = (w[0] * n[0] + w[1] * n[1]) + w[2] * n[2]
        if h < low:
            low = h
            k_b = v
    s = low - top
    half = 0.5 * s if on_a else -0.5 * s      # midway between the surfaces
    if on_a:
        pose_into(rot_a, points_t[a, k_a], pos_a, w)
    else:
        pose_into(rot_b, points_t[b, k_b], pos_b, w)
    for j in range(3):
        out_p[j] = w[j] + half * n[j]
    sep[i, 0] = s
    # (bit 24 tells A's vertex from B's for warm starting)
    feature = (np.int64(1) << 24) | np.int64(k_a) if on_a else np.int64(k_b)
    ids[i, 0] = (np.int64(ID_FALLBACK) << 59) | feature
    count[i] = 1 if s <= margin else 0
