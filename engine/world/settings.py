"""Every world tunable in one place: ``WorldSettings``.

A frozen dataclass, so a World's settings cannot drift behind its back; derive a variant with
``settings.replace(ccd=False)``. Each field carries its unit and meaning in its metadata
(``WorldSettings.describe()`` prints them); the solver, the integrator and the world read their
numbers from here and have no defaults of their own.

Constants that are not tunables (tolerances of exact geometry, array layouts, chunk sizes) stay
in the module that uses them, named and with a comment saying why they have their value.
"""
import dataclasses
import math
from dataclasses import dataclass, field

from ..core.errors import EngineError


def _f(default, unit, doc):
    return field(default=default, metadata={"unit": unit, "doc": doc})


@dataclass(frozen=True)
class WorldSettings:
    """World tunables. See each field's ``metadata`` (unit, doc) or ``describe()``."""

    gravity: tuple = _f((0.0, 0.0, -9.81), "m/s^2",
                        "acceleration of every awake dynamic body (Z up)")
    # -- time stepping ----------------------------------------------------------------------
    substeps: object = _f(None, "count or None",
                          "solver substeps per step, shared out over its collision passes; "
                          "None picks ceil(pass / max_substep) per pass")
    max_substep: float = _f(1.0 / 360.0, "s",
                            "longest solver substep when substeps is None (360 Hz: the rate at "
                            "which the 210-box pyramid drifts under 1 cm with contact_hertz 90; "
                            "bench/bench_world_quick.py --pyramid)")
    max_collision_step: float = _f(1.0 / 48.0, "s",
                                   "longest collision pass: a longer step is split into equal "
                                   "passes, each with its own broadphase and narrowphase")
    max_spin_travel: float = _f(0.05, "m",
                                "more collision passes (up to 4x) while an awake body spins so "
                                "fast that its surface sweeps further than this in one pass")
    iterations: int = _f(1, "count", "soft (biased) solver sweeps per substep")
    relax_iterations: int = _f(2, "count",
                               "relax sweeps per substep (remove the bias velocity; touching "
                               "points only)")
    # -- contact softness (Box2D v3 soft step) ----------------------------------------------
    contact_hertz: float = _f(90.0, "Hz",
                              "stiffness of a contact as a spring frequency on its effective "
                              "mass, capped at a quarter of the substep rate")
    damping_ratio: float = _f(10.0, "1", "damping ratio of the contact spring (10: overdamped)")
    max_push: float = _f(3.0, "m/s", "fastest velocity the position bias may push bodies apart")
    # -- joint softness (engine.dynamics.joint_solver) -----------------------------------------------
    joint_hertz: float = _f(180.0, "Hz",
                            "stiffness of joint locks and limits as a spring frequency, "
                            "capped at half the substep rate (Box2D v3: twice the contact "
                            "hertz)")
    joint_damping_ratio: float = _f(2.0, "1", "damping ratio of the joint spring")
    joint_max_push: float = _f(30.0, "m/s",
                               "fastest velocity (rad/s on angular axes) the position bias may "
                               "correct a joint's error at (locks and violated limits; errors "
                               "under about 19 cm correct at the joint's rate): a joint torn a "
                               "metre open closes at it, not at 160 m/s, and a limit dragging a "
                               "body into a static one does not outrun the contact's push-out "
                               "a hundredfold")
    restitution_threshold: float = _f(1.0, "m/s",
                                      "impact speeds below this never bounce (resting contacts "
                                      "stay at rest)")
    # -- collision detection ----------------------------------------------------------------
    speculative_distance: float = _f(0.02, "m",
                                     "points closer than this (plus, with ccd, the closing "
                                     "distance over the step) become speculative contacts")
    aabb_margin: float = _f(0.02, "m", "growth of each body's box before the broadphase")
    broadphase_slack: float = _f(0.05, "m",
                                 "slack of the persistent broadphase's fat boxes: a body is "
                                 "re-inserted only after moving this far")
    manifold_reuse_distance: float = _f(0.001, "m",
                                        "a convex pair's manifold is reused (not recomputed) "
                                        "while its bodies' relative position moved less than "
                                        "this since it was computed (engine.collision.manifold_cache; "
                                        "Jolt's default); 0 recomputes every pass")
    manifold_reuse_angle: float = _f(math.radians(2.0), "rad",
                                     "... and their relative orientation turned less than this")
    ccd: bool = _f(True, "switch",
                   "continuous collision: boxes swept by the motion over the step and contacts "
                   "kept over the closing distance, so fast bodies stop at surfaces")
    # -- sleeping ---------------------------------------------------------------------------
    sleeping: bool = _f(True, "switch", "let resting islands sleep")
    linear_sleep_tolerance: float = _f(0.05, "m/s", "a body slower than this may sleep")
    angular_sleep_tolerance: float = _f(0.05, "rad/s", "a body spinning slower may sleep")
    time_to_sleep: float = _f(0.5, "s", "how long a whole island must be calm before it sleeps")

    def __post_init__(self):
        g = tuple(float(v) for v in _sequence(self.gravity, 3, "gravity"))
        object.__setattr__(self, "gravity", g)
        if self.substeps is not None:
            object.__setattr__(self, "substeps", _count(self.substeps, "substeps"))
        object.__setattr__(self, "iterations", _count(self.iterations, "iterations"))
        object.__setattr__(self, "relax_iterations",
                           _count(self.relax_iterations, "relax_iterations", lo=0))
        for name in ("max_substep", "max_collision_step", "max_spin_travel"):
            object.__setattr__(self, name, _number(getattr(self, name), name, lo=1e-6))
        for name in ("contact_hertz", "damping_ratio", "max_push", "restitution_threshold",
                     "joint_hertz", "joint_damping_ratio", "joint_max_push",
                     "speculative_distance", "aabb_margin", "broadphase_slack",
                     "manifold_reuse_distance", "manifold_reuse_angle",
                     "linear_sleep_tolerance", "angular_sleep_tolerance", "time_to_sleep"):
            object.__setattr__(self, name, _number(getattr(self, name), name))
        object.__setattr__(self, "ccd", bool(self.ccd))
        object.__setattr__(self, "sleeping", bool(self.sleeping))

    def replace(self, **changes):
        """A copy with some fields changed (validated like the constructor)."""
        unknown = set(changes) - set(self.names())
        if unknown:
            raise EngineError(f"unknown world setting(s) {sorted(unknown)}; "
                              f"known: {', '.join(self.names())}")
        return dataclasses.replace(self, **changes)

    @classmethod
    def names(cls):
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def describe(cls):
        """One line per setting: name, default, unit, meaning."""
        return "\n".join(f"{f.name} = {f.default!r} [{f.metadata['unit']}]: {f.metadata['doc']}"
                         for f in dataclasses.fields(cls))


def _sequence(value, n, what):
    try:
        vals = [float(v) for v in value]
    except (TypeError, ValueError):
        raise EngineError(f"{what} must be {n} numbers, got {value!r}") from None
    if len(vals) != n or not all(math.isfinite(v) for v in vals):
        raise EngineError(f"{what} must be {n} finite numbers, got {value!r}")
    return vals


def _count(value, what, lo=1):
    try:
        ok = int(value) == value and int(value) >= lo
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise EngineError(f"{what} must be an integer >= {lo}, got {value!r}")
    return int(value)


def _number(value, what, lo=0.0):
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise EngineError(f"{what} must be a number, got {value!r}") from None
    if not math.isfinite(v) or v < lo:
        raise EngineError(f"{what} must be finite and >= {lo}, got {value!r}")
    return v
