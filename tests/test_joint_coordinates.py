"""World.joint_coordinates: the six coordinates the limits bound and the springs pull to zero."""
import numpy as np
import pytest

from engine import Box, World
from engine.core import quat


def _rot(axis, angle):
    return quat.from_axis_angle(np.asarray(axis, float), angle)


@pytest.mark.parametrize("to_world", [False, True])
def test_coordinates_read_back_a_known_pose(to_world):
    """A joint made with a turned frame, body B then moved by a known offset along the frame's
    axes and turned by known XYZ Euler angles about them (R = Rx Ry Rz in the frame): the
    coordinates are that offset and those angles, and zero at creation."""
    w = World(gravity=(0.0, 0.0, 0.0))
    a = w.add_body(Box((0.3, 0.3, 0.3)), position=(0.0, 0.0, 0.0),
                   orientation=_rot((1, 1, 0), 0.4))
    b = w.add_body(Box((0.3, 0.3, 0.3)), position=(1.0, 0.2, -0.1),
                   orientation=_rot((0, 1, 1), -0.7))
    frame = _rot((0.2, -1.0, 0.5), 1.1)
    pivot = np.array([0.5, 0.1, 0.0])
    if to_world:
        w.add_joint("generic", b, None, position=pivot, orientation=frame)   # B is b
    else:
        w.add_joint("generic", a, b, position=pivot, orientation=frame)
    np.testing.assert_allclose(w.joint_coordinates, 0.0, atol=1e-12)
    off = np.array([0.05, -0.02, 0.03])
    angles = np.array([0.3, -0.5, 0.8])
    fm = quat.to_matrix(frame[None])[0]
    # turn B about the pivot by the frame-relative rotation, then shift it along the frame
    r_local = quat.multiply(quat.multiply(_rot((1, 0, 0), angles[0]), _rot((0, 1, 0), angles[1])),
                            _rot((0, 0, 1), angles[2]))
    r_world = quat.multiply(quat.multiply(frame, r_local), quat.conjugate(frame[None])[0])
    xb = w.positions[b]
    new_x = pivot + quat.rotate(r_world[None], (xb - pivot)[None])[0] + fm @ off
    new_q = quat.multiply(r_world, w.orientations[b])
    w.set_pose(b, position=new_x, orientation=new_q)
    got = w.joint_coordinates[0]
    np.testing.assert_allclose(got[3:], angles, atol=1e-9)
    np.testing.assert_allclose(got[:3], off, atol=1e-9)
