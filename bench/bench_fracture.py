"""Fracture and glue figures (issue 15): cut times and volume errors, and the glued wall.

    .venv/bin/python bench/bench_fracture.py [--plot docs/fracture_wall.png]

1. engine.features.fracture: a box into 40 and 1000 pieces, a torus (32 x 16 quads) into 40; best of
   3 wall-clock times (seed points included), the pieces' total volume against the mesh's.
2. The issue's wall (2 x 0.25 x 1.5 m, 2000 kg/m^3, 60 pieces, seed 7) glued on a ground:
   sag under gravity over 2 s (awake), then a 1000 kg ball at 15 m/s into the Start
   Deactivated wall with weak (1e6 N/m^2) and strong (1e10 N/m^2) glue: bonds broken after
   1 s, largest speed, simulation time; with the world's default 1 iteration and with 4.
"""
import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

from scenes_meshes import box_mesh, torus_mesh  # the meshes of tests/test_fracture.py

from engine import Box, EngineError, Sphere, World
from engine.features.fracture import fracture, mesh_volume, volume_points
from engine.features.glue import add_glue, add_pieces

WALL = (2.0, 0.25, 1.5)


def time_cut(name, v, f, n, seed=1, repeats=3):
    best = np.inf
    for _ in range(repeats):
        t = time.perf_counter()
        fr = fracture(v, f, volume_points(v, f, n, seed=seed))
        best = min(best, time.perf_counter() - t)
    vol = sum(p.volume for p in fr.pieces)
    ref = mesh_volume(v, f)
    print(f"{name:>6} -> {n:5d} pieces: {best:7.3f} s  pieces {len(fr.pieces):5d}  bonds "
          f"{len(fr.bond_a):6d}  volume error {abs(vol / ref - 1):.2e}  smallest piece "
          f"{min(p.volume for p in fr.pieces) / ref:.2e} of the mesh")


def wall(strength, iterations, ball, asleep, seconds):
    v, f = box_mesh(WALL, centred=True)
    fr = fracture(v, f, volume_points(v, f, 60, seed=7))
    w = World(iterations=iterations)
    w.add_body(Box((10, 10, 0.5)), position=(0, 0, -0.5), kind="static")
    bodies = add_pieces(w, fr, density=2000.0, asleep=asleep)
    keep = fr.bond_area >= 0.02 * np.median(fr.bond_area)
    joints = add_glue(w, bodies[fr.bond_a[keep]], bodies[fr.bond_b[keep]],
                      fr.bond_centre[keep], fr.bond_area[keep], strength)
    if ball:
        w.add_body(Sphere(0.4), position=(0, -0.6, 0.75), linear_velocity=(0, 15, 0),
                   mass=1000)
    x0 = w.positions[bodies].copy()
    t = time.perf_counter()
    status = "ok"
    try:
        for _ in range(round(seconds * 24)):
            w.step(1 / 24)
    except EngineError as exc:
        status = f"FAILED ({str(exc)[:40]})"
    el = time.perf_counter() - t
    move = np.linalg.norm(w.positions[bodies] - x0, axis=1)
    speed = np.linalg.norm(w.linear_velocities, axis=1).max()
    if status == "ok" and speed > 2 * 15.0 + 50.0:
        # The fuzzer's bound (issue 11): twice the fastest speed at the start (the 15 m/s
        # ball) plus 50 m/s. Faster pieces are energy from nowhere, not a result.
        status = f"FAILED (pieces at {speed:.3g} m/s)"
    return dict(world=w, fracture=fr, bodies=bodies, joints=joints, time=el, status=status,
                move=move, speed=speed, broken=int(w.joint_broken.sum()))


def plot(res, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from mpl_toolkits.mplot3d.art3d import Poly3DCollection

    from engine.core import quat
    w, fr, bodies = res["world"], res["fracture"], res["bodies"]
    fig = plt.figure(figsize=(9, 6))
    ax = fig.add_subplot(projection="3d")
    polys, colours = [], []
    rng = np.random.default_rng(0)
    for p, b in zip(fr.pieces, bodies):
        q = w.orientations[b]
        pos = w.positions[b]
        local = p.vertices - p.centroid
        world = quat.rotate(np.broadcast_to(q, (len(local), 4)), local) + pos
        c = rng.uniform(0.45, 0.85) * np.array([1.0, 0.85, 0.7])
        for fc, lab in zip(p.faces(), p.face_labels):
            polys.append(world[fc])
            colours.append(c if lab >= 0 else c * 0.6)
    ax.add_collection3d(Poly3DCollection(polys, facecolors=colours, edgecolors="k",
                                         linewidths=0.2))
    ax.set_xlim(-2, 2)
    ax.set_ylim(-1, 3)
    ax.set_zlim(0, 2)
    ax.view_init(elev=20, azim=-60)
    ax.set_title("60-piece glued wall (1e6 N/m^2) after a 1000 kg ball at 15 m/s, t = 1 s")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print("wrote", path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plot", default=None)
    ap.add_argument("--quick", action="store_true", help="skip the 1000-piece cut")
    args = ap.parse_args()
    print("== fracture (engine.features.fracture, wall-clock, best of 3)")
    v, f = box_mesh(WALL, centred=True)
    time_cut("box", v, f, 40)
    if not args.quick:
        time_cut("box", v, f, 1000, repeats=1)
    tv, tf = torus_mesh(triangles=False)
    time_cut("torus", tv, tf, 40, repeats=1)
    print("== glued wall, 60 pieces, 1/24 s steps")
    for it in (1, 4):
        r = wall(1e6, it, ball=False, asleep=False, seconds=2.0)
        print(f"iterations {it}: hold under gravity 2 s awake: max move "
              f"{r['move'].max() * 1e3:.3f} mm, bonds broken {r['broken']}/{len(r['joints'])}, "
              f"{r['time']:.1f} s, {r['status']}")
    for it in (1, 4):
        for s in (1e6, 1e10):
            r = wall(s, it, ball=True, asleep=True, seconds=1.0)
            print(f"iterations {it}: ball into asleep wall, glue {s:.0e} N/m^2: bonds broken "
                  f"{r['broken']}/{len(r['joints'])}, largest speed {r['speed']:.1f} m/s, "
                  f"{r['time']:.1f} s, {r['status']}")
            if args.plot and it == 4 and s == 1e6:
                plot(r, args.plot)


if __name__ == "__main__":
    main()
