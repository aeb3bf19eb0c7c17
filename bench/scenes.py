"""Benchmark scenes shared by the three engines (ours via the add-on, Blender's Bullet, pybullet).

A scene is pure data: a few unique shapes plus per-body arrays (structure of arrays), so every
engine builds *the same* bodies from it: same shapes (boxes as boxes, hulls from the same
points, spheres), same masses, friction, restitution, damping, initial poses and velocities.
SI units, Z up, 24 fps, gravity (0, 0, -9.81) unless a scene says otherwise. Every random
choice is seeded, so each engine (in its own subprocess) rebuilds bit-identical input.

Conventions that make the comparison fair:

- Every body's origin is its centre of mass (hull points are re-centred on their centroid):
  Bullet puts the centre of mass at the object origin, ours at the true centroid; with the
  origin on the centroid they agree.
- ``margin`` per shape is the Bullet collision margin (Blender's ``collision_margin``, default
  0.04 m). Boxes: Bullet's btBoxShape keeps its outer size (the margin only rounds its
  edges), so they keep 0.04 m unless their smallest dimension is under 0.4 m, then 10 % of
  it (a margin above a half size breaks the box). Hulls: Blender adds the margin *around* the
  hull (measured: rocks with the default hovered 25-40 mm above the ground), so they get 2 %
  of their smallest dimension (6-8 mm for the rocks), what a careful user would set.
- Body defaults are Blender's Rigid Body defaults: 1 kg, friction 0.5, restitution 0,
  damping 0.04 (linear) / 0.1 (angular).

``build(name, **params)`` returns a ``Scene``; ``SUITE`` lists the report's scenes and
``scaling_scene(n)`` the cube piles of the scaling plot.
"""
import math

import numpy as np

from engine.core import quat
from engine.shapes.hull import ConvexHull

FPS = 24
G = (0.0, 0.0, -9.81)
DYNAMIC, STATIC = 0, 1


class ShapeSpec:
    """One unique collision shape: kind 'box' (half_extents), 'hull' (points, origin on the
    centroid) or 'sphere' (radius); ``margin`` is the Bullet collision margin to use."""

    def __init__(self, kind, half_extents=None, points=None, radius=None):
        self.kind = kind
        self.half_extents = None if half_extents is None else np.asarray(half_extents, float)
        self.points = None if points is None else np.asarray(points, float)
        self.radius = radius
        if kind == "box":
            smallest = 2.0 * float(self.half_extents.min())
            self.margin = 0.04 if smallest >= 0.4 else 0.1 * smallest
        elif kind == "hull":
            self.margin = min(0.04, 0.02 * float(np.ptp(self.points, axis=0).min()))
        else:
            self.margin = 0.04  # Bullet's sphere is a point swollen by its radius: no effect

    def vertices(self):
        """Mesh vertices (V, 3) in the body frame (the 8 corners of a box)."""
        if self.kind == "box":
            s = np.array([[1 if i & 1 else -1, 1 if i & 2 else -1, 1 if i & 4 else -1]
                          for i in range(8)], dtype=float)
            return s * self.half_extents
        if self.kind == "hull":
            return self.points
        raise ValueError("spheres have no vertex list; build them from the radius")

    def engine_shape(self):
        """The engine shape (for mass properties and the quality measurements)."""
        from engine.shapes.primitives import Box, Sphere
        if self.kind == "box":
            return Box(self.half_extents)
        if self.kind == "sphere":
            return Sphere(self.radius)
        return ConvexHull(self.points)


