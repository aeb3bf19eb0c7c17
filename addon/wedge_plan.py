"""The wedge's plan: which variants, their names, and the ``bake`` arguments of each.

Pure Python (no bpy), so the Flamenco job compiler (tools/flamenco/hullabaloo_wedge.js) can be
checked against it: both build the cartesian product of the --vary values in the order given,
seeds innermost, and name variant i ``v{i:03d}_{prop}-{value}..._seed{K}``.
"""
import itertools
import re

from .overrides import (
    OverrideError,
    parse_value,
    split_assignment,
    split_values,
    to_json,
)

_UNSAFE = re.compile(r"[^A-Za-z0-9.+-]+")


def parse_vary(spec):
    """'PATH=V1,V2,...' -> (path, [value texts]); each value is checked to be readable."""
    path, text = split_assignment(spec)
    if not text:
        raise OverrideError(f"--vary {spec!r}: no values; write PATH=V1,V2,...")
    values = split_values(text)
    for v in values:
        parse_value(v)
    return path, values


def slug(text):
    return _UNSAFE.sub("_", text).strip("_") or "x"


def variant_name(index, pairs, seed):
    parts = [f"v{index:03d}"] + [f"{path.rsplit('.', 1)[1]}-{slug(v)}" for path, v in pairs]
    if seed is not None:
        parts.append(f"seed{seed}")
    return "_".join(parts)


def label(index, pairs, seed):
    """The text stamped on the variant's still: short property names and values."""
    words = [f"v{index:03d}"] + [f"{path.rsplit('.', 1)[1]}={v}" for path, v in pairs]
    if seed is not None:
        words.append(f"seed {seed}")
    return " ".join(words)


def plan(varies, seeds=None):
    """varies: [(path, [value texts])]; seeds: None (no --seed) or a count K (seeds 0..K-1).
    Returns a list of dicts: name, values {path: value}, sets ['PATH=V'], seed, label."""
    if seeds is not None and seeds < 1:
        raise OverrideError(f"--seeds {seeds}: give at least 1")
    paths = [p for p, _ in varies]
    if len(set(paths)) != len(paths):
        raise OverrideError("the same path is varied twice; put all its values in one --vary")
    seed_list = [None] if seeds is None else list(range(seeds))
    out = []
    combos = itertools.product(*[vals for _, vals in varies])
    for i, (combo, seed) in enumerate(itertools.product(combos, seed_list)):
        pairs = list(zip(paths, combo))
        out.append({
            "name": variant_name(i, pairs, seed),
            "values": {p: to_json(parse_value(v)) for p, v in pairs},
            "sets": [f"{p}={v}" for p, v in pairs],
            "seed": seed,
            "label": label(i, pairs, seed),
        })
    return out


def bake_args(scene, out_dir, variant, common):
    """The ``hullabaloo bake`` arguments of one variant: the wedge's own bake options
    (common, already argv words) first, then the variant's values as --set, its seed."""
    args = ["bake", scene, "--out", out_dir] + list(common)
    for s in variant["sets"]:
        args += ["--set", s]
    if variant["seed"] is not None:
        args += ["--seed", str(variant["seed"])]
    return args + ["--label", variant["label"]]
