"""Blender force fields for the bake: the scene's field objects -> the engine's FieldTable.

What Blender's rigid bodies feel, and so what is read here:

* field objects: every object with a field (``obj.field.type != 'NONE'``) enabled in the
  viewport, or only those of the effector collection when the rigid-body world's effector
  weights name one; a field without "Affect Location" does nothing to rigid bodies;
* weights: ``scene.rigidbody_world.effector_weights`` when the scene has a rigid-body world
  (each field is scaled by the "All" weight times its type's weight; gravity by the
  "Gravity" weight times "All"), otherwise all 1;
* a dynamic body that is itself a field is not pushed by fields (Blender skips it too);
* poses and settings: read at the frame being simulated (a step from frame f to f + 1 uses
  the fields of frame f + 1, as Blender's depsgraph does); read once when nothing about the
  fields is animated.

Field types Hullabaloo cannot carry are reported per object and ignored; settings it
approximates or ignores are reported too (see ``_check``). The bake goes on.
"""
import numpy as np

from ..engine.features import fields as efields
from . import transforms

SUPPORTED = {"FORCE", "WIND", "VORTEX", "MAGNET", "HARMONIC", "LENNARDJ", "TURBULENCE", "DRAG"}
# Why the others are ignored (the report's wording).
UNSUPPORTED = {
    "CHARGE": "Blender's own rigid bodies have no defined charge for it (no force in "
              "Blender 4.2, an arbitrary one in 5.x), so there is nothing to match",
    "TEXTURE": "texture-driven forces need Blender's texture evaluation",
    "GUIDE": "curve guides steer particles, not rigid bodies",
    "BOID": "boid fields act on boid particles only (Blender's rigid bodies ignore it too)",
    "FLUID_FLOW": "it needs a fluid simulation's velocities",
}
# effector_weights property of each field type.
WEIGHT = {"FORCE": "force", "WIND": "wind", "VORTEX": "vortex", "MAGNET": "magnetic",
          "HARMONIC": "harmonic", "CHARGE": "charge", "LENNARDJ": "lennardjones",
          "TURBULENCE": "turbulence", "DRAG": "drag", "TEXTURE": "texture",
          "GUIDE": "curve_guide", "BOID": "boid", "FLUID_FLOW": "smokeflow"}


def effector_weights(scene):
    """The rigid-body world's effector weights, or None (all weights 1, every field)."""
    rbw = getattr(scene, "rigidbody_world", None)
    return getattr(rbw, "effector_weights", None) if rbw is not None else None


def gravity_weight(scene):
    """Factor on the scene's gravity: effector weights Gravity x All (Blender's rigid-body
    world does the same), 1 without a rigid-body world."""
    w = effector_weights(scene)
    return 1.0 if w is None else float(w.gravity) * float(w.all)


def _has_field(obj):
    fd = getattr(obj, "field", None)
    return fd is not None and fd.type != 'NONE'


