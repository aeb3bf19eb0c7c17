"""Convex-vs-triangle contacts for batches of (convex shape, mesh triangle) pairs, and the
reduction of many triangle contacts into a few manifolds per body pair.

Each triangle is treated as a one-sided polygon facing the convex shape: for a two-sided mesh,
the side is the one the shape's centre is on; for a one-sided mesh, a shape whose centre is
behind the triangle gets no contact (back faces are ignored). With the outward normal N fixed:

Polytopes (Box, ConvexHull) — SAT (engine/collision/mesh_sat.py) over the triangle face N, the
polytope's face normals, and the edge pairs (polytope edge, triangle edge) that form a face of
the Minkowski difference: every candidate is a true projection gap and their maximum is exact
for overlapping shapes (a lower bound of the distance when apart). Rows whose face gap already
exceeds the margin (plus CULL_SLACK) are dropped before the edge query. The face axes are
preferred within a tolerance (stable multi-point manifolds), then face clipping (reference face
vs incident polygon, all candidate points at once on padded arrays, both reference kinds in one
pass: incident vertices inside the reference, reference vertices inside the incident polygon,
edge crossings) gives up to 4 points; an edge axis gives the closest points of the two edges;
a face axis whose clip finds nothing (a vertex or edge is the real contact) takes the exact
closest points of the two shapes (engine/collision/mesh_distance.py), or the edge route if the SAT says
they overlap.

Spheres and capsules — the core segment (a point for a sphere) is clipped to the triangle's
prism (face contact, 1-2 points with exact heights) or gives the closest points to the nearest
triangle edge (edge/vertex contact, 1 point).

Internal edges (no ghost collisions). Whatever the route, if the chosen normal comes from a
triangle edge or vertex that is not *active* (see trimesh.py: flat or concave shared edges),
the contact uses the triangle's face normal instead (Jolt's ActiveEdges::FixNormal idea): a box
sliding over a tessellated floor then only ever sees the floor normal, never the side of the
next triangle. A vertex is active if one of its two edges in the triangle is.

Output: ``narrowphase.Manifolds`` rows, normal from the convex shape (A) to the triangle (B).
"""
import numpy as np

from ..core import detmath
from ..core.kinds import ShapeKind
from ..core.vec import per_row
from ..shapes.curved import is_curved
from . import mesh_sat
from .clip import SNAP, segment_closest
from .curved_contacts import curved_triangles
from .mesh_kernels import mesh_polytope_contacts, mesh_polytope_triangles, reduce_contacts
from .narrowphase import Manifolds
from .sat import ABS_TOL, PARALLEL_SIN, REL_TOL, vertex_mean

# Contact-id layout for mesh contacts (int64): triangle index in bits 28-58, bit 27 reference
# face on the convex shape, bits 16-26 the convex face used, bits 12-15 route, bits 0-11 code.
ROUTE_INC, ROUTE_REF, ROUTE_CROSS, ROUTE_EDGE, ROUTE_ROUND_FACE, ROUTE_ROUND_EDGE = range(1, 7)
AXIS_TRI_FACE, AXIS_CONVEX_FACE, AXIS_EDGE = 0, 1, 2
# Normals of contacts within this angle (cosine) merge into one manifold when reducing.
CLUSTER_COS = float(detmath.cos(np.radians(2.0)))
# At most this many manifolds per (body, mesh) pair: enough for a body in a corner of a
# faceted bowl (floor, walls), bounded so one body cannot flood the solver.
MAX_CLUSTERS = 6
# Face-axis cull slack (times the shape's bounding radius) above the margin: the clipping
# routes accept points up to SNAP-sized tolerances outside the reference polygon, so a row
# whose face gap exceeds its margin by less than this still goes through them; beyond it no
# route can produce a point (exact, tests/test_mesh_sat.py checks against the uncut routine).
CULL_SLACK = 1e-2
# A SAT gap below this (times the shape's size) counts as touching: the closest points of
# shapes that close are too near each other to give a normal (GJK's tolerance, 1e-10).
TOUCH = 1e-10


def _dot(a, b):
    return np.einsum("...i,...i->...", a, b)


