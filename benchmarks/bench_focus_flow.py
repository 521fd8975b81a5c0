"""Focus–dilution population flow to t = 3·10⁴: the library path against plain scipy (issue 23).

The reference trajectory of the spec (δ = 0.1 chain, d = 5, m = 8, ε = 10⁻³, init seed 1,
t = 0…3·10⁴) is integrated

  A. by ``attnflow.flow.integrate`` — BDF, autograd gradient, ``torch.func.hessian`` Jacobian;
  B. by ``runs.population_flow`` — BDF, closed-form gradient of spec §4.3 (numpy), autograd
     Jacobian (reverse-over-reverse): the path every page uses;

against what a user would otherwise run (the headline): ``scipy.integrate.solve_ivp`` BDF and
LSODA on the plain numpy right-hand side −∇L (the same closed-form gradient), no Jacobian given
(scipy's finite differences), same rtol/atol, same stored times. Secondary lines: the spec's
integrator, explicit Euler with h = 0.05 (600 000 steps), in torch with autograd (baseline for A)
and with the same closed-form gradient (baseline for B). Euler over the full horizon takes minutes,
so it is timed on the first ``EULER_FRACTION`` of the horizon and extrapolated linearly (its cost per
step is constant); this is printed as such.

Share of the bound: right-hand-side evaluations per second of B against the rate of the bare
numpy gradient in a loop (one thread; these 5×8 matrices are bound by numpy's per-call cost, not
by the 2-core FLOP or memory roofline, which a 208-parameter gradient does not approach).

Run: .venv/bin/python benchmarks/bench_focus_flow.py
"""

from __future__ import annotations

import os
import time

import numpy as np
import torch
from scipy.integrate import solve_ivp

from attnflow import flow
from attnflow.focus_dilution import chain as chains
from attnflow.focus_dilution import model, runs

T_END, H, EULER_FRACTION = 3.0e4, 0.05, 0.05
CHECK_TIMES = [90.0, 1500.0, 1950.0, 3000.0, 5000.0, 3.0e4]  # TOOLING.md's checkpoints
TOOLING_LOSS = [1.52799, 1.52796, 1.50806, 1.50797, 1.47562, 1.41889]


def euler(step_fn, y0: np.ndarray, n_steps: int) -> tuple[np.ndarray, float]:
    y = y0.copy()
    start = time.perf_counter()
    for _ in range(n_steps):
        y = step_fn(y)
    return y, time.perf_counter() - start


