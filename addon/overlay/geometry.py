"""What the overlay draws for one frame, as plain numpy: no bpy, no gpu.

Input is what the simulation knows about a frame: the engine shapes of the bodies, their poses
(origin position + quaternion (w, x, y, z)), optional velocities / centres of mass / sleeping
flags from the stored state, and optional per-step debug record of the engine
(an ``engine.StepRecord``: contact positions, normals, separations, impulses, ...). Output is a
list of ``Layer`` objects: point sprites or line segments with one RGBA colour per vertex,
which draw.py uploads as batches. Keeping this side free of Blender makes every picture in the
viewport unit-testable against the engine and against independent geometry.

All builders are vectorised over contacts, segments and bodies; the only Python loops are over
the distinct *shapes* (few: 1000 cubes share one Box) and a fixed number of circle segments.
"""
import numpy as np

from ...engine.collision import narrowphase
from ...engine.collision.epa import epa
from ...engine.collision.gjk import gjk
from ...engine.collision.narrowphase import AXIS_CORE_EDGE, AXIS_CORE_FACE, AXIS_ROUND  # noqa: F401
from ...engine.collision.queries import pair_distance
from ...engine.collision.sat import EDGE, FACE_A, FACE_B
from ...engine.collision.shape_table import ShapeTable
from ...engine.core import quat
from ...engine.core.kinds import BodyKind, ShapeKind
from ...engine.dynamics.solver import tangent_basis
from ...engine.shapes.curved import curved_aabb, is_curved

POINTS, LINES = "POINTS", "LINES"

# 12 edges of a box whose corner i has x = bit 0, y = bit 1, z = bit 2 (as engine.shapes.primitives.Box).
BOX_EDGES = np.array([[0, 1], [2, 3], [4, 5], [6, 7], [0, 2], [1, 3], [4, 6], [5, 7],
                      [0, 4], [1, 5], [2, 6], [3, 7]], dtype=np.int64)
_CORNER_BITS = np.array([[(i >> k) & 1 for k in range(3)] for i in range(8)], dtype=bool)
# The 6 edges of a tetrahedron's 4 slots; a simplex of n points uses the edges inside 0..n-1.
_SIMPLEX_EDGES = np.array([[0, 1], [0, 2], [1, 2], [0, 3], [1, 3], [2, 3]], dtype=np.int64)



class Layer:
    """One batch: ``kind`` POINTS or LINES (consecutive vertex pairs), ``coords`` (n, 3) and
    ``colours`` (n, 4) float32, ``size`` in pixels (point diameter or line width)."""
    __slots__ = ("colours", "coords", "kind", "name", "size")

    def __init__(self, name, kind, coords, colours, size=1.0):
        coords = np.ascontiguousarray(np.asarray(coords, dtype=np.float32).reshape(-1, 3))
        colours = np.asarray(colours, dtype=np.float32)
        if colours.ndim == 1:
            colours = np.broadcast_to(colours, (len(coords), 4))
        self.name, self.kind, self.size = name, kind, float(size)
        self.coords = coords
        self.colours = np.ascontiguousarray(colours.reshape(-1, 4))
        if len(self.colours) != len(self.coords):
            raise ValueError(f"layer {name}: {len(coords)} vertices but {len(colours)} colours")
        if kind == LINES and len(coords) % 2:
            raise ValueError(f"layer {name}: a line layer needs an even number of vertices")

    def __len__(self):
        return len(self.coords)

    @property
    def segments(self):
        """(n/2, 2, 3) view of a line layer."""
        return self.coords.reshape(-1, 2, 3)

    def __repr__(self):
        return f"Layer({self.name!r}, {self.kind}, {len(self)} vertices)"


def lines(name, segments, colours, width=1.0):
    """A LINES layer from segments (n, 2, 3); colours (4,), (n, 4) per segment or (n, 2, 4)."""
    seg = np.asarray(segments, dtype=np.float64).reshape(-1, 2, 3)
    col = np.asarray(colours, dtype=np.float32)
    if col.ndim == 2 and len(col) == len(seg) and col.shape[1] == 4:
        col = np.repeat(col, 2, axis=0)
    elif col.ndim == 3:
        col = col.reshape(-1, 4)
    return Layer(name, LINES, seg.reshape(-1, 3), col, width)


def points(name, coords, colours, size=6.0):
    return Layer(name, POINTS, coords, colours, size)


# -- colours ----------------------------------------------------------------------------------
# A perceptually ordered ramp (blue -> cyan -> green -> yellow -> red): low to high.
_RAMP = np.array([[0.15, 0.35, 1.0], [0.0, 0.85, 0.9], [0.2, 0.9, 0.2], [1.0, 0.9, 0.0],
                  [1.0, 0.15, 0.05]])


