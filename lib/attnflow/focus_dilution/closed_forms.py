"""Closed forms of the focus–dilution stages (spec focus_dilution.md §6, R1–R5) [reconstruction].

All functions take a :class:`~attnflow.focus_dilution.chain.MarkovChain` and return numpy values;
``attnflow.focus_dilution.symbolic`` derives each of them with sympy and the tests compare them
with autograd and with the integrated flow on random chains.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnflow.focus_dilution.chain import MarkovChain

__all__ = [
    "B_matrix",
    "sigma0",
    "sigma0_euler",
    "escape_time_origin",
    "ThetaC1",
    "theta_c1",
    "g_rate",
    "dkappa_A",
    "dkappa_A_at",
    "M_perp",
    "theta_c2_loss",
    "theta_c2_fit_error",
    "settling_horizon",
    "plateau_time",
    "origin_spectrum",
    "fit_window_times",
    "condensation_horizon",
    "condensation_duration",
    "cubic_rate_bias",
    "ONSET",
    "rank_one_attention",
    "focus_signs_kept",
    "OnsetForecast",
    "onset_forecast",
    "slope_bias_forecast",
    "focus_horizon",
    "FOCUS_T_MAX",
]


def B_matrix(chain: MarkovChain) -> np.ndarray:
    """R1: the drive at the origin B = π(π − 1/d)ᵀ, (d, d); L ≈ log d − ⟨B, W0 W1⟩_F."""
    pi = chain.pi
    return np.outer(pi, pi - 1 / chain.d)


def sigma0(chain: MarkovChain) -> float:
    """Claim B3: condensation rate σ0 = ‖π‖ ‖π − 1/d‖, the only singular value of B."""
    return float(np.linalg.norm(chain.pi) * np.linalg.norm(chain.pi - 1 / chain.d))


def sigma0_euler(chain: MarkovChain, dt: float) -> float:
    """Growth rate of explicit Euler with step dt on the linear mode: log(1 + dt σ0)/dt (spec R1)."""
    return float(np.log1p(dt * sigma0(chain)) / dt)


def escape_time_origin(chain: MarkovChain, init_scale: float) -> float:
    """R1: T₁ ≈ σ0⁻¹ log(1/ε), up to O(1)."""
    return float(np.log(1 / init_scale) / sigma0(chain))


def origin_spectrum(chain: MarkovChain, m: int) -> np.ndarray:
    """R1: eigenvalues of the flow's Jacobian at θ = 0, sorted: ±σ0 (m each), 0 elsewhere."""
    n = 2 * chain.d * m + 2 * m * m
    eigenvalues = np.zeros(n)
    eigenvalues[:m], eigenvalues[-m:] = -sigma0(chain), sigma0(chain)
    return eigenvalues


def fit_window_times(chain: MarkovChain, fit_window) -> tuple[float, float]:
    """R1: a growth-rate fit window given in units of 1/σ0, [t₀, t₁] = fit_window / σ0 in flow time."""
    s0 = sigma0(chain)
    return fit_window[0] / s0, fit_window[1] / s0


def condensation_horizon(chain: MarkovChain, horizon: float, init_scale: float) -> float:
    """End time of a flow through condensation: ``horizon``, extended to 2.5 T₁ (T₁ = σ0⁻¹ log(1/ε))
    when shorter, so that the loss reaches the unigram level H(π) before the flow ends."""
    return max(horizon, 2.5 * escape_time_origin(chain, init_scale))


CONDENSATION_LEVELS = 0.01  # the loss leaves log d / reaches H(π) within this fraction of the gap


def condensation_duration(chain: MarkovChain, frac: float = CONDENSATION_LEVELS) -> float:
    """R1 forecast of how long condensation lasts, t_cond − t_leave (the loss from within ``frac`` of the
    gap below log d to within ``frac`` of it above H(π)), from the parameters alone.

    Along the rank-one mode the squared amplitude w = s² of W0W1 grows like a logistic with rate 2σ0
    (a two-layer linear network with a rank-one drive); from w = frac·w* to w = (1 − frac)·w* that takes
    log((1 − frac)²/frac²)/(2σ0) (4.6/σ0 at 1 %). Measured on the flow it is 0.75–0.8 of that on the
    reference, a sticky-hub and a g < 0 chain (tests/test_page_condensation.py): an upper forecast."""
    return float(np.log(((1 - frac) / frac) ** 2) / (2 * sigma0(chain)))


