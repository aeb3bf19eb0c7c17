"""Force fields (Blender's effectors) evaluated on all bodies at once.

The maths is that of Blender's effectors as its rigid bodies feel them (facts read from
Blender's ``effect.cc`` / ``rigidbody.cc``; the code here is our own, compiled kernels):

* each field has a pose (origin O, unit axis n = its object's Z axis), a type, a shape
  (Point, Line, Plane) and falloff settings; the body is a point p (its centre of mass) with
  linear velocity v;
* the *effector point* e is O (Point shape), the foot of p on the Z line (Line shape, and the
  Vortex with a Plane shape) or the foot of p on the XY plane (Plane shape); r = p - e,
  d = |r|; r2 = p - O is the offset from the origin, used by the falloff direction tests;
* the falloff f = weight * shape falloff, with ``fall(x) = (1 + x - x_min)^-power`` (x_min =
  0 without a minimum distance), 1 inside the minimum and 0 beyond the maximum distance;
  Sphere: fall(d); Tube: fall(|r2.n|) * fall_r(radial distance from the axis); Cone:
  fall(|r2.n|) * fall_r(angle from the axis in degrees); Z direction Positive / Negative zeroes
  the field on the other side of the XY plane. A field with f <= 0 does nothing;
* the core force per type (s strength, k the scene's frame rate, Blender's ``vel_to_sec``):
  Wind s f n; Force s f r/d (times d^-2 with gravity falloff); Vortex (Point shape)
  s f d (n x r)/|n x r|, (other shapes) t + (s f) n x t - k v with t = s f (n x r2);
  Magnetic k (v x s f u), u = unit (n x r) for Point / Line shapes, n otherwise; Harmonic
  -s f r' - 2 c sqrt|s| k v (r' = r scaled to d - rest length, c the damping); Lennard-Jones
  zero (a rigid body has no particle size, so the attraction term (0 / d)^6 vanishes);
  Turbulence s f (gradient-noise vector); Drag -f |v| k (min(s, 2) |v| k + min(c, 2)) v / |v|;
* the force on the body is core / k, plus the flow term -flow f v for every type but
  Harmonic and Drag (Wind's default flow 1 is why a wind push fades as the body speeds up).

Blender applies the sum at the centre of mass (Bullet's central force: no torque) before
every Bullet substep, from the body's current position and velocity, with the fields' poses
and settings of the frame being simulated. ``field_forces`` is that sum for many bodies;
the compiled substeps apply it (engine.dynamics.field_kernels.field_kick).

Not modelled (the add-on reports them): Charge (Blender's rigid bodies read an
uninitialised charge: 4.2 gives no force, 5.2 an arbitrary one), Texture, Guide, Boid, Fluid
Flow, the Surface / Every Point shapes and absorption (ray visibility through colliders).
Turbulence and the noise amount use our own deterministic noise, not Blender's random
tables: same amplitude, size and falloff, a different pattern.
"""
from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from ..core.errors import EngineError
from ..dynamics.field_kernels import forces, noise_points


class FieldKind(IntEnum):
    """Field types, numbered as Blender's effector types (its effector weight indices)."""
    FORCE = 1
    VORTEX = 2
    MAGNET = 3
    WIND = 4
    HARMONIC = 7
    CHARGE = 8
    LENNARDJ = 9
    TURBULENCE = 11
    DRAG = 12


class FieldShape(IntEnum):
    POINT = 0
    LINE = 1
    PLANE = 2


class Falloff(IntEnum):
    SPHERE = 0
    TUBE = 1
    CONE = 2


class ZDirection(IntEnum):
    BOTH = 0
    POSITIVE = 1
    NEGATIVE = 2


def _enum(enum, value, what):
    if isinstance(value, str):
        try:
            return enum[value.upper()]
        except KeyError:
            pass
    else:
        try:
            return enum(value)
        except ValueError:
            pass
    names = ", ".join(m.name for m in enum)
    raise EngineError(f"{what} must be one of {names}, got {value!r}")


