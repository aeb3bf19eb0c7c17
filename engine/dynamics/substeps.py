"""A collision pass's solver substeps in one compiled call: contacts, joints and all.

World._solve runs, per substep: the force fields' kick (field_kernels.field_kick), gravity and
damping, the gyroscopic step, the warm start of contacts and joints, the biased sweeps
(contacts then joints, iterations times the joints' biased_sweeps), the pose update, the
inertia refresh, then the relax sweeps (the joints in every one when relax_every, else in
the last) and the joints' end of substep (breaking). That whole loop is this kernel, over
the kernels the solvers' own methods call (integrate._kick, integrate.gyro_kick,
contact_kernels.warm_start / solve_pass, integrate._advance, inertia_refresh.update_rows /
follow_rows, joint_point_kernels.points_*, joint_row_kernels.rows_*), in the same order: a
pass gives the same numbers as those methods called one by one (tests/substep_reference.py
is that loop of calls, the reference), and Python runs a few times per pass instead of a
dozen calls a substep.

After the pose update the inertia refresh (inertia_refresh.update_rows, and follow_rows for the
bodies the joints share with contacts) retakes the rows of the bodies that turned far, round
bodies by their axis's tilt. The kernel stops where Python has work to do, and says why; the
call after resumes at the next substep, so the order stays that of the loop of calls:

- STRUCK, after a substep: a body gained speed its contacts never allowed for (struck.py),
  and the pass ends there;
- RECOLLIDE, after every EVERY-th substep: recollide.py looks at the turning polytope pairs.
"""

import numpy as np

from ..core.jit import kernel
from .contact_kernels import SWEEP_WORK, solve_pass, warm_start
from .field_kernels import field_kick
from .inertia_refresh import NO_ROWS, SHARED_COS_HALF, follow_rows, solver_rows, update_rows
from .integrate import _advance, _kick, gyro_kick
from .joint_point_kernels import STALE, points_end_substep, points_prepare, points_solve, points_warm
from .joint_row_kernels import (
    FLAG_STALE,
    rows_biased_sweeps,
    rows_end_substep,
    rows_prepare,
    rows_solve,
    rows_warm,
)
from .struck import struck as struck_test

# Why run_substeps returned.
DONE, STRUCK, RECOLLIDE = 0, 1, 2
# Which joint rows the pass has: none, point locks (joint_points), six-axis rows (joint_solver)
# (run_pass; the compiled substeps tell them apart by which pack is None).
NO_JOINTS, POINT_JOINTS, ROW_JOINTS = 0, 1, 2


# The sweeps' use_bias, read from an array: a literal True / False makes numba compile a
# sweep kernel once per literal (and once more for Python's bool), some 3 s a copy.
_BIASED = np.array([True, False])


