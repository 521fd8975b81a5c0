"""Gradient flow of a torch loss, integrated with scipy's adaptive (stiff-aware) solvers.

    dθ/dt = −η ⊙ ∇L(θ)

θ is a dict of named float64 tensors; η is one learning rate per parameter (a float for all,
or a dict name -> η, e.g. η_QK on the query-key factors and η_OV on the output-value ones).
The Jacobian of the right-hand side, −η ⊙ ∇²L, comes from ``torch.func.hessian`` in one call,
so implicit methods (BDF, Radau, LSODA's stiff mode) take large steps on these stiff flows
(TOOLING.md: RK45 needs 10⁷ evaluations where BDF with a Jacobian needs 6·10³).

``solve`` is the generic layer (any ODE with a numpy right-hand side): it counts evaluations,
turns NaN/inf into :class:`FlowDiverged` and solver failures into :class:`FlowError`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import numpy as np
import torch
from scipy.integrate import solve_ivp

from attnflow import claims
from attnflow.record import Run

__all__ = [
    "integrate",
    "solve",
    "FlowResult",
    "FlowError",
    "FlowDiverged",
    "Flattener",
    "agreement_tolerance",
    "agreement_domain",
]

METHODS = ("LSODA", "BDF", "Radau", "RK45", "DOP853")

AGREEMENT_FACTOR = 1e3  # two independent adaptive solutions at rtol: global error ≲ 10³·rtol of the scale
AGREEMENT_MAX = 1e-4  # above this tolerance a comparison of two solutions shows nothing


def agreement_tolerance(rtol: float) -> float:
    """Tolerance on the gap between two independent adaptive solutions of the same flow at relative
    tolerance ``rtol``, relative to the trajectory's scale: their global errors may accumulate to a few
    hundred times ``rtol`` over a horizon, so 10³·rtol."""
    return AGREEMENT_FACTOR * rtol


def agreement_domain(rtol: float) -> claims.Domain:
    """Domain of a comparison of two adaptive solutions (from the parameters): informative only when
    :func:`agreement_tolerance` ≤ 1e-4."""
    tol = agreement_tolerance(rtol)
    return claims.domain(
        (f"trajectory tolerance 10³·rtol ≤ {AGREEMENT_MAX:g}", tol <= AGREEMENT_MAX, f"10³·rtol = {tol:.2g}")
    )


class FlowError(RuntimeError):
    """The ODE solver failed (step size underflow, too many steps, bad arguments)."""


class FlowDiverged(FlowError):
    """The state or the right-hand side became NaN or infinite."""


@dataclass
class FlowResult(Run):
    """Trajectory at the requested times plus solver statistics: a :class:`~attnflow.record.Run`
    whose ``t`` are the requested times (n_times,) and whose ``quantities`` are the named parameters
    name -> (n_times, *shape) once the state has names (:meth:`named`, as ``integrate`` does), or
    the flat state ``"y"`` of a plain ODE (``solve``); ``y`` is always the flat state."""

    y: np.ndarray  # (n_times, n_state) flat state
    nfev: int  # right-hand-side evaluations
    njev: int  # Jacobian evaluations
    method: str
    t_events: list[np.ndarray] = field(default_factory=list)
    y_events: list[np.ndarray] = field(default_factory=list)
    sol: Callable | None = None  # dense output, flat state at any t
    flattener: "Flattener | None" = None

    def __post_init__(self):
        if self.flattener is not None:
            self.named(self.flattener)
        elif not self.quantities:
            self.quantities = {"y": self.y}  # (n_times, n_state)

    def named(self, flattener: "Flattener") -> "FlowResult":
        """Give the flat state its names: keeps ``flattener``; ``quantities`` become the named
        parameters name -> (n_times, *shape) (numpy views of ``y``)."""
        if "t" in flattener.layout:
            raise ValueError("a parameter named 't' would hide the flow record's time axis ('t'); rename it")
        self.flattener = flattener
        T = len(self.t)
        self.quantities = {n: self.y[:, sl].reshape(T, *shp) for n, (sl, shp) in flattener.layout.items()}
        return self

    def parameters(self) -> dict[str, torch.Tensor]:
        """Named parameters over time, name -> (n_times, *shape) (:meth:`states`)."""
        if self.flattener is None:
            raise LookupError("this flow's state has no names (flow.solve of a plain ODE); read quantity('y')")
        return self.states()

    def state(self, i: int) -> dict[str, torch.Tensor]:
        """Named parameters at the i-th requested time."""
        return self.flattener.unflatten(torch.from_numpy(self.y[i]))

    def states(self) -> dict[str, torch.Tensor]:
        """Named parameters over time: name -> (n_times, *shape)."""
        Y = torch.from_numpy(self.y)
        return {n: Y[:, sl].reshape(len(self.t), *shp) for n, (sl, shp) in self.flattener.layout.items()}


class Flattener:
    """Maps a dict of named tensors to one flat float64 vector and back."""

    def __init__(self, example: Mapping[str, torch.Tensor]):
        self.layout: dict[str, tuple[slice, tuple[int, ...]]] = {}
        i = 0
        for name, t in example.items():
            n = t.numel()
            self.layout[name] = (slice(i, i + n), tuple(t.shape))
            i += n
        self.size = i

    def flatten(self, theta: Mapping[str, torch.Tensor]) -> torch.Tensor:
        return torch.cat([theta[n].reshape(-1).to(torch.float64) for n in self.layout])

    def unflatten(self, flat: torch.Tensor) -> dict[str, torch.Tensor]:
        return {n: flat[sl].reshape(shp) for n, (sl, shp) in self.layout.items()}

    def rates(self, lr: float | Mapping[str, float]) -> torch.Tensor:
        """Per-coordinate learning rates η from a float or a dict name -> η."""
        if isinstance(lr, Mapping):
            missing = [n for n in self.layout if n not in lr]
            extra = [n for n in lr if n not in self.layout]
            if missing or extra:
                raise ValueError(
                    f"learning rates must name every parameter exactly: missing {missing}, unknown {extra}; "
                    f"parameters are {list(self.layout)}"
                )
            parts = [
                torch.full((sl.stop - sl.start,), float(lr[n]), dtype=torch.float64)
                for n, (sl, _) in self.layout.items()
            ]
            eta = torch.cat(parts)
        else:
            eta = torch.full((self.size,), float(lr), dtype=torch.float64)
        if not torch.all(eta > 0):
            raise ValueError(f"learning rates must be > 0, received {lr!r}")
        return eta


def solve(
    rhs: Callable[[float, np.ndarray], np.ndarray],
    y0: np.ndarray,
    t_eval: Sequence[float],
    *,
    jac: Callable[[float, np.ndarray], np.ndarray] | None = None,
    method: str = "LSODA",
    rtol: float = 1e-8,
    atol: float = 1e-10,
    events: Sequence[Callable] = (),
    dense_output: bool = False,
    t0: float = 0.0,
) -> FlowResult:
    """Integrate dy/dt = rhs(t, y) from t0 and return y at ``t_eval`` (sorted, ≥ t0)."""
    if method not in METHODS:
        raise ValueError(f"method {method!r} not one of {METHODS}")
    t_eval = np.asarray(t_eval, dtype=float)
    if t_eval.ndim != 1 or len(t_eval) == 0 or np.any(np.diff(t_eval) < 0) or t_eval[0] < t0:
        raise ValueError(f"t_eval must be a non-empty increasing sequence of times ≥ {t0}")
    if not np.all(np.isfinite(t_eval)):
        raise ValueError("t_eval must be finite")
    counter = {"f": 0, "j": 0}

    def f(t, y):
        counter["f"] += 1
        dy = rhs(t, y)
        if not np.all(np.isfinite(dy)):
            raise FlowDiverged(
                f"the flow diverged at t={t:.6g}: the right-hand side is not finite "
                f"(|y|max={np.max(np.abs(y)):.3g}); reduce the horizon or the learning rates"
            )
        return dy

    def J(t, y):
        counter["j"] += 1
        return jac(t, y)

    y0 = np.asarray(y0, dtype=float)
    if not np.all(np.isfinite(y0)):
        raise FlowDiverged("the initial state is not finite")
    start = time.perf_counter()
    kwargs = dict(method=method, t_eval=t_eval, rtol=rtol, atol=atol, dense_output=dense_output)
    if jac is not None and method in ("LSODA", "BDF", "Radau"):
        kwargs["jac"] = J
    if events:
        kwargs["events"] = list(events)
    sol = solve_ivp(f, (t0, float(t_eval[-1])), y0, **kwargs)
    wall = time.perf_counter() - start
    if sol.status < 0:
        raise FlowError(f"{method} failed: {sol.message} (reached t={sol.t[-1] if len(sol.t) else t0:.6g})")
    return FlowResult(
        t=sol.t,
        y=sol.y.T.copy(),
        nfev=counter["f"],
        njev=counter["j"],
        wall_s=wall,
        method=method,
        t_events=list(sol.t_events or []),
        y_events=list(sol.y_events or []),
        sol=sol.sol,
        meta=dict(rtol=rtol, atol=atol, t0=t0, jacobian=jac is not None),
    )


def integrate(
    loss: Callable[[dict[str, torch.Tensor]], torch.Tensor],
    theta0: Mapping[str, torch.Tensor],
    t_eval: Sequence[float],
    *,
    lr: float | Mapping[str, float] = 1.0,
    method: str = "LSODA",
    rtol: float = 1e-8,
    atol: float = 1e-10,
    jacobian: bool = True,
    events: Sequence[Callable[[float, dict[str, torch.Tensor]], float]] = (),
    dense_output: bool = False,
) -> FlowResult:
    """Gradient flow dθ/dt = −η ⊙ ∇L(θ) in float64 from ``theta0``.

    loss: maps a dict of named tensors to a scalar tensor (a population loss, for a
        deterministic flow). It must be written with torch ops (autograd and torch.func).
    events: functions (t, theta_dict) -> float whose zero crossings are recorded
        (scipy semantics; set ``.direction`` / ``.terminal`` on them as usual).
    Returns a :class:`FlowResult`; ``result.states()`` gives name -> (n_times, *shape).
    """
    theta0 = {n: torch.as_tensor(v, dtype=torch.float64) for n, v in theta0.items()}
    fl = Flattener(theta0)
    eta = fl.rates(lr)

    def flat_loss(v: torch.Tensor) -> torch.Tensor:
        return loss(fl.unflatten(v))

    grad_fn = torch.func.grad(flat_loss)
    hess_fn = torch.func.hessian(flat_loss)

    def rhs(t, y):
        with torch.no_grad():
            g = grad_fn(torch.from_numpy(y))
        return (-eta * g).numpy()

    def jac(t, y):
        H = hess_fn(torch.from_numpy(y))
        return (-eta[:, None] * H).numpy()

    wrapped = []
    for ev in events:

        def w(t, y, ev=ev):
            return float(ev(t, fl.unflatten(torch.from_numpy(y))))

        for attr in ("terminal", "direction"):
            if hasattr(ev, attr):
                setattr(w, attr, getattr(ev, attr))
        wrapped.append(w)

    res = solve(
        rhs,
        fl.flatten(theta0).numpy(),
        t_eval,
        jac=jac if jacobian else None,
        method=method,
        rtol=rtol,
        atol=atol,
        events=wrapped,
        dense_output=dense_output,
    )
    return res.named(fl)


def loss_along(result: FlowResult, loss: Callable[[dict[str, torch.Tensor]], torch.Tensor]) -> np.ndarray:
    """The loss at every stored time of a flow (n_times,)."""
    with torch.no_grad():
        return np.array([float(loss(result.state(i))) for i in range(len(result.t))])
