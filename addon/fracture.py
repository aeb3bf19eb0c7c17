"""Fracture in the add-on: ``hullabaloo.fracture`` cuts the selected mesh objects into Voronoi
pieces (engine.features.fracture), glue bonds between pieces sharing a face, and the bake's glue.

- Pieces are new mesh objects in a collection ``<object>_pieces`` (replaced when fractured
  again), origins at their centres of mass, world-space geometry (the original's rotation and
  scale applied). Outer faces keep the original polygon's material and UVs (interpolated
  affinely over the polygon: exact for triangles and affine unwraps); inner faces get an extra
  material slot ``<object>_inner``.
- The original is hidden in viewport and render and taken out of the simulation.
- Bonds are stored once, on the collection (``Collection.hullabaloo_glue`` settings plus ID
  property arrays ``hb_bond_a``, ``hb_bond_b`` (piece numbers: ``Object["hb_piece"]``),
  ``hb_bond_area`` (m^2) and ``hb_bond_local`` (the bond centre in piece A's frame)). No
  object per bond.
- A bond breaks at ``strength (N/m^2) x area x min(glue scale of its two pieces)``; the glue
  scale (``Object["hb_glue_scale"]``, 1 by default) is what ``hullabaloo.glue_scale`` changes
  on selected pieces to weaken or strengthen a region.
- At bake time ``add_scene_glue`` turns the bonds into breakable fixed joints (one batch per
  collection, engine.features.glue) and puts pieces of a collection with Start Deactivated to sleep.
"""
import bpy
import numpy as np
from bpy.props import (
    BoolProperty,
    EnumProperty,
    FloatProperty,
    FloatVectorProperty,
    IntProperty,
    PointerProperty,
)

from .. import engine
from ..engine.features import fracture as efr
from ..engine.features import glue as eglue

SOURCES = [
    ('VOLUME', "Volume", "Points uniform in the object's volume"),
    ('CURSOR', "3D Cursor", "Points clustered around the 3D cursor (small pieces near it)"),
    ('POINT', "Point", "Points clustered around a given point"),
    ('CHILD_VERTS', "Child Vertices", "The vertices of the object's child mesh objects"),
    ('PARTICLES', "Particles", "The object's particles (evaluated, first system)"),
]
# Solver sweeps a world with glue needs at least (the Gauss-Seidel joint sweeps over a glued
# network gain energy under impacts with one; engine tests and bench/bench_fracture.py).
GLUE_ITERATIONS = 4
# Bonds smaller than this fraction of the median bond are not glued: slivers where cells
# barely touch would carry loads out of all proportion to their area and snap first.
MIN_BOND_FRACTION = 0.02


class HULLABALOO_PG_glue(bpy.types.PropertyGroup):
    enabled: BoolProperty(name="Glue", default=False,
                          description="Glue the pieces of this collection where they share "
                          "a face (bonds made by Fracture)")
    strength: FloatProperty(name="Strength", default=1e6, min=0.0, soft_max=1e9,
                            description="Glue strength in N/m\u00b2: a bond breaks when the "
                            "force it carries exceeds strength x its shared area")
    start_deactivated: BoolProperty(name="Start Deactivated", default=True,
                                    description="Pieces stay exactly still until a moving "
                                    "body touches them")


