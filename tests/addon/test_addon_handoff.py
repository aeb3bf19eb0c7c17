"""Blender parity (issue 14) in real Blender: the same scene simulated by Blender's own Rigid
Body (Bullet, ``ptcache.bake_all``) and by Hullabaloo after ``import_rigid_body``, compared
frame by frame: keyed Animated <-> Dynamic hand-off, keyed Dynamic off (held), Start
Deactivated (held in mid-air until hit), a Compound Parent bin with hidden convex parts, the
world's speed and gravity; plus what the import reports it cannot carry and the report of a
body keyed to switch every frame."""
import hb_blender as hb
import numpy as np
import pytest

bpy = hb.bpy
G = 9.81


def rigid(obj, rb_type='ACTIVE', **settings):
    """Give obj a Blender Rigid Body, as Physics > Rigid Body does (adds the world)."""
    for o in bpy.context.view_layer.objects:
        o.select_set(False)
    bpy.context.view_layer.objects.active = obj
    obj.select_set(True)
    assert bpy.ops.rigidbody.object_add(type=rb_type) == {'FINISHED'}
    obj.select_set(False)
    for k, v in settings.items():
        setattr(obj.rigid_body, k, v)
    return obj


def box(name, size=(1, 1, 1), location=(0, 0, 0), rb_type='ACTIVE', **settings):
    obj = hb.add_box(name, size=size, location=location, enabled=False)
    return rigid(obj, rb_type, **settings)


def blender_world(scene):
    rbw = scene.rigidbody_world
    rbw.point_cache.frame_start, rbw.point_cache.frame_end = scene.frame_start, scene.frame_end
    return rbw


def trajectories(scene, objs):
    """World matrices (F, 4, 4) per object over the scene's frames."""
    out = {o.name: [] for o in objs}
    for f in range(scene.frame_start, scene.frame_end + 1):
        scene.frame_set(f)
        for o in objs:
            out[o.name].append(hb.matrix(o))
    return {k: np.array(v) for k, v in out.items()}


def blender_bake(scene, objs):
    rbw = blender_world(scene)
    with bpy.context.temp_override(scene=scene, point_cache=rbw.point_cache):
        bpy.ops.ptcache.free_bake_all()           # a second bake must simulate again
        assert bpy.ops.ptcache.bake_all(bake=True) == {'FINISHED'}
    return trajectories(scene, objs)


def ours(scene, objs):
    """Import everything, bake with Hullabaloo (Blender's world is turned off by the
    import), the same trajectories."""
    assert bpy.ops.hullabaloo.import_rigid_body(all=True) == {'FINISHED'}
    assert not scene.rigidbody_world.enabled
    last = hb.bake()
    return trajectories(scene, objs), last


def key_linear(obj, path, frames_values):
    for f, v in frames_values:
        setattr(obj, path, v)
        obj.keyframe_insert(path, frame=f)


def linear_keys(obj):
    for fc in hb.fcurves(obj):
        if fc.data_path.startswith(("location", "rotation")):
            for k in fc.keyframe_points:
                k.interpolation = 'LINEAR'
            fc.extrapolation = 'LINEAR'


def damped_fall(t, g, damping=0.04):
    """Distance fallen from rest in time t under gravity g with Bullet's linear damping
    (v *= (1 - d) ** dt): v' = -g - k v, k = -ln(1 - d)."""
    k = -np.log(1 - damping)
    return g / k * (t - (1 - np.exp(-k * t)) / k)


def yaw(m):
    return np.unwrap(np.arctan2(m[:, 1, 0], m[:, 0, 0]))


