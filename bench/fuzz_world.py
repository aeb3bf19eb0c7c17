"""Long runs of the scene fuzzer (tests/fuzzworld.py; issue 11).

    python bench/fuzz_world.py --scenes 200 [--start 0] [--family crush|violent] [--shrink]
                                            [--joints]
    python bench/fuzz_world.py --seed 123 [--keep 0,3,5]      # replay one scene (a repro)

Prints one line per failing scene (seed, family, the failure, the step) with the command that
reproduces it (shrunk to the fewest bodies that still fail with --shrink), and the totals:
scenes, steps run clean, failures, guard firings, bodies the engine refused with an error.
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

import fuzzworld


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenes", type=int, default=100)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--family", choices=fuzzworld.FAMILIES, default=None)
    ap.add_argument("--seed", type=int, default=None, help="run this one seed")
    ap.add_argument("--keep", default=None, help="comma-separated body indices to keep")
    ap.add_argument("--shrink", action="store_true", help="shrink failures to a minimal repro")
    ap.add_argument("--extreme", action="store_true",
                    help="spins up to 1000 rad/s whatever the size (surface speeds to 1e5 m/s)")
    ap.add_argument("--joints", action="store_true",
                    help="the same scenes with random joints between their bodies")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args(argv)
    seeds = [args.seed] if args.seed is not None else range(args.start, args.start + args.scenes)
    totals = dict(scenes=0, steps=0, failures=0, guard=0, refused=0)
    t0 = time.perf_counter()
    for seed in seeds:
        scene = fuzzworld.random_scene(seed, args.family, args.extreme, joints=args.joints)
        if args.keep:
            scene = scene.subset([int(k) for k in args.keep.split(",")])
        ts = time.perf_counter()
        out = fuzzworld.run_scene(scene)
        totals["scenes"] += 1
        totals["steps"] += out.steps
        totals["guard"] += out.guard_events
        totals["refused"] += out.refused
        fam = (f" --family {args.family}" if args.family else "") + \
            (" --extreme" if args.extreme else "") + (" --joints" if args.joints else "")
        if args.verbose or not out.ok:
            print(f"{'ok  ' if out.ok else 'FAIL'} {scene.describe()} max |v| "
                  f"{out.max_speed:.4g} m/s ({time.perf_counter() - ts:.1f} s)", flush=True)
        if not out.ok:
            totals["failures"] += 1
            keep = ""
            if args.shrink:
                kept = fuzzworld.shrink(scene)
                keep = " --keep " + ",".join(map(str, kept))
            print(f"     step {out.failed_step}: {out.failure}\n     repro: python "
                  f"bench/fuzz_world.py --seed {seed}{fam}{keep}", flush=True)
    print(f"scenes {totals['scenes']}, steps run {totals['steps']}, failures "
          f"{totals['failures']}, guard firings {totals['guard']}, bodies refused with an "
          f"error {totals['refused']} ({time.perf_counter() - t0:.0f} s)")
    return 1 if totals["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
