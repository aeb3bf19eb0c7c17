"""Keeps the contact solver's world inverse inertia in step with bodies that turn far within a
collision pass (issue 11).

The solver takes each body's world inverse inertia R I^-1 R^T once per pass. A body with
anisotropic inertia that is hit into a fast spin turns a long way within the pass (a plate at
8.7e3 rad/s turns 24 rad per 1/360 s substep), and impulses computed for the orientation it had
are energy from nowhere for the one it has, up to the ratio of its principal inertias per
impulse (engine.dynamics.solver.ContactSolver.refresh_inertia). After every substep the world asks
``InertiaRefresh.update`` which anisotropic bodies turned more than ``REFRESH_ANGLE`` since
their tensor was taken and has the solver rebuild those bodies' rows. Isotropic bodies (spheres,
cubes) never need it: R I^-1 R^T does not depend on R.

Bodies round about an axis (a wheel, a barrel, a capsule: engine.dynamics.round_bodies) are refreshed by
the turn of that axis alone, and their rows turned by that swing alone: their roll changes
neither their world tensor nor where they touch (turning the arms with the roll carried each
contact point up the wheel). But the solver's normal rows leave out the axis they were built
with, and a roll about an axis that has tilted since reads through as a normal velocity: a
capsule spinning at 60 rad/s on frictionless ground wobbled up to 45 rad/s in 4 s when its
rows were retaken every quarter radian. So a round body's rows are retaken once its axis has
tilted so far that its roll would read through at ROLL_LEAK at its reach.
"""
import math

import numpy as np

from ..core import quat
from .round_bodies import rolling, swing, world_axes

# Turn (rad) after which a body's world inverse inertia is taken again. The tensor's error
# grows like the angle times the spread of the principal inertias; a quarter radian keeps it
# small while a body tumbling at 10 rad/s in a 1/48 s pass (0.2 rad) never pays for a rebuild.
REFRESH_ANGLE = 0.25
_COS_HALF = math.cos(0.5 * REFRESH_ANGLE)
REFRESH_COS_HALF = _COS_HALF   # what the compiled substeps compare with (dynamics/substeps)
# Turn (rad) after which a body the pass's joints share is retaken (InertiaRefresh.follow):
# the joint rows use its present tensor at every substep, and two tensors of one body a
# fifth of a radian apart made the contact and joint sweeps drive each other apart (a needle
# at 6e5 m/s in one substep, jointed fuzz seed 320: it passes from 0.1 down). Three degrees
# keeps the two within a few percent of the body's anisotropy; a glued wall at rest never
# turns this far. (0.01-0.02 let jointed seed 280, a needle whipped by a 52 m kinematic body
# at 1e4 m/s either way, cross the fuzzer's speed bound by 2-6 %.)
SHARED_ANGLE = 0.05
_COS_HALF_SHARED = math.cos(0.5 * SHARED_ANGLE)
SHARED_COS_HALF = _COS_HALF_SHARED   # (dynamics/substeps)
# Normal velocity (m/s) a round body's roll may read through its rows' stale axis (see above).
ROLL_LEAK = 1e-6


