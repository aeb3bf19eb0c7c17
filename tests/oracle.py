"""Brute-force test oracle for convex queries (TEST-ONLY: uses scipy, never imported by engine/).

Truth is computed by a route independent of GJK/EPA/SAT: build the Minkowski difference
D = B - A of the two vertex sets explicitly, take its convex hull with scipy (Qhull), then

- origin outside D: distance = exact minimum of point-triangle distances over the hull's
  triangles (``closest_point_triangle`` below, Ericson's Voronoi-region method);
- origin inside D: penetration depth = minimum over the hull facets of the facet plane distance.

Radii (spheres, capsules: convex cores swollen by a radius) are exact too: swelling A by ra and B
by rb swells D by ra + rb, so the signed distance is simply core signed distance - ra - rb.
Flat or lower-dimensional differences (point, segment, parallelogram: sphere/capsule cores) are
handled exactly by working in their affine hull.

Conventions match engine/: normals point from A to B; the signed distance s and unit normal n
satisfy "closest boundary point of D to the origin = s * n" in both the separated (s > 0) and the
penetrating (s < 0) case. Import as ``from oracle import ...`` with tests/ on sys.path.
"""
import numpy as np
from scipy.spatial import ConvexHull

__all__ = [
    "box_points",
    "closest_point_segment",
    "closest_point_triangle",
    "minkowski_difference",
    "pad_points",
    "random_hull_points",
    "random_pair_batch",
    "random_rotation",
    "random_rotations",
    "random_unit_vectors",
    "segment_segment_closest",
    "signed_distance",
    "signed_distance_local",
    "transform_points",
]


# --------------------------------------------------------------------------- exact primitives

def closest_point_triangle(p, a, b, c):
    """Closest points on triangles (a, b, c) to points p; all (..., 3), broadcast. Exact regions.

    Ericson, Real-Time Collision Detection, 5.1.5: classify p against the seven Voronoi regions
    of the triangle (3 vertices, 3 edges, face) using the signs of the barycentric sub-areas.
    """
    p, a, b, c = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in (p, a, b, c)))
    ab, ac, ap = b - a, c - a, p - a
    d1 = np.einsum("...i,...i", ab, ap)
    d2 = np.einsum("...i,...i", ac, ap)
    bp = p - b
    d3 = np.einsum("...i,...i", ab, bp)
    d4 = np.einsum("...i,...i", ac, bp)
    cp = p - c
    d5 = np.einsum("...i,...i", ab, cp)
    d6 = np.einsum("...i,...i", ac, cp)
    va = d3 * d6 - d5 * d4
    vb = d5 * d2 - d1 * d6
    vc = d1 * d4 - d3 * d2
    with np.errstate(divide="ignore", invalid="ignore"):
        # Face region first, then overwrite by edge and vertex regions (later wins).
        denom = va + vb + vc
        v = vb / denom
        w = vc / denom
        out = a + ab * v[..., None] + ac * w[..., None]
        # Edge BC
        m = (va <= 0) & ((d4 - d3) >= 0) & ((d5 - d6) >= 0)
        t = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        out = np.where(m[..., None], b + (c - b) * t[..., None], out)
        # Edge AC
        m = (vb <= 0) & (d2 >= 0) & (d6 <= 0)
        t = d2 / (d2 - d6)
        out = np.where(m[..., None], a + ac * t[..., None], out)
        # Edge AB
        m = (vc <= 0) & (d1 >= 0) & (d3 <= 0)
        t = d1 / (d1 - d3)
        out = np.where(m[..., None], a + ab * t[..., None], out)
    # Vertex regions.
    out = np.where(((d6 >= 0) & (d5 <= d6))[..., None], c, out)
    out = np.where(((d3 >= 0) & (d4 <= d3))[..., None], b, out)
    out = np.where(((d1 <= 0) & (d2 <= 0))[..., None], a, out)
    return out


def closest_point_segment(p, a, b):
    """Closest points on segments [a, b] to points p (..., 3), broadcast."""
    p, a, b = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in (p, a, b)))
    ab = b - a
    ee = np.einsum("...i,...i", ab, ab)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.einsum("...i,...i", p - a, ab) / ee
    t = np.where(ee > 0, np.clip(t, 0.0, 1.0), 0.0)
    return a + ab * t[..., None]


