"""Public single-pair queries: distance, intersect, contact_manifold.

Each is a batch of one through the batched code (``pair_distance`` here, narrowphase.collide),
so the public answers are exactly what the simulation sees. Poses are a position (3,) and a
unit quaternion (w, x, y, z).

Signed distance (``distance``):
- cores apart (the usual case): GJK on the cores, radii subtracted: exact;
- cores overlapping, two polytopes: SAT, exact for polytopes (the best axis is a face of the
  Minkowski difference), witness points from the axis' supporting features;
- cores overlapping, sphere/capsule against a polytope: SAT of the point/segment core against the
  polytope (also exact: the core is a degenerate polytope), plus the radius;
- cores overlapping, sphere/capsule pairs: closest points of the core segments (analytic).
EPA is not needed on any of these paths; it stays available in engine.collision.epa for general cores.
"""
import numpy as np

from ..core import quat as quatlib
from ..core.errors import EngineError
from ..core.kinds import ShapeKind
from ..shapes.curved import is_curved
from ..shapes.primitives import Shape
from .clip import segment_closest
from .curved_contacts import curved_pair_distance
from .gjk import gjk, gjk_intersect
from .narrowphase import _RANK, _perpendicular, collide, segment_polytope_sat
from .sat import EDGE, FACE_A, polytope_sat
from .shape_table import ShapeTable

__all__ = [
    "ContactManifold",
    "DistanceResult",
    "contact_manifold",
    "distance",
    "intersect",
    "pair_distance",
]

METHOD_GJK, METHOD_SAT, METHOD_ANALYTIC = "gjk", "sat", "analytic"


class DistanceResult:
    """distance (float, > 0 gap, < 0 penetration depth), point_a / point_b (3,) world points on
    the two surfaces with point_b - point_a = distance * normal, normal (3,) unit A -> B.
    Debug: simplex (k, 3) GJK's final simplex on B - A (world orientation), simplex_a / simplex_b
    its support points on A and B (world), method ("gjk", "sat" or "analytic"), core_overlap."""

    distance: float
    normal: np.ndarray
    method: str

    def __init__(self, **fields):
        self.__dict__.update(fields)

    def __repr__(self):
        return (f"DistanceResult(distance={self.distance:.9g}, normal={np.round(self.normal, 6).tolist()}, "
                f"method={self.method!r})")


class ContactManifold:
    """normal (3,) unit A -> B; points (k, 3) world, midway between the surfaces; separations
    (k,) (< 0 penetration); ids (k,) int64 feature ids; k <= 4. Debug: axis_kind, axis_index."""

    normal: np.ndarray
    points: np.ndarray

    def __init__(self, **fields):
        self.__dict__.update(fields)

    def __len__(self):
        return len(self.points)

    def __repr__(self):
        return f"ContactManifold({len(self.points)} points, normal={np.round(self.normal, 6).tolist()})"


def _dot(a, b):
    return np.einsum("...i,...i->...", a, b)


def _rotate(rot, v):
    return np.matmul(rot, v[..., None])[..., 0]


