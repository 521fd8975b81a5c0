"""Primitives of the page sharpening/sharpening_mechanism (Corollary 5, claims A6, A12, A14) on small
inputs: the matched-loss margin, the reduced runs read at s = s* (``mechanism.MatchedPoints``), the
full model's population flow against them, the sampled GD runs grouped by model
(``mechanism.SampledModels``) and why a run has no number, the figure function, and the page's claims
cell executed on small results (its domains and preconditions)."""

import json
import math
from pathlib import Path

import jupytext
import numpy as np
import pytest

from attnflow import claims, display
from attnflow.sharpening import contracts, data, figures, mechanism, reduction, targets
from attnflow.sharpening.mechanism import SampledRun

pytestmark = pytest.mark.usefixtures("one_cpu_thread")

PAGE = Path(__file__).resolve().parents[1] / "book" / "sharpening" / "sharpening_mechanism.py"

# a small system off the spec's (the §8.1 targets are outside here): K = 3, n = 4, s* = 0.8
SMALL = dict(n_compete=4, n_classes=3, matched=0.8, horizon=1e3, a0=0.1, b0=0.1, rtol=1e-10)
NAMES, RATIOS = ["FACO", "FAFO"], [1.0, 10.0]


@pytest.fixture(scope="module")
def runs():
    return mechanism.reduced_at_matched_loss(NAMES, RATIOS, **SMALL)


@pytest.fixture(scope="module")
def points(runs):
    return mechanism.matched_points(runs)


def test_matched_margin_solves_the_loss():
    u = mechanism.matched_margin(5, 0.9)
    assert u == pytest.approx(math.log(4 * 0.9 / 0.1), rel=1e-15)
    assert math.exp(u) / (math.exp(u) + 4) == pytest.approx(0.9, rel=1e-14)  # s(u*) = s*


def test_matched_points_read_the_event_and_the_horizon(runs, points):
    assert points.parametrizations == NAMES and points.lr_ratios == RATIOS
    for key, run in runs.items():
        assert points.p_match[key] == run.event["p"] and points.a_match[key] == run.event["a"]
        assert points.t_match[key] == run.event["t"] and points.p_end[key] == run.p[-1]
        assert points.p_match[key] * points.a_match[key] == pytest.approx(mechanism.matched_margin(3, 0.8), rel=1e-6)
    assert points.reached and points.describe() == "all 4 runs reached s*"
    assert points.order(points.p_match, 1.0) == "FACO > FAFO"  # a factorized QK circuit is faster
    assert points.at(points.p_match, ["FAFO", "CACO"], 1.0)[0] == points.p_match[("FAFO", 1.0)]
    assert math.isnan(points.at(points.p_match, ["FAFO", "CACO"], 1.0)[1])  # not run
    assert points.over_ratios("FAFO") == [points.p_match[("FAFO", 1.0)], points.p_match[("FAFO", 10.0)]]
    assert points.one_minus_p_end("FACO", 1.0) == 1.0 - points.p_end[("FACO", 1.0)]
    assert math.isnan(points.one_minus_p_end("CACO", 1.0))
    assert points.p_range() == (min(points.p_match.values()), max(points.p_match.values()))
    assert set(points.named()) == {f"p_{n}_{s}" for n in NAMES for s in ("r1", "at_r1", "at_r10")}
    rows = points.rows()
    assert [(r["model"], r["r"]) for r in rows] == list(runs) and rows[0]["p(s=s*)"] == points.p_match[("FACO", 1.0)]


def test_matched_points_mark_a_run_that_does_not_reach_s_star():
    short = mechanism.reduced_at_matched_loss(["CAFO"], [1.0, 10.0], **{**SMALL, "horizon": 1.0})
    pts = mechanism.matched_points(short)
    assert math.isnan(pts.p_match[("CAFO", 1.0)]) and math.isnan(pts.a_match[("CAFO", 1.0)])
    assert math.isfinite(pts.p_end[("CAFO", 1.0)])
    assert not pts.reached and "CAFO r=1" in pts.describe()


def test_strictly_increasing_is_strict():
    assert mechanism.strictly_increasing([0.1, 0.5, 0.9]) and mechanism.strictly_increasing([0.3])
    assert not mechanism.strictly_increasing([0.1, 0.5, 0.5]) and not mechanism.strictly_increasing([0.2, 0.1])


