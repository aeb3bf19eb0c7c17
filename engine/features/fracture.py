"""Voronoi fracture: a closed mesh cut into the Voronoi cells of a point set, exactly.

Each cell of seed i is the mesh clipped by the bisector half-spaces of the seeds nearest to i
(``(x - p_i) . (p_j - p_i) <= (|p_j|^2 - |p_i|^2) / 2 - p_i . (p_j - p_i)``), in order of distance,
until the next seed is more than twice as far as the piece's farthest vertex (no further
bisector can touch it). Clipping a closed polygon mesh by a plane keeps the faces (or parts of
faces) inside and caps the cut: the boundary edges of what is kept are chained into loops in
the plane; a single convex loop (always so for a convex mesh) becomes one polygon, anything
else (a torus cut through its hole: an annulus; a vase: several islands) is triangulated by
ear clipping with the holes bridged in. So convex and closed non-convex meshes take the same
path, and the pieces tile the mesh: their volumes add up to the mesh's to rounding.

The mesh's faces must be planar convex polygons (triangulate others first; see
``convex_faces``). A piece's faces carry a label: ``>= 0`` the index of the mesh face it is a
part of (an outer face, which keeps that face's UVs and material), ``< 0`` an inner face,
``-1 - j`` against the cell of seed j. Bonds (pieces sharing a face) come from the inner
labels. A cell that falls apart into several pieces (a cell across both arms of a U) gives a
piece per connected part.

Deterministic: the same mesh, points and seed give the same pieces bit for bit.
"""
from dataclasses import dataclass

import numpy as np

from ..core import detmath
from ..core.errors import EngineError

__all__ = [
    "MAX_PIECES",
    "Fracture",
    "Piece",
    "check_closed",
    "cluster_points",
    "convex_faces",
    "fracture",
    "mesh_volume",
    "volume_points",
]

# More cells than this is a mistake (each piece becomes a body and an object), not a request.
MAX_PIECES = 20000
# Relative tolerance (of the mesh size) under which a vertex lies on a cutting plane.
PLANE_EPS = 1e-9


@dataclass
class Piece:
    """One fractured piece: a closed polygon mesh in the original mesh's coordinates."""
    vertices: np.ndarray      # (V, 3)
    face_sizes: np.ndarray    # (F,) vertices per face
    face_verts: np.ndarray    # (sum(face_sizes),) vertex indices, faces one after another
    face_labels: np.ndarray   # (F,) >= 0 mesh face, -1 - j inner face against seed j's cell
    seed: int                 # the seed whose cell this is
    volume: float
    centroid: np.ndarray      # (3,) centre of mass (uniform density)
    convex: bool

    def faces(self):
        """Faces as a list of vertex-index arrays."""
        return np.split(self.face_verts, np.cumsum(self.face_sizes)[:-1])


@dataclass
class Fracture:
    """The pieces and their bonds: pieces a[k], b[k] share a face of ``area[k]`` (m^2)
    whose area-weighted centre is ``centre[k]``."""
    pieces: list
    bond_a: np.ndarray
    bond_b: np.ndarray
    bond_area: np.ndarray
    bond_centre: np.ndarray
    mesh_volume: float


# -- mesh checks ------------------------------------------------------------------------------
def _as_mesh(vertices, faces):
    v = np.ascontiguousarray(vertices, dtype=np.float64).reshape(-1, 3)
    if isinstance(faces, np.ndarray) and faces.ndim == 2:
        sizes = np.full(len(faces), faces.shape[1], dtype=np.int64)
        flat = faces.astype(np.int64).ravel()
    else:
        faces = [np.asarray(f, dtype=np.int64) for f in faces]
        sizes = np.array([len(f) for f in faces], dtype=np.int64)
        flat = np.concatenate(faces) if faces else np.zeros(0, np.int64)
    if not np.all(np.isfinite(v)):
        raise EngineError("the mesh has non-finite vertex coordinates")
    if len(sizes) == 0 or np.any(sizes < 3):
        raise EngineError("the mesh needs faces of 3 or more vertices")
    if flat.min() < 0 or flat.max() >= len(v):
        raise EngineError("a face refers to a vertex that does not exist")
    return v, sizes, flat


