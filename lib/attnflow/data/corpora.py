"""Text corpora of the focus-dilution paper's real-text experiments (focus_dilution.md §7):
WikiText and TinyStories, from the real data or their offline stand-ins (a Wikipedia excerpt
and Shakespeare's works; see data/README.md). A corpus becomes token-id streams with a
word-level tokenizer fitted on its training text, cached on disk keyed on the text's hash.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import torch

from attnflow.data.files import cached, read_jsonl, verified_path
from attnflow.data.sources import Spec, announce, resolve
from attnflow.data.tokenizer import WordTokenizer

SPECS = {
    "wikitext": Spec(
        "wikitext",
        "WikiText",
        "Salesforce/wikitext",
        "wikitext-2-raw-v1",
        "wikitext_standin.jsonl.gz",
        "106 real Wikipedia articles from the gensim test data, markup stripped",
    ),
    "tinystories": Spec(
        "tinystories",
        "TinyStories",
        "roneneldan/TinyStories",
        None,
        "tinystories_standin.jsonl.gz",
        "Shakespeare's works (public domain); NOT children's stories",
    ),
}


@dataclass
class TokenStream:
    """Token ids of a corpus: one long stream per split, and the tokenizer that made them."""

    train: torch.Tensor  # (L_train,) int64
    validation: torch.Tensor  # (L_validation,) int64
    tokenizer: WordTokenizer

    def most_frequent(self, k: int = 10) -> list[tuple[int, str, int]]:
        """(id, unit, count) of the ``k`` most frequent training tokens (ties: smaller id first)."""
        counts = torch.bincount(self.train, minlength=len(self.tokenizer))
        order = sorted(range(len(counts)), key=lambda i: (-int(counts[i]), i))[:k]
        return [(i, self.tokenizer.vocab[i], int(counts[i])) for i in order]


@dataclass
class Corpus:
    """Raw text per split (``train``, ``validation``) and where it came from."""

    name: str
    real_name: str
    source: str  # the announcement line printed by the loader
    standin: bool
    texts: dict[str, str]

    @property
    def data_hash(self) -> str:
        h = hashlib.sha256()
        for split in sorted(self.texts):
            h.update(split.encode() + b"\x00" + self.texts[split].encode() + b"\x00")
        return h.hexdigest()

    def tokenizer(
        self, vocab_size: int = 4096, scheme: str = "words", lowercase: bool = False, oov: str = "unk"
    ) -> WordTokenizer:
        """Word-level tokenizer fitted on the training text (see attnflow.data.tokenizer)."""
        return WordTokenizer.from_text(self.texts["train"], vocab_size, scheme=scheme, lowercase=lowercase, oov=oov)

    def encode(
        self, vocab_size: int = 4096, scheme: str = "words", lowercase: bool = False, oov: str = "unk"
    ) -> TokenStream:
        """Token-id streams of both splits, the tokenizer fitted on train (cached under _build)."""

        def build():
            tok = self.tokenizer(vocab_size, scheme, lowercase, oov)
            return {
                "train": torch.tensor(tok.encode(self.texts["train"]), dtype=torch.long),
                "validation": torch.tensor(tok.encode(self.texts["validation"]), dtype=torch.long),
                "tokenizer": tok.state(),
            }

        key = {"data": self.data_hash, "vocab_size": vocab_size, "scheme": scheme, "lowercase": lowercase, "oov": oov}
        out = cached(f"{self.name}-stream", key, build)
        return TokenStream(out["train"], out["validation"], WordTokenizer.from_state(out["tokenizer"]))

    def summary(self) -> dict[str, dict[str, int]]:
        return {s: {"characters": len(t), "words": len(t.split())} for s, t in self.texts.items()}


def _truncate(text: str, max_chars: int | None) -> str:
    """The first ``max_chars`` characters, cut back to the last line break."""
    if max_chars is None or len(text) <= max_chars:
        return text
    cut = text.rfind("\n", 0, max_chars)
    return text[: cut + 1 if cut > 0 else max_chars]


def _load(spec: Spec, source, data_files, hub_id, config, data_dir, max_chars, joiner, **load_kwargs) -> Corpus:
    if max_chars is not None and (not isinstance(max_chars, int) or max_chars < 1):
        raise ValueError(f"max_chars must be a positive integer or None, received {max_chars!r}")
    resolved = resolve(spec, source, data_files=data_files, hub_id=hub_id, config=config, **load_kwargs)
    if resolved.standin:
        path, _ = verified_path(spec.standin_file, data_dir)
        parts: dict[str, list[str]] = {}
        for rec in read_jsonl(path):
            parts.setdefault(rec["split"], []).append(rec["text"])
        texts = {s: "\n".join(v) for s, v in parts.items()}
    else:
        texts = {}
        for name, split in resolved.dataset.items():
            name = "validation" if name in ("valid", "dev") else name
            texts[name] = joiner.join(str(t) for t in split["text"])
        if "validation" not in texts:  # one split only: hold out its last tenth (texts are ordered)
            whole = texts.pop("train")
            cut = whole.rfind("\n", 0, int(len(whole) * 0.9)) + 1 or int(len(whole) * 0.9)
            texts = {"train": whole[:cut], "validation": whole[cut:]}
    texts = {s: _truncate(texts[s], max_chars) for s in ("train", "validation")}
    announce(resolved.line)
    return Corpus(spec.name, spec.real_name, resolved.line, resolved.standin, texts)


def load_wikitext(
    source: str = "auto",
    *,
    config: str | None = None,
    data_files=None,
    hub_id=None,
    data_dir=None,
    max_chars: int | None = None,
    **load_kwargs,
) -> Corpus:
    """WikiText (default configuration wikitext-2-raw-v1; pass config="wikitext-103-raw-v1" for the
    large one). Real records have a ``text`` column of lines that keep their own line breaks.
    ``max_chars`` keeps the first characters of each split (whole lines) to bound run time."""
    return _load(SPECS["wikitext"], source, data_files, hub_id, config, data_dir, max_chars, "", **load_kwargs)


def load_tinystories(
    source: str = "auto", *, data_files=None, hub_id=None, data_dir=None, max_chars: int | None = None, **load_kwargs
) -> Corpus:
    """TinyStories (Eldan & Li 2023): one story per ``text`` record, joined by blank lines.
    The offline stand-in is Shakespeare, a different style altogether: see data/README.md."""
    return _load(SPECS["tinystories"], source, data_files, hub_id, None, data_dir, max_chars, "\n\n", **load_kwargs)
