"""A pass's per-body and per-manifold inputs in a few kernels (engine/world/pass_kernels.py),
against their definitions computed apart: the world inverse inertia as the inverse of
R I R^T (numpy's matrix inverse), gravity's relative acceleration along each normal,
Blender's mixed friction and restitution (products), the reach as the farthest hull point
from the centre of mass, Bullet's damping law, and the index lists by their meaning."""
import numpy as np
from scipy.spatial.transform import Rotation

from engine.core.kinds import BodyKind, ShapeKind
from engine.dynamics.arm_box import ArmBoxes
from engine.world.pass_kernels import finite_or_zero, manifold_inputs, pass_bodies

DYN, STA, KIN = int(BodyKind.DYNAMIC), int(BodyKind.STATIC), int(BodyKind.KINEMATIC)


def _bodies(n, rng):
    kind = rng.choice([DYN, DYN, DYN, STA, KIN], n).astype(np.int8)
    sleeping = (rng.random(n) < 0.3) & (kind == DYN)
    return kind, sleeping


def test_pass_bodies_match_their_definitions():
    rng = np.random.default_rng(7)
    n = 11
    kind, sleeping = _bodies(n, rng)
    isotropic = rng.random(n) < 0.5
    rot = Rotation.random(n, random_state=3).as_matrix()
    moments = rng.uniform(0.1, 5.0, size=(n, 3))
    inv_body = (1.0 / moments)[:, :, None] * np.eye(3)
    inv_mass = rng.uniform(0.2, 3.0, n)
    # Shapes: 0 a sphere, 1 a capsule, 2 a polytope; bodies 0-2 centred, others off-centre.
    shape_kind = np.array([int(ShapeKind.SPHERE), int(ShapeKind.CAPSULE),
                           int(ShapeKind.POLYTOPE)], dtype=np.int8)
    bound_radius = np.array([0.5, 1.5, 2.0])
    shape = rng.integers(0, 3, n)
    com = rng.normal(size=(n, 3)) * 0.1
    com[:4] = 0.0
    com[4, :2] = 0.0                     # on the Z axis, off the centre
    shape[:3], shape[4] = [0, 1, 2], 1
    x, q, vel = rng.normal(size=(n, 3)), rng.normal(size=(n, 4)), rng.normal(size=(n, 6))
    lin_d, ang_d = rng.uniform(0, 1, n), rng.uniform(0, 1, n)
    h, slack = 1 / 360, 0.02
    boxes = ArmBoxes()                   # no shape filled yet: boxes_ok is False
    out = {k: np.full((n,) + s, np.nan if dt is float else 0, dt) for k, (s, dt) in {
        "awake": ((), bool), "act": ((), np.int64), "movers": ((), np.int64),
        "gyro": ((), np.int64), "reach": ((), float), "ball": ((), bool), "axial": ((), bool),
        "rolling": ((), bool), "inv_mass": ((), float), "inv_i": ((3, 3), float),
        "box_axes": ((3, 3), float), "box_lo": ((3,), float), "box_hi": ((3,), float),
        "round_axes": ((3,), float), "lin_f": ((), float), "ang_f": ((), float),
        "saved_x": ((3,), float), "saved_q": ((4,), float), "saved_v": ((6,), float),
        "arm": ((), float), "start": ((), float), "allow": ((), float)}.items()}
    o = out
    n_act, n_mov, n_gyro, boxes_ok, rolling = pass_bodies(
        kind, sleeping, isotropic, DYN, KIN, shape, shape_kind, bound_radius, com, rot,
        inv_mass, inv_body, lin_d, ang_d, h, x, q, vel, slack, boxes.axes, boxes.lo,
        boxes.hi, boxes.done, o["awake"], o["act"], o["movers"], o["gyro"], o["reach"],
        o["ball"], o["axial"], o["rolling"], o["inv_mass"], o["inv_i"], o["box_axes"],
        o["box_lo"], o["box_hi"], o["round_axes"], o["lin_f"], o["ang_f"], o["saved_x"],
        o["saved_q"], o["saved_v"], o["arm"], o["start"], o["allow"])
    awake = (kind == DYN) & ~sleeping
    act = np.flatnonzero(awake)
    movers = np.flatnonzero(awake | (kind == KIN))
    np.testing.assert_array_equal(o["awake"], awake)
    np.testing.assert_array_equal(o["act"][:n_act], act)
    np.testing.assert_array_equal(o["movers"][:n_mov], movers)
    np.testing.assert_array_equal(o["gyro"][:n_gyro], act[~isotropic[act]])
    assert boxes_ok != bool(awake.any())
    # The world inverse inertia of the awake dynamic bodies, zero for the rest.
    inertia_world = rot @ (moments[:, :, None] * np.eye(3)) @ np.swapaxes(rot, 1, 2)
    np.testing.assert_allclose(o["inv_i"][awake], np.linalg.inv(inertia_world[awake]),
                               rtol=1e-12, atol=1e-13)
    assert (o["inv_i"][~awake] == 0.0).all() and (o["inv_mass"][~awake] == 0.0).all()
    np.testing.assert_array_equal(o["inv_mass"][awake], inv_mass[awake])
    # Reach: the shape's radius about its origin plus the centre of mass's offset.
    np.testing.assert_allclose(o["reach"], bound_radius[shape] + np.sqrt((com ** 2).sum(1)),
                               rtol=1e-15)
    # Round flags: body 0 a centred ball, 1 and 4 round about Z, 2 and 3 (a polytope, and
    # whatever shape 3 drew) as their shapes say.
    ball = (shape_kind[shape] == int(ShapeKind.SPHERE)) & (com == 0).all(1)
    axial = (np.isin(shape_kind[shape], [int(ShapeKind.SPHERE), int(ShapeKind.CAPSULE)])
             & (com[:, :2] == 0).all(1) & ~ball)
    assert ball[0] and axial[1] and axial[4]
    np.testing.assert_array_equal(o["ball"], ball)
    np.testing.assert_array_equal(o["axial"], axial)
    np.testing.assert_array_equal(o["rolling"], axial & awake)
    assert rolling == bool((axial & awake).any())
    np.testing.assert_array_equal(o["round_axes"], np.where((axial & awake)[:, None],
                                                            rot[:, :, 2], 0.0))
    # Bullet's damping over h, the guard's copies, the struck test's speeds.
    np.testing.assert_allclose(o["lin_f"][:n_act], (1 - lin_d[act]) ** h, rtol=1e-15)
    np.testing.assert_allclose(o["ang_f"][:n_act], (1 - ang_d[act]) ** h, rtol=1e-15)
    np.testing.assert_array_equal(o["saved_x"][:n_mov], x[movers])
    np.testing.assert_array_equal(o["saved_q"][:n_mov], q[movers])
    np.testing.assert_array_equal(o["saved_v"][:n_mov], vel[movers])
    arm = np.where(ball[act], 0.0, o["reach"][act])
    np.testing.assert_array_equal(o["arm"][:n_act], arm)
    speed = (np.linalg.norm(vel[act, :3], axis=1) + np.linalg.norm(vel[act, 3:], axis=1) * arm)
    np.testing.assert_allclose(o["start"][:n_act], speed, rtol=1e-15)
    np.testing.assert_allclose(o["allow"][:n_act], slack + 0.25 * o["reach"][act], rtol=1e-15)


