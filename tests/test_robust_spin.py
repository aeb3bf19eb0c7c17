"""Energy from nowhere through contact lever arms and the inertia tensor (issue 11).

The scenes are fuzzer scenes cut down to the bodies that still blew up before the fixes
(``bench/fuzz_world.py --seed S --keep ...``), checked with the fuzzer's own invariants
(tests/fuzzworld.py: finite state, no body faster than the scene explains, total mechanical
energy bounded by the start's plus what push-out may add, no deep static overlap, replay)."""
import fuzzworld
import numpy as np
import pytest

from engine import Box, World
from engine.core import quat
from engine.dynamics import contact_kernels as kern
from engine.dynamics.arm_box import ArmBoxes
from engine.dynamics.inertia_refresh import InertiaRefresh

# (seed, kept bodies, steps). 549: a 0.27 m x 2 cm, 0.78 kg plate hit at a corner by a 74 kg
# ball at 100 m/s: the plate spun to 8.7e3 rad/s with a stale inertia tensor, 5.3e5 J from
# 3.7e5 J in the first step (fixed by engine.dynamics.inertia_refresh). 327: a 1.8 mm, 7 um thick,
# 438 kg needle hull squeezed by a capsule and a 46 g compound: contact arms 40x its
# thickness off its long axis spun it to 1.8e4 rad/s and flung the compound at 180 m/s
# (fixed by engine.dynamics.arm_box). 320: a 17.9 m, 0.27 kg needle falling at 424 m/s onto the
# ground (ccd): 2.3e5 J from 2.4e4 J (either fix alone holds it; both were needed for the
# whole scene).
SCENES = [(549, [2, 3], 6), (327, [2, 3, 8], 6), (320, [0, 5], 6)]


@pytest.mark.parametrize("seed,keep,steps", SCENES)
def test_thin_bodies_hit_into_fast_spins_keep_the_fuzz_invariants(seed, keep, steps):
    scene = fuzzworld.random_scene(seed).subset(keep)
    out = fuzzworld.run_scene(scene, steps=steps)
    assert out.ok, (seed, keep, out.failed_step, out.failure)
    assert out.guard_events == 0


def test_inertia_refresh_retakes_the_tensor_and_turns_the_arms_with_the_body():
    """After a body turned by more than REFRESH_ANGLE, the solver's rows for it are those a
    fresh solver built at the present orientation would have (arms turned with the body,
    R I^-1 R^T of now), and each point's separation is unchanged."""
    from engine.dynamics.inertia_refresh import REFRESH_ANGLE
    from engine.dynamics.solver import ContactSolver
    from engine.world.settings import WorldSettings
    rng = np.random.default_rng(3)
    inv_body = np.array([np.diag([50.0, 2.0, 1.0]), np.diag([3.0, 1.0, 1.5])])
    q0 = quat.normalize(rng.normal(size=(2, 4)))
    x = np.array([[0.0, 0.0, 0.0], [0.3, 0.1, 0.9]])
    normal = np.array([[0.1, 0.2, 1.0]]) / np.linalg.norm([0.1, 0.2, 1.0])
    pts = np.array([[[0.1, 0.05, 0.5], [-0.1, 0.05, 0.45], [0, 0, 0], [0, 0, 0]]])
    sep = np.array([[-0.01, 0.02, np.inf, np.inf]])

    def build(q, arms_pts):
        rot = quat.to_matrix(q)
        inv_i = rot @ inv_body @ np.swapaxes(rot, 1, 2)
        return ContactSolver(np.array([0]), np.array([1]), normal, arms_pts, sep,
                             np.array([2]), np.array([0.5]), np.zeros(1), x, np.ones(2),
                             inv_i, np.zeros((2, 6)), np.zeros(1), np.zeros((1, 4)),
                             np.zeros((1, 4, 3)), 1e-3, WorldSettings()), inv_i
    s, inv_i = build(q0, pts)
    jr_b, mjr_b = s.jr[..., 6:].copy(), s.mjr[..., 6:].copy()
    turn = quat.from_axis_angle(np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8]),
                                2.0 * REFRESH_ANGLE)
    q1 = q0.copy()
    q1[0] = quat.multiply(turn, q0[0])   # body 0 turned; body 1 did not
    dpose = np.zeros((2, 6))
    dpose[0, 3:] = [0.01, 0.02, -0.01]
    before = s.separations(dpose)[0]
    refresh = InertiaRefresh(np.array([0]), q0, inv_i, inv_body)
    refresh.update(s, q1, dpose)
    # Body 0's rows: those of a fresh solver at q1 whose points are body 0's arms turned
    # about its centre of mass; body 1's rows are untouched.
    moved = pts.copy()
    moved[0, :2] = x[0] + (pts[0, :2] - x[0]) @ quat.to_matrix(turn).T
    fresh, _ = build(q1, moved)
    np.testing.assert_allclose(s.jr[..., :6], fresh.jr[..., :6], rtol=0, atol=1e-12)
    np.testing.assert_allclose(s.mjr[..., :6], fresh.mjr[..., :6], rtol=0, atol=1e-12)
    np.testing.assert_array_equal(s.jr[..., 6:], jr_b)
    np.testing.assert_allclose(s.mjr[..., 6:], mjr_b, rtol=0, atol=1e-12)
    after = s.separations(dpose)[0]
    np.testing.assert_allclose(after[:2], before[:2], rtol=0, atol=1e-12)
    # Not turned far enough: nothing is rebuilt.
    s2, inv_i2 = build(q0, pts)
    jr = s2.jr.copy()
    q_small = q0.copy()
    q_small[0] = quat.multiply(quat.from_axis_angle(np.array([1.0, 0, 0]), 0.5 * REFRESH_ANGLE),
                               q0[0])
    InertiaRefresh(np.array([0]), q0, inv_i2, inv_body).update(s2, q_small, dpose)
    np.testing.assert_array_equal(s2.jr, jr)


