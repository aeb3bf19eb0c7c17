"""Persistent manifolds: a convex pair's manifold is reused while its two bodies barely moved
relative to each other since it was computed (Bullet's persistent manifolds; Jolt's body pair
cache, whose default tolerances of 1 mm and 2 degrees WorldSettings copies).

A fresh manifold is captured as it came out (world normal, points, separations) with the two
bodies' poses at that time. A later collision pass that finds the pair's relative pose (B in
A's frame) within ``manifold_reuse_distance`` and ``manifold_reuse_angle`` of the captured one,
and its speculative margin not grown by more than that distance, rebuilds the manifold instead
of running the narrowphase: each point stands for two surface points (midpoint -+ half the
separation along the normal), carried with their bodies to the new poses; the normal turns with
A; the separation is the gap of the two points along it. The points keep their feature ids
(warm starting is unchanged) and the separations follow the bodies' motion exactly to first
order; what reuse can miss is a feature that comes into contact within the tolerance, which is
what the tolerance bounds. The tolerance is measured from the capture, not from the last reuse,
so errors do not accumulate. Capturing is a few gathers; the frame changes are paid only when
a manifold is reused.

The captured geometry lives in the pair table (engine.collision.contacts.PairTable) next to the warm-start
impulses, so get_state / set_state replay bit for bit.
"""
import math

import numpy as np

from ..core.jit import kernel

# Geometry columns per manifold row, and their trailing shapes and dtypes.
COLUMNS = {
    "pos_a": ((3,), np.float64),        # A's and B's poses at capture (origin, quaternion)
    "q_a": ((4,), np.float64),
    "pos_b": ((3,), np.float64),
    "q_b": ((4,), np.float64),
    "normal": ((3,), np.float64),       # the manifold as computed (world)
    "points": ((4, 3), np.float64),
    "separation": ((4,), np.float64),
    "margin": ((), np.float64),         # speculative margin it was computed with
    "axis_kind": ((), np.int8),         # debug: the SAT axis at capture
    "axis_index": ((2,), np.int64),
}


def empty(m=0):
    """Geometry of m rows that can never be reused (NaN capture pose)."""
    out = {}
    for name, (shape, dtype) in COLUMNS.items():
        fill = np.nan if dtype == np.float64 else (-1 if name == "axis_index" else 0)
        out[name] = np.full((m,) + shape, fill, dtype=dtype)
    return out


@kernel(inline="always")
def _relative(pa, qa, pb, qb, out_p, out_q):
    """B's origin (out_p) and orientation (out_q) in A's frame: conj(qa) (pb - pa) qa and
    conj(qa) qb (quat.rotate and quat.multiply's arithmetic)."""
    w, x, y, z = qa[0], -qa[1], -qa[2], -qa[3]
    v0, v1, v2 = pb[0] - pa[0], pb[1] - pa[1], pb[2] - pa[2]
    t0 = 2.0 * (y * v2 - z * v1)
    t1 = 2.0 * (z * v0 - x * v2)
    t2 = 2.0 * (x * v1 - y * v0)
    out_p[0] = v0 + w * t0 + (y * t2 - z * t1)
    out_p[1] = v1 + w * t1 + (z * t0 - x * t2)
    out_p[2] = v2 + w * t2 + (x * t1 - y * t0)
    bw, bx, by, bz = qb[0], qb[1], qb[2], qb[3]
    out_q[0] = w * bw - x * bx - y * by - z * bz
    out_q[1] = w * bx + x * bw + y * bz - z * by
    out_q[2] = w * by - x * bz + y * bw + z * bx
    out_q[3] = w * bz + x * by - y * bx + z * bw


@kernel(inline="always")
def valid_row(g_pa, g_qa, g_pb, g_qb, g_margin, pos_a, q_a, pos_b, q_b, margin, distance,
              cos_half_angle, p0, p1, r0, r1):
    """Whether one captured row (g_...) may be reused at poses pos_a, q_a, pos_b, q_b and
    margin: the relative translation moved less than distance, the relative rotation turned
    less than the angle whose half-angle cosine is cos_half_angle, the margin grew by less
    than distance. p0, p1 (3,), r0, r1 (4,) scratch."""
    _relative(g_pa, g_qa, g_pb, g_qb, p0, r0)
    _relative(pos_a, q_a, pos_b, q_b, p1, r1)
    d0, d1, d2 = p1[0] - p0[0], p1[1] - p0[1], p1[2] - p0[2]
    moved = d0 * d0 + d1 * d1 + d2 * d2
    cos_half = abs(r0[0] * r1[0] + r0[1] * r1[1] + r0[2] * r1[2] + r0[3] * r1[3])
    # NaN rows (never reusable) compare False
    return (moved < distance * distance and cos_half > cos_half_angle
            and margin <= g_margin + distance)


