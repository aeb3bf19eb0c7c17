"""Panels and menus: the real draw() code of every panel runs against real settings, with a
layout that checks each property, operator (and its arguments) and menu it is asked to show
exists; background Blender has no UI to draw into, so the layout is the only stand-in."""
from types import SimpleNamespace

import hb_blender as hb
import pytest

bpy = hb.bpy


class Layout:
    """Records draw calls; fails on a property, operator or menu that does not exist."""

    def __init__(self, log):
        self.log = log

    def __setattr__(self, name, value):
        object.__setattr__(self, name, value)

    def prop(self, data, name, **kw):
        assert name in data.bl_rna.properties, f"{data.bl_rna.identifier} has no {name!r}"
        self.log.append(("prop", name))

    def operator(self, idname, **kw):
        mod, op = idname.split(".")
        rna = getattr(getattr(bpy.ops, mod), op).get_rna_type()
        self.log.append(("operator", idname))
        return OperatorArgs(rna)

    def menu(self, idname, **kw):
        assert hasattr(bpy.types, idname), idname
        self.log.append(("menu", idname))

    def label(self, **kw):
        self.log.append(("label", kw.get("text", "")))

    def separator(self, **kw):
        pass

    def row(self, **kw):
        return Layout(self.log)

    column = box = split = row


class OperatorArgs:
    def __init__(self, rna):
        object.__setattr__(self, "rna", rna)

    def __setattr__(self, name, value):
        assert name in self.rna.properties, f"{self.rna.identifier} has no argument {name!r}"


def draw(cls, context, header=False):
    log = []
    panel = SimpleNamespace(layout=Layout(log))
    (cls.draw_header if header else cls.draw)(panel, context)
    return log


def ui():
    return hb.pkg().addon.ui


@pytest.mark.parametrize("body_type", ["DYNAMIC", "PASSIVE", "ANIMATED"])
@pytest.mark.parametrize("mass_mode", ["MASS", "DENSITY"])
def test_physics_panels_draw_real_settings(body_type, mass_mode):
    scene = hb.empty_scene(frame_end=5)
    o = hb.add_box("Box", location=(0, 0, 2), body_type=body_type, mass_mode=mass_mode)
    ctx = SimpleNamespace(object=o, scene=scene)
    u = ui()
    assert u.HULLABALOO_PT_physics.poll(ctx)
    assert ("prop", "enabled") in draw(u.HULLABALOO_PT_physics, ctx, header=True)
    log = draw(u.HULLABALOO_PT_physics, ctx)
    assert ("prop", "body_type") in log and ("prop", "shape") in log
    shown = set()
    for cls in (u.HULLABALOO_PT_mass, u.HULLABALOO_PT_surface, u.HULLABALOO_PT_dynamics,
                u.HULLABALOO_PT_collisions):
        if cls.poll(ctx):
            shown |= set(draw(cls, ctx))
    if body_type == "DYNAMIC":
        assert ("prop", "mass" if mass_mode == "MASS" else "density") in shown
        assert ("prop", "initial_linear_velocity") in shown
    else:  # mass and dynamics make no sense for scenery
        assert ("prop", "mass") not in shown and ("prop", "linear_damping") not in shown
    assert ("prop", "friction") in shown and ("prop", "collision_collections") in shown
    # Non-mesh objects get no panel.
    empty = hb.add_object("Empty", None)
    assert not u.HULLABALOO_PT_physics.poll(SimpleNamespace(object=empty, scene=scene))


def test_baked_object_panel_offers_clear():
    scene = hb.empty_scene(frame_end=5)
    o = hb.add_box("Box", location=(0, 0, 2))
    hb.bake()
    log = draw(ui().HULLABALOO_PT_physics, SimpleNamespace(object=o, scene=scene))
    assert ("operator", "hullabaloo.clear_bake") in log
    assert any(k == "label" and "Baked: frames 1-5" in v for k, v in log)


