"""Run-cost estimates of the real-data pages count the rows the loader offers (issue 23): offline, the
stand-in's training split caps ``n_train``, so a paper profile's 10⁵–10⁶ rows are not estimated as hours
of training that the stand-in cannot feed."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from attnflow.data import sources, tasks
from attnflow.data.files import read_jsonl, verified_path
from attnflow.sharpening import contracts


@pytest.mark.parametrize("name", ["squad", "hatexplain", "sva"])
def test_train_rows_is_the_standin_training_split(name, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    path, _ = verified_path(tasks.SPECS[name].standin_file)
    n = sum(r["split"] == "train" for r in read_jsonl(path))
    assert tasks.train_rows(name, "standin") == n
    assert tasks.train_rows(name, "auto") == (n if sources.will_use_standin(tasks.SPECS[name]) else None)
    assert tasks.train_rows(name, "hub") is None


def test_online_auto_is_not_capped(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    assert tasks.train_rows("squad", "auto") is None  # the real set may load: its size is not known
    assert tasks.train_rows("sva", "auto") == tasks.train_rows("sva", "standin")  # no Hub id: always the stand-in


def test_paper_estimate_counts_the_standin_rows(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    estimate = contracts.REAL_SVA.cost[0]
    paper = dict(  # the paper profile's sizes (book/profiles.yml)
        lr_ratios=[1.0, 3.0, 10.0, 30.0],
        seeds=[0, 1, 2, 3, 4],
        optimizers=["adamw", "sgd"],
        epochs_adamw=15.0,
        epochs_sgd=30.0,
        batch_size=64,
        max_len=64,
        vocab_size=10000,
        d_model=64,
    )
    rows = tasks.train_rows("sva", "standin")
    at_rows = estimate(SimpleNamespace(**paper, source="standin", n_train=rows))
    assert estimate(SimpleNamespace(**paper, source="standin", n_train=1_000_000)) == at_rows
    assert estimate(SimpleNamespace(**paper, source="hub", n_train=1_000_000)) > 100 * at_rows
