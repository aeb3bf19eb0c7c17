"""Overlay geometry (addon/overlay/geometry.py) in plain Python, without Blender: what is drawn
for a frame, checked against real engine runs and independent geometry (analytic shapes, brute
force, scipy's Qhull and rotations)."""
import numpy as np
import pytest
from scipy.spatial import ConvexHull as QHull
from scipy.spatial.transform import Rotation

from engine import BodyKind, StepRecord
from engine.core import quat
from engine.shapes.primitives import Box, Capsule, Sphere
from engine.world.world import World
from hullabaloo.addon.overlay import geometry as G


def layer(layers, name):
    hits = [ly for ly in layers if ly.name == name]
    assert len(hits) == 1, [ly.name for ly in layers]
    return hits[0]


def box_on_ground(sleeping=False, velocity=(0.0, 0.0, 0.0), steps=20):
    w = World(sleeping=sleeping)
    ground, cube = Box((5.0, 5.0, 0.5)), Box((0.5, 0.5, 0.5))
    w.add_body(ground, position=(0, 0, -0.5), kind="static")
    w.add_body(cube, position=(0.3, -0.2, 0.5), linear_velocity=velocity)
    for _ in range(steps):
        w.step(1 / 24, record=True)
    model = G.SceneModel(["Ground", "Cube"], [ground, cube], [0, 1], [BodyKind.STATIC, BodyKind.DYNAMIC])
    return w, model


def hull_inside(pts_cloud, query, tol=1e-9):
    """Signed distance of query points to the hull of a cloud (<= tol: inside or on it)."""
    eq = QHull(pts_cloud).equations
    return (np.asarray(query) @ eq[:, :3].T + eq[:, 3]).max(axis=1)


# -- contacts ---------------------------------------------------------------------------------
def test_box_on_ground_gives_four_points_on_the_plane_with_upward_normals():
    w, model = box_on_ground()
    rec = w.last_record
    layers = G.frame_layers(model, {"pos": w.positions, "q": w.orientations, "record": rec},
                            {"normal_scale_mode": "AUTO", "normal_length": 0.3})
    pts = layer(layers, "contacts").coords.astype(np.float64)
    assert len(pts) == 4
    # On the ground plane z = 0 (within the resting penetration) ...
    assert np.abs(pts[:, 2]).max() < 2e-3
    # ... at the four bottom corners of the cube (its x, y footprint), in any order.
    corners = np.array([[0.3 + sx * 0.5, -0.2 + sy * 0.5] for sx in (-1, 1) for sy in (-1, 1)])
    d = np.linalg.norm(pts[:, None, :2] - corners[None], axis=2)
    assert np.allclose(np.sort(d.min(axis=1)), 0.0, atol=2e-3)
    assert sorted(d.argmin(axis=1)) == [0, 1, 2, 3]
    # Normal arrows: 3 segments each (shaft + head); shafts start at the points, point up,
    # and share one length (equal impulses on a symmetric resting box).
    seg = layer(layers, "normals").segments.astype(np.float64).reshape(4, 3, 2, 3)
    shaft = seg[:, 0]
    np.testing.assert_allclose(shaft[:, 0], pts, atol=1e-6)
    v = shaft[:, 1] - shaft[:, 0]
    assert np.all(v[:, 2] > 0.1) and np.abs(v[:, :2]).max() < 1e-6
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 0.3, rtol=1e-3)
    # Heads end at the tips.
    np.testing.assert_allclose(seg[:, 1, 0], shaft[:, 1], atol=1e-6)


