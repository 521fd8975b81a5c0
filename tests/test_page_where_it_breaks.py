"""The primitives of ``book/sharpening/where_it_breaks`` (init scale × GD step grid; claims A7, A8; spec §8.2,
Q2, Q6): ``experiments.by_parametrization`` on a grid (``axes=``) and ``ByParametrization.at`` on a small trained
grid, and the two figure functions. The claims are checked on the page; here the page's criteria, glue and claims
cells run on hand-made grids, to show A7/A8 pass, fail, fall outside, and that the spec's stall is recorded as a
finding against A8 (≠, errata), never as a pass."""

from pathlib import Path
from types import SimpleNamespace

import jupytext
import numpy as np
import pytest

from attnflow import display
from attnflow.sharpening import data, experiments, figures, targets
from attnflow.sharpening.model import PARAMETRIZATIONS

PAGE = Path(__file__).resolve().parents[1] / "book" / "sharpening" / "where_it_breaks.py"
NAMES = list(PARAMETRIZATIONS)
SCALES, STEPS, SEEDS = [0.1, 1.0], [0.1, 1.0], [0, 1, 2]
MASS = {"CACO": 0.84, "CAFO": 0.55, "FACO": 0.99, "FAFO": 0.85}


@pytest.fixture(scope="module")
def tiny_grid():
    """CACO and FAFO on a 2 × 2 grid (init 0.1, 0.3 × step 0.3, 0.5), two seeds, and FAFO at r = 4."""
    task = data.Task(n_classes=3, n_common=4, seq_len=5)
    specs = experiments.grid(["CACO", "FAFO"], [1.0], [0, 1], [0.3, 0.5], [0.1, 0.3]) + experiments.grid(
        ["FAFO"], [4.0], [0, 1], [0.3, 0.5], [0.1, 0.3]
    )
    exp = experiments.run(specs, task, n_train=64, n_test=16, steps=300, target_loss=0.6, device="cpu")
    return exp, experiments.evaluate(exp, k_percents=[50])


def test_by_parametrization_on_a_grid_matches_select(tiny_grid):
    exp, held_out = tiny_grid
    four = experiments.by_parametrization(exp, held_out, axes=("init_scale", "lr_ov"), lr_ratio=1.0)
    fast = experiments.by_parametrization(exp, held_out, axes=("init_scale", "lr_ov"), lr_ratio=4.0)
    assert four.names == ["CACO", "FAFO"] and fast.names == ["FAFO"] and four.seeds == [0, 1]
    assert four.levels == {"init_scale": [0.1, 0.3], "lr_ov": [0.3, 0.5]}
    assert four["attn_relevant"].shape == (2, 2, 2, 2) and four["test_attn_relevant_each"].shape == (2, 2, 2, 2, 16)
    (i,) = exp.select(parametrization="FAFO", lr_ratio=4.0, init_scale=0.3, lr_ov=0.3, seed=1)
    assert fast.of("FAFO")[1, 0, 1] == exp.stats_final["attn_relevant"][i]
    assert fast.at("FAFO", "loss_final", init_scale=0.3, lr_ov=0.3)[1] == exp.loss_final[i]
    assert fast.at("FAFO", "reached", init_scale=0.3, lr_ov=0.3)[1] == exp.reached[i]
    assert (fast.at("FAFO", "test_correct_each", init_scale=0.3, lr_ov=0.3)[1] == held_out["correct_each"][i]).all()
    assert np.isnan(fast.at("FAFO", init_scale=1.0, lr_ov=0.3)).all()  # not on the grid
    assert np.isnan(fast.at("CACO", init_scale=0.3, lr_ov=0.3)).all()  # not trained at r = 4
    flat = experiments.by_parametrization(exp, held_out, lr_ratio=4.0, init_scale=0.1, lr_ov=0.5)  # no axes
    assert flat["attn_relevant"].shape == (1, 2) and flat.levels == {}
    assert (flat.of("FAFO") == fast.at("FAFO", init_scale=0.1, lr_ov=0.5)).all()


