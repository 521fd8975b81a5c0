"""Direction claims on paired seeds: "the change has the predicted sign in every seed".

A paired comparison (same seed: same data and initial weights, only one setting differs) is a
claim about the *sign* of a per-seed change. On 3–5 seeds a Student-t interval of a
heterogeneous but consistently signed change is wide (t₀.₉₇₅,₂ = 4.3) and often reaches 0 even
when every seed agrees, so these claims are checked on the **fraction of seeds** with the
predicted sign (``stats.fraction``, Wilson interval recorded) and require all of them; claims
on a *value* (a spec target, a level such as 0.8) use ``claims.check_mean``.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = ["every_seed"]


def every_seed(claim_id: str, changes: Sequence[float], *, what: str, sign: int = 1, source: str = "reconstruction",
               domain=None, errata: str | None = None) -> bool | None:
    """Check that every per-seed ``changes`` value is > 0 (``sign=1``) or < 0 (``sign=-1``);
    the record keeps k/n and its Wilson 95% interval. A NaN change fails (non-finite)."""
    from attnflow import claims, stats

    v = np.asarray(changes, dtype=float).ravel()
    flags = sign * v > 0
    fr = stats.fraction(flags) if v.size else None
    word = "> 0" if sign > 0 else "< 0"
    tol = f"{word} in every seed; {fr}" if fr is not None else f"{word} in every seed"
    return claims.check(claim_id, v.tolist(), predicate=lambda x: len(x) > 0 and all(sign * a > 0 for a in x),
                        tolerance=tol, what=what + " (per seed)", source=source, domain=domain, errata=errata)
