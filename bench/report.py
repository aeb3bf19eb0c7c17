"""Benchmark and validation report: our engine (through the add-on's bake in real Blender),
Blender's built-in Rigid Body (Bullet: ptcache bake + Bake to Keyframes) and pybullet, on the
same scenes, in one run of this command. Writes docs/benchmarks/report.md, PNG plots,
profile.md and results.json. Not part of CI.

    .venv/bin/python bench/report.py [--quick] [--out docs/benchmarks]
                                     [--engines ours,blender,pybullet] [--scenes a,b]
                                     [--no-scaling] [--no-profile] [--worktree] [--keep]
    .venv/bin/python bench/report.py --render docs/benchmarks   # re-render the text only

Each engine x scene runs in its own subprocess (``--child``), which isolates the engines
and gives each run's peak memory (maxrss). The children save poses; every quality figure is
computed here by bench/metrics.py with the same code for all engines. --quick runs smaller
scenes (a couple of minutes) for developing the harness.
"""
import argparse
import json
import math
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time

import numpy as np

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
# The engine measured (and used for the measurements) is a clean export of the commit under
# test, not the working tree other people are editing: the parent exports it and passes its
# root to the children in HB_ENGINE_ROOT.
if BENCH not in sys.path:
    sys.path.insert(0, BENCH)


def _use_engine_root(root):
    os.environ["HB_ENGINE_ROOT"] = root
    if root not in sys.path:
        sys.path.insert(1, root)


_use_engine_root(os.environ.get("HB_ENGINE_ROOT", ROOT))

ENGINES = ("ours", "blender", "pybullet")
SHORT = {"ours": "Hullabaloo", "blender": "Blender RB", "pybullet": "pybullet"}
COLOR = {"ours": "#d95f02", "blender": "#1b9e77", "pybullet": "#7570b3"}


# -- child: one engine, one scene ----------------------------------------------------------------

def child(args):
    import scenes
    params = json.loads(args.params)
    s = scenes.build(args.scene, **params)
    versions = {"python": platform.python_version(), "numpy": np.__version__}
    if args.engine == "ours":
        import ours
        res, pos, q = ours.run(s, args.zip, profile=args.profile)
    elif args.engine == "blender":
        import peers_blender
        res, pos, q = peers_blender.run(s, keys=not args.no_keys)
    else:
        import peers_pybullet
        res, pos, q = peers_pybullet.run(s)
        import importlib.metadata
        versions["pybullet"] = importlib.metadata.version("pybullet")
    if args.engine in ("ours", "blender"):
        import bpy
        versions["blender"] = bpy.app.version_string
    res["versions"] = versions
    res["bodies"] = s.body_count
    res["dynamic"] = len(s.dynamic)
    np.savez(args.prefix + ".npz", pos=pos, quat=q)
    with open(args.prefix + ".json", "w") as f:
        json.dump(res, f)
    return 0


def run_child(engine, scene, params, tmp, zip_path, timeout, profile=None, keys=True):
    tag = "_".join([engine, scene] + [f"{k}{v}" for k, v in sorted(params.items())] +
                   (["profile"] if profile else []))
    prefix = os.path.join(tmp, tag)
    cmd = [sys.executable, os.path.abspath(__file__), "--child", engine, scene,
           json.dumps(params), prefix, "--zip", zip_path or ""]
    if profile:
        cmd += ["--profile", profile]
    if not keys:
        cmd += ["--no-keys"]
    t0 = time.perf_counter()
    with open(prefix + ".log", "w") as log:
        try:
            done = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, timeout=timeout,
                                  cwd=ROOT)
            rc = done.returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
    elapsed = time.perf_counter() - t0
    if rc != 0 or not os.path.exists(prefix + ".json"):
        with open(prefix + ".log") as log:
            tail = log.read()[-1500:]
        print(f"  {engine:8s} {scene}: FAILED ({rc}) after {elapsed:.0f} s\n{tail}",
              file=sys.stderr)
        return None, None, None
    with open(prefix + ".json") as f:
        res = json.load(f)
    data = np.load(prefix + ".npz")
    res["process_seconds"] = elapsed
    return res, data["pos"], data["quat"]


# -- environment ----------------------------------------------------------------------------------

def machine():
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            kb = int(f.readline().split()[1])
            mem = f"{kb / 2**20:.0f} GB RAM"
    except (OSError, ValueError, IndexError):
        pass
    return dict(nproc=os.cpu_count(), cpu=cpu, mem=mem, os=platform.platform())


