"""The primitives the cycle page (book/focus_dilution/cycle.py) calls: the stage measurements of one run
(stages.cycle_measures: NaN where a stage is missing, never an error), their seed means and tables, R5's
escape forecast from the end of condensation (transverse.escape_forecast), the GD stability profile, the page's
flow continued to a forecast time (pagesetup.page_flow_until), the seed-mean check the other training reports
use, and the two figures. Small inputs, each test a few seconds at most."""

import math
from types import SimpleNamespace

import numpy as np
import pytest

from attnflow.focus_dilution import escape, figures, pagesetup, runs, stages, training, transverse


@pytest.fixture(scope="module")
def flow200(chain):
    """The page's flow (ε = 10⁻³, m = 8, seed 1) to t = 200: condensation and the start of the θ_c¹ plateau."""
    return runs.population_flow(chain, d_model=8, init_scale=1e-3, seed=1, t_eval=runs.time_grid(200.0))


def _measures(**over):
    base = dict(
        has_cycle=True,
        letters="C P F D P E F D",
        sign_frac=1.0,
        hub_before=0.4,
        hub_after=0.5,
        gainer=0,
        da_hub=0.5,
        da_low_max=-0.4,
        peak=0.40,
        after=0.35,
        s2_growth=200.0,
        n_cycle2=2,
        L_c2=1.5085,
    )
    return stages.CycleMeasures(**{**base, **over})


# ----------------------------------------------------------------------------- stage measurements
def test_missing_stages_measure_nan(chain, short_run):
    m = stages.cycle_measures(short_run, stages.detect_run(short_run), chain)
    assert not m.has_cycle
    assert all(math.isnan(x) for x in (m.sign_frac, m.da_hub, m.fall, m.s2_growth, m.L_c2))
    assert m.gainer == -1 and m.n_cycle2 == 0
    # a seed without the stage counts against the claim the page checks on it (the flags are False, not dropped)
    assert not bool(m.sign_frac >= 1.0) and not bool(m.da_hub > 0 > m.da_low_max) and m.gainer != chain.hub


def test_seed_means_skip_missing_values_and_name_the_common_gainer():
    ms = [_measures(), _measures(sign_frac=0.5, gainer=2, n_cycle2=0, has_cycle=False), _measures(L_c2=math.nan)]
    means = stages.seed_means(ms)
    assert means["sign_frac"] == pytest.approx((1.0 + 0.5 + 1.0) / 3)
    assert means["L_c2"] == pytest.approx(1.5085) and means["gainer"] == 0
    assert means["has_cycle"] == pytest.approx(2 / 3) and means["n_cycle2"] == pytest.approx(4 / 3)
    assert math.isnan(stages.seed_means([_measures(peak=math.nan)])["peak"])
    assert stages.seed_means([_measures(gainer=-1)])["gainer"] == -1


def test_stage_and_measure_rows():
    detected = stages.Stages([stages.Stage(n, i, i + 1, 1, 1.0) for i, n in enumerate(stages.CYCLE_ORDER)], [])
    rows = stages.stage_rows({"flow": detected, "trained (seed 0)": detected})
    assert len(rows) == 2 * len(stages.CYCLE_ORDER) and rows[0]["run"] == "flow" and rows[-1]["stage"] == "dilution"
    table = stages.measure_rows(["seed 0", "seed 1"], [_measures(), _measures(peak=0.5)])
    assert [r["run"] for r in table] == ["seed 0", "seed 1"] and table[1]["fall"] == pytest.approx(0.15)


# ----------------------------------------------------------------------------- domains' forecasts
@pytest.mark.parametrize("eps, inside", [(1e-3, True), (0.03, False)])
def test_b1_regime_reads_the_transverse_level_left_by_condensation(chain, flow200, eps, inside):
    """σ₂(W0) after condensation is the untouched O(ε) part of W0(0): ≈ 0.004 at ε = 10⁻³ (inside R5's linear
    regime, ≤ 0.01), ≈ 0.12 at the smoke profile's ε = 0.03 (already past the escape window's floor: the tenfold
    rise starts with the first focus there)."""
    flow = flow200 if eps == 1e-3 else runs.population_flow(chain, init_scale=eps, t_eval=runs.time_grid(200.0))
    t_cond = stages.detect_run(flow).stages[0].end
    s2 = float(flow.value("sigma2", t_cond))
    assert (s2 <= escape.WINDOW[0]) == inside
    assert s2 == pytest.approx(float(flow.value("sigma2", t_cond + 100)), rel=0.05)  # frozen on the plateau


