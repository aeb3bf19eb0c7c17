"""``hullabaloo wedge``: bake every combination of some settings (times some seeds).

    hullabaloo wedge SCENE.blend --out DIR --vary PATH=V1,V2,... [--vary ...] [--seeds K]
                     [--workers N] [every bake option] [--collect] [--dry-run]

A simulation runs forward in time, so variations, not frames, are what spread over cores and
farm nodes. Each variant is a separate ``hullabaloo bake`` process (the Python with the bpy
wheel running hullabaloo_cli.py, or Blender's binary with ``-b --command hullabaloo``) in
``DIR/<variant>/``: exactly the command a user would type to bake it alone, which is what makes
a variant reproducible bit for bit outside the wedge. Up to N run at once; a failed or
crashed variant does not stop the others. Then ``DIR/wedge.json`` lists every variant (name,
dir, values, seed, status, error, summary) and ``DIR/contact_sheet.png`` tiles their labelled
last frames. ``--collect`` bakes nothing and only gathers what the variants left (the farm's
last task); ``--dry-run`` prints the plan with each variant's bake arguments as JSON.
"""
import concurrent.futures
import json
import os
import subprocess
import sys
import time

from . import wedge_plan
from .overrides import OverrideError


def add_parser(sub, add_bake_options):
    w = sub.add_parser("wedge", help="bake combinations of settings and seeds in parallel "
                       "processes, with a contact sheet")
    w.add_argument("scene", help=".blend file to vary")
    add_bake_options(w, wedge=True)
    w.add_argument("--vary", action="append", default=[], metavar="PATH=V1,V2,...",
                   help="a setting and its values (commas inside brackets belong to a "
                   "value); repeatable: the wedge bakes every combination")
    w.add_argument("--seeds", type=int, default=None, help="bake each combination with "
                   "--seed 0..K-1 (start-pose jitter, see --jitter)")
    w.add_argument("--workers", type=int, default=1, help="variants baked at once")
    w.add_argument("--timeout", type=float, default=None, help="seconds before a variant's "
                   "process is stopped and reported as failed")
    w.add_argument("--collect", action="store_true", help="bake nothing: write wedge.json and "
                   "the contact sheet from the variants' folders")
    w.add_argument("--dry-run", action="store_true", help="print the plan as JSON and exit")
    return w


def launcher():
    """argv prefix that runs the hullabaloo command in a new process like this one."""
    import bpy
    binary = bpy.app.binary_path
    if binary and os.path.isfile(binary):  # real Blender (the wheel has no binary path)
        return [binary, "-b", "--command", "hullabaloo"]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    script = os.path.join(root, "hullabaloo_cli.py")
    if not os.path.isfile(script):
        raise RuntimeError("cannot find hullabaloo_cli.py next to the add-on to start the "
                           "variants (run the wedge from Blender or from a checkout)")
    return [sys.executable, script]


def make_plan(args):
    from .cli import common_bake_args
    if args.seeds is not None and args.seed is not None:
        raise OverrideError("give --seeds K (a wedge over seeds) or --seed K (one seed for "
                            "every variant), not both")
    if not args.vary and args.seeds is None:
        raise OverrideError("nothing to vary: give --vary PATH=V1,V2,... and/or --seeds K")
    if args.workers < 1:
        raise OverrideError(f"--workers {args.workers}: give at least 1")
    varies = [wedge_plan.parse_vary(v) for v in args.vary]
    variants = wedge_plan.plan(varies, args.seeds)
    out = os.path.abspath(args.out)
    scene = os.path.abspath(args.scene)
    common = common_bake_args(args)
    for v in variants:
        v["dir"] = v["name"]  # relative to wedge.json
        v["args"] = wedge_plan.bake_args(scene, os.path.join(out, v["name"]), v, common)
    return variants


def check_plan(args, variants):
    """Open the scene once here and check every --set and --vary value against it, so an
    unknown object or property is one clear message before any process starts."""
    import bpy

    from . import blend_file, overrides
    try:
        blend_file.open_blend(os.path.abspath(args.scene))
    except blend_file.OpenError as exc:
        raise OverrideError(str(exc)) from None
    scene = bpy.context.scene
    seen = set()
    for text in list(args.set) + [s for v in variants for s in v["sets"]]:
        if text in seen:
            continue
        seen.add(text)
        p, value = overrides.split_assignment(text)
        _, rna, label = overrides.resolve(p, scene, bpy.data.objects)
        overrides.coerce(rna, overrides.parse_value(value), f"{p!r} ({label})")


