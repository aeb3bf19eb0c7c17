"""Integration of non-convex shapes (Compound, TriangleMesh) with the world's pipeline.

The world's narrowphase works on body pairs whose shapes are convex. ``collide_bodies`` takes
the same arguments as ``narrowphase.collide`` (shape ids of a ShapeTable and body poses) but
accepts compounds and triangle meshes too, and returns *several* manifolds per body pair:

1. Expand: a compound side becomes its parts (shape ids registered in the same table, poses
   composed with the body pose), all part pairs of a body pair at once (np.repeat arithmetic),
   culled by bounding spheres.
2. Convex part pairs go through ``narrowphase.collide`` unchanged (one manifold each).
3. Pairs with a triangle mesh: the convex side's box in the mesh frame queries the BVH, the
   (convex, triangle) pairs go through ``mesh_contacts.collide_convex_triangles`` and are reduced
   to a few manifolds per pair (clustered by normal).

Result: ``BodyContacts`` with ``manifolds`` (R rows), ``pair`` (R,) index of the input pair
and ``sub`` (R,) a sub-manifold key (part pair and normal cluster), sorted by (pair, sub).
Normals point from the first body of the pair to the second, as in collide().

``NonConvexWorld`` wires this into ``engine.world.World`` through its step hooks until world.py
does it natively (see its docstring for the exact change world.py needs).
"""
import numpy as np

from . import quat
from .compound import COMPOUND, Compound
from .errors import EngineError
from .mesh_contacts import collide_convex_triangles, reduce_manifolds
from .narrowphase import Manifolds
from .trimesh import TRIANGLE_MESH, TriangleMesh, check_body_shape

__all__ = ["collide_bodies", "BodyContacts", "body_mass_properties", "check_body_shape",
           "NonConvexWorld", "Compound", "TriangleMesh"]

# sub key layout: part of A * PART_STRIDE + part of B, then * CLUSTER_STRIDE + normal cluster.
PART_STRIDE = 1 << 12
CLUSTER_STRIDE = 1 << 4


class BodyContacts:
    __slots__ = ("manifolds", "pair", "sub")

    def __init__(self, manifolds, pair, sub):
        self.manifolds, self.pair, self.sub = manifolds, pair, sub


def body_mass_properties(shape, density=None, mass=None):
    """Mass properties of any body shape (convex, Compound); a TriangleMesh has none."""
    from .mass import mass_properties, mass_properties_from_mass
    if getattr(shape, "kind", None) == TRIANGLE_MESH:
        check_body_shape(shape, "dynamic")
    if getattr(shape, "kind", None) == COMPOUND:
        return (shape.mass_properties_from_mass(mass) if mass is not None
                else shape.mass_properties(1000.0 if density is None else density))
    if mass is not None:
        return mass_properties_from_mass(shape, mass)
    return mass_properties(shape, 1000.0 if density is None else density)


def _parts(table):
    """Per table shape: first row and count in a flat part list (shape id, position, quat).
    A convex shape is its own single part. Registers compound parts in the table once."""
    cached = getattr(table, "_nc_parts", None)
    if cached is not None and cached[0] == len(table.shapes):
        return cached[1]
    for s in list(table.shapes):
        if s.kind == COMPOUND:
            for part in s.shapes:
                table.add(part)
    if table.__dict__.get("_dirty", True):
        table._build()      # a built table only rebuilds lazily for missing arrays
    first, count, sid, pos, rot = [], [], [], [], []
    for i, s in enumerate(table.shapes):
        first.append(len(sid))
        if s.kind == COMPOUND:
            count.append(len(s))
            sid.extend(table.add(p) for p in s.shapes)
            pos.extend(s.positions)
            rot.extend(s.orientations)
        else:
            count.append(1)
            sid.append(i)
            pos.append(np.zeros(3))
            rot.append(np.array([1.0, 0.0, 0.0, 0.0]))
    arrays = (np.array(first, np.int64), np.array(count, np.int64), np.array(sid, np.int64),
              np.array(pos).reshape(-1, 3), np.array(rot).reshape(-1, 4))
    table.__dict__["_nc_parts"] = (len(table.shapes), arrays)
    return arrays