@dataclass(frozen=True)
class ForceField:
    """One field's settings (Blender's names in brackets). ``kind``, ``shape``, ``falloff``
    and ``z_direction`` take the enum or its name.

    position, axis: the field object's world origin and Z axis (any length, normalised here).
    strength (strength; Drag: the UI's "Linear", linear_drag, which Blender's maths
    multiplies by |v|^2), flow (flow), damping (Harmonic: harmonic_damping; Drag: the UI's
    "Quadratic", quadratic_drag, multiplied by |v|: the same field), rest_length (Harmonic rest_length), size
    (Turbulence size), power / min_distance / max_distance (falloff_power, distance_min /
    distance_max, used when use_min / use_max), radial_* the same for Tube and Cone,
    gravity_falloff (use_gravity_falloff: Force times 1/d^2), global_coords (Turbulence in
    world coordinates), noise / seed (noise amount added to the strength, per frame),
    weight: the world's effector weight for the field (the "all" weight times its type's).
    """
    kind: object = FieldKind.FORCE
    position: tuple = (0.0, 0.0, 0.0)
    axis: tuple = (0.0, 0.0, 1.0)
    strength: float = 1.0
    flow: float = 0.0
    shape: object = FieldShape.POINT
    falloff: object = Falloff.SPHERE
    z_direction: object = ZDirection.BOTH
    power: float = 0.0
    use_min: bool = False
    min_distance: float = 0.0
    use_max: bool = False
    max_distance: float = 0.0
    radial_power: float = 0.0
    use_radial_min: bool = False
    radial_min: float = 0.0
    use_radial_max: bool = False
    radial_max: float = 0.0
    damping: float = 1.0
    rest_length: float = 0.0
    size: float = 1.0
    gravity_falloff: bool = False
    global_coords: bool = False
    noise: float = 0.0
    seed: int = 0
    weight: float = 1.0


# Per-field table columns: name -> (trailing shape, dtype).
_COLUMNS = {
    "kind": ((), np.int64), "shape": ((), np.int64), "falloff": ((), np.int64),
    "z_direction": ((), np.int64), "position": ((3,), np.float64), "axis": ((3,), np.float64),
    "strength": ((), np.float64), "flow": ((), np.float64), "damping": ((), np.float64),
    "power": ((), np.float64), "use_min": ((), bool), "min_distance": ((), np.float64),
    "use_max": ((), bool), "max_distance": ((), np.float64),
    "radial_power": ((), np.float64), "use_radial_min": ((), bool),
    "radial_min": ((), np.float64), "use_radial_max": ((), bool),
    "radial_max": ((), np.float64), "rest_length": ((), np.float64),
    "size": ((), np.float64), "gravity_falloff": ((), bool), "global_coords": ((), bool),
    "weight": ((), np.float64),
}


