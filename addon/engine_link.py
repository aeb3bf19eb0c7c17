"""Engine symbols used by the add-on, resolved from the package exports or their modules.

The engine is developed alongside the add-on; looking names up here (rather than assuming
every one is re-exported by engine/__init__.py) keeps the add-on working across that work.
"""
import importlib

from .. import engine

_MODULES = {"World": "world", "ConvexHull": "hull", "mass_properties": "mass",
            "Compound": "compound", "TriangleMesh": "trimesh", "NonConvexWorld": "nonconvex"}
_PROBES = {}


def get(name):
    obj = getattr(engine, name, None)
    if obj is None and name in _MODULES:
        try:
            mod = importlib.import_module(f"..engine.{_MODULES[name]}", __package__)
        except ImportError:
            return None
        obj = getattr(mod, name, None)
    return obj


def world_class(nonconvex=False):
    """The World to build: the plain one, or, for compound and mesh shapes, the engine's
    World that handles them (NonConvexWorld while world.py does not do it natively)."""
    if nonconvex:
        cls = get("NonConvexWorld")
        if cls is not None:
            return cls
    return get("World")


def is_convex(shape):
    return getattr(shape, "kind", None) in (0, 1, 2)  # polytope, sphere, capsule


def supports(kind):
    """Whether the engine's World simulates bodies with a "compound" or "mesh" shape: a tiny
    world is built and stepped once (cached), so the add-on follows the engine's progress
    without version checks and never starts a bake the engine would fail in the middle of."""
    if kind in _PROBES:
        return _PROBES[kind]
    ok = False
    try:
        import numpy as np
        World, Hull = world_class(True), get("ConvexHull")
        cube = np.array([[x, y, z] for x in (-.5, .5) for y in (-.5, .5) for z in (-.5, .5)])
        w = World()
        if kind == "compound":
            shape = get("Compound")([(Hull(cube), (0, 0, 0), (1, 0, 0, 0)),
                                     (Hull(cube), (1, 0, 0), (1, 0, 0, 0))])
            w.add_body(engine.Box((5, 5, 0.5)), position=(0, 0, -0.5), kind="static")
            w.add_body(shape, position=(0, 0, 0.45), mass=1.0)
        else:
            tris = np.array([[0, 1, 2], [0, 2, 3]])
            verts = np.array([[-5, -5, 0], [5, -5, 0], [5, 5, 0], [-5, 5, 0]], dtype=float)
            w.add_body(get("TriangleMesh")(verts, tris), kind="static")
            w.add_body(Hull(cube), position=(0, 0, 0.45), mass=1.0)
        for _ in range(3):
            w.step(1.0 / 24.0)
        ok = bool(np.isfinite(w.positions).all() and w.positions[1, 2] > 0.2)
    except Exception:  # any failure means: not supported (yet)
        ok = False
    _PROBES[kind] = ok
    return ok
