"""The escape page's trap domains (issue 21; spec R5, claims B8, B9): θ_c²(δ = 0) located by the symmetric flow on 𝓜₁,
the Hessian of L restricted to 𝓜₁ there (``spectrum.manifold_curvature``) against finite differences and on chains
whose answer is known, and the two domains built from them and from the state at the trap window's start."""

import numpy as np
import pytest
import torch

from attnflow import claims
from attnflow.focus_dilution import escape, model, spectrum
from attnflow.focus_dilution.chain import hub_family
from attnflow.focus_dilution.closed_forms import theta_c1, theta_c2_loss


def _rank_one_grad(chain, v: np.ndarray) -> np.ndarray:
    """∇L in (a, b, κ) by the closed-form numpy backward pass (model.PopulationGrad), not autograd: at m = 1,
    W0 = a, WQ = 1, WK = κ, W1 = bᵀ, so ∂L/∂a = ∇W0, ∂L/∂b = ∇W1, ∂L/∂κ = ∇WK."""
    d = chain.d
    g = model.PopulationGrad(chain, 1)(np.r_[v[:d], 1.0, v[2 * d], v[d : 2 * d]])  # order W0, WQ, WK, W1
    return np.r_[g[:d], g[d + 2 :], g[d + 1]]


def _point(rng, d):
    return np.r_[rng.normal(size=d), rng.normal(size=d), 0.7]


@pytest.mark.parametrize("args", [(4, 0.5, 0.3, 0.4, 0.0), (3, 0.6, 0.25, 0.5, 0.1), (2, 0.7, 0.4, 0.2, 0.0)])
def test_rank_one_hessian_matches_finite_differences_of_the_closed_form_gradient(args):
    """Autograd Hessian of L on 𝓜₁ = central differences of the numpy gradient (independent code path). Step h = 1e-5:
    truncation ~h²‖∇⁴L‖ ≲ 1e-9 and round-off ~u‖∇L‖/h ≈ 1e-11 on these O(1) points; 1e-7 leaves a margin of 100."""
    chain = hub_family(*args)
    rng = np.random.default_rng(3)
    v = _point(rng, chain.d)
    H = spectrum.rank_one_hessian(model.PopulationLoss(chain), v[: chain.d], v[chain.d : 2 * chain.d], v[-1])
    h = 1e-5
    fd = np.stack(
        [(_rank_one_grad(chain, v + h * e) - _rank_one_grad(chain, v - h * e)) / (2 * h) for e in np.eye(len(v))]
    )
    assert np.abs(H - fd).max() < 1e-7
    assert np.abs(H - H.T).max() < 1e-12


def test_rank_one_hessian_is_the_full_hessian_on_the_tangent_directions_of_the_manifold():
    """At a point of 𝓜₁ in width m = 3 (u = e₁, WQ = uuᵀ, WK = κuuᵀ), ∇²L|𝓜₁ = Tᵀ ∇²L T for the tangent directions
    δW0 = e_i uᵀ, δW1 = u e_jᵀ, δWK = uuᵀ (the full model's autograd Hessian)."""
    chain = hub_family(3, 0.6, 0.25, 0.5, 0.0)
    loss = model.PopulationLoss(chain)
    rng = np.random.default_rng(0)
    d, m = chain.d, 3
    v = _point(rng, d)
    theta = model.rank_one_params(v[:d], v[d : 2 * d], 1.0, m)
    theta["WK"] = v[-1] * theta["WK"]
    H, layout = model.hessian(loss, theta)
    lay = dict(layout)
    cols = []
    for name, shape, entries in (
        ("W0", (d, m), [(i, 0) for i in range(d)]),
        ("W1", (m, d), [(0, j) for j in range(d)]),
    ):
        for ij in entries:
            E = np.zeros(H.shape[0])
            block = np.zeros(shape)
            block[ij] = 1.0
            E[lay[name]] = block.ravel()
            cols.append(E)
    E = np.zeros(H.shape[0])
    E[lay["WK"]] = np.eye(m)[0][:, None].dot(np.eye(m)[0][None]).ravel()
    T = np.stack(cols + [E], 1)
    a, b, kappa = spectrum.rank_one_coordinates(theta)
    assert kappa == pytest.approx(v[-1], rel=1e-12)
    H1 = spectrum.rank_one_hessian(loss, a, b, kappa)
    s = np.sign(a[0] / v[0])  # rank_one_coordinates fixes the sign of u; (a, b) → (−a, −b) flips the cross blocks
    D = np.diag(np.r_[np.full(2 * d, s), 1.0])
    assert np.abs(D @ H1 @ D - T.T @ H @ T).max() < 1e-12


