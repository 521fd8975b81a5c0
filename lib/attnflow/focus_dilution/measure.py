"""Stage quantities along a trajectory (spec focus_dilution.md §7, items 1–6) and stage detection.

    run = measure.Trajectory.from_flow(result, loss)     # result = flow.integrate(...)
    run.quantities["kappa"], run.quantities["A"][:, 0, 0], run.window("sigma2", 0.01, 0.1)

Every quantity is computed for all stored times at once (batched SVDs), in float64.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attnflow.focus_dilution import closed_forms, model
from attnflow.focus_dilution.model import PopulationLoss
from attnflow.record import Run

__all__ = ["quantities", "Trajectory", "fit_rate", "cos", "effective_rank", "first_time", "level_times"]


def cos(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """|cos| of the angle between x (…, n) and a fixed y (n,) — sign-free, as singular vectors are."""
    return np.abs(x @ y) / (np.linalg.norm(x, axis=-1) * np.linalg.norm(y))


def effective_rank(sv: np.ndarray) -> np.ndarray:
    """Entropy effective rank exp(H(σ/Σσ)) of singular values (…, r) (Roy & Vetterli 2007)."""
    p = sv / sv.sum(-1, keepdims=True)
    return np.exp(-(p * np.log(np.where(p > 0, p, 1.0))).sum(-1))


def quantities(states: dict[str, torch.Tensor], loss: PopulationLoss) -> dict[str, np.ndarray]:
    """Stage quantities for states name → (T, *shape) (``FlowResult.states()``).

    loss, sv_W0 (T, r), sv_W1, sigma1/sigma2 (of W0), eff_rank_W0/W1, cos_W0_pi (top left singular
    vector of W0 vs π), cos_W1_pic / cos_W1_ell (top right singular vector of W1 vs π − 1/d, ℓ),
    u (T, m) the rank-one direction, amp (T, d) a_k = ⟨h_k, u⟩ with a_hub > 0, kappa = uᵀWQWKᵀu,
    M_fro = ‖WQWKᵀ‖_F, A (T, d, d) attention rows, attn_entropy Σ_i π_i H(A_i·), hub_attention
    Σ_i π_i A_{i,hub}, M_perp_smax σ_max(M⊥), balance ‖W0‖² − ‖W1‖² − ‖WQ‖² − ‖WK‖² (conserved),
    mode0 = ‖W0ᵀπ̂ + W1 v̂‖ with v̂ = (π − 1/d)/‖π − 1/d‖: the amplitude of the unstable mode of the
    linearized flow at the origin (R1), exactly ∝ e^{σ0 t} there (the frozen directions drop out);
    qk_sym = ‖q + k‖², qk_anti = ‖q − k‖² with q = WQᵀu, k = WKᵀu: at θ_c¹ they grow exactly like
    e^{2gt} and e^{−2gt} (R2), while κ = qᵀk = ¼(qk_sym − qk_anti) mixes both.
    """
    chain = loss.chain
    pi, d, hub = chain.pi, chain.d, chain.hub
    with torch.no_grad():
        out = model.forward(states, loss.population, loss.score_scale)
        L = model.cross_entropy(out, loss.population)
        W0, W1 = states["W0"], states["W1"]
        M = states["WQ"] @ states["WK"].transpose(-1, -2)                      # (T, m, m)
        U0, s0, V0t = torch.linalg.svd(W0, full_matrices=False)                # (T, d, r), (T, r), (T, r, m)
        _, s1, V1t = torch.linalg.svd(W1, full_matrices=False)                 # V1t: (T, r, d)
        u = V0t[:, 0, :]                                                       # (T, m)
        amp = (W0 @ u[..., None])[..., 0]                                      # (T, d)
        sign = torch.where(amp[:, hub] < 0, -1.0, 1.0).to(amp.dtype)
        amp, u = amp * sign[:, None], u * sign[:, None]
        kappa = torch.einsum("tm,tmn,tn->t", u, M, u)                          # (T,)
        qv = (states["WQ"].transpose(-1, -2) @ u[..., None])[..., 0]           # (T, m): q = WQᵀu
        kv = (states["WK"].transpose(-1, -2) @ u[..., None])[..., 0]           # (T, m): k = WKᵀu
        norms = {n: (states[n] ** 2).sum((-1, -2)) for n in states}
        pi_hat = torch.as_tensor(pi / np.linalg.norm(pi), dtype=W0.dtype)
        v_hat = torch.as_tensor((pi - 1 / d) / np.linalg.norm(pi - 1 / d), dtype=W0.dtype)
        mode0 = torch.linalg.vector_norm(W0.transpose(-1, -2) @ pi_hat + W1 @ v_hat, dim=-1)   # (T,)
    A, P_hat = out.attention.numpy(), out.log_probs.exp().numpy()
    s0n = s0.numpy()
    ent = -(A * np.log(A)).sum(-1)                                             # (T, d) per query
    Mp = closed_forms.M_perp(A, P_hat, chain)                                  # (T, d, d)
    return {
        "loss": L.numpy(),
        "sv_W0": s0n, "sv_W1": s1.numpy(),
        "sigma1": s0n[:, 0], "sigma2": s0n[:, 1] if s0n.shape[1] > 1 else np.zeros(len(s0n)),
        "eff_rank_W0": effective_rank(s0n), "eff_rank_W1": effective_rank(s1.numpy()),
        "W0_fro": np.sqrt(norms["W0"].numpy()), "W1_fro": np.sqrt(norms["W1"].numpy()),
        "WQ_fro": np.sqrt(norms["WQ"].numpy()), "WK_fro": np.sqrt(norms["WK"].numpy()),
        "cos_W0_pi": cos(U0[:, :, 0].numpy(), pi),
        "cos_W1_pic": cos(V1t[:, 0, :].numpy(), pi - 1 / d),
        "cos_W1_ell": cos(V1t[:, 0, :].numpy(), chain.ell),
        "u": u.numpy(), "amp": amp.numpy(), "kappa": kappa.numpy(),
        "M_fro": torch.linalg.matrix_norm(M).numpy(),
        "A": A, "P_hat": P_hat,
        "attn_entropy": ent @ pi, "hub_attention": A[:, :, hub] @ pi,
        "M_perp_smax": np.linalg.svd(Mp, compute_uv=False)[:, 0],
        "balance": (norms["W0"] - norms["W1"] - norms["WQ"] - norms["WK"]).numpy(),
        "mode0": mode0.numpy(),
        "qk_sym": ((qv + kv) ** 2).sum(-1).numpy(), "qk_anti": ((qv - kv) ** 2).sum(-1).numpy(),
    }


def fit_rate(t: np.ndarray, y: np.ndarray, t0: float, t1: float) -> float:
    """Least-squares slope of log|y| on t0 ≤ t ≤ t1 (a growth rate); needs ≥ 3 points."""
    sel = (t >= t0) & (t <= t1)
    if sel.sum() < 3:
        raise ValueError(f"fit window [{t0:g}, {t1:g}] holds {int(sel.sum())} stored times; need ≥ 3 "
                         "(store more times or widen the window)")
    return float(np.polyfit(t[sel], np.log(np.abs(y[sel])), 1)[0])


def first_time(t: np.ndarray, mask: np.ndarray) -> float:
    """First stored time where mask holds (nan if never)."""
    idx = np.flatnonzero(mask)
    return float(t[idx[0]]) if len(idx) else float("nan")


def level_times(t: np.ndarray, loss: np.ndarray, upper: float, lower: float, frac: float = 0.01) -> tuple[float, float]:
    """Times at which the loss leaves ``upper`` and reaches ``lower``: first t with
    L < upper − frac·gap and first t with L < lower + frac·gap, gap = upper − lower."""
    gap = upper - lower
    return first_time(t, loss < upper - frac * gap), first_time(t, loss < lower + frac * gap)


@dataclass
class Trajectory(Run):
    """A flow or a training with its stage quantities: a :class:`~attnflow.record.Run` whose
    ``quantities`` are those of :func:`quantities` (name → (T, …) arrays); ``nfev`` counts the
    gradient evaluations of a flow. ``at``, ``quantity``, ``final`` … are the record's accessors."""

    nfev: int = 0

    @classmethod
    def from_flow(cls, result, loss: PopulationLoss) -> "Trajectory":
        return cls(t=result.t, quantities=quantities(result.states(), loss), nfev=result.nfev, wall_s=result.wall_s)

    def rate(self, key: str, t0: float, t1: float) -> float:
        """Fitted growth rate of ``key`` on [t0, t1] (see :func:`fit_rate`)."""
        return fit_rate(self.t, self.quantities[key], t0, t1)

    def window(self, key: str, lo: float, hi: float, after: float = 0.0) -> tuple[float, float]:
        """[first, last] stored time after ``after`` with lo ≤ quantities[key] ≤ hi (the linear window of
        a growing mode, e.g. σ₂(W0) ∈ [0.01, 0.1] in R5), taken up to the first exit above ``hi``."""
        t, y = self.t, self.quantities[key]
        above = np.flatnonzero((t > after) & (y > hi))
        end = t[above[0]] if len(above) else t[-1]
        sel = (t > after) & (t <= end) & (y >= lo) & (y <= hi)
        if sel.sum() < 3:
            raise ValueError(f"{key} spends fewer than 3 stored times in [{lo:g}, {hi:g}] after t = {after:g}; "
                             "lengthen the horizon or store more times")
        return float(t[sel].min()), float(t[sel].max())


