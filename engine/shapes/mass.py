"""Mass properties of shapes: mass, centre of mass, inertia tensor, principal frame.

Everything is exact (up to rounding) and in the shape's local frame:

- polytopes (Box, ConvexHull): each face is fanned into triangles, and each triangle with a
  reference point r inside the hull makes a tetrahedron. A tetrahedron (r, r + a, r + b, r + c)
  has volume det[a, b, c] / 6 and second moment about r
  C = det / 120 * (a a^T + b b^T + c c^T + (a + b + c)(a + b + c)^T)   (Tonon 2004 canonical form).
  Summing signed tetrahedra integrates over the polyhedron (the divergence theorem in disguise, the
  same result as Mirtich 1996). r is the vertex mean, so the sums involve small, well-scaled
  numbers even for a hull far from its origin.
- Sphere: I = 2/5 m r^2.  Capsule (along Z): a cylinder plus two hemispheres, each hemisphere
  moved from its own centre of mass (3r/8 from its flat face) by the parallel-axis theorem.

Inertia is about the centre of mass, I = trace(C) * Id - C for the second moment C.
"""
import numpy as np

from ..core.errors import EngineError
from ..core.kinds import ShapeKind
from ..core.quat import from_matrix, to_matrix
from .curved import CURVED_KINDS, curved_moments


class MassProperties:
    """mass (kg), center (3,) m, inertia (3, 3) kg m^2 about the centre of mass, volume m^3.

    principal_moments (3,) ascending and principal_axes (3, 3), whose columns are the matching
    axes, form a right-handed rotation: inertia = axes @ diag(moments) @ axes.T.
    principal_rotation is the same rotation as a quaternion (w, x, y, z).
    """
    __slots__ = ("center", "inertia", "mass", "principal_axes", "principal_moments", "volume")

    def __init__(self, mass, center, inertia, volume):
        self.mass = float(mass)
        self.center = np.asarray(center, dtype=np.float64).reshape(3).copy()
        inertia = np.asarray(inertia, dtype=np.float64).reshape(3, 3)
        self.inertia = 0.5 * (inertia + inertia.T)  # exactly symmetric for eigh and for the solver
        self.volume = float(volume)
        moments, axes = np.linalg.eigh(self.inertia)
        if np.linalg.det(axes) < 0:
            axes[:, 2] = -axes[:, 2]
        self.principal_moments = moments
        self.principal_axes = axes

    @property
    def principal_rotation(self):
        return from_matrix(self.principal_axes)

    @property
    def density(self):
        return self.mass / self.volume if self.volume > 0 else float("nan")

    def scaled(self, factor):
        """The same shape with its density multiplied by factor."""
        return MassProperties(self.mass * factor, self.center, self.inertia * factor, self.volume)

    def __repr__(self):
        return (f"MassProperties(mass={self.mass:.6g}, center={np.round(self.center, 9).tolist()}, "
                f"principal_moments={np.round(self.principal_moments, 9).tolist()}, "
                f"volume={self.volume:.6g})")


def _check_positive(value, what):
    value = float(value)
    if not np.isfinite(value) or value <= 0:
        raise EngineError(f"{what} must be a finite number > 0, got {value!r}")
    return value


def mass_properties(shape, density=1000.0):
    """Exact mass properties of a shape of uniform density (kg/m^3; default water-like 1000)."""
    density = _check_positive(density, "density")
    kind = getattr(shape, "kind", None)
    if kind == ShapeKind.POLYTOPE:
        if shape.radius != 0:
            raise EngineError("rounded polytopes (radius > 0) have no exact mass properties here; "
                              "use radius 0")
        volume, center, second = _polytope_moments(shape.vertices, shape.faces)
    elif kind == ShapeKind.SPHERE:
        r = shape.radius
        volume = 4.0 / 3.0 * np.pi * r ** 3
        center = np.zeros(3)
        second = np.eye(3) * (volume * r * r / 5.0)  # C = diag(V r^2/5): I = 2/5 V r^2
    elif kind == ShapeKind.CAPSULE:
        volume, second = _capsule_moments(shape.radius, shape.half_height)
        center = np.zeros(3)
    elif kind in CURVED_KINDS:          # Cylinder, Cone: closed forms (curved.py)
        volume, center, second = curved_moments(shape)
    else:
        raise EngineError(f"mass_properties needs an engine shape, got {type(shape).__name__}")
    return MassProperties(density * volume, center, _inertia(second) * density, volume)


def mass_properties_from_mass(shape, mass):
    """Mass properties of the shape with the given total mass (kg) instead of a density."""
    mass = _check_positive(mass, "mass")
    unit = mass_properties(shape, density=1.0)
    return unit.scaled(mass / unit.volume)


