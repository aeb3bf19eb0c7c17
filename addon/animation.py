"""Writing baked keys into objects' actions, in bulk, on Blender 4.2 and 5.x; backup/restore.

Keys go in with ``keyframe_points.add`` + ``foreach_set`` (never one ``keyframe_insert`` per
key): a whole F-curve costs a handful of C calls whatever its length. Existing keys outside
the baked range are kept with every attribute (handles, interpolation, easing, key type...);
keys inside it are replaced.

Actions: Blender 4.2 has ``action.fcurves``; 5.0 removed it for layered actions, where the
F-curves of one object live in the channelbag of the action's slot assigned to that object.
We feature-detect (``hasattr``), never compare version numbers.
"""
import bpy
import numpy as np

GROUP = "Object Transforms"

# Float attributes of a keyframe (name, components) and enum/bool ones (stored as ints).
_FLOAT_ATTRS = (("co", 2), ("handle_left", 2), ("handle_right", 2), ("back", 1),
                ("amplitude", 1), ("period", 1))
_INT_ATTRS = ("interpolation", "easing", "handle_left_type", "handle_right_type", "type",
              "select_control_point", "select_left_handle", "select_right_handle")


_ENUMS = {}


def _enum_value(prop, identifier):
    key = (prop, identifier)
    if key not in _ENUMS:
        _ENUMS[key] = bpy.types.Keyframe.bl_rna.properties[prop].enum_items[identifier].value
    return _ENUMS[key]


def is_layered(action):
    return not hasattr(action, "fcurves")


def _real_users(idblock):
    return idblock.users - (1 if idblock.use_fake_user else 0)


def ensure_action(obj):
    """The object's action, made single-user and ready for keys (created if missing).

    A shared action would make our keys move other objects too, so a shared one is copied
    first (what Blender's 'make single user' does). On layered actions the object also needs a
    slot: an existing assigned slot is reused, otherwise one is created for it.
    """
    ad = obj.animation_data or obj.animation_data_create()
    action = ad.action
    if action is None:
        action = bpy.data.actions.new(name=f"{obj.name}Action")
        ad.action = action
    elif _real_users(action) > 1:
        slot_id = _slot_identifier(ad)
        action = action.copy()
        ad.action = action
        if slot_id:
            _assign_slot(ad, action, slot_id)
    if is_layered(action) and getattr(ad, "action_slot", None) is None:
        slot = None
        suitable = getattr(bpy_anim_utils(), "action_get_first_suitable_slot", None)
        if suitable is not None:
            slot = suitable(action, 'OBJECT')
        if slot is None:
            slot = action.slots.new(id_type='OBJECT', name=obj.name)
        ad.action_slot = slot
    return action


def bpy_anim_utils():
    from bpy_extras import anim_utils
    return anim_utils


def _slot_identifier(ad):
    slot = getattr(ad, "action_slot", None)
    return slot.identifier if slot is not None else ""


def _assign_slot(ad, action, identifier):
    if not identifier or not hasattr(action, "slots"):
        return
    for slot in action.slots:
        if slot.identifier == identifier:
            ad.action_slot = slot
            return


def fcurve_collection(obj, create=False):
    """The collection holding the object's F-curves (action.fcurves or the slot's
    channelbag.fcurves), or None when there is none and create is False."""
    ad = obj.animation_data
    if create:
        ensure_action(obj)
        ad = obj.animation_data
    if ad is None or ad.action is None:
        return None
    action = ad.action
    if not is_layered(action):
        return action.fcurves
    slot = ad.action_slot
    if slot is None:
        return None
    utils = bpy_anim_utils()
    if create:
        return utils.action_ensure_channelbag_for_slot(action, slot).fcurves
    bag = utils.action_get_channelbag_for_slot(action, slot)
    return bag.fcurves if bag is not None else None


def _new_fcurve(fcurves, data_path, index, legacy=None):
    """A new F-curve in the transform group; legacy: action.fcurves (4.2) or a layered
    channelbag (5.x), found out by trying when the caller does not know."""
    if legacy is None:
        try:
            return fcurves.new(data_path, index=index, action_group=GROUP)
        except TypeError:
            legacy = False
    if legacy:
        return fcurves.new(data_path, index=index, action_group=GROUP)
    return fcurves.new(data_path, index=index, group_name=GROUP)


