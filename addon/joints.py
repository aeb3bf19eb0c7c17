"""Joints in the add-on: ``Object.hullabaloo_joint`` (a setting of any object, like Blender's
Rigid Body Constraint), its panel, reading the joints of a scene into the engine at bake time
and importing Blender's rigid-body constraints.

The settings mirror Blender's constraint property names (type, object1, object2,
use_limit_lin_x, limit_lin_x_lower, use_spring_x, spring_stiffness_x, ...) so the import is a
copy, except Blender's breaking threshold, an impulse per Bullet substep, which the import
turns into a force, force = impulse x fps x substeps per frame / time scale (Blender's
Bullet steps fps x substeps / time scale times per simulated second).

Motors: Blender drives only its Motor type (along / about X); its Hinge, Slider and Piston
store motor settings that Bullet never uses. Blender's "max impulse" of a motor is used by
Bullet's 6-DOF motor as a force bound (N, N m: it bounds each substep's impulse by
max x substep time), so it is copied as the max force / torque unchanged, and Bullet drives
the first object relative to the second: the second moves at minus the target velocity
(tests/addon/test_joints_motors.py measures both against Blender's own simulation).
Hullabaloo's joints drive Hinge (about Z), Slider (along X) and Piston (along and about X)
too; a positive target moves toward the upper limit as the panel shows it (so a Hinge's, like
its limits, in Bullet's sense, first object relative to the second). The import copies
Blender's values on those types but leaves the motor off, as Blender runs it, and names it.

The joint frame is the object's world matrix at the first baked frame (location and
rotation; scale ignored), as in Blender: the pose there is the zero of the limits and the
rest pose of the springs.
"""
import contextlib
import itertools
import math

import bpy
import numpy as np
from bpy.props import BoolProperty, EnumProperty, FloatProperty, PointerProperty, StringProperty

from .. import engine
from . import animation

JOINT_TYPES = [
    ('FIXED', "Fixed", "Glue the two objects together"),
    ('POINT', "Point", "Share a point; turn freely about it"),
    ('HINGE', "Hinge", "Turn about the joint's Z axis only"),
    ('SLIDER', "Slider", "Slide along the joint's X axis only"),
    ('PISTON', "Piston", "Slide along and turn about the joint's X axis"),
    ('GENERIC', "Generic", "Six axes, free unless limited"),
    ('GENERIC_SPRING', "Generic Spring", "Six axes, free unless limited, with springs"),
    ('MOTOR', "Motor", "Drive along / about the joint's X axis; constrains nothing else"),
]
KIND = {t[0]: t[0].lower() for t in JOINT_TYPES}
LIN = ("x", "y", "z")
# Limits each type uses (Blender's own: the others are ignored by Bullet for that type).
_TYPE_LIMITS = {
    'HINGE': ("ang_z",), 'SLIDER': ("lin_x",), 'PISTON': ("lin_x", "ang_x"),
    'GENERIC': ("lin_x", "lin_y", "lin_z", "ang_x", "ang_y", "ang_z"),
    'GENERIC_SPRING': ("lin_x", "lin_y", "lin_z", "ang_x", "ang_y", "ang_z"),
}
# Motors each type drives (engine add_joint's motor keys): Blender's Motor type, and ours.
MOTORS = {'MOTOR': ("lin", "ang"), 'HINGE': ("ang",), 'SLIDER': ("lin",),
          'PISTON': ("lin", "ang")}
# Sign of the engine's target velocity (B relative to A) per type: Bullet's Motor and Hinge
# measure the first object relative to the second (see the module docstring).
_MOTOR_SIGN = {'MOTOR': -1.0, 'HINGE': -1.0, 'SLIDER': 1.0, 'PISTON': 1.0}
# Engine spring axis -> Blender's property suffix (use_spring_x, spring_stiffness_ang_x, ...).
_SPRING_SUFFIX = {"lin_x": "x", "lin_y": "y", "lin_z": "z",
                  "ang_x": "ang_x", "ang_y": "ang_y", "ang_z": "ang_z"}


