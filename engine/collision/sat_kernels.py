"""The separating-axis queries of engine/collision/sat.py as one compiled kernel over all pairs.

``queries`` loops over M polytope pairs (shape ids into a ShapeTable's padded arrays, B's pose
in A's frame) and writes, per pair, the best face axis of A, of B and the best edge-edge axis
(engine/collision/sat.py explains the axes, the Gauss-map test and the face bias applied afterwards):

- box-box pairs: the analytic 15-axis OBB test (exact supports, no vertex arrays);
- other pairs: both face queries over every real face and point (in compiled code the F x V
  products cost less than the probes that pruned them in numpy), then, for pairs not already
  apart by more than their margin, the edge pairs that survive the Gauss-map caps of the face
  axes (``prune``; sat.PRUNE_GAUSS = False keeps every edge: the exhaustive route).

Each pair only touches its own shapes' real elements, so there is no padding, no chunking and
no batch-dependent width. Ties keep the lowest index (face, point, edge pair in row-major
order), as numpy's argmin/argmax did.
"""
import math

import numpy as np

from ..core.jit import kernel
from ..core.vec_kernels import dot_parts

PARALLEL_SIN = 1e-5      # sat.PARALLEL_SIN (sat.py imports this module's constants)
PRUNE_TOL = 1e-6         # sat.PRUNE_TOL
FACE_A, FACE_B, EDGE = 0, 1, 2   # sat's axis kinds


@kernel(refcount=False)
def _box_pair(ha, hb, rot, t, lut, out_f, out_i, axis, i, absr):
    """Face and edge queries of one box pair (A's frame; rot, t: B's pose in it); absr (3, 3)
    scratch."""
    for j in range(3):
        for k in range(3):
            absr[j, k] = abs(rot[j, k])
    best = -np.inf
    fi = 0
    for k in range(3):
        s = abs(t[k]) - ha[k] - (absr[k, 0] * hb[0] + absr[k, 1] * hb[1] + absr[k, 2] * hb[2])
        if s > best or k == 0:
            best = s
            fi = k
    out_f[i, 0] = best
    out_i[i, 0] = 2 * fi + (1 if t[fi] > 0 else 0)
    # B's face axes: A's centre in B's axes decides which face of B looks at A.
    best = -np.inf
    fj = 0
    tbj = 0.0
    for k in range(3):
        tb = rot[0, k] * t[0] + rot[1, k] * t[1] + rot[2, k] * t[2]
        s = abs(tb) - hb[k] - (absr[0, k] * ha[0] + absr[1, k] * ha[1] + absr[2, k] * ha[2])
        if s > best or k == 0:
            best = s
            fj = k
            tbj = tb
    out_f[i, 1] = best
    out_i[i, 1] = 2 * fj + (1 if tbj <= 0 else 0)
    # Edge axes L_ij = e_i x R[:, j] (A's frame).
    best = -np.inf
    ei = 0
    ej = 0
    for a in range(3):
        a1 = (a + 1) % 3
        a2 = (a + 2) % 3
        for b in range(3):
            b1 = (b + 1) % 3
            b2 = (b + 2) % 3
            len2 = 1.0 - rot[a, b] * rot[a, b]
            if not len2 > PARALLEL_SIN * PARALLEL_SIN:
                continue
            tl = t[a2] * rot[a1, b] - t[a1] * rot[a2, b]
            ra = ha[a1] * absr[a2, b] + ha[a2] * absr[a1, b]
            rb = hb[b1] * absr[a, b2] + hb[b2] * absr[a, b1]
            s = (abs(tl) - ra - rb) / math.sqrt(len2)
            if s > best:
                best = s
                ei = a
                ej = b
    out_f[i, 2] = best
    # Unit axis oriented A -> B, and the supporting edges (corner bits from its signs).
    len2 = 1.0 - rot[ei, ej] * rot[ei, ej]
    e1 = (ei + 1) % 3
    e2 = (ei + 2) % 3
    tl = t[e2] * rot[e1, ej] - t[e1] * rot[e2, ej]
    sc = (-1.0 if tl < 0 else 1.0) / math.sqrt(max(len2, 1e-300))
    ax = axis[i]                    # (written in place: no array made per pair)
    ax[ei] = 0.0
    ax[e1] = -rot[e2, ej] * sc
    ax[e2] = rot[e1, ej] * sc
    # cross(e_ei, col) has an exact zero on axis ei (+0 or -0: never > 0)
    va0 = 0
    vb0 = 0
    for k in range(3):
        if k != ei and ax[k] > 0:
            va0 |= 1 << k
        w = -(rot[0, k] * ax[0] + rot[1, k] * ax[1] + rot[2, k] * ax[2])
        if k != ej and w > 0:
            vb0 |= 1 << k
    out_i[i, 2] = lut[va0, va0 | (1 << ei)]
    out_i[i, 3] = lut[vb0, vb0 | (1 << ej)]