def run_variant(cmd, vdir, timeout=None):
    """Run one variant's process; (ok, error or None, seconds). Its output goes to log.txt."""
    os.makedirs(vdir, exist_ok=True)
    for stale in ("summary.json", "thumbnail.png"):
        if os.path.exists(os.path.join(vdir, stale)):
            os.remove(os.path.join(vdir, stale))
    t0 = time.perf_counter()
    try:
        done = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
        code, out, err = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as exc:
        code, out, err = None, exc.stdout or "", exc.stderr or ""
        out, err = (s.decode(errors="replace") if isinstance(s, bytes) else s
                    for s in (out, err))
    except OSError as exc:
        return False, f"could not start the bake process: {exc}", 0.0
    seconds = time.perf_counter() - t0
    with open(os.path.join(vdir, "log.txt"), "w", encoding="utf-8") as f:
        f.write(f"$ {' '.join(cmd)}\n{out}\n--- stderr ---\n{err}")
    if code == 0:
        return True, None, seconds
    return False, _reason(code, err, vdir, timeout), seconds


def _reason(code, err, vdir, timeout):
    if code is None:
        return f"stopped after the --timeout of {timeout:g} s"
    try:
        with open(os.path.join(vdir, "summary.json"), encoding="utf-8") as f:
            s = json.load(f)
        if s.get("error"):
            return s["error"]
    except (OSError, ValueError):
        pass
    lines = [ln.strip() for ln in err.splitlines() if ln.strip()]
    last = lines[-1] if lines else "no message"
    if code < 0:
        return f"the bake process crashed (signal {-code}): {last}"
    return f"the bake process exited with code {code}: {last}"


def run_all(variants, out, workers, timeout=None, prefix=None):
    """Bake the variants, up to workers at once; fills status/error/seconds in place."""
    prefix = prefix or launcher()
    total = len(variants)

    def one(v):
        ok, error, seconds = run_variant(prefix + v["args"], os.path.join(out, v["dir"]),
                                         timeout)
        v.update(status="ok" if ok else "failed", error=error, seconds=seconds)
        print(f"  {v['name']}: " + (f"ok ({seconds:.1f} s)" if ok else f"FAILED: {error}"),
              flush=True)
        return v

    print(f"hullabaloo wedge: {total} variant(s), {workers} at a time", flush=True)
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(one, variants))


def collect(variants, out, render=True):
    """wedge.json and the contact sheet from the variants' folders."""
    from . import contact_sheet, summary
    entries, stills = [], []
    for v in variants:
        vdir = os.path.join(out, v["dir"])
        entry = {"name": v["name"], "dir": v["dir"], "values": v["values"], "seed": v["seed"],
                 "status": v.get("status"), "error": v.get("error"), "summary": None}
        try:
            s = summary.read(vdir)
        except (OSError, ValueError):
            s = None
        if s is not None and s.get("ok"):
            entry["summary"] = s
            entry["status"] = entry["status"] or "ok"
        else:
            entry["status"] = "failed"
            entry["error"] = entry["error"] or (s or {}).get("error") or \
                "no summary.json (the variant did not run or did not finish)"
        if "seconds" in v:
            entry["wall_seconds"] = v["seconds"]
        entries.append(entry)
        stills.append(os.path.join(vdir, contact_sheet.THUMBNAIL)
                      if entry["status"] == "ok" else None)
    path = os.path.join(out, "wedge.json")
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(entries, f, indent=1, allow_nan=False)
        f.write("\n")
    os.replace(path + ".tmp", path)
    sheet = None
    if render:
        sheet = os.path.join(out, "contact_sheet.png")
        if contact_sheet.compose(stills, sheet) is None:
            sheet = None
    return entries, path, sheet


def wedge_command(args):
    try:
        variants = make_plan(args)
        if args.dry_run:
            print(json.dumps(variants, indent=1))
            return 0
        if not args.collect:
            check_plan(args, variants)
    except (OverrideError, RuntimeError) as exc:
        print(f"hullabaloo wedge: {str(exc).strip()}", file=sys.stderr)
        return 2
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    t0 = time.perf_counter()
    if not args.collect:
        run_all(variants, out, args.workers, args.timeout)
    wall = time.perf_counter() - t0
    entries, path, sheet = collect(variants, out, render=not args.no_render)
    failed = [e for e in entries if e["status"] != "ok"]
    print(f"hullabaloo wedge: {len(entries) - len(failed)} of {len(entries)} variant(s) baked"
          + ("" if args.collect else f" in {wall:.1f} s with {args.workers} worker(s)"))
    for e in failed:
        print(f"  failed: {e['name']}: {e['error']}", file=sys.stderr)
    print(f"  wedge:            {path}")
    if sheet:
        print(f"  contact sheet:    {sheet}")
    return 1 if failed else 0
