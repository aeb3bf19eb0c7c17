"""Compile the engine before its first real step: the "preparing the physics engine" phase.

The engine's kernels (``jit.kernel``) compile at their first call, for the argument types of
that call. The first bake after an install would therefore stop inside its first step for as
long as compiling takes, with no word of why. Instead the add-on runs these stages first,
behind a progress message: each steps a tiny canned world through the same code a bake runs
(shapes of every kind, a triangle mesh, a compound, joints and glue, force fields, with and
without a step record), so every kernel on the step's path is compiled, or loaded from the
cache, for exactly the types a bake passes it.

A kernel this misses still works: it compiles at its first real call. ``jit.uncompiled()``
after ``warm_up()`` names such kernels (the tests require it to be empty): a new kernel on a
path no stage takes is covered by adding that path to a stage here.

With the plain-Python fallback, or no kernel defined at all, there is nothing to compile:
only the first stage runs.
"""
import time

import numpy as np

from ..core import jit

# The warm-up of this process: seconds taken, None until done.
_DONE: dict[str, float | None] = {"seconds": None}


def done():
    """True once this process has warmed up (or runs uncompiled: nothing to prepare)."""
    return _DONE["seconds"] is not None or jit.status()[0] == "python"


def seconds():
    """How long this process's warm-up took (None if not run)."""
    return _DONE["seconds"]


# -- the canned worlds -----------------------------------------------------------------------
def _ground(world):
    from ..shapes.primitives import Box
    world.add_body(Box([3.0, 3.0, 0.5]), position=(0.0, 0.0, -0.5), kind="static")


def _run(world, frames=2):
    """Step with and without a record (the overlays' and the tests' path, and the bake's)."""
    for k in range(frames):
        world.step(1.0 / 24.0, record=(k == 0))


def _polytopes():
    from ..shapes.hull import ConvexHull
    from ..shapes.primitives import Box, Sphere
    from .world import World
    w = World()
    _ground(w)
    pts = np.array([[x, y, z] for x in (-0.2, 0.2) for y in (-0.15, 0.15) for z in (-0.1, 0.1)])
    pts = np.vstack([pts, [[0.0, 0.0, 0.25]]])
    w.add_body(Box([0.2, 0.2, 0.2]), position=(-0.6, 0.0, 0.19))
    w.add_body(Box([0.2, 0.2, 0.2]), position=(-0.6, 0.0, 0.58),
               orientation=(0.9962, 0.0, 0.0, 0.0872))
    w.add_body(ConvexHull(pts), position=(0.6, 0.0, 0.09), linear_velocity=(0.5, 0.0, 0.0))
    # A thin plate spinning on the ground: it turns past inertia_refresh.REFRESH_ANGLE
    # within a pass, so the solver takes its rows again (ContactSolver.refresh_inertia).
    w.add_body(Box([0.3, 0.05, 0.01]), position=(0.0, 0.8, 0.0095),
               angular_velocity=(0.0, 0.0, 40.0))
    # A row of pebbles: with them the ground is one of the broadphase's big boxes (bigger
    # than the size most boxes stay under), which have a path of their own.
    for k in range(8):
        w.add_body(Box([0.05, 0.05, 0.05]), position=(-1.2 + 0.3 * k, -0.8, 0.049))
    # Its manifolds taken again within the pass as they turn (engine.world.recollide: big
    # worlds only, but its kernels are compiled here, for the plate).
    w.recollide_min_manifolds = 0
    _run(w)
    # A box at rest on the ground: its pair's manifold is reused from the pair table
    # (engine.collision.manifold_cache's kernels), in the polytope-only pass's kernel and,
    # with a ball beside it, on the general route. Steps without a record: the worlds above
    # took it.
    for ball in (False, True):
        w = World()
        _ground(w)
        w.add_body(Box([0.2, 0.2, 0.2]), position=(0.0, 0.0, 0.2))
        if ball:
            w.add_body(Sphere(0.1), position=(1.0, 0.0, 0.1))
            w.reuse_min_pairs = 0       # (its two pairs would reuse all or nothing)
        for _ in range(2):
            w.step(1.0 / 24.0)


