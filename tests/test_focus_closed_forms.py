"""Closed forms of R1–R5 against autograd and the integrated flow, on random chains (not only
the reference chain), and the sympy identities behind them."""

import numpy as np
import pytest

from attnflow.focus_dilution import chain as chains
from attnflow.focus_dilution import closed_forms, measure, model, runs, spectrum, symbolic
from attnflow.focus_dilution.targets import SPEC

RNG = np.random.default_rng(12345)
RANDOM_CHAINS = [
    chains.dirichlet_chain(int(d), seed=int(s)) for d, s in zip(RNG.integers(3, 8, 4), RNG.integers(0, 1000, 4))
]
RANDOM_CHAINS += [chains.hub_family(int(n), *RNG.uniform(0.1, 0.9, 2), RNG.uniform(0, 0.8), 0.0) for n in (2, 5)]
IDS = [c.name[:40] for c in RANDOM_CHAINS]


@pytest.mark.parametrize("markov", RANDOM_CHAINS, ids=IDS)
def test_sigma0_is_the_top_eigenvalue_at_the_origin(markov):
    m = 3
    zero = {k: v * 0 for k, v in model.init_params(markov.d, m, 1.0, 0).items()}
    H, _ = model.hessian(model.PopulationLoss(markov), zero)
    eig = np.sort(np.linalg.eigvalsh(-H))
    assert np.allclose(eig, closed_forms.origin_spectrum(markov, m), atol=1e-12)
    B = closed_forms.B_matrix(markov)
    assert np.linalg.svd(B, compute_uv=False)[0] == pytest.approx(closed_forms.sigma0(markov), rel=1e-12)
    assert np.linalg.matrix_rank(B) == 1


@pytest.mark.parametrize("markov", RANDOM_CHAINS, ids=IDS)
def test_theta_c1_is_a_critical_point_with_loss_H_and_rate_g(markov):
    m = 4
    loss = model.PopulationLoss(markov, score_scale=0.6)
    theta = spectrum.theta_c1_params(markov, m)
    out = model.forward(theta, loss.population, loss.score_scale)
    assert np.allclose(out.log_probs.exp().numpy(), np.tile(markov.pi, (markov.d, 1)), atol=1e-12), (
        "P̂ = π for every query"
    )
    assert float(model.cross_entropy(out, loss.population)) == pytest.approx(markov.unigram_entropy(), abs=1e-12)
    gn = measure.grad_norms({k: v[None] for k, v in theta.items()}, loss)[0]
    assert gn < 1e-12, "θ_c¹ is a critical point"
    c1 = closed_forms.theta_c1(markov)
    assert np.linalg.norm(c1.a) == pytest.approx(np.linalg.norm(c1.b)), "balanced: ‖a*‖ = ‖b*‖"
    assert np.linalg.norm(c1.a) == pytest.approx(c1.W0_norm)
    g = closed_forms.g_rate(markov, 0.6)
    blocks = spectrum.jacobian_blocks(loss, theta, sign=np.sign(g))
    assert blocks.eigs.max() == pytest.approx(abs(g), rel=1e-8), "largest eigenvalue of J = |g|"
    assert blocks.n_unstable == m and blocks.unstable_qk_residual < 1e-8


@pytest.mark.parametrize("markov", RANDOM_CHAINS, ids=IDS)
def test_attention_tilt_matches_the_model(markov):
    c1 = closed_forms.theta_c1(markov)
    h = 1e-6
    Ap = model.forward(model.rank_one_params(c1.a, c1.b, h, 3), markov, 1.3).attention.numpy()
    Am = model.forward(model.rank_one_params(c1.a, c1.b, -h, 3), markov, 1.3).attention.numpy()
    assert np.allclose((Ap - Am) / (2 * h), closed_forms.dkappa_A(markov, 1.3), atol=1e-8)


def test_sympy_identities_hold():
    o = symbolic.origin_linearization(3)
    assert symbolic.is_zero(o.residual) and o.rank == 1 and symbolic.is_zero(o.extras["sigma0_residual"])
    assert o.score_grad_order == 1
    tilt = symbolic.attention_tilt(3)
    assert symbolic.is_zero(tilt.residual) and symbolic.is_zero(tilt.row_sums) and symbolic.is_zero(tilt.sign_residual)
    tb = symbolic.transverse_block(3)
    assert symbolic.is_zero(tb.scores_change) and tb.first_order == 0 and tb.residual == 0
    assert symbolic.is_zero(tb.G_residual)
    deg = symbolic.degenerate_point(3)
    assert symbolic.is_zero(deg.M_perp) and all(m_ == 0 for m_ in deg.collinearity_minors)
    ls = symbolic.lyapunov_schmidt(2)
    assert ls.charpoly_residual == 0 and symbolic.is_zero(ls.M0) and symbolic.is_zero(ls.M1_residual)
    ab = symbolic.attention_block(2)
    g = next(k for k in ab.eigenvalues if k.is_positive)
    assert ab.eigenvalues == {g: 2, -g: 2, 0: 4}


def test_unigram_saddle_sympy_identities():
    u = symbolic.unigram_saddle(3)
    for e in [u.P_hat_residual, u.loss_residual, u.grad_a, u.grad_b, u.g_residual, u.dA_residual, u.balance_residual]:
        assert symbolic.is_zero(e)


def test_reference_closed_forms_match_the_spec():
    c = chains.hub_family()
    assert closed_forms.sigma0(c) == pytest.approx(SPEC["sigma0"], abs=5e-6)
    assert closed_forms.theta_c1(c).W0_norm == pytest.approx(SPEC["W0_norm_c1"], abs=5e-6)
    assert closed_forms.g_rate(c) == pytest.approx(SPEC["g"], abs=5e-6)
    assert closed_forms.theta_c2_loss(c) == pytest.approx(SPEC["L_c2"], abs=5e-6)
    assert np.allclose(closed_forms.theta_c1(c).a, [SPEC["alpha_pi"][0]] + [SPEC["alpha_pi"][1]] * 4, atol=5e-4)
    r = chains.dirichlet_chain(6, 0)
    assert closed_forms.theta_c1(r).W0_norm == pytest.approx(SPEC["W0_norm_c1_random"], abs=5e-6)
    with pytest.raises(ValueError, match="hub family at delta = 0"):
        closed_forms.theta_c2_loss(chains.hub_family(delta=0.1))


def test_theta_c2_closed_form_on_a_random_family_chain():
    """The exact fit at θ_c² holds for any symmetric family chain with g > 0 (not only the reference)."""
    markov = chains.hub_family(3, 0.7, 0.25, 0.55, 0.0)
    assert closed_forms.g_rate(markov) > 0
    t_end = 1.5 * closed_forms.plateau_time(markov, 1e-3)
    run = runs.population_flow(markov, d_model=4, t_eval=np.linspace(0, t_end, 300))
    assert run.quantities["loss"][-1] == pytest.approx(closed_forms.theta_c2_loss(markov), abs=1e-7)
    assert run.quantities["M_perp_smax"][-1] < 1e-5