# ------------------------------------------------------------------------------ geometry
def _mesh_arrays(obj, depsgraph):
    """World-space vertices, faces (planar convex polygons; others as triangles), the source
    polygon of each face and the polygons' loop data for UVs."""
    ev = obj.evaluated_get(depsgraph)
    me = ev.to_mesh()
    try:
        mw = np.array(obj.matrix_world, dtype=np.float64)
        n = len(me.vertices)
        co = np.empty(n * 3)
        me.vertices.foreach_get("co", co)
        v = co.reshape(-1, 3) @ mw[:3, :3].T + mw[:3, 3]
        npoly = len(me.polygons)
        if npoly == 0:
            raise engine.EngineError("the mesh has no faces")
        loop_start = np.empty(npoly, dtype=np.int64)
        loop_total = np.empty(npoly, dtype=np.int64)
        me.polygons.foreach_get("loop_start", loop_start)
        me.polygons.foreach_get("loop_total", loop_total)
        mat = np.empty(npoly, dtype=np.int64)
        me.polygons.foreach_get("material_index", mat)
        lv = np.empty(len(me.loops), dtype=np.int64)
        me.loops.foreach_get("vertex_index", lv)
        uvs = {}
        for layer in me.uv_layers:
            d = np.empty(len(me.loops) * 2)
            layer.data.foreach_get("uv", d)
            uvs[layer.name] = d.reshape(-1, 2)
        polys = [lv[s:s + t] for s, t in zip(loop_start, loop_total)]
        loops = [np.arange(s, s + t) for s, t in zip(loop_start, loop_total)]
        ok = efr.convex_faces(v, polys, tol=1e-6)
        faces, src, floops = [], [], []
        me.calc_loop_triangles()
        tri_loops = np.empty(len(me.loop_triangles) * 3, dtype=np.int64)
        me.loop_triangles.foreach_get("loops", tri_loops)
        tri_poly = np.empty(len(me.loop_triangles), dtype=np.int64)
        me.loop_triangles.foreach_get("polygon_index", tri_poly)
        tri_loops = tri_loops.reshape(-1, 3)
        for p in np.flatnonzero(ok):
            faces.append(polys[p])
            src.append(p)
            floops.append(loops[p])
        for t in np.flatnonzero(~ok[tri_poly]):
            faces.append(lv[tri_loops[t]])
            src.append(tri_poly[t])
            floops.append(tri_loops[t])
        if np.linalg.det(mw[:3, :3]) < 0:   # mirrored: the faces turn inside out
            faces = [f[::-1] for f in faces]
            floops = [f[::-1] for f in floops]
        return dict(v=v, faces=faces, src=np.array(src), loops=floops, mat=mat, uvs=uvs,
                    materials=list(obj.data.materials))
    finally:
        ev.to_mesh_clear()


def _uv_maps(m):
    """Per face of the fracture input and UV layer: an affine map (4, 2) from world xyz to
    uv, least-squares over the face's corners (exact on the face's plane when the unwrap is
    affine there)."""
    out = {}
    for name, uv in m["uvs"].items():
        maps = np.zeros((len(m["faces"]), 4, 2))
        for k, (f, lp) in enumerate(zip(m["faces"], m["loops"])):
            a = np.c_[m["v"][f], np.ones(len(f))]
            maps[k] = np.linalg.lstsq(a, uv[lp], rcond=None)[0]
        out[name] = maps
    return out


def seed_points(obj, m, source, count, seed, point, context):
    """Seed points (world) for the object's fracture."""
    v, faces = m["v"], m["faces"]
    size = float(np.ptp(v, axis=0).max())
    if source == 'VOLUME':
        return efr.volume_points(v, faces, count, seed)
    if source in ('CURSOR', 'POINT'):
        c = context.scene.cursor.location if source == 'CURSOR' else point
        return efr.cluster_points(v, faces, count, np.array(c, dtype=np.float64),
                                  0.25 * size, seed)
    pts = []
    if source == 'CHILD_VERTS':
        for ch in obj.children:
            if ch.type == 'MESH' and ch.data is not None:
                mw = np.array(ch.matrix_world)
                co = np.empty(len(ch.data.vertices) * 3)
                ch.data.vertices.foreach_get("co", co)
                pts.append(co.reshape(-1, 3) @ mw[:3, :3].T + mw[:3, 3])
    else:
        ev = obj.evaluated_get(context.evaluated_depsgraph_get())
        for ps in ev.particle_systems[:1]:
            loc = np.empty(len(ps.particles) * 3)
            ps.particles.foreach_get("location", loc)
            pts.append(loc.reshape(-1, 3))
    pts = np.concatenate(pts) if pts else np.zeros((0, 3))
    if len(pts) > count:   # a deterministic subset
        pts = pts[np.sort(np.random.default_rng(seed).permutation(len(pts))[:count])]
    return pts


# ------------------------------------------------------------------------------ objects
def _remove_pieces(coll):
    for o in list(coll.objects):
        data = o.data
        bpy.data.objects.remove(o, do_unlink=True)
        if data is not None and data.users == 0 and isinstance(data, bpy.types.Mesh):
            bpy.data.meshes.remove(data)


def _inner_material(obj):
    name = f"{obj.name}_inner"
    mat = bpy.data.materials.get(name)
    if mat is None:
        mat = bpy.data.materials.new(name)
        mat.diffuse_color = (0.55, 0.5, 0.45, 1.0)
    return mat


