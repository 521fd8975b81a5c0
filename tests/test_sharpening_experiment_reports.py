"""Page reports of the synthetic sharpening experiments (four_parametrizations, dtap_heatmaps,
ratio_sweep, where_it_breaks) on small hand-made inputs: the numbers they derive, the glue keys
the prose cites, and the claim verdicts (pass / fail / outside domain) — no training."""
from types import SimpleNamespace

import numpy as np
import pytest

from attnflow.sharpening import data, targets
from attnflow.sharpening.model import PARAMETRIZATIONS
from attnflow.sharpening.reports import dtap_heatmaps, four_parametrizations

NAMES = list(PARAMETRIZATIONS)
SPEC_TASK = data.Task(**{k: targets.FULL_CONFIG[k] for k in ("n_classes", "n_common", "seq_len")})   # spec §8.2


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


# -- four_parametrizations ------------------------------------------------------------------------
MASS = {"CACO": [0.844, 0.843, 0.845], "CAFO": [0.55, 0.54, 0.55], "FACO": [0.991, 0.990, 0.991],
        "FAFO": [0.84, 0.83, 0.85]}


def four_inputs(seeds=(0, 1, 2), lr=0.1, mass=MASS, overshoot=0.001):
    """A fake sweep record: the random models of every parametrization, then one balanced model each."""
    n = len(seeds)
    P = 4 * n + 4
    final = np.concatenate([np.asarray(mass[k][:n]) for k in NAMES] + [np.array([0.85, 0.56, 0.98, 0.9])])
    R = 3
    run = SimpleNamespace(stats_final={"attn_relevant": final}, stopped_at=np.full(P, 100), reached=np.ones(P, bool),
                          loss_final=np.full(P, 0.1 - overshoot), loss=np.tile(np.linspace(1, 0.1, R)[:, None], (1, P)),
                          stats={"attn_relevant": np.tile(final, (R, 1)), "accuracy": np.ones((R, P))},
                          steps=np.arange(R) * 10, wall_s=1.0, steps_run=101)
    rand = {k: np.arange(i * n, (i + 1) * n) for i, k in enumerate(NAMES)}
    bal = {k: 4 * n + i for i, k in enumerate(NAMES)}
    ode = {**{(k, "uniform"): v for k, v in zip(NAMES, [0.84, 0.54, 0.98, 0.72])},
           **{(k, "exact"): v for k, v in zip(NAMES, [0.851, 0.561, 0.981, 0.899])}}
    cfg = SimpleNamespace(lr=lr, init_scale=0.1, target_loss=0.1, n_train=2000, seeds=list(seeds), attend_self=False,
                          ode_init=0.1)
    return cfg, SPEC_TASK, run, rand, bal, ode


def four_report(**kw):
    cfg, task, run, rand, bal, ode = four_inputs(**kw)
    return four_parametrizations.summarize(cfg, task, run, NAMES, rand, bal, np.asarray(run.stats_final["attn_relevant"]),
                                           np.ones(len(run.loss_final)), ode, {"CA": 3.2, "FA": 6.4},
                                           len(run.loss_final))


def test_four_summary_numbers_and_glue_keys(glued):
    rep = four_report()
    assert rep.spec_setting and rep.n_seeds == 3 and rep.N == 2000
    assert rep.mean_mass("FACO") == pytest.approx(np.mean(MASS["FACO"]))
    assert rep.gap_balanced == pytest.approx(0.001)                    # max |balanced − exact ODE|
    assert rep.fafo_above == 1                                          # 0.85 > 0.845 only in seed 2
    assert rep.max_overshoot == pytest.approx(0.001)
    rep.glue()
    for key in ("K", "M", "T", "N", "d", "n_compete", "mass_FAFO", "mass_lo_FAFO", "mass_hi_FAFO", "steps_CACO",
                "r_eff_CA", "r_eff_FA", "gap_balanced", "ode_uniform_CACO", "ode_exact_FAFO", "balanced_FAFO",
                "fafo_above", "n_seeds", "wall_s"):
        assert key in glued, key
    assert "models" not in glued and "curves" not in glued
    assert len(rep.rows()) == 4 and "FAFO > CACO in 1 of 3 seeds" in rep.comparison()


def test_four_claims_pass_at_the_spec_setting(ledger):
    four_report().check_claims()
    assert {v for _, v in verdicts(ledger)} == {"pass"}
    fafo = [r for r in ledger.records() if r["what"].startswith("FAFO: attention mass at L* (spec")][0]
    assert fafo["expected"] == pytest.approx(0.83)                       # mean of the spec's seeds 0.79, 0.88, 0.82
    ledger.finish()