def test_contact_colour_and_arrow_length_follow_the_impulse():
    rec = StepRecord(positions=np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0.0]]),
                     normals=np.tile([0, 0, 1.0], (3, 1)),
                     normal_impulses=np.array([0.0, 1.0, 2.0]),
                     separations=np.array([-0.004, -0.002, 0.0]))
    out = G.contact_layers(rec, {"normal_scale_mode": "AUTO", "normal_length": 1.0,
                                 "show_friction": False})
    col = layer(out, "contacts").colours
    np.testing.assert_allclose(col[0, :3], G._RAMP[0], atol=1e-6)   # lowest impulse
    np.testing.assert_allclose(col[2, :3], G._RAMP[-1], atol=1e-6)  # highest impulse
    shaft = layer(out, "normals").segments.reshape(3, 3, 2, 3)[:, 0]
    length = np.linalg.norm(shaft[:, 1] - shaft[:, 0], axis=1)
    np.testing.assert_allclose(length, [0.15, 0.5, 1.0], rtol=1e-6)  # stub, half, full
    out = G.contact_layers(rec, {"contact_colour_by": "DEPTH", "show_normals": False})
    col = layer(out, "contacts").colours
    np.testing.assert_allclose(col[0, :3], G._RAMP[-1], atol=1e-6)  # deepest
    np.testing.assert_allclose(col[2, :3], G._RAMP[0], atol=1e-6)   # touching
    out = G.contact_layers(rec, {"normal_scale_mode": "IMPULSE", "impulse_scale": 0.25,
                                 "normal_length": 0.1, "show_friction": False})
    shaft = layer(out, "normals").segments.reshape(3, 3, 2, 3)[:, 0]
    np.testing.assert_allclose(np.linalg.norm(shaft[:, 1] - shaft[:, 0], axis=1),
                               [0.015, 0.25, 0.5], rtol=1e-6)


def test_friction_arrows_oppose_sliding_in_the_ground_plane():
    w, model = box_on_ground(velocity=(2.0, 1.0, 0.0), steps=3)
    assert w.linear_velocities[1, 0] > 0.3  # still sliding
    rec = w.last_record
    out = G.contact_layers(rec, {"show_contacts": False, "show_normals": False})
    seg = layer(out, "friction").segments.reshape(-1, 3, 2, 3)[:, 0]
    f = seg[:, 1] - seg[:, 0]
    assert len(f) == 4
    assert np.abs(f[:, 2]).max() < 1e-9
    slide = w.linear_velocities[1, :2] / np.linalg.norm(w.linear_velocities[1, :2])
    cos = (f[:, :2] @ slide) / np.linalg.norm(f[:, :2], axis=1)
    assert np.all(cos < -0.95)


# -- shapes -----------------------------------------------------------------------------------
def test_cube_wireframe_has_twelve_edges_box_and_hull():
    for shape in [Box((0.5, 0.5, 0.5))] + _cube_hulls():
        seg = G.local_wireframe(shape)
        assert seg.shape == (12, 2, 3), shape
        d = np.abs(seg[:, 1] - seg[:, 0])
        # Every edge joins two corners differing in exactly one coordinate, by the full side.
        assert np.allclose(np.abs(seg), 0.5)
        assert np.all((d > 0.5).sum(axis=1) == 1)
        np.testing.assert_allclose(d.max(axis=1), 1.0)
        keys = {tuple(sorted(map(tuple, np.round(s, 6)))) for s in seg}
        assert len(keys) == 12


def _cube_hulls():
    try:
        from engine.shapes.hull import ConvexHull
    except ImportError:
        return []
    rng = np.random.default_rng(3)
    corners = np.array([[sx, sy, sz] for sx in (-.5, .5) for sy in (-.5, .5) for sz in (-.5, .5)])
    face_pts = rng.uniform(-0.5, 0.5, size=(30, 3))
    face_pts[np.arange(30), rng.integers(0, 3, 30)] = rng.choice([-0.5, 0.5], 30)
    inner = rng.uniform(-0.4, 0.4, size=(30, 3))
    return [ConvexHull(np.concatenate((corners, face_pts, inner)))]


def test_round_shapes_wireframes_lie_on_their_surfaces():
    seg = G.local_wireframe(Sphere(0.7), segments=32)
    assert seg.shape == (96, 2, 3)
    np.testing.assert_allclose(np.linalg.norm(seg.reshape(-1, 3), axis=1), 0.7)
    cap = Capsule(0.3, 0.8)
    seg = G.local_wireframe(cap, segments=16)
    p = seg.reshape(-1, 3)
    z = np.clip(p[:, 2], -0.8, 0.8)
    dist = np.linalg.norm(p - np.stack((0 * z, 0 * z, z), axis=1), axis=1)
    np.testing.assert_allclose(dist, 0.3, atol=1e-12)
    assert p[:, 2].max() == pytest.approx(1.1) and p[:, 2].min() == pytest.approx(-1.1)


