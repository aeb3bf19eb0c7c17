"""Force fields (Blender's effectors) evaluated on all bodies at once.

The maths is that of Blender's effectors as its rigid bodies feel them (facts read from
Blender's ``effect.cc`` / ``rigidbody.cc``; the code here is our own, batched numpy):

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
and settings of the frame being simulated. ``field_forces`` is that sum for many bodies.

Not modelled (the add-on reports them): Charge (Blender's rigid bodies read an
uninitialised charge: 4.2 gives no force, 5.2 an arbitrary one), Texture, Guide, Boid, Fluid
Flow, the Surface / Every Point shapes and absorption (ray visibility through colliders).
Turbulence and the noise amount use our own deterministic noise, not Blender's random
tables: same amplitude, size and falloff, a different pattern.
"""
from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from .errors import EngineError


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

    def __init__(self, fields=(), rate=24.0, frame=0):
        fields = list(fields)
        rate = float(rate)
        if not (np.isfinite(rate) and rate > 0):
            raise EngineError(f"rate (the scene's frames per second) must be positive, got "
                              f"{rate!r}")
        self.rate = rate
        self.frame = int(frame)
        n = len(fields)
        for name, (shape, dtype) in _COLUMNS.items():
            setattr(self, name, np.zeros((n,) + shape, dtype=dtype))
        for i, fd in enumerate(fields):
            if not isinstance(fd, ForceField):
                raise EngineError(f"fields must be ForceField objects, got {fd!r}")
            self._set_row(i, fd)

    def __len__(self):
        return len(self.kind)

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
        if not (np.all(np.isfinite(pos)) and np.isfinite(length) and length > 0):
            raise EngineError(f"field position {fd.position!r} and axis {fd.axis!r} must be "
                              "finite with a non-zero axis (a field object scaled to zero "
                              "along Z has no direction)")
        self.position[i] = pos
        self.axis[i] = axis / length
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


def _fall(x, use_min, lo, use_max, hi, power):
    """Blender's falloff law on (F, N) distances with per-field (F, 1) settings."""
    base = np.where(use_min, lo, 0.0)
    # 1 + x - base < 1 only where x < base, which the minimum branch replaces below.
    val = np.power(np.maximum(1.0 + x - base, 1e-9), -power)
    val = np.where(use_min & (x < lo), 1.0, val)
    return np.where(use_max & (x > hi), 0.0, val)


def _cross(a, b):
    return np.stack((a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1],
                     a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2],
                     a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]), axis=-1)


def _unit(a):
    n = np.linalg.norm(a, axis=-1, keepdims=True)
    return np.where(n > 0, a / np.where(n > 0, n, 1.0), 0.0)


def _dot(a, b):
    return np.einsum("...i,...i->...", a, b)


def field_forces(table, positions, velocities):
    """Forces (N, 3) of all fields of ``table`` on N bodies at centre-of-mass positions
    (N, 3) with linear velocities (N, 3): the sum over fields of Blender's effector force
    (see the module notes). Applied at the centre of mass, so there is no torque."""
    p = np.asarray(positions, dtype=np.float64).reshape(-1, 3)
    v = np.asarray(velocities, dtype=np.float64).reshape(-1, 3)
    if len(table) == 0 or len(p) == 0:
        return np.zeros((len(p), 3))
    t = table
    c = {name: getattr(t, name)[:, None] for name in _COLUMNS if name not in ("position",
                                                                               "axis")}
    kind, shape = c["kind"], c["shape"]
    o = t.position[:, None, :]                      # (F, 1, 3)
    n = np.broadcast_to(t.axis[:, None, :], (len(t), len(p), 3))
    r2 = p[None] - o                                # (F, N, 3) from the field origin
    h = _dot(r2, n)                                 # height above the XY plane
    along = h[..., None] * n
    # Effector point: origin, foot on the Z line, or foot on the XY plane.
    on_line = (shape == FieldShape.LINE) | ((kind == FieldKind.VORTEX)
                                            & (shape == FieldShape.PLANE))
    on_plane = (shape == FieldShape.PLANE) & ~on_line
    r = np.where(on_line[..., None], r2 - along, np.where(on_plane[..., None], along, r2))
    d = np.linalg.norm(r, axis=-1)
    harm = (kind == FieldKind.HARMONIC) & (c["rest_length"] != 0)
    scale = np.where(d > 0, (d - c["rest_length"]) / np.where(d > 0, d, 1.0), 0.0)
    r = np.where(harm[..., None], r * scale[..., None], r)

    f = _falloff(c, r2, h, n, d)
    s, k, sf = c["strength"], t.rate, c["strength"] * f
    core = np.zeros(r.shape)

    def put(mask, value):
        nonlocal core
        core = np.where(mask[..., None], value, core)

    vb = np.broadcast_to(v[None], r.shape)
    put(kind == FieldKind.WIND, sf[..., None] * n)
    far = d > 1.1920929e-07                         # Blender: no force closer than FLT_EPSILON
    grav = np.where(c["gravity_falloff"], np.where(far, 1.0 / np.where(far, d, 1.0) ** 2, 0.0),
                    1.0)
    put(kind == FieldKind.FORCE, (sf * grav)[..., None] * _unit(r))
    spin = _cross(n, r2) * sf[..., None]
    put((kind == FieldKind.VORTEX) & (shape == FieldShape.POINT),
        (sf * d)[..., None] * _unit(_cross(n, r)))
    put((kind == FieldKind.VORTEX) & (shape != FieldShape.POINT),
        spin + sf[..., None] * _cross(n, spin) - k * vb)
    around = (shape == FieldShape.POINT) | (shape == FieldShape.LINE)
    u = _unit(np.where(around[..., None], _cross(n, r), n)) * sf[..., None]
    put(kind == FieldKind.MAGNET, k * _cross(vb, u))
    put(kind == FieldKind.HARMONIC, -sf[..., None] * r
        - (c["damping"] * 2.0 * np.sqrt(np.abs(s)) * k)[..., None] * vb)
    if (kind == FieldKind.TURBULENCE).any():       # the noise is the costly part
        put(kind == FieldKind.TURBULENCE, sf[..., None] * _turbulence(c, r2, n, p))
    speed = np.linalg.norm(v, axis=1)[None] * k     # (1, N) in Blender's units
    drag = f * speed * (np.minimum(s, 2.0) * speed + np.minimum(c["damping"], 2.0))
    put(kind == FieldKind.DRAG, -drag[..., None] * _unit(vb))
    # Charge and Lennard-Jones keep core = 0 (see the module notes).
    total = core / k
    flows = (kind != FieldKind.HARMONIC) & (kind != FieldKind.DRAG)
    total = total - np.where(flows, c["flow"] * f, 0.0)[..., None] * vb
    total = np.where((f > 0)[..., None], total, 0.0)
    return total.sum(axis=0)


