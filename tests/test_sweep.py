"""Batched training (attnflow.sweep + sharpening.experiments) equals training the same models
one by one with the theory chapter's SelfAttention and torch's optimizers (attnflow.train's
make_optimizer); the update rules alone are torch.optim's bit for bit."""

import numpy as np
import pytest
import torch

from attnflow import seeding, sweep, train
from attnflow.params import ParameterError
from attnflow.sharpening import data, experiments
from attnflow.sharpening.model import ModelConfig, SelfAttention

TASK = data.Task(n_classes=3, n_common=6, seq_len=6)
N = 120
# A stacked model against SelfAttention trained alone: the update rules are torch's bit for bit
# (test_each_slice_is_torchs_optimizer_bit_for_bit), the two float64 forwards are not (the stack's
# bag-of-tokens forward sums in another order): measured |Δθ| ≤ 4e-15 after 25 steps of each
# optimizer and ≤ 3e-16 after the 200 GD steps below, so 1e-13 + 1e-11·|θ| leaves a 25× margin.
RTOL, ATOL = 1e-11, 1e-13
SPECS = experiments.grid(
    ["CACO", "CAFO", "FACO", "FAFO"], lr_ratios=(1.0, 4.0), seeds=(0, 1), lr_ovs=(0.2,), init_scales=(0.5,)
)


def looped(
    spec,
    *,
    optimizer="gd",
    steps=25,
    target_loss=None,
    batch_size=None,
    momentum=0.0,
    weight_decay=0.0,
    attend_self=False,
):
    """One model the ordinary way: SelfAttention + torch's optimizer (one group per circuit), the
    loss of step k evaluated before update k; with ``target_loss`` it stops at the first step whose
    loss is ≤ the target. Returns the model and that step (None: not reached)."""
    cfg = ModelConfig(
        spec.parametrization, TASK.vocab_size, TASK.n_classes, attend_self=attend_self, dtype=torch.float64
    )
    model = SelfAttention(cfg).init_gaussian(
        spec.init_scale / cfg.d**0.5, seeding.generator(spec.seed + experiments.INIT_SEED_OFFSET)
    )
    batch = data.sample(TASK, N, seeding.generator(spec.seed))
    draw = sweep.minibatches(N, batch_size, 0) if batch_size else None

    def loss_fn(step):
        if draw is None:
            return model.loss(batch)
        i = draw()
        return model.loss(
            data.Batch(
                batch.tokens[i],
                batch.targets[i],
                batch.relevant_mask[i],
                torch.full((len(i),), 1.0 / len(i), dtype=torch.float64),
            )
        )

    opt = train.make_optimizer(
        model.groups(spec.lr_qk, spec.lr_ov), optimizer, momentum=momentum, weight_decay=weight_decay
    )
    for step in range(steps + 1):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(step)
        if target_loss and float(loss.detach()) <= target_loss:
            return model, step
        if step < steps:
            loss.backward()
            opt.step()
    return model, None


def batched(specs=SPECS, **kw):
    kw.setdefault("steps", 25)
    return experiments.run(specs, TASK, n_train=N, n_test=10, dtype=torch.float64, device="cpu", record_every=5, **kw)


@pytest.mark.parametrize("attend_self", [False, True])
def test_stacked_forward_equals_selfattention_forward(attend_self):
    stack = experiments.ModelStack(SPECS, TASK, attend_self=attend_self, dtype=torch.float64, device="cpu")
    train_set, _ = experiments.stack_batches(TASK, [sp.seed for sp in SPECS], N, 1, stack.device)
    out = stack.forward(stack.params(), train_set.tokens)
    bags = experiments.Bags.of(train_set, TASK.vocab_size, attend_self, torch.float64)
    logits_bag, relevant_bag = stack.bag_forward(stack.params(), bags)  # (P, K, B), (P, B)
    for i in range(len(SPECS)):
        ref = stack.model(i)(train_set.tokens[i])
        assert torch.allclose(out.logits[i], ref.logits, atol=1e-12), SPECS[i].label
        assert torch.allclose(out.attn[i], ref.attn, atol=1e-12), SPECS[i].label
        assert torch.allclose(logits_bag[i].T, ref.logits, atol=1e-12), SPECS[i].label
        relevant = (ref.attn * train_set.relevant_mask[i]).sum(-1)
        assert torch.allclose(relevant_bag[i], relevant, atol=1e-12), SPECS[i].label


