"""Soft-step contact solver (the Box2D v3 / Solver2D "soft step" scheme), batched with numpy.

Per step the world calls, in order::

    s = ContactSolver(...)            # prepare: everything constant over the step
    for each substep h:
        integrate velocities          # (integrate.py)
        s.warm_start(vel)
        s.solve(vel, dpose, True)     # soft contacts with position bias
        integrate positions; dpose += h * vel
        s.solve(vel, dpose, False)    # relax: remove the bias velocity (touching points only)
    s.restitution(vel)
    impulses = s.impulses()           # stored in the pair table for warm starting

Layout. Every contact point carries three scalar constraints (normal, tangent 1, tangent 2). A
constraint row acts on the 12 velocity components [v_a, w_a, v_b, w_b] of its two bodies, so a
row is a (12,) Jacobian J and a (12,) "M^-1 J^T" vector MJ: the velocity change per unit
impulse. Rows are stored as (4 point slots, 3 directions, M manifolds, 12) with the manifolds
sorted by graph colour, so colour c is one contiguous slice and every per-point operation is a
handful of numpy calls on an (m, 12) block: gather the colour's body velocities once, sweep the
4 point slots (Gauss-Seidel inside a manifold), scatter once. Within a colour no dynamic body
appears twice, so the scatter is conflict free; static, kinematic and sleeping bodies have a
zero MJ and are written back unchanged. The colour loop itself is engine/solver_sweep.py.

Current separation inside the substeps is the separation from collision detection plus the
relative motion of the anchors along the normal, linearised: s = s0 + J_n . dpose, where dpose
holds each body's displacement and accumulated rotation vector since the step began. Collision
detection runs once per step.

Softness (Box2D v3): contact hertz = min(contact_hertz, substep rate / 4), damping ratio 10,
push-out speed capped at ``max_push``. A soft contact is a spring of that frequency on the
contact's effective mass: its steady state is lambda = m_eff h w^2 (-s), so a stack compresses by
load / (m_eff w^2) whatever the substep rate. The stiffness is bounded by the substep rate (above
rate / 4 the 210-box pyramid walks sideways by several cm), so the substep rate is set by the sag
a tall stack may show. Measured with
``bench/bench_world_quick.py --pyramid --hertz H --max-substep 1/R`` (largest drift, 1 cm
allowed): R = 360 Hz, H = 90 Hz 3.9 mm; 240 Hz / 60 Hz 8.7-9.5 mm of sag alone, plus 3-7 mm of
sideways drift that changes from run to run with any change in round-off (too close to the limit
to be the default); 192 Hz / 48 Hz sags 14.6 mm; 192-240 Hz / 60-80 Hz walks 37-66 mm. Leaking
only the impulse gained within the substep (an integral term: no steady sag) was tried and made
the pyramid walk sideways.
A point that is still apart (s > 0) is a speculative constraint with bias s/h: it lets the
bodies close exactly the gap in this substep and no more, which is what stops fast bodies at
the surface. The biased pass alone applies it, not relax: a relax sweep runs after the positions
moved and before the next substep's gravity, so a speculative clamp there brakes a body that
will not touch in this collision pass (the next pass sees the gap again) and, being an impulse,
made ``restitution`` bounce it in mid-air, up to a substep's travel above the ground (an e = 1
ball dropped from 1 m came back to 1.0135 m at 4 substeps per 1/60 s step).

Restitution. Collision runs once per frame, so at 1/24 s the approach speed seen at the start of
the step can be off by g*dt from the speed at impact. We compute the impact speed instead: under
the relative normal acceleration a (gravity of the two bodies along n) the semi-implicit Euler
positions lie exactly on the parabola whose velocity at a position sample is v + a h / 2, so a
point at separation s0 > 0 with normal velocity v0 hits at
    v_impact = -sqrt((v0 + a h/2)^2 - 2 a s0).
The restitution pass then sets the normal velocity so that the next parabola leaves the surface
at -e * v_impact: target = -e v_impact - a h / 2. A dropped ball thus rebounds to e^2 of its drop
height up to the frame sampling, at any frame rate, and e = 1 neither gains nor loses energy.
"""
import math

import numpy as np

from . import solver_sweep
from .arm_box import clamp_to_box
from .solver_sweep import RETRY_AFTER  # noqa: F401  (documented with solve)
from .solver_sweep import scatter_add as _scatter_add
from .vec import cross, norm

# Separation given to unused point slots: finite (inf * 0 would be NaN) and far apart.
UNUSED_SEPARATION = 1.0e3


def soft_params(hertz, damping_ratio, h):
    """(bias_rate, mass_scale, impulse_scale) of a soft constraint (Catto, Solver2D)."""
    if hertz <= 0.0:
        return 0.0, 1.0, 0.0
    omega = 2.0 * math.pi * hertz
    a1 = 2.0 * damping_ratio + h * omega
    a2 = h * omega * a1
    a3 = 1.0 / (1.0 + a2)
    return omega / a1, a2 * a3, a3