def read_keys(fc):
    """All keyframe attributes of an F-curve as arrays (for keeping keys outside a range)."""
    n = len(fc.keyframe_points)
    out = {}
    for name, k in _FLOAT_ATTRS:
        a = np.empty(n * k, dtype=np.float32)
        fc.keyframe_points.foreach_get(name, a)
        out[name] = a.reshape(n, k) if k > 1 else a
    for name in _INT_ATTRS:
        a = np.empty(n, dtype=np.int32)
        fc.keyframe_points.foreach_get(name, a)
        out[name] = a
    return out


def _write_all(fc, keys):
    kp = fc.keyframe_points
    n = len(keys["co"])
    if len(kp) != n:
        kp.clear()
        kp.add(n)
    for name, _ in _FLOAT_ATTRS:
        kp.foreach_set(name, np.ascontiguousarray(keys[name], dtype=np.float32).ravel())
    for name in _INT_ATTRS:
        kp.foreach_set(name, np.ascontiguousarray(keys[name], dtype=np.int32))


def _new_keys(frames, values):
    """Attribute arrays for LINEAR keys at frames with values (handles a third of the way to
    the neighbours, so a later switch to Bezier starts from a sensible curve)."""
    n = len(frames)
    co = np.stack((frames, values), axis=1).astype(np.float32)
    third = np.float32(1.0 / 3.0)
    left = co.copy()
    right = co.copy()
    left[:, 0] -= third
    right[:, 0] += third
    linear = _enum_value("interpolation", "LINEAR")
    auto = _enum_value("handle_left_type", "AUTO_CLAMPED")
    keyframe = _enum_value("type", "KEYFRAME")
    return {
        "co": co, "handle_left": left, "handle_right": right,
        "back": np.full(n, 1.70158, np.float32), "amplitude": np.zeros(n, np.float32),
        "period": np.zeros(n, np.float32),
        "interpolation": np.full(n, linear, np.int32), "easing": np.zeros(n, np.int32),
        "handle_left_type": np.full(n, auto, np.int32),
        "handle_right_type": np.full(n, auto, np.int32),
        "type": np.full(n, keyframe, np.int32),
        "select_control_point": np.zeros(n, np.int32),
        "select_left_handle": np.zeros(n, np.int32),
        "select_right_handle": np.zeros(n, np.int32),
    }


def _fill_fresh(fc, co):
    """Keys (n, 2) float32 into a curve that has none: one add() and two foreach_set calls
    (each costs a pass over every key, so only co and interpolation are set; the other attributes'
    defaults are right, and handles_recalc() gives the auto handles; the frames are
    increasing, so no sort is needed)."""
    kp = fc.keyframe_points
    kp.add(len(co))
    kp.foreach_set("co", co.ravel())
    kp.foreach_set("interpolation", _linear(len(co)))
    kp.handles_recalc()


def write_channel(fcurves, data_path, index, frames, values, legacy=None):
    """Replace the keys of one channel over [frames[0], frames[-1]] by (frames, values),
    keeping every key outside that range untouched, with all its attributes."""
    fc = fcurves.find(data_path, index=index)
    if fc is None:
        fc = _new_fcurve(fcurves, data_path, index, legacy)
    if not len(fc.keyframe_points):
        co = np.empty((len(frames), 2), dtype=np.float32)
        co[:, 0] = frames
        co[:, 1] = values
        _fill_fresh(fc, co)
        return fc
    new = _new_keys(np.asarray(frames, dtype=np.float64), np.asarray(values, dtype=np.float64))
    old = read_keys(fc)
    x = old["co"][:, 0]
    before = x < np.float32(frames[0])
    after = x > np.float32(frames[-1])
    if before.any() or after.any():
        new = {k: np.concatenate((old[k][before], new[k], old[k][after]), axis=0) for k in new}
    _write_all(fc, new)  # already in frame order
    fc.keyframe_points.handles_recalc()
    return fc


