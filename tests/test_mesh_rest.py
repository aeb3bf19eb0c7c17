"""A convex rock set down on a flat floor comes to rest and sleeps, whether the floor is a Box
or a TriangleMesh of the same plane; so does a small pile of rocks and boxes on a floor of many
triangles, resting on it no deeper than the solver's soft contact lets them.

Issue 26 (found by Settle Selected; bench/bench_settle.py): on the two-triangle floor this rock
never slept. It rests on five vertices of one slightly bent side (a patch, engine.patches) and
one more, 2.7 mm up, in reach of the speculative margin. Reducing those six points to four, the
mesh path kept the deepest, then the farthest from it, which was the one in the air, and
dropped a vertex bearing weight; that vertex sank 1.7 mm, the solver lifted it back over six
frames while the rock pivoted until another vertex was deepest, and round again (a 7-frame
cycle whose kicks reset the sleep timer). The fix (clip.reduce4's touch, used by
engine.mesh_contacts) keeps touching points before speculative ones.

Still open: the Box floor only escapes this by luck of its clip (clip.face_contact measures on
the patch's plane): jostled by other bodies, the same rock cycles there too (the pile below on
a Box floor, a strict xfail). reduce4's touch in clip.face_contact fixes it, but it also
demotes the speculative corners of a box struck at metres per second (tests/test_struck.py
let it 14 mm into its neighbour): there the touch threshold has to grow with the pair's
closing distance (its margin minus WorldSettings.speculative_distance).
"""
import numpy as np
import pytest

from engine import Box, ConvexHull, TriangleMesh, World, quat

# The rock (a 16-point hull of bench_mesh_ground.rock, through Blender's float32), centred,
# and its resting orientation, rounded to 4 decimals: the cycle does not hang on the digits.
ROCK = np.array([
    [-0.0106, 0.0997, 0.1183], [-0.1259, 0.0365, -0.0812], [0.073, -0.1239, -0.0761],
    [-0.2311, -0.0045, 0.0269], [-0.1295, -0.1149, 0.0235], [-0.0533, -0.1395, -0.0506],
    [0.1946, -0.0605, 0.0651], [-0.0419, -0.1201, -0.0781], [0.1298, 0.1582, 0.0403],
    [-0.018, -0.0487, -0.0973], [-0.1086, -0.0042, -0.0935], [0.0645, 0.0139, 0.1315],
    [0.1881, -0.0189, -0.0299], [0.0731, 0.1564, 0.0873], [-0.0042, 0.1705, 0.0139]])
TURN = np.array([0.9624, -0.2337, 0.0828, 0.1112])


def frames_to_sleep(floor, drop):
    """Frames (24 fps) until the rock, let go `drop` m above the floor, sleeps (None: not
    within 6 s)."""
    w = World(sleeping=True)
    if floor == "box":
        w.add_body(Box([8, 8, 0.5]), position=(0, 0, -0.5), kind="static")
    else:
        v = np.array([[-8, -8, 0], [8, -8, 0], [8, 8, 0], [-8, 8, 0]], dtype=float)
        w.add_body(TriangleMesh(v, np.array([[0, 1, 2], [0, 2, 3]])), kind="static")
    q = TURN / np.linalg.norm(TURN)
    hull = ConvexHull(ROCK)
    low = -(hull.vertices @ quat.to_matrix(q).T)[:, 2].min()
    i = w.add_body(hull, position=(0.3, 0.2, low + drop), orientation=q, mass=1.0)
    for f in range(1, 24 * 6 + 1):
        w.step(1 / 24)
        if w.sleeping[i]:
            return f
    return None


@pytest.mark.parametrize("drop", [0.0, 0.05])
def test_rock_sleeps_on_a_box_floor(drop):
    assert frames_to_sleep("box", drop) is not None


@pytest.mark.parametrize("drop", [0.0, 0.05])
def test_rock_sleeps_on_a_triangle_floor(drop):
    assert frames_to_sleep("triangles", drop) is not None


# -- a pile on a floor of many triangles ---------------------------------------------------

