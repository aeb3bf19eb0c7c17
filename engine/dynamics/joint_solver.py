"""Batched joint rows for the soft-step solver (Box2D v3's soft joints, Jolt's row maths).

The world builds one JointSolver per collision pass for the live joints with an awake dynamic
end, and its rows run inside the same substep loop as the contact solver's::

    for each substep h:
        integrate velocities
        contacts.warm_start; joints.warm_start(vel, x, q)
        contacts.solve(bias); joints.solve(vel, x, q, True)
        integrate positions
        for each relax sweep:       # joints in each when they share a body with a contact
            contacts.solve(relax); joints.solve(vel, x, q, False)
        joints.end_substep()        # breaking, reaction forces

That loop is compiled (engine.dynamics.substeps.run_substeps, over the kernels these methods
call: JointSolver.pack() and geometry_pack() hand it the rows); the methods remain the same
loop as calls (tests/substep_reference.py holds the compiled one to it, bit for bit).

Joints that share a body with a contact relax in every sweep (engine.world.world_joints: contacts
relaxed against the joints' bias velocity kept it as motion). Box2D v3 relaxes joints before
contacts; after them, as here, glued walls break as before (tests/addon/test_addon_fracture.py:
joints first left a weakly glued wall in one piece) and the 50-link rope on a table keeps its
links closer (tests/test_joints_physics.py; joints first also in the biased pass: 7.7 mm).

Rows. Every joint has six axes (engine.dynamics.joints: three anchor separations along frame A's axes,
three XYZ Euler angles of frame B in frame A) and each axis up to five scalar rows (lock,
lower, upper, spring, motor). A row acts on the 12 velocity components [v_a, w_a, v_b, w_b]
through a Jacobian J (12,); M^-1 J^T is stored as MJ. For a linear axis a (a unit vector fixed
in A) with anchors p_a = x_a + r_a, p_b = x_b + r_b and d = p_b - p_a, C = a . d and
J = [-a, -(r_a + d) x a, a, r_b x a] (the d term because a turns with A). For the Euler angles
(R = Rx(ax) Ry(ay) Rz(az)) the relative angular velocity is ax' e0 + ay' e1 + az' e2 with
e0 = A's x, e2 = B's z and e1 = e2 x e0 normalised; the rates are its components on the dual
basis (e1 x e2, e2 x e0, e0 x e1) / det, which are the angular Jacobians. Of a rotation's two
Euler triples each joint measures the one continuous with its last angles (continuous_euler:
through y = +-90 degrees, where the other jumps x and z by pi).

Warm start: each joint's carried impulse is applied at the start of a substep, except the part
of an impact that would add energy (engine.dynamics.joint_warm.kept_fraction).

Geometry (anchors, axes, coordinates, Jacobians, effective masses) is recomputed from the
current poses at every solve call, so the position error is exact (no linearisation over the
pass) however far the bodies turn; Box2D v3 does the same with its delta rotations.

Softness (Box2D v3). Lock and limit rows are soft-rigid in the biased pass (joint hertz and
damping ratio, the hertz capped at half the substep rate) and rigid in relax. The three linear
locks of a joint are solved as one 3 x 3 block and the three angular locks as another (a point
joint is then exact per joint whatever the mass ratio). A limit row whose axis is inside its
range is speculative (bias C / h: it lets the axis reach the limit in this substep and no
further). Springs (engine.dynamics.joint_springs) apply -h (k C + c u') once per substep, the stiffness
explicit (symplectic: an undamped spring keeps its energy) and the damper implicit, turning to
Box2D v3's implicit soft spring only where h omega approaches explicit's stability limit; a
joint's three linear (three angular) spring rows are solved together as one coupled block.
Motors are velocity rows clamped to +-max h.

Colouring: engine.dynamics.graph.colour_constraints on the joints' body pairs (a joint to the world is
an edge with one end) orders the joints; the sweep visits them one after the other in that
order (within a colour no dynamic body appears twice, so the order inside a colour does not
matter), as does engine.dynamics.joint_points.

Compiled: everything per substep is a kernel over all joints (engine.dynamics.
joint_row_kernels, over the packed rows): the measuring (rows_prepare: the ends' present
tensors, geometry, euler_angles, angular_rows, lock_blocks or the direct factor,
factor_dense / factor_chain with engine.dynamics.joint_chain's elimination), the warm start
(rows_warm_start), a sweep (rows_solve: limit_folds, row_coefficients, joint_springs.
spring_blocks, sweep, direct_solve) and the end of a substep (rows_end_substep: reaction,
breaking, the factor taken again without the broken rows). What stays numpy is per pass:
building the rows, writing them back (finish).
"""
import numpy as np

