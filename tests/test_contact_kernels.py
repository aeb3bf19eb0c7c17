"""engine/dynamics/contact_kernels.py against the plain reference of tests/contact_reference.py (rows
built point by point, every pass in velocity space) on random manifolds built to clamp and on
resting stacks, driven as World._solve drives them: gravity, warm start, a biased pass, motion,
two relax passes per substep, restitution at the end. The physics itself is checked against
closed forms in tests/test_solver.py."""
import numpy as np
import pytest
from contact_reference import Reference
from test_solver import GRAVITY, SETTINGS, assert_close, build, random_scene, stacked_scene

from engine.dynamics import contact_kernels as kern
from engine.dynamics.integrate import integrate_velocities


def _bouncy(scene):
    """The scene with fast approaching speeds and restitution everywhere, so that the
    restitution pass has points to bounce."""
    scene = dict(scene)
    vel = scene["vel"].copy()
    moving = scene["inv_mass"] > 0.0
    vel[moving, :3] *= 3.0
    scene["vel"] = vel
    scene["restitution"] = np.full(len(scene["ia"]), 0.8)
    return scene


SCENES = {"random": random_scene, "stacked": stacked_scene,
          "bouncy": lambda rng: _bouncy(random_scene(rng))}


@pytest.mark.parametrize("kind,chained", [("random", False), ("bouncy", False),
                                          ("stacked", False), ("stacked", True)])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kernels_equal_the_reference(kind, chained, seed):
    """After every pass the velocities, impulses and largest normal impulses of the kernels
    equal the reference's to round-off, with the reference's rows handed to both.

    Unless chained, each pass starts the kernels from the reference's state: chained freely
    through a random scene, a round-off difference can flip a discrete decision of a later
    pass (a speculative point that closed its gap exactly sits at s = 0 +- round-off), a
    property of the scheme, not of the kernels. The stacked scene is also run chained."""
    rng = np.random.default_rng(300 + seed)
    h, nsub = 1.0 / 240.0, 4
    scene = SCENES[kind](rng)
    ref = Reference(scene, h, SETTINGS)
    mine = Reference(scene, h, SETTINGS)  # only its rows and state arrays: the kernels sweep
    args = mine.kernel_arrays()
    vel_r, vel_k = scene["vel"].copy(), scene["vel"].copy()
    dpose_r, dpose_k = np.zeros_like(vel_r), np.zeros_like(vel_r)
    movers = np.flatnonzero(scene["inv_mass"] > 0.0)
    ones = np.ones(len(movers))

    def compare(what):
        assert_close(vel_k, vel_r, f"velocities after {what}", rtol=1e-11)
        assert_close(mine.imp, ref.imp, f"impulses after {what}", rtol=1e-11)
        assert_close(mine.max_normal, ref.max_normal, f"largest impulses after {what}",
                     rtol=1e-11)
        if not chained:
            vel_k[:] = vel_r
            mine.imp[:] = ref.imp
            mine.max_normal[:] = ref.max_normal
            dpose_k[:] = dpose_r

    for k in range(nsub):
        for vel in (vel_r, vel_k):
            integrate_velocities(vel, movers, GRAVITY, ones, ones, h)
        ref.warm_start(vel_r)
        kern.warm_start(vel_k, *args[:5], args[6], mine.imp)
        compare(f"warm start {k}")
        ref.solve(vel_r, dpose_r, True)
        kern.solve_pass(vel_k, dpose_k, True, *args)
        compare(f"biased pass {k}")
        dpose_r[movers] += h * vel_r[movers]
        dpose_k[movers] += h * vel_k[movers]
        for i in range(2):
            ref.solve(vel_r, dpose_r, False)
            kern.solve_pass(vel_k, dpose_k, False, *args)
            compare(f"relax pass {i} of substep {k}")
    bounced = ref.imp[:, :4].copy()
    ref.restitution(vel_r, 1.0)
    kern.restitution(vel_k, *args[:10], mine.imp, mine.max_normal, mine.v_impact, mine.coef,
                     mine.accel_n, h, 1.0)
    compare("restitution")

    # What was compared covers the clamps: normal rows at zero and friction on its cone
    # (random), restitution impulses (bouncy), and unclamped block steps (stacked).
    used = np.arange(4) < scene["count"][:, None]
    normal = ref.imp[:, :4]
    fr = np.hypot(ref.imp[:, 4::2], ref.imp[:, 5::2])
    if kind == "random":
        assert (normal[used] == 0.0).any()
        on_cone = np.abs(fr - scene["friction"][:, None] * normal) < 1e-12
        assert (on_cone & used & (normal > 0.0)).any()
    if kind == "bouncy":
        assert (ref.imp[:, :4] != bounced).any()
    if kind == "stacked":
        assert (normal[used] > 0.0).all()