class SceneFields:
    """The fields of a bake. ``objects`` are the field objects the engine simulates,
    ``per_frame`` says whether the table must be rebuilt every frame (an animated field or
    one with noise), ``animated`` whether the scene must be sampled at each frame for it."""

    def __init__(self, scene, depsgraph, bodies, problems, problem_type):
        self.scene = scene
        self.rate = float(scene.render.fps)     # Blender's vel_to_sec: the integer fps
        self.weights = effector_weights(scene)
        self._problem = lambda level, obj, msg: problems.append(
            problem_type(level, obj.name, msg))
        self.objects = []
        self._bad = set()          # field objects already reported for a bad transform
        body_names = {b.name for b in bodies}
        for obj in self._candidates(scene, depsgraph):
            if self._check(obj, body_names):
                self.objects.append(obj)
        # Blender leaves a rigid body that is itself a field alone.
        self.exempt = [b.index for b in bodies if _has_field(b.obj)]
        self.animated = any(transforms.may_move(o) for o in self.objects)
        self.per_frame = self.animated or any(o.field.noise > 0 for o in self.objects)

    def _candidates(self, scene, depsgraph):
        coll = self.weights.collection if self.weights is not None else None
        if coll is not None:
            objs = coll.all_objects
        else:
            layer = getattr(depsgraph, "view_layer", None)
            objs = layer.objects if layer is not None else scene.objects
        return sorted((o for o in objs if _has_field(o) and not o.hide_viewport),
                      key=lambda o: o.name)

    def _weight(self, ftype):
        w = self.weights
        return 1.0 if w is None else float(w.all) * float(getattr(w, WEIGHT[ftype]))

    def _check(self, obj, body_names):
        """Report what cannot be carried; True when the field goes to the engine."""
        fd = obj.field
        label = fd.type.replace("_", " ").title()
        if fd.type in UNSUPPORTED:
            self._problem("WARNING", obj, f"is a {label} force field, which Hullabaloo does "
                          f"not simulate ({UNSUPPORTED[fd.type]}); the field is ignored.")
            return False
        if fd.type not in SUPPORTED:
            self._problem("WARNING", obj, f"has a force field of an unknown type "
                          f"{fd.type!r}; the field is ignored.")
            return False
        if not fd.apply_to_location or self._weight(fd.type) == 0.0:
            return False          # does nothing to rigid bodies in Blender either
        if fd.shape in ('SURFACE', 'POINTS'):
            self._problem("WARNING", obj, f"{label} field: the {fd.shape.title()} shape is "
                          "not supported; it acts as a Point shape from the object's origin.")
        if fd.use_absorption:
            self._problem("WARNING", obj, f"{label} field: Absorption (blocking by "
                          "collision objects) is not supported and is ignored.")
        if fd.type == 'TURBULENCE':
            self._problem("INFO", obj, "Turbulence field: Hullabaloo uses its own noise "
                          "pattern (same size, strength and falloff, not Blender's pattern).")
        if fd.noise > 0:
            self._problem("INFO", obj, f"{label} field: its Noise uses Hullabaloo's own "
                          "random sequence (same amount, not Blender's numbers).")
        if obj.name in body_names:
            self._problem("WARNING", obj, f"is both a simulated body and a {label} field; "
                          "the field stays where the object is in the scene (it does not "
                          "follow the simulated motion).")
        return True

    def _field(self, obj):
        """The engine's ForceField of a field object now, or None (reported once) when its
        transform is not finite."""
        fd = obj.field
        m = np.array(obj.matrix_world, dtype=np.float64)
        if not np.isfinite(m).all():
            if obj.name not in self._bad:
                self._bad.add(obj.name)
                self._problem("WARNING", obj, "has a non-finite transform (NaN or infinity "
                              "in its location, rotation or scale); its force field is ignored "
                              "at those frames. Reset the transform (Object > Clear).")
            return None
        shape = fd.shape if fd.shape in ('POINT', 'LINE', 'PLANE') else 'POINT'
        common = dict(kind=fd.type, position=m[:3, 3], axis=m[:3, 2], shape=shape,
                      falloff=fd.falloff_type, z_direction=fd.z_direction,
                      power=fd.falloff_power, use_min=fd.use_min_distance,
                      min_distance=fd.distance_min, use_max=fd.use_max_distance,
                      max_distance=fd.distance_max, radial_power=fd.radial_falloff,
                      use_radial_min=fd.use_radial_min, radial_min=fd.radial_min,
                      use_radial_max=fd.use_radial_max, radial_max=fd.radial_max,
                      flow=fd.flow, noise=fd.noise, seed=fd.seed,
                      weight=self._weight(fd.type))
        # Drag: Blender's "Linear" (linear_drag) is the strength, which its effector code
        # multiplies by |v|^2, and "Quadratic" the damping, multiplied by |v| (measured: a
        # falling cube with Linear 1 ends at 0.64 m/s, with Quadratic 1 near 9.8 m/s): the
        # raw values carry Blender's behaviour.
        return efields.ForceField(strength=fd.strength, damping=fd.harmonic_damping,
                                  rest_length=fd.rest_length, size=fd.size,
                                  gravity_falloff=fd.use_gravity_falloff,
                                  global_coords=fd.use_global_coords, **common)

    def table(self, frame):
        """The engine's FieldTable from the fields' current poses and settings (the scene
        must be at ``frame``)."""
        rows = [self._field(o) for o in self.objects]
        return efields.FieldTable([r for r in rows if r is not None], rate=self.rate,
                                  frame=frame)

    def apply(self, world, frame):
        if self.objects or world.fields is not None:
            world.set_fields(self.table(frame) if self.objects else None, exempt=self.exempt)
