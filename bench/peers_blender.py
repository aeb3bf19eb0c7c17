"""Blender's built-in Rigid Body (Bullet), run as a user would: a Rigid Body World, bodies
added with ``rigidbody.objects_add``, the point cache baked with ``ptcache.bake_all`` and the
result turned into keys with ``rigidbody.bake_to_keyframes`` (Blender's own operator, run with
a 3D View context override: the bpy module has a window with the default screen).

Settings: the Rigid Body World defaults (10 substeps per frame = 240 Hz at 24 fps, 10 solver
iterations), per-body mass / friction / restitution / damping from the scene, collision
shapes Box / Convex Hull / Sphere, collision margin from the scene (``ShapeSpec.margin``),
deactivation off (Blender's default).

Initial velocities: Blender has no initial-velocity setting. Scenes that need one get a
two-frame pre-roll: the body is Animated (kinematic) along its constant-velocity path for
frames 1-3 and dynamic from then on; Bullet gives a kinematic body the velocity of its motion
and keeps it when the body turns dynamic (checked: the first free frame moves v / fps). The
scene's t = 0 is then frame 3, and the pre-roll is neither timed nor keyed.
"""
import time

import numpy as np
from bpy_scene import (
    add_rigid_bodies,
    bake_rigid_world,
    build_objects,
    key_count,
    maxrss_mb,
    pose_buffers,
    read_poses,
    rigid_body_world,
    start_bpy,
    view3d_override,
)

SHAPES = {"box": "BOX", "hull": "CONVEX_HULL", "sphere": "SPHERE"}
PREROLL = 2


def _pre_roll(bpy, s, objs, first):
    """Kinematic keys for frames 1..first on the constant-velocity path into the start pose,
    dynamic from first + 1 on."""
    from mathutils import Quaternion

    from engine.core import quat
    dt = 1.0 / s.fps
    for i in s.dynamic:
        o = objs[i]
        for f in range(1, first + 1):
            t = (f - first) * dt
            o.location = tuple(s.pos[i] + s.lin_vel[i] * t)
            q = quat.multiply(quat.exp_map(s.ang_vel[i], t), s.quat[i])
            o.rotation_quaternion = Quaternion(tuple(q))
            o.keyframe_insert("location", frame=f)
            o.keyframe_insert("rotation_quaternion", frame=f)
            o.rigid_body.kinematic = True
            o.rigid_body.keyframe_insert("kinematic", frame=f)
        o.rigid_body.kinematic = False
        o.rigid_body.keyframe_insert("kinematic", frame=first + 1)
        for fc in o.animation_data.action.fcurves:
            for k in fc.keyframe_points:
                k.interpolation = 'LINEAR'


def setup(bpy, s):
    objs = build_objects(bpy, s, quaternion_mode=s.has_velocities)
    scene = bpy.context.scene
    first = 1 + (PREROLL if s.has_velocities else 0)
    last = first + s.frames - 1
    rigid_body_world(bpy, scene, last)
    for kind, rb_type in ((0, 'ACTIVE'), (1, 'PASSIVE')):
        sel = [objs[i] for i in np.flatnonzero(s.kind == kind)]
        if sel:
            add_rigid_bodies(bpy, sel, rb_type)
    for i, o in enumerate(objs):
        rb = o.rigid_body
        spec = s.shapes[s.shape_id[i]]
        rb.collision_shape = SHAPES[spec.kind]
        rb.use_margin = True
        rb.collision_margin = spec.margin
        rb.friction = s.friction[i]
        rb.restitution = s.restitution[i]
        if s.kind[i] == 0:
            rb.mass = s.mass[i]
            rb.linear_damping = s.lin_damp[i]
            rb.angular_damping = s.ang_damp[i]
    if s.has_velocities:
        _pre_roll(bpy, s, objs, first)
    scene.frame_set(1)
    return scene, objs, first, last


def run(s, keys=True):
    bpy = start_bpy()
    scene, objs, first, last = setup(bpy, s)
    out = pose_buffers(s.frames, len(s.dynamic))
    rss0 = maxrss_mb()
    sim = bake_rigid_world(bpy, scene)
    rss_sim = maxrss_mb()
    # Poses from the baked cache (what the keys will hold), not timed.
    dyn_rows = np.array(s.dynamic)  # objects are named in scene order
    pos, quat = read_poses(bpy, scene, range(first, last + 1), dyn_rows, out)
    dyn = [objs[i] for i in s.dynamic]
    keys_s, nkeys = None, None
    if keys:
        for o in bpy.context.view_layer.objects:
            o.select_set(False)
        for o in dyn:
            o.select_set(True)
        bpy.context.view_layer.objects.active = dyn[0]
        t0 = time.perf_counter()
        with bpy.context.temp_override(**view3d_override(bpy)):
            res = bpy.ops.rigidbody.bake_to_keyframes(frame_start=first, frame_end=last)
        keys_s = time.perf_counter() - t0
        if res != {'FINISHED'}:
            raise RuntimeError(f"rigidbody.bake_to_keyframes returned {res}")
        nkeys = key_count(dyn, first, last)  # the pre-roll's keys are not output
    result = dict(sim_seconds=sim, keys_seconds=keys_s, setup_seconds=None,
                  wall_seconds=sim + (keys_s or 0.0), keys=nkeys, rss_before_mb=rss0,
                  rss_sim_mb=rss_sim, rss_peak_mb=maxrss_mb(), frames=len(pos), problems=[])
    return result, pos, quat
