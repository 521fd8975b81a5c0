"""The one focus–dilution model (ModelConfig, forward/loss for population, counts and sequences) and
the reports of the theory pages condensation, unigram_saddle and focus, on small inputs: their
measurements, derived windows, domains and claims — not only smoke runs of the pages."""
import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attnflow import claims, plotting
from attnflow.focus_dilution import chain as chains
from attnflow.focus_dilution import closed_forms, contracts, model
from attnflow.focus_dilution.reports import condensation, focus, unigram_saddle
from attnflow.focus_dilution.targets import half_unit
from attnflow.params import ParameterError

CHAIN = dict(chain="hub", n_low=4, a_h=0.5, b_h=0.3, c_cyc=0.4, delta=0.0, chain_seed=0)
MODEL = dict(d_model=8, init_scale=1e-3, score_scale=1.0, seed=1)
# a small hub chain whose attention mode is inside every flow domain (2|g| = 0.011 ≤ λ_c/4, probed)
GOOD_CHAIN = dict(n_low=5, a_h=0.495, b_h=0.271, c_cyc=0.275)


def _cfg(schema, **over):
    base = {**CHAIN, **MODEL}
    extra = {
        "focus_dilution/condensation": dict(horizon=300.0, fit_window=[1.9, 3.8], euler_dt=0.05),
        "focus_dilution/unigram_saddle": dict(horizon=1500.0, kappa_window=[2.0, 3.5], random_d=6, random_seed=0,
                                              random_horizon=600.0),
        "focus_dilution/focus": dict(horizon=2500.0, a_h_violating=0.1, b_h_violating=0.5),
    }[schema.key]
    return schema.validate({**base, **extra, **over})


