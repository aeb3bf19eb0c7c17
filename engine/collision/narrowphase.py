"""Narrowphase: contact manifolds for M candidate pairs of shapes, all pairs at once.

``collide`` groups the pairs by kind (a handful of masks, never a loop over pairs), puts the
rounder shape first (sphere < capsule < polytope) so each group has one orientation, runs the
group's routine and flips the normals of the swapped pairs back:

    polytope-polytope   SAT (sat.py) + face clipping / edge-edge point (clip.py), compiled
                        (sat_kernels.py, clip_kernels.py); an edge axis between nearly
                        parallel faces clips those faces along the axis
    sphere/capsule pairs closest points of the core segments (a sphere is a zero-length one);
                        near-parallel capsules get a second point
    sphere/capsule vs polytope  cores apart: GJK on the cores (exact distance and normal), and a
                        capsule whose normal is a face normal is clipped to that face (2
                        points when lying on it); cores overlapping: SAT of the point/segment
                        against the polytope (exact), face axes clipped, edge axes 1 point.

Pairs of the numpy routines are processed per group in chunks of CHUNK pairs (cache-sized
temporaries); polytope pairs run compiled, all at once, and a batch of polytope pairs only
(box and hull scenes) goes straight to collide_polytopes.

Output: ``Manifolds`` of fixed width 4 (see engine/README.md).
"""
import numpy as np

from ..core import quat
from ..core.errors import EngineError
from ..core.kinds import ShapeKind
from ..core.vec import cross
from ..shapes.curved import is_curved
from . import clip, clip_kernels
from .clip import ID_ROUND, SNAP, segment_closest, tangent_basis
from .curved_contacts import collide_curved
from .gjk import gjk
from .sat import ABS_TOL, KIND_NONE, PARALLEL_SIN, REL_TOL, polytope_sat

# Points per manifold: four span any contact polygon (Box2D, Bullet, Jolt keep four too).
WIDTH = 4
# Pairs per batch: keeps the per-pair temporaries in cache.
CHUNK = 2048
# Order used to normalise pairs: the rounder shape becomes A.
_RANK = np.zeros(8, dtype=np.int64)
_RANK[ShapeKind.SPHERE], _RANK[ShapeKind.CAPSULE], _RANK[ShapeKind.POLYTOPE] = 0, 1, 2
_RANK[ShapeKind.CYLINDER] = _RANK[ShapeKind.CONE] = 3   # curved pairs: curved_contacts, any order
_POLYTOPE = int(ShapeKind.POLYTOPE)   # (an int: numpy probes an enum member's dunders)

# Axis kinds reported for the debug overlays (SAT kinds 0-2 plus the analytic routes).
AXIS_ROUND = 3       # closest points of the cores (sphere/capsule pairs, or GJK)
AXIS_CORE_FACE = 4   # round shape's core against a polytope face (axis_index = (face, -1))
AXIS_CORE_EDGE = 5   # capsule segment against a polytope edge (axis_index = (-1, edge))

# Capsules closer to parallel than this (sine of the angle) get 2 points (each with its own
# honest separation), so a capsule lying on another does not rock on a single point.
CAPSULE_PARALLEL_SIN = 0.02
# A capsule whose GJK normal is within this angle (1 - cos) of a polytope face normal is
# clipped against that face: 2 points when it lies along the face.
FACE_ALIGN = 1e-4