def test_symmetrize_rare_is_a_projection_onto_a_subspace_the_gradient_keeps():
    """The rare-symmetric parameters: idempotent, and the δ = 0 gradient there is itself rare-symmetric (the cyclic
    shift of the rare tokens is a symmetry of the chain), so the flow stays in the subspace."""
    chain = hub_family(4, 0.5, 0.3, 0.4, 0.0)
    th = model.init_params(chain.d, 4, init_scale=0.3, seed=5)
    s = escape.symmetrize_rare(th, chain)
    assert all(torch.equal(v, escape.symmetrize_rare(s, chain)[n]) for n, v in s.items())
    r = chain.rare
    assert torch.allclose(s["W0"][r], s["W0"][r[:1]].expand(len(r), -1))
    p = {n: v.clone().requires_grad_(True) for n, v in s.items()}
    grads = dict(zip(p, torch.autograd.grad(model.PopulationLoss(chain)(p), list(p.values()))))
    assert torch.allclose(grads["W0"][r], grads["W0"][r[:1]].expand(len(r), -1), atol=1e-15)
    assert torch.allclose(grads["W1"][:, r], grads["W1"][:, r[:1]].expand(-1, len(r)), atol=1e-15)
    asym = hub_family(4, 0.5, 0.3, 0.4, 0.2)  # δ ≠ 0 breaks the symmetry: the gradient leaves the subspace
    p = {n: v.clone().requires_grad_(True) for n, v in s.items()}
    g0 = torch.autograd.grad(model.PopulationLoss(asym)(p), [p["W0"]])[0]
    assert (g0[r] - g0[r].mean(0)).abs().max() > 1e-6


def _classify(args, kappa0=0.05):
    chain = hub_family(*args, 0.0)
    c1 = theta_c1(chain)
    point = escape.symmetric_critical_point(chain, model.rank_one_params(c1.a, c1.b, kappa0, 2), horizon=4000.0)
    return chain, point, spectrum.manifold_curvature(model.PopulationLoss(chain), point.theta, point.theta_next)


def test_theta_c2_is_classified_on_chains_whose_answer_is_known():
    """c_cyc = 0: the rare rows are equal, so θ_c²'s exact fit (P̂_j = P̄_low) is the bigram optimum, a global
    minimum: no negative curvature along 𝓜₁. The spec's chain: trapped (spec R5, book default), so stable along 𝓜₁
    with a positive asymmetric curvature. The errata chain n = 3, a_h = 0.6, b_h = 0.25, c_cyc = 0.5: the flow on 𝓜₁
    leaves θ_c² for a lower rank-one point (errata-escape-trap), so a negative eigenvalue, and L falls along its
    eigenvector by ½λh² (a finite-difference check of that eigenvalue)."""
    chain, point, curv = _classify((3, 0.5, 0.3, 0.0))
    assert point.found and point.loss == pytest.approx(chain.bigram_loss(), abs=1e-10)
    assert curv.stable and curv.tol < 1e-8
    chain, point, curv = _classify((4, 0.5, 0.3, 0.4))
    assert point.found and point.loss == pytest.approx(theta_c2_loss(chain), abs=1e-10)
    assert curv.stable and curv.eigs[curv.eigs > curv.tol].min() > 1e-3  # the asymmetric directions: ≈ 4.4e-3
    chain, point, curv = _classify((3, 0.6, 0.25, 0.5))
    assert point.found and point.loss == pytest.approx(theta_c2_loss(chain), abs=1e-10)
    assert not curv.stable and curv.lambda_min < -1e-3 < -1e3 * curv.tol  # ≈ −5e-3
    loss = model.PopulationLoss(chain)
    a, b, kappa = spectrum.rank_one_coordinates(point.theta)
    v = torch.as_tensor(np.r_[a, b, kappa])
    h = 1e-3
    dv = torch.as_tensor(curv.descent) * h
    second = float(
        spectrum.rank_one_loss(loss, v + dv)
        + spectrum.rank_one_loss(loss, v - dv)
        - 2 * spectrum.rank_one_loss(loss, v)
    )
    assert second / h**2 == pytest.approx(curv.lambda_min, rel=1e-4)
    assert float(spectrum.rank_one_loss(loss, v + 30 * dv)) < point.loss  # a lower rank-one point nearby


