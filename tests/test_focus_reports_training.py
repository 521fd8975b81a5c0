"""Reports of the training pages (cycle, finite_sample, pca_trajectories, robustness): the stage
helpers, the per-run measurements on small inputs (a missing stage gives NaN, never an error or a
silent pass), the seed statistics and domains of the claims, and the schema rules and cost
estimates that refuse bad input before anything runs."""
import math
from types import SimpleNamespace

import numpy as np
import pytest

from attnflow import claims, params
from attnflow.focus_dilution import contracts, stages, training
from attnflow.focus_dilution.chain import hub_family
from attnflow.focus_dilution.realtext import SCHEMA as REAL_TEXT
from attnflow.focus_dilution.reports import cycle, finite_sample, pca_trajectories, robustness



@pytest.fixture(scope="module")
def chain():
    return hub_family(4, 0.5, 0.3, 0.4, 0.1)


@pytest.fixture(scope="module")
def short_run(chain):
    """40 GD steps on the population rows: condensation has not ended, no later stage exists."""
    return training.train_runs([training.RunSpec(chain, training.population_examples(chain), "short")],
                               steps=40, record_every=4, lr=1.0, dtype="float64")[0]


# ----------------------------------------------------------------------------- stages helpers
def test_subsequence_and_missing_stage():
    names = ["condensation", "plateau", "focus", "dilution", "plateau", "escape", "focus", "escape", "dilution"]
    assert stages.has_subsequence(names)
    assert not stages.has_subsequence(names[:6])
    assert stages.letters(["condensation", "plateau"]) == "C P"
    st = stages.Stages([stages.Stage("condensation", 0, 1, 1, 1.6), stages.Stage("plateau", 1, 5, 1, 1.5),
                        stages.Stage("focus", 5, 6, 1, 1.5), stages.Stage("plateau", 6, 9, 1, 1.49)], [])
    assert st.get("plateau", 1, after=5).start == 6
    missing = st.get("escape")
    assert missing is stages.MISSING and math.isnan(missing.start) and math.isnan(missing.end)
    assert not st.has_cycle() and st.letters() == "C P F P"


def test_stages_import_no_plotting():
    import subprocess
    import sys

    code = "import sys; import attnflow.focus_dilution.stages; print('seaborn' in sys.modules, 'matplotlib.pyplot' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]


# ----------------------------------------------------------------------------- cycle
def test_missing_stages_measure_nan(chain, short_run):
    m = cycle.run_measures(short_run, stages.detect_run(short_run), chain)
    assert not m.has_cycle
    assert all(math.isnan(x) for x in (m.sign_frac, m.da_hub, m.fall, m.s2_growth, m.L_c2))
    assert m.gainer == -1 and m.n_cycle2 == 0


def _cycle_report(per_seed, train_ok=True, L_flow=1.508):
    dom = claims.domain(("the flow completes the cycle", train_ok, ""))
    return cycle.CycleReport(
        lr_used=1.0, horizon=10.0, t_unstable=math.nan, lam_max_final=0.1, lam_at_escape=0.1, flow_s=0.0, train_s=0.0,
        n_seeds=len(per_seed), hub_token=0, noise_delta=0.04, k_eff=11, tol_c2=0.004, L_c2_flow=L_flow,
        L_c2_trained=math.nan, cycle_frac=0.0, b6_sign_frac=1.0, b6_hub_before=0.4, b6_hub_after=0.5, b6_gainer=0,
        b7_da_hub=0.5, b7_da_low_max=-0.4, b7_peak=0.4, b7_after=0.35, b7_peak_flow=0.4, b7_after_flow=0.35,
        b9_s2_growth=100.0, b9_n_cycle2=2.0,
        stages_flow=stages.Stages([stages.Stage(n, i, i + 1, 1, 1.0) for i, n in enumerate(stages.CYCLE_ORDER)], []),
        per_seed=per_seed, trained=[SimpleNamespace(label=f"seed {i}") for i in range(len(per_seed))],
        flow_domain=claims.domain(("hub", True, "")), train_domain=dom, cfg=SimpleNamespace(n_samples=4096, seq_len=16384))


