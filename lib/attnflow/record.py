"""The one run record (issue 14: one concept, one place): what a flow or a training returns.

Every flow and every training of both papers returns a :class:`Run`, or a subclass that adds
what only it has: the gradient flows of ``attnflow.flow`` (:class:`~attnflow.flow.FlowResult`),
the batched trainings of ``attnflow.sweep`` (:class:`~attnflow.sweep.SweepRun`), the sharpening
paper's reduced ODE, manifold GD, Lemma-1 flows, sampled runs and sweeps, the focus–dilution
paper's measured flows and trained runs. A run holds

- ``t`` (T,): its time axis — flow time, or the recorded optimizer steps of a training;
- ``quantities``: named time series, name → array whose leading axis is ``t`` ((T, …), or
  (T, P, …) for a record of P models trained together);
- ``wall_s``: the wall-clock seconds it took;
- ``meta``: what produced it (settings, labels), plain values;

and every run answers the same accessors: ``run[name]`` / :meth:`Run.quantity` (``"t"`` is the
axis; an unknown name is a ``KeyError`` listing the names it has), :meth:`Run.index` (the stored
time nearest a time, or exactly a stored one), :meth:`Run.at` (the same index, the accessor the
pages use), :meth:`Run.value` (a quantity at a time), :meth:`Run.final` (a quantity where the run
ended), :meth:`Run.row` (every quantity at one stored time) and :meth:`Run.parameters` (the
model's parameters over time, for the records that keep them). Subclasses keep their historical
field names as properties over ``t`` and ``quantities``, so that every series has one place.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

import numpy as np


@dataclass(kw_only=True)
class Run:
    """A run: named time series on one time (or step) axis, its wall time and what produced it."""

    t: np.ndarray  # (T,) time or recorded step
    quantities: dict[str, np.ndarray] = field(default_factory=dict)  # name -> (T, ...) or (T, P, ...)
    wall_s: float = 0.0  # wall-clock seconds
    meta: dict = field(default_factory=dict)  # what produced it: settings, labels

    __iter__ = None  # not a sequence: ``run[name]`` reads a quantity, ``name in run`` asks for one

    @property
    def names(self) -> list[str]:
        """The names of the quantities (``"t"``, the axis, is readable too)."""
        return list(self.quantities)

    def quantity(self, name: str) -> np.ndarray:
        """The time series ``name``, leading axis ``t``; ``"t"`` is the time axis itself."""
        if name == "t":
            return self.t
        try:
            return self.quantities[name]
        except KeyError:
            raise KeyError(
                f"a {type(self).__name__} has no quantity {name!r}; it has: {', '.join(['t', *self.quantities])}"
            ) from None

    def __getitem__(self, name: str) -> np.ndarray:
        return self.quantity(name)

    def __contains__(self, name: object) -> bool:
        return name == "t" or name in self.quantities

    def index(self, time: float, exact: bool = False) -> int:
        """Index of the stored time closest to ``time``; with ``exact``, ``time`` must be a stored
        time (to a relative 1e-9), else a ``KeyError``."""
        i = int(np.argmin(np.abs(self.t - time)))
        if exact and not math.isclose(self.t[i], time, rel_tol=1e-9):
            raise KeyError(
                f"time {time:g} is not a stored time of this {type(self).__name__} "
                f"(nearest: {float(self.t[i]):g}); pass it in the times it stores"
            )
        return i

    def at(self, time: float) -> int:
        """Index of the stored time closest to ``time``."""
        return self.index(time)

    def value(self, name: str, time: float):
        """Quantity ``name`` at the stored time closest to ``time``."""
        return self.quantity(name)[self.index(time)]

    def final(self, name: str):
        """Quantity ``name`` where the run ended (its last stored time)."""
        return self.quantity(name)[-1]

    def row(self, time: float) -> dict:
        """``"t"`` and every quantity at the stored time ``time`` (exact, see :meth:`index`)."""
        i = self.index(time, exact=True)
        return {"t": self.t[i], **{n: v[i] for n, v in self.quantities.items()}}

    def parameters(self) -> dict:
        """The model's parameters over time, name → (T, *shape) tensor (records that keep them)."""
        raise LookupError(
            f"a {type(self).__name__} keeps no parameters over time; its quantities are: "
            f"{', '.join(self.quantities) or 'none'}"
        )


def fields_of(run: Run) -> dict:
    """The constructor arguments of a record (its init fields), to build a subclass that adds what
    produced it: ``Experiment(**fields_of(sweep_run), stack=...)``."""
    return {f.name: getattr(run, f.name) for f in fields(run) if f.init}


def series(name: str, doc: str = "") -> property:
    """A historical field name as a read-only view of ``quantities[name]`` (``a = series("a")`` in a
    subclass), so the series keeps one place and the old accessor keeps working."""
    return property(lambda run: run.quantities[name], doc=doc or f"``quantities[{name!r}]``")