def _joint_annotations():
    ann = {
        "enabled": BoolProperty(name="Joint", default=False,
                                description="Join two simulated objects with this object's "
                                "frame (its location and rotation) as the joint"),
        "type": EnumProperty(name="Type", items=JOINT_TYPES, default='POINT'),
        "object1": PointerProperty(name="First Object", type=bpy.types.Object,
                                   description="Body A of the joint"),
        "object2": PointerProperty(name="Second Object", type=bpy.types.Object,
                                   description="Body B of the joint (limits and motors "
                                   "measure B relative to A)"),
        "import_notes": StringProperty(default="", options={'HIDDEN'},
                                       description="Settings of Blender's rigid-body "
                                       "constraint the last import could not carry"),
        "disable_collisions": BoolProperty(name="Disable Collisions", default=True,
                                           description="The two objects do not collide "
                                           "with each other"),
        "use_breaking": BoolProperty(name="Breakable", default=False),
        "break_force": FloatProperty(name="Break Force", default=1000.0, min=0.0,
                                     description="The joint breaks for good when the force "
                                     "(N) or torque (N m) it carries exceeds this"),
        "use_motor_lin": BoolProperty(name="Linear Motor", default=False,
                                      description="Drive along the joint's X (Motor, "
                                      "Slider, Piston; Motor as Blender's: the first object "
                                      "relative to the second)"),
        "motor_lin_target_velocity": FloatProperty(name="Target Velocity", default=1.0,
                                                   unit='VELOCITY'),
        "motor_lin_max_force": FloatProperty(name="Max Force", default=10.0, min=0.0,
                                             description="N"),
        "use_motor_ang": BoolProperty(name="Angular Motor", default=False,
                                      description="Turn about the joint's X (Motor, "
                                      "Piston) or Z (Hinge; like its limits and Blender's "
                                      "Motor: the first object relative to the second)"),
        "motor_ang_target_velocity": FloatProperty(name="Target Velocity", default=1.0,
                                                   description="rad/s"),
        "motor_ang_max_torque": FloatProperty(name="Max Torque", default=10.0, min=0.0,
                                              description="N m"),
    }
    for ax in LIN:
        for kind, unit in (("lin", 'LENGTH'), ("ang", 'ROTATION')):
            ann[f"use_limit_{kind}_{ax}"] = BoolProperty(name=f"{kind.title()} {ax.upper()}")
            lo, hi = (-1.0, 1.0) if kind == "lin" else (-math.pi / 4, math.pi / 4)
            sub = 'DISTANCE' if kind == "lin" else 'ANGLE'
            ann[f"limit_{kind}_{ax}_lower"] = FloatProperty(name="Lower", default=lo,
                                                            subtype=sub, unit=unit)
            ann[f"limit_{kind}_{ax}_upper"] = FloatProperty(name="Upper", default=hi,
                                                            subtype=sub, unit=unit)
    for suffix in _SPRING_SUFFIX.values():
        ann[f"use_spring_{suffix}"] = BoolProperty(name=f"Spring {suffix.upper()}")
        ann[f"spring_stiffness_{suffix}"] = FloatProperty(
            name="Stiffness", default=10.0, min=0.0, description="N/m (N m/rad for angles); "
            "negative values are refused at bake time")
        ann[f"spring_damping_{suffix}"] = FloatProperty(
            name="Damping", default=0.5, min=0.0, description="N s/m (N m s/rad)")
    return ann


HULLABALOO_PG_joint = type("HULLABALOO_PG_joint", (bpy.types.PropertyGroup,),
                           {"__annotations__": _joint_annotations()})


