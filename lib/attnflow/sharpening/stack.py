"""P one-layer self-attention models trained as one: stacked parameters, batched forward.

The models are the theory chapter's ``SelfAttention`` (spec §4; any mix of CACO, CAFO, FACO,
FAFO), built and initialised by it; this module only stacks their parameters per
parametrization and evaluates all of them in one pass (issue 5: batched sweeps). Two forwards,
both checked against ``SelfAttention.forward`` model by model in ``tests/test_sweep.py``:

- :meth:`ModelStack.forward` (evaluation, ERASER deletions) is the model's one forward,
  ``model.forward``, on the stacked circuits (W_QK, W_OV) — the same function
  ``SelfAttention.forward`` calls at P = 1, in *token coordinates* (the view of ``reduction.py``);
- :meth:`ModelStack.bag_forward` (training) uses that a model without positional encoding sees
  a sequence only through its token counts: with a shared query token the whole forward of all
  P models is one batched matmul (P, K+1, V) @ (P, V, B).

Why not ``torch.func.vmap`` over ``functional_call``: the four parametrizations have different
parameter sets (one vmap each), and vmapping the per-sample contractions of the original
``einsum`` forward produced thousands of tiny matmuls — measured no faster than a Python loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import torch

from attnflow import device as devices, seeding, sweep
from attnflow.params import ParameterError
from attnflow.sharpening import data, metrics, reduction
from attnflow.sharpening.model import PARAMETRIZATIONS, ModelConfig, Output, SelfAttention, circuits, effective_circuits
from attnflow.sharpening.model import forward as model_forward

INIT_SEED_OFFSET = seeding.STREAMS["sweep_init"]  # init generator seed = data seed + offset (the sweep_init stream)
INITS = ("gaussian", "manifold")


@dataclass(frozen=True)
class ModelSpec:
    """One model of a sweep."""

    parametrization: str  # CACO, CAFO, FACO, FAFO
    lr_ratio: float = 1.0  # r = η_QK/η_OV
    seed: int = 0  # data and init seed
    lr_ov: float = 0.1  # η_OV (η_QK = r·η_OV)
    init_scale: float = 0.1  # "gaussian": init std = init_scale/√d; "manifold": a₀ = b₀ = init_scale
    init: str = "gaussian"  # random Gaussian, or balanced on the (a, b) manifold (reduction.init_on_manifold)

    def __post_init__(self):
        circuits(self.parametrization)
        if self.init not in INITS:
            raise ParameterError(f"parameter 'init': received {self.init!r}; allowed: one of {', '.join(INITS)}")
        for name in ("lr_ratio", "lr_ov", "init_scale"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and np.isfinite(v) and v > 0):
                raise ParameterError(f"parameter {name!r}: received {v!r}; allowed: a finite number > 0")

    @property
    def lr_qk(self) -> float:
        return self.lr_ratio * self.lr_ov

    @property
    def label(self) -> str:
        init = f"σ={self.init_scale:g}/√d" if self.init == "gaussian" else f"a₀=b₀={self.init_scale:g}"
        return f"{self.parametrization} r={self.lr_ratio:g} seed={self.seed} η={self.lr_ov:g} {init}"


class ModelStack:
    """P ``SelfAttention`` models (any mix of parametrizations) with stacked parameters."""

    def __init__(
        self,
        specs: Sequence[ModelSpec],
        task: data.Task,
        *,
        attend_self: bool = False,
        score_scale: float = 1.0,
        dtype=torch.float32,
        device: str = "auto",
        init_stream: str = "sweep_init",
    ):
        """``init_stream``: the seeding role of a Gaussian init, drawn from
        ``generator(seeding.stream(seed, init_stream))`` (``"sweep_init"`` for the sweeps of
        ``sharpening.experiments``, ``"init"`` for the sampled mechanism runs)."""
        seeding.stream(0, init_stream)  # validates the role (a manifold init draws nothing)
        if not specs:
            raise ParameterError("parameter 'specs': received an empty sweep; allowed: at least one model")
        self.specs, self.task, self.device = list(specs), task, devices.resolve(device)
        self.models = []
        for sp in self.specs:
            cfg = ModelConfig(
                sp.parametrization,
                task.vocab_size,
                task.n_classes,
                attend_self=attend_self,
                score_scale=score_scale,
                dtype=dtype,
            )
            model = SelfAttention(cfg)
            if sp.init == "manifold":
                reduction.init_on_manifold(model, task, sp.init_scale, sp.init_scale)
            else:
                gen = seeding.generator(seeding.stream(sp.seed, init_stream))
                model.init_gaussian(sp.init_scale / cfg.d**0.5, gen)
            self.models.append(model)
        self.cfg = self.models[0].cfg
        self.emb = self.models[0].emb.to(self.device)  # (V, d)
        self.tensors: dict[str, sweep.Stacked] = {}
        order = []
        for name in PARAMETRIZATIONS:
            idx = [i for i, sp in enumerate(self.specs) if sp.parametrization == name]
            if not idx:
                continue
            order += idx
            for pname, _ in self.models[idx[0]].named_parameters():
                value = torch.stack([dict(self.models[i].named_parameters())[pname].detach() for i in idx])
                qk = pname in self.models[idx[0]].qk_names
                rates = [self.specs[i].lr_qk if qk else self.specs[i].lr_ov for i in idx]
                lr = torch.tensor(rates, dtype=torch.float64)  # float64: torch's Adam bits (sweep.Stacked.lr)
                self.tensors[f"{name}.{pname}"] = sweep.Stacked(
                    value.to(self.device), torch.tensor(idx, device=self.device), lr.to(self.device)
                )
        self.inverse = torch.argsort(torch.tensor(order)).to(self.device)  # group order -> sweep order

    @property
    def labels(self) -> list[str]:
        return [sp.label for sp in self.specs]

    def params(self) -> dict[str, torch.Tensor]:
        return {n: t.value for n, t in self.tensors.items()}

    def effective(self, params: Mapping[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """W_QK (P, d, d) and W_OV (P, K, d) in sweep order (W_Q W_Kᵀ, W_O W_V when factorized)."""
        qk, ov = [], []
        for name in PARAMETRIZATIONS:
            group = {n.split(".", 1)[1]: v for n, v in params.items() if n.startswith(name + ".")}
            if group:
                W_qk, W_ov = effective_circuits(group)  # (P_g, d, d), (P_g, K, d)
                qk.append(W_qk)
                ov.append(W_ov)
        return torch.cat(qk)[self.inverse], torch.cat(ov)[self.inverse]

    def forward(
        self,
        params: Mapping[str, torch.Tensor],
        tokens: torch.Tensor,
        keep_mask: torch.Tensor | None = None,
        models: torch.Tensor | None = None,
    ) -> Output:
        """Logits, attention and scores of every model on its own tokens (P, B, T).

        ``keep_mask`` (P, B, T) bool removes tokens (False) from the softmax: for a model without
        positional encoding this *is* deleting them (ERASER's x∖r and r). ``models`` (P_a,) picks
        a subset of the models (then ``tokens`` holds the subset's tokens).
        """
        W_qk, W_ov = self.effective(params)  # (P, d, d), (P, K, d)
        if models is not None:
            W_qk, W_ov = W_qk[models], W_ov[models]  # (P_a, d, d), (P_a, K, d)
        return model_forward(
            self.emb,
            W_qk,
            W_ov,
            tokens,
            score_scale=self.cfg.score_scale,
            attend_self=self.cfg.attend_self,
            keep_mask=keep_mask,
        )

    def bag_forward(self, params: Mapping[str, torch.Tensor], bags: "Bags", models: torch.Tensor | None = None):
        """Training path: logits (P, K, B) *class-major* and relevant attention (P, B).

        Without positional encoding the output depends on the context only through the counts
        C_vb of each token v, and every position holding v gets attention e^{s_v}/Z_b with
        Z_b = Σ_v C_vb e^{s_v}. With the query token q shared by all rows, s_v = σ_s S[q, v] and
        the forward is one batched matmul, [e^s ⊙ O | e^s]ᵀ @ C: z_b = (Σ_v C_vb e^{s_v} O_v)/Z_b.
        Exact; a model with some Z_b underflowing takes the per-position path, that model alone
        (issue 23: the other models keep this path's result, bit for bit).
        """
        W_qk, W_ov = self.effective(params)  # (P, d, d), (P, K, d)
        if models is not None:
            W_qk, W_ov = W_qk[models], W_ov[models]
        s = self.cfg.score_scale * (self.emb[bags.query] @ W_qk @ self.emb.T)  # (P, V) scores from q
        weight = torch.exp(s - s.amax(-1, keepdim=True))  # (P, V), ≤ 1
        O_T = W_ov @ self.emb.T  # (P, K, V) token logits
        M_T = torch.cat([weight[:, None, :] * O_T, weight[:, None, :]], dim=1)  # (P, K + 1, V)
        R = M_T @ bags.counts  # (P, K + 1, B)
        Z = R[:, -1]  # (P, B) partition function
        under = (Z <= torch.finfo(Z.dtype).tiny).any(-1)  # (P,) models with an underflowing Z_b
        fallback = bool(under.any())
        if fallback:  # their rows are replaced below; Z = 1 there keeps this path's backward finite
            Z = torch.where(under[:, None], torch.ones_like(Z), Z)
        with torch.no_grad():
            relevant = (weight[:, None, :] @ bags.relevant_counts).squeeze(1) / Z  # (P, B)
        logits = R[:, :-1] / Z[:, None]  # (P, K, B)
        if not fallback:
            return logits, relevant
        slow = under.nonzero().squeeze(1)  # (P_u,) rows of this call on the per-position path
        out = self.forward(params, bags.tokens[slow], models=slow if models is None else models[slow])
        with torch.no_grad():
            relevant = relevant.index_put((slow,), metrics.relevant_attention(out.attn, bags.relevant_mask[slow]))
        return logits.index_put((slow,), out.logits.transpose(1, 2)), relevant

    def model(self, i: int, params: Mapping[str, torch.Tensor] | None = None) -> SelfAttention:
        """Model i as the theory chapter's ``SelfAttention`` (its parameters loaded)."""
        params = self.params() if params is None else params
        name = self.specs[i].parametrization
        slot = {n: int((t.models == i).nonzero()) for n, t in self.tensors.items() if n.startswith(name + ".")}
        theta = {n.split(".", 1)[1]: params[n][k].detach().cpu() for n, k in slot.items()}
        return self.models[i].load(theta)


@dataclass
class Bags:
    """Datasets as token counts (the bag-of-tokens view of a model without positions)."""

    tokens: torch.Tensor  # (P, B, T) the sequences (fallback path)
    relevant_mask: torch.Tensor  # (P, B, T)
    counts: torch.Tensor  # (P, V, B) float: how often each token is attended to (query excluded)
    relevant_counts: torch.Tensor  # (P, V, B) float: the same, at relevant positions only
    query: int  # the query token shared by every row

    @classmethod
    def of(cls, batch: data.Batch, vocab_size: int, attend_self: bool, dtype) -> "Bags":
        query = batch.tokens[..., -1]
        if not bool((query == query.reshape(-1)[0]).all()):
            raise ParameterError("the bag-of-tokens path needs one query token shared by every sequence")
        keys = batch.tokens if attend_self else batch.tokens[..., :-1]  # (P, B, T') attended positions
        rel = batch.relevant_mask[..., : keys.shape[-1]].to(dtype)  # (P, B, T')
        zeros = torch.zeros(*keys.shape[:-1], vocab_size, dtype=dtype, device=keys.device)  # (P, B, V)
        counts = zeros.scatter_add(-1, keys, torch.ones_like(rel)).transpose(1, 2).contiguous()  # (P, V, B)
        relevant = zeros.scatter_add(-1, keys, rel).transpose(1, 2).contiguous()  # (P, V, B)
        return cls(batch.tokens, batch.relevant_mask, counts, relevant, int(query.reshape(-1)[0]))

    def rows(self, models: torch.Tensor, index: torch.Tensor | None) -> "Bags":
        """The rows of models ``models`` (P_a,), restricted to the samples ``index`` if given."""

        def pick(x: torch.Tensor, sample_dim: int) -> torch.Tensor:
            x = x if index is None else x.index_select(sample_dim, index)  # samples first: small copy
            return x.index_select(0, models)

        return Bags(
            pick(self.tokens, 1),
            pick(self.relevant_mask, 1),
            pick(self.counts, 2),
            pick(self.relevant_counts, 2),
            self.query,
        )
