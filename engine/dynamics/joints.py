"""Joints: Blender's eight rigid-body constraint types as definitions, validation and state.

A joint has a frame (position + orientation) given in world coordinates when it is made; the
frame is then fixed in both bodies (stored as an anchor and an orientation in each body's
frame, the anchor relative to the centre of mass). Six axes are measured between the two
copies of the frame, in frame A: ``lin_x, lin_y, lin_z`` the anchor separation along A's frame
axes, ``ang_x, ang_y, ang_z`` the XYZ Euler angles of B's frame relative to A's (R = Rx Ry Rz,
Bullet's generic 6-DOF convention, so a single free axis may turn any amount while the other
two stay small). The pose at creation is zero on every axis.

Every axis carries up to five kinds of scalar row (engine.dynamics.joint_solver solves them):
  lock    equality row, coordinate = target (soft-rigid, the world's joint softness);
  lower   inequality row, coordinate >= lower limit;
  upper   inequality row, coordinate <= upper limit;
  spring  soft row with its own stiffness and damping, rest at 0;
  motor   velocity row driving the axis at a target speed with a bounded force.

Kinds (Blender's axes): fixed locks all six; point the three linear; hinge all but ang_z
(limits: ang_z); slider all but lin_x (limits: lin_x); piston all but lin_x and ang_x (limits:
lin_x, ang_x); generic and generic_spring lock nothing and limit what ``limits`` names
(lower == upper locks the axis); generic_spring adds ``springs``; motor constrains nothing and
drives lin_x / ang_x.
"""
import math

import numpy as np

from ..core import quat
from ..core.errors import EngineError

KINDS = ("fixed", "point", "hinge", "slider", "piston", "generic", "generic_spring", "motor")
AXES = ("lin_x", "lin_y", "lin_z", "ang_x", "ang_y", "ang_z")
AXIS_INDEX = {name: i for i, name in enumerate(AXES)}
# Row types per axis; impulses are stored as (J, ROW_TYPES, 6).
LOCK, LOWER, UPPER, SPRING, MOTOR = range(5)
ROW_TYPES = 5

# Axes each kind locks, and the axes its limits may name.
_LOCKED = {
    "fixed": AXES, "point": AXES[:3], "hinge": AXES[:5],
    "slider": ("lin_y", "lin_z", "ang_x", "ang_y", "ang_z"),
    "piston": ("lin_y", "lin_z", "ang_y", "ang_z"),
    "generic": (), "generic_spring": (), "motor": (),
}
_LIMITABLE = {
    "fixed": (), "point": (), "hinge": ("ang_z",), "slider": ("lin_x",),
    "piston": ("lin_x", "ang_x"), "generic": AXES, "generic_spring": AXES, "motor": (),
}
# motor={"lin": ..., "ang": ...} -> the axis each key drives, per kind that has motors.
_MOTOR_AXES = {
    "motor": {"lin": "lin_x", "ang": "ang_x"}, "hinge": {"ang": "ang_z"},
    "slider": {"lin": "lin_x"}, "piston": {"lin": "lin_x", "ang": "ang_x"},
}

# Per-joint arrays: name -> (trailing shape, dtype, fill).
_FIELDS = {
    "body_a": ((), np.int64, 0),
    "body_b": ((), np.int64, 0),           # == body_a for a joint to the world
    "world": ((), bool, False),             # side A is the world (add_joint's body_b=None)
    "anchor_a": ((3,), np.float64, 0.0),   # body A frame, relative to A's centre of mass
    "anchor_b": ((3,), np.float64, 0.0),   # (world point / orientation for a world joint)
    "frame_a": ((4,), np.float64, 0.0),    # joint frame in A's frame
    "frame_b": ((4,), np.float64, 0.0),    # joint frame in B's frame
    "lock": ((6,), bool, False),
    "target": ((6,), np.float64, 0.0),     # locked axes' coordinate
    "limited": ((6,), bool, False),
    "lower": ((6,), np.float64, 0.0),
    "upper": ((6,), np.float64, 0.0),
    "spring": ((6,), bool, False),
    "stiffness": ((6,), np.float64, 0.0),
    "damping": ((6,), np.float64, 0.0),
    "motor": ((6,), bool, False),
    "motor_speed": ((6,), np.float64, 0.0),
    "motor_max": ((6,), np.float64, 0.0),  # force (N) or torque (N m)
    "break_force": ((), np.float64, np.inf),
    "break_torque": ((), np.float64, np.inf),
    "no_collide": ((), bool, True),
    "kind": ((), np.int8, 0),
    # State (get_state / set_state):
    "enabled": ((), bool, True),
    "broken": ((), bool, False),
    "impulse": ((ROW_TYPES, 6), np.float64, 0.0),  # per substep, warm start
    # The last measured XYZ Euler angles (rad): the solver picks, of the two Euler triples of
    # a relative rotation, the one nearest these (engine.dynamics.joint_solver.continuous_euler).
    "angles": ((3,), np.float64, 0.0),
    "force": ((3,), np.float64, 0.0),      # last substep's reaction on B, world (N)
    "torque": ((3,), np.float64, 0.0),     # last substep's reaction torque on B, world (N m)
}
STATE_FIELDS = ("enabled", "broken", "impulse", "force", "torque", "angles")


