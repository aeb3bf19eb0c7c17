"""Registration of the viewport overlays (see this package's __init__ for its modules).

geometry.py  pure numpy: a frame's data -> draw primitives (unit-tested without a GPU)
source.py    a frame's data: bake cache, Debug Frame re-simulation, or the live scene
draw.py      gpu batches and drawing (shaders created lazily, state restored)
handler.py   the SpaceView3D POST_VIEW draw handler (batches rebuilt only on change)
props.py     settings: Scene.hullabaloo_overlay
ui.py        the Overlays popover section
render.py    Render Debug Frame / Debug Frame operators and the headless command

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
