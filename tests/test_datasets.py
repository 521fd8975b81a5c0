"""attnflow.data: the shipped stand-ins, the hub path (offline, through local files), the
tokenizer, relevant-token masks, and the errors for missing or corrupt data files."""

from __future__ import annotations

import contextlib
import gzip
import importlib.util
import io
import json
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from attnflow import data
from attnflow.data import DataFileError, DataSourceError, WordTokenizer, split_pieces, split_tokens
from attnflow.data.files import sha256_file

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
MANIFEST = json.loads((DATA / "MANIFEST.json").read_text(encoding="utf-8"))


@pytest.fixture(autouse=True)
def _cache_in_tmp(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("ATTNFLOW_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "data-cache"))


def _load(name, **kwargs):
    """Load and return (dataset, printed text)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        ds = data.load(name, **kwargs)
    return ds, buf.getvalue()


@pytest.fixture(scope="module")
def standins():
    return {name: _load(name, source="standin") for name in data.LOADERS}


# --------------------------------------------------------------------------- shipped files
def test_manifest_lists_every_file_with_its_hash():
    files = MANIFEST["files"]
    assert set(files) == {f"{n}_standin.jsonl.gz" for n in data.LOADERS}
    for name, entry in files.items():
        path = DATA / name
        assert path.stat().st_size == entry["bytes"], name
        assert sha256_file(path) == entry["sha256"], f"{name}: run `make data`"
    total = sum(e["bytes"] for e in files.values())
    assert total < 8e6, f"data/ holds {total / 1e6:.1f} MB; keep it to a few MB"


def test_make_data_check_hashes_only():
    spec = importlib.util.spec_from_file_location("make_data", ROOT / "scripts" / "make_data.py")
    make_data = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_data)
    assert make_data.check_files(DATA) == []
    with contextlib.redirect_stdout(io.StringIO()):
        assert make_data.main(["--check", "--no-rebuild"]) == 0


def test_readme_documents_every_file():
    readme = (DATA / "README.md").read_text(encoding="utf-8")
    for name in MANIFEST["files"]:
        assert name in readme
    for phrase in ("make data", "CC BY-SA", "public domain", "MIT", "not hate speech", "not children"):
        assert phrase.lower() in readme.lower(), phrase


# ------------------------------------------------------------------------------ stand-ins
def test_each_loader_prints_one_line_naming_the_standin(standins):
    for name, (ds, printed) in standins.items():
        lines = printed.strip().splitlines()
        assert len(lines) == 1, printed
        assert lines[0].startswith(f"[attnflow.data] {name}: offline stand-in data/{name}_standin.jsonl.gz")
        assert ds.standin and ds.source == lines[0]


def test_standin_sizes_match_manifest(standins):
    for name, (ds, _) in standins.items():
        expected = MANIFEST["files"][f"{name}_standin.jsonl.gz"]["records"]
        if isinstance(ds, data.Corpus):
            assert expected in (42, 106) and set(ds.texts) == {"train", "validation"}
            assert all(len(t) > 100_000 for t in ds.texts.values())
        else:
            assert sum(len(s) for s in ds.splits.values()) == expected


def test_classification_schema_and_masks(standins):
    for name in ("squad", "hatexplain", "sva"):
        ds = standins[name][0]
        assert isinstance(ds, data.ClassificationSet) and "train" in ds.splits and len(ds.test) > 100
        for split in ds.splits.values():
            assert split.labels.dtype == np.int64
            for toks, rel in zip(split.tokens, split.relevant):
                assert len(toks) == len(rel) and rel.dtype == bool
                assert all(t and not any(c.isspace() for c in t) for t in toks)
            if ds.label_names is not None:
                assert set(np.unique(split.labels)) <= set(range(len(ds.label_names)))


def test_sva_relevant_is_the_subject_head_noun(standins):
    ds = standins["sva"][0]
    assert ds.label_names == ("singular", "plural")
    split = ds.train
    assert all(r.sum() == 1 for r in split.relevant)
    sources = {s.split(":")[0] for s in split.meta["source"]}
    assert {"wikipedia", "shakespeare", "template"} <= sources
    assert max(split.meta["n_attractors"]) >= 1
    templates = [k for k, s in enumerate(split.meta["source"]) if s == "template:prepositional_phrase"]
    k = templates[0]
    head = split.tokens[k][int(np.argmax(split.relevant[k]))]
    assert split.tokens[k][0] == "the" and head.endswith("s") == (split.labels[k] == 1)


def test_hatexplain_standin_is_sentiment_with_lexicon_rationales(standins):
    ds = standins["hatexplain"][0]
    assert ds.label_names == ("negative", "neutral", "positive")
    assert "not hate speech" in ds.source
    neutral = ds.label_names.index("neutral")
    split = ds.train
    for label, rel in zip(split.labels, split.relevant):
        if label == neutral:
            assert not rel.any()
    counts = np.bincount(split.labels, minlength=3)
    assert counts.min() > 0.25 * counts.sum()  # roughly balanced
    assert sum(r.any() for r in split.relevant) > 0.3 * len(split)


def test_squad_standin_answer_span_is_relevant(standins):
    ds = standins["squad"][0]
    assert ds.task == "span" and ds.label_names is None
    for split in ds.splits.values():
        for toks, label, rel, answer in zip(split.tokens, split.labels, split.relevant, split.meta["answer_text"]):
            assert toks.count("<sep>") == 1 and toks.index("<sep>") < label
            assert rel[label] and not rel[:label].any()
            assert " ".join(t for t, r in zip(toks, rel) if r) == answer
            assert toks[: toks.index("<sep>")].count("@placeholder") == 1


def test_corpora_are_real_text(standins):
    wiki, shakespeare = standins["wikitext"][0], standins["tinystories"][0]
    assert "= Anarchism =" in wiki.texts["train"] and "[[" not in wiki.texts["train"]
    assert "{{" not in wiki.texts["train"] and "<ref" not in wiki.texts["train"]
    assert "NOT children's stories" in shakespeare.source
    assert "gutenberg" not in shakespeare.texts["train"].lower()


def test_loading_is_deterministic(standins):
    again, _ = _load("sva", source="standin")
    assert again.train.fingerprint() == standins["sva"][0].train.fingerprint()


# ------------------------------------------------------------------------- encode and cache
def test_encode_lines_up_relevant_tokens(standins):
    for name, max_len in (("sva", 24), ("hatexplain", 40), ("squad", 200)):
        ds = standins[name][0]
        tok = ds.tokenizer(vocab_size=3000)
        held_out = "test" if "test" in ds.splits else "validation"
        enc = ds.encode(held_out, tok, max_len=max_len)
        n, width = enc.ids.shape
        assert width <= max_len and n + enc.dropped == len(ds.test)
        assert not (enc.relevant & ~enc.pad_mask).any()
        assert (enc.ids[~enc.pad_mask] == 0).all() and (enc.ids[enc.pad_mask] != 0).all()
        for row in range(0, n, max(1, n // 50)):
            k = int(enc.index[row])
            toks, rel = ds.test.tokens[k], ds.test.relevant[k]
            want = [t.lower() for t, r in zip(toks, rel) if r]
            got = tok.decode_tokens(enc.ids[row][enc.relevant[row]].tolist())
            assert got == [w if w in tok.index else "<unk>" for w in want]
            if ds.task == "span":
                assert enc.relevant[row, enc.labels[row]]
            else:
                assert int(enc.labels[row]) == int(ds.test.labels[k])


def test_sva_truncates_on_the_left_and_keeps_the_subject(standins):
    ds = standins["sva"][0]
    enc = ds.encode("train", ds.tokenizer(), max_len=6)
    assert enc.ids.shape[1] == 6 and (enc.relevant.sum(1) == 1).all()


def test_encode_is_cached_on_the_data_hash(standins, tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNFLOW_CACHE_DIR", str(tmp_path))
    ds = standins["sva"][0]
    tok = ds.tokenizer(vocab_size=500)
    first = ds.encode("test", tok, max_len=16)
    files = list(tmp_path.glob("sva-test-*.pt"))
    assert len(files) == 1
    second = ds.encode("test", tok, max_len=16)
    assert torch.equal(first.ids, second.ids) and first.dropped == second.dropped
    ds2 = data.ClassificationSet(**{**ds.__dict__, "data_hash": "0" * 64})
    ds2.encode("test", tok, max_len=16)
    assert len(list(tmp_path.glob("sva-test-*.pt"))) == 2


def test_corpus_token_stream():
    wiki, printed = _load("wikitext", source="standin", max_chars=300_000)
    assert all(len(t) <= 300_000 and t.endswith("\n") for t in wiki.texts.values())
    stream = wiki.encode(vocab_size=2000)
    assert stream.train.dtype == torch.long and stream.train.numel() > 50_000
    top = [unit for _, unit, _ in stream.most_frequent(6)]
    assert " " in top and "the" in top and "," in top
    assert len(stream.tokenizer) == 2000 and int(stream.train.max()) < 2000


# ------------------------------------------------------------------------------- tokenizer
TEXT = "The keys to the cabinet are on the table.\n\nIt's 3.5 km away,  isn't it?\tYes — naïve café!"


@pytest.mark.parametrize("scheme", ["words", "gpt2"])
def test_pieces_are_lossless(scheme):
    assert "".join(split_pieces(TEXT, scheme)) == TEXT


@pytest.mark.parametrize("scheme", ["words", "gpt2"])
def test_tokenizer_round_trip(scheme):
    tok = WordTokenizer.from_text(TEXT, vocab_size=1000, scheme=scheme)
    assert tok.decode(tok.encode(TEXT)) == TEXT
    size = 3 + len(set(TEXT)) + 4  # specials, every character, 4 pieces
    capped = WordTokenizer.from_text(TEXT, vocab_size=size, scheme=scheme, oov="chars")
    assert len(capped) == size and capped.decode(capped.encode(TEXT)) == TEXT
    assert len(capped.encode(TEXT)) > len(tok.encode(TEXT))  # out-of-vocabulary pieces are spelled
    with pytest.raises(ValueError, match="distinct characters"):
        WordTokenizer.from_text(TEXT, vocab_size=12, scheme=scheme, oov="chars")
    small = WordTokenizer.from_text(TEXT, vocab_size=8, scheme=scheme)
    assert len(small) == 8 and small.unk_id in small.encode(TEXT)
    assert WordTokenizer.from_state(tok.state()).encode(TEXT) == tok.encode(TEXT)


def test_tokenizer_is_deterministic_and_capped():
    docs = [split_tokens(s) for s in ("the cat sat", "the dog sat", "a cat ran")]
    a = WordTokenizer.from_tokens(docs, vocab_size=6)
    b = WordTokenizer.from_tokens(list(reversed(docs)), vocab_size=6)
    assert a.vocab == b.vocab == ["<pad>", "<unk>", "<sep>", "cat", "sat", "the"]
    assert a.encode_tokens(["The", "cat", "<sep>", "zebra"]) == [5, 3, 2, 1]
    assert a.decode_tokens([5, 3]) == ["the", "cat"]
    assert split_tokens("It's 1,000.5 km, isn't it?") == ["It's", "1,000.5", "km", ",", "isn't", "it", "?"]


def test_tokenizer_rejects_bad_arguments():
    with pytest.raises(ValueError, match="vocab_size"):
        WordTokenizer.from_tokens([["a"]], vocab_size=2)
    with pytest.raises(ValueError, match="scheme"):
        WordTokenizer.from_text("a b", scheme="bpe")
    with pytest.raises(ValueError, match="oov"):
        WordTokenizer.from_text("a b", oov="drop")
    with pytest.raises(ValueError, match="encode_tokens"):
        WordTokenizer.from_tokens([["a"]]).encode("a")


# ------------------------------------------------------------------ hub path, offline
def _jsonl(path: Path, rows) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def test_auto_falls_back_at_once_when_offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", "/nonexistent-hf-home")
    start = time.perf_counter()
    ds, printed = _load("sva")
    assert time.perf_counter() - start < 5 and "offline stand-in" in printed
    _, printed = _load("squad")
    assert "HF_HUB_OFFLINE=1" in printed and "real SQuAD v1.1 not used" in printed


def test_hub_source_without_the_hub_is_an_error(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", "/nonexistent-hf-home")
    with pytest.raises(DataSourceError, match="HF_HUB_OFFLINE"):
        data.load_squad(source="hub")
    with pytest.raises(DataSourceError, match="data_files"):
        data.load_sva(source="hub")
    with pytest.raises(ValueError, match="source must be one of"):
        data.load_squad(source="internet")
    with pytest.raises(ValueError, match="dataset must be one of"):
        data.load("imdb")


def test_squad_hub_path_with_local_files(tmp_path):
    context = "Albedo was introduced into optics by Johann Heinrich Lambert in 1760."
    start = context.index("Johann")
    rows = [
        {
            "id": "q1",
            "title": "Albedo",
            "context": context,
            "question": "Who introduced albedo?",
            "answers": {"text": ["Johann Heinrich Lambert"], "answer_start": [start]},
        },
        {
            "id": "q2",
            "title": "Albedo",
            "context": context,
            "question": "When?",
            "answers": {"text": ["1760"], "answer_start": [context.index("1760")]},
        },
    ]
    files = {"train": _jsonl(tmp_path / "train.jsonl", rows), "validation": _jsonl(tmp_path / "dev.jsonl", rows[:1])}
    ds, printed = _load("squad", source="hub", data_files=files)
    assert not ds.standin and "real-format SQuAD v1.1 records from local files train.jsonl, dev.jsonl" in printed
    split = ds.train
    first = split.tokens[0]
    assert first[: first.index("<sep>")] == ["Who", "introduced", "albedo", "?"]
    assert [t for t, r in zip(first, split.relevant[0]) if r] == ["Johann", "Heinrich", "Lambert"]
    assert first[split.labels[0]] == "Johann"
    assert [t for t, r in zip(split.tokens[1], split.relevant[1]) if r] == ["1760"]
    enc = ds.encode("train", ds.tokenizer(), max_len=32)
    assert enc.relevant.sum().item() == 4


def test_hatexplain_hub_path_with_local_files(tmp_path):
    rows = [
        {
            "id": "a",
            "post_tokens": ["you", "are", "awful", "people"],
            "annotators": {"label": [2, 2, 0], "annotator_id": [1, 2, 3], "target": [[], [], []]},
            "rationales": [[0, 0, 1, 0], [0, 0, 1, 1], [0, 0, 0, 1]],
        },
        {
            "id": "b",
            "post_tokens": ["nice", "day"],
            "annotators": {"label": [1, 1, 1], "annotator_id": [1, 2, 3], "target": [[], [], []]},
            "rationales": [],
        },
        {
            "id": "c",
            "post_tokens": ["tie", "case"],
            "annotators": {"label": [0, 1, 2], "annotator_id": [1, 2, 3], "target": [[], [], []]},
            "rationales": [],
        },
    ]
    ds, printed = _load(
        "hatexplain",
        source="hub",
        data_files={"train": _jsonl(tmp_path / "t.jsonl", rows), "test": _jsonl(tmp_path / "s.jsonl", rows)},
    )
    assert ds.label_names == ("hatespeech", "normal", "offensive") and "local files" in printed
    split = ds.train
    assert len(split) == 2  # the three-way tie is dropped
    assert split.labels.tolist() == [2, 1]
    assert split.relevant[0].tolist() == [False, False, True, True] and not split.relevant[1].any()


def test_sva_hub_path_with_a_linzen_tsv(tmp_path):
    header = "sentence\tverb_index\tsubj_index\tverb_pos\tn_diff_intervening\n"
    lines = ["the keys to the cabinet are on the table\t6\t2\tVBP\t1\n", "the author laughs\t3\t2\tVBZ\t0\n"] * 10
    path = tmp_path / "agr.tsv"
    path.write_text(header + "".join(lines), encoding="utf-8")
    ds, printed = _load("sva", source="hub", data_files=str(path))
    assert "local files agr.tsv" in printed and "csv builder" in printed
    assert set(ds.splits) == {"train", "test"}
    for split in ds.splits.values():
        for toks, label, rel in zip(split.tokens, split.labels, split.relevant):
            assert toks[int(np.argmax(rel))] in ("keys", "author")
            assert label == (1 if toks[1] == "keys" else 0)


def test_corpus_hub_path_with_local_files(tmp_path):
    train = _jsonl(tmp_path / "train.jsonl", [{"text": " = Title = \n"}, {"text": " Some text here .\n"}])
    valid = _jsonl(tmp_path / "valid.jsonl", [{"text": " More text .\n"}])
    corpus, printed = _load("wikitext", source="hub", data_files={"train": train, "validation": valid})
    assert "local files" in printed and not corpus.standin
    assert corpus.texts == {"train": " = Title = \n Some text here .\n", "validation": " More text .\n"}
    stream = corpus.encode(vocab_size=50)
    assert stream.tokenizer.decode(stream.train.tolist()) == corpus.texts["train"]


HATEXPLAIN_ROWS = [
    {
        "id": "a",
        "post_tokens": ["you", "are", "awful", "people"],
        "annotators": {"label": [2, 2, 0], "annotator_id": [1, 2, 3], "target": [["x"], ["x"], ["x"]]},
        "rationales": [[0, 0, 1, 0], [0, 0, 1, 1], [0, 0, 0, 1]],
    },
    {
        "id": "b",
        "post_tokens": ["nice", "day"],
        "annotators": {"label": [1, 1, 1], "annotator_id": [1, 2, 3], "target": [["x"], ["x"], ["x"]]},
        "rationales": [],
    },
]


@pytest.fixture
def online_hub(monkeypatch):
    """Pretend the Hub is reachable; ``datasets.load_dataset`` is replaced by the test."""
    from attnflow.data import sources

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.setattr(sources, "_hub_unreachable", lambda: None)
    import datasets

    return datasets


def test_hub_branch_tries_the_parquet_conversion(online_hub, monkeypatch):
    calls = []

    def fake_load(path, name=None, revision=None, **kwargs):
        calls.append((path, revision))
        if revision is None:
            raise RuntimeError("Dataset scripts are no longer supported, but found hatexplain.py")
        part = online_hub.Dataset.from_list(HATEXPLAIN_ROWS)
        return online_hub.DatasetDict({"train": part, "validation": part, "test": part})

    monkeypatch.setattr(online_hub, "load_dataset", fake_load)
    ds, printed = _load("hatexplain")
    assert calls == [("Hate-speech-CNERG/hatexplain", None), ("Hate-speech-CNERG/hatexplain", "refs/convert/parquet")]
    assert printed.strip() == (
        "[attnflow.data] hatexplain: real HateXplain from the Hugging Face Hub "
        "(Hate-speech-CNERG/hatexplain, revision refs/convert/parquet)"
    )
    assert not ds.standin and ds.train.labels.tolist() == [2, 1]


def test_hub_failure_falls_back_with_the_reason(online_hub, monkeypatch):
    def broken(*args, **kwargs):
        raise ConnectionError("503 Service Unavailable")

    monkeypatch.setattr(online_hub, "load_dataset", broken)
    _, printed = _load("squad")
    assert "offline stand-in" in printed and "loading rajpurkar/squad failed: ConnectionError: 503" in printed
    with pytest.raises(DataSourceError, match="503"):
        data.load_squad(source="hub")


def test_unreachable_hub_falls_back(monkeypatch):
    from attnflow.data import sources

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.setattr(sources, "_hub_unreachable", lambda: "https://huggingface.co unreachable (URLError)")
    _, printed = _load("wikitext")
    assert "real WikiText not used: https://huggingface.co unreachable" in printed


# ------------------------------------------------------------------- missing / corrupt files
def _copy_data(tmp_path: Path, *names: str) -> Path:
    d = tmp_path / "data"
    d.mkdir()
    shutil.copy(DATA / "MANIFEST.json", d)
    for n in names:
        shutil.copy(DATA / n, d)
    return d


def test_missing_file_names_file_and_make_data(tmp_path):
    d = _copy_data(tmp_path)
    with pytest.raises(DataFileError, match=r"sva_standin\.jsonl\.gz is missing; run `make data`"):
        data.load_sva(source="standin", data_dir=d)


def test_corrupt_file_names_file_and_make_data(tmp_path):
    d = _copy_data(tmp_path, "sva_standin.jsonl.gz")
    path = d / "sva_standin.jsonl.gz"
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(DataFileError, match=r"sva_standin\.jsonl\.gz does not match its sha256.*`make data`"):
        data.load_sva(source="standin", data_dir=d)


def test_missing_manifest_names_make_data(tmp_path):
    d = tmp_path / "empty"
    d.mkdir()
    with pytest.raises(DataFileError, match=r"MANIFEST\.json is missing.*`make data`"):
        data.load_wikitext(source="standin", data_dir=d)


def test_unreadable_file_with_matching_hash_names_make_data(tmp_path):
    d = _copy_data(tmp_path)
    bad = gzip.compress(b'{"split": "train", "tokens": [', mtime=0)[:-4]  # truncated gzip
    (d / "sva_standin.jsonl.gz").write_bytes(bad)
    manifest = json.loads((d / "MANIFEST.json").read_text())
    manifest["files"]["sva_standin.jsonl.gz"]["sha256"] = sha256_file(d / "sva_standin.jsonl.gz")
    (d / "MANIFEST.json").write_text(json.dumps(manifest))
    with pytest.raises(DataFileError, match=r"sva_standin\.jsonl\.gz cannot be read.*`make data`"):
        data.load_sva(source="standin", data_dir=d)


# ------------------------------------------------------------------------ make_data helpers
def test_wiki_markup_is_stripped_to_plain_text():
    spec = importlib.util.spec_from_file_location("make_data", ROOT / "scripts" / "make_data.py")
    make_data = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_data)
    raw = (
        "{{Infobox|name=x}}'''Albedo''' is the [[diffuse reflection|diffuse reflectivity]] of a "
        "[[surface]].<ref>Cite</ref> It was named in 1760.[1]\n[[File:A.png|thumb|A [[b]] c]]\n"
        "== See also ==\n* [[Other]]\n== History ==\nLambert introduced the term in his work."
    )
    assert make_data.wiki_to_paragraphs(raw) == [
        "Albedo is the diffuse reflectivity of a surface. It was named in 1760.",
        "== History ==",
        "Lambert introduced the term in his work.",
    ]
    sents = make_data.sentences(split_tokens("Dr. Smith came to the U.S. in 1990. He stayed. It rained."))
    assert [" ".join(s) for s in sents] == ["Dr . Smith came to the U . S . in 1990 .", "He stayed .", "It rained ."]
