"""Theorem 4 measured: fitted growth rates of a long reduced trajectory against the laws.

Rates [paper]; constants [reconstruction] (claims A4, A5, A13; open question Q1). All fits are
least squares over the window [fit_from, horizon] of a :class:`~attnflow.sharpening.reduced.ReducedRun`
(log-spaced times, so every decade weighs the same):

- OV: the margin u = a p against L = log t. The law (dominant balance, ``symbolic.growth_laws``)
  is u = log(C + (K−1)η_OV t) for collapsed OV (sympy's exact solution; C fixed at the window
  start, since the transient leaves C ≈ −50, visible as −C/((K−1)t) at t = 10⁴) and
  log t + log log t + log(2(K−1)η_OV) for factorized OV, so du/dL → 1 (and 1 + 1/L for FO). We use u
  rather than a because the laws are statements about the correct-class margin (1 − s ≈ (K−1)e^{−u});
  a = u/p → u as p → 1.
- QK: the attention odds eᵇ/n against L²; for CACO the law e^b/n ≈ (r/2)·u_law² makes the
  finite-time slope (r/2)·d(u_law²)/d(L²), which tends to r/2 (the asymptote of A13).
- Q1: b against log L; the law b ≈ log(rn/2) + 2 log u_law.

Tolerances and domains of the claims (page sharpening/growth_rates), each the size of the terms a law
neglects, read off the state at the window start t_fit (:attr:`GrowthFit.start`, the state *before*
the fitted stretch, never the fitted value) or off the parameters:

- A4, OV slope (:func:`ov_slope_tolerance`): 1 − p(t_fit) (attention not yet saturated) plus
  1 − s(t_fit) (the law's g ≈ (K−1)e^{−u}); factorized OV adds the slope of the law's first neglected
  term, at most (log L0 + log 2(K−1))/L0², L0 = log t_fit. Informative (:func:`ov_slope_domain`) when
  ≤ :data:`INFORMATIVE_TOL`. Why each term: the bare law log((K−1)t) would misread the early transient's
  constant (C ≈ −50) as a slope error of a few 1e-4, hence the exact solution with C fixed at the window
  start; with 1 − p alone, FACO at r = 30 failed (its 1 − p fell to 4e-5 while the 1 − s term left a
  slope deviation of 5e-5–6e-4); with the factorized bound alone, FAFO at r = 0.3 (p = 0.88 at the
  window start) missed by 0.04.
- A5, CACO odds slope (:func:`odds_slope_tolerance`): Theorem 3 makes the odds (r/2)a² + C − b; the law
  omits −b, whose slope in log²t is a relative error 2/(r log² t_fit) (from the parameters). Domain
  (:func:`odds_slope_domain`): that error ≤ :data:`ODDS_REL_MAX` and the softmax saturated at the window
  start (:func:`saturated_domain`, p ≥ :data:`P_SATURATED`, where 1 − p ≈ n e^{−b}).
- A5, the table laws: odds / law(a, b) rises towards 1 over the window (:func:`rises_towards_one`);
  domain odds ≥ b at the window start (:func:`large_b_domain`: the laws keep the exponential part of
  Ψ, e^b/n = odds, and drop the part of size b).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from attnflow import claims
from attnflow.sharpening.reduced import ReducedRun, ReducedSystem

INFORMATIVE_TOL = 0.1  # a slope tolerance above this says nothing about the law
ODDS_REL_MAX = 0.5  # relative tolerance of the odds slope above which it says nothing
P_SATURATED = 0.9  # p at the window start for the saturated-softmax laws
STATE_KEYS = ("t", "a", "b", "p", "s", "odds")


def _slope(x: np.ndarray, y: np.ndarray) -> float:
    return float(np.polyfit(x, y, 1)[0])


@dataclass
class GrowthFit:
    """Fitted and predicted growth rates of one trajectory over [fit_from, horizon]."""

    parametrization: str
    lr_ratio: float
    window: tuple[float, float]
    u_slope: float  # fitted du/d log t
    u_slope_law: float  # same fit applied to the law u_law(t)
    u_offset_end: float  # u(horizon) − u_law(horizon)
    odds_slope: float  # fitted d(eᵇ/n)/d(log² t)
    odds_slope_law: float  # (r/2)·d(u_law²)/d(log² t)  (CACO law; → r/2)
    b_loglog_slope: float  # fitted db/d(log log t)
    b_loglog_slope_law: float  # same fit applied to log(rn/2) + 2 log u_law (CACO law)
    odds_over_law_in_a: np.ndarray  # (3,) odds / odds_law_in_a(a, b) at the window start, middle, end
    times: np.ndarray  # (3,) the times of those ratios
    fit_from: float  # the requested window start t_fit
    start: dict  # state at the stored time nearest t_fit: t, a, b, p, s, odds (the state before the fit)
    system: ReducedSystem | None = None  # the run's system (None for :func:`fit_or_nan`'s stand-in)


def fit_growth(run: ReducedRun, fit_from: float) -> GrowthFit:
    """Fit the growth laws of Theorem 4 on the window [fit_from, horizon] of ``run``."""
    s = run.system
    t_end = float(run.t[-1])
    if not 1.0 < fit_from < t_end:
        raise ValueError(f"parameter 'fit_from': received {fit_from:g}; allowed: 1 < fit_from < horizon = {t_end:g}")
    w = run.t >= fit_from
    t = run.t[w]  # (m,) window times
    L = np.log(t)
    u = (run.a * run.p)[w]
    if s.factorized_ov:
        u_law = s.a_law(t)
    else:  # the exact dominant-balance solution log(C + (K−1)η t), C fixed at the window start
        u_law = np.log(np.exp(u[0]) + (s.n_classes - 1) * s.lr_ov * (t - t[0]))
    mid = np.sqrt(fit_from * t_end)
    idx = [0, int(np.argmin(np.abs(t - mid))), len(t) - 1]
    ratios = run.odds[w][idx] / s.odds_law_in_a(run.a[w][idx], run.b[w][idx])
    b_law = np.log(s.lr_ratio * s.n_compete / 2) + 2 * np.log(u_law)
    i = run.index(fit_from)  # the stored time nearest fit_from (pass fit_from in the run's times)
    return GrowthFit(
        parametrization=s.parametrization,
        lr_ratio=s.lr_ratio,
        window=(float(t[0]), t_end),
        u_slope=_slope(L, u),
        u_slope_law=_slope(L, u_law),
        u_offset_end=float(u[-1] - u_law[-1]),
        odds_slope=_slope(L**2, run.odds[w]),
        odds_slope_law=s.lr_ratio / 2 * _slope(L**2, u_law**2),
        b_loglog_slope=_slope(np.log(L), run.b[w]),
        b_loglog_slope_law=_slope(np.log(L), b_law),
        odds_over_law_in_a=ratios,
        times=t[idx],
        fit_from=float(fit_from),
        start={k: float(run.t[i]) if k == "t" else float(run[k][i]) for k in STATE_KEYS},
        system=s,
    )


def fit_or_nan(fits: Mapping, parametrization: str, lr_ratio: float, fit_from: float) -> GrowthFit:
    """``fits[(parametrization, lr_ratio)]``, or a stand-in of NaNs when that run was not made (its
    glued numbers read nan and the domains that read its window start fail, so its claims are outside)."""
    if (parametrization, lr_ratio) in fits:
        return fits[(parametrization, lr_ratio)]
    nan = float("nan")
    slopes = ("u_slope", "u_slope_law", "u_offset_end", "odds_slope", "odds_slope_law", "b_loglog_slope")
    return GrowthFit(
        parametrization=parametrization,
        lr_ratio=lr_ratio,
        window=(float(fit_from), nan),
        **dict.fromkeys(slopes + ("b_loglog_slope_law",), nan),
        odds_over_law_in_a=np.full(3, nan),
        times=np.full(3, nan),
        fit_from=float(fit_from),
        start=dict.fromkeys(STATE_KEYS, nan),
    )


def fit_rows(runs: Mapping, fits: Mapping) -> list[dict]:
    """One table row per run: its cost, p at the window start, the end state, the fitted OV slope
    against the law's with the A4 tolerance, and odds / law(a, b) at the end of the window; ``runs`` =
    {(parametrization, r): ReducedRun}, ``fits`` = {(parametrization, r): GrowthFit} (same keys)."""
    return [
        {
            "model": name,
            "r": r,
            "RHS evals": run.nfev,
            "p(t_fit)": fits[(name, r)].start["p"],
            "a(T)": run.a[-1],
            "p(T)": run.p[-1],
            "du/dlog t": fits[(name, r)].u_slope,
            "law": fits[(name, r)].u_slope_law,
            "A4 tol": ov_slope_tolerance(fits[(name, r)]),
            "odds/law_in_a (end)": fits[(name, r)].odds_over_law_in_a[-1],
        }
        for (name, r), run in runs.items()
    ]


def odds_exponent(run: ReducedRun, fit_from: float) -> float:
    """Slope of log(odds) against log log t over [fit_from, horizon] (→ 2 for the CACO law r/2 log² t;
    a little less on a finite window)."""
    w = run.t >= fit_from
    return float(np.polyfit(np.log(np.log(run.t[w])), np.log(run.odds[w]), 1)[0])


def odds_per_log2(run: ReducedRun | None, t: float) -> float:
    """odds/log² t at the stored time ``t`` of ``run`` (the A13 quantity, → r/2 for CACO); NaN when
    there is no run (None) or the run stopped before ``t``."""
    if run is None or t > run.meta.get("horizon", run.t[-1]):
        return float("nan")
    return float(run.at(t)["odds"] / np.log(t) ** 2)


# -- tolerances and domains of the claims (module docstring) ------------------------------------------
def window_start(fit: GrowthFit) -> str:
    """What the window-start domains read: ``claims.state("window start", t=t_fit)``."""
    return claims.state("window start", t=fit.fit_from)


def ov_slope_tolerance(fit: GrowthFit) -> float:
    """A4: terms the OV law neglects, at the window start: (1 − p) + (1 − s), plus for factorized OV
    the slope bound (log L0 + log 2(K−1))/L0² of the law's first neglected term, L0 = log t_fit."""
    saturation = (1.0 - fit.start["p"]) + (1.0 - fit.start["s"])
    if fit.system.factorized_ov:
        L0 = np.log(fit.fit_from)
        return float((np.log(L0) + np.log(2 * (fit.system.n_classes - 1))) / L0**2) + saturation
    return saturation