# ----------------------------------------------------------------------------- reading
def joint_kwargs(js):
    """add_joint keyword arguments (limits, springs, motor, break_*, disable_collisions)
    of one object's hullabaloo_joint settings."""
    limits = {}
    for ax in _TYPE_LIMITS.get(js.type, ()):
        kind, a = ax.split("_")
        if getattr(js, f"use_limit_{kind}_{a}"):
            lo, hi = (getattr(js, f"limit_{kind}_{a}_lower"),
                      getattr(js, f"limit_{kind}_{a}_upper"))
            # Blender's Hinge is Bullet's btHingeConstraint, whose angle is the first
            # object's turn relative to the second (atan2(yB . xA, yB . yA) = minus B's turn
            # relative to A); the engine measures B relative to A, so the range is mirrored.
            limits[ax] = (-hi, -lo) if js.type == 'HINGE' else (lo, hi)
    springs = {}
    if js.type == 'GENERIC_SPRING':
        for ax, suffix in _SPRING_SUFFIX.items():
            if getattr(js, f"use_spring_{suffix}"):
                springs[ax] = (getattr(js, f"spring_stiffness_{suffix}"),
                               getattr(js, f"spring_damping_{suffix}"))
    motor = {}
    kinds = MOTORS.get(js.type, ())
    sign = _MOTOR_SIGN.get(js.type, 1.0)
    if "lin" in kinds and js.use_motor_lin:
        motor["lin"] = (sign * js.motor_lin_target_velocity, js.motor_lin_max_force)
    if "ang" in kinds and js.use_motor_ang:
        motor["ang"] = (sign * js.motor_ang_target_velocity, js.motor_ang_max_torque)
    brk = js.break_force if js.use_breaking else None
    return dict(limits=limits or None, springs=springs or None, motor=motor or None,
                break_force=brk, break_torque=brk, disable_collisions=js.disable_collisions)


def frame_of(obj):
    """(position, unit quaternion w, x, y, z) of an object's world matrix, scale removed."""
    mw = np.array(obj.matrix_world, dtype=np.float64)
    rot = mw[:3, :3]
    norms = np.linalg.norm(rot, axis=0)
    if not np.all(np.isfinite(mw)) or norms.min() < 1e-12:
        return None
    u, _, vt = np.linalg.svd(rot / norms)
    r = u @ vt
    if np.linalg.det(r) < 0:
        r = u @ np.diag([1.0, 1.0, -1.0]) @ vt
    return mw[:3, 3].copy(), engine.core.quat.from_matrix(r)


def add_scene_joints(world, scene, bodies, problem, depsgraph=None):
    """Add the joints of the scene's objects to the world. bodies: name -> (engine index,
    kind). problem(obj, message, level="ERROR") reports one that cannot be made (it is
    skipped) and, as INFO, what the import of a joint could not carry and where an imported
    constraint's pivot lies outside both its bodies (pivot_note, measured now, so moving
    the Empty silences it). Returns [(object name, joint index)]."""
    out = []
    for obj, message in unused_constraints(scene, bodies):
        problem(obj, message, "WARNING")
    for obj in scene.objects:
        js = getattr(obj, "hullabaloo_joint", None)
        if js is None or not js.enabled:
            continue
        said = []
        if js.import_notes:
            said.append("joint imported from Blender's rigid-body constraint; not carried: "
                        + js.import_notes + ".")
        if getattr(obj, "rigid_body_constraint", None) is not None:
            said.append(pivot_note(obj, js.type, js.object1, js.object2, depsgraph) or "")
        if any(said):
            problem(obj, " ".join(s for s in said if s), "INFO")
        o1, o2 = js.object1, js.object2
        if o1 is None or o2 is None:
            problem(obj, "joint is missing its " + ("first" if o1 is None else "second")
                    + " object; pick both objects (Physics > Hullabaloo Joint). Skipped.")
            continue
        if o1 == o2:
            problem(obj, f"joint joins {o1.name!r} to itself; pick two different objects. "
                    "Skipped.")
            continue
        missing = [o for o in (o1, o2) if o.name not in bodies]
        if missing:
            linked = [o for o in missing if o.library is not None]
            problem(obj, f"joint names {', '.join(repr(m.name) for m in missing)}, which "
                    "Hullabaloo does not simulate ("
                    + (f"{linked[0].name!r} is linked from the library "
                       f"{linked[0].library.name!r}: make it local, then " if linked else "")
                    + "turn Hullabaloo on for it, or fix its errors). Skipped.")
            continue
        (ia, ka), (ib, kb) = bodies[o1.name], bodies[o2.name]
        if ka != "dynamic" and kb != "dynamic":
            problem(obj, f"joint joins {o1.name!r} and {o2.name!r}, neither of them Dynamic "
                    "(passive to passive does nothing); make one Dynamic. Skipped.")
            continue
        frame = frame_of(obj)
        if frame is None:
            problem(obj, "joint object has a non-finite or zero-scale transform; reset it. "
                    "Skipped.")
            continue
        try:
            j = world.add_joint(KIND[js.type], ia, ib, frame[0], frame[1],
                                enabled=True, **joint_kwargs(js))
        except engine.EngineError as exc:
            problem(obj, f"joint: {exc}. Skipped.")
            continue
        out.append((obj.name, j))
    return out


