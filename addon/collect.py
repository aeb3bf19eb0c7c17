"""Reading the scene: enabled objects -> validated body descriptions for the engine.

Every problem becomes a ``Problem`` naming the object and saying what to do; a bad object is
skipped (level ERROR) or simulated with a caveat (WARNING / INFO). Nothing here changes the
scene, so a bake that stops at this stage has touched nothing.

Shapes are built in the object's local frame *including* its world scale: the world 3x3 part
is split into a rotation (the body's orientation) and a shape matrix (scale, mirror, shear
from a parent) applied to the vertices. Identical meshes under identical shape matrices share
one engine shape, so 1000 copies of a cube cost one shape in the engine's tables.

Compound shapes take their convex parts from one of three sources (``compound_source``): the
mesh's loose parts, child objects marked as collision parts (placed at their pose relative to
the parent's body frame; they are not bodies themselves and follow the parent by parenting),
or the engine's approximate convex decomposition, which is slow enough (seconds) to be cached
in memory for the session, keyed by the geometry and parameters.
"""
import collections
import hashlib
import math
import time

import bpy
import numpy as np

from .. import engine
from ..engine.core import quat
from ..engine.features import glue as engine_glue
from . import transforms

MAX_SIZE = 1.0e5   # metres: beyond this the engine's tolerances (~mm) are meaningless
MIN_SIZE = 1.0e-4  # metres
KIND = {"DYNAMIC": "dynamic", "PASSIVE": "static", "ANIMATED": "kinematic"}


class Problem:
    __slots__ = ("level", "message", "name")

    def __init__(self, level, name, message):
        self.level, self.name, self.message = level, name, message

    def __str__(self):
        return f"{self.name}: {self.message}" if self.name else self.message

    def __repr__(self):
        return f"Problem({self.level!r}, {self.name!r}, {self.message!r})"


class BodySpec:
    """One object's body: engine shape and parameters plus what is needed to key it back."""
    __slots__ = (
        "body_type",
        "deactivation",
        "deform",
        "index",
        "kind",
        "name",
        "obj",
        "params",
        "position",
        "rotation",
        "shape",
        "shape_matrix",
    )

    def __init__(self, **kw):
        for k in self.__slots__:
            setattr(self, k, kw.get(k))

    @property
    def orientation(self):
        return quat.from_matrix(self.rotation)


def collision_bits(flags):
    """Blender's 20 collision collections as an int bit set (collide if they share a bit)."""
    return int(sum(1 << i for i, f in enumerate(flags) if f))


def world_matrices(scene, objs):
    """World matrices (N, 4, 4) of objects, read in one call for the whole scene (Blender
    stores them column-major, hence the transpose)."""
    coll = scene.objects
    buf = np.empty(len(coll) * 16, dtype=np.float32)
    coll.foreach_get("matrix_world", buf)
    where = {o.name: i for i, o in enumerate(coll)}
    all_m = buf.reshape(-1, 4, 4).transpose(0, 2, 1).astype(np.float64)
    idx = np.array([where.get(o.name, -1) for o in objs], dtype=np.int64)
    out = all_m[np.maximum(idx, 0)]
    for j in np.flatnonzero(idx < 0):  # objects not linked to the scene (rare)
        out[j] = np.array(objs[j].matrix_world, dtype=np.float64)
    return out


def mesh_points(obj, depsgraph):
    """Evaluated vertex positions (V, 3) in object space (modifiers applied), or None."""
    ev = obj.evaluated_get(depsgraph) if depsgraph is not None else obj
    mesh = ev.data
    if mesh is None or not hasattr(mesh, "vertices"):
        return None
    n = len(mesh.vertices)
    co = np.empty(n * 3, dtype=np.float32)
    mesh.vertices.foreach_get("co", co)
    return co.reshape(n, 3).astype(np.float64)


