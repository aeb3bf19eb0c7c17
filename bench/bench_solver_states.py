"""The contact solver alone, on solver states captured from bench_speed's scenes: what one
collision pass's preparation and one substep's sweeps cost, free of the chaos that makes whole
runs of two engine versions diverge.

    .venv/bin/python bench/bench_solver_states.py [--scenes cubes27,cubes216,cubes1000,rocks125]
                                                  [--repeat 9] [--capture DIR]
    HB_ENGINE_ROOT=/path/to/an/exported/commit .venv/bin/python bench/bench_solver_states.py

The first run captures, for each scene, the arguments the world gave ContactSolver in the
collision pass after frame 14 (pickled under --capture), and later runs (of any engine version)
reuse them, so every version solves the same manifolds (versions whose ContactSolver takes
the same arguments: before engine/dynamics/contact_kernels.py it took the colour offsets, so give the two
sides different --capture folders). Printed per scene: manifolds,
C-level calls and CPU ms of ContactSolver(...) (prepare) and of one substep (warm start, one
biased sweep, two relax sweeps: the defaults), the fastest of --repeat runs.
"""
import argparse
import os
import pickle
import sys
import time

import numpy as np

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH)
import bench_speed  # puts the engine measured first on sys.path

from engine.dynamics import solver


def capture(name, folder, frame=14):
    path = os.path.join(folder, f"solver_state_{name}.pkl")
    if os.path.exists(path):
        with open(path, "rb") as f:
            return pickle.load(f)
    s = bench_speed.SCENES[name](48)
    w = bench_speed.build_ours(s)
    for _ in range(frame):
        w.step(1.0 / s.fps)
    cap = {}
    orig = solver.ContactSolver.__init__

    def grab(self, *a, **k):
        cap["args"], cap["kwargs"] = a, k
        orig(self, *a, **k)
    solver.ContactSolver.__init__ = grab
    try:
        w.step(1.0 / s.fps)
    finally:
        solver.ContactSolver.__init__ = orig
    os.makedirs(folder, exist_ok=True)
    with open(path, "wb") as f:
        pickle.dump(cap, f)
    return cap


def substep(s, vel, dpose, h):
    s.warm_start(vel)
    s.solve(vel, dpose, True)
    dpose += h * vel
    s.solve(vel, dpose, False)
    s.solve(vel, dpose, False)


def c_calls(fn):
    n = [0]

    def tracer(frame, event, arg):
        if event == "c_call":
            n[0] += 1
    sys.setprofile(tracer)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return n[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenes", default="cubes27,cubes216,cubes1000,rocks125")
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--capture", default="/tmp/hullabaloo_solver_states")
    a = ap.parse_args()
    print(f"engine: {bench_speed.ENGINE_ROOT}")
    print(f"{'scene':>10} {'manifolds':>9} {'prepare ms':>10} {'calls':>6} "
          f"{'substep ms':>10} {'calls':>6}")
    for name in a.scenes.split(","):
        cap = capture(name, a.capture)
        args, kw = cap["args"], cap["kwargs"]
        h = kw.get("h", args[15] if len(args) > 15 else 1.0 / 360.0)
        t_prep = t_sub = np.inf
        for _ in range(a.repeat):
            t0 = time.process_time()
            s = solver.ContactSolver(*args, **kw)
            t_prep = min(t_prep, time.process_time() - t0)
            vel, dpose = args[11].copy(), np.zeros_like(args[11])
            t0 = time.process_time()
            substep(s, vel, dpose, h)
            t_sub = min(t_sub, time.process_time() - t0)
        n_prep = c_calls(lambda: solver.ContactSolver(*args, **kw))
        s = solver.ContactSolver(*args, **kw)
        vel, dpose = args[11].copy(), np.zeros_like(args[11])
        n_sub = c_calls(lambda: substep(s, vel, dpose, h))
        print(f"{name:>10} {s.m:>9} {1000 * t_prep:>10.2f} {n_prep:>6} "
              f"{1000 * t_sub:>10.2f} {n_sub:>6}", flush=True)


if __name__ == "__main__":
    main()
