"""The compiler's one home (engine/core/jit.py) and the warm-up (engine/world/warmup.py).

Compiled or plain Python is decided once per process, so every case runs in a process of its
own: compiled (numba, as installed in the test environments) against HB_NO_JIT=1 (the
fallback of a platform without numba wheels).
"""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

pytest.importorskip("numba")

# Kernels of the tests' own, in a module file (numba caches only functions with a source
# file): a loop, and a kernel calling a kernel (one native call once compiled).
PROBE = '''
import math
from engine.core.jit import kernel


@kernel
def weighted_norm(v, w):
    s = 0.0
    for i in range(v.shape[0]):
        s += w[i] * v[i] * v[i]
    return math.sqrt(s)


@kernel
def spread(v, w):
    return weighted_norm(v, w) / v.shape[0]


@kernel
def never_called(v):
    return v[0]


@kernel
def mixed_keys(v):
    out = {}
    out["a"] = v[0]
    out[1] = "b"        # keys of two types: plain Python only (numba: TypingError)
    return len(out)
'''


@pytest.fixture(scope="module")
def engine_cache(tmp_path_factory):
    """One cache folder for the tests that compile the whole engine: compiled once, loaded
    by the next test (compiling the solver's kernels takes tens of seconds)."""
    return str(tmp_path_factory.mktemp("numba_cache"))


def run_py(code, tmp_path, env=None):
    """Run code in a fresh Python with the probe kernels importable; returns its JSON."""
    (tmp_path / "hb_probe_kernels.py").write_text(PROBE)
    base = {k: v for k, v in os.environ.items() if k not in ("HB_NO_JIT", "NUMBA_CACHE_DIR")}
    base["PYTHONPATH"] = os.pathsep.join([ROOT, str(tmp_path)])
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, env={**base, **(env or {})}, cwd=str(tmp_path),
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_kernels_compile_lazily_and_the_fallback_gives_the_same_numbers(tmp_path):
    code = '''
    import json, sys
    import numpy as np
    from engine.core import jit
    import hb_probe_kernels as k
    lazy = "numba" not in sys.modules and jit.status() == (None, "")
    v, w = np.linspace(-1.0, 2.0, 7), np.linspace(0.5, 1.5, 7)
    out = [k.spread(v, w), k.weighted_norm(v, w)]
    print(json.dumps({"lazy": lazy, "status": jit.status(), "out": out,
                      "numba": "numba" in sys.modules, "describe": jit.describe(),
                      "uncompiled": [n for n in jit.uncompiled() if n.startswith("hb_")],
                      "swapped": type(k.spread).__name__}))
    '''
    compiled = run_py(code, tmp_path, {"NUMBA_CACHE_DIR": str(tmp_path / "cache")})
    plain = run_py(code, tmp_path, {"HB_NO_JIT": "1"})
    assert compiled["lazy"] and plain["lazy"]          # nothing imported at import time
    assert compiled["status"] == ["numba", ""] and compiled["numba"]
    assert compiled["describe"].startswith("compiled (numba ")
    assert compiled["swapped"] == "CPUDispatcher"       # the module holds the compiled one
    assert compiled["uncompiled"] == ["hb_probe_kernels.never_called",
                                      "hb_probe_kernels.mixed_keys"]
    assert plain["status"] == ["python", "HB_NO_JIT is set"] and not plain["numba"]
    assert plain["describe"] == "uncompiled, plain Python (slow): HB_NO_JIT is set"
    v, w = np.linspace(-1.0, 2.0, 7), np.linspace(0.5, 1.5, 7)
    truth = np.sqrt(np.sum(w * v * v))
    np.testing.assert_allclose(compiled["out"], [truth / 7, truth], rtol=1e-15)
    np.testing.assert_allclose(plain["out"], compiled["out"], rtol=1e-15)


