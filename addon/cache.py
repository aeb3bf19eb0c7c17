"""Per-frame simulation states (for re-baking from any frame) and optional debug records.

Held in memory per scene after a bake; written next to the .blend when it is saved (a
``save_post`` handler, so an unsaved experiment costs no disk) and read back on demand after
the file is reopened. Never written into the add-on's own directory.

A frame list of dicts of arrays is packed into one flat dict for ``np.savez``: a key whose
arrays all have the same shape is stacked (F, ...); one whose length varies per frame (the
pair table, contacts) is concatenated with an offsets array.
"""
import os
import shutil
import tempfile

import numpy as np

from ..engine import StepRecord

_MEMORY = {}


class BakeCache:
    """What a bake leaves behind for Re-bake From Frame and the contact overlay."""

    def __init__(self, frame_start, frame_end, names, states, records=None):
        self.frame_start = int(frame_start)
        self.frame_end = int(frame_end)
        self.names = list(names)
        self.states = list(states)      # one dict per frame, frame_start..frame_end
        # None, or per frame the engine.StepRecord of the step into it (None for the first).
        self.records = records
        self.dirty = True

    def has_frame(self, frame):
        return self.frame_start <= frame <= self.frame_end and \
            frame - self.frame_start < len(self.states)

    def state(self, frame):
        return self.states[frame - self.frame_start]

    def record(self, frame):
        if not self.records or not self.has_frame(frame):
            return None
        return self.records[frame - self.frame_start]


def pack(frames, prefix):
    out = {}
    if not frames:
        return out
    keys = []
    for f in frames:
        keys += [k for k in f if k not in keys]
    for key in keys:
        like = next(np.asarray(f[key]) for f in frames if key in f)
        empty = np.zeros((0,) + like.shape[1:], like.dtype) if like.ndim else like
        arrays = [np.asarray(f[key]) if key in f else empty for f in frames]
        if all(a.shape == arrays[0].shape for a in arrays):
            out[f"{prefix}/{key}"] = np.stack(arrays)
        else:
            lens = np.array([len(a) for a in arrays], dtype=np.int64)
            out[f"{prefix}/{key}"] = np.concatenate(arrays) if lens.sum() else \
                np.zeros((0,) + arrays[0].shape[1:], arrays[0].dtype)
            out[f"{prefix}/{key}@offsets"] = np.concatenate(([0], np.cumsum(lens)))
    return out


def unpack(data, prefix, count):
    frames = [dict() for _ in range(count)]
    for full in data.files:
        if not full.startswith(prefix + "/") or full.endswith("@offsets"):
            continue
        key = full[len(prefix) + 1:]
        arr = data[full]
        offs_key = full + "@offsets"
        if offs_key in data.files:
            offs = data[offs_key]
            for i in range(count):
                frames[i][key] = arr[offs[i]:offs[i + 1]]
        else:
            for i in range(count):
                frames[i][key] = arr[i]
    return frames


def save(cache, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    data = {"frame_range": np.array([cache.frame_start, cache.frame_end]),
            "names": np.array(cache.names, dtype=str)}
    data.update(pack(cache.states, "state"))
    if cache.records:
        data.update(pack([{} if r is None else r.as_dict() for r in cache.records], "record"))
    tmp = path + ".tmp.npz"
    np.savez(tmp, **data)
    os.replace(tmp, path)
    cache.dirty = False


def load(path):
    with np.load(path, allow_pickle=False) as data:
        start, end = (int(v) for v in data["frame_range"])
        names = [str(n) for n in data["names"]]
        count = len(data["state/time"]) if "state/time" in data.files else end - start + 1
        states = unpack(data, "state", count)
        has_rec = any(k.startswith("record/") for k in data.files)
        records = None
        if has_rec:
            records = [StepRecord.from_dict(d) if d else None
                       for d in unpack(data, "record", count)]
    c = BakeCache(start, end, names, states, records)
    c.dirty = False
    return c


def scene_key(scene):
    return scene.name


def put(scene, cache):
    _MEMORY[scene_key(scene)] = cache


def drop(scene):
    _MEMORY.pop(scene_key(scene), None)


def get(scene):
    """The scene's cache from memory, else from the file recorded in its settings."""
    c = _MEMORY.get(scene_key(scene))
    if c is None:
        path = bpy_abspath(scene.hullabaloo.cache_file)
        if path and os.path.isfile(path):
            try:
                c = load(path)
            except (OSError, ValueError, KeyError):
                return None
            _MEMORY[scene_key(scene)] = c
    return c


def bpy_abspath(path):
    if not path:
        return ""
    import bpy
    return bpy.path.abspath(path)


def default_dir(blend_path, package):
    """Folder for caches: beside the .blend if saved, else the extension's user directory
    (or the system temp folder when not running as an installed extension)."""
    if blend_path:
        stem = os.path.splitext(os.path.basename(blend_path))[0]
        return os.path.join(os.path.dirname(blend_path), f"{stem}_hullabaloo")
    try:
        import bpy
        return bpy.utils.extension_path_user(package, path="cache", create=True)
    except (ValueError, AttributeError, ImportError, TypeError):
        return os.path.join(tempfile.gettempdir(), "hullabaloo_cache")


def clear_memory():
    _MEMORY.clear()


def persist_all(package, blend_path):
    """Write every scene's cache beside the .blend being saved (save_pre handler, so the
    scene's cache_file setting is stored in that same save), as a path relative to it: the
    folder of a .blend and its cache can be moved or copied to a farm node together. A cache
    that is already on disk for another file (Save As) is copied, so it travels too."""
    import bpy
    if not blend_path:
        return
    folder = default_dir(blend_path, package)
    for scene in bpy.data.scenes:
        safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in scene.name)
        path = os.path.join(folder, f"{safe}.npz")
        old = bpy_abspath(scene.hullabaloo.cache_file)  # still relative to the old file
        c = _MEMORY.get(scene_key(scene))
        if c is not None and (c.dirty or not _same_file(old, path)):
            save(c, path)
        elif c is None and old and os.path.isfile(old) and not _same_file(old, path):
            os.makedirs(folder, exist_ok=True)
            shutil.copyfile(old, path)
        else:
            continue
        scene.hullabaloo.cache_file = bpy.path.relpath(path, start=os.path.dirname(blend_path))


def _same_file(a, b):
    return bool(a) and os.path.abspath(a) == os.path.abspath(b)
