"""The contact solver's per-substep kernels alone, on a real pass of a bench_speed scene.

    .venv/bin/python bench/bench_solver.py [--scenes cubes27,cubes1000] [--frames 36]
                                           [--repeat 5] [--digest]

Steps the scene (bench/bench_speed.py's scenes) --frames frames, keeps the ContactSolver and
the velocities of the last collision pass as the pass began, then times, on that state
restored each time, the kernels a substep runs: warm_start, the biased sweep and the relax
sweep (ContactSolver.warm_start / solve), best CPU time (process_time) of --repeat runs of 50
calls each. Also prints each run_pass's CPU share of the frames (the whole substep loop).

--digest prints a hash of the velocities and impulses after a fixed sequence of sweeps (warm
start, biased, relax, relax, eight times over): a change to the solver that only moves work
around leaves it unchanged (the same arithmetic in the same order), one that rounds
differently changes it.
"""
import argparse
import hashlib
import os
import sys
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(BENCH))
sys.path.insert(0, BENCH)

import bench_speed

from engine.world import world as world_mod

CALLS = 50


def capture(scene, frames):
    """(solver, vel, dpose, CPU s per frame in run_pass, CPU s per frame) of the scene's
    last pass after frames frames."""
    s = bench_speed.SCENES[scene](frames)
    w = bench_speed.build_ours(s)
    inner = world_mod.run_pass
    kept = {}
    spent = [0.0]

    def wrapped(solver, joints, refresh, struck, nsub, h, iterations, relax, vel, x, q, dpose,
                *a, **k):
        if solver is not None:   # (a pass in free flight runs without contacts)
            kept.update(solver=solver, vel=vel.copy(), dpose=dpose.copy(),
                        imp=solver.imp.copy(), max_normal=solver.max_normal.copy())
        t0 = time.process_time()
        out = inner(solver, joints, refresh, struck, nsub, h, iterations, relax, vel, x, q,
                    dpose, *a, **k)
        spent[0] += time.process_time() - t0
        return out
    world_mod.run_pass = wrapped
    try:
        t0 = time.process_time()
        for _ in range(frames):
            w.step(1.0 / s.fps)
        total = time.process_time() - t0
    finally:
        world_mod.run_pass = inner
    return kept, spent[0] / frames, total / frames


def restore(kept):
    solver = kept["solver"]
    solver.imp[...] = kept["imp"]
    solver.max_normal[...] = kept["max_normal"]
    return solver, kept["vel"].copy(), kept["dpose"]


def best(fn, repeat):
    out = []
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        out.append(time.process_time() - t0)
    return min(out) / CALLS


def digest(kept):
    solver, vel, dpose = restore(kept)
    for _ in range(8):
        solver.warm_start(vel)
        solver.solve(vel, dpose, True)
        solver.solve(vel, dpose, False)
        solver.solve(vel, dpose, False)
    h = hashlib.sha256(vel.tobytes())
    h.update(solver.imp.tobytes())
    h.update(solver.max_normal.tobytes())
    return h.hexdigest()[:16]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenes", default="cubes27,cubes216,cubes1000,rocks125")
    ap.add_argument("--frames", type=int, default=36)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--digest", action="store_true")
    args = ap.parse_args()
    bench_speed.warm_up()
    for scene in args.scenes.split(","):
        kept, in_pass, frame = capture(scene, args.frames)
        solver = kept["solver"]
        m = solver.m
        pts = int(solver.count.sum())

        def warm():
            s, vel, _ = restore(kept)
            for _ in range(CALLS):
                s.warm_start(vel)

        def sweep(bias):
            def run():
                s, vel, dpose = restore(kept)
                for _ in range(CALLS):
                    s.solve(vel, dpose, bias)
            return run
        tw, tb, tr = best(warm, args.repeat), best(sweep(True), args.repeat), \
            best(sweep(False), args.repeat)
        line = (f"{scene:10s} {m:5d} manifolds {pts:5d} points | frame {1e3 * frame:7.2f} ms, "
                f"run_pass {1e3 * in_pass:7.2f} ms | warm_start {1e6 * tw:7.1f} us, "
                f"biased {1e6 * tb:7.1f} us ({1e9 * tb / m:5.0f} ns/manifold), "
                f"relax {1e6 * tr:7.1f} us ({1e9 * tr / m:5.0f} ns/manifold)")
        if args.digest:
            line += f" | digest {digest(kept)}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
