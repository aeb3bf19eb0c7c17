"""Contact manifolds and exact distances for pairs involving a cylinder or a cone (curved.py).

The other shape may be anything convex: a polytope, a sphere, a capsule, another cylinder or
cone, or a mesh triangle. All pairs of a batch at once, in A's frame (as gjk.py does):

1. Normal and signed distance: GJK on the cores through analytic support functions
   (curved.SupportSet); where the cores overlap, EPA on the same supports. Swelling radii
   (spheres, capsules) are subtracted as usual.
2. Supporting features along the normal (Jolt's GetSupportingFace idea): each shape gives the
   feature of its surface facing the other, within FLAT_DEG of the normal:
     cylinder: a cap (CAP_N rim points, exactly on the rim circle), a side segment (a line of
               the side), or the rim point;
     cone:     the base cap, a side segment (apex to a base rim point), or the apex/rim point;
     polytope: the face most aligned with the normal, a top edge, or the support vertex;
     capsule:  its core segment or end (swollen); sphere: a point; triangle: face/edge/vertex.
3. If either feature is a face, it is the reference: the other feature (polygon, segment or
   point) is clipped to it (mesh_contacts._clip: the exact intersection polygon seen along the
   face normal, every point with its true height above the face), the contact normal becomes
   the face normal (exact; a cylinder lying on a face gets its side line, 2 points; standing
   on its cap, the rim points inside the face, reduced to 4), and clip.reduce4 keeps 4.
   Two near-parallel segments (cylinders side by side) give the 2 ends of their overlap.
   Anything else (a rim on a face tilted beyond FLAT_DEG, crossing sides): 1 point at the
   GJK/EPA witnesses with the exact signed distance.
Every point's separation is its own true gap along the normal (never deeper than the truth),
so the feature tolerance only decides how many points are offered.

Feature ids: ID_CURVED in bits 59-61, A's feature code bits 48-57, B's 38-47, reference side
bit 37, route bits 12-15 (mesh_contacts ROUTE_* or ROUTE_POINT / ROUTE_SEGMENT), code 0-11 (the
polygon vertex / crossing indices): a rim point keeps its id while it rests, a rolling side
line keeps its two end ids.
"""
import numpy as np

from ..core import detmath
from ..core.kinds import ShapeKind
from ..shapes.curved import CAP_DIRS, CAP_N, CONE, SupportSet, is_curved, local_support
from .clip import SNAP, reduce4
from .epa import _run_epa
from .gjk import run_gjk

POLYTOPE, CAPSULE = ShapeKind.POLYTOPE, ShapeKind.CAPSULE

ID_CURVED = 5
ROUTE_POINT, ROUTE_SEGMENT = 8, 9
TRIANGLE = 99                    # feature source for mesh triangles (explicit points)
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
# EPA refines a curved Minkowski difference towards a tolerance (relative to the pair's size).
# Queries (distance) ask for 1e-7; contacts need less: a face feature then sets the normal and
# every separation exactly, and elsewhere 1e-5 of the size is a few hundredths of a millimetre.
# Two curved shapes (no face to snap to: side on side, rim on rim) keep the fine tolerance.
# Measured: 30 steps of bench/bench_cylinder_cone.py's 200 falling cylinders and cones took
# 7.9 s with the fine EPA everywhere, 4.8 s with this split (shared 2-core machine).
EPA_TOL, EPA_VERTICES = 1e-7, 96
CONTACT_EPA_TOL, CONTACT_EPA_VERTICES = 1e-5, 40
# Feature codes (10 bits): curved 1 top cap, 2 bottom cap / base, 3 side line, 4 point;
# point sets 5 edge, 6 vertex, 7 sphere/capsule point, 8 capsule line, 16 + f polytope face f.
F_TOP, F_BOTTOM, F_SIDE, F_POINT, F_EDGE, F_VERTEX, F_ROUND, F_LINE, F_FACE = 1, 2, 3, 4, 5, 6, 7, 8, 16
AXIS_ROUND = 3


def _dot(a, b):
    return np.einsum("...i,...i->...", a, b)


def _rotate(rot, v):
    return np.matmul(rot, v[..., None])[..., 0]


