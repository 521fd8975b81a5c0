"""Many page runs at once on Dask: parameter sweeps and the parallel book execution (issue 13).

    attnflow sweep sharpening/line_theorem --random 8 --workers 2 --output sweeps/line
    attnflow sweep focus_dilution/focus --grid a_h=0.3,0.5,0.7 --grid seed=1,2 --profile smoke
    attnflow sweep focus_dilution/focus --random 20 --scheduler tcp://127.0.0.1:8786

Each point is one page run through :func:`attnflow.runner.run_page` (the same validation and
claims records as ``attnflow run``), executed on a Dask ``distributed`` cluster: a
``LocalCluster`` of ``--workers`` single-threaded worker processes by default, or an existing
cluster (``dask scheduler`` + ``dask worker tcp://...``) given by ``--scheduler``. Random points
are drawn from the page's sweep space (``book/sweeps.yml``: per page, which parameters vary and
how, always inside the schema's ranges) and every point — random or on a grid — is validated
against the page's schema before any work, so a grid that violates it exits 2 naming the point.

Results: one tidy table (``sweep.parquet``: one row per claim check per point; a point that
crashed or was refused has one row with ``status`` and ``error``) with the parameters (``p_*``
columns), verdict, measured value, wall time, worker, and a content key (page source + library
source + profile + parameters). Every finished point is written at once as a part file, so a
re-run skips points already done (resumable after an interrupt) and a crash never stops the sweep.

``execute_pages`` runs the book's pages at their defaults in parallel before the strict build and
puts the executed notebooks into the jupyter-cache that myst-nb reads (``execute_notebooks:
cache``). Its own key includes a hash of ``lib/`` — jupyter-cache keys only on code cells — so a
change to the library re-executes every page that depends on it and nothing stale is ever shown.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import random
import shutil
import signal
import socket
import sys
import time
from dataclasses import dataclass
from itertools import product
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import yaml

from attnflow import runner
from attnflow.runner import RunError

# Limits every entry point (``attnflow sweep``, the atlas) checks before any work (issue 26).
MAX_WORKERS = 4 * (os.cpu_count() or 1)  # local worker processes: beyond 4 per core only memory grows
MAX_POINTS = 1000  # random points per sweep (drawing alone is ~50 ms a point)
PROBE_S = 5.0  # seconds to reach a scheduler, and again to see a worker on it
RETRIED = ("crashed",)  # statuses a resumed sweep runs again (a killed worker, a lost task)


def check_workers(workers: Any, flag: str = "--workers") -> int:
    """``workers`` as an int in [1, MAX_WORKERS], else RunError naming the flag and the range."""
    if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= MAX_WORKERS:
        raise RunError(
            f"{flag} {workers}: allowed: an integer from 1 to {MAX_WORKERS} "
            f"(4 per core of this machine's {os.cpu_count() or 1})"
        )
    return workers


def check_points(n: Any, flag: str = "--random") -> int:
    """A number of random points in [1, MAX_POINTS], else RunError naming the flag and the range."""
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_POINTS:
        raise RunError(f"{flag} {n}: allowed: an integer from 1 to {MAX_POINTS} points")
    return n


def check_environment() -> None:
    """The environment variables a page run reads, checked once before a sweep (RunError)."""
    raw = os.environ.get("ATTNFLOW_MAX_SECONDS")
    if raw is None:
        return
    try:
        ok = math.isfinite(float(raw)) and float(raw) > 0
    except ValueError:
        ok = False
    if not ok:
        raise RunError(f"ATTNFLOW_MAX_SECONDS={raw!r}: allowed: a number of seconds > 0 (the cost limit of a page)")


def probe_scheduler(address: str, timeout: float = PROBE_S) -> None:
    """Check that ``address`` is a Dask scheduler that answers and has at least one worker, each step
    bounded by ``timeout`` seconds; RunError saying which step failed."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(address if "://" in address else f"tcp://{address}")
        host, port = parts.hostname, parts.port
    except ValueError:
        host = port = None
    if parts.scheme not in ("tcp", "tls") or not host or not port:
        raise RunError(f"--scheduler {address!r}: allowed: a Dask scheduler address tcp://HOST:PORT")
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as e:
        raise RunError(
            f"--scheduler {address}: nothing answers there ({e.strerror or type(e).__name__}); "
            "start one with `dask scheduler`, or leave --scheduler out for a local cluster"
        ) from None
    from dask.distributed import Client

    import threading

    got: dict[str, Any] = {}

    def connect() -> None:  # a listener that never answers the handshake can outlast Client's timeout
        try:
            got["client"] = Client(address, timeout=f"{timeout}s", set_as_default=False)
        except Exception as e:  # noqa: BLE001 - reported below
            got["error"] = e

    t = threading.Thread(target=connect, daemon=True)
    t.start()
    t.join(2 * timeout)
    if "client" not in got:
        why = type(got["error"]).__name__ if "error" in got else "no handshake"
        raise RunError(
            f"--scheduler {address}: a program listens there but it is not a Dask scheduler "
            f"(no answer within {2 * timeout:g} s: {why})"
        )
    client = got["client"]
    try:
        try:
            client.wait_for_workers(1, timeout=timeout)
        except (OSError, TimeoutError):
            raise RunError(
                f"--scheduler {address}: the scheduler has no workers (none joined within {timeout:g} s); "
                f"start some with `dask worker {address}`"
            ) from None
    finally:
        with contextlib.suppress(Exception):
            client.close(timeout=timeout)


