"""What World._step computes once a collision pass from the bodies' flat arrays, each in one
kernel call: numpy did it in a dozen small calls of a few microseconds each (27 tumbling
cubes: some 60 us a pass of 1.3 ms)."""
from ..core.jit import kernel


@kernel
def solver_inputs(ia, ib, normal, awake, inv_mass, inv_body, rot, gravity, friction,
                  restitution, out_inv_mass, out_inv_i, accel_n, mu, e):
    """The ContactSolver's per-body and per-manifold inputs: the inverse mass and world
    inverse inertia R I^-1 R^T of the awake dynamic bodies (zero for the rest: the solver
    moves them not), per manifold (ia, ib, normal) the normal acceleration gravity gives the
    pair (only awake bodies fall) and the mixed friction and restitution (Blender's products)."""
    for b in range(awake.shape[0]):
        if not awake[b]:
            out_inv_mass[b] = 0.0
            for i in range(3):
                for j in range(3):
                    out_inv_i[b, i, j] = 0.0
            continue
        out_inv_mass[b] = inv_mass[b]
        r, ib_ = rot[b], inv_body[b]
        for i in range(3):
            t0 = r[i, 0] * ib_[0, 0] + r[i, 1] * ib_[1, 0] + r[i, 2] * ib_[2, 0]
            t1 = r[i, 0] * ib_[0, 1] + r[i, 1] * ib_[1, 1] + r[i, 2] * ib_[2, 1]
            t2 = r[i, 0] * ib_[0, 2] + r[i, 1] * ib_[1, 2] + r[i, 2] * ib_[2, 2]
            for j in range(3):
                out_inv_i[b, i, j] = t0 * r[j, 0] + t1 * r[j, 1] + t2 * r[j, 2]
    for m in range(ia.shape[0]):
        a, b = ia[m], ib[m]
        acc = 0.0
        for k in range(3):
            acc += ((gravity[k] if awake[b] else 0.0) - (gravity[k] if awake[a] else 0.0)) \
                * normal[m, k]
        accel_n[m] = acc
        mu[m] = friction[a] * friction[b]
        e[m] = restitution[a] * restitution[b]


@kernel
def calm_awake(vel, kind, sleeping, static, lin2, ang2):
    """Whether every awake non-static body moves less than lin2 (|v|^2) and turns less than
    ang2 (|w|^2) (World._reuse_mode's test)."""
    for b in range(vel.shape[0]):
        if kind[b] == static or sleeping[b]:
            continue
        if (vel[b, 0] * vel[b, 0] + vel[b, 1] * vel[b, 1] + vel[b, 2] * vel[b, 2] >= lin2
                or vel[b, 3] * vel[b, 3] + vel[b, 4] * vel[b, 4] + vel[b, 5] * vel[b, 5]
                >= ang2):
            return False
    return True
