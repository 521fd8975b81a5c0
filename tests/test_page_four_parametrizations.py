"""The primitives of ``book/sharpening/four_parametrizations`` (the four parametrizations at matched loss;
claims A1, A7; open question Q2): ``experiments.ByParametrization`` and what it derives, ``by_parametrization``
and ``Experiment.overshoot`` on a small trained sweep with balanced models, ``reduction.reduced_ratios``,
``reduced.attention_at_loss``, and the two figure functions. The claims themselves are checked on the page;
here the page's claims cell runs on hand-made results, to show its criteria pass, fail and fall outside."""

from pathlib import Path
from types import SimpleNamespace

import jupytext
import numpy as np
import pytest

from attnflow import stats
from attnflow.sharpening import data, experiments, figures, reduced, reduction, targets
from attnflow.sharpening.model import PARAMETRIZATIONS

PAGE = Path(__file__).resolve().parents[1] / "book" / "sharpening" / "four_parametrizations.py"
NAMES = list(PARAMETRIZATIONS)
SPEC_TASK = data.Task(**{k: targets.FULL_CONFIG[k] for k in ("n_classes", "n_common", "seq_len")})  # spec §8.2
MASS = {
    "CACO": [0.844, 0.843, 0.845],
    "CAFO": [0.55, 0.54, 0.55],
    "FACO": [0.991, 0.990, 0.991],
    "FAFO": [0.84, 0.83, 0.85],
}


def by_param(mass=MASS, names=NAMES, n_seeds=3):
    """A hand-made ByParametrization: the attention masses of ``mass`` for ``names``, every model stopped
    at step 100 with loss 0.099 and test accuracy 1."""
    v = np.array([mass[n][:n_seeds] for n in names], dtype=float)  # (n_names, n_seeds)
    values = {
        "attn_relevant": v,
        "steps": np.full(v.shape, 100.0),
        "loss_final": np.full(v.shape, 0.099),
        "test_attn_relevant": v - 0.001,
        "test_accuracy": np.ones(v.shape),
    }
    return experiments.ByParametrization(list(names), list(range(n_seeds)), values)


def test_by_parametrization_spread_lead_lag_and_count():
    res = by_param()
    np.testing.assert_allclose(res.spread(), [0.441, 0.45, 0.441])  # FACO − CAFO per seed
    np.testing.assert_allclose(res.lead("FACO"), [0.991 - 0.844, 0.990 - 0.843, 0.991 - 0.85])
    np.testing.assert_allclose(res.lag("CAFO"), [0.84 - 0.55, 0.83 - 0.54, 0.845 - 0.55])
    assert res.count_above("FAFO", "CACO") == 1  # 0.85 > 0.845 only in seed 2
    assert res.mean("FACO") == pytest.approx(np.mean(MASS["FACO"]))
    assert res.of("CAFO", "steps").tolist() == [100.0] * 3 and res["attn_relevant"].shape == (4, 3)
    assert res.lead("CAFO").max() < 0 and res.lag("FACO").max() < 0  # the other ends: negative


def test_by_parametrization_reads_nan_for_a_parametrization_not_trained():
    res = by_param(names=["CACO", "FACO"])
    assert np.isnan(res.of("FAFO")).all() and np.isnan(res.mean("CAFO"))
    assert np.isnan(res.lag("CAFO")).all() and res.count_above("FAFO", "CACO") == 0
    assert np.isnan(by_param(names=["FACO"]).lead("FACO")).all()  # nothing to lead


def test_largest_gap_and_rows():
    res = by_param()
    ref = {n: float(np.mean(MASS[n])) for n in NAMES}
    assert res.largest_gap(ref) == pytest.approx(0.0, abs=1e-15)
    assert res.largest_gap({**ref, "FAFO": ref["FAFO"] + 0.02}) == pytest.approx(0.02)
    rows = res.rows()
    assert [r["model"] for r in rows] == NAMES and rows[0]["steps to L*"] == "100"
    assert rows[2]["max over seeds"] == pytest.approx(0.991) and rows[1]["min over seeds"] == pytest.approx(0.54)
    assert rows[0]["attention mass (test)"] == pytest.approx(np.mean(MASS["CACO"]) - 0.001)


@pytest.fixture(scope="module")
def tiny_sweep():
    """CACO and FAFO from two Gaussian seeds and once from the balanced state, trained by GD to a loss."""
    task = data.Task(n_classes=3, n_common=4, seq_len=5)
    specs = experiments.grid(["CACO", "FAFO"], [1.0], [0, 1], [0.5], [0.1]) + experiments.grid(
        ["CACO", "FAFO"], [1.0], [0], [0.5], [0.1], init="manifold"
    )
    exp = experiments.run(specs, task, n_train=64, n_test=32, steps=600, target_loss=0.6, device="cpu")
    return exp, experiments.evaluate(exp, k_percents=[50])


