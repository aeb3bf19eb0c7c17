"""Live Preview and deforming colliders in real Blender (the bpy wheel, headless:
scene.frame_set runs the frame_change_post handlers, view_layer.update the depsgraph ones).

Preview: forward frames simulate and equal a Bake of the same scene (engine states bit for
bit, keys against the preview's matrices at every frame); going back re-simulates nothing;
an edit at frame k keeps frames up to k and re-simulates after it; a jump simulates one frame
per call; off restores transforms and leaves animation untouched; a 100-body bench figure.
Deforming: a rising shape key, Displace modifier or armature lifts a box resting on a passive
plane (and the preview follows it as the bake does);
Mesh Source Base / Deform / Final give different shapes; a changing vertex count is reported
by name and falls back to the first-frame shape; the import maps Blender's settings.
"""
import time

import hb_blender as hb
import numpy as np
import pytest

bpy = hb.bpy


def preview_mod():
    return hb.pkg().addon.preview


def grid_plane(name, n=6, size=4.0, location=(0, 0, 0), **kw):
    """A passive n x n grid (Mesh shape) centred on its origin, in the XY plane."""
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=n, y_subdivisions=n, size=size,
                                    location=location)
    obj = bpy.context.active_object
    obj.name = name
    s = obj.hullabaloo
    s.enabled, s.body_type, s.shape = True, "PASSIVE", "MESH"
    for k, v in kw.items():
        setattr(s, k, v)
    return obj


def preview_scene(frame_end=24):
    """Boxes dropped on a ground, one pushed by an animated paddle (a kinematic body whose
    target is sampled every frame)."""
    scene = hb.empty_scene(frame_end=frame_end)
    hb.add_box("Ground", size=(12, 12, 1), location=(0, 0, -0.5), body_type="PASSIVE")
    boxes = [hb.add_box(f"Box{i}", size=(1, 1, 1), location=(1.3 * i - 2, 0.2 * i, 1 + i))
             for i in range(4)]
    paddle = hb.add_box("Paddle", size=(0.4, 3, 1), location=(-5, 0, 0.5),
                        body_type="ANIMATED")
    paddle.keyframe_insert("location", frame=1)
    paddle.location.x = 0.0
    paddle.keyframe_insert("location", frame=frame_end)
    scene.frame_set(1)
    return scene, boxes, paddle


def pose_matrices(objs):
    return np.array([hb.matrix(o) for o in objs])


def test_preview_equals_bake_goes_back_without_simulating_and_restores():
    scene, boxes, paddle = preview_scene()
    before = hb.snapshot(scene)
    pv = preview_mod()
    scene.hullabaloo.live_preview = True
    pv.sync(scene)   # the message bus does this interactively
    p = pv.get(scene)
    assert p is not None and p.error is None and p.steps == 0
    shown = {1: pose_matrices(boxes)}
    for f in range(2, 25):
        scene.frame_set(f)
        assert p.steps == f - 1                      # one step per frame forward
        shown[f] = pose_matrices(boxes)
    assert np.all(shown[24][:, 2, 3] < shown[1][:, 2, 3] - 0.4)   # they fell
    # The paddle (animated) is never posed by the preview: it follows its own keys.
    assert paddle.matrix_world.translation.x == pytest.approx(0.0, abs=1e-6)
    # Back: the cached pose, nothing simulated.
    for f in (10, 3, 17):
        scene.frame_set(f)
        np.testing.assert_array_equal(pose_matrices(boxes), shown[f])
    assert p.steps == 23
    states = [dict(st) for st in p.states]
    # Off: every object's own transform back; the paddle's animation untouched.
    scene.frame_set(1)
    scene.hullabaloo.live_preview = False
    pv.sync(scene)
    assert pv.get(scene) is None
    hb.assert_same(before, hb.snapshot(scene))
    scene.frame_set(17)
    np.testing.assert_allclose(pose_matrices(boxes)[:, :3, 3],
                               [tuple(o.location) for o in boxes], atol=1e-6)
    assert not any(o.animation_data for o in boxes)  # never a key
    # A Bake of the same scene: the same engine states bit for bit, keys = preview poses.
    hb.bake()
    baked = hb.pkg().addon.cache.get(scene)
    assert baked.names == p.names and len(baked.states) == len(states) == 24
    for f, (a, b) in enumerate(zip(baked.states, states), start=1):
        for key in ("pos", "q", "vel"):
            np.testing.assert_array_equal(a[key], b[key], err_msg=f"frame {f} {key}")
    for f in range(1, 25):
        scene.frame_set(f)
        np.testing.assert_allclose(pose_matrices(boxes), shown[f], atol=2e-5,
                                   err_msg=f"frame {f}")


