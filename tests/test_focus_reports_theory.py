"""The one focus–dilution model (ModelConfig, forward/loss for population, counts and sequences), the
page schemas and small helpers, on small inputs — not only smoke runs of the pages (the focus page's
primitives: tests/test_page_focus.py)."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attnflow import claims, plotting
from attnflow.focus_dilution import chain as chains
from attnflow.focus_dilution import closed_forms, contracts, model
from attnflow.focus_dilution.targets import half_unit
from attnflow.params import ParameterError

CHAIN = dict(chain="hub", n_low=4, a_h=0.5, b_h=0.3, c_cyc=0.4, delta=0.0, chain_seed=0)
MODEL = dict(d_model=8, init_scale=1e-3, score_scale=1.0, seed=1)


def _cfg(schema, **over):
    base = {**CHAIN, **MODEL}
    extra = {
        "focus_dilution/condensation": dict(horizon=300.0, fit_window=[1.9, 3.8], euler_dt=0.05),
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
    out, bare = model.forward(theta, seq), model.forward(theta, batch[:, :-1])  # a bare (B, s) context tensor
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
    theta = {
        "W0": torch.outer(torch.as_tensor(c1.a), u),
        "WQ": kappa * uu,
        "WK": uu,
        "W1": torch.outer(u, torch.as_tensor(c1.b)),
    }
    (dL,) = torch.autograd.grad(loss(theta), kappa)
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
    assert np.allclose(
        model.PopulationGrad(markov, mc.d_model, mc.score_scale)(flat),
        np.concatenate([g.numpy().ravel() for g in grads]),
        rtol=1e-10,
        atol=1e-14,
    )


def test_half_unit_takes_the_digits():
    assert half_unit(5) == 0.5e-5 and half_unit(0) == 0.5
    with pytest.raises(TypeError):
        half_unit(0.09551, 5)  # the old two-argument form (its value was ignored) is gone
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


# ---- small helpers of the pages -------------------------------------------------------------------


def test_shade_stages():
    spans = []
    ax = SimpleNamespace(axvspan=lambda t0, t1, **kw: spans.append((t0, t1, kw["color"])))
    plotting.shade_stages(ax, [("condensation", 0, 10), ("plateau", 10, 10), ("focus", 5, np.nan)])
    assert [s[:2] for s in spans] == [(0, 10)]
    with pytest.raises(ValueError, match="unknown stage"):
        plotting.shade_stages(ax, [("nope", 0, 1)])
