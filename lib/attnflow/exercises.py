"""Exercises on book pages, in nbgrader's conventions (issue: readers and teachers).

A page marks an exercise with a markdown cell that states the task (starting with
``**Exercise**``) and a code cell tagged ``exercise`` whose answer sits between nbgrader's
markers::

    # %% tags=["exercise"]
    ### BEGIN SOLUTION
    sigma0_mine = float(np.linalg.eigvalsh(B_sym).max())
    ### END SOLUTION

    # %% tags=["exercise-check"]
    exercises.check("sigma0_mine", sigma0_mine, expected=rep.sigma0, rtol=1e-8,
                    hint="the largest eigenvalue of the symmetric part of B")

The book runs the solution. The student notebook generated from the page replaces each
solution region by ``name = ...  # YOUR CODE HERE`` (one line per name assigned in the region),
so the check cell stops with :class:`NotYet` and its hint until the student fills it in;
``check`` raises :class:`NotYet` too for an answer that is present but wrong, naming by how much.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
STUB = "...  # YOUR CODE HERE"


class NotYet(AssertionError):
    """An exercise answer is missing or not yet right (raised by :func:`check`)."""


class Correct:
    """What :func:`check` returns for a right answer: true, and shown as nothing (the check has
    already printed its line, so a notebook cell ending in the check shows no stray ``True``)."""

    def __bool__(self) -> bool:
        return True

    def __repr__(self) -> str:
        return "Correct()"

    def _ipython_display_(self) -> None:
        pass


def check(
    name: str,
    value: Any,
    expected: Any = None,
    *,
    rtol: float | None = None,
    atol: float | None = None,
    predicate: Callable[[Any], bool] | None = None,
    hint: str = "",
) -> Correct:
    """Check an exercise answer; prints ``✔ exercise NAME`` or raises :class:`NotYet`."""
    more = f" Hint: {hint}" if hint else ""
    if value is Ellipsis or value is None:
        raise NotYet(f"not yet: `{name}` is still empty — replace the `...` in the exercise cell.{more}")
    if predicate is not None:
        if not predicate(value):
            raise NotYet(f"not yet: `{name}` = {value!r} does not meet the criterion.{more}")
    else:
        if rtol is None and atol is None:
            raise ValueError("exercises.check needs rtol/atol or a predicate")
        if hasattr(value, "detach"):  # a torch tensor: compare its values
            value = value.detach().cpu().numpy()
        if hasattr(expected, "detach"):
            expected = expected.detach().cpu().numpy()
        try:
            v = np.asarray(value, dtype=float)
            e = np.asarray(expected, dtype=float)
        except (TypeError, ValueError):
            raise NotYet(
                f"not yet: `{name}` should be a number or an array of numbers, got {type(value).__name__}.{more}"
            ) from None
        if v.shape != e.shape and v.size != e.size:
            raise NotYet(f"not yet: `{name}` has shape {v.shape}, expected {e.shape}.{more}")
        v = v.reshape(e.shape)
        err = np.abs(v - e)
        if not (np.all(np.isfinite(v)) and np.all(err <= (atol or 0.0) + (rtol or 0.0) * np.abs(e))):
            raise NotYet(
                f"not yet: `{name}` differs from the expected value by up to {float(np.nanmax(err)):.3g} "
                f"(allowed rtol {rtol or 0:g}, atol {atol or 0:g}).{more}"
            )
    print(f"✔ exercise {name}: correct")
    return Correct()


# --------------------------------------------------------------------------- student / solution notebooks
# (issue 12 item 5) The generator works on any nbformat notebook: a page read with jupytext, the
# book's executed notebook, or its portable export (attnflow.export).
EXERCISE_TAG = "exercise"
CHECK_TAG = "exercise-check"


def _tags(cell) -> list[str]:
    return list((cell.get("metadata") or {}).get("tags", []) or [])


def exercise_cells(nb) -> list[int]:
    """Indices of the cells tagged ``exercise`` (or holding a BEGIN SOLUTION marker)."""
    return [
        i
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code"
        and (EXERCISE_TAG in _tags(c) or any(ln.strip() == BEGIN for ln in c.source.splitlines()))
    ]


def has_exercises(nb) -> bool:
    return bool(exercise_cells(nb))


def solution_names(code: str) -> list[str]:
    """Names a solution region binds at its top level, in order (assignments, defs, imports)."""
    import ast
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(code))
    except SyntaxError:
        return []
    names: list[str] = []

    def add(t) -> None:
        if isinstance(t, ast.Name):
            names.append(t.id)
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                add(e)
        elif isinstance(t, ast.Starred):
            add(t.value)

    for node in tree.body:
        if isinstance(node, ast.Assign):
            for t in node.targets:
                add(t)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            add(node.target)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
    out: list[str] = []
    for n in names:
        if n not in out:
            out.append(n)
    return out


def _stub_lines(region: list[str], indent: str) -> list[str]:
    import ast
    import textwrap

    code = "\n".join(region)
    names = solution_names(code)
    if not names:
        return [f"{indent}# YOUR CODE HERE", f"{indent}raise NotImplementedError()"]
    defs = {}
    try:
        for node in ast.parse(textwrap.dedent(code)).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                defs[node.name] = ast.unparse(node.args)
    except SyntaxError:
        pass
    out = []
    for n in names:
        if n in defs:
            out += [f"{indent}def {n}({defs[n]}):", f"{indent}    {STUB}"]
        else:
            out.append(f"{indent}{n} = {STUB}")
    return out


def stub_source(source: str) -> str:
    """``source`` with each ``### BEGIN SOLUTION`` … ``### END SOLUTION`` region replaced by
    ``name = ...  # YOUR CODE HERE`` for each name the region assigns (nbgrader's
    ``# YOUR CODE HERE`` + ``raise NotImplementedError()`` when it assigns none)."""
    lines = source.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        if lines[i].strip() == BEGIN:
            indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
            j = i + 1
            while j < len(lines) and lines[j].strip() != END:
                j += 1
            if j == len(lines):
                raise ValueError(f"'{BEGIN}' without '{END}'")
            out += _stub_lines(lines[i + 1 : j], indent)
            i = j + 1
            continue
        if lines[i].strip() == END:
            raise ValueError(f"'{END}' without '{BEGIN}'")
        out.append(lines[i])
        i += 1
    return "\n".join(out)


