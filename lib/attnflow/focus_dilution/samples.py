"""Training data of the focus–dilution model (spec focus_dilution.md §4.2, Q7): sampled sequences,
their sufficient statistics, and the example rows every training run consumes.

**Data.** ``MarkovSequences`` is a torch ``Dataset`` of N sequences x_1..x_{s+1} drawn from the
chain started at π (``chain.sample_sequences``); item n is (context x_1..x_s, target x_{s+1}).
``MarkovContexts`` holds the same data as counts only (memory O(N d), cheap for s ~ 10⁴).

**Which positions enter the loss.** ``positions="last"`` (default): one example per sequence —
the query is the last context token x_s, it attends over x_1..x_s and predicts x_{s+1}. This is
the model of §4.2, and the one whose N, s → ∞ limit is the population loss of §4.3: by
ergodicity the context histogram n/s → π, so the attention weights ∝ n_k e^{S_ik} tend to
π_k e^{S_ik}, and the empirical mean over N sequences tends to the expectation.
``positions="all"`` (GPT-style) makes every position t = 1..s a query over its prefix
x_1..x_t with target x_{t+1}: s times more targets, but short prefixes have histograms far from
π, so it reaches the same limit only up to boundary effects that vanish like O(log s / s).

**Counts are sufficient.** The model has no positional encoding, so a context enters only through
its token counts n ∈ ℕ^d: o = Σ_k n_k e^{S_qk} h_k / Σ_k n_k e^{S_qk}. An :class:`Examples` set
stores rows (query q, counts n (d,), target weights w (d,)), with identical (q, n) rows merged;
the population loss is the same form with n = π and w = π_q P_q· (d rows, ``population_examples``).
One code path serves finite samples and the limit (``training.train_runs``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attnflow import seeding
from attnflow.focus_dilution.chain import MarkovChain, sample_sequences

__all__ = ["MarkovSequences", "MarkovContexts", "Examples", "population_examples", "POSITIONS", "WALKS"]

POSITIONS = ("last", "all")
WALKS = ("compiled", "numpy")
WALK_BLOCK = 1 << 18  # uniforms drawn at once by the compiled walk (2 MiB: they stay in cache for the walk)


def _walk_kernel(cdf, u, x, query, counts):  # pragma: no cover - compiled by _compiled_walk
    """Walk N chains len(u) steps: at each step the current token x[n] enters counts[n] (and, at the last
    step, query[n]), and the next is the number of j < d − 1 with cdf[x[n], j] ≤ u[step, n] — numpy's
    inverse-CDF step, the same comparisons (cdf = cumsum(P, 1), row i contiguous: read as cum[j, i] by
    column it measured 3× slower)."""
    steps, n_samples = u.shape
    d = cdf.shape[0]
    for t in range(steps):
        last = t == steps - 1
        for n in range(n_samples):
            xi = x[n]
            counts[n, xi] += 1
            if last:
                query[n] = xi
            v = u[t, n]
            nxt = 0
            for j in range(d - 1):
                nxt += cdf[xi, j] <= v  # branch-free: the comparisons are unpredictable
            x[n] = nxt


_COMPILED = []


def _compiled_walk():
    """:func:`_walk_kernel` compiled by numba, once per process (cached on disk by numba)."""
    if not _COMPILED:
        from numba import njit  # here, not at import: numba costs ~0.5 s, and most imports of this module never walk

        _COMPILED.append(njit(cache=True)(_walk_kernel))
    return _COMPILED[0]


class MarkovSequences(torch.utils.data.Dataset):
    """N sequences of length s + 1 from ``chain`` started at π; tokens (N, s + 1) int64."""

    def __init__(self, chain: MarkovChain, n_samples: int, seq_len: int, seed: int = 0):
        for name, v, lo in (("n_samples", n_samples, 1), ("seq_len", seq_len, 1)):
            if isinstance(v, bool) or not isinstance(v, int) or v < lo:
                raise ValueError(f"{name} = {v!r}; allowed: an integer ≥ {lo}")
        self.chain, self.n_samples, self.seq_len, self.seed = chain, n_samples, seq_len, seed
        self.tokens = sample_sequences(chain, n_samples, seq_len, seeding.generator(seed))  # (N, s + 1)

    def __len__(self) -> int:
        return self.n_samples

    def __getitem__(self, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.tokens[n, :-1], self.tokens[n, -1]  # context (s,), target ()

    def transition_counts(self) -> np.ndarray:
        """Counts of every observed transition x_t → x_{t+1}, (d, d)."""
        d = self.chain.d
        pairs = self.tokens[:, :-1] * d + self.tokens[:, 1:]  # (N, s)
        return torch.bincount(pairs.reshape(-1), minlength=d * d).reshape(d, d).numpy()

    def empirical_P(self) -> np.ndarray:
        """Row-normalised transition counts P̂ (d, d); → P as N·s → ∞."""
        C = self.transition_counts().astype(float)
        return C / np.maximum(C.sum(1, keepdims=True), 1.0)

    def examples(self, positions: str = "last") -> "Examples":
        """Training rows for the chosen loss positions (see the module docstring)."""
        if positions not in POSITIONS:
            raise ValueError(f"positions = {positions!r}; allowed: one of {POSITIONS}")
        d, x = self.chain.d, self.tokens
        if positions == "last":
            counts = torch.zeros(len(x), d, dtype=torch.long).scatter_add_(1, x[:, :-1], torch.ones_like(x[:, :-1]))
            return Examples.from_rows(x[:, -2], counts, x[:, -1], d)  # counts (N, d)
        prefix = torch.nn.functional.one_hot(x[:, :-1], d).cumsum(1)  # (N, s, d): counts of x_1..x_t
        return Examples.from_rows(x[:, :-1].reshape(-1), prefix.reshape(-1, d), x[:, 1:].reshape(-1), d)


class MarkovContexts(torch.utils.data.Dataset):
    """The same data as :class:`MarkovSequences`, kept as sufficient statistics only: item n is
    (counts of x_1..x_s (d,), query x_s, target x_{s+1}). The chain is walked position by
    position for all N sequences at once (inverse-CDF steps, numpy float64 uniforms) and only the
    counts are kept, so memory is O(N d) and long contexts (s ~ 10⁴) are cheap. ``walk="compiled"``
    (default) walks it in a numba loop on the same uniforms, drawn in blocks of positions from the same
    generator (``Generator.random((P, N))`` is P calls of ``random(N)``), so counts, query and target are
    those of ``walk="numpy"`` (the reference, tests/test_markov_walk.py), 2.2–2.8× faster at N = 65,536 (issue 23;
    bound by the generator's draws)."""

    def __init__(self, chain: MarkovChain, n_samples: int, seq_len: int, seed: int = 0, walk: str = "compiled"):
        for name, v in (("n_samples", n_samples), ("seq_len", seq_len)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} = {v!r}; allowed: an integer ≥ 1")
        if walk not in WALKS:
            raise ValueError(f"walk = {walk!r}; allowed: one of {WALKS}")
        self.chain, self.n_samples, self.seq_len, self.seed = chain, n_samples, seq_len, seed
        d, rng = chain.d, np.random.default_rng(seed)
        cum = np.cumsum(chain.P, 1).T.copy()  # (d, d): cum[j, i] = P(next ≤ j | i)
        x = np.searchsorted(np.cumsum(chain.pi), rng.random(n_samples), side="right").clip(max=d - 1)  # (N,) x_1 ~ π
        if walk == "numpy":
            flat, base = np.zeros(n_samples * d, np.int64), np.arange(n_samples) * d
            for _ in range(seq_len):  # x_1 .. x_s enter the counts
                flat += np.bincount(base + x, minlength=n_samples * d)
                query, u = x, rng.random(n_samples)
                x = sum((cum[j][x] <= u).astype(np.int64) for j in range(d - 1))  # (N,) next token
            counts = flat.reshape(n_samples, d)
        else:
            counts, query, x = np.zeros((n_samples, d), np.int64), x.copy(), x.astype(np.int64)
            block = min(seq_len, max(1, WALK_BLOCK // n_samples))  # positions per draw of uniforms
            cdf, u = cum.T.copy(), np.empty((block, n_samples))  # one buffer, refilled (it stays in cache)
            for start in range(0, seq_len, block):
                step = u[: min(block, seq_len - start)]
                rng.random(out=step)
                _compiled_walk()(cdf, step, x, query, counts)
        self.counts = torch.from_numpy(counts)  # (N, d)
        self.query, self.target = torch.from_numpy(query), torch.from_numpy(x)  # (N,), (N,)

    def __len__(self) -> int:
        return self.n_samples

    def __getitem__(self, n: int):
        return self.counts[n], self.query[n], self.target[n]

    def examples(self, positions: str = "last") -> "Examples":
        if positions != "last":
            raise ValueError(
                f"positions = {positions!r}: MarkovContexts keeps only the last position; "
                "use MarkovSequences for positions='all'"
            )
        return Examples.from_rows(self.query, self.counts, self.target, self.chain.d)


@dataclass
class Examples:
    """Rows of a loss −Σ_rows Σ_j w_j log P̂_j(q, n): query (B,), counts (d, B), weights (d, B)."""

    query: torch.Tensor  # (B,) int64 query token
    counts: torch.Tensor  # (d, B) float64 context histogram (counts, or π in the limit)
    weights: torch.Tensor  # (d, B) float64 target weights, summing to 1 over the set

    @classmethod
    def from_rows(cls, query: torch.Tensor, counts: torch.Tensor, target: torch.Tensor, d: int) -> "Examples":
        """Merge identical (query, counts) rows; each example gets weight 1/(number of examples)."""
        key = torch.cat([query[:, None], counts], 1)  # (B0, 1 + d)
        uniq, inverse = torch.unique(key, dim=0, return_inverse=True)  # (B, 1 + d), (B0,)
        w = torch.zeros(len(uniq), d, dtype=torch.float64)
        w.index_put_((inverse, target), torch.ones(len(target), dtype=torch.float64), accumulate=True)
        return cls(uniq[:, 0].clone(), uniq[:, 1:].T.to(torch.float64).contiguous(), (w / len(target)).T.contiguous())

    @property
    def rows(self) -> int:
        return len(self.query)


def population_examples(chain: MarkovChain) -> Examples:
    """The exact population loss of §4.3 as d rows: query i, counts π, target weights π_i P_i·."""
    P, pi = chain.tensors()
    return Examples(
        torch.arange(chain.d), pi[:, None].expand(-1, chain.d).contiguous(), (pi[:, None] * P).T.contiguous()
    )