def tangent_basis(n):
    """Two unit tangents (M, 3) orthogonal to unit normals n (M, 3), a continuous function of n
    away from the switch between the helper axes, so warm-start impulses project consistently."""
    use_x = np.abs(n[:, 0]) < 0.57735
    helper = np.zeros_like(n)
    helper[use_x, 0] = 1.0
    helper[~use_x, 1] = 1.0
    t1 = cross(n, helper)
    t1 /= norm(t1, axis=1, keepdims=True)
    t2 = cross(n, t1)
    return t1, t2


# Row layout of one manifold: 4 normal rows (one per point slot), then the two tangent rows of
# each point. ROW_POINT / ROW_DIR say which (point slot, direction) a row is.
ROWS = 12
ROW_POINT = np.array([0, 1, 2, 3, 0, 0, 1, 1, 2, 2, 3, 3])
ROW_DIR = np.array([0, 0, 0, 0, 1, 2, 1, 2, 1, 2, 1, 2])


def _tangent_row(p):
    """First of the two tangent rows of point slot p."""
    return 4 + 2 * p


class ContactSolver:
    """Constraints of one step. All arrays are per manifold, in any order; ``order`` and
    ``colour_offsets`` (from graph colouring) say how to batch them.

    ia, ib (M,) body indices; normal (M, 3) from a to b; points (M, 4, 3) world contact points;
    separation (M, 4) (> 0 apart); count (M,) used slots; friction, restitution (M,) combined
    coefficients; x_com (N, 3) centres of mass; inv_mass (N,) and inv_inertia (N, 3, 3) world
    inverse inertia, zero for every body the solver must not move (static, kinematic, asleep);
    vel (N, 6) velocities; accel_n (M,) relative normal acceleration from gravity; warm_normal
    (M, 4) and warm_friction (M, 4, 3) (world vector) impulses carried over from the last step;
    h the substep (s); settings the world's WorldSettings (contact_hertz, damping_ratio,
    max_push: the solver has no defaults of its own).

    Impulse space. The Gauss-Seidel sweep over a manifold's 12 rows only ever needs the row
    velocities u = J v, and an impulse d on row r changes them by K[:, r] d, where
    K = J M^-1 J^T is the manifold's (12, 12) Delassus matrix (constant over the step). So a
    colour gathers its body velocities once, maps them to u with one batched product, runs the
    whole sweep on (12, m) row arrays (each stage a few cheap calls on (m,) vectors instead of
    12-wide dot products), and maps the impulse change back with one more product. This is the
    same arithmetic as a sweep in velocity space, reordered; numpy call overhead and memory
    traffic per stage drop several-fold.

    Products are np.einsum, never np.matmul: matmul goes through BLAS, whose kernels can sum
    in a different order depending on memory alignment, and that broke bit-identical replays
    (tests/test_world_determinism.py) inside a long-running process.
    """

    # False forces the sequential sweeps everywhere (the reference the one-product sweeps must
    # reproduce up to round-off; bench/profile_world.py --check compares the two).
    one_product_sweeps = True
    # Colours that provably change nothing in a sweep (no impulse, no row that would take
    # one: engine.solver_sweep._inert) are passed over. False sweeps every colour: the
    # arithmetic of tests/solver_reference.py bit for bit (the skip can differ from it by
    # round-off of a block step that is zero in exact arithmetic, and by when a colour next
    # tries its one-product sweeps).
    skip_inert_colours = True

    def __init__(self, ia, ib, normal, points, separation, count, friction, restitution,
                 x_com, inv_mass, inv_inertia, vel, accel_n, warm_normal, warm_friction,
                 order, colour_offsets, h, settings, overflow=False, reach=None, box=None,
                 round_axes=None):
        # overflow: the last colour may share dynamic bodies (graph.colour_constraints ran out
        # of colours); it is applied Jacobi-style with scatter-adds instead of assignment.
        self.overflow = bool(overflow)
        self.order = order = np.asarray(order, dtype=np.int64)
        self.offsets = [int(o) for o in colour_offsets]
        m = len(order)
        self.m = m
        self.h = h
        # Contact stiffness is capped at a quarter of the substep rate: stiffer, a stack walks
        # sideways (see the module docstring).
        hz = min(settings.contact_hertz, 0.25 / h)
        self.bias_rate, self.mass_scale, self.impulse_scale = soft_params(
            hz, settings.damping_ratio, h)
        self.max_push = settings.max_push
        if m == 0:
            # Nothing to prepare (a free-flying scene runs this every pass): just the empty
            # arrays the passes and impulses() read.
            self.idx = np.zeros((0, 2), dtype=np.int64)
            self.max_count = []
            self.imp = np.zeros((ROWS, 0))
            self.max_normal = np.zeros((4, 0))
            self.dirs = np.zeros((0, 3, 3))
            return

        ia = ia[order]
        ib = ib[order]
        n = normal[order]
        pts = points[order]
        sep = separation[order]
        slot = np.arange(4)
        valid = slot[None, :] < count[order][:, None]  # (m, 4)
        self.idx = np.stack((ia, ib), axis=1)  # (m, 2)
        cnt = count[order]
        # Largest point count per colour (a loop over the few colours, not over contacts).
        self.max_count = [int(cnt[a:b].max()) if b > a else 0
                          for a, b in zip(self.offsets[:-1], self.offsets[1:])]
        # Solve passes each colour waits before trying the one-product sweeps again.
        self._wait_normal = [0] * len(self.max_count)
        self._wait_friction = [0] * len(self.max_count)
        self.friction = friction[order]
        self.restitution_coef = restitution[order]

        t1, t2 = tangent_basis(n)
        dirs = np.stack((n, t1, t2), axis=1)  # (m, 3, 3)
        # Unused slots' points are never read (a NaN there would survive a multiply by 0).
        pts = np.where(valid[..., None], pts, 0.0)
        ra = pts - x_com[ia][:, None, :]  # (m, 4, 3)
        rb = pts - x_com[ib][:, None, :]
        if box is not None:   # (axes, lo, hi) per body: engine.arm_box
            axes, lo, hi = box
            ra = clamp_to_box(ra, axes[ia], lo[ia], hi[ia])
            rb = clamp_to_box(rb, axes[ib], lo[ib], hi[ib])
        if reach is not None:
            ra, rb = _clamp_arm(ra, reach[ia]), _clamp_arm(rb, reach[ib])
        self.dirs = dirs
        self._arms = [ra, rb, valid, inv_mass[ia], inv_mass[ib]]  # see refresh_inertia
        # Axes of round bodies (engine.round_bodies), zero elsewhere: None without any.
        self.axes = None if round_axes is None else [round_axes[ia], round_axes[ib]]
        (self.jr, self.mjr, self.kmat, self.eff, self.jn, self.k_pinv, self.sweep_relax,
         self.sweep_friction) = _rows(ra, rb, dirs, valid, inv_mass[ia], inv_mass[ib],
                                      inv_inertia[ia], inv_inertia[ib], self.axes)
        self.sep0 = np.ascontiguousarray(np.where(valid, sep, UNUSED_SEPARATION).T)  # (4, m)

        # Warm start impulses: normal as is, friction projected on this step's tangents.
        wn = warm_normal[order]
        wf = warm_friction[order]
        imp = np.zeros((ROWS, m))
        imp[:4] = np.where(valid, wn, 0.0).T
        imp[4::2] = np.where(valid, np.einsum("mpi,mi->mp", wf, t1), 0.0).T
        imp[5::2] = np.where(valid, np.einsum("mpi,mi->mp", wf, t2), 0.0).T
        # Friction impulses must start inside the cone of the carried normal impulse.
        lim = self.friction[None, :] * imp[:4]
        mag = np.hypot(imp[4::2], imp[5::2])
        scale = np.where(mag > lim, lim / np.where(mag > 0, mag, 1.0), 1.0)
        imp[4::2] *= scale
        imp[5::2] *= scale
        self.imp = imp
        self.max_normal = np.zeros((4, m))
        self._bias_spec = self._bias_coef = None  # see solve
        self._relax_skip = self._relax_coef = None
        # Relax gains without speculative rows; a new view object whenever eff changes, as
        # solver_sweep keeps per-colour answers by the gain array's identity.
        self._eff_n = self.eff[:4]
        self._colours = None  # engine.solver_sweep.Colour records, made by the first solve

        # Impact speed for restitution (see module docstring).
        self.accel_n = accel_n[order]
        self.v_impact = self._impact_speeds(self.jn, vel[self.idx].reshape(m, 12),
                                            self.accel_n, self.sep0)

    def refresh_inertia(self, bodies, turn, inv_inertia, dpose):
        """Take the rows of the manifolds touching ``bodies`` (K,) again for those bodies'
        present orientation: their lever arms turned by ``turn`` (K, 3, 3), the rotation since
        the rows were built, their world inverse inertia from ``inv_inertia`` (N, 3, 3). The
        impulses are kept, and so is each point's current separation (sep0 is rebased on the
        new normal rows, dpose (N, 6) being the displacements so far in the pass).

        Why. The world inverse inertia R I^-1 R^T is taken at the start of a pass, but a body
        hit into a fast spin turns a long way within the pass; the solver then gives it
        velocity changes for the orientation it had, and measured with the orientation it has,
        those are energy from nowhere, up to the ratio of its principal inertias per impulse
        (a 0.27 x 0.02 m, 0.78 kg plate hit at a corner by a 74 kg ball at 100 m/s: 8.7e3
        rad/s and 1.7e5 J, where the ball lost 5.7e3 J; issue 11, fuzzer seeds 549, 320, 327).
        The arms turn with the body so that each row stays a point of the body: a fresh
        tensor with world-fixed arms is no rigid body either (the point drifts off a needle's
        axis as it turns, and its torque about that axis pumped a spinning needle up). The
        world calls this after a substep for the anisotropic bodies that turned more than
        engine.inertia_refresh.REFRESH_ANGLE."""
        if self.m == 0 or not len(bodies):
            return
        slot = np.full(len(inv_inertia), -1, dtype=np.int64)
        slot[bodies] = np.arange(len(bodies))
        sa, sb = slot[self.idx[:, 0]], slot[self.idx[:, 1]]
        rows = np.flatnonzero((sa >= 0) | (sb >= 0))
        if not len(rows):
            return
        ra, rb, valid, ima, imb = self._arms
        eye = np.eye(3)
        ta = np.where((sa[rows] >= 0)[:, None, None], turn[sa[rows]], eye)
        tb = np.where((sb[rows] >= 0)[:, None, None], turn[sb[rows]], eye)
        ra[rows] = np.einsum("mij,mpj->mpi", ta, ra[rows])
        rb[rows] = np.einsum("mij,mpj->mpi", tb, rb[rows])
        axes = None
        if self.axes is not None:   # round bodies' axes turn with them
            axa, axb = self.axes
            axa[rows] = np.einsum("mij,mj->mi", ta, axa[rows])
            axb[rows] = np.einsum("mij,mj->mi", tb, axb[rows])
            axes = [axa[rows], axb[rows]]
        dp = dpose[self.idx[rows]].reshape(len(rows), 12)
        sep_now = self.sep0[:, rows] + np.einsum("pmk,mk->pm", self.jn[:, rows], dp)
        ia, ib = self.idx[rows, 0], self.idx[rows, 1]
        jr, mjr, kmat, eff, jn, k_pinv, sw_relax, sw_fric = _rows(
            ra[rows], rb[rows], self.dirs[rows], valid[rows], ima[rows], imb[rows],
            inv_inertia[ia], inv_inertia[ib], axes)
        self.jr[rows] = jr
        self.jn[:, rows] = jn
        self.sep0[:, rows] = np.where(valid[rows].T, sep_now - np.einsum("pmk,mk->pm", jn, dp),
                                      UNUSED_SEPARATION)
        self.mjr[rows] = mjr
        self.kmat[:, :, rows] = kmat
        self.eff[:, rows] = eff
        self.k_pinv[:, :, rows] = k_pinv
        self.sweep_relax[:, :, rows] = sw_relax
        self.sweep_friction[:, :, rows] = sw_fric
        # The soft coefficients read eff: rebuild them. (The colour views of solver_sweep
        # alias the arrays updated in place above and stay valid.)
        self._reset_coefficients()

    def replace(self, rows, fresh, x_com, inv_inertia, box, reach, vel, dpose):
        """Manifolds ``rows`` (K,) (caller order) taken again from the narrowphase between two
        substeps (engine.recollide): ``fresh`` holds their new normal (K, 3), points
        (K, 4, 3), separation now (K, 4), count (K,), the new and old point ids (K, 4),
        ``ids`` and ``old_ids``, and accel_n (K,) (see __init__). x_com (N, 3) the centres of
        mass now, inv_inertia (N, 3, 3) the world inverse inertia the solver uses now, box
        and reach as in __init__ for the present orientations, vel (N, 6), dpose (N, 6) the
        pass's displacements so far.

        A point that keeps its feature id keeps its accumulated impulses (the friction one
        as a world vector, on the new tangents), its largest normal impulse and, once
        touching, its impact speed for restitution; the others start from zero and a fresh
        impact speed. Separations are rebased like refresh_inertia's."""
        if not len(rows):
            return
        inv = np.empty(self.m, dtype=np.int64)
        inv[self.order] = np.arange(self.m)
        r = inv[rows]
        ia, ib = self.idx[r, 0], self.idx[r, 1]
        valid = np.arange(4)[None, :] < fresh["count"][:, None]
        n = fresh["normal"]
        t1, t2 = tangent_basis(n)
        dirs = np.stack((n, t1, t2), axis=1)
        pts = np.where(valid[..., None], fresh["points"], 0.0)
        ra = pts - x_com[ia][:, None, :]
        rb = pts - x_com[ib][:, None, :]
        if box is not None:
            axes, lo, hi = box
            ra = clamp_to_box(ra, axes[ia], lo[ia], hi[ia])
            rb = clamp_to_box(rb, axes[ib], lo[ib], hi[ib])
        if reach is not None:
            ra, rb = _clamp_arm(ra, reach[ia]), _clamp_arm(rb, reach[ib])
        kept, imp, max_n, v_old = self._carried(r, fresh, valid, dirs)
        arm_a, arm_b, live, ima, imb = self._arms
        arm_a[r], arm_b[r], live[r] = ra, rb, valid
        self.dirs[r] = dirs
        axes_r = None if self.axes is None else [self.axes[0][r], self.axes[1][r]]
        jr, mjr, kmat, eff, jn, k_pinv, sw_relax, sw_fric = _rows(
            ra, rb, dirs, valid, ima[r], imb[r], inv_inertia[ia], inv_inertia[ib], axes_r)
        self.jr[r], self.mjr[r], self.jn[:, r] = jr, mjr, jn
        self.kmat[:, :, r], self.eff[:, r], self.k_pinv[:, :, r] = kmat, eff, k_pinv
        self.sweep_relax[:, :, r], self.sweep_friction[:, :, r] = sw_relax, sw_fric
        sep_now = np.where(valid, fresh["separation"], UNUSED_SEPARATION).T   # (4, K)
        dp = dpose[self.idx[r]].reshape(len(r), 12)
        self.sep0[:, r] = np.where(valid.T, sep_now - np.einsum("pmk,mk->pm", jn, dp),
                                   UNUSED_SEPARATION)
        self.imp[:, r] = imp
        self.max_normal[:, r] = max_n
        # Impact speeds: a kept point already touching keeps the one it hit with.
        v_new = self._impact_speeds(jn, vel[self.idx[r]].reshape(len(r), 12),
                                    fresh["accel_n"], sep_now)
        self.v_impact[:, r] = np.where(kept.T & (sep_now <= 0.0), v_old, v_new)
        self.accel_n[r] = fresh["accel_n"]
        self._reset_coefficients()
        for ci, (c0, c1) in enumerate(zip(self.offsets[:-1], self.offsets[1:])):
            most = int(fresh["count"][(r >= c0) & (r < c1)].max(initial=0))
            if most > self.max_count[ci]:
                self.max_count[ci] = most
                self._colours = None        # its slot views are rebuilt at the next solve

    def _carried(self, r, fresh, valid, dirs):
        """What the points of the solver's manifolds r keep through replace, matched by
        feature id as the pair table matches them: (kept (K, 4), impulses (12, K) on the new
        directions dirs (K, 3, 3), clamped into the friction cone, largest normal impulses
        (4, K), old impact speeds (4, K))."""
        live = self._arms[2][r]
        same = ((fresh["ids"][:, :, None] == fresh["old_ids"][:, None, :])
                & valid[:, :, None] & live[:, None, :])
        kept, src = same.any(axis=2), same.argmax(axis=2)       # (K, 4)
        old = self.imp[:, r]
        told = self.dirs[r, 1:]
        f_old = (old[4::2].T[..., None] * told[:, None, 0] + old[5::2].T[..., None]
                 * told[:, None, 1])                              # (K, 4, 3) world vectors
        pick = np.take_along_axis
        wf = np.where(kept[..., None], pick(f_old, src[..., None], axis=1), 0.0)
        imp = np.zeros((ROWS, len(r)))
        imp[:4] = np.where(kept, pick(old[:4].T, src, axis=1), 0.0).T
        imp[4::2] = np.einsum("kpi,ki->kp", wf, dirs[:, 1]).T
        imp[5::2] = np.einsum("kpi,ki->kp", wf, dirs[:, 2]).T
        lim = self.friction[r][None, :] * imp[:4]
        mag = np.hypot(imp[4::2], imp[5::2])
        scale = np.where(mag > lim, lim / np.where(mag > 0, mag, 1.0), 1.0)
        imp[4::2] *= scale
        imp[5::2] *= scale
        max_n = np.where(kept, pick(self.max_normal[:, r].T, src, axis=1), 0.0).T
        return kept, imp, max_n, pick(self.v_impact[:, r].T, src, axis=1).T

    def _impact_speeds(self, jn, vab, a, sep):
        """Impact speeds (4, K) (see the module docstring) of normal rows jn (4, K, 12) at
        pair velocities vab (K, 12), relative normal accelerations a (K,), separations sep
        (4, K)."""
        vn0 = np.einsum("pmk,mk->pm", jn, vab)
        c0 = vn0 + 0.5 * a[None, :] * self.h
        ballistic = -np.sqrt(np.maximum(c0 * c0 - 2.0 * a[None, :] * sep, 0.0))
        return np.where(sep > 0.0, ballistic, np.minimum(c0, vn0))

    def _reset_coefficients(self):
        """Forget the soft coefficients and sweep operators derived from eff and K (after
        rows were rebuilt in place; solver_sweep's colour views alias those arrays)."""
        self._bias_spec = self._bias_coef = self._relax_skip = self._relax_coef = None
        self._eff_n = self.eff[:4]

    # -- passes ---------------------------------------------------------------------------
    def warm_start(self, vel):
        """Apply the accumulated impulses to the velocities (all manifolds at once)."""
        if self.m == 0:
            return
        dv = np.einsum("rm,mrk->mk", self.imp, self.mjr)
        _scatter_add(vel, self.idx, dv)

    def _bias_coefficients(self, spec):
        """(mscale, iscale, a_n, keep, sweep_n) of the biased pass's normal rows, for the
        points apart (spec, (4, m)). They depend on which points are apart only, which rarely
        changes between substeps: the last set (and its sweep operator) is reused while it
        holds."""
        if not solver_sweep.same(spec, self._bias_spec):
            mscale = np.where(spec, 1.0, self.mass_scale)
            iscale = np.where(spec, 0.0, self.impulse_scale)
            a_n = self.eff[:4] * mscale
            self._bias_spec = spec
            self._bias_coef = (mscale, iscale, a_n, 1.0 - iscale,
                               _normal_sweep_operator(a_n, self.kmat[:4, :4]))
        assert self._bias_coef is not None
        return self._bias_coef

    def solve(self, vel, dpose, use_bias):
        """One Gauss-Seidel sweep over the colours. use_bias: the soft pass (True) or relax.
        dpose (N, 6): each body's displacement and rotation vector since the pass began.

        Per colour: gather its body velocities, map them to row velocities u = J v, a block
        normal step, the normal sweep, the friction sweep, map the impulse change back. The
        colour loop itself is engine.solver_sweep.sweep (the same arithmetic with few numpy
        calls); what each stage does and why is said here.

        Block normal step (see prepare): taken only where no row needs clamping: a clamped
        block answer (the lifting edge of a tipping box asks for a pull) is far off, and the
        sequential sweep is the right tool there.

        The sequential sweep always runs after it: skipping it where the block step succeeded
        changed the soft response (the soft update is not idempotent) and cost energy
        conservation of bounces at e = 1. Unclamped, the sweep is linear: row p sets
          d_p = r_p - a_p sum_{q<p} K_pq d_q,  r = -a (u + bias) - (1 - keep) lam,
        i.e. d = (I + A L)^-1 r with L the strictly lower part of K. That operator is built
        once per pass for all manifolds, so a colour first tries the whole sweep in one product
        and keeps it if no row went negative (then every row of the sequential sweep would have
        been unclamped and given the same d); otherwise it runs the sequential sweep with its
        per-row clamping (normal: soft non-penetration with accumulated-impulse clamping). A
        colour whose attempt failed (tipping or lifting boxes clamp every pass) skips the next
        RETRY_AFTER attempts, so scenes that always clamp pay little for trying. Slots beyond
        the colour's largest point count are empty and skipped.

        Friction sweep, the same way: unclamped it is f = old - F u with the operator F of
        prepare (constant over the step); taken where every point stays inside its disc (then
        no row of the sequential sweep would have been clamped); otherwise Coulomb friction
        point by point, the two tangents clamped together to the disc mu * Pn."""
        m = self.m
        if m == 0:
            return
        if self._colours is None:
            self._colours = solver_sweep.colours(self)
        inv_h = 1.0 / self.h
        dp = dpose.take(self.idx.reshape(-1), axis=0).reshape(m, 12)
        sep = self.sep0 + solver_sweep.einsum("pmk,mk->pm", self.jn, dp)  # (4, m)
        spec = sep > 0.0
        eff_n = self.eff[:4]
        # Per normal row, the soft update is new = max(keep * old - a * (u + bias), 0): one
        # set of (4, m) coefficients per sweep, so the colour loop does no per-row set-up.
        coef: tuple  # (use_bias, bias, ab, a_n, mscale, iscale, keep, sweep_n, skip_m)
        if use_bias:
            bias = np.where(spec, sep * inv_h, np.maximum(self.bias_rate * sep, -self.max_push))
            mscale, iscale, a_n, keep, sweep_n = self._bias_coefficients(spec)
            coef = (True, bias, a_n * bias, a_n, mscale, iscale, keep, sweep_n, None)
        else:
            # Relax solves touching points only: speculative ones (s > 0) keep their impulse
            # (see the module docstring). Their rows get a zero gain and skip the block step.
            # Which rows those are rarely changes between sweeps: the operator is kept while
            # the pattern holds.
            skip = spec & (eff_n > 0.0)
            if not solver_sweep.count(skip):
                coef = (False, None, None, self._eff_n, None, None, None, self.sweep_relax,
                        None)
            else:
                if not solver_sweep.same(skip, self._relax_skip):
                    a_n = np.where(skip, 0.0, eff_n)
                    self._relax_skip = skip
                    self._relax_coef = (skip.any(axis=0), a_n,
                                        _normal_sweep_operator(a_n, self.kmat[:4, :4]))
                assert self._relax_coef is not None
                skip_m, a_n, sweep_n = self._relax_coef
                coef = (False, None, None, a_n, None, None, None, sweep_n, skip_m)
        solver_sweep.sweep(self, self._colours, vel, coef)

    def restitution(self, vel, threshold=1.0):
        """After the substeps: make closing points leave at -e * (impact speed)."""
        if self.m == 0:
            return
        e = self.restitution_coef
        want = (self.v_impact < -threshold) & (self.max_normal > 0.0) & (e[None, :] > 0.0)
        if not want.any():
            return
        target = -e[None, :] * self.v_impact - 0.5 * self.accel_n[None, :] * self.h
        jn, eff, imp, kmat = self.jn, self.eff, self.imp, self.kmat
        for c0, c1 in zip(self.offsets[:-1], self.offsets[1:]):
            if c1 <= c0 or not want[:, c0:c1].any():
                continue
            sl = slice(c0, c1)
            idx = self.idx[sl]
            v = vel[idx].reshape(c1 - c0, 12)
            # Simultaneous (block) restitution over the manifold's points: a sequential sweep
            # over-rotates a box hitting flat and can gain energy at e = 1. Points that do not
            # bounce keep their current normal velocity as the target.
            vn = np.einsum("pmk,mk->pm", jn[:, sl], v)
            w = want[:, sl]
            tgt = np.where(w, target[:, sl], vn)
            lam0 = imp[:4, sl].copy()
            dl = -np.einsum("pqm,qm->pm", self.k_pinv[:, :, sl], vn - tgt)
            new = np.where(w, lam0 + dl, lam0)
            # The block answer is used only where every point of the manifold bounces and
            # none needs a pull; elsewhere the sequential sweep below does the manifold.
            # Where a point does not bounce, the block answer's impulse on it is dropped, and
            # what is left solves nothing: with two nearly redundant points, one bouncing and
            # one not, it is a huge push on one (against a huge pull on the other), and that
            # push launched a 5 mm sphere at 540 m/s (issue 11, tests/test_robust_step.py).
            # A clamped block answer is as far off.
            unused = eff[:4, sl] == 0.0
            ok = (new >= 0.0).all(axis=0) & (w | unused).all(axis=0)
            new = np.where(ok, new, lam0)
            vn = vn + np.einsum("psm,pm->sm", kmat[:4, :4, sl], new - lam0)
            imp[:4, sl] = new
            # Where the block answer had to be clamped, finish with one sequential sweep.
            bad = ~ok
            if bad.any():
                for p in range(4):
                    wp = w[p] & bad
                    pn = imp[p, sl]
                    newp = np.maximum(pn - eff[p, sl] * (vn[p] - target[p, sl]), 0.0)
                    delta = np.where(wp, newp - pn, 0.0)
                    imp[p, sl] = pn + delta
                    vn += kmat[p, :4, sl] * delta
            dv = np.einsum("rm,mrk->mk", imp[:4, sl] - lam0, self.mjr[sl, :4])
            if self._shared(c1):
                _scatter_add(vel, idx, dv)
            else:
                vel[idx] = (v + dv).reshape(-1, 2, 6)

    def _shared(self, c1):
        return self.overflow and c1 == self.offsets[-1]

    # -- results --------------------------------------------------------------------------
    def impulses(self):
        """(normal (M, 4), friction world vectors (M, 4, 3), friction (M, 4, 2) along the
        tangents, tangents (M, 2, 3)) in the caller's original manifold order."""
        m = self.m
        inv = np.empty(m, dtype=np.int64)
        inv[self.order] = np.arange(m)
        normal = self.imp[:4].T[inv]
        fr = np.stack((self.imp[4::2].T, self.imp[5::2].T), axis=-1)[inv]  # (M, 4, 2)
        tang = self.dirs[inv, 1:]  # (M, 2, 3)
        fworld = fr[..., 0:1] * tang[:, None, 0, :] + fr[..., 1:2] * tang[:, None, 1, :]
        return normal, fworld, fr, tang


