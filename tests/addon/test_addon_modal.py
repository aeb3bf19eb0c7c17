"""The interactive (modal) bake's own logic: timer ticks until done, ESC mid-way. Background
Blender has no window to run a modal operator in, so the operator's real modal() code runs
with stand-ins for the window manager, the event and the operator's report()."""
from types import SimpleNamespace

import hb_blender as hb
import numpy as np

bpy = hb.bpy


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
    cls = bpy.types.HULLABALOO_OT_bake
    ns = {name: getattr(cls, name) for name in ("modal", "_advance", "_end_modal", "_done",
                                                "_status", "_prepare_tick", "_prepare_engine",
                                                "_prepare", "_make_job", "_from_frame",
                                                "_preparing", "_prepared", "_warm_seconds")}
    op = type("ModalStandIn", (), ns)()
    op._job, op._timer, op.reports = job, object(), []
    op.report = lambda level, msg: op.reports.append((set(level), msg))
    return op


def scene_with_pusher():
    scene = hb.empty_scene(frame_end=30)
    hb.add_box("Ground", size=(20, 20, 1), location=(0, 0, -0.5), body_type='PASSIVE')
    boxes = [hb.add_box(f"Box{i}", size=(1, 1, 1), location=(i * 1.5, 0, 0.5 + 0.3 * i))
             for i in range(3)]
    pusher = hb.add_box("Pusher", size=(1, 2, 1), location=(-3, 0, 0.55), body_type='ANIMATED')
    pusher.keyframe_insert("location", frame=1)
    pusher.location.x = 3.0
    pusher.keyframe_insert("location", frame=30)
    scene.frame_set(9)
    return scene, boxes


def test_timer_ticks_bake_the_same_keys_as_execute_and_keep_the_frame():
    scene, boxes = scene_with_pusher()
    hb.bake()
    reference = {o.name: hb.keys_of(o) for o in boxes}
    assert bpy.ops.hullabaloo.clear_bake() == {'FINISHED'}
    ops = hb.pkg().addon
    job = ops.simulate.BakeJob(scene, bpy.context.evaluated_depsgraph_get())
    job.prepare()
    op = modal_operator(job)
    ctx = SimpleNamespace(window_manager=WindowManager(), workspace=None, scene=scene)
    result, ticks = {'RUNNING_MODAL'}, 0
    while result == {'RUNNING_MODAL'}:
        assert scene.frame_current == 9  # the user's frame between ticks
        result = op.modal(ctx, SimpleNamespace(type='TIMER', value='NOTHING'))
        ticks += 1
    assert result == {'FINISHED'} and ticks >= 1
    assert ctx.window_manager.progress[-1] == "end"
    assert scene.frame_current == 9
    for o in boxes:
        keys = hb.keys_of(o)
        for ch in reference[o.name]:
            np.testing.assert_array_equal(keys[ch]["co"], reference[o.name][ch]["co"])
    # A mouse move or key press is swallowed while baking (no edits mid-bake).
    assert op.modal(ctx, SimpleNamespace(type='MOUSEMOVE', value='NOTHING')) == {'RUNNING_MODAL'}


def test_escape_mid_bake_cancels_and_changes_nothing():
    scene, boxes = scene_with_pusher()
    before = hb.snapshot(scene)
    ops = hb.pkg().addon
    job = ops.simulate.BakeJob(scene, bpy.context.evaluated_depsgraph_get())
    job.prepare()
    op = modal_operator(job)
    ctx = SimpleNamespace(window_manager=WindowManager(), workspace=None, scene=scene)
    job.advance(7, restore=False)  # as if some ticks had run
    job.restore_frame()
    assert op.modal(ctx, SimpleNamespace(type='ESC', value='PRESS')) == {'CANCELLED'}
    assert any("cancelled" in msg for _, msg in op.reports)
    hb.assert_same(before, hb.snapshot(scene))
    assert ops.ops.LAST["cancelled"]