@kernel(refcount=False)
def _face_query(planes, nf, pts, npts, sep, low):
    """Per face: min over points of the signed distance (sep), the point attaining it (low);
    returns the best face (first of ties)."""
    best = 0
    for f in range(nf):
        s = np.inf
        k = 0
        for v in range(npts):
            d = (planes[f, 0] * pts[v, 0] + planes[f, 1] * pts[v, 1]
                 + planes[f, 2] * pts[v, 2]) - planes[f, 3]
            if d < s:
                s = d
                k = v
        sep[f] = s
        low[f] = k
        if s > sep[best]:
            best = f
    return best


@kernel(refcount=False)
def _keep_edges(ne, edge_faces, arcs, half, theta, keep, prune):
    """Edges whose Gauss-map arc is not covered by the caps of its two faces (sat.py,
    _covered_edges' reasoning); every real edge without pruning. Returns how many.

    A cap's angle is 2 asin(half) (half, theta: _caps'). The asin is the query's dearest
    operation, and 2 asin(y) lies within 2 (y + y^3 / 6) and 2 (y + (pi/2 - 1) y^3) on
    [0, 1] (its series' terms are all positive and sum to pi/2 at 1), so it is taken only
    for the faces of edges these bounds leave undecided (a relative margin of 1e-9 covers
    their rounding): the same edges are kept as with every cap's angle computed."""
    n = 0
    for e in range(ne):
        ok = True
        if prune:
            f0 = edge_faces[e, 0]
            f1 = edge_faces[e, 1]
            limit = arcs[e] * (1.0 + 1e-9) + 1e-12
            y0 = half[f0]
            y1 = half[f1]
            c0 = y0 * y0 * y0
            c1 = y1 * y1 * y1
            if 2.0 * ((y0 + c0 / 6.0) + (y1 + c1 / 6.0)) * (1.0 - 1e-9) > limit:
                ok = False
            elif not (2.0 * ((y0 + _ASIN_CUBIC * c0) + (y1 + _ASIN_CUBIC * c1)) * (1.0 + 1e-9)
                      < limit):
                ok = not (_cap_angle(half, theta, f0) + _cap_angle(half, theta, f1) > limit)
        if ok:
            keep[n] = e
            n += 1
    return n


_ASIN_CUBIC = 0.5 * math.pi - 1.0     # asin(y) <= y + (pi/2 - 1) y^3 on [0, 1]


@kernel(inline="always")
def _cap_angle(half, theta, f):
    """Face f's cap angle 2 asin(half[f]), computed at its first use (theta[f] < 0: not yet)."""
    if theta[f] < 0.0:
        theta[f] = 2.0 * math.asin(half[f])
    return theta[f]


@kernel(refcount=False)
def _caps(nf, sep, low, loops, own, other, face_best, tol, half, theta):
    """Cap radius (angle) about every face axis within which no axis beats face_best: the
    support point of A - B at the axis is a vertex of the face minus the other shape's
    deepest point (own: this shape's points, other: the other's, in one frame). The angle is
    2 asin(half[f]); theta[f] is set to -1 (taken when needed: _keep_edges)."""
    for f in range(nf):
        v = loops[f, 0]
        k = low[f]
        d0 = own[v, 0] - other[k, 0]
        d1 = own[v, 1] - other[k, 1]
        d2 = own[v, 2] - other[k, 2]
        klen = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
        gap = max(face_best - sep[f] - tol, 0.0)
        chord = gap / max(klen, 1e-300)
        half[f] = min(0.5 * chord, 1.0)
        theta[f] = -1.0


