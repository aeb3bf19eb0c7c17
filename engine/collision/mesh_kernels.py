"""Compiled kernels of the triangle-mesh narrowphase (engine.core.jit): loops over boxes, rows
(convex shape, triangle) and contacts that the numpy versions spelled as many small array
operations, each costing more in dispatch than in arithmetic at a few hundred rows a pass.

(The BVH walk, TriangleMesh.query and the step's rows, is engine.shapes.trimesh.bvh_walk.)

- ``mesh_polytope_contacts``: the step's polytope rows on one mesh: the BVH query, then
  ``mesh_polytope_triangles``, keeping the pairs with contacts; ``mesh_row_boxes``: the rows'
  rotations, query boxes and margins;
- ``mesh_polytope_triangles``: mesh_contacts' polytope route, whole, per (polytope, mesh
  triangle) pair: the separating axes (``face_row``, ``edge_row``: mesh_sat), face clipping
  (``clip_row``, also curved_kernels' face contacts), the exact closest points
  (``closest_row``: mesh_distance) and the edge pair's closest points;
- ``reduce_contacts``: mesh_contacts.reduce_manifolds' clustering by normal and its 4-point
  pick (clip_kernels.reduce4_row: clip.reduce4's picks, one row).

The geometry and tie rules are the ones the modules that call these document; the kernels
only change how the loops are run. Every kernel is reached by warmup's mesh scene.
"""
import math

import numpy as np

from ..core.jit import kernel
from ..core.quat import matrix_of
from ..core.vec_kernels import tangent_basis
from ..shapes.trimesh import bvh_walk
from .clip_kernels import _segment_closest, reduce4_row


# -- separating axes ----------------------------------------------------------------------------
@kernel(inline="always")
def face_row(points, planes, s, nv, nf, t, nx, ny, nz):
    """The triangle's face axis (unit normal nx, ny, nz) and the best polytope face axis (the
    first of equals) of one row: polytope s's points (nv used) and planes (nf used), triangle
    t (3, 3) in its frame. Returns (sep_t, sep_f, face). Scalars and whole arrays only: a
    view per row cost an atomic reference count each way."""
    lo = np.inf
    for v in range(nv):
        d = points[s, v, 0] * nx + points[s, v, 1] * ny + points[s, v, 2] * nz
        if d < lo:
            lo = d
    sep_t = lo - (nx * t[0, 0] + ny * t[0, 1] + nz * t[0, 2])
    best = -np.inf
    face = 0
    for f in range(nf):
        low = np.inf
        for k in range(3):
            d = planes[s, f, 0] * t[k, 0] + planes[s, f, 1] * t[k, 1] + planes[s, f, 2] * t[k, 2]
            if d < low:
                low = d
        sf = low - planes[s, f, 3]
        if sf > best or f == 0:
            best = sf
            face = f
    return sep_t, best, face


@kernel
def edge_row(s, ne, t, nx, ny, nz, nrm_all, h_all, parallel_sin, axis, sc):
    """The best Minkowski-face (polytope edge, triangle edge) pair of one row (shape s, ne
    edges, triangle t (3, 3) with unit normal nx, ny, nz): returns (sep, edge, k), the unit
    axis into axis (3,); sep -inf (axis untouched) where no pair qualifies. First of equals in
    (k, edge) order. sc: (6, 3) scratch, the triangle's edges (rows 0-2) and their in-plane
    normals (rows 3-5)."""
    for k in range(3):
        for j in range(3):
            sc[k, j] = t[(k + 1) % 3, j] - t[k, j]
    for k in range(3):              # in-plane normals te x N, turned outward below
        sc[3 + k, 0] = sc[k, 1] * nz - sc[k, 2] * ny
        sc[3 + k, 1] = sc[k, 2] * nx - sc[k, 0] * nz
        sc[3 + k, 2] = sc[k, 0] * ny - sc[k, 1] * nx
    flip = 0.0
    for j in range(3):
        flip += sc[3, j] * (t[2, j] - t[0, j])
    sign = -1.0 if flip > 0 else 1.0
    top = -np.inf
    edge = 0
    kk = 0
    for k in range(3):
        tx, ty, tz = sc[k, 0], sc[k, 1], sc[k, 2]
        ox, oy, oz = sc[3 + k, 0], sc[3 + k, 1], sc[3 + k, 2]
        lte = math.sqrt(tx * tx + ty * ty + tz * tz)
        for e in range(ne):
            d1 = (tx * nrm_all[s, 0, 0, e] + ty * nrm_all[s, 1, 0, e]
                  + tz * nrm_all[s, 2, 0, e])
            d2 = (tx * nrm_all[s, 0, 1, e] + ty * nrm_all[s, 1, 1, e]
                  + tz * nrm_all[s, 2, 1, e])
            if not d1 * d2 < 0.0:
                continue
            w1 = abs(d2)
            w2 = abs(d1)
            ux = w1 * nrm_all[s, 0, 0, e] + w2 * nrm_all[s, 0, 1, e]
            uy = w1 * nrm_all[s, 1, 0, e] + w2 * nrm_all[s, 1, 1, e]
            uz = w1 * nrm_all[s, 2, 0, e] + w2 * nrm_all[s, 2, 1, e]
            len_u = math.sqrt(ux * ux + uy * uy + uz * uz)
            if not (sign * (ux * ox + uy * oy + uz * oz) < 0.0 and len_u > parallel_sin * lte):
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


