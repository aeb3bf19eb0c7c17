"""The narrowphase of a collision pass whose candidate pairs are all polytope bodies (Box,
ConvexHull): box and rock scenes, the common case.

narrowphase.collide serves any caller, and pays for that in Python: per-pair gathers,
quaternion matrices, the Manifolds record. Here the world hands over its body arrays and
candidate pairs, and one kernel does the rest, with the pair table's manifold reuse: the SAT
queries and the face-biased choice (sat_kernels), every manifold (clip_kernels.manifolds;
both through convex_pairs.polytope_rows, as narrowphase.collide's polytope pairs), the
soundness check (world.guard.sound_manifolds' rule) and the packing of the manifolds that
have points. Same kernels, same arithmetic, same answers as narrowphase.collide given the
same rotation matrices.
"""
import numpy as np

from ..core import detmath, quat
from ..core.jit import kernel
from . import clip, clip_kernels, manifold_cache
from .contacts import PairTable, table_row
from .convex_pairs import COMPOUND, POLYTOPE, TRIANGLE_MESH, culled_rows, polytope_rows, sound
from .manifold_cache import rebuild_row, valid_row
from .narrowphase import shape_args
from .sat import ABS_TOL, PRUNE_GAUSS, REL_TOL, _box_edge_lut, _edge_arcs

# clip_kernels.manifolds' constants (as narrowphase._CONSTS).
_CONSTS = np.array([clip.EDGE_CLIP_COS, clip.EDGE_INC_COS, REL_TOL, ABS_TOL])
_NO_TABLE = PairTable()     # what _collide reads when nothing may be reused


# reuse modes of _collide: no reuse; each pair on its own; all pairs or none.
NO_REUSE, REUSE_EACH, REUSE_ALL = 0, 1, 2
# _manifolds' row[i] of a pair the table does not answer: two polytopes (SAT and clipping),
# or not (convex_pairs.culled_rows); a table row (>= 0) otherwise.
FRESH, ROUND = -1, -2


@kernel
def _collide(ia, ib, sid, pos, q, rot_body, margin, reuse, table_rows, geo_in, distance,
             cos_half_angle, sat_tab, arcs, lut, clip_tab, consts, man, geo, pair):
    """Manifolds of the M body pairs (ia, ib), all of two polytopes, with at least one point
    and sound, packed to the front of the outputs man (normal, points, separation, count,
    ids, axis_kind, axis_index) and geo (manifold_cache.COLUMNS' arrays: what the pair table
    keeps), with pair (their index in ia), in pair order. Returns how many.

    A pair whose manifold the pair table (table_rows: keys, sub, count, ids; geo_in: its
    captured geometry) can give again (manifold_cache.valid_row) is rebuilt from it and
    keeps its capture; reuse says which may (NO_REUSE, REUSE_EACH, or REUSE_ALL: only if every
    pair can). The others go through the SAT and the clipper and are captured at these poses.
    This kernel allocates; the per-pair loops run in kernels without reference counting
    (engine.core.jit.kernel's refcount=False)."""
    m = ia.shape[0]
    none = np.zeros(0, np.int64)
    rnd = (none, np.empty((0, 3)), np.empty((0, 4, 3)), np.empty((0, 4)),
           np.empty((0, 4), np.int64), none, np.empty(0, np.int8), np.empty((0, 2), np.int64))
    return _manifolds(ia, ib, sid, pos, q, rot_body, margin, reuse, table_rows, geo_in,
                      distance, cos_half_angle, sat_tab, arcs, lut, clip_tab, consts,
                      np.full(m, FRESH, np.int64), rnd, man, geo, pair)