def cubic_rate_bias(chain: MarkovChain, mode_amplitude: float, t: np.ndarray) -> float:
    """Relative bias that the first nonlinear term puts on a growth rate fitted on the stored times ``t`` of
    a window, predicted from the unstable mode's amplitude ‖W0ᵀπ̂ + W1v̂‖ at the window's start.

    Along the rank-one mode (W0 = s π̂uᵀ/√2, W1 = s u v̂ᵀ/√2, so the amplitude is √2 s) the loss is
    log d − σ0 s²/2 + ‖π‖² s⁴/(8d) + O(s⁶), hence ṡ = σ0 s − k s³ with k = ‖π‖²/(2d): w = s⁻² solves
    ẇ = −2σ0 w + 2k exactly. The same least-squares fit of log s as on the flow then gives rate/σ0 − 1
    (negative), a forecast made from the state at the window's start."""
    s0_ = sigma0(chain)
    s_start = float(mode_amplitude) / np.sqrt(2)
    k = float(chain.pi @ chain.pi) / (2 * chain.d)
    w = k / s0_ + (s_start**-2 - k / s0_) * np.exp(-2 * s0_ * (t - t[0]))
    return float(np.polyfit(t, -0.5 * np.log(w), 1)[0] / s0_ - 1)


@dataclass
class ThetaC1:
    """R2: the unigram saddle θ_c¹ on the rank-one manifold (κ = 0)."""

    alpha: float  # α = (‖ℓ‖/‖π‖³)^{1/2}
    a: np.ndarray  # (d,) embedding amplitudes a* = α π
    b: np.ndarray  # (d,) output amplitudes b* = ℓ / (α ‖π‖²)
    W0_norm: float  # ‖W0‖_F = ‖a*‖ = (‖ℓ‖/‖π‖)^{1/2}
    loss: float  # L(θ_c¹) = H(π)


def theta_c1(chain: MarkovChain) -> ThetaC1:
    """Claim B4: θ_c¹ (W0 = a* uᵀ, W1 = u b*ᵀ, κ = 0) where P̂_i = softmax(ℓ) = π for every query."""
    pi, ell = chain.pi, chain.ell
    npi = np.linalg.norm(pi)
    alpha = float(np.sqrt(np.linalg.norm(ell) / npi**3))
    return ThetaC1(
        alpha=alpha,
        a=alpha * pi,
        b=ell / (alpha * npi**2),
        W0_norm=float(np.sqrt(np.linalg.norm(ell) / npi)),
        loss=chain.unigram_entropy(),
    )


def g_rate(chain: MarkovChain, score_scale: float = 1.0) -> float:
    """Claim B5: rate of the unstable attention mode at θ_c¹, g = −∂_κ L(θ_c¹),

    g = c ‖ℓ‖/‖π‖⁵ · Var_π(π) · ℓᵀ(Pᵀ(π⊙π) − ‖π‖² π),   Var_π(π) = Σπ³ − (Σπ²)².
    """
    pi, ell, P = chain.pi, chain.ell, chain.P
    npi = np.linalg.norm(pi)
    var_pi = (pi**3).sum() - ((pi**2).sum()) ** 2
    return float(score_scale * np.linalg.norm(ell) / npi**5 * var_pi * ell @ (P.T @ (pi * pi) - npi**2 * pi))


def dkappa_A(chain: MarkovChain, score_scale: float = 1.0) -> np.ndarray:
    """Claim B6 (R3): ∂_κ A_ik at θ_c¹ = c α² π_i π_k (π_k − ‖π‖²), (d, d) (query i, key k).
    Only tokens with π_k > ‖π‖² gain attention as κ grows; frequent queries tilt most."""
    pi = chain.pi
    alpha2 = theta_c1(chain).alpha ** 2
    return score_scale * alpha2 * np.outer(pi, pi * (pi - (pi**2).sum()))


def dkappa_A_at(chain: MarkovChain, a: np.ndarray, score_scale: float = 1.0) -> np.ndarray:
    """∂_κ A_ik at κ = 0 on 𝓜₁ with amplitudes a (not necessarily απ): c π_k a_i (a_k − πᵀa), (d, d).
    At a = απ this is :func:`dkappa_A`; on the flow a = απ + O(ε) (the visited point)."""
    pi = chain.pi
    return score_scale * np.outer(a, pi * (a - pi @ a))


def M_perp(A: np.ndarray, P_hat: np.ndarray, chain: MarkovChain) -> np.ndarray:
    """R5: transverse drive M⊥ = Aᵀ Π (P − P̂), (…, d, d); transverse eigenvalues are ±σ_i(M⊥)."""
    return np.swapaxes(A, -1, -2) @ (chain.pi[:, None] * (chain.P - P_hat))