def ramp(values, lo, hi, alpha=1.0):
    """RGBA (n, 4) of values mapped linearly from [lo, hi] onto the ramp (clamped)."""
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    span = hi - lo
    t = np.clip((v - lo) / span, 0.0, 1.0) if span > 0 else np.full(len(v), 0.5)
    t = np.where(np.isfinite(t), t, 0.0)
    x = t * (len(_RAMP) - 1)
    i = np.minimum(x.astype(np.int64), len(_RAMP) - 2)
    f = (x - i)[:, None]
    rgb = _RAMP[i] * (1.0 - f) + _RAMP[i + 1] * f
    return np.concatenate((rgb, np.full((len(v), 1), alpha)), axis=1).astype(np.float32)


# -- small vector helpers ---------------------------------------------------------------------
def perpendiculars(d):
    """Two unit vectors (n, 3) orthogonal to each direction d (n, 3) and to each other."""
    d = np.asarray(d, dtype=np.float64).reshape(-1, 3)
    n = d / np.maximum(np.linalg.norm(d, axis=1, keepdims=True), 1e-300)
    helper = np.where((np.abs(n[:, 0]) < 0.6)[:, None], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0])
    u = np.cross(n, helper)
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    return u, np.cross(n, u)


def arrows(starts, vectors, head=0.2, min_head=0.0):
    """Segments (n * 3, 2, 3) of arrows: the shaft and two head strokes of length
    ``head * |vector|`` (at least ``min_head``) at 25 degrees from it. Zero vectors give
    degenerate (invisible) segments, keeping a fixed 3 segments per arrow."""
    p = np.asarray(starts, dtype=np.float64).reshape(-1, 3)
    v = np.asarray(vectors, dtype=np.float64).reshape(-1, 3)
    tip = p + v
    length = np.linalg.norm(v, axis=1, keepdims=True)
    u, _ = perpendiculars(np.where(length > 0, v, [0.0, 0.0, 1.0]))
    back = -v / np.maximum(length, 1e-300)
    h = np.maximum(head * length, min_head) * (length > 0)
    c, s = np.cos(np.radians(25.0)), np.sin(np.radians(25.0))
    h1 = tip + h * (c * back + s * u)
    h2 = tip + h * (c * back - s * u)
    seg = np.stack((np.stack((p, tip), 1), np.stack((tip, h1), 1), np.stack((tip, h2), 1)), 1)
    return seg.reshape(-1, 2, 3)


def circle(radius, centre, axis_u, axis_v, segments=24):
    """Segments (segments, 2, 3) of a circle in the plane spanned by two unit axes."""
    t = np.linspace(0.0, 2.0 * np.pi, segments + 1)
    pts = (np.asarray(centre, dtype=np.float64)[None]
           + radius * (np.cos(t)[:, None] * np.asarray(axis_u, dtype=np.float64)[None]
                       + np.sin(t)[:, None] * np.asarray(axis_v, dtype=np.float64)[None]))
    return np.stack((pts[:-1], pts[1:]), axis=1)


def _arc(radius, centre, axis_u, axis_v, t0, t1, segments):
    t = np.linspace(t0, t1, segments + 1)
    pts = (np.asarray(centre, dtype=np.float64)[None]
           + radius * (np.cos(t)[:, None] * np.asarray(axis_u, dtype=np.float64)[None]
                       + np.sin(t)[:, None] * np.asarray(axis_v, dtype=np.float64)[None]))
    return np.stack((pts[:-1], pts[1:]), axis=1)


