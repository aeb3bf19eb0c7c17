"""GJK and EPA as compiled kernels (engine.core.jit): one pair at a time, a loop over pairs.

A *core* is the convex set GJK reads through its support function; each pair's two cores are
given in one common frame (A's, for precision far from the world origin) as a tuple

    (pts (V, 3), n, code, radius, half_height, rot (3, 3), off (3,))

code 0: the first n rows of pts (a padded point set: padding repeats a point); code
ShapeKind.CYLINDER / CONE: that exact shape posed by rot (local -> frame) and off, its support
in closed form (engine.shapes.curved.local_support_row). Swelling radii (spheres, capsules)
are not part of the core: callers subtract them, so a sphere costs what a point does.

``gjk_pair`` and ``epa_pair`` are the algorithms (engine/collision/gjk.py and epa.py explain
them and hold the batched public entry points ``gjk``, ``gjk_intersect`` and ``epa``);
``gjk_rows`` / ``epa_rows`` run them over M pairs. The narrowphase kernels
(round_kernels.py) call the pair functions directly. The arithmetic follows the numpy
versions these replaced, step for step, so answers and tie-breaks are unchanged.

Scratch: every row-loop allocates its scratch once (``gjk_scratch`` / ``epa_scratch``) and
the pair functions only take views of it.
"""
import math

import numpy as np

from ..core.jit import kernel
from ..core.vec_kernels import cross_into, dot
from ..shapes.curved import local_support_row

# The 15 faces of a 4-slot simplex, smallest first (ties prefer the earlier = smaller face).
_EI = np.array([0, 0, 0, 1, 1, 2])
_EJ = np.array([1, 2, 3, 2, 3, 3])
_TI = np.array([0, 0, 0, 1])
_TJ = np.array([1, 1, 2, 2])
_TK = np.array([2, 3, 3, 3])
_TET_FACES = np.array([[0, 1, 2], [0, 3, 1], [0, 2, 3], [1, 3, 2]])


@kernel
def support(core, sign, d, out):
    """Support point of core along sign * d into out; returns its point index (0 for curved)."""
    pts, n, code = core[0], core[1], core[2]
    d0 = sign * d[0]
    d1 = sign * d[1]
    d2 = sign * d[2]
    if code == 0:
        best = -np.inf
        k = 0
        for j in range(n):
            s = pts[j, 0] * d0 + pts[j, 1] * d1 + pts[j, 2] * d2
            if s > best:
                best = s
                k = j
        out[0] = pts[k, 0]
        out[1] = pts[k, 1]
        out[2] = pts[k, 2]
        return k
    rot, off = core[5], core[6]
    # Local direction rot^T d, local support, back to the frame.
    l0 = d0 * rot[0, 0] + d1 * rot[1, 0] + d2 * rot[2, 0]
    l1 = d0 * rot[0, 1] + d1 * rot[1, 1] + d2 * rot[2, 1]
    l2 = d0 * rot[0, 2] + d1 * rot[1, 2] + d2 * rot[2, 2]
    local_support_row(code, core[3], core[4], l0, l1, l2, out)
    p0, p1, p2 = out[0], out[1], out[2]
    for k in range(3):
        out[k] = (rot[k, 0] * p0 + rot[k, 1] * p1 + rot[k, 2] * p2) + off[k]
    return 0


@kernel
def _support_d(ca, cb, sign, n, w, wa, wb):
    """Support point of D = B - A along sign * n (w), with its parts on A (wa) and B (wb)."""
    support(ca, -sign, n, wa)
    support(cb, sign, n, wb)
    for k in range(3):
        w[k] = wb[k] - wa[k]


@kernel
def gjk_scratch():
    """Scratch of gjk_pair (reused pair after pair)."""
    return np.empty(128), np.empty((15, 3)), np.empty((15, 4)), np.empty((4, 3)), np.empty(4)


