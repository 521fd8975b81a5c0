"""The parameter contract of a book page (DESIGN.md, principle 5).

A page's first code cell is tagged ``parameters`` and holds plain literals; its second code cell
validates them in one line::

    cfg = params.validate(globals(), SCHEMA)

``SCHEMA`` is a :class:`Schema` declared in ``lib`` next to the experiment it configures. It
names every parameter with its type, range or choices and a doc string, but no default: the
book defaults live in the page itself. Papermill injects values unchecked, so ``validate``
rejects unknown names, wrong types, out-of-range values and non-finite floats with an error
that names the parameter, the value received and what is allowed.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Iterable, Mapping

__all__ = ["Param", "Schema", "ParameterError", "validate"]

# Names IPython puts in a fresh kernel's namespace; everything else that is public is a parameter.
_KERNEL_NAMES = {"In", "Out", "get_ipython", "exit", "quit", "open"}
# Parameters are plain literals; imported objects (modules, schemas, functions) are not.
_LITERAL_TYPES = (bool, int, float, str, list, tuple, dict, type(None))


class ParameterError(ValueError):
    """A page parameter is unknown, missing, of the wrong type or out of range."""


@dataclass(frozen=True)
class Param:
    """One page parameter.

    type: int, float, bool, str, or list/tuple (a list of ``item`` values).
    lo, hi: inclusive bounds for numbers (and for each item of a list), None = unbounded.
    choices: allowed values (str or numbers).
    doc: what the parameter means, with the paper symbol (shown in error messages).
    item: element type for list parameters.
    lo_open / hi_open: make a bound strict (e.g. a learning-rate ratio r > 0).
    min_len, max_len: length bounds for lists.
    """

    type: type
    lo: float | None = None
    hi: float | None = None
    doc: str = ""
    choices: tuple | None = None
    item: type | None = None
    lo_open: bool = False
    hi_open: bool = False
    min_len: int = 1
    max_len: int | None = None

    def allowed(self) -> str:
        """Human description of the allowed values."""
        if self.choices is not None:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        what = {int: "an integer", float: "a number", bool: "True or False", str: "a string"}.get(
            self.item if self.type in (list, tuple) else self.type, self.type.__name__
        )
        rng = ""
        if self.lo is not None or self.hi is not None:
            left = "(" if self.lo_open else "["
            right = ")" if self.hi_open else "]"
            lo = "-inf" if self.lo is None else repr(self.lo)
            hi = "inf" if self.hi is None else repr(self.hi)
            rng = f" in {left}{lo}, {hi}{right}"
        if self.type in (list, tuple):
            n = f"{self.min_len}..{self.max_len if self.max_len is not None else ''}"
            return f"a list of {n} items, each {what}{rng}"
        return what + rng

    def check(self, name: str, value: Any) -> Any:
        """Return the value converted to the declared type, or raise ParameterError."""
        def fail(why: str):
            doc = f" ({self.doc})" if self.doc else ""
            raise ParameterError(
                f"parameter {name!r}{doc}: {why}; received {value!r} "
                f"(type {type(value).__name__}); allowed: {self.allowed()}"
            )

        if self.type in (list, tuple):
            if not isinstance(value, (list, tuple)):
                fail("expected a list")
            if len(value) < self.min_len or (self.max_len is not None and len(value) > self.max_len):
                fail(f"list has {len(value)} items")
            return [self._scalar(f"{name}[{i}]", v, self.item or float, fail) for i, v in enumerate(value)]
        return self._scalar(name, value, self.type, fail)

    def _scalar(self, name: str, value: Any, typ: type, fail) -> Any:
        if typ is bool:
            if not isinstance(value, bool):
                fail("expected True or False")
        elif typ is int:
            if isinstance(value, bool) or not isinstance(value, int):
                if isinstance(value, float) and value.is_integer():
                    value = int(value)
                else:
                    fail("expected an integer")
        elif typ is float:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                fail("expected a number")
            value = float(value)
            if not math.isfinite(value):
                fail("expected a finite number")
        elif typ is str:
            if not isinstance(value, str):
                fail("expected a string")
        if self.choices is not None:
            if value not in self.choices:
                fail("not one of the allowed choices")
            return value
        if typ in (int, float):
            if self.lo is not None and (value < self.lo or (self.lo_open and value == self.lo)):
                fail("below the allowed range")
            if self.hi is not None and (value > self.hi or (self.hi_open and value == self.hi)):
                fail("above the allowed range")
        return value


class Schema:
    """The declared parameters of one page; ``key`` is the page's path under ``book/``
    without suffix (e.g. ``"sharpening/lemma1_rescaling"``), used by the claims ledger."""

    def __init__(self, key: str, *, requires: tuple = (), **params: Param):
        """``requires``: cross-parameter rules as (predicate(cfg) -> bool, message) pairs,
        e.g. ``(lambda c: c.d_h <= c.d, "d_h ≤ d (balanced factors)")``."""
        if not params:
            raise ValueError(f"schema {key!r} declares no parameters")
        self.key = key
        self.params: dict[str, Param] = dict(params)
        self.requires = tuple(requires)

    def __repr__(self) -> str:
        return f"Schema({self.key!r}, {', '.join(self.params)})"

    def describe(self) -> str:
        """One line per parameter: name, allowed values, meaning."""
        return "\n".join(f"  {n}: {p.allowed()} — {p.doc}" for n, p in self.params.items())

    def check_names(self, names: Iterable[str]) -> None:
        """Reject names the schema does not declare (used by the runner before executing)."""
        unknown = sorted(set(names) - set(self.params))
        if unknown:
            raise ParameterError(
                f"unknown parameter(s) {', '.join(map(repr, unknown))} for page {self.key!r}; "
                f"allowed:\n{self.describe()}"
            )

    def validate(self, values: Mapping[str, Any]) -> SimpleNamespace:
        self.check_names(values)
        missing = [n for n in self.params if n not in values]
        if missing:
            raise ParameterError(
                f"page {self.key!r} does not set parameter(s) {', '.join(map(repr, missing))} "
                f"in its parameters cell; declared:\n{self.describe()}"
            )
        out = {n: self.params[n].check(n, values[n]) for n in self.params}
        cfg = SimpleNamespace(page=self.key, **out)
        for rule, message in self.requires:
            if not rule(cfg):
                raise ParameterError(f"parameters of page {self.key!r} violate the rule {message}; received "
                                     + ", ".join(f"{n}={v!r}" for n, v in out.items()))
        return cfg


def validate(namespace: Mapping[str, Any], schema: Schema) -> SimpleNamespace:
    """Validate a page's parameters; call as ``cfg = params.validate(globals(), SCHEMA)``.

    ``namespace`` is the notebook's globals right after the parameters cell (and papermill's
    injected cell): every public name in it holding a literal must be a declared parameter. The page key is
    registered with the claims ledger so that ``claims.check`` knows which page it is on.
    Returns a namespace holding the checked values (``cfg.n_classes``, ...).
    """
    values = {
        k: v
        for k, v in namespace.items()
        if not k.startswith("_") and k not in _KERNEL_NAMES and isinstance(v, _LITERAL_TYPES)
    }
    cfg = schema.validate(values)
    from attnflow import claims  # local import: params must stay importable on its own

    claims.begin_page(schema.key, {k: getattr(cfg, k) for k in schema.params})
    return cfg
