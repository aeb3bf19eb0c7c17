"""A 20 x 20 grid of spheres linked by point joints, hung by two corners: ours vs pybullet.

Spheres of radius 0.04 m, 1 kg, 0.1 m apart in a horizontal grid; each sphere is joined to
its +x and +y neighbours by a point joint at the midpoint (760 joints), and the two corners of
the first row are pinned to the world by point joints. The sheet falls and swings for
``--frames`` frames at 24 fps. pybullet runs in the same process at Blender's settings (one
stepSimulation per frame split into 10 substeps = 240 Hz, 10 solver iterations,
createConstraint JOINT_POINT2POINT, maximal coordinates: btRigidBody + btPoint2PointConstraint,
what Blender builds); ours at its defaults (one World.step(1/24) per frame).

Printed per engine, worst over all links and frames (and at the end): wall and CPU time per
frame; the joint gap (distance between a joint's two anchor points, one fixed in each sphere:
the constraint error itself); the link stretch (centre distance beyond 0.1 m, which a gap
allows); the old figure |centre distance - 0.1 m| (which also counts a link folded at its
joint: a point joint at the midpoint lets both spheres turn, so two linked centres may be
anywhere from 0 to 0.1 m apart without any error, and a fully folded link reads 100 mm); and
the worst drift of a pinned corner.

--calls also prints the C-level calls (numpy functions, ufuncs, array methods, builtins) and
Python calls our World.step makes per frame, averaged over the run (a separate untimed run).

--split also prints where our frame goes: CPU ms per frame in the joint solver's calls, the
contact solver's, the broad and narrow phase and the integration (the functions wrapped with
timers, so the total runs a little slower).

    python bench/bench_joints_grid.py [--n 20] [--frames 96] [--no-pybullet] [--split] [--calls]
    HB_ENGINE_ROOT=/path/to/an/exported/commit python bench/bench_joints_grid.py ...
                                          # measure another commit's engine (before/after)
"""
import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.environ.get("HB_ENGINE_ROOT", ROOT))  # the engine measured

from engine import Sphere, World

SPACING = 0.1
RADIUS = 0.04


def grid(n):
    """Sphere centres (n*n, 3), links (L, 2) and the two pinned corner indices."""
    ij = np.stack(np.meshgrid(np.arange(n), np.arange(n), indexing="ij"), -1).reshape(-1, 2)
    pos = np.zeros((n * n, 3))
    pos[:, :2] = ij * SPACING
    pos[:, 2] = 2.0
    idx = np.arange(n * n).reshape(n, n)
    links = np.concatenate((np.stack((idx[:-1].ravel(), idx[1:].ravel()), 1),
                            np.stack((idx[:, :-1].ravel(), idx[:, 1:].ravel()), 1)))
    return pos, links, (int(idx[0, 0]), int(idx[-1, 0]))


def stretch(pos, links):
    """|centre distance - 0.1 m| per link (folding counts too; see the docstring)."""
    return np.abs(np.linalg.norm(pos[links[:, 1]] - pos[links[:, 0]], axis=1) - SPACING)


def extension(pos, links):
    """Centre distance beyond 0.1 m per link."""
    return np.maximum(np.linalg.norm(pos[links[:, 1]] - pos[links[:, 0]], axis=1) - SPACING, 0)


def _rotate(q, v):
    """Rotate v (k, 3) by unit quaternions q (k, 4) given (w, x, y, z)."""
    u, w = q[:, 1:], q[:, :1]
    t = 2.0 * np.cross(u, v)
    return v + w * t + np.cross(u, t)


def gap(pos, quat, links, pos0):
    """Distance between each link's two anchors (the midpoint at the start, fixed in each
    sphere; the spheres start unrotated)."""
    half = 0.5 * (pos0[links[:, 1]] - pos0[links[:, 0]])
    pa = pos[links[:, 0]] + _rotate(quat[links[:, 0]], half)
    pb = pos[links[:, 1]] - _rotate(quat[links[:, 1]], half)
    return np.linalg.norm(pb - pa, axis=1)


