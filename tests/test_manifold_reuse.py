"""Persistent manifolds (engine.collision.manifold_cache): a reused manifold equals the narrowphase's for
the same features at the moved poses, reuse stops at the tolerances, a resting pile skips the
narrowphase, and get_state / set_state replay bit for bit with reused manifolds in the state."""
import numpy as np
import pytest

from engine.collision import manifold_cache
from engine.collision.clip import T_INC_VERTEX
from engine.collision.contacts import key_bodies
from engine.collision.narrowphase import collide
from engine.collision.shape_table import ShapeTable
from engine.core import quat
from engine.shapes.hull import ConvexHull
from engine.shapes.primitives import Box, Sphere
from engine.world.world import World


# The pass kernel's row routines (manifold_cache.valid_row, rebuild_row) over many rows, for
# these tests: what engine.collision.polytope_pairs runs per pair.
def _capture(man, pos_a, q_a, pos_b, q_b, margin):
    return {"pos_a": np.asarray(pos_a, dtype=np.float64), "q_a": np.asarray(q_a, dtype=np.float64),
            "pos_b": np.asarray(pos_b, dtype=np.float64), "q_b": np.asarray(q_b, dtype=np.float64),
            "normal": man["normal"], "points": man["points"], "separation": man["separation"],
            "margin": np.asarray(margin, dtype=np.float64)}


def _rows(*arrays):
    m = len(arrays[-1])
    return [np.ascontiguousarray(np.broadcast_to(a, (m,) + np.shape(a)[1:]), dtype=np.float64)
            for a in arrays]


def _still_valid(geo, pos_a, q_a, pos_b, q_b, margin, distance, angle):
    g = _rows(geo["pos_a"], geo["q_a"], geo["pos_b"], geo["q_b"], geo["margin"])
    p = _rows(pos_a, q_a, pos_b, q_b, margin)
    cos_half = float(np.cos(0.5 * angle))
    s3, s4 = (np.empty(3), np.empty(3)), (np.empty(4), np.empty(4))
    return np.array([manifold_cache.valid_row(*(a[i] for a in g), *(a[i] for a in p),
                                              float(distance), cos_half, *s3, *s4)
                     for i in range(len(p[-1]))], dtype=bool)


def _rebuild(geo, count, pos_a, q_a, pos_b, q_b):
    m = len(count)
    g = [np.ascontiguousarray(geo[k], dtype=np.float64) for k in
         ("pos_a", "q_a", "pos_b", "q_b", "normal", "points", "separation")]
    p = [np.ascontiguousarray(np.broadcast_to(a, (m,) + np.shape(a)[1:]), dtype=np.float64)
         for a in (pos_a, q_a, pos_b, q_b)]
    normal, points, sep = np.empty((m, 3)), np.empty((m, 4, 3)), np.empty((m, 4))
    for i in range(m):
        manifold_cache.rebuild_row(*(a[i] for a in g), int(count[i]), *(a[i] for a in p),
                                   normal[i], points[i], sep[i], np.empty((3, 3)),
                                   np.empty((3, 3)), np.empty(3), np.empty(3))
    return normal, points, sep