def test_full_model_population_flow_is_the_reduced_ode(points):
    task = data.Task(n_classes=3, n_common=1, seq_len=SMALL["n_compete"] + 2)
    full = mechanism.full_models_at_matched_loss(points, task, lr_ratio=1.0, matched=0.8, rtol=1e-9)
    assert list(full) == NAMES and mechanism.full_deviation(full, points, 1.0) < 1e-6
    assert all(f["s"] == pytest.approx(0.8, abs=1e-6) for f in full.values())
    rows = mechanism.full_rows(full, points, 1.0)
    assert rows[1]["model"] == "FAFO" and rows[1]["p reduced"] == points.p_match[("FAFO", 1.0)]
    missing = mechanism.MatchedPoints(["CAFO"], [1.0], {("CAFO", 1.0): math.nan}, {}, {}, {})
    none = mechanism.full_models_at_matched_loss(missing, task, lr_ratio=1.0)  # never reached: no flow
    assert math.isnan(none["CAFO"]["p"]) and none["CAFO"]["nfev"] == 0


def sampled_run(name, r, seed, p, status="reached", accuracy=1.0):
    return SampledRun(name, r, seed, status, t=np.arange(3), p=p, accuracy=accuracy, steps=10, loss=0.09,
                      message="" if status == "reached" else "raise max_steps", meta={"loss_target": 0.1})  # fmt: skip


def hand_made(fafo10=(0.998, 0.997, 0.999), faco=(0.99, 0.991, 0.989), status="reached"):
    runs = {
        ("FACO", 1.0): [sampled_run("FACO", 1.0, s, p) for s, p in enumerate(faco)],
        ("FAFO", 10.0): [
            sampled_run("FAFO", 10.0, s, p, status if s == 2 else "reached") for s, p in enumerate(fafo10)
        ],
    }
    return mechanism.SampledModels(runs, [0, 1, 2])


def test_sampled_models_summarise_per_seed():
    sm = hand_made()
    np.testing.assert_allclose(sm.difference(("FAFO", 10.0), ("FACO", 1.0)), [0.008, 0.006, 0.01])
    assert sm.mean(("FACO", 1.0)) == pytest.approx(0.99) and sm.worst("accuracy") == 1.0
    assert sm.reached and sm.describe() == "6/6 runs at the loss target"
    rows = sm.rows()
    assert [(r["model"], r["r"]) for r in rows] == [("FACO", 1.0), ("FAFO", 10.0)] and rows[1]["p max"] == 0.999
    slow = hand_made(status="slow")
    assert np.isnan(slow.values(("FAFO", 10.0))[2]) and np.isnan(slow.mean(("FAFO", 10.0)))
    assert not slow.reached and slow.describe() == "5/6 runs at the loss target; FAFO r=10 seed 2: raise max_steps"
    assert slow.rows()[1]["reached"] == "2/3"


def test_sampled_models_group_one_batched_run_by_model():
    task = data.Task(n_classes=3, n_common=4, seq_len=6)
    sm = mechanism.sampled_models([("FACO", 1.0), ("FAFO", 10.0)], [0, 1], task, n_samples=40, lr_ov=0.3,
                                  loss_target=0.5, max_steps=2000, device="cpu")  # fmt: skip
    assert list(sm.runs) == [("FACO", 1.0), ("FAFO", 10.0)] and sm.seeds == [0, 1]
    assert [run.seed for run in sm.runs[("FAFO", 10.0)]] == [0, 1] and sm.reached, sm.describe()
    one = mechanism.sampled_at_loss("FAFO", task, lr_ratio=10.0, n_samples=40, lr_ov=0.3, loss_target=0.5,
                                    max_steps=2000, seed=1, device="cpu")  # fmt: skip
    assert sm.values(("FAFO", 10.0))[1] == pytest.approx(one.p, rel=1e-5)  # the stack only batches the arithmetic


