"""Finite-sample training of the focus–dilution model: sampler, exact counts form, limits, training.

The training rows are sufficient statistics (query, context counts, target weights); the tests pin
them to the sequence model (``model.loss`` on ``model.Sequences``) and the population model (``PopulationLoss``),
check that sampled data converge to the chain, and that stacked runs train as if alone.
"""

import numpy as np
import pytest
import torch

from attnflow.focus_dilution import chain as chains
from attnflow.focus_dilution import model, pagesetup, training
from attnflow.focus_dilution.model import init_params


@pytest.fixture(scope="module")
def chain():
    return chains.hub_family(delta=0.1)


def theta_at_scale(d, m=8, scale=0.4, seed=3):
    """A generic θ with O(1) attention scores (not the tiny initialization)."""
    return {k: v * (scale / 1e-3) for k, v in init_params(d, m, 1e-3, seed).items()}


def one_run(theta):
    return {k: v[None] for k, v in theta.items()}


# ---------------------------------------------------------------------------------------- sampler
def test_sampler_transition_frequencies_converge_to_P(chain):
    errs = []
    for n_samples in (100, 1600):
        data = training.MarkovSequences(chain, n_samples, 64, seed=0)
        C = data.transition_counts()
        P_hat = data.empirical_P()
        # binomial standard error of each entry, from the row counts
        se = np.sqrt(chain.P * (1 - chain.P) / C.sum(1, keepdims=True))
        assert np.all(np.abs(P_hat - chain.P) <= 5 * se + 1e-12), "an entry of P̂ is more than 5 standard errors off"
        errs.append(np.abs(P_hat - chain.P).max())
    # 16× more transitions: the error shrinks (by ≈ 4 in expectation)
    assert errs[1] < errs[0] / 2, errs


def test_sequences_start_in_stationarity(chain):
    data = training.MarkovSequences(chain, 20000, 3, seed=1)
    first = np.bincount(data.tokens[:, 0].numpy(), minlength=chain.d) / 20000
    assert np.abs(first - chain.pi).max() < 5 * np.sqrt(0.25 / 20000)
    context, target = data[0]
    assert context.shape == (3,) and target.shape == () and len(data) == 20000


def test_context_sampler_matches_the_chain(chain):
    n, s = 20000, 200
    data = training.MarkovContexts(chain, n, s, seed=2)
    assert data.counts.shape == (n, chain.d) and int(data.counts.sum(1).min()) == s == int(data.counts.sum(1).max())
    # context histogram mean → π; the query is the last context token, so it is always counted
    assert np.abs(data.counts.double().mean(0).numpy() / s - chain.pi).max() < 0.01
    assert bool((data.counts.gather(1, data.query[:, None]) >= 1).all())
    pairs = np.zeros((chain.d, chain.d))
    np.add.at(pairs, (data.query.numpy(), data.target.numpy()), 1)
    P_hat = pairs / pairs.sum(1, keepdims=True)
    se = np.sqrt(chain.P * (1 - chain.P) / pairs.sum(1, keepdims=True))
    assert np.all(np.abs(P_hat - chain.P) <= 5 * se)


# ----------------------------------------------------------------------------- exact counts form
def test_counts_form_equals_the_sequence_model(chain):
    theta = theta_at_scale(chain.d)
    data = training.MarkovSequences(chain, 300, 12, seed=0)
    ex = data.examples("last")
    assert ex.rows <= 300 and float(ex.weights.sum()) == pytest.approx(1.0)
    got = training.run_losses(one_run(theta), training.stack([ex], torch.float64))[0]
    assert float(got) == pytest.approx(float(model.loss(theta, model.Sequences(data.tokens))), rel=1e-12)


