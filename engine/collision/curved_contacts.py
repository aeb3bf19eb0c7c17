"""Contact manifolds and exact distances for pairs involving a cylinder or a cone (curved.py).

The other shape may be anything convex: a polytope, a sphere, a capsule, another cylinder or
cone, or a mesh triangle. Compiled (curved_kernels.py: convex_pairs.shape_rows runs a shape
pair, mesh_contacts a batch of triangles), in A's frame (as gjk.py does):

1. Normal and signed distance: GJK on the cores through analytic support functions
   (shapes.curved.local_support_row); where the cores overlap, EPA on the same supports. Swelling radii
   (spheres, capsules) are subtracted as usual.
2. Supporting features along the normal (Jolt's GetSupportingFace idea): each shape gives the
   feature of its surface facing the other, within FLAT_DEG of the normal:
     cylinder: a cap (CAP_N rim points, exactly on the rim circle), a side segment (a line of
               the side), or the rim point;
     cone:     the base cap, a side segment (apex to a base rim point), or the apex/rim point;
     polytope: the face most aligned with the normal, a top edge, or the support vertex;
     capsule:  its core segment or end (swollen); sphere: a point; triangle: face/edge/vertex.
3. If either feature is a face, it is the reference: the other feature (polygon, segment or
   point) is clipped to it (mesh_kernels.clip_row: the exact intersection polygon seen along the
   face normal, every point with its true height above the face), the contact normal becomes
   the face normal (exact; a cylinder lying on a face gets its side line, 2 points; standing
   on its cap, the rim points inside the face, reduced to 4), and clip_kernels.reduce4_row keeps 4.
   Two near-parallel segments (cylinders side by side) give the 2 ends of their overlap.
   Anything else (a rim on a face tilted beyond FLAT_DEG, crossing sides): 1 point at the
   GJK/EPA witnesses with the exact signed distance.
Every point's separation is its own true gap along the normal (never deeper than the truth),
so the feature tolerance only decides how many points are offered.

Feature ids: ID_CURVED in bits 59-61, A's feature code bits 48-57, B's 38-47, reference side
bit 37, route bits 12-15 (mesh_contacts ROUTE_* or ROUTE_POINT / ROUTE_SEGMENT), code 0-11 (the
polygon vertex / crossing indices): a rim point keeps its id while it rests, a rolling side
line keeps its two end ids.
"""
import numpy as np

from ..core.vec import per_row
from ..shapes.curved import CAP_N
from . import curved_kernels
from .curved_kernels import AXIS_ROUND


def curved_width(table):
    """Feature polygons' padded width: the widest cap or flat side of the table (the clip
    candidates' layout, and so the ids' codes, depend on it)."""
    return max(CAP_N, int(table.patch_sizes.max()) if table.patch_sizes.size else 3, 3)


def curved_triangles(table, ids, t, N, active, margin, tri_index):
    """mesh_contacts routine: cylinder/cone (local frame) vs one-sided triangles t (M, 3, 3)
    facing it with normal N. A normal from an inactive triangle edge or vertex (flat or concave
    shared edge) is replaced by the face normal, as for the other shapes."""
    from .mesh_contacts import _ids as tri_ids
    from .narrowphase import Manifolds
    c = np.ascontiguousarray
    m = len(ids)
    out = Manifolds(m)
    marg = per_row(margin, m)
    cid = np.zeros((m, 4), dtype=np.int64)
    curved_kernels.curved_triangle_rows(
        curved_kernels.curved_table(table), c(ids, dtype=np.int64), c(t, dtype=np.float64),
        c(N, dtype=np.float64), c(active, dtype=bool), marg, curved_width(table), out.normal,
        out.points, out.separation, cid, out.count, out.distance)
    used = np.arange(4)[None] < out.count[:, None]
    # Mesh id layout (triangle in bits 28-58): the low 28 bits carry code and route (0-15),
    # the reference side (16) and the shape's feature code (17-26).
    low = (cid & np.int64(0xFFFF)) | (((cid >> 37) & 1) << 16) | (((cid >> 48) & 0x3FF) << 17)
    out.ids[:] = np.where(used, tri_ids(tri_index, 0, 0, 0, 0)[:, None] | low, 0)
    out.axis_kind[:] = AXIS_ROUND
    return out


def curved_pair_distance(table, ids_a, pos_a, rot_a, ids_b, pos_b, rot_b):
    """Exact signed distance of M pairs (either shape may be curved; rotation matrices), for
    queries.pair_distance. Returns distance (M,), normal A -> B, world surface points on A and
    B, core overlap (M,)."""
    c = np.ascontiguousarray
    m = len(ids_a)
    d, n, wa, wb = np.zeros(m), np.zeros((m, 3)), np.zeros((m, 3)), np.zeros((m, 3))
    over = np.zeros(m, dtype=bool)
    curved_kernels.curved_distance_rows(
        curved_kernels.curved_table(table), c(ids_a, dtype=np.int64), c(pos_a, dtype=np.float64),
        c(rot_a, dtype=np.float64), c(ids_b, dtype=np.int64), c(pos_b, dtype=np.float64),
        c(rot_b, dtype=np.float64), d, n, wa, wb, over)
    return d, n, wa, wb, over
