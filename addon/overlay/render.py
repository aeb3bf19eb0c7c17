"""Pictures of a frame with its overlay, headless or not: for bug reports, docs and tests.

``render_debug_frame`` renders the scene from its camera with Workbench, draws the overlay
layers with the camera's view-projection into a ``gpu.types.GPUOffScreen``, composites the
two ("over", the offscreen holding premultiplied colour) and saves a PNG.

Order matters in background mode: the gpu module refuses to draw until a GPU context exists,
and the Workbench render creates one; so the render always comes first.

Operators: ``hullabaloo.render_debug_frame(filepath=..., frame=...)`` and
``hullabaloo.debug_frame()`` (re-simulate up to the current frame, keeping the engine's full
record, when the bake kept none). Command line (Blender 4.2+):
``blender -b [file.blend] --command hullabaloo_debug_frame OUT.png [--frame N] [--size WxH]
[--demo]``.
"""
import argparse
import os
import sys
import tempfile

import bpy
import numpy as np
from bpy.props import BoolProperty, IntProperty, StringProperty

from .. import cache
from ..simulate import BakeError
from . import draw, handler, source

# The last picture's camera matrices and size (tests project points with them).
LAST = {"view": None, "projection": None, "size": None, "source": None, "filepath": None}


def render_size(scene, size=None):
    if size:
        return int(size[0]), int(size[1])
    r = scene.render
    pct = r.resolution_percentage / 100.0
    return max(1, int(r.resolution_x * pct)), max(1, int(r.resolution_y * pct))


def camera_matrices(scene, depsgraph, width, height):
    """(view (4, 4), projection (4, 4)) of the scene camera for a width x height picture."""
    cam = scene.camera
    if cam is None:
        raise BakeError("The scene has no camera: add one (Add > Camera) and make it active "
                        "(View > Cameras > Set Active Object as Camera) to render a picture.")
    view = cam.matrix_world.inverted()
    proj = cam.calc_matrix_camera(depsgraph, x=width, y=height,
                                  scale_x=scene.render.pixel_aspect_x,
                                  scale_y=scene.render.pixel_aspect_y)
    return view, proj


def workbench_render(scene, width, height):
    """Render the current frame with Workbench; (height, width, 4) float pixels, bottom row
    first (Blender's image order). The scene's engine, size and output path are restored."""
    r = scene.render
    saved = (r.engine, r.resolution_x, r.resolution_y, r.resolution_percentage, r.filepath,
             r.image_settings.file_format, r.use_file_extension)
    tmp = os.path.join(tempfile.mkdtemp(prefix="hullabaloo_frame_"), "render.png")
    try:
        r.engine = 'BLENDER_WORKBENCH'
        r.resolution_x, r.resolution_y, r.resolution_percentage = width, height, 100
        r.image_settings.file_format = 'PNG'
        r.use_file_extension = False
        r.filepath = tmp
        bpy.ops.render.render(write_still=True, scene=scene.name)
    finally:
        (r.engine, r.resolution_x, r.resolution_y, r.resolution_percentage, r.filepath,
         r.image_settings.file_format, r.use_file_extension) = saved
    img = bpy.data.images.load(tmp)
    try:
        px = np.empty(img.size[0] * img.size[1] * 4, dtype=np.float32)
        img.pixels.foreach_get(px)
        w, h = img.size
    finally:
        bpy.data.images.remove(img)
        try:
            os.remove(tmp)
            os.rmdir(os.path.dirname(tmp))
        except OSError:
            pass
    return px.reshape(h, w, 4)


def draw_offscreen(layers, view, projection, width, height, in_front=True):
    """Draw layers into a transparent GPUOffScreen with the given matrices and read it back:
    (height, width, 4) float RGBA, premultiplied by alpha, bottom row first. Needs a GPU
    context (in background mode: after one Workbench render)."""
    import gpu
    off = gpu.types.GPUOffScreen(width, height)
    try:
        with off.bind():
            fb = gpu.state.active_framebuffer_get()
            fb.clear(color=(0.0, 0.0, 0.0, 0.0), depth=1.0)
            with gpu.matrix.push_pop(), gpu.matrix.push_pop_projection():
                gpu.matrix.load_matrix(view)
                gpu.matrix.load_projection_matrix(projection)
                draw.draw_layers(layers, (width, height), in_front)
            buf = fb.read_color(0, 0, width, height, 4, 0, 'FLOAT')
            px = _buffer_to_array(buf)
    finally:
        off.free()
    return px.reshape(height, width, 4)


