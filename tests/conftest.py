"""Test set-up.

- The repo root (for ``import engine``) and tests/ (for ``import oracle``) on sys.path.
- The repo root as the package ``hullabaloo``, as Blender loads the extension, so the add-on's
  Blender-free modules (``hullabaloo.addon.transforms``, ``.channels``, ``.overlay.geometry``)
  import in plain Python with their relative imports of the engine. ``hullabaloo.engine`` is
  made the very same module objects as the top-level ``engine`` (one copy of every class), so
  a test may mix ``engine.World`` with those modules. Nothing is registered with Blender.
"""
import importlib
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for path in (ROOT, HERE):
    if path not in sys.path:
        sys.path.insert(0, path)


def _package_root():
    if "hullabaloo" in sys.modules:
        return
    spec = importlib.util.spec_from_file_location(
        "hullabaloo", os.path.join(ROOT, "__init__.py"), submodule_search_locations=[ROOT])
    pkg = importlib.util.module_from_spec(spec)
    sys.modules["hullabaloo"] = pkg
    spec.loader.exec_module(pkg)
    engine = importlib.import_module("engine")
    for name, mod in list(sys.modules.items()):
        if name == "engine" or name.startswith("engine."):
            sys.modules["hullabaloo." + name] = mod
    pkg.engine = engine


_package_root()