def test_posed_segments_match_per_body_transform():
    rng = np.random.default_rng(5)
    shapes = [Box((0.5, 0.2, 0.1)), Sphere(0.3), Capsule(0.2, 0.5)]
    n = 40
    sid = rng.integers(0, 3, n)
    pos = rng.normal(size=(n, 3)) * 5
    rot = Rotation.random(n, random_state=7)
    q_xyzw = rot.as_quat()
    wq = np.concatenate((q_xyzw[:, 3:], q_xyzw[:, :3]), axis=1)
    R = quat.to_matrix_normalized(wq)
    np.testing.assert_allclose(R, rot.as_matrix(), atol=1e-12)
    local = [G.local_wireframe(s, 8) for s in shapes]
    seg, owner = G.posed_segments(local, sid, pos, R)
    assert len(seg) == sum(len(local[s]) for s in sid)
    for i in range(n):  # brute force, one body at a time, with scipy's rotation
        want = rot[i].apply(local[sid[i]].reshape(-1, 3)).reshape(-1, 2, 3) + pos[i]
        np.testing.assert_allclose(seg[owner == i], want, atol=1e-12)
    lo, hi = G.world_aabbs(shapes, sid, pos, R)
    for i in range(n):
        s = shapes[sid[i]]
        w = rot[i].apply(np.array(s.core_points)) + pos[i]
        np.testing.assert_allclose(lo[i], w.min(0) - s.radius, atol=1e-12)
        np.testing.assert_allclose(hi[i], w.max(0) + s.radius, atol=1e-12)


def test_aabb_segments_are_the_twelve_box_edges():
    lo, hi = np.array([[0, 1, 2.0], [-1, -1, -1]]), np.array([[1, 3, 5.0], [0, 0, 0]])
    seg = G.aabb_segments(lo, hi).reshape(2, 12, 2, 3)
    for b in range(2):
        d = seg[b, :, 1] - seg[b, :, 0]
        assert np.all((np.abs(d) > 0).sum(axis=1) == 1)  # axis-aligned
        np.testing.assert_array_equal(np.sort(np.abs(d).max(axis=1)),
                                      np.sort(np.repeat(hi[b] - lo[b], 4)))
        np.testing.assert_array_equal(seg[b].reshape(-1, 3).min(0), lo[b])
        np.testing.assert_array_equal(seg[b].reshape(-1, 3).max(0), hi[b])


def test_inertia_axes_of_a_box_end_on_its_faces():
    half = np.array([0.6, 0.25, 0.1])
    m = 3.0
    inertia = np.diag([m / 3 * (half[1] ** 2 + half[2] ** 2), m / 3 * (half[0] ** 2 + half[2] ** 2),
                       m / 3 * (half[0] ** 2 + half[1] ** 2)])
    np.testing.assert_allclose(G.equivalent_box_half_extents(np.diag(inertia), m), half)
    rot = Rotation.from_euler("xyz", [0.3, -0.5, 1.1])
    q = rot.as_quat()
    model = G.SceneModel(["B"], [Box(half)], [0], [BodyKind.DYNAMIC], masses=[m], inertias=[inertia])
    frame = {"pos": [[1.0, 2.0, 3.0]], "q": [[q[3], q[0], q[1], q[2]]], "x": [[1.0, 2.0, 3.0]]}
    out = G.frame_layers(model, frame, {"show_inertia": True, "show_shapes": False})
    seg = layer(out, "inertia").segments
    ends = np.concatenate((seg[:, 0], seg[:, 1])).astype(np.float64)
    local = rot.inv().apply(ends - [1, 2, 3])
    # Each end is the centre of a face: one coordinate at +-half, the others zero.
    big = np.abs(local) > 1e-5
    assert np.all(big.sum(axis=1) == 1)
    np.testing.assert_allclose(np.sort(np.abs(local).max(axis=1)), np.sort(np.repeat(half, 2)),
                               atol=1e-5)


# -- GJK / EPA / SAT --------------------------------------------------------------------------
def _pose(euler, pos):
    return Rotation.from_euler("xyz", euler).as_matrix(), np.asarray(pos, dtype=np.float64)


@pytest.mark.parametrize("case,expected", [
    ("vertex", 1), ("edge", 2), ("face", 3), ("overlap", 4)])