class Scene:
    """Bodies as arrays: shape (N,) index into ``shapes``, kind (N,) DYNAMIC/STATIC, pos (N, 3),
    quat (N, 4) (w, x, y, z), lin_vel, ang_vel (N, 3) world, mass, friction, restitution,
    lin_damp, ang_damp (N,). ``info`` holds scene-specific indices for the metrics."""

    def __init__(self, name, title, frames, gravity=G, fps=FPS):
        self.name, self.title, self.frames = name, title, int(frames)
        self.gravity = tuple(float(g) for g in gravity)
        self.fps = fps
        self.shapes = []
        self._rows = []
        self.info = {}

    def shape(self, spec):
        self.shapes.append(spec)
        return len(self.shapes) - 1

    def add(self, shape, pos, q=(1.0, 0.0, 0.0, 0.0), v=(0.0, 0.0, 0.0), w=(0.0, 0.0, 0.0),
            kind=DYNAMIC, mass=1.0, friction=0.5, restitution=0.0, lin_damp=0.04,
            ang_damp=0.1):
        self._rows.append((shape, kind, pos, q, v, w, mass, friction, restitution, lin_damp,
                           ang_damp))
        return len(self._rows) - 1

    def add_many(self, shape, pos, q=None, **kw):
        """Add len(pos) bodies of one shape (scene set-up, not an engine path)."""
        q = np.tile([1.0, 0.0, 0.0, 0.0], (len(pos), 1)) if q is None else q
        first = len(self._rows)
        for p, r in zip(pos, q):
            self.add(shape, p, r, **kw)
        return np.arange(first, len(self._rows))

    def finish(self):
        rows = self._rows
        self.shape_id = np.array([r[0] for r in rows], dtype=np.int64)
        self.kind = np.array([r[1] for r in rows], dtype=np.int8)
        self.pos = np.array([r[2] for r in rows], dtype=float).reshape(-1, 3)
        self.quat = quat.normalize(np.array([r[3] for r in rows], dtype=float).reshape(-1, 4))
        self.lin_vel = np.array([r[4] for r in rows], dtype=float).reshape(-1, 3)
        self.ang_vel = np.array([r[5] for r in rows], dtype=float).reshape(-1, 3)
        for k, name in enumerate(("mass", "friction", "restitution", "lin_damp", "ang_damp")):
            setattr(self, name, np.array([r[6 + k] for r in rows], dtype=float))
        self.dynamic = np.flatnonzero(self.kind == DYNAMIC)
        return self

    @property
    def body_count(self):
        return len(self.shape_id)

    @property
    def has_velocities(self):
        return bool(np.any(self.lin_vel != 0) or np.any(self.ang_vel != 0))

    @property
    def seconds(self):
        return self.frames / self.fps


# -- building blocks ---------------------------------------------------------------------------

def _ground(scene, half=20.0):
    g = scene.shape(ShapeSpec("box", (half, half, 0.5)))
    return scene.add(g, (0.0, 0.0, -0.5), kind=STATIC)


def random_tilts(rng, n, max_angle):
    """n unit quaternions: random axes, angles uniform in [0, max_angle]."""
    axis = rng.normal(size=(n, 3))
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    return quat.from_axis_angle(axis, rng.uniform(0.0, max_angle, size=n))