def _starts(sizes):
    s = np.zeros(len(sizes), dtype=np.int64)
    np.cumsum(sizes[:-1], out=s[1:])
    return s


def _next_corner(sizes):
    """For each corner (face vertex) the index of the next corner of the same face."""
    starts = _starts(sizes)
    face_of = np.repeat(np.arange(len(sizes)), sizes)
    local = np.arange(len(face_of)) - starts[face_of]
    return starts[face_of] + (local + 1) % sizes[face_of], face_of


def check_closed(vertices, faces):
    """Raise EngineError unless every edge is used exactly twice, once in each direction
    (a closed, consistently oriented 2-manifold). Returns the number of edges."""
    v, sizes, flat = _as_mesh(vertices, faces)
    return _check_closed(v, sizes, flat)


def _check_closed(v, sizes, flat):
    nxt, _ = _next_corner(sizes)
    a, b = flat, flat[nxt]
    n = np.int64(len(v))
    keys = a * n + b
    uniq, counts = np.unique(keys, return_counts=True)
    if np.any(a == b):
        raise EngineError("the mesh has a degenerate face (a repeated vertex)")
    if np.any(counts > 1):
        raise EngineError("the mesh is non-manifold or has inconsistently oriented faces "
                          "(an edge is used twice in the same direction); recalculate normals "
                          "or fix the mesh")
    if not np.all(np.isin(b * n + a, uniq)):
        raise EngineError("the mesh is open (has boundary edges); close the holes so it "
                          "encloses a volume")
    return len(uniq) // 2


def convex_faces(vertices, faces, tol=1e-9):
    """(F,) bool: faces that are planar convex polygons (fracture needs those; triangulate
    the others)."""
    v, sizes, flat = _as_mesh(vertices, faces)
    nxt, face_of = _next_corner(sizes)
    nn = nxt[nxt]
    e1 = v[flat[nxt]] - v[flat]
    e2 = v[flat[nn]] - v[flat[nxt]]
    cr = np.cross(e1, e2)
    normal = np.zeros((len(sizes), 3))
    np.add.at(normal, face_of, np.cross(v[flat], v[flat[nxt]]))
    scale = max(float(np.ptp(v, axis=0).max()), 1e-300)
    ok = np.ones(len(sizes), dtype=bool)
    turn = np.einsum("ij,ij->i", cr, normal[face_of])
    np.logical_and.at(ok, face_of, turn >= -tol * scale ** 4)
    nl = np.linalg.norm(normal, axis=1)
    unit = normal / np.where(nl > 0, nl, 1.0)[:, None]
    off = np.einsum("ij,ij->i", v[flat] - v[flat[_starts(sizes)[face_of]]], unit[face_of])
    np.logical_and.at(ok, face_of, np.abs(off) <= tol * scale)
    return ok & (nl > 0)


def _check_solid(v, sizes, flat):
    """Closed, manifold and with volume (signed volume, size) or EngineError."""
    _check_closed(v, sizes, flat)
    vol, _ = _volume_centroid(v, sizes, flat)
    scale = float(np.ptp(v, axis=0).max())
    if not scale > 0 or not abs(vol) > 1e-12 * scale ** 3:
        raise EngineError("the mesh has no volume (it is flat); fracture needs a closed solid")
    return vol, scale