from ..core import quat
from .graph import colour_constraints, islands
from .joint_chain import chain_order
from .joint_inertia import CurrentInertia
from .joint_points import PointLocks, point_lock_only
from .joint_row_kernels import (
    FLAG_BREAKABLE,
    FLAG_CHAIN,
    FLAG_DIRECT,
    FLAG_STALE,
    PACK,
    STIFF_HOMEGA,
    STIFF_SWEEPS,
    euler_angles,
    geometry,
    reaction,
    rows_biased_sweeps,
    rows_end_substep,
    rows_prepare,
    rows_solve,
    rows_warm,
)
from .joints import LOCK, LOWER, MOTOR, UPPER
from .solver import soft_params

# Joint systems with at most this many lock rows solve their locks together, exactly (see
# JointSolver._prepare); larger ones (a 20 x 20 grid has 2286) by block Gauss-Seidel.
# The system is refactored at every substep (an inverse kept over a whole collision pass went
# stale while a 50-link rope whipped, and blew up): the Gauss-Jordan inverse cost about
# 0.1 ms at 30 rows, 1.2 ms at 90, 4.8 ms at 150 and 18 ms at 240 in numpy, hence the cap (a
# rope of 50 links by point joints has 150 rows; compiled it is cheaper, the cap kept).
DIRECT_ROWS = 160
# Chains of at least this many lock rows use block elimination along the chain
# (engine.dynamics.joint_chain) for the direct solve; below it the dense inverse is as cheap
# (measured in numpy: 33 rows: 1.0 s dense vs 1.15 s for 72 frames of the 100:1 chain; 150
# rows: 5.1 s vs 1.2 s for 36 frames of a rope).
CHAIN_ROWS = 64
# Chains solve directly up to this many lock rows (a rope of 400 point-joined links): the
# chain solve's cost grows linearly with the joints, and Gauss-Seidel lets a long 100:1 chain
# stretch.
CHAIN_MAX_ROWS = 1200
# Biased sweeps (contacts and joints) per substep while a spring is stiffer than
# STIFF_SPRING_HOMEGA (h omega: its period under 1.6 substeps, 230 Hz at 360 Hz): such a
# spring is a constraint in all but name, far stiffer than the soft step lets a lock be, and
# Gauss-Seidel between it and the rows beside it (other joints, contacts) converges slowly; one
# sweep left a residual that pumped energy into light bodies on long arms (the jointed fuzzer's
# seeds 122, 197, 340, 358, 359, 385, whose springs reach h omega 32 to 64 and more; 8 sweeps
# left two of them). Joint-only sweeps cured them too but let the joints overrule contacts: a
# body pulled by a stiff spring ended 11 cm inside a static box (seed 43). Springs an artist
# sets (a few Hz) never pay for it.
STIFF_SPRING_HOMEGA = STIFF_HOMEGA     # (the kernels' copy: joint_row_kernels)
STIFF_SPRING_SWEEPS = STIFF_SWEEPS
# Locks and limits are soft (Box2D v3's soft step), their hertz capped against the substep
# rate 1 / h. Solved exactly (the direct and chain paths) the soft step is stable at any
# h omega, and half the substep rate (h omega = pi) is the cap. Solved by Gauss-Seidel (joint
# systems with loops, or too many rows), a sweep meets a joint's neighbours' impulses one
# sweep late: the coupling between joints that share a body is explicit, the coupled
# system's stiffest modes are faster than a lone joint's, and the warm start carries the
# lagged impulse into the next substep. Past some h omega that feedback grows: a 2 x 12
# ladder of point joints hanging at rest reached 150 m/s at the default 180 Hz and 360 Hz
# substeps (h omega = pi; issue 25, tests/test_joint_nets.py). Measured at rest from a static
# top row, 2 s, relaxed in every sweep (below): a 30 x 30 grid stable at a rate of 0.35,
# creeping at 0.4, blowing up at 0.45; the ladder ringing at 2 mm/s at 0.41, calm at 0.35; a
# 7 x 7 x 7 lattice stable at 0.35; a loop of six hinged boxes (the fuzzer's net seed 16)
# gaining energy at 0.42, not at 0.38; loops of point joints (net seeds 107, 292, 293)
# gaining energy at 0.5. Box2D v3 caps every joint at a quarter of the substep rate
# (joint.c), 2x softer again: softness is stretch under load (a lock is a spring of
# m_eff omega^2), which a rope held at both ends gives back as speed when released (the
# 50-capsule Connect rope of tests/addon/test_joints_rope.py: 7.4 m/s at 0.5, 10.6 at 0.35;
# Blender 6.3). An exact solve of such looped systems would lift the cap.
EXACT_HERTZ_RATE = 0.5
SWEPT_HERTZ_RATE = 0.35
# Locks solved by Gauss-Seidel relax in every relax sweep, not only the last.
# One sweep leaves most of a big net's velocity error in it (Gauss-Seidel moves a correction
# one joint a sweep): a 30 x 30 net of point joints hanging from its top row still moved at
# 0.14 m/s after 0.5 s and 2.4 mm/s after 2 s; relaxed in both sweeps, 0.026 m/s and
# 0.08 mm/s, at no measurable cost (bench/bench_joint_nets.py). An exact solve leaves
# nothing for a second sweep to do.


