"""Summaries: what a run produced (:class:`RunResult`), the verdict counts of its claims record
and the one-line message of a failed page."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attnflow.runner.errors import PageFailed


@dataclass
class RunResult:
    page: str
    notebook: Path | None
    claims_file: Path | None
    seconds: float
    passed: int
    failed: int
    parameters: dict[str, Any]
    disagree: int = 0          # checks of the paper's statements that are not reproduced (errata)
    outside: int = 0           # claims outside their domain for these parameters (not a pass)
    failed_claims: list[str] = field(default_factory=list)   # "B4 what" of each failed claim
    error: str | None = None   # why the page failed (None when it ran to the end)

    def counts(self) -> str:
        return (f"claims {self.passed} passed, {self.disagree} not reproduced (errata), "
                f"{self.outside} outside domain, {self.failed} failed")

    def summary(self) -> str:
        where = f" -> {self.notebook}" if self.notebook else ""
        return f"{self.page}: ran in {self.seconds:.1f} s, {self.counts()}{where}"


def count(record: Path) -> tuple[int, int, int, int, list[str]]:
    """(passed, failed, disagree, outside, "id what" of each failed claim) of a claims record;
    zeros when it is missing or unreadable."""
    passed = failed = disagree = outside = 0
    names: list[str] = []
    if record.exists():
        try:
            recs = json.loads(record.read_text(encoding="utf-8"))["claims"]
        except (OSError, ValueError, KeyError):
            return 0, 0, 0, 0, []
        for r in recs:
            v = r.get("verdict")
            passed += v == "pass"
            disagree += v == "disagrees"
            outside += v == "outside"
            if v == "fail":
                failed += 1
                names.append(f"{r.get('id')} {r.get('what') or ''}".strip())
    return passed, failed, disagree, outside, names


def raise_if_failed(res: RunResult, error: str | None) -> RunResult:
    """``res`` when the page ran to the end and no claim failed; else PageFailed naming the
    cell or the claims, the counts and where the executed notebook is."""
    if error is None and res.failed:
        error = "claims failed"
    if error is None:
        return res
    res.error = error
    names = res.failed_claims
    which = f"; failed claims: {'; '.join(names)}" if names and "ClaimFailed" not in error else ""
    kept_at = f"; executed notebook kept at {res.notebook}" if res.notebook else "; no notebook was written"
    if res.claims_file:
        kept_at += f" (claims record {res.claims_file})"
    raise PageFailed(f"{res.page}: {error}{which}; {res.counts()}{kept_at}", res)
