"""Contacts and distances of pairs with a cylinder or a cone, as compiled kernels.

engine/collision/curved_contacts.py explains the method (GJK/EPA on analytic supports for the
normal and distance, then the supporting features along it: a face clips the other feature,
two near-parallel lines give the ends of their overlap, anything else one point at the
witnesses) and the feature ids; these kernels run it one pair at a time:

- ``curved_pair``: one shape pair (posed in A's frame) into a Manifolds row in world
  coordinates (convex_pairs.shape_rows runs it for every pair with a cylinder or cone);
- ``curved_triangle_rows``: a cylinder/cone (its own frame) against one-sided mesh triangles
  (mesh_contacts' curved route), a normal from an inactive edge or vertex replaced by the
  triangle's face normal;
- ``curved_distance_rows``: the exact signed distance alone (queries.pair_distance).

A *side* of a pair is a table shape (kind, id) posed by rot (local -> pair frame) and off, or
a triangle (kind TRIANGLE, its 3 points and face normal in the pair frame). The table is the
tuple ``curved_table`` names. Feature polygons are padded to ``width`` points (every table's
widest cap or flat side), as the clip candidates' layout (mesh_kernels.clip_row) and so the
ids' codes depend on it.
"""
import math

import numpy as np

from ..core import detmath
from ..core.jit import kernel
from ..core.vec_kernels import dot, pose_into, unpose_into
from ..shapes.curved import CAP_DIRS, local_support_row, radial_unit
from .clip_kernels import SNAP, reduce4_row
from .gjk_kernels import (
    epa_pair,
    epa_scratch,
    gjk_pair,
    gjk_scratch,
    support,
)
from .mesh_kernels import _feature_active_row, clip_row

# engine.core.kinds.ShapeKind (the kernels compare plain ints)
POLYTOPE, SPHERE, CAPSULE, CYLINDER, CONE = 0, 1, 2, 5, 6
TRIANGLE = 99                           # a side that is a mesh triangle (explicit points)
ID_CURVED = 5
# mesh_contacts.ROUTE_INC / _REF / _CROSS (the clip candidates' kinds), and the two routes of
# this module.
ROUTE_INC, ROUTE_REF, ROUTE_CROSS = 1, 2, 3
ROUTE_POINT, ROUTE_SEGMENT = 8, 9
# Feature codes (10 bits): curved 1 top cap, 2 bottom cap / base, 3 side line, 4 point;
# point sets 5 edge, 6 vertex, 7 sphere/capsule point, 8 capsule line, 16 + f polytope face f.
F_TOP, F_BOTTOM, F_SIDE, F_POINT, F_EDGE, F_VERTEX, F_ROUND, F_LINE, F_FACE = (
    1, 2, 3, 4, 5, 6, 7, 8, 16)
AXIS_ROUND = 3
# Features within FLAT_DEG of the normal are offered as faces / lines. Every point keeps its
# true gap, so this only decides how many points a tilted shape gets; 2 deg lets a coin that
# lands a little tilted settle on its rim points (the far rim of a 10 cm cap is then at most
# 3.5 mm up, within the speculative margin) and a rolling side keep its line under GJK/EPA's
# normal noise (~1e-3 rad for two curved shapes, see CONTACT_EPA_TOL).
FLAT_DEG = 2.0
COS_FLAT = float(detmath.cos(np.radians(FLAT_DEG)))
SIN_FLAT = float(detmath.sin(np.radians(FLAT_DEG)))
# GJK converges only linearly on a curved surface; 1e-9 of the pair's size keeps separated
# distances within 1e-8 m of the brute-force oracle (test_signed_distance_matches_brute_force,
# measured 1.3e-9 m by bench/bench_cylinder_cone.py) in about 30 iterations.
GJK_TOL = 1e-9
GJK_ITERATIONS = 64
# EPA refines a curved Minkowski difference towards a tolerance (relative to the pair's size).
# Queries (distance) ask for 1e-7; contacts need less: a face feature then sets the normal and
# every separation exactly, and elsewhere 1e-5 of the size is a few hundredths of a millimetre.
# Two curved shapes (no face to snap to: side on side, rim on rim) keep the fine tolerance.
# Measured: 30 steps of bench/bench_cylinder_cone.py's 200 falling cylinders and cones took
# 7.9 s with the fine EPA everywhere, 4.8 s with this split (shared 2-core machine, numpy).
EPA_TOL, EPA_VERTICES = 1e-7, 96
CONTACT_EPA_TOL, CONTACT_EPA_VERTICES = 1e-5, 40


