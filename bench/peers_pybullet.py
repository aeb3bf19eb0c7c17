"""pybullet (Bullet 3) with the scene's shapes and Blender's stepping: one ``stepSimulation``
per 1/24 s frame split into 10 substeps (240 Hz), 10 solver iterations, everything else at
pybullet's defaults (split impulse, sleeping on, no CCD).

Bodies are plain rigid bodies (``useMaximalCoordinates=True``: btRigidBody, what Blender
uses; pybullet's default would make each a one-link Featherstone multibody). Shapes: boxes as
GEOM_BOX, hulls as GEOM_MESH from the same vertices (a convex hull), spheres as GEOM_SPHERE;
pybullet's own collision margins. Pairs combine friction and restitution by multiplication
(Bullet's rule, also Blender's and ours). No keyframes: pybullet has no animation output.
"""
import time

import numpy as np
from bpy_scene import maxrss_mb


def _shape(p, spec):
    if spec.kind == "box":
        return p.createCollisionShape(p.GEOM_BOX, halfExtents=spec.half_extents.tolist())
    if spec.kind == "sphere":
        return p.createCollisionShape(p.GEOM_SPHERE, radius=float(spec.radius))
    return p.createCollisionShape(p.GEOM_MESH, vertices=spec.points.tolist())


def setup(s):
    import pybullet as p
    cid = p.connect(p.DIRECT)
    p.setGravity(*s.gravity, physicsClientId=cid)
    p.setPhysicsEngineParameter(fixedTimeStep=1.0 / s.fps, numSubSteps=10,
                                numSolverIterations=10, physicsClientId=cid)
    shapes = [_shape(p, spec) for spec in s.shapes]
    ids = []
    for i in range(s.body_count):
        w, x, y, z = s.quat[i]
        dynamic = s.kind[i] == 0
        b = p.createMultiBody(baseMass=float(s.mass[i]) if dynamic else 0.0,
                              baseCollisionShapeIndex=shapes[s.shape_id[i]],
                              basePosition=s.pos[i].tolist(), baseOrientation=[x, y, z, w],
                              useMaximalCoordinates=True)
        p.changeDynamics(b, -1, lateralFriction=float(s.friction[i]),
                         restitution=float(s.restitution[i]),
                         linearDamping=float(s.lin_damp[i]), angularDamping=float(s.ang_damp[i]))
        if dynamic and (np.any(s.lin_vel[i]) or np.any(s.ang_vel[i])):
            p.resetBaseVelocity(b, s.lin_vel[i].tolist(), s.ang_vel[i].tolist())
        ids.append(b)
    return p, ids


def _poses(p, ids):
    pos = np.empty((len(ids), 3))
    q = np.empty((len(ids), 4))
    for k, b in enumerate(ids):
        x, r = p.getBasePositionAndOrientation(b)
        pos[k] = x
        q[k] = (r[3], r[0], r[1], r[2])
    return pos, q


def run(s, keys=True):
    p, ids = setup(s)
    dyn = [ids[i] for i in s.dynamic]
    # Read-back buffers written (pages touched) before the baseline, so they are not
    # counted as pybullet's memory.
    pos = np.full((s.frames, len(dyn), 3), np.nan)
    quat = np.full((s.frames, len(dyn), 4), np.nan)
    rss0 = maxrss_mb()
    pos[0], quat[0] = _poses(p, dyn)
    sim = 0.0
    for f in range(1, s.frames):
        t0 = time.perf_counter()
        p.stepSimulation()
        sim += time.perf_counter() - t0
        pos[f], quat[f] = _poses(p, dyn)  # read-back, not timed
    result = dict(sim_seconds=sim, keys_seconds=None, setup_seconds=None, wall_seconds=sim,
                  keys=None, rss_before_mb=rss0, rss_peak_mb=maxrss_mb(), frames=s.frames,
                  problems=[])
    p.disconnect()
    return result, pos, quat
