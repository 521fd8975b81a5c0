"""Jacobian of the population flow at a critical point, split into blocks (claim B5, R2).

    spec = spectrum.jacobian_blocks(loss, theta_c1_params(chain, m))
    spec.attention_eigs, spec.embedding_eigs, spec.cross_max, spec.unstable_qk_residual

The flow's Jacobian is J = −∇²L (one ``torch.func.hessian`` call). At θ_c¹ the cross terms
∂²L/∂(WQ, WK)∂(W0, W1) carry a factor WQ or WK and vanish, so J is block-diagonal: the
embedding block (W0, W1) and the attention block (WQ, WK).

At θ_c² (claims B8, B9) the question is the curvature *along* the rank-one manifold 𝓜₁:

    curv = spectrum.manifold_curvature(loss, theta, theta_next)   # ∇²L restricted to 𝓜₁, in (a, b, κ)
    curv.lambda_min, curv.tol, curv.stable                        # stable: no negative curvature beyond tol
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attnflow import claims
from attnflow.focus_dilution.chain import MarkovChain
from attnflow.focus_dilution.closed_forms import theta_c1
from attnflow.focus_dilution.model import PopulationLoss, hessian, param_shapes, rank_one_params

__all__ = [
    "Drive",
    "drive",
    "theta_c1_params",
    "jacobian_blocks",
    "Blocks",
    "origin_blocks",
    "ROUNDOFF_ULPS",
    "SEPARATION",
    "contraction_rate",
    "attention_spectrum",
    "count_neutral",
    "gradient_norm",
    "plateau_domain",
    "unigram_plateau_domain",
    "amplitude_response",
    "attention_tilt_fd",
    "contraction_at_theta_c1",
    "focus_domain",
    "focus_within_flow",
    "rank_one_coordinates",
    "rank_one_loss",
    "rank_one_hessian",
    "ManifoldCurvature",
    "manifold_curvature",
]

ROUNDOFF_ULPS = 100  # round-off of an autograd Jacobian and of its eigenvalues, in units of u‖J‖₂ (Blocks.roundoff)


def theta_c1_params(chain: MarkovChain, m: int, u=None) -> dict[str, torch.Tensor]:
    """θ_c¹ as model parameters: W0 = a* uᵀ, W1 = u b*ᵀ, WQ = WK = 0 (claim B4)."""
    c1 = theta_c1(chain)
    return rank_one_params(c1.a, c1.b, 0.0, m, u=u)


@dataclass
class Blocks:
    """Spectra of J = −∇²L by block (ascending eigenvalues)."""

    eigs: np.ndarray  # (n,) all eigenvalues of J
    embedding_eigs: np.ndarray  # (2dm,) the (W0, W1) block
    attention_eigs: np.ndarray  # (2m²,) the (WQ, WK) block
    cross_max: float  # max |∂²L/∂(WQ,WK)∂(W0,W1)|
    n_unstable: int  # eigenvalues of J above tol
    unstable_qk_residual: float  # max over unstable eigenvectors of ‖WQ part − sign·WK part‖ / ‖v‖
    J: np.ndarray  # (n, n)
    layout: list  # [(name, slice)]

    @property
    def n_params(self) -> int:
        """Number of parameters, the size of J."""
        return int(self.J.shape[0])

    @property
    def attention_rows_max(self) -> float:
        """max |J| over the rows of WQ and WK (their whole coupling, attention block and cross terms)."""
        att = np.r_[tuple(np.arange(sl.start, sl.stop) for n, sl in self.layout if n in ("WQ", "WK"))]
        return float(np.abs(self.J[att]).max())

    @property
    def roundoff(self) -> float:
        """float64 round-off of J and of its eigenvalues, ``ROUNDOFF_ULPS``·u·‖J‖₂ (u the unit round-off).

        A symmetric eigensolver is backward stable (eigenvalues move by a small multiple of u‖J‖₂), and
        each autograd entry of J carries a few tens of u relative to ‖J‖₂: it passes through the
        log-softmax over d tokens, and a chain's π is stationary to round-off only. At θ = 0, on 80
        chains and widths probed (d = 3–7, m = 1–16), the eigenvalues of J differ from ±σ0 and 0 by at
        most 30 u max|J| ≤ 30 u‖J‖₂ (tests/test_page_condensation.py keeps a subset)."""
        return float(ROUNDOFF_ULPS * np.finfo(float).eps * np.abs(self.eigs).max())

    def eig_error(self, predicted: np.ndarray) -> float:
        """max |eig(J) − predicted| for a predicted spectrum (``closed_forms.origin_spectrum``), both sorted;
        the eigenvalues alone (``eigvalsh``), as accurate as ``eigs``."""
        return float(np.abs(np.sort(np.linalg.eigvalsh(self.J)) - np.sort(np.asarray(predicted))).max())


def jacobian_blocks(
    loss: PopulationLoss, theta: dict[str, torch.Tensor], tol: float = 1e-10, sign: float = 1.0
) -> Blocks:
    """Spectrum of the flow's Jacobian at θ, by block (embedding / attention / cross).
    ``sign``: sign of g; the unstable eigenvectors are checked for WQ part = sign · WK part."""
    H, layout = hessian(loss, theta)
    J = -H  # (n, n)
    idx = {n: np.arange(sl.start, sl.stop) for n, sl in layout}
    emb = np.r_[idx["W0"], idx["W1"]]
    att = np.r_[idx["WQ"], idx["WK"]]
    eigs, vecs = np.linalg.eigh(J)
    unstable = vecs[:, eigs > tol]  # (n, k)
    # q = k mode: the WQ and WK parts of each unstable eigenvector coincide
    res = [np.linalg.norm(v[idx["WQ"]] - sign * v[idx["WK"]]) / np.linalg.norm(v) for v in unstable.T]
    return Blocks(
        eigs=eigs,
        embedding_eigs=np.linalg.eigvalsh(J[np.ix_(emb, emb)]),
        attention_eigs=np.linalg.eigvalsh(J[np.ix_(att, att)]),
        cross_max=float(np.abs(J[np.ix_(att, emb)]).max()),
        n_unstable=int(unstable.shape[1]),
        unstable_qk_residual=float(max(res)) if res else float("nan"),
        J=J,
        layout=layout,
    )


def origin_blocks(loss: PopulationLoss, m: int) -> Blocks:
    """R1: the flow's Jacobian J = −∇²L at θ = 0 (one autograd Hessian of the population loss), by block.
    Its eigenvalues are ±σ0 (m each) and 0; the WQ, WK rows vanish (the scores are quartic in θ)."""
    shapes = param_shapes(loss.chain.d, m)
    zero = {n: torch.zeros(shape, dtype=torch.float64) for n, shape in shapes.items()}
    return jacobian_blocks(loss, zero)


# ---- the unigram saddle θ_c¹: its spectrum and where the flow settles on it (R2, claims B4, B5, B17) ----

# 2|g| ≤ λ_c/SEPARATION: the flow settles on θ_c¹ before attention moves (probed: fails from 2|g|/λ_c ≈ 0.6)
SEPARATION = 4.0


def contraction_rate(embedding_eigs: np.ndarray, tol: float = 1e-10) -> float:
    """λ_c: the slowest contracting rate of the (W0, W1) block (smallest |eigenvalue| among the negative
    ones; inf when none is negative)."""
    neg = embedding_eigs[embedding_eigs < -tol]
    return float(np.abs(neg).min()) if len(neg) else float("inf")


def count_neutral(eigs: np.ndarray, tol: float = 1e-10) -> int:
    """How many eigenvalues are zero to ``tol`` (the neutral directions of a block)."""
    return int((np.abs(eigs) < tol).sum())


def attention_spectrum(g: float, m: int) -> np.ndarray:
    """Claim B5: the predicted spectrum of the attention block of J at θ_c¹, ascending: −g and +g (m each)
    and 0 (2m² − 2m times)."""
    return np.sort(np.r_[np.full(m, -g), np.zeros(2 * m * m - 2 * m), np.full(m, g)])


def gradient_norm(loss: PopulationLoss, theta: dict[str, torch.Tensor]) -> float:
    """‖∇L(θ)‖ at one point θ (autograd; ≈ 0 at a critical point such as θ_c¹)."""
    th = {n: torch.as_tensor(v, dtype=torch.float64).detach().clone().requires_grad_(True) for n, v in theta.items()}
    grads = torch.autograd.grad(loss(th), list(th.values()))
    return float(torch.sqrt(sum((gr**2).sum() for gr in grads)))


def plateau_domain(g: float, lambda_c: float) -> claims.Domain:
    """Where a flow settles on θ_c¹ before attention moves (claims on the plateau): the attention mode is
    slow against the contraction of the embedding block onto the unigram optimum, 2|g| ≤ λ_c/SEPARATION,
    with λ_c (:func:`contraction_rate`) read off the Jacobian at θ_c¹ — the parameters alone."""
    return claims.domain(
        (
            f"2|g| ≤ λ_c/{SEPARATION:g} (the flow settles on θ_c¹ before attention moves)",
            2 * abs(g) <= lambda_c / SEPARATION,
            f"2|g| = {2 * abs(g):.3g}, λ_c = {lambda_c:.3g}",
        )
    )


def unigram_plateau_domain(chain: MarkovChain, model, horizon: float) -> claims.Domain:
    """Where the flow of ``model`` (a ``ModelConfig``) on ``chain`` is on θ_c¹ at t = ``horizon`` (claims
    read at the end of the flow, B17), from the parameters: condensed (t ≥ 2.5 T₁), contracted
    (λ_c (t − 2.5 T₁) ≥ 10, i.e. e^{−λ_c(t − 2.5T₁)} ≤ e^{−10}) and attention still frozen
    (κ ≈ ε² e^{2|g|t} ≤ ε, i.e. 2|g|t ≤ log(1/ε))."""
    from attnflow.focus_dilution.closed_forms import escape_time_origin, g_rate

    g = g_rate(chain, model.score_scale)
    theta = theta_c1_params(chain, model.d_model)
    blocks = jacobian_blocks(model.population_loss(chain), theta, sign=np.sign(g) or 1.0)
    lam = contraction_rate(blocks.embedding_eigs)
    t_cond = 2.5 * escape_time_origin(chain, model.init_scale)
    log_inv_eps = float(np.log(1 / model.init_scale))
    holds = horizon >= t_cond and lam * (horizon - t_cond) >= 10.0 and 2 * abs(g) * horizon <= log_inv_eps
    return claims.domain(
        (
            "random chain on θ_c¹ at the horizon t: t ≥ 2.5T₁, λ_c(t − 2.5T₁) ≥ 10 (contracted), 2|g|t ≤ log(1/ε) "
            "(attention still frozen)",
            bool(holds),
            f"t = {horizon:g}, 2.5T₁ = {t_cond:.0f}, λ_c = {lam:.3g}, 2|g|t = {2 * abs(g) * horizon:.3g}, "
            f"log(1/ε) = {log_inv_eps:.3g}",
        )
    )


def attention_tilt_fd(chain: MarkovChain, m: int, score_scale: float = 1.0, h: float = 1e-6) -> np.ndarray:
    """Claim B6: ∂_κA of the model at θ_c¹ by a central difference, (A(θ_c¹ + hκ̂) − A(θ_c¹ − hκ̂))/2h, (d, d),
    with κ set by rank-one WQ = WK ∝ uuᵀ (``model.rank_one_params``); O(h²) from the closed form."""
    from attnflow.focus_dilution.model import forward

    c1 = theta_c1(chain)
    A_plus = forward(rank_one_params(c1.a, c1.b, h, m), chain, score_scale).attention.numpy()
    A_minus = forward(rank_one_params(c1.a, c1.b, -h, m), chain, score_scale).attention.numpy()
    return (A_plus - A_minus) / (2 * h)


def contraction_at_theta_c1(loss: PopulationLoss, m: int, g: float) -> float:
    """λ_c of the flow's Jacobian at θ_c¹ (:func:`contraction_rate` of the embedding block of
    :func:`jacobian_blocks`, unstable mode along sign(g)): the parameters' rate of settling on θ_c¹."""
    blocks = jacobian_blocks(loss, theta_c1_params(loss.chain, m), sign=np.sign(g) or 1.0)
    return contraction_rate(blocks.embedding_eigs)


