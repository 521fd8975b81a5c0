"""The sharpening real-data model (issue 7): sharpening.realdata (learned embedding + QK/OV
circuits, ERASER deletion, η_QK = r·η_OV). Everything runs on tiny synthetic token data, offline,
in seconds."""

import numpy as np
import pytest
import torch

from attnflow.params import ParameterError
from attnflow.sharpening import contracts, realdata
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
