"""Installing attnflow to run a page or a downloaded notebook pulls no book tooling (issues 22, 25):
the transitive closure of the package's runtime requirements, resolved on the locked versions
installed here, holds no Sphinx, myst-nb, myst-parser or Jupyter Book; and the package never
imports its tooling package ``attnflow_book``."""

import ast
import re
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
TOOLING = {"sphinx", "myst-nb", "myst-parser", "jupyter-book", "sphinx-book-theme", "docutils"}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _closure(requirements: list[str]) -> dict[str, str]:
    """name -> who pulled it, over the installed distributions (extras are not followed)."""
    seen: dict[str, str] = {}
    todo = [(Requirement(r), "attnflow") for r in requirements]
    while todo:
        req, parent = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        name = _norm(req.name)
        if name in seen:
            continue
        seen[name] = parent
        try:
            requires = metadata.requires(req.name) or []
        except metadata.PackageNotFoundError:
            continue
        todo += [(Requirement(r), name) for r in requires]
    return seen


def test_the_runtime_requirements_pull_no_sphinx():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    pulled = _closure(deps)
    assert "torch" in pulled and "papermill" in pulled  # the walk sees the real tree
    assert not TOOLING & set(pulled), {t: pulled[t] for t in TOOLING & set(pulled)}


def test_attnflow_never_imports_its_tooling_package():
    found = []
    for path in sorted((ROOT / "lib" / "attnflow").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            found += [
                f"{path.relative_to(ROOT)}: {n}"
                for n in names
                if n.split(".")[0] in ("attnflow_book", "sphinx", "myst_nb")
            ]
    assert not found, found