def test_four_claims_mean_off_target_fails_and_few_seeds_are_outside(ledger):
    far = {**MASS, "FAFO": [0.95, 0.95, 0.96]}                           # far from the spec's 0.83: fails
    four_report(mass=far).check_claims()
    failed = [r["what"] for r in ledger.records() if r["verdict"] == "fail"]
    assert len(failed) == 1 and failed[0].startswith("FAFO: attention mass at L* (spec")
    ledger.begin_page("sharpening/report_test2")
    four_report(seeds=(0, 1), lr=0.3).check_claims()
    out = {r["what"].split(" (per seed")[0]: r["reason"] for r in ledger.records() if r["verdict"] == "outside"}
    assert "largest L* − loss at the stop step" in out and "η = 0.3" in out["largest L* − loss at the stop step"]
    assert all("seeds" in out[k] for k in out if "attention mass" in k)
    ledger.finish()                                                      # outside is never a failure


# -- dtap_heatmaps --------------------------------------------------------------------------------
def dtap_inputs(seeds=(0, 1, 2), ratios=(1.0, 10.0)):
    """Held-out values per model: the attention of each model type is centred on a known mass."""
    centre = {("CACO", 1.0): 0.8, ("CAFO", 1.0): 0.5, ("FACO", 1.0): 0.97, ("FAFO", 1.0): 0.82, ("FAFO", 10.0): 0.997}
    specs, attn, conf = [], [], []
    rng = np.random.default_rng(0)
    kinds = [(n, 1.0) for n in NAMES] + [("FAFO", r) for r in ratios if r != 1.0]
    for n, r in kinds:
        for s in seeds:
            specs.append(SimpleNamespace(parametrization=n, lr_ratio=r, seed=s))
            attn.append(np.clip(centre[(n, r)] + 0.002 * rng.standard_normal(100), 0, 1))
            conf.append(np.full(100, 0.9))
    attn, conf = np.asarray(attn, dtype=np.float32), np.asarray(conf, dtype=np.float32)
    cfg = SimpleNamespace(fafo_ratios=list(ratios), tau_attns=[0.3, 0.5, 0.9], bins=10, lr=0.1, init_scale=0.1,
                          target_loss=0.1, n_test=100, seeds=list(seeds))
    acmc = ((attn >= 0.5) & (conf >= 0.5)).mean(-1)
    return cfg, specs, attn, conf, attn.astype(float).mean(-1), acmc


def test_dtap_summary_and_claims(ledger, glued):
    cfg, specs, attn, conf, mass, acmc = dtap_inputs()
    rep = dtap_heatmaps.summarize(cfg, SPEC_TASK, specs, attn, conf, mass, acmc,
                                  n_models=len(specs), steps_run=10, wall_s=1.0)
    assert rep.tau_sep == 0.9 and rep.r_max == 10.0 and rep.ratios == [1.0, 10.0]
    assert rep.tv_r1 == pytest.approx(1.0) and rep.tv_rmax < rep.tv_r1                 # FAFO r=10 in FACO's column
    assert rep.model("FAFO").heat.sum() == pytest.approx(1.0)
    assert rep.ac_at("FACO", 1.0, 0.9).tolist() == [1.0, 1.0, 1.0] and rep.ac_at("FAFO", 1.0, 0.9).max() == 0.0
    rep.glue()
    for key in ("ac05_FACO", "ac05_FAFO", "acsep_FACO", "acsep_FAFO", "tau_sep", "tv_r1", "tv_rmax", "tv_others",
                "acsep_FAFO_rmax", "r_max", "n_seeds"):
        assert key in glued, key
    rep.check_claims()
    assert {v for _, v in verdicts(ledger)} == {"pass"}
    ledger.finish()


def test_dtap_one_ratio_and_two_seeds_are_outside(ledger):
    cfg, specs, attn, conf, mass, acmc = dtap_inputs(seeds=(0, 1), ratios=(1.0,))
    rep = dtap_heatmaps.summarize(cfg, SPEC_TASK, specs, attn, conf, mass, acmc,
                                  n_models=len(specs), steps_run=10, wall_s=1.0)
    rep.check_claims()
    assert {v for _, v in verdicts(ledger)} == {"outside"}
    ledger.finish()


def test_dtap_separating_threshold_and_tv():
    assert dtap_heatmaps.separating_threshold([0.3, 0.5, 0.7]) == 0.5
    a, b = np.eye(2) / 2, np.fliplr(np.eye(2)) / 2
    assert dtap_heatmaps.tv_distance(a, b) == pytest.approx(1.0) and dtap_heatmaps.tv_distance(a, a) == 0.0


# -- ratio_sweep -----------------------------------------------------------------------------------
def ratio_level(mass_rmax=(0.99, 0.98, 0.995), ac1=(1.0, 1.0, 1.0), ac_rmax=(1.0, 1.0, 1.0)):
    from attnflow.sharpening.reports.ratio_sweep import Level

    two = lambda a, b: np.array([a, b], dtype=float)                      # noqa: E731  (n_ratios, n_seeds)
    return Level(attn_relevant=two([0.9, 0.88, 0.91], mass_rmax), ac=two(ac1, ac_rmax), acmc=two([1] * 3, [1] * 3),
                 sufficiency=two([-0.05] * 3, [-0.001] * 3), comprehensiveness=two([0.7] * 3, [0.71] * 3),
                 accuracy=two([1.0] * 3, [1.0] * 3), top1_relevant=two([1.0] * 3, [1.0] * 3))


