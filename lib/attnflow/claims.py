"""The claims ledger (DESIGN.md, principle 2).

Every page that shows a result checks it::

    claims.check("B12", measured=sigma0_fit, expected=sigma0, rtol=5e-3,
                 what="condensation rate sigma0", source="reconstruction")
    ...
    claims.finish()          # last cell: raises if any check on the page failed

``check`` prints a visible ✔/✘/○ line with both numbers, appends a record to the page's JSON
file in the claims folder and never raises itself, so all
checks of a page run; ``finish`` raises :class:`ClaimFailed` when one failed, which fails the
notebook and therefore the book build. The statement and provenance of each claim id come from
``claims.yml`` (the claims tables of the two specs); ``source`` says where the *expected value*
comes from.

**Where records go.** Only to an explicit folder: ``$ATTNFLOW_CLAIMS_DIR``, which the book
build sets (``attnflow_book.sphinx_ext``, to ``_build/claims``) and the runner sets (a temporary
folder, then ``<output>/<page>.claims.json``). Without it the records stay in memory
(:func:`records`): a page run in a teacher's folder or inside another Jupyter Book writes no
file. Validation (:func:`begin_page`) never writes.

**A teacher's own claims.** ``claims.register("T1", statement="...", provenance="reconstruction")``
in a page adds an id for this kernel; ``check("T1", ...)`` then works like any packaged id.

**Domains** (DESIGN.md, principle 9). A claim holds where the theory predicts it, not
everywhere a page accepts its parameters. A report states the conditions, computed from the
parameters and the state *before* it measures, never from the measured outcome::

    dom = claims.domain(("|g| ≥ 5 ε σ0", abs(g) >= 5 * eps * s0, f"|g| = {abs(g):.2g}, 5εσ0 = {5*eps*s0:.2g}"))
    claims.check("B5", measured, expected, rtol=1e-2, what="...", domain=dom)

Outside its domain the check records the verdict ``"outside"`` ("outside domain: reason"), which
is counted and listed on its own, never as a pass and never as a failure. A non-finite
measurement is always a failure, with or without an errata label.

**Statistics over seeds.** ``check_mean`` checks a claim about random training on the mean of
several seeds with its t interval (``attnflow.stats``): a target must lie within the interval
(widened by a stated numeric ``atol``); a threshold must be cleared by the whole interval.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
from functools import lru_cache
from pathlib import Path
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
import yaml

from attnflow import stats

__all__ = [
    "check",
    "check_mean",
    "check_share",
    "precondition",
    "outside",
    "domain",
    "state",
    "PARAMETERS",
    "Domain",
    "finish",
    "begin_page",
    "records",
    "statement",
    "ClaimFailed",
    "claims_dir",
    "VERDICTS",
    "register",
    "smallest",
    "above",
    "below",
    "half_unit",
]

SOURCES = ("paper", "prior work", "reconstruction", "paper + reconstruction", "paper + prior work")


# disagrees: documented in the errata; outside: not in domain; inconclusive / contradicted: real-data
# checks (real_data=True) whose seed interval straddles the criterion / lies on the other side of it.
VERDICTS = ("pass", "fail", "disagrees", "outside", "inconclusive", "contradicted")
MARKS = {"pass": "✔", "fail": "✘", "disagrees": "≠", "outside": "○", "inconclusive": "◐", "contradicted": "⨯"}


class ClaimFailed(AssertionError):
    """At least one claim checked on the page did not hold."""


class Verdict:
    """What ``check`` returns: truthy when the claim passed; ``.verdict`` is one of VERDICTS.

    It shows nothing when it is the last value of a notebook cell (the ✔/✘/○ line printed by the
    check is the visible result), so a claims cell never prints a stray ``True``."""

    __slots__ = ("verdict",)

    def __init__(self, verdict: str):
        self.verdict = verdict

    def __bool__(self) -> bool:
        return self.verdict == "pass"

    def __eq__(self, other) -> bool:
        if isinstance(other, Verdict):
            return self.verdict == other.verdict
        if isinstance(other, bool):
            return bool(self) is other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.verdict)

    def __repr__(self) -> str:
        return f"Verdict({self.verdict!r})"

    def _ipython_display_(self) -> None:  # nothing: the check already printed its line
        return None


PARAMETERS = "parameters"


def state(name: str, t: float | None = None) -> str:
    """What a domain condition reads when it is not the parameters alone: a named state *before* the
    measurement, e.g. ``state("end of condensation", t=t_cond)`` or ``state("forecast at the end of
    dilution 1", t=t_d1)``. With a time, :func:`check` refuses the condition unless that time is
    at or before the measurement's start (``measured_from=``), so a domain cannot read a later state."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"claims.state needs the name of the state it reads, received {name!r}")
    if t is None:
        return f"state: {name}"
    if not math.isfinite(float(t)):
        return f"state: {name} (never reached)"
    return f"state at t = {float(t):.6g}: {name}"


def _state_time(reads: str) -> float | None:
    """The time in a ``state(..., t=...)`` label (None for the parameters or an untimed state)."""
    if reads.startswith("state at t = "):
        return float(reads[len("state at t = ") :].split(":", 1)[0])
    return None


@dataclass(frozen=True)
class Domain:
    """Where a claim is predicted: named conditions, each (statement, holds, observed, reads).

    ``statement`` is the condition in words/symbols ("|g| ≥ 5εσ0"), ``holds`` its truth value
    computed from the parameters and the state before measuring, ``observed`` the values it was
    decided on ("|g| = 1.2e-4, 5εσ0 = 4.8e-4"), ``reads`` what it was computed from:
    :data:`PARAMETERS` (the page's parameters and closed forms of them) or a :func:`state` label.
    ``bool(domain)`` is True when every condition holds.
    """

    conditions: tuple[tuple[str, bool, str, str], ...] = ()

    def __bool__(self) -> bool:
        return all(c[1] for c in self.conditions)

    @property
    def holds(self) -> bool:
        return bool(self)

    @property
    def text(self) -> str:
        """All conditions, joined (recorded with every verdict)."""
        return "; ".join(c[0] for c in self.conditions) or "every accepted parameter set"

    @property
    def reads(self) -> tuple[str, ...]:
        """What the conditions read, each once, in order (recorded with every verdict)."""
        return tuple(dict.fromkeys(c[3] for c in self.conditions)) or (PARAMETERS,)

    @property
    def latest_state(self) -> float | None:
        """The latest time of a state the conditions read (None: parameters or untimed states only)."""
        times = [t for t in (_state_time(c[3]) for c in self.conditions) if t is not None]
        return max(times) if times else None

    @property
    def reason(self) -> str:
        """The conditions that fail, with the observed values (empty when inside)."""
        return "; ".join(f"{c[0]} fails ({c[2]})" if c[2] else f"{c[0]} fails" for c in self.conditions if not c[1])

    def __and__(self, other: "Domain") -> "Domain":
        return Domain(self.conditions + other.conditions)


def domain(*conditions: tuple, reads: str = PARAMETERS) -> Domain:
    """``domain(("n_seeds ≥ 3", n >= 3, f"n = {n}"), ("plateau reached by T_p", T_p <= horizon))``.

    Each condition is (statement, holds[, observed[, reads]]); ``reads`` (keyword) is the default of
    the conditions that do not name it: :data:`PARAMETERS`, or ``state("...", t=...)`` for a named
    earlier state (checked against the measurement's start by :func:`check`)."""
    out = []
    for c in conditions:
        if len(c) not in (2, 3, 4) or not isinstance(c[0], str):
            raise TypeError(f"a domain condition is (statement, holds[, observed[, reads]]); received {c!r}")
        r = c[3] if len(c) == 4 else reads
        if not isinstance(r, str) or not (r == PARAMETERS or r.startswith("state")):
            raise ValueError(
                f"domain condition {c[0]!r}: reads must be claims.PARAMETERS or claims.state(...), received {r!r}"
            )
        out.append((c[0], bool(c[1]), str(c[2]) if len(c) >= 3 else "", r))
    return Domain(tuple(out))


_state: dict[str, Any] = {"page": None, "records": [], "parameters": {}}


_registered: dict[str, dict[str, str]] = {}  # ids added in pages (register), this kernel only


@lru_cache(maxsize=1)
def _packaged() -> dict[str, dict[str, str]]:
    with open(Path(__file__).with_name("claims.yml"), encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def registry() -> dict[str, dict[str, str]]:
    """Claim id -> {statement, provenance}: the specs' claims tables plus ids registered in pages."""
    return {**_packaged(), **_registered}


def register(claim_id: str, *, statement: str, provenance: str = "reconstruction") -> None:
    """Add a claim id in a page (e.g. a teacher's exercise): ``register("T1", statement="...")``.

    ``provenance`` is one of the SOURCES labels. Packaged ids cannot be redefined; registering
    the same id again with the same text is allowed (re-running the cell)."""
    if not isinstance(claim_id, str) or not claim_id.strip() or not claim_id.isprintable():
        raise ValueError(f"claim id must be a non-empty printable string, received {claim_id!r}")
    if claim_id in _packaged():
        raise ValueError(
            f"claim id {claim_id!r} is packaged (claims.yml: {_packaged()[claim_id]['statement'][:60]}...); "
            "choose a new id, e.g. 'T1'"
        )
    if provenance not in SOURCES:
        raise ValueError(f"provenance {provenance!r} not one of {SOURCES}")
    if not isinstance(statement, str) or not statement.strip():
        raise ValueError(f"claim {claim_id}: statement= must say what is claimed")
    _registered[claim_id] = {"statement": statement, "provenance": provenance}


def statement(claim_id: str) -> str:
    return registry()[claim_id]["statement"]


def claims_dir() -> Path | None:
    """Where page records go: ``$ATTNFLOW_CLAIMS_DIR`` (set by the book build and the runner),
    else None: records stay in memory, nothing is written into the working folder."""
    env = os.environ.get("ATTNFLOW_CLAIMS_DIR", "").strip()
    return Path(env) if env else None


def begin_page(page: str, parameters: dict[str, Any] | None = None) -> None:
    """Start the ledger of one page (called by ``params.validate``); writes nothing."""
    _state.update(
        page=page, records=[], parameters=dict(parameters or {}), write_error=None, preconditions=[], finished=False
    )


def records() -> list[dict[str, Any]]:
    return list(_state["records"])


def _fmt(x: Any) -> str:
    if isinstance(x, bool) or x is None:
        return str(x)
    if isinstance(x, (int,)):
        return str(x)
    if isinstance(x, float):
        return f"{x:.6g}"
    if isinstance(x, (list, tuple)):
        return "[" + ", ".join(_fmt(v) for v in x) + "]"
    return str(x)


def _to_jsonable(x: Any) -> Any:
    if hasattr(x, "tolist"):
        x = x.tolist()
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    if isinstance(x, (list, tuple)):
        return [_to_jsonable(v) for v in x]
    return x


class _Criterion:
    """A named predicate for :func:`check`: its text is the recorded tolerance."""

    def __init__(self, test: Callable[[Any], bool], text: str):
        self._test, self.__doc__ = test, text

    def __call__(self, measured: Any) -> bool:
        return bool(self._test(measured))

    def __repr__(self) -> str:
        return f"claims criterion: {self.__doc__}"


def smallest(index: int, names: Sequence[str] | None = None) -> _Criterion:
    """Criterion: entry ``index`` of the measured sequence is strictly below every other entry."""
    label = names[index] if names else f"entry {index}"
    others = ", ".join(n for i, n in enumerate(names) if i != index) if names else "every other entry"

    def test(x) -> bool:
        x = list(np.asarray(x, dtype=float))
        return all(x[index] < v for i, v in enumerate(x) if i != index)

    return _Criterion(test, f"{label} < {others}")


def above(threshold: float) -> _Criterion:
    """Criterion: every measured value is strictly above ``threshold``."""
    return _Criterion(lambda x: bool(np.all(np.asarray(x, dtype=float) > threshold)), f"> {threshold:g}")


def below(threshold: float) -> _Criterion:
    """Criterion: every measured value is strictly below ``threshold``."""
    return _Criterion(lambda x: bool(np.all(np.asarray(x, dtype=float) < threshold)), f"< {threshold:g}")


def half_unit(digits: int) -> float:
    """Half a unit in the last printed decimal place, 0.5·10^(−digits): the rounding error of a target
    printed with ``digits`` decimals (the tolerance of a check against a printed number)."""
    if isinstance(digits, bool) or int(digits) != digits or digits < 0:
        raise ValueError(f"digits must be a non-negative integer, received {digits!r}")
    return 0.5 * 10.0 ** (-int(digits))


def check(
    claim_id: str,
    measured: Any,
    expected: Any = None,
    *,
    rtol: float | None = None,
    atol: float | None = None,
    predicate: Callable[[Any], bool] | None = None,
    tolerance: str | None = None,
    what: str = "",
    source: str = "reconstruction",
    errata: str | None = None,
    domain: Domain | None = None,
    measured_from: float | None = None,
) -> Verdict:
    """Check one measured value against the expected one and record the verdict.

    Exactly one of: a numeric comparison (``rtol`` and/or ``atol``; ``|m - e| <= atol + rtol|e|``
    elementwise for arrays), or ``predicate(measured) -> bool`` (then ``tolerance`` says in words
    what the predicate tests, e.g. "ordering FACO > CACO > FAFO > CAFO").
    ``what`` names the measured quantity; ``source`` is where ``expected`` comes from.

    ``errata`` names the label of an entry on the errata page that documents, with evidence, that
    the book does *not* reproduce this statement of the paper. The check keeps the paper's target
    and tolerance; if it fails, its verdict is ``"disagrees"`` — listed in the ledger with a link
    to the entry, not a build failure — and if it passes the verdict is ``"pass"`` as usual. Only
    targets taken from the paper (or prior work) can disagree: a failed check of the book's own
    reconstruction is a bug, so ``errata`` with ``source="reconstruction"`` is refused.

    ``domain`` (:func:`domain`) states where the claim is predicted. Outside it nothing is
    compared: the verdict is ``"outside"`` with the failing conditions as the reason, and the
    call returns None. A non-finite ``measured`` (NaN, inf, anywhere in an array) inside the
    domain is always ``"fail"``, also under an errata label.

    ``measured_from`` is the time at which the measured quantity starts to be read (a fit
    window's start, the time of a stage). A domain that reads a timed :func:`state` needs it,
    and every state it reads must lie at or before it: a domain never reads a later state.
    """
    if claim_id not in registry():
        raise KeyError(f"unknown claim id {claim_id!r}; known ids: {', '.join(registry())}")
    if source not in SOURCES:
        raise ValueError(f"source {source!r} not one of {SOURCES}")
    if predicate is None and rtol is None and atol is None:
        raise ValueError(f"claim {claim_id}: give rtol/atol or a predicate (no tolerance-free checks)")
    if predicate is not None and (rtol is not None or atol is not None):
        raise ValueError(f"claim {claim_id}: give either rtol/atol or a predicate, not both")
    if errata is not None and "paper" not in source and "prior work" not in source:
        raise ValueError(
            f"claim {claim_id}: errata={errata!r} needs a target from the paper or prior work "
            f"(source {source!r}); a failed check of the reconstruction is a bug, not an erratum"
        )
    if _state["page"] is None:
        raise RuntimeError("claims.check before params.validate: the page has no ledger yet")

    _check_domain(claim_id, domain, measured_from)
    measured_v = _to_jsonable(measured)
    expected_v = _to_jsonable(expected)
    if domain is not None and not domain:
        return _outside(claim_id, what, source, domain, expected_v, measured_v, tolerance or "", measured_from)
    finite = _all_finite(measured)
    if predicate is not None:
        ok = finite and bool(predicate(measured))
        tol = tolerance or getattr(predicate, "__doc__", None)
        if not tol:
            raise ValueError(f"claim {claim_id}: a predicate check needs tolerance='<the criterion in words>'")
    else:
        m = np.asarray(measured, dtype=float)
        e = np.asarray(expected, dtype=float)
        a, r = atol or 0.0, rtol or 0.0
        ok = bool(np.all(np.isfinite(m)) and np.all(np.abs(m - e) <= a + r * np.abs(e)))
        parts = []
        if rtol is not None:
            parts.append(f"rtol {rtol:g}")
        if atol is not None:
            parts.append(f"atol {atol:g}")
        tol = ", ".join(parts) + (f" ({tolerance})" if tolerance else "")
    verdict = "pass" if ok else ("disagrees" if errata and finite else "fail")
    _record(claim_id, what, source, expected_v, measured_v, tol, verdict, errata, domain, measured_from=measured_from)
    exp = "" if expected is None else f" expected {_fmt(expected_v)},"
    crit = "" if expected is not None or predicate is None else " criterion:"
    note = f" — not reproduced, see errata ({errata})" if verdict == "disagrees" else ""
    nonfinite = "" if finite else " (non-finite measurement)"
    print(
        f"{MARKS[verdict]} {claim_id} {what}: measured {_fmt(measured_v)}{nonfinite},{exp}{crit} {tol} [{source}]{note}"
    )
    _after_finish(claim_id, what, verdict)
    return Verdict(verdict)


def _check_domain(claim_id: str, dom: Domain | None, measured_from: float | None) -> None:
    """A domain is a claims.Domain whose timed states lie at or before the measurement's start."""
    if dom is None:
        return
    if not isinstance(dom, Domain):
        raise TypeError(f"claim {claim_id}: domain must be a claims.Domain (claims.domain(...)), received {dom!r}")
    latest = dom.latest_state
    if latest is None:
        return
    if measured_from is None:
        raise ValueError(
            f"claim {claim_id}: the domain reads the state at t = {latest:.6g}; give measured_from= "
            "(when the measured quantity starts to be read) so that it can be checked to come first"
        )
    # the label keeps 6 significant figures (claims.state): compare both times at that precision (rounding
    # is monotone, so a state at or before the start never reads as later; 10638.15 is labelled 10638.2)
    if latest > float(f"{float(measured_from):.6g}"):
        raise ValueError(
            f"claim {claim_id}: the domain reads the state at t = {latest:.6g}, after the measurement "
            f"starts (t = {float(measured_from):.6g}); a domain may read only the parameters and earlier states"
        )


def _after_finish(claim_id: str, what: str, verdict: str) -> None:
    """A check after :func:`finish` (a teacher's added exercise) fails the run at once when it fails."""
    if _state.get("finished") and verdict in ("fail",):
        raise ClaimFailed(
            f"claim {claim_id} {what} failed after claims.finish() (the page's summary was already printed)"
        )


def _all_finite(x: Any) -> bool:
    """False when x holds a NaN or infinity (numbers, arrays, nested lists); True for non-numbers."""
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        return True
    return bool(np.all(np.isfinite(a)))


def _record(
    claim_id, what, source, expected_v, measured_v, tol, verdict, errata, dom, reason=None, measured_from=None, **extra
) -> dict:
    rec = dict(
        id=claim_id,
        what=what,
        statement=statement(claim_id),
        provenance=registry()[claim_id]["provenance"],
        source=source,
        expected=expected_v,
        measured=measured_v,
        tolerance=tol,
        verdict=verdict,
        errata=errata,
        domain=dom.text if dom is not None else "every accepted parameter set",
        domain_reads=list(dom.reads) if dom is not None else [PARAMETERS],
        domain_conditions=[[c[0], c[3], c[1]] for c in dom.conditions] if dom is not None else [],
        measured_from=measured_from,
        reason=reason,
        page=_state["page"],
        **extra,
    )
    _state["records"].append(rec)
    _write()
    return rec


def _outside(
    claim_id, what, source, dom: Domain, expected_v=None, measured_v=None, tol="", measured_from=None
) -> Verdict:
    _record(
        claim_id,
        what,
        source,
        expected_v,
        measured_v,
        tol,
        "outside",
        None,
        dom,
        reason=dom.reason,
        measured_from=measured_from,
    )
    print(f"{MARKS['outside']} {claim_id} {what}: outside domain: {dom.reason} [{source}]")
    return Verdict("outside")


def outside(claim_id: str, *, what: str, domain: Domain, source: str = "reconstruction") -> None:
    """Record that a claim is outside its domain without measuring anything (``domain`` must fail)."""
    if claim_id not in registry():
        raise KeyError(f"unknown claim id {claim_id!r}; known ids: {', '.join(registry())}")
    if _state["page"] is None:
        raise RuntimeError("claims.outside before params.validate: the page has no ledger yet")
    if domain:
        raise ValueError(
            f"claim {claim_id}: claims.outside with a domain that holds ({domain.text}); check the claim instead"
        )
    return _outside(claim_id, what, source, domain)


def check_mean(
    claim_id: str,
    values: Any,
    *,
    target: float | None = None,
    margin: float | None = None,
    above: float | None = None,
    below: float | None = None,
    level: float = 0.95,
    real_data: bool = False,
    underpowered: bool | int = False,
    what: str = "",
    tolerance: str = "",
    source: str = "reconstruction",
    errata: str | None = None,
    domain: Domain | None = None,
    measured_from: float | None = None,
) -> Verdict:
    """Check a claim about random training on the mean over seeds (one value per seed), on the
    two-sided ``level`` Student-t interval [lo, hi] of the mean (``attnflow.stats``).

    Exactly one of:

    * ``target`` with ``margin`` > 0 — an equivalence test (TOST at α = (1 − level)/2 each side):
      pass when the whole interval lies within [target − margin, target + margin]. ``margin`` is
      the numeric tolerance the caller derives (the spec's rounding, the solver's error); noisier
      seeds make the test harder, never easier;
    * ``above`` — pass when lo > above (a one-sided test);
    * ``below`` — pass when hi < below.

    ``real_data=True`` (claims of the paper measured on real data, where the book cannot choose the
    noise): the verdict is one of three — ``"pass"`` (reproduced: the interval is on the paper's
    side), ``"contradicted"`` (the whole interval is on the other side), ``"inconclusive"`` (it
    straddles; the record gives the number of seeds that would decide at the measured spread). Neither
    of the last two fails the page; both are listed on the claims page. On synthetic data a check that
    does not pass fails (or, with ``errata``, disagrees), unless it is underpowered.

    ``underpowered`` (synthetic data): when too few seeds leave a true claim undecided. An int is the
    number of values the test needs to decide at its planned power, derived before the measurement from
    a predicted spread (e.g. ``stats.seeds_for_equivalence(sd, margin, power=0.95)``); ``True`` says no
    spread is predicted, so the measured one decides. With fewer values than that (always, for ``True``),
    a result that does not pass but whose point estimate lies on the claim's side (within target ±
    margin; above ``above``; below ``below``) is ``"inconclusive"``, recorded with the number of seeds
    that would decide at the measured spread; a point estimate on the other side still fails, so an
    inconclusive verdict never stands for a result against the claim. With as many values or more, the
    check passes or fails.

    The domain gets "at least 3 seeds" added (fewer: no interval). The record keeps the per-seed
    values, mean and interval.
    """
    if sum(x is not None for x in (target, above, below)) != 1:
        raise ValueError(f"claim {claim_id}: check_mean needs exactly one of target=, above=, below=")
    if target is not None and (margin is None or not margin > 0):
        raise ValueError(
            f"claim {claim_id}: an equivalence test needs margin= > 0 (the tolerance derived for "
            f"the target), received {margin!r}"
        )
    if target is None and margin is not None:
        raise ValueError(f"claim {claim_id}: margin= goes with target= (an equivalence test)")
    if real_data and "paper" not in source and "prior work" not in source:
        raise ValueError(f"claim {claim_id}: real_data=True is for statements of the paper (source {source!r})")
    _check_underpowered(claim_id, underpowered, real_data)
    if claim_id not in registry():
        raise KeyError(f"unknown claim id {claim_id!r}; known ids: {', '.join(registry())}")
    _check_domain(claim_id, domain, measured_from)
    n = int(np.asarray(values, dtype=float).size) if domain is None or domain else 0
    seeds = globals()["domain"](stats.enough_seeds(n))
    if domain is not None and not domain:  # outside: no statistic is computed (values may be empty)
        return _outside(claim_id, what, source, domain, measured_from=measured_from)
    dom = seeds if domain is None else domain & seeds
    if not dom:
        return _outside(claim_id, what, source, dom, measured_from=measured_from)
    iv = stats.mean_interval(values, level=level)
    if target is not None:
        lo_c, hi_c = target - margin, target + margin
        ok = lo_c <= iv.lo and iv.hi <= hi_c
        against = iv.hi < lo_c or iv.lo > hi_c
        gap = margin - abs(iv.mean - target)
        crit = f"{level:.0%} t interval within target ± {margin:g} (equivalence)"
        expected = target
    elif above is not None:
        ok, against, gap = iv.lo > above, iv.hi < above, iv.mean - above
        crit, expected = f"{level:.0%} t interval above {above:g}", None
    else:
        ok, against, gap = iv.hi < below, iv.lo > below, below - iv.mean
        crit, expected = f"{level:.0%} t interval below {below:g}", None
    finite = bool(np.isfinite(iv.mean) and np.isfinite(iv.lo))
    ok = bool(ok and finite)
    tol = f"{crit}; mean of {iv.n} seeds, interval [{iv.lo:.4g}, {iv.hi:.4g}]" + (
        f" ({tolerance})" if tolerance else ""
    )
    extra = {"interval": [iv.lo, iv.hi], "n_seeds": iv.n}
    if real_data:
        # a non-finite seed value is a numerical breakdown, not weak evidence: it fails
        verdict = "pass" if ok else ("fail" if not finite else "contradicted" if against else "inconclusive")
        if verdict == "inconclusive" and finite:
            extra["seeds_to_decide"] = stats.seeds_to_decide(iv, abs(gap), level)
    elif not ok and finite and gap > 0 and _undecided(underpowered, iv.n):
        verdict = "inconclusive"  # the point estimate on the claim's side, too few seeds to decide
        extra["seeds_to_decide"] = stats.seeds_to_decide(iv, gap, level)
    else:
        verdict = "pass" if ok else ("disagrees" if errata and finite else "fail")
    measured_v = _to_jsonable(iv.mean if iv.n >= 2 else float("nan"))
    what_v = what + f" (per seed {_fmt([float(v) for v in iv.values])})"
    _record(
        claim_id,
        what_v,
        source,
        _to_jsonable(expected),
        measured_v,
        tol,
        verdict,
        errata,
        dom,
        measured_from=measured_from,
        **extra,
    )
    exp = "" if expected is None else f" expected {_fmt(expected)},"
    more = ""
    if verdict == "inconclusive":
        need = extra.get("seeds_to_decide")
        more = f" — inconclusive on {iv.n} seeds" + (f" (≈ {need} would decide)" if need else "")
    elif verdict == "contradicted":
        more = " — contradicted" + (f", see errata ({errata})" if errata else "")
    elif verdict == "disagrees":
        more = f" — not reproduced, see errata ({errata})"
    print(f"{MARKS[verdict]} {claim_id} {what_v}: measured {_fmt(measured_v)},{exp} {tol} [{source}]{more}")
    _after_finish(claim_id, what, verdict)
    return Verdict(verdict)


def check_share(
    claim_id: str,
    flags: Any,
    *,
    above: float = 0.5,
    level: float = 0.95,
    real_data: bool = False,
    underpowered: bool | int = False,
    what: str = "",
    tolerance: str = "",
    source: str = "reconstruction",
    errata: str | None = None,
    domain: Domain | None = None,
    measured_from: float | None = None,
) -> Verdict:
    """Check that more than a share ``above`` of the seeds has a property ("most seeds": above = ½),
    decided on the one-sided ``level`` Wilson lower bound of k/n (scipy.stats): pass when it exceeds
    ``above``. The domain gets "enough seeds to decide" added: the fewest n for which n of n would
    pass (3 for ½ at 95 %), from the parameters. With ``real_data`` the verdict is pass /
    contradicted (the upper bound is below ``above``) / inconclusive, as in :func:`check_mean`.

    ``underpowered`` as in :func:`check_mean`: with fewer seeds than it says (always, for ``True``), a
    share that does not clear the bound but whose point value k/n is above ``above`` is
    ``"inconclusive"``, recorded with the seeds that would decide at that share
    (``stats.seeds_to_decide_fraction``); k/n at or below ``above`` fails."""
    if not 0 <= above < 1:
        raise ValueError(f"claim {claim_id}: above= must be a share in [0, 1), received {above!r}")
    _check_underpowered(claim_id, underpowered, real_data)
    if claim_id not in registry():
        raise KeyError(f"unknown claim id {claim_id!r}; known ids: {', '.join(registry())}")
    _check_domain(claim_id, domain, measured_from)
    f = np.asarray(flags, dtype=bool).ravel() if domain is None or domain else np.zeros(0, bool)
    need = stats.seeds_to_decide_share(above, level)
    seeds = globals()["domain"](
        (
            f"enough seeds to decide a share above {above:.3g} (≥ {need})",
            f.size >= need,
            f"{f.size} seed{'s' if f.size != 1 else ''}",
        )
    )
    if domain is not None and not domain:
        return _outside(claim_id, what, source, domain, measured_from=measured_from)
    dom = seeds if domain is None else domain & seeds
    if not dom:
        return _outside(claim_id, what, source, dom, measured_from=measured_from)
    fr = stats.fraction(f, level=2 * level - 1)  # two-sided 2·level − 1 = one-sided level bounds
    ok = fr.lo > above
    verdict = (
        ("pass" if ok else "contradicted" if fr.hi < above else "inconclusive")
        if real_data
        else "inconclusive"
        if not ok and fr.value > above and _undecided(underpowered, fr.n)
        else ("pass" if ok else ("disagrees" if errata else "fail"))
    )
    tol = (
        f"one-sided {level:.0%} Wilson lower bound of the share > {above:.3g}; {fr.k}/{fr.n} seeds, bounds "
        f"[{fr.lo:.3f}, {fr.hi:.3f}]" + (f" ({tolerance})" if tolerance else "")
    )
    _record(
        claim_id,
        what,
        source,
        None,
        fr.value,
        tol,
        verdict,
        errata,
        dom,
        measured_from=measured_from,
        interval=[fr.lo, fr.hi],
        n_seeds=fr.n,
        k_seeds=fr.k,
        **(
            {"seeds_to_decide": stats.seeds_to_decide_fraction(fr.k, fr.n, above, level)}
            if verdict == "inconclusive"
            else {}
        ),
    )
    more = ""
    if verdict == "inconclusive":
        decide = _state["records"][-1].get("seeds_to_decide")
        more = f" — inconclusive on {fr.n} seeds" + (f" (≈ {decide} at this share would decide)" if decide else "")
    print(f"{MARKS[verdict]} {claim_id} {what}: {fr.k} of {fr.n} seeds, {tol} [{source}]{more}")
    _after_finish(claim_id, what, verdict)
    return Verdict(verdict)


def _check_underpowered(claim_id: str, underpowered: Any, real_data: bool) -> None:
    """``underpowered`` is False, True or a number of values ≥ 2, and only for synthetic data."""
    if isinstance(underpowered, bool):
        ok = True
    else:
        ok = isinstance(underpowered, (int, np.integer)) and underpowered >= 2
    if not ok:
        raise ValueError(
            f"claim {claim_id}: underpowered= is True/False or the number of values (≥ 2) the test needs to "
            f"decide, received {underpowered!r}"
        )
    if real_data and underpowered is not False:
        raise ValueError(
            f"claim {claim_id}: real_data=True already has three verdicts; underpowered= is for synthetic data"
        )


def _undecided(underpowered: bool | int, n: int) -> bool:
    """Too few values to decide: always for ``True``, below the planned number for an int."""
    return underpowered is True or (not isinstance(underpowered, bool) and n < int(underpowered))


def precondition(what: str, holds: bool, observed: str = "") -> bool:
    """A protocol condition of the page's experiment (a run reached its target, a solver converged):
    not a claim, so it is not in the ledger's counts, but :func:`finish` fails the page when one does
    not hold. Recorded under ``preconditions`` in the page's record."""
    if _state["page"] is None:
        raise RuntimeError("claims.precondition before params.validate: the page has no ledger yet")
    ok = bool(holds)
    _state.setdefault("preconditions", []).append({"what": what, "holds": ok, "observed": str(observed)})
    _write()
    print(
        f"{'●' if ok else '✘'} precondition {what}" + (f": {observed}" if observed else "") + ("" if ok else " — FAILS")
    )
    if _state.get("finished") and not ok:
        raise ClaimFailed(f"precondition {what} failed after claims.finish()")
    return ok


def finish() -> None:
    """Last cell of a page: print the summary and raise if any claim or precondition failed. A check
    run after it (e.g. a teacher's added exercise) still fails the run when it fails."""
    _state["finished"] = True
    recs = _state["records"]
    failed = [r for r in recs if r["verdict"] == "fail"]
    pre_failed = [p for p in _state.get("preconditions", []) if not p["holds"]]
    counts = {v: sum(r["verdict"] == v for r in recs) for v in VERDICTS}
    dis = f", {counts['disagrees']} disagree with the paper (errata)" if counts["disagrees"] else ""
    real = "".join(f", {counts[v]} {v}" for v in ("inconclusive", "contradicted") if counts[v])
    out = f", {counts['outside']} outside their domain" if counts["outside"] else ""
    print(f"claims on {_state['page']}: {counts['pass']} passed{dis}{real}{out}, {len(failed)} failed")
    if not recs:
        raise ClaimFailed(f"page {_state['page']} checked no claim")
    if failed or pre_failed:
        raise ClaimFailed(
            "; ".join(
                [f"precondition {p['what']} does not hold ({p['observed']})" for p in pre_failed]
                + [
                    f"{r['id']} {r['what']}: measured {_fmt(r['measured'])}, expected {_fmt(r['expected'])}"
                    for r in failed
                ]
            )
        )


def _write() -> None:
    """Write the page's record to the claims folder, if one is set (atomically: temp + rename).
    A folder that cannot be written is said once on stderr; the records stay in memory."""
    page = _state["page"]
    out = claims_dir()
    if page is None or out is None:
        return
    path = out / (page.replace("/", "__") + ".json")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        out.mkdir(parents=True, exist_ok=True)
        tmp.write_text(
            json.dumps(
                {
                    "page": page,
                    "parameters": _to_jsonable(_state["parameters"]),
                    "claims": _state["records"],
                    "preconditions": _state.get("preconditions", []),
                },
                indent=1,
                ensure_ascii=False,
                default=str,
            ),
            encoding="utf-8",
        )
        os.replace(tmp, path)
    except OSError as err:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if _state.get("write_error") is None:
            _state["write_error"] = str(err)
            print(
                f"attnflow.claims: cannot write the claims record {path} ({err.strerror or err}); keeping it in memory",
                file=sys.stderr,
                flush=True,
            )