def _volume_centroid(v, sizes, flat):
    """Signed volume and centroid of a closed polygon mesh (faces fanned from their first
    vertex; exact for planar faces)."""
    starts = _starts(sizes)
    nxt, face_of = _next_corner(sizes)
    first = starts[face_of]
    sel = (np.arange(len(flat)) != first) & (nxt != first)
    a = v[flat[first[sel]]]
    b = v[flat[sel]]
    c = v[flat[nxt[sel]]]
    d6 = np.einsum("ij,ij->i", a, np.cross(b, c))
    vol = d6.sum() / 6.0
    if vol == 0.0:
        return 0.0, np.zeros(3)
    cen = (d6[:, None] * (a + b + c)).sum(axis=0) / (24.0 * vol)
    return float(vol), cen


def mesh_volume(vertices, faces):
    """Signed volume of a closed mesh with planar faces (positive when outward oriented)."""
    v, sizes, flat = _as_mesh(vertices, faces)
    return _volume_centroid(v, sizes, flat)[0]


def _face_areas(v, sizes, flat):
    """Vector area (F, 3) of each planar face."""
    nxt, face_of = _next_corner(sizes)
    out = np.zeros((len(sizes), 3))
    np.add.at(out, face_of, np.cross(v[flat], v[flat[nxt]]))
    return 0.5 * out


# -- seed points ------------------------------------------------------------------------------
def _triangles(v, sizes, flat):
    starts = _starts(sizes)
    nxt, face_of = _next_corner(sizes)
    first = starts[face_of]
    sel = (np.arange(len(flat)) != first) & (nxt != first)
    return v[flat[first[sel]]], v[flat[sel]], v[flat[nxt[sel]]]


def inside_mesh(points, vertices, faces, chunk=256):
    """(P,) bool: points inside the closed mesh (generalised winding number > 1/2;
    Van Oosterom-Strackee solid angles, summed over the triangles)."""
    v, sizes, flat = _as_mesh(vertices, faces)
    return _inside(points, v, sizes, flat, chunk)


def _inside(points, v, sizes, flat, chunk=256):
    ta, tb, tc = _triangles(v, sizes, flat)
    p = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    out = np.zeros(len(p), dtype=bool)
    for s in range(0, len(p), chunk):
        q = p[s:s + chunk, None, :]
        a, b, c = ta[None] - q, tb[None] - q, tc[None] - q
        la, lb, lc = (np.linalg.norm(x, axis=2) for x in (a, b, c))
        num = np.einsum("pti,pti->pt", a, np.cross(b, c))
        den = (la * lb * lc + np.einsum("pti,pti->pt", a, b) * lc
               + np.einsum("pti,pti->pt", b, c) * la + np.einsum("pti,pti->pt", c, a) * lb)
        w = detmath.arctan2(num, den).sum(axis=1) / (2.0 * np.pi)
        out[s:s + chunk] = w > 0.5
    return out


def _sample_inside(mesh, n, rng, draw):
    """n points from draw(rng, m) kept where inside the mesh (rejection, in rounds)."""
    got = []
    count = 0
    for _ in range(64):
        m = max(64, 2 * (n - count))
        p = draw(rng, m)
        p = p[_inside(p, *mesh)]
        got.append(p)
        count += len(p)
        if count >= n:
            return np.concatenate(got)[:n]
    raise EngineError("could not place seed points inside the mesh (is it closed and does it "
                      "have volume?)")


def volume_points(vertices, faces, n, seed=0):
    """n points uniform in the mesh's volume (deterministic for the seed)."""
    v, sizes, flat = _as_mesh(vertices, faces)
    _check_solid(v, sizes, flat)
    lo, hi = v.min(axis=0), v.max(axis=0)
    rng = np.random.default_rng(seed)
    return _sample_inside((v, sizes, flat), n, rng,
                          lambda r, m: lo + (hi - lo) * r.random((m, 3)))


def cluster_points(vertices, faces, n, centre, radius, seed=0):
    """n points inside the mesh, normally distributed (sigma = radius) about ``centre``: fine
    pieces near an impact point, coarse ones away from it."""
    v, sizes, flat = _as_mesh(vertices, faces)
    _check_solid(v, sizes, flat)
    c = np.asarray(centre, dtype=np.float64).reshape(3)
    r = float(radius)
    if not r > 0:
        raise EngineError(f"cluster radius must be positive, got {radius!r}")
    rng = np.random.default_rng(seed)
    return _sample_inside((v, sizes, flat), n, rng, lambda g, m: c + r * g.standard_normal((m, 3)))


