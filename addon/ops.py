"""Operators: bake (modal in the UI, synchronous from scripts), re-bake from the current
frame, clear bake, import Blender Rigid Body settings, add/remove on the selection.

Every operator is undoable (one bake = one undo step) and reports problems in the UI instead
of raising; from Python, an ERROR report surfaces as RuntimeError with the same message
(Blender's rule for bpy.ops), warnings are printed and also kept in ``LAST``.
"""
import time

import bpy
from bpy.props import BoolProperty, EnumProperty

from ..engine import EngineError
from . import animation, cache, compiler, joints, rb_import
from .props import BODY_TYPES
from .simulate import BakeError, BakeJob

# The last bake's summary and problems, for scripts, the command line and tests; "engine":
# how the engine ran (compiled or not, and the seconds spent preparing it in this bake).
LAST = {"summary": None, "problems": [], "cancelled": False, "engine": None}
MAX_REPORTS = 8

RB_SHAPES = rb_import.RB_SHAPES
# The last import's notes, for scripts and tests: {"objects": {name: [str]}, "general": [str]}.
LAST_IMPORT = {"objects": {}, "general": []}


def _package():
    # bl_ext.<repo>.hullabaloo.addon.ops -> bl_ext.<repo>.hullabaloo
    return __package__.rsplit(".", 1)[0]


def _report_problems(op, problems):
    shown = 0
    for p in problems:
        if shown == MAX_REPORTS:
            op.report({'WARNING'}, f"... and {len(problems) - shown} more problem(s); see the "
                      "console")
            break
        level = {"ERROR": 'WARNING', "WARNING": 'WARNING'}.get(p.level, 'INFO')
        op.report({level}, str(p))
        shown += 1
    for p in problems[shown:]:
        print(f"Hullabaloo: {p.level}: {p}")


def _baked_objects(scene):
    return [o for o in scene.objects if o.hullabaloo.bake.baked]


