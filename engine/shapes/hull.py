"""Convex hull builder: a robust, batched Quickhull in numpy, with coplanar faces merged into polygons.

Pipeline (``ConvexHull(points)``):

1. Validate and centre. Work in coordinates centred on the bounding box, so a cloud 10 km from
   the origin is as accurate as one at the origin. The tolerance ``tol`` (1e-10 of the extent plus
   a few float epsilons of the coordinate magnitude) is the thickness of a face: a point less than
   ``tol`` above every face counts as on or inside the hull and is dropped.
2. Quickhull in rounds (``_Quickhull``). Every face remembers the farthest of its outside points.
   A round takes these "eyes", floods each eye's visible region over the face adjacency (all eyes
   at once, one numpy step per ring), and inserts *at once* a maximal set of eyes whose visible
   regions do not touch each other's closed regions (visible faces plus their ring of neighbours;
   farther eyes win conflicts). Such eyes cannot see each other's new faces: a point strictly above
   a face built by eye e on horizon edge ab is strictly above one of the two old faces on ab. So
   the batch equals inserting them one by one. Sequential Quickhull would run one Python iteration
   per hull vertex; this runs ~60 rounds for 100k hull vertices.
3. Exact topology. "Does the eye see this face" is an exact orientation test (Shewchuk's float
   filter, exact integer arithmetic for the rare undecided cases), so the triangulated hull is
   always the exact convex hull of the inserted points: a closed, convex 2-manifold, never a
   broken one, however degenerate (coplanar grids, duplicates) the input. Face planes, used only
   for the tolerance decisions, are computed with compensated (error-free) arithmetic, so even a
   long sliver's normal is accurate.
4. Merge and clean. Adjacent triangles within ``tol`` of a seed triangle's plane are grown into
   one polygon (a cube gives 6 quads), whose plane is the seed's accurate plane. A polygon vertex
   within ``tol`` of the segment joining its two neighbours (collinear), or reflex between them
   (merging within tol can bend a boundary inwards by a hair), is not a true extreme point: it is
   dropped and the hull of the remaining vertices rebuilt (cheap: only hull vertices remain).
   Faces come out strictly convex, CCW seen from outside, and ``.vertices`` holds only extreme
   input points.

``max_vertices=K`` runs step 2 greedily (one eye per round, always the globally farthest point:
farthest-point insertion, the order of sequential Quickhull) and stops at K vertices, so the cap
keeps the points that change the shape most. The hulls for growing K are nested (each run is a
prefix of the next), so the error (farthest input point outside the hull) never grows with K,
up to the clean-up's tol.
"""
import numpy as np

from ..core import detmath
from ..core.errors import DegenerateShapeError, EngineError
from .primitives import Polytope

REL_TOL = 1e-10          # face thickness, relative to the cloud's extent
DEGENERATE_FACTOR = 10.0  # a cloud thinner than this many tolerances is flat (or a line, a point)
_EPS = np.finfo(np.float64).eps
_O3D_ERRBOUND = (7.0 + 56.0 * 2.0 ** -53) * 2.0 ** -53  # Shewchuk's orient3d static filter
_MAX_COORD = 1e100        # beyond this, squared terms of the predicates could overflow
_MIN_EXTENT = 1e-50       # below this, volumes and inertias underflow to zero


class ConvexHull(Polytope):
    """Convex hull of a point cloud (e.g. mesh vertices), as a Polytope with polygon faces.

    points: (N, 3) array. max_vertices: optional cap K >= 4 (greedy farthest-point insertion).
    tolerance: optional face thickness in metres; the default is 1e-10 of the extent plus float
    rounding terms. Data that went through float32 (Blender meshes) is only planar to ~1e-7 of its
    size: pass e.g. 1e-6 * size so subdivided flat faces still merge into one polygon.

    Attributes besides Polytope's: ``indices`` (rows of ``points`` used as vertices, sorted),
    ``tolerance`` (every face's vertices lie within it of the face plane, and every input point
    within ``3 * tolerance`` of the hull; the tests check both), ``volume`` and ``centroid``
    (exact, from ``mass.mass_properties``).
    """

    def __init__(self, points, max_vertices=None, tolerance=None):
        pts = _validate(points)
        if max_vertices is not None:
            ok = isinstance(max_vertices, (int, np.integer)) and not isinstance(max_vertices, bool)
            if not ok or max_vertices < 4:
                raise EngineError(f"max_vertices must be an integer >= 4 (a tetrahedron), "
                                  f"got {max_vertices!r}")
            max_vertices = int(max_vertices)
        indices, loops, planes, tol = build_hull(pts, max_vertices, tolerance)
        self.indices = indices
        self.tolerance = tol
        self.max_vertices = max_vertices
        self._mass = None
        self._finish(pts[indices], loops)
        # polytope_topology's Newell normals lose ~eps * length / width of accuracy on a sliver
        # face (a short edge facing a long one: 1e-7 rad at 1e-9 width); keep the compensated
        # plane of each face's seed triangle, which every vertex of the face is within tol of.
        planes.setflags(write=False)
        self.planes = planes

    @property
    def volume(self):
        return self._unit_mass().volume

    @property
    def centroid(self):
        return self._unit_mass().center

    def _unit_mass(self):
        if self._mass is None:
            from .mass import mass_properties  # lazy: mass imports shapes, keeps imports one-way
            self._mass = mass_properties(self, density=1.0)
        return self._mass

    def __repr__(self):
        cap = "" if self.max_vertices is None else f", max_vertices={self.max_vertices}"
        return (f"ConvexHull({len(self.vertices)} vertices, {len(self.faces)} faces, "
                f"{len(self.edges)} edges, volume={self.volume:.6g}{cap})")