@kernel(inline="always")
def _triangle_weights(m, e1, e2, p, cr):
    """Barycentric weights (lb, lc) of e1, e2 for the point p (relative to the triangle's first
    corner) projected along m onto the triangle's plane: ratios of the areas m . (x x y).
    cr: 3 scratch."""
    cross_into(e1, e2, cr)
    area = dot(m, cr)
    cross_into(p, e2, cr)
    lb = dot(m, cr) / area
    cross_into(e1, p, cr)
    lc = dot(m, cr) / area
    return lb, lc


@kernel
def closest_on_simplex(S, used, lam, v, cand_v, cand_lam, norm2, tmp):
    """Closest point v to the origin of conv(S[used]) and its barycentric weights lam (0 off the
    chosen face): every one of the 15 faces of the 4-slot simplex whose barycentrics of the
    origin's projection are all positive is a genuine hull point; the least of them is the
    answer, near-ties (1e-12) to the smaller face (engine/collision/gjk.py's module doc)."""
    ab = tmp[0:3]
    ac = tmp[3:6]
    ad = tmp[6:9]
    nrm = tmp[9:12]
    c1 = tmp[12:15]
    ma = tmp[15:18]
    for c in range(15):
        norm2[c] = np.inf
        for j in range(4):
            cand_lam[c, j] = 0.0
    nused = 0
    for j in range(4):
        if used[j]:
            nused += 1
            for k in range(3):
                cand_v[j, k] = S[j, k]
            cand_lam[j, j] = 1.0
            norm2[j] = dot(S[j], S[j])
    for c in range(6):
        i, j = _EI[c], _EJ[c]
        for k in range(3):
            ab[k] = S[j, k] - S[i, k]
        t = -dot(S[i], ab) / dot(ab, ab)
        if used[i] and used[j] and t > 0 and t < 1:
            for k in range(3):
                cand_v[4 + c, k] = S[i, k] + t * ab[k]
            cand_lam[4 + c, i] = 1.0 - t
            cand_lam[4 + c, j] = t
            norm2[4 + c] = dot(cand_v[4 + c], cand_v[4 + c])
    if nused >= 3:
        for c in range(4):
            i, j, m = _TI[c], _TJ[c], _TK[c]
            if not (used[i] and used[j] and used[m]):
                continue
            for k in range(3):
                ab[k] = S[j, k] - S[i, k]
                ac[k] = S[m, k] - S[i, k]
                ma[k] = -S[i, k]
            cross_into(ab, ac, nrm)
            lb, lc = _triangle_weights(nrm, ab, ac, ma, c1)
            la = 1.0 - lb - lc
            if la > 0 and lb > 0 and lc > 0:
                for k in range(3):
                    cand_v[10 + c, k] = S[i, k] + lb * ab[k] + lc * ac[k]
                cand_lam[10 + c, i] = la
                cand_lam[10 + c, j] = lb
                cand_lam[10 + c, m] = lc
                norm2[10 + c] = dot(cand_v[10 + c], cand_v[10 + c])
    if nused == 4:
        for k in range(3):
            ab[k] = S[1, k] - S[0, k]
            ac[k] = S[2, k] - S[0, k]
            ad[k] = S[3, k] - S[0, k]
            ma[k] = -S[0, k]
        cross_into(ac, ad, nrm)
        det = dot(ab, nrm)
        lb = dot(ma, nrm) / det
        cross_into(ma, ad, c1)
        lc = dot(ab, c1) / det
        cross_into(ac, ma, c1)
        ld = dot(ab, c1) / det
        la = 1.0 - lb - lc - ld
        if la > 0 and lb > 0 and lc > 0 and ld > 0:
            for k in range(3):
                cand_v[14, k] = S[0, k] + lb * ab[k] + lc * ac[k] + ld * ad[k]
            cand_lam[14, 0] = la
            cand_lam[14, 1] = lb
            cand_lam[14, 2] = lc
            cand_lam[14, 3] = ld
            norm2[14] = dot(cand_v[14], cand_v[14])
    best = np.inf
    for c in range(15):
        if norm2[c] < best:
            best = norm2[c]
    pick = 0
    for c in range(15):
        if norm2[c] <= best * (1.0 + 1e-12):
            pick = c
            break
    for j in range(4):
        lam[j] = cand_lam[pick, j]
    for k in range(3):
        v[k] = cand_v[pick, k]


