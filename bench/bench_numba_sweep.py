"""Issue 12: what one compiled kernel would buy. The contact solver's solve pass
(ContactSolver.solve: per graph colour, gather body velocities, block normal step, sequential
soft normal sweep with clamping, Coulomb friction sweep with disc clamping, scatter) written as a
numba @njit loop over manifolds, measured against the numpy solver. Bench only: the add-on, the
engine and the tests never import numba.

Set-up (a venv of its own; .venv / .venv313 and requirements/py3*.txt stay without numba)::

    python3.11 -m venv /work/scratch/numba-venv
    /work/scratch/numba-venv/bin/pip install -r requirements/bench-numba.txt

Run from the repository root::

    /work/scratch/numba-venv/bin/python bench/bench_numba_sweep.py
        [--scenes cubes27,cubes216,cubes1000,rocks125] [--frames 72] [--repeat 3]
        [--skip-check] [--skip-pass] [--skip-step]

Three parts, each on bench/bench_speed.py's scenes (sleeping off, WorldSettings() defaults):

1. check: solver states are captured from a real run (ContactSolver.solve monkeypatched to keep a
   copy of the solver's pass state, velocities and dpose at a few frames); on each state the
   kernel's impulses, max normal impulses and velocities are compared with the numpy sequential
   reference (``ContactSolver.one_product_sweeps = False``) and with the default numpy solve.
2. pass: CPU time (time.process_time) of one solve pass on those states, numpy (default and
   sequential) against the kernel after JIT warm-up; min over --repeat runs.
3. step: bench_speed's whole-step ms/frame, ours with numpy, ours with the kernel patched in for
   ContactSolver.solve, pybullet (bench_speed.run_pybullet); min over --repeat runs.

The kernel reads the arrays ContactSolver prepares (``solver_arrays`` is the one place that
knows their names) and does a plain sequential Gauss-Seidel over the manifolds in colour order:
inside a conflict-free colour that is the same arithmetic as the numpy colour batch; the overflow
colour (bodies shared) is applied Jacobi-style like numpy's scatter-add.
"""
import argparse
import copy
import math
import os
import sys
import time

import numpy as np

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
for p in (ROOT, BENCH):
    if p not in sys.path:
        sys.path.insert(0, p)

import bench_speed

from engine.solver import ContactSolver

try:
    from numba import njit
except ImportError:  # pragma: no cover - the script says how to get it
    sys.exit("numba is not installed here: see the docstring of bench/bench_numba_sweep.py "
             "(a venv of its own, requirements/bench-numba.txt)")


# -- the kernel ----------------------------------------------------------------------------------

# One explicit signature, every array of any layout ('A'): the solver's arrays come in mixed
# layouts (jr and eff are views of transposes, and a single-manifold array counts as both C and
# F), so letting numba specialise per layout would recompile in the middle of a timing.
F1, F2, F3, I1, I2 = "float64[:]", "float64[:, :]", "float64[:, :, :]", "int64[:]", "int64[:, :]"
SIGNATURE = (f"void({F2}, {F2}, boolean, {I2}, {F3}, {F3}, {F3}, {F2}, {F3}, {F2}, {F3}, {F2}, "
             f"{F2}, {F1}, {I1}, {I1}, boolean, float64, float64, float64, float64, float64)")


_JIT_START = time.process_time()