@pytest.mark.parametrize(
    "optimizer, kw",
    [
        ("gd", {}),
        ("sgd", {"batch_size": 32, "momentum": 0.9, "weight_decay": 0.01}),
        ("adamw", {"batch_size": 32, "weight_decay": 0.01}),
        ("adam", {"batch_size": 32, "weight_decay": 0.01}),
        ("adam", {}),
    ],
)
def test_batched_training_equals_looped_training(optimizer, kw):
    lr_scale = 0.05 if optimizer.startswith("adam") else 1.0  # Adam steps are ~lr in size: keep them small
    specs = [
        experiments.ModelSpec(s.parametrization, s.lr_ratio, s.seed, s.lr_ov * lr_scale, s.init_scale) for s in SPECS
    ]
    exp = batched(specs, optimizer=optimizer, target_loss=None, eval_every=5, **kw)
    assert exp.run.steps_run == 25
    for i, spec in enumerate(specs):
        model, _ = looped(spec, optimizer=optimizer, **kw)
        mine = exp.stack.model(i, exp.run.params)
        for name, p in model.named_parameters():
            assert torch.allclose(dict(mine.named_parameters())[name], p, rtol=RTOL, atol=ATOL), (spec.label, name)


BIT_N, BIT_D = 40, 8
BIT_RATES = [(0.3, 0.1), (0.05, 0.2), (0.7, 0.013)]  # (lr of W, lr of V) of each model


def _bit_problem(dtype):
    gen = torch.Generator().manual_seed(7)
    X, Y = (torch.randn(BIT_N, BIT_D, generator=gen, dtype=torch.float64).to(dtype) for _ in range(2))
    W, V = (
        0.5 * torch.randn(len(BIT_RATES), BIT_D, BIT_D, generator=gen, dtype=torch.float64).to(dtype) for _ in range(2)
    )
    return X, Y, W, V