@pytest.fixture()
def ledger(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNFLOW_CLAIMS_DIR", str(tmp_path))
    claims.begin_page("focus_dilution/test", {})
    yield
    claims.begin_page("focus_dilution/test", {})


# ---- the one model ---------------------------------------------------------------------------------

def test_model_config_from_cfg_and_init_match_the_loose_calls():
    cfg = SimpleNamespace(d_model=5, init_scale=0.01, score_scale=0.7, seed=3, horizon=1.0)
    mc = model.ModelConfig.from_cfg(cfg)
    assert mc == model.ModelConfig(5, 0.01, 0.7, 3)
    th, th_old = mc.init(4), model.init_params(4, 5, 0.01, 3)
    assert all(torch.equal(th[n], th_old[n]) for n in model.PARAM_NAMES)
    assert mc.with_(init_scale=1e-3).init_scale == 1e-3 and mc.init_scale == 0.01


def test_forward_population_and_counts_agree():
    markov = chains.dirichlet_chain(5, seed=4)
    theta = model.ModelConfig(d_model=3, init_scale=0.4, seed=2).init(markov.d)
    P, pi = markov.tensors()
    L_fast = model.PopulationLoss(markov, 0.8)(theta)
    assert float(model.loss(theta, markov, 0.8)) == float(L_fast)
    # counts with n_k = π_k for every query token and target weights Π P: the population loss
    counts = model.Counts(torch.arange(markov.d), torch.log(pi).expand(markov.d, -1), pi[:, None] * P)
    assert torch.allclose(model.loss(theta, counts, 0.8), L_fast, rtol=1e-12, atol=0)
    out = model.forward(theta, counts, 0.8)
    pop = model.forward(theta, model.Population(P, pi), 0.8)
    assert torch.allclose(out.attention, pop.attention, rtol=1e-12, atol=1e-15)
    assert float(model.cross_entropy(pop, markov)) == float(model.loss(theta, markov, 0.8))
    # batched over a leading axis of θ (a trajectory)
    T = {n: torch.stack([v, 0.5 * v]) for n, v in theta.items()}
    assert model.loss(T, markov, 0.8).shape == (2,)
    assert model.forward(T, counts, 0.8).attention.shape == (2, markov.d, markov.d)


def test_forward_sequences_tends_to_the_population_loss():
    markov = chains.hub_family(3, 0.6, 0.3, 0.2)
    theta = model.ModelConfig(d_model=3, init_scale=0.5, seed=0).init(markov.d)
    batch = chains.sample_sequences(markov, 4000, 200, generator=torch.Generator().manual_seed(0))
    seq = model.Sequences(batch)
    out, bare = model.forward(theta, seq), model.forward(theta, batch[:, :-1])      # a bare (B, s) context tensor
    assert torch.equal(out.logits, bare.logits) and torch.equal(out.attention, bare.attention)
    assert float(model.loss(theta, seq)) == float(model.cross_entropy(out, seq))
    assert abs(float(model.loss(theta, seq)) - float(model.loss(theta, markov))) < 0.05


def test_counts_loss_needs_targets():
    markov = chains.hub_family()
    theta = model.ModelConfig(d_model=2).init(markov.d)
    with pytest.raises(ValueError, match="targets"):
        model.loss(theta, model.Counts(torch.arange(markov.d), torch.zeros(markov.d, markov.d)))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(d=st.integers(3, 7), seed=st.integers(0, 10_000), c=st.floats(0.2, 3.0))
def test_property_closed_form_g_is_minus_dL_dkappa_by_autograd(d, seed, c):
    """g = −∂_κ L(θ_c¹) (claim B5's closed form) equals autograd on the real model, any valid chain."""
    markov = chains.dirichlet_chain(d, seed=seed)
    c1 = closed_forms.theta_c1(markov)
    loss = model.PopulationLoss(markov, c)
    kappa = torch.tensor(0.0, dtype=torch.float64, requires_grad=True)
    u = torch.zeros(3, dtype=torch.float64)
    u[0] = 1.0
    uu = torch.outer(u, u)
    theta = {"W0": torch.outer(torch.as_tensor(c1.a), u), "WQ": kappa * uu, "WK": uu,
             "W1": torch.outer(u, torch.as_tensor(c1.b))}
    dL, = torch.autograd.grad(loss(theta), kappa)
    g = closed_forms.g_rate(markov, c)
    assert np.isclose(-float(dL), g, rtol=1e-9, atol=1e-13)


@settings(max_examples=20, deadline=None)
@given(n=st.integers(2, 8), a_h=st.floats(0.05, 0.95), b_h=st.floats(0.05, 0.6), c_cyc=st.floats(0.0, 0.9))
def test_property_closed_form_gradient_equals_autograd_on_the_hub_family(n, a_h, b_h, c_cyc):
    markov = chains.hub_family(n, a_h, b_h, c_cyc)
    mc = model.ModelConfig(d_model=3, init_scale=0.3, score_scale=0.9, seed=n)
    theta = {k: v.requires_grad_(True) for k, v in mc.init(markov.d).items()}
    grads = torch.autograd.grad(mc.population_loss(markov)(theta), list(theta.values()))
    flat = np.concatenate([v.detach().numpy().ravel() for v in theta.values()])
    assert np.allclose(mc.population_grad(markov)(flat), np.concatenate([g.numpy().ravel() for g in grads]),
                       rtol=1e-10, atol=1e-14)


def test_half_unit_takes_the_digits():
    assert half_unit(5) == 0.5e-5 and half_unit(0) == 0.5
    with pytest.raises(TypeError):
        half_unit(0.09551, 5)            # the old two-argument form (its value was ignored) is gone
    for bad in (-1, 2.5, True):
        with pytest.raises(ValueError):
            half_unit(bad)


# ---- schema rules ----------------------------------------------------------------------------------

def test_condensation_fit_window_rules_are_in_the_schema():
    assert _cfg(contracts.CONDENSATION).fit_window == [1.9, 3.8]
    with pytest.raises(ParameterError, match=r"fit_window\[0\] < fit_window\[1\]"):
        _cfg(contracts.CONDENSATION, fit_window=[3.8, 1.9])
    with pytest.raises(ParameterError, match="ends within the flow"):
        _cfg(contracts.CONDENSATION, fit_window=[1.9, 49.0])


def test_unigram_saddle_kappa_window_must_be_ordered():
    with pytest.raises(ParameterError, match=r"kappa_window\[0\] < kappa_window\[1\]"):
        _cfg(contracts.UNIGRAM_SADDLE, kappa_window=[3.5, 2.0])


# ---- small helpers of the reports ------------------------------------------------------------------

def test_contraction_rate_and_window_rate():
    assert unigram_saddle.contraction_rate(np.array([-0.3, -0.02, 0.0, 1e-12])) == pytest.approx(0.02)
    assert unigram_saddle.contraction_rate(np.zeros(3)) == np.inf
    markov = chains.hub_family()
    floor = 5 * 1e-3 * closed_forms.sigma0(markov)
    assert unigram_saddle.window_rate(markov, 1e-7, 1e-3) == pytest.approx(floor)
    assert unigram_saddle.window_rate(markov, -0.01, 1e-3) == 0.01


def test_unigram_saddle_exercise_criterion():
    from types import SimpleNamespace
    rep = SimpleNamespace(g_numeric=0.25)
    matches = unigram_saddle.UnigramSaddleReport.matches_g
    assert matches(rep, 0.25) and matches(rep, -0.25 * (1 + 5e-9)) and matches(rep, np.float64(0.25))
    assert not matches(rep, 0.25 * (1 + 2e-8)) and not matches(rep, 0.5)


def test_sign_pattern_and_shade_stages():
    markov = chains.hub_family()
    g, dA = closed_forms.g_rate(markov), closed_forms.dkappa_A(markov)
    assert focus.sign_pattern_ok(1e-3 * dA, markov, g, dA)
    assert not focus.sign_pattern_ok(-1e-3 * dA, markov, g, dA)
    spans = []
    ax = SimpleNamespace(axvspan=lambda t0, t1, **kw: spans.append((t0, t1, kw["color"])))
    plotting.shade_stages(ax, [("condensation", 0, 10), ("plateau", 10, 10), ("focus", 5, np.nan)])
    assert [s[:2] for s in spans] == [(0, 10)]
    with pytest.raises(ValueError, match="unknown stage"):
        plotting.shade_stages(ax, [("nope", 0, 1)])


def test_cubic_rate_bias_predicts_the_measured_bias():
    """The reduced cubic ODE reproduces the fitted-rate biases measured on the flow (book defaults −9.4e-4,
    a d = 3 chain −2.3e-3): amplitudes s0 = √2 σ1 e^{−1.9} at the window's start."""
    for markov, s1_end, measured in [(chains.hub_family(), 0.0934, -9.4e-4),
                                     (chains.hub_family(2, 0.561, 0.3, 0.023), 0.071, -2.3e-3)]:
        s0 = closed_forms.sigma0(markov)
        t = np.linspace(1.9 / s0, 3.8 / s0, 200)
        assert condensation.cubic_rate_bias(markov, s1_end * np.sqrt(2) * np.exp(-1.9), t) == pytest.approx(measured, rel=0.05)
    assert abs(condensation.cubic_rate_bias(chains.hub_family(), 1e-6, t)) < 1e-9


def test_flow_windows():
    markov = chains.hub_family()
    t0, t1 = condensation.fit_window_times(markov, [1.9, 3.8])
    assert t0 == pytest.approx(1.9 / closed_forms.sigma0(markov)) and t1 > t0
    assert condensation.flow_end(markov, 10.0, 1e-3) == pytest.approx(2.5 * closed_forms.escape_time_origin(markov, 1e-3))
    assert focus.focus_flow_end(chains.hub_family(a_h=0.3001, b_h=0.3), 2500.0, 1e-3, 1.0) == focus.T_MAX


# ---- the reports on small inputs -------------------------------------------------------------------

@pytest.fixture(scope="module")
def cond_small():
    cfg = _cfg(contracts.CONDENSATION, d_model=2, horizon=100.0, euler_dt=0.2, n_low=2)
    return condensation.condensation_report(cfg)


def test_condensation_report_measures_sigma0_and_its_domains(cond_small, ledger):
    rep = cond_small
    assert rep.rate_mode == pytest.approx(rep.sigma0, rel=5e-3)
    assert rep.linear_window() and rep.frozen_attention()
    rep.check_claims()
    assert not [r for r in claims.records() if r["verdict"] == "fail"]
    # outside the linear regime (a window that ends after the cubic terms matter): outside, not fail
    late = dataclasses.replace(rep, sigma1_end=0.5, linear_bias=-1e-2)
    assert not late.linear_window() and "σ1(W0)" in late.linear_window().reason
    claims.begin_page("focus_dilution/test", {})
    late.check_claims()
    recs = claims.records()
    assert {r["verdict"] for r in recs if "growth rate" in r["what"]} == {"outside"}
    assert rep.figures()[0].axes


def test_condensation_fast_attention_mode_and_large_noise_are_outside(cond_small):
    fast = dataclasses.replace(cond_small, qk_bound=0.9)
    assert not fast.frozen_attention()
    assert -1e-3 < cond_small.linear_bias < 0 and abs(cond_small.rel_rate - cond_small.linear_bias) < 5e-4
    assert cond_small.noise_tilt == pytest.approx(1e-3 * np.sqrt(3 * 2))


@pytest.fixture(scope="module")
def focus_small():
    cfg = _cfg(contracts.FOCUS, d_model=2, horizon=10.0, **GOOD_CHAIN)
    return focus.focus_report(cfg)


def test_focus_report_measures_the_tilt(focus_small, ledger):
    rep = focus_small
    assert rep.g > 0 and rep.most_tilted_query == rep.most_frequent
    assert rep.dA_err < 1e-6
    assert list(rep.gainers) == [rep._chain.hub]
    rep.check_claims()
    assert not [r for r in claims.records() if r["verdict"] == "fail"]
    fast = dataclasses.replace(rep, lambda_c=rep.g)       # a mode as fast as the contraction
    assert not fast.plateau_reached() and not fast.onset_linear()
    late = dataclasses.replace(rep, amp_drift_onset=0.5)  # the onset after the redistribution began
    assert late.plateau_reached() and not late.onset_linear() and "απ" in late.onset_linear().reason
    claims.begin_page("focus_dilution/test", {})
    late.check_claims()
    assert {r["verdict"] for r in claims.records() if "onset of focus" in r["what"]} == {"outside"}
    assert len(rep.figures()[0].axes) >= 6


def test_unigram_saddle_report_small(ledger):
    cfg = _cfg(contracts.UNIGRAM_SADDLE, d_model=2, random_d=3, random_horizon=300.0, **GOOD_CHAIN)
    rep = unigram_saddle.unigram_saddle_report(cfg)
    assert rep.g_numeric == pytest.approx(abs(rep.g), rel=1e-8)
    rep.check_claims()
    assert not [r for r in claims.records() if r["verdict"] == "fail"]
    slow_contraction = dataclasses.replace(rep, lambda_c=abs(rep.g))
    assert not slow_contraction.plateau_reached() and not slow_contraction.mode_resolvable()
    tiny = dataclasses.replace(rep, g_eff_rel=1e-4)
    assert not tiny.scaling_resolved() and "5e-3" in tiny.scaling_resolved().text.replace("0.005", "5e-3")
    assert len(rep.figures()[0].axes) >= 6
