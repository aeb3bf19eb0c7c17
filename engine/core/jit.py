"""The one home of the compiler: how the engine's kernels are compiled, and the fallback.

Every kernel in the engine is a plain Python function over flat numpy arrays and scalars,
decorated with :func:`kernel`. Nothing else in the engine imports numba.

- numba is imported lazily, at the first call of any kernel, never at import: the add-on
  imports the engine when Blender registers it, and ``import numba`` inside Blender costs
  0.5-1 s (../shared/numba-in-blender.md).
- At that first call every kernel registered so far becomes a numba dispatcher, and the
  module globals that held its stub now hold the dispatcher, so a kernel calling another
  kernel is compiled as one native call (numba resolves globals when it compiles).
- Options are fixed here for all kernels: ``nopython``, ``fastmath=False`` (bit-exact IEEE
  arithmetic: the same scene bakes to the same numbers in any process), ``error_model=
  "numpy"`` (a division by zero gives inf/nan as numpy does, which the step's guards read;
  no Python exception from inside a kernel), ``cache=True`` where a cache directory is
  writable, ``nogil=True``, no C-callable wrapper; a kernel calling a kernel with a constant
  is typed by the constant's type, not its value (one compile, not one per constant).
- Where numba cannot be imported (a platform without wheels), or ``HB_NO_JIT=1`` is set,
  the same functions run as plain Python: correct and slow. :func:`status` says which.
- The cache: ``NUMBA_CACHE_DIR`` if set, else :func:`set_cache_dir` (the add-on points it at
  the extension's user directory before the first step). A cache that cannot be written
  falls back to compiling without one, with no error.
- numba checks a cached kernel against its own file only, yet the cached machine code holds
  every kernel it calls and every constant it read, from other files too: an engine update
  that changed a callee (or a developer's edit) would run the old callee's code. So every
  engine kernel's cache entry is also stamped with a digest of the engine's kernel sources
  (:func:`engine_stamp`): any change there compiles the engine's kernels again.
"""
import hashlib
import os
import sys
import threading
from typing import Any

_KERNELS: list = []     # every _Stub made by kernel(), in definition order
_STATE: dict[str, Any] = {"mode": None, "numba": None, "reason": "", "cache_dir": None,
                          "cache": True, "stamp": None}
# Activation happens once: the add-on may warm the engine up in a thread of its own while
# Blender's main thread calls a kernel too (addon/compiler.py).
_LOCK = threading.RLock()


def set_cache_dir(path):
    """Where compiled kernels are cached (call before the first step; process-wide).

    path: a folder, None (numba's default), or a function returning either, called once
    when the first kernel runs (the add-on passes one at register, so that nothing is created
    before the engine is used and every path into the engine caches in the same place)."""
    _STATE["cache_dir"] = path if path is None or callable(path) else str(path)


def _writable(path):
    try:
        os.makedirs(path, exist_ok=True)
        probe = os.path.join(path, ".hb_write_probe")
        with open(probe, "w") as f:
            f.write("ok")
        os.remove(probe)
        return True
    except OSError:
        return False