class _BakeOperator:
    """Shared by Bake and Re-bake From Frame (a mixin: registered operator classes must not
    be subclassed)."""
    _job = None
    _timer = None
    _preparing = False   # the engine's warm-up thread runs (compiler.start); then the job
    _prepared = ("", 0.0)  # its stage and seconds at the last timer tick, for the status
    _warm_seconds = 0.0

    @classmethod
    def poll(cls, context):
        if context.scene is None or context.mode != 'OBJECT':
            cls.poll_message_set("Switch to Object Mode to bake")
            return False
        return True

    def _from_frame(self, context):
        return None

    def _make_job(self, context):
        scene = context.scene
        return BakeJob(scene, context.evaluated_depsgraph_get(),
                       from_frame=self._from_frame(context), package=_package())

    def _prepare(self, context):
        LAST.update(summary=None, problems=[], cancelled=False,
                    engine=compiler.engine_info(self._warm_seconds))
        job = self._make_job(context)
        try:
            job.prepare()
        except (BakeError, EngineError) as exc:
            LAST["problems"] = list(job.problems)
            self.report({'ERROR'}, str(exc))
            return None
        LAST["problems"] = list(job.problems)
        return job

    def _done(self, context, job):
        summary = job.finish()
        LAST["summary"] = summary
        LAST["problems"] = list(job.problems)  # with those found while finishing
        LAST["engine"] = compiler.engine_info(self._warm_seconds)
        _report_problems(self, job.problems)
        note = compiler.uncompiled_note()
        if note:
            self.report({'WARNING'}, note)
        seconds = summary["simulation_seconds"] + summary["write_seconds"] + \
            summary["refresh_seconds"]
        bad = sorted(set(summary.get("unstable", {})) | set(summary.get("guarded", {})))
        if bad:  # not a success: say which objects went wrong (details in the problems above)
            names = ", ".join(bad[:MAX_REPORTS]) + (" ..." if len(bad) > MAX_REPORTS else "")
            self.report({'WARNING'}, f"Baked {summary['objects']} object(s) over "
                        f"{summary['frames']} frames, but {len(bad)} went unstable: {names}")
            return {'FINISHED'}
        self.report({'INFO'}, f"Baked {summary['objects']} object(s) over {summary['frames']} "
                    f"frames in {seconds:.2f} s")
        return {'FINISHED'}

    def _advance(self, job, count, restore=True):
        """job.advance, turning an unexpected engine failure into a clean cancel: the
        report names the frame, nothing has been written (keys are written at the end)."""
        try:
            return job.advance(count, restore=restore)
        except Exception as exc:  # the engine is a separate component: never a traceback
            frame = job.frame
            job.cancel()
            LAST["cancelled"] = True
            self.report({'ERROR'}, f"The simulation failed after frame {frame} "
                        f"({type(exc).__name__}: {exc}); nothing was changed. Please report "
                        "this with the .blend file.")
            return None

    def _prepare_engine(self, run):
        """The engine's first-use warm-up (compiling); a failure is reported, never raised."""
        try:
            run()
            return True
        except Exception as exc:  # a compiler failure: say so instead of a traceback
            LAST.update(summary=None, problems=[], cancelled=True, engine=None)
            self.report({'ERROR'}, f"{compiler.PREPARING} failed ({type(exc).__name__}: "
                        f"{exc}); nothing was changed. Please report this.")
            return False

    def execute(self, context):
        t0 = time.perf_counter()
        if not compiler.ready():   # the console says what the pause is (compiler.prepare)
            if not self._prepare_engine(compiler.prepare):
                return {'CANCELLED'}
            self._warm_seconds = time.perf_counter() - t0
        job = self._prepare(context)
        if job is None:
            return {'CANCELLED'}
        while True:
            finished = self._advance(job, 64)
            if finished is None:
                return {'CANCELLED'}
            if finished:
                return self._done(context, job)

    def invoke(self, context, event):
        if bpy.app.background or context.window is None:
            return self.execute(context)
        # Compiling on first use runs in a thread of its own while the timer shows its stage
        # and seconds (Blender stays responsive); the scene is read once it is done.
        self._preparing, self._warm_seconds, self._job = not compiler.ready(), 0.0, None
        if self._preparing:
            compiler.start()
        else:
            job = self._prepare(context)
            if job is None:
                return {'CANCELLED'}
            self._job = job
        wm = context.window_manager
        self._timer = wm.event_timer_add(0.01, window=context.window)
        wm.progress_begin(0, 1000)
        wm.modal_handler_add(self)
        self._status(context)
        return {'RUNNING_MODAL'}

    def _status(self, context, text=None):
        if context.workspace is None:
            return
        if text is None and self._preparing:
            stage, seconds = self._prepared
            text = (f"Hullabaloo: {compiler.PREPARING.lower()}, compiled on first use "
                    f"({stage or 'starting'}, {seconds:.0f} s) \u2014 Esc to cancel")
        elif text is None and self._job is not None:
            j = self._job
            text = (f"Hullabaloo: baking frame {j.frame} of {j.frame_end} "
                    f"({100 * j.progress:.0f}%) \u2014 Esc to cancel")
        context.workspace.status_text_set(text)

    def _end_modal(self, context):
        wm = context.window_manager
        if self._timer is not None:
            wm.event_timer_remove(self._timer)
            self._timer = None
        wm.progress_end()
        self._status(context, None if self._job is None else "")
        if context.workspace is not None:
            context.workspace.status_text_set(None)

    def _prepare_tick(self, context):
        """While the warm-up thread runs: show its stage. Once done: read the scene."""
        finished, error, stage, seconds = compiler.progress()
        self._prepared = (stage, seconds)
        if error is not None:
            self._preparing = False
            self._end_modal(context)
            LAST.update(summary=None, problems=[], cancelled=True, engine=None)
            self.report({'ERROR'}, f"{compiler.PREPARING} failed ({type(error).__name__}: "
                        f"{error}); nothing was changed. Please report this.")
            return {'CANCELLED'}
        if finished:
            self._preparing, self._warm_seconds = False, seconds
            print(f"Hullabaloo: physics engine ready in {seconds:.2f} s: "
                  f"{compiler.jit.describe()}")
            job = self._prepare(context)
            if job is None:
                self._end_modal(context)
                return {'CANCELLED'}
            self._job = job
        self._status(context)
        return {'RUNNING_MODAL'}

    def modal(self, context, event):
        job = self._job
        if event.type in {'ESC', 'RIGHTMOUSE'} and event.value == 'PRESS':
            if job is not None:
                job.cancel()
            self._preparing = False   # the warm-up thread finishes for the next bake
            self._end_modal(context)
            LAST["cancelled"] = True
            self.report({'WARNING'}, "Bake cancelled; nothing was changed")
            return {'CANCELLED'}
        if event.type != 'TIMER':
            return {'RUNNING_MODAL'}
        if self._preparing:
            return self._prepare_tick(context)
        budget = time.perf_counter() + 0.1  # stay responsive: ~10 UI updates per second
        finished = False
        while time.perf_counter() < budget and not finished:
            finished = self._advance(job, 1, restore=False)
            if finished is None:
                self._end_modal(context)
                return {'CANCELLED'}
        job.restore_frame()
        context.window_manager.progress_update(int(1000 * job.progress))
        self._status(context)
        if not finished:
            return {'RUNNING_MODAL'}
        self._end_modal(context)
        return self._done(context, job)

    def cancel(self, context):  # window closed / file loaded mid-bake
        if self._job is not None:
            self._job.cancel()
        self._end_modal(context)