# -- clipping ---------------------------------------------------------------------------------
class _Poly:
    """A closed polygon mesh being clipped: vertices, face sizes, flat loops, face labels."""
    __slots__ = ("flat", "labels", "sizes", "v")

    def __init__(self, v, sizes, flat, labels):
        self.v, self.sizes, self.flat, self.labels = v, sizes, flat, labels


def _clip(poly, n, d, label, eps, convex=False):
    """Keep the part of poly with n.x <= d and cap the cut with faces labelled ``label``.
    Returns poly itself when nothing is cut off, None when nothing is left."""
    v = poly.v
    s = v @ n - d
    on = np.abs(s) <= eps
    s[on] = 0.0
    out = s > 0.0
    if not out.any():
        return poly
    inside = s < 0.0
    if not inside.any():
        return None
    flat, sizes = poly.flat, poly.sizes
    nxt, face_of = _next_corner(sizes)
    a, b = flat, flat[nxt]
    keep = ~out[a]
    cross = (inside[a] & out[b]) | (out[a] & inside[b])
    # New vertices: one per cut edge, computed from the edge's lower index so both faces
    # sharing the edge get the same point, bit for bit.
    nv = np.int64(len(v))
    lo, hi = np.minimum(a[cross], b[cross]), np.maximum(a[cross], b[cross])
    ekeys, inv = np.unique(lo * nv + hi, return_inverse=True)
    elo, ehi = ekeys // nv, ekeys % nv
    t = s[elo] / (s[elo] - s[ehi])
    newp = v[elo] + t[:, None] * (v[ehi] - v[elo])
    # Each corner emits its vertex (if kept) then the crossing point (if its edge is cut).
    count = keep.astype(np.int64) + cross
    pos = np.cumsum(count) - count
    total = int(count.sum())
    loop = np.empty(total, dtype=np.int64)
    loop[pos[keep]] = a[keep]
    loop[pos[cross] + keep[cross]] = nv + inv.reshape(-1)
    fsize = np.bincount(face_of, weights=count, minlength=len(sizes)).astype(np.int64)
    good = fsize >= 3
    if not good.all():
        owner = np.repeat(np.arange(len(sizes)), fsize)
        loop = loop[good[owner]]
        fsize = fsize[good]
    labels = poly.labels[good]
    allv = np.concatenate((v, newp))
    onv = np.concatenate((on, np.ones(len(newp), dtype=bool)))
    if convex:
        caps = _cap_convex(allv, loop, fsize, onv, n)
    else:
        # Boundary edges of what is kept (their reverse is missing): the cut loops.
        nx2, _ = _next_corner(fsize)
        ea, eb = loop, loop[nx2]
        m = np.int64(len(allv))
        fwd = ea * m + eb
        cand = onv[ea] & onv[eb]
        bnd = cand & ~np.isin(fwd, eb[cand] * m + ea[cand])
        caps = _cap(allv, ea[bnd], eb[bnd], n)
    if caps:
        loop = np.concatenate([loop] + caps)
        fsize = np.concatenate((fsize, [len(c) for c in caps]))
        labels = np.concatenate((labels, np.full(len(caps), label, dtype=np.int64)))
    # Compact: drop vertices no face uses any more.
    used = np.zeros(len(allv), dtype=bool)
    used[loop] = True
    remap = np.cumsum(used) - 1
    return _Poly(allv[used], fsize, remap[loop], labels)