@njit(SIGNATURE, cache=False, fastmath=False)
def sweep_kernel(vel, dpose, use_bias, idx, jr, mjr, kmat, eff, kp, sep0, jn, imp, max_normal,
                 friction, offsets, max_count, shared_last, inv_h, bias_rate, mass_scale,
                 impulse_scale, max_push):
    """One solve pass (see ContactSolver.solve), in place on vel, imp and max_normal.

    Shapes as ContactSolver stores them: idx (m, 2); jr, mjr (m, 12, 12); kmat (12, 12, m);
    eff (12, m); kp (4, 4, m); sep0 (4, m); jn (4, m, 12); imp (12, m); max_normal (4, m);
    friction (m,); offsets (colours + 1,); max_count (colours,) largest point count per colour.
    """
    ncol = offsets.shape[0] - 1
    v = np.empty(12)
    dp = np.empty(12)
    u = np.empty(12)
    lam0 = np.empty(12)
    dv = np.empty(12)
    a_n = np.empty(4)
    ab = np.empty(4)
    bias = np.empty(4)
    msc = np.empty(4)
    isc = np.empty(4)
    newb = np.empty(4)
    start = np.empty(4)
    sep = np.empty(4)
    du = np.empty(12)
    for ci in range(ncol):
        c0 = offsets[ci]
        c1 = offsets[ci + 1]
        if c1 <= c0:
            continue
        npts = max_count[ci]
        shared = shared_last and ci == ncol - 1
        # The overflow colour may hold a dynamic body twice: every manifold reads the
        # velocities of the colour's start and the changes are added at the end (numpy's
        # scatter-add).
        dvbuf = np.zeros((c1 - c0, 12)) if shared else np.zeros((0, 12))
        for i in range(c0, c1):
            a = idx[i, 0]
            b = idx[i, 1]
            for k in range(6):
                v[k] = vel[a, k]
                v[6 + k] = vel[b, k]
                dp[k] = dpose[a, k]
                dp[6 + k] = dpose[b, k]
            # Per normal row: current separation, soft coefficients, bias. (Sums are written
            # with the summed index outermost: each output still sums in the same order as
            # numpy's einsum, but the outputs are independent chains the CPU overlaps.)
            for p in range(4):
                sep[p] = 0.0
            for k in range(12):
                for p in range(4):
                    sep[p] += jn[p, i, k] * dp[k]
            any_skip = False
            for p in range(4):
                s = sep0[p, i] + sep[p]
                spec = s > 0.0
                e = eff[p, i]
                if use_bias:
                    if spec:
                        bias[p] = s * inv_h
                        msc[p] = 1.0
                        isc[p] = 0.0
                    else:
                        bias[p] = max(bias_rate * s, -max_push)
                        msc[p] = mass_scale
                        isc[p] = impulse_scale
                    a_n[p] = e * msc[p]
                    ab[p] = a_n[p] * bias[p]
                else:
                    # Relax solves touching points only (see solver.py).
                    skip = spec and e > 0.0
                    any_skip = any_skip or skip
                    a_n[p] = 0.0 if skip else e
                    ab[p] = 0.0
                    bias[p] = 0.0
            for r in range(12):
                u[r] = 0.0
                lam0[r] = imp[r, i]
            for k in range(12):
                for r in range(12):
                    u[r] += jr[i, r, k] * v[k]
            # Block normal step, kept only where it needs no clamping.
            ok = not any_skip
            for p in range(4):
                newb[p] = 0.0
            for q in range(4):
                rhs = u[q] + bias[q]
                for p in range(4):
                    newb[p] += kp[p, q, i] * rhs
            for p in range(4):
                d = -newb[p]
                if use_bias:
                    d = d * msc[p] - isc[p] * lam0[p]
                newb[p] = lam0[p] + d
                if not newb[p] >= 0.0:
                    ok = False
            if ok:
                for s in range(12):
                    du[s] = 0.0
                for p in range(4):
                    dl = newb[p] - lam0[p]
                    for s in range(12):
                        du[s] += kmat[p, s, i] * dl
                for s in range(12):
                    u[s] += du[s]
                for p in range(4):
                    imp[p, i] = newb[p]
            # Sequential soft normal sweep with accumulated-impulse clamping.
            for p in range(4):
                start[p] = imp[p, i]
            for p in range(npts):
                pn = imp[p, i]
                old = pn * (1.0 - isc[p]) if use_bias else pn
                new = max(old - a_n[p] * u[p] - ab[p], 0.0)
                for s in range(p + 1, npts):
                    u[s] += kmat[p, s, i] * (new - pn)
                imp[p, i] = new
            for s in range(4, 12):
                du[s] = 0.0
            for p in range(npts):
                dl = imp[p, i] - start[p]
                for s in range(4, 12):
                    du[s] += kmat[p, s, i] * dl
            for s in range(4, 12):
                u[s] += du[s]
            for p in range(npts):
                if imp[p, i] > max_normal[p, i]:
                    max_normal[p, i] = imp[p, i]
            # Coulomb friction, each point's two tangents clamped to the disc mu * Pn.
            for p in range(npts):
                lim = friction[i] * imp[p, i]
                r = 4 + 2 * p
                o0 = imp[r, i]
                o1 = imp[r + 1, i]
                f0 = o0 - eff[r, i] * u[r]
                f1 = o1 - eff[r + 1, i] * u[r + 1]
                scale = min(lim / max(math.hypot(f0, f1), 1e-200), 1.0)
                f0 *= scale
                f1 *= scale
                if p + 1 < npts:
                    d0 = f0 - o0
                    d1 = f1 - o1
                    for s in range(r + 2, 4 + 2 * npts):  # later tangent rows only
                        u[s] += kmat[r, s, i] * d0 + kmat[r + 1, s, i] * d1
                imp[r, i] = f0
                imp[r + 1, i] = f1
            # Scatter: dv = M^-1 J^T (impulse change).
            for k in range(12):
                dv[k] = 0.0
            for r in range(12):
                dl = imp[r, i] - lam0[r]
                for k in range(12):
                    dv[k] += dl * mjr[i, r, k]
            if shared:
                for k in range(12):
                    dvbuf[i - c0, k] = dv[k]
            else:
                for k in range(6):
                    vel[a, k] = v[k] + dv[k]
                    vel[b, k] = v[6 + k] + dv[6 + k]
        if shared:
            for i in range(c0, c1):
                for k in range(6):
                    vel[idx[i, 0], k] += dvbuf[i - c0, k]
                    vel[idx[i, 1], k] += dvbuf[i - c0, 6 + k]


