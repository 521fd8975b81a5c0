"""Run pages under their `paper` profile and record the runs in data/paper_runs.json.

    .venv/bin/python scripts/paper_runs.py sharpening/line_theorem focus_dilution/escape
    # the pages whose record is "not run", on a GPU, what fits in 9 minutes (issue 23):
    .venv/bin/python scripts/paper_runs.py --not-run --device cuda --budget 540 --dry-run
    # record an earlier `attnflow run --profile paper`:
    .venv/bin/python scripts/paper_runs.py --import runs/line_theorem
    .venv/bin/python scripts/paper_runs.py --too-large focus_dilution/cycle \\
        --note "65,536 × 16,384 tokens: ~3 h on 2 CPUs"

Each record: page, profile, date, commit, device (CPU model / CUDA device), CPU count, wall time,
claim verdict counts, status. A page has at most one record per kind of device (CPU, CUDA): a CUDA
run sits next to the CPU record (e.g. "not run: 2 h on 2 CPUs") and replaces only an earlier CUDA
record. The reproducibility page renders the file ({attnflow-paper-runs}).

``--device`` sets each page's ``device`` parameter (``attnflow run --device``: a page without one runs
on the CPU only, and ``cuda`` is refused for it, and where torch sees no CUDA device, before anything
runs). ``--dry-run`` prints the plan (page, profile, device, the page's own cost estimate, output
folder) and writes nothing. ``--budget SECONDS`` runs the cheapest pages first by that estimate
(seconds on the project's 2 shared CPUs, divided by ``--speedup``) and skips, recording nothing, a
page whose estimate no longer fits what is left of the budget; a cell still running when the budget
is spent is stopped (the runner's per-cell time limit) and that page is not recorded either. The
script needs nothing but the repository: the Hugging Face libraries are kept offline.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))  # a checkout without the package installed (a bare GPU machine)
OUT = ROOT / "data" / "paper_runs.json"
RUNS = ROOT / "runs" / "paper"
PROFILE = "paper"
CELL_TIMEOUT_S = 7200  # per-cell limit outside a budget: issue 23 allows a real-data page 2 h on 2 CPUs, most of it
# one training cell (real_squad's stopped at attnflow run's 30 min default)


def _commit() -> str:
    """``ATTNFLOW_COMMIT`` (a copy of the tree without .git), else git's HEAD."""
    given = os.environ.get("ATTNFLOW_COMMIT", "").strip()
    if given:
        return given
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()


def _cpu() -> str:
    model = ""
    try:
        model = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    except (OSError, StopIteration):
        model = platform.processor()
    return f"CPU ×{os.cpu_count()} ({model})" if model else f"CPU ×{os.cpu_count()}"


def _device(backend: str | None = None) -> str:
    """The record's device: the CUDA device's name for ``backend='cuda'``, else the CPU; ``None``: the
    CUDA device when torch sees one (an imported run, whose device is not known)."""
    import torch

    if backend is None:
        backend = "cuda" if torch.cuda.is_available() else "cpu"
    if backend == "cuda":
        from attnflow import device

        device.resolve("cuda")  # the cause, named, when there is none
        return torch.cuda.get_device_name(0)
    return _cpu()


def _counts(claims_file: Path | None) -> dict:
    """Verdict counts of a run's claims record; all zero where the run recorded none (a page that stopped
    before its first check)."""
    exists = claims_file is not None and Path(claims_file).exists()
    recs = json.loads(Path(claims_file).read_text(encoding="utf-8"))["claims"] if exists else []
    out = {}
    for v, label in (("pass", "passed"), ("disagrees", "not reproduced"), ("outside", "outside"), ("fail", "failed")):
        out[label] = sum(r["verdict"] == v for r in recs)
    return out


def _load() -> dict:
    return json.loads(OUT.read_text(encoding="utf-8")) if OUT.exists() else {"runs": []}


def _save(record: dict) -> None:
    """Add ``record``, replacing the page's earlier record of the same kind of device (CPU or CUDA)."""
    from attnflow_book.sphinx_runs import backend

    data = _load()
    data["runs"] = [r for r in data["runs"] if (r["page"], backend(r)) != (record["page"], backend(record))]
    data["runs"].append(record)
    data["runs"].sort(key=lambda r: (r["page"], backend(r)))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def not_run_pages() -> list[str]:
    """The pages with a "not run" record and no run on any device."""
    runs = _load()["runs"]
    ran = {r["page"] for r in runs if r.get("seconds") is not None}
    return sorted({r["page"] for r in runs if r.get("status") == "not run"} - ran)