def focus_within_flow(
    chain: MarkovChain, init_scale: float, score_scale: float, t_end: float, factor: float = 1.35
) -> claims.Domain:
    """Focus is forecast within a flow that ends at ``t_end``: ``factor`` × the closed-form plateau end
    (``closed_forms.plateau_time``) ≤ t_end — the parameters alone."""
    from attnflow.focus_dilution.closed_forms import plateau_time

    t_need = factor * plateau_time(chain, init_scale, score_scale)
    return claims.domain(
        (
            f"focus forecast within the flow: {factor:g} × closed-form plateau end ≤ t_end",
            bool(t_need <= t_end),
            f"needs t = {t_need:.3g}, t_end = {t_end:.3g}",
        )
    )


def focus_domain(
    chain: MarkovChain,
    g: float,
    lambda_c: float,
    init_scale: float,
    score_scale: float,
    t_end: float,
    factor: float = 1.35,
) -> claims.Domain:
    """Where a flow shows focus from θ_c¹ (claim B6), from the parameters: it settles on θ_c¹ before attention
    moves (:func:`plateau_domain`) and focus is forecast within the flow (:func:`focus_within_flow`)."""
    return plateau_domain(g, lambda_c) & focus_within_flow(chain, init_scale, score_scale, t_end, factor)