def test_stacked_counts_forward_is_the_models_counts_forward(chain):
    """training.forward (R stacked runs, one-hot queries, keys on the middle axis: the training fast
    path) equals model.forward on the same rows as Counts, entry by entry, for each of two runs with
    their own θ and their own (padded) example sets."""
    thetas = [theta_at_scale(chain.d, seed=3), theta_at_scale(chain.d, seed=4)]
    sets = [training.MarkovSequences(chain, 200, 12, seed=k).examples("last") for k in (0, 1)]
    batch = training.stack(sets, torch.float64)
    A, log_P = training.forward({k: torch.stack([t[k] for t in thetas]) for k in thetas[0]}, batch, 0.7)
    for r, (theta, ex) in enumerate(zip(thetas, sets)):
        out = model.forward(theta, model.Counts(ex.query, torch.log(ex.counts.T)), 0.7)  # rows (B, d)
        rows = ex.rows
        assert torch.allclose(A[r, :, :rows].T, out.attention, rtol=1e-12, atol=1e-15)
        assert torch.allclose(log_P[r, :, :rows].T, out.log_probs, rtol=1e-12, atol=1e-13)
        assert float(batch["weights"][r, :, rows:].abs().sum()) == 0.0  # padding rows weigh nothing


def test_all_positions_is_the_mean_over_prefixes(chain):
    theta = theta_at_scale(chain.d)
    data = training.MarkovSequences(chain, 200, 10, seed=0)
    got = training.run_losses(one_run(theta), training.stack([data.examples("all")], torch.float64))[0]
    expected = np.mean([float(model.loss(theta, model.Sequences(data.tokens[:, : t + 1]))) for t in range(1, 11)])
    assert float(got) == pytest.approx(expected, rel=1e-12)


def test_population_rows_equal_the_population_loss(chain):
    theta = theta_at_scale(chain.d)
    got = training.run_losses(one_run(theta), training.stack([training.population_examples(chain)], torch.float64))[0]
    assert float(got) == pytest.approx(float(model.PopulationLoss(chain)(theta)), rel=1e-12)


def test_finite_sample_loss_converges_to_the_population_loss(chain):
    """At a fixed θ with O(1) attention, |L_{N,s}(θ) − L(θ)| falls as N and s grow: the sampling
    error is O(N^{-1/2}) (std of the cross-entropy ≈ 0.5 per example) and the context bias O(1/s)."""
    theta = theta_at_scale(chain.d)
    L_pop = float(model.PopulationLoss(chain)(theta))
    gaps = []
    for n, s in ((200, 4), (2000, 32), (40000, 256)):
        ex = training.MarkovContexts(chain, n, s, seed=5).examples()
        gaps.append(abs(float(training.run_losses(one_run(theta), training.stack([ex], torch.float64))[0]) - L_pop))
    assert gaps[2] < gaps[0] and gaps[2] < 5 * 0.5 / np.sqrt(40000) + 2.0 / 256, gaps


# ------------------------------------------------------------------------------------- training
def test_gd_on_population_rows_is_gd_on_the_population_loss(chain):
    """Parity with ``PopulationLoss`` trained by torch's SGD: the same Euler steps."""
    run = training.train_runs(
        [training.RunSpec(chain, training.population_examples(chain))],
        lr=2.0,
        steps=60,
        record_every=60,
        dtype="float64",
        device="cpu",
        init_scale=0.05,
    )[0]
    theta = {k: v.clone().requires_grad_(True) for k, v in init_params(chain.d, 8, 0.05, 1).items()}
    loss = model.PopulationLoss(chain)
    opt = torch.optim.SGD(list(theta.values()), lr=2.0)
    for _ in range(60):
        opt.zero_grad()
        loss(theta).backward()
        opt.step()
    for name in theta:
        assert torch.allclose(run.states[name][-1], theta[name].detach(), rtol=1e-10, atol=1e-13), name
    assert run.t[-1] == 120.0 and run.quantities["loss"][-1] == pytest.approx(float(loss(theta).detach()), rel=1e-12)


@pytest.mark.parametrize("optimizer", ["gd", "adam"])
def test_stacked_runs_train_as_if_alone(chain, optimizer):
    sets = [training.MarkovContexts(chain, n, 16, seed=n).examples() for n in (50, 200)]
    kw = dict(
        optimizer=optimizer,
        lr=0.5 if optimizer == "gd" else 1e-2,
        steps=40,
        record_every=20,
        dtype="float64",
        device="cpu",
        init_scale=0.05,
    )
    together = training.train_runs([training.RunSpec(chain, e) for e in sets], **kw)
    for e, run in zip(sets, together):
        alone = training.train_runs([training.RunSpec(chain, e)], **kw)[0]
        for name in run.states:
            assert torch.allclose(run.states[name], alone.states[name], rtol=1e-9, atol=1e-12), (optimizer, name)
        assert np.allclose(run.train_loss, alone.train_loss, rtol=1e-10)


