"""Transform maths against mathutils (Blender's own implementation) and the bulk keyframe
writer on synthetic pose arrays (no simulation involved)."""
import math

import hb_blender as hb
import numpy as np
import pytest

bpy = hb.bpy
from mathutils import Euler, Matrix, Quaternion

ORDERS = ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")


def tr():
    return hb.pkg().addon.transforms


def random_rotations(rng, n):
    q = rng.normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


@pytest.mark.parametrize("order", ORDERS)
def test_euler_matrix_round_trip_matches_mathutils(order):
    rng = np.random.default_rng(1)
    e = rng.uniform(-math.pi, math.pi, size=(200, 3))
    m = tr().euler_to_matrix(e, order)
    for k in range(0, 200, 7):
        ref = np.array(Euler(e[k], order).to_matrix())
        np.testing.assert_allclose(m[k], ref, atol=1e-6)
    # Both returned solutions reproduce the matrix (including near gimbal lock).
    e[:20, {"X": 0, "Y": 1, "Z": 2}[order[1]]] = math.pi / 2 - 1e-9
    m = tr().euler_to_matrix(e, order)
    for sol in tr().matrix_to_euler_pair(m, order):
        np.testing.assert_allclose(tr().euler_to_matrix(sol, order), m, atol=1e-6)


@pytest.mark.parametrize("order", ORDERS)
def test_continuous_euler_is_no_farther_than_blenders_compatible_euler(order):
    rng = np.random.default_rng(2)
    # A body tumbling for several turns: angular velocity integrated in small steps.
    F, N = 120, 5
    q = np.empty((F, N, 4))
    q[0] = random_rotations(rng, N)
    w = rng.normal(size=(N, 3)) * 0.4
    for f in range(1, F):
        for n in range(N):
            dq = Quaternion(w[n] / np.linalg.norm(w[n]), np.linalg.norm(w[n]))
            q[f, n] = tuple(dq @ Quaternion(q[f - 1, n]))
    m = hb.pkg().engine.core.quat.to_matrix_normalized(q)
    start = np.array([Matrix(m[0, n]).to_euler(order) for n in range(N)])
    e = tr().matrices_to_euler_continuous(m, order, start)
    np.testing.assert_allclose(tr().euler_to_matrix(e, order), m, atol=1e-6)
    for n in range(N):
        prev = Euler(start[n], order)
        for f in range(1, F):
            ref = Matrix(m[f, n]).to_euler(order, prev)
            ours = np.abs(e[f, n] - e[f - 1, n]).sum()
            theirs = np.abs(np.array(ref) - np.array(prev)).sum()
            assert ours <= theirs + 1e-4, (n, f, ours, theirs)  # float32 mathutils
            prev = Euler(e[f, n], order)
    assert np.abs(np.diff(e, axis=0)).max() < math.pi  # no whole-turn wraps


def test_quaternion_sign_continuity_and_axis_angle():
    rng = np.random.default_rng(3)
    F, N = 50, 4
    base = random_rotations(rng, N)
    ang = np.linspace(0, 6 * math.pi, F)
    axis = np.array([0.0, 0.0, 1.0])
    q = np.array([[tuple(Quaternion(axis, a) @ Quaternion(b)) for b in base] for a in ang])
    flips = rng.random((F, N)) < 0.5
    raw = np.where(flips[..., None], -q, q)
    c = tr().quaternions_continuous(raw, q[0])
    assert (np.einsum("fni,fni->fn", c[1:], c[:-1]) > 0).all()
    assert (np.einsum("ni,ni->n", c[0], q[0]) > 0).all()
    np.testing.assert_allclose(np.abs(np.einsum("fni,fni->fn", c, q)), 1.0, atol=1e-6)  # mathutils is float32
    aa = tr().quaternions_to_axis_angle(c, np.tile([0, 0, 1.0], (N, 1)))
    for f in (0, 17, 49):
        for n in range(N):
            ref = Quaternion(aa[f, n, 1:], aa[f, n, 0])
            assert abs(abs(ref.dot(Quaternion(c[f, n]))) - 1) < 1e-6