def _measures(**over):
    base = dict(has_cycle=True, letters="C P F D P E F D", sign_frac=1.0, hub_before=0.4, hub_after=0.5, gainer=0,
                da_hub=0.5, da_low_max=-0.4, peak=0.40, after=0.35, s2_growth=300.0, n_cycle2=2, L_c2=1.5085)
    return cycle.RunMeasures(**{**base, **over})


def test_cycle_claims_are_seed_statistics(ledger):
    seeds = [_measures(), _measures(L_c2=1.5079, peak=0.41), _measures(L_c2=1.5090, peak=0.42)]
    _cycle_report(seeds).check_claims()
    recs = ledger()
    assert {r["verdict"] for r in recs} == {"pass"}
    assert sum(r["id"] == "B14" for r in recs) == 1


def test_cycle_one_seed_without_the_cycle_still_passes_two_do_not(ledger):
    seeds = [_measures(), _measures(), _measures(has_cycle=False)]
    _cycle_report(seeds).check_claims()
    b1 = [r for r in ledger() if r["id"] == "B1"]
    assert [r["verdict"] for r in b1] == ["pass", "pass"]
    claims._state["records"].clear()
    _cycle_report([_measures(), _measures(has_cycle=False), _measures(has_cycle=False)]).check_claims()
    assert [r["verdict"] for r in ledger() if r["id"] == "B1"] == ["pass", "fail"]


def test_cycle_missing_stage_is_outside_not_nan_failure(ledger):
    seeds = [_measures(), _measures(L_c2=math.nan, peak=math.nan, after=math.nan), _measures(L_c2=math.nan)]
    _cycle_report(seeds).check_claims()
    by = {(r["id"], r["what"][-40:]): r["verdict"] for r in ledger()}
    assert [v for (i, _), v in by.items() if i == "B14"] == ["outside"]
    assert "fail" not in by.values()


def test_cycle_claims_outside_when_the_flow_does_not_complete_the_cycle(ledger):
    _cycle_report([_measures()] * 3, train_ok=False).check_claims()
    assert [r["verdict"] for r in ledger()][1:] == ["outside"] * (len(ledger()) - 1)


NO_STAGES = dict(has_cycle=False, letters="C P", sign_frac=math.nan, hub_before=math.nan, hub_after=math.nan, gainer=-1,
                 da_hub=math.nan, da_low_max=math.nan, peak=math.nan, after=math.nan, s2_growth=math.nan, n_cycle2=0,
                 L_c2=math.nan)


@pytest.mark.parametrize("train_ok", [True, False])
def test_cycle_seeds_without_the_stages_are_outside_not_a_crash(ledger, train_ok):
    """No seed reaches plateau 1 and dilution 1: the filtered flags of B6 (gainer) and B7 (mass
    redistribution) are empty; those claims are recorded outside (no statistic computed), never raise."""
    _cycle_report([_measures(**NO_STAGES)] * 3, train_ok=train_ok).check_claims()
    recs = ledger()
    staged = [r for r in recs if "θ_c¹ → end of dilution 1" in r["what"] or "from θ_c¹ to the end" in r["what"]]
    assert [r["id"] for r in staged] == ["B6", "B7"]
    for r in staged:
        assert r["verdict"] == "outside" and r["measured"] is None
        assert "plateau 1 and dilution 1 detected in at least 3 seeds fails (0 of 3)" in r["reason"]
    # the statistics over all seeds are still measured: no seed has the cycle (B1) or a cycle 2 (B9), 0 of 3
    measured = [(r["id"], r["verdict"]) for r in recs if r["measured"] is not None]
    assert measured == ([("B1", "pass"), ("B1", "fail"), ("B9", "fail")] if train_ok else [("B1", "pass")])
    assert {r["verdict"] for r in recs if r["measured"] is None} == {"outside"}