def _ids(tri_index, ref_on_a, face, route, code):
    return ((np.asarray(tri_index, dtype=np.int64) << 28)
            | (np.asarray(ref_on_a, dtype=np.int64) << 27)
            | ((np.asarray(face, dtype=np.int64) & 0x7FF) << 16)
            | (np.int64(route) << 12) | (np.asarray(code, dtype=np.int64) & 0xFFF))


def _local(rot, pos, pts):
    """World points (M, ..., 3) into the shape frames (rot, pos)."""
    sh = pts.shape
    p = (pts - pos.reshape((sh[0],) + (1,) * (len(sh) - 2) + (3,))).reshape(sh[0], -1, 3)
    return np.matmul(p, rot).reshape(sh)


def _world(rot, pos, pts):
    sh = pts.shape
    p = np.matmul(pts.reshape(sh[0], -1, 3), rot.transpose(0, 2, 1)).reshape(sh)
    return p + pos.reshape((sh[0],) + (1,) * (len(sh) - 2) + (3,))


def _put_points(out, rows, pts_local, rot, pos, sep, ids, keep):
    """Store up to WIDTH points per row (keep (R, W) a prefix mask), mapped to world."""
    w = pts_local.shape[1]
    out.points[rows, :w] = _world(rot, pos, pts_local)
    out.separation[rows, :w] = np.where(keep, sep, np.inf)
    out.ids[rows, :w] = np.where(keep, ids, 0)
    out.count[rows] = keep.sum(axis=1)


def collide_convex_triangles(table, ids, pos, rot, tri, tri_normal, active_front, active_back,
                             two_sided, margin=0.0, tri_index=None):
    """Manifolds of M (convex shape, triangle) pairs, normal from the shape to the triangle.

    ids (M,) shape ids of ``table``; pos (M, 3), rot (M, 3, 3) shape poses; tri (M, 3, 3) world
    corners; tri_normal (M, 3) world unit front normals; active_front / active_back (M, 3)
    edge flags (trimesh.TriangleMesh); two_sided (M,) bool; margin a scalar or (M,); tri_index
    (M,) for the contact ids. Polytope rows take mesh_kernels.polytope_row (the route the step
    runs in collide_mesh_polytopes), round and curved shapes their routines below.
    """
    ids = np.asarray(ids, dtype=np.int64)
    m = len(ids)
    out = Manifolds(m)
    if m == 0:
        return out
    margin = per_row(margin, m)
    tri_index = (np.zeros(m, dtype=np.int64) if tri_index is None
                 else np.asarray(tri_index, dtype=np.int64))
    tri = np.asarray(tri, dtype=np.float64)
    tri_normal = np.asarray(tri_normal, dtype=np.float64)
    two_sided = np.asarray(two_sided, dtype=bool)
    poly = table.kind[ids] == ShapeKind.POLYTOPE
    if poly.all():
        return _polytope_triangles(table, ids, pos, rot, tri, tri_normal, active_front,
                                   active_back, two_sided, margin, tri_index)
    if poly.any():
        sel = np.flatnonzero(poly)
        out._put(sel, _polytope_triangles(
            table, ids[sel], pos[sel], rot[sel], tri[sel], tri_normal[sel], active_front[sel],
            active_back[sel], two_sided[sel], margin[sel], tri_index[sel]))
    t = _local(rot, pos, tri)
    nl = np.matmul(tri_normal[:, None], rot)[:, 0]
    cen = vertex_mean(table.points[ids], table.npoints[ids])
    h_c = _dot(nl, cen - t[:, 0])
    side = np.where(h_c >= 0, 1.0, -1.0)
    live = two_sided | (h_c >= 0)
    n_out = nl * side[:, None]                 # triangle normal towards the shape (local)
    active = np.where((side > 0)[:, None], active_front, active_back)
    curved = is_curved(table.kind[ids]) & live               # Cylinder, Cone
    rnd = ~poly & live & ~curved
    for sel, routine in ((np.flatnonzero(rnd), _round_triangle),
                         (np.flatnonzero(curved), curved_triangles)):
        if len(sel):
            part = routine(table, ids[sel], t[sel], n_out[sel], active[sel], margin[sel],
                           tri_index[sel])
            part.normal[:] = np.matmul(rot[sel], part.normal[:, :, None])[:, :, 0]
            part.points[:] = _world(rot[sel], pos[sel], part.points)
            if len(sel) == m:           # one routine for every row: no copy
                return part
            out._put(sel, part)
    return out


