"""Build and validate the installable extension zips, with Blender's own extension tool.

Blender's ``extension build`` / ``extension validate`` commands are implemented by
``bl_pkg/cli/blender_ext.py``, which ships inside Blender (and inside the ``bpy`` wheel) and
runs under plain Python. We run that exact file, so the zip is what Blender itself would build:
the manifest is validated (id, version, licence, tags) and ``[build] paths_exclude_pattern``
decides what goes in.

    python tools/build_extension.py                         # dist/hullabaloo-<v>.zip
    python tools/build_extension.py --platform linux-x64    # dist/hullabaloo-<v>-linux_x64.zip
    python tools/build_extension.py --all-platforms         # the four release zips

Without ``--platform`` the zip carries no wheels and declares no platform: the development
and test build (fast, offline; the test environments have numba installed), which also runs
anywhere numba cannot (the engine then runs uncompiled, slowly, and says so).

With ``--platform`` / ``--all-platforms`` the engine's compiler (numba and llvmlite) is bundled
as wheels, as Blender's manifest ``wheels`` list asks: downloaded from PyPI once into
``build/wheels/`` (ignored by git, never committed), copied with the sources into a staging
folder whose manifest copy lists them, and split per platform by ``extension build
--split-platforms``. The committed manifest stays free of downloaded file names.

Prints the path of every zip built. Needs the ``bpy`` wheel installed (or ``--blender-ext``).
"""
import argparse
import glob
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build")
WHEEL_CACHE = os.path.join(BUILD, "wheels")

# The compiler the engine runs on (engine/core/jit.py); numba pins llvmlite to one minor version.
# One numba serves Blender 4.2-4.5 (Python 3.11, numpy 1.26) and 5.x (Python 3.13, numpy 2.x).
NUMBA = (("numba", "0.68.1"), ("llvmlite", "0.50.0"))
# Intel Macs: numba stopped publishing macOS x86_64 wheels after these; Blender 4.5 LTS
# (Python 3.11) is the last Blender for Intel Macs, so cp311 is all it needs.
NUMBA_INTEL_MAC = (("numba", "0.62.1"), ("llvmlite", "0.45.1"))

# Blender platform -> (pip --platform tag, file name pattern of its wheels, [(Python, pins)]).
# pip also accepts older tags than the one given (manylinux2014 for manylinux_2_28, etc.).
PLATFORMS = {
    "linux-x64": ("manylinux_2_28_x86_64", "*manylinux*_x86_64.whl",
                  (("3.11", NUMBA), ("3.13", NUMBA))),
    "windows-x64": ("win_amd64", "*win_amd64.whl", (("3.11", NUMBA), ("3.13", NUMBA))),
    "macos-arm64": ("macosx_12_0_arm64", "*macosx_*_arm64.whl",
                    (("3.11", NUMBA), ("3.13", NUMBA))),
    "macos-x64": ("macosx_12_0_x86_64", "*macosx_*_x86_64.whl", (("3.11", NUMBA_INTEL_MAC),)),
}

# Never copied into the staging folder (big or generated; the manifest excludes them anyway).
STAGE_SKIP_TOP = {".git", "build", "dist", "out", ".pytest_cache", ".ruff_cache", ".mypy_cache"}


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


# -- wheels ----------------------------------------------------------------------------------
def wheels_for(platform, cache=WHEEL_CACHE, python=sys.executable):
    """Paths of the numba and llvmlite wheels of one Blender platform, every Python it
    needs; downloaded into cache unless already there."""
    pip_platform, pattern, pythons = PLATFORMS[platform]
    out = []
    for py, pins in pythons:
        tag = "cp" + py.replace(".", "")
        for name, version in pins:
            out.append(_cached_or_download(name, version, py, tag, pip_platform, pattern,
                                           cache, python))
    return out


def _cached_or_download(name, version, py, tag, pip_platform, pattern, cache, python):
    def cached():
        hits = sorted(glob.glob(os.path.join(cache, f"{name}-{version}-{tag}-{tag}-{pattern}")))
        return hits[-1] if hits else None
    hit = cached()
    if hit:
        return hit
    os.makedirs(cache, exist_ok=True)
    # Into a folder of its own first: a build running beside this one (the tests of both
    # Blender versions) never sees a half-written wheel in the cache.
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        run = [python, "-m", "pip", "download", "--disable-pip-version-check", "--quiet",
               "--only-binary=:all:", "--no-deps", "--python-version", py,
               "--implementation", "cp", "--abi", tag, "--platform", pip_platform,
               "--dest", tmp, f"{name}=={version}"]
        done = subprocess.run(run, capture_output=True, text=True)
        for f in os.listdir(tmp):
            os.replace(os.path.join(tmp, f), os.path.join(cache, f))
    hit = cached()
    if done.returncode != 0 or not hit:
        raise SystemExit(f"could not download {name}=={version} for Python {py} on "
                         f"{pip_platform}:\n{done.stdout}\n{done.stderr}")
    return hit


# -- staging ---------------------------------------------------------------------------------
def _skip_in_stage(src, names):
    top = os.path.abspath(src) == ROOT
    return [n for n in names
            if (top and (n in STAGE_SKIP_TOP or n.startswith(".venv")))
            or n == "__pycache__" or n.endswith((".pyc", ".zip"))]