class Manifolds:
    """Fixed-width (4) contact manifolds for M pairs; see engine/README.md.

    normal (M, 3) unit A -> B; points (M, 4, 3) world, midway between the surfaces; separation
    (M, 4) (< 0 penetration, +inf in unused slots); ids (M, 4) int64 feature ids stable under
    small motions (for warm starting); count (M,) used slots (0: nothing within margin).
    Debug: axis_kind (M,) (sat.FACE_A / FACE_B / EDGE or AXIS_*), axis_index (M, 2), distance
    (M,) the pair's signed distance (exact, except a SAT lower bound for polytope pairs apart by
    more than the margin), simplex (M, 4, 3) / simplex_size (M,) GJK's final simplex on B - A
    (world orientation) where GJK ran, else size 0.
    """
    __slots__ = (
        "axis_index",
        "axis_kind",
        "count",
        "distance",
        "ids",
        "normal",
        "points",
        "separation",
        "simplex",
        "simplex_size",
    )

    def __init__(self, m):
        self.normal = np.zeros((m, 3))
        self.normal[:, 2] = 1.0
        self.points = np.zeros((m, WIDTH, 3))
        self.separation = np.full((m, WIDTH), np.inf)
        self.ids = np.zeros((m, WIDTH), dtype=np.int64)
        self.count = np.zeros(m, dtype=np.int64)
        self.axis_kind = np.full(m, KIND_NONE, dtype=np.int8)
        self.axis_index = np.full((m, 2), -1, dtype=np.int64)
        self.distance = np.full(m, np.inf)
        self.simplex = np.zeros((m, 4, 3))
        self.simplex_size = np.zeros(m, dtype=np.int64)

    def __len__(self):
        return len(self.count)

    def _put(self, sel, part):
        for name in self.__slots__:
            getattr(self, name)[sel] = getattr(part, name)


def _rotate(rot, v):
    return np.matmul(rot, v[..., None])[..., 0]


# Test hook: False skips the face clip (the fallbacks then answer; tests/test_manifold.py).
CLIP_FACES = True


def collide_polytopes(table, ids_a, pos_a, rot_a, ids_b, pos_b, rot_b, margin=0.0):
    """Manifolds for M polytope-polytope pairs (rotation matrices): the SAT (sat.py), then
    every pair's manifold in one compiled call (clip_kernels.manifolds):

    - face axes clip the reference face against the incident face (clip.py);
    - edge axes give one point at the closest points of the two edges, or, between nearly
      parallel faces, those faces clipped along the axis (2-4 points, the deepest at the SAT
      depth);
    - a face axis whose clipping found nothing (the face bias kept a face axis where an edge
      pair is the real contact) takes the edge route, but only if the SAT's best edge pair is
      within the face bias of the pair's separation: the best of the edges its pruning kept
      can be a useless axis (metres deep) when the face axis is far better;
    - last resort (not seen in tests, kept so an overlap can never lose its contact): one point
      at B's deepest vertex along the normal, with the support gap along it as separation.
    """
    m = len(ids_a)
    out = Manifolds(m)
    margin = np.ascontiguousarray(np.broadcast_to(np.asarray(margin, dtype=np.float64), (m,)))
    sat = polytope_sat(table, ids_a, pos_a, rot_a, ids_b, pos_b, rot_b, margin=margin)
    out.normal[:] = sat.normal
    out.axis_kind[:] = sat.kind
    out.axis_index[:] = sat.index
    out.distance[:] = sat.separation
    c = np.ascontiguousarray
    clip_kernels.manifolds(
        clip_kernels.table_arrays(table), c(ids_a, dtype=np.int64), c(ids_b, dtype=np.int64),
        c(pos_a), c(rot_a), c(pos_b), c(rot_b), c(sat.rot), c(sat.trans), margin,
        c(sat.separation), c(sat.kind), c(sat.index), c(sat.edge), c(sat.edge_index),
        c(sat.edge_axis), _CONSTS, CLIP_FACES, out.normal, out.axis_kind, out.axis_index,
        out.points, out.separation, out.ids, out.count)
    return out


# clip_kernels.manifolds' constants: the edge-axis clip's thresholds and the face bias.
_CONSTS = np.array([clip.EDGE_CLIP_COS, clip.EDGE_INC_COS, REL_TOL, ABS_TOL])


def _dot(a, b):
    return np.einsum("...i,...i->...", a, b)


