"""Convex shapes. Every shape is a convex *core* (a point set) swollen by a radius:

- polytopes (Box, ConvexHull): core = the vertices, radius 0, plus face/edge topology;
- Sphere: core = the centre point, radius r;
- Capsule: core = a segment along local Z from -half_height to +half_height, radius r.

This single form lets GJK, support mapping and AABBs treat all shapes alike, while SAT and
face clipping use the polytope topology. Shapes are immutable and shared between bodies.
"""
import numpy as np

from ..core.errors import DegenerateShapeError
from ..core.kinds import ShapeKind


def _finite_positive(value, what):
    arr = np.asarray(value, dtype=np.float64)
    if not np.all(np.isfinite(arr)):
        raise DegenerateShapeError(f"{what} must be finite, got {value!r}")
    if np.any(arr <= 0):
        raise DegenerateShapeError(f"{what} must be positive, got {value!r}; "
                                   "give every dimension a size above zero")
    return arr


class Shape:
    """Base of every convex shape. Subclasses set ``kind`` and ``core_points`` (V, 3) float64."""
    kind: ShapeKind
    radius = 0.0
    core_points: np.ndarray

    def local_aabb(self):
        lo = self.core_points.min(axis=0) - self.radius
        hi = self.core_points.max(axis=0) + self.radius
        return lo, hi

    def bounding_radius(self):
        """Radius of a sphere about the local origin containing the shape."""
        return float(np.linalg.norm(self.core_points, axis=1).max() + self.radius)

    def support(self, direction):
        """Farthest point of the shape along a local direction (single-pair convenience)."""
        d = np.asarray(direction, dtype=np.float64)
        p = self.core_points[np.argmax(self.core_points @ d)]
        n = np.linalg.norm(d)
        return p + (self.radius * d / n if n > 0 else 0.0)


class Polytope(Shape):
    """A convex polyhedron with topology. Subclasses set vertices and faces, then call _finish()."""
    kind = ShapeKind.POLYTOPE

    def _finish(self, vertices, faces):
        self.vertices = np.ascontiguousarray(vertices, dtype=np.float64)
        self.faces = [np.asarray(f, dtype=np.int64) for f in faces]
        self.core_points = self.vertices
        topo = polytope_topology(self.vertices, self.faces)
        self.planes, self.edges, self.edge_faces, self.vertex_neighbors = topo
        self.vertices.setflags(write=False)
        self.planes.setflags(write=False)

    @property
    def face_normals(self):
        return self.planes[:, :3]

    @property
    def edge_directions(self):
        d = self.vertices[self.edges[:, 1]] - self.vertices[self.edges[:, 0]]
        return d / np.linalg.norm(d, axis=1, keepdims=True)


def polytope_topology(vertices, faces):
    """Planes, unique edges with their two faces, and vertex neighbours from CCW outward faces.

    planes (F, 4): unit outward normal n (Newell's method, robust for polygons) and d = n . p.
    edges (E, 2): vertex index pairs i < j. edge_faces (E, 2): the faces on either side, the
    first being the one in which the edge runs i -> j (the Gauss-map arc goes between them).
    vertex_neighbors: list of int arrays, the vertices sharing an edge with each vertex.
    """
    planes = np.empty((len(faces), 4))
    directed: dict[tuple[int, int], int] = {}
    for fi, loop in enumerate(faces):
        p = vertices[loop]
        q = np.roll(p, -1, axis=0)
        n = np.array([np.sum((p[:, 1] - q[:, 1]) * (p[:, 2] + q[:, 2])),
                      np.sum((p[:, 2] - q[:, 2]) * (p[:, 0] + q[:, 0])),
                      np.sum((p[:, 0] - q[:, 0]) * (p[:, 1] + q[:, 1]))])
        norm = np.linalg.norm(n)
        if norm == 0:
            raise DegenerateShapeError(f"face {fi} has zero area")
        n /= norm
        planes[fi, :3] = n
        planes[fi, 3] = float(np.mean(p @ n))
        for a, b in zip(loop, np.roll(loop, -1)):
            directed[(int(a), int(b))] = fi
    pairs, sides = [], []
    for (a, b), f in directed.items():
        if a < b:
            other = directed.get((b, a))
            if other is None:
                raise DegenerateShapeError("faces do not form a closed surface: "
                                           f"edge {a}-{b} has only one face")
            pairs.append((a, b))
            sides.append((f, other))
    edges = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    order = np.lexsort((edges[:, 1], edges[:, 0]))
    edges = edges[order]
    edge_faces = np.array(sides, dtype=np.int64).reshape(-1, 2)[order]
    adjacent: list[list[int]] = [[] for _ in range(len(vertices))]
    for a, b in edges:
        adjacent[a].append(b)
        adjacent[b].append(a)
    neighbors = [np.array(sorted(n), dtype=np.int64) for n in adjacent]
    return planes, edges, edge_faces, neighbors


class Box(Polytope):
    """Axis-aligned box about the local origin with the given half extents (hx, hy, hz)."""

    # Corner i has signs from its bits: x = bit 0, y = bit 1, z = bit 2.
    _FACES = [
        [0, 4, 6, 2],  # -x
        [1, 3, 7, 5],  # +x
        [0, 1, 5, 4],  # -y
        [2, 6, 7, 3],  # +y
        [0, 2, 3, 1],  # -z
        [4, 5, 7, 6],  # +z
    ]

    def __init__(self, half_extents):
        h = _finite_positive(half_extents, "Box half extents")
        if h.shape == ():
            h = np.full(3, float(h))
        if h.shape != (3,):
            raise DegenerateShapeError(f"Box half extents must be 3 numbers, got {half_extents!r}")
        self.half_extents = h
        signs = np.array([[1 if i & 1 else -1, 1 if i & 2 else -1, 1 if i & 4 else -1]
                          for i in range(8)], dtype=np.float64)
        self._finish(signs * h, self._FACES)

    def __repr__(self):
        return f"Box(half_extents={self.half_extents.tolist()})"


class Sphere(Shape):
    kind = ShapeKind.SPHERE

    def __init__(self, radius):
        self.radius = float(_finite_positive(radius, "Sphere radius"))
        self.core_points = np.zeros((1, 3))

    def __repr__(self):
        return f"Sphere(radius={self.radius})"


class Capsule(Shape):
    """Capsule along local Z: a segment from (0, 0, -half_height) to (0, 0, half_height),
    swollen by radius."""
    kind = ShapeKind.CAPSULE

    def __init__(self, radius, half_height):
        self.radius = float(_finite_positive(radius, "Capsule radius"))
        hh = np.asarray(half_height, dtype=np.float64)
        if not np.isfinite(hh) or hh < 0:
            raise DegenerateShapeError(f"Capsule half height must be finite and >= 0, got {half_height!r}")
        self.half_height = float(hh)
        self.core_points = np.array([[0.0, 0.0, -self.half_height], [0.0, 0.0, self.half_height]])

    def __repr__(self):
        return f"Capsule(radius={self.radius}, half_height={self.half_height})"
