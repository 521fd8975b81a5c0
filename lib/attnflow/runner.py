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
"""
from __future__ import annotations

import ast
import contextlib
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import yaml

from attnflow.params import ParameterError, literal_names

__all__ = ["run_page", "RunError", "PageFailed", "Interrupted", "RunResult", "book_root", "list_pages",
           "resolve_page", "load_profile", "parameter_names", "HEARTBEAT_S"]

HEARTBEAT_S = 5.0   # seconds between two progress lines of the runner


IOPUB_TIMEOUT = 120          # seconds to wait for a finished cell's last outputs (nbclient's default: 4)


class RunError(ValueError):
    """Bad input: unknown page, profile or parameter, malformed -p value, unusable output folder
    (exit status 2; nothing is written)."""


class PageFailed(RuntimeError):
    """The page raised while executing (e.g. a failed claim), timed out, or its results could not
    be saved (exit status 1). ``result`` holds what was kept (notebook, claims record, counts)."""

    def __init__(self, message: str, result: "RunResult | None" = None):
        super().__init__(message)
        self.result = result


class Interrupted(KeyboardInterrupt):
    """SIGINT, SIGTERM or SIGHUP arrived; ``exit_code`` is 128 + the signal number."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum
        self.exit_code = 128 + signum
        self.name = signal.Signals(signum).name


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


def book_root() -> Path:
    """The book root (holds _toc.yml): ``$ATTNFLOW_BOOK_ROOT`` (e.g. a teacher's copy of the book),
    else :func:`attnflow.resources.book_root` (the checkout next to the package, a book above the
    current folder, the copy packaged in the wheel)."""
    env = os.environ.get("ATTNFLOW_BOOK_ROOT", "").strip()
    if env:
        if not (Path(env) / "_toc.yml").exists():
            raise RunError(f"ATTNFLOW_BOOK_ROOT={env} holds no _toc.yml")
        return Path(env).resolve()
    from attnflow import resources

    try:
        return resources.book_root()
    except FileNotFoundError as err:
        raise RunError(str(err)) from None


