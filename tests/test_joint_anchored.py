"""World.joint_anchored: which dynamic bodies live joints tie to the world or the scenery (the
add-on's fallen-body warning skips them: a chain's free end swings far below its anchor)."""
import numpy as np

from engine import Box, World


def test_bodies_chained_to_scenery_or_the_world_are_anchored_and_others_not():
    w = World()
    post = w.add_body(Box((0.2, 0.2, 0.2)), position=(0, 0, 5), kind="static")
    links = [w.add_body(Box((0.2, 0.2, 0.2)), position=(0.5 * (i + 1), 0, 5)) for i in range(3)]
    loose = [w.add_body(Box((0.2, 0.2, 0.2)), position=(5 + i, 0, 1)) for i in range(2)]
    hung = w.add_body(Box((0.2, 0.2, 0.2)), position=(9, 0, 3))
    free = w.add_body(Box((0.2, 0.2, 0.2)), position=(12, 0, 3))
    w.add_joint("point", post, links[0], position=(0.25, 0, 5))
    w.add_joint("point", links[0], links[1], position=(0.75, 0, 5))
    last = w.add_joint("point", links[1], links[2], position=(1.25, 0, 5))
    w.add_joint("point", loose[0], loose[1], position=(5.5, 0, 1))    # a pair on its own
    w.add_joint("point", hung, None, position=(9, 0, 3.2))             # to the world
    want = np.zeros(w.body_count, dtype=bool)
    want[links + [hung]] = True
    np.testing.assert_array_equal(w.joint_anchored(), want)
    w.set_joint_enabled(last, False)                                   # cut: the tail is free
    want[links[2]] = False
    np.testing.assert_array_equal(w.joint_anchored(), want)
    assert not w.joint_anchored()[free]
