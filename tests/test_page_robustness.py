"""Primitives of the robustness page (book/focus_dilution/robustness.py; claims B3, B5, B6, B8, B9, B15) on small
inputs: the sweep's runs and table, the focus-time slope and its detector resolution (B5), the per-run read-outs,
R5's transverse forecast from the end of the first dilution (drive, growing mode, gain; B8, B9) and the escape
rate's domain read from states before the fit (B15), B8's trap rule and B3's criterion."""

import math

import numpy as np
import pytest
import torch

from attnflow import claims
from attnflow.focus_dilution import closed_forms, measure, model, stages, training, transverse
from attnflow.focus_dilution.chain import hub_family


@pytest.fixture(scope="module")
def chain():
    return hub_family(4, 0.5, 0.3, 0.4, 0.4)


# ----------------------------------------------------------------------------- the sweep
def test_sweep_variants_label_chains_and_initializations(chain):
    specs, theta0 = training.sweep_variants(
        chain,
        n_low=4,
        a_h=0.5,
        b_h=0.3,
        c_cyc=0.4,
        delta=0.1,
        init_scales=[1e-3, 1e-2],
        widths=[1, 2],
        deltas=[0.0, 0.4],
        a_h_variants=[0.3],
        b_h_variants=[0.5],
        d_model=8,
        init_scale=1e-3,
        seed=1,
    )
    labels = [s.label for s in specs]
    assert labels == [("ε", 1e-3), ("ε", 1e-2), ("m", 1), ("m", 2), ("δ", 0.0), ("δ", 0.4), ("chain", (0.3, 0.5))]
    assert theta0[2]["W0"].shape[-1] == 1 and theta0[0]["W0"].shape[-1] == 8
    torch.testing.assert_close(theta0[1]["W0"], 10 * theta0[0]["W0"])  # the same draw at every ε
    assert specs[4].chain.P[1, 0] == pytest.approx(hub_family(4, 0.5, 0.3, 0.4, 0.0).P[1, 0])
    assert specs[6].chain.P[0, 0] == pytest.approx(0.3)


def test_variant_rows_and_read_outs_of_a_short_run(short_run):
    detected = stages.detect_run(short_run)
    assert training.by_label([short_run]) == {"short": short_run}
    (row,) = training.variant_rows({("test", "short"): short_run}, {("test", "short"): detected})
    assert row["stages"] == detected.letters() and math.isnan(row["t_focus"]) and math.isnan(row["t_escape"])
    assert row["final_loss"] == pytest.approx(short_run.quantities["loss"][-1])
    assert math.isnan(training.growth_after_dilution(short_run, stages.end_of_dilution(short_run)))  # no dilution
    assert training.first_move(short_run, detected) == 0.0  # no attention move


def test_condensation_read_outs_use_the_end_of_the_detected_condensation(short_run):
    end = 20.0
    detected = stages.Stages([stages.Stage("condensation", 0.0, end, 1, 1.6)], [])
    q = short_run.quantities
    assert training.condensation_growth(short_run, detected) == pytest.approx(
        q["M_fro"][short_run.at(end)] / q["M_fro"][0]
    )
    a = q["amp"][short_run.at(end + 20)]
    assert training.amplitude_spread(short_run, detected) == pytest.approx(a.std() / abs(a.mean()))


# ----------------------------------------------------------------------------- B5: slope and its resolution
def test_focus_slope_in_log_inverse_eps():
    times = {1e-4: 100 + 50 * np.log(1e4), 1e-3: 100 + 50 * np.log(1e3), 1e-2: math.nan, 0.1: 0.0}
    assert training.focus_slope(times, eps_max=1e-2) == pytest.approx(50.0)
    assert math.isnan(training.focus_slope(times, eps_max=5e-4))  # one point only
    assert training.focus_slope(times) != pytest.approx(50.0)  # ε = 0.1 joins the fit


def test_slope_resolution_of_two_scales_is_one_interval_over_their_log_ratio():
    assert training.slope_resolution([1e-4, 1e-3], 10.0) == pytest.approx(10 / math.log(10))
    assert math.isnan(training.slope_resolution([1e-3], 10.0))
    assert math.isnan(training.slope_resolution([1e-3, 1e-3], 10.0))


