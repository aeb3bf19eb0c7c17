"""``--seed K --jitter M``: a reproducible perturbation of the dynamic bodies' start poses.

Each dynamic body is moved by at most M metres (uniform in a ball) and turned about its origin
by at most M / r radians (r: half its largest world dimension, so no surface point moves by
much more than M through the turn). The random numbers of a body come from its own stream,
seeded by (K, crc32 of its name): seed 0 differs from seed 1, seed 1 is the same every time,
and a body's perturbation does not depend on which other bodies exist or their order.
"""
import zlib

import numpy as np


def dynamic_objects(scene):
    """The objects the bake simulates as dynamic bodies, by name (a stable order)."""
    objs = [o for o in scene.objects if o.hullabaloo.enabled and
            o.hullabaloo.body_type == 'DYNAMIC' and not o.hullabaloo.collision_part]
    return sorted(objs, key=lambda o: o.name)


def perturbation(seed, name, amount, radius):
    """(offset (3,), rotation matrix (3, 3)) of one body: |offset| <= amount,
    angle <= amount / max(radius, amount) <= 1 rad."""
    rng = np.random.default_rng([int(seed), zlib.crc32(name.encode("utf-8"))])
    d = rng.normal(size=3)
    offset = d / np.linalg.norm(d) * amount * rng.uniform() ** (1.0 / 3.0)
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    angle = amount / max(radius, amount, 1e-9) * rng.uniform()
    K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    R = np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * (K @ K)  # Rodrigues
    return offset, R


def apply(scene, seed, amount):
    """Perturb the start poses (the scene must be at the bake's first frame). Previously baked
    bodies are first put back to their pre-bake pose (as Clear Bake does), so a re-bake
    perturbs the original start. Returns (names perturbed, warnings)."""
    from mathutils import Matrix

    from . import animation
    done, warnings = [], []
    if amount < 0:
        raise ValueError(f"--jitter must be >= 0, got {amount}")
    for obj in dynamic_objects(scene):
        if obj.hullabaloo.bake.baked:
            animation.restore_object(obj)
        ad = obj.animation_data
        if ad is not None and ad.action is not None:
            warnings.append(f"{obj.name}: animated (has an action), its start pose is not "
                            "jittered")
            continue
        M = np.array(obj.matrix_world, dtype=np.float64)
        radius = 0.5 * float(max(obj.dimensions)) if obj.type == 'MESH' else 0.0
        offset, R = perturbation(seed, obj.name, float(amount), radius)
        c = M[:3, 3].copy()
        N = M.copy()
        N[:3, :3] = R @ M[:3, :3]          # turn about the object's origin
        N[:3, 3] = c + offset
        obj.matrix_world = Matrix(N.tolist())
        done.append(obj.name)
    return done, warnings
