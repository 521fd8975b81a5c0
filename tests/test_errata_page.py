"""The errata as a page for readers (issue 25 item 8, issue 21 item 7): a table of findings first
(claim, what differs, status, a link to the evidence), per-finding sections for a reader, the working
history out of the reader's way, and every label the pages link to still there."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ERRATA = ROOT / "book" / "errata.md"
STATUSES = {"open", "resolved", "by design"}


def _text() -> str:
    return ERRATA.read_text(encoding="utf-8")


def _labels(text: str) -> set[str]:
    return set(re.findall(r"^\((errata-[a-z0-9-]+)\)=$", text, flags=re.M))


def _reader_part(text: str) -> str:
    """The page before the working history, with the folded boxes (``:class: dropdown``) taken out."""
    head = text.split("(errata-history)=", 1)[0]
    return re.sub(r"^:::\{admonition\}[^\n]*\n:class: dropdown\n.*?^:::$", "", head, flags=re.S | re.M)


def _table_rows(text: str) -> list[list[str]]:
    block = text.split("## Findings at a glance", 1)[1].split("\n#", 1)[0]
    rows = [line for line in block.splitlines() if line.startswith("|")][2:]  # past the header and |---|
    return [[c.strip() for c in row.strip("|").split("|")] for row in rows]


def test_the_errata_starts_with_a_table_of_findings_each_linked_to_its_section():
    text = _text()
    assert text.index("## Findings at a glance") < text.index("## Sharpening")
    rows = _table_rows(text)
    assert len(rows) >= 20
    defined = _labels(text)
    for claim, what, status, evidence in rows:
        assert re.fullmatch(r"(?:A|B)\d+(?:[–,] ?(?:A|B)?\d+)*", claim), f"claim cell {claim!r}"
        assert what and status in STATUSES, f"row {claim}: status {status!r} not one of {sorted(STATUSES)}"
        (label,) = re.fullmatch(r"\{ref\}`(?:[^`<$]+ <)?(errata-[a-z0-9-]+)>?`", evidence).groups()
        assert label in defined, f"row {claim} links to {label}, which the page does not define"


def test_every_finding_section_is_in_the_table_and_has_a_status():
    text = _text()
    reader = text.split("(errata-history)=", 1)[0]
    in_table = {re.search(r"[`<](errata-[a-z0-9-]+)>?`", r[3]).group(1) for r in _table_rows(text)}
    sections = re.findall(r"^\((errata-[a-z0-9-]+)\)=\n#{3,4} ", reader, flags=re.M)
    missing = [s for s in sections if s not in in_table]
    assert not missing, f"finding sections missing from the table of findings: {missing}"
    for label in sections:
        body = reader.split(f"({label})=", 1)[1].split("\n(errata-", 1)[0]
        assert re.search(r"\*Status:\* \*\*(open|resolved|by design)\*\*", body), f"{label} states no status"


def test_every_errata_label_the_book_links_to_is_defined():
    defined = _labels(_text())
    used: set[str] = set()
    for path in [*(ROOT / "book").rglob("*.py"), *(ROOT / "book").rglob("*.md"), *(ROOT / "lib").rglob("*.py")]:
        if path == ERRATA:
            continue
        src = path.read_text(encoding="utf-8")
        used |= set(re.findall(r"""errata\s*=\s*["'](errata-[a-z0-9-]+)["']""", src))
        used |= set(re.findall(r"""\b(?:MARKOV|ORDER|errata)\b[^\n]*?["'](errata-[a-z0-9-]+)["']""", src))
        used |= set(re.findall(r"\{ref\}`(?:[^`<]*<)?(errata-[a-z0-9-]+)>?`", src))
    assert used, "no page links to the errata: the search is broken"
    assert used <= defined, f"labels linked from the book but not defined in errata.md: {sorted(used - defined)}"
    table = {re.search(r"[`<](errata-[a-z0-9-]+)>?`", r[3]).group(1) for r in _table_rows(_text())}
    checks = {lab for lab in used if lab not in {"errata-atlas", "errata-history", "errata-summary"}}
    assert checks <= table, f"findings the checks link to but the table omits: {sorted(checks - table)}"


def test_the_working_history_is_out_of_the_readers_way():
    """No commit hashes or session history in the reader's part; they live in folded boxes or in the
    working-history section at the end."""
    reader = _reader_part(_text())
    hashes = re.findall(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b", reader)
    assert not hashes, f"commit hashes in the reader's part of the errata: {hashes}"
    history = re.findall(r"[^.\n]*(?:[Ii]ssue \d+|[Aa]n earlier version|Until this version)[^.\n]*", reader)
    assert not history, f"working history in the reader's part: {history}"
    assert "(errata-history)=\n## Working history" in _text()
