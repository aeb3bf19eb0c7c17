"""Compound bodies in real Blender: parts from child objects marked as collision parts, and
from the engine's automatic convex decomposition (cached for the session).

Each scene is one a single convex hull cannot reproduce (a dumbbell astride a wall, a cube in
the notch of an L), so passing needs real compound parts in the right places."""
import hb_blender as hb
import numpy as np
import pytest

bpy = hb.bpy


def collect():
    return hb.pkg().addon.collect


def read_scene(scene):
    bpy.context.view_layer.update()
    return collect().SceneReader(scene, bpy.context.evaluated_depsgraph_get()).read()


def world_vertices(obj):
    """World positions of the object's (evaluated) vertices."""
    bpy.context.view_layer.update()
    m = np.array(obj.matrix_world, dtype=np.float64)
    v = np.array([tuple(x.co) for x in obj.data.vertices], dtype=np.float64)
    return v @ m[:3, :3].T + m[:3, 3]


def dumbbell_scene(density=500.0):
    """Parent with an empty mesh, turned 90 degrees about Z, with two 1 m child cubes 3 m
    apart (one a 0.5 m mesh scaled 2x, one turned 30 degrees) over a 0.6 m wall along X."""
    scene = hb.empty_scene(frame_end=48)
    hb.add_box("Ground", size=(40, 40, 1), location=(0, 0, -0.5), body_type='PASSIVE')
    hb.add_box("Wall", size=(3, 0.4, 0.6), location=(0, 0, 0.3), body_type='PASSIVE')
    bell = hb.add_object("Bell", bpy.data.meshes.new("empty"), location=(0, 0, 1.6),
                         shape='COMPOUND', compound_source='CHILDREN', mass_mode='DENSITY',
                         density=density)
    bell.rotation_euler = (0.0, 0.0, np.pi / 2)
    a = hb.add_box("PartA", size=(1, 1, 1), enabled=False, collision_part=True)
    b = hb.add_box("PartB", size=(0.5, 0.5, 0.5), enabled=True, collision_part=True)
    b.scale = (2.0, 2.0, 2.0)
    a.rotation_euler = (0.0, 0.0, np.pi / 6)
    for child, x in ((a, -1.5), (b, 1.5)):
        child.parent = bell  # parent inverse = identity: the location is in the bell's frame
        child.location = (x, 0.0, 0.0)
    return scene, bell, a, b


def test_child_parts_make_one_body_with_the_summed_mass():
    scene, bell, a, b = dumbbell_scene(density=500.0)
    reader = read_scene(scene)
    assert not [p for p in reader.problems if p.level == "ERROR"], reader.problems
    names = sorted(x.name for x in reader.bodies)
    assert names == ["Bell", "Ground", "Wall"]  # the marked children are not bodies
    body = next(x for x in reader.bodies if x.name == "Bell")
    assert len(body.shape.shapes) == 2
    world = hb.engine_world(scene)
    i = world.add_body(body.shape, position=body.position, orientation=body.orientation,
                       **body.params)
    np.testing.assert_allclose(world.masses[i], 500.0 * 2 * 1.0 ** 3, rtol=1e-6)
    # Each part sits where its child object is: the part's world vertices are the child's.
    rot = np.array(bell.matrix_world, dtype=np.float64)[:3, :3]
    for k, child in enumerate((a, b)):
        q = body.shape.orientations[k]
        part_rot = hb.pkg().engine.core.quat.to_matrix_normalized(q)
        verts = body.shape.shapes[k].vertices @ part_rot.T + body.shape.positions[k]
        got = verts @ rot.T + body.position
        want = world_vertices(child)
        dist = np.linalg.norm(got[:, None] - want[None], axis=2)
        assert dist.min(axis=1).max() < 1e-5 and dist.min(axis=0).max() < 1e-5, child.name


def test_child_parts_dumbbell_straddles_a_wall():
    scene, bell, a, b = dumbbell_scene()
    scene.frame_set(1)
    last = hb.bake()
    assert not [p for p in last["problems"] if p.level == "ERROR"], last["problems"]
    assert hb.keys_of(bell)
    assert hb.keys_of(a) == {} and hb.keys_of(b) == {}  # they follow by parenting
    assert not a.hullabaloo.bake.baked and not b.hullabaloo.bake.baked
    scene.frame_set(48)
    bpy.context.view_layer.update()
    for child, side in ((a, -1), (b, 1)):
        v = world_vertices(child)
        # Resting on the ground on either side of the wall (one hull would lie on the wall,
        # its bottom at 0.6 m).
        assert abs(v[:, 2].min()) < 0.01, (child.name, v[:, 2].min())
        c = v.mean(axis=0)
        assert side * c[1] > 0.9 and abs(c[0]) < 0.5, (child.name, c)