@dataclass
class Plan:
    """One page to run: its key, the parameters set here (``device``), where it runs (``cpu`` or
    ``cuda``; for ``auto``, where torch says), the page's estimate in seconds on 2 CPUs (None when its
    schema offers none: ``what`` says why) and its output folder."""

    page: str
    parameters: dict = field(default_factory=dict)
    runs_on: str = "cpu"
    device_text: str = "cpu"
    estimate: float | None = None
    what: str = ""
    output: Path = RUNS

    def line(self, speedup: float = 1.0) -> str:
        if self.estimate is None:
            est = f"no estimate ({self.what})"
        else:
            est = f"estimate {_duration(self.estimate)} on 2 CPUs"
            if speedup != 1.0:
                est += f", {_duration(self.estimate / speedup)} at speed-up {speedup:g}"
        out = self.output.relative_to(ROOT) if self.output.is_relative_to(ROOT) else self.output
        return f"{self.page}: profile {PROFILE}, device {self.device_text}, {est}, output {out}"


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min ({seconds:.0f} s)"


def estimate(key: str, parameters: dict) -> tuple[float | None, str]:
    """The page's own cost estimate (its schema's ``cost``) at the paper profile with ``parameters``:
    (seconds on 2 CPUs, what it counts), or (None, why there is none). The cost limit is lifted and
    the schema's warning line silenced: this only reads the number."""
    from attnflow import cli, params, runner
    from attnflow.runner.checks import env

    try:
        key, schema, defaults = cli.page_schema(key)
    except runner.RunError as e:
        return None, str(e).splitlines()[0]
    if schema.cost is None:
        return None, "the page's schema declares no cost"
    values = {**defaults, **runner.load_profile(PROFILE, key), **parameters}
    try:
        with env(ATTNFLOW_FORCE="1"), contextlib.redirect_stderr(io.StringIO()):
            cfg = schema.validate({n: values[n] for n in schema.params if n in values})
    except params.ParameterError as e:
        return None, str(e).splitlines()[0]
    return schema.estimate(cfg), schema.cost[1]


def plan(page: str, device: str | None, *, check_cuda: bool = True) -> Plan:
    """The plan of one page (RunError: an unknown page, ``cuda`` for a page without a device
    parameter, or ``cuda`` where torch sees none with ``check_cuda``)."""
    import jupytext
    import torch

    from attnflow import cli, runner
    from attnflow.runner.checks import code_cells, parameter_names

    key, path = runner.resolve_page(page)
    parameters = cli.device_parameters(key, device, None, check_cuda=check_cuda)
    nb = jupytext.read(path)
    if "device" in parameter_names(nb):
        ns: dict = {}
        exec(compile(code_cells(nb)[0].source, "<parameters cell>", "exec"), ns)
        value = {"device": ns.get("device", "auto"), **runner.load_profile(PROFILE, key), **parameters}["device"]
        runs_on = ("cuda" if torch.cuda.is_available() else "cpu") if value == "auto" else value
        text = f"auto (here: {runs_on})" if value == "auto" else value
        if value == "cuda" and not torch.cuda.is_available():
            text += " (none here: the run needs a CUDA machine)"
    else:
        runs_on, text = "cpu", "cpu (the page has no device parameter)"
    seconds, what = estimate(key, parameters)
    return Plan(key, parameters, runs_on, text, seconds, what, RUNS / key.replace("/", "__"))


def order(plans: list[Plan], budget: float | None) -> list[Plan]:
    """Cheapest first by estimate under a budget (pages without one last); else as given."""
    if budget is None:
        return plans
    return sorted(plans, key=lambda p: (p.estimate is None, p.estimate or 0.0))