def test_train_run_records(chain):
    ex = training.MarkovContexts(chain, 100, 32, seed=0).examples()
    run = training.train_runs([training.RunSpec(chain, ex, "tiny")], lr=1.0, steps=30, record_every=10)[0]
    assert list(run.step) == [0, 10, 20, 30] and np.allclose(run.t, run.step * 1.0)
    assert run.states["W0"].shape == (4, chain.d, 8) and run.states["W0"].dtype == torch.float64
    for key in ("loss", "A", "amp", "sigma2", "hub_attention"):
        assert len(run.quantities[key]) == 4
    assert run.train_loss[0] == pytest.approx(np.log(chain.d), rel=1e-5)  # uniform prediction at θ ≈ 0
    assert np.all((run.data_hub_attention > 0) & (run.data_hub_attention < 1))
    assert run.settings["dtype"] == "float32" and run.label == "tiny"
    # the rows it trained on travel with it (robustness forecasts on them instead of sampling them again)
    assert run.examples is ex


def test_low_hub_attention_reads_the_low_queries():
    A = np.full((3, 3), 1 / 3)
    A[1:, 0] = [0.5, 0.7]
    pi = np.array([0.5, 0.25, 0.25])
    assert training.low_hub_attention(A, pi, hub=0) == pytest.approx(0.6)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_matches_cpu(chain):
    ex = training.MarkovContexts(chain, 200, 32, seed=0).examples()
    kw = dict(lr=1.0, steps=50, record_every=50, dtype="float64", init_scale=0.05)
    cpu = training.train_runs([training.RunSpec(chain, ex)], device="cpu", **kw)[0]
    gpu = training.train_runs([training.RunSpec(chain, ex)], device="cuda", **kw)[0]
    assert np.allclose(cpu.train_loss, gpu.train_loss, rtol=1e-9)


# ------------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    "make, match",
    [
        (lambda c: training.MarkovSequences(c, 0, 8), "n_samples"),
        (lambda c: training.MarkovSequences(c, 10, 2.5), "seq_len"),
        (lambda c: training.MarkovContexts(c, -1, 8), "n_samples"),
        (lambda c: training.MarkovSequences(c, 10, 8).examples("first"), "positions"),
        (lambda c: training.MarkovContexts(c, 10, 8).examples("all"), "MarkovSequences"),
        (lambda c: training.train_runs([], steps=1), "specs is empty"),
        (
            lambda c: training.train_runs([training.RunSpec(c, training.population_examples(c))], optimizer="lbfgs"),
            "optimizer",
        ),
        (
            lambda c: training.train_runs([training.RunSpec(c, training.population_examples(c))], dtype="float16"),
            "dtype",
        ),
        (lambda c: training.train_runs([training.RunSpec(c, training.population_examples(c))], device="tpu"), "device"),
        (
            lambda c: training.stack(
                [training.population_examples(c), training.population_examples(chains.dirichlet_chain(3))]
            ),
            "vocabulary size",
        ),
    ],
)
def test_bad_input_gives_clear_errors(chain, make, match):
    with pytest.raises(ValueError, match=match):
        make(chain)


def test_divergence_names_the_step(chain):
    from attnflow.train import TrainingDiverged

    with pytest.raises(TrainingDiverged, match="diverged at step"):
        training.train_runs(
            [training.RunSpec(chain, training.population_examples(chain))],
            lr=1e6,
            steps=50,
            init_scale=0.5,
            dtype="float64",
        )


def test_narrow_runs_padded_to_a_common_width_train_exactly(chain):
    """A width-2 run stacked with a width-8 one (zero-padded) equals the width-2 run alone."""
    ex = training.population_examples(chain)
    kw = dict(lr=1.0, steps=80, record_every=40, dtype="float64", device="cpu")
    th2, th8 = init_params(chain.d, 2, 0.05, 1), init_params(chain.d, 8, 0.05, 2)
    both = training.train_runs(
        [training.RunSpec(chain, ex), training.RunSpec(chain, ex)], d_model=8, theta0=[th2, th8], **kw
    )
    alone = training.train_runs([training.RunSpec(chain, ex)], d_model=2, theta0=th2, **kw)[0]
    assert both[0].states["W0"].shape == (3, chain.d, 2) and both[0].settings["width"] == 2
    for name in alone.states:
        assert torch.allclose(both[0].states[name], alone.states[name], rtol=1e-10, atol=1e-13), name
    with pytest.raises(ValueError, match="one per run"):
        training.train_runs([training.RunSpec(chain, ex)], theta0=[th2, th8], **kw)


