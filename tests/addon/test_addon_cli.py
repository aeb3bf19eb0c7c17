"""The headless command in plain Python with the bpy wheel (what the README's main job runs):
a subprocess, like a user's shell, on the demo scene and on a given .blend."""
import os
import subprocess
import sys

import hb_blender as hb

bpy = hb.bpy
CLI = os.path.join(hb.ROOT, "hullabaloo_cli.py")


def run_cli(*args, cwd):
    env = dict(os.environ, BLENDER_USER_RESOURCES=os.path.join(str(cwd), "user"))
    done = subprocess.run([sys.executable, CLI, *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=600)
    return done.returncode, done.stdout, done.stderr


def test_demo_bake_saves_renders_and_summarises(tmp_path):
    code, out, err = run_cli("bake", "--out", str(tmp_path / "out"), "--frames", "8",
                             "--preview", "2", "--size", "64x36", cwd=tmp_path)
    assert code == 0, err[-2000:]
    assert "objects:          35 keyed, 36 bodies" in out
    assert "frames:           8 (1-8)" in out
    assert "max penetration:" in out and "mm" in out
    files = sorted(os.listdir(tmp_path / "out"))
    assert "baked.blend" in files and "preview_strip.png" in files
    assert len([f for f in files if f.startswith("preview_0")]) == 2
    strip = bpy.data.images.load(str(tmp_path / "out" / "preview_strip.png"))
    try:
        assert tuple(strip.size) == (128, 36)
    finally:
        bpy.data.images.remove(strip)


def test_bakes_a_given_blend_and_reports_bad_files(tmp_path):
    hb.empty_scene(frame_end=6)
    hb.add_box("Ground", size=(10, 10, 1), location=(0, 0, -0.5), body_type='PASSIVE')
    hb.add_box("Box", location=(0, 0, 3))
    src = tmp_path / "mine.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(src))
    code, out, err = run_cli("bake", str(src), "--out", str(tmp_path / "o"), "--no-render",
                             cwd=tmp_path)
    assert code == 0, err[-2000:]
    assert "objects:          1 keyed, 2 bodies" in out and "frames:           6" in out
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "o" / "baked.blend"))
    box = bpy.data.objects["Box"]
    assert box.hullabaloo.bake.baked
    bpy.context.scene.frame_set(6)
    assert box.matrix_world.translation.z < 3.0
    # A scene with nothing to bake: a one-line error and exit code 1, no traceback.
    hb.empty_scene()
    empty = tmp_path / "empty.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(empty))
    code, out, err = run_cli("bake", str(empty), "--out", str(tmp_path / "e"), "--no-render",
                             cwd=tmp_path)
    assert code == 1
    assert "Nothing to bake" in err and "Traceback" not in err
