"""Joints through the bake's life in real Blender: the per-frame cache written next to the
saved .blend carries the joints' state (a broken joint stays broken when re-baking from a
later frame after the file is reopened, keys bit-identical to the full bake), Clear Bake
puts the bodies back and a new bake rebuilds the same joints (same keys), and a re-bake
from a frame before the break breaks it again at the same frame."""
import hb_blender as hb
import numpy as np

bpy = hb.bpy


def glued_scene():
    """A 6 kg block glued to a passive beam by a Fixed joint that breaks under 30 N (it
    carries 58.9 N): it breaks in the first frames and falls; a second block hangs from
    the beam on an unbreakable Point joint and swings."""
    scene = hb.empty_scene(frame_end=30)
    hb.add_box("Beam", size=(2, 0.5, 0.5), location=(0, 0, 3), body_type='PASSIVE')
    block = hb.add_box("Block", size=(0.5, 0.5, 0.5), location=(1.25, 0, 3), mass=6.0)
    bob = hb.add_box("Bob", size=(0.3, 0.3, 0.3), location=(-1.5, 0, 3), mass=1.0)
    for name, kind, other, at, brk in (("Glue", 'FIXED', block, (1.0, 0, 3), 30.0),
                                       ("Pin", 'POINT', bob, (-1.0, 0, 3), None)):
        e = bpy.data.objects.new(name, None)
        scene.collection.objects.link(e)
        e.location = at
        js = e.hullabaloo_joint
        js.enabled, js.type = True, kind
        js.object1, js.object2 = bpy.data.objects["Beam"], other
        js.use_breaking = brk is not None
        js.break_force = brk or 1000.0
    scene.frame_set(1)
    return scene, block, bob


def keys(objs):
    return {o.name: hb.keys_of(o) for o in objs}


def assert_same_keys(a, b):
    for name in a:
        assert a[name].keys() == b[name].keys()
        for ch in a[name]:
            np.testing.assert_array_equal(a[name][ch]["co"], b[name][ch]["co"],
                                          err_msg=f"{name} {ch}")


def test_saved_cache_keeps_broken_joints_broken_and_clear_bake_rebuilds_them(tmp_path):
    scene, block, bob = glued_scene()
    hb.bake()
    full = keys([block, bob])
    cache = hb.pkg().addon.cache.get(scene)
    broken = [bool(np.asarray(s["joint_broken"])[0]) for s in cache.states]
    first_broken = broken.index(True)
    assert 0 < first_broken < 10 and all(broken[first_broken:])   # broke, for good
    assert not any(np.asarray(s["joint_broken"])[1] for s in cache.states)  # the pin holds
    # Saved and reopened (the cache comes back from disk), re-baked from frame 15.
    path = tmp_path / "glued.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    bpy.ops.wm.read_homefile(use_empty=True)          # forget everything held in memory
    bpy.ops.wm.open_mainfile(filepath=str(path))
    scene = bpy.context.scene
    block, bob = bpy.data.objects["Block"], bpy.data.objects["Bob"]
    scene.frame_set(15)
    assert bpy.ops.hullabaloo.rebake_from_frame() == {'FINISHED'}
    assert_same_keys(keys([block, bob]), full)
    scene.frame_set(30)
    assert block.matrix_world.translation.z < 1.0     # still falling free: stayed broken
    # Re-baked from before the break: it breaks again, at the same frame, same keys.
    scene.frame_set(1 + first_broken - 1)
    assert bpy.ops.hullabaloo.rebake_from_frame() == {'FINISHED'}
    assert_same_keys(keys([block, bob]), full)
    # Clear Bake: back to the rest pose, no keys, no cache; baked again, the same joints.
    assert bpy.ops.hullabaloo.clear_bake() == {'FINISHED'}
    scene.frame_set(30)
    assert abs(block.matrix_world.translation.z - 3.0) < 1e-6 and not hb.keys_of(block)
    assert hb.pkg().addon.cache.get(scene) is None
    scene.frame_set(1)
    hb.bake()
    assert_same_keys(keys([block, bob]), full)