def engine_stamp():
    """A digest of the source files whose code or constants the engine's kernels hold: every
    engine module but the step's orchestration (engine/world, unless a module there defines
    a kernel). Read from disk, so every process finds the same digest whatever it imported."""
    if _STATE.get("stamp") is None:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        digest = hashlib.sha256()
        for folder, dirs, files in sorted(os.walk(root)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(f for f in files if f.endswith(".py")):
                with open(os.path.join(folder, name), "rb") as f:
                    text = f.read()
                rel = os.path.relpath(os.path.join(folder, name), root).replace(os.sep, "/")
                if rel.startswith("world/") and b"@kernel" not in text:
                    continue
                digest.update(rel.encode() + b"\0" + text + b"\0")
        _STATE["stamp"] = digest.hexdigest()[:20]
    return _STATE["stamp"]


def _stamp_with_engine(dispatcher):
    """Make a compiled engine kernel's cache entry depend on engine_stamp() as well as its own
    file (numba's index keeps a stamp and drops entries whose stamp differs). Where numba's
    cache is built otherwise (another numba version), its own per-file check stays."""
    cache_file = getattr(getattr(dispatcher, "_cache", None), "_cache_file", None)
    if cache_file is not None and hasattr(cache_file, "_source_stamp"):
        cache_file._source_stamp = (cache_file._source_stamp, engine_stamp())


def _compile_for_plain_types(dispatcher):
    """A kernel called from a kernel with a constant (``epa_scratch(96)``, a flag ``True``)
    is compiled for that literal value by default: one more copy of it and of all it calls
    for each constant (signed_distance and its GJK/EPA were compiled three times, once per
    caller's flag). Here the call is typed by the constant's plain type (int64, bool)
    instead, so each kernel compiles once per argument layout. A kernel that needs the
    value at compile time (an index into a heterogeneous tuple) opts out with
    ``@kernel(literal_arguments=True)``."""
    from numba.core import types  # type: ignore[import-not-found]  # (imported by now)
    typed_by_value = dispatcher.get_call_template

    def get_call_template(args, kws):
        return typed_by_value(tuple(types.unliteral(a) for a in args),
                              {k: types.unliteral(v) for k, v in kws.items()})
    dispatcher.get_call_template = get_call_template


def _import_numba():
    if os.environ.get("HB_NO_JIT", "") not in ("", "0"):
        return None, "HB_NO_JIT is set"
    try:
        import numba  # type: ignore[import-not-found]  # (the dev venv has no numba)
    except Exception as exc:   # ImportError, or a broken llvmlite (OSError)
        return None, f"numba could not be imported ({type(exc).__name__}: {exc})"
    return numba, ""


def _configure_cache(numba):
    """Cache location, falling back to no cache when nothing is writable."""
    if callable(_STATE["cache_dir"]):
        found = _STATE["cache_dir"]()
        _STATE["cache_dir"] = None if found is None else str(found)
    path = os.environ.get("NUMBA_CACHE_DIR") or _STATE["cache_dir"]
    if path:
        if _writable(path):
            numba.config.CACHE_DIR = path
            _STATE["cache"] = True
        else:
            _STATE["cache"] = False
        return
    # numba's default is __pycache__ beside each module, whatever name the engine was
    # imported under; but a cached kernel names its module (numba pickles it), so a process
    # importing the engine as ``engine`` (the tests) failed to load what one importing it
    # as ``hullabaloo.engine`` (hullabaloo_cli.py, the demo) had saved: ModuleNotFoundError
    # at the first step. Any other name than the plain ``engine`` caches in a folder of its
    # own beside the engine's modules.
    package = __name__.rsplit(".core.jit", 1)[0]
    if package != "engine":
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        path = os.path.join(root, "__pycache__", "numba-" + package)
        if _writable(path):
            numba.config.CACHE_DIR = path
            _STATE["cache_dir"] = path
            _STATE["cache"] = True
            return
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "__pycache__")
    _STATE["cache"] = _writable(here) or _writable(os.path.join(
        os.path.expanduser("~"), ".cache", "numba"))


def activate():
    """Compile mode decided once: 'numba' or 'python'. Returns the mode."""
    if _STATE["mode"] is not None:
        return _STATE["mode"]
    with _LOCK:
        if _STATE["mode"] is None:
            _activate()
    return _STATE["mode"]


def _activate():
    numba, reason = _import_numba()
    if numba is not None:
        _configure_cache(numba)
    _STATE.update(numba=numba, reason=reason)
    for stub in list(_KERNELS):
        stub._bind()
    _swap_globals()
    # Last: another thread reading a mode (without the lock) finds every kernel bound.
    _STATE["mode"] = "python" if numba is None else "numba"


def _swap_globals(replace=None):
    """Where a module holds a kernel's stub, it now holds the compiled function (engine
    modules, and any other module that defines kernels). replace: {id(old): new} for
    fall_back, which swaps compiled functions for the plain ones."""
    defining = {stub.__module__ for stub in _KERNELS}
    for name, mod in list(sys.modules.items()):
        d = getattr(mod, "__dict__", None)
        if not d or not (_is_engine_module(name) or name in defining):
            continue
        for key, value in list(d.items()):
            if replace is not None:
                if id(value) in replace:
                    d[key] = replace[id(value)]
            elif isinstance(value, _Stub) and value._impl is not None:
                d[key] = value._impl


def numba_version():
    """The version of the numba in use, or None (uncompiled)."""
    return None if _STATE["numba"] is None else _STATE["numba"].__version__


def is_compile_error(exc):
    """True for an error raised by numba or llvmlite, not by the engine's own code."""
    return type(exc).__module__.split(".")[0] in ("numba", "llvmlite")


def fall_back(reason):
    """Run every kernel as plain Python from now on (numba imported but failed to compile
    one: a numba older than the one the engine was written for, such as the last one for
    Intel Macs). status() then says 'python' and why."""
    with _LOCK:
        if _STATE["mode"] != "numba":
            return
        replace = {}
        for stub in _KERNELS:
            if stub._impl is not None and stub._impl is not stub.py_func:
                replace[id(stub._impl)] = stub.py_func
            stub._impl = stub.py_func
        _swap_globals(replace)
        _STATE.update(mode="python", numba=None, reason=reason)