def gradient_scaling(loss: PopulationLoss, d_model: int, init_scales, seed: int = 1) -> dict[str, np.ndarray]:
    """‖∇_X L‖ at the small initialization θ = ε θ̄ for each ε (same θ̄), per parameter X.
    The slope of log‖∇_X L‖ against log ε is the order of the drive: 1 for W0, W1 (the linear
    flow of R1) and 5 for WQ, WK (scores are quartic and enter L through Y = W0W1)."""
    from attnflow.focus_dilution.model import init_params

    out: dict[str, list] = {}
    for eps in init_scales:
        theta = {n: v.requires_grad_(True) for n, v in init_params(loss.chain.d, d_model, eps, seed).items()}
        grads = torch.autograd.grad(loss(theta), list(theta.values()))
        for n, g in zip(theta, grads):
            out.setdefault(n, []).append(float(g.norm()))
    logs = np.log(np.asarray(init_scales, dtype=float))
    res = {n: np.asarray(v) for n, v in out.items()}
    res.update({f"order_{n}": float(np.polyfit(logs, np.log(v), 1)[0]) for n, v in out.items()})
    return res


def grad_norms(states: dict[str, torch.Tensor], loss: PopulationLoss) -> np.ndarray:
    """‖∇L(θ(t))‖ at every stored time, (T,): one batched backward pass (the per-time losses
    are independent, so the gradient of their sum holds each time's gradient)."""
    theta = {n: v.detach().clone().requires_grad_(True) for n, v in states.items()}
    grads = torch.autograd.grad(loss(theta).sum(), list(theta.values()))
    return torch.sqrt(sum((g**2).sum((-1, -2)) for g in grads)).numpy()


