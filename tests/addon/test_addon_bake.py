"""Baking in real Blender: keys against analytic motion and against the engine run directly;
every frame's evaluated matrix_world; parenting, rotation modes, deltas, scale; existing
animation; clear bake; re-bake from a frame; cancel; undo."""

import hb_blender as hb
import numpy as np
import pytest

bpy = hb.bpy
from mathutils import Matrix, Quaternion, Vector


def rot_about(omega, t):
    """Rotation matrix of a constant world angular velocity omega over time t."""
    w = np.asarray(omega, dtype=np.float64)
    n = np.linalg.norm(w)
    if n == 0:
        return np.eye(3)
    return np.array(Matrix.Rotation(n * t, 3, Vector(w / n)), dtype=np.float64)


def bits(i):
    return [k == i for k in range(20)]


def free_flight_scene():
    """Cubes in free flight (no gravity, no damping, nobody touching): their world motion is
    analytic (constant velocity; a cube's inertia is isotropic, so constant spin), whatever
    their rotation mode, deltas, mirroring or parents."""
    scene = hb.empty_scene(frame_end=40)
    scene.use_gravity = False
    zero = dict(linear_damping=0.0, angular_damping=0.0)
    objs = []

    a = hb.add_box("EulerXYZ", location=(0, 0, 0), collision_collections=bits(0),
                   initial_linear_velocity=(1, 0, 0.5), initial_angular_velocity=(0, 2, 1),
                   **zero)
    a.rotation_euler = (0.3, -0.2, 1.0)
    objs.append(a)

    b = hb.add_box("EulerZXY_deltas", location=(10, 0, 0), collision_collections=bits(1),
                   initial_linear_velocity=(0, 1, 0), initial_angular_velocity=(3, 0, -1),
                   **zero)
    b.rotation_mode = 'ZXY'
    b.rotation_euler = (1.2, 0.4, -2.5)
    b.delta_rotation_euler = (0.1, 0.5, 0.2)
    b.delta_location = (0.5, -0.5, 1.0)
    b.scale = (0.5, 0.5, 0.5)
    b.delta_scale = (1.5, 1.5, 1.5)
    objs.append(b)

    c = hb.add_box("QuatMirrored", location=(20, 0, 0), collision_collections=bits(2),
                   initial_linear_velocity=(0, 0, -1), initial_angular_velocity=(5, 5, 0),
                   **zero)
    c.rotation_mode = 'QUATERNION'
    c.rotation_quaternion = Quaternion((0.2, 0.9, -0.3), 2.0)
    c.delta_rotation_quaternion = Quaternion((0, 0, 1), 0.7)
    c.scale = (-1.0, -1.0, -1.0)
    objs.append(c)

    d = hb.add_box("AxisAngle", location=(30, 0, 0), collision_collections=bits(3),
                   initial_linear_velocity=(-1, 0, 0), initial_angular_velocity=(0, 0, 7),
                   **zero)
    d.rotation_mode = 'AXIS_ANGLE'
    d.rotation_axis_angle = (0.5, 1.0, 0.0, 0.0)
    objs.append(d)

    # Parented to a fixed, rotated, scaled empty.
    pe = hb.add_object("FixedParent", None, location=(0, 20, 0), enabled=False)
    pe.rotation_euler = (0.0, 0.3, 0.8)
    pe.scale = (2.0, 2.0, 2.0)
    e = hb.add_box("ChildOfFixed", location=(1, 1, 1), collision_collections=bits(4),
                   initial_linear_velocity=(0.5, 0.5, 0), initial_angular_velocity=(1, 1, 1),
                   **zero)
    e.parent = pe
    e.rotation_mode = 'YZX'
    e.rotation_euler = (0.2, 0.2, 0.2)
    objs.append(e)

    # Parented to an animated empty: keys must cancel the parent's own motion.
    pa = hb.add_object("MovingParent", None, location=(0, 40, 0), enabled=False)
    pa.keyframe_insert("location", frame=1)
    pa.keyframe_insert("rotation_euler", frame=1)
    pa.location = (5, 45, 3)
    pa.rotation_euler = (0, 0, 1.5)
    pa.keyframe_insert("location", frame=40)
    pa.keyframe_insert("rotation_euler", frame=40)
    f = hb.add_box("ChildOfMoving", location=(0, 0, 2), collision_collections=bits(5),
                   initial_linear_velocity=(0, 0, 1), initial_angular_velocity=(0, -2, 0),
                   **zero)
    f.parent = pa
    objs.append(f)

    # Parented to a simulated body.
    g = hb.add_box("ChildOfDynamic", location=(0, -3, 0), collision_collections=bits(6),
                   initial_linear_velocity=(0, -1, 0), initial_angular_velocity=(0, 0, 0.5),
                   **zero)
    g.parent = a
    g.matrix_parent_inverse = Matrix(a.matrix_world).inverted()
    objs.append(g)

    # Non-uniform scale (anisotropic inertia): no spin, so the motion stays analytic.
    h = hb.add_box("Stretched", location=(0, 60, 0), collision_collections=bits(7),
                   initial_linear_velocity=(1, 1, 1), **zero)
    h.rotation_euler = (0.4, 0.1, -0.3)
    h.scale = (2.0, 1.0, 0.5)
    objs.append(h)
    scene.frame_set(1)
    return scene, objs


