"""Jacobian of the population flow at a critical point, split into blocks (claim B5, R2).

    spec = spectrum.jacobian_blocks(loss, theta_c1_params(chain, m))
    spec.attention_eigs, spec.embedding_eigs, spec.cross_max, spec.unstable_qk_residual

The flow's Jacobian is J = −∇²L (one ``torch.func.hessian`` call). At θ_c¹ the cross terms
∂²L/∂(WQ, WK)∂(W0, W1) carry a factor WQ or WK and vanish, so J is block-diagonal: the
embedding block (W0, W1) and the attention block (WQ, WK).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attnflow.focus_dilution.chain import MarkovChain
from attnflow.focus_dilution.closed_forms import theta_c1
from attnflow.focus_dilution.model import PopulationLoss, hessian, rank_one_params

__all__ = ["theta_c1_params", "jacobian_blocks", "Blocks"]


def theta_c1_params(chain: MarkovChain, m: int, u=None) -> dict[str, torch.Tensor]:
    """θ_c¹ as model parameters: W0 = a* uᵀ, W1 = u b*ᵀ, WQ = WK = 0 (claim B4)."""
    c1 = theta_c1(chain)
    return rank_one_params(c1.a, c1.b, 0.0, m, u=u)


@dataclass
class Blocks:
    """Spectra of J = −∇²L by block (ascending eigenvalues)."""

    eigs: np.ndarray                # (n,) all eigenvalues of J
    embedding_eigs: np.ndarray      # (2dm,) the (W0, W1) block
    attention_eigs: np.ndarray      # (2m²,) the (WQ, WK) block
    cross_max: float                # max |∂²L/∂(WQ,WK)∂(W0,W1)|
    n_unstable: int                 # eigenvalues of J above tol
    unstable_qk_residual: float     # max over unstable eigenvectors of ‖WQ part − sign·WK part‖ / ‖v‖
    J: np.ndarray                   # (n, n)
    layout: list                    # [(name, slice)]


def jacobian_blocks(loss: PopulationLoss, theta: dict[str, torch.Tensor], tol: float = 1e-10,
                    sign: float = 1.0) -> Blocks:
    """Spectrum of the flow's Jacobian at θ, by block (embedding / attention / cross).
    ``sign``: sign of g; the unstable eigenvectors are checked for WQ part = sign · WK part."""
    H, layout = hessian(loss, theta)
    J = -H                                                            # (n, n)
    idx = {n: np.arange(sl.start, sl.stop) for n, sl in layout}
    emb = np.r_[idx["W0"], idx["W1"]]
    att = np.r_[idx["WQ"], idx["WK"]]
    eigs, vecs = np.linalg.eigh(J)
    unstable = vecs[:, eigs > tol]                                    # (n, k)
    # q = k mode: the WQ and WK parts of each unstable eigenvector coincide
    res = [np.linalg.norm(v[idx["WQ"]] - sign * v[idx["WK"]]) / np.linalg.norm(v) for v in unstable.T]
    return Blocks(eigs=eigs, embedding_eigs=np.linalg.eigvalsh(J[np.ix_(emb, emb)]),
                  attention_eigs=np.linalg.eigvalsh(J[np.ix_(att, att)]),
                  cross_max=float(np.abs(J[np.ix_(att, emb)]).max()), n_unstable=int(unstable.shape[1]),
                  unstable_qk_residual=float(max(res)) if res else float("nan"), J=J, layout=layout)


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
