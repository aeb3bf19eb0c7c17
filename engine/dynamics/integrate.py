"""Time integration of body velocities and poses, batched over bodies.

Semi-implicit (symplectic) Euler: velocities first (gravity, damping, gyroscopic term), then
positions with the new velocities. Orientation uses the exact exponential map (quat.integrate),
so a body spinning at constant rate turns by exactly |w| h per substep.

Gyroscopic term: a free body obeys I w' = -w x I w in its own frame. Explicit treatment blows up
for thin bodies; backward Euler (Catto, GDC 2015: one Newton step in the body frame) is stable
but bleeds |L| by about (h |w|)^2 / 2 per substep, i.e. several percent over 10 s at 240 Hz. We
apply Catto's Newton step to the *implicit midpoint* form instead,

    I (w1 - w0) + h wm x (I wm) = 0,   wm = (w0 + w1) / 2,

which conserves |L| and kinetic energy exactly (the midpoint rule keeps quadratic invariants),
so the tennis-racket (Dzhanibekov) flip keeps flipping. Two Newton iterations bring the residual
to round-off for h |w| well above 1. Bodies with isotropic inertia (spheres, cubes) have
w x I w = 0 and are skipped by the caller.
"""
import math

import numpy as np

from ..core.jit import kernel
from ..core.quat import matrix_of, normalize_row, origin_row


def skew(a):
    """Cross-product matrices (K, 3, 3) of vectors a (K, 3): skew(a) @ b == cross(a, b)."""
    x, y, z = a[:, 0], a[:, 1], a[:, 2]
    m = np.zeros((len(a), 3, 3))
    m[:, 0, 1], m[:, 0, 2] = -z, y
    m[:, 1, 0], m[:, 1, 2] = z, -x
    m[:, 2, 0], m[:, 2, 1] = -y, x
    return m


# Most midpoint sub-steps a fast spinner's gyroscopic update is split into (see gyroscopic):
# exact up to h |w| = 4096 (1.5e6 rad/s at 360 Hz); only a body already blown up elsewhere
# goes past it (a cap of 64 changed a fuzz regression scene on numpy 2).
MAX_GYRO_SPLIT = 4096


def gyroscopic(q, w, inertia_body, h, iterations=2):
    """New world angular velocities (K, 3) after the free gyroscopic motion over h.

    q (K, 4) orientations, w (K, 3) world angular velocities, inertia_body (K, 3, 3) the inertia
    tensor about the centre of mass in the body frame. Implicit midpoint solved by Newton
    (the kernel gyro_kick; this batch form is for tests and tools).

    Fast spinners. Newton from w0 converges for h |w| up to about 1; beyond (a thin box hit
    into 10^4 rad/s, h = 1/360 s) two steps left a residual that *added* energy every substep:
    x19 in 1 s for a 4 cm stick at 10^4 rad/s (issue 11; tests/test_robust_step.py). Such
    bodies take ceil(h |w|) midpoint steps of h / n instead, at most MAX_GYRO_SPLIT, and,
    whatever Newton did, a body never leaves with more rotational energy than it came with:
    w1 is scaled down to the exact solution's energy if it exceeds it.
    """
    q = np.ascontiguousarray(q, dtype=np.float64)
    k = len(q)
    vel = np.zeros((k, 6))
    vel[:, 3:] = w
    gyro_kick(vel, np.arange(k), q, np.ascontiguousarray(inertia_body, dtype=np.float64),
              float(h), int(iterations))
    return vel[:, 3:]


@kernel
def gyro_kick(vel, index, q, inertia_body, h, iterations):
    """In place: the angular velocities vel[index, 3:] after the free gyroscopic motion over
    h (see gyroscopic); q (N, 4) the bodies' orientations, inertia_body (K, 3, 3) aligned
    with index. Returns the midpoint steps taken (at most MAX_GYRO_SPLIT a body)."""
    r = np.empty((3, 3))
    w0 = np.empty(3)
    w1 = np.empty(3)
    ws = np.empty(3)
    steps = 0
    for j in range(index.shape[0]):
        b = index[j]
        inertia = inertia_body[j]
        matrix_of(q[b], r)
        for i in range(3):      # body frame: R^T w
            w0[i] = r[0, i] * vel[b, 3] + r[1, i] * vel[b, 4] + r[2, i] * vel[b, 5]
        hw = h * math.sqrt(w0[0] * w0[0] + w0[1] * w0[1] + w0[2] * w0[2])
        n = 1
        if hw > 1.0:
            n = int(min(math.ceil(hw), MAX_GYRO_SPLIT))
        ws[:] = w0
        for _ in range(n):
            _midpoint(ws, inertia, h / n, iterations, w1)
            ws[:] = w1
        steps += n
        # Never gain energy (the exact midpoint conserves it; see gyroscopic).
        e0 = _energy(w0, inertia)
        e1 = _energy(ws, inertia)
        if e1 > e0:
            scale = math.sqrt(e0 / e1)
            for i in range(3):
                ws[i] *= scale
        for i in range(3):
            vel[b, 3 + i] = r[i, 0] * ws[0] + r[i, 1] * ws[1] + r[i, 2] * ws[2]
    return steps