def channel_paths(mode):
    """(data_path, count) of the rotation channel for a Blender rotation mode."""
    if mode == "QUATERNION":
        return "rotation_quaternion", 4
    if mode == "AXIS_ANGLE":
        return "rotation_axis_angle", 4
    return "rotation_euler", 3


_LINEAR = {}


def _linear(n):
    if n not in _LINEAR:
        _LINEAR.clear()
        _LINEAR[n] = np.full(n, _enum_value("interpolation", "LINEAR"), dtype=np.int32)
    return _LINEAR[n]


def write_object_keys(obj, frames, location, rotation):
    """Key location (F, 3) and rotation (F, 3 or 4, in the object's rotation mode) at frames.

    The common case, a curve with no keys yet, costs one add() and two foreach_set calls per
    curve; a curve with keys goes through write_channel (keys outside the range kept)."""
    fcurves = fcurve_collection(obj, create=True)
    path, count = channel_paths(obj.rotation_mode)
    channels = [("location", i) for i in range(3)] + [(path, i) for i in range(count)]
    n = len(frames)
    co = np.empty((3 + count, n, 2), dtype=np.float32)
    co[:, :, 0] = frames
    co[:3, :, 1] = np.asarray(location).T
    co[3:, :, 1] = np.asarray(rotation)[:, :count].T
    fresh = len(fcurves) == 0
    legacy = not is_layered(obj.animation_data.action)
    for c, (data_path, index) in enumerate(channels):
        if fresh:
            _fill_fresh(_new_fcurve(fcurves, data_path, index, legacy), co[c])
        else:
            write_channel(fcurves, data_path, index, frames, co[c, :, 1], legacy)


# -- backup and restore ----------------------------------------------------------------------

def backup_object(obj, frame_start, frame_end):
    """Remember what Clear Bake must restore: called once, before the first bake writes keys.
    The previous action is copied whole (a fake-user copy), so restoring is exact."""
    st = obj.hullabaloo.bake
    if st.baked:  # re-baking: keep the backup of the original, pre-bake state
        st.frame_start = min(st.frame_start, frame_start)
        st.frame_end = max(st.frame_end, frame_end)
        return
    ad = obj.animation_data
    st.had_animation_data = ad is not None
    action = ad.action if ad is not None else None
    st.action_name = action.name if action is not None else ""
    st.slot_identifier = _slot_identifier(ad) if ad is not None else ""
    if action is not None:
        copy = action.copy()
        copy.name = f".hullabaloo_backup.{action.name}"
        copy.use_fake_user = True
        st.backup_action = copy
    else:
        st.backup_action = None
    st.rotation_mode = obj.rotation_mode
    st.location = obj.location
    st.rotation_euler = obj.rotation_euler
    st.rotation_quaternion = obj.rotation_quaternion
    st.rotation_axis_angle = obj.rotation_axis_angle
    st.scale = obj.scale
    st.frame_start = frame_start
    st.frame_end = frame_end
    st.baked = True


def restore_object(obj):
    """Put back the animation and transform saved by backup_object; False if not baked."""
    st = obj.hullabaloo.bake
    if not st.baked:
        return False
    ad = obj.animation_data
    baked = ad.action if ad is not None else None
    backup = st.backup_action
    if ad is not None:
        ad.action = None
    if baked is not None and baked != backup and baked.users == 0:
        bpy.data.actions.remove(baked)
    if backup is not None:
        ad = obj.animation_data or obj.animation_data_create()
        st.backup_action = None
        backup.use_fake_user = False
        if st.action_name and st.action_name not in bpy.data.actions:
            backup.name = st.action_name
        ad.action = backup
        _assign_slot(ad, backup, st.slot_identifier)
    elif not st.had_animation_data and obj.animation_data is not None:
        ad = obj.animation_data
        if not ad.drivers and not ad.nla_tracks:
            obj.animation_data_clear()
    obj.rotation_mode = st.rotation_mode
    obj.location = st.location
    obj.rotation_euler = st.rotation_euler
    obj.rotation_quaternion = st.rotation_quaternion
    obj.rotation_axis_angle = st.rotation_axis_angle
    obj.scale = st.scale
    st.baked = False
    return True
