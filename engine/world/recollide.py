"""Contacts of turning polytopes taken again between substeps, inside a collision pass.

Why. A pass's manifolds are taken at its start and followed linearly (s = s0 + J dpose): a
turning hull brings features into contact that its manifold does not hold (the next face of a
tumbling cube, a rock's far vertex). The world used to split the whole step into more passes
while any body in a pair turned its surface by more than ``max_spin_travel`` in one
(World.collision_steps_for): 216 tumbling cubes took 5.7 passes a frame instead of 2, every
pass paying broadphase, narrowphase, colouring and solver set-up for all ~400 pairs, for the
sake of the few that spin fast.

Now, every EVERY substeps, each polytope pair's relative motion since its manifold was taken
is read from the poses: the relative turn times the smaller body's reach, plus, between two
moving bodies, the relative slide across the normal (a rock sliding over a neighbour's edge
meets new faces as surely as a turning one). The pairs past SHARE of ``max_spin_travel`` are
taken again from the narrowphase at the present poses, in one call, and replace theirs in the
solver (ContactSolver.replace: rows, separations, impulses kept per feature id). The pairs and
their colours stay: one manifold per polytope pair, whatever the poses. The motion is read
from the poses, so a body struck into a spin within the pass is taken again too (the pass
rule reads the spin at the step's start).

Cost. A rebuild is a narrowphase call plus the rows of the pairs it takes, about 1.2 ms of
fixed cost at 27 cubes: in small worlds that is more than the passes it saves, so the world
uses this only from World.recollide_min_manifolds polytope-pair manifolds on. Measured
(bench/bench_speed.py, docs/benchmarks/speed.md): 216 tumbling cubes 91-96 -> 75-80
ms/frame, 1000 cubes 366-377 -> 266-278, the same worst penetration; the triggers tried and
their figures are in that page.

Pairs found apart by a rebuild keep an empty manifold for the rest of the pass (the world
drops it before the pair table). New pairs are not looked for within a pass: the pass's
candidates already hold every pair that its starting velocities can bring into contact.

Scope: pairs of two polytopes (Box, ConvexHull). A body in any other pair (a triangle mesh, a
compound, a round shape) still calls for whole passes (World.collision_steps_for).
"""
import numpy as np

from ..collision import manifold_cache
from ..collision.narrowphase import WIDTH
from ..collision.polytope_pairs import collide_polytope_bodies
from .recollide_kernels import body_poses, store_geometry, unpack

# Substeps between two looks at the pairs' motion (each look costs some 20 numpy calls; a
# rebuild, one narrowphase call and the solver rows of the pairs taken).
EVERY = 3
# Share of max_spin_travel past which a pair is taken again at a look.
SHARE = 0.5


class Recollide:
    """The in-pass rebuilds of one collision pass. world: the World; rows (K,) the caller-order
    indices of the pass's polytope-pair manifolds, ia, ib (M,) the bodies of all manifolds,
    normal (M, 3) their normals (A to B); movers (N,) bool: the awake dynamic bodies."""

    def __init__(self, world, rows, ia, ib, normal, movers):
        self.world = world
        self.rows = rows
        self.ia, self.ib = ia[rows], ib[rows]
        reach = world._reach()
        self.reach = np.minimum(reach[self.ia], reach[self.ib])
        # Sliding counts between two moving bodies only: a face of the static ground or of a
        # kinematic body does not end under a body sliding on it within a pass.
        self.slide = movers[self.ia] & movers[self.ib]
        self.limit = SHARE * world.settings.max_spin_travel
        self.awake = movers
        self.taken = 0      # manifolds taken again in this pass (for benchmarks)
        self.done = 0       # substeps so far
        self._mark(np.arange(len(rows)), normal[rows])

    def _mark(self, sel, normal):
        """Remember the relative poses at which the pairs sel (with normals (K, 3), world)
        were taken."""
        if not hasattr(self, "p0"):
            k = len(self.rows)
            self.p0, self.q0, self.n0 = np.zeros((k, 3)), np.zeros((k, 4)), np.zeros((k, 3))
        w = self.world
        manifold_cache.mark_pairs(sel, self.ia, self.ib, w._v("x"), w._v("q"),
                                  np.ascontiguousarray(normal), self.p0, self.q0, self.n0)

    def travel(self):
        """(K,) how far each pair's surfaces have moved past each other since its manifold
        was taken (m): the relative turn times the smaller body's reach, plus, between two
        moving bodies, the relative slide across the normal (manifold_cache.pair_travel)."""
        out = np.empty(len(self.rows))
        w = self.world
        manifold_cache.pair_travel(self.ia, self.ib, w._v("x"), w._v("q"), self.p0, self.q0,
                                   self.n0, self.reach, self.slide, out, np.empty(3),
                                   np.empty(4))
        return out

    def update(self, solver, refresh, man, vel, dpose, h, t_left, inv_inertia):
        """After a substep (not the pass's last): take again the manifolds whose pairs moved
        too far. man: the pass's manifolds (dict of arrays, caller order), updated in place
        for the pair table and the record; refresh: the pass's InertiaRefresh; t_left (s) the
        rest of the pass; inv_inertia (N, 3, 3) the world inverse inertia the solver uses."""
        self.done += 1
        if not len(self.rows) or self.done % EVERY:
            return
        sel = np.flatnonzero(self.travel() > self.limit)
        if not len(sel):
            return
        take_again(self.world, solver, refresh, man, self.rows[sel], self.ia[sel],
                   self.ib[sel], vel, dpose, t_left, inv_inertia, self.awake)
        self._mark(sel, man["normal"][self.rows[sel]])
        self.taken += len(sel)


