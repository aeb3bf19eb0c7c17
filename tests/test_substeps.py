"""engine/dynamics/substeps.py: a pass of contacts alone runs its substeps in one compiled call,
stopping where the pass's Python machinery has work (refreshed rows, a struck body, manifolds
taken again). It must give the Python loop's numbers bit for bit, with each of those events
happening in the scenes below (counted, so the test cannot pass by not reaching them)."""
import numpy as np
import pytest

from engine import Box, ConvexHull, Sphere, World
from engine.dynamics import substeps
from engine.world import world as world_module


def python_loop(monkeypatch):
    """Route every pass to World._substeps_python (the reference)."""
    def run(self, solver, refresh, struck, again, man, nsub, h, act, movers, lin_f, ang_f,
            gyro, inertia_g, dpose, inv_i):
        return self._substeps_python(solver, None, refresh, struck, again, man, nsub, h, act,
                                     movers, lin_f, ang_f, gyro, inertia_g, dpose, inv_i)
    monkeypatch.setattr(world_module.World, "_substeps_compiled", run)


def count_events(monkeypatch):
    """Count why the compiled substeps stopped."""
    seen = {substeps.REFRESH: 0, substeps.STRUCK: 0, substeps.RECOLLIDE: 0, substeps.DONE: 0}
    real = world_module.run_substeps

    def counting(*args):
        out = real(*args)
        seen[out[1]] += 1
        return out
    monkeypatch.setattr(world_module, "run_substeps", counting)
    return seen


def tumbling(seed):
    """Hulls, plates and cubes thrown onto a ground and at each other: anisotropic bodies
    (the gyroscopic kernel), thin plates spun past the refresh angle, a fast ball striking
    the pile (struck), and enough polytope manifolds for recollide."""
    rng = np.random.default_rng(seed)
    w = World()
    w.recollide_min_manifolds = 4
    w.add_body(Box([6.0, 6.0, 0.5]), position=(0, 0, -0.5), kind="static")
    for k in range(10):
        pos = (rng.uniform(-1.5, 1.5), rng.uniform(-1.5, 1.5), 0.3 + 0.35 * k)
        q = rng.normal(size=4)
        shape = (ConvexHull(rng.normal(size=(12, 3)) * [0.3, 0.2, 0.12]) if k % 3 == 0 else
                 Box([0.3, 0.12, 0.02]) if k % 3 == 1 else Box([0.15, 0.15, 0.15]))
        w.add_body(shape, position=pos, orientation=q / np.linalg.norm(q),
                   angular_velocity=rng.normal(size=3) * 30.0)
    w.add_body(Sphere(0.2), position=(-4.0, 0.0, 0.6), linear_velocity=(40.0, 0.0, 0.0),
               density=8000.0)
    return w


def run(w, frames=30):
    for _ in range(frames):
        w.step(1.0 / 24.0)
    return w.get_state()


@pytest.mark.parametrize("seed", range(3))
def test_compiled_substeps_equal_the_python_loop(seed, monkeypatch):
    with monkeypatch.context() as m:
        seen = count_events(m)
        compiled = run(tumbling(seed))
    with monkeypatch.context() as m:
        python_loop(m)
        reference = run(tumbling(seed))
    assert seen[substeps.REFRESH] and seen[substeps.RECOLLIDE], seen
    for key in compiled:
        a, b = np.asarray(compiled[key]), np.asarray(reference[key])
        if a.dtype.kind in "fiub" and a.shape == b.shape:
            np.testing.assert_array_equal(a, b, err_msg=key)


def test_a_struck_body_ends_the_compiled_pass(monkeypatch):
    """The fast ball hits the pile: some pass ends early in the compiled loop too."""
    seen = count_events(monkeypatch)
    hits = 0
    for seed in range(3):
        run(tumbling(seed), frames=24)
        hits += seen[substeps.STRUCK]
    assert hits > 0, seen


def test_joints_and_fields_take_the_python_loop(monkeypatch):
    seen = count_events(monkeypatch)
    w = World()
    w.add_body(Box([3.0, 3.0, 0.5]), position=(0, 0, -0.5), kind="static")
    a = w.add_body(Box([0.2, 0.2, 0.2]), position=(0, 0, 0.2))
    b = w.add_body(Box([0.2, 0.2, 0.2]), position=(0, 0, 0.6))
    w.add_joint("fixed", a, b, position=(0, 0, 0.4))
    run(w, frames=4)
    assert sum(seen.values()) == 0
