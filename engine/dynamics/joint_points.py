"""Large systems of point joints (nets, cloth, grids of balls) by block Gauss-Seidel.

engine.dynamics.joint_solver solves small systems exactly and larger ones by coloured block Gauss-
Seidel over its general six-axis rows. When every joint of a large system only locks its three
linear axes (Blender's Point, a generic joint with the linear axes locked at zero), the three
lock rows of a joint are one 3 x 3 block, and that block is the same in any basis: the rows
along frame A's axes (C = A^T d, J = A^T G) give K^-1 J = A^T K_w^-1 G and the applied impulse
A dl is the world-frame impulse of the world-frame block

    G = [-I, [s]x, I, -[r_b]x],  K_w = G M^-1 G^T,  s = r_a + d = x_b + r_b - x_a,
    C = d = x_b + r_b - x_a - r_a

(G v = v_b + w_b x r_b - v_a - w_a x s; the s, not r_a, is the "axes turn with A" term of the
general rows). So this path keeps the impulses as world vectors and never builds the joint
frames, Euler angles or 12-wide row Jacobians of the six axes. The work per substep is done by
the compiled kernels of engine.dynamics.joint_point_kernels over flat joint-major arrays: the geometry
(anchors, K_w^-1, the errors with the joint_max_push reach, the anisotropic ends' tensors),
the warm start (without carried impacts: engine.dynamics.joint_warm), the biased and relax sweeps
(sequential Gauss-Seidel in the joints' colour order, as engine.dynamics.joint_solver sorted them) and
breaking. The stored A-frame impulses of engine.dynamics.joints are read on the first warm start and
written back by finish, so either path can pick up the other's.
"""
import numpy as np

from .joint_inertia import isotropic
from .joint_point_kernels import (
    POINT_PACK,
    STALE,
    frame_impulses,
    points_end_substep,
    points_prepare,
    points_solve,
    points_warm,
)
from .joints import pure_point_locks


def point_lock_only(g):
    """Is every joint (engine.dynamics.joints fields gathered in g) a pure point lock: the three linear
    axes locked at zero, nothing else locked, limited, sprung or driven?"""
    return bool(pure_point_locks(g).all())


def _f64(a):
    return np.ascontiguousarray(a, dtype=np.float64)