def segment_segment_closest(p1, q1, p2, q2):
    """Closest points (c1, c2) between segments [p1, q1] and [p2, q2] (single pair, exact).

    Written as brute force over the candidate configurations rather than the usual clamped
    parametric formula, so it is an independent check: the minimum is attained either at an
    interior critical point of both parameters or with at least one parameter on its end.
    """
    p1, q1, p2, q2 = (np.asarray(x, dtype=np.float64) for x in (p1, q1, p2, q2))
    cands = []
    for e, (a, b) in ((p1, (p2, q2)), (q1, (p2, q2))):
        cands.append((e, closest_point_segment(e, a, b)))
    for e in (p2, q2):
        cands.append((closest_point_segment(e, p1, q1), e))
    d1, d2, r = q1 - p1, q2 - p2, p1 - p2
    a, e, b = d1 @ d1, d2 @ d2, d1 @ d2
    c, f = d1 @ r, d2 @ r
    den = a * e - b * b
    if den > 1e-300:
        s = (b * f - c * e) / den
        t = (a * f - b * c) / den
        if 0 <= s <= 1 and 0 <= t <= 1:
            cands.append((p1 + s * d1, p2 + t * d2))
    best = min(cands, key=lambda pq: float(np.sum((pq[0] - pq[1]) ** 2)))
    return best


# --------------------------------------------------------------------------- Minkowski difference

def minkowski_difference(points_a, points_b):
    """All differences b - a (Va * Vb, 3) of two world point sets."""
    a = np.asarray(points_a, dtype=np.float64).reshape(-1, 3)
    b = np.asarray(points_b, dtype=np.float64).reshape(-1, 3)
    return (b[:, None, :] - a[None, :, :]).reshape(-1, 3)


def _lower_dim_closest(d, basis, centre):
    """Closest point to the origin of conv(d) when d spans < 3 dimensions (exact, in its span)."""
    k = basis.shape[0]
    if k == 0:
        return centre.copy()
    coords = (d - centre) @ basis.T  # (N, k)
    o = (-centre) @ basis.T          # the origin in the same coordinates
    if k == 1:
        lo, hi = coords[:, 0].min(), coords[:, 0].max()
        s = np.clip(o[0], lo, hi)
        return centre + s * basis[0]
    # k == 2: exact 2D convex polygon; if the origin's projection is inside, the projection.
    hull2 = ConvexHull(coords)
    poly = coords[hull2.vertices]
    inside = np.all(hull2.equations[:, :2] @ o + hull2.equations[:, 2] <= 0)
    if inside:
        return centre + o @ basis
    a3 = centre + poly @ basis
    b3 = np.roll(a3, -1, axis=0)
    cp = closest_point_segment(np.zeros(3), a3, b3)
    return cp[np.argmin(np.einsum("ij,ij->i", cp, cp))]


def signed_distance(points_a, points_b, radius_a=0.0, radius_b=0.0, rel_flat=1e-12):
    """Exact signed distance between conv(points_a) + ball(radius_a) and conv(points_b) + ball(radius_b).

    Points are world coordinates (V, 3). Returns (s, normal, point) where s > 0 means separated by s,
    s < 0 means penetration depth -s, normal is the unit A->B direction (zeros when undefined: the
    cores touch exactly or D is flat and contains the origin) and ``point`` is the closest boundary
    point of the core difference D = B - A to the origin (s_core * normal).
    """
    d = minkowski_difference(points_a, points_b)
    rad = float(radius_a) + float(radius_b)
    centre = d.mean(axis=0)
    _, sv, vt = np.linalg.svd(d - centre, full_matrices=False)
    size = max(sv[0], 1e-300)
    rank = int(np.sum(sv > rel_flat * size)) if sv[0] > 0 else 0
    if rank < 3:
        cp = _lower_dim_closest(d, vt[:rank], centre)
        dist = float(np.linalg.norm(cp))
        normal = cp / dist if dist > 0 else np.zeros(3)
        return dist - rad, normal, cp
    hull = ConvexHull(d)
    eq = hull.equations  # n . x + off <= 0 inside, n unit outward
    plane_d = eq[:, 3]
    if np.all(plane_d < 0):
        # Origin strictly inside: depth = distance to the nearest facet plane. The nearest boundary
        # point is depth * n_facet; B must move along -n_facet to separate, so normal = -n_facet.
        i = int(np.argmax(plane_d))
        depth = -plane_d[i]
        n = -eq[i, :3]
        return -depth - rad, n, -depth * n
    tri = d[hull.simplices]  # (F, 3, 3)
    cp = closest_point_triangle(np.zeros(3), tri[:, 0], tri[:, 1], tri[:, 2])
    dd = np.einsum("ij,ij->i", cp, cp)
    i = int(np.argmin(dd))
    dist = float(np.sqrt(dd[i]))
    normal = cp[i] / dist if dist > 0 else np.zeros(3)
    return dist - rad, normal, cp[i]