def test_edit_at_frame_k_keeps_frames_up_to_k_and_jumps_are_bounded():
    scene, boxes, _ = preview_scene(frame_end=20)
    pv = preview_mod()
    scene.hullabaloo.live_preview = True   # a frame change starts it as well as sync()
    # A jump far ahead: one frame per frame change, the rest one per catch-up tick (the
    # timer's function; timers do not run headless), showing the latest cached frame.
    scene.frame_set(12)
    p = pv.get(scene)
    assert p.steps == 1 and p.last == 2
    np.testing.assert_allclose(pose_matrices(boxes), _pose(p, boxes, 2), atol=1e-6)
    ticks = 0
    while pv.catch_up() is not None:
        ticks += 1
    assert p.steps == 11 and p.last == 12 and ticks == 9
    np.testing.assert_allclose(pose_matrices(boxes), _pose(p, boxes, 12), atol=1e-6)
    for f in range(13, 21):
        scene.frame_set(f)
    old = [dict(st) for st in p.states]
    # An edit at frame 8 (a setting, which Blender sends no depsgraph update for).
    scene.frame_set(8)
    boxes[3].hullabaloo.friction = 0.05
    boxes[3].hullabaloo.mass = 7.0
    scene.frame_set(9)                  # the next frame change sees it: 9 is re-simulated
    assert p.last == 9 and p.steps == 20
    for f in range(1, 9):
        for key in ("pos", "q", "vel"):
            np.testing.assert_array_equal(p.states[f - 1][key], old[f - 1][key])
    for f in range(10, 21):
        scene.frame_set(f)
    assert p.steps == 31
    assert not np.array_equal(p.states[19]["pos"], old[19]["pos"])
    # An edit of a transform at frame 15 (a depsgraph update): the ground sinks 0.3 m.
    # Frames up to 15 are kept; from 16 the boxes fall onto the ground where it is now.
    scene.frame_set(15)
    kept = [dict(st) for st in p.states[:15]]
    ground = bpy.data.objects["Ground"]
    ground.location.z -= 0.3
    bpy.context.view_layer.update()
    assert p.last == 15 and p.job is None
    for f, st in enumerate(kept):
        np.testing.assert_array_equal(p.states[f]["pos"], st["pos"])
    for f in range(16, 21):
        scene.frame_set(f)
    assert p.steps == 36
    g, b0 = p.names.index("Ground"), p.names.index("Box0")
    # The edited frame's state takes the scenery where it is now, the frames before do not.
    assert p.states[13]["pos"][g, 2] == pytest.approx(-0.5)
    assert [st["pos"][g, 2] for st in p.states[14:]] == pytest.approx([-0.8] * 6)
    assert p.states[14]["pos"][b0, 2] == pytest.approx(0.5, abs=0.03)   # it rested there
    assert p.states[19]["pos"][b0, 2] < old[19]["pos"][b0, 2] - 0.2      # and followed it down
    ground.location.z += 0.3            # back, at frame 20: nothing after 20 to drop
    bpy.context.view_layer.update()
    assert p.last == 20 and p.job is None and p.steps == 36
    # Our own posing is not an edit: going back and forth keeps the cache.
    for f in (17, 18, 19, 20, 12):
        scene.frame_set(f)
    bpy.context.view_layer.update()
    assert p.last == 20 and p.steps == 36
    scene.hullabaloo.live_preview = False
    pv.sync(scene)


