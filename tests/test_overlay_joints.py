"""Joint overlays (addon/overlay/joint_geometry.py) in plain Python: the anchors drawn for a
simulated hinge are the engine's joint points (independently carried by each body's pose),
the limit arc spans exactly the limits about the hinge axis, broken joints get their own
colour and no frame, reaction arrows start at B's anchor."""
import math

import numpy as np

from engine import Box, World
from engine.core import quat
from hullabaloo.addon.overlay import geometry as G
from hullabaloo.addon.overlay import joint_geometry as JG


def _door():
    w = World(gravity=(0, 0, 0))
    post = w.add_body(Box((0.05, 0.05, 1.0)), position=(0, 0, 1), kind="static")
    door = w.add_body(Box((0.5, 0.025, 1.0)), position=(0.55, 0, 1), mass=10.0)
    hinge_at = np.array([0.05, 0.0, 1.0])
    lo, hi = -0.3, 0.8
    w.add_joint("hinge", post, door, position=hinge_at, limits={"ang_z": (lo, hi)})
    w.set_velocity(door, angular=(0, 0, 2.0), linear=(0, 1.0, 0))
    pos0, q0 = w.positions.copy(), w.orientations.copy()
    rot0 = quat.to_matrix(q0)
    joints = {"a": np.array([post]), "b": np.array([door]),
              "anchor_a": (rot0[post].T @ (hinge_at - pos0[post]))[None],
              "anchor_b": (rot0[door].T @ (hinge_at - pos0[door]))[None],
              "frame_a": rot0[post].T[None], "ang_limits": np.array([[lo, hi]]),
              "lin_limits": np.full((1, 2), np.nan), "spring": np.zeros(1, bool)}
    return w, joints, hinge_at, (lo, hi)


def test_anchors_follow_the_bodies_and_meet_at_the_engine_joint():
    w, joints, hinge_at, _ = _door()
    for _ in range(12):
        w.step(1 / 24)
    rot = quat.to_matrix(w.orientations)
    pa, pb, fa = JG.world_frames(joints, w.positions, rot)
    # Independent: the hinge point carried rigidly by the door from its start pose.
    door = 1
    expect = w.positions[door] + quat.rotate(w.orientations[door],
                                             np.array([0.05 - 0.55, 0.0, 0.0]))
    assert np.allclose(pb[0], expect, atol=1e-12)
    assert np.allclose(pa[0], hinge_at, atol=1e-12)
    assert np.linalg.norm(pa[0] - pb[0]) < 1e-3          # the joint holds
    assert np.allclose(fa[0], np.eye(3))                  # carried by the static post
    layers = {layer.name: layer for layer in JG.joint_layers(
        joints, w.positions, rot, {"joint_size": 0.2})}
    assert {"joint_links", "joint_anchors", "joint_gap", "joint_axes", "joint_limits"} <= set(
        layers)
    np.testing.assert_allclose(layers["joint_anchors"].coords, np.stack((pa[0], pb[0])),
                               atol=1e-6)


def test_hinge_limit_arc_spans_the_limits_about_the_axis():
    w, joints, hinge_at, (lo, hi) = _door()
    rot = quat.to_matrix(w.orientations)
    (layer,) = [x for x in JG.joint_layers(joints, w.positions, rot, {"joint_size": 0.2})
                if x.name == "joint_limits"]
    seg = layer.segments.astype(np.float64) - hinge_at
    radius = 1.5 * 0.2
    arc = seg[:-2]                                   # the two end radii come last
    assert np.allclose(np.linalg.norm(arc, axis=2), radius, atol=1e-6)
    assert np.allclose(arc[..., 2], 0.0, atol=1e-6)   # in the plane normal to the hinge Z
    angles = np.arctan2(arc[..., 1], arc[..., 0])
    assert math.isclose(angles.min(), lo, abs_tol=1e-6)
    assert math.isclose(angles.max(), hi, abs_tol=1e-6)


def test_broken_joints_get_their_own_colour_and_forces_start_at_b():
    w, joints, _, _ = _door()
    rot = quat.to_matrix(w.orientations)
    two = {k: np.concatenate((v, v)) for k, v in joints.items()}
    two["broken"] = np.array([False, True])
    two["force"] = np.array([[0.0, 0.0, 100.0], [0.0, 0.0, 50.0]])
    layers = {x.name: x for x in JG.joint_layers(two, w.positions, rot,
                                                 {"joint_force_scale": 0.01})}
    cols = layers["joint_anchors"].colours
    assert np.allclose(cols[0], JG.LIVE_COLOUR) and np.allclose(cols[1], JG.BROKEN_COLOUR)
    assert len(layers["joint_axes"].segments) == 3        # only the live joint's frame
    shaft = layers["joint_forces"].segments[0]
    pa, pb, _ = JG.world_frames(two, w.positions, rot)
    assert np.allclose(shaft[0], pb[0], atol=1e-6)
    assert np.allclose(shaft[1] - shaft[0], (0, 0, 1.0), atol=1e-6)


def test_frame_layers_include_the_joints():
    w, joints, _, _ = _door()
    model = G.SceneModel(["post", "door"], [Box((0.05, 0.05, 1.0)), Box((0.5, 0.025, 1.0))],
                         [0, 1], w.kinds)
    frame = {"pos": w.positions, "q": w.orientations, "record": None, "joints": joints}
    names = {x.name for x in G.frame_layers(model, frame, {})}
    assert "joint_anchors" in names and "shapes" in names
    assert not {n for n in names if n.startswith("joint")} & {
        x.name for x in G.frame_layers(model, frame, {"show_joints": False})}