# -- shapes -----------------------------------------------------------------------------------
def local_wireframe(shape, segments=24):
    """Segments (E, 2, 3) outlining an engine shape in its own frame.

    Polytopes (Box, ConvexHull): their true edges (a cube has 12: coplanar hull triangles
    are merged into faces by the engine, so no diagonals). Spheres: three great circles.
    Capsules: the two rims, four side lines and the cap arcs in the XZ and YZ planes. A shape
    with ``parts`` (a compound: (shape, position, quaternion) per part) outlines every part.
    """
    ex, ey, ez = np.eye(3)
    parts = getattr(shape, "parts", None)
    if parts is not None:
        out = []
        for part in parts:
            sub, pos, q = part[0], np.asarray(part[1], float), np.asarray(part[2], float)
            seg = local_wireframe(sub, segments)
            out.append(seg @ quat.to_matrix_normalized(q).T + pos)
        return np.concatenate(out) if out else np.zeros((0, 2, 3))
    kind = getattr(shape, "kind", None)
    r = float(getattr(shape, "radius", 0.0))
    if kind == ShapeKind.SPHERE:
        c = np.zeros(3)
        return np.concatenate((circle(r, c, ex, ey, segments), circle(r, c, ey, ez, segments),
                               circle(r, c, ez, ex, segments)))
    if kind == ShapeKind.CAPSULE:
        hh = float(shape.half_height)
        top, bot = hh * ez, -hh * ez
        half = max(segments // 2, 2)
        side = np.array([[bot + r * d, top + r * d] for d in (ex, -ex, ey, -ey)])
        return np.concatenate((
            circle(r, top, ex, ey, segments), circle(r, bot, ex, ey, segments), side,
            _arc(r, top, ex, ez, 0.0, np.pi, half), _arc(r, top, ey, ez, 0.0, np.pi, half),
            _arc(r, bot, ex, -ez, 0.0, np.pi, half), _arc(r, bot, ey, -ez, 0.0, np.pi, half)))
    if kind in (ShapeKind.CYLINDER, ShapeKind.CONE):
        return curved_wireframe(kind, r, float(shape.half_height), segments)
    verts = np.asarray(shape.vertices if hasattr(shape, "vertices") else shape.core_points,
                       dtype=np.float64)
    edges = getattr(shape, "edges", None)
    if edges is None:  # a bare point set: its points only (degenerate segments)
        return np.stack((verts, verts), axis=1)
    return verts[np.asarray(edges, dtype=np.int64)]


def curved_wireframe(kind, r, hh, segments=24):
    """Cylinder: both rims and four side lines. Cone: the base rim and four lines to the apex
    (base at -hh, apex at +hh on local Z, as engine/shapes/curved.py)."""
    ex, ey, ez = np.eye(3)
    bot = -hh * ez
    top = hh * ez
    cyl = kind == ShapeKind.CYLINDER
    rims = [circle(r, bot, ex, ey, segments)] + ([circle(r, top, ex, ey, segments)] if cyl else [])
    ends = [(bot + r * d, (top + r * d) if cyl else top) for d in (ex, -ex, ey, -ey)]
    return np.concatenate([*rims, np.array(ends)])


def posed_segments(local, shape_index, positions, rotations):
    """World segments of many bodies: ``local`` is a list of (E_s, 2, 3) arrays per shape id,
    ``shape_index`` (N,) each body's shape id, positions (N, 3), rotations (N, 3, 3).

    Returns (segments (S, 2, 3), body (S,) the body of each segment). Grouped by shape: one
    einsum per distinct shape, whatever the body count."""
    shape_index = np.asarray(shape_index, dtype=np.int64).reshape(-1)
    positions = np.asarray(positions, dtype=np.float64).reshape(-1, 3)
    out, owner = [], []
    for s in np.unique(shape_index):
        seg = np.asarray(local[s], dtype=np.float64)
        if not len(seg):
            continue
        bodies = np.flatnonzero(shape_index == s)
        w = np.einsum("nij,ekj->neki", rotations[bodies], seg) + positions[bodies, None, None]
        out.append(w.reshape(-1, 2, 3))
        owner.append(np.repeat(bodies, len(seg)))
    if not out:
        return np.zeros((0, 2, 3)), np.zeros(0, dtype=np.int64)
    return np.concatenate(out), np.concatenate(owner)


def aabb_segments(lo, hi):
    """The 12 edges of each box [lo, hi] (N, 3): (N * 12, 2, 3)."""
    lo = np.asarray(lo, dtype=np.float64).reshape(-1, 3)
    hi = np.asarray(hi, dtype=np.float64).reshape(-1, 3)
    corners = np.where(_CORNER_BITS[None], hi[:, None], lo[:, None])  # (N, 8, 3)
    return corners[:, BOX_EDGES].reshape(-1, 2, 3)


def world_aabbs(shapes, shape_index, positions, rotations):
    """Tight world AABBs (lo, hi) (N, 3) of posed engine shapes (core points + radius)."""
    shape_index = np.asarray(shape_index, dtype=np.int64).reshape(-1)
    n = len(shape_index)
    lo, hi = np.zeros((n, 3)), np.zeros((n, 3))
    for s in np.unique(shape_index):
        b = np.flatnonzero(shape_index == s)
        sh = shapes[s]
        if getattr(sh, "kind", None) in (ShapeKind.CYLINDER, ShapeKind.CONE):  # exact
            k = len(b)
            lo[b], hi[b] = curved_aabb(np.full(k, sh.kind), np.full(k, sh.radius),
                                       np.full(k, sh.half_height), rotations[b], positions[b])
            continue
        core = np.asarray(shapes[s].core_points, dtype=np.float64)
        w = np.einsum("nij,vj->nvi", rotations[b], core) + positions[b, None]
        r = float(shapes[s].radius)
        lo[b], hi[b] = w.min(axis=1) - r, w.max(axis=1) + r
    return lo, hi


def equivalent_box_half_extents(principal_moments, mass):
    """Half extents of the uniform box with the same principal moments of inertia and mass:
    I_x = m (b^2 + c^2) / 3 for half extents (a, b, c) gives a^2 = 3 (I_y + I_z - I_x) / (2 m).
    The inertia axes are drawn with these lengths, so a box's axes end on its faces."""
    i = np.asarray(principal_moments, dtype=np.float64)
    m = np.asarray(mass, dtype=np.float64)[..., None]
    a2 = 1.5 * (i[..., [1, 2, 0]] + i[..., [2, 0, 1]] - i) / m
    return np.sqrt(np.maximum(a2, 0.0))


def principal_axes(inertia):
    """Principal moments (…, 3) and axes (…, 3, 3) (columns) of symmetric inertia tensors."""
    moments, axes = np.linalg.eigh(np.asarray(inertia, dtype=np.float64))
    return moments, axes


# -- contacts ---------------------------------------------------------------------------------
def contact_layers(record, opts):
    """Contact points, normal arrows and friction arrows of one engine record.

    opts keys (all optional): contact_colour_by 'IMPULSE' | 'DEPTH' | 'FIXED', contact_colour,
    contact_size, normal_colour, normal_length (m, the arrow of the largest impulse of the
    frame, or of every contact when normal_scale_mode is 'FIXED'), normal_scale_mode
    'AUTO' | 'IMPULSE' | 'FIXED', impulse_scale (m per N s, mode IMPULSE), line_width,
    show_contacts / show_normals / show_friction, friction_colour, friction_scale (m per N s;
    0 = auto). Friction impulses come as world vectors (K, 3) or, as the engine records them,
    components (K, 2) along the solver's tangents of each normal (rebuilt here).
    """
    out: list[Layer] = []
    pos = np.asarray(record.positions, dtype=np.float64).reshape(-1, 3)
    k = len(pos)
    if k == 0:
        return out
    nrm = np.asarray(record.normals, dtype=np.float64).reshape(-1, 3)
    imp = np.asarray(record.normal_impulses, dtype=np.float64).reshape(-1)
    sep = np.asarray(record.separations, dtype=np.float64).reshape(-1)
    width = opts.get("line_width", 2.0)
    if opts.get("show_contacts", True):
        by = opts.get("contact_colour_by", "IMPULSE")
        if by == "IMPULSE":
            col = ramp(imp, 0.0, float(imp.max()) if k else 1.0)
        elif by == "DEPTH":
            depth = np.maximum(-sep, 0.0)
            col = ramp(depth, 0.0, max(float(depth.max()), opts.get("depth_floor", 1e-3)))
        else:
            col = np.asarray(opts.get("contact_colour", (1.0, 0.3, 0.1, 1.0)), np.float32)
        out.append(points("contacts", pos, col, opts.get("contact_size", 8.0)))
    if opts.get("show_normals", True):
        mode = opts.get("normal_scale_mode", "AUTO")
        length = float(opts.get("normal_length", 0.3))
        if mode == "FIXED":
            ln = np.full(k, length)
        elif mode == "IMPULSE":
            ln = imp * float(opts.get("impulse_scale", 1.0))
        else:
            top = float(imp.max())
            ln = length * imp / top if top > 0 else np.zeros(k)
        # Speculative contacts carry no impulse: a short stub still shows the normal.
        ln = np.maximum(ln, 0.15 * length)
        seg = arrows(pos, nrm * ln[:, None], head=0.2)
        out.append(lines("normals", seg, opts.get("normal_colour", (1.0, 0.85, 0.1, 1.0)), width))
    fr = record.friction_impulses
    if opts.get("show_friction", True) and len(fr) == k:
        fw = friction_vectors(nrm, fr)
        mag = np.linalg.norm(fw, axis=1)
        scale = float(opts.get("friction_scale", 0.0))
        if scale <= 0:
            top = max(float(imp.max()), float(mag.max()))
            scale = float(opts.get("normal_length", 0.3)) / top if top > 0 else 0.0
        live = mag * scale > 1e-6
        if live.any():
            seg = arrows(pos[live], fw[live] * scale, head=0.25)
            out.append(lines("friction", seg, opts.get("friction_colour", (0.2, 1.0, 0.4, 1.0)),
                             width))
    return out


def friction_vectors(normals, friction):
    """World friction impulses (K, 3) from the record: as given when (K, 3), else components
    (K, 2) along the solver's two tangents of each normal (engine.dynamics.solver.tangent_basis)."""
    f = np.asarray(friction, dtype=np.float64)
    if f.ndim == 2 and f.shape[1] == 3:
        return f
    n = np.asarray(normals, dtype=np.float64).reshape(-1, 3)
    if not len(n):
        return np.zeros((0, 3))
    t1, t2 = tangent_basis(n)
    return f[:, :1] * t1 + f[:, 1:2] * t2


# -- GJK / EPA / SAT of selected pairs --------------------------------------------------------
def simplex_segments(simplex, size, anchor):
    """Edges of GJK simplices drawn at anchor + point: simplex (M, 4, 3) points of B - A,
    size (M,) used points (1-4; a point gives one degenerate segment so it still shows).
    Returns (segments (S, 2, 3), pair (S,))."""
    s = np.asarray(simplex, dtype=np.float64).reshape(-1, 4, 3)
    size = np.asarray(size, dtype=np.int64).reshape(-1)
    a = np.asarray(anchor, dtype=np.float64).reshape(-1, 3)
    p = s + a[:, None]
    use = (_SIMPLEX_EDGES[None, :, 1] < size[:, None])  # (M, 6)
    seg = p[:, _SIMPLEX_EDGES]  # (M, 6, 2, 3)
    single = size == 1
    use[single, 0] = True
    seg[single, 0, 1] = seg[single, 0, 0]
    mi, ei = np.nonzero(use)
    return seg[mi, ei], mi


def polytope_segments(vertices, faces, anchor):
    """Unique edges of EPA polytopes: vertices (M, V, 3) of B - A, faces (M, F, 3) vertex
    triples padded with -1, drawn at anchor + point. Returns (segments, pair)."""
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64)
    a = np.asarray(anchor, dtype=np.float64).reshape(-1, 3)
    m, nf = f.shape[:2]
    e = np.stack((f, np.roll(f, -1, axis=2)), axis=-1).reshape(m, nf * 3, 2)
    ok = (e >= 0).all(axis=-1)
    lo, hi = e.min(axis=-1), e.max(axis=-1)
    pair = np.repeat(np.arange(m), nf * 3)[ok.reshape(-1)]
    key = pair * (v.shape[1] + 1) ** 2 + lo[ok] * (v.shape[1] + 1) + hi[ok]
    _, first = np.unique(key, return_index=True)
    pair = pair[first]
    i, j = lo[ok][first], hi[ok][first]
    seg = np.stack((v[pair, i], v[pair, j]), axis=1) + a[pair, None]
    return seg, pair