def _trap(**over) -> escape.TrapStats:
    base = dict(
        t_pred=3000.0,
        sigma2_pred=0.004,
        sigma2_max_pred=0.004,
        t_settle=2000.0,
        settled=True,
        reached_c2=True,
        sigma2_settle=0.004,
        sigma2_end=0.004,
        sigma2_max_after=0.004,
        M_perp_end=0.0,
        L_end0=1.5,
        L_c2=1.5,
        bigram0=1.4,
        t_trapped=30000.0,
        trap_s=1.0,
        loss_pred=1.5,
        unigram=1.7,
        t_window=3000.0,
    )
    return escape.TrapStats(**{**base, **over})


class _Curv:
    def __init__(self, lam, tol=1e-12):
        self.lambda_min, self.tol, self.stable = lam, tol, lam >= -tol


def _sym(grad=1e-12):
    return escape.SymmetricPoint(theta={}, theta_next={}, grad_norm=grad, loss=1.5, elapsed=1000.0)


def test_trap_domains_read_the_curvature_and_the_state_at_the_window_start(ledger):
    """The trap domain holds where the arrival is predicted and θ_c² is no saddle along 𝓜₁; the window domain adds
    the run at θ_c² at t_pred, a timed state that a check may read only from t_pred on."""
    trap_dom, window = escape.trap_domains(3000.0, 30000.0, _trap(), _sym(), _Curv(4e-3), 1000.0)
    assert trap_dom and window
    assert not escape.trap_domains(3000.0, 30000.0, _trap(), _sym(), _Curv(-5e-3), 1000.0)[0]  # saddle along 𝓜₁
    assert not escape.trap_domains(3000.0, 30000.0, _trap(), _sym(1e-6), _Curv(4e-3), 1000.0)[0]  # θ_c² not found
    assert not escape.trap_domains(20000.0, 30000.0, _trap(), _sym(), _Curv(4e-3), 1000.0)[0]  # arrival too late
    never = dict(loss_pred=float("nan"), sigma2_pred=float("nan"), t_window=float("nan"))  # t_pred beyond the run
    assert _trap(**never).measured_from is None and _trap().measured_from == 3000.0
    for over in (dict(sigma2_pred=2.4), dict(loss_pred=1.17), never):
        dom, win = escape.trap_domains(3000.0, 30000.0, _trap(**over), _sym(), _Curv(4e-3), 1000.0)
        assert dom and not win  # left θ_c² (or never there) by t_pred: the trap checks do not read that run
    assert window.latest_state == pytest.approx(3000.0)
    with pytest.raises(ValueError, match="after the measurement"):
        claims.check("B8", 1.0, 1.0, atol=0.1, domain=window, measured_from=2000.0)
    assert (
        claims.check("B8", 1.3, 1.0, atol=0.1, domain=window, measured_from=3000.0).verdict == "fail"
    )  # inside: fails


def test_trap_stats_read_the_window_start_at_a_stored_time():
    """The trap window starts at the stored time closest to t_pred; a δ = 0 flow that has left θ_c² before it (as on
    the errata chain, at the bigram optimum by t_pred) is not at θ_c² there, one that leaves after it is."""
    from types import SimpleNamespace

    from attnflow.focus_dilution.runs import FlowRun

    chain = hub_family(4, 0.5, 0.3, 0.4, 0.0)
    L_c2 = theta_c2_loss(chain)
    t = np.arange(0.0, 12000.0, 10.0)
    for leave, at_c2 in ((1.2, True), (0.8, False)):
        t_pred = 3751.24
        sigma2 = np.where(t < leave * t_pred, 4e-3, 2.4)
        loss = np.where(t < leave * t_pred, L_c2, chain.bigram_loss())
        q = dict(loss=loss, sigma2=sigma2, M_perp_smax=np.zeros(len(t)))
        run = FlowRun(t=t, quantities=q, chain=chain)
        run.wall_s, run.result = 0.0, SimpleNamespace(states=lambda: {})
        out = escape.trap_stats(run, chain, t_pred=t_pred)
        assert out.t_window == 3750.0 == out.measured_from and out.at_c2_pred is at_c2