def test_arm_boxes_bound_arms_by_the_shape_along_its_principal_axes():
    """A needle box turned at random: an arm inside the box is kept bit for bit; one outside
    goes to the nearest point of the box (brute force: the closest of a dense grid of the
    box), so its torque about the long axis is at most the box's half-width times the
    force."""
    w = World()
    he = np.array([0.9, 0.004, 0.002])
    q = quat.normalize(np.array([0.3, -0.2, 0.9, 0.1]))
    b = w.add_body(Box(he), orientation=q, mass=2.0)
    rot = quat.to_matrix(w.orientations)
    axes, lo, hi = ArmBoxes().world(w.table, w._v("shape"), w._v("kind"), w._v("inertia"),
                                    w._v("com"), rot)
    r_body = np.array([[0.5, 0.001, -0.001], [0.95, 0.3, -0.01], [-2.0, 0.0, 0.5],
                       [0.1, -0.004, 0.002]])
    r = (r_body @ rot[b].T)[None]        # (1, 4, 3) world arms
    # The solver's arms (engine.dynamics.contact_kernels.set_arms) of points r about a centre of mass
    # at the origin, with no reach clamp: the box alone.
    out = np.empty((1, 4, 3))
    kern.set_arms(np.zeros(1, np.int64), np.zeros(1, np.int64), np.array([[b, b]]),
                  np.array([4]), r, np.zeros((len(axes), 3)), axes, lo, hi,
                  np.full(len(axes), np.inf), out, np.empty((1, 4, 3)))
    out = out[0]
    np.testing.assert_array_equal(out[0], r[0, 0])      # inside: unchanged
    # On the boundary: unchanged but for round-off (the arm turned into the box's frame by a
    # BLAS product may land 1e-17 outside, on some CPUs, and be clamped back onto it).
    np.testing.assert_allclose(out[3], r[0, 3], rtol=0.0, atol=1e-15)
    g = [np.linspace(-e, e, 41) for e in he]
    grid = np.stack(np.meshgrid(*g, indexing="ij"), axis=-1).reshape(-1, 3) @ rot[b].T
    for k in (1, 2):
        best = grid[np.argmin(np.linalg.norm(grid - r[0, k], axis=1))]
        assert np.linalg.norm(out[k] - r[0, k]) <= np.linalg.norm(best - r[0, k]) + 1e-12
        local = out[k] @ rot[b]
        assert np.all(np.abs(local) <= he + 1e-12)
