"""Blender side shared by bench/ours.py and bench/peers_blender.py: a sandboxed bpy session,
objects built from a bench.scenes.Scene, a Rigid Body World (also for
bench/bench_mesh_ground.py), pose read-back, key counting and peak memory.

Objects are named ``B00000``.. in scene order (static bodies too), so ``bpy.data.objects``
(sorted by name) lines up with the scene arrays. Bodies of one shape share one mesh (like
linked duplicates), which both engines use to share one collision shape.
"""
import os
import resource
import sys
import tempfile
import time

import numpy as np


def start_bpy():
    """Import bpy with Blender's user directory in a fresh temp folder (nothing of the
    developer's Blender set-up is read or written). Must run before anything imports bpy."""
    if "bpy" not in sys.modules:
        os.environ["BLENDER_USER_RESOURCES"] = tempfile.mkdtemp(prefix="hb_bench_user_")
    import bpy
    return bpy


def maxrss_mb():
    """Peak resident set size of this process so far, MB (Linux reports kB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _mesh(bpy, name, spec):
    if spec.kind == "sphere":
        # An octahedron: its bounding box is exactly 2r on every axis, which is what both
        # Blender's Sphere shape and ours take the radius from.
        r = spec.radius
        verts = [(r, 0, 0), (-r, 0, 0), (0, r, 0), (0, -r, 0), (0, 0, r), (0, 0, -r)]
        faces = [(0, 2, 4), (2, 1, 4), (1, 3, 4), (3, 0, 4), (2, 0, 5), (1, 2, 5), (3, 1, 5),
                 (0, 3, 5)]
    elif spec.kind == "box":
        verts = spec.vertices()
        faces = [(0, 2, 3, 1), (4, 5, 7, 6), (0, 1, 5, 4), (2, 6, 7, 3), (0, 4, 6, 2),
                 (1, 3, 7, 5)]
    else:
        hull = spec.engine_shape()
        verts = hull.vertices
        faces = [tuple(int(i) for i in f) for f in hull.faces]
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata([tuple(map(float, v)) for v in verts], [], faces)
    mesh.update()
    return mesh


def build_objects(bpy, scene_def, quaternion_mode=False):
    """Empty file, frame rate and gravity of the scene, one object per body. Returns the
    list of objects in scene order. quaternion_mode: rotation_mode QUATERNION (else Blender's
    default XYZ Euler)."""
    from mathutils import Quaternion
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = scene_def.fps, 1.0
    scene.use_gravity = True
    scene.gravity = scene_def.gravity
    meshes = [_mesh(bpy, f"shape{k:05d}", s) for k, s in enumerate(scene_def.shapes)]
    objs = []
    col = scene.collection
    for i in range(scene_def.body_count):
        obj = bpy.data.objects.new(f"B{i:05d}", meshes[scene_def.shape_id[i]])
        col.objects.link(obj)
        obj.location = tuple(scene_def.pos[i])
        q = Quaternion(tuple(scene_def.quat[i]))
        if quaternion_mode:
            obj.rotation_mode = 'QUATERNION'
            obj.rotation_quaternion = q
        else:
            obj.rotation_euler = q.to_euler('XYZ')
        objs.append(obj)
    bpy.context.view_layer.update()
    return objs


def pose_buffers(frames, rows):
    """Read-back arrays, written now so their pages are not counted in a later maxrss."""
    return np.full((frames, rows, 3), np.nan), np.full((frames, rows, 4), np.nan)


def read_poses(bpy, scene, frames, rows, out=None):
    """World poses of the objects at the given frames (frame_set, then one foreach_get of
    every object's matrix_world): positions (F, R, 3), quaternions (F, R, 4) (w, x, y, z),
    for rows = indices into bpy.data.objects (name order = scene order)."""
    from engine.core import quat
    n = len(bpy.data.objects)
    buf = np.empty(n * 16, dtype=np.float32)
    pos, q = out if out is not None else pose_buffers(len(frames), len(rows))
    for k, f in enumerate(frames):
        scene.frame_set(int(f))
        bpy.data.objects.foreach_get("matrix_world", buf)
        # foreach_get flattens each 4x4 matrix column by column: transpose back.
        m = buf.reshape(n, 4, 4).transpose(0, 2, 1)[rows].astype(np.float64)
        pos[k] = m[:, :3, 3]
        q[k] = quat.from_matrix(m[:, :3, :3])
    return pos, q


def key_count(objs, frame_lo=-1e9, frame_hi=1e9):
    """Number of location / rotation keyframe points of the objects between two frames
    (legacy and layered actions)."""
    total = 0
    for o in objs:
        ad = o.animation_data
        if ad is None or ad.action is None:
            continue
        act = ad.action
        fcs = list(getattr(act, "fcurves", None) or [])
        if not fcs and getattr(act, "layers", None):
            fcs = [fc for layer in act.layers for strip in layer.strips
                   for bag in strip.channelbags for fc in bag.fcurves]
        for fc in fcs:
            if not fc.data_path.startswith(("location", "rotation")):
                continue
            n = len(fc.keyframe_points)
            co = np.empty(2 * n, dtype=np.float32)
            fc.keyframe_points.foreach_get("co", co)
            f = co[0::2]
            total += int(np.count_nonzero((f >= frame_lo - 1e-3) & (f <= frame_hi + 1e-3)))
    return total


def rigid_body_world(bpy, scene, last):
    """Frames 1..last and a Rigid Body World baking them, its settings written out: 10
    substeps per frame, 10 solver iterations (Blender's defaults). Returns the world."""
    scene.frame_start, scene.frame_end = 1, last
    scene.frame_set(1)
    bpy.ops.rigidbody.world_add()
    rbw = scene.rigidbody_world
    rbw.substeps_per_frame = 10
    rbw.solver_iterations = 10
    rbw.point_cache.frame_start = 1
    rbw.point_cache.frame_end = last
    return rbw


def add_rigid_bodies(bpy, objs, rb_type):
    """Blender's Add Rigid Body ('ACTIVE' or 'PASSIVE') on objs, as from the Object menu."""
    with bpy.context.temp_override(selected_objects=objs, active_object=objs[0],
                                   object=objs[0]):
        bpy.ops.rigidbody.objects_add(type=rb_type)


def bake_rigid_world(bpy, scene, clock=time.perf_counter):
    """Blender's bake of the Rigid Body World's point cache (ptcache.bake_all); returns the
    time it took on clock (wall by default, time.process_time for CPU)."""
    t0 = clock()
    with bpy.context.temp_override(scene=scene, point_cache=scene.rigidbody_world.point_cache):
        res = bpy.ops.ptcache.bake_all(bake=True)
    took = clock() - t0
    if res != {'FINISHED'}:
        raise RuntimeError(f"ptcache.bake_all returned {res}")
    return took


def view3d_override(bpy):
    """Context members of a 3D View (the bpy module has a window with the default screen,
    whose VIEW_3D area satisfies the keying operators' polls in background mode)."""
    win = bpy.context.window_manager.windows[0]
    area = next(a for a in win.screen.areas if a.type == 'VIEW_3D')
    region = next(r for r in area.regions if r.type == 'WINDOW')
    return dict(window=win, screen=win.screen, area=area, region=region,
                scene=bpy.context.scene)
