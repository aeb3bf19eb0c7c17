"""Hullabaloo's rigid-body engine: numpy and compiled kernels, no Blender imports.

Relative imports only: the extension loads this package as ``bl_ext.<repo>.hullabaloo.engine``.

Packages by phase (engine/README.md): ``core`` (foundations, the compiler) -> ``shapes``
(building shapes, offline) -> ``collision`` (broadphase, narrowphase, pair table) ->
``dynamics`` (contact solver, joints, integration) -> ``features`` (fields, fracture, glue)
-> ``world`` (the API and the step). This module re-exports the public API.
"""
from .collision.broadphase import Broadphase, find_pairs
from .collision.epa import epa
from .collision.gjk import gjk, gjk_intersect
from .collision.narrowphase import collide
from .collision.queries import contact_manifold, distance, intersect
from .collision.shape_table import ShapeTable
from .collision.toi import toi
from .core.errors import DegenerateShapeError, EngineError
from .core.kinds import BodyKind, ShapeKind
from .dynamics.graph import colour_constraints, islands
from .features.fields import FieldKind, FieldTable, ForceField, field_forces
from .shapes.compound import Compound
from .shapes.curved import Cone, Cylinder
from .shapes.decompose import decompose
from .shapes.hull import ConvexHull
from .shapes.mass import MassProperties, combine, mass_properties, mass_properties_from_mass
from .shapes.primitives import Box, Capsule, Polytope, Shape, Sphere
from .shapes.trimesh import TriangleMesh
from .world.record import StepRecord
from .world.settings import WorldSettings
from .world.world import World

__all__ = [
    "BodyKind",
    "Box",
    "Broadphase",
    "Capsule",
    "Compound",
    "Cone",
    "ConvexHull",
    "Cylinder",
    "DegenerateShapeError",
    "EngineError",
    "FieldKind",
    "FieldTable",
    "ForceField",
    "MassProperties",
    "Polytope",
    "Shape",
    "ShapeKind",
    "ShapeTable",
    "Sphere",
    "StepRecord",
    "TriangleMesh",
    "World",
    "WorldSettings",
    "collide",
    "colour_constraints",
    "combine",
    "contact_manifold",
    "decompose",
    "distance",
    "epa",
    "field_forces",
    "find_pairs",
    "gjk",
    "gjk_intersect",
    "intersect",
    "islands",
    "mass_properties",
    "mass_properties_from_mass",
    "toi",
]
