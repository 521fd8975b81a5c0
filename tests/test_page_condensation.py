"""The primitives the page focus_dilution/condensation (stage 1, R1; claims B2, B3, B12) is written with, on
small inputs: the closed-form windows and forecasts, the stage-1 measures of a trajectory, the Jacobian at the
origin with its round-off, the sympy residual count and the figure."""

import numpy as np
import pytest
import sympy as sp

from attnflow.focus_dilution import chain as chains
from attnflow.focus_dilution import closed_forms, figures, measure, model, runs, spectrum, symbolic

SMALL = chains.hub_family(2, 0.5, 0.3, 0.4)  # d = 3: the old report fixture's chain


@pytest.fixture(scope="module")
def small_flow():
    """A stage-1 flow on d = 3, m = 2 (about a second) and its condensation times."""
    mc = model.ModelConfig(d_model=2, init_scale=1e-3, seed=1)
    t_end = closed_forms.condensation_horizon(SMALL, 100.0, mc.init_scale)
    run = runs.population_flow(SMALL, model=mc, t_eval=runs.uniform_times(t_end, 1201), theta0=mc.init(SMALL.d))
    return run, *measure.condensation_times(run)


def test_cubic_rate_bias_predicts_the_measured_bias():
    """The reduced cubic ODE reproduces the fitted-rate biases measured on the flow (book defaults −9.4e-4,
    a d = 3 chain −2.3e-3), from the mode's amplitude √2 s at the window's start, s = √2 σ1 e^{−1.9}."""
    for markov, s1_end, measured in [
        (chains.hub_family(), 0.0934, -9.4e-4),
        (chains.hub_family(2, 0.561, 0.3, 0.023), 0.071, -2.3e-3),
    ]:
        s0 = closed_forms.sigma0(markov)
        t = np.linspace(1.9 / s0, 3.8 / s0, 200)
        mode = np.sqrt(2) * s1_end * np.sqrt(2) * np.exp(-1.9)
        assert closed_forms.cubic_rate_bias(markov, mode, t) == pytest.approx(measured, rel=0.05)
    assert abs(closed_forms.cubic_rate_bias(chains.hub_family(), 1e-6, t)) < 1e-9
    # a window that starts with the mode already large: the page's domain (|bias| ≤ 1.5e-3) excludes it
    assert closed_forms.cubic_rate_bias(chains.hub_family(), 0.5, t) < -1.5e-3


def test_flow_windows_and_horizon():
    markov = chains.hub_family()
    t0, t1 = closed_forms.fit_window_times(markov, [1.9, 3.8])
    assert t0 == pytest.approx(1.9 / closed_forms.sigma0(markov)) and t1 > t0
    assert closed_forms.condensation_horizon(markov, 10.0, 1e-3) == pytest.approx(
        2.5 * closed_forms.escape_time_origin(markov, 1e-3)
    )
    assert closed_forms.condensation_horizon(markov, 500.0, 1e-3) == 500.0
    t = runs.uniform_times(30.0, 7)
    assert t[0] == 0.0 and t[-1] == 30.0 and len(t) == 7


def test_condensation_duration_is_an_upper_forecast(small_flow):
    """log(99²)/(2σ0) bounds the measured t_cond − t_leave from above, by 20–30 % (reference: 37 vs 48)."""
    run, t_leave, t_cond = small_flow
    forecast = closed_forms.condensation_duration(SMALL)
    assert forecast == pytest.approx(np.log(99**2) / (2 * closed_forms.sigma0(SMALL)))
    assert 0.6 * forecast < t_cond - t_leave < forecast


def test_trajectory_stage_measures():
    t = np.arange(6.0)
    y = np.array([2.0, 2.2, 1.0, 3.0, 9.0, 0.0])
    A = np.zeros((6, 2, 2)) + np.array([0.5, 0.5])
    A[3, 1] = [0.4, 0.6]
    run = measure.Trajectory(t=t, quantities={"y": y, "A": A})
    assert run.until("y", 3.2).tolist() == [2.0, 2.2, 1.0, 3.0]
    assert run.max_until("y", 3.0) == 3.0
    assert run.max_rel_change("y", 3.0) == pytest.approx(0.5)
    assert run.max_deviation("A", [0.5, 0.5], 2.0) == 0.0 and run.max_deviation("A", [0.5, 0.5], 3.0) == pytest.approx(
        0.1
    )
    assert run.times_in(1.0, 3.5).tolist() == [1.0, 2.0, 3.0]


