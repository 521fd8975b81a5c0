"""Which page, with which values: the book root, the pages of ``_toc.yml``, a page key or path,
the profiles of ``book/profiles.yml`` and the ``-p key=value`` assignments."""

from __future__ import annotations

import ast
import os
from pathlib import Path
from typing import Any, Sequence

import yaml

from attnflow import resources
from attnflow.runner.errors import RunError


def book_root() -> Path:
    """The book root (holds _toc.yml): ``$ATTNFLOW_BOOK_ROOT`` (e.g. a teacher's copy of the book),
    else :func:`attnflow.resources.book_root` (the checkout next to the package, a book above the
    current folder, the copy packaged in the wheel)."""
    env = os.environ.get("ATTNFLOW_BOOK_ROOT", "").strip()
    if env:
        if not (Path(env) / "_toc.yml").exists():
            raise RunError(f"ATTNFLOW_BOOK_ROOT={env} holds no _toc.yml")
        return Path(env).resolve()
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
            pages.append(f[len("book/") :])
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
        key = s[len("book/") :] if s.startswith("book/") else s
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
