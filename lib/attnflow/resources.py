"""Where the book's pages, profiles and stand-in data are: a checkout, or the installed package.

In a checkout (``pip install -e .``) the book root is the repository (``_toc.yml``, ``book/``,
``data/``). A wheel built by ``pip wheel .`` / ``python -m build`` carries the same files under
``attnflow/_book/`` (``setup.py``'s ``build_py`` copies ``_toc.yml``, ``book/`` and ``data/``
there), so ``attnflow pages`` and ``attnflow run PAGE`` work after a plain ``pip install`` in an
empty folder.

:func:`book_root` resolves, in order: the checkout next to the package, a Jupyter Book above
the current folder (a teacher's copy of the repository), the packaged copy.
:func:`activate` points the data layer at the packaged stand-in data and the tokenization cache
at the user's cache folder when the package is not used from a checkout (it sets
``ATTNFLOW_DATA_DIR`` / ``ATTNFLOW_CACHE_DIR`` if they are unset; kernels started afterwards —
papermill's — inherit them). Exported notebooks call it in their set-up cell.
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGED = Path(__file__).resolve().with_name("_book")
# What the wheel carries under attnflow/_book (relative to the repository root).
BOOK_FILES = ("_toc.yml", "book", "data")


def _is_book(d: Path) -> bool:
    return (d / "_toc.yml").is_file() and (d / "book").is_dir()


def checkout_root() -> Path | None:
    """The repository this package is imported from (editable install), if any."""
    here = Path(__file__).resolve().parents[2]
    return here if _is_book(here) else None


def packaged_root() -> Path | None:
    """The book copy inside the installed package (``attnflow/_book``), if any."""
    return PACKAGED if _is_book(PACKAGED) else None


def book_root(start: str | Path | None = None) -> Path:
    """The folder with ``_toc.yml``, ``book/`` and ``data/`` (see the module docstring)."""
    root = checkout_root()
    if root is not None:
        return root
    cwd = Path(start or Path.cwd()).resolve()
    for d in (cwd, *cwd.parents):
        if _is_book(d) and (d / "book" / "profiles.yml").is_file():
            return d
    root = packaged_root()
    if root is not None:
        return root
    raise FileNotFoundError(
        "cannot find the attnflow book: not a checkout, no _toc.yml above the current "
        "folder, and the installed package carries no attnflow/_book"
    )


def data_dir() -> Path:
    """The stand-in data folder of :func:`book_root`."""
    return book_root() / "data"


def user_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/attnflow`` (default ``~/.cache/attnflow``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "attnflow"


def activate() -> dict[str, str]:
    """Outside a checkout: set ``ATTNFLOW_DATA_DIR`` to the packaged data and
    ``ATTNFLOW_CACHE_DIR`` to :func:`user_cache_dir` (only where unset). Returns what it set."""
    set_: dict[str, str] = {}
    if checkout_root() is not None:
        return set_
    try:
        root = book_root()
    except FileNotFoundError:
        return set_
    if not os.environ.get("ATTNFLOW_DATA_DIR") and (root / "data" / "MANIFEST.json").is_file():
        set_["ATTNFLOW_DATA_DIR"] = str(root / "data")
    if not os.environ.get("ATTNFLOW_CACHE_DIR"):
        set_["ATTNFLOW_CACHE_DIR"] = str(user_cache_dir() / "data")
    os.environ.update(set_)
    return set_


def git_state(root: str | Path | None = None, *, short: bool = False, timeout: float = 20) -> tuple[str, bool] | None:
    """HEAD's commit (``short``: abbreviated) of the checkout at ``root`` (this package's repository when None) and
    whether its tracked files have uncommitted changes; None where git cannot say (no git, not a checkout)."""
    import subprocess  # only where a commit is asked for (figures' metadata, exports, the book)

    root = Path(root) if root is not None else Path(__file__).resolve().parents[2]
    run = dict(cwd=root, capture_output=True, text=True, timeout=timeout)
    try:
        sha = subprocess.run(["git", "rev-parse", *(["--short"] if short else []), "HEAD"], check=True, **run)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], **run)
    except (OSError, subprocess.SubprocessError):
        return None
    return sha.stdout.strip(), bool(dirty.stdout.strip())