def minkowski_points(core_a, core_b):
    """Every difference b - a of two posed core point sets (Va, 3), (Vb, 3): the vertices of
    conv(B - A) are among them (the view of D that GJK and EPA explore)."""
    a = np.asarray(core_a, dtype=np.float64).reshape(-1, 3)
    b = np.asarray(core_b, dtype=np.float64).reshape(-1, 3)
    return (b[:, None] - a[None]).reshape(-1, 3)


def sat_feature_segments(shape_a, shape_b, rot_a, pos_a, rot_b, pos_b, kind, index):
    """Outlines of the features the SAT chose for one polytope pair (world): for a face axis
    the reference face (first) and the incident face; for an edge axis both edges.
    Returns (reference segments, incident segments)."""
    def face(shape, f, rot, pos):
        loop = np.asarray(shape.faces[int(f)], dtype=np.int64)
        p = shape.vertices[loop] @ rot.T + pos
        return np.stack((p, np.roll(p, -1, axis=0)), axis=1)

    def edge(shape, e, rot, pos):
        ij = shape.edges[int(e)]
        return (shape.vertices[ij] @ rot.T + pos)[None]

    empty = np.zeros((0, 2, 3))
    i0, i1 = int(index[0]), int(index[1])
    if kind == FACE_A:
        return (face(shape_a, i0, rot_a, pos_a),
                face(shape_b, i1, rot_b, pos_b) if i1 >= 0 else empty)
    if kind == FACE_B:
        return (face(shape_b, i0, rot_b, pos_b),
                face(shape_a, i1, rot_a, pos_a) if i1 >= 0 else empty)
    if kind == EDGE:
        return edge(shape_a, i0, rot_a, pos_a), edge(shape_b, i1, rot_b, pos_b)
    return empty, empty