def _cores(table, ids, pos, rot):
    """Core segments (p0, p1) in world (a sphere's padded second point repeats its centre)."""
    pts = np.matmul(table.points[ids, :2], rot.transpose(0, 2, 1)) + pos[:, None]
    # A table of spheres only is one point wide: the segment's two ends are that point.
    return pts[:, 0], pts[:, -1]


def _perpendicular(axis, hint):
    """Unit vector along hint with its component along axis removed, or any unit normal to axis."""
    ax2 = _dot(axis, axis)
    h = hint - (_dot(hint, axis) / np.where(ax2 > 0, ax2, 1.0))[:, None] * axis
    hn = np.sqrt(_dot(h, h))
    u, _ = tangent_basis(axis / np.maximum(np.sqrt(ax2), 1e-300)[:, None])
    u = np.where((ax2 > 0)[:, None], u, np.array([0.0, 0.0, 1.0]))
    return np.where((hn > 1e-12 * np.maximum(np.sqrt(_dot(hint, hint)), 1e-300))[:, None],
                    h / np.maximum(hn, 1e-300)[:, None], u)


def collide_round(table, ids_a, pos_a, rot_a, ids_b, pos_b, rot_b, margin=0.0):
    """Sphere/capsule pairs: closest points of the core segments (a sphere is a zero-length
    segment), one point, or two when two capsules are near-parallel and overlap along their axes."""
    m = len(ids_a)
    out = Manifolds(m)
    margin = np.broadcast_to(np.asarray(margin, dtype=np.float64), (m,))
    ra, rb = table.radius[ids_a], table.radius[ids_b]
    p0, p1 = _cores(table, ids_a, pos_a, rot_a)
    q0, q1 = _cores(table, ids_b, pos_b, rot_b)
    _, _, cp, cq = segment_closest(p0, p1, q0, q1)
    d1, d2 = p1 - p0, q1 - q0
    gap = cq - cp
    dist = np.sqrt(_dot(gap, gap))
    scale = np.minimum(table.bound_radius[ids_a], table.bound_radius[ids_b])
    # Cores touching: no direction from the closest points; take the centres' offset made
    # normal to A's axis (or B's), else any direction normal to it.
    tiny = dist <= 1e-12 * scale
    centre = 0.5 * (q0 + q1) - 0.5 * (p0 + p1)
    axis = np.where((_dot(d1, d1) > 0)[:, None], d1, d2)
    fallback = _perpendicular(axis, centre)
    normal = np.where(tiny[:, None], fallback, gap / np.maximum(dist, 1e-300)[:, None])
    sep = dist - ra - rb
    out.normal[:] = normal
    out.distance[:] = sep
    out.axis_kind[:] = AXIS_ROUND
    mid = 0.5 * (cp + ra[:, None] * normal + cq - rb[:, None] * normal)
    out.points[:, 0] = mid
    out.separation[:, 0] = sep
    out.ids[:, 0] = np.int64(ID_ROUND) << 59
    out.count[:] = sep <= margin

    # Near-parallel capsules: a second point at the far end of the stretch where the axes run
    # side by side (B's ends projected on A's axis give it), so a capsule lying on another does
    # not rock on one point. The first point stays the exact closest pair; the second gets its
    # own true core distance (never deeper than the truth).
    l1, l2 = _dot(d1, d1), _dot(d2, d2)
    cr = cross(d1, d2)
    par = (l1 > 0) & (l2 > 0) & (_dot(cr, cr) <= CAPSULE_PARALLEL_SIN ** 2 * l1 * l2)
    sel = np.nonzero(par)[0]
    if len(sel):
        a0, dd1, b0, db = p0[sel], d1[sel], q0[sel], d2[sel]
        ll = l1[sel]
        length = np.sqrt(ll)
        t0 = _dot(b0 - a0, dd1) / ll
        t1 = _dot(b0 + db - a0, dd1) / ll
        lo = np.clip(np.minimum(t0, t1), 0.0, 1.0)
        hi = np.clip(np.maximum(t0, t1), 0.0, 1.0)
        sc = _dot(cp[sel] - a0, dd1) / ll              # the closest point's place on A
        far_lo = sc - lo > hi - sc
        tf = np.where(far_lo, lo, hi)
        snap = SNAP * scale[sel]
        two = np.abs(tf - sc) * length > snap
        pa_ = a0 + tf[:, None] * dd1
        u = np.clip(_dot(pa_ - b0, db) / l2[sel], 0.0, 1.0)
        qb_ = b0 + u[:, None] * db
        s2 = np.sqrt(_dot(qb_ - pa_, qb_ - pa_)) - ra[sel] - rb[sel]
        n = normal[sel]
        keep = two & (s2 <= margin[sel]) & (sep[sel] <= margin[sel])
        rows = sel[keep]
        # Ids by place: 1 = low end, 2 = high end, 3 = in between (the axes cross).
        at_lo = np.abs(sc - lo) * length <= snap
        at_hi = np.abs(sc - hi) * length <= snap
        base = np.int64(ID_ROUND) << 59
        out.ids[rows, 0] = base | np.where(at_lo, 1, np.where(at_hi, 2, 3))[keep]
        out.points[rows, 1] = (pa_ + (ra[sel] + 0.5 * s2)[:, None] * n)[keep]
        out.separation[rows, 1] = s2[keep]
        out.ids[rows, 1] = base | np.where(far_lo, 1, 2)[keep]
        out.count[rows] = 2
    return out