# -- reduction of a body pair's triangle contacts -----------------------------------------------
@kernel
def _stable_sort_by(items, key, a, b):
    """items[a:b] reordered by increasing key[item], equal keys in their present order (what
    a stable argsort gives; insertion sort: a group or cluster holds tens of contacts)."""
    for i in range(a + 1, b):
        it = items[i]
        kv = key[it]
        j = i - 1
        while j >= a and key[items[j]] > kv:
            items[j + 1] = items[j]
            j -= 1
        items[j + 1] = it


@kernel
def reduce_contacts(group, count, normal, points, separation, ids, n_groups, max_clusters,
                    cluster_cos, snap):
    """mesh_contacts.reduce_manifolds over flat manifold arrays (M rows, 4 slots).

    Returns per output manifold (K rows, by group then rank): normal (K, 3), points (K, 4, 3),
    separation (K, 4), ids (K, 4), count (K,), distance (K,), group (K,), rank (K,). Vectors
    are read by index, never as views, and the scratch is made once per call (a view or an
    array per contact cost more than its arithmetic)."""
    m = count.shape[0]
    n = 0
    for i in range(m):
        n += count[i]
    g = np.empty(n, np.int64)
    row = np.empty(n, np.int64)               # each contact's manifold row and slot
    slot = np.empty(n, np.int64)
    sep = np.empty(n)
    c = 0
    for i in range(m):
        for s in range(count[i]):
            g[c] = group[i]
            row[c] = i
            slot[c] = s
            sep[c] = separation[i, s]
            c += 1
    # Contacts by group, then depth, then index (a stable sort on depth within a group).
    by_depth = np.empty(n, np.int64)
    gstart = np.zeros(n_groups + 1, np.int64)
    for c in range(n):
        gstart[g[c] + 1] += 1
    for gi in range(n_groups):
        gstart[gi + 1] += gstart[gi]
    fill = gstart[:-1].copy()
    for c in range(n):
        by_depth[fill[g[c]]] = c
        fill[g[c]] += 1
    for gi in range(n_groups):
        _stable_sort_by(by_depth, sep, gstart[gi], gstart[gi + 1])
    cluster = np.full(n, -1, np.int64)
    seed_row = np.empty(n, np.int64)          # manifold row of the contact seeding each cluster
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
            sr = row[first]
            seed_row[k] = sr
            seed_group[k] = gi
            seed_rank[k] = rank
            seed_of[gi, rank] = k
            for p in range(gstart[gi], gstart[gi + 1]):
                cc = by_depth[p]
                if cluster[cc] >= 0:
                    continue
                rc = row[cc]
                if (normal[rc, 0] * normal[sr, 0] + normal[rc, 1] * normal[sr, 1]
                        + normal[rc, 2] * normal[sr, 2]) >= cluster_cos:
                    cluster[cc] = k
            k += 1
    for c in range(n):                        # the rest join their group's closest cluster
        if cluster[c] >= 0:
            continue
        rc = row[c]
        best = -np.inf
        pick = seed_of[g[c], 0]
        for rank in range(max_clusters):
            sid = seed_of[g[c], rank]
            if sid < 0:
                continue
            sr = seed_row[sid]
            d = (normal[rc, 0] * normal[sr, 0] + normal[rc, 1] * normal[sr, 1]
                 + normal[rc, 2] * normal[sr, 2])
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
            centroid[cluster[c], j] += points[row[c], slot[c], j]
    for q in range(k):
        for j in range(3):
            centroid[q, j] /= max(cnt[q], 1)
    radial = np.empty(n)                      # its negative: the sort key, farthest first
    top = 0.0
    for c in range(n):
        q = cluster[c]
        sr = seed_row[q]
        o0 = points[row[c], slot[c], 0] - centroid[q, 0]
        o1 = points[row[c], slot[c], 1] - centroid[q, 1]
        o2 = points[row[c], slot[c], 2] - centroid[q, 2]
        h = o0 * normal[sr, 0] + o1 * normal[sr, 1] + o2 * normal[sr, 2]
        o0 -= h * normal[sr, 0]
        o1 -= h * normal[sr, 1]
        o2 -= h * normal[sr, 2]
        r2 = 0.0
        r2 += o0 * o0
        r2 += o1 * o1
        r2 += o2 * o2
        radial[c] = r2
        top = max(top, r2)
    top = max(top, 1e-300)
    for c in range(n):
        radial[c] = -(np.rint(radial[c] / top * 1e9) / 1e9)
    members = np.empty(n, np.int64)
    cstart = np.zeros(k + 1, np.int64)
    for q in range(k):
        cstart[q + 1] = cstart[q] + cnt[q]
    fill2 = cstart[:-1].copy()
    for c in range(n):
        members[fill2[cluster[c]]] = c
        fill2[cluster[c]] += 1
    # Output slots: by group, then rank.
    at = np.empty(k, np.int64)
    w = 0
    for gi in range(n_groups):
        for rank in range(max_clusters):
            sid = seed_of[gi, rank]
            if sid >= 0:
                at[sid] = w
                w += 1
    out_n = np.zeros((k, 3))
    out_p = np.zeros((k, 4, 3))
    out_s = np.full((k, 4), np.inf)
    out_i = np.zeros((k, 4), np.int64)
    out_c = np.zeros(k, np.int64)
    out_d = np.full(k, np.inf)
    out_g = np.empty(k, np.int64)
    out_r = np.empty(k, np.int64)
    u = np.empty(3)
    v = np.empty(3)
    sn = np.empty(3)
    idx = np.empty(4, np.int64)
    ok = np.empty(4, np.bool_)
    x = np.empty(n)
    y = np.empty(n)
    depth = np.empty(n)
    valid = np.ones(n, np.bool_)
    score = np.empty(n)
    for q in range(k):
        a, b = cstart[q], cstart[q + 1]
        _stable_sort_by(members, radial, a, b)
        size = b - a
        o = at[q]
        sr = seed_row[q]
        out_g[o] = seed_group[q]
        out_r[o] = seed_rank[q]
        for j in range(3):
            sn[j] = normal[sr, j]
            out_n[o, j] = sn[j]
        tangent_basis(sn, u, v)
        xlo = ylo = np.inf
        xhi = yhi = -np.inf
        for w in range(size):
            cc = members[a + w]
            p0, p1, p2 = points[row[cc], slot[cc], 0], points[row[cc], slot[cc], 1], \
                points[row[cc], slot[cc], 2]
            x[w] = p0 * u[0] + p1 * u[1] + p2 * u[2]
            y[w] = p0 * v[0] + p1 * v[1] + p2 * v[2]
            depth[w] = sep[cc]
            out_d[o] = min(out_d[o], depth[w])
            xlo = min(xlo, x[w])
            xhi = max(xhi, x[w])
            ylo = min(ylo, y[w])
            yhi = max(yhi, y[w])
        extent = (xhi - xlo) + (yhi - ylo)
        reduce4_row(x, y, depth, valid, size, snap * max(extent, 1e-9), idx, ok, score)
        for j in range(4):
            cc = members[a + idx[j]]
            for d in range(3):
                out_p[o, j, d] = points[row[cc], slot[cc], d]
            if ok[j]:
                out_s[o, j] = sep[cc]
                out_i[o, j] = ids[row[cc], slot[cc]]
                out_c[o] += 1
    return out_n, out_p, out_s, out_i, out_c, out_d, out_g, out_r


