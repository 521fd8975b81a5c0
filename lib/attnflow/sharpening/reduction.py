"""From the full model to the reduced (a, b) dynamics: the invariant manifold of Proposition 2.

[reconstruction]. With orthonormal embeddings, one distinct token per class, the query not
attending to itself and a class-symmetric state, the full model's parameters live on a manifold
described by two scalars, in token coordinates (W_OV e_x and e_qᵀ W_QK e_x):

- OV: the distinct block is a·(I − 11ᵀ/K) + const·11ᵀ, common and query columns class-constant;
  a = the logit the distinct token of class c adds to class c relative to the others;
- QK: the score row is β on distinct tokens and γ on common tokens; b = σ_s (β − γ).

By class and common-token symmetry the population gradient is tangent to this manifold, and
projecting gradient flow onto it (each coordinate moves at −η ∂L/∂θ / ‖E_θ‖²) gives the reduced
ODE of spec §6 with explicit constants (derived in ``symbolic.full_model_reduction``):

    da/dt = η_OV c_OV ρ_OV(a) p g,      c_OV = 1/(K − 1),                    ρ_OV = 1 or 2|a|,
    db/dt = η_QK κ^m ρ_QK(b) a p(1−p) g, κ = σ_s √(1/K + 1/M), m = 2 (CA) or 1 (FA), ρ_QK = 1 or 2|b|.

So the full model is the spec's reduced ODE with η_OV' = c_OV η_OV and η_QK' = κ^m η_QK
(:func:`reduced_rates`; their ratio r' = η_QK'/η_OV' per parametrization: :func:`reduced_ratios`).
The factorized circuits must start balanced (:func:`init_on_manifold` builds such factors).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from attnflow.params import ParameterError
from attnflow.record import Run
from attnflow.sharpening.data import Task
from attnflow.sharpening.model import PARAMETRIZATIONS, SelfAttention, effective_circuits


@dataclass(frozen=True)
class Constants:
    """Constants of the exact reduction of the full model (Proposition 2)."""

    n_classes: int  # K
    n_compete: int  # n, positions competing with the distinct token
    c_ov: float  # OV metric factor 1/(K − 1)
    kappa: float  # QK factor σ_s √(1/K + 1/N_C), N_C = M (+1 if the query attends to itself)


def constants(task: Task, attend_self: bool = False, score_scale: float = 1.0) -> Constants:
    """The reduction constants; error when the setting has no exact two-scalar reduction."""
    if task.distinct_per_class != 1 or task.distinct_per_seq != 1:
        raise ParameterError(
            "the exact (a, b) reduction needs distinct_per_class = distinct_per_seq = 1; received "
            f"{task.distinct_per_class}, {task.distinct_per_seq}"
        )
    if task.label_noise:
        raise ParameterError(f"parameter 'label_noise': the exact reduction needs 0; received {task.label_noise}")
    if attend_self and task.n_common != task.n_common_positions:
        # The query appears once per sequence, a common token (T − 2)/M times on average: their
        # scores receive different gradients and leave the manifold unless M = T − 2.
        raise ParameterError(
            f"with attend_self=True the query score leaves the two-scalar manifold unless n_common = "
            f"seq_len − 2; received n_common={task.n_common}, seq_len={task.seq_len}"
        )
    n_c = task.n_common + int(attend_self)
    K = task.n_classes
    return Constants(K, task.n_compete(attend_self), 1.0 / (K - 1), score_scale * math.sqrt(1.0 / K + 1.0 / n_c))


def reduced_rates(parametrization: str, const: Constants, lr_qk: float, lr_ov: float) -> tuple[float, float]:
    """(η_QK', η_OV') of the spec's reduced ODE that the full model follows exactly."""
    from attnflow.sharpening.model import circuits

    fa, _ = circuits(parametrization)
    return lr_qk * const.kappa ** (1 if fa else 2), lr_ov * const.c_ov


