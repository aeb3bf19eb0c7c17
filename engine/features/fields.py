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

from ..core import detmath
from ..core.errors import EngineError


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
        self._groups = None
        for name, (shape, dtype) in _COLUMNS.items():
            setattr(self, name, np.zeros((n,) + shape, dtype=dtype))
        for i, fd in enumerate(fields):
            if not isinstance(fd, ForceField):
                raise EngineError(f"fields must be ForceField objects, got {fd!r}")
            self._set_row(i, fd)

    def __len__(self):
        return len(self.kind)

    def _derived(self):
        """Row groups field_forces needs (built once; columns are not to change after)."""
        if getattr(self, "_groups", None) is None:
            kind, shape = self.kind, self.shape
            line = (shape == FieldShape.LINE) | ((kind == FieldKind.VORTEX)
                                                 & (shape == FieldShape.PLANE))
            plane = (shape == FieldShape.PLANE) & ~line
            self._groups = {
                "line": np.flatnonzero(line), "plane": np.flatnonzero(plane),
                "rest": np.flatnonzero((kind == FieldKind.HARMONIC) & (self.rest_length != 0)),
                # (law, rows, whether the flow term applies): no flow for Harmonic and Drag.
                "kinds": [(_CORE[FieldKind(u)], np.flatnonzero(kind == u),
                           u not in (FieldKind.HARMONIC, FieldKind.DRAG))
                          for u in np.unique(kind)],
                "zcut": bool(np.any(self.z_direction != ZDirection.BOTH)),
                # No distance law anywhere (the default): the falloff is the weight alone.
                "flat": not (np.any(self.power) or np.any(self.radial_power)
                             or np.any(self.use_min) or np.any(self.use_max)
                             or np.any(self.use_radial_min) or np.any(self.use_radial_max)),
                "falloffs": [(Falloff(u), np.flatnonzero(self.falloff == u))
                             for u in np.unique(self.falloff)],
            }
        return self._groups

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


def _fall(x, use_min, lo, use_max, hi, power):
    """Blender's falloff law on (F, N) distances with per-field (F, 1) settings."""
    if not (use_min.any() or use_max.any() or power.any()):
        return np.ones(x.shape)                     # the default: no falloff
    base = np.where(use_min, lo, 0.0)
    # 1 + x - base < 1 only where x < base, which the minimum branch replaces below.
    val = detmath.power(np.maximum(1.0 + x - base, 1e-9), -power)
    val = np.where(use_min & (x < lo), 1.0, val)
    return np.where(use_max & (x > hi), 0.0, val)


def _cross(a, b):
    return np.stack((a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1],
                     a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2],
                     a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]), axis=-1)


def _unit(a):
    n = np.linalg.norm(a, axis=-1, keepdims=True)
    return np.where(n > 0, a / np.where(n > 0, n, 1.0), 0.0)


def field_forces(table, positions, velocities):
    """Forces (N, 3) of all fields of ``table`` on N bodies at centre-of-mass positions
    (N, 3) with linear velocities (N, 3): the sum over fields of Blender's effector force
    (see the module notes). Applied at the centre of mass, so there is no torque.

    Batched over fields x bodies; the only loop is over the field kinds present (each kind's
    rows at once), since each kind has its own law."""
    p = np.asarray(positions, dtype=np.float64).reshape(-1, 3)
    v = np.asarray(velocities, dtype=np.float64).reshape(-1, 3)
    if len(table) == 0 or len(p) == 0:
        return np.zeros((len(p), 3))
    t = table
    g = t._derived()
    n = t.axis[:, None, :]                          # (F, 1, 3)
    r2 = p[None] - t.position[:, None, :]           # (F, N, 3) from the field origin
    h = np.sum(r2 * n, axis=-1)                     # height above the field's XY plane
    # Effector point: origin, foot on the Z line, or foot on the XY plane; r = p - point.
    r = r2.copy()
    if len(g["line"]):
        r[g["line"]] -= h[g["line"], :, None] * n[g["line"]]
    if len(g["plane"]):
        r[g["plane"]] = h[g["plane"], :, None] * n[g["plane"]]
    d = np.sqrt(np.sum(r * r, axis=-1))
    f = _falloff(t, g, r2, h, n, d)
    if len(g["rest"]):                              # Harmonic rest length
        rows = g["rest"]
        dr = d[rows]
        scale = np.where(dr > 0, (dr - t.rest_length[rows, None]) / np.where(dr > 0, dr, 1.0),
                         0.0)
        r[rows] *= scale[..., None]
    k = t.rate
    total = np.zeros(p.shape)
    for law, rows, flows in g["kinds"]:
        fr = f[rows]
        sf = t.strength[rows, None] * fr            # (R, N)
        force = law(t, rows, n[rows], r[rows], r2[rows], d[rows], sf, fr, p, v, k) / k
        if flows:
            force -= (t.flow[rows, None] * fr)[..., None] * v[None]
        total += np.sum(np.where((fr > 0)[..., None], force, 0.0), axis=0)
    return total


