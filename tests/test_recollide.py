"""engine/world/recollide.py and ContactSolver.replace: polytope manifolds taken again between
substeps, in place of the collision passes a turning body used to call for.

- replace with the manifold the solver already holds changes nothing; with its points in
  another order, each point keeps its impulses by feature id, and a new point starts at zero;
- spinning plates thrown onto the ground land at most as deep as with the old passes and
  clearly less deep than with neither (lowest vertex against the exact ground plane), on 2
  passes a frame;
- small worlds keep the spin passes (World.recollide_min_manifolds); a run replays to the bit.
"""
import numpy as np
import pytest
from test_solver import build

from engine import Box, World
from engine.core import quat


def _resting_solver():
    """A box (2 kg) resting on static ground on its 4 corners, after one substep."""
    x_com = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 0.5]])
    corners = np.array([[sx, sy, 0.0] for sx in (-0.5, 0.5) for sy in (-0.5, 0.5)])
    pts = corners[None].copy()
    sep = np.full((1, 4), -1e-4)
    inv_mass = np.array([0.0, 0.5])
    inv_inertia = np.zeros((2, 3, 3))
    inv_inertia[1] = np.eye(3) * 3.0
    vel = np.zeros((2, 6))
    vel[1] = (0.3, -0.1, -0.5, 0.0, 0.0, 0.2)
    s = build(np.array([0]), np.array([1]), np.array([[0.0, 0.0, 1.0]]), pts, sep,
              np.array([4]), np.array([0.6]), np.array([0.0]), x_com, inv_mass, inv_inertia,
              vel, warm_n=np.full((1, 4), 0.01))
    dpose = np.zeros((2, 6))
    s.warm_start(vel)
    s.solve(vel, dpose, True)
    s.solve(vel, dpose, False)
    return s, x_com, inv_inertia, vel, dpose, pts, sep


SOLVER_ARRAYS = ("jr", "mjr", "kmat", "eff", "k_pinv", "sep0", "imp", "max_normal", "v_impact",
                 "dirs", "count")


def test_replace_with_the_same_manifold_changes_nothing():
    s, x_com, inv_i, vel, dpose, pts, sep = _resting_solver()
    before = {k: getattr(s, k).copy() for k in SOLVER_ARRAYS}
    ids = np.array([[11, 12, 13, 14]])
    fresh = {"normal": np.array([[0.0, 0.0, 1.0]]), "points": pts, "separation": sep,
             "count": np.array([4]), "ids": ids, "old_ids": ids, "accel_n": np.zeros(1)}
    s.replace(np.array([0]), fresh, x_com, inv_i, None, None, vel, dpose)
    for k in SOLVER_ARRAYS:
        np.testing.assert_allclose(getattr(s, k), before[k], rtol=0, atol=1e-12, err_msg=k)
    assert np.abs(before["imp"][:, :4]).min() > 0.0        # the impulses compared are real ones


def test_replace_keeps_each_points_impulses_by_feature_id():
    s, x_com, inv_i, vel, dpose, pts, sep = _resting_solver()
    imp = s.imp.copy()
    old_ids = np.array([[11, 12, 13, 14]])
    # The same corners in another order, the last one a new feature (id 99).
    perm = np.array([2, 0, 3, 1])
    new_ids = old_ids[:, perm].copy()
    new_ids[0, 3] = 99
    fresh = {"normal": np.array([[0.0, 0.0, 1.0]]), "points": pts[:, perm],
             "separation": sep[:, perm], "count": np.array([4]), "ids": new_ids,
             "old_ids": old_ids, "accel_n": np.zeros(1)}
    s.replace(np.array([0]), fresh, x_com, inv_i, None, None, vel, dpose)
    np.testing.assert_allclose(s.imp[0, :3], imp[0, perm[:3]], rtol=0, atol=1e-15)
    assert s.imp[0, 3] == 0.0 and s.imp[0, 4 + 6] == 0.0 and s.imp[0, 5 + 6] == 0.0
    # Friction: the world vector of each kept point, on the (same) tangents.
    for new, old in enumerate(perm[:3]):
        np.testing.assert_allclose(s.imp[0, 4 + 2 * new:6 + 2 * new],
                                   imp[0, 4 + 2 * old:6 + 2 * old], rtol=0, atol=1e-15)


