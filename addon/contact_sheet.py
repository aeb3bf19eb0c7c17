"""One labelled still per variant (``thumbnail.png``) and the wedge's ``contact_sheet.png``.

The label is burnt in by Blender's own render stamp (the "note" field, every other stamp field
off), so it is drawn with Blender's font in the same render, headless, with no image library.
Tiles are put together with numpy through ``bpy.data.images`` pixels; a variant that failed or
has no still gets a dark red tile, so the sheet keeps the wedge's order.
"""
import math
import os

import bpy
import numpy as np

THUMBNAIL = "thumbnail.png"
FAILED_RGBA = (0.35, 0.04, 0.04, 1.0)


def parse_size(size):
    try:
        w, h = (int(v) for v in size.lower().split("x"))
    except ValueError:
        raise ValueError(f"--size {size!r}: expected WIDTHxHEIGHT, e.g. 320x180") from None
    if w < 4 or h < 4:
        raise ValueError(f"--size {size!r}: at least 4x4 pixels")
    return w, h


def render_thumbnail(scene, out_dir, size, frame, label=""):
    """Render frame with Workbench to out_dir/thumbnail.png with label stamped on it; returns
    the path (None without a camera). Render settings are changed for this render only."""
    if scene.camera is None:
        return None
    w, h = parse_size(size)
    r = scene.render
    saved = {k: getattr(r, k) for k in dir(r) if k.startswith("use_stamp")}
    r.engine = 'BLENDER_WORKBENCH'
    r.resolution_x, r.resolution_y, r.resolution_percentage = w, h, 100
    r.image_settings.file_format = 'PNG'
    try:
        for k in saved:
            setattr(r, k, False)
        if label:
            r.use_stamp = r.use_stamp_note = True
            r.stamp_note_text = label
            r.stamp_font_size = max(8, h // 14)
        scene.frame_set(int(frame))
        r.filepath = os.path.join(out_dir, THUMBNAIL)
        bpy.ops.render.render(write_still=True)
    finally:
        for k, v in saved.items():
            setattr(r, k, v)
    return os.path.join(out_dir, THUMBNAIL)


def _load(path):
    img = bpy.data.images.load(path)
    try:
        px = np.empty(img.size[0] * img.size[1] * 4, dtype=np.float32)
        img.pixels.foreach_get(px)
        return px.reshape(img.size[1], img.size[0], 4)
    finally:
        bpy.data.images.remove(img)


def compose(paths, out, columns=None):
    """Tile the images (None: a failed tile) in reading order, top-left first; all tiles take
    the size of the first image found. Returns (columns, rows) or None if no image exists."""
    tiles = [_load(p) if p and os.path.isfile(p) else None for p in paths]
    first = next((t for t in tiles if t is not None), None)
    if first is None:
        return None
    h, w = first.shape[:2]
    n = len(tiles)
    cols = columns or max(1, math.ceil(math.sqrt(n)))
    rows = math.ceil(n / cols)
    sheet = np.zeros((rows * h, cols * w, 4), dtype=np.float32)
    sheet[..., 3] = 1.0
    for i, t in enumerate(tiles):
        r, c = divmod(i, cols)
        r = rows - 1 - r  # Blender's pixel rows go bottom-up: first variant at the top
        block = np.empty((h, w, 4), np.float32)
        if t is None or t.shape[:2] != (h, w):
            block[...] = FAILED_RGBA
        else:
            block[...] = t
        sheet[r * h:(r + 1) * h, c * w:(c + 1) * w] = block
    img = bpy.data.images.new("hullabaloo_contact_sheet", sheet.shape[1], sheet.shape[0],
                              alpha=True)
    try:
        img.pixels.foreach_set(sheet.ravel())
        img.filepath_raw = out
        img.file_format = 'PNG'
        img.save()
    finally:
        bpy.data.images.remove(img)
    return cols, rows
