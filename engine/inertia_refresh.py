"""Keeps the contact solver's world inverse inertia in step with bodies that turn far within a
collision pass (issue 11).

The solver takes each body's world inverse inertia R I^-1 R^T once per pass. A body with
anisotropic inertia that is hit into a fast spin turns a long way within the pass (a plate at
8.7e3 rad/s turns 24 rad per 1/360 s substep), and impulses computed for the orientation it had
are energy from nowhere for the one it has, up to the ratio of its principal inertias per
impulse (engine.solver.ContactSolver.refresh_inertia). After every substep the world asks
``InertiaRefresh.update`` which anisotropic bodies turned more than ``REFRESH_ANGLE`` since
their tensor was taken and has the solver rebuild those bodies' rows. Isotropic bodies (spheres,
cubes) never need it: R I^-1 R^T does not depend on R.
"""
import math

import numpy as np

from . import quat

# Turn (rad) after which a body's world inverse inertia is taken again. The tensor's error
# grows like the angle times the spread of the principal inertias; a quarter radian keeps it
# small while a body tumbling at 10 rad/s in a 1/48 s pass (0.2 rad) never pays for a rebuild.
REFRESH_ANGLE = 0.25
_COS_HALF = math.cos(0.5 * REFRESH_ANGLE)


class InertiaRefresh:
    """Orientations at which the solver's tensors of the anisotropic awake bodies were taken.

    bodies: indices of the anisotropic awake bodies (the world's ``gyro``); q (N, 4) the
    orientations now (the pass's start); inv_inertia (N, 3, 3) the world inverse inertia the
    solver was built with (updated in place for the bodies refreshed); inv_body (N, 3, 3) the
    body-frame inverse inertia."""

    def __init__(self, bodies, q, inv_inertia, inv_body):
        self.bodies = bodies
        self.q_ref = q[bodies].copy()
        self.inv_inertia = inv_inertia
        self.inv_body = inv_body

    def update(self, solver, q, dpose):
        """After a substep: retake the solver rows of the bodies that turned too far (dpose
        (N, 6): the pass's displacements so far, see ContactSolver.refresh_inertia)."""
        if not len(self.bodies):
            return
        qb = q[self.bodies]
        # |cos(angle / 2)| between the reference and the present orientation.
        c = np.abs(np.einsum("ki,ki->k", qb, self.q_ref))
        far = np.flatnonzero(c < _COS_HALF)
        if not len(far):
            return
        b = self.bodies[far]
        rot = quat.to_matrix(qb[far])
        turn = np.einsum("kij,klj->kil", rot, quat.to_matrix(self.q_ref[far]))  # R R_ref^T
        self.inv_inertia[b] = np.einsum("kij,kjl,kml->kim", rot, self.inv_body[b], rot)
        self.q_ref[far] = qb[far]
        solver.refresh_inertia(b, turn, self.inv_inertia, dpose)