@kernel(inline="always")
def _relative_pose(pa, ra, pb, rb, rot, trans):
    """rot = ra^T rb, trans = ra^T (pb - pa)."""
    d0, d1, d2 = pb[0] - pa[0], pb[1] - pa[1], pb[2] - pa[2]
    for j in range(3):
        for k in range(3):
            rot[j, k] = ra[0, j] * rb[0, k] + ra[1, j] * rb[1, k] + ra[2, j] * rb[2, k]
        trans[j] = ra[0, j] * d0 + ra[1, j] * d1 + ra[2, j] * d2


@kernel
def queries(ids_a, ids_b, poses, pos_a, rot_a, pos_b, rot_b, rot, trans, margin, box_path,
            prune, is_box, box_half, lut, npoints, points, nfaces, planes, face_loops, nedges,
            edges, edge_dirs, edge_normals, edge_faces, arcs, bound_radius, out_f, out_i, axis):
    """Face and edge queries of M pairs, in A's frame (rot, trans (M, 3, 3), (M, 3): B's pose).

    poses: first write rot, trans from the world poses (pos_a, rot_a, pos_b, rot_b: B's pose
    in A's frame, x_A = rot x_B + trans); else they are given (and the poses unused).

    out_f (M, 3): best separation of A's faces, of B's faces, of the edge pairs (-inf where the
    edge query did not run or found no Minkowski-face pair); out_i (M, 4): A's face, B's face,
    A's edge, B's edge of those; axis (M, 3): the best edge pair's unit axis, A -> B.
    box_path: box-box pairs take the 15-axis test (False: the general path, for tests)."""
    vmax = points.shape[1]
    fmax = planes.shape[1]
    emax = edges.shape[1]
    scratch = (np.empty((vmax, 3)),             # B's points in A's frame
               np.empty((vmax, 3)),             # A's points in B's frame
               np.empty(fmax), np.empty(fmax),  # face separations of A's, B's faces
               np.empty(fmax, np.int64), np.empty(fmax, np.int64),   # their deepest points
               np.empty(fmax), np.empty(fmax),  # cap angles
               np.empty(fmax), np.empty(fmax),  # their half chords (sines of half angles)
               np.empty(emax, np.int64), np.empty(emax, np.int64),   # kept edges
               np.empty((emax, 3)),             # B's edge directions and face normals in A's
               np.empty((emax, 2, 3)),          # frame
               np.empty((3, 3)))
    _query_rows(ids_a, ids_b, poses, pos_a, rot_a, pos_b, rot_b, rot, trans, margin, box_path,
                prune, is_box, box_half, lut, npoints, points, nfaces, planes, face_loops,
                nedges, edges, edge_dirs, edge_normals, edge_faces, arcs, bound_radius, out_f,
                out_i, axis, scratch)