def _clip_segment_to_face(table, ids, face, p0, p1):
    """Cyrus-Beck: the part [t0, t1] of segments p0 -> p1 (shape frame) inside the side planes
    of a face of shape ids. Returns (t0, t1, ok); ok False where nothing is inside."""
    m = len(ids)
    rows = np.arange(m)[:, None]
    size = table.patch_sizes[ids, face]     # the flat side around the face (engine.collision.patches)
    width = int(size.max())
    loop = table.patch_loops[ids, face, :width]
    mask = np.arange(width) < size[:, None]
    loop = np.where(mask, loop, loop[:, :1])
    nxt = (np.arange(width)[None, :] + 1) % size[:, None]
    v = table.points[ids[:, None], loop]
    n = table.planes[ids, face, :3]
    side = cross(v[rows, nxt] - v, n[:, None])
    off = _dot(side, v)
    e0 = np.where(mask, _dot(side, p0[:, None]) - off, -1.0)
    e1 = np.where(mask, _dot(side, p1[:, None]) - off, -1.0)
    den = e0 - e1
    t = e0 / np.where(den != 0, den, 1.0)
    enter = (e0 > 0) & (e1 <= 0)
    leave = (e1 > 0) & (e0 <= 0)
    t0 = np.max(np.where(enter, t, 0.0), axis=1)
    t1 = np.min(np.where(leave, t, 1.0), axis=1)
    ok = ~np.any((e0 > 0) & (e1 > 0), axis=1) & (t0 <= t1)
    return t0, t1, ok