def amplitude_response(loss: PopulationLoss, m: int, g: float) -> np.ndarray:
    """R3: the first-order response of the amplitudes to κ along the flow near θ_c¹, da/dκ (d,), so that
    a(κ) ≈ απ + κ·da/dκ while attention grows (autograd, float64).

    On 𝓜₁ the embedding x = (a, b) obeys ẋ = −∇L₁(x, κ) ≈ −H(x − x*) + κ w, with H the Hessian of L₁ in x
    at θ_c¹ and w = −∂_κ∇_xL₁ (``redistribution_drive`` is its a part). The contracting directions of H
    follow quasi-statically, x − x* = κ H⁺w; along its neutral directions (the manifold of unigram optima)
    the drive accumulates, ∫κ dt = κ/(2|g|) while κ ∝ e^{2|g|t}: da/dκ = [H⁺w + P₀w/(2|g|)]_a (P₀ the
    projector on the kernel of H). The second term dominates (O(κ/g)); on the reference chain it forecasts
    the amplitudes at the onset of focus within 10 % of their redistribution (tests/test_page_focus.py)."""
    c1 = theta_c1(loss.chain)
    d = loss.chain.d
    u = torch.zeros(m, dtype=torch.float64)
    u[0] = 1.0
    uu = torch.outer(u, u)

    def L1(x, kappa):
        return loss({"W0": torch.outer(x[:d], u), "WQ": kappa * uu, "WK": uu, "W1": torch.outer(u, x[d:])})

    x0 = torch.cat([torch.as_tensor(c1.a), torch.as_tensor(c1.b)]).to(torch.float64)
    k0 = torch.tensor(0.0, dtype=torch.float64)
    H = torch.func.hessian(L1, argnums=0)(x0, k0).numpy()
    w = -torch.func.jacfwd(torch.func.grad(L1, argnums=0), argnums=1)(x0, k0).numpy()
    ev, V = np.linalg.eigh(H)
    null = np.abs(ev) < 1e-9 * np.abs(ev).max()
    fast = (V[:, ~null] / ev[~null]) @ (V[:, ~null].T @ w)
    slow = V[:, null] @ (V[:, null].T @ w) / (2 * abs(g))
    return (fast + slow)[:d]