class InertiaRefresh:
    """Orientations at which the solver's tensors of the anisotropic awake bodies were taken.

    bodies: indices of the anisotropic awake bodies (the world's ``gyro``); q (N, 4) the
    orientations now (the pass's start); inv_inertia (N, 3, 3) the world inverse inertia the
    solver was built with (updated in place for the bodies refreshed); inv_body (N, 3, 3) the
    body-frame inverse inertia; axial (K,) bool, optional: which of the bodies are round about
    their local Z axis (engine.dynamics.round_bodies.round_about_z), with reach (K,) their bounding
    radii about the centre of mass."""

    def __init__(self, bodies, q, inv_inertia, inv_body, axial=None, reach=None):
        self.bodies = bodies
        self.q_ref = q[bodies].copy()
        self.inv_inertia = inv_inertia
        self.inv_body = inv_body
        self.axial = np.zeros(len(bodies), dtype=bool) if axial is None else axial
        self.any_axial = bool(self.axial.any())
        if self.any_axial:
            self.rollers = bodies[self.axial]
            self.axis_ref = world_axes(self.q_ref[self.axial])
            self.reach = reach[self.axial]

    def update(self, solver, q, dpose, vel=None):
        """After a substep: retake the solver rows of the bodies that turned too far (dpose
        (N, 6): the pass's displacements so far, see ContactSolver.refresh_inertia; vel (N, 6)
        the velocities, needed when there are round bodies)."""
        if not len(self.bodies):
            return
        qb = q[self.bodies]
        # |cos(angle / 2)| between the reference and the present orientation.
        c = np.abs(np.einsum("ki,ki->k", qb, self.q_ref))
        far_mask = c < _COS_HALF
        axis = None
        if self.any_axial:
            axis = world_axes(qb[self.axial])
            far_mask[self.axial], rolls = self._tilted(axis, vel, far_mask[self.axial])
        far = np.flatnonzero(far_mask)
        if not len(far):
            return
        b = self.bodies[far]
        rot = quat.to_matrix(qb[far])
        turn = np.einsum("kij,klj->kil", rot, quat.to_matrix(self.q_ref[far]))  # R R_ref^T
        if axis is not None:
            self._swing_only(far, axis, turn, rolls)
            refreshed = far_mask[self.axial]
            self.axis_ref[refreshed] = axis[refreshed]
        self._retake(solver, far, b, rot, turn, qb, dpose)

    def follow(self, solver, bodies, q, dpose):
        """Retake the rows of those of ``bodies`` (the awake bodies the pass's joints share:
        engine.world.world_joints) that this refresh follows, are not round, and turned more than
        SHARED_ANGLE since their tensor was taken: the joint rows weigh them by their present
        tensor (engine.dynamics.joint_inertia), and the two solvers must weigh a body alike (World._solve)."""
        if not len(self.bodies) or not len(bodies):
            return
        at = np.minimum(np.searchsorted(self.bodies, bodies), len(self.bodies) - 1)
        at = at[(self.bodies[at] == bodies) & ~self.axial[at]]
        c = np.abs(np.einsum("ki,ki->k", q[self.bodies[at]], self.q_ref[at]))
        self._force_rows(solver, at[c < _COS_HALF_SHARED], q, dpose)

    def force(self, solver, bodies, q, dpose):
        """Retake now the rows of those of ``bodies`` this refresh follows and that are not
        round (engine.world.recollide calls it before it rebuilds manifolds of theirs for the
        present pose, so that all of a body's rows are built for one orientation: a later
        refresh turns them all by the same turn)."""
        if not len(self.bodies) or not len(bodies):
            return
        at = np.minimum(np.searchsorted(self.bodies, bodies), len(self.bodies) - 1)
        self._force_rows(solver, at[(self.bodies[at] == bodies) & ~self.axial[at]], q, dpose)

    def _force_rows(self, solver, far, q, dpose):
        """Retake the rows of self.bodies[far] for their present orientations."""
        if not len(far):
            return
        qb = q[self.bodies]
        rot = quat.to_matrix(qb[far])
        turn = np.einsum("kij,klj->kil", rot, quat.to_matrix(self.q_ref[far]))
        self._retake(solver, far, self.bodies[far], rot, turn, qb, dpose)

    def _retake(self, solver, far, b, rot, turn, qb, dpose):
        """Bodies b (= self.bodies[far]) at rotations rot: fresh world tensors, new
        references, and the solver's rows of theirs turned by turn."""
        self.inv_inertia[b] = np.einsum("kij,kjl,kml->kim", rot, self.inv_body[b], rot)
        self.q_ref[far] = qb[far]
        solver.refresh_inertia(b, turn, self.inv_inertia, dpose)

    def _tilted(self, axis, vel, far_turn):
        """Round bodies to refresh, and which of them by their swing alone. Rolling ones
        (engine.dynamics.round_bodies.rolling): once their axis (now: axis) has tilted from the rows'
        one so far that the roll reads through at more than ROLL_LEAK, or more than
        REFRESH_ANGLE; the others, tumbling, as any body (far_turn: their whole turn past
        REFRESH_ANGLE), their rows retaken for the whole turn."""
        w = vel[self.rollers, 3:]
        rolls = rolling(w, axis)
        roll = np.abs(np.einsum("ki,ki->k", w, axis))
        limit = np.minimum(REFRESH_ANGLE, ROLL_LEAK / np.maximum(roll * self.reach, 1e-300))
        # The chord between the unit axes, 2 sin(tilt / 2): the tilt itself at these angles,
        # without the rounding of 1 - cos.
        d = axis - self.axis_ref
        tilted = np.einsum("ki,ki->k", d, d) > limit * limit
        return np.where(rolls, tilted, far_turn), rolls

    def _swing_only(self, far, axis, turn, rolls):
        """For the rolling round bodies among far, the turn becomes the swing of their axis
        alone (from axis_ref, the axis their rows were built with, to axis)."""
        sel = self.axial[far]
        rows = (np.cumsum(self.axial) - 1)[far[sel]]   # their rows among the round bodies
        pick = rolls[rows]
        if not pick.any():
            return
        rows = rows[pick]
        a_ref, a_now = self.axis_ref[rows], axis[rows]
        # Axes more than a right angle apart (past 1.57 rad in one substep) keep the whole
        # turn: the swing of nearly opposite axes is ill-defined, and any turn is right there.
        ok = np.einsum("ki,ki->k", a_ref, a_now) > 0.0
        turn[np.flatnonzero(sel)[pick][ok]] = swing(a_ref[ok], a_now[ok])