def _plane_basis(n):
    """Unit u, w with (u, w, n) right-handed."""
    if abs(n[0]) < 0.9:
        u = np.array([0.0, n[2], -n[1]])      # n x (1, 0, 0)
    else:
        u = np.array([-n[2], 0.0, n[0]])      # n x (0, 1, 0)
    u /= np.sqrt(u @ u)
    w = np.array([n[1] * u[2] - n[2] * u[1], n[2] * u[0] - n[0] * u[2],
                  n[0] * u[1] - n[1] * u[0]])
    return u, w


def _cap_convex(v, loop, fsize, onv, n):
    """The cap of a cut convex polytope: its vertices in the plane, by angle (CCW about n).
    None when the plane only touches (fewer than 3 points) or a kept face already lies in it."""
    ids = np.flatnonzero(np.bincount(loop, minlength=len(v)).astype(bool) & onv)
    if len(ids) < 3:
        return []
    owner = np.repeat(np.arange(len(fsize)), fsize)
    on_count = np.bincount(owner, weights=onv[loop], minlength=len(fsize))
    if np.any(on_count == fsize):
        return []
    u, w = _plane_basis(n)
    q = v[ids]
    c = q.mean(axis=0)
    ang = detmath.arctan2((q - c) @ w, (q - c) @ u)
    return [ids[np.argsort(ang, kind="stable")]]


def _cap(v, ea, eb, n):
    """Cap faces (lists of vertex indices, outward normal n) for the cut loops given as
    boundary edges ea -> eb of the kept part."""
    if len(ea) < 3:
        return []
    # The cap runs against the kept part's boundary: edges eb -> ea.
    nxt = dict(zip(eb.tolist(), ea.tolist()))
    loops = []
    while nxt:
        start, cur = next(iter(nxt.items()))
        loop = [start]
        del nxt[start]
        while cur != start and cur in nxt:
            loop.append(cur)
            cur = nxt.pop(cur)
        if len(loop) >= 3:
            loops.append(np.array(loop, dtype=np.int64))
    if not loops:
        return []
    u, w = _plane_basis(n)
    pts2 = [np.stack((v[lp] @ u, v[lp] @ w), axis=1) for lp in loops]
    if len(loops) == 1 and _is_convex(pts2[0]):
        return loops
    return [np.array(t, dtype=np.int64) for t in _triangulate(loops, pts2)]


def _area2(p):
    return 0.5 * float(np.sum(p[:, 0] * np.roll(p[:, 1], -1) - np.roll(p[:, 0], -1) * p[:, 1]))


def _is_convex(p):
    e = np.roll(p, -1, axis=0) - p
    cr = e[:, 0] * np.roll(e, -1, axis=0)[:, 1] - e[:, 1] * np.roll(e, -1, axis=0)[:, 0]
    return bool(np.all(cr >= -1e-12 * max(float(np.abs(e).max()), 1e-300) ** 2))


# -- cap triangulation (non-convex cuts) -------------------------------------------------------
def _point_in_poly(q, p):
    x, y = p[:, 0], p[:, 1]
    x2, y2 = np.roll(x, -1), np.roll(y, -1)
    c = (y > q[1]) != (y2 > q[1])
    with np.errstate(divide="ignore", invalid="ignore"):
        xi = x + (q[1] - y) * (x2 - x) / (y2 - y)
    return bool(np.count_nonzero(c & (q[0] < xi)) % 2)


def _segments_cross(p, q, a, b):
    """Proper crossings of segment p-q with segments a[k]-b[k] (2D)."""
    def orient(o, s, t):
        return (s[..., 0] - o[..., 0]) * (t[..., 1] - o[..., 1]) - \
               (s[..., 1] - o[..., 1]) * (t[..., 0] - o[..., 0])
    d1, d2 = orient(a, b, p), orient(a, b, q)
    d3, d4 = orient(p, q, a), orient(p, q, b)
    return ((d1 > 0) != (d2 > 0)) & ((d3 > 0) != (d4 > 0)) & (d1 != 0) & (d2 != 0) & \
        (d3 != 0) & (d4 != 0)