@kernel
def _energy(w, inertia):
    e = 0.0
    for i in range(3):
        e += w[i] * (inertia[i, 0] * w[0] + inertia[i, 1] * w[1] + inertia[i, 2] * w[2])
    return e


@kernel
def _midpoint(w0, inertia, h, iterations, w1):
    """w1 (3,): the body-frame velocity after the implicit midpoint step
    I (w1 - w0) + h wm x I wm = 0, by Newton from w0. The Jacobian
    I + h/2 (skew(wm) I - skew(I wm)) is solved by its adjugate; a singular one (not seen,
    but not excluded for a needle-thin inertia at a large h |w|) gives no step."""
    jac = np.empty((3, 3))
    f = np.empty(3)
    wm = np.empty(3)
    iw0 = np.empty(3)
    iwm = np.empty(3)
    for i in range(3):
        iw0[i] = inertia[i, 0] * w0[0] + inertia[i, 1] * w0[1] + inertia[i, 2] * w0[2]
        w1[i] = w0[i]
    for _ in range(iterations):
        for i in range(3):
            wm[i] = 0.5 * (w0[i] + w1[i])
        for i in range(3):
            iwm[i] = inertia[i, 0] * wm[0] + inertia[i, 1] * wm[1] + inertia[i, 2] * wm[2]
        cx = wm[1] * iwm[2] - wm[2] * iwm[1]
        cy = wm[2] * iwm[0] - wm[0] * iwm[2]
        cz = wm[0] * iwm[1] - wm[1] * iwm[0]
        for i in range(3):
            f[i] = (inertia[i, 0] * w1[0] + inertia[i, 1] * w1[1] + inertia[i, 2] * w1[2]
                    - iw0[i])
        f[0] += h * cx
        f[1] += h * cy
        f[2] += h * cz
        hh = 0.5 * h
        for col in range(3):
            # skew(wm) I[:, col] - skew(I wm)[:, col]
            ic0, ic1, ic2 = inertia[0, col], inertia[1, col], inertia[2, col]
            s0 = wm[1] * ic2 - wm[2] * ic1
            s1 = wm[2] * ic0 - wm[0] * ic2
            s2 = wm[0] * ic1 - wm[1] * ic0
            e0 = 1.0 if col == 0 else 0.0         # e = the col-th unit vector
            e1 = 1.0 if col == 1 else 0.0
            e2 = 1.0 if col == 2 else 0.0
            t0 = iwm[1] * e2 - iwm[2] * e1
            t1 = iwm[2] * e0 - iwm[0] * e2
            t2 = iwm[0] * e1 - iwm[1] * e0
            jac[0, col] = ic0 + hh * (s0 - t0)
            jac[1, col] = ic1 + hh * (s1 - t1)
            jac[2, col] = ic2 + hh * (s2 - t2)
        # Adjugate solve: the inverse's columns are r1 x r2, r2 x r0, r0 x r1 over det.
        c00 = jac[1, 1] * jac[2, 2] - jac[1, 2] * jac[2, 1]
        c01 = jac[1, 2] * jac[2, 0] - jac[1, 0] * jac[2, 2]
        c02 = jac[1, 0] * jac[2, 1] - jac[1, 1] * jac[2, 0]
        c10 = jac[2, 1] * jac[0, 2] - jac[2, 2] * jac[0, 1]
        c11 = jac[2, 2] * jac[0, 0] - jac[2, 0] * jac[0, 2]
        c12 = jac[2, 0] * jac[0, 1] - jac[2, 1] * jac[0, 0]
        c20 = jac[0, 1] * jac[1, 2] - jac[0, 2] * jac[1, 1]
        c21 = jac[0, 2] * jac[1, 0] - jac[0, 0] * jac[1, 2]
        c22 = jac[0, 0] * jac[1, 1] - jac[0, 1] * jac[1, 0]
        det = jac[0, 0] * c00 + jac[0, 1] * c01 + jac[0, 2] * c02
        if not abs(det) > 0.0:
            continue
        x0 = (c00 * f[0] + c10 * f[1] + c20 * f[2]) / det
        x1 = (c01 * f[0] + c11 * f[1] + c21 * f[2]) / det
        x2 = (c02 * f[0] + c12 * f[1] + c22 * f[2]) / det
        if math.isfinite(x0) and math.isfinite(x1) and math.isfinite(x2):
            w1[0] -= x0
            w1[1] -= x1
            w1[2] -= x2