def _round_shapes():
    from ..shapes.curved import Cone, Cylinder
    from ..shapes.primitives import Capsule, Sphere
    from .world import World
    w = World()
    _ground(w)
    w.add_body(Sphere(0.2), position=(-0.9, 0.0, 0.19), linear_velocity=(1.0, 0.0, 0.0))
    w.add_body(Capsule(0.1, 0.2), position=(-0.3, 0.0, 0.09),
               orientation=(0.7071, 0.7071, 0.0, 0.0))
    w.add_body(Cylinder(0.2, 0.3), position=(0.3, 0.0, 0.14))
    w.add_body(Cone(0.2, 0.4), position=(0.9, 0.0, 0.19))
    w.add_body(Sphere(0.2), position=(0.3, 0.0, 0.48), angular_velocity=(0.0, 2.0, 0.0))
    w.add_body(Sphere(0.1), position=(-0.3, 0.0, 0.28))      # resting on the capsule
    _run(w)
    _round_queries()


def _round_queries():
    """Distances of overlapping round cores and of a cylinder (the viewport's query overlay
    and the public engine.distance): the row kernels of queries' exact distances; and a
    manifold of two boxes through narrowphase.collide."""
    from ..collision.queries import distance
    from ..shapes.curved import Cylinder
    from ..shapes.primitives import Box, Capsule, Sphere
    q = (1.0, 0.0, 0.0, 0.0)
    distance(Sphere(0.2), (0.0, 0.0, 0.0), q, Box([0.2, 0.2, 0.2]), (0.0, 0.0, 0.1), q)
    distance(Cylinder(0.2, 0.3), (0.0, 0.0, 0.0), q, Box([0.2, 0.2, 0.2]), (0.0, 0.0, 0.3), q)
    # The overlay's EPA polytope of an overlapping pair (engine.epa).
    from ..collision.epa import epa
    box = Box([0.2, 0.2, 0.2]).core_points
    epa(box[None], 0.0, np.zeros((1, 3)), np.eye(3)[None], box[None], 0.0, [[0.0, 0.0, 0.3]],
        np.eye(3)[None])
    distance(Capsule(0.1, 0.4), (0.0, 0.0, 0.0), q, Capsule(0.1, 0.4), (0.0, 0.0, 0.05),
             (0.7071, 0.7071, 0.0, 0.0))
    # narrowphase.collide's polytope pairs (the overlay's manifold query; compound parts).
    from ..collision.queries import contact_manifold
    contact_manifold(Box([0.2, 0.2, 0.2]), (0.0, 0.0, 0.0), q, Box([0.2, 0.2, 0.2]),
                     (0.0, 0.0, 0.35), q)


def _compound_on_mesh():
    from ..shapes.compound import Compound
    from ..shapes.curved import Cylinder
    from ..shapes.primitives import Box, Sphere
    from ..shapes.trimesh import TriangleMesh
    from .world import World
    w = World()
    g = np.array([[x, y, 0.02 * (x * y)] for y in (-2.0, 0.0, 2.0) for x in (-2.0, 0.0, 2.0)])
    tris = [(r * 3 + c, r * 3 + c + 1, r * 3 + c + 4) for r in range(2) for c in range(2)]
    tris += [(r * 3 + c, r * 3 + c + 4, r * 3 + c + 3) for r in range(2) for c in range(2)]
    w.add_body(TriangleMesh(g, np.array(tris)), kind="static")
    table = Compound([(Box([0.3, 0.3, 0.05]), (0.0, 0.0, 0.3), (1.0, 0.0, 0.0, 0.0)),
                      (Box([0.05, 0.05, 0.15]), (0.0, 0.0, 0.1), (1.0, 0.0, 0.0, 0.0))])
    w.add_body(table, position=(0.0, 0.0, -0.04))
    w.add_body(Sphere(0.15), position=(0.8, 0.5, 0.14), linear_velocity=(-1.0, 0.0, 0.0))
    w.add_body(Cylinder(0.2, 0.3), position=(-0.9, -0.8, 0.16))
    _run(w)