def _triangulate(loops, pts2):
    """Triangles (vertex-index triples, counter-clockwise) of the region bounded by the
    loops: counter-clockwise ones are outlines, clockwise ones holes inside them."""
    areas = [_area2(p) for p in pts2]
    outers = [k for k, a in enumerate(areas) if a > 0]
    holes = [k for k, a in enumerate(areas) if a < 0]
    tris = []
    for o in outers:
        ids, p = list(loops[o]), pts2[o]
        mine = [h for h in holes if _point_in_poly(pts2[h][0], p)
                and not any(o2 != o and areas[o2] < areas[o]
                            and _point_in_poly(pts2[h][0], pts2[o2]) for o2 in outers)]
        ids, p = _bridge_holes(ids, p, [(list(loops[h]), pts2[h]) for h in mine])
        tris.extend(_ear_clip(ids, p))
    return tris


def _bridge_holes(ids, p, holes):
    """Merge holes into the outline by zero-width bridges (rightmost hole first)."""
    holes = sorted(holes, key=lambda hp: -float(hp[1][:, 0].max()))
    for hids, hp in holes:
        k = int(np.argmax(hp[:, 0]))
        q = hp[k]
        segs_a = np.concatenate([p] + [h[1] for h in holes])
        segs_b = np.concatenate([np.roll(p, -1, axis=0)] + [np.roll(h[1], -1, axis=0)
                                                             for h in holes])
        order = np.argsort(np.linalg.norm(p - q, axis=1), kind="stable")
        pick = int(order[0])
        for j in order:
            if not _segments_cross(q, p[j], segs_a, segs_b).any():
                pick = int(j)
                break
        hl = list(range(k, len(hids))) + list(range(k + 1))
        new_ids = ids[:pick + 1] + [hids[i] for i in hl] + ids[pick:]
        new_p = np.concatenate((p[:pick + 1], hp[hl], p[pick:]))
        ids, p = new_ids, new_p
    return ids, p


def _ear_clip(ids, p):
    """Ear clipping of a simple (or bridged) counter-clockwise polygon."""
    idx = list(range(len(ids)))
    tris = []
    guard = 0
    while len(idx) > 3 and guard < 4 * len(ids) ** 2:
        guard += 1
        m = len(idx)
        found = False
        for k in range(m):
            i0, i1, i2 = idx[k - 1], idx[k], idx[(k + 1) % m]
            a, b, c = p[i0], p[i1], p[i2]
            cr = (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])
            if cr <= 0:
                continue
            others = [j for j in idx if j not in (i0, i1, i2)]
            if others:
                q = p[others]
                same = (np.abs(q - a).sum(1) == 0) | (np.abs(q - b).sum(1) == 0) | \
                       (np.abs(q - c).sum(1) == 0)
                q = q[~same]
                d1 = (b[0] - a[0]) * (q[:, 1] - a[1]) - (b[1] - a[1]) * (q[:, 0] - a[0])
                d2 = (c[0] - b[0]) * (q[:, 1] - b[1]) - (c[1] - b[1]) * (q[:, 0] - b[0])
                d3 = (a[0] - c[0]) * (q[:, 1] - c[1]) - (a[1] - c[1]) * (q[:, 0] - c[0])
                if np.any((d1 >= 0) & (d2 >= 0) & (d3 >= 0)):
                    continue
            tris.append((ids[i0], ids[i1], ids[i2]))
            del idx[k]
            found = True
            break
        if not found:
            # No clean ear (nearly collinear runs, bridge edges): cut off the flattest
            # corner anyway. Its sliver triangle keeps the cap closed; its area is ~0.
            cr_all = []
            for k in range(m):
                a, b, c = p[idx[k - 1]], p[idx[k]], p[idx[(k + 1) % m]]
                cr_all.append(abs((b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])))
            k = int(np.argmin(cr_all))
            tris.append((ids[idx[k - 1]], ids[idx[k]], ids[idx[(k + 1) % m]]))
            del idx[k]
    if len(idx) == 3:
        tris.append((ids[idx[0]], ids[idx[1]], ids[idx[2]]))
    return tris


