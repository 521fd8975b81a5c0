"""Closed forms of the focus–dilution stages (spec focus_dilution.md §6, R1–R5) [reconstruction].

All functions take a :class:`~attnflow.focus_dilution.chain.MarkovChain` and return numpy values;
``attnflow.focus_dilution.symbolic`` derives each of them with sympy and the tests compare them
with autograd and with the integrated flow on random chains.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnflow.focus_dilution.chain import MarkovChain

__all__ = ["B_matrix", "sigma0", "sigma0_euler", "escape_time_origin", "ThetaC1", "theta_c1", "g_rate",
           "dkappa_A", "dkappa_A_at", "M_perp", "theta_c2_loss", "plateau_time", "origin_spectrum"]


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


@dataclass
class ThetaC1:
    """R2: the unigram saddle θ_c¹ on the rank-one manifold (κ = 0)."""

    alpha: float        # α = (‖ℓ‖/‖π‖³)^{1/2}
    a: np.ndarray       # (d,) embedding amplitudes a* = α π
    b: np.ndarray       # (d,) output amplitudes b* = ℓ / (α ‖π‖²)
    W0_norm: float      # ‖W0‖_F = ‖a*‖ = (‖ℓ‖/‖π‖)^{1/2}
    loss: float         # L(θ_c¹) = H(π)


def theta_c1(chain: MarkovChain) -> ThetaC1:
    """Claim B4: θ_c¹ (W0 = a* uᵀ, W1 = u b*ᵀ, κ = 0) where P̂_i = softmax(ℓ) = π for every query."""
    pi, ell = chain.pi, chain.ell
    npi = np.linalg.norm(pi)
    alpha = float(np.sqrt(np.linalg.norm(ell) / npi**3))
    return ThetaC1(alpha=alpha, a=alpha * pi, b=ell / (alpha * npi**2),
                   W0_norm=float(np.sqrt(np.linalg.norm(ell) / npi)), loss=chain.unigram_entropy())


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
    P_low = P[1:].mean(0)                                   # (d,) averaged low-token row
    return float(-pi[0] * (P[0] * np.log(P[0])).sum() - (pi[1:, None] * P[1:] * np.log(P_low)).sum())


def plateau_time(chain: MarkovChain, init_scale: float, score_scale: float = 1.0) -> float:
    """R2: end of the θ_c¹ plateau ≈ T₁ + (2|g|)⁻¹ log(1/ε²), up to O(1/|g|) (κ starts at O(ε²))."""
    g = abs(g_rate(chain, score_scale))
    return escape_time_origin(chain, init_scale) + (np.log(1 / init_scale**2) / (2 * g) if g > 0 else np.inf)
