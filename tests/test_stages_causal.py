"""Stage boundaries read by claims' domains are decided causally (issue 21 item 1, DESIGN principle 9).

A domain may read the parameters and states *before* the measurement. Where the state's time is a stage boundary
(the end of condensation on the cycle page, the end of the first dilution on the robustness and PCA pages, the
stage before the escape on the dilution page), the boundary must not depend on the trajectory after the
measurement starts. Run on a whole record the detector does not give that (``stages`` module docstring, "Causality":
its grids span the record, its thresholds are the record's, its escape rule looks ahead); ``stages.decide`` and
``stages.detect(..., until=t)`` do. Each test here checks **prefix stability**: the boundary a domain reads is the
same when the detector is given only the trajectory up to the measurement's start, and (synthetic records) when
everything after it is replaced by something else.

The fast tier runs synthetic records and the smoke-profile flows of the cycle and dilution pages; the book-default
runs of the cycle, dilution, robustness and PCA pages and runs on other chains, seeds and sampled data are tier 2
(tests/conftest.py)."""

import dataclasses
import math

import numpy as np
import pytest
import torch

from attnflow.device import single_threaded
from attnflow.focus_dilution import pca, runs, stages, training
from attnflow.focus_dilution.chain import dirichlet_chain, hub_family
from attnflow.focus_dilution.samples import MarkovContexts


# ----------------------------------------------------------------------------- helpers
def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-np.clip(x, -500, 500)))


T = np.concatenate([np.arange(0, 300, 0.5), np.arange(300, 10000, 2.0)])
LT = np.log(np.maximum(T, 1e-9))
STEPS = [(50.0, 0.08, 0.12), (1800.0, 0.02, 0.05), (3500.0, 0.05, 0.05)]  # (centre, drop, width in log t)


def synthetic(rank_centre=3000.0):
    """tests/test_stages.py's full cycle: C P F D P E P F D P (loss steps, a focus signal, σ₂(W0))."""
    loss = 1.6 - sum(drop * sigmoid((LT - np.log(c)) / w) for c, drop, w in STEPS)
    focus = (
        0.375
        + 0.05 * sigmoid((T - 1750) / 20)
        - 0.07 * sigmoid((T - 1850) / 15)
        + 0.3 * sigmoid((T - 4800) / 50)
        - 0.35 * sigmoid((T - 5200) / 60)
    )
    rank = 0.004 * np.exp(7.0 * sigmoid((LT - np.log(rank_centre)) / 0.08))
    return dict(t=T, loss=loss, focus=focus, rank=rank)


def future_replaced(sig: dict, until: float, seed: int = 0) -> dict:
    """``sig`` with every stored value after ``until`` replaced by another continuation (a random walk from the
    last value kept: new loss drops, attention swings and σ₂ growth the original does not have)."""
    k = int(np.searchsorted(sig["t"], until, side="right"))
    rng = np.random.default_rng(seed)
    out = dict(sig)
    for name in ("loss", "focus", "rank"):
        y = np.array(sig[name], dtype=float)
        steps = rng.normal(0.0, 0.02, len(y) - k).cumsum()
        y[k:] = y[k - 1] * np.exp(steps) if name == "rank" else y[k - 1] + steps
        out[name] = y
    return out


def detect(sig, until=None):
    return stages.detect(sig["t"], sig["loss"], focus=sig["focus"], rank=sig["rank"], until=until)


def decide(sig, pick, moves, until=None):
    return stages.decide(sig["t"], sig["loss"], sig["focus"], sig["rank"], pick=pick, moves=moves, until=until)


def first_dilution(st):
    return st.get("dilution", 1)


def first_stage(st):
    return st.stages[0] if st.stages else stages.MISSING


def truncated(run, until: float):
    """A copy of a flow or trained run holding only its stored times ≤ ``until`` (every per-time array cut)."""
    k = int(np.searchsorted(run.t, until, side="right"))
    n = len(run.t)

    def cut(v):
        if isinstance(v, (np.ndarray, torch.Tensor)) and v.ndim >= 1 and v.shape[0] == n:
            return v[:k]
        if isinstance(v, dict):
            return {name: cut(x) for name, x in v.items()}
        return v

    return dataclasses.replace(run, **{f.name: cut(getattr(run, f.name)) for f in dataclasses.fields(run)})


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


