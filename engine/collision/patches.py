"""Flat sides of hulls: the outline each face clips with (clip.face_contact).

A hull of scanned or sculpted points (a rough brick, a stone with flat sides) has sides made of
dozens of faces a degree apart. Clipping one of those faces against another gives a contact the
size of a sliver, and a stack of such bricks falls over on it. So the faces are grouped into
flat sides: the largest face not yet in a side seeds one, which takes the faces reached across
shared edges whose normals lie within PATCH_DEG of the seed's. Every face of a side clips with
the side's outline, its *patch*: at most PATCH_MAX of the side's vertices, convex and
counter-clockwise about the seed normal like a face loop. A face alone in its side (a box, most
rocks) keeps its own loop, so its contacts are unchanged. Grouping (instead of one flood per
face) keeps the work linear: a hull of 6,000 faces within a few degrees of each other took
minutes with a flood and an outline per face.

The patch's vertices are real vertices of the hull. They lie under the plane of whichever face
uses the patch (that plane supports the hull), at most a few PATCH_DEG of slope away from it,
so a point clipped on a patch reads a separation within that sag of the true one
(tests/test_manifold.py holds them to ray-cast truth).
"""
import math

import numpy as np

from .clip import tangent_basis

PATCH_DEG = 3.0
PATCH_MAX = 8
_COS_LIMIT = math.cos(math.radians(PATCH_DEG))   # one scalar, the C library's


def face_patches(shape):
    """Patch loop (vertex indices) of every face of a Polytope, in face order."""
    normals = shape.planes[:, :3]
    nf = len(shape.faces)
    neighbours = _face_neighbours(nf, shape.edge_faces)
    loops = [np.asarray(f) for f in shape.faces]
    taken = np.zeros(nf, dtype=bool)
    for seed in np.argsort(-_face_areas(shape), kind="stable"):
        if taken[seed]:
            continue
        members = _flood(seed, normals, neighbours, taken)
        if len(members) > 1:
            outline = _outline(shape, members, normals[seed])
            for g in members:
                loops[g] = outline
    return loops


def _face_areas(shape):
    out = np.empty(len(shape.faces))
    for f, loop in enumerate(shape.faces):
        v = shape.vertices[loop]
        out[f] = 0.5 * np.linalg.norm(np.cross(v, np.roll(v, -1, axis=0)).sum(axis=0))
    return out


def _face_neighbours(nfaces, edge_faces):
    out: list[list[int]] = [[] for _ in range(nfaces)]
    for a, b in edge_faces:
        out[a].append(int(b))
        out[b].append(int(a))
    return out


def _flood(seed, normals, neighbours, taken):
    """The faces reached from seed across shared edges within the cone (marks them taken)."""
    n = normals[seed]
    members, todo = [int(seed)], [int(seed)]
    taken[seed] = True
    while todo:
        g = todo.pop()
        for h in neighbours[g]:
            if not taken[h] and normals[h] @ n >= _COS_LIMIT:
                taken[h] = True
                members.append(h)
                todo.append(h)
    return members


def _outline(shape, members, n):
    verts = np.unique(np.concatenate([shape.faces[g] for g in members]))
    u, v = tangent_basis(n[None])    # (u, v, n) right-handed: CCW in (x, y) is CCW about n
    pts = shape.vertices[verts]
    x, y = pts @ u[0], pts @ v[0]
    ring = _reduce_ring(x, y, _convex_ring(x, y), PATCH_MAX)
    return verts[ring]


def _convex_ring(x, y):
    """Indices of the 2D convex hull, counter-clockwise (Andrew's monotone chain)."""
    order = sorted(range(len(x)), key=lambda i: (x[i], y[i]))

    def turn(o, a, b):
        return (x[a] - x[o]) * (y[b] - y[o]) - (y[a] - y[o]) * (x[b] - x[o])

    lower: list[int] = []
    upper: list[int] = []
    for i in order:
        while len(lower) >= 2 and turn(lower[-2], lower[-1], i) <= 0:
            lower.pop()
        lower.append(i)
    for i in reversed(order):
        while len(upper) >= 2 and turn(upper[-2], upper[-1], i) <= 0:
            upper.pop()
        upper.append(i)
    return lower[:-1] + upper[:-1]


def _reduce_ring(x, y, ring, keep):
    """Drop the vertex that loses the least area until at most ``keep`` remain (so the patch
    stays as wide as it can with a bounded loop)."""
    ring = list(ring)
    while len(ring) > keep:
        k = len(ring)
        areas = [abs((x[ring[i]] - x[ring[i - 1]]) * (y[ring[(i + 1) % k]] - y[ring[i - 1]])
                     - (y[ring[i]] - y[ring[i - 1]]) * (x[ring[(i + 1) % k]] - x[ring[i - 1]]))
                 for i in range(k)]
        ring.pop(int(np.argmin(areas)))
    return ring
