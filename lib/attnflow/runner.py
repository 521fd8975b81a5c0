"""Run one book page with new parameters through papermill (DESIGN.md, principle 5).

    attnflow run sharpening/lemma1_rescaling --profile smoke -p lr_ratio=3 --output runs/

Steps: resolve the page (a path under ``book/`` without suffix, or a file path); merge the
profile's overrides (``book/profiles.yml``) with ``-p key=value`` values; validate them
*before* executing by running the page's parameters cell and its validation cell in a scratch
namespace (the same ``params.validate`` the page runs); execute with papermill
(``jupytext.read`` → ``papermill.execute_notebook``) in the page's folder; on success move the
executed ``.ipynb`` and the page's claims record into the output folder. Bad input raises
:class:`RunError` (exit 2) and failures :class:`PageFailed` (exit 1); neither leaves files.
"""
from __future__ import annotations

import ast
import contextlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml

from attnflow.params import ParameterError

__all__ = ["run_page", "RunError", "PageFailed", "RunResult", "book_root", "list_pages", "resolve_page", "load_profile"]


class RunError(ValueError):
    """Bad input: unknown page, profile or parameter, malformed -p value (exit status 2)."""


class PageFailed(RuntimeError):
    """The page raised while executing, e.g. a failed claim (exit status 1)."""


@dataclass
class RunResult:
    page: str
    notebook: Path
    claims_file: Path | None
    seconds: float
    passed: int
    failed: int
    parameters: dict[str, Any]
    disagree: int = 0          # checks of the paper's statements that are not reproduced (errata)
    outside: int = 0           # claims outside their domain for these parameters (not a pass)

    def summary(self) -> str:
        dis = f", {self.disagree} not reproduced (errata)" if self.disagree else ""
        out = f", {self.outside} outside their domain" if self.outside else ""
        return (f"{self.page}: ran in {self.seconds:.1f} s, claims {self.passed} passed{dis}{out}, "
                f"{self.failed} failed -> {self.notebook}")


def book_root() -> Path:
    """The repository root (holds _toc.yml): next to the installed package, else above cwd."""
    here = Path(__file__).resolve().parents[2]
    if (here / "_toc.yml").exists():
        return here
    for d in (Path.cwd().resolve(), *Path.cwd().resolve().parents):
        if (d / "_toc.yml").exists():
            return d
    raise RunError("cannot find the book root (a folder with _toc.yml) above the current directory")


def list_pages(root: Path | None = None) -> list[str]:
    """Page keys (``sharpening/lemma1_rescaling``) of every notebook listed in _toc.yml."""
    root = root or book_root()
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    files: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if k in ("file", "root") and isinstance(v, str):
                    files.append(v)
                else:
                    walk(v)
        elif isinstance(node, list):
            for x in node:
                walk(x)

    walk(toc)
    pages = []
    for f in files:
        p = root / (f + ".py")
        if p.exists() and f.startswith("book/"):
            pages.append(f[len("book/"):])
    return pages


def resolve_page(page: str, root: Path | None = None) -> tuple[str, Path]:
    """Page key and notebook path from a key or a path; RunError names the known pages."""
    root = root or book_root()
    s = str(page).strip()
    cand = Path(s)
    if cand.suffix == ".py":
        cand = cand.resolve() if cand.exists() else (root / s).resolve()
        try:
            rel = cand.relative_to((root / "book").resolve())
        except ValueError:
            rel = None
        key = str(rel.with_suffix("")) if rel is not None else None
    else:
        key = s[len("book/"):] if s.startswith("book/") else s
        cand = root / "book" / (key + ".py")
    pages = list_pages(root)
    if key not in pages or not cand.exists():
        raise RunError(f"unknown page {page!r}; pages are:\n  " + "\n  ".join(pages))
    return key, cand


def load_profile(name: str | None, key: str, root: Path | None = None) -> dict[str, Any]:
    """The overrides of profile ``name`` for page ``key`` (empty for the book defaults)."""
    if name in (None, "", "book"):
        return {}
    root = root or book_root()
    profiles = yaml.safe_load((root / "book" / "profiles.yml").read_text(encoding="utf-8")) or {}
    if name not in profiles:
        raise RunError(f"unknown profile {name!r}; profiles are: book (the page defaults), {', '.join(profiles)}")
    return dict((profiles[name] or {}).get(key) or {})


