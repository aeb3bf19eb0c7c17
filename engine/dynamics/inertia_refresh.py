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

from ..core.jit import kernel
from ..core.quat import matrix_of
from .contact_kernels import refresh_rows
from .round_bodies import ROLLING

# Turn (rad) after which a body's world inverse inertia is taken again. The tensor's error
# grows like the angle times the spread of the principal inertias; a quarter radian keeps it
# small while a body tumbling at 10 rad/s in a 1/48 s pass (0.2 rad) never pays for a rebuild.
REFRESH_ANGLE = 0.25
_COS_HALF = math.cos(0.5 * REFRESH_ANGLE)
# Turn (rad) after which a body the pass's joints share is retaken (InertiaRefresh.follow):
# the joint rows use its present tensor at every substep, and two tensors of one body a
# fifth of a radian apart made the contact and joint sweeps drive each other apart (a needle
# at 6e5 m/s in one substep, jointed fuzz seed 320: it passes from 0.1 down). Three degrees
# keeps the two within a few percent of the body's anisotropy; a glued wall at rest never
# turns this far. (0.01-0.02 let jointed seed 280, a needle whipped by a 52 m kinematic body
# at 1e4 m/s either way, cross the fuzzer's speed bound by 2-6 %.)
SHARED_ANGLE = 0.05
SHARED_COS_HALF = math.cos(0.5 * SHARED_ANGLE)
# Normal velocity (m/s) a round body's roll may read through its rows' stale axis (see above).
ROLL_LEAK = 1e-6



class InertiaRefresh:
    """Orientations at which the solver's tensors of the anisotropic awake bodies were taken.

    bodies: indices of the anisotropic awake bodies (the world's ``gyro``); q (N, 4) the
    orientations now (the pass's start); inv_inertia (N, 3, 3) the world inverse inertia the
    solver was built with (updated in place for the bodies refreshed); inv_body (N, 3, 3) the
    body-frame inverse inertia; axial (K,) bool, optional: which of the bodies are round about
    their local Z axis (engine.dynamics.round_bodies.round_flags), with reach (K,) their bounding
    radii about the centre of mass.

    The work is the kernels update_rows / follow_rows, which the compiled substeps call after
    every pose update (engine.dynamics.substeps: kernel_state() is what they take)."""

    def __init__(self, bodies, q, inv_inertia, inv_body, axial=None, reach=None):
        self.bodies = np.ascontiguousarray(bodies, dtype=np.int64)
        self.q_ref = np.ascontiguousarray(q[self.bodies], dtype=np.float64)
        self.inv_inertia = inv_inertia
        self.inv_body = inv_body
        k = len(self.bodies)
        self.axial = np.zeros(k, dtype=bool) if axial is None else np.asarray(axial, dtype=bool)
        self.reach = np.zeros(k) if reach is None else np.ascontiguousarray(reach, np.float64)
        # The axis each round body's rows were built with (rows of the others: unused).
        self.axis_ref = _world_axes(self.q_ref)
        self.retaken = np.zeros(1, dtype=np.int64)   # bodies retaken so far (tests count)

    def kernel_state(self):
        """(bodies, q_ref, axial, axis_ref, reach, inv_body, inv_inertia, retaken):
        update_rows' and follow_rows' arguments of this refresh."""
        return (self.bodies, self.q_ref, self.axial, self.axis_ref, self.reach, self.inv_body,
                self.inv_inertia, self.retaken)

    def update(self, solver, q, dpose, vel=None):
        """After a substep: retake the solver rows of the bodies that turned too far (dpose
        (N, 6): the pass's displacements so far, see ContactSolver.refresh_inertia; vel (N, 6)
        the velocities, needed when there are round bodies)."""
        if not len(self.bodies):
            return
        if vel is None:
            vel = np.zeros((len(q), 6))
        update_rows(self.kernel_state(), q, vel, dpose, solver_rows(solver))

    def follow(self, solver, bodies, q, dpose):
        """Retake the rows of those of ``bodies`` (the awake bodies the pass's joints share:
        engine.world.world_joints) that this refresh follows, are not round, and turned more than
        SHARED_ANGLE since their tensor was taken: the joint rows weigh them by their present
        tensor (engine.dynamics.joint_inertia), and the two solvers must weigh a body alike (World._solve)."""
        at = self.plain_rows(bodies)
        if len(at):
            follow_rows(self.kernel_state(), at, SHARED_COS_HALF, q, dpose, solver_rows(solver))

    def force(self, solver, bodies, q, dpose):
        """Retake now the rows of those of ``bodies`` this refresh follows and that are not
        round (engine.world.recollide calls it before it rebuilds manifolds of theirs for the
        present pose, so that all of a body's rows are built for one orientation: a later
        refresh turns them all by the same turn)."""
        at = self.plain_rows(bodies)
        if len(at):
            follow_rows(self.kernel_state(), at, 2.0, q, dpose, solver_rows(solver))

    def plain_rows(self, bodies):
        """Indices into self.bodies of those of ``bodies`` it holds that are not round."""
        if not len(self.bodies) or not len(bodies):
            return np.zeros(0, dtype=np.int64)
        at = np.minimum(np.searchsorted(self.bodies, bodies), len(self.bodies) - 1)
        return at[(self.bodies[at] == bodies) & ~self.axial[at]].astype(np.int64)


