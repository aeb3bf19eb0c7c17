"""Import of Blender's Rigid Body settings (objects and world) into Hullabaloo's.

What is carried, and how (measured against Blender 4.2 / 5.2's own simulation):
- type, shape, mass, friction, bounciness, damping, collision collections;
- Animated (``rigid_body.kinematic``) and Dynamic (``rigid_body.enabled``), keys included:
  their F-curves' keys are copied onto ``hullabaloo.animated`` / ``hullabaloo.simulated``
  (a constant Animated active body stays our Animated type);
- deactivation: Enable Deactivation on -> ours on with Blender's velocities and Start
  Deactivated; off -> ours on with our own at-rest tolerances (Bullet never sleeps such a
  body; ours sleeps only once it is at rest, which changes nothing visible and keeps resting
  piles cheap), said once in the operator's report;
- Compound Parent: a parent with shape Compound is built from its direct children that have
  rigid bodies in the world's collection (hidden ones too), at their poses, with their own
  shapes; the children become collision parts, never bodies; the parent's mesh is no part;
- the world: frame range, Speed (time scale), substeps and iterations as hints, and only
  objects in the world's collection (its gravity effector weights are read by the bake
  itself, addon.fields.gravity_weight, so they need no copy).

Objects linked from a library are left alone (read-only) and library overrides imported for
the session only (Blender drops added settings of an override on reload), both said by name.

Everything the import cannot carry is listed per object (``import_notes``, also shown in
the bake summary) and returned to the operator for its report: nothing is dropped silently.
"""
from . import animation, joints

RB_SHAPES = {"BOX": "BOX", "SPHERE": "SPHERE", "CAPSULE": "CAPSULE",
             "CONVEX_HULL": "CONVEX_HULL", "MESH": "MESH", "COMPOUND": "COMPOUND",
             "CYLINDER": "CYLINDER", "CONE": "CONE"}
# Our automatic solver rate (engine World.max_substep = 1/360 s) and the iterations that
# match Blender's default 10 (a soft-step sweep does the work of about ten Bullet ones).
OUR_RATE = 360.0
BLENDER_ITERATIONS_PER_OURS = 10
# rigid_body properties the import carries, keys included; keys on any other are reported.
_KEYED = {"kinematic": "animated", "enabled": "simulated"}


def world_objects(scene):
    """Objects Blender simulates: those in the Rigid Body World's collection (None: no
    world or no collection, then every object with a rigid body)."""
    rbw = scene.rigidbody_world
    if rbw is None or rbw.collection is None:
        return None
    return {o.name for o in rbw.collection.all_objects}


def _rb_fcurves(obj):
    """{property: F-curve} of the object's keyed rigid_body.* settings."""
    fcs = animation.fcurve_collection(obj)
    if fcs is None:
        return {}
    return {fc.data_path.split(".", 1)[1]: fc for fc in fcs
            if fc.data_path.startswith("rigid_body.") and not fc.mute}


def _has_transform_animation(obj):
    fcs = animation.fcurve_collection(obj)
    return fcs is not None and any(fc.data_path.startswith(("location", "rotation"))
                                   for fc in fcs)


def _copy_keys(obj, fc, name):
    """Copy a boolean F-curve's keys (frame, value) onto hullabaloo.<name>, replacing any
    earlier copy; constant interpolation, as Blender evaluates a boolean."""
    path = f"hullabaloo.{name}"
    _drop_keys(obj, name)
    keys = [(k.co[0], k.co[1] >= 0.5) for k in fc.keyframe_points]
    for frame, value in keys:
        setattr(obj.hullabaloo, name, value)
        obj.keyframe_insert(data_path=path, frame=frame)
    new = next(c for c in animation.fcurve_collection(obj) if c.data_path == path)
    for k in new.keyframe_points:
        k.interpolation = 'CONSTANT'
    new.update()


def _drop_keys(obj, name):
    fcs = animation.fcurve_collection(obj)
    if fcs is None:
        return
    for fc in [c for c in fcs if c.data_path == f"hullabaloo.{name}"]:
        fcs.remove(fc)


def _compound_parent(obj, members):
    """The object's parent if that is a Compound Parent in the same world, else None."""
    par = obj.parent
    if par is None or par.rigid_body is None or par.rigid_body.collision_shape != 'COMPOUND':
        return None
    if members is not None and par.name not in members:
        return None
    return par