def curved_table(table):
    """The ShapeTable arrays the kernels read, in the order ``_unpack`` names them."""
    t = table
    return (t.points, t.npoints, t.kind.astype(np.int64), t.radius, t.bound_radius,
            t.curved_radius, t.half_height, t.nfaces, t.planes, t.patch_sizes, t.patch_loops)


@kernel
def _is_curved(kind):
    if kind == CYLINDER:
        return True
    return kind == CONE


@kernel
def side_core(tab, kind, s, rot, off, tri, pts):
    """GJK's core of a side (gjk_kernels' tuple): a triangle's points, a cylinder/cone's
    analytic support, or a table shape's points posed into pts."""
    points, npoints, crad, hh = tab[0], tab[1], tab[5], tab[6]
    if kind == TRIANGLE:
        for j in range(3):
            for k in range(3):
                pts[j, k] = tri[j, k]
        return (pts, np.int64(3), np.int64(0), 0.0, 0.0, rot, off)
    if _is_curved(kind):
        return (pts, np.int64(0), np.int64(kind), crad[s], hh[s], rot, off)
    n = npoints[s]
    for j in range(n):
        pose_into(rot, points[s, j], off, pts[j])
    return (pts, np.int64(n), np.int64(0), 0.0, 0.0, rot, off)


@kernel
def signed_distance(ca, cb, swell_a, swell_b, scale, coarse, d0, n, wa, wb, g, e):
    """GJK (EPA where the cores overlap) on one pair of cores in one frame. Returns (signed
    distance, core overlap); the unit normal A -> B into n, the surface witnesses into wa, wb.
    coarse: EPA may stop at CONTACT_EPA_TOL (see the constants). g: GJK's arrays and scratch,
    e: EPA's (epa_arrays)."""
    S, SA, SB, used, lam, v, gs = g
    S2, SA2, SB2, V, VA, VB, F, alive, N, Dst, ea, eb, es = e
    vv, _, overlap = gjk_pair(ca, cb, scale, d0, GJK_TOL, GJK_ITERATIONS, False, 0.0, S, SA, SB,
                              used, lam, v, gs)
    core = 0.0
    for k in range(3):
        wa[k] = lam[0] * SA[0, k] + lam[1] * SA[1, k] + lam[2] * SA[2, k] + lam[3] * SA[3, k]
        wb[k] = lam[0] * SB[0, k] + lam[1] * SB[1, k] + lam[2] * SB[2, k] + lam[3] * SB[3, k]
    if not overlap:
        core = math.sqrt(vv)
        for k in range(3):
            n[k] = v[k] / core
    else:
        size = 0
        for j in range(4):
            if used[j]:
                for k in range(3):
                    S2[size, k] = S[j, k]
                    SA2[size, k] = SA[j, k]
                    SB2[size, k] = SB[j, k]
                size += 1
        tol = CONTACT_EPA_TOL if coarse else EPA_TOL
        nvc = CONTACT_EPA_VERTICES if coarse else EPA_VERTICES
        depth, touch, _, _, _ = epa_pair(ca, cb, scale, S2, SA2, SB2, size, tol, V[:nvc],
                                         VA[:nvc], VB[:nvc], F[:2 * nvc], alive[:2 * nvc],
                                         N[:2 * nvc], Dst[:2 * nvc], n, ea, eb, es)
        core = -depth
        if not touch:
            for k in range(3):
                wa[k] = ea[k]
                wb[k] = eb[k]
    if not (math.isfinite(n[0]) and math.isfinite(n[1]) and math.isfinite(n[2])) \
            or dot(n, n) < 0.5:
        n[0] = 0.0
        n[1] = 0.0
        n[2] = 1.0
    for k in range(3):
        wa[k] = wa[k] + swell_a * n[k]
        wb[k] = wb[k] - swell_b * n[k]
    return (core - swell_a) - swell_b, overlap


@kernel
def gjk_arrays():
    """GJK's state and scratch for signed_distance."""
    return (np.empty((4, 3)), np.empty((4, 3)), np.empty((4, 3)), np.empty(4, np.bool_),
            np.empty(4), np.empty(3), gjk_scratch())


