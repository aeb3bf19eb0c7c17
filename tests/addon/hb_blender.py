"""Test session for the add-on: real Blender (the bpy wheel), the real extension zip.

Importing this module (once per process):
1. points Blender's user directory at a fresh temp folder (BLENDER_USER_RESOURCES, which the
   wheel honours; it must be set before bpy is first imported), so nothing of the developer's
   own Blender set-up is read or written;
2. builds the extension zip with Blender's own build + validate (tools/build_extension.py);
3. installs it with bpy.ops.extensions.package_install_files into the sandboxed user
   repository and enables it, exactly as a user dropping the zip on Blender would.

Tests then reach the add-on's modules through the installed package (``pkg.addon...``).
"""
import os
import shutil
import sys
import tempfile

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULE = "bl_ext.user_default.hullabaloo"

if "bpy" not in sys.modules:
    _USER = tempfile.mkdtemp(prefix="hullabaloo_user_")
    os.environ["BLENDER_USER_RESOURCES"] = _USER
else:  # bpy was imported before us: we cannot sandbox any more, but can still install
    _USER = None

bpy = pytest.importorskip("bpy")

_SESSION = {}


def session():
    """Install (once) and return the session dict: zip, user_dir, pkg (the installed
    package module)."""
    if _SESSION:
        return _SESSION
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    try:
        import build_extension
    finally:
        sys.path.pop(0)
    user = _USER or tempfile.mkdtemp(prefix="hullabaloo_user_")
    zip_path = build_extension.build(os.path.join(user, "dist"))
    repos = [r.module for r in bpy.context.preferences.extensions.repos]
    assert "user_default" in repos, repos
    result = bpy.ops.extensions.package_install_files(
        filepath=zip_path, repo="user_default", enable_on_install=True)
    assert result == {'FINISHED'}, result
    assert MODULE in bpy.context.preferences.addons, list(bpy.context.preferences.addons.keys())
    _SESSION.update(zip=zip_path, user_dir=user, pkg=sys.modules[MODULE])
    return _SESSION


def cli_env(user_dir):
    """The environment of a headless command run as a subprocess (hullabaloo_cli.py, which
    loads this checkout): a fresh Blender user folder, and the engine's compiled kernels
    cached in one folder per Python for every such run, as a user's repeated runs share the
    extension's cache (compiling the engine cold takes about a minute; the cache's placement
    is tested by test_addon_compiler and test_addon_wheels, which leave NUMBA_CACHE_DIR out)."""
    cache = os.path.join(ROOT, "build", f"test-numba-cache-py{sys.version_info[0]}{sys.version_info[1]}")
    return dict(os.environ, BLENDER_USER_RESOURCES=str(user_dir), NUMBA_CACHE_DIR=cache)


def pkg():
    return session()["pkg"]


def addon_dir():
    return os.path.dirname(pkg().__file__)


def empty_scene(frame_end=48, fps=24):
    """A new empty file (the add-on stays enabled), with a frame range."""
    session()
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frame_end
    scene.render.fps, scene.render.fps_base = fps, 1.0
    scene.frame_set(1)
    return scene


def box_mesh(name, size=(2.0, 2.0, 2.0), offset=(0.0, 0.0, 0.0)):
    hx, hy, hz = (0.5 * s for s in size)
    ox, oy, oz = offset
    v = [(ox + sx * hx, oy + sy * hy, oz + sz * hz)
         for sz in (-1, 1) for sy in (-1, 1) for sx in (-1, 1)]
    f = [(0, 2, 3, 1), (4, 5, 7, 6), (0, 1, 5, 4), (2, 6, 7, 3), (0, 4, 6, 2), (1, 3, 7, 5)]
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(v, [], f)
    mesh.update()
    return mesh


def add_object(name, data=None, location=(0, 0, 0), body_type="DYNAMIC", shape="BOX",
               enabled=True, **settings):
    scene = bpy.context.scene
    obj = bpy.data.objects.new(name, data)
    scene.collection.objects.link(obj)
    obj.location = location
    s = obj.hullabaloo
    s.enabled = enabled
    s.body_type = body_type
    s.shape = shape
    for k, v in settings.items():
        setattr(s, k, v)
    return obj


def add_box(name, size=(2.0, 2.0, 2.0), **kw):
    return add_object(name, box_mesh(name, size), **kw)


def matrix(obj):
    return np.array(obj.matrix_world, dtype=np.float64)


def fcurves(obj):
    return pkg().addon.animation.fcurve_collection(obj)


def keys_of(obj):
    """{(data_path, index): attribute arrays} of every F-curve of the object."""
    fcs = fcurves(obj)
    if fcs is None:
        return {}
    read = pkg().addon.animation.read_keys
    return {(fc.data_path, fc.array_index): read(fc) for fc in fcs}


def snapshot(scene):
    """Everything a bake may touch: frame, transforms, actions and every key attribute."""
    bpy.context.view_layer.update()
    objs = {}
    for o in scene.objects:
        ad = o.animation_data
        objs[o.name] = dict(
            matrix=np.array(o.matrix_world), location=tuple(o.location),
            rotation_mode=o.rotation_mode, rotation_euler=tuple(o.rotation_euler),
            rotation_quaternion=tuple(o.rotation_quaternion), scale=tuple(o.scale),
            action=(ad.action.name if ad is not None and ad.action is not None else None),
            has_ad=ad is not None, keys=keys_of(o), baked=o.hullabaloo.bake.baked)
    return dict(frame=scene.frame_current, actions=sorted(a.name for a in bpy.data.actions),
                objects=objs)


def assert_same(a, b):
    assert a["frame"] == b["frame"]
    assert a["actions"] == b["actions"]
    assert a["objects"].keys() == b["objects"].keys()
    for name, x in a["objects"].items():
        y = b["objects"][name]
        for k in x:
            if k == "keys":
                assert x[k].keys() == y[k].keys(), name
                for ch in x[k]:
                    for attr in x[k][ch]:
                        np.testing.assert_array_equal(x[k][ch][attr], y[k][ch][attr],
                                                      err_msg=f"{name} {ch} {attr}")
            elif k == "matrix":
                np.testing.assert_allclose(x[k], y[k], atol=1e-6, err_msg=name)
            else:
                assert x[k] == y[k], (name, k, x[k], y[k])


def engine():
    """The engine package, imported from the installed extension (the same code the
    add-on runs)."""
    return pkg().engine


def engine_world(scene):
    """A World with the scene's settings, built directly (the test's independent run)."""
    s = scene.hullabaloo
    import importlib
    World = getattr(engine(), "World", None) or \
        importlib.import_module(MODULE + ".engine.world.world").World
    return World(gravity=tuple(scene.gravity) if scene.use_gravity else (0, 0, 0),
                 substeps=s.substeps or None, iterations=s.iterations,
                 sleeping=s.use_sleeping, ccd=s.use_ccd)


def bake(**kw):
    """bpy.ops.hullabaloo.bake(), returning the add-on's summary of it."""
    assert bpy.ops.hullabaloo.bake(**kw) == {'FINISHED'}
    return pkg().addon.ops.LAST


def cleanup():
    if _USER and os.path.isdir(_USER):
        shutil.rmtree(_USER, ignore_errors=True)
