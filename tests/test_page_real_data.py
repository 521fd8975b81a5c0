"""The primitives of the three real-data pages ``book/sharpening/real_{squad,hatexplain,sva}`` (claims
A6, A9–A11): the splits and data table, the run line, the paired-change summary and seed means of a
``realdata.RealExperiment``, the two figure functions — and each page's claims cell executed on
hand-made experiments, where its verdicts come from the seed interval in three kinds (pass /
contradicted / inconclusive), a non-finite value fails and fewer than 3 seeds are outside. No
training beyond one tiny run; offline, in seconds."""

from pathlib import Path
from types import SimpleNamespace

import jupytext
import numpy as np
import pytest
import torch

from attnflow.sharpening import figures, realdata, targets

BOOK = Path(__file__).resolve().parents[1] / "book" / "sharpening"
PAGES = {"squad": "real_squad.py", "hatexplain": "real_hatexplain.py", "sva": "real_sva.py"}
ERRATA = "errata-sharpening-real-data"


def synthetic_experiment(changes: dict, optimizers=("adamw", "sgd"), seeds=(0, 1, 2), r_max=10.0, name="sva"):
    """A RealExperiment whose per-model metrics change from r = 1 to r_max by ``changes[key]`` (a number,
    or one number per seed); every other metric stays put."""
    lr_ratio = np.repeat([1.0, r_max], len(seeds))  # (P,) specs are r-major
    fast = lr_ratio == r_max
    base = {
        "accuracy": 0.6,
        "ac": 0.2,
        "acmc": 0.15,
        "attn_relevant": 0.3,
        "entropy": 2.0,
        "sufficiency": 0.1,
        "comprehensiveness": 0.2,
    }
    taus = np.array([0.3, 0.5, 0.7])
    metrics = {}
    for opt in optimizers:
        m = {}
        for key, value in base.items():
            m[key] = np.full(len(lr_ratio), value)
            m[key][fast] += np.broadcast_to(changes.get(key, 0.0), (len(seeds),))
        m.update(
            ac_sweep=np.stack([m["ac"] + 0.1, m["ac"], m["ac"] - 0.1]),  # (n_tau, P): AC falls with τ_a
            acmc_sweep=np.tile(m["acmc"], (len(taus), 1)),
            tau_attns=taus,
            tau_attn=0.5,
            tau_conf=0.5,
            lr_ratio=lr_ratio,
            seed=np.tile(seeds, 2),
            attn_each=np.random.default_rng(0).random((len(lr_ratio), 50)),
            conf_each=np.random.default_rng(1).random((len(lr_ratio), 50)),
        )
        metrics[opt] = m
    ds = SimpleNamespace(name=name, standin=True)
    return realdata.RealExperiment(ds, None, list(range(30)), list(range(20)), {}, metrics)


# -- the paired-change summary and the seed means ---------------------------------------------------
def test_changes_one_row_per_optimizer_and_metric_with_every_seed():
    ex = synthetic_experiment({"ac": [0.1, -0.02, 0.05], "entropy": -0.5})
    rows = ex.changes(10.0)
    assert [(r["optimizer"], r["metric"]) for r in rows[:2]] == [("adamw", "entropy"), ("adamw", "ac")]
    assert len(rows) == 2 * len(realdata.SHORT)
    ac = rows[1]
    assert ac["per seed"] == "[+0.100, -0.020, +0.050]" and ac["seeds > 0"] == "2 of 3"
    assert ac["mean"] == pytest.approx(0.13 / 3)
    np.testing.assert_allclose(ex.change("sgd", "entropy", 10.0), [-0.5, -0.5, -0.5])
    assert [r["metric"] for r in ex.changes(10.0, keys=("accuracy",))] == ["accuracy", "accuracy"]


def test_seed_means_name_every_metric_and_are_nan_for_an_optimizer_not_run():
    ex = synthetic_experiment({"entropy": -0.5, "ac": 0.1}, optimizers=("adamw",))
    means = ex.seed_means({"r1": 1.0, "rmax": 10.0})
    assert len(means) == 2 * 2 * len(realdata.SHORT)  # optimizers × ratios × metrics, each key once
    assert means["ent_adamw_r1"] == 2.0 and means["ent_adamw_rmax"] == pytest.approx(1.5)
    assert means["ac_adamw_rmax"] == pytest.approx(0.3) and means["rel_adamw_r1"] == pytest.approx(0.3)
    assert np.isnan(means["acc_sgd_r1"]) and np.isnan(means["comp_sgd_rmax"])
    assert ex.seed_mean("adamw", "ac", 10.0, tau=0.7) == pytest.approx(0.2)  # the τ_a sweep's last row
    assert ex.seed_mean("adamw", "ac", 1.0, tau=0.3) == pytest.approx(0.3)
    assert np.isnan(ex.seed_mean("sgd", "ac", 1.0, tau=0.7))
    assert ex.change_text("adamw", "ac", 10.0) == "[+0.100, +0.100, +0.100]"
    assert ex.change_text("sgd", "ac", 10.0) == "n/a"
    assert realdata.signed([0.0, -0.0004]) == "[+0.000, -0.000]"


