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


def _mode_run(chain, t, s2, loss, shrink=None):
    """σ₂(W0) = the unstable transverse mode (share 1): W0 = a uᵀ + x s2 wᵀ, W1 = u bᵀ + w (s2 y)ᵀ, u = e1, w = e2
    (|α| = s2); ``shrink`` adds a shrinking mode (x, −y) of that size along w' = e3."""
    d, m = chain.d, 3
    A = np.tile(chain.pi[None, None, :], (len(t), d, 1))  # (T, d, d)
    P_hat = np.tile(chain.P[None] * 0.9 + 0.1 / d, (len(t), 1, 1))
    Mp = np.swapaxes(A, -1, -2) @ (chain.pi[:, None] * (chain.P - P_hat))
    U, _, Vt = np.linalg.svd(Mp[0])
    x, y = U[:, 0], Vt[0]
    W0 = np.zeros((len(t), d, m))
    W0[:, :, 0] = np.r_[1.0, np.full(d - 1, 0.2)]
    W0[:, :, 1] = x[None] * s2[:, None]
    W1 = np.zeros((len(t), m, d))
    W1[:, 0, :] = np.r_[0.5, np.full(d - 1, -0.1)]
    W1[:, 1, :] = y[None] * s2[:, None]
    if shrink is not None:
        W0[:, :, 2] = x[None] * shrink[:, None]
        W1[:, 2, :] = -y[None] * shrink[:, None]
    return _fake_run(
        t,
        chain,
        states={"W0": torch.as_tensor(W0), "W1": torch.as_tensor(W1)},
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
    assert st.mode_share == pytest.approx(1.0, rel=1e-9) and abs(st.mode_imbalance) < 1e-12 and abs(st.fit_bias) < 1e-9


def _mode_of(run, rate, delta=0.1, grad_norm=1e-14):
    """The run's constant M⊥ as the mode of θ_c²(δ), with a prescribed rate (the prediction)."""
    M = closed_forms.M_perp(run.quantities["A"][0], run.quantities["P_hat"][0], run.chain)
    U, _, Vt = np.linalg.svd(M)
    return escape.UnstableMode(delta, M, rate, U[:, 0], Vt[0], grad_norm)


def test_mode_amplitude_is_the_growing_mode_only():
    """B16: |α| follows the growing mode (x, y) and ignores the shrinking one (x, −y), so log|α| is linear from
    the window start, where σ₂(W0) would carry both."""
    chain = hub_family(2, 0.5, 0.3, 0.4, 0.1)
    t = np.arange(0.0, 400.0, 1.0)
    run = _mode_run(chain, t, 0.004 * np.exp(0.02 * t), np.ones(len(t)), shrink=0.003 * np.exp(-0.02 * t))
    alpha = escape.mode_amplitude(run, _mode_of(run, 0.02))
    assert alpha == pytest.approx(0.004 * np.exp(0.02 * t), rel=1e-12)


def test_mode_fit_window_fixed_from_its_start_and_the_prediction():
    """B16 (issue 21): t₀ is the first stored time at θ_c²(δ) (M⊥ within SETTLE_TOL), t₁ = t₀ + log(MODE_TOP/|α(t₀)|)/λ
    from the prediction λ; a run growing at another rate is fitted on the same kind of window and measured off."""
    chain = hub_family(2, 0.5, 0.3, 0.4, 0.1)
    t = np.arange(0.0, 400.0, 1.0)
    run = _mode_run(chain, t, 0.004 * np.exp(0.02 * t), np.ones(len(t)))
    mode = _mode_of(run, 0.02)
    A = run.quantities["A"].copy()
    A[:50] = A[:50, :, ::-1]  # not yet at θ_c²(δ) before t = 50: another M⊥
    run.quantities["A"] = A
    fit = escape.mode_fit(run, mode)
    assert fit.t0 == 50.0 and fit.alpha0 == pytest.approx(0.004 * np.exp(1.0)) and fit.drift0 == 0.0
    assert fit.t1 == pytest.approx(50.0 + np.log(escape.MODE_TOP / fit.alpha0) / 0.02)
    assert fit.rate == pytest.approx(0.02, rel=1e-9) and fit.measured_from == 50.0
    dom = fit.domain()
    assert dom and dom.latest_state == 50.0
    off = escape.mode_fit(run, _mode_of(run, 0.021))  # a prediction 5 % off: the run's rate stays 0.02
    assert off.rate == pytest.approx(0.02, rel=1e-9) and abs(off.rate / off.predicted - 1) > 1e-2 and off.domain()


def test_mode_fit_domain_names_each_failing_condition(ledger):
    chain = hub_family(2, 0.5, 0.3, 0.4, 0.1)
    t = np.arange(0.0, 400.0, 1.0)
    run = _mode_run(chain, t, 0.004 * np.exp(0.02 * t), np.ones(len(t)))
    mode = _mode_of(run, 0.02)
    never = escape.mode_fit(run, dataclasses.replace(mode, M_perp=2 * mode.M_perp))  # never at θ_c²(δ)
    assert math.isnan(never.t0) and math.isnan(never.rate) and never.measured_from is None
    reason = never.domain().reason
    assert not never.domain() and reason.count("fails") == 1 and "reaches θ_c²(δ)" in reason
    late = _mode_run(chain, t, 0.06 * np.exp(0.02 * t), np.ones(len(t)))  # already past MODE_TOP at t₀
    assert "still linear" in escape.mode_fit(late, _mode_of(late, 0.02)).domain().reason
    short = escape.mode_fit(run, _mode_of(run, 0.02 / 30))  # t₁ beyond the run
    assert "within the run" in short.domain().reason
    lost = escape.mode_fit(run, _mode_of(run, 0.02, grad_norm=1e-3))
    assert "θ_c²(δ) found" in lost.domain().reason
    flat = _mode_run(chain, t, np.zeros(len(t)), np.ones(len(t)))  # no transverse state (m = 1): α ≡ 0
    none = escape.mode_fit(flat, _mode_of(flat, 0.02))
    assert math.isnan(none.rate) and none.t1 == math.inf and "within the run" in none.domain().reason
    fit = escape.mode_fit(run, mode)
    claims.check("B16", fit.rate, fit.predicted, rtol=1e-2, domain=fit.domain(), measured_from=fit.measured_from)
    claims.check("B16", fit.rate, 1.05 * fit.predicted, rtol=1e-2, domain=fit.domain(), measured_from=fit.t0)
    late = dataclasses.replace(fit, t0=60.0)
    with pytest.raises(ValueError):  # the domain reads the run up to t₀: a measurement from before t₀ is refused
        claims.check("B16", fit.rate, fit.predicted, rtol=1e-2, domain=late.domain(), measured_from=0.0)
    assert [r["verdict"] for r in ledger()] == ["pass", "fail"]


def test_sweep_row_measures_after_the_settling_time():
    chain = hub_family(2, 0.5, 0.3, 0.4, 0.1)
    t = np.arange(0.0, 400.0, 1.0)
    run = _mode_run(chain, t, 0.004 * np.exp(0.02 * t), np.ones(len(t)))
    row = escape.sweep_row(run, 0.1, after=10.0, mode=_mode_of(run, 0.02))
    assert row.stats.rate == pytest.approx(0.02, rel=1e-9) and row.bigram == chain.bigram_loss()
    assert row.sigma2_at_settle == pytest.approx(0.004 * np.exp(0.2))
    assert row.mode.rate == pytest.approx(0.02, rel=1e-9) and row.mode.t0 == 0.0
    assert math.isnan(row.loss_1e4)  # t = 10⁴ is not a stored time of this run


def test_escape_domain_reads_the_state_at_settling():
    """B9 (issue 21): the escape-time domain reads the parameters (trap) and the run at the δ = 0 settling time
    (first escape, forecast escape within the horizon) — never the escape itself."""
    trap = claims.domain(("trap", True, ""))
    kw = dict(trap=trap, lambda1=0.03, after=50.0, horizon=2000.0)
    ok = escape.SweepRow(delta=0.1, run=None, stats=_stats(), bigram=1.0, sigma2_at_settle=0.004)
    assert ok.escape_domain(**kw) and ok.escape_domain(**kw).latest_state == 50.0
    assert ok.escape_forecast(0.03, 50.0) == pytest.approx(50.0 + 1.5 * np.log(25.0) / 0.003)
    assert "forecast escape" in ok.escape_domain(**{**kw, "horizon": 1000.0}).reason  # forecast ≈ 1659 > 1000
    late = escape.SweepRow(delta=0.1, run=None, stats=_stats(), bigram=1.0, sigma2_at_settle=0.02)
    assert "first escape" in late.escape_domain(**kw).reason
    assert not ok.escape_domain(**{**kw, "trap": claims.domain(("trap", False, ""))})


def _fit(delta, rate, t0=100.0):
    return escape.ModeFit(delta, 0.03 * delta, t0, 0.01, 0.0, t0 + 50.0, 6, 1e4, rate, 1e-14)


def test_sweep_fit_domains_and_table():
    rows = [
        escape.SweepRow(
            delta=d_,
            run=None,
            stats=_stats(t_escape=1000.0 + 100.0 / d_),
            bigram=1.0,
            mode=_fit(d_, 0.03 * d_ + 0.01 * d_**2),
            sigma2_at_settle=0.004,
        )
        for d_ in (0.05, 0.1, 0.2)
    ]
    trap = claims.domain(("trap", True, ""))
    doms = [r.mode.domain() for r in rows]
    restricted = claims.state("restricted flow to θ_c²(δ = 0.05) from the δ = 0 plateau state")
    assert all(doms) and doms[0].reads == (restricted, claims.state("δ = 0.05 run up to its window start t₀", 100.0))
    fit = escape.sweep_fit(rows, 1000.0, doms)
    assert fit.lambda1_rates == pytest.approx(0.03) and fit.lambda2 == pytest.approx(0.01) and fit.n_fit == 3
    assert fit.esc_min == fit.esc_max == pytest.approx(100.0) and fit.esc_ratio == pytest.approx(1.0)
    assert fit.b16_dev == pytest.approx(0.01 * 0.2 / 0.03)
    out = claims.domain(("x", False, ""))
    fit2 = escape.sweep_fit(rows, 1000.0, [*doms[:2], out])  # δ = 0.2 outside: the line through 0.05 and 0.1
    assert fit2.n_fit == 2 and fit2.lambda1_rates == pytest.approx(0.03) and fit2.b16_dev == pytest.approx(0.01 / 0.3)
    assert escape.sweep_domain(rows, doms) and escape.sweep_domain(rows, [*doms[:2], out])
    assert escape.sweep_domain(rows, [out, doms[1], doms[2]])  # 0.1 and 0.2: the smallest ≤ 0.1
    assert not escape.sweep_domain(rows, [doms[0], out, out])  # one δ inside: no intercept
    assert not escape.sweep_domain(rows, [out, out, doms[2]])
    assert escape.escape_times_domain(rows, trap, 0.03, 1000.0, 1e5).latest_state == 1000.0
    assert not escape.escape_times_domain(rows, trap, 0.03, 1000.0, 2000.0)  # δ = 0.05 forecast after 2000
    table = escape.sweep_table(rows, doms)
    assert [r["in_domain"] for r in table] == [True] * 3 and table[1]["spec_rate"] == 0.00311
    assert table[0]["predicted"] == pytest.approx(0.0015) and table[0]["t0"] == 100.0
    assert [r.delta for r in escape.spec_rows(rows)] == [0.05, 0.1, 0.2]
    assert escape.run_at(rows, 0.3) is None


def test_a_delta_that_never_escapes_fails_the_escape_time_law():
    """B9's Θ(1/δ): a δ of the sweep with no escape in its run is no bounded (t_esc − t_settle)·δ — the ratio is
    inf (fails), not the ratio of the δ that did escape (issue 21: dropped, it let the law pass)."""
    rows = [
        escape.SweepRow(
            delta=d_,
            run=None,
            stats=_stats(t_escape=1000.0 + 100.0 / d_ if d_ > 0.05 else float("nan")),
            bigram=1.0,
            mode=_fit(d_, 0.03 * d_),
            sigma2_at_settle=0.004,
        )
        for d_ in (0.05, 0.1, 0.2)
    ]
    fit = escape.sweep_fit(rows, 1000.0, [r.mode.domain() for r in rows])
    assert fit.esc_min == pytest.approx(100.0) and fit.esc_max == float("inf") and fit.esc_ratio == float("inf")
    assert not claims.below(1.5)(fit.esc_ratio)


def test_unstable_modes_find_the_critical_point_on_the_manifold():
    """B16's prediction: the restricted flow, projected back onto 𝓜₁ between stretches, converges to θ_c²(δ)
    (‖∇L‖ → 0) and gives M⊥ there with its top singular pair."""
    from attnflow.focus_dilution import runs

    chain = hub_family(2, 0.5, 0.3, 0.4, 0.2)
    run = runs.population_flow(chain, t_eval=np.array([0.0, 200.0]))
    theta = {n: s[-1] for n, s in run.result.states().items()}
    (mode,) = escape.unstable_modes([chain], [0.2], theta, horizon=3000.0)
    U, S, Vt = np.linalg.svd(mode.M_perp)
    assert mode.rate == pytest.approx(S[0]) and abs(U[:, 0] @ mode.x) == pytest.approx(1.0)
    assert mode.delta == 0.2 and mode.grad_norm < 1e-8


def test_forecasts_checkpoints_and_spec_targets():
    assert escape.forecast_escape(3000.0, 1e-3, 0.03, 0.1) == pytest.approx(3000.0 + 1.5 * np.log(100.0) / 0.003)
    assert escape.forecast_escape(3000.0, 1e-3, 0.03, 0.0) == math.inf
    assert escape.cycle_checkpoints(True, 1e4, 2000.0) == [4000.0, 6000.0, 8000.0]
    assert escape.cycle_checkpoints(False, 6000.0, 2000.0) == [3000.0, 4000.0, 5000.0, 6000.0]
    near = escape.SweepRow(delta=0.1, run=None, stats=_stats(), bigram=1.41889)
    far = escape.SweepRow(delta=0.4, run=None, stats=_stats(), bigram=1.41724)
    assert (near.loss_1e4_target, near.loss_1e4_atol) == (1.41889, 1e-4) and "bigram optimum" in near.loss_1e4_what
    assert far.loss_1e4_target == 1.42812 and far.loss_1e4_atol == 5e-6 and "intermediate plateau" in far.loss_1e4_what
