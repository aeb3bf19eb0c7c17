"""The headless command in plain Python with the bpy wheel (what the README's main job runs):
a subprocess, like a user's shell, on the demo scene and on a given .blend."""
import os
import subprocess
import sys

import hb_blender as hb
import numpy as np

bpy = hb.bpy
CLI = os.path.join(hb.ROOT, "hullabaloo_cli.py")


def run_cli(*args, cwd):
    env = hb.cli_env(os.path.join(str(cwd), "user"))
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


# -- files set up with Blender's Rigid Body only (issue 26, part 2) ---------------------------

def test_rigid_body_file_bakes_with_import_rigid_body_and_says_how_without(tmp_path):
    from test_addon_wedge import read_json, rigid_body_scene
    src = rigid_body_scene(tmp_path / "rigid.blend", frames=8)
    # Without the option: one line saying what the file has and what brings it in.
    code, _, err = run_cli("bake", src, "--out", str(tmp_path / "no"), "--no-render",
                           cwd=tmp_path)
    assert code == 1 and "Traceback" not in err
    for words in ("Nothing to bake: no object has Hullabaloo enabled",
                  "4 object(s) with Blender's Rigid Body and 1 rigid-body constraint(s)",
                  "Import Blender Rigid Body", "--import-rigid-body"):
        assert words in err, err
    # With it: the bodies and the constraint are Hullabaloo's, in the baked file only.
    code, out, err = run_cli("bake", src, "--out", str(tmp_path / "o"), "--no-render",
                             "--import-rigid-body", cwd=tmp_path)
    assert code == 0, err[-2000:]
    assert "objects:          2 keyed, 4 bodies" in out and "frames:           8 (1-8)" in out
    imported = read_json(tmp_path / "o" / "summary.json")["settings"]["import_rigid_body"]
    assert (imported["bodies"], imported["constraints"]) == (4, 1)
    assert "Blender's Rigid Body World turned off" in imported["general"]
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "o" / "baked.blend"))
    scene = bpy.context.scene
    assert not scene.rigidbody_world.enabled      # so its simulation does not override keys
    scene.frame_set(8)
    t = 7 / 24
    free, hung = bpy.data.objects["Free"], bpy.data.objects["Hung"]
    drop = 3.0 - free.matrix_world.translation.z
    assert abs(drop - 9.81 * t * t / 2) < 0.02 * drop       # free fall under the scene's g
    assert np.linalg.norm(np.array(hung.matrix_world.translation) - (2, 0, 3)) < 1e-3
    bpy.ops.wm.open_mainfile(filepath=src)               # the source file is left as it was
    assert not any(o.hullabaloo.enabled for o in bpy.data.objects)
    assert bpy.context.scene.rigidbody_world.enabled


def _blend_bytes(path):
    """A .blend's data, decompressed (Blender 5.x writes zstd by default)."""
    import zstandard
    data = path.read_bytes()
    if data[:4] == b"\x28\xb5\x2f\xfd":
        data = zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True).read()
    return data


def _as_saved_by(data, major, minor, file_format=1):
    """A .blend of this Blender (its data) with the header of one saved by Blender
    major.minor: 5.0's header (format version file_format) for 5.0 and later, else 4.x's."""
    if data.startswith(b"BLENDER17-"):
        rest = data[17:]
    else:
        assert data[:9] in (b"BLENDER-v", b"BLENDER_v") and data[9:12].isdigit()
        rest = data[12:]
        if major < 5:
            return data[:9] + b"%d%02d" % (major, minor) + rest
    return b"BLENDER17-%02dv%02d%02d" % (file_format, major, minor) + rest


def _unreadable_newer_blend(tmp_path):
    """(path, (major, minor)) of a .blend saved by a newer Blender that this one refuses.
    Blender 4.x: Blender 5.2 writes it (the other test environment's bpy, in a subprocess;
    without it, this Blender's file under 5.2's header, which is what 4.x refuses). Blender
    5.x, with no newer Blender to run: its own file under the header of a Blender two major
    versions on that changed the file format again, as 5.0 did."""
    path = tmp_path / "newer.blend"
    other = os.path.join(hb.ROOT, ".venv313", "bin", "python")
    if bpy.app.version < (5, 0, 0) and os.path.isfile(other):
        done = subprocess.run([other, "-c", "import bpy, sys; bpy.ops.wm.read_homefile("
                               "use_empty=True); bpy.ops.wm.save_as_mainfile(filepath="
                               "sys.argv[1])", str(path)], capture_output=True, text=True,
                              env=dict(os.environ, BLENDER_USER_RESOURCES=str(tmp_path / "u")),
                              timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        return path, (5, 2)
    hb.empty_scene()
    mine = tmp_path / "mine.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(mine))
    major, minor = bpy.app.version[:2]
    saved, file_format = ((5, 2), 1) if major < 5 else ((major + 2, minor), 2)
    path.write_bytes(_as_saved_by(_blend_bytes(mine), *saved, file_format=file_format))
    return path, saved


def test_a_file_from_a_newer_blender_is_named_as_that(tmp_path):
    from test_addon_wedge import read_json, small_scene
    path, (major, minor) = _unreadable_newer_blend(tmp_path)
    here = "{}.{}".format(*bpy.app.version[:2])
    blend_file = hb.pkg().addon.blend_file
    assert blend_file.saved_version(str(path)) == (major, minor)
    said = (f"saved by Blender {major}.{minor}, newer than this Blender {here}",
            f"with Blender {major}.{minor} or later")
    code, _, err = run_cli("bake", str(path), "--out", str(tmp_path / "o"), cwd=tmp_path)
    line = [ln for ln in err.splitlines() if ln.startswith("hullabaloo:")]
    assert code == 2 and len(line) == 1 and all(w in line[0] for w in said), err
    assert "not a blend file" not in line[0] and "not supported" not in line[0]
    assert all(w in read_json(tmp_path / "o" / "summary.json")["error"] for w in said)
    code, _, err = run_cli("wedge", str(path), "--out", str(tmp_path / "w"), "--seeds", "2",
                           cwd=tmp_path)
    assert code == 2 and all(w in err for w in said) and "Traceback" not in err, err
    # A newer file this Blender still opens (same file format): baked, with a note.
    mine = small_scene(tmp_path / "small.blend", frames=4)
    assert blend_file.saved_version(mine) == tuple(bpy.app.version[:2])
    v = bpy.app.version
    later = (v[0], v[1] + 1)
    opens = tmp_path / "later.blend"
    opens.write_bytes(_as_saved_by(_blend_bytes(tmp_path / "small.blend"), *later))
    code, out, err = run_cli("bake", str(opens), "--out", str(tmp_path / "l"), "--no-render",
                             cwd=tmp_path)
    assert code == 0 and "objects:          4 keyed" in out, err[-2000:]
    assert f"note: {opens} was saved by Blender {later[0]}.{later[1]}, newer than this " \
        f"Blender {here}" in err, err
    # A file that is no .blend at all keeps Blender's own reason, and no version is made up.
    junk = tmp_path / "junk.blend"
    junk.write_bytes(b"not a blend file at all" * 10)
    assert blend_file.saved_version(str(junk)) is None
    code, _, err = run_cli("bake", str(junk), "--out", str(tmp_path / "j"), cwd=tmp_path)
    assert code == 2 and "cannot open" in err and "saved by" not in err, err
