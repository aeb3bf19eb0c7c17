"""The engine's packages follow the pipeline (engine/README.md): each imports only the packages
below it, nothing in engine/ imports Blender, and numba is imported by engine/core/jit.py alone.
Read from the sources (ast), so a lazy import inside a function counts too."""
import ast
import pathlib

ENGINE = pathlib.Path(__file__).resolve().parent.parent / "engine"

# What each package may import (besides itself).
ALLOWED = {
    "core": set(),
    "shapes": {"core"},
    "collision": {"core", "shapes"},
    "dynamics": {"core"},
    "features": {"core", "shapes", "dynamics"},
    "world": {"core", "shapes", "collision", "dynamics", "features"},
}


def imports(path):
    """(line, absolute module or None, relative target parts) for every import in path."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name, None
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                yield node.lineno, node.module, None
            else:
                here = list(path.relative_to(ENGINE).parent.parts)
                base = here[:len(here) - (node.level - 1)] if node.level > 1 else here
                target = base + (node.module.split(".") if node.module else [])
                if not node.module:   # from .. import a, b: the names are modules
                    for a in node.names:
                        yield node.lineno, None, target + [a.name]
                else:
                    yield node.lineno, None, target


def packages():
    return sorted(p.name for p in ENGINE.iterdir() if (p / "__init__.py").exists())


def test_every_module_is_in_a_phase_package():
    assert packages() == sorted(ALLOWED)
    loose = [p.name for p in ENGINE.glob("*.py") if p.name != "__init__.py"]
    assert not loose, f"engine modules outside the phase packages: {loose}"


def test_packages_import_only_the_phases_below_them():
    wrong = []
    for pkg in ALLOWED:
        for path in sorted((ENGINE / pkg).glob("*.py")):
            for line, _, target in imports(path):
                if target and target[0] != pkg and target[0] not in ALLOWED[pkg]:
                    wrong.append(f"{pkg}/{path.name}:{line} imports {'.'.join(target)}")
    assert not wrong, "\n".join(wrong)


def test_no_blender_and_one_home_for_numba():
    found = []
    for path in sorted(ENGINE.rglob("*.py")):
        for line, module, _ in imports(path):
            top = (module or "").split(".")[0]
            if top in ("bpy", "mathutils", "bmesh", "gpu"):
                found.append(f"{path.relative_to(ENGINE)}:{line} imports {module}")
            if top in ("numba", "llvmlite") and path != ENGINE / "core" / "jit.py":
                found.append(f"{path.relative_to(ENGINE)}:{line} imports {module}")
    assert not found, "\n".join(found)


def test_the_check_sees_a_wrong_import(tmp_path, monkeypatch):
    """The scan itself: a relative import of world from dynamics is found."""
    fake = tmp_path / "engine"
    (fake / "dynamics").mkdir(parents=True)
    (fake / "dynamics" / "x.py").write_text("def f():\n    from ..world.world import World\n")
    monkeypatch.setattr(__import__(__name__), "ENGINE", fake)
    got = [t for _, _, t in imports(fake / "dynamics" / "x.py")]
    assert got == [["world", "world"]]
