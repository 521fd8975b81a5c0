"""Primitives of the escape page (book/focus_dilution/escape.py; spec R5, claims B8, B9, B15, B16), on small
inputs: the slope bias of σ₂(W0), the trap statistics of the δ = 0 run and the trap domain from the
parameters, the restricted flows' domain, the escape statistics of a δ run and the per-δ domains (issue 21:
the parameters and the state before each measurement), the sweep's fit, forecast and table helpers."""

import dataclasses
import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from attnflow import claims
from attnflow.focus_dilution import closed_forms, escape
from attnflow.focus_dilution.chain import hub_family
from attnflow.focus_dilution.runs import FlowRun


def _fake_run(t, chain=None, states=None, **q):
    run = FlowRun(t=np.asarray(t, float), quantities={k: np.asarray(v, float) for k, v in q.items()}, chain=chain)
    if states is not None:
        run.result = SimpleNamespace(states=lambda: states)
    return run


def _trap_domain(t_pred: float, horizon_trapped: float) -> claims.Domain:
    """The page's trap domain (written on the page): the predicted arrival within half the horizon."""
    return claims.domain(
        ("t_pred ≤ SETTLE_FRACTION × horizon_trapped", t_pred <= escape.SETTLE_FRACTION * horizon_trapped, "")
    )


def _stats(**over) -> escape.EscapeStats:
    base = dict(
        rate=1e-3,
        window=(100.0, 200.0),
        M_perp_mean=1e-3,
        t_escape=250.0,
        loss_end=1.0,
        window_sensitivity=0.0,
        window_found=True,
        M_perp_drift=0.9,
        sigma2_floor=0.004,
        mode_share=0.999,
    )
    return escape.EscapeStats(**{**base, **over})


# ----------------------------------------------------------------------------- the slope bias (B15, B16)
def test_slope_bias_of_an_untouched_part_of_sigma2():
    """B16/B15: a constant part f of σ₂(W0) in quadrature with the growing mode biases the fitted
    slope downwards; the prediction agrees with a direct least-squares fit of such a signal."""
    assert escape.slope_bias(1.0) == pytest.approx(0.0, abs=1e-12)
    values = [escape.slope_bias(s) for s in (0.3, 0.9, 0.938, 0.985, 0.999)]
    assert all(a < b for a, b in zip(values, values[1:])) and values[-1] < 0
    assert escape.slope_bias(0.938) == pytest.approx(-0.0206, abs=5e-4)  # the atlas point: measured −2.4 %
    assert escape.slope_bias(0.985) > -escape.BIAS_MAX > escape.slope_bias(0.98)
    t = np.arange(0.0, 4000.0, 1.0)
    f, r = 0.004, 1e-3
    s2 = np.sqrt((0.00917 * np.exp(r * t)) ** 2 + f**2)
    sel = (s2 >= 0.01) & (s2 <= 0.1)
    fitted = np.polyfit(t[sel], np.log(s2[sel]), 1)[0]
    share = np.sqrt(1 - (f / s2[sel][0]) ** 2)
    assert fitted / r - 1 == pytest.approx(escape.slope_bias(share), abs=2e-3)
    assert escape.slope_bias(0.0) == -1.0
    # a shrinking part of the mode on the W0 side (|p| > |q|) lowers the slope, on the W1 side raises it
    assert escape.slope_bias(1.0, 0.03) == pytest.approx(-0.0105, abs=1e-3)  # measured −1.1 %
    assert escape.slope_bias(1.0, -0.015) > 0 > escape.slope_bias(1.0, 0.015)
    s = np.linspace(0.0, 3.0, 3001)
    g = 0.01 * (np.exp(s) + 0.03 * np.exp(-s)) / 1.03
    keep = g <= 0.1
    assert np.polyfit(s[keep], np.log(g[keep]), 1)[0] - 1 == pytest.approx(escape.slope_bias(1.0, 0.03), abs=1e-4)


