"""Approximate convex decomposition of a closed non-convex mesh by hierarchical box splitting.

``decompose(vertices, triangles, max_parts=16, tolerance=None, resolution=40, progress=None)``
returns a list of point clouds (hull vertices), one per convex part, to be hulled
(``ConvexHull``) and put in a ``Compound``.

Method (in the spirit of V-HACD's cutting-plane search, simpler and exact where it matters):

* The bounding box is cut recursively by axis-aligned planes into box *cells*. A cell's part is
  the convex hull of (solid ∩ cell), computed exactly from its extreme points: mesh vertices in
  the cell, crossings of mesh edges with the cell's faces, crossings of the cell's edges with
  mesh triangles, and cell corners inside the solid. So the parts always *cover* the solid (every
  point of it lies in some cell, hence in that cell's part); nothing is sampled there.
* The error of a part is how far its hull strays outside the solid: the largest distance to the
  mesh of grid samples (``resolution`` per longest side) that are outside the solid but inside
  the hull. Distances are computed lazily through the mesh BVH and capped (only "more than the
  tolerance" matters).
* The worst part is split while it strays more than ``tolerance`` and the budget allows. Its
  candidate planes are the three axis planes through its worst sample and through its centre;
  the candidate whose two halves have the smallest total hull volume wins (it cuts away the most
  empty space). Everything is deterministic (no random sampling).

Inside tests cast +z rays (parity), batched through the BVH; sample points are offset by an
irrational fraction of the spacing so rays do not graze mesh edges.
"""
import numpy as np

from ..core import detmath
from ..core.errors import DegenerateShapeError, EngineError
from .hull import ConvexHull
from .trimesh import TriangleMesh

_OFFSET = np.array([0.1234567, 0.2718281, 0.1414213])


def _dot(a, b):
    return np.einsum("...i,...i->...", a, b)


def closest_point_triangle(p, a, b, c):
    """Closest points on triangles (a, b, c) to points p, all (K, 3) (Ericson 5.1.5)."""
    ab, ac, ap = b - a, c - a, p - a
    d1, d2 = _dot(ab, ap), _dot(ac, ap)
    bp = p - b
    d3, d4 = _dot(ab, bp), _dot(ac, bp)
    cp = p - c
    d5, d6 = _dot(ab, cp), _dot(ac, cp)
    va = d3 * d6 - d5 * d4
    vb = d5 * d2 - d1 * d6
    vc = d1 * d4 - d3 * d2
    den = va + vb + vc
    den = np.where(den != 0, den, 1.0)
    v = vb / den
    w = vc / den
    res = a + v[:, None] * ab + w[:, None] * ac                        # face
    # Edges (checked in an order such that vertices override them below).
    e_bc = (va <= 0) & (d4 - d3 >= 0) & (d5 - d6 >= 0)
    t_bc = (d4 - d3) / np.where((d4 - d3) + (d5 - d6) != 0, (d4 - d3) + (d5 - d6), 1.0)
    res = np.where(e_bc[:, None], b + t_bc[:, None] * (c - b), res)
    e_ac = (vb <= 0) & (d2 >= 0) & (d6 <= 0)
    t_ac = d2 / np.where(d2 - d6 != 0, d2 - d6, 1.0)
    res = np.where(e_ac[:, None], a + t_ac[:, None] * ac, res)
    e_ab = (vc <= 0) & (d1 >= 0) & (d3 <= 0)
    t_ab = d1 / np.where(d1 - d3 != 0, d1 - d3, 1.0)
    res = np.where(e_ab[:, None], a + t_ab[:, None] * ab, res)
    res = np.where(((d6 >= 0) & (d5 <= d6))[:, None], c, res)
    res = np.where(((d3 >= 0) & (d4 <= d3))[:, None], b, res)
    res = np.where(((d1 <= 0) & (d2 <= 0))[:, None], a, res)
    return res