def test_animated_keyed_off_carries_its_keyed_velocity_then_is_taken_back():
    """Animated keyed on for frames 1-12 (moving 3 m/s along X, 1 m/s up, turning 2 rad/s),
    off at 13 (free flight), on again at 31 (back on its keys)."""
    scene = hb.empty_scene(frame_end=40)
    a = box("Thrown", location=(0, 0, 5))
    a.rotation_mode = 'XYZ'
    key_linear(a, "location", [(1, (0, 0, 5)), (13, (1.5, 0, 5.5))])
    key_linear(a, "rotation_euler", [(1, (0, 0, 0)), (13, (0, 0, 1.0))])
    linear_keys(a)
    rb = a.rigid_body
    for f, on in ((1, True), (12, True), (13, False), (30, False), (31, True)):
        rb.kinematic = on
        rb.keyframe_insert("kinematic", frame=f)
    ref = blender_bake(scene, [a])["Thrown"]
    got, last = ours(scene, [a])
    got = got["Thrown"]
    s = a.hullabaloo
    assert s.body_type == 'DYNAMIC'
    keyed = [k.co[1] for k in next(fc for fc in hb.fcurves(a)
                                   if fc.data_path == "hullabaloo.animated").keyframe_points]
    assert keyed == [1.0, 1.0, 0.0, 0.0, 1.0]
    t = np.arange(40) / 24.0
    keys = np.stack((3 * t, 0 * t, 5 + t), axis=1)           # the keyed path (extrapolated)
    # Animated phases: exactly on the keys (frames 1-12 and 31-40), in both.
    for phase in (slice(0, 12), slice(30, 40)):
        np.testing.assert_allclose(got[phase, :3, 3], keys[phase], atol=1e-4)
        np.testing.assert_allclose(ref[phase, :3, 3], keys[phase], atol=1e-3)
    # Free flight (frames 13-30): carried velocity, ballistic; within 5 cm of Blender's.
    free = slice(12, 30)
    err = np.linalg.norm(got[free, :3, 3] - ref[free, :3, 3], axis=1)
    print(f"\nhand-off: free flight frames 13-30, max distance to Blender {err.max() * 1000:.1f} mm,"
          f" yaw {np.degrees(np.abs(yaw(got)[free] - yaw(ref)[free]).max()):.2f} deg")
    assert err.max() < 0.05, err
    tf = t[free] - t[11]
    ballistic = keys[11] + np.outer(tf, (3, 0, 1)) + np.outer(0.5 * tf * tf, (0, 0, -G))
    assert np.linalg.norm(got[free, :3, 3] - ballistic, axis=1).max() < 0.05
    # Angular velocity carried too: the yaw goes on from 2 rad/s, damped as Bullet does
    # (w *= (1 - 0.1) ** t), and stays within 3 degrees of Blender's.
    assert np.abs(yaw(got)[free] - yaw(ref)[free]).max() < np.radians(3)
    spin = np.diff(yaw(got)[free]) * 24
    t_mid = tf[:-1] + 0.5 / 24
    np.testing.assert_allclose(spin, 2.0 * 0.9 ** t_mid, rtol=0.01)
    assert not [p for p in last["problems"] if p.name == "Thrown"]


def restart(z, start):
    """Index of the first frame after ``start`` at which z leaves z[start]."""
    return start + 1 + int(np.flatnonzero(np.abs(z[start + 1:] - z[start]) > 1e-6)[0])