def _pose(p, boxes, f):
    bodies, pos, ori = p.frames[f - p.start]
    order = [b.name for b in bodies]
    quat = hb.engine().core.quat
    m = np.tile(np.eye(4), (len(bodies), 1, 1))
    m[:, :3, :3] = quat.to_matrix(ori) @ np.array([b.shape_matrix for b in bodies])
    m[:, :3, 3] = pos
    return m[[order.index(o.name) for o in boxes]]


def test_preview_bench_100_bodies():
    """Bench figure (not an assertion of speed): per-frame cost of simulating and of showing
    cached frames for 100 boxes dropped in a 10 x 10 grid."""
    scene = hb.empty_scene(frame_end=12)
    hb.add_box("Ground", size=(30, 30, 1), location=(0, 0, -0.5), body_type="PASSIVE")
    mesh = hb.box_mesh("unit", (1, 1, 1))
    boxes = [hb.add_object(f"B{i}", mesh, location=(1.5 * (i % 10) - 7, 1.5 * (i // 10) - 7,
                                                    0.6 + 0.1 * (i % 3)))
             for i in range(100)]
    base = []
    for f in list(range(1, 13)) * 2:   # the frame change alone (no preview)
        t0 = time.perf_counter()
        scene.frame_set(f)
        base.append(time.perf_counter() - t0)
    scene.frame_set(1)
    pv = preview_mod()
    t0 = time.perf_counter()
    scene.hullabaloo.live_preview = True
    pv.sync(scene)   # the message bus does this interactively
    t_on = time.perf_counter() - t0
    p = pv.get(scene)
    sim = []
    for f in range(2, 13):
        t0 = time.perf_counter()
        scene.frame_set(f)
        sim.append(time.perf_counter() - t0)
    show = []
    for f in list(range(1, 13)) * 2:
        t0 = time.perf_counter()
        scene.frame_set(f)
        show.append(time.perf_counter() - t0)
    assert p.steps == 11 and len(boxes) == 100
    print(f"\nlive preview, 100 boxes: turn on {1e3 * t_on:.0f} ms; frame change simulating "
          f"{1e3 * np.median(sim):.1f} ms (median of 11; engine step {1e3 * p.sim_seconds / 11:.1f}"
          f" ms); frame change showing a cached frame {1e3 * np.median(show):.2f} ms "
          f"(without the preview {1e3 * np.median(base):.2f} ms)")
    scene.hullabaloo.live_preview = False
    pv.sync(scene)


# -- deforming colliders -------------------------------------------------------------------
def _box_on(plane, z0=0.5):
    return hb.add_box("Crate", size=(1, 1, 1), location=(0.3, -0.2, z0 + 0.001),
                      linear_damping=0.0)


def _evaluated_height(obj, x, y):
    """Height of obj's evaluated surface above (x, y) (its vertices nearest that point)."""
    ev = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
    co = np.array([tuple(ev.matrix_world @ v.co) for v in ev.data.vertices])
    d = np.hypot(co[:, 0] - x, co[:, 1] - y)
    return float(co[np.argsort(d)[:4], 2].mean())


def make_linear(idd):
    """idd's keys interpolate linearly (a constant surface speed between two keys)."""
    for fc in hb.pkg().addon.animation.fcurve_collection(idd):
        for kp in fc.keyframe_points:
            kp.interpolation = 'LINEAR'


def armature_lift(plane, rise, f0, f1):
    """An armature whose one bone (weighting every vertex) moves up by rise from f0 to f1,
    deforming the plane through an Armature modifier."""
    arm = bpy.data.objects.new("Rig", bpy.data.armatures.new("Rig"))
    bpy.context.scene.collection.objects.link(arm)
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode='EDIT')
    bone = arm.data.edit_bones.new("Lift")
    bone.head, bone.tail = (0, 0, 0), (0, 1, 0)   # along Y: its local Y is the world's Y
    bpy.ops.object.mode_set(mode='OBJECT')
    group = plane.vertex_groups.new(name="Lift")
    group.add(list(range(len(plane.data.vertices))), 1.0, 'REPLACE')
    mod = plane.modifiers.new("Rig", 'ARMATURE')
    mod.object = arm
    pb = arm.pose.bones["Lift"]
    pb.location = (0, 0, 0)
    pb.keyframe_insert("location", frame=f0)
    pb.location = (0, 0, rise)      # bone-local Z is the world's Z for a bone along +Y
    pb.keyframe_insert("location", frame=f1)
    make_linear(arm)
    return arm


