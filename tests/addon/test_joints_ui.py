"""The Hullabaloo Joint panel draws the settings each type uses (limits, springs, motors:
Motor, Hinge, Slider and Piston have motors), and hullabaloo.connect pairs objects and
places pivots exactly as Blender's own Rigid Body > Connect does on the same selection
(every pattern and pivot), in real Blender."""
import hb_blender as hb
import pytest
from test_addon_ui import draw

bpy = hb.bpy

MOTORS = {'MOTOR': {"lin", "ang"}, 'HINGE': {"ang"}, 'SLIDER': {"lin"},
          'PISTON': {"lin", "ang"}}
LIMITS = {'HINGE': {"limit_ang_z_lower"}, 'SLIDER': {"limit_lin_x_lower"},
          'PISTON': {"limit_lin_x_lower", "limit_ang_x_lower"}}


@pytest.mark.parametrize("kind", ['FIXED', 'POINT', 'HINGE', 'SLIDER', 'PISTON', 'GENERIC',
                                  'GENERIC_SPRING', 'MOTOR'])
def test_joint_panel_draws_what_each_type_uses(kind):
    scene = hb.empty_scene(frame_end=2)
    e = bpy.data.objects.new("Joint", None)
    scene.collection.objects.link(e)
    e.hullabaloo_joint.type = kind
    jp = hb.pkg().addon.joints.HULLABALOO_PT_joint
    from types import SimpleNamespace
    ctx = SimpleNamespace(object=e, scene=scene)
    assert jp.poll(ctx)
    names = {n for what, n in draw(jp, ctx) if what == "prop"}
    assert {"type", "object1", "object2", "disable_collisions", "break_force"} <= names
    motors = {k for k in ("lin", "ang") if f"use_motor_{k}" in names}
    assert motors == MOTORS.get(kind, set())
    if kind in ('GENERIC', 'GENERIC_SPRING'):
        assert {f"limit_{k}_{a}_lower" for k in ("lin", "ang") for a in "xyz"} <= names
    else:
        assert {n for n in names if n.startswith("limit_") and n.endswith("_lower")} == \
            LIMITS.get(kind, set())
    assert ("spring_stiffness_ang_z" in names) == (kind == 'GENERIC_SPRING')


def rigid(obj):
    with bpy.context.temp_override(object=obj, active_object=obj, selected_objects=[obj]):
        assert bpy.ops.rigidbody.object_add(type='ACTIVE') == {'FINISHED'}
    return obj


@pytest.mark.parametrize("pattern", ['SELECTED_TO_ACTIVE', 'CHAIN_DISTANCE'])
@pytest.mark.parametrize("pivot", ['CENTER', 'ACTIVE', 'SELECTED'])
def test_connect_pairs_and_pivots_like_blenders_connect(pattern, pivot):
    scene = hb.empty_scene(frame_end=2)
    bpy.ops.rigidbody.world_add()
    spots = [(0, 0, 1), (2.0, 0.5, 1), (0.7, -1.0, 2), (3.1, 1.0, 0.5), (1.2, 2.0, 1.5)]
    objs = [rigid(hb.add_box(f"O{i}", size=(0.3, 0.3, 0.3), location=p))
            for i, p in enumerate(spots)]
    active = objs[2]

    def select():
        for o in scene.objects:
            o.select_set(o in objs)
        bpy.context.view_layer.objects.active = active
    before = set(scene.objects)
    select()
    assert bpy.ops.rigidbody.connect(con_type='HINGE', pivot_type=pivot,
                                     connection_pattern=pattern) == {'FINISHED'}
    theirs = {(e.rigid_body_constraint.object1.name, e.rigid_body_constraint.object2.name):
              tuple(round(v, 6) for v in e.location)
              for e in scene.objects if e not in before}
    select()
    assert bpy.ops.hullabaloo.connect(joint_type='HINGE', pivot_type=pivot,
                                      connection_pattern=pattern) == {'FINISHED'}
    ours = {(e.hullabaloo_joint.object1.name, e.hullabaloo_joint.object2.name):
            tuple(round(v, 6) for v in e.location)
            for e in bpy.data.collections["Hullabaloo Joints"].objects}
    assert len(ours) == len(objs) - 1
    assert ours == theirs