@kernel
def gjk_pair(ca, cb, scale, d0, tol, max_iterations, use_margin, margin, S, SA, SB, used, lam,
             v, scratch):
    """GJK on one pair of cores (one frame). Fills the final simplex S = SB - SA (4 slots,
    used), barycentrics lam and the closest point v of D = B - A; returns (|v|^2, iterations,
    overlap).

    use_margin False: distance mode, run to convergence. True: boolean mode for shapes swollen
    by margin in all: stops at the first separating plane with clearance > margin (overlap
    False) or once |v| <= margin (overlap True). d0: rough direction from A to B for the first
    support point. Termination (tolerances relative to scale, the pair's size): the duality gap
    |v|^2 - v.w below |v| tol (scale + |v|); a repeated support point; no progress (the step is
    undone); a tetrahedron containing the origin or |v| <= tol scale (overlap); the cap."""
    ws, cand_v, cand_lam, S2, lam2 = scratch
    wa = ws[0:3]
    wb = ws[3:6]
    w = ws[6:9]
    d = ws[9:12]
    v2 = ws[12:15]
    norm2 = ws[16:31]
    tmp = ws[32:56]
    tol_abs = tol * scale
    for k in range(3):
        d[k] = d0[k]
    if dot(d, d) == 0:
        d[0] = 1.0
    support(ca, 1.0, d, wa)
    support(cb, -1.0, d, wb)
    for j in range(4):
        used[j] = False
        lam[j] = 0.0
        for k in range(3):
            S[j, k] = 0.0
            SA[j, k] = 0.0
            SB[j, k] = 0.0
    for k in range(3):
        S[0, k] = wb[k] - wa[k]
        SA[0, k] = wa[k]
        SB[0, k] = wb[k]
        v[k] = S[0, k]
    used[0] = True
    lam[0] = 1.0
    vv = dot(v, v)
    overlap = vv <= tol_abs * tol_abs
    if use_margin and math.sqrt(vv) <= margin + tol_abs:
        overlap = True
    iterations = 0
    if overlap:
        return vv, iterations, overlap
    for _ in range(max_iterations):
        iterations += 1
        support(ca, 1.0, v, wa)
        support(cb, -1.0, v, wb)
        for k in range(3):
            w[k] = wb[k] - wa[k]
        nv = math.sqrt(vv)
        vw = dot(v, w)
        if vv - vw <= nv * (tol_abs + tol * nv):
            break
        seen = False
        for j in range(4):
            if used[j] and S[j, 0] == w[0] and S[j, 1] == w[1] and S[j, 2] == w[2]:
                seen = True
        if seen:
            break
        if use_margin and vw > (margin + tol_abs) * nv:
            break
        slot = 0
        for j in range(4):
            if not used[j]:
                slot = j
                break
        for j in range(4):
            for k in range(3):
                S2[j, k] = S[j, k]
        for k in range(3):
            S2[slot, k] = w[k]
        was = used[slot]
        used[slot] = True
        closest_on_simplex(S2, used, lam2, v2, cand_v, cand_lam, norm2, tmp)
        vvnew = dot(v2, v2)
        if not vvnew < vv:
            used[slot] = was          # no progress: keep the last state, stop
            break
        for k in range(3):
            S[slot, k] = w[k]
            SA[slot, k] = wa[k]
            SB[slot, k] = wb[k]
            v[k] = v2[k]
        size = 0
        for j in range(4):
            lam[j] = lam2[j]
            used[j] = lam2[j] > 0
            size += used[j]
        vv = vvnew
        overlap = size == 4 or vvnew <= tol_abs * tol_abs
        if use_margin and math.sqrt(vvnew) <= margin + tol_abs:
            overlap = True
        if overlap:
            break
    return vv, iterations, overlap


