"""The sharpening real-data model (issue 7): sharpening.realdata (learned embedding + QK/OV
circuits, ERASER deletion, η_QK = r·η_OV). Everything runs on tiny synthetic token data, offline,
in seconds."""

import numpy as np
import pytest
import torch

from attnflow.params import ParameterError
from attnflow.sharpening import contracts, realdata, realreport
from attnflow.sharpening.realdata import SEP, Encoded, RealConfig

V, T = 12, 7  # vocabulary (ids 0–2 are <pad>, <unk>, <sep>) and sequence length


def toy_classification(n=96, seed=0) -> Encoded:
    """[<sep>] + 6 tokens; label 1 iff token 3 occurs; relevant = the positions of token 3."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(4, V, (n, T), generator=g)
    ids[:, 0] = SEP
    has = torch.arange(n) % 2 == 1
    ids[has, 1 + torch.randint(0, T - 1, (int(has.sum()),), generator=g)] = 3
    ids[::5, -2:] = 0  # some padding on the right
    return Encoded(ids, ids == 3, has.long(), 0)


def params_for(cfg, seed=0):
    return realdata.init_params(cfg, seed)


@pytest.mark.parametrize("parametrization", ["CACO", "CAFO", "FACO", "FAFO"])
def test_shapes_and_attention_lives_on_the_keys(parametrization):
    cfg = RealConfig(parametrization, V, 2, d_model=8, d_head=4)
    data = toy_classification()
    P = {k: torch.cat([v, v]) for k, v in params_for(cfg).items()}  # two identical models
    out = realdata.forward(P, data.ids, cfg)
    assert out.logits.shape == (2, len(data), 2) and out.attn.shape == (2, len(data), T)
    keys = (data.ids != 0) & (data.ids != SEP)
    assert torch.allclose(out.attn.sum(-1), torch.ones(2, len(data)))  # a distribution over the keys
    assert float(out.attn[..., ~keys].abs().max()) == 0.0  # none on the query or the padding


def test_span_task_points_at_passage_positions():
    cfg = RealConfig("FAFO", V, 0, d_model=8, d_head=4, task="span")
    ids = torch.tensor([[5, 6, SEP, 7, 8, 9, 0], [4, SEP, 10, 11, 3, 0, 0]])  # question <sep> passage <pad>
    out = realdata.forward(params_for(cfg), ids, cfg)
    assert out.logits.shape == (1, 2, T)
    passage = torch.tensor([[0, 0, 0, 1, 1, 1, 0], [0, 0, 1, 1, 1, 0, 0]], dtype=torch.bool)
    assert bool(torch.isinf(out.logits[0][~passage]).all()) and bool(torch.isfinite(out.logits[0][passage]).all())


def test_keep_mask_deletes_tokens_exactly():
    """No positions: masking a key out equals removing it from the sequence and re-packing."""
    cfg = RealConfig("FAFO", V, 2, d_model=8, d_head=4)
    P = params_for(cfg, seed=3)
    ids = torch.tensor([[SEP, 4, 5, 6, 7, 8, 9]])
    keep = torch.tensor([[True, True, False, True, False, True, True]])
    masked = realdata.forward(P, ids, cfg, keep_mask=keep)
    removed = realdata.forward(P, ids[keep][None], cfg)
    assert torch.allclose(masked.logits, removed.logits, atol=1e-6)
    assert torch.allclose(masked.attn[keep[None]], removed.attn.flatten(), atol=1e-6)


def test_learning_rate_groups_scale_only_the_qk_circuit():
    """One plain SGD step from the same weights: the QK factors move r times further, the OV
    factors and the embedding do not depend on r (η_QK = r·η_OV, η_emb = η_OV)."""
    assert realdata.groups(["emb", "W_q", "W_k", "W_qk", "W_o", "W_v", "W_ov"]) == {
        "emb": "ov",
        "W_q": "qk",
        "W_k": "qk",
        "W_qk": "qk",
        "W_o": "ov",
        "W_v": "ov",
        "W_ov": "ov",
    }
    cfg = RealConfig("FAFO", V, 2, d_model=8, d_head=4, init_scale=1.0)
    data = toy_classification(64)
    res = realdata.run(
        cfg, data, [1.0, 10.0], [0], optimizer="sgd", lr=0.1, epochs=64 / 64, batch_size=64, momentum=0.0, device="cpu"
    )
    assert res.record.steps_run == 1
    init = params_for(cfg, 0)
    for name, value in res.params.items():
        step1, step10 = value[0] - init[name][0], value[1] - init[name][0]  # r = 1, r = 10
        expect = 10.0 if name in ("W_q", "W_k") else 1.0
        assert torch.allclose(step10, expect * step1, rtol=1e-3, atol=1e-6), name  # float32 differences


def test_a_tiny_training_run_lowers_the_loss_and_evaluates():
    cfg = RealConfig("FAFO", V, 2, d_model=8, d_head=8, init_scale=1.0)
    data = toy_classification(128)
    res = realdata.run(
        cfg,
        data,
        [1.0, 3.0],
        [0, 1],
        optimizer="adamw",
        lr=0.02,
        epochs=15,
        batch_size=32,
        weight_decay=0.0,
        device="cpu",
    )
    first, last = res.record.loss[0], res.record.loss_final
    assert np.all(last < 0.5 * first), (first, last)
    ev = realdata.evaluate(res, toy_classification(64, seed=1), k_percents=(20, 50))
    for key in ("accuracy", "ac", "acmc", "attn_relevant", "entropy", "sufficiency", "comprehensiveness"):
        assert ev[key].shape == (4,) and np.all(np.isfinite(ev[key])), key
    assert ev["accuracy"].min() > 0.8  # "is token 3 there?" is learnable
    assert ev["ac_sweep"].shape == (5, 4)


def test_bad_input_gives_errors_that_name_the_parameter():
    with pytest.raises(ParameterError, match="parametrization"):
        RealConfig("XAXO", V, 2)
    with pytest.raises(ParameterError, match="task"):
        RealConfig("FAFO", V, 2, task="regression")
    with pytest.raises(ParameterError, match="n_out"):
        RealConfig("FAFO", V, 1)
    cfg = RealConfig("FAFO", V, 2, d_model=8, d_head=4)
    with pytest.raises(ParameterError, match="optimizer"):
        realdata.run(cfg, toy_classification(), [1.0], [0], optimizer="adam", lr=0.1, epochs=1, batch_size=8)
    with pytest.raises(ParameterError, match="lr_ratios"):
        realdata.run(cfg, toy_classification(), [1.0, 0.0], [0], optimizer="sgd", lr=0.1, epochs=1, batch_size=8)
    good = dict(
        source="standin",
        n_train=100,
        n_test=50,
        max_len=16,
        vocab_size=100,
        d_model=8,
        d_head=8,
        parametrization="FAFO",
        init_scale=1.0,
        lr_ratios=[1.0, 10.0],
        optimizers=["adamw"],
        lr_adamw=1e-3,
        lr_sgd=0.1,
        momentum=0.9,
        weight_decay=0.01,
        epochs_adamw=1.0,
        epochs_sgd=1.0,
        batch_size=16,
        seeds=[0],
        tau_attn=0.5,
        tau_conf=0.5,
        tau_attns=[0.5],
        device="cpu",
    )
    schema = contracts.REAL_SVA
    assert schema.validate(good).lr_ratios == [1.0, 10.0]
    for key, bad, name in [
        ("lr_ratios", [1.0, -3.0], "lr_ratios"),
        ("tau_attn", 1.5, "tau_attn"),
        ("source", "web", "source"),
        ("optimizers", ["lbfgs"], "optimizers"),
        ("lr_ratios", [3.0, 10.0], "baseline"),
    ]:
        with pytest.raises(ParameterError, match=name):
            schema.validate({**good, key: bad})


# -- the page helpers: glued numbers, figures and the claim checks of the three dataset pages --------
def synthetic_experiment(changes: dict, optimizers=("adamw", "sgd"), seeds=(0, 1, 2), r_max=10.0):
    """A RealExperiment whose per-model metrics change from r = 1 to r_max by ``changes[key]`` (a number,
    or one number per seed); every other metric stays put. Enough for report/plots/check_claims."""
    from types import SimpleNamespace

    lr_ratio = np.repeat([1.0, r_max], len(seeds))  # (P,) specs are r-major
    seed = np.tile(seeds, 2)
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
            ac_sweep=np.tile(m["ac"], (len(taus), 1)),
            acmc_sweep=np.tile(m["acmc"], (len(taus), 1)),
            tau_attns=taus,
            tau_attn=0.5,
            tau_conf=0.5,
            lr_ratio=lr_ratio,
            seed=seed,
            attn_each=np.random.default_rng(0).random((len(lr_ratio), 50)),
            conf_each=np.random.default_rng(1).random((len(lr_ratio), 50)),
        )
        metrics[opt] = m
    ds = SimpleNamespace(name="sva", standin=True)
    return realdata.RealExperiment(ds, None, list(range(30)), list(range(20)), {}, metrics)


@pytest.fixture
def ledger(tmp_path, monkeypatch):
    from attnflow import claims

    monkeypatch.setenv("ATTNFLOW_CLAIMS_DIR", str(tmp_path))
    claims.begin_page("sharpening/real_test")
    return claims


def verdicts(ledger):
    return [(r["id"], r["what"].split(":")[0], r["verdict"]) for r in ledger.records()]


def test_check_claims_verdicts_come_from_the_seed_interval(ledger):
    """Real-data verdicts in three kinds: entropy falls consistently (interval below 0: pass); AC
    rises by 0.02 in every seed, the whole interval below the 0.05 criterion (contradicted); ACMC
    rises by 0.1 (pass); accuracy falls by 0.08, the interval outside ±0.05 (contradicted); ERASER
    moves the better way with AdamW (pass, pass) and sufficiency the worse way with SGD
    (contradicted). Every check carries the errata label and none fails the page."""
    ex = synthetic_experiment(
        {
            "entropy": [-0.5, -0.45, -0.55],
            "ac": 0.02,
            "acmc": 0.1,
            "accuracy": -0.08,
            "sufficiency": -0.02,
            "comprehensiveness": 0.03,
        }
    )
    ex.metrics["sgd"]["sufficiency"][ex.metrics["sgd"]["lr_ratio"] == 10.0] += 0.05  # Δsuff = +0.03 with SGD
    held = realreport.check_claims(ex, "A10", rise=0.05, accuracy_atol=0.05, errata="errata-x")
    assert held == {
        ("entropy", "adamw"): "pass",
        ("ac", "adamw"): "contradicted",
        ("acmc", "adamw"): "pass",
        ("accuracy", "adamw"): "contradicted",
        ("eraser", "adamw"): "pass",
        ("entropy", "sgd"): "pass",
        ("ac", "sgd"): "contradicted",
        ("acmc", "sgd"): "pass",
        ("accuracy", "sgd"): "contradicted",
        ("eraser", "sgd"): "contradicted",
    }
    got = [(r["id"], r["verdict"]) for r in ledger.records()]
    one = [("A6", "pass"), ("A10", "contradicted"), ("A10", "pass"), ("A10", "contradicted"), ("A11", "pass")]
    assert got == one + [("A11", "pass")] + one[:4] + [("A11", "contradicted"), ("A11", "pass")]
    assert all(r["errata"] == "errata-x" for r in ledger.records())
    assert all(r["what"].startswith("SVA stand-in ") for r in ledger.records())
    assert "interval" in ledger.records()[0]["tolerance"]
    ledger.finish()  # nothing failed


def test_check_claims_a_noisy_rise_is_not_reproduced_and_nan_fails(ledger):
    """A mean entropy fall whose interval reaches above 0 is inconclusive, with the seeds that
    would decide it; a NaN always fails."""
    ex = synthetic_experiment(
        {"entropy": [-0.5, 0.3, -0.9], "accuracy": [0.0, float("nan"), 0.0]}, optimizers=("adamw",)
    )
    held = realreport.check_claims(ex, "A9", rise=0.05, accuracy_atol=0.04, errata="errata-x")
    assert held[("entropy", "adamw")] == "inconclusive" and held[("accuracy", "adamw")] == "fail"
    rec = {r["what"].split(", ")[0].split(": ")[1]: r for r in ledger.records()}
    assert rec["attention entropy"]["verdict"] == "inconclusive" and rec["attention entropy"]["seeds_to_decide"] > 3
    assert rec["test accuracy"]["verdict"] == "fail"
    with pytest.raises(ledger.ClaimFailed, match="accuracy"):
        ledger.finish()


def test_check_claims_outside_domain_below_three_seeds_and_names_bad_arguments(ledger):
    ex = synthetic_experiment({"entropy": -0.5, "ac": 0.3}, optimizers=("adamw",), seeds=(0, 1))
    held = realreport.check_claims(ex, "A9", rise=0.05, accuracy_atol=0.04, errata="e")
    assert set(held) == {("entropy", "adamw"), ("ac", "adamw"), ("accuracy", "adamw"), ("eraser", "adamw")}
    assert all(v == "outside" for v in held.values())  # A9 has no ACMC part
    assert {r["verdict"] for r in ledger.records()} == {"outside"}
    assert "at least 3 seeds" in ledger.records()[0]["reason"]
    ex3 = synthetic_experiment({"entropy": -0.5, "ac": 0.3}, optimizers=("adamw",))
    realreport.check_claims(ex3, "A9", rise=0.05, accuracy_atol=0.04, errata="e")
    assert ledger.records()[-4]["expected"] is None and "0.31" in ledger.records()[-4]["tolerance"]
    with pytest.raises(ParameterError, match="errata"):
        realreport.check_claims(ex, "A9", rise=0.05, accuracy_atol=0.04, errata="")
    with pytest.raises(ParameterError, match="claim"):
        realreport.check_claims(ex, "A12", rise=0.05, accuracy_atol=0.04, errata="e")


def test_report_glues_every_key_once_also_for_an_optimizer_that_did_not_run(monkeypatch, capsys):
    from attnflow import display

    glued = []
    monkeypatch.setattr(display, "number", lambda name, value, show=False: glued.append((name, value)))
    ex = synthetic_experiment({"entropy": -0.5, "ac": 0.1}, optimizers=("adamw",))
    realreport.report(ex)
    names = [n for n, _ in glued]
    assert len(names) == len(set(names)), "a glue key twice fails the strict build"
    values = dict(glued)
    for key in (
        "n_train_used",
        "n_test_used",
        "r_max",
        "tau",
        "tau_hi",
        "ent_adamw_r1",
        "ac_adamw_rmax",
        "acc_sgd_r1",
        "achi_adamw_r1",
        "dac_sgd",
        "suff_adamw_rmax",
        "comp_adamw_r1",
        "acmc_sgd_rmax",
    ):
        assert key in values, key
    assert values["ac_adamw_rmax"] == pytest.approx(0.3) and values["ent_adamw_rmax"] == pytest.approx(1.5)
    assert values["dac_adamw"] == "[+0.100, +0.100, +0.100]" and values["dac_sgd"] == "n/a"
    assert np.isnan(values["acc_sgd_r1"]) and values["r_max"] == 10.0 and values["n_test_used"] == 20
    assert "adamw, paired change r = 1 → 10 per seed" in capsys.readouterr().out


def test_figures_have_their_panels():
    import matplotlib

    matplotlib.use("Agg")
    ex = synthetic_experiment({"entropy": -0.5})
    assert len(realreport.plot_metrics(ex).axes) == 4
    assert len(realreport.plot_dtap(ex, relevant="the subject noun", unit="prefixes").axes) == 3  # 2 maps + colour bar


def test_accuracy_unchanged_is_an_equivalence_test(ledger):
    """ "Accuracy stays" is supported only when the seed interval lies inside ±atol."""
    small = synthetic_experiment({"accuracy": [-0.01, 0.0, 0.01]}, optimizers=("adamw",))
    drop = synthetic_experiment({"accuracy": [-0.052, -0.093, -0.06]}, optimizers=("adamw",))  # HateXplain's drop
    assert (
        realreport.check_claims(small, "A9", rise=0.05, accuracy_atol=0.05, errata="e")[("accuracy", "adamw")] == "pass"
    )
    assert (
        realreport.check_claims(drop, "A9", rise=0.05, accuracy_atol=0.05, errata="e")[("accuracy", "adamw")]
        == "inconclusive"
    )  # interval [−0.12, −0.01] straddles −0.05
    acc = [r for r in ledger.records() if "test accuracy" in r["what"]]
    assert [r["verdict"] for r in acc] == ["pass", "inconclusive"] and "target ± 0.05" in acc[0]["tolerance"]


def test_each_dataset_page_takes_its_claim_and_thresholds_from_the_report(ledger):
    """A page calls ``check_claims(ex)``: the claim, AC rise, accuracy band and errata label are
    ``realreport.PAGES[dataset]`` — the same verdicts as spelling them out."""
    from attnflow.sharpening import targets

    assert set(realreport.PAGES) == set(realdata.DATASETS)
    assert {p.claim for p in realreport.PAGES.values()} <= set(realreport.CLAIM_PARTS)
    assert realreport.AC_RISE < targets.SQUAD_AC[1] - targets.SQUAD_AC[0]
    ex = synthetic_experiment({"entropy": -0.5, "ac": [0.10, 0.11, 0.12], "acmc": [0.10, 0.11, 0.12]})
    page = realreport.PAGES["sva"]
    assert realreport.check_claims(ex) == realreport.check_claims(
        ex, page.claim, rise=page.rise, accuracy_atol=page.accuracy_atol, errata=page.errata
    )
    ex.dataset.name = "other"
    with pytest.raises(ParameterError, match="rise"):
        realreport.check_claims(ex, "A10", errata="e")


def test_report_glues_the_papers_squad_numbers_from_the_targets(monkeypatch, capsys):
    from attnflow import display
    from attnflow.sharpening import targets

    glued = {}
    monkeypatch.setattr(display, "number", lambda name, value, show=False: glued.__setitem__(name, value))
    realreport.report(synthetic_experiment({}))
    assert (glued["paper_ac_r1"], glued["paper_ac_fast"]) == targets.SQUAD_AC
    assert glued["rise"] == realreport.AC_RISE and glued["acc_atol"] == realreport.PAGES["sva"].accuracy_atol
