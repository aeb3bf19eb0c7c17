"""The order the contact solver sweeps a pass's manifolds in.

Graph-colour order (engine.dynamics.graph.sweep_order), except that the manifolds of
polytope pairs (Box, ConvexHull) are swept from the lowest to the highest along gravity,
by their points' mean height, in the slots the colour order gave them.

Why. The biased sweep runs once a substep, and one Gauss-Seidel sweep leaves the last row it
solves exact: swept top down, a rock falling at 4 m/s onto one resting on the ground had its
contact solved first, then the ground's pushed the lower rock back up into it, and it sank
16 mm in two substeps (bench/rock_seeds.py seed 8); a 10 kg block dropped on the edge of a
1 kg plate sank 40 mm into it at 1/60 s (tests/test_world_contacts.py). Supports first, what
they carry last, as the load goes: the six rock seeds' deepest penetrations went
12.2/10.7/18.8/9.5/24.8/20.8 -> 13.1/10.7/17.1/10.6/14.6/10.6 mm, the 301-rock pile's
(scenes.hull_pile, 240 frames) 30.7 -> 18.1 mm. The price: the 210-box pyramid of
bench/quality_figures.py drifts 3.94 / 4.02 mm at 1/24 / 1/60 s steps against 3.85 / 3.96 in
colour order. Sorting only in the islands where a polytope pair closes faster than 1 m/s
kept the pyramid's figures, but the rock seeds went 12.2/16.2/17.1/10.8/15.9/10.6 mm.

Why only polytope pairs. Sorting every manifold, or only moving those with a static body to
the front, made a cube dropped at a cup's rim (a compound: one manifold per part pair) keep
more of its 1 m/s slide along the rim after landing (statics first: 0.62 against 0.50 m/s
three frames on), so it stopped with its centre over the wall
instead of tipping in (tests/test_nonconvex_world.py), and a ball rolling in a bowl mesh (one
manifold per triangle group) sank 2.5 mm instead of under 2. Their several manifolds per body
pair lie side by side, not stacked: their order stays the colours'.
"""
import numpy as np

from ..core.jit import kernel


@kernel
def supports_first(order, poly, ia, ib, points, count, gravity):
    """Re-sort ``order`` (M,) (the colour order, sweep slot -> manifold) in place: the
    manifolds of pairs whose bodies are both flagged in poly (N,) bool (the polytopes), lowest
    first along gravity (3,) by their points' mean height, in the slots they held (ties in
    colour order). ia, ib (M,) the pairs' bodies; points (M, 4, 3), count (M,)."""
    g0, g1, g2 = gravity[0], gravity[1], gravity[2]
    if g0 == 0.0 and g1 == 0.0 and g2 == 0.0:
        return
    n = 0
    for k in range(order.shape[0]):
        if poly[ia[order[k]]] and poly[ib[order[k]]]:
            n += 1
    if n < 2:
        return
    slots = np.empty(n, dtype=np.int64)
    sel = np.empty(n, dtype=np.int64)
    up = np.empty(n)                         # minus the mean depth along gravity
    j = 0
    for k in range(order.shape[0]):
        i = order[k]
        if poly[ia[i]] and poly[ib[i]]:
            down = 0.0
            for p in range(count[i]):
                down += points[i, p, 0] * g0 + points[i, p, 1] * g1 + points[i, p, 2] * g2
            slots[j], sel[j], up[j] = k, i, -down / max(count[i], 1)
            j += 1
    rank = np.argsort(up, kind="mergesort")  # (stable)
    for j in range(n):
        order[slots[j]] = sel[rank[j]]