def fits(p: Plan, left: float | None, speedup: float) -> str | None:
    """None when ``p`` may start with ``left`` seconds of the budget left, else why not."""
    if left is None:
        return None
    if p.estimate is None:
        return "no estimate to fit it in the budget"
    if p.estimate / speedup > left:
        return f"estimate {_duration(p.estimate / speedup)} > {_duration(max(left, 0.0))} left of the budget"
    return None


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")  # nothing but the repository: no network
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pages", nargs="*")
    ap.add_argument("--not-run", action="store_true", help='also the pages whose record is "not run"')
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
    ap.add_argument("--device", default=None, help="auto, cpu or cuda: each page's device parameter")
    ap.add_argument("--dry-run", action="store_true", help="print the plan, run and write nothing")
    ap.add_argument("--budget", type=float, default=None, metavar="SECONDS", help="run what fits, cheapest first")
    ap.add_argument(
        "--speedup",
        type=float,
        default=1.0,
        help="the machine's speed over the 2 shared CPUs the estimates are in (default 1: unmeasured)",
    )
    a = ap.parse_args(argv)
    if a.budget is not None and not a.budget > 0:
        ap.error(f"--budget must be a number of seconds > 0, received {a.budget:g}")
    if not a.speedup > 0:
        ap.error(f"--speedup must be > 0, received {a.speedup:g}")
    from attnflow import runner
    from attnflow.runner.checks import env

    pages = list(dict.fromkeys(a.pages + (not_run_pages() if a.not_run else [])))
    try:
        plans = order([plan(p, a.device, check_cuda=not a.dry_run) for p in pages], a.budget)
    except runner.RunError as e:
        print(f"paper_runs: error: {e}", file=sys.stderr)
        return 2
    if a.dry_run:
        budget = "" if a.budget is None else f", budget {a.budget:g} s at speed-up {a.speedup:g}"
        print(f"paper_runs: dry run, {len(plans)} page(s), nothing is run or written{budget}")
        left = a.budget
        for p in plans:
            why = fits(p, left, a.speedup)
            print(p.line(a.speedup) + (f"; skipped: {why}" if why else ""))
            if left is not None and why is None:
                left -= p.estimate / a.speedup
        for d in a.imports + a.too_large:
            print(f"(would record {d}: --import/--too-large)")
        return 0

    base = dict(profile=PROFILE, commit=_commit(), cpus=os.cpu_count())
    if len(base["commit"]) != 40:
        print(
            "paper_runs: warning: no git commit here; set ATTNFLOW_COMMIT to the commit of this tree", file=sys.stderr
        )
    for page in a.too_large:
        _save(
            dict(
                base,
                device=_device("cuda" if a.device == "cuda" else "cpu"),
                page=page,
                seconds=None,
                claims={},
                status="not run",
                note=a.note,
                date=time.strftime("%Y-%m-%d"),
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
                device=_device(),
                page=rec.get("page", nbs[0].stem),
                seconds=pm.get("duration"),
                claims=_counts(claims_files[0] if claims_files else None),
                status="imported",
                note=a.note,
                date=mtime[:10],
                commit=at or base["commit"],
            )
        )
    rc, began = 0, time.perf_counter()
    for p in plans:
        left = None if a.budget is None else a.budget - (time.perf_counter() - began)
        why = fits(p, left, a.speedup)
        print(p.line(a.speedup) + (f"; skipped: {why}" if why else ""), flush=True)
        if why:
            continue
        timeout = CELL_TIMEOUT_S if left is None else max(1, min(CELL_TIMEOUT_S, int(left)))
        start = time.perf_counter()
        try:
            with env(ATTNFLOW_FORCE="1"):  # asked for by name: a paper run may be hours on a CPU (restored after)
                res = runner.run_page(
                    p.page, profile=PROFILE, parameters=p.parameters, output=p.output, timeout=timeout
                )
            status, claims_file = ("ok" if res.failed == 0 else "claims failed"), res.claims_file
        except runner.PageFailed as e:
            if left is not None and time.perf_counter() - start >= left:
                print(f"{p.page}: stopped at the end of the budget; not recorded", flush=True)
                continue
            # the claims the page checked before it stopped (a failed claim, a cell that raised) still count
            kept = e.result.claims_file if e.result is not None else None
            status, claims_file = f"page failed: {str(e).splitlines()[0][:120]}", kept
        except runner.RunError as e:
            print(f"{p.page}: error: {e}; not recorded", file=sys.stderr, flush=True)
            rc = 1
            continue
        except runner.Interrupted as e:
            print(f"{p.page}: interrupted by {e.name}; not recorded", file=sys.stderr, flush=True)
            return e.exit_code
        seconds = round(time.perf_counter() - start, 1)
        _save(
            dict(
                base,
                device=_device(p.runs_on),
                page=p.page,
                seconds=seconds,
                claims=_counts(claims_file),
                status=status,
                note=a.note,
                date=time.strftime("%Y-%m-%d"),
            )
        )
        ratio = f"; the estimate over the wall time: {p.estimate / seconds:.1f}" if p.estimate and seconds else ""
        print(f"{p.page}: {status} in {_duration(seconds)} on {p.runs_on}{ratio}", flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