def _bit_loss(W, V, X, Y):  # W, V (..., D, D); X, Y (n, D) -> (...)
    return ((torch.tanh(X @ W) @ V - Y) ** 2).mean(dim=(-2, -1))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize(
    "optimizer, kw, lr_dtype",
    [
        ("gd", {}, torch.float64),
        ("gd", {}, None),  # None: the parameters' dtype; GD and SGD only use
        # the rate rounded to it
        ("sgd", {"momentum": 0.9, "weight_decay": 0.01}, torch.float64),
        ("sgd", {"batch_size": 16, "momentum": 0.5}, None),
        ("adam", {"weight_decay": 0.01}, torch.float64),
        ("adam", {"batch_size": 16, "betas": (0.8, 0.99)}, torch.float64),
        ("adamw", {"weight_decay": 0.05, "batch_size": 16}, torch.float64),
    ],
)
def test_each_slice_is_torchs_optimizer_bit_for_bit(dtype, optimizer, kw, lr_dtype):
    """P models with their own rates stacked on one axis: each slice after 30 steps of sweep.train
    has exactly the bits of the same model trained alone by torch.optim (one group per tensor)."""
    X, Y, W, V = _bit_problem(dtype)
    steps, bs, lr_dtype = 30, kw.get("batch_size"), lr_dtype or dtype

    def objective(params, sample, models):
        x, y = (X, Y) if sample is None else (X[sample], Y[sample])
        return _bit_loss(params["W"][models], params["V"][models], x, y), {}

    models = torch.arange(len(BIT_RATES))
    tensors = {
        "W": sweep.Stacked(W, models, torch.tensor([r[0] for r in BIT_RATES], dtype=lr_dtype)),
        "V": sweep.Stacked(V, models, torch.tensor([r[1] for r in BIT_RATES], dtype=lr_dtype)),
    }
    run = sweep.train(
        objective, tensors, len(BIT_RATES), optimizer=optimizer, steps=steps, n_samples=BIT_N, seed=3, **kw
    )
    make = {"gd": torch.optim.SGD, "sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW}
    for i, (lr_w, lr_v) in enumerate(BIT_RATES):
        w, v = W[i].clone().requires_grad_(True), V[i].clone().requires_grad_(True)
        opt = make[optimizer](
            [{"params": [w], "lr": lr_w}, {"params": [v], "lr": lr_v}],
            **{k: kw[k] for k in ("momentum", "weight_decay", "betas") if k in kw},
        )
        draw = sweep.minibatches(BIT_N, bs, 3) if bs else None
        for _ in range(steps):
            opt.zero_grad()
            s = draw() if draw else slice(None)
            _bit_loss(w, v, X[s], Y[s]).backward()
            opt.step()
        for name, mine in (("W", w), ("V", v)):
            assert torch.equal(run.params[name][i], mine.detach()), (i, name, (run.params[name][i] - mine).abs().max())


def test_each_model_stops_at_the_matched_training_loss():
    target = 0.9  # ln 3 ≈ 1.10 at init; reached within ~10–60 steps
    exp = batched(steps=200, target_loss=target)
    run = exp.run
    assert run.reached.all() and (run.loss_final <= target).all()
    assert len(set(run.stopped_at.tolist())) > 1  # models stop at different steps
    for i, spec in enumerate(SPECS):
        model, stopped_at = looped(spec, steps=200, target_loss=target)
        assert stopped_at == run.stopped_at[i], spec.label
        mine = exp.stack.model(i, run.params)
        for name, p in model.named_parameters():
            assert torch.allclose(dict(mine.named_parameters())[name], p, rtol=RTOL, atol=ATOL)
    # the record ends (NaN) once a model is frozen, and the frozen loss is the one at its stop step
    first = int(np.argmin(run.stopped_at))
    stop_row = list(run.steps).index(run.stopped_at[first])
    assert run.loss[stop_row, first] == pytest.approx(run.loss_final[first])
    assert np.isnan(run.loss[stop_row + 1 :, first]).all()


def test_checkpoints_keep_each_model_where_it_first_crosses_each_level():
    exp = batched(steps=200, target_loss=0.9, checkpoints=[1.0])
    snap = exp.run.checkpoints[1.0]
    assert (snap["step"] >= 0).all() and (snap["step"] <= exp.run.stopped_at).all()
    for i, spec in enumerate(SPECS[:4]):
        model, stopped_at = looped(spec, steps=200, target_loss=1.0)  # the same model stopped at 1.0
        assert stopped_at == snap["step"][i], spec.label
        mine = exp.stack.model(i, snap["params"])
        for name, p in model.named_parameters():
            assert torch.allclose(dict(mine.named_parameters())[name], p, rtol=RTOL, atol=ATOL)


def test_step_limits_freeze_a_model_unreached_at_its_own_budget():
    limits = [3 + i for i in range(len(SPECS))]
    exp = batched(steps=50, target_loss=1e-3, step_limits=limits)
    assert not exp.run.reached.any()
    for i in (0, 5):
        model, _ = looped(SPECS[i], steps=limits[i])
        mine = exp.stack.model(i, exp.run.params)
        for name, p in model.named_parameters():
            assert torch.allclose(dict(mine.named_parameters())[name], p, rtol=RTOL, atol=ATOL)


def test_divergence_is_a_clear_error_or_a_flag():
    blowup = [experiments.ModelSpec("CACO", 1.0, 0, 1e200, 1.0), experiments.ModelSpec("CACO", 1.0, 0, 0.1, 1.0)]
    with pytest.raises(sweep.TrainingDiverged, match=r"step \d+ for CACO r=1 seed=0 η=1e\+200"):
        batched(blowup, steps=50, target_loss=None)
    exp = batched(blowup, steps=50, target_loss=None, on_diverge="mark")
    assert exp.run.diverged.tolist() == [True, False]
    assert torch.isfinite(exp.run.params["CACO.W_qk"][1]).all()


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: experiments.ModelSpec("XAXO"), "parametrization"),
        (lambda: experiments.ModelSpec("FAFO", lr_ratio=0.0), "lr_ratio"),
        (lambda: experiments.ModelSpec("FAFO", lr_ratio=-2.0), "lr_ratio"),
        (lambda: experiments.ModelSpec("FAFO", init_scale=float("nan")), "init_scale"),
        (lambda: batched(optimizer="lbfgs"), "optimizer"),
        (lambda: batched(target_loss=-1.0), "target_loss"),
        (lambda: batched(on_diverge="ignore"), "on_diverge"),
        (lambda: batched(batch_size=10 * N, optimizer="sgd"), "batch_size"),
        (lambda: batched(target_loss=0.5, checkpoints=[0.2]), "checkpoints"),
        (lambda: batched(step_limits=[1, 2]), "step_limits"),
        (lambda: experiments.ModelStack([], TASK), "specs"),
    ],
)
def test_bad_input_is_rejected_with_the_parameter_named(make, match):
    with pytest.raises((ParameterError, ValueError), match=match):
        make()


