"""Round bodies: what a turn about their axis does not change.

A Sphere, Capsule, Cylinder or Cone is round about its local Z axis; with the centre of mass on
that axis (always, unless a caller moved it), a turn about the axis moves none of its surface
and leaves its world inertia as it is. A ball centred on its centre of mass is round about every
axis.

- Contact rows (engine.solver._rows, round_axes): a round body's normal rows have no part along
  its axis. At the true contact point that holds by itself (the normal through a round surface
  meets the axis), but the solver holds its arms and axes over a pass, and once the axis has
  turned a little the roll reads as a normal velocity: a capsule spinning at 60 rad/s on its
  side on frictionless ground gained wobble, 2.5 rad/s in 2 s, and the inertia refresh, which
  turns the arms with the roll, lost a fifth of the spin. Projected, it keeps its spin and its
  wobble stays under 0.02 rad/s (tests/test_spin_passes.py).
- Collision passes (World.collision_steps_for): a centred ball's spin does not count, its
  contacts' normal rows having no angular part at all: a ball pit's rolling balls took 4 passes
  a frame instead of 2 (bench/bench_speed.py balls216). Capsules', cylinders' and cones' roll
  still counts: with fewer passes their axes and arms are held longer, and the projection then
  leaks the roll back in (the spinning capsule's wobble reached 6 rad/s in 2 s at 2 passes).

Tried and left out: retaking a round body's rows whenever its axis has tilted so far that its
roll reads through at more than 1e-6 m/s, turning them by the axis's swing only. The spinning
capsule then stays calm for 6 s (wobble 0.005 rad/s) at 2 passes a frame whatever its roll,
and wheels roll down a slope on 2 passes, but tumbling capsules tilt all the time: 216 of them
thrown into a pen took 120.6 ms a frame instead of 77.1 (looser tolerances let the wobble grow
again: 1e-3 m/s, 2.2 rad/s in 6 s, and still cost 101 ms). Cheaper retaking of the rows would
bring it back.
"""
import numpy as np

from .kinds import ShapeKind

ROUND_KINDS = (ShapeKind.SPHERE, ShapeKind.CAPSULE, ShapeKind.CYLINDER, ShapeKind.CONE)


def round_about_z(shape_kind, com):
    """(K,) bool: shapes round about their local Z axis (Sphere, Capsule, Cylinder, Cone)
    with the centre of mass on it, but not centred balls: their normal rows have no angular
    part to leave out, and the solver then skips the projection for scenes of balls."""
    return (np.isin(shape_kind, ROUND_KINDS) & (com[:, 0] == 0.0) & (com[:, 1] == 0.0)
            & ~centred_balls(shape_kind, com))


def centred_balls(shape_kind, com):
    """(K,) bool: Spheres (shape kinds shape_kind (K,)) with the centre of mass com (K, 3) at
    their centre."""
    return (shape_kind == ShapeKind.SPHERE) & ~com.any(axis=1)


def feature_spin(w, ball):
    """(K,) how fast each body turns its surface features: |w|, 0 for centred balls."""
    spin = np.linalg.norm(w, axis=1)
    spin[ball] = 0.0
    return spin