def reduced_ratios(const: Constants, lr_qk: float, lr_ov: float, parametrizations=None) -> dict[str, float]:
    """{parametrization: r' = η_QK'/η_OV'}: the ratio of the reduced ODE that the full model trained with
    (``lr_qk``, ``lr_ov``) follows exactly (:func:`reduced_rates`); with η_QK = η_OV it is κ^m (K − 1),
    one value for collapsed and one for factorized QK. Every parametrization when None."""
    out = {}
    for name in PARAMETRIZATIONS if parametrizations is None else parametrizations:
        qk, ov = reduced_rates(name, const, lr_qk, lr_ov)
        out[name] = qk / ov
    return out


def _token_directions(task: Task, attend_self: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """u (V,) = 1_D/K − 1_C/N_C (the QK score direction of b) and P (K, K) = I − 11ᵀ/K."""
    V, K = task.vocab_size, task.n_classes
    group = task.common_ids() + ([task.query_id] if attend_self else [])
    u = torch.zeros(V, dtype=torch.float64)
    u[task.distinct_ids()] = 1.0 / K
    u[group] = -1.0 / len(group)
    P = torch.eye(K, dtype=torch.float64) - 1.0 / K  # (K, K)
    return u, P


def init_on_manifold(model: SelfAttention, task: Task, a0: float, b0: float) -> SelfAttention:
    """Symmetric (collapsed) / balanced (factorized) initial state with OV scalar a0, QK scalar b0.

    Collapsed: W_OV = a0 P e_D, W_QK = e_q wᵀ e with w = c u. Factorized: balanced factors of the
    same products — W_O = √a0 [P | 0], W_V = √a0 [P | 0]ᵀ e_D (needs d_h ≥ K), and the rank-one
    W_Q = √(|c|‖u‖) e_q v₁ᵀ, W_K = sign(c) √(|c|‖u‖) (eᵀû) v₁ᵀ, so W_Qᵀ W_Q = W_Kᵀ W_K.
    """
    cfg = model.cfg
    constants(task, cfg.attend_self, cfg.score_scale)  # validates the setting
    if model.factorized_ov and not a0 > 0:
        raise ParameterError(f"parameter 'a0': a factorized OV circuit needs a0 > 0; received {a0}")
    if model.factorized_qk and b0 == 0:
        raise ParameterError("parameter 'b0': a factorized QK circuit at b0 = 0 sits at a saddle; use b0 ≠ 0")
    if model.factorized_ov and cfg.d_h < task.n_classes:
        raise ParameterError(
            f"parameter 'd_h': balanced OV factors need d_h ≥ K = {task.n_classes}; received {cfg.d_h}"
        )
    emb = model.emb.to(torch.float64)  # (V, d)
    K, d_h = task.n_classes, cfg.d_h
    u, P = _token_directions(task, cfg.attend_self)
    e_D = emb[task.distinct_ids()]  # (K, d)
    e_q = emb[task.query_id]  # (d,)
    c = b0 / (cfg.score_scale * float(u @ u))  # w = c u gives b = σ_s c ‖u‖²
    state = {}
    if model.factorized_ov:
        U = torch.zeros(K, d_h, dtype=torch.float64)
        U[:, :K] = P  # (K, d_h), U Uᵀ = P
        state["W_o"] = math.sqrt(a0) * U  # (K, d_h)
        state["W_v"] = math.sqrt(a0) * U.T @ e_D  # (d_h, d)
    else:
        state["W_ov"] = a0 * P @ e_D  # (K, d)
    if model.factorized_qk:
        s = math.sqrt(abs(c) * float(u.norm()))
        v1 = torch.zeros(d_h, dtype=torch.float64)
        v1[0] = 1.0
        state["W_q"] = s * torch.outer(e_q, v1)  # (d, d_h)
        state["W_k"] = math.copysign(s, c) * torch.outer(emb.T @ (u / u.norm()), v1)  # (d, d_h)
    else:
        state["W_qk"] = c * torch.outer(e_q, emb.T @ u)  # (d, d)
    return model.load({k: v.to(cfg.dtype) for k, v in state.items()})


def coordinates(model: SelfAttention, task: Task, theta: dict[str, torch.Tensor] | None = None):
    """(a, b, residual) of a state, batched over leading dims (e.g. ``FlowResult.states()``).

    a, b: the OV and QK scalars (least-squares projection on the manifold); residual: the
    largest distance of any token-coordinate entry from the manifold (0 on it).
    """
    theta = model.state() if theta is None else theta
    emb = model.emb.to(torch.float64)  # (V, d)
    W_qk, W_ov = effective_circuits(theta)  # (..., d, d), (..., K, d)
    W_qk, W_ov = W_qk.to(torch.float64), W_ov.to(torch.float64)
    w = emb[task.query_id] @ W_qk @ emb.T  # (..., V) scores of each token
    W_tok = W_ov @ emb.T  # (..., K, V) logit of each token
    D, C = task.distinct_ids(), task.common_ids() + ([task.query_id] if model.cfg.attend_self else [])
    K = task.n_classes
    A = W_tok[..., :, D]  # (..., K, K) distinct block
    eye = torch.eye(K, dtype=torch.bool)
    diag = A[..., eye].reshape(*A.shape[:-2], K)  # (..., K)
    off = A[..., ~eye].reshape(*A.shape[:-2], K * (K - 1))  # (..., K(K−1))
    alpha, alpha_off = diag.mean(-1), off.mean(-1)
    a = alpha - alpha_off
    b = model.cfg.score_scale * (w[..., D].mean(-1) - w[..., C].mean(-1))
    others = [i for i in range(task.vocab_size) if i not in D]
    rest = W_tok[..., :, others]  # (..., K, V − K)
    dev = [
        (diag - alpha[..., None]).abs().amax(-1),
        (off - alpha_off[..., None]).abs().amax(-1),
        (rest - rest.mean(-2, keepdim=True)).abs().amax((-1, -2)),  # class-constant columns are harmless
        (w[..., D] - w[..., D].mean(-1, keepdim=True)).abs().amax(-1),
        (w[..., C] - w[..., C].mean(-1, keepdim=True)).abs().amax(-1),
    ]
    return a, b, torch.stack(dev).amax(0)


@dataclass
class Comparison(Run):
    """Full-model gradient flow vs the reduced ODE it should follow exactly (Proposition 2): a
    :class:`~attnflow.record.Run` on the stored times ``t`` (n_times,) whose quantities, each
    (n_times,), are ``a_full``, ``b_full`` (the OV and QK scalars of the full model), ``residual``
    (the full state's distance from the manifold) and ``a_reduced``, ``b_reduced`` (the reduced ODE
    with the mapped rates), also read as attributes; ``wall_s`` is the full model's flow."""

    parametrization: str
    lr_ratio_reduced: float  # r' = η_QK'/η_OV' of the equivalent reduced system
    nfev: int  # full-model gradient evaluations
    njev: int  # full-model Hessian evaluations

    a_full = property(lambda self: self.quantities["a_full"])
    b_full = property(lambda self: self.quantities["b_full"])
    residual = property(lambda self: self.quantities["residual"])
    a_reduced = property(lambda self: self.quantities["a_reduced"])
    b_reduced = property(lambda self: self.quantities["b_reduced"])

    @property
    def scale(self) -> float:
        """The trajectory's scale: the largest |a|, |b| of the reduced ODE."""
        return float(max(np.abs(self.a_reduced).max(), np.abs(self.b_reduced).max()))

    @property
    def deviation(self) -> float:
        """max over t of |Δa|, |Δb| between the full model and the reduced ODE, relative to :attr:`scale`."""
        gap = max(np.abs(self.a_full - self.a_reduced).max(), np.abs(self.b_full - self.b_reduced).max())
        return float(gap / self.scale)

    @property
    def off_manifold(self) -> float:
        """The full state's largest distance from the two-scalar manifold along the flow."""
        return float(self.residual.max())

    def row(self) -> dict:
        """One table row: the reduced ratio, the end point, the two errors and the cost."""
        return {
            "model": self.parametrization,
            "r' (reduced)": self.lr_ratio_reduced,
            "a(t_max)": self.a_full[-1],
            "b(t_max)": self.b_full[-1],
            "max |Δ|/scale": self.deviation,
            "max residual": self.off_manifold,
            "gradient evals": self.nfev,
            "seconds": self.wall_s,
        }


def compare_with_reduced(
    parametrization: str,
    task: Task,
    *,
    lr_qk: float,
    lr_ov: float = 1.0,
    a0: float = 0.1,
    b0: float = 0.1,
    t_max: float = 400.0,
    n_times: int = 41,
    d_h: int | None = None,
    embedding_seed: int | None = None,
    rtol: float = 1e-9,
) -> Comparison:
    """Integrate the full model's population gradient flow (float64, LSODA + autograd Hessian)
    from the manifold and the reduced ODE with :func:`reduced_rates`; return both."""
    from attnflow import flow
    from attnflow.sharpening.data import population
    from attnflow.sharpening.model import ModelConfig
    from attnflow.sharpening.reduced import ReducedSystem, solve

    model = SelfAttention(
        ModelConfig(parametrization, task.vocab_size, task.n_classes, d_h=d_h, embedding_seed=embedding_seed)
    )
    init_on_manifold(model, task, a0, b0)
    const = constants(task)
    t_eval = np.linspace(0.0, t_max, n_times)
    res = flow.integrate(
        model.functional_loss(population(task)),
        model.state(),
        t_eval,
        lr=model.rates(lr_qk, lr_ov),
        rtol=rtol,
        atol=rtol * 1e-2,
    )
    a, b, residual = coordinates(model, task, res.states())
    qk, ov = reduced_rates(parametrization, const, lr_qk, lr_ov)
    system = ReducedSystem(parametrization, qk / ov, const.n_compete, const.n_classes, lr_ov=ov)
    red = solve(
        system, t_max, a0=a0, b0=b0, t_eval=t_eval, log_time=False, matched=None, rtol=rtol * 0.1, atol=rtol * 1e-3
    )
    quantities = {
        "a_full": a.numpy(),
        "b_full": b.numpy(),
        "residual": residual.numpy(),
        "a_reduced": red.a,
        "b_reduced": red.b,
    }
    return Comparison(
        t=t_eval,
        quantities=quantities,
        wall_s=res.wall_s,
        parametrization=parametrization,
        lr_ratio_reduced=qk / ov,
        nfev=res.nfev,
        njev=res.njev,
        meta=dict(lr_qk=lr_qk, lr_ov=lr_ov, a0=a0, b0=b0, t_max=t_max, rtol=rtol),
    )


@dataclass
class DiscreteRun(Run):
    """Full-batch GD on the full model (population loss), read in reduced coordinates: a
    :class:`~attnflow.record.Run` on the model times ``t`` = k h (n_steps + 1,) whose quantities
    ``a``, ``b`` and ``invariant`` (Ψ(b) − r'Φ(a) of the equivalent reduced system), each
    (n_steps + 1,), are also read as attributes."""

    parametrization: str
    step: float  # h: θ ← θ − h η ⊙ ∇L, model time t = k h
    drift: float  # max |invariant − invariant[0]|

    a = property(lambda self: self.quantities["a"])
    b = property(lambda self: self.quantities["b"])
    invariant = property(lambda self: self.quantities["invariant"])


def gd_on_manifold(
    parametrization: str,
    task: Task,
    *,
    lr_qk: float,
    lr_ov: float = 1.0,
    step: float,
    t_max: float,
    a0: float = 0.1,
    b0: float = 0.1,
) -> DiscreteRun:
    """Discrete GD of the torch model from the manifold (the batched engine ``attnflow.sweep.train``
    with one model, lr = h·η per circuit: torch's GD bit for bit); the drift of the Theorem 3
    invariant measures the discretization error (claim A3)."""
    from attnflow import sweep
    from attnflow.sharpening.data import population
    from attnflow.sharpening.model import ModelConfig
    from attnflow.sharpening.reduced import ReducedSystem

    n_steps = int(round(t_max / step))
    if n_steps < 1:
        raise ParameterError(f"parameter 'step': {step} is longer than the horizon t_max={t_max}")
    model = init_on_manifold(SelfAttention(ModelConfig(parametrization, task.vocab_size, task.n_classes)), task, a0, b0)
    loss = model.functional_loss(population(task))
    one = torch.zeros(1, dtype=torch.long)
    tensors = {
        n: sweep.Stacked(
            p.detach()[None], one, torch.tensor([step * (lr_qk if n in model.qk_names else lr_ov)], dtype=torch.float64)
        )
        for n, p in model.named_parameters()
    }  # one model: (1, ...) each

    def objective(params, _sample, _models):
        return loss({n: v[0] for n, v in params.items()}).reshape(1), {}

    def record(_step: int, params) -> dict:
        a, b, _ = coordinates(model, task, {n: v[0] for n, v in params.items()})
        return {"a": float(a), "b": float(b)}

    run = sweep.train(
        objective,
        tensors,
        1,
        optimizer="gd",
        steps=n_steps,
        record_every=1,
        record=record,
        labels=[parametrization],
        cpu_threads=None,
        desc=f"GD {parametrization} h={step:g}",
    )
    const = constants(task)
    qk, ov = reduced_rates(parametrization, const, lr_qk, lr_ov)
    system = ReducedSystem(parametrization, qk / ov, const.n_compete, const.n_classes, lr_ov=ov)
    a, b = np.asarray(run.records["a"]), np.asarray(run.records["b"])
    inv = system.invariant(a, b)
    return DiscreteRun(
        t=run.steps * step,
        quantities={"a": a, "b": b, "invariant": inv},
        wall_s=run.wall_s,
        meta=dict(lr_qk=lr_qk, lr_ov=lr_ov, a0=a0, b0=b0, t_max=t_max),
        parametrization=parametrization,
        step=step,
        drift=float(np.abs(inv - inv[0]).max()),
    )


def curvature_on_manifold(
    parametrization: str, task: Task, *, lr_qk: float, lr_ov: float = 1.0, a: float, b: float
) -> float:
    """λ_max of D^{1/2} H D^{1/2} at the manifold point (a, b): H the Hessian of the population loss,
    D the per-parameter learning rates. GD θ ← θ − h D ∇L is stable near that point when h λ_max < 2
    (the stability limit of the explicit Euler step), and its O(h²) error is small when h λ_max ≪ 1."""
    from attnflow import flow
    from attnflow.sharpening.data import population
    from attnflow.sharpening.model import ModelConfig

    model = init_on_manifold(SelfAttention(ModelConfig(parametrization, task.vocab_size, task.n_classes)), task, a, b)
    loss = model.functional_loss(population(task))
    theta = model.state()
    flat = flow.Flattener(theta)
    sqrt_rates = flat.rates(model.rates(lr_qk, lr_ov)).sqrt()  # (P,)
    H = torch.func.hessian(lambda v: loss(flat.unflatten(v)))(flat.flatten(theta))  # (P, P)
    return float(torch.linalg.eigvalsh(sqrt_rates[:, None] * H * sqrt_rates[None, :]).max())


def reduced_system(parametrization: str, task: Task, *, lr_qk: float, lr_ov: float = 1.0):
    """The spec's reduced system the full model on ``task`` follows (Proposition 2): the rates of
    :func:`reduced_rates`, n and K of :func:`constants`."""
    from attnflow.sharpening.reduced import ReducedSystem

    const = constants(task)
    qk, ov = reduced_rates(parametrization, const, lr_qk, lr_ov)
    return ReducedSystem(parametrization, qk / ov, const.n_compete, const.n_classes, lr_ov=ov)


def flow_curvature(
    parametrization: str,
    task: Task,
    *,
    lr_qk: float,
    lr_ov: float = 1.0,
    t_max: float,
    a0: float = 0.1,
    b0: float = 0.1,
    n_points: int = 3,
) -> float:
    """The largest λ_max (:func:`curvature_on_manifold`) along the gradient flow from (a0, b0), at
    ``n_points`` evenly spaced times of [0, t_max] of the flow as the reduced ODE forecasts it
    (:func:`reduced_system`). It decides the stability of a GD step h (h λ_max < 2) from the initial
    state alone, before any step is taken, not from the GD run it is the domain of."""
    from attnflow.sharpening.reduced import solve

    if n_points < 1:
        raise ValueError(f"flow_curvature: n_points must be ≥ 1, received {n_points}")
    states = [(a0, b0)]  # n_points = 1: the initial state alone
    if n_points > 1:
        system = reduced_system(parametrization, task, lr_qk=lr_qk, lr_ov=lr_ov)
        times = np.linspace(0.0, t_max, n_points)
        path = solve(system, t_max, a0=a0, b0=b0, t_eval=times, log_time=False, matched=None)
        states = list(zip(path.a, path.b))
    return max(
        curvature_on_manifold(parametrization, task, lr_qk=lr_qk, lr_ov=lr_ov, a=float(a), b=float(b))
        for a, b in states
    )


@dataclass
class StepStudy:
    """GD on the full model from one manifold point at several step sizes h (decreasing): the drift
    of the Theorem 3 invariant per step (Euler's global error, O(h)), its local order between
    consecutive steps, and ``curvature``, λ_max along the flow GD discretizes (:func:`flow_curvature`)."""

    parametrization: str
    runs: list  # DiscreteRun per step size, h decreasing
    curvature: float  # λ_max along the forecast flow

    @property
    def steps(self) -> np.ndarray:
        """The step sizes h, decreasing, (n_h,)."""
        return np.array([r.step for r in self.runs])

    @property
    def h_max(self) -> float:
        return float(self.steps[0])

    @property
    def h_min(self) -> float:
        return float(self.steps[-1])

    @property
    def drift(self) -> np.ndarray:
        """max |Ψ − r'Φ − (Ψ − r'Φ)(0)| of GD at each step size, (n_h,)."""
        return np.array([r.drift for r in self.runs])

    @property
    def local_order(self) -> np.ndarray:
        """Δ log drift / Δ log h between consecutive step sizes, (n_h − 1,): 1 for Euler's O(h)."""
        return np.diff(np.log(self.drift)) / np.diff(np.log(self.steps))

    @property
    def finest_order(self) -> float:
        """The local order between the two finest steps (the most asymptotic pair)."""
        return float(self.local_order[-1])

    def row(self) -> dict:
        """One table row: λ_max, the drift at each step, the local orders."""
        hs = self.steps
        return {
            "model": self.parametrization,
            "λ_max": self.curvature,
            **{f"drift h={h:g}": d for h, d in zip(hs, self.drift)},
            **{f"order {hs[i]:g}→{hs[i + 1]:g}": o for i, o in enumerate(self.local_order)},
        }


def gd_step_study(
    parametrization: str,
    task: Task,
    *,
    lr_qk: float,
    lr_ov: float = 1.0,
    steps,
    t_max: float,
    a0: float = 0.1,
    b0: float = 0.1,
) -> StepStudy:
    """:func:`gd_on_manifold` at every step size in ``steps`` (run from the largest down) for model time
    ``t_max``, with :func:`flow_curvature` over the same time."""
    hs = sorted(steps, reverse=True)
    runs = [
        gd_on_manifold(parametrization, task, lr_qk=lr_qk, lr_ov=lr_ov, step=h, t_max=t_max, a0=a0, b0=b0) for h in hs
    ]
    curvature = flow_curvature(parametrization, task, lr_qk=lr_qk, lr_ov=lr_ov, t_max=t_max, a0=a0, b0=b0)
    return StepStudy(parametrization, runs, curvature)


def strictly_decreasing(values) -> bool:
    """Each value below the one before it (a predicate for ``claims.check``)."""
    values = list(values)
    return all(x > y for x, y in zip(values, values[1:]))