class Side:
    """One shape of each pair, posed in the pair's frame: table ids, table kind (or TRIANGLE),
    rot (local -> frame), off (origin in frame), swelling radius, explicit points for
    triangles (k, 3, 3) with their face normal (towards the other shape)."""

    def __init__(self, table, ids, kind, rot, off, swell, tri=None, tri_normal=None):
        self.table, self.ids, self.kind, self.rot, self.off, self.swell = (
            table, ids, kind, rot, off, swell)
        self.tri, self.tri_normal = tri, tri_normal

    def support_set(self):
        t = self.table
        k = len(self.ids)
        if self.tri is not None:
            pts = self.tri
        else:
            v = int(t.npoints[self.ids].max())
            pts = np.matmul(t.points[self.ids, :v], self.rot.transpose(0, 2, 1)) + self.off[:, None]
        curved = is_curved(self.kind)
        code = np.where(curved, self.kind, 0).astype(np.int64)
        rad = t.curved_radius[self.ids] if self.tri is None else np.zeros(k)
        hh = t.half_height[self.ids] if self.tri is None else np.zeros(k)
        return SupportSet(pts, code, rad, hh, self.rot, self.off)


class Feature:
    """Padded feature polygons: pts (k, W, 3), mask (k, W) a prefix, dim (k,) 0 point /
    1 segment / 2 face, normal (k, 3) outward face normal (dim 2), code (k,) feature code."""

    def __init__(self, k, w):
        self.pts = np.zeros((k, w, 3))
        self.mask = np.zeros((k, w), dtype=bool)
        self.dim = np.zeros(k, dtype=np.int64)
        self.normal = np.zeros((k, 3))
        self.code = np.zeros(k, dtype=np.int64)

    def set(self, rows, pts, dim, code, normal=None):
        n = pts.shape[1]
        self.pts[rows, :n] = pts
        self.pts[rows, n:] = pts[:, :1]
        self.mask[rows] = np.arange(self.mask.shape[1])[None] < n
        self.dim[rows] = dim
        self.code[rows] = code
        if normal is not None:
            self.normal[rows] = normal


def _points_feature(feat, rows, pts, d, face_pts=None, face_mask=None, face_n=None, face_code=None):
    """Feature of point sets pts (R, V, 3) (padded by repetition) along d: a face given by the
    caller when aligned, else the top two points as a segment when level, else the top point."""
    h = _dot(pts, d[:, None])
    order = np.argsort(-h, axis=1, kind="stable")
    r = np.arange(len(rows))
    i1 = order[:, 0]
    p1 = pts[r, i1]
    # Second highest distinct point (padding repeats point 0: skip exact copies of the top one).
    same = np.all(pts == p1[:, None], axis=2)
    h2 = np.where(same, -np.inf, h)
    i2 = np.argmax(h2, axis=1)
    p2 = pts[r, i2]
    e = np.sqrt(_dot(p2 - p1, p2 - p1))
    level = np.isfinite(h2[r, i2]) & (h[r, i1] - h2[r, i2] <= SIN_FLAT * e)
    seg = np.stack((p1, p2), axis=1)
    face = np.zeros(len(rows), dtype=bool) if face_pts is None else face_code >= 0
    for sel, dim in ((~face & level, 1), (~face & ~level, 0)):
        s = np.flatnonzero(sel)
        if len(s):
            feat.set(rows[s], seg[s, :dim + 1], dim, F_EDGE if dim else F_VERTEX)
    s = np.flatnonzero(face)
    if len(s):
        w = face_pts.shape[1]
        feat.pts[rows[s], :w] = face_pts[s]
        feat.pts[rows[s], w:] = face_pts[s, :1]
        feat.mask[rows[s]] = False
        feat.mask[rows[s], :w] = face_mask[s]
        feat.dim[rows[s]] = 2
        feat.normal[rows[s]] = face_n[s]
        feat.code[rows[s]] = face_code[s]


