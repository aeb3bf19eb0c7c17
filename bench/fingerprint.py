"""Bit-identity fingerprints, to show a refactor changed no number.

    python bench/fingerprint.py cubes [STEPS]     # 1000 cubes falling on a ground, sleeping off
    python bench/fingerprint.py demo BAKED.blend  # every keyframe of a baked .blend (bpy wheel)

Prints a SHA-256 prefix of the final poses and velocities (cubes) or of every F-curve's keys
(demo: e.g. out/demo/baked.blend written by ``bash scripts/demo.sh --no-render``). Run it
before and after a change: equal prints mean equal bits.
"""
import hashlib
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def digest(arrays):
    m = hashlib.sha256()
    for a in arrays:
        m.update(np.ascontiguousarray(a).tobytes())
    return m.hexdigest()[:16]


def cubes(steps):
    from engine import Box, World
    w = World(sleeping=False)
    w.add_body(Box([20.0, 20.0, 0.5]), position=(0.0, 0.0, -0.5), kind="static")
    cube, off = Box([0.5, 0.5, 0.5]), 9 * 1.2 / 2
    for k in range(10):
        for j in range(10):
            for i in range(10):
                w.add_body(cube, position=(i * 1.2 - off, j * 1.2 - off, 1.5 + k * 1.2))
    for _ in range(steps):
        w.step(1 / 24)
    return digest((w.positions, w.orientations, w.linear_velocities, w.angular_velocities))


def fcurves(action):
    """Every F-curve of an action: legacy action.fcurves (4.2) or layered channelbags (5.x)."""
    curves = list(getattr(action, "fcurves", None) or [])
    for layer in getattr(action, "layers", ()):
        for strip in layer.strips:
            for bag in strip.channelbags:
                curves += list(bag.fcurves)
    return curves


def demo(path):
    import bpy
    bpy.ops.wm.open_mainfile(filepath=path)
    keys = []
    for ob in sorted(bpy.data.objects, key=lambda o: o.name):
        ad = ob.animation_data
        if ad is None or ad.action is None:
            continue
        for fc in sorted(fcurves(ad.action), key=lambda f: (f.data_path, f.array_index)):
            co = np.zeros(2 * len(fc.keyframe_points))
            fc.keyframe_points.foreach_get("co", co)
            keys.append(co)
    return f"{len(keys)} curves {digest(keys)}"


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "cubes"
    if what == "cubes":
        print("cubes", cubes(int(sys.argv[2]) if len(sys.argv) > 2 else 120))
    else:
        print("demo", demo(sys.argv[2]))