def inside_mesh(mesh, points):
    """Parity of +z ray crossings: True for points inside the closed TriangleMesh (its frame)."""
    points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    top = mesh.vertices[:, 2].max() + 1.0
    hi = points.copy()
    hi[:, 2] = np.maximum(top, points[:, 2])
    qi, tri = mesh.query(points, hi)
    if not len(qi):
        return np.zeros(len(points), dtype=bool)
    tv = mesh.vertices[mesh.triangles[tri]]
    p = points[qi]
    a, b, c = tv[:, 0], tv[:, 1], tv[:, 2]
    # 2D barycentric coordinates of p in the triangle's xy projection.
    def cross2(u, v):
        return u[:, 0] * v[:, 1] - u[:, 1] * v[:, 0]
    area = cross2(b - a, c - a)
    w0 = cross2(b - p, c - p)
    w1 = cross2(c - p, a - p)
    w2 = cross2(a - p, b - p)
    ok = area != 0
    sgn = np.sign(area)
    # Points exactly on a shared edge or vertex (a ray through a fan's diagonal) must count
    # once: the rasteriser's top-left rule. Edge functions of a shared edge are exact negatives
    # of each other in the two triangles (cross2 is exactly antisymmetric), so the tie rule,
    # applied to the edge direction in CCW order, gives the point to exactly one of them.
    def inside_edge(w, u, v):
        dx, dy = (v[:, 0] - u[:, 0]) * sgn, (v[:, 1] - u[:, 1]) * sgn
        top_left = (dy > 0) | ((dy == 0) & (dx < 0))
        return (w * sgn > 0) | ((w == 0) & top_left)
    hit = ok & inside_edge(w0, b, c) & inside_edge(w1, c, a) & inside_edge(w2, a, b)
    ar = np.where(ok, area, 1.0)
    z = (w0 * a[:, 2] + w1 * b[:, 2] + w2 * c[:, 2]) / ar
    hit &= z > p[:, 2]
    return (np.bincount(qi[hit], minlength=len(points)) % 2) == 1


def _box_corners(lo, hi):
    return np.array([[(lo, hi)[i & 1][0], (lo, hi)[(i >> 1) & 1][1], (lo, hi)[(i >> 2) & 1][2]]
                     for i in range(8)])


_BOX_EDGES = np.array([[0, 1], [2, 3], [4, 5], [6, 7], [0, 2], [1, 3], [4, 6], [5, 7],
                       [0, 4], [1, 5], [2, 6], [3, 7]])


def clip_solid_to_box(mesh, lo, hi):
    """Extreme points of (solid ∩ box): their hull is exactly hull(solid ∩ box)."""
    tol = 1e-9 * mesh.size
    _, tri = mesh.query(lo[None], hi[None])
    pts = []
    corners = _box_corners(lo, hi)
    pts.append(corners[inside_mesh(mesh, corners)])
    if len(tri):
        tv = mesh.vertices[mesh.triangles[tri]]                           # (K, 3, 3)
        v = tv.reshape(-1, 3)
        pts.append(v[np.all((v >= lo - tol) & (v <= hi + tol), axis=1)])
        # Mesh edges x box face planes.
        a, b = tv, np.roll(tv, -1, axis=1)
        for axis in range(3):
            for plane in (lo[axis], hi[axis]):
                den = b[..., axis] - a[..., axis]
                t = (plane - a[..., axis]) / np.where(den != 0, den, 1.0)
                ok = (den != 0) & (t >= 0) & (t <= 1)
                p = a + t[..., None] * (b - a)
                p[..., axis] = plane
                ok &= np.all((p >= lo - tol) & (p <= hi + tol), axis=-1)
                pts.append(p[ok])
        # Box edges x mesh triangles (Moller-Trumbore, all 12 edges at once).
        e0 = corners[_BOX_EDGES[:, 0]]
        d = corners[_BOX_EDGES[:, 1]] - e0                               # (12, 3)
        A, B, C = tv[:, None, 0], tv[:, None, 1], tv[:, None, 2]          # (K, 1, 3)
        ab, ac = B - A, C - A
        pv = np.cross(d[None], ac)
        det = _dot(ab, pv)
        okd = np.abs(det) > 1e-15 * mesh.size ** 2
        inv = 1.0 / np.where(okd, det, 1.0)
        s = e0[None] - A
        u = _dot(s, pv) * inv
        qv = np.cross(s, ab)
        w = _dot(d[None], qv) * inv
        t = _dot(ac, qv) * inv
        ok = okd & (u >= 0) & (w >= 0) & (u + w <= 1) & (t >= 0) & (t <= 1)
        p = e0[None] + t[..., None] * d[None]
        pts.append(p[ok])
    return np.concatenate(pts) if pts else np.zeros((0, 3))


def _fibonacci_directions(n):
    i = np.arange(n) + 0.5
    z = 1.0 - 2.0 * i / n
    phi = np.pi * (1.0 + 5 ** 0.5) * i
    r = np.sqrt(1.0 - z * z)
    return np.stack((r * detmath.cos(phi), r * detmath.sin(phi), z), axis=1)