def _piece_mesh(name, piece, m, uv_maps, n_mats):
    verts = piece.vertices - piece.centroid
    faces = [f.tolist() for f in piece.faces()]
    me = bpy.data.meshes.new(name)
    me.from_pydata(verts.tolist(), [], faces)
    lab = piece.face_labels
    outer = lab >= 0
    src = np.where(outer, lab, 0)
    mat = np.where(outer, m["mat"][m["src"][src]], n_mats)
    me.polygons.foreach_set("material_index", mat.astype(np.int32))
    if uv_maps:
        corner_face = np.repeat(np.arange(len(faces)), piece.face_sizes)
        pts = np.c_[piece.vertices[piece.face_verts], np.ones(len(piece.face_verts))]
        for lname, maps in uv_maps.items():
            layer = me.uv_layers.new(name=lname)
            # Inner faces: a planar projection on their own plane's dominant axes.
            uv = np.einsum("ci,cij->cj", pts, maps[src[corner_face]])
            inner_c = ~outer[corner_face]
            if inner_c.any():
                uv[inner_c] = piece.vertices[piece.face_verts[inner_c]][:, :2]
            layer.data.foreach_set("uv", uv.ravel())
    me.update()
    return me


def fracture_object(context, obj, pieces, seed, source, point, glue, strength):
    """Fracture one object; returns (collection, number of pieces, number of bonds). Raises
    engine.EngineError (nothing changed) when it cannot."""
    depsgraph = context.evaluated_depsgraph_get()
    m = _mesh_arrays(obj, depsgraph)
    pts = seed_points(obj, m, source, pieces, seed, point, context)
    if len(pts) == 0:
        raise engine.EngineError(f"the source {source!r} gave no points (no child mesh "
                                 "vertices or particles)")
    fr = efr.fracture(m["v"], m["faces"], pts)
    if not fr.pieces:
        raise engine.EngineError("no piece reaches into the mesh (are the points inside it?)")
    uv_maps = _uv_maps(m)
    # -- from here on the scene changes --
    cname = f"{obj.name}_pieces"
    coll = bpy.data.collections.get(cname)
    if coll is None:
        coll = bpy.data.collections.new(cname)
        parent = obj.users_collection[0] if obj.users_collection else context.scene.collection
        parent.children.link(coll)
    else:
        _remove_pieces(coll)
    inner = _inner_material(obj)
    mats = m["materials"]
    src_settings = obj.hullabaloo
    total = sum(p.volume for p in fr.pieces)
    if src_settings.mass_mode == 'MASS':
        density = src_settings.mass / total
    else:
        density = src_settings.density
    objs = []
    for k, piece in enumerate(fr.pieces):
        me = _piece_mesh(f"{obj.name}_piece_{k:03d}", piece, m, uv_maps, len(mats))
        for mat in mats:
            me.materials.append(mat)
        me.materials.append(inner)
        po = bpy.data.objects.new(me.name, me)
        po.location = piece.centroid
        coll.objects.link(po)
        po["hb_piece"] = k
        po["hb_glue_scale"] = 1.0
        s = po.hullabaloo
        s.enabled = True
        s.body_type = 'DYNAMIC'
        if piece.convex:
            s.shape = 'CONVEX_HULL'
        else:
            s.shape = 'COMPOUND'
            s.compound_source = 'DECOMPOSE'
        s.mass_mode = 'DENSITY'
        s.density = density
        for name in ("friction", "restitution", "linear_damping", "angular_damping"):
            setattr(s, name, getattr(src_settings, name))
        objs.append(po)
    keep = fr.bond_area >= MIN_BOND_FRACTION * np.median(fr.bond_area) if len(fr.bond_area) \
        else np.zeros(0, dtype=bool)
    a, b = fr.bond_a[keep], fr.bond_b[keep]
    cents = np.array([p.centroid for p in fr.pieces])
    coll["hb_bond_a"] = a.tolist()
    coll["hb_bond_b"] = b.tolist()
    coll["hb_bond_area"] = fr.bond_area[keep].tolist()
    coll["hb_bond_local"] = (fr.bond_centre[keep] - cents[a]).ravel().tolist()
    coll["hb_source"] = obj.name
    g = coll.hullabaloo_glue
    g.enabled = bool(glue)
    g.strength = float(strength)
    obj.hide_viewport = True
    obj.hide_render = True
    obj.hide_set(True)
    src_settings.enabled = False
    return coll, len(objs), int(keep.sum())


# ------------------------------------------------------------------------------ bake
def collection_bonds(coll):
    """(piece objects by number, a, b, area, local centre) of a glued collection, or None."""
    if "hb_bond_a" not in coll:
        return None
    by_num = {}
    for o in coll.objects:
        if "hb_piece" in o:
            by_num[int(o["hb_piece"])] = o
    a = np.array(coll["hb_bond_a"], dtype=np.int64)
    b = np.array(coll["hb_bond_b"], dtype=np.int64)
    area = np.array(coll["hb_bond_area"], dtype=np.float64)
    local = np.array(coll["hb_bond_local"], dtype=np.float64).reshape(-1, 3)
    return by_num, a, b, area, local


