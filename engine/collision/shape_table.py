"""Padded structure-of-arrays view of a set of shapes, for the batched queries.

Shapes are few and shared (1000 cubes use one Box), so the table is indexed by *shape id*
and a batch of M pairs gathers rows with fancy indexing: ``table.points[ids_a]`` is (M, V, 3).

Padding rule: rows are padded by *repeating the first element* (point 0, plane 0, edge 0), so a
max/argmax over the padded axis gives the same answer as over the real elements and the
hot loops need no masks. Face loops are the exception: they are padded with -1 (see
``face_sizes``) because a repeated vertex would make a zero-length clipping edge.

A batch whose shapes are all small can slice the padded axis down to its own maximum
(``table.points[ids_a, :table.npoints[ids_a].max()]``): padding by repetition keeps that valid.
"""
import types

import numpy as np

from ..core.kinds import ShapeKind
from ..shapes.curved import CURVED_KINDS
from ..shapes.primitives import Box
from .patches import face_patches


class ShapeTable:
    def __init__(self, shapes=()):
        self.shapes = []
        self._ids = {}
        self._dirty = True
        for s in shapes:
            self.add(s)

    def add(self, shape):
        """Id of the shape, adding it on first sight (keyed by identity: shapes are immutable)."""
        key = id(shape)
        if key not in self._ids:
            self._ids[key] = len(self.shapes)
            self.shapes.append(shape)
            self._unpublish()
        return self._ids[key]

    def refresh(self, shape):
        """A shape's rows after it changed in place (a TriangleMesh's set_vertices): its
        bounding points and radius. Only meshes change, and their 8 AABB corners always fit
        the padded rows, so the rest of the table stays valid."""
        i = self._ids.get(id(shape))
        if i is None or self._dirty:
            return  # not in the table yet, or rebuilt from the shapes on next use anyway
        pts = shape.core_points
        a = self._arrays
        a["points"][i] = pts[0]
        a["points"][i, :len(pts)] = pts
        a["bound_radius"][i] = shape.bounding_radius()

    def __len__(self):
        return len(self.shapes)

    def __getattr__(self, name):
        # Array attributes live in self._arrays and are (re)built lazily after a change, so a
        # shape added after the first step is seen by the next one.
        if name.startswith("_") or name == "shapes":
            raise AttributeError(name)
        if self._dirty:
            self._build()
        try:
            return self._arrays[name]
        except KeyError:
            raise AttributeError(name) from None

    def _build(self):
        # Arrays are written as attributes of a namespace, then published in one go.
        out = types.SimpleNamespace()
        shapes = self.shapes
        s = len(shapes)
        polys = [sh for sh in shapes if sh.kind == ShapeKind.POLYTOPE]
        vmax = max([len(sh.core_points) for sh in shapes] + [1])
        fmax = max([len(sh.faces) for sh in polys] + [1])
        emax = max([len(sh.edges) for sh in polys] + [1])
        pmax = max([len(f) for sh in polys for f in sh.faces] + [3])
        patches = [self._patches(sh) for sh in polys]
        qmax = max([len(lp) for ps in patches for lp in ps] + [3])

        out.kind = np.array([sh.kind for sh in shapes], dtype=np.int8).reshape(s)
        # Swelling radius (curved.Cylinder/Cone use .radius for their own size and swell by 0).
        out.radius = np.array([getattr(sh, "swell_radius", sh.radius)
                               for sh in shapes], dtype=np.float64).reshape(s)
        out.npoints = np.array([len(sh.core_points) for sh in shapes], dtype=np.int64).reshape(s)
        out.points = np.zeros((s, vmax, 3))
        out.nfaces = np.zeros(s, dtype=np.int64)
        out.planes = np.zeros((s, fmax, 4))
        out.face_sizes = np.zeros((s, fmax), dtype=np.int64)
        out.face_loops = np.full((s, fmax, pmax), -1, dtype=np.int64)
        out.nedges = np.zeros(s, dtype=np.int64)
        out.edges = np.zeros((s, emax, 2), dtype=np.int64)
        out.edge_dirs = np.zeros((s, emax, 3))
        out.edge_normals = np.zeros((s, emax, 2, 3))
        out.edge_faces = np.zeros((s, emax, 2), dtype=np.int64)  # face indices beside each edge
        # face_has_point[s, f, v]: point v is a corner of face f (clip.py picks the incident face
        # among the faces of the deepest point, so the clip always holds that point).
        out.face_has_point = np.zeros((s, fmax, vmax), dtype=bool)
        # Each face's patch (engine.collision.patches: the flat side around it; the face's own loop when
        # it has no neighbour within PATCH_DEG), padded like face_loops, for clip.face_contact.
        out.patch_sizes = np.zeros((s, fmax), dtype=np.int64)
        out.patch_loops = np.full((s, fmax, qmax), -1, dtype=np.int64)
        out.patch_has_point = np.zeros((s, fmax, vmax), dtype=bool)
        out.patched = np.zeros((s, fmax), dtype=bool)     # the patch is more than the face
        # Boxes get the analytic 15-axis SAT fast path.
        out.is_box = np.array([isinstance(sh, Box) for sh in shapes], dtype=bool).reshape(s)
        out.box_half = np.array([sh.half_extents if isinstance(sh, Box) else np.zeros(3)
                                 for sh in shapes], dtype=np.float64).reshape(s, 3)
        # Cylinder/Cone size (curved.py); 0 for other shapes.
        curved = [sh.kind in CURVED_KINDS for sh in shapes]
        out.curved_radius = np.array([sh.radius if c else 0.0 for sh, c in zip(shapes, curved)],
                                     dtype=np.float64).reshape(s)
        out.half_height = np.array([sh.half_height if c else 0.0 for sh, c in zip(shapes, curved)],
                                   dtype=np.float64).reshape(s)
        # Bounding radius about the local origin, for cheap culling and CCD.
        out.bound_radius = np.array([sh.bounding_radius() for sh in shapes]).reshape(s)
        for i, sh in enumerate(shapes):
            pts = sh.core_points
            out.points[i] = pts[0]
            out.points[i, :len(pts)] = pts
            if sh.kind != ShapeKind.POLYTOPE:
                continue
            nf, ne = len(sh.faces), len(sh.edges)
            out.nfaces[i] = nf
            out.planes[i] = sh.planes[0]
            out.planes[i, :nf] = sh.planes
            for fi, loop in enumerate(sh.faces):
                out.face_sizes[i, fi] = len(loop)
                out.face_loops[i, fi, :len(loop)] = loop
                out.face_has_point[i, fi, loop] = True
            out.face_has_point[i, nf:] = out.face_has_point[i, 0]   # padding repeats face 0
            for fi, loop in enumerate(self._patches(sh)):
                out.patch_sizes[i, fi] = len(loop)
                out.patch_loops[i, fi, :len(loop)] = loop
                out.patch_has_point[i, fi, loop] = True
                out.patched[i, fi] = not np.array_equal(loop, sh.faces[fi])
            out.patch_has_point[i, nf:] = out.patch_has_point[i, 0]
            out.nedges[i] = ne
            out.edges[i] = sh.edges[0]
            out.edges[i, :ne] = sh.edges
            dirs = sh.edge_directions
            out.edge_dirs[i] = dirs[0]
            out.edge_dirs[i, :ne] = dirs
            en = sh.planes[sh.edge_faces, :3]  # (E, 2, 3)
            out.edge_normals[i] = en[0]
            out.edge_normals[i, :ne] = en
            out.edge_faces[i] = sh.edge_faces[0]
            out.edge_faces[i, :ne] = sh.edge_faces
        self._arrays = vars(out)
        self._dirty = False
        # Published as plain attributes too: a collision pass reads the table a few hundred
        # times, and an instance attribute costs no __getattr__ call.
        self.__dict__.update(self._arrays)

    def _patches(self, shape):
        # Shapes are immutable and the table is rebuilt whenever one is added: compute once.
        cache = self.__dict__.setdefault("_patch_cache", {})
        key = id(shape)
        if key not in cache:
            cache[key] = (shape, face_patches(shape))
        return cache[key][1]

    def _unpublish(self):
        for name in getattr(self, "_arrays", {}):
            self.__dict__.pop(name, None)
        self._dirty = True
