"""Fused loss and gradient of the counts-form training loss (issue 23): no autograd graph.

``training.run_losses`` differentiated by autograd runs its forward and then a backward of about as
many (R, d, B) operations, with the max shifts, the written-out log-softmax and their adjoints. The
loss is a function of two (d, d) matrices per run — the scores S = c W0 WQ WKᵀ W0ᵀ and the value-logit
map V = W0 W1 — and its gradient is two (d, d) accumulations over the rows, so the rows are swept
once forward and once backward with the adjoints written out (per row b, query q, counts n, target
weights w, w̄ = Σ_j w_j):

    A_k = n_k E[q, k] / Σ_l n_l E[q, l],  E[i, k] = exp(S[i, k] − max_l S[i, l])   (= softmax_k(S[q, k] + log n_k))
    Z = Vᵀ A,  P̂ = softmax(Z),  ℓ_b = w̄ logsumexp(Z) − Σ_j w_j Z_j  (= −Σ_j w_j log P̂_j)
    ∂ℓ/∂Z = w̄ P̂ − w,  ∂ℓ/∂A = V ∂ℓ/∂Z,  ∂ℓ/∂x = A ⊙ (∂ℓ/∂A − ⟨A, ∂ℓ/∂A⟩)
    G_V = Σ_b A (∂ℓ/∂Z)ᵀ,  G_S = Σ_b e_q (∂ℓ/∂x)ᵀ

and, with Q = W0 WQ and K = W0 WK: ∂L/∂WQ = c W0ᵀ G_S K, ∂L/∂WK = c W0ᵀ G_Sᵀ Q, ∂L/∂W1 = W0ᵀ G_V,
∂L/∂W0 = c (G_S K WQᵀ + G_Sᵀ Q WKᵀ) + G_V W1ᵀ. Two exponentials of (R, d, B) per step become one (the
attention's are d² per run), and no max shift of the logits is needed while |V| < 60 (Z is a convex
combination of V's rows, so e^Z cannot overflow); past that, or where a score row spreads over more
than 60 (E could underflow), the shifted forms are used.

Written in torch ops (batched matmuls and elementwise, in place where it can), swept over groups of runs of
about ``CHUNK_ROWS`` rows so that each group's (R_g, d, B) intermediates stay in cache (at cycle's paper size
one run per group: ~1.3× faster than one pass over all runs, whose every op is memory-bound). A compiled row
loop (numba, scalar per row, float64; tried in issue 23, not kept) measured 1.4–2.4× *slower* than autograd
on the 2-core CPU: torch's vectorised float32 exp costs ~1 ns an entry, a scalar one ~6 ns, and the row's
d-vector chains run at scalar latency. Measured with benchmarks/bench_markov_step.py: ~2.3× per step.
Everything runs in the data's dtype, as autograd does; the float32 results differ from autograd's by
float32 round-off, of the same size as autograd's own error against float64 (tests/test_fused_markov.py).

**Wide vocabularies** (``wide(d, m)``: d ≥ ``WIDE_D`` and m ≤ d/2, real_text's word pieces): the one-hot
products E·query and query·∂xᵀ cost 2 d² B FLOPs each for what is a gather and a scatter, and V = W0 W1 has
rank m, so ``_wide_pass`` gathers the score rows by the query index, scatters ∂L/∂S back by it, applies V
through W0ᵀ and W1ᵀ (12 d m B FLOPs in all instead of 10 d² B) and sweeps the columns in blocks of
``WIDE_BLOCK`` entries: at real_text's paper size (d 256, m 32) 3.2× the one-hot pass, at 58 % of the
measured roofline (benchmarks/bench_markov_step.py --real-text). The chains' small d (5–8) keep the one-hot
pass, where a gather gains nothing.

:class:`MarkovLoss` is the ``torch.autograd.Function``: forward computes the per-run losses and keeps the
gradients, backward returns them scaled by the losses' incoming gradient, so ``sweep.train`` (which calls
``torch.autograd.grad`` on the summed loss) trains through it unchanged, GD and Adam alike.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnflow.focus_dilution.model import PARAM_NAMES

__all__ = [
    "Rows",
    "rows",
    "loss_and_grad",
    "MarkovLoss",
    "run_losses",
    "wide",
    "SAFE_EXP",
    "CHUNK_ROWS",
    "WIDE_D",
    "WIDE_BLOCK",
]

CHUNK_ROWS = 65536  # runs are swept in groups of about this many rows (R_g·B): their (R_g, d, B) stay in cache
WIDE_BLOCK = 2**18  # entries (d × columns) of a run per column block of the wide pass (measured at d = 256:
# 2¹⁸ ran 1.4–2× faster than 2²⁰ and than one block of all 16,384 columns, on the shared 2-core CPU)
WIDE_D = 32  # from this vocabulary size (and m ≤ d/2) the rows take the gathered, low-rank pass (_wide_pass)
SAFE_EXP = 60.0  # |V| and score spreads below this need no max shift (e^60 ≈ 1e26, e^−60 ≈ 1e−26: float32-normal)


@dataclass(frozen=True)
class Rows:
    """A stacked batch (``training.stack``) prepared once per training run: ``query`` the one-hot (R, d, B)
    (padding columns — all zero, weight 0, one key — set to token 0: their attention is that key's one-hot
    with any scores, and they carry no gradient), ``no_query`` (R, 1, B) 1 on the other all-zero columns (score
    row 0) or None,
    ``counts`` n = exp(log counts) (R, d, B), ``log_counts``, ``weights`` (R, d, B) and w̄ (R, 1, B)."""

    query: torch.Tensor
    no_query: torch.Tensor | None
    counts: torch.Tensor
    log_counts: torch.Tensor
    weights: torch.Tensor
    weight_sum: torch.Tensor
    index: torch.Tensor  # (R, 1, B) int64: each column's query token, d where it has none (score row 0)

    @property
    def shape(self) -> tuple[int, int, int]:
        """(R, d, B)."""
        return tuple(self.weights.shape)

    def runs(self, at: slice) -> "Rows":
        """The rows of the runs ``at`` (views)."""
        no_query = None if self.no_query is None else self.no_query[at]
        return Rows(
            self.query[at],
            no_query,
            self.counts[at],
            self.log_counts[at],
            self.weights[at],
            self.weight_sum[at],
            self.index[at],
        )


def rows(batch: dict[str, torch.Tensor]) -> Rows:
    """The fused path's form of a stacked batch (``training.stack``: query one-hot, log counts, weights, each
    (R, d, B)); the query columns must be one-hot or all zero."""
    query, log_counts, weights = (batch[k].detach() for k in ("query", "log_counts", "weights"))
    col = query.sum(1, keepdim=True)  # (R, 1, B)
    if not bool((((query == 0) | (query == 1)).all()) and ((col == 0) | (col == 1)).all()):
        raise ValueError("batch['query'] must hold one-hot (or all-zero) columns")
    weight_sum = weights.sum(1, keepdim=True)
    one_key = (log_counts > -torch.inf).sum(1, keepdim=True) == 1  # (R, 1, B): A = that key's one-hot, any scores
    padding = (col == 0) & (weight_sum == 0) & one_key  # stack's padding rows: counts [1, 0, …], weight 0
    if bool(padding.any()):
        query = query.clone()
        query[:, :1] += padding.to(query.dtype)  # token 0's score row: the same A, and no gradient (weight 0)
    other = (col == 0) & ~padding
    no_query = other.to(query.dtype) if bool(other.any()) else None
    index = torch.where(col > 0, query.argmax(1, keepdim=True), query.shape[1])  # (R, 1, B)
    return Rows(query, no_query, torch.exp(log_counts), log_counts, weights, weight_sum, index)


def _rows_pass(S, E, V, shift, data, A, loss, gS, gV) -> None:
    """One group of runs: the attention into ``A`` (R_g, d, B), the losses into ``loss`` (R_g,), ∂L/∂S and
    ∂L/∂V into ``gS``, ``gV`` (R_g, d, d). ``E`` the max-shifted e^S transposed (None: the log-domain
    softmax), ``shift``: shift the logits by their max."""
    if E is not None:
        torch.bmm(E, data.query, out=A)  # (R, d, B): E[q_b, k]
        if data.no_query is not None:
            A.add_(data.no_query)  # score row 0: E = 1
        A.mul_(data.counts)
    else:  # the log-domain softmax of S[q, k] + log n_k, as training.forward
        x = S.transpose(-1, -2) @ data.query + data.log_counts
        torch.exp(x - x.amax(1, keepdim=True), out=A)
    A.div_(A.sum(1, keepdim=True))
    Z = V.transpose(-1, -2) @ A  # (R, d_out, B) logits
    top = Z.amax(1, keepdim=True) if shift else None
    P = torch.exp(Z) if top is None else torch.exp(Z - top)
    norm = P.sum(1, keepdim=True)  # (R, 1, B)
    lse = torch.log(norm) if top is None else torch.log(norm).add_(top)
    w, w_sum = data.weights, data.weight_sum
    torch.sub((w_sum * lse).sum((1, 2)), (w * Z).sum((1, 2)), out=loss)  # (R,)
    gZ = P.mul_(w_sum / norm).sub_(w)  # ∂ℓ/∂Z = w̄ P̂ − w (in P's storage)
    torch.bmm(A, gZ.transpose(-1, -2), out=gV)  # (R, d, d)
    gA = V @ gZ  # ∂ℓ/∂A (R, d, B)
    gx = gA.sub_((A * gA).sum(1, keepdim=True)).mul_(A)  # ∂ℓ/∂x = A ⊙ (∂ℓ/∂A − ⟨A, ∂ℓ/∂A⟩)
    torch.bmm(data.query, gx.transpose(-1, -2), out=gS)  # (R, d, d): row q gets its rows' ∂ℓ/∂x


def _wide_pass(S, E, W0, W1, shift, data, A, loss, gS, gW0, gW1) -> None:
    """:func:`_rows_pass` for a wide vocabulary (module docstring): the query's score row is gathered by
    index and ∂L/∂S scattered back by index, not multiplied with the one-hot query (2 d² B FLOPs each), and
    V = W0 W1 is applied through its rank-m factors (4 d m B, not 2 d² B, a product); the columns are swept
    in blocks of ``WIDE_BLOCK`` entries (d × columns) per run, so that a block's intermediates stay in cache.
    Writes ∂L/∂S into ``gS`` (R_g, d, d) and the value path's ∂L/∂W0, ∂L/∂W1 into ``gW0`` (R_g, d, m),
    ``gW1`` (R_g, m, d)."""
    R, d, B = data.shape
    if E is not None:  # (R, d_key, d_query + 1): the extra column is a query-less column's score row 0
        ext = torch.cat([E, E.new_ones(R, d, 1)], -1)
    else:
        ext = torch.cat([S.transpose(-1, -2), S.new_zeros(R, d, 1)], -1)
    W0t, W1t = W0.transpose(-1, -2), W1.transpose(-1, -2)
    gST = gS.new_zeros(R, d, d + 1)
    loss.zero_(), gW0.zero_(), gW1.zero_()
    cols = max(1, WIDE_BLOCK // d)
    for lo in range(0, B, cols):
        c = slice(lo, min(lo + cols, B))
        index = data.index[..., c]
        at, n = index.expand(R, d, index.shape[-1]), data.counts[..., c]
        a = A[..., c]
        if E is not None:
            torch.gather(ext, 2, at, out=a)
            a.mul_(n)
        else:
            x = torch.gather(ext, 2, at).add_(data.log_counts[..., c])
            torch.exp(x - x.amax(1, keepdim=True), out=a)
        a.div_(a.sum(1, keepdim=True))
        H = W0t @ a  # (R, m, b) = W0ᵀ A
        Z = W1t @ H  # (R, d, b) = Vᵀ A
        top = Z.amax(1, keepdim=True) if shift else None
        P = torch.exp(Z) if top is None else torch.exp(Z - top)
        norm = P.sum(1, keepdim=True)
        lse = torch.log(norm) if top is None else torch.log(norm).add_(top)
        w, w_sum = data.weights[..., c], data.weight_sum[..., c]
        loss.add_((w_sum * lse).sum((1, 2))).sub_((w * Z).sum((1, 2)))
        gZ = P.mul_(w_sum / norm).sub_(w)  # ∂ℓ/∂Z
        U = W1 @ gZ  # (R, m, b)
        gW1.baddbmm_(H, gZ.transpose(-1, -2))  # W0ᵀ (A ∂ℓ/∂Zᵀ)
        gW0.baddbmm_(a, U.transpose(-1, -2))  # (A ∂ℓ/∂Zᵀ) W1ᵀ
        gA = W0 @ U  # ∂ℓ/∂A = V ∂ℓ/∂Z
        gx = gA.sub_((a * gA).sum(1, keepdim=True)).mul_(a)
        for r in range(R):  # ∂L/∂S[q, k] = Σ_{b: q_b = q} ∂ℓ/∂x[k, b]; the extra row (no query) is dropped
            gST[r].index_add_(1, index[r, 0], gx[r])
    gS.copy_(gST[..., :d].transpose(-1, -2))


def wide(d: int, m: int) -> bool:
    """Whether the rows of a d-token vocabulary and width m take :func:`_wide_pass` (module docstring)."""
    return d >= WIDE_D and 2 * m <= d


@torch.no_grad()
def loss_and_grad(
    theta: dict[str, torch.Tensor], data: Rows, score_scale: float = 1.0
) -> tuple[torch.Tensor, dict[str, torch.Tensor], torch.Tensor]:
    """Per-run losses (R,) = ``training.run_losses``, their gradients name → (R, …) (run r's loss w.r.t. run
    r's θ) and the attention A (R, d, B), without autograd. θ as in ``training.forward``: W0 (R, d, m), WQ,
    WK (R, m, m), W1 (R, m, d)."""
    W0, WQ, WK, W1 = (theta[n].detach() for n in PARAM_NAMES)
    if W0.dim() != 3 or tuple(W0.shape[:2]) != data.shape[:2]:
        raise ValueError(f"θ['W0'] has shape {tuple(W0.shape)}; the rows need (R, d, m) with (R, d) = {data.shape[:2]}")
    c = float(score_scale)
    Q, K = W0 @ WQ, W0 @ WK  # (R, d, m)
    S = c * Q @ K.transpose(-1, -2)  # (R, d, d): S[r, i, k]
    V = W0 @ W1  # (R, d, d)
    R, d, B = data.shape
    E = None
    if float((S.amax(-1) - S.amin(-1)).max()) < SAFE_EXP:  # e^{S − max} stays float-normal
        E = torch.exp(S - S.amax(-1, keepdim=True)).transpose(-1, -2)  # (R, d_key, d_query)
    shift = float(V.abs().max()) >= SAFE_EXP  # below: e^Z cannot overflow, no max shift of the logits
    A = torch.empty(R, d, B, dtype=W0.dtype, device=W0.device)
    loss, gS = torch.empty(R, dtype=W0.dtype, device=W0.device), torch.empty_like(S)
    is_wide = wide(d, W0.shape[-1])
    if is_wide:
        gW0, gW1 = torch.empty_like(W0), torch.empty_like(W1)
    else:
        gV = torch.empty_like(V)
    step = max(1, CHUNK_ROWS // max(B, 1))
    for lo in range(0, R, step):
        at = slice(lo, min(lo + step, R))
        e = None if E is None else E[at]
        if is_wide:
            _wide_pass(S[at], e, W0[at], W1[at], shift, data.runs(at), A[at], loss[at], gS[at], gW0[at], gW1[at])
        else:
            _rows_pass(S[at], e, V[at], shift, data.runs(at), A[at], loss[at], gS[at], gV[at])
    gQ, gK = c * gS @ K, c * gS.transpose(-1, -2) @ Q  # ∂L/∂Q, ∂L/∂K (R, d, m)
    W0t = W0.transpose(-1, -2)
    if not is_wide:
        gW0, gW1 = gV @ W1.transpose(-1, -2), W0t @ gV
    grads = {
        "W0": gQ @ WQ.transpose(-1, -2) + gK @ WK.transpose(-1, -2) + gW0,
        "WQ": W0t @ gQ,
        "WK": W0t @ gK,
        "W1": gW1,
    }
    return loss, grads, A


class MarkovLoss(torch.autograd.Function):
    """``MarkovLoss.apply(W0, WQ, WK, W1, data, score_scale)`` → (per-run losses (R,), attention (R, d, B)):
    forward runs :func:`loss_and_grad` and keeps the gradients, backward returns them scaled by the losses'
    incoming gradient (the attention is returned as a non-differentiable output)."""

    @staticmethod
    def forward(ctx, W0, WQ, WK, W1, data, score_scale):
        loss, grads, A = loss_and_grad(dict(zip(PARAM_NAMES, (W0, WQ, WK, W1))), data, score_scale)
        ctx.grads = [grads[n] for n in PARAM_NAMES]
        ctx.mark_non_differentiable(A)
        return loss, A

    @staticmethod
    def backward(ctx, grad_loss, _grad_attention):
        scale = grad_loss.reshape(-1, 1, 1)
        return (*(scale * g for g in ctx.grads), None, None)


def run_losses(theta: dict[str, torch.Tensor], data: Rows, score_scale: float = 1.0):
    """``training.run_losses`` on the fused path: (per-run losses (R,), differentiable w.r.t. θ; the
    attention (R, d, B), as ``training.forward``'s first output, not differentiable)."""
    return MarkovLoss.apply(*(theta[n] for n in PARAM_NAMES), data, score_scale)