def redistribution_drive(loss: PopulationLoss, m: int) -> np.ndarray:
    """R4 (claim B7): the next-order drive of the amplitudes near θ_c¹, v = −∂_κ ∇_a L₁ (d,).

    On 𝓜₁ (W0 = a uᵀ, W1 = u b*ᵀ, WQ WKᵀ = κ uuᵀ) the amplitudes obey ȧ = −∇_a L₁(a, b, κ), which
    vanishes at θ_c¹; growing attention drives them at first order by κ v (autograd, float64).
    """
    c1 = theta_c1(loss.chain)
    u = torch.zeros(m, dtype=torch.float64)
    u[0] = 1.0
    uu = torch.outer(u, u)
    b = torch.as_tensor(c1.b, dtype=torch.float64)

    def L1(a, kappa):
        return loss({"W0": torch.outer(a, u), "WQ": kappa * uu, "WK": uu, "W1": torch.outer(u, b)})

    grad_a = torch.func.grad(L1, argnums=0)
    a0 = torch.as_tensor(c1.a, dtype=torch.float64)
    return -torch.func.jacfwd(grad_a, argnums=1)(a0, torch.tensor(0.0, dtype=torch.float64)).numpy()


@dataclass
class Drive:
    """The next-order drive v (d,) of R4 at θ_c¹ against π: ``cos_v_pi`` = |cos(v, π)|, v on the hub and
    its mean over the rare tokens, and whether v is a redistribution (hub and every rare component of
    opposite signs); ``cos_pi_hub`` = cos(π, e_hub) (near 1 every hub-dominated vector is near π)."""

    v: np.ndarray
    cos_v_pi: float
    v_hub: float
    v_low: float
    opposite: bool
    cos_pi_hub: float