def _polytope_faces(side, rows, d):
    """The face of each polytope row most aligned with d, if within FLAT_DEG (code -1 if not)."""
    t = side.table
    ids = side.ids[rows]
    rot = side.rot[rows]
    nf = int(t.nfaces[ids].max())
    nrm = np.matmul(t.planes[ids, :nf, :3], rot.transpose(0, 2, 1))
    al = np.where(np.arange(nf)[None] < t.nfaces[ids][:, None], _dot(nrm, d[:, None]), -np.inf)
    f = np.argmax(al, axis=1)
    r = np.arange(len(rows))
    size = t.patch_sizes[ids, f]     # the flat side around the face (engine.collision.patches)
    w = int(size.max())
    loop = t.patch_loops[ids, f, :w]
    mask = np.arange(w)[None] < size[:, None]
    loop = np.where(mask, loop, loop[:, :1])
    pts = np.matmul(t.points[ids[:, None], loop], rot.transpose(0, 2, 1)) + side.off[rows, None]
    code = np.where(al[r, f] >= COS_FLAT, F_FACE + f, -1)
    return pts, mask, nrm[r, f], code


def _curved_feature(feat, side, rows, d):
    """Cap, side line or point of cylinder/cone rows along frame directions d."""
    rot = side.rot[rows]
    off = side.off[rows]
    kind = side.kind[rows]
    rad = side.table.curved_radius[side.ids[rows]]
    hh = side.table.half_height[side.ids[rows]]
    dl = np.matmul(d[:, None, :], rot)[:, 0]                 # local direction
    dz = dl[:, 2]
    lxy = np.sqrt(dl[:, 0] ** 2 + dl[:, 1] ** 2)
    ok = lxy > 1e-300
    ux = np.where(ok, dl[:, 0] / np.where(ok, lxy, 1.0), 1.0)
    uy = np.where(ok, dl[:, 1] / np.where(ok, lxy, 1.0), 0.0)
    cone = kind == CONE
    top = ~cone & (dz >= COS_FLAT)
    bottom = -dz >= COS_FLAT
    # Side line: cylinder with d normal to the axis; cone with d along the side's normal
    # (h ux, h uy, r) / sqrt(h^2 + r^2) at d's azimuth.
    h2 = 2.0 * hh
    cone_side = (h2 * lxy + rad * dz) / np.sqrt(h2 * h2 + rad * rad) >= COS_FLAT
    side_line = ~top & ~bottom & np.where(cone, cone_side, np.abs(dz) <= SIN_FLAT)
    point = ~top & ~bottom & ~side_line

    def to_frame(p):
        return np.matmul(p, rot.transpose(0, 2, 1)) + off[:, None]

    z = np.array([0.0, 0.0, 1.0])
    caps = CAP_DIRS[None] * rad[:, None, None]
    cap_z = np.where(top, hh, -hh)[:, None, None] * z
    cap = to_frame(caps + cap_z)
    cap_n = np.where(top[:, None], rot[:, :, 2], -rot[:, :, 2])
    rim = np.stack((rad * ux, rad * uy, -hh), axis=1)
    upper = np.where(cone[:, None], np.stack((0 * hh, 0 * hh, hh), axis=1),
                     np.stack((rad * ux, rad * uy, hh), axis=1))
    line = to_frame(np.stack((rim, upper), axis=1))
    sup = to_frame(local_support(kind, rad, hh, dl)[:, None])
    k = len(rows)
    for sel, pts, dim, code in ((top | bottom, cap, 2, np.where(top, F_TOP, F_BOTTOM)),
                                (side_line, line, 1, np.full(k, F_SIDE)),
                                (point, sup, 0, np.full(k, F_POINT))):
        s = np.flatnonzero(sel)
        if len(s):
            feat.set(rows[s], pts[s], dim, code[s], cap_n[s] if dim == 2 else None)


def features(side, d, width):
    """Supporting features of every row of a Side along frame directions d (k, 3), unit,
    pointing from the shape towards the other one. Swollen shapes are offset by their radius."""
    k = len(side.ids)
    feat = Feature(k, width)
    if side.tri is not None:
        rows = np.arange(k)
        face = _dot(side.tri_normal, d) >= COS_FLAT
        code = np.where(face, F_FACE, -1)
        _points_feature(feat, rows, side.tri, d, side.tri, np.ones((k, 3), dtype=bool),
                        side.tri_normal, code)
        return feat
    curved = np.flatnonzero(is_curved(side.kind))
    if len(curved):
        _curved_feature(feat, side, curved, d[curved])
    poly = np.flatnonzero(side.kind == POLYTOPE)
    if len(poly):
        t = side.table
        v = int(t.npoints[side.ids[poly]].max())
        pts = (np.matmul(t.points[side.ids[poly], :v], side.rot[poly].transpose(0, 2, 1))
               + side.off[poly, None])
        fp, fm, fn, fc = _polytope_faces(side, poly, d[poly])
        _points_feature(feat, poly, pts, d[poly], fp, fm, fn, fc)
    rnd = np.flatnonzero(~is_curved(side.kind) & (side.kind != POLYTOPE))
    if len(rnd):
        t = side.table
        ids = side.ids[rnd]
        core = np.matmul(t.points[ids, :2], side.rot[rnd].transpose(0, 2, 1)) + side.off[rnd, None]
        core = core + side.swell[rnd, None, None] * d[rnd, None]
        _points_feature(feat, rnd, core, d[rnd])
        cap = side.kind[rnd] == CAPSULE
        feat.code[rnd] = np.where(cap & (feat.dim[rnd] == 1), F_LINE, F_ROUND)
    return feat


