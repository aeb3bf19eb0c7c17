"""Settings stored in the .blend: ``Object.hullabaloo`` and ``Scene.hullabaloo``.

Defaults match Blender's Rigid Body (mass 1 kg, friction 0.5, bounciness 0, damping 0.04 /
0.1, collision collection 1), so a scene set up either way behaves alike. The bake bookkeeping
(what to restore on Clear Bake) lives in a nested group that the UI does not show.
"""
import bpy
from bpy.props import (
    BoolProperty,
    BoolVectorProperty,
    EnumProperty,
    FloatProperty,
    FloatVectorProperty,
    IntProperty,
    PointerProperty,
    StringProperty,
)

BODY_TYPES = [
    ("DYNAMIC", "Dynamic", "Moved by the simulation: falls, collides, gets keyframes", "PHYSICS", 0),
    ("PASSIVE", "Passive", "Fixed scenery that others collide with (never moves)", "MESH_PLANE", 1),
    ("ANIMATED", "Animated", "Moved by its own animation, pushing dynamic bodies as it goes",
     "ANIM", 2),
]

SHAPES = [
    ("CONVEX_HULL", "Convex Hull", "The convex hull of the mesh: the best all-round choice",
     "MESH_ICOSPHERE", 0),
    ("BOX", "Box", "The mesh's bounding box", "MESH_CUBE", 1),
    ("SPHERE", "Sphere", "A sphere about the origin reaching the bounding box's largest half "
     "size", "MESH_UVSPHERE", 2),
    ("CAPSULE", "Capsule", "A capsule along the local Z axis fitted to the bounding box",
     "MESH_CAPSULE", 3),
    ("MESH", "Mesh", "The mesh itself, for passive non-convex scenery (bowls, stairs, "
     "terrain)", "MESH_MONKEY", 4),
    ("COMPOUND", "Compound", "Several convex parts moving as one body (from the mesh's loose "
     "parts, from child objects, or by automatic decomposition)",
     "OUTLINER_OB_GROUP_INSTANCE", 5),
    # Issue 14: exact curved shapes, sized from the bounding box as Blender's own are.
    ("CYLINDER", "Cylinder", "An exact cylinder along the local Z axis: radius the larger "
     "half size in X/Y, height the Z size of the bounding box (as Blender's Cylinder)",
     "MESH_CYLINDER", 6),
    ("CONE", "Cone", "An exact cone along the local Z axis, apex up: base radius the larger "
     "half size in X/Y, height the Z size of the bounding box (as Blender's Cone)",
     "MESH_CONE", 7),
]

COMPOUND_SOURCES = [
    ("LOOSE_PARTS", "Loose Parts", "One convex hull per loose part of this mesh",
     "STICKY_UVS_DISABLE", 0),
    ("CHILDREN", "Child Objects", "One convex hull per child object marked as a collision "
     "part (plus this mesh, if it has any geometry)", "OUTLINER_OB_MESH", 1),
    ("DECOMPOSE", "Decompose", "Automatic approximate convex decomposition of this (closed) "
     "mesh; computed once per mesh and settings, then reused", "MOD_EXPLODE", 2),
]

MESH_SOURCES = [
    ("BASE", "Base", "The mesh as modelled: no shape keys, no modifiers (Blender's Base)"),
    ("DEFORM", "Deform", "Shape keys and deforming modifiers (armature, displace, wave...) "
     "but no modifier that changes the topology (Blender's Deform)"),
    ("FINAL", "Final", "The mesh with every modifier applied, as shown (Blender's Final)"),
]

MASS_MODES = [
    ("MASS", "Mass", "Give the body's mass in kilograms"),
    ("DENSITY", "Density", "Give the material density (kg/m\u00b3); mass follows from the volume"),
]


class HULLABALOO_PG_bake_state(bpy.types.PropertyGroup):
    """What Clear Bake needs to put an object back exactly as it was before the first bake."""
    baked: BoolProperty(default=False, options={'HIDDEN'})
    had_animation_data: BoolProperty(default=False, options={'HIDDEN'})
    backup_action: PointerProperty(type=bpy.types.Action, options={'HIDDEN'})
    action_name: StringProperty(default="", options={'HIDDEN'})
    slot_identifier: StringProperty(default="", options={'HIDDEN'})
    rotation_mode: StringProperty(default="XYZ", options={'HIDDEN'})
    location: FloatVectorProperty(size=3, options={'HIDDEN'})
    rotation_euler: FloatVectorProperty(size=3, options={'HIDDEN'})
    rotation_quaternion: FloatVectorProperty(size=4, default=(1, 0, 0, 0), options={'HIDDEN'})
    rotation_axis_angle: FloatVectorProperty(size=4, default=(0, 0, 1, 0), options={'HIDDEN'})
    scale: FloatVectorProperty(size=3, default=(1, 1, 1), options={'HIDDEN'})
    frame_start: IntProperty(options={'HIDDEN'})
    frame_end: IntProperty(options={'HIDDEN'})


