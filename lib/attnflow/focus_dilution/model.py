"""The one-layer transformer of the focus–dilution chapter and its exact population loss.

Spec focus_dilution.md §4.2–4.3 [reconstruction]. Parameters θ = (W0, WQ, WK, W1), a dict of
tensors (the same dict for the population loss, for ``attnflow.flow.integrate`` and for
discrete training with ``attnflow.train.train``):

    W0 (d, m)  embedding, row k = h_k          WQ, WK (m, m)  query / key
    W1 (m, d)  output projection               c = score_scale (1 in the reference runs)

Attention is computed for the last position only (the query); no residual, value matrix,
positional encoding or LayerNorm. Two forwards share the parameters:

* ``population_forward`` / :class:`PopulationLoss` — the N, s → ∞ limit: for query token i,
  A_ik = π_k e^{S_ik} / Σ_l π_l e^{S_il}, S = c W0 WQ WKᵀ W0ᵀ, P̂_i = softmax(W1ᵀ Σ_k A_ik h_k),
  L(θ) = −Σ_i π_i Σ_j P_ij log P̂_ij  (the boxed loss of §4.3);
* ``sequence_forward`` / ``sequence_loss`` — finite sequences (B, s + 1): attention of the last
  context token over the s context positions, cross-entropy against the next token.
"""
from __future__ import annotations

import numpy as np
import torch

from attnflow.focus_dilution.chain import MarkovChain

__all__ = ["PARAM_NAMES", "init_params", "rank_one_params", "population_forward", "PopulationLoss", "PopulationGrad",
           "sequence_forward", "sequence_loss", "hessian", "param_shapes"]

PARAM_NAMES = ("W0", "WQ", "WK", "W1")


def param_shapes(d: int, m: int) -> dict[str, tuple[int, int]]:
    """Shapes of θ for vocabulary size d and width m."""
    return {"W0": (d, m), "WQ": (m, m), "WK": (m, m), "W1": (m, d)}


def init_params(d: int, m: int, init_scale: float = 1e-3, seed: int = 1,
                dtype=torch.float64, device="cpu") -> dict[str, torch.Tensor]:
    """Small initialization: every entry i.i.d. N(0, ε²) (spec §4.2).

    Drawn as one vector from numpy's ``default_rng(seed)`` in the order W0, WQ, WK, W1 (row-major),
    exactly as the reference listing of Appendix A, so seed 1 gives the spec's trajectory.
    """
    shapes = param_shapes(d, m)
    flat = init_scale * np.random.default_rng(seed).standard_normal(sum(a * b for a, b in shapes.values()))
    theta, i = {}, 0
    for name, (r, c) in shapes.items():
        theta[name] = torch.as_tensor(flat[i:i + r * c].reshape(r, c), dtype=dtype, device=device)
        i += r * c
    return theta


def rank_one_params(a, b, kappa: float, m: int, u=None, dtype=torch.float64) -> dict[str, torch.Tensor]:
    """A point of the rank-one manifold 𝓜₁ (spec R2): W0 = a uᵀ, W1 = u bᵀ, WQ = q uᵀ... with
    u^T WQ WKᵀ u = κ, built as WQ = √|κ| u uᵀ, WK = sign(κ)√|κ| u uᵀ. u defaults to e₁ ∈ ℝᵐ."""
    a = torch.as_tensor(np.asarray(a), dtype=dtype)               # (d,)
    b = torch.as_tensor(np.asarray(b), dtype=dtype)               # (d,)
    u = torch.zeros(m, dtype=dtype) if u is None else torch.as_tensor(np.asarray(u), dtype=dtype)
    if u.abs().sum() == 0:
        u[0] = 1.0
    u = u / u.norm()
    s = float(np.sqrt(abs(kappa)))
    uu = torch.outer(u, u)                                        # (m, m)
    return {"W0": torch.outer(a, u), "WQ": s * uu, "WK": float(np.sign(kappa) or 1.0) * s * uu,
            "W1": torch.outer(u, b)}