@contextlib.contextmanager
def bodies_where_joints_were_made(world, bodies, prev):
    """While joints are added for a re-bake from a later frame: the bodies stand where the
    bake being continued made its joints (their stored poses at its first frame), so every
    joint gets the same anchors, limit zeros and spring rest poses as then, not new ones
    measured from the bodies' poses at the re-bake frame (a door resting against its limit
    would get its limit's zero moved there). bodies: the bake's BodySpecs (name, index);
    prev: the BakeCache being continued, or None. The poses are put back afterwards."""
    if prev is None or not prev.has_frame(prev.frame_start):
        yield
        return
    state = prev.state(prev.frame_start)
    where = {n: i for i, n in enumerate(prev.names)}
    moved = []
    for b in bodies:
        j = where.get(b.name)
        if j is None:
            continue
        moved.append((b.index, world.positions[b.index].copy(),
                      world.orientations[b.index].copy()))
        world.set_pose(b.index, position=state["pos"][j], orientation=state["q"][j])
    try:
        yield
    finally:
        for i, p, q in moved:
            world.set_pose(i, position=p, orientation=q)


# ----------------------------------------------------------------------------- pivot
# Joint types whose pivot is the point the bodies turn about (or are held at): one far from
# both bodies (Connect's default, midway between the origins) swings them on an invisible
# arm, as Blender does too, which the artist rarely means (issue 26).
_PIVOT_TYPES = {'HINGE': "they turn about the hinge's axis through that point",
                'POINT': "they turn about that point",
                'GENERIC': "they turn about that point (its limits are measured there)",
                'FIXED': "the joint holds them at that point"}
# A pivot farther than this from both bodies is said (m), or PIVOT_SHARE of the smaller
# body's diagonal, whichever is larger: a chain that Connect builds across small gaps (0.4 m
# cubes 0.1 m apart: pivots 0.05 m off, 7 % of a cube) is what the artist meant; a door
# hinged 0.525 m off its edge (23 % of the door) is not.
PIVOT_TOLERANCE = 1e-3
PIVOT_SHARE = 0.1


def box_distance(point, obj, depsgraph=None):
    """(distance from a world point to obj's bounding box, in world space, the box's world
    diagonal) or None for a degenerate transform. Exact for any rotation and scale; under a
    shear (a parent's non-uniform scale) the world-axis box of the corners is used, which is
    never farther than the object, so it never claims "outside" wrongly."""
    ev = obj.evaluated_get(depsgraph) if depsgraph is not None else obj
    corners = np.array([tuple(c) for c in ev.bound_box], dtype=np.float64)
    lo, hi = corners.min(axis=0), corners.max(axis=0)
    mw = np.array(ev.matrix_world, dtype=np.float64)
    m, t = mw[:3, :3], mw[:3, 3]
    if not np.all(np.isfinite(mw)) or abs(np.linalg.det(m)) < 1e-18:
        return None
    size = float(np.linalg.norm(m @ (hi - lo)))
    gram = m.T @ m
    off = gram - np.diag(np.diag(gram))
    if np.abs(off).max() <= 1e-5 * np.abs(gram).max():   # orthogonal (to float32): a box
        local = np.linalg.solve(m, point - t)
        return float(np.linalg.norm(m @ (local - np.clip(local, lo, hi)))), size
    world = corners @ m.T + t
    return float(np.linalg.norm(point - np.clip(point, world.min(axis=0),
                                                world.max(axis=0)))), size


def _body_distance(point, obj, depsgraph):
    """box_distance to a body, a Compound Parent's rigid-body children counted as its
    parts (they are its shape)."""
    parts = [obj]
    rb = getattr(obj, "rigid_body", None)
    if (rb is not None and rb.collision_shape == 'COMPOUND') or (
            obj.hullabaloo.enabled and obj.hullabaloo.shape == 'COMPOUND'):
        parts += [c for c in obj.children if c.type == 'MESH']
    found = [d for d in (box_distance(point, p, depsgraph) for p in parts) if d is not None]
    if not found:
        return None
    return min(d for d, _ in found), max(s for _, s in found)


