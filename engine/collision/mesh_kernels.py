"""Compiled kernels of the triangle-mesh narrowphase (engine.core.jit): loops over boxes, rows
(convex shape, triangle) and contacts that the numpy versions spelled as many small array
operations, each costing more in dispatch than in arithmetic at a few hundred rows a pass.

(The BVH walk, TriangleMesh.query, is engine.shapes.trimesh.bvh_query.)

- ``mesh_polytope_triangles``: mesh_contacts' polytope route, whole (``polytope_row``), per
  (polytope, mesh triangle) pair of the BVH query:
  the separating axes (``face_row``, ``edge_row``: mesh_sat), face clipping (``clip_row``,
  also curved_kernels' face contacts), the exact closest points
  (``closest_row``: mesh_distance) and the edge pair's closest points;
- ``reduce_contacts``: mesh_contacts.reduce_manifolds' clustering by normal and its 4-point
  pick (clip_kernels.reduce4_row: clip.reduce4's picks, one row).

The geometry and tie rules are the ones the modules that call these document; the kernels
only change how the loops are run. Every kernel is reached by warmup's mesh scene.
"""
import math

import numpy as np

from ..core.jit import kernel
from ..core.vec_kernels import tangent_basis
from .clip_kernels import _segment_closest, reduce4_row


# -- separating axes ----------------------------------------------------------------------------
@kernel(inline="always")
def face_row(P, nv, PL, nf, t, N):
    """The triangle's face axis and the best polytope face axis (the first of equals) of one
    row: points P (nv used), planes PL (nf used). Returns (sep_t, sep_f, face)."""
    nx, ny, nz = N[0], N[1], N[2]
    lo = np.inf
    for v in range(nv):
        d = P[v, 0] * nx + P[v, 1] * ny + P[v, 2] * nz
        if d < lo:
            lo = d
    sep_t = lo - (nx * t[0, 0] + ny * t[0, 1] + nz * t[0, 2])
    best = -np.inf
    face = 0
    for f in range(nf):
        low = np.inf
        for k in range(3):
            d = PL[f, 0] * t[k, 0] + PL[f, 1] * t[k, 1] + PL[f, 2] * t[k, 2]
            if d < low:
                low = d
        sf = low - PL[f, 3]
        if sf > best or f == 0:
            best = sf
            face = f
    return sep_t, best, face


@kernel
def edge_row(s, ne, t, N, nrm_all, h_all, parallel_sin, axis, te, o):
    """The best Minkowski-face (polytope edge, triangle edge) pair of one row (shape s, ne
    edges): returns (sep, edge, k), the unit axis into axis (3,); sep -inf (axis untouched)
    where no pair qualifies. First of equals in (k, edge) order. te, o: (3, 3) scratch (a
    kernel allocating per row paid more for that than for its arithmetic)."""
    for k in range(3):
        for j in range(3):
            te[k, j] = t[(k + 1) % 3, j] - t[k, j]
    nx, ny, nz = N[0], N[1], N[2]
    for k in range(3):              # in-plane normals te x N, turned outward below
        o[k, 0] = te[k, 1] * nz - te[k, 2] * ny
        o[k, 1] = te[k, 2] * nx - te[k, 0] * nz
        o[k, 2] = te[k, 0] * ny - te[k, 1] * nx
    flip = 0.0
    for j in range(3):
        flip += o[0, j] * (t[2, j] - t[0, j])
    sign = -1.0 if flip > 0 else 1.0
    top = -np.inf
    edge = 0
    kk = 0
    for k in range(3):
        lte = math.sqrt(te[k, 0] * te[k, 0] + te[k, 1] * te[k, 1] + te[k, 2] * te[k, 2])
        for e in range(ne):
            d1 = (te[k, 0] * nrm_all[s, 0, 0, e] + te[k, 1] * nrm_all[s, 1, 0, e]
                  + te[k, 2] * nrm_all[s, 2, 0, e])
            d2 = (te[k, 0] * nrm_all[s, 0, 1, e] + te[k, 1] * nrm_all[s, 1, 1, e]
                  + te[k, 2] * nrm_all[s, 2, 1, e])
            if not d1 * d2 < 0.0:
                continue
            w1 = abs(d2)
            w2 = abs(d1)
            ux = w1 * nrm_all[s, 0, 0, e] + w2 * nrm_all[s, 0, 1, e]
            uy = w1 * nrm_all[s, 1, 0, e] + w2 * nrm_all[s, 1, 1, e]
            uz = w1 * nrm_all[s, 2, 0, e] + w2 * nrm_all[s, 2, 1, e]
            len_u = math.sqrt(ux * ux + uy * uy + uz * uz)
            if not (sign * (ux * o[k, 0] + uy * o[k, 1] + uz * o[k, 2]) < 0.0
                    and len_u > parallel_sin * lte):
                continue
            gap = (ux * t[k, 0] + uy * t[k, 1] + uz * t[k, 2]
                   - w1 * h_all[s, 0, e] - w2 * h_all[s, 1, e])
            sep = gap / len_u
            if sep > top:
                top = sep
                edge = e
                kk = k
                axis[0] = ux / len_u
                axis[1] = uy / len_u
                axis[2] = uz / len_u
    return top, edge, kk