# Modifiers that only move vertices (Blender's "deform only" modifiers): Mesh Source Deform
# includes these and the shape keys, and leaves out any other modifier.
DEFORM_MODIFIERS = frozenset((
    "ARMATURE", "CAST", "CORRECTIVE_SMOOTH", "CURVE", "DISPLACE", "HOOK", "LAPLACIANDEFORM",
    "LAPLACIANSMOOTH", "LATTICE", "MESH_DEFORM", "SHRINKWRAP", "SIMPLE_DEFORM", "SMOOTH",
    "SURFACE_DEFORM", "WARP", "WAVE"))


def source_depsgraph(obj, source, depsgraph):
    """The depsgraph to read obj's mesh from for a Mesh Source (None reads the original
    mesh: Base), and the constructive modifiers that Deform cannot leave out (read as
    Final then; the caller reports them)."""
    if source == "BASE":
        return None, []
    if source == "DEFORM":
        return depsgraph, [m.name for m in obj.modifiers
                           if m.show_viewport and m.type not in DEFORM_MODIFIERS]
    return depsgraph, []


def loose_parts(obj, depsgraph):
    """Vertex index arrays of the mesh's loose parts (connected by edges), union-find over
    the edge list, vectorised by repeated label propagation."""
    ev = obj.evaluated_get(depsgraph) if depsgraph is not None else obj
    mesh = ev.data
    n = len(mesh.vertices)
    e = np.empty(len(mesh.edges) * 2, dtype=np.int64)
    mesh.edges.foreach_get("vertices", e)
    e = e.reshape(-1, 2)
    label = np.arange(n)
    while True:  # min-label propagation; converges in (graph diameter) sweeps
        lo = np.minimum(label[e[:, 0]], label[e[:, 1]])
        new = label.copy()
        np.minimum.at(new, e[:, 0], lo)
        np.minimum.at(new, e[:, 1], lo)
        new = new[new]
        if np.array_equal(new, label):
            break
        label = new
    if not n:
        return []
    _, inv = np.unique(label, return_inverse=True)
    order = np.argsort(inv, kind="stable")
    return np.split(order, np.cumsum(np.bincount(inv))[:-1])


def _extent_axes(points):
    """Principal axes and extents (sorted descending) of a point cloud."""
    c = points - points.mean(axis=0)
    _, _, vt = np.linalg.svd(c, full_matrices=True)
    span = np.ptp(c @ vt.T, axis=0)
    return vt, span


def _slab(points, thickness, one_sided_normal=None):
    """Thicken flat points into a slab: copies offset along the plane normal."""
    vt, _ = _extent_axes(points)
    n = vt[2] if one_sided_normal is None else one_sided_normal
    if one_sided_normal is None:
        return np.concatenate((points + 0.5 * thickness * n, points - 0.5 * thickness * n))
    return np.concatenate((points, points - thickness * n))


# Vertex cap of Convex Hull shapes. A contact query's cost grows with the hull's size: per
# resting pair 28 / 30 / 48 / 75 us at 16 / 32 / 64 / 128 vertices (bench/bench_hull_cap.py,
# pruned SAT), while the cap's shape error on a 100k-point sculpt is 32 / 16 / 7 / 2.3 % of
# its volume (bench/bench_hull.py). 128 keeps ordinary meshes exact (a chair or a rock has
# fewer extreme points), loses under 1 % of a sculpt's radius, and bounds the cost.
HULL_VERTEX_CAP = 128


def _hull(points):
    # Blender stores float32 coordinates: faces are flat only to ~1e-7 of the object's size,
    # so merge coplanar facets with a tolerance above that.
    size = float(np.ptp(points, axis=0).max())
    return engine.ConvexHull(points, max_vertices=HULL_VERTEX_CAP, tolerance=1e-6 * size)


def _box_corners(lo, hi):
    return np.array([[hi[0] if i & 1 else lo[0], hi[1] if i & 2 else lo[1],
                      hi[2] if i & 4 else lo[2]] for i in range(8)])


