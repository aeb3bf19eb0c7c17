"""Broadphase timings: the compiled sort-and-sweep (find_pairs; its first call compiles it,
untimed); then the
constraint graph: colour count vs the lower bound D and timings (engine.dynamics.graph).

    python bench/bench_broadphase.py            # everything, ~30 s
    python bench/bench_broadphase.py --quick    # fewer sizes, no pybullet

Scenes: 1000 cubes in a 10x10x10 grid (fat boxes touching), 1000 rotated cubes in a heap,
5000 random boxes. Scaling: random boxes at constant density from N = 100 to 20000, with the
fitted log-log exponent of time vs N (1 = linear; N log N fits ~1.1 over this range).
With pybullet installed, also times pybullet's collision detection on the same boxes
(broadphase + narrowphase in C++, so only an upper bound on its broadphase).
"""
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from engine.collision.broadphase import Broadphase, find_pairs
from engine.dynamics.graph import colour_constraints, islands

MARGIN = 0.05


def best_time(fn, *args, repeat=5, budget=2.0):
    """Best of `repeat` runs (fewer if one run is slow)."""
    best = np.inf
    t_end = time.perf_counter() + budget
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn(*args)
        best = min(best, time.perf_counter() - t)
        if time.perf_counter() > t_end:
            break
    return best, out


def grid_scene():
    g = np.stack(np.meshgrid(*[np.arange(10) * 1.02] * 3, indexing="ij"), -1).reshape(-1, 3)
    return g - 0.5 - MARGIN, g + 0.5 + MARGIN


def random_rotations(rng, n):
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    w, x, y, z = q.T
    return np.stack([
        1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
        2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
        2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], 1).reshape(n, 3, 3)


def pile_scene(n=1000, seed=0):
    """Unit cubes in a heap: a cone of jittered lattice sites filled from the bottom, each
    cube randomly rotated (its AABB grows up to sqrt(3))."""
    rng = np.random.default_rng(seed)
    sites = np.stack(np.meshgrid(np.arange(-12, 13), np.arange(-12, 13), np.arange(0, 30),
                                 indexing="ij"), -1).reshape(-1, 3).astype(float)
    r = np.hypot(sites[:, 0], sites[:, 1])
    sites, r = sites[r + sites[:, 2] * 0.9 < 10.0], r[r + sites[:, 2] * 0.9 < 10.0]
    sites = sites[np.argsort(sites[:, 2] * 100 + r, kind="stable")][:n]
    pos = sites * 1.05 + rng.uniform(-0.1, 0.1, (len(sites), 3)) + [0, 0, 0.5]
    half = np.abs(random_rotations(rng, len(pos))).sum(axis=2) * 0.5
    lo, hi = pos - half - MARGIN, pos + half + MARGIN
    # the ground, a big static slab
    lo = np.vstack((lo, [-50, -50, -1]))
    hi = np.vstack((hi, [50, 50, 0 + MARGIN]))
    static = np.zeros(len(lo), bool)
    static[-1] = True
    return lo, hi, static


def random_scene(n, density=0.05, seed=0):
    """n boxes of size 0.5..1.5 placed uniformly at `density` boxes per unit volume."""
    rng = np.random.default_rng(seed)
    side = (n / density) ** (1 / 3)
    c = rng.uniform(0, side, (n, 3))
    h = rng.uniform(0.25, 0.75, (n, 3))
    return c - h, c + h


def pyramid_scene(base=20):
    """A 2D pyramid of unit boxes (base 20: 210 boxes), rows offset by half a box, on a
    static ground slab."""
    rows = [(r, k) for r in range(base) for k in range(base - r)]
    c = np.array([[k + 0.5 * r, 0.0, r + 0.5] for r, k in rows])
    lo = np.vstack((c - 0.5 - MARGIN, [-50, -50, -1]))
    hi = np.vstack((c + 0.5 + MARGIN, [50, 50, MARGIN]))
    static = np.zeros(len(lo), bool)
    static[-1] = True
    return lo, hi, static