# -- face clipping ------------------------------------------------------------------------------
@kernel(inline="always")
def _polygon_edges(sc, xr, yr, er, n):
    """Edge vectors and lengths of the plane polygon in rows xr, yr of sc (n points) into rows
    er, er + 1, er + 2 (x, y, length); returns its orientation, 1.0 counter-clockwise (signed
    area >= 0) else -1.0."""
    area = 0.0
    for j in range(n):
        ex = sc[xr, (j + 1) % n] - sc[xr, j]
        ey = sc[yr, (j + 1) % n] - sc[yr, j]
        sc[er, j] = ex
        sc[er + 1, j] = ey
        sc[er + 2, j] = math.sqrt(ex * ex + ey * ey)
        area += sc[xr, j] * ey - sc[yr, j] * ex
    return 1.0 if area >= 0 else -1.0


# Rows of clip_row's scratch: the reference polygon's plane coordinates, the incident one's
# (and its heights), then each polygon's edges (x, y, length).
_RX, _RY, _IX, _IY, _IZ, _REX, _KEX = 0, 1, 2, 3, 4, 5, 8


@kernel
def clip_row(ref, nr, inc, nk, n, inc_normal, margin, eps, kw, rw, x, y, z, valid, frame,
             sc):
    """mesh_contacts._clip for one pair: the candidates of a reference polygon ref (nr, 3) and
    an incident polygon inc (nk, 3) seen along n (the reference face's unit normal towards
    the incident shape). Written at the padded layout of widths kw >= nk, rw >= nr: incident
    vertex i at i, reference vertex j at kw + j, crossing of reference edge j and incident
    edge i at kw + rw + j * kw + i (x, y plane coordinates, z the incident surface's height
    above the reference plane, valid); frame (3, 3) gets the origin and the basis u, v.
    sc: (11, >= max(nr, nk)) scratch (rows _RX...). Rows and elements are indexed, never
    sliced: a view is an atomic reference count each way, and this runs per contact row."""
    for c in range(kw + rw + rw * kw):
        valid[c] = False
    tangent_basis(n, frame[1], frame[2])
    for j in range(3):
        frame[0, j] = ref[0, j]
    ox, oy, oz = frame[0, 0], frame[0, 1], frame[0, 2]
    ux, uy, uz = frame[1, 0], frame[1, 1], frame[1, 2]
    vx, vy, vz = frame[2, 0], frame[2, 1], frame[2, 2]
    for j in range(nr):
        dx, dy, dz = ref[j, 0] - ox, ref[j, 1] - oy, ref[j, 2] - oz
        sc[_RX, j] = dx * ux + dy * uy + dz * uz
        sc[_RY, j] = dx * vx + dy * vy + dz * vz
    for i in range(nk):
        dx, dy, dz = inc[i, 0] - ox, inc[i, 1] - oy, inc[i, 2] - oz
        sc[_IX, i] = dx * ux + dy * uy + dz * uz
        sc[_IY, i] = dx * vx + dy * vy + dz * vz
        sc[_IZ, i] = dx * n[0] + dy * n[1] + dz * n[2]
    r_or = _polygon_edges(sc, _RX, _RY, _REX, nr)
    k_or = _polygon_edges(sc, _IX, _IY, _KEX, nk)
    # (1) incident vertices inside the reference polygon.
    for i in range(nk):
        ix, iy, iz = sc[_IX, i], sc[_IY, i], sc[_IZ, i]
        inside = True
        for j in range(nr):
            s1 = (sc[_REX, j] * (iy - sc[_RY, j]) - sc[_REX + 1, j] * (ix - sc[_RX, j])) * r_or
            if not s1 >= -eps * sc[_REX + 2, j]:
                inside = False
                break
        x[i] = ix
        y[i] = iy
        z[i] = iz
        valid[i] = inside and iz <= margin
    # (2) reference vertices inside the incident polygon, lifted onto the incident plane.
    mn = inc_normal[0] * n[0] + inc_normal[1] * n[1] + inc_normal[2] * n[2]
    good_plane = mn < -1e-6
    di = (inc_normal[0] * (inc[0, 0] - ox) + inc_normal[1] * (inc[0, 1] - oy)
          + inc_normal[2] * (inc[0, 2] - oz))
    mu = inc_normal[0] * ux + inc_normal[1] * uy + inc_normal[2] * uz
    mv = inc_normal[0] * vx + inc_normal[1] * vy + inc_normal[2] * vz
    den_p = mn if good_plane else -1.0
    for j in range(nr):
        rx, ry = sc[_RX, j], sc[_RY, j]
        inside = good_plane
        if inside:
            for i in range(nk):
                s2 = (sc[_KEX, i] * (ry - sc[_IY, i]) - sc[_KEX + 1, i] * (rx - sc[_IX, i])) * k_or
                if not s2 >= -eps * sc[_KEX + 2, i]:
                    inside = False
                    break
        c = kw + j
        x[c] = rx
        y[c] = ry
        z[c] = (di - mu * rx - mv * ry) / den_p
        valid[c] = inside and z[c] <= margin
    # (3) crossings of reference edge j and incident edge i.
    for j in range(nr):
        rex, rey, rlen = sc[_REX, j], sc[_REX + 1, j], sc[_REX + 2, j]
        for i in range(nk):
            kex, key, klen = sc[_KEX, i], sc[_KEX + 1, i], sc[_KEX + 2, i]
            c = kw + rw + j * kw + i
            den = rex * key - rey * kex
            cx = sc[_IX, i] - sc[_RX, j]
            cy = sc[_IY, i] - sc[_RY, j]
            if not abs(den) > 1e-12 * (rlen * klen + 1e-300):
                continue
            s = (cx * key - cy * kex) / den
            tt = (cx * rey - cy * rex) / den
            x[c] = sc[_RX, j] + s * rex
            y[c] = sc[_RY, j] + s * rey
            z[c] = sc[_IZ, i] + tt * (sc[_IZ, (i + 1) % nk] - sc[_IZ, i])
            valid[c] = s >= 0 and s <= 1 and tt >= 0 and tt <= 1 and z[c] <= margin


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
def mesh_polytope_triangles(points, npoints, planes, nfaces, edges, nedges, patch_loops,
                            patch_sizes, face_loops, face_sizes, bound_radius, nrm_all, h_all,
                            ids, pos, rot, mesh_pos, mesh_rot, margin, two_sided, row, tri,
                            vertices, triangles, normals, active_front, active_back, tri_id,
                            consts, normal, pts, sep, cid, count, distance, axis_kind):
    """mesh_contacts' polytope route for K (polytope row, mesh triangle) pairs, world in and
    out: row (K,) indexes the per-row arrays (ids, pos, rot, the mesh's pose mesh_pos,
    mesh_rot, margin, two_sided), tri (K,) the mesh's triangles (mesh frame; tri_id[t] goes
    into the contact ids). Fills normal (K, 3), pts (K, 4, 3), sep (K, 4), cid (K, 4),
    count, distance and the axis kind (K,).

    Per pair, in the polytope's frame: the side the polytope's centre is on (a one-sided
    triangle seen from behind gives nothing), the face axes, the cull (a face gap beyond
    margin + cull_slack * scale rules every route out), the edge axes, the face-biased choice
    with the internal-edge switch, then the route: face clipping, the exact closest points
    where a face clip found nothing, or the edge pair's closest points (the mesh_contacts
    docstring says why each). consts: cull_slack, snap, rel_tol, abs_tol, touch,
    parallel_sin.

    The pair's steps are written out in this loop over scratch made once per call (its
    helpers get whole arrays and indices): numba takes and drops an atomic reference on
    every array a call receives and every view it makes, and per pair those counts cost
    more than the geometry (half of this kernel's time before)."""
    cull_slack, snap, rel_tol, abs_tol, touch, parallel_sin = (
        consts[0], consts[1], consts[2], consts[3], consts[4], consts[5])
    (tw, tl, N, fn, axis_e, u, nloc, pa, pb, cp, cq, q4, esc, ploc, sep4, cid4, act, x, y, z,
     score, valid, ci, idx, ok, poly, frame, cs) = workspace(patch_loops.shape[2])
    for k in range(row.shape[0]):
        r = row[k]
        t = tri[k]
        s = ids[r]
        tri_index = tri_id[t]
        m = margin[r]
        # The triangle to the world, then to the polytope's frame.
        for c in range(3):
            vi = triangles[t, c]
            for j in range(3):
                tw[c, j] = (mesh_rot[r, j, 0] * vertices[vi, 0] + mesh_rot[r, j, 1] * vertices[vi, 1]
                            + mesh_rot[r, j, 2] * vertices[vi, 2] + mesh_pos[r, j])
        nw0 = (mesh_rot[r, 0, 0] * normals[t, 0] + mesh_rot[r, 0, 1] * normals[t, 1]
               + mesh_rot[r, 0, 2] * normals[t, 2])
        nw1 = (mesh_rot[r, 1, 0] * normals[t, 0] + mesh_rot[r, 1, 1] * normals[t, 1]
               + mesh_rot[r, 1, 2] * normals[t, 2])
        nw2 = (mesh_rot[r, 2, 0] * normals[t, 0] + mesh_rot[r, 2, 1] * normals[t, 1]
               + mesh_rot[r, 2, 2] * normals[t, 2])
        for c in range(3):
            for j in range(3):
                tl[c, j] = ((tw[c, 0] - pos[r, 0]) * rot[r, 0, j]
                            + (tw[c, 1] - pos[r, 1]) * rot[r, 1, j]
                            + (tw[c, 2] - pos[r, 2]) * rot[r, 2, j])
        for j in range(3):
            N[j] = nw0 * rot[r, 0, j] + nw1 * rot[r, 1, j] + nw2 * rot[r, 2, j]
        h_c = 0.0
        nv = npoints[s]
        for j in range(3):
            cen = 0.0
            for v in range(nv):
                cen += points[s, v, j]
            h_c += N[j] * (cen / nv - tl[0, j])
        for j in range(4):
            sep4[j] = np.inf
            cid4[j] = 0
        if not (two_sided[r] or h_c >= 0):          # behind a one-sided triangle
            for j in range(4):
                sep[k, j] = np.inf
                cid[k, j] = 0
                for d in range(3):
                    pts[k, j, d] = 0.0
            normal[k, 0] = 0.0
            normal[k, 1] = 0.0
            normal[k, 2] = 1.0
            count[k], distance[k], axis_kind[k] = 0, np.inf, -1
            continue
        side = 1.0 if h_c >= 0 else -1.0
        for j in range(3):
            N[j] = N[j] * side
            act[j] = active_front[t, j] if side > 0 else active_back[t, j]
            axis_e[j] = 0.0
            nloc[j] = 0.0
        nloc[2] = 1.0
        for j in range(4):
            for d in range(3):
                ploc[j, d] = 0.0
        scale = bound_radius[s]
        eps = snap * scale
        cnt = 0
        sep_t, sep_f, face = face_row(points, planes, s, nv, nfaces[s], tl, N[0], N[1], N[2])
        best = max(sep_t, sep_f)
        kind = 0 if sep_t >= sep_f else 1             # AXIS_TRI_FACE, AXIS_CONVEX_FACE
        dist = best
        if best <= m + cull_slack * scale:
            sep_e, ea, et = edge_row(s, nedges[s], tl, N[0], N[1], N[2], nrm_all, h_all,
                                     parallel_sin, axis_e, esc)
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
            if (use_t and sep_t <= m) or (use_f and sep_f <= m):
                # Face contact: use_t, the triangle is the reference (the polytope face most
                # anti-parallel to N, the first of equals, is the incident polygon), else the
                # polytope's SAT face is the reference and the triangle the incident polygon.
                # Polytope faces are their patch outlines (engine.collision.patches). The
                # candidates (clip_row) are reduced to 4 (reduce4_row) and stored midway
                # between the surfaces, ids tri << 28 | ref on the polytope << 27 | face << 16
                # | route << 12 | code. (Written out here, not called: a call takes and drops a
                # reference on each of its ~30 arrays.)
                f = face
                if use_t:
                    low = np.inf
                    for g in range(nfaces[s]):
                        d = planes[s, g, 0] * N[0] + planes[s, g, 1] * N[1] + planes[s, g, 2] * N[2]
                        if d < low:
                            low = d
                            f = g
                size = patch_sizes[s, f]
                for w in range(size):
                    pv = patch_loops[s, f, w]
                    for j in range(3):
                        poly[w, j] = points[s, pv, j]
                for j in range(3):
                    fn[j] = planes[s, f, j]
                if use_t:
                    clip_row(tl, 3, poly, size, N, fn, m, eps, size, 3, x, y, z, valid, frame, cs)
                    nr, nk = 3, size
                else:
                    clip_row(poly, size, tl, 3, fn, N, m, eps, 3, size, x, y, z, valid, frame, cs)
                    nr, nk = size, 3
                c = 0
                for i in range(nk):
                    ci[0, c] = 1                          # ROUTE_INC
                    ci[1, c] = i
                    c += 1
                for j in range(nr):
                    ci[0, c] = 2                          # ROUTE_REF
                    ci[1, c] = j
                    c += 1
                for j in range(nr):
                    for i in range(nk):
                        ci[0, c] = 3                      # ROUTE_CROSS
                        ci[1, c] = j * 64 + i
                        c += 1
                reduce4_row(x, y, z, valid, c, eps, idx, ok, score)
                base = (tri_index << 28) | ((0 if use_t else 1) << 27) | ((f & 0x7FF) << 16)
                for j in range(4):
                    p = idx[j]
                    for d in range(3):
                        nd = N[d] if use_t else fn[d]
                        ploc[j, d] = (frame[0, d] + x[p] * frame[1, d] + y[p] * frame[2, d]
                                      + 0.5 * z[p] * nd)
                    if ok[j]:
                        sep4[j] = z[p]
                        cid4[j] = base | (ci[0, p] << 12) | (ci[1, p] & 0xFFF)
                        cnt += 1
                    else:
                        sep4[j] = np.inf
                        cid4[j] = 0
                for d in range(3):
                    nloc[d] = -N[d] if use_t else fn[d]
            if not use_e and fine and cnt == 0 and best <= m:
                if best <= touch * scale:                   # touching: the edge route
                    use_e = True
                else:
                    d = closest_row(s, tl, points, npoints, edges, nedges, planes, nfaces,
                                    face_loops, face_sizes, pa, pb, q4[0], q4[1], q4[2], q4[3])
                    inv = 1.0 / max(d, 1e-300)
                    for j in range(3):
                        u[j] = (pb[j] - pa[j]) * inv
                    if d <= m and _feature_active_row(tl, u, act, eps):
                        for j in range(3):
                            ploc[0, j] = 0.5 * (pa[j] + pb[j])
                            nloc[j] = u[j]
                        sep4[0] = d
                        cid4[0] = (tri_index << 28) | (4 << 12) | 0xFFF      # ROUTE_EDGE
                        cnt = 1
            if use_e and sep_e <= m and np.isfinite(sep_e):
                _segment_closest(points[s, edges[s, ea, 0]], points[s, edges[s, ea, 1]], tl[et],
                                 tl[(et + 1) % 3], 1e-12, cp, cq)
                sv = 0.0
                for j in range(3):
                    sv += (cq[j] - cp[j]) * axis_e[j]
                    ploc[0, j] = 0.5 * (cp[j] + cq[j])
                    nloc[j] = axis_e[j]
                keep = sv <= m
                sep4[0] = sv if keep else np.inf
                cid4[0] = (tri_index << 28) | ((ea & 0x7FF) << 16) | (4 << 12) | (et & 0xFFF)
                cnt = 1 if keep else 0
                kind = 2
        # Back to the world.
        for j in range(3):
            normal[k, j] = rot[r, j, 0] * nloc[0] + rot[r, j, 1] * nloc[1] + rot[r, j, 2] * nloc[2]
        for p in range(4):
            for j in range(3):
                pts[k, p, j] = (rot[r, j, 0] * ploc[p, 0] + rot[r, j, 1] * ploc[p, 1]
                                + rot[r, j, 2] * ploc[p, 2] + pos[r, j])
            sep[k, p] = sep4[p]
            cid[k, p] = cid4[p]
        count[k], distance[k], axis_kind[k] = cnt, dist, kind


