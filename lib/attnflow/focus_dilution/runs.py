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
from attnflow.focus_dilution import closed_forms, measure
from attnflow.focus_dilution.chain import MarkovChain
from attnflow.focus_dilution.model import PARAM_NAMES, ModelConfig, PopulationGrad, PopulationLoss, init_params

__all__ = [
    "single_threaded",
    "time_grid",
    "population_flow",
    "FlowRun",
    "PlateauRun",
    "plateau_run",
    "window_rate",
    "kappa_window_times",
    "plateau_end",
    "SETTLED",
    "focus_flow",
]

RTOL, ATOL = 1e-8, 1e-12  # solver tolerances of every page (TOOLING.md: 5 digits agree across methods)


def time_grid(horizon: float, fine_until: float = 300.0, fine_dt: float = 1.0, coarse_dt: float = 10.0) -> np.ndarray:
    """Stored times: every ``fine_dt`` up to ``fine_until`` (condensation), then every ``coarse_dt``."""
    fine = np.arange(0.0, min(horizon, fine_until), fine_dt)
    coarse = np.arange(fine_until, horizon, coarse_dt) if horizon > fine_until else np.array([])
    return np.unique(np.concatenate([fine, coarse, [horizon]]))


def uniform_times(t_end: float, n: int = 1201) -> np.ndarray:
    """``n`` equally spaced stored times from 0 to ``t_end`` (a short flow, e.g. through condensation)."""
    return np.linspace(0.0, t_end, n)


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


def population_flow(
    chain: MarkovChain,
    *,
    d_model: int = 8,
    init_scale: float = 1e-3,
    seed: int = 1,
    score_scale: float = 1.0,
    t_eval=None,
    horizon: float | None = None,
    theta0: dict[str, torch.Tensor] | None = None,
    method: str = "BDF",
    rtol: float = RTOL,
    atol: float = ATOL,
    dense_output: bool = False,
    gradient: str = "analytic",
    model: ModelConfig | None = None,
) -> FlowRun:
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
            res = flow.solve(
                lambda t, y: -grad(y),
                fl.flatten(theta0).numpy(),
                t_eval,
                jac=lambda t, y: -hess(torch.from_numpy(y)).numpy(),
                method=method,
                rtol=rtol,
                atol=atol,
                dense_output=dense_output,
            )
            res.named(fl)
        stage_quantities = measure.quantities(res.states(), loss)
    meta = dict(
        d_model=int(theta0["W0"].shape[1]),
        init_scale=init_scale,
        seed=seed,
        score_scale=score_scale,
        method=method,
        rtol=rtol,
        atol=atol,
        gradient=gradient,
        from_theta0=not default_init,
    )
    return FlowRun(
        t=res.t,
        quantities=stage_quantities,
        nfev=res.nfev,
        wall_s=res.wall_s,
        meta=meta,
        chain=chain,
        loss_fn=loss,
        result=res,
    )


def focus_flow(chain: MarkovChain, model: ModelConfig, t_end: float, n_coarse: int = 2500) -> FlowRun:
    """The population flow of a focus page to ``t_end`` (``closed_forms.focus_horizon``): stored every 1 up
    to t = 300 (condensation), then every max(1, t_end/``n_coarse``) through the plateau and focus."""
    return population_flow(chain, model=model, t_eval=time_grid(t_end, 300.0, 1.0, max(1.0, t_end / n_coarse)))


def euler_flow(
    loss: PopulationLoss, theta0: dict[str, torch.Tensor], dt: float, t_end: float, record_every: float = 1.0
) -> tuple[np.ndarray, dict[str, torch.Tensor], int]:
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
    u = torch.linalg.svd(theta["W0"], full_matrices=False)[2][0]  # (m,)
    uu = torch.outer(u, u)  # (m, m)
    return {"W0": theta["W0"] @ uu, "WQ": uu @ theta["WQ"], "WK": uu @ theta["WK"], "W1": uu @ theta["W1"]}


def linear_origin_flow(chain: MarkovChain, theta0: dict[str, torch.Tensor], t: np.ndarray) -> dict[str, np.ndarray]:
    """σ₁(W0(t)) and σ₁(W1(t)) of the linearized flow at the origin (R1), Ẇ0 = B W1ᵀ,
    Ẇ1 = W0ᵀ B, solved exactly by a matrix exponential from the same θ(0); each (len(t),)."""
    from scipy.linalg import expm

    from attnflow.focus_dilution.closed_forms import B_matrix

    d = chain.d
    B = B_matrix(chain)
    K = np.block([[np.zeros((d, d)), B], [B.T, np.zeros((d, d))]])  # (2d, 2d) acting on [W0; W1ᵀ]
    X0 = np.vstack([theta0["W0"].numpy(), theta0["W1"].numpy().T])  # (2d, m)
    X = np.stack([expm(K * s) @ X0 for s in t])  # (T, 2d, m)
    return {
        "sigma1_W0": np.linalg.svd(X[:, :d], compute_uv=False)[:, 0],
        "sigma1_W1": np.linalg.svd(X[:, d:], compute_uv=False)[:, 0],
    }


# ---- the θ_c¹ plateau and its unstable attention mode (R2, claims B4, B5) ------------------------------