def _world_axes(q):
    """(K, 3) the local Z axes of bodies at orientations q (K, 4): the rotation's third
    column."""
    out = np.empty((len(q), 3))
    _axes(q, out)
    return out


@kernel
def _axes(q, out):
    for j in range(q.shape[0]):
        _axis(q[j], out[j])


@kernel
def _axis(q, out):
    """out (3,): the local Z axis of a body at orientation q (round_bodies.world_axes)."""
    w, x, y, z = q[0], q[1], q[2], q[3]
    out[0] = 2.0 * (x * z + w * y)
    out[1] = 2.0 * (y * z - w * x)
    out[2] = 1.0 - 2.0 * (x * x + y * y)


def solver_rows(solver):
    """The ContactSolver's rows as refresh_rows takes them (empty ones without rows)."""
    if solver.m:
        return (solver.idx, solver.count, solver.ra, solver.rb, solver.axa, solver.axb,
                solver.dirs, solver.ima, solver.imb, solver.jang, solver.mang, solver.kmat,
                solver.eff, solver.k_pinv, solver.sep0)
    return NO_ROWS


f = np.zeros
NO_ROWS = (f((0, 2), np.int64), f(0, np.int64), f((0, 4, 3)), f((0, 4, 3)), f((0, 3)),
           f((0, 3)), f((0, 3, 3)), f(0), f(0), f((0, 1, 6)), f((0, 1, 6)), f((0, 1, 1)),
           f((0, 1)), f((0, 4, 4)), f((0, 4)))
del f


@kernel
def update_rows(state, q, vel, dpose, rows):
    """InertiaRefresh.update: the bodies that turned past REFRESH_ANGLE (round ones: see
    _round_far) get a fresh world tensor R I^-1 R^T and their solver rows turned by their turn
    since (a rolling round body: by its axis's swing alone). Returns how many."""
    bodies, q_ref, axial, axis_ref, reach, inv_body, inv_inertia, retaken = state
    k = bodies.shape[0]
    far = np.empty(k, np.int64)
    turn = np.empty((k, 3, 3))
    axis = np.empty(3)
    nf = 0
    for j in range(k):
        b = bodies[j]
        c = abs(q[b, 0] * q_ref[j, 0] + q[b, 1] * q_ref[j, 1] + q[b, 2] * q_ref[j, 2]
                + q[b, 3] * q_ref[j, 3])
        is_far = c < _COS_HALF
        rolls = False
        if axial[j]:
            _axis(q[b], axis)
            is_far, rolls = _round_far(vel[b], axis, axis_ref[j], reach[j], is_far)
        if not is_far:
            continue
        _retake(j, b, q, q_ref, inv_body, inv_inertia, turn[nf])
        if axial[j]:
            # A rolling body's turn is the swing of its axis alone (from the rows' one); axes
            # more than a right angle apart (past 1.57 rad in one substep) keep the whole turn:
            # the swing of nearly opposite axes is ill-defined, and any turn is right there.
            if rolls and (axis_ref[j, 0] * axis[0] + axis_ref[j, 1] * axis[1]
                          + axis_ref[j, 2] * axis[2]) > 0.0:
                _swing(axis_ref[j], axis, turn[nf])
            axis_ref[j, :] = axis
        far[nf] = b
        nf += 1
    if nf:
        _rows(far[:nf], turn[:nf], q.shape[0], inv_inertia, dpose, rows)
        retaken[0] += nf
    return nf


