"""Population gradient flows of the focus–dilution model, ready for the pages.

    run = runs.population_flow(chain, d_model=8, init_scale=1e-3, seed=1, t_eval=runs.time_grid(3e4))

integrates dθ/dt = −∇L(θ) for the exact population loss with ``attnflow.flow.integrate``
(BDF, Jacobian = the autograd Hessian, float64) and measures every stage quantity.
These flows are stiff (TOOLING.md): explicit methods need ~10⁵–10⁷ evaluations where BDF
needs ~10⁴. BLAS and torch are kept to one thread while integrating
(``attnflow.device.single_threaded``, re-exported here): the matrices are tiny.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attnflow import flow
from attnflow.device import single_threaded
from attnflow.focus_dilution import measure
from attnflow.focus_dilution.chain import MarkovChain
from attnflow.focus_dilution.model import PARAM_NAMES, ModelConfig, PopulationGrad, PopulationLoss, init_params

__all__ = ["single_threaded", "time_grid", "population_flow", "FlowRun"]

RTOL, ATOL = 1e-8, 1e-12   # solver tolerances of every page (TOOLING.md: 5 digits agree across methods)


def time_grid(horizon: float, fine_until: float = 300.0, fine_dt: float = 1.0, coarse_dt: float = 10.0) -> np.ndarray:
    """Stored times: every ``fine_dt`` up to ``fine_until`` (condensation), then every ``coarse_dt``."""
    fine = np.arange(0.0, min(horizon, fine_until), fine_dt)
    coarse = np.arange(fine_until, horizon, coarse_dt) if horizon > fine_until else np.array([])
    return np.unique(np.concatenate([fine, coarse, [horizon]]))


@dataclass
class FlowRun(measure.Trajectory):
    """A measured population flow plus what produced it (``meta``: the solver and model settings;
    ``result``: the raw :class:`~attnflow.flow.FlowResult`, itself a record of the named states)."""

    chain: MarkovChain | None = None
    loss_fn: PopulationLoss | None = None
    result: flow.FlowResult | None = None

    def parameters(self) -> dict[str, torch.Tensor]:
        """θ over time, name → (T, *shape) float64 (the flow result's states)."""
        if self.result is None:
            raise LookupError("this FlowRun keeps no flow result, hence no parameters over time")
        return self.result.states()


def population_flow(chain: MarkovChain, *, d_model: int = 8, init_scale: float = 1e-3, seed: int = 1,
                    score_scale: float = 1.0, t_eval=None, horizon: float | None = None,
                    theta0: dict[str, torch.Tensor] | None = None, method: str = "BDF",
                    rtol: float = RTOL, atol: float = ATOL, dense_output: bool = False,
                    gradient: str = "analytic", model: ModelConfig | None = None) -> FlowRun:
    """Gradient flow of the population loss from the spec's small initialization (or ``theta0``).

    model: a :class:`~attnflow.focus_dilution.model.ModelConfig`; when given it replaces the loose
        ``d_model``, ``init_scale``, ``seed`` and ``score_scale`` (``population_flow(chain, model=m)``).

    gradient: "analytic" (default) evaluates the right-hand side with the closed-form backward
        pass of spec §4.3 (:class:`~attnflow.focus_dilution.model.PopulationGrad`, numpy, ~10×
        cheaper per call on these tiny matrices) and the Jacobian with the autograd Hessian of
        :class:`PopulationLoss`, through ``flow.solve``; "autograd" calls ``flow.integrate`` on the
        loss (autograd for both). The two give the same trajectory (tests/test_focus_flow.py).
    Returns a :class:`FlowRun`: ``run.t``, ``run.quantities`` (stage quantities), ``run.nfev``,
    ``run.wall_s`` and the raw ``run.result`` (``result.states()``, dense ``result.sol``).
    """
    if gradient not in ("analytic", "autograd"):
        raise ValueError(f"gradient must be 'analytic' or 'autograd', received {gradient!r}")
    if model is not None:
        d_model, init_scale, seed, score_scale = model.d_model, model.init_scale, model.seed, model.score_scale
    loss = PopulationLoss(chain, score_scale)
    if t_eval is None:
        t_eval = time_grid(horizon if horizon is not None else 3e4)
    default_init = theta0 is None
    if default_init:
        theta0 = init_params(chain.d, d_model, init_scale, seed)
    theta0 = {n: torch.as_tensor(theta0[n], dtype=torch.float64) for n in PARAM_NAMES}
    with single_threaded():
        if gradient == "autograd":
            res = flow.integrate(loss, theta0, t_eval, method=method, rtol=rtol, atol=atol, dense_output=dense_output)
        else:
            fl = flow.Flattener(theta0)
            grad = PopulationGrad(chain, theta0["W0"].shape[1], score_scale)
            # reverse-over-reverse: measured 2× faster than torch.func.hessian (forward-over-reverse) here
            hess = torch.func.jacrev(torch.func.jacrev(lambda v: loss(fl.unflatten(v))))
            res = flow.solve(lambda t, y: -grad(y), fl.flatten(theta0).numpy(), t_eval,
                             jac=lambda t, y: -hess(torch.from_numpy(y)).numpy(), method=method,
                             rtol=rtol, atol=atol, dense_output=dense_output)
            res.named(fl)
        stage_quantities = measure.quantities(res.states(), loss)
    meta = dict(d_model=int(theta0["W0"].shape[1]), init_scale=init_scale, seed=seed, score_scale=score_scale,
                method=method, rtol=rtol, atol=atol, gradient=gradient, from_theta0=not default_init)
    return FlowRun(t=res.t, quantities=stage_quantities, nfev=res.nfev, wall_s=res.wall_s, meta=meta, chain=chain,
                   loss_fn=loss, result=res)


def euler_flow(loss: PopulationLoss, theta0: dict[str, torch.Tensor], dt: float, t_end: float,
               record_every: float = 1.0) -> tuple[np.ndarray, dict[str, torch.Tensor], int]:
    """Fixed-step explicit Euler θ ← θ − dt ∇L(θ) (the spec's reference integrator, Appendix A)
    with torch autograd; returns (t (n,), states name → (n, *shape), gradient evaluations)."""
    theta = {n: v.detach().clone().requires_grad_(True) for n, v in theta0.items()}
    n_steps = int(round(t_end / dt))
    every = max(1, int(round(record_every / dt)))
    ts, rec = [], {n: [] for n in theta}
    with single_threaded():
        for k in range(n_steps + 1):
            if k % every == 0 or k == n_steps:
                ts.append(k * dt)
                for n, v in theta.items():
                    rec[n].append(v.detach().clone())
            if k == n_steps:
                break
            grads = torch.autograd.grad(loss(theta), list(theta.values()))
            with torch.no_grad():
                for v, g in zip(theta.values(), grads):
                    v -= dt * g
    return np.array(ts), {n: torch.stack(v) for n, v in rec.items()}, n_steps


def project_rank_one(theta: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Orthogonal projection onto the rank-one manifold 𝓜₁ along u = top right singular vector
    of W0: W0 → W0uuᵀ, W1 → uuᵀW1, WQ → uuᵀWQ, WK → uuᵀWK. 𝓜₁ is invariant under the flow
    (the transverse gradient vanishes on it), so a flow started here stays on it."""
    u = torch.linalg.svd(theta["W0"], full_matrices=False)[2][0]     # (m,)
    uu = torch.outer(u, u)                                           # (m, m)
    return {"W0": theta["W0"] @ uu, "WQ": uu @ theta["WQ"], "WK": uu @ theta["WK"], "W1": uu @ theta["W1"]}


def linear_origin_flow(chain: MarkovChain, theta0: dict[str, torch.Tensor], t: np.ndarray) -> dict[str, np.ndarray]:
    """σ₁(W0(t)) and σ₁(W1(t)) of the linearized flow at the origin (R1), Ẇ0 = B W1ᵀ,
    Ẇ1 = W0ᵀ B, solved exactly by a matrix exponential from the same θ(0); each (len(t),)."""
    from scipy.linalg import expm

    from attnflow.focus_dilution.closed_forms import B_matrix

    d = chain.d
    B = B_matrix(chain)
    K = np.block([[np.zeros((d, d)), B], [B.T, np.zeros((d, d))]])        # (2d, 2d) acting on [W0; W1ᵀ]
    X0 = np.vstack([theta0["W0"].numpy(), theta0["W1"].numpy().T])       # (2d, m)
    X = np.stack([expm(K * s) @ X0 for s in t])                          # (T, 2d, m)
    return {"sigma1_W0": np.linalg.svd(X[:, :d], compute_uv=False)[:, 0],
            "sigma1_W1": np.linalg.svd(X[:, d:], compute_uv=False)[:, 0]}
