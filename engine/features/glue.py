"""Fractured pieces as bodies, glued by breakable fixed joints, optionally starting asleep.

- ``piece_shape(piece)``: the body shape of an ``engine.features.fracture.Piece`` in its own frame (origin
  at the piece's centre of mass): a ConvexHull for a convex piece, a Compound of convex parts
  for a non-convex one (the piece cut again into Voronoi parts, each hulled).
- ``add_pieces(world, fracture, ...)``: one dynamic body per piece, origin at its centre of mass.
- ``add_glue(world, bodies_a, bodies_b, centres, areas, strength)``: one fixed joint per bond,
  created in one batch; it breaks (for good) when its reaction force exceeds
  ``strength (N/m^2) x area (m^2)``. The joint frame sits at the shared face's centre.
- ``start_asleep(world, bodies)``: the bodies sleep where they are until a moving body touches
  them (Blender's Start Deactivated), through ``World.set_deactivation``.

Glued neighbours do not collide while their bond holds (Blender's Connect default
``disable_collisions``); once it breaks they collide again (engine.dynamics.joints.filter_pairs looks at
live joints only).
"""
import numpy as np

from ..core import quat
from ..core.errors import EngineError
from ..dynamics.joints import _FIELDS as _JOINT_FIELDS
from ..dynamics.joints import KINDS as _JOINT_KINDS
from ..dynamics.joints import parse
from ..shapes.compound import Compound
from ..shapes.hull import ConvexHull
from .fracture import fracture, volume_points

__all__ = ["add_glue", "add_pieces", "bond_strengths", "piece_shape", "start_asleep"]


def piece_shape(piece, max_parts=8):
    """The piece's shape in a frame at its centre of mass (world axes). A non-convex piece is
    cut again into up to ``max_parts`` Voronoi parts (exact and fast, engine.features.fracture) and each
    part hulled: the hulls hug the piece the closer the smaller the parts."""
    local = piece.vertices - piece.centroid
    size = float(np.ptp(local, axis=0).max())
    if piece.convex:
        return ConvexHull(local, tolerance=1e-9 * size)
    parts = convex_parts(local, piece.faces(), max_parts)
    if len(parts) == 1:
        return ConvexHull(parts[0], tolerance=1e-9 * size)
    ident = (1.0, 0.0, 0.0, 0.0)
    return Compound([(ConvexHull(p, tolerance=1e-9 * size), (0.0, 0.0, 0.0), ident)
                     for p in parts])


def convex_parts(vertices, faces, max_parts=8):
    """Vertex arrays of up to max_parts parts of a closed mesh (its Voronoi pieces for
    max_parts seeds uniform in its volume, seed 0), to be hulled as a Compound's parts."""
    seeds = volume_points(vertices, faces, max_parts, seed=0)
    return [p.vertices for p in fracture(vertices, faces, seeds).pieces]


def add_pieces(world, fracture, density=1000.0, offset=(0.0, 0.0, 0.0), friction=0.5,
               restitution=0.0, asleep=False):
    """Add every piece as a dynamic body (origin at its centre of mass, shifted by offset).
    Returns the (P,) body indices."""
    off = np.asarray(offset, dtype=np.float64).reshape(3)
    bodies = np.array([world.add_body(piece_shape(p), position=p.centroid + off,
                                      density=density, friction=friction,
                                      restitution=restitution)
                       for p in fracture.pieces], dtype=np.int64)
    if asleep:
        start_asleep(world, bodies)
    return bodies


def bond_strengths(areas, strength):
    """Breaking force (N) of each bond: strength (N/m^2, scalar or per bond) x area (m^2)."""
    s = np.broadcast_to(np.asarray(strength, dtype=np.float64), np.shape(areas))
    if not np.all(np.isfinite(s) | (s == np.inf)) or np.any(s < 0) or np.any(np.isnan(s)):
        raise EngineError(f"glue strength must be >= 0 N/m^2 (inf: unbreakable), got {strength!r}")
    return s * np.asarray(areas, dtype=np.float64)


def add_glue(world, bodies_a, bodies_b, centres, areas, strength, disable_collisions=True):
    """One fixed joint per bond (bodies_a[k], bodies_b[k]) at centres[k], breaking at
    strength x areas[k] newtons. All joints are appended in one batch (validated once, the
    frames computed with array operations). Returns the (B,) joint indices."""
    a = np.asarray(bodies_a, dtype=np.int64).reshape(-1)
    b = np.asarray(bodies_b, dtype=np.int64).reshape(-1)
    c = np.asarray(centres, dtype=np.float64).reshape(-1, 3)
    if not (len(a) == len(b) == len(c) == np.size(areas)):
        raise EngineError("add_glue: bodies_a, bodies_b, centres and areas must have one row per "
                          "bond")
    force = bond_strengths(areas, strength)
    if not len(a):
        return np.zeros(0, dtype=np.int64)
    n = world.body_count
    if a.min() < 0 or b.min() < 0 or max(a.max(), b.max()) >= n:
        raise EngineError(f"add_glue: a body index is out of range (the world has {n} bodies)")
    if np.any(a == b):
        raise EngineError("add_glue: a bond joins a body to itself")
    if not np.all(np.isfinite(c)):
        raise EngineError("add_glue: bond centres must be finite")
    js = world.joints
    m = len(a)
    j0 = js.n
    while js.cap < j0 + m:
        js._grow(2 * js.cap)
    js.n = j0 + m
    sl = slice(j0, j0 + m)
    for name, (_shape, _dtype, fill) in _JOINT_FIELDS.items():
        js._a[name][sl] = fill
    x, q = world._v("x"), world._v("q")
    qa, qb = q[a], q[b]
    js._a["body_a"][sl] = a
    js._a["body_b"][sl] = b
    js._a["world"][sl] = False
    # Joint frame: world axes at the bond centre, fixed in both bodies from now on.
    js._a["anchor_a"][sl] = quat.rotate_inverse(qa, c - x[a])
    js._a["anchor_b"][sl] = quat.rotate_inverse(qb, c - x[b])
    js._a["frame_a"][sl] = quat.conjugate(qa)
    js._a["frame_b"][sl] = quat.conjugate(qb)
    for name, val in parse("fixed", None, None, None).items():
        js._a[name][sl] = val
    js._a["break_force"][sl] = force
    js._a["break_torque"][sl] = np.inf
    js._a["no_collide"][sl] = bool(disable_collisions)
    js._a["enabled"][sl] = True
    js._a["kind"][sl] = _JOINT_KINDS.index("fixed")
    return np.arange(j0, j0 + m, dtype=np.int64)


def start_asleep(world, bodies):
    """Put dynamic bodies to sleep where they are (Blender's Start Deactivated, through
    World.set_deactivation): gravity does not move them; a moving body touching one wakes it
    (and, through live joints, what it is glued to), also with the world's sleeping off."""
    for i in np.asarray(bodies, dtype=np.int64).reshape(-1):
        world.set_deactivation(int(i), start_asleep=True)
