"""The primitives the focus page (book/focus_dilution/focus.py, stage 2, spec R3, claim B6) calls, on small
inputs: the rank-one attention and its central difference, the amplitudes' response to κ and the
forecasts made from it (the onset of focus, the slope bias of the linear window), the linear window
and the onset measures, the domains, and the figure."""

import numpy as np
import pytest
import torch
from scipy.integrate import solve_ivp

from attnflow import claims
from attnflow.focus_dilution import chain as chains
from attnflow.focus_dilution import closed_forms, figures, measure, model, runs, spectrum

REFERENCE = chains.hub_family(4, 0.5, 0.3, 0.4, 0.0)  # the spec's chain
VIOLATING = chains.hub_family(4, 0.1, 0.5, 0.4, 0.0)  # the page's counter-example, g < 0
ATLAS_DIRICHLET = chains.dirichlet_chain(6, seed=566520)  # the atlas run whose onset signs flipped (errata)


def _response(chain, m=8):
    g = closed_forms.g_rate(chain)
    return g, spectrum.amplitude_response(model.ModelConfig(m, 1e-3, 1.0, 1).population_loss(chain), m, g)


def test_rank_one_attention_is_the_models_attention_on_the_manifold():
    rng = np.random.default_rng(0)
    chain = chains.dirichlet_chain(5, seed=3)
    for kappa in (-0.7, 0.0, 0.3):
        a, b = rng.normal(size=5), rng.normal(size=5)
        A_model = model.forward(model.rank_one_params(a, b, kappa, 3), chain, 0.8).attention.numpy()
        assert np.allclose(closed_forms.rank_one_attention(chain, a, kappa, 0.8), A_model, atol=1e-12)
    batch = closed_forms.rank_one_attention(chain, np.stack([a, 2 * a]), np.array([0.1, 0.2]), 0.8)
    assert batch.shape == (2, 5, 5) and np.allclose(batch[1], closed_forms.rank_one_attention(chain, 2 * a, 0.2, 0.8))


def test_central_difference_and_rel_error():
    fd = spectrum.attention_tilt_fd(REFERENCE, 4, 1.0, h=1e-6)
    assert measure.rel_error(fd, closed_forms.dkappa_A(REFERENCE)) < 1e-6
    assert measure.rel_error(np.array([1.0, 2.0]), np.array([1.0, 4.0])) == 0.5


def test_amplitude_response_follows_the_reduced_flow():
    """Integrate the embedding of 𝓜₁ under a prescribed κ(t) = sign(g) 10⁻⁴ e^{2|g|t} from θ_c¹: the amplitudes
    follow απ + κ·da/dκ (the neutral part accumulates as κ/2|g|) to a few per cent of their motion (about
    220 gradient evaluations)."""
    chain, m = REFERENCE, 2
    g, r = _response(chain, m)
    loss = model.ModelConfig(m, 1e-3, 1.0, 1).population_loss(chain)
    c1, d = closed_forms.theta_c1(chain), chain.d
    u = torch.zeros(m, dtype=torch.float64)
    u[0] = 1.0
    uu = torch.outer(u, u)

    def rhs(t, x):
        x = torch.as_tensor(x, dtype=torch.float64).requires_grad_(True)
        kappa = np.sign(g) * 1e-4 * np.exp(2 * abs(g) * t)
        L = loss({"W0": torch.outer(x[:d], u), "WQ": kappa * uu, "WK": uu, "W1": torch.outer(u, x[d:])})
        return -torch.autograd.grad(L, x)[0].numpy()

    t_end = np.log(0.01 / 1e-4) / (2 * abs(g))  # κ reaches 0.01
    sol = solve_ivp(rhs, (0, t_end), np.r_[c1.a, c1.b], method="LSODA", rtol=1e-7, atol=1e-9)
    moved = sol.y[:d, -1] - c1.a  # κ has moved by 0.01 − 10⁻⁴
    # the contracting directions lag behind κ by O(2|g|/λ_c) of their share (0.095 here; measured 0.048)
    lam = spectrum.contraction_at_theta_c1(loss, m, g)
    assert np.abs(moved - 0.0099 * r).max() <= 2 * abs(g) / lam * np.abs(moved).max()


def test_onset_forecast_on_the_reference_and_violating_chains():
    # the flows at book defaults: onset at κ = 0.0562 with drift 0.101 (reference), κ = −0.0627 with
    # drift 0.144 (violating); the forecast is made from the parameters alone
    for chain, kappa_flow, drift_flow in ((REFERENCE, 0.0562, 0.101), (VIOLATING, -0.0627, 0.144)):
        g, r = _response(chain)
        fc = closed_forms.onset_forecast(chain, r, g)
        assert np.sign(fc.kappa) == np.sign(g) and abs(fc.kappa / kappa_flow - 1) < 0.1
        assert abs(fc.drift / drift_flow - 1) < 0.15
        assert fc.signs_kept and fc.most_tilted_query == chain.hub
        assert np.abs(fc.A - chain.pi).max() == pytest.approx(closed_forms.ONSET, rel=0.01)
        assert np.sign(fc.hub_rise) == np.sign(g) and np.sign(fc.entropy_fall) == np.sign(g)


def test_onset_forecast_puts_the_atlas_sign_flip_outside():
    g, r = _response(ATLAS_DIRICHLET, 4)
    fc = closed_forms.onset_forecast(ATLAS_DIRICHLET, r, g)
    assert np.isfinite(fc.kappa) and not fc.signs_kept  # key 0 (π_0 − ‖π‖² = −0.003) flips, as on the flow
    never = closed_forms.onset_forecast(REFERENCE, np.zeros(5), 0.0028, threshold=2.0)  # A cannot leave π by 2
    assert np.isnan(never.kappa) and not never.signs_kept and np.isnan(never.most_tilted_query)


