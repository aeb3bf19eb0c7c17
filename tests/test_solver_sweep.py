"""engine/solver_sweep.py (the colour loop of ContactSolver.solve, written for numpy call
overhead) against the sweep as it was written before it (tests/solver_reference.py), bit for
bit: on random manifolds built to clamp and on resting stacks, through every route (one-product
and sequential, shared overflow colour, relax patterns, zero friction limits, refresh_inertia
in the middle of a pass), and on whole world runs of tumbling boxes and hulls.

Equality is np.array_equal: the rewrite folds negations (-(a + b) == (-a) - b in IEEE
arithmetic) and skips additions of exact zeros, which can only turn a -0.0 into +0.0, and
array_equal counts the two equal.
"""
import numpy as np
import pytest
import solver_reference
from test_solver import (
    GRAVITY,
    assert_close,
    build,
    ground_scene,
    random_bodies,
    random_pairs,
    random_scene,
    scene_dict,
    stacked_scene,
)

from engine import Box, ConvexHull, Sphere, World, solver_sweep
from engine.integrate import integrate_velocities
from engine.quat import to_matrix
from engine.solver import ContactSolver

REFRESH_AT = 1


def _state(s, vel):
    return {"vel": vel.copy(), "imp": s.imp.copy(), "max_normal": s.max_normal.copy(),
            "wait_normal": list(s._wait_normal), "wait_friction": list(s._wait_friction)}


def _assert_same(a, b, what):
    for k in a:
        assert np.array_equal(a[k], b[k]), f"{k} differs after {what}"


def _turns(rng, k):
    """k random rotation matrices of up to ~0.3 rad."""
    q = np.concatenate((np.ones((k, 1)), rng.uniform(-0.15, 0.15, (k, 3))), axis=1)
    return to_matrix(q / np.linalg.norm(q, axis=1, keepdims=True))