def test_cache_is_written_then_loaded_in_the_next_process(tmp_path):
    code = '''
    import json, os
    import numpy as np
    from engine.core import jit
    where = os.environ["HB_TEST_CACHE"]
    jit.set_cache_dir(lambda: where)      # the add-on passes a function: called once, lazily
    import hb_probe_kernels as k
    k.spread(np.ones(3), np.ones(3))
    print(json.dumps({"hits": sum(k.spread.stats.cache_hits.values()),
                      "misses": sum(k.spread.stats.cache_misses.values()),
                      "cache": jit._STATE["cache"], "dir": jit._STATE["cache_dir"]}))
    '''
    env = {"HB_TEST_CACHE": str(tmp_path / "user" / "numba_cache")}
    cold = run_py(code, tmp_path, env)
    warm = run_py(code, tmp_path, env)
    assert cold["cache"] and cold["dir"] == str(tmp_path / "user" / "numba_cache")
    assert (cold["hits"], cold["misses"]) == (0, 1)
    assert (warm["hits"], warm["misses"]) == (1, 0)
    files = [f for _, _, fs in os.walk(cold["dir"]) for f in fs]
    assert any(f.startswith("hb_probe_kernels.spread") and f.endswith(".nbi") for f in files)


def test_a_cache_location_that_cannot_be_written_means_no_cache_and_no_error(tmp_path):
    blocker = tmp_path / "not_a_folder"
    blocker.write_text("a file where the cache folder should be")   # root can't write here
    code = '''
    import json, os
    import numpy as np
    from engine.core import jit
    where = os.environ["HB_TEST_CACHE"]
    jit.set_cache_dir(where)
    import hb_probe_kernels as k
    print(json.dumps({"value": k.spread(np.ones(4), np.ones(4)), "status": jit.status(),
                      "cache": jit._STATE["cache"], "writable": jit._writable(where),
                      "describe": jit.describe()}))
    '''
    out = run_py(code, tmp_path, {"HB_TEST_CACHE": str(blocker / "numba_cache")})
    assert out["status"] == ["numba", ""] and out["value"] == 0.5
    assert out["writable"] is False and out["cache"] is False
    assert out["describe"].endswith("cache: none, compiled in memory)")
    assert blocker.read_text().startswith("a file")


# -- the warm-up -----------------------------------------------------------------------------
def test_warm_up_compiles_every_engine_kernel_and_steps_real_contacts(tmp_path, engine_cache):
    code = '''
    import json
    import numpy as np
    from engine.core import jit
    from engine.world import warmup, world
    import hb_probe_kernels     # kernels of the test's own: the stages run even with none
    done_before = warmup.done()
    contacts = []
    step = world.World.step
    def counting(self, dt, record=None):   # what the canned worlds made the step do
        r = step(self, dt, record=record)
        if record:
            contacts.append(int(self.last_record.contact_count))
        return r
    world.World.step = counting
    labels = []
    seconds = warmup.warm_up(log=labels.append)
    print(json.dumps({"before": done_before, "after": warmup.done(), "labels": labels,
                      "seconds": seconds, "status": jit.status(), "contacts": contacts,
                      "uncompiled": jit.uncompiled(),
                      "kernels": jit.kernel_names()}))
    '''
    out = run_py(code, tmp_path, {"NUMBA_CACHE_DIR": engine_cache})
    assert not out["before"] and out["after"] and out["seconds"] > 0
    assert out["labels"][0] == "loading the compiler" and len(out["labels"]) == 5
    assert out["status"] == ["numba", ""]
    assert len(out["contacts"]) == 6 and min(out["contacts"]) >= 2   # every world touches
    engine_kernels = [k for k in out["kernels"] if k.startswith("engine.")]
    missed = [k for k in out["uncompiled"] if k.startswith("engine.")]
    assert missed == [], (missed, engine_kernels)
    assert len(out["uncompiled"]) == len(out["kernels"]) - len(engine_kernels) == 4


def test_warm_up_does_nothing_uncompiled(tmp_path):
    code = '''
    import json
    from engine.core import jit
    from engine.world import warmup, world
    import hb_probe_kernels     # there are kernels, but nothing to compile them with
    stepped = []
    world.World.step = lambda self, dt, record=None: stepped.append(1)
    warmup.warm_up()
    print(json.dumps({"done": warmup.done(), "stepped": len(stepped), "status": jit.status()}))
    '''
    out = run_py(code, tmp_path, {"HB_NO_JIT": "1"})
    assert out == {"done": True, "stepped": 0, "status": ["python", "HB_NO_JIT is set"]}