@kernel
def workspace(pmax):
    """mesh_polytope_triangles' scratch for polytopes of at most pmax patch-outline vertices:
    the triangle in the world and in the polytope's frame (3, 3), (3,) vectors (N, the
    polytope face normal, the edge axis, the feature direction, the local normal, the
    closest points), closest_row's (4, 3), edge_row's (6, 3), the local points (4, 3), their
    separations and ids (4,), the triangle's active edges, the clip candidates' x, y, z,
    score, valid, route and code, the reduce-to-4 picks, the polytope outline, clip_row's
    frame and rows."""
    width = pmax + 3 + 3 * pmax
    return (np.empty((3, 3)), np.empty((3, 3)), np.empty(3), np.empty(3), np.empty(3),
            np.empty(3), np.empty(3), np.empty(3), np.empty(3), np.empty(3), np.empty(3),
            np.empty((4, 3)), np.empty((6, 3)), np.empty((4, 3)), np.empty(4),
            np.empty(4, np.int64), np.empty(3, np.bool_), np.empty(width), np.empty(width),
            np.empty(width), np.empty(width), np.empty(width, np.bool_),
            np.empty((2, width), np.int64), np.empty(4, np.int64), np.empty(4, np.bool_),
            np.empty((pmax, 3)), np.empty((3, 3)), np.empty((11, max(pmax, 3))))