def pivot_note(obj, joint_type, o1, o2, depsgraph=None):
    """The note for a Hinge, Point, Fixed or Generic joint whose pivot (obj's location)
    lies outside both bodies' bounding boxes by more than PIVOT_TOLERANCE or PIVOT_SHARE of
    the smaller body's diagonal, else None. A note, not an error: the joint is made as it stands."""
    if joint_type not in _PIVOT_TYPES or o1 is None or o2 is None or o1 == o2:
        return None
    pivot = np.array(obj.matrix_world.translation, dtype=np.float64)
    found = [_body_distance(pivot, o, depsgraph) for o in (o1, o2)]
    if None in found:
        return None
    tol = max(PIVOT_TOLERANCE, PIVOT_SHARE * min(s for _, s in found))
    d = min(d for d, _ in found)
    if d <= tol:
        return None
    near, far = (o1, o2) if found[0][0] <= found[1][0] else (o2, o1)   # d is to the first
    mid = (np.array(o1.matrix_world.translation) + np.array(o2.matrix_world.translation)) / 2
    midway = np.linalg.norm(pivot - mid) <= tol
    what = "hinge" if joint_type == 'HINGE' else "joint"
    return (f"its pivot lies {d:.3g} m outside both {near.name!r} and {far.name!r}"
            + (" (Blender's Connect places it midway between the origins)" if midway else "")
            + f": {_PIVOT_TYPES[joint_type]}, as in Blender. Move {obj.name!r} to where the "
            f"{what} should be.")


def pivot_notes(objects, depsgraph=None):
    """[(object name, pivot_note)] of the objects' imported rigid-body constraints."""
    out = []
    for obj in objects:
        c = getattr(obj, "rigid_body_constraint", None)
        if c is None or not obj.hullabaloo_joint.enabled:
            continue
        note = pivot_note(obj, c.type, c.object1, c.object2, depsgraph)
        if note:
            out.append((obj.name, note))
    return out


# ----------------------------------------------------------------------------- import
def import_constraint(obj, scene):
    """Copy Blender's rigid-body constraint of obj into obj.hullabaloo_joint. Returns the
    settings that could not be carried over (as 'setting: why')."""
    c = obj.rigid_body_constraint
    js = obj.hullabaloo_joint
    notes = []
    js.type = c.type
    js.object1, js.object2 = c.object1, c.object2
    js.enabled = c.enabled
    js.disable_collisions = c.disable_collisions
    rbw = scene.rigidbody_world
    fps = scene.render.fps / scene.render.fps_base
    substeps = rbw.substeps_per_frame if rbw is not None else 10
    scale = rbw.time_scale if rbw is not None else 1.0
    per_second = fps * substeps / max(scale, 1e-9)   # Bullet substeps per simulated second
    js.use_breaking = c.use_breaking
    js.break_force = c.breaking_threshold * per_second
    for kind in ("lin", "ang"):
        for ax in LIN:
            for what in ("use_limit", "limit"):
                if what == "use_limit":
                    setattr(js, f"use_limit_{kind}_{ax}", getattr(c, f"use_limit_{kind}_{ax}"))
                else:
                    for end in ("lower", "upper"):
                        name = f"limit_{kind}_{ax}_{end}"
                        setattr(js, name, getattr(c, name))
    for suffix in _SPRING_SUFFIX.values():
        for name in (f"use_spring_{suffix}", f"spring_stiffness_{suffix}",
                     f"spring_damping_{suffix}"):
            setattr(js, name, getattr(c, name))
    notes += _unusable_limits_and_springs(c, js)
    # Bullet drives only Blender's Motor type: a motor ticked on any other type is stored
    # but never runs in Blender, so it is imported off (values kept) and named.
    for kind, label in (("lin", "Linear"), ("ang", "Angular")):
        on = getattr(c, f"use_motor_{kind}")
        setattr(js, f"use_motor_{kind}", on and c.type == 'MOTOR')
        if on and c.type != 'MOTOR':
            notes.append(f"use_motor_{kind}: Blender runs no motor on a {c.type.title()} "
                         "constraint (only the Motor type drives), so it is imported off"
                         + (f"; tick {label} Motor in Hullabaloo Joint to drive it"
                            if kind in MOTORS.get(c.type, ()) else ""))
    js.motor_lin_target_velocity = c.motor_lin_target_velocity
    js.motor_ang_target_velocity = c.motor_ang_target_velocity
    js.motor_lin_max_force = c.motor_lin_max_impulse    # a force bound in Bullet's motor
    js.motor_ang_max_torque = c.motor_ang_max_impulse
    if c.type == 'GENERIC_SPRING' and c.spring_type == 'SPRING1' and any(
            getattr(c, f"use_spring_{s}") for s in _SPRING_SUFFIX.values()):
        notes.append("spring_type: Blender 2.7 springs (SPRING1) take damping as a per-step "
                     "factor; imported as N s/m damping, check the motion")
    fcs = animation.fcurve_collection(obj)
    for fc in (fcs or ()):
        if fc.data_path.startswith("rigid_body_constraint.") and not fc.mute:
            notes.append(f"the keys on {fc.data_path} (its value at the import is used)")
    if c.use_override_solver_iterations:
        notes.append("solver_iterations: a per-constraint iteration override has no "
                     "meaning in Hullabaloo's solver (ignored)")
    return notes


