"""Hullabaloo from plain Python with the ``bpy`` wheel (Blender as a Python module).

    python hullabaloo_cli.py bake [SCENE.blend] --out OUT_DIR [--frames N] [--set PATH=VALUE]
                                  [--seed K] [--preview K] ...
    python hullabaloo_cli.py wedge SCENE.blend --out DIR --vary PATH=V1,V2 [--seeds K]
                                   [--workers N] ...
    python hullabaloo_cli.py settle SCENE.blend --objects NAME ... [--onto NAME] [--out FILE]

Loads this checkout as the package ``hullabaloo`` (so the add-on's relative imports work as
they do inside Blender), registers it, and runs the same command as
``blender -b --command hullabaloo ...``. See addon/cli.py for the options.
"""
import atexit
import importlib.util
import os
import sys

ROOT = os.path.dirname(os.path.abspath(__file__))


def load_addon(name="hullabaloo"):
    """Import the repository root as a package and register the add-on; returns it."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(ROOT, "__init__.py"), submodule_search_locations=[ROOT])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    module.register()
    # Blender-as-a-module crashes at interpreter exit if Python classes are still registered
    # (Blender itself unregisters add-ons on quit); do what Blender does.
    atexit.register(module.unregister)
    return module


def main(argv=None):
    try:
        import bpy  # noqa: F401  (Blender as a module: pip install bpy)
    except ImportError:
        sys.exit("hullabaloo: this command needs the bpy module (pip install bpy==4.2.* with "
                 "Python 3.11, or bpy 5.x with Python 3.13); inside Blender use "
                 "`blender -b --command hullabaloo ...`")
    load_addon()
    from hullabaloo.addon import cli
    return cli.blender_command(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