def ov_slope_domain(fit: GrowthFit) -> claims.Domain:
    """A4 is informative where :func:`ov_slope_tolerance` ≤ :data:`INFORMATIVE_TOL` (reads the window start)."""
    tol = ov_slope_tolerance(fit)
    return claims.domain(
        (
            f"neglected terms at the window start ≤ {INFORMATIVE_TOL:g}",
            tol <= INFORMATIVE_TOL,
            f"{tol:.3g} at t = {fit.fit_from:g}",
        ),
        reads=window_start(fit),
    )


def odds_slope_tolerance(lr_ratio: float, fit_from: float) -> float:
    """A5: relative slope error 2/(r log² t_fit) of the CACO odds law, which omits −b (from the parameters)."""
    return float(2.0 / (lr_ratio * np.log(fit_from) ** 2))


def saturated_domain(fit: GrowthFit) -> claims.Domain:
    """The softmax is saturated at the window start, p ≥ :data:`P_SATURATED` (so 1 − p ≈ n e^{−b})."""
    p = fit.start["p"]
    return claims.domain(
        (f"softmax saturated at the window start: p ≥ {P_SATURATED:g}", p >= P_SATURATED, f"p = {p:.3g}"),
        reads=window_start(fit),
    )


def odds_slope_domain(fit: GrowthFit) -> claims.Domain:
    """A5 (CACO odds slope): :func:`saturated_domain` and :func:`odds_slope_tolerance` ≤ :data:`ODDS_REL_MAX`."""
    rel = odds_slope_tolerance(fit.lr_ratio, fit.fit_from)
    return saturated_domain(fit) & claims.domain(
        (f"relative error of the law 2/(r log² t_fit) ≤ {ODDS_REL_MAX:g}", rel <= ODDS_REL_MAX, f"{rel:.3g}")
    )


def large_b_domain(fit: GrowthFit) -> claims.Domain:
    """The laws of the table hold where the exponential part of Ψ dominates at the window start: odds ≥ b."""
    b, odds = fit.start["b"], fit.start["odds"]
    return claims.domain(
        ("exponential part of Ψ dominant at the window start: odds ≥ b", odds >= b, f"odds = {odds:.3g}, b = {b:.3g}"),
        reads=window_start(fit),
    )


def rises_towards_one(ratios) -> bool:
    """increasing towards 1 over the window"""
    x = list(ratios)
    return bool(x[0] < x[1] < x[2] < 1.0 + 1e-9)