def saddle_time(t: np.ndarray, gnorm: np.ndarray, t0: float, t1: float) -> float:
    """The stored time in [t0, t1] where ‖∇L‖ is smallest: the closest approach to a saddle."""
    sel = (t >= t0) & (t <= t1)
    if not sel.any():
        raise ValueError(f"no stored time in [{t0:g}, {t1:g}]")
    return float(t[sel][np.argmin(gnorm[sel])])


def kappa_drive(states: dict[str, torch.Tensor], loss: PopulationLoss, u: np.ndarray) -> np.ndarray:
    """g_eff(t) = −uᵀ (∂L/∂M) u with M = WQ WKᵀ, at every stored time (T,): the rate of the
    attention mode at the point the flow actually visits (= g at θ_c¹ exactly, claim B5)."""
    from attnflow.focus_dilution.model import Population, loss as model_loss

    W0 = states["W0"]
    M = (states["WQ"] @ states["WK"].transpose(-1, -2)).detach().clone().requires_grad_(True)   # (T, m, m)
    eye = torch.eye(M.shape[-1], dtype=M.dtype).expand_as(M)              # WQ = M, WK = I: the same scores
    theta = {"W0": W0, "WQ": M, "WK": eye, "W1": states["W1"]}
    G_M, = torch.autograd.grad(model_loss(theta, Population(loss.P, loss.pi), loss.score_scale).sum(), M)
    uu = torch.as_tensor(u, dtype=G_M.dtype)                                                  # (T, m)
    return -torch.einsum("tm,tmn,tn->t", uu, G_M, uu).numpy()


def attention_onset(t: np.ndarray, A: np.ndarray, pi: np.ndarray, threshold: float = 0.01) -> float:
    """First stored time at which some attention weight has left π by ``threshold``: the start of
    focus (during condensation and on the plateau A_ik = π_k + O(ε²))."""
    return first_time(t, np.abs(A - pi).max((-1, -2)) >= threshold)


def linear_response(A: np.ndarray, pi: np.ndarray, kappa: np.ndarray, kappa_max: float,
                    after: np.ndarray | None = None) -> np.ndarray:
    """Least-squares slope of A_ik − π_k against κ (with an intercept, which absorbs the O(ε²)
    attention offset of the plateau) over the stored times with |κ| ≤ kappa_max (and ``after``
    True), (d, d): the measured ∂_κA of claim B6 (R3). Keep kappa_max ≲ |g|/4: beyond, the
    amplitudes themselves move by O(κ/g) (redistribution) and bend the response."""
    sel = np.abs(kappa) <= kappa_max
    if after is not None:
        sel &= after
    if sel.sum() < 3:
        raise ValueError(f"fewer than 3 stored times with |κ| ≤ {kappa_max:g}; store more times")
    X = np.stack([np.ones(int(sel.sum())), kappa[sel]], 1)                      # (n, 2)
    Y = (A[sel] - pi).reshape(sel.sum(), -1)                                    # (n, d·d)
    slope = np.linalg.lstsq(X, Y, rcond=None)[0][1]
    return slope.reshape(A.shape[-2:])
