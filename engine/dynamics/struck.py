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

Cost: a few numpy calls per substep. At most MAX_EARLY_ENDS extra passes per step.
Only with ``ccd`` (without it no pass looks ahead at all).
"""
import numpy as np

from ..core.vec import norm

# Share of a body's reach it may move unseen (beyond the base speculative distance) before
# the pass ends: a quarter is where the fuzzer's tolerance for overlaps with static bodies
# starts (tests/fuzzworld.py, static_depth_excess).
REACH_SHARE = 0.25
# Extra passes a step may take for struck bodies (a pile hit by a fast body sees a few).
MAX_EARLY_ENDS = 4


class StruckBodies:
    """The early-end test of one pass. bodies (K,) the awake dynamic bodies, vel (N, 6) the
    velocities at the pass's start, reach (N,) the bodies' reaches, ball (K,) bool which of
    them are centred balls (their spin moves no surface: engine.dynamics.round_bodies), slack (m) the
    base speculative distance."""

    def __init__(self, bodies, vel, reach, ball, slack):
        self.bodies = bodies
        r = reach[bodies]
        self.arm = np.where(ball, 0.0, r)
        self.start = self._speed(vel)
        self.allow = slack + REACH_SHARE * r

    def _speed(self, vel):
        v = vel[self.bodies]
        return norm(v[:, :3], axis=1) + norm(v[:, 3:], axis=1) * self.arm

    def struck(self, vel, t_left):
        """Whether some body gained enough speed that over t_left (s) it would move further
        than its contacts allow."""
        gain = self._speed(vel) - self.start
        return bool(np.any(gain * t_left > self.allow))
