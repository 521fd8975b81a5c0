"""Which source a loader uses (real data through Hugging Face ``datasets``, or the offline
stand-in) and the one line that says so.

``source="auto"``: the real dataset when it can be had without waiting (Hub reachable, or a copy in
the local HF cache when ``HF_HUB_OFFLINE``/``HF_DATASETS_OFFLINE`` is set), else the stand-in.
``source="hub"``: the real dataset or an error saying why not. ``source="standin"``: the stand-in.
Every wait on the Hub is bounded: the reachability probe (``PROBE_SECONDS``) and then the whole
load (``HUB_DEADLINE_SECONDS``, env ``ATTNFLOW_HUB_DEADLINE``): a Hub that answers the probe and
then stalls costs at most that long before the stand-in is used (``"auto"``, with a one-line
notice) or a :class:`DataSourceError` is raised (``"hub"``).
``data_files=`` (with ``"auto"`` or ``"hub"``) loads real-format records from local files through
``datasets`` (json, csv/tsv or parquet), mapped exactly like the Hub copy: this is how the hub path
is tested offline, and how a reader uses a copy of a dataset fetched elsewhere.
"""

from __future__ import annotations

import os
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attnflow.data.files import cache_dir

SOURCES = ("auto", "hub", "standin")
PROBE_SECONDS = 3.0
HUB_DEADLINE_SECONDS = 60.0  # the whole load from the Hub (all revisions tried), probe excluded
_probe_result: dict[str, str | None] = {}


class DataSourceError(RuntimeError):
    """The real dataset was asked for (source='hub') and cannot be loaded."""


@dataclass(frozen=True)
class Spec:
    """What a named dataset is and where its copies live."""

    name: str  # loader name: "squad", "hatexplain", "sva", "wikitext", "tinystories"
    real_name: str  # the dataset of the papers, e.g. "SQuAD v1.1"
    hub_id: str | None  # Hugging Face Hub id, None when no copy is published under a fixed id
    config: str | None  # Hub configuration (e.g. "wikitext-2-raw-v1")
    standin_file: str  # file under data/
    standin_about: str  # what the stand-in is, said in the announcement line
    alt_revision: str | None = None  # Hub revision to try when the default fails (e.g. the parquet
    # conversion of a script-based dataset, which datasets>=4 cannot run)


@dataclass
class Resolved:
    """Outcome of :func:`resolve`: either ``dataset`` (a ``datasets.DatasetDict``) or the stand-in."""

    standin: bool
    line: str  # the announcement (printed once by the loader)
    dataset: Any = None  # datasets.DatasetDict when not standin
    origin: str = ""  # "hub:<id>" or "files:<names>" or "standin:<file>"


def hf_offline() -> str | None:
    """The variable that puts Hugging Face offline (e.g. 'HF_HUB_OFFLINE=1'), or None."""
    for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        if os.environ.get(var, "").strip().upper() in {"1", "ON", "YES", "TRUE"}:
            return f"{var}={os.environ[var]}"
    return None


def _hub_unreachable() -> str | None:
    """Why the Hub cannot be reached (a HEAD request, at most PROBE_SECONDS), or None if it can."""
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
    if endpoint not in _probe_result:
        outcome: list[str | None] = ["no answer within %.0f s" % PROBE_SECONDS]

        def probe():
            try:
                urllib.request.urlopen(
                    urllib.request.Request(endpoint + "/api/status", method="HEAD"), timeout=PROBE_SECONDS
                )
                outcome[0] = None
            except urllib.error.HTTPError:
                outcome[0] = None  # the server answered: reachable
            except Exception as err:  # noqa: BLE001 - any failure means unreachable
                outcome[0] = f"{type(err).__name__}: {getattr(err, 'reason', err)}"

        t = threading.Thread(target=probe, daemon=True)  # DNS lookups ignore socket timeouts
        t.start()
        t.join(PROBE_SECONDS + 0.5)
        _probe_result[endpoint] = outcome[0]
    reason = _probe_result[endpoint]
    return None if reason is None else f"{endpoint} unreachable ({reason})"


def hub_deadline() -> float:
    """Seconds a load from the Hub may take in all (``$ATTNFLOW_HUB_DEADLINE``, else the default)."""
    try:
        value = float(os.environ.get("ATTNFLOW_HUB_DEADLINE", HUB_DEADLINE_SECONDS))
    except ValueError:
        return HUB_DEADLINE_SECONDS
    return value if value > 0 else HUB_DEADLINE_SECONDS


class _Deadline(Exception):
    pass