# -- exact closest points -----------------------------------------------------------------------
@kernel(inline="always")
def _closest_on_triangle(p, a, b, c, res):
    """decompose.closest_point_triangle for one point (Ericson 5.1.5), into res (3,)."""
    d1 = d2 = d3 = d4 = d5 = d6 = 0.0
    for j in range(3):
        ab = b[j] - a[j]
        ac = c[j] - a[j]
        d1 += ab * (p[j] - a[j])
        d2 += ac * (p[j] - a[j])
        d3 += ab * (p[j] - b[j])
        d4 += ac * (p[j] - b[j])
        d5 += ab * (p[j] - c[j])
        d6 += ac * (p[j] - c[j])
    if d1 <= 0 and d2 <= 0:
        res[:] = a
        return
    if d3 >= 0 and d4 <= d3:
        res[:] = b
        return
    if d6 >= 0 and d5 <= d6:
        res[:] = c
        return
    va = d3 * d6 - d5 * d4
    vb = d5 * d2 - d1 * d6
    vc = d1 * d4 - d3 * d2
    if vc <= 0 and d1 >= 0 and d3 <= 0:
        den = d1 - d3
        w = d1 / den if den != 0 else d1
        for j in range(3):
            res[j] = a[j] + w * (b[j] - a[j])
        return
    if vb <= 0 and d2 >= 0 and d6 <= 0:
        den = d2 - d6
        w = d2 / den if den != 0 else d2
        for j in range(3):
            res[j] = a[j] + w * (c[j] - a[j])
        return
    if va <= 0 and d4 - d3 >= 0 and d5 - d6 >= 0:
        den = (d4 - d3) + (d5 - d6)
        w = (d4 - d3) / den if den != 0 else (d4 - d3)
        for j in range(3):
            res[j] = b[j] + w * (c[j] - b[j])
        return
    den = va + vb + vc
    if den == 0:
        den = 1.0
    v = vb / den
    w = vc / den
    for j in range(3):
        res[j] = a[j] + v * (b[j] - a[j]) + w * (c[j] - a[j])


@kernel
def closest_row(s, t, points, npoints, edges, nedges, planes, nfaces, face_loops,
                 face_sizes, pa, pb, q, cp, cq, x):
    """The exact closest points of polytope s and triangle t (apart; its frame): the
    nearest of the vertex/triangle, edge/edge and triangle-vertex/face candidates, the first
    of equals in that order, into pa, pb (3,). Returns the distance. q, cp, cq, x: (3,)
    scratch."""
    best = np.inf
    for v in range(npoints[s]):                       # (1) polytope vertices
        _closest_on_triangle(points[s, v], t[0], t[1], t[2], q)
        d = 0.0
        for j in range(3):
            d += (q[j] - points[s, v, j]) ** 2
        if d < best:
            best = d
            pa[:] = points[s, v]
            pb[:] = q
    for e in range(nedges[s]):                        # (2) edge pairs
        a0 = points[s, edges[s, e, 0]]
        a1 = points[s, edges[s, e, 1]]
        for k in range(3):
            _segment_closest(a0, a1, t[k], t[(k + 1) % 3], 1e-12, cp, cq)
            d = 0.0
            for j in range(3):
                d += (cq[j] - cp[j]) ** 2
            if d < best:
                best = d
                pa[:] = cp
                pb[:] = cq
    for k in range(3):                                # (3) triangle vertices over faces
        for f in range(nfaces[s]):
            h = (planes[s, f, 0] * t[k, 0] + planes[s, f, 1] * t[k, 1]
                 + planes[s, f, 2] * t[k, 2]) - planes[s, f, 3]
            if not h > 0.0:
                continue
            for j in range(3):
                x[j] = t[k, j] - h * planes[s, f, j]
            size = face_sizes[s, f]
            inside = True
            for w in range(size):
                l0 = points[s, face_loops[s, f, w]]
                l1 = points[s, face_loops[s, f, (w + 1) % size]]
                ex, ey, ez = l1[0] - l0[0], l1[1] - l0[1], l1[2] - l0[2]
                rx, ry, rz = x[0] - l0[0], x[1] - l0[1], x[2] - l0[2]
                side = ((ey * rz - ez * ry) * planes[s, f, 0]
                        + (ez * rx - ex * rz) * planes[s, f, 1]
                        + (ex * ry - ey * rx) * planes[s, f, 2])
                if not side >= 0.0:
                    inside = False
                    break
            if inside and h * h < best:
                best = h * h
                pa[:] = x
                pb[:] = t[k]
    return math.sqrt(best)