def _rock(rng, size=0.3):
    d = rng.normal(size=(16, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    return ConvexHull(d * size * rng.uniform(0.8, 1.0, size=(16, 1)) * [1.0, 0.8, 0.6])


def _resting(rng, shapes, m):
    """m poses of shapes[1:] touching the top of shapes[0] (a ground box, top at z = 0)."""
    ib = rng.integers(1, len(shapes), m)
    qb = quat.normalize(rng.normal(size=(m, 4)))
    low = np.array([(shapes[b].vertices @ quat.to_matrix(q).T)[:, 2].min()
                    for b, q in zip(ib, qb)])
    pb = np.column_stack((rng.uniform(-1, 1, (m, 2)), rng.uniform(-0.004, 0.004, m) - low))
    return ib, pb, qb


def _collide(table, ib, pb, qb):
    m = len(ib)
    return collide(table, np.zeros(m, np.int64), np.tile([0.0, 0.0, -0.5], (m, 1)),
                   np.tile([1.0, 0.0, 0.0, 0.0], (m, 1)), ib, pb, qb, margin=0.02)


def test_rebuilt_points_match_the_narrowphase_on_the_same_vertices():
    """Rocks and a box resting on a ground box, then moved by up to 0.7 mm and 1.5 degrees:
    every rebuilt point that stands for a vertex of the moved body has the separation the
    narrowphase gives that vertex (same feature id) at the new pose, and lies within half the
    vertex's slide of the narrowphase's point."""
    rng = np.random.default_rng(3)
    shapes = [Box([5.0, 5.0, 0.5])] + [_rock(rng) for _ in range(5)] + [Box([0.3, 0.2, 0.1])]
    table = ShapeTable(shapes)
    m = 400
    ib, pb, qb = _resting(rng, shapes, m)
    man0 = _collide(table, ib, pb, qb)
    ok = man0.count > 0
    ib, pb, qb = ib[ok], pb[ok], qb[ok]
    m = len(ib)
    fields = {k: getattr(man0, k)[ok] for k in ("normal", "points", "separation", "axis_kind",
                                                 "axis_index")}
    zero, one = np.zeros((m, 3)), np.tile([1.0, 0.0, 0.0, 0.0], (m, 1))
    geo = _capture(fields, zero - [0, 0, 0.5], one, pb, qb, np.full(m, 0.02))
    axis = rng.normal(size=(m, 3))
    q1 = quat.normalize(quat.multiply(
        quat.from_axis_angle(axis, np.radians(rng.uniform(0, 1.5, m))), qb))
    p1 = pb + rng.uniform(-0.0004, 0.0004, (m, 3))
    assert _still_valid(geo, zero - [0, 0, 0.5], one, p1, q1, np.full(m, 0.02),
                        0.001, np.radians(2.0)).all()
    n, pts, sep = _rebuild(geo, man0.count[ok], zero - [0, 0, 0.5], one, p1, q1)
    assert np.allclose(n, [0.0, 0.0, 1.0], atol=1e-12)
    man1 = _collide(table, ib, p1, q1)
    ids0 = man0.ids[ok]
    checked = 0
    for k in range(m):
        for j in range(man0.count[ok][k]):
            i = ids0[k, j]
            if (i >> 24) & 3 != T_INC_VERTEX:
                continue
            hit = np.flatnonzero((man1.ids[k] == i) & (np.arange(4) < man1.count[k]))
            if len(hit):
                h = hit[0]
                assert sep[k, j] == pytest.approx(man1.separation[k, h], abs=1e-9)
                # The point stays midway between the two material points, so it lags the
                # narrowphase's (midway above the vertex) by half the vertex's slide.
                v0 = man0.points[ok][k, j] + 0.5 * man0.separation[ok][k, j] * n[k]
                v1 = man1.points[k, h] + 0.5 * man1.separation[k, h] * n[k]
                slide = np.linalg.norm((v1 - v0)[:2])
                assert np.linalg.norm(pts[k, j] - man1.points[k, h]) <= 0.5 * slide + 1e-9
                checked += 1
    assert checked > 300


def test_reuse_stops_at_the_tolerances():
    rng = np.random.default_rng(4)
    shapes = [Box([5.0, 5.0, 0.5]), Box([0.5, 0.5, 0.5])]
    ib, pb, qb = _resting(rng, shapes, 1)
    man = _collide(ShapeTable(shapes), ib, pb, qb)
    fields = {k: getattr(man, k) for k in ("normal", "points", "separation", "axis_kind",
                                            "axis_index")}
    ground = (np.array([[0.0, 0.0, -0.5]]), np.array([[1.0, 0.0, 0.0, 0.0]]))
    geo = _capture(fields, *ground, pb, qb, np.array([0.02]))

    def valid(dp=(0, 0, 0), deg=0.0, margin=0.02):
        q = quat.multiply(quat.from_axis_angle([0, 0, 1], np.radians(deg)), qb[0])[None]
        return bool(_still_valid(geo, *ground, pb + dp, q, np.array([margin]),
                                 0.001, np.radians(2.0))[0])
    assert valid() and valid(dp=(0.0009, 0, 0)) and valid(deg=1.9) and valid(margin=0.0205)
    assert not valid(dp=(0.0011, 0, 0)) and not valid(deg=2.1) and not valid(margin=0.022)
    assert not _still_valid(manifold_cache.empty(1), *ground, pb, qb,
                            np.array([0.02]), 0.001, np.radians(2.0))[0]


def _pile(cls, **kw):
    rng = np.random.default_rng(7)
    w = cls(sleeping=False, **kw)
    w.add_body(Box([4.0, 4.0, 0.5]), position=(0, 0, -0.5), kind="static")
    rocks = [_rock(rng, 0.25) for _ in range(4)]
    for i in range(12):
        w.add_body(rocks[i % 4], position=(0.6 * (i % 4) - 0.9, 0.6 * (i // 4) - 0.6, 0.3),
                   orientation=rng.normal(size=4))
    return w


def test_resting_pile_skips_the_narrowphase_and_replays_bit_for_bit():
    w = _pile(World)
    for _ in range(60):                    # 2.5 s: the rocks come to rest (sleeping off)
        w.step(1 / 24)
    state = w.get_state()
    run, reused = [], 0
    for _ in range(12):
        before = w.pairs.geo["pos_a"].copy()
        w.step(1 / 24)
        run.append(np.concatenate((w.positions.ravel(), w.orientations.ravel())))
        # Every capture kept: no manifold of the step was computed afresh.
        reused += len(before) == len(w.pairs.keys) and bool((before == w.pairs.geo["pos_a"]).all())
    assert reused > 6                      # most steps reused every manifold
    w.set_state(state)
    for k in range(12):
        w.step(1 / 24)
        np.testing.assert_array_equal(np.concatenate((w.positions.ravel(),
                                                      w.orientations.ravel())), run[k])


def test_reuse_changes_a_resting_pile_by_less_than_a_millimetre():
    """The same pile with reuse off (every pass recomputed): the rocks rest within 1 mm and
    0.5 degree of where they rest with reuse, and neither sinks into the ground."""
    on, off = _pile(World), _pile(World, manifold_reuse_distance=0.0)
    for _ in range(72):
        on.step(1 / 24)
        off.step(1 / 24)
    assert np.abs(on.positions - off.positions).max() < 0.001
    dots = np.abs(np.einsum("ij,ij->i", on.orientations, off.orientations))
    assert np.degrees(2 * np.arccos(np.minimum(dots, 1.0))).max() < 0.5
    for w in (on, off):
        low = min((s.vertices @ quat.to_matrix(q).T)[:, 2].min() + p[2]
                  for s, p, q in zip([w.table.shapes[i] for i in w._v("shape")[1:]],
                                     w.positions[1:], w.orientations[1:]))
        assert low > -0.003


def test_a_ball_elsewhere_leaves_the_rocks_reuse_and_motion_unchanged():
    """Polytope pairs go through their kernel (engine.collision.polytope_pairs), reuse
    included, in a pass with other shapes too: a pile of rocks coming to rest gives the same
    numbers, the same pair table and the same reused captures with a ball resting on the
    ground far from it (its pair with the ground goes through collide_bodies) as without."""
    alone, mixed = _pile(World), _pile(World)
    ball = mixed.add_body(Sphere(0.3), position=(3.0, 3.0, 0.3))
    reused = 0
    for _ in range(72):
        before = alone.pairs.geo["pos_a"].copy()
        alone.step(1 / 24)
        mixed.step(1 / 24)
        a, b = key_bodies(mixed.pairs.keys)
        keep = (a != ball) & (b != ball)
        np.testing.assert_array_equal(alone.pairs.keys, mixed.pairs.keys[keep])
        for name in ("pos_a", "q_a", "pos_b", "q_b", "points"):
            np.testing.assert_array_equal(alone.pairs.geo[name], mixed.pairs.geo[name][keep])
        if len(before) == len(alone.pairs.keys):
            reused += int(np.all(before == alone.pairs.geo["pos_a"], axis=1).sum())
        np.testing.assert_array_equal(alone.positions, mixed.positions[:-1])
        assert not np.isfinite(mixed.pairs.geo["margin"][~keep]).any()   # never reused
    assert reused > 100                     # the resting passes did reuse
    assert mixed.positions[-1, 2] == pytest.approx(0.3, abs=2e-3)       # the ball rests
