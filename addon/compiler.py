"""The engine's compiler seen from Blender: where compiled code is cached, the first-use
warm-up ("preparing the physics engine"), and what the bake says about it.

- numba is never imported here nor at register (``import numba`` costs 0.5-1 s inside
  Blender); the engine imports it at its first kernel call (engine/jit.py).
- register() only hands the engine a function that names the cache folder; it is called at
  that first kernel call, whichever path gets there first (bake, preview, the command line,
  an operator using the engine), so compiled code always lands in the extension's user
  directory (``bpy.utils.extension_path_user``), which survives updates, and never in the
  add-on's own folder, which an update deletes and which may be read-only. A folder that
  cannot be written means compiling without a cache (engine/jit.py), not an error.
- Outside an extension (hullabaloo_cli.py loads the checkout as ``hullabaloo``) numba keeps
  its default: ``NUMBA_CACHE_DIR``, else ``__pycache__`` beside the engine's modules.
"""
import contextlib

import bpy

from ..engine import jit, warmup

CACHE_FOLDER = "numba_cache"
PREPARING = "Preparing the physics engine"


def _package():
    # bl_ext.<repo>.hullabaloo.addon.compiler -> bl_ext.<repo>.hullabaloo
    return __package__.rsplit(".", 1)[0]


def cache_dir(package=None):
    """The extension's cache folder for compiled kernels, or None outside an extension."""
    package = package or _package()
    try:
        where = bpy.utils.extension_path_user(package, path=CACHE_FOLDER, create=False)
    except ValueError:   # not an extension
        return None
    # Blender only prints when it cannot create the folder (a file in its place, no
    # permission); the engine's own check then compiles without a cache.
    with contextlib.suppress(OSError):
        bpy.utils.extension_path_user(package, path=CACHE_FOLDER, create=True)
    return where


def register():
    jit.set_cache_dir(cache_dir)


def unregister():
    if jit.status()[0] is None:   # once the engine runs, its cache is settled for the process
        jit.set_cache_dir(None)


def ready():
    """True when the engine needs no preparing in this process."""
    return warmup.done()


def stages():
    """The warm-up's [(label, function)], or [] when already done."""
    return [] if warmup.done() else warmup.stages()


def prepare(log=print):
    """Warm the engine up now if this process has not (scripts, the command line, the live
    preview: no progress bar, so the console says what the pause is). Returns the seconds
    spent (0.0 when already prepared)."""
    if warmup.done():
        return 0.0
    log(f"Hullabaloo: {PREPARING.lower()} (compiled once per session on first use; the "
        "first time after installing takes longest)...")
    seconds = warmup.warm_up()
    log(f"Hullabaloo: physics engine ready in {seconds:.2f} s: {jit.describe()}")
    return seconds


def uncompiled_note():
    """The bake report's line when the engine runs as plain Python, else None."""
    mode, reason = jit.status()
    if mode != "python":
        return None
    return f"Hullabaloo's engine ran uncompiled, as plain Python (much slower): {reason}"


def engine_info(prepare_seconds=0.0):
    """For ops.LAST and the command line's summary: how the engine ran."""
    mode, reason = jit.status()
    return {"mode": mode, "reason": reason, "describe": jit.describe(),
            "prepare_seconds": float(prepare_seconds)}
