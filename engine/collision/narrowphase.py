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

Every group runs compiled, all its pairs in one call (clip_kernels, round_kernels,
curved_kernels); a batch of polytope pairs only (box and hull scenes) goes straight to
collide_polytopes.

Output: ``Manifolds`` of fixed width 4 (see engine/README.md).
"""
import numpy as np

from ..core import quat
from ..core.errors import EngineError
from ..core.kinds import ShapeKind
from ..core.vec import per_row
from ..shapes.curved import is_curved
from . import clip, clip_kernels, round_kernels
from .curved_contacts import collide_curved
from .round_kernels import AXIS_CORE_EDGE, AXIS_CORE_FACE, AXIS_ROUND  # noqa: F401  (here too)
from .sat import ABS_TOL, KIND_NONE, REL_TOL, polytope_sat

# Points per manifold: four span any contact polygon (Box2D, Bullet, Jolt keep four too).
WIDTH = 4
# Order used to normalise pairs: the rounder shape becomes A.
_RANK = np.zeros(8, dtype=np.int64)
_RANK[ShapeKind.SPHERE], _RANK[ShapeKind.CAPSULE], _RANK[ShapeKind.POLYTOPE] = 0, 1, 2
_RANK[ShapeKind.CYLINDER] = _RANK[ShapeKind.CONE] = 3   # curved pairs: curved_contacts, any order
_POLYTOPE = int(ShapeKind.POLYTOPE)   # (an int: numpy probes an enum member's dunders)

# Axis kinds reported for the debug overlays (SAT kinds 0-2 plus the analytic routes;
# round_kernels holds the values): AXIS_ROUND 3 closest points of the cores (sphere/capsule
# pairs, or GJK); AXIS_CORE_FACE 4 a round shape's core against a polytope face (axis_index =
# (face, -1)); AXIS_CORE_EDGE 5 a capsule segment against a polytope edge (axis_index =
# (-1, edge)).


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
    margin = per_row(margin, m)
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


def _round_args(table, ids_a, pos_a, rot_a, ids_b, pos_b, rot_b, margin):
    c = np.ascontiguousarray
    m = len(ids_a)
    return (round_kernels.round_table(table), c(ids_a, dtype=np.int64), c(pos_a), c(rot_a),
            c(ids_b, dtype=np.int64), c(pos_b), c(rot_b),
            per_row(margin, m))


def collide_round(table, ids_a, pos_a, rot_a, ids_b, pos_b, rot_b, margin=0.0):
    """Sphere/capsule pairs: closest points of the core segments (a sphere is a zero-length
    segment), one point, or two when two capsules are near-parallel and overlap along their
    axes (round_kernels.round_round, every pair in one call)."""
    out = Manifolds(len(ids_a))
    round_kernels.round_round(*_round_args(table, ids_a, pos_a, rot_a, ids_b, pos_b, rot_b,
                                           margin),
                              out.normal, out.points, out.separation, out.ids, out.count,
                              out.axis_kind, out.distance)
    return out


def collide_round_polytope(table, ids_a, pos_a, rot_a, ids_b, pos_b, rot_b, margin=0.0):
    """Sphere or capsule A against polytope B (round_kernels.round_polytope, every pair in one
    call).

    Cores apart: GJK on the cores gives the exact distance and normal (1 point); if that normal
    is a face normal of B and A is a capsule, the segment is clipped to the face (2 points when
    it lies along it). Cores overlapping: SAT of the segment (or point) against B, exact; face
    axes clip the segment (1-2 points), edge axes give the closest points of segment and edge.
    """
    out = Manifolds(len(ids_a))
    round_kernels.round_polytope(*_round_args(table, ids_a, pos_a, rot_a, ids_b, pos_b, rot_b,
                                              margin), _BIAS,
                                 out.normal, out.points, out.separation, out.ids, out.count,
                                 out.axis_kind, out.axis_index, out.distance, out.simplex,
                                 out.simplex_size)
    return out


# round_kernels.round_polytope's face bias (the SAT's, sat.py).
_BIAS = np.array([REL_TOL, ABS_TOL])


def segment_polytope_sat(table, ids, p0, p1):
    """SAT of core segments (points when p0 == p1) against polytopes, in the polytope's frame
    (round_kernels.segment_sat per row). Returns face sep, face, edge sep (-inf if none),
    edge, edge axis (A -> B, polytope frame)."""
    m = len(ids)
    c = np.ascontiguousarray
    sf, se = np.zeros(m), np.zeros(m)
    face, edge = np.zeros(m, dtype=np.int64), np.zeros(m, dtype=np.int64)
    axis = np.zeros((m, 3))
    round_kernels.segment_sat_rows(round_kernels.round_table(table), c(ids, dtype=np.int64),
                                   c(p0, dtype=np.float64), c(p1, dtype=np.float64), sf, face,
                                   se, edge, axis)
    return sf, face, se, edge, axis


def _perpendicular(axis, hint):
    """Unit vector along hint with its component along axis removed, or any unit normal to
    axis (round_kernels.perpendicular per row)."""
    out = np.zeros((len(axis), 3))
    round_kernels.perpendicular_rows(np.ascontiguousarray(axis, dtype=np.float64),
                                     np.ascontiguousarray(hint, dtype=np.float64), out)
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
    margin = per_row(margin, m)
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
        if len(idx):
            part = routine(table, ia[idx], pa[idx], ra[idx], ib[idx], pb[idx], rb[idx], margin[idx])
            out._put(idx, part)
    out.normal[swap] *= -1.0
    out.simplex[swap] *= -1.0  # GJK's simplex lives on B - A
    # Unused slots: +inf separation, zero id and point (routines may leave scratch there).
    unused = np.arange(WIDTH)[None, :] >= out.count[:, None]
    out.separation[unused] = np.inf
    out.ids[unused] = 0
    out.points[unused] = 0.0
    return out
