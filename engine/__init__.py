"""Hullabaloo's rigid-body engine: pure numpy, no Blender imports.

Relative imports only: the extension loads this package as ``bl_ext.<repo>.hullabaloo.engine``.
"""
from .errors import EngineError, DegenerateShapeError
from .shapes import Shape, Polytope, Box, Sphere, Capsule
from .shape_table import ShapeTable

__all__ = ["EngineError", "DegenerateShapeError", "Shape", "Polytope", "Box", "Sphere",
           "Capsule", "ShapeTable"]
