"""Issue 16 in the real Blender (bpy wheel): --set / --seed / summary.json of ``bake``, the
``wedge`` command in separate processes, its failures, and the re-bake cache travelling with
the baked .blend. Scenes are tiny (4 dynamic bodies, 10 frames) to keep the processes cheap."""
import importlib
import json
import os
import shutil
import subprocess
import sys

import hb_blender as hb
import numpy as np
import pytest

bpy = hb.bpy
CLI = os.path.join(hb.ROOT, "hullabaloo_cli.py")
VEL = "Ball.hullabaloo.initial_linear_velocity"


class _Addon:
    """The installed add-on's modules by attribute (imported on first use)."""
    def __getattr__(self, name):
        hb.pkg()
        return importlib.import_module(f"{hb.MODULE}.addon.{name}")


def addon():
    return _Addon()


def run_cli(*args, cwd):
    env = hb.cli_env(os.path.join(str(cwd), "user"))
    done = subprocess.run([sys.executable, CLI, *args], check=False, capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=600)
    return done.returncode, done.stdout, done.stderr


def small_scene(path, frames=10):
    """Ground, a stack of three boxes and a ball thrown at it, a camera; saved to path."""
    add_camera(hb.empty_scene(frame_end=frames))
    hb.add_box("Ground", size=(10, 10, 1), location=(0, 0, -0.5), body_type='PASSIVE')
    for i in range(3):
        hb.add_box(f"Box.{i}", size=(0.5, 0.5, 0.5), location=(0, 0, 0.25 + 0.5 * i))
    hb.add_box("Ball", size=(0.5, 0.5, 0.5), location=(-2, 0, 0.6), shape='SPHERE', mass=5.0,
               initial_linear_velocity=(6.0, 0.0, 0.0))
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    return str(path)


def rigid_body_scene(path, frames=8):
    """A file set up with Blender's Rigid Body only (no Hullabaloo setting): a passive
    "Ground" and "Top", a dynamic "Free" box 3 m up and a dynamic "Hung" box hanging from
    Top by Blender's Point constraint at its centre (so it cannot fall); no damping, a camera.
    Saved to path."""
    from test_joints_import import connect, rigid
    scene = add_camera(hb.empty_scene(frame_end=frames))
    bpy.ops.rigidbody.world_add()
    scene.rigidbody_world.point_cache.frame_end = frames
    rigid(hb.add_box("Ground", size=(10, 10, 1), location=(0, 0, -0.5), enabled=False),
          'PASSIVE')
    top = rigid(hb.add_box("Top", size=(0.5, 0.5, 0.5), location=(2, 0, 3.5), enabled=False),
                'PASSIVE')
    for name, x in (("Free", 0.0), ("Hung", 2.0)):
        o = rigid(hb.add_box(name, size=(0.5, 0.5, 0.5), location=(x, 0, 3), enabled=False))
        o.rigid_body.linear_damping = o.rigid_body.angular_damping = 0.0
    e = connect([top, bpy.data.objects["Hung"]], top, 'POINT')
    e.location = (2, 0, 3)
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    return str(path)


def add_camera(scene):
    """The camera of the small scenes (looking at the origin from the front right)."""
    from mathutils import Vector
    cam = bpy.data.objects.new("Camera", bpy.data.cameras.new("Camera"))
    scene.collection.objects.link(cam)
    cam.location = (3, -6, 3)
    cam.rotation_mode = 'QUATERNION'
    cam.rotation_quaternion = Vector((-3.5, 6, -2.5)).to_track_quat('-Z', 'Y')
    scene.camera = cam
    return scene


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


# -- --set parsing and applying (in this process) -----------------------------------------