def signed_distance(sa, sb, swell_a, swell_b, scale, coarse=None):
    """GJK (EPA where the cores overlap) on SupportSets in one frame. Returns signed distance
    (M,), unit normal A -> B (M, 3), surface witnesses on A and B (M, 3), core overlap (M,).
    coarse (M,) bool: rows whose EPA may stop at CONTACT_EPA_TOL (see the constants)."""
    m = len(swell_a)
    d0 = sb.off - sa.off
    d0 = np.where((_dot(d0, d0) > 0)[:, None], d0, np.array([1.0, 0.0, 0.0]))
    g = run_gjk(sa, sb, scale, 64, GJK_TOL, d0=d0.copy())
    with np.errstate(invalid="ignore", divide="ignore"):
        n = np.where(g.overlap[:, None], 0.0, g.v / np.sqrt(g.vv)[:, None])
    core = np.where(g.overlap, 0.0, np.sqrt(g.vv))
    ca = np.einsum("mk,mki->mi", g.lam, g.SA)
    cb = np.einsum("mk,mki->mi", g.lam, g.SB)
    coarse = np.zeros(m, dtype=bool) if coarse is None else coarse
    for rough, tol, nv in ((False, EPA_TOL, EPA_VERTICES),
                           (True, CONTACT_EPA_TOL, CONTACT_EPA_VERTICES)):
        idx = np.flatnonzero(g.overlap & (coarse == rough))
        if not len(idx):
            continue
        order = np.argsort(~g.used[idx], axis=1, kind="stable")
        r = np.arange(len(idx))[:, None]
        S, SA, SB = g.S[idx][r, order], g.SA[idx][r, order], g.SB[idx][r, order]
        size = g.used[idx].sum(axis=1)
        depth, ne, ea, eb, touch, _, _ = _run_epa(sa[idx], sb[idx], scale[idx], S, SA, SB, size,
                                                  tol, nv)
        core[idx] = -depth
        n[idx] = ne
        ca[idx] = np.where(touch[:, None], ca[idx], ea)
        cb[idx] = np.where(touch[:, None], cb[idx], eb)
    bad = ~np.all(np.isfinite(n), axis=1) | (_dot(n, n) < 0.5)
    n[bad] = (0.0, 0.0, 1.0)
    return (core - swell_a - swell_b, n, ca + swell_a[:, None] * n, cb - swell_b[:, None] * n,
            g.overlap.copy())


def _ids(fa, fb, ref_b, route, code):
    return ((np.int64(ID_CURVED) << 59) | ((np.asarray(fa, dtype=np.int64) & 0x3FF) << 48)
            | ((np.asarray(fb, dtype=np.int64) & 0x3FF) << 38)
            | (np.asarray(ref_b, dtype=np.int64) << 37) | (np.asarray(route, dtype=np.int64) << 12)
            | (np.asarray(code, dtype=np.int64) & 0xFFF))


