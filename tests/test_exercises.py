"""Exercise versions of pages (issue 12 item 5): stubs, nbgrader metadata, the check's "not yet".

A tiny fake page with one exercise is executed in its solution and its student version (nbclient,
a few seconds); real pages with exercise cells are checked structurally (their student version
holds no solution and compiles, every exercise has a check).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat
import pytest

from attnflow import exercises

ROOT = Path(__file__).resolve().parents[1]

FAKE_PAGE = """# %% [markdown]
# # A fake page
#
# **Exercise.** Compute the largest eigenvalue of the symmetric part of `B`.

# %% tags=["parameters"]
scale = 2.0  # a parameter

# %%
import numpy as np
from attnflow import exercises
B = scale * np.array([[2.0, 1.0], [0.0, 1.0]])

# %% tags=["exercise"]
### BEGIN SOLUTION
S = (B + B.T) / 2
sigma_mine = float(np.linalg.eigvalsh(S).max())
### END SOLUTION

# %% tags=["exercise-check"]
exercises.check("sigma_mine", sigma_mine, expected=float(np.linalg.eigvalsh((B + B.T) / 2).max()), rtol=1e-10,
                hint="np.linalg.eigvalsh of (B + B.T) / 2")
"""


def fake_notebook():
    import jupytext

    return jupytext.reads(FAKE_PAGE, fmt="py:percent")


def execute(nb, tmp_path):
    from nbclient import NotebookClient

    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    return nb


def test_check_messages():
    assert exercises.check("x", 1.0, 1.0, rtol=1e-9)
    with pytest.raises(exercises.NotYet, match=r"^not yet: `x` is still empty.*Hint: h"):
        exercises.check("x", ..., 1.0, rtol=1e-9, hint="h")
    with pytest.raises(exercises.NotYet, match="differs from the expected value by up to 0.5"):
        exercises.check("x", 1.5, 1.0, rtol=1e-9)
    with pytest.raises(exercises.NotYet, match="does not meet the criterion"):
        exercises.check("x", 3, predicate=lambda v: v < 0)


def test_solution_names_and_stubs():
    src = "\n".join(
        [
            "x = 1",
            exercises.BEGIN,
            "a, (b, *c) = 1, (2, 3)",
            "d += 1",
            "e: int = 2",
            "def f(u, v=2):",
            "    return u",
            "import numpy as np",
            exercises.END,
            "print(a)",
            "if x:",
            "    " + exercises.BEGIN,
            "    g = 1",
            "    " + exercises.END,
        ]
    )
    assert exercises.solution_names("a, (b, *c) = 1, (2, 3)\nd += 1\ne: int = 2") == ["a", "b", "c", "d", "e"]
    out = exercises.stub_source(src)
    assert exercises.BEGIN not in out and "return u" not in out and "= 1, (2, 3)" not in out
    for n in "abcde":
        assert f"{n} = ...  # YOUR CODE HERE" in out
    assert "def f(u, v=2):\n    ...  # YOUR CODE HERE" in out
    assert "    g = ...  # YOUR CODE HERE" in out and out.startswith("x = 1\n") and "print(a)" in out
    ast.parse(out)
    assert (
        exercises.stub_source(f"{exercises.BEGIN}\nprint(1)\n{exercises.END}")
        == "# YOUR CODE HERE\nraise NotImplementedError()"
    )
    with pytest.raises(ValueError, match="without"):
        exercises.stub_source(f"{exercises.BEGIN}\nx = 1")


def test_notebook_variants_carry_nbgrader_metadata():
    nb = fake_notebook()
    assert exercises.exercise_cells(nb) == [3]
    sol = exercises.solution_notebook(nb, "fake/page")
    stu = exercises.student_notebook(nb, "fake/page")
    for v in (sol, stu):
        ex = v.cells[3].metadata["nbgrader"]
        chk = v.cells[4].metadata["nbgrader"]
        assert ex["solution"] and not ex["grade"] and ex["grade_id"] == "fake-page-exercise-1"
        assert chk["grade"] and chk["points"] == 1 and chk["locked"] and chk["grade_id"] == "fake-page-check-1"
    assert exercises.BEGIN in sol.cells[3].source
    assert stu.cells[3].source == "S = ...  # YOUR CODE HERE\nsigma_mine = ...  # YOUR CODE HERE"
    assert nb.cells[3].source.startswith(exercises.BEGIN)  # the input is not modified
    assert sol.metadata["attnflow"]["variant"] == "solution" and stu.metadata["attnflow"]["variant"] == "student"


def test_solution_passes_and_student_fails_with_not_yet(tmp_path):
    from nbclient.exceptions import CellExecutionError

    sol = execute(exercises.solution_notebook(fake_notebook(), "fake"), tmp_path)
    assert "✔ exercise sigma_mine: correct" in "".join(o.get("text", "") for o in sol.cells[4].outputs)
    with pytest.raises(CellExecutionError) as err:
        execute(exercises.student_notebook(fake_notebook(), "fake"), tmp_path)
    msg = str(err.value)
    assert "NotYet" in msg and "not yet: `sigma_mine` is still empty" in msg and "Hint: np.linalg.eigvalsh" in msg


def test_student_version_of_an_exported_notebook_clears_outputs():
    from attnflow import export

    nb = fake_notebook()
    nb.cells[2].outputs = [nbformat.v4.new_output("stream", name="stdout", text="answer 3.1\n")]
    stu = exercises.student_notebook(export.export_notebook(nb, install=False), "fake")
    assert all(not c.outputs and c.execution_count is None for c in stu.cells if c.cell_type == "code")


def _pages_with_exercises():
    import jupytext

    out = []
    for p in sorted((ROOT / "book").glob("*/*.py")):
        nb = jupytext.read(p)
        if exercises.has_exercises(nb):
            out.append((str(p.relative_to(ROOT / "book").with_suffix("")), nb))
    return out


PAGES = _pages_with_exercises()


@pytest.mark.skipif(not PAGES, reason="no book page has an exercise cell yet")
@pytest.mark.parametrize("page,nb", PAGES, ids=[p for p, _ in PAGES])
def test_real_page_student_version(page, nb):
    stu = exercises.student_notebook(nb, page)
    sol_regions = []
    for i in exercises.exercise_cells(nb):
        src = nb.cells[i].source
        assert exercises.BEGIN in src and exercises.END in src, f"{page}: exercise cell {i} has no solution markers"
        sol_regions.append(src.split(exercises.BEGIN, 1)[1].split(exercises.END, 1)[0])
        nxt = next((c for c in nb.cells[i + 1 :] if c.cell_type == "code"), None)
        assert nxt is not None and exercises.CHECK_TAG in nxt.metadata.get("tags", []), (
            f"{page}: exercise cell {i} is not followed by an exercise-check cell"
        )
        assert "exercises.check(" in nxt.source
        assert "# YOUR CODE HERE" in stu.cells[i].source and exercises.BEGIN not in stu.cells[i].source
        ast.parse(re.sub(r"^\s*%.*$", "", stu.cells[i].source, flags=re.M))
    student_text = "\n".join(c.source for c in stu.cells)
    for region in sol_regions:
        for line in region.strip().splitlines():
            if "=" in line and line.strip() and not line.strip().startswith("#"):
                assert line.strip() not in student_text, f"{page}: solution line left in the student version: {line}"


def _checked_argument_problems(nb) -> list[str]:
    """The convention the student version relies on: the check receives the exercise's name
    itself (``exercises.check("x", x, ...)``), so a stubbed ``x = ...`` reaches the check and
    gives "not yet"; ``float(x)``/``x.numpy()`` would raise a TypeError/AttributeError first."""
    bad = []
    for i in exercises.exercise_cells(nb):
        region = nb.cells[i].source.split(exercises.BEGIN, 1)[1].split(exercises.END, 1)[0]
        names = exercises.solution_names(region)
        chk = next((c for c in nb.cells[i + 1 :] if c.cell_type == "code"), None)
        for call in ast.walk(ast.parse(chk.source)):
            if isinstance(call, ast.Call) and getattr(call.func, "attr", getattr(call.func, "id", None)) == "check":
                arg = call.args[1] if len(call.args) > 1 else None
                if not (isinstance(arg, ast.Name) and arg.id in names):
                    bad.append(
                        f"cell {i + 1}: checks `{ast.unparse(arg) if arg is not None else None}`, "
                        f"not a bare name the exercise assigns ({', '.join(names)})"
                    )
    return bad


@pytest.mark.skipif(not PAGES, reason="no book page has an exercise cell yet")
@pytest.mark.parametrize("page,nb", PAGES, ids=[p for p, _ in PAGES])
def test_real_page_checks_the_bare_answer(page, nb):
    assert _checked_argument_problems(nb) == [], (
        f"{page}: the student version would stop with a TypeError/AttributeError instead of 'not yet' "
        "(pass the name itself; exercises.check converts tensors and arrays)"
    )


@pytest.mark.notebook
def test_real_student_notebook_stops_with_not_yet(tmp_path):
    """The student version of a real page, run with papermill at smoke size, stops at its check."""
    import jupytext
    import papermill

    from attnflow import runner

    page = "sharpening/scalar_reduction"
    nb = jupytext.read(ROOT / "book" / f"{page}.py")
    if not exercises.has_exercises(nb):
        pytest.skip(f"{page} has no exercise yet")
    stu = exercises.student_notebook(nb, page)
    with pytest.raises(papermill.PapermillExecutionError) as err:
        papermill.execute_notebook(
            stu,
            str(tmp_path / "student.ipynb"),
            parameters=runner.load_profile("smoke", page),
            cwd=str(tmp_path),
            kernel_name="python3",
            progress_bar=False,
            log_output=False,
        )
    assert err.value.ename == "NotYet" and str(err.value.evalue).startswith("not yet:")


def test_a_right_answer_shows_no_stray_output():
    """A cell ending in ``exercises.check(...)`` shows only the ✔ line, not ``True`` (issue 25, item 9)."""
    from IPython.core.formatters import DisplayFormatter

    ok = exercises.check("x", 1.0, 1.0, rtol=1e-9)
    assert ok
    assert DisplayFormatter().format(ok) == ({}, {})  # nothing is displayed
    assert DisplayFormatter().format(True) != ({}, {})  # (what a plain True would show)