def test_set_values_are_parsed_safely_and_checked_against_the_property():
    ov = addon().overrides
    assert ov.split_values("(8,0,0), (12,0,0),[1,2,3]") == ["(8,0,0)", "(12,0,0)", "[1,2,3]"]
    assert ov.parse_value("(12,0,0)") == (12, 0, 0)
    assert ov.parse_value("PASSIVE") == "PASSIVE" and ov.parse_value("True") is True
    for bad in ("__import__('os').system('true')", "1+", "{1: 2}", ""):
        with pytest.raises(ov.OverrideError):
            ov.parse_value(bad)
    with pytest.raises(ov.OverrideError, match="unbalanced"):
        ov.split_values("(1,2")
    scene = hb.empty_scene()
    cube = hb.add_box("Cube.001", location=(0, 0, 1))
    applied = addon().overrides.apply(
        [ov.split_assignment(a) for a in (
            "Cube.001.hullabaloo.initial_linear_velocity=(12,0,-1.5)",
            "Cube.001.hullabaloo.body_type=passive", "Cube.001.hullabaloo.enabled=false",
            "Scene.hullabaloo.substeps=8", "Scene.hullabaloo.use_ccd=0")],
        scene, bpy.data.objects)
    s = cube.hullabaloo
    assert tuple(s.initial_linear_velocity) == (12.0, 0.0, -1.5)
    assert s.body_type == 'PASSIVE' and s.enabled is False
    assert scene.hullabaloo.substeps == 8 and scene.hullabaloo.use_ccd is False
    assert applied[0] == ("Cube.001.hullabaloo.initial_linear_velocity", [12.0, 0.0, -1.5])
    cases = {
        "Nope.hullabaloo.mass=1": "no object named 'Nope'",
        "Cube.001.hullabaloo.mas=1": "has no Hullabaloo setting 'mas'",
        "Cube.001.hullabaloo.body_type=SOLID": "not one of DYNAMIC, PASSIVE, ANIMATED",
        "Cube.001.hullabaloo.initial_linear_velocity=(1,2)": "expected 3 values",
        "Cube.001.hullabaloo.mass=-2": "outside",
        "Scene.hullabaloo.substeps=2.5": "whole number",
        "Cube.001.location=(0,0,0)": "only Hullabaloo settings",
        "Cube.001.hullabaloo.bake=1": "has no Hullabaloo setting",
    }
    for text, message in cases.items():
        with pytest.raises(ov.OverrideError, match=message.replace("(", r"\(")):
            ov.apply([ov.split_assignment(text)], scene, bpy.data.objects)
    # All or nothing: a bad assignment after a good one changes nothing.
    with pytest.raises(ov.OverrideError):
        ov.apply([ov.split_assignment("Cube.001.hullabaloo.mass=7"),
                  ov.split_assignment("Cube.001.hullabaloo.mass=x")], scene, bpy.data.objects)
    assert s.mass == 1.0


def test_seed_jitter_is_reproducible_bounded_and_only_moves_dynamic_bodies():
    jit = addon().jitter
    scene = hb.empty_scene()
    ground = hb.add_box("Ground", size=(10, 10, 1), location=(0, 0, -0.5), body_type='PASSIVE')
    boxes = [hb.add_box(f"B{i}", size=(1.0, 0.5, 0.25), location=(i, 0, 1)) for i in range(6)]
    boxes[1].rotation_euler = (0.3, 0.2, 0.1)
    bpy.context.view_layer.update()
    before = {o.name: hb.matrix(o) for o in scene.objects}

    def jittered(seed, amount=0.01):
        from mathutils import Matrix
        for o in scene.objects:
            o.matrix_world = Matrix(before[o.name].tolist())
        bpy.context.view_layer.update()
        names, warnings = jit.apply(scene, seed, amount)
        bpy.context.view_layer.update()
        assert warnings == [] and names == sorted(b.name for b in boxes)
        return {o.name: hb.matrix(o) for o in scene.objects}

    a, b, a2 = jittered(0), jittered(1), jittered(0)
    for name, m in a.items():
        np.testing.assert_array_equal(m, a2[name])  # same seed: same bits
    np.testing.assert_array_equal(a["Ground"], before["Ground"])
    for o in boxes:
        d0 = a[o.name] - before[o.name]
        assert np.abs(d0).max() > 0 and not np.array_equal(a[o.name], b[o.name])
        # Independent bounds: the origin moved at most M; the turn (angle from the trace of
        # R_new R_old^T) is at most M / r with r half the largest dimension (0.5 m here).
        assert np.linalg.norm(d0[:3, 3]) <= 0.01 + 1e-6
        R0 = before[o.name][:3, :3]
        R = a[o.name][:3, :3] @ np.linalg.inv(R0)
        angle = np.arccos(np.clip((np.trace(R) - 1) / 2, -1, 1))
        assert angle <= 0.01 / 0.5 + 1e-5
        np.testing.assert_allclose(np.linalg.svd(a[o.name][:3, :3])[1],
                                   np.linalg.svd(R0)[1], rtol=1e-5)  # scale kept
    assert ground.hullabaloo.body_type == 'PASSIVE'


