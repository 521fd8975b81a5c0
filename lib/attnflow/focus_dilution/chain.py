"""Markov chains of the focus–dilution chapter (spec focus_dilution.md §5).

A chain is a transition matrix P (d, d) with a unique, strictly positive stationary
distribution π (πᵀP = πᵀ). Three ways to build one:

    hub_family(n_low=4, a_h=0.5, b_h=0.3, c_cyc=0.4, delta=0.1)   # the reference family, §5.2
    dirichlet_chain(d=6, seed=0)                                    # random rows (claim B17)
    from_matrix(P)                                                  # any user chain, validated

Every constructor validates: a zero row, a row not summing to 1, a negative entry or a chain
without a unique stationary distribution (reducible, or a transient token) raises
:class:`ChainError` naming the row or token, the value received and what is allowed.
``sample_sequences`` draws finite token sequences for finite-sample training (spec §5.2, Q7).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

__all__ = [
    "MarkovChain",
    "ChainError",
    "from_matrix",
    "hub_family",
    "dirichlet_chain",
    "stationary",
    "asymmetry_direction",
    "max_delta",
    "sample_sequences",
    "REFERENCE",
]

ROW_TOL = 1e-9  # a row sum may differ from 1 by this much (float input), then it is renormalised
# The reference chain of every regression target (spec §5.2 defaults, δ = 0).
REFERENCE = dict(n_low=4, a_h=0.5, b_h=0.3, c_cyc=0.4, delta=0.0)


class ChainError(ValueError):
    """The transition matrix is not a valid chain with a unique positive stationary distribution."""


@dataclass(frozen=True)
class MarkovChain:
    """A validated Markov chain: P (d, d) row-stochastic, π (d,) its stationary distribution."""

    P: np.ndarray  # (d, d) transition matrix, P[i, j] = Pr(next = j | now = i)
    pi: np.ndarray  # (d,) stationary distribution, πᵀP = πᵀ, π > 0
    name: str = "user"
    meta: dict = field(default_factory=dict)  # construction parameters (family constants, seed)

    @property
    def d(self) -> int:
        """Vocabulary size d."""
        return self.P.shape[0]

    @property
    def ell(self) -> np.ndarray:
        """ℓ = log π − mean(log π) 1: centred log-frequencies (spec R2), (d,)."""
        lp = np.log(self.pi)
        return lp - lp.mean()

    @property
    def hub(self) -> int:
        """The most frequent token (token 0 in the hub family)."""
        return int(np.argmax(self.pi))

    @property
    def rare(self) -> np.ndarray:
        """The other tokens, every token but :attr:`hub` (the rare tokens of the hub family), ascending."""
        return np.flatnonzero(np.arange(self.d) != self.hub)

    def unigram_entropy(self) -> float:
        """H(π) = −Σ π_k log π_k: the loss at the unigram saddle θ_c¹ (claim B4)."""
        return float(-(self.pi * np.log(self.pi)).sum())

    def bigram_loss(self) -> float:
        """−Σ_i π_i Σ_j P_ij log P_ij: the population optimum (the model predicts P exactly)."""
        logP = np.log(np.where(self.P > 0, self.P, 1.0))
        return float(-(self.pi[:, None] * self.P * logP).sum())

    def tensors(self, dtype=torch.float64, device="cpu") -> tuple[torch.Tensor, torch.Tensor]:
        """(P, π) as torch tensors."""
        return (
            torch.as_tensor(self.P, dtype=dtype, device=device),
            torch.as_tensor(self.pi, dtype=dtype, device=device),
        )


def stationary(P: np.ndarray) -> np.ndarray:
    """The unique stationary distribution π of P, (d,); ChainError if it is not unique or not
    strictly positive (a reducible chain, or a token that is never revisited)."""
    d = P.shape[0]
    # Null space of (Pᵀ − I): its dimension is the number of closed communicating classes.
    _, s, Vt = np.linalg.svd(P.T - np.eye(d))
    null = int(np.sum(s < 1e-10 * max(1.0, s.max())))
    if null != 1:
        raise ChainError(
            f"the chain has {null} independent stationary distributions; a unique one is required "
            f"(the chain must have a single closed class of tokens). Received P =\n{np.round(P, 4)}"
        )
    pi = Vt[-1]
    pi = pi / pi.sum()
    if np.any(pi <= 1e-12):
        bad = [int(k) for k in np.flatnonzero(pi <= 1e-12)]
        raise ChainError(
            f"token(s) {bad} have stationary probability {np.round(pi[bad], 14).tolist()}: they are never "
            "visited in stationarity; allowed: an irreducible chain (every π_k > 0), since the model "
            "attends with weights ∝ π_k and the closed forms use log π"
        )
    return pi


def from_matrix(P, name: str = "user", meta: dict | None = None) -> MarkovChain:
    """Validate a user transition matrix (nested lists, numpy or torch) and build the chain."""
    P = np.array(P.tolist() if hasattr(P, "tolist") else P, dtype=np.float64)
    if P.ndim != 2 or P.shape[0] != P.shape[1] or P.shape[0] < 2:
        raise ChainError(f"P must be a square matrix with d ≥ 2 rows, received shape {P.shape}")
    if not np.all(np.isfinite(P)):
        raise ChainError("P has non-finite entries; allowed: probabilities in [0, 1]")
    if np.any(P < 0):
        i, j = np.argwhere(P < 0)[0]
        raise ChainError(f"P[{i}, {j}] = {P[i, j]:.6g} is negative; allowed: probabilities in [0, 1]")
    sums = P.sum(1)
    for i, s in enumerate(sums):
        if s == 0:
            raise ChainError(f"row {i} of P is zero (token {i} has no successor); every row must sum to 1")
        if abs(s - 1) > ROW_TOL:
            raise ChainError(f"row {i} of P sums to {s:.10g}; every row must sum to 1 (within {ROW_TOL:g})")
    P = P / sums[:, None]
    return MarkovChain(P=P, pi=stationary(P), name=name, meta=dict(meta or {}))


def asymmetry_direction(n_low: int, seed: int = 0) -> np.ndarray:
    """ξ: a centred standard Gaussian vector of the n low tokens (spec §5.2; numpy seed 0 as in
    the reference listing, so δ-targets are comparable), (n_low,)."""
    xi = np.random.default_rng(seed).standard_normal(n_low)
    return xi - xi.mean()


def hub_family(
    n_low: int = 4, a_h: float = 0.5, b_h: float = 0.3, c_cyc: float = 0.4, delta: float = 0.0, xi_seed: int = 0
) -> MarkovChain:
    """The hub + low-frequency family of spec §5.2 (token 0 = hub, 1..n = low tokens).

    Hub row: P_00 = a_h, P_0j = (1 − a_h)/n. Low row j: P_j0 = b_h (1 + δ ξ_j); the remaining mass
    is spread (1 − c_cyc)/n uniformly over the low tokens plus c_cyc on the cyclic successor
    σ(j) = j mod n + 1. δ = 0 makes the low tokens exchangeable in frequency (claim B8).
    """
    for name, v, lo, hi in (("a_h", a_h, 0.0, 1.0), ("b_h", b_h, 0.0, 1.0), ("c_cyc", c_cyc, 0.0, 1.0)):
        if not (lo <= v < hi) or (name == "b_h" and v == 0):
            raise ChainError(f"{name} = {v!r} is outside the allowed range {'(0, 1)' if name == 'b_h' else '[0, 1)'}")
    if int(n_low) != n_low or n_low < 2:
        raise ChainError(f"n_low = {n_low!r}; allowed: an integer ≥ 2 (at least two low-frequency tokens)")
    n, d = int(n_low), int(n_low) + 1
    xi = asymmetry_direction(n, xi_seed)
    P = np.zeros((d, d))
    P[0, 0] = a_h
    P[0, 1:] = (1 - a_h) / n
    for j in range(1, d):
        b_j = b_h * (1 + delta * xi[j - 1])
        if not 0 < b_j < 1:
            raise ChainError(
                f"delta = {delta!r} makes P[{j}, 0] = b_h (1 + δ ξ_{j}) = {b_j:.4g} leave (0, 1) "
                f"(ξ = {np.round(xi, 3).tolist()}); allowed for b_h = {b_h}: "
                f"{-max_delta(b_h, -xi):.3g} < δ < {max_delta(b_h, xi):.3g}"
            )
        P[j, 0] = b_j
        P[j, 1:] = (1 - b_j) * (1 - c_cyc) / n
        P[j, 1 + (j % n)] += (1 - b_j) * c_cyc
    meta = dict(n_low=n, a_h=a_h, b_h=b_h, c_cyc=c_cyc, delta=delta, xi_seed=xi_seed, xi=xi)
    return from_matrix(P, name=f"hub family (n={n}, a_h={a_h:g}, b_h={b_h:g}, c_cyc={c_cyc:g}, δ={delta:g})", meta=meta)


def max_delta(b_h: float, xi: np.ndarray) -> float:
    """Largest δ ≥ 0 keeping every P_j0 = b_h (1 + δ ξ_j) inside (0, 1)."""
    bounds = [(1 / b_h - 1) / x if x > 0 else -1 / x for x in xi if x != 0]
    return float(min(bounds)) if bounds else float("inf")


def dirichlet_chain(d: int, seed: int = 0, concentration: float = 1.0) -> MarkovChain:
    """Rows i.i.d. Dirichlet(concentration·1) from numpy's default_rng(seed) — the random d = 6
    chain of claim B17 is ``dirichlet_chain(6, seed=0)``."""
    if int(d) != d or d < 2:
        raise ChainError(f"d = {d!r}; allowed: an integer ≥ 2")
    P = np.random.default_rng(seed).dirichlet(np.full(int(d), float(concentration)), size=int(d))
    return from_matrix(P, name=f"Dirichlet chain (d={d}, seed={seed})", meta=dict(d=d, seed=seed))


def sample_sequences(
    chain: MarkovChain, n_samples: int, seq_len: int, generator: torch.Generator | None = None
) -> torch.Tensor:
    """N token sequences of length s + 1 started in stationarity, (N, s + 1) int64.

    Columns 0..s−1 are the context x_1..x_s (the last one is the query); column s is the target
    x_{s+1}. For finite-sample training of ``model.loss`` on ``model.Sequences`` (spec §5.2, Q7).
    """
    P, pi = chain.tensors()
    x = torch.empty(n_samples, seq_len + 1, dtype=torch.long)
    x[:, 0] = torch.multinomial(pi, n_samples, replacement=True, generator=generator)  # (N,)
    for t in range(1, seq_len + 1):
        x[:, t] = torch.multinomial(P[x[:, t - 1]], 1, generator=generator).squeeze(1)  # (N,)
    return x