def _buffer_to_array(buf):
    """A gpu Buffer as a float32 array. Blender 4.2's Buffer exports zeros through the buffer
    protocol (checked against to_list), so older versions take the slower list path."""
    if bpy.app.version >= (5, 0, 0):
        return np.array(buf, dtype=np.float32)
    return np.array(buf.to_list(), dtype=np.float32)


def composite(under, over):
    """``over`` (premultiplied RGBA) over ``under`` (straight RGBA)."""
    a = over[..., 3:4]
    rgb = over[..., :3] + under[..., :3] * (1.0 - a)
    alpha = a + under[..., 3:4] * (1.0 - a)
    return np.concatenate((np.clip(rgb, 0.0, 1.0), np.clip(alpha, 0.0, 1.0)), axis=-1)


def save_png(pixels, filepath):
    h, w = pixels.shape[:2]
    img = bpy.data.images.new("hullabaloo_debug_frame", w, h, alpha=True)
    try:
        img.pixels.foreach_set(np.ascontiguousarray(pixels, dtype=np.float32).ravel())
        img.filepath_raw = filepath
        img.file_format = 'PNG'
        img.save()
    finally:
        bpy.data.images.remove(img)


def render_debug_frame(scene, context, filepath, frame=None, size=None, simulate=True):
    """Render ``frame`` (default: the current one) with its overlay to ``filepath`` (PNG).

    When the frame has no contact record (a bake without debug records, or no bake) and
    ``simulate`` is set, the scene is first re-simulated up to the frame (a Debug Frame).
    Returns the composited (height, width, 4) pixels. The current frame is put back."""
    frame = scene.frame_current if frame is None else int(frame)
    saved_frame = (scene.frame_current, scene.frame_subframe)
    filepath = bpy.path.abspath(filepath)
    folder = os.path.dirname(filepath)
    if folder:
        os.makedirs(folder, exist_ok=True)
    try:
        if scene.frame_current != frame:
            scene.frame_set(frame)
        c = cache.get(scene)
        has_record = c is not None and c.record(frame) is not None
        if simulate and not has_record and frame > _first_frame(scene):
            source.debug_frame(scene, context, frame)
        width, height = render_size(scene, size)
        depsgraph = context.evaluated_depsgraph_get()
        view, proj = camera_matrices(scene, depsgraph, width, height)
        under = workbench_render(scene, width, height)  # also makes the GPU context
        layers, src = handler.build_layers(scene, context, frame)
        over = draw_offscreen(layers, view, proj, width, height)
        out = composite(under, over)
        save_png(out, filepath)
    finally:
        if (scene.frame_current, scene.frame_subframe) != saved_frame:
            scene.frame_set(saved_frame[0], subframe=saved_frame[1])
    LAST.update(view=np.array(view), projection=np.array(proj), size=(width, height),
                source=src, filepath=filepath, layers=layers)
    return out


def _first_frame(scene):
    from ..simulate import frame_range
    return frame_range(scene)[0]


class HULLABALOO_OT_render_debug_frame(bpy.types.Operator):
    """Render a frame from the scene camera (Workbench) with the Hullabaloo overlay drawn on \
top and save it as a PNG (works in background mode)"""
    bl_idname = "hullabaloo.render_debug_frame"
    bl_label = "Render Debug Frame"
    bl_options = {'REGISTER'}

    filepath: StringProperty(name="File Path", subtype='FILE_PATH', default="//debug_frame.png",
                             description="Where to save the PNG (// = beside the .blend)")
    frame: IntProperty(name="Frame", default=-1, min=-1048574, max=1048574,
                       description="Frame to render (-1: the current frame)")
    width: IntProperty(name="Width", default=0, min=0, max=16384,
                       description="Picture width in pixels (0: the scene's render size)")
    height: IntProperty(name="Height", default=0, min=0, max=16384,
                        description="Picture height in pixels (0: the scene's render size)")
    simulate: BoolProperty(name="Simulate If Needed", default=True,
                           description="Re-simulate up to the frame when the bake kept no "
                           "contact record for it")

    @classmethod
    def poll(cls, context):
        return context.scene is not None

    def execute(self, context):
        scene = context.scene
        frame = None if self.frame == -1 else self.frame
        size = (self.width, self.height) if self.width and self.height else None
        path = self.filepath
        if not path.lower().endswith(".png"):
            path += ".png"
        if path.startswith("//") and not bpy.data.filepath:
            path = os.path.join(tempfile.gettempdir(), path[2:])
        try:
            render_debug_frame(scene, context, path, frame, size, self.simulate)
        except BakeError as exc:
            self.report({'ERROR'}, str(exc))
            return {'CANCELLED'}
        self.report({'INFO'}, f"Saved {LAST['filepath']} ({LAST['source']})")
        return {'FINISHED'}

    def invoke(self, context, event):
        context.window_manager.fileselect_add(self)
        return {'RUNNING_MODAL'}