@kernel
def gjk_rows(pa, na, code_a, rad_a, hh_a, rot_a, off_a, pb, nb, code_b, rad_b, hh_b, rot_b,
             off_b, scale, d0, tol, max_iterations, use_margin, margin,
             S, SA, SB, used, lam, v, vv, iterations, overlap):
    """gjk_pair over M pairs (row i of every argument; margin (M,) read when use_margin)."""
    scratch = gjk_scratch()
    for i in range(len(scale)):
        ca = (pa[i], na[i], code_a[i], rad_a[i], hh_a[i], rot_a[i], off_a[i])
        cb = (pb[i], nb[i], code_b[i], rad_b[i], hh_b[i], rot_b[i], off_b[i])
        r = gjk_pair(ca, cb, scale[i], d0[i], tol, max_iterations, use_margin, margin[i],
                     S[i], SA[i], SB[i], used[i], lam[i], v[i], scratch)
        vv[i] = r[0]
        iterations[i] = r[1]
        overlap[i] = r[2]


# ------------------------------------------------------------------------------------- EPA
@kernel
def _face_plane(V, a, b, c, n):
    """Unit normal of triangle (V[a], V[b], V[c]) into n; returns (offset, raw normal length)."""
    e1x = V[b, 0] - V[a, 0]
    e1y = V[b, 1] - V[a, 1]
    e1z = V[b, 2] - V[a, 2]
    e2x = V[c, 0] - V[a, 0]
    e2y = V[c, 1] - V[a, 1]
    e2z = V[c, 2] - V[a, 2]
    n0 = e1y * e2z - e1z * e2y
    n1 = e1z * e2x - e1x * e2z
    n2 = e1x * e2y - e1y * e2x
    nn = n0 * n0 + n1 * n1 + n2 * n2
    ln = math.sqrt(nn)
    n[0] = n0 / ln
    n[1] = n1 / ln
    n[2] = n2 / ln
    return n[0] * V[a, 0] + n[1] * V[a, 1] + n[2] * V[a, 2], ln


@kernel
def epa_scratch(nvc):
    """Scratch of epa_pair for polytopes of up to nvc vertices."""
    nfc = 2 * nvc
    return (np.empty(64), np.empty(nfc, np.bool_), np.empty((3 * nfc, 2), np.int64),
            np.empty(nvc, np.bool_), np.empty(nfc, np.int64), np.empty((3 * nfc, 3)))