# ----------------------------------------------------------------------------- trapping at δ = 0 (B8)
def test_trap_domain_reads_parameters_and_a_flow_that_leaves_fails(ledger):
    """B8's trap checks: the domain is read from the parameters (a predicted arrival time at θ_c²), not from
    the run, so a δ = 0 flow that is not at θ_c² by then, or leaves it, fails instead of being outside."""
    chain = hub_family(4, 0.5, 0.3, 0.4, 0.0)
    t_pred = escape.predicted_arrival(chain, 1e-3)
    assert t_pred == pytest.approx(escape.PREDICT_FACTOR * closed_forms.plateau_time(chain, 1e-3))
    assert 3000 < t_pred < 5000  # 1.5 × 2501 on the reference chain
    t = np.arange(0.0, 3 * t_pred, 10.0)
    L_c2 = closed_forms.theta_c2_loss(chain)
    sigma2 = np.where(t < 1.2 * t_pred, 4e-3, 0.5)  # leaves θ_c² after t_pred
    loss = np.where(t < 1.2 * t_pred, L_c2, L_c2 - 0.1)
    run = _fake_run(t, chain, loss=loss, sigma2=sigma2, M_perp_smax=np.full(len(t), 1e-8))
    run.wall_s = 0.0
    out = escape.trap_stats(run, chain, t_pred=t_pred)
    assert out.growth_after_pred > 100
    dom = _trap_domain(t_pred, float(t[-1]))
    assert dom and dom.reads == (claims.PARAMETERS,)
    claims.check("B8", out.growth_after_pred, 1.0, atol=0.1, domain=dom, what="trap")
    claims.check("B8", out.L_end0, out.L_c2, atol=1e-8, domain=dom, what="loss")
    assert [r["verdict"] for r in ledger()] == ["fail", "fail"]
    assert not _trap_domain(t_pred, 1.5 * t_pred)


def test_trap_stats_without_settling_and_the_sweep_start():
    chain = hub_family(4, 0.5, 0.3, 0.4, 0.0)
    t = np.arange(0.0, 101.0, 1.0)
    loss = np.linspace(np.log(5), chain.unigram_entropy() + 0.01, len(t))  # still condensing at t = 100
    run = _fake_run(t, chain, loss=loss, sigma2=np.full(len(t), 1e-3), M_perp_smax=np.full(len(t), 1e-2))
    run.wall_s = 0.0
    out = escape.trap_stats(run, chain)
    assert not out.settled and math.isnan(out.t_settle) and out.after == 100.0
    assert math.isnan(out.sigma2_pred) and escape.restricted_horizon(out) == escape.LS_HORIZON
    loss = np.r_[np.linspace(1.6, 1.51, 20), np.full(len(t) - 20, 1.50)]
    flat = dict(sigma2=np.full(len(t), 4e-3), M_perp_smax=np.full(len(t), 1e-8))
    out = escape.trap_stats(_fake_run(t, chain, loss=loss, **flat), chain)
    assert out.settled and out.t_settle == 20.0 == out.after and not out.reached_c2
    loss[20:] = out.L_c2  # the flow sits at θ_c²
    out = escape.trap_stats(_fake_run(t, chain, loss=loss, **flat), chain, t_pred=50.0)
    assert out.reached_c2 and out.settled and out.growth_after_pred == 1.0
    assert escape.restricted_horizon(dataclasses.replace(out, t_settle=3000.0)) == 12000.0


def test_restricted_flow_checks_read_no_restricted_flow(ledger):
    """B9 (issue 21): the restricted flows' checks have the trap domain (parameters) only; the transverse gain
    ∫σ_max(M⊥)dt along a flow was a first-order proxy of its σ₂ at the end and is no condition: a restricted
    flow that left 𝓜₁ fails."""
    ls = escape.LSLimit(
        deltas=np.array([0.025, 0.05]),
        M_perp=np.zeros((2, 3, 3)),
        sigma_max=np.array([1e-3, 2e-3]),
        grad_norm=np.array([1e-14, 1e-14]),
        off_manifold=np.array([1e-14, 3.4]),
        sigma2_start=np.array([1e-16, 1e-16]),
        transverse_gain=np.array([6.0, 134.0]),
        lambda1=0.03,
        M1=np.zeros((3, 3)),
    )
    dom = _trap_domain(3000.0, 30000.0)
    for d_, off in zip(ls.deltas, ls.off_manifold):
        claims.check("B9", off, 0.0, atol=escape.OFF_TOL, domain=dom, what=f"δ = {d_:g}")
    assert [r["verdict"] for r in ledger()] == ["pass", "fail"]


# ----------------------------------------------------------------------------- the δ-sweep (B9, B15, B16)
def test_escape_stats_tolerates_a_horizon_without_escape():
    t = np.arange(0.0, 100.0, 1.0)
    run = _fake_run(t, sigma2=np.full(len(t), 0.004), M_perp_smax=np.full(len(t), 1e-3), loss=np.ones(len(t)))
    with pytest.raises(ValueError):
        escape.escape_stats(run, after=10.0)
    st = escape.escape_stats(run, after=10.0, strict=False)
    assert not st.window_found and math.isnan(st.rate) and math.isnan(st.t_escape)


