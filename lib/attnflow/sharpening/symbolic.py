"""Sympy derivations of the sharpening paper (Vashisht & Ramaswamy), checked before any numerics.

Each function returns the derived expressions *and* the residual of the identity it checks, so
a page can display the checked expression (``attnflow.display.equation``) and record
``residual == 0`` as a claim.
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

# ---------------------------------------------------------------------------------------------
# Lemma 1 — factorization = state-dependent learning-rate rescaling (claim A2)
# [paper] claim; proof [prior work]: Arora, Cohen & Hazan (2018); Du, Hu & Lee (2018).
# ---------------------------------------------------------------------------------------------


@dataclass
class ScalarRescaling:
    """Scalar factorized circuit b = q k under dq/dt = -η ∂L/∂q, dk/dt = -η ∂L/∂k."""

    b_dot: sp.Expr                 # db/dt in terms of q, k, L'(b)
    imbalance_dot: sp.Expr         # d/dt (q² − k²), simplifies to 0
    rate_identity: sp.Expr         # (q² + k²) − sqrt(4b² + δ²) with b = qk, δ = q² − k², q,k > 0
    b_dot_closed: sp.Expr          # −η sqrt(4b² + δ²) L'(b)
    b_dot_balanced: sp.Expr        # −2η|b| L'(b)   (δ = 0)


def lemma1_scalar() -> ScalarRescaling:
    """Lemma 1, scalar case: balancedness is conserved and db/dt = −η√(4b²+δ²) ∂_bL."""
    t = sp.symbols("t", real=True)
    eta = sp.symbols("eta", positive=True)
    q = sp.Function("q", real=True)(t)
    k = sp.Function("k", real=True)(t)
    b, delta = sp.symbols("b delta", real=True)
    dL = sp.Function("L'")  # ∂L/∂b evaluated at b = qk
    # Chain rule: ∂L/∂q = k L'(qk), ∂L/∂k = q L'(qk).
    q_dot = -eta * k * dL(q * k)
    k_dot = -eta * q * dL(q * k)
    b_dot = sp.expand(q_dot * k + q * k_dot)
    imbalance_dot = sp.simplify(2 * q * q_dot - 2 * k * k_dot)
    qs, ks = sp.symbols("q k", positive=True)
    # (q² + k²)² = (q² − k²)² + 4(qk)², so q² + k² = √(4b² + δ²) for q, k > 0.
    rate_identity = sp.simplify((qs**2 + ks**2) - sp.sqrt(sp.factor(4 * (qs * ks) ** 2 + (qs**2 - ks**2) ** 2)))
    return ScalarRescaling(
        b_dot=b_dot,
        imbalance_dot=imbalance_dot,
        rate_identity=rate_identity,
        b_dot_closed=-eta * sp.sqrt(4 * b**2 + delta**2) * dL(b),
        b_dot_balanced=-2 * eta * sp.Abs(b) * dL(b),
    )


@dataclass
class MatrixRescaling:
    """Matrix factorized circuit W = W_Q W_Kᵀ with G = ∂L/∂W (explicit small matrices)."""

    W_dot: sp.Matrix               # d/dt (W_Q W_Kᵀ) from the factor flows
    W_dot_lemma: sp.Matrix         # −η (W_Q W_Qᵀ G + G W_K W_Kᵀ)   (Lemma 1, item 2)
    residual: sp.Matrix            # W_dot − W_dot_lemma, simplifies to 0
    balancedness_dot: sp.Matrix    # d/dt (W_Qᵀ W_Q − W_Kᵀ W_K), simplifies to 0


def lemma1_matrix(d: int = 2, d_h: int = 2) -> MatrixRescaling:
    """Lemma 1, items 1–2, with fully symbolic d×d_h factors and a symbolic gradient G.

    The factor gradients are ∇_{W_Q}L = G W_K and ∇_{W_K}L = Gᵀ W_Q (chain rule through
    W = W_Q W_Kᵀ), so the identity holds entrywise for any loss.
    """
    eta = sp.symbols("eta", positive=True)
    W_q = sp.Matrix(d, d_h, lambda i, j: sp.Symbol(f"q_{i}{j}", real=True))
    W_k = sp.Matrix(d, d_h, lambda i, j: sp.Symbol(f"k_{i}{j}", real=True))
    G = sp.Matrix(d, d, lambda i, j: sp.Symbol(f"g_{i}{j}", real=True))
    W_q_dot = -eta * G * W_k                      # (d, d_h)
    W_k_dot = -eta * G.T * W_q                    # (d, d_h)
    W_dot = W_q_dot * W_k.T + W_q * W_k_dot.T     # (d, d)
    W_dot_lemma = -eta * (W_q * W_q.T * G + G * W_k * W_k.T)
    residual = sp.simplify(sp.expand(W_dot - W_dot_lemma))
    balancedness_dot = sp.simplify(
        sp.expand(W_q_dot.T * W_q + W_q.T * W_q_dot - W_k_dot.T * W_k - W_k.T * W_k_dot)
    )
    return MatrixRescaling(W_dot=W_dot, W_dot_lemma=W_dot_lemma, residual=residual, balancedness_dot=balancedness_dot)


def is_zero(expr) -> bool:
    """True when a sympy expression or matrix simplifies to exactly zero."""
    if isinstance(expr, sp.MatrixBase):
        return all(sp.simplify(e) == 0 for e in expr)
    return sp.simplify(expr) == 0

# ---------------------------------------------------------------------------------------------
# (further sections: reduced (a, b) dynamics, Theorem 3 invariant, Theorem 4 asymptotics —
#  appended below by the sharpening theory chapter)
# ---------------------------------------------------------------------------------------------
