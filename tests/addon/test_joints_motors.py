"""Motors in real Blender. Blender drives only its Motor type (Bullet's motor is set up for
RBC_TYPE_MOTOR alone; Hinge, Slider and Piston store motor settings it never uses):
- Blender's Motor constraints (angular and linear, strong and force-limited) imported and
  baked move like Blender's own simulation of the same scene and like the closed forms as
  Bullet defines them: the second object moves at minus the target velocity (Bullet drives
  the first relative to the second) and "max impulse" bounds the motor's force (N, N m:
  Bullet's 6-DOF motor bounds each substep's impulse by it times the substep), so a limited
  motor spins up at max / I;
- motor settings ticked on Blender's Hinge, Slider and Piston do nothing in Blender; the
  import leaves them off and names them; ticked in Hullabaloo's joint they drive the hinge
  about Z, the slider along X and the piston along and about X (closed forms)."""
import math

import hb_blender as hb
import numpy as np

bpy = hb.bpy
FPS, SUBSTEPS = 24, 10
FRAMES = 25                       # 1 s


def rigid(obj, kind='ACTIVE'):
    with bpy.context.temp_override(object=obj, active_object=obj, selected_objects=[obj]):
        assert bpy.ops.rigidbody.object_add(type=kind) == {'FINISHED'}
    rb = obj.rigid_body
    rb.collision_shape = 'BOX'
    rb.linear_damping = rb.angular_damping = 0.0     # the closed forms have none
    return obj


def scene_without_gravity():
    scene = hb.empty_scene(frame_end=FRAMES)
    bpy.ops.rigidbody.world_add()
    scene.gravity = (0.0, 0.0, 0.0)
    rbw = scene.rigidbody_world
    rbw.substeps_per_frame = SUBSTEPS
    rbw.point_cache.frame_start, rbw.point_cache.frame_end = 1, FRAMES
    return scene


def constraint(name, kind, base, body, at, rotation=(0.0, 0.0, 0.0), **settings):
    """An Empty with Blender's rigid-body constraint (object1 base, object2 body)."""
    e = bpy.data.objects.new(name, None)
    bpy.context.scene.collection.objects.link(e)
    e.location, e.rotation_euler = at, rotation
    for o in bpy.context.scene.objects:
        o.select_set(o == e)
    bpy.context.view_layer.objects.active = e      # (a context override crashes 4.2 here)
    assert bpy.ops.rigidbody.constraint_add(type=kind) == {'FINISHED'}
    c = e.rigid_body_constraint
    c.object1, c.object2 = base, body
    for k, v in settings.items():
        setattr(c, k, v)
    return e


def pair(i, mass=1.0):
    """A passive base far below and a 1 m cube body (I = m / 6 about any axis)."""
    base = rigid(hb.add_box(f"Base{i}", size=(0.5, 0.5, 0.5), location=(4 * i, 0, -5),
                            enabled=False), 'PASSIVE')
    body = rigid(hb.add_box(f"Body{i}", size=(1, 1, 1), location=(4 * i, 0, 3),
                            enabled=False))
    body.rigid_body.mass = mass
    return base, body


def tracks(scene, objs):
    """Per object: positions (F, 3) and rotation matrices (F, 3, 3) over the frames."""
    pos, rot = {o.name: [] for o in objs}, {o.name: [] for o in objs}
    for f in range(1, FRAMES + 1):
        scene.frame_set(f)
        for o in objs:
            m = np.array(o.matrix_world)
            pos[o.name].append(m[:3, 3])
            rot[o.name].append(m[:3, :3])
    return ({k: np.array(v) for k, v in pos.items()}, {k: np.array(v) for k, v in rot.items()})


def spin(rot, axis):
    """Unwrapped turn (rad) of a body about a world axis (0 x, 2 z) from its first pose."""
    i, j = [(1, 2), None, (0, 1)][axis]
    return np.unwrap(np.arctan2(rot[:, j, i], rot[:, i, i]))


def blender_then_ours(scene, objs):
    with bpy.context.temp_override(scene=scene, point_cache=scene.rigidbody_world.point_cache):
        bpy.ops.ptcache.free_bake_all()
        assert bpy.ops.ptcache.bake_all(bake=True) == {'FINISHED'}
    blender = tracks(scene, objs)
    for o in scene.objects:
        o.select_set(False)
    assert bpy.ops.hullabaloo.import_rigid_body(all=True) == {'FINISHED'}
    summary = hb.bake()
    return blender, tracks(scene, objs), summary