def _mode_run(chain, t, s2, loss):
    """σ₂(W0) = the unstable transverse mode (share 1): W0 = a uᵀ + x s2 wᵀ, u = e1, w = e2."""
    d, m = chain.d, 3
    A = np.tile(chain.pi[None, None, :], (len(t), d, 1))  # (T, d, d)
    P_hat = np.tile(chain.P[None] * 0.9 + 0.1 / d, (len(t), 1, 1))
    Mp = np.swapaxes(A, -1, -2) @ (chain.pi[:, None] * (chain.P - P_hat))
    x = np.linalg.svd(Mp[0])[0][:, 0]
    W0 = np.zeros((len(t), d, m))
    W0[:, :, 0] = np.r_[1.0, np.full(d - 1, 0.2)]
    W0[:, :, 1] = x[None] * s2[:, None]
    return _fake_run(
        t,
        chain,
        states={"W0": torch.as_tensor(W0)},
        sigma2=s2,
        M_perp_smax=np.full(len(t), 0.02),
        loss=loss,
        A=A,
        P_hat=P_hat,
        u=np.tile(np.eye(m)[0], (len(t), 1)),
    )


def test_escape_rate_of_a_clean_exponential_and_its_diagnostics():
    chain = hub_family(2, 0.5, 0.3, 0.4, 0.1)
    t = np.arange(0.0, 400.0, 1.0)
    run = _mode_run(chain, t, 0.004 * np.exp(0.02 * t), np.ones(len(t)))
    st = escape.escape_stats(run, after=0.0)
    assert st.rate == pytest.approx(0.02, rel=1e-9) and st.M_perp_drift == pytest.approx(0.0)
    assert st.window_found and st.sigma2_floor == pytest.approx(0.004)
    assert st.mode_share == pytest.approx(1.0, rel=1e-9) and st.mode_imbalance == 0.0 and abs(st.fit_bias) < 1e-9


def test_sweep_row_measures_after_the_settling_time():
    chain = hub_family(2, 0.5, 0.3, 0.4, 0.1)
    t = np.arange(0.0, 400.0, 1.0)
    L_c2 = chain.unigram_entropy() - 0.1
    loss = L_c2 - 0.001 * t / 400.0
    row = escape.sweep_row(_mode_run(chain, t, 0.004 * np.exp(0.02 * t), loss), 0.1, after=10.0, L_c2=L_c2)
    assert row.stats.rate == pytest.approx(0.02, rel=1e-9) and row.bigram == chain.bigram_loss()
    assert row.sigma2_at_settle == pytest.approx(0.004 * np.exp(0.2))
    t0 = row.stats.window[0]
    assert t0 == pytest.approx(np.ceil(np.log(2.5) / 0.02)) and row.fit_start(10.0) == t0
    assert row.plateau_drop == pytest.approx(0.001 * (t0 - 10.0) / 400.0 / 0.1)
    assert math.isnan(row.loss_1e4)  # t = 10⁴ is not a stored time of this run


def test_b16_domain_reads_the_state_before_the_window_and_names_each_failing_condition():
    """B16/B9 (issue 21): the domain of a δ reads the parameters (trap), the run at the δ = 0 settling time
    (first escape, forecast escape within the horizon, O(ε) level) and at its window start (still at θ_c²(δ),
    slope bias) — never the window itself (σ₂ crossing it, M⊥'s drift over it)."""
    trap = claims.domain(("trap", True, ""))
    kw = dict(trap=trap, lambda1=0.03, after=50.0, horizon=2000.0)
    ok = escape.SweepRow(delta=0.1, run=None, stats=_stats(), bigram=1.0, plateau_drop=0.001, sigma2_at_settle=0.004)
    dom = ok.domain(**kw)
    assert dom and "M⊥ about constant" not in dom.text and dom.latest_state == 100.0 == ok.fit_start(50.0)
    assert ok.escape_domain(**kw).latest_state == 50.0
    assert ok.escape_forecast(0.03, 50.0) == pytest.approx(50.0 + 1.5 * np.log(25.0) / 0.003)
    # forecast ≈ 1659 > 1000: outside, whatever the run did later
    assert "forecast escape" in ok.domain(**{**kw, "horizon": 1000.0}).reason
    low = escape.SweepRow(
        delta=0.1, run=None, stats=_stats(sigma2_floor=0.006), bigram=1.0, plateau_drop=0.2, sigma2_at_settle=0.006
    )
    dom = low.domain(**kw)
    assert not dom and "O(ε) transverse level" in dom.reason and "still at θ_c²" in dom.reason
    assert "slope bias" not in dom.reason and low.escape_domain(**kw)
    mixed = escape.SweepRow(
        delta=0.4, run=None, stats=_stats(mode_share=0.938), bigram=1.0, plateau_drop=0.001, sigma2_at_settle=0.004
    )  # the atlas point: −2.1 % predicted
    assert not mixed.domain(**kw) and "slope bias" in mixed.domain(**kw).reason
    late = escape.SweepRow(delta=0.1, run=None, stats=_stats(), bigram=1.0, plateau_drop=0.001, sigma2_at_settle=0.02)
    assert "first escape" in late.escape_domain(**kw).reason
    none = escape.SweepRow(
        delta=0.1,
        run=None,
        stats=_stats(window=(math.nan, math.nan), window_found=False, rate=math.nan),
        bigram=1.0,
        plateau_drop=math.nan,
        sigma2_at_settle=0.004,
    )  # no window although the escape was forecast: inside its domain, the rate is checked (and fails)
    assert none.domain(**kw) and none.fit_start(50.0) == 50.0
    assert not ok.domain(**{**kw, "trap": claims.domain(("trap", False, ""))})


