"""Exercises on book pages, in nbgrader's conventions (issue: readers and teachers).

A page marks an exercise with a markdown cell that states the task (starting with
``**Exercise**``) and a code cell tagged ``exercise`` whose answer sits between nbgrader's
markers::

    # %% tags=["exercise"]
    ### BEGIN SOLUTION
    sigma0_mine = float(np.linalg.eigvalsh(B_sym).max())
    ### END SOLUTION

    # %% tags=["exercise-check"]
    exercises.check("sigma0_mine", sigma0_mine, expected=rep.sigma0, rtol=1e-8,
                    hint="the largest eigenvalue of the symmetric part of B")

The book runs the solution. The student notebook generated from the page replaces each
solution region by ``name = ...  # YOUR CODE HERE`` (one line per name assigned in the region),
so the check cell stops with :class:`NotYet` and its hint until the student fills it in;
``check`` raises :class:`NotYet` too for an answer that is present but wrong, naming by how much.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

__all__ = ["check", "NotYet", "BEGIN", "END", "STUB"]

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
STUB = "...  # YOUR CODE HERE"


class NotYet(AssertionError):
    """An exercise answer is missing or not yet right (raised by :func:`check`)."""


def check(name: str, value: Any, expected: Any = None, *, rtol: float | None = None, atol: float | None = None,
          predicate: Callable[[Any], bool] | None = None, hint: str = "") -> bool:
    """Check an exercise answer; prints ``✔ exercise NAME`` or raises :class:`NotYet`."""
    more = f" Hint: {hint}" if hint else ""
    if value is Ellipsis or value is None:
        raise NotYet(f"not yet: `{name}` is still empty — replace the `...` in the exercise cell.{more}")
    if predicate is not None:
        if not predicate(value):
            raise NotYet(f"not yet: `{name}` = {value!r} does not meet the criterion.{more}")
    else:
        if rtol is None and atol is None:
            raise ValueError("exercises.check needs rtol/atol or a predicate")
        try:
            v = np.asarray(value, dtype=float)
            e = np.asarray(expected, dtype=float)
        except (TypeError, ValueError):
            raise NotYet(f"not yet: `{name}` should be a number or an array of numbers, got {type(value).__name__}.{more}") from None
        if v.shape != e.shape and v.size != e.size:
            raise NotYet(f"not yet: `{name}` has shape {v.shape}, expected {e.shape}.{more}")
        v = v.reshape(e.shape)
        err = np.abs(v - e)
        if not (np.all(np.isfinite(v)) and np.all(err <= (atol or 0.0) + (rtol or 0.0) * np.abs(e))):
            raise NotYet(f"not yet: `{name}` differs from the expected value by up to {float(np.nanmax(err)):.3g} "
                         f"(allowed rtol {rtol or 0:g}, atol {atol or 0:g}).{more}")
    print(f"✔ exercise {name}: correct")
    return True
