"""Joints in real Blender: Blender's Connect tool -> import -> bake holds the chain; every
constraint setting imported (breaking threshold and motor impulses to forces); bad joints
reported by object name while the bake goes on; re-bake from a frame carries the joints,
broken ones included."""
import hb_blender as hb
import numpy as np

bpy = hb.bpy


def _rigid(obj, kind='ACTIVE'):
    with bpy.context.temp_override(object=obj, active_object=obj, selected_objects=[obj]):
        bpy.ops.rigidbody.object_add(type=kind)
    obj.rigid_body.collision_shape = 'BOX'
    return obj


def _connect(objs, active, **kw):
    for o in bpy.context.scene.objects:
        o.select_set(o in objs)
    bpy.context.view_layer.objects.active = active
    assert bpy.ops.rigidbody.connect(**kw) == {'FINISHED'}
    return [o for o in bpy.context.scene.objects if o.rigid_body_constraint is not None]


def _anchor_gap(empty, frames):
    """Worst distance, over the frames, between the joint point carried by object1 and by
    object2 (each fixed in its body at the first frame)."""
    c = empty.rigid_body_constraint
    scene = bpy.context.scene
    scene.frame_set(frames[0])
    p = np.array(empty.matrix_world.translation)
    local = [np.linalg.inv(np.array(o.matrix_world)) @ np.append(p, 1.0)
             for o in (c.object1, c.object2)]
    worst = 0.0
    for f in frames:
        scene.frame_set(f)
        a, b = (np.array(o.matrix_world) @ lp for o, lp in zip((c.object1, c.object2), local))
        worst = max(worst, float(np.linalg.norm(a[:3] - b[:3])))
    return worst


def test_connect_chain_is_imported_and_holds_while_swinging():
    """Blender's Connect (chain by distance, pivot at the centre) on a passive anchor and
    eight 1 kg cubes lying horizontally: imported and baked, the chain swings down and every
    link holds (Blender's own run of this scene stretches links by up to 50 mm)."""
    scene = hb.empty_scene(frame_end=48)
    bpy.ops.rigidbody.world_add()
    cubes = []
    for i in range(9):
        o = hb.add_box(f"Link{i}", size=(0.4, 0.4, 0.4), location=(0.5 * i, 0, 5),
                       enabled=False)
        cubes.append(_rigid(o, 'PASSIVE' if i == 0 else 'ACTIVE'))
    empties = _connect(cubes, cubes[0], con_type='POINT', pivot_type='CENTER',
                       connection_pattern='CHAIN_DISTANCE')
    assert len(empties) == 8
    for o in scene.objects:
        o.select_set(False)
    assert bpy.ops.hullabaloo.import_rigid_body(all=True) == {'FINISHED'}
    assert all(e.hullabaloo_joint.enabled and e.hullabaloo_joint.type == 'POINT'
               for e in empties)
    summary = hb.bake()
    # Connect's pivots lie in the 0.1 m gaps between the 0.4 m cubes: close enough to say
    # nothing (addon.joints.PIVOT_SHARE).
    assert summary["problems"] == []
    frames = list(range(1, 49))
    lowest = min(scene.frame_set(f) or cubes[-1].matrix_world.translation.z for f in frames)
    assert lowest < 2.0   # it did swing down (the chain is 4 m long)
    gaps = [_anchor_gap(e, frames) for e in empties]
    print(f"\nConnect chain: worst link gap {1000 * max(gaps):.2f} mm")
    assert max(gaps) < 5e-3


