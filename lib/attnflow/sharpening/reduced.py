"""The reduced (a, b) dynamics of the four parametrizations (spec §5.2, §6).

[reconstruction] of Proposition 2, Theorem 3 and Theorem 4. With p(b) = eᵇ/(eᵇ + n) the
attention mass on the distinct token, s = e^{ap}/(e^{ap} + K − 1) the correct-class probability
and g = 1 − s:

    da/dt = η_OV ρ_OV(a) p g,        ρ_OV = 1 (CO) or √(4a² + δ_OV²) (FO; 2|a| balanced),
    db/dt = η_QK ρ_QK(b) a p(1−p) g, ρ_QK = 1 (CA) or 2|b| (FA, balanced).

Theorem 3: Ψ(b) − r Φ(a) is constant, r = η_QK/η_OV, with Φ = ∫ a/ρ_OV da and
Ψ = ∫ db/(ρ_QK (1 − p)) in closed form (the exponential integral Ei for factorized QK).

The right-hand side is in closed form on floats (:meth:`ReducedSystem.rhs`, numerically stable
through sigmoids, so g and 1 − p never cancel) with its analytic Jacobian
(:meth:`ReducedSystem.jacobian`); :meth:`ReducedSystem.rhs_torch` is the same formula in torch,
whose ``torch.func.jacfwd`` the Jacobian is tested against (tests/test_sharpening_reduced.py). On a
2-dim state torch's per-call cost was 90 % of a solve (issue 23: 12× slower than plain scipy).
:func:`solve` integrates it with ``attnflow.flow.solve`` — by default in log time τ = log(1 + t), where the slow
logarithmic growth takes evenly sized steps up to t = 10⁶ and beyond. :func:`solve_grid` runs a
grid of parametrizations and ratios; the drift of Ψ − rΦ along a run (:meth:`ReducedRun.drift`,
over a window :meth:`ReducedRun.drift_until`, relative to the solver's tolerance times the size of
the potentials :meth:`ReducedRun.relative_drift`) measures Theorem 3, :func:`largest_drift` and
:func:`drift_rows` read it over the grid. :func:`attention_at_loss` is the attention p when the loss
first falls to a matched value, the reduced ODE's side of a comparison at matched loss.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np
import torch
from scipy.special import expi

from attnflow import flow
from attnflow.params import ParameterError
from attnflow.record import Run, series
from attnflow.sharpening.model import circuits

LOG_FLOAT_MAX = math.log(np.finfo(np.float64).max)  # ≈ 709.78


def _sigmoid(x: float) -> float:
    """1/(1 + e^{−x}) on a float without overflow."""
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


class HorizonError(ParameterError):
    """The requested horizon would overflow float64 (e^a or e^b beyond ≈ 1.8e308)."""


@dataclass(frozen=True)
class ReducedSystem:
    """One reduced system: a parametrization with its learning rates, n and K."""

    parametrization: str  # CACO, CAFO, FACO, FAFO
    lr_ratio: float = 1.0  # r = η_QK/η_OV (> 0)
    n_compete: int = 9  # n, non-distinct positions in the softmax
    n_classes: int = 5  # K
    lr_ov: float = 1.0  # η_OV (time unit)
    imbalance_ov: float = 0.0  # δ_OV = o² − v² of an unbalanced (scalar) factorized OV pair

    def __post_init__(self):
        circuits(self.parametrization)
        for name, ok, allowed in (
            ("lr_ratio", math.isfinite(self.lr_ratio) and self.lr_ratio > 0, "a finite number > 0"),
            ("lr_ov", math.isfinite(self.lr_ov) and self.lr_ov > 0, "a finite number > 0"),
            ("n_compete", isinstance(self.n_compete, int) and self.n_compete >= 1, "an integer ≥ 1"),
            ("n_classes", isinstance(self.n_classes, int) and self.n_classes >= 2, "an integer ≥ 2"),
            ("imbalance_ov", math.isfinite(self.imbalance_ov), "a finite number"),
        ):
            if not ok:
                raise ParameterError(f"parameter {name!r}: received {getattr(self, name)!r}; allowed: {allowed}")

    @property
    def factorized_qk(self) -> bool:
        return circuits(self.parametrization)[0]

    @property
    def factorized_ov(self) -> bool:
        return circuits(self.parametrization)[1]

    @property
    def lr_qk(self) -> float:
        return self.lr_ratio * self.lr_ov

    # -- the model -------------------------------------------------------------------------------
    def attention(self, b):
        """p(b) = eᵇ/(eᵇ + n), torch or numpy."""
        lib = torch if torch.is_tensor(b) else np
        return 1.0 / (1.0 + self.n_compete * lib.exp(-b))

    def p_correct(self, a, b):
        """s = e^u/(e^u + K − 1), u = a p(b)."""
        lib = torch if torch.is_tensor(a) else np
        return 1.0 / (1.0 + (self.n_classes - 1) * lib.exp(-a * self.attention(b)))

    def loss(self, a, b):
        """L(a, b) = −log s (torch, differentiable)."""
        return torch.nn.functional.softplus(math.log(self.n_classes - 1) - a * self.attention(b))

    def rhs(self, a: float, b: float) -> tuple[float, float]:
        """(da/dt, db/dt) at one state (a, b), floats; Proposition 2 in closed form (the solver's
        right-hand side; the formula of :meth:`rhs_torch`)."""
        return self._rates(a, b)[:2]

    def jacobian(self, a: float, b: float) -> np.ndarray:
        """∂(da/dt, db/dt)/∂(a, b) at one state, (2, 2), analytic: with q = 1 − p and s = 1 − g,
        ∂p/∂b = pq, ∂g/∂a = −gsp, ∂g/∂b = −gs·apq, ρ'_OV = 4a/ρ_OV (FO), ρ'_QK = 2 sign b (FA)."""
        da, db, p, q, g, s, rho_ov, rho_qk = self._rates(a, b)
        d_rho_ov = 4 * a / rho_ov if self.factorized_ov else 0.0
        d_rho_qk = math.copysign(2.0, b) if self.factorized_qk else 0.0
        c_ov, c_qk = self.lr_ov * p * g, self.lr_qk * p * q * g
        return np.array(
            [
                [c_ov * (d_rho_ov - rho_ov * s * p), c_ov * rho_ov * q * (1 - s * a * p)],
                [c_qk * rho_qk * (1 - s * a * p), c_qk * a * (d_rho_qk + rho_qk * (q - p - s * a * p * q))],
            ]
        )

    def _rates(self, a: float, b: float) -> tuple:
        """da, db and the pieces of the Jacobian: p, q = 1 − p, g = 1 − s, s, ρ_OV, ρ_QK."""
        log_n = math.log(self.n_compete)
        p, q = _sigmoid(b - log_n), _sigmoid(log_n - b)
        x = math.log(self.n_classes - 1) - a * p
        g, s = _sigmoid(x), _sigmoid(-x)
        rho_ov = math.sqrt(4 * a * a + self.imbalance_ov**2) if self.factorized_ov else 1.0
        rho_qk = 2 * abs(b) if self.factorized_qk else 1.0
        return self.lr_ov * rho_ov * p * g, self.lr_qk * rho_qk * a * p * q * g, p, q, g, s, rho_ov, rho_qk

    def rhs_torch(self, y: torch.Tensor) -> torch.Tensor:
        """(da/dt, db/dt) at y = (a, b), shape (..., 2); Proposition 2."""
        a, b = y[..., 0], y[..., 1]
        log_n = math.log(self.n_compete)
        p = torch.sigmoid(b - log_n)  # attention on the distinct token
        one_minus_p = torch.sigmoid(log_n - b)
        g = torch.sigmoid(math.log(self.n_classes - 1) - a * p)  # 1 − s without cancellation
        rho_ov = torch.sqrt(4 * a**2 + self.imbalance_ov**2) if self.factorized_ov else torch.ones_like(a)
        rho_qk = 2 * b.abs() if self.factorized_qk else torch.ones_like(b)
        da = self.lr_ov * rho_ov * p * g
        db = self.lr_qk * rho_qk * a * p * one_minus_p * g
        return torch.stack([da, db], dim=-1)

    # -- Theorem 3 ----------------------------------------------------------------------------------
    def phi(self, a):
        """OV potential Φ(a) = ∫ a/ρ_OV da: a²/2 (CO), √(4a² + δ²)/4 (FO; a/2 balanced, a > 0)."""
        a = np.asarray(a, dtype=float)
        return np.sqrt(4 * a**2 + self.imbalance_ov**2) / 4 if self.factorized_ov else a**2 / 2

    def psi(self, b):
        """QK potential Ψ(b) = ∫ db/(ρ_QK(1 − p)): b + eᵇ/n (CA), ½(ln b + Ei(b)/n) (FA, b > 0)."""
        b = np.asarray(b, dtype=float)
        if self.factorized_qk:
            if np.any(b <= 0):
                raise ValueError("Ψ of a factorized QK circuit is defined for b > 0 (ln b)")
            return 0.5 * (np.log(b) + expi(b) / self.n_compete)
        return b + np.exp(b) / self.n_compete

    def invariant(self, a, b):
        """Ψ(b) − r Φ(a), constant along the flow (Theorem 3)."""
        return self.psi(b) - self.lr_ratio * self.phi(a)

    # -- Theorem 4 (leading-order laws) ---------------------------------------------------------------
    def a_law(self, t):
        """OV scalar: log((K−1)η_OV t) (CO); log t + log log t + log(2(K−1)η_OV) (FO)."""
        t = np.asarray(t, dtype=float)
        base = np.log((self.n_classes - 1) * self.lr_ov * t)
        return base + np.log(2 * np.log(t)) if self.factorized_ov else base

    def odds_law_in_a(self, a, b):
        """Attention odds eᵇ/n from Theorem 3 at large a, b: r a²/2, r a/2, r a² b, r a b."""
        a, b, r = np.asarray(a, float), np.asarray(b, float), self.lr_ratio
        phi = a / 2 if self.factorized_ov else a**2 / 2
        return 2 * r * b * phi if self.factorized_qk else r * phi

    def check_horizon(self, horizon: float) -> None:
        """HorizonError when e^a or e^b would overflow float64 by t = horizon (Theorem 4 laws)."""
        if not (math.isfinite(horizon) and horizon > 0):
            raise HorizonError(f"parameter 'horizon': received {horizon!r}; allowed: a finite number > 0")

        def log_growth(log_t: float) -> float:
            L = max(log_t, 1.0)
            a = log_t + math.log((self.n_classes - 1) * self.lr_ov) + (math.log(2 * L) if self.factorized_ov else 0.0)
            a = max(a, 1.0)
            log_odds = math.log(self.lr_ratio) + (2 * math.log(a) if not self.factorized_ov else math.log(a))
            log_odds += math.log(2 * max(math.log(max(a, math.e)), 1.0)) if self.factorized_qk else 0.0
            return max(a, log_odds + math.log(self.n_compete))

        if log_growth(math.log(max(horizon, 1.0))) > LOG_FLOAT_MAX - 10:
            lo, hi = 0.0, math.log(max(horizon, 1.0))
            for _ in range(60):
                mid = (lo + hi) / 2
                lo, hi = (mid, hi) if log_growth(mid) <= LOG_FLOAT_MAX - 10 else (lo, mid)
            raise HorizonError(
                f"parameter 'horizon': received {horizon:.3g}; by then the {self.parametrization} scalars "
                f"would exceed the float64 range (e^a or e^b > 1.8e308; Theorem 4: a ≈ log t). "
                f"Allowed: horizon ≤ {math.exp(lo):.3g}"
            )


@dataclass
class ReducedRun(Run):
    """A solved reduced trajectory with the solver's statistics and the matched-loss event: a
    :class:`~attnflow.record.Run` with ``t`` (n_times,) and the quantities ``a``, ``b`` (the
    state) and ``p``, ``s``, ``odds`` (attention on the distinct token, correct-class
    probability, attention odds eᵇ/n), each (n_times,), also read as attributes."""

    system: ReducedSystem
    nfev: int  # right-hand-side evaluations
    njev: int  # Jacobian evaluations
    method: str
    log_time: bool
    matched: float | None = None  # s level of the matched-loss event
    event: dict | None = field(default=None)  # t, a, b, p at the first s = matched

    @classmethod
    def of(cls, system: ReducedSystem, t: np.ndarray, a: np.ndarray, b: np.ndarray, **fields) -> "ReducedRun":
        """The run of ``system`` through the states (a, b) at times t, its quantities computed."""
        quantities = {
            "a": a,
            "b": b,
            "p": system.attention(b),
            "s": system.p_correct(a, b),
            "odds": np.exp(b) / system.n_compete,
        }
        return cls(system=system, t=t, quantities=quantities, **fields)

    a = series("a", "OV scalar a(t)")
    b = series("b", "QK scalar b(t)")
    p = series("p", "attention on the distinct token, p(b)")
    s = series("s", "probability of the correct class, s(a, b)")
    odds = series("odds", "attention odds eᵇ/n = p/(1 − p)")

    def drift(self) -> float:
        """max_t |(Ψ − rΦ)(t) − (Ψ − rΦ)(0)| (Theorem 3)."""
        inv = self.system.invariant(self.a, self.b)
        return float(np.max(np.abs(inv - inv[0])))

    def drift_until(self, t_max: float) -> float:
        """max |(Ψ − rΦ)(t) − (Ψ − rΦ)(0)| over the stored times t ≤ ``t_max``: the drift over a fixed
        window (e.g. the spec's horizon 10⁵) of a run that may go further; the flow up to ``t_max``
        does not depend on how far it goes."""
        sel = self.t <= t_max
        inv = self.system.invariant(self.a[sel], self.b[sel])
        return float(np.max(np.abs(inv - inv[0])))

    def potential_scale(self) -> float:
        """S = max_t (|Ψ(b)| + r|Φ(a)|): the size of the potentials, which the solver's relative
        error multiplies (Ψ'(b) ≈ Ψ amplifies an error in b)."""
        s = self.system
        return float(np.max(np.abs(s.psi(self.b)) + s.lr_ratio * np.abs(s.phi(self.a))))

    def relative_drift(self) -> float:
        """drift / (rtol · S): the drift of Ψ − rΦ in units of the solver's relative tolerance
        (``meta["rtol"]``, the one the run was solved at) times :meth:`potential_scale`."""
        return self.drift() / (self.meta["rtol"] * self.potential_scale())

    def at(self, t: float) -> dict:
        """State at a stored time (exact match required): t, a, b, p, s, odds (:meth:`row`)."""
        return self.row(t)

    def matched_event(self) -> dict:
        if self.event is None:
            raise RuntimeError(f"s never reached {self.matched} before t = {self.t[-1]:g}; extend the horizon")
        return self.event


def time_grid(horizon: float, n_times: int = 400, t_min: float = 1e-2, times=()) -> np.ndarray:
    """0, then log-spaced times from t_min to the horizon, plus any requested ``times``."""
    grid = np.concatenate(
        [[0.0], np.geomspace(min(t_min, horizon), horizon, max(n_times - 1, 1)), np.asarray(times, float), [horizon]]
    )
    return np.unique(grid[grid <= horizon])


def solve(
    system: ReducedSystem,
    horizon: float,
    *,
    a0: float = 0.1,
    b0: float = 0.1,
    n_times: int = 400,
    times=(),
    t_eval=None,
    log_time: bool = True,
    matched: float | None = 0.9,
    method: str = "LSODA",
    rtol: float = 1e-10,
    atol: float = 1e-12,
) -> ReducedRun:
    """Integrate the reduced ODE from (a0, b0) to ``horizon`` (adaptive, closed-form right-hand side
    and Jacobian, :meth:`ReducedSystem.rhs` and :meth:`ReducedSystem.jacobian`).

    Stored times: :func:`time_grid` (log-spaced, plus ``times``), or exactly ``t_eval``.
    ``matched``: record the first time the correct-class probability s reaches this level.
    """
    system.check_horizon(horizon)
    if system.factorized_qk and b0 <= 0:
        raise ParameterError(f"parameter 'b0': a factorized QK circuit needs b0 > 0 (Ψ has ln b); received {b0}")
    if system.factorized_ov and not a0 > 0:
        raise ParameterError(
            f"parameter 'a0': a factorized OV circuit needs a0 > 0 (a = 0 is a fixed point); received {a0}"
        )
    t_eval = time_grid(horizon, n_times, times=times) if t_eval is None else np.asarray(t_eval, dtype=float)
    rates, jacobian = system.rhs, system.jacobian

    if log_time:  # τ = log(1 + t): dy/dτ = (1 + t) f(t, y)

        def f(tau, y):
            scale = 1.0 + math.expm1(tau)
            da, db = rates(*y.tolist())
            return np.array([scale * da, scale * db])

        def jac(tau, y):
            return (1.0 + math.expm1(tau)) * jacobian(*y.tolist())

        grid = np.log1p(t_eval)
    else:

        def f(t, y):
            return np.array(rates(*y.tolist()))

        def jac(t, y):
            return jacobian(*y.tolist())

        grid = t_eval
    events = []
    if matched is not None:
        log_k1 = math.log(system.n_classes - 1)

        def hit(tau, y):  # s − matched, s = σ(a p − log(K − 1))
            a, b = y.tolist()
            return _sigmoid(a * _sigmoid(b - math.log(system.n_compete)) - log_k1) - matched

        hit.direction = 1
        events = [hit]
    res = flow.solve(f, np.array([a0, b0], float), grid, jac=jac, method=method, rtol=rtol, atol=atol, events=events)
    t = np.expm1(res.t) if log_time else res.t
    event = None
    if events and len(res.t_events[0]):
        te, (ae, be) = res.t_events[0][0], res.y_events[0][0]
        event = {
            "t": float(np.expm1(te) if log_time else te),
            "a": float(ae),
            "b": float(be),
            "p": float(system.attention(be)),
            "s": float(system.p_correct(ae, be)),
        }
    return ReducedRun.of(
        system,
        t,
        res.y[:, 0],
        res.y[:, 1],
        nfev=res.nfev,
        njev=res.njev,
        wall_s=res.wall_s,
        method=method,
        log_time=log_time,
        matched=matched,
        event=event,
        meta=dict(a0=a0, b0=b0, horizon=horizon, rtol=rtol, atol=atol),
    )


def solve_grid(
    parametrizations, lr_ratios, horizon: float, *, n_compete: int = 9, n_classes: int = 5, **solve_kwargs
) -> dict[tuple[str, float], ReducedRun]:
    """:func:`solve` for every parametrization and every ratio r (parametrizations outer, ratios inner):
    {(parametrization, r): ReducedRun}. ``solve_kwargs`` (a0, b0, rtol, atol, matched, times, ...) go
    to every run."""
    return {
        (name, r): solve(ReducedSystem(name, r, n_compete, n_classes), horizon, **solve_kwargs)
        for name in parametrizations
        for r in lr_ratios
    }


def largest_drift(
    runs: dict, parametrization: str | None = None, *, ratios=None, until: float | None = None, relative: bool = False
) -> float:
    """The largest drift of Ψ − rΦ (Theorem 3) over the runs of :func:`solve_grid` of one
    ``parametrization`` (all runs when None), restricted to the ratios r in ``ratios`` when given
    (NaN when none of them was run): :meth:`ReducedRun.drift`, or its value over t ≤ ``until``
    (:meth:`ReducedRun.drift_until`), or ``relative``: :meth:`ReducedRun.relative_drift`."""
    if relative and until is not None:
        raise ValueError("largest_drift: a relative drift is read over the whole run (until=None)")
    values = [
        run.relative_drift() if relative else (run.drift() if until is None else run.drift_until(until))
        for (name, r), run in runs.items()
        if (parametrization is None or name == parametrization) and (ratios is None or r in ratios)
    ]
    return max(values, default=float("nan"))


def drift_rows(runs: dict) -> list[dict]:
    """One table row per run of :func:`solve_grid`: the end state, the drift of Ψ − rΦ, the drift
    relative to rtol·S and the solver's right-hand-side evaluations."""
    return [
        {
            "model": name,
            "r": r,
            "a(horizon)": run.a[-1],
            "b(horizon)": run.b[-1],
            "max |drift|": run.drift(),
            "drift/(rtol·S)": run.relative_drift(),
            "RHS evaluations": run.nfev,
        }
        for (name, r), run in runs.items()
    ]


def attention_at_loss(
    lr_ratios: Mapping[str, float],
    loss: float,
    *,
    n_compete: int = 9,
    n_classes: int = 5,
    a0: float = 0.1,
    b0: float = 0.1,
    horizon: float = 1e6,
    n_times: int = 200,
) -> dict[str, float]:
    """The reduced ODE's attention mass p on the distinct token when the loss first falls to ``loss``
    (correct-class probability s = e^{−loss}), for each parametrization of ``lr_ratios`` =
    {parametrization: r} from (a0, b0): {parametrization: p}. Raises when s is not reached by
    ``horizon``."""
    matched = math.exp(-loss)
    return {
        name: solve(
            ReducedSystem(name, lr_ratio=r, n_compete=n_compete, n_classes=n_classes),
            horizon,
            a0=a0,
            b0=b0,
            n_times=n_times,
            matched=matched,
        ).matched_event()["p"]
        for name, r in lr_ratios.items()
    }