class PointLocks:
    """Point-lock rows of one collision pass (see the module docstring).

    a, b: (m,) body indices in solve order (engine.dynamics.joint_solver sorts them by colour); world
    (m,) bool (A is the world: anchor_a is then a world point); anchor_a, anchor_b (m, 3)
    relative to the centres of mass in the bodies' frames; frame_a (m, 4) the joint frame in
    A (to read and write the A-frame impulses); lam0 (m, 3) the carried A-frame lock
    impulses; inv_mass (N,), inv_inertia (N, 3, 3) world (zero for bodies not moved); soft
    the biased pass's (bias_rate, mass_scale, impulse_scale); break_force (m,); inv_body
    (N, 3, 3) body-frame inverse inertias (the anisotropic ends' tensors are retaken at every
    prepare, engine.dynamics.joint_inertia; None keeps inv_inertia for the pass)."""

    def __init__(self, a, b, world, anchor_a, anchor_b, frame_a, lam0, inv_mass, inv_inertia,
                 h, soft, break_force, inv_body=None, max_push=np.inf):
        m = len(a)
        self.m, self.h = m, h
        self.frame_a, self.lam0 = frame_a, lam0
        self.world = np.ascontiguousarray(world, dtype=np.bool_)
        ext = ~self.world
        # A world side reads body b's slot (never used): any valid index will do.
        self.a = np.ascontiguousarray(np.where(ext, a, b), dtype=np.int64)
        self.b = np.ascontiguousarray(b, dtype=np.int64)
        self.anchor_a, self.anchor_b = _f64(anchor_a), _f64(anchor_b)
        self.ima = _f64(np.where(ext, inv_mass[self.a], 0.0))
        self.imb = _f64(inv_mass[self.b])
        self.msum = self.ima + self.imb
        self.inertia = np.zeros((m, 2, 3, 3))
        self.inertia[:, 0] = np.where(ext[:, None, None], inv_inertia[self.a], 0.0)
        self.inertia[:, 1] = inv_inertia[self.b]
        self.inv_body = np.zeros((m, 2, 3, 3))
        self.aniso = np.zeros((m, 2), dtype=np.bool_)
        if inv_body is not None:
            self.inv_body[:, 0] = np.where(ext[:, None, None], inv_body[self.a], 0.0)
            self.inv_body[:, 1] = inv_body[self.b]
            self.aniso[:] = ~isotropic(self.inv_body.reshape(2 * m, 3, 3)).reshape(m, 2)
        self.bias_rate, self.mscale, self.iscale = soft
        # The gap whose correction reaches max_push (engine.world.settings.joint_max_push): longer
        # gaps are corrected at that speed.
        self.reach = max_push / self.bias_rate if self.bias_rate > 0.0 else np.inf
        self.break_force = _f64(break_force)
        self.breakable = bool(np.isfinite(break_force).any())
        self.broken = np.zeros(m, dtype=np.bool_)
        # Per prepare (engine.dynamics.joint_point_kernels.point_geometry).
        self.s, self.rb, self.err = np.zeros((m, 3)), np.zeros((m, 3)), np.zeros((m, 3))
        self.kinv = np.zeros((m, 3, 3))
        self.ang = np.zeros((m, 2, 3, 3))
        self.qa = np.zeros((m, 4))
        self.work = np.zeros((1, 3, 3))
        self.terms = np.zeros((m, 2))
        self.imp = np.zeros((m, 3))         # world impulses, read at the first warm start
        self.loaded = False
        self.vel0 = np.zeros((0, 6))
        self.par = np.array([self.reach, self.mscale * self.bias_rate, self.mscale,
                             self.iscale, h], dtype=np.float64)
        # breakable, stale (the poses moved since the last prepare: STALE)
        self.flags = np.array([self.breakable, 1], dtype=np.int64)

    def pack(self):
        """The arrays the kernels take (engine.dynamics.joint_point_kernels.POINT_PACK)."""
        return tuple(getattr(self, k) for k in POINT_PACK)

    def prepare(self, x, q):
        """The rows' geometry at the poses x (N, 3), q (N, 4)."""
        points_prepare(_f64(x), _f64(q), self.pack())

    def load(self, x, q):
        """The rows at the poses x, q if they moved, and at the first call the carried
        impulses as world vectors: what a warm start needs first."""
        if self.flags[STALE]:
            points_prepare(_f64(x), _f64(q), self.pack())
        if not self.loaded:
            self.loaded = True
            # The carried A-frame impulses as world vectors (frame A's axes at the pose the
            # last prepare read: this one).
            frame_impulses(self.qa, _f64(self.frame_a), _f64(self.lam0), True, self.imp)
            self.imp[self.broken] = 0.0
        self._scratch(len(x))

    def _scratch(self, n):
        """The warm start's copy of the velocities, for n bodies."""
        if self.vel0.shape[0] != n:
            self.vel0 = np.zeros((n, 6))

    def warm_start(self, vel):
        """The carried impulses applied to the bodies (after load)."""
        self._scratch(len(vel))
        points_warm(vel, self.pack())

    def solve(self, vel, use_bias):
        """One Gauss-Seidel sweep: dl = -ms K^-1 (G v + br C) - is lam (biased), -K^-1 G v
        (relax) (after prepare: stale says when the poses moved since)."""
        points_solve(vel, self.pack(), bool(use_bias))

    @property
    def stale(self):
        """Have the poses moved since the last prepare?"""
        return bool(self.flags[STALE])

    def end_substep(self):
        """Breaking: the substep's reaction |lam| / h against break_force."""
        points_end_substep(self.pack())

    def force(self):
        """(m, 3) the last substep's force on B (world)."""
        return self.imp / self.h

    def impulse_a_frame(self):
        """(m, 3) the lock impulses along frame A's axes at the current pose (engine.dynamics.joints'
        storage)."""
        if not self.loaded:
            return self.lam0
        out = np.empty((self.m, 3))
        frame_impulses(self.qa, _f64(self.frame_a), self.imp, False, out)
        return out
