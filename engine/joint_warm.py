"""Warm starting joints without carrying impacts over (engine.joint_solver, engine.joint_points).

Both joint paths re-apply each joint's last-substep impulse before solving (warm starting), as
Box2D v3 and Jolt do; impact_scale decides how much of it to keep.
"""
import numpy as np


def impact_scale(p, dv, v0, v1):
    """Scales (m,) of the joints' carried impulses, or None when all stay whole.

    A warm start re-applies last substep's impulse lam. Where that impulse held a steady load
    (a hanging chain, a pendulum's pull) it cancels the drift the forces made since, and the
    joint's rows barely move afterwards; where it was an impact (it stopped a relative
    velocity that is gone now) it starts the joint moving again: on a 200 kg box of inertia
    7e-5 kg m^2 fixed to a tonne that put back the energy the impact took out, every
    substep, up to 1e14 m/s (fuzz seed 23). p = lam J and dv = lam M^-1 J^T (m, 12) per
    joint, v0 and v1 the joints' body velocities (m, 12) before and after all warm starts.
    A joint whose rows move along lam, after all of them, at more than half of what its own
    impulse gives (lam . J v1 > lam K lam / 2) keeps the part that adds no energy:
    s (lam . J v0) + s^2 (lam K lam) / 2 <= 0.

    For a joint alone the two tests agree (v1 = v0 + dv, so lam . J v1 = lam . J v0 +
    lam K lam) and s is continuous (1 at the threshold). Judged after all warm starts, a link
    in the middle of a hanging net (both ends sag alike, lam . J v0 = 0) keeps its load. A
    pendulum swinging from the horizontal keeps 65-100 % (its impulse also carries the last
    substep's position correction); the exact direct solve of small systems does not depend
    on the warm start, and the Gauss-Seidel grid of bench/bench_joints_grid.py stretches less
    with it (worst joint gap 28.1 -> 20.8 mm)."""
    q = np.einsum("mc,mc->m", p, dv)           # lam K lam
    w1 = np.einsum("mc,mc->m", p, v1)
    bad = (w1 > 0.5 * q) & (q > 0.0)
    if not bad.any():
        return None
    w0 = np.einsum("mc,mc->m", p, v0)
    return np.where(bad, np.clip(-2.0 * w0 / np.where(bad, q, 1.0), 0.0, 1.0), 1.0)
