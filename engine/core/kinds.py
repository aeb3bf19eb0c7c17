"""Shape kinds and body kinds, defined once for the engine, the add-on and the overlays.

Both are ``enum.IntEnum``: they compare equal to the int8/int64 codes stored in the engine's
arrays (``ShapeTable.kind``, ``World.kinds``), so ``kinds == BodyKind.DYNAMIC`` works on arrays.
"""
import enum

from .errors import EngineError


class ShapeKind(enum.IntEnum):
    """What a shape id in a ShapeTable is."""
    POLYTOPE = 0        # Box, ConvexHull: faces, edges, planes
    SPHERE = 1          # a point core swollen by the radius
    CAPSULE = 2         # a Z segment core swollen by the radius
    COMPOUND = 3        # convex parts in a body frame (engine.shapes.compound)
    TRIANGLE_MESH = 4   # static or kinematic scenery (engine.shapes.trimesh)
    CYLINDER = 5        # exact cylinder about Z (engine.shapes.curved)
    CONE = 6            # exact cone about Z, apex up (engine.shapes.curved)

    @property
    def label(self):
        return self.name.lower()


class BodyKind(enum.IntEnum):
    """How a body moves: by the solver, never, or along targets set by the caller."""
    DYNAMIC = 0
    STATIC = 1
    KINEMATIC = 2

    @classmethod
    def parse(cls, value):
        """A BodyKind from the enum itself or its lower-case name ('dynamic', ...)."""
        if isinstance(value, cls):
            return value
        if isinstance(value, str) and value.upper() in cls.__members__ and value == value.lower():
            return cls[value.upper()]
        names = ", ".join(repr(k.name.lower()) for k in cls)
        raise EngineError(f"unknown body kind {value!r}; use {names} or engine.BodyKind")
