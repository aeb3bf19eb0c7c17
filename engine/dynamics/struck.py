"""A collision pass ends early when a body is struck into motion its contacts never saw.

Why. A pass's contacts are taken at its start, each with a speculative margin that covers how
far the two bodies can close over the pass at their starting speeds (World._speculative_margin)
plus ``speculative_distance``; the broadphase boxes are grown the same way. A body struck
within the pass (a box hit by a 300 kg ball at 40 m/s, a rock hit from above) leaves at a speed
no margin of its pairs allowed for, and the pairs it runs into were never taken: a 2 kg box
knocked at 15 m/s crossed 0.6 m into its neighbour in one pass and wedged it 0.3 m into the
ground (bench/fuzz_world.py seed 1134).

So after each substep the world compares every awake body's speed with its speed at the
pass's start: linear, plus spin times its reach (not for a centred ball, whose spin moves no
surface). Where the gain, carried over the rest of the
pass, would take the body further than ``speculative_distance`` plus REACH_SHARE of its reach
past anything its contacts cover, the pass ends after that substep and a new pass (broadphase
and narrowphase at the present poses and speeds) takes the rest of its time, at the same
substep length (World.step). A body that only turns back (a bounce) gains no speed: the
margins are speeds, whatever the direction, so it stays covered.

Cost: one kernel loop over the awake bodies per substep (`struck`, in the compiled substeps);
the starting speeds come from the world's per-pass kernel (engine.world.pass_kernels). At most
MAX_EARLY_ENDS extra passes per step.
Only with ``ccd`` (without it no pass looks ahead at all).
"""
import math

from ..core.jit import kernel

# Share of a body's reach it may move unseen (beyond the base speculative distance) before
# the pass ends: a quarter is where the fuzzer's tolerance for overlaps with static bodies
# starts (tests/fuzzworld.py, static_depth_excess).
REACH_SHARE = 0.25
# Extra passes a step may take for struck bodies (a pile hit by a fast body sees a few).
MAX_EARLY_ENDS = 4


class StruckBodies:
    """The early-end test of one pass: bodies (K,) the awake dynamic bodies, and per body
    its arm (K,) (its reach, 0 for a centred ball: its spin moves no surface,
    engine.dynamics.round_bodies), its speed at the pass's start, |v| + |w| arm, and what
    it may gain unseen, allow (K,): the base speculative distance + REACH_SHARE * reach
    (all made by engine.world.pass_kernels.pass_bodies)."""

    def __init__(self, bodies, arm, start, allow):
        self.bodies, self.arm, self.start, self.allow = bodies, arm, start, allow

    def struck(self, vel, t_left):
        """Whether some body gained enough speed that over t_left (s) it would move further
        than its contacts allow."""
        return struck(vel, self.bodies, self.arm, self.start, self.allow, float(t_left))


@kernel
def struck(vel, bodies, arm, start, allow, t_left):
    """StruckBodies.struck over vel (N, 6) (the compiled substeps call it after each substep)."""
    for j in range(bodies.shape[0]):
        b = bodies[j]
        speed = (math.sqrt(vel[b, 0] ** 2 + vel[b, 1] ** 2 + vel[b, 2] ** 2)
                 + math.sqrt(vel[b, 3] ** 2 + vel[b, 4] ** 2 + vel[b, 5] ** 2) * arm[j])
        if (speed - start[j]) * t_left > allow[j]:
            return True
    return False