def _poly_poly(table, ids_a, pos_a, rot_a, ids_b, pos_b, rot_b):
    """Exact SAT depth and witness points of overlapping polytope pairs."""
    # margin 0: only overlapping pairs come here, and it lets SAT prune far edges (exactly).
    sat = polytope_sat(table, ids_a, pos_a, rot_a, ids_b, pos_b, rot_b, margin=0.0, bias=False)
    dist, n = sat.separation, sat.normal
    m = len(ids_a)
    rows = np.arange(m)
    va = int(table.npoints[ids_a].max())
    vb = int(table.npoints[ids_b].max())
    wa = np.matmul(table.points[ids_a, :va], rot_a.transpose(0, 2, 1)) + pos_a[:, None]
    wb = np.matmul(table.points[ids_b, :vb], rot_b.transpose(0, 2, 1)) + pos_b[:, None]
    # Face of A: B's deepest vertex, and its projection onto A's face. Face of B: the reverse.
    vb_deep = wb[rows, np.argmin(np.matmul(wb, n[:, :, None])[:, :, 0], axis=1)]
    va_deep = wa[rows, np.argmax(np.matmul(wa, n[:, :, None])[:, :, 0], axis=1)]
    pa = np.where((sat.kind == FACE_A)[:, None], vb_deep - dist[:, None] * n, va_deep)
    pb = np.where((sat.kind == FACE_A)[:, None], vb_deep, va_deep + dist[:, None] * n)
    e = np.nonzero(sat.kind == EDGE)[0]
    if len(e):
        ea = table.edges[ids_a[e], sat.index[e, 0]]
        eb = table.edges[ids_b[e], sat.index[e, 1]]
        r = np.arange(len(e))
        _, _, ca, cb = segment_closest(wa[e][r, ea[:, 0]], wa[e][r, ea[:, 1]],
                                       wb[e][r, eb[:, 0]], wb[e][r, eb[:, 1]])
        pa[e], pb[e] = ca, cb
    return dist, n, pa, pb


def _round_poly(table, ids_a, pos_a, rot_a, ids_b, pos_b, rot_b):
    """Exact depth and witness points of a sphere/capsule core overlapping a polytope."""
    rbt = rot_b.transpose(0, 2, 1)
    core = np.matmul(table.points[ids_a, :2], rot_a.transpose(0, 2, 1)) + pos_a[:, None]
    p0 = _rotate(rbt, core[:, 0] - pos_b)
    p1 = _rotate(rbt, core[:, 1] - pos_b)
    sf, face, se, edge, axis = segment_polytope_sat(table, ids_b, p0, p1)
    rad = table.radius[ids_a]
    use_e = se > sf
    plane = table.planes[ids_b, face]
    h0 = _dot(plane[:, :3], p0) - plane[:, 3]
    h1 = _dot(plane[:, :3], p1) - plane[:, 3]
    deep = np.where((h1 < h0)[:, None], p1, p0)
    nf = plane[:, :3]
    # Face: the deepest core end and its projection on the face; normal A -> B is -n_face.
    pa = deep - rad[:, None] * nf
    pb = deep - np.minimum(h0, h1)[:, None] * nf
    n = -nf
    e = np.nonzero(use_e)[0]
    if len(e):
        ed = table.edges[ids_b[e], edge[e]]
        _, _, cp, cq = segment_closest(p0[e], p1[e], table.points[ids_b[e], ed[:, 0]],
                                       table.points[ids_b[e], ed[:, 1]])
        pa[e] = cp + rad[e, None] * axis[e]
        pb[e] = cq
        n[e] = axis[e]
    dist = np.maximum(sf, se) - rad
    to_world = lambda v: _rotate(rot_b, v)  # noqa: E731
    return dist, to_world(n), to_world(pa) + pos_b, to_world(pb) + pos_b


def _round_round(table, ids_a, pos_a, rot_a, ids_b, pos_b, rot_b):
    """Sphere/capsule pairs whose cores touch: depth = sum of radii minus the core distance."""
    ca = np.matmul(table.points[ids_a, :2], rot_a.transpose(0, 2, 1)) + pos_a[:, None]
    cb = np.matmul(table.points[ids_b, :2], rot_b.transpose(0, 2, 1)) + pos_b[:, None]
    _, _, cp, cq = segment_closest(ca[:, 0], ca[:, 1], cb[:, 0], cb[:, 1])
    gap = cq - cp
    dist = np.sqrt(_dot(gap, gap))
    d1 = ca[:, 1] - ca[:, 0]
    axis = np.where((_dot(d1, d1) > 0)[:, None], d1, cb[:, 1] - cb[:, 0])
    centre = cb.mean(axis=1) - ca.mean(axis=1)
    n = np.where((dist > 0)[:, None], gap / np.maximum(dist, 1e-300)[:, None],
                 _perpendicular(axis, centre))
    ra, rb = table.radius[ids_a], table.radius[ids_b]
    return dist - ra - rb, n, cp + ra[:, None] * n, cq - rb[:, None] * n


