"""Progress bars on long loops: shown when run interactively, quiet in tests and builds, and
reported to the runner (``attnflow run``) without touching the notebook.

Under ``attnflow run`` the kernel gets ``ATTNFLOW_PROGRESS_FILE``: every bar then writes its
latest status line (``training: 40%|####      | 400/1000 [00:12<00:18]``) to that file, at most
every couple of seconds, and the runner's heartbeat prints it next to the running cell. The
executed notebook holds no progress output.
"""

from __future__ import annotations

import os
import sys
import warnings

with warnings.catch_warnings():
    # In a kernel without ipywidgets tqdm.auto warns "IProgress not found" on import; that
    # stderr output fails the strict book build (mystnb.stderr) of every page that trains.
    warnings.simplefilter("ignore")
    from tqdm.auto import tqdm
    from tqdm.std import tqdm as tqdm_text

FILE_ENV = "ATTNFLOW_PROGRESS_FILE"


def quiet() -> bool:
    """Quiet unless asked for (ATTNFLOW_PROGRESS=1, e.g. in JupyterLab) or run in a terminal;
    always quiet under pytest, CI and book builds, so rendered pages carry no progress bars."""
    if os.environ.get("ATTNFLOW_QUIET") == "1" or os.environ.get("CI") or "PYTEST_CURRENT_TEST" in os.environ:
        return True
    return os.environ.get("ATTNFLOW_PROGRESS") != "1" and not sys.stderr.isatty()


def status_file() -> str | None:
    """The runner's status file for this kernel, or None."""
    return os.environ.get(FILE_ENV) or None


class _StatusWriter:
    """A file-like sink for tqdm that keeps only the latest status line in ``path``."""

    def __init__(self, path: str):
        self.path = path

    def write(self, text: str) -> None:
        line = text.replace("\r", "\n").strip().splitlines()
        if not line and "\r" not in text:
            return  # tqdm's bare newlines and flushes
        tmp = f"{self.path}.{os.getpid()}.tmp"
        try:  # a blanking '\r   \r' (a closed bar) clears the status
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write(line[-1].strip() if line else "")
            os.replace(tmp, self.path)
        except OSError:
            pass  # progress is best effort; the run goes on

    def flush(self) -> None:
        pass


def read_status(path: str | os.PathLike) -> str:
    """The latest status line written to a status file ('' when none)."""
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read().strip()[:160]
    except OSError:
        return ""


def progress(iterable=None, **kwargs):
    """tqdm that disables itself when quiet(), or reports to the runner's status file."""
    path = status_file()
    if path and "file" not in kwargs and "disable" not in kwargs:
        kwargs.setdefault("mininterval", 2.0)
        kwargs.setdefault("ascii", True)
        kwargs.setdefault("ncols", 80)
        kwargs.setdefault("leave", False)
        return tqdm_text(iterable, file=_StatusWriter(path), **kwargs)
    kwargs.setdefault("disable", quiet())
    kwargs.setdefault("leave", False)
    return tqdm(iterable, **kwargs)
