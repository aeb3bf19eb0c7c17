"""Per-body controls of a World that change a body mid-simulation: its kind (dynamic <->
kinematic, Blender's keyable Animated / Dynamic checkboxes), kinematic targets in bulk, and its
deactivation settings (Blender's Enable Deactivation, Start Deactivated, linear / angular
deactivation velocities).

A mixin of ``engine.world.world.World`` (kept apart so world.py stays the step pipeline). It works
on the World's per-body arrays:

- ``mass`` (kg, 0 for a body added static or kinematic: it has no mass to switch back to),
  ``inertia`` (kept whatever the kind) -> ``inv_mass`` / ``inv_inertia`` follow the kind;
- ``can_sleep`` (bool), ``sleep_lin`` / ``sleep_ang`` (m/s, rad/s; negative = the world's
  ``linear_sleep_tolerance`` / ``angular_sleep_tolerance``).

Hand-off semantics (measured in Blender 4.2 / 5.2, Bullet): a kinematic body's velocity is that
of its motion over the last step (World._kinematic_velocities), and a body switched back to
dynamic keeps it, so it carries on with the velocity of its keyed motion, linear and angular,
once, at the switch. A body switched to kinematic stops (velocity zero) until it is given a
target: a body that is held (Blender's Dynamic keyed off) stays where it is.
"""
from typing import TYPE_CHECKING

import numpy as np

from ..core.errors import EngineError
from ..core.kinds import BodyKind

if TYPE_CHECKING:
    from .settings import WorldSettings

_DYNAMIC, _STATIC, _KINEMATIC = BodyKind.DYNAMIC, BodyKind.STATIC, BodyKind.KINEMATIC


def kind_code(kind):
    """A BodyKind from the enum, its lower-case name ('dynamic', ...) or its integer code."""
    if isinstance(kind, (int, np.integer)) and not isinstance(kind, (bool, BodyKind)):
        try:
            return BodyKind(int(kind))
        except ValueError:
            raise EngineError(f"unknown body kind {kind!r}; use 'dynamic', 'static' or "
                              "'kinematic' (or engine.BodyKind)") from None
    return BodyKind.parse(kind)


