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


def supports_first(order, poly, points, count, gravity):
    """order (M,) the colour order; poly (M,) bool: the manifolds of polytope pairs; points
    (M, 4, 3) and count (M,) the manifolds' points; gravity (3,). Returns the sweep order:
    order with its polytope-pair entries re-sorted lowest first (ties in colour order)."""
    g = np.asarray(gravity, dtype=np.float64)
    slots = np.flatnonzero(poly[order])
    if len(slots) < 2 or not g.any():
        return order
    sel = order[slots]
    used = np.arange(points.shape[1])[None, :] < count[sel, None]
    down = np.where(used, points[sel] @ g, 0.0).sum(axis=1) / np.maximum(count[sel], 1)
    out = order.copy()
    out[slots] = sel[np.argsort(-down, kind="stable")]
    return out
