"""Lemma 1 numerics: a factorized circuit is a collapsed one with a state-dependent learning rate.

Claim A2 [paper]; proof [prior work] (Arora, Cohen & Hazan 2018; Du, Hu & Lee 2018).

For W = W_Q W_Kᵀ under dW_Q/dt = −η ∇_{W_Q}L, dW_K/dt = −η ∇_{W_K}L with G = ∇_W L:

1. W_Qᵀ W_Q − W_Kᵀ W_K is conserved;
2. dW/dt = −η (W_Q W_Qᵀ G + G W_K W_Kᵀ);
3. if balanced at t = 0: dW/dt = −η ((W Wᵀ)^{1/2} G + G (Wᵀ W)^{1/2}).

The loss used here is a generic QK loss (a query points at one of T keys through
softmax(x_qᵀ W x_k)), because the lemma holds for any loss of W = W_Q W_Kᵀ.

The measures the page sharpening/lemma1_rescaling compares with: ``relative_deviation`` (a form or
a flow against another, relative to the largest entry), ``relative_imbalance`` (the hypothesis of
item 3), ``predicted_separation`` (the first-order forecast, from t = 0, of how far the plain
collapsed flow drifts), ``separated`` (its > 0.01 predicate) and ``max_deviation`` (the largest gap
over the scalar runs).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from attnflow import flow, seeding
from attnflow.params import ParameterError
from attnflow.record import Run


@dataclass
class PointerTask:
    """A fixed batch of queries x_q (B, d) and keys x_k (B, T, d) with a target key per query."""

    x_q: torch.Tensor  # (B, d)
    x_k: torch.Tensor  # (B, T, d)
    target: torch.Tensor  # (B,) int

    @classmethod
    def sample(cls, d: int, n_keys: int, n_samples: int, seed: int) -> "PointerTask":
        g = seeding.generator(seeding.stream(seed, "data"))
        x_q = torch.randn(n_samples, d, generator=g, dtype=torch.float64) / d**0.5
        x_k = torch.randn(n_samples, n_keys, d, generator=g, dtype=torch.float64) / d**0.5
        target = torch.randint(0, n_keys, (n_samples,), generator=g)
        return cls(x_q, x_k, target)

    def loss(self, W_qk: torch.Tensor) -> torch.Tensor:
        """Mean cross-entropy of softmax_i(x_qᵀ W_qk x_k,i) against the target key."""
        scores = torch.einsum("bd,de,bte->bt", self.x_q, W_qk, self.x_k)  # (B, T)
        return torch.nn.functional.cross_entropy(scores, self.target)


def balanced_factors(d: int, d_h: int, scale: float, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """W_Q = U S Vᵀ, W_K = U' S Vᵀ with orthonormal U, U' (d×d_h), so W_Qᵀ W_Q = W_Kᵀ W_K."""
    if d_h > d:
        raise ParameterError(f"parameter 'd_h': balanced factors need d_h ≤ d; received d_h={d_h}, d={d}")
    g = seeding.generator(seeding.stream(seed, "init"))
    U = torch.linalg.qr(torch.randn(d, d_h, generator=g, dtype=torch.float64))[0]  # (d, d_h)
    U2 = torch.linalg.qr(torch.randn(d, d_h, generator=g, dtype=torch.float64))[0]  # (d, d_h)
    V = torch.linalg.qr(torch.randn(d_h, d_h, generator=g, dtype=torch.float64))[0]  # (d_h, d_h)
    S = torch.diag(scale * torch.linspace(1.0, 0.5, d_h, dtype=torch.float64))  # distinct singular values
    return U @ S @ V.T, U2 @ S @ V.T


def psd_sqrt(A: torch.Tensor) -> torch.Tensor:
    """Square root of a symmetric positive semi-definite matrix (eigendecomposition).

    Eigenvalues below n·eps·λ_max are round-off of exact zeros (W_QK has rank d_h < d) and are
    set to zero: √(round-off) would otherwise inject errors of order √eps ≈ 1e-8.
    """
    lam, V = torch.linalg.eigh(A)
    cutoff = A.shape[-1] * torch.finfo(A.dtype).eps * lam.abs().max()
    lam = torch.where(lam > cutoff, lam, torch.zeros_like(lam))
    return (V * lam.sqrt()) @ V.T


def lemma_rate(W_q: torch.Tensor, W_k: torch.Tensor, G: torch.Tensor, eta: float) -> dict[str, torch.Tensor]:
    """dW/dt three ways at one state: item 2 (factor form) and item 3 (balanced form)."""
    W = W_q @ W_k.T
    return {
        "factor_form": -eta * (W_q @ W_q.T @ G + G @ W_k @ W_k.T),
        "balanced_form": -eta * (psd_sqrt(W @ W.T) @ G + G @ psd_sqrt(W.T @ W)),
    }


def autograd_rate(
    task: PointerTask, W_q: torch.Tensor, W_k: torch.Tensor, eta: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """d/dt (W_Q W_Kᵀ) from the factor gradients (autograd), and G = ∇_W L at W = W_Q W_Kᵀ."""
    W_q = W_q.clone().requires_grad_(True)
    W_k = W_k.clone().requires_grad_(True)
    gq, gk = torch.autograd.grad(task.loss(W_q @ W_k.T), (W_q, W_k))
    W = (W_q @ W_k.T).detach().requires_grad_(True)
    (G,) = torch.autograd.grad(task.loss(W), (W,))
    W_dot = (-eta * gq) @ W_k.detach().T + W_q.detach() @ (-eta * gk).T
    return W_dot, G


def _array(x) -> np.ndarray:
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def relative_deviation(reference, other) -> float:
    """max |other − reference| / max |reference|, entrywise over all axes: how far ``other`` is from
    ``reference`` relative to the reference's largest entry. Works on one state (d, d) — a rate of
    Lemma 1 against autograd — and on whole trajectories (n_times, d, d) — one flow against another."""
    reference, other = _array(reference), _array(other)
    return float(np.abs(reference - other).max()) / float(np.abs(reference).max())


def relative_imbalance(W_q: torch.Tensor, W_k: torch.Tensor) -> float:
    """‖W_Qᵀ W_Q − W_Kᵀ W_K‖_max / ‖W_Qᵀ W_Q‖_max: zero for balanced factors, the hypothesis of item 3."""
    return float((W_q.T @ W_q - W_k.T @ W_k).abs().max()) / float((W_q.T @ W_q).abs().max())


def predicted_separation(W_q: torch.Tensor, W_k: torch.Tensor, G: torch.Tensor, eta: float, t_max: float) -> float:
    """First-order forecast, from the state at t = 0, of how far the plain collapsed flow (rate −ηG)
    drifts from the factorized one (rate of item 3) by ``t_max``, relative to the largest entry of
    W(0) = W_Q W_Kᵀ: t_max ‖Ẇ_rescaled(0) − Ẇ_plain(0)‖_max / ‖W(0)‖_max. Small when t_max is
    short or when the rescaling is close to the identity (singular values of W near 1/2)."""
    rescaled = lemma_rate(W_q, W_k, G, eta)["balanced_form"]
    return t_max * float((rescaled + eta * G).abs().max()) / float((W_q @ W_k.T).abs().max())


SEPARATION_THRESHOLD = 1e-2  # relative max deviation above which two trajectories are "different"


def separated(deviation: float) -> bool:
    """> 0.01: the relative max deviation of two trajectories exceeds :data:`SEPARATION_THRESHOLD`
    (the predicate of "the plain collapsed flow differs from the factorized one")."""
    return deviation > SEPARATION_THRESHOLD


FLOWS = ("factorized", "rescaled", "collapsed")


@dataclass
class FlowComparison(Run):
    """The three flows of Lemma 1 on the same stored times: a :class:`~attnflow.record.Run` with
    ``t`` (n_times,) and the quantities (also read as attributes)

    - ``W_factorized`` (n_times, d, d): W_Q W_Kᵀ along the factor flow;
    - ``W_rescaled`` (n_times, d, d): the collapsed flow at the rescaled rate;
    - ``W_collapsed`` (n_times, d, d): the collapsed flow at the plain rate η;
    - ``balancedness`` (n_times,): drift of W_Qᵀ W_Q − W_Kᵀ W_K (Frobenius) along the factor flow;
    - ``loss_factorized``, ``loss_rescaled``, ``loss_collapsed`` (n_times,): the loss of each flow
      (``loss`` reads them as a dict name -> (n_times,)).
    """

    nfev: dict[str, int]  # right-hand-side evaluations of each flow

    W_factorized = property(lambda self: self.quantities["W_factorized"])
    W_rescaled = property(lambda self: self.quantities["W_rescaled"])
    W_collapsed = property(lambda self: self.quantities["W_collapsed"])
    balancedness = property(lambda self: self.quantities["balancedness"])

    @property
    def loss(self) -> dict[str, np.ndarray]:
        """Flow name -> its loss (n_times,)."""
        return {name: self.quantities[f"loss_{name}"] for name in FLOWS}


def compare_flows(
    task: PointerTask,
    W_q0: torch.Tensor,
    W_k0: torch.Tensor,
    eta: float,
    t_max: float,
    n_times: int,
    rtol: float = 1e-10,
) -> FlowComparison:
    """Integrate the factor flow, the rescaled collapsed flow and the plain collapsed flow."""
    start = time.perf_counter()
    t_eval = np.linspace(0.0, t_max, n_times)
    atol = rtol * 1e-2
    fact = flow.integrate(
        lambda th: task.loss(th["W_q"] @ th["W_k"].T),
        {"W_q": W_q0, "W_k": W_k0},
        t_eval,
        lr=eta,
        method="LSODA",
        rtol=rtol,
        atol=atol,
    )
    Wq, Wk = fact.states()["W_q"], fact.states()["W_k"]  # (n, d, d_h)
    W_fact = Wq @ Wk.transpose(1, 2)  # (n, d, d)
    imbalance = Wq.transpose(1, 2) @ Wq - Wk.transpose(1, 2) @ Wk  # (n, d_h, d_h)

    d = W_q0.shape[0]
    W0 = (W_q0 @ W_k0.T).reshape(-1)

    def rescaled_rhs(t, y):
        W = torch.from_numpy(y).reshape(d, d).requires_grad_(True)
        (G,) = torch.autograd.grad(task.loss(W), (W,))
        Wd = W.detach()
        return (-eta * (psd_sqrt(Wd @ Wd.T) @ G + G @ psd_sqrt(Wd.T @ Wd))).reshape(-1).numpy()

    resc = flow.solve(rescaled_rhs, W0.numpy(), t_eval, method="LSODA", rtol=rtol, atol=atol)
    coll = flow.integrate(
        lambda th: task.loss(th["W"]), {"W": W_q0 @ W_k0.T}, t_eval, lr=eta, method="LSODA", rtol=rtol, atol=atol
    )
    W_resc = resc.y.reshape(-1, d, d)
    W_coll = coll.states()["W"].numpy()
    with torch.no_grad():
        losses = {
            name: np.array([float(task.loss(torch.from_numpy(np.ascontiguousarray(w)))) for w in Ws])
            for name, Ws in (("factorized", W_fact.numpy()), ("rescaled", W_resc), ("collapsed", W_coll))
        }
    quantities = {
        "W_factorized": W_fact.numpy(),
        "W_rescaled": W_resc,
        "W_collapsed": W_coll,
        "balancedness": torch.linalg.matrix_norm(imbalance - imbalance[0]).numpy(),
        **{f"loss_{name}": losses[name] for name in FLOWS},
    }
    return FlowComparison(
        t=t_eval,
        quantities=quantities,
        wall_s=time.perf_counter() - start,
        meta=dict(eta=eta, t_max=t_max, rtol=rtol, atol=atol, method="LSODA"),
        nfev={"factorized": fact.nfev, "rescaled": resc.nfev, "collapsed": coll.nfev},
    )


def attention_loss(b: torch.Tensor, n_compete: int = 9) -> torch.Tensor:
    """−log p(b), p = e^b/(e^b + n): the attention loss of one distinct token among n others."""
    return torch.nn.functional.softplus(np.log(n_compete) - b)


def scalar_flows(imbalance: float, eta: float, t_max: float, n_times: int, b0: float = 0.1, rtol: float = 1e-10) -> Run:
    """Scalar case: b = qk from the (q, k) flow vs db/dt = −η√(4b²+δ²) L'(b), same δ and b0; a
    :class:`~attnflow.record.Run` with the quantities ``b_factorized``, ``b_rescaled`` and
    ``imbalance_drift`` (q² − k² − δ along the factor flow), each (n_times,) (``run["t"]`` the times)."""
    start = time.perf_counter()
    if imbalance < 0:
        raise ParameterError(f"imbalance δ must be ≥ 0 here (k ≤ q), received {imbalance}")
    # q² − k² = δ and qk = b0  →  q² = (δ + √(δ² + 4 b0²))/2
    q0 = np.sqrt((imbalance + np.sqrt(imbalance**2 + 4 * b0**2)) / 2)
    k0 = b0 / q0
    t_eval = np.linspace(0.0, t_max, n_times)
    fac = flow.integrate(
        lambda th: attention_loss(th["q"] * th["k"]),
        {"q": torch.tensor(q0), "k": torch.tensor(k0)},
        t_eval,
        lr=eta,
        rtol=rtol,
        atol=rtol * 1e-2,
    )
    st = fac.states()
    b_fac = (st["q"] * st["k"]).numpy()

    def rhs(t, y):
        b = torch.tensor(y[0], requires_grad=True)
        (dL,) = torch.autograd.grad(attention_loss(b), (b,))
        return np.array([-eta * np.sqrt(4 * y[0] ** 2 + imbalance**2) * float(dL)])

    red = flow.solve(rhs, np.array([b0]), t_eval, rtol=rtol, atol=rtol * 1e-2)
    drift = (st["q"] ** 2 - st["k"] ** 2).numpy() - imbalance
    return Run(
        t=t_eval,
        quantities={"b_factorized": b_fac, "b_rescaled": red.y[:, 0], "imbalance_drift": drift},
        wall_s=time.perf_counter() - start,
        meta=dict(imbalance=imbalance, eta=eta, t_max=t_max, b0=b0, rtol=rtol),
    )


def max_deviation(runs, name: str, reference: str | None = None) -> float:
    """The largest |run[name] − run[reference]| (|run[name]| without ``reference``) over the runs of
    ``runs`` (an iterable of :class:`~attnflow.record.Run`, or a mapping whose values are runs) and
    over their stored times: e.g. ``max_deviation(scalar_runs, "b_factorized", "b_rescaled")``."""
    runs = list(runs.values()) if hasattr(runs, "values") else list(runs)
    if not runs:
        raise ValueError("max_deviation: received no runs")
    gaps = [np.abs(r[name] - r[reference]) if reference else np.abs(r[name]) for r in runs]
    return max(float(g.max()) for g in gaps)