GRID = 12            # 12 x 12 quads = 288 triangles over [-1.5, 1.5]^2, all at z = 0
# Deepest a resting body may sit in the floor: the solver's soft contact holds weight with a
# small overlap (about 0.05 mm for these 1 kg bodies, up to 0.2 mm for a rock knocked deeper
# and still pushed out when it falls asleep; the cycle of issue 26 reached 1.7 mm). Floating is
# not allowed either: the lowest vertex must touch.
REST_DEPTH = 1e-3
REST_GAP = 1e-4


def grid_floor():
    g = np.linspace(-1.5, 1.5, GRID + 1)
    x, y = np.meshgrid(g, g, indexing="ij")
    v = np.stack((x, y, np.zeros_like(x)), -1).reshape(-1, 3)
    i, j = np.meshgrid(np.arange(GRID), np.arange(GRID), indexing="ij")
    a = (i * (GRID + 1) + j).reshape(-1)
    b, c, d = a + GRID + 1, a + GRID + 2, a + 1
    return TriangleMesh(v, np.concatenate((np.stack((a, b, c), 1), np.stack((a, c, d), 1))))


def rock(rng, size):
    """16 random directions on a squashed sphere (bench/bench_mesh_ground.rock's recipe)."""
    d = rng.normal(size=(16, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    return d * size * rng.uniform(0.8, 1.0, size=(16, 1)) * np.array([1.0, 0.8, 0.6])


def pile(seed):
    """The rock above in its resting pose at three places of the grid (across a diagonal, on a
    grid vertex, inside a cell), and three bodies (rocks and boxes, random tilts) dropped onto
    them: they land on the rocks, lean on them or tumble off onto the floor."""
    rng = np.random.default_rng(seed)
    q = TURN / np.linalg.norm(TURN)
    hull = ConvexHull(ROCK)
    low = -(hull.vertices @ quat.to_matrix(q).T)[:, 2].min()
    out = [(hull, (x, y, low + 0.01), q) for x, y in ((0.3, 0.2), (-0.25, 0.25), (0.05, -0.3))]
    for k in range(3):
        shape = ConvexHull(rock(rng, rng.uniform(0.12, 0.18))) if k % 2 else \
            Box(rng.uniform(0.06, 0.1, 3))
        axis = rng.normal(size=3)
        turn = quat.from_axis_angle(axis / np.linalg.norm(axis), rng.uniform(0, np.pi))
        xy = rng.uniform(-0.3, 0.3, 2)
        out.append((shape, (xy[0], xy[1], 0.35 + 0.25 * k), turn))
    return out


def lowest_height(w, i, shape):
    """Exact height of body i's lowest vertex above the plane z = 0 (no narrowphase)."""
    rot = quat.to_matrix(w.orientations[i])
    return float((shape.vertices @ rot.T)[:, 2].min() + w.positions[i][2])


BOX_FLOOR_OPEN = pytest.mark.xfail(strict=True, reason="the rock cycles on a Box floor too when "
                                   "jostled (clip.face_contact has no touch yet; module docstring)")


@pytest.mark.parametrize("seed", [3, 11])
@pytest.mark.parametrize("floor", ["grid", pytest.param("box", marks=BOX_FLOOR_OPEN)])
def test_pile_sleeps_on_a_floor(floor, seed):
    """All sleep; those on the floor rest on it (lowest vertex against the plane z = 0)."""
    w = World(sleeping=True)
    if floor == "grid":
        w.add_body(grid_floor(), kind="static")
    else:
        w.add_body(Box([1.5, 1.5, 0.5]), position=(0, 0, -0.5), kind="static")
    bodies = pile(seed)
    ids = [w.add_body(s, position=p, orientation=q, mass=1.0) for s, p, q in bodies]
    for _ in range(24 * 8):
        w.step(1 / 24)
        if all(w.sleeping[i] for i in ids):
            break
    assert all(w.sleeping[i] for i in ids), [i for i in ids if not w.sleeping[i]]
    low = np.array([lowest_height(w, i, b[0]) for i, b in zip(ids, bodies)])
    assert low.min() >= -REST_DEPTH                 # nothing sunk into the floor
    on_floor = low < 0.01                           # the rest lie on other bodies
    assert on_floor.sum() >= 3                      # the three rocks at least
    assert low[on_floor].max() <= REST_GAP, low     # and nothing on the floor floats