def test_dynamic_keyed_off_is_held_then_restarts_from_rest():
    scene = hb.empty_scene(frame_end=48)
    b = box("Held", location=(0, 0, 5))
    rb = b.rigid_body
    for f, on in ((9, True), (10, False), (29, False), (30, True)):
        rb.enabled = on
        rb.keyframe_insert("enabled", frame=f)
    # Blender 5.2's own bake of this keyed toggle is not repeatable: now and then its box
    # restarts one frame earlier or later (0.3 m off by frame 48), and rarely (once in a CI
    # run, never in 30 bakes in a row here) it is not held at all and falls on from frame 10.
    # So Blender is baked again (up to three times) until its box is held, its restart frame
    # is compared to ours within one frame, and the falls before the hold and after the
    # restart are compared each from its own start. Ours is held bit for bit, every time.
    tried = []
    for _ in range(3):
        z_ref = blender_bake(scene, [b])["Held"][:, 2, 3]
        r_ref = restart(z_ref, 8)
        tried.append(r_ref + 1)
        if abs(r_ref - 29) <= 1:
            break
    assert abs(r_ref - 29) <= 1, f"Blender's box restarted at frames {tried}, never held"
    z = ours(scene, [b])[0]["Held"][:, 2, 3]
    r = restart(z, 8)
    print(f"\nDynamic keyed off: before the hold max |z - Blender| "
          f"{np.abs(z[:9] - z_ref[:9]).max() * 1000:.1f} mm; restart at frame {r + 1} "
          f"(Blender {r_ref + 1}, bakes {tried})")
    assert np.abs(z[:9] - z_ref[:9]).max() < 0.01
    assert r == 29, (r, r_ref)
    n = len(z) - max(r, r_ref)
    fall, fall_ref = z[r - 1:r + n] - z[r - 1], z_ref[r_ref - 1:r_ref + n] - z_ref[r_ref - 1]
    assert np.abs(fall - fall_ref).max() < 0.05, np.abs(fall - fall_ref).max()
    held = slice(8, 29)                                # frames 9-29: where frame 9 left it
    assert np.ptp(z[held]) == 0.0 and np.ptp(z_ref[8:r_ref]) < 1e-4
    # From rest at frame 29's pose, falling with Blender's default linear damping 0.04.
    tn = np.arange(1, 20) / 24.0
    np.testing.assert_allclose(z[28 + np.arange(1, 20)], z[28] - damped_fall(tn, G), atol=0.01)


def test_start_deactivated_cube_holds_in_mid_air_until_hit():
    """One sleeper hit by a falling cube, one pushed by an Animated box moving into it."""
    scene = hb.empty_scene(frame_end=60)
    box("Ground", size=(10, 10, 1), location=(0, 0, -0.5), rb_type='PASSIVE')
    c = box("Sleeper", location=(0, 0, 3), use_deactivation=True,
            use_start_deactivated=True)
    d = box("Hammer", location=(0.2, 0, 6))
    e = box("Pushed", location=(0, 3, 3), use_deactivation=True, use_start_deactivated=True)
    pusher = box("Pusher", location=(-3, 3, 3), rb_type='PASSIVE', kinematic=True)
    key_linear(pusher, "location", [(1, (-3, 3, 3)), (25, (1, 3, 3))])  # 4 m/s
    linear_keys(pusher)
    ref = blender_bake(scene, [c, d, e])
    got = ours(scene, [c, d, e])[0]
    s = c.hullabaloo
    assert s.use_deactivation and s.use_start_deactivated
    assert s.deactivate_linear_velocity == pytest.approx(0.4)
    assert s.deactivate_angular_velocity == pytest.approx(0.5)
    assert pusher.hullabaloo.body_type == 'ANIMATED'

    def woke(m):
        return int(np.flatnonzero(np.abs(m[:, :3, 3] - m[0, :3, 3]).max(axis=1) > 1e-6)[0])

    # Held exactly (bit for bit) until the hammer, falling 2 m (0.64 s, frame ~16), hits it.
    w_ref, w = woke(ref["Sleeper"]), woke(got["Sleeper"])
    assert np.all(got["Sleeper"][:w, 2, 3] == 3.0)
    assert abs(w - w_ref) <= 2 and abs(w / 24.0 - np.sqrt(4.0 / G)) < 0.15, (w, w_ref)
    # The pusher's face (x = -3 + 4 t + 0.5) reaches the cube's (x = -0.5) at t = 0.5 s.
    p_ref, p = woke(ref["Pushed"]), woke(got["Pushed"])
    print(f"\nStart Deactivated: hit wakes it at frame {w + 1} (Blender {w_ref + 1}); pushed "
          f"at frame {p + 1} (Blender {p_ref + 1}); final z {got['Sleeper'][-1, 2, 3]:.3f} "
          f"(Blender {ref['Sleeper'][-1, 2, 3]:.3f})")
    assert np.all(got["Pushed"][:p, 2, 3] == 3.0)
    assert abs(p - p_ref) <= 2 and abs(p / 24.0 - 0.5) < 0.1, (p, p_ref)
    # Then both cubes end on the ground, as in Blender.
    for name in ("Sleeper", "Hammer", "Pushed"):
        assert got[name][-1, 2, 3] < 1.6 and ref[name][-1, 2, 3] < 1.6, name
    assert abs(got["Sleeper"][-1, 2, 3] - ref["Sleeper"][-1, 2, 3]) < 0.05