@kernel
def _collide_convex(ia, ib, sid, pos, q, qn, rot_body, margin, reuse, table_rows, geo_in,
                    distance, cos_half_angle, tabs, consts, clip_consts, man, geo, pair):
    """_collide for pairs of convex shapes of any kinds (tabs, consts: narrowphase.shape_args;
    qn the normalised quaternions): the pairs of two polytopes as _collide takes them, the
    others (a sphere, capsule, cylinder or cone in them) through convex_pairs.culled_rows,
    never reused (captured as manifold_cache.empty: a NaN pose), all packed in pair order.
    Returns how many, or -1 (nothing written) if a shape is a compound or a triangle mesh."""
    kind = tabs[0]
    m = ia.shape[0]
    row = np.full(m, FRESH, np.int64)
    for i in range(m):
        ka = kind[sid[ia[i]]]
        kb = kind[sid[ib[i]]]
        if _nonconvex(ka) or _nonconvex(kb):
            return -1
        if ka != POLYTOPE or kb != POLYTOPE:
            row[i] = ROUND
    rnd = culled_rows(ia, ib, sid, pos, qn, margin, row == ROUND, tabs, consts)
    return _manifolds(ia, ib, sid, pos, q, rot_body, margin, reuse, table_rows, geo_in,
                      distance, cos_half_angle, tabs[3], tabs[4], tabs[5], tabs[6],
                      clip_consts, row, rnd, man, geo, pair)


@kernel(inline="always")
def _nonconvex(kind):
    """A compound or a triangle mesh: nonconvex.collide_bodies' shapes."""
    if kind == COMPOUND:
        return True
    return kind == TRIANGLE_MESH


@kernel
def _manifolds(ia, ib, sid, pos, q, rot_body, margin, reuse, table_rows, geo_in, distance,
               cos_half_angle, sat_tab, arcs, lut, clip_tab, consts, row, rnd, man, geo, pair):
    """The two entry kernels' work once row says which pairs are not two polytopes (ROUND,
    their manifolds in rnd: convex_pairs.culled_rows' answer) and the rest FRESH."""
    m = ia.shape[0]
    # 1. Which polytope pairs the table answers.
    if reuse != NO_REUSE and table_rows[0].shape[0]:
        _reused_rows(ia, ib, pos, q, margin, reuse, table_rows[0], table_rows[1], geo_in,
                     distance, cos_half_angle, row, np.empty(3), np.empty(3), np.empty(4),
                     np.empty(4))
    # 2. The others: SAT and clipping, over the fresh pairs packed.
    f = 0
    for i in range(m):
        if row[i] == FRESH:
            f += 1
    ids_a = np.empty(f, np.int64)
    ids_b = np.empty(f, np.int64)
    pos_a = np.empty((f, 3))
    pos_b = np.empty((f, 3))
    rot_a = np.empty((f, 3, 3))
    rot_b = np.empty((f, 3, 3))
    marg = np.empty(f)
    _gather_fresh(ia, ib, sid, pos, rot_body, margin, row, ids_a, ids_b, pos_a, pos_b,
                  rot_a, rot_b, marg)
    nrm = np.empty((f, 3))
    a_kind = np.empty(f, np.int8)
    a_index = np.empty((f, 2), np.int64)
    pts = np.zeros((f, 4, 3))
    s4 = np.full((f, 4), np.inf)
    id4 = np.zeros((f, 4), np.int64)
    cnt = np.zeros(f, np.int64)
    polytope_rows(ids_a, ids_b, pos_a, rot_a, pos_b, rot_b, marg, sat_tab, arcs, lut, clip_tab,
                  consts, PRUNE_GAUSS, True, True, nrm, a_kind, a_index, pts, s4, id4, cnt,
                  np.empty(f))
    # 3. Every manifold with points, in pair order.
    return _pack(ia, ib, pos, q, margin, row, table_rows[2], table_rows[3], geo_in,
                 (nrm, pts, s4, id4, cnt, a_kind, a_index), rnd, man, geo, pair,
                 np.empty((3, 3)), np.empty((3, 3)), np.empty(3), np.empty(3))


