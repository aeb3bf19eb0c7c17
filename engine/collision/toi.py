"""Batched time of impact (TOI) by conservative advancement, for continuous collision detection.

Each pair moves over the step with constant linear and angular velocities (positions linear in
time, orientations by the exact exponential map, as the integrator does). Conservative
advancement (Mirtich 1996; Zhang et al. 2006) repeats, for all active pairs at once:

  1. GJK at the current time gives the distance d and the unit normal n (A -> B);
  2. if d <= target + tolerance the pair is hit at this time;
  3. otherwise bound how fast the gap along n can close: every point of A is within r_a (its
     bounding radius about its pose origin) of the origin, so its velocity projected on n is at
     most v_a . n + |w_a| r_a; likewise for B. The plane normal to n therefore keeps separating
     the shapes with a gap of at least d - t * mu, mu = (v_a - v_b) . n + |w_a| r_a + |w_b| r_b,
     for the whole rest of the step (the velocities are constant);
  4. advance by (d - target) / mu: the distance cannot drop below target before then. If mu <= 0
     or the advance passes the end of the step, the pair does not hit in this step.

The linear term uses the signed projection (a receding pair has a negative term), which is exact
for the fixed plane and tighter than |v_rel . n|. The result is conservative: the returned t is
never later than the true first time the distance reaches target (up to GJK's tolerance).

Times are fractions of the step: t in [0, 1], 1 meaning no hit in the step.
"""
import numpy as np

from ..core import quat
from .gjk import DEFAULT_TOL, gjk

__all__ = ["HIT", "MAX_ITERATIONS", "OVERLAPPED", "SEPARATED", "TOIResult", "toi"]

# status values
SEPARATED = 0    # no hit in the step (t = 1)
HIT = 1          # distance reached target + tolerance at t
OVERLAPPED = 2   # already within target + tolerance at the start (t = 0)
MAX_ITERATIONS = 3  # iteration cap: t is a safe (early) time, the pair has not hit yet


class TOIResult:
    """Arrays of a batched toi() call; see toi() for the fields."""

    t: np.ndarray

    def __init__(self, **fields):
        self.__dict__.update(fields)

    def __repr__(self):
        return f"TOIResult(M={len(self.t)}, hits={int(np.sum(self.t < 1))})"


def _poses_at(pos, q, lin, ang, time):
    """Positions and rotation matrices at times ``time`` (k,) seconds after the start."""
    p = pos + lin * time[:, None]
    qt = quat.normalize(quat.multiply(quat.exp_map(ang, time[:, None]), q))
    return p, quat.to_matrix(qt)


