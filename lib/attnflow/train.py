"""What the book's one training engine shares with its callers: optimizer names, the divergence
error, and torch's optimizers as the reference the engine is checked against.

There is one training loop, ``attnflow.sweep.train``: P models stacked on a leading axis (one
model is P = 1), each with its own learning rates (η_QK, η_OV, ...), trained by full-batch GD or
minibatch SGD / Adam / AdamW whose updates are torch.optim's bit for bit; it stops models at a
matched training loss, marks or raises on divergence and records on a schedule (a ``record``
hook for any observed quantity). GD is ``θ ← θ − η ⊙ ∇L``, the Euler discretisation of the flow
in ``attnflow.flow``. The sharpening experiments, the mechanism runs, the real-data runs, the
scalar reduction's GD and the focus–dilution training all go through it.

:func:`make_optimizer` builds the torch optimizer with one parameter group per circuit that a
single model would be trained with; the tests train a model alone with it and compare the
engine's result bit for bit.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import torch

__all__ = ["TrainingDiverged", "OPTIMIZERS", "make_optimizer"]

OPTIMIZERS = ("gd", "sgd", "adam", "adamw")


class TrainingDiverged(FloatingPointError):
    """The training loss became NaN or infinite."""


def make_optimizer(
    groups: Mapping[str, tuple[Sequence[torch.Tensor], float]],
    optimizer: str = "gd",
    *,
    momentum: float = 0.0,
    weight_decay: float = 0.0,
    betas: tuple[float, float] = (0.9, 0.999),
) -> torch.optim.Optimizer:
    """A torch optimizer with one parameter group per circuit (name -> (params, lr)): the update
    ``attnflow.sweep.train`` reproduces for each model ("gd" is SGD without momentum)."""
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
