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

Points are kept if their separation along the contact normal is <= margin (speculative
contacts), stored midway between the two surfaces, and reduced to at most 4 by the usual rule
(Box2D, Bullet, Jolt): deepest, farthest from it, largest triangle, largest quad.

Edge contact (the SAT chose an edge-edge axis). Crossing edges touch at one point, but when the
faces beside the edges are within EDGE_CLIP_DEG of the axis (two crossed beams a few degrees
apart: the edge axis beats the faces by more than the face bias, yet the beams touch over an
area) those faces are clipped as above, with the SAT axis as the contact normal and every
separation measured along it (edge_face_contact); otherwise one point at the closest points
of the two edges (edge_contact).
"""
import numpy as np

from ..core import detmath
from ..core.vec import columns, cross

# Feature-id layout (int64). Face contacts, written in terms of A and B (not reference and
# incident), so a point keeps its id when the SAT switches between A's face, B's face and an
# edge axis clipped between the same two faces (warm starting survives the switch):
#   bits 0-11 loop index on A's face, 12-23 loop index on B's face, 24-25 feature type
#   (vertex of B, vertex of A, crossing), 26-41 B's face, 42-57 A's face, 59-61 contact kind.
# Edge contacts: bits 0-23 edge of B, 24-47 edge of A, 59-61 kind.
# Inside face_contact the codes are built as (reference, incident); _face_ids maps them.
T_INC_VERTEX, T_REF_VERTEX, T_CROSSING, T_HULL_VERTEX = 0, 1, 2, 3
ID_FACE, ID_EDGE, ID_ROUND, ID_FALLBACK = 1, 2, 3, 4

# Distances below SNAP * shape size count as coincident features (ids) and duplicate points.
SNAP = 1e-4
# Inclusion tolerance of the inside tests, relative to shape size.
INSIDE_TOL = 1e-9


def _face_ids(flip, ref_face, inc_face, code):
    """code: bits 0-11 reference loop index, 12-23 incident loop index, 24-25 feature type
    (T_*). flip: the reference is B; its rows swap the roles to get the A/B layout above."""
    code = code.astype(np.int64)
    r, k, kind = code & 0xFFF, (code >> 12) & 0xFFF, code >> 24
    swapped = (k | (r << 12)
               | (np.where(kind == T_CROSSING, kind, 1 - kind) << 24))  # T_INC <-> T_REF
    # A hull vertex (the incident shape's vertex index in bits 0-23) keeps its code.
    code = np.where(flip & (kind != T_HULL_VERTEX), swapped, code)
    face_a = np.where(flip, inc_face, ref_face).astype(np.int64)
    face_b = np.where(flip, ref_face, inc_face).astype(np.int64)
    return (np.int64(ID_FACE) << 59) | (face_a << 42) | (face_b << 26) | code


def edge_ids(edge_a, edge_b):
    return (np.int64(ID_EDGE) << 59) | (edge_a.astype(np.int64) << 24) | edge_b.astype(np.int64)


def _dot(a, b):
    return np.einsum("...i,...i->...", a, b)


def _pick(score, valid, tol):
    """Argmax of score over valid candidates; near-ties (within tol) go to the first candidate.

    Exact ties are common (a cube resting flat, a 45 deg octagon): without the tie rule, jitter
    of 1e-9 would pick a different point each step and break warm starting. Candidates come in
    a fixed feature order, so "first" is a stable choice."""
    best = np.max(np.where(valid, score, -np.inf), axis=1)
    best = np.where(np.isfinite(best), best, 0.0)  # rows without candidates
    near = valid & (score >= (best - tol)[:, None])
    return np.argmax(near, axis=1), best


def reduce4(x, y, sep, valid, eps):
    """Pick at most 4 of C candidate points per pair: deepest, farthest, max triangle, max quad.

    x, y (M, C): coordinates in the contact plane; sep (M, C); valid (M, C); eps (M,) length
    below which a point adds nothing (also the tie tolerance; ties go to the lower index).
    Returns (idx (M, 4), ok (M, 4)); ok is monotone (ok[:, j] implies
    ok[:, j-1]) so the chosen points are a prefix.
    """
    rows = np.arange(len(x))
    i1, _ = _pick(-sep, valid, eps)
    ok1 = valid.any(axis=1)
    x1, y1 = x[rows, i1][:, None], y[rows, i1][:, None]
    dx, dy = x - x1, y - y1
    i2, d12 = _pick(np.sqrt(dx * dx + dy * dy), valid, eps)
    ok2 = ok1 & (d12 > eps)
    ex, ey = dx[rows, i2][:, None], dy[rows, i2][:, None]
    area = ex * dy - ey * dx  # twice the signed area of (p1, p2, p)
    tol = eps * d12
    i3, a3 = _pick(np.abs(area), valid, tol)
    ok3 = ok2 & (a3 > tol)
    # Orient the triangle counter-clockwise, then the 4th point is the one farthest outside
    # any of its edges (the largest area added to the quad).
    ccw = (area[rows, i3] >= 0)[:, None]
    x2, y2 = x[rows, i2][:, None], y[rows, i2][:, None]
    x3, y3 = x[rows, i3][:, None], y[rows, i3][:, None]
    qx2, qy2 = np.where(ccw, x2, x3), np.where(ccw, y2, y3)
    qx3, qy3 = np.where(ccw, x3, x2), np.where(ccw, y3, y2)
    s1 = (qx2 - x1) * dy - (qy2 - y1) * dx
    s2 = (qx3 - qx2) * (y - qy2) - (qy3 - qy2) * (x - qx2)
    s3 = (x1 - qx3) * (y - qy3) - (y1 - qy3) * (x - qx3)
    outside = -np.minimum(np.minimum(s1, s2), s3)
    i4, a4 = _pick(outside, valid, tol)
    ok4 = ok3 & (a4 > tol)
    return columns(i1, i2, i3, i4), columns(ok1, ok2, ok3, ok4)


def _loop(table, ids, face, plain=None):
    """Patch loops (M, P) of faces (engine.collision.patches: the face's own loop unless it is part of a
    flat side of many faces; rows ``plain`` (M,) bool keep the face's own loop), padding
    replaced by the first vertex, their mask and next index."""
    size = table.patch_sizes[ids, face]
    if plain is not None:
        size = np.where(plain, table.face_sizes[ids, face], size)
    width = int(size.max()) if len(size) else 3
    loop = table.patch_loops[ids, face, :width]
    if plain is not None and plain.any():
        own = table.face_loops[ids, face, :width]
        own = np.pad(own, ((0, 0), (0, width - own.shape[1])), constant_values=-1)
        loop = np.where(plain[:, None], own, loop)
    mask = np.arange(width) < size[:, None]
    loop = np.where(mask, loop, loop[:, :1])
    nxt = (np.arange(width)[None, :] + 1) % size[:, None]
    return loop, mask, nxt


def tangent_basis(n):
    """Unit u, v with (u, v, n) right-handed (Duff et al. 2017, branch-free)."""
    sign = np.where(n[:, 2] >= 0, 1.0, -1.0)
    a = -1.0 / (sign + n[:, 2])
    b = n[:, 0] * n[:, 1] * a
    u = columns(1.0 + sign * n[:, 0] * n[:, 0] * a, sign * b, -sign * n[:, 0])
    v = cross(n, u)
    return u, v


def _outward_2d(x, y, nxt, mask, clockwise):
    """Unit outward edge normals (M, P) and offsets of a padded 2D polygon.

    Padded edges get a zero normal and offset 1, so every point is 1 inside them."""
    rows = np.arange(len(x))[:, None]
    ex, ey = x[rows, nxt] - x, y[rows, nxt] - y
    length = np.sqrt(ex * ex + ey * ey)
    inv = np.where(mask, 1.0 / np.maximum(length, 1e-300), 0.0)
    if clockwise:
        nx, ny = -ey * inv, ex * inv
    else:
        nx, ny = ey * inv, -ex * inv
    off = np.where(mask, nx * x + ny * y, 1.0)
    return nx, ny, off, ex, ey, length


def incident_face(table, inc_ids, rot, n_ref):
    """Incident face: of the faces around the incident shape's deepest point along -n_ref, the
    most anti-parallel to n_ref (Jolt's ConvexHullShape::GetSupportingFace does the same).

    The face most anti-parallel over the whole shape need not hold the deepest point: a rock
    landing on a sharp corner whose neighbouring faces are steep has its flattest face
    elsewhere, and clipping that face reports the contact centimetres above the true depth
    (bench/bench_speed.py rocks125 sank 28 mm into the ground that way). The faces around the
    deepest point include the most anti-parallel one whenever that one holds it (a box, a hull
    resting on a face), so those contacts are unchanged."""
    n_inc_frame = np.matmul(rot.transpose(0, 2, 1), n_ref[:, :, None])[:, :, 0]
    fi = int(table.nfaces[inc_ids].max())
    vi = int(table.npoints[inc_ids].max())
    height = np.matmul(table.points[inc_ids, :vi], n_inc_frame[:, :, None])[:, :, 0]
    deepest = np.argmin(height, axis=1)
    around = table.face_has_point[inc_ids, :fi, deepest]
    facing = np.matmul(table.planes[inc_ids, :fi, :3], n_inc_frame[:, :, None])[:, :, 0]
    return np.argmin(np.where(around, facing, np.inf), axis=1)


def _sunk_vertices(table, inc_ids, inc_face, rot, trans, n_ref, d, n):
    """Incident vertices off the incident face that lie under the reference plane, on the
    incident shape's side facing it (seen along the contact normal n: a face holding the vertex
    faces against n, so the vertex is where the column along n enters the shape).

    Clipping one incident face assumes the contact is shallow, so that nothing outside that
    face has crossed the reference plane. A faceted flat side (a hull of noisy scan points, a
    thin plate of random points) breaks that: it is many sliver faces a hair apart, and the
    corners of one sliver cannot hold the body up. Each sweep tilts it about them instead of
    lifting it, and the tilted plate's vertices under the ground beyond that sliver push
    nothing: fuzz seed 335 sank such a plate 39 mm, and a plate dropped 5 cm flat on the ground
    sank 20-50 mm in 63 of 80 tries. Those vertices are candidates too (inside the reference
    face, reduced with the rest). Returns (M, E) vertex indices and their mask, or None when no
    row has one (shallow contacts: boxes, hulls resting on a face)."""
    vmax = int(table.npoints[inc_ids].max())
    n_inc = np.matmul(rot.transpose(0, 2, 1), n_ref[:, :, None])
    height = np.matmul(table.points[inc_ids, :vmax], n_inc)[:, :, 0]   # along n, incident frame
    under = height < (d - np.einsum("ij,ij->i", n_ref, trans))[:, None]
    under &= ~table.patch_has_point[inc_ids, inc_face, :vmax]
    under &= np.arange(vmax) < table.npoints[inc_ids][:, None]
    if not under.any():
        return None
    fmax = int(table.nfaces[inc_ids].max())
    n_in = np.matmul(rot.transpose(0, 2, 1), n[:, :, None])
    facing = np.matmul(table.planes[inc_ids, :fmax, :3], n_in)[:, :, 0] < 0.0
    under &= (table.face_has_point[inc_ids, :fmax, :vmax] & facing[:, :, None]).any(axis=1)
    if not under.any():
        return None
    order = np.argsort(~under, axis=1, kind="stable")[:, :int(under.sum(axis=1).max())]
    return order, np.take_along_axis(under, order, axis=1)


def face_contact(table, ref_ids, ref_face, inc_ids, rot, trans, margin, flip, inc_face=None,
                 normal=None, tilted=None):
    """Manifold of M face contacts, in the reference shape's frame.

    ref_ids, ref_face: reference shape ids and face; inc_ids: incident shape ids; rot, trans:
    incident pose in the reference frame; margin (scalar or (M,)); flip (M,) bool: reference
    is shape B (only used for the ids). inc_face (M,): incident face (-1 in a row: choose it
    there), by default the face most
    anti-parallel to the reference normal. normal (M, 3): unit contact normal (reference ->
    incident, reference frame), by default the reference face normal; it must make an acute
    angle with the reference normal and an obtuse one with the incident normal; rows where
    ``tilted`` (M,) bool is False use the reference normal whatever ``normal`` holds (one call
    serves SAT face rows and edge-axis rows: collide_polytopes). Returns points
    (M, 4, 3) midway between the surfaces, separation (M, 4) (+inf unused), ids (M, 4), count
    (M,), incident face (M,).

    All the clipping is planar, so it runs in 2D coordinates (x, y) of the plane normal to the
    contact normal n, with heights h along n: both faces are height fields over that plane and
    a point's separation is the gap h_inc - h_ref between them along n. With n the reference
    normal this is the classic face clip (h_ref constant). With n a SAT edge axis a few degrees
    off both faces (see narrowphase.collide_polytopes), the gap along n is never below the SAT
    separation s = min_B n.x - max_A n.x (each face lies inside its shape), and the crossing of
    the two SAT edges, which is a crossing candidate below, attains it: the deepest point
    equals the SAT depth, and the other points carry their own honest gaps along n.
    """
    m = len(ref_ids)
    rows = np.arange(m)
    r2 = rows[:, None]
    scale = np.minimum(table.bound_radius[ref_ids], table.bound_radius[inc_ids])
    snap = SNAP * scale
    tol = INSIDE_TOL * scale
    plane = table.planes[ref_ids, ref_face]
    n_ref, d = plane[:, :3], plane[:, 3]
    if normal is not None and tilted is not None:
        normal = np.where(tilted[:, None], normal, n_ref)
    n = n_ref if normal is None else normal
    u_ax, v_ax = tangent_basis(n)
    basis = np.empty((m, 3, 3))  # rows u, v, n: ref frame -> (x, y, h)
    basis[:, 0], basis[:, 1], basis[:, 2] = u_ax, v_ax, n

    if inc_face is None:
        inc_face = incident_face(table, inc_ids, rot, n_ref)
    elif (inc_face < 0).any():
        inc_face = np.where(inc_face < 0, incident_face(table, inc_ids, rot, n_ref), inc_face)

    # Edge-axis rows (tilted) clip the faces themselves: their heights along a normal off both
    # faces are exact only on planar loops (the SAT depth argument above).
    plain = tilted if tilted is not None or normal is None else np.ones(m, dtype=bool)
    loop_i, mask_i, nxt_i = _loop(table, inc_ids, inc_face, plain)
    loop_r, mask_r, nxt_r = _loop(table, ref_ids, ref_face, plain)
    # Incident vertices in (x, y, h): one product with basis @ rot, plus basis @ trans.
    to_plane = np.matmul(basis, rot)
    vi = np.matmul(table.points[inc_ids[:, None], loop_i], to_plane.transpose(0, 2, 1))
    vi += np.matmul(basis, trans[:, :, None])[:, None, :, 0]
    xi, yi, hi = vi[:, :, 0], vi[:, :, 1], vi[:, :, 2]
    vr = np.matmul(table.points[ref_ids[:, None], loop_r], basis.transpose(0, 2, 1))
    xr, yr, own_r = vr[:, :, 0], vr[:, :, 1], vr[:, :, 2]
    pi, pr = xi.shape[1], xr.shape[1]

    # Reference side lines (CCW about n) and incident edges (CW: the incident loop is CCW about
    # its own normal, which points against n).
    rnx, rny, roff, rex, rey, rlen = _outward_2d(xr, yr, nxt_r, mask_r, clockwise=False)
    inx, iny, ioff, iex, iey, ilen = _outward_2d(xi, yi, nxt_i, mask_i, clockwise=True)
    dist = xi[:, :, None] * rnx[:, None] + yi[:, :, None] * rny[:, None] - roff[:, None]  # (M, Pi, Pr)
    inside_i = (dist.max(axis=2) <= tol[:, None]) & mask_i
    idist = xr[:, :, None] * inx[:, None] + yr[:, :, None] * iny[:, None] - ioff[:, None]  # (M, Pr, Pi)
    inside_r = (idist.max(axis=2) <= tol[:, None]) & mask_r
    # Height of the incident plane above the reference vertices: h = h0 + gx x + gy y, from
    # the incident normal in (x, y, h) coordinates (its h part is < 0 by the choice of face).
    n_inc = np.matmul(to_plane, table.planes[inc_ids, inc_face, :3, None])[:, :, 0]
    nz = np.minimum(n_inc[:, 2], -1e-12)
    gx = -n_inc[:, 0] / nz
    gy = -n_inc[:, 1] / nz
    hr = hi[:, :1] + gx[:, None] * (xr - xi[:, :1]) + gy[:, None] * (yr - yi[:, :1])
    patched = table.patched[inc_ids, inc_face]
    if plain is not None:
        patched &= ~plain
    if patched.any():
        # A patch's first vertex may lie under the face's plane: lift onto the plane itself
        # (it supports the incident shape, so the lift is never above its surface).
        on = table.planes[inc_ids, inc_face, :3] * table.planes[inc_ids, inc_face, 3:]
        v0 = np.matmul(to_plane, on[:, :, None])[:, :, 0] + np.matmul(basis, trans[:, :, None])[:, :, 0]
        hp = v0[:, 2:] + gx[:, None] * (xr - v0[:, :1]) + gy[:, None] * (yr - v0[:, 1:2])
        hr = np.where(patched[:, None], hp, hr)
    # Height of the reference plane over (x, y): constant d when n is the reference normal.
    nr = np.matmul(basis, n_ref[:, :, None])[:, :, 0]
    nrz = np.maximum(nr[:, 2], 1e-12)
    rgx, rgy, rh0 = (-nr[:, 0] / nrz)[:, None], (-nr[:, 1] / nrz)[:, None], (d / nrz)[:, None]

    # Crossings of incident edge k (vertex k -> next) with reference side line r.
    da = dist
    db = dist[r2, nxt_i]
    cross = (da * db < 0) & mask_i[:, :, None]
    t = da / np.where(cross, da - db, 1.0)
    cx = xi[:, :, None] + t * iex[:, :, None]
    cy = yi[:, :, None] + t * iey[:, :, None]
    ch = hi[:, :, None] + t * (hi[r2, nxt_i] - hi)[:, :, None]
    rl2 = np.maximum(rlen * rlen, 1e-300)[:, None]
    w = ((cx - xr[:, None]) * rex[:, None] + (cy - yr[:, None]) * rey[:, None]) / rl2
    wl = rlen[:, None]
    tl = tol[:, None, None]
    cross &= (w * wl >= -tl) & ((1.0 - w) * wl >= -tl)

    # Candidates in a fixed feature order: incident vertices k, reference vertices r,
    # crossings (k, r) row-major. Ties in the reduction go to the first, so the order is part
    # of what keeps picks stable.
    cand_x = np.concatenate((xi, xr, cx.reshape(m, -1)), axis=1)
    cand_y = np.concatenate((yi, yr, cy.reshape(m, -1)), axis=1)
    h_inc = np.concatenate((hi, hr, ch.reshape(m, -1)), axis=1)
    if normal is None:
        h_ref = d[:, None]
    else:
        # Reference vertices use their own heights (exactly on the plane), the others the plane.
        h_ref = np.concatenate((rh0 + rgx * xi + rgy * yi, own_r,
                                rh0 + rgx * cx.reshape(m, -1) + rgy * cy.reshape(m, -1)), axis=1)
        if tilted is not None:
            h_ref = np.where(tilted[:, None], h_ref, d[:, None])
    ok = np.concatenate((inside_i, inside_r, cross.reshape(m, -1)), axis=1)
    base = ok.shape[1]
    sunk = _sunk_vertices(table, inc_ids, inc_face, rot, trans, n_ref, d, n)
    if sunk is not None:
        # Vertices beyond the incident face under the reference plane, inside its face.
        fv, fmask = sunk
        ve = np.matmul(table.points[inc_ids[:, None], fv], to_plane.transpose(0, 2, 1))
        ve += np.matmul(basis, trans[:, :, None])[:, None, :, 0]
        xe, ye = ve[:, :, 0], ve[:, :, 1]
        edist = xe[:, :, None] * rnx[:, None] + ye[:, :, None] * rny[:, None] - roff[:, None]
        cand_x = np.concatenate((cand_x, xe), axis=1)
        cand_y = np.concatenate((cand_y, ye), axis=1)
        h_inc = np.concatenate((h_inc, ve[:, :, 2]), axis=1)
        if h_ref.shape[1] > 1:
            he_ref = rh0 + rgx * xe + rgy * ye
            if tilted is not None:
                he_ref = np.where(tilted[:, None], he_ref, d[:, None])
            h_ref = np.concatenate((h_ref, he_ref), axis=1)
        ok = np.concatenate((ok, fmask & (edist.max(axis=2) <= tol[:, None])), axis=1)
    sep = h_inc - h_ref
    ok &= sep <= np.broadcast_to(margin, (m,))[:, None]
    pick, good = reduce4(cand_x, cand_y, sep, ok, snap)
    px = cand_x[r2, pick]
    py = cand_y[r2, pick]
    psep = sep[r2, pick]
    pref = h_ref[r2, pick] if h_ref.shape[1] > 1 else np.broadcast_to(h_ref, pick.shape)
    code = _feature_codes(np.minimum(pick, base - 1), pi, pr, px, py, xi, yi, mask_i, nxt_i,
                          nxt_r, ilen, t.reshape(m, -1), w.reshape(m, -1), rlen, snap)
    if sunk is not None:
        extra = pick >= base
        vert = fv[r2, np.where(extra, pick - base, 0)]
        code = np.where(extra, (T_HULL_VERTEX << 24) | vert, code)
    # Midway between the surfaces, back to the reference frame.
    mid = columns(px, py, pref + 0.5 * psep)
    points = np.matmul(mid, basis)
    psep = np.where(good, psep, np.inf)
    ids = _unique_ids(_face_ids(flip[:, None], ref_face[:, None], inc_face[:, None], code), good)
    return points, psep, ids, good.sum(axis=1), inc_face


def _feature_codes(pick, pi, pr, px, py, xi, yi, mask_i, nxt_i, nxt_r, ilen, t, w, rlen, snap):
    """Feature codes of the picked candidates, snapped to vertices closer than snap.

    A crossing near an incident vertex takes that vertex's code, else near a reference vertex
    that one's; a reference vertex on an incident vertex takes the incident vertex's code. So
    one physical corner keeps one id whichever candidate represents it this step."""
    rows = np.arange(len(pick))[:, None]
    is_inc = pick < pi
    is_ref = ~is_inc & (pick < pi + pr)
    j = np.maximum(pick - pi - pr, 0)          # crossing index (k, r) = divmod(j, pr)
    k = np.where(is_inc, pick, j // pr)
    r = np.where(is_ref, pick - pi, j % pr)
    sn = snap[:, None]
    # Crossings: distance along the incident edge to its ends, along the reference edge to its.
    tk = t[rows, j]
    wk = w[rows, j]
    il = ilen[rows, k]
    rl = rlen[rows, r]
    near_k0 = tk * il < sn
    near_k1 = ~near_k0 & ((1.0 - tk) * il < sn)
    near_r0 = wk * rl < sn
    near_r1 = ~near_r0 & ((1.0 - wk) * rl < sn)
    kx = np.where(near_k1, nxt_i[rows, k], k)
    rx = np.where(near_r1, nxt_r[rows, r], r)
    x_code = np.where(near_k0 | near_k1, (T_INC_VERTEX << 24) | (kx << 12),
                      np.where(near_r0 | near_r1, (T_REF_VERTEX << 24) | rx,
                               (T_CROSSING << 24) | (k << 12) | r))
    # Reference vertices: the nearest incident vertex, if it is within snap.
    gx = px[:, :, None] - xi[:, None]
    gy = py[:, :, None] - yi[:, None]
    gap2 = np.where(mask_i[:, None, :], gx * gx + gy * gy, np.inf)   # (M, 4, Pi)
    near_i = np.argmin(gap2, axis=2)
    snapped = gap2[rows, np.arange(gap2.shape[1]), near_i] < sn * sn
    r_code = np.where(snapped, (T_INC_VERTEX << 24) | (near_i << 12), (T_REF_VERTEX << 24) | r)
    return np.where(is_inc, (T_INC_VERTEX << 24) | (k << 12),
                    np.where(is_ref, r_code, x_code)).astype(np.int64)


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


# Edge axes between nearly parallel faces get a clipped face manifold (see edge_face_contact)
# when the better aligned of the two edges' faces is within EDGE_CLIP_DEG of the axis, and the
# other face within EDGE_INC_DEG (so it is a well-conditioned height field along the axis).
# Every clipped point has its true gap along the axis, so any threshold is safe; it only
# decides where a lone edge point is enough. Beams tipping across each other meet edge axes
# a few degrees off their faces: a threshold of 3-5 deg still let a beam end sink several cm,
# while 10 deg and anything up to 89 deg (Jolt clips whenever both faces exist) behaved the
# same on a beam tower and on crossed-beam drops. Above 10 deg the contact is
# mostly a ridge crossing whose clipped points only cluster near the crossing: one point.
EDGE_CLIP_DEG = 10.0
EDGE_INC_DEG = 75.0
EDGE_CLIP_COS = float(detmath.cos(np.radians(EDGE_CLIP_DEG)))
EDGE_INC_COS = float(detmath.cos(np.radians(EDGE_INC_DEG)))



def edge_face_contact(table, ids_a, edge_a, ids_b, edge_b, rot, trans, axis, margin):
    """Multi-point manifolds for SAT edge-edge axes between nearly parallel faces (A's frame).

    Two crossed beams a degree or two apart touch along a strip, yet the SAT may pick the axis
    of two crossing edges (its value beats the faces' by more than the face bias): one point
    there lets the far end sink. As Jolt (ManifoldBetweenTwoFaces) and Bullet
    (clipFaceAgainstHull) do, the faces that support each shape along the axis are clipped
    against each other. The candidate faces are the two beside each SAT edge: the axis lies on
    the edge's Gauss-map arc, so the better aligned one is the supporting face whenever it is
    close to the axis, and the edges are sides of the faces, so the crossing of the two edges
    (the SAT witness) is a clipping candidate and the deepest point equals the SAT depth. The
    reference is the better aligned face (A's or B's); the contact normal stays the SAT axis
    and separations are gaps along it (face_contact with ``normal``).

    axis (M, 3): unit SAT axis A -> B in A's frame; rot, trans: B's pose in A's frame.
    Returns (use (M,) bool: rows that qualify for clipping, and for those rows only: points
    (K, 4, 3) in A's frame, separation (K, 4), ids (K, 4), count (K,)).
    """
    use, args = edge_face_setup(table, ids_a, edge_a, ids_b, edge_b, rot, trans, axis, margin)
    if not use.any():
        return use, np.zeros((0, 4, 3)), np.zeros((0, 4)), np.zeros((0, 4), np.int64), np.zeros(0, np.int64)
    pts, sep, ids, cnt, _ = face_contact(table, *args)
    return use, edge_face_points(pts, rot[use], trans[use], args[6]), sep, ids, cnt


def edge_face_setup(table, ids_a, edge_a, ids_b, edge_b, rot, trans, axis, margin):
    """edge_face_contact's choice of faces: (use (M,) bool, the face_contact arguments of the
    rows that use the clip: ref_ids, ref_face, inc_ids, rot, trans, margin, flip, inc_face,
    normal), so collide_polytopes can clip them in one call with its face rows."""
    m = len(ids_a)
    rows = np.arange(m)
    ef = table.edge_faces
    fa2 = ef[ids_a, edge_a]                                           # (M, 2)
    fb2 = ef[ids_b, edge_b]
    na = table.planes[ids_a[:, None], fa2, :3]                        # (M, 2, 3) A's frame
    nb = np.matmul(table.planes[ids_b[:, None], fb2, :3], rot.transpose(0, 2, 1))
    ca = _dot(na, axis[:, None])
    cb = -_dot(nb, axis[:, None])
    ja, jb = np.argmax(ca, axis=1), np.argmax(cb, axis=1)
    ca, cb = ca[rows, ja], cb[rows, jb]
    face_a, face_b = fa2[rows, ja], fb2[rows, jb]
    use = (np.maximum(ca, cb) >= EDGE_CLIP_COS) & (np.minimum(ca, cb) >= EDGE_INC_COS)
    sel = np.nonzero(use)[0]
    # Reference: the better aligned face; ties go to A (as the face bias of the SAT does).
    flip = cb[sel] > ca[sel]
    fl = flip[:, None]
    r, t = rot[sel], trans[sel]
    rt = r.transpose(0, 2, 1)
    t_inv = -np.matmul(rt, t[:, :, None])[:, :, 0]
    ia, ib = ids_a[sel], ids_b[sel]
    n_loc = axis[sel]
    # From the reference to the incident shape: +axis in A's frame, -axis in B's.
    n_ref = np.where(fl, -np.matmul(rt, n_loc[:, :, None])[:, :, 0], n_loc)
    args = (np.where(flip, ib, ia), np.where(flip, face_b[sel], face_a[sel]),
            np.where(flip, ia, ib), np.where(fl[:, :, None], rt, r), np.where(fl, t_inv, t),
            np.broadcast_to(margin, (m,))[sel], flip,
            np.where(flip, face_a[sel], face_b[sel]), n_ref)
    return use, args


def edge_face_points(pts, rot, trans, flip):
    """Clip points of edge_face_setup rows (in their reference frame: B's where flip) back to
    A's frame; rot, trans: B's pose in A's frame for those rows."""
    pts_a = np.matmul(pts, rot.transpose(0, 2, 1)) + trans[:, None]
    return np.where(flip[:, None, None], pts_a, pts)


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
