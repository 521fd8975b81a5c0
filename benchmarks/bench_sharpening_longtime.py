"""Benchmark: one reduced (a, b) trajectory to t = 10⁶ — the library path against plain scipy (issue 23).

The growth laws of Theorem 4 are logarithmic, so a trajectory must reach t ≥ 10⁶. The same CACO
system (r = 1, n = 9, K = 5, a₀ = b₀ = 0.1), the pages' tolerances (rtol 1e-10, atol 1e-12), the
pages' stored times (``reduced.time_grid``: 400 log-spaced times) and the matched-loss event s = 0.9:

1. the library path: ``reduced.solve`` — LSODA in log time τ = log(1 + t), closed-form right-hand
   side and analytic Jacobian (``ReducedSystem.rhs`` / ``jacobian``);
2. what a user would otherwise run (the headline): ``scipy.integrate.solve_ivp`` with a plain numpy
   right-hand side, LSODA and BDF, in t (as one would write it first) and in log time (the library's
   scheme), same rtol/atol, same stored times, same event;
3. secondary lines: the library path before issue 23 (torch right-hand side + ``torch.func.jacfwd``,
   rebuilt here) and the old fixed-step baseline, classical RK4 with h = 1 in plain Python.

Each solve is timed as the best of ``REPEATS``. The share of the bound: right-hand-side evaluations
per second of a solve against the rate at which the bare numpy right-hand side alone evaluates in a
loop (one core; the arithmetic, ≈ 30 flops per evaluation, is no bound at all — the interpreter is).
Run: ``.venv/bin/python benchmarks/bench_sharpening_longtime.py`` (about 15 s on 2 cores).
"""

from __future__ import annotations

import math
import os
import time

import numpy as np
import torch
from scipy.integrate import solve_ivp

from attnflow import flow
from attnflow.sharpening.reduced import ReducedSystem, solve, time_grid

HORIZON = 1e6
K, N_COMPETE, R = 5, 9, 1.0
A0 = B0 = 0.1
RTOL, ATOL = 1e-10, 1e-12  # reduced.solve's defaults, the pages'
MATCHED = 0.9
STEP = 1.0
REPEATS = 5
SYSTEM = ReducedSystem("CACO", R, N_COMPETE, K)
T_EVAL = time_grid(HORIZON)


def rhs_numpy(t, y):
    """Proposition 2, CACO, as a user writes it with numpy."""
    a, b = y
    p = 1.0 / (1.0 + N_COMPETE * np.exp(-b))
    g = 1.0 / (1.0 + np.exp(a * p) / (K - 1))
    return np.array([p * g, R * a * p * (1.0 - p) * g])


def hit_numpy(t, y):
    a, b = y
    return 1.0 / (1.0 + (K - 1) * np.exp(-a / (1.0 + N_COMPETE * np.exp(-b)))) - MATCHED


hit_numpy.direction = 1


def rhs_numpy_log(tau, y):
    return np.exp(tau) * rhs_numpy(None, y)


def hit_numpy_log(tau, y):
    return hit_numpy(None, y)


hit_numpy_log.direction = 1


def best(fn):
    """(best wall time of REPEATS calls, the last result)."""
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return min(times), out


def plain_scipy(method: str, log_time: bool):
    f, ev, span, grid = (
        (rhs_numpy_log, hit_numpy_log, math.log1p(HORIZON), np.log1p(T_EVAL))
        if log_time
        else (rhs_numpy, hit_numpy, HORIZON, T_EVAL)
    )
    sol = solve_ivp(f, (0.0, span), [A0, B0], method=method, t_eval=grid, rtol=RTOL, atol=ATOL, events=[ev])
    t_hit = sol.t_events[0][0]
    return sol.nfev, sol.y[:, -1], float(np.expm1(t_hit) if log_time else t_hit)


def library():
    run = solve(SYSTEM, HORIZON, a0=A0, b0=B0, matched=MATCHED, rtol=RTOL, atol=ATOL)
    return run.nfev, np.array([run.a[-1], run.b[-1]]), run.event["t"]


