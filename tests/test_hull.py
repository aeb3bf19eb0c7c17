"""ConvexHull: structure, robustness on degenerate clouds, and agreement with Qhull (scipy, test-only)."""
import itertools
import zlib

import numpy as np
import pytest
from scipy.spatial import ConvexHull as QhullHull
from scipy.spatial.transform import Rotation

from engine.collision.shape_table import ShapeTable
from engine.core.errors import DegenerateShapeError, EngineError
from engine.shapes.hull import ConvexHull

CORNERS = np.array(list(itertools.product((-1.0, 1.0), repeat=3)))


def cube_surface_grid(n, with_edges=True):
    """Points on a regular n x n x n grid of the cube [-1, 1]^3 that lie on its surface."""
    g = np.linspace(-1.0, 1.0, n)
    pts = np.array([p for p in itertools.product(g, g, g) if np.abs(p).max() == 1.0])
    if not with_edges:
        pts = pts[(np.abs(pts) == 1.0).sum(axis=1) == 1]
        pts = np.concatenate((pts, CORNERS))
    return pts


def sphere_points(rng, n):
    p = rng.normal(size=(n, 3))
    return p / np.linalg.norm(p, axis=1, keepdims=True)


def check_hull(hull, points, slack=3.0, contains=True):
    """Every structural promise of ConvexHull, checked from the output alone. Returns the worst
    outside distance of an input point, in tolerances (contains=False: a capped hull)."""
    tol = hull.tolerance
    verts, faces = hull.vertices, hull.faces
    # Closed genus-0 surface: Euler's formula, and each edge has exactly two faces (topology raises
    # otherwise); vertex count matches the edges' endpoints (no isolated vertices).
    assert len(verts) - len(hull.edges) + len(faces) == 2
    assert np.array_equal(np.unique(hull.edges), np.arange(len(verts)))
    # Vertices are input points, exactly, and distinct.
    assert np.array_equal(verts, points[hull.indices])
    assert len(np.unique(verts, axis=0)) == len(verts)
    normals, offsets = hull.planes[:, :3], hull.planes[:, 3]
    np.testing.assert_allclose(np.linalg.norm(normals, axis=1), 1.0, rtol=1e-12)
    # Outward: the vertex mean (inside a convex body) is strictly below every face.
    inside = verts.mean(axis=0)
    assert np.all(normals @ inside - offsets < 0)
    for loop, n, d in zip(faces, normals, offsets):
        p = verts[loop]
        assert len(loop) >= 3 and len(set(loop.tolist())) == len(loop)
        # Planar within the tolerance.
        assert np.abs(p @ n - d).max() <= tol
        # Strictly convex and CCW about the outward normal, no collinear middle vertices.
        u, w = np.roll(p, 1, axis=0), np.roll(p, -1, axis=0)
        assert np.all(np.cross(p - u, w - p) @ n > 0)
        off_line = np.linalg.norm(np.cross(p - u, w - u), axis=1) / np.linalg.norm(w - u, axis=1)
        assert off_line.min() > tol
    # Every input point inside or on the hull (within the documented bound).
    outside = (points @ normals.T - offsets).max()
    if not contains:
        return None
    assert outside <= slack * tol, outside / tol
    return outside / tol


def qhull_volume_and_vertices(points):
    q = QhullHull(points)
    return q.volume, set(q.vertices.tolist())


def random_cloud(rng, kind, n):
    if kind == "normal":
        return rng.normal(size=(n, 3))
    if kind == "cube":
        return rng.uniform(-1, 1, (n, 3))
    if kind == "ball":
        p = sphere_points(rng, n)
        return p * rng.uniform(0, 1, (n, 1)) ** (1 / 3)
    if kind == "anisotropic":
        return rng.normal(size=(n, 3)) * [5.0, 1.0, 0.02] @ Rotation.random(random_state=rng).as_matrix()
    if kind == "sphere":
        return sphere_points(rng, n)
    raise ValueError(kind)


# --------------------------------------------------------------------------- exact shapes

