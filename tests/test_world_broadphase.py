"""The World's persistent broadphase (fat boxes kept across steps, engine.collision.broadphase.Broadphase)
must give exactly the pairs a fresh broadphase.find_pairs gives on the same boxes: the
trajectories of a tumbling pile are bit-identical with either, including after bodies fall
asleep, are woken and are teleported."""
import numpy as np

from engine.collision.broadphase import find_pairs
from engine.shapes.primitives import Box, Capsule, Sphere
from engine.world.world import World


class FreshBroadphaseWorld(World):
    def _broadphase(self, lo, hi, passive):
        return find_pairs(lo, hi, self._v("group"), self._v("mask"), passive)


def _run(cls):
    rng = np.random.default_rng(4)
    w = cls()
    w.add_body(Box([6, 6, 0.5]), position=(0, 0, -0.5), kind="static")
    shapes = [Box([0.2, 0.15, 0.1]), Sphere(0.15), Capsule(0.1, 0.2)]
    for i in range(15):
        w.add_body(shapes[i % 3], position=rng.uniform([-1, -1, 0.3], [1, 1, 1.5]),
                   orientation=rng.normal(size=4), angular_velocity=rng.normal(size=3))
    out, asleep = [], 0
    for step in range(100):
        asleep = max(asleep, int(w.sleeping.sum()))
        if step == 80:
            w.set_velocity(5, linear=(3.0, 0, 2.0))       # wake an island, throw a body
        if step == 90:
            w.set_pose(7, position=(0.0, 0.0, 1.5))        # teleport (fat box left behind)
        w.step(1 / 30)
        out.append(np.concatenate((w.positions.ravel(), w.orientations.ravel())))
    return np.array(out), asleep


def test_persistent_broadphase_gives_bit_identical_trajectories():
    got, asleep = _run(World)
    want, _ = _run(FreshBroadphaseWorld)
    assert asleep >= 5                         # sleeping and waking really happened
    np.testing.assert_array_equal(got, want)
