"""Build and validate the installable extension zip, with Blender's own extension tool.

Blender's ``extension build`` / ``extension validate`` commands are implemented by
``bl_pkg/cli/blender_ext.py``, which ships inside Blender (and inside the ``bpy`` wheel) and
runs under plain Python. We run that exact file, so the zip is what Blender itself would build:
the manifest is validated (id, version, licence, tags) and ``[build] paths_exclude_pattern``
decides what goes in.

    python tools/build_extension.py [--output-dir DIR] [--blender-ext PATH]

Prints the path of the zip. Needs the ``bpy`` wheel installed (or ``--blender-ext``).
"""
import argparse
import glob
import importlib.util
import os
import subprocess
import sys
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def find_blender_ext():
    """Path of blender_ext.py inside the installed bpy wheel, without importing bpy."""
    spec = importlib.util.find_spec("bpy")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("bpy is not installed: pip install bpy, or pass --blender-ext PATH "
                         "(Blender's scripts/addons_core/bl_pkg/cli/blender_ext.py)")
    base = next(iter(spec.submodule_search_locations))
    hits = sorted(glob.glob(os.path.join(base, "*", "scripts", "addons_core", "bl_pkg", "cli",
                                         "blender_ext.py")))
    if not hits:
        raise SystemExit(f"blender_ext.py not found under {base}")
    return hits[-1]


def build(output_dir, blender_ext=None, python=sys.executable):
    """Build the zip into output_dir, validate it and return its path."""
    blender_ext = blender_ext or find_blender_ext()
    os.makedirs(output_dir, exist_ok=True)
    before = set(glob.glob(os.path.join(output_dir, "*.zip")))
    run = [python, blender_ext, "build", "--source-dir", ROOT, "--output-dir", output_dir]
    done = subprocess.run(run, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"extension build failed:\n{done.stdout}\n{done.stderr}")
    zips = set(glob.glob(os.path.join(output_dir, "*.zip")))
    fresh = sorted(zips - before) or sorted(zips, key=os.path.getmtime)[-1:]
    path = fresh[-1]
    done = subprocess.run([python, blender_ext, "validate", path], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"extension validate failed for {path}:\n{done.stdout}\n{done.stderr}")
    check_contents(path)
    return path


def check_contents(path):
    """The zip must hold the add-on and the engine, and none of the development files."""
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
    required = ["blender_manifest.toml", "__init__.py", "addon/__init__.py", "engine/__init__.py"]
    missing = [n for n in required if n not in names]
    banned = [n for n in names if n.split("/")[0] in
              ("tests", "bench", "docs", "tools", ".ci", ".git", "scripts", "requirements", "dist",
               "out", "build") or n.startswith(".venv")
              or "__pycache__" in n]
    if missing or banned:
        raise SystemExit(f"bad zip {path}: missing {missing}, should not contain {banned[:10]}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--output-dir", default=os.path.join(ROOT, "dist"))
    ap.add_argument("--blender-ext", default=None, help="path of Blender's blender_ext.py")
    args = ap.parse_args(argv)
    print(build(args.output_dir, args.blender_ext))


if __name__ == "__main__":
    main()