def _falloff(c, r2, h, n, d):
    """(F, N) falloff: weight times the shape falloff, zero on the excluded Z side."""
    dist = _fall(d, c["use_min"], c["min_distance"], c["use_max"], c["max_distance"],
                 c["power"])
    axial = _fall(np.abs(h), c["use_min"], c["min_distance"], c["use_max"],
                  c["max_distance"], c["power"])
    radial = np.linalg.norm(r2 - h[..., None] * n, axis=-1)
    r2n = np.linalg.norm(r2, axis=-1)
    cosang = np.clip(h / np.where(r2n > 0, r2n, 1.0), -1.0, 1.0)
    angle = np.degrees(np.arccos(np.where(r2n > 0, cosang, 1.0)))
    rad_args = (c["use_radial_min"], c["radial_min"], c["use_radial_max"], c["radial_max"],
                c["radial_power"])
    tube = axial * _fall(radial, *rad_args)
    cone = axial * _fall(angle, *rad_args)
    fo = c["falloff"]
    shape_f = np.where(fo == Falloff.TUBE, tube, np.where(fo == Falloff.CONE, cone, dist))
    zd = c["z_direction"]
    cut = ((zd == ZDirection.POSITIVE) & (h < 0)) | ((zd == ZDirection.NEGATIVE) & (h > 0))
    return np.where(cut, 0.0, c["weight"] * shape_f)


# -- turbulence -----------------------------------------------------------------------------
_PERM = np.random.default_rng(0x48554C4C).permutation(256)
_PERM = np.concatenate((_PERM, _PERM))
_GRAD = np.array([[1, 1, 0], [-1, 1, 0], [1, -1, 0], [-1, -1, 0], [1, 0, 1], [-1, 0, 1],
                  [1, 0, -1], [-1, 0, -1], [0, 1, 1], [0, -1, 1], [0, 1, -1], [0, -1, -1]],
                 dtype=np.float64)


def gradient_noise(x):
    """Improved-Perlin-style gradient noise in [-1, 1] at points x (..., 3): zero on the
    integer lattice, smooth (C2 fade) in between. Our own fixed permutation table."""
    x = np.asarray(x, dtype=np.float64)
    i0 = np.floor(x)
    fr = x - i0
    i0 = i0.astype(np.int64) & 255
    fade = fr * fr * fr * (fr * (fr * 6.0 - 15.0) + 10.0)
    out = 0.0
    for corner in range(8):
        off = np.array([(corner >> a) & 1 for a in range(3)])
        ix, iy, iz = (i0[..., a] + off[a] for a in range(3))
        g = _GRAD[_PERM[_PERM[_PERM[ix] + iy] + iz] % 12]
        dot = _dot(g, fr - off)
        w = np.prod(np.where(off == 1, fade, 1.0 - fade), axis=-1)
        out = out + w * dot
    return np.clip(out, -1.0, 1.0)


def _turbulence(c, r2, n, p):
    """(F, N, 3) turbulence direction in [-1, 1]^3: two octaves of gradient noise at the
    field size (Blender's turbulence depth 2), sampled at the body's offset from the field
    (plus the axis, as Blender does) or at its world position (global coordinates)."""
    q = np.where(c["global_coords"][..., None], np.broadcast_to(p[None], r2.shape), r2 + n)
    size = c["size"][..., None]
    q = q / np.where(size != 0, size, 1.0)
    out = []
    for perm in ((0, 1, 2), (1, 2, 0), (2, 0, 1)):
        pts = q[..., perm]
        acc, amp, scale = 0.0, 1.0, 1.0
        for _ in range(3):                          # octaves 0..depth
            acc = acc + amp * (0.5 + 0.5 * gradient_noise(pts * scale))
            amp, scale = amp * 0.5, scale * 2.0
        out.append(-1.0 + 2.0 * acc * (4.0 / 7.0))
    return np.stack(out, axis=-1)