@pytest.mark.parametrize("current_frame", [1, 23])
def test_free_flight_keys_match_analytic_motion_at_every_frame(current_frame):
    scene, objs = free_flight_scene()
    m0 = {o.name: hb.matrix(o) for o in objs}
    scene.frame_set(current_frame)  # the bake reads the first frame whatever the current one
    v = {o.name: np.array(o.hullabaloo.initial_linear_velocity) for o in objs}
    w = {o.name: np.array(o.hullabaloo.initial_angular_velocity) for o in objs}
    last = hb.bake()
    assert last["summary"]["objects"] == len(objs)
    dt = 1.0 / 24.0
    for o in objs:  # one key per frame on every location and rotation channel
        keys = hb.keys_of(o)
        rot_path = {"QUATERNION": "rotation_quaternion", "AXIS_ANGLE": "rotation_axis_angle"}.get(
            o.rotation_mode, "rotation_euler")
        baked = [k for k in keys if k[0] in ("location", rot_path)]
        assert len(baked) == 3 + (3 if rot_path == "rotation_euler" else 4), o.name
        for k in baked:
            assert keys[k]["co"][:, 0].tolist() == list(range(1, 41)), (o.name, k)
    for frame in range(1, 41):
        scene.frame_set(frame)
        t = (frame - 1) * dt
        for o in objs:
            M0 = m0[o.name]
            want = np.eye(4)
            want[:3, :3] = rot_about(w[o.name], t) @ M0[:3, :3]
            want[:3, 3] = M0[:3, 3] + v[o.name] * t
            got = hb.matrix(o)
            np.testing.assert_allclose(got[:3, :3], want[:3, :3], atol=2e-5,
                                       err_msg=f"{o.name} frame {frame}")
            np.testing.assert_allclose(got[:3, 3], want[:3, 3], atol=2e-5,
                                       err_msg=f"{o.name} frame {frame}")
    # Scale is never keyed nor lost; the mirrored cube stays mirrored.
    assert tuple(objs[1].scale) == pytest.approx((0.5, 0.5, 0.5))
    assert np.linalg.det(hb.matrix(objs[2])[:3, :3]) < 0
    assert all(("scale", i) not in hb.keys_of(o) for o in objs for i in range(3))


def test_euler_keys_are_continuous_and_quaternion_keys_keep_sign():
    scene, objs = free_flight_scene()
    hb.bake()
    for o in objs:
        keys = hb.keys_of(o)
        if o.rotation_mode == 'QUATERNION':
            q = np.stack([keys[("rotation_quaternion", i)]["co"][:, 1] for i in range(4)], 1)
            assert (np.einsum("fi,fi->f", q[1:], q[:-1]) > 0).all()
            assert np.dot(q[0], tuple(Quaternion((0.2, 0.9, -0.3), 2.0))) > 0
        elif o.rotation_mode not in ('AXIS_ANGLE',):
            e = np.stack([keys[("rotation_euler", i)]["co"][:, 1] for i in range(3)], 1)
            assert np.abs(np.diff(e, axis=0)).max() < 1.0, o.name  # spins < 0.3 rad/frame
            np.testing.assert_allclose(e[0], tuple(o.hullabaloo.bake.rotation_euler), atol=1e-5)


def _engine_box(o):
    """(half extents, position, orientation) of a box object, computed with mathutils."""
    mw = o.matrix_world
    loc, rot, scale = mw.decompose()
    half = np.array(o.dimensions) * 0.5
    return half, np.array(loc), np.array(rot)