def test_focus_signs_kept_follows_the_visited_amplitudes():
    markov = ATLAS_DIRICHLET
    pi = markov.pi
    g, dA = closed_forms.g_rate(markov, 1.0), closed_forms.dkappa_A(markov, 1.0)
    assert closed_forms.focus_signs_kept(markov, closed_forms.theta_c1(markov).a, np.sign(g) * 0.1, g, dA)
    # the atlas run's onset amplitudes (drift 0.14): a_0 − πᵀa changed sign, key 0 flips for every query
    onset = np.array([0.86707624, 0.35318839, 1.0894271, 1.03252075, 0.16551134, 0.24732406])
    assert np.sign(pi[0] - (pi**2).sum()) != np.sign(onset[0] - pi @ onset)
    assert not closed_forms.focus_signs_kept(markov, onset, -0.115, g, dA)


def test_slope_bias_forecast():
    g, r = _response(REFERENCE)
    bias = closed_forms.slope_bias_forecast(REFERENCE, r, g, abs(g) / 4, 1e-3)
    assert 2e-3 < bias < 5e-3  # the flow's slope errors at book defaults: 3.2e-3 (visited), 2.0e-3 (closed form)
    # first order: the bias shrinks in proportion to the window
    small = closed_forms.slope_bias_forecast(REFERENCE, r, g, abs(g) / 40, 1e-3)
    assert small == pytest.approx(bias / 10, rel=0.2)


def test_linear_window_is_contiguous_and_the_fit_needs_three_times():
    t = np.arange(10.0)
    kappa = np.array([5, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 0.5, 0.3, 7])  # back through |κ| ≤ 1 at t = 7, 8
    window = measure.linear_window(t, kappa, 1.0, after=0.5)
    assert list(np.flatnonzero(window)) == [1, 2, 3, 4]
    A = np.zeros((10, 2, 2)) + np.array([0.5, 0.5]) + 0.01 * kappa[:, None, None] * np.array([[1, -1], [1, -1]])
    slope = measure.linear_response(A, np.array([0.5, 0.5]), kappa, 1.0, after=window)
    assert np.allclose(slope, 0.01 * np.array([[1, -1], [1, -1]]))
    assert np.isnan(measure.linear_response(A, np.array([0.5, 0.5]), kappa, 0.05)).all()


def test_sign_pattern_most_tilted_query_and_onset_gain():
    markov = REFERENCE
    g, dA = closed_forms.g_rate(markov), closed_forms.dkappa_A(markov)
    assert measure.sign_pattern_ok(1e-3 * dA, markov, g, dA)
    assert not measure.sign_pattern_ok(-1e-3 * dA, markov, g, dA)
    assert not measure.sign_pattern_ok(np.full_like(dA, np.nan), markov, g, dA)
    assert measure.most_tilted_query(1e-3 * dA, markov.hub, g) == markov.hub
    assert np.isnan(measure.most_tilted_query(np.full_like(dA, np.nan), markov.hub, g))
    assert list(markov.rare) == [1, 2, 3, 4]


@pytest.fixture(scope="module")
def short_flow():
    """A short flow (condensation only) of the reference chain on the page's time grid."""
    return runs.focus_flow(REFERENCE, model.ModelConfig(2, 1e-3, 1.0, 1), 40.0, n_coarse=2500)


def test_focus_flow_onset_gain_and_figure(short_flow):
    run = short_flow
    assert run.t[-1] == pytest.approx(40.0) and np.all(np.diff(run.t) <= 1.0 + 1e-12)
    t_onset = measure.attention_onset(run.t, run.quantities["A"], REFERENCE.pi, closed_forms.ONSET)
    assert np.isnan(t_onset) and np.isnan(measure.onset_gain(run, t_onset)).all()  # attention frozen
    assert np.abs(measure.onset_gain(run, 10.0)).max() < 1e-4
    dA = closed_forms.dkappa_A(REFERENCE)
    fig = figures.focus_stage(run, run, 20.0, np.nan, np.nan, np.nan, dA, dA, 0.003, -0.003)
    assert len(fig.axes) == 6


def test_focus_horizon_and_domain():
    flat = chains.hub_family(a_h=0.3001, b_h=0.3)  # g ≈ 0: the cap
    assert closed_forms.focus_horizon(flat, 2500.0, 1e-3, 1.0) == closed_forms.FOCUS_T_MAX
    t_end = closed_forms.focus_horizon(REFERENCE, 2500.0, 1e-3)
    assert t_end == pytest.approx(1.35 * closed_forms.plateau_time(REFERENCE, 1e-3))
    g = closed_forms.g_rate(REFERENCE)
    lam = spectrum.contraction_at_theta_c1(model.ModelConfig(4, 1e-3, 1.0, 1).population_loss(REFERENCE), 4, g)
    assert 0.05 < lam < 0.07
    assert spectrum.focus_domain(REFERENCE, g, lam, 1e-3, 1.0, t_end)
    short = spectrum.focus_domain(REFERENCE, g, lam, 1e-3, 1.0, 1000.0)
    assert not short and "within the flow" in short.reason
    fast = spectrum.focus_domain(REFERENCE, g, 4 * g, 1e-3, 1.0, t_end)  # a mode as fast as the contraction
    assert not fast and "λ_c" in fast.reason and isinstance(fast, claims.Domain)
    assert spectrum.focus_within_flow(REFERENCE, 1e-3, 1.0, t_end)  # the same flow, without the plateau condition
