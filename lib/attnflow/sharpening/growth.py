"""Theorem 4 measured: fitted growth rates of a long reduced trajectory against the laws.

Rates [paper]; constants [reconstruction] (claims A4, A5, A13; open question Q1). All fits are
least squares over the window [fit_from, horizon] of a :class:`~attnflow.sharpening.reduced.ReducedRun`
(log-spaced times, so every decade weighs the same):

- OV: the margin u = a p against L = log t. The law (dominant balance, ``symbolic.growth_laws``)
  is u = log(C + (K−1)η_OV t) for collapsed OV (sympy's exact solution; C fixed at the window
  start, since the transient leaves C ≈ −50, visible as −C/((K−1)t) at t = 10⁴) and
  log t + log log t + log(2(K−1)η_OV) for factorized OV, so du/dL → 1 (and 1 + 1/L for FO). We use u rather than a because the
  laws are statements about the correct-class margin (1 − s ≈ (K−1)e^{−u}); a = u/p → u as p → 1.
- QK: the attention odds eᵇ/n against L²; for CACO the law e^b/n ≈ (r/2)·u_law² makes the
  finite-time slope (r/2)·d(u_law²)/d(L²), which tends to r/2 (the asymptote of A13).
- Q1: b against log L; the law b ≈ log(rn/2) + 2 log u_law.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnflow.sharpening.reduced import ReducedRun

__all__ = ["GrowthFit", "fit_growth"]


def _slope(x: np.ndarray, y: np.ndarray) -> float:
    return float(np.polyfit(x, y, 1)[0])


@dataclass
class GrowthFit:
    """Fitted and predicted growth rates of one trajectory over [fit_from, horizon]."""

    parametrization: str
    lr_ratio: float
    window: tuple[float, float]
    u_slope: float              # fitted du/d log t
    u_slope_law: float          # same fit applied to the law u_law(t)
    u_offset_end: float         # u(horizon) − u_law(horizon)
    odds_slope: float           # fitted d(eᵇ/n)/d(log² t)
    odds_slope_law: float       # (r/2)·d(u_law²)/d(log² t)  (CACO law; → r/2)
    b_loglog_slope: float       # fitted db/d(log log t)
    b_loglog_slope_law: float   # same fit applied to log(rn/2) + 2 log u_law (CACO law)
    odds_over_law_in_a: np.ndarray   # (3,) odds / odds_law_in_a(a, b) at the window start, middle, end
    times: np.ndarray           # (3,) the times of those ratios


def fit_growth(run: ReducedRun, fit_from: float) -> GrowthFit:
    """Fit the growth laws of Theorem 4 on the window [fit_from, horizon] of ``run``."""
    s = run.system
    t_end = float(run.t[-1])
    if not 1.0 < fit_from < t_end:
        raise ValueError(f"parameter 'fit_from': received {fit_from:g}; allowed: 1 < fit_from < horizon = {t_end:g}")
    w = run.t >= fit_from
    t = run.t[w]                                   # (m,) window times
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
    return GrowthFit(
        parametrization=s.parametrization, lr_ratio=s.lr_ratio, window=(float(t[0]), t_end),
        u_slope=_slope(L, u), u_slope_law=_slope(L, u_law), u_offset_end=float(u[-1] - u_law[-1]),
        odds_slope=_slope(L**2, run.odds[w]), odds_slope_law=s.lr_ratio / 2 * _slope(L**2, u_law**2),
        b_loglog_slope=_slope(np.log(L), run.b[w]), b_loglog_slope_law=_slope(np.log(L), b_law),
        odds_over_law_in_a=ratios, times=t[idx],
    )