class FieldTable:
    """Fields as a structure of arrays (F rows), ready for ``field_forces``.

    FieldTable(fields, rate=24.0, frame=0): ``rate`` is Blender's velocity-to-seconds factor
    (the scene's integer frames per second, ``render.fps``: forces are divided by it);
    ``frame`` picks the per-frame noise of fields with a noise amount (deterministic in
    (seed, frame)). Columns are attributes named as ForceField's fields; strength and damping
    already hold the frame's noise."""

    # Columns (F rows; see _COLUMNS), set in __init__.
    kind: np.ndarray
    shape: np.ndarray
    falloff: np.ndarray
    z_direction: np.ndarray
    position: np.ndarray
    axis: np.ndarray
    strength: np.ndarray
    flow: np.ndarray
    damping: np.ndarray
    power: np.ndarray
    use_min: np.ndarray
    min_distance: np.ndarray
    use_max: np.ndarray
    max_distance: np.ndarray
    radial_power: np.ndarray
    use_radial_min: np.ndarray
    radial_min: np.ndarray
    use_radial_max: np.ndarray
    radial_max: np.ndarray
    rest_length: np.ndarray
    size: np.ndarray
    gravity_falloff: np.ndarray
    global_coords: np.ndarray
    weight: np.ndarray

    def __init__(self, fields=(), rate=24.0, frame=0):
        fields = list(fields)
        rate = float(rate)
        if not (np.isfinite(rate) and rate > 0):
            raise EngineError(f"rate (the scene's frames per second) must be positive, got "
                              f"{rate!r}")
        self.rate = rate
        self.frame = int(frame)
        n = len(fields)
        self._packed = None
        for name, (shape, dtype) in _COLUMNS.items():
            setattr(self, name, np.zeros((n,) + shape, dtype=dtype))
        for i, fd in enumerate(fields):
            if not isinstance(fd, ForceField):
                raise EngineError(f"fields must be ForceField objects, got {fd!r}")
            self._set_row(i, fd)

    def __len__(self):
        return len(self.kind)

    def pack(self):
        """(ints, floats): the columns as the kernels read them (see _INT_COLUMNS), built
        once (the columns are not to change after)."""
        if self._packed is None:
            ints = np.stack([getattr(self, c).astype(np.int64) for c in _INT_COLUMNS], axis=1)
            floats = np.concatenate([self.position, self.axis]
                                    + [getattr(self, c)[:, None] for c in _FLOAT_COLUMNS],
                                    axis=1)
            self._packed = (np.ascontiguousarray(ints.reshape(len(self), len(_INT_COLUMNS))),
                            np.ascontiguousarray(floats.reshape(len(self), 18)))
        return self._packed

    def _set_row(self, i, fd):
        self.kind[i] = _enum(FieldKind, fd.kind, "field kind")
        self.shape[i] = _enum(FieldShape, fd.shape, "field shape")
        self.falloff[i] = _enum(Falloff, fd.falloff, "field falloff")
        self.z_direction[i] = _enum(ZDirection, fd.z_direction, "field z_direction")
        pos = np.asarray(fd.position, dtype=np.float64)
        axis = np.asarray(fd.axis, dtype=np.float64)
        if pos.shape != (3,) or axis.shape != (3,):
            raise EngineError(f"field position and axis must be 3 numbers, got "
                              f"{fd.position!r}, {fd.axis!r}")
        length = np.linalg.norm(axis)
        if not (np.all(np.isfinite(pos)) and np.isfinite(length)):
            raise EngineError(f"field position {fd.position!r} and axis {fd.axis!r} must be "
                              "finite (check the field object's transform for NaN/inf)")
        self.position[i] = pos
        # A zero axis (a field object scaled to zero along Z) stays zero, as Blender's
        # normalisation leaves it: Wind then does nothing, a Point-shaped Force still pulls.
        self.axis[i] = axis / length if length > 0 else 0.0
        for name in ("strength", "flow", "damping", "power", "min_distance", "max_distance",
                     "radial_power", "radial_min", "radial_max", "rest_length", "size",
                     "weight"):
            value = float(getattr(fd, name))
            if not np.isfinite(value):
                raise EngineError(f"field {name} must be finite, got {value!r}")
            getattr(self, name)[i] = value
        for name in ("use_min", "use_max", "use_radial_min", "use_radial_max",
                     "gravity_falloff", "global_coords"):
            getattr(self, name)[i] = bool(getattr(fd, name))
        if fd.noise > 0:
            rng = np.random.default_rng([int(fd.seed) & 0xFFFFFFFF, abs(self.frame)])
            self.strength[i] += _noise_term(rng, fd.noise)
            if self.kind[i] in (FieldKind.HARMONIC, FieldKind.DRAG):
                self.damping[i] += _noise_term(rng, fd.noise)


def _noise_term(rng, amount):
    """A random strength offset with Blender's distribution for the noise amount: a
    magnitude up to amount (an integer 1-127 over 128, divided by a factor in [1, 2)), with
    a sign that is positive about half the time."""
    k = int(rng.integers(1, 128))
    div = 1.0 + float(rng.random())
    return (1.0 if k > 64 else -1.0) * (k / div) * amount / 128.0


# Packed columns (FieldTable.pack): ints (F, len(_INT_COLUMNS)), floats (F, 18) with
# position 0-2, axis 3-5, then _FLOAT_COLUMNS from 6 on.
_INT_COLUMNS = ("kind", "shape", "falloff", "z_direction", "use_min", "use_max",
                "use_radial_min", "use_radial_max", "gravity_falloff", "global_coords")
_FLOAT_COLUMNS = ("strength", "flow", "damping", "power", "min_distance", "max_distance",
                  "radial_power", "radial_min", "radial_max", "rest_length", "size", "weight")


def field_forces(table, positions, velocities):
    """Forces (N, 3) of all fields of ``table`` on N bodies at centre-of-mass positions
    (N, 3) with linear velocities (N, 3): the sum over fields of Blender's effector force
    (see the module notes), field by field (engine.dynamics.field_kernels). Applied at the
    centre of mass, so there is no torque."""
    p = np.ascontiguousarray(positions, dtype=np.float64).reshape(-1, 3)
    v = np.ascontiguousarray(velocities, dtype=np.float64).reshape(-1, 3)
    out = np.zeros((len(p), 3))
    if len(table) and len(p):
        ints, floats = table.pack()
        forces(ints, floats, table.rate, p, v, out)
    return out


def gradient_noise(x):
    """Improved-Perlin-style gradient noise in [-1, 1] at points x (..., 3): zero on the
    integer lattice, smooth (C2 fade) in between. Our own fixed permutation table."""
    x = np.asarray(x, dtype=np.float64)
    flat = np.ascontiguousarray(x.reshape(-1, 3))
    out = np.empty(len(flat))
    noise_points(flat, out)
    return out.reshape(x.shape[:-1])