def test_sharpness_at_the_origin_is_sigma0(chain):
    """λ_max(∇²L) at θ ≈ 0 is σ0 (spec R1: eigenvalues ±σ0 at the origin)."""
    from attnflow.focus_dilution import closed_forms

    run = training.train_runs(
        [training.RunSpec(chain, training.population_examples(chain))],
        steps=1,
        record_every=1,
        init_scale=1e-6,
        dtype="float64",
        device="cpu",
    )[0]
    assert training.sharpness(run, [0.0])[0] == pytest.approx(closed_forms.sigma0(chain), rel=1e-4)


# -------------------------------------------------------------------------------- page setup
def page_cfg(**over):
    """The parameters of a training page (schema ``contracts.CYCLE``), shrunk to run in a second."""
    from types import SimpleNamespace

    cfg = dict(
        chain="hub",
        n_low=4,
        a_h=0.5,
        b_h=0.3,
        c_cyc=0.4,
        delta=0.1,
        chain_seed=0,
        d_model=8,
        init_scale=0.03,
        score_scale=1.0,
        seed=1,
        n_samples=64,
        seq_len=32,
        optimizer="gd",
        lr=1.0,
        steps=40,
        record_every=10,
        data_seed=0,
        device="cpu",
    )
    return SimpleNamespace(**{**cfg, **over})


def test_train_settings_are_keywords_of_train_runs():
    import inspect

    kw = pagesetup.train_settings(page_cfg(lr=0.5), dtype="float64")
    accepted = inspect.signature(training.train_runs).parameters
    assert set(kw) <= set(accepted), f"not keywords of train_runs: {set(kw) - set(accepted)}"
    assert kw["lr"] == 0.5 and kw["dtype"] == "float64" and kw["seed"] == 1


def test_start_page_builds_the_chain_and_seeds():
    from attnflow.focus_dilution.contracts import make_chain

    cfg = page_cfg()
    markov = pagesetup.start_training_page(cfg)
    first = torch.rand(3)
    again = pagesetup.start_training_page(cfg)
    assert torch.equal(first, torch.rand(3)), "start_page does not reseed torch with cfg.seed"
    assert np.array_equal(markov.P, make_chain(cfg).P) and np.array_equal(again.P, markov.P)


def test_page_flow_and_trained_runs_start_together_and_equal_the_explicit_calls():
    """The set-up the pages cycle and pca_trajectories write out: same data, same θ(0), same settings."""
    from attnflow.focus_dilution import runs

    cfg = page_cfg()
    markov = pagesetup.start_training_page(cfg)
    flow, trained = pagesetup.page_flow(cfg, markov), pagesetup.trained_runs(cfg, markov, "float64", n_seeds=1)[0]
    horizon = cfg.lr * cfg.steps
    assert flow.t[-1] == pytest.approx(horizon) and trained.t[-1] == pytest.approx(horizon)
    for name in model.PARAM_NAMES:  # the same initial θ
        assert torch.allclose(flow.result.states()[name][0], trained.states[name][0], atol=1e-15), name
    data = training.MarkovContexts(markov, cfg.n_samples, cfg.seq_len, seed=cfg.data_seed)
    explicit = training.train_runs(
        [training.RunSpec(markov, data.examples(), "trained")],
        optimizer="gd",
        lr=1.0,
        steps=40,
        record_every=10,
        init_scale=0.03,
        d_model=8,
        seed=1,
        score_scale=1.0,
        device="cpu",
        dtype="float64",
    )[0]
    for name in model.PARAM_NAMES:
        assert torch.equal(explicit.states[name], trained.states[name]), name
    ref = runs.population_flow(markov, d_model=8, init_scale=0.03, seed=1, t_eval=runs.time_grid(horizon))
    assert np.array_equal(ref.quantities["loss"], flow.quantities["loss"])
