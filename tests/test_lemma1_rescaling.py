"""Lemma 1 parity: sympy identity = autograd = integrated flows (claim A2)."""

import numpy as np
import pytest
import torch

from attnflow.params import ParameterError
from attnflow.sharpening import rescaling, symbolic


def test_sympy_identities_are_exactly_zero():
    s = symbolic.lemma1_scalar()
    assert symbolic.is_zero(s.imbalance_dot) and symbolic.is_zero(s.rate_identity)
    m = symbolic.lemma1_matrix(2, 2)
    assert symbolic.is_zero(m.residual) and symbolic.is_zero(m.balancedness_dot)
    m = symbolic.lemma1_matrix(3, 1)  # rectangular factors too
    assert symbolic.is_zero(m.residual) and symbolic.is_zero(m.balancedness_dot)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_autograd_matches_both_forms_of_the_lemma(seed):
    task = rescaling.PointerTask.sample(5, 4, 16, seed)
    W_q, W_k = rescaling.balanced_factors(5, 3, 0.7, seed)
    assert torch.allclose(W_q.T @ W_q, W_k.T @ W_k, atol=1e-14)
    W_dot, G = rescaling.autograd_rate(task, W_q, W_k, 0.3)
    forms = rescaling.lemma_rate(W_q, W_k, G, 0.3)
    assert torch.allclose(W_dot, forms["factor_form"], rtol=1e-12, atol=1e-15)
    assert torch.allclose(W_dot, forms["balanced_form"], rtol=1e-10, atol=1e-13)


def test_item3_needs_balance():
    task = rescaling.PointerTask.sample(4, 4, 16, 0)
    g = torch.Generator().manual_seed(3)
    W_q, W_k = torch.randn(4, 2, generator=g, dtype=torch.float64), torch.randn(4, 2, generator=g, dtype=torch.float64)
    W_dot, G = rescaling.autograd_rate(task, W_q, W_k, 1.0)
    forms = rescaling.lemma_rate(W_q, W_k, G, 1.0)
    assert torch.allclose(W_dot, forms["factor_form"], rtol=1e-12, atol=1e-15)  # item 2 always
    assert not torch.allclose(W_dot, forms["balanced_form"], rtol=1e-3)  # item 3 only if balanced


def test_flows_coincide():
    task = rescaling.PointerTask.sample(3, 4, 16, 0)
    W_q, W_k = rescaling.balanced_factors(3, 2, 1.0, 0)
    c = rescaling.compare_flows(task, W_q, W_k, 1.0, 3.0, 7, rtol=1e-10)
    scale = np.abs(c.W_factorized).max()
    assert np.abs(c.W_factorized - c.W_rescaled).max() / scale < 1e-7
    assert np.abs(c.W_factorized - c.W_collapsed).max() / scale > 1e-3
    assert c.balancedness.max() < 1e-9


def test_scalar_flow_matches_rescaled_ode():
    r = rescaling.scalar_flows(1.0, 1.0, 5.0, 11)
    assert np.abs(r["b_factorized"] - r["b_rescaled"]).max() < 1e-7
    assert np.abs(r["imbalance_drift"]).max() < 1e-8
    with pytest.raises(ParameterError, match="imbalance"):
        rescaling.scalar_flows(-1.0, 1.0, 1.0, 3)


def test_unbalanceable_shapes_are_rejected():
    with pytest.raises(ParameterError, match="d_h"):
        rescaling.balanced_factors(2, 3, 1.0, 0)