def build_ours(n):
    """Our World holding the grid."""
    pos, links, pins = grid(n)
    w = World()
    for p in pos:
        w.add_body(Sphere(RADIUS), position=p, mass=1.0)
    mid = 0.5 * (pos[links[:, 0]] + pos[links[:, 1]])
    for (a, b), m in zip(links, mid):
        w.add_joint("point", int(a), int(b), position=m)
    for c in pins:
        w.add_joint("point", c, None, position=pos[c])
    return w


def run_ours(n, frames):
    pos, links, pins = grid(n)
    w = build_ours(n)
    return _loop(lambda: w.step(1.0 / 24.0),
                 lambda: (w.positions.copy(), w.orientations.copy()), links, pins, pos, frames)


def run_pybullet(n, frames):
    import pybullet as p
    pos, links, pins = grid(n)
    cid = p.connect(p.DIRECT)
    p.setGravity(0, 0, -9.81, physicsClientId=cid)
    p.setPhysicsEngineParameter(fixedTimeStep=1.0 / 24.0, numSubSteps=10,
                                numSolverIterations=10, physicsClientId=cid)
    shape = p.createCollisionShape(p.GEOM_SPHERE, radius=RADIUS, physicsClientId=cid)
    ids = [p.createMultiBody(baseMass=1.0, baseCollisionShapeIndex=shape,
                             basePosition=q.tolist(), useMaximalCoordinates=True,
                             physicsClientId=cid) for q in pos]
    for b in ids:   # Blender's damping defaults are not ours: no damping in either engine
        p.changeDynamics(b, -1, linearDamping=0.0, angularDamping=0.0, physicsClientId=cid)
    for a, b in links:
        half = (0.5 * (pos[b] - pos[a])).tolist()
        p.createConstraint(ids[a], -1, ids[b], -1, p.JOINT_POINT2POINT, [0, 0, 0], half,
                           [-x for x in half], physicsClientId=cid)
    for c in pins:   # pinned to a static anchor body (a world constraint needs a multibody)
        anchor = p.createMultiBody(baseMass=0.0, baseCollisionShapeIndex=-1,
                                   basePosition=pos[c].tolist(), useMaximalCoordinates=True,
                                   physicsClientId=cid)
        p.createConstraint(ids[c], -1, anchor, -1, p.JOINT_POINT2POINT, [0, 0, 0], [0, 0, 0],
                           [0, 0, 0], physicsClientId=cid)

    def poses():
        pq = [p.getBasePositionAndOrientation(b, physicsClientId=cid) for b in ids]
        quat = np.array([q for _, q in pq])[:, [3, 0, 1, 2]]    # pybullet: (x, y, z, w)
        return np.array([x for x, _ in pq]), quat
    out = _loop(lambda: p.stepSimulation(physicsClientId=cid), poses, links, pins, pos, frames)
    p.disconnect(cid)
    return out


def count_calls(n, frames):
    """Mean (C calls, Python calls) of one World.step(1/24) over frames frames."""
    w = build_ours(n)
    counts = {"c_call": 0, "call": 0}

    def tracer(frame, event, arg):
        if event in counts:
            counts[event] += 1
    for _ in range(frames):
        sys.setprofile(tracer)
        try:
            w.step(1.0 / 24.0)
        finally:
            sys.setprofile(None)
    return counts["c_call"] / frames, counts["call"] / frames


