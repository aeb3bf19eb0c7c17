"""The engine's compiler seen from Blender: where compiled code is cached, the first-use
warm-up ("preparing the physics engine"), and what the bake says about it.

- numba is never imported here nor at register (``import numba`` costs 0.5-1 s inside
  Blender); the engine imports it at its first kernel call (engine/core/jit.py).
- register() only hands the engine a function that names the cache folder; it is called at
  that first kernel call, whichever path gets there first (bake, preview, the command line,
  an operator using the engine), so compiled code always lands in the extension's user
  directory (``bpy.utils.extension_path_user``), which survives updates, and never in the
  add-on's own folder, which an update deletes and which may be read-only. A folder that
  cannot be written means compiling without a cache (engine/core/jit.py), not an error.
- The interactive bake warms the engine up in a thread of its own (start / progress) while
  its modal timer shows the stage and the seconds in the status bar: compiling the whole
  engine from scratch takes tens of seconds, and Blender stays responsive (Esc cancels the
  bake; the compiling finishes in the background and serves the next bake). Scripts, the
  command line and the live preview prepare in the main thread and say so in the console.
- Blender writes no bytecode (``sys.dont_write_bytecode``), and its wheel install does not
  byte-compile as pip does, so the bundled numba (about 700 modules) would be compiled from
  source at every session's first bake: ``import numba`` from the extension's site-packages
  took 1.3-1.7 s (4.2-4.6 s on a loaded machine), against 0.35 s from .pyc files (Blender
  4.2 and 5.2, Linux). The first preparing after an install byte-compiles numba and
  llvmlite once (``byte_compile_compiler``: about 3 s of CPU).
- Outside an extension (hullabaloo_cli.py loads the checkout as ``hullabaloo``) numba keeps
  its default: ``NUMBA_CACHE_DIR``, else ``__pycache__`` beside the engine's modules.
"""
import compileall
import importlib.util
import os
import threading
import time

import bpy

from ..engine.core import jit
from ..engine.world import warmup

CACHE_FOLDER = "numba_cache"
PREPARING = "Preparing the physics engine"

# The warm-up thread of this process (start / progress).
_THREAD = {"thread": None, "stage": "", "error": None, "start": 0.0}


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
    bpy.utils.extension_path_user(package, path=CACHE_FOLDER, create=True)
    return where


def register():
    jit.set_cache_dir(cache_dir)


def unregister():
    if jit.status()[0] is None:   # once the engine runs, its cache is settled for the process
        jit.set_cache_dir(None)


def byte_compile_compiler():
    """Write the .pyc files of numba and llvmlite where they lack them and their folder can
    be written (what pip does at install). Does not import them. Returns the packages
    compiled."""
    if jit.status()[0] is not None or os.environ.get("HB_NO_JIT", "") not in ("", "0"):
        return []
    done = []
    for name in ("llvmlite", "numba"):
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.origin or not spec.submodule_search_locations:
            continue
        if os.path.exists(importlib.util.cache_from_source(spec.origin)):
            continue    # byte-compiled already (an earlier session, or pip)
        folder = os.path.dirname(spec.origin)
        if os.access(folder, os.W_OK):
            compileall.compile_dir(folder, quiet=2, workers=1)
            done.append(name)
    return done


def _warm_up(log=None):
    """The engine's warm-up, numba byte-compiled first if it needs it."""
    if byte_compile_compiler() and log is not None:
        log("Hullabaloo: numba byte-compiled once (Blender writes no .pyc files)")
    return warmup.warm_up()


def ready():
    """True when the engine needs no preparing in this process."""
    return warmup.done()


def start(log=print):
    """Warm the engine up in a thread of its own, unless done or already under way."""
    t = _THREAD["thread"]
    if warmup.done() or (t is not None and t.is_alive()):
        return
    log(f"Hullabaloo: {PREPARING.lower()} (compiled once per session on first use; the "
        "first time after installing takes longest)...")
    if jit.status()[0] is None:   # Blender's API from the main thread only: name it here
        jit.set_cache_dir(cache_dir())

    def run():
        try:
            _THREAD["stage"] = "byte-compiling numba"
            byte_compile_compiler()
            warmup.warm_up(log=lambda label: _THREAD.update(stage=label))
        except Exception as exc:   # handed to the bake that waits for it (progress)
            _THREAD["error"] = exc
    _THREAD.update(stage="", error=None, start=time.perf_counter())
    _THREAD["thread"] = threading.Thread(target=run, name="hullabaloo-prepare", daemon=True)
    _THREAD["thread"].start()


def progress():
    """(finished, error, stage label, seconds so far) of the warm-up thread. An error is
    handed out once; the next bake starts over."""
    t = _THREAD["thread"]
    seconds = time.perf_counter() - _THREAD["start"]
    if t is None:
        return warmup.done(), None, "", 0.0
    if t.is_alive():
        return False, None, _THREAD["stage"], seconds
    error, _THREAD["error"], _THREAD["thread"] = _THREAD["error"], None, None
    return error is None, error, _THREAD["stage"], seconds


def prepare(log=print):
    """Warm the engine up now if this process has not (scripts, the command line, the live
    preview: no progress bar, so the console says what the pause is); waits for a warm-up
    thread under way. Returns the seconds spent (0.0 when already prepared); raises what
    the warm-up raised."""
    t0 = time.perf_counter()
    t = _THREAD["thread"]
    if t is not None:
        t.join()
        error = progress()[1]
        if error is not None:
            raise error
    if warmup.done():
        return time.perf_counter() - t0 if t is not None else 0.0
    log(f"Hullabaloo: {PREPARING.lower()} (compiled once per session on first use; the "
        "first time after installing takes longest)...")
    _warm_up(log)
    seconds = time.perf_counter() - t0
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
