"""engine/collision/bounds.py: every body's rotation and world box in one kernel, held to
independent truth: scipy's rotation matrices, the posed shapes' own surface points, and, for
the swept box, the body's surface along the motion the pass may bring."""
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from engine import Box, Capsule, Cone, ConvexHull, Cylinder, Sphere, TriangleMesh, World
from engine.collision.bounds import world_bounds


def local_surface(shape, n=2048):
    """Points whose hull is the shape (round parts sampled densely)."""
    if isinstance(shape, (Cylinder, Cone)):
        phi = 2 * np.pi * np.arange(n) / n
        ring = np.stack((shape.radius * np.cos(phi), shape.radius * np.sin(phi), 0 * phi), 1)
        hh = shape.half_height
        top = ring + [0, 0, hh] if isinstance(shape, Cylinder) else np.array([[0, 0, hh]])
        return np.concatenate((ring - [0, 0, hh], top))
    if isinstance(shape, TriangleMesh):   # its box is its local box's, rotated (trimesh.py)
        lo, hi = shape.vertices.min(axis=0), shape.vertices.max(axis=0)
        return np.array([[(lo, hi)[b >> i & 1][i] for i in range(3)] for b in range(8)])
    core = np.asarray(shape.core_points)
    if shape.radius == 0.0:
        return core
    d = np.random.default_rng(0).normal(size=(n, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    d = np.concatenate((d, np.eye(3), -np.eye(3)))
    return (core[:, None, :] + shape.radius * d[None]).reshape(-1, 3)


def scene(rng, ccd=True):
    mesh = TriangleMesh([[0, 0, 0], [2, 0, 0.3], [0, 3, -0.2], [2, 3, 1]], [[0, 1, 2], [1, 3, 2]])
    shapes = [Box([0.3, 0.5, 0.2]), Sphere(0.4), Capsule(0.2, 0.9), Cylinder(0.3, 1.1),
              Cone(0.6, 0.9), ConvexHull(rng.normal(size=(30, 3))), mesh]
    w = World(ccd=ccd)
    for s in shapes:
        q = rng.normal(size=4)
        w.add_body(s, position=rng.normal(size=3) * 3, orientation=q / np.linalg.norm(q),
                   linear_velocity=rng.normal(size=3) * 4, angular_velocity=rng.normal(size=3) * 9,
                   kind="static" if s is mesh else "dynamic")
    w.add_body(Box([1, 1, 1]), position=(0, 0, -5), kind="static")
    return w, shapes + [Box([1, 1, 1])]


def bounds_of(w, dt):
    return world_bounds(w.table, w._v("shape"), w._v("q"), w._v("pos"), w._v("com"),
                        w._v("vel"), w._v("kind") != 1, dt if w.settings.ccd else 0.0,
                        w.settings.aabb_margin)


def test_rotations_are_scipys():
    w, _ = scene(np.random.default_rng(1))
    rot, _, _ = bounds_of(w, 0.0)
    q = w._v("q")
    want = Rotation.from_quat(q[:, [1, 2, 3, 0]]).as_matrix()   # scipy: (x, y, z, w)
    np.testing.assert_allclose(rot, want, atol=1e-14)


def test_still_boxes_are_the_posed_shapes_boxes_plus_the_margin():
    rng = np.random.default_rng(2)
    w, shapes = scene(rng)
    margin = w.settings.aabb_margin
    _, lo, hi = bounds_of(w, 0.0)
    q, pos = w._v("q"), w._v("pos")
    for n, s in enumerate(shapes):
        r = Rotation.from_quat(q[n, [1, 2, 3, 0]]).as_matrix()
        if isinstance(s, (Cylinder, Cone, TriangleMesh)) or not s.radius:
            pts, swell, tol = local_surface(s) @ r.T + pos[n], 0.0, 2e-6
        else:   # a swept sphere: its core's box grown by the radius, exactly
            pts, swell, tol = np.asarray(s.core_points) @ r.T + pos[n], s.radius, 1e-12
        if not isinstance(s, (Cylinder, Cone)):
            tol = 1e-12
        np.testing.assert_allclose(lo[n], pts.min(axis=0) - swell - margin, atol=tol)
        np.testing.assert_allclose(hi[n], pts.max(axis=0) + swell + margin, atol=tol)


@pytest.mark.parametrize("seed", range(4))
def test_swept_boxes_hold_the_body_along_its_motion(seed):
    """Every surface point at every time of the pass (the centre of mass moving at v, the body
    turning at w about it) is inside the swept box; static bodies are not swept."""
    rng = np.random.default_rng(10 + seed)
    w, shapes = scene(rng)
    dt = 1 / 48
    _, lo, hi = bounds_of(w, dt)
    q, x, vel, com = w._v("q"), w._v("x"), w._v("vel"), w._v("com")
    for n, s in enumerate(shapes):
        r0 = Rotation.from_quat(q[n, [1, 2, 3, 0]])
        local = local_surface(s) - com[n]           # about the centre of mass
        moving = w._v("kind")[n] != 1
        for t in np.linspace(0, dt, 9):
            turn = Rotation.from_rotvec(vel[n, 3:] * t) if moving else Rotation.identity()
            pts = (turn * r0).apply(local) + x[n] + (vel[n, :3] * t if moving else 0)
            assert np.all(pts >= lo[n] - 1e-9) and np.all(pts <= hi[n] + 1e-9), (n, t)
    # Without ccd nothing is swept: the boxes are the still ones.
    w2, _ = scene(np.random.default_rng(10 + seed), ccd=False)
    _, lo2, hi2 = bounds_of(w2, dt)
    _, lo0, hi0 = bounds_of(w2, 0.0)
    np.testing.assert_array_equal(lo2, lo0)
    np.testing.assert_array_equal(hi2, hi0)
