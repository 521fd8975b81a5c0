"""One seeding helper (DESIGN.md, principle 8): the same parameters give the same numbers."""
from __future__ import annotations

import os
import random

import numpy as np
import torch

__all__ = ["seed_everything", "generator", "SEED_POLICY"]

SEED_POLICY = (
    "Every page takes a `seed` parameter; `seed_everything(seed)` seeds Python, NumPy and torch "
    "(CPU and CUDA) once at the top of the page, and samplers that must not depend on call order "
    "take their own `torch.Generator` from `generator(seed)`. Theory runs are deterministic "
    "(population losses, float64); sampled runs are deterministic on CPU for a given seed."
)


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch (all devices)."""
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, received {seed!r}")
    os.environ.setdefault("PYTHONHASHSEED", str(seed))
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def generator(seed: int, device: str | torch.device = "cpu") -> torch.Generator:
    """A torch generator of its own, so that one sampler's draws do not shift another's."""
    g = torch.Generator(device=device)
    g.manual_seed(int(seed))
    return g
