"""Statistics over seeds for claims about random training (DESIGN.md, principle 9).

A claim about training from random data or initialization is checked on a statistic over
several seeds run as one batch, never on one lucky seed:

    iv = stats.mean_interval(per_seed_values)          # mean with a Student-t interval
    iv.mean, iv.lo, iv.hi, iv.half_width, iv.n
    fr = stats.fraction(per_seed_flags)                # k of n with a Wilson interval

The interval's width comes from the measured seed-to-seed spread; claims then compare a target
with the interval (``claims.check_mean``), so a range measured by the spec on a few seeds is a
target for the mean, not a bound for every seed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

__all__ = [
    "Interval",
    "FractionInterval",
    "mean_interval",
    "fraction",
    "finite_mean",
    "enough_seeds",
    "MIN_SEEDS",
    "seeds_to_decide",
    "seeds_to_decide_share",
    "seeds_to_decide_fraction",
    "seeds_for_equivalence",
]

MIN_SEEDS = 3  # fewest seeds on which a seed statistic is checked (book defaults use ≥ 3)


@dataclass(frozen=True)
class Interval:
    """Mean of ``values`` with a two-sided ``level`` Student-t interval [lo, hi]."""

    values: tuple[float, ...]
    mean: float
    sd: float  # sample standard deviation (ddof = 1)
    lo: float
    hi: float
    level: float

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def half_width(self) -> float:
        return (self.hi - self.lo) / 2

    def __str__(self) -> str:
        return f"{self.mean:.4g} [{self.lo:.4g}, {self.hi:.4g}] ({self.level:.0%} t, n = {self.n})"


def _t_quantile(p: float, dof: int) -> float:
    # deferred: scipy.stats takes seconds to import, and claims (so every `attnflow` command,
    # through params) imports this module
    from scipy import stats as st

    return float(st.t.ppf(p, dof))


def finite_mean(values: Sequence[float] | np.ndarray) -> float:
    """Mean of the finite values (a seed where a stage was not detected measures NaN and is left out);
    NaN when none is finite. For a page's summary numbers; claims use :func:`mean_interval`."""
    v = np.asarray([x for x in np.asarray(values, dtype=float).ravel() if np.isfinite(x)], dtype=float)
    return float(v.mean()) if v.size else float("nan")


def mean_interval(values: Sequence[float] | np.ndarray, level: float = 0.95) -> Interval:
    """Mean with a Student-t interval; fewer than 2 values give an undefined (NaN) interval."""
    v = np.asarray(values, dtype=float).ravel()
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), received {level!r}")
    if v.size == 0:
        raise ValueError("mean_interval of no values")
    mean = float(v.mean())
    if v.size < 2 or not np.all(np.isfinite(v)):
        nan = float("nan")
        return Interval(tuple(map(float, v)), mean if np.all(np.isfinite(v)) else nan, nan, nan, nan, level)
    sd = float(v.std(ddof=1))
    half = _t_quantile(0.5 + level / 2, v.size - 1) * sd / math.sqrt(v.size)
    return Interval(tuple(map(float, v)), mean, sd, mean - half, mean + half, level)


@dataclass(frozen=True)
class FractionInterval:
    """k of n seeds with a property, with a Wilson score interval at ``level``."""

    k: int
    n: int
    lo: float
    hi: float
    level: float

    @property
    def value(self) -> float:
        return self.k / self.n if self.n else float("nan")

    def __str__(self) -> str:
        return f"{self.k}/{self.n} [{self.lo:.2f}, {self.hi:.2f}] ({self.level:.0%} Wilson)"


def fraction(flags: Sequence[Any], level: float = 0.95) -> FractionInterval:
    """Fraction of True flags with a two-sided ``level`` Wilson score interval (scipy.stats; sensible
    also at 0/n and n/n)."""
    f = np.asarray(flags, dtype=bool).ravel()
    n, k = int(f.size), int(f.sum())
    if n == 0:
        raise ValueError("fraction of no flags")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), received {level!r}")
    from scipy import stats as st  # deferred, as in _t_quantile

    ci = st.binomtest(k, n).proportion_ci(confidence_level=level, method="wilson")
    return FractionInterval(k, n, max(0.0, float(ci.low)), min(1.0, float(ci.high)), level)