def query_layers(shapes, shape_index, positions, rotations, pairs, opts):
    """GJK simplices, EPA polytopes, SAT features and (optionally) the Minkowski difference of
    the given body pairs (P, 2), computed now by the engine's own queries at these poses.

    The B - A pictures are anchored at body A's origin, so the configuration-space origin sits
    on A's origin marker: it lies inside the drawn difference exactly when the cores overlap.
    """
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    out: list[Layer] = []
    if not len(pairs):
        return out
    table = ShapeTable(shapes)
    sid = np.asarray(shape_index, dtype=np.int64)
    ia, ib = pairs[:, 0], pairs[:, 1]
    sa, sb = sid[ia], sid[ib]
    pa, pb = table.points[sa], table.points[sb]
    ra, rb = table.radius[sa], table.radius[sb]
    anchor = positions[ia]
    width = opts.get("line_width", 2.0)
    # Cylinders and cones have no point core: their pairs get the exact witnesses only (their
    # table points are a bounding prism, whose simplex / EPA polytope would mislead).
    curved = is_curved(table.kind[sa]) | is_curved(table.kind[sb])
    if opts.get("show_simplex", True):
        g = gjk(pa, ra, positions[ia], rotations[ia], pb, rb,
                                     positions[ib], rotations[ib])
        if curved.any():
            c = np.flatnonzero(curved)
            exact = pair_distance(table, sa[c], positions[ia[c]], rotations[ia[c]], sb[c],
                                  positions[ib[c]], rotations[ib[c]])
            g.point_a[c], g.point_b[c] = exact["point_a"], exact["point_b"]
            g.simplex_size[c] = 0
        seg, _ = simplex_segments(g.simplex, g.simplex_size, anchor)
        out.append(lines("simplex", seg, opts.get("simplex_colour", (1.0, 0.2, 1.0, 1.0)),
                         width + 1.0))
        used = np.arange(4)[None, :] < g.simplex_size[:, None]
        sp = (g.simplex + anchor[:, None])[used]
        out.append(points("simplex_points", sp, opts.get("simplex_colour", (1, 0.2, 1, 1)),
                          opts.get("contact_size", 8.0)))
        # The closest points of the pair (GJK witnesses), joined: the distance GJK measured.
        wit = np.stack((g.point_a, g.point_b), axis=1)
        out.append(lines("witness", wit, (1.0, 1.0, 1.0, 1.0), width))
        out.append(points("origin", anchor, (1.0, 1.0, 1.0, 1.0), opts.get("contact_size", 8.0)))
    if opts.get("show_epa", True):
        e = epa(pa, ra, positions[ia], rotations[ia], pb, rb,
                                     positions[ib], rotations[ib])
        e.polytope_faces[curved] = -1
        e.overlap[curved] = False
        if e.overlap.any():
            seg, _ = polytope_segments(e.polytope_vertices, e.polytope_faces, anchor)
            out.append(lines("epa", seg, opts.get("epa_colour", (0.3, 0.8, 1.0, 1.0)), width))
            d = np.flatnonzero(e.overlap)
            # From the origin to the nearest point of D's boundary, -depth * normal: the
            # shortest move of B (reversed) that separates the pair.
            out.append(lines("epa_normal", arrows(anchor[d], -e.normal[d] * e.depth[d, None]),
                             (1.0, 1.0, 1.0, 1.0), width))
    if opts.get("show_minkowski", False):
        mp = []
        for m in range(len(pairs)):  # a handful of selected pairs; each cloud is Va * Vb
            ca = table.points[sa[m], :table.npoints[sa[m]]] @ rotations[ia[m]].T
            cb = table.points[sb[m], :table.npoints[sb[m]]] @ rotations[ib[m]].T \
                + (positions[ib[m]] - positions[ia[m]])
            mp.append(minkowski_points(ca, cb) + anchor[m])
        out.append(points("minkowski", np.concatenate(mp), (0.7, 0.7, 0.7, 0.8),
                          max(2.0, 0.5 * opts.get("contact_size", 8.0))))
    if opts.get("show_sat", True):
        ref, inc = [], []
        poly = (table.kind[sa] == ShapeKind.POLYTOPE) & (table.kind[sb] == ShapeKind.POLYTOPE)
        if poly.any():
            collide = narrowphase.collide
            q = opts.get("_quats")
            qa = q[ia[poly]] if q is not None else quat.from_matrix(rotations[ia[poly]])
            qb = q[ib[poly]] if q is not None else quat.from_matrix(rotations[ib[poly]])
            man = collide(table, sa[poly], positions[ia[poly]], qa, sb[poly],
                          positions[ib[poly]], qb, margin=float(opts.get("sat_margin", 0.05)))
            for k, m in enumerate(np.flatnonzero(poly)):  # selected pairs only: a handful
                r, i = sat_feature_segments(shapes[sa[m]], shapes[sb[m]], rotations[ia[m]],
                                            positions[ia[m]], rotations[ib[m]],
                                            positions[ib[m]], int(man.axis_kind[k]),
                                            man.axis_index[k])
                ref.append(r)
                inc.append(i)
        if ref:
            out.append(lines("sat_reference", np.concatenate(ref), (1.0, 0.5, 0.0, 1.0),
                             width + 2.0))
            out.append(lines("sat_incident", np.concatenate(inc), (0.0, 0.9, 1.0, 1.0),
                             width + 2.0))
    return [layer for layer in out if len(layer)]


