"""Compound bodies: one rigid body made of several convex parts.

``Compound(parts)`` with parts = [(convex shape, position (3,), quaternion (w, x, y, z)), ...]
in the body frame. Mass properties are exact: each part's (engine.shapes.mass) placed in the body
frame and summed with the parallel-axis theorem (engine.shapes.mass.combine); parts are assumed not
to overlap (an overlap is counted twice, like every engine that sums parts).

Collision never sees the compound itself: ``engine.collision.nonconvex.collide_bodies`` expands a body
pair involving a compound into (part, other shape) pairs with the part's pose composed with
the body's, and runs them through the same batched queries as any convex pair, one manifold per
part pair. The compound's own ``core_points`` are the 8 corners of the parts' joint bounding
box (radius 0), so the world's AABBs and bounding radius stay correct and conservative without
padding every shape in the table to the parts' total vertex count.
"""
import numpy as np

from ..core import quat
from ..core.errors import EngineError
from ..core.kinds import ShapeKind
from .curved import CONE, CYLINDER, curved_aabb
from .primitives import Shape


def box_corners(lo, hi):
    """The 8 corners (8, 3) of an axis-aligned box."""
    return np.array([[(lo, hi)[i & 1][0], (lo, hi)[(i >> 1) & 1][1], (lo, hi)[(i >> 2) & 1][2]]
                     for i in range(8)], dtype=np.float64)


class Compound(Shape):
    """A rigid union of convex parts. Attributes: shapes (list), positions (P, 3),
    orientations (P, 4) unit, rotations (P, 3, 3)."""
    kind = ShapeKind.COMPOUND
    radius = 0.0

    def __init__(self, parts):
        parts = list(parts)
        if not parts:
            raise EngineError("Compound needs at least one part (shape, position, quaternion)")
        shapes, pos, rot = [], [], []
        for i, part in enumerate(parts):
            try:
                shape, p, q = part
            except (TypeError, ValueError):
                raise EngineError(f"Compound part {i} must be (shape, position, quaternion), "
                                  f"got {part!r}") from None
            if getattr(shape, "kind", None) not in (ShapeKind.POLYTOPE, ShapeKind.SPHERE,
                                                     ShapeKind.CAPSULE, CYLINDER, CONE):
                raise EngineError(f"Compound part {i} must be a convex shape (Box, Sphere, "
                                  f"Capsule, Cylinder, Cone, ConvexHull), got {shape!r}; nest "
                                  "compounds by listing their parts, hull meshes first")
            p = np.asarray(p, dtype=np.float64).reshape(-1)
            q = np.asarray(q, dtype=np.float64).reshape(-1)
            if p.shape != (3,) or q.shape != (4,) or not (np.all(np.isfinite(p))
                                                         and np.all(np.isfinite(q))):
                raise EngineError(f"Compound part {i}: position must be 3 finite numbers and "
                                  f"rotation a finite quaternion (w, x, y, z), got {p!r}, {q!r}")
            nq = np.linalg.norm(q)
            if nq < 1e-9:
                raise EngineError(f"Compound part {i}: rotation quaternion has zero length")
            shapes.append(shape)
            pos.append(p)
            rot.append(q / nq)
        self.shapes = shapes
        self.positions = np.array(pos)
        self.orientations = np.array(rot)
        self.rotations = quat.to_matrix(self.orientations)
        lo, hi = self.part_aabbs()
        self.core_points = box_corners(lo.min(axis=0), hi.max(axis=0))
        for arr in (self.positions, self.orientations, self.rotations):
            arr.setflags(write=False)

    def __len__(self):
        return len(self.shapes)

    def __repr__(self):
        return f"Compound({len(self.shapes)} parts: {', '.join(map(repr, self.shapes))})"

    def part_aabbs(self):
        """Body-frame boxes (lo, hi) of the parts, each (P, 3)."""
        lo, hi = [], []
        for s, p, r in zip(self.shapes, self.positions, self.rotations):
            if s.kind in (CYLINDER, CONE):       # exact box (curved.py)
                a, b = curved_aabb(np.array([s.kind]), np.array([s.radius]),
                                   np.array([s.half_height]), r[None], p[None])
                lo.append(a[0])
                hi.append(b[0])
                continue
            w = s.core_points @ r.T + p
            lo.append(w.min(axis=0) - s.radius)
            hi.append(w.max(axis=0) + s.radius)
        return np.array(lo), np.array(hi)

    def mass_properties(self, density=1000.0):
        """Exact mass properties (engine.shapes.mass.MassProperties) at a uniform density, in the body
        frame: the sum of the parts' (parts assumed not to overlap)."""
        from .mass import combine, mass_properties
        return combine([(mass_properties(s, density), p, q)
                        for s, p, q in zip(self.shapes, self.positions, self.orientations)])

    def mass_properties_from_mass(self, mass):
        """The same with a total mass (kg) spread at uniform density over the parts."""
        from .mass import _check_positive
        mass = _check_positive(mass, "mass")
        unit = self.mass_properties(density=1.0)
        return unit.scaled(mass / unit.volume)
