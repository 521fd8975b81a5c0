"""Primitives of the page sharpening/growth_rates (Theorem 4, claims A4, A5, A13) on small inputs: the
symbolic law residuals, the fits of a short reduced run and the state at its window start, the
tolerances and domains of the claims (what they read), the NaN stand-in of a run not made, the A13
quantity, the figure, and the schema's refusal of a window above the horizon."""

import math

import numpy as np
import pytest
import sympy as sp

from attnflow import claims
from attnflow.params import ParameterError
from attnflow.sharpening import contracts, figures, growth, reduced, symbolic

pytestmark = pytest.mark.usefixtures("one_cpu_thread")

GROWTH = dict(
    n_classes=5,
    n_compete=9,
    lr_ratios=[1.0, 10.0],
    a0=0.1,
    b0=0.1,
    horizon=1e4,
    rtol=1e-10,
    parametrizations=["CACO", "FAFO"],
    fit_from=1e3,
)
FIT_FROM = GROWTH["fit_from"]


@pytest.fixture(scope="module")
def runs():
    return reduced.solve_grid(["CACO", "FAFO"], [1.0, 10.0], GROWTH["horizon"], a0=0.1, b0=0.1, times=[FIT_FROM],
                              n_times=120, rtol=1e-10, atol=1e-12, matched=None)  # fmt: skip


@pytest.fixture(scope="module")
def fits(runs):
    return {key: growth.fit_growth(run, FIT_FROM) for key, run in runs.items()}


def test_schema_refuses_a_window_above_the_horizon():
    with pytest.raises(ParameterError, match="fit_from"):
        contracts.GROWTH_RATES.validate({**GROWTH, "fit_from": 2e4})
    with pytest.raises(ParameterError, match="one decade"):
        contracts.GROWTH_RATES.validate({**GROWTH, "fit_from": 5e3})


def test_growth_law_residuals_vanish_and_a_wrong_law_is_counted():
    # the laws as stated (sympy's own growth_laws() is checked in test_sharpening_symbolic, ~9 s)
    a, b, n, K, r, eta, t = symbolic.reduced_symbols()
    stated = dict(a_collapsed=sp.log(eta * (K - 1) * t), a_collapsed_offset=sp.log(eta) + sp.log(K - 1),
                  ei_factorized=sp.Ei(a) / 2, a_factorized_ratio=sp.Integer(1), ei_asymptotic=sp.Integer(1),
                  odds_caco=r * sp.log(t) ** 2 / 2, b_caco=sp.log(r * n * sp.log(t) ** 2 / 2), odds_in_a={},
                  odds_in_t={})  # fmt: skip
    g = symbolic.GrowthLaws(**stated)
    assert len(g.residuals) == 4 and symbolic.count_nonzero(g.residuals) == 0
    assert symbolic.count_nonzero(symbolic.GrowthLaws(**{**stated, "odds_caco": r * sp.log(t) ** 2}).residuals) == 1
    assert symbolic.count_nonzero(symbolic.GrowthLaws(**{**stated, "ei_asymptotic": sp.Integer(2)}).residuals) == 1


def test_fit_reads_the_window_start_and_the_laws(runs, fits):
    run, fit = runs[("CACO", 1.0)], fits[("CACO", 1.0)]
    row = run.row(FIT_FROM)
    assert fit.fit_from == FIT_FROM and fit.system is run.system
    assert fit.start == {k: pytest.approx(float(row[k])) for k in ("t", "a", "b", "p", "s", "odds")}
    assert fit.u_slope == pytest.approx(fit.u_slope_law, abs=growth.ov_slope_tolerance(fit))
    assert 1.5 < growth.odds_exponent(run, FIT_FROM) < 2.0
    ratio = fits[("CACO", 10.0)].odds_slope / fit.odds_slope
    assert ratio == pytest.approx(10.0, rel=0.1)
    rows = growth.fit_rows(runs, fits)
    assert [(r["model"], r["r"]) for r in rows] == list(runs) and rows[0]["A4 tol"] == growth.ov_slope_tolerance(fit)


