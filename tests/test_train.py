"""Discrete training: GD is the Euler discretisation of the flow; per-group rates; divergence."""
import numpy as np
import pytest
import torch

from attnflow import flow, train


def test_gd_converges_to_the_flow_as_the_step_shrinks():
    lam = torch.tensor([1.0, 3.0], dtype=torch.float64)
    errs = []
    for eta in (0.1, 0.05, 0.025):
        x = torch.ones(2, dtype=torch.float64, requires_grad=True)
        steps = int(round(1.0 / eta))
        traj = train.train(lambda s: 0.5 * (lam * x**2).sum(), {"all": ([x], eta)}, optimizer="gd", steps=steps,
                           record_every=steps)
        errs.append(float((x.detach() - torch.exp(-lam)).abs().max()))
        assert traj.steps[-1] == steps
    # first-order method: halving the step halves the error
    assert errs[0] / errs[1] == pytest.approx(2.0, rel=0.15) and errs[1] / errs[2] == pytest.approx(2.0, rel=0.1)


def test_groups_get_their_own_learning_rates():
    a = torch.ones(1, requires_grad=True)
    b = torch.ones(1, requires_grad=True)
    train.train(lambda s: (a**2 + b**2).sum() / 2, {"qk": ([a], 0.1), "ov": ([b], 0.01)}, steps=1)
    assert float(a.detach()) == pytest.approx(0.9) and float(b.detach()) == pytest.approx(0.99)


def test_stop_and_record():
    x = torch.tensor([2.0], requires_grad=True)
    traj = train.train(lambda s: (x**2).sum(), {"x": ([x], 0.1)}, steps=1000, record=lambda s: {"x": float(x)},
                       stop=lambda s, L: L < 0.01, optimizer="adam")
    assert traj.stopped_at is not None and traj.loss[-1] < 0.01 and len(traj.array("x")) == len(traj.steps)


def test_divergence_and_bad_input():
    x = torch.tensor([1.0], requires_grad=True)
    with pytest.raises(train.TrainingDiverged, match="diverged at step"):
        train.train(lambda s: -(x**2).sum(), {"x": ([x], 10.0)}, steps=200)  # x ← 21x overflows
    with pytest.raises(ValueError, match="optimizer"):
        train.train(lambda s: x.sum(), {"x": ([x], 0.1)}, steps=1, optimizer="lbfgs")
    with pytest.raises(ValueError, match="learning rate of group 'x'"):
        train.train(lambda s: x.sum(), {"x": ([x], 0.0)}, steps=1)