def test_check_of_a_rate_refuses_a_domain_read_after_the_window_start(ledger):
    ok = escape.SweepRow(delta=0.1, run=None, stats=_stats(), bigram=1.0, plateau_drop=0.001, sigma2_at_settle=0.004)
    dom = ok.domain(claims.domain(("trap", True, "")), 0.03, 50.0, 2000.0)
    claims.check("B16", 1e-3, 1e-3, rtol=1e-2, domain=dom, measured_from=ok.fit_start(50.0), what="rate")
    with pytest.raises(ValueError):
        claims.check("B16", 1e-3, 1e-3, rtol=1e-2, domain=dom, measured_from=50.0, what="rate")
    assert [r["verdict"] for r in ledger()] == ["pass"]


def test_sweep_fit_domains_and_table():
    rows = [
        escape.SweepRow(
            delta=d_,
            run=None,
            stats=_stats(rate=0.03 * d_ + 0.01 * d_**2, M_perp_mean=0.03 * d_, t_escape=1000.0 + 100.0 / d_),
            bigram=1.0,
            plateau_drop=0.001,
            sigma2_at_settle=0.004,
        )
        for d_ in (0.05, 0.1, 0.2)
    ]
    fit = escape.sweep_fit(rows, t_settle=1000.0)
    assert fit.lambda1_rates == pytest.approx(0.03) and fit.lambda2 == pytest.approx(0.01)
    assert fit.esc_min == fit.esc_max == pytest.approx(100.0) and fit.esc_ratio == pytest.approx(1.0)
    assert fit.b16_dev == pytest.approx(0.01 * 0.2 / 0.03)
    trap = claims.domain(("trap", True, ""))
    doms = [r.domain(trap, 0.03, 1000.0, 1e5) for r in rows]
    assert escape.sweep_domain(rows, doms, trap)
    assert not escape.sweep_domain(rows, [*doms[:2], claims.domain(("x", False, ""))], trap)
    assert escape.escape_times_domain(rows, trap, 0.03, 1000.0, 1e5).latest_state == 1000.0
    assert not escape.escape_times_domain(rows, trap, 0.03, 1000.0, 2000.0)  # δ = 0.05 forecast after 2000
    table = escape.sweep_table(rows, doms)
    assert [r["in_domain"] for r in table] == [True] * 3 and table[1]["spec_rate"] == 0.00311
    assert [r.delta for r in escape.spec_rows(rows)] == [0.05, 0.1, 0.2]
    assert escape.run_at(rows, 0.3) is None


def test_forecasts_checkpoints_and_spec_targets():
    assert escape.forecast_escape(3000.0, 1e-3, 0.03, 0.1) == pytest.approx(3000.0 + 1.5 * np.log(100.0) / 0.003)
    assert escape.forecast_escape(3000.0, 1e-3, 0.03, 0.0) == math.inf
    assert escape.cycle_checkpoints(True, 1e4, 2000.0) == [4000.0, 6000.0, 8000.0]
    assert escape.cycle_checkpoints(False, 6000.0, 2000.0) == [3000.0, 4000.0, 5000.0, 6000.0]
    near = escape.SweepRow(delta=0.1, run=None, stats=_stats(), bigram=1.41889)
    far = escape.SweepRow(delta=0.4, run=None, stats=_stats(), bigram=1.41724)
    assert (near.loss_1e4_target, near.loss_1e4_atol) == (1.41889, 1e-4) and "bigram optimum" in near.loss_1e4_what
    assert far.loss_1e4_target == 1.42812 and far.loss_1e4_atol == 5e-6 and "intermediate plateau" in far.loss_1e4_what
