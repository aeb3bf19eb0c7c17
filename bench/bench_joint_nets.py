"""Joint nets and ladders at rest and swinging (issue 25): ours against pybullet.

The layout of a peer engine's joint benchmark: spheres of radius 0.4 m (density 1000, 268 kg)
in a vertical grid 1 m apart in the XZ plane, each joined to its right and lower neighbour by
a point joint at the midpoint, gravity -10 m/s^2, sleeping off. Scenes:

- ``ladder``: 2 x 12, the top row static: hanging straight down is equilibrium;
- ``net30``: 30 x 30, the top row static (at rest too);
- ``corners``: 20 x 20 hung by its two top corners (static), swinging in its plane.

Ours at its defaults (one World.step per frame); pybullet at Blender's settings (10 substeps a
frame, 10 iterations, JOINT_POINT2POINT between maximal-coordinate bodies, no damping), and
for the net hung by its corners also with those corners pinned to static anchors (see
``bullet``: with static corner spheres pybullet lets the net fall away).
Printed per scene and engine, over the run: the fastest body (and from 0.5 s on, after the
joints have taken up the load, and at the end), the worst joint gap (the distance between a
joint's two anchors: the constraint error), the worst link stretch (centre distance beyond
1 m), the mechanical energy's largest rise above its start (J; never positive when nothing
gains energy), and CPU ms per frame.

    python bench/bench_joint_nets.py [--scenes ladder,net30,corners] [--fps 24] [--seconds 2]
        [--no-pybullet]
    HB_ENGINE_ROOT=/path/to/an/exported/commit python bench/bench_joint_nets.py   # before/after
"""
import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.environ.get("HB_ENGINE_ROOT", ROOT))  # the engine measured

from engine import Sphere, World
from engine.core import quat

RADIUS, SPACING, DENSITY, G = 0.4, 1.0, 1000.0, 10.0
MASS = DENSITY * 4.0 / 3.0 * np.pi * RADIUS ** 3
SCENES = {"ladder": (2, 12, "top"), "net30": (30, 30, "top"), "corners": (20, 20, "corners")}


def layout(cols, rows, pins):
    """Centres (n, 3), static mask (n,), links (L, 2): node (c, r) at x = c, z = -r."""
    c, r = np.meshgrid(np.arange(cols), np.arange(rows), indexing="ij")
    c, r = c.ravel(), r.ravel()
    pos = np.stack((c * SPACING, np.zeros_like(c, dtype=float), -r * SPACING), 1).astype(float)
    static = (r == 0) if pins == "top" else ((r == 0) & ((c == 0) | (c == cols - 1)))
    idx = np.arange(cols * rows).reshape(cols, rows)
    links = np.concatenate((np.stack((idx[:-1].ravel(), idx[1:].ravel()), 1),
                            np.stack((idx[:, :-1].ravel(), idx[:, 1:].ravel()), 1)))
    links = links[~(static[links[:, 0]] & static[links[:, 1]])]
    return pos, static, links


def measures(pos, q, vel, links, pos0, static):
    """(fastest dynamic body m/s, worst joint gap m, worst stretch m, energy J)."""
    half = 0.5 * (pos0[links[:, 1]] - pos0[links[:, 0]])
    pa = pos[links[:, 0]] + quat.rotate(q[links[:, 0]], half)
    pb = pos[links[:, 1]] - quat.rotate(q[links[:, 1]], half)
    gap = float(np.linalg.norm(pb - pa, axis=1).max())
    dist = np.linalg.norm(pos[links[:, 1]] - pos[links[:, 0]], axis=1)
    dyn = ~static
    v = vel[dyn, :3]
    w = vel[dyn, 3:]
    inertia = 0.4 * MASS * RADIUS ** 2   # a sphere: the same about every axis
    energy = float(np.sum(0.5 * MASS * (v * v).sum(1) + 0.5 * inertia * (w * w).sum(1)
                          + MASS * G * pos[dyn, 2]))
    return (float(np.linalg.norm(v, axis=1).max()), gap,
            float(np.maximum(dist - SPACING, 0.0).max()), energy)


def run(engine_step, state, scene, fps, seconds):
    pos0, static, links = layout(*SCENES[scene])
    frames = round(seconds * fps)
    out = {"v": 0.0, "v_late": 0.0, "gap": 0.0, "stretch": 0.0, "rise": -np.inf, "cpu": 0.0}
    e0 = measures(*state(), links, pos0, static)[3]
    for f in range(frames):
        c0 = time.process_time()
        engine_step()
        out["cpu"] += time.process_time() - c0
        v, gap, stretch, e = measures(*state(), links, pos0, static)
        out["v"] = max(out["v"], v)
        if (f + 1) / fps >= 0.5:
            out["v_late"] = max(out["v_late"], v)
        out["gap"], out["stretch"] = max(out["gap"], gap), max(out["stretch"], stretch)
        out["rise"] = max(out["rise"], e - e0)
    out["v_end"] = v
    out["cpu"] *= 1000.0 / frames
    return out