def _number(value, what):
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise EngineError(f"{what} must be a number, got {value!r}") from None
    if not math.isfinite(v):
        raise EngineError(f"{what} must be finite, got {value!r}")
    return v


def _pair(value, what):
    try:
        lo, hi = value
    except (TypeError, ValueError):
        raise EngineError(f"{what} must be a pair of numbers, got {value!r}") from None
    return _number(lo, what), _number(hi, what)


def _check_keys(given, allowed, what, kind):
    for key in given:
        if key not in allowed:
            ok = ", ".join(allowed) if allowed else "none"
            raise EngineError(f"{kind} joint: {what} key {key!r} is not one of its axes "
                              f"(allowed: {ok})")


def parse(kind, limits, springs, motor):
    """Per-axis settings (dict of (6,) arrays) for one joint, validated."""
    if kind not in KINDS:
        raise EngineError(f"unknown joint kind {kind!r}; use one of {', '.join(KINDS)}")
    out = {name: np.zeros(6, dtype=_FIELDS[name][1]) for name in
           ("lock", "target", "limited", "lower", "upper", "spring", "stiffness", "damping",
            "motor", "motor_speed", "motor_max")}
    for ax in _LOCKED[kind]:
        out["lock"][AXIS_INDEX[ax]] = True
    limits = dict(limits or {})
    _check_keys(limits, _LIMITABLE[kind], "limits", kind)
    for ax, val in limits.items():
        lo, hi = _pair(val, f"limits[{ax!r}]")
        if lo > hi:
            raise EngineError(f"{kind} joint: limits[{ax!r}] has lower {lo} > upper {hi}; "
                              "give (lower, upper) with lower <= upper")
        i = AXIS_INDEX[ax]
        if lo == hi:
            out["lock"][i] = True
            out["target"][i] = lo
        else:
            out["limited"][i] = True
            out["lower"][i], out["upper"][i] = lo, hi
    springs = dict(springs or {})
    _check_keys(springs, AXES if kind == "generic_spring" else (), "springs", kind)
    for ax, val in springs.items():
        k, c = _pair(val, f"springs[{ax!r}]")
        if k < 0 or c < 0:
            raise EngineError(f"{kind} joint: springs[{ax!r}] = ({k}, {c}): stiffness and "
                              "damping must be >= 0")
        i = AXIS_INDEX[ax]
        out["spring"][i] = k > 0 or c > 0
        out["stiffness"][i], out["damping"][i] = k, c
    motor = dict(motor or {})
    _check_keys(motor, tuple(_MOTOR_AXES.get(kind, {})), "motor", kind)
    for key, val in motor.items():
        speed, fmax = _pair(val, f"motor[{key!r}]")
        if fmax < 0:
            raise EngineError(f"{kind} joint: motor[{key!r}] max force/torque {fmax} must be >= 0")
        i = AXIS_INDEX[_MOTOR_AXES[kind][key]]
        out["motor"][i] = fmax > 0
        out["motor_speed"][i], out["motor_max"][i] = speed, fmax
    return out


