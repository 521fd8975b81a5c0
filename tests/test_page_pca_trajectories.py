"""The PCA page's primitives (book/focus_dilution/pca_trajectories.py): B3's end of condensation and R1's
predicted deviation, one run's phases and movements (a phase the detector does not find measures NaN, never
a stand-in window), the seed summaries, the claims' criteria, R5's expansion forecast from the flow's first
dilution and the domains built from it, and the two figures."""

import math

import numpy as np
import pytest

from attnflow import claims
from attnflow.focus_dilution import closed_forms, figures, pca, runs, stages
from attnflow.focus_dilution.chain import hub_family
from attnflow.focus_dilution.model import init_params


# ----------------------------------------------------------------------------- B3: end of condensation, R1
def test_unigram_level_lies_the_stated_share_of_the_drop_above_the_unigram_entropy(chain):
    H, top = chain.unigram_entropy(), np.log(chain.d)
    assert pca.unigram_level(chain, 0.0) == pytest.approx(H)
    assert pca.unigram_level(chain, 1.0) == pytest.approx(top)
    assert pca.unigram_level(chain) == pytest.approx(H + pca.COND_FRAC * (top - H))


def test_frozen_angle_predicts_the_flow_at_the_end_of_condensation():
    """R1: the part of W0(0) off π stays frozen while W0's π-row grows; the flow's top left singular
    vector at the end of condensation (the loss at the unigram level) is off π by that angle, to first
    order (measured 1.1–1.2× R1's: W0 is still ~10 % short of θ_c¹'s norm there)."""
    ch = hub_family(4, 0.5, 0.3, 0.4, 0.1)
    eps, m, seed = 0.03, 4, 2
    flow = runs.population_flow(ch, d_model=m, init_scale=eps, seed=seed, t_eval=runs.time_grid(150.0))
    reached = np.flatnonzero(flow.quantities["loss"] <= pca.unigram_level(ch))
    assert len(reached)
    measured = float(np.arccos(flow.quantities["cos_W0_pi"][reached[0]]))
    th = init_params(ch.d, m, eps, seed)
    predicted = pca.frozen_angle(th["W0"], th["W1"], ch.pi, closed_forms.theta_c1(ch).W0_norm)
    assert predicted > 1e-2  # a visible angle, not a check on zero
    # first order in the angle and in ε: the nonlinear end of condensation is the rest
    assert measured == pytest.approx(predicted, rel=0.25)
    # and the page's condensation forecast, 2.5 T₁, lies after the measured end
    assert flow.t[reached[0]] <= 2.5 * closed_forms.escape_time_origin(ch, eps)


# ----------------------------------------------------------------------------- one run's phases
def test_phases_of_a_short_run_measure_nan_where_no_phase_was_found(chain, short_run):
    ph = pca.run_phases("short", short_run, chain, 3, False)
    assert not ph.found and ph.window_start is None and math.isnan(ph.t_diluted)
    assert 0 <= ph.cos_pc1 <= 1 and 0 < ph.explained <= 1
    # no first focus and dilution: no retraction or expansion is measured (NaN, so a claim on it fails) ...
    assert all(math.isnan(v) for v in (ph.retract_hub, ph.retract_low, ph.spread_before, ph.spread_after, ph.growth))
    assert not ph.retracted
    # ... while the figure keeps its stand-in windows
    assert ph.marks["diluted"] == ph.marks["end"] == float(short_run.t[-1])
    # B3 reads W0 where the loss first reaches the unigram level, and nothing where it never does
    reached = np.flatnonzero(short_run.quantities["loss"] <= pca.unigram_level(chain))
    assert ph.condensed == bool(len(reached))
    if ph.condensed:
        assert ph.cos_pi == short_run.quantities["cos_W0_pi"][reached[0]] and 0 <= ph.cos_pi <= 1
    else:
        assert math.isnan(ph.cos_pi)
    row = ph.row()
    assert row["run"] == "short" and math.isnan(row["Δ hub"])


def test_the_first_dilution_is_the_first_after_the_first_focus_whatever_its_cycle():
    """Seen on a smoke run with other seeds: an escape starting inside the first dilution makes the detector count
    that dilution in cycle 2; it is still the dilution the retraction ends at."""
    S = stages.Stage
    detected = stages.Stages(
        [
            S("condensation", 0, 40, 1, 1.6),
            S("plateau", 40, 420, 1, 1.53),
            S("focus", 420, 520, 1, 1.527),
            S("dilution", 520, 589, 2, 1.508),
            S("escape", 589, 772, 2, 1.50),
            S("dilution", 1060, 1249, 2, 1.47),
        ],
        [],
    )
    f1, d1 = pca.first_focus_dilution(detected)
    assert (f1.start, d1.start, d1.end) == (420, 520, 589)
    no_focus = stages.Stages([S("condensation", 0, 40, 1, 1.6), S("dilution", 50, 60, 1, 1.5)], [])
    f1, d1 = pca.first_focus_dilution(no_focus)
    assert f1 is stages.MISSING and d1 is stages.MISSING
    only_focus = stages.Stages([S("dilution", 10, 20, 1, 1.6), S("focus", 50, 60, 1, 1.5)], [])
    assert pca.first_focus_dilution(only_focus)[1] is stages.MISSING  # a dilution before the focus does not count