def build_shape(kind, points):
    """Engine shape of a point set already in the body frame. Returns (shape, notes)."""
    notes = []
    lo, hi = points.min(axis=0), points.max(axis=0)
    half = 0.5 * (hi - lo)
    centre = 0.5 * (hi + lo)
    size = float(np.max(hi - lo))
    if kind in ("BOX", "SPHERE", "CAPSULE", "CYLINDER", "CONE"):
        if kind == "BOX":
            if np.allclose(centre, 0.0, atol=1e-6 * max(size, 1e-9)):
                return engine.Box(np.maximum(half, 1e-3 * size)), notes
            return _hull(_box_corners(lo, hi)), notes  # off-centre box: exact as a hull
        if not np.allclose(centre, 0.0, atol=1e-3 * max(size, 1e-9)):
            notes.append(("INFO", f"the {kind.lower()} is centred on the origin, not on the "
                          "mesh (set the origin to the geometry to centre it)"))
        if kind == "SPHERE":
            return engine.Sphere(float(half.max())), notes
        if kind in ("CYLINDER", "CONE"):   # Blender: radius max(x, y) / 2, height the z size
            cls = engine.Cylinder if kind == "CYLINDER" else engine.Cone
            return cls(float(max(half[0], half[1])), float(2.0 * half[2])), notes
        r = float(max(half[0], half[1]))
        return engine.Capsule(r, float(max(half[2] - r, 0.0))), notes
    return _hull(points), notes


def is_collision_part(obj):
    """True for a child marked as a collision part of a parent whose Compound takes its parts
    from child objects: such a child is part of the parent's body, not a body itself."""
    par = obj.parent
    if not obj.hullabaloo.collision_part or par is None or par.type != 'MESH':
        return False
    ps = par.hullabaloo
    return ps.enabled and ps.shape == "COMPOUND" and ps.compound_source == "CHILDREN"


# Decompositions of this session: (geometry hash, max parts, tolerance) -> tuple of part point
# clouds. A decomposition takes seconds and re-bakes are frequent while an artist tweaks other
# settings, so the result is kept; the cap bounds memory (a part is at most a few hundred
# points, so an entry is tens of kB). In memory only: nothing is written to disk.
DECOMPOSE_CACHE = collections.OrderedDict()
DECOMPOSE_CACHE_SIZE = 32


def geometry_key(points, triangles):
    """Content hash of a mesh's vertex and triangle arrays (exact bytes, so any edit, or a
    different scale baked into the points, gives a new key)."""
    pts = np.ascontiguousarray(points, dtype=np.float64)
    tri = np.ascontiguousarray(triangles, dtype=np.int64)
    h = hashlib.blake2b(digest_size=20)
    h.update(np.array(pts.shape + tri.shape, dtype=np.int64).tobytes())
    h.update(pts.tobytes())
    h.update(tri.tobytes())
    return h.hexdigest()


def decompose_cached(points, triangles, max_parts=16, tolerance=0.0, progress=None):
    """engine.decompose through the session cache. tolerance 0 means automatic. Returns a
    tuple of (P_i, 3) read-only point arrays."""
    key = (geometry_key(points, triangles), int(max_parts), float(tolerance))
    parts = DECOMPOSE_CACHE.get(key)
    if parts is not None:
        DECOMPOSE_CACHE.move_to_end(key)
        return parts
    parts = engine.decompose(points, triangles, max_parts=int(max_parts),
                             tolerance=float(tolerance) if tolerance > 0 else None,
                             progress=progress)
    parts = tuple(np.array(p, dtype=np.float64) for p in parts)
    for p in parts:
        p.flags.writeable = False  # shared by every later bake
    DECOMPOSE_CACHE[key] = parts
    while len(DECOMPOSE_CACHE) > DECOMPOSE_CACHE_SIZE:
        DECOMPOSE_CACHE.popitem(last=False)
    return parts


