"""Panels (Properties > Physics and > Scene) and the Object menu submenu (the viewport
overlays that draw the stored debug records live in addon/overlay/).

Layout follows Blender's own Rigid Body panels (property split, sub-panels per topic) so the
settings are where an artist looks for them. No sidebar tab: everything already has a home.
"""
import bpy


def _settings(context):
    obj = context.object
    return obj.hullabaloo if obj is not None else None


def _parent_takes_child_parts(obj):
    """The object's parent builds its Compound shape from child objects."""
    par = obj.parent
    if par is None or par.type != 'MESH':
        return False
    ps = par.hullabaloo
    return ps.shape == 'COMPOUND' and ps.compound_source == 'CHILDREN'


class HULLABALOO_PT_physics(bpy.types.Panel):
    bl_label = "Hullabaloo"
    bl_space_type = 'PROPERTIES'
    bl_region_type = 'WINDOW'
    bl_context = "physics"

    @classmethod
    def poll(cls, context):
        obj = context.object
        return obj is not None and obj.type == 'MESH'

    def draw_header(self, context):
        self.layout.prop(context.object.hullabaloo, "enabled", text="")

    def draw(self, context):
        s = _settings(context)
        layout = self.layout
        layout.use_property_split = True
        if _parent_takes_child_parts(context.object):
            # A collision part is part of its parent's body, whatever its own settings, so
            # this row stays active when the object itself is not simulated.
            layout.prop(s, "collision_part")
            layout = layout.column()
        layout.active = s.enabled
        layout.prop(s, "body_type")
        if s.body_type == 'DYNAMIC':  # keyable, as Blender's Animated / Dynamic checkboxes
            row = layout.row(heading="Settings")
            row.prop(s, "simulated")
            row.prop(s, "animated")
        layout.prop(s, "shape")
        if s.shape == 'COMPOUND':
            layout.prop(s, "compound_source")
            if s.compound_source == 'CHILDREN':
                layout.prop(s, "compound_include_self")
            if s.compound_source == 'DECOMPOSE':
                col = layout.column(align=True)
                col.prop(s, "decompose_max_parts")
                col.prop(s, "decompose_tolerance")
        if s.shape in {'MESH', 'CONVEX_HULL', 'COMPOUND'}:   # as Blender: Source, Deforming
            layout.prop(s, "mesh_source")
        if s.shape == 'MESH' and s.body_type != 'DYNAMIC' and s.mesh_source != 'BASE':
            layout.prop(s, "use_deform")
        st = s.bake
        if st.baked:
            row = layout.row()
            row.label(text=f"Baked: frames {st.frame_start}-{st.frame_end}", icon='CHECKMARK')
            row.operator("hullabaloo.clear_bake", text="Clear", icon='X').selected_only = True


class _Sub:
    bl_space_type = 'PROPERTIES'
    bl_region_type = 'WINDOW'
    bl_context = "physics"
    bl_parent_id = "HULLABALOO_PT_physics"

    @classmethod
    def poll(cls, context):
        obj = context.object
        return obj is not None and obj.type == 'MESH'


class HULLABALOO_PT_mass(_Sub, bpy.types.Panel):
    bl_label = "Mass"

    @classmethod
    def poll(cls, context):
        return super().poll(context) and context.object.hullabaloo.body_type == 'DYNAMIC'

    def draw(self, context):
        s = _settings(context)
        layout = self.layout
        layout.use_property_split = True
        layout.active = s.enabled
        layout.prop(s, "mass_mode")
        layout.prop(s, "mass" if s.mass_mode == 'MASS' else "density")


class HULLABALOO_PT_surface(_Sub, bpy.types.Panel):
    bl_label = "Surface Response"

    def draw(self, context):
        s = _settings(context)
        layout = self.layout
        layout.use_property_split = True
        layout.active = s.enabled
        col = layout.column(align=True)
        col.prop(s, "friction")
        col.prop(s, "restitution")


class HULLABALOO_PT_dynamics(_Sub, bpy.types.Panel):
    bl_label = "Dynamics"
    bl_options = {'DEFAULT_CLOSED'}

    @classmethod
    def poll(cls, context):
        return super().poll(context) and context.object.hullabaloo.body_type == 'DYNAMIC'

    def draw(self, context):
        s = _settings(context)
        layout = self.layout
        layout.use_property_split = True
        layout.active = s.enabled
        col = layout.column(align=True)
        col.prop(s, "linear_damping", text="Damping Translation")
        col.prop(s, "angular_damping", text="Rotation")
        layout.prop(s, "initial_linear_velocity")
        layout.prop(s, "initial_angular_velocity")


