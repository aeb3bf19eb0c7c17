"""``DIR/summary.json``: what a command-line bake did, for people, scripts and the wedge.

Everything in it but ``seconds`` is a function of the scene and the options, so two bakes of
the same variant give identical files apart from ``seconds`` (``comparable`` drops them).
Floats are written with Python's shortest round-trip repr, so equal JSON means equal bits.
"""
import json
import os

VERSION = 1


def final_poses(scene, frame):
    """{object name: {location, rotation_quaternion (w, x, y, z)}} of every baked object at
    frame (the world transform Blender evaluates from the baked keys)."""
    scene.frame_set(frame)
    out = {}
    for obj in sorted((o for o in scene.objects if o.hullabaloo.bake.baked),
                      key=lambda o: o.name):
        loc, rot, _ = obj.matrix_world.decompose()
        out[obj.name] = {"location": [float(v) for v in loc],
                         "rotation_quaternion": [float(v) for v in rot]}
    return out


def build(bake, seconds, final, settings, source, scene_name):
    """bake: the add-on's bake summary (ops.LAST['summary'])."""
    return {
        "version": VERSION,
        "ok": True,
        "scene": scene_name,
        "source": source,
        "bodies": bake["bodies"],
        "objects": bake["objects"],
        "frames": bake["frames"],
        "frame_start": bake["frame_start"],
        "frame_end": bake["frame_end"],
        "seconds": seconds,
        "max_penetration": bake["max_penetration"],
        "warnings": list(bake["problems"]) + list(settings.pop("warnings", [])),
        "settings": settings,
        "final": final,
    }


def failure(error, settings, source):
    return {"version": VERSION, "ok": False, "error": str(error), "source": source,
            "settings": settings}


def write(data, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "summary.json")
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, allow_nan=False)
        f.write("\n")
    os.replace(tmp, path)
    return path


def read(out_dir):
    with open(os.path.join(out_dir, "summary.json"), encoding="utf-8") as f:
        return json.load(f)


def comparable(data):
    """The summary without its timings (which no two runs share)."""
    return {k: v for k, v in data.items() if k != "seconds"}