_DIRECTIONS = _fibonacci_directions(48)


def _support_hull(pts):
    """Hull of the points' supports along _DIRECTIONS (None if flat or empty): a tight inner
    approximation of their hull at the cost of a small one."""
    if len(pts) < 4:
        return None
    sup = pts[np.unique(np.argmax(pts @ _DIRECTIONS.T, axis=0))]
    try:
        return ConvexHull(sup)
    except EngineError:
        return None


class _Decomposer:
    def __init__(self, mesh, tolerance, resolution):
        self.mesh = mesh
        lo, hi = mesh.vertices.min(axis=0), mesh.vertices.max(axis=0)
        ext = float((hi - lo).max())
        self.h = ext / resolution
        self.tol = tolerance
        self.cap = 4.0 * tolerance + 2.0 * self.h
        n = np.maximum(np.ceil((hi - lo) / self.h).astype(int), 1)
        axes = [lo[k] + (np.arange(n[k]) + 0.5 + 0.1 * _OFFSET[k]) * (hi[k] - lo[k]) / n[k]
                for k in range(3)]
        g = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
        inside = inside_mesh(mesh, g)
        self.samples = g[~inside]              # only outside samples measure straying
        self.dist = np.full(len(self.samples), np.nan)
        self.lo, self.hi = lo, hi
        self.coords = [np.unique(mesh.vertices[:, k]) for k in range(3)]

    def distances(self, idx):
        """Distance (capped at self.cap) from outside samples idx to the mesh, cached."""
        todo = idx[np.isnan(self.dist[idx])]
        if len(todo):
            p = self.samples[todo]
            qi, tri = self.mesh.query(p - self.cap, p + self.cap)
            d = np.full(len(todo), self.cap)
            if len(qi):
                tv = self.mesh.vertices[self.mesh.triangles[tri]]
                cp = closest_point_triangle(p[qi], tv[:, 0], tv[:, 1], tv[:, 2])
                dd = np.sqrt(_dot(cp - p[qi], cp - p[qi]))
                np.minimum.at(d, qi, dd)
            self.dist[todo] = np.minimum(d, self.cap)
        return self.dist[idx]

    def points(self, lo, hi):
        """Extreme points of solid ∩ cell, near-duplicates merged (mesh edges are shared by two
        triangles, so every crossing comes twice): fewer points for the hull."""
        pts = clip_solid_to_box(self.mesh, lo, hi)
        if len(pts) == 0:
            return pts
        q = np.round(pts / (1e-9 * self.mesh.size))
        _, first = np.unique(q, axis=0, return_index=True)
        return pts[np.sort(first)]

    def straying(self, hull, lo, hi):
        """Largest distance to the mesh of outside samples in the cell and the hull, and the
        sample where it is reached."""
        inbox = np.flatnonzero(np.all((self.samples >= lo) & (self.samples <= hi), axis=1))
        if len(inbox):
            pl = hull.planes
            s = self.samples[inbox]
            cand = inbox[np.all(s @ pl[:, :3].T - pl[:, 3] <= 1e-12 * self.mesh.size, axis=1)]
            if len(cand):
                d = self.distances(cand)
                # Ties (distances capped) go to the sample nearest the cell centre.
                c = 0.5 * (lo + hi)
                off = self.samples[cand] - c
                k = np.lexsort((_dot(off, off), -np.round(d / (0.01 * self.h))))[0]
                return float(d[k]), self.samples[cand[k]]
        return 0.0, 0.5 * (lo + hi)

    def estimate(self, pts, lo, hi):
        """(straying, volume) of the support hull of a cell's points (0, 0 if none)."""
        h = _support_hull(pts)
        if h is None:
            return 0.0, 0.0
        return self.straying(h, lo, hi)[0], float(h.volume)

    def part(self, lo, hi, pts=None):
        """(hull or None, volume, error, worst point) of the cell [lo, hi]."""
        if pts is None:
            pts = self.points(lo, hi)
        if len(pts) < 4:
            return None
        try:
            hull = ConvexHull(pts, tolerance=1e-9 * self.mesh.size)
        except (DegenerateShapeError, EngineError):
            return None                          # flat sliver of surface: no volume to cover
        err, worst = self.straying(hull, lo, hi)
        return hull, float(hull.volume), err, worst


