"""Exact cylinders and cones: shapes, batched support functions, AABBs and mass properties.

Both are curved convex shapes that no finite point core describes, so GJK/EPA read them through
an analytic support function (``local_support_row``), the world takes their AABB in closed form and
their mass properties are closed forms too. Contacts are built in ``curved_contacts.py``.

Conventions (axis Z, as Blender's Cylinder and Cone primitives and rigid-body shapes):
- ``Cylinder(radius, height)``: caps at z = -height/2 and z = +height/2, centred on the origin.
- ``Cone(radius, height)``: base disc of the given radius at z = -height/2, apex at z = +height/2.
  The origin is the midpoint of the axis, i.e. the centre of the bounding box: that is where
  Blender's Add > Cone puts the object origin (its vertices run from z = -depth/2 to +depth/2)
  and where Bullet's btConeShapeZ (Blender's rigid-body Cone) has its centre. The centre of mass
  is *not* there but a quarter of the height above the base, z = -height/4; the body keeps that
  offset (World stores the COM), so a cone tips about its real centroid (Bullet treats the
  shape centre as the COM).

``radius`` on these shapes is the cylinder/cone radius; they are not swollen shapes, so their
``swell_radius`` (what the ShapeTable's ``radius`` column holds for every shape) is 0.
"""
import math

import numpy as np

from ..core import detmath
from ..core.errors import DegenerateShapeError
from ..core.jit import kernel
from ..core.kinds import ShapeKind
from .primitives import Shape

CYLINDER, CONE = ShapeKind.CYLINDER, ShapeKind.CONE
CURVED_KINDS = (CYLINDER, CONE)
_CONE = int(CONE)     # (the kernels compare plain ints)
# The core points of a curved shape in the ShapeTable are a circumscribed prism/pyramid of this
# many sides. Only bounding uses read them (a compound's or mesh query's candidate box, the
# triangle side test): 8 sides make those boxes at most 1/cos(pi/8) - 1 = 8 % too wide, and
# keep the padded point arrays of a mixed table small (16 points for a cylinder).
RING = 8
# Cap polygons used for face contacts: CAP_N points exactly on the rim circle. 16 puts a point
# within 11.25 deg of any rim direction, so a cap clipped by a face edge loses at most
# r (1 - cos(pi/16)) = 1.9 % of r of its true outline; clip.reduce4 keeps 4 of them.
CAP_N = 16


def _size(value, what):
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise DegenerateShapeError(f"{what} must be a number, got {value!r}") from None
    if not np.isfinite(v) or v <= 0:
        raise DegenerateShapeError(f"{what} must be a finite number > 0, got {value!r}; "
                                   "give the shape a size above zero")
    return v


class CurvedShape(Shape):
    """A cylinder or cone about local Z (see the module doc for the frame)."""
    swell_radius = 0.0

    def __init__(self, radius, height):
        name = type(self).__name__
        self.radius = _size(radius, f"{name} radius")
        self.height = _size(height, f"{name} height")
        self.half_height = 0.5 * self.height
        ring = RING_DIRS * (self.radius / detmath.cos(np.pi / RING))
        self.core_points = self._bounding_points(ring)
        self.core_points.setflags(write=False)

    def _bounding_points(self, ring):
        raise NotImplementedError

    def local_aabb(self):
        lo, hi = curved_aabb(np.array([self.kind]), np.array([self.radius]),
                             np.array([self.half_height]), np.eye(3)[None], np.zeros((1, 3)))
        return lo[0], hi[0]

    def support(self, direction):
        d = np.asarray(direction, dtype=np.float64).reshape(1, 3)
        return local_support(np.array([self.kind]), np.array([self.radius]),
                             np.array([self.half_height]), d)[0]

    def __repr__(self):
        return f"{type(self).__name__}(radius={self.radius}, height={self.height})"


RING_DIRS = np.stack((detmath.cos(2 * np.pi * np.arange(RING) / RING),
                      detmath.sin(2 * np.pi * np.arange(RING) / RING), np.zeros(RING)), axis=1)
CAP_DIRS = np.stack((detmath.cos(2 * np.pi * np.arange(CAP_N) / CAP_N),
                     detmath.sin(2 * np.pi * np.arange(CAP_N) / CAP_N), np.zeros(CAP_N)), axis=1)