def bin_scene(hide="hide_set"):
    """A synthetic-data generator's bin: a passive Compound Parent whose mesh is a solid
    3 x 3 x 1.5 m block (its look), with five hidden Convex Hull children (floor and four
    walls), and five cubes dropped into it."""
    scene = hb.empty_scene(frame_end=48)
    box("Ground", size=(20, 20, 1), location=(0, 0, -0.5), rb_type='PASSIVE')
    tote = box("Bin", size=(3, 3, 1.5), location=(5, 0, 0.75), rb_type='PASSIVE',
               collision_shape='COMPOUND')
    parts = []
    for name, size, loc in (("Floor", (3, 3, 0.1), (0, 0, -0.7)),
                            ("WallX0", (0.1, 3, 1.5), (-1.45, 0, 0)),
                            ("WallX1", (0.1, 3, 1.5), (1.45, 0, 0)),
                            ("WallY0", (3, 0.1, 1.5), (0, -1.45, 0)),
                            ("WallY1", (3, 0.1, 1.5), (0, 1.45, 0))):
        p = box(name, size=size, rb_type='PASSIVE', collision_shape='CONVEX_HULL')
        p.parent = tote
        p.location = loc
        if hide == "hide_set":          # the eye icon
            p.hide_set(True)
        else:                           # disabled in viewports: not even evaluated
            p.hide_viewport = True
        p.hide_render = True
        parts.append(p)
    drops = [box(f"Item{i}", size=(0.4, 0.4, 0.4),
                 location=(5 + 0.5 * (i - 2), 0.3 * (i % 2), 2.0 + 0.6 * i),
                 collision_shape='CONVEX_HULL') for i in range(5)]
    return scene, tote, parts, drops


@pytest.mark.parametrize("hide", ["hide_set", "hide_viewport"])
def test_compound_parent_bin_with_hidden_convex_parts_catches_every_item(hide):
    scene, tote, parts, drops = bin_scene(hide)
    ref = blender_bake(scene, drops)
    got, last = ours(scene, drops + parts)
    for p in parts:
        assert p.hullabaloo.collision_part and (p.hide_get() or p.hide_viewport)
    s = tote.hullabaloo
    assert (s.shape, s.compound_source, s.compound_include_self) == \
        ('COMPOUND', 'CHILDREN', False)
    reader = hb.pkg().addon.collect.SceneReader(
        scene, bpy.context.evaluated_depsgraph_get()).read()
    names = sorted(b.name for b in reader.bodies)
    assert names == sorted(["Ground", "Bin"] + [d.name for d in drops])   # parts: no bodies
    body = next(b for b in reader.bodies if b.name == "Bin")
    assert len(body.shape.shapes) == 5                 # the children only, not the block
    assert last["summary"]["objects"] == 5
    inner_lo, inner_hi = np.array([3.6, -1.4, 0.1]), np.array([6.4, 1.4, 1.5])
    print("\nbin: final item positions, ours / Blender:", "; ".join(
        f"{n} {np.round(got[n][-1, :3, 3], 2)} / {np.round(m[-1, :3, 3], 2)}"
        for n, m in ref.items()))
    for name, m in list(ref.items()):
        for traj, who in ((m, "Blender"), (got[name], "Hullabaloo")):
            p = traj[-1, :3, 3]
            assert np.all(p > inner_lo) and np.all(p < inner_hi), (who, name, p)
    for p in parts:  # the hidden parts stay with the bin
        np.testing.assert_allclose(got[p.name][-1], got[p.name][0], atol=1e-9)