# -- pieces -----------------------------------------------------------------------------------
def _components(poly):
    """Split a clipped poly into its edge-connected parts (list of _Poly)."""
    nxt, face_of = _next_corner(poly.sizes)
    a, b = poly.flat, poly.flat[nxt]
    m = np.int64(len(poly.v))
    key = np.minimum(a, b) * m + np.maximum(a, b)
    order = np.argsort(key, kind="stable")
    ks = key[order]
    same = ks[1:] == ks[:-1]
    fa, fb = face_of[order[:-1][same]], face_of[order[1:][same]]
    from ..dynamics.graph import islands
    lab = islands(len(poly.sizes), fa, fb, np.zeros(len(poly.sizes), dtype=bool))
    uniq = np.unique(lab)
    if len(uniq) == 1:
        return [poly]
    out = []
    owner = face_of
    for u in uniq:
        fsel = lab == u
        csel = fsel[owner]
        used, loop = np.unique(poly.flat[csel], return_inverse=True)
        out.append(_Poly(poly.v[used], poly.sizes[fsel], loop.reshape(-1), poly.labels[fsel]))
    return out


def _is_convex_poly(poly, eps):
    vec = _face_areas(poly.v, poly.sizes, poly.flat)
    nl = np.linalg.norm(vec, axis=1)
    nrm = vec / np.where(nl > 0, nl, 1.0)[:, None]
    first = poly.v[poly.flat[_starts(poly.sizes)]]
    off = np.einsum("ij,ij->i", nrm, first)
    return bool(np.all(poly.v @ nrm.T - off <= eps * 10))


def fracture(vertices, faces, points, min_volume=0.0):
    """Cut the closed mesh (vertices (V, 3), faces: planar convex polygons, outward) into the
    Voronoi cells of ``points`` (P, 3). Returns a Fracture: pieces (cells that reach into the
    mesh, split into connected parts) and their bonds.

    Raises EngineError for an open, non-manifold or flat mesh, no points, or too many."""
    v, sizes, flat = _as_mesh(vertices, faces)
    vol, scale = _check_solid(v, sizes, flat)
    if vol < 0:   # inward-facing normals: flip the faces (documented fallback)
        flat = _reverse_faces(sizes, flat)
        vol = -vol
    p = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    if len(p) == 0:
        raise EngineError("no seed points: fracture needs at least one piece")
    if len(p) > MAX_PIECES:
        raise EngineError(f"{len(p)} pieces asked for; at most {MAX_PIECES} can be made")
    if not np.all(np.isfinite(p)):
        raise EngineError("seed points must be finite")
    # Coincident seeds have no bisector: keep the first of each.
    _, first = np.unique(np.round(p / (scale * 1e-9)), axis=0, return_index=True)
    seeds = np.sort(first)
    eps = PLANE_EPS * scale
    base = _Poly(v, sizes, flat, np.arange(len(sizes), dtype=np.int64))
    polys, owners = [], []
    ps = p[seeds]
    convex = _is_convex_poly(base, eps)
    for k, i in enumerate(seeds):
        for part in _cell(base, ps, k, seeds, eps, convex):
            polys.append(part)
            owners.append(int(i))
    pieces = []
    for poly, i in zip(polys, owners):
        pv, cen = _volume_centroid(poly.v, poly.sizes, poly.flat)
        if pv <= max(min_volume, 1e-12 * vol):
            continue
        pieces.append(Piece(poly.v, poly.sizes, poly.flat, poly.labels, i, pv, cen,
                            _is_convex_poly(poly, eps)))
    ba, bb, area, centre = _bonds(pieces, scale)
    return Fracture(pieces, ba, bb, area, centre, float(vol))


