"""Synthetic distinct/common-token data of the sharpening paper (spec §5).

[paper] setting: distinct (class-specific) and common (class-agnostic) tokens with orthogonal
embeddings; [reconstruction] generator, after the "scan and snap" setting of Tian et al. (2023).

One sample: draw a class c ~ Unif[K]; the context holds ``distinct_per_seq`` tokens of D_c at
uniformly random positions and T − 1 − distinct_per_seq common tokens drawn i.i.d. from the M
common ones; the query token q is appended at the last position; the target is y = c.

Two views of the same distribution, both returned as a :class:`Batch`:

- :func:`sample` — a sampled dataset of N sequences (weights 1/N): the *sampled* loss;
- :func:`population` — every composition of the context with its probability (weights sum to 1):
  the exact *population* loss. Without positional encoding a sequence acts as a multiset, so the
  expectation is a sum over multisets of tokens, C(M + T − 3, T − 2) of them per class with one
  distinct token; keep M small (the reduced dynamics depend on M only through a constant, see
  :mod:`attnflow.sharpening.reduction`).

Vocabulary ids: distinct tokens first (class c owns ``c·m_D … c·m_D + m_D − 1``), then the M
common tokens, then the query token (id V − 1).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import torch

from attnflow.params import ParameterError

POPULATION_MAX = 200_000  # most compositions of an exact population (memory of the per-sequence forward)


@dataclass(frozen=True)
class Task:
    """The distinct/common-token task (spec §5.1); defaults are the spec's generator."""

    n_classes: int = 5  # K classes (= next tokens)
    n_common: int = 20  # M common (class-agnostic) tokens
    seq_len: int = 12  # T, including the query token at the last position
    distinct_per_class: int = 1  # m_D = |D_c|, distinct tokens owned by each class
    distinct_per_seq: int = 1  # distinct tokens of the class placed in each context
    label_noise: float = 0.0  # probability ε that the target is replaced by a uniform class

    def __post_init__(self):
        def bad(name, allowed):
            raise ParameterError(f"parameter {name!r}: received {getattr(self, name)!r}; allowed: {allowed}")

        if self.n_classes < 2:
            bad("n_classes", "an integer ≥ 2")
        if self.n_common < 1:
            bad("n_common", "an integer ≥ 1")
        if self.distinct_per_class < 1:
            bad("distinct_per_class", "an integer ≥ 1")
        if not 1 <= self.distinct_per_seq <= self.seq_len - 1:
            bad("distinct_per_seq", f"an integer in [1, seq_len − 1 = {self.seq_len - 1}]")
        if self.seq_len < 2:
            bad("seq_len", "an integer ≥ 2 (context and query)")
        if not 0.0 <= self.label_noise < 1.0:
            bad("label_noise", "a number in [0, 1)")

    @property
    def vocab_size(self) -> int:
        """V = K·m_D + M + 1."""
        return self.n_classes * self.distinct_per_class + self.n_common + 1

    @property
    def query_id(self) -> int:
        return self.vocab_size - 1

    def distinct_ids(self, c: int | None = None) -> list[int]:
        """Ids of D_c (or of all distinct tokens when c is None)."""
        m = self.distinct_per_class
        return list(range(c * m, (c + 1) * m)) if c is not None else list(range(self.n_classes * m))

    def common_ids(self) -> list[int]:
        start = self.n_classes * self.distinct_per_class
        return list(range(start, start + self.n_common))

    @property
    def n_common_positions(self) -> int:
        """Context positions holding a common token, T − 1 − distinct_per_seq."""
        return self.seq_len - 1 - self.distinct_per_seq

    def n_compete(self, attend_self: bool = False) -> int:
        """n: positions competing with the distinct token in the softmax (spec §5.2)."""
        return self.n_common_positions + int(attend_self)


@dataclass
class Batch:
    """Sequences with targets; the loss of a model is Σ_i weights_i · CE_i."""

    tokens: torch.Tensor  # (B, T) long, query token at position T − 1
    targets: torch.Tensor  # (B,) long, class in [0, K)
    relevant_mask: torch.Tensor  # (B, T) bool, True at the distinct-token positions (R)
    weights: torch.Tensor  # (B,) float64, sum 1 (1/N when sampled, probabilities when exact)

    def __len__(self) -> int:
        return self.tokens.shape[0]

    def to(self, device) -> "Batch":
        return Batch(*(x.to(device) for x in (self.tokens, self.targets, self.relevant_mask, self.weights)))