def drive(loss: PopulationLoss, m: int) -> Drive:
    """:class:`Drive` of the chain of ``loss`` (with a hub) for embedding width ``m``."""
    v = redistribution_drive(loss, m)
    pi, hub = loss.chain.pi, loss.chain.hub
    low = [k for k in range(len(pi)) if k != hub]
    opposite = bool(np.sign(v[hub]) != 0 and all(np.sign(v[j]) == -np.sign(v[hub]) for j in low))
    cos = float(abs(v @ pi) / (np.linalg.norm(v) * np.linalg.norm(pi)))
    return Drive(v, cos, float(v[hub]), float(np.mean(v[low])), opposite, float(pi[hub] / np.linalg.norm(pi)))


# ---- θ_c² along the rank-one manifold: is it a minimum of L restricted to 𝓜₁? (R5, claims B8, B9) ----


def rank_one_coordinates(theta: dict[str, torch.Tensor]) -> tuple[np.ndarray, np.ndarray, float]:
    """(a, b, κ) of a point of 𝓜₁ (W0 = a uᵀ, W1 = u bᵀ, uᵀWQWKᵀu = κ): u the top right singular vector of W0,
    its sign fixed by a's largest entry in absolute value being positive (a, b flip with u; κ does not)."""
    W0, WQ, WK, W1 = (torch.as_tensor(theta[n], dtype=torch.float64) for n in ("W0", "WQ", "WK", "W1"))
    u = torch.linalg.svd(W0, full_matrices=False)[2][0]  # (m,)
    a = (W0 @ u).numpy()  # (d,)
    s = 1.0 if a[np.argmax(np.abs(a))] >= 0 else -1.0
    return s * a, s * (W1.T @ u).numpy(), float(u @ WQ @ WK.T @ u)