def pair_distance(table, ids_a, pos_a, rot_a, ids_b, pos_b, rot_b):
    """Batched exact signed distance of M pairs (rotation matrices). Returns a dict of arrays:
    distance, normal, point_a, point_b, method (M,) str, core_overlap, simplex, simplex_a,
    simplex_b, simplex_size."""
    ids_a = np.asarray(ids_a, dtype=np.int64)
    ids_b = np.asarray(ids_b, dtype=np.int64)
    m = len(ids_a)
    va = int(table.npoints[ids_a].max())
    vb = int(table.npoints[ids_b].max())
    g = gjk(table.points[ids_a, :va], table.radius[ids_a], pos_a, rot_a,
            table.points[ids_b, :vb], table.radius[ids_b], pos_b, rot_b)
    out = dict(distance=g.distance.copy(), normal=g.normal.copy(), point_a=g.point_a.copy(),
               point_b=g.point_b.copy(), method=np.full(m, METHOD_GJK, dtype=object),
               core_overlap=g.overlap.copy(), simplex=g.simplex, simplex_a=g.simplex_a,
               simplex_b=g.simplex_b, simplex_size=g.simplex_size)
    # Cylinders and cones: GJK/EPA through their analytic supports (curved_contacts.py).
    curved = is_curved(table.kind[ids_a]) | is_curved(table.kind[ids_b])
    if curved.any():
        c = np.flatnonzero(curved)
        d, n, p_a, p_b, ov = curved_pair_distance(table, ids_a[c], pos_a[c], rot_a[c], ids_b[c],
                                                  pos_b[c], rot_b[c])
        out["distance"][c], out["normal"][c], out["point_a"][c], out["point_b"][c] = d, n, p_a, p_b
        out["core_overlap"][c] = ov
        out["method"][c] = np.where(ov, "epa", METHOD_GJK)
        out["simplex_size"][c] = 0
    over = np.nonzero(g.overlap & ~curved)[0]
    if not len(over):
        return out
    # Overlapping cores: order each pair rounder-first, as collide() does.
    ka, kb = table.kind[ids_a[over]], table.kind[ids_b[over]]
    swap = _RANK[ka] > _RANK[kb]
    sw = swap[:, None]
    ia = np.where(swap, ids_b[over], ids_a[over])
    ib = np.where(swap, ids_a[over], ids_b[over])
    pa = np.where(sw, pos_b[over], pos_a[over])
    pb = np.where(sw, pos_a[over], pos_b[over])
    ra = np.where(sw[:, :, None], rot_b[over], rot_a[over])
    rb = np.where(sw[:, :, None], rot_a[over], rot_b[over])
    round_a = table.kind[ia] != ShapeKind.POLYTOPE
    round_b = table.kind[ib] != ShapeKind.POLYTOPE
    for mask, fn, method in ((~round_a & ~round_b, _poly_poly, METHOD_SAT),
                             (round_a & ~round_b, _round_poly, METHOD_SAT),
                             (round_a & round_b, _round_round, METHOD_ANALYTIC)):
        sel = np.nonzero(mask)[0]
        if not len(sel):
            continue
        d, n, p_a, p_b = fn(table, ia[sel], pa[sel], ra[sel], ib[sel], pb[sel], rb[sel])
        s = swap[sel][:, None]
        rows = over[sel]
        out["distance"][rows] = d
        out["normal"][rows] = np.where(s, -n, n)
        out["point_a"][rows] = np.where(s, p_b, p_a)
        out["point_b"][rows] = np.where(s, p_a, p_b)
        out["method"][rows] = method
    return out


# --------------------------------------------------------------------------- single pairs

