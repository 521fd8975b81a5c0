"""The claims ledger: visible verdicts, JSON records, failure raised only at the end."""
import json

import numpy as np
import pytest

from attnflow import claims


@pytest.fixture(autouse=True)
def page(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNFLOW_CLAIMS_DIR", str(tmp_path))
    claims.begin_page("test/ledger", {"r": 1.0})
    return tmp_path


def test_pass_and_fail_are_recorded_and_printed(page, capsys):
    assert claims.check("A3", 1.0000001, 1.0, rtol=1e-6, what="slope")
    assert not claims.check("B12", 0.0952, 0.09551, rtol=1e-3, what="sigma0")
    out = capsys.readouterr().out
    assert "✔ A3 slope" in out and "✘ B12 sigma0" in out and "0.0952" in out and "0.09551" in out
    rec = json.loads((page / "test__ledger.json").read_text())
    assert [r["verdict"] for r in rec["claims"]] == ["pass", "fail"]
    assert rec["claims"][1]["statement"].startswith("Stage 1 target")
    assert rec["parameters"] == {"r": 1.0}
    with pytest.raises(claims.ClaimFailed, match="B12 sigma0"):
        claims.finish()


def test_arrays_predicates_and_nan():
    assert claims.check("A12", np.array([0.977, 0.843]), [0.9770, 0.8431], atol=0.002, what="p")
    assert claims.check("A12", ["FACO", "CACO"], predicate=lambda x: x[0] == "FACO", tolerance="FACO first", what="order")
    assert not claims.check("A3", float("nan"), 0.0, atol=1.0, what="nan never passes")


def test_misuse_is_an_error():
    with pytest.raises(KeyError, match="unknown claim id"):
        claims.check("Z9", 1, 1, atol=0)
    with pytest.raises(ValueError, match="no tolerance-free"):
        claims.check("A3", 1, 1)
    with pytest.raises(ValueError, match="not both"):
        claims.check("A3", 1, 1, atol=0, predicate=bool)
    with pytest.raises(ValueError, match="source"):
        claims.check("A3", 1, 1, atol=0, source="folklore")


def test_a_page_without_claims_fails():
    with pytest.raises(claims.ClaimFailed, match="checked no claim"):
        claims.finish()


def test_registry_covers_both_specs():
    ids = set(claims.registry())
    assert {f"A{i}" for i in range(1, 15)} <= ids and {f"B{i}" for i in range(1, 18)} <= ids


def test_documented_disagreement_with_the_paper_is_listed_not_failed(page, capsys):
    assert not claims.check("A9", 0.01, 0.43, atol=0.05, what="AC at r = 10", source="paper", errata="sharpening-q5")
    assert claims.check("A9", 0.43, 0.43, atol=0.05, what="AC at r = 10 (passes)", source="paper", errata="sharpening-q5")
    out = capsys.readouterr().out
    assert "≠ A9 AC at r = 10" in out and "not reproduced" in out and "sharpening-q5" in out
    rec = json.loads((page / "test__ledger.json").read_text())
    assert [r["verdict"] for r in rec["claims"]] == ["disagrees", "pass"]
    assert rec["claims"][0]["errata"] == "sharpening-q5"
    claims.finish()                                   # a documented disagreement does not fail the page
    assert "1 disagree with the paper" in capsys.readouterr().out


def test_only_paper_targets_can_disagree():
    with pytest.raises(ValueError, match="a failed check of the reconstruction is a bug"):
        claims.check("B12", 0.1, 0.2, atol=0.01, source="reconstruction", errata="fd-q5")
