"""Determinism (issue 11): transcendental functions go through engine.core.detmath.

numpy evaluates arctan2, sin, ... with either a SIMD kernel or the C library's scalar
function, and chooses per call: a strided input whose address range seems to overlap the
output takes the scalar loop. Results differ by an ulp, so the same scene stepped twice in
one process came out different (a hinge angle in engine.dynamics.joint_solver, then millimetres after a
1-iteration impact). These tests show numpy's behaviour, detmath's answer to it, and keep the
engine on detmath."""
import ast
import math
import pathlib

import numpy as np
import pytest

from engine.core import detmath

ENGINE = pathlib.Path(__file__).resolve().parent.parent / "engine"
# np.hypot is not here: numpy has one kernel for it (test_numpy_has_one_hypot below).
TRANSCENDENTAL = {"sin", "cos", "tan", "arcsin", "arccos", "arctan", "arctan2",
                  "power", "float_power", "exp", "exp2", "expm1", "log", "log2", "log10",
                  "log1p", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "cbrt"}


def angles_in_one_buffer(m=195, seed=0):
    """A hinge's relative rotations (m, 3, 3) with the output buffer right after them, as a
    memory allocator may place them."""
    buf = np.empty(m * 10)
    rel = buf[:m * 9].reshape(m, 3, 3)
    rel[...] = np.random.default_rng(seed).normal(size=(m, 3, 3)) * 0.01 + np.eye(3)
    return rel, buf[m * 9:]


def test_numpy_picks_its_kernel_by_where_the_output_lies():
    """The premise (skipped where numpy has one kernel only): the same inputs, two answers."""
    rel, out = angles_in_one_buffer()
    y = -rel[:, 1, 2]
    np.arctan2(y, rel[:, 2, 2], out=out)
    apart = np.arctan2(y, np.ascontiguousarray(rel[:, 2, 2]))
    if np.array_equal(out, apart):
        pytest.skip("this numpy evaluates arctan2 with one kernel whatever the layout")
    # One of the two is the C library's (math.atan2), the other a SIMD kernel within an ulp.
    libm = np.array([math.atan2(a, b) for a, b in zip(y, rel[:, 2, 2])])
    assert np.array_equal(out, libm) or np.array_equal(apart, libm)
    assert np.abs(out - apart).max() <= 4 * np.spacing(np.abs(libm)).max()


def input_then_output(m=33, seed=1):
    """A contiguous input with the output right after it in memory, as an allocator may
    place a fresh output after the input it just read."""
    buf = np.empty(2 * m)
    x = buf[:m]
    x[...] = np.random.default_rng(seed).uniform(0.1, 0.9, m)
    return x, buf[m:]


@pytest.mark.parametrize("name", ["arcsin", "arccos", "arctan2", "log"])
def test_numpy_picks_its_kernel_by_the_output_even_for_contiguous_inputs(name):
    """The premise of detmath's padded outputs (skipped where numpy has one kernel)."""
    f = getattr(np, name)
    x, out = input_then_output()
    args = (x, x[::-1].copy()) if name == "arctan2" else (x,)
    f(*args, out=out)
    apart = f(*(a.copy() for a in args))
    if np.array_equal(out, apart):
        pytest.skip(f"this numpy evaluates {name} with one kernel whatever the layout")
    assert np.abs(out - apart).max() <= 4 * np.spacing(np.abs(apart)).max()


@pytest.mark.parametrize("name", ["sin", "cos", "arcsin", "arccos", "arctan2", "log", "log2"])
def test_detmath_answers_the_same_wherever_its_input_lies(name):
    """detmath's answer for an input followed by free memory (where numpy would put its
    output) equals its answer for a copy elsewhere, over many input lengths."""
    f = getattr(detmath, name)
    for m in (1, 2, 3, 5, 8, 9, 16, 33, 195):
        x, _ = input_then_output(m, seed=m)
        args = (x, x[::-1].copy()) if name == "arctan2" else (x,)
        ref = f(*(a.copy() for a in args))
        for _ in range(3):
            assert np.array_equal(f(*args), ref)


def test_numpy_has_one_hypot():
    """hypot (called directly in the solver's friction sweep) takes one path either way."""
    rel, out = angles_in_one_buffer()
    np.hypot(rel[:, 1, 2], rel[:, 2, 2], out=out)
    assert np.array_equal(out, np.hypot(np.ascontiguousarray(rel[:, 1, 2]),
                                        np.ascontiguousarray(rel[:, 2, 2])))


def test_detmath_gives_one_answer_whatever_the_layout():
    rel, _ = angles_in_one_buffer()
    y = -rel[:, 1, 2]
    ref = detmath.arctan2(np.ascontiguousarray(y), np.ascontiguousarray(rel[:, 2, 2]))
    for _ in range(3):
        assert np.array_equal(detmath.arctan2(y, rel[:, 2, 2]), ref)
    x = rel[:, 0, 2]
    for f, g in ((detmath.sin, np.sin), (detmath.cos, np.cos), (detmath.arcsin, np.arcsin),
                 (detmath.arccos, np.arccos), (detmath.log2, np.log2)):
        assert np.array_equal(f(x if f is not detmath.log2 else np.abs(x)),
                              g(np.ascontiguousarray(x if g is not np.log2 else np.abs(x))))
    # Scalars and 0-d arrays keep their shape.
    assert detmath.cos(0.5) == np.cos(0.5) and np.ndim(detmath.arctan2(1.0, 2.0)) == 0


def numpy_transcendentals(path):
    for node in ast.walk(ast.parse(path.read_text())):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "np"
                and node.func.attr in TRANSCENDENTAL):
            yield node.lineno, node.func.attr


def test_the_engine_calls_transcendentals_through_detmath():
    found = [f"{p.name}:{line}: np.{f}" for p in sorted(ENGINE.rglob("*.py"))
             if p.name != "detmath.py" for line, f in numpy_transcendentals(p)]
    assert not found, "use engine.core.detmath instead:\n" + "\n".join(found)


def test_the_scan_finds_what_it_forbids(tmp_path):
    src = tmp_path / "bad.py"
    src.write_text("import numpy as np\na = np.arctan2(y, x)\nb = np.sqrt(x)\nc = np.exp(x)\n")
    assert sorted(f for _, f in numpy_transcendentals(src)) == ["arctan2", "exp"]