@kernel
def run_substeps(s, nsub, iterations, relax, h, vel, x, q, dpose, act, movers, gravity,
                 lin_f, ang_f, gyro, inertia_g, contacts, refresh, struck, recollide_every,
                 fields, relax_every, points, rows, geo):
    """Run substeps s .. nsub - 1. Returns (the substep to go on from, the event that
    stopped it).

    contacts: ContactSolver.kernel_arrays(); refresh: (InertiaRefresh.kernel_state(), shared,
    solver_rows(solver)), shared the rows of InertiaRefresh's bodies that the joints share
    with contacts (InertiaRefresh.plain_rows); struck: (bodies, arm, start, allow) of
    StruckBodies (empty: no check); recollide_every 0: no check; fields: (ints, floats, rate,
    bodies, inv_mass, sleep_time): the FieldTable.pack() of the force fields, the bodies
    they push (empty: no fields), the bodies' inverse masses and sleep timers; the pass's
    joints: points (PointLocks.pack()) or rows and geo (JointSolver.pack(), geometry_pack()),
    None for what the pass has not, with relax_every (the joints relax in every relax sweep,
    not only the last). A None argument's code is left out when numba compiles (its branch
    pruning on ``is not None``): a pass without joints no longer hands over 115 empty arrays
    whose unboxing cost more than a small scene's substeps (27 cubes: ~40 us a call)."""
    (idx, count, dirs, ima, imb, jang, mang, kmat, eff, k_pinv, sep0, imp, max_normal,
     friction, soft, work) = contacts
    ref_state, shared, solver_rows = refresh
    struck_bodies, arm, start, allow = struck
    field_ints, field_floats, rate, pushed, inv_mass, sleep_time = fields
    while s < nsub:
        if rows is not None:  # noqa: SIM102 (a test of its own: numba prunes it)
            if rows[62][FLAG_STALE]:   # (no relax sweeps)
                rows_prepare(x, q, rows, geo)
        field_kick(field_ints, field_floats, rate, pushed, x, vel, inv_mass, sleep_time, h)
        _kick(vel, act, gravity, lin_f, ang_f, h)
        if gyro.shape[0]:
            gyro_kick(vel, gyro, q, inertia_g, h, 2)
        warm_start(vel, idx, count, dirs, ima, imb, mang, imp)
        sweeps = iterations
        if points is not None:
            if points[24][STALE]:
                points_prepare(x, q, points)
            points_warm(vel, points)
        if rows is not None:
            rows_warm(vel, rows)
            # A stiff spring is nearly a constraint: the substep sweeps it together with
            # its neighbours until they agree (joint_solver.STIFF_SPRING_SWEEPS).
            sweeps = iterations * rows_biased_sweeps(rows)
        for _ in range(sweeps):
            solve_pass(vel, dpose, _BIASED[0], idx, count, dirs, ima, imb, jang, mang, kmat, eff,
                       k_pinv, sep0, imp, max_normal, friction, soft, work)
            if points is not None:
                points_solve(vel, points, _BIASED[0])
            if rows is not None:
                rows_solve(vel, rows, _BIASED[0])
                rows[62][FLAG_STALE] = 1
        _advance(x, q, vel, movers, h)
        for j in range(movers.shape[0]):
            b = movers[j]
            for k in range(6):
                dpose[b, k] += h * vel[b, k]
        # The joints' rows for the new poses: measured where the relax sweeps would first
        # use them (without relax sweeps, at the next warm start).
        if relax > 0:
            if points is not None:
                points_prepare(x, q, points)
            if rows is not None:
                rows_prepare(x, q, rows, geo)
        # A body in both solvers is weighted by one tensor in both: the joint rows take
        # the present one at every substep (engine.dynamics.joint_inertia), so its contact
        # rows are retaken once it turns (follow_rows). Two tensors of a spinning needle
        # (inertias 1.3e-4 and 2.9) 0.2 rad apart made the contact and stiff-spring
        # sweeps answer each other 1.6x harder each time: 180 -> 6e5 m/s in one substep
        # (tests/test_fuzz_world.py, seed 320).
        if ref_state[0].shape[0]:
            update_rows(ref_state, q, vel, dpose, solver_rows)
            if shared.shape[0]:
                follow_rows(ref_state, shared, SHARED_COS_HALF, q, dpose, solver_rows)
        for r in range(relax):
            solve_pass(vel, dpose, _BIASED[1], idx, count, dirs, ima, imb, jang, mang, kmat, eff,
                       k_pinv, sep0, imp, max_normal, friction, soft, work)
            # The joints in every sweep when they share a body with a contact (their bias
            # velocity must leave with the contacts': world_joints._joint_solver) or are
            # swept, else in the last.
            if relax_every or r == relax - 1:
                if points is not None:
                    points_solve(vel, points, _BIASED[1])
                if rows is not None:
                    rows_solve(vel, rows, _BIASED[1])
        if points is not None:
            points_end_substep(points)
        if rows is not None:
            rows_end_substep(rows, geo)
        s += 1
        if s >= nsub:
            break
        if struck_test(vel, struck_bodies, arm, start, allow, (nsub - s) * h):
            return s, STRUCK
        if recollide_every and s % recollide_every == 0:
            return s, RECOLLIDE
    return s, DONE