def lock_hertz(hertz, h, swept):
    """The soft step's hertz for locks and limits at substep h: the world's joint_hertz
    capped at SWEPT_HERTZ_RATE / h where the pass's locks are solved by Gauss-Seidel (swept),
    else at EXACT_HERTZ_RATE / h (see SWEPT_HERTZ_RATE)."""
    return min(hertz, (SWEPT_HERTZ_RATE if swept else EXACT_HERTZ_RATE) / h)


def joint_coordinates(joints, x, q):
    """(J, 6) every joint's six coordinates now (engine.dynamics.joints: the anchor separation along
    frame A's axes, then the XYZ Euler angles, the triple continuous with the joint's last
    solve). x, q: the bodies' centres of mass and orientations."""
    n = joints.n
    if not n:
        return np.zeros((0, 6))
    g = {k: joints.v(k) for k in ("body_a", "body_b", "world", "frame_a", "frame_b",
                                  "anchor_a", "anchor_b")}
    la_f = quat.rotate_inverse(g["frame_a"], g["anchor_a"])
    lb_f = quat.rotate_inverse(g["frame_b"], g["anchor_b"])
    out = np.empty((n, 6))
    rel = np.empty((n, 3, 3))
    geometry(*_flat(x, q, g["body_a"], g["body_b"], g["world"], g["frame_a"], g["frame_b"],
                    la_f, lb_f), 3, np.empty((n, 3, 3)), np.empty((n, 3, 3)),
             np.empty((n, 3, 12)), out, rel)
    out[:, 3:] = continuous_euler(rel, joints.v("angles"))[0]
    return out


def _contiguous(name, a):
    """a itself, checked C-contiguous: the kernels write into it, and a copy would lose that."""
    if not a.flags.c_contiguous:
        raise ValueError(f"the joint rows' {name} is not C-contiguous")
    return a


def _f64(a):
    """a as the kernels read it: float64, C-contiguous (no copy where it is)."""
    return np.ascontiguousarray(a, dtype=np.float64)


def _flat(*arrays):
    """The arrays as the kernels take them: C-contiguous (no copy where they are)."""
    return tuple(np.ascontiguousarray(v) for v in arrays)


def continuous_euler(rel, prev):
    """XYZ Euler angles (m, 3) of the relative rotations rel (m, 3, 3), and which used the
    second triple (m,) bool.

    A rotation has two XYZ triples, (x, y, z) with |y| <= pi/2 and (x + pi, +-pi - y, z + pi)
    (angles wrapped to (-pi, pi]). The first alone jumps x and z by pi when y passes +-pi/2
    (gimbal lock), and a limit on x then saw a violation of pi from nowhere and corrected it
    with a kick: a sphere on a generic_spring with x limited and y free spun up from 7 to 30
    rad/s in one step, its energy 1e5 -> 1.7e6 J (fuzz seed 34). So each joint keeps the
    triple nearest its last angles (prev, engine.dynamics.joints "angles"): continuous through the
    singularity, and the first triple wherever y stays inside +-pi/2 (every joint whose y is
    locked or limited there, as Blender's generic constraint asks)."""
    out = np.empty((len(rel), 3))
    flip = np.empty(len(rel), dtype=bool)
    euler_angles(_f64(rel), _f64(prev), out, flip)
    return out, flip