@kernel
def _blow_up(ca, cb, pts, pa_, pb_, size, tol_abs, touch_n, ws):
    """Grow a GJK simplex of 1-3 points (pts/pa_/pb_ rows, size) into a tetrahedron holding
    the origin. Returns (size, touch): touch where D has no extent beyond the origin along a
    direction the growth tried (depth 0, that direction into touch_n)."""
    w = ws[0:3]
    wa = ws[3:6]
    wb = ws[6:9]
    d = ws[9:12]
    e = ws[12:15]
    n = ws[15:18]
    wp = ws[18:21]
    wpa = ws[21:24]
    wpb = ws[24:27]
    # Demote degenerate simplices: a (near) collinear triangle becomes its longest edge (it
    # still holds the origin); a zero-length segment becomes a point.
    if size == 3:
        for k in range(3):
            e[k] = pts[1, k] - pts[0, k]
            d[k] = pts[2, k] - pts[0, k]
        cross_into(e, d, n)
        best = -1.0
        first = 0
        for j in range(3):
            jn = (j + 1) % 3
            ll = ((pts[jn, 0] - pts[j, 0]) * (pts[jn, 0] - pts[j, 0])
                  + (pts[jn, 1] - pts[j, 1]) * (pts[jn, 1] - pts[j, 1])
                  + (pts[jn, 2] - pts[j, 2]) * (pts[jn, 2] - pts[j, 2]))
            if ll > best:
                best = ll
                first = j
        if dot(n, n) <= 1e-24 * best * best:
            second = (first + 1) % 3
            for arr in (pts, pa_, pb_):
                for k in range(3):
                    x0 = arr[first, k]
                    x1 = arr[second, k]
                    arr[0, k] = x0
                    arr[1, k] = x1
            size = 2
    if size == 2:
        for k in range(3):
            e[k] = pts[1, k] - pts[0, k]
        if dot(e, e) <= 1e-24 * max(dot(pts[0], pts[0]), tol_abs * tol_abs):
            size = 1
    for stage in range(1, 3):
        if size != stage:
            continue
        if size == 1:   # the origin is (within tol) the point: any direction
            d[0] = 1.0
            d[1] = 0.0
            d[2] = 0.0
        else:           # the origin is on a segment: go orthogonally to it
            for k in range(3):
                e[k] = pts[1, k] - pts[0, k]
            ax = 0
            for k in range(1, 3):
                if abs(e[k]) < abs(e[ax]):
                    ax = k
            n[0] = 0.0
            n[1] = 0.0
            n[2] = 0.0
            n[ax] = 1.0
            cross_into(e, n, d)
            ln = math.sqrt(dot(d, d))
            for k in range(3):
                d[k] = d[k] / ln
        _support_d(ca, cb, 1.0, d, w, wa, wb)
        if dot(w, d) <= tol_abs:
            for k in range(3):
                touch_n[k] = d[k]
            return size, True
        for k in range(3):
            pts[size, k] = w[k]
            pa_[size, k] = wa[k]
            pb_[size, k] = wb[k]
        size += 1
    if size == 3:       # the origin is in a triangle: look at both sides of it
        for k in range(3):
            e[k] = pts[1, k] - pts[0, k]
            d[k] = pts[2, k] - pts[0, k]
        cross_into(e, d, n)
        ln = math.sqrt(dot(n, n))
        for k in range(3):
            n[k] = n[k] / ln
        _support_d(ca, cb, 1.0, n, wp, wpa, wpb)
        _support_d(ca, cb, -1.0, n, w, wa, wb)
        hp = dot(wp, n)
        hm = -dot(w, n)
        if min(hp, hm) <= tol_abs:
            s = 1.0 if hp <= hm else -1.0
            for k in range(3):
                touch_n[k] = s * n[k]
            return size, True
        # Apex on the higher side only (a bipyramid need not be convex); the origin then lies
        # on the base face, which EPA pushes out first.
        up = hp >= hm
        for k in range(3):
            pts[3, k] = wp[k] if up else w[k]
            pa_[3, k] = wpa[k] if up else wa[k]
            pb_[3, k] = wpb[k] if up else wb[k]
        size = 4
    return size, False