def test_cube_has_six_quads_eight_vertices_twelve_edges():
    hull = ConvexHull(CORNERS)
    check_hull(hull, CORNERS)
    assert (len(hull.vertices), len(hull.faces), len(hull.edges)) == (8, 6, 12)
    assert all(len(f) == 4 for f in hull.faces)
    # The six normals are the six axis directions.
    normals = np.round(hull.face_normals, 12)
    assert {tuple(n) for n in normals} == {tuple(s * e) for s in (-1.0, 1.0) for e in np.eye(3)}
    np.testing.assert_allclose(hull.volume, 8.0, rtol=1e-14)
    np.testing.assert_allclose(hull.centroid, 0.0, atol=1e-15)


def test_tetrahedron_from_four_points():
    pts = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=float)
    hull = ConvexHull(pts)
    check_hull(hull, pts)
    assert (len(hull.vertices), len(hull.faces), len(hull.edges)) == (4, 4, 6)
    np.testing.assert_allclose(hull.volume, 1 / 6, rtol=1e-14)


def test_dodecahedron_faces_merge_into_pentagons():
    phi = (1 + 5 ** 0.5) / 2
    pts = list(itertools.product((-1.0, 1.0), repeat=3))
    for a, b in itertools.product((-1.0, 1.0), repeat=2):
        pts += [(0, a / phi, b * phi), (a / phi, b * phi, 0), (a * phi, 0, b / phi)]
    pts = np.array(pts)
    hull = ConvexHull(pts)
    check_hull(hull, pts)
    assert (len(hull.vertices), len(hull.faces), len(hull.edges)) == (20, 12, 30)
    assert all(len(f) == 5 for f in hull.faces)
    # Edge length of this dodecahedron is 2 / phi; volume (15 + 7 sqrt 5) / 4 * a^3.
    a = 2 / phi
    np.testing.assert_allclose(hull.volume, (15 + 7 * 5 ** 0.5) / 4 * a ** 3, rtol=1e-13)


@pytest.mark.parametrize("n", [3, 7, 64, 500])
def test_prism_caps_are_single_polygons(n):
    t = np.linspace(0, 2 * np.pi, n, endpoint=False)
    ring = np.c_[np.cos(t), np.sin(t)]
    pts = np.concatenate((np.c_[ring, -np.ones(n)], np.c_[ring, np.ones(n)],
                          np.c_[0.5 * ring, np.ones(n)]))  # interior cap points too
    rot = Rotation.from_rotvec([0.3, -0.7, 0.2]).as_matrix()
    pts = pts @ rot.T
    hull = ConvexHull(pts)
    check_hull(hull, pts)
    sizes = sorted(len(f) for f in hull.faces)
    assert sizes == sorted([4] * n + [n, n])
    assert set(hull.indices.tolist()) == set(range(2 * n))
    np.testing.assert_allclose(hull.volume, n / 2 * np.sin(2 * np.pi / n) * 2.0, rtol=1e-12)


# --------------------------------------------------------------------------- degenerate clouds

def test_duplicates_and_interior_points_are_ignored():
    rng = np.random.default_rng(1)
    pts = np.concatenate((np.repeat(CORNERS, 5, axis=0), rng.uniform(-0.999, 0.999, (500, 3))))
    pts = pts[rng.permutation(len(pts))]
    hull = ConvexHull(pts)
    check_hull(hull, pts)
    assert len(hull.vertices) == 8 and len(hull.faces) == 6
    np.testing.assert_array_equal(np.sort(np.abs(hull.vertices), axis=0), 1.0)


@pytest.mark.parametrize("n", [3, 6, 11])
def test_coplanar_grid_on_cube_faces_gives_the_cube(n):
    pts = cube_surface_grid(n)
    hull = ConvexHull(pts)
    check_hull(hull, pts)
    assert (len(hull.vertices), len(hull.faces), len(hull.edges)) == (8, 6, 12)
    assert sorted(map(tuple, hull.vertices)) == sorted(map(tuple, CORNERS))


