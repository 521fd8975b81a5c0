"""Token classification sets with relevant-token masks (sharpening.md §7.2): the common schema.

Every example is a token list, a label and a relevant-token mask of the same length (SQuAD: the
answer span; HateXplain: the rationale; SVA: the subject head noun). ``encode`` turns a split into
padded tensors for the one-layer attention models, cached on disk keyed on the data hash.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import torch

from attnflow.data.files import cached
from attnflow.data.tokenizer import WordTokenizer


@dataclass
class Split:
    """One split, column-wise. ``relevant[k]`` has one 0/1 entry per token of ``tokens[k]``."""

    tokens: list[list[str]]
    labels: np.ndarray  # (N,) int64: class id, or answer start (span task)
    relevant: list[np.ndarray]  # N arrays of bool, len(relevant[k]) == len(tokens[k])
    meta: dict[str, list] = field(default_factory=dict)  # per-example extras (n_attractors, source, ...)

    def __post_init__(self):
        self.labels = np.asarray(self.labels, dtype=np.int64)
        n = len(self.tokens)
        if len(self.labels) != n or len(self.relevant) != n or any(len(v) != n for v in self.meta.values()):
            raise ValueError(
                f"split columns differ in length: {n} token lists, {len(self.labels)} labels, "
                f"{len(self.relevant)} masks, meta { ({k: len(v) for k, v in self.meta.items()}) }"
            )
        for k, (toks, rel) in enumerate(zip(self.tokens, self.relevant)):
            if len(toks) != len(rel):
                raise ValueError(f"example {k}: {len(toks)} tokens but a relevant mask of length {len(rel)}")

    def __len__(self) -> int:
        return len(self.tokens)

    def subset(self, index: Sequence[int]) -> "Split":
        index = [int(i) for i in index]
        return Split(
            [self.tokens[i] for i in index],
            self.labels[index],
            [self.relevant[i] for i in index],
            {k: [v[i] for i in index] for k, v in self.meta.items()},
        )

    def sample(self, n: int, seed: int = 0) -> "Split":
        """A deterministic random subset of ``min(n, len)`` examples, in original order."""
        if n >= len(self):
            return self
        rng = np.random.default_rng(seed)
        return self.subset(np.sort(rng.choice(len(self), size=n, replace=False)))

    def fingerprint(self) -> str:
        h = hashlib.sha256()
        for toks, lab, rel in zip(self.tokens, self.labels, self.relevant):
            h.update(("\x1f".join(toks) + f"\x1e{lab}\x1e" + "".join("1" if r else "0" for r in rel) + "\x1d").encode())
        return h.hexdigest()


@dataclass
class EncodedSplit:
    """Padded tensors of one split (pad id 0 on the right)."""

    ids: torch.Tensor  # (N, T) int64 token ids
    pad_mask: torch.Tensor  # (N, T) bool, True at real tokens
    relevant: torch.Tensor  # (N, T) bool, True at relevant tokens
    labels: torch.Tensor  # (N,) int64
    lengths: torch.Tensor  # (N,) int64 number of real tokens
    index: torch.Tensor  # (N,) int64 position of each row in the split (rows may be dropped)
    dropped: int  # examples dropped because truncation cut a relevant token

    def __len__(self) -> int:
        return self.ids.shape[0]

    def to(self, device) -> "EncodedSplit":
        return EncodedSplit(
            *(t.to(device) for t in (self.ids, self.pad_mask, self.relevant, self.labels, self.lengths, self.index)),
            self.dropped,
        )


@dataclass
class ClassificationSet:
    """A named set with its splits. ``task`` is "classification" (label = class id) or "span"
    (label = position of the answer's first token in ``tokens``, SQuAD-style extraction)."""

    name: str
    real_name: str
    source: str  # the announcement line printed by the loader
    standin: bool
    task: str
    label_names: tuple[str, ...] | None
    splits: dict[str, Split]
    data_hash: str  # sha256 of the stand-in file, or a fingerprint of the real data
    truncate: str = "right"  # which end a too-long example loses: "right" or "left"

    @property
    def train(self) -> Split:
        return self.splits["train"]

    @property
    def test(self) -> Split:
        """The held-out split: "test" when the set has one, else "validation" (as for SQuAD)."""
        return self.splits["test"] if "test" in self.splits else self.splits["validation"]

    def tokenizer(self, vocab_size: int = 5000, lowercase: bool = True) -> WordTokenizer:
        """Word-level tokenizer fitted on the training split."""
        return WordTokenizer.from_tokens(self.train.tokens, vocab_size, lowercase=lowercase)

    def encode(self, split: str, tokenizer: WordTokenizer, max_len: int = 64) -> EncodedSplit:
        """Tensors of ``split`` cut to ``max_len`` tokens (cached under _build/cache/data)."""
        if split not in self.splits:
            raise KeyError(f"{self.name} has splits {sorted(self.splits)}, not {split!r}")
        if not isinstance(max_len, int) or max_len < 1:
            raise ValueError(f"max_len must be a positive integer, received {max_len!r}")
        key = {
            "data": self.data_hash,
            "split": split,
            "max_len": max_len,
            "truncate": self.truncate,
            "task": self.task,
            "vocab": hashlib.sha256("\n".join(tokenizer.vocab).encode()).hexdigest(),
            "lowercase": tokenizer.lowercase,
        }
        return EncodedSplit(
            **cached(
                f"{self.name}-{split}",
                key,
                lambda: _encode(self.splits[split], tokenizer, max_len, self.truncate, self.task),
            )
        )

    def summary(self) -> dict[str, Any]:
        """Sizes, label balance and relevant-token share per split (for a page's data table)."""
        out = {}
        for name, s in self.splits.items():
            lengths = np.array([len(t) for t in s.tokens])
            rel = np.array([r.sum() for r in s.relevant])
            row = {
                "examples": len(s),
                "mean_tokens": float(lengths.mean()) if len(s) else 0.0,
                "with_relevant": int((rel > 0).sum()),
                "relevant_share": float(rel.sum() / max(lengths.sum(), 1)),
            }
            if self.label_names is not None:
                counts = np.bincount(s.labels, minlength=len(self.label_names))
                row["labels"] = dict(zip(self.label_names, counts.tolist()))
            out[name] = row
        return out


def _encode(split: Split, tokenizer: WordTokenizer, max_len: int, truncate: str, task: str) -> dict:
    rows, kept, dropped = [], [], 0
    for k, (toks, rel, label) in enumerate(zip(split.tokens, split.relevant, split.labels)):
        start = max(0, len(toks) - max_len) if truncate == "left" else 0
        stop = start + min(len(toks), max_len)
        if rel[:start].any() or rel[stop:].any():
            dropped += 1  # a relevant token would be cut: drop, count
            continue
        rows.append(
            (
                tokenizer.encode_tokens(toks[start:stop]),
                rel[start:stop],
                int(label) - start if task == "span" else int(label),
            )
        )
        kept.append(k)
    n, width = len(rows), max((len(r[0]) for r in rows), default=1)
    ids = torch.zeros(n, width, dtype=torch.long)  # (N, T)
    relevant = torch.zeros(n, width, dtype=torch.bool)  # (N, T)
    lengths = torch.tensor([len(r[0]) for r in rows], dtype=torch.long)
    for i, (row_ids, row_rel, _) in enumerate(rows):
        ids[i, : len(row_ids)] = torch.tensor(row_ids, dtype=torch.long)
        relevant[i, : len(row_rel)] = torch.from_numpy(np.asarray(row_rel, dtype=bool))
    pad_mask = torch.arange(width)[None, :] < lengths[:, None]  # (N, T)
    return {
        "ids": ids,
        "pad_mask": pad_mask,
        "relevant": relevant,
        "labels": torch.tensor([r[2] for r in rows], dtype=torch.long),
        "lengths": lengths,
        "index": torch.tensor(kept, dtype=torch.long),
        "dropped": dropped,
    }
