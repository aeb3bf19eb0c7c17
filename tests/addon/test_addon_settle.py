"""Settle Selected (addon/settle.py) in the real Blender: objects dropped into a bowl or onto
scenery end at rest where they are, checked on the true geometry by python-fcl (hulls from
scipy, the bowl's own triangles), with nothing left on them but their transforms; undo, Esc,
determinism, the options, and the command line."""
import math
import os
import subprocess
import sys

import hb_blender as hb
import numpy as np
import pytest

bpy = hb.bpy
fcl = pytest.importorskip("fcl")
ConvexHull = pytest.importorskip("scipy.spatial").ConvexHull

CLI = os.path.join(hb.ROOT, "hullabaloo_cli.py")
BOWL_R = 1.2
BOWL_AT = (0.3, -0.2, 0.5)


def settle_module():
    return hb.pkg().addon.settle


def settle(**kw):
    """bpy.ops.hullabaloo.settle as the UI runs it (undo step pushed); the run's summary."""
    assert bpy.ops.hullabaloo.settle('EXEC_DEFAULT', True, **kw) == {'FINISHED'}
    return settle_module().LAST["summary"]


def select(objs, active=None):
    for o in bpy.context.view_layer.objects:
        o.select_set(False)
    for o in objs:
        o.select_set(True)
    if active is not None:
        active.select_set(True)
    bpy.context.view_layer.objects.active = active


def bowl_mesh(name, R=BOWL_R, rings=12, seg=32):
    """An open hemispherical bowl (rim at z = 0, bottom at z = -R)."""
    th = np.linspace(0, np.pi / 2, rings + 1)[1:]
    ph = np.linspace(0, 2 * np.pi, seg + 1)[:-1]
    V = [(0.0, 0.0, -R)] + [(R * math.sin(t) * math.cos(p), R * math.sin(t) * math.sin(p),
                             -R * math.cos(t)) for t in th for p in ph]
    F = [(0, 1 + (j + 1) % seg, 1 + j) for j in range(seg)]
    for i in range(rings - 1):
        for j in range(seg):
            a, b = 1 + i * seg + j, 1 + i * seg + (j + 1) % seg
            F.append((a, b, b + seg, a + seg))
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(V, [], F)
    mesh.update()
    return mesh