def _joints_glue_fields():
    from ..features.fields import FieldKind, FieldTable, ForceField, field_forces, gradient_noise
    from ..features.glue import add_glue
    from ..shapes.primitives import Box
    from .world import World
    w = World()
    _ground(w)
    links = [w.add_body(Box([0.05, 0.05, 0.2]), position=(0.0, 0.0, 1.6 - 0.4 * k))
             for k in range(3)]
    w.add_joint("point", links[0], None, position=(0.0, 0.0, 1.8))
    w.add_joint("hinge", links[0], links[1], position=(0.0, 0.0, 1.4),
                limits={"ang_z": (-0.5, 0.5)})
    w.add_joint("generic_spring", links[1], links[2], position=(0.0, 0.0, 1.0),
                springs={"ang_x": (50.0, 1.0)})
    a = w.add_body(Box([0.1, 0.1, 0.1]), position=(1.0, 0.0, 0.1))
    b = w.add_body(Box([0.1, 0.1, 0.1]), position=(1.2, 0.0, 0.1))
    add_glue(w, [a], [b], [(1.1, 0.0, 0.1)], [0.04], 1000.0)
    w.add_joint("slider", a, None, position=(1.0, 0.0, 0.1),
                motor={"lin": (0.5, 10.0)})
    w.set_fields(FieldTable([ForceField(kind=FieldKind.WIND, strength=2.0,
                                        axis=(1.0, 0.0, 0.0))]))
    _run(w)
    # The fields' kernels outside the substeps: the forces on sleepers (World._field_wake)
    # and the noise of a turbulence field as tools sample it.
    field_forces(w.fields, w.centers_of_mass, w.linear_velocities)
    gradient_noise(np.zeros((1, 3)))
    _point_net()
    _hinge_chain()


def _point_net():
    """A loop of point joints on boxes (anisotropic) lying on the ground, pinned by two
    breakable world joints: the point-lock path (engine.dynamics.joint_points), which a world of
    mixed joints never takes."""
    from ..shapes.primitives import Box
    from .world import World
    w = World()
    _ground(w)
    at = [(0.0, 0.0, 0.0295), (0.3, 0.0, 0.0295), (0.3, 0.3, 0.0295), (0.0, 0.3, 0.0295)]
    ring = [w.add_body(Box([0.1, 0.05, 0.03]), position=p) for p in at]
    for k in range(4):
        a, b = at[k], at[(k + 1) % 4]
        w.add_joint("point", ring[k], ring[(k + 1) % 4],
                    position=tuple(0.5 * (np.array(a) + np.array(b))))
    for k in (0, 1):
        w.add_joint("point", ring[k], None, position=at[k], break_force=1e6)
    _run(w)


def _hinge_chain():
    """Thirteen bars on the ground joined end to end by hinges, the first to the world (65
    lock rows, loop-free): the direct solve's chain factor (engine.dynamics.joint_chain), which
    the small joint system above never takes; then the last bar hinged to the world too, a
    loop: the general rows' Gauss-Seidel lock blocks (joint_row_kernels.lock_blocks)."""
    from ..shapes.primitives import Box
    from .world import World
    w = World()
    _ground(w)
    prev = None
    for k in range(13):
        bar = w.add_body(Box([0.1, 0.02, 0.02]), position=(0.2 * k + 0.1, 0.0, 0.0195))
        w.add_joint("hinge", bar, prev, position=(0.2 * k, 0.0, 0.0195))
        prev = bar
    _run(w)
    w.add_joint("hinge", prev, None, position=(2.6, 0.0, 0.0195))
    w.step(1.0 / 24.0)


STAGES = (
    ("loading the compiler", jit.activate),
    ("boxes and hulls", _polytopes),
    ("round shapes", _round_shapes),
    ("compounds and meshes", _compound_on_mesh),
    ("joints, glue and fields", _joints_glue_fields),
)


def stages():
    """[(label, function)] to run in order (one per progress update in the add-on): the
    first decides compiled or plain Python; the others step canned worlds, and do nothing
    when uncompiled or when there is no kernel to compile."""
    start = time.perf_counter()

    def timed(fn, last):
        def run():
            if fn is jit.activate or (jit.status()[0] == "numba" and jit.kernel_names()):
                fn()
            if last:
                _DONE["seconds"] = time.perf_counter() - start
        return run
    n = len(STAGES)
    return [(label, timed(fn, k == n - 1)) for k, (label, fn) in enumerate(STAGES)]


def warm_up(log=None):
    """Run every stage now; log(str) is told what each does. Returns the seconds taken.

    When numba fails to compile a kernel, the engine runs as plain Python from then on
    (jit.fall_back): correct and slow rather than not at all, and the bake says why. Any
    other error is the engine's own: raised."""
    for label, run in stages():
        if log is not None:
            log(label)
        try:
            run()
        except Exception as exc:
            if not jit.is_compile_error(exc):
                raise
            first = (str(exc).strip().splitlines() or [""])[0]
            jit.fall_back(f"numba {jit.numba_version()} could not compile the engine "
                          f"({type(exc).__name__}: {first})")
            run()   # nothing to compile any more; the last stage records the seconds
    return _DONE["seconds"]