# --------------------------------------------------------------------------- input and frame

def _validate(points):
    try:
        pts = np.array(points, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DegenerateShapeError(f"ConvexHull needs an (N, 3) array of numbers: {exc}") from None
    if pts.ndim != 2 or pts.shape[1] != 3:
        raise DegenerateShapeError(f"ConvexHull needs an (N, 3) array of points (rows of x, y, z), "
                                   f"got shape {pts.shape}")
    if len(pts) == 0:
        raise DegenerateShapeError("ConvexHull got no points (an empty mesh): give the object "
                                   "vertices or use a primitive shape")
    bad = ~np.isfinite(pts).all(axis=1)
    if bad.any():
        raise DegenerateShapeError(f"{int(bad.sum())} point(s) are NaN or infinite (first at row "
                                   f"{int(np.argmax(bad))}): fix the mesh or its transform")
    if np.abs(pts).max() > _MAX_COORD:
        raise DegenerateShapeError(f"coordinates up to {np.abs(pts).max():.3g} are too large; "
                                   "scale the object to metres")
    if len(pts) < 4:
        raise DegenerateShapeError(f"a convex hull needs at least 4 points that are not in one "
                                   f"plane, got {len(pts)}: use a Sphere, Capsule or Box shape")
    return pts


def build_hull(points, max_vertices=None, tolerance=None):
    """Hull of validated (N, 3) points -> (sorted vertex indices, CCW face loops over them,
    face planes (F, 4) as unit normal and offset, tolerance)."""
    lo, hi = points.min(axis=0), points.max(axis=0)
    centred = points - 0.5 * (lo + hi)
    extent = float((hi - lo).max())
    # Rounding of the centring itself (and of every later plane test) is a few ulps of |points|.
    tol = float(REL_TOL * extent + 16.0 * _EPS * float(np.abs(points).max()))
    if tolerance is not None:
        if not np.isfinite(tolerance) or tolerance < 0:
            raise EngineError(f"tolerance must be a finite length >= 0, got {tolerance!r}")
        tol = max(tol, float(tolerance))
    if extent <= DEGENERATE_FACTOR * tol or extent < _MIN_EXTENT:
        raise DegenerateShapeError(f"all {len(points)} points coincide (within {extent:.3g} m): "
                                   "a hull needs volume; use a Sphere shape for a point-like object")
    everything = np.arange(len(points))
    qh = _Quickhull(centred, everything, tol, check_degenerate=True)
    qh.run(limit=max_vertices)
    for _ in range(64):
        tris, nbrs, normals, offsets, area = qh.triangles()
        loops, planes = _merge_coplanar(centred, tris, nbrs, normals, offsets, area, tol)
        drop = _non_extreme_vertices(centred, loops, planes[:, :3], tol)
        if drop.size == 0:
            break
        keep = np.setdiff1d(np.unique(tris), drop)
        qh = _Quickhull(centred, keep, tol, check_degenerate=True)
        qh.run()
    else:  # pragma: no cover - each pass removes vertices, so this means a bug
        raise EngineError("internal error: hull clean-up did not converge; please report this cloud")
    used = np.unique(np.concatenate(loops))
    remap = np.full(len(points), -1, dtype=np.int64)
    remap[used] = np.arange(len(used))
    loops = [remap[loop] for loop in loops]
    edges = sum(len(loop) for loop in loops) // 2
    if len(used) - edges + len(loops) != 2:  # pragma: no cover - exact topology makes this hold
        raise EngineError("internal error: hull is not a closed sphere-like surface; please report")
    planes = planes.copy()
    planes[:, 3] += planes[:, :3] @ (0.5 * (lo + hi))  # back from the centred frame
    return used, loops, planes, tol


# --------------------------------------------------------------------------- exact and accurate arithmetic

def _orient_exact(a, b, c, d):
    """Exact sign of det[a - d, b - d, c - d] for float triples, with Python integers."""
    ratios = [float(x).as_integer_ratio() for x in (*a, *b, *c, *d)]
    den = max(r[1] for r in ratios)  # all powers of two: the scaling below is exact
    ax, ay, az, bx, by, bz, cx, cy, cz, dx, dy, dz = (n * (den // q) for n, q in ratios)
    ax, ay, az = ax - dx, ay - dy, az - dz
    bx, by, bz = bx - dx, by - dy, bz - dz
    cx, cy, cz = cx - dx, cy - dy, cz - dz
    det = ax * (by * cz - bz * cy) + bx * (cy * az - cz * ay) + cx * (ay * bz - az * by)
    return (det > 0) - (det < 0)


def _sees(points, a, b, c, eye):
    """Exact test, per row: is point ``eye`` strictly above the CCW triangle (a, b, c)? Index arrays.

    Float determinant with Shewchuk's static error bound; rows it cannot decide (eye within
    rounding of the plane) are settled exactly. Exactness keeps the visible region a disk.
    """
    d = points[eye]
    ad, bd, cd = points[a] - d, points[b] - d, points[c] - d
    bc = bd[:, 1] * cd[:, 2] - bd[:, 2] * cd[:, 1]
    ca = cd[:, 1] * ad[:, 2] - cd[:, 2] * ad[:, 1]
    ab = ad[:, 1] * bd[:, 2] - ad[:, 2] * bd[:, 1]
    det = ad[:, 0] * bc + bd[:, 0] * ca + cd[:, 0] * ab
    perm = ((np.abs(bd[:, 1] * cd[:, 2]) + np.abs(bd[:, 2] * cd[:, 1])) * np.abs(ad[:, 0])
            + (np.abs(cd[:, 1] * ad[:, 2]) + np.abs(cd[:, 2] * ad[:, 1])) * np.abs(bd[:, 0])
            + (np.abs(ad[:, 1] * bd[:, 2]) + np.abs(ad[:, 2] * bd[:, 1])) * np.abs(cd[:, 0]))
    # det[a-d, b-d, c-d] = -(d - a) . ((b - a) x (c - a)): negative when the eye is above.
    sees = det < 0
    for i in np.flatnonzero(np.abs(det) <= _O3D_ERRBOUND * perm):
        sees[i] = _orient_exact(points[a[i]], points[b[i]], points[c[i]], d[i]) < 0
    return sees


def _two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _two_prod(a, b):
    p = a * b
    t = 134217729.0 * a  # Veltkamp split: 2^27 + 1
    ah = t - (t - a)
    al = a - ah
    t = 134217729.0 * b
    bh = t - (t - b)
    bl = b - bh
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _planes(points, tris):
    """Unit outward normals, offsets and twice the areas of CCW triangles (T, 3).

    The cross product is evaluated with error-free transformations (edge vectors as exact
    double-doubles), so its relative error is ~eps even for slivers, where plain floats lose
    everything: a sliver's plane must still classify far points to within ``tol``.
    """
    a, b, c = points[tris[:, 0]], points[tris[:, 1]], points[tris[:, 2]]
    uh, ul = _two_sum(b, -a)
    vh, vl = _two_sum(c, -a)

    def component(i, j):
        p1, e1 = _two_prod(uh[:, i], vh[:, j])
        p2, e2 = _two_prod(uh[:, j], vh[:, i])
        s, es = _two_sum(p1, -p2)
        low = (es + (e1 - e2) + (uh[:, i] * vl[:, j] + ul[:, i] * vh[:, j])
               - (uh[:, j] * vl[:, i] + ul[:, j] * vh[:, i]))
        return s + low

    n = np.stack((component(1, 2), component(2, 0), component(0, 1)), axis=1)
    area2 = np.sqrt(np.einsum("ij,ij->i", n, n))
    n /= area2[:, None]
    offsets = np.einsum("ij,ij->i", n, a)
    return n, offsets, area2


def _unique(keys):
    """Sorted unique values (plain sort: faster than np.unique's hashing path on numpy 2.x)."""
    keys = np.sort(keys)
    keep = np.ones(len(keys), dtype=bool)
    keep[1:] = keys[1:] != keys[:-1]
    return keys[keep]


def _independent(reg_c, reg_f, ring_c, ring_f, rank, nfaces):
    """Eyes that can be inserted together: for any two, neither's visible region touches the
    other's closed region (visible faces + ring of neighbours). Rings may overlap: the two cones
    then only rewire different edges of a shared ring face.

    Luby-style rounds: undecided eyes claim faces with their rank (0 = farthest); an eye wins if no
    better eye touches its region and no better eye's region covers its ring; eyes in conflict
    with a winner drop out. A few rounds give a maximal set (one greedy pass keeps only a few
    eyes of a dense sphere, because losers still block).
    """
    ncand = len(rank)
    status = np.zeros(ncand, dtype=np.int8)      # 0 undecided, 1 accepted, 2 rejected
    won_region = np.zeros(nfaces, dtype=bool)
    won_closed = np.zeros(nfaces, dtype=bool)
    for _ in range(8):
        status[reg_c[(status[reg_c] == 0) & won_closed[reg_f]]] = 2
        status[ring_c[(status[ring_c] == 0) & won_region[ring_f]]] = 2
        live_reg = status[reg_c] == 0
        live_ring = status[ring_c] == 0
        if not live_reg.any():
            break
        rc, rf, nc, nf = reg_c[live_reg], reg_f[live_reg], ring_c[live_ring], ring_f[live_ring]
        best_region = np.full(nfaces, ncand, dtype=np.int64)
        np.minimum.at(best_region, rf, rank[rc])
        best_closed = best_region.copy()
        np.minimum.at(best_closed, nf, rank[nc])
        won = status == 0
        won[rc[best_closed[rf] != rank[rc]]] = False
        won[nc[best_region[nf] < rank[nc]]] = False
        status[won] = 1
        won_region[rf[won[rc]]] = True
        won_closed[rf[won[rc]]] = True
        won_closed[nf[won[nc]]] = True
    return status == 1


def _in_sorted(sorted_keys, keys):
    pos = np.searchsorted(sorted_keys, keys)
    pos[pos == len(sorted_keys)] = 0
    return (sorted_keys[pos] == keys) if len(sorted_keys) else np.zeros(len(keys), dtype=bool)


# --------------------------------------------------------------------------- Quickhull in rounds

class _Quickhull:
    """Triangulated exact hull of ``points[subset]`` (within ``tol``), built in batched rounds.

    Faces live in growing arrays: ``fv`` (F, 3) CCW vertex ids, ``nb`` (F, 3) the face across edge
    k = (fv[k], fv[k+1]), accurate planes, an ``alive`` mask, and each face's farthest outside
    point (``best_pt``, ``best_d``; best_d < 0 when it has none). Outside points are flat arrays
    (point id, face, distance) so that every step is a numpy operation over all of them.
    """

    def __init__(self, points, subset, tol, check_degenerate=False):
        self.p = points
        self.tol = tol
        self.inserted = 4
        cap = 64
        self.fv = np.zeros((cap, 3), dtype=np.int64)
        self.nb = np.zeros((cap, 3), dtype=np.int64)
        self.fn = np.zeros((cap, 3))
        self.fd = np.zeros(cap)
        self.area2 = np.zeros(cap)
        self.alive = np.zeros(cap, dtype=bool)
        self.best_pt = np.zeros(cap, dtype=np.int64)
        self.best_d = np.full(cap, -1.0)
        self.nf = 0
        simplex = self._simplex(np.asarray(subset, dtype=np.int64), check_degenerate)
        rest = np.setdiff1d(subset, simplex)
        self._assign(rest, np.repeat(np.arange(4)[None], len(rest), axis=0))

    # ---- set-up

    def _simplex(self, subset, check):
        """A large initial tetrahedron: farthest pair of axis extremes, then farthest from the line,
        then farthest from the plane. Its widths are also the degeneracy test of the whole cloud."""
        q = self.p[subset]
        ext = np.concatenate((q.argmin(axis=0), q.argmax(axis=0)))
        d2 = ((q[ext][:, None] - q[ext][None]) ** 2).sum(axis=-1)
        i, j = np.unravel_index(np.argmax(d2), d2.shape)
        i0, i1 = ext[i], ext[j]
        u = q[i1] - q[i0]
        u /= np.linalg.norm(u)
        off_line = np.linalg.norm(np.cross(q - q[i0], u), axis=1)
        i2 = int(np.argmax(off_line))
        limit = DEGENERATE_FACTOR * self.tol
        if check and off_line[i2] <= limit:
            raise DegenerateShapeError(f"the points are collinear (all within {off_line[i2]:.3g} m of a "
                                       "line): a hull needs volume; use a Capsule for a rod-like object")
        n = np.cross(u, q[i2] - q[i0])
        n /= np.linalg.norm(n)
        off_plane = (q - q[i0]) @ n
        i3 = int(np.argmax(np.abs(off_plane)))
        if check and abs(off_plane[i3]) <= limit:
            raise DegenerateShapeError(f"the points are coplanar (a flat mesh, thickness "
                                       f"{abs(off_plane[i3]):.3g} m): give the object thickness "
                                       "(e.g. Solidify) or use a Box shape")
        v = subset[[i0, i1, i2, i3]]
        tris = np.array([[v[0], v[1], v[2]], [v[0], v[3], v[1]], [v[1], v[3], v[2]], [v[2], v[3], v[0]]])
        opposite = np.array([v[3], v[2], v[0], v[1]])
        # Orient each face so that the fourth vertex is below it (exact test).
        flip = _sees(self.p, tris[:, 0], tris[:, 1], tris[:, 2], opposite)
        tris[flip] = tris[flip][:, [0, 2, 1]]
        self.fv[:4] = tris
        self.nb[:4] = _neighbours(tris)
        self.fn[:4], self.fd[:4], self.area2[:4] = _planes(self.p, tris)
        self.alive[:4] = True
        self.nf = 4
        self.o_pt = np.zeros(0, dtype=np.int64)
        self.o_face = np.zeros(0, dtype=np.int64)
        self.o_dist = np.zeros(0)
        return v

    def _assign(self, pts, candidate_faces):
        """Give each point the farthest of its candidate faces (rows, padded by repetition) that it
        is more than tol above; drop the others (inside or on the hull). Chunked to bound memory."""
        keep_pt, keep_face, keep_d = [], [], []
        width = max(candidate_faces.shape[1], 1)
        step = max(1, 250_000 // width)
        for s in range(0, len(pts), step):
            p, cf = pts[s:s + step], candidate_faces[s:s + step]
            d = np.einsum("ijk,ik->ij", self.fn[cf], self.p[p]) - self.fd[cf]
            j = np.argmax(d, axis=1)
            rows = np.arange(len(p))
            dist = d[rows, j]
            out = dist > self.tol
            keep_pt.append(p[out])
            keep_face.append(cf[rows, j][out])
            keep_d.append(dist[out])
        if not keep_pt:
            return
        pt, face, dist = np.concatenate(keep_pt), np.concatenate(keep_face), np.concatenate(keep_d)
        # Farthest point per face: sort by face, then by decreasing distance; take the first.
        order = np.lexsort((-dist, face))
        first = np.ones(len(order), dtype=bool)
        first[1:] = face[order][1:] != face[order][:-1]
        top = order[first]
        self.best_pt[face[top]] = pt[top]
        self.best_d[face[top]] = dist[top]
        self.o_pt = np.concatenate((self.o_pt, pt))
        self.o_face = np.concatenate((self.o_face, face))
        self.o_dist = np.concatenate((self.o_dist, dist))

    def _grow(self, extra):
        need = self.nf + extra
        if need <= len(self.fv):
            return
        cap = max(need, 2 * len(self.fv))
        for name in ("fv", "nb", "fn"):
            old = getattr(self, name)
            new = np.zeros((cap, 3), dtype=old.dtype)
            new[:len(old)] = old
            setattr(self, name, new)
        for name, fill in (("fd", 0.0), ("area2", 0.0), ("alive", False), ("best_pt", 0), ("best_d", -1.0)):
            old = getattr(self, name)
            new = np.full(cap, fill, dtype=old.dtype)
            new[:len(old)] = old
            setattr(self, name, new)

    def _compact(self):
        """Drop dead faces (every insertion kills its visible region) once they dominate."""
        nf = self.nf
        live = np.flatnonzero(self.alive[:nf])
        if nf < 4096 or len(live) * 3 > nf:
            return
        remap = np.full(nf, -1, dtype=np.int64)
        remap[live] = np.arange(len(live))
        m = len(live)
        self.fv[:m] = self.fv[live]
        self.nb[:m] = remap[self.nb[live]]
        for name in ("fn", "fd", "area2", "alive", "best_pt", "best_d"):
            arr = getattr(self, name)
            arr[:m] = arr[live]
        self.alive[m:nf] = False
        self.best_d[m:nf] = -1.0
        self.o_face = remap[self.o_face]
        self.nf = m

    # ---- the rounds

    def run(self, limit=None):
        """Insert eyes until no point is outside, or (greedy) until ``limit`` hull vertices."""
        while limit is None or self.inserted < limit:
            if not self._round(greedy=limit is not None):
                break

    def _round(self, greedy):
        nf = self.nf
        cand = np.flatnonzero(self.alive[:nf] & (self.best_d[:nf] > 0))
        if cand.size == 0:
            return False
        if greedy:
            cand = cand[[int(np.argmax(self.best_d[cand]))]]
        eyes = self.best_pt[cand]
        ncand = len(cand)
        rank = np.empty(ncand, dtype=np.int64)
        rank[np.argsort(-self.best_d[cand], kind="stable")] = np.arange(ncand)

        # Flood every eye's visible region at once, one ring of faces per iteration. Tested faces
        # that are not visible form the ring around the region (its neighbours).
        key_base = nf
        reg_c, reg_f = [np.arange(ncand)], [cand]
        ring_c, ring_f = [], []
        seen = np.sort(np.arange(ncand) * key_base + cand)
        front_c, front_f = reg_c[0], cand
        while front_c.size:
            keys = _unique(np.repeat(front_c, 3) * key_base + self.nb[front_f].ravel())
            keys = keys[~_in_sorted(seen, keys)]
            if keys.size == 0:
                break
            seen = np.sort(np.concatenate((seen, keys)))
            c, f = keys // key_base, keys % key_base
            fv = self.fv[f]
            vis = _sees(self.p, fv[:, 0], fv[:, 1], fv[:, 2], eyes[c])
            reg_c.append(c[vis])
            reg_f.append(f[vis])
            ring_c.append(c[~vis])
            ring_f.append(f[~vis])
            front_c, front_f = c[vis], f[vis]
        reg_ci, reg_fi = np.concatenate(reg_c), np.concatenate(reg_f)
        if greedy:
            accepted = np.ones(1, dtype=bool)
        else:
            accepted = _independent(reg_ci, reg_fi, np.concatenate(ring_c), np.concatenate(ring_f),
                                    rank, nf)
        m = accepted[reg_ci]
        self._insert(eyes, accepted, reg_ci[m], reg_fi[m])
        self.inserted += int(accepted.sum())
        self._compact()
        return True

    def _insert(self, eyes, accepted, reg_c, reg_f):
        nf = self.nf
        npts = len(self.p)
        # Horizon: edges of visible faces whose neighbour is not visible from the same eye.
        regkey = np.sort(reg_c * nf + reg_f)
        c3 = np.repeat(reg_c, 3)
        f3 = np.repeat(reg_f, 3)
        k3 = np.tile(np.arange(3), len(reg_f))
        g3 = self.nb[f3, k3]
        hz = ~_in_sorted(regkey, c3 * nf + g3)
        hc, hf, hk, hg = c3[hz], f3[hz], k3[hz], g3[hz]
        a = self.fv[hf, hk]
        b = self.fv[hf, (hk + 1) % 3]
        e = eyes[hc]
        count = len(hc)
        self._grow(count)
        new = nf + np.arange(count)
        # The horizon of each eye is one simple loop (exact visibility): every horizon vertex starts
        # exactly one edge, which links the cone's new faces to each other.
        key_a = hc * npts + a
        order = np.argsort(key_a)
        sorted_a = key_a[order]
        key_b = hc * npts + b
        pos = np.searchsorted(sorted_a, key_b)
        pos[pos == count] = 0
        if np.any(sorted_a[pos] != key_b) or np.any(sorted_a[1:] == sorted_a[:-1]):
            raise EngineError("internal error: hull horizon is not a simple loop; please report this cloud")
        next_face = new[order[pos]]            # the new face whose horizon edge starts at b
        prev_face = np.empty(count, dtype=np.int64)
        prev_face[order[pos]] = new            # ... and, inverted, the one whose edge ends at a
        slot = np.argmax(self.nb[hg] == hf[:, None], axis=1)
        self.nb[hg, slot] = new
        self.fv[new] = np.stack((a, b, e), axis=1)
        self.nb[new] = np.stack((hg, next_face, prev_face), axis=1)
        self.fn[new], self.fd[new], self.area2[new] = _planes(self.p, self.fv[new])
        self.alive[new] = True
        self.best_d[new] = -1.0
        self.alive[reg_f] = False
        self.best_d[reg_f] = -1.0
        self.nf = nf + count

        # Outside points of the dead faces move to the farthest face of their eye's cone.
        owner = np.full(nf, -1, dtype=np.int64)
        owner[reg_f] = reg_c
        moving = owner[self.o_face] >= 0
        inserted_eyes = np.sort(eyes[accepted])
        moving_pt = self.o_pt[moving]
        moving_c = owner[self.o_face[moving]]
        not_eye = ~_in_sorted(inserted_eyes, moving_pt)
        moving_pt, moving_c = moving_pt[not_eye], moving_c[not_eye]
        stay = ~moving
        self.o_pt, self.o_face, self.o_dist = self.o_pt[stay], self.o_face[stay], self.o_dist[stay]
        if moving_pt.size == 0:
            return
        cone_order = np.argsort(hc, kind="stable")
        start = np.searchsorted(hc[cone_order], np.arange(len(eyes)))
        length = np.bincount(hc, minlength=len(eyes))
        # Cones differ in size: pad each point's row of cone faces only to its power-of-two
        # bucket, not to the largest cone of the round.
        bucket = np.ceil(detmath.log2(length[moving_c])).astype(np.int64)
        for b in np.unique(bucket):
            sel = bucket == b
            c = moving_c[sel]
            cols = np.minimum(np.arange(int(length[c].max()))[None], length[c][:, None] - 1)
            self._assign(moving_pt[sel], new[cone_order[start[c][:, None] + cols]])

    def triangles(self):
        """Live faces compacted: (tris, neighbours, normals, offsets, twice areas)."""
        live = np.flatnonzero(self.alive[:self.nf])
        remap = np.full(self.nf, -1, dtype=np.int64)
        remap[live] = np.arange(len(live))
        return (self.fv[live], remap[self.nb[live]], self.fn[live], self.fd[live], self.area2[live])


def _neighbours(tris):
    """Face across each directed edge (tris[k], tris[k+1]) of a closed CCW triangle mesh."""
    n = int(tris.max()) + 1
    a = tris.ravel()
    b = np.roll(tris, -1, axis=1).ravel()
    key = a * n + b
    order = np.argsort(key)
    pos = np.searchsorted(key[order], b * n + a)
    return (order[pos] // 3).reshape(-1, 3)


# --------------------------------------------------------------------------- merging and cleaning

def _merge_coplanar(points, tris, nbrs, normals, offsets, area2, tol):
    """Group adjacent triangles lying within tol of a common plane into polygon loops.

    Returns (list of CCW vertex-id loops, (F, 4) planes: each region's seed-triangle plane).
    Only triangles with a flat edge (its two far vertices within tol of each other's plane) seed
    the Python region growing, so curved parts cost nothing; a triangle joins a region only if its
    far vertex is within tol of the *seed's* plane, so a gently curved surface cannot creep into a
    single "flat" face through a chain of almost-flat neighbours.
    """
    t = len(tris)
    rows = np.arange(t)[:, None]
    back = np.argmax(nbrs[nbrs] == rows[:, :, None], axis=2)          # slot of f in its neighbour
    apex = tris[nbrs, (back + 2) % 3]                                   # far vertex across edge k
    off = np.abs(np.einsum("ijk,ik->ij", points[apex], normals) - offsets[:, None])
    flat = off <= tol
    flat &= flat[nbrs, back]                                            # symmetric
    candidates = np.flatnonzero(flat.any(axis=1))
    label = np.arange(t)
    if candidates.size:
        label = _grow_regions(points, candidates, nbrs, apex, normals, offsets, area2, tol, label)
    return _loops(tris, nbrs, np.c_[normals, offsets], label)


def _grow_regions(points, candidates, nbrs, apex, normals, offsets, area2, tol, label):
    """Seeds (triangles with a flat edge) go largest first; a region absorbs any neighbouring
    triangle whose far vertex is within tol of the seed's plane, across any edge: a tiny tent
    around a vertex barely above the face has steep, non-flat edges, yet lies within tol."""
    rows = {}

    def row(f):  # Python lists on demand: only triangles near flat regions are ever touched
        if f not in rows:
            rows[f] = (nbrs[f].tolist(), points[apex[f]].tolist())
        return rows[f]

    done = set()
    for seed in candidates[np.argsort(-area2[candidates], kind="stable")].tolist():
        if seed in done:
            continue
        done.add(seed)
        nx, ny, nz = normals[seed].tolist()
        d0 = float(offsets[seed])
        stack = [seed]
        while stack:
            f = stack.pop()
            nb, far = row(f)
            for k in range(3):
                g = nb[k]
                if g in done:
                    continue
                x, y, z = far[k]
                if abs(nx * x + ny * y + nz * z - d0) <= tol:
                    done.add(g)
                    label[g] = seed
                    stack.append(g)
    return label


def _loops(tris, nbrs, planes, label):
    """Boundary loop of each region (label = seed triangle). A region whose boundary is not one
    simple loop (not a disk; never seen, but cheap to guard) falls back to its triangles."""
    counts = np.bincount(label, minlength=len(tris))
    single = counts[label] == 1
    loops = list(tris[single])
    face_planes = [planes[single]]
    multi = np.flatnonzero(~single)
    if multi.size:
        k = np.tile(np.arange(3), len(multi))
        f = np.repeat(multi, 3)
        boundary = label[nbrs[f, k]] != label[f]
        f, k = f[boundary], k[boundary]
        a, b, lab = tris[f, k], tris[f, (k + 1) % 3], label[f]
        order = np.argsort(lab, kind="stable")
        a, b, lab = a[order], b[order], lab[order]
        cuts = np.flatnonzero(np.diff(lab)) + 1
        extra_planes = []
        for seg_a, seg_b, seg_lab in zip(np.split(a, cuts), np.split(b, cuts), np.split(lab, cuts)):
            seed = int(seg_lab[0])
            nxt = dict(zip(seg_a.tolist(), seg_b.tolist()))
            loop = [int(seg_a[0])]
            while len(loop) <= len(seg_a):
                v = nxt[loop[-1]]
                if v == loop[0]:
                    break
                loop.append(v)
            if len(nxt) == len(seg_a) == len(loop):
                loops.append(np.array(loop, dtype=np.int64))
                extra_planes.append(planes[seed])
            else:  # pragma: no cover - pinched or holed region: keep its triangles
                members = np.flatnonzero(label == seed)
                loops.extend(tris[members])
                extra_planes.extend(planes[members])
        face_planes.append(np.array(extra_planes).reshape(-1, 4))
    return loops, np.concatenate(face_planes)


def _non_extreme_vertices(points, loops, plane_normals, tol):
    """Loop vertices that are not true extreme points: within tol of the segment joining their two
    neighbours (collinear), or reflex while lying between them (a reflex corner is never extreme;
    merging faces within tol can bend a boundary inwards by a little). Returns an independent
    subset (no two adjacent, most degenerate first), so each dropped vertex stays within tol of a
    kept edge.

    The *segment*, not the line: in a sliver triangle every corner is near the line through the
    other two (and the turn sign is rounding noise), but only the middle one lies between them.
    """
    sizes = np.array([len(loop) for loop in loops])
    flat = np.concatenate(loops)
    start = np.repeat(np.cumsum(sizes) - sizes, sizes)
    local = np.arange(len(flat)) - start
    size = np.repeat(sizes, sizes)
    prev = flat[start + (local - 1) % size]
    nxt = flat[start + (local + 1) % size]
    u, v, w = points[prev], points[flat], points[nxt]
    base = w - u
    t = np.einsum("ij,ij->i", v - u, base) / np.maximum(np.einsum("ij,ij->i", base, base), 1e-300)
    dist = np.linalg.norm(v - (u + np.clip(t, 0.0, 1.0)[:, None] * base), axis=1)
    n = np.repeat(plane_normals, sizes, axis=0)
    reflex = np.einsum("ij,ij->i", np.cross(v - u, w - v), n) <= 0
    bad = (dist <= tol) | (reflex & (t >= 0) & (t <= 1))
    if not bad.any():
        if reflex.any():  # pragma: no cover - merging only joins faces within tol of a plane
            raise EngineError("internal error: merged hull face is not convex; please report this cloud")
        return np.zeros(0, dtype=np.int64)
    flagged = np.unique(flat[bad])
    near = _in_sorted(flagged, flat) | _in_sorted(flagged, nxt)
    neighbours: dict[int, set[int]] = {}
    for a, b in zip(flat[near].tolist(), nxt[near].tolist()):  # loop edges at flagged vertices
        neighbours.setdefault(a, set()).add(b)
        neighbours.setdefault(b, set()).add(a)
    chosen, blocked = [], set()
    for i in np.flatnonzero(bad)[np.argsort(dist[bad], kind="stable")].tolist():
        vid = int(flat[i])
        if vid in blocked:
            continue
        chosen.append(vid)
        blocked.add(vid)
        blocked.update(neighbours[vid])  # in every face, so kept edges span each dropped vertex
    return np.unique(np.array(chosen, dtype=np.int64))