def _polytope_triangles(table, ids, pos, rot, tri, tri_normal, active_front, active_back,
                        two_sided, margin, tri_index):
    """Polytope rows of collide_convex_triangles (tests and tools: the step's rows go through
    collide_mesh_polytopes): the kernel of the step, each row's triangle a mesh of its own
    at the identity pose (1 * x + 0 * y + 0 * z + 0 is x exactly)."""
    m = len(ids)
    out = Manifolds(m)
    nrm_all, h_all, _ = mesh_sat._edge_consts(table)
    f64 = np.float64
    rows = np.arange(m)
    mesh_polytope_triangles(
        table.points, table.npoints, table.planes, table.nfaces, table.edges, table.nedges,
        table.patch_loops, table.patch_sizes, table.face_loops, table.face_sizes,
        table.bound_radius, nrm_all, h_all, ids, np.ascontiguousarray(pos, f64),
        np.ascontiguousarray(rot, f64), np.zeros((m, 3)), np.tile(np.eye(3), (m, 1, 1)),
        np.ascontiguousarray(margin, f64), np.ascontiguousarray(two_sided, bool), rows, rows,
        np.ascontiguousarray(tri.reshape(-1, 3)), np.arange(3 * m).reshape(m, 3),
        np.ascontiguousarray(tri_normal), np.ascontiguousarray(active_front, bool),
        np.ascontiguousarray(active_back, bool), tri_index, _consts(), out.normal, out.points,
        out.separation, out.ids, out.count, out.distance, out.axis_kind)
    return out


def collide_mesh_polytopes(table, mesh, ids, pos, rot, mesh_pos, mesh_rot, margin, lo, hi,
                           rows):
    """The step's polytope rows on ``mesh``: per-row arrays ids (R,), pos (R, 3), rot (R, 3, 3)
    of the polytopes, mesh_pos (R, 3), mesh_rot (R, 3, 3) of the mesh, margin (R,) and the
    query boxes lo, hi (R, 3) in the mesh's frame; rows the ones to collide. The BVH query
    and the (polytope, triangle) pairs run in one kernel (mesh_kernels.mesh_polytope_contacts),
    which keeps the pairs with contacts: returns (Manifolds of those K pairs, their row (K,)).
    """
    nrm_all, h_all, _ = mesh_sat._edge_consts(table)
    row, normal, points, sep, ids_out, count = mesh_polytope_contacts(
        table.points, table.npoints, table.planes, table.nfaces, table.edges, table.nedges,
        table.patch_loops, table.patch_sizes, table.face_loops, table.face_sizes,
        table.bound_radius, nrm_all, h_all, ids, pos, rot, mesh_pos, mesh_rot, margin,
        mesh.two_sided, lo, hi, rows, mesh.vertices, mesh.triangles, mesh.normals,
        mesh.active_front, mesh.active_back, mesh.triangle_ids, mesh.bvh_lo, mesh.bvh_hi,
        mesh.bvh_depth, mesh.bvh_leaf_start, mesh.bvh_leaf_count, mesh.bvh_order, mesh.tri_lo,
        mesh.tri_hi, _consts())
    out = Manifolds(0)
    out.normal, out.points, out.separation, out.ids, out.count = normal, points, sep, ids_out, count
    return out, row


def _consts():
    """The polytope route's tolerances, read at each call (tests patch CULL_SLACK)."""
    return np.array([CULL_SLACK, SNAP, REL_TOL, ABS_TOL, TOUCH, mesh_sat.PARALLEL_SIN])