def test_gjk_simplex_size_and_it_lies_in_the_minkowski_difference(case, expected):
    """A point core (sphere) against a box: the closest feature of D = B - A is a vertex,
    an edge or a face of the box (mirrored), so GJK's final simplex has 1, 2 or 3 points; a
    box deep inside another gives a tetrahedron around the origin."""
    box = Box((0.5, 0.4, 0.3))
    a_rot, a_pos = _pose([0.2, -0.3, 0.5], [1.0, -2.0, 0.5])
    local_target = {"vertex": [1.5, 1.4, 1.3], "edge": [1.5, 1.4, 0.1],
                    "face": [0.1, -0.05, 1.3]}
    if case == "overlap":
        shapes = [box, Box((0.3, 0.3, 0.3))]
        b_rot, b_pos = _pose([0.4, 0.1, -0.2], a_pos + [0.1, 0.05, -0.05])
    else:
        shapes = [box, Sphere(0.1)]
        b_rot, b_pos = np.eye(3), a_rot @ local_target[case] + a_pos
    pos = np.array([a_pos, b_pos])
    rot = np.array([a_rot, b_rot])
    out = G.query_layers(shapes, [0, 1], pos, rot, [[0, 1]],
                         {"show_epa": False, "show_sat": False})
    pts = layer(out, "simplex_points").coords.astype(np.float64)
    seg = layer(out, "simplex").segments.astype(np.float64)
    assert len(pts) == expected
    assert len(seg) == {1: 1, 2: 1, 3: 3, 4: 6}[expected]
    # The simplex points are points of D = B - A (anchored at A's origin): each is exactly one
    # of the differences b_j - a_i of the posed cores, and every drawn edge is inside conv(D).
    ca = box.core_points @ a_rot.T
    cb = shapes[1].core_points @ b_rot.T + (b_pos - a_pos)
    cloud = G.minkowski_points(ca, cb) + a_pos
    d = np.linalg.norm(pts[:, None] - cloud[None], axis=2).min(axis=1)
    assert d.max() < 1e-5
    if len(shapes[1].core_points) > 1:
        mids = np.concatenate((seg.mean(axis=1), seg[:, 0]))
        assert hull_inside(cloud, mids).max() < 1e-5
        # Overlap: the origin of B - A (drawn at A's origin) is inside the tetrahedron.
        tet = QHull(pts)
        assert (tet.equations[:, :3] @ a_pos + tet.equations[:, 3]).max() < 0
    else:  # sphere: D is the mirrored box; the simplex spans a feature of it
        span = np.linalg.matrix_rank(pts - pts[0], tol=1e-6) if len(pts) > 1 else 0
        assert span == expected - 1


def test_epa_polytope_is_a_closed_surface_inside_the_difference():
    shapes = [Box((0.5, 0.4, 0.3)), Box((0.3, 0.3, 0.3))]
    a_rot, a_pos = _pose([0.2, -0.3, 0.5], [0.0, 0.0, 0.0])
    b_rot, b_pos = _pose([0.4, 0.1, -0.2], [0.5, 0.2, 0.1])
    out = G.query_layers(shapes, [0, 1], np.array([a_pos, b_pos]), np.array([a_rot, b_rot]),
                         [[0, 1]], {"show_simplex": False, "show_sat": False})
    seg = layer(out, "epa").segments.astype(np.float64)
    verts = np.unique(np.round(seg.reshape(-1, 3), 6), axis=0)
    # Closed triangulated sphere: E = 3 V - 6 (Euler with F = 2 V - 4).
    assert len(seg) == 3 * len(verts) - 6
    cloud = G.minkowski_points(shapes[0].core_points @ a_rot.T,
                               shapes[1].core_points @ b_rot.T + (b_pos - a_pos)) + a_pos
    assert hull_inside(cloud, verts).max() < 1e-5
    # The depth arrow from the origin ends on D's boundary (the penetration vector).
    tip = layer(out, "epa_normal").segments.reshape(-1, 3, 2, 3)[0, 0, 1].astype(np.float64)
    assert abs(hull_inside(cloud, tip[None])) < 1e-4


