"""Discrete training with one learning rate per parameter group (η_QK, η_OV, ...).

    traj = train(loss_fn, {"qk": ([W_q, W_k], r * eta), "ov": ([W_o, W_v], eta)},
                 optimizer="gd", steps=2000, record=lambda step: {"p": attn_mass()})

``loss_fn(step)`` returns the scalar loss to descend at that step (full batch for GD, a fresh
minibatch for SGD). GD is plain ``θ ← θ − η ⊙ ∇L`` (the Euler discretisation of the flow in
``attnflow.flow``); SGD, Adam and AdamW are torch's optimizers with the same groups.
A non-finite loss stops training with :class:`TrainingDiverged` naming the step.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import torch

from attnflow.progress import progress

__all__ = ["train", "TrainRecord", "TrainingDiverged", "OPTIMIZERS", "make_optimizer"]

OPTIMIZERS = ("gd", "sgd", "adam", "adamw")


class TrainingDiverged(FloatingPointError):
    """The training loss became NaN or infinite."""


@dataclass
class TrainRecord:
    """What a training run recorded: the loss at recorded steps and any observed quantities."""

    steps: list[int] = field(default_factory=list)
    loss: list[float] = field(default_factory=list)
    records: dict[str, list[Any]] = field(default_factory=dict)
    stopped_at: int | None = None          # step at which ``stop`` returned True, if it did

    def array(self, key: str) -> np.ndarray:
        if key == "loss":
            return np.asarray(self.loss)
        if key == "step":
            return np.asarray(self.steps)
        return np.asarray(self.records[key])


def make_optimizer(
    groups: Mapping[str, tuple[Sequence[torch.Tensor], float]],
    optimizer: str = "gd",
    *,
    momentum: float = 0.0,
    weight_decay: float = 0.0,
    betas: tuple[float, float] = (0.9, 0.999),
) -> torch.optim.Optimizer:
    """A torch optimizer with one parameter group per circuit (name -> (params, lr))."""
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {OPTIMIZERS}, received {optimizer!r}")
    param_groups = []
    for name, (params, lr) in groups.items():
        if not (isinstance(lr, (int, float)) and math.isfinite(lr) and lr > 0):
            raise ValueError(f"learning rate of group {name!r} must be a finite number > 0, received {lr!r}")
        param_groups.append({"params": list(params), "lr": float(lr), "name": name})
    if optimizer == "gd":
        return torch.optim.SGD(param_groups, lr=param_groups[0]["lr"], momentum=0.0)
    if optimizer == "sgd":
        return torch.optim.SGD(param_groups, lr=param_groups[0]["lr"], momentum=momentum, weight_decay=weight_decay)
    if optimizer == "adam":
        return torch.optim.Adam(param_groups, lr=param_groups[0]["lr"], betas=betas, weight_decay=weight_decay)
    return torch.optim.AdamW(param_groups, lr=param_groups[0]["lr"], betas=betas, weight_decay=weight_decay)


def train(
    loss_fn: Callable[[int], torch.Tensor],
    groups: Mapping[str, tuple[Sequence[torch.Tensor], float]],
    *,
    optimizer: str = "gd",
    steps: int,
    record_every: int = 1,
    record: Callable[[int], Mapping[str, Any]] | None = None,
    stop: Callable[[int, float], bool] | None = None,
    momentum: float = 0.0,
    weight_decay: float = 0.0,
    desc: str = "train",
) -> TrainRecord:
    """Run ``steps`` optimizer steps; record loss (and ``record(step)``) every ``record_every``.

    ``stop(step, loss) -> bool`` ends training early (e.g. at a matched training loss); the
    state at that step is recorded and ``TrainRecord.stopped_at`` is set.
    """
    if not isinstance(steps, int) or steps < 0:
        raise ValueError(f"steps must be a non-negative integer, received {steps!r}")
    if record_every < 1:
        raise ValueError(f"record_every must be ≥ 1, received {record_every!r}")
    opt = make_optimizer(groups, optimizer, momentum=momentum, weight_decay=weight_decay)
    traj = TrainRecord()

    def log(step: int, loss_value: float) -> None:
        traj.steps.append(step)
        traj.loss.append(loss_value)
        if record is not None:
            with torch.no_grad():
                for k, v in record(step).items():
                    traj.records.setdefault(k, []).append(v)

    for step in progress(range(steps + 1), desc=desc):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(step)
        value = float(loss.detach())
        if not math.isfinite(value):
            rates = ", ".join(f"{g['name']}={g['lr']:g}" for g in opt.param_groups)
            raise TrainingDiverged(
                f"training diverged at step {step}: loss = {value}; lower the learning rates "
                f"({rates}) or the init scale"
            )
        stop_now = stop is not None and stop(step, value)
        if step % record_every == 0 or step == steps or stop_now:
            log(step, value)
        if stop_now:
            traj.stopped_at = step
            break
        if step == steps:
            break
        loss.backward()
        opt.step()
    return traj
