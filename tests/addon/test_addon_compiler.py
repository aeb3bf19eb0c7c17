"""The engine's compiler inside Blender (addon/compiler.py): where compiled code is cached,
"preparing the physics engine" before the first bake of a session (console and modal status),
and the once-per-bake note when the engine runs uncompiled.

Compiled or plain Python is decided once per process, so the uncompiled bake and the
unwritable cache folder run in fresh Blender processes (fresh_blender.py)."""
import json
import os
import subprocess
import sys
import time
from types import SimpleNamespace

import hb_blender as hb
import numpy as np

bpy = hb.bpy
FRESH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fresh_blender.py")


def jit():
    return sys.modules[hb.MODULE + ".engine.core.jit"]


def warmup():
    return sys.modules[hb.MODULE + ".engine.world.warmup"]


def small_scene():
    scene = hb.empty_scene(frame_end=12)
    hb.add_box("Ground", size=(10, 10, 1), location=(0, 0, -0.5), body_type='PASSIVE')
    boxes = [hb.add_box(f"Box{i}", size=(1, 1, 1), location=(0.2 * i, 0, 0.5 + 1.05 * i))
             for i in range(2)]
    scene.frame_set(4)
    return scene, boxes


def probe_sum(v):
    s = 0.0
    for i in range(v.shape[0]):
        s += v[i]
    return s


def _under(path, folder):
    return os.path.realpath(path).startswith(os.path.realpath(folder) + os.sep)


def test_compiled_code_is_cached_in_the_extension_user_folder_not_the_addon():
    small_scene()
    hb.bake()
    expected = bpy.utils.extension_path_user(hb.MODULE, path="numba_cache")
    assert jit().status() == ("numba", "")
    assert jit()._STATE["cache_dir"] == expected and jit()._STATE["cache"] is True
    assert os.path.isdir(expected) and not _under(expected, hb.addon_dir())
    if hb._USER is not None:
        assert _under(expected, hb.session()["user_dir"])
    # A kernel compiled through the extension's engine/core/jit.py lands there.
    probe = jit().kernel(probe_sum)
    assert probe(np.arange(5.0)) == 10.0
    ours = [f for _, _, fs in os.walk(expected) for f in fs if f.startswith("test_addon_compiler")]
    assert any(f.endswith(".nbi") for f in ours), ours
    stray = [f for _, _, fs in os.walk(hb.addon_dir()) for f in fs if f.endswith((".nbi", ".nbc"))]
    assert stray == []


def test_first_bake_of_a_session_says_it_prepares_the_engine(capsys):
    small_scene()
    warmup()._DONE["seconds"] = None      # as in a session that has not baked yet
    hb.bake()
    out = capsys.readouterr().out
    first = dict(hb.pkg().addon.ops.LAST["engine"])
    assert "Hullabaloo: preparing the physics engine" in out
    assert "Hullabaloo: physics engine ready in" in out and "compiled (numba" in out
    assert out.index("preparing the physics engine") < out.index("Baked ")
    assert first["mode"] == "numba" and first["prepare_seconds"] > 0
    assert bpy.ops.hullabaloo.clear_bake() == {'FINISHED'}
    hb.bake()                              # prepared once per session
    assert "preparing" not in capsys.readouterr().out
    assert hb.pkg().addon.ops.LAST["engine"]["prepare_seconds"] == 0.0


# -- the modal bake: a warm-up thread behind a status message ---------------------------------
class Workspace:
    def __init__(self):
        self.texts = []

    def status_text_set(self, text):
        self.texts.append(text)


class WindowManager:
    def __init__(self):
        self.progress = []

    def progress_update(self, value):
        self.progress.append(value)

    def progress_end(self):
        self.progress.append("end")

    def event_timer_remove(self, timer):
        pass


def preparing_operator(scene):
    """The bake operator's real modal code, as invoke leaves it on a session's first bake
    (background Blender has no window to run a modal operator in): the warm-up thread
    started, no job yet."""
    cls = bpy.types.HULLABALOO_OT_bake
    names = ("modal", "_advance", "_end_modal", "_done", "_status", "_prepare_tick",
             "_prepare_engine", "_prepare", "_make_job", "_from_frame", "_prepared",
             "_warm_seconds")
    op = type("ModalStandIn", (), {n: getattr(cls, n) for n in names})()
    op._job, op._timer, op.reports, op.from_current_frame = None, object(), [], False
    op.report = lambda level, msg: op.reports.append((set(level), msg))
    ctx = SimpleNamespace(window_manager=WindowManager(), workspace=Workspace(), scene=scene,
                          evaluated_depsgraph_get=bpy.context.evaluated_depsgraph_get)
    warmup()._DONE["seconds"] = None          # as in a session that has not baked yet
    op._preparing = True
    compiler().start()
    op._status(ctx)                            # what invoke shows first
    return op, ctx