@pytest.mark.parametrize("how", ["shape_key", "displace", "armature"])
def test_rising_deforming_plane_lifts_the_box(how):
    """The surface rises 0.3 m over 24 frames (0.3 m/s). The push is positional (see
    engine/features/deform.py): the box rides a little into the rising surface, by about 21 mm per m/s
    of surface speed, and rests on it once it stops."""
    scene = hb.empty_scene(frame_end=36)
    plane = grid_plane("Floor", use_deform=True,
                       mesh_source="FINAL" if how == "displace" else "DEFORM")
    if how == "shape_key":
        plane.shape_key_add(name="Basis")
        up = plane.shape_key_add(name="Up")
        for p in up.data:
            p.co.z += 0.3
        up.value = 0.0
        up.keyframe_insert("value", frame=6)
        up.value = 1.0
        up.keyframe_insert("value", frame=30)
        make_linear(plane.data.shape_keys)
    elif how == "armature":
        armature_lift(plane, 0.3, 6, 30)
    else:
        mod = plane.modifiers.new("Rise", 'DISPLACE')
        mod.direction, mod.mid_level, mod.strength = 'Z', 0.0, 0.0
        mod.keyframe_insert("strength", frame=6)
        mod.strength = 0.3
        mod.keyframe_insert("strength", frame=30)
        make_linear(plane)
    crate = _box_on(plane)
    scene.frame_set(1)
    if how == "shape_key":   # the live preview follows the deforming floor as the bake does
        pv = preview_mod()
        scene.hullabaloo.live_preview = True
        pv.sync(scene)
        for f in range(2, 37):
            scene.frame_set(f)
        states = [dict(st) for st in pv.get(scene).states]
        scene.frame_set(1)
        scene.hullabaloo.live_preview = False
        pv.sync(scene)
    summary = hb.bake()["summary"]
    assert not [m for m in summary["problems"] if "Floor" in m], summary["problems"]
    if how == "shape_key":
        baked = hb.pkg().addon.cache.get(scene).states
        assert len(baked) == len(states) == 36
        for a, b in zip(baked, states):
            np.testing.assert_array_equal(a["pos"], b["pos"])
            np.testing.assert_array_equal(a["q"], b["q"])
    err = []
    for f in range(1, 37):
        scene.frame_set(f)
        surface = _evaluated_height(plane, *crate.matrix_world.translation[:2])
        err.append(crate.matrix_world.translation.z - 0.5 - surface)
    err = np.array(err)
    print(f"\n{how}: crate bottom - surface over 36 frames: min {1e3 * err.min():.1f} mm, "
          f"max {1e3 * err.max():.1f} mm")
    assert _evaluated_height(plane, 0.3, -0.2) == pytest.approx(0.3, abs=1e-5)
    assert np.all(np.abs(err[1:]) < 8e-3), err     # within a few mm at every frame
    assert np.all(np.abs(err[31:]) < 1e-3), err    # resting on it once it stopped


