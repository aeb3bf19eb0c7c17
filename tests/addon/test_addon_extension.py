"""The extension as a package: built and validated by Blender's own tool, installed from the
zip into a sandboxed user directory, registered and unregistered cleanly."""
import os
import sys
import tomllib
import zipfile

import hb_blender as hb
import pytest

bpy = hb.bpy


def test_zip_is_built_validated_and_minimal():
    s = hb.session()
    with zipfile.ZipFile(s["zip"]) as z:
        names = z.namelist()
        manifest = tomllib.loads(z.read("blender_manifest.toml").decode())
    assert manifest["id"] == "hullabaloo"
    assert manifest["license"] == ["SPDX:GPL-3.0-or-later"]
    assert manifest["blender_version_min"] == "4.2.0"
    assert {"addon/__init__.py", "engine/__init__.py", "engine/world/world.py", "__init__.py"} <= set(names)
    top = {n.split("/")[0] for n in names}
    assert not top & {"tests", "bench", "docs", "tools", ".ci", ".git", "scripts", "dist"}
    assert not any(n.startswith(".venv") or "__pycache__" in n or n.endswith(".pyc") for n in names)


def test_installed_into_the_sandbox_and_enabled():
    s = hb.session()
    if hb._USER is not None:
        assert os.path.realpath(hb.addon_dir()).startswith(os.path.realpath(s["user_dir"]))
    assert hb.MODULE in bpy.context.preferences.addons
    assert "hullabaloo" in bpy.types.Object.bl_rna.properties
    assert "hullabaloo" in bpy.types.Scene.bl_rna.properties
    # The public interface names of the issue.
    props = bpy.types.Object.bl_rna.properties["hullabaloo"].fixed_type.properties
    for name in ("enabled", "body_type", "shape", "mass", "friction", "restitution"):
        assert name in props
    assert {i.identifier for i in props["body_type"].enum_items} == {"DYNAMIC", "PASSIVE", "ANIMATED"}
    assert {i.identifier for i in props["shape"].enum_items} == {
        "CONVEX_HULL", "BOX", "SPHERE", "CAPSULE", "MESH", "COMPOUND",
        "CYLINDER", "CONE"}   # exact curved shapes since issue 14
    for op in ("bake", "clear_bake", "import_rigid_body", "rebake_from_frame"):
        assert hasattr(bpy.types, "HULLABALOO_OT_" + op), op


def _registered_names():
    return sorted(n for n in dir(bpy.types) if n.startswith("HULLABALOO_"))


def _our_handlers():
    """(handler list, function name) of every app handler defined by the extension."""
    out = []
    for name in dir(bpy.app.handlers):
        lst = getattr(bpy.app.handlers, name)
        if isinstance(lst, list):
            out += [(name, f.__name__) for f in lst
                    if getattr(f, "__module__", "").startswith(hb.MODULE)]
    return sorted(out)


def _menu_funcs():
    return [f.__name__ for f in bpy.types.VIEW3D_MT_object._dyn_ui_initialize()]


def test_disable_removes_everything_and_enable_restores_it():
    hb.session()
    classes = _registered_names()
    assert len(classes) >= 10
    assert "object_menu" in _menu_funcs()
    ours = _our_handlers()
    assert ours  # save_pre (cache persistence), load_post (cache reset) at least
    bpy.ops.preferences.addon_disable(module=hb.MODULE)
    try:
        assert _registered_names() == []
        assert "hullabaloo" not in bpy.types.Object.bl_rna.properties
        assert "hullabaloo" not in bpy.types.Scene.bl_rna.properties
        assert "object_menu" not in _menu_funcs()
        assert _our_handlers() == []
    finally:
        bpy.ops.preferences.addon_enable(module=hb.MODULE)
    assert _registered_names() == classes
    assert "object_menu" in _menu_funcs()
    assert _our_handlers() == ours
    hb._SESSION["pkg"] = sys.modules[hb.MODULE]


def test_cli_command_is_registered_and_runs(tmp_path, capsys):
    # `blender -b --command hullabaloo ...` calls this very function with the arguments.
    cli = hb.pkg().addon.cli
    assert hb.pkg().addon.registration._STATE["cli"] is not None
    with pytest.raises(SystemExit):
        cli.run(["--help"])
    assert cli.blender_command(["bake", "--help"]) == 0
    assert "--out" in capsys.readouterr().out


def test_bake_and_save_write_nothing_into_the_addon_directory(tmp_path):
    before = sorted(os.walk(hb.addon_dir()))
    scene = hb.empty_scene(frame_end=10)
    hb.add_box("Cube", location=(0, 0, 3))
    scene.hullabaloo.keep_debug_records = True
    hb.bake()
    blend = tmp_path / "scene.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    after = sorted(os.walk(hb.addon_dir()))
    assert [(d, sorted(f)) for d, _, f in before] == [(d, sorted(f)) for d, _, f in after]
    # The cache went next to the .blend instead, and the scene points at it.
    cache_file = bpy.path.abspath(scene.hullabaloo.cache_file)
    assert os.path.isfile(cache_file) and cache_file.startswith(str(tmp_path))
