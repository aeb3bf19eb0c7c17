"""Blender's force-field laws on one body, compiled: the kernels behind
engine.features.fields (which holds the maths' description, the FieldTable and its packed
columns) and the fields' kick inside the compiled substeps (engine.dynamics.substeps).

A field row is FieldTable.pack()'s: ints (kind, shape, falloff, z_direction, use_min,
use_max, use_radial_min, use_radial_max, gravity_falloff, global_coords) and floats (position
0-2, axis 3-5, strength, flow, damping, power, min_distance, max_distance, radial_power,
radial_min, radial_max, rest_length, size, weight). The numbers are engine.features.fields'
enums (FieldKind, FieldShape, Falloff, ZDirection), as plain ints: dynamics may not import
features (tests/test_layout.py).
"""
import math

import numpy as np

from ..core.jit import kernel

(_KIND, _SHAPE, _FALLOFF, _ZDIR, _USE_MIN, _USE_MAX, _USE_RMIN, _USE_RMAX, _GRAV,
 _GLOBAL) = range(10)
(_STRENGTH, _FLOW, _DAMPING, _POWER, _MIN, _MAX, _RPOWER, _RMIN, _RMAX, _REST, _SIZE,
 _WEIGHT) = range(6, 18)
# FieldKind, FieldShape, Falloff, ZDirection (engine.features.fields) values.
_FORCE, _VORTEX, _MAGNET, _WIND, _HARMONIC, _TURB, _DRAG = 1, 2, 3, 4, 7, 11, 12
_POINT, _LINE, _PLANE = 0, 1, 2
_SPHERE, _TUBE = 0, 1
_POSITIVE, _NEGATIVE = 1, 2
INT_COLUMNS, FLOAT_COLUMNS = 10, 18
_FLT_EPSILON = 1.1920929e-07       # Blender: no Force closer than this


@kernel
def forces(ints, floats, rate, p, v, out):
    """out (N, 3): the fields' forces on bodies at p (N, 3) with velocities v (N, 3)."""
    for b in range(p.shape[0]):
        body_force(ints, floats, rate, p[b, 0], p[b, 1], p[b, 2], v[b, 0], v[b, 1], v[b, 2],
                   out[b])


@kernel
def field_kick(ints, floats, rate, index, x, vel, inv_mass, sleep_time, h):
    """In place: the velocity change h F / m of the fields' forces on the bodies index (at
    their centres of mass x, velocities vel), and a zero sleep timer for a body pushed (one
    with a non-zero force does not fall asleep)."""
    f = np.empty(3)
    for j in range(index.shape[0]):
        b = index[j]
        body_force(ints, floats, rate, x[b, 0], x[b, 1], x[b, 2], vel[b, 0], vel[b, 1],
                   vel[b, 2], f)
        s = h * inv_mass[b]
        for k in range(3):
            vel[b, k] += s * f[k]
        if f[0] != 0.0 or f[1] != 0.0 or f[2] != 0.0:
            sleep_time[b] = 0.0


@kernel
def body_force(ints, floats, k, p0, p1, p2, v0, v1, v2, out):
    """out (3,) = the sum of the fields' forces on one body at p with velocity v (k: the
    rate, Blender's vel_to_sec), field by field in the table's order."""
    out[0] = out[1] = out[2] = 0.0
    c = np.empty(3)
    for i in range(ints.shape[0]):
        fi, ff = ints[i], floats[i]
        n0, n1, n2 = ff[3], ff[4], ff[5]
        a0, a1, a2 = p0 - ff[0], p1 - ff[1], p2 - ff[2]      # r2: from the field origin
        h = a0 * n0 + a1 * n1 + a2 * n2                      # height above its XY plane
        kind, shape = fi[_KIND], fi[_SHAPE]
        # Effector point: origin, foot on the Z line, or foot on the XY plane; r = p - point.
        r0, r1, r2 = a0, a1, a2
        if shape == _LINE or (kind == _VORTEX and shape == _PLANE):
            r0, r1, r2 = a0 - h * n0, a1 - h * n1, a2 - h * n2
        elif shape == _PLANE:
            r0, r1, r2 = h * n0, h * n1, h * n2
        d = math.sqrt(r0 * r0 + r1 * r1 + r2 * r2)
        f = _falloff(fi, ff, a0, a1, a2, h, n0, n1, n2, d)
        if not f > 0.0:                          # a field with f <= 0 does nothing
            continue
        sf = ff[_STRENGTH] * f
        _core(fi, ff, kind, shape, k, n0, n1, n2, r0, r1, r2, a0, a1, a2, d, sf, f,
              v0, v1, v2, p0, p1, p2, c)
        for j in range(3):
            c[j] /= k
        if kind != _HARMONIC and kind != _DRAG:  # the flow term
            fl = ff[_FLOW] * f
            c[0] -= fl * v0
            c[1] -= fl * v1
            c[2] -= fl * v2
        for j in range(3):
            out[j] += c[j]