@kernel(refcount=False)
def _reused_rows(ia, ib, pos, q, margin, reuse, t_keys, t_sub, geo_in, distance,
                 cos_half_angle, row, p0, p1, r0, r1):
    """_manifolds' step 1: row[i] = the pair table row that gives polytope pair i's manifold
    again (manifold_cache.valid_row), else FRESH (ROUND rows stay); under REUSE_ALL all
    FRESH unless every polytope pair has one. Returns how many have one.
    p0, p1 (3,), r0, r1 (4,) scratch."""
    g_pa, g_qa, g_pb, g_qb, g_n, g_points, g_sep, g_margin, g_kind, g_index = geo_in
    m = ia.shape[0]
    n_poly = 0
    n_reused = 0
    for i in range(m):
        if row[i] == ROUND:
            continue
        n_poly += 1
        a = ia[i]
        b = ib[i]
        r = table_row(t_keys, t_sub, (np.int64(a) << 32) | np.int64(b), 0)
        if r >= 0 and valid_row(g_pa[r], g_qa[r], g_pb[r], g_qb[r], g_margin[r], pos[a], q[a],
                                pos[b], q[b], margin[i], distance, cos_half_angle, p0, p1, r0,
                                r1):
            row[i] = r
            n_reused += 1
    if reuse == REUSE_ALL and n_reused < n_poly:
        for i in range(m):
            if row[i] >= 0:
                row[i] = FRESH
        n_reused = 0
    return n_reused


@kernel(refcount=False)
def _gather_fresh(ia, ib, sid, pos, rot_body, margin, row, ids_a, ids_b, pos_a, pos_b, rot_a,
                  rot_b, marg):
    """_manifolds' step 2's inputs: the FRESH pairs, in order, with their shapes, body
    origins, rotations and margins."""
    j = 0
    for i in range(ia.shape[0]):
        if row[i] != FRESH:
            continue
        a = ia[i]
        b = ib[i]
        ids_a[j] = sid[a]
        ids_b[j] = sid[b]
        for k in range(3):
            pos_a[j, k] = pos[a, k]
            pos_b[j, k] = pos[b, k]
            for c in range(3):
                rot_a[j, k, c] = rot_body[a, k, c]
                rot_b[j, k, c] = rot_body[b, k, c]
        marg[j] = margin[i]
        j += 1


@kernel(inline="always")
def _put(dst, src):
    """dst[:] = src for short 1-D rows (no temporary: inside a kernel without reference
    counting)."""
    for k in range(dst.shape[0]):
        dst[k] = src[k]


@kernel(inline="always")
def _nan(dst):
    """dst[:] = NaN for short 1-D rows (as _put)."""
    for k in range(dst.shape[0]):
        dst[k] = np.nan


@kernel(refcount=False)
def _put_round(rnd, k, out, man, geo):
    """_pack's ROUND row k of rnd into row out of man, if it has points and is sound, with
    manifold_cache.empty's capture (NaN pose and margin: never reused). Returns whether."""
    _, nrm, pts, s4, id4, cnt, a_kind, a_index = rnd
    c = cnt[k]
    if c == 0 or not sound(nrm[k], pts[k], s4[k], c):
        return False
    normal, points, sep, count, ids, axis_kind, axis_index = man
    o_pa, o_qa, o_pb, o_qb, o_n, o_points, o_sep, o_margin, o_kind, o_index = geo
    _put(normal[out], nrm[k])
    for p in range(4):
        _put(points[out, p], pts[k, p])
        _nan(o_points[out, p])
    _put(sep[out], s4[k])
    _put(ids[out], id4[k])
    count[out] = c
    axis_kind[out] = a_kind[k]
    _put(axis_index[out], a_index[k])
    _nan(o_pa[out])
    _nan(o_qa[out])
    _nan(o_pb[out])
    _nan(o_qb[out])
    _nan(o_n[out])
    _nan(o_sep[out])
    o_margin[out] = np.nan
    o_kind[out] = 0
    o_index[out, 0] = -1
    o_index[out, 1] = -1
    return True


