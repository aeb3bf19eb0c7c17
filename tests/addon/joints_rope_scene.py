"""The issue's new-user rope, built in real Blender the way a user would (shared by
tests/addon/test_joints_rope.py and bench/bench_joints_blender.py):

a table (passive box) and, 1.3 m above it, 50 capsules (Blender's Capsule shape, 0.084 m long,
radius 0.012 m, 0.05 kg) laid 0.06 m apart along one period of a sine wave in a horizontal
plane (2.94 m of rope between end points 2.2 m apart, so it hangs slack between its held
ends), so neighbours overlap by 24 mm at the joints;
Blender's own Rigid Body > Connect (Point, chain by distance, pivot at the centre) links
them, which turns collisions off between linked bodies. Both end capsules are keyed Animated
(``rigid_body.kinematic`` True at frame 1, False from RELEASE on): the rope sags between
them, then is released and falls onto the table, where it lies in a heap of curls.

Everything is measured by object names and world matrices, the same for Blender's
simulation (point-cache bake) and Hullabaloo's (import + bake).
"""
import math

import numpy as np

N_LINKS = 50
STEP = 0.06
RADIUS = 0.012
LENGTH = 0.084
MASS = 0.05
HEIGHT = 2.0
TABLE_TOP = 0.7
TABLE_SIZE = (3.0, 2.0, 0.05)
SPAN = 2.2            # x distance between the first and last capsule
RELEASE = 13          # first frame the ends are free (held for frames 1-12: 0.5 s)


def capsule_mesh(bpy, name, segments=12, rings=4):
    """A capsule along local Z (hemispheres on a cylinder), LENGTH long, RADIUS wide: its
    bounding box is what Blender's Capsule shape reads."""
    import bmesh
    bm = bmesh.new()
    half = LENGTH / 2 - RADIUS
    verts = []
    for cap, sign in ((0, -1.0), (1, 1.0)):
        for r in range(rings + 1):
            a = (r / rings) * (math.pi / 2)
            z = sign * (half + RADIUS * math.sin(a))
            rr = RADIUS * math.cos(a)
            ring = [bm.verts.new((rr * math.cos(2 * math.pi * s / segments),
                                  rr * math.sin(2 * math.pi * s / segments), z))
                    for s in range(segments)]
            verts.append((cap, ring))
    bmesh.ops.convex_hull(bm, input=bm.verts)
    mesh = bpy.data.meshes.new(name)
    bm.to_mesh(mesh)
    bm.free()
    return mesh


def layout():
    """(x, y, heading) of each capsule: equal arc steps along y = A sin(2 pi u), x = SPAN
    (u - 1/2), u in [0, 1], with A such that the arc is (N_LINKS - 1) STEP long."""
    u = np.linspace(0.0, 1.0, 20001)

    def curve(a):
        return SPAN * (u - 0.5), a * np.sin(2 * math.pi * u)

    def arc(a):
        x, y = curve(a)
        return np.concatenate(([0.0], np.cumsum(np.hypot(np.diff(x), np.diff(y)))))
    lo, hi = 0.0, SPAN
    for _ in range(60):                       # bisection on the amplitude
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if arc(mid)[-1] < STEP * (N_LINKS - 1) else (lo, mid)
    x, y = curve(lo)
    s = arc(lo)
    at = np.arange(N_LINKS) * STEP
    xs, ys = np.interp(at, s, x), np.interp(at, s, y)
    ux, uy = np.gradient(xs), np.gradient(ys)
    return [(float(a), float(b), float(math.atan2(dy, dx)))
            for a, b, dx, dy in zip(xs, ys, ux, uy)]


def rigid(bpy, obj, kind='ACTIVE', **settings):
    with bpy.context.temp_override(object=obj, active_object=obj, selected_objects=[obj]):
        assert bpy.ops.rigidbody.object_add(type=kind) == {'FINISHED'}
    for k, v in settings.items():
        setattr(obj.rigid_body, k, v)
    return obj