# The explicit signature compiles at import (CPU seconds, printed by main).
JIT_SECONDS = time.process_time() - _JIT_START


def solver_arrays(s):
    """The kernel's arguments after (vel, dpose, use_bias), from a prepared ContactSolver (the
    one place that knows the solver's attribute names)."""
    cached = getattr(s, "_nb_args", None)
    if cached is None:
        cached = (s.idx, s.jr, s.mjr, s.kmat, s.eff, s.k_pinv, s.sep0, s.jn)
        s._nb_args = cached
        s._nb_cols = (np.asarray(s.offsets, dtype=np.int64),
                      np.asarray(s.max_count, dtype=np.int64))
    return cached + (s.imp, s.max_normal, s.friction) + s._nb_cols + (
        bool(s.overflow), 1.0 / s.h, float(s.bias_rate), float(s.mass_scale),
        float(s.impulse_scale), float(s.max_push))


def numba_solve(self, vel, dpose, use_bias):
    """Drop-in for ContactSolver.solve (bench only)."""
    if self.m == 0:
        return
    sweep_kernel(vel, dpose, bool(use_bias), *solver_arrays(self))


# -- captured solver states ------------------------------------------------------------------------

def fresh(state):
    """A copy of a captured (solver, vel, dpose, use_bias) whose mutable parts are its own: the
    prepared arrays (constant over the step) are shared, the pass state is copied."""
    s, vel, dpose, use_bias = state
    c = copy.copy(s)
    for name, val in vars(s).items():
        if name.startswith("_nb"):
            continue
        if isinstance(val, list):
            setattr(c, name, list(val))
        elif name in ("imp", "max_normal"):
            setattr(c, name, val.copy())
    for name in ("_nb_args", "_nb_cols"):
        c.__dict__.pop(name, None)
    return c, vel.copy(), dpose.copy(), use_bias


