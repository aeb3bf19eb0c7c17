"""Registration of the Blender side: settings, panels, operators, handlers, headless command.

register() / unregister() are exact mirrors: every class, property, menu entry, handler,
draw handler and command-line command added here is removed again, so disabling the
extension leaves Blender as it found it.
"""
import bpy
from bpy.app.handlers import persistent

from . import cache, cli, compiler, fracture, joints, ops, preview, props, settle, ui
from .overlay import registration as overlay

_STATE = {"cli": None}


def _package():
    return __package__.rsplit(".", 1)[0]


@persistent
def _on_save_pre(filepath="", *args):
    cache.persist_all(_package(), filepath or bpy.data.filepath)


@persistent
def _on_load_post(*args):
    # Caches belong to the file that made them; a newly loaded file reads its own on demand.
    cache.clear_memory()
    preview.forget_all()


def register():
    compiler.register()
    props.register()
    joints.register()
    fracture.register()
    for cls in ops.CLASSES + settle.CLASSES:
        bpy.utils.register_class(cls)
    ui.register()
    overlay.register()
    bpy.app.handlers.save_pre.append(_on_save_pre)
    bpy.app.handlers.load_post.append(_on_load_post)
    preview.register()
    if hasattr(bpy.utils, "register_cli_command"):
        _STATE["cli"] = bpy.utils.register_cli_command("hullabaloo", cli.blender_command)


def unregister():
    if _STATE["cli"] is not None:
        bpy.utils.unregister_cli_command(_STATE["cli"])
        _STATE["cli"] = None
    for lst, fn in ((bpy.app.handlers.save_pre, _on_save_pre),
                    (bpy.app.handlers.load_post, _on_load_post)):
        while fn in lst:
            lst.remove(fn)
    preview.unregister()
    overlay.unregister()
    ui.unregister()
    for cls in reversed(ops.CLASSES + settle.CLASSES):
        bpy.utils.unregister_class(cls)
    fracture.unregister()
    joints.unregister()
    props.unregister()
    cache.clear_memory()
    compiler.unregister()