class Cylinder(CurvedShape):
    """Solid cylinder of the given radius and height along local Z, centred on the origin."""
    kind = CYLINDER

    def _bounding_points(self, ring):
        z = np.array([0.0, 0.0, self.half_height])
        return np.concatenate((ring - z, ring + z))

    def bounding_radius(self):
        return float(np.hypot(self.radius, self.half_height))


class Cone(CurvedShape):
    """Solid cone along local Z: base of the given radius at z = -height/2, apex at +height/2."""
    kind = CONE

    def _bounding_points(self, ring):
        z = np.array([0.0, 0.0, self.half_height])
        return np.concatenate((ring - z, z[None]))

    def bounding_radius(self):
        return float(max(np.hypot(self.radius, self.half_height), self.half_height))


def is_curved(kind):
    return (kind == CYLINDER) | (kind == CONE)


@kernel
def radial_unit(d0, d1):
    """(|d_xy|, unit d_xy) of a local direction's xy part, the x axis where it has none (the
    rim point facing it: any one for a direction along the axis)."""
    lxy = math.sqrt(d0 * d0 + d1 * d1)
    if lxy > 1e-300:
        return lxy, d0 / lxy, d1 / lxy
    return lxy, 1.0, 0.0


@kernel
def local_support_row(code, radius, hh, d0, d1, d2, out):
    """Farthest point (into out) of a cylinder/cone (code: its kind) along the local direction
    (d0, d1, d2): the rim point of the cap facing it; for a cone the apex or the base rim point,
    whichever reaches farther (apex when 2 hh d_z >= r |d_xy|). The compiled GJK/EPA read the
    shapes through this (engine.collision.gjk_kernels.support)."""
    lxy, ux, uy = radial_unit(d0, d1)
    if code == _CONE:
        apex = 2.0 * hh * d2 >= radius * lxy
        z = hh if apex else -hh
        rr = 0.0 if apex else radius
    else:
        z = hh if d2 >= 0 else -hh
        rr = radius
    out[0] = rr * ux
    out[1] = rr * uy
    out[2] = z


def local_support(kind, radius, hh, d):
    """Farthest points (k, 3) of cylinders/cones (kind per row) along local directions d (k, 3)
    (local_support_row per row: for single shapes and tests, not a hot path)."""
    d = np.asarray(d, dtype=np.float64)
    out = np.zeros((len(d), 3))
    for i in range(len(d)):
        local_support_row(int(kind[i]), float(radius[i]), float(hh[i]), float(d[i, 0]),
                          float(d[i, 1]), float(d[i, 2]), out[i])
    return out


def curved_aabb(kind, radius, hh, rot, pos):
    """World AABBs (lo, hi) of cylinders/cones with rotations rot (k, 3, 3), origins pos (k, 3).

    A disc of radius r with unit normal a spans r sqrt(1 - a_i^2) along world axis i."""
    a = rot[:, :, 2]
    disc = radius[:, None] * np.sqrt(np.maximum(1.0 - a * a, 0.0))
    top = pos + hh[:, None] * a
    bot = pos - hh[:, None] * a
    cone = (kind == CONE)[:, None]
    top_lo = np.where(cone, top, top - disc)
    top_hi = np.where(cone, top, top + disc)
    lo = np.minimum(top_lo, bot - disc)
    hi = np.maximum(top_hi, bot + disc)
    return lo, hi


def curved_moments(shape):
    """Volume, centroid (3,) and second moment about the centroid (density 1) in closed form.

    Cylinder (V = pi r^2 h): C_xx = C_yy = V r^2 / 4, C_zz = V h^2 / 12, so I_z = m r^2 / 2 and
    I_x = m (3 r^2 + h^2) / 12. Cone (V = pi r^2 h / 3, centroid h/4 above the base):
    C_xx = C_yy = 3 V r^2 / 20, C_zz = 3 V h^2 / 80, so I_z = 3 m r^2 / 10 and
    I_x = m (3 r^2 / 20 + 3 h^2 / 80) about the centroid."""
    r, h = shape.radius, shape.height
    if shape.kind == CYLINDER:
        v = np.pi * r * r * h
        return v, np.zeros(3), np.diag([v * r * r / 4.0, v * r * r / 4.0, v * h * h / 12.0])
    v = np.pi * r * r * h / 3.0
    cxx = 3.0 * v * r * r / 20.0
    return v, np.array([0.0, 0.0, -0.25 * h]), np.diag([cxx, cxx, 3.0 * v * h * h / 80.0])
