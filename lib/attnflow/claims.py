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
build sets (``attnflow.sphinx_ext``, to ``_build/claims``) and the runner sets (a temporary
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
from typing import Any, Callable

import numpy as np
import yaml

from attnflow import stats

__all__ = ["check", "check_mean", "outside", "domain", "Domain", "finish", "begin_page", "records", "statement",
           "ClaimFailed", "claims_dir", "VERDICTS", "register"]

SOURCES = ("paper", "prior work", "reconstruction", "paper + reconstruction", "paper + prior work")


VERDICTS = ("pass", "fail", "disagrees", "outside")   # disagrees: documented in the errata; outside: not in domain
MARKS = {"pass": "✔", "fail": "✘", "disagrees": "≠", "outside": "○"}


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

    def _ipython_display_(self) -> None:       # nothing: the check already printed its line
        return None


@dataclass(frozen=True)
class Domain:
    """Where a claim is predicted: named conditions, each (statement, holds, observed).

    ``statement`` is the condition in words/symbols ("|g| ≥ 5εσ0"), ``holds`` its truth value
    computed from the parameters and the state before measuring, ``observed`` the values it was
    decided on ("|g| = 1.2e-4, 5εσ0 = 4.8e-4"). ``bool(domain)`` is True when every condition holds.
    """

    conditions: tuple[tuple[str, bool, str], ...] = ()

    def __bool__(self) -> bool:
        return all(h for _, h, _ in self.conditions)

    @property
    def holds(self) -> bool:
        return bool(self)

    @property
    def text(self) -> str:
        """All conditions, joined (recorded with every verdict)."""
        return "; ".join(c for c, _, _ in self.conditions) or "every accepted parameter set"

    @property
    def reason(self) -> str:
        """The conditions that fail, with the observed values (empty when inside)."""
        return "; ".join(f"{c} fails ({o})" if o else f"{c} fails" for c, h, o in self.conditions if not h)

    def __and__(self, other: "Domain") -> "Domain":
        return Domain(self.conditions + other.conditions)


def domain(*conditions: tuple[str, bool] | tuple[str, bool, str]) -> Domain:
    """``domain(("n_seeds ≥ 3", n >= 3, f"n = {n}"), ("plateau reached", t_end > t_plateau))``."""
    out = []
    for c in conditions:
        if len(c) not in (2, 3) or not isinstance(c[0], str):
            raise TypeError(f"a domain condition is (statement, holds[, observed]); received {c!r}")
        out.append((c[0], bool(c[1]), str(c[2]) if len(c) == 3 else ""))
    return Domain(tuple(out))


_state: dict[str, Any] = {"page": None, "records": [], "parameters": {}}


_registered: dict[str, dict[str, str]] = {}   # ids added in pages (register), this kernel only


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
        raise ValueError(f"claim id {claim_id!r} is packaged (claims.yml: {_packaged()[claim_id]['statement'][:60]}...); "
                         "choose a new id, e.g. 'T1'")
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
    _state.update(page=page, records=[], parameters=dict(parameters or {}), write_error=None)


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
        raise ValueError(f"claim {claim_id}: errata={errata!r} needs a target from the paper or prior work "
                         f"(source {source!r}); a failed check of the reconstruction is a bug, not an erratum")
    if _state["page"] is None:
        raise RuntimeError("claims.check before params.validate: the page has no ledger yet")

    if domain is not None and not isinstance(domain, Domain):
        raise TypeError(f"claim {claim_id}: domain must be a claims.Domain (claims.domain(...)), received {domain!r}")
    measured_v = _to_jsonable(measured)
    expected_v = _to_jsonable(expected)
    if domain is not None and not domain:
        return _outside(claim_id, what, source, domain, expected_v, measured_v, tolerance or "")
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
    rec = _record(claim_id, what, source, expected_v, measured_v, tol, verdict, errata, domain)
    exp = "" if expected is None else f" expected {_fmt(expected_v)},"
    crit = "" if expected is not None or predicate is None else " criterion:"
    note = f" — not reproduced, see errata ({errata})" if verdict == "disagrees" else ""
    nonfinite = "" if finite else " (non-finite measurement)"
    print(f"{MARKS[verdict]} {claim_id} {what}: measured {_fmt(measured_v)}{nonfinite},{exp}{crit} {tol} [{source}]{note}")
    return Verdict(verdict)


def _all_finite(x: Any) -> bool:
    """False when x holds a NaN or infinity (numbers, arrays, nested lists); True for non-numbers."""
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        return True
    return bool(np.all(np.isfinite(a)))


def _record(claim_id, what, source, expected_v, measured_v, tol, verdict, errata, dom, reason=None) -> dict:
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
        reason=reason,
        page=_state["page"],
    )
    _state["records"].append(rec)
    _write()
    return rec


def _outside(claim_id, what, source, dom: Domain, expected_v=None, measured_v=None, tol="") -> Verdict:
    _record(claim_id, what, source, expected_v, measured_v, tol, "outside", None, dom, reason=dom.reason)
    print(f"{MARKS['outside']} {claim_id} {what}: outside domain: {dom.reason} [{source}]")
    return Verdict("outside")


