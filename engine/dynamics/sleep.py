"""Which bodies move, for sleeping and waking (islands themselves: engine.dynamics.graph).

A body is fast while its linear or angular speed is at or above its sleep tolerance (a body's
own, or the world's where it has none: World._sleep_tolerances' rule, tolerances < 0 meaning
unset). Fast awake dynamic bodies wake the sleepers they touch, and so do kinematic bodies
whose velocity this pass is not zero (one keyed every frame but standing still lets its
neighbours sleep).
"""
import math

from ..core.jit import kernel
from ..core.kinds import BodyKind

_DYNAMIC, _KINEMATIC = int(BodyKind.DYNAMIC), int(BodyKind.KINEMATIC)


@kernel
def moving_bodies(kind, sleeping, vel, own_lin, own_ang, lin_tol, ang_tol, out):
    """out (N,) bool: the bodies that wake the sleepers they touch (the module docstring).
    own_lin, own_ang (N,): per-body tolerances (< 0: the world's lin_tol, ang_tol)."""
    for b in range(kind.shape[0]):
        lin = math.sqrt(vel[b, 0] * vel[b, 0] + vel[b, 1] * vel[b, 1] + vel[b, 2] * vel[b, 2])
        ang = math.sqrt(vel[b, 3] * vel[b, 3] + vel[b, 4] * vel[b, 4] + vel[b, 5] * vel[b, 5])
        if kind[b] == _KINEMATIC:
            out[b] = lin > 0.0 or ang > 0.0
        elif kind[b] == _DYNAMIC and not sleeping[b]:
            tl = own_lin[b] if own_lin[b] >= 0.0 else lin_tol
            ta = own_ang[b] if own_ang[b] >= 0.0 else ang_tol
            out[b] = lin > tl or ang > ta
        else:
            out[b] = False