def decompose(vertices, triangles, max_parts=16, tolerance=None, resolution=40, progress=None):
    """Convex parts of a closed mesh: a list of (P_i, 3) hull vertex arrays (see module doc).

    max_parts: part budget (>= 1). tolerance: how far (m) a part may stray outside the solid;
    default 2% of the longest side. resolution: grid samples along the longest side used to
    measure straying (the check is exact up to about one sample spacing). progress: optional
    callable(fraction in [0, 1], message); returning False cancels and returns the parts so far.
    """
    if isinstance(max_parts, bool) or int(max_parts) != max_parts or max_parts < 1:
        raise EngineError(f"max_parts must be an integer >= 1, got {max_parts!r}")
    if int(resolution) != resolution or not 4 <= resolution <= 400:
        raise EngineError(f"resolution must be an integer in [4, 400], got {resolution!r}")
    mesh = TriangleMesh(vertices, triangles)
    ext = float((mesh.vertices.max(axis=0) - mesh.vertices.min(axis=0)).max())
    if tolerance is None:
        tolerance = 0.02 * ext
    if not np.isfinite(tolerance) or tolerance <= 0:
        raise EngineError(f"tolerance must be a length > 0, got {tolerance!r}")
    dec = _Decomposer(mesh, float(tolerance), int(resolution))
    pad = 1e-6 * ext
    root = dec.part(dec.lo - pad, dec.hi + pad)
    if root is None:
        raise DegenerateShapeError("the mesh encloses no volume; decomposition needs a closed "
                                   "mesh (use a triangle mesh shape for open scenery)")
    cells = [(dec.lo - pad, dec.hi + pad, root)]
    first_err = max(root[2], 1e-300)
    while len(cells) < max_parts:
        errs = [c[2][2] for c in cells]
        w = int(np.argmax(errs))
        if errs[w] <= dec.tol:
            break
        if progress is not None:
            frac = max(len(cells) / max_parts, 1.0 - detmath.log(errs[w] / dec.tol)
                       / max(detmath.log(first_err / dec.tol), 1e-12))
            if progress(float(min(max(frac, 0.0), 1.0)), f"{len(cells)} parts, worst "
                        f"{errs[w]:.4g} m over {dec.tol:.4g} m") is False:
                break
        lo, hi, (hull_w, cell_vol, _, worst) = cells[w][0], cells[w][1], cells[w][2]
        span = np.ptp(hull_w.vertices, axis=0)
        best = None
        for axis in range(3):
            # Planes through the worst sample, the centre, and the nearest mesh vertices on
            # either side of the worst sample (cuts along the mesh's own features, e.g. the
            # inner corner of an L, leave no slivers).
            vc = dec.coords[axis]
            k = np.searchsorted(vc, worst[axis])
            # Just off the vertex plane: a cut exactly on a mesh face would put that face's
            # points in both (closed) halves.
            near = [vc[j] + sgn * 1e-6 * ext for j in (k - 1, k) if 0 <= j < len(vc)
                    for sgn in (-1.0, 1.0)]
            for at in [worst[axis], 0.5 * (lo[axis] + hi[axis])] + near:
                if not (lo[axis] + dec.h * 0.5 < at < hi[axis] - dec.h * 0.5):
                    continue
                hi1, lo2 = hi.copy(), lo.copy()
                hi1[axis] = lo2[axis] = at
                q1, q2 = dec.points(lo, hi1), dec.points(lo2, hi)
                # Score: the halves' worst straying, then their total hull volume (the cut that
                # removes the most empty space), both measured on support hulls (48 fixed
                # directions): a tight inner hull costs a few rounds instead of a full hull.
                e1, v1 = dec.estimate(q1, lo, hi1)
                e2, v2 = dec.estimate(q2, lo2, hi)
                # Volumes within 10% of the cell's hull count as ties (myopic differences, e.g.
                # a torus cut flat vs across), then cut across the cell's longest side.
                score = (round(max(e1, e2) / dec.h), round((v1 + v2) / (0.1 * cell_vol)),
                         -span[axis], abs(at - worst[axis]), v1 + v2)
                if best is None or score < best[0]:
                    best = (score, [(lo, hi1, q1), (lo2, hi, q2)])
        if best is None:                 # cell thinner than the sampling: cannot refine
            cells[w] = (lo, hi, cells[w][2][:2] + (0.0, worst))
            continue
        new = [(a, b, dec.part(a, b, q)) for a, b, q in best[1]]
        new = [c for c in new if c[2] is not None]
        cells[w:w + 1] = new
    if progress is not None:
        progress(1.0, f"{len(cells)} parts")
    return [np.array(c[2][0].vertices) for c in cells]
