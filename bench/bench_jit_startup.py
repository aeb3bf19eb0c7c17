"""What the engine's compiler costs at start-up (issue 27): run it with each Blender wheel.

    .venv/bin/python bench/bench_jit_startup.py [--wheels] [--zips] [--repeat N]     # 4.2
    .venv313/bin/python bench/bench_jit_startup.py [--wheels] [--zips] [--repeat N]  # 5.2

Every figure comes from a fresh process (the compiler is set up once per process):

- ``import numba`` in plain Python and inside Blender (after ``import bpy``: Blender runs
  with ``sys.dont_write_bytecode``, so numba's modules are compiled from source every time);
- the warm-up (engine/world/warmup.py: loading numba, then every kernel on the step's path) on a
  cold cache (a new NUMBA_CACHE_DIR: everything compiled) and on a warm one (loaded);
- the first bake of a fresh Blender session with the extension installed (tests/addon/
  fresh_blender.py, a 24-frame scene of 5 bodies) against the second bake of the same
  session, on a cold cache (just installed) and a warm one (Blender restarted, twice: the
  first restart byte-compiles the extension's numba, addon/compiler.py);
- with --wheels, the same with the linux-x64 release zip after a restart of Blender, where
  numba is imported from the extension's own site-packages, as in a user's Blender (never
  byte-compiled there: Blender writes no .pyc);
- with --zips, the four release zips (tools/build_extension.py --all-platforms; downloads
  about 330 MB of wheels once into build/wheels) and their sizes.

Prints the best of --repeat runs (default 3: the machine is shared, the best is the cost
itself, the others add waiting for a core). Figures, not assertions.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FRESH = os.path.join(ROOT, "tests", "addon", "fresh_blender.py")

IMPORT = r'''
import json, sys, time
if {bpy}:
    import bpy
t = time.perf_counter()
import numba
print(json.dumps({{"seconds": time.perf_counter() - t, "nobytecode": sys.dont_write_bytecode}}))
'''

WARM = r'''
import json, sys, time
sys.path.insert(0, {root!r})
from engine.core import jit
from engine.world import warmup
times = {{}}
t = time.perf_counter()
for label, run in warmup.stages():
    s = time.perf_counter()
    run()
    times[label] = time.perf_counter() - s
print(json.dumps({{"total": time.perf_counter() - t, "stages": times,
                  "kernels": len(jit.kernel_names()), "uncompiled": jit.uncompiled()}}))
'''


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("HB_NO_JIT", "NUMBA_CACHE_DIR")}
    env.update(extra)
    return env


def _json(code, env=None):
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env or _env(), check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def best(xs):
    return min(xs)


def import_times(repeat):
    plain = [_json(IMPORT.format(bpy=False))["seconds"] for _ in range(repeat)]
    inside = [_json(IMPORT.format(bpy=True)) for _ in range(repeat)]
    print(f"import numba, plain Python:        {best(plain):.3f} s")
    print(f"import numba, inside Blender:      {best([r['seconds'] for r in inside]):.3f} s "
          f"(dont_write_bytecode={inside[0]['nobytecode']}; "
          f"x{best([r['seconds'] for r in inside]) / best(plain):.1f} plain)")


def warm_up_times(repeat):
    cold, warm = [], []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as cache:
            cold.append(_json(WARM.format(root=ROOT), _env(NUMBA_CACHE_DIR=cache)))
            warm.append(_json(WARM.format(root=ROOT), _env(NUMBA_CACHE_DIR=cache)))
    print(f"engine kernels registered:         {cold[0]['kernels']} "
          f"(left uncompiled by the warm-up: {len(cold[0]['uncompiled'])})")
    for name, runs in (("cold cache (compile)", cold), ("warm cache (load)", warm)):
        stages = {k: best([r["stages"][k] for r in runs]) for k in runs[0]["stages"]}
        detail = ", ".join(f"{k} {v:.2f}" for k, v in stages.items())
        print(f"warm-up, {name + ':':<22}    {best([r['total'] for r in runs]):.2f} s "
              f"({detail})")


def _dev_zip(out):
    done = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "build_extension.py"),
                           "--output-dir", out], capture_output=True, text=True, check=True)
    return done.stdout.strip().splitlines()[-1]


def _fresh(zip_path, user, *extra):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    subprocess.run([sys.executable, FRESH, zip_path, out, "--user", user, "--bakes", "2",
                    *extra], capture_output=True, text=True, env=_env(), check=True)
    with open(out) as f:
        data = json.load(f)
    os.remove(out)
    return data


def _linux_zip(out):
    done = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "build_extension.py"),
                           "--platform", "linux-x64", "--output-dir", out],
                          capture_output=True, text=True, check=True)
    return done.stdout.strip().splitlines()[-1]


def first_bake(repeat, wheels=False):
    installed, restarted, again = [], [], []
    rows = {"installed, cold cache:": installed, "restarted, warm cache:": restarted,
            "restarted again:": again}
    with tempfile.TemporaryDirectory() as tmp:
        zip_path = (_linux_zip if wheels else _dev_zip)(os.path.join(tmp, "dist"))
        for k in range(repeat):
            user = os.path.join(tmp, f"user{k}")
            installed.append(_fresh(zip_path, user))
            restarted.append(_fresh(zip_path, user, "--installed"))
            again.append(_fresh(zip_path, user, "--installed"))
    print(f"fresh Blender {installed[0]['blender']}, {os.path.basename(zip_path)}: "
          f"import bpy {best([r['seconds']['import_bpy'] for r in installed]):.2f} s; "
          f"numba from {os.path.dirname(os.path.dirname(restarted[0]['numba_file']))} "
          "after the restart")
    for name, runs in rows.items():
        first = best([r["bakes"][0]["seconds"] for r in runs])
        second = best([r["bakes"][1]["seconds"] for r in runs])
        prep = best([r["bakes"][0]["engine"]["prepare_seconds"] for r in runs])
        print(f"first bake, {name:<24} {first:.2f} s, second bake {second:.2f} s "
              f"(first / second {first / second:.2f}; added {first - second:+.2f} s, of which "
              f"preparing the engine {prep:.2f} s)")


def zips():
    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "build_extension.py"),
                               "--all-platforms", "--output-dir", tmp], capture_output=True,
                              text=True, check=True)
        for path in done.stdout.split():
            print(f"zip {os.path.basename(path):<40} {os.path.getsize(path) / 2**20:6.1f} MiB")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--wheels", action="store_true",
                    help="also the first bake with the linux-x64 zip's own numba")
    ap.add_argument("--zips", action="store_true", help="also build and size the four zips")
    args = ap.parse_args()
    print(f"Python {sys.version.split()[0]}")
    import_times(args.repeat)
    warm_up_times(args.repeat)
    first_bake(args.repeat)
    if args.wheels:
        first_bake(args.repeat, wheels=True)
    if args.zips:
        zips()


if __name__ == "__main__":
    main()
