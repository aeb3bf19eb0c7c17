"""The step's last line of defence against non-finite body states (issue 11).

A NaN or inf born in one body's update spreads through the contact graph within a step or two
and then poisons the broadphase for everyone. The world keeps each collision pass's starting
state of the moving bodies; if a body's centre of mass, orientation or velocity is not finite
at the end of the pass, that body goes back to its last good pose with zero velocity, is put to
sleep, and a ``GuardEvent`` is appended to ``World.guard_events``. The rest of the world goes
on. Non-finite impulses are dropped before they reach the pair table (warm starting would carry
them into the next step).

This is a guard, not a fix: a correct step never triggers it, and the scene fuzzer
(tests/fuzzworld.py) counts its firings as failures. The add-on reports each event once, by
object name.
"""
from dataclasses import dataclass

import numpy as np

from ..core.errors import EngineError


@dataclass(frozen=True)
class GuardEvent:
    """One guard firing: ``time`` (s, the world time at the start of the failing pass),
    ``body`` (index), ``reason`` (which part of the state was not finite)."""
    time: float
    body: int
    reason: str

    def __str__(self):
        return (f"body {self.body}: {self.reason} at t = {self.time:.4g} s; kept at its last "
                "good pose and put to sleep")


class StateGuard:
    """Snapshot of the moving bodies' state at the start of a pass (``keep``) and the repair
    of the bodies whose state went non-finite (``repair``)."""

    def __init__(self):
        self.rows = np.zeros(0, dtype=np.int64)
        self.saved = (np.zeros((0, 3)), np.zeros((0, 4)), np.zeros((0, 6)))

    def keep(self, rows, x0, q0, vel0):
        """The starting state of the bodies rows this pass may move: x0 (K, 3), q0 (K, 4),
        vel0 (K, 6), copies the pass's kernel made (engine.world.pass_kernels.pass_bodies)."""
        self.rows = rows
        self.saved = (x0, q0, vel0)

    def repair(self, time, x, q, vel, pos, com_world, sleeping, sleep_time, island):
        """Restore the bodies whose state is not finite; returns their GuardEvents."""
        rows = self.rows
        if not len(rows):
            return []
        bad_x = ~np.isfinite(x[rows]).all(axis=1)
        bad_q = ~np.isfinite(q[rows]).all(axis=1)
        bad_v = ~np.isfinite(vel[rows]).all(axis=1)
        bad = bad_x | bad_q | bad_v
        if not bad.any():
            return []
        which = np.flatnonzero(bad)
        body = rows[which]
        x0, q0, _ = self.saved
        x[body] = x0[which]
        q[body] = q0[which]
        vel[body] = 0.0
        pos[body] = x[body] - com_world(body)
        sleeping[body] = True
        sleep_time[body] = 0.0
        island[body] = -2 - body   # an island of its own (labels of real islands are >= 0)
        events = []
        for k, b in zip(which, body):
            parts = [n for n, f in (("position", bad_x[k]), ("orientation", bad_q[k]),
                                    ("velocity", bad_v[k])) if f]
            events.append(GuardEvent(float(time), int(b),
                                     "non-finite " + " and ".join(parts)))
        return events


def unit_quaternion(q, what):
    """q (4,) finite, normalised; a zero-length one is refused (dividing by its norm made
    every pose of the body NaN: set_pose / set_kinematic_target with (0, 0, 0, 0))."""
    n = float(np.linalg.norm(q))
    if not n > 1e-9:
        raise EngineError(f"{what} {tuple(q)!r} has zero length; give a unit quaternion "
                          "(w, x, y, z), e.g. (1, 0, 0, 0)")
    return q / n


def sound_manifolds(normal, points, separation, count):
    """(M,) bool: manifolds the solver may use: a finite unit normal (the solver's tangent
    basis divides by |n x helper|, which is >= 0.57 only for a unit n; a zero normal, which
    a degenerate query may return, gave NaN tangents) and finite used points and
    separations. The others are dropped for this pass (documented fallback: no contact
    from that pair this pass; the next pass queries again)."""
    used = np.arange(points.shape[1])[None, :] < count[:, None]
    n2 = np.einsum("mi,mi->m", normal, normal)
    unit = np.abs(n2 - 1.0) < 1e-6
    pts = np.where(used, np.isfinite(points).all(axis=2) & np.isfinite(separation), True)
    return unit & pts.all(axis=1)


class SpeedWatch:
    """Flags dynamic bodies whose speed goes far beyond anything the scene can explain.

    The reference is the fastest surface speed at the start (|v| + |w| * reach over the
    bodies, kinematic ones included) and of the kinematic motion seen since (``kinematic``).
    A body is absurd when its linear speed exceeds ``2 * reference + 50 m/s + |g| * t``:
    collisions can at most about double a speed (an elastic hit of a light body by a heavy
    one), gravity adds |g| t. Energy from nowhere (a solver blow-up) crosses it at once;
    a real scene never does. ``check`` returns the bodies newly over the line, once each.
    """

    def __init__(self, world, slack=50.0):
        self.slack = float(slack)
        self.g = float(np.linalg.norm(world.gravity))
        self.reach = self._reach(world)
        moving = world.kinds != 1
        surf = (np.linalg.norm(world.linear_velocities, axis=1)
                + np.linalg.norm(world.angular_velocities, axis=1) * self.reach)
        self.reference = float(surf[moving].max()) if moving.any() else 0.0
        self.t = 0.0
        self.flagged = np.zeros(world.body_count, dtype=bool)

    @staticmethod
    def _reach(world):
        sid = world._v("shape")
        return world.table.bound_radius[sid] + np.linalg.norm(world._v("com"), axis=1)

    def kinematic(self, speed):
        """Account for a kinematic body's surface speed (m/s) seen in the motion."""
        self.reference = max(self.reference, float(speed))

    def cap(self):
        return 2.0 * self.reference + self.slack + self.g * self.t

    def check(self, world, dt):
        """After a step of dt: (indices, speeds) of dynamic bodies newly over the cap."""
        self.t += dt
        speed = np.linalg.norm(world.linear_velocities, axis=1)
        over = (world.kinds == 0) & ~(speed <= self.cap()) & ~self.flagged
        idx = np.flatnonzero(over)
        self.flagged[idx] = True
        return idx, speed[idx]