def library_reason(obj):
    """Why the import must not store Hullabaloo settings on obj (linked from a library, or
    a library override, whose added settings Blender drops when the file is reloaded), or
    None."""
    if obj.library is not None:
        return (f"linked from the library {obj.library.name!r} (read-only here), not "
                "imported; make it local (Object > Relations > Make Local) and import again")
    if obj.override_library is not None:
        return (f"a library override of {obj.override_library.reference.name!r}: imported for "
                "this session only (Blender keeps only overridable settings when the file is "
                "reloaded); make it local to keep the Hullabaloo settings")
    return None


def _object_notes(c):
    """What keeps a constraint from joining two bodies, per object setting (Blender, too,
    ignores a constraint without two rigid bodies)."""
    notes = []
    for name in ("object1", "object2"):
        o = getattr(c, name)
        if o is None:
            notes.append(f"{name}: not set; Blender ignores the constraint and the bake "
                         "skips the joint until both objects are set")
        elif o.rigid_body is None:
            notes.append(f"{name}: {o.name!r} has no Rigid Body; Blender ignores the "
                         "constraint and the bake skips the joint until Hullabaloo "
                         "simulates it")
        elif o.library is not None:
            notes.append(f"{name}: {o.name!r} is linked from the library {o.library.name!r}, "
                         "so it is not imported as a body; the bake skips the joint")
    return notes


def _unusable_limits_and_springs(c, js):
    """Blender accepts a limit with lower > upper (Bullet then leaves the axis free: Blender
    itself writes lower 0, upper -1 for 'no limit') and a negative spring stiffness or
    damping (Hullabaloo's never go below 0): such a limit or spring is imported off and
    named, so the joint itself is still made."""
    notes = []
    for ax in _TYPE_LIMITS.get(c.type, ()):
        kind, a = ax.split("_")
        lo, hi = (getattr(c, f"limit_{kind}_{a}_{end}") for end in ("lower", "upper"))
        if getattr(c, f"use_limit_{kind}_{a}") and lo > hi:
            setattr(js, f"use_limit_{kind}_{a}", False)
            notes.append(f"limit_{kind}_{a}: lower {lo:.4g} > upper {hi:.4g}, which leaves "
                         "the axis free in Blender; imported off (free)")
    if c.type == 'GENERIC_SPRING':
        for suffix in _SPRING_SUFFIX.values():
            k, d = (getattr(c, f"spring_{what}_{suffix}") for what in ("stiffness", "damping"))
            if getattr(c, f"use_spring_{suffix}") and (k < 0 or d < 0):
                setattr(js, f"use_spring_{suffix}", False)
                notes.append(f"spring_{suffix}: stiffness {k:.4g}, damping {d:.4g}: a "
                             "negative spring pushes away from its rest pose; left out "
                             "(the rest of the joint is made)")
    return notes