def population_forward(theta: dict[str, torch.Tensor], P: torch.Tensor, pi: torch.Tensor,
                       score_scale: float = 1.0) -> dict[str, torch.Tensor]:
    """All intermediate quantities of the population model (spec §4.3), indexed by query token.

    Returns S (d, d) scores, A (d, d) attention rows, O (d, m) attended representations,
    Z (d, d) logits, P_hat (d, d) predictions and the loss L. Works batched over leading
    dimensions of θ (e.g. (T, d, m) for a whole trajectory).
    """
    W0, WQ, WK, W1 = (theta[n] for n in PARAM_NAMES)
    S = score_scale * (W0 @ WQ) @ (W0 @ WK).transpose(-1, -2)     # (…, d, d): c h_iᵀ WQ WKᵀ h_k
    A = torch.softmax(S + torch.log(pi), dim=-1)                  # (…, d, d): ∝ π_k e^{S_ik}
    O = A @ W0                                                    # (…, d, m): o_i = Σ_k A_ik h_k
    Z = O @ W1                                                    # (…, d, d): logits per query
    log_P_hat = torch.log_softmax(Z, dim=-1)
    L = -((pi[:, None] * P) * log_P_hat).sum((-1, -2))
    return {"S": S, "A": A, "O": O, "Z": Z, "P_hat": log_P_hat.exp(), "L": L}


