"""The overlay in real Blender (bpy 4.2 and 5.2 wheels, the installed extension): drawing into
a GPUOffScreen with pixel checks at points projected by Blender's own camera maths, the
Render Debug Frame operator's PNG, Debug Frame re-simulation, batch caching and clean
register / unregister."""
import os

import hb_blender as hb
import numpy as np
import pytest

bpy = hb.bpy
from bpy_extras.object_utils import world_to_camera_view
from mathutils import Vector

MAGENTA = (1.0, 0.0, 1.0, 1.0)
W, H = 200, 150
FRAME = 12


def overlay_mod():
    return hb.pkg().addon.overlay


def scene_box_on_ground(record=True):
    scene = hb.empty_scene(frame_end=24)
    scene.hullabaloo.keep_debug_records = record
    scene.hullabaloo.use_sleeping = False
    hb.add_box("Ground", size=(10, 10, 1), location=(0, 0, -0.5), body_type="PASSIVE")
    hb.add_box("Cube", size=(1, 1, 1), location=(0.3, -0.2, 0.5))
    cam = bpy.data.objects.new("Cam", bpy.data.cameras.new("Cam"))
    scene.collection.objects.link(cam)
    cam.location = (3.0, -4.0, 3.5)
    cam.rotation_mode = 'QUATERNION'
    cam.rotation_quaternion = (Vector((0.3, -0.2, 0.2)) - cam.location).to_track_quat('-Z', 'Y')
    scene.camera = cam
    scene.render.resolution_x, scene.render.resolution_y = W, H
    scene.render.resolution_percentage = 100
    s = scene.hullabaloo_overlay
    s.show_shapes = False
    s.show_normals = False
    s.show_friction = False
    s.contact_colour_by = 'FIXED'
    s.contact_colour = MAGENTA
    s.contact_size = 7.0
    return scene


def bottom_corners(obj):
    """World corners of the cube's bottom face, from Blender's evaluated matrix (mathutils)."""
    mw = obj.matrix_world
    return [mw @ Vector((sx * 0.5, sy * 0.5, -0.5)) for sx in (-1, 1) for sy in (-1, 1)]


def pixel_of(scene, co):
    """Pixel (column, row from the bottom) of a world point, by Blender's own projection."""
    v = world_to_camera_view(scene, scene.camera, co)
    return int(v.x * W), int(v.y * H)


def near(px, xy, r=1):
    x, y = xy
    return px[max(0, y - r):y + r + 1, max(0, x - r):x + r + 1].reshape(-1, 4)


_BAKED = {}


@pytest.fixture
def baked():
    """The box-on-ground scene baked with debug records, at FRAME (rebuilt when a test
    loaded another file)."""
    scene = _BAKED.get("scene")
    try:
        ok = scene is not None and scene.name and "Cube" in scene.objects
    except ReferenceError:
        ok = False
    if not ok:
        scene = _BAKED["scene"] = scene_box_on_ground()
        hb.bake()
    scene.frame_set(FRAME)
    return scene


def test_register_unregister_is_clean():
    hb.session()
    assert hasattr(bpy.types.Scene, "hullabaloo_overlay")
    assert overlay_mod().handler._STATE["handle"] is not None
    assert hasattr(bpy.ops.hullabaloo, "render_debug_frame")
    old = overlay_mod().handler
    dep = old._on_depsgraph_update
    assert dep in bpy.app.handlers.depsgraph_update_post
    bpy.ops.preferences.addon_disable(module=hb.MODULE)
    try:
        assert old._STATE["handle"] is None  # the draw handler was removed
        assert not hasattr(bpy.types.Scene, "hullabaloo_overlay")
        assert dep not in bpy.app.handlers.depsgraph_update_post
        assert "HULLABALOO_PT_overlay" not in dir(bpy.types)
        assert "HULLABALOO_OT_render_debug_frame" not in dir(bpy.types)
    finally:
        bpy.ops.preferences.addon_enable(module=hb.MODULE)
    mod = overlay_mod()
    assert mod.handler._STATE["handle"] is not None
    assert hasattr(bpy.types.Scene, "hullabaloo_overlay")


def test_contacts_drawn_where_the_cube_corners_project(baked):
    scene = baked
    ov = overlay_mod()
    # The GPU context needs one render first in background mode (also the picture's base).
    ov.render.workbench_render(scene, W, H)
    layers, src = ov.handler.build_layers(scene, bpy.context)
    assert src == "bake"
    contacts = [ly for ly in layers if ly.name == "contacts"]
    assert len(contacts) == 1 and len(contacts[0]) == 4
    view, proj = ov.render.camera_matrices(scene, bpy.context.evaluated_depsgraph_get(), W, H)
    px = ov.render.draw_offscreen(layers, view, proj, W, H)
    cube = scene.objects["Cube"]
    corners = bottom_corners(cube)
    for co in corners:
        xy = pixel_of(scene, co)
        hit = near(px, xy)
        # Premultiplied magenta at full alpha: red = blue = alpha, no green.
        best = hit[np.argmax(hit[:, 3])]
        np.testing.assert_allclose(best, MAGENTA, atol=0.02, err_msg=str(xy))
    # Nothing else is drawn: away from the four corners the offscreen stays transparent.
    drawn = np.argwhere(px[..., 3] > 0.01)
    corner_px = np.array([pixel_of(scene, co) for co in corners])  # (x, y)
    d = np.abs(drawn[:, None, ::-1] - corner_px[None]).max(axis=2).min(axis=1)
    assert d.max() <= 5  # point sprites of 7 px around each projected corner
    # The overlay module's own projection agrees with Blender's camera maths.
    vp = np.array(proj) @ np.array(view)
    mine, _ = ov.geometry.project(np.array([tuple(c) for c in corners]), vp, W, H)
    theirs = np.array([tuple(world_to_camera_view(scene, scene.camera, c))[:2]
                       for c in corners]) * [W, H]
    np.testing.assert_allclose(mine, theirs, atol=1e-3)