def import_object(obj, members=None):
    """Copy one object's Blender Rigid Body settings to obj.hullabaloo and enable it.
    Returns the list of what could not be carried (also stored in import_notes)."""
    rb = obj.rigid_body
    s = obj.hullabaloo
    notes = []
    keyed = _rb_fcurves(obj)
    _import_type(obj, rb, s, keyed)
    if rb.type == 'PASSIVE' and keyed.keys() & _KEYED.keys():
        notes.append("the keys on Animated / Dynamic of a Passive body (it is Animated for "
                     "the whole bake when Animated is keyed on at all, else Passive)")
    s.shape = RB_SHAPES.get(rb.collision_shape, 'CONVEX_HULL')
    if rb.collision_shape == 'COMPOUND':
        s.compound_source = 'CHILDREN'
        s.compound_include_self = False  # Blender's Compound Parent: the children only
    if rb.collision_shape == 'MESH' and s.body_type == 'DYNAMIC':
        notes.append("the Mesh shape on a dynamic body (its convex hull is used; use "
                     "Compound for a moving non-convex object)")
    s.mass_mode = 'MASS'
    s.mass = rb.mass
    s.friction = rb.friction
    s.restitution = rb.restitution
    s.linear_damping = rb.linear_damping
    s.angular_damping = rb.angular_damping
    s.collision_collections = tuple(rb.collision_collections)
    if rb.use_deactivation:
        s.use_deactivation = True
        s.use_start_deactivated = rb.use_start_deactivated
        s.deactivate_linear_velocity = rb.deactivate_linear_velocity
        s.deactivate_angular_velocity = rb.deactivate_angular_velocity
    else:  # see the module docstring: sleeping only once at rest
        s.use_deactivation = True
        s.use_start_deactivated = False
        for name in ("deactivate_linear_velocity", "deactivate_angular_velocity"):
            s.property_unset(name)
    if rb.use_margin:
        notes.append(f"the collision margin of {rb.collision_margin:.3g} m (Hullabaloo's "
                     "shapes are exact, without a margin)")
    # Source and Deforming are carried as they are (collect.py honours them); what our
    # bake cannot do with them is listed (Blender offers Deforming for Mesh only too).
    s.mesh_source = rb.mesh_source
    s.use_deform = rb.use_deform
    if rb.use_deform and (s.shape != 'MESH' or s.body_type == 'DYNAMIC'
                          or rb.mesh_source == 'BASE'):
        notes.append("Deforming on a " + ("dynamic body" if s.body_type == 'DYNAMIC' else
                                          "shape other than Mesh" if s.shape != 'MESH' else
                                          "Source Base mesh")
                     + " (the shape is taken at the first frame)")
    for prop in sorted(set(keyed) - set(_KEYED)):
        notes.append(f"the keys on {prop} (its value at the first frame is used)")
    par = _compound_parent(obj, members)
    s.collision_part = par is not None
    if par is not None:
        notes = [n for n in notes if "margin" not in n]
        notes.append(f"its own type, mass and dynamics: it is a collision part of the "
                     f"Compound Parent {par.name!r}, which moves it")
    s.enabled = True
    s.import_notes = "; ".join(notes)
    return notes


def _import_type(obj, rb, s, keyed):
    """Body type and the keyable Animated / Dynamic settings (keys copied)."""
    for name in _KEYED.values():
        _drop_keys(obj, name)
        s.property_unset(name)
    if rb.type == 'PASSIVE':
        s.body_type = 'ANIMATED' if (rb.kinematic or "kinematic" in keyed) else 'PASSIVE'
        return
    if not keyed.keys() & _KEYED.keys():
        if rb.kinematic:
            s.body_type = 'ANIMATED'
            return
        if not rb.enabled and not _has_transform_animation(obj):
            # Held where it is for the whole bake: our Animated type does exactly that.
            s.body_type = 'ANIMATED'
            return
    s.body_type = 'DYNAMIC'
    for prop, name in _KEYED.items():
        if prop in keyed:
            _copy_keys(obj, keyed[prop], name)
        else:
            setattr(s, name, bool(getattr(rb, prop)))


