"""Reading the claims ledger: one row per claim id (its verdict mix, how often it was inside its
domain, which statistic decided it), in book order, from the page records the claims module writes.

Used by the book's ledger page and by ``scripts/compare_ledger.py``-style reports; it imports no
Sphinx, so a reader of a downloaded notebook can summarise ``claims.records()`` the same way::

    from attnflow import claims, ledger
    ledger.summary([{"page": "mine", "claims": claims.records()}])
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from attnflow.claims import MARKS, VERDICTS, registry

WORDS = {
    "pass": "pass",
    "fail": "fail",
    "disagrees": "not reproduced (errata)",
    "outside": "outside domain",
    "inconclusive": "inconclusive",
    "contradicted": "contradicted",
}


def mark(verdict: str) -> str:
    """The ledger's mark and word for a verdict, e.g. ``"◐ inconclusive"``."""
    if verdict not in VERDICTS:
        raise ValueError(f"unknown verdict {verdict!r}; known: {', '.join(VERDICTS)}")
    return f"{MARKS[verdict]} {WORDS[verdict]}"


def statistic(record: dict[str, Any]) -> str:
    """Which statistic decided a record: a point check, the mean over seeds (t interval) or a share
    of seeds (Wilson bound) — read from the fields ``check_mean`` / ``check_share`` record."""
    if "k_seeds" in record:
        return "share of seeds (Wilson)"
    if "interval" in record or "n_seeds" in record:
        return "mean over seeds (t)"
    return "point check"


@dataclass(frozen=True)
class ClaimRow:
    """One claim id across the pages of a build."""

    claim_id: str
    statement: str
    pages: tuple[str, ...]
    counts: dict[str, int]
    statistics: tuple[str, ...]

    @property
    def n(self) -> int:
        return sum(self.counts.values())

    @property
    def inside(self) -> float:
        """Share of this claim's checks that were inside their domain (measured at all)."""
        return (self.n - self.counts.get("outside", 0)) / self.n if self.n else 0.0

    @property
    def mix(self) -> str:
        """``"3 ✔ · 1 ○"``: the verdicts in the order of :data:`VERDICTS`, zeros left out."""
        return " · ".join(f"{self.counts[v]} {MARKS[v]}" for v in VERDICTS if self.counts.get(v))


PAPERS = {"A": "Sharpening (Vashisht & Ramaswamy)", "B": "Focus and dilution (Chen, Lin, Xu, Luo)"}


def paper(claim_id: str) -> str:
    """The paper a claim id belongs to (``A…`` sharpening, ``B…`` focus–dilution), else the book's own."""
    return PAPERS.get(claim_id[:1], "The book's own checks") if claim_id[1:2].isdigit() else "The book's own checks"


def _order_key(claim_id: str, known: Sequence[str]) -> tuple:
    return (known.index(claim_id), "") if claim_id in known else (len(known), claim_id)


def summary(pages: Iterable[dict[str, Any]]) -> list[ClaimRow]:
    """One :class:`ClaimRow` per claim id over the page records (``{"page": ..., "claims": [...]}``),
    in the order of the claims registry (the papers' numbering: A1…, B1…)."""
    by_id: dict[str, dict[str, Any]] = {}
    for p in pages:
        for r in p["claims"]:
            row = by_id.setdefault(
                r["id"], {"pages": [], "counts": Counter(), "stats": [], "statement": r.get("statement", "")}
            )
            if p["page"] not in row["pages"]:
                row["pages"].append(p["page"])
            row["counts"][r["verdict"]] += 1
            s = statistic(r)
            if s not in row["stats"]:
                row["stats"].append(s)
    known = list(registry())
    return [
        ClaimRow(cid, v["statement"], tuple(v["pages"]), dict(v["counts"]), tuple(v["stats"]))
        for cid, v in sorted(by_id.items(), key=lambda kv: _order_key(kv[0], known))
    ]


def totals(pages: Iterable[dict[str, Any]]) -> dict[str, int]:
    """Verdict counts over every record (all of :data:`VERDICTS`, zeros included)."""
    c = Counter(r["verdict"] for p in pages for r in p["claims"])
    return {v: c.get(v, 0) for v in VERDICTS}


@dataclass(frozen=True)
class DomainRow:
    """One domain condition of one claim on one page: what it states, what it reads (the parameters or
    a named earlier state, :func:`attnflow.claims.state`), and in how many of the checks that carried it
    it held."""

    claim_id: str
    page: str
    condition: str
    reads: str
    held: int
    n: int


def domain_rows(pages: Iterable[dict[str, Any]]) -> list[DomainRow]:
    """Every domain condition of the build, each once per (claim, page, condition, reads), in the claims
    registry's order: the generated list of what every domain reads (records carry
    ``domain_conditions``: [statement, reads, held] per condition)."""
    groups: dict[tuple[str, str, str, str], list[int]] = {}
    for p in pages:
        for r in p["claims"]:
            for statement_, reads, held in r.get("domain_conditions") or []:
                g = groups.setdefault((r["id"], p["page"], statement_, reads), [0, 0])
                g[0] += bool(held)
                g[1] += 1
    known = list(registry())
    keys = sorted(groups, key=lambda k: (_order_key(k[0], known), list(groups).index(k)))
    return [DomainRow(*k, *groups[k]) for k in keys]


# --- verdicts quoted in prose ---------------------------------------------------------------------
# Summary sentences (the chapter indexes, the intro) name verdicts of checks on other pages; the book's
# ``{attnflow-verdict}`` role renders them from the records of the build with these two functions, so a
# sentence cannot keep a verdict its page no longer gives.

READING = {
    "pass": "reproduced",
    "fail": "failed",
    "disagrees": "not reproduced",
    "outside": "outside its domain",
    "inconclusive": "inconclusive",
    "contradicted": "contradicted",
}


def select(pages: Iterable[dict[str, Any]], page: str, claim_id: str, what: str = "") -> list[dict[str, Any]]:
    """The records of ``claim_id`` on ``page`` whose ``what`` contains ``what`` (case-insensitive; every
    record of the claim on the page when empty), in the order the page checked them."""
    key = what.strip().lower()
    return [
        r
        for p in pages
        if p["page"] == page
        for r in p["claims"]
        if r["id"] == claim_id and key in (r.get("what") or "").lower()
    ]


def reading(records: Sequence[dict[str, Any]]) -> str:
    """The verdict of a group of checks as prose reads it: ``"✔ reproduced"`` where every record has the
    same verdict, else the mix, ``"1 ✔ reproduced, 2 ◐ inconclusive"`` (in the order of :data:`VERDICTS`)."""
    if not records:
        raise ValueError("no record to read a verdict from")
    c = Counter(r["verdict"] for r in records)
    if len(c) == 1:
        (v,) = c
        return f"{MARKS[v]} {READING[v]}"
    return ", ".join(f"{c[v]} {MARKS[v]} {READING[v]}" for v in VERDICTS if c.get(v))


def totals_sentence(pages: Sequence[dict[str, Any]]) -> str:
    """``"351 checks on 33 pages: 293 passed, …, 0 failed"``: the verdict counts of a build, as the intro
    and the claims page state them."""
    t = totals(pages)
    parts = [f"{t['pass']} passed"]
    parts += [f"{t['disagrees']} do not reproduce the paper (errata)"] if t["disagrees"] else []
    parts += [f"{t[v]} {v} (real data)" for v in ("inconclusive", "contradicted") if t[v]]
    parts += [f"{t['outside']} outside their domain"] if t["outside"] else []
    return f"{sum(t.values())} checks on {len(pages)} pages: " + ", ".join(parts) + f", {t['fail']} failed"