def scene_glue_collections(scene):
    return [c for c in bpy.data.collections
            if c.hullabaloo_glue.enabled and "hb_bond_a" in c
            and any(o.name in scene.objects for o in c.objects)]


def glue_world_settings(scene, settings):
    """The engine.WorldSettings with the solver iterations raised for a scene with glue (see
    GLUE_ITERATIONS)."""
    if scene_glue_collections(scene) and settings.iterations < GLUE_ITERATIONS:
        return settings.replace(iterations=GLUE_ITERATIONS)
    return settings


def add_scene_glue(world, scene, bodies, problem):
    """Glue joints of every glued collection (bodies: name -> (engine index, kind)); pieces of
    collections with Start Deactivated start asleep. Returns [(collection name, joint
    indices)]."""
    out = []
    for coll in scene_glue_collections(scene):
        g = coll.hullabaloo_glue
        by_num, a, b, area, local = collection_bonds(coll)
        ok = np.array([int(i) in by_num and int(j) in by_num
                       and by_num[int(i)].name in bodies and by_num[int(j)].name in bodies
                       for i, j in zip(a, b)], dtype=bool)
        if not ok.all():
            problem(coll, f"{int((~ok).sum())} of {len(a)} glue bonds name pieces that are "
                    "missing or not simulated; those bonds are skipped")
        a, b, area, local = a[ok], b[ok], area[ok], local[ok]
        ia = np.array([bodies[by_num[int(i)].name][0] for i in a], dtype=np.int64)
        ib = np.array([bodies[by_num[int(j)].name][0] for j in b], dtype=np.int64)
        mw = [np.array(by_num[int(i)].matrix_world) for i in a]
        centre = np.array([m[:3, :3] @ c + m[:3, 3] for m, c in zip(mw, local)]) \
            if len(a) else np.zeros((0, 3))
        scale = np.array([min(float(by_num[int(i)].get("hb_glue_scale", 1.0)),
                              float(by_num[int(j)].get("hb_glue_scale", 1.0)))
                          for i, j in zip(a, b)])
        try:
            joints = eglue.add_glue(world, ia, ib, centre, area, g.strength * scale)
        except engine.EngineError as exc:
            problem(coll, f"glue: {exc}. Skipped.")
            continue
        if g.start_deactivated:
            dyn = [bodies[o.name][0] for o in coll.objects
                   if o.name in bodies and bodies[o.name][1] == "dynamic"]
            eglue.start_asleep(world, dyn)
        out.append((coll.name, joints))
    return out


def bond_model(scene, rows, first_pos, first_rot):
    """The glue bonds the bake adds (same order, same filter), for the joint overlay:
    (a, b, anchor_a, anchor_b, frame_a) with anchors in the pieces' origin frames. rows: body
    name -> overlay row; first_pos (N, 3), first_rot (N, 3, 3) at the bake's first frame."""
    out_a, out_b, anc_a, anc_b = [], [], [], []
    for coll in scene_glue_collections(scene):
        by_num, a, b, area, local = collection_bonds(coll)
        for i, j, c in zip(a, b, local):
            oa, ob = by_num.get(int(i)), by_num.get(int(j))
            if oa is None or ob is None or oa.name not in rows or ob.name not in rows:
                continue
            ra, rb = rows[oa.name], rows[ob.name]
            centre = first_pos[ra] + first_rot[ra] @ c
            out_a.append(ra)
            out_b.append(rb)
            anc_a.append(c)
            anc_b.append(first_rot[rb].T @ (centre - first_pos[rb]))
    n = len(out_a)
    frame = np.array([first_rot[r].T for r in out_a]) if n else np.zeros((0, 3, 3))
    return (np.array(out_a, np.int64), np.array(out_b, np.int64),
            np.array(anc_a).reshape(-1, 3), np.array(anc_b).reshape(-1, 3), frame)


# ------------------------------------------------------------------------------ operators
def _source_of(obj):
    """The object to fracture for a selected object: itself (a mesh), the original of a
    piece made by Fracture, or None."""
    if "hb_piece" in obj:
        for c in obj.users_collection:
            src = bpy.data.objects.get(c.get("hb_source", ""))
            if src is not None:
                return src
        return None
    return obj if obj.type == 'MESH' else None