def test_import_carries_every_setting_and_converts_impulses_to_forces():
    scene = hb.empty_scene(frame_end=10)
    bpy.ops.rigidbody.world_add()
    rbw = scene.rigidbody_world
    rbw.substeps_per_frame = 10
    a = _rigid(hb.add_box("DoorFrame", location=(0, 0, 1), enabled=False), 'PASSIVE')
    b = _rigid(hb.add_box("Door", location=(3, 0, 1), enabled=False))
    (e,) = _connect([a, b], b, con_type='HINGE', pivot_type='CENTER',
                    connection_pattern='SELECTED_TO_ACTIVE')
    c = e.rigid_body_constraint
    c.use_limit_ang_z = True
    c.limit_ang_z_lower, c.limit_ang_z_upper = -0.5, 1.2
    c.use_breaking, c.breaking_threshold = True, 2.0
    c.disable_collisions = False
    c.use_override_solver_iterations = True
    (m,) = [o for o in _connect([a, b], b, con_type='MOTOR', pivot_type='CENTER',
                                connection_pattern='SELECTED_TO_ACTIVE') if o != e]
    cm = m.rigid_body_constraint
    cm.use_motor_ang, cm.motor_ang_target_velocity, cm.motor_ang_max_impulse = True, 3.0, 0.5
    for o in scene.objects:
        o.select_set(False)
    assert bpy.ops.hullabaloo.import_rigid_body(all=True) == {'FINISHED'}
    js = e.hullabaloo_joint
    assert js.enabled and js.type == 'HINGE' and js.object1 == c.object1
    assert js.use_limit_ang_z
    assert np.allclose((js.limit_ang_z_lower, js.limit_ang_z_upper), (-0.5, 1.2))
    assert not js.disable_collisions
    per_second = 24 * 10
    assert abs(js.break_force - 2.0 * per_second) < 1e-3 and js.use_breaking
    jm = m.hullabaloo_joint
    assert jm.type == 'MOTOR' and jm.use_motor_ang
    # Bullet's motor uses Blender's "max impulse" as a force bound (measured against
    # Blender's own run in test_joints_motors.py): copied unchanged.
    assert jm.motor_ang_max_torque == 0.5
    notes = hb.pkg().addon.joints.import_constraint(e, scene)
    assert any("solver_iterations" in n for n in notes)
    # The engine gets the same numbers.
    kw = hb.pkg().addon.joints.joint_kwargs(js)
    # Bullet's hinge angle is object1 relative to object2: mirrored for the engine.
    assert list(kw["limits"]) == ["ang_z"] and np.allclose(kw["limits"]["ang_z"], (-1.2, 0.5))
    assert kw["break_force"] == js.break_force


def test_bad_joints_are_reported_by_name_and_the_bake_goes_on():
    scene = hb.empty_scene(frame_end=6)
    box = hb.add_box("Box", location=(0, 0, 2))
    ground = hb.add_box("Ground", size=(4, 4, 1), location=(0, 0, -0.5), body_type='PASSIVE')
    wall = hb.add_box("Wall", size=(1, 1, 1), location=(3, 0, 0.5), body_type='PASSIVE')
    plain = hb.add_box("NotSimulated", location=(6, 0, 2), enabled=False)

    def joint(name, o1, o2, **kw):
        e = bpy.data.objects.new(name, None)
        scene.collection.objects.link(e)
        js = e.hullabaloo_joint
        js.enabled, js.type, js.object1, js.object2 = True, 'FIXED', o1, o2
        for k, v in kw.items():
            setattr(js, k, v)
        return e
    joint("NoSecond", box, None)
    joint("SameTwice", box, box)
    joint("ToNonBody", box, plain)
    joint("PassivePair", ground, wall)
    joint("BadLimits", box, ground, type='HINGE', use_limit_ang_z=True,
          limit_ang_z_lower=1.0, limit_ang_z_upper=-1.0)
    summary = hb.bake()
    text = "\n".join(str(p) for p in summary["problems"])
    for name in ("NoSecond", "SameTwice", "ToNonBody", "PassivePair", "BadLimits"):
        assert name in text, text
    assert "NotSimulated" in text and "lower" in text
    scene.frame_set(6)
    assert box.matrix_world.translation.z < 2.0   # baked, falling: no joint was made


def baked_glued_block():
    """A 6 kg block glued to the end of a passive beam by a fixed joint (Empty "Glue") that
    breaks above 30 N (58.9 N of weight: it breaks in the first frames), baked over 30
    frames. Returns (scene, block, the joint's settings)."""
    scene = hb.empty_scene(frame_end=30)
    beam = hb.add_box("Beam", size=(2, 0.5, 0.5), location=(0, 0, 3), body_type='PASSIVE')
    block = hb.add_box("Block", size=(0.5, 0.5, 0.5), location=(1.25, 0, 3), mass=6.0)
    e = bpy.data.objects.new("Glue", None)
    scene.collection.objects.link(e)
    e.location = (1.0, 0, 3)
    js = e.hullabaloo_joint
    js.enabled, js.type, js.object1, js.object2 = True, 'FIXED', beam, block
    js.use_breaking, js.break_force = True, 30.0
    scene.frame_set(1)
    hb.bake()
    return scene, block, js


def test_rebake_from_a_frame_keeps_broken_joints_broken():
    """A block glued to a passive beam with a weak fixed joint breaks in the first frames and
    falls; re-baking from a later frame continues from the stored state (the joint stays
    broken): the keys equal the full bake's."""
    scene, block, js = baked_glued_block()
    full = hb.keys_of(block)
    scene.frame_set(30)
    assert block.matrix_world.translation.z < 1.0
    scene.frame_set(15)
    assert bpy.ops.hullabaloo.rebake_from_frame() == {'FINISHED'}
    again = hb.keys_of(block)
    for ch in full:
        np.testing.assert_array_equal(again[ch]["co"], full[ch]["co"], err_msg=ch)
    # Unbreakable, it holds.
    js.use_breaking = False
    scene.frame_set(1)
    hb.bake()
    scene.frame_set(30)
    assert abs(block.matrix_world.translation.z - 3.0) < 0.01