def _within(deadline: float, fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` in a daemon thread, waiting at most until ``deadline`` (a
    ``time.monotonic()`` value); raises _Deadline when it has not returned by then (the thread is
    left to finish or fail on its own: a stalled socket cannot be interrupted from here)."""
    box: dict[str, Any] = {}

    def target():
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as err:  # noqa: BLE001 - re-raised in the caller
            box["error"] = err

    t = threading.Thread(target=target, name="attnflow-hub-load", daemon=True)
    t.start()
    t.join(max(0.0, deadline - time.monotonic()))
    if t.is_alive():
        raise _Deadline()
    if "error" in box:
        raise box["error"]
    return box["value"]


def _in_local_cache(hub_id: str) -> bool:
    """Whether the HF hub or datasets cache seems to hold ``hub_id`` (checked on disk, no network)."""
    home = Path(os.environ.get("HF_HOME", Path.home() / ".cache" / "huggingface"))
    hub = Path(os.environ.get("HF_HUB_CACHE", os.environ.get("HUGGINGFACE_HUB_CACHE", home / "hub")))
    ds = Path(os.environ.get("HF_DATASETS_CACHE", home / "datasets"))
    if (hub / ("datasets--" + hub_id.replace("/", "--"))).is_dir():
        return True
    prefix = hub_id.replace("/", "___").lower()
    return ds.is_dir() and any(p.name.lower().startswith(prefix) for p in ds.iterdir())


def will_use_standin(spec: Spec, source: str = "auto") -> bool:
    """Whether :func:`resolve` is bound to use the stand-in, decided without the network: ``source``
    'standin', or 'auto' where the set has no Hub id or Hugging Face is offline with no cached copy.
    False where the real set may load (an online 'auto' is not probed here)."""
    if source == "standin":
        return True
    if source != "auto":
        return False
    return spec.hub_id is None or (hf_offline() is not None and not _in_local_cache(spec.hub_id))


def _builder_for(files: list[str]) -> tuple[str, dict]:
    suffixes = {"".join(Path(f).suffixes[-2:]) if f.endswith(".gz") else Path(f).suffix for f in files}
    if suffixes <= {".json", ".jsonl", ".json.gz", ".jsonl.gz"}:
        return "json", {}
    if suffixes <= {".csv", ".csv.gz"}:
        return "csv", {}
    if suffixes <= {".tsv", ".tsv.gz"}:
        return "csv", {"delimiter": "\t"}
    if suffixes <= {".parquet"}:
        return "parquet", {}
    if suffixes <= {".txt", ".txt.gz"}:
        return "text", {}
    raise ValueError(
        f"data_files must all be .json/.jsonl, .csv, .tsv, .parquet or .txt files "
        f"(optionally .gz); received suffixes {sorted(suffixes)}"
    )


def _flat_files(data_files) -> list[str]:
    if isinstance(data_files, (str, os.PathLike)):
        return [str(data_files)]
    if isinstance(data_files, dict):
        return [str(f) for v in data_files.values() for f in ([v] if isinstance(v, (str, os.PathLike)) else v)]
    return [str(f) for f in data_files]


def _standin(spec: Spec, reason: str) -> Resolved:
    line = (
        f"[attnflow.data] {spec.name}: offline stand-in data/{spec.standin_file} "
        f"({spec.standin_about}; real {spec.real_name} not used: {reason})"
    )
    return Resolved(True, line, origin=f"standin:{spec.standin_file}")


def resolve(
    spec: Spec,
    source: str = "auto",
    *,
    data_files=None,
    hub_id: str | None = None,
    config: str | None = None,
    builder: str | None = None,
    **load_kwargs,
) -> Resolved:
    """Pick the source (see the module docstring); loads the real data when it is chosen."""
    if source not in SOURCES:
        raise ValueError(f"source must be one of {SOURCES}, received {source!r}")
    if source == "standin":
        if data_files is not None:
            raise ValueError("data_files= loads real-format records; it cannot be combined with source='standin'")
        return _standin(spec, "source='standin' was asked for")

    if data_files is not None:
        files = _flat_files(data_files)
        missing = [f for f in files if not Path(f).exists()]
        if missing:
            raise FileNotFoundError(f"data_files for {spec.name}: {missing} do not exist")
        name, kwargs = (builder, {}) if builder else _builder_for(files)
        import datasets  # deferred: importing datasets costs ~1.5 s

        ds = datasets.load_dataset(
            name, data_files=data_files, cache_dir=str(cache_dir() / "hf-local"), **{**kwargs, **load_kwargs}
        )
        shown = ", ".join(Path(f).name for f in files)
        line = (
            f"[attnflow.data] {spec.name}: real-format {spec.real_name} records from local files "
            f"{shown} (through datasets, {name} builder)"
        )
        return Resolved(False, line, ds, origin=f"files:{shown}")

    hub_id = hub_id or spec.hub_id
    config = config or spec.config
    if hub_id is None:
        reason = "no Hub copy under a fixed id (pass hub_id= or data_files=)"
    elif hf_offline():
        reason = None if _in_local_cache(hub_id) else f"{hf_offline()} and no copy in the local HF cache"
    else:
        reason = _hub_unreachable()
    if reason is None:
        import datasets  # deferred, as above

        revisions = [load_kwargs.pop("revision", None)]
        if revisions[0] is None and spec.alt_revision and hub_id == spec.hub_id:
            revisions.append(spec.alt_revision)
        limit = hub_deadline()
        deadline = time.monotonic() + limit
        for revision in revisions:
            try:
                ds = _within(deadline, datasets.load_dataset, hub_id, config, revision=revision, **load_kwargs)
            except _Deadline:
                reason = f"loading {hub_id} did not finish within {limit:g} s (ATTNFLOW_HUB_DEADLINE)"
                break
            except Exception as err:  # noqa: BLE001 - reported, then the stand-in (auto) or an error (hub)
                first = (str(err).splitlines() or [""])[0][:160]
                reason = reason or f"loading {hub_id} failed: {type(err).__name__}: {first}"
                continue
            shown = hub_id + (f", {config}" if config else "") + (f", revision {revision}" if revision else "")
            where = "the local Hugging Face cache" if hf_offline() else "the Hugging Face Hub"
            line = f"[attnflow.data] {spec.name}: real {spec.real_name} from {where} ({shown})"
            return Resolved(False, line, ds, origin=f"hub:{shown}")
    if source == "hub":
        raise DataSourceError(
            f"{spec.name}: source='hub' was asked for but {reason}. Use source='auto' or "
            f"'standin' for the offline stand-in data/{spec.standin_file}."
        )
    return _standin(spec, reason)


def announce(line: str) -> None:
    """Print the one line naming the source, so that no page silently mixes sources."""
    print(line, flush=True)