def test_manifold_inputs_match_their_definitions():
    rng = np.random.default_rng(8)
    n, m = 9, 14
    awake = rng.random(n) < 0.7
    friction, restitution = rng.uniform(0, 1, n), rng.uniform(0, 1, n)
    ia, ib = rng.integers(0, n, m), rng.integers(0, n, m)
    normal = rng.normal(size=(m, 3))
    normal /= np.linalg.norm(normal, axis=1)[:, None]
    gravity = np.array([0.3, -0.2, -9.81])
    accel, mu, e = np.full(m, np.nan), np.full(m, np.nan), np.full(m, np.nan)
    manifold_inputs(ia, ib, normal, awake, gravity, friction, restitution, accel, mu, e)
    g = awake[:, None] * gravity
    np.testing.assert_allclose(accel, np.einsum("mi,mi->m", g[ib] - g[ia], normal),
                               rtol=1e-14, atol=1e-14)
    np.testing.assert_array_equal(mu, friction[ia] * friction[ib])
    np.testing.assert_array_equal(e, restitution[ia] * restitution[ib])


def test_non_finite_impulses_become_zero_and_the_rest_stay():
    rng = np.random.default_rng(9)
    arrays = [rng.normal(size=s) for s in ((5, 4), (5, 4, 3), (5, 4, 2))]
    for a in arrays:
        a.flat[rng.integers(0, a.size, 4)] = rng.choice([np.nan, np.inf, -np.inf], 4)
    want = [np.where(np.isfinite(a), a, 0.0) for a in arrays]
    finite_or_zero(*arrays)
    for a, w in zip(arrays, want):
        np.testing.assert_array_equal(a, w)


def test_supports_first_sorts_only_polytope_pairs_pressing_along_gravity_by_height():
    """engine.world.sweep.supports_first against a direct reading of its rule: the other
    manifolds keep their slots; the slots of the polytope pairs whose normal is within 45
    degrees of gravity (either way) hold them lowest first along gravity (mean of the used
    points), ties in the colour order's."""
    from engine.world.sweep import supports_first
    rng = np.random.default_rng(11)
    n, m = 9, 60
    poly = rng.random(n) < 0.7
    ia, ib = rng.integers(0, n, m), rng.integers(0, n, m)
    normal = rng.normal(size=(m, 3))
    normal /= np.linalg.norm(normal, axis=1)[:, None]
    normal[:4] = [[0, 0, 1], [0, 0, -1], [1, 0, 0], [0.6, 0, 0.8]]   # the plain cases
    points = rng.uniform(-1.0, 1.0, (m, 4, 3))
    count = rng.integers(1, 5, m)
    points[5], points[6], count[5], count[6] = points[4], points[4], count[4], count[4]  # ties
    normal[5] = normal[6] = normal[4] = [0, 0.6, -0.8]
    gravity = np.array([0.0, 0.0, -9.81])
    colour = rng.permutation(m)
    order = colour.copy()
    supports_first(order, poly, ia, ib, normal, points, count, gravity)

    steep = np.degrees(np.arccos(np.abs(normal[:, 2]))) <= 45.0
    sorted_ = poly[ia] & poly[ib] & steep
    height = np.array([points[i, :count[i], 2].mean() for i in range(m)])
    slots = [k for k in range(m) if sorted_[colour[k]]]
    want = sorted((colour[k] for k in slots), key=lambda i: (height[i], slots.index(
        int(np.flatnonzero(colour == i)[0]))))
    assert sorted(order.tolist()) == list(range(m))
    assert 10 < len(slots) < m - 10
    assert all(order[k] == colour[k] for k in range(m) if not sorted_[colour[k]])
    assert [int(order[k]) for k in slots] == [int(i) for i in want]

    flat = colour.copy()                                # no gravity: nothing to sort by
    supports_first(flat, poly, ia, ib, normal, points, count, np.zeros(3))
    assert np.array_equal(flat, colour)