class HULLABALOO_OT_bake(_BakeOperator, bpy.types.Operator):
    """Simulate the scene's Hullabaloo objects over the frame range and bake the motion to \
location and rotation keyframes (Esc cancels)"""
    bl_idname = "hullabaloo.bake"
    bl_label = "Bake to Keyframes"
    bl_options = {'REGISTER', 'UNDO'}

    from_current_frame: BoolProperty(
        name="From Current Frame", default=False,
        description="Keep the keys before the current frame and re-simulate from there on, "
        "starting from the stored state of the previous bake (velocities included)")

    def _from_frame(self, context):
        return context.scene.frame_current if self.from_current_frame else None


class HULLABALOO_OT_rebake_from_frame(_BakeOperator, bpy.types.Operator):
    """Keep the keys before the current frame and re-simulate from it to the end, starting \
from the stored simulation state of the last bake (after a late tweak: a new obstacle, a \
changed friction)"""
    bl_idname = "hullabaloo.rebake_from_frame"
    bl_label = "Re-bake From Current Frame"
    bl_options = {'REGISTER', 'UNDO'}

    @classmethod
    def poll(cls, context):
        if not _BakeOperator.poll.__func__(cls, context):
            return False
        if cache.get(context.scene) is None:
            cls.poll_message_set("Bake the scene first: re-baking continues from the "
                                 "simulation states a bake stores")
            return False
        return True

    def _from_frame(self, context):
        return context.scene.frame_current


class HULLABALOO_OT_clear_bake(bpy.types.Operator):
    """Remove the baked keys and put the objects' animation and transforms back exactly as \
they were before the first bake"""
    bl_idname = "hullabaloo.clear_bake"
    bl_label = "Clear Bake"
    bl_options = {'REGISTER', 'UNDO'}

    selected_only: BoolProperty(
        name="Selected Only", default=False,
        description="Clear only the selected objects (otherwise every baked object)")

    @classmethod
    def poll(cls, context):
        return context.scene is not None and context.mode == 'OBJECT'

    def execute(self, context):
        objs = _baked_objects(context.scene)
        if self.selected_only:
            objs = [o for o in objs if o.select_get()]
        if not objs:
            self.report({'WARNING'}, "Nothing to clear: no baked Hullabaloo objects"
                        + (" selected" if self.selected_only else ""))
            return {'CANCELLED'}
        for o in objs:
            animation.restore_object(o)
        if not _baked_objects(context.scene):
            cache.drop(context.scene)
            context.scene.hullabaloo.cache_file = ""
        self.report({'INFO'}, f"Cleared the bake of {len(objs)} object(s)")
        return {'FINISHED'}