def test_a_kernel_numba_cannot_compile_means_plain_python_not_a_failure(tmp_path):
    code = '''
    import json
    import numpy as np
    from engine.core import jit
    from engine.world import warmup
    import hb_probe_kernels as k
    v, w = np.linspace(-1.0, 2.0, 7), np.linspace(0.5, 1.5, 7)
    before = k.spread(v, w)                 # compiled
    # As an older numba (the last one for Intel Macs) might: a kernel it cannot compile.
    warmup.STAGES = (*warmup.STAGES, ("a kernel numba cannot compile",
                                      lambda: k.mixed_keys(np.ones(2))))
    seconds = warmup.warm_up()
    print(json.dumps({"status": jit.status(), "done": warmup.done(), "seconds": seconds,
                      "before": before, "after": k.spread(v, w),
                      "mixed": k.mixed_keys(np.ones(2)),
                      "types": [type(k.spread).__name__, type(k.weighted_norm).__name__]}))
    '''
    out = run_py(code, tmp_path)
    mode, reason = out["status"]
    assert mode == "python" and out["done"] and out["seconds"] > 0
    assert reason.startswith("numba 0.") and "could not compile the engine (TypingError" in reason
    assert out["types"] == ["function", "function"]   # the modules hold the plain ones again
    assert out["mixed"] == 2 and out["after"] == pytest.approx(out["before"], rel=1e-15)


# -- one scene, both ways --------------------------------------------------------------------
SCENE = '''
import json
import numpy as np
from engine.core import jit
from engine.world import warmup
from engine.shapes.hull import ConvexHull
from engine.shapes.primitives import Box, Capsule, Sphere
from engine.world.world import World

warmup.warm_up()
rng = np.random.default_rng(3)
w = World()
w.add_body(Box([4.0, 4.0, 0.5]), position=(0, 0, -0.5), kind="static")
for k in range(3):
    w.add_body(Box([0.3, 0.3, 0.3]), position=(0.0, 0.0, 0.3 + 0.62 * k))
w.add_body(Sphere(0.25), position=(-2.0, 0.0, 0.25), linear_velocity=(4.0, 0.0, 0.0))
w.add_body(Capsule(0.1, 0.3), position=(1.0, 1.0, 0.6), orientation=(0.9, 0.3, 0.2, 0.1))
w.add_body(ConvexHull(rng.normal(size=(20, 3)) * 0.2), position=(-1.0, -1.0, 0.5))
frames = []
for _ in range(36):
    w.step(1 / 24)
    frames.append(np.hstack([w.positions, w.orientations]).tolist())
print(json.dumps({"status": jit.status(), "frames": frames, "pos": w.positions.tolist(),
                  "v": w.linear_velocities.tolist()}))
'''


def test_a_scene_compiled_and_uncompiled_ends_the_same(tmp_path, engine_cache):
    """The same scene both ways: equal to round-off (a compiled loop sums in another order
    than numpy, a math function may differ in the last bit) until a discrete decision sits
    on that round-off (a contact point's gap closing at exactly zero, a manifold reused or
    not: measured with the solver's kernels, frames 1-12 within 5e-16 m, then one flip at
    frame 13 that moved a box 2e-6 m); from there on both are as right, and apart by far
    less than any visible or physical tolerance."""
    compiled = run_py(SCENE, tmp_path, {"NUMBA_CACHE_DIR": engine_cache})
    plain = run_py(SCENE, tmp_path, {"HB_NO_JIT": "1"})
    assert compiled["status"] == ["numba", ""]
    assert plain["status"] == ["python", "HB_NO_JIT is set"]
    a, b = np.array(plain["frames"]), np.array(compiled["frames"])
    np.testing.assert_allclose(a[:6], b[:6], rtol=0, atol=1e-12)   # the first quarter second
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-4)            # 0.1 mm, 1e-4 rad
    np.testing.assert_allclose(plain["v"], compiled["v"], rtol=0, atol=1e-3)
    # And the scene did move: the ball hit the stack, the stack stands.
    pos = np.array(compiled["pos"])
    assert pos[4, 0] > -1.0
    np.testing.assert_allclose(pos[1:4, 2], [0.3, 0.9, 1.5], atol=0.01)   # 0.6 m boxes