class BodyControl:
    """Mixin: set_body_kind, set_deactivation and the per-body sleep tolerances."""

    if TYPE_CHECKING:  # provided by engine.world.world.World
        _a: dict[str, np.ndarray]
        settings: WorldSettings

        @property
        def body_count(self) -> int: ...

        def _v(self, name: str) -> np.ndarray: ...

        def _check_index(self, index) -> int: ...

    def set_body_kind(self, index, kind):
        """Switch a body between 'dynamic' and 'kinematic' mid-simulation.

        To kinematic: the body stops being pushed and stops (zero velocity) until a target
        (set_kinematic_target) moves it. To dynamic: it gets its mass back and keeps the
        velocity it has, which for a body moved to a target in the last step is the velocity
        of that motion (linear of the centre of mass, and angular), so a released animated
        body carries on as it moved. Only a body added as 'dynamic' can be switched back
        (a body added kinematic has no mass). Either way the body is awake."""
        i = self._check_index(index)
        k = kind_code(kind)
        a = self._a
        old = int(a["kind"][i])
        if k == old:
            return
        if _STATIC in (k, old):
            raise EngineError(f"body {i}: set_body_kind switches between 'dynamic' and "
                              "'kinematic' only; a static body stays static (add it as "
                              "kinematic to move it)")
        if k == _DYNAMIC:
            if not a["mass"][i] > 0:
                raise EngineError(f"body {i} was added as kinematic, so it has no mass to "
                                  "become dynamic with; add it as 'dynamic' (with its mass) "
                                  "and switch it to 'kinematic' with set_body_kind")
            self._set_mass_rows(np.array([i]), True)
            a["has_target"][i] = False   # a pending target would snap it back
        else:
            self._set_mass_rows(np.array([i]), False)
            a["vel"][i] = 0.0
        a["kind"][i] = k
        a["sleeping"][i] = False
        a["sleep_time"][i] = 0.0

    def set_deactivation(self, index, enabled=True, linear=None, angular=None,
                         start_asleep=False):
        """Deactivation (sleeping) settings of one body, as Blender's per-object ones.

        enabled: the body may fall asleep (False keeps it, and any island it touches, awake).
        linear / angular: the speeds (m/s, rad/s) under which it counts as resting and above
        which, awake, it wakes sleepers it touches; None keeps the world's tolerance.
        start_asleep: put it to sleep now, where it is (even in mid-air): gravity does not move
        it; it wakes when a moving body touches it or a kinematic body moves into it (also
        with the world's sleeping off). Only a dynamic body can start asleep."""
        i = self._check_index(index)
        a = self._a
        a["can_sleep"][i] = bool(enabled)
        for name, value, what in (("sleep_lin", linear, "linear deactivation velocity"),
                                  ("sleep_ang", angular, "angular deactivation velocity")):
            if value is None:
                a[name][i] = -1.0
                continue
            v = float(value)
            if not (np.isfinite(v) and v >= 0.0):
                raise EngineError(f"body {i}: {what} must be finite and >= 0, got {value!r}")
            a[name][i] = v
        if start_asleep:
            if a["kind"][i] != _DYNAMIC:
                raise EngineError(f"body {i} is not dynamic; only a dynamic body can start "
                                  "asleep")
            a["sleeping"][i] = True
            a["sleep_time"][i] = 0.0
            a["vel"][i] = 0.0
            # An island of its own: island labels are body indices (>= 0) or -1, so -(i + 2)
            # is unique and waking it wakes nothing else.
            a["island"][i] = -(i + 2)

    def set_kinematic_targets(self, indices, positions, orientations):
        """set_kinematic_target for many kinematic bodies at once: indices (K,), origin
        positions (K, 3), orientations (K, 4) (w, x, y, z; normalised here)."""
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        pos = np.asarray(positions, dtype=np.float64).reshape(len(idx), 3)
        q = np.asarray(orientations, dtype=np.float64).reshape(len(idx), 4)
        if not len(idx):
            return
        if idx.min() < 0 or idx.max() >= self.body_count:
            raise EngineError(f"body index out of range in {idx.tolist()} (the world has "
                              f"{self.body_count} bodies)")
        a = self._a
        bad = idx[a["kind"][idx] != _KINEMATIC]
        if len(bad):
            raise EngineError(f"bodies {bad.tolist()} are not kinematic; kinematic targets move "
                              "kinematic bodies only")
        norm = np.linalg.norm(q, axis=1)
        if not (np.all(np.isfinite(pos)) and np.all(np.isfinite(q)) and np.all(norm > 1e-9)):
            raise EngineError("kinematic targets must be finite, with non-zero quaternions; "
                              "check the animated objects' transforms for NaN/inf")
        a["target_pos"][idx] = pos
        a["target_q"][idx] = q / norm[:, None]
        a["has_target"][idx] = True

    # -- helpers for World ------------------------------------------------------------------
    def _sleep_tolerances(self):
        """Per-body (linear, angular) sleep tolerances (N,), the world's where not set."""
        lin = self._v("sleep_lin")
        ang = self._v("sleep_ang")
        st = self.settings
        return (np.where(lin >= 0.0, lin, st.linear_sleep_tolerance),
                np.where(ang >= 0.0, ang, st.angular_sleep_tolerance))

    def _set_mass_rows(self, rows, dynamic):
        """inv_mass / inv_inertia of rows from their mass and inertia (dynamic) or zero.
        Computed as add_body does (one 3x3 inverse per row), so bit for bit the same."""
        a = self._a
        for i in rows:
            if dynamic:
                a["inv_mass"][i] = 1.0 / a["mass"][i]
                a["inv_inertia"][i] = np.linalg.inv(a["inertia"][i])
            else:
                a["inv_mass"][i] = 0.0
                a["inv_inertia"][i] = 0.0

    def _restore_kinds(self, kinds):
        """set_state: bodies whose kind differs from the stored one get it back, with the
        matching inverse mass and inertia."""
        if kinds is None:
            return
        kinds = np.asarray(kinds, dtype=np.int8)
        cur = self._v("kind")
        changed = np.flatnonzero(kinds != cur)
        if not len(changed):
            return
        if np.any(kinds[changed] == _DYNAMIC) and \
                np.any(self._v("mass")[changed[kinds[changed] == _DYNAMIC]] <= 0):
            raise EngineError("the state makes a body dynamic that was added without mass; "
                              "restore a state into the world it came from")
        cur[changed] = kinds[changed]
        self._set_mass_rows(changed[kinds[changed] == _DYNAMIC], True)
        self._set_mass_rows(changed[kinds[changed] != _DYNAMIC], False)
