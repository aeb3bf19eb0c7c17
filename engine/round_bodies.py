"""Balls: bodies whose turn changes none of their contact rows.

A Sphere whose centre of mass is its centre (always, unless a caller moved it) is round about
every axis: a turn moves none of its surface, its contact normals pass through its centre (so a
contact's normal row has no angular part and its linearised separation does not read the turn),
and its inertia is isotropic. So the spin that calls for extra collision passes
(World.collision_steps_for) leaves balls out: a ball pit's rolling balls took 4 passes a frame
instead of 2 (bench/bench_speed.py balls216).

Bodies round about one axis (capsules, cylinders, cones) are not left out for their roll,
though their surface does not move either: measured, a capsule spinning at 60 rad/s on its side
on frictionless ground gains wobble (the turn about its other axes) with the gyroscopic term and
the relax sweeps together, 2.5 rad/s after 2 s at the passes the spin rule gives it, and the
inertia refresh (engine.inertia_refresh), which turns the contact arms with the whole turn,
holds that down only by losing a fifth of the spin. With fewer passes the wobble reached 28
rad/s. Until that is solved, their roll keeps counting.
"""
import numpy as np

from .kinds import ShapeKind


def centred_balls(shape_kind, com):
    """(K,) bool: Spheres (shape kinds shape_kind (K,)) with the centre of mass com (K, 3) at
    their centre."""
    return (shape_kind == ShapeKind.SPHERE) & ~com.any(axis=1)


def feature_spin(w, ball):
    """(K,) how fast each body turns its surface features: |w|, 0 for centred balls."""
    spin = np.linalg.norm(w, axis=1)
    spin[ball] = 0.0
    return spin
