"""Registration of the viewport overlays (see this package's __init__ for its modules).

register() / unregister() add and remove everything: classes, the scene property, the draw
handler, app handlers and the ``hullabaloo_debug_frame`` command-line command.
"""
import bpy

from . import handler, props, render, ui

_STATE = {"cli": None}


def register():
    props.register()
    for cls in render.CLASSES:
        bpy.utils.register_class(cls)
    ui.register()
    handler.register()
    if hasattr(bpy.utils, "register_cli_command"):
        _STATE["cli"] = bpy.utils.register_cli_command("hullabaloo_debug_frame", render.command)


def unregister():
    if _STATE["cli"] is not None:
        bpy.utils.unregister_cli_command(_STATE["cli"])
        _STATE["cli"] = None
    handler.unregister()
    ui.unregister()
    for cls in reversed(render.CLASSES):
        bpy.utils.unregister_class(cls)
    props.unregister()
