"""Sympy derivations of the focus–dilution stages (spec focus_dilution.md §6, R1–R5).

Each function returns the derived expressions *and* the residuals of the identities it checks
(sympy expressions that simplify to 0), so a page displays the checked expression with
``attnflow.display.equation`` and records ``residual == 0`` as a claim.

A general stationary chain is written through its joint matrix F = Π P (F_ij = Pr(x_s = i,
x_{s+1} = j)) with equal row and column sums π: the loss only sees F and π, and stationarity
πᵀP = πᵀ is built into the parametrisation instead of being assumed in a simplification.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import sympy as sp

__all__ = [
    "generic_chain",
    "is_zero",
    "count_nonzero",
    "loss_of_logits",
    "origin_linearization",
    "unigram_saddle",
    "attention_tilt",
    "attention_block",
    "transverse_block",
    "degenerate_point",
    "lyapunov_schmidt",
    "backward_rules",
    "full_loss",
]


def is_zero(expr) -> bool:
    """True when a sympy expression (or every entry of a matrix) simplifies to 0."""
    if isinstance(expr, sp.MatrixBase):
        return all(is_zero(e) for e in expr)
    return sp.simplify(sp.expand(expr)) == 0


def count_nonzero(*groups) -> int:
    """How many entries of the residuals in ``groups`` (sympy expressions, matrices — counted entry by
    entry — or lists of them) do not simplify to exactly zero: the count a symbolic claim checks to be 0."""
    items = [e for g in groups for m in (g if isinstance(g, (list, tuple)) else [g]) for e in _entries(m)]
    return sum(int(not is_zero(e)) for e in items)


def _entries(expr) -> list:
    return list(expr) if isinstance(expr, sp.MatrixBase) else [expr]


def _softmax(v):
    e = [sp.exp(x) for x in v]
    tot = sum(e)
    return [x / tot for x in e]


def _log_softmax(v):
    lse = sp.log(sum(sp.exp(x) for x in v))
    return [x - lse for x in v]


def generic_chain(d: int = 3):
    """A general stationary chain on d tokens: (π list, F matrix (d, d), free symbols).

    Free: π_0..π_{d−2} and F_ij for i, j < d−1; the last row and column of F are fixed by
    row sums = column sums = π, and π_{d−1} = 1 − Σ_{i<d−1} π_i.
    """
    p = list(sp.symbols(f"pi_0:{d - 1}", positive=True))
    pi = p + [1 - sum(p)]
    f = sp.Matrix(d - 1, d - 1, lambda i, j: sp.Symbol(f"F_{i}{j}", positive=True))
    F = sp.zeros(d, d)
    F[: d - 1, : d - 1] = f
    for i in range(d - 1):
        F[i, d - 1] = pi[i] - sum(f[i, :])
        F[d - 1, i] = pi[i] - sum(f[:, i])
    F[d - 1, d - 1] = pi[d - 1] - sum(F[d - 1, : d - 1])
    return pi, F, p + list(f)


# --------------------------------------------------------------------------------------------
# R1 — linearization at the origin (claims B2, B3)
# --------------------------------------------------------------------------------------------
@dataclass
class OriginLinearization:
    """L as a function of the scores S and of the product Y = W0 W1 (d, d): L(S, Y)."""

    B: sp.Matrix  # −∂L/∂Y at (S, Y) = (0, 0): the drive of the linear flow
    B_closed: sp.Matrix  # π (π − 1/d)ᵀ
    residual: sp.Matrix  # B − B_closed, simplifies to 0
    rank: int  # rank of B (1)
    sigma0_sq: sp.Expr  # tr(B Bᵀ) = σ0² (the only nonzero singular value squared)
    sigma0_sq_closed: sp.Expr  # ‖π‖² ‖π − 1/d‖²
    score_grad_order: int  # order in s of ∂L/∂S at Y = s Y: 1, so ∂L/∂WQ = O(ε⁵)
    loss_value: sp.Expr  # L(0, 0) = log d
    extras: dict = field(default_factory=dict)
    wall_s: float = 0.0  # seconds sympy took


def origin_linearization(d: int = 3) -> OriginLinearization:
    """R1: at θ = 0, A_ik = π_k and P̂ = 1/d, and L(S, Y) = log d − ⟨B, Y⟩ + O(|Y|², |S||Y|),
    B = π(π − 1/d)ᵀ. Since Y = W0W1 is quadratic and S = c W0 WQ WKᵀ W0ᵀ quartic in θ,
    the flow is the two-layer linear network Ẇ0 = B W1ᵀ, Ẇ1 = W0ᵀB and ∂L/∂WQ = O(ε⁵)."""
    start = time.perf_counter()
    pi, F, _ = generic_chain(d)
    S = sp.Matrix(d, d, lambda i, k: sp.Symbol(f"S_{i}{k}", real=True))
    Y = sp.Matrix(d, d, lambda k, j: sp.Symbol(f"Y_{k}{j}", real=True))
    s = sp.Symbol("s", real=True)
    A = sp.Matrix([_softmax([S[i, k] + sp.log(pi[k]) for k in range(d)]) for i in range(d)])
    Zs, L_Z, G_Z = loss_of_logits(F)
    at0 = {S[i, k]: 0 for i in range(d) for k in range(d)}
    G0 = G_Z.subs({z: 0 for z in Zs}).applyfunc(sp.cancel)  # ∂L/∂Z at Z = 0: Π(1/d) − F
    Z = A * (s * Y)  # logits, (d, d)
    # dL/ds at s = 0 (chain rule through Z): −⟨B, Y⟩ defines B.
    dL = sum(G0[i, j] * sp.diff(Z[i, j], s).subs(at0) for i in range(d) for j in range(d))
    B = sp.Matrix(d, d, lambda k, j: sp.cancel(-sp.diff(dL, Y[k, j])))
    pi_v = sp.Matrix(pi)
    B_closed = pi_v * (pi_v - sp.ones(d, 1) / d).T
    residual = (B - B_closed).applyfunc(lambda e: sp.cancel(sp.expand(e)))
    # ∂L/∂S_00 at S = 0 along Y → sY: G_Z(sAY) = G0 + O(s) and ∂Z/∂S = O(s), so its s-expansion
    # starts at order 1; the coefficient is Σ_ij G0_ij ∂²Z_ij/∂S_00∂s, generically nonzero.
    gS1 = sp.cancel(sum(G0[i, j] * sp.diff(Z[i, j], S[0, 0], s).subs(at0) for i in range(d) for j in range(d)))
    order = 1 if gS1 != 0 else 2
    sig_sq = sp.expand((B_closed * B_closed.T).trace())
    c_v = pi_v - sp.ones(d, 1) / d
    sig_closed = (pi_v.T * pi_v)[0] * (c_v.T * c_v)[0]
    return OriginLinearization(
        B=B,
        B_closed=B_closed,
        residual=residual,
        rank=B_closed.rank(simplify=True),
        sigma0_sq=sig_sq,
        sigma0_sq_closed=sig_closed,
        score_grad_order=order,
        loss_value=sp.simplify(L_Z.subs({z: 0 for z in Zs})),
        extras={
            "pi": pi,
            "F": F,
            "sigma0_residual": sp.cancel(sp.expand(sig_sq - sig_closed)),
            "score_grad_coefficient": gS1,
        },
        wall_s=time.perf_counter() - start,
    )


# --------------------------------------------------------------------------------------------
# R2/R3 — the unigram saddle θ_c¹ on the rank-one manifold (claims B4, B5, B6)
# --------------------------------------------------------------------------------------------
@dataclass
class UnigramSaddle:
    """Rank-one reduced loss L₁(a, b, κ) at θ_c¹: a = απ, b = ℓ/(α‖π‖²), κ = 0 (α free: the
    rescaling symmetry a → sa, b → b/s; balancedness ‖a‖ = ‖b‖ fixes α² = ‖ℓ‖/‖π‖³)."""

    P_hat_residual: sp.Matrix  # P̂_i − π for each query i (0)
    loss_residual: sp.Expr  # L − H(π) (0)
    grad_a: sp.Matrix  # ∂L₁/∂a at θ_c¹ (0)
    grad_b: sp.Matrix  # ∂L₁/∂b at θ_c¹ (0)
    g: sp.Expr  # −∂_κ L₁ at θ_c¹
    g_closed: sp.Expr  # c α² Var_π(π) ℓᵀ(Pᵀ(π⊙π) − ‖π‖²π)/‖π‖²
    g_residual: sp.Expr  # g − g_closed (0)
    dA: sp.Matrix  # ∂_κ A at θ_c¹ (d, d)
    dA_closed: sp.Matrix  # c α² π_i π_k (π_k − ‖π‖²)
    dA_residual: sp.Matrix  # (0)
    balance_residual: sp.Expr  # ‖a‖² − ‖b‖² at α² = ‖ℓ‖/‖π‖³ (0)
    symbols: dict = field(default_factory=dict)


def _settle(expr):
    """Simplify an expression holding exp(log π_j − μ) factors: cancel each exponent, split
    exp(log x − μ) = x e^{−μ}, then cancel the rational function left (logs enter linearly)."""
    expr = expr.replace(
        lambda e: isinstance(e, sp.exp), lambda e: sp.expand(sp.exp(sp.cancel(sp.expand(e.args[0]))), power_exp=True)
    )
    return sp.cancel(sp.expand(expr))


def loss_of_logits(F: sp.Matrix):
    """L(Z) = −Σ_ij F_ij log softmax_j(Z_i·) with Z (d, d) symbols, and G_Z = ∂L/∂Z (sympy)."""
    d = F.shape[0]
    Z = sp.Matrix(d, d, lambda i, j: sp.Symbol(f"Z_{i}{j}", real=True))
    L = -sum(F[i, j] * _log_softmax(list(Z.row(i)))[j] for i in range(d) for j in range(d))
    return Z, L, Z.applyfunc(lambda z: sp.diff(L, z))


def unigram_saddle(d: int = 3) -> UnigramSaddle:
    """R2–R3 on a general stationary chain with d tokens (claims B4, B5, B6).

    Derivatives go through the chain rule at the point (as autograd does): sympy differentiates
    L(Z) in the logits, then Z in (a, b, κ), and the pieces are contracted at θ_c¹. The centred
    log-frequency is written ℓ = log π − μ1 with μ free: softmax and every statement below are
    invariant under the shift, so the identities hold for μ = mean(log π).
    """
    pi, F, _ = generic_chain(d)
    alpha, c = sp.symbols("alpha c", positive=True)
    kappa, mu = sp.symbols("kappa mu", real=True)
    pi_v = sp.Matrix(pi)
    npi2 = sp.expand((pi_v.T * pi_v)[0])
    ell = sp.Matrix([sp.log(x) - mu for x in pi])
    a_star, b_star = alpha * pi_v, ell / (alpha * npi2)
    av = sp.Matrix(sp.symbols(f"a_0:{d}", real=True))
    bv = sp.Matrix(sp.symbols(f"b_0:{d}", real=True))

    def logits(a, b, kap):
        A = sp.Matrix([_softmax([c * kap * a[i] * a[k] + sp.log(pi[k]) for k in range(d)]) for i in range(d)])
        return (A * a) * b.T, A  # Z (d, d) = r bᵀ, r = A a

    Zs, L_Z, G_Z = loss_of_logits(F)
    Z_star = logits(a_star, b_star, 0)[0].applyfunc(lambda e: sp.cancel(sp.expand(e)))  # = 1 ℓᵀ
    at_Z = dict(zip(Zs, Z_star))
    G_star = G_Z.subs(at_Z).applyfunc(_settle)  # ∂L/∂Z at θ_c¹: Π(1πᵀ) − F

    def contract(dZ):  # Σ_ij (∂L/∂Z_ij)(∂Z_ij/∂x)
        return _settle(sum(G_star[i, j] * dZ[i, j] for i in range(d) for j in range(d)))

    Z_k, A_k = logits(a_star, b_star, kappa)
    g = -contract(Z_k.diff(kappa).subs(kappa, 0))
    Z_a = logits(av, b_star, 0)[0]  # κ = 0: A = 1πᵀ does not depend on a
    Z_b = logits(a_star, bv, 0)[0]
    grad_a = sp.Matrix([contract(Z_a.diff(x).subs(dict(zip(av, a_star)))) for x in av])
    grad_b = sp.Matrix([contract(Z_b.diff(x).subs(dict(zip(bv, b_star)))) for x in bv])
    P_hat = sp.Matrix([[_settle(e) for e in _softmax(list(Z_star.row(i)))] for i in range(d)])
    H = -sum(x * sp.log(x) for x in pi)
    var_pi = sp.expand(sum(x**3 for x in pi) - npi2**2)
    Ft_pi = F.T * pi_v  # Pᵀ(π⊙π) = Fᵀπ
    g_closed = c * alpha**2 * var_pi * (ell.T * (Ft_pi - npi2 * pi_v))[0] / npi2
    dA = A_k.diff(kappa).subs(kappa, 0).applyfunc(sp.cancel)
    dA_closed = sp.Matrix(d, d, lambda i, k: c * alpha**2 * pi[i] * pi[k] * (pi[k] - npi2))
    # Balancedness: ‖a*‖² = α²‖π‖² and ‖b*‖² = ‖ℓ‖²/(α²‖π‖⁴) with the norms as positive symbols.
    n_ell, n_pi = sp.symbols("n_ell n_pi", positive=True)  # ‖ℓ‖, ‖π‖
    alpha_bal = sp.sqrt(n_ell / n_pi**3)
    return UnigramSaddle(
        P_hat_residual=(P_hat - sp.ones(d, 1) * pi_v.T).applyfunc(sp.cancel),
        loss_residual=_settle(L_Z.subs(at_Z) - H),
        grad_a=grad_a,
        grad_b=grad_b,
        g=g,
        g_closed=g_closed,
        g_residual=_settle(g - g_closed),
        dA=dA,
        dA_closed=dA_closed,
        dA_residual=(dA - dA_closed).applyfunc(lambda e: sp.cancel(sp.expand(e))),
        balance_residual=sp.simplify(alpha_bal**2 * n_pi**2 - n_ell**2 / (alpha_bal**2 * n_pi**4)),
        symbols={
            "pi": pi,
            "F": F,
            "alpha": alpha,
            "c": c,
            "ell": ell,
            "var_pi": var_pi,
            "npi2": npi2,
            "mu": mu,
            "G_Z": G_star,
        },
    )


@dataclass
class AttentionTilt:
    """R3: the attention rows near θ_c¹ along κ, A_ik ∝ π_k exp(cκα²π_iπ_k)."""

    dA: sp.Matrix  # ∂_κ A at κ = 0, a = απ (sympy derivative)
    dA_closed: sp.Matrix  # c α² π_i π_k (π_k − ‖π‖²)
    residual: sp.Matrix  # (0)
    row_sums: sp.Matrix  # Σ_k ∂_κ A_ik (0: attention stays normalised)
    sign_residual: sp.Expr  # ℓᵀ(Pᵀ(π⊙π) − ‖π‖²π) − [Σ_i π_i² E(ℓ_x'|x=i) − ‖π‖² E_π ℓ] (0)
    symbols: dict = field(default_factory=dict)
    wall_s: float = 0.0  # seconds sympy took


def attention_tilt(d: int = 3) -> AttentionTilt:
    """Claim B6 (R3), general stationary chain: ∂_κA and the sign condition of g."""
    start = time.perf_counter()
    pi, F, _ = generic_chain(d)
    alpha, c = sp.symbols("alpha c", positive=True)
    kappa = sp.Symbol("kappa", real=True)
    a = [alpha * x for x in pi]
    A = sp.Matrix([_softmax([c * kappa * a[i] * a[k] + sp.log(pi[k]) for k in range(d)]) for i in range(d)])
    dA = A.diff(kappa).subs(kappa, 0).applyfunc(sp.cancel)
    npi2 = sum(x**2 for x in pi)
    dA_closed = sp.Matrix(d, d, lambda i, k: c * alpha**2 * pi[i] * pi[k] * (pi[k] - npi2))
    ell = sp.Matrix(sp.symbols(f"ell_0:{d}", real=True))  # any vector: the identity is linear in ℓ
    pi_v = sp.Matrix(pi)
    lhs = (ell.T * (F.T * pi_v - npi2 * pi_v))[0]
    cond = sum(pi[i] ** 2 * sum(F[i, j] / pi[i] * ell[j] for j in range(d)) for i in range(d)) - npi2 * sum(
        pi[j] * ell[j] for j in range(d)
    )
    return AttentionTilt(
        dA=dA,
        dA_closed=dA_closed,
        residual=(dA - dA_closed).applyfunc(lambda e: sp.cancel(sp.expand(e))),
        row_sums=sp.Matrix([sp.cancel(sum(dA.row(i))) for i in range(d)]),
        sign_residual=sp.cancel(sp.expand(lhs - cond)),
        symbols={"pi": pi, "alpha": alpha, "c": c, "npi2": npi2},
        wall_s=time.perf_counter() - start,
    )


@dataclass
class AttentionBlock:
    """Hessian of L in (WQ, WK) at WQ = WK = 0, when L depends on them only through M = WQ WKᵀ."""

    hessian: sp.Matrix  # (2m², 2m²)
    eigenvalues: dict  # eigenvalues of −hessian (the flow's Jacobian) with multiplicities
    G: sp.Matrix  # ∂L/∂M at the point, here −g u uᵀ with u = e₁


def attention_block(m: int = 2) -> AttentionBlock:
    """Claim B5: with ∂L/∂M = −g u uᵀ at θ_c¹, the attention block of the Jacobian has eigenvalues
    +g (m-fold: q = k, the unstable mode), −g (m-fold: q = −k) and 0 elsewhere."""
    g = sp.Symbol("g", positive=True)
    WQ = sp.Matrix(m, m, lambda i, j: sp.Symbol(f"Q_{i}{j}", real=True))
    WK = sp.Matrix(m, m, lambda i, j: sp.Symbol(f"K_{i}{j}", real=True))
    G = sp.zeros(m, m)
    G[0, 0] = -g
    # Second-order part of L around M = 0: ⟨G, WQ WKᵀ⟩ (higher orders in M do not enter the Hessian).
    L2 = (G.multiply_elementwise(WQ * WK.T)).values()
    L2 = sum(L2) if L2 else sp.Integer(0)
    xs = list(WQ) + list(WK)
    Hm = sp.hessian(L2, xs)
    return AttentionBlock(hessian=Hm, eigenvalues=(-Hm).eigenvals(), G=G)


# --------------------------------------------------------------------------------------------
# R5 — transverse block, degenerate point θ_c², Lyapunov–Schmidt (claims B8, B9)
# --------------------------------------------------------------------------------------------
@dataclass
class TransverseBlock:
    """Perturbation off 𝓜₁: W0 = a uᵀ + s ζ wᵀ, W1 = u bᵀ + s w βᵀ, M = κ u uᵀ (w ⊥ u)."""

    scores_change: sp.Matrix  # S(s) − S(0): zero (scores are unchanged off 𝓜₁)
    logits_change: sp.Matrix  # Z(s) − Z(0) = s² A ζ βᵀ
    G_residual: sp.Matrix  # ∂L/∂Z − (Π softmax(Z) − F) (0): the logit gradient is Π(P̂ − P)
    first_order: sp.Expr  # ∂L/∂s at s = 0: zero (𝓜₁ is invariant)
    quadratic: sp.Expr  # ½ ∂²L/∂s² at s = 0
    quadratic_closed: sp.Expr  # −ζᵀ M⊥ β, M⊥ = Aᵀ Π (P − P̂) = Aᵀ(F − Π P̂)
    residual: sp.Expr  # quadratic − quadratic_closed (0)
    jacobian: sp.Matrix  # flow Jacobian in (ζ, β): [[0, M⊥], [M⊥ᵀ, 0]]
    M_perp: sp.Matrix


def transverse_block(d: int = 3) -> TransverseBlock:
    """R5: the transverse linearization ζ̇ = M⊥β, β̇ = M⊥ᵀζ on a general chain (A, P̂ generic)."""
    pi, F, _ = generic_chain(d)
    s, kappa, c = sp.symbols("s kappa c", real=True)
    a, b, zeta, beta = (sp.Matrix(sp.symbols(f"{n}_0:{d}", real=True)) for n in ("a", "b", "zeta", "beta"))
    u, w = sp.Matrix([1, 0]), sp.Matrix([0, 1])  # m = 2 suffices: u, w orthonormal
    W0 = a * u.T + s * zeta * w.T  # (d, 2)
    W1 = u * b.T + s * w * beta.T  # (2, d)
    M = kappa * u * u.T  # (2, 2)
    S = c * W0 * M * W0.T
    A = sp.Matrix(d, d, lambda i, k: sp.Symbol(f"A_{i}{k}", positive=True))  # attention rows at S(0)
    Z = A * W0 * W1
    Zs, L_Z, G_Z = loss_of_logits(F)
    Z0 = Z.subs(s, 0)
    P_hat = sp.Matrix(d, d, lambda i, j: sp.Symbol(f"Phat_{i}{j}", positive=True))
    # ∂L/∂Z at Z0 is Π P̂ − F with P̂ = softmax(Z0) (sympy shows G_Z·/π_i + F/π_i is the softmax).
    G0 = sp.Matrix(d, d, lambda i, j: pi[i] * P_hat[i, j] - F[i, j])
    G_check = G_Z - sp.Matrix(d, d, lambda i, j: pi[i] * _softmax(list(Zs.row(i)))[j] - F[i, j])
    dZ1, dZ2 = Z.diff(s).subs(s, 0), Z.diff(s, 2).subs(s, 0)
    first = sum(G0[i, j] * dZ1[i, j] for i in range(d) for j in range(d))
    quad = sp.expand(sum(G0[i, j] * dZ2[i, j] for i in range(d) for j in range(d)) / 2)
    M_perp = A.T * (F - sp.diag(*pi) * P_hat)
    closed = sp.expand(-(zeta.T * M_perp * beta)[0])
    xs = list(zeta) + list(beta)
    J = -sp.hessian(closed, xs)
    return TransverseBlock(
        scores_change=(S - S.subs(s, 0)).applyfunc(sp.expand),
        logits_change=(Z - Z0).applyfunc(sp.expand),
        G_residual=G_check.applyfunc(lambda e: sp.cancel(sp.expand(e))),
        first_order=sp.expand(first),
        quadratic=quad,
        quadratic_closed=closed,
        residual=sp.expand(quad - closed),
        jacobian=J,
        M_perp=M_perp,
    )


def hub_family_symbolic(n: int = 3, delta=0, xi=None):
    """The §5.2 family with symbolic a_h, b_h, c_cyc (and optional δ, ξ): (P, π, symbols)."""
    a_h, b_h, c_cyc = sp.symbols("a_h b_h c_cyc", positive=True)
    xi = xi if xi is not None else [0] * n
    d = n + 1
    P = sp.zeros(d, d)
    P[0, 0] = a_h
    for j in range(1, d):
        P[0, j] = (1 - a_h) / n
        b_j = b_h * (1 + delta * xi[j - 1])
        P[j, 0] = b_j
        for k in range(1, d):
            P[j, k] = (1 - b_j) * (1 - c_cyc) / n + ((1 - b_j) * c_cyc if k == 1 + (j % n) else 0)
    pi0 = b_h / (1 - a_h + b_h)
    pi = [pi0] + [(1 - pi0) / n] * n  # δ = 0 stationary distribution
    return P, pi, {"a_h": a_h, "b_h": b_h, "c_cyc": c_cyc}


@dataclass
class DegeneratePoint:
    """θ_c² of the symmetric family (δ = 0): exact fit of P_0 and P̄_low by the rank-one model."""

    stationarity_residual: sp.Matrix  # πᵀP − πᵀ (0)
    P_low_mean: sp.Matrix  # P̄_low = (b_h, (1 − b_h)/n, …)
    collinearity_minors: list  # 2×2 minors of [ℓ(P_0); ℓ(P̄_low)] (0): rank one
    M_perp: sp.Matrix  # M⊥ at P̂_0 = P_0, P̂_j = P̄_low, A_j = A_low (0)
    loss: sp.Expr  # L(θ_c²) = π_0 H(P_0) + Σ_j π_j CE(P_j, P̄_low)
    symbols: dict = field(default_factory=dict)

    @property
    def n_nonzero_fit(self) -> int:
        """How many entries of the stationarity residual and of the collinearity minors do not simplify
        to zero (0: π is stationary and the rank-one model fits P_0 and P̄_low exactly; claim B14)."""
        return sum(int(not is_zero(e)) for e in [*self.stationarity_residual, *self.collinearity_minors])


def degenerate_point(n: int = 3) -> DegeneratePoint:
    """Claim B8: M⊥ = 0 at θ_c² on the symmetric family, with symbolic a_h, b_h, c_cyc."""
    P, pi, sy = hub_family_symbolic(n)
    d = n + 1
    pi_v = sp.Matrix(pi)
    stat = (pi_v.T * P - pi_v.T).applyfunc(sp.simplify)
    P_low = sp.Matrix([[sum(P[j, k] for j in range(1, d)) / n for k in range(d)]]).applyfunc(sp.simplify)

    def centred_log(row):
        logs = [sp.log(x) for x in row]
        return [sp.expand_log(lg - sum(logs) / d, force=True) for lg in logs]

    E = sp.Matrix([centred_log(list(P.row(0))), centred_log(list(P_low))])
    minors = [sp.simplify(E[0, i] * E[1, j] - E[0, j] * E[1, i]) for i in range(d) for j in range(i + 1, d)]
    A0 = sp.Matrix([sp.symbols(f"A_0_0:{d}", positive=True)])
    Al = sp.Matrix([sp.symbols(f"A_l_0:{d}", positive=True)])
    M = A0.T * (pi[0] * (P.row(0) - P.row(0)))  # hub residual is zero at the exact fit
    for j in range(1, d):
        M += Al.T * (pi[j] * (P.row(j) - P_low))
    loss = -pi[0] * sum(P[0, k] * sp.log(P[0, k]) for k in range(d)) - sum(
        pi[j] * P[j, k] * sp.log(P_low[k]) for j in range(1, d) for k in range(d)
    )
    return DegeneratePoint(
        stationarity_residual=stat,
        P_low_mean=P_low,
        collinearity_minors=minors,
        M_perp=M.applyfunc(sp.simplify),
        loss=sp.simplify(loss),
        symbols={**sy, "pi": pi, "P": P},
    )


@dataclass
class LyapunovSchmidt:
    """Reduction at θ_c² onto the transverse kernel, to leading order in δ."""

    charpoly_residual: sp.Expr  # det(λI − [[0, M], [Mᵀ, 0]]) − det(λ²I − M Mᵀ) (0): eigenvalues ±σ_i(M)
    M0: sp.Matrix  # M⊥ at δ = 0 given R_0(0) = 0 and Σ_j R_j(0) = 0 (0)
    M1: sp.Matrix  # ∂_δ M⊥ at δ = 0, by sympy's product rule on M⊥(δ) = Σ_i A_iᵀ R_i
    M1_display: sp.Expr  # the same as a matrix expression: A₀ᵀR₀′ + A_lowᵀ Σ_j R_j′ + Σ_j A_j′ᵀ R_j
    M1_residual: sp.Matrix  # M1 − explicit(M1_display) (0)
    reduced: sp.Expr  # the bifurcation equation's linear part: δ [[0, M1], [M1ᵀ, 0]]


def lyapunov_schmidt(n: int = 2) -> LyapunovSchmidt:
    """Claim B9. At δ = 0 the transverse Jacobian [[0, M⊥], [M⊥ᵀ, 0]] vanishes (M⊥ = 0), so the
    transverse space is in the kernel. Off 𝓜₁ the scores are unchanged to first order, so the
    range equation is solved by the critical point θ_c²(δ) on 𝓜₁ and the bifurcation equation
    on the kernel is ż = J⊥(δ) z + O(|z|²) with J⊥(δ) = δ [[0, M1], [M1ᵀ, 0]] + O(δ²):
    eigenvalues ±δ σ_i(M1) — a Θ(δ) unstable transverse mode, rate λ₁δ with λ₁ = σ_max(M1).

    M⊥ = Σ_i A_iᵀ R_i with residual rows R_i = π_i(P_i − P̂_i) (1, d); at δ = 0 (degenerate_point)
    R_0 = 0, Σ_{j low} R_j = 0 and every low query shares the attention row A_low.
    """
    d = n + 1
    lam, delta = sp.symbols("lambda delta", real=True)
    Mg = sp.Matrix(d, d, lambda i, j: sp.Symbol(f"m_{i}{j}", real=True))
    J = sp.BlockMatrix([[sp.zeros(d, d), Mg], [Mg.T, sp.zeros(d, d)]]).as_explicit()
    cp = (lam * sp.eye(2 * d) - J).det(method="berkowitz")
    cp_res = sp.expand(cp - (lam**2 * sp.eye(d) - Mg * Mg.T).det(method="berkowitz"))

    def row(name):
        return sp.Matrix([sp.symbols(f"{name}_0:{d}", real=True)])

    A0, Al, dA0, dR0 = row("A0"), row("Alow"), row("dA0"), row("dR0")
    dA = [row(f"dA{j}") for j in range(1, d)]
    dR = [row(f"dR{j}") for j in range(1, d)]
    R = [row(f"R{j}") for j in range(1, n)]
    R.append(-sum(R, sp.zeros(1, d)))  # Σ_j R_j(0) = 0
    Mdelta = (A0 + delta * dA0).T * (delta * dR0)  # R_0(0) = 0
    for j in range(n):
        Mdelta += (Al + delta * dA[j]).T * (R[j] + delta * dR[j])
    M0 = Mdelta.subs(delta, 0).applyfunc(sp.expand)
    M1 = Mdelta.diff(delta).subs(delta, 0).applyfunc(sp.expand)
    # Display form with matrix symbols (rows are 1×d, so Aᵀ R is an outer product d×d).
    ms = lambda name: sp.MatrixSymbol(name, 1, d)  # noqa: E731
    A0s, Als, dR0s = ms("A_0"), ms(r"A_{\rm low}"), ms(r"R_0'")
    terms = (
        [A0s.T * dR0s]
        + [Als.T * ms(f"R_{j}'") for j in range(1, d)]
        + [ms(f"A_{j}'").T * ms(f"R_{j}") for j in range(1, d)]
    )
    M1_display = sp.MatAdd(*terms)
    subs = {A0s: A0, Als: Al, dR0s: dR0}
    for j in range(1, d):
        subs.update({ms(f"R_{j}'"): dR[j - 1], ms(f"A_{j}'"): dA[j - 1], ms(f"R_{j}"): R[j - 1]})
    explicit = sp.zeros(d, d)
    for term in terms:
        left, right = term.args
        explicit += subs[left.arg].T * subs[right]
    M1s = sp.MatrixSymbol("M_1", d, d)
    reduced = delta * sp.BlockMatrix([[sp.ZeroMatrix(d, d), M1s], [M1s.T, sp.ZeroMatrix(d, d)]])
    return LyapunovSchmidt(
        charpoly_residual=cp_res,
        M0=M0,
        M1=M1,
        M1_display=M1_display,
        M1_residual=(M1 - explicit).applyfunc(sp.expand),
        reduced=reduced,
    )


# --------------------------------------------------------------------------------------------
# The backward pass of spec §4.3, rule by rule (model.PopulationGrad composes these rules)
# --------------------------------------------------------------------------------------------
@dataclass
class BackwardRules:
    """Residuals (0) of the two nontrivial rules of the closed-form gradient of spec §4.3."""

    logits: sp.Matrix  # ∂L/∂Z − Π(P̂ − P), P̂ = softmax(Z) row-wise
    attention: sp.Matrix  # ∂⟨G_A, A(S)⟩/∂S − A ⊙ (G_A − rowsum(A ⊙ G_A)), A = softmax(S + log π)


def backward_rules(d: int = 3) -> BackwardRules:
    """Sympy derivation of the softmax rules used by ``model.PopulationGrad`` (general chain)."""
    pi, F, _ = generic_chain(d)
    Zs, _, G_Z = loss_of_logits(F)
    logits = G_Z - sp.Matrix(d, d, lambda i, j: pi[i] * _softmax(list(Zs.row(i)))[j] - F[i, j])
    S = sp.Matrix(d, d, lambda i, k: sp.Symbol(f"S_{i}{k}", real=True))
    GA = sp.Matrix(d, d, lambda i, k: sp.Symbol(f"G_{i}{k}", real=True))
    A = sp.Matrix([_softmax([S[i, k] + sp.log(pi[k]) for k in range(d)]) for i in range(d)])
    inner = sum(GA[i, k] * A[i, k] for i in range(d) for k in range(d))
    rule = sp.Matrix(d, d, lambda i, k: A[i, k] * (GA[i, k] - sum(A[i, l] * GA[i, l] for l in range(d))))
    attention = sp.Matrix(d, d, lambda i, k: sp.diff(inner, S[i, k])) - rule
    simp = lambda e: sp.cancel(sp.expand(e))  # noqa: E731
    return BackwardRules(logits=logits.applyfunc(simp), attention=attention.applyfunc(simp))


# --------------------------------------------------------------------------------------------
# Full model with a numeric chain (small sizes only: the expression grows fast)
# --------------------------------------------------------------------------------------------
def full_loss(P, m: int = 2, score_scale=1):
    """The population loss of the full model as a sympy expression in the entries of
    (W0, WQ, WK, W1), for a numeric chain P (d, d) with rational entries; returns (L, symbols)
    with symbols in the flat order W0, WQ, WK, W1 (row-major) of ``model`` and ``flow``."""
    P = sp.Matrix(P).applyfunc(sp.nsimplify)
    d = P.shape[0]
    ns = (P.T - sp.eye(d)).nullspace()
    pi = ns[0] / sum(ns[0])
    W0 = sp.Matrix(d, m, lambda i, j: sp.Symbol(f"W0_{i}{j}", real=True))
    WQ = sp.Matrix(m, m, lambda i, j: sp.Symbol(f"WQ_{i}{j}", real=True))
    WK = sp.Matrix(m, m, lambda i, j: sp.Symbol(f"WK_{i}{j}", real=True))
    W1 = sp.Matrix(m, d, lambda i, j: sp.Symbol(f"W1_{i}{j}", real=True))
    S = score_scale * W0 * WQ * WK.T * W0.T
    A = sp.Matrix([_softmax([S[i, k] + sp.log(pi[k]) for k in range(d)]) for i in range(d)])
    Z = A * W0 * W1
    L = -sum(pi[i] * P[i, j] * _log_softmax(list(Z.row(i)))[j] for i in range(d) for j in range(d))
    return L, list(W0) + list(WQ) + list(WK) + list(W1)