@kernel
def _core(fi, ff, kind, shape, k, n0, n1, n2, r0, r1, r2, a0, a1, a2, d, sf, f,
          v0, v1, v2, p0, p1, p2, c):
    """c (3,): one field's core force before the division by the rate (Blender's
    do_physical_effector); r the offset from the effector point, a (r2) from the origin."""
    c[0] = c[1] = c[2] = 0.0
    if kind == _WIND:
        c[0], c[1], c[2] = sf * n0, sf * n1, sf * n2
    elif kind == _FORCE:
        g = 1.0
        if fi[_GRAV]:
            g = 1.0 / d ** 2 if d > _FLT_EPSILON else 0.0
        _unit(r0, r1, r2, sf * g, c)
    elif kind == _VORTEX:
        if shape == _POINT:                      # Blender's old vortex
            _unit(n1 * r2 - n2 * r1, n2 * r0 - n0 * r2, n0 * r1 - n1 * r0, sf * d, c)
        else:
            s0 = (n1 * a2 - n2 * a1) * sf
            s1 = (n2 * a0 - n0 * a2) * sf
            s2 = (n0 * a1 - n1 * a0) * sf
            c[0] = s0 + sf * (n1 * s2 - n2 * s1) - k * v0
            c[1] = s1 + sf * (n2 * s0 - n0 * s2) - k * v1
            c[2] = s2 + sf * (n0 * s1 - n1 * s0) - k * v2
    elif kind == _MAGNET:
        u = np.empty(3)
        if shape in (_POINT, _LINE):
            _unit(n1 * r2 - n2 * r1, n2 * r0 - n0 * r2, n0 * r1 - n1 * r0, 1.0, u)
        else:
            _unit(n0, n1, n2, 1.0, u)
        u0, u1, u2 = u[0] * sf, u[1] * sf, u[2] * sf
        c[0] = k * (v1 * u2 - v2 * u1)
        c[1] = k * (v2 * u0 - v0 * u2)
        c[2] = k * (v0 * u1 - v1 * u0)
    elif kind == _HARMONIC:
        if ff[_REST] != 0.0:                     # r scaled to d - rest length
            scale = (d - ff[_REST]) / d if d > 0.0 else 0.0
            r0, r1, r2 = r0 * scale, r1 * scale, r2 * scale
        cd = 2.0 * ff[_DAMPING] * math.sqrt(abs(ff[_STRENGTH])) * k
        c[0] = -sf * r0 - cd * v0
        c[1] = -sf * r1 - cd * v1
        c[2] = -sf * r2 - cd * v2
    elif kind == _TURB:
        _turbulence(fi, ff, a0, a1, a2, n0, n1, n2, p0, p1, p2, c)
        c[0] *= sf
        c[1] *= sf
        c[2] *= sf
    elif kind == _DRAG:
        speed = math.sqrt(v0 * v0 + v1 * v1 + v2 * v2) * k     # in Blender's units
        s = min(ff[_STRENGTH], 2.0)
        cq = min(ff[_DAMPING], 2.0)
        _unit(v0, v1, v2, -(f * speed * (s * speed + cq)), c)
    # Charge, Lennard-Jones: zero (see the module notes).


@kernel
def _unit(a0, a1, a2, scale, out):
    """out = scale * a / |a| (zero for a zero a)."""
    n = math.sqrt(a0 * a0 + a1 * a1 + a2 * a2)
    if n > 0.0:
        out[0], out[1], out[2] = a0 / n * scale, a1 / n * scale, a2 / n * scale
    else:
        out[0] = out[1] = out[2] = 0.0


@kernel
def _fall(x, use_min, lo, use_max, hi, power):
    """Blender's falloff law at distance x."""
    if use_max and x > hi:
        return 0.0
    if use_min and x < lo:
        return 1.0
    if power == 0.0:
        return 1.0
    base = lo if use_min else 0.0
    # 1 + x - base < 1 only where x < base, which the minimum branch answered above.
    return max(1.0 + x - base, 1e-9) ** -power


