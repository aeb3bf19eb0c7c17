"""Boxes that bound where a contact may push a body: its shape's extent along its principal
axes of inertia, about its centre of mass (issue 11).

A contact point lies midway between two surfaces, so in a deep overlap, or at a speculative
gap, it can lie well outside one of the bodies; its lever arm then gives that body torques
its own shape never could. About the long axis of a needle (inertia 2e-9 kg m^2 for a 1.8 mm,
438 kg hull 7 um thick) an arm 0.2 mm off the axis instead of 5 um is 40x the lever and 1600x
the spin per unit of energy: push-out spun such a needle to 1.8e4 rad/s and flung a 46 g
neighbour at 180 m/s (fuzzer seed 327). The torque of a force on a rigid body about a
principal axis is set by the arm's components along the other two axes, so clamping the arm
into the body's principal box bounds every torque by what the shape allows; a point within
the box keeps its arm bit for bit. Only thin shapes (``THIN``) are clamped: for chunky ones the
reach clamp already bounds the torques within a small factor, and clamping their speculative
midpoints onto the faces changed resting and swinging scenes the add-on tests pin down (a
Connect chain, a box following its ground down in the Live Preview).
(engine.dynamics.contact_kernels.set_arms clamps the arms into these boxes, then bounds
their length by the body's reach.)
"""
import numpy as np

from ..core.jit import kernel
from ..core.kinds import BodyKind

# A shape is thin when its smallest principal extent is below this fraction of its largest:
# only then can an arm within its reach be far off the shape across its thin direction (a
# needle's arm 40x its thickness off its axis); chunky shapes keep their arms as they are.
_DYNAMIC = int(BodyKind.DYNAMIC)
THIN = 0.25


class ArmBoxes:
    """Principal boxes per shape id, each computed once on first use (shapes are immutable;
    a body's inertia is its shape's up to the mass, so the principal axes are the shape's)."""

    def __init__(self):
        self.axes = np.zeros((0, 3, 3))   # columns: principal axes in the body frame
        self.lo = np.zeros((0, 3))        # extent along them about the centre of mass
        self.hi = np.zeros((0, 3))
        self.done = np.zeros(0, dtype=bool)

    def _fill(self, table, sids, inertia, com):
        """Compute the boxes of the shape ids sids not seen yet (a loop over new shapes
        only, once each), from the inertia and com of a body of each."""
        s = len(table)
        if len(self.done) < s:
            grow = s - len(self.done)
            self.axes = np.concatenate((self.axes, np.broadcast_to(np.eye(3), (grow, 3, 3))))
            self.lo = np.concatenate((self.lo, np.full((grow, 3), -np.inf)))
            self.hi = np.concatenate((self.hi, np.full((grow, 3), np.inf)))
            self.done = np.concatenate((self.done, np.zeros(grow, dtype=bool)))
        if self.done[sids].all():
            return
        new, first = np.unique(sids, return_index=True)
        keep = ~self.done[new]
        for sid, k in zip(new[keep], first[keep]):
            _, axes = np.linalg.eigh(inertia[k])
            n = int(table.npoints[sid])
            local = (table.points[sid, :n] - com[k]) @ axes     # (V, 3) in principal axes
            r = table.radius[sid]
            lo, hi = local.min(axis=0) - r, local.max(axis=0) + r
            ext = hi - lo
            if ext.min() >= THIN * ext.max():
                # Not thin: the reach clamp (engine.dynamics.contact_kernels.set_arms) already keeps every
                # torque within a small factor of what the shape allows; leave the arms be.
                lo, hi = np.full(3, -np.inf), np.full(3, np.inf)
            self.axes[sid], self.lo[sid], self.hi[sid] = axes, lo, hi
            self.done[sid] = True

    def world(self, table, shape, kind, inertia, com, rot):
        """(axes (N, 3, 3) world principal axes as columns, lo, hi (N, 3)) for all bodies;
        bodies that are not dynamic get an unbounded box (their arms only read kinematic
        surface velocities, which must stay exact)."""
        n = len(shape)
        axes, lo, hi = np.empty((n, 3, 3)), np.empty((n, 3)), np.empty((n, 3))
        if not _world_boxes(shape, kind, rot, self.axes, self.lo, self.hi, self.done, axes,
                            lo, hi):
            dyn = np.flatnonzero(kind == _DYNAMIC)      # a shape not seen yet: once each
            self._fill(table, shape[dyn], inertia[dyn], com[dyn])
            _world_boxes(shape, kind, rot, self.axes, self.lo, self.hi, self.done, axes, lo, hi)
        return axes, lo, hi


@kernel
def _world_boxes(shape, kind, rot, axes_s, lo_s, hi_s, done, axes, lo, hi):
    """ArmBoxes.world's boxes from the per-shape ones; False (outputs incomplete) if a dynamic
    body's shape has none yet."""
    for n in range(shape.shape[0]):
        s = shape[n]
        dynamic = kind[n] == _DYNAMIC
        if dynamic and (s >= done.shape[0] or not done[s]):
            return False
        for i in range(3):
            for k in range(3):
                if dynamic:
                    axes[n, i, k] = (rot[n, i, 0] * axes_s[s, 0, k] + rot[n, i, 1] * axes_s[s, 1, k]
                                     + rot[n, i, 2] * axes_s[s, 2, k])
                else:
                    axes[n, i, k] = 1.0 if i == k else 0.0
            lo[n, i] = lo_s[s, i] if dynamic else -np.inf
            hi[n, i] = hi_s[s, i] if dynamic else np.inf
    return True