def theta_c2_loss(chain: MarkovChain) -> float:
    """R4/R5: loss at θ_c² for the symmetric hub family (δ = 0).

    There the rank-one model fits the hub row P_0 and the averaged low row P̄_low exactly (their
    centred logs are collinear), so L(θ_c²) = π_0 H(P_0) + Σ_j π_j CE(P_j, P̄_low). Derived in
    ``symbolic.degenerate_point``; raises ValueError for chains outside the symmetric family.
    """
    meta = chain.meta
    if "a_h" not in meta or meta.get("delta", 0.0) != 0.0:
        raise ValueError(f"theta_c2_loss holds for the hub family at delta = 0; received chain {chain.name!r}")
    P, pi = chain.P, chain.pi
    P_low = P[1:].mean(0)  # (d,) averaged low-token row
    return float(-pi[0] * (P[0] * np.log(P[0])).sum() - (pi[1:, None] * P[1:] * np.log(P_low)).sum())


def settling_horizon(chain: MarkovChain, horizon: float, init_scale: float, score_scale: float = 1.0) -> float:
    """End time of a flow meant to settle at θ_c²: ``horizon``, extended to 1.6 × the forecast end of the
    θ_c¹ plateau (:func:`plateau_time`) so that focus and dilution have run before it."""
    return max(horizon, 1.6 * plateau_time(chain, init_scale, score_scale))


def theta_c2_fit_error(chain: MarkovChain, P_hat: np.ndarray) -> float:
    """R4 (claim B14): max |P̂ − target| of a model's predicted rows P̂ (d, d) against θ_c²'s exact fit,
    the hub row P_0 for the hub and the averaged rare row P̄_low for every rare token."""
    low = [k for k in range(chain.d) if k != chain.hub]
    return float(
        max(np.abs(P_hat[chain.hub] - chain.P[chain.hub]).max(), np.abs(P_hat[low] - chain.P[low].mean(0)).max())
    )


def plateau_time(chain: MarkovChain, init_scale: float, score_scale: float = 1.0) -> float:
    """R2: end of the θ_c¹ plateau ≈ T₁ + (2|g|)⁻¹ log(1/ε²), up to O(1/|g|) (κ starts at O(ε²))."""
    g = abs(g_rate(chain, score_scale))
    return escape_time_origin(chain, init_scale) + (np.log(1 / init_scale**2) / (2 * g) if g > 0 else np.inf)


# ---- R3: focus, forecast from the parameters (claim B6) ------------------------------------------------

ONSET = 0.01  # the onset of focus: the first time some attention weight A_ik leaves π_k by this much


def rank_one_attention(chain: MarkovChain, a: np.ndarray, kappa, score_scale: float = 1.0) -> np.ndarray:
    """Attention on 𝓜₁ (W0 = a uᵀ, WQWKᵀ = κ uuᵀ): A_ik = π_k e^{cκa_ia_k} / Σ_l π_l e^{cκa_ia_l}.

    ``a`` (d,) or (n, d) and ``kappa`` scalar or (n,) give (d, d) or (n, d, d) (query i, key k); the
    model's attention at ``model.rank_one_params(a, b, κ, m)`` for any b and m (tested)."""
    a = np.asarray(a, dtype=float)
    kappa = np.asarray(kappa, dtype=float)
    logits = score_scale * kappa[..., None, None] * a[..., :, None] * a[..., None, :] + np.log(chain.pi)
    logits -= logits.max(-1, keepdims=True)
    w = np.exp(logits)
    return w / w.sum(-1, keepdims=True)


def focus_signs_kept(chain: MarkovChain, amp: np.ndarray, kappa: float, g: float, dA: np.ndarray) -> bool:
    """Whether amplitudes ``amp`` (d,) leave every checked sign of the tilt as at απ:
    sign(κ·a_i(a_k − πᵀa)) = sign(g)·sign(π_k − ‖π‖²) where |dA| ≥ 10⁻³ max|dA| (the entries that
    ``measure.sign_pattern_ok`` checks; ``dA`` the closed form :func:`dkappa_A`)."""
    pi = chain.pi
    moved = np.sign(kappa) * np.sign(np.outer(amp, amp - pi @ amp))
    predicted = np.sign(g) * np.sign(pi - (pi**2).sum())[None, :]
    relevant = np.abs(dA) > 1e-3 * np.abs(dA).max()
    return bool(np.all((moved == predicted)[relevant]))


