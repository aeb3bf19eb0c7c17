"""Narrowphase: contact manifolds for M candidate pairs of shapes, all pairs at once.

``collide`` groups the pairs by kind (a handful of masks, never a loop over pairs), puts the
rounder shape first (sphere < capsule < polytope) so each group has one orientation, runs the
group's routine and flips the normals of the swapped pairs back:

    polytope-polytope   SAT (sat.py) + face clipping / edge-edge point (clip.py)
    sphere/capsule pairs analytic (point-point, point-segment, segment-segment closest points;
                        parallel capsules give 2 points)
    sphere/capsule vs polytope  core (point/segment) SAT against the polytope, exact per point
                        for face contacts; GJK on the cores gives the exact distance when the
                        cores are apart and a vertex or edge is closest.

Output: ``Manifolds`` of fixed width 4 (see engine/README.md).
"""
import numpy as np

from . import quat
from .clip import edge_contact, face_contact
from .sat import EDGE, FACE_B, KIND_NONE, polytope_sat
from .shapes import CAPSULE, POLYTOPE, SPHERE

WIDTH = 4
# Order used to normalise pairs: the rounder shape becomes A.
_RANK = np.zeros(3, dtype=np.int64)
_RANK[SPHERE], _RANK[CAPSULE], _RANK[POLYTOPE] = 0, 1, 2

# Axis kinds reported for the debug overlays (SAT kinds 0-2 plus the analytic routes).
AXIS_ROUND = 3       # closest points of the cores (sphere/capsule pairs, or GJK)
AXIS_CORE_FACE = 4   # round shape's core against a polytope face
AXIS_CORE_EDGE = 5   # capsule segment against a polytope edge


class Manifolds:
    """Fixed-width (4) contact manifolds for M pairs; see engine/README.md.

    normal (M, 3) unit A -> B; points (M, 4, 3) world, midway between the surfaces; separation
    (M, 4) (< 0 penetration, +inf in unused slots); ids (M, 4) int64 feature ids stable under
    small motions (for warm starting); count (M,) used slots (0: nothing within margin).
    Debug: axis_kind (M,) (sat.FACE_A / FACE_B / EDGE or AXIS_*), axis_index (M, 2), distance
    (M,) the pair's separation estimate (exact for overlapping polytopes).
    """
    __slots__ = ("normal", "points", "separation", "ids", "count", "axis_kind", "axis_index",
                 "distance")

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

    def __len__(self):
        return len(self.count)

    def _put(self, sel, part):
        for name in self.__slots__:
            getattr(self, name)[sel] = getattr(part, name)


def _rotate(rot, v):
    return np.matmul(rot, v[..., None])[..., 0]


def collide_polytopes(table, ids_a, pos_a, rot_a, ids_b, pos_b, rot_b, margin=0.0):
    """Manifolds for M polytope-polytope pairs (rotation matrices)."""
    m = len(ids_a)
    out = Manifolds(m)
    sat = polytope_sat(table, ids_a, pos_a, rot_a, ids_b, pos_b, rot_b, margin=margin)
    out.normal[:] = sat.normal
    out.axis_kind[:] = sat.kind
    out.axis_index[:] = sat.index
    out.distance[:] = sat.separation
    active = sat.separation <= margin

    face = np.nonzero(active & (sat.kind != EDGE))[0]
    if len(face):
        flip = sat.kind[face] == FACE_B
        fl = flip[:, None]
        ia, ib = ids_a[face], ids_b[face]
        r, t = sat.rot[face], sat.trans[face]
        rt = r.transpose(0, 2, 1)
        t_inv = -_rotate(rt, t)
        ref_ids = np.where(flip, ib, ia)
        inc_ids = np.where(flip, ia, ib)
        rel_r = np.where(fl[:, :, None], rt, r)
        rel_t = np.where(fl, t_inv, t)
        ref_rot = np.where(fl[:, :, None], rot_b[face], rot_a[face])
        ref_pos = np.where(fl, pos_b[face], pos_a[face])
        pts, sep, ids, cnt, inc_face = face_contact(table, ref_ids, sat.index[face, 0], inc_ids,
                                                    rel_r, rel_t, margin, flip)
        out.points[face] = np.matmul(pts, ref_rot.transpose(0, 2, 1)) + ref_pos[:, None]
        out.separation[face] = sep
        out.ids[face] = ids
        out.count[face] = cnt
        out.axis_index[face, 1] = inc_face

    # Edge-edge axes, and face axes whose clipping found nothing (the face bias kept a face
    # axis where an edge pair is the real contact): one point at the closest edge points.
    empty = active & (out.count == 0) & np.isfinite(sat.edge)
    edge = np.nonzero(empty | (active & (sat.kind == EDGE)))[0]
    if len(edge):
        ia, ib = ids_a[edge], ids_b[edge]
        ea, eb = sat.edge_index[edge, 0], sat.edge_index[edge, 1]
        axis = sat.edge_axis[edge]
        p, s, ids = edge_contact(table, ia, ea, ib, eb, sat.rot[edge], sat.trans[edge], axis)
        keep = s <= margin
        out.points[edge, 0] = _rotate(rot_a[edge], p) + pos_a[edge]
        out.separation[edge, 0] = np.where(keep, s, np.inf)
        out.ids[edge, 0] = ids
        out.count[edge] = keep.astype(np.int64)
        out.normal[edge] = _rotate(rot_a[edge], axis)
        out.axis_kind[edge] = EDGE
        out.axis_index[edge] = sat.edge_index[edge]
    return out


def collide(table, ids_a, pos_a, quat_a, ids_b, pos_b, quat_b, margin=0.0, cache=None):
    """Contact manifolds for M candidate pairs of shape ids of ``table`` (a ShapeTable).

    Poses are world positions (M, 3) and unit quaternions (M, 4) (w, x, y, z). ``margin``:
    points with separation <= margin are reported (speculative contacts). ``cache`` is
    accepted for API stability (SAT axis caching did not pay in numpy; see sat.py) and unused.
    Returns a Manifolds of M rows, normals from A to B whatever the order of the kinds.
    """
    ids_a = np.asarray(ids_a, dtype=np.int64).reshape(-1)
    ids_b = np.asarray(ids_b, dtype=np.int64).reshape(-1)
    m = len(ids_a)
    pos_a = np.asarray(pos_a, dtype=np.float64).reshape(m, 3)
    pos_b = np.asarray(pos_b, dtype=np.float64).reshape(m, 3)
    rot_a = quat.to_matrix(quat.normalize(np.asarray(quat_a, dtype=np.float64).reshape(m, 4)))
    rot_b = quat.to_matrix(quat.normalize(np.asarray(quat_b, dtype=np.float64).reshape(m, 4)))
    out = Manifolds(m)
    if m == 0:
        return out

    kind_a = table.kind[ids_a]
    kind_b = table.kind[ids_b]
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

    groups = (
        ((POLYTOPE, POLYTOPE), collide_polytopes),
    )
    for (ga, gb), routine in groups:
        sel = np.nonzero((ka == ga) & (kb == gb))[0]
        if len(sel):
            part = routine(table, ia[sel], pa[sel], ra[sel], ib[sel], pb[sel], rb[sel], margin)
            out._put(sel, part)
    out.normal[swap] *= -1.0
    return out
