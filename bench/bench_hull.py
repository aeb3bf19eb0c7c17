"""Convex hull benchmark: build time vs point count, and the max_vertices accuracy trade-off.

    .venv/bin/python bench/bench_hull.py [--quick]

Part 1 times ConvexHull on 1k / 10k / 100k points of three clouds: a Gaussian blob (few hull
vertices), a noisy sphere (a sculpt: ~1k hull vertices) and exact sphere samples (the worst case:
every point is a hull vertex). "core" is the hull itself (engine.shapes.hull.build_hull); "total" adds
Polytope._finish (shapes.polytope_topology: planes, edges, neighbours). Qhull (scipy, C) is shown
for scale only. Times are CPU seconds of this process (time.process_time), best of a few runs:
on a shared machine wall-clock times swing by several times; the last column is wall clock.

Part 2 caps a 100k-point sculpt (noisy sphere) with max_vertices = K and reports, against the
exact hull: relative volume lost, and the worst distance of an input point outside the capped
hull relative to the cloud's radius. The cost of a narrow-phase query grows with the vertex and
face count, so this table is what the add-on's default cap is chosen from.
"""
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from engine.shapes.hull import ConvexHull, build_hull

try:
    from scipy.spatial import ConvexHull as QhullHull
except ImportError:  # the bench runs without scipy too
    QhullHull = None


def clouds(n, rng):
    sphere = rng.normal(size=(n, 3))
    sphere /= np.linalg.norm(sphere, axis=1, keepdims=True)
    return {
        "gaussian": rng.normal(size=(n, 3)),
        "sculpt": sphere * (1.0 + 0.02 * rng.normal(size=(n, 1))),
        "sphere": sphere,
    }


def best_time(fn, repeat, clock=time.process_time):
    best = np.inf
    out = None
    for _ in range(repeat):
        t = clock()
        out = fn()
        best = min(best, clock() - t)
    return best, out


def part1(sizes, rng):
    print("Build time vs point count (CPU s; wall s for the total in the last column)")
    print(f"{'cloud':>9} {'points':>7} {'hull verts':>10} {'faces':>7} {'core':>7} {'total':>7} "
          f"{'qhull':>7} {'wall':>7}")
    for n in sizes:
        for name, pts in clouds(n, rng).items():
            repeat = 3 if n <= 10_000 else 1
            core, _ = best_time(lambda: build_hull(pts), repeat)
            total, hull = best_time(lambda: ConvexHull(pts), repeat)
            qh = best_time(lambda: QhullHull(pts), repeat)[0] if QhullHull else float("nan")
            wall = best_time(lambda: ConvexHull(pts), 1, time.perf_counter)[0]
            print(f"{name:>9} {n:>7} {len(hull.vertices):>10} {len(hull.faces):>7} "
                  f"{core:>7.3f} {total:>7.3f} {qh:>7.3f} {wall:>7.3f}")


def outside_distance(hull, pts):
    return max(0.0, float((pts @ hull.face_normals.T - hull.planes[:, 3]).max()))


def part2(n, caps, rng):
    pts = clouds(n, rng)["sculpt"]
    exact = ConvexHull(pts)
    radius = float(np.linalg.norm(pts - exact.centroid, axis=1).max())
    print(f"\nmax_vertices on a {n}-point sculpt (exact hull: {len(exact.vertices)} vertices, "
          f"{len(exact.faces)} faces, volume {exact.volume:.5f})")
    print(f"{'cap':>5} {'verts':>6} {'faces':>6} {'edges':>6} {'volume err':>11} "
          f"{'out dist/r':>11} {'CPU s':>7}")
    for cap in caps:
        t, hull = best_time(lambda: ConvexHull(pts, max_vertices=cap), 1)
        vol_err = (exact.volume - hull.volume) / exact.volume
        print(f"{cap:>5} {len(hull.vertices):>6} {len(hull.faces):>6} {len(hull.edges):>6} "
              f"{vol_err:>11.2e} {outside_distance(hull, pts) / radius:>11.2e} {t:>7.3f}")


def main():
    quick = "--quick" in sys.argv
    rng = np.random.default_rng(2024)
    part1([1_000, 10_000] if quick else [1_000, 10_000, 100_000], rng)
    part2(20_000 if quick else 100_000, [16, 32, 64, 128, 256], rng)


if __name__ == "__main__":
    main()