def parse_assignments(items: Sequence[str]) -> dict[str, Any]:
    """``["r=3", "models=['CACO','FAFO']", "method=BDF"]`` -> typed values (Python literals,
    else the raw string)."""
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise RunError(f"parameter {item!r} is not of the form key=value")
        k, v = item.split("=", 1)
        k = k.strip()
        if not k.isidentifier():
            raise RunError(f"parameter name {k!r} is not a valid name")
        try:
            out[k] = ast.literal_eval(v)
        except (ValueError, SyntaxError):
            out[k] = v
    return out


def _code_cells(nb) -> list:
    return [c for c in nb.cells if c.cell_type == "code"]


def prevalidate(nb, parameters: Mapping[str, Any], page_dir: Path) -> None:
    """Run the parameters cell, the overrides and the validation cell in a scratch namespace."""
    cells = _code_cells(nb)
    if len(cells) < 2 or "parameters" not in cells[0].metadata.get("tags", []):
        raise RunError("the page's first code cell must be tagged 'parameters' and the second must validate it")
    ns: dict[str, Any] = {"__name__": "__attnflow_prevalidate__"}
    with tempfile.TemporaryDirectory() as scratch, _env(ATTNFLOW_CLAIMS_DIR=scratch), _cwd(page_dir):
        exec(compile(cells[0].source, "<parameters cell>", "exec"), ns)
        ns.update(parameters)
        try:
            exec(compile(cells[1].source, "<validation cell>", "exec"), ns)
        except ParameterError as e:
            raise RunError(str(e)) from None


@contextlib.contextmanager
def _env(**kv: str):
    old = {k: os.environ.get(k) for k in kv}
    os.environ.update(kv)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextlib.contextmanager
def _cwd(path: Path):
    old = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def run_page(
    page: str,
    *,
    profile: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    output: str | Path | None = None,
    timeout: int = 1800,
    root: Path | None = None,
) -> RunResult:
    """Execute one page; returns a RunResult or raises RunError / PageFailed.
    ``root``: the book root (default: the repository this package lives in)."""
    import jupytext
    import papermill

    root = Path(root) if root else book_root()
    key, path = resolve_page(page, root)
    params = {**load_profile(profile, key, root), **dict(parameters or {})}
    nb = jupytext.read(path)
    prevalidate(nb, params, path.parent)

    out_dir = Path(output) if output else root / "runs" / key.replace("/", "__")
    name = path.stem
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="attnflow-run-") as tmp:
        tmp = Path(tmp)
        claims_tmp = tmp / "claims"
        nb_tmp = tmp / f"{name}.ipynb"
        try:
            with _env(ATTNFLOW_CLAIMS_DIR=str(claims_tmp)):
                papermill.execute_notebook(
                    nb, str(nb_tmp), parameters=params, cwd=str(path.parent), kernel_name="python3",
                    progress_bar=False, log_output=False, execution_timeout=timeout,
                )
        except papermill.PapermillExecutionError as e:
            tb = "\n".join(e.traceback[-6:]) if e.traceback else ""
            raise PageFailed(f"{key}: cell {e.exec_count} raised {e.ename}: {e.evalue}\n{_strip_ansi(tb)}") from None
        seconds = time.perf_counter() - start
        record = claims_tmp / (key.replace("/", "__") + ".json")
        passed = failed = disagree = outside = 0
        if record.exists():
            recs = json.loads(record.read_text(encoding="utf-8"))["claims"]
            passed = sum(r["verdict"] == "pass" for r in recs)
            disagree = sum(r["verdict"] == "disagrees" for r in recs)   # documented in the errata
            outside = sum(r["verdict"] == "outside" for r in recs)   # not in the claim's domain
            failed = len(recs) - passed - disagree - outside
        out_dir.mkdir(parents=True, exist_ok=True)
        final_nb = out_dir / f"{name}.ipynb"
        shutil.move(str(nb_tmp), final_nb)
        final_claims = None
        if record.exists():
            final_claims = out_dir / f"{name}.claims.json"
            shutil.move(str(record), final_claims)
    return RunResult(key, final_nb, final_claims, seconds, passed, failed, params, disagree, outside)


def _strip_ansi(s: str) -> str:
    import re

    return re.sub(r"\x1b\[[0-9;]*m", "", s)