@kernel
def _expand(ca, cb, V, VA, VB, F, alive, N, Dst, nv, best, w, wa, wb, tol_abs, scratch):
    """One EPA step: push out face best by the new point w of D. The update is checked first
    (the horizon one simple loop, free slots, new faces non-degenerate with the origin behind
    them, the surface a closed sphere F = 2 V - 4) and only applied when it passes; returns
    (applied, new vertex count)."""
    ws, vis, hor, ref, slots, hn = scratch
    nfc = alive.shape[0]
    nvc = V.shape[0]
    for f in range(nfc):
        vis[f] = alive[f] and (N[f, 0] * w[0] + N[f, 1] * w[1] + N[f, 2] * w[2]) - Dst[f] \
            > 1e-3 * tol_abs
    vis[best] = True
    # Horizon: edges of seen faces whose reverse edge belongs to no seen face (face order,
    # then edge order).
    nh = 0
    for f in range(nfc):
        if not vis[f]:
            continue
        for e in range(3):
            i = F[f, e]
            j = F[f, (e + 1) % 3]
            twin = False
            for g in range(nfc):
                if vis[g]:
                    for e2 in range(3):
                        if F[g, e2] == j and F[g, (e2 + 1) % 3] == i:
                            twin = True
            if not twin:
                hor[nh, 0] = i
                hor[nh, 1] = j
                nh += 1
    if nh < 3 or nv >= nvc:
        return False, nv
    # One simple loop: every horizon vertex starts exactly one edge and ends exactly one.
    for h in range(nh):
        starts = 0
        ends = 0
        for g in range(nh):
            starts += hor[g, 0] == hor[h, 0]
            ends += hor[g, 1] == hor[h, 0]
        if starts != 1 or ends != 1:
            return False, nv
    nfree = 0
    for f in range(nfc):
        if not (alive[f] and not vis[f]):
            slots[nfree] = f
            nfree += 1
    if nh > nfree:
        return False, nv
    newv = nv
    for h in range(nh):
        a = hor[h, 0]
        b = hor[h, 1]
        e1x = V[b, 0] - V[a, 0]
        e1y = V[b, 1] - V[a, 1]
        e1z = V[b, 2] - V[a, 2]
        e2x = w[0] - V[a, 0]
        e2y = w[1] - V[a, 1]
        e2z = w[2] - V[a, 2]
        n0 = e1y * e2z - e1z * e2y
        n1 = e1z * e2x - e1x * e2z
        n2 = e1x * e2y - e1y * e2x
        ln = math.sqrt(n0 * n0 + n1 * n1 + n2 * n2)
        hn[h, 0] = n0 / ln
        hn[h, 1] = n1 / ln
        hn[h, 2] = n2 / ln
        dd = hn[h, 0] * V[a, 0] + hn[h, 1] * V[a, 1] + hn[h, 2] * V[a, 2]
        if not (ln > 0) or not (dd >= -tol_abs):
            return False, nv
    # Closed triangulated sphere after the update: F = 2 V - 4 over the referenced vertices.
    for k in range(nvc):
        ref[k] = False
    nalive = 0
    for f in range(nfc):
        if alive[f] and not vis[f]:
            nalive += 1
            for e in range(3):
                ref[F[f, e]] = True
    for h in range(nh):
        ref[hor[h, 0]] = True
        ref[hor[h, 1]] = True
    ref[newv] = True
    nref = 0
    for k in range(nvc):
        nref += ref[k]
    if nalive + nh != 2 * nref - 4:
        return False, nv
    # Apply.
    for k in range(3):
        V[newv, k] = w[k]
        VA[newv, k] = wa[k]
        VB[newv, k] = wb[k]
    for f in range(nfc):
        if vis[f]:
            alive[f] = False
    for h in range(nh):
        s = slots[h]
        F[s, 0] = hor[h, 0]
        F[s, 1] = hor[h, 1]
        F[s, 2] = newv
        alive[s] = True
        for k in range(3):
            N[s, k] = hn[h, k]
        a = hor[h, 0]
        Dst[s] = N[s, 0] * V[a, 0] + N[s, 1] * V[a, 1] + N[s, 2] * V[a, 2]
    return True, nv + 1