# -- the step's rows on one mesh -----------------------------------------------------------------
@kernel
def mesh_row_boxes(points, npoints, radius, s_c, x_c, q_c, x_m, q_m, margin):
    """Per (convex shape, mesh) row of the step: the rotations of q_c and q_m (R, 3, 3),
    quat.matrix_of; the convex shape's box in the mesh's frame (its points posed, then taken
    into the mesh frame), grown by its radius and the row's margin, lo, hi (R, 3); and the
    margin the row uses, margin_buckets."""
    m = s_c.shape[0]
    rot_c = np.empty((m, 3, 3))
    rot_m = np.empty((m, 3, 3))
    lo = np.empty((m, 3))
    hi = np.empty((m, 3))
    w = np.empty(3)
    for r in range(m):
        matrix_of(q_c[r], rot_c[r])
        matrix_of(q_m[r], rot_m[r])
        s = s_c[r]
        grow = radius[s] + margin[r]
        for j in range(3):
            lo[r, j] = np.inf
            hi[r, j] = -np.inf
        for v in range(npoints[s]):
            for j in range(3):
                w[j] = (points[s, v, 0] * rot_c[r, j, 0] + points[s, v, 1] * rot_c[r, j, 1]
                        + points[s, v, 2] * rot_c[r, j, 2] + x_c[r, j])
            for j in range(3):
                p = ((w[0] - x_m[r, 0]) * rot_m[r, 0, j] + (w[1] - x_m[r, 1]) * rot_m[r, 1, j]
                     + (w[2] - x_m[r, 2]) * rot_m[r, 2, j])
                lo[r, j] = min(lo[r, j], p)
                hi[r, j] = max(hi[r, j], p)
        for j in range(3):
            lo[r, j] -= grow
            hi[r, j] += grow
    return rot_c, rot_m, lo, hi, margin_buckets(margin)