def test_ov_tolerance_is_the_neglected_terms_at_the_window_start(fits):
    co, fo = fits[("CACO", 10.0)], fits[("FAFO", 10.0)]
    assert growth.ov_slope_tolerance(co) == pytest.approx((1 - co.start["p"]) + (1 - co.start["s"]))
    L0 = math.log(FIT_FROM)
    bound = (math.log(L0) + math.log(2 * 4)) / L0**2  # K = 5
    assert growth.ov_slope_tolerance(fo) == pytest.approx(bound + (1 - fo.start["p"]) + (1 - fo.start["s"]))
    dom = growth.ov_slope_domain(co)
    assert dom.holds == (growth.ov_slope_tolerance(co) <= growth.INFORMATIVE_TOL)
    assert dom.reads == (claims.state("window start", t=FIT_FROM),) and dom.latest_state == FIT_FROM


def test_odds_slope_tolerance_and_domains():
    assert growth.odds_slope_tolerance(2.0, 1e4) == pytest.approx(1 / math.log(1e4) ** 2)
    fake = growth.fit_or_nan({}, "CACO", 1.0, 1e4)
    fake.start.update(p=0.95, b=3.0, odds=2.0)  # saturated, but odds < b
    assert growth.saturated_domain(fake) and not growth.large_b_domain(fake)
    assert "odds = 2, b = 3" in growth.large_b_domain(fake).reason
    dom = growth.odds_slope_domain(fake)  # 2/(log² 1e4) ≈ 0.024 ≤ 0.5
    assert dom and set(dom.reads) == {claims.PARAMETERS, claims.state("window start", t=1e4)}
    fake.start["p"] = 0.5
    assert not growth.odds_slope_domain(fake) and "p = 0.5" in growth.odds_slope_domain(fake).reason
    assert not growth.odds_slope_domain(growth.fit_or_nan({}, "CACO", 1e-3, 10.0))  # 2/(r log² t) > 0.5


def test_fit_or_nan_stands_in_for_a_run_not_made(fits):
    assert growth.fit_or_nan(fits, "CACO", 1.0, FIT_FROM) is fits[("CACO", 1.0)]
    nan = growth.fit_or_nan(fits, "CACO", 3.0, FIT_FROM)
    assert math.isnan(nan.odds_slope) and math.isnan(nan.b_loglog_slope_law) and np.isnan(nan.odds_over_law_in_a).all()
    assert not growth.saturated_domain(nan) and not growth.large_b_domain(nan)


def test_domains_on_the_window_start_pass_the_ledgers_order_check(fits, tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNFLOW_CLAIMS_DIR", str(tmp_path))
    claims.begin_page("test/growth")
    fit = fits[("CACO", 10.0)]
    v = claims.check("A4", fit.u_slope, fit.u_slope_law, atol=growth.ov_slope_tolerance(fit),
                     domain=growth.ov_slope_domain(fit), measured_from=FIT_FROM, what="CACO r=10")  # fmt: skip
    assert v.verdict == "pass"
    assert claims.records()[-1]["domain_reads"] == [claims.state("window start", t=FIT_FROM)]
    with pytest.raises(ValueError, match="after the measurement"):  # a fit that starts before its domain's state
        claims.check("A4", 1.0, 1.0, atol=0.1, domain=growth.ov_slope_domain(fit), measured_from=FIT_FROM / 10)


def test_rises_towards_one():
    assert growth.rises_towards_one(np.array([0.5, 0.8, 0.99]))
    assert not growth.rises_towards_one([0.5, 0.4, 0.99]) and not growth.rises_towards_one([0.5, 0.8, 1.01])
    assert growth.rises_towards_one.__doc__ == "increasing towards 1 over the window"


def test_odds_per_log2_reads_a_stored_time_or_nan(runs):
    run = runs[("CACO", 1.0)]
    assert growth.odds_per_log2(run, FIT_FROM) == pytest.approx(run.row(FIT_FROM)["odds"] / math.log(FIT_FROM) ** 2)
    assert math.isnan(growth.odds_per_log2(run, 1e5)) and math.isnan(growth.odds_per_log2(None, 1e3))
    with pytest.raises(KeyError, match="not a stored time"):
        growth.odds_per_log2(run, 1234.5)


def test_growth_curves_draws_four_panels(runs):
    fig = figures.growth_curves(runs, title="small")
    assert len(fig.axes) == 4 and fig.axes[1].get_yscale() == "log"
    fig = figures.growth_curves({k: v for k, v in runs.items() if k[0] == "FAFO"})  # no CACO: QK panels empty
    assert not fig.axes[1].lines