@kernel
def epa_arrays():
    """EPA's polytope and scratch for signed_distance (room for the fine EPA's vertices)."""
    nvc = EPA_VERTICES
    return (np.empty((4, 3)), np.empty((4, 3)), np.empty((4, 3)), np.empty((nvc, 3)),
            np.empty((nvc, 3)), np.empty((nvc, 3)), np.empty((2 * nvc, 3), np.int64),
            np.empty(2 * nvc, np.bool_), np.empty((2 * nvc, 3)), np.empty(2 * nvc), np.empty(3),
            np.empty(3), epa_scratch(nvc))


# ----------------------------------------------------------------------------- features
@kernel
def _points_feature(P, n, d, fpts):
    """Feature of a point set P (n, 3) along d: the top two points as a segment when level
    (within FLAT_DEG), else the top point. Returns (point count, dim)."""
    i1 = 0
    h1 = -np.inf
    for j in range(n):
        h = dot(P[j], d)
        if h > h1 or j == 0:
            h1 = h
            i1 = j
    i2 = -1
    h2 = -np.inf
    for j in range(n):
        if P[j, 0] == P[i1, 0] and P[j, 1] == P[i1, 1] and P[j, 2] == P[i1, 2]:
            continue          # copies of the top point (a sphere's core, padding)
        h = dot(P[j], d)
        if h > h2 or i2 < 0:
            h2 = h
            i2 = j
    level = False
    if i2 >= 0 and math.isfinite(h2):
        e = math.sqrt((P[i2, 0] - P[i1, 0]) ** 2 + (P[i2, 1] - P[i1, 1]) ** 2
                      + (P[i2, 2] - P[i1, 2]) ** 2)
        level = h1 - h2 <= SIN_FLAT * e
    for k in range(3):
        fpts[0, k] = P[i1, k]
        fpts[1, k] = P[i2, k] if level else P[i1, k]
    return (2, 1) if level else (1, 0)


@kernel
def _curved_feature(tab, kind, s, rot, off, d, fpts, fnormal, tmp):
    """Cap, side line or point of a cylinder/cone along d (pair frame). Returns (point count,
    dim, code)."""
    crad, hh_ = tab[5], tab[6]
    rad = crad[s]
    hh = hh_[s]
    l0 = d[0] * rot[0, 0] + d[1] * rot[1, 0] + d[2] * rot[2, 0]     # rot^T d
    l1 = d[0] * rot[0, 1] + d[1] * rot[1, 1] + d[2] * rot[2, 1]
    dz = d[0] * rot[0, 2] + d[1] * rot[1, 2] + d[2] * rot[2, 2]
    lxy, ux, uy = radial_unit(l0, l1)
    cone = kind == CONE
    top = not cone and dz >= COS_FLAT
    bottom = -dz >= COS_FLAT
    p = tmp[0:3]
    if top or bottom:
        z = hh if top else -hh
        for j in range(CAP_DIRS.shape[0]):
            p[0] = CAP_DIRS[j, 0] * rad
            p[1] = CAP_DIRS[j, 1] * rad
            p[2] = CAP_DIRS[j, 2] * rad + z
            pose_into(rot, p, off, fpts[j])
        sg = 1.0 if top else -1.0
        for k in range(3):
            fnormal[k] = sg * rot[k, 2]
        return CAP_DIRS.shape[0], 2, F_TOP if top else F_BOTTOM
    h2 = 2.0 * hh
    if cone:
        side = (h2 * lxy + rad * dz) / math.sqrt(h2 * h2 + rad * rad) >= COS_FLAT
    else:
        side = abs(dz) <= SIN_FLAT
    if side:
        p[0] = rad * ux
        p[1] = rad * uy
        p[2] = -hh
        pose_into(rot, p, off, fpts[0])
        if cone:
            p[0] = 0.0
            p[1] = 0.0
        p[2] = hh
        pose_into(rot, p, off, fpts[1])
        return 2, 1, F_SIDE
    local_support_row(kind, rad, hh, l0, l1, dz, p)
    pose_into(rot, p, off, fpts[0])
    for k in range(3):
        fpts[1, k] = fpts[0, k]
    return 1, 0, F_POINT