# -- bake + wedge in separate processes ------------------------------------------------------

def test_wedge_bakes_variants_in_processes_and_one_reproduces_alone(tmp_path):
    scene = small_scene(tmp_path / "small.blend")
    out = tmp_path / "wedge"
    code, _, err = run_cli(
        "wedge", scene, "--out", str(out), "--vary", f"{VEL}=(4,0,0),(8,0,0)", "--seeds", "2",
        "--workers", "2", "--size", "64x36", "--set", "Scene.hullabaloo.substeps=6",
        cwd=tmp_path)
    assert code == 0, err[-3000:]
    wedge = read_json(out / "wedge.json")
    assert [v["name"] for v in wedge] == [
        "v000_initial_linear_velocity-4_0_0_seed0", "v001_initial_linear_velocity-4_0_0_seed1",
        "v002_initial_linear_velocity-8_0_0_seed0", "v003_initial_linear_velocity-8_0_0_seed1"]
    assert [v["seed"] for v in wedge] == [0, 1, 0, 1]
    assert [v["values"][VEL] for v in wedge] == [[4, 0, 0], [4, 0, 0], [8, 0, 0], [8, 0, 0]]
    assert all(v["status"] == "ok" and v["error"] is None for v in wedge)
    sums = [v["summary"] for v in wedge]
    for v, s in zip(wedge, sums):
        assert s == read_json(out / v["dir"] / "summary.json")
        assert s["bodies"] == 5 and s["objects"] == 4 and s["frames"] == 10
        assert set(s["final"]) == {"Ball", "Box.0", "Box.1", "Box.2"}
        assert s["settings"]["set"][0] == "Scene.hullabaloo.substeps=6"  # wedge's own first
        assert s["seconds"]["simulate"] > 0 and s["max_penetration"] is not None
    finals = [json.dumps(s["final"], sort_keys=True) for s in sums]
    assert len(set(finals)) == 4  # every value and every seed changes the outcome
    # The faster throw carries the ball further (independent of the engine's details).
    assert sums[2]["final"]["Ball"]["location"][0] > sums[0]["final"]["Ball"]["location"][0]
    for v in wedge:
        assert (out / v["dir"] / "baked.blend").is_file()
        assert (out / v["dir"] / "thumbnail.png").is_file()
    sheet = bpy.data.images.load(str(out / "contact_sheet.png"))
    try:
        assert tuple(sheet.size) == (128, 72)  # 2 x 2 tiles of 64 x 36
        px = np.empty(128 * 72 * 4, np.float32)
        sheet.pixels.foreach_get(px)
        px = px.reshape(72, 128, 4)
    finally:
        bpy.data.images.remove(sheet)
    # Each tile is its variant's thumbnail (rows bottom-up in Blender: v000 is top-left).
    thumb = bpy.data.images.load(str(out / wedge[3]["dir"] / "thumbnail.png"))
    try:
        t = np.empty(64 * 36 * 4, np.float32)
        thumb.pixels.foreach_get(t)
        np.testing.assert_array_equal(px[:36, 64:], t.reshape(36, 64, 4))
    finally:
        bpy.data.images.remove(thumb)
    # v003 baked alone, as a user would: same --set, its value as --set, --seed 1.
    code, _, err = run_cli("bake", scene, "--out", str(tmp_path / "alone"), "--no-render",
                                "--set", "Scene.hullabaloo.substeps=6",
                                "--set", f"{VEL}=(8,0,0)", "--seed", "1", cwd=tmp_path)
    assert code == 0, err[-3000:]
    alone = read_json(tmp_path / "alone" / "summary.json")
    summary = addon().summary
    assert summary.comparable(alone) == summary.comparable(sums[3])  # bit for bit
    assert summary.comparable(alone) != summary.comparable(sums[2])


