"""The derived data files under ``data/``: where they are, hash checks, reading, and the cache.

Every stand-in file is listed in ``data/MANIFEST.json`` with its sha256 (written by
``scripts/make_data.py``). A file is hashed before its first use in a process; a missing or
changed file raises :class:`DataFileError` naming the file and the command that rebuilds it.
Tokenized data is cached under ``_build/cache/data/`` keyed on a hash of the data and of the
tokenization settings, so a changed data file can never be served from a stale cache.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Callable

import torch

REBUILD = "make data"  # the command that regenerates data/ (scripts/make_data.py; needs the package index)
RESTORE = "git checkout -- data/"  # the offline remedy in a checkout: the committed files


def _remedy(what: str = "it") -> str:
    """What to do about a missing or damaged data file, offline remedy first."""
    return (
        f"run `{REBUILD}` to regenerate {what}, or offline restore the committed files with `{RESTORE}` "
        "(outside a checkout: reinstall attnflow)"
    )


_CACHE_FORMAT = 1  # bump when the layout of cached objects changes
_verified: dict[tuple[str, int, int], str] = {}  # (path, size, mtime_ns) -> sha256 already checked


class DataFileError(RuntimeError):
    """A derived data file (or its manifest) is missing, corrupt or stale."""


def _repo_root() -> Path | None:
    """The folder holding data/MANIFEST.json: next to the package (editable install), else above cwd."""
    here = Path(__file__).resolve().parents[3]
    for cand in (here, *Path.cwd().resolve().parents, Path.cwd().resolve()):
        if (cand / "data" / "MANIFEST.json").exists() or (cand / "_toc.yml").exists():
            return cand
    return None


def data_dir(override: str | os.PathLike | None = None) -> Path:
    """``override``, else ``$ATTNFLOW_DATA_DIR``, else ``<repository>/data``."""
    if override is not None:
        return Path(override)
    if os.environ.get("ATTNFLOW_DATA_DIR"):
        return Path(os.environ["ATTNFLOW_DATA_DIR"])
    root = _repo_root()
    if root is None:
        raise DataFileError(
            "cannot find the attnflow data folder (data/MANIFEST.json) next to the package "
            "or above the current directory; set ATTNFLOW_DATA_DIR, or in the repository " + _remedy("data/")
        )
    return root / "data"


def cache_dir() -> Path:
    """``$ATTNFLOW_CACHE_DIR``, else ``<repository>/_build/cache/data`` (else ./_build/cache/data)."""
    if os.environ.get("ATTNFLOW_CACHE_DIR"):
        return Path(os.environ["ATTNFLOW_CACHE_DIR"])
    return (_repo_root() or Path.cwd()) / "_build" / "cache" / "data"


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def manifest(directory: Path) -> dict:
    path = directory / "MANIFEST.json"
    if not path.exists():
        raise DataFileError(f"{path} is missing, so the stand-in data cannot be checked; " + _remedy("data/"))
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise DataFileError(f"{path} is not valid JSON ({err}); " + _remedy("data/")) from err


def verified_path(filename: str, directory: str | os.PathLike | None = None) -> tuple[Path, str]:
    """Path and sha256 of a stand-in file, after checking it against the manifest."""
    d = data_dir(directory)
    entry = manifest(d).get("files", {}).get(filename)
    path = d / filename
    if entry is None:
        raise DataFileError(f"{path} is not listed in {d / 'MANIFEST.json'}; " + _remedy("data/"))
    if not path.exists():
        raise DataFileError(
            f"{path} is missing; " + _remedy() + " (scripts/make_data.py derives it from pinned registry packages)"
        )
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    digest = _verified.get(key) or sha256_file(path)
    if digest != entry["sha256"]:
        raise DataFileError(
            f"{path} does not match its sha256 in {d / 'MANIFEST.json'} (expected "
            f"{entry['sha256'][:12]}..., found {digest[:12]}...): the file is corrupt or "
            "stale; " + _remedy()
        )
    _verified[key] = digest
    return path, digest


def read_jsonl(path: Path) -> list[dict]:
    """Records of a (gzipped) JSON-lines file; a damaged file raises DataFileError."""
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]
    except (OSError, EOFError, json.JSONDecodeError, UnicodeDecodeError) as err:
        raise DataFileError(f"{path} cannot be read ({type(err).__name__}: {err}); " + _remedy()) from err


def cached(kind: str, key: dict[str, Any], build: Callable[[], Any]) -> Any:
    """``build()``'s result, stored once under the cache folder, keyed on ``key`` (which must hold
    the data hash). ``build`` returns tensors and plain containers only (read back with
    ``weights_only=True``). A cache file that cannot be read is rebuilt, never trusted."""
    blob = json.dumps({"format": _CACHE_FORMAT, **key}, sort_keys=True, default=str).encode()
    path = cache_dir() / f"{kind}-{hashlib.sha256(blob).hexdigest()[:20]}.pt"
    if path.exists():
        try:
            return torch.load(path, weights_only=True)
        except Exception:  # noqa: BLE001 - a damaged cache entry is rebuilt below
            pass
    value = build()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        torch.save(value, tmp)
        tmp.replace(path)
    except OSError:
        pass  # a read-only checkout still works, only slower
    return value
