"""``{attnflow-paper-runs}``: the table of recorded ``--profile paper`` runs (reproducibility page).

The rows come from ``data/paper_runs.json``, written by ``scripts/paper_runs.py`` from real runs
of the runner (page, profile, date, commit, device, CPU count, wall time, claim verdicts). A page
whose paper profile does not fit the machine is listed with its measured size and the reason. A page
has at most one record per kind of device (:func:`backend`): a CUDA run is a row next to the page's CPU
record, and the summary counts pages, a page counting as run when any of its records ran to the end.
"""

from __future__ import annotations

import json
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import Directive


def _cell(text: str) -> nodes.entry:
    e = nodes.entry()
    e += nodes.paragraph(text=str(text))
    return e


class PaperRuns(Directive):
    has_content = False

    def run(self):
        env = self.state.document.settings.env
        path = Path(env.srcdir) / "data" / "paper_runs.json"
        env.note_dependency(str(path))
        runs = json.loads(path.read_text(encoding="utf-8"))["runs"] if path.exists() else []
        if not runs:
            return [nodes.paragraph(text="No paper-profile run has been recorded yet (scripts/paper_runs.py).")]
        summary = nodes.paragraph(text=summarize(runs))
        cols = ["page", "device", "wall time", "claims", "date", "commit", "note"]
        table = nodes.table(classes=["attnflow-paper-runs"])
        group = nodes.tgroup(cols=len(cols))
        table += group
        for w in (22, 12, 9, 20, 12, 8, 17):
            group += nodes.colspec(colwidth=w)
        head = nodes.thead()
        row = nodes.row()
        for c in cols:
            row += _cell(c)
        head += row
        group += head
        body = nodes.tbody()
        for r in runs:
            row = nodes.row()
            secs = r.get("seconds")
            wall = "—" if secs is None else (f"{secs / 60:.1f} min" if secs >= 120 else f"{secs:.0f} s")
            c = r.get("claims") or {}
            verdicts = ", ".join(f"{n} {k}" for k, n in c.items() if n) or "—"
            for v in (
                r["page"],
                r.get("device", ""),
                wall,
                verdicts,
                r.get("date", ""),
                str(r.get("commit", ""))[:8],
                r.get("note", ""),
            ):
                row += _cell(v)
            body += row
        group += body
        return [summary, table]


def backend(record: dict) -> str:
    """``"cpu"`` or ``"cuda"``: the kind of device of a record (scripts/paper_runs.py writes a CPU as
    ``CPU ×N (model)`` and a CUDA device by its name); a page has at most one record of each."""
    return "cpu" if str(record.get("device", "")).startswith("CPU") else "cuda"


def summarize(runs: list[dict]) -> str:
    """One sentence from the records: how many pages ran to the end with no failed claim (and the
    longest of those runs), how many failed claims, stopped before the end or did not run here, and on
    which devices. A page with a record per kind of device counts once: as run when one of its records
    ran to the end."""
    done = [
        r
        for r in runs
        if r.get("seconds") is not None
        and not (r.get("claims") or {}).get("failed")
        and r.get("status") in ("ok", "imported")
    ]
    failed = [r for r in runs if (r.get("claims") or {}).get("failed")]
    stopped = [r for r in runs if str(r.get("status", "")).startswith("page failed") and r not in failed]
    pages = list(dict.fromkeys(r["page"] for r in runs))
    done_pages = {r["page"] for r in done}
    failed_pages = list(dict.fromkeys(r["page"] for r in failed))
    stopped_pages = [p for p in dict.fromkeys(r["page"] for r in stopped) if p not in failed_pages]
    not_run = [p for p in pages if p not in done_pages and p not in failed_pages and p not in stopped_pages]
    longest = max(done, key=lambda r: r["seconds"]) if done else None
    devices = sorted({r.get("device", "") for r in done})
    parts = [
        f"{len(done_pages)} of {len(pages)} pages ran their paper profile to the end with no failed claim"
        + (f" (the longest, {longest['page']}, in {longest['seconds'] / 60:.1f} min)" if longest else "")
    ]
    if failed_pages:
        parts.append(f"{len(failed_pages)} with failed claims ({', '.join(failed_pages)})")
    if stopped_pages:
        parts.append(
            f"{len(stopped_pages)} stopped before the end (a cell raised or ran out of time: "
            f"{', '.join(stopped_pages)}; the reason in the table)"
        )
    if not_run:
        parts.append(f"{len(not_run)} were not run to the end here (size and reason in the note column)")
    return "; ".join(parts) + (f". Devices: {', '.join(devices)}." if devices else ".")


def setup(app):
    app.add_directive("attnflow-paper-runs", PaperRuns)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