def transform_points(points, pos, rot):
    """World coordinates of local points (V, 3) under a pose (pos (3,), rot (3, 3))."""
    return np.asarray(points, dtype=np.float64) @ np.asarray(rot, dtype=np.float64).T + pos


def signed_distance_local(points_a, pos_a, rot_a, points_b, pos_b, rot_b, radius_a=0.0, radius_b=0.0):
    """signed_distance of shapes given as local points and poses, evaluated in A's frame.

    Working relative to A keeps the oracle exact for shapes far (10 km) from the origin. The
    returned normal and point are rotated back to world orientation.
    """
    rot_a = np.asarray(rot_a, dtype=np.float64)
    rel_pos = rot_a.T @ (np.asarray(pos_b, dtype=np.float64) - np.asarray(pos_a, dtype=np.float64))
    rel_rot = rot_a.T @ np.asarray(rot_b, dtype=np.float64)
    pb = transform_points(points_b, rel_pos, rel_rot)
    s, n, p = signed_distance(points_a, pb, radius_a, radius_b)
    return s, rot_a @ n, rot_a @ p


# --------------------------------------------------------------------------- random shapes

def random_unit_vectors(rng, n):
    v = rng.normal(size=(n, 3))
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def random_rotations(rng, n):
    """n uniformly distributed rotation matrices (n, 3, 3) (from uniform unit quaternions)."""
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    w, x, y, z = q.T
    m = np.stack((
        1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
        2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
        2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y),
    ), axis=-1)
    return m.reshape(n, 3, 3)


def random_rotation(rng):
    return random_rotations(rng, 1)[0]


def random_hull_points(rng, n, size=1.0, stretch=(1.0, 1.0, 1.0), kind="sphere"):
    """n random points (n, 3) whose convex hull is a random convex body about the origin.

    kind "sphere": points on an ellipsoid surface (all are hull vertices); "cube": uniform in a box
    (some interior points, which a hull algorithm must ignore). ``stretch`` makes slivers.
    """
    if kind == "sphere":
        p = random_unit_vectors(rng, n)
    elif kind == "cube":
        p = rng.uniform(-1.0, 1.0, size=(n, 3))
    else:
        raise ValueError(f"unknown kind {kind!r}")
    return p * np.asarray(stretch, dtype=np.float64) * size


def box_points(half_extents):
    """The 8 corners of a box about the origin (same order as engine.shapes.primitives.Box)."""
    h = np.asarray(half_extents, dtype=np.float64) * np.ones(3)
    signs = np.array([[1 if i & 1 else -1, 1 if i & 2 else -1, 1 if i & 4 else -1] for i in range(8)],
                     dtype=np.float64)
    return signs * h


def pad_points(list_of_points):
    """Stack point sets of different sizes into (M, Vmax, 3), padding by repeating point 0
    (the ShapeTable rule, so argmax supports need no mask)."""
    vmax = max(len(p) for p in list_of_points)
    out = np.empty((len(list_of_points), vmax, 3))
    for i, p in enumerate(list_of_points):
        out[i] = p[0]
        out[i, :len(p)] = p
    return out


def random_pair_batch(rng, m, offset=1.5, vmin=4, vmax=24, size=(0.3, 1.5)):
    """m random convex hull pairs: (shapes_a, shapes_b, pos_a, rot_a, pos_b, rot_b).

    Shapes are lists of local point arrays (4..24 points, ellipsoid-surface or box-interior
    samples, random stretch); B is placed at a random offset of +-``offset`` per axis from A, which
    with the default sizes gives a healthy mix of separated and overlapping pairs.
    """
    shapes_a, shapes_b = [], []
    for _ in range(m):
        for lst in (shapes_a, shapes_b):
            n = int(rng.integers(vmin, vmax + 1))
            kind = "sphere" if rng.random() < 0.5 else "cube"
            stretch = rng.uniform(0.2, 2.0, size=3)
            lst.append(random_hull_points(rng, n, size=rng.uniform(*size), stretch=stretch, kind=kind))
    pos_a = rng.uniform(-3.0, 3.0, (m, 3))
    pos_b = pos_a + rng.uniform(-offset, offset, (m, 3))
    return shapes_a, shapes_b, pos_a, random_rotations(rng, m), pos_b, random_rotations(rng, m)