def _rows(ra, rb, dirs, valid, ima, imb, iia, iib, axes=None):
    """Rows of m manifolds from their lever arms ra, rb (m, 4, 3), directions dirs (m, 3, 3)
    (normal, tangents), used slots valid (m, 4), inverse masses ima, imb (m,) and world
    inverse inertias iia, iib (m, 3, 3): (jr, mjr, K, eff, jn, k_pinv, sweep_relax,
    sweep_friction) as ContactSolver keeps them (ContactSolver.__init__ and
    refresh_inertia). axes: None, or the (m, 3) axes of A and B that their normal rows must
    not read a turn about (zero where none: engine.round_bodies)."""
    # Rows in solver order (see ROWS): direction d and arms per row, d zero on unused
    # slots so every row built from it is zero there.
    live = valid[:, ROW_POINT]  # (m, 12)
    d = dirs[:, ROW_DIR] * live[..., None]  # (m, 12, 3)
    ra_x_d = cross(ra[:, ROW_POINT], d)  # angular Jacobian parts r x d
    rb_x_d = cross(rb[:, ROW_POINT], d)
    if axes is not None:
        # A round body's normal rows have no part along its axis (its surface does not
        # move as it rolls); arms held over a pass give them one once the axis has turned
        # (a spinning wheel's roll then reads as a normal velocity).
        for r_x_d, ax in zip((ra_x_d, rb_x_d), axes):
            r_x_d[:, :4] -= np.einsum("mri,mi->mr", r_x_d[:, :4], ax)[..., None] * ax[:, None]
    ia_ang = np.einsum("mij,mrj->mri", iia, ra_x_d)  # I_a^-1 (r_a x d)
    ib_ang = np.einsum("mij,mrj->mri", iib, rb_x_d)
    ima3, imb3 = ima[:, None, None], imb[:, None, None]
    # J = [-d, -ra x d, d, rb x d] per row; M^-1 J^T the same with the inverse masses.
    jr = np.concatenate((-d, -ra_x_d, d, rb_x_d), axis=-1)  # (m, 12 rows, 12)
    mjr = np.concatenate((-ima3 * d, -ia_ang, imb3 * d, ib_ang), axis=-1)
    # Delassus matrices K = J M^-1 J^T, (12, 12, m) so that K[r, :, colour] is a
    # contiguous (12, m) block. By parts: the angular part (r x d_r) . I^-1 (r x d_s) of
    # both bodies is one product over 6 terms, laid out with the manifolds last (einsum
    # runs several times faster along a contiguous last axis than over a 6-long one);
    # the directions of a manifold are orthonormal, so the linear part is
    # 1/m_a + 1/m_b exactly where two live rows share a direction.
    ang = np.concatenate((ra_x_d, rb_x_d), axis=-1).transpose(1, 2, 0)  # (12, 6, m)
    ang_m = np.concatenate((ia_ang, ib_ang), axis=-1).transpose(1, 2, 0)
    kt = np.einsum("rim,sim->rsm", np.ascontiguousarray(ang), np.ascontiguousarray(ang_m))
    livep = valid.T  # (4, m)
    lin = (livep[:, None, :] & livep[None, :, :]) * (ima + imb)
    kt[:4, :4] += lin           # normal rows: direction n
    kt[4::2, 4::2] += lin       # first tangents
    kt[5::2, 5::2] += lin       # second tangents
    kdiag = np.einsum("rrm->rm", kt)
    ok = kdiag > 1e-12
    eff = np.where(ok, 1.0 / np.where(ok, kdiag, 1.0), 0.0)  # (12, m)
    jn = np.ascontiguousarray(jr[:, :4].transpose(1, 0, 2))  # (4, m, 12) normal rows
    # Block normal solve: the 4 normal rows of a manifold solved together first, so a box
    # landing flat gets 4 equal impulses instead of a Gauss-Seidel cascade that tips it
    # (and lets friction turn the tip into sideways drift). Four coplanar points are
    # statically indeterminate (rank 3), hence the pseudo-inverse: the least-norm, i.e.
    # symmetric, split. Where it would need a negative (pulling) entry the block step is
    # skipped and the sequential sweep does the work.
    k_pinv = np.ascontiguousarray(
        _pinv_psd(kt[:4, :4].transpose(2, 0, 1)).transpose(1, 2, 0))
    # Sweeps as matrices (see solve): the strictly lower normal block of K, the relax
    # sweep's normal operator (its coefficients are constant over the step) and the
    # friction sweep's operator, pairs of tangent rows being updated together.
    return (jr, mjr, kt, eff, jn, k_pinv, _normal_sweep_operator(eff[:4], kt[:4, :4]),
            _friction_sweep_operator(eff[4:], kt[4:, 4:]))