def manifolds(side_a, side_b, margin, force_face=None, pre=None):
    """Contact data of M pairs in the pairs' frame. force_face (M,) bool: B's feature is taken
    as its face along B's triangle normal (mesh triangles whose edge/vertex is not active).

    Returns (normal (M,3), points (M,4,3), separation (M,4), ids (M,4), count (M,), distance (M,)).
    """
    from .mesh_contacts import _clip  # mesh_contacts imports narrowphase, which imports us
    m = len(side_a.ids)
    sa, sb = side_a.support_set(), side_b.support_set()
    t = side_a.table
    scale = np.maximum(t.bound_radius[side_a.ids],
                       t.bound_radius[side_b.ids] if side_b.tri is None else
                       np.sqrt(np.max(_dot(side_b.tri - side_b.tri.mean(axis=1, keepdims=True),
                                           side_b.tri - side_b.tri.mean(axis=1, keepdims=True)), axis=1)))
    if pre is None:
        # Coarse EPA where a face can set the normal: not two curved shapes.
        coarse = ~(is_curved(side_a.kind) & is_curved(side_b.kind))
        pre = signed_distance(sa, sb, side_a.swell, side_b.swell, scale, coarse)
    dist, n, wa, wb, _ = pre
    dist = dist.copy()
    normal = n.copy()
    if force_face is not None and force_face.any():
        normal[force_face] = -side_b.tri_normal[force_face]
    points = np.zeros((m, 4, 3))
    sep = np.full((m, 4), np.inf)
    ids = np.zeros((m, 4), dtype=np.int64)
    count = np.zeros(m, dtype=np.int64)
    eps = SNAP * scale
    live = np.flatnonzero((dist <= margin) | (force_face if force_face is not None else False))
    if not len(live):
        return normal, points, sep, ids, count, dist
    width = max(CAP_N, int(t.patch_sizes.max()) if t.patch_sizes.size else 3, 3)
    sub_a = Side(t, side_a.ids[live], side_a.kind[live], side_a.rot[live], side_a.off[live],
                 side_a.swell[live])
    sub_b = Side(t, side_b.ids[live], side_b.kind[live], side_b.rot[live], side_b.off[live],
                 side_b.swell[live],
                 None if side_b.tri is None else side_b.tri[live],
                 None if side_b.tri is None else side_b.tri_normal[live])
    nl = normal[live]
    fa = features(sub_a, nl, width)
    fb = features(sub_b, -nl, width)
    if force_face is not None:
        ff = force_face[live]
        fb.pts[ff, :3] = sub_b.tri[ff]
        fb.mask[ff] = np.arange(width)[None] < 3
        fb.dim[ff] = 2
        fb.normal[ff] = sub_b.tri_normal[ff]
        fb.code[ff] = F_FACE
    mg = margin[live]
    # ---- a face involved: clip the other feature to it.
    face = (fa.dim == 2) | (fb.dim == 2)
    align_a = _dot(fa.normal, nl)
    align_b = -_dot(fb.normal, nl)
    ref_b = (fb.dim == 2) & ((fa.dim < 2) | (align_b > align_a))
    done = np.zeros(len(live), dtype=bool)
    f = np.flatnonzero(face)
    if len(f):
        rb = ref_b[f][:, None, None]
        ref = np.where(rb, fb.pts[f], fa.pts[f])
        rmask = np.where(rb[:, :, 0], fb.mask[f], fa.mask[f])
        inc = np.where(rb, fa.pts[f], fb.pts[f])
        kmask = np.where(rb[:, :, 0], fa.mask[f], fb.mask[f])
        nr = np.where(rb[:, :, 0], fb.normal[f], fa.normal[f])
        inc_dim = np.where(ref_b[f], fa.dim[f], fb.dim[f])
        inc_n = np.where((inc_dim == 2)[:, None], np.where(rb[:, :, 0], fa.normal[f], fb.normal[f]), 0.0)
        e = eps[live][f]
        x, y, z, valid, route, code, (o, u, v) = _clip(ref, rmask, inc, kmask, nr, inc_n,
                                                       mg[f][:, None], e)
        pick, ok = reduce4(x, y, z, valid, e)
        r = np.arange(len(f))[:, None]
        px, py, pz = x[r, pick], y[r, pick], z[r, pick]
        pts = o[:, None] + px[..., None] * u[:, None] + py[..., None] * v[:, None] + \
            (0.5 * pz)[..., None] * nr[:, None]
        rows = live[f]
        got = ok.any(axis=1)
        g = rows[got]
        points[g] = pts[got]
        sep[g] = np.where(ok[got], pz[got], np.inf)
        ids[g] = np.where(ok[got], _ids(fa.code[f][got, None], fb.code[f][got, None],
                                        ref_b[f][got, None], route[pick[got]],
                                        code[pick[got]]), 0)
        count[g] = ok[got].sum(axis=1)
        normal[g] = np.where(ref_b[f][got, None], -nr[got], nr[got])
        dist[g] = np.min(np.where(valid[got], z[got], np.inf), axis=1)
        done[f[got]] = True
    # ---- two near-parallel segments: the two ends of their overlap.
    a0, a1 = fa.pts[:, 0], fa.pts[:, 1]
    b0, b1 = fb.pts[:, 0], fb.pts[:, 1]
    da, db = a1 - a0, b1 - b0
    cr = np.cross(da, db)
    la, lb = _dot(da, da), _dot(db, db)
    par = (~done & (fa.dim == 1) & (fb.dim == 1)
           & (_dot(cr, cr) <= SIN_FLAT ** 2 * la * lb) & (la > 0) & (lb > 0))
    s = np.flatnonzero(par)
    if len(s):
        ll = la[s]
        t0 = _dot(b0[s] - a0[s], da[s]) / ll
        t1 = _dot(b1[s] - a0[s], da[s]) / ll
        lo = np.clip(np.minimum(t0, t1), 0.0, 1.0)
        hi = np.clip(np.maximum(t0, t1), 0.0, 1.0)
        two = (hi - lo) * np.sqrt(ll) > eps[live][s]
        nn = nl[s]
        pp, ss = [], []
        for tt in (lo, hi):
            p = a0[s] + tt[:, None] * da[s]
            w = np.clip(_dot(p - b0[s], db[s]) / lb[s], 0.0, 1.0)
            q = b0[s] + w[:, None] * db[s]
            h = _dot(q - p, nn)
            pp.append(p + 0.5 * h[:, None] * nn)
            ss.append(h)
        k0 = ss[0] <= mg[s]
        k1 = two & (ss[1] <= mg[s])
        keep = two & (k0 | k1)
        rows = live[s[keep]]
        first = np.where(k0, 0, 1)[keep]
        sp = np.stack(ss, axis=1)[keep]
        pt = np.stack(pp, axis=1)[keep]
        r = np.arange(len(rows))
        points[rows, 0] = pt[r, first]
        sep[rows, 0] = sp[r, first]
        both = (k0 & k1)[keep]
        points[rows, 1] = np.where(both[:, None], pt[:, 1], 0.0)
        sep[rows, 1] = np.where(both, sp[:, 1], np.inf)
        base = _ids(fa.code[s][keep], fb.code[s][keep], 0, ROUTE_SEGMENT, 0)
        ids[rows, 0] = base | first
        ids[rows, 1] = np.where(both, base | 1, 0)
        count[rows] = 1 + both
        done[s[keep]] = True
    # ---- anything else: one point at the witnesses (the exact closest/deepest pair).
    rest = live[~done]
    if len(rest):
        p = 0.5 * (wa[rest] + wb[rest])
        s_ = dist[rest]
        if force_face is not None:
            # Forced triangle face: the shape's deepest point below the triangle's plane.
            ff = force_face[rest]
            nn = normal[rest]
            sup, _ = sa[rest].support(nn)
            sup = sup + side_a.swell[rest, None] * nn
            h = _dot(side_b.tri_normal[rest], sup - side_b.tri[rest, 0])
            s_ = np.where(ff, h, s_)
            p = np.where(ff[:, None], sup - 0.5 * h[:, None] * side_b.tri_normal[rest], p)
            dist[rest] = s_
        keep = s_ <= margin[rest]
        points[rest, 0] = p
        sep[rest, 0] = np.where(keep, s_, np.inf)
        ids[rest, 0] = np.where(keep, _ids(fa.code[~done], fb.code[~done], 0, ROUTE_POINT, 0), 0)
        count[rest] = keep
    return normal, points, sep, ids, count, dist