def run_pass(solver, joints, refresh, struck, nsub, h, iterations, relax, vel, x, q, dpose,
             act, movers, gravity, lin_f, ang_f, gyro, inertia_g, fields=None, recollide=None,
             every=0):
    """The substeps of one collision pass (World._solve's step 6): run_substeps, and between
    its calls the work it stopped for. solver: the ContactSolver; joints: the JointSolver or
    None; refresh: the InertiaRefresh; struck: StruckBodies or None; fields: run_substeps'
    fields tuple (None: no fields); recollide(s): take the turning pairs' manifolds again
    after substep s (None: not this pass) every EVERY-th substep. Returns the substeps run.
    A pass without contacts or joints (free flight) gives None for solver, joints, refresh
    and struck: its substeps integrate alone."""
    contacts = _contact_rows(solver)
    points = rows = geo = None
    kind, relax_every = NO_JOINTS, False
    if joints is not None and joints.m:
        relax_every = bool(joints.relax_every)
        packed = joints.begin(x, q)
        if joints.points is not None:
            kind, points = POINT_JOINTS, joints.points.pack()
        else:
            kind, rows, geo = ROW_JOINTS, packed, joints.geometry_pack()
    shared = _NO_BODIES
    if joints is not None and kind != NO_JOINTS and len(joints.shared_bodies):
        shared = refresh.plain_rows(joints.shared_bodies)
    if struck is None:
        hits = (_NO_BODIES, _NO_FLOATS, _NO_FLOATS, _NO_FLOATS)
    else:
        hits = (struck.bodies, struck.arm, struck.start, struck.allow)
    every = every if recollide is not None else 0
    s = 0
    while True:
        checks = _NO_REFRESH if refresh is None else (refresh.kernel_state(), shared,
                                                       solver_rows(solver))
        s, event = run_substeps(s, nsub, iterations, relax, h, vel, x, q, dpose, act, movers,
                                gravity, lin_f, ang_f, gyro, inertia_g, contacts, checks,
                                hits, every, _NO_FIELDS if fields is None else fields,
                                relax_every, points, rows, geo)
        if event == RECOLLIDE:
            recollide(s)
            contacts = _contact_rows(solver)
        else:
            break   # DONE, or STRUCK: the pass ends after substep s
    if kind == ROW_JOINTS:
        joints.substeps += s
    return s


def _contact_rows(solver):
    """solver.kernel_arrays(), or empty ones of the same kinds for a pass without contacts
    (a jointed pass with nothing touching: the ContactSolver then builds no rows; solver None:
    free flight)."""
    if solver is not None and solver.m:
        return solver.kernel_arrays()
    f = np.zeros
    return (f((0, 2), np.int64), f(0, np.int64), f((0, 3, 3)), f(0), f(0), f((0, 1, 6)),
            f((0, 1, 6)), f((0, 1, 1)), f((0, 1)), f((0, 4, 4)), f((0, 4)), f((0, 1)),
            f((0, 4)), f(0), _NO_FLOATS if solver is None else solver.soft,
            f((SWEEP_WORK, 12)))


_NO_BODIES = np.zeros(0, dtype=np.int64)
_NO_FLOATS = np.zeros(0)
_NO_REFRESH = ((_NO_BODIES, np.zeros((0, 4)), np.zeros(0, dtype=bool), np.zeros((0, 3)),
                _NO_FLOATS, np.zeros((0, 3, 3)), np.zeros((0, 3, 3)), np.zeros(1, np.int64)),
               _NO_BODIES, NO_ROWS)
_NO_FIELDS = (np.zeros((0, 10), np.int64), np.zeros((0, 18)), 1.0, _NO_BODIES, _NO_FLOATS,
              _NO_FLOATS)