@kernel
def epa_pair(ca, cb, scale, S, SA, SB, size, tol, V, VA, VB, F, alive, N, Dst, normal, wit_a,
             wit_b, scratch):
    """EPA on one pair whose cores overlap (one frame), from GJK's simplex S/SA/SB (used slots
    first, size of them). Grows the polytope V/F/alive (faces N, Dst) inside D = B - A until
    its closest face lies on D's boundary within tol * scale.

    Returns (core depth, touch, converged, vertex count, iterations); normal (A -> B, the
    direction moving B out) and the witnesses wit_a / wit_b on the cores (not on touch).
    touch: the origin is on D's boundary (depth 0 along normal). converged False: the vertex
    cap or a degenerate update (the answer is the closest face's, a lower bound)."""
    ws = scratch[0]
    w = ws[32:35]
    wa = ws[35:38]
    wb = ws[38:41]
    tn = ws[41:44]
    cen = ws[44:47]
    nvc = V.shape[0]
    nfc = F.shape[0]
    tol_abs = tol * scale
    for j in range(4):
        for k in range(3):
            V[j, k] = S[j, k]
            VA[j, k] = SA[j, k]
            VB[j, k] = SB[j, k]
    sz, touch = _blow_up(ca, cb, V, VA, VB, size, tol_abs, tn, ws)
    for f in range(nfc):
        alive[f] = f < 4
    iterations = 0
    if touch:
        for k in range(3):
            normal[k] = -tn[k]
        return 0.0, True, True, 0, iterations
    for k in range(3):
        cen[k] = 0.25 * (((V[0, k] + V[1, k]) + V[2, k]) + V[3, k])
    for f in range(4):
        F[f, 0] = _TET_FACES[f, 0]
        F[f, 1] = _TET_FACES[f, 1]
        F[f, 2] = _TET_FACES[f, 2]
        dst, _ = _face_plane(V, F[f, 0], F[f, 1], F[f, 2], N[f])
        if dot(N[f], cen) > dst:       # orient every face away from the centroid
            t = F[f, 1]
            F[f, 1] = F[f, 2]
            F[f, 2] = t
        dst, ln = _face_plane(V, F[f, 0], F[f, 1], F[f, 2], N[f])
        Dst[f] = dst
        if not (ln > 0):
            # A zero-area starting face needs an exactly degenerate simplex (GJK keeps none):
            # reported as touching along +z, not converged, rather than with NaNs.
            normal[0] = 0.0
            normal[1] = 0.0
            normal[2] = -1.0
            return 0.0, True, False, 0, iterations
    nv = 4
    converged = False
    for _ in range(nvc):
        iterations += 1
        best = _closest_face(alive, Dst)
        support(ca, -1.0, N[best], wa)
        support(cb, 1.0, N[best], wb)
        for k in range(3):
            w[k] = wb[k] - wa[k]
        if dot(w, N[best]) - Dst[best] <= tol_abs:
            converged = True
            break
        if nv >= nvc:
            break
        ok, nv = _expand(ca, cb, V, VA, VB, F, alive, N, Dst, nv, best, w, wa, wb, tol_abs,
                         scratch)
        if not ok:
            break
    # The closest face: the origin projected on its plane, barycentrics -> witnesses.
    best = _closest_face(alive, Dst)
    depth = Dst[best]
    a, b, c = F[best, 0], F[best, 1], F[best, 2]
    n = N[best]
    e1 = ws[47:50]
    e2 = ws[50:53]
    pp = ws[53:56]
    cr = ws[56:59]
    for k in range(3):
        e1[k] = V[b, k] - V[a, k]
        e2[k] = V[c, k] - V[a, k]
        pp[k] = depth * n[k] - V[a, k]
    lb, lc = _triangle_weights(n, e1, e2, pp, cr)
    la = 1.0 - lb - lc
    for k in range(3):
        wit_a[k] = la * VA[a, k] + lb * VA[b, k] + lc * VA[c, k]
        wit_b[k] = la * VB[a, k] + lb * VB[b, k] + lc * VB[c, k]
        normal[k] = -n[k]
    return depth, False, converged, nv, iterations


@kernel(inline="always")
def _closest_face(alive, Dst):
    best = 0
    bd = np.inf
    for f in range(alive.shape[0]):
        if alive[f] and Dst[f] < bd:
            bd = Dst[f]
            best = f
    return best


@kernel
def epa_rows(pa, na, code_a, rad_a, hh_a, rot_a, off_a, pb, nb, code_b, rad_b, hh_b, rot_b,
             off_b, scale, S, SA, SB, size, tol, V, VA, VB, F, alive, depth, normal, wit_a,
             wit_b, touch, converged, nv, iterations):
    """epa_pair over K overlapping pairs (row i of every argument); the polytopes V (K, nvc, 3),
    F (K, 2 nvc, 3), alive are kept for the debug drawing."""
    nvc = V.shape[1]
    nfc = 2 * nvc
    scratch = epa_scratch(nvc)
    N = np.empty((nfc, 3))
    Dst = np.empty(nfc)
    for i in range(len(scale)):
        ca = (pa[i], na[i], code_a[i], rad_a[i], hh_a[i], rot_a[i], off_a[i])
        cb = (pb[i], nb[i], code_b[i], rad_b[i], hh_b[i], rot_b[i], off_b[i])
        r = epa_pair(ca, cb, scale[i], S[i], SA[i], SB[i], size[i], tol, V[i], VA[i], VB[i],
                     F[i], alive[i], N, Dst, normal[i], wit_a[i], wit_b[i], scratch)
        depth[i] = r[0]
        touch[i] = r[1]
        converged[i] = r[2]
        nv[i] = r[3]
        iterations[i] = r[4]