class HULLABALOO_OT_fracture(bpy.types.Operator):
    """Cut the selected mesh objects into Voronoi pieces (new objects in <object>_pieces),
    glued where they share a face. With pieces selected, fracture their original again
    (the new pieces replace the old)"""
    bl_idname = "hullabaloo.fracture"
    bl_label = "Fracture"
    bl_options = {'REGISTER', 'UNDO'}

    pieces: IntProperty(name="Pieces", default=40, min=1, max=efr.MAX_PIECES, soft_max=1000)
    seed: IntProperty(name="Seed", default=0, min=0)
    source: EnumProperty(name="Source", items=SOURCES, default='VOLUME')
    point: FloatVectorProperty(name="Point", size=3, subtype='TRANSLATION',
                               description="Centre of the cluster for Source: Point")
    glue: BoolProperty(name="Glue", default=True)
    glue_strength: FloatProperty(name="Glue Strength", default=1e6, min=0.0, soft_max=1e9,
                                 description="N/m\u00b2: a bond breaks at strength x shared "
                                 "area")

    @classmethod
    def poll(cls, context):
        return context.mode == 'OBJECT'

    def execute(self, context):
        objs = []
        for o in context.selected_objects:
            src = _source_of(o)   # a selected piece stands for its (hidden) original
            if src is not None and src.type == 'MESH' and src not in objs:
                objs.append(src)
        others = [o.name for o in context.selected_objects if _source_of(o) is None]
        if not objs:
            self.report({'ERROR'}, "Fracture: select one or more mesh objects")
            return {'CANCELLED'}
        done, failed = [], []
        for obj in objs:
            try:
                coll, n, nb = fracture_object(context, obj, self.pieces, self.seed,
                                              self.source, self.point, self.glue,
                                              self.glue_strength)
            except engine.EngineError as exc:
                failed.append(f"{obj.name}: {exc}")
                continue
            done.append(f"{obj.name}: {n} pieces, {nb} bonds")
        for o in others:
            failed.append(f"{o}: not a mesh object")
        if failed:
            self.report({'WARNING'} if done else {'ERROR'},
                        "Fracture could not cut " + "; ".join(failed))
        if done:
            self.report({'INFO'}, "Fractured " + "; ".join(done))
            return {'FINISHED'}
        return {'CANCELLED'}


class HULLABALOO_OT_glue_scale(bpy.types.Operator):
    """Weaken or strengthen the glue of the selected pieces (their bonds break at the
    collection's strength times the smaller scale of their two pieces)"""
    bl_idname = "hullabaloo.glue_scale"
    bl_label = "Scale Glue of Selected Pieces"
    bl_options = {'REGISTER', 'UNDO'}

    factor: FloatProperty(name="Factor", default=0.5, min=0.0, soft_max=10.0)

    def execute(self, context):
        sel = [o for o in context.selected_objects if "hb_piece" in o]
        if not sel:
            self.report({'ERROR'}, "Select fractured pieces (objects made by Fracture)")
            return {'CANCELLED'}
        for o in sel:
            o["hb_glue_scale"] = float(o.get("hb_glue_scale", 1.0)) * self.factor
        self.report({'INFO'}, f"Glue of {len(sel)} pieces scaled by {self.factor:g}")
        return {'FINISHED'}


class HULLABALOO_PT_glue(bpy.types.Panel):
    bl_label = "Hullabaloo Glue"
    bl_space_type = 'PROPERTIES'
    bl_region_type = 'WINDOW'
    bl_context = "collection"

    @classmethod
    def poll(cls, context):
        c = context.collection
        return c is not None and "hb_bond_a" in c

    def draw(self, context):
        c = context.collection
        g = c.hullabaloo_glue
        layout = self.layout
        layout.use_property_split = True
        layout.prop(g, "enabled")
        col = layout.column()
        col.active = g.enabled
        col.prop(g, "strength")
        col.prop(g, "start_deactivated")
        col.label(text=f"{len(c['hb_bond_a'])} bonds")
        col.operator("hullabaloo.glue_scale", text="Weaken Selected").factor = 0.5
        col.operator("hullabaloo.glue_scale", text="Strengthen Selected").factor = 2.0


def menu_entry(self, context):
    self.layout.operator("hullabaloo.fracture", icon='MOD_EXPLODE')


CLASSES = (HULLABALOO_PG_glue, HULLABALOO_OT_fracture, HULLABALOO_OT_glue_scale,
           HULLABALOO_PT_glue)


def register():
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    bpy.types.Collection.hullabaloo_glue = PointerProperty(type=HULLABALOO_PG_glue)
    bpy.types.VIEW3D_MT_object.append(menu_entry)


def unregister():
    bpy.types.VIEW3D_MT_object.remove(menu_entry)
    del bpy.types.Collection.hullabaloo_glue
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)