def collide_bodies(table, sid_a, pos_a, q_a, sid_b, pos_b, q_b, margin=0.0, collide=None):
    """Manifolds of M body pairs whose shapes may be convex, Compound or TriangleMesh.

    Same inputs as narrowphase.collide (quaternions (w, x, y, z)). Mesh-mesh pairs give
    nothing (meshes are never dynamic). Returns a BodyContacts (see the module docstring)."""
    if collide is None:
        from .narrowphase import collide
    sid_a = np.asarray(sid_a, dtype=np.int64).reshape(-1)
    sid_b = np.asarray(sid_b, dtype=np.int64).reshape(-1)
    m = len(sid_a)
    pos_a = np.asarray(pos_a, dtype=np.float64).reshape(m, 3)
    pos_b = np.asarray(pos_b, dtype=np.float64).reshape(m, 3)
    q_a = quat.normalize(np.asarray(q_a, dtype=np.float64).reshape(m, 4))
    q_b = quat.normalize(np.asarray(q_b, dtype=np.float64).reshape(m, 4))
    first, count, psid, ppos, pq = _parts(table)

    # 1. Expand compounds into part pairs.
    ca, cb = count[sid_a], count[sid_b]
    n_rows = ca * cb
    pair = np.repeat(np.arange(m), n_rows)
    local = np.arange(len(pair)) - np.repeat(np.cumsum(n_rows) - n_rows, n_rows)
    ja, jb = local // cb[pair], local % cb[pair]
    pa_i, pb_i = first[sid_a[pair]] + ja, first[sid_b[pair]] + jb
    sa, sb = psid[pa_i], psid[pb_i]
    qa, qb = q_a[pair], q_b[pair]
    xa = pos_a[pair] + quat.rotate(qa, ppos[pa_i])
    xb = pos_b[pair] + quat.rotate(qb, ppos[pb_i])
    qa, qb = quat.multiply(qa, pq[pa_i]), quat.multiply(qb, pq[pb_i])
    sub = ja * PART_STRIDE + jb
    # Bounding-sphere cull of part pairs (the body pair already passed the broadphase).
    d = xb - xa
    reach = table.bound_radius[sa] + table.bound_radius[sb] + margin
    keep = (n_rows[pair] == 1) | (np.einsum("ij,ij->i", d, d) <= reach * reach)
    ka, kb = table.kind[sa], table.kind[sb]
    keep &= ~((ka == TRIANGLE_MESH) & (kb == TRIANGLE_MESH))
    pair, sa, sb, xa, xb, qa, qb, sub = (v[keep] for v in (pair, sa, sb, xa, xb, qa, qb, sub))
    ka, kb = ka[keep], kb[keep]

    outs, pairs, subs = [], [], []
    # 2. Convex pairs: the ordinary narrowphase.
    conv = np.flatnonzero((ka != TRIANGLE_MESH) & (kb != TRIANGLE_MESH))
    if len(conv):
        outs.append(collide(table, sa[conv], xa[conv], qa[conv], sb[conv], xb[conv], qb[conv],
                            margin=margin))
        pairs.append(pair[conv])
        subs.append(sub[conv] * CLUSTER_STRIDE)
    # 3. Convex vs triangle mesh.
    mesh_rows = np.flatnonzero((ka == TRIANGLE_MESH) | (kb == TRIANGLE_MESH))
    if len(mesh_rows):
        flip = ka[mesh_rows] == TRIANGLE_MESH
        f = flip[:, None]
        s_c = np.where(flip, sb[mesh_rows], sa[mesh_rows])
        s_m = np.where(flip, sa[mesh_rows], sb[mesh_rows])
        x_c = np.where(f, xb[mesh_rows], xa[mesh_rows])
        x_m = np.where(f, xa[mesh_rows], xb[mesh_rows])
        q_c = np.where(f, qb[mesh_rows], qa[mesh_rows])
        q_m = np.where(f, qa[mesh_rows], qb[mesh_rows])
        man, group = _mesh_pairs(table, s_c, x_c, q_c, s_m, x_m, q_m, margin)
        red, grp, rank = reduce_manifolds(man, group, n_groups=len(mesh_rows))
        red.normal[flip[grp]] *= -1.0
        outs.append(red)
        pairs.append(pair[mesh_rows][grp])
        subs.append(sub[mesh_rows][grp] * CLUSTER_STRIDE + rank)
    if not outs:
        return BodyContacts(Manifolds(0), np.zeros(0, np.int64), np.zeros(0, np.int64))
    pair = np.concatenate(pairs)
    sub = np.concatenate(subs)
    total = Manifolds(len(pair))
    start = 0
    for o in outs:
        total._put(slice(start, start + len(o)), o)
        start += len(o)
    order = np.lexsort((sub, pair))
    for name in Manifolds.__slots__:
        setattr(total, name, getattr(total, name)[order])
    return BodyContacts(total, pair[order], sub[order])


