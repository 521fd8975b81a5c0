"""Primitives of the real-text page (focus_dilution/real_text; claims B10, B11): seeds trained as one
batch give each seed's own run, the first move is looked for after condensation, the lifts B11 reads
there, the escape-due time of B10's domain (from the state at the end of condensation), the per-seed
columns, tables and glue, and the two figures. Tiny synthetic token data, offline, in seconds."""

import math

import numpy as np
import pytest
import torch

from attnflow.focus_dilution import chain, realtext

SETTINGS = dict(seq_len=16, n_train=256, n_eval=128, steps=300, lr=0.5, record_every=10, init_scale=1e-2, d_model=4)


@pytest.fixture(scope="module")
def text():
    ch = chain.hub_family(n_low=5)
    ids = chain.sample_sequences(ch, 1, 6000, torch.Generator().manual_seed(0))[0]
    units = [" ", "the"] + [f"w{k}" for k in range(ch.d - 3)] + ["<unk>"]
    return realtext.RealStream("toy", "[test] toy chain", True, ids[:5000], ids[5000:], units)


@pytest.fixture(scope="module")
def runs(text):
    return realtext.train_seeds(text, [1, 2], device="cpu", **SETTINGS)  # seed 1 moves within 300 steps


def test_seeds_trained_as_one_batch_are_each_seeds_own_run(text, runs):
    alone = realtext.train(text, seed=2, device="cpu", **SETTINGS)
    for name in ("real", "markov"):
        assert torch.equal(runs[1].runs[name].states["W0"][0], alone.runs[name].states["W0"][0])  # same θ(0)
        np.testing.assert_allclose(runs[1].val_loss[name], alone.val_loss[name], rtol=1e-4, atol=1e-6)
    assert torch.equal(runs[0].runs["real"].states["W0"][0], runs[0].runs["markov"].states["W0"][0])  # paired
    assert not torch.equal(runs[0].runs["real"].states["W0"][0], runs[1].runs["real"].states["W0"][0])
    assert not torch.equal(runs[0].eval_examples.counts, runs[1].eval_examples.counts)  # each seed its windows


def test_first_move_after_condensation_and_the_lifts_b11_reads(runs):
    res = runs[0]
    m = realtext.milestones(res, move=0.01, n_top=3, mid=range(3, 5))
    assert m["t_move"] >= m["t_cond"]
    i = int(np.argmin(np.abs(res.t - m["t_move"])))
    lift = res.lift()[i]
    assert m["space_lift_move"] == pytest.approx(lift[0]) and m["the_lift_move"] == pytest.approx(lift[1])
    assert m["mid_lift_move"] == pytest.approx(lift[3:5].mean())
    assert m["top_lift_move"] == pytest.approx(lift[1:3].mean())
    assert m["paper_order"] == realtext.paper_order((lift[0], lift[1], lift[3:5].mean()))
    i_late, _ = res.first_move(0.01, start=len(res.t) - 5)  # the search starts where it is told
    assert i_late >= len(res.t) - 5


def test_escape_due_is_the_forecast_plus_decades_of_drop_per_seed():
    due = realtext.escape_due([0.05, 0.0], [100.0, 50.0], factor=1.0)
    assert due[0] == pytest.approx(100.0 + np.log(10) / (2 * 0.05)) and math.isinf(due[1])
    assert realtext.escape_due(0.05, 100.0, factor=2.0) == pytest.approx(100.0 + 2 * np.log(10) / 0.1)


def test_columns_tables_and_glue_of_several_seeds(text, runs):
    first = realtext.milestones(runs[0], move=0.01, n_top=3, mid=range(3, 5))
    marks = [first, {**first, "move_corr": 0.5, "escaped": True}]
    cols = realtext.seed_columns(marks)
    assert list(cols["move_corr"]) == [first["move_corr"], 0.5] and cols["escaped"].dtype == bool
    assert "move_change" not in cols  # vectors stay in the milestones
    rows = realtext.milestone_rows({"toy": marks}, [1, 2])
    assert [r["seed"] for r in rows] == [1, 2] and set(realtext.TABLE_KEYS) <= set(rows[0])
    assert realtext.data_rows({"toy": text})[0]["#1"].startswith("␣")
    glued = realtext.glue_values(runs[0], {**marks[0], "t_escape_markov": float("nan")})
    assert glued["hub"] == text.label(0) and glued["t_escape_markov_txt"] == "not within the run"
    assert glued["escape_diff_txt"] == "no common time" and all(np.ndim(v) == 0 for v in glued.values())


def test_figures_of_two_seeds(runs):
    import matplotlib

    matplotlib.use("Agg")
    from attnflow.focus_dilution import figures

    marks = {"a": realtext.milestones(runs[0], move=0.01, n_top=3, mid=range(3, 5))}
    assert len(figures.real_text_runs({"a": runs[0]}, marks, range(3, 5)).axes) == 4  # 3 panels + a twin axis
    assert len(figures.real_text_moves({"a": runs[0]}, marks, 3).axes) == 1
