"""The narrowphase of a collision pass whose candidate pairs are all polytope bodies (Box,
ConvexHull): box and rock scenes, the common case.

narrowphase.collide serves any mix of shapes and any caller, and pays for that in Python:
per-pair gathers, quaternion matrices, the Manifolds record, three kernel calls and their
results filtered and repacked in numpy, a few dozen numpy calls a pass whatever the number
of pairs (about half a millisecond; 27 tumbling cubes spent more there than in all their
solver substeps). Here the world hands over its body arrays and candidate pairs, and one
kernel does the rest: the SAT queries and the face-biased choice (sat_kernels), every
manifold (clip_kernels.manifolds), the soundness check (world.guard.sound_manifolds' rule)
and the packing of the manifolds that have points. Same kernels, same arithmetic, same
answers as collide_polytopes given the same rotation matrices.
"""
import numpy as np

from ..core.jit import kernel
from . import clip, clip_kernels, sat_kernels
from .sat import ABS_TOL, PRUNE_GAUSS, REL_TOL, _box_edge_lut, _edge_arcs

# clip_kernels.manifolds' constants (as narrowphase._CONSTS).
_CONSTS = np.array([clip.EDGE_CLIP_COS, clip.EDGE_INC_COS, REL_TOL, ABS_TOL])


@kernel
def _collide(ia, ib, sid, pos, rot_body, margin, sat_tab, arcs, lut, clip_tab, consts,
             normal, points, sep, ids, count, axis_kind, axis_index, pair):
    """Manifolds of the M body pairs (ia, ib) with at least one point and sound, packed to the
    front of the outputs (M rows each) with pair (their index in ia). Returns how many."""
    m = ia.shape[0]
    ids_a = np.empty(m, np.int64)
    ids_b = np.empty(m, np.int64)
    pos_a = np.empty((m, 3))
    pos_b = np.empty((m, 3))
    rot_a = np.empty((m, 3, 3))
    rot_b = np.empty((m, 3, 3))
    for i in range(m):
        a = ia[i]
        b = ib[i]
        ids_a[i] = sid[a]
        ids_b[i] = sid[b]
        pos_a[i] = pos[a]
        pos_b[i] = pos[b]
        rot_a[i] = rot_body[a]
        rot_b[i] = rot_body[b]
    rot = np.empty((m, 3, 3))
    trans = np.empty((m, 3))
    out_f = np.empty((m, 3))
    out_i = np.empty((m, 4), np.int64)
    axis_e = np.empty((m, 3))
    (is_box, box_half, npoints, points_t, nfaces, planes, face_loops, nedges, edges,
     edge_dirs, edge_normals, edge_faces, bound_radius) = sat_tab
    sat_kernels.queries(ids_a, ids_b, True, pos_a, rot_a, pos_b, rot_b, rot, trans, margin,
                        True, PRUNE_GAUSS, is_box, box_half, lut, npoints, points_t, nfaces,
                        planes, face_loops, nedges, edges, edge_dirs, edge_normals, edge_faces,
                        arcs, bound_radius, out_f, out_i, axis_e)
    separation = np.empty(m)
    kind = np.empty(m, np.int8)
    index = np.empty((m, 2), np.int64)
    axis_sep = np.empty(m)
    local = np.empty((m, 3))
    nrm = np.empty((m, 3))
    sat_kernels.choose(ids_a, ids_b, rot_a, rot, planes, bound_radius, out_f, out_i, axis_e,
                       REL_TOL, ABS_TOL, separation, kind, index, axis_sep, local, nrm)
    pts = np.zeros((m, 4, 3))
    s4 = np.full((m, 4), np.inf)
    id4 = np.zeros((m, 4), np.int64)
    cnt = np.zeros(m, np.int64)
    a_kind = kind.copy()           # the SAT's answer in, the manifold's axis out
    a_index = index.copy()
    clip_kernels.manifolds(clip_tab, ids_a, ids_b, pos_a, rot_a, pos_b, rot_b, rot, trans,
                           margin, separation, kind, index, out_f[:, 2].copy(),
                           out_i[:, 2:].copy(), axis_e, consts, True, nrm, a_kind, a_index,
                           pts, s4, id4, cnt)
    k = 0
    for i in range(m):
        c = cnt[i]
        if c == 0 or not _sound(nrm[i], pts[i], s4[i], c):
            continue
        normal[k] = nrm[i]
        points[k] = 0.0
        sep[k] = np.inf
        ids[k] = 0
        for j in range(c):
            points[k, j] = pts[i, j]
            sep[k, j] = s4[i, j]
            ids[k, j] = id4[i, j]
        count[k] = c
        axis_kind[k] = a_kind[i]
        axis_index[k] = a_index[i]
        pair[k] = i
        k += 1
    return k


@kernel(inline="always")
def _sound(n, pts, s, c):
    """world.guard.sound_manifolds for one manifold: a finite unit normal and finite used
    points and separations (a degenerate query's zero normal gave the solver NaN tangents)."""
    n2 = n[0] * n[0] + n[1] * n[1] + n[2] * n[2]
    if not abs(n2 - 1.0) < 1e-6:
        return False
    for j in range(c):
        if not (np.isfinite(s[j]) and np.isfinite(pts[j, 0]) and np.isfinite(pts[j, 1])
                and np.isfinite(pts[j, 2])):
            return False
    return True


def collide_polytope_bodies(table, sid, pos, rot, ia, ib, margin):
    """Manifolds of body pairs (ia, ib) (M,) whose shapes (sid (N,) into the ShapeTable
    ``table``) are all polytopes, at body origins pos (N, 3) and rotation matrices rot
    (N, 3, 3), with speculative margins (M,).

    Returns (pair, out): the index into ia of each manifold with points (sorted, one per
    pair) and out, a dict of its arrays as World._narrowphase keeps them (normal, points,
    separation, count, ids, axis_kind, axis_index)."""
    m = len(ia)
    out = {"normal": np.empty((m, 3)), "points": np.empty((m, 4, 3)),
           "separation": np.empty((m, 4)), "count": np.empty(m, np.int64),
           "ids": np.empty((m, 4), np.int64), "axis_kind": np.empty(m, np.int8),
           "axis_index": np.empty((m, 2), np.int64)}
    pair = np.empty(m, np.int64)
    t = table
    sat_tab = (t.is_box, t.box_half, t.npoints, t.points, t.nfaces, t.planes, t.face_loops,
               t.nedges, t.edges, t.edge_dirs, t.edge_normals, t.edge_faces, t.bound_radius)
    k = _collide(ia, ib, sid, pos, rot, np.ascontiguousarray(margin, dtype=np.float64),
                 sat_tab, _edge_arcs(t), _box_edge_lut(), clip_kernels.table_arrays(t), _CONSTS,
                 out["normal"], out["points"], out["separation"], out["ids"], out["count"],
                 out["axis_kind"], out["axis_index"], pair)
    return pair[:k], {name: v[:k] for name, v in out.items()}