def _mesh_pairs(table, s_c, x_c, q_c, s_m, x_m, q_m, margin):
    """(convex, triangle) manifolds for R (convex, mesh) rows; returns (Manifolds, row)."""
    rot_c = quat.to_matrix(q_c)
    rot_m = quat.to_matrix(q_m)
    vmax = int(table.npoints[s_c].max())
    pts = np.matmul(table.points[s_c, :vmax], rot_c.transpose(0, 2, 1)) + x_c[:, None]
    loc = np.matmul(pts - x_m[:, None], rot_m)              # convex points in the mesh frame
    grow = (table.radius[s_c] + margin)[:, None]
    lo, hi = loc.min(axis=1) - grow, loc.max(axis=1) + grow
    parts, rows = [], []
    for u in np.unique(s_m):                                  # loop over distinct meshes only
        r = np.flatnonzero(s_m == u)
        mesh = table.shapes[u]
        qi, tri = mesh.query(lo[r], hi[r])
        if not len(qi):
            continue
        row = r[qi]
        tv = np.matmul(mesh.triangle_vertices[tri], rot_m[row].transpose(0, 2, 1)) + x_m[row][:, None]
        nrm = np.matmul(rot_m[row], mesh.normals[tri][:, :, None])[:, :, 0]
        parts.append(collide_convex_triangles(
            table, s_c[row], x_c[row], rot_c[row], tv, nrm, mesh.active_front[tri],
            mesh.active_back[tri], np.full(len(row), mesh.two_sided), margin, tri))
        rows.append(row)
    if not parts:
        return Manifolds(0), np.zeros(0, np.int64)
    out = Manifolds(sum(len(p) for p in parts))
    start = 0
    for p in parts:
        out._put(slice(start, start + len(p)), p)
        start += len(p)
    return out, np.concatenate(rows)


# ------------------------------------------------------------------------------------------
# Bridge into engine.world.World until world.py integrates collide_bodies natively.

