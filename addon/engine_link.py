"""Engine symbols used by the add-on, resolved from the package exports or their modules.

The engine is developed alongside the add-on; looking names up here (rather than assuming
every one is re-exported by engine/__init__.py) keeps the add-on working across that work.
"""
import importlib

from .. import engine

_MODULES = {"World": "world", "ConvexHull": "hull", "mass_properties": "mass"}


def get(name):
    obj = getattr(engine, name, None)
    if obj is None and name in _MODULES:
        try:
            mod = importlib.import_module(f"..engine.{_MODULES[name]}", __package__)
        except ImportError:
            return None
        obj = getattr(mod, name, None)
    return obj