@pytest.mark.parametrize("kind", ["random", "stacked"])
@pytest.mark.parametrize("max_colours", [64, 2], ids=["coloured", "overflow"])
@pytest.mark.parametrize("one_product", [True, False], ids=["one-product", "sequential"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sweep_equals_the_reference_bit_for_bit(kind, max_colours, one_product, seed):
    """Both solvers built from one scene, driven chained as World._solve drives them (gravity,
    warm start, a biased pass, motion, two relax passes, per substep; the lever arms and
    inertia of a few bodies refreshed after the second substep; restitution at the end):
    after every pass the velocities, impulses, largest normal impulses and the one-product
    retry counters are identical."""
    rng = np.random.default_rng(1000 * seed + 7 * max_colours + (kind == "stacked"))
    h, nsub = 1.0 / 240.0, 6
    scene = random_scene(rng) if kind == "random" else stacked_scene(rng, h=h)
    vel_new, vel_ref = scene["vel"].copy(), scene["vel"].copy()
    new = build(**dict(scene, vel=vel_new), h=h, max_colours=max_colours,
                one_product=one_product)
    new.skip_inert_colours = False  # the reference sweeps every colour
    ref = solver_reference.use_reference(
        build(**dict(scene, vel=vel_ref), h=h, max_colours=max_colours,
              one_product=one_product))
    assert new.overflow == (max_colours == 2)
    movers = np.flatnonzero(scene["inv_mass"] > 0.0)
    ones = np.ones(len(movers))
    dpose_new = np.zeros((len(vel_new), 6))
    dpose_ref = np.zeros((len(vel_new), 6))
    inv_i = scene["inv_inertia"]
    for k in range(nsub):
        for vel in (vel_new, vel_ref):
            integrate_velocities(vel, movers, GRAVITY, ones, ones, h)
        new.warm_start(vel_new)
        ref.warm_start(vel_ref)
        new.solve(vel_new, dpose_new, True)
        ref.solve(vel_ref, dpose_ref, True)
        _assert_same(_state(new, vel_new), _state(ref, vel_ref), f"biased pass {k}")
        dpose_new[movers] += h * vel_new[movers]
        dpose_ref[movers] += h * vel_ref[movers]
        if k == REFRESH_AT:
            bodies = movers[::3]
            turn = _turns(rng, len(bodies))
            fresh = inv_i.copy()
            fresh[bodies] = np.einsum("kij,kjl,kml->kim", turn, inv_i[bodies], turn)
            new.refresh_inertia(bodies, turn, fresh, dpose_new)
            ref.refresh_inertia(bodies, turn, fresh, dpose_ref)
        for i in range(2):
            new.solve(vel_new, dpose_new, False)
            ref.solve(vel_ref, dpose_ref, False)
            _assert_same(_state(new, vel_new), _state(ref, vel_ref), f"relax {i} of {k}")
    new.restitution(vel_new)
    ref.restitution(vel_ref)
    _assert_same(_state(new, vel_new), _state(ref, vel_ref), "restitution")


def _tumbling_world():
    """Boxes, hulls and spheres thrown into a walled pen: contacts that open, close, slide
    and stick, several colours, speculative points."""
    rng = np.random.default_rng(3)
    w = World()
    w.add_body(Box([4.0, 4.0, 0.5]), position=(0, 0, -0.5), kind="static")
    for sx, sy, px, py in ((0.2, 2.0, 1.6, 0.0), (0.2, 2.0, -1.6, 0.0),
                           (2.0, 0.2, 0.0, 1.6), (2.0, 0.2, 0.0, -1.6)):
        w.add_body(Box([sx, sy, 0.6]), position=(px, py, 0.6), kind="static")
    rock = ConvexHull(rng.normal(size=(16, 3)) * [0.25, 0.2, 0.15])
    shapes = [Box([0.25, 0.25, 0.25]), rock, Box([0.4, 0.15, 0.1]), Sphere(0.2)]
    for i in range(14):
        q = rng.normal(size=4)
        b = w.add_body(shapes[i % 4], position=rng.uniform([-1.0, -1.0, 0.3], [1.0, 1.0, 2.5]),
                       orientation=q / np.linalg.norm(q), friction=0.6, restitution=0.1)
        w.set_velocity(b, linear=rng.uniform(-2.0, 2.0, 3), angular=rng.uniform(-5, 5, 3))
    return w


def test_world_runs_bit_identical_with_the_reference_sweep(monkeypatch):
    """A tumbling world stepped with the rewritten sweep and with the reference sweep ends in
    the same bits (chaotic: a single differing bit would grow to visible differences)."""
    monkeypatch.setattr(ContactSolver, "skip_inert_colours", False)
    runs = []
    for reference in (False, True):
        if reference:
            monkeypatch.setattr(ContactSolver, "solve", solver_reference.reference_solve)
        w = _tumbling_world()
        for _ in range(30):
            w.step(1.0 / 24.0)
        runs.append([w.positions.copy(), w.orientations.copy(), w.linear_velocities.copy(),
                     w.angular_velocities.copy()])
    for a, b, what in zip(runs[0], runs[1], ("positions", "orientations", "linear velocities",
                                            "angular velocities")):
        assert np.array_equal(a, b), what
    assert np.abs(runs[0][2]).max() > 0.0  # it did move


def test_solve_rejects_a_velocity_array_it_cannot_write_through():
    """The sweep writes velocities through a flat view of the (N, 6) array: one that has no
    flat view (its rows padded) is refused with a clear error rather than silently left
    unchanged."""
    rng = np.random.default_rng(5)
    scene = random_scene(rng)
    s = build(**scene)
    vel = np.zeros((len(scene["vel"]), 7))[:, :6]  # rows 7 apart: no flat view
    vel[:] = scene["vel"]
    with pytest.raises(ValueError, match="C-contiguous"):
        s.solve(vel, np.zeros_like(scene["vel"]), True)


def _near_miss_scene(rng, n_bodies=16, m=50):
    """Random manifolds whose points are all apart (0.5-3 cm) and carry no warm impulse;
    most bodies drift slowly (they do not close their gaps within a substep), a few are
    thrown at their neighbours (they do): colours that stay inert and colours that wake."""
    inv_mass, inv_inertia = random_bodies(rng, n_bodies, 2)
    x_com = rng.uniform(-2.0, 2.0, size=(n_bodies, 3))
    vel = rng.normal(size=(n_bodies, 6)) * 0.05
    vel[:2] = 0.0
    vel[rng.choice(np.arange(2, n_bodies), 3, replace=False)] *= 300.0
    ia, ib, normal, points = random_pairs(rng, x_com, m, 2)
    return scene_dict(rng, ia, ib, normal, points, rng.uniform(0.005, 0.03, size=(m, 4)),
                      rng.integers(1, 5, m), rng.uniform(0.2, 1.0, m), x_com, inv_mass,
                      inv_inertia, vel, np.zeros((m, 4)), np.zeros((m, 4, 3)))


@pytest.mark.parametrize("kind", ["near-miss", "random"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_skipping_inert_colours_changes_nothing_but_round_off(kind, seed, monkeypatch):
    """A colour with no impulse whose rows would take none (engine.solver_sweep._inert) is
    passed over. Against the same solver sweeping every colour, pass by pass from the same
    state (velocities, impulses, retry counters): equal to round-off, where some colours
    were passed over and others, thrown bodies closing their gaps, were not."""
    skipped = []
    monkeypatch.setattr(solver_sweep, "_pass_over",
                        lambda wn, wf, ci, f=solver_sweep._pass_over: (skipped.append(ci),
                                                                      f(wn, wf, ci)))
    rng = np.random.default_rng(50 + seed)
    h = 1.0 / 240.0
    scene = _near_miss_scene(rng) if kind == "near-miss" else random_scene(rng)
    vel_on, vel_off = scene["vel"].copy(), scene["vel"].copy()
    on = build(**dict(scene, vel=vel_on), h=h)
    off = build(**dict(scene, vel=vel_off), h=h)
    off.skip_inert_colours = False
    movers = np.flatnonzero(scene["inv_mass"] > 0.0)
    ones = np.ones(len(movers))
    dpose = np.zeros((len(vel_on), 6))
    woke = False
    for k in range(4):
        for vel in (vel_on, vel_off):
            integrate_velocities(vel, movers, GRAVITY, ones, ones, h)
        on.warm_start(vel_on)
        off.warm_start(vel_off)
        for use_bias in (True, False, False):
            before = len(skipped)
            on.solve(vel_on, dpose.copy(), use_bias)
            off.solve(vel_off, dpose.copy(), use_bias)
            assert_close(vel_on, vel_off, f"velocities, substep {k}")
            assert_close(on.imp, off.imp, f"impulses, substep {k}")
            woke |= len(skipped) - before < sum(c1 > c0 for c0, c1 in
                                                zip(on.offsets[:-1], on.offsets[1:]))
            # Same state again for the next pass (as test_solver's one-product test does).
            vel_on[:] = vel_off
            on.imp[:] = off.imp
            on.max_normal[:] = off.max_normal
            on._wait_normal[:] = off._wait_normal
            on._wait_friction[:] = off._wait_friction
            if not use_bias:
                continue
            dpose[movers] += h * vel_off[movers]
    if kind == "near-miss":
        assert skipped, "no colour was inert"
        assert woke and np.abs(off.imp).max() > 0.0, "no colour took an impulse"


def test_a_closing_speculative_contact_is_not_skipped():
    """A box 1 cm above static ground falling at 10 m/s closes its gap within a 1/240 s
    substep (s / h = 2.4 m/s): its colour has no impulse yet but is not inert; the biased
    sweep stops it at the surface (normal velocity -s/h, the speed that just closes the gap)."""
    corners = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]]) * 0.5
    local = np.concatenate((corners, np.full((4, 1), -0.5)), axis=1)
    h = 1.0 / 240.0
    s, vel = ground_scene(local, [0.0, 0.0, -10.0, 0.0, 0.0, 0.0], sep=0.01, h=h)
    s.solve(vel, np.zeros((2, 6)), True)
    assert s.imp[:4].min() > 0.0
    assert vel[1, 2] == pytest.approx(-0.01 / h, rel=1e-9)