# -- 4-point reduction ----------------------------------------------------------------------------
# -- reduction of a body pair's triangle contacts -----------------------------------------------
@kernel
def reduce_contacts(group, count, normal, points, separation, ids, n_groups, max_clusters,
                    cluster_cos, snap):
    """mesh_contacts.reduce_manifolds over flat manifold arrays (M rows, 4 slots).

    Returns per output manifold (K rows, by group then rank): normal (K, 3), points (K, 4, 3),
    separation (K, 4), ids (K, 4), count (K,), distance (K,), group (K,), rank (K,)."""
    m = count.shape[0]
    n = 0
    for i in range(m):
        n += count[i]
    g = np.empty(n, np.int64)
    src = np.empty((n, 2), np.int64)
    sep = np.empty(n)
    c = 0
    for i in range(m):
        for s in range(count[i]):
            g[c] = group[i]
            src[c, 0] = i
            src[c, 1] = s
            sep[c] = separation[i, s]
            c += 1
    # Contacts by group, then depth, then index (a stable sort on depth within a group).
    by_depth = np.empty(n, np.int64)
    gcount = np.zeros(n_groups + 1, np.int64)
    for c in range(n):
        gcount[g[c] + 1] += 1
    gstart = np.cumsum(gcount)
    fill = gstart[:-1].copy()
    for c in range(n):
        by_depth[fill[g[c]]] = c
        fill[g[c]] += 1
    for gi in range(n_groups):
        a, b = gstart[gi], gstart[gi + 1]
        if b - a > 1:
            seg = by_depth[a:b].copy()
            o = np.argsort(sep[seg], kind="mergesort")
            by_depth[a:b] = seg[o]
    cluster = np.full(n, -1, np.int64)
    seed_c = np.empty(n, np.int64)            # contact seeding each cluster
    seed_group = np.empty(n, np.int64)
    seed_rank = np.empty(n, np.int64)
    seed_of = np.full((n_groups, max_clusters), -1, np.int64)
    k = 0
    for rank in range(max_clusters):
        any_free = False
        for c in range(n):
            if cluster[c] < 0:
                any_free = True
                break
        if not any_free:
            break
        for gi in range(n_groups):
            first = -1
            for p in range(gstart[gi], gstart[gi + 1]):
                if cluster[by_depth[p]] < 0:
                    first = by_depth[p]
                    break
            if first < 0:
                continue
            seed_c[k] = first
            seed_group[k] = gi
            seed_rank[k] = rank
            seed_of[gi, rank] = k
            sn = normal[src[first, 0]]
            for p in range(gstart[gi], gstart[gi + 1]):
                cc = by_depth[p]
                if cluster[cc] >= 0:
                    continue
                nn = normal[src[cc, 0]]
                if nn[0] * sn[0] + nn[1] * sn[1] + nn[2] * sn[2] >= cluster_cos:
                    cluster[cc] = k
            k += 1
    for c in range(n):                        # the rest join their group's closest cluster
        if cluster[c] >= 0:
            continue
        nn = normal[src[c, 0]]
        best = -np.inf
        pick = seed_of[g[c], 0]
        for rank in range(max_clusters):
            sid = seed_of[g[c], rank]
            if sid < 0:
                continue
            sn = normal[src[seed_c[sid], 0]]
            d = nn[0] * sn[0] + nn[1] * sn[1] + nn[2] * sn[2]
            if d > best:
                best = d
                pick = sid
        cluster[c] = pick
    # Each cluster's contacts, farthest from its centroid (in its plane) first: reduce4
    # breaks depth ties by order, so a box on many triangles keeps its corners.
    cnt = np.zeros(k, np.int64)
    centroid = np.zeros((k, 3))
    for c in range(n):
        cnt[cluster[c]] += 1
        for j in range(3):
            centroid[cluster[c], j] += points[src[c, 0], src[c, 1], j]
    for q in range(k):
        for j in range(3):
            centroid[q, j] /= max(cnt[q], 1)
    radial = np.empty(n)
    top = 0.0
    for c in range(n):
        sn = normal[src[seed_c[cluster[c]], 0]]
        off = np.empty(3)
        for j in range(3):
            off[j] = points[src[c, 0], src[c, 1], j] - centroid[cluster[c], j]
        h = off[0] * sn[0] + off[1] * sn[1] + off[2] * sn[2]
        r2 = 0.0
        for j in range(3):
            off[j] -= h * sn[j]
            r2 += off[j] * off[j]
        radial[c] = r2
        top = max(top, r2)
    top = max(top, 1e-300)
    for c in range(n):
        radial[c] = np.rint(radial[c] / top * 1e9) / 1e9
    members = np.empty(n, np.int64)
    cstart = np.zeros(k + 1, np.int64)
    for q in range(k):
        cstart[q + 1] = cstart[q] + cnt[q]
    fill2 = cstart[:-1].copy()
    for c in range(n):
        members[fill2[cluster[c]]] = c
        fill2[cluster[c]] += 1
    out_n = np.zeros((k, 3))
    out_p = np.zeros((k, 4, 3))
    out_s = np.full((k, 4), np.inf)
    out_i = np.zeros((k, 4), np.int64)
    out_c = np.zeros(k, np.int64)
    out_d = np.full(k, np.inf)
    u = np.empty(3)
    v = np.empty(3)
    idx = np.empty(4, np.int64)
    ok = np.empty(4, np.bool_)
    for q in range(k):
        a, b = cstart[q], cstart[q + 1]
        mem = members[a:b].copy()
        o = np.argsort(-radial[mem], kind="mergesort")
        mem = mem[o]
        size = b - a
        sn = normal[src[seed_c[q], 0]]
        out_n[q] = sn
        tangent_basis(sn, u, v)
        x = np.empty(size)
        y = np.empty(size)
        depth = np.empty(size)
        valid = np.ones(size, np.bool_)
        for w in range(size):
            p = points[src[mem[w], 0], src[mem[w], 1]]
            x[w] = p[0] * u[0] + p[1] * u[1] + p[2] * u[2]
            y[w] = p[0] * v[0] + p[1] * v[1] + p[2] * v[2]
            depth[w] = sep[mem[w]]
            out_d[q] = min(out_d[q], depth[w])
        extent = (x.max() - x.min()) + (y.max() - y.min())
        reduce4_row(x, y, depth, valid, size, snap * max(extent, 1e-9), idx, ok,
                    np.empty(size))
        for j in range(4):
            if ok[j]:
                cc = mem[idx[j]]
                out_p[q, j] = points[src[cc, 0], src[cc, 1]]
                out_s[q, j] = sep[cc]
                out_i[q, j] = ids[src[cc, 0], src[cc, 1]]
                out_c[q] += 1
            else:
                out_p[q, j] = points[src[mem[idx[j]], 0], src[mem[idx[j]], 1]]
    # By group, then rank.
    order = np.empty(k, np.int64)
    w = 0
    for gi in range(n_groups):
        for rank in range(max_clusters):
            sid = seed_of[gi, rank]
            if sid >= 0:
                order[w] = sid
                w += 1
    return (out_n[order], out_p[order], out_s[order], out_i[order], out_c[order],
            out_d[order], seed_group[:k][order], seed_rank[:k][order])


