"""The overlay's settings in the 3D Viewport's Overlays popover (a "Hullabaloo" section under
Viewport Overlays, where Blender's own overlay toggles live), with the Debug Frame and Render
Debug Frame buttons."""
import bpy


class HULLABALOO_PT_overlay(bpy.types.Panel):
    bl_label = "Hullabaloo"
    bl_space_type = 'VIEW_3D'
    bl_region_type = 'HEADER'
    bl_parent_id = 'VIEW3D_PT_overlay'

    @classmethod
    def poll(cls, context):
        return context.scene is not None and hasattr(context.scene, "hullabaloo_overlay")

    def draw_header(self, context):
        self.layout.prop(context.scene.hullabaloo_overlay, "show", text="")

    def draw(self, context):
        from . import handler
        s = context.scene.hullabaloo_overlay
        layout = self.layout
        layout.active = s.show
        col = layout.column(align=True)
        row = col.row(align=True)
        row.prop(s, "show_contacts")
        row.prop(s, "show_normals")
        row.prop(s, "show_friction")
        if s.show_contacts:
            row = col.row(align=True)
            row.prop(s, "contact_colour_by", text="")
            if s.contact_colour_by == 'FIXED':
                row.prop(s, "contact_colour", text="")
            row.prop(s, "contact_size", text="Size")
        if s.show_normals or s.show_friction:
            row = col.row(align=True)
            row.prop(s, "normal_scale_mode", text="")
            row.prop(s, "impulse_scale" if s.normal_scale_mode == 'IMPULSE' else
                     "normal_length")
            row.prop(s, "normal_colour", text="")
            row.prop(s, "friction_colour", text="")
        col = layout.column(align=True)
        row = col.row(align=True)
        row.prop(s, "show_shapes")
        row.prop(s, "show_aabbs")
        row.prop(s, "show_sleeping")
        row = col.row(align=True)
        row.prop(s, "show_velocity")
        row.prop(s, "show_inertia")
        if s.show_velocity:
            col.prop(s, "velocity_scale")
        col = layout.column(align=True)
        row = col.row(align=True)
        row.prop(s, "show_joints")
        row.prop(s, "show_joint_forces")
        if s.show_joints:
            row = col.row(align=True)
            row.prop(s, "joint_size")
            row.prop(s, "joint_force_scale")
        col = layout.column(align=True)
        col.prop(s, "show_queries")
        if s.show_queries:
            row = col.row(align=True)
            row.prop(s, "show_simplex", text="GJK")
            row.prop(s, "show_epa", text="EPA")
            row.prop(s, "show_sat", text="SAT")
            row.prop(s, "show_minkowski", text="B - A")
        row = layout.row(align=True)
        row.prop(s, "in_front")
        row.prop(s, "line_width", text="Width")
        row = layout.row(align=True)
        row.operator("hullabaloo.debug_frame", icon='PLAY')
        row.operator("hullabaloo.render_debug_frame", text="Render", icon='RENDER_STILL')
        info = handler._STATE.get("info")
        if info and s.show:
            layout.label(text=f"Showing: {info}", icon='INFO')


CLASSES = (HULLABALOO_PT_overlay,)


def register():
    for cls in CLASSES:
        bpy.utils.register_class(cls)


def unregister():
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)