def collide_curved(table, ids_a, pos_a, rot_a, ids_b, pos_b, rot_b, margin=0.0):
    """narrowphase routine: Manifolds for M pairs where A or B is a cylinder or cone."""
    from .narrowphase import Manifolds
    m = len(ids_a)
    out = Manifolds(m)
    margin = np.broadcast_to(np.asarray(margin, dtype=np.float64), (m,))
    # Everything in A's frame (precision far from the world origin, as gjk.py).
    rat = rot_a.transpose(0, 2, 1)
    rel_rot = np.matmul(rat, rot_b)
    rel_pos = _rotate(rat, pos_b - pos_a)
    eye = np.broadcast_to(np.eye(3), (m, 3, 3))
    side_a = Side(table, ids_a, table.kind[ids_a], eye, np.zeros((m, 3)), table.radius[ids_a])
    side_b = Side(table, ids_b, table.kind[ids_b], rel_rot, rel_pos, table.radius[ids_b])
    normal, points, sep, ids, count, dist = manifolds(side_a, side_b, margin)
    out.normal[:] = _rotate(rot_a, normal)
    out.points[:] = np.matmul(points, rot_a.transpose(0, 2, 1)) + pos_a[:, None]
    out.separation[:] = sep
    out.ids[:] = ids
    out.count[:] = count
    out.distance[:] = dist
    out.axis_kind[:] = AXIS_ROUND
    return out