def sample(task: Task, n_samples: int, generator: torch.Generator) -> Batch:
    """A sampled dataset of ``n_samples`` sequences (spec §5.1), uniform weights 1/N."""
    if n_samples < 1:
        raise ParameterError(f"parameter 'n_samples': received {n_samples!r}; allowed: an integer ≥ 1")
    K, T, j = task.n_classes, task.seq_len, task.distinct_per_seq
    N = n_samples
    cls = torch.randint(0, K, (N,), generator=generator)  # (N,)
    which = torch.randint(0, task.distinct_per_class, (N, j), generator=generator)  # (N, j)
    distinct = cls[:, None] * task.distinct_per_class + which  # (N, j)
    common = task.common_ids()[0] + torch.randint(0, task.n_common, (N, T - 1 - j), generator=generator)
    context = torch.cat([distinct, common], dim=1)  # (N, T-1)
    perm = torch.argsort(torch.rand(N, T - 1, generator=generator), dim=1)  # random positions
    context = torch.gather(context, 1, perm)  # (N, T-1)
    tokens = torch.cat([context, torch.full((N, 1), task.query_id)], dim=1)  # (N, T)
    relevant = torch.cat([perm < j, torch.zeros(N, 1, dtype=torch.bool)], dim=1)  # (N, T)
    targets = cls.clone()
    if task.label_noise > 0:
        flip = torch.rand(N, generator=generator) < task.label_noise
        targets[flip] = torch.randint(0, K, (int(flip.sum()),), generator=generator)
    weights = torch.full((N,), 1.0 / N, dtype=torch.float64)
    return Batch(tokens, targets, relevant, weights)


def n_compositions(task: Task) -> int:
    """Number of sequences in :func:`population`: K · multisets(D_c) · multisets(common) · targets."""
    j, m, M, c = task.distinct_per_seq, task.distinct_per_class, task.n_common, task.n_common_positions
    n_targets = task.n_classes if task.label_noise > 0 else 1
    return task.n_classes * math.comb(m + j - 1, j) * math.comb(M + c - 1, c) * n_targets


def _multisets(ids: list[int], size: int):
    """Every multiset of ``size`` items from ``ids`` with its multinomial probability."""
    for combo in itertools.combinations_with_replacement(ids, size):
        counts = [combo.count(i) for i in set(combo)]
        prob = math.factorial(size) / math.prod(math.factorial(k) for k in counts) / len(ids) ** size
        yield list(combo), prob


def population(task: Task, max_sequences: int = POPULATION_MAX) -> Batch:
    """The exact population of the task: one sequence per composition, weight = its probability.

    Positions do not matter to a model without positional encoding, so each multiset is
    represented once (distinct tokens first, then common ones, then the query).
    """
    total = n_compositions(task)
    if total > max_sequences:
        raise ParameterError(
            f"the exact population of this task has {total:,} compositions (K={task.n_classes}, "
            f"M={task.n_common}, T={task.seq_len}), above max_sequences={max_sequences:,}; lower "
            f"n_common or seq_len (the reduced dynamics depend on M only through a constant), or "
            f"use a sampled dataset"
        )
    K, j = task.n_classes, task.distinct_per_seq
    rows, targets, weights = [], [], []
    for c in range(K):
        for d_tokens, p_d in _multisets(task.distinct_ids(c), j):
            for c_tokens, p_c in _multisets(task.common_ids(), task.n_common_positions):
                seq = d_tokens + c_tokens + [task.query_id]
                base = p_d * p_c / K
                if task.label_noise > 0:
                    for y in range(K):
                        q = task.label_noise / K + (1.0 - task.label_noise) * (y == c)
                        rows.append(seq), targets.append(y), weights.append(base * q)
                else:
                    rows.append(seq), targets.append(c), weights.append(base)
    tokens = torch.tensor(rows, dtype=torch.long)  # (S, T)
    relevant = torch.zeros_like(tokens, dtype=torch.bool)
    relevant[:, :j] = True  # distinct tokens first
    return Batch(tokens, torch.tensor(targets), relevant, torch.tensor(weights, dtype=torch.float64))