def _inertia(second):
    """Inertia tensor trace(C) Id - C of a second moment C, its diagonal summed as C_jj + C_kk:
    trace(C) - C_ii cancels catastrophically for a body long along axis i (a thin rod)."""
    inertia = -second
    d = np.diag(second)
    inertia[np.diag_indices(3)] = d[[1, 0, 0]] + d[[2, 2, 1]]
    return inertia


def _polytope_moments(vertices, faces):
    """Volume, centroid and second moment about the centroid (density 1) of a closed CCW polytope."""
    ref = vertices.mean(axis=0)
    v = vertices - ref
    # Fan every face loop (v0, v_i, v_i+1): all faces at once through a flat index list.
    sizes = np.array([len(f) for f in faces])
    flat = np.concatenate(faces)
    first = np.repeat(flat[np.cumsum(sizes) - sizes], sizes - 2)
    start = np.repeat(np.cumsum(sizes) - sizes, sizes - 2)
    local = np.arange(len(first)) - np.repeat(np.cumsum(sizes - 2) - (sizes - 2), sizes - 2)
    a = v[first]
    b = v[flat[start + local + 1]]
    c = v[flat[start + local + 2]]
    det = np.einsum("ij,ij->i", a, np.cross(b, c))
    volume = det.sum() / 6.0
    if not volume > 0:
        raise EngineError(f"polytope volume is {volume:.3g}: faces must be closed and CCW seen from "
                          "outside")
    centroid_rel = (det[:, None] * (a + b + c)).sum(axis=0) / (24.0 * volume)
    s = a + b + c
    cov = (np.einsum("i,ij,ik->jk", det, a, a) + np.einsum("i,ij,ik->jk", det, b, b)
           + np.einsum("i,ij,ik->jk", det, c, c) + np.einsum("i,ij,ik->jk", det, s, s)) / 120.0
    cov -= volume * np.outer(centroid_rel, centroid_rel)  # move from ref to the centroid
    return volume, ref + centroid_rel, cov


def _capsule_moments(r, h):
    """Volume and second moment (density 1) of a capsule of radius r, segment from -h to h on Z."""
    v_cyl = np.pi * r * r * 2.0 * h
    v_sph = 4.0 / 3.0 * np.pi * r ** 3
    # Second moments C_xx = C_yy (spread across the axis) and C_zz (along it).
    cyl_xx = v_cyl * r * r / 4.0
    cyl_zz = v_cyl * h * h / 3.0                  # integral of z^2 over the cylinder
    sph_xx = v_sph * r * r / 5.0
    # Two hemispheres, flat faces at z = +-h: integral of z^2 = V (h^2 + 3/4 h r + r^2/5) because a
    # hemisphere's mean of z (from its face) is 3r/8 and its mean of z^2 is r^2/5.
    sph_zz = v_sph * (h * h + 0.75 * h * r + r * r / 5.0)
    second = np.diag([cyl_xx + sph_xx, cyl_xx + sph_xx, cyl_zz + sph_zz])
    return v_cyl + v_sph, second


def combine(parts):
    """Mass properties of a rigid union of parts [(MassProperties, position (3,), quaternion (w,x,y,z))].

    Each part's frame is placed at position with the given rotation in the common frame; the result
    is in that common frame. Inertias rotate as R I R^T and move to the joint centre of mass with
    the parallel-axis theorem. Volumes add (parts are assumed not to overlap).
    """
    parts = list(parts)
    if not parts:
        raise EngineError("combine() needs at least one part")
    masses = np.array([p[0].mass for p in parts])
    if not np.all(np.isfinite(masses)) or np.any(masses <= 0):
        raise EngineError("every part must have a finite mass > 0")
    pos = np.array([np.asarray(p[1], dtype=np.float64).reshape(3) for p in parts])
    q = np.array([np.asarray(p[2], dtype=np.float64).reshape(4) for p in parts])
    norm = np.linalg.norm(q, axis=1, keepdims=True)
    if not np.all(np.isfinite(pos)) or not np.all(np.isfinite(q)) or np.any(norm == 0):
        raise EngineError("part positions and rotations must be finite, rotations non-zero quaternions")
    rot = to_matrix(q / norm)
    centers = pos + np.einsum("nij,nj->ni", rot, np.array([p[0].center for p in parts]))
    mass = masses.sum()
    com = (masses[:, None] * centers).sum(axis=0) / mass
    inertia = np.einsum("nij,njk,nlk->il", rot, np.array([p[0].inertia for p in parts]), rot)
    d = centers - com
    inertia += _inertia(np.einsum("n,ni,nj->ij", masses, d, d))  # parallel-axis theorem
    return MassProperties(mass, com, inertia, sum(p[0].volume for p in parts))
