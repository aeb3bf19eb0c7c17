"""A fresh Blender session (the bpy wheel in a new process) that installs an extension zip the
way a user does, bakes a small scene and writes what happened as JSON.

    python fresh_blender.py ZIP OUT.json [--user DIR] [--installed] [--read-only-cache]
                                         [--bakes N]

The tests that need a process of their own run this: the engine's compiler is decided once
per process (engine/core/jit.py), and numba must not have been imported before the extension's
own site-packages is on sys.path. Nothing here is a timed assertion: the seconds are written
for bench/bench_jit_startup.py and the report.
"""
import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time

MODULE = "bl_ext.user_default.hullabaloo"


def parse(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("zip")
    ap.add_argument("out")
    ap.add_argument("--user", default=None, help="Blender user folder (default: a new one)")
    ap.add_argument("--installed", action="store_true",
                    help="the extension is already installed in --user (a restarted "
                    "Blender): only enable it")
    ap.add_argument("--read-only-cache", action="store_true",
                    help="a file where the extension's numba_cache folder should be")
    ap.add_argument("--bakes", type=int, default=2, help="bakes of the scene in this session")
    return ap.parse_args(argv)


def install(zip_path, installed):
    import bpy
    t0 = time.perf_counter()
    if installed:   # as Blender enables it at start-up from the saved preferences
        bpy.ops.preferences.addon_enable(module=MODULE)
    else:
        result = bpy.ops.extensions.package_install_files(
            filepath=zip_path, repo="user_default", enable_on_install=True)
        assert result == {'FINISHED'}, result
    assert MODULE in bpy.context.preferences.addons
    return time.perf_counter() - t0


def scene():
    """A ground, a stack of three boxes and a ball rolling into it, 24 frames."""
    import bpy
    bpy.ops.wm.read_homefile(use_empty=True)
    sc = bpy.context.scene
    sc.frame_start, sc.frame_end = 1, 24
    sc.render.fps, sc.render.fps_base = 24, 1.0

    def add(name, mesh_op, location, **settings):
        mesh_op(location=location)
        obj = bpy.context.active_object
        obj.name = name
        obj.hullabaloo.enabled = True
        for k, v in settings.items():
            setattr(obj.hullabaloo, k, v)
        return obj

    add("Ground", bpy.ops.mesh.primitive_plane_add, (0, 0, 0), body_type='PASSIVE',
        shape='MESH')
    bpy.context.active_object.scale = (10, 10, 1)
    for k in range(3):
        add(f"Box{k}", bpy.ops.mesh.primitive_cube_add, (0, 0, 1.0 + 2.05 * k),
            body_type='DYNAMIC', shape='BOX')
    add("Ball", bpy.ops.mesh.primitive_uv_sphere_add, (-4, 0, 1), body_type='DYNAMIC',
        shape='SPHERE', initial_linear_velocity=(6.0, 0.0, 0.0))
    sc.frame_set(1)
    return sc


def probe_dot(a, b):
    """A kernel of this file's own (compiled through the extension's engine/core/jit.py): shows
    where the compiled code is cached whatever kernels the engine has."""
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * b[i]
    return s


def final_poses(sc):
    out = {}
    sc.frame_set(sc.frame_end)
    for o in sc.objects:
        if o.hullabaloo.bake.baked:
            out[o.name] = [list(r) for r in o.matrix_world]
    return out


def main(argv=None):
    args = parse(sys.argv[1:] if argv is None else argv)
    user = args.user or tempfile.mkdtemp(prefix="hullabaloo_fresh_")
    os.environ["BLENDER_USER_RESOURCES"] = user      # before bpy is imported
    t0 = time.perf_counter()
    import bpy
    t_bpy = time.perf_counter() - t0
    t_install = install(args.zip, args.installed)
    pkg = sys.modules[MODULE]
    from importlib import import_module
    jit = import_module(MODULE + ".engine.core.jit")
    ops = import_module(MODULE + ".addon.ops")
    cache_path = bpy.utils.extension_path_user(MODULE, path="numba_cache")
    if args.read_only_cache:
        os.makedirs(os.path.dirname(cache_path), exist_ok=True)
        with open(cache_path, "w") as f:
            f.write("a file where the cache folder should be\n")
    numba_before_bake = "numba" in sys.modules
    sc = scene()
    bakes = []
    for _ in range(args.bakes):
        if bakes:
            assert bpy.ops.hullabaloo.clear_bake() == {'FINISHED'}
        t = time.perf_counter()
        assert bpy.ops.hullabaloo.bake() == {'FINISHED'}
        bakes.append({"seconds": time.perf_counter() - t, "engine": dict(ops.LAST["engine"]),
                      "simulation_seconds": ops.LAST["summary"]["simulation_seconds"]})
    import numpy as np
    probe = jit.kernel(probe_dot)
    probe_value = probe(np.arange(4.0), np.arange(4.0))
    numba = sys.modules.get("numba")
    site = os.path.join(bpy.utils.user_resource('EXTENSIONS'), ".local", "lib",
                        f"python{sys.version_info[0]}.{sys.version_info[1]}", "site-packages")
    addon_dir = os.path.dirname(pkg.__file__)
    result = {
        "python": sys.version.split()[0],
        "blender": bpy.app.version_string,
        "user": user,
        "addon_dir": addon_dir,
        "extension_site_packages": site,
        "numba_file": getattr(numba, "__file__", None),
        "numba_version": getattr(numba, "__version__", None),
        "numba_before_bake": numba_before_bake,
        "numba_pyc": os.path.exists(importlib.util.cache_from_source(numba.__file__))
        if numba is not None else None,
        "jit_status": list(jit.status()),
        "jit_describe": jit.describe(),
        "jit_cache": jit._STATE["cache"],
        "jit_cache_dir": jit._STATE["cache_dir"] if isinstance(jit._STATE["cache_dir"], str)
        else None,    # uncompiled: the folder is never asked for
        "cache_path": cache_path,
        "cache_path_writable": jit._writable(cache_path),
        "probe_value": probe_value,
        "probe_cache_hits": sum(probe.stats.cache_hits.values())
        if hasattr(probe, "stats") else None,
        "site_packages": sorted(os.listdir(site)) if os.path.isdir(site) else None,
        "sys_path": list(sys.path),
        "kernels": jit.kernel_names(),
        "uncompiled": jit.uncompiled(),
        "cache_files": sorted(os.path.relpath(os.path.join(d, f), cache_path)
                              for d, _, fs in os.walk(cache_path) for f in fs)
        if os.path.isdir(cache_path) else [],
        "addon_dir_pycache": sorted(os.path.join(d, f) for d, _, fs in os.walk(addon_dir)
                                    for f in fs if f.endswith((".nbi", ".nbc"))),
        "seconds": {"import_bpy": t_bpy, "install": t_install},
        "bakes": bakes,
        "final": final_poses(sc),
        "problems": [str(p) for p in ops.LAST["problems"]],
    }
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    # Leave as a killed Blender would: disabling would delete the extension's wheels (the
    # next session of --installed needs them), and Blender-as-a-module crashes at a normal
    # interpreter exit with classes still registered.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