def segment_polytope_sat(table, ids, p0, p1):
    """SAT of core segments (points when p0 == p1) against polytopes, in the polytope's frame.

    Axes: the polytope's faces, and (segment x edge) for edges whose Gauss-map arc crosses the
    great circle normal to the segment (the segment's Gauss map). Exact for overlapping cores.
    Returns face sep, face, edge sep (-inf if none), edge, edge axis (A -> B, polytope frame).
    """
    m = len(ids)
    rows = np.arange(m)
    nf = int(table.nfaces[ids].max())
    ne = int(table.nedges[ids].max())
    planes = table.planes[ids, :nf]
    s0 = np.matmul(planes[:, :, :3], p0[:, :, None])[:, :, 0]
    s1 = np.matmul(planes[:, :, :3], p1[:, :, None])[:, :, 0]
    sf = np.minimum(s0, s1) - planes[:, :, 3]
    face = np.argmax(sf, axis=1)
    sep_f = sf[rows, face]
    seg = p1 - p0
    dirs = table.edge_dirs[ids, :ne]
    nrm = table.edge_normals[ids, :ne]
    c1 = np.matmul(nrm[:, :, 0], seg[:, :, None])[:, :, 0]
    c2 = np.matmul(nrm[:, :, 1], seg[:, :, None])[:, :, 0]
    u = cross(seg[:, None], dirs)
    ul = np.sqrt(_dot(u, u))
    seglen = np.sqrt(_dot(seg, seg))
    ok = (c1 * c2 < 0) & (ul > PARALLEL_SIN * seglen[:, None])
    u = u / np.where(ok, ul, 1.0)[:, :, None]
    # Orient u from A into the polytope: -u lies between the edge's two face normals.
    flip = _dot(u, nrm[:, :, 0] + nrm[:, :, 1]) > 0
    u = np.where(flip[:, :, None], -u, u)
    q = table.points[ids[:, None], table.edges[ids, :ne, 0]]
    se = np.where(ok, _dot(u, q - p0[:, None]), -np.inf)
    edge = np.argmax(se, axis=1)
    return sep_f, face, se[rows, edge], edge, u[rows, edge]


