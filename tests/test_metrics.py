"""Attention metrics on hand-built attention maps with known answers (spec §7.3, Q3, Q4)."""

import pytest
import torch

from attnflow.sharpening import metrics

# Four instances, T = 4 positions; the relevant token sits at position 0 (the last position is
# the query and never a rationale candidate).
ATTN = torch.tensor([[0.9, 0.05, 0.05, 0.0], [0.5, 0.3, 0.2, 0.0], [0.2, 0.5, 0.3, 0.0], [1.0, 0.0, 0.0, 0.0]])
RELEVANT = torch.tensor([[True, False, False, False]] * 4)
PROBS = torch.tensor([[0.95, 0.05], [0.6, 0.4], [0.3, 0.7], [0.85, 0.15]])
TARGETS = torch.tensor([0, 0, 0, 0])


def test_relevant_attention_and_confidence_are_read_off_the_maps():
    x = metrics.relevant_attention(ATTN, RELEVANT)
    assert torch.allclose(x, torch.tensor([0.9, 0.5, 0.2, 1.0]))
    y = metrics.true_class_confidence(PROBS, TARGETS)
    assert torch.allclose(y, torch.tensor([0.95, 0.6, 0.3, 0.85]))


def test_ac_and_acmc_count_instances_above_both_thresholds():
    x = metrics.relevant_attention(ATTN, RELEVANT)
    y = metrics.true_class_confidence(PROBS, TARGETS)
    # x ≥ 0.5 for instances 0, 1, 3 (0.5 counts: "≥ τ_a")
    assert float(metrics.attention_confidence(x, 0.5)) == pytest.approx(3 / 4)
    # and y ≥ 0.8 only for instances 0 and 3
    assert float(metrics.acmc(x, y, 0.5, 0.8)) == pytest.approx(2 / 4)
    assert float(metrics.acmc(x, y, 0.5, 0.5)) == pytest.approx(3 / 4)
    sweep = metrics.threshold_sweep(x, y, [0.3, 0.5, 0.95], tau_conf=0.5)
    assert sweep["ac"].tolist() == pytest.approx([3 / 4, 3 / 4, 1 / 4])
    assert sweep["acmc"].tolist() == pytest.approx([3 / 4, 3 / 4, 1 / 4])


def test_metrics_broadcast_over_a_model_axis():
    x = torch.stack([torch.tensor([0.9, 0.5, 0.2, 1.0]), torch.tensor([0.1, 0.1, 0.1, 0.6])])  # (P=2, B=4)
    assert metrics.attention_confidence(x, 0.5).tolist() == pytest.approx([0.75, 0.25])


def test_dtap_places_each_instance_in_its_cell():
    x = torch.tensor([0.05, 0.95, 1.0, 0.5, 0.55])  # relevant attention (columns)
    y = torch.tensor([0.99, 0.99, 1.0, 0.05, 0.5])  # confidence (rows)
    H = metrics.dtap(x, y, bins=10)
    assert H.shape == (10, 10) and float(H.sum()) == pytest.approx(1.0)
    # 1.0 falls in the last bin; 0.5 starts bin 5
    assert float(H[9, 0]) == pytest.approx(1 / 5)  # top-left: confident, weak attention
    assert float(H[9, 9]) == pytest.approx(2 / 5)  # top-right: confident and sharp (0.95 and 1.0)
    assert float(H[0, 5]) == pytest.approx(1 / 5)
    assert float(H[5, 5]) == pytest.approx(1 / 5)
    coarse = metrics.dtap(x, y, bins=2)
    assert torch.allclose(coarse, torch.tensor([[0.0, 0.2], [0.2, 0.6]], dtype=coarse.dtype))


