"""Property tests (hypothesis) of the sharpening library measurements the theory pages' claims rest
on, over random valid settings rather than the book's defaults: Lemma 1's rate identities (claims
A1, A2) and the symmetric/balanced manifold of Proposition 2 (A3–A5: the reduced ODE is exact on it)."""

import math

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attnflow.sharpening import data, reduction, rescaling
from attnflow.sharpening.model import ModelConfig, SelfAttention

PROPERTY = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(
    d=st.integers(2, 6),
    d_h_frac=st.floats(0.0, 1.0),
    seed=st.integers(0, 10_000),
    scale=st.floats(0.1, 3.0),
    eta=st.floats(0.05, 5.0),
    n_keys=st.integers(2, 7),
)
def test_lemma1_rates_any_shape_and_balanced_state(d, d_h_frac, seed, scale, eta, n_keys):
    """Lemma 1 item 2 (d/dt W_Q W_Kᵀ = −η(W_Q W_Qᵀ G + G W_K W_Kᵀ), any state) against autograd of the
    factors, and item 3 (the balanced form with √(WWᵀ), √(WᵀW)) at a balanced state, d_h ≤ d."""
    d_h = 1 + int(d_h_frac * (d - 1))
    task = rescaling.PointerTask.sample(d, n_keys, 64, seed)
    W_q, W_k = rescaling.balanced_factors(d, d_h, scale, seed)
    W_dot, G = rescaling.autograd_rate(task, W_q, W_k, eta)
    rates = rescaling.lemma_rate(W_q, W_k, G, eta)
    size = float(W_dot.abs().max()) + 1e-300
    assert float((rates["factor_form"] - W_dot).abs().max()) <= 1e-12 * size  # an identity: round-off only
    # √ of the rank-d_h products: psd_sqrt zeroes the round-off eigenvalues (their roots would be ~√eps),
    # so the two forms agree to round-off as well (measured ≤ 1.8e-15 relative over 200 random draws)
    assert float((rates["balanced_form"] - rates["factor_form"]).abs().max()) <= 1e-12 * size


@PROPERTY
@given(
    name=st.sampled_from(["CACO", "CAFO", "FACO", "FAFO"]),
    K=st.integers(2, 5),
    M=st.integers(1, 6),
    T=st.integers(3, 6),
    a0=st.floats(0.01, 2.0),
    b0=st.floats(-2.0, 2.0).filter(lambda b: abs(b) > 1e-3),
)
def test_manifold_initialization_round_trips_its_coordinates(name, K, M, T, a0, b0):
    """init_on_manifold puts the model at OV scalar a0 and QK scalar b0 with no off-manifold part, for
    every parametrization and task size (the starting point of every reduced-vs-full comparison)."""
    task = data.Task(n_classes=K, n_common=M, seq_len=T)
    model = reduction.init_on_manifold(SelfAttention(ModelConfig(name, task.vocab_size, K)), task, a0, b0)
    a, b, residual = reduction.coordinates(model, task)
    assert float(a) == pytest.approx(a0, rel=1e-12, abs=1e-14)
    assert float(b) == pytest.approx(b0, rel=1e-12, abs=1e-14)
    assert float(residual) <= 1e-13 * max(1.0, abs(a0), abs(b0))


@PROPERTY
@given(
    K=st.integers(2, 5),
    M=st.integers(1, 6),
    T=st.integers(3, 5),
    a0=st.floats(0.01, 2.0),
    b0=st.floats(-2.0, 2.0),
    h=st.floats(1e-3, 1e-1),
)
def test_collapsed_gradient_is_tangent_to_the_manifold(K, M, T, a0, b0, h):
    """Proposition 2's invariance for the collapsed circuits: the population gradient at a manifold
    point lies in the (linear) manifold, so θ − h∇L(θ) is on it again, to round-off, for any h."""
    task = data.Task(n_classes=K, n_common=M, seq_len=T)
    model = reduction.init_on_manifold(SelfAttention(ModelConfig("CACO", task.vocab_size, K)), task, a0, b0)
    loss = model.functional_loss(data.population(task))
    theta = {n: v.requires_grad_(True) for n, v in model.state().items()}
    grads = torch.autograd.grad(loss(theta), list(theta.values()))
    stepped = {n: (v - h * g).detach() for (n, v), g in zip(theta.items(), grads)}
    _, _, residual = reduction.coordinates(model, task, stepped)
    size = max(1.0, abs(a0), abs(b0), max(float(g.abs().max()) for g in grads))
    assert math.isfinite(float(residual)) and float(residual) <= 1e-12 * size