def curved_triangles(table, ids, t, N, active, margin, tri_index):
    """mesh_contacts routine: cylinder/cone (local frame) vs one-sided triangles t (M, 3, 3)
    facing it with normal N. A normal from an inactive triangle edge or vertex (flat or concave
    shared edge) is replaced by the face normal, as for the other shapes."""
    from .mesh_contacts import _feature_active
    from .mesh_contacts import _ids as tri_ids
    from .narrowphase import Manifolds
    m = len(ids)
    out = Manifolds(m)
    marg = np.broadcast_to(np.asarray(margin, dtype=np.float64), (m,))
    eye = np.broadcast_to(np.eye(3), (m, 3, 3))
    side_a = Side(table, ids, table.kind[ids], eye, np.zeros((m, 3)), np.zeros(m))
    side_b = Side(table, ids, np.full(m, TRIANGLE), eye, np.zeros((m, 3)), np.zeros(m), t, N)
    sa, sb = side_a.support_set(), side_b.support_set()
    scale = table.bound_radius[ids]
    pre = signed_distance(sa, sb, np.zeros(m), np.zeros(m), scale, np.ones(m, dtype=bool))
    n = pre[1]
    face = -_dot(n, N) >= COS_FLAT
    ok = _feature_active(t, n, active, SNAP * scale)
    force = ~face & ~ok
    normal, points, sep, cid, count, dist = manifolds(side_a, side_b, marg, force, pre)
    out.normal[:] = normal
    out.points[:] = points
    out.separation[:] = sep
    used = np.arange(4)[None] < count[:, None]
    # Mesh id layout (triangle in bits 28-58): the low 28 bits carry code and route (0-15),
    # the reference side (16) and the shape's feature code (17-26).
    low = (cid & np.int64(0xFFFF)) | (((cid >> 37) & 1) << 16) | (((cid >> 48) & 0x3FF) << 17)
    out.ids[:] = np.where(used, tri_ids(tri_index, 0, 0, 0, 0)[:, None] | low, 0)
    out.count[:] = count
    out.distance[:] = dist
    out.axis_kind[:] = AXIS_ROUND
    return out


def curved_pair_distance(table, ids_a, pos_a, rot_a, ids_b, pos_b, rot_b):
    """Exact signed distance of M pairs (either shape may be curved; rotation matrices), for
    queries.pair_distance. Returns distance (M,), normal A -> B, world surface points on A and
    B, core overlap (M,)."""
    m = len(ids_a)
    rat = rot_a.transpose(0, 2, 1)
    rel_rot = np.matmul(rat, rot_b)
    rel_pos = _rotate(rat, pos_b - pos_a)
    eye = np.broadcast_to(np.eye(3), (m, 3, 3))
    sa = Side(table, ids_a, table.kind[ids_a], eye, np.zeros((m, 3)), table.radius[ids_a])
    sb = Side(table, ids_b, table.kind[ids_b], rel_rot, rel_pos, table.radius[ids_b])
    scale = np.maximum(table.bound_radius[ids_a], table.bound_radius[ids_b])
    d, n, wa, wb, over = signed_distance(sa.support_set(), sb.support_set(), sa.swell, sb.swell,
                                         scale)
    world = lambda p: _rotate(rot_a, p) + pos_a  # noqa: E731
    return d, _rotate(rot_a, n), world(wa), world(wb), over
