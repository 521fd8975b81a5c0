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

import numpy as np
import torch

from attnflow import device as devices
from attnflow import seeding, train
from attnflow.sharpening.data import Task, population, sample
from attnflow.sharpening.model import ModelConfig, SelfAttention, circuits
from attnflow.sharpening.reduced import ReducedRun, ReducedSystem, solve
from attnflow.sharpening.reduction import constants, coordinates, init_on_manifold

__all__ = ["reduced_at_matched_loss", "full_model_at_matched_loss", "sampled_at_loss"]


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


def sampled_at_loss(parametrization: str, task: Task, *, lr_ratio: float, n_samples: int = 2000, lr_ov: float = 0.1,
                    init_std: float = 0.1, loss_target: float = 0.1, max_steps: int = 8000, seed: int = 0,
                    device: str = "auto") -> dict:
    """Full-batch GD of the full model (float32) on a sampled dataset from N(0, (init_std/√d)²),
    η_QK = r·η_OV, until the training loss first drops below ``loss_target`` (spec §8.2).

    Returns the mean attention mass on the distinct (relevant) tokens, the training accuracy,
    the step reached and the loss. Data from ``generator(seed)``, init from ``generator(seed + 1)``.
    """
    dev = devices.resolve(device)
    batch = sample(task, n_samples, seeding.generator(seed)).to(dev)
    model = SelfAttention(ModelConfig(parametrization, task.vocab_size, task.n_classes, dtype=devices.EXPERIMENT_DTYPE))
    model.init_gaussian(init_std / model.cfg.d ** 0.5, seeding.generator(seed + 1)).to(dev)
    traj = train.train(lambda _k: model.loss(batch), model.groups(lr_ratio * lr_ov, lr_ov), steps=max_steps,
                       stop=lambda _k, loss: loss < loss_target, record_every=max_steps,
                       desc=f"GD {parametrization} r={lr_ratio:g}")
    if traj.stopped_at is None:
        raise RuntimeError(f"{parametrization}, r={lr_ratio:g}: the training loss stayed above {loss_target} "
                           f"for {max_steps} steps; raise max_steps")
    with torch.no_grad():
        out = model(batch.tokens)                                         # logits (N, K), attn (N, T)
        mass = float((out.attn * batch.relevant_mask).sum(-1).mean())
        acc = float((out.logits.argmax(-1) == batch.targets).float().mean())
    return {"p": mass, "accuracy": acc, "steps": traj.stopped_at, "loss": traj.loss[-1]}