# -- face clipping ------------------------------------------------------------------------------
@kernel
def _polygon_edges(x, y, n, ex, ey, elen):
    """Edge vectors (ex, ey) and lengths elen of the plane polygon (x, y)[:n]; returns its
    orientation, 1.0 counter-clockwise (signed area >= 0) else -1.0."""
    area = 0.0
    for j in range(n):
        ex[j] = x[(j + 1) % n] - x[j]
        ey[j] = y[(j + 1) % n] - y[j]
        elen[j] = math.sqrt(ex[j] * ex[j] + ey[j] * ey[j])
        area += x[j] * ey[j] - y[j] * ex[j]
    return 1.0 if area >= 0 else -1.0


@kernel
def clip_row(ref, nr, inc, nk, n, inc_normal, margin, eps, kw, rw, x, y, z, valid, frame,
             sc):
    """mesh_contacts._clip for one pair: the candidates of a reference polygon ref (nr, 3) and
    an incident polygon inc (nk, 3) seen along n (the reference face's unit normal towards
    the incident shape). Written at the padded layout of widths kw >= nk, rw >= nr: incident
    vertex i at i, reference vertex j at kw + j, crossing of reference edge j and incident
    edge i at kw + rw + j * kw + i (x, y plane coordinates, z the incident surface's height
    above the reference plane, valid); frame (3, 3) gets the origin and the basis u, v.
    sc: (11, >= max(nr, nk)) scratch."""
    for c in range(kw + rw + rw * kw):
        valid[c] = False
    u = frame[1]
    v = frame[2]
    tangent_basis(n, u, v)
    for j in range(3):
        frame[0, j] = ref[0, j]
    o = frame[0]
    rx, ry, ix, iy, iz = sc[0], sc[1], sc[2], sc[3], sc[4]
    for j in range(nr):
        dx, dy, dz = ref[j, 0] - o[0], ref[j, 1] - o[1], ref[j, 2] - o[2]
        rx[j] = dx * u[0] + dy * u[1] + dz * u[2]
        ry[j] = dx * v[0] + dy * v[1] + dz * v[2]
    for i in range(nk):
        dx, dy, dz = inc[i, 0] - o[0], inc[i, 1] - o[1], inc[i, 2] - o[2]
        ix[i] = dx * u[0] + dy * u[1] + dz * u[2]
        iy[i] = dx * v[0] + dy * v[1] + dz * v[2]
        iz[i] = dx * n[0] + dy * n[1] + dz * n[2]
    rex, rey, rlen = sc[5], sc[6], sc[7]
    r_or = _polygon_edges(rx, ry, nr, rex, rey, rlen)
    kex, key, klen = sc[8], sc[9], sc[10]
    k_or = _polygon_edges(ix, iy, nk, kex, key, klen)
    # (1) incident vertices inside the reference polygon.
    for i in range(nk):
        inside = True
        for j in range(nr):
            s1 = (rex[j] * (iy[i] - ry[j]) - rey[j] * (ix[i] - rx[j])) * r_or
            if not s1 >= -eps * rlen[j]:
                inside = False
                break
        x[i] = ix[i]
        y[i] = iy[i]
        z[i] = iz[i]
        valid[i] = inside and iz[i] <= margin
    # (2) reference vertices inside the incident polygon, lifted onto the incident plane.
    mn = inc_normal[0] * n[0] + inc_normal[1] * n[1] + inc_normal[2] * n[2]
    good_plane = mn < -1e-6
    di = (inc_normal[0] * (inc[0, 0] - o[0]) + inc_normal[1] * (inc[0, 1] - o[1])
          + inc_normal[2] * (inc[0, 2] - o[2]))
    mu = inc_normal[0] * u[0] + inc_normal[1] * u[1] + inc_normal[2] * u[2]
    mv = inc_normal[0] * v[0] + inc_normal[1] * v[1] + inc_normal[2] * v[2]
    den_p = mn if good_plane else -1.0
    for j in range(nr):
        inside = good_plane
        if inside:
            for i in range(nk):
                s2 = (kex[i] * (ry[j] - iy[i]) - key[i] * (rx[j] - ix[i])) * k_or
                if not s2 >= -eps * klen[i]:
                    inside = False
                    break
        c = kw + j
        x[c] = rx[j]
        y[c] = ry[j]
        z[c] = (di - mu * rx[j] - mv * ry[j]) / den_p
        valid[c] = inside and z[c] <= margin
    # (3) crossings of reference edge j and incident edge i.
    for j in range(nr):
        for i in range(nk):
            c = kw + rw + j * kw + i
            den = rex[j] * key[i] - rey[j] * kex[i]
            cx = ix[i] - rx[j]
            cy = iy[i] - ry[j]
            if not abs(den) > 1e-12 * (rlen[j] * klen[i] + 1e-300):
                continue
            s = (cx * key[i] - cy * kex[i]) / den
            tt = (cx * rey[j] - cy * rex[j]) / den
            x[c] = rx[j] + s * rex[j]
            y[c] = ry[j] + s * rey[j]
            z[c] = iz[i] + tt * (iz[(i + 1) % nk] - iz[i])
            valid[c] = s >= 0 and s <= 1 and tt >= 0 and tt <= 1 and z[c] <= margin