@kernel
def _damping_factors(lin, ang, act, h, lin_f, ang_f):
    for j in range(act.shape[0]):
        b = act[j]
        lin_f[j] = min(max(1.0 - lin[b], 0.0), 1.0) ** h
        ang_f[j] = min(max(1.0 - ang[b], 0.0), 1.0) ** h


def damping_factors(lin_damping, ang_damping, act, h):
    """Bullet's velocity damping over h for the bodies act: v *= (1 - d)^h, so d means the
    same as in Blender. Returns the linear and angular factors (K,), aligned with act."""
    lin_f, ang_f = np.empty(len(act)), np.empty(len(act))
    _damping_factors(lin_damping, ang_damping, act, float(h), lin_f, ang_f)
    return lin_f, ang_f


def integrate_velocities(vel, active, gravity, lin_factor, ang_factor, h,
                         gyro_index=None, q=None, inertia_body=None):
    """In place: vel (N, 6) = [linear, angular] of the centres of mass.

    active: index array of the bodies to integrate (awake dynamic ones). lin_factor/ang_factor:
    per-body damping factors for this substep (see damping_factors), aligned with ``active``.
    gyro_index: subset of ``active`` with anisotropic inertia, with their q and inertia_body.
    """
    if len(active):
        _kick(vel, active, np.asarray(gravity, dtype=float), lin_factor, ang_factor, h)
    if gyro_index is not None and len(gyro_index):
        gyro_kick(vel, gyro_index, q, inertia_body, float(h), 2)


@kernel(refcount=False)
def _kick(vel, active, gravity, lin_factor, ang_factor, h):
    """Gravity then damping over h for the bodies active (see integrate_velocities)."""
    for j in range(active.shape[0]):
        b = active[j]
        for k in range(3):
            vel[b, k] = (vel[b, k] + h * gravity[k]) * lin_factor[j]
            vel[b, 3 + k] *= ang_factor[j]


def integrate_positions(x, q, vel, index, h):
    """In place: advance centre-of-mass positions x (N, 3) and orientations q (N, 4) of ``index``
    by their velocities over h (orientations by the exact exponential map, renormalised)."""
    if len(index):
        _advance(x, q, vel, index, h)


@kernel(refcount=False)
def _advance(x, q, vel, index, h):
    """quat.integrate's arithmetic per body, with x += h v (see integrate_positions)."""
    for j in range(index.shape[0]):
        b = index[j]
        for k in range(3):
            x[b, k] += h * vel[b, k]
        w0, w1, w2 = vel[b, 3], vel[b, 4], vel[b, 5]
        angle = math.sqrt(w0 * w0 + w1 * w1 + w2 * w2) * h
        half = 0.5 * angle
        # sin(|w| h / 2) / |w| as sinc, finite for tiny rates (as quat.exp_map).
        if angle > 1e-12:
            scale = math.sin(half) / angle * h
        else:
            scale = (0.5 - angle * angle / 48.0) * h
        aw = math.cos(half)
        ax, ay, az = w0 * scale, w1 * scale, w2 * scale
        bw, bx, by, bz = q[b, 0], q[b, 1], q[b, 2], q[b, 3]
        # Hamilton product dq * q in quat.multiply's order, then renormalised.
        ow = aw * bw - ax * bx - ay * by - az * bz
        ox = aw * bx + ax * bw + ay * bz - az * by
        oy = aw * by - ax * bz + ay * bw + az * bx
        oz = aw * bz + ax * by - ay * bx + az * bw
        n = math.sqrt(ow * ow + ox * ox + oy * oy + oz * oz)
        q[b, 0] = ow / n
        q[b, 1] = ox / n
        q[b, 2] = oy / n
        q[b, 3] = oz / n


@kernel(refcount=False)
def settle_poses(index, x, q, vel, pos, com):
    """A pass's last word on the bodies index: orientations q renormalised (quat.normalize),
    origins pos = x - q com (quat.rotate's arithmetic). Returns how many of them have a
    non-finite centre, orientation or velocity (engine.world.guard repairs those)."""
    bad = 0
    for j in range(index.shape[0]):
        b = index[j]
        normalize_row(q, b, q)
        origin_row(x, q, com, b, pos)
        finite = True
        for k in range(3):
            finite = finite and math.isfinite(x[b, k])
        for k in range(4):
            finite = finite and math.isfinite(q[b, k])
        for k in range(6):
            finite = finite and math.isfinite(vel[b, k])
        if not finite:
            bad += 1
    return bad