def _reverse_faces(sizes, flat):
    starts = _starts(sizes)
    face_of = np.repeat(np.arange(len(sizes)), sizes)
    local = np.arange(len(flat)) - starts[face_of]
    return flat[starts[face_of] + (sizes[face_of] - 1 - local)]


def _cell(base, ps, k, seeds, eps, convex):
    """The parts of the mesh in the Voronoi cell of seed ps[k] (original index seeds[k])."""
    pi = ps[k]
    diff = ps - pi
    dist = np.linalg.norm(diff, axis=1)
    order = np.argsort(dist, kind="stable")[1:]
    poly = base
    radius = float(np.linalg.norm(poly.v - pi, axis=1).max())
    for j in order:
        if dist[j] * 0.5 > radius:
            break
        nrm = diff[j] / dist[j]
        # Bisector: n.x <= n.(p_i + p_j)/2, from both sides with the same rounding.
        d = float(nrm @ (0.5 * (ps[j] + pi)))
        poly = _clip(poly, nrm, d, -1 - int(seeds[j]), eps, convex)
        if poly is None:
            return []
        r = poly.v - pi
        radius = float(np.sqrt(np.max(np.einsum("ij,ij->i", r, r))))
    # A convex mesh cut by half-spaces stays in one piece.
    return [poly] if convex else _components(poly)


def _bonds(pieces, scale):
    """Pieces sharing an inner face: (a, b, area, centre) with a < b."""
    if not pieces:
        z = np.zeros(0, dtype=np.int64)
        return z, z, np.zeros(0), np.zeros((0, 3))
    rows = []   # (piece, other seed, area, centroid*area)
    for k, pc in enumerate(pieces):
        inner = pc.face_labels < 0
        if not inner.any():
            continue
        vec = _face_areas(pc.vertices, pc.face_sizes, pc.face_verts)
        area = np.linalg.norm(vec, axis=1)
        _, face_of = _next_corner(pc.face_sizes)
        cen = np.zeros((len(pc.face_sizes), 3))
        np.add.at(cen, face_of, pc.vertices[pc.face_verts])
        cen /= pc.face_sizes[:, None]
        for lab in np.unique(pc.face_labels[inner]):
            sel = pc.face_labels == lab
            a = area[sel].sum()
            rows.append((k, -1 - int(lab), a, (cen[sel] * area[sel, None]).sum(0)))
    by_seed: dict[int, list[int]] = {}
    for k, pc in enumerate(pieces):
        by_seed.setdefault(pc.seed, []).append(k)
    table = {(r[0], r[1]): r for r in rows}
    out = []
    for (k, other), r in table.items():
        for m in by_seed.get(other, []):
            if m <= k:
                continue
            back = table.get((m, pieces[k].seed))
            if back is None:
                continue
            split = len(by_seed[other]) > 1 or len(by_seed[pieces[k].seed]) > 1
            if split and not _touch(pieces[k], pieces[m], other, pieces[k].seed, scale):
                continue
            a = 0.5 * (r[2] + back[2])
            if a <= 1e-12 * scale * scale:
                continue
            out.append((k, m, a, (r[3] + back[3]) / (r[2] + back[2])))
    if not out:
        z = np.zeros(0, dtype=np.int64)
        return z, z, np.zeros(0), np.zeros((0, 3))
    out.sort(key=lambda t: (t[0], t[1]))
    return (np.array([o[0] for o in out]), np.array([o[1] for o in out]),
            np.array([o[2] for o in out]), np.array([o[3] for o in out]))


def _touch(pa, pb, seed_b, seed_a, scale):
    """Do pa's faces against seed_b and pb's against seed_a share a vertex position?"""
    def pts(pc, seed):
        _, face_of = _next_corner(pc.face_sizes)
        sel = (pc.face_labels == -1 - seed)[face_of]
        return {tuple(x) for x in np.round(pc.vertices[pc.face_verts[sel]] / (scale * 1e-7))}
    return bool(pts(pa, seed_b) & pts(pb, seed_a))