# -- a whole frame ----------------------------------------------------------------------------
class SceneModel:
    """The bodies as the engine sees them (built once per bake, see handler.py): names (N,),
    engine ``shapes`` (distinct), ``shape_index`` (N,), ``kinds`` (N,) engine kinds, and
    optionally ``masses`` (N,) and ``inertias`` (N, 3, 3) about the centre of mass in the shape
    frame (for the inertia axes)."""

    def __init__(self, names, shapes, shape_index, kinds, masses=None, inertias=None):
        self.names = list(names)
        self.shapes = list(shapes)
        self.shape_index = np.asarray(shape_index, dtype=np.int64).reshape(-1)
        self.kinds = np.asarray(kinds, dtype=np.int64).reshape(-1)
        self.masses = None if masses is None else np.asarray(masses, dtype=np.float64)
        self.inertias = None if inertias is None else np.asarray(inertias, dtype=np.float64)
        self._local = {}

    def __len__(self):
        return len(self.names)

    def local_segments(self, segments=24):
        """Per shape id, the local wireframe (cached: shapes are immutable)."""
        got = self._local.get(segments)
        if got is None:
            got = self._local[segments] = [local_wireframe(s, segments) for s in self.shapes]
        return got


KIND_COLOURS = {BodyKind.DYNAMIC: (0.95, 0.95, 0.95, 1.0), BodyKind.STATIC: (0.45, 0.55, 0.65, 1.0),
                BodyKind.KINEMATIC: (1.0, 0.6, 0.2, 1.0)}