def capture(scene, frames, at, every):
    """Run ours on a bench_speed scene; keep every ``every``-th solve pass's input state during
    the frames in ``at``. Returns the states and the world."""
    states = []
    frame = [0]
    calls = [0]
    orig = ContactSolver.solve

    def spy(self, vel, dpose, use_bias):
        if frame[0] in at and self.m:
            calls[0] += 1
            if calls[0] % every == 0:
                states.append(fresh((self, vel, dpose, use_bias)))
        return orig(self, vel, dpose, use_bias)

    w = bench_speed.build_ours(scene)
    ContactSolver.solve = spy
    try:
        for f in range(frames):
            frame[0] = f
            w.step(1.0 / scene.fps)
    finally:
        ContactSolver.solve = orig
    return states


def run_numpy(state, sequential):
    s, vel, dpose, use_bias = fresh(state)
    numpy_pass(sequential)(s, vel, dpose, use_bias)
    return s, vel


def run_kernel(state):
    s, vel, dpose, use_bias = fresh(state)
    numba_solve(s, vel, dpose, use_bias)
    return s, vel


# Largest accepted relative difference of the kernel against the numpy sequential sweep (the
# same arithmetic, summed in a slightly different order: round-off only).
TOL = 1e-9


def rel_err(a, b):
    scale = max(float(np.abs(b).max()) if b.size else 0.0, 1e-300)
    return float(np.abs(a - b).max()) / scale if a.size else 0.0


def check(states):
    """Worst relative difference (impulses, max normal, velocities) of the kernel against the
    numpy sequential reference and against the default numpy solve."""
    worst_seq = [0.0, 0.0, 0.0]
    worst_def = [0.0, 0.0, 0.0]
    for st in states:
        k_s, k_v = run_kernel(st)
        for worst, seq in ((worst_seq, True), (worst_def, False)):
            r_s, r_v = run_numpy(st, seq)
            errs = (rel_err(k_s.imp, r_s.imp), rel_err(k_s.max_normal, r_s.max_normal),
                    rel_err(k_v, r_v))
            for j, e in enumerate(errs):
                worst[j] = max(worst[j], e)
    return worst_seq, worst_def


# -- timing ------------------------------------------------------------------------------------------

def time_passes(states, fn, repeat):
    """Mean CPU seconds of one pass over the states, min over repeats. Each timed pass follows
    an untimed pass of the same function on another copy of the same state, so the solver's
    arrays are in the cache as far as they fit, as in a real step's run of passes."""
    best = math.inf
    for _ in range(repeat):
        total = 0.0
        for st in states:
            fn(*fresh(st))
            s, vel, dpose, use_bias = fresh(st)
            t0 = time.process_time()
            fn(s, vel, dpose, use_bias)
            total += time.process_time() - t0
        best = min(best, total / len(states))
    return best


def numpy_pass(sequential):
    """ContactSolver.solve with the one-product sweeps (default) or the sequential reference
    (set on the instance: the class default stays as it is)."""
    def fn(s, vel, dpose, use_bias):
        s.one_product_sweeps = not sequential
        s.solve(vel, dpose, use_bias)
    return fn


def step_ms(scene, frames, repeat, patched):
    """Whole step and solve passes inside it, of the run with the fastest step: (ms/frame,
    solve ms/frame, solve us/pass, manifolds per pass), CPU time. patched: the kernel in for
    ContactSolver.solve. The solve passes are timed in place (the cache holds what a real step
    leaves there); the two process_time calls per pass cost ~1 us."""
    impl = numba_solve if patched else ContactSolver.solve
    orig = ContactSolver.solve
    best = None
    for _ in range(repeat):
        acc = [0.0, 0, 0]  # CPU s, passes, manifolds

        def timed(self, vel, dpose, use_bias):
            t0 = time.process_time()
            impl(self, vel, dpose, use_bias)
            acc[0] += time.process_time() - t0
            acc[1] += 1
            acc[2] += self.m
        ContactSolver.solve = timed
        try:
            t = bench_speed.run_ours(scene, frames, [])[0]  # (cpu s/frame, world, passes)
        finally:
            ContactSolver.solve = orig
        row = (1000.0 * t, 1000.0 * acc[0] / frames, 1e6 * acc[0] / max(acc[1], 1),
               acc[2] / max(acc[1], 1))
        if best is None or row[0] < best[0]:
            best = row
    return best


