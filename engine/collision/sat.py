"""Batched separating-axis test (SAT) for pairs of convex polytopes (Box, ConvexHull).

For two convex polytopes the candidate axes are the face normals of A, the face normals of B
and the cross products of edge pairs that form a face of the Minkowski difference A - B. The
largest separation over these axes is the exact signed distance when the shapes overlap
(minus the penetration depth) and a lower bound of the distance when they are apart.

Edge pairs are pruned with Gregorius' Gauss-map test (GDC 2013, "The Separating Axis Test
between Convex Polyhedra"): edges a (faces with normals na1, na2) and b (nb1, nb2) build a
Minkowski face iff the arcs na1-na2 and -nb1 - -nb2 cross on the unit sphere. This is not an
optimisation only: the cheap edge separation ``axis . (pb - pa)`` is only valid when both
edges are the supporting features along the axis, which is exactly what the test guarantees.

The queries run in one compiled kernel over all pairs (engine/collision/sat_kernels.py), each pair in
A's frame (B mapped in with the relative pose) over its own shapes' real elements only.
Two paths share the output format: box-box pairs use the analytic 15-axis OBB test (no vertex
or edge arrays at all); other pairs run both face queries over every face and point, then the
edge pairs whose edges survive the Gauss-map pruning (exact: the answer is the exhaustive one,
tests/test_hull_pairs.py): the support function of A - B is Lipschitz on the Gauss sphere, so
each face axis rules out a cap of axes around it; an edge whose Gauss-map arc (it joins two
face axes) is covered by its two end caps cannot beat the best face and drops out. About 10
edges per shape survive even for 128-vertex hulls 0.3 deep.

The axis chosen for the manifold is biased towards faces (A's, then B's) as Box2D and Bullet
do, so resting contacts keep multi-point manifolds; ``separation`` is always the exact max.
An edge axis between nearly parallel faces still gets a multi-point manifold (clip.py clips
the faces beside the two edges along the edge axis), so the bias need not be stronger: making
faces win whenever they are within the speculative margin of the edge made a tower of tipping
beams sink deeper and changed nothing on crossed-beam drops (likely because such a face axis is
farther from the direction of least penetration: its gaps overstate the depth or the clip drops
the part outside the face); a larger relative tolerance (Gregorius and Box2D v3 use 10 %)
behaved the same as REL_TOL.
SAT axis caching (trying last step's axis first) is not implemented: the box path costs about
as much as one cached-axis test would, and for hulls it would only speed up pairs already
farther apart than the margin, which the broadphase mostly filters out.
"""
import numpy as np

from ..core import detmath
from ..core.vec import cross, per_row
from . import sat_kernels

# Axis kinds of a SAT answer (StepRecord.axis_kind); KIND_NONE for rows without one.
FACE_A, FACE_B, EDGE = sat_kernels.FACE_A, sat_kernels.FACE_B, sat_kernels.EDGE
KIND_NONE = -1

# Edge pairs closer to parallel than this (sine of the angle) give no axis: the cross
# product's direction is noise there, and the adjacent face axes already bound the answer.
PARALLEL_SIN = sat_kernels.PARALLEL_SIN
# Bias towards face axes (stable, multi-point manifolds): an edge axis (or B's face over A's)
# is used for the manifold only if it beats the other by this much. Relative to the
# separation, plus an absolute part relative to the smaller shape's size.
REL_TOL = 0.05
ABS_TOL = 1e-3


class SatResult:
    """Per-pair SAT answer.

    separation (M,): exact max over all candidate axes (the exact signed distance if < 0).
    kind (M,): FACE_A / FACE_B / EDGE of the axis chosen for the manifold (face-biased).
    index (M, 2): (face, -1) for face axes, (edge of A, edge of B) for edge axes.
    axis_separation (M,): separation along the chosen axis (<= separation by the bias).
    normal (M, 3): world unit normal of the chosen axis, from A to B.
    face_a, face_b, edge (M,): best separations of each query (edge is -inf where unused).
    edge_index (M, 2), edge_axis (M, 3): best edge pair and its unit axis in A's frame.
    rot, trans: pose of B in A's frame (x_A = rot @ x_B + trans), reused by the clipper.
    """
    __slots__ = (
        "axis_separation",
        "edge",
        "edge_axis",
        "edge_index",
        "face_a",
        "face_b",
        "index",
        "kind",
        "local_normal",
        "normal",
        "rot",
        "separation",
        "trans",
    )

    def __init__(self, **kw):
        for k, v in kw.items():
            setattr(self, k, v)


def relative_pose(pos_a, rot_a, pos_b, rot_b):
    """Pose of B in A's frame: x_A = rot @ x_B + trans."""
    rt = rot_a.transpose(0, 2, 1)
    rot = np.matmul(rt, rot_b)
    trans = np.matmul(rt, (pos_b - pos_a)[:, :, None])[:, :, 0]
    return rot, trans


def vertex_mean(points, counts):
    """Mean of the real points of padded rows (an interior point of a polytope)."""
    v = points.shape[1]
    total = points.sum(axis=1) - (v - counts)[:, None] * points[:, 0]
    return total / counts[:, None]


# Slack of the Gauss-map edge pruning, relative to the pair's size (sat_kernels.PRUNE_TOL).
PRUNE_TOL = sat_kernels.PRUNE_TOL
# Gauss-map pruning (see the module doc); False evaluates every edge pair (the exhaustive
# route, for tests and benchmarks).
PRUNE_GAUSS = True

_ARCS: dict = {}


