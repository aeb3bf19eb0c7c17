"""Flat sides made of many faces (engine.collision.patches): a face clips with the outline of the faces
around it within PATCH_DEG, so rough bricks stack like boxes."""
import numpy as np
import pytest
from test_incident_face import _brick  # a rough brick: 200 points on its sides, 0.2 % noise

from engine.collision.patches import PATCH_DEG, PATCH_MAX, face_patches
from engine.core import quat
from engine.shapes.hull import ConvexHull
from engine.shapes.primitives import Box
from engine.world.world import World

HALF = np.array([0.1, 0.06, 0.03])   # test_incident_face._brick's half extents


def _area(pts2):
    x, y = pts2[:, 0], pts2[:, 1]
    return 0.5 * float(np.sum(x * np.roll(y, -1) - np.roll(x, -1) * y))


def test_a_box_keeps_its_faces():
    hull = ConvexHull(np.array([(x, y, z) for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)],
                               float) * HALF)
    for face, patch in zip(hull.faces, face_patches(hull)):
        assert np.array_equal(face, patch)


def test_a_rough_side_clips_as_one_outline():
    """The top faces of a rough brick: each one's patch is a convex CCW loop of at most
    PATCH_MAX hull vertices, all under the face's plane, covering most of the side (truth: the
    area of the 2D hull of every vertex on the top side, by brute force)."""
    rng = np.random.default_rng(2)
    hull = _brick(rng)
    patches = face_patches(hull)
    top = hull.vertices[:, 2] > HALF[2] * 0.9
    side = hull.vertices[top][:, :2]
    from scipy.spatial import ConvexHull as QHull  # oracle (test only)
    side_area = QHull(side).volume
    flat = [f for f in range(len(hull.faces)) if hull.planes[f, 2] > np.cos(np.radians(0.5))]
    assert len(flat) > 5
    for f in flat:
        loop = patches[f]
        n, d = hull.planes[f, :3], hull.planes[f, 3]
        assert 3 <= len(loop) <= PATCH_MAX
        assert np.all(hull.vertices[loop] @ n <= d + 1e-12)
        assert _area(hull.vertices[loop][:, :2]) > 0   # CCW about +z
        assert _area(hull.vertices[loop][:, :2]) > 0.8 * side_area
    assert PATCH_DEG < 5.0   # a 32-sided cylinder's sides (11.25 deg) stay apart


@pytest.mark.parametrize("dt", [1 / 24, 1 / 60])
def test_rough_bricks_stack(dt):
    """Four rough bricks stacked flat, each 5 mm along from the one below, stand still for 3 s
    (statically stable: every upper part's centre lies over its support). Clipping one sliver
    face against another gave each pair a contact a few centimetres wide, and the stack fell
    over (the top brick 0.1-0.3 m away within 3 s)."""
    rng = np.random.default_rng(5)
    w = World(sleeping=False)
    w.add_body(Box([2.0, 2.0, 0.5]), position=(0, 0, -0.5), kind="static")
    z, bodies = 0.0, []
    for level in range(4):
        brick = _brick(rng)
        z += -brick.vertices[:, 2].min() + 0.002
        start = np.array([0.005 * level, 0.0, z])
        bodies.append((w.add_body(brick, position=start, mass=1.0), start))
        z += brick.vertices[:, 2].max()
    for _ in range(round(3.0 / dt)):
        w.step(dt)
    for b, start in bodies:
        assert np.linalg.norm(w.positions[b][:2] - start[:2]) < 3e-3
        assert abs(w.positions[b][2] - start[2]) < 0.015
        # (a rough brick rests a few tenths of a degree off level: its sides are not parallel)
        tilt = np.degrees(np.arccos(min(1.0, quat.to_matrix(w.orientations[b][None])[0, 2, 2])))
        assert tilt < 2.0
        assert np.linalg.norm(w.linear_velocities[b]) < 1e-2
        assert np.linalg.norm(w.angular_velocities[b]) < 5e-2


def _grid_ground(n=8, size=1.0):
    from engine.shapes.trimesh import TriangleMesh
    g = np.linspace(-size, size, n + 1)
    x, y = np.meshgrid(g, g)
    verts = np.stack([x.ravel(), y.ravel(), np.zeros(x.size)], axis=1)
    tris = []
    for i in range(n):
        for j in range(n):
            a = i * (n + 1) + j
            tris += [(a, a + 1, a + n + 2), (a, a + n + 2, a + n + 1)]
    return TriangleMesh(verts, np.array(tris))


@pytest.mark.parametrize("dt", [1 / 24, 1 / 60])
def test_rough_bricks_stack_on_a_triangle_mesh_ground(dt):
    """Three rough bricks stacked on a static triangle-mesh ground (a grid of 128 triangles,
    bricks across several). The mesh routine clipped one sliver face too: the bottom brick sank
    14-24 mm, the stack fell over, and in most runs the bricks fell through the two-sided
    ground (40 m down in 3 s). Truth: the exact lowest vertex against the plane z = 0."""
    rng = np.random.default_rng(5)
    w = World(sleeping=False)
    w.add_body(_grid_ground(), kind="static")
    z, bodies = 0.0, []
    for level in range(3):
        brick = _brick(rng)
        z += -brick.vertices[:, 2].min() + 0.002
        start = np.array([0.13 + 0.005 * level, 0.07, z])
        bodies.append((w.add_body(brick, position=start, mass=1.0), start, brick))
        z += brick.vertices[:, 2].max()
    for _ in range(round(2.0 / dt)):
        w.step(dt)
    for b, start, _ in bodies:
        assert np.linalg.norm(w.positions[b][:2] - start[:2]) < 0.01
        assert np.linalg.norm(w.linear_velocities[b]) < 0.05
    b, _, brick = bodies[0]
    rot = quat.to_matrix(w.orientations[b][None])[0]
    assert (w.positions[b] + brick.vertices @ rot.T)[:, 2].min() > -1e-3