def _check_pose(pos, q, name):
    p = np.asarray(pos, dtype=np.float64)
    if p.shape != (3,) or not np.all(np.isfinite(p)):
        raise EngineError(f"{name} position must be 3 finite numbers (x, y, z), got {pos!r}")
    qq = np.asarray(q, dtype=np.float64)
    if qq.shape != (4,) or not np.all(np.isfinite(qq)):
        raise EngineError(f"{name} rotation must be a quaternion of 4 finite numbers (w, x, y, z), got {q!r}")
    norm = np.linalg.norm(qq)
    if norm < 1e-12:
        raise EngineError(f"{name} rotation quaternion {q!r} has zero length; "
                          "use (1, 0, 0, 0) for no rotation")
    return p, qq / norm


def _one(shape_a, pos_a, quat_a, shape_b, pos_b, quat_b):
    for s, name in ((shape_a, "shape_a"), (shape_b, "shape_b")):
        if not isinstance(s, Shape):
            raise EngineError(f"{name} must be an engine shape (Box, ConvexHull, Sphere, Capsule), "
                              f"got {type(s).__name__}")
    pa, qa = _check_pose(pos_a, quat_a, "A's")
    pb, qb = _check_pose(pos_b, quat_b, "B's")
    table = ShapeTable()
    ia, ib = table.add(shape_a), table.add(shape_b)
    return table, np.array([ia]), pa[None], qa[None], np.array([ib]), pb[None], qb[None]


def distance(shape_a, pos_a, quat_a, shape_b, pos_b, quat_b):
    """Signed distance between two posed shapes (> 0 gap, < 0 penetration depth); see module doc."""
    table, ia, pa, qa, ib, pb, qb = _one(shape_a, pos_a, quat_a, shape_b, pos_b, quat_b)
    r = pair_distance(table, ia, pa, quatlib.to_matrix(qa), ib, pb, quatlib.to_matrix(qb))
    k = int(r["simplex_size"][0])
    return DistanceResult(distance=float(r["distance"][0]), point_a=r["point_a"][0],
                          point_b=r["point_b"][0], normal=r["normal"][0],
                          simplex=r["simplex"][0, :k], simplex_a=r["simplex_a"][0, :k],
                          simplex_b=r["simplex_b"][0, :k], method=r["method"][0],
                          core_overlap=bool(r["core_overlap"][0]))


def intersect(shape_a, pos_a, quat_a, shape_b, pos_b, quat_b):
    """True if the shapes overlap or touch (GJK's boolean mode, early out on a separating plane)."""
    table, ia, pa, qa, ib, pb, qb = _one(shape_a, pos_a, quat_a, shape_b, pos_b, quat_b)
    if is_curved(table.kind[ia[0]]) or is_curved(table.kind[ib[0]]):   # Cylinder, Cone
        return distance(shape_a, pos_a, quat_a, shape_b, pos_b, quat_b).distance <= 0.0
    r = gjk_intersect(table.points[ia], table.radius[ia], pa, quatlib.to_matrix(qa),
                      table.points[ib], table.radius[ib], pb, quatlib.to_matrix(qb))
    return bool(r.overlap[0])


def contact_manifold(shape_a, pos_a, quat_a, shape_b, pos_b, quat_b, margin=0.0):
    """Contact manifold (at most 4 points) as the simulation computes it; points with
    separation <= margin are included (speculative contacts)."""
    table, ia, pa, qa, ib, pb, qb = _one(shape_a, pos_a, quat_a, shape_b, pos_b, quat_b)
    man = collide(table, ia, pa, qa, ib, pb, qb, margin=float(margin))
    k = int(man.count[0])
    return ContactManifold(normal=man.normal[0], points=man.points[0, :k],
                           separations=man.separation[0, :k], ids=man.ids[0, :k],
                           axis_kind=int(man.axis_kind[0]), axis_index=man.axis_index[0])