@kernel(refcount=False)
def _pack(ia, ib, pos, q, margin, row, t_count, t_ids, geo_in, fresh_man, rnd, man, geo,
          pair, ta, tb, xa, xb):
    """_manifolds' step 3: every manifold with points, in pair order, into man and geo (see
    _collide): rebuilt from the table row (keeping its capture), or the fresh one (fresh_man:
    normal, points, separation, ids, count, axis kind and index of the fresh pairs in order)
    if it has points and is sound, captured at these poses; a ROUND pair's from rnd
    (convex_pairs.culled_rows' rows and arrays) if it has points and is sound, with a capture
    that is never reused. Returns how many. ta, tb (3, 3), xa, xb (3,) scratch."""
    g_pa, g_qa, g_pb, g_qb, g_n, g_points, g_sep, g_margin, g_kind, g_index = geo_in
    nrm, pts, s4, id4, cnt, a_kind, a_index = fresh_man
    normal, points, sep, count, ids, axis_kind, axis_index = man
    o_pa, o_qa, o_pb, o_qb, o_n, o_points, o_sep, o_margin, o_kind, o_index = geo
    out = 0
    j = 0
    k = 0
    for i in range(ia.shape[0]):
        a = ia[i]
        b = ib[i]
        r = row[i]
        if r == ROUND:
            if k < rnd[0].shape[0] and rnd[0][k] == i:
                k += 1
                if _put_round(rnd, k - 1, out, man, geo):
                    pair[out] = i
                    out += 1
            continue
        if r >= 0:                                  # rebuilt; the capture stays as it was
            rebuild_row(g_pa[r], g_qa[r], g_pb[r], g_qb[r], g_n[r], g_points[r], g_sep[r],
                        t_count[r], pos[a], q[a], pos[b], q[b], normal[out], points[out],
                        sep[out], ta, tb, xa, xb)
            count[out] = t_count[r]
            _put(ids[out], t_ids[r])
            axis_kind[out] = g_kind[r]
            _put(axis_index[out], g_index[r])
            _put(o_pa[out], g_pa[r])
            _put(o_qa[out], g_qa[r])
            _put(o_pb[out], g_pb[r])
            _put(o_qb[out], g_qb[r])
            _put(o_n[out], g_n[r])
            for p in range(4):
                _put(o_points[out, p], g_points[r, p])
            _put(o_sep[out], g_sep[r])
            o_margin[out] = g_margin[r]
        else:
            c = cnt[j]
            if c == 0 or not sound(nrm[j], pts[j], s4[j], c):
                j += 1
                continue
            _put(normal[out], nrm[j])
            for p in range(4):
                _put(points[out, p], pts[j, p])
            _put(sep[out], s4[j])
            _put(ids[out], id4[j])
            count[out] = c
            axis_kind[out] = a_kind[j]
            _put(axis_index[out], a_index[j])
            _put(o_pa[out], pos[a])                 # captured at these poses
            _put(o_qa[out], q[a])
            _put(o_pb[out], pos[b])
            _put(o_qb[out], q[b])
            _put(o_n[out], nrm[j])
            for p in range(4):
                _put(o_points[out, p], pts[j, p])
            _put(o_sep[out], s4[j])
            o_margin[out] = margin[i]
            j += 1
        o_kind[out] = axis_kind[out]
        _put(o_index[out], axis_index[out])
        pair[out] = i
        out += 1
    return out


def collide_polytope_bodies(table, sid, pos, q, rot, ia, ib, margin, pairs=None,
                            reuse=NO_REUSE, distance=0.0, angle=0.0):
    """Manifolds of body pairs (ia, ib) (M,) whose shapes (sid (N,) into the ShapeTable
    ``table``) are all polytopes, at body origins pos (N, 3), orientations q (N, 4) and their
    rotation matrices rot (N, 3, 3), with speculative margins (M,). pairs: the world's
    PairTable, whose captured manifolds are rebuilt where reuse (NO_REUSE, REUSE_EACH,
    REUSE_ALL) allows and the pair's relative pose and margin moved less than distance (m)
    and angle (rad) since (engine.collision.manifold_cache).

    Returns (pair, out): the index into ia of each manifold with points (sorted, one per
    pair) and out, a dict of its arrays as World._narrowphase keeps them (normal, points,
    separation, count, ids, axis_kind, axis_index; geo, their captured geometry)."""
    man, geo, pair = _outputs(len(ia))
    sat_tab, arcs, lut, clip_tab = _table_args(table)
    k = _collide(ia, ib, sid, pos, q, rot, np.ascontiguousarray(margin, dtype=np.float64),
                 *_reuse_args(pairs, reuse, distance, angle), sat_tab, arcs, lut, clip_tab,
                 _CONSTS, man, geo, pair)
    return _answer(k, man, geo, pair)


