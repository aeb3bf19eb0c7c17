"""Joints side by side with Blender's own Rigid Body (Bullet) on the same scenes, in the bpy
wheel: each scene is built with Blender's rigid bodies and constraints (Connect tool for the
chain), simulated by Blender (frame by frame from the start, default world: 10 substeps,
10 iterations), then imported with hullabaloo.import_rigid_body and baked by Hullabaloo.

Scenes (2 s at 24 fps unless said):
- chain: a passive anchor and eight 1 kg 0.4 m cubes in a horizontal row 0.5 m apart, Point
  constraints by Connect (chain by distance, pivot at the centre), swinging down:
  worst link gap (distance between the joint point carried by each of the two bodies);
- hinge: a 20 kg trapdoor on a Hinge (axis along Y) to a passive post, limits -10..+45 deg,
  falling onto its limit: overshoot past it, end angle and hinge point drift;
- cantilever: three 0.5 m 1 kg blocks glued to a passive wall and to each other by Fixed
  constraints (breaking threshold 2.0 impulse per Bullet substep): tip sag after 1 s, then a
  60 kg ball dropped from 5 m on the tip: does it snap;
- rope: the issue's new-user rope (tests/addon/joints_rope_scene.py): 50 capsules joined by
  Connect (Point), overlapping at the joints, both ends keyed Animated for 0.5 s, then
  released onto a table, 3 s; Blender's run is a point-cache bake (ptcache.bake_all):
  worst link gap, fastest capsule, capsules on the table, time to simulate.

    python bench/bench_joints_blender.py            (all scenes)
    python bench/bench_joints_blender.py --rope     (the rope only)
"""
import math
import os
import sys
import tempfile

import numpy as np

os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="hb_bench_user_"))
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "addon"))

import hb_blender as hb
import joints_rope_scene as rope

bpy = hb.bpy


def box(name, size, location, kind='ACTIVE', mass=1.0):
    o = hb.add_box(name, size=size, location=location, enabled=False)
    with bpy.context.temp_override(object=o, active_object=o, selected_objects=[o]):
        bpy.ops.rigidbody.object_add(type=kind)
    o.rigid_body.collision_shape = 'BOX'
    o.rigid_body.mass = mass
    return o


def connect(objs, active, **kw):
    before = {o.name for o in bpy.context.scene.objects}
    for o in bpy.context.scene.objects:
        o.select_set(o in objs)
    bpy.context.view_layer.objects.active = active
    bpy.ops.rigidbody.connect(**kw)
    return [o for o in bpy.context.scene.objects if o.name not in before]


def blender_frames(scene, probe, frames):
    """Blender's simulation, stepped frame by frame from the start; probe() per frame."""
    scene.rigidbody_world.point_cache.frame_end = frames[-1]
    out = []
    for f in frames:
        scene.frame_set(f)
        out.append(probe())
    return out


def hullabaloo_frames(scene, probe, frames):
    for o in scene.objects:
        o.select_set(False)
    bpy.ops.hullabaloo.import_rigid_body(all=True, disable_blender_world=True)
    scene.hullabaloo.use_scene_frame_range = True   # the import copied the cache's 1-250
    scene.frame_set(frames[0])
    summary = hb.bake()
    out = []
    for f in frames:
        scene.frame_set(f)
        out.append(probe())
    return out, summary


def anchor_probe(empties, frame0):
    """Worst gap between the joint point as carried by object1 and by object2."""
    scene = bpy.context.scene
    scene.frame_set(frame0)
    data = []
    for e in empties:
        c = e.rigid_body_constraint
        p = np.append(np.array(e.matrix_world.translation), 1.0)
        data.append((c.object1, c.object2,
                     np.linalg.inv(np.array(c.object1.matrix_world)) @ p,
                     np.linalg.inv(np.array(c.object2.matrix_world)) @ p))

    def probe():
        return max(float(np.linalg.norm((np.array(a.matrix_world) @ la - np.array(b.matrix_world)
                                         @ lb)[:3])) for a, b, la, lb in data)
    return probe


def scene_chain():
    scene = hb.empty_scene(frame_end=48)
    bpy.ops.rigidbody.world_add()
    cubes = [box(f"Link{i}", (0.4, 0.4, 0.4), (0.5 * i, 0, 5), 'PASSIVE' if i == 0 else 'ACTIVE')
             for i in range(9)]
    empties = connect(cubes, cubes[0], con_type='POINT', pivot_type='CENTER',
                      connection_pattern='CHAIN_DISTANCE')
    return scene, empties


def scene_hinge():
    """A 1 m x 0.5 m trapdoor (20 kg) hinged along Y at its edge to a passive post, limits
    -10..+45 deg: it falls and must stop at 45 deg down."""
    scene = hb.empty_scene(frame_end=48)
    bpy.ops.rigidbody.world_add()
    post = box("Post", (0.1, 0.5, 0.1), (0, 0, 3), 'PASSIVE')
    door = box("Door", (1.0, 0.5, 0.05), (0.55, 0, 3), mass=20.0)
    (e,) = connect([post, door], door, con_type='HINGE', pivot_type='CENTER',
                   connection_pattern='SELECTED_TO_ACTIVE')
    e.location = (0.05, 0, 3)
    e.rotation_euler = (-math.pi / 2, 0, 0)     # the hinge's Z along world +Y
    c = e.rigid_body_constraint
    c.use_limit_ang_z = True
    c.limit_ang_z_lower, c.limit_ang_z_upper = math.radians(-10), math.radians(45)
    return scene, e, door


