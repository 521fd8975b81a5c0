"""One-layer self-attention with a collapsed or factorized QK and OV circuit (spec §4).

Names [paper]; formulas [reconstruction] after Elhage et al. (2021). Prediction is read at the
last position (the query token x_T):

    s_i = σ_s · e_{x_T}ᵀ W_QK e_{x_i},   p = softmax(s),   z = W_OV Σ_i p_i e_{x_i},
    L = Σ_samples w · (−log softmax(z)_y).

``parametrization`` picks each circuit: CA/FA = collapsed W_QK (d×d) or factorized W_Q W_Kᵀ
(W_Q, W_K: d×d_h); CO/FO = collapsed W_OV (K×d) or factorized W_O W_V (W_O: K×d_h,
W_V: d_h×d). The embedding e (V×d, orthonormal rows) is a fixed buffer. The two circuits are
two parameter groups, so η_QK and η_OV are set independently (:meth:`SelfAttention.groups` for
``attnflow.train``, :meth:`SelfAttention.rates` for ``attnflow.flow``).

    model = SelfAttention(ModelConfig("FAFO", vocab_size=V, n_classes=K))
    out = model(batch.tokens)             # out.logits (B, K), out.attn (B, T), out.scores (B, T)
    loss = model.loss(batch)              # weighted cross-entropy (population or sampled)

One forward (issue 14): :func:`forward` evaluates P models at once from their collapsed circuits
(leading model axis; one model is P = 1). ``SelfAttention.forward`` (the float64 theory flows,
through ``functional_loss``) and ``stack.ModelStack.forward`` (batched sweeps: evaluation, ERASER
deletions) both call it, so the two paths share one summation order — the stack's: the token
score table S = σ_s E W_QK Eᵀ (P, V, V) is gathered at (x_T, x_i), and the logits sum the
attention mass per vocabulary token, z = Σ_v (Σ_{i: x_i = v} p_i) W_OV e_v.
``ModelStack.bag_forward`` is an exact counts-based fast path for training, tested equal to it.

``realdata.forward`` is a different model family and keeps its own forward: learned embeddings
(d < V), the query is the mean embedding of the question, keys only after ``<sep>``, and a span
pointer head; it shares this module's :class:`Output`, parameter names and
:func:`effective_circuits`, not the token-table arithmetic (which needs fixed embeddings).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, NamedTuple

import torch
from torch import nn

from attnflow.params import ParameterError

# name -> (factorized QK, factorized OV)
PARAMETRIZATIONS = {"CACO": (False, False), "CAFO": (False, True), "FACO": (True, False), "FAFO": (True, True)}
QK_NAMES = {False: ("W_qk",), True: ("W_q", "W_k")}
OV_NAMES = {False: ("W_ov",), True: ("W_o", "W_v")}


def parameter_names(parametrization: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(QK names, OV names) of a parametrization's parameters, e.g. FACO -> (("W_q", "W_k"), ("W_ov",))."""
    fqk, fov = circuits(parametrization)
    return QK_NAMES[fqk], OV_NAMES[fov]


def circuits(parametrization: str) -> tuple[bool, bool]:
    """(factorized QK, factorized OV) of a parametrization name; clear error otherwise."""
    if parametrization not in PARAMETRIZATIONS:
        raise ParameterError(
            f"parameter 'parametrization': received {parametrization!r}; allowed: one of {', '.join(PARAMETRIZATIONS)}"
        )
    return PARAMETRIZATIONS[parametrization]