def test_slope_resolution_bounds_the_slope_error_of_edges_off_by_up_to_one_interval():
    eps, dt, slope = [1e-5, 1e-4, 3e-4, 1e-3], 10.0, 80.0
    bound = training.slope_resolution(eps, dt)
    rng = np.random.default_rng(0)
    worst = 0.0
    for _ in range(2000):
        offset = rng.uniform(0, dt, len(eps))  # each edge late by [0, dt)
        times = {e: 100 + slope * np.log(1 / e) + o for e, o in zip(eps, offset)}
        worst = max(worst, abs(training.focus_slope(times) - slope))
    assert worst <= bound
    assert worst > 0.5 * bound  # the bound is attained, not loose


def test_r2_focus_time_of_the_book_chain_is_within_the_book_horizon():
    """B5's domain reads R2's T₁ + log(1/ε²)/(2g) (parameters only): at the book defaults both ε ≤ 10⁻³ are due
    by η·steps = 4000, ε = 10⁻⁴ (3333) not by 3000."""
    book = hub_family(4, 0.5, 0.3, 0.4, 0.1)
    due = [closed_forms.plateau_time(book, e, 1.0) for e in (1e-4, 1e-3)]
    assert max(due) <= 4000 < max(due) + 700
    assert due[0] > 3000


# ----------------------------------------------------------------------------- B8/B9: transverse drive and mode
def test_drive_on_the_population_rows_is_M_perp(chain):
    theta = model.init_params(chain.d, 3, 0.5, seed=3)
    q = measure.quantities({n: v[None] for n, v in theta.items()}, model.PopulationLoss(chain, 1.0))
    batch = training.stack([training.population_examples(chain)], torch.float64)
    M = transverse.drive({n: v[None] for n, v in theta.items()}, batch)
    np.testing.assert_allclose(M[0], closed_forms.M_perp(q["A"][0], q["P_hat"][0], chain), atol=1e-13)


def test_growing_amplitude_is_the_mean_of_the_two_sides_of_the_mode():
    u = np.array([1.0, 0.0])
    M = np.diag([0.5, 0.1, 0.0])  # top singular pair x = y = e1
    W0 = np.array([[1.0, 0.02], [0.5, 0.0], [0.3, 0.0]])  # transverse side p = 0.02
    W1 = np.array([[0.7, 0.1, 0.2], [0.04, 0.0, 0.0]])  # transverse side q = 0.04
    assert transverse.growing_amplitude(W0, W1, u, M) == pytest.approx(0.03)
    W1[1, 0] = -0.02  # q = −p: only the shrinking mode
    assert transverse.growing_amplitude(W0, W1, u, M) == pytest.approx(0.0, abs=1e-15)


def test_forecast_needs_the_gain_of_a_tenfold_growth_plus_the_margin():
    fc_of = transverse.TransverseForecast
    need = math.log(10 * 0.004 / 0.002)
    fc = fc_of(t_start=100.0, sigma2=0.004, amplitude=0.002, gain=need + transverse.GAIN_MARGIN)
    assert fc.need == pytest.approx(need) and fc.tenfold and fc.predicted
    assert not fc_of(100.0, 0.004, 0.002, need + 0.9 * transverse.GAIN_MARGIN).tenfold
    assert not fc_of(100.0, 0.004, 0.0, 50.0).tenfold  # no growing mode
    linear, _ = fc_of(100.0, 0.02, 0.02, 50.0).conditions()
    assert not linear[1] and not fc_of(100.0, 0.02, 0.02, 50.0).predicted  # σ₂ above 0.01


def test_forecast_reaches_a_level_with_the_margin():
    need = math.log(0.1 / 0.002)
    fc_of = transverse.TransverseForecast
    assert fc_of(100.0, 0.004, 0.002, need + transverse.GAIN_MARGIN).reaches(0.1)
    assert not fc_of(100.0, 0.004, 0.002, need + 0.9 * transverse.GAIN_MARGIN).reaches(0.1)
    assert not fc_of(100.0, 0.004, 0.0, 50.0).reaches(0.1)