def _has_cycle(a, b, world, awake):
    """Do the joints (a[k], b[k]) close a loop? Bodies that do not move (the world, asleep or
    static ones) count as one node, so two bodies fixed to the ground and to each other close
    one too. A forest has as many edges as nodes minus trees."""
    n = len(awake)
    ground = n
    ea = np.where(world | ~awake[a], ground, a)
    eb = np.where(~awake[b], ground, b)
    nodes = np.unique(np.concatenate((ea, eb)))
    lab = islands(n + 1, ea, eb, np.zeros(n + 1, dtype=bool))
    trees = len(np.unique(lab[nodes]))
    return len(a) > len(nodes) - trees


def _colouring(joints, sel, awake):
    """colour_constraints of the selected joints' body pairs, reused while the selection and
    which of their bodies move stay the same (the common case from pass to pass: colouring
    760 joints costs more than a substep of the point-lock path)."""
    a, b = joints.v("body_a")[sel], joints.v("body_b")[sel]
    static = ~awake
    key = (sel.tobytes(), static[a].tobytes(), static[b].tobytes())
    cached = joints.colour_cache
    if cached is not None and cached[0] == key:
        return cached[1]
    col = colour_constraints(a, b, static)
    joints.colour_cache = (key, col)
    return col


def _chain(joints, sel, a, b, world, awake):
    """engine.dynamics.joint_chain.chain_order of the pass's joints (None: not chains), reused while
    the selection and which bodies move stay the same (like _colouring)."""
    key = (sel.tobytes(), awake[a].tobytes(), awake[b].tobytes())
    cached = joints.chain_cache
    if cached is not None and cached[0] == key:
        return cached[1]
    out = chain_order(a, b, world, awake)
    joints.chain_cache = (key, out)
    return out


def _direct_mode(joints, sel, a, b, world, awake, rows):
    """(direct, chain): whether the pass's lock rows are solved together exactly, and the
    chain order when the chain factor does it (None: the dense inverse)."""
    if rows == 0 or rows > CHAIN_MAX_ROWS or _has_cycle(a, b, world, awake):
        return False, None
    chain = _chain(joints, sel, a, b, world, awake) if rows >= CHAIN_ROWS else None
    return rows <= DIRECT_ROWS or chain is not None, chain


