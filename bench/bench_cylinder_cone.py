"""Figures for the exact Cylinder and Cone shapes (issue 14 item 4).

    .venv/bin/python bench/bench_cylinder_cone.py

Prints: the rolling acceleration of a solid cylinder down a 10 degree slope against
(2/3) g sin(10 deg) and its largest lift-off / sinking over 2 s at 1/24 and 1/60 s (box and
triangle-mesh slopes); the tilt of a coin dropped flat; the signed-distance agreement with a
brute-force oracle (max over unit n of -(h_A(n) + h_B(-n)), closed-form support values) and
with python-fcl on random poses; and the cost of a step with 200 cylinders and cones.
"""
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import test_cylinder_cone as T

import engine
from engine.collision.queries import pair_distance
from engine.collision.shape_table import ShapeTable
from engine.core import quat


def rolling(dt, ground):
    r = 0.3
    w, nrm, down = T.slope_world(10.0, ground=ground)
    start = nrm * r - down * 4.0 + (np.array([0, 0.3, 0]) if ground == "mesh" else 0.0)
    b = w.add_body(engine.Cylinder(r, 0.4), position=start,
                   orientation=T.qaxis((1, 0, 0), np.pi / 2), mass=2.0, friction=0.8)
    s, lift = [], []
    n = round(2.0 / dt)
    for _ in range(n):
        w.step(dt)
        p = w.positions[b]
        s.append(np.dot(p - start, down))
        lift.append(np.dot(p, nrm) - r)
    a = 2 * np.polyfit(dt * np.arange(1, n + 1), s, 2)[0]
    ref = 2 / 3 * T.G * np.sin(np.radians(10))
    return 100 * (a / ref - 1), 1000 * max(lift), 1000 * min(lift)


def main():
    print("Rolling solid cylinder (r 0.3 m), 10 deg slope, 2 s: a vs 2/3 g sin 10 = "
          f"{2 / 3 * T.G * np.sin(np.radians(10)):.5f} m/s^2")
    for ground in ("box", "mesh"):
        for dt in (1 / 24, 1 / 60):
            err, up, low = rolling(dt, ground)
            print(f"  {ground:4s} dt 1/{round(1 / dt)}: accel error {err:+.4f} %, "
                  f"height off the slope max {up:+.4f} mm / min {low:+.4f} mm")
    for ground in ("box", "mesh"):
        w = T.flat_world(ground)
        b = w.add_body(engine.Cylinder(0.1, 0.01), position=(0.13, -0.07, 0.3), mass=0.01)
        _, q = T.run(w, b, 1.5, 1 / 60)
        print(f"Coin (r 0.1, 1 cm) dropped flat on {ground}: tilt {T.axis_tilt_deg(q):.4f} deg")

    ia, ib, ra, rb, q, pa, pb = T._random_pairs(2, 300, (0.3, 1.5))
    table = ShapeTable(T.SHAPES)
    r = pair_distance(table, ia, pa, ra, ib, pb, rb)
    ref = np.array([T.brute_signed_distance(T.SHAPES[ia[i]], ra[i], pa[i], T.SHAPES[ib[i]],
                                            rb[i], pb[i]) for i in range(len(ia))])
    err = np.abs(r["distance"] - ref)
    sep, shallow = ref > 0, (ref <= 0) & (ref > -0.1)
    deep = ref <= -0.1
    print(f"Signed distance vs brute force, 300 random poses: separated ({sep.sum()}) max err "
          f"{err[sep].max():.2e} m; penetrating < 10 cm ({shallow.sum()}) max {err[shallow].max():.2e} m; "
          f"deeper ({deep.sum()}) max relative {np.max(err[deep] / -ref[deep]):.2e}")
    try:
        import fcl
    except ImportError:
        fcl = None
    if fcl is not None:
        ia, ib, ra, rb, q, pa, pb = T._random_pairs(7, 200, (1.6, 2.6))
        r = pair_distance(table, ia, pa, ra, ib, pb, rb)

        def geom(s):
            if isinstance(s, engine.Cylinder):
                return fcl.Cylinder(s.radius, s.height)
            if isinstance(s, engine.Cone):
                return fcl.Cone(s.radius, s.height)
            if isinstance(s, engine.Box):
                return fcl.Box(*(2 * s.half_extents))
            return fcl.Sphere(s.radius)

        fr = np.array([fcl.distance(
            fcl.CollisionObject(geom(T.SHAPES[ia[i]]), fcl.Transform(q[i, 0], pa[i])),
            fcl.CollisionObject(geom(T.SHAPES[ib[i]]), fcl.Transform(q[i, 1], pb[i])),
            fcl.DistanceRequest(), fcl.DistanceResult()) for i in range(len(ia))])
        e = np.abs(r["distance"] - fr)
        print(f"Separated distance vs python-fcl, 200 poses: max |diff| {e.max():.2e} m, "
              f"median {np.median(e):.2e} m; fcl - ours >= {np.min(fr - r['distance']):.1e} m "
              "(fcl's libccd GJK stops early; the brute force sides with ours)")

    w = T.flat_world()
    rng = np.random.default_rng(0)
    for i in range(10):
        for j in range(10):
            for k in range(2):
                s = engine.Cylinder(0.2, 0.3) if (i + j + k) % 2 else engine.Cone(0.2, 0.4)
                w.add_body(s, position=(i * 0.6 - 3, j * 0.6 - 3, 0.4 + k * 0.6),
                           orientation=quat.normalize(rng.normal(size=4)), mass=1.0)
    t0 = time.perf_counter()
    for _ in range(60):
        w.step(1 / 60)
    print(f"200 cylinders and cones falling on a box: {1000 * (time.perf_counter() - t0) / 60:.1f} ms "
          "per 1/60 s step")


if __name__ == "__main__":
    main()