def collide_convex_bodies(table, sid, pos, q, rot, ia, ib, margin, pairs=None,
                          reuse=NO_REUSE, distance=0.0, angle=0.0):
    """collide_polytope_bodies for pairs of convex bodies of any kinds in one kernel call: the
    pairs of two polytopes as there (reuse counts them only); the others (spheres, capsules,
    cylinders, cones) as narrowphase.collide's routes take them, at the normalised
    quaternions, behind a bounding-sphere cull, never reused (their captures are
    manifold_cache.empty's). Returns (pair, out) as collide_polytope_bodies, or None if a
    shape is a compound or a triangle mesh (nonconvex.collide_bodies takes those)."""
    man, geo, pair = _outputs(len(ia))
    tabs, consts = shape_args(table)
    k = _collide_convex(ia, ib, sid, pos, q, quat.normalize(q), rot,
                        np.ascontiguousarray(margin, dtype=np.float64),
                        *_reuse_args(pairs, reuse, distance, angle), tabs, consts, _CONSTS,
                        man, geo, pair)
    return None if k < 0 else _answer(k, man, geo, pair)


_MAN = (((3,), np.float64), ((4, 3), np.float64), ((4,), np.float64), ((), np.int64),
        ((4,), np.int64), ((), np.int8), ((2,), np.int64))
_MAN_NAMES = ("normal", "points", "separation", "count", "ids", "axis_kind", "axis_index")
_GEO = tuple(manifold_cache.COLUMNS.values())
_GEO_NAMES = tuple(manifold_cache.COLUMNS)


def _outputs(m):
    """The kernels' output arrays for m pairs: man, geo (tuples) and pair."""
    man = tuple(np.empty((m, *shape), dtype) for shape, dtype in _MAN)
    geo = tuple(np.empty((m, *shape), dtype) for shape, dtype in _GEO)
    return man, geo, np.empty(m, np.int64)


def _reuse_args(pairs, reuse, distance, angle):
    """The kernels' reuse, table_rows, geo_in, distance and cos_half_angle arguments."""
    if pairs is None or not len(pairs):
        reuse = NO_REUSE
    source = pairs if reuse != NO_REUSE else _NO_TABLE
    return (reuse, (source.keys, source.sub, source.count, source.ids),
            tuple(source.geo[name] for name in _GEO_NAMES), float(distance), _cos_half(angle))


def _answer(k, man, geo, pair):
    """(pair, out) of the first k rows the kernel packed."""
    out: dict = {name: v[:k] for name, v in zip(_MAN_NAMES, man)}
    out["geo"] = {name: v[:k] for name, v in zip(_GEO_NAMES, geo)}
    return pair[:k], out


_TABLE_ARGS: dict = {}     # id(table) -> (its published arrays, _table_args' answer)
_COS_HALF: dict = {}       # angle -> cos(angle / 2)


def _table_args(table):
    """The ShapeTable arrays _collide reads, as its tuples (sat_tab, arcs, lut, clip_tab):
    gathered once per build of the table (a pass read some thirty attributes and made four
    tuples), kept while the table publishes the same arrays."""
    _ = table.kind                      # (builds the table after a change)
    arrays = table._arrays
    hit = _TABLE_ARGS.get(id(table))
    if hit is not None and hit[0] is arrays:
        return hit[1]
    t = table
    sat_tab = (t.is_box, t.box_half, t.npoints, t.points, t.nfaces, t.planes, t.face_loops,
               t.nedges, t.edges, t.edge_dirs, t.edge_normals, t.edge_faces, t.bound_radius)
    args = (sat_tab, _edge_arcs(t), _box_edge_lut(), clip_kernels.table_arrays(t))
    if len(_TABLE_ARGS) > 64:
        _TABLE_ARGS.clear()
    _TABLE_ARGS[id(table)] = (arrays, args)
    return args


def _cos_half(angle):
    """cos(angle / 2) (detmath: the same in any process), once per angle."""
    c = _COS_HALF.get(angle)
    if c is None:
        if len(_COS_HALF) > 64:
            _COS_HALF.clear()
        c = _COS_HALF[angle] = float(detmath.cos(0.5 * angle))
    return c
