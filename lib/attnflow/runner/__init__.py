"""Run one book page with new parameters through papermill (DESIGN.md, principle 5).

    attnflow run sharpening/lemma1_rescaling --profile smoke -p lr_ratio=3 --output runs/

Everything that can be checked is checked before the kernel starts:

1. resolve the page (a key under ``book/`` or a ``.py`` path) and merge the profile's overrides
   (``book/profiles.yml``) with the ``-p key=value`` values;
2. every name must be assigned in the page's parameters cell (``-p _x=1``, ``-p SCHEMA=3`` are
   unknown parameters); the parameters cell, the overrides and the validation cell then run in a
   scratch namespace (the same ``params.validate`` as the page: types, ranges, rules, cost);
3. the output folder is resolved and test-written (a file in the way, a read-only folder).

Bad input raises :class:`RunError` (exit 2) and writes nothing. The page then runs in its folder
(papermill, with the parameters injected here, so papermill's own parameter parsing never
warns); the notebook and the claims record are written to a temporary folder *inside* the output
folder and renamed into place one right after the other at the end, also when the page raised or
a claim failed: :class:`PageFailed` (exit 1) says which cell or which claims and where the
executed notebook is. SIGTERM, SIGHUP and SIGINT raise :class:`Interrupted` (exit 128 + signal):
the kernel is shut down and the temporary folder, which also holds the kernel's connection file
(``JUPYTER_RUNTIME_DIR``), is removed. A heartbeat names the running cell, its time and the
latest progress-bar line of the page (``attnflow.progress``), unless ``quiet``.

The runner finds a page by its path and its schema through the page's own validation cell: it
imports no paper package. One module per concept; :func:`run_page` below composes them:

- :mod:`~attnflow.runner.errors`: :class:`RunError`, :class:`PageFailed`, :class:`Interrupted`;
- :mod:`~attnflow.runner.pages`: book root, pages of ``_toc.yml``, page keys, profiles, ``-p`` values;
- :mod:`~attnflow.runner.checks`: pre-validation (parameter names, the validation cell; writes nothing);
- :mod:`~attnflow.runner.signals`: SIGINT/SIGTERM/SIGHUP raise :class:`Interrupted`;
- :mod:`~attnflow.runner.watch`: the running cell, the heartbeat;
- :mod:`~attnflow.runner.kernel`: papermill execution, kernel shutdown, errors as one line
  (imported only when a page runs: papermill and nbclient take seconds to import);
- :mod:`~attnflow.runner.output`: output folders, the test-write, the rename-into-place;
- :mod:`~attnflow.runner.results`: :class:`RunResult`, the verdict counts of a claims record.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Callable, Mapping

from attnflow.runner.checks import check_parameter_names, env, parameter_names, prevalidate
from attnflow.runner.errors import Interrupted, PageFailed, RunError
from attnflow.runner.output import move_into_place, output_folder, prepare_output, remove_created
from attnflow.runner.pages import book_root, list_pages, load_profile, parse_assignments, resolve_page
from attnflow.runner.results import RunResult, count
from attnflow.runner.signals import signals_raise

__all__ = [
    "run_page",
    "RunError",
    "PageFailed",
    "Interrupted",
    "RunResult",
    "book_root",
    "list_pages",
    "resolve_page",
    "load_profile",
    "parameter_names",
    "check_parameter_names",
    "prevalidate",
    "parse_assignments",
    "signals_raise",
    "HEARTBEAT_S",
]

HEARTBEAT_S = 5.0  # seconds between two progress lines of the runner (read at each run)


def run_page(
    page: str,
    *,
    profile: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    output: str | Path | None = None,
    timeout: int = 1800,
    root: Path | None = None,
    quiet: bool = True,
    force: bool = False,
    echo: Callable[[str], None] | None = None,
) -> RunResult:
    """Execute one page; returns a RunResult or raises RunError / PageFailed / Interrupted.

    ``root``: the book root (default: the repository this package lives in). ``quiet=False``
    prints a heartbeat (the running cell, its time and the page's progress line) every
    HEARTBEAT_S seconds through ``echo`` (default: stderr). ``force`` lifts the schemas' cost
    limits (ATTNFLOW_FORCE=1)."""
    with signals_raise():
        return _run_page(
            page,
            profile=profile,
            parameters=parameters,
            output=output,
            timeout=timeout,
            root=root,
            quiet=quiet,
            force=force,
            echo=echo,
        )


def _run_page(page, *, profile, parameters, output, timeout, root, quiet, force, echo) -> RunResult:
    # jupytext, papermill and nbclient take seconds to import: only a run loads them, not
    # `attnflow pages`, `attnflow --help` or the sweeps' validation of their points.
    import jupytext

    from attnflow.runner import kernel
    from attnflow.runner.watch import Watch

    root = Path(root) if root else book_root()
    key, path = resolve_page(page, root)
    params = {**load_profile(profile, key, root), **dict(parameters or {})}
    if timeout is not None and timeout <= 0:
        raise RunError(f"--timeout must be a positive number of seconds, received {timeout}")
    try:
        nb = jupytext.read(path)
    except (OSError, ValueError) as err:
        raise RunError(f"cannot read the page {path}: {err}") from None
    forced = "1" if force else os.environ.get("ATTNFLOW_FORCE")
    with env(ATTNFLOW_FORCE=forced):
        prevalidate(nb, params, path.parent, key)

    name = path.stem
    out_dir = output_folder(output, root, key, params)
    final_nb, final_claims = out_dir / f"{name}.ipynb", out_dir / f"{name}.claims.json"
    tmp, created = prepare_output(out_dir, [final_nb.name, final_claims.name])
    kept = False
    echo = echo or (lambda line: print(line, file=sys.stderr, flush=True))
    claims_tmp, nb_tmp, status = tmp / "claims", tmp / f"{name}.ipynb", tmp / "progress"
    record = claims_tmp / (key.replace("/", "__") + ".json")
    start = time.perf_counter()
    try:
        nb = kernel.prepare(nb, params)
        watch = Watch(nb, None if quiet else echo, None if quiet else status, HEARTBEAT_S)
        run_env = dict(
            ATTNFLOW_CLAIMS_DIR=str(claims_tmp),
            JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
            ATTNFLOW_PROGRESS_FILE=None if quiet else str(status),
            ATTNFLOW_FORCE=forced,
        )
        with env(**run_env), watch:
            error = kernel.execute(nb, nb_tmp, path.parent, timeout, watch, key, out_dir)
        seconds = time.perf_counter() - start
        passed, failed, disagree, outside, failed_names = count(record)
        got_claims, got_nb = move_into_place(record, nb_tmp, final_claims, final_nb, key, out_dir)
        kept = got_nb or got_claims
        res = RunResult(
            key,
            final_nb if got_nb else None,
            final_claims if got_claims else None,
            seconds,
            passed,
            failed,
            params,
            disagree,
            outside,
            failed_names,
            error,
        )
        return raise_if_failed(res, error)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if not kept:
            remove_created(created)


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