class DecomposeProgress:
    """Progress of a long decomposition: a console line and Blender's progress cursor, at
    most twice a second and only once the run has lasted a second (quick ones stay silent).
    Never cancels."""

    def __init__(self, name, wm=None, delay=1.0, every=0.5):
        self.name, self.wm, self.delay, self.every = name, wm, delay, every
        self.t0 = time.monotonic()
        self.last = -math.inf
        self.shown = False

    def __call__(self, fraction, message):
        now = time.monotonic()
        if now - self.t0 < self.delay or now - self.last < self.every:
            return True
        self.last = now
        print(f"Hullabaloo: decomposing {self.name}: {100 * fraction:.0f}% ({message})",
              flush=True)
        if self.wm is not None:
            if not self.shown:
                self.wm.progress_begin(0, 1000)
                self.shown = True
            self.wm.progress_update(int(1000 * fraction))
        return True

    def close(self):
        if self.shown:
            self.wm.progress_end()
            self.shown = False


def is_closed(triangles):
    """Every edge of the triangles is shared by exactly two of them (a watertight surface,
    which the decomposition's inside test needs)."""
    t = np.asarray(triangles, dtype=np.int64).reshape(-1, 3)
    if not len(t):
        return False
    e = np.sort(np.concatenate((t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]])), axis=1)
    _, counts = np.unique(e, axis=0, return_counts=True)
    return bool(np.all(counts == 2))


def mesh_triangles(obj, depsgraph):
    """Triangles (T, 3) of the evaluated mesh (vertex indices)."""
    ev = obj.evaluated_get(depsgraph) if depsgraph is not None else obj
    mesh = ev.data
    mesh.calc_loop_triangles()
    tris = np.empty(len(mesh.loop_triangles) * 3, dtype=np.int64)
    mesh.loop_triangles.foreach_get("vertices", tris)
    return tris.reshape(-1, 3)


