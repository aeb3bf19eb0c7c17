"""Static (or kinematic) triangle meshes: validated geometry, edge adjacency and a BVH midphase.

``TriangleMesh(vertices, triangles, two_sided=True)`` is a *non-convex* shape: it never goes
through the convex queries directly. Pairs (convex shape, mesh) are expanded into
(convex shape, triangle) pairs by the BVH (``TriangleMesh.query``) and collided by
``engine.collision.mesh_contacts``. A mesh cannot be dynamic: it has no volume to give it mass
(open meshes, a zero-thickness Plane), so ``check_body_shape`` refuses it and tells the user
to use a convex hull, a compound or a decomposition instead.

Input hygiene. Blender meshes carry NaNs from broken modifiers, zero-area triangles from
collapsed edges and duplicated vertices along seams. Triangles touching a non-finite vertex and
zero-area triangles are dropped (``dropped`` counts them: the add-on reports it); vertices at
exactly the same position are welded so adjacency is found across seams; an empty result is an
error, since a mesh with nothing to collide with is certainly not what the user meant.

Internal edges (ghost collisions). A box sliding over a floor of many triangles touches the
edges *between* triangles. SAT against one triangle alone then finds that a horizontal axis
(the box's side face against the triangle's edge) separates less than the floor normal, and the
box catches or hops. Following Jolt's "active edges" (and Bullet's btInternalEdgeUtility), each
triangle edge is *active* only if it is a real feature of the surface: a boundary or
non-manifold edge, or a convex edge sharper than ``ACTIVE_EDGE_COS``. Contacts whose normal
comes from an inactive edge or vertex are replaced by the triangle's face normal
(mesh_contacts.py). Convexity depends on the side one looks from, so two-sided meshes keep one
flag set per side (``active_front``, ``active_back``).

BVH. Triangles are sorted into a complete binary tree by median splits along the longest axis
of their centroids, built level by level (one lexsort per level, no Python recursion). Node
boxes are stored in flat arrays, implicit indexing (children of i are 2i+1, 2i+2), leaves all
at the same depth with at most ``LEAF_SIZE`` triangles. ``query`` walks the tree depth first
for each of many boxes in one compiled call (bvh_query, below).
"""
import numpy as np

from ..core import detmath
from ..core.errors import DegenerateShapeError, EngineError
from ..core.jit import kernel
from ..core.kinds import BodyKind, ShapeKind
from .primitives import Shape

# Triangles per BVH leaf: small leaves keep the per-query candidate lists short.
LEAF_SIZE = 4
# An edge between two triangles whose normals are closer than this (cos of 5 degrees, Jolt's
# default) is flat: never active. Sharper convex edges are real features.
ACTIVE_EDGE_COS = float(detmath.cos(np.radians(5.0)))


def _dot(a, b):
    return np.einsum("...i,...i->...", a, b)