def test_polar_decomposition_keeps_scale_and_mirror():
    rng = np.random.default_rng(4)
    R = hb.pkg().engine.core.quat.to_matrix_normalized(random_rotations(rng, 20))
    s = rng.uniform(0.2, 3.0, size=(20, 3)) * np.where(rng.random((20, 3)) < 0.3, -1, 1)
    L = R * s[:, None, :]
    Rp, K = tr().polar_decompose(L)
    np.testing.assert_allclose(Rp @ K, L, rtol=1e-5, atol=1e-12)  # K rounded to 6 digits
    np.testing.assert_allclose(np.linalg.det(Rp), 1.0, atol=1e-12)
    # No shear: the shape matrix is the axis scale itself (signs up to a proper rotation).
    np.testing.assert_allclose(np.abs(np.diagonal(K, axis1=1, axis2=2)), np.abs(s), rtol=1e-5)
    np.testing.assert_allclose(K - K * np.eye(3), 0.0, atol=1e-12)
    neg = np.linalg.det(L) < 0
    assert (np.prod(np.diagonal(K, axis1=1, axis2=2), axis=1) < 0).tolist() == neg.tolist()
    # A sheared matrix still splits exactly, with a proper rotation.
    shear = np.array([[1.0, 0.4, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    Rs, Ks = tr().polar_decompose((R[:3] @ shear)[:, :, :] * -1.0)
    np.testing.assert_allclose(Rs @ Ks, -(R[:3] @ shear), atol=1e-12)
    np.testing.assert_allclose(np.linalg.det(Rs), 1.0, atol=1e-12)


def _key_attrs(fc):
    return hb.pkg().addon.animation.read_keys(fc)


def test_writer_replaces_only_the_range_and_keeps_every_attribute_outside():
    hb.empty_scene()
    obj = hb.add_object("Empty")
    anim = hb.pkg().addon.animation
    # Hand-made keys: before, inside and after the range, with non-default attributes.
    for f, v in ((-10, 1.0), (0, 2.0), (5, 3.0), (20, 4.0), (300, 5.0)):
        obj.location = (v, 0, 0)
        obj.keyframe_insert("location", index=0, frame=f)
    fcs = hb.fcurves(obj)
    fc = fcs.find("location", index=0)
    for kp in fc.keyframe_points:
        if kp.co[0] in (-10.0, 300.0):
            kp.interpolation = 'BOUNCE'
            kp.easing = 'EASE_OUT'
            kp.handle_left_type = kp.handle_right_type = 'FREE'
            kp.type = 'BREAKDOWN'
    before = _key_attrs(fc)
    frames = np.arange(1, 51, dtype=np.float64)
    values = np.sin(frames / 7.0)
    anim.write_channel(fcs, "location", 0, frames, values)
    after = _key_attrs(fc)
    x = after["co"][:, 0]
    assert x.tolist() == [-10.0, 0.0] + frames.tolist() + [300.0]
    keep_old = [0, 1, 4]
    keep_new = [0, 1, len(x) - 1]
    for k in before:
        # Auto handles are recomputed from the (new) neighbours, as Blender always does;
        # every other attribute, and free handles, stay bit for bit.
        rows = [0, 2] if k.startswith("handle_") and not k.endswith("_type") else [0, 1, 2]
        np.testing.assert_array_equal(after[k][keep_new][rows], before[k][keep_old][rows],
                                      err_msg=k)
    np.testing.assert_allclose(after["co"][2:-1, 1], values, rtol=1e-6)
    linear = bpy.types.Keyframe.bl_rna.properties["interpolation"].enum_items["LINEAR"].value
    assert (after["interpolation"][2:-1] == linear).all()
    for f, v in zip(frames, values):  # LINEAR: exact at keys, linear in between
        assert fc.evaluate(f) == pytest.approx(v, abs=1e-6)
    assert fc.evaluate(10.5) == pytest.approx(0.5 * (values[9] + values[10]), abs=1e-6)


def test_writer_handles_shared_actions_and_layered_slots():
    hb.empty_scene()
    a = hb.add_object("A")
    b = hb.add_object("B")
    a.keyframe_insert("location", frame=1)
    b.animation_data_create()
    b.animation_data.action = a.animation_data.action
    if hasattr(a.animation_data, "action_slot"):
        b.animation_data.action_slot = a.animation_data.action_slot
    anim = hb.pkg().addon.animation
    frames = np.arange(1, 11, dtype=np.float64)
    loc = np.stack([frames, 2 * frames, 3 * frames], axis=1)
    rot = np.zeros((10, 3))
    anim.write_object_keys(a, frames, loc, rot)
    assert a.animation_data.action != b.animation_data.action  # made single-user first
    bpy.context.scene.frame_set(7)
    assert tuple(a.location) == pytest.approx((7, 14, 21))
    assert tuple(b.location) == pytest.approx((0, 0, 0))


def test_bulk_writing_speed_figure(capsys):
    """1000 objects x 250 frames of location + quaternion keys (the issue's target: < 0.5 s).
    Reported, not asserted: timings are not test material."""
    import time
    hb.empty_scene()
    objs = [hb.add_object(f"E{i}") for i in range(1000)]
    for o in objs:
        o.rotation_mode = 'QUATERNION'
    anim = hb.pkg().addon.animation
    frames = np.arange(1, 251, dtype=np.float64)
    rng = np.random.default_rng(5)
    loc = rng.normal(size=(1000, 250, 3))
    rot = rng.normal(size=(1000, 250, 4))
    t = time.perf_counter()
    for o, l, r in zip(objs, loc, rot):
        anim.write_object_keys(o, frames, l, r)
    dt = time.perf_counter() - t
    print(f"keyframe writing, 1000 objects x 250 frames x 7 channels: {dt:.3f} s")
    fc = hb.fcurves(objs[-1]).find("rotation_quaternion", index=3)
    got = np.array([fc.evaluate(f) for f in frames])
    np.testing.assert_allclose(got, rot[-1, :, 3], rtol=1e-5, atol=1e-6)