def manifold_keys(ia, ib, sub):
    """Sortable int64 keys unique per manifold: body a (< 2**23), body b (< 2**24) and a
    16-bit fold of the sub key. Sorted (ia, ib, sub) rows give sorted keys."""
    s = np.asarray(sub, dtype=np.int64)
    fold = (((s // (PART_STRIDE * CLUSTER_STRIDE)) * 61 + (s // CLUSTER_STRIDE) % PART_STRIDE)
            * CLUSTER_STRIDE + s % CLUSTER_STRIDE) & 0xFFFF
    return ((np.asarray(ia, dtype=np.int64) << 40) | (np.asarray(ib, dtype=np.int64) << 16)
            | fold)


def _world_class():
    from .contacts import PairTable
    from .world import DYNAMIC, World

    class _SubPairTable(PairTable):
        """Pair table keyed per manifold: the world passes body-pair keys, the bridge knows
        the sub key of each row (set just before the world calls match/store)."""
        sub = None

        def _keys(self, keys):
            keys = np.asarray(keys, dtype=np.int64)
            if self.sub is None or len(self.sub) != len(keys):
                return keys
            return manifold_keys(keys >> 32, keys & 0xFFFFFFFF, self.sub)

        def match(self, keys, ids, count):
            return super().match(self._keys(keys), ids, count)

        def store(self, keys, ids, count, normal, friction, keep=None):
            return super().store(self._keys(keys), ids, count, normal, friction, keep=keep)

    class NonConvexWorld(World):
        """engine.world.World accepting Compound and TriangleMesh shapes.

        What it changes (the same changes world.py needs to support them natively):
        1. add_body: ``check_body_shape(shape, kind)`` refuses dynamic triangle meshes;
           compound mass from ``body_mass_properties(shape, density, mass)``.
        2. narrowphase: ``collide_bodies`` instead of ``collide``; its rows replace the body
           pairs (``ia, ib = ia[res.pair], ib[res.pair]``), so a pair may have several
           manifolds (compound parts, mesh normal clusters).
        3. pair table keys per manifold: ``manifold_keys(ia, ib, res.sub)`` instead of
           ``pair_keys(ia, ib)`` (and _keep_pair decodes them).
        Here 2 happens in _broadphase (the pairs handed to the step are already expanded) and
        3 through a PairTable subclass, so World.step itself is untouched.
        """

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.pairs = _SubPairTable()
            self._nc = None
            self._nc_dt = 1.0 / 60.0

        def add_body(self, shape, position=(0.0, 0.0, 0.0), orientation=(1.0, 0.0, 0.0, 0.0),
                     linear_velocity=(0.0, 0.0, 0.0), angular_velocity=(0.0, 0.0, 0.0),
                     kind="dynamic", density=None, mass=None, **kwargs):
            check_body_shape(shape, kind)
            if getattr(shape, "kind", None) != COMPOUND or kind != "dynamic":
                return super().add_body(shape, position, orientation, linear_velocity,
                                        angular_velocity, kind=kind, density=density,
                                        mass=mass, **kwargs)
            if density is not None and mass is not None:
                raise EngineError("give density or mass, not both")
            mp = body_mass_properties(shape, density, 1.0 if density is None and mass is None
                                      else mass)
            i = super().add_body(shape, position, orientation, linear_velocity,
                                 angular_velocity, kind="kinematic", **kwargs)
            a = self._a
            a["kind"][i] = DYNAMIC
            a["inv_mass"][i] = 1.0 / mp.mass
            a["inertia"][i] = mp.inertia
            a["inv_inertia"][i] = np.linalg.inv(mp.inertia)
            tr = np.trace(mp.inertia)
            a["isotropic"][i] = bool(np.allclose(mp.inertia, np.eye(3) * tr / 3.0, rtol=1e-9,
                                                 atol=1e-12 * tr))
            a["com"][i] = mp.center
            a["x"][i] = a["pos"][i] + quat.rotate(a["q"][i], mp.center)
            return i

        def step(self, dt, record=None):
            self._nc_dt = float(dt)
            return super().step(dt, record)

        def _broadphase(self, lo, hi, kind, sleeping, moving):
            ia, ib = super()._broadphase(lo, hi, kind, sleeping, moving)
            t = self.table
            sid, pos, q, vel = self._v("shape"), self._v("pos"), self._v("q"), self._v("vel")
            dt = self._nc_dt
            rel = np.linalg.norm(vel[ib, :3] - vel[ia, :3], axis=1)
            spin = (np.linalg.norm(vel[ia, 3:], axis=1) * t.bound_radius[sid[ia]]
                    + np.linalg.norm(vel[ib, 3:], axis=1) * t.bound_radius[sid[ib]])
            margin = float(np.max(self.speculative_distance + dt * (rel + spin), initial=0.0))
            res = collide_bodies(t, sid[ia], pos[ia], q[ia], sid[ib], pos[ib], q[ib],
                                 margin=margin, collide=self._collide)
            self._nc = (ia[res.pair], ib[res.pair], res)
            return self._nc[0], self._nc[1]

        def _narrowphase(self, ia, ib, vel, dt):
            ca, cb, res = self._nc
            awake = (self._v("kind") == DYNAMIC) & ~self._v("sleeping")
            keep = awake[ca] | awake[cb]
            if not (np.array_equal(ca[keep], ia) and np.array_equal(cb[keep], ib)):
                raise EngineError("internal error: NonConvexWorld pairs out of step")
            man = res.manifolds
            live = man.count[keep] > 0
            self.pairs.sub = res.sub[keep][live]
            names = ("normal", "points", "separation", "count", "ids", "axis_kind", "axis_index")
            return {k: getattr(man, k)[keep] for k in names}

        def _keep_pair(self, keys):
            a = (keys >> 40).astype(np.int64)
            b = ((keys >> 16) & 0xFFFFFF).astype(np.int64)
            return super()._keep_pair((a << 32) | b)

    return NonConvexWorld


def __getattr__(name):
    # NonConvexWorld is built on first use: world.py imports this module's neighbours, and a
    # lazy class keeps `import engine.nonconvex` free of import cycles.
    if name == "NonConvexWorld":
        cls = _world_class()
        globals()["NonConvexWorld"] = cls
        return cls
    raise AttributeError(name)
