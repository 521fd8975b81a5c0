"""Offline word-level tokenization: deterministic, with a vocabulary-size cap and exact round trip.

Two ways of cutting text, one class:

* **tokens** (classification sets): words, numbers and single punctuation marks, no whitespace
  (``split_tokens``). The derived data files store these tokens, so relevant-token masks line
  up with them one to one; ``encode_tokens`` maps each token to one id (``<unk>`` past the cap).
* **pieces** (corpora): the same units plus the whitespace between them, so that
  ``decode(encode(text)) == text`` for text inside the vocabulary. Scheme ``"words"`` keeps
  whitespace runs as tokens of their own (the space ``" "`` is then a token id, as
  focus_dilution.md §7 item 8 asks); scheme ``"gpt2"`` attaches one leading space to the next
  word, as GPT-2's pre-tokenizer does. A piece outside the capped vocabulary becomes ``<unk>``
  (``oov="unk"``, the default: frequency ranks stay word-level), or is spelled with
  single-character ids (``oov="chars"``: every character of the training text is in the
  vocabulary, so the round trip is exact for any text written in those characters).

The vocabulary is ``<pad>``, ``<unk>``, ``<sep>``, then the kept units by decreasing training
count (ties in code-point order): the same text and cap give the same ids on every machine.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Iterable, Sequence

_NUMBER = r"\d+(?:[.,]\d+)*(?!\w)"  # "3.5", "1,000"; "17th" is a word
_WORD = r"\w+(?:['’]\w+)*"
_TOKEN_RE = re.compile(rf"{_NUMBER}|{_WORD}|[^\w\s]")
_PIECE_RE = {
    "words": re.compile(rf"{_NUMBER}|{_WORD}|[^\w\s]|\s+"),
    "gpt2": re.compile(rf" ?{_NUMBER}| ?{_WORD}| ?[^\w\s]|\s+(?!\S)|\s+"),
}
SCHEMES = tuple(_PIECE_RE)
SPECIALS = ("<pad>", "<unk>", "<sep>")  # ids 0, 1, 2
OOV_MODES = ("unk", "chars")


def split_tokens(text: str) -> list[str]:
    """Words, numbers and punctuation marks of ``text`` (whitespace dropped)."""
    return _TOKEN_RE.findall(text)


def token_spans(text: str) -> list[tuple[int, int]]:
    """Character span ``[start, end)`` of every token of ``split_tokens(text)``."""
    return [m.span() for m in _TOKEN_RE.finditer(text)]


def split_pieces(text: str, scheme: str = "words") -> list[str]:
    """Lossless pieces: ``"".join(split_pieces(t)) == t``."""
    if scheme not in _PIECE_RE:
        raise ValueError(f"scheme must be one of {SCHEMES}, received {scheme!r}")
    return _PIECE_RE[scheme].findall(text)


class WordTokenizer:
    """Word-level tokenizer with a vocabulary cap (see the module docstring).

    Build it with :meth:`from_tokens` (classification sets, one id per token) or
    :meth:`from_text` (corpora, lossless pieces with single-character fallback).
    """

    def __init__(self, vocab: Sequence[str], *, lowercase: bool = False, scheme: str | None = None, oov: str = "unk"):
        if tuple(vocab[: len(SPECIALS)]) != SPECIALS:
            raise ValueError(f"a vocabulary must start with {SPECIALS}, received {tuple(vocab[:3])}")
        if scheme is not None and scheme not in _PIECE_RE:
            raise ValueError(f"scheme must be one of {SCHEMES} or None, received {scheme!r}")
        if oov not in OOV_MODES:
            raise ValueError(f"oov must be one of {OOV_MODES}, received {oov!r}")
        self.vocab = list(vocab)
        self.oov = oov
        self.lowercase = lowercase
        self.scheme = scheme  # None: token mode only (no lossless text round trip)
        self.index = {u: i for i, u in enumerate(self.vocab)}
        if len(self.index) != len(self.vocab):
            raise ValueError("the vocabulary holds a unit twice")

    pad_id, unk_id, sep_id = 0, 1, 2

    def __len__(self) -> int:
        return len(self.vocab)

    def __repr__(self) -> str:
        return f"WordTokenizer(size={len(self)}, scheme={self.scheme!r}, lowercase={self.lowercase}, oov={self.oov!r})"

    def _norm(self, unit: str) -> str:
        return unit.lower() if self.lowercase else unit

    # ------------------------------------------------------------------ building
    @classmethod
    def from_tokens(
        cls, token_lists: Iterable[Sequence[str]], vocab_size: int = 5000, *, lowercase: bool = True, min_count: int = 1
    ) -> "WordTokenizer":
        """Vocabulary of the ``vocab_size`` most frequent tokens (specials included)."""
        _check_size(vocab_size, minimum=len(SPECIALS) + 1)
        counts: Counter[str] = Counter()
        for tokens in token_lists:
            counts.update(t.lower() if lowercase else t for t in tokens)
        kept = [
            u for u, c in sorted(counts.items(), key=lambda uc: (-uc[1], uc[0])) if c >= min_count and u not in SPECIALS
        ]
        return cls(list(SPECIALS) + kept[: vocab_size - len(SPECIALS)], lowercase=lowercase)

    @classmethod
    def from_text(
        cls, text: str, vocab_size: int = 4096, *, scheme: str = "words", lowercase: bool = False, oov: str = "unk"
    ) -> "WordTokenizer":
        """Vocabulary of the most frequent pieces of ``text`` up to the cap; with ``oov="chars"``
        all its characters are kept first, so any piece can be spelled.

        ``lowercase=True`` gives a smaller vocabulary but decoding then returns lower case.
        """
        _check_size(vocab_size, minimum=len(SPECIALS) + 1)
        if oov not in OOV_MODES:
            raise ValueError(f"oov must be one of {OOV_MODES}, received {oov!r}")
        if lowercase:
            text = text.lower()
        counts = Counter(split_pieces(text, scheme))
        by_count = [u for u, _ in sorted(counts.items(), key=lambda uc: (-uc[1], uc[0])) if u not in SPECIALS]
        if oov == "chars":
            chars = sorted(set(text))
            room = vocab_size - len(SPECIALS) - len(chars)
            if room < 0:
                raise ValueError(
                    f"vocab_size={vocab_size} is below the {len(SPECIALS) + len(chars)} ids needed for "
                    f"the specials and the {len(chars)} distinct characters of the text; raise vocab_size"
                )
            kept = set(chars) | set([u for u in by_count if len(u) > 1][:room])
        else:
            kept = set(by_count[: vocab_size - len(SPECIALS)])
        ordered = sorted(kept, key=lambda u: (-counts.get(u, 0), u))
        return cls(list(SPECIALS) + ordered, lowercase=lowercase, scheme=scheme, oov=oov)

    # ------------------------------------------------------------------ token mode
    def encode_tokens(self, tokens: Sequence[str]) -> list[int]:
        """One id per token; tokens outside the vocabulary become ``<unk>`` (id 1)."""
        get = self.index.get
        return [get(self._norm(t), self.unk_id) for t in tokens]

    def decode_tokens(self, ids: Iterable[int]) -> list[str]:
        return [self.vocab[int(i)] for i in ids]

    # ------------------------------------------------------------------ text mode
    def encode(self, text: str) -> list[int]:
        """Ids of ``text``; :meth:`decode` gives the text back (lower-cased if ``lowercase``) when
        every piece is in the vocabulary, or always with ``oov="chars"`` (see the module docstring)."""
        if self.scheme is None:
            raise ValueError(
                "this tokenizer was built from tokens (no whitespace model); "
                "use encode_tokens, or build one with WordTokenizer.from_text"
            )
        get, ids = self.index.get, []
        for piece in split_pieces(self._norm(text), self.scheme):
            i = get(piece)
            if i is not None:
                ids.append(i)
            elif self.oov == "unk":
                ids.append(self.unk_id)
            else:  # spell it: characters outside the training text become <unk>
                ids.extend(get(ch, self.unk_id) for ch in piece)
        return ids

    def decode(self, ids: Iterable[int]) -> str:
        return "".join(self.vocab[int(i)] for i in ids)

    # ------------------------------------------------------------------ persistence
    def state(self) -> dict:
        return {"vocab": self.vocab, "lowercase": self.lowercase, "scheme": self.scheme, "oov": self.oov}

    @classmethod
    def from_state(cls, state: dict) -> "WordTokenizer":
        return cls(state["vocab"], lowercase=state["lowercase"], scheme=state["scheme"], oov=state["oov"])


def _check_size(vocab_size: int, minimum: int) -> None:
    if not isinstance(vocab_size, int) or isinstance(vocab_size, bool) or vocab_size < minimum:
        raise ValueError(f"vocab_size must be an integer >= {minimum}, received {vocab_size!r}")