def library_before_23():
    """reduced.solve before issue 23: torch right-hand side, Jacobian from torch.func.jacfwd."""
    jac_fn = torch.func.jacfwd(SYSTEM.rhs_torch)

    def f(tau, y):
        return (1.0 + math.expm1(tau)) * SYSTEM.rhs_torch(torch.from_numpy(y)).numpy()

    def jac(tau, y):
        return (1.0 + math.expm1(tau)) * jac_fn(torch.from_numpy(y)).numpy()

    def hit(tau, y):
        return float(SYSTEM.p_correct(y[0], y[1])) - MATCHED

    hit.direction = 1
    res = flow.solve(
        f, np.array([A0, B0]), np.log1p(T_EVAL), jac=jac, method="LSODA", rtol=RTOL, atol=ATOL, events=[hit]
    )
    return res.nfev, res.y[-1], float(np.expm1(res.t_events[0][0]))


def rhs_python(a: float, b: float) -> tuple[float, float]:
    p = 1.0 / (1.0 + N_COMPETE * math.exp(-b))
    g = 1.0 / (1.0 + math.exp(a * p) / (K - 1))
    return p * g, R * a * p * (1.0 - p) * g


def fixed_rk4():
    a, b, h = A0, B0, STEP
    n_steps = int(round(HORIZON / h))
    for _ in range(n_steps):
        k1 = rhs_python(a, b)
        k2 = rhs_python(a + h / 2 * k1[0], b + h / 2 * k1[1])
        k3 = rhs_python(a + h / 2 * k2[0], b + h / 2 * k2[1])
        k4 = rhs_python(a + h * k3[0], b + h * k3[1])
        a += h / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0])
        b += h / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
    return 4 * n_steps, np.array([a, b]), float("nan")


def rhs_bound(n: int = 20000) -> float:
    """Evaluations per second of the bare numpy right-hand side in a loop."""
    y = np.array([A0, B0])
    start = time.perf_counter()
    for _ in range(n):
        rhs_numpy(0.0, y)
    return n / (time.perf_counter() - start)


def main() -> None:
    torch.set_num_threads(1)
    print(f"reduced CACO trajectory, r={R:g}, n={N_COMPETE}, K={K}, t = 0 … {HORIZON:.0e}", end=", ")
    print(f"rtol {RTOL:g}, atol {ATOL:g}")
    print(f"{len(T_EVAL)} stored times, event s = {MATCHED}; load average {os.getloadavg()[0]:.2f} (2 cores)")
    bound = rhs_bound()
    lib_s, lib = best(library)
    rows = [("library: reduced.solve (LSODA, log time, closed form + Jacobian)", lib_s, lib)]
    scipy_rows = []
    for method in ("LSODA", "BDF"):
        for log_time in (False, True):
            secs, out = best(lambda: plain_scipy(method, log_time))
            scipy_rows.append((f"plain scipy {method}, numpy RHS, in {'log time' if log_time else 't'}", secs, out))
    old_s, old = best(library_before_23)
    rows += scipy_rows + [("library before issue 23 (torch RHS + jacfwd)", old_s, old)]
    start = time.perf_counter()
    fix = fixed_rk4()
    rows.append((f"fixed-step RK4, h = {STEP:g}, plain Python", time.perf_counter() - start, fix))
    head = f"{'wall s':>8s} {'RHS evals':>10s} {'evals/s':>9s} {'a(T)':>12s} {'b(T)':>12s} {'t(s=0.9)':>11s}"
    print(f"\n{'method':66s} {head}")
    for name, secs, (nfev, y, t_hit) in rows:
        print(f"{name:66s} {secs:8.4f} {nfev:10d} {nfev / secs:9.0f} {y[0]:12.8f} {y[1]:12.8f} {t_hit:11.7f}")
    name, fast_s, fast = min(scipy_rows, key=lambda row: row[1])
    print(f"\nheadline: library vs the fastest plain scipy ({name}): {fast_s / lib_s:.2f}x less time")
    for name, secs, _ in scipy_rows:
        print(f"  vs {name}: {secs / lib_s:.2f}x")
    print(f"secondary: library vs its path before issue 23: {old_s / lib_s:.1f}x", end="; ")
    print(f"vs fixed-step RK4: {rows[-1][1] / lib_s:.0f}x")
    print(
        f"share of the bound: bare numpy RHS {bound:.0f} evaluations/s; library {lib[0] / lib_s / bound:.0%}, "
        f"fastest plain scipy {fast[0] / fast_s / bound:.0%} (the rest is the solver's own Python)"
    )
    gap = max(np.max(np.abs(y - lib[1])) for _, _, (_, y, _) in scipy_rows)
    print(f"max |final state − library's| over the plain-scipy runs: {gap:.1e}", end="; ")
    print(f"fixed RK4: {np.max(np.abs(fix[1] - lib[1])):.1e}")


if __name__ == "__main__":
    main()