class PopulationLoss:
    """L(θ) of spec §4.3 as a callable θ-dict → scalar, in float64 (for ``flow.integrate``).

        loss = PopulationLoss(chain, score_scale=1.0)
        flow.integrate(loss, init_params(chain.d, 8), t_eval, method="BDF")
    """

    def __init__(self, chain: MarkovChain, score_scale: float = 1.0, dtype=torch.float64, device="cpu"):
        self.chain = chain
        self.score_scale = float(score_scale)
        self.P, self.pi = chain.tensors(dtype, device)
        self.F = self.pi[:, None] * self.P                        # (d, d): joint Π P of (x_s, x_{s+1})
        self.log_pi = torch.log(self.pi)

    def __call__(self, theta: dict[str, torch.Tensor]) -> torch.Tensor:
        W0, WQ, WK, W1 = (theta[n] for n in PARAM_NAMES)
        S = self.score_scale * (W0 @ WQ) @ (W0 @ WK).transpose(-1, -2) + self.log_pi   # (…, d, d)
        Z = torch.softmax(S, dim=-1) @ W0 @ W1                                          # (…, d, d)
        return -(self.F * torch.log_softmax(Z, dim=-1)).sum((-1, -2))

    def forward(self, theta: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Intermediate quantities (see :func:`population_forward`)."""
        return population_forward(theta, self.P, self.pi, self.score_scale)


class PopulationGrad:
    """∇L(θ) of the population loss by the closed-form backward pass of spec §4.3, in numpy float64
    on the flat parameter vector (order W0, WQ, WK, W1, row-major — ``flow.Flattener``'s order).

    The adaptive solver calls the gradient thousands of times on tiny matrices, where numpy's
    per-operation cost (~1 µs) beats torch autograd's (~10–30 µs): this is the same gradient as
    ``torch.autograd`` on :class:`PopulationLoss` (tests/test_focus_model.py), ~10× cheaper.

        G_Z = Π(P̂ − P), ∇W1 = Oᵀ G_Z, G_O = G_Z W1ᵀ, G_A = G_O W0ᵀ,
        G_S = A ⊙ (G_A − rowsum(A ⊙ G_A)),  ∇W0 = Aᵀ G_O + c (G_S W0 Mᵀ + G_Sᵀ W0 M),
        ∇M = c W0ᵀ G_S W0,  ∇WQ = ∇M WK,  ∇WK = ∇Mᵀ WQ.
    """

    def __init__(self, chain: MarkovChain, m: int, score_scale: float = 1.0):
        self.P, self.pi, self.d, self.m, self.c = chain.P, chain.pi, chain.d, m, float(score_scale)
        self.log_pi = np.log(chain.pi)
        d = self.d
        self.cuts = np.cumsum([0, d * m, m * m, m * m, m * d])

    def __call__(self, y: np.ndarray) -> np.ndarray:
        d, m, c, k = self.d, self.m, self.c, self.cuts
        W0 = y[k[0]:k[1]].reshape(d, m)
        WQ = y[k[1]:k[2]].reshape(m, m)
        WK = y[k[2]:k[3]].reshape(m, m)
        W1 = y[k[3]:k[4]].reshape(m, d)
        M = WQ @ WK.T                                             # (m, m)
        S = c * (W0 @ M @ W0.T) + self.log_pi                     # (d, d)
        S -= S.max(1, keepdims=True)
        A = np.exp(S)
        A /= A.sum(1, keepdims=True)
        O = A @ W0                                                # (d, m)
        Z = O @ W1                                                # (d, d)
        Z -= Z.max(1, keepdims=True)
        P_hat = np.exp(Z)
        P_hat /= P_hat.sum(1, keepdims=True)
        G_Z = self.pi[:, None] * (P_hat - self.P)                 # (d, d)
        G_O = G_Z @ W1.T                                          # (d, m)
        G_A = G_O @ W0.T                                          # (d, d)
        G_S = A * (G_A - (A * G_A).sum(1, keepdims=True))         # (d, d)
        G_W0 = A.T @ G_O + c * (G_S @ W0 @ M.T + G_S.T @ W0 @ M)  # (d, m)
        G_M = c * (W0.T @ G_S @ W0)                               # (m, m)
        return np.concatenate([G_W0.ravel(), (G_M @ WK).ravel(), (G_M.T @ WQ).ravel(), (O.T @ G_Z).ravel()])


def sequence_forward(theta: dict[str, torch.Tensor], tokens: torch.Tensor,
                     score_scale: float = 1.0) -> dict[str, torch.Tensor]:
    """Finite-context forward for a batch of contexts x_1..x_s, tokens (B, s) int64.

    The query is the last position: scores (B, s) = c h_{x_s}ᵀ WQ WKᵀ h_{x_j}; attention (B, s) is
    their softmax over positions (the hook for logging attention); o (B, m); logits (B, d).
    """
    W0, WQ, WK, W1 = (theta[n] for n in PARAM_NAMES)
    H = W0[tokens]                                                # (B, s, m)
    q = H[:, -1] @ WQ                                             # (B, m)
    K = H @ WK                                                    # (B, s, m)
    scores = score_scale * torch.einsum("bm,bsm->bs", q, K)       # (B, s)
    attention = torch.softmax(scores, dim=-1)                     # (B, s)
    o = torch.einsum("bs,bsm->bm", attention, H)                  # (B, m)
    return {"scores": scores, "attention": attention, "o": o, "logits": o @ W1}   # logits (B, d)


def sequence_loss(theta: dict[str, torch.Tensor], batch: torch.Tensor, score_scale: float = 1.0) -> torch.Tensor:
    """Mean next-token cross-entropy on sequences (B, s + 1) from ``chain.sample_sequences``;
    as N, s → ∞ it tends to the population loss (spec §4.3, Q7)."""
    out = sequence_forward(theta, batch[:, :-1], score_scale)
    return torch.nn.functional.cross_entropy(out["logits"], batch[:, -1])


def hessian(loss, theta: dict[str, torch.Tensor]) -> tuple[np.ndarray, list[tuple[str, slice]]]:
    """∇²L at θ by autograd (one ``torch.func.hessian`` call), (n, n), with the layout
    [(name, slice)] of the flat parameter vector (order W0, WQ, WK, W1)."""
    from attnflow.flow import Flattener

    fl = Flattener({n: theta[n] for n in PARAM_NAMES})
    H = torch.func.hessian(lambda v: loss(fl.unflatten(v)))(fl.flatten(theta))    # (n, n)
    return H.detach().numpy(), [(n, sl) for n, (sl, _) in fl.layout.items()]
