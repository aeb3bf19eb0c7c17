"""Non-convex body shapes (Compound, TriangleMesh) in the narrowphase.

The convex narrowphase works on pairs of convex shapes. ``collide_bodies`` takes the same
arguments as ``narrowphase.collide`` (shape ids of a ShapeTable and body poses) but accepts
compounds and triangle meshes too, and returns *several* manifolds per body pair:

1. Expand: a compound side becomes its parts (shape ids registered in the same table, poses
   composed with the body pose), all part pairs of a body pair at once (np.repeat arithmetic),
   culled by bounding spheres.
2. Convex part pairs go through ``narrowphase.collide`` unchanged (one manifold each).
3. Pairs with a triangle mesh: the convex side's box in the mesh frame queries the BVH, the
   (convex, triangle) pairs go through ``mesh_contacts.collide_convex_triangles`` and are reduced
   to a few manifolds per pair (clustered by normal).

Result: ``BodyContacts`` with ``manifolds`` (R rows), ``pair`` (R,) index of the input pair
and ``sub`` (R,) which manifold of its pair the row is, sorted by (pair, sub). Normals point
from the first body of the pair to the second, as in collide(). ``sub`` is exact, not a hash:
(part of A * parts of B + part of B) * CLUSTER_STRIDE + normal cluster, so the world's pair
table (engine.collision.contacts, keyed by (body pair, sub)) never confuses two manifolds of a pair.

engine.world.world.World calls ``check_body_shape`` and ``body_mass_properties`` when a body is added
and ``collide_bodies`` in a pass where a compound or a mesh is among the pairs (the other
passes go through polytope_pairs, one kernel); nothing here knows about the world.
"""
import numpy as np

from ..core import quat
from ..core.kinds import ShapeKind
from ..core.vec import per_row
from ..shapes.compound import Compound
from ..shapes.trimesh import TriangleMesh, check_body_shape
from .mesh_contacts import (
    MAX_CLUSTERS,
    collide_convex_triangles,
    collide_mesh_polytopes,
    reduce_manifolds,
)
from .mesh_kernels import mesh_row_boxes
from .narrowphase import Manifolds

__all__ = [
    "CLUSTER_STRIDE",
    "BodyContacts",
    "Compound",
    "TriangleMesh",
    "body_mass_properties",
    "check_body_shape",
    "collide_bodies",
]

# Kinds as plain ints: numpy compares arrays with an enum member through its dunder probes.
_COMPOUND, _MESH = int(ShapeKind.COMPOUND), int(ShapeKind.TRIANGLE_MESH)
_POLYTOPE = int(ShapeKind.POLYTOPE)

# sub = part pair * CLUSTER_STRIDE + normal cluster (reduce_manifolds ranks < MAX_CLUSTERS).
CLUSTER_STRIDE = 1 << 3
assert MAX_CLUSTERS <= CLUSTER_STRIDE


class BodyContacts:
    __slots__ = ("manifolds", "pair", "sub")

    def __init__(self, manifolds, pair, sub):
        self.manifolds, self.pair, self.sub = manifolds, pair, sub


def body_mass_properties(shape, density=None, mass=None):
    """Mass properties of any body shape (convex, Compound) from a density (kg/m^3, default
    1000) or a total mass (kg); a TriangleMesh has none (EngineError saying what to use)."""
    from ..shapes.mass import mass_properties, mass_properties_from_mass
    if getattr(shape, "kind", None) == ShapeKind.TRIANGLE_MESH:
        check_body_shape(shape, "dynamic")
    if getattr(shape, "kind", None) == ShapeKind.COMPOUND:
        return (shape.mass_properties_from_mass(mass) if mass is not None
                else shape.mass_properties(1000.0 if density is None else density))
    if mass is not None:
        return mass_properties_from_mass(shape, mass)
    return mass_properties(shape, 1000.0 if density is None else density)


def _parts(table):
    """Per table shape: first row and count in a flat part list (shape id, position, quat).
    A convex shape is its own single part. Registers compound parts in the table (the table
    rebuilds its arrays lazily on the next read). Cached until the table grows."""
    cached = table.__dict__.get("_nc_parts")
    if cached is not None and cached[0] == len(table.shapes):
        return cached[1]
    for s in list(table.shapes):
        if s.kind == ShapeKind.COMPOUND:
            for part in s.shapes:
                table.add(part)
    first: list[int] = []
    count: list[int] = []
    sid: list[int] = []
    pos: list[np.ndarray] = []
    rot: list[np.ndarray] = []
    for i, s in enumerate(table.shapes):
        first.append(len(sid))
        if s.kind == ShapeKind.COMPOUND:
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
              np.array(pos).reshape(-1, 3), np.array(rot).reshape(-1, 4),
              any(s.kind in (ShapeKind.COMPOUND, ShapeKind.TRIANGLE_MESH) for s in table.shapes))
    table.__dict__["_nc_parts"] = (len(table.shapes), arrays)
    return arrays


def _any_compound(kinds):
    return bool(np.any(kinds == _COMPOUND))