@kernel(refcount=False)
def _query_rows(ids_a, ids_b, poses, pos_a, rot_a, pos_b, rot_b, rot, trans, margin, box_path,
                prune, is_box, box_half, lut, npoints, points, nfaces, planes, face_loops,
                nedges, edges, edge_dirs, edge_normals, edge_faces, arcs, bound_radius, out_f,
                out_i, axis, scratch):
    """queries' loop over the pairs, with its scratch arrays (allocated by queries: a kernel
    without reference counting cannot allocate)."""
    (pb, pab, sep_fa, sep_fb, low_a, low_b, theta_a, theta_b, half_a, half_b, keep_a, keep_b,
     dir_b, nrm_b, absr) = scratch
    for i in range(ids_a.shape[0]):
        a = ids_a[i]
        b = ids_b[i]
        r = rot[i]
        t = trans[i]
        if poses:
            _relative_pose(pos_a[i], rot_a[i], pos_b[i], rot_b[i], r, t)
        if box_path and is_box[a] and is_box[b]:
            _box_pair(box_half[a], box_half[b], r, t, lut, out_f, out_i, axis, i, absr)
            continue
        na = npoints[a]
        nb = npoints[b]
        ti0 = -(r[0, 0] * t[0] + r[1, 0] * t[1] + r[2, 0] * t[2])
        ti1 = -(r[0, 1] * t[0] + r[1, 1] * t[1] + r[2, 1] * t[2])
        ti2 = -(r[0, 2] * t[0] + r[1, 2] * t[1] + r[2, 2] * t[2])
        for v in range(nb):
            p = points[b, v]
            for k in range(3):
                pb[v, k] = (r[k, 0] * p[0] + r[k, 1] * p[1] + r[k, 2] * p[2]) + t[k]
        for v in range(na):
            p = points[a, v]
            pab[v, 0] = (r[0, 0] * p[0] + r[1, 0] * p[1] + r[2, 0] * p[2]) + ti0
            pab[v, 1] = (r[0, 1] * p[0] + r[1, 1] * p[1] + r[2, 1] * p[2]) + ti1
            pab[v, 2] = (r[0, 2] * p[0] + r[1, 2] * p[1] + r[2, 2] * p[2]) + ti2
        fa = _face_query(planes[a], nfaces[a], pb, nb, sep_fa, low_b)
        fb = _face_query(planes[b], nfaces[b], pab, na, sep_fb, low_a)
        out_f[i, 0] = sep_fa[fa]
        out_f[i, 1] = sep_fb[fb]
        out_i[i, 0] = fa
        out_i[i, 1] = fb
        out_f[i, 2] = -np.inf
        out_i[i, 2] = 0
        out_i[i, 3] = 0
        axis[i, 0] = 0.0
        axis[i, 1] = 0.0
        axis[i, 2] = 0.0
        face_best = max(sep_fa[fa], sep_fb[fb])
        if not face_best <= margin[i]:
            continue
        tol = PRUNE_TOL * min(bound_radius[a], bound_radius[b])
        if prune:
            _caps(nfaces[a], sep_fa, low_b, face_loops[a], points[a], pb, face_best, tol,
                  half_a, theta_a)
            _caps(nfaces[b], sep_fb, low_a, face_loops[b], points[b], pab, face_best, tol,
                  half_b, theta_b)
        ka = _keep_edges(nedges[a], edge_faces[a], arcs[a], half_a, theta_a, keep_a, prune)
        kb = _keep_edges(nedges[b], edge_faces[b], arcs[b], half_b, theta_b, keep_b, prune)
        _edge_query(i, a, b, r, na, ka, keep_a, kb, keep_b, points, edges, edge_dirs,
                    edge_normals, pb, dir_b, nrm_b, out_f, out_i, axis)


@kernel(refcount=False)
def _edge_query(i, a, b, r, na, ka, keep_a, kb, keep_b, points, edges, edge_dirs,
                edge_normals, pb, dir_b, nrm_b, out_f, out_i, axis):
    """Best edge-edge axis over the kept edges' Minkowski-face pairs (sat.py's formulas: the
    Gauss-map arcs (na1, na2) and (-nb1, -nb2) must cross; axis u = da x db, every product
    with it a triple product)."""
    cx = 0.0
    cy = 0.0
    cz = 0.0
    for v in range(na):
        cx += points[a, v, 0]
        cy += points[a, v, 1]
        cz += points[a, v, 2]
    cx /= na
    cy /= na
    cz /= na
    for q in range(kb):
        e = keep_b[q]
        d = edge_dirs[b, e]
        for k in range(3):
            dir_b[q, k] = r[k, 0] * d[0] + r[k, 1] * d[1] + r[k, 2] * d[2]
        for s in range(2):
            n = edge_normals[b, e, s]
            for k in range(3):
                nrm_b[q, s, k] = -(r[k, 0] * n[0] + r[k, 1] * n[1] + r[k, 2] * n[2])
    best = -np.inf
    bi = 0
    bj = 0
    bsign = 1.0
    blen2 = 1.0
    for p in range(ka):
        ea = keep_a[p]
        na1 = edge_normals[a, ea, 0]
        na2 = edge_normals[a, ea, 1]
        da = edge_dirs[a, ea]
        a0 = points[a, edges[a, ea, 0]]
        # B x A with A = na1, B = na2
        bx = na2[1] * na1[2] - na2[2] * na1[1]
        by = na2[2] * na1[0] - na2[0] * na1[2]
        bz = na2[0] * na1[1] - na2[1] * na1[0]
        # a0 x da and cen x da
        ax_ = a0[1] * da[2] - a0[2] * da[1]
        ay_ = a0[2] * da[0] - a0[0] * da[2]
        az_ = a0[0] * da[1] - a0[1] * da[0]
        gx = cy * da[2] - cz * da[1]
        gy = cz * da[0] - cx * da[2]
        gz = cx * da[1] - cy * da[0]
        for q in range(kb):
            nc = nrm_b[q, 0]
            nd = nrm_b[q, 1]
            cba = dot_parts(nc[0], nc[1], nc[2], bx, by, bz)
            dba = dot_parts(nd[0], nd[1], nd[2], bx, by, bz)
            if not cba * dba < 0:
                continue
            dx = nd[1] * nc[2] - nd[2] * nc[1]
            dy = nd[2] * nc[0] - nd[0] * nc[2]
            dz = nd[0] * nc[1] - nd[1] * nc[0]
            adc = dot_parts(na1[0], na1[1], na1[2], dx, dy, dz)
            bdc = dot_parts(na2[0], na2[1], na2[2], dx, dy, dz)
            if not (adc * bdc < 0 and cba * bdc > 0):
                continue
            db = dir_b[q]
            cosang = dot_parts(da[0], da[1], da[2], db[0], db[1], db[2])
            len2 = max(1.0 - cosang * cosang, 0.0)
            if not len2 > PARALLEL_SIN * PARALLEL_SIN:
                continue
            b0 = pb[edges[b, keep_b[q], 0]]
            # u . b0 = da . (db x b0)
            u_pb = dot_parts(da[0], da[1], da[2], db[1] * b0[2] - db[2] * b0[1],
                         db[2] * b0[0] - db[0] * b0[2], db[0] * b0[1] - db[1] * b0[0])
            u_pa = dot_parts(ax_, ay_, az_, db[0], db[1], db[2])
            u_ca = dot_parts(gx, gy, gz, db[0], db[1], db[2])
            sign = -1.0 if u_pa - u_ca < 0 else 1.0
            s = sign * (u_pb - u_pa) / math.sqrt(len2)
            if s > best:
                best = s
                bi = p
                bj = q
                bsign = sign
                blen2 = len2
    out_f[i, 2] = best
    ea = keep_a[bi] if ka > 0 else 0
    eb = keep_b[bj] if kb > 0 else 0
    out_i[i, 2] = ea
    out_i[i, 3] = eb
    if best == -np.inf:
        return
    da = edge_dirs[a, ea]
    db = dir_b[bj]
    sc = bsign / math.sqrt(max(blen2, 1e-300))
    axis[i, 0] = (da[1] * db[2] - da[2] * db[1]) * sc
    axis[i, 1] = (da[2] * db[0] - da[0] * db[2]) * sc
    axis[i, 2] = (da[0] * db[1] - da[1] * db[0]) * sc