# The tidy table's columns besides the p_<name> parameter columns (a stable schema, tested).
TABLE_COLUMNS = (
    "key",
    "page",
    "profile",
    "status",
    "error",
    "wall_s",
    "worker",
    "claim_index",
    "claim",
    "what",
    "verdict",
    "measured",
    "expected",
    "reason",
    "source",
    "parameters",
)
# the claim columns of a point that recorded no claim (it crashed, or its page checks none)
NO_CLAIM = dict(
    claim_index=-1, claim=None, what=None, verdict=None, measured=None, expected=None, reason=None, source=None
)


# ----------------------------------------------------------------------------- content keys
# Modules that only render or package the book: no page kernel imports them (tested), so an edit to
# them must not invalidate every cached page execution or sweep point.
BUILD_ONLY = frozenset({"export.py", "cli_export.py"})  # the Sphinx extensions are attnflow_book, outside the hash


def library_hash(root: Path | None = None) -> str:
    """sha256 over the library's source files (``lib/attnflow/**.py`` and ``*.yml``) that a page's
    kernel can import: every module except the build-only ones (:data:`BUILD_ONLY`)."""
    lib = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for f in sorted(
        p
        for p in lib.rglob("*")
        if p.suffix in (".py", ".yml")
        and "__pycache__" not in p.parts
        and not (p.parent == lib and p.name in BUILD_ONLY)
    ):
        h.update(str(f.relative_to(lib)).encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def point_key(page_source: bytes, lib_hash: str, profile: str | None, parameters: Mapping[str, Any]) -> str:
    """The content key of one point: page source + library source + profile + parameters."""
    h = hashlib.sha256()
    h.update(page_source)
    h.update(lib_hash.encode())
    h.update(str(profile or "book").encode())
    h.update(json.dumps(dict(parameters), sort_keys=True, default=str).encode())
    return h.hexdigest()[:16]


# ----------------------------------------------------------------------------- sweep spaces
@dataclass(frozen=True)
class Dim:
    """How one parameter varies in a random sweep.

    kind: "int" / "float" (uniform on [lo, hi]), "log" (log-uniform on [lo, hi]), "choice"
    (one of ``values``), "seed" (an integer seed in [0, 10⁶)), "seeds" (a list of ``n`` distinct
    seeds; ``n`` = the base list's length).
    """

    kind: str
    lo: float | None = None
    hi: float | None = None
    values: tuple = ()

    def draw(self, rng: random.Random, base: Any) -> Any:
        if self.kind == "seed":
            return rng.randrange(10**6)
        if self.kind == "seeds":
            n = len(base) if isinstance(base, (list, tuple)) else 3
            return sorted(rng.sample(range(10**6), n))
        if self.kind == "choice":
            return rng.choice(list(self.values))
        if self.kind == "int":
            return rng.randint(int(self.lo), int(self.hi))
        if self.kind == "float":
            return round(rng.uniform(self.lo, self.hi), 6)
        if self.kind == "log":
            return float(f"{math.exp(rng.uniform(math.log(self.lo), math.log(self.hi))):.4g}")
        raise ValueError(f"unknown sweep kind {self.kind!r}")


@dataclass(frozen=True)
class SweepSpace:
    """The parameters that vary in a random sweep of one page (the rest keep their profile/page value)."""

    page: str
    dims: Mapping[str, Dim]


def _parse_dim(page: str, name: str, spec: Any) -> Dim:
    if spec in ("seed", "seeds"):
        return Dim(spec)
    if isinstance(spec, list):
        return Dim("choice", values=tuple(spec))
    if isinstance(spec, dict) and set(spec) <= {"int", "float", "log"} and len(spec) == 1:
        ((kind, (lo, hi)),) = spec.items()
        return Dim(kind, float(lo), float(hi))
    raise RunError(
        f"book/sweeps.yml, page {page!r}, parameter {name!r}: {spec!r} is not one of "
        "seed, seeds, [choices], {int: [lo, hi]}, {float: [lo, hi]}, {log: [lo, hi]}"
    )


def load_space(page: str, root: Path | None = None) -> SweepSpace:
    """The sweep space of a page from ``book/sweeps.yml`` (RunError when the page has none)."""
    root = root or runner.book_root()
    spaces = yaml.safe_load((root / "book" / "sweeps.yml").read_text(encoding="utf-8")) or {}
    if page not in spaces:
        raise RunError(f"page {page!r} has no sweep space in book/sweeps.yml; pages with one: {', '.join(spaces)}")
    return SweepSpace(page, {n: _parse_dim(page, n, s) for n, s in (spaces[page] or {}).items()})


def _page_defaults(nb) -> dict[str, Any]:
    """The literal values of a page's parameters cell."""
    cells = [c for c in nb.cells if c.cell_type == "code"]
    ns: dict[str, Any] = {}
    exec(compile(cells[0].source, "<parameters cell>", "exec"), ns)
    return {k: v for k, v in ns.items() if not k.startswith("_")}


def _valid(nb, params: Mapping[str, Any], page_dir: Path) -> str | None:
    """None if the page's own validation accepts ``params``, else its message."""
    try:
        runner.prevalidate(nb, params, page_dir)
    except RunError as e:
        return str(e)
    except Exception as e:  # noqa: BLE001 - a value the page's own code cannot take (e.g. a 400-digit float)
        return f"{type(e).__name__}: {e}"[:300]
    return None


def draw_points(
    page: str, n: int, *, seed: int = 0, profile: str | None = "smoke", root: Path | None = None, max_tries: int = 200
) -> list[dict[str, Any]]:
    """``n`` random points of ``page``'s sweep space, each accepted by the page's schema.

    A point holds the profile's overrides plus the drawn values; draws the schema rejects (a rule
    between parameters, a cost limit) are drawn again, up to ``max_tries`` per point."""
    import jupytext

    root = root or runner.book_root()
    key, path = runner.resolve_page(page, root)
    space = load_space(key, root)
    nb = jupytext.read(path)
    base = {**_page_defaults(nb), **runner.load_profile(profile, key, root)}
    rng = random.Random(f"{key}:{seed}")
    points, last = [], ""
    for _ in range(n):
        for _try in range(max_tries):
            p = dict(runner.load_profile(profile, key, root))
            for name, dim in space.dims.items():
                p[name] = dim.draw(rng, base.get(name))
            why = _valid(nb, p, path.parent)
            if why is None:
                points.append(p)
                break
            last = why
        else:
            raise RunError(
                f"{key}: no valid point in {max_tries} draws of book/sweeps.yml's space; last refusal: {last}"
            )
    return points


def _literal(v: str) -> Any:
    import ast

    try:
        return ast.literal_eval(v)
    except (ValueError, SyntaxError):
        return v


def grid_points(
    page: str, grid: Sequence[str], *, profile: str | None = "smoke", root: Path | None = None
) -> list[dict]:
    """The product of ``key=v1,v2,…`` axes (values are Python literals; a list value is written
    ``key=[1,2];[3,4]`` with ``;`` between values). Every point is validated; RunError names the first bad one."""
    import jupytext

    root = root or runner.book_root()
    key, path = runner.resolve_page(page, root)
    axes: dict[str, list] = {}
    given: dict[str, str] = {}
    for item in grid:
        if "=" not in item:
            raise RunError(f"--grid {item!r} is not of the form key=v1,v2,...")
        name, values = item.split("=", 1)
        name = name.strip()
        if name in given:  # refused, never merged or dropped silently: the user says what they mean
            raise RunError(
                f"--grid {name} is given twice ({given[name]!r} and {item!r}); allowed: one --grid per "
                f"parameter, all its values in it (e.g. --grid {name}=v1,v2,v3)"
            )
        given[name] = item
        sep = ";" if values.strip().startswith(("[", "(")) else ","
        axes[name] = [_literal(v.strip()) for v in values.split(sep) if v.strip()]
        if not axes[name]:
            raise RunError(f"--grid {item!r} has no values")
        for v in axes[name]:
            if isinstance(v, int) and not isinstance(v, bool) and abs(v) > 10**18:
                raise RunError(
                    f"--grid {name}: the value {str(v)[:12]}… has {len(str(abs(v)))} digits; "
                    "allowed: numbers within ±1e18 (and inside the page's range)"
                )
    n_points = math.prod(len(v) for v in axes.values())
    if n_points > MAX_POINTS:
        raise RunError(f"--grid: {n_points} points; allowed: at most {MAX_POINTS} points per sweep")
    nb = jupytext.read(path)
    base = runner.load_profile(profile, key, root)
    points = []
    for combo in product(*axes.values()):
        p = {**base, **dict(zip(axes, combo))}
        why = _valid(nb, p, path.parent)
        if why is not None:
            raise RunError(f"grid point {dict(zip(axes, combo))} is refused by page {key!r}: {why}")
        points.append(p)
    return points


# ----------------------------------------------------------------------------- one point
# Environment variables a Dask worker process carries (``distributed.nanny.pre-spawn-environ``) that
# must not reach the page kernels it starts. MALLOC_TRIM_THRESHOLD_=65536 makes glibc hand freed memory
# back to the OS at every 64 KiB: right for a long-lived worker, ruinous for a page that allocates and
# frees torch tensors at every step — measured on the finite-samples page, 47.5 s → 105 s, with the
# system time 8.6 s → 66 s (benchmarks/bench_book_exec.py). The thread limits (OMP_NUM_THREADS=1, …)
# stay: one core per page is the book's CPU policy.
KERNEL_UNSET = ("MALLOC_TRIM_THRESHOLD_",)


@contextlib.contextmanager
def page_process():
    """The conditions a worker runs one page under: one torch/BLAS thread in the worker and an
    environment without :data:`KERNEL_UNSET` for the kernel it starts (restored afterwards)."""
    from attnflow.device import single_threaded
    from attnflow.runner.checks import env

    with single_threaded(), env(**{k: None for k in KERNEL_UNSET}):
        yield


def run_point(
    page: str, profile: str | None, parameters: Mapping[str, Any], key: str, out_dir: str, root: str | None = None
) -> list[dict[str, Any]]:
    """Run one point (in a Dask worker) and return its tidy rows; never raises."""
    worker = f"{socket.gethostname()}:{os.getpid()}"
    point_dir = Path(out_dir) / "points" / key
    base = dict(
        key=key,
        page=page,
        profile=profile or "book",
        worker=worker,
        parameters=json.dumps(dict(parameters), sort_keys=True, default=str),
    )
    start = time.perf_counter()
    try:
        with page_process():
            res = runner.run_page(
                page, profile=profile, parameters=parameters, output=point_dir, root=Path(root) if root else None
            )
        status, error, claims_file = ("ok" if res.failed == 0 else "failed"), "", res.claims_file
    except RunError as e:
        status, error, claims_file = "refused", str(e), None
    except runner.PageFailed as e:
        status, error = "error", str(e).splitlines()[0][:500] if str(e) else "page failed"
        found = sorted(point_dir.glob("*.claims.json")) if point_dir.exists() else []
        claims_file = found[0] if found else None
    except BaseException as e:  # noqa: BLE001 - a point must never stop the sweep
        status, error, claims_file = "crashed", f"{type(e).__name__}: {e}"[:500], None
    wall = time.perf_counter() - start
    recs = json.loads(Path(claims_file).read_text(encoding="utf-8"))["claims"] if claims_file else []
    if not recs:
        return [dict(base, status=status, error=error, wall_s=wall, **NO_CLAIM)]
    return [
        dict(
            base,
            status=status,
            error=error,
            wall_s=wall,
            claim_index=i,
            claim=r["id"],
            what=r["what"],
            verdict=r["verdict"],
            measured=json.dumps(r.get("measured"), default=str),
            expected=json.dumps(r.get("expected"), default=str),
            reason=r.get("reason"),
            source=r.get("source"),
        )
        for i, r in enumerate(recs)
    ]


# ----------------------------------------------------------------------------- the sweep
def atomic_write(path: Path, write) -> None:
    """``write(tmp)`` to a temporary name in ``path``'s folder, then rename it onto ``path``: a reader
    (or a resume) sees the old file or the new one, never a truncated one; on any error (a full
    disk, a signal) the temporary file is removed and the error raised."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()


def _write_part(out: Path, key: str, rows: list[dict], parameters: Mapping[str, Any]) -> None:
    import pandas as pd

    parts = out / "parts"
    parts.mkdir(parents=True, exist_ok=True)
    df = pd.DataFrame(rows, columns=list(TABLE_COLUMNS))
    for name, value in parameters.items():
        df[f"p_{name}"] = json.dumps(value) if isinstance(value, (list, tuple, dict)) else value
    atomic_write(parts / f"{key}.parquet", lambda tmp: df.to_parquet(tmp, index=False))


def load_table(out: str | Path):
    """The sweep's tidy table from its part files (one per finished point)."""
    import pandas as pd

    parts = sorted((Path(out) / "parts").glob("*.parquet"))
    if not parts:
        return pd.DataFrame(columns=list(TABLE_COLUMNS))
    frames = [pd.read_parquet(p) for p in parts]
    return pd.concat(
        [f.astype({c: "object" for c in f.columns if c.startswith("p_")}) for f in frames], ignore_index=True
    )


def _client(scheduler: str | None, workers: int):
    from dask.distributed import Client, LocalCluster

    if scheduler:
        try:
            return Client(scheduler, timeout=f"{2 * PROBE_S:g}s"), None
        except (OSError, TimeoutError, ValueError) as e:
            raise RunError(f"--scheduler {scheduler}: cannot connect ({type(e).__name__}: {e})"[:300]) from None
    cluster = LocalCluster(
        n_workers=workers,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        silence_logs=logging.ERROR,
        preload=[__name__],  # runs dask_setup below in every worker process, restarted ones included
    )
    return Client(cluster), cluster


def dask_setup(worker) -> None:
    """Dask preload hook of the local workers: a terminal's Ctrl-C reaches the whole foreground process
    group, but only the sweep may answer it (it shuts the cluster down and says what it kept); a worker
    that raised KeyboardInterrupt itself would print a traceback from inside Dask."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _close(client, cluster) -> None:
    """Shut the client and its LocalCluster down. On a loaded machine the shutdown can time out after
    every point is done and written; that must not lose the table, so it is reported, not raised."""
    for what, obj in (("client", client), ("cluster", cluster)):
        if obj is None:
            continue
        try:
            obj.close()
        except (TimeoutError, OSError) as e:  # asyncio/distributed timeouts are TimeoutError subclasses
            print(
                f"attnflow: the Dask {what} did not shut down cleanly ({type(e).__name__}); "
                "every finished point is already written",
                file=sys.stderr,
                flush=True,
            )


class SweepInterrupted(runner.Interrupted):
    """A signal stopped a sweep; the message says what was kept and what was removed."""

    def __init__(self, signum: int, message: str):
        super().__init__(signum)
        self.message = message

    def __str__(self) -> str:
        return self.message


def _part_status(out: Path, keys: Iterable[str]) -> dict[str, str]:
    """key -> status of the finished points among ``keys`` (from their part files)."""
    import pandas as pd

    status = {}
    for k in keys:
        f = out / "parts" / f"{k}.parquet"
        if f.exists():
            try:
                status[k] = str(pd.read_parquet(f, columns=["status"])["status"].iloc[0])
            except Exception:  # noqa: BLE001 - an unreadable part is run again
                f.unlink(missing_ok=True)
    return status


def _remove_partial(out: Path, keys: Iterable[str]) -> int:
    """Remove the point folders of ``keys`` (an unfinished notebook, a claims record half written) and
    temporary part files; returns how many folders were removed."""
    n = 0
    for k in keys:
        d = out / "points" / k
        if d.exists():
            shutil.rmtree(d, ignore_errors=True)
            n += 1
    for tmp in (out / "parts").glob(".*.tmp") if (out / "parts").exists() else ():
        tmp.unlink(missing_ok=True)
    return n


@contextlib.contextmanager
def _private_runtime():
    """A temporary folder of this sweep for its local workers' kernels (TMPDIR: socket folders;
    JUPYTER_RUNTIME_DIR: connection files holding the kernels' keys), removed with all it holds at the
    end, whatever ends the sweep. Short (under the system temp folder), so Unix sockets fit."""
    import tempfile

    from attnflow.runner.checks import env

    import dask

    folder = tempfile.mkdtemp(prefix="attnflow-sweep-")
    try:  # dask's own scratch space (worker folders, locks) goes there too
        with (
            env(TMPDIR=folder, JUPYTER_RUNTIME_DIR=os.path.join(folder, "runtime")),
            dask.config.set({"temporary-directory": folder}),
        ):
            yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def sweep(
    page: str,
    points: Sequence[Mapping[str, Any]],
    *,
    profile: str | None = "smoke",
    output: str | Path,
    workers: int = 2,
    scheduler: str | None = None,
    root: Path | None = None,
    quiet: bool = False,
):
    """Run ``points`` of ``page`` on Dask; returns the tidy table (pandas) of every point done so far.

    A point already in the output folder is skipped, unless it crashed (status in :data:`RETRIED`: a
    killed worker), then it runs again. SIGINT, SIGTERM or SIGHUP stop the sweep: the cluster is shut
    down, unfinished point folders and the kernels' temporary files are removed, and
    :class:`SweepInterrupted` says how many points were kept."""
    from dask.distributed import as_completed

    from attnflow.progress import tqdm

    root = Path(root) if root else runner.book_root()
    key, path = runner.resolve_page(page, root)
    out = Path(output).resolve()
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".attnflow-write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise RunError(f"cannot write the sweep output folder {out}: {e.strerror or e}") from None
    src, lib = path.read_bytes(), library_hash(root)
    keyed = [(point_key(src, lib, profile, p), dict(p)) for p in points]
    status = _part_status(out, dict(keyed))
    retried = {k for k, s in status.items() if s in RETRIED}
    todo = [(k, p) for k, p in keyed if k not in status or k in retried]
    _remove_partial(out, [k for k, _ in todo])  # left by an earlier sweep that was killed (SIGKILL)
    meta = json.dumps(
        dict(page=key, profile=profile or "book", points=len(keyed), library=lib, command=" ".join(sys.argv)), indent=1
    )
    atomic_write(out / "sweep.json", lambda tmp: tmp.write_text(meta, encoding="utf-8"))
    if not quiet:
        again = f", {len(retried)} that crashed before run again" if retried else ""
        print(
            f"sweep {key}: {len(keyed)} points, {len(keyed) - len(todo)} already done{again}, {len(todo)} to run",
            flush=True,
        )
    if todo:
        finished: set[str] = set()
        runtime = _private_runtime() if not scheduler else contextlib.nullcontext()
        try:
            with runtime, runner.signals_raise():
                client, cluster = _client(scheduler, workers)
                n_failed = 0
                try:
                    futures = {
                        client.submit(
                            run_point, key, profile, p, k, str(out), str(root), key=f"point-{k}", pure=False
                        ): (k, p)
                        for k, p in todo
                    }
                    bar = tqdm(total=len(todo), desc=key, unit="point", disable=quiet, file=sys.stdout)
                    for fut in as_completed(futures):
                        k, p = futures[fut]
                        try:
                            rows = fut.result()
                        except BaseException as e:  # noqa: BLE001 - a worker that died
                            if isinstance(e, KeyboardInterrupt):
                                raise
                            rows = run_point_error(key, profile, p, k, e)
                        _write_part(out, k, rows, p)
                        finished.add(k)
                        n_failed += rows[0]["status"] != "ok"
                        bar.update(1)
                        bar.set_postfix(failed=n_failed)
                    bar.close()
                finally:
                    _close(client, cluster)
        except runner.Interrupted as e:
            unfinished = [k for k, _ in todo if k not in finished]
            removed = _remove_partial(out, unfinished)
            for _ in range(3):  # a worker shutting down may still write its point's folder: remove it again
                time.sleep(1.0)
                removed = max(removed, _remove_partial(out, unfinished))
            kept = len(_part_status(out, dict(keyed)))
            raise SweepInterrupted(
                e.signum,
                f"interrupted by {e.name}: {kept} of {len(keyed)} points are kept in "
                f"{out / 'parts'}, {removed} unfinished point folders and the kernels' temporary "
                "files were removed; re-run the same command to resume",
            ) from None
    table = load_table(out)
    atomic_write(out / "sweep.parquet", lambda tmp: table.to_parquet(tmp, index=False))
    return table


def run_point_error(
    page: str, profile: str | None, parameters: Mapping[str, Any], key: str, e: BaseException
) -> list[dict]:
    """The row of a point whose worker died (the task raised on the cluster)."""
    return [
        dict(
            key=key,
            page=page,
            profile=profile or "book",
            status="crashed",
            error=f"{type(e).__name__}: {e}"[:500],
            wall_s=float("nan"),
            worker=None,
            **NO_CLAIM,
            parameters=json.dumps(dict(parameters), sort_keys=True, default=str),
        )
    ]


def summarize(table) -> str:
    """Per-point status counts and per-claim verdict counts, as text."""
    if table.empty:
        return "no points"
    pts = table.drop_duplicates("key")
    lines = [f"{len(pts)} points: " + ", ".join(f"{n} {s}" for s, n in pts["status"].value_counts().items())]
    v = table.dropna(subset=["verdict"])
    if not v.empty:
        counts = v.groupby(["claim", "verdict"]).size().unstack(fill_value=0)
        lines.append(counts.to_string())
    return "\n".join(lines)


# ----------------------------------------------------------------------------- the book, in parallel
def execute_pages(
    pages: Iterable[str] | None = None,
    *,
    workers: int = 2,
    root: Path | None = None,
    cache: Path | None = None,
    claims: Path | None = None,
    quiet: bool = False,
) -> dict[str, str]:
    """Execute the book's pages at their defaults on a LocalCluster and fill myst-nb's jupyter-cache.

    Key per page: sha256(page source + library source). A page whose key is unchanged and whose
    notebook is in the cache is not run again. A page that fails is left out of the cache (the strict
    build then executes it itself and reports the failure). Claims records go to ``claims``
    (default ``_build/claims``). Returns page -> "cached" / "ran" / "failed: …"."""
    import jupytext
    import nbformat
    from jupyter_cache import get_cache

    root = Path(root) if root else runner.book_root()
    cache = Path(cache) if cache else root / "_build" / ".jupyter_cache"
    claims = Path(claims) if claims else root / "_build" / "claims"
    claims.mkdir(parents=True, exist_ok=True)
    records = cache / "attnflow-claims"  # the claims record of each cached page (read by sphinx_cache)
    records.mkdir(parents=True, exist_ok=True)
    pages = list(pages) if pages is not None else runner.list_pages(root)
    lib = library_hash(root)
    store = get_cache(str(cache))
    manifest_path = cache / "attnflow-keys.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    work_dir = root / "_build" / ".attnflow-exec"
    status: dict[str, str] = {}
    todo = []
    for page in pages:
        _, path = runner.resolve_page(page, root)
        k = point_key(path.read_bytes(), lib, None, {})
        nb = jupytext.read(path)
        try:
            cached = store.match_cache_notebook(nb)
        except KeyError:
            cached = None
        saved = records / (page.replace("/", "__") + ".json")
        if manifest.get(page) == k and cached is not None and saved.exists():
            shutil.copy(saved, claims / saved.name)
            status[page] = "cached"
        else:
            todo.append((page, k))
    if not quiet:
        print(f"execute pages: {len(status)} unchanged (cached), {len(todo)} to run on {workers} workers", flush=True)
    if todo:
        client, cluster = _client(None, workers)
        try:
            futures = {
                client.submit(
                    _execute_one,
                    page,
                    str(work_dir / page.replace("/", "__")),
                    str(root),
                    key=f"page-{page}",
                    pure=False,
                ): (page, k)
                for page, k in todo
            }
            from dask.distributed import as_completed

            for fut in as_completed(futures):
                page, k = futures[fut]
                ok, msg, nb_file, claims_file, seconds = fut.result()
                if ok:
                    _, path = runner.resolve_page(page, root)
                    store.cache_notebook_bundle(
                        _bundle(jupytext.read(path), nbformat.read(nb_file, as_version=4), path, seconds),
                        check_validity=False,
                        overwrite=True,
                    )
                    shutil.copy(claims_file, records / (page.replace("/", "__") + ".json"))
                    shutil.copy(claims_file, claims / (page.replace("/", "__") + ".json"))
                    manifest[page] = k
                    status[page] = "ran"
                else:
                    manifest.pop(page, None)
                    status[page] = f"failed: {msg}"
                if not quiet:
                    print(f"{page}: {status[page]}", flush=True)
        finally:
            _close(client, cluster)
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True))
    return status


def _bundle(source_nb, executed, path: Path, seconds: float = float("nan")):
    """The page as myst-nb reads it (same cells and metadata, so the cache key matches) with the
    outputs of the executed run (papermill's own cell metadata and injected cell left out)."""
    from jupyter_cache.base import CacheBundleIn

    ran = [
        c for c in executed.cells if c.cell_type == "code" and "injected-parameters" not in c.metadata.get("tags", [])
    ]
    code = [c for c in source_nb.cells if c.cell_type == "code"]
    if len(ran) != len(code):
        raise RuntimeError(f"{path}: executed notebook has {len(ran)} code cells, the page {len(code)}")
    for c, r in zip(code, ran):
        c.outputs, c.execution_count = r.outputs, r.execution_count
    return CacheBundleIn(
        nb=source_nb, uri=str(path), data={"attnflow": "parallel.execute_pages", "execution_seconds": seconds}
    )


def _execute_one(page: str, out_dir: str, root: str) -> tuple[bool, str, str, str, float]:
    """Run one page at its defaults (in a worker); (ok, message, notebook path, claims path, seconds)."""
    shutil.rmtree(out_dir, ignore_errors=True)
    try:
        with page_process():
            res = runner.run_page(page, output=out_dir, root=Path(root))
    except (RunError, runner.PageFailed) as e:
        return False, str(e).splitlines()[0] if str(e) else type(e).__name__, "", "", float("nan")
    if res.failed:
        return False, f"{res.failed} claims failed", str(res.notebook), str(res.claims_file), res.seconds
    return True, "", str(res.notebook), str(res.claims_file), res.seconds


def current_keys(root: Path | None = None) -> dict[str, str]:
    """page -> content key (page source + library source) of every page in the table of contents."""
    root = Path(root) if root else runner.book_root()
    lib = library_hash(root)
    return {
        page: point_key(runner.resolve_page(page, root)[1].read_bytes(), lib, None, {})
        for page in runner.list_pages(root)
    }


def drop_from_cache(cache: Path, pages: Iterable[str], root: Path | None = None) -> None:
    """Remove pages from the jupyter-cache and the manifest (they will be executed again)."""
    import jupytext
    from jupyter_cache import get_cache

    root = Path(root) if root else runner.book_root()
    store = get_cache(str(cache))
    manifest_path = Path(cache) / "attnflow-keys.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    for page in pages:
        manifest.pop(page, None)
        try:
            path = runner.resolve_page(page, root)[1]
            rec = store.match_cache_notebook(jupytext.read(path))
            store.remove_cache(rec.pk)
        except (KeyError, RunError, FileNotFoundError):
            pass
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True))


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m attnflow.parallel [--workers W] [PAGE ...]``: execute pages into the book's cache."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m attnflow.parallel", description=main.__doc__)
    ap.add_argument("pages", nargs="*", help="page keys (default: every page of the table of contents)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    args = ap.parse_args(argv)
    start = time.perf_counter()
    status = execute_pages(args.pages or None, workers=max(1, args.workers))
    failed = {p: s for p, s in status.items() if s.startswith("failed")}
    print(
        f"execute pages: {len(status)} pages in {time.perf_counter() - start:.0f} s; "
        f"{sum(s == 'cached' for s in status.values())} cached, {sum(s == 'ran' for s in status.values())} ran, "
        f"{len(failed)} failed" + (" (the strict build executes them again and reports the failure)" if failed else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