@kernel
def _falloff(fi, ff, a0, a1, a2, h, n0, n1, n2, d):
    """One field's falloff at offset a (r2) from its origin, height h and distance d from
    its effector point: weight times the shape falloff, zero on the excluded Z side."""
    zd = fi[_ZDIR]
    if (zd == _POSITIVE and h < 0.0) or (zd == _NEGATIVE and h > 0.0):
        return 0.0
    fo = fi[_FALLOFF]
    use_min, lo, use_max, hi, power = (fi[_USE_MIN], ff[_MIN], fi[_USE_MAX], ff[_MAX],
                                       ff[_POWER])
    if fo == _SPHERE:
        return ff[_WEIGHT] * _fall(d, use_min, lo, use_max, hi, power)
    if fo == _TUBE:
        t0, t1, t2 = a0 - h * n0, a1 - h * n1, a2 - h * n2
        x = math.sqrt(t0 * t0 + t1 * t1 + t2 * t2)
    else:                                        # Cone: the angle from the axis, degrees
        r2n = math.sqrt(a0 * a0 + a1 * a1 + a2 * a2)
        cosang = min(max(h / r2n, -1.0), 1.0) if r2n > 0.0 else 1.0
        x = math.acos(cosang) * (180.0 / math.pi)
    return ff[_WEIGHT] * (_fall(abs(h), use_min, lo, use_max, hi, power)
                          * _fall(x, fi[_USE_RMIN], ff[_RMIN], fi[_USE_RMAX], ff[_RMAX],
                                  ff[_RPOWER]))


# -- turbulence -----------------------------------------------------------------------------
_PERM = np.random.default_rng(0x48554C4C).permutation(256)
_PERM = np.concatenate((_PERM, _PERM)).astype(np.int64)
_GRAD = np.array([[1, 1, 0], [-1, 1, 0], [1, -1, 0], [-1, -1, 0], [1, 0, 1], [-1, 0, 1],
                  [1, 0, -1], [-1, 0, -1], [0, 1, 1], [0, -1, 1], [0, 1, -1], [0, -1, -1]],
                 dtype=np.float64)


@kernel
def noise_points(x, out):
    for i in range(x.shape[0]):
        out[i] = _noise(x[i, 0], x[i, 1], x[i, 2])


@kernel
def _noise(x0, x1, x2):
    """gradient_noise at one point."""
    f0, f1, f2 = math.floor(x0), math.floor(x1), math.floor(x2)
    fr0, fr1, fr2 = x0 - f0, x1 - f1, x2 - f2
    i0, i1, i2 = int(f0) & 255, int(f1) & 255, int(f2) & 255
    fa0 = fr0 * fr0 * fr0 * (fr0 * (fr0 * 6.0 - 15.0) + 10.0)
    fa1 = fr1 * fr1 * fr1 * (fr1 * (fr1 * 6.0 - 15.0) + 10.0)
    fa2 = fr2 * fr2 * fr2 * (fr2 * (fr2 * 6.0 - 15.0) + 10.0)
    out = 0.0
    for corner in range(8):
        o0, o1, o2 = corner & 1, (corner >> 1) & 1, (corner >> 2) & 1
        g = _GRAD[_PERM[_PERM[_PERM[i0 + o0] + i1 + o1] + i2 + o2] % 12]
        dot = g[0] * (fr0 - o0) + g[1] * (fr1 - o1) + g[2] * (fr2 - o2)
        w = ((fa0 if o0 else 1.0 - fa0) * (fa1 if o1 else 1.0 - fa1)
             * (fa2 if o2 else 1.0 - fa2))
        out = out + w * dot
    return min(max(out, -1.0), 1.0)


@kernel
def _turbulence(fi, ff, a0, a1, a2, n0, n1, n2, p0, p1, p2, out):
    """out (3,): the turbulence direction in [-1, 1]^3: two octaves of gradient noise at the
    field size (Blender's turbulence depth 2), sampled at the body's offset from the field
    (plus the axis, as Blender does) or at its world position (global coordinates)."""
    if fi[_GLOBAL]:
        q0, q1, q2 = p0, p1, p2
    else:
        q0, q1, q2 = a0 + n0, a1 + n1, a2 + n2
    size = ff[_SIZE]
    if size == 0.0:
        size = 1.0
    q0, q1, q2 = q0 / size, q1 / size, q2 / size
    for j in range(3):
        # Each component samples the point with its axes rotated: (0, 1, 2), (1, 2, 0), (2, 0, 1).
        if j == 0:
            s0, s1, s2 = q0, q1, q2
        elif j == 1:
            s0, s1, s2 = q1, q2, q0
        else:
            s0, s1, s2 = q2, q0, q1
        acc, amp, scale = 0.0, 1.0, 1.0
        for _ in range(3):                          # octaves 0..depth
            acc = acc + amp * (0.5 + 0.5 * _noise(s0 * scale, s1 * scale, s2 * scale))
            amp, scale = amp * 0.5, scale * 2.0
        out[j] = -1.0 + 2.0 * acc * (4.0 / 7.0)