def test_blender_motor_constraints_match_blender_and_the_closed_forms():
    scene = scene_without_gravity()
    b0, strong_ang = pair(0)
    b1, weak_ang = pair(1)
    b2, strong_lin = pair(2)
    b3, weak_lin = pair(3)
    constraint("MotorStrongAng", 'MOTOR', b0, strong_ang, (0, 0, 3), use_motor_ang=True,
               motor_ang_target_velocity=3.0, motor_ang_max_impulse=1000.0)
    constraint("MotorWeakAng", 'MOTOR', b1, weak_ang, (4, 0, 3), use_motor_ang=True,
               motor_ang_target_velocity=30.0, motor_ang_max_impulse=0.2)
    constraint("MotorStrongLin", 'MOTOR', b2, strong_lin, (8, 0, 3), use_motor_lin=True,
               motor_lin_target_velocity=2.0, motor_lin_max_impulse=1000.0)
    constraint("MotorWeakLin", 'MOTOR', b3, weak_lin, (12, 0, 3), use_motor_lin=True,
               motor_lin_target_velocity=20.0, motor_lin_max_impulse=0.5)
    bodies = [strong_ang, weak_ang, strong_lin, weak_lin]
    (bpos, brot), (opos, orot), summary = blender_then_ours(scene, bodies)
    assert summary["problems"] == []
    t = np.arange(FRAMES) / FPS
    inertia = 1.0 / 6.0
    alpha_ref, acc_ref = -0.2 / inertia, -0.5 / 1.0     # max force / inertia, signed
    for name, (p, r) in (("Blender", (bpos, brot)), ("Hullabaloo", (opos, orot))):
        w_strong = np.diff(spin(r["Body0"], 0)[-6:]).mean() * FPS
        alpha = 2 * spin(r["Body1"], 0)[-1] / t[-1] ** 2        # theta = alpha t^2 / 2
        v_strong = np.diff(p["Body2"][-6:, 0]).mean() * FPS
        acc = 2 * (p["Body3"][-1, 0] - p["Body3"][0, 0]) / t[-1] ** 2
        print(f"\n{name}: strong angular motor {w_strong:.4f} rad/s (-3), limited spin-up "
              f"{alpha:.4f} rad/s^2 ({alpha_ref:.4f}), strong linear {v_strong:.4f} m/s (-2), "
              f"limited {acc:.4f} m/s^2 ({acc_ref:.4f})")
        assert abs(w_strong + 3.0) < 0.03                         # 1 %
        assert abs(alpha - alpha_ref) < 0.02 * abs(alpha_ref)     # 2 %
        assert abs(v_strong + 2.0) < 0.02
        assert abs(acc - acc_ref) < 0.02 * abs(acc_ref)
    # Same direction and amount as Blender's, frame by frame.
    np.testing.assert_allclose(spin(orot["Body0"], 0), spin(brot["Body0"], 0), atol=0.03)
    np.testing.assert_allclose(spin(orot["Body1"], 0), spin(brot["Body1"], 0), atol=0.02)
    np.testing.assert_allclose(opos["Body2"], bpos["Body2"], atol=0.02)
    np.testing.assert_allclose(opos["Body3"], bpos["Body3"], atol=0.01)
    # Nothing else moves: a Motor constrains nothing, and no force acts off its axis.
    for o in bodies:
        assert np.abs(opos[o.name][:, 1:] - opos[o.name][0, 1:]).max() < 1e-6