def test_mid_edge_points_are_dropped():
    # Points exactly on the cube's edges: never vertices (not extreme), never collinear in faces.
    t = np.linspace(-1, 1, 9)[1:-1]
    edges = [np.c_[t, np.full_like(t, s1), np.full_like(t, s2)][:, np.roll([0, 1, 2], k)]
             for k in range(3) for s1 in (-1, 1) for s2 in (-1, 1)]
    pts = np.concatenate([CORNERS] + edges)
    rng = np.random.default_rng(2)
    pts = pts[rng.permutation(len(pts))]
    hull = ConvexHull(pts)
    check_hull(hull, pts)
    assert len(hull.vertices) == 8 and len(hull.faces) == 6


@pytest.mark.parametrize("jitter", [1e-14, 1e-12, 1e-11])  # tolerance: 2e-10 here
def test_nearly_coplanar_jitter_still_merges(jitter):
    rng = np.random.default_rng(3)
    grid = cube_surface_grid(9)
    pts = grid + rng.normal(size=grid.shape) * jitter
    hull = ConvexHull(pts)
    check_hull(hull, pts)
    assert (len(hull.vertices), len(hull.faces), len(hull.edges)) == (8, 6, 12)
    # Each kept vertex is one of the (jittered) corners.
    assert np.abs(np.abs(hull.vertices) - 1.0).max() < 10 * jitter


def test_float32_mesh_merges_with_user_tolerance():
    # A subdivided cube, rotated and stored as float32 (as Blender does): flat to ~1e-7 only.
    rot = Rotation.from_rotvec([0.4, 0.1, -0.8]).as_matrix()
    pts = (cube_surface_grid(7) @ rot.T).astype(np.float32).astype(np.float64)
    fine = ConvexHull(pts)
    check_hull(fine, pts)
    assert len(fine.faces) > 6  # float32 noise is far above the default 1e-10 tolerance
    hull = ConvexHull(pts, tolerance=1e-6)
    check_hull(hull, pts)
    assert (len(hull.vertices), len(hull.faces)) == (8, 6)


def test_collinear_rows_and_slivers_in_rotated_lattice():
    # Integer lattice points rotated in floating point: exact in the lattice, full of collinear and
    # coplanar subsets that rounding turns into slivers. Vertices must match Qhull's extreme points.
    rng = np.random.default_rng(4)
    for _ in range(25):
        pts = rng.integers(-3, 4, (int(rng.integers(30, 300)), 3)).astype(float)
        pts = pts @ Rotation.random(random_state=rng).as_matrix().T
        hull = ConvexHull(pts)
        check_hull(hull, pts)
        volume, _ = qhull_volume_and_vertices(pts)
        np.testing.assert_allclose(hull.volume, volume, rtol=1e-12)
        # Compare vertex *positions* (lattice clouds repeat points).
        truth = np.unique(pts[QhullHull(pts, qhull_options="Qc").vertices], axis=0)
        ours = np.unique(hull.vertices, axis=0)
        assert len(ours) <= len(truth)
        # Qhull may keep near-collinear points that are within tolerance of an edge; every one of
        # ours must be one of its extreme points.
        d = np.linalg.norm(ours[:, None] - truth[None], axis=-1).min(axis=1)
        assert d.max() == 0.0