@kernel
def feature(tab, kind, s, rot, off, swell, tri, tn, d, pts, fpts, fnormal, tmp, core):
    """The supporting feature of a side along d (unit, pair frame, from the shape towards the
    other one): fpts (its points), fnormal (a face's outward normal). pts: the side's points
    as side_core posed them. Returns (point count, dim 0 point / 1 segment / 2 face, code)."""
    points, planes, patch_sizes, patch_loops, nfaces = tab[0], tab[8], tab[9], tab[10], tab[7]
    if kind == TRIANGLE:
        if dot(tn, d) >= COS_FLAT:
            for j in range(3):
                for k in range(3):
                    fpts[j, k] = tri[j, k]
                fnormal[j] = tn[j]
            return 3, 2, F_FACE
        c, dim = _points_feature(tri, 3, d, fpts)
        return c, dim, F_EDGE if dim else F_VERTEX
    if _is_curved(kind):
        return _curved_feature(tab, kind, s, rot, off, d, fpts, fnormal, tmp)
    if kind == POLYTOPE:
        best = -np.inf
        f = 0
        nrm = tmp[0:3]
        for g in range(nfaces[s]):
            for k in range(3):
                nrm[k] = rot[k, 0] * planes[s, g, 0] + rot[k, 1] * planes[s, g, 1] \
                    + rot[k, 2] * planes[s, g, 2]
            al = dot(nrm, d)
            if al > best:
                best = al
                f = g
                for k in range(3):
                    fnormal[k] = nrm[k]
        if best >= COS_FLAT:
            size = patch_sizes[s, f]
            for j in range(size):
                pose_into(rot, points[s, patch_loops[s, f, j]], off, fpts[j])
            return size, 2, F_FACE + f
        c, dim = _points_feature(pts, tab[1][s], d, fpts)
        return c, dim, F_EDGE if dim else F_VERTEX
    # Sphere / capsule: the core (swollen by its radius along d), into core (2, 3).
    for j in range(2):
        pose_into(rot, points[s, min(j, points.shape[1] - 1)], off, core[j])
        for k in range(3):
            core[j, k] = core[j, k] + swell * d[k]
    c, dim = _points_feature(core, 2, d, fpts)
    return c, dim, F_LINE if kind == CAPSULE and dim == 1 else F_ROUND


@kernel(inline="always")
def _ids(fa, fb, ref_b, route, code):
    return ((np.int64(ID_CURVED) << 59) | ((np.int64(fa) & 0x3FF) << 48)
            | ((np.int64(fb) & 0x3FF) << 38) | (np.int64(ref_b) << 37)
            | (np.int64(route) << 12) | (np.int64(code) & 0xFFF))


@kernel
def manifold_scratch(width):
    """Feature and clip scratch of manifold for feature polygons of width points (the last:
    mesh_kernels.clip_row's)."""
    c = 2 * width + width * width
    return (np.empty((width, 3)), np.empty((width, 3)), np.empty(3), np.empty(3), np.empty(64),
            np.empty(c), np.empty(c), np.empty(c), np.empty(c, np.bool_), np.empty((3, 3)),
            np.empty(4, np.int64), np.empty(4, np.bool_), np.empty(c), np.empty((2, 3)),
            np.empty((11, width)))


