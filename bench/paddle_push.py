"""The live-preview test's scene (tests/addon/test_addon_preview.py preview_scene) in the
engine alone and in pybullet: does a box struck by an animated paddle's face tip?

    .venv/bin/python bench/paddle_push.py [--frames 20] [--box3-mass 7 --box3-friction 0.05]

A 12 x 12 x 1 m passive ground (top at z 0), four 1 m boxes (1 kg, friction 0.5, Blender's
damping) dropped from (1.3 i - 2, 0.2 i, 1 + i), and a 0.4 x 3 x 1 m animated paddle keyed at
x -5 on frame 1 and x 0 on the last frame (Blender's default Bezier keys with flat handles:
x = -5 + 5 (3 s^2 - 2 s^3), s = (f - 1) / (last - 1); up to 9.5 m/s), 24 fps. The add-on
sets the paddle's target every frame (addon/simulate.py _sample) and the engine moves it
there over the step. pybullet: Blender's stepping (240 Hz, 10 iterations), the paddle a
1e6 kg body put on its keyed path with its keyed velocity every 1/240 s substep (pybullet
cannot flag a body kinematic, and a mass-0 one pushes by overlap alone).

Prints per frame each box's height and tilt (degrees from upright) for both, so a tilt of
the pushed box is judged against an independent solver on the same scene. A 1 m cube pushed
over its whole side with ground friction mu = 0.5 < half-width / half-height = 1 slides: it
can only tip if the push is concentrated at its top edge or it is struck by another box.
"""
import argparse
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

FPS = 24
BOXES = [(1.3 * i - 2, 0.2 * i, 1.0 + i) for i in range(4)]


def paddle_x(f, last):
    s = min(max((f - 1) / (last - 1), 0.0), 1.0)
    return -5.0 + 5.0 * (3 * s * s - 2 * s ** 3)


def tilt_deg(q):
    """Angle between the body's z axis and the world's (w, x, y, z)."""
    w, x, y, z = q
    zz = 1 - 2 * (x * x + y * y)
    return math.degrees(math.acos(max(-1.0, min(1.0, zz))))


def run_ours(frames, last, box3):
    from engine import Box, World, WorldSettings
    w = World(settings=WorldSettings(sleeping=True, ccd=True))
    w.add_body(Box((6, 6, 0.5)), position=(0, 0, -0.5), kind="static")
    ids = []
    for i, p in enumerate(BOXES):
        mass, fr = box3 if i == 3 else (1.0, 0.5)
        ids.append(w.add_body(Box((0.5, 0.5, 0.5)), position=p, mass=mass, friction=fr,
                              linear_damping=0.04, angular_damping=0.1))
    pad = w.add_body(Box((0.2, 1.5, 0.5)), position=(-5, 0, 0.5), kind="kinematic")
    out = [(w.positions[ids].copy(), w.orientations[ids].copy())]
    for f in range(2, frames + 1):
        w.set_kinematic_target(pad, (paddle_x(f, last), 0, 0.5), (1, 0, 0, 0))
        w.step(1.0 / FPS)
        out.append((w.positions[ids].copy(), w.orientations[ids].copy()))
    return out


def run_pybullet(frames, last, box3):
    import pybullet as p
    c = p.connect(p.DIRECT)
    p.setGravity(0, 0, -9.81, physicsClientId=c)
    p.setPhysicsEngineParameter(fixedTimeStep=1.0 / 240, numSubSteps=1, numSolverIterations=10,
                                physicsClientId=c)

    def body(half, pos, mass, fr):
        s = p.createCollisionShape(p.GEOM_BOX, halfExtents=half, physicsClientId=c)
        b = p.createMultiBody(baseMass=mass, baseCollisionShapeIndex=s, basePosition=pos,
                              useMaximalCoordinates=True, physicsClientId=c)
        p.changeDynamics(b, -1, lateralFriction=fr, restitution=0.0, linearDamping=0.04,
                         angularDamping=0.1, physicsClientId=c)
        return b
    ground = body([6, 6, 0.5], [0, 0, -0.5], 0.0, 0.5)
    ids = []
    for i, pos in enumerate(BOXES):
        mass, fr = box3 if i == 3 else (1.0, 0.5)
        ids.append(body([0.5] * 3, list(pos), mass, fr))
    # A mass-0 body is static to Bullet's solver (its velocity is not seen: it pushes by
    # overlap alone) and pybullet cannot flag a body kinematic: a 1e6 kg body put on the
    # keyed path with the keyed velocity every substep, not touching the ground, is one.
    pad = body([0.2, 1.5, 0.5], [-5, 0, 0.5], 1e6, 0.5)
    p.setCollisionFilterPair(pad, ground, -1, -1, 0, physicsClientId=c)

    def poses():
        pos = np.empty((4, 3))
        q = np.empty((4, 4))
        for k, b in enumerate(ids):
            x, r = p.getBasePositionAndOrientation(b, physicsClientId=c)
            pos[k], q[k] = x, (r[3], r[0], r[1], r[2])
        return pos, q
    out = [poses()]
    for f in range(2, frames + 1):
        x0, x1 = paddle_x(f - 1, last), paddle_x(f, last)
        for k in range(1, 11):
            x = x0 + (x1 - x0) * k / 10
            p.resetBasePositionAndOrientation(pad, [x, 0, 0.5], [0, 0, 0, 1], physicsClientId=c)
            p.resetBaseVelocity(pad, [(x1 - x0) * FPS, 0, 0], [0, 0, 0], physicsClientId=c)
            p.stepSimulation(physicsClientId=c)
        out.append(poses())
    p.disconnect(c)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=20)
    ap.add_argument("--last", type=int, default=20, help="the paddle's last key's frame")
    ap.add_argument("--box3-mass", type=float, default=1.0)
    ap.add_argument("--box3-friction", type=float, default=0.5)
    ap.add_argument("--no-pybullet", action="store_true")
    a = ap.parse_args(argv)
    box3 = (a.box3_mass, a.box3_friction)
    runs = {"ours": run_ours(a.frames, a.last, box3)}
    if not a.no_pybullet:
        runs["pybullet"] = run_pybullet(a.frames, a.last, box3)
    print("frame paddle_x | " + " | ".join(f"{n}: box x,z (tilt deg) x4" for n in runs))
    for f in range(1, a.frames + 1):
        cols = []
        for out in runs.values():
            pos, q = out[f - 1]
            cols.append(" ".join(f"{pos[i, 0]:5.2f},{pos[i, 2]:5.3f}({tilt_deg(q[i]):4.1f})"
                                 for i in range(4)))
        print(f"{f:3d} {paddle_x(f, a.last):6.2f} | " + " | ".join(cols))


if __name__ == "__main__":
    main()
