"""Page reports of the sharpening theory pages on small inputs: fields, domains, claims verdicts,
schema rules that refuse bad input before running, and the spec targets module."""
import json

import numpy as np
import pytest

from attnflow import claims
from attnflow.params import ParameterError
from attnflow.sharpening import contracts, targets

pytestmark = pytest.mark.usefixtures("one_cpu_thread")


@pytest.fixture
def ledger(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNFLOW_CLAIMS_DIR", str(tmp_path))

    def start(page):
        claims.begin_page(page)
        path = tmp_path / (page.replace("/", "__") + ".json")
        return lambda: {r["what"]: r for r in json.loads(path.read_text())["claims"]}
    return start


def cfg_of(schema, **values):
    return schema.validate(values)


LEMMA1 = dict(d=3, d_h=2, n_keys=4, n_samples=16, init_scale=1.0, lr_qk=1.0, t_max=3.0, n_times=7,
              imbalances=[0.0, 1.0], rtol=1e-10, seed=0)


# ---------------------------------------------------------------------------------------------- targets
def test_targets_hold_the_spec_tables():
    assert targets.REDUCED[(1.0, "FACO")].p_match == 0.9770
    assert targets.REDUCED[(10.0, "CACO")].odds_l2_end == 6.226
    assert targets.half_unit(3) == pytest.approx(5e-4)
    assert targets.is_reduced_config(9, 5, 0.1, 0.1) and not targets.is_reduced_config(10, 5, 0.1, 0.1)
    assert targets.is_full_config(n_classes=5, gd_lr=0.1) and not targets.is_full_config(gd_lr=0.3)
    assert targets.ORDER_R1 == ("FACO", "CACO", "FAFO", "CAFO")


# ---------------------------------------------------------------------------------------------- Lemma 1
def test_lemma1_schema_names_the_cause():
    with pytest.raises(ParameterError, match="d_h ≤ d"):
        cfg_of(contracts.LEMMA1_RESCALING, **{**LEMMA1, "d_h": 4})
    with pytest.raises(ParameterError, match="imbalances"):
        cfg_of(contracts.LEMMA1_RESCALING, **{**LEMMA1, "imbalances": [0.1] * 9})


def test_lemma1_report_passes_and_domains(ledger):
    from attnflow.sharpening.reports.lemma1_rescaling import lemma1_report

    rep = lemma1_report(cfg_of(contracts.LEMMA1_RESCALING, **LEMMA1))
    assert rep.n_nonzero_symbolic == 0 and rep.err_item2 < 1e-12 and rep.imbalance0 < 1e-12
    assert rep.dev_rescaled < 1e-7 and rep.dev_collapsed > 1e-3
    read = ledger("test/lemma1")
    rep.check_claims()
    verdicts = {k: r["verdict"] for k, r in read().items()}
    assert set(verdicts.values()) <= {"pass", "outside"} and "fail" not in verdicts.values()
    # a loose solver: the trajectory comparisons are outside their domain, not passes
    loose = lemma1_report(cfg_of(contracts.LEMMA1_RESCALING, **{**LEMMA1, "rtol": 1e-6, "t_max": 0.01}))
    read = ledger("test/lemma1b")
    loose.check_claims()
    recs = read()
    assert recs["factorized flow vs rescaled collapsed flow, relative max deviation"]["verdict"] == "outside"
    assert recs["plain collapsed flow vs factorized flow, relative max deviation"]["verdict"] == "outside"
    assert recs["autograd vs item 2, relative max error"]["verdict"] == "pass"


def test_lemma1_item3_domain_needs_balance():
    from attnflow.sharpening.reports.lemma1_rescaling import Lemma1Report

    rep = Lemma1Report(0, 0.0, 1e-3, 0.5, 1.0, 0.0, 0.1, 0.0, 0.0, 0.0, 1e-10, 1e-7, 1.0)
    assert not rep.balanced_domain() and "imbalance" in rep.balanced_domain().reason
    assert rep.separation_domain()


# ---------------------------------------------------------------------------------------------- Prop. 2
SCALAR = dict(n_classes=3, n_common=2, n_compete=2, lr_ratio=1.0, a0=0.1, b0=0.1, d_h=3, embedding="random",
              parametrizations=["CACO", "FAFO"], t_max=5.0, n_times=5, rtol=1e-9, seed=0)


def test_scalar_reduction_report_small(ledger):
    from attnflow.sharpening.reports import scalar_reduction as report

    rep = report.scalar_reduction_report(cfg_of(contracts.SCALAR_REDUCTION, **SCALAR))
    assert rep.n_nonzero_reduced == 0 and rep.n_nonzero_full == 0
    assert rep.c_ov == pytest.approx(0.5) and rep.kappa == pytest.approx((1 / 3 + 1 / 2) ** 0.5)
    assert set(rep.dev_rel) == {"CACO", "FAFO"} and rep.dev_max < 1e-6 and rep.residual_max < 1e-10
    assert rep.manifold_tol == pytest.approx(1e-10)          # entries below 10: the round-off bound itself
    read = ledger("test/scalar")
    rep.check_claims()
    assert {r["verdict"] for r in read().values()} == {"pass"}
    with pytest.raises(ParameterError, match="d_h ≥ K"):
        cfg_of(contracts.SCALAR_REDUCTION, **{**SCALAR, "d_h": 2})


# ---------------------------------------------------------------------------------------------- Theorem 3
LINE = dict(n_classes=5, n_compete=9, lr_ratios=[1.0, 10.0], a0=0.1, b0=0.1, horizon=1e5, rtol=1e-10,
            parametrizations=["CACO"], n_common=2, gd_lr_ratio=1.0, gd_steps=[0.2, 0.1], gd_time=2.0)


def test_line_theorem_report_small(ledger):
    from attnflow.sharpening.reports.line_theorem import DRIFT_FACTOR, line_theorem_report

    rep = line_theorem_report(cfg_of(contracts.LINE_THEOREM, **LINE))
    assert rep.n_nonzero == 0 and rep.n_runs == 2
    assert 0 < rep.rel_drift_max < DRIFT_FACTOR and rep.drift_max < 1e-6
    assert rep.h_max * rep.curvature_max < 2 and abs(rep.order_max - 1) < 0.05
    read = ledger("test/line")
    rep.check_claims()
    recs = read()
    assert {r["verdict"] for r in recs.values()} == {"pass"}
    # outside the spec configuration the absolute 1e-6 target is outside, the relative drift still checked
    rep.rtol_used = 1e-8
    read = ledger("test/line2")
    rep.check_claims()
    verdicts = [r["verdict"] for k, r in read().items() if "spec's configuration" in k]
    assert verdicts == ["outside"]
    # the spec's bound is read over its horizon t ≤ 1e5: a shorter run does not cover it (outside), a
    # longer one is read up to there (drift_until), so it is the same number as the 1e5 run's
    rep.rtol_used, rep.horizon_used = 1e-10, 1e3
    read = ledger("test/line3")
    rep.check_claims()
    recs = [r for k, r in read().items() if "spec's configuration" in k]
    assert [r["verdict"] for r in recs] == ["outside"] and "horizon ≥ 1e5" in recs[0]["reason"]
    from attnflow.sharpening.reports.line_theorem import drift_until

    run = rep.runs[("CACO", 10.0)]
    assert drift_until(run, 1e5) == run.drift() and drift_until(run, 1e2) <= run.drift()


def test_line_theorem_gd_above_the_stability_limit_is_outside(ledger):
    from attnflow.sharpening.reports.line_theorem import LineTheoremReport

    rep = LineTheoremReport(9, 5, 1e3, 1e-10, 0, 0.0, 1.0, 1, 3, 2.0, 1.0, 0.4, 0.2, 10.0, 1.0, 1.0,
                            lr_ratios=[1.0], parametrizations=["CACO"], curvature={"CACO": 10.0})
    assert not rep.stable_domain("CACO") and "h_max·λ_max" in rep.stable_domain("CACO").reason
    rep.curvature = {"CACO": 1.0}
    assert rep.stable_domain("CACO") and not rep.asymptotic_domain("CACO")


# ---------------------------------------------------------------------------------------------- Theorem 4
GROWTH = dict(n_classes=5, n_compete=9, lr_ratios=[1.0, 10.0], a0=0.1, b0=0.1, horizon=1e4, rtol=1e-10,
              parametrizations=["CACO", "FAFO"], fit_from=1e3)


def test_growth_schema_refuses_a_window_above_the_horizon():
    with pytest.raises(ParameterError, match="fit_from"):
        cfg_of(contracts.GROWTH_RATES, **{**GROWTH, "fit_from": 2e4})
    with pytest.raises(ParameterError, match="one decade"):
        cfg_of(contracts.GROWTH_RATES, **{**GROWTH, "fit_from": 5e3})


def test_growth_report_small(ledger):
    from attnflow.sharpening.reports.growth_rates import growth_rates_report

    rep = growth_rates_report(cfg_of(contracts.GROWTH_RATES, **GROWTH))
    assert rep.n_wrong_laws == 0 and rep.lr_ratio_ratio == 10.0
    assert 1.5 < rep.odds_exponent < 2.0 and rep.odds_ratio == pytest.approx(10.0, rel=0.1)
    assert rep.odds_l2_1e5 == {}                                # the horizon stops before 1e5
    read = ledger("test/growth")
    rep.check_claims()
    recs = read()
    assert "fail" not in {r["verdict"] for r in recs.values()}
    a13 = [r for r in recs.values() if r["id"] == "A13"]
    assert len(a13) == 2 and {r["verdict"] for r in a13} == {"outside"} and "horizon" in a13[0]["reason"]
    # a window that starts before saturation: the odds-slope law is outside its domain, not a failure
    assert not rep.saturated_domain(("CACO", 1.0)) or rep.start[("CACO", 1.0)][0] >= 0.9


# ---------------------------------------------------------------------------------------------- Corollary 5
MECH = dict(n_classes=3, n_compete=4, lr_ratios=[1.0, 10.0], a0=0.1, b0=0.1, horizon=1e3, rtol=1e-10,
            parametrizations=["FACO", "FAFO"], matched_prob=0.8, pop_n_common=1, n_common=4, seq_len=6,
            n_samples=40, gd_lr=0.3, init_std=0.1, loss_target=0.5, max_steps=2000, seeds=[0, 1, 2], device="cpu")


def test_mechanism_report_small(ledger):
    from attnflow.sharpening.reports.sharpening_mechanism import mechanism_report

    rep = mechanism_report(cfg_of(contracts.SHARPENING_MECHANISM, **MECH))
    assert rep.n_nonzero == 0 and rep.n_seeds == 3 and rep.samp_all_reached
    assert rep.p_match[("FACO", 10.0)] > rep.p_match[("FACO", 1.0)]
    assert rep.full_dev < 1e-6
    read = ledger("test/mech")
    rep.check_claims()
    recs = read()
    assert "fail" not in {r["verdict"] for r in recs.values()}
    outside = {k for k, r in recs.items() if r["verdict"] == "outside"}
    assert any("r=1: p at s = 0.9" in k for k in outside)        # not the spec system: §8.1 targets outside
    assert any("paired by seed" in k for k in recs) and not any("paired by seed" in k for k in outside)


def test_sampled_runs_name_the_cause():
    from attnflow.sharpening import mechanism
    from attnflow.sharpening.data import Task

    task = Task(n_classes=3, n_common=4, seq_len=6)
    slow = mechanism.sampled_at_loss("FACO", task, lr_ratio=1.0, n_samples=40, lr_ov=0.01, loss_target=0.1,
                                     max_steps=20, device="cpu")
    assert slow.status == "slow" and "max_steps" in slow.message and np.isnan(slow.p)
    big = mechanism.sampled_at_loss("FAFO", task, lr_ratio=10.0, n_samples=40, lr_ov=10.0, loss_target=0.5,
                                    max_steps=2000, device="cpu")
    assert big.status in ("overshot", "diverged") and "gd_lr" in big.message