def _clamp_arm(r, reach):
    """Lever arms r (m, 4, 3) shortened to at most the body's reach (m,) (bounding radius
    about its centre of mass). A contact point lies on the other body's surface; in a deep
    overlap of a big body and a small one it can be metres outside the small one, and its
    arm then gives the small body torques its own shape never could: a 27 g needle
    (smallest inertia 7e-8 kg m^2) 0.8 m from such a point was spun to 1e4 rad/s and
    flung at 3e5 m/s (issue 11, fuzzer seed 137). Points within reach are unchanged."""
    n = np.sqrt(np.einsum("mpi,mpi->mp", r, r))
    lim = reach[:, None]
    return r * np.where(n > lim, lim / np.where(n > lim, n, 1.0), 1.0)[..., None]


def _friction_sweep_operator(eff, k):
    """F = (I + E L)^-1 E (8, 8, m) for the friction sweep: E = diag(eff) (8, m), L the part of
    K (k: (8, 8, m)) strictly below the 2 x 2 diagonal blocks (a point's two tangents are
    updated together). Block forward substitution, block row p of N = (I + E L)^-1 being
    e_p - E_p sum_{q<p} K_pq N_q: twenty-odd calls on (2, 8, m) arrays, where the generic
    series costs two (8, 8, m) einsums."""
    n = np.zeros(k.shape)
    for p in range(4):
        rows = slice(2 * p, 2 * p + 2)
        if p:
            acc = np.zeros((2,) + k.shape[1:])
            for q in range(p):
                kpq = k[rows, 2 * q:2 * q + 2]  # (2, 2, m)
                acc += kpq[:, 0, None] * n[2 * q] + kpq[:, 1, None] * n[2 * q + 1]
            n[rows] = -eff[rows, None, :] * acc
        n[2 * p, 2 * p] = n[2 * p + 1, 2 * p + 1] = 1.0
    return n * eff[None, :, :]


