"""Force fields in real Blender, with Blender's own rigid-body simulation as the oracle.

Each case builds one scene holding two 2 m cubes at the same place: one is a Blender rigid
body (1 kg, Blender's defaults), simulated by Blender frame by frame; the other is a
Hullabaloo body with the same mass and damping, baked by the add-on. They never meet (each
simulator sees only its own cube) and feel the same field objects, made with
bpy.ops.object.effector_add. Over 2 s (48 frames at 24 fps) the baked path must stay within
10 % of Blender's displacement; the figures are printed (pytest -s) for the record.
"""
import math

import hb_blender as hb
import numpy as np

bpy = hb.bpy

FRAMES = 48


def make_scene(gravity=False):
    scene = hb.empty_scene(frame_end=FRAMES + 1)
    scene.use_gravity = gravity
    return scene


def add_cubes(location):
    """Blender's rigid-body cube and Hullabaloo's twin; returns (blender, ours)."""
    bpy.ops.mesh.primitive_cube_add(size=2.0, location=location)
    rb = bpy.context.object
    rb.name = "BlenderCube"
    bpy.ops.rigidbody.object_add()
    ours = hb.add_box("HullabalooCube", location=location, body_type="DYNAMIC", shape="BOX",
                      mass=rb.rigid_body.mass, linear_damping=rb.rigid_body.linear_damping,
                      angular_damping=rb.rigid_body.angular_damping)
    return rb, ours


def add_field(ftype, location=(0.0, 0.0, 0.0), rotation=(0.0, 0.0, 0.0), **settings):
    bpy.ops.object.effector_add(type=ftype, location=location, rotation=rotation)
    obj = bpy.context.object
    for k, v in settings.items():
        setattr(obj.field, k, v)
    return obj


def give_field(obj, ftype, **settings):
    """A field on an existing (mesh) object, as Physics > Force Field does."""
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.forcefield_toggle()
    obj.field.type = ftype
    for k, v in settings.items():
        setattr(obj.field, k, v)
    return obj


def paths(scene, rb, ours):
    """Blender's path (simulated frame by frame), then ours (baked), over frames 1..49."""
    blender = []
    for f in range(1, FRAMES + 2):
        scene.frame_set(f)
        blender.append(np.array(rb.matrix_world.translation))
    scene.frame_set(1)
    summary = hb.bake()
    mine = []
    for f in range(1, FRAMES + 2):
        scene.frame_set(f)
        mine.append(np.array(ours.matrix_world.translation))
    return np.array(blender), np.array(mine), summary


def compare(name, blender, mine, tol=0.10):
    """Worst distance between the paths over the frames, relative to Blender's largest
    displacement from the start; asserted below tol."""
    reach = np.max(np.linalg.norm(blender - blender[0], axis=1))
    err = np.max(np.linalg.norm(mine - blender, axis=1)) / reach
    print(f"\n{name}: Blender moves {reach:.4f} m (end {blender[-1].round(4)}), Hullabaloo "
          f"end {mine[-1].round(4)}, worst gap {100 * err:.2f} % of the displacement")
    assert reach > 0.05, f"{name}: Blender's cube barely moved ({reach} m); bad set-up"
    assert err < tol, f"{name}: {100 * err:.1f} % off Blender's path"
    return err


def test_wind_field_matches_blender():
    scene = make_scene()
    rb, ours = add_cubes((0.0, 0.0, 2.0))
    add_field("WIND", strength=5.0)
    blender, mine, summary = paths(scene, rb, ours)
    assert summary["summary"]["fields"] == 1
    compare("Wind 5", blender, mine)
    assert abs(blender[-1][2] - blender[0][2] - 0.2326) < 0.01   # Blender's own figure


def test_force_field_matches_blender():
    scene = make_scene()
    rb, ours = add_cubes((0.0, 0.0, 2.0))
    add_field("FORCE", strength=-10.0)
    blender, mine, _ = paths(scene, rb, ours)
    compare("Force -10", blender, mine)


def test_weights_gravity_drag_and_an_animated_field_match_blender():
    # Gravity on, the rigid-body world's weights (Gravity 0.5, All 0.8, Wind 0.5), a Drag
    # field (its "Quadratic" setting is Blender's velocity-proportional term) and a Wind
    # field keyed to turn from +X to +Y over the two seconds, with a falloff from its plane.
    scene = make_scene(gravity=True)
    rb, ours = add_cubes((0.0, 0.0, 20.0))
    w = scene.rigidbody_world.effector_weights
    w.gravity, w.all, w.wind = 0.5, 0.8, 0.5
    add_field("DRAG", linear_drag=0.0, quadratic_drag=0.3)
    wind = add_field("WIND", location=(-3.0, 0.0, 0.0), rotation=(0.0, math.pi / 2, 0.0),
                     strength=60.0, falloff_power=1.0)
    wind.keyframe_insert("rotation_euler", frame=1)
    wind.rotation_euler = (-math.pi / 2, 0.0, 0.0)
    wind.keyframe_insert("rotation_euler", frame=FRAMES + 1)
    blender, mine, _ = paths(scene, rb, ours)
    d = blender[-1] - blender[0]
    assert d[0] > 0.1 and d[1] > 0.1 and d[2] < -1.0, d    # pushed along x, then y; falls
    compare("Weights + Drag + keyed Wind", blender, mine)


