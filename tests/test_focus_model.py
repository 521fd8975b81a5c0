"""The one-layer model: population gradients and Hessian blocks, sympy vs autograd vs the
closed-form backward pass of spec §4.3, and the finite-sequence forward."""

import numpy as np
import pytest
import sympy as sp
import torch

from attnflow.flow import Flattener
from attnflow.focus_dilution import chain as chains
from attnflow.focus_dilution import closed_forms, model, spectrum, symbolic
from attnflow.focus_dilution.targets import SPEC

RANDOM_CHAINS = [chains.dirichlet_chain(d, seed=s) for d, s in [(3, 1), (6, 0), (7, 5)]] + [
    chains.hub_family(3, 0.2, 0.6, 0.1, 0.3),
    chains.hub_family(delta=0.1),
]


def _autograd(loss, theta):
    fl = Flattener(theta)
    x = fl.flatten(theta).requires_grad_(True)
    return torch.autograd.grad(loss(fl.unflatten(x)), x)[0].numpy(), fl


@pytest.mark.parametrize("markov", RANDOM_CHAINS, ids=lambda c: c.name[:30])
@pytest.mark.parametrize("scale", [1e-2, 0.5])
def test_closed_form_backward_equals_autograd(markov, scale):
    m = 5
    theta = {k: v / 1e-3 * scale for k, v in model.init_params(markov.d, m, 1e-3, seed=3).items()}
    loss, grad = model.PopulationLoss(markov, 0.7), model.PopulationGrad(markov, m, 0.7)
    g_auto, fl = _autograd(loss, theta)
    g_closed = grad(fl.flatten(theta).numpy())
    assert np.allclose(g_closed, g_auto, rtol=1e-10, atol=1e-14), "PopulationGrad (spec §4.3) must equal autograd"


def test_backward_rules_are_the_derivatives_sympy_computes():
    rules = symbolic.backward_rules(3)
    assert symbolic.is_zero(rules.logits) and symbolic.is_zero(rules.attention)


def test_sympy_gradient_of_the_full_model_equals_autograd():
    P = [
        [sp.Rational(1, 2), sp.Rational(1, 3), sp.Rational(1, 6)],
        [sp.Rational(1, 4), sp.Rational(1, 4), sp.Rational(1, 2)],
        [sp.Rational(3, 5), sp.Rational(1, 5), sp.Rational(1, 5)],
    ]
    L, xs = symbolic.full_loss(P, m=1)  # 8 parameters: W0 (3,1), WQ, WK (1,1), W1 (1,3)
    grad = sp.lambdify(xs, [sp.diff(L, x) for x in xs], "numpy")
    markov = chains.from_matrix(np.array(P, dtype=float))
    v = np.random.default_rng(0).standard_normal(len(xs)) * 0.7
    theta = Flattener(model.init_params(3, 1, 1.0, 0)).unflatten(torch.as_tensor(v))
    g_auto, _ = _autograd(model.PopulationLoss(markov), theta)
    assert np.allclose(np.array(grad(*v), dtype=float), g_auto, rtol=1e-9, atol=1e-13)


def test_origin_hessian_is_the_bilinear_form_of_B():
    markov = chains.dirichlet_chain(4, seed=2)
    m = 3
    zero = {k: v * 0 for k, v in model.init_params(markov.d, m, 1.0, 0).items()}
    H, layout = model.hessian(model.PopulationLoss(markov), zero)
    # sympy: Hessian of −⟨B, W0 W1⟩ in the same flat order
    W0 = sp.Matrix(markov.d, m, lambda i, j: sp.Symbol(f"a{i}{j}"))
    W1 = sp.Matrix(m, markov.d, lambda i, j: sp.Symbol(f"b{i}{j}"))
    B = sp.Matrix(closed_forms.B_matrix(markov))
    form = -sum((B.multiply_elementwise(W0 * W1)))
    xs = list(W0) + list(W1)
    Hs = np.array(sp.hessian(form, xs), dtype=float)
    idx = np.r_[np.arange(layout[0][1].start, layout[0][1].stop), np.arange(layout[3][1].start, layout[3][1].stop)]
    assert np.allclose(H[np.ix_(idx, idx)], Hs, atol=1e-12)
    assert np.abs(np.delete(np.delete(H, idx, 0), idx, 1)).max() < 1e-14, "attention block is zero at the origin"


@pytest.mark.parametrize("markov", RANDOM_CHAINS[:3], ids=lambda c: c.name[:30])
def test_attention_block_at_theta_c1_matches_sympy(markov):
    m = 2
    g = closed_forms.g_rate(markov)
    blocks = spectrum.jacobian_blocks(
        model.PopulationLoss(markov), spectrum.theta_c1_params(markov, m), sign=np.sign(g)
    )
    att = np.r_[tuple(np.arange(sl.start, sl.stop) for n, sl in blocks.layout if n in ("WQ", "WK"))]
    sym = symbolic.attention_block(m)
    H_sym = np.array(sym.hessian.subs(sp.Symbol("g", positive=True), g), dtype=float)
    assert np.allclose(-blocks.J[np.ix_(att, att)], H_sym, atol=1e-12), "∇²L in (WQ, WK) = Hessian of ⟨−g uuᵀ, WQWKᵀ⟩"
    assert blocks.cross_max < 1e-14
    assert blocks.embedding_eigs.max() < 1e-10, "(W0, W1) block is neutral or contractive"


def test_init_reproduces_the_spec_listing():
    theta = model.init_params(5, 8, 1e-3, seed=1)
    flat = 1e-3 * np.random.default_rng(1).standard_normal(208)
    assert np.allclose(Flattener(theta).flatten(theta).numpy(), flat)
    M = theta["WQ"] @ theta["WK"].T
    assert float(torch.linalg.matrix_norm(M)) == pytest.approx(SPEC["M_fro_init"], abs=5e-8)


def test_rank_one_params_and_batched_forward():
    markov = chains.hub_family()
    c1 = closed_forms.theta_c1(markov)
    theta = model.rank_one_params(c1.a, c1.b, -0.3, 4)
    u = torch.zeros(4, dtype=torch.float64)
    u[0] = 1
    assert float(u @ theta["WQ"] @ theta["WK"].T @ u) == pytest.approx(-0.3)
    out = model.forward({k: torch.stack([v, v]) for k, v in theta.items()}, markov)
    assert out.attention.shape == (2, 5, 5) and torch.allclose(
        out.attention.sum(-1), torch.ones(2, 5, dtype=torch.float64)
    )


def test_the_sequence_loss_tends_to_the_population_loss():
    markov = chains.hub_family(delta=0.1)
    theta = {k: v * 300 for k, v in model.init_params(markov.d, 4, 1e-3, seed=2).items()}
    batch = chains.sample_sequences(markov, 20000, 400, generator=torch.Generator().manual_seed(1))
    L_seq = float(model.loss(theta, model.Sequences(batch)))
    L_pop = float(model.PopulationLoss(markov)(theta))
    assert L_seq == pytest.approx(L_pop, abs=0.02), "finite N, s: within sampling error of the population loss"
    out = model.forward(theta, batch[:8, :-1])
    assert out.attention.shape == (8, 400) and out.logits.shape == (8, markov.d)
