"""Benchmark: one reduced (a, b) trajectory to t = 10⁶, adaptive vs fixed step (issue 3).

The growth laws of Theorem 4 are logarithmic, so a trajectory must reach t ≥ 10⁶. Three ways
to integrate the same CACO system (r = 1, n = 9, K = 5, a₀ = b₀ = 0.1), in one run:

1. the library path: ``reduced.solve`` — LSODA in log time τ = log(1 + t), torch right-hand
   side, Jacobian from ``torch.func.jacfwd``;
2. the same adaptive scheme with a plain-Python right-hand side (so that the time ratio against
   the baseline compares schemes, not implementations);
3. the fixed-step baseline: classical RK4 with step h = 1 in t (the largest step that is still
   accurate during the fast initial transient, where the rates are O(1)), plain Python.

Printed: wall time, right-hand-side evaluations, the state at t = 10⁶ and the ratios. Run:
``.venv/bin/python benchmarks/bench_sharpening_longtime.py`` (about 10 s on 2 cores).
"""

from __future__ import annotations

import math
import time

import numpy as np

from attnflow import flow
from attnflow.sharpening.reduced import ReducedSystem, solve

HORIZON = 1e6
K, N_COMPETE, R = 5, 9, 1.0
A0 = B0 = 0.1
STEP = 1.0


def rhs_python(a: float, b: float) -> tuple[float, float]:
    """Proposition 2, CACO, in plain floats (numerically stable sigmoids)."""
    p = 1.0 / (1.0 + N_COMPETE * math.exp(-b))
    g = 1.0 / (1.0 + math.exp(a * p) / (K - 1))
    return p * g, R * a * p * (1.0 - p) * g


def adaptive_python() -> tuple[float, int, np.ndarray]:
    def f(tau, y):
        scale = 1.0 + math.expm1(tau)
        da, db = rhs_python(y[0], y[1])
        return np.array([scale * da, scale * db])

    start = time.perf_counter()
    res = flow.solve(f, np.array([A0, B0]), [0.0, math.log1p(HORIZON)], method="LSODA", rtol=1e-10, atol=1e-12)
    return time.perf_counter() - start, res.nfev, res.y[-1]


def fixed_rk4() -> tuple[float, int, np.ndarray]:
    a, b, h = A0, B0, STEP
    n_steps = int(round(HORIZON / h))
    start = time.perf_counter()
    for _ in range(n_steps):
        k1 = rhs_python(a, b)
        k2 = rhs_python(a + h / 2 * k1[0], b + h / 2 * k1[1])
        k3 = rhs_python(a + h / 2 * k2[0], b + h / 2 * k2[1])
        k4 = rhs_python(a + h * k3[0], b + h * k3[1])
        a += h / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0])
        b += h / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
    return time.perf_counter() - start, 4 * n_steps, np.array([a, b])


def main() -> None:
    start = time.perf_counter()
    run = solve(ReducedSystem("CACO", R, N_COMPETE, K), HORIZON, a0=A0, b0=B0, n_times=2, matched=None)
    lib_s, lib_nfev, lib_y = time.perf_counter() - start, run.nfev, np.array([run.a[-1], run.b[-1]])
    ada_s, ada_nfev, ada_y = adaptive_python()
    fix_s, fix_nfev, fix_y = fixed_rk4()
    print(f"reduced CACO trajectory, r={R:g}, n={N_COMPETE}, K={K}, t = 0 … {HORIZON:.0e}")
    print(f"{'method':52s} {'wall s':>8s} {'RHS evals':>10s} {'a(T)':>12s} {'b(T)':>12s}")
    for name, s, nfev, y in (
        ("library: LSODA, log time, torch RHS + jacfwd", lib_s, lib_nfev, lib_y),
        ("LSODA, log time, plain-Python RHS", ada_s, ada_nfev, ada_y),
        (f"fixed-step RK4, h = {STEP:g}, plain-Python RHS", fix_s, fix_nfev, fix_y),
    ):
        print(f"{name:52s} {s:8.2f} {nfev:10d} {y[0]:12.8f} {y[1]:12.8f}")
    print(
        f"ratio fixed/adaptive (same Python RHS): time {fix_s / ada_s:.0f}x, RHS evaluations {fix_nfev / ada_nfev:.0f}x"
    )
    print(f"ratio fixed/library: time {fix_s / lib_s:.0f}x, RHS evaluations {fix_nfev / lib_nfev:.0f}x")
    print(f"max |difference| of the final state, fixed vs adaptive: {np.max(np.abs(fix_y - ada_y)):.1e}")


if __name__ == "__main__":
    main()
