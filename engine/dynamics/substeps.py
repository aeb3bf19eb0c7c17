"""A collision pass's solver substeps in one compiled call, for passes of contacts alone.

World._solve runs, per substep: gravity and damping, the gyroscopic step, the contacts' warm
start, the biased sweeps, the pose update, then the relax sweeps. With no joints and no force
fields in the pass, that whole loop is this kernel, over the same kernels the Python loop calls
(integrate._kick, integrate.gyro_kick, contact_kernels.warm_start / solve_pass,
integrate._advance), in the same order: the two give the same numbers, bit for bit
(tests/test_substeps.py), and Python runs once per pass instead of a dozen calls a substep.

The kernel stops where the pass's Python machinery has work to do, and says why:

- REFRESH, after the pose update (before the relax sweeps): an anisotropic body turned past
  inertia_refresh.REFRESH_ANGLE since its rows were taken (InertiaRefresh.update retakes
  them; the call after resumes with the relax sweeps of the same substep);
- STRUCK, after a substep: a body gained speed its contacts never allowed for (struck.py),
  and the pass ends there;
- RECOLLIDE, after every EVERY-th substep: recollide.py looks at the turning polytope pairs.

Passes with joints or fields, and refreshes of round bodies (their rows follow their axis by
rules of their own: inertia_refresh._tilted), take the Python loop.
"""
import math

from ..core.jit import kernel
from .contact_kernels import solve_pass, warm_start
from .integrate import _advance, _kick, gyro_kick

# Why run_substeps returned.
DONE, REFRESH, STRUCK, RECOLLIDE = 0, 1, 2, 3


@kernel
def run_substeps(s, nsub, at_relax, iterations, relax, h, vel, x, q, dpose, act, movers,
                 gravity, lin_f, ang_f, gyro, inertia_g, idx, count, dirs, ima, imb, jang,
                 mang, kmat, eff, k_pinv, sep0, imp, max_normal, friction, soft,
                 refresh_bodies, q_ref, cos_half, struck_bodies, arm, start, allow,
                 recollide_every):
    """Run substeps s .. nsub - 1 (from the relax sweeps of substep s if at_relax). Returns
    (the substep to go on from, the event that stopped it, whether that substep is halfway:
    its relax sweeps still to run). Empty refresh_bodies / struck_bodies and
    recollide_every = 0 turn those checks off."""
    while s < nsub:
        if not at_relax:
            _kick(vel, act, gravity, lin_f, ang_f, h)
            if gyro.shape[0]:
                gyro_kick(vel, gyro, q, inertia_g, h, 2)
            warm_start(vel, idx, count, dirs, ima, imb, mang, imp)
            for _ in range(iterations):
                solve_pass(vel, dpose, True, idx, count, dirs, ima, imb, jang, mang, kmat, eff,
                           k_pinv, sep0, imp, max_normal, friction, soft)
            _advance(x, q, vel, movers, h)
            for j in range(movers.shape[0]):
                b = movers[j]
                for k in range(6):
                    dpose[b, k] += h * vel[b, k]
            for j in range(refresh_bodies.shape[0]):
                b = refresh_bodies[j]
                c = abs(q[b, 0] * q_ref[j, 0] + q[b, 1] * q_ref[j, 1] + q[b, 2] * q_ref[j, 2]
                        + q[b, 3] * q_ref[j, 3])
                if c < cos_half:
                    return s, REFRESH, True
        at_relax = False
        for _ in range(relax):
            solve_pass(vel, dpose, False, idx, count, dirs, ima, imb, jang, mang, kmat, eff,
                       k_pinv, sep0, imp, max_normal, friction, soft)
        s += 1
        if s >= nsub:
            break
        t_left = (nsub - s) * h
        for j in range(struck_bodies.shape[0]):
            b = struck_bodies[j]
            speed = (math.sqrt(vel[b, 0] ** 2 + vel[b, 1] ** 2 + vel[b, 2] ** 2)
                     + math.sqrt(vel[b, 3] ** 2 + vel[b, 4] ** 2 + vel[b, 5] ** 2) * arm[j])
            if (speed - start[j]) * t_left > allow[j]:
                return s, STRUCK, False
        if recollide_every and s % recollide_every == 0:
            return s, RECOLLIDE, False
    return s, DONE, False
