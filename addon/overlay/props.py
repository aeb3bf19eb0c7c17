"""Overlay settings: ``Scene.hullabaloo_overlay`` (saved with the .blend).

Every change redraws the 3D viewports (Blender notifies every window when a Python-defined
property changes), and the draw handler rebuilds its batches only when a setting, the frame,
the selection or the data changed (see handler.py), so no ``update=`` callbacks are needed.
"""
import bpy
from bpy.props import BoolProperty, EnumProperty, FloatProperty, FloatVectorProperty


def _colour(name, default, description):
    return FloatVectorProperty(name=name, subtype='COLOR_GAMMA', size=4, min=0.0, max=1.0,
                               default=default, description=description)


def _bool(name, default, description):
    return BoolProperty(name=name, default=default, description=description)


class HULLABALOO_PG_overlay(bpy.types.PropertyGroup):
    show: _bool("Hullabaloo Overlay", True,
                "Draw what the simulation sees in the 3D Viewport (contacts, collision shapes, "
                "queries of the selected objects)")
    in_front: _bool("In Front", True, "Draw the overlay over the objects (see contacts "
                    "hidden inside or under them)")
    # Contacts.
    show_contacts: _bool("Contacts", True, "Contact points of the frame")
    contact_colour_by: EnumProperty(
        name="Colour By", default='IMPULSE',
        items=[('IMPULSE', "Impulse", "Blue (none) to red (the frame's largest normal impulse)"),
               ('DEPTH', "Depth", "Blue (touching) to red (the frame's deepest penetration)"),
               ('FIXED', "Fixed", "One colour")],
        description="Colour of the contact points")
    contact_colour: _colour("Contact Colour", (1.0, 0.3, 0.1, 1.0), "Colour of the points "
                            "when coloured by Fixed")
    contact_size: FloatProperty(name="Point Size", default=9.0, min=1.0, max=40.0,
                                description="Diameter of points, in pixels")
    show_normals: _bool("Normals", True, "Contact normals as arrows whose length shows the "
                        "normal impulse")
    normal_scale_mode: EnumProperty(
        name="Arrow Length", default='AUTO',
        items=[('AUTO', "Relative", "The frame's largest impulse gets the full length"),
               ('IMPULSE', "Impulse", "Length = impulse x scale (comparable across frames)"),
               ('FIXED', "Fixed", "Every arrow gets the full length")],
        description="How long the normal arrows are")
    normal_length: FloatProperty(name="Length", default=0.4, min=0.0, soft_max=5.0,
                                 unit='LENGTH',
                                 description="Full arrow length")
    impulse_scale: FloatProperty(name="Scale", default=1.0, min=0.0, soft_max=100.0,
                                 description="Metres of arrow per N s of "
                                 "impulse (Arrow Length: Impulse)")
    normal_colour: _colour("Normal Colour", (1.0, 0.85, 0.1, 1.0), "Colour of the normals")
    show_friction: _bool("Friction", True, "Friction impulses as arrows in the contact plane "
                         "(same scale as the normals)")
    friction_colour: _colour("Friction Colour", (0.2, 1.0, 0.4, 1.0), "Colour of the "
                             "friction arrows")
    # Bodies.
    show_shapes: _bool("Collision Shapes", True, "The shapes the engine collides: hulls, "
                       "boxes, spheres, capsules (white dynamic, grey passive, orange "
                       "animated, blue sleeping)")
    shape_width: FloatProperty(name="Shape Width", default=1.5, min=0.5, max=10.0,
                               description="Line width of the shapes, pixels")
    show_aabbs: _bool("AABBs", False, "Bounding boxes (the engine's fattened, swept boxes "
                      "when the frame has a record)")
    show_sleeping: _bool("Sleeping", True, "Show sleeping bodies in blue")
    show_velocity: _bool("Velocities", False, "Linear (blue) and angular (purple) velocity "
                         "arrows at the centres of mass")
    velocity_scale: FloatProperty(name="Velocity Scale", default=0.1, min=0.0, soft_max=2.0,
                                  description="Seconds: arrow = velocity x "
                                  "scale")
    show_inertia: _bool("Centre of Mass", False, "Centres of mass and principal inertia axes "
                        "(as long as the box with the same inertia)")
    # Joints (addon/overlay/joint_geometry.py).
    show_joints: _bool("Joints", True, "Joint anchors, links, frames, limit arcs and ranges, "
                       "springs; the gap between the two copies of a joint point in red; "
                       "broken joints in pink")
    show_joint_forces: _bool("Joint Forces", True, "Reaction force on each joint's second "
                             "object (from the bake's stored state)")
    joint_size: FloatProperty(name="Joint Size", default=0.2, min=0.0, soft_max=2.0,
                              unit='LENGTH', description="Length of the joint frame axes")
    joint_force_scale: FloatProperty(name="Force Scale", default=0.01, min=0.0, soft_max=1.0,
                                     description="Metres of arrow per newton")
    # Queries of the selection.
    show_queries: _bool("Selected Pairs", True, "GJK / EPA / SAT of the selected objects: "
                        "the pair when two are selected, else every neighbour of the selection")
    show_simplex: _bool("GJK Simplex", True, "GJK's final simplex on the Minkowski difference "
                        "B - A, drawn at A's origin, and the closest points")
    show_epa: _bool("EPA Polytope", True, "EPA's final polytope of overlapping pairs and the "
                    "penetration vector")
    show_sat: _bool("SAT Features", True, "Reference (orange) and incident (cyan) faces, or "
                    "the edge pair, of polytope pairs")
    show_minkowski: _bool("Minkowski Difference", False, "The points of B - A (drawn at A's "
                          "origin)")
    line_width: FloatProperty(name="Line Width", default=2.0, min=0.5, max=10.0,
                              description="Width of arrows and query lines")


# Plain functions, not methods: a PropertyGroup class with methods crashes the bpy module at
# interpreter exit (seen with the 4.2 wheel), and these need no class.
_OPTION_KEYS = ("show_contacts", "contact_colour_by", "contact_size", "show_normals",
                "normal_scale_mode", "normal_length", "impulse_scale", "show_friction",
                "show_shapes", "shape_width", "show_aabbs", "show_sleeping", "show_velocity",
                "velocity_scale", "show_inertia", "show_queries", "show_simplex", "show_epa",
                "show_sat", "show_minkowski", "line_width", "show_joints",
                "show_joint_forces", "joint_size", "joint_force_scale")
_COLOUR_KEYS = ("contact_colour", "normal_colour", "friction_colour")


def options(settings):
    """The settings as the plain dict geometry.frame_layers takes."""
    out = {k: getattr(settings, k) for k in _OPTION_KEYS}
    for k in _COLOUR_KEYS:
        out[k] = tuple(getattr(settings, k))
    return out


def settings_key(settings):
    """Hashable snapshot of every setting (batches are rebuilt when it changes)."""
    return tuple(sorted(options(settings).items()))


CLASSES = (HULLABALOO_PG_overlay,)


def register():
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    bpy.types.Scene.hullabaloo_overlay = bpy.props.PointerProperty(type=HULLABALOO_PG_overlay)


def unregister():
    del bpy.types.Scene.hullabaloo_overlay
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)