def ours(scene, fps, seconds):
    pos, static, links = layout(*SCENES[scene])
    w = World(gravity=(0, 0, -G), sleeping=False)
    for p, s in zip(pos, static):
        w.add_body(Sphere(RADIUS), position=p, kind="static" if s else "dynamic",
                   density=DENSITY)
    for a, b in links:
        w.add_joint("point", int(a), int(b), position=0.5 * (pos[a] + pos[b]))

    def state():
        vel = np.concatenate((w.linear_velocities, w.angular_velocities), 1)
        return w.positions, w.orientations, vel
    return run(lambda: w.step(1.0 / fps), state, scene, fps, seconds)


def bullet(scene, fps, seconds, anchored=False):
    """pybullet at Blender's settings. anchored: the pinned nodes are dynamic spheres held
    by a point joint to a static anchor at their centre (as bench_joints_grid pins its
    corners), not static spheres: pybullet tears the net hung by two static corner spheres
    apart (11 m), and holds it pinned so."""
    import pybullet as p
    pos, static, links = layout(*SCENES[scene])
    cid = p.connect(p.DIRECT)
    p.setGravity(0, 0, -G, physicsClientId=cid)
    p.setPhysicsEngineParameter(fixedTimeStep=1.0 / fps, numSubSteps=round(240 / fps),
                                numSolverIterations=10, physicsClientId=cid)
    shape = p.createCollisionShape(p.GEOM_SPHERE, radius=RADIUS, physicsClientId=cid)
    ids = [p.createMultiBody(baseMass=0.0 if s and not anchored else MASS,
                             baseCollisionShapeIndex=shape, basePosition=q.tolist(),
                             useMaximalCoordinates=True, physicsClientId=cid)
           for q, s in zip(pos, static)]
    for b in ids:
        p.changeDynamics(b, -1, linearDamping=0.0, angularDamping=0.0, physicsClientId=cid)
    for a, b in links:
        half = (0.5 * (pos[b] - pos[a])).tolist()
        p.createConstraint(ids[a], -1, ids[b], -1, p.JOINT_POINT2POINT, [0, 0, 0], half,
                           [-x for x in half], physicsClientId=cid)
    if anchored:
        for c in np.flatnonzero(static):
            anchor = p.createMultiBody(baseMass=0.0, baseCollisionShapeIndex=-1,
                                       basePosition=pos[c].tolist(),
                                       useMaximalCoordinates=True, physicsClientId=cid)
            p.createConstraint(ids[c], -1, anchor, -1, p.JOINT_POINT2POINT, [0, 0, 0],
                               [0, 0, 0], [0, 0, 0], physicsClientId=cid)

    def state():
        pq = [p.getBasePositionAndOrientation(b, physicsClientId=cid) for b in ids]
        vw = [p.getBaseVelocity(b, physicsClientId=cid) for b in ids]
        q = np.array([r for _, r in pq])[:, [3, 0, 1, 2]]   # pybullet: (x, y, z, w)
        return (np.array([x for x, _ in pq]), q,
                np.array([list(v) + list(w) for v, w in vw]))
    try:
        return run(lambda: p.stepSimulation(physicsClientId=cid), state, scene, fps, seconds)
    finally:
        p.disconnect(cid)


def warm_up():
    """Step a small ladder once, untimed: the engine's compiled kernels (engine.core.jit) are
    compiled, or loaded from their cache, at their first call, not inside the timed frames.
    Returns the seconds it took."""
    t0 = time.perf_counter()
    ours("ladder", 24.0, 1.0 / 24.0)
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenes", default="ladder,net30,corners")
    ap.add_argument("--fps", type=float, default=24.0)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--no-pybullet", action="store_true")
    args = ap.parse_args()
    print(f"warm-up (kernels compiled or loaded, untimed): {warm_up():.2f} s")
    print(f"{args.seconds:g} s at {args.fps:g} fps; speeds m/s, gap and stretch mm, "
          "energy rise J (above the start)")
    print(f"{'scene':8s} {'engine':10s} {'fastest':>9s} {'>= 0.5 s':>9s} {'at end':>9s} "
          f"{'gap':>8s} {'stretch':>8s} {'E rise':>10s} {'cpu ms/f':>9s}")
    for scene in args.scenes.split(","):
        rows = [("ours", ours(scene, args.fps, args.seconds))]
        if not args.no_pybullet:
            rows.append(("pybullet", bullet(scene, args.fps, args.seconds)))
            if SCENES[scene][2] == "corners":
                rows.append(("pyb pinned", bullet(scene, args.fps, args.seconds, True)))
        for name, r in rows:
            print(f"{scene:8s} {name:10s} {r['v']:9.3g} {r['v_late']:9.3g} {r['v_end']:9.3g} "
                  f"{1000 * r['gap']:8.2f} {1000 * r['stretch']:8.2f} {r['rise']:10.4g} "
                  f"{r['cpu']:9.1f}", flush=True)


if __name__ == "__main__":
    main()