def stage(platforms, wheels, where):
    """A copy of the sources in where (a new folder) whose manifest lists the wheels and
    platforms (the committed manifest has neither: a build without wheels must install on
    every platform)."""
    shutil.copytree(ROOT, where, ignore=_skip_in_stage)
    wheel_dir = os.path.join(where, "wheels")
    os.makedirs(wheel_dir)
    for path in wheels:
        dest = os.path.join(wheel_dir, os.path.basename(path))
        try:
            os.link(path, dest)          # no 100 MB copy when the cache is on the same disk
        except OSError:
            shutil.copy2(path, dest)
    manifest = os.path.join(where, "blender_manifest.toml")
    with open(manifest, encoding="utf-8") as f:
        text = f.read()
    with open(manifest, "w", encoding="utf-8") as f:
        f.write(manifest_with_wheels(text, platforms, [os.path.basename(w) for w in wheels]))
    return where


def manifest_with_wheels(text, platforms, wheel_names):
    """The manifest text with top-level ``platforms`` and ``wheels`` keys, placed before the
    first table (``[build]``) so TOML reads them as top-level keys."""
    def toml_list(items):
        return "[\n" + "".join(f'  "{i}",\n' for i in items) + "]\n"
    added = ("# Added by tools/build_extension.py for this build only.\n"
             f"platforms = {toml_list(platforms)}"
             f"wheels = {toml_list('./wheels/' + n for n in wheel_names)}\n")
    m = re.search(r"^\[", text, flags=re.M)
    cut = m.start() if m else len(text)
    return text[:cut] + added + text[cut:]


# -- build -----------------------------------------------------------------------------------
def _blender_ext(python, blender_ext, *args):
    done = subprocess.run([python, blender_ext, *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"extension {args[0]} failed:\n{done.stdout}\n{done.stderr}")
    return done


def build(output_dir, blender_ext=None, python=sys.executable):
    """Build the zip without wheels into output_dir, validate it and return its path."""
    blender_ext = blender_ext or find_blender_ext()
    os.makedirs(output_dir, exist_ok=True)
    before = set(glob.glob(os.path.join(output_dir, "*.zip")))
    _blender_ext(python, blender_ext, "build", "--source-dir", ROOT, "--output-dir",
                 output_dir)
    zips = set(glob.glob(os.path.join(output_dir, "*.zip")))
    fresh = sorted(zips - before) or sorted(zips, key=os.path.getmtime)[-1:]
    path = fresh[-1]
    _blender_ext(python, blender_ext, "validate", path)
    check_contents(path)
    return path


def build_platforms(platforms, output_dir, blender_ext=None, python=sys.executable,
                    cache=WHEEL_CACHE):
    """One zip per Blender platform, each with that platform's numba and llvmlite wheels;
    returns {platform: path}."""
    blender_ext = blender_ext or find_blender_ext()
    wheels = {p: wheels_for(p, cache, python) for p in platforms}
    os.makedirs(BUILD, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="extension-stage-", dir=BUILD)
    try:
        return _build_staged(platforms, wheels, os.path.join(tmp, "src"), output_dir,
                             blender_ext, python)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _build_staged(platforms, wheels, src, output_dir, blender_ext, python):
    stage(list(platforms), sorted({w for ws in wheels.values() for w in ws}), src)
    os.makedirs(output_dir, exist_ok=True)
    _blender_ext(python, blender_ext, "build", "--source-dir", src, "--output-dir",
                 output_dir, "--split-platforms")
    with open(os.path.join(src, "blender_manifest.toml"), "rb") as f:
        version = re.search(rb'^version\s*=\s*"([^"]+)"', f.read(), flags=re.M).group(1)
    out = {}
    for p in platforms:
        path = os.path.join(output_dir, f"hullabaloo-{version.decode()}-{p.replace('-', '_')}"
                            ".zip")
        _blender_ext(python, blender_ext, "validate", path)
        check_contents(path, wheels=[os.path.basename(w) for w in wheels[p]])
        out[p] = path
    return out


def check_contents(path, wheels=()):
    """The zip must hold the add-on and the engine (and exactly the given wheels), and none
    of the development files."""
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
    required = ["blender_manifest.toml", "__init__.py", "addon/__init__.py", "engine/__init__.py",
                *("wheels/" + w for w in wheels)]
    missing = [n for n in required if n not in names]
    banned = [n for n in names if n.split("/")[0] in
              ("tests", "bench", "docs", "tools", ".ci", ".git", "scripts", "requirements", "dist",
               "out", "build") or n.startswith(".venv")
              or "__pycache__" in n
              or (n.startswith("wheels/") and n[len("wheels/"):] not in wheels)]
    if missing or banned:
        raise SystemExit(f"bad zip {path}: missing {missing}, should not contain {banned[:10]}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--output-dir", default=os.path.join(ROOT, "dist"))
    ap.add_argument("--blender-ext", default=None, help="path of Blender's blender_ext.py")
    ap.add_argument("--platform", action="append", choices=sorted(PLATFORMS), default=[],
                    help="build the zip of this Blender platform with its numba wheels "
                    "(repeatable)")
    ap.add_argument("--all-platforms", action="store_true",
                    help="build the zips of every platform: " + ", ".join(PLATFORMS))
    ap.add_argument("--wheel-cache", default=WHEEL_CACHE,
                    help="where downloaded wheels are kept (default build/wheels)")
    args = ap.parse_args(argv)
    platforms = list(PLATFORMS) if args.all_platforms else list(dict.fromkeys(args.platform))
    if not platforms:
        print(build(args.output_dir, args.blender_ext))
        return
    for path in build_platforms(platforms, args.output_dir, args.blender_ext,
                                cache=args.wheel_cache).values():
        print(path)


if __name__ == "__main__":
    main()