def test_sampled_runs_name_the_cause():
    task = data.Task(n_classes=3, n_common=4, seq_len=6)
    slow = mechanism.sampled_at_loss(
        "FACO", task, lr_ratio=1.0, n_samples=40, lr_ov=0.01, loss_target=0.1, max_steps=20, device="cpu"
    )
    assert slow.status == "slow" and "max_steps" in slow.message and np.isnan(slow.p)
    big = mechanism.sampled_at_loss(
        "FAFO", task, lr_ratio=10.0, n_samples=40, lr_ov=10.0, loss_target=0.5, max_steps=2000, device="cpu"
    )
    assert big.status in ("overshot", "diverged") and "gd_lr" in big.message


def test_attention_at_matched_loss_draws_three_panels(runs, points):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = figures.attention_at_matched_loss(
        runs, points, hand_made(status="slow"), u_star=mechanism.matched_margin(3, 0.8), lr_ratio=1.0, title="t"
    )
    ax = fig.axes
    assert len(ax) == 3 and len(ax[0].lines) == 2 and len(ax[2].patches) == 2
    assert ax[2].get_ylabel() == "attention mass at loss 0.1" and "3 seeds" in ax[2].get_title()
    plt.close(fig)


# -- the page's claims cell on small results ---------------------------------------------------------
@pytest.fixture
def ledger(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNFLOW_CLAIMS_DIR", str(tmp_path))
    claims.begin_page("test/mech")
    path = tmp_path / "test__mech.json"
    return lambda: json.loads(path.read_text())


def run_claims_cell(cfg, points, full, sampled):
    """Execute the page's last code cell (its claims) on the given results."""
    cell = [c for c in jupytext.read(PAGE).cells if c.cell_type == "code"][-1].source
    assert "claims.finish()" in cell
    names = dict(claims=claims, display=display, targets=targets, mechanism=mechanism, reduction=reduction)
    exec(cell, {**names, "cfg": cfg, "points": points, "full": full, "sampled": sampled, "n_nonzero": 0, "r1": 1.0})


MECH = dict(
    n_classes=3,
    n_compete=4,
    lr_ratios=[1.0, 10.0],
    a0=0.1,
    b0=0.1,
    horizon=1e3,
    rtol=1e-10,
    parametrizations=NAMES,
    matched_prob=0.8,
    pop_n_common=1,
    n_common=4,
    seq_len=6,
    n_samples=40,
    gd_lr=0.3,
    init_std=0.1,
    loss_target=0.5,
    max_steps=2000,
    seeds=[0, 1, 2],
    device="cpu",
)  # the page's parameters on the small system


def small_cfg(**kw):
    return contracts.SHARPENING_MECHANISM.validate({**MECH, **kw})


def test_page_claims_off_the_spec_system(ledger, points):
    full = {n: {"p": points.p_match[(n, 1.0)] + 1e-9} for n in NAMES}
    run_claims_cell(small_cfg(), points, full, hand_made())
    rec = ledger()
    verdicts = {r["what"].split(" (per seed")[0]: r["verdict"] for r in rec["claims"]}
    assert "fail" not in verdicts.values()
    assert verdicts["FACO, r=1: p at s = 0.9"] == "outside"  # not the spec system: §8.1 targets outside
    assert verdicts["FAFO: p at s = s* for r = [1.0, 10.0]"] == "pass"
    assert verdicts["full model, sampled GD: p(FAFO r=10) − p(FACO r=1), paired by seed"] == "pass"
    assert verdicts["full model, sampled GD: FACO r=1 attention mass at loss 0.5"] == "outside"  # not §8.2
    assert [p["holds"] for p in rec["preconditions"]] == [True, True]


def test_page_claims_fail_on_a_full_model_off_the_reduced_ode(ledger, points):
    full = {n: {"p": points.p_match[(n, 1.0)] + 2e-6} for n in NAMES}
    with pytest.raises(claims.ClaimFailed, match="full-model population flow"):
        run_claims_cell(small_cfg(), points, full, hand_made())


def test_a_sampled_run_off_the_loss_target_fails_a_precondition(ledger, points):
    full = {n: {"p": points.p_match[(n, 1.0)]} for n in NAMES}
    with pytest.raises(claims.ClaimFailed, match="precondition every sampled run reaches the loss target"):
        run_claims_cell(small_cfg(), points, full, hand_made(status="slow"))
    assert "FAFO r=10 seed 2: raise max_steps" in ledger()["preconditions"][1]["observed"]
