"""Hullabaloo's rigid-body engine: pure numpy, no Blender imports.

Relative imports only: the extension loads this package as ``bl_ext.<repo>.hullabaloo.engine``.

Phases, as in Box2D v3: ``broadphase`` (grid hash / sweep) -> ``narrowphase`` (SAT + clipping,
GJK/EPA for round shapes, ``nonconvex`` for compounds and triangle meshes) -> ``solver``
(soft-step, graph-coloured batches) -> ``integrate``; ``world`` runs the step.
"""
from .errors import EngineError, DegenerateShapeError
from .kinds import BodyKind, ShapeKind
from .settings import WorldSettings
from .record import StepRecord
from .shapes import Shape, Polytope, Box, Sphere, Capsule
from .shape_table import ShapeTable
from .hull import ConvexHull
from .mass import MassProperties, mass_properties, mass_properties_from_mass, combine
from .compound import Compound
from .trimesh import TriangleMesh
from .decompose import decompose
from .queries import distance, intersect, contact_manifold
from .gjk import gjk, gjk_intersect
from .epa import epa
from .toi import toi
from .narrowphase import collide
from .broadphase import find_pairs, Broadphase
from .graph import colour_constraints, islands
from .world import World

__all__ = [
    "EngineError", "DegenerateShapeError", "BodyKind", "ShapeKind", "WorldSettings", "StepRecord",
    "Shape", "Polytope", "Box", "Sphere", "Capsule", "ConvexHull", "Compound", "TriangleMesh",
    "ShapeTable", "decompose",
    "MassProperties", "mass_properties", "mass_properties_from_mass", "combine",
    "distance", "intersect", "contact_manifold",
    "gjk", "gjk_intersect", "epa", "toi", "collide",
    "find_pairs", "Broadphase", "colour_constraints", "islands",
    "World",
]