def _is_engine_module(name):
    parts = name.split(".")
    return "engine" in parts


def status():
    """'numba' (compiled), 'python' (the fallback) or None (no kernel called yet), with the
    reason for the fallback."""
    return _STATE["mode"], _STATE["reason"]


def is_compiled():
    return activate() == "numba"


def describe():
    """One line for reports and logs: how the engine runs, and why if uncompiled."""
    mode, reason = _STATE["mode"], _STATE["reason"]
    if mode == "numba":
        where = os.environ.get("NUMBA_CACHE_DIR") or _STATE["cache_dir"] or "numba's default"
        cache = where if _STATE["cache"] else "none, compiled in memory"
        return f"compiled (numba {_STATE['numba'].__version__}; cache: {cache})"
    if mode == "python":
        return f"uncompiled, plain Python (slow): {reason}"
    return "not started yet"


def kernel_names():
    """Qualified names of every kernel defined so far."""
    return [f"{s.__module__}.{s.__qualname__}" for s in _KERNELS]


def uncompiled():
    """Kernels with no compiled machine code yet (compiled mode only; the warm-up's test:
    after engine.world.warmup every engine kernel has been compiled or loaded from the cache).
    ``inline="always"`` kernels are left out: numba compiles them into their callers, never
    on their own."""
    if _STATE["mode"] != "numba":
        return []
    return [f"{s.__module__}.{s.__qualname__}" for s in _KERNELS
            if s._options.get("inline") != "always"
            and (s._impl is None or not s._impl.signatures)]


class _Stub:
    """A kernel before activation: calling it activates the compiler and forwards the call."""

    def __init__(self, fn, options):
        self.py_func = fn
        self._options = options
        self._impl: Any = None
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__doc__ = fn.__doc__
        self.__module__ = fn.__module__
        self.__wrapped__ = fn

    def _bind(self):
        if self._impl is not None:
            return
        numba = _STATE["numba"]
        if numba is None:
            self._impl = self.py_func
            return
        # no_cfunc_wrapper: numba also builds a C-callable wrapper of every function, for
        # first-class function values, which the engine never uses (7 % of the compile).
        opts = dict(nogil=True, fastmath=False, error_model="numpy", cache=_STATE["cache"],
                    no_cfunc_wrapper=True)
        opts.update(self._options)
        opts.pop("literal_arguments", None)
        if not opts.pop("refcount", True):
            opts["_nrt"] = False     # see kernel(): no reference counting in this function
        try:
            self._impl = numba.njit(**opts)(self.py_func)
        except RuntimeError:   # "cannot cache function ...: no locator available": our
            if not opts["cache"]:   # probe said writable, numba's own location is not
                raise
            _STATE["cache"] = False
            opts["cache"] = False
            self._impl = numba.njit(**opts)(self.py_func)
        if opts["cache"] and _is_engine_module(self.__module__):
            _stamp_with_engine(self._impl)
        if not self._options.get("literal_arguments"):
            _compile_for_plain_types(self._impl)

    def __call__(self, *args, **kwargs):
        if self._impl is None:
            activate()
            if self._impl is None:   # a kernel defined after activation
                self._bind()
        return self._impl(*args, **kwargs)

    def __repr__(self):
        return f"<kernel {self.__module__}.{self.__qualname__}>"


def kernel(fn=None, **options):
    """Mark a function as a compiled kernel (``@kernel`` or ``@kernel(inline="always")``).

    The function must be numba-compatible (nopython): numpy arrays, scalars, tuples, and
    calls of other kernels. It also runs as plain Python, unchanged, in the fallback.

    ``@kernel(refcount=False)``: compiled without numba's reference counting, for kernels
    called per pair or per row that allocate no array and return none (numba refuses to
    compile an allocation there). A compiled kernel otherwise takes and drops an atomic
    reference on every array it is given (a tuple's members included) and on every view
    it makes: a face clip of 50 scratch and table arrays paid ~120 atomic operations a call.
    Its callers hold the arrays for the call's duration, so nothing is freed under it."""
    def wrap(f):
        stub = _Stub(f, options)
        _KERNELS.append(stub)
        if _STATE["mode"] is not None:
            stub._bind()
            return stub._impl
        return stub
    return wrap(fn) if fn is not None else wrap
