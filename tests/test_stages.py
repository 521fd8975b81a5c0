"""Stage detector: known boundaries of synthetic step curves are recovered; bad input is refused.

A logistic step in log time, L = L0 − Δ σ((log t − log c)/w), has speed −dL/d log t = Δ σ(1−σ)/w;
the detector's edge (speed = edge_frac × peak, peak = Δ/(4w)) is at σ(1−σ) = edge_frac/4, i.e.
log t = log c ± w·x_e with x_e = logit((1 + √(1 − edge_frac))/2). The tests use these exact edges.
"""

import numpy as np
import pytest

from attnflow.focus_dilution import stages


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-np.clip(x, -500, 500)))


def step_edges(center, width, edge_frac):
    p = (1 + np.sqrt(1 - edge_frac)) / 2
    x = np.log(p / (1 - p))
    return center * np.exp(-width * x), center * np.exp(width * x)


STEPS = [(50.0, 0.08, 0.12), (1800.0, 0.02, 0.05), (3500.0, 0.05, 0.05)]  # (centre, drop, width in log t)
T = np.concatenate([np.arange(0, 300, 0.5), np.arange(300, 10000, 2.0)])


def synthetic_loss(t=T):
    lt = np.log(np.maximum(t, 1e-9))
    return 1.6 - sum(drop * sigmoid((lt - np.log(c)) / w) for c, drop, w in STEPS)


def test_loss_transitions_recover_known_edges():
    found = stages.loss_transitions(T, synthetic_loss(), edge_frac=0.05)
    assert len(found) == len(STEPS), f"expected {len(STEPS)} transitions, found {found}"
    for (a, b), (c, _, w) in zip(found, STEPS):
        ea, eb = step_edges(c, w, 0.05)
        # grid of 1024 points over log t ∈ [log 0.5, log 10⁴]: spacing 0.01 in log t → ≈1 % in t
        assert a == pytest.approx(ea, rel=0.03) and b == pytest.approx(eb, rel=0.03), (a, b, ea, eb)


def test_flat_or_rising_curve_has_no_transition():
    assert stages.loss_transitions(T, np.full_like(T, 1.5)) == []
    assert stages.loss_transitions(T, 1.0 + 1e-3 * T / T[-1]) == []


def test_small_wiggles_are_not_transitions():
    # wiggles of 3·10⁻⁴ (a fifth of the drop threshold) with 3 periods per decade of t
    noisy = synthetic_loss() + 3e-4 * np.sin(3 * 2 * np.pi * np.log10(np.maximum(T, 1e-9)))
    assert len(stages.loss_transitions(T, noisy)) == len(STEPS)


def test_swings_find_a_rise_and_a_fall_with_their_edges():
    # y rises 0 → 1 (logistic in log t at 100), then falls 1 → 0.4 (at 300), both of width 0.1 in log t;
    # a swing counts where its log-time speed is ≥ edge_frac × its peak: the same edges as a loss step
    t = np.linspace(0.1, 500, 5000)
    lt = np.log(t)
    y = sigmoid((lt - np.log(100)) / 0.1) - 0.6 * sigmoid((lt - np.log(300)) / 0.1)
    rise, fall = stages.swings(t, y, min_swing=0.1, edge_frac=0.1)
    assert rise[2] == 1 and fall[2] == -1
    assert rise[0] == pytest.approx(step_edges(100, 0.1, 0.1)[0], rel=0.01)
    assert fall[1] == pytest.approx(step_edges(300, 0.1, 0.1)[1], rel=0.01)
    # the rise turns straight into the fall (gap shorter than the rise): they meet at the maximum
    assert rise[1] == fall[0] == pytest.approx(t[np.argmax(y)], rel=1e-9)


def test_a_rise_with_a_pause_gives_two_focus_intervals():
    t = np.linspace(1, 1000, 4000)
    lt = np.log(t)
    y = 0.1 * sigmoid((lt - np.log(20)) / 0.05) + 0.1 * sigmoid((lt - np.log(400)) / 0.05)
    moves = stages.swings(t, y, min_swing=0.05)
    assert len(moves) == 2 and all(m[2] == 1 for m in moves)
    assert moves[0][1] < 40 < 200 < moves[1][0]  # the pause in between is not a move


def test_swings_ignore_wiggles_below_min_swing():
    t = np.linspace(0, 100, 1001)
    assert stages.swings(t, 0.005 * np.sin(t), min_swing=0.01) == []


def test_rise_turning_into_fall_meets_at_the_peak():
    t = np.linspace(0, 100, 2001)
    y = np.exp(-(((t - 50) / 8) ** 2))  # a bump: up then straight down
    rise, fall = stages.swings(t, y, min_swing=0.1)
    assert rise[1] == fall[0] == pytest.approx(50.0, abs=0.1)


