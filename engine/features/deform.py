"""Deforming triangle meshes in a World: new vertex positions, same topology, between steps.

``World.set_mesh_vertices(index, vertices)`` (which calls ``deform_mesh_body``) moves the
vertices of a static or kinematic body's TriangleMesh (an armature, shape keys or deform
modifiers in Blender). The mesh refits its BVH (TriangleMesh.set_vertices), the world's shape
table takes the new bounds, and the next step collides with the new surface.

How moving vertices push bodies. The change is *positional*: the engine has no per-vertex
surface velocity (its contacts carry the two bodies' rigid velocities only). A body that the
new surface now overlaps is pushed out by the contacts' soft position correction, at most
``WorldSettings.max_push`` m/s, within the next step; so a surface rising slower than that
(3 m/s by default; 12 cm per frame at 24 fps) lifts what rests on it to within the contact's
usual resting depth, and a faster one catches up over a few frames. Bodies are not thrown by
the surface's speed (a rising floor that stops leaves its load at rest rather than tossing
it). For the body's own rigid motion (an animated object that also deforms), use a kinematic
body with set_kinematic_target as usual: that motion is carried with its velocity.

Sleeping bodies near the moved part are woken (their islands), since a sleeping body is not
collided and would otherwise be left hanging or buried; bodies near it have their sleep timer
restarted, so a body riding the surface stays awake while the surface moves.

Measured (tests/test_trimesh_deform.py, a 0.5 m box on a 6 x 6 grid rising at 0.25 m/s,
24 fps): the box rides 5.2 mm into the surface at steady state (the soft contact's
penetration that makes a 0.25 m/s push), and rests on it again once it stops.
"""
import numpy as np

from ..core import quat
from ..core.errors import EngineError
from ..core.kinds import ShapeKind


def deform_mesh_body(world, index, vertices):
    """Give body ``index``'s TriangleMesh new vertices (same topology); see the module doc.
    Returns the largest distance a vertex moved (0.0: nothing changed, nothing woken)."""
    i = world._check_index(index)
    sid = world._v("shape")
    table = world.table
    mesh = table.shapes[sid[i]]
    if mesh.kind != ShapeKind.TRIANGLE_MESH:
        raise EngineError(f"body {i} is not a triangle mesh (shape {mesh!r}); only "
                          "TriangleMesh bodies deform")
    sharing = np.flatnonzero(sid == sid[i])
    if len(sharing) > 1:
        raise EngineError(f"body {i} shares its TriangleMesh with bodies "
                          f"{[int(j) for j in sharing if j != i]}; give each deforming body "
                          "its own TriangleMesh (a deformation would move them all)")
    old = mesh.vertices
    moved = mesh.set_vertices(vertices)   # validates; raises with the mesh unchanged
    if moved == 0.0:
        return 0.0
    table.refresh(mesh)
    _wake_near(world, i, old, mesh.vertices)
    return moved


def _wake_near(world, i, old, new):
    """Bodies whose box overlaps the world box of the vertices that moved (old and new
    positions, grown by the AABB margin): sleeping ones wake with their islands, and every
    one's sleep timer restarts. A body riding a slowly rising surface is calm after each
    step (the push is positional), so without the restart it would doze off mid-ride and
    sink into the surface for a frame before being woken again."""
    changed = np.any(old != new, axis=1)
    pts = np.concatenate((old[changed], new[changed]))
    rot = quat.to_matrix(world._v("q")[i])
    wpts = pts @ rot.T + world._v("pos")[i]
    margin = world.settings.aabb_margin
    lo, hi = wpts.min(axis=0) - margin, wpts.max(axis=0) + margin
    _, blo, bhi = world._bounds(0.0)
    near = np.all((blo <= hi) & (lo <= bhi), axis=1)
    near[i] = False
    if not near.any():
        return
    sleeping = world._v("sleeping")
    isl = world._v("island")
    hit = near & sleeping
    wake = sleeping & np.isin(isl, np.unique(isl[hit])) if hit.any() else np.zeros_like(near)
    sleeping[wake] = False
    world._v("sleep_time")[wake | near] = 0.0
