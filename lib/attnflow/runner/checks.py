"""Pre-validation: the checks that run before any kernel starts.

Only names assigned in the page's parameters cell can be set; then the parameters cell, the
overrides and the validation cell run in a scratch namespace (the page's own
``params.validate``: types, ranges, rules, cost). The claims ledger is restored afterwards and
``ATTNFLOW_CLAIMS_DIR`` is unset meanwhile, so pre-validation writes nothing."""

from __future__ import annotations

import ast
import contextlib
import os
from pathlib import Path
from typing import Any, Mapping

from attnflow import claims
from attnflow.params import ParameterError, literal_names
from attnflow.runner.errors import RunError


def code_cells(nb) -> list:
    return [c for c in nb.cells if c.cell_type == "code"]


def parameter_names(nb) -> list[str]:
    """The names the page's parameters cell (first code cell, tagged ``parameters``) assigns."""
    cells = code_cells(nb)
    if len(cells) < 2 or "parameters" not in cells[0].metadata.get("tags", []):
        raise RunError("the page's first code cell must be tagged 'parameters' and the second must validate it")
    names = literal_names(cells[0].source)
    if names is None:  # not only literals (a page bug, but name the assigned names anyway)
        try:
            tree = ast.parse(cells[0].source)
        except SyntaxError as err:
            raise RunError(f"the page's parameters cell does not parse: {err}") from None
        names = [
            t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets if isinstance(t, ast.Name)
        ]
    return names


def check_parameter_names(nb, parameters: Mapping[str, Any], key: str) -> None:
    """Only names assigned in the parameters cell can be set (not ``_x``, ``claims``, ``SCHEMA``)."""
    known = parameter_names(nb)
    private = sorted(k for k in parameters if k.startswith("_"))
    unknown = sorted(k for k in parameters if k not in known and not k.startswith("_"))
    if private or unknown:
        why = []
        if unknown:
            why.append(
                f"unknown parameter(s) {', '.join(map(repr, unknown))} for page {key!r} "
                "(not set in its parameters cell)"
            )
        if private:
            why.append(
                f"unknown parameter(s) {', '.join(map(repr, private))}: names starting with '_' are not parameters"
            )
        raise RunError("; ".join(why) + "; the parameters are: " + ", ".join(known))


def prevalidate(nb, parameters: Mapping[str, Any], page_dir: Path, key: str | None = None) -> None:
    """Check the names (:func:`check_parameter_names`), then run the parameters cell, the
    overrides and the validation cell in a scratch namespace; RunError on bad input."""
    cells = code_cells(nb)
    check_parameter_names(nb, parameters, key or "this page")
    ns: dict[str, Any] = {"__name__": "__attnflow_prevalidate__"}
    saved = dict(claims._state)
    try:
        with env(ATTNFLOW_CLAIMS_DIR=None), cwd(page_dir):
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
def env(**kv: str | None):
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
def cwd(path: Path):
    old = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)
