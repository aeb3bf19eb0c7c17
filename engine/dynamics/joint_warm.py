"""Warm starting joints without carrying impacts over (engine.dynamics.joint_solver,
engine.dynamics.joint_points).

Both joint paths re-apply each joint's last-substep impulse before solving (warm starting), as
Box2D v3 and Jolt do; kept_fraction decides how much of it to keep (the one rule, called by the
warm-start kernels of both: engine.dynamics.joint_row_kernels.rows_warm_start and
engine.dynamics.joint_point_kernels.point_warm_start).
"""

from ..core.jit import kernel


@kernel
def kept_fraction(q, w0, w1):
    """The part (0..1) of one joint's carried impulse lam to keep.

    A warm start re-applies last substep's impulse lam. Where that impulse held a steady load
    (a hanging chain, a pendulum's pull) it cancels the drift the forces made since, and the
    joint's rows barely move afterwards; where it was an impact (it stopped a relative
    velocity that is gone now) it starts the joint moving again: on a 200 kg box of inertia
    7e-5 kg m^2 fixed to a tonne that put back the energy the impact took out, every
    substep, up to 1e14 m/s (fuzz seed 23). q = lam K lam, w0 = lam . J v0, w1 = lam . J v1
    with v0 and v1 the joint's body velocities before and after all warm starts. A joint
    whose rows move along lam, after all of them, at more than half of what its own impulse
    gives (w1 > q / 2) keeps the part s that adds no energy: s w0 + s^2 q / 2 <= 0.

    For a joint alone the two tests agree (v1 = v0 + dv, so w1 = w0 + q) and s is
    continuous (1 at the threshold). Judged after all warm starts, a link in the middle of a
    hanging net (both ends sag alike, w0 = 0) keeps its load. A pendulum swinging from the
    horizontal keeps 65-100 % (its impulse also carries the last substep's position
    correction); the exact direct solve of small systems does not depend on the warm start,
    and the Gauss-Seidel grid of bench/bench_joints_grid.py stretches less with it (worst
    joint gap 28.1 -> 20.8 mm)."""
    if w1 > 0.5 * q and q > 0.0:
        return min(max(-2.0 * w0 / q, 0.0), 1.0)
    return 1.0