def test_cycle_fraction_with_no_flags_inside_its_domain_is_a_bug(ledger):
    inside = claims.domain(("three seeds", True, "3"))
    with pytest.raises(AssertionError, match="no per-seed values inside the domain"):
        cycle.check_fraction("B6", [], domain=inside, what="share", criterion="c")
    with pytest.raises(AssertionError, match="no per-seed values inside the domain"):
        cycle.check_mean("B7", [], domain=inside, what="fall", above=0.01)
    assert ledger() == []


def _stage_list(names):
    return stages.Stages([stages.Stage(n, i, i + 1, 1, 1.0) for i, n in enumerate(names)], [])


@pytest.mark.parametrize("continued, verdict", [(stages.CYCLE_ORDER, "pass"), (stages.CYCLE_ORDER[:-1], "fail")])
def test_cycle_flow_b1_on_the_continued_flow(ledger, continued, verdict):
    """The cycle unfinished at the horizon (no dilution 2): B1 on the flow is measured on the flow
    continued to FLOW_CAP × the horizon, and fails when the cycle is unfinished there too."""
    rep = _cycle_report([_measures()] * 3)
    rep.stages_flow = _stage_list(stages.CYCLE_ORDER[:-1])
    rep.stages_continued, rep.flow_cycle_t = _stage_list(continued), cycle.FLOW_CAP * rep.horizon
    rep.check_claims()
    flow = ledger()[0]
    assert flow["id"] == "B1" and flow["verdict"] == verdict and flow["measured"] == list(continued)
    assert f"continued to t = {cycle.FLOW_CAP * rep.horizon:g}" in flow["what"] and "by t = 40" in flow["tolerance"]
    assert rep.stage_rows()[-1]["run"] == f"flow continued to t = {cycle.FLOW_CAP * rep.horizon:g} (B1)"


def test_cycle_far_plateau_fails(ledger):
    seeds = [_measures(L_c2=1.52), _measures(L_c2=1.521), _measures(L_c2=1.5205)]
    _cycle_report(seeds).check_claims()
    assert [r["verdict"] for r in ledger() if r["id"] == "B14"] == ["fail"]


# ----------------------------------------------------------------------------- finite sample
def test_drift_slope_of_a_power_law():
    x = np.array([1e5, 1e6, 1e7])
    assert finite_sample._slope(x, 3 * x ** -0.5) == pytest.approx(-0.5)
    assert math.isnan(finite_sample._slope([1e5, 1e5], [1.0, 2.0]))


def test_summary_of_a_short_run_is_nan_where_stages_are_missing(short_run):
    r = finite_sample.summarize(short_run, short_run, "short", 1024, 64, 0)
    assert math.isnan(r.L_c2) and math.isnan(r.t_focus) and r.drift == 0.0


# ----------------------------------------------------------------------------- robustness
def test_focus_slope_in_log_inverse_eps():
    pts = [(1e-4, 100 + 50 * np.log(1e4)), (1e-3, 100 + 50 * np.log(1e3)), (1e-2, math.nan)]
    assert robustness.focus_slope(pts) == pytest.approx(50.0)
    assert math.isnan(robustness.focus_slope(pts[1:]))


def test_escape_rate_outside_when_theta_c2_not_reached(short_run):
    rate, dom = robustness.escape_rate(short_run, stages.detect_run(short_run))
    assert not dom and "θ_c² reached" in dom.reason


# ----------------------------------------------------------------------------- pca
def test_pca_phases_of_a_short_run(chain, short_run):
    ph = pca_trajectories.phases("short", short_run, chain, 3, False)
    assert not ph.found and not ph.escaped
    assert 0 <= ph.cos_pc1 <= 1
    # B3 reads W0 where the loss first reaches the unigram level, and nothing where it never does
    reached = np.flatnonzero(short_run.quantities["loss"] <= pca_trajectories.unigram_level(chain))
    assert ph.condensed == bool(len(reached))
    if ph.condensed:
        assert ph.cos_pi == short_run.quantities["cos_W0_pi"][reached[0]] and 0 <= ph.cos_pi <= 1
    else:
        assert math.isnan(ph.cos_pi)


