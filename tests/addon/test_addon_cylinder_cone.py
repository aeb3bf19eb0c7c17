"""Cylinder and Cone shapes in the add-on (issue 14 item 4), in the real Blender: the shapes
are sized from the bounding box as Blender's own Cylinder/Cone collision shapes are, a
Blender cylinder mesh with our Cylinder shape rolls down a slope as the closed form says, a
Blender cone rests on its base, bad sizes are reported by object name. (The overlay
drawing of these shapes is tested in plain Python: tests/test_cylinder_cone.py.)"""
import math

import hb_blender as hb
import numpy as np
import pytest

bpy = hb.bpy
from mathutils import Matrix

G = 9.81


def read_scene(scene):
    bpy.context.view_layer.update()
    return hb.pkg().addon.collect.SceneReader(scene, bpy.context.evaluated_depsgraph_get()).read()


def primitive(kind, name, **kw):
    """A Blender primitive mesh object (Add > Mesh > Cylinder / Cone), its origin at the
    centre of its bounding box as Blender makes it."""
    op = bpy.ops.mesh.primitive_cylinder_add if kind == "CYLINDER" else bpy.ops.mesh.primitive_cone_add
    assert op(**kw) == {'FINISHED'}
    obj = bpy.context.active_object
    obj.name = name
    s = obj.hullabaloo
    s.enabled, s.body_type, s.shape = True, "DYNAMIC", kind
    return obj


def test_shapes_sized_from_the_bounding_box_like_blender():
    scene = hb.empty_scene(frame_end=2)
    primitive("CYLINDER", "Wheel", vertices=32, radius=0.3, depth=0.4)
    cone = primitive("CONE", "Cone", vertices=24, radius1=0.5, radius2=0.0, depth=1.2,
                     location=(3, 0, 0))
    cone.scale = (1.0, 2.0, 0.5)     # world scale counts: radius max(x, y), height z
    bodies = {b.name: b for b in read_scene(scene).bodies}
    eng = hb.engine()
    w = bodies["Wheel"].shape
    assert isinstance(w, eng.Cylinder)
    assert (w.radius, w.height) == pytest.approx((0.3, 0.4), rel=1e-6)
    c = bodies["Cone"].shape
    assert isinstance(c, eng.Cone)
    # Blender's Cone primitive: base at -depth/2, apex at +depth/2 about its origin: the
    # engine's Cone frame. Scaled: radius = max(0.5 * 1, 0.5 * 2), height 1.2 * 0.5.
    assert (c.radius, c.height) == pytest.approx((1.0, 0.6), rel=1e-6)
    z = np.array([v.co.z for v in cone.data.vertices])
    assert z.min() == pytest.approx(-0.6) and z.max() == pytest.approx(0.6)


def test_blender_cylinder_rolls_down_a_slope_like_the_closed_form():
    fps, frames = 24, 49                  # 2 s
    scene = hb.empty_scene(frame_end=frames, fps=fps)
    th = math.radians(10.0)
    slope = hb.add_box("Slope", size=(30, 6, 1), body_type="PASSIVE")
    slope.rotation_euler = (0.0, th, 0.0)  # falls towards +x
    nrm = np.array([math.sin(th), 0.0, math.cos(th)])
    down = np.array([math.cos(th), 0.0, -math.sin(th)])
    r = 0.3
    start = (0.5 + r) * nrm - 4.0 * down
    wheel = primitive("CYLINDER", "Wheel", vertices=32, radius=r, depth=0.4,
                      location=tuple(start), rotation=(math.pi / 2, 0.0, 0.0))
    wheel.hullabaloo.mass = 2.0
    wheel.hullabaloo.friction = 0.8
    # Blender's default damping (0.04 / 0.1) would slow it: the closed form has none.
    wheel.hullabaloo.linear_damping = wheel.hullabaloo.angular_damping = 0.0
    scene.frame_set(1)
    hb.bake()
    t, s, lift = [], [], []
    for f in range(1, frames + 1):
        scene.frame_set(f)
        p = hb.matrix(wheel)[:3, 3]
        t.append((f - 1) / fps)
        s.append(float(np.dot(p - start, down)))
        lift.append(float(np.dot(p, nrm)) - (0.5 + r))
    a = 2.0 * np.polyfit(t, s, 2)[0]
    a_ref = 2.0 / 3.0 * G * math.sin(th)
    assert abs(a / a_ref - 1.0) < 0.015, (a, a_ref)
    assert s[-1] == pytest.approx(0.5 * a_ref * t[-1] ** 2, rel=0.015)
    assert max(abs(x) for x in lift) < 5e-4
    # It rolls: the wheel turned by s / r about +y as it goes down towards +x.
    x_end = np.array(wheel.matrix_world.to_3x3())[:, 0]
    assert abs(abs(np.array(wheel.matrix_world.to_3x3())[1, 2]) - 1.0) < 1e-3   # axis across
    phi = math.atan2(-x_end[2], x_end[0])                # turn about +y
    wrap = (phi - s[-1] / r + math.pi) % (2 * math.pi) - math.pi
    assert abs(wrap) < 0.05


def test_blender_cone_rests_on_its_base():
    scene = hb.empty_scene(frame_end=36)
    hb.add_box("Ground", size=(10, 10, 1), location=(0, 0, -0.5), body_type="PASSIVE")
    cone = primitive("CONE", "Cone", vertices=32, radius1=0.4, radius2=0.0, depth=0.8,
                     location=(0, 0, 0.45))
    scene.frame_set(1)
    hb.bake()
    scene.frame_set(36)
    m = hb.matrix(cone)
    assert m[2, 3] == pytest.approx(0.4, abs=1e-3)       # base on the ground (origin mid-height)
    assert m[2, 2] > math.cos(math.radians(0.2))


def test_flat_cylinder_is_reported_by_name_and_skipped():
    scene = hb.empty_scene(frame_end=2)
    disc = primitive("CYLINDER", "FlatDisc", vertices=16, radius=0.3, depth=0.4)
    disc.data.transform(Matrix.Scale(0.0, 4, (0.0, 0.0, 1.0)))     # a flat disc mesh
    reader = read_scene(scene)
    assert not [b for b in reader.bodies if b.name == "FlatDisc"]
    msgs = [p for p in reader.problems if p.name == "FlatDisc"]
    assert msgs and msgs[0].level == "ERROR" and "Cylinder height" in msgs[0].message, msgs
    assert "Skipped" in msgs[0].message


def test_import_maps_blender_cylinder_and_cone_shapes():
    scene = hb.empty_scene(frame_end=2)
    objs = []
    for kind in ("CYLINDER", "CONE"):
        o = primitive(kind, kind.title(), location=(len(objs) * 3, 0, 1))
        o.hullabaloo.enabled = False
        o.hullabaloo.shape = "CONVEX_HULL"
        bpy.ops.object.select_all(action='DESELECT')
        o.select_set(True)
        bpy.context.view_layer.objects.active = o
        bpy.ops.rigidbody.object_add(type='ACTIVE')
        o.rigid_body.collision_shape = kind
        objs.append(o)
    assert bpy.ops.hullabaloo.import_rigid_body(all=True) == {'FINISHED'}
    assert [o.hullabaloo.shape for o in objs] == ["CYLINDER", "CONE"]
    assert all(o.hullabaloo.enabled for o in objs)
    eng = hb.engine()
    bodies = {b.name: b.shape for b in read_scene(scene).bodies}
    assert isinstance(bodies["Cylinder"], eng.Cylinder) and isinstance(bodies["Cone"], eng.Cone)
