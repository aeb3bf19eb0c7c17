"""The 3D Viewport draw handler (SpaceView3D, WINDOW region, POST_VIEW).

Each redraw compares a cheap key (scene, frame, settings, selection, cache and debug-frame
identity, live-edit counter) with the one the batches were built for; only a change rebuilds
them (reading the frame's data, building the layers, uploading the batches). Orbiting the
view or moving the mouse redraws from the cached batches.

A failure to build is reported once on the console and the overlay stays empty until the key
changes, so a broken frame can never flood the console or break the viewport.
"""
import traceback

import bpy
from bpy.app.handlers import persistent

from .. import cache
from . import draw, geometry, props, source

_STATE = {"handle": None, "key": None, "batches": None, "info": "", "layers": None}


def build_layers(scene, context, frame=None, settings=None):
    """Layers of a frame with the scene's overlay settings; also returns the source name."""
    s = settings or scene.hullabaloo_overlay
    model, data, src = source.frame_data(scene, context, frame)
    sel = source.selected_rows(context, model) if s.show_queries else None
    layers = geometry.frame_layers(model, data, props.options(s), selected=sel)
    return layers, src


def _key(scene, context, s):
    c = cache.get(scene)
    dbg = source.debug_result(scene)
    sel = ()
    if s.show_queries:
        sel = tuple(sorted(o.name for o in (getattr(context, "selected_objects", None) or ())))
    live = source._COUNTER["depsgraph"] if c is None or not c.has_frame(scene.frame_current) \
        else None
    return (scene.name, scene.frame_current, props.settings_key(s), sel, id(c),
            None if c is None else (c.frame_end, len(c.states)),
            None if dbg is None else (dbg["frame"], id(dbg["record"])), live)


def invalidate():
    _STATE["key"] = None
    _STATE["batches"] = None


def draw_callback():
    context = bpy.context
    scene = context.scene
    s = getattr(scene, "hullabaloo_overlay", None) if scene is not None else None
    if s is None or not s.show:
        return
    key = _key(scene, context, s)
    if key != _STATE["key"]:
        _STATE["key"] = key
        _STATE["batches"] = None
        try:
            layers, src = build_layers(scene, context)
            _STATE["batches"] = draw.Batches(layers)
            _STATE["info"] = src
        except Exception:  # never break the viewport; say it once per key
            print("Hullabaloo overlay: could not build the overlay for frame "
                  f"{scene.frame_current}:\n{traceback.format_exc()}")
            return
    region = context.region
    if region is None or _STATE["batches"] is None:
        return
    draw.draw_batches(_STATE["batches"], (region.width, region.height), s.in_front)


@persistent
def _on_depsgraph_update(*_args):
    source.on_depsgraph_update()


_APP_HANDLERS = (("depsgraph_update_post", _on_depsgraph_update),)


def register():
    if _STATE["handle"] is None:
        _STATE["handle"] = bpy.types.SpaceView3D.draw_handler_add(
            draw_callback, (), 'WINDOW', 'POST_VIEW')
    for name, fn in _APP_HANDLERS:
        lst = getattr(bpy.app.handlers, name)
        if fn not in lst:
            lst.append(fn)


def unregister():
    if _STATE["handle"] is not None:
        bpy.types.SpaceView3D.draw_handler_remove(_STATE["handle"], 'WINDOW')
        _STATE["handle"] = None
    for name, fn in _APP_HANDLERS:
        lst = getattr(bpy.app.handlers, name)
        while fn in lst:
            lst.remove(fn)
    invalidate()
    draw.forget_shaders()
    source.clear()
