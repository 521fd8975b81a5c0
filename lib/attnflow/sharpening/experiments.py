"""Synthetic sharpening experiments, batched (spec §7.1, §8.2; claims A1, A6–A8, A11).

A sweep is a list of :class:`ModelSpec` (parametrization, r = η_QK/η_OV, seed, η_OV, init
scale). Each model is built as the theory chapter's ``SelfAttention`` and initialised by its
``init_gaussian`` (i.i.d. N(0, σ²), σ = init_scale/√d: random, *not* balanced); the models are
then stacked per parametrization (:class:`ModelStack`) and trained together by
``attnflow.sweep.train``. Seed s draws the training/test data from its ``data`` stream and the
initial weights from its ``sweep_init`` stream (``seeding.stream(s, role)``: s and
s + INIT_SEED_OFFSET), so models that differ only in r start from the same weights on the same
data (paired comparisons). :func:`run` returns an :class:`Experiment`, the sweep record
(``attnflow.record.Run``) with its stack and data.

Training descends the mean cross-entropy through the exact bag-of-tokens forward
(``ModelStack.bag_forward``); evaluation (:func:`evaluate`) uses the per-position forward, which
also deletes tokens for ERASER's sufficiency and comprehensiveness (``attnflow.sharpening.metrics``).
The page schemas are in ``sharpening.contracts``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from attnflow import record, seeding, sweep
from attnflow.params import ParameterError
from attnflow.sharpening import data, metrics
from attnflow.sharpening.model import PARAMETRIZATIONS
from attnflow.sharpening.stack import INIT_SEED_OFFSET, INITS, Bags, ModelSpec, ModelStack

__all__ = ["ModelSpec", "grid", "ModelStack", "Experiment", "run", "evaluate", "INIT_SEED_OFFSET", "INITS"]

def grid(parametrizations: Sequence[str], lr_ratios: Sequence[float] = (1.0,), seeds: Sequence[int] = (0,),
         lr_ovs: Sequence[float] = (0.1,), init_scales: Sequence[float] = (0.1,)) -> list[ModelSpec]:
    """Every combination, in the order parametrization × r × seed × η_OV × init scale."""
    return [ModelSpec(p, float(r), int(s), float(lr), float(i)) for p in parametrizations for r in lr_ratios
            for s in seeds for lr in lr_ovs for i in init_scales]


def stack_batches(task: data.Task, seeds: Sequence[int], n_train: int, n_test: int, device) -> tuple:
    """Per-model training and test sets (P, N, ·), one dataset per seed (shared by its models)."""
    train, test = {}, {}
    for s in sorted(set(seeds)):
        gen = seeding.generator(seeding.stream(s, "data"))
        train[s], test[s] = data.sample(task, n_train, gen), data.sample(task, n_test, gen)

    def stack(batches):
        return data.Batch(*(torch.stack([getattr(batches[s], f) for s in seeds]).to(device)
                            for f in ("tokens", "targets", "relevant_mask", "weights")))
    return stack(train), stack(test)


@dataclass(kw_only=True)
class Experiment(sweep.SweepRun):
    """A trained sweep: the sweep record (a :class:`~attnflow.sweep.SweepRun`, so a
    :class:`~attnflow.record.Run`) with the stack and the data that produced it."""

    stack: ModelStack
    train: data.Batch      # tokens (P, N, T), targets (P, N), relevant_mask (P, N, T)
    test: data.Batch

    @property
    def run(self) -> sweep.SweepRun:
        """The sweep record: the experiment itself (``exp.run.params``, ``exp.run.reached`` …)."""
        return self

    @property
    def specs(self) -> list[ModelSpec]:
        return self.stack.specs

    def select(self, **match) -> np.ndarray:
        """Indices of the models whose spec fields equal ``match`` (e.g. parametrization="FAFO")."""
        return np.array([i for i, sp in enumerate(self.specs) if all(getattr(sp, k) == v for k, v in match.items())])


def _objective(stack: ModelStack, batch: data.Batch):
    """Mean cross-entropy (P_a,) and training statistics of the models ``models``."""
    bags = Bags.of(batch, stack.task.vocab_size, stack.cfg.attend_self, stack.emb.dtype)
    cache: dict = {}

    def objective(params, index, models):
        if index is None:                                                       # full data: reuse the rows
            key = tuple(models.tolist())                                        # while the active set holds
            if cache.get("key") != key:
                cache.update(key=key, rows=bags.rows(models, None), targets=batch.targets[models])
            sub, targets = cache["rows"], cache["targets"]                      # (P_a, ...), (P_a, B)
        else:
            index = index.to(batch.tokens.device)
            sub, targets = bags.rows(models, index), batch.targets[models][:, index]
        logits, relevant = stack.bag_forward(params, sub, models)               # (P_a, K, B), (P_a, B)
        logp = torch.log_softmax(logits, dim=1)
        true = logp.gather(1, targets[:, None, :]).squeeze(1)                   # (P_a, B) log-prob of y
        loss = -true.mean(-1)                                                   # (P_a,)
        with torch.no_grad():                                                   # (argmax over dim 1 is slow on CPU)
            correct = true >= logp.amax(1)
            stats = {"accuracy": correct.float().mean(-1), "attn_relevant": relevant.mean(-1)}
        return loss, stats
    return objective


def run(specs: Sequence[ModelSpec], task: data.Task = data.Task(), *, n_train: int = 2000, n_test: int = 2000,
        optimizer: str = "gd", steps: int = 4000, target_loss: float | None = 0.1, batch_size: int | None = None,
        eval_every: int = 1, record_every: int = 20, momentum: float = 0.0, weight_decay: float = 0.0,
        attend_self: bool = False, device: str = "auto", dtype=torch.float32, on_diverge: str = "raise",
        checkpoints: Sequence[float] = (), step_limits: Sequence[int] | None = None, seed: int = 0) -> Experiment:
    """Build, stack and train a sweep; models are compared at ``target_loss`` (spec §7.1)."""
    stack = ModelStack(specs, task, attend_self=attend_self, dtype=dtype, device=device)
    train, test = stack_batches(task, [sp.seed for sp in specs], n_train, n_test, stack.device)
    result = sweep.train(_objective(stack, train), stack.tensors, len(specs), optimizer=optimizer, steps=steps,
                         target_loss=target_loss, batch_size=batch_size, n_samples=n_train, eval_every=eval_every,
                         record_every=record_every, momentum=momentum, weight_decay=weight_decay,
                         on_diverge=on_diverge, labels=stack.labels, checkpoints=checkpoints,
                         step_limits=step_limits, seed=seed)
    return Experiment(**record.fields_of(result), stack=stack, train=train, test=test)


def evaluate(exp: Experiment, *, tau_attn: float = 0.5, tau_conf: float = 0.5, k_percents=metrics.AOPC_PERCENTS,
             split: str = "test", level: float | None = None) -> dict[str, np.ndarray]:
    """Per-model metrics (P,) on the test set at the trained (matched-loss) parameters — or at the
    checkpoint of loss ``level``: relevant attention, accuracy, fraction whose top-attention token
    is relevant, AC, ACMC, AOPC sufficiency and comprehensiveness — plus the per-instance relevant
    attention and true-class confidence (P, B) for DTAP heatmaps."""
    batch = exp.test if split == "test" else exp.train
    params = exp.run.params if level is None else exp.run.checkpoints[float(level)]["params"]
    with torch.no_grad():
        out = exp.stack.forward(params, batch.tokens)
        probs = torch.softmax(out.logits, dim=-1)                               # (P, B, K)
        attn_rel = metrics.relevant_attention(out.attn, batch.relevant_mask)    # (P, B)
        conf = metrics.true_class_confidence(probs, batch.targets)              # (P, B)
        candidates = torch.ones_like(batch.tokens, dtype=torch.bool)
        candidates[..., -1] = False                                             # the query is never a rationale

        def predict(tokens, keep_mask):
            return torch.softmax(exp.stack.forward(params, tokens, keep_mask).logits, dim=-1)

        eraser = metrics.aopc(predict, batch.tokens, out.attn, candidates, k_percents)
    top1 = batch.relevant_mask.gather(-1, out.attn.argmax(-1, keepdim=True)).squeeze(-1)   # (P, B) top token relevant
    res = {"attn_relevant": attn_rel.mean(-1), "accuracy": (probs.argmax(-1) == batch.targets).float().mean(-1),
           "top1_relevant": top1.float().mean(-1),
           "ac": metrics.attention_confidence(attn_rel, tau_attn), "acmc": metrics.acmc(attn_rel, conf, tau_attn, tau_conf),
           "sufficiency": eraser["sufficiency"].mean(-1), "comprehensiveness": eraser["comprehensiveness"].mean(-1)}
    res = {k: v.cpu().double().numpy() for k, v in res.items()}
    res["attn_relevant_each"], res["confidence_each"] = attn_rel.cpu().numpy(), conf.cpu().numpy()
    return res
