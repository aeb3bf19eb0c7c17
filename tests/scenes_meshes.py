"""Closed meshes shared by the fracture and glue tests (tests/test_fracture.py,
tests/test_glue.py) and bench/bench_fracture.py, so the bench cuts the very meshes the tests
check. Vertices (V, 3) and faces (index lists, outward winding)."""
import numpy as np


def box_mesh(size=(2.0, 0.3, 1.5), centred=False):
    """A box of the given size standing on z = 0: from the origin into +x, +y, or centred on
    the Z axis with centred. Returns (vertices, quads)."""
    sx, sy, sz = size
    xs, ys = ((-sx / 2, sx / 2), (-sy / 2, sy / 2)) if centred else ((0, sx), (0, sy))
    v = np.array([[x, y, z] for x in xs for y in ys for z in (0, sz)], dtype=float)
    f = [[0, 1, 3, 2], [4, 6, 7, 5], [0, 4, 5, 1], [2, 3, 7, 6], [0, 2, 6, 4], [1, 5, 7, 3]]
    return v, f


def torus_mesh(R=1.0, r=0.35, nu=32, nv=16, triangles=True):
    """A torus about Z (major radius R, minor r) of nu x nv quads; each quad split into two
    triangles (an array) unless triangles is False (a list of quads)."""
    u = np.linspace(0, 2 * np.pi, nu, endpoint=False)
    w = np.linspace(0, 2 * np.pi, nv, endpoint=False)
    U, W = np.meshgrid(u, w, indexing="ij")
    p = np.stack([(R + r * np.cos(W)) * np.cos(U), (R + r * np.cos(W)) * np.sin(U),
                  r * np.sin(W)], -1).reshape(-1, 3)
    quads = [[i * nv + j, ((i + 1) % nu) * nv + j, ((i + 1) % nu) * nv + (j + 1) % nv,
              i * nv + (j + 1) % nv] for i in range(nu) for j in range(nv)]
    if not triangles:
        return p, quads
    return p, np.array([t for a, b, c, d in quads for t in ([a, b, c], [a, c, d])])