def take_again(world, solver, refresh, man, rows, ia, ib, vel, dpose, t_left, inv_inertia,
               awake):
    """Manifolds ``rows`` of the body pairs (ia, ib) from the narrowphase at the present poses,
    with speculative margins for the rest of the pass, into the solver and into man. awake
    (N,) bool: the bodies gravity moves (the solver's)."""
    x, q, com = world._v("x"), world._v("q"), world._v("com")
    sid, table = world._v("shape"), world.table
    # Every row of a body is built for one orientation (engine.dynamics.inertia_refresh).
    if len(refresh.bodies):     # (none followed: nothing to retake)
        refresh.force(solver, np.union1d(ia, ib), q, dpose)
    n_bodies = len(q)
    qn, pos, rot = np.empty((n_bodies, 4)), np.empty((n_bodies, 3)), np.empty((n_bodies, 3, 3))
    body_poses(x, q, com, qn, pos, rot)
    margin = world._speculative_margin(ia, ib, vel, t_left)
    # Polytope pairs: one manifold each, from the pass narrowphase's kernel (no reuse); it
    # gives the pairs with points (hit). A pair now beyond its margin keeps an empty manifold
    # (no rows, its old normal) for the rest of the pass; the world drops it before the pair
    # table.
    hit, out = collide_polytope_bodies(table, sid, pos, qn, rot, ia, ib, margin)
    n = len(rows)
    fresh = (np.empty((n, 3)), np.empty((n, WIDTH, 3)), np.empty((n, WIDTH)),
             np.empty(n, dtype=np.int64), np.empty((n, WIDTH), dtype=np.int64),
             np.empty((n, WIDTH), dtype=np.int64))
    names = ("normal", "points", "separation", "count", "ids", "axis_kind", "axis_index")
    # The new manifolds into fresh and into man's rows (a pair now apart: no points, its old
    # normal, no axis), the ids man held into fresh's last array.
    unpack(rows, hit, tuple(out[k] for k in names), tuple(man[k] for k in names), fresh)
    normal = fresh[0]
    g = world.gravity
    accel_n = np.einsum("mi,mi->m", awake[ib, None] * g - awake[ia, None] * g, normal)
    box = world._arm_boxes.world(table, sid, world._v("kind"), world._v("inertia"), com, rot)
    solver.replace(rows, dict(zip(("normal", "points", "separation", "count", "ids", "old_ids"),
                                  fresh), accel_n=accel_n),
                   x, inv_inertia, box, world._reach(), vel, dpose)
    if "geo" in man:        # (pairs now apart are dropped: no capture)
        cols = manifold_cache.COLUMNS
        store_geometry(rows[hit], tuple(out["geo"][k] for k in cols),
                       tuple(man["geo"][k] for k in cols))