def toi(points_a, radius_a, pos_a, quat_a, lin_a, ang_a,
        points_b, radius_b, pos_b, quat_b, lin_b, ang_b,
        dt, target=0.0, tolerance=None, bound_radius_a=None, bound_radius_b=None,
        max_iterations=32, gjk_tol=DEFAULT_TOL):
    """Time of impact of M moving pairs of swollen convex cores over a step of dt seconds.

    Inputs: local core points (M, V, 3) and radii (M,) as for gjk(); start positions (M, 3),
    unit quaternions (w, x, y, z) (M, 4), world linear and angular velocities (M, 3) of each
    body (angular velocity about the pose origin); dt the step length (s); target the
    separation to stop at (scalar or (M,), e.g. a small linear slop so that the solver gets a
    contact before the shapes touch); tolerance the accepted band above target (default
    0.25 * target, at least 1e-6 of the pair's size). bound_radius_* (M,) are the radii of
    spheres about the pose origins containing each shape (computed from the points if None).

    Returns a TOIResult: t (M,) fraction of the step in [0, 1] (1 = no hit in the step),
    distance (M,) the swollen distance at t, normal (M, 3) unit A->B at t (at a hit landing
    exactly on contact: the normal just before; zeros only where the cores overlap at the
    start), status (M,) SEPARATED / HIT / OVERLAPPED / MAX_ITERATIONS, iterations (M,).
    """
    points_a = np.asarray(points_a, dtype=np.float64)
    points_b = np.asarray(points_b, dtype=np.float64)
    pos_a, pos_b = np.asarray(pos_a, dtype=np.float64), np.asarray(pos_b, dtype=np.float64)
    m = max(pos_a.reshape(-1, 3).shape[0], pos_b.reshape(-1, 3).shape[0],
            points_a.shape[0] if points_a.ndim == 3 else 1,
            points_b.shape[0] if points_b.ndim == 3 else 1)

    def vec(x, w):
        return np.ascontiguousarray(np.broadcast_to(np.asarray(x, dtype=np.float64), (m, w)))

    pos_a, pos_b = vec(pos_a, 3), vec(pos_b, 3)
    quat_a, quat_b = vec(quat_a, 4), vec(quat_b, 4)
    lin_a, lin_b, ang_a, ang_b = vec(lin_a, 3), vec(lin_b, 3), vec(ang_a, 3), vec(ang_b, 3)
    points_a = np.broadcast_to(points_a, (m,) + points_a.shape[-2:])
    points_b = np.broadcast_to(points_b, (m,) + points_b.shape[-2:])
    radius_a = np.broadcast_to(np.asarray(radius_a, dtype=np.float64), (m,))
    radius_b = np.broadcast_to(np.asarray(radius_b, dtype=np.float64), (m,))
    if bound_radius_a is None:
        bound_radius_a = np.linalg.norm(points_a, axis=2).max(axis=1) + radius_a
    if bound_radius_b is None:
        bound_radius_b = np.linalg.norm(points_b, axis=2).max(axis=1) + radius_b
    bound_radius_a = np.broadcast_to(np.asarray(bound_radius_a, dtype=np.float64), (m,))
    bound_radius_b = np.broadcast_to(np.asarray(bound_radius_b, dtype=np.float64), (m,))
    target = np.broadcast_to(np.asarray(target, dtype=np.float64), (m,))
    size = np.maximum(np.maximum(bound_radius_a, bound_radius_b), 1e-300)
    if tolerance is None:
        tolerance = np.maximum(0.25 * target, 1e-6 * size)
    tolerance = np.broadcast_to(np.asarray(tolerance, dtype=np.float64), (m,))
    # Closing-speed part that does not depend on n: the rotational sweep of each body.
    spin = np.linalg.norm(ang_a, axis=1) * bound_radius_a + np.linalg.norm(ang_b, axis=1) * bound_radius_b
    dlin = lin_a - lin_b

    t = np.zeros(m)
    status = np.full(m, MAX_ITERATIONS, dtype=np.int64)
    iterations = np.zeros(m, dtype=np.int64)
    distance = np.zeros(m)
    normal = np.zeros((m, 3))
    active = np.arange(m)
    for _it in range(max_iterations):
        if active.size == 0:
            break
        a = active
        iterations[a] += 1
        time = t[a] * dt
        pa, ra_ = _poses_at(pos_a[a], quat_a[a], lin_a[a], ang_a[a], time)
        pb, rb_ = _poses_at(pos_b[a], quat_b[a], lin_b[a], ang_b[a], time)
        g = gjk(points_a[a], radius_a[a], pa, ra_, points_b[a], radius_b[a], pb, rb_, tol=gjk_tol)
        distance[a] = g.distance
        # With target 0 the last step can land exactly on contact, where the GJK normal is
        # undefined (cores touching): keep the normal of the previous, separated, iteration.
        defined = np.any(g.normal != 0.0, axis=1)
        normal[a[defined]] = g.normal[defined]
        gap = g.distance - target[a]
        hit = gap <= tolerance[a]
        status[a[hit]] = np.where(t[a[hit]] == 0.0, OVERLAPPED, HIT)
        mu = (_rowdot(dlin[a], g.normal) + spin[a]) * dt
        with np.errstate(divide="ignore", invalid="ignore"):
            t_new = t[a] + gap / mu
        miss = ~hit & ((mu <= 0) | ~(t_new < 1.0))
        status[a[miss]] = SEPARATED
        t[a[miss]] = 1.0
        go = ~hit & ~miss
        t[a[go]] = t_new[go]
        active = a[go]
    # Pairs that did not stop on a hit moved after their last GJK: measure them at their final t.
    redo = np.nonzero((status == SEPARATED) | (status == MAX_ITERATIONS))[0]
    if redo.size:
        time = t[redo] * dt
        pa, ra_ = _poses_at(pos_a[redo], quat_a[redo], lin_a[redo], ang_a[redo], time)
        pb, rb_ = _poses_at(pos_b[redo], quat_b[redo], lin_b[redo], ang_b[redo], time)
        g = gjk(points_a[redo], radius_a[redo], pa, ra_, points_b[redo], radius_b[redo], pb, rb_,
                tol=gjk_tol)
        distance[redo] = g.distance
        normal[redo] = g.normal
    return TOIResult(t=t, distance=distance, normal=normal, status=status, iterations=iterations)


def _rowdot(a, b):
    return np.sum(a * b, axis=1)