class TriangleMesh(Shape):
    """A triangle mesh in its local frame.

    vertices (N, 3), triangles (T, 3) vertex indices (CCW seen from the front). two_sided: if
    False, contacts only come from the front (normal side) and a shape whose centre is behind a
    triangle ignores it (one-way floors, the inside of a closed scenery mesh is hollow).

    Attributes: vertices, triangles (the kept ones, indices into vertices), normals (T, 3) unit,
    dropped (number of input triangles dropped), neighbors (T, 3) triangle across edge k
    (edge k runs triangle[k] -> triangle[(k + 1) % 3]; -1 if none or non-manifold),
    active_front / active_back (T, 3) bool, and the BVH arrays (see ``query``).
    Shape interface: core_points are the 8 corners of the local AABB (radius 0), so the world's
    bounding boxes and bounding radius work unchanged without padding every shape to N points.
    """
    kind = ShapeKind.TRIANGLE_MESH
    radius = 0.0

    def __init__(self, vertices, triangles, two_sided=True):
        v = np.asarray(vertices, dtype=np.float64)
        t = np.asarray(triangles)
        if v.ndim != 2 or v.shape[1] != 3:
            raise EngineError(f"TriangleMesh vertices must be an (N, 3) array, got shape {v.shape}")
        if t.size == 0:
            raise DegenerateShapeError("TriangleMesh has no triangles; give a mesh with faces "
                                       "(triangulate quads/ngons first)")
        if t.ndim != 2 or t.shape[1] != 3 or not np.issubdtype(t.dtype, np.integer):
            raise EngineError(f"TriangleMesh triangles must be an (T, 3) integer array, got "
                              f"shape {t.shape} dtype {t.dtype}")
        t = t.astype(np.int64)
        if t.min() < 0 or t.max() >= len(v):
            raise EngineError(f"TriangleMesh triangle indices must be in [0, {len(v)}), got "
                              f"[{t.min()}, {t.max()}]")
        self.two_sided = bool(two_sided)
        finite = np.all(np.isfinite(v), axis=1)
        v = np.where(finite[:, None], v, 0.0)
        # Weld vertices at exactly the same position (seams), so adjacency crosses them.
        v, inverse = np.unique(v, axis=0, return_inverse=True)
        t_w = inverse.reshape(-1)[t]
        p0, p1, p2 = v[t_w[:, 0]], v[t_w[:, 1]], v[t_w[:, 2]]
        cross = np.cross(p1 - p0, p2 - p0)
        area2 = np.sqrt(_dot(cross, cross))
        size = float(np.max(np.abs(v[inverse.reshape(-1)[finite]]))) if finite.any() else 0.0
        # Zero area: below the rounding of the cross product (relative to the edge lengths).
        longest = np.maximum(np.maximum(_dot(p1 - p0, p1 - p0), _dot(p2 - p1, p2 - p1)),
                             _dot(p0 - p2, p0 - p2))
        good = (np.all(finite[t], axis=1) & (area2 > 1e-12 * longest)
                & (t_w[:, 0] != t_w[:, 1]) & (t_w[:, 1] != t_w[:, 2]) & (t_w[:, 2] != t_w[:, 0]))
        self.dropped = int(len(t) - good.sum())
        if not good.any():
            raise DegenerateShapeError(f"TriangleMesh: all {len(t)} triangles are degenerate "
                                       "(zero area or non-finite vertices); check the mesh")
        t_w = t_w[good]
        used, t_c = np.unique(t_w, return_inverse=True)
        # For set_vertices: one input vertex standing for each kept (welded) vertex.
        first = np.full(len(v), len(inverse.reshape(-1)), dtype=np.int64)
        np.minimum.at(first, inverse.reshape(-1), np.arange(len(inverse.reshape(-1))))
        self.source_index = first[used]
        self.input_count = len(inverse.reshape(-1))
        self.vertices = np.ascontiguousarray(v[used])
        self.triangles = t_c.reshape(-1, 3).astype(np.int64)
        self.normals = cross[good] / area2[good][:, None]
        self.triangle_ids = np.arange(len(self.triangles))   # (the contact ids' triangle)
        self.size = max(size, 1e-300)
        self._adjacency()
        self._corners()
        self._build_bvh()
        for arr in (self.vertices, self.triangles, self.normals):
            arr.setflags(write=False)

    def _corners(self):
        lo, hi = self.vertices.min(axis=0), self.vertices.max(axis=0)
        bit = np.arange(8)[:, None] >> np.arange(3) & 1
        self.core_points = np.where(bit.astype(bool), hi, lo)

    def set_vertices(self, vertices):
        """Move the vertices, keeping the topology (a deforming mesh: armature, shape keys,
        deform modifiers). ``vertices`` is (N, 3) in the *input* numbering, N the vertex
        count the mesh was built from (``input_count``). Returns the largest distance a kept
        vertex moved.

        Kept: the triangles, their adjacency and the BVH's tree (triangle order and leaves);
        recomputed: normals, active-edge flags (convexity changes with the shape), triangle
        boxes, the BVH node boxes (refit bottom-up: O(T), no sort) and the AABB corners.
        Vertices welded at construction follow their first input vertex, and triangles
        dropped at construction stay dropped. A triangle that collapses to zero area keeps
        its previous normal (its contacts stay sensible while it passes through flat).
        A refit tree answers ``query`` exactly (its boxes bound their triangles); it only
        gets looser if the deformation shuffles triangles far from their build neighbours.
        Raises EngineError (nothing changed) on a wrong shape or non-finite coordinates.

        Callers that hold the mesh in a World use ``World.set_mesh_vertices`` so the world's
        shape table and sleeping bodies follow."""
        v = np.asarray(vertices, dtype=np.float64)
        if v.shape != (self.input_count, 3):
            raise EngineError(f"TriangleMesh.set_vertices needs ({self.input_count}, 3) "
                              f"vertices (the count it was built from, same topology), got "
                              f"shape {v.shape}")
        if not np.all(np.isfinite(v)):
            bad = int(np.flatnonzero(~np.all(np.isfinite(v), axis=1))[0])
            raise EngineError(f"TriangleMesh.set_vertices: vertex {bad} is not finite "
                              f"({v[bad].tolist()}); the mesh was left unchanged")
        new = np.ascontiguousarray(v[self.source_index])
        moved = float(np.sqrt(_dot(new - self.vertices, new - self.vertices).max()))
        tv = new[self.triangles]
        cross = np.cross(tv[:, 1] - tv[:, 0], tv[:, 2] - tv[:, 0])
        area2 = np.sqrt(_dot(cross, cross))
        ok = area2 > 0.0
        normals = np.where(ok[:, None], cross / np.where(ok, area2, 1.0)[:, None], self.normals)
        self.vertices, self.normals = new, normals
        self.size = max(float(np.max(np.abs(new))), 1e-300)
        self._active_flags()
        self._corners()
        self._refit_bvh()
        for arr in (self.vertices, self.normals):
            arr.setflags(write=False)
        return moved

    def __repr__(self):
        return (f"TriangleMesh({len(self.vertices)} vertices, {len(self.triangles)} triangles, "
                f"two_sided={self.two_sided}, dropped={self.dropped})")

    @property
    def triangle_vertices(self):
        """(T, 3, 3) corner positions."""
        return self.vertices[self.triangles]

    # -- adjacency ----------------------------------------------------------------------------
    def _adjacency(self):
        tri = self.triangles
        nt = len(tri)
        a = tri.reshape(-1)
        b = np.roll(tri, -1, axis=1).reshape(-1)   # directed edge k: tri[k] -> tri[k+1]
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        key = lo * np.int64(len(self.vertices)) + hi
        order = np.argsort(key, kind="stable")
        ks = key[order]
        start = np.r_[True, ks[1:] != ks[:-1]]
        group = np.cumsum(start) - 1
        gsize = np.bincount(group)
        count = gsize[group]                         # triangles sharing this edge (sorted order)
        # Manifold edges: exactly 2 directed edges; pair each with the other one of its group.
        other = np.where(start, np.r_[order[1:], -1], np.r_[-1, order[:-1]])
        nb_sorted = np.where(count == 2, other, -1)
        nb_half = np.full(3 * nt, -1, dtype=np.int64)
        nb_half[order] = nb_sorted                   # half-edge index of the twin, or -1
        self.neighbors = np.where(nb_half >= 0, nb_half // 3, -1).reshape(nt, 3)
        twin = nb_half.reshape(nt, 3)
        has = twin >= 0
        tw = np.where(has, twin, 0)
        # Consistent winding: the twin runs the other way (b -> a).
        self._twin = (has, tw, a.reshape(nt, 3) == a[tw])
        self._active_flags()

    def _active_flags(self):
        """active_front / active_back from the normals and the (fixed) edge twins."""
        has, tw, same_dir = self._twin
        tri = self.triangles
        n1 = self.normals[:, None, :]
        n2 = self.normals[tw // 3]                   # (T, 3, 3)
        pa = self.vertices[tri]
        e = np.roll(pa, -1, axis=1) - pa             # edge vectors as wound in this triangle
        cosang = _dot(n1, n2)
        convex = _dot(e, np.cross(n1, n2)) > 0       # seen from the front
        sharp = cosang < ACTIVE_EDGE_COS
        real = ~has | same_dir | (cosang < -0.999)    # boundary, inconsistent or back-to-back
        self.active_front = real | (has & sharp & convex)
        self.active_back = real | (has & sharp & ~convex)

    # -- BVH -----------------------------------------------------------------------------------
    def _build_bvh(self):
        tv = self.triangle_vertices
        tlo, thi = tv.min(axis=1), tv.max(axis=1)
        cen = 0.5 * (tlo + thi)
        nt = len(tv)
        depth = max(0, int(np.ceil(detmath.log2(nt / LEAF_SIZE)))) if nt > LEAF_SIZE else 0
        order = np.arange(nt)
        # starts[l] (2^l + 1,): range boundaries of the nodes at level l, in the sorted order.
        bounds = np.array([0, nt])
        for _ in range(depth):
            nodes = len(bounds) - 1
            node_of = np.repeat(np.arange(nodes), np.diff(bounds))
            c = cen[order]
            clo = np.minimum.reduceat(c, bounds[:-1], axis=0)
            chi = np.maximum.reduceat(c, bounds[:-1], axis=0)
            axis = np.argmax(chi - clo, axis=1)
            keyv = c[np.arange(nt), axis[node_of]]
            order = order[np.lexsort((keyv, node_of))]
            mid = bounds[:-1] + (bounds[1:] - bounds[:-1]) // 2
            bounds = np.stack((bounds[:-1], mid), axis=1).reshape(-1)
            bounds = np.r_[bounds, nt]
        self.bvh_depth = depth
        self.bvh_order = order                       # triangle index of each sorted slot
        self.bvh_leaf_start = bounds[:-1]
        self.bvh_leaf_count = np.diff(bounds)
        self._refit_bvh()

    def _refit_bvh(self):
        """Node boxes bottom-up for the current vertices (the tree itself is kept): leaves
        from their triangles, parents from the children."""
        tv = self.triangle_vertices
        tlo, thi = tv.min(axis=1), tv.max(axis=1)
        depth, order, starts = self.bvh_depth, self.bvh_order, self.bvh_leaf_start
        s_lo, s_hi = tlo[order], thi[order]
        leaf_lo = np.minimum.reduceat(s_lo, starts, axis=0)
        leaf_hi = np.maximum.reduceat(s_hi, starts, axis=0)
        nnodes = 2 ** (depth + 1) - 1
        self.bvh_lo = np.empty((nnodes, 3))
        self.bvh_hi = np.empty((nnodes, 3))
        first = 2 ** depth - 1
        self.bvh_lo[first:] = leaf_lo
        self.bvh_hi[first:] = leaf_hi
        for level in range(depth - 1, -1, -1):
            f = 2 ** level - 1
            idx = np.arange(f, 2 * f + 1)
            self.bvh_lo[idx] = np.minimum(self.bvh_lo[2 * idx + 1], self.bvh_lo[2 * idx + 2])
            self.bvh_hi[idx] = np.maximum(self.bvh_hi[2 * idx + 1], self.bvh_hi[2 * idx + 2])
        self.tri_lo, self.tri_hi = tlo, thi

    def query(self, lo, hi):
        """Triangles whose AABB overlaps each of Q boxes (mesh frame): (box index, triangle)
        pairs sorted by box then triangle, exactly the brute-force answer (closed intervals).
        A compiled depth-first walk per box (bvh_query)."""
        lo = np.ascontiguousarray(lo, dtype=np.float64).reshape(-1, 3)
        hi = np.ascontiguousarray(hi, dtype=np.float64).reshape(-1, 3)
        return bvh_query(lo, hi, self.bvh_lo, self.bvh_hi, self.bvh_depth,
                         self.bvh_leaf_start, self.bvh_leaf_count, self.bvh_order,
                         self.tri_lo, self.tri_hi)


def check_body_shape(shape, kind):
    """Refuse a triangle mesh on a dynamic body, with what to do instead (world.add_body calls
    this for every body; ``kind`` is a BodyKind or its lower-case name)."""
    if (getattr(shape, "kind", None) == ShapeKind.TRIANGLE_MESH
            and BodyKind.parse(kind) == BodyKind.DYNAMIC):
        raise EngineError("a triangle mesh (shape 'Mesh') cannot be a dynamic body: it has no "
                          "closed volume to give it mass and tumbling meshes are slow and "
                          "unstable. Use a convex hull, a compound of convex parts, or an "
                          "automatic convex decomposition for dynamic objects; triangle meshes "
                          "are for passive (static or animated) scenery")


@kernel
def bvh_query(lo, hi, node_lo, node_hi, depth, leaf_start, leaf_count, order, tri_lo, tri_hi):
    """(box, triangle) pairs whose closed boxes overlap, sorted by box then triangle.

    lo, hi (Q, 3) query boxes; node_lo/hi the implicit tree's boxes (children of i: 2i+1,
    2i+2; leaves at ``depth``); leaf_start/count slots of each leaf in ``order``."""
    nq = lo.shape[0]
    out_q = np.empty(max(16, 8 * nq), np.int64)
    out_t = np.empty(out_q.shape[0], np.int64)
    n = 0
    stack = np.empty(2 * (depth + 2), np.int64)
    for q in range(nq):
        start = n
        out_t, n = bvh_walk(lo, hi, q, node_lo, node_hi, depth, leaf_start, leaf_count, order,
                            tri_lo, tri_hi, out_t, n, stack)
        if out_q.shape[0] < out_t.shape[0]:
            grow = np.empty(out_t.shape[0], np.int64)
            grow[:start] = out_q[:start]
            out_q = grow
        out_q[start:n] = q
    return out_q[:n].copy(), out_t[:n].copy()


@kernel
def bvh_walk(lo, hi, q, node_lo, node_hi, depth, leaf_start, leaf_count, order, tri_lo,
             tri_hi, out, n, stack):
    """Append to out[n:] the triangles whose closed box overlaps box q of lo, hi (Q, 3),
    in increasing order (a depth-first walk of the tree, then a sort); returns (out, the new
    n), out grown (doubled) when full. stack: (2 * (depth + 2),) scratch."""
    start = n
    first_leaf = (1 << depth) - 1
    top = 1
    stack[0] = 0
    while top > 0:
        top -= 1
        node = stack[top]
        hit = True
        for j in range(3):
            if not (node_lo[node, j] <= hi[q, j] and lo[q, j] <= node_hi[node, j]):
                hit = False
                break
        if not hit:
            continue
        if node < first_leaf:
            stack[top] = 2 * node + 2
            stack[top + 1] = 2 * node + 1
            top += 2
            continue
        leaf = node - first_leaf
        s0 = leaf_start[leaf]
        for s in range(s0, s0 + leaf_count[leaf]):
            tri = order[s]
            inside = True
            for j in range(3):
                if not (tri_lo[tri, j] <= hi[q, j] and lo[q, j] <= tri_hi[tri, j]):
                    inside = False
                    break
            if not inside:
                continue
            if n == out.shape[0]:
                grow = np.empty(2 * n, np.int64)
                grow[:n] = out[:n]
                out = grow
            out[n] = tri
            n += 1
    out[start:n].sort()
    return out, n