PLATE = np.array([[sx, sy, sz] for sx in (-0.5, 0.5) for sy in (-0.3, 0.3) for sz in (-0.2, 0.2)])


def _spinning_plates(mode, seed, dt=1 / 24, frames=48):
    """Six 1 x 0.6 x 0.4 m plates, random tilts, thrown down at 2 m/s spinning at ~12 rad/s:
    (deepest vertex below the ground over the frames (m), passes a frame, manifolds taken
    again)."""
    w = World(sleeping=False)
    if mode == "passes":            # the spin passes, as before engine.world.recollide
        w.recollide_in_pass = False
    elif mode == "neither":
        w.recollide_in_pass = False
        w.settings = w.settings.replace(max_spin_travel=1e3)
    else:
        w.recollide_min_manifolds = 0
    w.add_body(Box((10.0, 10.0, 0.5)), position=(0.0, 0.0, -0.5), kind="static")
    rng = np.random.default_rng(seed)
    plates = []
    for i in range(6):
        q = quat.normalize(rng.normal(size=4))
        plates.append(w.add_body(Box((0.5, 0.3, 0.2)), position=(i * 1.5 - 3.75, 0.0, 0.9),
                                 orientation=q, linear_velocity=(0.0, 0.0, -2.0),
                                 angular_velocity=rng.normal(size=3) * 7.0, mass=1.0))
    worst, passes, taken = 0.0, 0, 0
    for _ in range(frames):
        passes += w.collision_steps_for(dt)
        w.step(dt)
        taken += w.last_recollided
        for b in plates:
            z = PLATE @ quat.to_matrix(w.orientations[b:b + 1])[0].T[:, 2] + w.positions[b, 2]
            worst = max(worst, -z.min())
    return worst, passes / frames, taken


def test_spinning_plates_land_without_spin_passes():
    new = [_spinning_plates("recollide", s) for s in range(3)]
    old = [_spinning_plates("passes", s) for s in range(3)]
    bare = [_spinning_plates("neither", s) for s in range(3)]
    assert all(p == 2.0 for _, p, _ in new)             # no spin passes...
    assert all(t > 0 for _, _, t in new)                # ...the manifolds were taken again
    assert all(p > 2.0 for _, p, _ in old)
    depth = np.array([r[0] for r in new])
    assert depth.max() < 2e-3
    assert depth.sum() < 0.5 * sum(r[0] for r in bare)  # it does the passes' work...
    assert depth.sum() < 1.2 * sum(r[0] for r in old)   # ...as well as they did


def test_small_worlds_keep_the_spin_passes():
    w = World(sleeping=False)
    w.add_body(Box((10.0, 10.0, 0.5)), position=(0.0, 0.0, -0.5), kind="static")
    w.add_body(Box((0.5, 0.5, 0.5)), position=(0.0, 0.0, 0.5), angular_velocity=(0, 0, 20.0))
    w.step(1 / 24)
    assert w.collision_steps_for(1 / 24) > 2 and not w._recollide_on
    w.recollide_min_manifolds = 1
    assert w.collision_steps_for(1 / 24) == 2 and w._recollide_on


@pytest.mark.parametrize("seed", [4])
def test_recollide_replays_to_the_bit(seed):
    def run():
        w = World(sleeping=False)
        w.recollide_min_manifolds = 0
        w.add_body(Box((10.0, 10.0, 0.5)), position=(0.0, 0.0, -0.5), kind="static")
        rng = np.random.default_rng(seed)
        for i in range(8):
            w.add_body(Box((0.4, 0.3, 0.2)), position=(i % 4 - 1.5, i // 4 - 0.5, 0.6 + 0.3 * i),
                       orientation=quat.normalize(rng.normal(size=4)),
                       angular_velocity=rng.normal(size=3) * 8.0)
        for _ in range(24):
            w.step(1 / 24)
        return w.positions.copy(), w.orientations.copy(), w.linear_velocities.copy()
    for a, b in zip(run(), run()):
        assert np.array_equal(a, b)