class HULLABALOO_PG_object(bpy.types.PropertyGroup):
    enabled: BoolProperty(
        name="Hullabaloo", default=False,
        description="Simulate this object with Hullabaloo when the scene is baked")
    body_type: EnumProperty(
        name="Type", items=BODY_TYPES, default="DYNAMIC",
        description="How the simulation treats this object")
    shape: EnumProperty(
        name="Shape", items=SHAPES, default="CONVEX_HULL",
        description="Collision shape built from the object's evaluated mesh and world scale")
    compound_source: EnumProperty(
        name="Parts From", items=COMPOUND_SOURCES, default="LOOSE_PARTS",
        description="Where the convex parts of the Compound shape come from")
    decompose_max_parts: IntProperty(
        name="Max Parts", default=16, min=1, soft_max=64, max=256,
        description="Most convex parts the decomposition may use (more parts follow the "
        "mesh more closely but cost more per contact)")
    decompose_tolerance: FloatProperty(
        name="Tolerance", default=0.0, min=0.0, soft_max=1.0, unit='LENGTH', precision=4,
        description="How far a part may stick out of the mesh; 0 picks it automatically "
        "(2% of the mesh's longest side)")
    compound_include_self: BoolProperty(
        name="Include This Mesh", default=False,
        description="Also use this object's own mesh as a part of the Compound built from "
        "child objects (Blender's Compound Parent uses the children only)")
    collision_part: BoolProperty(
        name="Collision Part", default=False,
        description="Use this child as a convex collision part of its parent's Compound "
        "shape; it is not simulated on its own")
    mesh_source: EnumProperty(
        name="Source", items=MESH_SOURCES, default="FINAL",
        description="Which version of the mesh the collision shape is built from")
    use_deform: BoolProperty(
        name="Deforming", default=False,
        description="The mesh deforms (armature, shape keys, modifiers): a passive or "
        "animated Mesh shape collides with its evaluated shape of every frame (needs source "
        "Deform or Final and the same vertex count on every frame)")
    mass_mode: EnumProperty(
        name="Mass From", items=MASS_MODES, default="MASS",
        description="Give the mass directly or through the material density")
    mass: FloatProperty(
        name="Mass", default=1.0, min=1e-6, soft_max=1000.0, unit='MASS', precision=3,
        description="Mass of the body (dynamic bodies only)")
    density: FloatProperty(
        name="Density", default=1000.0, min=1e-6, soft_max=20000.0, precision=1,
        description="Density in kg/m\u00b3 (water 1000, wood ~600, stone ~2500, steel ~7850)")
    friction: FloatProperty(
        name="Friction", default=0.5, min=0.0, soft_max=1.0, max=100.0,
        description="Resistance to sliding; a pair uses the product of both bodies' values, "
        "like Blender's Rigid Body")
    restitution: FloatProperty(
        name="Bounciness", default=0.0, min=0.0, soft_max=1.0, max=10.0,
        description="How much speed is kept after an impact (the product of both bodies' "
        "values is used)")
    linear_damping: FloatProperty(
        name="Linear Damping", default=0.04, min=0.0, max=1.0,
        description="Fraction of linear velocity lost per second")
    angular_damping: FloatProperty(
        name="Angular Damping", default=0.1, min=0.0, max=1.0,
        description="Fraction of angular velocity lost per second")
    initial_linear_velocity: FloatVectorProperty(
        name="Initial Velocity", size=3, subtype='VELOCITY', unit='VELOCITY',
        description="World-space velocity at the first frame (m/s)")
    initial_angular_velocity: FloatVectorProperty(
        name="Initial Spin", size=3, subtype='XYZ',
        description="World-space angular velocity at the first frame (radians per second)")
    collision_collections: BoolVectorProperty(
        name="Collision Collections", size=20, subtype='LAYER',
        default=[True] + [False] * 19,
        description="Bodies collide only if they share at least one collision collection")
    # -- hand-off and deactivation (issue 14; Blender's keyable Animated and Dynamic) -------
    animated: BoolProperty(
        name="Animated", default=False,
        description="Follow the object's own animation, pushing dynamic bodies as it goes. "
        "Keyable (as Blender's): key it off to release the body into the simulation with "
        "the velocity of its keyed motion, on again to take it back")
    simulated: BoolProperty(
        name="Dynamic", default=True,
        description="Take part in the simulation (Blender's Dynamic). Keyable: keyed off, "
        "the body is held where it is until keyed on again, then starts from rest")
    use_deactivation: BoolProperty(
        name="Enable Deactivation", default=True,
        description="Let the body fall asleep once at rest (slower than the deactivation "
        "velocities below); off keeps it, and what it touches, always simulated")
    use_start_deactivated: BoolProperty(
        name="Start Deactivated", default=False,
        description="Start asleep: the body stays exactly where it is (even in mid-air) "
        "until another body touches it or an animated body moves into it")
    deactivate_linear_velocity: FloatProperty(
        name="Linear Velocity", default=0.05, min=0.0, soft_max=10.0, unit='VELOCITY',
        description="Below this speed the body counts as resting (and may fall asleep)")
    deactivate_angular_velocity: FloatProperty(
        name="Angular Velocity", default=0.05, min=0.0, soft_max=10.0, subtype='ANGLE',
        description="Below this spin (per second) the body counts as resting")
    import_notes: StringProperty(
        default="", options={'HIDDEN'},
        description="Blender Rigid Body settings the last import could not carry")
    bake: PointerProperty(type=HULLABALOO_PG_bake_state, options={'HIDDEN'})