def test_hullabaloo_connect_builds_a_chain_by_distance_that_holds():
    """hullabaloo.connect on five shuffled cubes (chain by distance from the active one,
    pivots at the centres): Empties in their own collection join neighbours in order, and the
    baked chain, pinned at its first cube, keeps every link."""
    scene = hb.empty_scene(frame_end=24)
    xs = [0.0, 2.0, 0.5, 1.5, 1.0]            # created out of order on purpose
    cubes = [hb.add_box(f"C{i}", size=(0.3, 0.3, 0.3), location=(x, 0, 3))
             for i, x in enumerate(xs)]
    cubes[0].hullabaloo.body_type = 'PASSIVE'
    for o in scene.objects:
        o.select_set(True)
    bpy.context.view_layer.objects.active = cubes[0]
    assert bpy.ops.hullabaloo.connect(joint_type='POINT', pivot_type='CENTER',
                                      connection_pattern='CHAIN_DISTANCE') == {'FINISHED'}
    coll = bpy.data.collections["Hullabaloo Joints"]
    empties = list(coll.objects)
    pairs = sorted((e.hullabaloo_joint.object1.name, e.hullabaloo_joint.object2.name)
                   for e in empties)
    # From C0 (x 0): C2 (0.5), C4 (1.0), C3 (1.5), C1 (2.0).
    assert pairs == sorted([("C0", "C2"), ("C2", "C4"), ("C4", "C3"), ("C3", "C1")])
    for e in empties:
        js = e.hullabaloo_joint
        mid = (js.object1.matrix_world.translation + js.object2.matrix_world.translation) / 2
        assert (e.matrix_world.translation - mid).length < 1e-6
    summary = hb.bake()
    assert summary["problems"] == []
    worst = 0.0
    for e in empties:
        js = e.hullabaloo_joint
        scene.frame_set(1)
        p = np.append(np.array(e.matrix_world.translation), 1.0)
        la = np.linalg.inv(np.array(js.object1.matrix_world)) @ p
        lb = np.linalg.inv(np.array(js.object2.matrix_world)) @ p
        for f in range(1, 25):
            scene.frame_set(f)
            a = np.array(js.object1.matrix_world) @ la
            b = np.array(js.object2.matrix_world) @ lb
            worst = max(worst, float(np.linalg.norm(a[:3] - b[:3])))
    scene.frame_set(24)
    assert cubes[1].matrix_world.translation.z < 2.5   # the free end swung down
    assert worst < 5e-3


def test_overlay_draws_joints_of_the_bake_and_of_a_debug_frame():
    """A glued block breaks off: the overlay's joint anchors sit on the glue point at the
    first frame, follow the block after the break in the broken colour, and a Debug Frame
    (re-simulated, no bake) shows the same joint."""
    scene, block, js = baked_glued_block()
    import importlib
    ov = hb.pkg().addon.overlay
    for name in ("handler", "source"):
        importlib.import_module(f"{hb.MODULE}.addon.overlay.{name}")
    jg = importlib.import_module(f"{hb.MODULE}.addon.overlay.joint_geometry")

    def anchors(frame):
        scene.frame_set(frame)
        layers, src = ov.handler.build_layers(scene, bpy.context, frame)
        (a,) = [ly for ly in layers if ly.name == "joint_anchors"]
        return a, src
    a1, src = anchors(1)
    assert src.startswith("bake")
    np.testing.assert_allclose(a1.coords, [(1.0, 0, 3), (1.0, 0, 3)], atol=1e-5)
    a30, _ = anchors(30)
    assert np.allclose(a30.colours, jg.BROKEN_COLOUR)
    scene.frame_set(30)
    on_block = np.array(block.matrix_world) @ np.array([-0.25, 0, 0, 1.0])
    np.testing.assert_allclose(a30.coords[1], on_block[:3], atol=1e-4)
    # No bake: a Debug Frame re-simulates and draws the same joint.
    assert bpy.ops.hullabaloo.clear_bake() == {'FINISHED'}
    ov.source.debug_frame(scene, bpy.context, 30)
    layers, src = ov.handler.build_layers(scene, bpy.context, 30)
    assert src == "debug frame"
    (dbg,) = [ly for ly in layers if ly.name == "joint_anchors"]
    np.testing.assert_allclose(dbg.coords, a30.coords, atol=1e-4)
    assert np.allclose(dbg.colours, jg.BROKEN_COLOUR)