def main() -> None:
    markov = chains.hub_family(delta=0.1)
    loss = model.PopulationLoss(markov)
    theta0 = model.init_params(markov.d, 8, 1e-3, seed=1)
    fl = flow.Flattener(theta0)
    y0 = fl.flatten(theta0).numpy()
    t_eval = np.array(CHECK_TIMES)
    print(f"trajectory: {markov.name}, d = {markov.d}, m = 8, ε = 1e-3, t = 0…{T_END:.0f}, {y0.size} parameters")
    print(f"rtol {runs.RTOL:g}, atol {runs.ATOL:g}; load average {os.getloadavg()[0]:.2f} (2 cores)")

    with runs.single_threaded():
        res_a = flow.integrate(loss, theta0, t_eval, method="BDF", rtol=runs.RTOL, atol=runs.ATOL)
    run_b = runs.population_flow(markov, theta0=theta0, t_eval=t_eval)
    res_b = run_b.result

    n_full = int(round(T_END / H))
    n_part = int(round(EULER_FRACTION * n_full))
    grad_np = model.PopulationGrad(markov, 8)
    with runs.single_threaded():
        plain = {method: _plain_scipy(grad_np, y0, t_eval, method) for method in ("BDF", "LSODA")}
        bound = _gradient_rate(grad_np, y0)
        y_torch, s_torch = euler(lambda y: y - H * _autograd(loss, fl, y), y0, n_part)
        y_np, s_np = euler(lambda y: y - H * grad_np(y), y0, n_part)
        res_check = flow.integrate(loss, theta0, [0.0, n_part * H], method="BDF", rtol=runs.RTOL, atol=runs.ATOL)
    scale = n_full / n_part

    print("\nloss at TOOLING.md's checkpoints (all four integrators there agree to 5 digits):")
    plain_loss = {m: [float(loss(fl.unflatten(torch.from_numpy(y)))) for y in out[0]] for m, out in plain.items()}
    for i, (t_, la, lb, ref) in enumerate(
        zip(CHECK_TIMES, flow.loss_along(res_a, loss), flow.loss_along(res_b, loss), TOOLING_LOSS)
    ):
        others = "  ".join(f"scipy {m} {v[i]:.6f}" for m, v in plain_loss.items())
        print(f"  t = {t_:>7.0f}: A {la:.6f}  B {lb:.6f}  {others}  TOOLING {ref:.5f}")
    l_eu = float(loss(fl.unflatten(torch.from_numpy(y_torch))))
    l_ex = float(loss(res_check.state(1)))
    print(
        f"  Euler at t = {n_part * H:.0f}: loss {l_eu:.6f} vs adaptive {l_ex:.6f} (same trajectory; "
        f"closed-form-gradient Euler differs from autograd Euler by {np.abs(y_np - y_torch).max():.1e})"
    )

    rows = [
        ("B  library: BDF, closed-form gradient + autograd Jacobian", res_b.wall_s, res_b.nfev, res_b.njev),
        *[(f"S  plain scipy {m}, numpy −∇L, finite-difference Jacobian", *plain[m][1:]) for m in plain],
        ("A  BDF, autograd gradient + torch.func.hessian", res_a.wall_s, res_a.nfev, res_a.njev),
        (f"E1 Euler h={H}, torch autograd (extrapolated ×{scale:.0f})", s_torch * scale, n_full, 0),
        (f"E2 Euler h={H}, closed-form gradient (extrapolated ×{scale:.0f})", s_np * scale, n_full, 0),
    ]
    print(
        f"\nEuler timed on the first {EULER_FRACTION:.0%} of the horizon ({n_part} steps: {s_torch:.1f} s autograd, "
        f"{s_np:.1f} s closed form) and extrapolated to {n_full} steps."
    )
    print(f"\n{'integrator':<62} {'time (s)':>9} {'RHS evals':>10} {'Jacobians':>9}")
    for name, secs, nfev, njev in rows:
        print(f"{name:<62} {secs:>9.1f} {nfev:>10d} {njev:>9d}")
    fastest = min(plain, key=lambda m: plain[m][1])
    print(
        f"\nheadline: B (the pages' path) vs the fastest plain scipy ({fastest}): "
        f"{plain[fastest][1] / res_b.wall_s:.2f}× less time; "
        + ", ".join(f"vs {m} {plain[m][1] / res_b.wall_s:.2f}×" for m in plain)
    )
    print(
        f"share of the bound: bare numpy gradient {bound:.0f} evaluations/s; B {res_b.nfev / res_b.wall_s:.0f}/s "
        f"= {res_b.nfev / res_b.wall_s / bound:.0%} (the rest: {res_b.njev} autograd Hessians and the solver's "
        f"linear algebra); fastest plain scipy {plain[fastest][2] / plain[fastest][1] / bound:.0%}"
    )
    print("\nsecondary ratios against Euler (targets: ≥ 50× fewer evaluations, ≥ 20× less time):")
    print(
        f"  A vs E1 (same autograd gradient): {n_full / res_a.nfev:6.0f}× fewer evaluations, "
        f"{s_torch * scale / res_a.wall_s:6.1f}× less time"
    )
    print(
        f"  B vs E2 (same closed-form gradient): {n_full / res_b.nfev:6.0f}× fewer evaluations, "
        f"{s_np * scale / res_b.wall_s:6.1f}× less time"
    )
    print(f"  B vs E1 (the pages' path vs the torch Euler baseline): {s_torch * scale / res_b.wall_s:6.1f}× less time")


def _plain_scipy(grad, y0: np.ndarray, t_eval: np.ndarray, method: str):
    """(states at t_eval, wall s, nfev, njev) of solve_ivp on −∇L (BDF's nfev leaves out its finite differences)."""
    start = time.perf_counter()
    sol = solve_ivp(
        lambda t, y: -grad(y), (0.0, t_eval[-1]), y0, method=method, t_eval=t_eval, rtol=runs.RTOL, atol=runs.ATOL
    )
    wall = time.perf_counter() - start
    if sol.status < 0:
        raise RuntimeError(f"plain scipy {method} failed: {sol.message}")
    return sol.y.T, wall, sol.nfev, sol.njev


def _gradient_rate(grad, y0: np.ndarray, n: int = 3000) -> float:
    start = time.perf_counter()
    for _ in range(n):
        grad(y0)
    return n / (time.perf_counter() - start)


def _autograd(loss, fl, y: np.ndarray) -> np.ndarray:
    x = torch.from_numpy(y).requires_grad_(True)
    return torch.autograd.grad(loss(fl.unflatten(x)), x)[0].numpy()


if __name__ == "__main__":
    main()