class HULLABALOO_PG_scene(bpy.types.PropertyGroup):
    use_scene_frame_range: BoolProperty(
        name="Use Scene Frame Range", default=True,
        description="Bake the scene's frame range (otherwise the range below)")
    frame_start: IntProperty(
        name="Start", default=1, min=-1048574, max=1048574,
        description="First frame of the simulation (the objects' poses at this frame are "
        "the initial state)")
    frame_end: IntProperty(
        name="End", default=250, min=-1048574, max=1048574,
        description="Last frame of the simulation")
    substeps: IntProperty(
        name="Substeps", default=0, min=0, max=100,
        description="Solver substeps per frame; 0 picks them automatically (about 360 per "
        "second)")
    iterations: IntProperty(
        name="Solver Iterations", default=1, min=1, max=50,
        description="Solver sweeps per substep; raise for tall stacks and heavy-on-light "
        "contacts")
    time_scale: FloatProperty(
        name="Speed", default=1.0, min=1e-4, soft_min=0.01, soft_max=10.0, precision=3,
        description="Simulated seconds per second of animation (Blender's Rigid Body World "
        "Speed): below 1 is slow motion")
    use_sleeping: BoolProperty(
        name="Sleeping", default=True,
        description="Let bodies at rest stop being simulated until something touches them "
        "(faster, and resting piles stay perfectly still)")
    use_ccd: BoolProperty(
        name="Continuous Collision", default=True,
        description="Stop fast bodies from passing through thin scenery between frames")
    keep_debug_records: BoolProperty(
        name="Keep Debug Records", default=False,
        description="Store the engine's per-frame records (contacts, impulses, bounding "
        "boxes) with the bake, so the viewport overlays show them when scrubbing without "
        "re-simulating")
    live_preview: BoolProperty(
        name="Live Preview", default=False,
        description="Simulate as the frame advances, without writing keys: going forward "
        "simulates from the last cached frame, going back shows the cached pose, an edit "
        "re-simulates from its frame; off gives every object back its own transform")
    # No update= callback here: the bpy wheel (Blender as a module) crashes at exit when a
    # property has one; addon/preview.py follows this setting through the message bus
    # (interactive) and its handlers (frame changes, depsgraph updates; scripts: sync()).
    cache_file: StringProperty(
        name="Cache", default="", options={'HIDDEN'},
        description="Where the per-frame simulation states of the last bake are stored")


CLASSES = (HULLABALOO_PG_bake_state, HULLABALOO_PG_object, HULLABALOO_PG_scene)


def register():
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    bpy.types.Object.hullabaloo = PointerProperty(type=HULLABALOO_PG_object)
    bpy.types.Scene.hullabaloo = PointerProperty(type=HULLABALOO_PG_scene)


def unregister():
    del bpy.types.Scene.hullabaloo
    del bpy.types.Object.hullabaloo
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)
