"""Soft-step contact solver (the Box2D v3 / Solver2D "soft step" scheme): rows prepared once per
collision pass and the per-substep passes, all in compiled kernels (contact_kernels.py).

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
impulse. A manifold has 12 rows (ROWS); every array is per manifold, manifold first, in the
order the passes sweep them (engine/dynamics/contact_kernels.py lists them). Static, kinematic and
sleeping bodies have a zero MJ: the passes never change their velocities.

The passes are plain sequential Gauss-Seidel over the manifolds, in a fixed order: the same
scene gives the same numbers. The world sweeps them in graph-colour order (engine.dynamics.graph): no
longer needed to batch conflict-free manifolds, but measured against the narrowphase's order
(bench/quality_figures.py) it stacks better: the 210-box pyramid drifts 3.8 / 3.9 mm at 1/24 /
1/60 s steps against 4.5 / 5.0 mm, and the rock pile's deepest penetration is 12.2 mm against
13.1 mm. A parallel solver would sweep the colours as they are.

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

from . import contact_kernels as kern

# Relax counts a point as still apart only beyond this separation (m). A point whose gap the
# biased pass closed sits at s = 0 up to the round-off of the displacements (~1e-18 m), and
# its sign then decided, corner by corner, which points of a box landing flat relax solved:
# two of four were left out, the block step with them, and the box tipped and walked 18 mm
# (tests/test_world_contacts.py). A nanometre is far above that round-off and far below
# anything visible.
RELAX_SLOP = 1e-9


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
    away from the switch between the helper axes, so warm-start impulses project consistently
    (the solver's own, engine.dynamics.contact_kernels._tangents)."""
    every = np.arange(len(n))
    dirs = np.empty((len(n), 3, 3))
    kern.set_directions(every, every, np.ascontiguousarray(n, dtype=float), dirs)
    return dirs[:, 1], dirs[:, 2]


# Row layout of one manifold: 4 normal rows (one per point slot), then the two tangent rows of
# each point (rows 4 + 2p and 5 + 2p for slot p).
ROWS = 12