def import_world(scene):
    """Copy the Rigid Body World's settings to scene.hullabaloo. Returns notes for the
    operator's report (what was adapted or not carried)."""
    rbw = scene.rigidbody_world
    notes = []
    if rbw is None:
        return notes
    hs = scene.hullabaloo
    pc = rbw.point_cache
    if (pc.frame_start, pc.frame_end) != (scene.frame_start, scene.frame_end):
        hs.use_scene_frame_range = False
        hs.frame_start, hs.frame_end = pc.frame_start, pc.frame_end
    hs.time_scale = rbw.time_scale
    if rbw.time_scale != 1.0:
        notes.append(f"Speed {rbw.time_scale:.3g} (slow motion) carried")
    # Blender's substeps are Bullet steps, each with its own collision pass; ours are solver
    # substeps, picked automatically at about 360 Hz for contact stiffness. Blender's count
    # is a hint: only a rate above ours (a user who raised it for stiff scenes) is kept.
    fps = scene.render.fps / scene.render.fps_base
    rate = rbw.substeps_per_frame * fps
    hs.substeps = rbw.substeps_per_frame if rate > OUR_RATE else 0
    hs.iterations = max(1, round(rbw.solver_iterations / BLENDER_ITERATIONS_PER_OURS))
    if rate > OUR_RATE or rbw.solver_iterations > BLENDER_ITERATIONS_PER_OURS:
        notes.append(f"Blender's {rbw.substeps_per_frame} substeps and "
                     f"{rbw.solver_iterations} iterations taken as hints: "
                     f"{hs.substeps or 'automatic'} substeps, {hs.iterations} iteration(s)")
    if rbw.use_split_impulse:
        notes.append("the world's Split Impulse is not carried (Hullabaloo's soft contacts "
                     "never add energy)")
    return notes


def import_scene(scene, objs, disable_blender_world=True):
    """Import the objects (those with a rigid body in the world's collection) and the
    world. Returns (imported objects, per-object notes {name: [str]}, general notes)."""
    members = world_objects(scene)
    general = []
    outside = [o for o in objs if members is not None and o.name not in members]
    if outside:
        general.append(f"{len(outside)} object(s) with a Rigid Body outside the Rigid Body "
                       "World's collection left out (Blender does not simulate them): "
                       + ", ".join(o.name for o in outside[:5])
                       + (" ..." if len(outside) > 5 else ""))
    done, per_object, sleepers = [], {}, 0
    for o in objs:
        if members is not None and o.name not in members:
            continue
        why = joints.library_reason(o)
        if why is not None and o.library is not None:
            per_object[o.name] = [f"rigid_body: {why}"]   # read-only: nothing written
            continue
        notes = import_object(o, members)
        if why is not None:   # an override: carried for this session, said so
            notes.append(f"rigid_body: {why}")
            o.hullabaloo.import_notes = "; ".join(notes)
        if notes:
            per_object[o.name] = notes
        if not o.rigid_body.use_deactivation and o.hullabaloo.body_type == 'DYNAMIC':
            sleepers += 1
        done.append(o)
    # Children of imported Compound Parents are parts whether or not they were in the pool.
    for o in list(done):
        if o.rigid_body.collision_shape != 'COMPOUND':
            continue
        for c in o.children:
            if c.rigid_body is not None and c not in done and \
                    (members is None or c.name in members):
                notes = import_object(c, members)
                if notes:
                    per_object[c.name] = notes
                done.append(c)
    if sleepers:
        general.append(f"{sleepers} object(s) have Blender's Enable Deactivation off; they "
                       "sleep only once at rest (Hullabaloo's default), which does not change "
                       "their motion")
    general += import_world(scene)
    rbw = scene.rigidbody_world
    if disable_blender_world and rbw is not None and rbw.enabled:
        rbw.enabled = False
        general.append("Blender's Rigid Body World turned off")
    return done, per_object, general



def not_imported(scene):
    """What of Blender's Rigid Body the scene has that Hullabaloo does not simulate yet:
    (objects with a rigid body Blender simulates, enabled rigid-body constraints), each
    without Hullabaloo turned on; for the bake's "Nothing to bake" and the command line."""
    members = world_objects(scene)
    bodies = [o for o in scene.objects if o.rigid_body is not None and not o.hullabaloo.enabled
              and (members is None or o.name in members)]
    constraints = [o for o in scene.objects
                   if getattr(o, "rigid_body_constraint", None) is not None
                   and o.rigid_body_constraint.enabled and not o.hullabaloo_joint.enabled]
    return bodies, constraints


def import_hint(scene):
    """The sentence a bake that found nothing to simulate adds when the scene is set up
    with Blender's Rigid Body instead (else "")."""
    bodies, constraints = not_imported(scene)
    if not bodies:
        return ""
    return (f" The scene has {len(bodies)} object(s) with Blender's Rigid Body"
            + (f" and {len(constraints)} rigid-body constraint(s)" if constraints else "")
            + ": Object > Hullabaloo > Import Blender Rigid Body brings them in (on the "
            "command line: --import-rigid-body).")