def outside(claim_id: str, *, what: str, domain: Domain, source: str = "reconstruction") -> None:
    """Record that a claim is outside its domain without measuring anything (``domain`` must fail)."""
    if claim_id not in registry():
        raise KeyError(f"unknown claim id {claim_id!r}; known ids: {', '.join(registry())}")
    if _state["page"] is None:
        raise RuntimeError("claims.outside before params.validate: the page has no ledger yet")
    if domain:
        raise ValueError(f"claim {claim_id}: claims.outside with a domain that holds ({domain.text}); check the claim instead")
    return _outside(claim_id, what, source, domain)


def check_mean(
    claim_id: str,
    values: Any,
    *,
    target: float | None = None,
    atol: float = 0.0,
    above: float | None = None,
    below: float | None = None,
    level: float = 0.95,
    what: str = "",
    tolerance: str = "",
    source: str = "reconstruction",
    errata: str | None = None,
    domain: Domain | None = None,
) -> Verdict:
    """Check a claim about random training on the mean over seeds (one value per seed).

    Exactly one of: ``target`` (pass when |mean − target| ≤ t-interval half-width + ``atol``,
    where ``atol`` is a numeric tolerance explained by the caller, e.g. the spec's rounding),
    ``above`` (pass when the whole interval lies above: lo > above), ``below`` (hi < below).
    The domain should require at least 3 seeds (``stats.enough_seeds``); with fewer the interval
    is undefined and the check fails. The record keeps the per-seed values, mean and interval.
    """
    if sum(x is not None for x in (target, above, below)) != 1:
        raise ValueError(f"claim {claim_id}: check_mean needs exactly one of target=, above=, below=")
    if domain is not None and not isinstance(domain, Domain):
        raise TypeError(f"claim {claim_id}: domain must be a claims.Domain (claims.domain(...)), received {domain!r}")
    if domain is not None and not domain:          # outside: no statistic is computed (values may be empty)
        if claim_id not in registry():
            raise KeyError(f"unknown claim id {claim_id!r}; known ids: {', '.join(registry())}")
        return _outside(claim_id, what, source, domain)
    iv = stats.mean_interval(values, level=level)
    if target is not None:
        ok_fn = lambda m: abs(iv.mean - target) <= iv.half_width + atol  # noqa: E731
        crit = f"|mean − target| ≤ {level:.0%} t half-width {iv.half_width:.3g}" + (f" + atol {atol:g}" if atol else "")
        expected = target
    elif above is not None:
        ok_fn = lambda m: iv.lo > above  # noqa: E731
        crit, expected = f"{level:.0%} t interval above {above:g}", None
    else:
        ok_fn = lambda m: iv.hi < below  # noqa: E731
        crit, expected = f"{level:.0%} t interval below {below:g}", None
    tol = f"{crit}; mean of {iv.n} seeds, interval [{iv.lo:.4g}, {iv.hi:.4g}]" + (f" ({tolerance})" if tolerance else "")
    return check(claim_id, iv.mean if iv.n >= 2 else float("nan"), expected, predicate=ok_fn, tolerance=tol,
                 what=what + f" (per seed {_fmt([float(v) for v in iv.values])})", source=source, errata=errata,
                 domain=domain)


def finish() -> None:
    """Last cell of a page: print the summary and raise if any claim failed."""
    recs = _state["records"]
    failed = [r for r in recs if r["verdict"] == "fail"]
    n_dis = sum(r["verdict"] == "disagrees" for r in recs)
    n_out = sum(r["verdict"] == "outside" for r in recs)
    n_pass = sum(r["verdict"] == "pass" for r in recs)
    dis = f", {n_dis} disagree with the paper (errata)" if n_dis else ""
    out = f", {n_out} outside their domain" if n_out else ""
    print(f"claims on {_state['page']}: {n_pass} passed{dis}{out}, {len(failed)} failed")
    if not recs:
        raise ClaimFailed(f"page {_state['page']} checked no claim")
    if failed:
        raise ClaimFailed(
            "failed claims: "
            + "; ".join(f"{r['id']} {r['what']}: measured {_fmt(r['measured'])}, expected {_fmt(r['expected'])}" for r in failed)
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
                {"page": page, "parameters": _to_jsonable(_state["parameters"]), "claims": _state["records"]},
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
            print(f"attnflow.claims: cannot write the claims record {path} ({err.strerror or err}); "
                  "keeping it in memory", file=sys.stderr, flush=True)


def load_all(directory: Path | None = None) -> list[dict[str, Any]]:
    """Every page record in the claims folder (used by the claims page and the runner)."""
    d = directory or claims_dir()
    if d is None or not Path(d).is_dir():
        return []
    pages = []
    for f in sorted(Path(d).glob("*.json")):
        pages.append(json.loads(f.read_text(encoding="utf-8")))
    return pages