@kernel
def clip_face_row(points, planes, nfaces, patch_loops, patch_sizes, s, t, N, margin, eps,
                   tri, sat_face, is_t, normal, pts, sep, cid, ws):
    """Face contact of one row (shape s, triangle t facing it with normal N, its frame):
    is_t, the triangle is the reference (the polytope face most anti-parallel to N, the
    first of equals, is the incident polygon), else the polytope's SAT face sat_face is the
    reference and the triangle the incident polygon. Polytope faces are their patch outlines
    (engine.collision.patches). The candidates (clip_row) are reduced to 4 (reduce4_row) and stored
    midway between the surfaces into normal (3,), pts (4, 3), sep (4,), cid (4,) with ids
    tri << 28 | ref on the polytope << 27 | face << 16 | route << 12 | code. Returns the
    count. ws: polytope_row's scratch (workspace)."""
    m33, _, _, _, cf, cs, ci, valid, idx, ok, poly = ws
    x, y, z, score = cf[0], cf[1], cf[2], cf[3]
    route, code = ci[0], ci[1]
    frame = m33[3]
    f = sat_face
    if is_t:
        low = np.inf
        for g in range(nfaces[s]):
            d = planes[s, g, 0] * N[0] + planes[s, g, 1] * N[1] + planes[s, g, 2] * N[2]
            if d < low:
                low = d
                f = g
    size = patch_sizes[s, f]
    for w in range(size):
        poly[w] = points[s, patch_loops[s, f, w]]
    fn = planes[s, f, :3]
    if is_t:
        ref, nr, inc, nk, n, inc_n = t, 3, poly, size, N, fn
    else:
        ref, nr, inc, nk, n, inc_n = poly, size, t, 3, fn, N
    clip_row(ref, nr, inc, nk, n, inc_n, margin, eps, nk, nr, x, y, z, valid, frame, cs)
    c = 0
    for i in range(nk):
        route[c] = 1                          # ROUTE_INC
        code[c] = i
        c += 1
    for j in range(nr):
        route[c] = 2                          # ROUTE_REF
        code[c] = j
        c += 1
    for j in range(nr):
        for i in range(nk):
            route[c] = 3                      # ROUTE_CROSS
            code[c] = j * 64 + i
            c += 1
    reduce4_row(x, y, z, valid, c, eps, idx, ok, score)
    base = (tri << 28) | ((0 if is_t else 1) << 27) | ((f & 0x7FF) << 16)
    cnt = 0
    for j in range(4):
        p = idx[j]
        for d in range(3):
            pts[j, d] = frame[0, d] + x[p] * frame[1, d] + y[p] * frame[2, d] + 0.5 * z[p] * n[d]
        if ok[j]:
            sep[j] = z[p]
            cid[j] = base | (route[p] << 12) | (code[p] & 0xFFF)
            cnt += 1
        else:
            sep[j] = np.inf
            cid[j] = 0
    for d in range(3):
        normal[d] = -N[d] if is_t else fn[d]
    return cnt


