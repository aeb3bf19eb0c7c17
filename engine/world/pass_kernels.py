"""What World._step computes once a collision pass from the bodies' flat arrays, in a few
kernel calls: numpy did it in some forty small calls of a few microseconds each, more than the
kernels' own work on small scenes (27 tumbling cubes: ~0.3 ms of a 1 ms pass)."""
import math

import numpy as np

from ..collision.bounds import body_bounds, pair_margins
from ..collision.contacts import match_rows
from ..core.jit import kernel
from ..dynamics.arm_box import _world_boxes
from ..dynamics.contact_kernels import prepare
from ..dynamics.graph import sweep_order
from ..dynamics.integrate import _damping_factors
from ..dynamics.round_bodies import round_flags
from ..dynamics.sleep import moving_bodies
from ..dynamics.struck import REACH_SHARE
from .sweep import supports_first


@kernel
def pass_bounds(sid, q, pos, com, vel, kind, sleeping, own_lin, own_ang, lin_tol, ang_tol,
                static, kinematic, sweep, margin, t_kind, npoints, points, radius,
                curved_radius, half_height, bound_radius, swept, rot, lo, hi, moving, passive):
    """A pass's boxes and who moves, in one call: every body's rotation rot and world box
    lo, hi (collision.bounds.body_bounds; all but static bodies swept over ``sweep``
    seconds, swept (N,) being that flag), the bodies that wake sleepers (moving,
    dynamics.sleep.moving_bodies) and the broadphase's passive bodies (passive_bodies)."""
    for b in range(kind.shape[0]):
        swept[b] = kind[b] != static
    body_bounds(sid, q, pos, com, vel, swept, sweep, margin, t_kind, npoints, points, radius,
                curved_radius, half_height, bound_radius, rot, lo, hi)
    moving_bodies(kind, sleeping, vel, own_lin, own_ang, lin_tol, ang_tol, moving)
    passive_bodies(kind, sleeping, moving, static, kinematic, passive)


@kernel(refcount=False)
def passive_bodies(kind, sleeping, moving, static, kinematic, passive):
    """passive (N,): the bodies two of which never pair in the broadphase: static, kinematic
    or asleep, and not moving."""
    for b in range(kind.shape[0]):
        passive[b] = ((kind[b] == static or sleeping[b] or kind[b] == kinematic)
                      and not moving[b])


@kernel
def pair_inputs(ia, ib, poly, sid, bound_radius, com, x, pos, vel, spec, dt, ccd, margin):
    """Per candidate pair (ia, ib): its speculative margin into margin (spec, plus with ccd
    how far the surfaces can close over dt: collision.bounds.pair_margins). Returns how many
    pairs are of two bodies flagged in poly (N,) bool (World._convex_pairs)."""
    if ccd:
        pair_margins(ia, ib, sid, bound_radius, com, x, pos, vel, spec, dt, margin)
    else:
        for i in range(ia.shape[0]):
            margin[i] = spec
    count = 0
    for i in range(ia.shape[0]):
        if poly[ia[i]] and poly[ib[i]]:
            count += 1
    return count


@kernel
def body_reach(shape, shape_kind, bound_radius, com, reach, ball, axial):
    """Per body b: reach[b] = the bounding radius about its centre of mass (its shape's
    bounding radius about the origin + |com|), and its round flags (round_bodies.round_flags)."""
    for b in range(shape.shape[0]):
        s = shape[b]
        reach[b] = bound_radius[s] + math.sqrt(com[b, 0] * com[b, 0] + com[b, 1] * com[b, 1]
                                               + com[b, 2] * com[b, 2])
        round_flags(shape_kind[s], com, ball, axial, b)