def _phases(name, t_diluted, **values):
    run = type("R", (), {"t": np.arange(0.0, 100.0, 10.0)})()
    run.at = lambda t: int(np.argmin(np.abs(run.t - t)))
    found = t_diluted is not None
    marks = dict(condensed=10.0, focus=20.0, diluted=t_diluted if found else 90.0, end=90.0)
    base = dict(cos_pi=1.0, cos_pc1=1.0, retract_hub=0.5, retract_low=-0.1, spread_before=0.01, spread_after=0.2)
    p = pca.EmbeddingPCA(np.zeros((10, 2, 2)), np.eye(2), np.array([0.6, 0.3]), False)
    return pca.Phases(name, run, None, p, marks, found, True, **{**base, **values})


def test_seed_summaries_leave_out_nan_and_the_window_starts_on_a_stored_time():
    a = _phases("a", 44.0)
    b = _phases("b", 71.0, cos_pi=0.5, retract_hub=math.nan, spread_before=math.nan)
    c = _phases("c", None)
    means = pca.seed_means([a, b])
    assert means["cos_pi"] == pytest.approx(0.75) and means["retract_hub"] == pytest.approx(0.5)
    assert means["explained"] == pytest.approx(0.9)
    assert a.window_start == 40.0 and b.window_start == 70.0 and c.window_start is None
    assert pca.earliest_window_start([c, b, a]) == 40.0 and pca.earliest_window_start([c]) is None
    assert a.growth == pytest.approx(20.0) and math.isnan(b.growth)


def test_criteria_of_b7_and_b9():
    assert pca.retracts([0.5, -0.1]) and not pca.retracts([0.5, 0.0]) and not pca.retracts([-0.1, -0.2])
    assert not pca.retracts([math.nan, -0.1]) and not pca.retracts([0.5, math.nan])
    assert pca.tenfold(10.0) and not pca.tenfold(9.99) and not pca.tenfold(math.nan)


# ----------------------------------------------------------------------------- B9: R5 from the flow's first dilution
@pytest.mark.parametrize("horizon, predicted", [(5000.0, True), (2300.0, False)])
def test_expansion_forecast_predicts_the_tenfold_sigma2_both_ways(horizon, predicted):
    """R5 from the flow's first dilution: on the book's chain (ε = 10⁻³) the gain to t = 5000 predicts a tenfold
    σ₂(W0) and the flow has it; cut at t = 2300 (≈ 360 after the first dilution, gain ≈ 1 against ≈ 2.7 needed)
    it predicts none and σ₂ has not grown tenfold."""
    ch = hub_family(4, 0.5, 0.3, 0.4, 0.1)
    flow = runs.population_flow(ch, d_model=8, init_scale=1e-3, seed=1, t_eval=runs.time_grid(horizon))
    t_d1 = stages.detect_run(flow).get("dilution", 1).end
    assert np.isfinite(t_d1)
    fc = pca.expansion_forecast(flow, ch, t_d1)
    assert fc.sigma2 <= 0.01 and fc.amplitude > 0
    assert fc.tenfold == predicted
    assert (flow.quantities["sigma2"][-1] >= 10 * fc.sigma2) == predicted
    # the page's domains from it: the two conditions read the named state, nothing is measured
    at = claims.state("forecast", t=fc.t_start)
    dom = pca.forecast_domain(fc, at)
    assert len(dom.conditions) == 2 and set(dom.reads) == {at} and bool(dom) == predicted
    assert pca.forecast_domain(None, at).conditions == () and pca.expansion_forecast(flow, ch, math.nan) is None


def test_expansion_forecast_outside_where_the_transverse_part_has_grown_by_the_first_dilution():
    """The sweep's point (hub n = 6, a_h = 0.5632, ε = 0.03): σ₂(W0) = 0.15 at the first dilution's end, past R5's
    linear regime; the expansion (9.4×) is outside B9's domain, decided from that state."""
    ch = hub_family(6, 0.5632, 0.2674, 0.2187, 0.4)
    flow = runs.population_flow(ch, d_model=8, init_scale=0.03, seed=798212, t_eval=runs.time_grid(2000.0))
    t_d1 = stages.detect_run(flow).get("dilution", 1).end
    fc = pca.expansion_forecast(flow, ch, t_d1)
    assert fc.sigma2 > 0.01 and not fc.conditions()[0][1]


def test_b9_trained_needs_the_forecast_a_decade_above_the_threshold():
    from attnflow.focus_dilution.transverse import GAIN_MARGIN, TransverseForecast

    fc = lambda gain: TransverseForecast(t_start=900.0, sigma2=0.004, amplitude=0.004, gain=gain)  # noqa: E731
    need = math.log(10.0)
    assert pca.forecast_clears(fc(need + math.log(10.0) + GAIN_MARGIN + 1e-9), 1.0)
    assert not pca.forecast_clears(fc(need + math.log(10.0) + GAIN_MARGIN - 1e-3), 1.0)
    assert pca.forecast_clears(fc(need + GAIN_MARGIN + 1e-9), 0.0)
    assert not pca.forecast_clears(None, 1.0)
    assert pca.clear_text(None) == "no forecast" and "needs 2.30" in pca.clear_text(fc(3.0))


# ----------------------------------------------------------------------------- figures
def test_figures_draw_a_run_without_later_phases(chain, short_run):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ph = pca.run_phases("short", short_run, chain, 3, False)
    rows = [("flow", ph), ("trained", ph)]
    for fig in (figures.pca_phases(rows, chain), figures.pca_time(rows, chain, float(short_run.t[-1]))):
        assert len(fig.axes) >= 2
        plt.close(fig)