def import_constraints(objects, scene):
    """Import the rigid-body constraints of objects. Returns (count imported,
    [(object name, note)]): what was not carried, settings and whole constraints."""
    rbw = scene.rigidbody_world
    members = None
    if rbw is not None and rbw.constraints is not None:
        members = {o.name for o in rbw.constraints.all_objects}
    count, notes = 0, []
    for obj in objects:
        c = getattr(obj, "rigid_body_constraint", None)
        if c is None:
            continue
        if members is not None and obj.name not in members:
            notes.append((obj.name, "rigid_body_constraint: not in the Rigid Body World's "
                          "constraints collection (Blender does not simulate it), not "
                          "imported"))
            continue
        why = library_reason(obj)
        if why is not None and obj.library is not None:
            notes.append((obj.name, f"rigid_body_constraint: {why}"))
            continue
        found = import_constraint(obj, scene) + _object_notes(c)
        if why is not None:
            found.append(f"rigid_body_constraint: {why}")
        obj.hullabaloo_joint.import_notes = "; ".join(found)
        notes += [(obj.name, n) for n in found]
        count += 1
    return count, notes


def notes_by_object(notes):
    """[(name, note)] -> {name: [note, ...]} (for the operator's per-object lines)."""
    out = {}
    for name, note in notes:
        out.setdefault(name, []).append(note)
    return out


def unused_constraints(scene, bodies):
    """Blender rigid-body data this bake does not use: [(obj, message)] for an enabled
    rigid-body constraint that is not imported although Hullabaloo simulates an object it
    joins, and for linked rigid bodies and constraints (read-only, so never imported)."""
    out = []
    for obj in scene.objects:
        c = getattr(obj, "rigid_body_constraint", None)
        linked = obj.library is not None
        if linked and obj.rigid_body is not None and not obj.hullabaloo.enabled:
            out.append((obj, "has a Blender Rigid Body that this bake does not simulate: "
                        + library_reason(obj)))
        if c is None or not c.enabled or obj.hullabaloo_joint.enabled:
            continue
        joined = [o.name for o in (c.object1, c.object2) if o is not None and o.name in bodies]
        if not joined and not linked:
            continue
        out.append((obj, "has Blender's rigid-body constraint"
                    + (" joining " + " and ".join(repr(n) for n in joined) if joined else "")
                    + ", which this bake does not use: "
                    + (library_reason(obj) if linked else "import it (Import Blender Rigid "
                       "Body) or turn on its Hullabaloo Joint")))
    return out


# ----------------------------------------------------------------------------- panel
class HULLABALOO_PT_joint(bpy.types.Panel):
    bl_label = "Hullabaloo Joint"
    bl_space_type = 'PROPERTIES'
    bl_region_type = 'WINDOW'
    bl_context = "physics"
    bl_options = {'DEFAULT_CLOSED'}

    @classmethod
    def poll(cls, context):
        return context.object is not None

    def draw_header(self, context):
        self.layout.prop(context.object.hullabaloo_joint, "enabled", text="")

    def draw(self, context):
        js = context.object.hullabaloo_joint
        layout = self.layout
        layout.operator("hullabaloo.connect", icon='LINKED')
        layout.use_property_split = True
        layout = layout.column()
        layout.active = js.enabled
        layout.prop(js, "type")
        layout.prop(js, "object1")
        layout.prop(js, "object2")
        layout.prop(js, "disable_collisions")
        row = layout.row(heading="Breakable")
        row.prop(js, "use_breaking", text="")
        sub = row.row()
        sub.active = js.use_breaking
        sub.prop(js, "break_force", text="")
        for ax in _TYPE_LIMITS.get(js.type, ()):
            kind, a = ax.split("_")
            col = layout.column(align=True, heading=f"Limit {kind.title()} {a.upper()}")
            col.prop(js, f"use_limit_{kind}_{a}", text="")
            sub = col.column(align=True)
            sub.active = getattr(js, f"use_limit_{kind}_{a}")
            sub.prop(js, f"limit_{kind}_{a}_lower")
            sub.prop(js, f"limit_{kind}_{a}_upper")
        if js.type == 'GENERIC_SPRING':
            for suffix in _SPRING_SUFFIX.values():
                col = layout.column(align=True, heading=f"Spring {suffix.upper()}")
                col.prop(js, f"use_spring_{suffix}", text="")
                sub = col.column(align=True)
                sub.active = getattr(js, f"use_spring_{suffix}")
                sub.prop(js, f"spring_stiffness_{suffix}")
                sub.prop(js, f"spring_damping_{suffix}")
        for kind, unit in (("lin", "force"), ("ang", "torque")):
            if kind in MOTORS.get(js.type, ()):
                col = layout.column(align=True)
                col.prop(js, f"use_motor_{kind}")
                sub = col.column(align=True)
                sub.active = getattr(js, f"use_motor_{kind}")
                sub.prop(js, f"motor_{kind}_target_velocity")
                sub.prop(js, f"motor_{kind}_max_{unit}")