# -- polytope vs triangle, whole ----------------------------------------------------------------
@kernel(inline="always")
def _feature_active_row(t, u, active, tol):
    """Is the triangle's feature supporting it along -u (a vertex, an edge, or its face:
    always) active? (edge k = vertex k -> k+1; a vertex is active if one of its edges is)"""
    p0 = t[0, 0] * u[0] + t[0, 1] * u[1] + t[0, 2] * u[2]
    p1 = t[1, 0] * u[0] + t[1, 1] * u[1] + t[1, 2] * u[2]
    p2 = t[2, 0] * u[0] + t[2, 1] * u[1] + t[2, 2] * u[2]
    lim = min(min(p0, p1), p2) + tol
    low = (p0 <= lim, p1 <= lim, p2 <= lim)
    n = int(low[0]) + int(low[1]) + int(low[2])
    if n >= 3:
        return True
    for k in range(3):
        if n == 2:
            if low[k] and low[(k + 1) % 3] and active[k]:
                return True
        elif low[k] and (active[k] or active[(k + 2) % 3]):
            return True
    return False


@kernel
def polytope_row(points, npoints, planes, nfaces, edges, nedges, patch_loops, patch_sizes,
                 face_loops, face_sizes, bound_radius, nrm_all, h_all, s, pos, rot, tri,
                 tri_normal, active_front, active_back, two_sided, margin, tri_index, consts,
                 normal, pts, sep, cid, ws):
    """mesh_contacts' polytope route for one (polytope s at pos, rot; triangle) row, world in
    and out: normal (3,), pts (4, 3), sep (4,), cid (4,) filled; returns (count, distance,
    axis kind).

    In the polytope's frame: the side the polytope's centre is on (a one-sided triangle seen
    from behind gives nothing), the face axes, the cull (a face gap beyond margin +
    cull_slack * scale rules every route out), the edge axes, the face-biased choice with the
    internal-edge switch, then the route: face clipping, the exact closest points where a
    face clip found nothing, or the edge pair's closest points (the mesh_contacts docstring
    says why each). consts: cull_slack, snap, rel_tol, abs_tol, touch, parallel_sin. ws:
    the scratch arrays (workspace), made once per kernel call: allocating them per row cost
    more than the row's arithmetic (about 0.1 us an array, 30 a row)."""
    cull_slack, snap, rel_tol, abs_tol, touch, parallel_sin = (
        consts[0], consts[1], consts[2], consts[3], consts[4], consts[5])
    m33, v3, ploc, act = ws[0], ws[1], ws[2], ws[3]
    tl = m33[0]
    nl, N, axis_e, u, nloc = v3[0], v3[1], v3[2], v3[3], v3[4]
    pa, pb, cp, cq = v3[5], v3[6], v3[7], v3[8]
    axis_e[:] = 0.0
    nloc[:] = 0.0
    ploc[:, :] = 0.0
    for k in range(3):
        for j in range(3):
            tl[k, j] = ((tri[k, 0] - pos[0]) * rot[0, j] + (tri[k, 1] - pos[1]) * rot[1, j]
                        + (tri[k, 2] - pos[2]) * rot[2, j])
    for j in range(3):
        nl[j] = tri_normal[0] * rot[0, j] + tri_normal[1] * rot[1, j] + tri_normal[2] * rot[2, j]
    h_c = 0.0
    for j in range(3):
        cen = 0.0
        for v in range(npoints[s]):
            cen += points[s, v, j]
        h_c += nl[j] * (cen / npoints[s] - tl[0, j])
    sep[:] = np.inf
    cid[:] = 0
    if not (two_sided or h_c >= 0):          # behind a one-sided triangle
        normal[0] = 0.0
        normal[1] = 0.0
        normal[2] = 1.0
        pts[:, :] = 0.0
        return 0, np.inf, -1
    side = 1.0 if h_c >= 0 else -1.0
    for j in range(3):
        N[j] = nl[j] * side
        act[j] = active_front[j] if side > 0 else active_back[j]
    scale = bound_radius[s]
    eps = snap * scale
    nloc[2] = 1.0
    cnt = 0
    sep_t, sep_f, face = face_row(points[s], npoints[s], planes[s], nfaces[s], tl, N)
    best = max(sep_t, sep_f)
    kind = 0 if sep_t >= sep_f else 1                 # AXIS_TRI_FACE, AXIS_CONVEX_FACE
    dist = best
    if best <= margin + cull_slack * scale:
        sep_e, ea, et = edge_row(s, nedges[s], tl, N, nrm_all, h_all, parallel_sin, axis_e,
                                 m33[1], m33[2])
        best = max(best, sep_e)
        tol = rel_tol * abs(best) + abs_tol * scale
        use_t = sep_t >= best - tol
        use_f = not use_t and sep_f >= max(sep_t, sep_e) - tol
        use_e = not use_t and not use_f
        for j in range(3):
            u[j] = planes[s, face, j] if use_f else axis_e[j]
        fine = _feature_active_row(tl, u, act, eps) or (use_t and not np.isfinite(sep_e))
        use_t = use_t or not fine
        use_f = use_f and fine
        use_e = use_e and fine
        dist = sep_t if use_t else best
        kind = 0 if use_t else (1 if use_f else 2)
        if (use_t and sep_t <= margin) or (use_f and sep_f <= margin):
            # One call site: clip_face_row is inlined, and compiling it twice cost seconds.
            cnt = clip_face_row(points, planes, nfaces, patch_loops, patch_sizes, s, tl, N,
                                margin, eps, tri_index, face, use_t, nloc, ploc, sep, cid, ws)
        if not use_e and fine and cnt == 0 and best <= margin:
            if best <= touch * scale:                   # touching: the edge route
                use_e = True
            else:
                d = closest_row(s, tl, points, npoints, edges, nedges, planes, nfaces,
                                face_loops, face_sizes, pa, pb, v3[9], v3[10], v3[11], v3[12])
                inv = 1.0 / max(d, 1e-300)
                for j in range(3):
                    u[j] = (pb[j] - pa[j]) * inv
                if d <= margin and _feature_active_row(tl, u, act, eps):
                    for j in range(3):
                        ploc[0, j] = 0.5 * (pa[j] + pb[j])
                        nloc[j] = u[j]
                    sep[0] = d
                    cid[0] = (tri_index << 28) | (4 << 12) | 0xFFF      # ROUTE_EDGE
                    cnt = 1
        if use_e and sep_e <= margin and np.isfinite(sep_e):
            _segment_closest(points[s, edges[s, ea, 0]], points[s, edges[s, ea, 1]], tl[et],
                             tl[(et + 1) % 3], 1e-12, cp, cq)
            sv = 0.0
            for j in range(3):
                sv += (cq[j] - cp[j]) * axis_e[j]
                ploc[0, j] = 0.5 * (cp[j] + cq[j])
                nloc[j] = axis_e[j]
            keep = sv <= margin
            sep[0] = sv if keep else np.inf
            cid[0] = (tri_index << 28) | ((ea & 0x7FF) << 16) | (4 << 12) | (et & 0xFFF)
            cnt = 1 if keep else 0
            kind = 2
    for j in range(3):
        normal[j] = rot[j, 0] * nloc[0] + rot[j, 1] * nloc[1] + rot[j, 2] * nloc[2]
    for p in range(4):
        for j in range(3):
            pts[p, j] = (rot[j, 0] * ploc[p, 0] + rot[j, 1] * ploc[p, 1] + rot[j, 2] * ploc[p, 2]
                         + pos[j])
    return cnt, dist, kind


