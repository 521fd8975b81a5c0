"""Domains of the robustness page's claims (issue 11) on small inputs: the detector resolution of the
plateau slope (B5), which focus signal starts a run's first focus, the transverse drive of the rows a run
trains on, the amplitude of its growing mode and the tenfold-growth forecast of B8/B9."""
import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from attnflow.focus_dilution import closed_forms, measure, model, training
from attnflow.focus_dilution.chain import hub_family
from attnflow.focus_dilution.reports import robustness


# ----------------------------------------------------------------------------- B5: slope resolution
def test_slope_resolution_of_two_scales_is_one_interval_over_their_log_ratio():
    assert robustness.slope_resolution([1e-4, 1e-3], 10.0) == pytest.approx(10 / math.log(10))
    assert math.isnan(robustness.slope_resolution([1e-3], 10.0))
    assert math.isnan(robustness.slope_resolution([1e-3, 1e-3], 10.0))


def test_slope_resolution_bounds_the_slope_error_of_edges_off_by_up_to_one_interval():
    eps, dt, slope = [1e-5, 1e-4, 3e-4, 1e-3], 10.0, 80.0
    bound = robustness.slope_resolution(eps, dt)
    rng = np.random.default_rng(0)
    worst = 0.0
    for _ in range(2000):
        offset = rng.uniform(0, dt, len(eps))                          # each edge late by [0, dt)
        t = [100 + slope * np.log(1 / e) + o for e, o in zip(eps, offset)]
        worst = max(worst, abs(robustness.focus_slope(list(zip(eps, t))) - slope))
    assert worst <= bound
    assert worst > 0.5 * bound                                          # the bound is attained, not loose


# ----------------------------------------------------------------------------- B5: which signal starts the focus
def _fake_run(hub_rise: float, low_rise: float):
    t = np.linspace(0.0, 1000.0, 501)
    sig = lambda t0: 1 / (1 + np.exp(-(t - t0) / 15))                    # noqa: E731
    return SimpleNamespace(t=t, train_loss=1.6 - 0.1 * sig(50.0), quantities={"sigma2": np.full_like(t, 1e-3)},
                           data_hub_attention=0.5 + hub_rise * sig(600.0), data_low_hub_attention=0.3 + low_rise * sig(450.0),
                           chain=None)


@pytest.mark.parametrize("hub, low, expected", [(0.05, 0.03, "low_hub"), (0.05, 0.004, "hub"), (0.004, 0.003, "")])
def test_focus_signal_names_the_signal_whose_rise_comes_first(hub, low, expected):
    assert robustness.focus_signal(_fake_run(hub, low)) == expected


# ----------------------------------------------------------------------------- B8/B9: transverse drive and mode
@pytest.fixture(scope="module")
def chain():
    return hub_family(4, 0.5, 0.3, 0.4, 0.4)


def test_drive_on_the_population_rows_is_M_perp(chain):
    theta = model.init_params(chain.d, 3, 0.5, seed=3)
    q = measure.quantities({n: v[None] for n, v in theta.items()}, model.PopulationLoss(chain, 1.0))
    batch = training.stack([training.population_examples(chain)], torch.float64)
    M = robustness.drive({n: v[None] for n, v in theta.items()}, batch)
    np.testing.assert_allclose(M[0], closed_forms.M_perp(q["A"][0], q["P_hat"][0], chain), atol=1e-13)


def test_growing_amplitude_is_the_mean_of_the_two_sides_of_the_mode():
    u = np.array([1.0, 0.0])
    M = np.diag([0.5, 0.1, 0.0])                                        # top singular pair x = y = e1
    W0 = np.array([[1.0, 0.02], [0.5, 0.0], [0.3, 0.0]])               # transverse side p = 0.02
    W1 = np.array([[0.7, 0.1, 0.2], [0.04, 0.0, 0.0]])                 # transverse side q = 0.04
    assert robustness.growing_amplitude(W0, W1, u, M) == pytest.approx(0.03)
    W1[1, 0] = -0.02                                                    # q = −p: only the shrinking mode
    assert robustness.growing_amplitude(W0, W1, u, M) == pytest.approx(0.0, abs=1e-15)


def test_forecast_needs_the_gain_of_a_tenfold_growth_plus_the_margin():
    need = math.log(10 * 0.004 / 0.002)
    fc = robustness.TransverseForecast(t_start=100.0, sigma2=0.004, amplitude=0.002, gain=need + robustness.GAIN_MARGIN)
    assert fc.need == pytest.approx(need) and fc.tenfold and all(h for _, h, _ in fc.conditions())
    assert not robustness.TransverseForecast(100.0, 0.004, 0.002, need + 0.9 * robustness.GAIN_MARGIN).tenfold
    assert not robustness.TransverseForecast(100.0, 0.004, 0.0, 50.0).tenfold                   # no growing mode
    linear, _ = robustness.TransverseForecast(100.0, 0.02, 0.02, 50.0).conditions()
    assert not linear[1]                                                                         # σ₂ above 0.01


def test_forecast_of_a_short_run(chain):
    run = training.train_runs([training.RunSpec(chain, training.population_examples(chain), "r")], steps=60,
                              record_every=5, lr=1.0, init_scale=0.05, d_model=3, dtype="float64")[0]
    cfg = SimpleNamespace(lr=1.0, record_every=5, score_scale=1.0, device="cpu")
    rows = training.population_examples(chain)
    fc_mid, fc_end, fc_none = robustness.forecast(cfg, [run, run, run], [30.0, 60.0, math.nan], [rows, rows, None])
    assert fc_none is None
    assert fc_end.gain == 0.0 and fc_mid.gain > 0.0                    # nothing left after the horizon
    assert fc_mid.t_start == 30.0 and fc_mid.sigma2 == pytest.approx(run.quantities["sigma2"][run.at(30.0)])
    assert 0.0 <= fc_mid.amplitude <= np.linalg.norm(run.states["W0"][run.at(30.0)].numpy()) + \
        np.linalg.norm(run.states["W1"][run.at(30.0)].numpy())


# ----------------------------------------------------------------------------- B3: Adam's point told apart from GD's
@pytest.mark.parametrize("pi, spread, inside", [
    (hub_family(4, 0.5, 0.3, 0.4, 0.1).pi, 1.4e-3, True),           # book defaults: cos(𝟙, π) = 0.916
    (hub_family(3, 0.452763, 0.185523, 0.585054, 0.4).pi, 1.4e-2, False),   # π ≈ uniform (fresh-seed sweep)
    (np.array([0.4, 0.2, 0.2, 0.2]), 1e-3, True),                    # cos(𝟙, π) = 0.945
    (np.array([0.4, 0.2, 0.2, 0.2]), 0.05, False),                   # ... the spread decides
])
def test_alignment_domain_needs_pi_far_from_uniform(pi, spread, inside):
    from report_fakes import neutral_report

    rep = neutral_report(robustness.RobustnessReport, adam=SimpleNamespace(chain=SimpleNamespace(pi=pi)),
                         adam_amp_spread=spread)
    assert bool(rep.domain_alignment()) is inside


# ----------------------------------------------------------------------------- B8: trapped at δ = 0
@pytest.mark.parametrize("rate, held", [(0.0, True), (8e-6, True), (-3.5e-5, True),   # a decay is trapped too
                                        (2e-5, False), (1e-3, False), (float("nan"), False)])
def test_b8_trapped_is_no_growth(rate, held):
    assert robustness.trapped(rate) is held
