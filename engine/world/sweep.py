"""The order the contact solver sweeps a pass's manifolds in.

Graph-colour order (engine.dynamics.graph.sweep_order), except that the manifolds of
polytope pairs (Box, ConvexHull) whose normal lies within 45 degrees of gravity (the
supports: one body on the other) are swept from the lowest to the highest along gravity, by
their points' mean height, in the slots the colour order gave them.

Why. The biased sweep runs once a substep, and one Gauss-Seidel sweep leaves the last row it
solves exact: swept top down, a rock falling at 4 m/s onto one resting on the ground had its
contact solved first, then the ground's pushed the lower rock back up into it, and it sank
16 mm in two substeps (bench/rock_seeds.py seed 8); a 10 kg block dropped on the edge of a
1 kg plate sank 40 mm into it at 1/60 s (tests/test_world_contacts.py). Supports first, what
they carry last, as the load goes: the six rock seeds' deepest penetrations went
12.2/10.7/18.8/9.5/24.8/20.8 -> 13.1/10.7/17.1/11.5/14.6/10.6 mm, the 301-rock pile's
(scenes.hull_pile, 240 frames) 30.7 -> 18.1 mm (sorting every polytope pair).

Why only near-vertical normals. Height says which of two contacts carries the other only
when they press along gravity. A side contact's height is no such thing: sorted with the
rest, the push of an animated paddle on a box's side (its mean height that of the box's
centre) and a second box falling against the first one's front edge (a normal 50 degrees
from vertical) were swept after the box's ground contact, and the pushed box hopped 5 cm
off the ground (tests/addon/test_addon_preview.py; bench/paddle_push.py: pybullet keeps it
on the ground within 2 mm, tilted under 0.1 degree). With the 45 degree rule the paddle
scene runs as in colour order and the rock seeds keep the gain.

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

SUPPORT_COS = 0.7071067811865476     # cos 45 degrees: |normal . gravity direction| at least


@kernel
def supports_first(order, poly, ia, ib, normal, points, count, gravity):
    """Re-sort ``order`` (M,) (the colour order, sweep slot -> manifold) in place: the
    manifolds of pairs whose bodies are both flagged in poly (N,) bool (the polytopes) and
    whose normal (M, 3) is within 45 degrees of gravity (3,) (either way), lowest first along
    gravity by their points' mean height, in the slots they held (ties in colour order).
    ia, ib (M,) the pairs' bodies; points (M, 4, 3), count (M,)."""
    g0, g1, g2 = gravity[0], gravity[1], gravity[2]
    g = np.sqrt(g0 * g0 + g1 * g1 + g2 * g2)
    if g == 0.0:
        return
    sel_m = np.zeros(order.shape[0], dtype=np.bool_)
    n = 0
    for k in range(order.shape[0]):
        i = order[k]
        if poly[ia[i]] and poly[ib[i]]:
            c = abs(normal[i, 0] * g0 + normal[i, 1] * g1 + normal[i, 2] * g2) / g
            if c >= SUPPORT_COS:
                sel_m[k] = True
                n += 1
    if n < 2:
        return
    slots = np.empty(n, dtype=np.int64)
    sel = np.empty(n, dtype=np.int64)
    up = np.empty(n)                         # minus the mean depth along gravity
    j = 0
    for k in range(order.shape[0]):
        i = order[k]
        if sel_m[k]:
            down = 0.0
            for p in range(count[i]):
                down += points[i, p, 0] * g0 + points[i, p, 1] * g1 + points[i, p, 2] * g2
            slots[j], sel[j], up[j] = k, i, -down / max(count[i], 1)
            j += 1
    rank = np.argsort(up, kind="mergesort")  # (stable)
    for j in range(n):
        order[slots[j]] = sel[rank[j]]