def effective_circuits(params: Mapping[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """The collapsed circuits (W_QK, W_OV) of a parameter set, the one place the factors are multiplied:
    W_QK = W_Q W_Kᵀ (or W_qk), W_OV = W_O W_V (or W_ov). Any leading model axes are kept:
    (..., d, d_h) factors give (..., d, d) — one model or a stack of P."""
    W_qk = params["W_q"] @ params["W_k"].transpose(-1, -2) if "W_q" in params else params["W_qk"]
    W_ov = params["W_o"] @ params["W_v"] if "W_o" in params else params["W_ov"]
    return W_qk, W_ov


def orthogonal_embedding(
    vocab_size: int, d: int | None = None, seed: int | None = None, dtype=torch.float64
) -> torch.Tensor:
    """Orthonormal token embeddings (V, d): one-hot when ``seed`` is None, else random orthogonal."""
    d = vocab_size if d is None else d
    if d < vocab_size:
        raise ParameterError(
            f"parameter 'd': orthonormal embeddings of {vocab_size} tokens need d ≥ {vocab_size}; received {d}"
        )
    if seed is None:
        return torch.eye(vocab_size, d, dtype=dtype)
    g = torch.Generator().manual_seed(seed)
    Q, _ = torch.linalg.qr(torch.randn(d, vocab_size, generator=g, dtype=torch.float64))  # (d, V)
    return Q.T.contiguous().to(dtype)  # (V, d)


@dataclass
class ModelConfig:
    """The model of spec §4; ``d``/``d_h`` default to V (one-hot embeddings, full-rank heads)."""

    parametrization: str  # CACO, CAFO, FACO or FAFO
    vocab_size: int  # V
    n_classes: int  # K output classes
    d: int | None = None  # embedding dimension (≥ V); None → V
    d_h: int | None = None  # head dimension of the factors; None → d
    attend_self: bool = False  # the query attends to its own position
    score_scale: float = 1.0  # σ_s, e.g. 1/√d_h (spec §4.1: optional)
    embedding_seed: int | None = None  # None: one-hot embedding; int: random orthogonal
    dtype: torch.dtype = torch.float64

    def __post_init__(self):
        circuits(self.parametrization)
        self.d = self.vocab_size if self.d is None else self.d
        self.d_h = self.d if self.d_h is None else self.d_h
        if self.d_h < 1:
            raise ParameterError(f"parameter 'd_h': received {self.d_h}; allowed: an integer ≥ 1")
        if not self.score_scale > 0:
            raise ParameterError(f"parameter 'score_scale': received {self.score_scale}; allowed: a number > 0")


class Output(NamedTuple):
    """What every sharpening attention forward returns (:func:`forward`, hence ``SelfAttention``
    and ``stack.ModelStack``, and ``realdata.forward``): shapes carry the caller's leading axes
    ``...`` — none for one ``SelfAttention``, the model axis P for :func:`forward`, a stack or a
    real-data sweep."""

    logits: torch.Tensor  # (..., B, K); (..., B, T) for a span pointer (−inf off the passage)
    attn: torch.Tensor  # (..., B, T) attention probabilities of the query (0 on masked / deleted keys)
    scores: torch.Tensor  # (..., B, T) attention scores (−inf on masked / deleted keys)


def forward(
    emb: torch.Tensor,
    W_qk: torch.Tensor,
    W_ov: torch.Tensor,
    tokens: torch.Tensor,
    *,
    score_scale: float = 1.0,
    attend_self: bool = False,
    keep_mask: torch.Tensor | None = None,
) -> Output:
    """The synthetic model's forward for P models at once (spec §4; one model is P = 1).

    ``emb`` (V, d) fixed embedding, ``W_qk`` (P, d, d) and ``W_ov`` (P, K, d) collapsed circuits
    (:func:`effective_circuits`), ``tokens`` (P, B, T) — or (B, T), shared by the P models. The
    query is the last token; its own position is masked unless ``attend_self``. ``keep_mask``
    (bool, broadcastable to (P, B, T)) removes keys where False: without positional encoding this
    *is* deleting those tokens (ERASER's x∖r and r). Returns logits (P, B, K), attn and scores
    (P, B, T), −inf / 0 on masked keys.

    Token coordinates: every score is a gather from S = σ_s E W_QK Eᵀ (P, V, V),
    s_bt = S[x_bT, x_bt], and the logits come from the attention mass per vocabulary token,
    z_b = Σ_v (Σ_{t: x_bt = v} p_bt) O_v with O = E W_OVᵀ (P, V, K) — far cheaper than
    (B, T, d) products, and written with ops torch.func differentiates twice (flow Hessians).
    """
    P, V = W_qk.shape[0], emb.shape[0]
    if tokens.dim() == 2:
        tokens = tokens.expand(P, -1, -1)  # (P, B, T) shared
    _, B, T = tokens.shape
    S = score_scale * emb @ W_qk @ emb.T  # (P, V, V) token scores
    O = emb @ W_ov.transpose(-1, -2)  # (P, V, K) token logits
    flat = tokens[..., -1:] * V + tokens  # (P, B, T) index into V·V
    scores = S.reshape(P, V * V).gather(1, flat.reshape(P, B * T)).reshape(P, B, T)
    masked = torch.zeros_like(tokens, dtype=torch.bool)
    if not attend_self:
        masked[..., -1] = True
    if keep_mask is not None:
        masked = masked | ~keep_mask
    scores = scores.masked_fill(masked, float("-inf"))
    attn = torch.softmax(scores, dim=-1)  # (P, B, T)
    mass = torch.zeros(P, B, V, dtype=attn.dtype, device=attn.device).scatter_add(2, tokens, attn)  # (P, B, V)
    return Output(mass @ O, attn, scores)  # logits (P, B, K)


class SelfAttention(nn.Module):
    """Single-head self-attention read at the last position, with circuit switch (spec §4.2)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.factorized_qk, self.factorized_ov = circuits(cfg.parametrization)
        d, d_h, K = cfg.d, cfg.d_h, cfg.n_classes
        self.register_buffer("emb", orthogonal_embedding(cfg.vocab_size, d, cfg.embedding_seed, cfg.dtype))  # (V, d)

        def z(*shape):
            return nn.Parameter(torch.zeros(*shape, dtype=cfg.dtype))

        if self.factorized_qk:
            self.W_q, self.W_k = z(d, d_h), z(d, d_h)
        else:
            self.W_qk = z(d, d)
        if self.factorized_ov:
            self.W_o, self.W_v = z(K, d_h), z(d_h, d)
        else:
            self.W_ov = z(K, d)

    # -- circuits -------------------------------------------------------------------------------
    @property
    def qk_names(self) -> tuple[str, ...]:
        return QK_NAMES[self.factorized_qk]

    @property
    def ov_names(self) -> tuple[str, ...]:
        return OV_NAMES[self.factorized_ov]

    def groups(self, lr_qk: float, lr_ov: float) -> dict[str, tuple[list[nn.Parameter], float]]:
        """Parameter groups {"qk": (params, η_QK), "ov": (params, η_OV)} for ``attnflow.train``."""
        return {
            "qk": ([getattr(self, n) for n in self.qk_names], lr_qk),
            "ov": ([getattr(self, n) for n in self.ov_names], lr_ov),
        }

    def rates(self, lr_qk: float, lr_ov: float) -> dict[str, float]:
        """Learning rate per parameter name, for ``attnflow.flow.integrate``."""
        return {**{n: lr_qk for n in self.qk_names}, **{n: lr_ov for n in self.ov_names}}

    def state(self) -> dict[str, torch.Tensor]:
        """Detached copies of the parameters (name -> tensor), the flow's state θ."""
        return {n: p.detach().clone() for n, p in self.named_parameters()}

    def load(self, theta: Mapping[str, torch.Tensor]) -> "SelfAttention":
        """Copy a state θ (e.g. ``FlowResult.state(i)``) into the parameters."""
        with torch.no_grad():
            for n, p in self.named_parameters():
                p.copy_(theta[n])
        return self

    # -- forward --------------------------------------------------------------------------------
    def forward(self, tokens: torch.Tensor) -> Output:
        """Logits (B, K), attention and scores (B, T) of tokens (B, T): :func:`forward` at P = 1."""
        W_qk, W_ov = effective_circuits({n: getattr(self, n) for n in self.qk_names + self.ov_names})
        out = forward(
            self.emb,
            W_qk[None],
            W_ov[None],
            tokens[None],
            score_scale=self.cfg.score_scale,
            attend_self=self.cfg.attend_self,
        )
        return Output(*(t[0] for t in out))

    def loss(self, batch) -> torch.Tensor:
        """Weighted cross-entropy Σ w_i CE_i (a ``data.Batch``: population or sampled)."""
        logits = self(batch.tokens).logits  # (B, K)
        ce = torch.nn.functional.cross_entropy(logits, batch.targets, reduction="none")  # (B,)
        return (batch.weights.to(ce.dtype) * ce).sum()

    def functional_loss(self, batch):
        """θ ↦ L(θ) for ``attnflow.flow.integrate`` (torch.func: autograd gradient and Hessian)."""
        buffers = dict(self.named_buffers())

        def loss(theta: Mapping[str, torch.Tensor]) -> torch.Tensor:
            out = torch.func.functional_call(self, {**theta, **buffers}, (batch.tokens,))
            ce = torch.nn.functional.cross_entropy(out.logits, batch.targets, reduction="none")  # (B,)
            return (batch.weights.to(ce.dtype) * ce).sum()

        return loss

    # -- initializations (spec §4.3) ------------------------------------------------------------
    def init_gaussian(self, std: float, generator: torch.Generator) -> "SelfAttention":
        """Every parameter i.i.d. N(0, std²) (experiments: std ∈ {0.01, 0.1}/√d)."""
        if not std > 0:
            raise ParameterError(f"parameter 'init_std': received {std}; allowed: a number > 0")
        with torch.no_grad():
            for p in self.parameters():
                p.copy_(std * torch.randn(p.shape, generator=generator, dtype=torch.float64).to(p.dtype))
        return self