class JointSet:
    """Joints of a world in structure-of-arrays form (capacity doubling like the bodies)."""

    def __init__(self):
        self.n = 0
        self._a = {}
        # engine.dynamics.joint_solver's last colouring (key, Colouring): reused while unchanged.
        self.colour_cache = None
        self.chain_cache = None   # engine.dynamics.joint_solver._chain: the direct lock system's chain order
        self._grow(4)

    def _grow(self, cap):
        for name, (shape, dtype, fill) in _FIELDS.items():
            new = np.full((cap,) + shape, fill, dtype=dtype)
            old = self._a.get(name)
            if old is not None:
                new[:self.n] = old[:self.n]
            self._a[name] = new
        self.cap = cap

    def v(self, name):
        return self._a[name][:self.n]

    def add(self, kind, a, b, x_a, q_a, x_b, q_b, position, orientation, settings,
            break_force, break_torque, disable_collisions, enabled):
        """Append a joint; x_* / q_* are the bodies' centres of mass and orientations now
        (None for the world). Returns its index."""
        world = b is None
        if self.n == self.cap:
            self._grow(2 * self.cap)
        j = self.n
        self.n += 1
        a_ = self._a
        for name, (_shape, _dtype, fill) in _FIELDS.items():
            a_[name][j] = fill
        # A joint to the world has the world as its A side and the body as B (both indices
        # name the body), so "B relative to A" (limits, motors, reactions) is the body's own
        # motion in the world.
        if b is None:
            a, b, x_b, q_b = a, a, x_a, q_a
        a_["body_a"][j] = a
        a_["body_b"][j] = b
        a_["world"][j] = world
        qf = orientation[None]
        if world:
            a_["anchor_a"][j] = position
            a_["frame_a"][j] = orientation
        else:
            a_["anchor_a"][j] = quat.rotate_inverse(q_a[None], (position - x_a)[None])[0]
            a_["frame_a"][j] = quat.multiply(quat.conjugate(q_a[None]), qf)[0]
        a_["anchor_b"][j] = quat.rotate_inverse(q_b[None], (position - x_b)[None])[0]
        a_["frame_b"][j] = quat.multiply(quat.conjugate(q_b[None]), qf)[0]
        for name, val in settings.items():
            a_[name][j] = val
        a_["break_force"][j] = break_force
        a_["break_torque"][j] = break_torque
        a_["no_collide"][j] = bool(disable_collisions)
        a_["enabled"][j] = bool(enabled)
        a_["kind"][j] = KINDS.index(kind)
        return j

    def live(self):
        """Joints that act: enabled and not broken."""
        return self.v("enabled") & ~self.v("broken")

    def point_locks(self):
        """(n,) bool: joints that only lock their three linear axes at zero (pure_point_locks)."""
        return pure_point_locks({name: self.v(name) for name in (
            "lock", "limited", "spring", "motor", "target")})

    def filter_pairs(self, ia, ib):
        """Drop candidate body pairs joined by a live joint with disable_collisions."""
        if not self.n or not len(ia):
            return ia, ib
        sel = self.live() & self.v("no_collide") & ~self.v("world")
        if not sel.any():
            return ia, ib
        ja, jb = self.v("body_a")[sel], self.v("body_b")[sel]
        lo, hi = np.minimum(ja, jb), np.maximum(ja, jb)
        jkeys = lo * np.int64(1 << 31) + hi
        pkeys = np.minimum(ia, ib) * np.int64(1 << 31) + np.maximum(ia, ib)
        keep = ~np.isin(pkeys, jkeys)
        return ia[keep], ib[keep]

    def edges(self, awake):
        """(a, b) of the live joints between two bodies with an awake end: they link islands
        (engine.dynamics.graph.islands drops the edges to static ones) and keep a body joined to a
        moving kinematic one awake."""
        if not self.n:
            e = np.zeros(0, dtype=np.int64)
            return e, e
        sel = self.live() & ~self.v("world")
        a, b = self.v("body_a")[sel], self.v("body_b")[sel]
        some = awake[a] | awake[b]
        return a[some], b[some]

    def get_state(self):
        out = {f"joint_{name}": self.v(name).copy() for name in STATE_FIELDS}
        out["joint_count"] = np.array(self.n)
        return out

    def set_state(self, state):
        n = int(state.get("joint_count", 0))
        if n != self.n:
            raise EngineError(f"state has {n} joints, the world {self.n}; restore a state into "
                              "the world it came from")
        for name in STATE_FIELDS:
            key = f"joint_{name}"
            if key not in state and name == "angles":   # a state saved before angles existed
                self.v(name)[...] = 0.0
                continue
            self.v(name)[...] = state[key]


def pure_point_locks(g):
    """(m,) bool per joint of the fields gathered in g (lock, limited, spring, motor, target):
    the three linear axes locked at zero, nothing else locked, limited, sprung or driven
    (Blender's Point, or a generic joint set up as one)."""
    lock = g["lock"]
    return (lock[:, :3].all(axis=1) & ~lock[:, 3:].any(axis=1) & ~g["limited"].any(axis=1)
            & ~g["spring"].any(axis=1) & ~g["motor"].any(axis=1)
            & ~g["target"][:, :3].any(axis=1))