def _round_triangle(table, ids, t, N, active, margin, tri_index):
    """Sphere/capsule core segment (local frame) vs one-sided triangle t facing it (normal N)."""
    m = len(ids)
    out = Manifolds(m)
    r = table.radius[ids]
    p0 = table.points[ids, 0]
    p1 = table.points[ids, 1] if table.points.shape[1] > 1 else p0  # spheres repeat point 0
    scale = table.bound_radius[ids]
    eps = SNAP * scale
    seg = p1 - p0
    # Cyrus-Beck clip of the segment to the triangle's prism (inward side normals).
    te = np.roll(t, -1, axis=1) - t
    inward = np.cross(N[:, None], te)                                   # (M, 3, 3)
    orient = np.where(_dot(inward[:, 0], t[:, 2] - t[:, 0]) >= 0, 1.0, -1.0)
    inward *= orient[:, None, None]
    e0 = _dot(inward, p0[:, None] - t)                                  # >= 0 inside
    e1 = _dot(inward, p1[:, None] - t)
    den = e0 - e1
    tt = e0 / np.where(den != 0, den, 1.0)
    enter = (e0 < 0) & (e1 >= 0)
    leave = (e0 >= 0) & (e1 < 0)
    t0 = np.max(np.where(enter, tt, 0.0), axis=1)
    t1 = np.min(np.where(leave, tt, 1.0), axis=1)
    inside = ~np.any((e0 < 0) & (e1 < 0), axis=1) & (t0 <= t1)
    c0, c1 = p0 + t0[:, None] * seg, p0 + t1[:, None] * seg
    h0, h1 = _dot(N, c0 - t[:, 0]), _dot(N, c1 - t[:, 0])
    hmin = np.minimum(h0, h1)
    # Nearest triangle edge (covers the vertices).
    best_d = np.full(m, np.inf)
    best_k = np.zeros(m, dtype=np.int64)
    cp = np.zeros((m, 3))
    cq = np.zeros((m, 3))
    tk = np.zeros(m)
    for k in range(3):
        _, s_k, a_k, b_k = segment_closest(p0, p1, t[:, k], t[:, (k + 1) % 3])
        d_k = np.sqrt(_dot(b_k - a_k, b_k - a_k))
        better = d_k < best_d
        best_d = np.where(better, d_k, best_d)
        best_k = np.where(better, k, best_k)
        cp = np.where(better[:, None], a_k, cp)
        cq = np.where(better[:, None], b_k, cq)
        tk = np.where(better, s_k, tk)
    face = inside & (hmin <= best_d + eps)
    # Edge or vertex route; inactive features use the face normal.
    vert = np.where(tk <= 1e-9, 0, np.where(tk >= 1 - 1e-9, 1, -1))
    kk = best_k
    a_edge = active[np.arange(m), kk]
    a_v0 = active[np.arange(m), kk] | active[np.arange(m), (kk - 1) % 3]
    a_v1 = active[np.arange(m), kk] | active[np.arange(m), (kk + 1) % 3]
    feat_ok = np.where(vert == 0, a_v0, np.where(vert == 1, a_v1, a_edge))
    tiny = best_d <= 1e-12 * scale
    edge = ~face & feat_ok & ~tiny
    flat = ~face & ~edge                                 # inactive feature: face normal
    # An inactive feature beside the triangle takes the face normal (no ghost normals) and,
    # while the core is in front of the plane, its height along it (a ball rolling over a
    # flat seam: the height above the floor). Behind the plane and outside the prism the
    # height says nothing (the triangle is not under the core: a capsule 2.4 m beside a small
    # closed mesh, its far end behind one triangle's plane, read 3 m deep and was thrown:
    # bench/fuzz_world.py seed 1197); there the distance to the triangle does.
    h_edge = _dot(N, cp - t[:, 0])
    h_edge = np.where(h_edge >= 0.0, h_edge, best_d)
    # Face contacts: 1 or 2 points at the ends of the clipped segment.
    two = face & (np.sqrt(_dot(c1 - c0, c1 - c0)) > eps) & (h1 - r <= margin) & (h0 - r <= margin)
    q0 = np.where(face[:, None], c0, cp)
    hq0 = np.where(face, h0, h_edge)
    q0 = np.where((face & ~two & (h1 < h0))[:, None], c1, q0)
    hq0 = np.where(face & ~two & (h1 < h0), h1, hq0)
    nrm_face = -N
    u_edge = (cq - cp) / np.maximum(best_d, 1e-300)[:, None]
    normal = np.where(edge[:, None], u_edge, nrm_face)
    s0 = np.where(edge, best_d - r, hq0 - r)
    pt0 = np.where(edge[:, None], 0.5 * (cp + r[:, None] * u_edge + cq),
                   q0 - (0.5 * (hq0 + r))[:, None] * N)
    s1 = h1 - r
    pt1 = c1 - (0.5 * (h1 + r))[:, None] * N
    # A capsule core through the triangle: its edges x the core can separate less than the
    # face (SAT of segment vs triangle, full projections); only active edges may win.
    seglen = np.sqrt(_dot(seg, seg))
    cx = np.cross(seg[:, None], te)                                     # (M, 3, 3)
    cxl = np.sqrt(_dot(cx, cx))
    okx = (cxl > PARALLEL_SIN * seglen[:, None] * np.sqrt(_dot(te, te))) & active
    cx = cx / np.where(okx, cxl, 1.0)[..., None]
    pt_ = np.einsum("mkx,mjx->mkj", cx, t)
    pp0, pp1 = _dot(cx, p0[:, None]), _dot(cx, p1[:, None])
    sp = pt_.min(axis=2) - np.maximum(pp0, pp1)
    sm = np.minimum(pp0, pp1) - pt_.max(axis=2)
    sx = np.where(okx, np.maximum(sp, sm), -np.inf)
    kx = np.argmax(sx, axis=1)
    rows = np.arange(m)
    sxb = sx[rows, kx]
    cross_edge = face & (hmin < 0) & (sxb > hmin + REL_TOL * np.abs(hmin) + ABS_TOL * scale)
    if cross_edge.any():
        ux = cx[rows, kx] * np.where(sp[rows, kx] >= sm[rows, kx], 1.0, -1.0)[:, None]
        _, _, xp, xq = segment_closest(p0, p1, t[rows, kx], t[rows, (kx + 1) % 3])
        ce = cross_edge[:, None]
        normal = np.where(ce, ux, normal)
        s0 = np.where(cross_edge, sxb - r, s0)
        pt0 = np.where(ce, 0.5 * (xp + r[:, None] * ux + xq), pt0)
        two &= ~cross_edge
        face = face & ~cross_edge
        edge = edge | cross_edge
        kk = np.where(cross_edge, kx, kk)
        vert = np.where(cross_edge, -1, vert)
    # A flat row's height holds next to its seam only: farther from the triangle than the
    # margin, the triangle under the core (the seam's neighbour) gives the contact.
    keep0 = (s0 <= margin) & ~(flat & (best_d - r > margin))
    keep1 = two & keep0
    route = np.where(face, ROUTE_ROUND_FACE, ROUTE_ROUND_EDGE)
    code0 = np.where(face, 0, 4 * kk + (vert + 1))
    out.normal[:] = normal
    out.points[:, 0] = pt0
    out.points[:, 1] = np.where(keep1[:, None], pt1, 0.0)
    out.separation[:, 0] = np.where(keep0, s0, np.inf)
    out.separation[:, 1] = np.where(keep1, s1, np.inf)
    base = _ids(tri_index, 0, 0, 0, 0)
    out.ids[:, 0] = np.where(keep0, base | (route << 12) | code0, 0)
    out.ids[:, 1] = np.where(keep1, base | (ROUTE_ROUND_FACE << 12) | 1, 0)
    out.count[:] = keep0.astype(np.int64) + keep1
    out.distance[:] = np.where(edge, s0, np.where(face, hmin - r, h_edge - r))
    out.axis_kind[:] = np.where(face | flat, AXIS_TRI_FACE, AXIS_EDGE)
    return out