@dataclass
class OnsetForecast:
    """R3: the onset of focus forecast from the parameters — the rank-one attention
    (:func:`rank_one_attention`) along the amplitudes' first-order response a(κ) = απ + κ·da/dκ
    (``spectrum.amplitude_response``), at the first κ (with the sign of g) where it leaves π by
    ``threshold``. Every field is nan / False when that κ is not reached by the scanned range."""

    kappa: float  # κ at the forecast onset
    amp: np.ndarray  # (d,) forecast amplitudes there
    A: np.ndarray  # (d, d) forecast attention there
    drift: float  # max |a − απ| / max απ: how far the amplitudes have been redistributed
    signs_kept: bool  # the redistribution flips no checked sign of the first-order tilt (focus_signs_kept)
    most_tilted_query: float  # query whose attention to the hub moves most with the sign of g
    hub_rise: float  # A_hub,hub − π_hub there: the frequent query's rise (g > 0) or fall (g < 0)
    entropy_fall: float  # H(π) − Σ_i π_i H(A_i·) there


def onset_forecast(
    chain: MarkovChain,
    response: np.ndarray,
    g: float,
    score_scale: float = 1.0,
    threshold: float = ONSET,
    n: int = 4000,
) -> OnsetForecast:
    """Forecast the onset of focus (:class:`OnsetForecast`) from the parameters: scan κ = sign(g)·[0, κ_max]
    with κ_max = 20·threshold/max|∂κA| (20 times the first-order onset) on ``n`` points."""
    pi, hub = chain.pi, chain.hub
    a_star = theta_c1(chain).a
    dA = dkappa_A(chain, score_scale)
    kappas = (np.sign(g) or 1.0) * np.linspace(0.0, 20 * threshold / np.abs(dA).max(), n)[1:]
    amps = a_star + kappas[:, None] * np.asarray(response)[None, :]  # (n, d)
    A = rank_one_attention(chain, amps, kappas, score_scale)  # (n, d, d)
    reached = np.flatnonzero(np.abs(A - pi).max((-1, -2)) >= threshold)
    if not len(reached):
        nan = float("nan")
        return OnsetForecast(nan, np.full_like(pi, nan), np.full((chain.d,) * 2, nan), nan, False, nan, nan, nan)
    j = int(reached[0])
    a_on, A_on = amps[j], A[j]
    entropy = -(A_on * np.log(A_on)).sum(-1)
    return OnsetForecast(
        kappa=float(kappas[j]),
        amp=a_on,
        A=A_on,
        drift=float(np.abs(a_on - a_star).max() / np.abs(a_star).max()),
        signs_kept=focus_signs_kept(chain, a_on, kappas[j], g, dA),
        most_tilted_query=float(np.argmax(np.sign(g) * (A_on[:, hub] - pi[hub]))),
        hub_rise=float(A_on[hub, hub] - pi[hub]),
        entropy_fall=float(chain.unigram_entropy() - pi @ entropy),
    )


def slope_bias_forecast(
    chain: MarkovChain,
    response: np.ndarray,
    g: float,
    kappa_max: float,
    init_scale: float,
    score_scale: float = 1.0,
    n: int = 400,
) -> float:
    """R3: relative error, max|slope − ∂κA| / max|∂κA|, that the least-squares slope of A − π on κ (with an
    intercept) makes over the linear window |κ| ≤ ``kappa_max`` (κ with the sign of g), forecast from the
    parameters.

    On the flow κ grows exponentially from O(ε²) (ε = ``init_scale``) and the stored times are uniform in t,
    so the window's κ are log-uniform on [ε², kappa_max]; the forecast fits :func:`rank_one_attention` along
    a(κ) = απ + κ·``response`` (``spectrum.amplitude_response``) on ``n`` such points: what the first-order
    response neglects (the softmax's κ² terms, the amplitudes' redistribution) biases the slope by this much."""
    sign = np.sign(g) or 1.0
    kappas = sign * np.geomspace(init_scale**2, abs(kappa_max), n)
    a_star = theta_c1(chain).a
    A = rank_one_attention(chain, a_star + kappas[:, None] * np.asarray(response)[None, :], kappas, score_scale)
    X = np.stack([np.ones(n), kappas], 1)
    slope = np.linalg.lstsq(X, (A - chain.pi).reshape(n, -1), rcond=None)[0][1].reshape(chain.d, chain.d)
    dA = dkappa_A(chain, score_scale)
    return float(np.abs(slope - dA).max() / np.abs(dA).max())


FOCUS_T_MAX = 2e5  # longest flow integrated for focus: chains with a slower attention mode do not focus by then


def focus_horizon(
    chain: MarkovChain,
    horizon: float,
    init_scale: float,
    score_scale: float = 1.0,
    factor: float = 1.35,
    cap: float = FOCUS_T_MAX,
) -> float:
    """End of a flow that covers focus: ``horizon``, extended to ``factor`` × :func:`plateau_time` and capped
    at ``cap`` (a chain with g ≈ 0 would need t ~ log(1/ε²)/|g| → ∞; the cap never shortens ``horizon``)."""
    return min(max(horizon, plateau_time(chain, init_scale, score_scale) * factor), max(horizon, cap))