def test_parent_without_marked_children_is_reported():
    scene = hb.empty_scene(frame_end=10)
    hb.add_box("Ground", size=(10, 10, 1), location=(0, 0, -0.5), body_type='PASSIVE')
    hb.add_box("Other", size=(1, 1, 1), location=(3, 0, 1))
    lonely = hb.add_box("Lonely", size=(1, 1, 1), location=(0, 0, 1), shape='COMPOUND',
                        compound_source='CHILDREN')
    child = hb.add_box("Unmarked", size=(1, 1, 1), enabled=False)
    child.parent = lonely
    scene.frame_set(1)
    last = hb.bake()
    msgs = [p for p in last["problems"] if p.name == "Lonely"]
    assert len(msgs) == 1 and msgs[0].level == "ERROR"
    assert "has no child objects marked as collision parts" in msgs[0].message
    assert "Loose Parts" in msgs[0].message
    assert not hb.keys_of(lonely)
    # Marking the child fixes it: a compound of the child alone (as Blender's Compound
    # Parent), or, when asked (Include This Mesh), the parent's own cube plus the child.
    child.hullabaloo.collision_part = True
    body = next(x for x in read_scene(scene).bodies if x.name == "Lonely")
    assert len(body.shape.shapes) == 1
    lonely.hullabaloo.compound_include_self = True
    body = next(x for x in read_scene(scene).bodies if x.name == "Lonely")
    assert len(body.shape.shapes) == 2


def l_mesh():
    """An upright L (in the XZ plane, 1 m deep in Y), modelled at half size in X and Z (the
    object is scaled 2x there): foot x in [-1, 1], z in [0, 0.4]; leg x in [-1, -0.6],
    z in [0, 2]. Closed, outward faces."""
    outline = [(-1, 0), (1, 0), (1, 0.4), (-0.6, 0.4), (-0.6, 2), (-1, 2)]  # CCW in XZ
    n = len(outline)
    verts = [(0.5 * x, y, 0.5 * z) for y in (-0.5, 0.5) for x, z in outline]
    faces = [tuple(range(n)), tuple(n + i for i in reversed(range(n)))]
    faces += [(i, n + i, n + (i + 1) % n, (i + 1) % n) for i in range(n)]
    m = bpy.data.meshes.new("L")
    m.from_pydata(verts, [], faces)
    m.update()
    # from_pydata keeps the winding given; make normals consistent and outward.
    import bmesh
    bm = bmesh.new()
    bm.from_mesh(m)
    bmesh.ops.recalc_face_normals(bm, faces=bm.faces)
    bm.to_mesh(m)
    bm.free()
    return m


@pytest.fixture
def count_decompose(monkeypatch):
    eng = hb.engine()
    real = eng.decompose
    calls = []

    def counted(*args, **kw):
        calls.append(kw.get("max_parts"))
        return real(*args, **kw)

    monkeypatch.setattr(eng, "decompose", counted)
    collect().DECOMPOSE_CACHE.clear()
    yield calls
    collect().DECOMPOSE_CACHE.clear()


def test_decomposed_l_holds_a_cube_in_its_notch_and_is_cached(count_decompose):
    scene = hb.empty_scene(frame_end=36)
    hb.add_box("Ground", size=(20, 20, 1), location=(0, 0, -0.5), body_type='PASSIVE')
    ell = hb.add_object("L", l_mesh(), location=(0, 0, 0.002), shape='COMPOUND',
                        compound_source='DECOMPOSE', mass_mode='DENSITY', density=1000.0)
    ell.scale = (2.0, 1.0, 2.0)
    # 0.3 m cube above the notch: the L's convex hull would catch it on its slanted face
    # (about 1.2 m up at x = 0.3); the decomposed L lets it land on the foot (top 0.4 m).
    cube = hb.add_box("Cube", size=(0.3, 0.3, 0.3), location=(0.3, 0, 2.5), mass=0.1)
    reader = read_scene(scene)
    assert not reader.problems, reader.problems  # closed mesh: no warning
    body = next(x for x in reader.bodies if x.name == "L")
    assert len(body.shape.shapes) >= 2
    assert len(count_decompose) == 1
    scene.frame_set(1)
    last = hb.bake()
    assert not [p for p in last["problems"] if p.level == "ERROR"], last["problems"]
    assert len(count_decompose) == 1  # the bake reused the reader's decomposition
    scene.frame_set(36)
    v = world_vertices(ell)
    assert abs(v[:, 2].min()) < 0.002, v[:, 2].min()          # both legs on the ground:
    foot = v[np.isclose(np.array([tuple(x.co) for x in ell.data.vertices])[:, 2], 0.0)]
    np.testing.assert_allclose(foot[:, 2], 0.0, atol=0.002)   # the whole bottom face
    c = world_vertices(cube)
    assert abs(c[:, 2].min() - 0.4) < 0.01 and abs(c.mean(axis=0)[0] - 0.3) < 0.2, c.mean(0)
    # A re-bake reuses the cache; other parameters decompose again.
    hb.bake()
    assert len(count_decompose) == 1
    ell.hullabaloo.decompose_max_parts = 3
    hb.bake()
    assert count_decompose == [16, 3]