def test_vortex_and_harmonic_fields_match_blender():
    scene = make_scene()
    rb, ours = add_cubes((2.0, 0.0, 0.5))
    add_field("VORTEX", strength=1.0)
    add_field("HARMONIC", strength=2.0, harmonic_damping=0.1, location=(0.0, 0.0, 0.5))
    blender, mine, _ = paths(scene, rb, ours)
    compare("Vortex + Harmonic", blender, mine)


def test_magnetic_and_a_line_force_with_tube_falloff_match_blender():
    # A falling cube bent by a Magnetic field about the Z axis through the origin, pushed by
    # a Force field with a Line shape, Tube falloff and min/max distances, off to one side.
    scene = make_scene(gravity=True)
    rb, ours = add_cubes((2.0, 0.0, 10.0))
    add_field("MAGNET", strength=1.0)
    add_field("FORCE", location=(2.0, -3.0, 0.0), strength=500.0, shape="LINE",
              falloff_type="TUBE", falloff_power=1.0, radial_falloff=2.0,
              use_min_distance=True, distance_min=2.0, use_radial_max=True, radial_max=6.0)
    blender, mine, _ = paths(scene, rb, ours)
    d = blender[-1] - blender[0]
    assert abs(d[1]) > 0.05 and abs(d[0]) > 0.01, d
    compare("Magnetic + Line Force (Tube)", blender, mine)


def test_cone_falloff_z_direction_keyed_strength_and_linear_drag_match_blender():
    # A Force field with a Cone falloff acting on its positive side only, its strength keyed
    # from 0 to 3000; a Drag field whose "Linear" setting is Blender's |v|^2 term; gravity.
    scene = make_scene(gravity=True)
    rb, ours = add_cubes((4.0, 0.0, 8.0))
    cone = add_field("FORCE", location=(0.0, 0.0, -20.0), strength=0.0, falloff_type="CONE",
                     z_direction="POSITIVE", falloff_power=0.5, radial_falloff=1.0,
                     use_radial_max=True, radial_max=60.0)
    cone.keyframe_insert("field.strength", frame=1)
    cone.field.strength = 3000.0
    cone.keyframe_insert("field.strength", frame=FRAMES + 1)
    add_field("DRAG", linear_drag=0.02, quadratic_drag=0.0)
    blender, mine, _ = paths(scene, rb, ours)
    d = blender[-1] - blender[0]
    assert d[0] > 0.05 and d[2] < -1.0, d
    compare("Cone Force (keyed strength) + Drag", blender, mine)


def test_effector_collection_limits_the_fields():
    scene = make_scene()
    rb, ours = add_cubes((0.0, 0.0, 2.0))
    add_field("WIND", strength=5.0)
    pull = add_field("FORCE", strength=20.0, location=(5.0, 0.0, 2.0))
    coll = bpy.data.collections.new("OnlyThis")
    scene.collection.children.link(coll)
    coll.objects.link(pull)
    scene.rigidbody_world.effector_weights.collection = coll
    blender, mine, summary = paths(scene, rb, ours)
    assert summary["summary"]["fields"] == 1
    assert abs(blender[-1][2] - blender[0][2]) < 1e-6        # the wind is outside the collection
    compare("Effector collection (Force only)", blender, mine)


def test_unsupported_fields_are_reported_by_name_and_the_bake_goes_on():
    scene = make_scene()
    ours = hb.add_box("Pushed", location=(0.0, 0.0, 2.0), shape="BOX")
    add_field("TEXTURE").name = "TexField"
    add_field("CHARGE", strength=3.0).name = "ChargeField"
    odd = hb.add_box("OddWind", location=(0.0, 0.0, -5.0), enabled=False)
    give_field(odd, "WIND", strength=5.0, shape="SURFACE", use_absorption=True)
    # A body that is itself a field: it pushes others, fields leave it alone (as Blender).
    mesh_field = hb.add_box("SelfField", location=(10.0, 0.0, 2.0), shape="BOX")
    give_field(mesh_field, "FORCE", strength=50.0)
    flat = add_field("WIND", strength=50.0)
    flat.scale = (1.0, 1.0, 0.0)          # no Z direction: Blender's wind does nothing
    add_field("FORCE", strength=50.0).location = (float("nan"), 0.0, 0.0)
    bpy.context.object.name = "NanField"
    summary = hb.bake()
    problems = [str(p) for p in summary["problems"]]
    text = "\n".join(problems)
    print("\n" + text)
    for name, words in (("TexField", "Texture force field"), ("ChargeField", "Charge force"),
                        ("OddWind", "Surface shape"), ("OddWind", "Absorption"),
                        ("SelfField", "both a simulated body"),
                        ("NanField", "non-finite transform")):
        assert any(p.startswith(name + ":") and words in p for p in problems), (name, words)
    # The wind, the flat wind, the NaN field (counted, ignored) and the mesh's Force field.
    assert summary["summary"]["fields"] == 4
    scene.frame_set(FRAMES + 1)
    assert ours.matrix_world.translation.z > 2.1     # the wind pushed it (Surface -> Point)
    assert ours.matrix_world.translation.x < -0.5    # and the Force field pushed it away
    assert abs(mesh_field.matrix_world.translation.x - 10.0) < 1e-6    # not pushed itself
