"""Bad input gets a clear message naming the object and saying what to do; the bad object
is skipped or the bake stops before touching anything; never a traceback. Also: importing
Blender Rigid Body settings."""

import hb_blender as hb
import numpy as np
import pytest

bpy = hb.bpy


def problems():
    return [(p.level, p.name, p.message) for p in hb.pkg().addon.ops.LAST["problems"]]


def problem_of(name):
    found = [p for p in problems() if p[1] == name]
    assert found, (name, problems())
    return found[0]


def base_scene():
    scene = hb.empty_scene(frame_end=12)
    hb.add_box("Ground", size=(20, 20, 1), location=(0, 0, -0.5), body_type='PASSIVE')
    good = hb.add_box("Good", location=(0, 0, 3))
    return scene, good


def _mesh(name, verts, faces=()):
    m = bpy.data.meshes.new(name)
    m.from_pydata(verts, [], list(faces))
    m.update()
    return m


def test_each_bad_object_is_skipped_with_a_message_and_the_rest_bakes():
    scene, good = base_scene()
    nan = hb.add_box("NaNBox", location=(5, 0, 3))
    nan.location.x = float("nan")
    flat0 = hb.add_box("ZeroScale", location=(-5, 0, 3))
    flat0.scale = (1, 0, 1)
    huge = hb.add_box("Huge", location=(0, 9, 3))
    huge.scale = (1e6, 1e6, 1e6)
    tiny = hb.add_box("Tiny", location=(0, -9, 3))
    tiny.scale = (1e-6, 1e-6, 1e-6)
    hb.add_object("EmptyObj", None, location=(3, 3, 3))
    hb.add_object("CurveObj", bpy.data.curves.new("c", 'CURVE'), location=(3, -3, 3))
    hb.add_object("NoVerts", _mesh("nv", []), location=(-3, 3, 3))
    hb.add_object("Line", _mesh("ln", [(0, 0, 0), (1, 0, 0)]), location=(-3, -3, 3),
                         shape='CONVEX_HULL')
    hb.bake()
    expect = {
        "NaNBox": "non-finite", "ZeroScale": "zero scale", "Huge": "too large",
        "Tiny": "too small", "EmptyObj": "empty object", "CurveObj": "curve object",
        "NoVerts": "no vertices", "Line": "point or a line",
    }
    for name, words in expect.items():
        level, _, msg = problem_of(name)
        assert level == "ERROR" and words in msg and "Skipped" in msg, (name, msg)
        assert not bpy.data.objects[name].hullabaloo.bake.baked
        assert bpy.data.objects[name].animation_data is None
    assert good.hullabaloo.bake.baked
    scene.frame_set(12)
    assert good.matrix_world.translation.z < 3.0


def test_flat_negative_and_sheared_objects_bake_with_a_note():
    scene, good = base_scene()
    plane = hb.add_object("Card", _mesh("card", [(-1, -1, 0), (1, -1, 0), (1, 1, 0), (-1, 1, 0)],
                                        [(0, 1, 2, 3)]), location=(4, 0, 2), shape='CONVEX_HULL')
    mirrored = hb.add_box("Mirrored", location=(-4, 0, 2))
    mirrored.scale = (-1, 1, 1)
    parent = hb.add_object("Squash", None, location=(0, 6, 0), enabled=False)
    parent.scale = (3, 1, 1)
    child = hb.add_box("Sheared", location=(0, 0, 2))
    child.rotation_euler = (0, 0, 0.6)
    child.parent = parent
    hb.bake()
    assert "flat" in problem_of("Card")[2] and problem_of("Card")[0] == "INFO"
    assert "negative scale" in problem_of("Mirrored")[2]
    assert "sheared" in problem_of("Sheared")[2] and problem_of("Sheared")[0] == "WARNING"
    for o in (plane, mirrored, child):
        assert o.hullabaloo.bake.baked
    scene.frame_set(12)
    assert np.linalg.det(hb.matrix(mirrored)[:3, :3]) < 0  # stays mirrored
    assert plane.matrix_world.translation.z < 2.0


@pytest.mark.parametrize("case", ["zero_range", "nothing_enabled", "all_bad"])
def test_bake_stops_before_touching_anything(case):
    scene, good = base_scene()
    if case == "zero_range":
        scene.frame_end = scene.frame_start
        words = "no length"
    elif case == "nothing_enabled":
        for o in scene.objects:
            o.hullabaloo.enabled = False
        words = "no object has Hullabaloo enabled"
    else:
        good.scale = (0, 0, 0)
        words = "zero scale"
    scene.frame_set(1)
    before = hb.snapshot(scene)
    with pytest.raises(RuntimeError, match=words):
        bpy.ops.hullabaloo.bake()
    hb.assert_same(before, hb.snapshot(scene))