def build(hb, frame_end):
    """A new scene with the rope; returns (scene, links, empties, table)."""
    bpy = hb.bpy
    scene = hb.empty_scene(frame_end=frame_end)
    bpy.ops.rigidbody.world_add()
    rbw = scene.rigidbody_world
    rbw.point_cache.frame_start, rbw.point_cache.frame_end = 1, frame_end
    table = hb.add_box("Table", size=TABLE_SIZE, enabled=False,
                       location=(0, 0, TABLE_TOP - TABLE_SIZE[2] / 2))
    rigid(bpy, table, 'PASSIVE', collision_shape='BOX')
    mesh = capsule_mesh(bpy, "Capsule")
    links = []
    for i, (x, y, heading) in enumerate(layout()):
        o = bpy.data.objects.new(f"Rope{i:02d}", mesh)
        scene.collection.objects.link(o)
        o.location = (x, y, HEIGHT)
        o.rotation_euler = (0, math.pi / 2, heading)   # the capsule's Z along the rope
        links.append(rigid(bpy, o, 'ACTIVE', collision_shape='CAPSULE', mass=MASS))
    for end in (links[0], links[-1]):
        rb = end.rigid_body
        for frame, on in ((1, True), (RELEASE - 1, True), (RELEASE, False)):
            rb.kinematic = on
            rb.keyframe_insert("kinematic", frame=frame)
    before = set(scene.objects)
    for o in scene.objects:
        o.select_set(o in links)
    bpy.context.view_layer.objects.active = links[0]
    assert bpy.ops.rigidbody.connect(con_type='POINT', pivot_type='CENTER',
                                     connection_pattern='CHAIN_DISTANCE') == {'FINISHED'}
    empties = sorted((o for o in scene.objects if o not in before), key=lambda o: o.name)
    assert len(empties) == N_LINKS - 1
    scene.frame_set(1)
    return scene, links, empties, table


def blender_bake(hb, scene):
    """Blender's own simulation of the scene (point-cache bake)."""
    bpy = hb.bpy
    with bpy.context.temp_override(scene=scene,
                                   point_cache=scene.rigidbody_world.point_cache):
        bpy.ops.ptcache.free_bake_all()
        assert bpy.ops.ptcache.bake_all(bake=True) == {'FINISHED'}


def joint_locals(empties):
    """The joint point of each Empty at frame 1, in the frames of its two objects."""
    out = []
    for e in empties:
        c = e.rigid_body_constraint
        p = np.append(np.array(e.matrix_world.translation), 1.0)
        out.append((c.object1.name, c.object2.name,
                    (np.linalg.inv(np.array(c.object1.matrix_world)) @ p)[:3],
                    (np.linalg.inv(np.array(c.object2.matrix_world)) @ p)[:3]))
    return out


def measure(hb, scene, links, pins, frames):
    """Per frame: worst link gap (distance between the joint point carried by each of its
    two capsules), number of capsules above the table top, fastest capsule (m/s, from the
    frame-to-frame displacement). Returns dict of arrays."""
    gaps, on_table, mats = [], [], []
    for f in frames:
        scene.frame_set(f)
        m = {o.name: np.array(o.matrix_world) for o in links}
        mats.append(np.array([m[o.name][:3, 3] for o in links]))
        gaps.append(max(float(np.linalg.norm(m[a][:3, :3] @ la + m[a][:3, 3]
                                             - m[b][:3, :3] @ lb - m[b][:3, 3]))
                        for a, b, la, lb in pins))
        on_table.append(int(sum(abs(p[0]) < TABLE_SIZE[0] / 2 and abs(p[1]) < TABLE_SIZE[1] / 2
                                and p[2] > TABLE_TOP - 0.01 for p in mats[-1])))
    pos = np.array(mats)
    fps = scene.render.fps / scene.render.fps_base
    speed = np.linalg.norm(np.diff(pos, axis=0), axis=2).max(axis=1) * fps
    return dict(gap=np.array(gaps), on_table=np.array(on_table), speed=speed, pos=pos)