def test_motor_settings_on_hinge_slider_piston_blender_ignores_ours_drive():
    scene = scene_without_gravity()
    b0, door = pair(0)
    b1, sled = pair(1)
    b2, rod = pair(2)
    hinge = constraint("Hinge", 'HINGE', b0, door, (0, 0, 3), use_motor_ang=True,
                       motor_ang_target_velocity=2.0, motor_ang_max_impulse=100.0)
    slider = constraint("Slider", 'SLIDER', b1, sled, (4, 0, 3), use_motor_lin=True,
                        motor_lin_target_velocity=1.5, motor_lin_max_impulse=100.0)
    piston = constraint("Piston", 'PISTON', b2, rod, (8, 0, 3), use_motor_lin=True,
                        use_motor_ang=True, motor_lin_target_velocity=-1.0,
                        motor_ang_target_velocity=4.0, motor_lin_max_impulse=100.0,
                        motor_ang_max_impulse=100.0)
    bodies = [door, sled, rod]
    (bpos, brot), (opos, orot), summary = blender_then_ours(scene, bodies)
    # Blender: nothing moves (its Hinge / Slider / Piston run no motor) ...
    for o in bodies:
        assert np.abs(bpos[o.name] - bpos[o.name][0]).max() < 1e-4
        assert np.abs(brot[o.name] - brot[o.name][0]).max() < 1e-4
    # ... and imported as Blender runs them: motors off, named in the report and the summary.
    notes = hb.pkg().addon.ops.LAST_IMPORT["objects"]
    for e, kinds in ((hinge, ("ang",)), (slider, ("lin",)), (piston, ("lin", "ang"))):
        js = e.hullabaloo_joint
        for k in kinds:
            assert not getattr(js, f"use_motor_{k}")
            assert any(n.startswith(f"use_motor_{k}:") for n in notes[e.name]), notes
        lines = [p for p in summary["summary"]["problems"] if p.startswith(f"{e.name}:")]
        assert len(lines) == 1 and "use_motor" in lines[0], summary["summary"]["problems"]
    for o in bodies:
        assert np.abs(opos[o.name] - opos[o.name][0]).max() < 1e-6
    # Hullabaloo's own joints drive them: the hinge about the frame's Z in Bullet's sense
    # of its angle (like its limits: the first object relative to the second, so the door
    # turns at minus the target), slider and piston the second object along / about X.
    hinge.hullabaloo_joint.use_motor_ang = True
    slider.hullabaloo_joint.use_motor_lin = True
    piston.hullabaloo_joint.use_motor_lin = piston.hullabaloo_joint.use_motor_ang = True
    assert hinge.hullabaloo_joint.motor_ang_max_torque == 100.0
    scene.frame_set(1)
    hb.bake()
    pos, rot = tracks(scene, bodies)
    last = slice(-6, None)
    w_door = np.diff(spin(rot["Body0"], 2)[last]).mean() * FPS
    v_sled = np.diff(pos["Body1"][last, 0]).mean() * FPS
    v_rod = np.diff(pos["Body2"][last, 0]).mean() * FPS
    w_rod = np.diff(spin(rot["Body2"], 0)[last]).mean() * FPS
    print(f"\nHullabaloo motors: hinge {w_door:.4f} rad/s (-2), slider {v_sled:.4f} m/s (1.5), "
          f"piston {v_rod:.4f} m/s (-1) and {w_rod:.4f} rad/s (4)")
    assert abs(w_door + 2.0) < 0.02 and abs(v_sled - 1.5) < 0.015
    assert abs(v_rod + 1.0) < 0.01 and abs(w_rod - 4.0) < 0.04
    # Everything else stays locked: the hinge turns about Z only, the slider moves along X.
    assert np.abs(pos["Body0"] - pos["Body0"][0]).max() < 1e-3
    assert np.abs(rot["Body0"][:, 2, 2] - 1.0).max() < 1e-4          # Z stays Z
    assert np.abs(pos["Body1"][:, 1:] - pos["Body1"][0, 1:]).max() < 1e-3
    assert np.abs(rot["Body1"] - rot["Body1"][0]).max() < 1e-3
    assert math.isfinite(w_rod)
    # A positive target drives toward the upper limit as the panel shows it: the hinge's
    # (Bullet's angle, the first object relative to the second: the door at minus it) and
    # the slider's.
    jh, jsl = hinge.hullabaloo_joint, slider.hullabaloo_joint
    jh.use_limit_ang_z, jh.limit_ang_z_lower, jh.limit_ang_z_upper = True, -0.1, 0.5
    jsl.use_limit_lin_x, jsl.limit_lin_x_lower, jsl.limit_lin_x_upper = True, -0.1, 0.4
    scene.frame_set(1)
    hb.bake()
    pos, rot = tracks(scene, bodies)
    door_turn = spin(rot["Body0"], 2)
    print(f"against the upper limits: door {door_turn[-1]:.4f} rad (-0.5), sled "
          f"{pos['Body1'][-1, 0] - pos['Body1'][0, 0]:.4f} m (0.4)")
    assert abs(door_turn[-1] + 0.5) < np.radians(2) and door_turn.min() > -0.5 - np.radians(2)
    assert abs(pos["Body1"][-1, 0] - pos["Body1"][0, 0] - 0.4) < 2e-3