def test_contact_scene_keys_equal_the_engine_run_directly():
    scene = hb.empty_scene(frame_end=36)
    ground = hb.add_box("Ground", size=(20, 20, 1), location=(0, 0, -0.5), body_type='PASSIVE')
    a = hb.add_box("A", location=(0, 0, 1.2), mass=2.0, friction=0.7)
    b = hb.add_box("B", size=(1, 1, 1), location=(0.3, 0.1, 3.0), mass=0.5, restitution=0.3)
    b.rotation_euler = (0.3, 0.2, 0.1)
    c = hb.add_box("C", size=(1.5, 0.5, 0.5), location=(-3, 0, 0.8), friction=0.2,
                   initial_linear_velocity=(2, 0, 0), initial_angular_velocity=(0, 0, 3))
    scene.frame_set(1)
    eng = hb.engine()
    world = hb.engine_world(scene)
    idx = {}
    for o in (ground, a, b, c):
        s = o.hullabaloo
        half, pos, q = _engine_box(o)
        kw = dict(friction=s.friction, restitution=s.restitution)
        if s.body_type == 'DYNAMIC':
            kw.update(mass=s.mass, linear_damping=s.linear_damping,
                      angular_damping=s.angular_damping,
                      linear_velocity=tuple(s.initial_linear_velocity),
                      angular_velocity=tuple(s.initial_angular_velocity))
        idx[o.name] = world.add_body(eng.Box(half), position=pos, orientation=q,
                                     kind="dynamic" if s.body_type == 'DYNAMIC' else "static",
                                     **kw)
    poses = []
    for _ in range(36):
        poses.append((world.positions.copy(), world.orientations.copy()))
        world.step(1.0 / 24.0)
    hb.bake()
    for frame in range(1, 37):
        scene.frame_set(frame)
        P, Q = poses[frame - 1]
        for o in (a, b, c):
            i = idx[o.name]
            got = hb.matrix(o)
            np.testing.assert_allclose(got[:3, 3], P[i], atol=1e-4,
                                       err_msg=f"{o.name} frame {frame}")
            R = np.array(Quaternion(Q[i]).to_matrix())
            np.testing.assert_allclose(got[:3, :3], R @ np.diag(o.scale), atol=1e-4,
                                       err_msg=f"{o.name} frame {frame}")
            loc_keys = hb.keys_of(o)[("location", 2)]["co"]
            assert loc_keys[frame - 1, 1] == pytest.approx(P[i][2], abs=1e-5)
    assert b.matrix_world.translation.z < 2.6  # it fell and landed on A (top at 2.0)
    assert c.matrix_world.translation.x > -3.0


def existing_animation_scene():
    scene = hb.empty_scene(frame_end=30)
    hb.add_box("Ground", size=(20, 20, 1), location=(0, 0, -0.5), body_type='PASSIVE')
    o = hb.add_box("Animated", location=(0, 0, 4))
    for f, z in ((-20, 8.0), (0, 6.0), (10, 5.0), (60, 9.0)):
        o.location.z = z
        o.keyframe_insert("location", index=2, frame=f)
    o.keyframe_insert("scale", frame=15)
    o.keyframe_insert("rotation_euler", index=0, frame=45)
    plain = hb.add_box("Plain", location=(4, 0, 3))
    scene.frame_set(1)
    return scene, o, plain


def test_existing_animation_is_kept_outside_the_range_and_clear_restores_exactly():
    scene, o, plain = existing_animation_scene()
    before = hb.snapshot(scene)
    action_name = o.animation_data.action.name
    hb.bake()
    keys = hb.keys_of(o)
    z = keys[("location", 2)]["co"][:, 0].tolist()
    assert z == [-20.0, 0.0] + [float(f) for f in range(1, 31)] + [60.0]
    assert keys[("scale", 0)]["co"][:, 0].tolist() == [15.0]  # other channels untouched
    rx = keys[("rotation_euler", 0)]["co"][:, 0].tolist()
    assert rx == [float(f) for f in range(1, 31)] + [45.0]
    assert plain.animation_data is not None
    scene.frame_set(0)
    assert o.location.z == pytest.approx(6.0)
    scene.frame_set(60)
    assert o.location.z == pytest.approx(9.0)
    scene.frame_set(1)
    assert bpy.ops.hullabaloo.clear_bake() == {'FINISHED'}
    after = hb.snapshot(scene)
    hb.assert_same(before, after)
    assert o.animation_data.action.name == action_name
    assert plain.animation_data is None
    assert not [a for a in bpy.data.actions if "hullabaloo" in a.name]