def test_import_rigid_body_copies_settings_and_world():
    scene = hb.empty_scene(frame_end=20)
    objs = {}
    for name, rb_type, shape, kin in (("Act", 'ACTIVE', 'SPHERE', False),
                                      ("Pas", 'PASSIVE', 'MESH', False),
                                      ("Kin", 'PASSIVE', 'BOX', True),
                                      ("Cyl", 'ACTIVE', 'CYLINDER', False),
                                      ("Off", 'ACTIVE', 'CONE', False)):
        o = hb.add_box(name, enabled=False, location=(len(objs) * 3, 0, 1))
        bpy.context.view_layer.objects.active = o
        o.select_set(True)
        bpy.ops.rigidbody.object_add(type=rb_type)
        o.select_set(False)
        rb = o.rigid_body
        rb.collision_shape = shape
        rb.kinematic = kin
        rb.enabled = name != "Off"  # "Dynamic" unticked
        rb.mass, rb.friction, rb.restitution = 3.5, 0.25, 0.6
        rb.linear_damping, rb.angular_damping = 0.2, 0.3
        rb.collision_collections = [i in (1, 4) for i in range(20)]
        objs[name] = o
    rbw = scene.rigidbody_world
    rbw.substeps_per_frame = 7
    rbw.point_cache.frame_start, rbw.point_cache.frame_end = 5, 15
    with pytest.raises(RuntimeError, match="Nothing selected"):
        bpy.ops.hullabaloo.import_rigid_body(all=False)
    assert not any(o.hullabaloo.enabled for o in objs.values())
    objs["Act"].select_set(True)
    assert bpy.ops.hullabaloo.import_rigid_body(all=False) == {'FINISHED'}
    assert objs["Act"].hullabaloo.enabled and not objs["Pas"].hullabaloo.enabled
    assert bpy.ops.hullabaloo.import_rigid_body(all=True) == {'FINISHED'}
    s = {k: o.hullabaloo for k, o in objs.items()}
    assert [s[k].body_type for k in ("Act", "Pas", "Kin", "Cyl", "Off")] == \
        ['DYNAMIC', 'PASSIVE', 'ANIMATED', 'DYNAMIC', 'ANIMATED']
    assert [s[k].shape for k in ("Act", "Pas", "Kin", "Cyl", "Off")] == \
        ['SPHERE', 'MESH', 'BOX', 'CYLINDER', 'CONE']   # exact shapes since issue 14
    for v in s.values():
        assert v.enabled
        assert (v.mass, v.friction, v.restitution) == pytest.approx((3.5, 0.25, 0.6))
        assert (v.linear_damping, v.angular_damping) == pytest.approx((0.2, 0.3))
        assert [i for i, f in enumerate(v.collision_collections) if f] == [1, 4]
    hs = scene.hullabaloo
    # Blender's 7 Bullet substeps are not copied: ours stay automatic (see the operator).
    assert (hs.use_scene_frame_range, hs.frame_start, hs.frame_end, hs.substeps) == \
        (False, 5, 15, 0)
    assert not rbw.enabled  # so Blender's simulation does not override our keys
    hb.bake()
    assert hb.pkg().addon.ops.LAST["summary"]["frame_start"] == 5
    assert hb.keys_of(objs["Act"])[("location", 2)]["co"][:, 0].tolist() == \
        [float(f) for f in range(5, 16)]


def test_an_engine_failure_mid_bake_is_reported_and_changes_nothing(monkeypatch):
    scene, good = base_scene()
    scene.frame_set(1)
    before = hb.snapshot(scene)
    World = type(hb.engine_world(scene))
    real_step = World.step
    calls = {"n": 0}

    def failing_step(self, dt, record=None):
        calls["n"] += 1
        if calls["n"] == 5:
            raise FloatingPointError("solver diverged")
        return real_step(self, dt, record)

    monkeypatch.setattr(World, "step", failing_step)
    with pytest.raises(RuntimeError, match=r"failed after frame 5.*solver diverged.*nothing was changed"):
        bpy.ops.hullabaloo.bake()
    hb.assert_same(before, hb.snapshot(scene))
