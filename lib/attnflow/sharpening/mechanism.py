"""Corollary 5 — the sharpening mechanism, measured at matched loss on three levels.

Mechanism [paper]; argument [reconstruction] (claims A6, A12, A14). At a fixed loss −log s*
the margin u = a·p is fixed (``symbolic.matched_loss``), so whichever circuit is slower on the
OV side must be compensated by sharper attention p; faster QK learning (larger r, or the
growing rescaling 2|b| of a factorized QK circuit) supplies it. Three levels:

- :func:`reduced_at_matched_loss` — the reduced ODE with the matched-loss event (spec §8.1);
- :func:`full_model_at_matched_loss` — the full torch model's population gradient flow from the
  symmetric/balanced manifold, learning rates chosen so it *is* the normalized reduced system;
- :func:`sampled_at_loss` — discrete GD of the full model on a sampled dataset from a Gaussian
  (not balanced) initialization, stopped when the training loss first drops below a target
  (spec §8.2).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attnflow import device as devices
from attnflow import seeding, train
from attnflow.sharpening.data import Task, population, sample
from attnflow.sharpening.model import ModelConfig, SelfAttention, circuits
from attnflow.sharpening.reduced import ReducedRun, ReducedSystem, solve
from attnflow.sharpening.reduction import constants, coordinates, init_on_manifold

__all__ = ["reduced_at_matched_loss", "full_model_at_matched_loss", "sampled_at_loss", "SampledRun"]


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
class SampledRun:
    """One GD run of :func:`sampled_at_loss`: the measurements at the matched loss, or why there are none.

    ``status`` is ``"reached"`` (the training loss dropped below the target), ``"overshot"`` (it
    did, but one step jumped more than ``MATCH_RTOL`` of the target below it, so the run is not at
    the matched loss: the step is too large), ``"diverged"`` (a non-finite loss, or a loss that
    rose well above its minimum: the step is above the stability limit of GD) or ``"slow"``
    (still decreasing after ``max_steps``)."""

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

    def keys(self):
        """The measurements as a mapping (``{**run}``): p, accuracy, steps, loss."""
        return ("p", "accuracy", "steps", "loss")

    def __getitem__(self, key: str):
        return getattr(self, key)


UNSTABLE_RISE = 1.5   # a loss this many times above its running minimum marks an unstable step
MATCH_RTOL = 0.2      # the loss at the stopping step must be within 20% of the target (matched loss)


def sampled_at_loss(parametrization: str, task: Task, *, lr_ratio: float, n_samples: int = 2000, lr_ov: float = 0.1,
                    init_std: float = 0.1, loss_target: float = 0.1, max_steps: int = 8000, seed: int = 0,
                    device: str = "auto") -> SampledRun:
    """Full-batch GD of the full model (float32) on a sampled dataset from N(0, (init_std/√d)²),
    η_QK = r·η_OV, until the training loss first drops below ``loss_target`` (spec §8.2).

    Returns a :class:`SampledRun` with the mean attention mass on the distinct (relevant) tokens
    and the training accuracy at that step. Data from ``generator(seed)``, init from
    ``generator(seed + 1)``. A run that does not reach the target says why: a diverging or
    oscillating loss (the GD step above its stability limit: lower ``gd_lr`` or r) or a loss
    still falling (raise ``max_steps``).
    """
    dev = devices.resolve(device)
    batch = sample(task, n_samples, seeding.generator(seed)).to(dev)
    model = SelfAttention(ModelConfig(parametrization, task.vocab_size, task.n_classes, dtype=devices.EXPERIMENT_DTYPE))
    model.init_gaussian(init_std / model.cfg.d ** 0.5, seeding.generator(seed + 1)).to(dev)
    rates = f"η_OV = {lr_ov:g}, η_QK = {lr_ratio * lr_ov:g}"
    try:
        traj = train.train(lambda _k: model.loss(batch), model.groups(lr_ratio * lr_ov, lr_ov), steps=max_steps,
                           stop=lambda _k, loss: loss < loss_target, record_every=max(1, max_steps // 200),
                           desc=f"GD {parametrization} r={lr_ratio:g}")
    except train.TrainingDiverged as err:
        return SampledRun(parametrization, lr_ratio, seed, "diverged",
                          message=f"GD unstable ({rates}): {err}; the step is above the stability limit, lower gd_lr")
    if traj.stopped_at is None:
        loss = np.asarray(traj.loss, dtype=float)
        i_min = int(np.argmin(loss))
        if loss[-1] > UNSTABLE_RISE * loss[i_min]:
            return SampledRun(parametrization, lr_ratio, seed, "diverged", loss=float(loss[-1]), message=(
                f"GD unstable ({rates}): the training loss rose from its minimum {loss[i_min]:.3g} (step "
                f"{traj.steps[i_min]}) to {loss[-1]:.3g} at step {traj.steps[-1]}; the step is above the "
                f"stability limit of GD, lower gd_lr"))
        return SampledRun(parametrization, lr_ratio, seed, "slow", loss=float(loss[-1]), message=(
            f"the training loss is still {loss[-1]:.3g} > {loss_target:g} after {max_steps} steps ({rates}); "
            f"raise max_steps"))
    with torch.no_grad():
        out = model(batch.tokens)                                         # logits (N, K), attn (N, T)
        mass = float((out.attn * batch.relevant_mask).sum(-1).mean())
        acc = float((out.logits.argmax(-1) == batch.targets).float().mean())
    loss = float(traj.loss[-1])
    if loss < (1 - MATCH_RTOL) * loss_target:
        return SampledRun(parametrization, lr_ratio, seed, "overshot", p=mass, accuracy=acc, steps=traj.stopped_at,
                          loss=loss, message=(f"one GD step ({rates}) took the training loss from above {loss_target:g} "
                                              f"to {loss:.3g} at step {traj.stopped_at}: not at the matched loss, "
                                              f"the step is too large (lower gd_lr)"))
    return SampledRun(parametrization, lr_ratio, seed, "reached", p=mass, accuracy=acc, steps=traj.stopped_at,
                      loss=loss)