class HULLABALOO_OT_import_rigid_body(bpy.types.Operator):
    """Copy Blender Rigid Body settings (type, shape, Compound Parent parts, mass, friction, \
bounciness, damping, deactivation, collision collections, keyed Animated and Dynamic, and the \
world's frame range, speed, gravity and solver hints) to Hullabaloo and enable it; lists what \
cannot be carried"""
    bl_idname = "hullabaloo.import_rigid_body"
    bl_label = "Import Blender Rigid Body"
    bl_options = {'REGISTER', 'UNDO'}

    all: BoolProperty(
        name="All Objects", default=False,
        description="Import every object of the scene with a Rigid Body (otherwise the "
        "selected ones)")
    disable_blender_world: BoolProperty(
        name="Turn Off Blender's Rigid Body World", default=True,
        description="Disable the scene's Rigid Body World (its settings are kept) so its "
        "simulation does not override the baked keys on playback")

    @classmethod
    def poll(cls, context):
        return context.scene is not None

    def execute(self, context):
        scene = context.scene
        pool = scene.objects if self.all else context.selected_objects
        if not self.all and not pool:
            self.report({'ERROR'}, "Nothing selected: select objects with a Rigid Body, or "
                        "import all of them (All Objects)")
            return {'CANCELLED'}
        objs = [o for o in pool if o.rigid_body is not None]
        # Blender's rigid-body constraints (usually on Empties) become Hullabaloo joints.
        n_joints, joint_notes = joints.import_constraints(pool, scene)
        for name, note in joint_notes:
            self.report({'WARNING'}, f"{name}: {note}")
        # Carried as they are, but said: pivots far outside both bodies (Connect's default).
        pivots = joints.pivot_notes(pool, context.evaluated_depsgraph_get())
        for name, note in pivots:
            self.report({'INFO'}, f"{name}: {note}")
        if not objs and n_joints:
            LAST_IMPORT.update(objects=joints.notes_by_object(joint_notes + pivots),
                               general=[])
            self.report({'INFO'}, f"Imported {n_joints} rigid-body constraint(s)")
            return {'FINISHED'}
        if not objs:
            self.report({'ERROR'}, "None of the " + ("scene's" if self.all else "selected")
                        + " objects has a Blender Rigid Body (Physics > Rigid Body)")
            return {'CANCELLED'}
        done, per_object, general = rb_import.import_scene(scene, objs,
                                                           self.disable_blender_world)
        per_object.update(joints.notes_by_object(joint_notes))
        LAST_IMPORT.update(objects={**per_object, **joints.notes_by_object(joint_notes
                                                                            + pivots)},
                           general=general)
        if not done:
            self.report({'ERROR'}, "; ".join(general) or "Nothing imported")
            return {'CANCELLED'}
        if n_joints:
            general = [*general, f"{n_joints} constraint(s) imported as joints"]
        self.report({'INFO'}, f"Imported Rigid Body settings of {len(done)} object(s)"
                    + (f"; {'; '.join(general)}" if general else ""))
        # Nothing dropped silently: what each object's import could not carry.
        lines = [f"{name}: not carried: {'; '.join(n)}" for name, n in per_object.items()]
        for k, line in enumerate(lines):
            if k == MAX_REPORTS:
                self.report({'INFO'}, f"... and {len(lines) - k} more object(s) with settings "
                            "not carried; see the console and each object's bake summary")
            if k >= MAX_REPORTS:
                print(f"Hullabaloo: {line}")
            else:
                self.report({'INFO'}, line)
        return {'FINISHED'}


def import_rigid_body(obj):
    """Copy one object's Blender Rigid Body settings to obj.hullabaloo and enable it
    (addon.rb_import.import_object); returns what could not be carried."""
    return rb_import.import_object(obj, rb_import.world_objects(obj.users_scene[0])
                                   if obj.users_scene else None)


class HULLABALOO_OT_add_selected(bpy.types.Operator):
    """Enable Hullabaloo on the selected mesh objects with the given type"""
    bl_idname = "hullabaloo.add_selected"
    bl_label = "Add to Selected"
    bl_options = {'REGISTER', 'UNDO'}

    body_type: EnumProperty(name="Type", items=BODY_TYPES, default='DYNAMIC')

    @classmethod
    def poll(cls, context):
        if not context.selected_objects:
            cls.poll_message_set("Select the mesh objects to simulate first")
            return False
        return True

    def execute(self, context):
        meshes = [o for o in context.selected_objects if o.type == 'MESH']
        if not meshes:
            self.report({'ERROR'}, "No mesh object selected: Hullabaloo simulates meshes")
            return {'CANCELLED'}
        for o in meshes:
            o.hullabaloo.enabled = True
            o.hullabaloo.body_type = self.body_type
        skipped = len(context.selected_objects) - len(meshes)
        self.report({'INFO'}, f"Hullabaloo {self.body_type.lower()} on {len(meshes)} object(s)"
                    + (f" ({skipped} non-mesh skipped)" if skipped else ""))
        return {'FINISHED'}


class HULLABALOO_OT_remove_selected(bpy.types.Operator):
    """Turn Hullabaloo off for the selected objects (their settings and keys are kept)"""
    bl_idname = "hullabaloo.remove_selected"
    bl_label = "Remove from Selected"
    bl_options = {'REGISTER', 'UNDO'}

    @classmethod
    def poll(cls, context):
        if not context.selected_objects:
            cls.poll_message_set("Select the objects to remove from the simulation first")
            return False
        return True

    def execute(self, context):
        for o in context.selected_objects:
            o.hullabaloo.enabled = False
        return {'FINISHED'}


CLASSES = (HULLABALOO_OT_bake, HULLABALOO_OT_rebake_from_frame, HULLABALOO_OT_clear_bake,
           HULLABALOO_OT_import_rigid_body, HULLABALOO_OT_add_selected,
           HULLABALOO_OT_remove_selected)
