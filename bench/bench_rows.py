"""The contact solver's row preparation alone, on a real pass of a bench_speed scene.

    .venv/bin/python bench/bench_rows.py [--scenes cubes1000] [--frames 36] [--repeat 5]
                                         [--digest]

Steps the scene (bench/bench_speed.py's scenes) --frames frames and keeps the inputs of the
last ContactSolver made (its preparation: contact_kernels.prepare) and of the last
ContactSolver.replace (the recollide's: contact_kernels.replace_rows), then times, best CPU
time (process_time) of --repeat runs of CALLS calls each, per manifold prepared:

- prepare: a ContactSolver made again from those inputs (the kernel and its allocations);
- build_rows: the rows of all its manifolds built again (ContactSolver._build);
- replace: the last replace again, on the solver as it was before it, per manifold replaced.

--digest prints a hash of every array the three leave (the same arithmetic in the same order
leaves it unchanged).
"""
import argparse
import copy
import hashlib
import os
import sys
import time

import numpy as np

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(BENCH))
sys.path.insert(0, BENCH)

import bench_speed

from engine.dynamics import solver as solver_mod
from engine.world import world as world_mod

CALLS = 20
ARRAYS = ("idx", "count", "dirs", "ra", "rb", "axa", "axb", "jang", "mang", "kmat", "eff",
          "k_pinv", "imp", "sep0", "v_impact", "max_normal", "accel_n")


def capture(scene, frames):
    """(ContactSolver args, kwargs, (solver, its arrays before, replace args) or None)."""
    s = bench_speed.SCENES[scene](frames)
    w = bench_speed.build_ours(s)
    kept = {}
    base = solver_mod.ContactSolver
    replace = base.replace

    class Capturing(base):
        def __init__(self, *a, **k):
            kept["init"] = (copy.deepcopy(a), copy.deepcopy(k))
            super().__init__(*a, **k)

    def capturing_replace(self, *a):
        kept["replace"] = (self, snapshot(self), copy.deepcopy(a))
        return replace(self, *a)
    world_mod.ContactSolver = Capturing
    base.replace = capturing_replace
    try:
        for _ in range(frames):
            w.step(1.0 / s.fps)
    finally:
        world_mod.ContactSolver = base
        base.replace = replace
    return kept["init"], kept.get("replace")


def snapshot(solver):
    return {name: getattr(solver, name).copy() for name in ARRAYS}


def restore(solver, arrays):
    for name, value in arrays.items():
        getattr(solver, name)[...] = value


def best(fn, repeat):
    out = []
    for _ in range(repeat):
        t0 = time.process_time()
        for _ in range(CALLS):
            fn()
        out.append(time.process_time() - t0)
    return min(out) / CALLS


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenes", default="cubes1000")
    ap.add_argument("--frames", type=int, default=36)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--digest", action="store_true")
    args = ap.parse_args()
    bench_speed.warm_up()
    for scene in args.scenes.split(","):
        (a, k), rep = capture(scene, args.frames)
        inv_inertia = a[10]
        made = solver_mod.ContactSolver(*a, **k)
        m = made.m
        every = np.arange(m)
        t_prep = best(lambda: solver_mod.ContactSolver(*a, **k), args.repeat)
        t_build = best(lambda: made._build(every, inv_inertia), args.repeat)
        line = (f"{scene:10s} {m:5d} manifolds | prepare {1e9 * t_prep / m:6.0f} ns/manifold, "
                f"build_rows {1e9 * t_build / m:6.0f} ns/manifold")
        h = hashlib.sha256()
        for name, value in snapshot(made).items():
            h.update(name.encode() + value.tobytes())
        if rep is not None:
            solver, before, rargs = rep
            kr = len(rargs[0])

            def again():
                restore(solver, before)
                solver.replace(*rargs)
            t_rest = best(lambda: restore(solver, before), args.repeat)
            t_rep = best(again, args.repeat) - t_rest
            line += f", replace {1e9 * t_rep / kr:6.0f} ns/manifold ({kr} replaced)"
            restore(solver, before)
            solver.replace(*rargs)
            for name, value in snapshot(solver).items():
                h.update(name.encode() + value.tobytes())
        if args.digest:
            line += f" | digest {h.hexdigest()[:16]}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