def test_grid_sets_the_initialization():
    specs = experiments.grid(["FACO"], [1.0, 2.0], [3], [0.1], [0.2], init="manifold")
    assert [(sp.init, sp.lr_ratio, sp.init_scale) for sp in specs] == [("manifold", 1.0, 0.2), ("manifold", 2.0, 0.2)]
    assert experiments.grid(["FACO"])[0].init == "gaussian"


def test_by_parametrization_of_a_trained_sweep(tiny_sweep):
    exp, held_out = tiny_sweep
    assert exp.reached.all(), exp.describe()
    res = experiments.by_parametrization(exp, held_out)
    bal = experiments.by_parametrization(exp, held_out, init="manifold")
    assert res.names == ["CACO", "FAFO"] and res.seeds == [0, 1] and bal.seeds == [0]
    (i,) = [
        i for i, sp in enumerate(exp.specs) if sp.parametrization == "FAFO" and sp.seed == 1 and sp.init == "gaussian"
    ]
    assert res.of("FAFO")[1] == exp.stats_final["attn_relevant"][i]
    assert res.of("FAFO", "test_accuracy")[1] == held_out["accuracy"][i]
    assert res.of("FAFO", "steps")[1] == exp.stopped_at[i]
    (j,) = exp.select(parametrization="CACO", init="manifold")
    assert bal.mean("CACO") == pytest.approx(float(exp.stats_final["attn_relevant"][j]))
    assert 0 <= exp.overshoot() == pytest.approx(float(np.max(0.6 - exp.loss_final)))
    assert exp.overshoot() < 0.6


def test_reduced_ratios_are_kappa_to_the_m_times_k_minus_one():
    const = reduction.constants(SPEC_TASK)
    r = reduction.reduced_ratios(const, 0.1, 0.1)
    kappa, K = np.sqrt(1 / 5 + 1 / 20), 5
    assert list(r) == NAMES
    assert r["CACO"] == r["CAFO"] == pytest.approx(kappa**2 * (K - 1))
    assert r["FACO"] == r["FAFO"] == pytest.approx(kappa * (K - 1))
    assert reduction.reduced_ratios(const, 0.2, 0.1, ["FACO"]) == {"FACO": pytest.approx(2 * r["FACO"])}


def test_attention_at_loss_is_the_matched_event_of_the_reduced_ode():
    ratios = {"CACO": 1.0, "FACO": 1.0}
    p = reduced.attention_at_loss(ratios, 0.3, n_compete=9, n_classes=5, a0=0.1, b0=0.1, horizon=1e5)
    run = reduced.solve(reduced.ReducedSystem("FACO", 1.0, 9, 5), 1e5, n_times=200, matched=np.exp(-0.3))
    assert p["FACO"] == run.matched_event()["p"] and p["FACO"] > p["CACO"]  # factorized QK sharpens faster
    assert abs(run.matched_event()["s"] - np.exp(-0.3)) < 1e-8
    with pytest.raises(RuntimeError, match="never reached"):
        reduced.attention_at_loss({"CACO": 1.0}, 0.3, horizon=1.0)


def test_figures_draw_the_training_and_the_orderings(tiny_sweep):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    exp, held_out = tiny_sweep
    fig = figures.training_at_matched_loss(exp, title="test")
    assert len(fig.axes) == 3 and len(fig.axes[0].lines) == 4 + 1  # 2 × 2 models and the dotted L*
    assert fig.axes[0].get_legend().get_title().get_text() == "2 seeds each" and fig._suptitle.get_text() == "test"
    plt.close(fig)
    res, bal = experiments.by_parametrization(exp, held_out), experiments.by_parametrization(exp, held_out, "manifold")
    ode = {"CACO": 0.5, "FAFO": 0.6}
    fig = figures.orderings_at_matched_loss(res, bal, ode, ode, 0.6)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["CACO", "FAFO"] and len(ax.collections) == 5
    assert ax.get_ylabel() == "attention mass at L* = 0.6"
    plt.close(fig)


# -- the page's claims cell on hand-made results ---------------------------------------------------
@pytest.fixture
def ledger(tmp_path, monkeypatch):
    from attnflow import claims

    monkeypatch.setenv("ATTNFLOW_CLAIMS_DIR", str(tmp_path))
    claims.begin_page("sharpening/four_parametrizations_test")
    return claims


