"""``hullabaloo settle``: Settle Selected from the command line (addon/settle.py).

    hullabaloo settle SCENE.blend --objects NAME [NAME ...] [--onto NAME] [--time-limit S]
                      [--seed K --jitter M] [--apply-scale] [--keep-physics] [--out FILE]

Opens the file, settles the named objects (shell-style patterns such as ``Rock.*`` match
several) with ``bpy.ops.hullabaloo.settle`` and saves the file with their new transforms (in
place, or to --out). The selection and active object are put back before saving, so the
file differs only by what the settle did. Exit code 0 on success, 1 when the settle fails,
2 for bad options.
"""
import fnmatch
import os
import sys

import bpy


def add_parser(sub):
    s = sub.add_parser("settle", help="drop objects until they rest and save their "
                       "resting transforms (Settle Selected)")
    s.add_argument("blend", help=".blend file to settle objects in")
    s.add_argument("--objects", nargs="+", required=True, metavar="NAME",
                   help="objects to settle (names or shell patterns such as 'Rock.*')")
    s.add_argument("--onto", default=None, metavar="NAME",
                   help="settle onto this object alone (default: onto every other "
                   "Hullabaloo object of the scene)")
    s.add_argument("--time-limit", type=float, default=20.0,
                   help="simulated seconds before stopping (default 20)")
    s.add_argument("--seed", type=int, default=0, help="random seed of the start jitter")
    s.add_argument("--jitter", type=float, default=0.0,
                   help="move each start pose randomly by at most this many metres")
    s.add_argument("--apply-scale", action="store_true",
                   help="apply the settled objects' scale to their meshes")
    s.add_argument("--keep-physics", action="store_true",
                   help="leave Hullabaloo on for settled objects that did not have it")
    s.add_argument("--out", default=None, help="save to this file instead of in place")
    return s


class UsageError(Exception):
    """Bad command-line input (exit code 2)."""


def _match(patterns):
    """The objects the patterns name, in name order; every pattern must match one."""
    names = sorted(o.name for o in bpy.data.objects)
    found = []
    for pat in patterns:
        hit = fnmatch.filter(names, pat)
        if not hit:
            raise UsageError(f"--objects {pat!r}: no object of that name in the file")
        found += [n for n in hit if n not in found]
    return [bpy.data.objects[n] for n in found]


def _select(objs, active):
    """Select exactly objs (plus active, made active); returns how to put the old back."""
    layer = bpy.context.view_layer
    before = ([o.name for o in layer.objects if o.select_get()],
              layer.objects.active.name if layer.objects.active else None)
    for o in layer.objects:
        o.select_set(False)
    for o in objs + ([active] if active is not None else []):
        if o.name not in layer.objects:
            raise UsageError(f"{o.name} is not in the view layer (hidden collection "
                             "excluded?); include it to settle it")
        o.select_set(True)
    if active is not None:
        layer.objects.active = active
    return before


def _restore_selection(before):
    layer = bpy.context.view_layer
    selected, active = before
    for o in layer.objects:
        o.select_set(o.name in selected)
    layer.objects.active = bpy.data.objects.get(active) if active else None


def settle_command(args):
    from . import settle
    try:
        path = os.path.abspath(args.blend)
        if not os.path.isfile(path):
            raise UsageError(f"no such .blend file: {path}")
        try:
            bpy.ops.wm.open_mainfile(filepath=path)
        except RuntimeError as exc:
            raise UsageError(f"cannot open {path}: {str(exc).strip()}") from None
        if not args.time_limit > 0 or not 0 <= args.jitter <= 1 or args.seed < 0:
            raise UsageError("--time-limit must be > 0 s, --jitter between 0 and 1 m, "
                             "--seed >= 0")
        objs = _match(args.objects)
        onto = None
        if args.onto is not None:
            onto = bpy.data.objects.get(args.onto)
            if onto is None:
                raise UsageError(f"--onto {args.onto!r}: no object of that name in the file")
        before = _select(objs, onto)
    except UsageError as exc:
        print(f"hullabaloo: {exc}", file=sys.stderr)
        return 2
    try:
        bpy.ops.hullabaloo.settle(onto='ACTIVE' if onto is not None else 'ALL',
                                  time_limit=args.time_limit, seed=args.seed,
                                  jitter=args.jitter, apply_scale=args.apply_scale,
                                  keep_physics=args.keep_physics)
    except (RuntimeError, TypeError) as exc:  # the operator's ERROR report, a bad value
        msg = str(exc).strip().removeprefix("Error: ").strip()
        print(f"hullabaloo: settle failed: {msg}", file=sys.stderr)
        return 1
    finally:
        _restore_selection(before)
    out = os.path.abspath(args.out) if args.out else path
    bpy.ops.wm.save_as_mainfile(filepath=out, check_existing=False)
    _print_summary(settle.LAST["summary"], out)
    return 0


def _print_summary(s, out):
    print("Hullabaloo settle summary")
    print(f"  objects:          {len(s['settled'])} at rest, {len(s['moving'])} still moving, "
          f"{len(s['fallen']) + len(s['failed'])} left where they were")
    print(f"  simulated:        {s['simulated_seconds']:.2f} s ({s['steps']} steps) in "
          f"{s['simulation_seconds']:.2f} s")
    for p in s["problems"]:
        print(f"  note: {p}")
    print(f"  saved:            {out}")