@kernel
def mesh_polytope_triangles(points, npoints, planes, nfaces, edges, nedges, patch_loops,
                            patch_sizes, face_loops, face_sizes, bound_radius, nrm_all, h_all,
                            ids, pos, rot, mesh_pos, mesh_rot, row, tri, vertices, triangles,
                            normals, active_front, active_back, two_sided, margin, consts,
                            normal, pts, sep, cid, count, distance, axis_kind):
    """polytope_row for K (polytope row, mesh triangle) pairs straight from the BVH query:
    row (K,) indexes the per-row poses (ids, pos, rot, the mesh's mesh_pos, mesh_rot,
    margin), tri (K,) the mesh's triangles (mesh frame), taken to the world here."""
    tw = np.empty((3, 3))
    nw = np.empty(3)
    ws = workspace(patch_loops.shape[2])
    for k in range(row.shape[0]):
        r = row[k]
        t = tri[k]
        for c in range(3):
            v = vertices[triangles[t, c]]
            for j in range(3):
                tw[c, j] = (mesh_rot[r, j, 0] * v[0] + mesh_rot[r, j, 1] * v[1]
                            + mesh_rot[r, j, 2] * v[2] + mesh_pos[r, j])
        for j in range(3):
            nw[j] = (mesh_rot[r, j, 0] * normals[t, 0] + mesh_rot[r, j, 1] * normals[t, 1]
                     + mesh_rot[r, j, 2] * normals[t, 2])
        count[k], distance[k], axis_kind[k] = polytope_row(
            points, npoints, planes, nfaces, edges, nedges, patch_loops, patch_sizes,
            face_loops, face_sizes, bound_radius, nrm_all, h_all, ids[r], pos[r], rot[r], tw,
            nw, active_front[t], active_back[t], two_sided, margin[r], t, consts, normal[k],
            pts[k], sep[k], cid[k], ws)


@kernel
def workspace(pmax):
    """polytope_row's scratch for polytopes of at most pmax patch-outline vertices: (3, 3)
    matrices (triangle, edge_row's two, the clip frame), (3,) vectors, the (4, 3) points,
    the triangle's active edges, the clip candidates' float rows (x, y, z, score), clip_row's
    rows, the candidates' route and code, valid, the reduce-to-4 picks, the polytope
    outline."""
    width = pmax + 3 + 3 * pmax
    return (np.empty((4, 3, 3)), np.empty((13, 3)), np.empty((4, 3)), np.empty(3, np.bool_),
            np.empty((4, width)), np.empty((11, max(pmax, 3))), np.empty((2, width), np.int64),
            np.empty(width, np.bool_), np.empty(4, np.int64), np.empty(4, np.bool_),
            np.empty((pmax, 3)))
