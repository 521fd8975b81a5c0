"""The ledger summary: one row per claim id, in the papers' order, with every verdict kind
(inconclusive and contradicted included) shown as itself, never as a failure."""

from __future__ import annotations

import pytest

from attnflow import ledger


def rec(cid, verdict, **extra):
    return {"id": cid, "verdict": verdict, "statement": f"statement {cid}", "tolerance": "", **extra}


PAGES = [
    {"page": "sharpening/b", "claims": [rec("A7", "pass", interval=[0.1, 0.2], n_seeds=3), rec("A2", "outside")]},
    {
        "page": "sharpening/a",
        "claims": [
            rec("A2", "pass"),
            rec("A2", "pass"),
            rec("A9", "inconclusive", interval=[-0.1, 0.2], n_seeds=3),
            rec("A9", "contradicted", interval=[-0.3, -0.1], n_seeds=3),
        ],
    },
    {"page": "focus_dilution/c", "claims": [rec("B1", "pass", k_seeds=3, n_seeds=3, interval=[0.37, 1.0])]},
]


def test_one_row_per_claim_in_the_papers_order():
    rows = ledger.summary(PAGES)
    assert [r.claim_id for r in rows] == ["A2", "A7", "A9", "B1"]
    a2 = rows[0]
    assert a2.counts == {"outside": 1, "pass": 2} and a2.n == 3 and a2.inside == pytest.approx(2 / 3)
    assert a2.pages == ("sharpening/b", "sharpening/a") and a2.mix == "2 ✔ · 1 ○"
    assert rows[1].statistics == ("mean over seeds (t)",) and rows[3].statistics == ("share of seeds (Wilson)",)
    assert rows[2].mix == "1 ◐ · 1 ⨯" and rows[2].inside == 1.0


def test_every_verdict_has_its_own_mark_and_word():
    assert ledger.mark("inconclusive") == "◐ inconclusive"
    assert ledger.mark("contradicted") == "⨯ contradicted"
    assert ledger.mark("disagrees").startswith("≠")
    assert len({ledger.mark(v) for v in ledger.VERDICTS}) == len(ledger.VERDICTS)
    with pytest.raises(ValueError, match="unknown verdict"):
        ledger.mark("maybe")


def test_totals_count_every_kind():
    t = ledger.totals(PAGES)
    assert t["pass"] == 4 and t["inconclusive"] == 1 and t["contradicted"] == 1 and t["fail"] == 0


def test_domain_rows_list_every_condition_once_with_what_it_reads():
    cond = [["n_seeds ≥ 3", "parameters", True], ["plateau by T_p", "state: end of condensation (t = 12)", False]]
    pages = [
        {"page": "focus_dilution/c", "claims": [rec("B1", "outside", domain_conditions=cond), rec("A2", "pass")]},
        {"page": "focus_dilution/c", "claims": [rec("B1", "pass", domain_conditions=[cond[0], [*cond[1][:2], True]])]},
    ]
    rows = ledger.domain_rows(pages)
    assert [(r.claim_id, r.condition, r.reads, r.held, r.n) for r in rows] == [
        ("B1", "n_seeds ≥ 3", "parameters", 2, 2),
        ("B1", "plateau by T_p", "state: end of condensation (t = 12)", 1, 2),
    ]  # a check without conditions (A2: every accepted parameter set) adds no row


@pytest.mark.usefixtures("ledger")  # the conftest fixture: a ledger of this test's own
def test_a_check_records_each_condition_of_its_domain():
    from attnflow import claims

    dom = claims.domain(("d ≥ 2", True), ("settled by t_pred", False, "", claims.state("plateau", t=1.0)))
    claims.check("B1", what="x", measured=1.0, expected=1.0, rtol=0.1, domain=dom, measured_from=2.0)
    (r,) = claims.records()
    reads = r["domain_reads"]
    assert [c[:2] for c in r["domain_conditions"]] == [["d ≥ 2", reads[0]], ["settled by t_pred", reads[1]]]
    assert [c[2] for c in r["domain_conditions"]] == [True, False]


def test_each_claim_id_belongs_to_its_paper():
    assert ledger.paper("A11").startswith("Sharpening") and ledger.paper("B1").startswith("Focus and dilution")
    assert ledger.paper("ATLAS1") == "The book's own checks"
