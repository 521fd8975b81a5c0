"""The primitives the page sharpening/lemma1_rescaling calls (Lemma 1, claim A2), on small inputs:
its measures (relative deviation, imbalance, the forecast separation, the largest gap over runs),
its predicate, its figure, and the schema rules that refuse bad input before running."""

import matplotlib
import numpy as np
import pytest
import torch

from attnflow.params import ParameterError
from attnflow.record import Run
from attnflow.sharpening import contracts, figures, rescaling

pytestmark = pytest.mark.usefixtures("one_cpu_thread")

LEMMA1 = dict(
    d=3,
    d_h=2,
    n_keys=4,
    n_samples=16,
    init_scale=1.0,
    lr_qk=1.0,
    t_max=3.0,
    n_times=7,
    imbalances=[0.0, 1.0],
    rtol=1e-10,
    seed=0,
)


def test_lemma1_schema_names_the_cause():
    with pytest.raises(ParameterError, match="d_h ≤ d"):
        contracts.LEMMA1_RESCALING.validate({**LEMMA1, "d_h": 4})
    with pytest.raises(ParameterError, match="imbalances"):
        contracts.LEMMA1_RESCALING.validate({**LEMMA1, "imbalances": [0.1] * 9})


def test_relative_deviation_is_relative_to_the_reference_largest_entry():
    ref = np.array([[2.0, -4.0], [1.0, 0.0]])
    assert rescaling.relative_deviation(ref, ref) == 0.0
    assert rescaling.relative_deviation(ref, ref + np.array([[0.0, 1.0], [0.0, 0.0]])) == pytest.approx(0.25)
    # torch tensors and whole trajectories (n_times, d, d) alike
    traj = torch.ones(3, 2, 2, dtype=torch.float64)
    other = traj.clone()
    other[2, 1, 0] = 0.5
    assert rescaling.relative_deviation(traj, other) == pytest.approx(0.5)
    assert rescaling.relative_deviation(traj.requires_grad_(True), other) == pytest.approx(0.5)


def test_the_lemma_forms_match_autograd_within_roundoff():
    task = rescaling.PointerTask.sample(3, 4, 16, 0)
    W_q, W_k = rescaling.balanced_factors(3, 2, 1.0, 0)
    W_dot, G = rescaling.autograd_rate(task, W_q, W_k, 1.0)
    forms = rescaling.lemma_rate(W_q, W_k, G, 1.0)
    assert rescaling.relative_deviation(W_dot, forms["factor_form"]) < 1e-12
    assert rescaling.relative_deviation(W_dot, forms["balanced_form"]) < 1e-12
    assert rescaling.relative_deviation(W_dot, 1.001 * forms["factor_form"]) > 1e-4  # a wrong factor shows


def test_relative_imbalance_is_zero_only_for_balanced_factors():
    W_q, W_k = rescaling.balanced_factors(4, 3, 0.8, 1)
    assert rescaling.relative_imbalance(W_q, W_k) < 1e-14
    assert rescaling.relative_imbalance(W_q, 1.1 * W_k) == pytest.approx(0.21, rel=1e-9)  # |1 − 1.1²|


def test_predicted_separation_is_linear_in_the_horizon_and_vanishes_without_rescaling():
    task = rescaling.PointerTask.sample(3, 4, 16, 0)
    W_q, W_k = rescaling.balanced_factors(3, 2, 1.0, 0)
    _, G = rescaling.autograd_rate(task, W_q, W_k, 1.0)
    s1 = rescaling.predicted_separation(W_q, W_k, G, 1.0, t_max=1.0)
    assert s1 > 0 and rescaling.predicted_separation(W_q, W_k, G, 1.0, t_max=4.0) == pytest.approx(4 * s1)
    # W_Q = W_K = I/√2: W = I/2, (WWᵀ)^{1/2} G + G (WᵀW)^{1/2} = G, the rescaled rate is the plain one
    half = torch.eye(3, dtype=torch.float64) / 2**0.5
    _, G = rescaling.autograd_rate(task, half, half, 1.0)
    assert rescaling.predicted_separation(half, half, G, 1.0, t_max=10.0) < 1e-14


def test_separated_is_a_strict_threshold():
    assert rescaling.SEPARATION_THRESHOLD == 1e-2
    assert rescaling.separated(0.66) and not rescaling.separated(0.01) and not rescaling.separated(1e-9)


def test_max_deviation_over_runs():
    t = np.linspace(0, 1, 3)
    runs = {
        0.0: Run(t=t, quantities={"a": np.array([0.0, 1.0, 2.0]), "b": np.array([0.0, 1.5, 2.0])}),
        1.0: Run(t=t, quantities={"a": np.array([0.0, -3.0, 0.0]), "b": np.array([0.2, -3.0, 0.0])}),
    }
    assert rescaling.max_deviation(runs, "a", "b") == pytest.approx(0.5)
    assert rescaling.max_deviation(runs, "a") == 3.0
    assert rescaling.max_deviation(list(runs.values()), "b") == 3.0
    with pytest.raises(ValueError, match="no runs"):
        rescaling.max_deviation({}, "a")
    with pytest.raises(KeyError, match="no quantity"):
        rescaling.max_deviation(runs, "c")


def test_the_flows_of_the_page_agree_and_the_figure_draws_them():
    task = rescaling.PointerTask.sample(3, 4, 16, 0)
    W_q, W_k = rescaling.balanced_factors(3, 2, 1.0, 0)
    flows = rescaling.compare_flows(task, W_q, W_k, 1.0, 3.0, 7, rtol=1e-10)
    runs = {delta: rescaling.scalar_flows(delta, 1.0, 3.0, 7) for delta in (0.0, 1.0)}
    assert rescaling.relative_deviation(flows.W_factorized, flows.W_rescaled) < 1e-7
    assert rescaling.separated(rescaling.relative_deviation(flows.W_factorized, flows.W_collapsed))
    assert rescaling.max_deviation(runs, "b_factorized", "b_rescaled") < 1e-7
    assert rescaling.max_deviation(runs, "imbalance_drift") < 1e-8
    fig = figures.factorized_vs_rescaled(flows, runs)
    assert isinstance(fig, matplotlib.figure.Figure) and len(fig.axes) == 3
    assert len(fig.axes[2].get_legend().get_texts()) == 2  # one line per imbalance δ
    matplotlib.pyplot.close(fig)
