"""The two test tiers (issue 24, tests/conftest.py): the fast tier that `make test` selects holds no
slow or tier-2 test, executes every page of _toc.yml at least once as a notebook, and every row of
the tier-2 table still matches a test (a renamed test would otherwise fall back into the fast tier).

The collection checked is the one of the session running this test when that session collected
the whole suite (free), else a `pytest --collect-only` of tests/ in a subprocess."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from _pytest.mark.expression import Expression

import conftest

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"


def _collection(config, tmp_path_factory) -> tuple[list[dict], list[bool]]:
    items = config.stash.get(conftest.ALL_ITEMS, None)
    files = {p.name for p in TESTS.glob("test_*.py")}
    if items is not None and files <= {i["file"] for i in items}:
        return items, config.stash[conftest.ROWS_MATCHED]
    report = tmp_path_factory.mktemp("tiers") / "collection.json"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            "-o",
            "addopts=",
            str(TESTS),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "ATTNFLOW_TIER_REPORT": str(report)},
        timeout=600,
    )
    assert report.exists(), f"the collection of tests/ failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    data = json.loads(report.read_text())
    return data["items"], data["rows_matched"]


@pytest.fixture(scope="module")
def collection(request, tmp_path_factory):
    return _collection(request.config, tmp_path_factory)


def makefile_marker_expression(target: str) -> str:
    """The ``-m`` expression of the pytest command of a Makefile target."""
    text = (ROOT / "Makefile").read_text()
    m = re.search(rf"^{re.escape(target)}:.*?\n((?:\t.*\n)+)", text, re.M)
    assert m, f"the Makefile has no {target!r} target"
    for line in m.group(1).splitlines():
        if "pytest" in line:
            words = shlex.split(line.split("#", 1)[0].replace("$(", "_").replace(")", "_"))
            rest = words[words.index("pytest") + 1 :] if "pytest" in words else []
            if "-m" in rest:  # pytest's -m, not python's `-m pytest`
                return rest[rest.index("-m") + 1]
    raise AssertionError(f"the pytest command of `make {target}` selects no tier with -m")


def selected(items: list[dict], expression: str) -> list[dict]:
    expr = Expression.compile(expression)
    return [i for i in items if expr.evaluate(lambda name, _m=set(i["markers"]): name in _m)]


def toc_pages() -> list[str]:
    """Every page of _toc.yml that is a notebook (a .py next to it), read here independently of the runner."""
    files: list[str] = []

    def walk(node):
        if isinstance(node, dict):
            for k, v in node.items():
                files.append(v) if k in ("file", "root") and isinstance(v, str) else walk(v)
        elif isinstance(node, list):
            for x in node:
                walk(x)

    walk(yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8")))
    return [f[len("book/") :] for f in files if f.startswith("book/") and (ROOT / f"{f}.py").exists()]


def test_make_test_selects_the_fast_tier():
    assert makefile_marker_expression("test") == conftest.FAST_TIER
    assert makefile_marker_expression("test-tier2") == "tier2"


def test_the_fast_tier_holds_no_slow_or_tier2_test(collection):
    items, _ = collection
    fast = selected(items, makefile_marker_expression("test"))
    assert fast, "the fast tier selects nothing"
    bad = [i["nodeid"] for i in fast if {"slow", "tier2"} & set(i["markers"])]
    assert not bad, f"the fast tier (make test) would run slow / tier-2 tests: {bad}"


# Fixtures that build or render a book (a mini-book in headless Chromium): only the second tier uses them.
TIER2_FIXTURES = {"site"}


def test_the_fast_tier_builds_and_renders_no_book(collection):
    items, _ = collection
    fast = selected(items, makefile_marker_expression("test"))
    bad = [i["nodeid"] for i in fast if TIER2_FIXTURES & set(i.get("fixtures", ()))]
    assert not bad, f"fast-tier tests that build and render the mini-book (add them to TIER2): {bad}"


def test_the_two_tiers_together_run_every_test_once(collection):
    items, _ = collection
    fast = {i["nodeid"] for i in selected(items, makefile_marker_expression("test"))}
    second = {i["nodeid"] for i in selected(items, makefile_marker_expression("test-tier2"))}
    assert not fast & second, f"tests in both tiers: {sorted(fast & second)[:10]}"
    assert fast | second == {i["nodeid"] for i in items}, (
        f"tests in no tier: {sorted({i['nodeid'] for i in items} - fast - second)[:10]}"
    )


def test_every_page_of_the_toc_runs_as_a_notebook_in_the_fast_tier(collection):
    items, _ = collection
    fast = selected(items, makefile_marker_expression("test"))
    ran = {i["page"] for i in fast if "notebook" in i["markers"] and "xfail" not in i["markers"] and i["page"]}
    pages = toc_pages()
    assert len(pages) >= 20, f"_toc.yml lists only {pages}"
    missing = [p for p in pages if p not in ran]
    assert not missing, f"pages of _toc.yml not executed in the fast tier: {missing}"


def test_every_row_of_the_tier2_table_matches_a_test(collection):
    _, matched = collection
    stale = [f"{row.file}::{row.test}" for row, hit in zip(conftest.TIER2, matched) if not hit]
    assert not stale, f"rows of the tier-2 table in tests/conftest.py that match no test (renamed?): {stale}"
    assert all(row.why for row in conftest.TIER2), "every row of the tier-2 table says why"