def rank_one_loss(loss: PopulationLoss, v: torch.Tensor) -> torch.Tensor:
    """L on 𝓜₁ in the coordinates v = (a, b, κ), (2d + 1,): the model at m = 1 with W0 = a, W1 = bᵀ, WQ = 1, WK = κ
    (every point of 𝓜₁ has this loss for any width and unit u). Linear in each coordinate block, so its Hessian
    is the full Hessian ∇²L restricted to these tangent directions of 𝓜₁, with no curvature term."""
    d = (v.shape[0] - 1) // 2
    one = torch.ones((1, 1), dtype=v.dtype)
    return loss({"W0": v[:d, None], "WQ": one, "WK": v[2 * d :].reshape(1, 1), "W1": v[None, d : 2 * d]})


def rank_one_hessian(loss: PopulationLoss, a, b, kappa: float) -> np.ndarray:
    """∇²L restricted to 𝓜₁ at (a, b, κ), (2d + 1, 2d + 1), by autograd (one ``torch.func.hessian``). The reduced
    rank-one flow (ȧ, ḃ, κ̇) = −∇L has Jacobian −(this) at a critical point (up to the positive metric factor of
    κ = q·k, which changes no sign: the number of negative eigenvalues is the same in (a, b, q, k))."""
    v = torch.as_tensor(np.r_[np.asarray(a, float), np.asarray(b, float), float(kappa)], dtype=torch.float64)
    return torch.func.hessian(lambda x: rank_one_loss(loss, x))(v).detach().numpy()


@dataclass
class ManifoldCurvature:
    """The Hessian of L restricted to 𝓜₁ at a located critical point (:func:`manifold_curvature`)."""

    eigs: np.ndarray  # (2d + 1,) ascending eigenvalues of ∇²L|𝓜₁ in (a, b, κ)
    vectors: np.ndarray  # (2d + 1, 2d + 1) eigenvectors (columns)
    roundoff: float  # ROUNDOFF_ULPS · u · ‖H‖₂: round-off of the autograd Hessian and of its eigenvalues
    location_error: float  # ‖H(θ) − H(θ')‖₂ between the point and the solver's next converged point θ'
    grad_norm: float  # ‖∇L‖ at the point (the restricted flow's residual)

    @property
    def tol(self) -> float:
        """How far an eigenvalue may sit below 0 and still be a numerical zero: round-off plus the location error
        (Weyl: an eigenvalue moves by at most ‖ΔH‖₂ between the located point and the exact critical point; the
        change over one more converged stretch of the solver estimates that distance)."""
        return float(self.roundoff + self.location_error)

    @property
    def lambda_min(self) -> float:
        return float(self.eigs[0])

    @property
    def stable(self) -> bool:
        """No direction of negative curvature along 𝓜₁ beyond the numerical tolerance (neutral gauge and valley
        directions count as zero): the point is not a saddle of L restricted to 𝓜₁."""
        return bool(self.lambda_min >= -self.tol)

    @property
    def descent(self) -> np.ndarray:
        """The eigenvector of the lowest eigenvalue in (a, b, κ), (2d + 1,) (the escape direction along 𝓜₁ when
        that eigenvalue is negative)."""
        return self.vectors[:, 0]


def manifold_curvature(
    loss: PopulationLoss, theta: dict[str, torch.Tensor], theta_next: dict[str, torch.Tensor] | None = None
) -> ManifoldCurvature:
    """∇²L restricted to 𝓜₁ at the critical point θ (a point of 𝓜₁ located by a solver), its spectrum and the
    tolerance of its eigenvalues: round-off, and ‖H(θ) − H(θ_next)‖₂ with ``theta_next`` the solver's next
    converged point (0 without one)."""
    a, b, kappa = rank_one_coordinates(theta)
    H = rank_one_hessian(loss, a, b, kappa)
    eigs, vecs = np.linalg.eigh(H)
    err = 0.0
    if theta_next is not None:
        err = float(np.linalg.norm(H - rank_one_hessian(loss, *rank_one_coordinates(theta_next)), 2))
    return ManifoldCurvature(
        eigs=eigs,
        vectors=vecs,
        roundoff=float(ROUNDOFF_ULPS * np.finfo(float).eps * np.abs(eigs).max()),
        location_error=err,
        grad_norm=gradient_norm(loss, theta),
    )