def collide_round_polytope(table, ids_a, pos_a, rot_a, ids_b, pos_b, rot_b, margin=0.0):
    """Sphere or capsule A against polytope B.

    Cores apart: GJK on the cores gives the exact distance and normal (1 point); if that normal
    is a face normal of B and A is a capsule, the segment is clipped to the face (2 points when
    it lies along it). Cores overlapping: SAT of the segment (or point) against B, exact; face
    axes clip the segment (1-2 points), edge axes give the closest points of segment and edge.
    """
    m = len(ids_a)
    out = Manifolds(m)
    margin = np.broadcast_to(np.asarray(margin, dtype=np.float64), (m,))
    rad = table.radius[ids_a]
    va = 2
    vb = int(table.npoints[ids_b].max())
    g = gjk(table.points[ids_a, :va], rad, pos_a, rot_a, table.points[ids_b, :vb],
            np.zeros(m), pos_b, rot_b)
    out.simplex[:] = g.simplex
    out.simplex_size[:] = g.simplex_size
    # Everything below in B's frame.
    rbt = rot_b.transpose(0, 2, 1)
    w0, w1 = _cores(table, ids_a, pos_a, rot_a)
    p0 = np.matmul(rbt, (w0 - pos_b)[:, :, None])[:, :, 0]
    p1 = np.matmul(rbt, (w1 - pos_b)[:, :, None])[:, :, 0]
    scale = np.minimum(table.bound_radius[ids_a], table.bound_radius[ids_b])
    nf = int(table.nfaces[ids_b].max())
    rows = np.arange(m)

    # ---- cores apart: GJK answer, then a face check for 2-point capsule contacts.
    apart = ~g.overlap
    out.normal[:] = np.where(apart[:, None], g.normal, out.normal)
    out.distance[:] = np.where(apart, g.distance, 0.0)
    out.axis_kind[:] = AXIS_ROUND
    out.points[:, 0] = 0.5 * (g.point_a + g.point_b)
    out.separation[:, 0] = g.distance
    out.ids[:, 0] = np.int64(ID_ROUND) << 59
    out.count[:] = apart & (g.distance <= margin)
    n_loc = np.matmul(rbt, g.normal[:, :, None])[:, :, 0]
    align = np.matmul(table.planes[ids_b, :nf, :3], n_loc[:, :, None])[:, :, 0]
    face_g = np.argmin(align, axis=1)
    seg = p1 - p0
    is_cap = _dot(seg, seg) > (SNAP * scale) ** 2
    use_face = apart & is_cap & (align[rows, face_g] < -1.0 + FACE_ALIGN) & (g.distance <= margin)

    # ---- cores overlapping: SAT of the segment against B.
    over = np.nonzero(g.overlap)[0]
    face = face_g.copy()
    if len(over):
        sf, fo, se, eo, axis = segment_polytope_sat(table, ids_b[over], p0[over], p1[over])
        s_edge = np.isfinite(se) & (se > sf + REL_TOL * np.abs(sf) + ABS_TOL * scale[over])
        out.distance[over] = np.maximum(sf, se) - rad[over]
        # Edge axis: closest points of the segment and the edge, one point.
        ei = over[s_edge]
        if len(ei):
            e = table.edges[ids_b[ei], eo[s_edge]]
            ea = table.points[ids_b[ei], e[:, 0]]
            eb = table.points[ids_b[ei], e[:, 1]]
            _, _, cp, cq = segment_closest(p0[ei], p1[ei], ea, eb)
            u = axis[s_edge]
            s = se[s_edge] - rad[ei]
            # Surface of A along the normal, surface of B at the edge point; midway.
            mid = 0.5 * (cp + rad[ei, None] * u + cq)
            out.points[ei, 0] = np.matmul(rot_b[ei], mid[:, :, None])[:, :, 0] + pos_b[ei]
            out.separation[ei, 0] = s
            out.normal[ei] = np.matmul(rot_b[ei], u[:, :, None])[:, :, 0]
            out.count[ei] = s <= margin[ei]
            out.axis_kind[ei] = AXIS_CORE_EDGE
            out.axis_index[ei] = np.stack((np.full(len(ei), -1), eo[s_edge]), axis=1)
            out.ids[ei, 0] = (np.int64(ID_ROUND) << 59) | (np.int64(2) << 56) | eo[s_edge]
        face[over] = fo
        use_face[over[~s_edge]] = True

    # ---- face contacts: clip the core segment to the face's side planes.
    fi = np.nonzero(use_face)[0]
    if len(fi):
        ib = ids_b[fi]
        f = face[fi]
        a0, a1 = p0[fi], p1[fi]
        t0, t1, ok = _clip_segment_to_face(table, ib, f, a0, a1)
        plane = table.planes[ib, f]
        n = plane[:, :3]
        h0 = _dot(n, a0) - plane[:, 3]
        h1 = _dot(n, a1) - plane[:, 3]
        # Nothing inside the face's prism (a corner case of the bias): the deepest end.
        deep = np.where(h1 < h0, 1.0, 0.0)
        t0 = np.where(ok, t0, deep)
        t1 = np.where(ok, t1, deep)
        r = rad[fi]
        world_n = -np.matmul(rot_b[fi], n[:, :, None])[:, :, 0]
        seglen = np.sqrt(_dot(a1 - a0, a1 - a0))
        two = (t1 - t0) * seglen > SNAP * scale[fi]
        pts, seps = [], []
        for t in (t0, t1):
            p = a0 + t[:, None] * (a1 - a0)
            h = h0 + t * (h1 - h0)
            s = h - r
            # A's surface is r below the core along n; B's surface is the face plane: midway.
            mid = p - (0.5 * (h + r))[:, None] * n
            pts.append(np.matmul(rot_b[fi], mid[:, :, None])[:, :, 0] + pos_b[fi])
            seps.append(s)
        k0 = seps[0] <= margin[fi]
        k1 = two & (seps[1] <= margin[fi])
        base = (np.int64(ID_ROUND) << 59) | (np.int64(1) << 56) | (f.astype(np.int64) << 8)
        out.points[fi, 0] = np.where(k0[:, None], pts[0], pts[1])
        out.separation[fi, 0] = np.where(k0, seps[0], seps[1])
        out.ids[fi, 0] = base | np.where(k0, 0, 1)
        both = k0 & k1
        out.points[fi, 1] = np.where(both[:, None], pts[1], 0.0)
        out.separation[fi, 1] = np.where(both, seps[1], np.inf)
        out.ids[fi, 1] = np.where(both, base | 1, 0)
        out.count[fi] = k0.astype(np.int64) + k1
        out.normal[fi] = world_n
        out.axis_kind[fi] = AXIS_CORE_FACE
        out.axis_index[fi] = np.stack((f, np.full(len(fi), -1)), axis=1)
    return out