def test_minibatch_stream_is_reproducible_and_covers_each_epoch():
    a, b = sweep.minibatches(10, 4, seed=3), sweep.minibatches(10, 4, seed=3)
    first = [a() for _ in range(5)]
    assert all(torch.equal(x, b()) for x in first)
    assert sorted(torch.cat(first[:2]).tolist()) == sorted(set(torch.cat(first[:2]).tolist()))  # no repeats in an epoch


def test_one_optimizer_tuple_and_no_import_cycle():
    """The engine's optimizer names are attnflow.train's; the stack does not import the experiments."""
    import ast
    import inspect

    from attnflow.sharpening import stack

    assert sweep.OPTIMIZERS is train.OPTIMIZERS
    imported = {n.module for n in ast.walk(ast.parse(inspect.getsource(stack))) if isinstance(n, ast.ImportFrom)}
    assert "attnflow.sharpening.experiments" not in imported
    import typing

    assert "specs" in typing.get_type_hints(stack.ModelStack.__init__)
    assert experiments.ModelSpec is stack.ModelSpec


@pytest.mark.parametrize(
    "optimizer, kw",
    [("gd", {}), ("sgd", {"momentum": 0.9, "weight_decay": 0.01}), ("adamw", {"weight_decay": 0.05})],
)
def test_in_place_and_masked_updates_give_torchs_bits_when_models_stop_at_their_own_step(optimizer, kw):
    """While every model trains, sweep.train updates in place; once one stops (here at its own step
    limit), the others are updated through the masked form. Each slice still has the bits of
    torch.optim run alone for its own number of steps."""
    X, Y, W, V = _bit_problem(torch.float32)
    limits = [7, 30, 18]

    def objective(params, sample, models):
        return _bit_loss(params["W"][models], params["V"][models], X, Y), {}

    models = torch.arange(len(BIT_RATES))
    rates = [torch.tensor([r[j] for r in BIT_RATES], dtype=torch.float64) for j in (0, 1)]
    tensors = {"W": sweep.Stacked(W, models, rates[0]), "V": sweep.Stacked(V, models, rates[1])}
    run = sweep.train(objective, tensors, len(BIT_RATES), optimizer=optimizer, steps=30, step_limits=limits, **kw)
    make = {"gd": torch.optim.SGD, "sgd": torch.optim.SGD, "adamw": torch.optim.AdamW}
    for i, (lr_w, lr_v) in enumerate(BIT_RATES):
        w, v = W[i].clone().requires_grad_(True), V[i].clone().requires_grad_(True)
        opt = make[optimizer]([{"params": [w], "lr": lr_w}, {"params": [v], "lr": lr_v}], **kw)
        for _ in range(limits[i]):
            opt.zero_grad()
            _bit_loss(w, v, X, Y).backward()
            opt.step()
        for name, mine in (("W", w), ("V", v)):
            assert torch.equal(run.params[name][i], mine.detach()), (optimizer, i, name)
