"""Escape from the degenerate point θ_c² (spec focus_dilution.md R5; claims B8, B9, B15, B16).

    stats = escape.escape_stats(run, after=t_settle)          # rate, window, mean σ_max(M⊥), t_esc
    ls = escape.lyapunov_schmidt_limit(chains, theta_start)   # M⊥(θ_c²(δ))/δ → M1, λ₁ = σ_max(M1)
    c2 = escape.symmetric_critical_point(chain0, theta_start)  # θ_c²(δ = 0) on 𝓜₁, rare tokens alike

The transverse mode is measured as the spec does (:func:`escape_stats`: the growth rate of σ₂(W0) where
0.01 ≤ σ₂ ≤ 0.1, σ_max(M⊥) averaged over the same window, the escape time as the first t with σ₂(W0) > 0.1)
and on the unstable mode's own coordinate (:func:`unstable_modes`, :func:`mode_fit`: the state projected on
the growing singular pair of M⊥ at θ_c²(δ), |α(t)| ∝ e^{λt} with λ = σ_max(M⊥(θ_c²(δ))), in a window fixed
from the state at its start).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attnflow import claims
from attnflow.focus_dilution import measure
from attnflow.focus_dilution.chain import MarkovChain
from attnflow.focus_dilution.closed_forms import M_perp
from attnflow.focus_dilution.model import PopulationLoss
from attnflow.focus_dilution.runs import FlowRun, population_flow, project_rank_one

__all__ = [
    "escape_stats",
    "EscapeStats",
    "unstable_mode_share",
    "mode_split",
    "slope_bias",
    "lyapunov_schmidt_limit",
    "restricted_flow",
    "RestrictedFlow",
    "LSLimit",
    "rank_counts",
    "BIAS_MAX",
    "WINDOW",
    "residual_count",
    "predicted_arrival",
    "TrapStats",
    "trap_stats",
    "restricted_start",
    "restricted_horizon",
    "SweepRow",
    "sweep_row",
    "SweepFit",
    "sweep_fit",
    "sweep_domain",
    "escape_times_domain",
    "forecast_escape",
    "sweep_table",
    "spec_rows",
    "run_at",
    "cycle_checkpoints",
    "exercise_index",
    "PREDICT_FACTOR",
    "SETTLE_FRACTION",
    "LS_START",
    "LS_HORIZON",
    "OFF_TOL",
    "DRIFT_MAX",
    "UnstableMode",
    "unstable_modes",
    "mode_amplitude",
    "ModeFit",
    "mode_fit",
    "SETTLE_TOL",
    "MODE_TOP",
    "GRAD_TOL",
    "LS_CHUNK",
    "LS_GAIN",
    "AT_C2",
    "symmetrize_rare",
    "SymmetricPoint",
    "symmetric_critical_point",
    "trap_domains",
]

WINDOW = (0.01, 0.1)  # σ₂(W0) range of the linear transverse regime (spec R5)
BIAS_MAX = 5e-3  # a rate is compared with σ_max(M⊥) (1 %) or the spec's table (2 %) only where the bias that the
# mode's state at the window start puts on the fitted slope (:func:`slope_bias`: the untouched
# part of σ₂(W0) and the shrinking part of the mode) is ≤ 0.5 %: half the tighter tolerance; the
# other half covers the prediction's own error (≤ 0.3 % on the flows measured) and M⊥'s drift


def slope_bias(share: float, imbalance: float = 0.0, window: tuple = WINDOW) -> float:
    """Relative bias of the fitted growth rate of σ₂(W0) on ``window``, predicted from the state at the
    window start (linear transverse theory, spec R5), before any fit.

    The transverse block [[0, M⊥], [M⊥ᵀ, 0]] grows (x, y) at rate σ = σ_max(M⊥) and shrinks (x, −y) at −σ.
    With p = (I − uuᵀ)W0ᵀx and q = (I − uuᵀ)W1 y, the W0 side of the mode is α e^{σt} + β e^{−σt},
    α = (p + q)/2, β = (p − q)/2; ``imbalance`` = β·α/|α|² = (|p|² − |q|²)/|p + q|² (:func:`mode_split`).
    The untouched O(ε) entries add a part f = σ₂(t₀)√(1 − share²) in quadrature, ``share`` =
    |p|/σ₂(t₀). The least-squares slope of log √(|α|²(e^{σt} + imbalance·e^{−σt})² + f²) over the
    window (σ₂ from window[0] to window[1], uniform times) is σ(1 + bias). Measured against flows:
    (share, imbalance) = (0.938, ·) predicts −2.1 % where the rate was −2.4 % below σ_max(M⊥); (0.997,
    +0.030) −1.4 % where it was −1.1 %; (0.996, −0.015) +0.5 % where it was +0.66 %."""
    share = float(np.clip(share, 0.0, 1.0))
    if share < 1e-3 or imbalance <= -1.0:  # no growing mode in σ₂ at the window start: the slope says nothing
        return -1.0
    lo, hi = window
    f = lo * np.sqrt(1.0 - share**2)
    g0 = np.sqrt(max(lo**2 - f**2, 1e-300))
    s = np.linspace(0.0, np.log(hi / max(g0, 1e-300)) + 2.0, 4001)  # σt, past the window's end
    g = g0 * (np.exp(s) + imbalance * np.exp(-s)) / (1.0 + imbalance)
    sigma2 = np.sqrt(g**2 + f**2)
    sel = sigma2 <= hi
    return float(np.polyfit(s[sel], np.log(sigma2[sel]), 1)[0] - 1.0)


def mode_split(run: FlowRun, index: int) -> tuple[float, float]:
    """(share, imbalance) of the unstable transverse mode at stored time ``index`` (see :func:`slope_bias`):
    share = ‖(I − uuᵀ)W0ᵀx‖ / σ₂(W0), imbalance = (|p|² − |q|²)/|p + q|² with p = (I − uuᵀ)W0ᵀx,
    q = (I − uuᵀ)W1 y, x, y the top singular vectors of M⊥ = AᵀΠ(P − P̂) and u the rank-one direction."""
    qs = run.quantities
    U, _, Vt = np.linalg.svd(M_perp(qs["A"][index], qs["P_hat"][index], run.chain))
    x, y = U[:, 0], Vt[0]  # (d,), (d,)
    states = run.parameters()
    u = qs["u"][index]  # (m,)
    proj = np.eye(len(u)) - np.outer(u, u)  # (m, m)
    p = proj @ (states["W0"][index].numpy().T @ x)  # (m,)
    q = proj @ (states["W1"][index].numpy() @ y) if "W1" in states else p  # (m,)
    total = float(np.dot(p + q, p + q))
    imbalance = float((p @ p - q @ q) / total) if total > 0 else 0.0
    return float(np.linalg.norm(p) / qs["sigma2"][index]), imbalance


@dataclass
class EscapeStats:
    rate: float  # slope of log σ₂(W0) on the window
    window: tuple  # (t0, t1)
    M_perp_mean: float  # mean σ_max(M⊥) over the window
    t_escape: float  # first t after ``after`` with σ₂(W0) > 0.1 (nan if none)
    loss_end: float
    window_sensitivity: float  # max relative change of the rate when an edge moves by one stored time
    window_found: bool = True  # σ₂(W0) spent ≥ 3 stored times in the window after ``after``
    M_perp_drift: float = float("nan")  # max/min − 1 of σ_max(M⊥) over the window (constant-coefficient check)
    sigma2_floor: float = float("nan")  # σ₂(W0) at ``after``: the untouched O(ε) transverse level
    mode_share: float = float("nan")  # at the window start: ‖xᵀW0(I − uuᵀ)‖ / σ₂(W0), x = top left singular
    # vector of M⊥ (1: σ₂(W0) is the unstable transverse mode)
    mode_imbalance: float = 0.0  # at the window start: shrinking part of the mode's W0 side (mode_split)

    @property
    def fit_bias(self) -> float:
        """Bias of ``rate`` predicted from the mode at the window start (:func:`slope_bias`)."""
        return slope_bias(self.mode_share, self.mode_imbalance) if np.isfinite(self.mode_share) else float("nan")


def unstable_mode_share(run: FlowRun, index: int) -> float:
    """Share of σ₂(W0) carried by the unstable transverse mode at stored time ``index``:
    ‖xᵀ W0 (I − uuᵀ)‖ / σ₂(W0), with x the top left singular vector of M⊥ = AᵀΠ(P − P̂) and u the
    rank-one direction. Near 1 when the growing mode dominates the untouched O(ε) entries of W0
    (then the slope of log σ₂(W0) is the mode's rate); well below 1 when σ₂(W0) is still the noise."""
    return mode_split(run, index)[0]


def escape_stats(run: FlowRun, after: float, window: tuple = WINDOW, strict: bool = True) -> EscapeStats:
    """Transverse growth after ``after`` (the time the flow settled at θ_c²), claims B15–B16.

    ``strict=False``: when σ₂(W0) does not cross the window within the run (no escape within the
    horizon), return nan statistics with ``window_found=False`` instead of raising ValueError."""
    t, q = run.t, run.quantities
    floor = float(q["sigma2"][run.at(after)])
    try:
        t0, t1 = run.window("sigma2", *window, after=after)
    except ValueError:
        if strict:
            raise
        nan = float("nan")
        return EscapeStats(
            rate=nan,
            window=(nan, nan),
            M_perp_mean=nan,
            t_escape=measure.first_time(t, (t > after) & (q["sigma2"] > window[1])),
            loss_end=float(q["loss"][-1]),
            window_sensitivity=nan,
            window_found=False,
            sigma2_floor=floor,
        )
    sel = (t >= t0) & (t <= t1)
    rate = run.rate("sigma2", t0, t1)
    i0, i1 = run.at(t0), run.at(t1)
    shifted = [
        run.rate("sigma2", t[i0 + a], t[i1 + b])
        for a in (-1, 0, 1)
        for b in (-1, 0, 1)
        if 0 <= i0 + a < i1 + b < len(t)
    ]
    return EscapeStats(
        rate=rate,
        window=(t0, t1),
        M_perp_mean=float(q["M_perp_smax"][sel].mean()),
        t_escape=measure.first_time(t, (t > after) & (q["sigma2"] > window[1])),
        loss_end=float(q["loss"][-1]),
        window_sensitivity=float(np.max(np.abs(np.asarray(shifted) / rate - 1))),
        M_perp_drift=float(q["M_perp_smax"][sel].max() / q["M_perp_smax"][sel].min() - 1),
        sigma2_floor=floor,
        **dict(zip(("mode_share", "mode_imbalance"), mode_split(run, i0))),
    )


def rank_counts(run: FlowRun, times, threshold: float = 0.1) -> list[int]:
    """Number of singular values of W0 above ``threshold`` at each of ``times`` (rank steps, B9)."""
    return [int((run.quantities["sv_W0"][run.at(s)] > threshold).sum()) for s in times]


@dataclass
class LSLimit:
    """Critical points θ_c²(δ) on 𝓜₁ and the transverse drive there."""

    deltas: np.ndarray  # (n,)
    M_perp: np.ndarray  # (n, d, d) M⊥ at θ_c²(δ)
    sigma_max: np.ndarray  # (n,) σ_max(M⊥(θ_c²(δ)))
    grad_norm: np.ndarray  # (n,) ‖∇L‖ at the end of each restricted flow
    off_manifold: np.ndarray  # (n,) σ₂(W0) at the last stretch's end, before its projection (≤ round-off · e^LS_GAIN)
    sigma2_start: np.ndarray  # (n,) σ₂(W0) of the projected start (the round-off level, ~10⁻¹⁶)
    transverse_gain: np.ndarray  # (n,) ∫σ_max(M⊥)dt over the restricted flow (all its stretches): what the
    # linear transverse theory would amplify the round-off off 𝓜₁ by without the projections
    lambda1: float  # σ_max(M1), M1 = lim M⊥/δ (linear extrapolation of M⊥/δ to δ = 0)
    M1: np.ndarray  # (d, d)


def lyapunov_schmidt_limit(
    chains: list[MarkovChain],
    deltas,
    theta_start: dict[str, torch.Tensor],
    horizon: float = 8000.0,
    score_scale: float = 1.0,
    converged: float = 1e-10,
    extend: int = 3,
) -> LSLimit:
    """For each chain (δ), run the flow restricted to 𝓜₁ (start = rank-one projection of
    ``theta_start``) to its critical point θ_c²(δ) and evaluate M⊥ there (claim B9, R5).

    On 𝓜₁ the transverse gradient vanishes, so the flow stays on it up to round-off; but the Θ(δ)
    transverse mode amplifies that round-off by e^{∫σ_max(M⊥)dt}, which on some chains lifted an
    unprojected flow off 𝓜₁ (σ₂(W0) 2.6–4.3) within the horizon (an atlas finding, issue 21). So the flow
    is projected back onto 𝓜₁ after every stretch (:func:`restricted_flow`, the stretches of
    :func:`unstable_modes`), for ``horizon`` and on while ‖∇L‖ > ``converged``, up to ``(1 + 2 extend)``
    horizons. The range equation of the Lyapunov–Schmidt reduction is solved by θ_c²(δ) and the
    bifurcation equation's linear part is [[0, M⊥], [M⊥ᵀ, 0]] there. M1 = lim M⊥(δ)/δ is extrapolated
    linearly in δ. ``off_manifold`` is σ₂(W0) at the end of the last stretch, before its projection: how far
    one stretch drifts off 𝓜₁ from the critical point (round-off times at most e^``LS_GAIN``).
    """
    deltas = np.asarray(deltas, dtype=float)
    start = project_rank_one(theta_start)
    Ms, gn, off, s2_start, gain = [], [], [], [], []
    for chain in chains:
        r = restricted_flow(chain, start, horizon, (1 + 2 * extend) * horizon, score_scale, converged)
        s2_start.append(r.sigma2_start)
        gain.append(r.gain)
        Ms.append(M_perp(r.run.quantities["A"][-1], r.run.quantities["P_hat"][-1], chain))
        gn.append(r.grad_norm)
        off.append(r.sigma2_end)
    Ms = np.stack(Ms)  # (n, d, d)
    ratio = Ms / deltas[:, None, None]
    if len(deltas) >= 2:  # M⊥/δ = M1 + δ M2 + …: least-squares line per entry, value at δ = 0
        X = np.stack([np.ones_like(deltas), deltas], 1)  # (n, 2)
        coef = np.linalg.lstsq(X, ratio.reshape(len(deltas), -1), rcond=None)[0]
        M1 = coef[0].reshape(Ms.shape[1:])
    else:
        M1 = ratio[0]
    return LSLimit(
        deltas=deltas,
        M_perp=Ms,
        sigma_max=np.linalg.svd(Ms, compute_uv=False)[:, 0],
        grad_norm=np.asarray(gn),
        off_manifold=np.asarray(off),
        sigma2_start=np.asarray(s2_start),
        transverse_gain=np.asarray(gain),
        lambda1=float(np.linalg.svd(M1, compute_uv=False)[0]),
        M1=M1,
    )


# ----------------------------------------------------------------------------- the escape page's experiment
PREDICT_FACTOR = 1.5  # margin of the arrival and escape forecasts: measured settling / estimate 0.69–1.10 (5 chains)
SETTLE_FRACTION = 0.5  # the δ = 0 run must be predicted at θ_c² within the first half of its horizon
LS_START = 1000.0  # the spec's start of the restricted flows (on the θ_c¹ plateau of the reference chain)
LS_HORIZON = 8000.0  # length of the restricted flows (at least 4 t_settle, so that they reach θ_c²(δ))
OFF_TOL = 1e-6  # B9: σ₂(W0) at θ_c²(δ) must stay below this (on 𝓜₁)
LS_CHUNK = (250.0, 1000.0)  # first and longest stretch of unstable_modes' restricted flow between projections
LS_GAIN = 18.0  # ... a stretch lasts LS_GAIN / (max σ_max(M⊥) of the previous one): the round-off off 𝓜₁ grows by
# at most e^18 ≈ 7·10⁷ between projections (σ_max(M⊥) ≤ 0.07, i.e. ≤ 17.5 over the first stretch, on the chains seen)
SETTLE_TOL = 5e-3  # B16's window starts at the first stored time with ‖M⊥ − M⊥(θ_c²(δ))‖₂ ≤ 0.5 % σ_max(M⊥(θ_c²(δ))):
# the on-manifold drift of the rate from there is half of B16's 1 %
MODE_TOP = 0.05  # |α| at the window's end: the neglected O(|α|²) terms are ≤ 2.5·10⁻³ relative, a quarter of 1 %
GRAD_TOL = 1e-8  # θ_c²(δ) found by the restricted flow: ‖∇L‖ at its end at most this (B9's restricted-flow check)
DRIFT_MAX = 0.5  # (robustness page) M⊥ roughly constant over a window: max/min σ_max(M⊥) − 1 ≤ 50 %
AT_C2 = 1e-3  # "at θ_c²": |L − L(θ_c²)| below this share of H(π) − L(θ_c²) while σ₂(W0) < 0.01 (TrapStats.reached_c2)
NAN = float("nan")


# ----------------------------------------------------------------------------- θ_c²(δ = 0) itself, before the run
def symmetrize_rare(theta: dict[str, torch.Tensor], chain: MarkovChain) -> dict[str, torch.Tensor]:
    """Projection onto the parameters that treat the rare tokens alike: the rows of W0 and the columns of W1 of the
    rare tokens replaced by their mean. At δ = 0 the hub family is invariant under the cyclic shift of its rare
    tokens, which acts transitively on them, so this is the average over that symmetry group and the subspace it
    projects on is invariant under the flow (θ_c² lies in it; spec R5, B8)."""
    r = torch.as_tensor(chain.rare)
    W0, W1 = theta["W0"].clone(), theta["W1"].clone()
    W0[r] = W0[r].mean(0)  # (n, m) rows → their mean
    W1[:, r] = W1[:, r].mean(1, keepdim=True)  # (m, n) columns → their mean
    return {"W0": W0, "WQ": theta["WQ"].clone(), "WK": theta["WK"].clone(), "W1": W1}


@dataclass
class SymmetricPoint:
    """θ_c²(δ = 0) located by the flow on 𝓜₁ with symmetric rare tokens (:func:`symmetric_critical_point`)."""

    theta: dict  # name → tensor: the first stretch end with ‖∇L‖ ≤ converged (else the last one)
    theta_next: dict  # the end of one more stretch from there (the solver's next converged point)
    grad_norm: float  # ‖∇L‖ at ``theta``
    loss: float  # L at ``theta``
    elapsed: float  # flow time to ``theta``

    @property
    def found(self) -> bool:
        """The restricted flow converged: ‖∇L‖ ≤ ``GRAD_TOL`` at ``theta``."""
        return bool(self.grad_norm <= GRAD_TOL)


def symmetric_critical_point(
    chain: MarkovChain,
    theta_start: dict[str, torch.Tensor],
    horizon: float = LS_HORIZON,
    score_scale: float = 1.0,
    converged: float = 1e-10,
    stretch: float = LS_CHUNK[1],
) -> SymmetricPoint:
    """θ_c² of the symmetric chain (δ = 0) as the δ = 0 flow would reach it without its asymmetric part: the flow
    restricted to 𝓜₁ from the rank-one, rare-symmetric projection of ``theta_start`` (the δ = 0 run's θ_c¹ plateau
    state), projected back onto both (:func:`runs.project_rank_one`, :func:`symmetrize_rare`) after every
    ``stretch`` (the round-off of an unstable asymmetric direction would grow otherwise), until ‖∇L‖ ≤ ``converged``
    or ``2 horizon``; then one more stretch, for the location error of what is measured there."""

    def project(th):
        return symmetrize_rare(project_rank_one(th), chain)

    def advance(th):
        run = population_flow(chain, theta0=th, score_scale=score_scale, t_eval=np.linspace(0.0, stretch, 3))
        end = project({n: s[-1] for n, s in run.result.states().items()})
        return end, float(measure.grad_norms({n: v[None] for n, v in end.items()}, run.loss_fn)[0])

    theta, g, elapsed = project(theta_start), float("inf"), 0.0
    while g > converged and elapsed < 2 * horizon:
        theta, g = advance(theta)
        elapsed += stretch
    nxt, _ = advance(theta)
    loss = PopulationLoss(chain, score_scale)
    return SymmetricPoint(theta, nxt, g, float(loss(theta)), elapsed)


# ----------------------------------------------------------------------------- the unstable mode's coordinate
@dataclass
class UnstableMode:
    """The unstable transverse mode of the linearization at θ_c²(δ) (R5): M⊥ there, its growth rate
    σ_max(M⊥) and top singular pair (x, y), in token space (the same for every rotation of the embedding)."""

    delta: float
    M_perp: np.ndarray  # (d, d) M⊥ at θ_c²(δ)
    rate: float  # σ_max(M⊥(θ_c²(δ))): the predicted escape rate
    x: np.ndarray  # (d,) top left singular vector of M⊥
    y: np.ndarray  # (d,) top right singular vector
    grad_norm: float  # ‖∇L‖ at the end of the restricted flow (θ_c²(δ) reached when ≈ 0)


def unstable_modes(
    chains: list[MarkovChain],
    deltas,
    theta_start: dict[str, torch.Tensor],
    horizon: float = LS_HORIZON,
    score_scale: float = 1.0,
    converged: float = 1e-10,
) -> list[UnstableMode]:
    """θ_c²(δ) of each chain by the flow restricted to 𝓜₁ from the rank-one projection of ``theta_start``,
    projected back onto 𝓜₁ after every stretch (``LS_CHUNK``, ``LS_GAIN``: at large δ the Θ(δ) mode would lift
    the round-off off 𝓜₁ within the horizon), for ``horizon`` and on, up to twice that, until ‖∇L‖ ≤
    ``converged``; M⊥ at the end, its top singular value (the linearization's unstable rate) and pair."""
    out = []
    for chain, delta in zip(chains, np.asarray(deltas, dtype=float)):
        r = restricted_flow(chain, project_rank_one(theta_start), horizon, 2 * horizon, score_scale, converged)
        M = M_perp(r.run.quantities["A"][-1], r.run.quantities["P_hat"][-1], chain)
        U, S, Vt = np.linalg.svd(M)
        out.append(UnstableMode(float(delta), M, float(S[0]), U[:, 0], Vt[0], r.grad_norm))
    return out


@dataclass
class RestrictedFlow:
    """The end of a flow restricted to 𝓜₁ (:func:`restricted_flow`)."""

    run: FlowRun  # its last stretch (unprojected)
    grad_norm: float  # ‖∇L‖ at the end of the last stretch
    sigma2_start: float  # σ₂(W0) of the projected start (the round-off level)
    sigma2_end: float  # σ₂(W0) at the end of the last stretch, before its projection
    gain: float  # ∫σ_max(M⊥)dt over all stretches
    elapsed: float  # flow time


def restricted_flow(chain, start, horizon: float, max_time: float, score_scale: float = 1.0, converged: float = 1e-10):
    """The population flow restricted to 𝓜₁ from ``start`` (on 𝓜₁): stretches of the full flow, each projected
    back onto 𝓜₁ (:func:`runs.project_rank_one`) at its end, the first ``LS_CHUNK[0]`` long and each next one
    ``LS_GAIN / max σ_max(M⊥)`` of the one before (at most ``LS_CHUNK[1]``), so that the round-off off 𝓜₁ grows
    by at most e^``LS_GAIN`` between projections; for ``horizon``, and on while ‖∇L‖ > ``converged`` up to
    ``max_time``."""
    theta, elapsed, g_end, stretch, gain, s2_start = start, 0.0, float("inf"), LS_CHUNK[0], 0.0, None
    while elapsed < horizon or (g_end > converged and elapsed < max_time):
        run = population_flow(chain, theta0=theta, score_scale=score_scale, t_eval=np.linspace(0.0, stretch, 5))
        if s2_start is None:
            s2_start = float(run.quantities["sigma2"][0])
        gain += float(np.trapezoid(run.quantities["M_perp_smax"], run.t))
        states = {n: s[-1:] for n, s in run.result.states().items()}
        g_end = float(measure.grad_norms(states, run.loss_fn)[0])
        theta, elapsed = project_rank_one({n: s[0] for n, s in states.items()}), elapsed + stretch
        stretch = float(min(LS_CHUNK[1], LS_GAIN / max(run.quantities["M_perp_smax"].max(), 1e-300)))
    return RestrictedFlow(run, g_end, s2_start, float(run.quantities["sigma2"][-1]), gain, elapsed)


def mode_amplitude(run: FlowRun, mode: UnstableMode) -> np.ndarray:
    """|α(t)| at every stored time, (T,): the run's transverse state on the growing mode of ``mode``,
    ‖(I − uuᵀ)(W0ᵀx + W1 y)‖/2 with u the run's rank-one direction at t (:func:`mode_split`'s (p + q)/2 on the
    fixed pair of θ_c²(δ)). Linear theory at θ_c²(δ): |α(t)| = |α(t₀)| e^{σ_max(M⊥)(t − t₀)}, the shrinking
    mode (p − q)/2 and the other singular pairs excluded."""
    states, u = run.parameters(), run.quantities["u"]  # u: (T, m)
    W0, W1 = states["W0"].numpy(), states["W1"].numpy()  # (T, d, m), (T, m, d)
    s = np.einsum("tdm,d->tm", W0, mode.x) + np.einsum("tmd,d->tm", W1, mode.y)  # (T, m)
    s = s - u * np.einsum("tm,tm->t", s, u)[:, None]
    return np.linalg.norm(s, axis=1) / 2


@dataclass
class ModeFit:
    """Escape rate of one δ run on its unstable mode's coordinate (:func:`mode_fit`)."""

    delta: float
    predicted: float  # σ_max(M⊥(θ_c²(δ))) of the restricted flow
    t0: float  # window start: first stored time at θ_c²(δ) (nan: not within the run)
    alpha0: float  # |α(t₀)|
    drift0: float  # ‖M⊥(t₀) − M⊥(θ_c²(δ))‖₂ / σ_max (its minimum over the run when t₀ is nan)
    t1: float  # window end forecast from t₀: t₀ + log(MODE_TOP/|α(t₀)|)/predicted
    n_fit: int  # stored times in [t₀, t₁]
    horizon: float  # the run's last stored time
    rate: float  # slope of log|α| on the stored times in [t₀, t₁] (nan with fewer than 3)
    grad_norm: float = NAN  # ‖∇L‖ at the end of the restricted flow that found θ_c²(δ)

    @property
    def measured_from(self) -> float | None:
        """When the fit starts to read the run (a claim's ``measured_from``): t₀, None without a window start."""
        return float(self.t0) if np.isfinite(self.t0) else None

    def domain(self) -> claims.Domain:
        """Where the rate is compared with the linearization (B16), read from the restricted flow and from the
        run up to t₀: θ_c²(δ) found, the run at θ_c²(δ) (the window start exists), the mode still linear there,
        and the forecast window end within the run with ≥ 3 stored times."""
        found = bool(np.isfinite(self.t0))
        at = claims.state(f"δ = {self.delta:g} run up to its window start t₀", self.t0 if found else NAN)
        restricted = claims.state(f"restricted flow to θ_c²(δ = {self.delta:g}) from the δ = 0 plateau state")
        return claims.domain(
            (
                f"θ_c²(δ) found: ‖∇L‖ ≤ {GRAD_TOL:g} at the end of the restricted flow",
                bool(self.grad_norm <= GRAD_TOL),
                f"‖∇L‖ = {self.grad_norm:.1e}",
                restricted,
            ),
            (
                f"the δ run reaches θ_c²(δ): ‖M⊥ − M⊥(θ_c²(δ))‖₂ ≤ {SETTLE_TOL:g} σ_max(M⊥(θ_c²(δ))) at a stored "
                "time t₀ (the window start)",
                found,
                f"t₀ = {self.t0:.0f}" if found else f"closest {self.drift0:.2g}",
            ),
            (
                f"the mode is still linear at t₀: |α(t₀)| < {MODE_TOP:g}",
                not found or bool(self.alpha0 < MODE_TOP),  # without t₀ the first condition already fails
                f"|α(t₀)| = {self.alpha0:.2g}",
            ),
            (
                f"the window end forecast t₀ + log({MODE_TOP:g}/|α(t₀)|)/σ_max(M⊥(θ_c²(δ))) within the run, "
                "≥ 3 stored times",
                not found or bool(self.t1 <= self.horizon and self.n_fit >= 3),
                f"t₁ = {self.t1:.0f}, end {self.horizon:.0f}, {self.n_fit} stored times",
            ),
            reads=at,
        )


def mode_fit(run: FlowRun, mode: UnstableMode) -> ModeFit:
    """The escape rate of ``run`` on ``mode``'s coordinate |α(t)| (:func:`mode_amplitude`), in a window fixed
    from the state at its start: t₀ the first stored time with ‖M⊥ − M⊥(θ_c²(δ))‖₂ ≤ ``SETTLE_TOL`` σ_max
    (the run has arrived at θ_c²(δ)), t₁ = t₀ + log(``MODE_TOP``/|α(t₀)|)/σ_max (where the linear theory puts
    |α| at ``MODE_TOP``); the rate is the least-squares slope of log|α| on the stored times in [t₀, t₁]."""
    t, q = run.t, run.quantities
    drift = np.linalg.norm(M_perp(q["A"], q["P_hat"], run.chain) - mode.M_perp, ord=2, axis=(1, 2)) / mode.rate
    hit = np.flatnonzero(drift <= SETTLE_TOL)
    if not len(hit):
        return ModeFit(mode.delta, mode.rate, NAN, NAN, float(drift.min()), NAN, 0, float(t[-1]), NAN, mode.grad_norm)
    i0 = int(hit[0])
    alpha = mode_amplitude(run, mode)
    t1 = float(t[i0] + np.log(MODE_TOP / alpha[i0]) / mode.rate) if alpha[i0] > 0 else float("inf")  # m = 1: no α
    sel = (t >= t[i0]) & (t <= t1) & (alpha > 0)
    rate = float(np.polyfit(t[sel], np.log(alpha[sel]), 1)[0]) if sel.sum() >= 3 and np.isfinite(t1) else NAN
    return ModeFit(
        mode.delta,
        mode.rate,
        float(t[i0]),
        float(alpha[i0]),
        float(drift[i0]),
        t1,
        int(sel.sum()),
        float(t[-1]),
        rate,
        mode.grad_norm,
    )


def residual_count(transverse, degenerate, ls_symbolic) -> int:
    """Entries of the escape page's sympy residuals that do not simplify to 0 (claim B8): the score change
    and first order off 𝓜₁, the transverse quadratic form and ∂L/∂Z (``symbolic.transverse_block``),
    M⊥(θ_c²) at δ = 0 (``symbolic.degenerate_point``), M⊥(0), the product rule for M1 and the block's
    characteristic polynomial (``symbolic.lyapunov_schmidt``)."""
    from attnflow.focus_dilution.symbolic import is_zero

    exprs = [
        *transverse.scores_change,
        transverse.first_order,
        transverse.residual,
        *transverse.G_residual,
        *degenerate.M_perp,
        *ls_symbolic.M0,
        *ls_symbolic.M1_residual,
        ls_symbolic.charpoly_residual,
    ]
    return sum(int(not is_zero(e)) for e in exprs)


def predicted_arrival(chain: MarkovChain, init_scale: float, score_scale: float = 1.0) -> float:
    """When the δ = 0 flow is predicted at θ_c², from the parameters: ``PREDICT_FACTOR`` × the R2 end of the
    θ_c¹ plateau, T₁ + log(1/ε²)/(2|g|) (``closed_forms.plateau_time``; the estimate drops an O(1/|g|) term)."""
    from attnflow.focus_dilution.closed_forms import plateau_time

    return PREDICT_FACTOR * plateau_time(chain, init_scale, score_scale)


@dataclass
class TrapStats:
    """The δ = 0 run (:func:`trap_stats`)."""

    t_pred: float  # predicted arrival at θ_c² (:func:`predicted_arrival`)
    sigma2_pred: float  # σ₂(W0) at t_pred (nan when t_pred lies beyond the run)
    sigma2_max_pred: float  # its maximum after t_pred
    t_settle: float  # first t with |L − L(end)| < 10⁻³ (H(π) − L(end)) (nan: never)
    settled: bool  # settled, within SETTLE_FRACTION of the horizon, below H(π)
    reached_c2: bool  # |L − L(θ_c²)| < 10⁻³ (H(π) − L(θ_c²)) while σ₂(W0) < 0.01 at some time
    sigma2_settle: float
    sigma2_end: float
    sigma2_max_after: float
    M_perp_end: float
    L_end0: float
    L_c2: float  # closed form (closed_forms.theta_c2_loss)
    bigram0: float
    t_trapped: float  # the run's end
    trap_s: float  # its wall time
    loss_pred: float = NAN  # L at t_pred (nan when t_pred lies beyond the run)

    @property
    def at_c2_pred(self) -> bool:
        """The run is at θ_c² at t_pred, the start of the trap checks' window: σ₂(W0) < 0.01 (still on 𝓜₁) and
        |L − L(θ_c²)| < ``AT_C2`` (H(π) − L(θ_c²)) there (False when t_pred lies beyond the run)."""
        gap = self.unigram - self.L_c2
        return bool(self.sigma2_pred < WINDOW[0] and abs(self.loss_pred - self.L_c2) < AT_C2 * gap)

    unigram: float = NAN  # H(π) of the chain
    t_window: float = NAN  # the stored time closest to t_pred, where the trap checks start to read the run

    @property
    def measured_from(self) -> float | None:
        """When the trap checks start to read the run (a claim's ``measured_from``): ``t_window``, None when t_pred
        lies beyond the run."""
        return float(self.t_window) if np.isfinite(self.t_window) else None

    @property
    def after(self) -> float:
        """Where the δ-sweep's statistics start: the settling time (the run's end when it does not settle)."""
        return self.t_settle if np.isfinite(self.t_settle) else self.t_trapped

    @property
    def growth_after_pred(self) -> float:
        """max σ₂(W0) after t_pred / σ₂(W0) at t_pred (1 for a flow trapped at θ_c² by t_pred)."""
        return self.sigma2_max_pred / self.sigma2_pred


def trap_stats(run0: FlowRun, symmetric: MarkovChain, t_pred: float = NAN) -> TrapStats:
    """The δ = 0 run: settling time at its end point (first t with |L − L(end)| < 10⁻³ (H(π) − L(end))), σ₂(W0)
    there, its maximum after and at the end, σ_max(M⊥) at the end, the loss against the closed form
    L(θ_c²). ``settled`` is False when the run ends above H(π) (still condensing or on the θ_c¹ plateau)
    or settles only in the second half of the horizon; the times are then nan. ``t_pred`` (from the
    parameters) is the predicted time at θ_c²: σ₂(W0) there and its maximum after it are the trap checks'
    values (nan when it lies beyond the run)."""
    from attnflow.focus_dilution.closed_forms import theta_c2_loss

    q0, t0 = run0.quantities, run0.t
    L_end0 = float(q0["loss"][-1])
    gap = symmetric.unigram_entropy() - L_end0
    close = np.flatnonzero(np.abs(q0["loss"] - L_end0) < 1e-3 * gap) if gap > 0 else np.array([], int)
    t_settle = float(t0[close[0]]) if len(close) else NAN
    settled = bool(len(close)) and t_settle <= SETTLE_FRACTION * float(t0[-1])
    i_settle = run0.at(t_settle) if len(close) else len(t0) - 1
    L_c2 = theta_c2_loss(symmetric)
    gap_c2 = symmetric.unigram_entropy() - L_c2
    near = (np.abs(q0["loss"] - L_c2) < AT_C2 * gap_c2) & (q0["sigma2"] < WINDOW[0])
    ok_pred = bool(np.isfinite(t_pred) and t_pred <= float(t0[-1]))
    i_pred = run0.at(t_pred) if ok_pred else len(t0) - 1
    return TrapStats(
        t_pred=float(t_pred),
        sigma2_pred=float(q0["sigma2"][i_pred]) if ok_pred else NAN,
        sigma2_max_pred=float(q0["sigma2"][i_pred:].max()) if ok_pred else NAN,
        t_settle=t_settle,
        settled=settled,
        reached_c2=bool(near.any()),
        sigma2_settle=float(q0["sigma2"][i_settle]),
        sigma2_end=float(q0["sigma2"][-1]),
        sigma2_max_after=float(q0["sigma2"][i_settle:].max()),
        M_perp_end=float(q0["M_perp_smax"][-1]),
        L_end0=L_end0,
        L_c2=L_c2,
        bigram0=symmetric.bigram_loss(),
        t_trapped=float(t0[-1]),
        trap_s=run0.wall_s,
        loss_pred=float(q0["loss"][i_pred]) if ok_pred else NAN,
        unigram=symmetric.unigram_entropy(),
        t_window=float(t0[i_pred]) if ok_pred else NAN,
    )


def restricted_start(run0: FlowRun) -> tuple[float, dict[str, torch.Tensor]]:
    """(time, state) of the δ = 0 run where the restricted flows start: the spec's ``LS_START`` where it lies
    on the θ_c¹ plateau (between the end of condensation and the onset of focus), else the middle of the
    plateau (the run's end when there is none). The flows start from its rank-one projection."""
    chain = run0.chain
    _, t_cond = measure.level_times(run0.t, run0.quantities["loss"], np.log(chain.d), chain.unigram_entropy())
    t_onset = measure.attention_onset(run0.t, run0.quantities["A"], chain.pi, 0.01)
    t_start = LS_START if t_cond < LS_START < t_onset else 0.5 * (t_cond + t_onset)
    if not np.isfinite(t_start):
        t_start = float(run0.t[-1])
    return float(t_start), {n: s[run0.at(t_start)] for n, s in run0.result.states().items()}


def restricted_horizon(trap: TrapStats) -> float:
    """Length of the restricted flows: ``LS_HORIZON``, at least 4 t_settle of the δ = 0 run when it settles."""
    return max(LS_HORIZON, 4 * trap.t_settle) if trap.settled else LS_HORIZON


def trap_domains(
    t_pred: float, horizon_trapped: float, trap: TrapStats, point: SymmetricPoint, curvature, t_start: float
) -> tuple[claims.Domain, claims.Domain]:
    """Domains of the trap and of what rests on it (B8, B9), read before the measurement.

    The first (every claim that needs the δ = 0 flow held at θ_c²): the arrival t_pred within
    ``SETTLE_FRACTION`` of ``horizon_trapped`` (parameters), θ_c² located by :func:`symmetric_critical_point` from
    the δ = 0 run's plateau state at ``t_start`` and, there, no negative curvature of L along 𝓜₁ beyond the
    numerical tolerance (``curvature``: ``spectrum.manifold_curvature``; the Lyapunov–Schmidt picture of a point
    stable along 𝓜₁ and degenerate across it needs it). The second (the trap checks, which read the run from
    t_pred on) adds that the run is at θ_c² at t_pred, the window start (:attr:`TrapStats.at_c2_pred`)."""
    restricted = claims.state(
        f"restricted flow on 𝓜₁ with symmetric rare tokens from the δ = 0 run's plateau state at t = {t_start:.0f}"
    )
    trap_dom = claims.domain(
        (
            f"predicted arrival at θ_c² t_pred = {PREDICT_FACTOR:g}·(T₁ + log(1/ε²)/(2|g|)) ≤ "
            f"{SETTLE_FRACTION:g} × horizon_trapped",
            bool(t_pred <= SETTLE_FRACTION * horizon_trapped),
            f"t_pred = {t_pred:.0f}, horizon {horizon_trapped:.0f}",
        ),
        (
            f"θ_c²(δ = 0) located: ‖∇L‖ ≤ {GRAD_TOL:g} at the end of the symmetric restricted flow",
            point.found,
            f"‖∇L‖ = {point.grad_norm:.1e}, L = {point.loss:.8f}",
            restricted,
        ),
        (
            "θ_c² is no saddle along 𝓜₁: λ_min(∇²L restricted to 𝓜₁) ≥ −tol (round-off + location error)",
            bool(point.found and curvature.stable),
            f"λ_min = {curvature.lambda_min:.3g}, tol = {curvature.tol:.1g}",
            restricted,
        ),
    )
    window = trap_dom & claims.domain(
        (
            f"the δ = 0 run is at θ_c² at the window start t_pred: σ₂(W0) < {WINDOW[0]:g} and |L − L(θ_c²)| < "
            f"{AT_C2:g} (H(π) − L(θ_c²))",
            trap.at_c2_pred,
            f"σ₂ = {trap.sigma2_pred:.2g}, L − L(θ_c²) = {trap.loss_pred - trap.L_c2:.2g}",
            claims.state("δ = 0 run at the window start (the stored time closest to t_pred)", t=trap.t_window),
        )
    )
    return trap_dom, window


@dataclass
class SweepRow:
    """One δ of the sweep: the run, its escape statistics (σ₂(W0), the spec's), the fit on its unstable
    mode's coordinate (B15, B16) and the states its domains read."""

    delta: float
    run: FlowRun | None
    stats: EscapeStats
    bigram: float
    mode: ModeFit | None = None  # the rate on the unstable mode of θ_c²(δ) (:func:`mode_fit`)
    sigma2_at_settle: float = NAN  # σ₂(W0) of this run at t_settle (< 0.01: it has not escaped yet)
    loss_1e4: float = NAN  # L at the stored time t = 10⁴ (the spec's horizon; NaN when the horizon is shorter)

    def escape_forecast(self, lambda1: float, after: float) -> float:
        """Forecast escape time of this δ run from its state at ``after`` (the δ = 0 settling time): the linear
        transverse mode grows σ₂(W0) from its value there to 0.1 at the Lyapunov–Schmidt rate λ₁δ, with
        PREDICT_FACTOR's margin (inf without a positive rate)."""
        rate = lambda1 * self.delta
        if not (rate > 0 and np.isfinite(after) and self.sigma2_at_settle > 0):
            return float("inf")
        return float(after + PREDICT_FACTOR * max(np.log(WINDOW[1] / self.sigma2_at_settle), 0.0) / rate)

    def escape_domain(self, trap: claims.Domain, lambda1: float, after: float, horizon: float) -> claims.Domain:
        """Where the δ run's escape is predicted (B9's escape time): ``trap`` (the δ = 0 run predicted at θ_c²,
        parameters), the run still on 𝓜₁ when the δ = 0 run settles, and the escape forecast from that state
        within the horizon (:meth:`escape_forecast`)."""
        at_settle = claims.state(f"δ = {self.delta:g} run at the δ = 0 settling time", after)
        t_fc = self.escape_forecast(lambda1, after)
        return trap & claims.domain(
            (
                "first escape: the δ run is still on 𝓜₁ when the δ = 0 run settles (σ₂(W0) < 0.01 there)",
                bool(self.sigma2_at_settle < WINDOW[0]),
                f"σ₂ = {self.sigma2_at_settle:.2g}",
                at_settle,
            ),
            (
                f"forecast escape t_settle + {PREDICT_FACTOR:g}·log(0.1/σ₂(t_settle))/(λ₁δ) within the horizon "
                "(λ₁ of the restricted flows)",
                bool(t_fc <= horizon),
                f"forecast {t_fc:.0f}, horizon {horizon:g}",
                at_settle,
            ),
        )

    @property
    def loss_1e4_target(self) -> float:
        """What the loss at t = 10⁴ is compared with: the bigram optimum for δ ≤ 0.2 (the run has finished its
        cycles), the spec's intermediate plateau 1.42812 for δ = 0.4."""
        from attnflow.focus_dilution.targets import SPEC

        return self.bigram if self.delta <= 0.2 else SPEC["escape_loss_1e4"][self.delta]

    @property
    def loss_1e4_atol(self) -> float:
        """1e-4 against the bigram optimum (the last cycle's tail), half a unit of the spec's 5 decimals else."""
        from attnflow.focus_dilution.targets import half_unit

        return 1e-4 if self.delta <= 0.2 else half_unit(5)

    @property
    def loss_1e4_what(self) -> str:
        if self.delta <= 0.2:
            return f"δ = {self.delta:g}: loss at t = 10⁴ vs the bigram optimum"
        return f"δ = {self.delta:g}: loss at t = 10⁴ (intermediate plateau) vs the spec's 1.42812"


def sweep_row(run: FlowRun, delta: float, after: float, mode: UnstableMode) -> SweepRow:
    """Measure one δ of the sweep (:func:`escape_stats` after the δ = 0 settling time ``after``; the rate on
    ``mode``'s coordinate, :func:`mode_fit`; σ₂(W0) at ``after``; L at t = 10⁴)."""
    st = escape_stats(run, after=after, strict=False)
    L = run.quantities["loss"]
    i4 = run.at(1e4)
    return SweepRow(
        delta=float(delta),
        run=run,
        stats=st,
        bigram=run.chain.bigram_loss(),
        mode=mode_fit(run, mode),
        sigma2_at_settle=float(run.quantities["sigma2"][run.at(after)]),
        loss_1e4=float(L[i4]) if abs(run.t[i4] - 1e4) <= 1e-9 * 1e4 else NAN,
    )


@dataclass
class SweepFit:
    """The δ-sweep's laws (:func:`sweep_fit`)."""

    lambda1_rates: float  # intercept λ₁' of rate/δ = λ₁' + λ₂δ (mode rates of the δ inside B16's domain)
    lambda2: float
    n_fit: int  # δ in the fit
    b16_dev: float  # max |mode rate / σ_max(M⊥(θ_c²(δ))) − 1| over them
    esc_min: float  # min (t_esc − t_settle)·δ over the δ that escaped
    esc_max: float  # max over the sweep: inf when a δ of the sweep did not escape within its run
    sens_max: float  # max window sensitivity of a σ₂ rate (an edge moved by one stored time)

    @property
    def esc_ratio(self) -> float:
        """max/min of (t_esc − t_settle)·δ (Θ(1/δ): bounded); inf when a δ of the sweep did not escape."""
        return self.esc_max / self.esc_min if np.isfinite(self.esc_max) else float("inf")


def sweep_fit(sweep: list[SweepRow], t_settle: float, domains: list[claims.Domain]) -> SweepFit:
    """Fit rate/δ = λ₁' + λ₂δ on the mode rates of the rows inside their B16 ``domains`` (B15), the largest
    deviation of such a rate from its prediction (B16), the range of (t_esc − t_settle)·δ (B9) and the largest
    window sensitivity of a σ₂ rate."""
    ds = np.array([r.delta for r in sweep])
    rates = np.array([r.mode.rate for r in sweep])
    pred = np.array([r.mode.predicted for r in sweep])
    esc = (np.array([r.stats.t_escape for r in sweep]) - t_settle) * ds
    ok = np.array([bool(d) for d in domains], dtype=bool) & np.isfinite(rates)
    fin = np.isfinite(esc)
    coef = np.polyfit(ds[ok], rates[ok] / ds[ok], 1) if ok.sum() >= 2 else np.array([NAN, NAN])
    sens = [r.stats.window_sensitivity for r in sweep if np.isfinite(r.stats.window_sensitivity)]
    return SweepFit(
        lambda1_rates=float(coef[1]),
        lambda2=float(coef[0]),
        n_fit=int(ok.sum()),
        b16_dev=float(np.abs(rates[ok] / pred[ok] - 1).max()) if ok.any() else NAN,
        esc_min=float(esc[fin].min()) if fin.any() else NAN,
        esc_max=float(esc.max()) if fin.all() else float("inf"),  # a δ that never escaped is no Θ(1/δ) time
        sens_max=float(max(sens)) if sens else NAN,
    )


def sweep_domain(rows: list[SweepRow], domains: list[claims.Domain]) -> claims.Domain:
    """B15's intercept: at least two δ inside their B16 domain (each read up to its own window start, hence an
    untimed state), the smallest of them ≤ 0.1 (the extrapolation of rate/δ to δ = 0)."""
    inside = [r.delta for r, d in zip(rows, domains) if d]
    return claims.domain(
        (
            "at least two δ of the sweep inside the B16 domain (the run at θ_c²(δ), its mode linear), the smallest "
            "≤ 0.1",
            len(inside) >= 2 and min(inside) <= 0.1,
            f"inside: {inside}",
            claims.state("each δ run up to its window start"),
        )
    )


def escape_times_domain(
    rows: list[SweepRow], trap: claims.Domain, lambda1: float, after: float, horizon: float
) -> claims.Domain:
    """B9's Θ(1/δ) escape time: ``trap`` and every δ escaping first, forecast within the horizon from its state
    at the δ = 0 settling time (:meth:`SweepRow.escape_domain`); the fit conditions of B16 are not needed."""
    n_ok = sum(bool(r.escape_domain(trap, lambda1, after, horizon)) for r in rows)
    return trap & claims.domain(
        (
            "every δ of the sweep escapes first, forecast within the horizon",
            n_ok == len(rows),
            f"{n_ok} of {len(rows)}",
            claims.state("each δ run at the δ = 0 settling time", after),
        )
    )


def forecast_escape(t_pred: float, init_scale: float, lambda1: float, delta: float) -> float:
    """Escape time of the δ run forecast from the parameters and λ₁: from the predicted arrival ``t_pred`` the
    transverse mode grows from the O(ε) level to 0.1 at the Lyapunov–Schmidt rate λ₁δ, with PREDICT_FACTOR's
    margin (inf for δ = 0 or λ₁ ≤ 0)."""
    if not (delta > 0 and lambda1 > 0):
        return float("inf")
    return float(t_pred + PREDICT_FACTOR * np.log(0.1 / init_scale) / (lambda1 * delta))


def sweep_table(rows: list[SweepRow], domains: list[claims.Domain]) -> list[dict]:
    """The sweep table (one row per δ): the mode rate and its prediction, the window start, the σ₂(W0)
    statistics, with the spec's values where it has them."""
    from attnflow.focus_dilution.targets import SPEC

    return [
        dict(
            delta=r.delta,
            mode_rate=r.mode.rate,
            predicted=r.mode.predicted,
            rate_over_delta=r.mode.rate / r.delta,
            t0=r.mode.t0,
            alpha0=r.mode.alpha0,
            in_domain=bool(dom),
            sigma2_rate=r.stats.rate,
            M_perp_mean=r.stats.M_perp_mean,
            t_escape=r.stats.t_escape,
            loss_end=r.stats.loss_end,
            bigram=r.bigram,
            spec_rate=SPEC["escape_rate"].get(r.delta, NAN),
            spec_M_perp=SPEC["escape_M_perp"].get(r.delta, NAN),
            spec_t_escape=SPEC["escape_time"].get(r.delta, NAN),
        )
        for r, dom in zip(rows, domains)
    ]


def spec_rows(rows: list[SweepRow]) -> list[SweepRow]:
    """The rows whose δ is in the spec's escape table (0.05, 0.1, 0.2, 0.4)."""
    from attnflow.focus_dilution.targets import SPEC

    return [r for r in rows if r.delta in SPEC["escape_rate"]]


def run_at(rows: list[SweepRow], delta: float) -> FlowRun | None:
    """The sweep's run at ``delta`` (None when δ is not in the sweep)."""
    return next((r.run for r in rows if r.delta == delta), None)


def cycle_checkpoints(reference: bool, horizon: float, after: float) -> list[float]:
    """Times at which the next cycle's rank of W0 is read: the spec's 4000, 6000, 8000 on its reference
    configuration with a horizon ≥ 10⁴, else a quarter, half, three quarters and the end of [after, horizon]."""
    from attnflow.focus_dilution.targets import SPEC

    if reference and horizon >= 1e4:
        return sorted(SPEC["rank_steps_cycle2"])
    return [after + f * (horizon - after) for f in (0.25, 0.5, 0.75, 1.0)]


def exercise_index(row: SweepRow) -> int:
    """The stored time of the exercise: the start of the row's linear window, else its last stored time."""
    return row.run.at(row.stats.window[0]) if row.stats.window_found else len(row.run.t) - 1
