"""Scene fuzzer for the engine (issue 11): random violent worlds and the invariants every step
must keep. Shared by the seeded CI subset (tests/test_fuzz_world.py) and the long runs
(bench/fuzz_world.py).

A scene is pure data (``Scene``: a seed, a family, settings and a list of ``BodySpec``), built
from the seed alone, so a failure is reproduced from ``(seed, family)`` and shrunk by keeping a
subset of the bodies (``Scene.subset``). Families:

- ``violent``: every shape kind (boxes, spheres, capsules, hulls from random and degenerate-ish
  point clouds, compounds, triangle meshes as static or kinematic scenery) with sizes from
  1 mm to 100 m, masses over six decades, speeds up to 500 m/s, spins up to 1000 rad/s,
  kinematic bodies on wild paths;
- ``crush``: a heavy ball (sphere or hull, 100-5000 kg, 12-40 m/s) into a stack of light
  boxes (0.5-5 kg) with passive neighbours: the scene class of issue 11.

Invariants checked after every step (``check_step``): every pose and velocity finite,
quaternions unit, no dynamic body faster than the scene can explain (twice the fastest surface
speed at the start or of any kinematic path, plus 50 m/s, plus what gravity adds), and, with no
kinematic body moving, total mechanical energy (kinetic, gravity's and the joint springs')
bounded by the start's plus what contact push-out can add and what limits that exclude the
start pose force into their springs (and, in scenes with springs, that budget again:
symplectic Euler (engine.dynamics.joint_springs) keeps a slightly tilted ellipse, so a stiff spring's
measured energy swings by up to h omega / 2 < 1 of its share while the true orbit keeps it); at the
end no dynamic body deeper in a static one than a bounded depth, the world's guard never fired,
and a replay from a mid-run state is bit-identical.

Joints are levers and slings: a body in a joint may outrun the free-collision speed bound. With
no kinematic motion the energy check bounds such bodies instead; with it, the bound is scaled by
the body's lever factor (``lever_factors``: its joints' anchor arms over the bodies' reach).

Joints: a scene made with ``joints=True`` (``bench/fuzz_world.py --joints``) also gets random
joints (``random_joints``: every kind but the motor, which adds energy by design, between random
dynamic bodies or to the world, at random frames, with random limits, springs and break
thresholds), added after its bodies; the bodies are those of the same seed without joints.
``JOINT_HOOKS`` holds further ``hook(world, scene, rng, body_ids)`` callables run for every
scene.
"""
import contextlib
import math
from dataclasses import dataclass, field, replace

import numpy as np

from engine import Box, Capsule, Compound, ConvexHull, EngineError, Sphere, TriangleMesh, World
from engine.core import quat

FAMILIES = ("violent", "crush")
# Families run only when named (bench/fuzz_world.py --family net): adding them to FAMILIES
# would change the scene every existing seed draws.
NAMED_FAMILIES = ("net",)
JOINT_HOOKS = []   # see the module docstring


@dataclass
class BodySpec:
    shape: tuple            # ("box", half_extents) | ("sphere", r) | ("capsule", r, hh) |
    #                         ("hull", points) | ("compound", parts) | ("mesh", verts, tris)
    kind: str
    position: np.ndarray
    orientation: np.ndarray
    linear: np.ndarray
    angular: np.ndarray
    mass: float
    friction: float = 0.5
    restitution: float = 0.0
    path: tuple = None      # kinematic: (kind, amplitude (3,), omega, spin (3,))


@dataclass
class Scene:
    seed: int
    family: str
    dt: float
    ccd: bool
    steps: int
    bodies: list = field(default_factory=list)
    gravity: tuple = (0.0, 0.0, -9.81)
    joints: bool = False    # random joints between the bodies (random_joints)
    # The net family's joints: (kind, body index a, body index b or None for the world,
    # world position) rows, and its spacing (m) and whether it starts at rest (_net).
    links: list = field(default_factory=list)
    spacing: float = 0.0
    at_rest: bool = False

    def subset(self, keep):
        """The same scene with only the bodies whose index is in keep (for shrinking); a
        link keeps its place only while both its bodies stay."""
        keep = sorted(set(keep))
        new = {old: k for k, old in enumerate(keep)}
        links = [(kind, new[a], None if b is None else new[b], p) for kind, a, b, p in self.links
                 if a in new and (b is None or b in new)]
        return replace(self, bodies=[self.bodies[i] for i in keep], links=links)

    def describe(self):
        kinds = {}
        for b in self.bodies:
            k = f"{b.kind[:3]}-{b.shape[0]}"
            kinds[k] = kinds.get(k, 0) + 1
        return (f"seed={self.seed} family={self.family} dt=1/{round(1 / self.dt)} "
                f"ccd={self.ccd} steps={self.steps} bodies={kinds}"
                + (" joints" if self.joints else "")
                + (f" links={len(self.links)}" + (" at rest" if self.at_rest else " swinging")
                   if self.links else ""))