def test_world_speed_gravity_and_collection_are_imported():
    scene = hb.empty_scene(frame_end=24)
    a = box("Slow", location=(0, 0, 10))
    outside = box("Outside", location=(3, 0, 10))
    rbw = blender_world(scene)
    rbw.collection.objects.unlink(outside)            # Blender does not simulate it
    rbw.time_scale = 0.5
    rbw.substeps_per_frame, rbw.solver_iterations = 20, 30
    ref = blender_bake(scene, [a])["Slow"]
    got = ours(scene, [a])[0]
    hs = scene.hullabaloo
    assert hs.time_scale == pytest.approx(0.5)
    assert (hs.substeps, hs.iterations) == (20, 3)     # 480 Hz > our 360 Hz; 30 / 10
    general = hb.pkg().addon.ops.LAST_IMPORT["general"]
    assert any("Outside" in g and "collection" in g for g in general), general
    assert not outside.hullabaloo.enabled
    z = got["Slow"][:, 2, 3]
    print(f"\nspeed 0.5: max |z - Blender| {np.abs(z - ref[:, 2, 3]).max() * 1000:.2f} mm")
    assert np.abs(z - ref[:, 2, 3]).max() < 0.05
    t = 0.5 * np.arange(24) / 24.0                     # half speed: half the simulated time
    np.testing.assert_allclose(z, 10 - damped_fall(t, G), atol=0.01)


@pytest.mark.parametrize("weights", [(0.0, 1.0), (1.0, 0.5)])
def test_world_gravity_weight_is_imported(weights):
    """The world's effector weights Gravity x All scale gravity (0: off), in both (the bake
    reads them from the Rigid Body World, which the import turned off but kept)."""
    scene = hb.empty_scene(frame_end=24)
    a = box("Faller", location=(0, 0, 10))
    rbw = blender_world(scene)
    rbw.effector_weights.gravity, rbw.effector_weights.all = weights
    ref = blender_bake(scene, [a])["Faller"]
    got = ours(scene, [a])[0]["Faller"]
    factor = weights[0] * weights[1]
    t = np.arange(24) / 24.0
    for z in (ref[:, 2, 3], got[:, 2, 3]):
        np.testing.assert_allclose(z, 10 - damped_fall(t, factor * G), atol=0.01)
    if factor == 0.0:
        assert np.ptp(got[:, 2, 3]) == 0.0


def test_import_lists_what_it_cannot_carry_per_object_and_in_the_bake_summary():
    hb.empty_scene(frame_end=12)
    box("Ground", size=(10, 10, 1), location=(0, 0, -0.5), rb_type='PASSIVE')
    drum = box("Drum", location=(0, 0, 2), collision_shape='CYLINDER', use_margin=True,
               collision_margin=0.02, use_deform=True)
    drum.rigid_body.keyframe_insert("mass", frame=1)
    plain = box("Plain", location=(3, 0, 2))
    assert bpy.ops.hullabaloo.import_rigid_body(all=True) == {'FINISHED'}
    assert drum.hullabaloo.shape == 'CYLINDER'               # carried: an exact cylinder
    notes = hb.pkg().addon.ops.LAST_IMPORT["objects"]
    assert "Plain" not in notes and "Ground" not in notes
    text = "; ".join(notes["Drum"])
    for words in ("margin of 0.02", "Deforming", "keys on mass"):
        assert words in text, text
    assert "Cylinder" not in text
    assert plain.hullabaloo.import_notes == ""
    last = hb.bake()
    lines = [p for p in last["summary"]["problems"] if p.startswith("Drum:")]
    assert len(lines) == 1 and "not carried" in lines[0] and "keys on mass" in lines[0]