@kernel(inline="always")
def _turn(q, q0, m):
    """Rotation matrix (quat.to_matrix) of q conj(q0): from the capture pose to now."""
    w = q[0] * q0[0] + q[1] * q0[1] + q[2] * q0[2] + q[3] * q0[3]
    x = -q[0] * q0[1] + q[1] * q0[0] - q[2] * q0[3] + q[3] * q0[2]
    y = -q[0] * q0[2] + q[1] * q0[3] + q[2] * q0[0] - q[3] * q0[1]
    z = -q[0] * q0[3] - q[1] * q0[2] + q[2] * q0[1] + q[3] * q0[0]
    xx, yy, zz = x * x, y * y, z * z
    xy, xz, yz = x * y, x * z, y * z
    wx, wy, wz = w * x, w * y, w * z
    m[0, 0] = 1 - 2 * (yy + zz)
    m[0, 1] = 2 * (xy - wz)
    m[0, 2] = 2 * (xz + wy)
    m[1, 0] = 2 * (xy + wz)
    m[1, 1] = 1 - 2 * (xx + zz)
    m[1, 2] = 2 * (yz - wx)
    m[2, 0] = 2 * (xz - wy)
    m[2, 1] = 2 * (yz + wx)
    m[2, 2] = 1 - 2 * (xx + yy)


@kernel(inline="always")
def rebuild_row(g_pa, g_qa, g_pb, g_qb, g_n, g_points, g_sep, count, pos_a, q_a, pos_b, q_b,
                normal, points, sep, ta, tb, xa, xb):
    """One captured row (g_...) with count used slots rebuilt at the current poses, into
    normal (3,), points (4, 3), sep (4,) (unused slots: +inf separation, zero points). Each
    point stands for its two surface points (midpoint -+ half the separation along the
    normal), carried with their bodies from the capture poses; the normal turns with A.
    ta, tb (3, 3), xa, xb (3,) scratch."""
    _turn(q_a, g_qa, ta)
    _turn(q_b, g_qb, tb)
    for k in range(3):
        normal[k] = ta[k, 0] * g_n[0] + ta[k, 1] * g_n[1] + ta[k, 2] * g_n[2]
    for j in range(4):
        if j >= count:
            sep[j] = np.inf
            points[j, :] = 0.0
            continue
        h = 0.5 * g_sep[j]
        for k in range(3):
            xa[k] = g_points[j, k] - h * g_n[k] - g_pa[k]
            xb[k] = g_points[j, k] + h * g_n[k] - g_pb[k]
        s = 0.0
        for k in range(3):
            pa = (ta[k, 0] * xa[0] + ta[k, 1] * xa[1] + ta[k, 2] * xa[2]) + pos_a[k]
            pb = (tb[k, 0] * xb[0] + tb[k, 1] * xb[1] + tb[k, 2] * xb[2]) + pos_b[k]
            s += (pb - pa) * normal[k]
            points[j, k] = 0.5 * (pa + pb)
        sep[j] = s


@kernel(refcount=False)
def mark_pairs(sel, ia, ib, x, q, normal, p0, q0, n0):
    """For the pairs sel of (ia, ib): B's centre and orientation in A's frame now into p0,
    q0, and the normal (world, (len(sel), 3)) in A's frame into n0 (engine.world.recollide:
    the poses a pair's manifold was taken at)."""
    for j in range(sel.shape[0]):
        k = sel[j]
        a = ia[k]
        b = ib[k]
        _relative(x[a], q[a], x[b], q[b], p0[k], q0[k])
        w, u0, u1, u2 = q[a, 0], -q[a, 1], -q[a, 2], -q[a, 3]
        v0, v1, v2 = normal[j, 0], normal[j, 1], normal[j, 2]
        t0 = 2.0 * (u1 * v2 - u2 * v1)
        t1 = 2.0 * (u2 * v0 - u0 * v2)
        t2 = 2.0 * (u0 * v1 - u1 * v0)
        n0[k, 0] = v0 + w * t0 + (u1 * t2 - u2 * t1)
        n0[k, 1] = v1 + w * t1 + (u2 * t0 - u0 * t2)
        n0[k, 2] = v2 + w * t2 + (u0 * t1 - u1 * t0)


@kernel(refcount=False)
def pair_travel(ia, ib, x, q, p0, q0, n0, reach, slide, out, p, r):
    """out (K,): how far each pair's surfaces moved past each other since mark_pairs (m): the
    relative turn times reach, plus where slide the relative slide across the normal n0;
    p (3,), r (4,) scratch."""
    for k in range(ia.shape[0]):
        _relative(x[ia[k]], q[ia[k]], x[ib[k]], q[ib[k]], p, r)
        d0, d1, d2 = p[0] - p0[k, 0], p[1] - p0[k, 1], p[2] - p0[k, 2]
        along = d0 * n0[k, 0] + d1 * n0[k, 1] + d2 * n0[k, 2]
        d0 -= along * n0[k, 0]
        d1 -= along * n0[k, 1]
        d2 -= along * n0[k, 2]
        # dq = conj(q0) r (quat.multiply's order)
        w, x0, y0, z0 = q0[k, 0], -q0[k, 1], -q0[k, 2], -q0[k, 3]
        dw = w * r[0] - x0 * r[1] - y0 * r[2] - z0 * r[3]
        dx = w * r[1] + x0 * r[0] + y0 * r[3] - z0 * r[2]
        dy = w * r[2] - x0 * r[3] + y0 * r[0] + z0 * r[1]
        dz = w * r[3] + x0 * r[2] - y0 * r[1] + z0 * r[0]
        turn = 2.0 * math.atan2(math.sqrt(dx * dx + dy * dy + dz * dz), abs(dw))
        out[k] = turn * reach[k]
        if slide[k]:
            out[k] += math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