class ContactSolver:
    """Constraints of one collision pass.

    ia, ib (M,) body indices; normal (M, 3) from a to b; points (M, 4, 3) world contact points;
    separation (M, 4) (> 0 apart); count (M,) used slots; friction, restitution (M,) combined
    coefficients; x_com (N, 3) centres of mass; inv_mass (N,) and inv_inertia (N, 3, 3) world
    inverse inertia, zero for every body the solver must not move (static, kinematic, asleep);
    vel (N, 6) velocities; accel_n (M,) relative normal acceleration from gravity; warm_normal
    (M, 4) and warm_friction (M, 4, 3) (world vector) impulses carried over from the last step;
    h the substep (s); settings the world's WorldSettings (contact_hertz, damping_ratio,
    max_push: the solver has no defaults of its own). order (M,): the order the passes sweep
    the manifolds in (None: as given); box and reach bound the lever arms (engine.dynamics.arm_box,
    engine.dynamics.contact_kernels.set_arms); round_axes (N, 3) the axes of round bodies
    (engine.dynamics.round_bodies) or None.

    The arrays the kernels read are attributes, in sweep order (engine/dynamics/contact_kernels.py
    says what each holds); impulses() answers in the caller's order.
    """

    def __init__(self, ia, ib, normal, points, separation, count, friction, restitution,
                 x_com, inv_mass, inv_inertia, vel, accel_n, warm_normal, warm_friction, h,
                 settings, order=None, reach=None, box=None, round_axes=None):
        m = len(ia)
        self._allocate(m, h, settings, round_axes is not None)
        self.order = order = (np.arange(m) if order is None
                              else _i64(order))
        if m == 0:
            return
        n = len(x_com)
        kern.prepare(order, _i64(ia), _i64(ib), _f64(normal), _f64(points), _f64(separation),
                     _i64(count), _f64(friction), _f64(restitution), _f64(accel_n),
                     _f64(inv_mass), _f64(x_com), *_bounds(n, box, reach), _f64(inv_inertia),
                     NO_AXES if round_axes is None else _f64(round_axes), _f64(vel),
                     _f64(warm_normal), _f64(warm_friction), float(h), *self.prepared())

    @classmethod
    def blank(cls, m, h, settings, round_axes):
        """A solver of m manifolds whose rows a caller's kernel prepares, by
        contact_kernels.prepare into prepared() (engine.world.pass_kernels.contact_setup:
        the world's pass, which also matches the pair table and colours the manifolds in
        that call); the caller sets ``order``. round_axes: whether some body is round about
        an axis (engine.dynamics.round_bodies)."""
        self = cls.__new__(cls)
        self._allocate(m, h, settings, round_axes)
        return self

    def _allocate(self, m, h, settings, round_axes):
        """The scalars of a pass and the arrays contact_kernels.prepare fills."""
        self.m = m
        self.h = h
        # Contact stiffness is capped at a quarter of the substep rate: stiffer, a stack walks
        # sideways (see the module docstring).
        hz = min(settings.contact_hertz, 0.25 / h)
        self.bias_rate, self.mass_scale, self.impulse_scale = soft_params(
            hz, settings.damping_ratio, h)
        self.max_push = settings.max_push
        self.soft = np.array([1.0 / h, self.bias_rate, self.mass_scale, self.impulse_scale,
                              self.max_push, RELAX_SLOP])
        self.work = np.empty((kern.SWEEP_WORK, ROWS))   # the sweeps' scratch
        self.idx = np.empty((m, 2), dtype=np.int64)
        self.count = np.empty(m, dtype=np.int64)
        self.friction, self.restitution_coef = np.empty(m), np.empty(m)
        self.accel_n, self.ima, self.imb = np.empty(m), np.empty(m), np.empty(m)
        # The axes of round bodies (engine.dynamics.round_bodies, zero elsewhere).
        self.round = round_axes
        self.axa, self.axb = np.empty((m, 3)), np.empty((m, 3))
        self.dirs = np.empty((m, 3, 3))
        self.ra, self.rb = np.empty((m, 4, 3)), np.empty((m, 4, 3))
        self.jang, self.mang = np.empty((m, ROWS, 6)), np.empty((m, ROWS, 6))
        self.kmat = np.empty((m, ROWS, ROWS))
        self.eff, self.k_pinv = np.empty((m, ROWS)), np.empty((m, 4, 4))
        # Warm start impulses (normal as is, friction projected on this step's tangents),
        # separations, impact speeds for restitution (see module docstring): all in one call.
        self.imp = np.empty((m, ROWS))
        self.sep0 = np.empty((m, 4))
        self.v_impact = np.empty((m, 4))
        self.max_normal = np.zeros((m, 4))

    def prepared(self):
        """The arrays contact_kernels.prepare fills, in its order."""
        return (self.idx, self.count, self.friction, self.restitution_coef, self.accel_n,
                self.ima, self.imb, self.axa, self.axb, self.dirs, self.ra, self.rb, self.jang,
                self.mang, self.kmat, self.eff, self.k_pinv, self.imp, self.sep0,
                self.v_impact)

    def _build(self, rows, inv_inertia):
        """Rows, Delassus matrices and pseudo-inverses of the manifolds rows (sweep order)
        from their arms and directions, with the world inverse inertia (N, 3, 3) now."""
        kern.build_rows(rows, self.idx, self.count, self.ra, self.rb, self.dirs, self.ima,
                        self.imb, _f64(inv_inertia), self.axa, self.axb, self.jang, self.mang,
                        self.kmat, self.eff, self.k_pinv)

    def separations(self, dpose):
        """(M, 4) each point's separation now, in sweep order (linearised: the module
        docstring), dpose (N, 6) the pass's displacements so far."""
        out = np.empty((self.m, 4))
        if self.m:
            kern.separations(np.arange(self.m), self.idx, self.count, self.dirs, self.jang,
                             self.sep0, _f64(dpose), out)
        return out

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
        engine.dynamics.inertia_refresh.REFRESH_ANGLE."""
        if self.m == 0 or not len(bodies):
            return
        kern.refresh_rows(_i64(bodies), _f64(turn), len(inv_inertia), self.idx, self.count,
                          self.ra, self.rb, self.axa, self.axb, self.dirs, self.ima, self.imb,
                          _f64(inv_inertia), self.jang, self.mang, self.kmat, self.eff,
                          self.k_pinv, self.sep0, _f64(dpose))

    def replace(self, rows, fresh, x_com, inv_inertia, box, reach, vel, dpose):
        """Manifolds ``rows`` (K,) (caller order) taken again from the narrowphase between two
        substeps (engine.world.recollide): ``fresh`` holds their new normal (K, 3), points
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
        kern.replace_rows(
            inv[rows], _f64(fresh["normal"]), _f64(fresh["points"]), _f64(fresh["separation"]),
            _i64(fresh["count"]), _i64(fresh["ids"]), _i64(fresh["old_ids"]),
            _f64(fresh["accel_n"]), _f64(x_com), *_bounds(len(x_com), box, reach),
            _f64(inv_inertia), _f64(vel), _f64(dpose), float(self.h), self.idx, self.count,
            self.friction, self.dirs, self.ra, self.rb, self.ima, self.imb, self.axa, self.axb,
            self.jang, self.mang, self.kmat, self.eff, self.k_pinv, self.sep0, self.imp,
            self.max_normal, self.v_impact, self.accel_n)

    def kernel_arrays(self):
        """The rows and state a sweep reads, in contact_kernels.solve_pass's order (for
        engine.dynamics.substeps, which runs the substeps of a pass in one call)."""
        return (self.idx, self.count, self.dirs, self.ima, self.imb, self.jang, self.mang,
                self.kmat, self.eff, self.k_pinv, self.sep0, self.imp, self.max_normal,
                self.friction, self.soft, self.work)

    # -- passes (engine/dynamics/contact_kernels.py) -----------------------------------------------
    def warm_start(self, vel):
        """Apply the accumulated impulses to the velocities vel (N, 6), in place."""
        if self.m:
            kern.warm_start(vel, self.idx, self.count, self.dirs, self.ima, self.imb, self.mang,
                            self.imp)

    def solve(self, vel, dpose, use_bias):
        """One Gauss-Seidel sweep over the manifolds, in place on vel (N, 6) and the impulses.
        use_bias: the soft pass (True) or relax. dpose (N, 6): each body's displacement and
        rotation vector since the pass began (the separations now: see the module docstring).

        Per manifold, in sweep order:

        - Normal gains. Biased: a touching point is a soft spring, bias max(bias_rate * s,
          -max_push), its accumulated impulse leaking by impulse_scale; a point apart is
          speculative (bias s/h, rigid). Relax solves touching points only: a point still
          apart (by more than RELAX_SLOP) keeps its impulse (zero gain) and the manifold
          skips the block step.
        - Block normal step: the 4 normal rows solved together first (the pseudo-inverse of
          their Delassus block: four coplanar points are statically indeterminate), so a box
          landing flat gets 4 equal impulses instead of a Gauss-Seidel cascade that tips it
          (and lets friction turn the tip into sideways drift). Taken only where no row needs
          a pull: a clamped block answer (the lifting edge of a tipping box) is far off.
        - Sequential normal sweep with accumulated-impulse clamping, always, after the block
          step: skipping it where the block step succeeded changed the soft response (the
          soft update is not idempotent) and cost energy conservation of bounces at e = 1.
        - Coulomb friction point by point, the two tangents clamped together to the disc
          mu * Pn.
        """
        if self.m:
            kern.solve_pass(vel, dpose, bool(use_bias), self.idx, self.count, self.dirs,
                            self.ima, self.imb, self.jang, self.mang, self.kmat, self.eff,
                            self.k_pinv, self.sep0, self.imp, self.max_normal, self.friction,
                            self.soft, self.work)

    def restitution(self, vel, threshold=1.0):
        """After the substeps: make closing points leave at -e * (impact speed).

        Simultaneous (block) restitution over a manifold's points: a sequential sweep
        over-rotates a box hitting flat and can gain energy at e = 1. Points that do not
        bounce keep their current normal velocity as the target. The block answer is used
        only where every used point of the manifold bounces and none needs a pull; elsewhere
        one sequential sweep over the bouncing points does the manifold. Where a point does
        not bounce, the block answer's impulse on it would be dropped, and what is left
        solves nothing: with two nearly redundant points, one bouncing and one not, it is a
        huge push on one (against a huge pull on the other), and that push launched a 5 mm
        sphere at 540 m/s (issue 11, tests/test_robust_step.py)."""
        if self.m:
            kern.restitution(vel, self.idx, self.count, self.dirs, self.ima, self.imb,
                             self.jang, self.mang, self.kmat, self.eff, self.k_pinv, self.imp,
                             self.max_normal, self.v_impact,
                             self.restitution_coef, self.accel_n, float(self.h),
                             float(threshold))

    # -- results --------------------------------------------------------------------------
    @property
    def jr(self):
        """(M, 12, 12) each row's whole Jacobian over [v_a, w_a, v_b, w_b], in sweep order
        (for inspection: the kernels keep its parts, engine/dynamics/contact_kernels.py)."""
        return self._whole(self.jang, -1.0, 1.0)

    @property
    def mjr(self):
        """(M, 12, 12) each row's M^-1 J^T, as jr."""
        return self._whole(self.mang, -self.ima[:, None], self.imb[:, None])

    def _whole(self, ang, lin_a, lin_b):
        live = np.arange(4)[None, :] < self.count[:, None]
        slot = np.r_[np.arange(4), np.repeat(np.arange(4), 2)]
        d = self.dirs[:, [0, 0, 0, 0, 1, 2, 1, 2, 1, 2, 1, 2]] * live[:, slot, None]
        lin_a = np.asarray(lin_a)[..., None] if np.ndim(lin_a) else lin_a
        lin_b = np.asarray(lin_b)[..., None] if np.ndim(lin_b) else lin_b
        return np.concatenate((lin_a * d, ang[..., :3], lin_b * d, ang[..., 3:]), axis=2)

    def impulses(self, tangents=True):
        """(normal (M, 4), friction world vectors (M, 4, 3), friction (M, 4, 2) along the
        tangents, tangents (M, 2, 3); None if not tangents) in the caller's original
        manifold order."""
        m = self.m
        normal, fworld, fr = np.empty((m, 4)), np.empty((m, 4, 3)), np.empty((m, 4, 2))
        kern.impulses_by_manifold(self.order, self.imp, self.dirs, normal, fworld, fr)
        if not tangents:
            return normal, fworld, fr, None
        tang = np.empty((m, 2, 3))
        tang[self.order] = self.dirs[:, 1:]
        return normal, fworld, fr, tang


def _f64(x):
    return np.ascontiguousarray(x, dtype=float)


def _i64(x):
    return np.ascontiguousarray(x, dtype=np.int64)


NO_AXES = np.zeros((0, 3))   # prepare's round_axes when no body is round about an axis


def _bounds(n, box, reach):
    """The arm clamps of n bodies as the kernels read them: (axes (n, 3, 3), lo, hi (n, 3))
    of engine.dynamics.arm_box, and reach (n,) (engine.dynamics.contact_kernels.set_arms); unbounded where
    box or reach is None."""
    if box is None:
        box = (np.broadcast_to(np.eye(3), (n, 3, 3)), np.full((n, 3), -np.inf),
               np.full((n, 3), np.inf))
    axes, lo, hi = (_f64(x) for x in box)
    return axes, lo, hi, np.full(n, np.inf) if reach is None else _f64(reach)
