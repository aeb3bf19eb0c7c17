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

from ..core import detmath, quat
from ..core.jit import kernel
from ..core.vec import cross


def skew(a):
    """Cross-product matrices (K, 3, 3) of vectors a (K, 3): skew(a) @ b == cross(a, b)."""
    x, y, z = a[:, 0], a[:, 1], a[:, 2]
    m = np.zeros((len(a), 3, 3))
    m[:, 0, 1], m[:, 0, 2] = -z, y
    m[:, 1, 0], m[:, 1, 2] = z, -x
    m[:, 2, 0], m[:, 2, 1] = -y, x
    return m


# Cyclic index shifts: (a x b)_i = a_{i+1} b_{i+2} - a_{i+2} b_{i+1}.
_P1 = np.array([1, 2, 0])
_P2 = np.array([2, 0, 1])


def solve3(m, f):
    """x (K, 3) with m x = f for (K, 3, 3) matrices m, by the adjugate: with rows r0, r1, r2
    the inverse's columns are r1 x r2, r2 x r0, r0 x r1 over the determinant (all three
    from one cross of row-shifted copies). np.linalg.solve on a handful of 3 x 3 systems is
    all call overhead; the Newton matrices it is used for are I + O(h |w|) I, far from
    singular."""
    cof = cross(m[:, _P1], m[:, _P2])  # (K, 3, 3): row i = r_{i+1} x r_{i+2}
    det = np.einsum("ni,ni->n", m[:, 0], cof[:, 0])
    # A singular Newton matrix (not seen, but not excluded for a needle-thin inertia at a
    # large h |w|) gives no step rather than inf/NaN: gyroscopic() then keeps w1 as it is.
    ok = np.abs(det) > 0.0
    x = np.einsum("nji,nj->ni", cof, f) / np.where(ok, det, 1.0)[:, None]
    return np.where(ok[:, None] & np.isfinite(x), x, 0.0)


def world_inverse_inertia(rot, inv_inertia_body):
    """R I^-1 R^T for rotation matrices (N, 3, 3) and body-frame inverse inertia (N, 3, 3)."""
    return rot @ inv_inertia_body @ np.swapaxes(rot, -1, -2)


# Most midpoint sub-steps a fast spinner's gyroscopic update is split into (see gyroscopic):
# exact up to h |w| = 4096 (1.5e6 rad/s at 360 Hz); only a body already blown up elsewhere
# goes past it (a cap of 64 changed a fuzz regression scene on numpy 2).
MAX_GYRO_SPLIT = 4096


def gyroscopic(q, w, inertia_body, h, iterations=2):
    """New world angular velocities (K, 3) after the free gyroscopic motion over h.

    q (K, 4) orientations, w (K, 3) world angular velocities, inertia_body (K, 3, 3) the inertia
    tensor about the centre of mass in the body frame. Implicit midpoint solved by Newton.

    Fast spinners. Newton from w0 converges for h |w| up to about 1; beyond (a thin box hit
    into 10^4 rad/s, h = 1/360 s) two steps left a residual that *added* energy every substep:
    x19 in 1 s for a 4 cm stick at 10^4 rad/s (issue 11; tests/test_robust_step.py). Such
    bodies take ceil(h |w|) midpoint steps of h / n instead (a loop over that count, for those
    rows only), and, whatever Newton did, a body never leaves with more rotational energy than
    it came with: w1 is scaled down to the exact solution's energy if it exceeds it.
    """
    rot = quat.to_matrix(q)
    w0 = np.einsum("kji,kj->ki", rot, w)  # body frame: R^T w
    hw = h * np.sqrt(np.einsum("ki,ki->k", w0, w0))
    w1 = _midpoint(w0, inertia_body, h, iterations)
    fast = np.flatnonzero(hw > 1.0)
    if len(fast):
        # At most MAX_GYRO_SPLIT sub-steps: a body spun absurdly fast (by a bug elsewhere)
        # must not stall the step in this loop; past the cap the energy clamp below bounds it.
        n = np.minimum(np.ceil(hw[fast]), MAX_GYRO_SPLIT)
        hf = h / n
        wf = w0[fast]
        for j in range(int(n.max())):
            rows = np.flatnonzero(j < n)
            wf[rows] = _midpoint(wf[rows], inertia_body[fast[rows]], hf[rows, None], iterations)
        w1[fast] = wf
    # Never gain energy (the exact midpoint conserves it; see above).
    e0 = np.einsum("ki,kij,kj->k", w0, inertia_body, w0)
    e1 = np.einsum("ki,kij,kj->k", w1, inertia_body, w1)
    gain = e1 > e0
    if gain.any():
        w1[gain] *= np.sqrt(e0[gain] / e1[gain])[:, None]
    return np.einsum("kij,kj->ki", rot, w1)


def _midpoint(w0, inertia_body, h, iterations):
    """Body-frame w1 of the implicit midpoint step I (w1 - w0) + h wm x I wm = 0 (Newton from
    w0; h a scalar or (K, 1))."""
    i_w0 = np.einsum("kij,kj->ki", inertia_body, w0)
    w1 = w0
    for _ in range(iterations):
        wm = 0.5 * (w0 + w1)
        i_wm = np.einsum("kij,kj->ki", inertia_body, wm)
        f = np.einsum("kij,kj->ki", inertia_body, w1) - i_w0 + h * cross(wm, i_wm)
        # Jacobian I + h/2 (skew(wm) I - skew(I wm)) (einsum, not matmul: see the solver).
        sk_i = np.einsum("nij,njl->nil", skew(wm), inertia_body)
        hh = 0.5 * np.reshape(h, (-1, 1, 1)) if np.ndim(h) else 0.5 * h
        jac = inertia_body + hh * (sk_i - skew(i_wm))
        w1 = w1 - solve3(jac, f)
    return w1


def damping_factor(damping, h):
    """Bullet's velocity damping over h: v *= (1 - d)^h, so d means the same as in Blender."""
    return detmath.power(np.clip(1.0 - damping, 0.0, 1.0), h)


def integrate_velocities(vel, active, gravity, lin_factor, ang_factor, h,
                         gyro_index=None, q=None, inertia_body=None):
    """In place: vel (N, 6) = [linear, angular] of the centres of mass.

    active: index array of the bodies to integrate (awake dynamic ones). lin_factor/ang_factor:
    per-body damping factors for this substep (see damping_factor), aligned with ``active``.
    gyro_index: subset of ``active`` with anisotropic inertia, with their q and inertia_body.
    """
    if len(active):
        _kick(vel, active, np.asarray(gravity, dtype=float), lin_factor, ang_factor, h)
    if gyro_index is not None and len(gyro_index):
        vel[gyro_index, 3:] = gyroscopic(q, vel[gyro_index, 3:], inertia_body, h)


@kernel
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


@kernel
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
