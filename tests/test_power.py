"""Power, measured (issue 21, item 5): a plausible bug in the library — a wrong factor in a closed
form, a wrong rate — is put into the page's kernel, and the page's own checks must kill it, inside
their domain, on parameters away from the paper's reference point (a non-reference chain or seed).

The bug goes in through a ``sitecustomize`` module on the kernel's ``PYTHONPATH``: it wraps one
library function, method or property (``module:function`` or ``module:Class.attribute``) before the
page imports anything, so the page runs unchanged against a mutated library. Each case also runs the
page without the bug on the same parameters (it must pass), so a kill is the mutant's doing and not a
page that fails anyway. The kill table is ``book/power.yml``; the claims page renders it
(``{attnflow-power}``).

A real-data check (``real_data=True``: claims of the paper measured on data the book cannot choose)
never fails the page: its verdicts are reproduced ("pass"), contradicted or inconclusive, and only a
non-finite value fails. Its row says ``kill: contradicted``: a check of the claim that the run without
the bug reproduces (inside its domain) must be recorded contradicted with the bug (the same check,
matched by its ``what`` without the per-seed values), and neither run may record a failure, so a
mutant that crashes the page or makes it non-finite is no kill. Every other row is ``kill: fail`` (the
default): the mutated page must fail the claim inside its domain.

Exercise checks (``attnflow.exercises.check``) are not claims: in both runs they print their verdict
and do not stop the page, so a mutant is killed by the claim's checks or not at all (an exercise that
compares with a closed form would otherwise stop the page before its claims run).
"""

from __future__ import annotations

import json
import os
import re
import textwrap
from pathlib import Path

import pytest
import yaml

from attnflow import runner

pytestmark = pytest.mark.slow

POWER = Path(__file__).resolve().parents[1] / "book" / "power.yml"
KILLS = ("fail", "contradicted")  # what counts as a kill: the claim fails, or a reproduced check is contradicted
# claim id expected to be killed, page, smoke overrides off the reference point, the target and the bug
# (the target's value times a factor), what counts as a kill (book/power.yml, one row per mutant).
MUTANTS = [
    (m["claim"], m["page"], m["overrides"], m["target"], m["factor"], m.get("kill", "fail"))
    for m in yaml.safe_load(POWER.read_text())
]

SITE = """
import functools, importlib, inspect, os
_spec = os.environ.get("ATTNFLOW_MUTANT")
if _spec:
    _mod, _name, _factor = _spec.split(":")
    _owner = importlib.import_module(_mod)
    *_path, _attr = _name.split(".")
    for _p in _path:
        _owner = getattr(_owner, _p)
    _orig = inspect.getattr_static(_owner, _attr)

    def _scale(v, f=float(_factor)):
        if isinstance(v, dict):
            return {k: _scale(x) for k, x in v.items()}
        if isinstance(v, tuple):
            return tuple(_scale(x) for x in v)
        return v * f

    def _wrap(fn):
        @functools.wraps(fn)
        def _mutant(*a, **k):
            return _scale(fn(*a, **k))

        return _mutant

    if isinstance(_orig, property):
        _new = property(_wrap(_orig.fget), _orig.fset, _orig.fdel, _orig.__doc__)
    elif isinstance(_orig, (staticmethod, classmethod)):
        _new = type(_orig)(_wrap(_orig.__func__))
    else:
        _new = _wrap(_orig)
    setattr(_owner, _attr, _new)

if os.environ.get("ATTNFLOW_POWER"):  # exercise checks are not claims: they print, never stop the page
    import attnflow.exercises as _ex

    _check = _ex.check

    @functools.wraps(_check)
    def _lenient(*a, **k):
        try:
            return _check(*a, **k)
        except _ex.NotYet as e:
            print(f"(power test: exercise check not enforced) {e}")
            return _ex.Correct()

    _ex.check = _lenient
"""


def _records(out: Path, page: str) -> list[dict]:
    return json.loads((out / f"{page.rsplit('/', 1)[1]}.claims.json").read_text())["claims"]


def _verdicts(out: Path, page: str) -> dict[str, set[str]]:
    got: dict[str, set[str]] = {}
    for r in _records(out, page):
        got.setdefault(r["id"], set()).add(r["verdict"])
    return got


def _checks(out: Path, page: str, claim_id: str, verdict: str) -> set[str]:
    """The checks of ``claim_id`` recorded with ``verdict``, each named by its ``what`` without the
    per-seed values (as scripts/compare_ledger.py matches them)."""
    return {
        re.sub(r" \(per seed \[.*?\]\)", "", r["what"])
        for r in _records(out, page)
        if r["id"] == claim_id and r["verdict"] == verdict
    }


IDS = [f"{m[0]}-{m[1].rsplit('/', 1)[1]}-{m[3].rsplit(':', 1)[1]}" for m in MUTANTS]


@pytest.mark.parametrize("claim_id, page, overrides, target, factor, kill", MUTANTS, ids=IDS)
def test_the_page_kills_a_plausible_bug(claim_id, page, overrides, target, factor, kill, tmp_path, monkeypatch):
    assert kill in KILLS, f"kill {kill!r} of book/power.yml is not one of {KILLS}"
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(textwrap.dedent(SITE))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    monkeypatch.setenv("ATTNFLOW_POWER", "1")
    monkeypatch.delenv("ATTNFLOW_MUTANT", raising=False)

    clean = tmp_path / "clean"
    runner.run_page(page, profile="smoke", parameters=overrides, output=clean)
    assert "fail" not in set().union(*_verdicts(clean, page).values())
    assert "pass" in _verdicts(clean, page).get(claim_id, set()), f"{claim_id} is not checked inside its domain here"

    monkeypatch.setenv("ATTNFLOW_MUTANT", f"{target}:{factor}")
    mutated = tmp_path / "mutant"
    if kill == "contradicted":  # real-data checks: reproduced without the bug, contradicted with it
        try:
            runner.run_page(page, profile="smoke", parameters=overrides, output=mutated)
        except runner.PageFailed as err:
            pytest.fail(f"{target} × {factor} fails {page} (a crash or a non-finite value, not a contradiction): {err}")
        assert "fail" not in set().union(*_verdicts(mutated, page).values())
        reproduced = _checks(clean, page, claim_id, "pass")
        killed = reproduced & _checks(mutated, page, claim_id, "contradicted")
        assert killed, (
            f"{target} × {factor} was not killed by {claim_id} on {page}: none of its reproduced checks "
            f"({sorted(reproduced)}) is contradicted with the bug"
        )
        return
    with pytest.raises(runner.PageFailed) as err:
        runner.run_page(page, profile="smoke", parameters=overrides, output=mutated)
    killed = (
        _verdicts(mutated, page).get(claim_id, set())
        if (mutated / f"{page.rsplit('/', 1)[1]}.claims.json").exists()
        else set()
    )
    assert "fail" in killed, f"{target} × {factor} was not killed by {claim_id} on {page}: {err.value}"