def _edge_arcs(table):
    """Angle (S, E) between the two face normals of every edge of a ShapeTable (its Gauss-map
    arc length), computed once per table (the cache holds the normals array it was made from)."""
    key = id(table)
    hit = _ARCS.get(key)
    if hit is not None and hit[0] is table.edge_normals:
        return hit[1]
    n = table.edge_normals
    c = cross(n[..., 0, :], n[..., 1, :])
    arc = detmath.arctan2(np.sqrt(_dot3(c, c)), _dot3(n[..., 0, :], n[..., 1, :]))
    if len(_ARCS) > 64:
        _ARCS.clear()
    _ARCS[key] = (table.edge_normals, arc)
    return arc


def _dot3(a, b):
    return a[..., 0] * b[..., 0] + a[..., 1] * b[..., 1] + a[..., 2] * b[..., 2]


_BOX_EDGE_LUT = None


def _box_edge_lut():
    """Index of the Box edge joining corners (v0, v1): corner bits are x, y, z signs."""
    global _BOX_EDGE_LUT
    if _BOX_EDGE_LUT is None:
        from ..shapes.primitives import Box
        lut = np.full((8, 8), -1, dtype=np.int64)
        for k, (a, b) in enumerate(Box([1.0, 1.0, 1.0]).edges):
            lut[a, b] = lut[b, a] = k
        _BOX_EDGE_LUT = lut
    return _BOX_EDGE_LUT


def queries(table, ids_a, ids_b, rot, trans, margin, box_path=True):
    """Face and edge queries of M pairs in A's frame (sat_kernels.queries): (sep_a, face_a,
    sep_b, face_b, sep_e, edge_a, edge_b, axis_e). Edge queries run only where the best face
    axis is within margin (scalar or (M,)); box_path=False sends boxes down the general path."""
    rot = np.array(rot, dtype=np.float64)        # copies: the kernel's pose outputs
    trans = np.array(trans, dtype=np.float64)
    out_f, out_i, axis = _queries(table, np.ascontiguousarray(ids_a, dtype=np.int64),
                                  np.ascontiguousarray(ids_b, dtype=np.int64), None, rot, trans,
                                  margin, box_path)
    return (out_f[:, 0], out_i[:, 0], out_f[:, 1], out_i[:, 1], out_f[:, 2], out_i[:, 2],
            out_i[:, 3], axis)


def _queries(table, ids_a, ids_b, world, rot, trans, margin, box_path):
    """sat_kernels.queries' raw outputs (out_f (M, 3), out_i (M, 4), edge axis (M, 3)).
    world: (pos_a, rot_a, pos_b, rot_b), from which the kernel writes rot, trans (M, 3, 3),
    (M, 3); None: rot, trans are given."""
    poses = world is not None
    if not poses:
        world = (trans, rot, trans, rot)     # unread
    m = len(ids_a)
    margin = per_row(margin, m)
    out_f = np.empty((m, 3))
    out_i = np.empty((m, 4), dtype=np.int64)
    axis = np.empty((m, 3))
    t = table
    sat_kernels.queries(ids_a, ids_b, poses, *world, rot, trans, margin, box_path, PRUNE_GAUSS,
                        t.is_box, t.box_half, _box_edge_lut(), t.npoints, t.points, t.nfaces,
                        t.planes, t.face_loops, t.nedges, t.edges, t.edge_dirs, t.edge_normals,
                        t.edge_faces, _edge_arcs(t), t.bound_radius, out_f, out_i, axis)
    return out_f, out_i, axis


def polytope_sat(table, ids_a, pos_a, rot_a, ids_b, pos_b, rot_b, margin=np.inf, bias=True):
    """SAT for M polytope pairs (shape ids into ``table``, world poses with rotation matrices).

    margin: scalar or (M,).
    bias=False chooses the exact best axis (queries); the default prefers faces (manifolds).

    Box-box pairs take the analytic 15-axis path, other pairs the general face/edge queries.
    General pairs whose face separation already exceeds ``margin`` skip the (costlier) edge
    query: they are reported with their face axis, which proves them farther apart than margin.
    """
    ids_a = np.ascontiguousarray(ids_a, dtype=np.int64)
    ids_b = np.ascontiguousarray(ids_b, dtype=np.int64)
    m = len(ids_a)
    margin = per_row(margin, m)
    c = np.ascontiguousarray
    rot_a = c(rot_a, dtype=np.float64)
    world = (c(pos_a, dtype=np.float64), rot_a, c(pos_b, dtype=np.float64),
             c(rot_b, dtype=np.float64))
    rot, trans = np.empty((m, 3, 3)), np.empty((m, 3))
    out_f, out_i, axis_e = _queries(table, ids_a, ids_b, world, rot, trans, margin, True)
    rel, ab = (REL_TOL, ABS_TOL) if bias else (0.0, 0.0)
    separation, axis_sep = np.empty(m), np.empty(m)
    kind = np.empty(m, dtype=np.int8)
    index = np.empty((m, 2), dtype=np.int64)
    local, normal = np.empty((m, 3)), np.empty((m, 3))
    sat_kernels.choose(ids_a, ids_b, rot_a, rot, table.planes, table.bound_radius, out_f, out_i,
                       axis_e, rel, ab, separation, kind, index, axis_sep, local, normal)
    return SatResult(separation=separation, kind=kind, index=index, axis_separation=axis_sep,
                     normal=normal, local_normal=local, face_a=out_f[:, 0], face_b=out_f[:, 1],
                     edge=out_f[:, 2], edge_index=out_i[:, 2:], edge_axis=axis_e, rot=rot,
                     trans=trans)
