"""engine.features.fracture: Voronoi pieces of convex and non-convex closed meshes, checked against
brute force (nearest seed of sampled points) and trimesh (volumes, watertightness,
containment) as an independent oracle."""
import numpy as np
import pytest
import trimesh
from scenes_meshes import box_mesh, torus_mesh

from engine import EngineError
from engine.features.fracture import (
    MAX_PIECES,
    check_closed,
    cluster_points,
    fracture,
    inside_mesh,
    mesh_volume,
    volume_points,
)


def tri(piece):
    out = []
    for f in piece.faces():
        out += [[f[0], f[k], f[k + 1]] for k in range(1, len(f) - 1)]
    return trimesh.Trimesh(piece.vertices, np.array(out), process=False)


def contains(tm, pts):
    """Points inside a watertight trimesh: parity of Moller-Trumbore hits along a skew ray
    (an oracle independent of engine.features.fracture's winding-number test)."""
    d = np.array([0.5773, 0.6123, 0.5401])
    a, b, c = (tm.triangles[:, k][None] for k in range(3))
    e1, e2 = b - a, c - a
    pv = np.cross(d, e2)
    det = np.einsum("...i,...i", e1, pv)
    det = np.where(det == 0, np.inf, det)    # zero-area sliver triangles: never hit
    t0 = pts[:, None] - a
    u = np.einsum("...i,...i", t0, pv) / det
    qv = np.cross(t0, e1)
    w = np.einsum("i,...i", d, qv) / det
    t = np.einsum("...i,...i", e2, qv) / det
    hit = (u >= 0) & (w >= 0) & (u + w <= 1) & (t > 0) & np.isfinite(det)
    return hit.sum(axis=1) % 2 == 1


def owner_by_containment(pieces, pts):
    """(P, K) bool: sample point k inside piece p."""
    return np.array([contains(tri(p), pts) for p in pieces])


@pytest.fixture(scope="module")
def box40():
    v, f = box_mesh()
    pts = volume_points(v, f, 40, seed=11)
    return v, f, pts, fracture(v, f, pts)


def test_box_volumes_sum_and_pieces_are_closed_convex(box40):
    v, f, pts, fr = box40
    vols = np.array([p.volume for p in fr.pieces])
    assert len(fr.pieces) == 40
    assert abs(vols.sum() / 0.9 - 1.0) < 1e-6
    assert vols.min() > 0
    for p in fr.pieces:
        check_closed(p.vertices, p.faces())
        tm = tri(p)
        assert tm.is_watertight and tm.is_winding_consistent
        assert tm.volume == pytest.approx(p.volume, rel=1e-9)        # not inverted
        assert np.allclose(tm.center_mass, p.centroid, atol=1e-9)
        assert p.convex and tm.convex_hull.volume == pytest.approx(p.volume, rel=1e-9)


def test_box_pieces_are_the_voronoi_cells(box40):
    """Every sample point lies in exactly one piece: the one of its nearest seed."""
    v, f, pts, fr = box40
    rng = np.random.default_rng(5)
    q = rng.random((400, 3)) * np.array([2.0, 0.3, 1.5])
    nearest = np.argmin(((q[:, None] - pts[None]) ** 2).sum(-1), axis=1)
    inside = owner_by_containment(fr.pieces, q)
    assert np.all(inside.sum(axis=0) == 1)
    seeds = np.array([p.seed for p in fr.pieces])
    assert np.array_equal(seeds[np.argmax(inside, axis=0)], nearest)


def test_bonds_are_shared_faces(box40):
    v, f, pts, fr = box40
    assert len(fr.bond_a) > 40
    for a, b, area, c in zip(fr.bond_a, fr.bond_b, fr.bond_area, fr.bond_centre):
        pa, pb = fr.pieces[a], fr.pieces[b]
        # Area of a's faces against b's seed, measured by trimesh on those faces alone.
        for p, other in ((pa, pb.seed), (pb, pa.seed)):
            sel = p.face_labels == -1 - other
            faces = [fc for fc, s in zip(p.faces(), sel) if s]
            tris = [[fc[0], fc[k], fc[k + 1]] for fc in faces for k in range(1, len(fc) - 1)]
            assert trimesh.Trimesh(p.vertices, np.array(tris), process=False).area == \
                pytest.approx(area, rel=1e-9)
        # The centre lies on the bisector plane of the two seeds.
        n = pts[pb.seed] - pts[pa.seed]
        assert abs(n @ (c - 0.5 * (pts[pa.seed] + pts[pb.seed]))) < 1e-9
    # Pieces that are not bonded do not share a face: total inner area per piece matches.
    for k, p in enumerate(fr.pieces):
        inner = sum(tri_area(p, lab) for lab in np.unique(p.face_labels[p.face_labels < 0]))
        mine = fr.bond_area[(fr.bond_a == k) | (fr.bond_b == k)].sum()
        assert mine == pytest.approx(inner, rel=1e-9)


def tri_area(p, label):
    sel = p.face_labels == label
    tris = [[fc[0], fc[k], fc[k + 1]] for fc, s in zip(p.faces(), sel) if s
            for k in range(1, len(fc) - 1)]
    return trimesh.Trimesh(p.vertices, np.array(tris), process=False).area


def test_outer_faces_lie_on_their_source_face(box40):
    v, f, pts, fr = box40
    tm = trimesh.Trimesh(v, [[q[0], q[1], q[2]] for q in f], process=False)
    normals = tm.face_normals
    for p in fr.pieces:
        for fc, lab in zip(p.faces(), p.face_labels):
            if lab >= 0:
                assert np.allclose((p.vertices[fc] - v[f[lab][0]]) @ normals[lab], 0, atol=1e-12)