def split_timers():
    """Wrap the engine's per-pass / per-substep calls with CPU timers; returns the totals."""
    import collections

    from engine.dynamics import joint_solver, solver
    from engine.world import world
    acc = collections.defaultdict(float)

    def wrap(owner, name, label):
        f = getattr(owner, name)

        def timed(*a, **k):
            c = time.process_time()
            try:
                return f(*a, **k)
            finally:
                acc[label] += time.process_time() - c
        setattr(owner, name, timed)
    for name in ("__init__", "warm_start", "solve", "end_substep", "finish"):
        wrap(joint_solver.JointSolver, name, "joints." + name)
    for name in ("__init__", "warm_start", "solve", "restitution"):
        wrap(solver.ContactSolver, name, "contacts." + name)
    for name in ("_broadphase", "_narrowphase", "_step"):
        wrap(world.World, name, "world." + name)
    for name in ("integrate_velocities", "integrate_positions"):
        if hasattr(world, name):
            wrap(world, name, "integrate." + name)
    return acc


def _loop(step, poses, links, pins, pos0, frames):
    wall = cpu = 0.0
    worst = {"gap": 0.0, "ext": 0.0, "old": 0.0}
    corner = 0.0
    for _ in range(frames):
        t0, c0 = time.perf_counter(), time.process_time()
        step()
        wall += time.perf_counter() - t0
        cpu += time.process_time() - c0
        pos, quat = poses()
        now = {"gap": gap(pos, quat, links, pos0).max(), "ext": extension(pos, links).max(),
               "old": stretch(pos, links).max()}
        worst = {k: max(v, float(now[k])) for k, v in worst.items()}
        corner = max(corner, float(np.linalg.norm(pos[list(pins)] - pos0[list(pins)],
                                                  axis=1).max()))
    out = {"ms_wall": 1000 * wall / frames, "ms_cpu": 1000 * cpu / frames,
           "corner_mm": 1000 * corner, "lowest_z": float(pos[:, 2].min())}
    for k in worst:
        out[k + "_mm"] = 1000 * worst[k]
        out[k + "_end_mm"] = 1000 * float(now[k])
    return out


def warm_up():
    """Step a small grid once, untimed: the engine's compiled kernels (engine.core.jit) are
    compiled, or loaded from their cache, at their first call, not inside the timed frames.
    Returns the seconds it took."""
    t0 = time.perf_counter()
    run_ours(6, 1)
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--frames", type=int, default=96)
    ap.add_argument("--no-pybullet", action="store_true")
    ap.add_argument("--split", action="store_true")
    ap.add_argument("--calls", action="store_true")
    args = ap.parse_args()
    print(f"warm-up (kernels compiled or loaded, untimed): {warm_up():.2f} s")
    acc = split_timers() if args.split else None
    rows = [("ours", run_ours(args.n, args.frames))]
    if acc is not None:
        print("our CPU ms per frame by call:")
        for k, v in sorted(acc.items(), key=lambda kv: -kv[1]):
            print(f"  {k:32s} {1000 * v / args.frames:7.2f}")
        joints = sum(v for k, v in acc.items() if k.startswith("joints."))
        print(f"  {'joints, all calls':32s} {1000 * joints / args.frames:7.2f}")
    if args.calls:
        c, py = count_calls(args.n, args.frames)
        print(f"our calls per frame: {c:.0f} C + {py:.0f} Python")
    if not args.no_pybullet:
        rows.append(("pybullet", run_pybullet(args.n, args.frames)))
    print(f"{args.n}x{args.n} sphere grid, {args.frames} frames at 24 fps")
    print("worst over the run / at the end, mm")
    print(f"{'engine':10s} {'ms/frame':>9s} {'cpu ms':>7s} {'joint gap':>15s} "
          f"{'link stretch':>15s} {'|dist - 0.1|':>15s} {'corner drift':>13s} {'lowest z':>9s}")
    for name, r in rows:
        cols = "".join(f"{r[k + '_mm']:9.2f} /{r[k + '_end_mm']:5.1f}"
                       for k in ("gap", "ext", "old"))
        print(f"{name:10s} {r['ms_wall']:9.2f} {r['ms_cpu']:7.2f} {cols} "
              f"{r['corner_mm']:13.2f} {r['lowest_z']:9.3f}")


if __name__ == "__main__":
    main()