def test_label_title_and_r_max_name_the_data():
    ex = synthetic_experiment({}, name="squad")
    assert ex.label == "SQuAD stand-in" and ex.title == "SQuAD (stand-in)" and ex.r_max == 10.0
    ex.dataset.standin = False
    assert ex.label == "SQuAD" and ex.title == "SQuAD (real data)"


# -- the data: splits, table, the run line -----------------------------------------------------------
class FakeSet:
    """What ``realdata.splits`` and ``data_rows`` read of a ``ClassificationSet``."""

    name, task, splits = "sva", "classification", ("train", "validation")

    def encode(self, split, tok, max_len):
        n = 40 if split == "train" else 20
        ids = torch.arange(n * 3).reshape(n, 3) % 9 + 3
        return SimpleNamespace(ids=ids, relevant=ids == 5, labels=torch.arange(n) % 2, dropped=1)

    def summary(self):
        return {"train": {"n": 40, "labels": {"singular": 0.5, "plural": 0.5}}, "validation": {"n": 20}}


def test_splits_take_fixed_subsets_and_the_held_out_split():
    train, test = realdata.splits(FakeSet(), None, 3, 10, 50)
    assert len(train) == 10 and len(test) == 20 and train.dropped == 1  # n_test above the split: all of it
    assert train.ids.shape == (10, 4) and bool((train.ids[:, 0] == realdata.SEP).all())  # [<sep>] + tokens
    again, _ = realdata.splits(FakeSet(), None, 3, 10, 50)
    assert torch.equal(train.labels, again.labels) and torch.equal(train.ids, again.ids)  # fixed subsets
    rows = realdata.data_rows(FakeSet())
    assert rows == [{"split": "train", "n": 40, "singular": 0.5, "plural": 0.5}, {"split": "validation", "n": 20}]


def test_a_run_describes_itself_in_one_line():
    cfg = realdata.RealConfig("FAFO", 12, 2, d_model=4, d_head=4, init_scale=1.0)
    train, _ = realdata.splits(FakeSet(), None, 3, 32, 8)
    cfg = realdata.RealConfig("FAFO", 12, 2, d_model=4, d_head=4, init_scale=1.0)
    run = realdata.run(cfg, train, [1.0, 10.0], [0], optimizer="sgd", lr=0.1, epochs=1, batch_size=16, device="cpu")
    line = run.describe()
    assert line.startswith("sgd: 2 models, 2 steps,") and "final training loss (seed mean) r = 1: " in line
    assert "r = 10: " in line


def test_figures_take_the_experiment_record():
    import matplotlib

    matplotlib.use("Agg")
    ex = synthetic_experiment({"entropy": -0.5})
    assert len(figures.real_data_metrics(ex).axes) == 4
    fig = figures.real_data_dtap(ex, relevant="the subject noun", unit="prefixes")
    assert len(fig.axes) == 3 and fig.axes[0].get_xlabel() == "attention on the subject noun"  # 2 maps + colour bar


# -- each page's claims cell on hand-made experiments -------------------------------------------------
@pytest.fixture
def ledger(tmp_path, monkeypatch):
    from attnflow import claims

    monkeypatch.setenv("ATTNFLOW_CLAIMS_DIR", str(tmp_path))
    claims.begin_page("sharpening/real_test")
    return claims


def run_claims_cell(page: str, ex, ledger, glued=None):
    """Execute the page's last code cell (its claims) on ``ex``."""
    cell = [c for c in jupytext.read(BOOK / PAGES[page]).cells if c.cell_type == "code"][-1].source
    assert "claims.finish()" in cell and "claims.check_mean" in cell
    ac_1, ac_fast = targets.SQUAD_AC
    display = SimpleNamespace(glue=lambda **values: (glued if glued is not None else {}).update(values))
    names = dict(claims=ledger, display=display, ex=ex, r_max=ex.r_max, ac_1=ac_1, ac_fast=ac_fast)
    exec(cell, {**names, "cfg": SimpleNamespace(tau_attn=0.5, tau_conf=0.5)})


def verdicts(ledger, claim=None):
    return [r["verdict"] for r in ledger.records() if claim is None or r["id"] == claim]


