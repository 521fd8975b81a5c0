"""Summaries: what a run produced (:class:`RunResult`) and the verdict counts of its claims record."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class RunResult:
    page: str
    notebook: Path | None
    claims_file: Path | None
    seconds: float
    passed: int
    failed: int
    parameters: dict[str, Any]
    disagree: int = 0  # checks of the paper's statements that are not reproduced (errata)
    outside: int = 0  # claims outside their domain for these parameters (not a pass)
    failed_claims: list[str] = field(default_factory=list)  # "B4 what" of each failed claim
    error: str | None = None  # why the page failed (None when it ran to the end)

    def counts(self) -> str:
        return (
            f"claims {self.passed} passed, {self.disagree} not reproduced (errata), "
            f"{self.outside} outside domain, {self.failed} failed"
        )

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
