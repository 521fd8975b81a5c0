"""The one-layer transformer of the focus–dilution chapter: one model, one forward.

Spec focus_dilution.md §4.2–4.3 [reconstruction]. Parameters θ = (W0, WQ, WK, W1), a dict of
tensors (the same dict for the population loss, for ``attnflow.flow.integrate`` and for
discrete training with ``attnflow.sweep.train``):

    W0 (d, m)  embedding, row k = h_k          WQ, WK (m, m)  query / key
    W1 (m, d)  output projection               c = score_scale (1 in the reference runs)

The model's hyper-parameters travel together as one :class:`ModelConfig` (``d_model``,
``init_scale``, ``score_scale``, ``seed``)::

    model = ModelConfig.from_cfg(cfg)            # a page's validated parameters
    theta = model.init(chain.d)                  # ε-small Gaussian initialization (seed)
    out = forward(theta, chain, model.score_scale)        # population limit
    out = forward(theta, Sequences(batch), c)             # sampled sequences (B, s + 1)
    out = forward(theta, Counts(query, log_counts), c)    # per-row key-token counts
    out.attention, out.logits, out.log_probs, loss(theta, data, c)

Attention is computed for the last position only (the query); no residual, value matrix,
positional encoding or LayerNorm. :func:`forward` is the one forward: every data form is the
same computation — scores c (h_q WQ)(h_k WK)ᵀ, attention softmax(scores + log key weight), attended
o = Σ A h_k, logits oᵀ W1 — applied to

* the population (N, s → ∞) limit, a :class:`~attnflow.focus_dilution.chain.MarkovChain` or
  :class:`Population`: one query per token i, keys = all tokens weighted by π, so
  A_ik = π_k e^{S_ik} / Σ_l π_l e^{S_il}, L(θ) = −Σ_i π_i Σ_j P_ij log P̂_ij (the boxed loss of §4.3);
* finite sequences, :class:`Sequences` (B, s + 1) (or a bare (B, s) context tensor): keys = the s
  context positions, loss = cross-entropy against the next token;
* counts, :class:`Counts`: one row per query with key-token counts n_k (weights log n_k), the
  sufficient statistic of a context for this model.

Fast paths kept (tested against :func:`forward`/autograd): :class:`PopulationLoss` (the fused
population loss the flows differentiate) and :class:`PopulationGrad` (the closed-form backward pass
of §4.3 in numpy, ~10× cheaper per call inside the ODE solver). :func:`cross_entropy` turns one
forward's output into the loss, so a caller that needs both (the stage quantities) runs one forward.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Union

import numpy as np
import torch

from attnflow.focus_dilution.chain import MarkovChain

__all__ = [
    "PARAM_NAMES",
    "ModelConfig",
    "Population",
    "Sequences",
    "Counts",
    "ModelOutput",
    "forward",
    "loss",
    "cross_entropy",
    "init_params",
    "rank_one_params",
    "PopulationLoss",
    "PopulationGrad",
    "hessian",
    "param_shapes",
]

PARAM_NAMES = ("W0", "WQ", "WK", "W1")


def param_shapes(d: int, m: int) -> dict[str, tuple[int, int]]:
    """Shapes of θ for vocabulary size d and width m."""
    return {"W0": (d, m), "WQ": (m, m), "WK": (m, m), "W1": (m, d)}


def init_params(
    d: int, m: int, init_scale: float = 1e-3, seed: int = 1, dtype=torch.float64, device="cpu"
) -> dict[str, torch.Tensor]:
    """Small initialization: every entry i.i.d. N(0, ε²) (spec §4.2).

    Drawn as one vector from numpy's ``default_rng(seed)`` in the order W0, WQ, WK, W1 (row-major),
    exactly as the reference listing of Appendix A, so seed 1 gives the spec's trajectory.
    """
    shapes = param_shapes(d, m)
    flat = init_scale * np.random.default_rng(seed).standard_normal(sum(a * b for a, b in shapes.values()))
    theta, i = {}, 0
    for name, (r, c) in shapes.items():
        theta[name] = torch.as_tensor(flat[i : i + r * c].reshape(r, c), dtype=dtype, device=device)
        i += r * c
    return theta


def rank_one_params(a, b, kappa: float, m: int, u=None, dtype=torch.float64) -> dict[str, torch.Tensor]:
    """A point of the rank-one manifold 𝓜₁ (spec R2): W0 = a uᵀ, W1 = u bᵀ, WQ = q uᵀ... with
    u^T WQ WKᵀ u = κ, built as WQ = √|κ| u uᵀ, WK = sign(κ)√|κ| u uᵀ. u defaults to e₁ ∈ ℝᵐ."""
    a = torch.as_tensor(np.asarray(a), dtype=dtype)  # (d,)
    b = torch.as_tensor(np.asarray(b), dtype=dtype)  # (d,)
    u = torch.zeros(m, dtype=dtype) if u is None else torch.as_tensor(np.asarray(u), dtype=dtype)
    if u.abs().sum() == 0:
        u[0] = 1.0
    u = u / u.norm()
    s = float(np.sqrt(abs(kappa)))
    uu = torch.outer(u, u)  # (m, m)
    return {"W0": torch.outer(a, u), "WQ": s * uu, "WK": float(np.sign(kappa) or 1.0) * s * uu, "W1": torch.outer(u, b)}


@dataclass(frozen=True)
class ModelConfig:
    """The model's hyper-parameters, passed as one object instead of four loose arguments.

    d_model m (width), init_scale ε (std of the i.i.d. Gaussian initialization), score_scale c,
    seed (of the initialization; 1 = the spec's listing). The defaults are the spec's reference.
    """

    d_model: int = 8
    init_scale: float = 1e-3
    score_scale: float = 1.0
    seed: int = 1

    @classmethod
    def from_cfg(cls, cfg, **overrides) -> "ModelConfig":
        """From a page's validated parameters (any object with these attribute names)."""
        kw = {k: getattr(cfg, k) for k in ("d_model", "init_scale", "score_scale", "seed") if hasattr(cfg, k)}
        kw.update(overrides)
        return cls(**kw)

    def with_(self, **changes) -> "ModelConfig":
        """A copy with some fields changed, e.g. ``model.with_(init_scale=model.init_scale / 10)``."""
        return replace(self, **changes)

    def init(self, d: int, dtype=torch.float64, device="cpu") -> dict[str, torch.Tensor]:
        """θ(0) for vocabulary size d (see :func:`init_params`)."""
        return init_params(d, self.d_model, self.init_scale, self.seed, dtype=dtype, device=device)

    def population_loss(self, chain: MarkovChain, dtype=torch.float64, device="cpu") -> "PopulationLoss":
        return PopulationLoss(chain, self.score_scale, dtype=dtype, device=device)


@dataclass(frozen=True)
class Population:
    """The population (N, s → ∞) data of a chain: P (d, d) and π (d,) as tensors."""

    P: torch.Tensor
    pi: torch.Tensor

    @classmethod
    def of(cls, chain: MarkovChain, dtype=torch.float64, device="cpu") -> "Population":
        P, pi = chain.tensors(dtype, device)
        return cls(P, pi)


@dataclass(frozen=True)
class Sequences:
    """Sampled sequences (B, s + 1) int64 (``chain.sample_sequences``): context x_1..x_s, target x_{s+1}."""

    tokens: torch.Tensor


@dataclass(frozen=True)
class Counts:
    """Contexts summarized by key-token counts: query (…, B) int64 token of each row, log_counts
    (…, B, d) log n_k of the context (−inf for absent tokens) and, for the loss, targets (…, B, d)
    the weight of each next token (rows of a batch weigh their share of the loss)."""

    query: torch.Tensor
    log_counts: torch.Tensor
    targets: torch.Tensor | None = None


Data = Union[MarkovChain, Population, Sequences, Counts, torch.Tensor]


@dataclass
class ModelOutput:
    """Named intermediate values of one forward (keys along the last axis of scores/attention).

    scores (…, Q, K) and attention (…, Q, K): Q = d query tokens (population), B rows (counts) or B
    sequences (Q = B, K = s positions); attended (…, Q, m); logits and log_probs (…, Q, d)."""

    scores: torch.Tensor
    attention: torch.Tensor
    attended: torch.Tensor
    logits: torch.Tensor
    log_probs: torch.Tensor


def _as_population(data, dtype, device) -> Population:
    return data if isinstance(data, Population) else Population.of(data, dtype, device)


def forward(theta: dict[str, torch.Tensor], data: Data, score_scale: float = 1.0) -> ModelOutput:
    """The model's forward for any data form (see the module docstring); batched over leading
    dimensions of θ (e.g. (T, d, m) for a whole trajectory) in the population and counts forms."""
    W0, WQ, WK, W1 = (theta[n] for n in PARAM_NAMES)
    if isinstance(data, (MarkovChain, Population)):
        pop = _as_population(data, W0.dtype, W0.device)
        S = score_scale * (W0 @ WQ) @ (W0 @ WK).transpose(-1, -2)  # (…, d, d): c h_iᵀ WQ WKᵀ h_k
        A = torch.softmax(S + torch.log(pop.pi), dim=-1)  # (…, d, d): ∝ π_k e^{S_ik}
        O = A @ W0  # (…, d, m): o_i = Σ_k A_ik h_k
    elif isinstance(data, Counts):
        Hq = W0[..., data.query, :] if W0.dim() == 2 else torch.stack([w[data.query] for w in W0])  # (…, B, m)
        S = score_scale * (Hq @ WQ) @ (W0 @ WK).transpose(-1, -2)  # (…, B, d): c h_qᵀ WQ WKᵀ h_k
        A = torch.softmax(S + data.log_counts, dim=-1)  # (…, B, d): ∝ n_k e^{S_qk}
        O = A @ W0  # (…, B, m)
    else:
        tokens = data.tokens[:, :-1] if isinstance(data, Sequences) else data  # (B, s) contexts
        H = W0[tokens]  # (B, s, m)
        q = H[:, -1] @ WQ  # (B, m): the query is the last position
        K = H @ WK  # (B, s, m)
        S = score_scale * torch.einsum("bm,bsm->bs", q, K)  # (B, s)
        A = torch.softmax(S, dim=-1)  # (B, s) over positions
        O = torch.einsum("bs,bsm->bm", A, H)  # (B, m)
    Z = O @ W1  # (…, Q, d) logits
    return ModelOutput(scores=S, attention=A, attended=O, logits=Z, log_probs=torch.log_softmax(Z, dim=-1))


def loss(theta: dict[str, torch.Tensor], data: Data, score_scale: float = 1.0) -> torch.Tensor:
    """The model's loss on ``data``: the population cross-entropy L(θ) (…,) for a chain, the mean
    next-token cross-entropy for :class:`Sequences`, −Σ targets·log P̂ for :class:`Counts`."""
    return cross_entropy(forward(theta, data, score_scale), data)


def cross_entropy(out: ModelOutput, data: Data) -> torch.Tensor:
    """The loss of a forward's output ``out`` on the ``data`` it was computed for (see :func:`loss`)."""
    if isinstance(data, (MarkovChain, Population)):
        pop = _as_population(data, out.logits.dtype, out.logits.device)
        return -((pop.pi[:, None] * pop.P) * out.log_probs).sum((-1, -2))
    if isinstance(data, Counts):
        if data.targets is None:
            raise ValueError("Counts.targets is needed for the loss (the weight of each next token per row)")
        return -(data.targets * out.log_probs).sum((-1, -2))
    if not isinstance(data, Sequences):
        raise TypeError("the sequence loss needs Sequences (B, s + 1) with the target as last token")
    return torch.nn.functional.cross_entropy(out.logits, data.tokens[:, -1])


class PopulationLoss:
    """L(θ) of spec §4.3 as a callable θ-dict → scalar, in float64 (for ``flow.integrate``): the fast
    path of ``loss(theta, chain)`` with the chain's tensors computed once.

        loss = PopulationLoss(chain, score_scale=1.0)
        flow.integrate(loss, init_params(chain.d, 8), t_eval, method="BDF")
    """

    def __init__(self, chain: MarkovChain, score_scale: float = 1.0, dtype=torch.float64, device="cpu"):
        self.chain = chain
        self.score_scale = float(score_scale)
        self.P, self.pi = chain.tensors(dtype, device)
        self.F = self.pi[:, None] * self.P  # (d, d): joint Π P of (x_s, x_{s+1})
        self.log_pi = torch.log(self.pi)

    def __call__(self, theta: dict[str, torch.Tensor]) -> torch.Tensor:
        W0, WQ, WK, W1 = (theta[n] for n in PARAM_NAMES)
        S = self.score_scale * (W0 @ WQ) @ (W0 @ WK).transpose(-1, -2) + self.log_pi  # (…, d, d)
        Z = torch.softmax(S, dim=-1) @ W0 @ W1  # (…, d, d)
        return -(self.F * torch.log_softmax(Z, dim=-1)).sum((-1, -2))

    @property
    def population(self) -> Population:
        """The chain's tensors as the :func:`forward` data form."""
        return Population(self.P, self.pi)


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
        W0 = y[k[0] : k[1]].reshape(d, m)
        WQ = y[k[1] : k[2]].reshape(m, m)
        WK = y[k[2] : k[3]].reshape(m, m)
        W1 = y[k[3] : k[4]].reshape(m, d)
        M = WQ @ WK.T  # (m, m)
        S = c * (W0 @ M @ W0.T) + self.log_pi  # (d, d)
        S -= S.max(1, keepdims=True)
        A = np.exp(S)
        A /= A.sum(1, keepdims=True)
        O = A @ W0  # (d, m)
        Z = O @ W1  # (d, d)
        Z -= Z.max(1, keepdims=True)
        P_hat = np.exp(Z)
        P_hat /= P_hat.sum(1, keepdims=True)
        G_Z = self.pi[:, None] * (P_hat - self.P)  # (d, d)
        G_O = G_Z @ W1.T  # (d, m)
        G_A = G_O @ W0.T  # (d, d)
        G_S = A * (G_A - (A * G_A).sum(1, keepdims=True))  # (d, d)
        G_W0 = A.T @ G_O + c * (G_S @ W0 @ M.T + G_S.T @ W0 @ M)  # (d, m)
        G_M = c * (W0.T @ G_S @ W0)  # (m, m)
        return np.concatenate([G_W0.ravel(), (G_M @ WK).ravel(), (G_M.T @ WQ).ravel(), (O.T @ G_Z).ravel()])


def hessian(loss, theta: dict[str, torch.Tensor]) -> tuple[np.ndarray, list[tuple[str, slice]]]:
    """∇²L at θ by autograd (one ``torch.func.hessian`` call), (n, n), with the layout
    [(name, slice)] of the flat parameter vector (order W0, WQ, WK, W1)."""
    from attnflow.flow import Flattener

    fl = Flattener({n: theta[n] for n in PARAM_NAMES})
    H = torch.func.hessian(lambda v: loss(fl.unflatten(v)))(fl.flatten(theta))  # (n, n)
    return H.detach().numpy(), [(n, sl) for n, (sl, _) in fl.layout.items()]