def test_by_parametrization_refuses_a_grid_with_missing_seeds(tiny_grid):
    exp, held_out = tiny_grid
    with pytest.raises(ValueError, match="seeds"):
        experiments.by_parametrization(exp, held_out, axes=("init_scale", "lr_ratio"))  # FAFO at r = 4 only


def fake(names, mass, *, reached=True, loss=0.099, scales=SCALES, steps=STEPS, n_seeds=3, B=8):
    """A hand-made ByParametrization on the (init_scale, lr_ov) grid: ``mass[name]`` is a number or a
    (scales, steps, seeds) array; every model stops at loss ``loss`` (reached: ``reached``)."""
    shape = (len(names), len(scales), len(steps), n_seeds)
    v = np.stack([np.broadcast_to(np.asarray(mass[n], dtype=float), shape[1:]) for n in names])
    values = {
        "attn_relevant": v,
        "loss_final": np.full(shape, loss),
        "reached": np.broadcast_to(np.asarray(reached), shape).copy(),
        "diverged": np.zeros(shape, bool),
        "test_attn_relevant_each": np.repeat(v[..., None], B, axis=-1),
        "test_correct_each": np.ones((*shape, B), bool),
        "test_top1_relevant": np.ones(shape),
    }
    return experiments.ByParametrization(
        list(names), list(range(n_seeds)), values, {"init_scale": scales, "lr_ov": steps}
    )


@pytest.fixture
def ledger(tmp_path, monkeypatch):
    from attnflow import claims

    monkeypatch.setenv("ATTNFLOW_CLAIMS_DIR", str(tmp_path))
    monkeypatch.setattr(display, "number", lambda name, value, show=False: GLUED.__setitem__(name, value))
    monkeypatch.setattr(display, "table", lambda rows, floatfmt=None: rows)
    claims.begin_page("sharpening/where_it_breaks_test")
    GLUED.clear()
    return claims


GLUED: dict = {}


