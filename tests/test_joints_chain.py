"""The chain path of the direct lock solve (engine.dynamics.joint_chain) against independent truth:
the chain factor (block elimination) against numpy's dense solve on random block tridiagonal SPD systems,
chain_order against the chain it was built from, and a 50-link rope stepped with the chain
path against the dense Gauss-Jordan path (same answer to rounding, bit-exact replays; the rope is
built by tests/scenes_chains.py, as bench/bench_joints_chain.py times it)."""
import numpy as np
import pytest
from scenes_chains import capsule_rope

import engine.dynamics.joint_solver as joint_solver
from engine.dynamics.joint_chain import ChainSystem, chain_order


@pytest.mark.parametrize("d", [3, 6])
def test_chain_factor_solves_block_tridiagonal_spd_systems(d):
    rng = np.random.default_rng(7)
    for n in list(range(1, 18)) + [31, 32, 33, 50]:
        jac = np.zeros((n * d, (n + 1) * 6))
        for i in range(n):   # joint i acts on bodies i and i + 1
            jac[i * d:(i + 1) * d, i * 6:(i + 2) * 6] = rng.normal(size=(d, 12))
        k = jac @ jac.T + 1e-3 * np.eye(n * d)
        diag = np.stack([k[i * d:(i + 1) * d, i * d:(i + 1) * d] for i in range(n)])
        off = np.stack([k[i * d:(i + 1) * d, (i + 1) * d:(i + 2) * d] for i in range(n - 1)]
                       ) if n > 1 else np.zeros((0, d, d))
        b = rng.normal(size=(n, d))
        x = ChainSystem(diag, off).solve(b)
        want = np.linalg.solve(k, b.ravel()).reshape(n, d)
        assert np.abs(x - want).max() <= 1e-8 * np.abs(want).max(), n


def test_chain_order_walks_each_path_and_refuses_branches():
    awake = np.ones(8, dtype=bool)
    awake[7] = False                      # a sleeping/static body is ground
    # Path 3-1-0-2 (joints shuffled), a world joint on body 4 with 4-5, and 6-7 to ground.
    a = np.array([1, 0, 4, 0, 4, 6, 3])
    b = np.array([0, 2, 5, 2, 4, 7, 1])
    world = np.array([False, False, False, False, True, False, False])
    a, b = a[[0, 1, 2, 4, 5, 6]], b[[0, 1, 2, 4, 5, 6]]
    world = world[[0, 1, 2, 4, 5, 6]]
    order, sp, sn, link = chain_order(a, b, world, awake)
    assert sorted(order.tolist()) == list(range(6))
    for i in range(5):
        ja, jb = order[i], order[i + 1]
        if link[i]:
            shared_a = (a[ja], b[ja])[sp[i]]
            shared_b = (a[jb], b[jb])[sn[i]]
            assert shared_a == shared_b and awake[shared_a]
    assert int(link.sum()) == 3           # 1-0, 0-2 (path of three joints) and 4-5
    # A body with three joints (a branch) is not a chain.
    assert chain_order(np.array([0, 0, 0]), np.array([1, 2, 3]), np.zeros(3, dtype=bool),
                       awake) is None


def _rope():
    return capsule_rope(50)[0]


def test_rope_on_the_chain_path_moves_as_on_the_dense_path(monkeypatch):
    frames = 12
    w = _rope()
    for _ in range(frames):
        w.step(1 / 24)
    chain = w.positions.copy()
    w2 = _rope()
    for _ in range(frames):
        w2.step(1 / 24)
    assert np.array_equal(chain, w2.positions)            # deterministic, bit for bit
    monkeypatch.setattr(joint_solver, "chain_order", lambda *a: None)
    w3 = _rope()
    for _ in range(frames):
        w3.step(1 / 24)
    diff = np.abs(chain - w3.positions).max()
    print(f"\nrope chain vs dense path after {frames} frames: {diff:.3g} m")
    assert diff < 1e-9
    assert np.abs(chain[1:, 2] - 1.2).max() > 0.05       # it did swing down