def test_sliver_faces_keep_accurate_planes():
    # Half the points in a 1e-9 cluster at a corner: the hull has sliver faces (a 1e-9 edge facing a 1 m one),
    # whose plane a plain float cross product or Newell sum gets wrong by ~1e-7 rad. Every point
    # must still be inside within the documented bound, and the volume must match Qhull's.
    rng = np.random.default_rng(12)
    slivers = 0
    for _ in range(40):
        n = int(rng.integers(8, 40))
        pts = rng.normal(size=(n, 3))
        pts[: n // 2] *= 1e-9
        pts[: n // 2] += 3.0 * sphere_points(rng, 1)  # a cluster at a corner of the hull
        hull = ConvexHull(pts)
        check_hull(hull, pts)
        # Points dropped within tolerance may move the volume by up to tol * surface area.
        q = QhullHull(pts)
        assert abs(hull.volume - q.volume) <= 3 * hull.tolerance * q.area
        lengths = np.linalg.norm(np.diff(hull.vertices[hull.edges], axis=1)[:, 0], axis=1)
        slivers += lengths.min() < 1e-6
    assert slivers > 10  # the scenario really occurs


@pytest.mark.parametrize("points, words", [
    (np.zeros((0, 3)), "no points"),
    (np.ones((1, 3)), "at least 4"),
    (np.eye(3), "at least 4"),
    (np.ones((10, 3)), "coincide"),
    (np.outer(np.linspace(-1, 1, 20), [1.0, 2.0, -0.5]) + 7.0, "collinear"),
    (np.c_[np.random.default_rng(0).uniform(-1, 1, (50, 2)), np.zeros(50)] @
     Rotation.from_rotvec([0.3, 0.2, 0.1]).as_matrix().T, "coplanar"),
    (np.c_[np.random.default_rng(0).uniform(-1, 1, (50, 2)),
           1e-13 * np.random.default_rng(1).normal(size=50)], "coplanar"),
    (np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, np.nan]]), "NaN or infinite"),
    (np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, np.inf]]), "NaN or infinite"),
    (np.zeros((10, 2)), "(N, 3)"),
    (np.zeros(3), "(N, 3)"),
    ([["a", "b", "c"]] * 4, "numbers"),
])
def test_degenerate_input_raises_with_a_clear_message(points, words):
    with pytest.raises(DegenerateShapeError) as err:
        ConvexHull(points)
    assert words in str(err.value)


def test_flat_error_says_what_to_do():
    pts = np.c_[np.random.default_rng(0).uniform(-1, 1, (50, 2)), np.zeros(50)]
    with pytest.raises(DegenerateShapeError, match="give the object thickness"):
        ConvexHull(pts)


def test_bad_max_vertices_and_tolerance_raise():
    for bad in (3, 0, -5, 4.5, True, "8"):
        with pytest.raises(EngineError):
            ConvexHull(CORNERS, max_vertices=bad)
    for bad in (-1.0, np.nan):
        with pytest.raises(EngineError):
            ConvexHull(CORNERS, tolerance=bad)


# --------------------------------------------------------------------------- Qhull as an oracle

@pytest.mark.parametrize("kind", ["normal", "cube", "ball", "anisotropic", "sphere"])
def test_random_clouds_match_qhull(kind):
    # A stable seed per kind (str hash() changes from run to run: PYTHONHASHSEED).
    rng = np.random.default_rng(zlib.crc32(kind.encode()))
    for n in (4, 5, 9, 30, 200, 2000):
        for _ in range(3 if n < 1000 else 1):
            pts = random_cloud(rng, kind, n)
            hull = ConvexHull(pts)
            check_hull(hull, pts)
            volume, vertices = qhull_volume_and_vertices(pts)
            assert set(hull.indices.tolist()) == vertices
            np.testing.assert_allclose(hull.volume, volume, rtol=1e-12)


def test_sphere_samples_keep_every_point_as_a_vertex():
    rng = np.random.default_rng(5)
    pts = sphere_points(rng, 5000)
    hull = ConvexHull(pts)
    check_hull(hull, pts)
    assert len(hull.vertices) == 5000
    assert all(len(f) == 3 for f in hull.faces)  # no four sampled points are coplanar
    volume, _ = qhull_volume_and_vertices(pts)
    np.testing.assert_allclose(hull.volume, volume, rtol=1e-12)


@pytest.mark.parametrize("scale, offset", [(1.0, 1e4), (1e-3, 0.0), (1e3, 0.0), (1e-3, 1e4),
                                           (1.0, -3e3)])