def run_page_cells(ledger, four, fast, **cfg):
    """Execute the page's code cells from the per-cell criteria to the claims on hand-made ``four`` and ``fast``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = [c.source for c in jupytext.read(PAGE).cells if c.cell_type == "code"]
    first = next(i for i, c in enumerate(cells) if c.startswith("CRITERIA ="))
    conf = (
        dict(
            init_scales=SCALES,
            lrs=STEPS,
            seeds=SEEDS,
            fast_ratio=10.0,
            init_scale=0.1,
            target_loss=0.1,
            max_time=200.0,
            n_train=1000,
            n_classes=5,
            n_common=20,
            seq_len=12,
        )
        | cfg
    )
    scales, steps = sorted(conf["init_scales"]), sorted(conf["lrs"])
    env = {
        "np": np,
        "claims": ledger,
        "display": display,
        "figures": figures,
        "targets": targets,
        "MODEL_COLORS": {n: "C0" for n in NAMES},
        "cfg": SimpleNamespace(**conf),
        "four": four,
        "fast": fast,
        "scales": scales,
        "steps": steps,
        "exp": SimpleNamespace(diverged=np.zeros(1, bool)),
    }
    for c in cells[first:]:
        exec(c, env)
    plt.close("all")
    return env


def test_page_passes_at_small_init_and_records_the_stall_as_a_finding(ledger):
    stall = np.array([0.79, 0.95, 0.95])  # seed 0 stalls below FAFO (0.85) at init 1.0, as in spec §8.2
    fast_mass = np.stack([np.full((2, 3), 0.998), np.broadcast_to(stall, (2, 3))])  # (scales, steps, seeds)
    env = run_page_cells(ledger, fake(NAMES, MASS), fake(["FAFO"], {"FAFO": fast_mass}))
    recs = ledger.records()
    assert [(r["id"], r["verdict"]) for r in recs] == [
        ("A7", "pass"),
        ("A8", "pass"),
        ("A7", "outside"),
        ("A8", "outside"),
        ("A8", "disagrees"),
    ]
    assert recs[-1]["errata"] == "errata-sharpening-stall" and recs[-1]["source"] == "paper"
    assert all(r["domain_reads"] == ["parameters"] for r in recs)
    assert all("(parameters)" in c for r in recs for c in r["domain"].split("; ") if "seeds to decide" not in c)
    assert env["held"]["A"].tolist() == [[True, True], [False, False]]
    for key in (
        "stall_lo",
        "stall_hi",
        "stall_fafo",
        "n_stall",
        "big_scale",
        "big_faco_stalled",
        "n_big_runs",
        "weak_correct_big",
        "max_overshoot",
        "n_fafo_above",
        "n_fafo_below",
        "ref_lr",
    ):  # cited by errata
        assert key in GLUED, key
    assert GLUED["n_stall"] == 1 and GLUED["stall_lo"] == pytest.approx(0.79)  # the page's finish() did not raise


def test_page_a8_passes_at_init_one_without_a_stall(ledger):
    run_page_cells(ledger, fake(NAMES, MASS), fake(["FAFO"], {"FAFO": 0.998}))
    assert ledger.records()[-1]["verdict"] == "pass"


def test_page_a7_fails_when_faco_is_not_the_sharpest_at_the_reference(ledger):
    with pytest.raises(ledger.ClaimFailed):  # the page's claims.finish()
        run_page_cells(ledger, fake(NAMES, {**MASS, "FACO": 0.80}), fake(["FAFO"], {"FAFO": 0.998}))
    assert ledger.records()[0]["id"] == "A7" and ledger.records()[0]["verdict"] == "fail"


def test_page_reference_cell_not_matched_fails_its_precondition(ledger):
    with pytest.raises(ledger.ClaimFailed):  # 10% below L*: not a matched comparison
        run_page_cells(ledger, fake(NAMES, MASS, loss=0.09), fake(["FAFO"], {"FAFO": 0.998}))
    held = [p["holds"] for p in ledger._state["preconditions"]]
    assert held == [False, True]  # step 0.1 in the domain: fails; step 1: not required


def test_page_outside_the_spec_setting(ledger):
    steps = [0.5, 1.0]
    run_page_cells(
        ledger, fake(NAMES, MASS, steps=steps), fake(["FAFO"], {"FAFO": 0.998}, steps=steps), max_time=100.0, lrs=steps
    )
    recs = ledger.records()
    assert [r["verdict"] for r in recs] == ["outside"] * 5
    assert "time budget" in recs[0]["reason"] and "close to the flow" in recs[-1]["reason"]


def test_figures_draw_the_grid_and_the_histograms():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    held = {"L": np.array([[True, False], [True, True]]), "A": np.ones((2, 2), bool)}
    fig = figures.criteria_grid(
        held,
        {"L": "all reach", "A": "faster"},
        np.full((2, 2), 0.9),
        10.0,
        np.array([[0.1, -0.2], [0.0, 0.3]]),
        SCALES,
        STEPS,
    )
    assert len(fig.axes) == 3 and [t.get_text() for t in fig.axes[0].texts] == ["✓", "L", "✓", "✓"]
    plt.close(fig)
    four = fake(NAMES, MASS)
    fig = figures.attention_histograms(
        {("FAFO r=1", "C0"): (four, "FAFO"), ("FACO", "C1"): (four, "FACO")}, SCALES, 0.1
    )
    assert len(fig.axes) == 2 and fig.axes[1].get_title() == "init std 1/√d, GD step 0.1"
    legend = fig.axes[0].get_legend()
    assert legend.get_title().get_text() == "look elsewhere"
    assert [t.get_text() for t in legend.get_texts()] == ["FAFO r=1: 0.0%", "FACO: 0.0%"]
    plt.close(fig)