@kernel(refcount=False)
def choose(ids_a, ids_b, rot_a, rot, planes, bound_radius, out_f, out_i, axis_e, rel, ab,
           separation, kind, index, axis_sep, local, normal):
    """The axis each pair's manifold uses, biased towards A's face, then B's face, then the
    edge pair (each must beat the previous by rel of its separation plus ab of the smaller
    shape's bounding radius), with its unit normal A -> B in A's frame (local) and the world
    (normal); separation is the exact max over all three."""
    for i in range(ids_a.shape[0]):
        a = ids_a[i]
        b = ids_b[i]
        sep_a = out_f[i, 0]
        sep_b = out_f[i, 1]
        sep_e = out_f[i, 2]
        scale = min(bound_radius[a], bound_radius[b])
        use_b = sep_b > sep_a + rel * abs(sep_a) + ab * scale
        face_sep = sep_b if use_b else sep_a
        use_e = sep_e > face_sep + rel * abs(face_sep) + ab * scale
        separation[i] = max(max(sep_a, sep_b), sep_e)
        if use_e:
            kind[i] = EDGE
            index[i, 0] = out_i[i, 2]
            index[i, 1] = out_i[i, 3]
            axis_sep[i] = sep_e
            for k in range(3):
                local[i, k] = axis_e[i, k]
        elif use_b:
            kind[i] = FACE_B
            index[i, 0] = out_i[i, 1]
            index[i, 1] = -1
            axis_sep[i] = sep_b
            n = planes[b, out_i[i, 1]]
            r = rot[i]
            for k in range(3):
                local[i, k] = -(r[k, 0] * n[0] + r[k, 1] * n[1] + r[k, 2] * n[2])
        else:
            kind[i] = FACE_A
            index[i, 0] = out_i[i, 0]
            index[i, 1] = -1
            axis_sep[i] = sep_a
            for k in range(3):
                local[i, k] = planes[a, out_i[i, 0], k]
        r = rot_a[i]
        for k in range(3):
            normal[i, k] = r[k, 0] * local[i, 0] + r[k, 1] * local[i, 1] + r[k, 2] * local[i, 2]
