"""The contributor's path (issue 22, item 5): the page skeleton printed in CONTRIBUTING.md is a
complete page. Copied into an empty book it runs through the runner with its claim passing, other
valid parameters run too, a bad parameter is refused before the kernel starts, and a deliberate
bug in the theory fails the run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from attnflow import runner
from attnflow.runner.errors import RunError

ROOT = Path(__file__).resolve().parents[1]


def skeleton() -> str:
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    blocks = re.findall(r"````python skeleton\n(.*?)````", text, flags=re.S)
    assert len(blocks) == 1, "CONTRIBUTING.md must print exactly one ````python skeleton block"
    return blocks[0]


def book_with(tmp_path: Path, page_source: str) -> Path:
    """An empty book holding the skeleton as its only page: the four files a new page touches."""
    root = tmp_path / "book_root"
    (root / "book" / "demo").mkdir(parents=True)
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/demo/skeleton\n")
    (root / "_config.yml").write_text("title: t\n")
    (root / "book" / "profiles.yml").write_text("smoke: {demo/skeleton: {d: 3, d_h: 2}}\npaper: {demo/skeleton: {}}\n")
    (root / "book" / "demo" / "skeleton.py").write_text(page_source, encoding="utf-8")
    return root


def test_the_skeleton_page_runs_and_its_claim_passes(tmp_path):
    root = book_with(tmp_path, skeleton())
    out = tmp_path / "out"
    runner.run_page("demo/skeleton", parameters={"seed": 7, "d": 5}, output=out, root=root)
    rec = json.loads((out / "skeleton.claims.json").read_text())
    verdicts = [r["verdict"] for r in rec["claims"]] if isinstance(rec, dict) else [r["verdict"] for r in rec]
    assert verdicts == ["pass"]


def test_the_skeleton_refuses_bad_parameters_before_running(tmp_path):
    root = book_with(tmp_path, skeleton())
    with pytest.raises(RunError, match="d_h"):
        runner.run_page("demo/skeleton", parameters={"d": 2, "d_h": 3}, output=tmp_path / "o", root=root)
    assert not (tmp_path / "o").exists()


def test_a_bug_in_the_skeletons_theory_fails_the_run(tmp_path):
    src = skeleton()
    assert '["factor_form"]' in src
    buggy = src.replace('["factor_form"]', '["factor_form"] * 1.001')  # a wrong factor in the closed form
    root = book_with(tmp_path, buggy)
    with pytest.raises(runner.PageFailed, match="A2"):
        runner.run_page("demo/skeleton", output=tmp_path / "o", root=root)