def git(*a):
    return subprocess.run(["git", *a], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.rstrip()


def export_commit(tmp, rev="HEAD"):
    """Clean copy of the committed tree (git archive | tar), so uncommitted work in progress
    in the shared working tree is not what gets measured. Returns (root, short hash)."""
    commit = git("rev-parse", "--short=12", rev)
    dest = os.path.join(tmp, "src")
    os.makedirs(dest)
    archive = subprocess.run(["git", "archive", "--format=tar", rev], cwd=ROOT,
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", dest], input=archive, check=True)
    return dest, commit


def build_zip(src, tmp):
    """The extension zip of the tree at src, built and validated by that tree's own tool."""
    done = subprocess.run([sys.executable, os.path.join(src, "tools", "build_extension.py"),
                           "--output-dir", os.path.join(tmp, "dist")], capture_output=True,
                          text=True, check=True)
    return done.stdout.strip().splitlines()[-1]


# -- analysis -------------------------------------------------------------------------------------

def fit_exponent(n, t):
    """Least-squares slope of log t against log n (t ~ c n^k)."""
    n, t = np.asarray(n, float), np.asarray(t, float)
    ok = (t > 0) & np.isfinite(t)
    if ok.sum() < 2:
        return float("nan"), float("nan")
    k, c = np.polyfit(np.log(n[ok]), np.log(t[ok]), 1)
    return float(k), float(np.exp(c))


PHASES = [  # (phase, [(file suffix, function name)]) - cumulative times, see profile_table
    ("scene read + shapes (prepare)", [("addon/simulate.py", "prepare")]),
    ("bounds + broadphase + waking", [("engine/world/world.py", "_bounds"),
                                      ("engine/world/world.py", "_broadphase"),
                                      ("engine/world/world.py", "_wake_touched")]),
    ("narrowphase", [("engine/world/world.py", "_narrowphase")]),
    ("warm-start pair table", [("engine/collision/contacts.py", "match"), ("engine/collision/contacts.py", "store")]),
    ("graph colouring", [("engine/dynamics/graph.py", "colour_constraints")]),
    ("solver (set-up, warm start, solve, relax, restitution)",
     [("engine/dynamics/solver.py", "__init__"), ("engine/dynamics/solver.py", "warm_start"),
      ("engine/dynamics/solver.py", "solve"), ("engine/dynamics/solver.py", "restitution"),
      ("engine/dynamics/solver.py", "impulses")]),
    ("integration", [("engine/dynamics/integrate.py", "integrate_velocities"),
                     ("engine/dynamics/integrate.py", "integrate_positions")]),
    ("continuous collision", [("engine/world/world.py", "_ccd")]),
    ("sleep + islands", [("engine/world/world.py", "_update_sleep")]),
    ("per-frame state cache (get_state)", [("engine/world/world.py", "get_state")]),
    ("keyframes (bulk write)", [("addon/simulate.py", "finish")]),
]


def profile_table(path):
    """Phase -> cumulative seconds from a cProfile dump, grouped by the engine/add-on
    functions of each phase; plus the step total, the operator total and the top functions
    by own time."""
    import pstats
    st = pstats.Stats(path).stats

    def cum(suffix, name):
        tot, calls = 0.0, 0
        for (fn, _, fname), (_cc, nc, _tt, ct, _) in st.items():
            if fname == name and fn.replace(os.sep, "/").endswith(suffix):
                tot += ct
                calls += nc
        return tot, calls

    rows = []
    for phase, funcs in PHASES:
        t = sum(cum(*f)[0] for f in funcs)
        rows.append((phase, t))
    step, nstep = cum("engine/world/world.py", "step")
    total = cum("bpy/ops.py", "__call__")[0]  # the bake operator call, all of it
    own = sorted(((tt, fn, fname, nc) for (fn, _, fname), (cc, nc, tt, ct, _) in st.items()),
                 reverse=True)[:15]
    top = [(f"{os.path.basename(fn)}:{fname}" if fn != "~" else fname, tt, nc)
           for tt, fn, fname, nc in own]
    return dict(rows=rows, step=step, steps=nstep, total=total, top=top)


# -- plots ------------------------------------------------------------------------------------------

def plot_scaling(scaling, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.4, 4.4), dpi=100)
    for eng, pts in scaling.items():
        if not pts:
            continue
        n = [p[0] for p in pts]
        t = [1e3 * p[1] for p in pts]
        k, c = fit_exponent(n, t)
        ax.loglog(n, t, "o-", color=COLOR[eng], label=f"{SHORT[eng]}: t ~ n^{k:.2f}")
        nn = np.geomspace(min(n), max(n), 50)
        ax.loglog(nn, c * nn ** k, ":", color=COLOR[eng], lw=1)
    from matplotlib.ticker import ScalarFormatter
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_formatter(ScalarFormatter())
        axis.set_minor_formatter(plt.NullFormatter())
    ax.set_xlabel("cubes")
    ax.set_ylabel("simulation wall time per frame (ms)")
    ax.set_title("Scaling: falling cube piles, 1/24 s frames (10 substeps)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_times(results, order, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(9, 4.4), dpi=100)
    w = 0.27
    x = np.arange(len(order))
    for k, eng in enumerate(ENGINES):
        sim = [(results.get(sc, {}).get(eng) or {}).get("sim_seconds", np.nan) for sc in order]
        keys = [(results.get(sc, {}).get(eng) or {}).get("keys_seconds") or 0.0 for sc in order]
        ax.bar(x + (k - 1) * w, sim, w, color=COLOR[eng], label=f"{SHORT[eng]} simulation")
        if eng != "pybullet":
            ax.bar(x + (k - 1) * w, keys, w, bottom=sim, color=COLOR[eng], alpha=0.4,
                   hatch="//", label=f"{SHORT[eng]} keyframes")
    ax.set_yscale("log")
    ax.set_xticks(x)
    ax.set_xticklabels(order, rotation=25, ha="right")
    ax.set_ylabel("wall time (s), log scale")
    ax.set_title("Bake wall time per scene: simulation (solid) + keyframe writing (hatched)")
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_penetration(results, order, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    order = [sc for sc in order if any("max_penetration_mm" in (results[sc].get(e) or {})
                                       for e in ENGINES)]
    fig, ax = plt.subplots(figsize=(9, 4), dpi=100)
    w = 0.27
    x = np.arange(len(order))
    for k, eng in enumerate(ENGINES):
        v = [(results[sc].get(eng) or {}).get("max_penetration_mm", np.nan) for sc in order]
        ax.bar(x + (k - 1) * w, np.maximum(v, 1e-3), w, color=COLOR[eng], label=SHORT[eng])
    ax.set_yscale("log")
    ax.set_xticks(x)
    ax.set_xticklabels(order, rotation=25, ha="right")
    ax.set_ylabel("max penetration over the run (mm)")
    ax.set_title("Deepest penetration (true shapes, measured on every engine's poses)")
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_t_handle(th, engines, path):
    """Energy and angular momentum of the free tumbling body over time, per engine."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.4), dpi=100)
    for eng in engines:
        x = th.get(eng)
        if not x or "series_t" not in x:
            continue
        t = x["series_t"]
        # Dashed pybullet: it runs the same Bullet integrator as Blender and often overlays it.
        kw = dict(color=COLOR[eng], label=SHORT[eng], lw=1.5,
                  ls="--" if eng == "pybullet" else "-")
        axes[0].plot(t, 100 * (np.array(x["series_energy"]) - 1.0), **kw)
        axes[1].plot(t, 100 * np.array(x["series_momentum"]), **kw)
        axes[2].plot(t, x["series_orientation_deg"], **kw)
    axes[0].set_ylabel("kinetic energy change (%)")
    axes[1].set_ylabel("|L - L0| / |L0| (%)")
    axes[2].set_ylabel("orientation error vs exact (deg)")
    for ax in axes:
        ax.set_xlabel("time (s)")
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle("Tumbling T-handle stand-in, zero gravity, no damping (should conserve both)",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# -- markdown ---------------------------------------------------------------------------------------

def fmt(v, nd=2, unit=""):
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (int, np.integer)):
        return f"{v}{unit}"
    if not math.isfinite(v):
        return "—"
    if v != 0 and (abs(v) < 10 ** -nd or abs(v) >= 1e5):
        return f"{v:.2e}{unit}"
    return f"{v:.{nd}f}{unit}"


def ratio(a, b):
    if a is None or b is None or not b or not a:
        return None
    return a / b


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small scenes (harness development)")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "benchmarks"))
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--scenes", default="falling_cubes,cubes_long,hull_pile,pyramid,tower,"
                    "dominoes,fast_sphere,resting_box,heavy_on_light,t_handle")
    ap.add_argument("--no-scaling", action="store_true")
    ap.add_argument("--no-profile", action="store_true")
    ap.add_argument("--worktree", action="store_true", help="measure the working tree as it "
                    "is (default: a clean export of the HEAD commit)")
    ap.add_argument("--rev", default="HEAD", help="commit to measure (default HEAD)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder (poses, "
                    "logs)")
    ap.add_argument("--render", metavar="OUT", default=None, help="only re-render the "
                    "report from OUT/results.json")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per child run")
    ap.add_argument("--child", nargs=4, metavar=("ENGINE", "SCENE", "PARAMS", "PREFIX"),
                    help=argparse.SUPPRESS)
    ap.add_argument("--zip", default="", help=argparse.SUPPRESS)
    ap.add_argument("--profile", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--no-keys", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        args.engine, args.scene, args.params, args.prefix = args.child
        return child(args)
    if args.render:
        with open(os.path.join(args.render, "results.json")) as f:
            render(json.load(f), args.render)
        return 0
    return parent(args, argv)


def parent(args, argv):
    tmp = tempfile.mkdtemp(prefix="hb_report_")
    if args.worktree:
        src, commit = ROOT, git("rev-parse", "--short=12", "HEAD")
        dirty = [l[3:] for l in git("status", "--porcelain", "--", "engine", "addon").splitlines()]
    else:
        (src, commit), dirty = export_commit(tmp, args.rev), None
    if src != ROOT and ROOT in sys.path:
        sys.path.remove(ROOT)
    _use_engine_root(src)
    import metrics
    import scenes
    cmdline = " ".join(["bench/report.py"] + [shlex.quote(a) for a in
                                               (argv if argv is not None else sys.argv[1:])])
    engines = [e for e in args.engines.split(",") if e]
    order = [s for s in args.scenes.split(",") if s]
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    load0 = os.getloadavg()
    t_start = time.perf_counter()
    zip_path = build_zip(src, tmp) if "ours" in engines else ""
    results, versions = {}, {}

    for sc in order:
        params = scenes.QUICK[sc] if args.quick else {}
        sdef = scenes.build(sc, **params)
        results[sc] = {"title": sdef.title, "bodies": sdef.body_count, "frames": sdef.frames}
        for eng in engines:
            res, pos, q = run_child(eng, sc, params, tmp, zip_path, args.timeout)
            if res is None:
                results[sc][eng] = None
                continue
            versions.update(res.pop("versions"))
            t0 = time.perf_counter()
            res.update(metrics.scene_metrics(sdef, pos, q))
            res["metrics_seconds"] = time.perf_counter() - t0
            results[sc][eng] = res
            print(f"  {eng:8s} {sc:15s} sim {res['sim_seconds']:8.2f} s  keys "
                  f"{fmt(res.get('keys_seconds'))} s  rss {res['rss_peak_mb']:.0f} MB  "
                  f"(process {res['process_seconds']:.0f} s)", flush=True)

    scaling = {e: [] for e in engines}
    sizes = scenes.SCALING_QUICK if args.quick else scenes.SCALING_SIZES
    if not args.no_scaling:
        for n in sizes:
            params = {"n": n}
            for eng in engines:
                res, pos, _ = run_child(eng, "scaling", params, tmp, zip_path, args.timeout,
                                        keys=False)
                if res is None:
                    continue
                versions.update(res.pop("versions"))
                per = res["sim_seconds"] / max(1, res["frames"] - 1)
                scaling[eng].append((n, per, res))
                print(f"  {eng:8s} scaling n={n:5d}: {1e3 * per:8.2f} ms/frame", flush=True)

    prof = None
    if not args.no_profile and "ours" in engines:
        n = max(sizes)
        path = os.path.join(tmp, "ours_profile.pstats")
        res, _, _ = run_child("ours", "scaling", {"n": n}, tmp, zip_path, args.timeout,
                              profile=path)
        if res is not None:
            prof = profile_table(path)
            prof.update(n=n, frames=res["frames"], res=res)
            plain = [p for p in scaling.get("ours", []) if p[0] == n]
            prof["unprofiled_sim"] = plain[0][2]["sim_seconds"] if plain else None

    checks = metrics.self_checks()
    elapsed = time.perf_counter() - t_start
    load1 = os.getloadavg()
    env = dict(cmdline=cmdline, started=started, elapsed=elapsed, load=(load0, load1),
               machine=machine(), versions=versions, commit=commit, dirty=dirty,
               quick=args.quick, checks=checks)
    doc = dict(env=env, results=results, order=order, engines=engines, prof=prof,
               scaling={e: [(n, t) for n, t, _ in v] for e, v in scaling.items()})
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(doc, f, indent=1, default=_json_default)
    render(doc, out)
    if args.keep:
        print(f"poses and logs kept in {tmp}")
    else:
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"report written to {out} in {elapsed:.0f} s")
    return 0


def _json_default(v):
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    raise TypeError(f"not JSON serialisable: {type(v)}")


def render(doc, out):
    """Plots, report.md and profile.md from the results (also: --render OUT re-renders a
    saved results.json after editing the text, without re-running anything)."""
    env, results, order, engines = doc["env"], doc["results"], doc["order"], doc["engines"]
    scaling, prof = doc["scaling"], doc["prof"]
    try:
        import matplotlib  # noqa: F401  (not in the project's venvs: pip install matplotlib)
    except ImportError:
        print("report: matplotlib is not installed: no plots (the tables are written)")
    else:
        if any(scaling.values()):
            plot_scaling(scaling, os.path.join(out, "scaling.png"))
        plot_times(results, order, os.path.join(out, "times.png"))
        plot_penetration(results, order, os.path.join(out, "penetration.png"))
        if any((results.get("t_handle") or {}).get(e) for e in engines):
            plot_t_handle(results["t_handle"], engines, os.path.join(out, "t_handle.png"))
    if prof:
        write_profile(prof, os.path.join(out, "profile.md"), env)
    write_report(env, results, order, engines, scaling, prof, os.path.join(out, "report.md"))


def write_profile(prof, path, env):
    tot = prof["total"]
    lines = [f"# Profile of our bake: {prof['n']} falling cubes, {prof['frames']} frames", "",
             f"`{env['cmdline']}`, {env['started']}, commit {env['commit']}.", "",
             "cProfile of the add-on's bake operator (`bpy.ops.hullabaloo.bake`), cumulative "
             "time per phase, grouped by the engine / add-on functions that make up each "
             "phase. Profiling slows Python-heavy code more than numpy-heavy code, so the "
             f"shares are indicative; the same bake unprofiled simulated in "
             f"{fmt(prof.get('unprofiled_sim'))} s.", "",
             "| phase | seconds | share of the bake |", "|---|---:|---:|"]
    acc = 0.0
    for phase, t in prof["rows"]:
        lines.append(f"| {phase} | {t:.2f} | {100 * t / tot:.1f} % |")
        acc += t
    rest = tot - acc
    lines += [f"| other (step glue, operator, cache store) | {rest:.2f} | {100 * rest / tot:.1f} % |",
              f"| **whole bake operator** | **{tot:.2f}** | 100 % |", "",
              f"World.step: {prof['step']:.2f} s over {prof['steps']} steps "
              f"({1e3 * prof['step'] / max(1, prof['steps']):.1f} ms/step under the profiler).",
              "", "Top functions by own time:", "", "| function | own s | calls |",
              "|---|---:|---:|"]
    for name, tt, nc in prof["top"]:
        lines.append(f"| `{name}` | {tt:.2f} | {nc} |")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def write_report(env, results, order, engines, scaling, prof, path):
    import scenes
    m, v = env["machine"], env["versions"]
    L = []
    L.append("# Hullabaloo benchmark and validation report")
    L.append("")
    if env["quick"]:
        L.append("**Quick run (reduced scene sizes) — for harness development, not the "
                 "reference figures.**")
        L.append("")
    L.append(f"- Command: `{env['cmdline'].strip()}` (from the repository root, "
             f"{env['elapsed'] / 60:.1f} min)")
    L.append(f"- Date: {env['started']}")
    L.append(f"- Machine: {m['cpu']}, {m['nproc']} CPUs, {m['mem']}, {m['os']}; load "
             f"average {env['load'][0][0]:.2f} at the start, {env['load'][1][0]:.2f} at the "
             "end (other jobs share the cores)")
    if env["dirty"] is None:
        dirty = " (a clean export of that commit: `git archive`)"
    elif env["dirty"]:
        dirty = (" plus uncommitted changes in " + ", ".join(env["dirty"][:6]) +
                 (" ..." if len(env["dirty"]) > 6 else "") + " (--worktree)")
    else:
        dirty = " (working tree, clean)"
    L.append(f"- Versions: Python {v.get('python', '?')}, numpy {v.get('numpy', '?')}, "
             f"Blender (bpy) {v.get('blender', '?')}, pybullet {v.get('pybullet', '?')}, "
             f"Hullabaloo commit {env['commit']}{dirty}")
    L.append("")
    L.append("## Set-up")
    L.append("")
    L.append("""Every scene is defined once (`bench/scenes.py`) and built identically in each
engine: same shapes (boxes as boxes, hulls from the same vertices, spheres), masses, friction
0.5 (0.6 rocks), restitution 0, damping 0.04 / 0.1 (0 for the T-handle), SI units, 24 fps,
gravity -9.81. Each engine x scene runs in its own subprocess of this command.

| | Hullabaloo | Blender Rigid Body | pybullet |
|---|---|---|---|
| how it runs | add-on extension installed in real Blender (bpy module), `bpy.ops.hullabaloo.bake()` | `bpy.ops.ptcache.bake_all(bake=True)`, then `bpy.ops.rigidbody.bake_to_keyframes` (3D View context override) | `stepSimulation()` once per frame |
| time step | 1/24 s frames, automatic substeps (240 Hz = 10 per frame) | 10 substeps per frame (240 Hz) | 1/24 s, `numSubSteps=10` (240 Hz) |
| solver | soft step, 1 iteration + 1 relax per substep (add-on default) | 10 iterations (default) | 10 iterations |
| sleeping | on (default) | off (Blender's default, "Deactivation" unticked) | on (default) |
| continuous collision | on (default) | none (Blender has no CCD) | off (default) |
| margins | none (exact shapes, speculative contacts) | boxes: `collision_margin` 0.04 m (10 % of the smallest dimension below 0.4 m; Bullet keeps a box's outer size); hulls: 2 % of the smallest dimension (Blender adds it around the hull) | pybullet's defaults |
| initial velocity | the add-on's Initial Velocity / Spin | 2-frame Animated pre-roll along the path, then dynamic (Blender has no initial velocity) | `resetBaseVelocity` |
| keyframes | the add-on's bulk writer, every frame, location + rotation channels | Blender's operator (one `keyframe_insert` pass per frame, then it deletes redundant keys) | — (no animation output) |

Timings: **simulation** = stepping the frames (Hullabaloo: the add-on's own split of its
operator; Blender: the ptcache bake, including building the Bullet world; pybullet: the
`stepSimulation` calls only); **keys** = writing the keyframes (Hullabaloo: the add-on's bulk
write; Blender: the whole Bake to Keyframes operator, which also re-reads every cached
frame); **setup** = the rest of our operator (reading the scene, building hulls, storing
the re-bake cache). **Peak RSS** is the child process's maxrss after the bake; **+RSS** is
its growth over the run (maxrss after minus maxrss after the scene was built, before the
bake). Quality figures are measured afterwards by `bench/metrics.py` on each engine's
per-frame poses with the same code: depths and gaps on the true shapes by python-fcl (an
independent library; our own narrowphase re-measures every frame as a cross-check),
velocities by fourth-order central differences of the poses.""")
    L.append("")

    # -- performance table
    L.append("## Performance")
    L.append("")
    L.append("| scene | bodies | frames | engine | simulation s | ms / frame | keys s | "
             "setup s | keys | peak RSS MB | +RSS MB |")
    L.append("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for sc in order:
        r = results[sc]
        for eng in engines:
            x = r.get(eng)
            if x is None:
                L.append(f"| {sc} | {r['bodies']} | {r['frames']} | {SHORT[eng]} | failed "
                         "| | | | | | |")
                continue
            per = 1e3 * x["sim_seconds"] / max(1, x["frames"] - 1)
            L.append(f"| {sc} | {r['bodies']} | {r['frames']} | {SHORT[eng]} | "
                     f"{fmt(x['sim_seconds'])} | {fmt(per, 1)} | {fmt(x.get('keys_seconds'))} | "
                     f"{fmt(x.get('setup_seconds'))} | {fmt(x.get('keys'))} | "
                     f"{x['rss_peak_mb']:.0f} | {x['rss_peak_mb'] - x['rss_before_mb']:.0f} |")
    L.append("")
    L.append("![bake times](times.png)")
    L.append("")

    # -- quality table
    L.append("## Quality")
    L.append("")
    L.append(quality_table(results, order, engines))
    L.append("")
    L.append("![penetration](penetration.png)")
    L.append("")
    L.append(measurement_note(results, order, engines, env["checks"]))
    L.append("")
    th = results.get("t_handle", {})
    if any(th.get(e) for e in engines):
        L.append(t_handle_note(th, engines))
        L.append("")
        L.append("![T-handle](t_handle.png)")
        L.append("")

    # -- scaling
    if any(scaling.values()):
        L.append("## Scaling")
        L.append("")
        L.append(f"Cube piles of n unit cubes (random tilts, 1.5 m grid, 10 layers at most), "
                 f"{scenes.SCALING_FRAMES} frames (3 s: falling, landing, settling); "
                 "simulation wall time per frame (keys not written for Blender here). "
                 "Fitted exponent k of t ~ n^k (least squares in log-log):")
        L.append("")
        ns = sorted({n for pts in scaling.values() for n, _ in pts})
        L.append("| engine | " + " | ".join(f"n={n}" for n in ns) + " | exponent k |")
        L.append("|---|" + "---:|" * (len(ns) + 1))
        for eng in engines:
            pts = dict(scaling.get(eng, []))
            k, _ = fit_exponent(list(pts), list(pts.values()))
            L.append(f"| {SHORT[eng]} | " + " | ".join(
                fmt(1e3 * pts[n], 1) + " ms" if n in pts else "—" for n in ns) +
                f" | {fmt(k)} |")
        L.append("")
        L.append("![scaling](scaling.png)")
        L.append("")
    if prof:
        L.append("## Where our bake spends its time")
        L.append("")
        L.append(f"See [profile.md](profile.md): cProfile of the add-on bake of {prof['n']} "
                 f"cubes ({prof['frames']} frames), grouped by phase:")
        L.append("")
        L.append("| phase | share |")
        L.append("|---|---:|")
        for phase, t in prof["rows"]:
            L.append(f"| {phase} | {100 * t / prof['total']:.1f} % |")
        L.append("")
    L.append("## Headline ratios")
    L.append("")
    L.extend(headlines(results, order, engines, scaling))
    L.append("")
    L.append("## Notes and limitations")
    L.append("")
    L.append(NOTES)
    with open(path, "w") as f:
        f.write("\n".join(L) + "\n")


QUALITY_COLUMNS = [
    ("max_penetration_mm", "max pen. mm", 2),
    ("final_penetration_mm", "final pen. mm", 2),
    ("resting_gap_mm", "resting gap mm", 2),
    ("drift_mm", "drift mm", 2),
    ("drift_deg", "drift deg", 2),
    ("top_drop_mm", "top drop mm", 1),
    ("moving_at_end", "moving at end", 0),
    ("dominoes_fallen", "dominoes fallen", 0),
    ("tunneled", "tunneled", 0),
    ("energy_drift", "energy drift", 4),
    ("momentum_drift", "ang. mom. drift", 4),
]


def quality_table(results, order, engines):
    cols = [c for c in QUALITY_COLUMNS
            if any(c[0] in (results[sc].get(e) or {}) for sc in order for e in engines)]
    head = "| scene | engine | " + " | ".join(c[1] for c in cols) + " |"
    rows = [head, "|---|---|" + "---:|" * len(cols)]
    for sc in order:
        for eng in engines:
            x = results[sc].get(eng)
            if x is None:
                continue
            cells = []
            for key, _, nd in cols:
                val = x.get(key)
                if key == "dominoes_fallen" and val is not None:
                    cells.append(f"{val} / {x['dominoes_total']}")
                elif key in ("energy_drift", "momentum_drift") and val is not None:
                    cells.append(f"{100 * val:.2g} %")
                else:
                    cells.append(fmt(val, nd) if val is not None else "")
            rows.append(f"| {sc} | {SHORT[eng]} | " + " | ".join(cells) + " |")
    legend = ("\nmax pen.: deepest penetration over the run, measured by python-fcl on the "
              "true shapes (every frame, or every 2nd for the 1000-cube pile); final pen.: at "
              "the last frame; resting gap: mean "
              "signed distance (FCL) of the supporting pairs at the last frame (contact normal "
              "within 45 degrees of vertical; for the piles, bodies on the ground only; > 0 "
              "hovering, < 0 sinking); drift: largest displacement / rotation of any body from t = 0 to the "
              "last frame (10 s) for scenes that start at rest in contact; top drop: how far "
              "the top box came down; moving at end: bodies faster than 5 cm/s at the end; "
              "dominoes fallen: tilted more than 45 degrees; tunneled: the sphere's centre "
              "ended up behind the wall; energy / angular momentum drift: largest relative "
              "change over 10 s (T-handle, zero gravity, no damping).")
    return "\n".join(rows) + "\n" + legend


def measurement_note(results, order, engines, checks):
    """How far the measuring tools can be trusted: analytic self-checks of FCL and of our
    narrowphase, and where the two disagreed on the engines' poses."""
    lines = ["Measuring tools, checked by this command on configurations with known answers "
             "(depths in m):", "", "| configuration | expected | FCL | our narrowphase |",
             "|---|---:|---:|---:|"]
    for what, want, got_fcl, got_np in checks:
        lines.append(f"| {what} | {want:g} | {got_fcl:.3g} | {got_np:.3g} |")
    bad = [(sc, e, x) for sc in order for e in engines for x in [results[sc].get(e)]
           if x and x.get("np_disagree_frames")]
    lines.append("")
    if bad:
        lines.append("Cross-check on the engines' poses: our narrowphase disagreed with FCL "
                     "by more than 1 mm on " + "; ".join(
                         f"{sc} / {SHORT[e]}: {len(x['np_disagree_frames'])} of "
                         f"{x['penetration_frames']} frames (deepest {x['max_penetration_np_mm']:.1f}"
                         f" mm vs FCL {x['max_penetration_mm']:.1f} mm)" for sc, e, x in bad) +
                     ". The table uses FCL.")
    else:
        lines.append("Cross-check on the engines' poses: our narrowphase and FCL agree within "
                     "1 mm on every measured frame of every run.")
    return "\n".join(lines)


def t_handle_note(th, engines):
    x = next(th[e] for e in engines if th.get(e))
    parts = [f"T-handle: the floor of the velocity estimate (fourth-order central "
             f"differences of the 24 fps poses, run on the exact solution) is "
             f"{100 * x['energy_floor']:.2g} % for energy and "
             f"{100 * x['momentum_floor']:.2g} % for angular momentum; drifts above that are "
             "the engine's. Orientation error against the exact solution after 1 s / "
             f"{(th['frames'] - 1) / 24:.0f} s:"]
    for e in engines:
        y = th.get(e)
        if y:
            parts.append(f"{SHORT[e]} {y['orientation_error_deg_1s']:.1f} / "
                         f"{y['orientation_error_deg_end']:.1f} deg;")
    parts.append("(the intermediate-axis flip is unstable, so late orientation errors grow "
                 "from tiny differences; energy and momentum are the robust checks).")
    return " ".join(parts)


def headlines(results, order, engines, scaling):
    out = []
    for other in ("blender", "pybullet"):
        if other not in engines or "ours" not in engines:
            continue
        for label, big in (("scenes of 100+ bodies", True), ("scenes of 2-11 bodies", False)):
            rs = [ratio(results[sc]["ours"]["sim_seconds"], results[sc][other]["sim_seconds"])
                  for sc in order if results[sc].get("ours") and results[sc].get(other)
                  and (results[sc]["bodies"] > 100) == big]
            rs = [r for r in rs if r]
            if rs:
                gm = float(np.exp(np.mean(np.log(rs))))
                out.append(f"- Simulation time, Hullabaloo / {SHORT[other]}, {label}: "
                           f"geometric mean {gm:.2f}x over {len(rs)} (range {min(rs):.2f}x to "
                           f"{max(rs):.2f}x; > 1 means we are slower).")
    if "falling_cubes" in results and "ours" in engines:
        fc = results["falling_cubes"]
        o = fc.get("ours")
        for other in ("blender", "pybullet"):
            x = fc.get(other)
            if o and x:
                out.append(f"- {fc['title']}: simulation {o['sim_seconds']:.1f} s (ours) vs "
                           f"{x['sim_seconds']:.1f} s ({SHORT[other]}) = "
                           f"{o['sim_seconds'] / x['sim_seconds']:.2f}x.")
        b = fc.get("blender")
        if o and b and b.get("keys_seconds") and o.get("keys_seconds"):
            ob = o["sim_seconds"] + o["keys_seconds"]
            bb = b["sim_seconds"] + b["keys_seconds"]
            out.append(f"- Keyframe writing there: {o['keys_seconds']:.2f} s (ours, bulk) vs "
                       f"{b['keys_seconds']:.1f} s (Blender's Bake to Keyframes) = "
                       f"{b['keys_seconds'] / o['keys_seconds']:.0f}x faster; whole bake to "
                       f"keys {ob:.1f} s vs {bb:.1f} s = {bb / ob:.2f}x.")
    if "ours" in engines:
        kr = [ratio(results[sc]["blender"]["keys_seconds"], results[sc]["ours"]["keys_seconds"])
              for sc in order if results[sc].get("ours") and results[sc].get("blender")]
        kr = [r for r in kr if r]
        if kr:
            out.append(f"- Keyframe writing, Blender / Hullabaloo: geometric mean "
                       f"{float(np.exp(np.mean(np.log(kr)))):.0f}x over {len(kr)} scenes.")
    ks = {e: fit_exponent([p[0] for p in v], [p[1] for p in v])[0]
          for e, v in scaling.items() if v}
    if ks:
        out.append("- Scaling exponents (time per frame ~ n^k): " + ", ".join(
            f"{SHORT[e]} {k:.2f}" for e, k in ks.items()) + ".")
    pen = []
    for sc in order:
        vals = {e: (results[sc].get(e) or {}).get("max_penetration_mm") for e in engines}
        if all(v is not None for v in vals.values()):
            pen.append((sc, vals))
    if pen:
        out.append("- Max penetration (mm): " + "; ".join(
            f"{sc} " + " / ".join(f"{vals[e]:.1f}" for e in engines) for sc, vals in pen) +
            f" ({' / '.join(SHORT[e] for e in engines)}).")
    fs = results.get("fast_sphere", {})
    if fs:
        out.append("- 200 m/s sphere vs 5 cm wall, tunneled: " + ", ".join(
            f"{SHORT[e]} {fmt((fs.get(e) or {}).get('tunneled'))}" for e in engines) + ".")
    dm = results.get("dominoes", {})
    if dm:
        out.append("- Dominoes fallen: " + ", ".join(
            f"{SHORT[e]} {(dm.get(e) or {}).get('dominoes_fallen', '—')}" for e in engines) +
            f" of {next((dm[e] or {}).get('dominoes_total') for e in engines if dm.get(e))}.")
    return out


NOTES = """- The machine's 2 cores are shared with other jobs; wall times can be perturbed by a few
  tens of percent (the load averages above say how busy it was). Bullet (in Blender and in
  pybullet) steps on one thread; our engine is numpy, single threaded except for the few
  matrix products OpenBLAS may spread over the 2 cores.
- Each engine runs with its own defaults, which is what a user gets: Blender with
  deactivation off (resting bodies keep costing time) and 10 solver iterations; pybullet
  with sleeping and 10 iterations; ours with sleeping and 1 soft iteration + 1 relax per
  substep. Sleeping favours us and pybullet on piles that come to rest; small scenes show
  our fixed per-step numpy overhead (a few ms per frame whatever the body count).
- The T-handle is a box with three distinct principal moments (0.2 x 0.6 x 1.0 m), a
  stand-in with the same physics (the intermediate-axis flip): a true T is a compound or a
  non-convex hull, whose inertia Bullet approximates by its bounding box while ours is
  exact, so the engines would not be simulating the same body; a box is exact in all three.
- Bullet gives hulls the inertia of their bounding box and puts the centre of mass at the
  object origin; the rock pile's origins are on the hull centroids so only the inertia
  differs.
- Blender has no initial velocity: the sphere and the T-handle start after a 2-frame
  Animated pre-roll (the velocity Bullet gives a kinematic body, kept when it turns
  dynamic), which is as close as a Blender user can get.
- pybullet writes no keyframes, so its column shows the simulation alone.
- Depths are measured on the sharp shapes; Bullet's collision margins round box and hull
  edges, so a Bullet body resting on an edge may measure as slightly penetrating.
- The big piles are chaotic: a different engine (or a different commit) gives a different
  heap, so compare their figures as typical values, not to the millimetre.
"""


if __name__ == "__main__":
    sys.exit(main())
