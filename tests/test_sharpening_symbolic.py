"""Sympy derivations of the sharpening chapter: every identity simplifies to zero, and the
symbolic gradients equal autograd on the torch implementations (reduced and full model)."""

import math

import numpy as np
import pytest
import sympy as sp
import torch

from attnflow.sharpening import reduction, symbolic
from attnflow.sharpening.data import Task, population
from attnflow.sharpening.model import ModelConfig, SelfAttention
from attnflow.sharpening.reduced import ReducedSystem


pytestmark = pytest.mark.usefixtures("one_cpu_thread")  # tiny float64 models: ~20× faster on one thread


PARAMETRIZATIONS = ["CACO", "CAFO", "FACO", "FAFO"]


def test_reduced_gradients_match_spec_forms():
    rg = symbolic.reduced_gradients()
    assert symbolic.is_zero(rg.residual_a), "∂L/∂a should be −p(1−s) (spec §5.2)"
    assert symbolic.is_zero(rg.residual_b), "∂L/∂b should be −a p(1−p)(1−s) (spec §5.2)"


def test_sympy_gradients_equal_autograd_on_the_reduced_loss():
    rg = symbolic.reduced_gradients()
    a, b, n, K, *_ = symbolic.reduced_symbols()
    grad = sp.lambdify((a, b, n, K), [rg.dL_da, rg.dL_db], "math")
    rng = np.random.default_rng(0)
    for _ in range(5):
        av, bv = rng.uniform(0.05, 6.0, size=2)
        system = ReducedSystem("CACO", 1.0, n_compete=9, n_classes=5)
        at = torch.tensor(av, dtype=torch.float64, requires_grad=True)
        bt = torch.tensor(bv, dtype=torch.float64, requires_grad=True)
        ga, gb = torch.autograd.grad(system.loss(at, bt), (at, bt))
        sa, sb = grad(av, bv, 9, 5)
        assert math.isclose(float(ga), sa, rel_tol=1e-12), f"∂L/∂a at ({av}, {bv})"
        assert math.isclose(float(gb), sb, rel_tol=1e-12), f"∂L/∂b at ({av}, {bv})"


def test_full_model_gradient_on_the_manifold_is_the_prediction():
    fm = symbolic.full_model_reduction(K=3, M=2, T=4)
    assert fm.n_sequences == 9
    assert all(e == 0 for e in fm.residual), "gradient entries differ from ∂L/∂θ / ‖E_θ‖²"
    assert all(e == 0 for e in fm.rate_residual)
    K, M = sp.symbols("K M", positive=True)
    assert sp.simplify(fm.c_ov - 1 / (K - 1)) == 0
    assert sp.simplify(fm.kappa2 - (1 / K + 1 / M)) == 0


@pytest.mark.parametrize("name", PARAMETRIZATIONS)
def test_sympy_reduced_rates_equal_autograd_velocity_of_the_full_model(name):
    """Prop. 2 on the torch model: the projected autograd velocity = the symbolic reduced ODE."""
    task = Task(n_classes=5, n_common=3, seq_len=11)
    const = reduction.constants(task)
    model = reduction.init_on_manifold(
        SelfAttention(ModelConfig(name, task.vocab_size, 5, embedding_seed=1)), task, a0=0.7, b0=0.4
    )
    batch = population(task)
    lr_qk, lr_ov = 2.0, 1.0
    grads = torch.autograd.grad(model.loss(batch), list(model.parameters()))
    rates = model.rates(lr_qk, lr_ov)
    theta = model.state()
    velocity = {n: -rates[n] * g for (n, _), g in zip(model.named_parameters(), grads)}
    # d/dt of (a, b) along the velocity, by forward-mode differentiation of the projection
    _, (a_dot, b_dot) = torch.func.jvp(lambda th: reduction.coordinates(model, task, th)[:2], (theta,), (velocity,))
    li = symbolic.line_invariant(name)
    a, b, n, K, r, eta_ov, _ = symbolic.reduced_symbols()
    qk, ov = reduction.reduced_rates(name, const, lr_qk, lr_ov)
    f = sp.lambdify((a, b, n, K, r, eta_ov), [li.a_dot, li.b_dot], "math")
    ea, eb = f(0.7, 0.4, 9, 5, qk / ov, ov)
    assert math.isclose(float(a_dot), ea, rel_tol=1e-10), f"{name}: da/dt autograd {float(a_dot)} vs sympy {ea}"
    assert math.isclose(float(b_dot), eb, rel_tol=1e-10), f"{name}: db/dt autograd {float(b_dot)} vs sympy {eb}"


def test_factorized_rates():
    fr = symbolic.factorized_rates(K=3)
    assert fr.ov_sqrt_residual == sp.zeros(3, 3)
    assert "Abs(a)" in str(fr.a_dot) and "Abs(b)" in str(fr.b_dot)


@pytest.mark.parametrize("name", PARAMETRIZATIONS)
def test_line_invariant_is_conserved_symbolically(name):
    li = symbolic.line_invariant(name)
    assert li.derivative == 0, f"{name}: d/dt[Ψ − rΦ] = {li.derivative}"


def test_line_invariant_with_unbalanced_ov():
    li = symbolic.line_invariant("CAFO", imbalance_ov=True)
    assert li.derivative == 0


def test_potentials_match_the_numeric_closed_forms():
    a, b, n, *_ = symbolic.reduced_symbols()
    for name in PARAMETRIZATIONS:
        li = symbolic.line_invariant(name)
        system = ReducedSystem(name, 1.0, n_compete=9)
        phi = sp.lambdify(a, li.phi, "mpmath")
        psi = sp.lambdify((b, n), li.psi, "mpmath")
        for x in (0.3, 2.0, 7.5):
            assert math.isclose(float(phi(x)), float(system.phi(x)), rel_tol=1e-12)
            assert math.isclose(float(psi(x, 9)), float(system.psi(x)), rel_tol=1e-12)


def test_growth_laws_and_matched_margin():
    g = symbolic.growth_laws()
    *_, K, r, eta, t = symbolic.reduced_symbols()
    assert sp.simplify(g.a_collapsed_offset - sp.log(eta * (K - 1))) == 0
    assert g.a_factorized_ratio == 1 and g.ei_asymptotic == 1
    assert sp.simplify(g.odds_caco - r * sp.log(t) ** 2 / 2) == 0
    assert set(g.odds_in_t) == set(PARAMETRIZATIONS)
    assert symbolic.is_zero(symbolic.matched_loss().residual)