def test_rebake_from_frame_continues_bit_exactly_and_keeps_earlier_keys():
    scene = hb.empty_scene(frame_end=40)
    hb.add_box("Ground", size=(20, 20, 1), location=(0, 0, -0.5), body_type='PASSIVE')
    objs = [hb.add_box(f"Box{i}", size=(1, 1, 1), location=(0.2 * i, 0.1 * i, 0.6 + 1.1 * i))
            for i in range(4)]
    objs[3].rotation_euler = (0.4, 0.3, 0.0)
    scene.frame_set(1)
    hb.bake()
    full = {o.name: hb.keys_of(o) for o in objs}
    scene.frame_set(17)
    assert bpy.ops.hullabaloo.rebake_from_frame() == {'FINISHED'}
    for o in objs:  # same world, stored state with velocities and contacts: identical keys
        again = hb.keys_of(o)
        for ch in full[o.name]:
            np.testing.assert_array_equal(again[ch]["co"], full[o.name][ch]["co"],
                                          err_msg=f"{o.name} {ch}")
    # A late tweak: an obstacle appears and the top box gets slippery; keys before 25 stay.
    scene.frame_set(25)
    hb.add_box("Obstacle", size=(1, 1, 1), location=(3, 0, 0.5), body_type='PASSIVE')
    objs[3].hullabaloo.friction = 0.0
    objs[3].hullabaloo.restitution = 0.9
    assert bpy.ops.hullabaloo.rebake_from_frame() == {'FINISHED'}
    for o in objs:
        again = hb.keys_of(o)
        for ch in full[o.name]:
            co, ref = again[ch]["co"], full[o.name][ch]["co"]
            assert co[:, 0].tolist() == ref[:, 0].tolist()
            np.testing.assert_array_equal(co[:25, 1], ref[:25, 1])


def test_rebake_without_a_previous_bake_is_refused_cleanly():
    scene = hb.empty_scene(frame_end=10)
    hb.add_box("Box", location=(0, 0, 2))
    before = hb.snapshot(scene)
    with pytest.raises(RuntimeError, match="bake the scene first"):
        bpy.ops.hullabaloo.bake(from_current_frame=True)
    hb.assert_same(before, hb.snapshot(scene))


def test_cancel_leaves_everything_as_before():
    scene, o, plain = existing_animation_scene()
    # An animated body makes the bake change frames while sampling it.
    kin = hb.add_box("Pusher", location=(-5, 0, 1), body_type='ANIMATED')
    kin.keyframe_insert("location", frame=1)
    kin.location.x = 0
    kin.keyframe_insert("location", frame=30)
    scene.frame_set(7)
    before = hb.snapshot(scene)
    ops = hb.pkg().addon
    job = ops.simulate.BakeJob(scene, bpy.context.evaluated_depsgraph_get())
    job.prepare()
    job.advance(10)
    assert 0 < job.progress < 1
    job.cancel()
    hb.assert_same(before, hb.snapshot(scene))


def test_invoke_in_background_runs_synchronously():
    scene = hb.empty_scene(frame_end=12)
    o = hb.add_box("Box", location=(0, 0, 5))
    assert bpy.ops.hullabaloo.bake('INVOKE_DEFAULT') == {'FINISHED'}
    scene.frame_set(12)
    assert o.matrix_world.translation.z < 5.0


def test_one_bake_is_one_undo_step():
    # Undo works in background mode; bpy.ops only pushes an undo step when asked to
    # (the UI always asks), hence the explicit undo=True.
    scene, o, plain = existing_animation_scene()
    bpy.ops.ed.undo_push(message="before bake")
    before = hb.snapshot(scene)
    assert bpy.ops.hullabaloo.bake('EXEC_DEFAULT', True) == {'FINISHED'}
    baked = hb.snapshot(bpy.context.scene)
    assert baked["objects"]["Animated"]["baked"]
    bpy.ops.ed.undo()
    hb.assert_same(before, hb.snapshot(bpy.context.scene))
    bpy.ops.ed.redo()
    hb.assert_same(baked, hb.snapshot(bpy.context.scene))