def test_torus_volumes_closed_pieces_and_cells():
    v, f = torus_mesh()
    vol = trimesh.Trimesh(v, f, process=False).volume
    assert mesh_volume(v, f) == pytest.approx(vol, rel=1e-12)
    pts = volume_points(v, f, 24, seed=3)
    fr = fracture(v, f, pts)
    vols = np.array([p.volume for p in fr.pieces])
    assert abs(vols.sum() / vol - 1.0) < 1e-2        # the bar; we get ~1e-12
    assert abs(vols.sum() / vol - 1.0) < 1e-9
    assert vols.min() > 0 and len(fr.pieces) >= 24
    assert not all(p.convex for p in fr.pieces)
    for p in fr.pieces:
        tm = tri(p)
        assert tm.is_watertight and tm.is_winding_consistent
        assert tm.volume == pytest.approx(p.volume, rel=1e-9)
    # Sample points in the torus fall in exactly one piece, that of their nearest seed.
    rng = np.random.default_rng(9)
    q = rng.uniform(-1.4, 1.4, (1500, 3)) * np.array([1, 1, 0.3])
    q = q[contains(trimesh.Trimesh(v, f, process=False), q)][:300]
    inside = owner_by_containment(fr.pieces, q)
    assert np.all(inside.sum(axis=0) == 1)
    seeds = np.array([p.seed for p in fr.pieces])
    nearest = np.argmin(((q[:, None] - pts[None]) ** 2).sum(-1), axis=1)
    assert np.array_equal(seeds[np.argmax(inside, axis=0)], nearest)


def test_cell_across_the_hole_splits_into_parts():
    """Two seeds: each cell holds two separate arcs of a thin ring -> four pieces."""
    v, f = torus_mesh(R=1.0, r=0.1, nu=24, nv=8)
    pts = np.array([[0.0, 1.0, 0.0], [0.0, -1.0, 0.0]])
    fr = fracture(v, f, pts)
    assert len(fr.pieces) == 2        # each half-ring is connected
    pts = np.array([[0.5, 0.0, 0.0], [-0.5, 0.0, 0.0], [0.0, 0.5, 0.0], [0.0, -0.5, 0.0]])
    fr = fracture(v, f, pts)
    assert len(fr.pieces) == 4
    pts = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 1.0]])   # the bisector z=0.5 misses the ring
    fr = fracture(v, f, pts)
    assert len(fr.pieces) == 1 and fr.pieces[0].seed == 0
    # The centre seed's cell is the slab |x| < 0.5: it holds two separate arcs of the ring.
    pts = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [-1.0, 0.0, 0.0]])
    fr = fracture(v, f, pts)
    parts = [p for p in fr.pieces if p.seed == 0]
    assert len(parts) == 2            # the arcs near +y and -y, apart
    assert abs(sum(p.volume for p in fr.pieces) / mesh_volume(v, f) - 1) < 1e-9


def test_deterministic_for_a_seed():
    v, f = box_mesh()
    a = fracture(v, f, volume_points(v, f, 30, seed=4))
    b = fracture(v, f, volume_points(v, f, 30, seed=4))
    c = fracture(v, f, volume_points(v, f, 30, seed=5))
    for pa, pb in zip(a.pieces, b.pieces):
        assert np.array_equal(pa.vertices, pb.vertices)
        assert np.array_equal(pa.face_verts, pb.face_verts)
    assert np.array_equal(a.bond_area, b.bond_area)
    assert not np.array_equal(a.pieces[0].vertices, c.pieces[0].vertices)


def test_seed_sources():
    v, f = torus_mesh()
    p = volume_points(v, f, 200, seed=1)
    assert contains(trimesh.Trimesh(v, f, process=False), p).all()
    assert np.array_equal(inside_mesh(p, v, f), np.ones(200, bool))
    c = cluster_points(v, f, 200, centre=(1.0, 0.0, 0.0), radius=0.1, seed=1)
    assert contains(trimesh.Trimesh(v, f, process=False), c).all()
    assert np.linalg.norm(c - [1.0, 0, 0], axis=1).mean() < 0.25
    with pytest.raises(EngineError, match="radius"):
        cluster_points(v, f, 5, (0, 0, 0), 0.0)


def test_bad_input():
    v, f = box_mesh()
    with pytest.raises(EngineError, match="open"):
        fracture(v, f[:-1], volume_points(v, f, 4))
    with pytest.raises(EngineError, match="at least one"):
        fracture(v, f, np.zeros((0, 3)))
    with pytest.raises(EngineError, match="at most"):
        fracture(v, f, np.zeros((MAX_PIECES + 1, 3)))
    flat = v.copy()
    flat[:, 1] = 0.0
    with pytest.raises(EngineError):
        fracture(flat, f, volume_points(v, f, 4))
    with pytest.raises(EngineError, match="non-manifold"):
        check_closed(v, f + [f[0]])
    # Inward-facing normals: flipped (documented fallback), same pieces' volume.
    inv = [list(reversed(q)) for q in f]
    fr = fracture(v, inv, volume_points(v, f, 8, seed=2))
    assert sum(p.volume for p in fr.pieces) == pytest.approx(0.9, rel=1e-9)
    # Coincident seeds count once.
    pts = volume_points(v, f, 5, seed=2)
    fr = fracture(v, f, np.concatenate((pts, pts[:2])))
    assert len(fr.pieces) == 5