def test_mesh_source_base_deform_final_and_fallbacks():
    """A passive plane with a static Displace (+0.3 m) and a box dropped on it: Base ignores
    the modifier, Deform and Final include it; Deform with a Subdivision reports it; Deforming
    on a Convex Hull is reported as ignored."""
    sim = hb.pkg().addon.simulate
    rest = {}
    for source, subdiv in (("BASE", False), ("DEFORM", False), ("FINAL", False),
                           ("DEFORM", True)):
        scene = hb.empty_scene(frame_end=30)
        plane = grid_plane("Terrain", n=4, mesh_source=source)
        mod = plane.modifiers.new("Lift", 'DISPLACE')
        mod.direction, mod.mid_level, mod.strength = 'Z', 0.0, 0.3
        if subdiv:
            plane.modifiers.new("Sub", 'SUBSURF').levels = 1
        crate = _box_on(plane, z0=0.8)
        hull = hb.add_box("Hull", size=(1, 1, 1), location=(8, 0, 0), body_type="PASSIVE",
                          shape="CONVEX_HULL", use_deform=True)
        del hull
        job = sim.BakeJob(scene, bpy.context.evaluated_depsgraph_get(), record=False)
        problems = [str(p) for p in job.prepare()]
        job.advance(30)
        rest[(source, subdiv)] = job.positions[-1][0, 2]
        assert any(p.startswith("Hull: Deforming is ignored: Deforming works with the Mesh "
                                "shape only") for p in problems), problems
        said = [p for p in problems if p.startswith("Terrain: Mesh Source Deform cannot")]
        assert bool(said) == subdiv, problems
        if subdiv:
            assert "'Sub'" in said[0] or "Sub" in said[0]
        del crate
    assert rest[("BASE", False)] == pytest.approx(0.5, abs=3e-3)
    assert rest[("DEFORM", False)] == pytest.approx(0.8, abs=3e-3)
    assert rest[("FINAL", False)] == pytest.approx(0.8, abs=3e-3)
    assert rest[("DEFORM", True)] == pytest.approx(0.8, abs=3e-3)


def test_changing_vertex_count_is_reported_and_falls_back_to_the_first_frame():
    scene = hb.empty_scene(frame_end=30)
    plane = grid_plane("Morph", use_deform=True, mesh_source="FINAL")
    plane.shape_key_add(name="Basis")
    up = plane.shape_key_add(name="Up")
    for p in up.data:
        p.co.z += 0.2
    up.value = 0.0
    up.keyframe_insert("value", frame=1)
    up.value = 1.0
    up.keyframe_insert("value", frame=8)
    sub = plane.modifiers.new("Sub", 'SUBSURF')
    sub.levels = 0
    sub.keyframe_insert("levels", frame=11)
    sub.levels = 1
    sub.keyframe_insert("levels", frame=12)
    crate = _box_on(plane)
    scene.frame_set(1)
    summary = hb.bake()["summary"]
    said = [m for m in summary["problems"] if m.startswith("Morph: ")]
    assert len(said) == 1 and "at frame 12" in said[0] and "first-frame shape" in said[0], \
        summary["problems"]
    assert summary["frames"] == 30                     # the bake went on
    z = []
    for f in (10, 30):
        scene.frame_set(f)
        z.append(crate.matrix_world.translation.z)
    assert z[0] == pytest.approx(0.7, abs=8e-3)        # lifted by the shape key
    assert z[1] == pytest.approx(0.5, abs=8e-3)        # back on the first-frame shape


def test_import_maps_deforming_and_mesh_source():
    scene = hb.empty_scene(frame_end=10)
    plane = grid_plane("Skin", n=3)
    plane.hullabaloo.enabled = False
    bpy.context.view_layer.objects.active = plane
    plane.select_set(True)
    bpy.ops.rigidbody.object_add(type='PASSIVE')
    rb = plane.rigid_body
    rb.collision_shape = 'MESH'
    for source, deform in (("DEFORM", True), ("BASE", False), ("FINAL", True)):
        rb.mesh_source, rb.use_deform = source, deform
        assert bpy.ops.hullabaloo.import_rigid_body(all=False) == {'FINISHED'}
        s = plane.hullabaloo
        assert (s.shape, s.mesh_source, s.use_deform) == ("MESH", source, deform)
    del scene
