"""engine.features.glue: fractured pieces as bodies glued by breakable fixed joints; Start Deactivated.

Closed forms (a hanging piece breaks exactly when its weight exceeds strength x area) and the
issue's wall scenarios: 60 glued pieces hold under gravity, a weak glue breaks under a
1000 kg ball at 15 m/s, a strong one does not (the wall then moves as one body).

Glued walls are solved with World(iterations=4): with one iteration the Gauss-Seidel joint
sweeps over a 60-piece network gain energy under the impact (see the report / bench).
"""
import numpy as np
import pytest
from scenes_meshes import box_mesh, torus_mesh

from engine import Box, Compound, ConvexHull, EngineError, Sphere, World
from engine.dynamics.joints import _FIELDS
from engine.features.fracture import fracture, volume_points
from engine.features.glue import add_glue, add_pieces, piece_shape, start_asleep

WALL = (2.0, 0.25, 1.5)
DENSITY = 2000.0


def wall_world(strength, asleep=False, ball=False):
    v, f = box_mesh(WALL)
    v = v - np.array([WALL[0] / 2, WALL[1] / 2, 0.0])
    fr = fracture(v, f, volume_points(v, f, 60, seed=7))
    w = World(iterations=4)
    w.add_body(Box((10, 10, 0.5)), position=(0, 0, -0.5), kind="static")
    bodies = add_pieces(w, fr, density=DENSITY, asleep=asleep)
    keep = fr.bond_area >= 0.02 * np.median(fr.bond_area)
    joints = add_glue(w, bodies[fr.bond_a[keep]], bodies[fr.bond_b[keep]],
                      fr.bond_centre[keep], fr.bond_area[keep], strength)
    if ball:
        w.add_body(Sphere(0.4), position=(0, -0.6, 0.75), linear_velocity=(0, 15, 0), mass=1000)
    return w, fr, bodies, joints


def test_bulk_glue_equals_add_joint_one_by_one():
    v, f = box_mesh()
    fr = fracture(v, f, volume_points(v, f, 12, seed=1))
    worlds = []
    for bulk in (True, False):
        w = World()
        b = add_pieces(w, fr, density=500)
        if bulk:
            add_glue(w, b[fr.bond_a], b[fr.bond_b], fr.bond_centre, fr.bond_area, 3e4)
        else:
            for k in range(len(fr.bond_a)):
                w.add_joint("fixed", int(b[fr.bond_a[k]]), int(b[fr.bond_b[k]]),
                            fr.bond_centre[k], break_force=3e4 * fr.bond_area[k])
        worlds.append(w)
    for name in _FIELDS:
        assert np.array_equal(worlds[0].joints.v(name), worlds[1].joints.v(name)), name
    for _ in range(5):
        for w in worlds:
            w.step(1 / 60)
    assert np.array_equal(worlds[0].positions, worlds[1].positions)


def test_pieces_as_bodies_mass_and_shapes():
    v, f = box_mesh()
    fr = fracture(v, f, volume_points(v, f, 10, seed=2))
    w = World()
    b = add_pieces(w, fr, density=300.0)
    assert np.allclose(w.masses[b], 300.0 * np.array([p.volume for p in fr.pieces]), rtol=1e-9)
    assert np.allclose(w.centers_of_mass[b], [p.centroid for p in fr.pieces], atol=1e-9)
    assert isinstance(piece_shape(fr.pieces[0]), ConvexHull)
    tv, tf = torus_mesh(nu=16, nv=8)
    tfr = fracture(tv, tf, np.array([[0.0, 0.0, 0.0], [2.0, 0.0, 0.0]]))
    ring = next(p for p in tfr.pieces if p.seed == 0)       # a C-shaped arc: not convex
    assert not ring.convex
    shape = piece_shape(ring)
    assert isinstance(shape, Compound) and len(shape.shapes) == 8
    # The parts' hulls cover the piece and hug it (coarse 16 x 8 torus: within 20 %).
    hulls = sum(h.volume for h in shape.shapes)
    assert ring.volume <= hulls < 1.2 * ring.volume