def test_wedge_reports_failed_variants_and_bad_input(tmp_path):
    scene = small_scene(tmp_path / "small.blend", frames=6)
    out = tmp_path / "w"
    # One variant cannot bake (a frame range with no length): it fails with the bake's own
    # message, the other one finishes.
    code, _, err = run_cli(
        "wedge", scene, "--out", str(out), "--no-render", "--workers", "2",
        "--set", "Scene.hullabaloo.use_scene_frame_range=False",
        "--set", "Scene.hullabaloo.frame_start=1",
        "--vary", "Scene.hullabaloo.frame_end=1,6", cwd=tmp_path)
    assert code == 1
    wedge = read_json(out / "wedge.json")
    assert [v["status"] for v in wedge] == ["failed", "ok"]
    assert "frame range 1-1 has no length" in wedge[0]["error"]
    assert wedge[0]["summary"] is None and wedge[1]["summary"]["frames"] == 6
    assert "failed: v000_frame_end-1" in err and "Traceback" not in err
    assert not (out / "contact_sheet.png").exists()
    # Bad input: one clear line, exit code 2, nothing baked.
    for vary, message in (("Ball.hullabaloo.mass=", "no values"),
                          ("Nope.hullabaloo.mass=1,2", "no object named 'Nope'"),
                          ("Ball.hullabaloo.mass=1,,2", "empty value"),
                          ("Ball.hullabaloo.body_type=DYNAMIC,SOLID", "not one of")):
        bad = tmp_path / "bad"
        code, _, err = run_cli("wedge", scene, "--out", str(bad), "--vary", vary,
                                    cwd=tmp_path)
        assert code == 2 and message in err and "Traceback" not in err, (vary, err)
        assert not bad.exists()
    # bake with a bad --set: exit code 2, the message, and summary.json says so too.
    code, _, err = run_cli("bake", scene, "--out", str(tmp_path / "b"), "--no-render",
                           "--set", "Ball.hullabaloo.friction=(1,2)", cwd=tmp_path)
    assert code == 2 and "expected one value" in err and "Traceback" not in err
    failed = read_json(tmp_path / "b" / "summary.json")
    assert failed["ok"] is False and "expected one value" in failed["error"]
    assert not (tmp_path / "b" / "baked.blend").exists()


def test_a_crashed_worker_is_reported_and_the_others_finish(tmp_path):
    """The runner with a stand-in bake process that kills itself for one variant (a real
    SIGKILL of a real process; Blender cannot be made to crash on purpose)."""
    cw = addon().cli_wedge
    fake = tmp_path / "fake_bake.py"
    fake.write_text(
        "import json, os, signal, sys\n"
        "out = sys.argv[sys.argv.index('--out') + 1]\n"
        "if out.endswith('seed1'):\n"
        "    print('about to die', file=sys.stderr, flush=True)\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
        "os.makedirs(out, exist_ok=True)\n"
        "json.dump({'ok': True, 'final': {}}, open(os.path.join(out, 'summary.json'), 'w'))\n")
    variants = addon().wedge_plan.plan([], seeds=3)
    for v in variants:
        v["dir"] = v["name"]
        v["args"] = addon().wedge_plan.bake_args("x.blend", str(tmp_path / v["name"]), v, [])
    cw.run_all(variants, str(tmp_path), workers=2, prefix=[sys.executable, str(fake)])
    entries, path, _ = cw.collect(variants, str(tmp_path), render=False)
    assert [e["status"] for e in entries] == ["ok", "failed", "ok"]
    assert "crashed (signal 9)" in entries[1]["error"] and "about to die" in entries[1]["error"]
    assert read_json(path)[1]["error"] == entries[1]["error"]
    assert "about to die" in (tmp_path / variants[1]["name"] / "log.txt").read_text()