def test_sat_features_of_a_resting_box_are_the_touching_faces():
    w, model = box_on_ground()
    pos, R = w.positions, quat.to_matrix_normalized(w.orientations)
    out = G.query_layers(model.shapes, model.shape_index, pos, R, [[0, 1]],
                         {"show_simplex": False, "show_epa": False, "_quats": w.orientations})
    ref = layer(out, "sat_reference").segments.astype(np.float64)
    inc = layer(out, "sat_incident").segments.astype(np.float64)
    assert ref.shape == (4, 2, 3) and inc.shape == (4, 2, 3)
    assert np.abs(ref[..., 2]).max() < 1e-6          # the ground's top face (z = 0)
    assert np.abs(ref[..., :2]).max() == pytest.approx(5.0)
    assert np.abs(inc[..., 2]).max() < 2e-3          # the cube's bottom face
    np.testing.assert_allclose(np.sort(np.unique(np.round(inc[..., 0], 3))), [-0.2, 0.8],
                               atol=2e-3)


def test_query_pairs_two_selected_or_aabb_neighbours():
    rng = np.random.default_rng(11)
    n = 30
    shapes = [Box((0.5, 0.5, 0.5)), Sphere(0.4)]
    sid = rng.integers(0, 2, n)
    pos = rng.uniform(-4, 4, size=(n, 3))
    R = Rotation.random(n, random_state=3).as_matrix()
    model = G.SceneModel([str(i) for i in range(n)], shapes, sid, np.zeros(n))
    assert G.query_pairs(model, pos, R, [7, 3]).tolist() == [[3, 7]]
    sel = [2, 5, 9]
    got = {tuple(sorted(p)) for p in G.query_pairs(model, pos, R, sel, margin=0.1)}
    lo, hi = G.world_aabbs(shapes, sid, pos, R)
    want = set()
    for i in sel:  # brute force
        for j in range(n):
            if j != i and np.all(lo[i] - 0.1 <= hi[j] + 0.1) and np.all(lo[j] - 0.1 <= hi[i] + 0.1):
                want.add(tuple(sorted((i, j))))
    assert got == want


# -- misc -------------------------------------------------------------------------------------
def test_arrow_heads_and_projection():
    seg = G.arrows([[1.0, 2.0, 3.0]], [[0.0, 2.0, 0.0]], head=0.25).reshape(3, 2, 3)
    np.testing.assert_allclose(seg[0], [[1, 2, 3], [1, 4, 3]])
    for k in (1, 2):
        h = seg[k, 1] - seg[k, 0]
        assert np.linalg.norm(h) == pytest.approx(0.5)
        cos = h @ np.array([0, -1.0, 0]) / np.linalg.norm(h)
        assert cos == pytest.approx(np.cos(np.radians(25)))
    # Projection: an orthographic view-projection of the box [-1, 1]^3 maps x = 0.5 to 3/4 of
    # the width; a perspective divide by w = -z.
    px, depth = G.project([[0.5, -0.5, 0.0]], np.eye(4), 200, 100)
    np.testing.assert_allclose(px, [[150.0, 25.0]])
    persp = np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, -1, -0.2], [0, 0, -1, 0.0]])
    px, _ = G.project([[1.0, 1.0, -2.0]], persp, 100, 100)
    np.testing.assert_allclose(px, [[75.0, 75.0]])


def test_sleeping_bodies_are_drawn_in_the_sleep_colour():
    w, model = box_on_ground(sleeping=True, steps=30)
    assert w.sleeping[1]
    out = G.frame_layers(model, {"pos": w.positions, "q": w.orientations,
                                 "sleeping": w.sleeping, "record": w.last_record},
                         {"show_aabbs": True})
    shapes = layer(out, "shapes")
    col = shapes.colours.reshape(-1, 2, 4)[:, 0]
    n_ground = 12  # segments are grouped by shape id: the ground's 12 edges come first
    np.testing.assert_allclose(col[n_ground:], np.broadcast_to(np.float32(G.SLEEP_COLOUR), (12, 4)))
    np.testing.assert_allclose(col[:n_ground],
                               np.broadcast_to(np.float32(G.KIND_COLOURS[BodyKind.STATIC]), (12, 4)))
    aabb = layer(out, "aabbs").segments
    assert len(aabb) == 24
    # The engine's recorded (fattened) boxes are used when the record has them.
    np.testing.assert_allclose(aabb[:12].reshape(-1, 3).min(0), w.last_record.aabbs[0, 0],
                               rtol=1e-6)