# Core forces per kind, before the division by the rate (Blender's do_physical_effector):
# (table, rows, n (R,1,3), r, r2 (R,N,3), d, sf = strength * falloff, f (R,N), p, v, k).
def _wind(t, rows, n, r, r2, d, sf, f, p, v, k):
    return sf[..., None] * n


def _force(t, rows, n, r, r2, d, sf, f, p, v, k):
    far = d > 1.1920929e-07                         # Blender: no force closer than FLT_EPSILON
    grav = np.where(t.gravity_falloff[rows, None],
                    np.where(far, 1.0 / np.where(far, d, 1.0) ** 2, 0.0), 1.0)
    return (sf * grav)[..., None] * _unit(r)


def _vortex(t, rows, n, r, r2, d, sf, f, p, v, k):
    point = (t.shape[rows] == FieldShape.POINT)[:, None, None]
    old = (sf * d)[..., None] * _unit(_cross(n, r))          # Point shape: Blender's old vortex
    spin = _cross(n, r2) * sf[..., None]
    new = spin + sf[..., None] * _cross(n, spin) - k * v[None]
    return np.where(point, old, new)


def _magnet(t, rows, n, r, r2, d, sf, f, p, v, k):
    sh = t.shape[rows]
    around = ((sh == FieldShape.POINT) | (sh == FieldShape.LINE))[:, None, None]
    u = _unit(np.where(around, _cross(n, r), n)) * sf[..., None]
    return k * _cross(np.broadcast_to(v[None], u.shape), u)


def _harmonic(t, rows, n, r, r2, d, sf, f, p, v, k):
    c = 2.0 * t.damping[rows] * np.sqrt(np.abs(t.strength[rows])) * k
    return -sf[..., None] * r - c[:, None, None] * v[None]


def _zero(t, rows, n, r, r2, d, sf, f, p, v, k):
    return np.zeros(r.shape)         # Charge, Lennard-Jones: see the module notes


def _turbulent(t, rows, n, r, r2, d, sf, f, p, v, k):
    return sf[..., None] * _turbulence(t, rows, r2, n, p)


def _drag(t, rows, n, r, r2, d, sf, f, p, v, k):
    speed = np.sqrt(np.sum(v * v, axis=1))[None] * k          # (1, N) in Blender's units
    s = np.minimum(t.strength[rows], 2.0)[:, None]
    c = np.minimum(t.damping[rows], 2.0)[:, None]
    return -(f * speed * (s * speed + c))[..., None] * _unit(v)[None]


_CORE = {FieldKind.WIND: _wind, FieldKind.FORCE: _force, FieldKind.VORTEX: _vortex,
         FieldKind.MAGNET: _magnet, FieldKind.HARMONIC: _harmonic, FieldKind.CHARGE: _zero,
         FieldKind.LENNARDJ: _zero, FieldKind.TURBULENCE: _turbulent, FieldKind.DRAG: _drag}


def _falloff(t, g, r2, h, n, d):
    """(F, N) falloff: weight times the shape falloff, zero on the excluded Z side."""
    out = np.ones(d.shape)
    for fo, rows in ([] if g["flat"] else g["falloffs"]):
        lim = (t.use_min[rows, None], t.min_distance[rows, None], t.use_max[rows, None],
               t.max_distance[rows, None], t.power[rows, None])
        if fo == Falloff.SPHERE:
            out[rows] = _fall(d[rows], *lim)
            continue
        hr, r2r = h[rows], r2[rows]
        rad = (t.use_radial_min[rows, None], t.radial_min[rows, None],
               t.use_radial_max[rows, None], t.radial_max[rows, None],
               t.radial_power[rows, None])
        if fo == Falloff.TUBE:
            x = np.sqrt(np.sum((r2r - hr[..., None] * n[rows]) ** 2, axis=-1))
        else:                                       # Cone: the angle from the axis, degrees
            r2n = np.sqrt(np.sum(r2r * r2r, axis=-1))
            cosang = np.clip(hr / np.where(r2n > 0, r2n, 1.0), -1.0, 1.0)
            x = np.degrees(detmath.arccos(np.where(r2n > 0, cosang, 1.0)))
        out[rows] = _fall(np.abs(hr), *lim) * _fall(x, *rad)
    if not g["zcut"]:
        return t.weight[:, None] * out
    zd = t.z_direction[:, None]
    cut = ((zd == ZDirection.POSITIVE) & (h < 0)) | ((zd == ZDirection.NEGATIVE) & (h > 0))
    return np.where(cut, 0.0, t.weight[:, None] * out)


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
        dot = np.sum(g * (fr - off), axis=-1)
        w = np.prod(np.where(off == 1, fade, 1.0 - fade), axis=-1)
        out = out + w * dot
    return np.clip(out, -1.0, 1.0)


def _turbulence(t, rows, r2, n, p):
    """(F, N, 3) turbulence direction in [-1, 1]^3: two octaves of gradient noise at the
    field size (Blender's turbulence depth 2), sampled at the body's offset from the field
    (plus the axis, as Blender does) or at its world position (global coordinates)."""
    q = np.where(t.global_coords[rows, None, None], np.broadcast_to(p[None], r2.shape), r2 + n)
    size = t.size[rows, None, None]
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