def hull_mesh(name, rng, size):
    """Blender's own convex hull (bmesh) of random points on a squashed sphere."""
    import bmesh
    d = rng.normal(size=(12, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    pts = d * size * rng.uniform(0.7, 1.0, size=(12, 1)) * np.array([1.0, 0.85, 0.7])
    bm = bmesh.new()
    for p in pts:
        bm.verts.new(tuple(p))
    bmesh.ops.convex_hull(bm, input=bm.verts)
    mesh = bpy.data.meshes.new(name)
    bm.to_mesh(mesh)
    bm.free()
    return mesh


def new_object(name, mesh, location=(0, 0, 0)):
    obj = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(obj)
    obj.location = location
    return obj


def bowl_scene(n=50, seed=3):
    """A bowl (no Hullabaloo settings) and n random hulls (none either) above its bottom."""
    hb.empty_scene()
    bowl = new_object("Bowl", bowl_mesh("Bowl"), BOWL_AT)
    bowl.rotation_euler = (0.0, 0.0, 0.4)
    rng = np.random.default_rng(seed)
    rocks = []
    for k in range(n):
        i, j, layer = k % 5, (k // 5) % 5, k // 25
        loc = (BOWL_AT[0] - 0.6 + 0.3 * i, BOWL_AT[1] - 0.6 + 0.3 * j,
               BOWL_AT[2] - 0.35 + 0.32 * layer)
        o = new_object(f"Rock.{k:02d}", hull_mesh(f"Rock.{k:02d}", rng, rng.uniform(0.08, 0.13)),
                       loc)
        o.rotation_euler = tuple(rng.uniform(0, 2 * np.pi, 3))
        if k % 5 == 0:
            o.scale = (1.0, 0.8, 1.25)
        rocks.append(o)
    bpy.context.view_layer.update()
    return bowl, rocks


def world_vertices(obj):
    m = hb.matrix(obj)
    v = np.array([tuple(p.co) for p in obj.data.vertices], dtype=np.float64)
    return v @ m[:3, :3].T + m[:3, 3]


def fcl_convex(points):
    h = ConvexHull(points)
    faces = np.hstack([np.full((len(h.simplices), 1), 3), h.simplices]).ravel()
    return fcl.CollisionObject(fcl.Convex(points, len(h.simplices), faces), fcl.Transform())


def fcl_mesh(obj):
    obj.data.calc_loop_triangles()
    tris = np.array([tuple(t.vertices) for t in obj.data.loop_triangles], dtype=np.int64)
    m = fcl.BVHModel()
    v = world_vertices(obj)
    m.beginModel(len(v), len(tris))
    m.addSubModel(v, tris)
    m.endModel()
    return fcl.CollisionObject(m, fcl.Transform())


def depth(a, b):
    """Deepest penetration between two fcl objects (0 when apart)."""
    res = fcl.CollisionResult()
    fcl.collide(a, b, fcl.CollisionRequest(num_max_contacts=64, enable_contact=True), res)
    return max([c.penetration_depth for c in res.contacts] or [0.0])


def distance(a, b):
    return fcl.distance(a, b, fcl.DistanceRequest(), fcl.DistanceResult())


def transforms(objs):
    return {o.name: (tuple(o.location), tuple(o.rotation_euler), tuple(o.scale))
            for o in objs}


def settings_of(obj):
    """Every Hullabaloo setting of an object, as plain values."""
    s = obj.hullabaloo
    out = {}
    for prop in s.bl_rna.properties:
        k = prop.identifier
        if k in {"rna_type", "bake"}:
            continue
        v = getattr(s, k)
        out[k] = v if isinstance(v, (str, int, float, bool, set)) else tuple(v)
    return out


def test_oracle_measures_depth():
    # The oracle itself: a cube 3 mm into a two-triangle floor and 3 mm into another cube.
    cube = np.array([[x, y, z] for x in (-.5, .5) for y in (-.5, .5) for z in (-.5, .5)])
    floor = fcl.BVHModel()
    floor.beginModel(4, 2)
    floor.addSubModel(np.array([[-5, -5, 0], [5, -5, 0], [5, 5, 0], [-5, 5, 0]], float),
                      np.array([[0, 1, 2], [0, 2, 3]]))
    floor.endModel()
    sunk = fcl_convex(cube + [0.1, 0.2, 0.497])
    assert depth(sunk, fcl.CollisionObject(floor, fcl.Transform())) == pytest.approx(3e-3,
                                                                                      abs=1e-6)
    assert depth(sunk, fcl_convex(cube + [1.097, 0.3, 0.6])) == pytest.approx(3e-3, abs=1e-6)


def test_fifty_hulls_rest_in_a_bowl_without_overlap_undo_and_bit_identical_rerun():
    bowl, rocks = bowl_scene()
    assert {'REGISTER', 'UNDO'} <= set(bpy.types.HULLABALOO_OT_settle.bl_options)
    select(rocks, active=bowl)
    names = [o.name for o in rocks]
    settings_before = {n: settings_of(bpy.data.objects[n]) for n in names + ["Bowl"]}
    bpy.ops.ed.undo_push(message="before settle")
    start = hb.snapshot(bpy.context.scene)
    s = settle(onto='ACTIVE')
    assert (s["moving"], s["fallen"], s["failed"]) == ([], [], [])
    assert s["settled"] == sorted(names)
    rocks = [bpy.data.objects[n] for n in names]
    bowl = bpy.data.objects["Bowl"]
    first = transforms(rocks)
    # Nothing but the transforms changed: no keys, no animation, no physics settings.
    for o in rocks + [bowl]:
        assert o.animation_data is None and hb.keys_of(o) == {}
        assert settings_of(o) == settings_before[o.name]
    assert tuple(bowl.location) == pytest.approx(BOWL_AT) and not bpy.data.actions
    # Inside the bowl (below its rim, within its sphere) and at rest: each touches the bowl
    # or another rock (within 2 mm), none overlaps anything by more than 1 mm.
    centre = np.array(BOWL_AT)
    verts = [world_vertices(o) for o in rocks]
    for v in verts:
        assert np.linalg.norm(v - centre, axis=1).max() < BOWL_R + 1e-3
        assert v[:, 2].max() < centre[2]
    hulls = [fcl_convex(v) for v in verts]
    dish = fcl_mesh(bowl)
    deepest = 0.0
    for i, h in enumerate(hulls):
        deepest = max(deepest, depth(h, dish))
        gaps = [distance(h, dish)]
        for j, g in enumerate(hulls):
            if j == i:
                continue
            near = np.linalg.norm(verts[i].mean(0) - verts[j].mean(0)) < 0.6
            if near:
                deepest = max(deepest, depth(h, g))
                gaps.append(distance(h, g))
        assert min(gaps) < 2e-3, (names[i], min(gaps))   # supported, not hanging in the air
    assert deepest < 1e-3
    moved = [np.linalg.norm(np.subtract(first[n][0], start["objects"][n]["location"]))
             for n in names]
    assert min(moved) > 0.05
    # Undo puts every transform back; settling again gives the same numbers, bit for bit.
    bpy.ops.ed.undo()
    hb.assert_same(start, hb.snapshot(bpy.context.scene))
    for n in names:
        assert tuple(bpy.data.objects[n].location) == start["objects"][n]["location"]
        assert tuple(bpy.data.objects[n].rotation_euler) == \
            start["objects"][n]["rotation_euler"]
    assert settle(onto='ACTIVE')["settled"] == sorted(names)
    assert transforms([bpy.data.objects[n] for n in names]) == first


def ground_scene():
    """A passive ground, a dynamic box that is scenery for a settle (not selected), and a
    cube with no Hullabaloo settings above it."""
    scene = hb.empty_scene()
    hb.add_box("Ground", size=(6, 6, 1), location=(0, 0, -0.5), body_type='PASSIVE')
    post = hb.add_box("Post", size=(1, 1, 1), location=(0, 0, 0.5))
    cube = hb.add_box("Cube", size=(0.5, 0.5, 0.5), location=(0.1, 0.05, 2.0), enabled=False)
    cube.rotation_euler = (0.05, 0.02, 0.3)
    return scene, post, cube


def test_settles_onto_everything_holding_other_bodies_still():
    scene, post, cube = ground_scene()
    select([cube])
    s = settle()
    assert s["settled"] == ["Cube"]
    # On top of the Post (held where it is though Dynamic), flat: z of its lowest corner 1 m.
    assert world_vertices(cube)[:, 2].min() == pytest.approx(1.0, abs=2e-3)
    assert tuple(post.location) == (0.0, 0.0, 0.5)
    assert not cube.hullabaloo.enabled and cube.animation_data is None


def test_reports_by_name_what_fell_off_or_did_not_rest():
    scene, post, cube = ground_scene()
    off = hb.add_box("OffEdge", size=(0.5, 0.5, 0.5), location=(8.0, 0.0, 1.0), enabled=False)
    select([cube, off])
    s = settle()
    assert s["fallen"] == ["OffEdge"] and s["settled"] == ["Cube"]
    assert tuple(off.location) == (8.0, 0.0, 1.0)          # left where it was
    assert any("OffEdge" in p and "fell off" in p for p in s["problems"])
    # A time limit too short to land: named as still moving, keeping its last pose.
    cube.location = (0.1, 0.05, 2.0)
    select([cube])
    s = settle(time_limit=0.25)
    assert s["moving"] == ["Cube"] and s["simulated_seconds"] == pytest.approx(0.25)
    assert any("Cube" in p and "did not come to rest" in p for p in s["problems"])
    assert 1.2 < cube.location.z < 2.0


def test_errors_change_nothing():
    scene = hb.empty_scene()
    cube = hb.add_box("Cube", location=(0, 0, 2), enabled=False)
    empty = bpy.data.objects.new("Empty", None)
    scene.collection.objects.link(empty)
    new_object("Void", bpy.data.meshes.new("void"))
    select([cube])
    before = hb.snapshot(scene)
    with pytest.raises(RuntimeError, match="Nothing to settle onto"):
        bpy.ops.hullabaloo.settle()
    select([cube], active=empty)
    with pytest.raises(RuntimeError, match="must be a mesh"):
        bpy.ops.hullabaloo.settle(onto='ACTIVE')
    select([cube], active=bpy.data.objects["Void"])
    with pytest.raises(RuntimeError, match="Void: the active object cannot be collided with "
                       r"\(has no vertices"):
        bpy.ops.hullabaloo.settle(onto='ACTIVE')
    select([cube], active=cube)   # the surface alone: nothing left to settle
    with pytest.raises(RuntimeError, match="Nothing to settle"):
        bpy.ops.hullabaloo.settle(onto='ACTIVE')
    hb.assert_same(before, hb.snapshot(scene))


class WindowManager:
    def __init__(self):
        self.progress = []

    def progress_update(self, value):
        self.progress.append(value)

    def progress_end(self):
        self.progress.append("end")

    def event_timer_remove(self, timer):
        pass


def modal_operator(job):
    """The operator's real modal code (background Blender has no window to run it in) with
    stand-ins for the window manager, the event and report()."""
    from types import SimpleNamespace
    cls = bpy.types.HULLABALOO_OT_settle
    ns = {name: getattr(cls, name) for name in ("modal", "_advance", "_end_modal", "_done",
                                                "_status", "_prepare_tick", "_engine_ready",
                                                "_prepare", "_stage")}
    op = type("ModalStandIn", (), ns)()
    op._job, op._timer, op.reports, op._preparing = job, object(), [], False
    op.apply_scale = op.keep_physics = False
    op.report = lambda level, msg: op.reports.append((set(level), msg))
    ctx = SimpleNamespace(window_manager=WindowManager(), workspace=None,
                          scene=bpy.context.scene)
    return op, ctx


def make_job(objs, surface=None, **kw):
    job = settle_module().SettleJob(bpy.context.scene, bpy.context.evaluated_depsgraph_get(),
                                    objs, surface, **kw)
    job.prepare()
    return job


def test_escape_leaves_the_scene_untouched_and_ticks_match_execute():
    from types import SimpleNamespace
    scene, post, cube = ground_scene()
    before = hb.snapshot(scene)
    op, ctx = modal_operator(make_job([cube]))
    op._job.advance(5)    # as if some ticks had run
    assert op.modal(ctx, SimpleNamespace(type='ESC', value='PRESS')) == {'CANCELLED'}
    assert any("cancelled" in msg for _, msg in op.reports)
    assert ctx.window_manager.progress[-1] == "end"
    hb.assert_same(before, hb.snapshot(scene))
    assert settle_module().LAST["cancelled"]
    # Timer ticks to the end write what a synchronous run writes, bit for bit.
    op, ctx = modal_operator(make_job([cube]))
    result = {'RUNNING_MODAL'}
    while result == {'RUNNING_MODAL'}:
        assert op.modal(ctx, SimpleNamespace(type='MOUSEMOVE', value='NOTHING')) == \
            {'RUNNING_MODAL'}       # no edits while settling
        result = op.modal(ctx, SimpleNamespace(type='TIMER', value='NOTHING'))
    assert result == {'FINISHED'}
    assert all(0 <= p <= 1000 for p in ctx.window_manager.progress[:-1])
    ticked = transforms([cube])
    cube.location, cube.rotation_euler = (0.1, 0.05, 2.0), (0.05, 0.02, 0.3)
    select([cube])
    settle()
    assert transforms([cube]) == ticked


def test_first_settle_of_a_session_shows_the_engine_being_prepared_then_settles():
    """As invoke leaves it in a session whose engine is not compiled yet: the warm-up runs in
    its thread while the status bar says so; then the same settle as a synchronous run."""
    import sys
    import time
    from types import SimpleNamespace
    scene, post, cube = ground_scene()
    start = (tuple(cube.location), tuple(cube.rotation_euler))
    select([cube])
    settle()
    reference = transforms([cube])
    cube.location, cube.rotation_euler = start
    select([cube])
    texts = []
    op, ctx = modal_operator(None)
    ctx.workspace = SimpleNamespace(status_text_set=texts.append)
    ctx.view_layer, ctx.selected_objects = bpy.context.view_layer, [cube]
    ctx.evaluated_depsgraph_get = bpy.context.evaluated_depsgraph_get
    op.onto, op.time_limit, op.jitter, op.seed = 'ALL', 20.0, 0.0, 0
    warmup = sys.modules[hb.MODULE + ".engine.world.warmup"]
    compiler = sys.modules[hb.MODULE + ".addon.compiler"]
    warmup._DONE["seconds"] = None          # as in a session that has not compiled yet
    op._preparing = True
    compiler.start()
    result = {'RUNNING_MODAL'}
    while result == {'RUNNING_MODAL'}:
        result = op.modal(ctx, SimpleNamespace(type='TIMER', value='NOTHING'))
        time.sleep(0.01)
    assert result == {'FINISHED'}, op.reports
    said = [t for t in texts if t]
    preparing = [t for t in said if "preparing the physics engine" in t]
    settling = [t for t in said if t.startswith("Hullabaloo: settling")]
    assert preparing and settling and said.index(preparing[-1]) < said.index(settling[0])
    assert transforms([cube]) == reference


def test_jitter_is_seeded_and_options_keep_physics_and_apply_scale():
    scene, post, cube = ground_scene()
    post.hullabaloo.enabled = False
    cube.scale = (-1.5, 1.0, 0.8)      # mirrored too
    other = new_object("Twin", cube.data, (2.0, 0.0, 2.0))   # shares the cube's mesh
    passive = hb.add_box("Crate", size=(0.4, 0.4, 0.4), location=(-1.5, 0.0, 1.0),
                         body_type='PASSIVE', shape='BOX', friction=0.9)
    start = {o.name: (tuple(o.location), tuple(o.rotation_euler)) for o in (cube, passive)}

    def again(**kw):
        for o in (cube, passive):
            o.location, o.rotation_euler = start[o.name]
        select([cube, passive])
        settle(**kw)
        return transforms([cube, passive])

    plain = again()
    assert again(jitter=0.05, seed=1) == again(jitter=0.05, seed=1) != plain
    assert again(jitter=0.05, seed=2) != again(jitter=0.05, seed=1)
    # Keep Physics: the cube gets the settings it was settled with; the Crate (Passive,
    # settled as Dynamic for the run) keeps its own.
    again(keep_physics=True)
    assert cube.hullabaloo.enabled and cube.hullabaloo.body_type == 'DYNAMIC'
    assert cube.hullabaloo.shape == 'CONVEX_HULL'
    assert passive.hullabaloo.body_type == 'PASSIVE' and passive.hullabaloo.shape == 'BOX'
    assert passive.hullabaloo.friction == pytest.approx(0.9)
    cube.hullabaloo.property_unset("enabled")
    # Apply Scale: the same world geometry at scale 1; the shared mesh was copied first.
    kept = world_vertices(cube)
    again(apply_scale=True)
    assert tuple(cube.scale) == (1.0, 1.0, 1.0) and cube.data != other.data
    np.testing.assert_allclose(world_vertices(cube), kept, atol=1e-5)
    for f in cube.data.polygons:    # faces still point outwards
        assert np.dot(tuple(f.center), tuple(f.normal)) > 0
    assert tuple(other.scale) == (1.0, 1.0, 1.0) and other.data.users == 1
    assert np.ptp([v.co.x for v in other.data.vertices]) == pytest.approx(0.5)


def test_rotation_modes_deltas_and_parents_get_the_resting_pose():
    scene = hb.empty_scene()
    hb.add_box("Ground", size=(8, 8, 1), location=(0, 0, -0.5), body_type='PASSIVE')
    rig = bpy.data.objects.new("Rig", None)
    scene.collection.objects.link(rig)
    rig.location, rig.rotation_euler, rig.scale = (0.5, 0.0, 1.0), (0.0, 0.0, 0.7), (2, 2, 2)
    objs = []
    for k, mode in enumerate(("QUATERNION", "AXIS_ANGLE", "ZXY", "XYZ")):
        o = hb.add_box(f"C{k}", size=(0.4, 0.3, 0.2), location=(-2.0 + 1.2 * k, 1.0, 1.5),
                       enabled=False)
        o.rotation_mode = mode
        objs.append(o)
    objs[2].delta_rotation_euler = (0.3, 0.0, 0.2)
    objs[2].delta_location = (0.0, 0.1, 0.0)
    objs[3].parent = rig
    objs[3].location = (-0.5, -0.8, 0.4)
    objs[3].rotation_euler = (0.4, 0.1, 0.0)
    bpy.context.view_layer.update()
    job = make_job(objs)
    while not job.advance(24):
        pass
    pose = {b.name: (job.world.positions[b.index].copy(),
                     hb.engine().core.quat.to_matrix(job.world.orientations[b.index]) @ b.shape_matrix)
            for b in job.bodies}
    job.finish()
    bpy.context.view_layer.update()
    for o in objs:
        m = hb.matrix(o)
        np.testing.assert_allclose(m[:3, 3], pose[o.name][0], atol=1e-5, err_msg=o.name)
        np.testing.assert_allclose(m[:3, :3], pose[o.name][1], atol=1e-5, err_msg=o.name)
        assert world_vertices(o)[:, 2].min() == pytest.approx(0.0, abs=2e-3)   # resting
    assert tuple(rig.location) == (0.5, 0.0, 1.0)


def mesh_data(me):
    me.calc_loop_triangles()
    return (np.array([tuple(v.co) for v in me.vertices]),
            np.array([tuple(t.vertices) for t in me.loop_triangles]))


def bmesh_data(make):
    import bmesh
    bm = bmesh.new()
    make(bmesh, bm)
    me = bpy.data.meshes.new("probe")
    bm.to_mesh(me)
    bm.free()
    return mesh_data(me)


def test_scenery_shape_is_mesh_unless_a_closed_convex_mesh():
    hb.empty_scene()
    convex = settle_module().is_convex_closed
    cube = mesh_data(hb.box_mesh("probe"))
    assert convex(*cube)
    assert convex(*bmesh_data(lambda bmesh, bm: bmesh.ops.create_uvsphere(
        bm, u_segments=24, v_segments=12, radius=1.0)))
    assert not convex(*mesh_data(bowl_mesh("probe_bowl")))          # open
    dented = (cube[0].copy(), cube[1])
    dented[0][7] *= 0.3                                              # a corner pushed in
    assert not convex(*dented)
    two = (np.concatenate((cube[0], cube[0] + 3.0)), np.concatenate((cube[1], cube[1] + 8)))
    assert not convex(*two)                                          # two loose cubes
    assert not convex(cube[0], cube[1][:, ::-1])                     # wound inwards
    plane = bmesh_data(lambda bmesh, bm: bmesh.ops.create_grid(bm, x_segments=4,
                                                                y_segments=4, size=2.0))
    assert not convex(*plane)


def run_cli(*args, cwd):
    env = hb.cli_env(os.path.join(str(cwd), "user"))
    done = subprocess.run([sys.executable, CLI, *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=600)
    return done.returncode, done.stdout, done.stderr


def test_command_line_settles_and_saves(tmp_path):
    bowl, rocks = bowl_scene(n=6)
    select([rocks[0]], active=rocks[0])
    src = tmp_path / "dress.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(src))
    start = {o.name: tuple(o.location) for o in rocks}
    out = tmp_path / "settled.blend"
    code, text, err = run_cli("settle", str(src), "--objects", "Rock.*", "--onto", "Bowl",
                              "--out", str(out), cwd=tmp_path)
    assert code == 0, err[-2000:]
    assert "6 at rest, 0 still moving" in text
    bpy.ops.wm.open_mainfile(filepath=str(out))
    for name, loc in start.items():
        o = bpy.data.objects[name]
        assert o.location.z < loc[2] - 0.05 and o.animation_data is None
        assert not o.hullabaloo.enabled
    assert [o.name for o in bpy.context.selected_objects] == ["Rock.00"]   # as saved
    assert bpy.context.view_layer.objects.active.name == "Rock.00"
    code, text, err = run_cli("settle", str(src), "--objects", "Nope*", cwd=tmp_path)
    assert code == 2 and "'Nope*'" in err and "Traceback" not in err