# -- random shapes ----------------------------------------------------------------------------
def _log_uniform(rng, lo, hi):
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def _cloud(rng, size):
    """A random point cloud, sometimes degenerate-ish (nearly flat, nearly a line, duplicated
    points, a few points, a jittered regular solid)."""
    style = int(rng.integers(6))
    n = int(rng.integers(5, 40))
    p = rng.normal(size=(n, 3))
    if style == 1:    # nearly flat
        p[:, 2] *= rng.choice([1e-2, 1e-3])
    elif style == 2:  # a needle
        p[:, 1:] *= rng.choice([2e-2, 5e-3])
    elif style == 3:  # duplicated points
        p = np.concatenate((p, p[: n // 2] + rng.normal(scale=1e-9, size=(n // 2, 3))))
    elif style == 4:  # a tetrahedron-ish minimum
        p = p[:4] + rng.normal(scale=1e-2, size=(4, 3))
    elif style == 5:  # a jittered cube
        p = np.array([(x, y, z) for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
        p += rng.normal(scale=1e-6, size=p.shape)
    p /= max(np.abs(p).max(), 1e-12)
    return p * size


def _random_shape(rng, size, allow_mesh=False):
    k = int(rng.integers(6 if allow_mesh else 5))
    aspect = np.exp(rng.uniform(-1.5, 1.5, 3))
    if k == 0:
        return ("box", size * aspect / aspect.max())
    if k == 1:
        return ("sphere", size)
    if k == 2:
        return ("capsule", size * float(aspect[0] / aspect.max()), size)
    if k == 3:
        return ("hull", _cloud(rng, size))
    if k == 4:
        parts = []
        for _ in range(int(rng.integers(2, 4))):
            sub = _random_shape(rng, size * rng.uniform(0.3, 0.7))
            while sub[0] == "compound":
                sub = _random_shape(rng, size * 0.5)
            parts.append((sub, rng.uniform(-size, size, 3), quat.normalize(rng.normal(size=4))))
        return ("compound", parts)
    # a bumpy triangle-mesh terrain patch
    n = int(rng.integers(3, 7))
    g = np.linspace(-size, size, n)
    xx, yy = np.meshgrid(g, g)
    zz = rng.normal(scale=0.2 * size, size=xx.shape)
    verts = np.stack((xx.ravel(), yy.ravel(), zz.ravel()), axis=1)
    tris = []
    for i in range(n - 1):
        for j in range(n - 1):
            a, b, c, d = i * n + j, i * n + j + 1, (i + 1) * n + j, (i + 1) * n + j + 1
            tris += [(a, b, d), (a, d, c)]
    return ("mesh", verts, np.array(tris))


def make_shape(spec):
    k = spec[0]
    if k == "box":
        return Box(spec[1])
    if k == "sphere":
        return Sphere(spec[1])
    if k == "capsule":
        return Capsule(spec[1], spec[2])
    if k == "hull":
        return ConvexHull(spec[1])
    if k == "compound":
        return Compound([(make_shape(s), p, q) for s, p, q in spec[1]])
    return TriangleMesh(spec[1], spec[2])


# -- scene families -----------------------------------------------------------------------------
def random_scene(seed, family=None, extreme=False, joints=False):
    """The scene of a seed. extreme: spins up to 1000 rad/s whatever the body's size (a 100 m
    sphere's surface then moves at 100 km/s); by default a body's spin is also capped so its
    surface moves at most MAX_SURFACE_SPEED."""
    rng = np.random.default_rng(seed)
    if family is None:
        family = FAMILIES[int(rng.integers(len(FAMILIES)))]
    dt = 1.0 / 24.0 if rng.random() < 0.5 else 1.0 / 60.0
    scene = Scene(seed=seed, family=family, dt=dt, ccd=bool(rng.random() < 0.5),
                  steps=round(1.0 / dt), joints=joints)
    if family == "violent":
        _violent(scene, rng, extreme)
    elif family == "net":
        _net(scene, rng)
    else:
        _crush(scene, rng)
    return scene


def _unit_q(rng):
    return quat.normalize(rng.normal(size=4))


MAX_SURFACE_SPEED = 1000.0  # m/s, see random_scene


def _violent(scene, rng, extreme=False):
    scale = _log_uniform(rng, 1e-3, 100.0)   # the scene's typical size
    ground = 20 * scale
    scene.bodies.append(BodySpec(("box", np.array([ground, ground, scale])), "static",
                                 np.array([0.0, 0.0, -scale]), np.array([1.0, 0, 0, 0]),
                                 np.zeros(3), np.zeros(3), 1.0))
    n = int(rng.integers(3, 12))
    for _ in range(n):
        size = scale * _log_uniform(rng, 0.1, 10.0)
        size = min(max(size, 1e-3), 100.0)
        r = rng.random()
        kind = "dynamic" if r < 0.7 else ("static" if r < 0.85 else "kinematic")
        shape = _random_shape(rng, size, allow_mesh=kind != "dynamic")
        pos = rng.uniform(-4 * scale, 4 * scale, 3)
        pos[2] = abs(pos[2]) + size
        speed = _log_uniform(rng, 1e-2, 500.0) if rng.random() < 0.7 else 0.0
        spin = _log_uniform(rng, 1e-2, 1000.0) if rng.random() < 0.5 else 0.0
        if not extreme:
            spin = min(spin, MAX_SURFACE_SPEED / _reach(shape))
        lin = speed * _unit3(rng)
        path = None
        if kind == "kinematic":
            path = (int(rng.integers(3)), rng.uniform(0, 4 * scale, 3), rng.uniform(0.5, 40.0),
                    rng.uniform(-20, 20, 3))
        scene.bodies.append(BodySpec(shape, kind, pos, _unit_q(rng), lin, spin * _unit3(rng),
                                     _log_uniform(rng, 1e-2, 1e4),
                                     friction=float(rng.uniform(0, 1.2)),
                                     restitution=float(rng.choice([0.0, 0.0, 0.5, 1.0])),
                                     path=path))


def _unit3(rng):
    v = rng.normal(size=3)
    return v / max(np.linalg.norm(v), 1e-12)


def _crush(scene, rng):
    """A heavy ball into a stack of light boxes with passive neighbours (issue 11)."""
    scene.bodies.append(BodySpec(("box", np.array([40.0, 40.0, 0.5])), "static",
                                 np.array([0.0, 0.0, -0.5]), np.array([1.0, 0, 0, 0]),
                                 np.zeros(3), np.zeros(3), 1.0))
    passive = float(rng.choice([0.0, 0.25, 0.5]))
    nx, ny, nz = int(rng.integers(1, 4)), int(rng.integers(2, 6)), int(rng.integers(2, 6))
    hullbox = rng.random() < 0.5
    for i in range(nx):
        for j in range(ny):
            z = 0.0
            for _ in range(nz):
                he = rng.uniform(0.15, 0.3, 3)
                shape = ("box", he) if not hullbox else (
                    "hull", np.array([(x, y, w) for x in (-1, 1) for y in (-1, 1)
                                      for w in (-1, 1)], float) * he)
                kind = "static" if rng.random() < passive else "dynamic"
                pos = np.array([i * 0.62, (j - ny / 2) * 0.62, z + he[2] + 0.001])
                scene.bodies.append(BodySpec(shape, kind, pos, np.array([1.0, 0, 0, 0]),
                                             np.zeros(3), np.zeros(3),
                                             float(rng.uniform(0.5, 5.0))))
                z += 2 * he[2] + 0.002
    r = float(rng.uniform(0.5, 1.5))
    shape = ("sphere", r) if rng.random() < 0.5 else ("hull", uv_sphere(r))
    speed = float(rng.choice([12.0, 17.0, 25.0, 40.0]))
    scene.bodies.append(BodySpec(shape, "dynamic",
                                 np.array([-3.0 - r - 0.4 * speed * rng.random(),
                                           rng.uniform(-1, 1), r + rng.uniform(0, 2)]),
                                 _unit_q(rng), np.array([speed, rng.uniform(-2, 2), 0.0]),
                                 np.zeros(3), float(rng.choice([100.0, 300.0, 1000.0, 5000.0]))))


NET_LAYOUTS = ("ladder", "net", "loop")


def _net(scene, rng):
    """Nets, ladders and loops of bodies joined by joints at the midpoints of their links
    (issue 25): a 2 x N ladder or a C x R net hanging in the XZ plane or lying flat, or a
    ring of K bodies; masses spread over 1:100; pinned to the world or to static bodies at
    random nodes (at rest: the top row of a hanging ladder or net, where hanging straight
    down is equilibrium); swinging: pinned anywhere, or thrown. Mostly point joints
    (Blender's Point), some fixed, hinge or generic ones."""
    layout = NET_LAYOUTS[int(rng.integers(len(NET_LAYOUTS)))]
    s = _log_uniform(rng, 0.05, 2.0)
    scene.spacing = s
    scene.steps = round(2.0 / scene.dt)
    scene.at_rest = layout != "loop" and rng.random() < 0.5
    if layout == "loop":
        k = int(rng.integers(4, 31))
        ang = 2 * np.pi * np.arange(k) / k
        rad = s / (2 * math.sin(math.pi / k))
        pos = np.stack((rad * np.cos(ang), np.zeros(k), rad * np.sin(ang)), axis=1)
        edges = [(i, (i + 1) % k) for i in range(k)]
        pins = sorted({int(p) for p in rng.integers(k, size=int(rng.integers(1, 3)))})
    else:
        cols = 2 if layout == "ladder" else int(rng.integers(2, 13))
        rows = int(rng.integers(2, 41 if layout == "ladder" else 13))
        flat = not scene.at_rest and rng.random() < 0.5
        ij = np.stack(np.meshgrid(np.arange(cols), np.arange(rows), indexing="ij"), -1)
        ij = ij.reshape(-1, 2)
        pos = np.zeros((len(ij), 3))
        pos[:, 0] = ij[:, 0] * s
        pos[:, 1 if flat else 2] = -ij[:, 1] * s
        idx = np.arange(len(ij)).reshape(cols, rows)
        edges = [(int(a), int(b)) for a, b in zip(idx[:-1].ravel(), idx[1:].ravel())]
        edges += [(int(a), int(b)) for a, b in zip(idx[:, :-1].ravel(), idx[:, 1:].ravel())]
        if scene.at_rest:
            pins = [int(i) for i in idx[:, 0]]
        else:
            pins = sorted({int(p) for p in rng.integers(len(ij), size=int(rng.integers(1, 5)))})
    pos[:, 2] += 10.0 * s + 1.0
    m0 = _log_uniform(rng, 0.1, 100.0)
    masses = m0 * np.exp(rng.uniform(0.0, math.log(100.0), len(pos)))
    box = rng.random() < 0.25
    # Swinging: thrown as a whole (one velocity), or let fall from where it is.
    throw = 0.0 if scene.at_rest else (rng.random() < 0.5) * _log_uniform(rng, 0.1, 10.0)
    throw = throw * _unit3(rng)
    static_pins = rng.random() < 0.5
    for i, p in enumerate(pos):
        pinned_static = static_pins and i in pins
        shape = ("box", np.full(3, 0.3 * s)) if box else ("sphere", 0.3 * s)
        lin = np.zeros(3) if pinned_static else throw
        scene.bodies.append(BodySpec(shape, "static" if pinned_static else "dynamic", p,
                                     np.array([1.0, 0, 0, 0]), lin, np.zeros(3),
                                     float(masses[i])))
    kinds = ("point", "point", "point", "point", "fixed", "hinge", "generic")
    kind = kinds[int(rng.integers(len(kinds)))]
    for a, b in edges:
        if static_pins and a in pins and b in pins:
            continue   # two static ends: no joint can move anything
        scene.links.append((kind, a, b, 0.5 * (pos[a] + pos[b])))
    if not static_pins:
        for i in pins:
            scene.links.append((kind, i, None, pos[i].copy()))


def add_links(world, scene, ids):
    """The scene's links as joints (a link to a body the engine refused is skipped)."""
    for kind, a, b, p in scene.links:
        if ids[a] < 0 or (b is not None and ids[b] < 0):
            continue
        limits = {"lin_x": (0.0, 0.0), "lin_y": (0.0, 0.0), "lin_z": (0.0, 0.0)} \
            if kind == "generic" else None
        with contextlib.suppress(EngineError):   # two non-dynamic ends after a shrink
            world.add_joint(kind, ids[a], None if b is None else ids[b], position=p,
                            limits=limits)


def uv_sphere(r, segments=32, rings=16):
    """Vertices of Blender's UV sphere (the shape of issue 11's hull ball)."""
    th = np.pi * np.arange(1, rings) / rings
    ph = 2 * np.pi * np.arange(segments) / segments
    ring = np.stack((np.sin(th)[:, None] * np.cos(ph), np.sin(th)[:, None] * np.sin(ph),
                     np.cos(th)[:, None] * np.ones_like(ph)), axis=-1).reshape(-1, 3)
    return r * np.concatenate(([[0, 0, 1.0], [0, 0, -1.0]], ring))


# -- building and running ------------------------------------------------------------------------
def build_world(scene):
    """(world, body ids (one per BodySpec, -1 if the engine refused it: a documented error),
    refused count)."""
    world = World(gravity=scene.gravity, ccd=scene.ccd)
    ids = []
    refused = 0
    for b in scene.bodies:
        try:
            shape = make_shape(b.shape)
            ids.append(world.add_body(shape, position=b.position, orientation=b.orientation,
                                      linear_velocity=b.linear, angular_velocity=b.angular,
                                      kind=b.kind, mass=b.mass, friction=b.friction,
                                      restitution=b.restitution))
        except EngineError:
            ids.append(-1)   # degenerate input refused with a clear error: allowed
            refused += 1
    add_links(world, scene, ids)
    rng = np.random.default_rng(scene.seed + 7)
    if scene.joints:
        random_joints(world, scene, rng, ids)
    for hook in JOINT_HOOKS:
        hook(world, scene, rng, ids)
    return world, ids, refused


JOINT_KINDS = ("fixed", "point", "hinge", "slider", "piston", "generic", "generic_spring")
AXES = ("lin_x", "lin_y", "lin_z", "ang_x", "ang_y", "ang_z")


def random_joints(world, scene, rng, ids):
    """Up to one joint per dynamic body: to another dynamic body (3 in 4) or to the world, of
    a random kind (no motors: they add energy), its frame at a random point between the two
    (or at the body), randomly turned; random limits on some axes, springs on a
    generic_spring, a break force on some. A joint the engine refuses with an EngineError (a
    documented refusal) is skipped."""
    dyn = [i for b, i in zip(scene.bodies, ids) if i >= 0 and b.kind == "dynamic"]
    if not dyn:
        return
    pos = world.positions
    for a in dyn:
        kind = JOINT_KINDS[int(rng.integers(len(JOINT_KINDS)))]
        others = [b for b in dyn if b != a]
        b = int(rng.choice(others)) if others and rng.random() < 0.75 else None
        at = pos[a] if b is None else pos[a] + rng.random() * (pos[b] - pos[a])
        limits, springs = {}, {}
        for ax in AXES:
            if rng.random() < 0.3:
                lo = -rng.uniform(0.0, 1.0)
                limits[ax] = (lo, lo + rng.uniform(0.0, 2.0))
        if kind == "generic_spring":
            m = float(world.masses[a])
            for ax in AXES[:3]:
                springs[ax] = (m * _log_uniform(rng, 1.0, 1e4), m * rng.uniform(0.0, 5.0))
        with contextlib.suppress(EngineError):   # a documented refusal: no joint
            world.add_joint(kind, a, b, position=at, orientation=_unit_q(rng),
                            limits=limits or None, springs=springs or None,
                            break_force=(float(_log_uniform(rng, 1.0, 1e6))
                                         if rng.random() < 0.3 else None))


def kinematic_targets(scene, ids, t):
    """Targets of the kinematic bodies at time t: (index, position, orientation) rows."""
    out = []
    for b, i in zip(scene.bodies, ids):
        if i < 0 or b.kind != "kinematic" or b.path is None:
            continue
        style, amp, om, spin = b.path
        if style == 0:     # orbit
            off = amp * np.array([math.cos(om * t), math.sin(om * t), math.sin(0.5 * om * t)])
        elif style == 1:   # zigzag (velocity jumps)
            off = amp * (2 * abs((om * t / (2 * math.pi)) % 1.0 - 0.5) - 0.5)
        else:              # straight line at speed |amp| om
            off = amp * om * t
        rot = quat.from_axis_angle(spin / max(np.linalg.norm(spin), 1e-12),
                                   np.linalg.norm(spin) * t) if np.any(spin) else \
            np.array([1.0, 0, 0, 0])
        out.append((i, b.position + off, quat.multiply(rot, b.orientation)))
    return out


def kinematic_speed_bound(scene, ids):
    """The fastest a kinematic body's surface can move along its path (m/s)."""
    top = 0.0
    for b, i in zip(scene.bodies, ids):
        if i < 0 or b.kind != "kinematic" or b.path is None:
            continue
        style, amp, om, spin = b.path
        reach = _reach(b.shape)
        lin = np.linalg.norm(amp) * om * (2.0 / math.pi if style == 1 else 1.0) * 2.0
        top = max(top, lin + np.linalg.norm(spin) * reach)
    return top


def _reach(shape):
    k = shape[0]
    if k == "box":
        return float(np.linalg.norm(shape[1]))
    if k == "sphere":
        return float(shape[1])
    if k == "capsule":
        return float(shape[1] + shape[2])
    if k == "hull":
        return float(np.linalg.norm(shape[1], axis=1).max())
    if k == "mesh":
        return float(np.linalg.norm(shape[1], axis=1).max())
    return max(float(np.linalg.norm(p)) + _reach(s) for s, p, _ in shape[1])


@dataclass
class Outcome:
    scene: Scene
    steps: int = 0
    failure: str = None
    failed_step: int = -1
    guard_events: int = 0
    refused: int = 0
    max_speed: float = 0.0

    @property
    def ok(self):
        return self.failure is None


class Limits:
    """The bounds of a scene, computed once from its start state and kinematic paths."""

    def __init__(self, world, scene, ids):
        dyn = world.kinds == 0
        reach = world.table.bound_radius[world._v("shape")] + \
            np.linalg.norm(world._v("com"), axis=1)
        surf = np.linalg.norm(world.linear_velocities, axis=1) + \
            np.linalg.norm(world.angular_velocities, axis=1) * reach
        self.kin_speed = kinematic_speed_bound(scene, ids)
        self.surface = max(float(surf[dyn].max()) if dyn.any() else 0.0, self.kin_speed)
        self.g = float(np.linalg.norm(scene.gravity))
        self.energy0 = mechanical_energy(world, scene.gravity)
        mass = world.masses[dyn]
        # What soft contacts may add: push-out at max_push for every body, and the potential
        # energy of lifting each body out of an initial overlap (its own size).
        self.energy_slack = float(np.sum(mass * (0.5 * world.settings.max_push ** 2 + self.g *
                                                 2 * reach[dyn]))) + forced_spring_energy(world)
        if world.joints.n and world.joints.v("spring").any():
            # Symplectic Euler keeps a spring's shadow energy, not its energy: the two differ
            # by up to h omega / 2 of what the springs hold, omega the fastest mode the
            # explicit part carries. A row goes implicit from h omega = 1
            # (engine.dynamics.joint_springs), but springs sharing bodies have faster modes (a chain's
            # is twice a link's), and only h omega < 2 is stable: so the energy may read up to
            # the scene's whole budget high while the true orbit keeps it, and no more unless
            # it grows.
            self.energy_slack += abs(self.energy0) + self.energy_slack
        self.kinematic = self.kin_speed > 0
        self.lever = lever_factors(world, reach)
        # Nets (scene.links): the energy never above the start's, but for round-off (lifting
        # every body by a thousandth of its link), and at rest no link opening by more than
        # NET_REST_GAP of its length.
        self.net = bool(scene.links)
        self.net_slack = 1e-3 * self.g * float(np.sum(mass)) * scene.spacing + \
            1e-9 * abs(self.energy0)
        self.net_rest_gap = NET_REST_GAP * scene.spacing if scene.at_rest else np.inf

    def allow_overlap_springs(self, world, depth):
        """After the first step: the energy pushing bodies out of their start overlaps with
        static bodies (depth (N,), static_depths) may force into the springs holding them
        there (a 426 kg ball spawned 6 m inside a static sphere, held at its place by a
        1.5e6 N/m generic_spring: the push-out stretches it by 2e6 J), twice as the other
        spring energy (the symplectic allowance above)."""
        self.energy_slack += 2.0 * overlap_spring_energy(world, depth)

    def speed_cap(self, t):
        return 2.0 * self.surface + 50.0 + self.g * t


# The widest a link of a net at rest may open, in link lengths: joint locks are soft springs
# of stiffness m_eff omega^2 (omega = 2 pi joint hertz, m_eff the two ends' effective mass),
# so a body of 100 m hanging with others on a link between bodies of m sags by up to some
# 100 g / omega^2 per body below; the fuzzer's heaviest at-rest nets sag 0.2 of a link
# (seeds 13 and 29 of --family net).
NET_REST_GAP = 0.25


def net_check(world, limits):
    """The net family's invariants (see Limits); a failure message or None."""
    e = mechanical_energy(world, world.gravity)
    if e > limits.energy0 + limits.net_slack:
        return f"a net gained energy: {e - limits.energy0:.6g} J above its start"
    js = world.joints
    live = js.live() if js.n else np.zeros(0, dtype=bool)
    if live.any():
        gap = float(np.linalg.norm(world.joint_coordinates[live, :3], axis=1).max())
        if gap > limits.net_rest_gap:
            return f"a net at rest opened a link by {gap:.4g} m (allowed {limits.net_rest_gap:.4g})"
    return None


def mechanical_energy(world, gravity):
    dyn = world.kinds == 0
    if not dyn.any():
        return 0.0
    m = world.masses[dyn]
    v = world.linear_velocities[dyn]
    w = world.angular_velocities[dyn]
    ke = 0.5 * np.sum(m * np.einsum("ij,ij->i", v, v))
    rot = quat.to_matrix(world.orientations[dyn])
    inertia = rot @ world._v("inertia")[dyn] @ np.swapaxes(rot, 1, 2)
    ke += 0.5 * np.sum(np.einsum("ni,nij,nj->n", w, inertia, w))
    pe = -np.sum(m * (world.centers_of_mass[dyn] @ np.asarray(gravity)))
    return float(ke + pe + spring_energy(world))


def spring_energy(world):
    """Potential energy in the live joints' springs (rest at coordinate 0), J."""
    js = world.joints
    if not js.n or not js.v("spring").any():
        return 0.0
    k = np.where(js.v("spring") & js.live()[:, None], js.v("stiffness"), 0.0)
    c = world.joint_coordinates
    return float(0.5 * np.sum(k * c * c))


def forced_spring_energy(world):
    """What a limit that excludes the start pose forces into its axis's spring: 1/2 k d^2,
    d the distance from 0 (where the spring rests) to the limit range, J."""
    js = world.joints
    if not js.n:
        return 0.0
    lo, hi = js.v("lower"), js.v("upper")
    d = np.where(js.v("limited"), np.maximum(lo, 0.0) - np.minimum(hi, 0.0), 0.0)
    k = np.where(js.v("spring"), js.v("stiffness"), 0.0)
    return float(0.5 * np.sum(k * d * d))


def overlap_spring_energy(world, depth):
    """1/2 k (d_a + d_b)^2 summed over the live linear spring rows, d the two ends' start
    depths in static bodies (depth (N,)): a push-out moves a body by at most its depth, so
    its springs stretch by at most the sum, J. (The fuzzer's springs are all linear.)"""
    js = world.joints
    if not js.n or not js.v("spring").any():
        return 0.0
    d = depth[js.v("body_a")] + np.where(js.v("world"), 0.0, depth[js.v("body_b")])
    k = np.where(js.v("spring") & js.live()[:, None], js.v("stiffness"), 0.0)[:, :3]
    return float(0.5 * np.sum(k * (d * d)[:, None]))


def check_step(world, limits, t):
    """The per-step invariants; returns a failure message or None."""
    st = world.get_state()
    for name in ("x", "pos", "q", "vel"):
        if not np.all(np.isfinite(st[name])):
            bad = np.flatnonzero(~np.all(np.isfinite(st[name].reshape(len(st[name]), -1)),
                                         axis=1))
            return f"non-finite {name} of bodies {bad[:8].tolist()}"
    qn = np.linalg.norm(st["q"], axis=1)
    if np.any(np.abs(qn - 1.0) > 1e-6):
        return f"quaternion not unit: |q| = {qn[np.argmax(np.abs(qn - 1))]!r}"
    dyn = world.kinds == 0
    speed = np.linalg.norm(world.linear_velocities, axis=1)
    cap = limits.speed_cap(t)
    fast = dyn & (speed > cap)
    # "Twice the striker's speed" bounds what a free collision can give; a joint is a lever
    # or a whip and may pass on more (a 2 kg box on a 5 m arm from a 1 t ball at 25 m/s swings
    # at 107 m/s, seed 2). With no kinematic motion the energy check below bounds the bodies
    # in joints; with it, their lever factors (lever_factors) scale the cap.
    if not limits.kinematic:
        fast &= ~_jointed(world)
    else:
        fast &= speed > cap * limits.lever
    if fast.any():
        i = int(np.argmax(np.where(fast, speed, 0)))
        bound = cap * (limits.lever[i] if limits.kinematic else 1.0)
        return f"body {i} at {speed[i]:.4g} m/s, more than the scene explains ({bound:.4g})"
    if not limits.kinematic:
        e = mechanical_energy(world, world.gravity)
        allowed = limits.energy0 + abs(limits.energy0) * 0.05 + limits.energy_slack + 1e-9
        if e > allowed:
            return f"energy from nowhere: {e:.6g} J > {allowed:.6g} J allowed"
    return None


def lever_factors(world, reach):
    """(N,) how much faster than the free-collision bound a body may go through its joints: 1
    for a free body; for a body in joints the largest 1 + |r_a| / R_a + |r_b| / R_b of them, r
    the anchor arms from the two centres and R the bodies' reach. The anchor on A moves at
    most A's surface speed times |r_a| / R_a (it may lie far outside A: a slider's anchor 48 m
    off a compound), and B turns about it at most at B's surface speed times |r_b| / R_b."""
    out = np.ones(world.body_count)
    js = world.joints
    if not js.n:
        return out
    a, b, wj = js.v("body_a"), js.v("body_b"), js.v("world")
    arm_a = np.where(wj, 0.0, np.linalg.norm(js.v("anchor_a"), axis=1) / reach[a])
    arm_b = np.linalg.norm(js.v("anchor_b"), axis=1) / reach[b]
    f = 1.0 + arm_a + arm_b
    np.maximum.at(out, a, f)
    np.maximum.at(out, b, f)
    return out


def _jointed(world):
    """(N,) bool: the bodies in a joint, live or broken (a broken one may have slung its body
    away, as a sling does a stone)."""
    out = np.zeros(world.body_count, dtype=bool)
    js = world.joints
    if js.n:
        out[js.v("body_a")] = True
        out[js.v("body_b")] = True
    return out


def static_depths(world):
    """(N,) deepest overlap of each dynamic body with a static one in the last step's record
    (0 where none)."""
    out = np.zeros(world.body_count)
    rec = world.last_record
    if not rec or not len(rec.separations):
        return out
    kind = world.kinds
    pa, pb = rec.pairs[:, 0], rec.pairs[:, 1]
    for dyn, other in ((pa, pb), (pb, pa)):
        st = (kind[dyn] == 0) & (kind[other] == 1)
        np.maximum.at(out, dyn[st], -rec.separations[st])
    return out


def static_depth_excess(world, start=None):
    """Contacts of a dynamic body with a static one in the last step's record deeper than
    allowed: a quarter of the smaller body's bounding radius plus 2 cm (resting contacts sink
    by millimetres; a body half inside a wall is a failure), or, for a body that already lay
    deeper in a static body after the first step (``start``, from static_depths: a scene
    that spawns a body metres inside a static one, sometimes with the only short way out
    through another static body), that first depth: it must not end deeper than it began.
    Returns (depth, allowed) of the worst offender or None."""
    rec = world.last_record
    if not rec or not len(rec.separations):
        return None
    kind = world.kinds
    pa, pb = rec.pairs[:, 0], rec.pairs[:, 1]
    st = ((kind[pa] == 1) & (kind[pb] == 0)) | ((kind[pb] == 1) & (kind[pa] == 0))
    if not st.any():
        return None
    reach = world.table.bound_radius[world._v("shape")]
    allowed = 0.25 * np.minimum(reach[pa], reach[pb]) + 0.02
    if start is not None:
        dyn = np.where(kind[pa] == 0, pa, pb)
        allowed = np.maximum(allowed, start[dyn])
    excess = np.where(st, -rec.separations - allowed, -np.inf)
    j = int(np.argmax(excess))
    return (float(-rec.separations[j]), float(allowed[j])) if excess[j] > 0 else None


def run_scene(scene, steps=None, replay=True):
    """Run a scene, checking the invariants after every step; returns an Outcome."""
    world, ids, refused = build_world(scene)
    out = Outcome(scene=scene, refused=refused)
    if world.body_count == 0:
        return out
    limits = Limits(world, scene, ids)
    steps = scene.steps if steps is None else steps
    mid = steps // 2
    snap = None
    trace = []
    for s in range(steps):
        t = (s + 1) * scene.dt
        for i, p, q in kinematic_targets(scene, ids, t):
            world.set_kinematic_target(i, p, q)
        if s == mid:
            snap = world.get_state()
        try:
            world.step(scene.dt, record=(s == steps - 1 or s == 0))
        except Exception as exc:  # any error mid-step is a failure of the fuzz
            out.failure, out.failed_step = f"{type(exc).__name__}: {exc}", s
            break
        out.steps = s + 1
        if s == 0:
            start_depth = static_depths(world)
            limits.allow_overlap_springs(world, start_depth)
        out.guard_events = len(getattr(world, "guard_events", ()))
        if out.guard_events:
            ev = world.guard_events[0]
            out.failure, out.failed_step = f"guard fired: {ev}", s
            break
        msg = check_step(world, limits, t)
        if msg is None and limits.net:
            msg = net_check(world, limits)
        dyn = world.kinds == 0
        if dyn.any():
            out.max_speed = max(out.max_speed,
                                float(np.linalg.norm(world.linear_velocities[dyn], axis=1).max()))
        if msg:
            out.failure, out.failed_step = msg, s
            break
        if s >= mid:
            trace.append(world.get_state()["vel"].copy())
    if out.ok and scene.ccd:   # without CCD a fast body may tunnel: documented behaviour
        deep = static_depth_excess(world, start_depth)
        if deep:
            out.failure, out.failed_step = (f"ends {deep[0]:.4g} m deep in a static body "
                                            f"(allowed {deep[1]:.4g} m)", steps - 1)
    if out.ok and replay and snap is not None:
        world.set_state(snap)
        for k, s in enumerate(range(mid, steps)):
            t = (s + 1) * scene.dt
            for i, p, q in kinematic_targets(scene, ids, t):
                world.set_kinematic_target(i, p, q)
            world.step(scene.dt, record=(s == steps - 1))
            if not np.array_equal(world.get_state()["vel"], trace[k]):
                out.failure, out.failed_step = "replay from a saved state differs", s
                break
    return out


def shrink(scene, fails=None, rounds=3):
    """A smaller scene that still fails (delta debugging over the bodies). Returns the kept
    body indices (into the original scene)."""
    fails = fails or (lambda sc: not run_scene(sc, replay=False).ok)
    keep = list(range(len(scene.bodies)))
    for _ in range(rounds):
        changed = False
        chunk = max(1, len(keep) // 2)
        while chunk >= 1:
            i = 0
            while i < len(keep):
                trial = keep[:i] + keep[i + chunk:]
                if trial and fails(scene.subset(trial)):
                    keep, changed = trial, True
                else:
                    i += chunk
            chunk //= 2
        if not changed:
            break
    return keep