def ratio_cfg(**kw):
    base = dict(parametrization="FAFO", lr_ratios=[1.0, 10.0], optimizers=["adamw"], seeds=[0, 1, 2], lr_adamw=0.001,
                lr_sgd=0.02, lr_gd=0.1, momentum=0.9, weight_decay=0.01, batch_size=64, eval_every=5, init_scale=0.1,
                target_loss=0.1, checkpoint_losses=[0.5], n_test=1000, tau_attn=0.5, tau_conf=0.5)
    return SimpleNamespace(**{**base, **kw})


def test_ratio_sweep_ac_check_is_outside_when_saturated_and_can_fail(ledger, glued):
    from attnflow.sharpening.reports import ratio_sweep

    results = {("adamw", 0.5): ratio_level(ac1=(0.7, 0.8, 1.0), ac_rmax=(0.9, 0.8, 1.0)),   # seed 1 has room, no rise
               ("adamw", 0.1): ratio_level()}                                               # AC saturated at 1
    rep = ratio_sweep.summarize(ratio_cfg(), results, {"adamw": "adamw: test"})
    assert rep.levels == [0.5, 0.1] and rep.r_max == 10.0 and rep.level_hi == 0.5
    rep.glue()
    assert {"ac_adamw_hi_r1", "ac_sgd_hi_rmax", "attn_adamw_rmax", "suff_r1", "dcomp_min", "top1_min"} <= set(glued)
    assert np.isnan(glued["ac_sgd_hi_r1"]) and glued["ac_adamw_hi_r1"] == pytest.approx(2.5 / 3)
    rep.check_claims()
    ac = [r for r in ledger.records() if "AC(τ_a" in r["what"]]
    assert [r["verdict"] for r in ac] == ["fail", "outside"]
    assert "AC(r = 1) < 1 − 0.02" in ac[1]["reason"]
    with pytest.raises(ledger.ClaimFailed, match="AC"):
        ledger.finish()


def test_ratio_sweep_attention_rise_in_every_seed(ledger):
    from attnflow.sharpening.reports import ratio_sweep

    results = {("adamw", 0.5): ratio_level(mass_rmax=(0.99, 0.87, 0.99)), ("adamw", 0.1): ratio_level()}
    ratio_sweep.summarize(ratio_cfg(), results, {}).check_claims()
    rise = [r for r in ledger.records() if "attention mass at r_max minus" in r["what"]]
    assert [r["verdict"] for r in rise] == ["fail", "pass"]               # seed 1 falls: 0.88 → 0.87
    assert "Wilson" in rise[0]["tolerance"]


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
    cfg = SimpleNamespace(init_scales=[0.1, 1.0], lrs=[0.1, 1.0], seeds=[0, 1, 2], fast_ratio=10.0, init_scale=0.1,
                          target_loss=0.1, n_train=n_train, max_time=400.0)
    test_mass = np.tile(np.asarray(mass)[:, None], (1, 10))
    return cfg, specs, np.asarray(mass), np.ones(P, bool), np.zeros(P, bool), np.full(P, 0.0999), test_mass, \
        np.ones((P, 10), bool), np.zeros(P)


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
    assert [r["verdict"] for r in ledger.records()] == ["pass"] * 4
    ledger.finish()


def test_where_it_breaks_stall_value_outside_without_the_spec_n(ledger):
    from attnflow.sharpening.reports import where_it_breaks

    cfg, *arrays = breaks_inputs(n_train=1000)
    where_it_breaks.summarize(cfg, SPEC_TASK, *arrays, n_models=60, steps_run=10, wall_s=1.0).check_claims()
    last = ledger.records()[-1]
    assert last["verdict"] == "outside" and "N = 1000" in last["reason"]
    ledger.begin_page("sharpening/report_test3")
    cfg, *arrays = breaks_inputs(stall=0.9)                                # no stall: the spec's value fails
    where_it_breaks.summarize(cfg, SPEC_TASK, *arrays, n_models=60, steps_run=10, wall_s=1.0).check_claims()
    assert [r["verdict"] for r in ledger.records()][-2:] == ["fail", "fail"]     # no stall: both fail


def test_dtap_separating_threshold_claim_only_on_the_spec_task(ledger):
    cfg, specs, attn, conf, mass, acmc = dtap_inputs()
    rep = dtap_heatmaps.summarize(cfg, data.Task(5, 10, 12), specs, attn, conf, mass, acmc,
                                  n_models=len(specs), steps_run=10, wall_s=1.0)
    rep.check_claims()
    last = ledger.records()[-1]
    assert last["what"].startswith("AC(τ_a = 0.9)") and last["verdict"] == "outside" and "M=10" in last["reason"]
