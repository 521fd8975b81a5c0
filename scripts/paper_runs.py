"""Run pages under their `paper` profile and record the runs in data/paper_runs.json.

    .venv/bin/python scripts/paper_runs.py sharpening/line_theorem focus_dilution/escape
    # record an earlier `attnflow run --profile paper`:
    .venv/bin/python scripts/paper_runs.py --import runs/line_theorem
    .venv/bin/python scripts/paper_runs.py --too-large focus_dilution/cycle \\
        --note "65,536 × 16,384 tokens: ~3 h on 2 CPUs"

Each record: page, profile, date, commit, device (CPU model / CUDA device), CPU count, wall time,
claim verdict counts, status. The reproducibility page renders the file ({attnflow-paper-runs}).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "data" / "paper_runs.json"


def _commit() -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()


def _device() -> str:
    import torch

    if torch.cuda.is_available():
        return torch.cuda.get_device_name(0)
    model = ""
    try:
        model = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    except (OSError, StopIteration):
        model = platform.processor()
    return f"CPU ×{os.cpu_count()} ({model})" if model else f"CPU ×{os.cpu_count()}"


def _counts(claims_file: Path | None) -> dict:
    if not claims_file or not claims_file.exists():
        return {}
    recs = json.loads(claims_file.read_text(encoding="utf-8"))["claims"]
    out = {}
    for v, label in (("pass", "passed"), ("disagrees", "not reproduced"), ("outside", "outside"), ("fail", "failed")):
        out[label] = sum(r["verdict"] == v for r in recs)
    return out


def _save(record: dict) -> None:
    data = json.loads(OUT.read_text(encoding="utf-8")) if OUT.exists() else {"runs": []}
    data["runs"] = [
        r for r in data["runs"] if not (r["page"] == record["page"] and r.get("device") == record.get("device"))
    ]
    data["runs"].append(record)
    data["runs"].sort(key=lambda r: r["page"])
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pages", nargs="*")
    ap.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="DIR",
        help="output folder of an earlier `attnflow run --profile paper`",
    )
    ap.add_argument("--too-large", action="append", default=[], metavar="PAGE")
    ap.add_argument("--note", default="")
    a = ap.parse_args()
    from attnflow import runner

    base = dict(profile="paper", commit=_commit(), device=_device(), cpus=os.cpu_count())
    for page in a.too_large:
        _save(
            dict(
                base, page=page, seconds=None, claims={}, status="not run", note=a.note, date=time.strftime("%Y-%m-%d")
            )
        )
    for d in map(Path, a.imports):
        nbs = sorted(d.glob("*.ipynb"))
        if not nbs:
            sys.exit(f"{d}: no executed notebook")
        import nbformat

        nb = nbformat.read(nbs[0], as_version=4)
        pm = nb.metadata.get("papermill", {})
        claims_files = sorted(d.glob("*.claims.json"))
        rec = json.loads(claims_files[0].read_text()) if claims_files else {}
        mtime = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(nbs[0].stat().st_mtime))
        # the commit that was HEAD when the run ended (the working tree may have held edits on top of it)
        at = subprocess.run(
            ["git", "rev-list", "-1", f"--before={mtime} +0000", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        _save(
            dict(
                base,
                page=rec.get("page", nbs[0].stem),
                seconds=pm.get("duration"),
                claims=_counts(claims_files[0] if claims_files else None),
                status="imported",
                note=a.note,
                date=mtime[:10],
                commit=at or base["commit"],
            )
        )
    for page in a.pages:
        start = time.perf_counter()
        try:
            os.environ["ATTNFLOW_FORCE"] = "1"  # asked for by name: a paper run may be hours on a CPU
            res = runner.run_page(page, profile="paper", output=ROOT / "runs" / "paper" / page.replace("/", "__"))
            status, claims_file = ("ok" if res.failed == 0 else "claims failed"), res.claims_file
        except runner.PageFailed as e:
            status, claims_file = f"page failed: {str(e).splitlines()[0][:120]}", None
        _save(
            dict(
                base,
                page=page,
                seconds=round(time.perf_counter() - start, 1),
                claims=_counts(claims_file),
                status=status,
                note=a.note,
                date=time.strftime("%Y-%m-%d"),
            )
        )
        print(f"{page}: {status}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