def assert_prefix_stable(run, decision_of, measured_from=None):
    """The decision ``decision_of(run)`` equals the one made on the run cut at the measurement's start
    (default: the decision itself, where the domain's state is read and the measurement starts)."""
    full = decision_of(run)
    if not full.found:  # never decided: nothing a domain reads; a cut run cannot decide it either
        assert not decision_of(truncated(run, run.t[len(run.t) // 2])).found
        return full
    m = full.t if measured_from is None else measured_from
    assert full.t <= m
    cut = decision_of(truncated(run, m))
    assert cut.found and cut.t == full.t, (full.t, cut.t, full.letters(), cut.letters())
    assert (cut.stage.name, cut.stage.start, cut.stage.end) == (full.stage.name, full.stage.start, full.stage.end)
    assert cut.letters() == full.letters()
    return full


def assert_escape_start_prefix_stable(run, after):
    """The dilution page's second-cycle domain (the stage before the escape and its start) read from the run up to
    the escape, where the second-cycle claims start to measure, is the same on the run cut there."""
    full = stages.second_cycle(run, after=after)
    if not full.escaped:
        return full
    cut = stages.second_cycle(truncated(run, full.t_esc), after=after)
    assert cut.escaped and cut.t_esc == full.t_esc
    assert (cut.pre_escape, cut.from_plateau) == (full.pre_escape, full.from_plateau)
    assert same(cut.t_esc_start, full.t_esc_start), (cut.t_esc_start, full.t_esc_start)
    assert not full.t_esc_start > full.t_esc  # the state the domain reads comes before the measurement
    return full


# ----------------------------------------------------------------------------- the primitive on synthetic records
def test_detect_until_reads_nothing_after_until():
    sig = synthetic()
    for until in (120.0, 1900.0, 2600.0, 5000.0):
        k = int(np.searchsorted(T, until, side="right"))
        cut = stages.detect(T[:k], sig["loss"][:k], focus=sig["focus"][:k], rank=sig["rank"][:k])
        assert detect(sig, until).table() == cut.table()
        assert detect(future_replaced(sig, until), until).table() == cut.table()
    assert detect(sig, T[-1]).table() == detect(sig).table()
    with pytest.raises(ValueError, match="finite"):
        detect(sig, float("nan"))


def test_the_whole_record_detection_reads_later_data():
    """Why a domain may not read the whole-record detection. σ₂ starts to rise under the first dilution
    (tests/test_stages.py): on the whole record the escape is moved to the loss transition the rise triggers (the
    third step, from t ≈ 2810); the record up to t = 2700 shows the rise (tenfold by t ≈ 2400) but not that
    transition, and puts the escape at the rise's own start. And the same first 2700 time units followed by another
    future give another end of condensation (the log grid and the thresholds span the record)."""
    sig = dict(
        synthetic(),
        focus=0.375 + 0.05 * sigmoid((T - 1750) / 20) - 0.07 * sigmoid((T - 1850) / 15),
        rank=0.004 * np.exp(7.0 * sigmoid((LT - np.log(2600)) / 0.1)),
    )
    whole, upto = detect(sig), detect(sig, until=2700.0)
    assert whole.first("escape").start > 2800.0 > 2000.0 > upto.first("escape").start
    assert detect(future_replaced(sig, 2700.0)).stages[0].end != whole.stages[0].end


def test_decide_is_the_first_time_the_stage_is_seen_over():
    sig = synthetic()
    d1 = decide(sig, first_dilution, moves=True)
    assert d1.found and d1.stage.name == "dilution" and d1.stage.end < d1.t < 2000.0
    assert d1.letters() == "C P F D P" and d1.time == d1.t
    # the located end lies the detector's look-ahead before the decision
    k = int(np.searchsorted(T, d1.t, side="right"))
    assert d1.stage.end <= stages._settled_by(T[:k], "dilution", 5)
    # the same on the record up to the decision and on any future; not yet one stored time before
    assert decide(sig, first_dilution, True, until=d1.t).t == d1.t
    assert decide(future_replaced(sig, d1.t), first_dilution, True).t == d1.t
    before = decide(sig, first_dilution, True, until=T[k - 2])
    assert not before.found and before.stage is stages.MISSING and before.time is None
    cond = decide(sig, first_stage, moves=False)
    assert cond.found and cond.stage.name == "condensation" and cond.stage.end < cond.t < 120.0
    assert decide(future_replaced(sig, cond.t, seed=3), first_stage, False).t == cond.t


def test_decide_never_decided_and_misused():
    sig = synthetic()
    flat = dict(sig, focus=np.full_like(T, 0.375))  # attention never moves: no dilution, nothing decided
    none = decide(flat, first_dilution, moves=True)
    assert not none.found and none.stage is stages.MISSING and none.letters() == ""
    with pytest.raises(ValueError, match="moves"):
        decide(sig, first_stage, moves=True)  # a condensation is not a move


# ----------------------------------------------------------------------------- real runs
def hub_flow(delta, init_scale, horizon, *, n_low=4, a_h=0.5, b_h=0.3, c_cyc=0.4, seed=1, grid=None, d_model=8):
    chain = hub_family(n_low, a_h, b_h, c_cyc, delta)
    t_eval = runs.time_grid(horizon) if grid is None else grid
    return runs.population_flow(chain, d_model=d_model, init_scale=init_scale, seed=seed, t_eval=t_eval)


def check_flow(flow, *, escapes: bool):
    """Every boundary a focus–dilution domain reads on one flow: the end of condensation (cycle), of the first
    dilution (robustness: cycle 1; PCA: after the first focus) and the stage before the escape (dilution)."""
    assert_prefix_stable(flow, stages.end_of_condensation)
    assert_prefix_stable(flow, stages.end_of_dilution)
    assert_prefix_stable(flow, lambda r: stages.end_of_dilution(r, after_focus=True))
    cond = stages.end_of_condensation(flow)
    cyc = assert_escape_start_prefix_stable(flow, after=cond.t if cond.found else 0.0)
    assert cyc.escaped == escapes


def test_smoke_flows_of_the_cycle_and_dilution_pages():
    """book/profiles.yml smoke: the cycle page's flow (ε = 0.03, δ = 0.4, t ≤ 2000) and the dilution page's
    second-cycle run (δ = 0.4, t ≤ 6000)."""
    check_flow(hub_flow(0.4, 0.03, 2000.0), escapes=True)
    check_flow(hub_flow(0.4, 1e-3, 6000.0, grid=runs.time_grid(6000.0, 300.0, 1.0, 10.0)), escapes=True)


def test_book_default_domain_boundaries_are_prefix_stable():
    """The runs behind the book-default domains: the cycle page's flow (t_cond), the dilution page's δ = 0.1 run
    (the stage before the escape), the PCA page's flow (its window start) and the robustness page's population
    GD runs at δ = 0, m = 2 and δ = 0.4 (θ_c² reached, the forecasts' start, the trap's window)."""
    cycle_flow = hub_flow(0.1, 1e-3, 6000.0)
    check_flow(cycle_flow, escapes=True)
    assert stages.end_of_condensation(cycle_flow).t == 80.0  # the page's t_cond (was 77.7897, whole record)
    check_flow(hub_flow(0.1, 1e-3, 1e4, grid=runs.time_grid(1e4, 300.0, 1.0, 10.0)), escapes=True)
    pca_flow = hub_flow(0.1, 1e-3, 5000.0)
    ph = pca.run_phases("flow", pca_flow, pca_flow.chain, 3, False, causal=True)
    assert ph.window_start == stages.end_of_dilution(pca_flow, after_focus=True).t
    cut = pca.run_phases("flow", truncated(pca_flow, ph.window_start), pca_flow.chain, 3, False, causal=True)
    assert cut.window_start == ph.window_start
    markov = hub_family(4, 0.5, 0.3, 0.4, 0.1)
    specs, theta0 = training.sweep_variants(
        markov,
        n_low=4,
        a_h=0.5,
        b_h=0.3,
        c_cyc=0.4,
        delta=0.1,
        init_scales=[1e-3],
        widths=[2],
        deltas=[0.0, 0.4],
        a_h_variants=[],
        b_h_variants=[],
        d_model=8,
        init_scale=1e-3,
        seed=1,
    )
    keep = [i for i, s in enumerate(specs) if s.label[0] in ("m", "δ")]
    with single_threaded():
        gd = training.train_runs(
            [specs[i] for i in keep],
            theta0=[theta0[i] for i in keep],
            lr=1.0,
            steps=4000,
            record_every=10,
            d_model=8,
            device="cpu",
            dtype="float64",
        )
    for run in gd:
        d1 = assert_prefix_stable(run, stages.end_of_dilution)
        assert d1.found, run.label
        if run.label == ("δ", 0.0):  # B8's trap: θ_c² reached and the rate's window start
            assert d1.t == 1980.0 and d1.letters() == "C P F D P"
        # B15 is measured from its window start, after the forecast's state
        window = stages.end_of_dilution(truncated(run, min(run.t[-1], d1.t + 300.0)))
        assert window.t == d1.t


CHAINS = [
    pytest.param(dict(n_low=3, a_h=0.6, b_h=0.35, c_cyc=0.5, delta=0.2, seed=2, init_scale=1e-2), id="hub-n3-seed2"),
    pytest.param(dict(n_low=5, a_h=0.45, b_h=0.25, c_cyc=0.3, delta=0.3, seed=7, init_scale=3e-3), id="hub-n5-seed7"),
]


@pytest.mark.parametrize("cfg", CHAINS)
def test_other_hub_chains_and_seeds(cfg):
    cfg = dict(cfg)
    flow = hub_flow(cfg.pop("delta"), cfg.pop("init_scale"), 5000.0, **cfg)
    check_flow(flow, escapes=bool(stages.second_cycle(flow, after=0.0).escaped))


@pytest.mark.parametrize("seed, horizon", [(1, 3000.0), (6, 2000.0)], ids=["dirichlet-seed1", "dirichlet-seed6"])
def test_dirichlet_chains(seed, horizon):
    """Random chains (d = 5) whose R2 drive g > 0 puts the focus within the horizon; on seed 1 the detector counts
    the first dilution into cycle 2 in every record, so only the PCA page's 'first dilution after the first focus'
    is decided."""
    flow = runs.population_flow(
        dirichlet_chain(5, seed=seed), d_model=8, init_scale=1e-2, seed=0, t_eval=runs.time_grid(horizon)
    )
    check_flow(flow, escapes=True)
    assert stages.end_of_dilution(flow, after_focus=True).found


def test_sampled_runs():
    """Trained on sampled sequences of the symmetric chain (the robustness page's seeds, smaller and shorter): the
    end of condensation and the seed's first dilution — where R5's forecast on its own rows starts and its σ₂
    growth is measured from."""
    chain = hub_family(4, 0.5, 0.3, 0.4, 0.0)
    spec = training.RunSpec(chain, MarkovContexts(chain, 512, 512, seed=1).examples(), "data seed 1")
    with single_threaded():
        (run,) = training.train_runs(
            [spec],
            lr=1.0,
            steps=1000,
            record_every=10,
            init_scale=0.03,
            d_model=8,
            seed=1,
            device="cpu",
            dtype="float32",
        )
    assert_prefix_stable(run, stages.end_of_condensation)
    d1 = assert_prefix_stable(run, stages.end_of_dilution)
    assert d1.found and d1.stage.end < d1.t
    s2 = run.quantities["sigma2"]  # the growth the seed's forecast is compared with starts at the decision
    assert training.growth_after_dilution(run, d1) == pytest.approx(s2[run.t >= d1.t].max() / s2[run.at(d1.t)])
