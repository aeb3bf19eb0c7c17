"""Warm starting joints without carrying impacts over (engine.dynamics.joint_warm; issue 11)."""
import numpy as np
from substep_reference import reference_substeps

from engine import Box, Sphere, World
from engine.dynamics.joint_warm import kept_fraction
from engine.world import world as world_module


def impact_scale(p, dv, v0, v1):
    """kept_fraction of each joint, p = lam J and dv = lam M^-1 J^T (m, 12), v0 and v1 its
    bodies' velocities (m, 12) before and after all warm starts; None when all stay whole."""
    s = np.array([kept_fraction(float(pj @ dj), float(pj @ a), float(pj @ b))
                  for pj, dj, a, b in zip(p, dv, v0, v1)])
    return None if np.all(s == 1.0) else s


def _rows(rng, m):
    """Random joints: p = lam J, dv = lam M^-1 J^T with a random SPD M^-1 (m, 12)."""
    p = rng.normal(size=(m, 12))
    a = rng.normal(size=(m, 12, 12))
    minv = a @ np.swapaxes(a, 1, 2) + 0.1 * np.eye(12)
    return p, np.einsum("mij,mj->mi", minv, p)


def test_a_steady_load_keeps_its_warm_start():
    """Impulses that cancel the drift since the last substep (v1 barely moving along lam)
    stay whole, whatever v0 was."""
    rng = np.random.default_rng(1)
    p, dv = _rows(rng, 50)
    v0 = rng.normal(size=(50, 12))
    v1 = v0 + dv
    q = np.einsum("mc,mc->m", p, dv)
    # shift v1 so that lam . J v1 is at most 0.4 lam K lam
    v1 -= (np.einsum("mc,mc->m", p, v1) - 0.4 * q * rng.random(50))[:, None] * p / \
        np.einsum("mc,mc->m", p, p)[:, None]
    assert impact_scale(p, dv, v0, v1) is None


def test_an_impact_is_cut_to_what_adds_no_energy():
    """Where the rows would move along lam afterwards, the kept part s lam changes the energy
    by s w0 + s^2 q / 2 <= 0 (checked against the quadratic directly); a repeated impact on
    a joint at relative rest (w0 = 0) is dropped entirely; for a joint alone (v1 = v0 + dv)
    the scale is 1 at the threshold, so it does not jump."""
    rng = np.random.default_rng(2)
    p, dv = _rows(rng, 400)
    u = rng.uniform(0.0, 1.5, 400)
    v0 = -u[:, None] * dv          # w0 = -u q: a steady load at u = 1, an impact at u = 0
    v1 = v0 + dv
    s = impact_scale(p, dv, v0, v1)
    assert s is not None
    q = np.einsum("mc,mc->m", p, dv)
    w0 = np.einsum("mc,mc->m", p, v0)
    cut = u < 0.5
    assert cut.any() and (~cut).any()
    assert np.all(s[~cut] == 1.0)
    assert np.all(s[cut] * w0[cut] + 0.5 * s[cut] ** 2 * q[cut] <= 1e-9 * q[cut])
    np.testing.assert_allclose(s[cut], 2.0 * u[cut])
    at_rest = impact_scale(p, dv, np.zeros_like(v0), dv)
    assert np.all(at_rest == 0.0)


def _scales(build, monkeypatch, steps=48, dt=1.0 / 24.0):
    """The kept fractions of every warm start (joint_row_kernels.rows_warm_start's scale)
    while the world build() made was stepped, its substeps as the loop of calls
    (tests/substep_reference.py) so that each warm start can be watched."""
    import engine.dynamics.joint_solver as js
    calls = []
    orig = js.rows_warm

    def spy(vel, packed):
        orig(vel, packed)
        calls.append(packed[js.PACK.index("scale")].copy())
    with monkeypatch.context() as m:
        m.setattr(js, "rows_warm", spy)
        m.setattr(world_module.World, "_substeps_compiled", reference_substeps)
        w = build()
        for _ in range(steps):
            w.step(dt)
    return np.concatenate(calls)


def _chain(speed=0.0):
    w = World()
    prev = None
    for i in range(5):
        b = w.add_body(Box((0.05, 0.05, 0.2)), position=(3.0, 0.0, -0.4 * i), mass=1.0,
                       linear_velocity=(speed * i, 0.0, 0.0))
        w.add_joint("point", b, prev, position=(3.0, 0.0, 0.2 - 0.4 * i))
        prev = b
    return w


def _pendulum():
    w = World()
    bob = w.add_body(Sphere(0.1), position=(1.0, 0.0, 0.0), mass=1.0)
    w.add_joint("point", bob, None, position=(0.0, 0.0, 0.0))
    return w


def test_steady_loads_keep_their_warm_starts_and_impacts_do_not(monkeypatch):
    """A chain hanging at rest keeps every warm start whole; a pendulum swinging from the
    horizontal keeps at least 60 % (the part that is last substep's position correction
    goes); a chain whose links start with different speeds (an impact in each joint at the
    first substep) has those impulses cut."""
    assert np.all(_scales(_chain, monkeypatch) == 1.0)
    pend = _scales(_pendulum, monkeypatch)
    assert pend.min() >= 0.6
    assert _scales(lambda: _chain(1.0), monkeypatch, steps=1).min() < 0.5
