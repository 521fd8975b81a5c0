"""CONTRIBUTING's teaching examples use names the pages really define (issue 25, item 5)."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import jupytext
import nbformat
import pytest

from attnflow import claims

ROOT = Path(__file__).resolve().parents[1]
TEXT = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")


def _page_names(key: str) -> set[str]:
    """Names assigned at the top level of a page's code cells."""
    nb = jupytext.read(ROOT / "book" / f"{key}.py")
    names: set[str] = set()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        src = "\n".join(ln for ln in cell.source.splitlines() if not ln.lstrip().startswith(("%", "!")))
        for node in ast.parse(src).body:
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            for t in targets:
                for n in ast.walk(t) if t is not None else ():
                    if isinstance(n, ast.Name):
                        names.add(n.id)
    return names


def test_the_add_a_check_example_names_a_page_and_a_value_it_computes(monkeypatch):
    section = TEXT[TEXT.index("To **add a check of your own**") :]
    key = re.search(r"`((?:sharpening|focus_dilution)/\w+)`", section[: section.index("```")]).group(1)
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    calls = [n for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Call) and ast.unparse(n.func) == "claims.check"]
    assert calls, "the example checks something"
    used = {n.id for c in calls for a in c.args for n in ast.walk(a) if isinstance(n, ast.Name)}
    missing = used - _page_names(key)
    assert not missing, f"CONTRIBUTING's example uses {sorted(missing)}, which {key} does not define"
    # and it runs as written in a page's ledger
    monkeypatch.setattr(claims, "_state", {**claims._state})
    monkeypatch.setattr(claims, "_registered", dict(claims._registered))
    claims.begin_page(key, {})
    exec(compile(code, "CONTRIBUTING", "exec"), {"claims": claims, **dict.fromkeys(used, 0.0)})
    assert claims.records()[-1]["verdict"] == "pass"


@pytest.mark.parametrize("teacher_value, graded", [(1.0, True), (2.0, False)])
def test_the_grading_recipe_fails_on_a_check_added_after_finish(teacher_value, graded, tmp_path):
    """book/teaching.md's recipe (papermill … && echo "all exercises correct") on a notebook whose
    teacher's check comes after ``claims.finish()``: it says "all exercises correct" only when that
    check passes (issue 25, item 5: a failing check after finish printed ✘ and the run exited 0)."""
    recipe = next(
        ln
        for ln in (ROOT / "book" / "teaching.md").read_text(encoding="utf-8").splitlines()
        if ln.startswith("papermill ")
    )
    assert recipe.startswith("papermill submitted.ipynb graded.ipynb --cwd /tmp/empty &&"), recipe
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [
        nbformat.v4.new_code_cell(
            'from attnflow import claims\nclaims.begin_page("demo/graded", {})\n'
            'claims.check("A3", 1.0, 1.0, rtol=1e-6, what="the page\'s own check")\nclaims.finish()'
        ),
        nbformat.v4.new_code_cell(
            'claims.register("T1", statement="The teacher\'s value is 1.")\n'
            f'claims.check("T1", {teacher_value}, 1.0, rtol=1e-6, what="a teacher\'s check")'
        ),
    ]
    nbformat.write(nb, tmp_path / "submitted.ipynb")
    (tmp_path / "empty").mkdir()
    env = {**os.environ, "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"]}
    env.pop("ATTNFLOW_CLAIMS_DIR", None)
    cmd = recipe.replace("/tmp/empty", str(tmp_path / "empty"))
    out = subprocess.run(["bash", "-c", cmd], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert ("all exercises correct" in out.stdout) is graded, out.stdout + out.stderr[-2000:]