def _any_nonconvex(kinds):
    return bool(np.any((kinds == _COMPOUND) | (kinds == _MESH)))


def _within_reach(table, sid_a, pos_a, sid_b, pos_b, margin):
    """(M,) bool: the bounding spheres of the shapes (about their origins) come within margin.
    The broadphase's boxes are grown by the motion and are loose about round or turned
    shapes: a sheet of jointed spheres gives ~20 candidates per manifold, each costing a
    narrowphase row. A NaN margin is kept (narrowphase.collide reports it)."""
    d = pos_b - pos_a
    reach = table.bound_radius[sid_a] + table.bound_radius[sid_b] + margin
    return ~(np.einsum("ij,ij->i", d, d) > reach * reach)


def collide_bodies(table, sid_a, pos_a, q_a, sid_b, pos_b, q_b, margin=0.0, collide=None):
    """Manifolds of M body pairs whose shapes may be convex, Compound or TriangleMesh.

    Same inputs as narrowphase.collide (quaternions (w, x, y, z)); ``margin`` a scalar or one
    per pair (M,). Mesh-mesh pairs give nothing (meshes are never dynamic). ``collide``
    replaces narrowphase.collide for the convex pairs (tests). Returns a BodyContacts (see
    the module docstring)."""
    if collide is None:
        from .narrowphase import collide
    sid_a = np.asarray(sid_a, dtype=np.int64).reshape(-1)
    sid_b = np.asarray(sid_b, dtype=np.int64).reshape(-1)
    m = len(sid_a)
    margin = per_row(margin, m)
    first, count, psid, ppos, pq, nonconvex = _parts(table)
    kinds = table.kind
    pos_a = np.asarray(pos_a, dtype=np.float64).reshape(m, 3)
    pos_b = np.asarray(pos_b, dtype=np.float64).reshape(m, 3)
    if not nonconvex or not (_any_nonconvex(kinds[sid_a]) or _any_nonconvex(kinds[sid_b])):
        # Convex pairs only: one manifold per pair the bounding spheres do not rule out,
        # straight from the narrowphase.
        rows = np.flatnonzero(_within_reach(table, sid_a, pos_a, sid_b, pos_b, margin))
        man = collide(table, sid_a[rows], pos_a[rows], np.asarray(q_a).reshape(m, 4)[rows],
                      sid_b[rows], pos_b[rows], np.asarray(q_b).reshape(m, 4)[rows],
                      margin=margin[rows])
        return BodyContacts(man, rows, np.zeros(len(rows), np.int64))
    q_a = quat.normalize(np.asarray(q_a, dtype=np.float64).reshape(m, 4))
    q_b = quat.normalize(np.asarray(q_b, dtype=np.float64).reshape(m, 4))

    ka, kb = kinds[sid_a], kinds[sid_b]
    if _any_compound(ka) or _any_compound(kb):
        pair, sa, sb, xa, xb, qa, qb, sub, marg = _expand(
            table, first, count, psid, ppos, pq, sid_a, pos_a, q_a, sid_b, pos_b, q_b, margin)
        ka, kb = kinds[sa], kinds[sb]
    else:                            # every part is its body's shape at the body's pose
        pair, sa, sb, xa, xb, qa, qb, marg = (np.arange(m), sid_a, sid_b, pos_a, pos_b, q_a,
                                              q_b, margin)
        sub = np.zeros(m, np.int64)
    # Bounding-sphere cull of the pairs and part pairs (_within_reach); meshes are never
    # dynamic: nothing between two.
    keep = _within_reach(table, sa, xa, sb, xb, marg) & ~((ka == _MESH) & (kb == _MESH))
    if not keep.all():
        pair, sa, sb, xa, xb, qa, qb, sub, marg, ka, kb = (
            v[keep] for v in (pair, sa, sb, xa, xb, qa, qb, sub, marg, ka, kb))

    outs, pairs, subs = [], [], []
    # 2. Convex pairs: the ordinary narrowphase.
    conv = np.flatnonzero((ka != _MESH) & (kb != _MESH))
    if len(conv):
        outs.append(collide(table, sa[conv], xa[conv], qa[conv], sb[conv], xb[conv], qb[conv],
                            margin=marg[conv]))
        pairs.append(pair[conv])
        subs.append(sub[conv] * CLUSTER_STRIDE)
    # 3. Convex vs triangle mesh.
    mesh_rows = np.flatnonzero((ka == _MESH) | (kb == _MESH)) if len(conv) else np.arange(len(ka))
    if len(mesh_rows):
        flip = ka[mesh_rows] == _MESH
        s_c, x_c, q_c, s_m, x_m, q_m = _convex_side_first(flip, mesh_rows, sa, xa, qa, sb, xb,
                                                          qb)
        man, group = _mesh_pairs(table, s_c, x_c, q_c, s_m, x_m, q_m, marg[mesh_rows])
        red, grp, rank = reduce_manifolds(man, group, n_groups=len(mesh_rows))
        red.normal[flip[grp]] *= -1.0
        outs.append(red)
        pairs.append(pair[mesh_rows][grp])
        subs.append(sub[mesh_rows][grp] * CLUSTER_STRIDE + rank)
    if not outs:
        return BodyContacts(Manifolds(0), np.zeros(0, np.int64), np.zeros(0, np.int64))
    pair = np.concatenate(pairs)
    sub = np.concatenate(subs)
    if len(outs) == 1:
        total = outs[0]
    else:
        total = Manifolds(len(pair))
        start = 0
        for o in outs:
            total._put(slice(start, start + len(o)), o)
            start += len(o)
    if len(outs) > 1 or not _in_order(pair, sub):
        order = np.lexsort((sub, pair))
        for name in Manifolds.__slots__:
            setattr(total, name, getattr(total, name)[order])
        pair, sub = pair[order], sub[order]
    return BodyContacts(total, pair, sub)