def test_condensation_times_and_the_rates_of_a_small_flow(small_flow):
    run, t_leave, t_cond = small_flow
    gap = np.log(SMALL.d) - SMALL.unigram_entropy()
    assert 0 < t_leave < t_cond < run.t[-1]
    assert run.value("loss", t_cond) < SMALL.unigram_entropy() + 0.011 * gap
    sigma0 = closed_forms.sigma0(SMALL)
    t0, t1 = closed_forms.fit_window_times(SMALL, [1.9, 3.8])
    rel = run.rate("mode0", t0, t1) / sigma0 - 1
    bias = closed_forms.cubic_rate_bias(SMALL, run.value("mode0", t0), run.times_in(t0, t1))
    assert -1e-3 < bias < 0 and abs(rel - bias) < 5e-4  # the forecast bias is the measured one


def test_frozen_attention_bounds_hold_on_a_small_flow(small_flow):
    """The page's bounds: ‖W_Q‖, ‖W_K‖ within e^{|g|Δt₁} − 1 and A within 2‖W_QW_Kᵀ(0)‖_F max|∂κA(θ_c¹)| of π."""
    run, _, t_cond = small_flow
    qk_bound = np.exp(abs(closed_forms.g_rate(SMALL)) * closed_forms.condensation_duration(SMALL)) - 1
    growth = max(run.max_rel_change("WQ_fro", t_cond), run.max_rel_change("WK_fro", t_cond))
    assert growth < qk_bound
    A_tol = 2 * run.value("M_fro", 0.0) * np.abs(closed_forms.dkappa_A(SMALL)).max()
    assert run.max_deviation("A", SMALL.pi, t_cond) < A_tol


@pytest.mark.parametrize("m", [1, 2, 8])
def test_origin_blocks_spectrum_within_roundoff(m):
    """At θ = 0: eigenvalues ±σ0 (m each) and 0 within ROUNDOFF_ULPS·u·‖J‖₂, attention rows exactly zero;
    the largest error seen on chains d = 3–7 is below 30 u‖J‖₂ (the tolerance's margin)."""
    for markov in [
        chains.hub_family(),
        chains.hub_family(2, 0.35, 0.45, 0.1),
        *[chains.dirichlet_chain(d, 1) for d in (3, 6)],
    ]:
        blocks = spectrum.origin_blocks(model.PopulationLoss(markov), m)
        assert blocks.n_params == 2 * markov.d * m + 2 * m * m
        err = blocks.eig_error(closed_forms.origin_spectrum(markov, m))
        assert err <= 0.3 * blocks.roundoff
        assert blocks.roundoff == pytest.approx(
            spectrum.ROUNDOFF_ULPS * np.finfo(float).eps * closed_forms.sigma0(markov)
        )
        assert blocks.attention_rows_max == 0.0
    wrong = closed_forms.origin_spectrum(markov, m) * 1.02  # the power test's mutant
    assert blocks.eig_error(wrong) > 1e3 * blocks.roundoff


def test_count_nonzero_counts_entries():
    x = sp.Symbol("x")
    zero = sp.sin(x) ** 2 + sp.cos(x) ** 2 - 1
    assert symbolic.count_nonzero(zero, [zero, x], sp.Matrix([[zero, x, x]])) == 3
    origin = symbolic.origin_linearization(3)
    assert symbolic.count_nonzero(origin.residual, origin.extras["sigma0_residual"]) == 0
    assert origin.rank == 1 and origin.score_grad_order == 1 and origin.wall_s > 0


def test_condensation_figure(small_flow):
    run, t_leave, t_cond = small_flow
    t0, t1 = closed_forms.fit_window_times(SMALL, [1.9, 3.8])
    fig = figures.condensation_stage(run, t_leave, t_cond, (t0, t1), closed_forms.sigma0(SMALL), title="small")
    assert len(fig.axes) == 3 and fig.axes[0].get_ylabel() == "population loss"