def test_separations_follow_the_displacements():
    """separations = sep0 + J_n dpose: against the distance along the normal gained by the
    two bodies' material points, for small rigid displacements (exact to first order)."""
    rng = np.random.default_rng(9)
    scene = random_scene(rng)
    ref = Reference(scene, 1.0 / 240.0, SETTINGS)
    dpose = rng.normal(size=scene["vel"].shape) * 1e-3
    dpose[scene["inv_mass"] == 0.0] = 0.0
    out = np.empty((ref.m, 4))
    args = ref.kernel_arrays()
    kern.separations(np.arange(ref.m), ref.idx, ref.count, ref.dirs, args[5], ref.sep0, dpose,
                     out)
    x = scene["x_com"]
    for i, (a, b) in enumerate(ref.idx):
        n = ref.dirs[i, 0]
        for p in range(ref.count[i]):
            pt = scene["points"][i, p]
            move_a = dpose[a, :3] + np.cross(dpose[a, 3:], pt - x[a])
            move_b = dpose[b, :3] + np.cross(dpose[b, 3:], pt - x[b])
            assert out[i, p] == pytest.approx(ref.sep0[i, p] + (move_b - move_a) @ n,
                                              abs=1e-15)


def test_passes_leave_fixed_bodies_alone():
    """Static, kinematic and sleeping bodies (zero inverse mass) keep their velocities
    through every pass, whatever the impulses."""
    rng = np.random.default_rng(4)
    scene = random_scene(rng)     # bodies 0-2: static, kinematic, asleep
    ref = Reference(scene, 1.0 / 240.0, SETTINGS)
    vel = scene["vel"].copy()
    before = vel[:3].copy()
    dpose = np.zeros_like(vel)
    args = ref.kernel_arrays()
    kern.warm_start(vel, *args[:5], args[6], ref.imp)
    for use_bias in (True, False):
        kern.solve_pass(vel, dpose, use_bias, *args)
    kern.restitution(vel, *args[:10], ref.imp, ref.max_normal, ref.v_impact, ref.coef, ref.accel_n,
                     ref.h, 1.0)
    np.testing.assert_array_equal(vel[:3], before)
    assert np.abs(ref.imp).max() > 0.0


@pytest.mark.parametrize("kind", ["random", "bouncy", "stacked"])
@pytest.mark.parametrize("seed", [0, 1])
def test_contact_solver_equals_the_reference(kind, seed):
    """ContactSolver end to end (its rows prepared with numpy, in its colour order, its passes
    in the kernels) against the reference built from the same scene and swept in the same
    order: the impulses (in the caller's order) and velocities agree after a whole step,
    each pass starting from the reference's state (see test_kernels_equal_the_reference)."""
    rng = np.random.default_rng(400 + seed)
    h, nsub = 1.0 / 240.0, 3
    scene = SCENES[kind](rng)
    vel_s, vel_r = scene["vel"].copy(), scene["vel"].copy()
    s = build(**dict(scene, vel=vel_s), h=h)
    assert (s.order != np.arange(s.m)).any()   # it sweeps in an order of its own
    ref = Reference({k: (v[s.order] if k not in NOT_PER_MANIFOLD else v)
                     for k, v in scene.items()}, h, SETTINGS)
    inv = np.argsort(s.order)
    dpose_s, dpose_r = np.zeros_like(vel_s), np.zeros_like(vel_s)
    movers = np.flatnonzero(scene["inv_mass"] > 0.0)
    ones = np.ones(len(movers))

    def compare(what):
        normal, _, fr, _ = s.impulses()
        assert_close(vel_s, vel_r, f"velocities after {what}", rtol=1e-10)
        assert_close(normal, ref.imp[inv, :4], f"normal impulses after {what}", rtol=1e-10)
        assert_close(fr[..., 0], ref.imp[inv, 4::2], f"friction after {what}", rtol=1e-10)
        assert_close(fr[..., 1], ref.imp[inv, 5::2], f"friction after {what}", rtol=1e-10)
        vel_s[:] = vel_r
        s.imp[:] = ref.imp
        s.max_normal[:] = ref.max_normal

    for k in range(nsub):
        for vel in (vel_s, vel_r):
            integrate_velocities(vel, movers, GRAVITY, ones, ones, h)
        s.warm_start(vel_s)
        ref.warm_start(vel_r)
        compare(f"warm start {k}")
        s.solve(vel_s, dpose_s, True)
        ref.solve(vel_r, dpose_r, True)
        compare(f"biased pass {k}")
        dpose_r[movers] += h * vel_r[movers]
        dpose_s[:] = dpose_r
        s.solve(vel_s, dpose_s, False)
        ref.solve(vel_r, dpose_r, False)
        compare(f"relax pass {k}")
    s.restitution(vel_s, 1.0)
    ref.restitution(vel_r, 1.0)
    compare("restitution")