def test_decompose_cache_is_keyed_by_geometry_and_capped(count_decompose):
    col = collect()
    rng = np.random.default_rng(7)
    box = np.array([[x, y, z] for z in (0, 1) for y in (0, 1) for x in (0, 1)], float)
    tris = np.array([[0, 2, 3], [0, 3, 1], [4, 5, 7], [4, 7, 6], [0, 1, 5], [0, 5, 4],
                     [2, 6, 7], [2, 7, 3], [0, 4, 6], [0, 6, 2], [1, 3, 7], [1, 7, 5]])
    first = col.decompose_cached(box, tris, 4, 0.0)
    assert col.decompose_cached(box.copy(), tris.copy(), 4, 0.0) is first
    assert len(count_decompose) == 1
    moved = box + rng.normal(scale=1e-3, size=3)  # same shape elsewhere: new geometry
    col.decompose_cached(moved, tris, 4, 0.0)
    col.decompose_cached(box, tris, 4, 0.05)
    assert len(count_decompose) == 3
    with pytest.raises(ValueError):
        first[0][0, 0] = 1.0  # cached arrays are shared: read-only
    for k in range(col.DECOMPOSE_CACHE_SIZE + 3):
        col.decompose_cached(box * (1.0 + 0.01 * k), tris, 1, 0.0)
    assert len(col.DECOMPOSE_CACHE) == col.DECOMPOSE_CACHE_SIZE


def _mesh(name, verts, faces):
    m = bpy.data.meshes.new(name)
    m.from_pydata(verts, [], faces)
    m.update()
    return m


def test_open_mesh_decomposition_warns_and_flat_loose_parts_become_slabs(count_decompose):
    scene = hb.empty_scene(frame_end=5)
    v = [(x, y, z) for z in (0, 2) for y in (-2, 2) for x in (-2, 2)]
    cup = hb.add_object("Cup", _mesh("cup", v, [(0, 2, 3, 1), (0, 1, 5, 4), (2, 6, 7, 3),
                                                (0, 4, 6, 2), (1, 3, 7, 5)]),
                        shape='COMPOUND', compound_source='DECOMPOSE')
    tiles = [(x0 + x, y, 0.0) for x0 in (0.0, 3.0) for y in (0, 1) for x in (0, 1)]
    hb.add_object("Tiles", _mesh("tiles", tiles, [(0, 1, 3, 2), (4, 5, 7, 6)]),
                  location=(10, 0, 0), shape='COMPOUND')
    reader = read_scene(scene)
    cup_msgs = [p for p in reader.problems if p.name == cup.name]
    assert len(cup_msgs) == 1 and cup_msgs[0].level == "WARNING"
    assert "not a closed mesh" in cup_msgs[0].message
    tiles = next(x for x in reader.bodies if x.name == "Tiles")
    assert len(tiles.shape.shapes) == 2
    for part in tiles.shape.shapes:  # each 1 m tile thickened about its own plane
        lo, hi = part.vertices.min(axis=0), part.vertices.max(axis=0)
        np.testing.assert_allclose((hi - lo)[:2], 1.0, atol=1e-6)
        assert 0.0 < hi[2] - lo[2] < 0.2 and abs(hi[2] + lo[2]) < 1e-6
    assert any(p.name == "Tiles" and "slab" in p.message for p in reader.problems)


def test_decompose_progress_reports_long_runs_only(capsys):
    class WM:
        def __init__(self):
            self.calls = []

        def progress_begin(self, a, b):
            self.calls.append(("begin", a, b))

        def progress_update(self, v):
            self.calls.append(("update", v))

        def progress_end(self):
            self.calls.append(("end",))

    quick = collect().DecomposeProgress("Quick", WM(), delay=60.0)
    assert quick(0.5, "2 parts") is True  # never cancels
    quick.close()
    assert quick.wm.calls == [] and capsys.readouterr().out == ""
    slow = collect().DecomposeProgress("Slow", WM(), delay=0.0, every=0.0)
    assert slow(0.25, "3 parts") is True and slow(0.5, "5 parts") is True
    slow.close()
    assert slow.wm.calls == [("begin", 0, 1000), ("update", 250), ("update", 500), ("end",)]
    out = capsys.readouterr().out
    assert "decomposing Slow: 25% (3 parts)" in out and "50% (5 parts)" in out