SETTLED = 1.0  # g_eff is read at t_cond + SETTLED/|g|: embedding contracted (λ_c/|g| ≥ 8 e-folds), κ still ~ε²


def window_rate(chain: MarkovChain, g: float, init_scale: float) -> float:
    """The rate that sets the κ window: |g|, floored at 5εσ0 (below it the mode is not resolved on the
    flow, its claims are outside their domain, and the window need not run to t ~ 1/|g|)."""
    return max(abs(g), 5 * init_scale * closed_forms.sigma0(chain))


def kappa_window_times(t_cond: float, g: float, kappa_window) -> tuple[float, float]:
    """t_cond + kappa_window/|g| (g: the window rate, see :func:`window_rate`)."""
    return t_cond + kappa_window[0] / abs(g), t_cond + kappa_window[1] / abs(g)


def plateau_end(chain: MarkovChain, horizon: float, init_scale: float, g: float, kappa_window) -> float:
    """End of the flow: the horizon, extended to cover the κ window predicted from t_cond ≈ 2.5 T₁,
    and cut 10 % after it (the later stages are other pages)."""
    t_cond_pred = 2.5 * closed_forms.escape_time_origin(chain, init_scale)
    t_win_end = kappa_window_times(t_cond_pred, g, kappa_window)[1]
    return min(max(horizon, t_win_end * 1.1), max(t_win_end * 1.1, 300.0))


@dataclass
class PlateauRun:
    """The flow through condensation and the θ_c¹ plateau, measured (:func:`plateau_run`)."""

    run: FlowRun
    t_cond: float  # end of condensation (loss within 1 % of the gap to H(π))
    t_kappa: tuple  # the κ fit window t_cond + kappa_window/|g|
    kappa_rate: float  # fitted growth rate of κ on the window (nan: the window runs past the flow)
    mode_rate: float  # fitted growth rate of ‖q ± k‖² (the unstable mode, sign of g) on the window
    mode_growth: float  # its log-growth over the window
    mode_growth_pred: float  # 2∫|g_eff| dt over the window (the same flow's local rate)
    g_eff: np.ndarray  # (T,) −uᵀ∂_M L u along the flow
    t_settled: float  # t_cond + SETTLED/|g|
    g_eff_settled: float  # g_eff there: the rate at the visited plateau point before κ has grown
    t_c1: float  # closest approach (min ‖∇L‖ on [t_cond, t_kappa[0]])

    @property
    def window_points(self) -> int:
        """Stored times in the κ window (a fit needs ≥ 3): set by t_cond and the time grid."""
        t = self.run.t
        return int(((t >= self.t_kappa[0]) & (t <= self.t_kappa[1])).sum())


def plateau_run(chain: MarkovChain, mc: ModelConfig, horizon: float, kappa_window) -> PlateauRun:
    """Integrate through condensation and the plateau (to cover the κ window) and measure the attention
    mode there: the closest approach to θ_c¹, the growth of κ and of the unstable mode on the window, and
    g_eff = −uᵀ(∂L/∂M)u along the flow."""
    g = closed_forms.g_rate(chain, mc.score_scale)
    gw = window_rate(chain, g, mc.init_scale)
    loss = mc.population_loss(chain)
    t_end = plateau_end(chain, horizon, mc.init_scale, gw, kappa_window)
    run = population_flow(
        chain, model=mc, t_eval=time_grid(t_end, fine_until=300.0, fine_dt=1.0, coarse_dt=max(1.0, t_end / 2000))
    )
    q, t = run.quantities, run.t
    _, t_cond = measure.level_times(t, q["loss"], np.log(chain.d), chain.unigram_entropy())
    t_kappa = kappa_window_times(t_cond, gw, kappa_window)
    t_settled = t_cond + SETTLED / gw
    mode_key = "qk_sym" if g > 0 else "qk_anti"  # the unstable mode itself
    g_eff = measure.kappa_drive(run.result.states(), loss, q["u"])  # −uᵀ∂_M L u along the flow
    gnorm = measure.grad_norms(run.result.states(), loss)
    t_c1 = measure.saddle_time(t, gnorm, t_cond, min(t_kappa[0], t[-1]))
    idx = np.flatnonzero((t >= t_kappa[0]) & (t <= t_kappa[1]))
    nan = float("nan")
    common = dict(
        run=run,
        t_cond=t_cond,
        t_kappa=t_kappa,
        g_eff=g_eff,
        t_settled=t_settled,
        g_eff_settled=float(g_eff[run.at(t_settled)]) if t_settled <= t[-1] else nan,
        t_c1=t_c1,
    )
    if len(idx) < 3:  # condensation ended later than predicted: the window runs past the flow
        return PlateauRun(kappa_rate=nan, mode_rate=nan, mode_growth=nan, mode_growth_pred=nan, **common)
    i0, i1 = idx[[0, -1]]
    return PlateauRun(
        kappa_rate=run.rate("kappa", *t_kappa),
        mode_rate=run.rate(mode_key, *t_kappa),
        mode_growth=float(np.log(q[mode_key][i1] / q[mode_key][i0])),
        mode_growth_pred=float(2 * np.trapezoid(np.abs(g_eff[i0 : i1 + 1]), t[i0 : i1 + 1])),
        **common,
    )