# ----------------------------------------------------------------------------- schemas
def _page_values(schema, page):
    import jupytext

    nb = jupytext.read(page)
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    ns = {}
    exec(cell.source, ns)
    return {k: v for k, v in ns.items() if k in schema.params}


PAGES = {"cycle": contracts.CYCLE, "finite_sample": contracts.FINITE_SAMPLE,
         "pca_trajectories": contracts.PCA_TRAJECTORIES, "robustness": contracts.ROBUSTNESS}


@pytest.mark.parametrize("name", PAGES)
def test_defaults_validate_and_cost_about_a_minute(name, monkeypatch):
    from pathlib import Path

    schema = PAGES[name]
    values = _page_values(schema, Path(__file__).parents[1] / "book" / "focus_dilution" / f"{name}.py")
    cfg = schema.validate(values)
    assert 5 < schema.estimate(cfg) < 600


@pytest.mark.parametrize("name, over, match", [
    ("cycle", dict(steps=1), "record_every"),
    ("cycle", dict(n_samples=10**7, seq_len=10**6), "sampled tokens"),
    ("robustness", dict(a_h_variants=[0.3, 0.7], b_h_variants=[0.5]), "same length"),
    ("robustness", dict(deltas=[0.1, 0.4]), "0.0"),
    ("robustness", dict(chain="dirichlet"), "hub"),
    ("robustness", dict(b_h=0.8, deltas=[0.0, 0.9]), "every δ of deltas"),        # b_h(1 + δξ) ≥ 1: no chain
    ("robustness", dict(a_h_variants=[0.3], b_h_variants=[0.99], delta=0.4), "chain variant"),
])
def test_bad_parameters_exit_before_running(name, over, match):
    from pathlib import Path

    schema = PAGES[name]
    values = _page_values(schema, Path(__file__).parents[1] / "book" / "focus_dilution" / f"{name}.py")
    with pytest.raises(params.ParameterError, match=match):
        schema.validate({**values, **over})


def test_real_text_reversed_mid_ranks_refused():
    from pathlib import Path

    values = _page_values(REAL_TEXT, Path(__file__).parents[1] / "book" / "focus_dilution" / "real_text.py")
    REAL_TEXT.validate(values)
    with pytest.raises(params.ParameterError, match="first ≤ last"):
        REAL_TEXT.validate({**values, "mid_ranks": [40, 15]})
    with pytest.raises(params.ParameterError, match="n_top"):
        REAL_TEXT.validate({**values, "mid_ranks": [2, 40]})


# ----------------------------------------------------------------------------- tiny end-to-end runs
TINY = dict(n_samples=64, seq_len=64, steps=100, record_every=5, init_scale=0.03, delta=0.4)


def _tiny_cfg(name, **over):
    from pathlib import Path

    schema = PAGES[name]
    values = _page_values(schema, Path(__file__).parents[1] / "book" / "focus_dilution" / f"{name}.py")
    return schema.validate({**values, **over})


@pytest.mark.parametrize("name, over", [
    ("cycle", TINY),
    ("pca_trajectories", TINY),
    ("finite_sample", {**TINY, "n_samples": [64, 128], "seq_len": [16, 64], "delta": 0.0}),
    ("robustness", dict(n_samples=64, seq_len=64, steps=100, record_every=5, adam_steps=25, init_scales=[1e-3, 1e-2, 0.05],
                        widths=[1, 2], deltas=[0.0, 0.4], a_h_variants=[0.3], b_h_variants=[0.5])),
])
def test_a_too_short_run_is_outside_never_failed(name, over, ledger):
    """100 steps end on the first plateau: every stage claim is outside its domain (or passes), none
    fails and none measures NaN inside its domain; the report's figures draw."""
    import matplotlib

    matplotlib.use("Agg")
    module = {"cycle": cycle, "finite_sample": finite_sample, "pca_trajectories": pca_trajectories,
              "robustness": robustness}[name]
    rep = module.measure(_tiny_cfg(name, **over))
    rep.check_claims()
    recs = ledger()
    assert recs and not [r for r in recs if r["verdict"] == "fail"], [r["what"] for r in recs if r["verdict"] == "fail"]
    assert len(rep.figures()) >= 1
    assert all(isinstance(v, (int, float, str, bool)) for v in __import__("attnflow.report").report.scalar_fields(rep).values())