def test_rebake_cache_travels_with_the_baked_blend(tmp_path):
    """bake --out A; move A elsewhere (a farm node); bake A'/baked.blend --from-frame 5:
    the re-bake continues from the stored state and ends bit for bit where the full bake did."""
    scene = small_scene(tmp_path / "small.blend", frames=10)
    code, _, err = run_cli("bake", scene, "--out", str(tmp_path / "a"), "--no-render",
                           "--seed", "3", cwd=tmp_path)
    assert code == 0, err[-3000:]
    full = read_json(tmp_path / "a" / "summary.json")
    moved = tmp_path / "node" / "job"
    shutil.move(str(tmp_path / "a"), str(moved))
    code, _, err = run_cli("bake", str(moved / "baked.blend"), "--from-frame", "5",
                             "--out", str(tmp_path / "b"), "--no-render", cwd=tmp_path)
    assert code == 0, err[-3000:]
    again = read_json(tmp_path / "b" / "summary.json")
    assert again["frame_start"] == 5 and again["frames"] == 6
    assert again["final"] == full["final"]
    # The new file's cache is beside it, by a relative path.
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "b" / "baked.blend"))
    assert bpy.context.scene.hullabaloo.cache_file == "//baked_hullabaloo/Scene.npz"
    assert (tmp_path / "b" / "baked_hullabaloo" / "Scene.npz").is_file()
    # Saving the file elsewhere (Save As) takes the cache along.
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "c" / "copy.blend"))
    assert (tmp_path / "c" / "copy_hullabaloo" / "Scene.npz").is_file()
    assert bpy.context.scene.hullabaloo.cache_file == "//copy_hullabaloo/Scene.npz"
    # Without its cache, re-baking from a frame is a clear error, not a silent full bake.
    shutil.rmtree(tmp_path / "c" / "copy_hullabaloo")
    code, _, err = run_cli("bake", str(tmp_path / "c" / "copy.blend"), "--from-frame", "5",
                           "--out", str(tmp_path / "d"), "--no-render", cwd=tmp_path)
    assert code == 1 and "Bake the scene first" in err
    assert read_json(tmp_path / "d" / "summary.json")["ok"] is False


def test_wedge_of_a_rigid_body_file_imports_it_in_every_variant(tmp_path):
    """--import-rigid-body on a file set up with Blender's Rigid Body only: every variant
    imports it before its own --set (so the varied value wins over the imported one)."""
    scene = rigid_body_scene(tmp_path / "rigid.blend", frames=6)
    out = tmp_path / "w"
    vel = "Free.hullabaloo.initial_linear_velocity"
    code, _, err = run_cli("wedge", scene, "--out", str(out), "--no-render",
                           "--import-rigid-body", "--vary", f"{vel}=(0,0,0),(2,0,0)",
                           cwd=tmp_path)
    assert code == 0, err[-3000:]
    wedge = read_json(out / "wedge.json")
    assert [v["status"] for v in wedge] == ["ok", "ok"]
    for v in wedge:
        s = v["summary"]
        assert s["bodies"] == 4 and s["objects"] == 2
        assert s["settings"]["import_rigid_body"]["constraints"] == 1
    x = [v["summary"]["final"]["Free"]["location"][0] for v in wedge]
    assert abs(x[0]) < 1e-9 and abs(x[1] - 2.0 * 5 / 24) < 1e-6     # 2 m/s for 5 frames
    for v in wedge:                                  # the constraint came in too
        hung = v["summary"]["final"]["Hung"]["location"]
        assert np.linalg.norm(np.subtract(hung, (2, 0, 3))) < 1e-3