def seeds_to_decide_share(above: float, level: float = 0.95) -> int:
    """The fewest seeds n for which n of n clears a one-sided ``level`` Wilson lower bound above ``above``
    (3 for a majority at 95 %): fewer seeds cannot decide "most seeds", whatever they show."""
    for n in range(1, 10_000):
        if fraction([True] * n, level=2 * level - 1).lo > above:
            return n
    raise ValueError(f"no number of seeds decides a share above {above!r}")


def seeds_to_decide_fraction(k: int, n: int, above: float, level: float = 0.95) -> int | None:
    """Seeds that would decide a share at the measured one, k/n: the smallest N ≥ n whose one-sided
    ``level`` Wilson bound at share k/n lies on one side of ``above`` (the lower bound above it when
    k/n > above, the upper below it when k/n < above); None when k/n equals ``above``."""
    p = k / n
    if p == above:
        return None
    from scipy import stats as st  # deferred, as in _t_quantile

    z = float(st.norm.ppf(level))
    for big_n in range(n, 100_000):
        centre, half = p + z * z / (2 * big_n), z * math.sqrt(p * (1 - p) / big_n + z * z / (4 * big_n * big_n))
        lo, hi = (centre - half) / (1 + z * z / big_n), (centre + half) / (1 + z * z / big_n)
        if (p > above and lo > above) or (p < above and hi < above):
            return big_n
    return None


def seeds_to_decide(iv: Interval, gap: float, level: float = 0.95) -> int | None:
    """Seeds that would decide a criterion at distance ``gap`` from the mean at the measured spread:
    the smallest n with t_{n−1}·sd/√n < gap (None when the spread or the gap is zero or undefined)."""
    if not (np.isfinite(iv.sd) and iv.sd > 0 and np.isfinite(gap) and gap > 0):
        return None
    for n in range(max(iv.n, 2), 100_000):
        if _t_quantile(0.5 + level / 2, n - 1) * iv.sd / math.sqrt(n) < gap:
            return n
    return None


def seeds_for_equivalence(sd: float, margin: float, level: float = 0.95, power: float | None = None) -> int:
    """The fewest values for an equivalence test (TOST, ``claims.check_mean(target=, margin=)``) at spread
    ``sd``. Without ``power``: the fewest for which it *can* pass, the smallest n with t_{n−1}·sd/√n < margin
    (the mean exactly on the target). With ``power`` (e.g. 0.95): the fewest for which it passes with that
    probability when the mean is on the target, the smallest n with (t_{(1+level)/2} + t_{(1+power)/2})·sd/√n
    < margin (both quantiles at n − 1 degrees of freedom; the usual TOST sample size at zero difference).
    Computed from a predicted spread (a closed form), either is a condition of the parameters."""
    if not (np.isfinite(sd) and sd > 0 and np.isfinite(margin) and margin > 0):
        raise ValueError(f"seeds_for_equivalence needs sd > 0 and margin > 0; received sd={sd!r}, margin={margin!r}")
    if power is not None and not 0 < power < 1:
        raise ValueError(f"power must be in (0, 1), received {power!r}")
    for n in range(2, 100_000):
        q = _t_quantile(0.5 + level / 2, n - 1) + (_t_quantile(0.5 + power / 2, n - 1) if power is not None else 0.0)
        if q * sd / math.sqrt(n) < margin:
            return n
    raise ValueError(f"seeds_for_equivalence: more than 100000 values needed (sd={sd:g}, margin={margin:g})")


def enough_seeds(n: int, minimum: int = MIN_SEEDS) -> tuple[str, bool, str]:
    """The domain condition of every seed statistic: at least ``minimum`` seeds."""
    return (f"at least {minimum} seeds", n >= minimum, f"{n} seed{'s' if n != 1 else ''}")