def test_escape_forecast_reads_the_state_it_starts_from(chain, flow200):
    """From the end of condensation to a horizon of 200 the 𝓜₁ continuation stays on the θ_c¹ plateau: no escape
    is forecast (t_due = inf) and GD's stability there is undefined (NaN); the continuation starts at the
    projected state and the forecast's transverse level is the flow's σ₂(W0) at that time."""
    t_cond = float(f"{stages.detect_run(flow200).stages[0].end:.6g}")
    fc = transverse.escape_forecast(flow200, chain, t_cond, 200.0)
    assert fc.t_start == t_cond and math.isinf(fc.t_due) and math.isnan(fc.eta_lambda_max(1.0))
    assert fc.transverse.sigma2 == pytest.approx(float(flow200.value("sigma2", t_cond)))
    assert fc.run.t[0] == 0.0 and fc.run.t[-1] == pytest.approx(200.0 - flow200.t[flow200.at(t_cond)])
    assert fc.transverse.gain > 0 and fc.transverse.gain < fc.transverse.need  # far from the tenfold growth


def test_eta_lambda_max_at_a_forecast_escape(chain, flow200):
    fc = transverse.escape_forecast(flow200, chain, 100.0, 200.0)
    due = transverse.EscapeForecast(fc.t_start, 150.0, fc.transverse, fc.run)
    lam = training.sharpness(fc.run, [50.0])[0]
    assert due.eta_lambda_max(0.5) == pytest.approx(0.5 * lam) and lam > 0


def test_step_sharpness_profile_and_its_first_unstable_time(flow200):
    prof = training.step_sharpness(flow200, 2.0, [200.0])
    assert list(prof) == [200.0] and prof[200.0] == pytest.approx(2.0 * training.sharpness(flow200, [200.0])[0])
    assert training.first_unstable({10.0: 0.5, 20.0: 2.0, 30.0: 3.0}) == 20.0
    assert math.isnan(training.first_unstable({10.0: 0.5, 20.0: 1.9}))


def test_page_flow_until_integrates_only_past_the_flow(chain):
    cfg = SimpleNamespace(d_model=8, init_scale=1e-3, seed=1, score_scale=1.0)
    flow = runs.population_flow(chain, d_model=8, init_scale=1e-3, seed=1, t_eval=runs.time_grid(20.0))
    assert pagesetup.page_flow_until(cfg, chain, flow, 15.0) is flow
    assert pagesetup.page_flow_until(cfg, chain, flow, math.inf) is flow
    longer = pagesetup.page_flow_until(cfg, chain, flow, 30.5)
    assert longer.t[-1] == pytest.approx(31.0)
    i = longer.at(20.0)
    assert longer.t[i] == pytest.approx(20.0) and np.allclose(longer.quantities["loss"][i], flow.quantities["loss"][-1])


# ----------------------------------------------------------------------------- seed statistics, figures
def test_cycle_figures_take_the_run_records(chain, short_run):
    import matplotlib

    matplotlib.use("Agg")
    detected = stages.detect_run(short_run)
    refs = {"log d": np.log(chain.d), "H(π)": chain.unigram_entropy()}
    fig = figures.cycle_loss(short_run, detected, short_run, detected, refs, 40.0, "trained")
    assert len(fig.axes) == 2 and fig.axes[1].get_title() == "trained"
    fig = figures.cycle_zoom(short_run, detected, short_run, detected, 40.0, "trained")
    assert len(fig.axes) == 6 and fig.axes[1].get_xlim()[1] == 40.0