@pytest.mark.parametrize("factor, broken", [(0.9, True), (1.1, False)])
def test_hanging_piece_breaks_at_strength_times_area(factor, broken):
    """A box cut in two (seeds above each other); the top half is static, the bottom half hangs
    from the glue: it breaks iff m g > strength x area."""
    v, f = box_mesh((0.4, 0.4, 0.8))
    fr = fracture(v, f, np.array([[0.2, 0.2, 0.2], [0.2, 0.2, 0.6]]))
    assert len(fr.bond_area) == 1 and fr.bond_area[0] == pytest.approx(0.16, rel=1e-12)
    w = World()
    bottom = w.add_body(piece_shape(fr.pieces[0]), position=fr.pieces[0].centroid, mass=10.0)
    top = w.add_body(piece_shape(fr.pieces[1]), position=fr.pieces[1].centroid, kind="static")
    weight = 10.0 * 9.81
    add_glue(w, [top], [bottom], fr.bond_centre, fr.bond_area, factor * weight / 0.16)
    for _ in range(30):
        w.step(1 / 60)
    assert bool(w.joint_broken[0]) is broken
    drop = fr.pieces[0].centroid[2] - w.centers_of_mass[bottom][2]
    if broken:
        assert drop > 0.5 * 9.81 * 0.3 ** 2          # fell freely for most of 0.5 s
    else:
        assert abs(drop) < 1e-3


def test_add_glue_bad_input():
    w = World()
    a = w.add_body(Box((1, 1, 1)))
    with pytest.raises(EngineError, match="itself"):
        add_glue(w, [a], [a], [[0, 0, 0]], [1.0], 1.0)
    with pytest.raises(EngineError, match=">= 0"):
        add_glue(w, [a], [a], [[0, 0, 0]], [1.0], -1.0)
    with pytest.raises(EngineError, match="out of range"):
        add_glue(w, [a], [5], [[0, 0, 0]], [1.0], 1.0)
    with pytest.raises(EngineError, match="one row per"):
        add_glue(w, [a], [a, a], [[0, 0, 0]], [1.0], 1.0)


@pytest.mark.parametrize("sleeping", [True, False])
def test_start_asleep_still_until_touched(sleeping):
    w = World(sleeping=sleeping)
    w.add_body(Box((10, 10, 0.5)), position=(0, 0, -0.5), kind="static")
    hang = w.add_body(Box((0.5, 0.5, 0.5)), position=(0, 0, 2.0))      # in mid-air
    hit = w.add_body(Box((0.5, 0.5, 0.5)), position=(3, 0, 0.25))
    start_asleep(w, [hang, hit])
    w.add_body(Sphere(0.2), position=(1.5, 0, 0.25), linear_velocity=(5, 0, 0), mass=5)
    p0 = w.positions.copy()
    for _ in range(24):
        w.step(1 / 24)
    assert np.array_equal(w.positions[hang], p0[hang])      # exactly still, never touched
    assert w.sleeping[hang]
    assert w.positions[hit][0] > p0[hit][0] + 0.05          # woken and pushed by the ball
    with pytest.raises(EngineError):
        start_asleep(w, [0])                                 # the static ground


def test_wall_holds_under_gravity():
    w, fr, bodies, joints = wall_world(1e6)
    x0 = w.positions[bodies].copy()
    for _ in range(48):
        w.step(1 / 24)
    move = np.linalg.norm(w.positions[bodies] - x0, axis=1).max()
    assert move < 2e-3
    assert not w.joint_broken.any()


def test_asleep_wall_costs_nothing_and_is_exactly_still():
    w, fr, bodies, joints = wall_world(1e6, asleep=True)
    x0 = w.positions[bodies].copy()
    for _ in range(24):
        w.step(1 / 24)
    assert np.array_equal(w.positions[bodies], x0)
    assert w.sleeping[bodies].all()


def test_weak_glue_breaks_under_ball_strong_does_not():
    w, fr, bodies, joints = wall_world(1e6, asleep=True, ball=True)
    for _ in range(12):
        w.step(1 / 24)
    assert w.joint_broken.sum() > 0.2 * len(joints)
    assert np.isfinite(w.linear_velocities).all()
    assert np.abs(w.linear_velocities).max() < 15.0    # no energy from nowhere

    w, fr, bodies, joints = wall_world(1e10, asleep=True, ball=True)
    ja, jb = w.joints.v("body_a"), w.joints.v("body_b")
    d0 = np.linalg.norm(w.centers_of_mass[ja] - w.centers_of_mass[jb], axis=1)
    x0 = w.positions[bodies].copy()
    for _ in range(12):
        w.step(1 / 24)
    assert not w.joint_broken.any()
    assert np.linalg.norm(w.positions[bodies] - x0, axis=1).min() > 0.05   # it was hit
    d1 = np.linalg.norm(w.centers_of_mass[ja] - w.centers_of_mass[jb], axis=1)
    assert np.abs(d1 - d0).max() < 5e-3                 # and moved as one body
    assert np.abs(w.linear_velocities).max() < 15.0