def grid_positions(n, spacing, layers, z0):
    """n points of a centred square grid, filled layer by layer from z0 up."""
    per = math.ceil(n / layers)
    side = math.ceil(math.sqrt(per))
    k = np.arange(n)
    i, j, layer = k % side, (k // side) % side, k // (side * side)
    off = (side - 1) * spacing / 2.0
    return np.stack((i * spacing - off, j * spacing - off, z0 + layer * spacing), axis=1), side


def cube_pile(name, n, frames, seed=1, layers=10):
    """n unit cubes (1 kg) dropped in a grid with random tilts up to 15 degrees (so they tumble
    into a heap rather than land as perfect columns); 1.5 m spacing keeps tilted cubes apart."""
    s = Scene(name, f"{n} falling cubes, {frames} frames", frames)
    rng = np.random.default_rng(seed)
    pos, side = grid_positions(n, 1.5, min(layers, max(1, round(n ** (1 / 3)))), 1.2)
    _ground(s, half=max(20.0, side * 1.5))
    cube = s.shape(ShapeSpec("box", (0.5, 0.5, 0.5)))
    s.add_many(cube, pos, random_tilts(rng, n, math.radians(15.0)))
    return s.finish()


def rock_points(rng, size):
    """16 jittered points on an ellipsoid (axes 1 : 0.8 : 0.6 times size), re-centred on the
    hull's centroid so the body origin is its centre of mass."""
    d = rng.normal(size=(16, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    pts = d * size * rng.uniform(0.8, 1.0, size=(16, 1)) * np.array([1.0, 0.8, 0.6])
    hull = ConvexHull(pts)
    return hull.vertices - hull.centroid, hull.volume


# -- the suite ---------------------------------------------------------------------------------

def falling_cubes(n=1000, frames=240):
    return cube_pile("falling_cubes", n, frames)


def cubes_long(n=200, frames=500):
    s = cube_pile("cubes_long", n, frames, seed=2)
    s.title = f"{n} cubes x {frames} frames"
    return s


def hull_pile(n=300, frames=240, seed=3):
    """n random convex rocks (16-point hulls, 0.25-0.4 m, density 1000) dropped from a 7x7
    grid into a heap."""
    s = Scene("hull_pile", f"pile of {n} random convex hulls", frames)
    rng = np.random.default_rng(seed)
    _ground(s)
    pos, _ = grid_positions(n, 0.9, math.ceil(n / 49), 0.6)
    q = random_tilts(rng, n, math.pi)
    for p, r in zip(pos, q):
        pts, vol = rock_points(rng, rng.uniform(0.25, 0.4))
        s.add(s.shape(ShapeSpec("hull", points=pts)), p, r, mass=1000.0 * vol, friction=0.6)
    return s.finish()


def pyramid(base=20, frames=240):
    """A 2D pyramid of unit cubes, base rows of `base` boxes, 2 cm gaps between neighbours."""
    s = Scene("pyramid", f"{base}-base box pyramid ({base * (base + 1) // 2} boxes)", frames)
    _ground(s)
    cube = s.shape(ShapeSpec("box", (0.5, 0.5, 0.5)))
    pos = []
    for row in range(base):
        count = base - row
        x0 = -(count - 1) * 1.02 / 2.0
        pos += [(x0 + k * 1.02, 0.0, 0.5 + row) for k in range(count)]
    idx = s.add_many(cube, np.array(pos))
    s.info["top"] = int(idx[-1])
    return s.finish()


def tower(n=10, frames=240):
    s = Scene("tower", f"{n}-box tower", frames)
    _ground(s)
    cube = s.shape(ShapeSpec("box", (0.5, 0.5, 0.5)))
    idx = s.add_many(cube, np.array([(0.0, 0.0, 0.5 + k) for k in range(n)]))
    s.info["top"] = int(idx[-1])
    return s.finish()


def dominoes(n=100, frames=360):
    """n dominoes 0.05 x 0.25 x 0.5 m (thick along x), 0.25 m apart; the first is tipped 20
    degrees about its front bottom edge so it falls onto the second (no initial velocity)."""
    s = Scene("dominoes", f"{n} dominoes", frames)
    _ground(s, half=max(20.0, n * 0.25 / 2 + 5))
    h = np.array([0.025, 0.125, 0.25])
    d = s.shape(ShapeSpec("box", h))
    x = (np.arange(n) - (n - 1) / 2.0) * 0.25
    pos = np.stack((x, np.zeros(n), np.full(n, h[2])), axis=1)
    q = np.tile([1.0, 0.0, 0.0, 0.0], (n, 1))
    tip = math.radians(20.0)
    q0 = quat.from_axis_angle(np.array([0.0, 1.0, 0.0]), tip)
    pivot = np.array([x[0] + h[0], 0.0, 0.0])
    pos[0] = pivot + quat.rotate(q0, np.array([-h[0], 0.0, h[2]]))
    q[0] = q0
    s.info["dominoes"] = s.add_many(d, pos, q, mass=0.1)
    return s.finish()


def fast_sphere(frames=48):
    """A 0.1 m (diameter) sphere at 200 m/s, 1 m before a static 5 cm thick, 2 x 2 m wall."""
    s = Scene("fast_sphere", "0.1 m sphere at 200 m/s into a 5 cm wall", frames)
    wall = s.shape(ShapeSpec("box", (0.025, 1.0, 1.0)))
    s.info["wall"] = s.add(wall, (0.0, 0.0, 1.0), kind=STATIC)
    ball = s.shape(ShapeSpec("sphere", radius=0.05))
    s.info["sphere"] = s.add(ball, (-1.0, 0.0, 1.0), v=(200.0, 0.0, 0.0), mass=0.5)
    return s.finish()


def resting_box(frames=240):
    s = Scene("resting_box", "a box resting 10 s on the ground", frames)
    _ground(s)
    s.add(s.shape(ShapeSpec("box", (0.5, 0.5, 0.5))), (0.0, 0.0, 0.5))
    return s.finish()


def heavy_on_light(frames=240, ratio=100.0):
    s = Scene("heavy_on_light", f"heavy box ({ratio:g}:1) on a light one", frames)
    _ground(s)
    cube = s.shape(ShapeSpec("box", (0.5, 0.5, 0.5)))
    s.info["light"] = s.add(cube, (0.0, 0.0, 0.5), mass=1.0)
    s.info["heavy"] = s.add(cube, (0.0, 0.0, 1.5), mass=ratio)
    return s.finish()


def t_handle(frames=240):
    """Zero gravity, no damping: a body with three distinct principal moments spun about its
    intermediate axis (the Dzhanibekov / tennis-racket flip). Stand-in for a T-handle: a
    0.2 x 0.6 x 1.0 m box. A true T is a compound (or a hull), whose inertia Bullet
    approximates by its bounding box while ours is exact, so the three engines would not
    simulate the same body; a box's inertia is exact in all three."""
    s = Scene("t_handle", "tumbling T-handle in zero gravity (box stand-in)", frames,
              gravity=(0.0, 0.0, 0.0))
    b = s.shape(ShapeSpec("box", (0.1, 0.3, 0.5)))
    s.info["body"] = s.add(b, (0.0, 0.0, 0.0), w=(0.05, 4.0, 0.05), mass=1.0, lin_damp=0.0,
                           ang_damp=0.0)
    return s.finish()


SUITE = {
    "falling_cubes": falling_cubes,
    "cubes_long": cubes_long,
    "hull_pile": hull_pile,
    "pyramid": pyramid,
    "tower": tower,
    "dominoes": dominoes,
    "fast_sphere": fast_sphere,
    "resting_box": resting_box,
    "heavy_on_light": heavy_on_light,
    "t_handle": t_handle,
}

# --quick: the same scenes, smaller (a few seconds each), for developing the harness.
QUICK = {
    "falling_cubes": dict(n=125, frames=48),
    "cubes_long": dict(n=27, frames=96),
    "hull_pile": dict(n=30, frames=48),
    "pyramid": dict(base=5, frames=48),
    "tower": dict(frames=48),
    "dominoes": dict(n=10, frames=72),
    "fast_sphere": dict(frames=24),
    "resting_box": dict(frames=48),
    "heavy_on_light": dict(frames=48),
    "t_handle": dict(frames=48),
}

SCALING_SIZES = (100, 300, 1000, 2000, 5000)
SCALING_QUICK = (50, 100, 200)
SCALING_FRAMES = 72


def scaling_scene(n, frames=SCALING_FRAMES):
    return cube_pile("scaling", n, frames, seed=11)


def build(name, **params):
    if name == "scaling":
        return scaling_scene(**params)
    return SUITE[name](**params)
