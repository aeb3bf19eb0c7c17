"""The rock pile's deepest penetration over several seeds, ours and pybullet's.

    .venv/bin/python bench/rock_seeds.py [--seeds 3,4,5,6,7,8] [--frames 48] [--no-pybullet]

bench_speed.py's rocks125 is one seed (3) of scenes.hull_pile: 125 random 16-point hulls
dropped into a heap. Its deepest penetration over a run (fcl on the true shapes,
bench_speed.deepest_penetration) is set by one event, a rock struck mid-frame into a spin
or pressed into the ground by a falling one, so it moves by several millimetres with any
change that touches the trajectories. This prints it per seed, with the mean and the worst,
for ours (at its defaults, sleeping off) and for pybullet at Blender's settings, so a
change is judged on the spread and not on one draw.
"""
import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), HERE]

import bench_speed
import scenes


def depths(run, seeds, frames):
    out, cpu = [], 0.0
    for seed in seeds:
        s = scenes.hull_pile(n=125, frames=frames, seed=seed)
        poses = []
        got = run(s, frames, poses)      # run_ours: (cpu, world, passes); run_pybullet: cpu
        cpu += got[0] if isinstance(got, tuple) else got
        out.append(1e3 * bench_speed.deepest_penetration(s, poses))
    return out, cpu / len(seeds)


def report(name, pen, cpu):
    print(f"{name:9s} " + " ".join(f"{p:5.1f}" for p in pen)
          + f" | mean {np.mean(pen):5.1f}  worst {max(pen):5.1f} mm | {1e3 * cpu:.1f} CPU ms/frame")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="3,4,5,6,7,8")
    ap.add_argument("--frames", type=int, default=48)
    ap.add_argument("--no-pybullet", action="store_true")
    args = ap.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    print(f"deepest penetration (mm) per seed {seeds}, {args.frames} frames at 24 fps")
    t0 = time.time()
    report("ours", *depths(bench_speed.run_ours, seeds, args.frames))
    if not args.no_pybullet:
        report("pybullet", *depths(bench_speed.run_pybullet, seeds, args.frames))
    print(f"({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