def test_animated_keyed_to_switch_every_frame_is_reported_and_baked():
    hb.empty_scene(frame_end=24)
    box("Ground", size=(10, 10, 1), location=(0, 0, -0.5), rb_type='PASSIVE')
    j = hb.add_box("Jitter", size=(1, 1, 1), location=(0, 0, 3))
    s = j.hullabaloo
    for f in range(5, 15):
        s.animated = bool(f % 2)
        j.keyframe_insert("hullabaloo.animated", frame=f)
    last = hb.bake()
    msgs = [p for p in last["problems"] if p.name == "Jitter"]
    assert len(msgs) == 1 and msgs[0].level == "WARNING", msgs
    assert "every frame from frame 6 to 14" in msgs[0].message
    assert "the bake goes on" in msgs[0].message
    assert last["summary"]["frames"] == 24
    z = hb.keys_of(j)[("location", 2)]["co"][:, 1]
    assert np.all(np.isfinite(z)) and len(z) == 24


def test_a_body_that_falls_out_of_the_world_is_reported():
    """What a misread bin did before (items pushed out of a solid hull, falling forever)
    must not pass silently: a body ending far below all the scenery is named."""
    hb.empty_scene(frame_end=48)
    hb.add_box("Ledge", size=(2, 2, 0.2), location=(0, 0, 0), body_type='PASSIVE')
    hb.add_box("Stays", size=(0.5, 0.5, 0.5), location=(0, 0, 1))
    hb.add_box("Falls", size=(0.5, 0.5, 0.5), location=(4, 0, 1))
    last = hb.bake()
    fallen = [p for p in last["problems"] if "below the lowest scenery" in p.message]
    assert [p.name for p in fallen] == ["Falls"] and fallen[0].level == "WARNING"
    assert any(s.startswith("Falls:") for s in last["summary"]["problems"])


def test_rebake_from_frame_inside_and_after_the_animated_phase_continues_it():
    """The stored states carry each body's kind: re-baking from a frame where the body
    follows its keys, or flies free, gives the same keys (to float32 key precision: the
    re-bake samples the baked keys of the animated phase)."""
    scene = hb.empty_scene(frame_end=40)
    hb.add_box("Ground", size=(20, 20, 1), location=(0, 0, -0.5), body_type='PASSIVE')
    a = hb.add_box("Thrown", size=(0.5, 0.5, 0.5), location=(-3, 0, 2))
    key_linear(a, "location", [(1, (-3, 0, 2)), (10, (-1.5, 0, 3))])
    linear_keys(a)
    for f, on in ((1, True), (9, True), (10, False)):
        a.hullabaloo.animated = on
        a.keyframe_insert("hullabaloo.animated", frame=f)
    b = hb.add_box("Sleeper", size=(0.5, 0.5, 0.5), location=(0.5, 0, 3.2),
                   use_start_deactivated=True)
    scene.frame_set(1)
    hb.bake()
    full = {o.name: hb.keys_of(o) for o in (a, b)}
    za = full["Thrown"][("location", 2)]["co"][:, 1]
    assert np.ptp(full["Sleeper"][("location", 2)]["co"][:, 1]) > 0.5   # it was hit
    np.testing.assert_allclose(za[:9], 2 + np.arange(9) / 9.0, atol=1e-5)  # on its keys
    for frame in (6, 20):
        scene.frame_set(frame)
        assert bpy.ops.hullabaloo.rebake_from_frame() == {'FINISHED'}
        for o in (a, b):
            again = hb.keys_of(o)
            for ch in full[o.name]:
                np.testing.assert_allclose(again[ch]["co"], full[o.name][ch]["co"],
                                           atol=1e-4, err_msg=f"{frame} {o.name} {ch}")
