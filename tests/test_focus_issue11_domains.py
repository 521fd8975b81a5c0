"""Issue 11 (helper P): B10 "leaves the
unigram plateau" with a domain from the escape forecast of the saddle's unstable attention mode
(real_text). The B3 and B9 tests of the PCA page are in tests/test_page_pca_trajectories.py."""

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from attnflow import claims
from attnflow.focus_dilution import closed_forms, realtext
from attnflow.focus_dilution.chain import hub_family
from attnflow.focus_dilution.model import PopulationLoss, rank_one_params


# ----------------------------------------------------------------------------- B10 (real_text)
def test_attention_mode_at_theta_c1_is_the_spec_rate_g():
    """At θ_c¹ (κ = 0) the attention block of the population loss has the unstable rate g of R2."""
    ch = hub_family(4, 0.5, 0.3, 0.4, 0.1)
    c1 = closed_forms.theta_c1(ch)
    theta = rank_one_params(c1.a, c1.b, 0.0, 6)
    theta["WQ"], theta["WK"] = 1e-3 * torch.eye(6), 1e-3 * torch.eye(6)[[1, 0, 2, 3, 4, 5]]
    mode = realtext.attention_mode(theta, PopulationLoss(ch))
    assert mode.rate == pytest.approx(closed_forms.g_rate(ch), rel=1e-6)
    assert 0 < mode.amplitude <= float(np.sqrt(2 * 6)) * 1e-3


def test_escape_forecast_is_the_linear_growth_of_the_mode():
    r, a0, drop = 0.05, 1e-3, 0.02
    t = realtext.escape_forecast(r, a0, drop, 10.0)
    assert 0.5 * r * (a0 * np.exp(r * (t - 10.0))) ** 2 == pytest.approx(drop, rel=1e-12)
    assert math.isinf(realtext.escape_forecast(0.0, a0, drop, 10.0))
    assert realtext.escape_forecast(r, 10.0, drop, 10.0) == 10.0  # already past the drop


def _real_text_b10(ledger, t_forecast, rate, escaped, t_end=200.0):
    from attnflow.focus_dilution.reports import real_text

    m = dict(
        rank_cond=1.1,
        lift_dev_cond=0.01,
        escaped=escaped,
        rank_end=2.5 if escaped else 1.6,
        move_corr=0.999,
        move_level=0.1,
        move_sign=1.0,
        t_half=10.0,
        t_half_markov=10.5,
        gap_plateau=0.01,
        t_escape_val=100.0,
        t_escape_markov=104.0,
        t_end=t_end,
        rate_cond=rate,
        amp_cond=1e-3,
        t_forecast=t_forecast,
    )
    rep = real_text.RealTextReport(
        lr=0.1,
        eps=1e-3,
        d=64,
        m=16,
        alpha=0.1,
        mid_first=15,
        mid_last=40,
        cfg=SimpleNamespace(n_top=5),
        marks={"a": m},
        first_lifts={"a": {" ": 1.5, "the": 1.3, "group": 0.9}},
    )
    rep.check_claims()
    return next(r for r in ledger() if "leaves the unigram plateau" in r["what"])


def test_b10_escape_domain_is_the_forecast_not_the_outcome(ledger, monkeypatch):
    from attnflow import display
    from attnflow.focus_dilution.reports import real_text

    monkeypatch.setattr(display, "number", lambda *a, **k: None)
    slack = real_text.DUE_FACTOR * np.log(10) / (2 * 0.05)
    assert real_text.escape_due(0.05, 100.0) == pytest.approx(100.0 + slack)
    # due within the run: a run still on the plateau fails (never "passes because it did not happen")
    assert _real_text_b10(ledger, 200.0 - slack - 1, 0.05, escaped=False)["verdict"] == "fail"
    claims._state["records"].clear()
    assert _real_text_b10(ledger, 200.0 - slack - 1, 0.05, escaped=True)["verdict"] == "pass"
    claims._state["records"].clear()
    # due after the end: outside, whatever happened (the domain is decided from the forecast alone)
    for escaped in (False, True):
        rec = _real_text_b10(ledger, 200.0 - slack + 1, 0.05, escaped=escaped)
        assert rec["verdict"] == "outside" and "escape is due within the run" in rec["reason"]
        claims._state["records"].clear()
    assert _real_text_b10(ledger, math.inf, 0.0, escaped=True)["verdict"] == "outside"
