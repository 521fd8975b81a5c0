"""The one training engine (attnflow.sweep.train) on small problems: GD is the Euler
discretisation of the flow; per-tensor and per-model rates; stop at a target loss with a record
hook; divergence and bad input; each optimizer equals torch's (attnflow.train.make_optimizer)."""

import pytest
import torch

from attnflow import sweep, train


def one_model(**tensors):
    """{name: Stacked (1, ...)} of one model from {name: (tensor, lr)}."""
    return {
        n: sweep.Stacked(x[None].clone(), torch.zeros(1, dtype=torch.long), torch.tensor([lr], dtype=torch.float64))
        for n, (x, lr) in tensors.items()
    }


def test_gd_converges_to_the_flow_as_the_step_shrinks():
    lam = torch.tensor([1.0, 3.0], dtype=torch.float64)
    errs = []
    for eta in (0.1, 0.05, 0.025):
        steps = int(round(1.0 / eta))
        run = sweep.train(
            lambda p, _s, _m: ((0.5 * lam * p["x"] ** 2).sum(-1), {}),
            one_model(x=(torch.ones(2, dtype=torch.float64), eta)),
            1,
            steps=steps,
            record_every=steps,
        )
        errs.append(float((run.params["x"][0] - torch.exp(-lam)).abs().max()))
        assert run.steps.tolist() == [0, steps] and run.steps_run == steps
    # first-order method: halving the step halves the error
    assert errs[0] / errs[1] == pytest.approx(2.0, rel=0.15) and errs[1] / errs[2] == pytest.approx(2.0, rel=0.1)


def test_tensors_and_models_get_their_own_learning_rates():
    def objective(p, _s, models):
        return ((p["a"] ** 2).sum(-1) + (p["b"] ** 2).sum(-1))[models] / 2, {}

    run = sweep.train(objective, one_model(a=(torch.ones(1), 0.1), b=(torch.ones(1), 0.01)), 1, steps=1)
    assert float(run.params["a"][0]) == pytest.approx(0.9) and float(run.params["b"][0]) == pytest.approx(0.99)
    two = {
        n: sweep.Stacked(torch.ones(2, 1), torch.arange(2), torch.tensor(lr, dtype=torch.float64))
        for n, lr in (("a", [0.1, 0.5]), ("b", [0.01, 0.2]))
    }  # model 1 has other rates
    run = sweep.train(objective, two, 2, steps=1)
    assert run.params["a"][:, 0].tolist() == pytest.approx([0.9, 0.5]) and run.params["b"][
        :, 0
    ].tolist() == pytest.approx([0.99, 0.8])


def test_stop_at_the_target_and_record():
    seen = []

    def record(step, params):
        seen.append(step)
        return {"x": float(params["x"][0, 0])}

    run = sweep.train(
        lambda p, _s, _m: ((p["x"] ** 2).sum(-1), {}),
        one_model(x=(torch.tensor([2.0]), 0.1)),
        1,
        steps=1000,
        record_every=50,
        record=record,
        optimizer="adam",
        target_loss=0.01,
        strict_target=True,
    )
    stop = int(run.stopped_at[0])
    assert 0 < stop < 1000 and run.reached[0] and run.loss_final[0] < 0.01 and run.steps_run == stop
    assert run.steps.tolist() == seen == [s for s in range(0, stop, 50)] + [stop]
    assert len(run.records["x"]) == len(run.steps) and run.records["x"][-1] ** 2 == pytest.approx(run.loss_final[0])


def test_divergence_and_bad_input():
    def grow(p, _s, _m):
        return (-(p["x"] ** 2).sum(-1), {})  # x ← 21x overflows

    with pytest.raises(train.TrainingDiverged, match="diverged at step"):
        sweep.train(grow, one_model(x=(torch.tensor([1.0]), 10.0)), 1, steps=200)
    with pytest.raises(ValueError, match="optimizer"):
        sweep.train(grow, one_model(x=(torch.tensor([1.0]), 0.1)), 1, steps=1, optimizer="lbfgs")
    with pytest.raises(ValueError, match="learning rates of 'x'"):
        sweep.train(grow, one_model(x=(torch.tensor([1.0]), 0.0)), 1, steps=1)
    with pytest.raises(ValueError, match="record_every"):
        sweep.train(grow, one_model(x=(torch.tensor([1.0]), 0.1)), 1, steps=1, record_every=0)
    with pytest.raises(ValueError, match="learning rate of group 'x'"):
        train.make_optimizer({"x": ([torch.ones(1, requires_grad=True)], 0.0)})


@pytest.mark.parametrize(
    "optimizer, kw",
    [
        ("gd", {}),
        ("sgd", {"momentum": 0.9, "weight_decay": 0.01}),
        ("adam", {"weight_decay": 0.01}),
        ("adamw", {"weight_decay": 0.05, "betas": (0.8, 0.99)}),
    ],
)
def test_one_model_equals_torchs_optimizer_with_a_group_per_circuit(optimizer, kw):
    """The engine with P = 1 against make_optimizer (two groups, two rates), float32, bit for bit."""
    gen = torch.Generator().manual_seed(0)
    X, W0, V0 = (torch.randn(6, 6, generator=gen) for _ in range(3))

    # an elementwise loss: the (1, 6, 6) stack and the lone (6, 6) model then have the same
    # gradient bits (a matmul's backward may sum in another order for a batch of one)
    def loss(w, v):
        return (torch.tanh(X * w) * v - 1).square().mean((-2, -1))

    run = sweep.train(
        lambda p, _s, _m: (loss(p["w"], p["v"]), {}),
        one_model(w=(W0, 0.3), v=(V0, 0.05)),
        1,
        optimizer=optimizer,
        steps=40,
        **kw,
    )
    w, v = W0.clone().requires_grad_(True), V0.clone().requires_grad_(True)
    opt = train.make_optimizer({"qk": ([w], 0.3), "ov": ([v], 0.05)}, optimizer, **kw)
    for _ in range(40):
        opt.zero_grad()
        loss(w, v).backward()
        opt.step()
    assert torch.equal(run.params["w"][0], w.detach()) and torch.equal(run.params["v"][0], v.detach())