class SceneReader:
    """Collects the bodies of a scene. ``read()`` fills ``bodies`` and ``problems``."""

    def __init__(self, scene, depsgraph, objects=None, settings=None, check_animation=True):
        # settings: obj -> the Hullabaloo settings to read for it (default obj.hullabaloo);
        # Settle Selected reads selected objects as Dynamic for its run without writing that
        # to them (addon/settle.py). check_animation: warn about what overrides baked keys.
        self.scene = scene
        self.depsgraph = depsgraph
        self.objects = objects
        self.settings = settings or (lambda obj: obj.hullabaloo)
        self.check_animation = check_animation
        self.bodies = []
        self.problems = []
        self._shape_cache = {}
        self._deform_first = {}   # object name -> first-frame data of a deforming Mesh

    def problem(self, level, obj, message):
        self.problems.append(Problem(level, obj.name if obj is not None else "", message))

    def read(self):
        """Per object only what needs Blender's API; the transform checks and decompositions
        run on all objects at once."""
        scene_objs = self.scene.objects
        if self.objects is None:
            objs = [o for o in scene_objs if o.hullabaloo.enabled]
        else:
            objs = list(self.objects)
        objs = [o for o in objs if not is_collision_part(o)]  # in their parent's shape
        meshes = []
        for obj in objs:
            if obj.type != 'MESH':
                self.problem("ERROR", obj, f"is a {obj.type.lower()} object; Hullabaloo "
                             "simulates mesh objects. Convert it (Object > Convert > Mesh) "
                             "or turn Hullabaloo off for it. Skipped.")
            elif obj.data is None:
                self.problem("ERROR", obj, "has no mesh data; give it a mesh or turn "
                             "Hullabaloo off for it. Skipped.")
            else:
                meshes.append(obj)
        if not meshes:
            return self
        mw = world_matrices(self.scene, meshes)
        finite = np.isfinite(mw).all(axis=(1, 2))
        lin = np.where(finite[:, None, None], mw[:, :3, :3], np.eye(3))
        sv = np.linalg.svd(lin, compute_uv=False)
        flat = sv.min(axis=1) <= 1e-8 * np.maximum(sv.max(axis=1), 1e-30)
        R, K = transforms.polar_decompose(lin)
        mirrored = np.linalg.det(K) < 0
        sheared = transforms.shear_amount(K) > 1e-4
        for i, obj in enumerate(meshes):
            if not finite[i]:
                self.problem("ERROR", obj, "has a non-finite transform (NaN or infinity in "
                             "its location, rotation or scale, or its parent's); reset them "
                             "(Object > Clear > Location / Rotation / Scale). Skipped.")
                continue
            if flat[i]:
                self.problem("ERROR", obj, "has zero scale on at least one axis (so no "
                             "volume); give it a non-zero scale (Object > Clear > Scale). "
                             "Skipped.")
                continue
            spec = self._read_object(obj, mw[i], R[i], K[i], mirrored[i], sheared[i])
            if spec is not None:
                self.bodies.append(spec)
        return self

    # -- one object -------------------------------------------------------------------------
    def _read_object(self, obj, mw, R, K, mirrored, sheared):
        s = self.settings(obj)
        shape = self._shape(obj, s, mw, R, K)
        if shape is None:
            return None
        deform = self._deform_spec(obj, s)
        if mirrored:
            self.problem("INFO", obj, "has a negative scale; it is simulated mirrored, as "
                         "shown.")
        if s.body_type == "DYNAMIC":
            if sheared:
                self.problem("WARNING", obj, "is sheared by a non-uniformly scaled parent; "
                             "its keys can only approximate a rotating sheared body. Apply "
                             "the parent's scale (Ctrl+A > Scale) for exact results.")
            if self.check_animation:
                self._check_animation_conflicts(obj)
        params = dict(friction=s.friction, restitution=s.restitution,
                      group=collision_bits(s.collision_collections),
                      mask=collision_bits(s.collision_collections))
        if s.body_type == "DYNAMIC":
            if s.mass_mode == "DENSITY":
                params["density"] = s.density
            else:
                params["mass"] = s.mass
            params.update(linear_damping=s.linear_damping, angular_damping=s.angular_damping,
                          linear_velocity=tuple(s.initial_linear_velocity),
                          angular_velocity=tuple(s.initial_angular_velocity))
        deactivation = None
        if s.body_type == "DYNAMIC":
            deactivation = dict(enabled=s.use_deactivation,
                                linear=s.deactivate_linear_velocity,
                                angular=s.deactivate_angular_velocity,
                                start_asleep=s.use_deactivation and s.use_start_deactivated)
        if s.import_notes:
            self.problem("INFO", obj, "was imported from Blender's Rigid Body; not carried: "
                         + s.import_notes)
        if params["group"] == 0:
            self.problem("WARNING", obj, "is in no collision collection, so it collides with "
                         "nothing; tick at least one (Physics > Hullabaloo > Collisions).")
        return BodySpec(obj=obj, name=obj.name, body_type=s.body_type, kind=KIND[s.body_type],
                        shape=shape, position=mw[:3, 3].copy(), rotation=R, shape_matrix=K,
                        params=params, deactivation=deactivation, deform=deform)

    def _deform_spec(self, obj, s):
        """What the bake needs to follow a deforming mesh ({"count", "points"} of the first
        frame, in the body frame), or None; says why when Deforming cannot be honoured."""
        if not s.use_deform:
            return None
        why = None
        if s.shape != "MESH":
            why = "Deforming works with the Mesh shape only"
        elif s.body_type == "DYNAMIC":
            why = "a dynamic body cannot deform (only passive and animated Mesh bodies do)"
        elif s.mesh_source == "BASE":
            why = "Mesh Source Base never deforms (use Deform or Final)"
        # An imported object already lists it among what the import could not carry.
        if why is not None and "Deforming" not in s.import_notes:
            self.problem("INFO", obj, f"Deforming is ignored: {why}; the shape of the first "
                         "frame is used throughout.")
        if why is not None:
            return None
        return self._deform_first.get(obj.name)

    def _check_animation_conflicts(self, obj):
        if any(c.enabled and c.influence > 0 for c in obj.constraints):
            self.problem("WARNING", obj, "has constraints, which are applied on top of the "
                         "baked keys; disable them for the keys to show the simulation.")
        ad = obj.animation_data
        if ad is not None and any(d.data_path.startswith(("location", "rotation"))
                                  for d in ad.drivers):
            self.problem("WARNING", obj, "has drivers on its location or rotation, which "
                         "override the baked keys; remove them.")
        rbw = self.scene.rigidbody_world
        if obj.rigid_body is not None and rbw is not None and rbw.enabled:
            self.problem("WARNING", obj, "also has a Blender Rigid Body, whose simulation "
                         "overrides keyframes on playback; remove it (Physics > Rigid Body) "
                         "or disable the scene's Rigid Body World.")

    def _shape(self, obj, s, mw, R, K):
        """The engine shape for an object (shared by objects with the same mesh, settings and
        shape matrix), or None with a problem recorded."""
        mesh_key = obj.data.name if not obj.modifiers else f"object:{obj.name}"
        if s.mesh_source != "FINAL" or (s.use_deform and s.shape == "MESH"):
            mesh_key = f"object:{obj.name}"   # a deforming mesh must not be shared either
        source = None
        if s.shape == "COMPOUND":
            source = (s.compound_source, s.decompose_max_parts, s.decompose_tolerance)
            if s.compound_source == "CHILDREN":  # depends on this object's children
                mesh_key = f"object:{obj.name}"
        key = (mesh_key, s.shape, source, s.body_type, np.round(K, 9).tobytes())
        if key in self._shape_cache:
            shape, error = self._shape_cache[key]
            if error is not None:
                self.problem(error[0], obj, error[1])
            return shape
        n_before = len(self.problems)
        if s.shape == "COMPOUND" and s.compound_source == "CHILDREN":
            shape = self._children_compound(obj, mw, R, K)
        else:
            shape = self._build_shape(obj, s, K)
        # A skipping error is repeated for every object sharing the shape; notes are not.
        errors = [p for p in self.problems[n_before:] if p.level == "ERROR"]
        self._shape_cache[key] = (shape, (errors[0].level, errors[0].message) if errors
                                  else None)
        return shape

    def _build_shape(self, obj, s, K):
        dg, kept = source_depsgraph(obj, s.mesh_source, self.depsgraph)
        if kept:
            self.problem("WARNING", obj, "Mesh Source Deform cannot leave out the "
                         f"modifier(s) {', '.join(kept)} (they change the topology); the "
                         "final mesh is used (as Source Final). Disable them in the viewport "
                         "or choose Base.")
        points = mesh_points(obj, dg)
        if points is None or len(points) == 0:
            self.problem("ERROR", obj, "has no vertices; add geometry or turn Hullabaloo off "
                         "for it. Skipped.")
            return None
        if not np.all(np.isfinite(points)):
            self.problem("ERROR", obj, "has vertices with non-finite coordinates; fix the "
                         "mesh. Skipped.")
            return None
        pts = points @ K.T
        size = float(np.ptp(pts, axis=0).max())
        if size > MAX_SIZE or not math.isfinite(size):
            self.problem("ERROR", obj, f"is {size:.3g} m across, too large to simulate "
                         "accurately; scale it down (and the scene with it) or apply a "
                         "sensible scale (Ctrl+A > Scale). Skipped.")
            return None
        if size < MIN_SIZE:
            self.problem("ERROR", obj, f"is only {size:.3g} m across, too small to simulate "
                         "accurately; model it at least 1 mm big (scale the scene up). "
                         "Skipped.")
            return None
        _, span = _extent_axes(pts)
        scale = max(span.max(), 1e-12)
        if span[1] <= 1e-6 * scale:
            self.problem("ERROR", obj, "is a point or a line (no area, no volume), which "
                         "cannot collide; give the mesh some volume or turn Hullabaloo off "
                         "for it. Skipped.")
            return None
        # A passive or animated Mesh shape collides with zero-thickness surfaces as they are
        # (engine.TriangleMesh): no slab, and nothing to report.
        scenery_mesh = s.shape == "MESH" and s.body_type != "DYNAMIC"
        if (span[2] <= 1e-6 * scale and s.shape in ("CONVEX_HULL", "MESH", "COMPOUND")
                and not scenery_mesh):
            thickness = max(0.01 * scale, 1e-3) if s.body_type == "DYNAMIC" else \
                max(0.1 * scale, 0.01)
            normal = None
            if s.body_type != "DYNAMIC":
                normal = self._flat_normal(obj, K)
            pts = _slab(pts, thickness, normal)
            where = "on both sides" if normal is None else "behind its face side"
            self.problem("INFO", obj, f"is flat; it is simulated as a slab {thickness:.3g} m "
                         f"thick {where}. Add thickness (Solidify) to control this.")
            flat = True
        else:
            flat = False
        try:
            if s.shape == "COMPOUND" and s.compound_source == "DECOMPOSE" and not flat:
                identity = (1.0, 0.0, 0.0, 0.0)
                hulls = []
                for cloud in self._decompose(obj, pts, s, dg):
                    try:
                        hulls.append(_hull(cloud))
                    except engine.DegenerateShapeError:
                        continue  # a sliver without volume (open meshes): nothing lost
                shape = engine.Compound([(h, (0.0, 0.0, 0.0), identity) for h in hulls])
                notes = []
            elif s.shape == "COMPOUND":  # loose parts (also a flat mesh's slab, per part)
                parts = loose_parts(obj, dg)
                if flat:  # pts holds the slab's two copies of the n vertices
                    n = len(points)
                    parts = [np.concatenate((p, p + n)) for p in parts if len(p) >= 3]
                parts = [p for p in parts if len(p) >= 4]
                identity = (1.0, 0.0, 0.0, 0.0)
                shape = engine.Compound(
                    [(_hull(pts[p]), (0.0, 0.0, 0.0), identity) for p in parts])
                notes = []
            elif s.shape == "MESH" and s.body_type != "DYNAMIC":
                # Blender's vertex numbering is kept, so a deforming mesh's later frames can
                # replace these vertices one for one.
                shape = engine.TriangleMesh(pts, mesh_triangles(obj, dg))
                if s.use_deform and dg is not None:
                    self._deform_first[obj.name] = {"count": len(points), "points": pts}
                notes = []
            elif s.shape == "MESH" and s.body_type == "DYNAMIC":
                shape = _hull(pts)
                notes = [("WARNING", "the Mesh shape is for passive and animated scenery; "
                          "this dynamic body uses its convex hull (use Compound for a moving "
                          "non-convex object)")]
            else:
                shape, notes = build_shape(s.shape, pts)
        except engine.EngineError as exc:
            self.problem("ERROR", obj, f"cannot be given a {s.shape.lower().replace('_', ' ')} "
                         f"shape: {exc}. Try the Box shape, or fix the mesh. Skipped.")
            shape = None
        else:
            for level, msg in notes:
                self.problem(level, obj, msg)
        return shape

    def _decompose(self, obj, pts, s, dg):
        """Convex part point clouds of the evaluated mesh in the body frame (cached)."""
        tris = mesh_triangles(obj, dg)
        if "hb_piece" in obj and is_closed(tris):
            # A fractured piece (addon.fracture): cut into its own Voronoi parts, exact and
            # fast (engine.features.glue.convex_parts), instead of the general decomposition.
            try:
                return engine_glue.convex_parts(pts, tris, s.decompose_max_parts)
            except engine.EngineError:
                pass
        if not is_closed(tris):
            self.problem("WARNING", obj, "is not a closed mesh (it has holes or loose "
                         "faces), so the decomposition can miss or add volume; close it, or "
                         "use Loose Parts or Child Objects as the compound's parts.")
        wm = None
        if not bpy.app.background:
            wm = getattr(bpy.context, "window_manager", None)
        report = DecomposeProgress(obj.name, wm)
        try:
            return decompose_cached(pts, tris, s.decompose_max_parts, s.decompose_tolerance,
                                    progress=report)
        finally:
            report.close()

    def _children_compound(self, obj, mw, R, K):
        """Compound of the child objects marked as collision parts (hidden ones too, as
        Blender's Compound Parent), each with its own shape setting (Box, Sphere, Capsule,
        else its convex hull) placed at its pose relative to this body's frame (position
        mw[:3, 3], rotation R), its scale (and any shear relative to the parent) baked into
        its points; plus this object's own mesh as one more part only when asked
        (compound_include_self: Blender's Compound Parent uses the children only)."""
        parts = []
        identity = (1.0, 0.0, 0.0, 0.0)
        own = mesh_points(obj, self.depsgraph) if self.settings(obj).compound_include_self \
            else None
        if own is not None and len(own) >= 4 and np.all(np.isfinite(own)):
            pts = own @ K.T
            _, span = _extent_axes(pts)
            if span[2] > 1e-6 * max(span[0], 1e-12) and span[0] >= MIN_SIZE:
                parts.append((_hull(pts), (0.0, 0.0, 0.0), identity))
            else:
                self.problem("INFO", obj, "has a mesh without volume, which is not a "
                             "collision part; only its marked children collide.")
        children = [c for c in obj.children
                    if c.type == 'MESH' and c.data is not None and c.hullabaloo.collision_part]
        if not children:
            self.problem("ERROR", obj, "has no child objects marked as collision parts; mark "
                         "them in Physics > Hullabaloo (Collision Part) or use Loose Parts. "
                         "Skipped.")
            return None
        cm = np.array([np.array(c.matrix_world, dtype=np.float64) for c in children])
        ok = np.isfinite(cm).all(axis=(1, 2))
        cm[~ok] = np.eye(4)
        # Child frame relative to the body frame: y = R^T (x - t), so the child's linear
        # part becomes R^T L_c, split into the part's rotation and its shape matrix.
        rel = np.swapaxes(R, -1, -2)[None] @ cm[:, :3, :3]
        Rc, Kc = transforms.polar_decompose(rel)
        offset = (cm[:, :3, 3] - mw[:3, 3]) @ R
        for i, child in enumerate(children):
            where = f"collision part {child.name!r}"
            if not ok[i]:
                self.problem("WARNING", obj, f"{where} has a non-finite transform; it is left "
                             "out.")
                continue
            points = mesh_points(child, self.depsgraph)
            if points is None or len(points) < 4 or not np.all(np.isfinite(points)):
                self.problem("WARNING", obj, f"{where} has no usable vertices; it is left "
                             "out.")
                continue
            pts = points @ Kc[i].T
            _, span = _extent_axes(pts)
            if not MIN_SIZE <= span[0] <= MAX_SIZE or span[2] <= 1e-6 * span[0]:
                self.problem("WARNING", obj, f"{where} is flat, tiny or huge "
                             f"({span[0]:.3g} m); it is left out. Give it some volume.")
                continue
            kind = child.hullabaloo.shape
            try:
                if kind in ("BOX", "SPHERE", "CAPSULE"):
                    hull, notes = build_shape(kind, pts)
                    for level, msg in notes:
                        self.problem(level, obj, f"{where}: {msg}")
                else:  # Convex Hull (Mesh and Compound parts are hulled too)
                    hull = _hull(pts)
            except engine.EngineError as exc:
                self.problem("WARNING", obj, f"{where} cannot be hulled ({exc}); it is left "
                             "out.")
                continue
            parts.append((hull, offset[i], quat.from_matrix(Rc[i])))
        if not parts:
            self.problem("ERROR", obj, "has no usable collision parts (see the warnings "
                         "above). Skipped.")
            return None
        try:
            return engine.Compound(parts)
        except engine.EngineError as exc:
            self.problem("ERROR", obj, f"cannot be given a compound shape: {exc}. Skipped.")
            return None

    def _flat_normal(self, obj, K):
        """Outward normal of a flat mesh, in the body frame: the faces' mean normal (a ground
        plane's top side), or +Z of the world when the mesh has no faces."""
        mesh = obj.data
        n = len(mesh.polygons)
        if n:
            nr = np.empty(n * 3, dtype=np.float32)
            mesh.polygons.foreach_get("normal", nr)
            v = nr.reshape(n, 3).astype(np.float64).sum(axis=0)
            v = np.linalg.solve(K.T, v)  # normals transform by the inverse transpose
        else:
            v = np.array([0.0, 0.0, 1.0])
        norm = np.linalg.norm(v)
        return v / norm if norm > 0 else np.array([0.0, 0.0, 1.0])