def test_detect_labels_a_full_synthetic_cycle():
    """Condensation, plateau, focus, dilution, plateau (θ_c²), escape, plateau, focus, dilution, plateau."""
    lt = np.log(np.maximum(T, 1e-9))
    loss = synthetic_loss()
    # focus signal: up at ~1750 and straight down at ~1850; after the escape up at ~4800, down at ~5200
    focus = (
        0.375
        + 0.05 * sigmoid((T - 1750) / 20)
        - 0.07 * sigmoid((T - 1850) / 15)
        + 0.3 * sigmoid((T - 4800) / 50)
        - 0.35 * sigmoid((T - 5200) / 60)
    )
    rank = 0.004 * np.exp(7.0 * sigmoid((lt - np.log(3000)) / 0.08))  # σ₂(W0): ×1000 around t = 3000
    st = stages.detect(T, loss, focus=focus, rank=rank)
    assert st.names() == [
        "condensation",
        "plateau",
        "focus",
        "dilution",
        "plateau",
        "escape",
        "plateau",
        "focus",
        "dilution",
        "plateau",
    ], st.names()
    assert st.stages[0].start == T[0] and st.stages[-1].end == T[-1]
    for a, b in zip(st.stages[:-1], st.stages[1:]):
        assert a.end == b.start  # a partition of [t0, t_end]
    cond_end = step_edges(*STEPS[0][::2], 0.05)[1]
    assert st.stages[0].end == pytest.approx(cond_end, rel=0.03)
    assert [s.cycle for s in st.find("focus")] == [1, 2]
    # plateau levels: the loss between the steps
    lv = [s.level for s in st.find("plateau")]
    assert lv[0] == pytest.approx(1.6 - 0.08, abs=2e-3) and lv[1] == pytest.approx(1.6 - 0.10, abs=2e-3)
    # the escape ends with the loss transition it triggers (the third step)
    assert st.first("escape").end == pytest.approx(step_edges(STEPS[2][0], STEPS[2][2], 0.05)[1], rel=0.03)


def test_detect_without_signals_gives_condensation_and_plateaus():
    st = stages.detect(T, synthetic_loss())
    assert st.names() == ["condensation", "plateau"]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(t=[0, 1, 2], loss=[1, 1, 1]), "at least 5"),
        (dict(t=[0, 1, 2, 3, 4], loss=[1, 1, 1]), "equal length"),
        (dict(t=[0, 1, 1, 3, 4], loss=[1] * 5), "strictly increasing"),
        (dict(t=[0, 1, 2, 3, 4], loss=[1, np.nan, 1, 1, 1]), "non-finite"),
    ],
)
def test_bad_input_is_refused_with_a_clear_message(kwargs, match):
    with pytest.raises(ValueError, match=match):
        stages.detect(kwargs["t"], kwargs["loss"])


def test_bad_signals_are_refused():
    loss = synthetic_loss()
    with pytest.raises(ValueError, match="rank signal must be > 0"):
        stages.detect(T, loss, rank=np.zeros_like(T))
    with pytest.raises(ValueError, match="focus"):
        stages.detect(T, loss, focus=np.ones(3))
    with pytest.raises(ValueError, match="min_swing"):
        stages.swings(T, loss, min_swing=0.0)
    with pytest.raises(ValueError, match="min_rank_factor"):
        stages.detect(T, loss, min_rank_factor=1.0)


def test_an_escape_interrupted_by_a_focus_counts_once():
    """Rank rising from t ≈ 2500 to 4000 while attention moves up at ~3000: the pieces of the one
    escape do not start two new cycles."""
    lt = np.log(np.maximum(T, 1e-9))
    focus = 0.375 + 0.05 * sigmoid((lt - np.log(3000)) / 0.02)
    rank = 0.004 * np.exp(7.0 * sigmoid((lt - np.log(3200)) / 0.1))
    st = stages.detect(T, synthetic_loss(), focus=focus, rank=rank)
    assert "escape" in st.names() and "focus" in st.names()
    assert max(s.cycle for s in st.stages) == 2, st.table()


def test_an_escape_rising_under_the_dilution_is_the_next_transition():
    """σ₂(W0) starts to rise (t ≈ 1800) while the dilution's own loss drop is still under way (issue 21:
    data seeds 3 and 4 of the cycle page at n_seeds = 6): the escape is the loss transition the rise
    triggers (the third step), not the dilution's drop, and the θ_c² rest before it stays a plateau of
    cycle 1."""
    lt = np.log(np.maximum(T, 1e-9))
    focus = 0.375 + 0.05 * sigmoid((T - 1750) / 20) - 0.07 * sigmoid((T - 1850) / 15)
    rank = 0.004 * np.exp(7.0 * sigmoid((lt - np.log(2600)) / 0.1))  # starts to move at ≈ 2600·e^−0.37 ≈ 1800
    st = stages.detect(T, synthetic_loss(), focus=focus, rank=rank)
    assert st.letters().startswith("C P F D P E"), st.table()
    rest, esc = st.get("plateau", 1, after=st.get("dilution", 1).start), st.first("escape")
    assert rest.cycle == 1 and esc.cycle == 1 and rest.end == esc.start, st.table()
    third = step_edges(STEPS[2][0], STEPS[2][2], 0.05)
    assert esc.start == pytest.approx(third[0], rel=0.03) and esc.end == pytest.approx(third[1], rel=0.03)
    assert rest.level == pytest.approx(1.6 - 0.10, abs=2e-3)