@kernel
def pass_bodies(kind, sleeping, isotropic, dynamic, kinematic, shape, shape_kind, bound_radius,
                com, rot, inv_mass, inv_body, lin_damp, ang_damp, h, x, q, vel, slack,
                axes_s, lo_s, hi_s, done, awake, act, movers, gyro, reach, ball, axial,
                rolling, out_inv_mass, out_inv_i, box_axes, box_lo, box_hi, round_axes,
                lin_f, ang_f, saved_x, saved_q, saved_v, arm, start, allow):
    """Everything a collision pass needs per body, in one call (all outputs (N, ...) buffers,
    of which the index lists' first counts are used):

    - awake: awake dynamic bodies; act, movers, gyro: the awake dynamic bodies, those and the
      kinematic ones (the bodies the substeps move), the anisotropic awake ones;
    - reach, ball, axial: body_reach; rolling: axial and awake, round_axes their world Z
      axis (zero for the rest);
    - the ContactSolver's inverse mass and world inverse inertia R I^-1 R^T of the awake
      dynamic bodies (zero for the rest: the solver moves them not);
    - their arm boxes (arm_box._world_boxes; boxes_ok False: a shape has none yet);
    - per act body: the damping factors over h (integrate._damping_factors), the struck
      test's arm, speed at the start and allowance (struck.StruckBodies);
    - saved_x, saved_q, saved_v: the movers' starting state (guard.StateGuard).

    Returns (acts, movers, gyros, boxes_ok, any rolling)."""
    body_reach(shape, shape_kind, bound_radius, com, reach, ball, axial)
    n_act = 0
    n_mov = 0
    n_gyro = 0
    any_rolling = False
    for b in range(kind.shape[0]):
        aw = kind[b] == dynamic and not sleeping[b]
        awake[b] = aw
        if aw:
            act[n_act] = b
            n_act += 1
            if not isotropic[b]:
                gyro[n_gyro] = b
                n_gyro += 1
        if aw or kind[b] == kinematic:
            for i in range(3):
                saved_x[n_mov, i] = x[b, i]
            for i in range(4):
                saved_q[n_mov, i] = q[b, i]
            for i in range(6):
                saved_v[n_mov, i] = vel[b, i]
            movers[n_mov] = b
            n_mov += 1
        rolling[b] = axial[b] and aw
        any_rolling = any_rolling or rolling[b]
        for i in range(3):
            round_axes[b, i] = rot[b, i, 2] if rolling[b] else 0.0
        if not aw:
            out_inv_mass[b] = 0.0
            for i in range(3):
                for j in range(3):
                    out_inv_i[b, i, j] = 0.0
            continue
        out_inv_mass[b] = inv_mass[b]
        r, ib_ = rot[b], inv_body[b]
        for i in range(3):
            t0 = r[i, 0] * ib_[0, 0] + r[i, 1] * ib_[1, 0] + r[i, 2] * ib_[2, 0]
            t1 = r[i, 0] * ib_[0, 1] + r[i, 1] * ib_[1, 1] + r[i, 2] * ib_[2, 1]
            t2 = r[i, 0] * ib_[0, 2] + r[i, 1] * ib_[1, 2] + r[i, 2] * ib_[2, 2]
            for j in range(3):
                out_inv_i[b, i, j] = t0 * r[j, 0] + t1 * r[j, 1] + t2 * r[j, 2]
    for j in range(n_act):
        b = act[j]
        r = reach[b]
        arm[j] = 0.0 if ball[b] else r
        start[j] = (math.sqrt(vel[b, 0] * vel[b, 0] + vel[b, 1] * vel[b, 1] + vel[b, 2] * vel[b, 2])
                    + math.sqrt(vel[b, 3] * vel[b, 3] + vel[b, 4] * vel[b, 4]
                                + vel[b, 5] * vel[b, 5]) * arm[j])
        allow[j] = slack + REACH_SHARE * r
    _damping_factors(lin_damp, ang_damp, act[:n_act], h, lin_f, ang_f)
    boxes_ok = _world_boxes(shape, kind, rot, axes_s, lo_s, hi_s, done, box_axes, box_lo,
                            box_hi)
    return n_act, n_mov, n_gyro, boxes_ok, any_rolling