# ----------------------------------------------------------------------------- finite-sample B1, PCA B9 domains
def _timed(stages_with_start, horizon):
    starts = [s for _, s in stages_with_start] + [horizon]
    return stages.Stages([stages.Stage(n, s, e, 1, 1.0) for (n, s), e in zip(stages_with_start, starts[1:])], [])


def test_finite_sample_b1_requires_the_early_stages_and_the_order():
    """B1: a seed must show the population stages through its first focus and every one that starts
    by T/(1 + ONSET_DELAY), and agree with the population's order as far as both go (plateaus after
    θ_c¹ are pauses, not compared) — a late seed still focusing at the horizon follows, one still on
    θ_c¹, one with another order or one missing an early stage does not."""
    T = 1500.0
    pop = _timed([("condensation", 0), ("plateau", 60), ("focus", 720), ("plateau", 1067)], T)
    assert finite_sample.required_stages(pop, T) == "C P F"                  # the plateau at 0.71 T has no room
    late = _timed([("condensation", 0), ("plateau", 60), ("focus", 1200)], T)
    assert finite_sample.required_stages(late, T) == "C P F"                 # the first focus always
    early = _timed([("condensation", 0), ("plateau", 60), ("focus", 150), ("plateau", 300), ("dilution", 400)], T)
    assert finite_sample.required_stages(early, T) == "C P F D"              # every onset early; the pause dropped
    assert finite_sample.movements("C P F P F D P E") == "C P F F D E"
    follows = finite_sample.follows
    assert follows("C P F", "C P F P", "C P F") and follows("C P F P F D P", "C P F P", "C P F")
    assert follows("C P F D P", "C P F P D P", "C P F D")                    # no pause at the top of the focus
    assert not follows("C P", "C P F P", "C P F")                           # no focus: not following
    assert not follows("C P F E", "C P F D P", "C P F")                     # another order after the focus
    assert not follows("C P F", "C P F D P E F", "C P F D")                 # misses an early stage


def test_pca_b9_trained_needs_the_flow_a_decade_above_the_threshold():
    from attnflow.focus_dilution.reports.pca_trajectories import EXPANSION_MARGIN, flow_clears

    assert EXPANSION_MARGIN == 1.0
    assert flow_clears(319.0) and flow_clears(100.0)
    assert not flow_clears(22.0) and not flow_clears(float("nan")) and not flow_clears(0.0)


def test_real_text_escape_time_of_a_run_still_on_the_plateau():
    """B10 clock: a real run still on the plateau at the end enters as the end time (a lower bound)
    only where that already misses 10% of the Markov time; otherwise the comparison is undecided."""
    from attnflow.focus_dilution.reports.real_text import escape_time

    assert escape_time(142.0, 133.0, 280.0) == (142.0, False)
    assert escape_time(263.0, float("nan"), 280.0) == (263.0, False)    # a Markov run still on the plateau: as before
    assert escape_time(float("nan"), 145.0, 200.0) == (200.0, True)     # 200 > 1.1 × 145: decided, not within 10%
    t, censored = escape_time(float("nan"), 190.0, 200.0)               # 200 < 1.1 × 190: undecided
    assert math.isnan(t) and not censored
    assert math.isnan(escape_time(float("nan"), float("nan"), 200.0)[0])