def compiler():
    return sys.modules[hb.MODULE + ".addon.compiler"]


TICK = SimpleNamespace(type='TIMER', value='NOTHING')


def test_modal_bake_shows_the_engine_being_prepared_then_bakes_the_same_keys():
    scene, boxes = small_scene()
    hb.bake()
    reference = {o.name: hb.keys_of(o) for o in boxes}
    assert bpy.ops.hullabaloo.clear_bake() == {'FINISHED'}
    op, ctx = preparing_operator(scene)
    results = []
    while not results or results[-1] == {'RUNNING_MODAL'}:
        results.append(op.modal(ctx, TICK))
        time.sleep(0.01)                       # the timer's interval
    assert results[-1] == {'FINISHED'}
    texts = [t for t in ctx.workspace.texts if t]
    preparing = [t for t in texts if "preparing the physics engine, compiled on first use" in t]
    baking = [t for t in texts if t.startswith("Hullabaloo: baking frame")]
    assert preparing and baking and texts.index(preparing[-1]) < texts.index(baking[0])
    assert ctx.workspace.texts[-1] is None          # the status bar is given back
    assert hb.pkg().addon.ops.LAST["engine"]["prepare_seconds"] > 0
    assert warmup().done()
    for o in boxes:
        keys = hb.keys_of(o)
        for ch in reference[o.name]:
            np.testing.assert_array_equal(keys[ch]["co"], reference[o.name][ch]["co"])


def test_escape_while_preparing_cancels_and_changes_nothing():
    scene, _ = small_scene()
    before = hb.snapshot(scene)
    op, ctx = preparing_operator(scene)
    assert op.modal(ctx, SimpleNamespace(type='ESC', value='PRESS')) == {'CANCELLED'}
    assert op._job is None and not op._preparing
    assert hb.pkg().addon.ops.LAST["cancelled"]
    assert ctx.window_manager.progress[-1] == "end"
    hb.assert_same(before, hb.snapshot(scene))
    # The warm-up goes on in the background and serves the next bake.
    compiler()._THREAD["thread"].join()
    assert warmup().done()
    assert compiler().prepare() >= 0.0 and compiler()._THREAD["thread"] is None


# -- fresh processes: uncompiled, and a cache folder that cannot be written -------------------
def _fresh(tmp_path, name, env=None, *extra):
    base = {k: v for k, v in os.environ.items() if k not in ("HB_NO_JIT", "NUMBA_CACHE_DIR")}
    out = tmp_path / f"{name}.json"
    done = subprocess.run([sys.executable, FRESH, hb.session()["zip"], str(out), "--user",
                           str(tmp_path / name), "--bakes", "2", *extra],
                          capture_output=True, text=True, env={**base, **(env or {})},
                          timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    with open(out) as f:
        return json.load(f), done.stdout


def test_uncompiled_engine_is_reported_once_per_bake_and_bakes_the_same(tmp_path):
    plain, log = _fresh(tmp_path, "plain", {"HB_NO_JIT": "1"})
    assert plain["jit_status"] == ["python", "HB_NO_JIT is set"]
    assert plain["numba_file"] is None               # never imported
    note = "Hullabaloo's engine ran uncompiled, as plain Python (much slower): HB_NO_JIT is set"
    assert log.count(note) == 2                      # once in each of the two bakes' reports
    assert all(b["engine"]["mode"] == "python" for b in plain["bakes"])
    assert not any("uncompiled" in p for p in plain["problems"])   # not an object's problem
    # Compiled, with a file where the cache folder should be: no cache, no error.
    compiled, log = _fresh(tmp_path, "compiled", None, "--read-only-cache")
    assert compiled["jit_status"] == ["numba", ""] and "engine ran uncompiled" not in log
    assert compiled["cache_path_writable"] is False and compiled["jit_cache"] is False
    assert compiled["jit_cache_dir"] == compiled["cache_path"]
    assert compiled["probe_value"] == 14.0 and compiled["addon_dir_pycache"] == []
    # Both ways, the same motion of a scene that moved: to round-off until a discrete
    # decision sits on it (tests/test_jit.py), then within 0.1 mm.
    assert plain["final"].keys() == compiled["final"].keys() and len(plain["final"]) == 4
    for name, m in compiled["final"].items():
        np.testing.assert_allclose(plain["final"][name], m, rtol=0, atol=1e-4, err_msg=name)
    assert compiled["final"]["Ball"][0][3] > -3.0    # it rolled from x = -4
