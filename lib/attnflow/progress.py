"""Progress bars on long loops: shown when run interactively, quiet in tests and builds."""
from __future__ import annotations

import os
import sys
import warnings

with warnings.catch_warnings():
    # In a kernel without ipywidgets tqdm.auto warns "IProgress not found" on import; that
    # stderr output fails the strict book build (mystnb.stderr) of every page that trains.
    warnings.simplefilter("ignore")
    from tqdm.auto import tqdm

__all__ = ["progress", "quiet"]


def quiet() -> bool:
    """Quiet unless asked for (ATTNFLOW_PROGRESS=1, e.g. in JupyterLab) or run in a terminal;
    always quiet under pytest, CI and book builds, so rendered pages carry no progress bars."""
    if os.environ.get("ATTNFLOW_QUIET") == "1" or os.environ.get("CI") or "PYTEST_CURRENT_TEST" in os.environ:
        return True
    return os.environ.get("ATTNFLOW_PROGRESS") != "1" and not sys.stderr.isatty()


def progress(iterable=None, **kwargs):
    """tqdm that disables itself when quiet()."""
    kwargs.setdefault("disable", quiet())
    kwargs.setdefault("leave", False)
    return tqdm(iterable, **kwargs)