@kernel
def margin_buckets(margin):
    """Rows are grouped by the power of two above their margin (ceil(log2(max(margin,
    1e-9))), exactly, from the binary exponent) and each group uses its largest margin (a
    speculative margin may only grow, here by less than 2x): the margin each row uses (R,).
    The mesh kernels take one margin per row; one per group keeps rows that barely differ
    from splitting a body's contacts at different margins."""
    m = margin.shape[0]
    bucket = np.empty(m, np.int64)
    for r in range(m):
        f, e = math.frexp(max(margin[r], 1e-9))
        bucket[r] = e - 1 if f == 0.5 else e
    order = np.argsort(bucket, kind="mergesort")
    used = np.empty(m)
    a = 0
    while a < m:
        b = a
        top = -np.inf
        while b < m and bucket[order[b]] == bucket[order[a]]:
            top = max(top, margin[order[b]])
            b += 1
        for i in range(a, b):
            used[order[i]] = top
        a = b
    return used


@kernel
def mesh_polytope_contacts(points, npoints, planes, nfaces, edges, nedges, patch_loops,
                           patch_sizes, face_loops, face_sizes, bound_radius, nrm_all, h_all,
                           ids, pos, rot, mesh_pos, mesh_rot, margin, two_sided, lo, hi, rows,
                           vertices, triangles, normals, active_front, active_back, tri_id,
                           node_lo, node_hi, depth, leaf_start, leaf_count, order, tri_lo,
                           tri_hi, consts):
    """The step's polytope rows on one mesh: each row r of rows queries the mesh's BVH with
    its box lo[r], hi[r] (mesh frame; trimesh.bvh_walk), its triangles go through
    mesh_polytope_triangles, and the pairs with contacts are kept, in (row, triangle)
    order. Returns their row (K,), normal (K, 3), points (K, 4, 3), separation (K, 4), ids
    (K, 4) and count (K,)."""
    prow = np.empty(max(16, 8 * rows.shape[0]), np.int64)
    ptri = np.empty(prow.shape[0], np.int64)
    n = 0
    stack = np.empty(2 * (depth + 2), np.int64)
    for i in range(rows.shape[0]):
        r = rows[i]
        start = n
        ptri, n = bvh_walk(lo, hi, r, node_lo, node_hi, depth, leaf_start, leaf_count, order,
                           tri_lo, tri_hi, ptri, n, stack)
        if prow.shape[0] < ptri.shape[0]:
            grow = np.empty(ptri.shape[0], np.int64)
            grow[:start] = prow[:start]
            prow = grow
        prow[start:n] = r
    normal = np.empty((n, 3))
    pts = np.empty((n, 4, 3))
    sep = np.empty((n, 4))
    cid = np.empty((n, 4), np.int64)
    count = np.empty(n, np.int64)
    distance = np.empty(n)
    kind = np.empty(n, np.int8)
    mesh_polytope_triangles(
        points, npoints, planes, nfaces, edges, nedges, patch_loops, patch_sizes, face_loops,
        face_sizes, bound_radius, nrm_all, h_all, ids, pos, rot, mesh_pos, mesh_rot, margin,
        np.full(ids.shape[0], two_sided), prow[:n], ptri[:n], vertices, triangles, normals,
        active_front, active_back, tri_id, consts, normal, pts, sep, cid, count, distance,
        kind)
    k = 0
    for i in range(n):                  # the pairs with contacts, moved up in place
        if count[i] == 0:
            continue
        prow[k] = prow[i]
        count[k] = count[i]
        for j in range(4):
            sep[k, j] = sep[i, j]
            cid[k, j] = cid[i, j]
            for d in range(3):
                pts[k, j, d] = pts[i, j, d]
        for d in range(3):
            normal[k, d] = normal[i, d]
        k += 1
    return prow[:k].copy(), normal[:k].copy(), pts[:k].copy(), sep[:k].copy(), cid[:k].copy(), \
        count[:k].copy()