# ----------------------------------------------------------------------------- connect
def chain_by_distance(active, others):
    """Blender's Connect order: from the active object, repeatedly the nearest remaining."""
    order, rest, last = [active], list(others), active
    while rest:
        here = np.array(last.matrix_world.translation)
        rest.sort(key=lambda o: (float(np.linalg.norm(np.array(o.matrix_world.translation)
                                                       - here)), o.name))
        last = rest.pop(0)
        order.append(last)
    return order


def connect(context, objects, active, joint_type='POINT', pivot='CENTER',
            pattern='SELECTED_TO_ACTIVE', collection_name="Hullabaloo Joints"):
    """Make joint Empties like Blender's Connect (object1 = the active or the earlier link,
    object2 = the other), linked into a collection of their own. Returns the Empties."""
    others = [o for o in objects if o != active]
    if pattern == 'CHAIN_DISTANCE':
        order = chain_by_distance(active, others)
        pairs = list(itertools.pairwise(order))
    else:
        pairs = [(active, o) for o in others]
    coll = bpy.data.collections.get(collection_name)
    if coll is None:
        coll = bpy.data.collections.new(collection_name)
        context.scene.collection.children.link(coll)
    made = []
    for o1, o2 in pairs:
        p1, p2 = o1.matrix_world.translation, o2.matrix_world.translation
        loc = {'CENTER': (p1 + p2) / 2, 'ACTIVE': p1, 'SELECTED': p2}[pivot]
        e = bpy.data.objects.new("Joint", None)
        e.empty_display_type = 'ARROWS'
        e.empty_display_size = 0.25
        e.location = loc
        coll.objects.link(e)
        js = e.hullabaloo_joint
        js.enabled, js.type, js.object1, js.object2 = True, joint_type, o1, o2
        made.append(e)
    return made


class HULLABALOO_OT_connect(bpy.types.Operator):
    """Join the selected objects with Hullabaloo joints (Empties in a "Hullabaloo Joints" \
collection), like Blender's Rigid Body > Connect"""
    bl_idname = "hullabaloo.connect"
    bl_label = "Connect with Joints"
    bl_options = {'REGISTER', 'UNDO'}

    joint_type: EnumProperty(name="Type", items=JOINT_TYPES, default='FIXED')
    pivot_type: EnumProperty(name="Location", default='CENTER', items=[
        ('CENTER', "Center", "Pivot between the two objects"),
        ('ACTIVE', "Active", "Pivot at the active (or earlier) object"),
        ('SELECTED', "Selected", "Pivot at the other object")])
    connection_pattern: EnumProperty(name="Connection Pattern", default='SELECTED_TO_ACTIVE',
                                     items=[
        ('SELECTED_TO_ACTIVE', "Selected to Active", "Join every selected object to the "
         "active one"),
        ('CHAIN_DISTANCE', "Chain by Distance", "Join the objects in a chain, each to the "
         "nearest not yet joined, starting at the active one")])

    @classmethod
    def poll(cls, context):
        return context.active_object is not None and len(context.selected_objects) > 1

    def execute(self, context):
        active = context.active_object
        objs = list(context.selected_objects)
        if active not in objs:
            objs.append(active)
        made = connect(context, objs, active, self.joint_type, self.pivot_type,
                       self.connection_pattern)
        off = sorted(o.name for o in objs if not o.hullabaloo.enabled)
        if off:
            self.report({'WARNING'}, "Hullabaloo is off for " + ", ".join(off)
                        + ": their joints are skipped until it is turned on")
        self.report({'INFO'}, f"Made {len(made)} joint(s)")
        return {'FINISHED'}


CLASSES = (HULLABALOO_PG_joint, HULLABALOO_PT_joint, HULLABALOO_OT_connect)


def register():
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    bpy.types.Object.hullabaloo_joint = PointerProperty(type=HULLABALOO_PG_joint)


def unregister():
    del bpy.types.Object.hullabaloo_joint
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)
