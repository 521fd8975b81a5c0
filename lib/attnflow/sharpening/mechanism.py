"""Corollary 5 — the sharpening mechanism, measured at matched loss on three levels.

Mechanism [paper]; argument [reconstruction] (claims A6, A12, A14). At a fixed loss −log s*
the margin u = a·p is fixed (``symbolic.matched_loss``), so whichever circuit is slower on the
OV side must be compensated by sharper attention p; faster QK learning (larger r, or the
growing rescaling 2|b| of a factorized QK circuit) supplies it. Three levels:

- :func:`reduced_at_matched_loss` — the reduced ODE with the matched-loss event (spec §8.1);
- :func:`full_model_at_matched_loss` — the full torch model's population gradient flow from the
  symmetric/balanced manifold, learning rates chosen so it *is* the normalized reduced system;
- :func:`sampled_runs` — discrete GD of the full model on a sampled dataset from a Gaussian
  (not balanced) initialization, stopped when the training loss first drops below a target
  (spec §8.2); all runs trained together by the batched engine ``attnflow.sweep.train``
  (:func:`sampled_at_loss`: one run).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from attnflow import device as devices
from attnflow import sweep
from attnflow.record import Run
from attnflow.sharpening import experiments
from attnflow.sharpening.data import Task, population
from attnflow.sharpening.model import ModelConfig, SelfAttention, circuits
from attnflow.sharpening.reduced import ReducedRun, ReducedSystem, solve
from attnflow.sharpening.reduction import constants, coordinates, init_on_manifold
from attnflow.sharpening.stack import ModelSpec, ModelStack

__all__ = ["reduced_at_matched_loss", "full_model_at_matched_loss", "sampled_at_loss", "sampled_runs", "SampledRun"]


def reduced_at_matched_loss(parametrizations, lr_ratios, *, n_compete: int = 9, n_classes: int = 5,
                            matched: float = 0.9, horizon: float = 1e5, a0: float = 0.1, b0: float = 0.1,
                            rtol: float = 1e-10) -> dict[tuple[str, float], ReducedRun]:
    """Reduced runs (name, r) -> ReducedRun with the first time s reaches ``matched`` recorded."""
    return {(name, r): solve(ReducedSystem(name, r, n_compete, n_classes), horizon, a0=a0, b0=b0, times=[horizon],
                             matched=matched, rtol=rtol, atol=rtol * 1e-2)
            for name in parametrizations for r in lr_ratios}


def full_model_at_matched_loss(parametrization: str, task: Task, *, lr_ratio: float, matched: float = 0.9,
                               a0: float = 0.1, b0: float = 0.1, t_max: float = 1e4, rtol: float = 1e-9) -> dict:
    """Integrate the full model's population flow until the loss reaches −log(matched) (Cor. 5).

    The circuit learning rates are chosen so that the full model is the *normalized* reduced
    system with ratio ``lr_ratio`` (η_QK' = r η_OV'): η_OV = 1/c_OV, η_QK = r/κ^m, so model time
    equals reduced time. Returns the model-level attention mass on the distinct token, the
    accuracy and the correct-class probability at that moment, all from the torch forward pass.
    """
    from attnflow import flow

    const = constants(task)
    fa, _ = circuits(parametrization)
    lr_ov, lr_qk = 1.0 / const.c_ov, lr_ratio / const.kappa ** (1 if fa else 2)
    model = init_on_manifold(SelfAttention(ModelConfig(parametrization, task.vocab_size, task.n_classes)), task, a0, b0)
    batch = population(task)
    loss = model.functional_loss(batch)
    target = -np.log(matched)

    def reached(t, theta):
        return float(loss(theta)) - target

    reached.terminal, reached.direction = True, -1
    res = flow.integrate(loss, model.state(), [0.0, t_max], lr=model.rates(lr_qk, lr_ov), rtol=rtol,
                         atol=rtol * 1e-2, events=[reached])
    if not len(res.t_events[0]):
        raise RuntimeError(f"{parametrization}: the loss did not reach −log({matched}) by t_max={t_max:g}")
    model.load(res.flattener.unflatten(torch.from_numpy(res.y_events[0][0])))
    with torch.no_grad():
        out = model(batch.tokens)                                         # logits (S, K), attn (S, T)
        w = batch.weights
        mass = float((w * (out.attn * batch.relevant_mask).sum(-1)).sum())
        acc = float((w * (out.logits.argmax(-1) == batch.targets)).sum())
        s = float((w * torch.softmax(out.logits, -1).gather(1, batch.targets[:, None])[:, 0]).sum())
    a, b, resid = coordinates(model, task)
    return {"t": float(res.t_events[0][0]), "p": mass, "accuracy": acc, "s": s, "a": float(a), "b": float(b),
            "nfev": res.nfev, "residual": float(resid)}


@dataclass
class SampledRun(Run):
    """One GD run of :func:`sampled_at_loss`: the measurements at the matched loss, or why there are none.

    ``status`` is ``"reached"`` (the training loss dropped below the target), ``"overshot"`` (it
    did, but one step jumped more than ``MATCH_RTOL`` of the target below it, so the run is not at
    the matched loss: the step is too large), ``"diverged"`` (a non-finite loss, or a loss that
    rose well above its minimum: the step is above the stability limit of GD) or ``"slow"``
    (still decreasing after ``max_steps``).

    It is a :class:`~attnflow.record.Run` of that model's training: ``t`` its recorded steps up to
    where it ended, ``quantities`` its training loss, accuracy and relevant attention there (the
    sweep record's columns); the fields are the measurements at the matched loss."""

    parametrization: str
    lr_ratio: float
    seed: int
    status: str
    p: float = float("nan")          # mean attention mass on the distinct tokens
    accuracy: float = float("nan")   # training accuracy
    steps: int | None = None         # step at which the loss first dropped below the target
    loss: float = float("nan")       # training loss there (or at the end)
    message: str = ""                # why the target was not reached

    @property
    def reached(self) -> bool:
        return self.status == "reached"


UNSTABLE_RISE = 1.5   # a loss this many times above its running minimum marks an unstable step
MATCH_RTOL = 0.2      # the loss at the stopping step must be within 20% of the target (matched loss)


def sampled_at_loss(parametrization: str, task: Task, *, lr_ratio: float, n_samples: int = 2000, lr_ov: float = 0.1,
                    init_std: float = 0.1, loss_target: float = 0.1, max_steps: int = 8000, seed: int = 0,
                    device: str = "auto") -> SampledRun:
    """One run of :func:`sampled_runs` (the same semantics, a stack of one model)."""
    return sampled_runs([(parametrization, lr_ratio, seed)], task, n_samples=n_samples, lr_ov=lr_ov, init_std=init_std,
                        loss_target=loss_target, max_steps=max_steps, device=device)[0]


def sampled_runs(runs: Sequence[tuple[str, float, int]], task: Task, *, n_samples: int = 2000, lr_ov: float = 0.1,
                 init_std: float = 0.1, loss_target: float = 0.1, max_steps: int = 8000,
                 device: str = "auto") -> list[SampledRun]:
    """Full-batch GD of the full model (float32) on a sampled dataset from N(0, (init_std/√d)²),
    η_QK = r·η_OV, until the training loss first drops below ``loss_target`` (spec §8.2), for
    every (parametrization, r, seed) of ``runs``, trained together by ``attnflow.sweep.train``.

    Each model is independent: data from its seed's ``data`` stream (the models of a seed share
    it), init from its ``init`` stream (``seeding.stream``: seed and seed + 1); the stack only
    batches the arithmetic. A model stops at the first step whose training loss, evaluated
    before that step's update, is < the target
    (``strict_target``), as a single-model loop with torch's SGD that stops there would
    (``tests/test_mechanism_batched.py`` checks the two agree). Returns a :class:`SampledRun` per
    run, in order, with the mean attention mass on the distinct (relevant) tokens and the
    training accuracy at that step, read from the model's ``SelfAttention`` forward. A run that
    does not reach the target says why: a diverging or oscillating loss (the GD step above its
    stability limit: lower ``gd_lr`` or r) or a loss still falling (raise ``max_steps``).
    """
    specs = [ModelSpec(name, float(r), int(seed), lr_ov=lr_ov, init_scale=init_std) for name, r, seed in runs]
    stack = ModelStack(specs, task, dtype=devices.EXPERIMENT_DTYPE, device=device, init_stream="init")
    batch, _ = experiments.stack_batches(task, [sp.seed for sp in specs], n_samples, 1, stack.device)  # (P, N, ·)
    every = max(1, max_steps // 200)
    rec = sweep.train(experiments._objective(stack, batch), stack.tensors, len(specs), optimizer="gd", steps=max_steps,
                      target_loss=loss_target, strict_target=True, record_every=every, on_diverge="mark",
                      labels=stack.labels, desc=f"GD {len(specs)} sampled runs")
    grid = (rec.steps % every == 0) | (rec.steps == max_steps)        # the records of a single-model loop
    return [_sampled_run(sp, rec, i, grid, stack, batch, loss_target, max_steps) for i, sp in enumerate(specs)]


def _sampled_run(sp, rec, i: int, grid: np.ndarray, stack, batch, loss_target: float, max_steps: int) -> SampledRun:
    """The :class:`SampledRun` of model i of a sweep record ``rec``."""
    name, r, seed = sp.parametrization, sp.lr_ratio, sp.seed
    rates = f"η_OV = {sp.lr_ov:g}, η_QK = {sp.lr_qk:g}"
    end = rec.stopped_at[i] if rec.reached[i] else rec.diverged_at[i] if rec.diverged[i] else max_steps
    rows = rec.steps <= end                                             # (R,) the records of this model's run
    curves = dict(t=rec.steps[rows], quantities={k: v[rows, i] for k, v in rec.quantities.items()}, wall_s=rec.wall_s,
                  meta=dict(label=rec.labels[i], lr_ov=sp.lr_ov, lr_qk=sp.lr_qk, init_scale=sp.init_scale,
                            loss_target=loss_target, max_steps=max_steps))
    if rec.diverged[i]:
        return SampledRun(name, r, seed, "diverged", **curves, message=(
            f"GD unstable ({rates}): the training loss is not finite at step {rec.diverged_at[i]}; the step is "
            f"above the stability limit, lower gd_lr"))
    if not rec.reached[i]:
        steps, loss = rec.steps[grid], rec.loss[grid, i]
        i_min = int(np.argmin(loss))
        if loss[-1] > UNSTABLE_RISE * loss[i_min]:
            return SampledRun(name, r, seed, "diverged", **curves, loss=float(loss[-1]), message=(
                f"GD unstable ({rates}): the training loss rose from its minimum {loss[i_min]:.3g} (step "
                f"{steps[i_min]}) to {loss[-1]:.3g} at step {steps[-1]}; the step is above the "
                f"stability limit of GD, lower gd_lr"))
        return SampledRun(name, r, seed, "slow", **curves, loss=float(loss[-1]), message=(
            f"the training loss is still {loss[-1]:.3g} > {loss_target:g} after {max_steps} steps ({rates}); "
            f"raise max_steps"))
    model = stack.model(i, rec.params)                                  # float32 SelfAttention at the stop step
    tokens, relevant, targets = (x[i].cpu() for x in (batch.tokens, batch.relevant_mask, batch.targets))
    with torch.no_grad():
        out = model(tokens)                                               # logits (N, K), attn (N, T)
        mass = float((out.attn * relevant).sum(-1).mean())
        acc = float((out.logits.argmax(-1) == targets).float().mean())
    loss, step = float(rec.loss_final[i]), int(rec.stopped_at[i])
    if loss < (1 - MATCH_RTOL) * loss_target:
        return SampledRun(name, r, seed, "overshot", **curves, p=mass, accuracy=acc, steps=step, loss=loss, message=(
            f"one GD step ({rates}) took the training loss from above {loss_target:g} to {loss:.3g} at step {step}: "
            f"not at the matched loss, the step is too large (lower gd_lr)"))
    return SampledRun(name, r, seed, "reached", **curves, p=mass, accuracy=acc, steps=step, loss=loss)