def _normal_sweep_operator(a, k):
    """(I + A L)^-1 (4, 4, m) for the normal sweep: A = diag(a) (4, m), L the strictly lower
    part of K (k: (4, 4, m)). Forward substitution n_p = e_p - sum_{q<p} a_p K_pq n_q written
    out on (m,) vectors: a few dozen cheap calls, where the generic series costs two
    (4, 4, m) einsums per solve pass."""
    x10 = a[1] * k[1, 0]
    x20, x21 = a[2] * k[2, 0], a[2] * k[2, 1]
    x30, x31, x32 = a[3] * k[3, 0], a[3] * k[3, 1], a[3] * k[3, 2]
    out = np.zeros((4, 4, a.shape[1]))
    out[0, 0] = out[1, 1] = out[2, 2] = out[3, 3] = 1.0
    out[1, 0] = n10 = -x10
    out[2, 0] = n20 = -(x20 + x21 * n10)
    out[2, 1] = n21 = -x21
    out[3, 0] = -(x30 + x31 * n10 + x32 * n20)
    out[3, 1] = -(x31 + x32 * n21)
    out[3, 2] = -x32
    return out


def _pinv_psd(k, rtol=1e-9):
    """Pseudo-inverses of symmetric positive semi-definite matrices (..., n, n)."""
    if k.shape[0] == 0:
        return k.copy()
    e, vec = np.linalg.eigh(k)
    cut = rtol * e.max(axis=-1, keepdims=True)
    inv_e = np.where(e > cut, 1.0 / np.where(e > cut, e, 1.0), 0.0)
    return np.einsum("...ik,...k,...jk->...ij", vec, inv_e, vec)