def _convex_side_first(flip, rows, sa, xa, qa, sb, xb, qb):
    """Shape ids, positions and quaternions of the rows' convex side, then their mesh side
    (flip: the mesh is side a). A pass whose meshes are all on one side (the world orders its
    pairs by body) takes the arrays as they are."""
    if flip.all():
        return sb[rows], xb[rows], qb[rows], sa[rows], xa[rows], qa[rows]
    if not flip.any():
        return sa[rows], xa[rows], qa[rows], sb[rows], xb[rows], qb[rows]
    f = flip[:, None]
    return (np.where(flip, sb[rows], sa[rows]), np.where(f, xb[rows], xa[rows]),
            np.where(f, qb[rows], qa[rows]), np.where(flip, sa[rows], sb[rows]),
            np.where(f, xa[rows], xb[rows]), np.where(f, qa[rows], qb[rows]))


def _in_order(pair, sub):
    """Rows already sorted by (pair, sub) (a mesh-only pass: the reduction gives them by row,
    then rank): the sort and the gathers of every field would change nothing."""
    if len(pair) < 2:
        return True
    dp = pair[1:] - pair[:-1]
    return bool(np.all((dp > 0) | ((dp == 0) & (sub[1:] > sub[:-1]))))


def _expand(table, first, count, psid, ppos, pq, sid_a, pos_a, q_a, sid_b, pos_b, q_b,
            margin):
    """Compound sides become their parts: every part pair of a body pair at once (np.repeat
    arithmetic), poses composed with the body poses. Returns
    pair, sa, sb, xa, xb, qa, qb, sub (= part of A * parts of B + part of B), margin."""
    m = len(sid_a)
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
    return pair, sa, sb, xa, xb, qa, qb, local, margin[pair]


def _mesh_pairs(table, s_c, x_c, q_c, s_m, x_m, q_m, margin):
    """(convex, triangle) contacts for R (convex, mesh) rows with margins (R,): a Manifolds
    whose count, normal, points, separation and ids hold the pairs (rows without contacts
    may be left out), and the row of each. Rows use their margin bucket's margin
    (mesh_kernels.margin_buckets, in mesh_row_boxes)."""
    rot_c, rot_m, lo, hi, used = mesh_row_boxes(table.points, table.npoints, table.radius, s_c,
                                                x_c, q_c, x_m, q_m, margin)
    poly = table.kind[s_c] == _POLYTOPE
    parts, rows = [], []
    meshes = s_m[:1] if s_m.min() == s_m.max() else np.unique(s_m)
    # Loops over distinct meshes only (a few per step).
    for u in meshes:
        r = np.flatnonzero(s_m == u) if len(meshes) > 1 else np.arange(len(s_m))
        mesh = table.shapes[u]
        if poly[r].all():            # polytopes: the query and the pairs in one kernel
            part, row = collide_mesh_polytopes(table, mesh, s_c, x_c, rot_c, x_m, rot_m, used,
                                               lo, hi, r)
            parts.append(part)
            rows.append(row)
            continue
        rp = r[poly[r]]
        if len(rp):
            part, row = collide_mesh_polytopes(table, mesh, s_c, x_c, rot_c, x_m, rot_m, used,
                                               lo, hi, rp)
            parts.append(part)
            rows.append(row)
        ro = r[~poly[r]]
        qi, to = mesh.query(lo[ro], hi[ro])
        ro = ro[qi]
        tv = (np.matmul(mesh.vertices[mesh.triangles[to]], rot_m[ro].transpose(0, 2, 1))
              + x_m[ro][:, None])
        nrm = np.matmul(rot_m[ro], mesh.normals[to][:, :, None])[:, :, 0]
        parts.append(collide_convex_triangles(
            table, s_c[ro], x_c[ro], rot_c[ro], tv, nrm, mesh.active_front[to],
            mesh.active_back[to], np.full(len(ro), mesh.two_sided), used[ro], to))
        rows.append(ro)
    if len(parts) == 1:
        return parts[0], rows[0]
    out = Manifolds(0)
    for name in ("count", "normal", "points", "separation", "ids"):
        setattr(out, name, np.concatenate([getattr(p, name) for p in parts]))
    return out, np.concatenate(rows)