def run_claims_cell(ledger, res, *, lr=0.1, reached=True, overshoot=0.001, gap=0.001, task=SPEC_TASK):
    """Execute the page's last code cell (its claims) on ``res`` (a ByParametrization of the random models)."""
    cell = [c for c in jupytext.read(PAGE).cells if c.cell_type == "code"][-1].source
    assert "claims.finish()" in cell
    exp = SimpleNamespace(reached=np.array([reached, True]), overshoot=lambda: overshoot)
    cfg = SimpleNamespace(lr=lr, init_scale=0.1, target_loss=0.1, n_train=2000, seeds=list(res.seeds))
    env = {"claims": ledger, "stats": stats, "targets": targets, "exp": exp, "cfg": cfg, "res": res, "task": task}
    exec(cell, {**env, "gap_balanced": gap})


def test_page_claims_pass_at_the_spec_setting(ledger):
    run_claims_cell(ledger, by_param())
    recs = ledger.records()
    assert {r["verdict"] for r in recs} == {"pass"} and len(recs) == 10
    assert [r["id"] for r in recs] == ["A1"] + ["A7"] * 9
    fafo = [r for r in recs if r["what"].startswith("FAFO: attention mass at L* (spec")][0]
    assert fafo["expected"] == pytest.approx(0.83)  # mean of the spec's seeds 0.79, 0.88, 0.82
    assert [p["holds"] for p in ledger._state["preconditions"]] == [True, True]


def test_page_claims_fafo_off_target_fails_and_two_seeds_are_outside(ledger):
    far = {**MASS, "FAFO": [0.95, 0.95, 0.96]}  # far from the spec's 0.83: fails
    with pytest.raises(ledger.ClaimFailed):
        run_claims_cell(ledger, by_param(far))
    failed = [r["what"] for r in ledger.records() if r["verdict"] == "fail"]
    assert len(failed) == 1 and failed[0].startswith("FAFO: attention mass at L* (spec")
    ledger.begin_page("sharpening/four_parametrizations_test2")
    run_claims_cell(ledger, by_param(n_seeds=2), lr=0.3)  # no overshoot precondition at η = 0.3
    recs = ledger.records()
    assert {r["verdict"] for r in recs} == {"outside"} and len(recs) == 10 and "seeds" in recs[0]["reason"]
    assert recs[-1]["verdict"] == "outside" and "η ≤ 0.1" in recs[-1]["reason"]  # the reduction at η = 0.3
    assert len(ledger._state["preconditions"]) == 1


def test_page_firm_ordering_fails_when_faco_is_not_the_sharpest(ledger):
    swapped = {**MASS, "FACO": [0.80, 0.82, 0.81]}  # below CACO in every seed
    with pytest.raises(ledger.ClaimFailed):
        run_claims_cell(ledger, by_param(swapped))
    share = [r for r in ledger.records() if r["what"].startswith("FACO minus the next sharpest")][0]
    assert share["verdict"] == "fail" and share["measured"] == 0.0


def test_page_a7_without_cafo_is_outside(ledger):
    res = by_param(names=["CACO", "FACO", "FAFO"])
    run_claims_cell(ledger, res)
    out = {r["what"].split(" (per seed")[0]: r["verdict"] for r in ledger.records()}
    assert out["range of attention mass across parametrizations at L*"] == "outside"
    assert out["CAFO: attention mass at L* (spec §8.2)"] == "outside" and out["FACO: attention mass at L*"] == "pass"


def test_page_matched_loss_is_a_precondition_not_a_claim(ledger):
    """Reaching L* and stopping within 5% of it is the page's protocol (preconditions), not claim A1; a miss
    fails the page at claims.finish()."""
    with pytest.raises(ledger.ClaimFailed, match="precondition"):
        run_claims_cell(ledger, by_param(), overshoot=0.006)  # 6% of L* below it
    pre = ledger._state["preconditions"]
    assert [p["holds"] for p in pre] == [True, False] and "L*" in pre[0]["what"]
    assert all("reached" not in r["what"] for r in ledger.records())
    ledger.begin_page("sharpening/four_parametrizations_test3")
    with pytest.raises(ledger.ClaimFailed, match="precondition"):
        run_claims_cell(ledger, by_param(), reached=False)
    assert [p["holds"] for p in ledger._state["preconditions"]] == [False]  # no overshoot check without L*


def test_page_reduction_gap_fails_above_its_tolerance(ledger):
    with pytest.raises(ledger.ClaimFailed, match="balanced"):
        run_claims_cell(ledger, by_param(), gap=0.02)