def list_pages(root: Path | None = None) -> list[str]:
    """Page keys (``sharpening/lemma1_rescaling``) of every notebook listed in _toc.yml."""
    root = root or book_root()
    try:
        toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as err:
        raise RunError(f"cannot read the table of contents {root / '_toc.yml'}: {err}") from None
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
    try:
        profiles = yaml.safe_load((root / "book" / "profiles.yml").read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as err:
        raise RunError(f"cannot read the profiles {root / 'book' / 'profiles.yml'}: {err}") from None
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
        out[k] = _literal(v.strip())
        if isinstance(out[k], str) and out[k].startswith("[") and out[k].endswith("]"):
            # a list of bare words, -p models=[CACO,FAFO]: each item a literal, else its text
            out[k] = [_literal(x.strip()) for x in out[k][1:-1].split(",") if x.strip()]
    return out


def _literal(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def _code_cells(nb) -> list:
    return [c for c in nb.cells if c.cell_type == "code"]


def parameter_names(nb) -> list[str]:
    """The names the page's parameters cell (first code cell, tagged ``parameters``) assigns."""
    cells = _code_cells(nb)
    if len(cells) < 2 or "parameters" not in cells[0].metadata.get("tags", []):
        raise RunError("the page's first code cell must be tagged 'parameters' and the second must validate it")
    names = literal_names(cells[0].source)
    if names is None:   # not only literals (a page bug, but name the assigned names anyway)
        try:
            tree = ast.parse(cells[0].source)
        except SyntaxError as err:
            raise RunError(f"the page's parameters cell does not parse: {err}") from None
        names = [t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets
                 if isinstance(t, ast.Name)]
    return names


def check_parameter_names(nb, parameters: Mapping[str, Any], key: str) -> None:
    """Only names assigned in the parameters cell can be set (not ``_x``, ``claims``, ``SCHEMA``)."""
    known = parameter_names(nb)
    private = sorted(k for k in parameters if k.startswith("_"))
    unknown = sorted(k for k in parameters if k not in known and not k.startswith("_"))
    if private or unknown:
        why = []
        if unknown:
            why.append(f"unknown parameter(s) {', '.join(map(repr, unknown))} for page {key!r} "
                       "(not set in its parameters cell)")
        if private:
            why.append(f"unknown parameter(s) {', '.join(map(repr, private))}: names starting with '_' are not parameters")
        raise RunError("; ".join(why) + "; the parameters are: " + ", ".join(known))


def prevalidate(nb, parameters: Mapping[str, Any], page_dir: Path, key: str | None = None) -> None:
    """Check the names (:func:`check_parameter_names`), then run the parameters cell, the
    overrides and the validation cell in a scratch namespace; RunError on bad input."""
    cells = _code_cells(nb)
    check_parameter_names(nb, parameters, key or "this page")
    ns: dict[str, Any] = {"__name__": "__attnflow_prevalidate__"}
    from attnflow import claims

    saved = dict(claims._state)
    try:
        with _env(ATTNFLOW_CLAIMS_DIR=None), _cwd(page_dir):
            exec(compile(cells[0].source, "<parameters cell>", "exec"), ns)
            ns.update(parameters)
            try:
                exec(compile(cells[1].source, "<validation cell>", "exec"), ns)
            except ParameterError as e:
                raise RunError(str(e)) from None
    finally:
        claims._state.clear()
        claims._state.update(saved)


@contextlib.contextmanager
def _env(**kv: str | None):
    """Set (or, with None, unset) environment variables for the block."""
    old = {k: os.environ.get(k) for k in kv}
    for k, v in kv.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
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


_SIGNALS = tuple(s for s in (getattr(signal, n, None) for n in ("SIGINT", "SIGTERM", "SIGHUP")) if s is not None)


@contextlib.contextmanager
def signals_raise():
    """In the main thread: SIGINT/SIGTERM/SIGHUP raise :class:`Interrupted`, so ``finally`` blocks
    (kernel shutdown, temp folder removal) run; a second signal during the clean-up is ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        for s in _SIGNALS:           # one clean-up, whatever arrives next
            signal.signal(s, signal.SIG_IGN)
        raise Interrupted(signum)

    old = {s: signal.getsignal(s) for s in _SIGNALS}
    for s in _SIGNALS:
        signal.signal(s, handler)
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h if h is not None else signal.SIG_DFL)


def _first_line(source: str) -> str:
    """The cell's first statement that is not an import or a comment (else its first line)."""
    lines = [ln.strip() for ln in source.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    if not lines:
        return "(comments only)"
    pick = next((ln for ln in lines if not ln.startswith(("import ", "from "))), lines[0])
    return pick if len(pick) <= 60 else pick[:57] + "..."


class _Watch:
    """What the kernel is doing, for the heartbeat and for error messages."""

    def __init__(self, nb, echo: Callable[[str], None] | None, status_path: Path | None):
        self.code_index = {id(c): i for i, c in enumerate(_code_cells(nb), 1)}
        self.n_code = len(self.code_index)
        self.echo, self.status_path = echo, status_path
        self.cell: Any = None
        self.ordinal = 0
        self.cell_started = self.started = time.monotonic()
        self.client = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start_cell(self, index: int | None, cell) -> None:
        self.cell, self.cell_started = cell, time.monotonic()
        if cell.cell_type == "code":
            self.ordinal += 1
            if self.status_path is not None:       # a new cell: the last cell's bar is history
                with contextlib.suppress(OSError):
                    self.status_path.unlink()

    def describe(self) -> str:
        if self.cell is None:
            return "starting the kernel"
        return f"code cell {self.ordinal} of {self.n_code} (`{_first_line(self.cell.source)}`)"

    def beat(self) -> str:
        now = time.monotonic()
        if self.cell is None:
            return f"attnflow run: starting the kernel, total {now - self.started:.0f} s"
        line = f"attnflow run: {self.describe()} running {now - self.cell_started:.0f} s, total {now - self.started:.0f} s"
        if self.status_path is not None:
            from attnflow.progress import read_status

            status = read_status(self.status_path)
            if status:
                line += f" | {status}"
        return line

    def __enter__(self):
        if self.echo is not None:
            self._thread = threading.Thread(target=self._run, name="attnflow-heartbeat", daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        last, last_at = None, 0.0
        while not self._stop.wait(HEARTBEAT_S):
            with contextlib.suppress(Exception):
                line = self.beat()
                what = (self.ordinal, line.split(" | ", 1)[1] if " | " in line else "")
                now = time.monotonic()
                if what != last or now - last_at >= 6 * HEARTBEAT_S:   # news, or every 30 s
                    self.echo(line)
                    last, last_at = what, now

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2.0)


def _engine():
    """A papermill engine (registered as 'attnflow') that tells a :class:`_Watch` which cell
    starts and keeps its notebook client, so the kernel can be stopped whatever happens."""
    from papermill.clientwrap import PapermillNotebookClient
    from papermill.engines import NBClientEngine, papermill_engines
    from papermill.utils import merge_kwargs, remove_args

    class AttnflowEngine(NBClientEngine):
        @classmethod
        def execute_managed_notebook(cls, nb_man, kernel_name, log_output=False, stdout_file=None,
                                     stderr_file=None, start_timeout=60, execution_timeout=None, **kwargs):
            watch: _Watch | None = kwargs.pop("attnflow_watch", None)
            if watch is not None:
                orig = nb_man.cell_start

                def cell_start(cell, cell_index=None, **kw):
                    watch.start_cell(cell_index, cell)
                    return orig(cell, cell_index, **kw)

                nb_man.cell_start = cell_start
            kwargs = remove_args(["input_path"], **kwargs)
            safe_kwargs = remove_args(["timeout", "startup_timeout"], **kwargs)
            final_kwargs = merge_kwargs(safe_kwargs, timeout=execution_timeout if execution_timeout else kwargs.get("timeout"),
                                        startup_timeout=start_timeout, kernel_name=kernel_name, log=_quiet_logger(),
                                        log_output=log_output, stdout_file=stdout_file, stderr_file=stderr_file,
                                        shutdown_kernel="immediate",   # a signal kills it mid-cell, quietly
                                        extra_arguments=["--IPKernelApp.log_level=ERROR"])  # no TCP warning
            _quiet_dead_tasks()
            client = PapermillNotebookClient(nb_man, **final_kwargs)
            if watch is not None:
                watch.client = client
            return client.execute()

    papermill_engines.register("attnflow", AttnflowEngine)
    return "attnflow"


def _as_papermill_loads(nb) -> None:
    """The metadata papermill's own loader adds (``papermill.iorw.load_notebook_node``)."""
    from papermill import __version__

    nb.metadata.setdefault("papermill", {"default_parameters": {}, "parameters": {}, "environment_variables": {},
                                         "version": __version__})
    for c in nb.cells:
        c.metadata.setdefault("tags", [])
        c.metadata.setdefault("papermill", {})


def _quiet_dead_tasks() -> None:
    """After a signal, the cell nbclient was waiting for ends with DeadKernelError inside a task
    nobody awaits any more; asyncio would print it as 'Task exception was never retrieved'."""
    import asyncio

    from jupyter_core.utils import ensure_event_loop
    from nbclient.exceptions import DeadKernelError

    loop = ensure_event_loop()

    def handler(loop, context):
        if not isinstance(context.get("exception"), (DeadKernelError, asyncio.CancelledError)):
            loop.default_exception_handler(context)

    loop.set_exception_handler(handler)


def _quiet_logger():
    import logging

    log = logging.getLogger("attnflow.runner.papermill")
    log.setLevel(logging.CRITICAL + 1)   # papermill/nbclient logs; the runner reports every error itself
    return log


def _stop_kernel(watch: _Watch) -> None:
    """Backstop after nbclient's own clean-up: a kernel still alive is shut down, then killed."""
    client = watch.client
    km = getattr(client, "km", None) if client is not None else None
    if km is None:
        return
    with contextlib.suppress(Exception):
        if km.has_kernel:
            proc = getattr(getattr(km, "provisioner", None), "process", None)
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait(5)
    with contextlib.suppress(Exception):
        km.cleanup_resources()


def _output_folder(output: str | Path | None, root: Path, key: str, params: Mapping[str, Any] | None = None) -> Path:
    """``--output``, else ``runs/<page>`` in the current folder; a run with overrides gets its own
    ``runs/<page>-<hash of the values>`` so that variants of a page do not overwrite each other."""
    if output:
        return Path(os.path.abspath(Path(output).expanduser()))
    name = key.replace("/", "__")
    if params:
        import hashlib

        blob = json.dumps(dict(params), sort_keys=True, default=repr).encode()
        name += "-" + hashlib.sha256(blob).hexdigest()[:8]
    return Path(os.path.abspath(Path.cwd() / "runs" / name))


def _prepare_output(out_dir: Path, names: Sequence[str]) -> tuple[Path, list[Path]]:
    """Create (if needed) and test-write the output folder; returns the run's temporary folder
    inside it and the folders created here (removed again if nothing is kept)."""
    if out_dir.exists() and not out_dir.is_dir():
        raise RunError(f"the output folder {out_dir} is a file, not a folder; pass --output DIR")
    created: list[Path] = []
    d = out_dir
    while not d.exists():
        created.append(d)
        d = d.parent
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".attnflow-run-", dir=out_dir))
        probe = tmp / "write-test"
        probe.write_bytes(b"attnflow")
        probe.unlink()
    except OSError as err:
        _remove_created(created)
        raise RunError(f"cannot write to the output folder {out_dir} ({err.strerror or err}); "
                       "pass --output DIR with a writable folder") from None
    for n in names:
        if (out_dir / n).is_dir():
            shutil.rmtree(tmp, ignore_errors=True)
            _remove_created(created)
            raise RunError(f"a folder is in the way of the output file {out_dir / n}; remove it or pass --output DIR")
    return tmp, created


def _remove_created(created: list[Path]) -> None:
    for d in created:            # deepest first; only empty folders
        with contextlib.suppress(OSError):
            d.rmdir()


def _count(record: Path) -> tuple[int, int, int, int, list[str]]:
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
        return _run_page(page, profile=profile, parameters=parameters, output=output, timeout=timeout,
                         root=root, quiet=quiet, force=force, echo=echo)


def _run_page(page, *, profile, parameters, output, timeout, root, quiet, force, echo) -> RunResult:
    import jupytext
    import nbclient.exceptions
    import papermill
    from papermill.parameterize import parameterize_notebook

    root = Path(root) if root else book_root()
    key, path = resolve_page(page, root)
    params = {**load_profile(profile, key, root), **dict(parameters or {})}
    if timeout is not None and timeout <= 0:
        raise RunError(f"--timeout must be a positive number of seconds, received {timeout}")
    try:
        nb = jupytext.read(path)
    except (OSError, ValueError) as err:
        raise RunError(f"cannot read the page {path}: {err}") from None
    with _env(ATTNFLOW_FORCE="1" if force else os.environ.get("ATTNFLOW_FORCE")):
        prevalidate(nb, params, path.parent, key)

    name = path.stem
    out_dir = _output_folder(output, root, key, params)
    final_nb, final_claims = out_dir / f"{name}.ipynb", out_dir / f"{name}.claims.json"
    tmp, created = _prepare_output(out_dir, [final_nb.name, final_claims.name])
    kept = False
    echo = echo or (lambda line: print(line, file=sys.stderr, flush=True))
    claims_tmp, nb_tmp, status = tmp / "claims", tmp / f"{name}.ipynb", tmp / "progress"
    record = claims_tmp / (key.replace("/", "__") + ".json")
    start = time.perf_counter()
    error: str | None = None
    try:
        _as_papermill_loads(nb)
        if params:
            nb = parameterize_notebook(nb, params, kernel_name="python3", language="python")
        watch = _Watch(nb, None if quiet else echo, None if quiet else status)
        env = dict(ATTNFLOW_CLAIMS_DIR=str(claims_tmp), JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
                   ATTNFLOW_PROGRESS_FILE=None if quiet else str(status),
                   ATTNFLOW_FORCE="1" if force else os.environ.get("ATTNFLOW_FORCE"))
        try:
            with _env(**env), watch:
                papermill.execute_notebook(
                    nb, str(nb_tmp), parameters=None, cwd=str(path.parent), kernel_name="python3",
                    progress_bar=False, log_output=False, execution_timeout=timeout,
                    engine_name=_engine(), attnflow_watch=watch,
                    # nbclient waits only 4 s for a cell's last outputs after its reply and then raises
                    # the same CellTimeoutError as the per-cell limit: on a loaded machine (a sweep, a
                    # parallel build) that failed pages that had finished. The per-cell limit stays `timeout`.
                    iopub_timeout=IOPUB_TIMEOUT,
                )
        except papermill.PapermillExecutionError as e:
            evalue = " ".join(str(e.evalue).split())
            error = f"code cell `{_first_line(e.source)}` raised {e.ename}: {evalue}"
        except nbclient.exceptions.CellTimeoutError as err:
            if "IOPub" in str(err):
                error = (f"{watch.describe()} finished but its outputs did not arrive within {IOPUB_TIMEOUT} s "
                         "(an overloaded machine)")
            else:
                error = f"{watch.describe()} ran past the time limit of {timeout} s per cell (--timeout)"
        except nbclient.exceptions.DeadKernelError:
            error = f"the kernel died during {watch.describe()} (out of memory, or killed)"
        except OSError as err:
            raise PageFailed(f"{key}: cannot write the executed notebook into {out_dir} ({err.strerror or err}); "
                             "nothing was kept") from None
        finally:
            _stop_kernel(watch)
        seconds = time.perf_counter() - start
        passed, failed, disagree, outside, failed_names = _count(record)
        got_claims, got_nb = record.exists(), nb_tmp.exists()
        moved: list[Path] = []
        try:                      # both renamed into place, one right after the other, or neither
            if got_claims:
                os.replace(record, final_claims)
                moved.append(final_claims)
            if got_nb:
                os.replace(nb_tmp, final_nb)
            for stale, fresh in ((final_claims, got_claims), (final_nb, got_nb)):
                if not fresh and (got_claims or got_nb) and stale.is_file():
                    stale.unlink()     # an earlier run's file must not pose as this run's
        except OSError as err:
            for m in moved:
                with contextlib.suppress(OSError):
                    m.unlink()
            raise PageFailed(f"{key}: cannot save the results into {out_dir} ({err.strerror or err}); "
                             "nothing was kept") from None
        kept = got_nb or got_claims
        res = RunResult(key, final_nb if got_nb else None, final_claims if got_claims else None,
                        seconds, passed, failed, params, disagree, outside, failed_names, error)
        if error is None and failed:
            error = "claims failed"
        if error is not None:
            res.error = error
            which = f"; failed claims: {'; '.join(failed_names)}" if failed_names and "ClaimFailed" not in error else ""
            kept_at = f"; executed notebook kept at {res.notebook}" if res.notebook else "; no notebook was written"
            if res.claims_file:
                kept_at += f" (claims record {res.claims_file})"
            raise PageFailed(f"{key}: {error}{which}; {res.counts()}{kept_at}", res)
        return res
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if not kept:
            _remove_created(created)