def test_scale_and_far_offset(scale, offset):
    rng = np.random.default_rng(6)
    base = np.concatenate((rng.normal(size=(300, 3)), 2.5 * cube_surface_grid(5)))
    direction = np.array([0.6, -0.48, 0.64])
    pts = base * scale + offset * direction
    hull = ConvexHull(pts)
    check_hull(hull, pts)
    # Same combinatorial hull as the unscaled cloud at the origin.
    ref = ConvexHull(base)
    assert set(hull.indices.tolist()) == set(ref.indices.tolist())
    assert sorted(len(f) for f in hull.faces) == sorted(len(f) for f in ref.faces)
    np.testing.assert_allclose(hull.volume, ref.volume * scale ** 3, rtol=1e-9)
    np.testing.assert_allclose(hull.centroid, ref.centroid * scale + offset * direction,
                               rtol=0, atol=1e-9 * scale + 1e-12 * abs(offset))


def test_point_order_does_not_change_the_hull():
    rng = np.random.default_rng(7)
    pts = np.concatenate((rng.normal(size=(400, 3)), cube_surface_grid(4) * 3))
    a = ConvexHull(pts)
    perm = rng.permutation(len(pts))
    b = ConvexHull(pts[perm])
    assert set(a.indices.tolist()) == set(perm[b.indices].tolist())
    np.testing.assert_allclose(a.volume, b.volume, rtol=1e-13)


def test_large_cloud_matches_qhull():
    rng = np.random.default_rng(8)
    pts = sphere_points(rng, 100_000) * (1 + 0.02 * rng.normal(size=(100_000, 1)))  # a sculpt
    hull = ConvexHull(pts)
    check_hull(hull, pts)
    volume, vertices = qhull_volume_and_vertices(pts)
    assert set(hull.indices.tolist()) == vertices
    np.testing.assert_allclose(hull.volume, volume, rtol=1e-12)


# --------------------------------------------------------------------------- max_vertices

def outside_error(hull, points):
    """Largest distance by which an input point lies outside the hull's face planes."""
    return max(0.0, float((points @ hull.face_normals.T - hull.planes[:, 3]).max()))


def test_max_vertices_caps_and_converges():
    rng = np.random.default_rng(9)
    pts = sphere_points(rng, 20000) * (1 + 0.05 * rng.normal(size=(20000, 1)))
    full = ConvexHull(pts)
    errors, volumes = [], []
    for k in (4, 5, 8, 16, 32, 64, 128, 256):
        hull = ConvexHull(pts, max_vertices=k)
        assert len(hull.vertices) <= k
        check_hull(hull, pts, contains=False)  # valid polytope; the input is only approximated
        assert set(hull.indices.tolist()) <= set(full.indices.tolist())  # extreme points only
        errors.append(outside_error(hull, pts))
        volumes.append(hull.volume)
    # Nested hulls (farthest-point insertion): error never grows, volume never shrinks.
    assert all(b <= a for a, b in itertools.pairwise(errors))
    assert all(b >= a * (1 - 1e-12) for a, b in itertools.pairwise(volumes))
    assert errors[-1] < 0.1 * errors[0]
    assert volumes[-1] <= full.volume * (1 + 1e-12)
    assert (full.volume - volumes[-1]) / full.volume < 0.05


def test_max_vertices_above_hull_size_gives_the_exact_hull():
    rng = np.random.default_rng(10)
    pts = rng.normal(size=(500, 3))
    full = ConvexHull(pts)
    capped = ConvexHull(pts, max_vertices=len(full.vertices) + 10)
    assert set(capped.indices.tolist()) == set(full.indices.tolist())
    check_hull(capped, pts)


def test_max_vertices_on_a_box_keeps_the_corners():
    pts = cube_surface_grid(9)
    hull = ConvexHull(pts, max_vertices=8)
    check_hull(hull, pts)
    assert sorted(map(tuple, hull.vertices)) == sorted(map(tuple, CORNERS))


# --------------------------------------------------------------------------- integration

def test_hull_goes_into_a_shape_table_and_has_a_repr():
    rng = np.random.default_rng(11)
    hull = ConvexHull(rng.normal(size=(100, 3)))
    table = ShapeTable([hull])
    assert table.npoints[0] == len(hull.vertices)
    assert table.nfaces[0] == len(hull.faces)
    text = repr(hull)
    assert text.startswith("ConvexHull(") and f"{len(hull.vertices)} vertices" in text
    assert hull.vertices.flags.writeable is False