class JointSolver:
    """Joint rows of one collision pass (see the module docstring).

    joints: engine.dynamics.joints.JointSet; sel: indices of the joints to solve; awake (N,) awake
    dynamic bodies; inv_mass (N,), inv_inertia (N, 3, 3) world, zero for bodies not moved;
    h the substep; hertz, damping_ratio the joints' softness; inv_body (N, 3, 3) the body-frame
    inverse inertia (zero for bodies not moved), to retake the anisotropic ends' world tensors
    at every prepare (engine.dynamics.joint_inertia; None keeps inv_inertia for the whole pass)."""

    def __init__(self, joints, sel, awake, inv_mass, inv_inertia, h, hertz, damping_ratio,
                 inv_body=None, max_push=np.inf):
        self.joints = joints
        self.h = h
        col = _colouring(joints, sel, awake)
        self.sel = sel = sel[col.order]
        self.offsets = [int(o) for o in col.offsets]
        self.m = m = len(sel)
        # Awake bodies in both these joints and the pass's contacts (set by the world:
        # engine.world.world_joints; their contact rows follow the joint rows' tensor).
        self.shared_bodies = np.zeros(0, dtype=np.int64)
        self.points = None
        if self._init_points(joints, sel, awake, inv_mass, inv_inertia, h, hertz,
                             damping_ratio, inv_body, max_push):
            return
        g = {name: joints.v(name)[sel] for name in (
            "body_a", "body_b", "world", "anchor_a", "anchor_b", "frame_a", "frame_b", "lock",
            "target", "limited", "lower", "upper", "spring", "stiffness", "damping", "motor",
            "motor_speed", "motor_max", "break_force", "break_torque")}
        self.g = g
        self.a, self.b, self.world = g["body_a"], g["body_b"], g["world"]
        # A joint to the world has the world as side A (engine.dynamics.joints): A's mass is zero.
        ext = ~self.world
        self.ima = np.where(ext, inv_mass[self.a], 0.0)
        self.imb = inv_mass[self.b]
        self.iia = np.where(ext[:, None, None], inv_inertia[self.a], 0.0)
        self.iib = inv_inertia[self.b]
        # The tensors at the present orientation at every prepare (engine.dynamics.joint_inertia).
        self.inertia = None if inv_body is None else CurrentInertia(
            np.concatenate((self.a, self.b)),
            np.concatenate((np.where(ext[:, None, None], inv_body[self.a], 0.0),
                            inv_body[self.b])),
            np.concatenate((self.iia, self.iib)))
        self.imp = joints.v("impulse")[sel].copy()  # (m, 5, 6)
        self.angles = joints.v("angles")[sel].copy()  # (m, 3) the last Euler angles
        self.broken = np.zeros(m, dtype=bool)
        # Row types present anywhere in this pass, with the axes they use: the sweep
        # visits only these.
        self.lin_lock = bool(g["lock"][:, :3].any())
        self.ang_lock = bool(g["lock"][:, 3:].any())
        self.rows = [(t, k) for t, name in ((MOTOR, "motor"), (LOWER, "limited"),
                                            (UPPER, "limited"))
                     for k in range(6) if g[name][:, k].any()]
        # Spring rows go by blocks of three (engine.dynamics.joint_springs: coupled, solved together).
        self.spring_blocks = [blk for blk in (slice(0, 3), slice(3, 6))
                              if g["spring"][:, blk].any()]
        # The sweep kernel's flat rows (engine.dynamics.joint_row_kernels.sweep): which scalar
        # rows, spring blocks and lock blocks it visits, and their coefficients.
        self.present = np.zeros((5, 6), dtype=bool)
        for t, k in self.rows:
            self.present[t, k] = True
        self.rc = tuple(np.zeros((m, 5, 6)) for _ in range(5))
        self.spring_on = np.array([bool(g["spring"][:, blk].any())
                                   for blk in (slice(0, 3), slice(3, 6))])
        self.sc = (np.zeros((m, 2, 3, 3)), np.zeros((m, 2, 3)), np.zeros((m, 2, 3, 3)))
        self.lock_on = np.array([self.lin_lock, self.ang_lock])
        self.no_blocks = np.zeros(2, dtype=bool)
        self.w_op = np.zeros((m, 2, 3, 12))
        self.err = np.zeros((m, 2, 3))
        self.v12 = np.empty(12)
        self.no_fold = np.zeros((m, 6), dtype=bool)
        self.k33, self.kinv33 = np.empty((3, 3)), np.empty((3, 3))
        self.force = np.zeros((m, 3))
        self.torque = np.zeros((m, 3))
        self.substeps = 0
        self.breakable = bool(np.isfinite(g["break_force"]).any()
                              or np.isfinite(g["break_torque"]).any())
        # Lock rows solved exactly need one relax sweep (the world's last); limits, motors
        # and springs interleave with the locks, and one sweep leaves the limits' bias
        # velocity in the locks (a door bounced off its limit), so they relax in every
        # sweep; so do locks solved by Gauss-Seidel (set below, see SWEPT_HERTZ_RATE).
        self.relax_every = bool(self.rows or self.spring_blocks)
        # Anchors in the joint frame's own axes (r = F la_f), so one rotation matrix per end
        # gives both the axes and the anchor arm.
        self.la_f = quat.rotate_inverse(g["frame_a"], g["anchor_a"])
        self.lb_f = quat.rotate_inverse(g["frame_b"], g["anchor_b"])
        # Angular rows anywhere in the pass? Without them (point joints) the rows are 3 wide.
        self.nr = 6 if (self.ang_lock or any(k >= 3 for _, k in self.rows)
                        or slice(3, 6) in self.spring_blocks) else 3
        # The rows, rebuilt in place by every prepare (engine.dynamics.joint_row_kernels).
        self.fa, self.fb, self.rel = (np.zeros((m, 3, 3)) for _ in range(3))
        self.jac, self.mj = np.zeros((m, self.nr, 12)), np.zeros((m, self.nr, 12))
        self.coord = np.zeros((m, 6))
        self.kdiag, self.eff = np.zeros((m, self.nr)), np.zeros((m, self.nr))
        self.flip = np.zeros(m, dtype=bool)   # which joints measure the second Euler triple
        # Geometry is measured whenever the positions moved: in relax (right after the
        # position update) and reused by the next substep's warm start and biased pass, which
        # see the same positions; the first substep of the pass measures in warm_start
        # (flags[FLAG_STALE], set by _kernel_arrays).
        # Direct mode: every lock row of the pass in one system K dl = -(u + bias), solved
        # exactly; Gauss-Seidel between joints converges like (M / (M + m))^k on a light link
        # holding a heavy mass (0.99 per sweep at 100:1), which lets such chains stretch and
        # ring. The rows are few in the scenes that need it (chains, ropes, ragdolls, rigs).
        lock = g["lock"][:, :self.nr]
        rows = int(lock.sum())
        # A cycle of joints (glued fracture pieces: every three mutual neighbours) makes the
        # lock rows redundant and K singular, which the direct inverse cannot take; those
        # systems go to Gauss-Seidel, which handles redundant rows.
        self.direct, self.chain = _direct_mode(joints, sel, self.a, self.b, self.world, awake,
                                               rows)
        swept = rows > 0 and not self.direct     # locks solved by Gauss-Seidel
        self.relax_every = self.relax_every or swept
        hz = lock_hertz(hertz, h, swept)
        self.soft = soft_params(hz, damping_ratio, h)
        self.limit_omega = 2.0 * np.pi * hz     # the limits' soft step, as a
        self.limit_zeta = damping_ratio         # spring (joint_row_kernels.limit_folds)
        # Cap of the position bias velocity of locks and violated limits; locks take it as
        # a cap on the error each row corrects (reach: the error whose correction reaches it).
        self.max_push = max_push
        self.reach = max_push / self.soft[0] if self.soft[0] > 0.0 else np.inf
        if self.direct:
            self.rj, self.rk = (np.ascontiguousarray(v, dtype=np.int64) for v in np.nonzero(lock))
            self.d_a, self.d_b = self.a[self.rj], self.b[self.rj]
        self._kernel_arrays(len(inv_mass), h, max_push, rows)

    def _kernel_arrays(self, n, h, max_push, rows):
        """The per-substep kernels' own arrays (engine.dynamics.joint_row_kernels.PACK; n the
        world's bodies, rows the lock rows), the direct solve's empty where the locks are
        swept."""
        m, nr = self.m, self.nr
        self.fold = np.zeros((m, 6), dtype=bool)
        self.lock = np.zeros((m, 6), dtype=bool)
        self.add = np.zeros((n, 6))
        self.wterms = np.zeros((m, 3))
        self.scale = np.ones(m)
        self.par = np.array([h, *self.soft, max_push, self.limit_omega, self.limit_zeta,
                             self.reach], dtype=np.float64)
        self.flags = np.zeros(5, dtype=np.int64)
        self.flags[FLAG_DIRECT] = self.direct
        self.flags[FLAG_CHAIN] = self.chain is not None
        self.flags[FLAG_BREAKABLE] = self.breakable
        self.flags[FLAG_STALE] = 1
        # The direct solve (joint_row_kernels.rows_refactor, direct_solve): its lock rows'
        # Jacobians, errors and liveness, and the factor: the dense K^-1 (kinv, with kdense
        # its scratch) or, along chains (every moving body in at most two joints), the block
        # elimination of engine.dynamics.joint_chain (sinv, soff, slower over the blocks dblk
        # of the joints in chain order), the same answer.
        if not self.direct:
            rows = 0
            self.rj = self.rk = self.d_a = self.d_b = np.zeros(0, np.int64)
        chain = self.chain is not None
        nc = m if chain else 0
        nd = 0 if chain else rows
        self.d_jac, self.d_mj = np.zeros((rows, 12)), np.zeros((rows, 12))
        self.d_off, self.d_live, self.d_rhs, self.d_x = (np.zeros(rows) for _ in range(4))
        self.kinv, self.kdense = np.zeros((nd, nd)), np.zeros((nd, nd))
        self.d_blk = np.zeros((nc, nr))
        self.dblk, self.sinv = np.zeros((nc, nr, nr)), np.zeros((nc, nr, nr))
        self.soff, self.slower = (np.zeros((max(nc - 1, 0), nr, nr)) for _ in range(2))
        self.work = np.zeros((nr, nr))
        self.chain_pos = np.zeros(nc, dtype=np.int64)   # joint -> place in the chains
        if chain:
            order, side_prev, side_next, link = self.chain
            self.chain_pos[order] = np.arange(m)
        else:
            order = side_prev = side_next = np.zeros(0, np.int64)
            link = np.zeros(0, dtype=bool)
        self.order, self.side_prev, self.side_next = (np.ascontiguousarray(v, dtype=np.int64)
                                                      for v in (order, side_prev, side_next))
        self.link = np.ascontiguousarray(link, dtype=bool)
        self.packed = None
        self.geo = None

    def pack(self):
        """The arrays the per-substep kernels take, in joint_row_kernels.PACK's order (taken
        again after every prepare: the direct solve's arrays are new ones then)."""
        if self.packed is None:
            g = self.g
            gain, bias, leak, lo, hi = self.rc
            sgain, sbias, sleak = self.sc
            named = {k: g[k] for k in ("limited", "lower", "upper", "motor", "motor_speed",
                                       "motor_max", "spring", "stiffness", "damping",
                                       "break_force", "break_torque")}
            named.update(a=self.a, b=self.b, world=self.world, gain=gain, bias=bias,
                         leak=leak, lo=lo, hi=hi, sgain=sgain, sbias=sbias, sleak=sleak)
            self.packed = tuple(_contiguous(k, named[k] if k in named else getattr(self, k))
                                for k in PACK)
        return self.packed

    def _init_points(self, joints, sel, awake, inv_mass, inv_inertia, h, hertz, damping_ratio,
                     inv_body, max_push):
        """A large system of pure point locks goes to engine.dynamics.joint_points (the same block
        Gauss-Seidel in compiled kernels, joints in colour order); returns whether it did."""
        m = self.m
        pg = {name: joints.v(name)[sel] for name in ("lock", "limited", "spring", "motor",
                                                       "target")}
        if not point_lock_only(pg):
            return False
        a, b, world = joints.v("body_a")[sel], joints.v("body_b")[sel], joints.v("world")[sel]
        if _direct_mode(joints, sel, a, b, world, awake, 3 * m)[0]:
            return False   # small or a chain, loop-free: the exact direct solve
        self.points = PointLocks(
            a, b, world, joints.v("anchor_a")[sel], joints.v("anchor_b")[sel],
            joints.v("frame_a")[sel], joints.v("impulse")[sel, LOCK, :3], inv_mass, inv_inertia,
            h, soft_params(lock_hertz(hertz, h, swept=True), damping_ratio, h),
            joints.v("break_force")[sel],
            inv_body=inv_body, max_push=max_push)
        self.relax_every = True    # Gauss-Seidel: relax in every sweep (SWEPT_HERTZ_RATE)
        return True

    # -- geometry -----------------------------------------------------------------------------
    def _prepare(self, x, q):
        """Jacobians (m, 6, 12), MJ, coordinates (m, 6), effective masses, lock blocks or the
        direct solve's factor at the poses x, q (joint_row_kernels.rows_prepare).

        The direct factor: K = J M^-1 J^T of all lock rows, taken at every prepare. A chain
        pinned at both ends, a closed loop or a fixed joint doubled by a hinge has redundant
        rows: K is singular. A relative 1e-9 on the diagonal keeps the inverse finite; the
        velocity rows' right-hand sides lie in J's range, so the exact answer stays the
        bounded one. (Scaling the diagonal more, as a softness, let a 100:1 chain stretch 10x
        more: the heavy load path is K's weak mode.) Broken joints' rows are decoupled
        (identity) so the others stay exact."""
        rows_prepare(_f64(x), _f64(q), self.pack(), self.geometry_pack())

    def geometry_pack(self):
        """What rows_prepare takes besides the packed rows."""
        if self.geo is None:
            g = self.g
            ci = self.inertia
            if ci is None:
                idx, aniso, body = self.a, np.zeros(0, np.int64), np.zeros((0, 3, 3))
                cur = np.concatenate((self.iia, self.iib))
            else:
                idx, aniso, body, cur = ci.idx, ci.aniso, ci.inv_body, ci.current
            self.geo = tuple(_contiguous(k, v) for k, v in (
                ("frame_a", g["frame_a"]), ("frame_b", g["frame_b"]), ("la_f", self.la_f),
                ("lb_f", self.lb_f), ("fa", self.fa), ("fb", self.fb), ("rel", self.rel),
                ("angles", self.angles), ("flip", self.flip), ("ima", self.ima),
                ("imb", self.imb), ("current", cur), ("idx", idx), ("aniso", aniso),
                ("inv_body", body), ("lock", g["lock"]), ("target", g["target"]),
                ("kinv33", self.kinv33), ("la", self.a), ("lb", self.b),
                ("kdense", self.kdense), ("order", self.order), ("side_prev", self.side_prev),
                ("side_next", self.side_next), ("link", self.link), ("dblk", self.dblk),
                ("work", self.work)))
        return self.geo

    # -- passes (the kernels of engine.dynamics.joint_row_kernels, over pack()) ---------------
    def begin(self, x, q):
        """The rows at the pass's start (x, q: the poses; the first warm start would take
        them): what the compiled substeps expect. Returns the packed rows (None for the
        point-lock path: points.pack)."""
        if self.m == 0:
            return None
        if self.points is not None:
            self.points.load(x, q)
            return None
        if self.flags[FLAG_STALE]:
            self._prepare(x, q)
        return self.pack()

    def warm_start(self, vel, x, q):
        """Geometry at the substep's start, then the carried impulses applied to the bodies."""
        if self.m == 0:
            return
        if self.points is not None:
            self.points.load(x, q)
            self.points.warm_start(vel)
            return
        rows_warm(vel, self.begin(x, q))

    def solve(self, vel, x, q, use_bias):
        """One Gauss-Seidel sweep over the joints (scalar rows, spring blocks, lock blocks),
        then the direct locks."""
        if self.m == 0:
            return
        if self.points is not None:
            if self.points.stale:
                self.points.prepare(x, q)
            self.points.solve(vel, use_bias)
            return
        rows_solve(vel, self.begin(x, q), use_bias)
        if use_bias:
            self.flags[FLAG_STALE] = 1   # the world integrates the positions next

    def biased_sweeps(self):
        """Biased sweeps the world should make this substep (contacts and joints together):
        STIFF_SPRING_SWEEPS while a spring is stiff, else 1. Call after warm_start (which
        measures the geometry)."""
        if self.m == 0 or self.points is not None or not self.spring_blocks:
            return 1
        return rows_biased_sweeps(self.pack())

    def end_substep(self):
        """Reaction on B (force and torque of the last substep) and breaking."""
        if self.m == 0:
            return
        if self.points is not None:
            self.points.end_substep()
            return
        self.substeps += 1
        rows_end_substep(self.pack(), self.geometry_pack())

    def finish(self):
        """Write impulses, reactions and broken flags back to the JointSet."""
        if self.m == 0:
            return
        js = self.joints
        if self.points is not None:
            pts = self.points
            imp = np.zeros((self.m,) + js.v("impulse").shape[1:])
            imp[:, LOCK, :3] = pts.impulse_a_frame()
            js.v("impulse")[self.sel] = imp
            js.v("force")[self.sel] = pts.force()
            js.v("torque")[self.sel] = 0.0
            js.v("broken")[self.sel] |= pts.broken
            return
        if not self.breakable and self.substeps:
            # (breakable joints measured it at every substep: rows_end_substep)
            reaction(self.imp, self.jac, self.h, self.force, self.torque)
        js.v("impulse")[self.sel] = self.imp
        if self.nr == 6:
            js.v("angles")[self.sel] = self.angles
        js.v("force")[self.sel] = self.force
        js.v("torque")[self.sel] = self.torque
        js.v("broken")[self.sel] |= self.broken
