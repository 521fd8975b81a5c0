"""The claims ledger (DESIGN.md, principle 2).

Every page that shows a result checks it::

    claims.check("B12", measured=sigma0_fit, expected=sigma0, rtol=5e-3,
                 what="condensation rate sigma0", source="reconstruction")
    ...
    claims.finish()          # last cell: raises if any check on the page failed

``check`` prints a visible ✔/✘ line with both numbers, appends a record to the page's JSON
file under ``_build/claims/`` (or ``$ATTNFLOW_CLAIMS_DIR``) and never raises itself, so all
checks of a page run; ``finish`` raises :class:`ClaimFailed` when one failed, which fails the
notebook and therefore the book build. The statement and provenance of each claim id come from
``claims.yml`` (the claims tables of the two specs); ``source`` says where the *expected value*
comes from.
"""
from __future__ import annotations

import json
import math
import os
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

import yaml

__all__ = ["check", "finish", "begin_page", "records", "statement", "ClaimFailed", "claims_dir"]

SOURCES = ("paper", "prior work", "reconstruction", "paper + reconstruction", "paper + prior work")


class ClaimFailed(AssertionError):
    """At least one claim checked on the page did not hold."""


_state: dict[str, Any] = {"page": None, "records": [], "parameters": {}}


@lru_cache(maxsize=1)
def registry() -> dict[str, dict[str, str]]:
    """Claim id -> {statement, provenance}, from the specs' claims tables."""
    with open(Path(__file__).with_name("claims.yml"), encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def statement(claim_id: str) -> str:
    return registry()[claim_id]["statement"]


def claims_dir() -> Path:
    """Where page records go: $ATTNFLOW_CLAIMS_DIR, else <book root>/_build/claims."""
    env = os.environ.get("ATTNFLOW_CLAIMS_DIR")
    if env:
        return Path(env)
    here = Path.cwd().resolve()
    for d in (here, *here.parents):
        if (d / "_config.yml").exists() and (d / "_toc.yml").exists():
            return d / "_build" / "claims"
    return here / "_build" / "claims"


def begin_page(page: str, parameters: dict[str, Any] | None = None) -> None:
    """Start the ledger of one page (called by ``params.validate``)."""
    _state.update(page=page, records=[], parameters=dict(parameters or {}))
    _write()


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
) -> bool:
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

    measured_v = _to_jsonable(measured)
    expected_v = _to_jsonable(expected)
    if predicate is not None:
        ok = bool(predicate(measured))
        tol = tolerance or getattr(predicate, "__doc__", None) or "predicate"
    else:
        import numpy as np

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
    rec = dict(
        id=claim_id,
        what=what,
        statement=statement(claim_id),
        provenance=registry()[claim_id]["provenance"],
        source=source,
        expected=expected_v,
        measured=measured_v,
        tolerance=tol,
        verdict="pass" if ok else ("disagrees" if errata else "fail"),
        errata=errata,
        page=_state["page"],
    )
    _state["records"].append(rec)
    _write()
    mark = "✔" if ok else ("≠" if errata else "✘")
    exp = "" if expected is None else f" expected {_fmt(expected_v)},"
    note = f" — not reproduced, see errata ({errata})" if errata and not ok else ""
    print(f"{mark} {claim_id} {what}: measured {_fmt(measured_v)},{exp} {tol} [{source}]{note}")
    return ok


def finish() -> None:
    """Last cell of a page: print the summary and raise if any claim failed."""
    recs = _state["records"]
    failed = [r for r in recs if r["verdict"] == "fail"]
    n_dis = sum(r["verdict"] == "disagrees" for r in recs)
    dis = f", {n_dis} disagree with the paper (errata)" if n_dis else ""
    print(f"claims on {_state['page']}: {len(recs) - len(failed) - n_dis} passed{dis}, {len(failed)} failed")
    if not recs:
        raise ClaimFailed(f"page {_state['page']} checked no claim")
    if failed:
        raise ClaimFailed(
            "failed claims: "
            + "; ".join(f"{r['id']} {r['what']}: measured {_fmt(r['measured'])}, expected {_fmt(r['expected'])}" for r in failed)
        )


def _write() -> None:
    page = _state["page"]
    if page is None:
        return
    out = claims_dir()
    out.mkdir(parents=True, exist_ok=True)
    path = out / (page.replace("/", "__") + ".json")
    tmp = path.with_suffix(".json.tmp")
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


def load_all(directory: Path | None = None) -> list[dict[str, Any]]:
    """Every page record in the claims folder (used by the claims page and the runner)."""
    d = directory or claims_dir()
    pages = []
    for f in sorted(Path(d).glob("*.json")):
        pages.append(json.loads(f.read_text(encoding="utf-8")))
    return pages