def test_each_import_name_of_the_engine_caches_apart(tmp_path):
    """numba's default cache lies beside the engine's modules, and a cached kernel names its
    module: a process importing the engine as ``engine`` failed to load a kernel cached by
    one importing this checkout as ``hullabaloo`` (hullabaloo_cli.py, the demo), with
    ModuleNotFoundError at its first step. Another import name gets a folder of its own."""
    code = f"""
        import importlib.util, json, sys
        spec = importlib.util.spec_from_file_location(
            "hb_alias", {os.path.join(ROOT, "__init__.py")!r},
            submodule_search_locations=[{ROOT!r}])
        sys.modules["hb_alias"] = importlib.util.module_from_spec(spec)
        from hb_alias.engine.core import jit as aliased
        from engine.core import jit as plain
        aliased.activate()
        plain.activate()
        print(json.dumps([aliased.describe(), plain.describe()]))
    """
    aliased, plain = run_py(code, tmp_path)
    assert os.path.join("engine", "__pycache__", "numba-hb_alias.engine") in aliased
    assert "numba-" not in plain
    # The same with NUMBA_CACHE_DIR set (a developer's or a farm's shared cache).
    shared = str(tmp_path / "shared")
    aliased, plain = run_py(code, tmp_path, {"NUMBA_CACHE_DIR": shared})
    assert os.path.join(shared, "numba-hb_alias.engine") in aliased
    assert f"cache: {shared})" in plain


CALLEE = '''
from .jit import kernel


@kernel
def callee(x):
    return x + {step}
'''

CALLER = '''
from ..core.jit import kernel
from ..core.stamp_probe_callee import callee


@kernel
def caller(x):
    return 2.0 * callee(x)
'''


def test_a_changed_callee_in_another_file_is_compiled_again_not_loaded_stale(tmp_path):
    """numba checks a cached kernel against its own file only, but the cached code holds its
    callees: after an update that changed only a callee's file, the caller ran the old callee
    (numba issue 1833). Engine kernels are stamped with the engine's sources as well."""
    import shutil
    pkg = tmp_path / "pkg"
    shutil.copytree(os.path.join(ROOT, "engine"), pkg / "engine",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (pkg / "engine" / "dynamics" / "stamp_probe_caller.py").write_text(CALLER)
    code = textwrap.dedent('''
        import json
        import engine.dynamics.stamp_probe_caller as m
        out = m.caller(1.0)
        print(json.dumps({"out": out, "hits": sum(m.caller.stats.cache_hits.values()),
                          "misses": sum(m.caller.stats.cache_misses.values())}))
    ''')
    env = {k: v for k, v in os.environ.items() if k not in ("HB_NO_JIT", "NUMBA_CACHE_DIR")}
    env.update(PYTHONPATH=str(pkg), NUMBA_CACHE_DIR=str(tmp_path / "cache"))

    def run(step):
        (pkg / "engine" / "core" / "stamp_probe_callee.py").write_text(CALLEE.format(step=step))
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env=env, cwd=str(tmp_path), timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        got = json.loads(done.stdout.strip().splitlines()[-1])
        return got["out"], got["hits"], got["misses"]

    assert run("1.0") == (4.0, 0, 1)        # compiled and cached
    assert run("1.0") == (4.0, 1, 0)        # loaded: nothing changed
    assert run("3.0") == (8.0, 0, 1)        # the callee's file changed: the caller compiles
    # The step's orchestration (engine/world, no kernel there) is not part of the stamp.
    with open(pkg / "engine" / "world" / "world.py", "a") as f:
        f.write("\n# an edit outside the kernels\n")
    assert run("3.0") == (8.0, 1, 0)