def reduce_manifolds(man, group, n_groups=None):
    """Merge per-triangle manifolds into at most a few manifolds per group (body pair).

    man: Manifolds of M rows; group (M,) int group of each row. Contacts are clustered by
    normal (greedy: the deepest remaining contact seeds a cluster, contacts within CLUSTER_COS
    of its normal join; up to MAX_CLUSTERS per group, the rest join the closest cluster), and
    each cluster keeps 4 points (deepest, farthest, largest triangle, largest quad; a cluster's
    contacts farthest from its centroid first, so a box resting on many triangles keeps its
    corners) with the seed's normal. Returns (Manifolds of K rows, group (K,), cluster rank
    (K,)), ordered by group then rank. Compiled: mesh_kernels.reduce_contacts.
    """
    group = np.asarray(group, dtype=np.int64)
    ng = (int(group.max()) + 1 if len(group) else 0) if n_groups is None else int(n_groups)
    normal, points, sep, ids, count, distance, grp, rank = reduce_contacts(
        group, man.count, man.normal, man.points, man.separation, man.ids, ng, MAX_CLUSTERS,
        CLUSTER_COS, SNAP)
    out = Manifolds(len(count))
    out.normal, out.points, out.separation, out.ids = normal, points, sep, ids
    out.count, out.distance = count, distance
    return out, grp, rank