SLEEP_COLOUR = (0.35, 0.45, 1.0, 1.0)


def frame_layers(model, frame, opts, selected=None):
    """Every layer of one frame.

    model: SceneModel. frame: dict with ``pos`` (N, 3) and ``q`` (N, 4) of the body origins and
    optionally ``x`` (N, 3) centres of mass, ``vel`` (N, 6) [linear of the COM, angular],
    ``sleeping`` (N,), and ``record`` (the engine's debug record of the step into this frame,
    or None). opts: the overlay settings as a dict (see contact_layers and the keys below).
    selected: indices of the selected bodies (for the GJK/EPA/SAT pictures).
    """
    pos = np.asarray(frame["pos"], dtype=np.float64).reshape(-1, 3)
    rot = quat.to_matrix_normalized(np.reshape(frame["q"], (-1, 4))) if len(pos) else np.zeros((0, 3, 3))
    n = len(pos)
    out = []
    width = opts.get("line_width", 2.0)
    sleeping = frame.get("sleeping")
    rec = frame.get("record")  # an engine.StepRecord or None
    if sleeping is None and rec is not None and len(rec.sleeping):
        sleeping = rec.sleeping
    sleeping = np.zeros(n, bool) if sleeping is None else np.asarray(sleeping, bool)[:n]
    if opts.get("show_shapes", True) and n:
        seg, owner = posed_segments(model.local_segments(opts.get("circle_segments", 24)),
                                    model.shape_index[:n], pos, rot)
        table = np.array([KIND_COLOURS[k] for k in BodyKind], np.float32)
        col = table[np.clip(model.kinds[:n], 0, 2)]
        if opts.get("show_sleeping", True):
            col[sleeping] = SLEEP_COLOUR
        shape_col = np.asarray(opts.get("shape_colour", (1.0, 1.0, 1.0, 1.0)), np.float32)
        out.append(lines("shapes", seg, col[owner] * shape_col, opts.get("shape_width", 1.5)))
    if opts.get("show_aabbs", False) and n:
        if rec is not None and len(rec.aabbs) == n:
            lo, hi = rec.aabbs[:, 0], rec.aabbs[:, 1]  # the engine's fat, swept boxes
        else:
            lo, hi = world_aabbs(model.shapes, model.shape_index[:n], pos, rot)
        col = np.where(sleeping[:, None], np.asarray(SLEEP_COLOUR, np.float32),
                       np.asarray(opts.get("aabb_colour", (0.9, 0.9, 0.3, 0.6)), np.float32))
        out.append(lines("aabbs", aabb_segments(lo, hi), np.repeat(col, 12, axis=0), 1.0))
    if opts.get("show_sleeping", True) and sleeping.any() and not opts.get("show_shapes", True):
        out.append(points("sleeping", pos[sleeping], SLEEP_COLOUR, opts.get("contact_size", 8)))
    com = frame.get("x")
    com = None if com is None else np.asarray(com, dtype=np.float64).reshape(-1, 3)
    dyn = np.flatnonzero(model.kinds[:n] == BodyKind.DYNAMIC)
    if com is None and len(dyn):
        com = pos  # without a stored state the origin stands in for the centre of mass
    if opts.get("show_velocity", False) and frame.get("vel") is not None and len(dyn):
        vel = np.asarray(frame["vel"], dtype=np.float64)[:n]
        s = float(opts.get("velocity_scale", 0.1))
        out.append(lines("velocity", arrows(com[dyn], vel[dyn, :3] * s),
                         opts.get("velocity_colour", (0.2, 0.6, 1.0, 1.0)), width))
        out.append(lines("spin", arrows(com[dyn], vel[dyn, 3:] * s),
                         opts.get("spin_colour", (0.9, 0.3, 1.0, 1.0)), width))
    if opts.get("show_inertia", False) and len(dyn):
        out.extend(inertia_layers(model, com, rot, dyn, opts))
    if rec is not None:
        out.extend(contact_layers(rec, opts))
    if frame.get("joints") is not None:
        from .joint_geometry import joint_layers  # it imports this module's helpers
        out.extend(joint_layers(frame["joints"], pos, rot, opts))
    if selected is not None and len(selected) and opts.get("show_queries", True):
        pairs = query_pairs(model, pos, rot, selected, opts.get("query_margin", 0.1))
        q = dict(opts)
        q["_quats"] = np.asarray(frame["q"], dtype=np.float64)
        out.extend(query_layers(model.shapes, model.shape_index, pos, rot, pairs, q))
    return [layer for layer in out if len(layer)]