def test_forecast_domain_reads_the_state_at_the_forecast():
    fc = transverse.TransverseForecast(t_start=1950.0, sigma2=0.004, amplitude=0.002, gain=10.0)
    dom = transverse.forecast_domain(fc, "C P F D")
    assert dom and dom.latest_state == 1950.0 and transverse.forecast_time(fc) == 1950.0
    assert claims.PARAMETERS not in dom.reads
    none = transverse.forecast_domain(None, "C P")
    assert not none and "θ_c² reached" in none.reason and transverse.forecast_time(None) is None


def test_forecast_of_a_short_run(chain):
    run = training.train_runs(
        [training.RunSpec(chain, training.population_examples(chain), "r")],
        steps=60,
        record_every=5,
        lr=1.0,
        init_scale=0.05,
        d_model=3,
        dtype="float64",
    )[0]
    rows = training.population_examples(chain)
    fc_mid, fc_end, fc_none = transverse.forecast(
        [run, run, run], [30.0, 60.0, math.nan], [rows, rows, None], lr=1.0, record_every=5, device="cpu"
    )
    assert fc_none is None
    assert fc_end.gain == 0.0 and fc_mid.gain > 0.0  # nothing left after the horizon
    assert fc_mid.t_start == 30.0 and fc_mid.sigma2 == pytest.approx(run.quantities["sigma2"][run.at(30.0)])
    assert (
        0.0
        <= fc_mid.amplitude
        <= np.linalg.norm(run.states["W0"][run.at(30.0)].numpy())
        + np.linalg.norm(run.states["W1"][run.at(30.0)].numpy())
    )
    decided = stages.Decision(30.0, stages.Stage("dilution", 10.0, 20.0, 1, 1.5), None, 30.0)  # over at t = 30
    by_key = transverse.forecast_population({"r": run}, {"r": decided}, ["r"], lr=1.0, record_every=5, device="cpu")
    assert by_key["r"].gain == pytest.approx(fc_mid.gain)


# ----------------------------------------------------------------------------- B15: the escape rate's domain
def test_window_rate_outside_when_theta_c2_not_reached(short_run):
    rate, dom, t0 = transverse.window_rate(short_run, stages.end_of_dilution(short_run), None)
    assert not dom and "θ_c² reached" in dom.reason and t0 is None and math.isnan(rate)


def test_window_rate_domain_reads_the_forecast_not_the_window(short_run):
    """Issue 21: with θ_c² 'reached' at t = 20 and a forecast there that predicts σ₂ = 0.1, the run without a
    window is inside the domain and its rate is NaN (the check fails), every state read at or before t0."""
    seen = stages.Stages(
        [stages.Stage("condensation", 0.0, 10.0, 1, 1.6), stages.Stage("dilution", 12.0, 18.0, 1, 1.5)], []
    )
    detected = stages.Decision(20.0, seen.stages[1], seen, 20.0)  # the first dilution seen over at t = 20
    fc = transverse.TransverseForecast(t_start=20.0, sigma2=0.004, amplitude=0.004, gain=10.0)
    rate, dom, t0 = transverse.window_rate(short_run, detected, fc)
    assert dom and math.isnan(rate) and t0 == 20.0 and dom.latest_state <= t0
    weak = transverse.TransverseForecast(t_start=20.0, sigma2=0.004, amplitude=0.004, gain=1.0)
    assert "window's top" in transverse.window_rate(short_run, detected, weak)[1].reason


# ----------------------------------------------------------------------------- B8, B3
@pytest.mark.parametrize(
    "rate, held", [(0.0, True), (8e-6, True), (-3.5e-5, True), (2e-5, False), (1e-3, False), (float("nan"), False)]
)
def test_b8_trapped_is_no_growth(rate, held):
    assert transverse.trapped(rate) is held


def test_b3_criterion_tells_gd_from_adam():
    assert training.aligned_apart([0.99999, 0.916])
    assert not training.aligned_apart([0.998, 0.916]) and not training.aligned_apart([0.99999, 0.995])
    pi = hub_family(4, 0.5, 0.3, 0.4, 0.1).pi
    assert pi.sum() / (np.sqrt(len(pi)) * np.linalg.norm(pi)) <= 0.99  # the book chain is inside B3's domain