@kernel
def manifold(tab, sa, sb, margin, scale, force, dist, normal, wa, wb, pts_a, pts_b, width,
             points, sep, ids, ms):
    """Contact points of one pair (pair frame) from its signed distance dist, normal and
    witnesses wa, wb (signed_distance). sa, sb: the sides (kind, id, rot, off, swell, tri,
    tri normal); force: B's feature is its triangle face along its normal (normal already
    set to -tri normal). Fills points (4, 3), sep (4,), ids (4,) and normal; returns (count,
    distance)."""
    fpa, fpb, fna, fnb, tmp, x, y, z, valid, frame, idx, ok, score, pair2, cs = ms
    nl = tmp[40:43]
    for k in range(3):
        nl[k] = normal[k]
    eps = SNAP * scale
    if not (dist <= margin or force):
        return 0, dist
    ca, dima, code_a = feature(tab, sa[0], sa[1], sa[2], sa[3], sa[4], sa[5], sa[6], nl,
                               pts_a, fpa, fna, tmp, pair2)
    for k in range(3):
        tmp[43 + k] = -nl[k]
    cb, dimb, code_b = feature(tab, sb[0], sb[1], sb[2], sb[3], sb[4], sb[5], sb[6],
                               tmp[43:46], pts_b, fpb, fnb, tmp, pair2)
    if force:
        tri, tn = sb[5], sb[6]
        for j in range(3):
            for k in range(3):
                fpb[j, k] = tri[j, k]
            fnb[j] = tn[j]
        cb, dimb, code_b = 3, 2, F_FACE
    # ---- a face involved: clip the other feature to it.
    if dima == 2 or dimb == 2:
        ref_b = dimb == 2 and (dima < 2 or -dot(fnb, nl) > dot(fna, nl))
        ref, nr_, inc, nk = (fpb, cb, fpa, ca) if ref_b else (fpa, ca, fpb, cb)
        nref = fnb if ref_b else fna
        inc_dim = dima if ref_b else dimb
        inc_n = tmp[46:49]
        for k in range(3):
            inc_n[k] = (fna[k] if ref_b else fnb[k]) if inc_dim == 2 else 0.0
        clip_row(ref, nr_, inc, nk, nref, inc_n, margin, eps, width, width, x, y, z, valid,
                 frame, cs)
        nc = 2 * width + width * width
        reduce4_row(x, y, z, valid, nc, eps, idx, ok, score)
        count = 0
        for j in range(4):
            if ok[j]:
                c = idx[j]
                for k in range(3):
                    points[count, k] = ((frame[0, k] + x[c] * frame[1, k]) + y[c] * frame[2, k]) \
                        + (0.5 * z[c]) * nref[k]
                sep[count] = z[c]
                if c < width:
                    route, code = ROUTE_INC, c
                elif c < 2 * width:
                    route, code = ROUTE_REF, c - width
                else:
                    q = c - 2 * width
                    route, code = ROUTE_CROSS, (q // width) * 64 + q % width
                ids[count] = _ids(code_a, code_b, ref_b, route, code)
                count += 1
        if count:
            lowest = np.inf
            for c in range(nc):
                if valid[c] and z[c] < lowest:
                    lowest = z[c]
            for k in range(3):
                normal[k] = -nref[k] if ref_b else nref[k]
            return count, lowest
    # ---- two near-parallel segments: the two ends of their overlap.
    if dima == 1 and dimb == 1:
        da = tmp[0:3]
        db = tmp[3:6]
        for k in range(3):
            da[k] = fpa[1, k] - fpa[0, k]
            db[k] = fpb[1, k] - fpb[0, k]
        cx = da[1] * db[2] - da[2] * db[1]
        cy = da[2] * db[0] - da[0] * db[2]
        cz = da[0] * db[1] - da[1] * db[0]
        la = dot(da, da)
        lb = dot(db, db)
        if cx * cx + cy * cy + cz * cz <= SIN_FLAT ** 2 * la * lb and la > 0 and lb > 0:
            t0 = ((fpb[0, 0] - fpa[0, 0]) * da[0] + (fpb[0, 1] - fpa[0, 1]) * da[1]
                  + (fpb[0, 2] - fpa[0, 2]) * da[2]) / la
            t1 = ((fpb[1, 0] - fpa[0, 0]) * da[0] + (fpb[1, 1] - fpa[0, 1]) * da[1]
                  + (fpb[1, 2] - fpa[0, 2]) * da[2]) / la
            lo = min(max(min(t0, t1), 0.0), 1.0)
            hi = min(max(max(t0, t1), 0.0), 1.0)
            two = (hi - lo) * math.sqrt(la) > eps
            pp = pair2
            p = tmp[12:15]
            q = tmp[15:18]
            ss0 = 0.0
            ss1 = 0.0
            for end in range(2):
                tt = lo if end == 0 else hi
                for k in range(3):
                    p[k] = fpa[0, k] + tt * da[k]
                w = ((p[0] - fpb[0, 0]) * db[0] + (p[1] - fpb[0, 1]) * db[1]
                     + (p[2] - fpb[0, 2]) * db[2]) / lb
                w = min(max(w, 0.0), 1.0)
                for k in range(3):
                    q[k] = fpb[0, k] + w * db[k]
                h = (q[0] - p[0]) * nl[0] + (q[1] - p[1]) * nl[1] + (q[2] - p[2]) * nl[2]
                for k in range(3):
                    pp[end, k] = p[k] + 0.5 * h * nl[k]
                if end == 0:
                    ss0 = h
                else:
                    ss1 = h
            k0 = ss0 <= margin
            k1 = two and ss1 <= margin
            if two and (k0 or k1):
                first = 0 if k0 else 1
                for k in range(3):
                    points[0, k] = pp[first, k]
                sep[0] = ss0 if k0 else ss1
                base = _ids(code_a, code_b, 0, ROUTE_SEGMENT, 0)
                ids[0] = base | first
                if k0 and k1:
                    for k in range(3):
                        points[1, k] = pp[1, k]
                    sep[1] = ss1
                    ids[1] = base | 1
                    return 2, dist
                return 1, dist
    # ---- anything else: one point at the witnesses (the exact closest/deepest pair).
    s_ = dist
    for k in range(3):
        points[0, k] = 0.5 * (wa[k] + wb[k])
    if force:
        # Forced triangle face: the shape's deepest point below the triangle's plane.
        sup = tmp[0:3]
        core = side_core(tab, sa[0], sa[1], sa[2], sa[3], sa[5], pts_a)
        support(core, 1.0, normal, sup)
        for k in range(3):
            sup[k] = sup[k] + sa[4] * normal[k]
        tri, tn = sb[5], sb[6]
        h = (tn[0] * (sup[0] - tri[0, 0]) + tn[1] * (sup[1] - tri[0, 1])) \
            + tn[2] * (sup[2] - tri[0, 2])
        s_ = h
        for k in range(3):
            points[0, k] = sup[k] - 0.5 * h * tn[k]
    if s_ <= margin:
        sep[0] = s_
        ids[0] = _ids(code_a, code_b, 0, ROUTE_POINT, 0)
        return 1, s_
    return 0, s_



# ------------------------------------------------------------------------------- rows
@kernel
def distance_scratch(tab):
    """The row loops' signed_distance arrays: core points of both sides (room for the largest
    shape), identity pose, normal and witnesses, GJK and EPA state."""
    vmax = max(tab[0].shape[1], 3)
    return (np.empty((vmax, 3)), np.empty((vmax, 3)), np.eye(3), np.zeros(3), np.empty(3),
            np.empty(3), np.empty(3), gjk_arrays(), epa_arrays())


@kernel
def contact_scratch(width):
    """The row loops' manifold arrays: up to 4 points, separations, ids, manifold's scratch."""
    return np.empty((4, 3)), np.empty(4), np.empty(4, np.int64), manifold_scratch(width)


@kernel
def _relative_pose(rot_a, pos_a, rot_b, pos_b, rel_rot, rel):
    """B's pose in A's frame: rot_a^T rot_b and rot_a^T (pos_b - pos_a)."""
    for r in range(3):
        for c in range(3):
            rel_rot[r, c] = (rot_a[0, r] * rot_b[0, c] + rot_a[1, r] * rot_b[1, c]
                             + rot_a[2, r] * rot_b[2, c])
    unpose_into(rot_a, pos_b, pos_a, rel)


@kernel
def pair_scratch(tab, width):
    """curved_pair's arrays (distance_scratch, no triangle, B's relative pose,
    contact_scratch), allocated once per batch by its caller."""
    return (distance_scratch(tab), np.zeros((3, 3)), np.empty((3, 3)), np.empty(3),
            contact_scratch(width))


@kernel
def curved_pair(tab, a, b, rot_a, pos_a, rot_b, pos_b, margin, width, i, normal, points,
                separation, ids, count, axis_kind, distance, sc):
    """One pair with a cylinder or cone (convex_pairs' curved route): Manifolds row i
    (world), computed in A's frame (precision far from the world origin). sc: pair_scratch."""
    kind, radius, bound = tab[2], tab[3], tab[4]
    ds, no_tri, rel_rot, rel, cs = sc
    pts_a, pts_b, eye, zero, n, wa, wb, g, e = ds
    p, sp, pid, ms = cs
    _relative_pose(rot_a, pos_a, rot_b, pos_b, rel_rot, rel)
    sa = (np.int64(kind[a]), a, eye, zero, radius[a], no_tri, zero)
    sb = (np.int64(kind[b]), b, rel_rot, rel, radius[b], no_tri, zero)
    ca = side_core(tab, sa[0], a, eye, zero, no_tri, pts_a)
    cb = side_core(tab, sb[0], b, rel_rot, rel, no_tri, pts_b)
    scale = max(bound[a], bound[b])
    # Coarse EPA where a face can set the normal: not two curved shapes.
    coarse = not (_is_curved(sa[0]) and _is_curved(sb[0]))
    dist, _ = signed_distance(ca, cb, radius[a], radius[b], scale, coarse, rel, n, wa, wb, g, e)
    c, dist = manifold(tab, sa, sb, margin, scale, False, dist, n, wa, wb, pts_a, pts_b, width,
                       p, sp, pid, ms)
    pose_into(rot_a, n, zero, normal[i])
    for j in range(c):
        pose_into(rot_a, p[j], pos_a, points[i, j])
        separation[i, j] = sp[j]
        ids[i, j] = pid[j]
    count[i] = c
    distance[i] = dist
    axis_kind[i] = AXIS_ROUND


@kernel
def curved_triangle_rows(tab, ids, tri, tri_n, active, margin, width, normal, points,
                         separation, cid, count, distance):
    """Cylinders/cones (their own frame) against one-sided triangles tri (M, 3, 3) facing
    them with normal tri_n (M, 3); active (M, 3) the triangle edges that may give a normal.
    A normal from an inactive edge or vertex (a flat or concave shared edge) is replaced by
    the face normal, as for the other shapes. cid: the curved ids (mesh_contacts remaps
    them)."""
    kind, bound = tab[2], tab[4]
    pts_a, pts_b, eye, zero, n, wa, wb, g, e = distance_scratch(tab)
    p, sp, pid, ms = contact_scratch(width)
    for i in range(len(ids)):
        s = ids[i]
        t = tri[i]
        tn = tri_n[i]
        sa = (np.int64(kind[s]), s, eye, zero, 0.0, t, tn)
        sb = (np.int64(TRIANGLE), s, eye, zero, 0.0, t, tn)
        ca = side_core(tab, sa[0], s, eye, zero, t, pts_a)
        cb = side_core(tab, sb[0], s, eye, zero, t, pts_b)
        scale = bound[s]
        dist, _ = signed_distance(ca, cb, 0.0, 0.0, scale, True, zero, n, wa, wb, g, e)
        face = -dot(n, tn) >= COS_FLAT
        force = not face and not _feature_active_row(t, n, active[i], SNAP * scale)
        if force:
            for k in range(3):
                n[k] = -tn[k]
        # The clip's tolerance: the larger of the shape and the triangle (about its centroid).
        r2 = 0.0
        for j in range(3):
            q = 0.0
            for k in range(3):
                dk = t[j, k] - ((t[0, k] + t[1, k]) + t[2, k]) / 3.0
                q += dk * dk
            r2 = max(r2, q)
        c, dist = manifold(tab, sa, sb, margin[i], max(scale, math.sqrt(r2)), force, dist, n,
                           wa, wb, pts_a, pts_b, width, p, sp, pid, ms)
        for k in range(3):
            normal[i, k] = n[k]
        for j in range(c):
            for k in range(3):
                points[i, j, k] = p[j, k]
            separation[i, j] = sp[j]
            cid[i, j] = pid[j]
        count[i] = c
        distance[i] = dist


@kernel
def curved_distance_rows(tab, ids_a, pos_a, rot_a, ids_b, pos_b, rot_b, distance, normal,
                         point_a, point_b, overlap):
    """Exact signed distance of M pairs (either shape may be curved), world answers
    (queries.pair_distance)."""
    kind, radius, bound = tab[2], tab[3], tab[4]
    pts_a, pts_b, eye, zero, n, wa, wb, g, e = distance_scratch(tab)
    no_tri = np.zeros((3, 3))
    rel_rot = np.empty((3, 3))
    rel = np.empty(3)
    for i in range(len(ids_a)):
        a = ids_a[i]
        b = ids_b[i]
        _relative_pose(rot_a[i], pos_a[i], rot_b[i], pos_b[i], rel_rot, rel)
        ca = side_core(tab, np.int64(kind[a]), a, eye, zero, no_tri, pts_a)
        cb = side_core(tab, np.int64(kind[b]), b, rel_rot, rel, no_tri, pts_b)
        scale = max(bound[a], bound[b])
        d, ov = signed_distance(ca, cb, radius[a], radius[b], scale, False, rel, n, wa, wb, g, e)
        distance[i] = d
        overlap[i] = ov
        pose_into(rot_a[i], n, zero, normal[i])
        pose_into(rot_a[i], wa, pos_a[i], point_a[i])
        pose_into(rot_a[i], wb, pos_a[i], point_b[i])
