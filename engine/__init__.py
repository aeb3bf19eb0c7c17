"""Hullabaloo's rigid-body engine: pure numpy, no Blender imports.

Relative imports only: the extension loads this package as ``bl_ext.<repo>.hullabaloo.engine``.

Phases, as in Box2D v3: ``broadphase`` (grid hash / sweep) -> ``narrowphase`` (SAT + clipping,
GJK/EPA for round shapes, ``nonconvex`` for compounds and triangle meshes) -> ``solver``
(soft-step, graph-coloured batches) -> ``integrate``; ``world`` runs the step.
"""
from .broadphase import Broadphase, find_pairs
from .compound import Compound
from .curved import Cone, Cylinder
from .decompose import decompose
from .epa import epa
from .errors import DegenerateShapeError, EngineError
from .fields import FieldKind, FieldTable, ForceField, field_forces
from .gjk import gjk, gjk_intersect
from .graph import colour_constraints, islands
from .hull import ConvexHull
from .kinds import BodyKind, ShapeKind
from .mass import MassProperties, combine, mass_properties, mass_properties_from_mass
from .narrowphase import collide
from .queries import contact_manifold, distance, intersect
from .record import StepRecord
from .settings import WorldSettings
from .shape_table import ShapeTable
from .shapes import Box, Capsule, Polytope, Shape, Sphere
from .toi import toi
from .trimesh import TriangleMesh
from .world import World

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