@pytest.mark.parametrize("scene_range", [True, False])
def test_scene_panel_and_object_menu_draw(scene_range):
    scene = hb.empty_scene(frame_end=5)
    scene.hullabaloo.use_scene_frame_range = scene_range
    ctx = SimpleNamespace(object=None, scene=scene)
    log = draw(ui().HULLABALOO_PT_scene, ctx)
    for op in ("hullabaloo.bake", "hullabaloo.rebake_from_frame", "hullabaloo.clear_bake",
               "hullabaloo.import_rigid_body"):
        assert ("operator", op) in log
    for p in ("substeps", "iterations", "use_sleeping", "use_ccd", "gravity"):
        assert ("prop", p) in log
    log = draw(ui().HULLABALOO_MT_object, ctx)
    assert ("operator", "hullabaloo.add_selected") in log
    assert ("operator", "hullabaloo.bake") in log
    assert ("operator", "hullabaloo.settle") in log
    menu_log = []
    ui().object_menu(SimpleNamespace(layout=Layout(menu_log)), ctx)
    assert menu_log == [("menu", "HULLABALOO_MT_object")]


def test_operators_have_tooltips_and_polls():
    for name in ("BAKE", "REBAKE_FROM_FRAME", "CLEAR_BAKE", "IMPORT_RIGID_BODY",
                 "ADD_SELECTED", "REMOVE_SELECTED", "SETTLE"):
        cls = getattr(bpy.types, f"HULLABALOO_OT_{name.lower()}")
        assert len(cls.__doc__ or "") > 30, name
        assert 'UNDO' in cls.bl_options, name
        assert hasattr(cls, "poll"), name


def test_add_and_remove_on_the_selection():
    hb.empty_scene(frame_end=5)
    a = hb.add_box("A", enabled=False)
    b = hb.add_box("B", enabled=False)
    e = hb.add_object("E", None, enabled=False)
    for o in (a, e):
        o.select_set(True)
    assert bpy.ops.hullabaloo.add_selected(body_type='PASSIVE') == {'FINISHED'}
    assert (a.hullabaloo.enabled, a.hullabaloo.body_type) == (True, 'PASSIVE')
    assert not b.hullabaloo.enabled and not e.hullabaloo.enabled
    assert bpy.ops.hullabaloo.remove_selected() == {'FINISHED'}
    assert not a.hullabaloo.enabled
    a.select_set(False)
    e.select_set(False)
    with pytest.raises(RuntimeError, match="Select the mesh objects to simulate first"):
        bpy.ops.hullabaloo.add_selected()  # poll message, shown in the UI's tooltip too
    e.select_set(True)
    with pytest.raises(RuntimeError, match="No mesh object selected"):
        bpy.ops.hullabaloo.add_selected()
    with pytest.raises(RuntimeError, match="Bake the scene first"):
        bpy.ops.hullabaloo.rebake_from_frame()


def test_compound_settings_and_collision_part_are_shown_where_they_apply():
    scene = hb.empty_scene(frame_end=5)
    parent = hb.add_box("Parent", shape='CONVEX_HULL')
    child = hb.add_box("Child", enabled=False)
    child.parent = parent
    u = ui()

    def shown(obj):
        return {name for kind, name in draw(u.HULLABALOO_PT_physics,
                                             SimpleNamespace(object=obj, scene=scene))
                if kind == "prop"}

    new = {"compound_source", "decompose_max_parts", "decompose_tolerance", "collision_part"}
    assert shown(parent) & new == set() and shown(child) & new == set()
    parent.hullabaloo.shape = 'COMPOUND'
    assert shown(parent) & new == {"compound_source"}
    assert "collision_part" not in shown(child)  # the parent uses its loose parts
    parent.hullabaloo.compound_source = 'DECOMPOSE'
    assert shown(parent) & new == {"compound_source", "decompose_max_parts",
                                   "decompose_tolerance"}
    parent.hullabaloo.compound_source = 'CHILDREN'
    assert shown(parent) & new == {"compound_source"}
    assert "collision_part" in shown(child)
    s = parent.hullabaloo
    assert (s.decompose_max_parts, s.decompose_tolerance, child.hullabaloo.collision_part) \
        == (16, 0.0, False)