@pytest.mark.parametrize("page", ["hatexplain", "sva"])
def test_a10_pages_check_entropy_ac_acmc_accuracy_and_eraser_on_the_seed_interval(page, ledger):
    """Entropy falls consistently (interval below 0: pass); AC rises by 0.02 in every seed, the whole
    interval below the 0.05 criterion (contradicted); ACMC rises by 0.1 (pass); accuracy falls by 0.08,
    the interval outside ±0.05 (contradicted); ERASER moves the better way with AdamW (pass, pass)
    and sufficiency the worse way with SGD (contradicted). Every check carries the errata label and
    none fails the page."""
    ex = synthetic_experiment(
        {
            "entropy": [-0.5, -0.45, -0.55],
            "ac": 0.02,
            "acmc": 0.1,
            "accuracy": -0.08,
            "sufficiency": -0.02,
            "comprehensiveness": 0.03,
        },
        name=page,
    )
    ex.metrics["sgd"]["sufficiency"][ex.metrics["sgd"]["lr_ratio"] == 10.0] += 0.05  # Δsuff = +0.03 with SGD
    glued = {}
    run_claims_cell(page, ex, ledger, glued)
    got = [(r["id"], r["verdict"]) for r in ledger.records()]
    one = [("A6", "pass"), ("A10", "contradicted"), ("A10", "pass"), ("A10", "contradicted"), ("A11", "pass")]
    assert got == one + [("A11", "pass")] + one[:4] + [("A11", "contradicted"), ("A11", "pass")]
    assert all(r["errata"] == ERRATA for r in ledger.records())
    assert ledger.records()[0]["what"].startswith(f"{realdata.TITLES[page]} stand-in adamw: attention entropy")
    assert "interval above 0.05" in ledger.records()[1]["tolerance"]
    assert "target ± 0.05" in ledger.records()[3]["tolerance"] and glued == {"rise": 0.05, "acc_atol": 0.05}
    ledger.finish()  # nothing failed


def test_squad_checks_a9_without_acmc_and_quotes_the_papers_rise(ledger):
    ex = synthetic_experiment({"entropy": -0.5, "ac": 0.3, "accuracy": [-0.01, 0.0, 0.01]}, name="squad")
    run_claims_cell("squad", ex, ledger)
    assert [r["id"] for r in ledger.records()] == ["A6", "A9", "A9", "A11", "A11"] * 2
    assert verdicts(ledger, "A9") == ["pass", "pass"] * 2  # AC rises by 0.3; accuracy inside ±0.04
    ac = ledger.records()[1]
    assert ac["expected"] is None and "a rise of 0.31" in ac["tolerance"] and "AC 0.12 → 0.43" in ac["tolerance"]
    assert "target ± 0.04" in ledger.records()[2]["tolerance"]


@pytest.mark.parametrize("page", list(PAGES))
def test_a_noisy_change_is_inconclusive_and_a_nan_fails(page, ledger):
    """A mean entropy fall whose interval reaches above 0 is inconclusive, with the seeds that would
    decide it; a NaN always fails the page."""
    ex = synthetic_experiment(
        {"entropy": [-0.5, 0.3, -0.9], "accuracy": [0.0, float("nan"), 0.0]}, optimizers=("adamw",), name=page
    )
    with pytest.raises(ledger.ClaimFailed, match="accuracy"):
        run_claims_cell(page, ex, ledger)
    rec = {r["what"].split(", ")[0].split(": ")[1]: r for r in ledger.records()}
    assert rec["attention entropy"]["verdict"] == "inconclusive" and rec["attention entropy"]["seeds_to_decide"] > 3
    assert rec["test accuracy"]["verdict"] == "fail"


@pytest.mark.parametrize("page", list(PAGES))
def test_accuracy_unchanged_is_an_equivalence_test_and_two_seeds_are_outside(page, ledger):
    drop = synthetic_experiment({"accuracy": [-0.052, -0.093, -0.06]}, optimizers=("adamw",), name=page)
    run_claims_cell(page, drop, ledger)  # interval [−0.12, −0.01] straddles the band
    acc = [r for r in ledger.records() if "test accuracy" in r["what"]]
    assert [r["verdict"] for r in acc] == ["inconclusive"]
    two = synthetic_experiment({"entropy": -0.5, "ac": 0.3}, optimizers=("adamw",), seeds=(0, 1), name=page)
    n = len(ledger.records())
    run_claims_cell(page, two, ledger)
    assert set(verdicts(ledger)[n:]) == {"outside"} and "at least 3 seeds" in ledger.records()[-1]["reason"]