class HULLABALOO_PT_deactivation(_Sub, bpy.types.Panel):
    bl_label = "Deactivation"
    bl_options = {'DEFAULT_CLOSED'}

    @classmethod
    def poll(cls, context):
        return super().poll(context) and context.object.hullabaloo.body_type == 'DYNAMIC'

    def draw_header(self, context):
        self.layout.prop(_settings(context), "use_deactivation", text="")

    def draw(self, context):
        s = _settings(context)
        layout = self.layout
        layout.use_property_split = True
        layout.active = s.enabled and s.use_deactivation
        layout.prop(s, "use_start_deactivated")
        col = layout.column(align=True)
        col.prop(s, "deactivate_linear_velocity", text="Velocity Linear")
        col.prop(s, "deactivate_angular_velocity", text="Angular")


class HULLABALOO_PT_collisions(_Sub, bpy.types.Panel):
    bl_label = "Collisions"
    bl_options = {'DEFAULT_CLOSED'}

    def draw(self, context):
        s = _settings(context)
        layout = self.layout
        layout.active = s.enabled
        layout.prop(s, "collision_collections", text="")


class HULLABALOO_PT_scene(bpy.types.Panel):
    bl_label = "Hullabaloo"
    bl_space_type = 'PROPERTIES'
    bl_region_type = 'WINDOW'
    bl_context = "scene"

    def draw(self, context):
        scene = context.scene
        s = scene.hullabaloo
        layout = self.layout
        layout.use_property_split = True
        layout.prop(s, "live_preview")
        if s.live_preview:
            from . import preview
            p = preview.get(scene)
            if p is not None and p.error:
                layout.label(text=p.error, icon='ERROR')
        col = layout.column()
        col.prop(s, "use_scene_frame_range")
        sub = col.column(align=True)
        if s.use_scene_frame_range:
            sub.enabled = False
            sub.prop(scene, "frame_start", text="Frame Start")
            sub.prop(scene, "frame_end", text="End")
        else:
            sub.prop(s, "frame_start", text="Frame Start")
            sub.prop(s, "frame_end", text="End")
        row = layout.row(heading="Gravity")
        row.prop(scene, "use_gravity", text="")
        sub = row.row()
        sub.active = scene.use_gravity
        sub.prop(scene, "gravity", text="")
        col = layout.column()
        col.prop(s, "time_scale")
        col.prop(s, "substeps")
        col.prop(s, "iterations")
        col.prop(s, "use_sleeping")
        col.prop(s, "use_ccd")
        col.prop(s, "keep_debug_records")
        layout.use_property_split = False
        col = layout.column(align=True)
        col.scale_y = 1.3
        col.operator("hullabaloo.bake", icon='PHYSICS')
        row = layout.row(align=True)
        row.operator("hullabaloo.rebake_from_frame", text="Re-bake From Frame",
                     icon='FRAME_NEXT')
        row.operator("hullabaloo.clear_bake", icon='X').selected_only = False
        layout.operator("hullabaloo.import_rigid_body", icon='IMPORT').all = True


class HULLABALOO_MT_object(bpy.types.Menu):
    bl_label = "Hullabaloo"
    bl_idname = "HULLABALOO_MT_object"

    def draw(self, context):
        layout = self.layout
        for key, text in (('DYNAMIC', "Add Dynamic"), ('PASSIVE', "Add Passive"),
                          ('ANIMATED', "Add Animated")):
            layout.operator("hullabaloo.add_selected", text=text).body_type = key
        layout.operator("hullabaloo.remove_selected", text="Remove")
        layout.separator()
        layout.operator("hullabaloo.bake", icon='PHYSICS')
        layout.operator("hullabaloo.rebake_from_frame")
        layout.operator("hullabaloo.clear_bake").selected_only = False
        layout.separator()
        layout.operator("hullabaloo.settle", icon='TRIA_DOWN_BAR')
        layout.separator()
        layout.operator("hullabaloo.import_rigid_body", text="Import Rigid Body (Selected)").all = False
        layout.operator("hullabaloo.import_rigid_body", text="Import Rigid Body (All)").all = True


def object_menu(self, context):
    self.layout.menu(HULLABALOO_MT_object.bl_idname, icon='PHYSICS')


CLASSES = (HULLABALOO_PT_physics, HULLABALOO_PT_mass, HULLABALOO_PT_surface,
           HULLABALOO_PT_dynamics, HULLABALOO_PT_deactivation, HULLABALOO_PT_collisions,
           HULLABALOO_PT_scene,
           HULLABALOO_MT_object)


def register():
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    bpy.types.VIEW3D_MT_object.append(object_menu)


def unregister():
    bpy.types.VIEW3D_MT_object.remove(object_menu)
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)