def test_animated_body_pushes_and_keeps_its_own_animation():
    scene = hb.empty_scene(frame_end=48)
    hb.add_box("Ground", size=(20, 20, 1), location=(0, 0, -0.5), body_type='PASSIVE')
    box = hb.add_box("Box", size=(1, 1, 1), location=(0, 0, 0.5), friction=0.3)
    pusher = hb.add_box("Pusher", size=(1, 2, 1), location=(-3, 0, 0.55), body_type='ANIMATED')
    pusher.keyframe_insert("location", frame=1)
    pusher.location.x = 2.0
    pusher.keyframe_insert("location", frame=30)
    own = hb.keys_of(pusher)
    scene.frame_set(1)
    hb.bake()
    assert not pusher.hullabaloo.bake.baked  # animated bodies are not keyed
    again = hb.keys_of(pusher)
    for ch in own:
        np.testing.assert_array_equal(own[ch]["co"], again[ch]["co"])
    scene.frame_set(30)
    # The box was pushed ahead of the pusher's front face (x = 2.5 at frame 30).
    assert box.matrix_world.translation.x > 2.5 + 0.4


def _mesh(name, verts, faces):
    m = bpy.data.meshes.new(name)
    m.from_pydata(verts, [], faces)
    m.update()
    return m


def test_mesh_scenery_and_compound_bodies_are_not_hulled():
    """A box dropped into an open cup (passive Mesh shape) ends up inside it, and a dumbbell
    of two loose cubes (Compound) straddles a low wall: both impossible with convex hulls."""
    scene = hb.empty_scene(frame_end=40)
    hb.add_box("Ground", size=(40, 40, 1), location=(0, 0, -0.5), body_type='PASSIVE')
    v = [(x, y, z) for z in (0, 2) for y in (-2, 2) for x in (-2, 2)]
    hb.add_object("Cup", _mesh("cup", v, [(0, 2, 3, 1), (0, 1, 5, 4), (2, 6, 7, 3),
                                                (0, 4, 6, 2), (1, 3, 7, 5)]),
                        location=(10, 0, 0), body_type='PASSIVE', shape='MESH')
    pebble = hb.add_box("Pebble", size=(0.5, 0.5, 0.5), location=(10, 0, 1.5))
    cubes = []
    for cx in (-1.5, 1.5):
        cubes += [(cx + x * 0.5, y * 0.5, z * 0.5) for z in (-1, 1) for y in (-1, 1) for x in (-1, 1)]
    faces = []
    for base in (0, 8):
        faces += [tuple(base + i for i in f) for f in ((0, 2, 3, 1), (4, 5, 7, 6), (0, 1, 5, 4),
                                                        (2, 6, 7, 3), (0, 4, 6, 2), (1, 3, 7, 5))]
    bell = hb.add_object("Dumbbell", _mesh("bell", cubes, faces), location=(0, 0, 1.6),
                         shape='COMPOUND')
    hb.add_box("Wall", size=(0.4, 3, 0.6), location=(0, 0, 0.3), body_type='PASSIVE')
    scene.frame_set(1)
    last = hb.bake()
    assert not [p for p in last["problems"] if "not available" in p.message]
    scene.frame_set(40)
    p = pebble.matrix_world.translation
    assert 0.0 < p.z < 1.0 and abs(p.x - 10) < 2 and abs(p.y) < 2  # inside the cup
    assert bell.matrix_world.translation.z < 0.8  # both cubes on the ground, astride the wall


def test_rebake_after_saving_and_reopening_uses_the_stored_states(tmp_path):
    scene = hb.empty_scene(frame_end=30)
    hb.add_box("Ground", size=(20, 20, 1), location=(0, 0, -0.5), body_type='PASSIVE')
    objs = [hb.add_box(f"Box{i}", size=(1, 1, 1), location=(0.3 * i, 0, 0.6 + 1.2 * i))
            for i in range(3)]
    scene.frame_set(1)
    hb.bake()
    full = {o.name: hb.keys_of(o) for o in objs}
    path = tmp_path / "shot.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    bpy.ops.wm.read_homefile(use_empty=True)  # forget everything held in memory
    bpy.ops.wm.open_mainfile(filepath=str(path))
    scene = bpy.context.scene
    scene.frame_set(12)
    assert bpy.ops.hullabaloo.rebake_from_frame() == {'FINISHED'}
    for name, keys in full.items():
        again = hb.keys_of(bpy.data.objects[name])
        for ch in keys:
            np.testing.assert_array_equal(again[ch]["co"], keys[ch]["co"], err_msg=f"{name} {ch}")
