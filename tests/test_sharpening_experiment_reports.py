"""Page report of the synthetic sharpening experiment where_it_breaks on small
hand-made inputs: the numbers they derive, the glue keys
the prose cites, and the claim verdicts (pass / fail / outside domain) — no training."""

from types import SimpleNamespace

import numpy as np
import pytest

from attnflow.sharpening import data, targets
from attnflow.sharpening.model import PARAMETRIZATIONS

NAMES = list(PARAMETRIZATIONS)
SPEC_TASK = data.Task(**{k: targets.FULL_CONFIG[k] for k in ("n_classes", "n_common", "seq_len")})  # spec §8.2


@pytest.fixture
def ledger(tmp_path, monkeypatch):
    from attnflow import claims

    monkeypatch.setenv("ATTNFLOW_CLAIMS_DIR", str(tmp_path))
    claims.begin_page("sharpening/report_test")
    return claims


def verdicts(ledger):
    return [(r["id"], r["verdict"]) for r in ledger.records()]


@pytest.fixture
def glued(monkeypatch):
    from attnflow import display

    out = {}
    monkeypatch.setattr(display, "number", lambda name, value, show=False: out.__setitem__(name, value))
    return out


# -- where_it_breaks ---------------------------------------------------------------------------------
def breaks_inputs(stall=0.79, n_train=2000):
    """A 2 × 2 grid (init 0.1, 1.0 × step 0.1, 1.0), seeds 0–2, every model reaches L*."""
    from attnflow.sharpening import experiments

    specs, mass = [], []
    value = {"CACO": 0.84, "CAFO": 0.55, "FACO": 0.99, "FAFO": 0.85}
    for s in (0.1, 1.0):
        for lr in (0.1, 1.0):
            for seed in (0, 1, 2):
                for n in NAMES:
                    specs.append(experiments.ModelSpec(n, 1.0, seed, lr, s))
                    mass.append(value[n])
                specs.append(experiments.ModelSpec("FAFO", 10.0, seed, lr, s))
                mass.append(stall if s == 1.0 else 0.998)
    P = len(specs)
    cfg = SimpleNamespace(
        init_scales=[0.1, 1.0],
        lrs=[0.1, 1.0],
        seeds=[0, 1, 2],
        fast_ratio=10.0,
        init_scale=0.1,
        target_loss=0.1,
        n_train=n_train,
        max_time=400.0,
    )
    test_mass = np.tile(np.asarray(mass)[:, None], (1, 10))
    return (
        cfg,
        specs,
        np.asarray(mass),
        np.ones(P, bool),
        np.zeros(P, bool),
        np.full(P, 0.0999),
        test_mass,
        np.ones((P, 10), bool),
        np.zeros(P),
    )


def test_where_it_breaks_summary_and_the_stall_checks(ledger, glued):
    from attnflow.sharpening.reports import where_it_breaks

    cfg, *arrays = breaks_inputs()
    rep = where_it_breaks.summarize(cfg, SPEC_TASK, *arrays, n_models=60, steps_run=10, wall_s=1.0)
    assert rep.n_cells == 4 and rep.n_complete == 4 and rep.n_fail_A == 2 and rep.fail_A_min == 1.0
    assert rep.spec_seed0 == pytest.approx(0.79) and rep.stall_seed0 == pytest.approx((0.79, 0.85))
    rep.glue()
    for key in ("stall_lo", "stall_hi", "stall_fafo", "n_stall", "wrong_one", "big_scale", "max_overshoot", "ref_lr"):
        assert key in glued, key
    rep.check_claims()
    recs = ledger.records()
    assert [r["verdict"] for r in recs] == ["pass", "pass", "disagrees"]  # the stall: a finding against A8
    assert (
        recs[-1]["id"] == "A8" and recs[-1]["errata"] == where_it_breaks.ERRATA_STALL and recs[-1]["source"] == "paper"
    )
    ledger.finish()  # a finding is not a build failure


def test_where_it_breaks_without_a_stall_a8_passes_in_the_papers_direction(ledger):
    from attnflow.sharpening.reports import where_it_breaks

    cfg, *arrays = breaks_inputs(stall=0.9)  # no stall: FAFO ×10 sharper than FAFO
    where_it_breaks.summarize(cfg, SPEC_TASK, *arrays, n_models=60, steps_run=10, wall_s=1.0).check_claims()
    assert [r["verdict"] for r in ledger.records()] == ["pass", "pass", "pass"]
    ledger.begin_page("sharpening/report_test3")
    cfg, *arrays = breaks_inputs()
    cfg.lrs = [1.0]  # no step close to the flow: outside
    arrays_small = where_it_breaks.summarize(cfg, SPEC_TASK, *arrays, n_models=60, steps_run=10, wall_s=1.0)
    arrays_small.check_claims()
    assert ledger.records()[-1]["verdict"] == "outside"