def inertia_layers(model, com, rot, dyn, opts):
    """Centre of mass points and principal inertia axes (world) of the dynamic bodies, each
    axis as long as the equivalent box's half extent along it (see equivalent_box_half_extents)."""
    out = [points("com", com[dyn], (1.0, 1.0, 1.0, 1.0), opts.get("contact_size", 8.0))]
    if model.inertias is None or model.masses is None:
        return out
    moments, axes = principal_axes(model.inertias[dyn])
    half = equivalent_box_half_extents(moments, model.masses[dyn])  # (D, 3)
    world_axes = np.einsum("dij,djk->dik", rot[dyn], axes)  # columns are the axes
    tips = world_axes * half[:, None, :]  # column k scaled by half extent k
    starts = np.repeat(com[dyn], 3, axis=0)
    vec = np.swapaxes(tips, 1, 2).reshape(-1, 3)
    rgb = np.tile(np.array([[1, 0.2, 0.2, 1], [0.2, 1, 0.2, 1], [0.3, 0.4, 1, 1]],
                           np.float32), (len(dyn), 1))
    out.append(lines("inertia", np.stack((starts - vec, starts + vec), axis=1), rgb,
                     opts.get("line_width", 2.0)))
    return out


def query_pairs(model, pos, rot, selected, margin=0.1):
    """Pairs for the GJK/EPA/SAT pictures: the pair itself when exactly two bodies are
    selected, else every pair of a selected body with a body whose AABB (grown by margin)
    overlaps its own. Selected bodies come first in each pair."""
    sel = np.unique(np.asarray(selected, dtype=np.int64))
    if len(sel) == 2:
        return sel[None]
    n = len(pos)
    lo, hi = world_aabbs(model.shapes, model.shape_index[:n], pos, rot)
    lo, hi = lo - margin, hi + margin
    hit = np.all((lo[sel, None] <= hi[None]) & (lo[None] <= hi[sel, None]), axis=2)
    hit[np.arange(len(sel)), sel] = False
    a, b = np.nonzero(hit)
    pairs = np.stack((sel[a], b), axis=1)
    # A pair of two selected bodies appears twice: keep it once.
    both = np.isin(pairs[:, 1], sel)
    keep = ~both | (pairs[:, 0] < pairs[:, 1])
    return pairs[keep]


# -- projection (render.py and the tests) -----------------------------------------------------
def project(points_world, view_projection, width, height):
    """Pixel coordinates (n, 2) (x right, y up from the bottom-left corner, pixel centres at
    half integers) and NDC depth (n,) of world points under a 4x4 view-projection matrix."""
    p = np.asarray(points_world, dtype=np.float64).reshape(-1, 3)
    h = np.concatenate((p, np.ones((len(p), 1))), axis=1) @ np.asarray(view_projection,
                                                                          dtype=np.float64).T
    ndc = h[:, :3] / h[:, 3:4]
    px = (ndc[:, 0] + 1.0) * 0.5 * width
    py = (ndc[:, 1] + 1.0) * 0.5 * height
    return np.stack((px, py), axis=1), ndc[:, 2]
