"""Loaders of the sharpening paper's real-data sets (sharpening.md §7.2): SQuAD v1.1, HateXplain
and subject-verb agreement, each from the real data (Hub, HF cache or local real-format files)
or from its offline stand-in under data/ (see data/README.md for what each stand-in is).

Both paths give the same :class:`~attnflow.data.classification.ClassificationSet` schema.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from functools import lru_cache

import numpy as np

from attnflow.data.classification import ClassificationSet, Split
from attnflow.data.files import read_jsonl, verified_path
from attnflow.data.files import DataFileError
from attnflow.data.sources import Spec, announce, resolve, will_use_standin
from attnflow.data.tokenizer import split_tokens, token_spans

SEP = "<sep>"  # between question and context (the tokenizer's id 2)
SPECS = {
    "squad": Spec(
        "squad",
        "SQuAD v1.1",
        "rajpurkar/squad",
        None,
        "squad_standin.jsonl.gz",
        "cloze QA over real Wikipedia paragraphs, not SQuAD's crowd-written questions",
    ),
    "hatexplain": Spec(
        "hatexplain",
        "HateXplain",
        "Hate-speech-CNERG/hatexplain",
        None,
        "hatexplain_standin.jsonl.gz",
        "human-rated sentiment of tweets and review/editorial snippets, not hate speech",
        alt_revision="refs/convert/parquet",
    ),
    "sva": Spec(
        "sva",
        "subject-verb agreement (Linzen et al. 2016)",
        None,
        None,
        "sva_standin.jsonl.gz",
        "agreement cases mined from Wikipedia and Shakespeare plus Marvin & Linzen-style templates",
    ),
}
HATEXPLAIN_LABELS = ("hatespeech", "normal", "offensive")  # the Hub's ClassLabel order
SENTIMENT_LABELS = ("negative", "neutral", "positive")
NUMBER_LABELS = ("singular", "plural")


def _split_key(tokens: list[str]) -> int:
    return int(hashlib.sha256(" ".join(tokens).encode()).hexdigest()[:8], 16) % 10


def _finish(spec: Spec, resolved, task, label_names, splits, data_hash, truncate="right") -> ClassificationSet:
    if "validation" not in splits and "test" not in splits:  # one file only: hold out 10% by content
        whole = splits.pop("train")
        held = [k for k, t in enumerate(whole.tokens) if _split_key(t) == 0]
        rest = sorted(set(range(len(whole))) - set(held))
        splits = {"train": whole.subset(rest), "test": whole.subset(held)}
    announce(resolved.line)
    return ClassificationSet(
        spec.name, spec.real_name, resolved.line, resolved.standin, task, label_names, splits, data_hash, truncate
    )


def _standin_records(spec: Spec, data_dir) -> tuple[dict[str, list[dict]], str]:
    path, digest = verified_path(spec.standin_file, data_dir)
    by_split: dict[str, list[dict]] = {}
    for rec in read_jsonl(path):
        by_split.setdefault(rec["split"], []).append(rec)
    return by_split, digest


def _hf_hash(ds) -> str:
    parts = [f"{name}:{getattr(split, '_fingerprint', '')}:{len(split)}" for name, split in sorted(ds.items())]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()


def _hf_splits(ds) -> dict:
    return {("validation" if name in ("valid", "dev") else name): split for name, split in ds.items()}


# ------------------------------------------------------------------------------------- SQuAD
def train_rows(name: str, source: str = "auto") -> int | None:
    """Rows of the training split that ``load_<name>(source)`` will offer when it is bound to use the
    offline stand-in (:func:`~attnflow.data.sources.will_use_standin`); None where the real set may
    load (its size is not known before it does) or the stand-in file is missing. Run-cost estimates
    use it: a page's ``n_train`` above it trains on this many rows."""
    if name not in SPECS or not will_use_standin(SPECS[name], source):
        return None
    try:
        return _standin_train_rows(SPECS[name].standin_file)
    except DataFileError:
        return None


@lru_cache(maxsize=None)
def _standin_train_rows(filename: str) -> int:
    path, _ = verified_path(filename)
    return sum(r.get("split") == "train" for r in read_jsonl(path))


def load_squad(
    source: str = "auto", *, data_files=None, hub_id=None, data_dir=None, **load_kwargs
) -> ClassificationSet:
    """SQuAD v1.1 as a span task: tokens = question + <sep> + context, label = index of the answer's
    first token, relevant = the answer span. Real records need ``question``, ``context`` and
    ``answers`` {``text``, ``answer_start``} (the Hub schema); the first answer is used."""
    spec = SPECS["squad"]
    resolved = resolve(spec, source, data_files=data_files, hub_id=hub_id, **load_kwargs)
    if resolved.standin:
        by_split, digest = _standin_records(spec, data_dir)
        splits = {}
        for name, recs in by_split.items():
            tokens, labels, relevant, meta = [], [], [], {"id": [], "answer_text": [], "answer_kind": []}
            for r in recs:
                offset = len(r["question"]) + 1
                toks = r["question"] + [SEP] + r["context"]
                rel = np.zeros(len(toks), dtype=bool)
                rel[offset + r["answer_start"] : offset + r["answer_end"]] = True
                tokens.append(toks)
                labels.append(offset + r["answer_start"])
                relevant.append(rel)
                for k in meta:
                    meta[k].append(r[k])
            splits[name] = Split(tokens, labels, relevant, meta)
        return _finish(spec, resolved, "span", None, splits, digest)
    splits = {name: _squad_split(split) for name, split in _hf_splits(resolved.dataset).items()}
    return _finish(spec, resolved, "span", None, splits, _hf_hash(resolved.dataset))