def _nbgrader(cell, grade_id: str, *, solution: bool, points: int = 0) -> None:
    meta = {
        "grade": not solution,
        "solution": solution,
        "locked": not solution,
        "task": False,
        "grade_id": grade_id,
        "schema_version": 3,
    }
    if not solution:
        meta["points"] = points
    cell.metadata["nbgrader"] = meta


def solution_notebook(nb, name: str = "page"):
    """A copy of ``nb`` with nbgrader metadata: ``exercise`` cells are solution cells,
    ``exercise-check`` cells autograded tests (1 point each), so ``nbgrader generate_assignment``
    can make the release version itself."""
    import copy
    import re

    nb = copy.deepcopy(nb)
    slug = re.sub(r"[^\w-]+", "-", name).strip("-") or "page"
    k = 0
    for c in nb.cells:
        if c.cell_type != "code":
            continue
        if EXERCISE_TAG in _tags(c) or any(ln.strip() == BEGIN for ln in c.source.splitlines()):
            k += 1
            _nbgrader(c, f"{slug}-exercise-{k}", solution=True)
        elif CHECK_TAG in _tags(c):
            _nbgrader(c, f"{slug}-check-{k}", solution=False, points=1)
    nb.metadata.setdefault("attnflow", {})["variant"] = "solution"
    return nb


def student_notebook(nb, name: str = "page"):
    """The student version: solution regions stubbed (:func:`stub_source`), every output and
    execution count cleared (later outputs could give answers away), nbgrader metadata kept."""
    nb = solution_notebook(nb, name)
    for c in nb.cells:
        if c.cell_type == "code":
            c.source = stub_source(c.source)
            c.outputs = []
            c.execution_count = None
    nb.metadata["attnflow"]["variant"] = "student"
    return nb