def test_rationale_is_the_top_k_percent_of_candidates_ties_to_the_earlier_position():
    attn = torch.tensor([[0.1, 0.4, 0.4, 0.1, 0.0]])
    cand = torch.tensor([[True, True, True, True, False]])
    assert metrics.rationale_mask(attn, 1, cand).tolist() == [[False, True, False, False, False]]  # ⌈0.04⌉ = 1
    assert metrics.rationale_mask(attn, 50, cand).tolist() == [[False, True, True, False, False]]  # 2 of 4
    assert metrics.rationale_mask(attn, 100, cand).tolist() == [[True, True, True, True, False]]  # never the query
    assert int(metrics.rationale_mask(attn, 51, cand).sum()) == 3  # ⌈2.04⌉


def _toy_predictor(tokens, keep_mask):
    """Two classes; the prediction is confident when token 7 is present, and a bit more when
    token 7 is the *only* context token left (the rationale alone is cleaner than the input)."""
    has7 = ((tokens == 7) & keep_mask).any(-1)
    n_kept = keep_mask[..., :-1].sum(-1)
    p0 = torch.where(has7, torch.where(n_kept == 1, torch.tensor(0.95), torch.tensor(0.9)), torch.tensor(0.5))
    return torch.stack([p0, 1 - p0], dim=-1)


def test_sufficiency_and_comprehensiveness_follow_the_eraser_definitions():
    tokens = torch.tensor([[7, 3, 3, 3, 9], [3, 7, 3, 3, 9]])  # query 9 last
    cand = torch.ones_like(tokens, dtype=torch.bool)
    cand[:, -1] = False
    sharp = torch.tensor([[0.7, 0.1, 0.1, 0.1, 0.0], [0.1, 0.7, 0.1, 0.1, 0.0]])  # top-1 = token 7
    blunt = torch.tensor([[0.1, 0.7, 0.1, 0.1, 0.0], [0.1, 0.1, 0.7, 0.1, 0.0]])  # top-1 = a common token
    # sharp: keep only token 7 -> 0.95 (suff 0.9 − 0.95); delete it -> 0.5 (comp 0.9 − 0.5)
    assert metrics.sufficiency(_toy_predictor, tokens, sharp, cand, 25).tolist() == pytest.approx([-0.05, -0.05])
    assert metrics.comprehensiveness(_toy_predictor, tokens, sharp, cand, 25).tolist() == pytest.approx([0.4, 0.4])
    # blunt: the rationale misses token 7 -> 0.5 (suff 0.4); deleting it keeps 7 -> 0.9 (comp 0)
    assert metrics.sufficiency(_toy_predictor, tokens, blunt, cand, 25).tolist() == pytest.approx([0.4, 0.4])
    assert metrics.comprehensiveness(_toy_predictor, tokens, blunt, cand, 25).tolist() == pytest.approx([0.0, 0.0])
    # AOPC over k = 25% (1 token) and 100% (all 4: suff = 0.9 − 0.9, comp = 0.9 − 0.5 for both)
    res = metrics.aopc(_toy_predictor, tokens, blunt, cand, (25, 100))
    assert res["sufficiency"].tolist() == pytest.approx([0.2, 0.2])
    assert res["comprehensiveness"].tolist() == pytest.approx([0.2, 0.2])
    assert res["sufficiency_k"].shape == (2, 2)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: metrics.attention_confidence(torch.ones(3), 1.5), "tau_attn"),
        (lambda: metrics.acmc(torch.ones(3), torch.ones(3), 0.5, -0.1), "tau_conf"),
        (lambda: metrics.dtap(torch.ones(3), torch.ones(3), bins=0), "bins"),
        (lambda: metrics.rationale_mask(torch.ones(1, 3), 0, torch.ones(1, 3, dtype=torch.bool)), "k_percent"),
        (lambda: metrics.rationale_mask(torch.ones(1, 3), 10, torch.zeros(1, 3, dtype=torch.bool)), "candidate"),
        (
            lambda: metrics.aopc(
                _toy_predictor,
                torch.ones(1, 3, dtype=torch.long),
                torch.ones(1, 3),
                torch.ones(1, 3, dtype=torch.bool),
                (),
            ),
            "k_percents",
        ),
    ],
)
def test_bad_input_names_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()