def pybullet_ms(scene, frames, repeat):
    return 1000.0 * min(bench_speed.run_pybullet(scene, frames, []) for _ in range(repeat))


# -- main --------------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenes", default="cubes27,cubes216,cubes1000,rocks125")
    ap.add_argument("--frames", type=int, default=72)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-check", action="store_true")
    ap.add_argument("--skip-pass", action="store_true")
    ap.add_argument("--skip-step", action="store_true")
    a = ap.parse_args()
    names = a.scenes.split(",")
    mismatch = []
    if not (a.skip_check and a.skip_pass):
        print("one solve pass on solver states captured at frames 12, 36, 60 (CPU us, warm "
              f"cache, min of {a.repeat}); rel. diff kernel vs numpy sequential / default "
              "(imp, max_n, vel)")
        print(f"{'scene':>10} {'states':>6} {'manif':>6} {'numpy us':>9} {'seq us':>9} "
              f"{'numba us':>9} {'x':>6}   {'vs sequential':>26}   {'vs default':>26}")
        print(f"(JIT compile at import: {JIT_SECONDS:.2f} s CPU)")
        for name in names:
            s = bench_speed.SCENES[name](a.frames)
            at = {f for f in (12, 36, 60) if f < a.frames}
            states = capture(s, max(at) + 1, at, every=3)
            errs = ("", "")
            if not a.skip_check:
                seq, dflt = check(states)
                errs = tuple(" ".join(f"{e:.1e}" for e in w) for w in (seq, dflt))
                if max(seq) > TOL:
                    mismatch.append(name)
            t_np = t_seq = t_nb = math.nan
            if not a.skip_pass:
                t_np = time_passes(states, numpy_pass(False), a.repeat)
                t_seq = time_passes(states, numpy_pass(True), a.repeat)
                t_nb = time_passes(states, lambda *x: numba_solve(*x), a.repeat)
            manif = np.mean([st[0].m for st in states])
            print(f"{name:>10} {len(states):>6} {manif:>6.0f} {1e6 * t_np:>9.0f} "
                  f"{1e6 * t_seq:>9.0f} {1e6 * t_nb:>9.1f} {t_np / t_nb:>6.0f}   "
                  f"{errs[0]:>26}   {errs[1]:>26}", flush=True)
    if not a.skip_step:
        print(f"\nwhole step, {a.frames} frames at 24 fps, sleeping off (CPU, run with the "
              f"fastest step of {a.repeat}); solve = ContactSolver.solve's passes inside it")
        print(f"{'scene':>10} {'bodies':>6} | {'ms/frame: ours numpy':>20} {'ours+numba':>10} "
              f"{'pybullet':>8} | {'x pybullet: numpy':>17} {'numba':>6} | "
              f"{'solve ms/f: numpy':>17} {'numba':>6} | {'us/pass: numpy':>14} {'numba':>6} "
              f"{'manif':>6}")
        run_kernel(capture(bench_speed.SCENES["cubes27"](2), 2, {1}, 1)[0])  # JIT warm-up
        for name in names:
            s = bench_speed.SCENES[name](a.frames)
            r_np = step_ms(s, a.frames, a.repeat, False)
            r_nb = step_ms(s, a.frames, a.repeat, True)
            t_pb = pybullet_ms(s, a.frames, a.repeat)
            print(f"{name:>10} {len(s.dynamic):>6} | {r_np[0]:>20.1f} {r_nb[0]:>10.1f} "
                  f"{t_pb:>8.2f} | {r_np[0] / t_pb:>17.2f} {r_nb[0] / t_pb:>6.2f} | "
                  f"{r_np[1]:>17.1f} {r_nb[1]:>6.1f} | {r_np[2]:>14.0f} {r_nb[2]:>6.0f} "
                  f"{r_np[3]:>6.0f}", flush=True)
    if mismatch:
        sys.exit(f"kernel differs from the numpy sequential sweep by more than {TOL:g} "
                 f"(relative) on: {', '.join(mismatch)}")


if __name__ == "__main__":
    main()
