"""Round bodies: what a turn about their axis does not change.

A Sphere, Capsule, Cylinder or Cone is round about its local Z axis; with the centre of mass on
that axis (always, unless a caller moved it), a turn about the axis moves none of its surface
and leaves its world inertia as it is. A ball centred on its centre of mass is round about every
axis.

- Balls (round_flags): their contacts' normal rows have no angular part at all, so their spin
  calls for no collision pass (World.collision_steps_for): a ball pit's rolling balls took 4
  passes a frame instead of 2 (bench/bench_speed.py balls216).
- Contact rows (engine.dynamics.solver._rows, round_axes): a round body's normal rows have no part along
  its axis. At the true contact point that holds by itself (the normal through a round surface
  meets the axis), but the solver holds its arms and axes over a pass, and once the axis has
  turned a little the roll reads as a normal velocity: a capsule spinning at 60 rad/s on its
  side on frictionless ground lost a fifth of its spin in 2 s and wobbled up to 45 rad/s in 4.
- Rolling (rolling: the turn across the axis at most ROLLING times the turn about it): the
  rows follow the axis (engine.dynamics.inertia_refresh retakes them once the axis has tilted so far that
  the roll would read through at ROLL_LEAK, turned by the axis's swing alone, not the roll),
  and the roll calls for no collision pass. 100 barrels rolling at 3 m/s took 6 passes a frame
  instead of 2 (115 -> 67 ms a frame, capsules 56 -> 42), and the spinning capsule stays calm
  (0.004 rad/s of wobble after 6 s).
- Tumbling round bodies (the rest) are treated as any body: their whole spin counts and their
  rows are retaken for their whole turn. Retaking them on every tilt too kept their rows exact
  but cost 216 tumbling capsules 77 -> 121 ms a frame.
"""
import math

from ..core.jit import kernel
from ..core.kinds import ShapeKind

# A round body rolls (its rows follow its axis, its roll calls for no collision pass) while
# its turn across the axis is at most this fraction of its turn about it.
ROLLING = 0.1

ROUND_KINDS = (ShapeKind.SPHERE, ShapeKind.CAPSULE, ShapeKind.CYLINDER, ShapeKind.CONE)
# Plain ints: a kernel compares a shape kind with them.
_SPHERE, _CAPSULE = int(ShapeKind.SPHERE), int(ShapeKind.CAPSULE)
_CYLINDER, _CONE = int(ShapeKind.CYLINDER), int(ShapeKind.CONE)


@kernel(inline="always")
def round_flags(shape_kind, com, ball, axial, b):
    """Body b's two flags, into ball and axial (N,) bool: a centred ball (a Sphere with its
    centre of mass com (N, 3) at its centre), and round about its local Z axis (Sphere,
    Capsule, Cylinder, Cone with the centre of mass on that axis) but not a centred ball:
    a ball's normal rows have no angular part to leave out, and the solver then skips the
    projection for scenes of balls."""
    k = shape_kind
    ball[b] = k == _SPHERE and com[b, 0] == 0.0 and com[b, 1] == 0.0 and com[b, 2] == 0.0
    axial[b] = (k in (_SPHERE, _CAPSULE, _CYLINDER, _CONE)
                and com[b, 0] == 0.0 and com[b, 1] == 0.0 and not ball[b])


@kernel
def fastest_turns(bodies, counts, vel, q, ball, axial, reach, features):
    """(the largest spin * reach over the bodies with counts, the largest spin over all):
    World.collision_steps_for's two bounds, over bodies (K,) with counts (K,) bool; ball,
    axial, reach (N,) per body. The spin is how fast a body turns its surface features
    (features): |w|, less the roll of the rolling bodies round about an axis (axial; see
    rolling), 0 for centred balls; or its whole |w| (not features)."""
    travel = 0.0
    fastest = 0.0
    for j in range(bodies.shape[0]):
        b = bodies[j]
        if features and ball[b]:
            continue                      # a centred ball's spin moves no surface: 0
        w0, w1, w2 = vel[b, 3], vel[b, 4], vel[b, 5]
        if features and axial[b]:
            # The roll of a rolling body turns no feature (rolling).
            qw, qx, qy, qz = q[b, 0], q[b, 1], q[b, 2], q[b, 3]
            a0 = 2.0 * (qx * qz + qw * qy)
            a1 = 2.0 * (qy * qz - qw * qx)
            a2 = 1.0 - 2.0 * (qx * qx + qy * qy)
            roll = w0 * a0 + w1 * a1 + w2 * a2
            across2 = (w0 * w0 + w1 * w1 + w2 * w2) - roll * roll
            if across2 <= (ROLLING * ROLLING) * (roll * roll):
                w0 -= roll * a0
                w1 -= roll * a1
                w2 -= roll * a2
        spin = math.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
        fastest = max(fastest, spin)
        if counts[j]:
            travel = max(travel, spin * reach[b])
    return travel, fastest