def test_render_debug_frame_png(baked, tmp_path):
    scene = baked
    path = str(tmp_path / "frame.png")
    assert bpy.ops.hullabaloo.render_debug_frame(filepath=path, frame=FRAME) == {'FINISHED'}
    assert scene.frame_current == FRAME
    assert os.path.getsize(path) < 300_000
    img = bpy.data.images.load(path)
    try:
        assert tuple(img.size) == (W, H)
        px = np.empty(W * H * 4, dtype=np.float32)
        img.pixels.foreach_get(px)
    finally:
        bpy.data.images.remove(img)
    px = px.reshape(H, W, 4)
    for co in bottom_corners(scene.objects["Cube"]):
        hit = near(px, pixel_of(scene, co))
        err = np.abs(hit[:, :3] - MAGENTA[:3]).max(axis=1)
        assert err.min() < 0.02
    # Away from the overlay the picture is the Workbench render: the grey ground, opaque.
    ground = pixel_of(scene, Vector((-2.0, 2.0, 0.0)))
    g = px[ground[1], ground[0]]
    assert g[3] == pytest.approx(1.0) and abs(g[0] - g[2]) < 0.05 and g[1] > 0.05


def test_debug_frame_resimulates_the_same_contacts(baked):
    ov = overlay_mod()
    rec = hb.pkg().addon.cache.get(baked).record(FRAME)
    ref = np.asarray(rec.positions, dtype=np.float64)
    # The same scene baked without records: no contacts until Debug Frame re-simulates.
    scene = scene_box_on_ground(record=False)
    hb.bake()
    scene.frame_set(FRAME)
    _, data, src = ov.source.frame_data(scene, bpy.context)
    assert src == "bake (no contacts)" and data["record"] is None
    assert bpy.ops.hullabaloo.debug_frame() == {'FINISHED'}
    _, data, src = ov.source.frame_data(scene, bpy.context)
    assert src == "debug frame"
    got = np.asarray(data["record"].positions, dtype=np.float64)
    assert got.shape == ref.shape == (4, 3)
    order = lambda p: p[np.lexsort(p.T[::-1])]  # noqa: E731
    np.testing.assert_allclose(order(got), order(ref), atol=1e-6)
    # The debug record is the engine's full one (friction impulses, AABBs kept).
    full = data["record"]
    assert full.friction_impulses.shape == (4, 2) and full.aabbs.shape == (2, 2, 3)


def test_batches_rebuilt_only_on_change(baked):
    scene = baked
    ov = overlay_mod()
    h = ov.handler
    ov.render.workbench_render(scene, 32, 32)
    h.invalidate()
    h.draw_callback()
    first = h._STATE["batches"]
    assert first is not None and len(first) >= 1
    h.draw_callback()
    assert h._STATE["batches"] is first          # nothing changed: cached
    scene.frame_set(FRAME + 1)
    h.draw_callback()
    second = h._STATE["batches"]
    assert second is not first                   # frame changed
    scene.hullabaloo_overlay.show_shapes = True
    h.draw_callback()
    assert h._STATE["batches"] is not second     # a setting changed
    scene.hullabaloo_overlay.show_shapes = False
    scene.frame_set(FRAME)


def test_selected_pair_queries_and_command(baked, tmp_path):
    scene = baked
    ov = overlay_mod()
    for o in scene.objects:
        o.select_set(o.name in ("Ground", "Cube"))
    layers, _ = ov.handler.build_layers(scene, bpy.context)
    names = {ly.name for ly in layers}
    assert {"simplex", "sat_reference", "sat_incident"} <= names
    ref = next(ly for ly in layers if ly.name == "sat_reference").coords
    assert np.abs(ref[:, 2]).max() < 1e-4  # the ground's top face carries the contact
    for o in scene.objects:
        o.select_set(False)
    out = str(tmp_path / "cmd.png")
    code = ov.render.command([out, "--frame", str(FRAME), "--size", "96x72",
                              "--set", "show_aabbs=1", "--set", "show_shapes=true"])
    assert code == 0 and os.path.isfile(out)
    assert ov.render.LAST["size"] == (96, 72)
    assert {"aabbs", "shapes", "contacts"} <= {ly.name for ly in ov.render.LAST["layers"]}
    assert ov.render.command([out, "--set", "no_such_setting=1"]) == 2