class HULLABALOO_OT_debug_frame(bpy.types.Operator):
    """Re-simulate from the first frame up to the current one (no keys are written) and show \
the engine's contacts, impulses and AABBs of this frame in the overlay"""
    bl_idname = "hullabaloo.debug_frame"
    bl_label = "Debug Frame"
    bl_options = {'REGISTER'}

    @classmethod
    def poll(cls, context):
        return context.scene is not None and context.mode == 'OBJECT'

    def execute(self, context):
        try:
            msg = source.debug_frame(context.scene, context)
        except BakeError as exc:
            self.report({'ERROR'}, str(exc))
            return {'CANCELLED'}
        handler.invalidate()
        for area in (context.screen.areas if context.screen else ()):
            if area.type == 'VIEW_3D':
                area.tag_redraw()
        self.report({'INFO'}, msg)
        return {'FINISHED'}


CLASSES = (HULLABALOO_OT_render_debug_frame, HULLABALOO_OT_debug_frame)


# -- command line -----------------------------------------------------------------------------
def parser():
    ap = argparse.ArgumentParser(prog="hullabaloo_debug_frame",
                                 description="Render a frame with the Hullabaloo overlay to a "
                                 "PNG (Workbench + overlay).")
    ap.add_argument("out", help="PNG file to write")
    ap.add_argument("--blend", default=None, help=".blend file to open first")
    ap.add_argument("--frame", type=int, default=None, help="frame (default: current)")
    ap.add_argument("--size", default=None, help="WxH (default: the scene's render size)")
    ap.add_argument("--demo", action="store_true", help="build and bake the add-on's demo "
                    "scene (with debug records) first")
    ap.add_argument("--frames", type=int, default=60, help="frames of the demo bake")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                    help="overlay setting, e.g. --set show_aabbs=1 --set show_velocity=1")
    return ap


def _coerce(value, current):
    if isinstance(current, bool):
        return value.lower() in ("1", "true", "yes", "on")
    if isinstance(current, int):
        return int(value)
    if isinstance(current, float):
        return float(value)
    return value


def command(argv):
    """``hullabaloo_debug_frame`` entry point; returns an exit code."""
    try:
        args = parser().parse_args(list(argv))
    except SystemExit as exc:
        return int(exc.code or 0)
    if args.blend:
        from ..blend_file import OpenError, open_blend
        try:
            open_blend(os.path.abspath(args.blend))
        except OpenError as exc:
            print(f"hullabaloo_debug_frame: {exc}", file=sys.stderr)
            return 2
    scene = bpy.context.scene
    if args.demo:
        from ..cli import build_demo_scene
        scene = build_demo_scene(args.frames)
        scene.hullabaloo.keep_debug_records = True
        bpy.ops.hullabaloo.bake()
    s = scene.hullabaloo_overlay
    for item in args.set:
        name, _, value = item.partition("=")
        if not hasattr(s, name):
            print(f"hullabaloo_debug_frame: unknown overlay setting {name!r}", file=sys.stderr)
            return 2
        setattr(s, name, _coerce(value, getattr(s, name)))
    size = tuple(int(v) for v in args.size.lower().split("x")) if args.size else None
    try:
        render_debug_frame(scene, bpy.context, os.path.abspath(args.out), args.frame, size)
    except BakeError as exc:
        print(f"hullabaloo_debug_frame: {exc}", file=sys.stderr)
        return 1
    print(f"hullabaloo_debug_frame: saved {LAST['filepath']} ({LAST['source']}, "
          f"{LAST['size'][0]}x{LAST['size'][1]})")
    return 0
