"""Domains of the dilution (B7) and focus (B6) claims that the 20-point atlas sweep found missing
(book/errata.md, "Findings of the atlas sweep"): each condition is read off the state before the
claim's measurement, puts the atlas's failing run outside, and a wrong value inside still fails."""
import dataclasses

import numpy as np
import pytest

from attnflow import claims
from attnflow.focus_dilution import closed_forms
from attnflow.focus_dilution import chain as chains
from attnflow.focus_dilution.reports import dilution, focus

from report_fakes import neutral_report


@pytest.fixture
def ledger(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNFLOW_CLAIMS_DIR", str(tmp_path))
    claims.begin_page("focus_dilution/test_atlas_domains", {})
    yield lambda: {r["what"]: r for r in claims.records()}
    claims._state.update(page=None, records=[], parameters={})


FINAL = "dilution: final rare-query attention to the hub minus π_hub"
FALL = "dilution: fall of the rare-query attention to the hub from its peak to the end"
RISE2 = "second cycle: hub-attention rise after the escape (focus 2)"
ENT2 = "second cycle: attention-entropy rise after its minimum"


def _hub_end(**over):
    """The atlas's hub chain n = 3 (a_h 0.523, b_h 0.424, c_cyc 0.469, init seed 402722), its measured
    end state and δ = 0.4 run: the rare amplitudes barely changed sign, and σ₂ grew during the first focus."""
    base = dict(chain_name="hub family", hub_family=True, symmetric_family=True, g=0.00233, sigma0=0.1426,
                end_flat=2e-11, sigma2_end=0.006, A_low_hub_max=0.4830, pi_hub=0.47018, A_low_hub_end=0.46986,
                A_low_hub_fall=0.01314, a_low_end=-0.0018, dip_pred=-3.2e-4, escaped=True, cycle_settled=True,
                cycle_settled_frac=5e-4, t_esc=2520.0, esc_from_plateau=False, pre_escape="focus", t_esc_start=2210.0,
                hub_at_esc=0.578, hub_peak=0.578, hub_min_after=0.171, ent_min=0.5188, ent_final=0.5190)
    return neutral_report(dilution.DilutionReport, **{**base, **over})


def test_final_dip_needs_the_rare_amplitudes_to_change_sign_by_enough(ledger):
    _hub_end().check_claims()
    rec = ledger()[FINAL]
    assert rec["verdict"] == "outside" and "first-order dip" in rec["reason"]
    # inside the domain (a predicted dip of 0.027, as on the spec's chain) a final value near π_hub fails
    claims.begin_page("focus_dilution/test_atlas_domains", {})
    _hub_end(dip_pred=-0.027).check_claims()
    assert ledger()[FINAL]["verdict"] == "fail"


def test_fall_from_the_peak_stays_checked_where_the_rare_amplitudes_keep_their_sign(ledger):
    # the atlas's chain n = 6 (a_h 0.483, b_h 0.353, c_cyc 0.565): fall 1.8e-4, a finding of the errata,
    # not a domain question — it stays inside (hub family, g > 0, end on θ_c²) and fails
    rep = _hub_end(g=0.016931, sigma0=0.134089, A_low_hub_fall=1.8e-4, a_low_end=0.156, dip_pred=0.0256)
    rep.check_claims()
    assert ledger()[FALL]["verdict"] == "fail"
    assert ledger()[FINAL]["verdict"] == "outside"                   # its rare amplitudes keep their sign


def test_second_cycle_needs_the_escape_from_a_plateau(ledger):
    _hub_end().check_claims()
    for what in (RISE2, ENT2):
        rec = ledger()[what]
        assert rec["verdict"] == "outside" and "plateau after the first focus" in rec["reason"]
        assert "focus" in rec["reason"].split("before the escape")[-1]
    claims.begin_page("focus_dilution/test_atlas_domains", {})
    _hub_end(esc_from_plateau=True, pre_escape="plateau").check_claims()      # inside, the flat swings fail
    assert ledger()[RISE2]["verdict"] == "fail" and ledger()[ENT2]["verdict"] == "fail"


def test_onset_signs_kept_follows_the_visited_amplitudes():
    markov = chains.dirichlet_chain(6, seed=566520)
    pi = markov.pi
    g = closed_forms.g_rate(markov, 1.0)
    dA = closed_forms.dkappa_A(markov, 1.0)
    a_star = closed_forms.theta_c1(markov).a
    assert focus.onset_signs_kept(a_star, np.sign(g) * 0.1, markov, g, dA)
    # the atlas run's onset amplitudes (drift 0.14): a_0 − πᵀa changed sign, key 0 flips for every query
    onset = np.array([0.86707624, 0.35318839, 1.0894271, 1.03252075, 0.16551134, 0.24732406])
    assert np.sign(pi[0] - (pi**2).sum()) != np.sign(onset[0] - pi @ onset)
    assert not focus.onset_signs_kept(onset, -0.115, markov, g, dA)


def test_slope_domain_from_the_bias_bound(ledger):
    rep = neutral_report(focus.FocusReport, g=0.0028, lambda_c=0.05, t_need=100.0, t_end=2500.0, n_fit=800,
                  dA_visited_err=3.2e-3, dA_flow_err=2e-3, bias_visited=3.5e-3, bias_closed=2e-3,
                  _violating=chains.hub_family(4, 0.1, 0.5, 0.4, 0.0))
    assert rep.slope_resolved(rep.bias_visited, focus.VISITED_TOL)
    rep.check_claims()
    slopes = [r for w, r in ledger().items() if w.startswith("flow: slope")]
    assert len(slopes) == 2 and {r["verdict"] for r in slopes} == {"pass"}
    # the atlas's Dirichlet run: a stored time off 𝓜₁ in the window, bound 2.4e4 — outside, not failed
    claims.begin_page("focus_dilution/test_atlas_domains", {})
    dataclasses.replace(rep, dA_visited_err=310.5, dA_flow_err=313.5, bias_visited=2.4e4, bias_closed=2.5e4).check_claims()
    slopes = [r for w, r in ledger().items() if w.startswith("flow: slope")]
    assert {r["verdict"] for r in slopes} == {"outside"} and all("bound" in r["reason"] for r in slopes)
    # inside the bound a wrong slope fails
    claims.begin_page("focus_dilution/test_atlas_domains", {})
    dataclasses.replace(rep, dA_visited_err=0.05).check_claims()
    assert [r["verdict"] for w, r in ledger().items() if "visited" in w] == ["fail"]
