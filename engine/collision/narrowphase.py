"""Narrowphase: contact manifolds for M candidate pairs of convex shapes, all pairs at once.

``collide`` turns the poses into rotation matrices and runs every pair in one compiled call
(convex_pairs.shape_rows), which puts the rounder shape of each pair first (sphere < capsule
< polytope < cylinder, cone), takes the pair's route and flips the normal of a swapped pair
back:

    polytope-polytope   SAT (sat_kernels) + face clipping / edge-edge point (clip_kernels;
                        clip.py explains it); an edge axis between nearly parallel faces
                        clips those faces along the axis
    sphere/capsule pairs closest points of the core segments (a sphere is a zero-length one);
                        near-parallel capsules get a second point (round_kernels)
    sphere/capsule vs polytope  cores apart: GJK on the cores (exact distance and normal), and a
                        capsule whose normal is a face normal is clipped to that face (2
                        points when lying on it); cores overlapping: SAT of the point/segment
                        against the polytope (exact), face axes clipped, edge axes 1 point
                        (round_kernels)
    a cylinder or cone  curved_contacts.py's method (curved_kernels)

The world's collision pass calls the same kernel through polytope_pairs (its pairs of two
polytopes with manifold reuse, the others through convex_pairs.culled_rows, one call).

Output: ``Manifolds`` of fixed width 4 (see engine/README.md).
"""
import numpy as np

from ..core import quat
from ..core.errors import EngineError
from ..core.kinds import ShapeKind
from ..core.vec import per_row
from . import clip, clip_kernels, convex_pairs, curved_kernels, round_kernels, sat
from .curved_contacts import curved_width
from .round_kernels import AXIS_CORE_EDGE, AXIS_CORE_FACE, AXIS_ROUND  # noqa: F401  (here too)
from .sat import ABS_TOL, KIND_NONE, REL_TOL

# Points per manifold: four span any contact polygon (Box2D, Bullet, Jolt keep four too).
WIDTH = 4
# Order used to normalise pairs: the rounder shape becomes A.
_RANK = np.zeros(8, dtype=np.int64)
_RANK[ShapeKind.SPHERE], _RANK[ShapeKind.CAPSULE], _RANK[ShapeKind.POLYTOPE] = 0, 1, 2
_RANK[ShapeKind.CYLINDER] = _RANK[ShapeKind.CONE] = 3   # curved pairs: curved_contacts, any order

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


# Test hooks (tests/test_manifold.py): CLIP_FACES False skips the face clip, EDGE_FALLBACK
# False hides the SAT's best edge pair from the clipper; the fallbacks then answer.
CLIP_FACES = True
EDGE_FALLBACK = True


# clip_kernels.manifolds' constants: the edge-axis clip's thresholds and the face bias.
_CONSTS = np.array([clip.EDGE_CLIP_COS, clip.EDGE_INC_COS, REL_TOL, ABS_TOL])
# round_kernels.round_polytope_pair's face bias (the SAT's, sat.py).
_BIAS = np.array([REL_TOL, ABS_TOL])


def shape_args(table):
    """convex_pairs.shape_rows' tabs and consts for a ShapeTable (kept until the table
    changes: its arrays are rebuilt, as new objects, when a shape is added)."""
    key = (table.__dict__.get("kind"), len(table.shapes), CLIP_FACES, EDGE_FALLBACK,
           sat.PRUNE_GAUSS)
    hit = table.__dict__.get("_shape_args")
    if hit is not None and hit[0][0] is key[0] and hit[0][1:] == key[1:]:
        return hit[1]
    t = table
    sat_tab = (t.is_box, t.box_half, t.npoints, t.points, t.nfaces, t.planes, t.face_loops,
               t.nedges, t.edges, t.edge_dirs, t.edge_normals, t.edge_faces, t.bound_radius)
    tabs = (t.kind, round_kernels.round_table(t), curved_kernels.curved_table(t), sat_tab,
            sat._edge_arcs(t), sat._box_edge_lut(), clip_kernels.table_arrays(t))
    consts = (_RANK, curved_width(t), _BIAS, _CONSTS, bool(sat.PRUNE_GAUSS), bool(CLIP_FACES),
              bool(EDGE_FALLBACK))
    table.__dict__["_shape_args"] = ((t.kind, *key[1:]), (tabs, consts))
    return tabs, consts


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
    out = Manifolds(m)
    tabs, consts = shape_args(table)
    convex_pairs.shape_rows(ids_a, np.ascontiguousarray(pos_a), rot_a, ids_b,
                            np.ascontiguousarray(pos_b), rot_b, margin, tabs, consts, out.normal,
                            out.points, out.separation, out.ids, out.count, out.axis_kind,
                            out.axis_index, out.distance, out.simplex, out.simplex_size)
    return out