@kernel
def follow_rows(state, at, cos_half, q, dpose, rows):
    """InertiaRefresh.follow (cos_half: SHARED_ANGLE's) and force (cos_half > 1: all): the
    bodies bodies[at] turned past cos_half retaken for their whole turn. Returns how many."""
    bodies, q_ref, axial, axis_ref, reach, inv_body, inv_inertia, retaken = state
    far = np.empty(at.shape[0], np.int64)
    turn = np.empty((at.shape[0], 3, 3))
    nf = 0
    for i in range(at.shape[0]):
        j = at[i]
        b = bodies[j]
        c = abs(q[b, 0] * q_ref[j, 0] + q[b, 1] * q_ref[j, 1] + q[b, 2] * q_ref[j, 2]
                + q[b, 3] * q_ref[j, 3])
        if c < cos_half:
            _retake(j, b, q, q_ref, inv_body, inv_inertia, turn[nf])
            far[nf] = b
            nf += 1
    if nf:
        _rows(far[:nf], turn[:nf], q.shape[0], inv_inertia, dpose, rows)
        retaken[0] += nf
    return nf


@kernel
def _rows(far, turn, n, inv_inertia, dpose, rows):
    (idx, count, ra, rb, axa, axb, dirs, ima, imb, jang, mang, kmat, eff, k_pinv, sep0) = rows
    if idx.shape[0]:
        refresh_rows(far, turn, n, idx, count, ra, rb, axa, axb, dirs, ima, imb, inv_inertia,
                     jang, mang, kmat, eff, k_pinv, sep0, dpose)


@kernel
def _retake(j, b, q, q_ref, inv_body, inv_inertia, turn):
    """Body b (bodies[j]) now: its world tensor R I^-1 R^T, turn = R R_ref^T (its turn since
    the reference), and the reference moved to now."""
    rot = np.empty((3, 3))
    ref = np.empty((3, 3))
    matrix_of(q[b], rot)
    matrix_of(q_ref[j], ref)
    for a in range(3):
        for c in range(3):
            turn[a, c] = rot[a, 0] * ref[c, 0] + rot[a, 1] * ref[c, 1] + rot[a, 2] * ref[c, 2]
    ib = inv_body[b]
    tmp = np.empty((3, 3))
    for a in range(3):
        for c in range(3):
            tmp[a, c] = rot[a, 0] * ib[0, c] + rot[a, 1] * ib[1, c] + rot[a, 2] * ib[2, c]
    for a in range(3):
        for c in range(3):
            inv_inertia[b, a, c] = (tmp[a, 0] * rot[c, 0] + tmp[a, 1] * rot[c, 1]
                                    + tmp[a, 2] * rot[c, 2])
    for c in range(4):
        q_ref[j, c] = q[b, c]


@kernel
def _round_far(v, axis, axis_ref, reach, far_turn):
    """(whether to refresh a round body, whether it rolls (round_bodies.rolling)). Rolling:
    once its axis (now: axis) has tilted from the rows' one so far that the roll reads
    through at more than ROLL_LEAK, or more than REFRESH_ANGLE; tumbling, as any body
    (far_turn: its whole turn past REFRESH_ANGLE), its rows retaken for the whole turn."""
    w0, w1, w2 = v[3], v[4], v[5]
    roll = w0 * axis[0] + w1 * axis[1] + w2 * axis[2]
    across2 = (w0 * w0 + w1 * w1 + w2 * w2) - roll * roll
    if not across2 <= (ROLLING * ROLLING) * (roll * roll):
        return far_turn, False
    limit = min(REFRESH_ANGLE, ROLL_LEAK / max(abs(roll) * reach, 1e-300))
    # The chord between the unit axes, 2 sin(tilt / 2): the tilt itself at these angles,
    # without the rounding of 1 - cos.
    d0, d1, d2 = axis[0] - axis_ref[0], axis[1] - axis_ref[1], axis[2] - axis_ref[2]
    return d0 * d0 + d1 * d1 + d2 * d2 > limit * limit, True


@kernel
def _swing(a, b, out):
    """out (3, 3): the shortest rotation taking unit axis a to b (less than a right angle
    apart; round_bodies.swing): Rodrigues, I + K + K^2 / (1 + a.b), K = skew(a x b)."""
    k = np.zeros((3, 3))
    v0 = a[1] * b[2] - a[2] * b[1]
    v1 = a[2] * b[0] - a[0] * b[2]
    v2 = a[0] * b[1] - a[1] * b[0]
    k[0, 1], k[0, 2] = -v2, v1
    k[1, 0], k[1, 2] = v2, -v0
    k[2, 0], k[2, 1] = -v1, v0
    s = 1.0 + (a[0] * b[0] + a[1] * b[1] + a[2] * b[2])
    for i in range(3):
        for c in range(3):
            kk = k[i, 0] * k[0, c] + k[i, 1] * k[1, c] + k[i, 2] * k[2, c]
            out[i, c] = (1.0 if i == c else 0.0) + k[i, c] + kk / s