def run_hinge():
    frames = list(range(1, 49))
    out = {}
    for engine in ("blender", "ours"):
        scene, e, door = scene_hinge()
        bpy.context.view_layer.update()
        gap = anchor_probe([e], 1)

        def probe():
            x = np.array(door.matrix_world)[:3, 0]
            return math.degrees(math.atan2(-x[2], x[0])), gap()
        if engine == "blender":
            res = blender_frames(scene, probe, frames)
        else:
            res, _ = hullabaloo_frames(scene, probe, frames)
        ang = np.array([r[0] for r in res])
        out[engine] = (ang.max() - 45.0, ang[-1] - 45.0, max(r[1] for r in res))
    return out


def scene_cantilever(ball_drop):
    scene = hb.empty_scene(frame_end=72)
    bpy.ops.rigidbody.world_add()
    wall = box("Wall", (0.2, 1.0, 1.0), (-0.1, 0, 3), 'PASSIVE')
    blocks = [box(f"Block{i}", (0.5, 0.3, 0.3), (0.25 + 0.5 * i, 0, 3)) for i in range(3)]
    empties = connect([wall] + blocks, wall, con_type='FIXED', pivot_type='CENTER',
                      connection_pattern='CHAIN_DISTANCE')
    for e in empties:
        e.rigid_body_constraint.use_breaking = True
        e.rigid_body_constraint.breaking_threshold = 2.0
    if ball_drop:
        bpy.ops.mesh.primitive_uv_sphere_add(radius=0.2, location=(1.25, 0, 8.0))
        ball = bpy.context.active_object
        bpy.ops.rigidbody.object_add(type='ACTIVE')
        ball.rigid_body.mass = 60.0
        ball.rigid_body.collision_shape = 'SPHERE'
    return scene, blocks, empties


def run_chain():
    frames = list(range(1, 49))
    scene, empties = scene_chain()
    blender = max(blender_frames(scene, anchor_probe(empties, 1), frames))
    scene, empties = scene_chain()
    ours, summary = hullabaloo_frames(scene, anchor_probe(empties, 1), frames)
    return blender, max(ours), (summary.get("summary") or {}).get("simulation_seconds", float("nan"))


def run_cantilever():
    out = {}
    for drop in (False, True):
        for engine in ("blender", "ours"):
            scene, blocks, empties = scene_cantilever(drop)
            tip = blocks[-1]

            def probe():
                return float(tip.matrix_world.translation.z)
            frames = list(range(1, 73 if drop else 25))
            if engine == "blender":
                z = blender_frames(scene, probe, frames)
            else:
                z, _ = hullabaloo_frames(scene, probe, frames)
            out[(engine, drop)] = (3.0 - z[-1], min(z))
    return out


def run_rope(frames=72):
    import time
    out = {}
    for engine in ("blender", "ours"):
        scene, links, empties, _ = rope.build(hb, frames)
        pins = rope.joint_locals(empties)
        t0, c0 = time.perf_counter(), time.process_time()
        if engine == "blender":
            rope.blender_bake(hb, scene)
        else:
            for o in scene.objects:
                o.select_set(False)
            bpy.ops.hullabaloo.import_rigid_body(all=True)
            hb.bake()
        secs = time.perf_counter() - t0
        cpu = time.process_time() - c0
        m = rope.measure(hb, scene, links, pins, list(range(1, frames + 1)))
        settle = np.flatnonzero(m["speed"] > 0.05)
        out[engine] = dict(gap=m["gap"].max(), gap_end=m["gap"][-1], fast=m["speed"].max(),
                           table=int(m["on_table"][-1]), secs=secs, cpu=cpu,
                           settled=(int(settle[-1]) + 2) if len(settle) else 1)
    return out


def main():
    hb.session()
    if "--rope" not in sys.argv:
        main_small()
    r = run_rope()
    b, o = r["blender"], r["ours"]
    print(f"rope        worst link gap (mm)          {1000 * b['gap']:8.2f}   {1000 * o['gap']:8.2f}")
    print(f"rope        link gap at the end (mm)     {1000 * b['gap_end']:8.2f}   "
          f"{1000 * o['gap_end']:8.2f}")
    print(f"rope        fastest capsule (m/s)        {b['fast']:8.2f}   {o['fast']:8.2f}")
    print(f"rope        on the table at the end      {b['table']:8d}   {o['table']:8d}")
    print(f"rope        settled (< 5 cm/s) by frame  {b['settled']:8d}   {o['settled']:8d}")
    print(f"rope        72 frames: wall / CPU (s)  {b['secs']:5.2f} / {b['cpu']:5.2f}   "
          f"{o['secs']:5.2f} / {o['cpu']:5.2f}")


def main_small():
    b, o, secs = run_chain()
    print("scene       figure                         Blender     Hullabaloo")
    print(f"chain       worst link gap (mm)          {1000 * b:8.2f}   {1000 * o:8.2f}"
          f"   (ours simulated in {secs:.2f} s)")
    hinge = run_hinge()
    print(f"hinge       overshoot past 45 deg (deg)  {hinge['blender'][0]:8.2f}   "
          f"{hinge['ours'][0]:8.2f}")
    print(f"hinge       end angle - limit (deg)      {hinge['blender'][1]:8.2f}   "
          f"{hinge['ours'][1]:8.2f}")
    print(f"hinge       hinge point drift (mm)       {1000 * hinge['blender'][2]:8.2f}   "
          f"{1000 * hinge['ours'][2]:8.2f}")
    cant = run_cantilever()
    print(f"cantilever  tip sag after 1 s (mm)       {1000 * cant[('blender', False)][0]:8.2f}"
          f"   {1000 * cant[('ours', False)][0]:8.2f}")
    snapped = {e: cant[(e, True)][1] < 1.5 for e in ("blender", "ours")}
    print(f"cantilever  snaps under the 60 kg ball    {snapped['blender']!s:>8s}"
          f"   {snapped['ours']!s:>8s}")


if __name__ == "__main__":
    main()
