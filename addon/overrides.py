"""``--set PATH=VALUE``: override a Hullabaloo setting from the command line before a bake.

    Ball.hullabaloo.initial_linear_velocity=(12,0,0)   an object's setting (object name first;
    Scene.hullabaloo.substeps=8                         names may contain dots)
    Cube.hullabaloo.body_type=PASSIVE                   enum options by name

Values are read safely (``ast.literal_eval``, never ``eval``): numbers, True/False, tuples, or a
bare option name; then checked against the property's own type, length, range and options,
so a typo is a clear error naming the object and property instead of Blender's silent clamp.
"""
import ast
import re

MARK = ".hullabaloo."
SCENE = "Scene"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TRUE = {"true", "yes", "on"}
_FALSE = {"false", "no", "off"}


class OverrideError(ValueError):
    """A --set (or --vary) that cannot be applied; the message says what to fix."""


def split_assignment(text):
    """'PATH=VALUE' -> (path, value text)."""
    path, eq, value = text.partition("=")
    path = path.strip()
    if not eq or not path:
        raise OverrideError(f"{text!r}: expected PATH=VALUE, e.g. "
                            "'Ball.hullabaloo.mass=2' or 'Scene.hullabaloo.substeps=8'")
    check_path(path)
    return path, value.strip()


def check_path(path):
    """(owner name, property) of OBJECT.hullabaloo.PROP / Scene.hullabaloo.PROP."""
    owner, mark, prop = path.rpartition(MARK)
    if not mark or not owner or not prop or "." in prop:
        raise OverrideError(f"{path!r}: only Hullabaloo settings can be set; write "
                            "OBJECT.hullabaloo.PROPERTY or Scene.hullabaloo.PROPERTY")
    return owner, prop


def split_values(text):
    """'V1,V2,...' split at the commas outside brackets, so tuples stay whole:
    '(8,0,0),(12,0,0)' -> ['(8,0,0)', '(12,0,0)']."""
    items: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            items.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    items.append("".join(cur).strip())
    if depth != 0:
        raise OverrideError(f"{text!r}: unbalanced brackets")
    if any(not i for i in items):
        raise OverrideError(f"{text!r}: empty value in the list (write V1,V2,...)")
    return items


def parse_value(text):
    """A literal (number, bool, tuple of numbers, quoted string) or a bare name (string)."""
    t = text.strip()
    if not t:
        raise OverrideError("empty value")
    try:
        value = ast.literal_eval(t)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        if _NAME.fullmatch(t):
            return t  # an option name such as PASSIVE, or true/false
        raise OverrideError(f"cannot read the value {text!r}: use a number, True/False, a "
                            "tuple like (1,0,0) or an option name") from None
    if isinstance(value, list):
        value = tuple(value)
    items = value if isinstance(value, tuple) else (value,)
    if not all(isinstance(v, (bool, int, float, str)) for v in items):
        raise OverrideError(f"cannot use the value {text!r}: only numbers, True/False, "
                            "tuples of numbers and option names")
    return value


def to_json(value):
    return list(value) if isinstance(value, tuple) else value


# -- applying to Blender data ----------------------------------------------------------------

def resolve(path, scene, objects):
    """(settings group, property name, label) for a path; objects is bpy.data.objects."""
    owner, prop = check_path(path)
    if owner == SCENE:
        group, label = scene.hullabaloo, f"scene {scene.name!r}"
    else:
        obj = objects.get(owner)
        if obj is None:
            raise OverrideError(f"{path!r}: no object named {owner!r} in the file")
        group, label = obj.hullabaloo, f"object {owner!r}"
    rna = group.bl_rna.properties.get(prop)
    if rna is None or prop == "rna_type" or rna.type in {'POINTER', 'COLLECTION'}:
        names = sorted(p.identifier for p in group.bl_rna.properties
                       if p.identifier != "rna_type" and p.type not in {'POINTER',
                                                                         'COLLECTION'}
                       and not p.is_hidden)
        raise OverrideError(f"{path!r}: {label} has no Hullabaloo setting {prop!r}; "
                            f"settings: {', '.join(names)}")
    return group, rna, label


def _scalar(rna, v, where):
    kind = rna.type
    if kind == 'BOOLEAN':
        if isinstance(v, bool):
            return v
        if isinstance(v, str) and v.lower() in _TRUE | _FALSE:
            return v.lower() in _TRUE
        if isinstance(v, int) and v in (0, 1):
            return bool(v)
        raise OverrideError(f"{where}: expected True or False, got {v!r}")
    if kind in {'INT', 'FLOAT'}:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise OverrideError(f"{where}: expected a number, got {v!r}")
        if kind == 'INT':
            if float(v) != int(v):
                raise OverrideError(f"{where}: expected a whole number, got {v!r}")
            v = int(v)
        else:
            v = float(v)
        if not rna.hard_min <= v <= rna.hard_max:
            raise OverrideError(f"{where}: {v!r} is outside {rna.hard_min:g}..{rna.hard_max:g}")
        return v
    if kind == 'ENUM':
        ids = [i.identifier for i in rna.enum_items]
        match = [i for i in ids if isinstance(v, str) and i.lower() == v.lower()]
        if not match:
            raise OverrideError(f"{where}: {v!r} is not one of {', '.join(ids)}")
        return match[0]
    if kind == 'STRING':
        return str(v)
    raise OverrideError(f"{where}: settings of type {kind} cannot be set")


def coerce(rna, value, where):
    n = getattr(rna, "array_length", 0)
    if n:
        if not isinstance(value, tuple) or len(value) != n:
            raise OverrideError(f"{where}: expected {n} values like "
                                f"({', '.join(['0'] * n)}), got {value!r}")
        return tuple(_scalar(rna, v, where) for v in value)
    if isinstance(value, tuple):
        raise OverrideError(f"{where}: expected one value, got {value!r}")
    return _scalar(rna, value, where)


def apply(assignments, scene, objects):
    """Apply [(path, value text)] in order; returns [(path, value as set)]. Raises
    OverrideError before changing anything if any of them is wrong."""
    planned = []
    for path, text in assignments:
        group, rna, label = resolve(path, scene, objects)
        value = coerce(rna, parse_value(text), f"{path!r} ({label})")
        planned.append((path, group, rna.identifier, value))
    for _, group, prop, value in planned:
        setattr(group, prop, value)
    return [(path, to_json(value)) for path, _, _, value in planned]