def collide(table, ids_a, pos_a, quat_a, ids_b, pos_b, quat_b, margin=0.0):
    """Contact manifolds for M candidate pairs of shape ids of ``table`` (a ShapeTable).

    Poses are world positions (M, 3) and unit quaternions (M, 4) (w, x, y, z). ``margin``
    (scalar or per pair (M,)): points with separation <= margin are reported (speculative
    contacts).
    Returns a Manifolds of M rows, normals from A to B whatever the order of the kinds.
    """
    ids_a = np.asarray(ids_a, dtype=np.int64).reshape(-1)
    ids_b = np.asarray(ids_b, dtype=np.int64).reshape(-1)
    m = len(ids_a)
    pos_a = np.asarray(pos_a, dtype=np.float64).reshape(m, 3)
    pos_b = np.asarray(pos_b, dtype=np.float64).reshape(m, 3)
    rot_a = quat.to_matrix(quat.normalize(np.asarray(quat_a, dtype=np.float64).reshape(m, 4)))
    rot_b = quat.to_matrix(quat.normalize(np.asarray(quat_b, dtype=np.float64).reshape(m, 4)))
    if m == 0:
        return Manifolds(0)
    margin = np.broadcast_to(np.asarray(margin, dtype=np.float64), (m,))
    if np.any(np.isnan(margin)):
        raise EngineError("collide: margin is NaN; give a distance in metres (0 for touching only)")
    kind_a = table.kind[ids_a]
    kind_b = table.kind[ids_b]
    if (kind_a == _POLYTOPE).all() and (kind_b == _POLYTOPE).all():
        return collide_polytopes(table, ids_a, pos_a, rot_a, ids_b, pos_b, rot_b, margin)
    out = Manifolds(m)
    swap = _RANK[kind_a] > _RANK[kind_b]
    sw = swap[:, None]
    ia = np.where(swap, ids_b, ids_a)
    ib = np.where(swap, ids_a, ids_b)
    pa = np.where(sw, pos_b, pos_a)
    pb = np.where(sw, pos_a, pos_b)
    ra = np.where(sw[:, :, None], rot_b, rot_a)
    rb = np.where(sw[:, :, None], rot_a, rot_b)
    ka = np.where(swap, kind_b, kind_a)
    kb = np.where(swap, kind_a, kind_b)

    # Three groups after normalisation: round-round, round-polytope, polytope-polytope; and
    # pairs with a cylinder or cone (curved_contacts.py).
    curved = is_curved(ka) | is_curved(kb)
    round_a = (ka != _POLYTOPE) & ~curved
    round_b = (kb != _POLYTOPE) & ~curved
    groups = ((round_a & round_b, collide_round),
              (round_a & ~round_b & ~curved, collide_round_polytope),
              (~round_a & ~round_b & ~curved, collide_polytopes),
              (curved, collide_curved))
    for mask, routine in groups:
        idx = np.nonzero(mask)[0]
        # Chunks of CHUNK pairs keep the temporaries in cache (10k pairs cost 10x 1k, not more).
        step = len(idx) if routine is collide_polytopes else CHUNK
        for start in range(0, len(idx), max(step, 1)):
            sel = idx[start:start + step]
            part = routine(table, ia[sel], pa[sel], ra[sel], ib[sel], pb[sel], rb[sel], margin[sel])
            out._put(sel, part)
    out.normal[swap] *= -1.0
    out.simplex[swap] *= -1.0  # GJK's simplex lives on B - A
    # Unused slots: +inf separation, zero id and point (routines may leave scratch there).
    unused = np.arange(WIDTH)[None, :] >= out.count[:, None]
    out.separation[unused] = np.inf
    out.ids[unused] = 0
    out.points[unused] = 0.0
    return out