def _squad_split(rows) -> Split:
    tokens, labels, relevant, meta = [], [], [], {"id": [], "answer_text": []}
    for r in rows:
        answers = r["answers"]
        if not answers["text"]:
            continue
        text, a = answers["text"][0], int(answers["answer_start"][0])
        question = split_tokens(r["question"])
        spans = token_spans(r["context"])
        inside = [k for k, (s, e) in enumerate(spans) if s < a + len(text) and e > a]
        if not inside:
            continue
        offset = len(question) + 1
        toks = question + [SEP] + [r["context"][s:e] for s, e in spans]
        rel = np.zeros(len(toks), dtype=bool)
        rel[offset + inside[0] : offset + inside[-1] + 1] = True
        tokens.append(toks)
        labels.append(offset + inside[0])
        relevant.append(rel)
        meta["id"].append(str(r.get("id", len(meta["id"]))))
        meta["answer_text"].append(text)
    return Split(tokens, labels, relevant, meta)


def _standin_splits(by_split: dict[str, list[dict]], labels, meta_keys) -> dict[str, Split]:
    """The stand-in's classification splits: tokens, the label's index in ``labels``, the relevant mask, and the
    records' ``meta_keys`` columns."""
    index = {name: k for k, name in enumerate(labels)}
    return {
        name: Split(
            [r["tokens"] for r in recs],
            [index[r["label"]] for r in recs],
            [np.asarray(r["relevant"], dtype=bool) for r in recs],
            {k: [r[k] for r in recs] for k in meta_keys},
        )
        for name, recs in by_split.items()
    }


# -------------------------------------------------------------------------------- HateXplain
def load_hatexplain(
    source: str = "auto", *, data_files=None, hub_id=None, data_dir=None, **load_kwargs
) -> ClassificationSet:
    """Three-way post classification with token rationales. Real records (Hub schema): ``post_tokens``,
    ``annotators`` {``label``: one per annotator}, ``rationales`` (one 0/1 list per annotator who
    marked one). Label = annotator majority (ties dropped, as in the HateXplain paper); relevant =
    tokens marked by at least half of the rationale lists. The stand-in is sentiment, not hate."""
    spec = SPECS["hatexplain"]
    resolved = resolve(spec, source, data_files=data_files, hub_id=hub_id, **load_kwargs)
    if resolved.standin:
        by_split, digest = _standin_records(spec, data_dir)
        splits = _standin_splits(by_split, SENTIMENT_LABELS, ("id", "genre", "mean_rating"))
        return _finish(spec, resolved, "classification", SENTIMENT_LABELS, splits, digest)
    splits = {name: _hatexplain_split(split) for name, split in _hf_splits(resolved.dataset).items()}
    return _finish(spec, resolved, "classification", HATEXPLAIN_LABELS, splits, _hf_hash(resolved.dataset))


def _hatexplain_split(rows) -> Split:
    tokens, labels, relevant, meta = [], [], [], {"id": []}
    for r in rows:
        toks = list(r["post_tokens"])
        votes = Counter(int(v) for v in r["annotators"]["label"]).most_common()
        if not toks or not votes or (len(votes) > 1 and votes[0][1] == votes[1][1]):
            continue
        marks = [m for m in r.get("rationales") or [] if len(m) == len(toks)]
        rel = (np.mean(np.asarray(marks, dtype=float), axis=0) >= 0.5) if marks else np.zeros(len(toks), bool)
        tokens.append(toks)
        labels.append(votes[0][0])
        relevant.append(rel)
        meta["id"].append(str(r.get("id", len(meta["id"]))))
    return Split(tokens, labels, relevant, meta)


# ------------------------------------------------------------------------ subject-verb agreement
def load_sva(source: str = "auto", *, data_files=None, hub_id=None, data_dir=None, **load_kwargs) -> ClassificationSet:
    """Predict the number of the upcoming verb from the sentence prefix (Linzen et al. 2016);
    relevant = the subject head noun. Real records use the columns of Linzen et al.'s TSV files
    (``sentence``, ``verb_index`` and ``subj_index`` 1-based, ``verb_pos`` VBZ/VBP,
    ``n_diff_intervening``); no copy is on the Hub under a fixed id, so pass ``data_files=``
    (a .tsv is read with the csv builder, tab-delimited) or ``hub_id=``."""
    spec = SPECS["sva"]
    resolved = resolve(spec, source, data_files=data_files, hub_id=hub_id, **load_kwargs)
    if resolved.standin:
        by_split, digest = _standin_records(spec, data_dir)
        splits = _standin_splits(by_split, NUMBER_LABELS, ("id", "verb", "n_attractors", "source"))
        return _finish(spec, resolved, "classification", NUMBER_LABELS, splits, digest, truncate="left")
    splits = {name: _sva_split(split) for name, split in _hf_splits(resolved.dataset).items()}
    return _finish(spec, resolved, "classification", NUMBER_LABELS, splits, _hf_hash(resolved.dataset), truncate="left")


def _sva_split(rows) -> Split:
    tokens, labels, relevant = [], [], []
    meta = {"verb": [], "n_attractors": [], "source": []}
    for r in rows:
        words = str(r["sentence"]).split()
        verb, subject = int(r["verb_index"]) - 1, int(r["subj_index"]) - 1
        if not 0 <= subject < verb < len(words) or r["verb_pos"] not in ("VBZ", "VBP"):
            continue
        rel = np.zeros(verb, dtype=bool)
        rel[subject] = True
        tokens.append(words[:verb])
        labels.append(0 if r["verb_pos"] == "VBZ" else 1)
        relevant.append(rel)
        meta["verb"].append(words[verb])
        meta["n_attractors"].append(int(r.get("n_diff_intervening") or 0))
        meta["source"].append("linzen2016")
    return Split(tokens, labels, relevant, meta)
