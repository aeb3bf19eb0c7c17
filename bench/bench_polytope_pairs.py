"""The polytope narrowphase kernel alone (engine.collision.polytope_pairs._collide), on the calls
one frame of a bench_speed scene makes.

    .venv/bin/python bench/bench_polytope_pairs.py [--scenes cubes1000,rocks125] [--frames 24]
                                                   [--repeat 15]
    HB_ENGINE_ROOT=/path/to/an/exported/commit .venv/bin/python bench/bench_polytope_pairs.py
                                                   # another commit's engine (before/after)

Steps the scene --frames frames, then records the arguments of every _collide call of the next
frame (the pass's call, which reuses what the pair table can give again, and
engine.world.recollide's calls between substeps, which take every pair afresh) and times each
call on its recorded inputs: best CPU time (process_time) of --repeat runs. Prints the time per
call with its pairs (m), reuse mode and manifolds out, their sum (the frame's narrowphase), and
a digest of all outputs: a change that only moves work around leaves it unchanged.
"""
import argparse
import copy
import hashlib
import os
import sys
import time

import numpy as np

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.environ.get("HB_ENGINE_ROOT", os.path.dirname(BENCH)))
sys.path.insert(0, BENCH)

import bench_speed

from engine.collision import polytope_pairs


def record(scene, frames):
    """The _collide arguments of frame frames + 1 of the scene (inputs as the calls got them)."""
    s = bench_speed.SCENES[scene](frames + 1)
    w = bench_speed.build_ours(s)
    for _ in range(frames):
        w.step(1.0 / s.fps)
    calls = []
    inner = polytope_pairs._collide

    def recorded(*args):
        calls.append(copy.deepcopy(args))
        return inner(*args)
    polytope_pairs._collide = recorded
    try:
        w.step(1.0 / s.fps)
    finally:
        polytope_pairs._collide = inner
    return calls


def time_calls(calls, repeat):
    """(rows of (m, mode, out, best s), digest of the outputs)."""
    digest = hashlib.sha256()
    rows = []
    for args in calls:
        best = np.inf
        for _ in range(repeat):
            a = copy.deepcopy(args)
            t0 = time.process_time()
            k = polytope_pairs._collide(*a)
            best = min(best, time.process_time() - t0)
        man, geo, pair = a[-3], a[-2], a[-1]
        for x in (*man, *geo, pair):
            digest.update(np.ascontiguousarray(x[:k]).tobytes())
        rows.append((len(args[0]), args[7], k, best))
    return rows, digest.hexdigest()[:16]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenes", default="cubes1000,rocks125")
    ap.add_argument("--frames", type=int, default=24)
    ap.add_argument("--repeat", type=int, default=15)
    a = ap.parse_args()
    modes = {polytope_pairs.NO_REUSE: "fresh", polytope_pairs.REUSE_EACH: "reuse each",
             polytope_pairs.REUSE_ALL: "reuse all"}
    for scene in a.scenes.split(","):
        calls = record(scene, a.frames)
        polytope_pairs._collide(*copy.deepcopy(calls[0]))      # compiled or loaded: untimed
        rows, digest = time_calls(calls, a.repeat)
        for m, mode, k, t in rows:
            print(f"{scene:>10} pairs {m:5d} {modes[mode]:>10} -> {k:5d} manifolds "
                  f"{1e3 * t:7.3f} ms")
        print(f"{scene:>10} frame {a.frames + 1}: {len(rows)} calls "
              f"{1e3 * sum(r[3] for r in rows):.2f} ms  digest {digest}", flush=True)


if __name__ == "__main__":
    main()
