"""The sharpening model and data: shapes, masks, the population, initializations, errors."""

import math

import pytest
import torch

from attnflow import seeding
from attnflow.params import ParameterError
from attnflow.sharpening import reduction
from attnflow.sharpening.data import Task, n_compositions, population, sample
from attnflow.sharpening.model import ModelConfig, SelfAttention, orthogonal_embedding


pytestmark = pytest.mark.usefixtures("one_cpu_thread")  # tiny float64 models: ~20× faster on one thread


def test_sampled_dataset_shapes_and_relevant_mask():
    task = Task()  # spec defaults: K=5, M=20, T=12
    batch = sample(task, 64, seeding.generator(0))
    assert batch.tokens.shape == (64, 12) and batch.targets.shape == (64,)
    assert batch.relevant_mask.shape == (64, 12) and batch.weights.shape == (64,)
    assert torch.all(batch.tokens[:, -1] == task.query_id), "the query token must be last"
    assert torch.all(batch.relevant_mask.sum(1) == 1), "exactly one distinct token per sequence"
    distinct = batch.tokens[batch.relevant_mask]
    assert torch.equal(distinct, batch.targets), "the distinct token of class c has id c (one per class)"
    common = batch.tokens[:, :-1][~batch.relevant_mask[:, :-1]]
    assert torch.all((common >= task.common_ids()[0]) & (common <= task.common_ids()[-1]))
    assert math.isclose(float(batch.weights.sum()), 1.0)


def test_sampling_is_deterministic_per_seed():
    a = sample(Task(), 32, seeding.generator(3))
    b = sample(Task(), 32, seeding.generator(3))
    assert torch.equal(a.tokens, b.tokens) and torch.equal(a.targets, b.targets)


def test_population_is_a_probability_distribution_over_compositions():
    task = Task(n_classes=3, n_common=2, seq_len=5)
    pop = population(task)
    assert len(pop) == n_compositions(task) == 3 * math.comb(2 + 3 - 1, 3)
    assert math.isclose(float(pop.weights.sum()), 1.0, rel_tol=1e-12)
    noisy = population(Task(n_classes=3, n_common=2, seq_len=5, label_noise=0.3))
    assert math.isclose(float(noisy.weights.sum()), 1.0, rel_tol=1e-12)


def test_population_loss_equals_the_sampled_loss_in_expectation():
    task = Task(n_classes=3, n_common=2, seq_len=5)
    model = SelfAttention(ModelConfig("FAFO", task.vocab_size, 3)).init_gaussian(0.5, seeding.generator(0))
    with torch.no_grad():
        exact = float(model.loss(population(task)))
        sampled = float(model.loss(sample(task, 200_000, seeding.generator(1))))
    assert abs(exact - sampled) < 5e-3, f"population {exact} vs Monte Carlo {sampled}"


def test_population_too_large_is_a_clear_error():
    with pytest.raises(ParameterError, match="compositions"):
        population(Task())  # M=20, T=12: 2·10⁸ compositions


@pytest.mark.parametrize(
    "bad", [dict(n_classes=1), dict(n_common=0), dict(seq_len=1), dict(label_noise=1.0), dict(distinct_per_seq=12)]
)
def test_task_rejects_bad_parameters_by_name(bad):
    with pytest.raises(ParameterError, match=list(bad)[0]):
        Task(**bad)


@pytest.mark.parametrize("name", ["CACO", "CAFO", "FACO", "FAFO"])
def test_forward_shapes_attention_and_groups(name):
    task = Task()
    model = SelfAttention(ModelConfig(name, task.vocab_size, task.n_classes, d_h=8)).init_gaussian(
        0.1, seeding.generator(0)
    )
    batch = sample(task, 16, seeding.generator(1))
    out = model(batch.tokens)
    assert out.logits.shape == (16, task.n_classes) and out.attn.shape == (16, task.seq_len)
    assert torch.allclose(out.attn.sum(-1), torch.ones(16, dtype=out.attn.dtype))
    assert torch.all(out.attn[:, -1] == 0), "the query does not attend to itself by default"
    groups = model.groups(lr_qk=3.0, lr_ov=1.0)
    n_qk = sum(p.numel() for p in groups["qk"][0])
    n_ov = sum(p.numel() for p in groups["ov"][0])
    assert n_qk + n_ov == sum(p.numel() for p in model.parameters())
    assert groups["qk"][1] == 3.0 and groups["ov"][1] == 1.0
    assert set(model.rates(3.0, 1.0)) == {n for n, _ in model.named_parameters()}


def test_attend_self_gives_the_query_attention():
    task = Task()
    model = SelfAttention(ModelConfig("CACO", task.vocab_size, task.n_classes, attend_self=True))
    out = model(sample(task, 4, seeding.generator(0)).tokens)
    assert torch.all(out.attn[:, -1] > 0)


def test_bad_parametrization_names_the_parameter():
    with pytest.raises(ParameterError, match="parametrization"):
        ModelConfig("XYZW", 26, 5)


@pytest.mark.parametrize("name", ["CACO", "CAFO", "FACO", "FAFO"])
def test_init_on_manifold_is_balanced_and_exact(name):
    task = Task(n_classes=5, n_common=3, seq_len=11)
    model = reduction.init_on_manifold(
        SelfAttention(ModelConfig(name, task.vocab_size, 5, embedding_seed=2)), task, a0=0.3, b0=0.2
    )
    a, b, residual = reduction.coordinates(model, task)
    assert math.isclose(float(a), 0.3, rel_tol=1e-12) and math.isclose(float(b), 0.2, rel_tol=1e-12)
    assert float(residual) < 1e-14
    if model.factorized_qk:
        assert torch.allclose(model.W_q.T @ model.W_q, model.W_k.T @ model.W_k, atol=1e-14)
    if model.factorized_ov:
        assert torch.allclose(model.W_o.T @ model.W_o, model.W_v @ model.W_v.T, atol=1e-14)


def test_orthogonal_embedding():
    E = orthogonal_embedding(10, 12, seed=0)
    assert torch.allclose(E @ E.T, torch.eye(10, dtype=E.dtype), atol=1e-12)
    with pytest.raises(ParameterError, match="'d'"):
        orthogonal_embedding(10, 8)
