"""Animated <-> Dynamic hand-off during a bake: the keyable ``animated`` and ``simulated``
settings of dynamic bodies (Blender's keyable Animated and Dynamic checkboxes), evaluated per
frame from their F-curves, turned into engine kind switches and kinematic targets.

Per frame f (the step into f, as Blender evaluates the scene at f and then steps to it):
- Animated on: the body is kinematic and follows its own animation (its matrix at f), pushing
  others with the velocity of that motion;
- Animated off, Dynamic off: kinematic, held where it is (target = its current pose);
- otherwise dynamic. A release keeps the velocity of the keyed motion over the frame before
  (engine.World.set_body_kind), so the body carries on as it moved, once per switch.

Values come from the F-curves directly (``fcurve.evaluate``, a boolean is on at >= 0.5 as in
Blender's animation system), so the schedule is known before the first step and needs no
frame changes; the animated phases' poses are sampled with the bake's other animated bodies.
"""
import numpy as np

from . import animation

PATHS = {"animated": "hullabaloo.animated", "simulated": "hullabaloo.simulated"}
# Switches on this many consecutive frames (or more) are reported as a likely keying mistake.
JITTER_RUN = 3


def keyed_flag(obj, name, frames):
    """The boolean setting ``name`` of obj.hullabaloo at each frame (F,), from its F-curve if
    it is keyed, else its current value."""
    fcs = animation.fcurve_collection(obj)
    fc = None
    if fcs is not None:
        fc = next((c for c in fcs if c.data_path == PATHS[name] and not c.mute), None)
    if fc is None:
        return np.full(len(frames), bool(getattr(obj.hullabaloo, name)))
    return np.array([fc.evaluate(float(f)) >= 0.5 for f in frames], dtype=bool)


def _runs(switch_rows):
    """(start, end) row pairs of runs of switches on consecutive rows."""
    if not len(switch_rows):
        return []
    breaks = np.flatnonzero(np.diff(switch_rows) > 1)
    starts = np.r_[0, breaks + 1]
    ends = np.r_[breaks, len(switch_rows) - 1]
    return [(switch_rows[s], switch_rows[e]) for s, e in zip(starts, ends)]


class Schedule:
    """Kinds over the frames of the dynamic bodies that are ever animated or held.

    rows: positions in the bake's dynamic list; kinematic (F, S) and animated (F, S)."""

    def __init__(self, dynamic, first, last):
        frames = np.arange(first, last + 1)
        self.first = first
        rows, anim, sim, self.notes = [], [], [], []
        for j, b in enumerate(dynamic):
            a = keyed_flag(b.obj, "animated", frames)
            s = keyed_flag(b.obj, "simulated", frames)
            if a.any() or not s.all():
                rows.append(j)
                anim.append(a)
                sim.append(s)
                self._check_jitter(b.name, frames, a, "Animated")
                self._check_jitter(b.name, frames, s, "Dynamic")
        self.rows = np.array(rows, dtype=np.int64)
        F = len(frames)
        self.animated = np.array(anim).T if rows else np.zeros((F, 0), dtype=bool)
        simulated = np.array(sim).T if rows else np.zeros((F, 0), dtype=bool)
        self.kinematic = self.animated | ~simulated

    def _check_jitter(self, name, frames, flag, label):
        switch = np.flatnonzero(flag[1:] != flag[:-1]) + 1
        for s, e in _runs(switch):
            if e - s + 1 >= JITTER_RUN:
                self.notes.append((name, (
                    f"its {label} setting is keyed to switch on every frame from frame "
                    f"{frames[s]} to {frames[e]} ({e - s + 1} switches). Each frame there it "
                    + ("follows its keys, then is released with the velocity of the keyed "
                       "motion over the frame before, so it moves in jerks" if label ==
                       "Animated" else "is held, then released from rest")
                    + "; the bake goes on. Hold each state for several frames (key the "
                    "setting with Constant interpolation only where it should change).")))

    @property
    def any(self):
        return len(self.rows) > 0

    @property
    def samples(self):
        """Whether any body follows its animation at some frame (poses must be sampled)."""
        return bool(self.animated.any())

    def start(self, world, index):
        """Kinds at the first frame (bodies are added dynamic, with their mass)."""
        for c in np.flatnonzero(self.kinematic[0]):
            world.set_body_kind(int(index[c]), "kinematic")

    def step(self, world, frame, index, poses_of):
        """Before the step into ``frame``: switch kinds where they change and give every
        kinematic body its target, in one call. poses_of(columns) -> (positions (K, 3),
        orientations (K, 4)) of those columns' objects at this frame (the animated ones)."""
        k = frame - self.first
        now = self.kinematic[k]
        before = self.kinematic[k - 1] if k > 0 else now
        for c in np.flatnonzero(now != before):
            world.set_body_kind(int(index[c]), "kinematic" if now[c] else "dynamic")
        cols = np.flatnonzero(now)
        if not len(cols):
            return
        idx = index[cols]
        # Held ones stay where they are; animated ones go to their pose at this frame.
        pos = world.positions[idx].copy()
        q = world.orientations[idx].copy()
        anim = self.animated[k, cols]
        if anim.any():
            pos[anim], q[anim] = poses_of(cols[anim])
        world.set_kinematic_targets(idx, pos, q)