@kernel
def manifold_inputs(ia, ib, normal, awake, gravity, friction, restitution, accel_n, mu, e):
    """Per manifold (ia, ib, normal): the normal acceleration gravity gives the pair (only
    awake bodies fall) and the mixed friction and restitution (Blender's products)."""
    for m in range(ia.shape[0]):
        a, b = ia[m], ib[m]
        acc = 0.0
        for k in range(3):
            acc += ((gravity[k] if awake[b] else 0.0) - (gravity[k] if awake[a] else 0.0)) \
                * normal[m, k]
        accel_n[m] = acc
        mu[m] = friction[a] * friction[b]
        e[m] = restitution[a] * restitution[b]


@kernel
def contact_setup(t_keys, t_sub, t_ids, t_count, t_normal, t_friction, keys, ia, ib, sub,
                  normal, points, separation, count, ids, awake, gravity, friction,
                  restitution, visit, x_com, inv_mass, inv_i, box_axes, box_lo, box_hi, reach,
                  round_axes, vel, h, poly, rows):
    """A pass's contact solver set-up, in one call (World._solve): the warm-start impulses
    the pair table (t_...) holds for the manifolds (keys, sub, ids, count: its match_rows),
    gravity along their normals and their mixed coefficients (manifold_inputs), the sweep
    order (dynamics.graph.sweep_order, visit its hash order, with the polytope pairs -- both
    bodies flagged in poly (N,) -- supports first: engine.world.sweep), and the solver's rows
    in that order (dynamics.contact_kernels.prepare into rows: ContactSolver.prepared()). Returns
    the sweep order."""
    m = ia.shape[0]
    warm_n = np.zeros((m, 4))
    warm_f = np.zeros((m, 4, 3))
    if m and t_keys.shape[0]:
        match_rows(t_keys, t_sub, t_ids, t_count, t_normal, t_friction, keys, sub, ids, count,
                   warm_n, warm_f, np.zeros((m, 4), dtype=np.bool_))
    accel_n = np.empty(m)
    mu = np.empty(m)
    e = np.empty(m)
    manifold_inputs(ia, ib, normal, awake, gravity, friction, restitution, accel_n, mu, e)
    order = sweep_order(ia, ib, awake, visit)
    supports_first(order, poly, ia, ib, normal, points, count, gravity)
    (idx, cnt, fr, rest, acc, ima, imb, axa, axb, dirs, ra, rb, jang, mang, kmat, eff, kp, imp,
     sep0, v_impact) = rows
    prepare(order, ia, ib, normal, points, separation, count, mu, e, accel_n, inv_mass, x_com,
            box_axes, box_lo, box_hi, reach, inv_i, round_axes, vel, warm_n, warm_f, h, idx,
            cnt, fr, rest, acc, ima, imb, axa, axb, dirs, ra, rb, jang, mang, kmat, eff, kp,
            imp, sep0, v_impact)
    return order


@kernel
def finite_or_zero(imp_n, imp_f, imp_f2):
    """The impulses with non-finite entries set to 0, in place (what warm starting would
    carry into the next step: engine.world.guard)."""
    for i in range(imp_n.shape[0]):
        for p in range(4):
            if not math.isfinite(imp_n[i, p]):
                imp_n[i, p] = 0.0
            for c in range(3):
                if not math.isfinite(imp_f[i, p, c]):
                    imp_f[i, p, c] = 0.0
            for c in range(2):
                if not math.isfinite(imp_f2[i, p, c]):
                    imp_f2[i, p, c] = 0.0


@kernel
def calm_awake(vel, kind, sleeping, static, lin2, ang2):
    """Whether every awake non-static body moves less than lin2 (|v|^2) and turns less than
    ang2 (|w|^2) (World._reuse_mode's test)."""
    for b in range(vel.shape[0]):
        if kind[b] == static or sleeping[b]:
            continue
        if (vel[b, 0] * vel[b, 0] + vel[b, 1] * vel[b, 1] + vel[b, 2] * vel[b, 2] >= lin2
                or vel[b, 3] * vel[b, 3] + vel[b, 4] * vel[b, 4] + vel[b, 5] * vel[b, 5]
                >= ang2):
            return False
    return True