def bench_persistent(steps=30):
    """Broadphase (persistent fat boxes) vs a fresh find_pairs each step, on the heap with a
    fraction of the bodies jittering by ~2 cm per step (margin 5 cm)."""
    print("\npersistent fat boxes (Broadphase.update) vs find_pairs each step, 1000-cube heap")
    print("moving   update ms   find_pairs ms")
    lo0, hi0, static = pile_scene()
    rng = np.random.default_rng(2)
    for frac in (0.0, 0.02, 0.2, 1.0):
        bp = Broadphase(margin=MARGIN)
        lo, hi = lo0.copy(), hi0.copy()
        bp.update(lo, hi, static=static)
        t_up, t_full = [], []
        for _ in range(steps):
            moving = (rng.random(len(lo)) < frac) & ~static
            d = np.zeros_like(lo)
            d[moving] = rng.normal(0.0, 0.02, (int(moving.sum()), 3))
            lo += d
            hi += d
            t = time.perf_counter()
            bp.update(lo, hi, d, static=static)
            t_up.append(time.perf_counter() - t)
            t = time.perf_counter()
            find_pairs(lo - MARGIN, hi + MARGIN, static=static)
            t_full.append(time.perf_counter() - t)
        print(f"{frac:6.0%} {np.median(t_up) * 1e3:11.2f} {np.median(t_full) * 1e3:15.2f}")


def bench_graph():
    """Colour count against D (most constraints at one dynamic body, the lower bound) on
    contact graphs from the broadphase, and the time to colour and to find islands."""
    print("\nconstraint graph (contacts = broadphase pairs)")
    print("graph                         constraints   D  colours  colour ms  islands ms")
    rng = np.random.default_rng(1)
    lo, hi, static = pile_scene()
    perm = rng.permutation(len(lo))  # the same heap with bodies numbered at random
    lat_lo, lat_hi = grid_scene()
    graphs = [("1000-cube heap + ground", (lo, hi, static)),
              ("  same, bodies shuffled", (lo[perm], hi[perm], static[perm])),
              ("1000 cubes, 10x10x10 grid", (lat_lo, lat_hi, np.zeros(1000, bool))),
              ("210-box pyramid + ground", pyramid_scene()),
              ("500-cube heap + ground", pile_scene(500))]
    for name, (lo, hi, static) in graphs:
        a, b = find_pairs(lo, hi, static=static)
        ends = np.concatenate((a[~static[a]], b[~static[b]]))
        d = int(np.bincount(ends).max())
        tc, res = best_time(colour_constraints, a, b, static, repeat=9)
        ti, _ = best_time(islands, len(lo), a, b, static, repeat=9)
        print(f"{name:29s} {len(a):11d} {d:3d} {res.n_colours:8d} {tc * 1e3:10.2f} "
              f"{ti * 1e3:11.2f}")


def pybullet_time(lo, hi):
    try:
        import pybullet as p
    except ImportError:
        return None
    cid = p.connect(p.DIRECT)
    try:
        for a, b in zip(lo, hi):
            shape = p.createCollisionShape(p.GEOM_BOX, halfExtents=list((b - a) / 2),
                                           physicsClientId=cid)
            # mass 1: static-static pairs are skipped by Bullet, as by us
            p.createMultiBody(1.0, shape, basePosition=list((a + b) / 2), physicsClientId=cid)
        p.performCollisionDetection(physicsClientId=cid)
        t, _ = best_time(p.performCollisionDetection, cid)
        return t
    finally:
        p.disconnect(cid)


def main():
    quick = "--quick" in sys.argv
    find_pairs(*random_scene(10, seed=1))          # compiles the sweep
    print("scene                        pairs   sweep ms")
    lo, hi, static = pile_scene()
    scenes = [("1000 cubes, 10x10x10 grid", grid_scene() + (None,)),
              ("1000 cubes in a heap+ground", (lo, hi, static)),
              ("5000 random boxes", random_scene(5000) + (None,))]
    for name, (lo, hi, static) in scenes:
        ts, (ia, _) = best_time(find_pairs, lo, hi, None, None, static)
        print(f"{name:27s} {len(ia):7d} {ts * 1e3:10.2f}")

    sizes = [100, 300, 1000, 3000, 10000, 20000]
    if quick:
        sizes = sizes[:-1]
    print("\nrandom boxes at constant density (0.05 / unit volume)")
    print("      N    pairs   sweep ms  pybullet ms (broad+narrow)")
    ts_all = []
    for n in sizes:
        lo, hi = random_scene(n, seed=n)
        ts, (ia, _) = best_time(find_pairs, lo, hi)
        tb = pybullet_time(lo, hi) if n <= 3000 and not quick else None
        ts_all.append(ts)
        tb_s = f"{tb * 1e3:10.2f}" if tb is not None else "         -"
        print(f"{n:7d} {len(ia):8d} {ts * 1e3:10.2f} {tb_s}")
    # Exponent over the upper half of the range (small N is dominated by fixed overhead).
    x = np.log(sizes[2:])
    k = np.polyfit(x, np.log(ts_all[2:]), 1)[0]
    print(f"log-log exponent of time vs N (N >= {sizes[2]}): {k:.2f}")
    bench_persistent()
    bench_graph()


if __name__ == "__main__":
    main()