# Scene entries that are per body, not per manifold.
NOT_PER_MANIFOLD = {"x_com", "inv_mass", "inv_inertia", "vel"}


def test_round_bodies_normal_rows_leave_out_their_axis():
    """build_rows with round-body axes: the normal rows' angular parts of each body have no
    component along that body's axis (the rest of them as without axes), the tangent rows
    are those without axes, K is J M^-1 J^T of the rows built and kp the pseudo-inverse of
    its normal block."""
    rng = np.random.default_rng(12)
    scene = random_scene(rng)
    ref = Reference(scene, 1.0 / 240.0, SETTINGS)
    m = ref.m
    x = scene["x_com"]
    ra = scene["points"] - x[scene["ia"]][:, None]
    rb = scene["points"] - x[scene["ib"]][:, None]
    axes = rng.normal(size=(2, m, 3))
    axes /= np.linalg.norm(axes, axis=2, keepdims=True)
    axes[:, ::3] = 0.0            # some manifolds without a round body
    out = [np.empty((m, 12, 6)), np.empty((m, 12, 6)), np.empty((m, 12, 12)),
           np.empty((m, 12)), np.empty((m, 4, 4))]
    im, ii = scene["inv_mass"], scene["inv_inertia"]
    ia, ib = scene["ia"], scene["ib"]
    kern.build_rows(np.arange(m), ref.idx, ref.count, ra, rb, ref.dirs, im[ia], im[ib], ii,
                    axes[0], axes[1], *out)
    jang, mang, kmat, eff, kp = out
    # The whole rows: the linear parts are -d, d (-d/m_a, d/m_b) on the rows of used slots.
    d = ref.jr[..., 6:9]
    jr = np.concatenate((-d, jang[..., :3], d, jang[..., 3:]), axis=2)
    mjr = np.concatenate((-im[ia, None, None] * d, mang[..., :3], im[ib, None, None] * d,
                          mang[..., 3:]), axis=2)
    # The block step's pseudo-inverse (Jacobi in the kernel) against numpy's SVD one.
    np.testing.assert_allclose(kp, np.linalg.pinv(kmat[:, :4, :4], rcond=1e-9, hermitian=True),
                               rtol=1e-9, atol=1e-9 * np.abs(kp).max())
    for side, cols in ((0, slice(3, 6)), (1, slice(9, 12))):
        ang = ref.jr[:, :4, cols]
        along = np.einsum("mri,mi->mr", ang, axes[side])
        expect = ang - along[..., None] * axes[side][:, None]
        np.testing.assert_allclose(jr[:, :4, cols], expect, rtol=0, atol=1e-14)
        np.testing.assert_allclose(np.einsum("mri,mi->mr", jr[:, :4, cols], axes[side]), 0.0,
                                   atol=1e-14)
    np.testing.assert_allclose(jr[:, 4:], ref.jr[:, 4:], rtol=0, atol=1e-14)
    np.testing.assert_allclose(kmat, np.einsum("mrk,msk->mrs", jr, mjr), rtol=0, atol=1e-12)
    diag = np.einsum("mrr->mr", kmat)
    np.testing.assert_allclose(eff, np.where(diag > 1e-12, 1.0 / np.maximum(diag, 1e-12), 0.0))
