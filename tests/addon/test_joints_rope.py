"""The issue's new-user rope through Blender itself (tests/addon/joints_rope_scene.py): 50
overlapping capsules joined by Blender's Connect (Point), both ends keyed Animated and then
released onto a table. Blender simulates it (point-cache bake); then hullabaloo.import_rigid_body
and a Hullabaloo bake of the same scene. Before the joints were imported the overlapping
capsules flew apart at 35 m/s and seven fell off the table."""
import hb_blender as hb
import joints_rope_scene as rope
import numpy as np

bpy = hb.bpy
FRAMES = 72          # 0.5 s held, 2.5 s swinging, falling and settling (at 60 the end sat on a
                     # last slip of a link, frames 54-60, in some round-off histories)


def test_connected_rope_released_onto_a_table_stays_intact_like_blenders():
    scene, links, empties, table = rope.build(hb, FRAMES)
    pins = rope.joint_locals(empties)
    frames = list(range(1, FRAMES + 1))
    rope.blender_bake(hb, scene)
    blender = rope.measure(hb, scene, links, pins, frames)
    for o in scene.objects:
        o.select_set(False)
    assert bpy.ops.hullabaloo.import_rigid_body(all=True) == {'FINISHED'}
    assert all(e.hullabaloo_joint.enabled and e.hullabaloo_joint.type == 'POINT'
               and e.hullabaloo_joint.disable_collisions for e in empties)
    for end in (links[0], links[-1]):        # keyed Animated carried as keys
        assert end.hullabaloo.body_type == 'DYNAMIC'
        fc = next(c for c in hb.fcurves(end) if c.data_path == "hullabaloo.animated")
        assert [k.co[1] for k in fc.keyframe_points] == [1.0, 1.0, 0.0]
    summary = hb.bake()
    assert summary["problems"] == []
    ours = rope.measure(hb, scene, links, pins, frames)
    print(f"\nrope of {rope.N_LINKS} capsules, {FRAMES} frames: worst link gap "
          f"{1000 * ours['gap'].max():.2f} mm (Blender {1000 * blender['gap'].max():.2f} mm), "
          f"fastest {ours['speed'].max():.2f} m/s (Blender {blender['speed'].max():.2f}), "
          f"on the table at the end {ours['on_table'][-1]} (Blender "
          f"{blender['on_table'][-1]})")
    # Held for 0.5 s: the ends stay exactly where they were keyed, in both.
    held = slice(0, rope.RELEASE - 1)
    for k in (0, -1):
        assert np.abs(ours["pos"][held, k] - ours["pos"][0, k]).max() < 1e-6
        assert np.abs(blender["pos"][held, k] - blender["pos"][0, k]).max() < 1e-4
    # Released: it fell onto the table (the ends too) and lies there, every capsule.
    assert ours["pos"][-1, :, 2].max() < rope.TABLE_TOP + 0.1
    assert ours["on_table"][-1] == rope.N_LINKS == blender["on_table"][-1]
    assert ours["on_table"].min() == rope.N_LINKS       # nothing ever left the table top
    assert ours["speed"][-4:].max() < 0.05              # settled, like Blender's
    # Intact: no link opens beyond 10 mm at any frame, and no more than Blender's do.
    assert ours["gap"].max() < 10e-3
    assert ours["gap"].max() <= blender["gap"].max()
    assert ours["gap"][-1] < 1e-3
    # Nothing flies: far below the 35 m/s of overlapping capsules without their joints. Held
    # between its two keyed ends the rope is a loop through the ground, solved by Gauss-Seidel
    # with the softer locks that loops need to stay stable (engine.dynamics.joint_solver
    # SWEPT_HERTZ_RATE, issue 25): its stretch comes back as speed at the release, 10.6 m/s
    # (7.4 with the old, unstable rate; Blender 6.3). A known cost, until looped systems are
    # solved exactly.
    assert ours["speed"].max() < 12.0
