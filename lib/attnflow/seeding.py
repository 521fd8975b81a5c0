"""One seeding helper and one seeding policy (DESIGN.md, principle 8): the same parameters give
the same numbers.

**Streams.** Each random draw of a run of seed ``s`` has a *role*, and :func:`stream` gives the
integer seed of that role's generator, ``s + STREAMS[role]``; a new kind of draw gets a new role
here, never an offset written at its call site. The offsets are the book's historical
conventions, kept exactly so that no drawn number moved when the policy got one place (the
claims ledger at book defaults is unchanged); roles with the same offset share the integer (a
real-data model's weights and its minibatch order both come from ``s``, in generators of their
own):

==============  ==========  ====================================================================
role            offset      the draw
==============  ==========  ====================================================================
``data``        0           the sampled data of seed s (the sharpening datasets of a sweep and of
                            the sampled mechanism runs; the Lemma-1 pointer task; the real-data
                            training subset)
``init``        1           a model's initial weights drawn beside its data, one model per seed
                            (the sampled mechanism runs of Corollary 5, the Lemma-1 factors)
``sweep_init``  1_000_003   the initial weights of the sharpening sweeps (``experiments``): far
                            from every data seed, so init s never equals the data of seed s + 1
``eval``        1           held-out data drawn beside the training data (the real-text
                            evaluation windows, the real-data test subset)
``real_init``   0           the initial weights of a real-data model (its data: a fixed corpus)
``minibatch``   0           the minibatch order of ``attnflow.sweep.train``
==============  ==========  ====================================================================

Seeds of *replicates* (the focus–dilution pages' ``n_seeds`` data seeds) are consecutive:
:func:`replicates` gives ``data_seed, data_seed + 1, …``. Deterministic initial states drawn by
a paper's model from the seed itself (the focus–dilution spec's seed-1 draw ``model.init_params``,
numpy's ``default_rng(seed)``) take the seed unchanged.
"""

from __future__ import annotations

import os
import random

import numpy as np
import torch

STREAMS: dict[str, int] = {
    "data": 0,
    "init": 1,
    "sweep_init": 1_000_003,
    "eval": 1,
    "real_init": 0,
    "minibatch": 0,
}

SEED_POLICY = (
    "Every page takes a `seed` parameter; `seed_everything(seed)` seeds Python, NumPy and torch "
    "(CPU and CUDA) once at the top of the page, and samplers that must not depend on call order "
    "take their own `torch.Generator` from `generator(seed)`. Each random draw of a run has a role "
    "and its generator is seeded with `stream(seed, role)` = seed + offset: "
    + ", ".join(f"{role} +{offset:_}" for role, offset in STREAMS.items())
    + "; replicate seeds are consecutive (`replicates(data_seed, n)`). Theory runs are deterministic "
    "(population losses, float64); sampled runs are deterministic on CPU for a given seed."
)


def _check(seed) -> None:
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, received {seed!r}")


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch (all devices)."""
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, received {seed!r}")
    os.environ.setdefault("PYTHONHASHSEED", str(seed))
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def stream(seed: int, role: str) -> int:
    """The seed of role ``role``'s generator for a run of seed ``seed`` (see :data:`STREAMS`)."""
    if role not in STREAMS:
        raise ValueError(f"seeding role {role!r} unknown; allowed: one of {', '.join(STREAMS)}")
    _check(seed)
    return int(seed) + STREAMS[role]


def replicates(seed: int, n: int) -> list[int]:
    """The seeds of ``n`` replicates from ``seed``: seed, seed + 1, …, seed + n − 1."""
    _check(seed)
    if not isinstance(n, int) or n < 0:
        raise ValueError(f"the number of replicates must be an integer ≥ 0, received {n!r}")
    return [int(seed) + k for k in range(n)]


def generator(seed: int, device: str | torch.device = "cpu") -> torch.Generator:
    """A torch generator of its own, so that one sampler's draws do not shift another's."""
    g = torch.Generator(device=device)
    g.manual_seed(int(seed))
    return g
