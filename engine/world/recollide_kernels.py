"""engine.world.recollide's take_again in three kernels: the bodies' poses and two copies.

A look that takes pairs again reads every body's pose (normalised orientation, rotation,
origin), then unpacks the narrowphase's answer (the pairs with points, packed) into one row
per pair taken and writes those rows into the pass's manifolds. In numpy that was some sixty
calls a look, several looks a frame: at 216 tumbling cubes more than the narrowphase's kernel
itself. The poses by numpy's arithmetic in numpy's order (body_poses) and plain copies, so
the numbers are the numpy version's.
"""

import numpy as np

from ..collision.sat import KIND_NONE
from ..core.jit import kernel
from ..core.quat import matrix_of, normalize_row, origin_row


@kernel(refcount=False)
def body_poses(x, q, com, qn, pos, rot):
    """Per body: qn (N, 4) its orientation q normalised, rot (N, 3, 3) its rotation, pos (N, 3)
    its origin x - qn com, exactly as quat.normalize, to_matrix and x - rotate(qn, com) give
    them (numpy sums a row's four squares left to right)."""
    for b in range(x.shape[0]):
        normalize_row(q, b, qn)
        matrix_of(qn[b], rot[b])
        origin_row(x, qn, com, b, pos)


@kernel(refcount=False)
def unpack(rows, hit, out, man, fresh):
    """The rows ``rows`` (K,) of the pass's manifolds man (normal, points, separation, count,
    ids, axis_kind, axis_index) taken again: hit (H,) the indices into rows of those the
    narrowphase answered with points, out their manifolds (the same arrays, packed, in hit's
    order). Writes fresh (normal, points, separation, count, ids, old_ids: (K, ...), the
    solver's input; a pair found apart keeps its old normal, no points, +inf separations) and
    the same into man's rows, with the axis (none for a pair found apart). old_ids: the ids
    man held."""
    o_normal, o_points, o_sep, o_count, o_ids, o_kind, o_index = out
    m_normal, m_points, m_sep, m_count, m_ids, m_kind, m_index = man
    f_normal, f_points, f_sep, f_count, f_ids, f_old = fresh
    h = 0
    for j in range(rows.shape[0]):
        r = rows[j]
        for p in range(m_ids.shape[1]):
            f_old[j, p] = m_ids[r, p]
        if h < hit.shape[0] and hit[h] == j:
            for k in range(3):
                f_normal[j, k] = o_normal[h, k]
            for p in range(f_points.shape[1]):
                for k in range(3):
                    f_points[j, p, k] = o_points[h, p, k]
                f_sep[j, p] = o_sep[h, p]
                f_ids[j, p] = o_ids[h, p]
            f_count[j] = o_count[h]
            m_kind[r] = o_kind[h]
            m_index[r, 0] = o_index[h, 0]
            m_index[r, 1] = o_index[h, 1]
            h += 1
        else:
            for k in range(3):
                f_normal[j, k] = m_normal[r, k]
            for p in range(f_points.shape[1]):
                for k in range(3):
                    f_points[j, p, k] = 0.0
                f_sep[j, p] = np.inf
                f_ids[j, p] = 0
            f_count[j] = 0
            m_kind[r] = KIND_NONE
            m_index[r, 0] = -1
            m_index[r, 1] = -1
        for k in range(3):
            m_normal[r, k] = f_normal[j, k]
        for p in range(f_points.shape[1]):
            for k in range(3):
                m_points[r, p, k] = f_points[j, p, k]
            m_sep[r, p] = f_sep[j, p]
            m_ids[r, p] = f_ids[j, p]
        m_count[r] = f_count[j]


@kernel(refcount=False)
def store_geometry(at, src, dst):
    """dst's rows at (H,) = src's rows in order, for the ten columns of
    engine.collision.manifold_cache.COLUMNS (the captures of the pairs taken again)."""
    s_pa, s_qa, s_pb, s_qb, s_n, s_points, s_sep, s_margin, s_kind, s_index = src
    d_pa, d_qa, d_pb, d_qb, d_n, d_points, d_sep, d_margin, d_kind, d_index = dst
    for j in range(at.shape[0]):
        r = at[j]
        for k in range(3):
            d_pa[r, k] = s_pa[j, k]
            d_pb[r, k] = s_pb[j, k]
            d_n[r, k] = s_n[j, k]
        for k in range(4):
            d_qa[r, k] = s_qa[j, k]
            d_qb[r, k] = s_qb[j, k]
        for p in range(s_points.shape[1]):
            for k in range(3):
                d_points[r, p, k] = s_points[j, p, k]
            d_sep[r, p] = s_sep[j, p]
        d_margin[r] = s_margin[j]
        d_kind[r] = s_kind[j]
        d_index[r, 0] = s_index[j, 0]
        d_index[r, 1] = s_index[j, 1]
