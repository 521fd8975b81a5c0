"""The parameter contract of a book page (DESIGN.md, principle 5).

A page's first code cell is tagged ``parameters`` and holds plain literals; its second code cell
validates them in one line::

    cfg = params.validate(globals(), SCHEMA)

``SCHEMA`` is a :class:`Schema` declared in ``lib`` next to the experiment it configures. It
names every parameter with its type, range or choices and a doc string, but no default: the
book defaults live in the page itself. Papermill injects values unchecked, so ``validate``
rejects unknown names, wrong types, out-of-range values and non-finite floats with an error
that names the parameter, the value received and what is allowed.

**Which names are parameters.** In a live kernel (IPython: JupyterLab, papermill, the book
build) ``validate`` reads only the names assigned by the cells run just before it that hold
nothing but literal assignments: the parameters cell and papermill's injected cell. So after a
full run a reader can change a value and re-run the first two cells; the page's other
variables are never mistaken for parameters. Outside IPython (a plain dict, the runner's
pre-check) every public literal of the namespace is taken as a parameter.

**Cost.** ``Schema(..., cost=(lambda cfg: seconds_on_2_cpus, "what it counts"))`` estimates
the run time of accepted values; above :data:`COST_REFUSE_S` (env ``ATTNFLOW_MAX_SECONDS``)
``validate`` refuses them unless ``ATTNFLOW_FORCE=1`` (``attnflow run --force``), above
:data:`COST_WARN_S` it prints one warning line.

**Teachers** extend a page's parameters in the page itself::

    SCHEMA = FOCUS.extend(my_param=params.Param(float, lo=0, doc="..."))
"""

from __future__ import annotations

import ast
import dataclasses
import math
import os
import re
import sys
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Iterable, Mapping

from attnflow import claims

INJECTED_MARK = "# Parameters"  # first line of the cell papermill injects after the parameters cell
DEFAULT_MAX_LEN = 32  # length cap of a list parameter that declares none (20,000 items ran for hours)
COST_WARN_S = 600.0  # estimated seconds (2 CPUs) above which validate prints a warning line
COST_REFUSE_S = 4 * 3600.0  # ... and above which it refuses, unless forced

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
    min_len, max_len: length bounds for lists (``max_len=None`` means :data:`DEFAULT_MAX_LEN`:
    every list has a cap, so no accepted value can run for hours).
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
        if self.choices is not None and self.type not in (list, tuple):
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
            n = f"{self.min_len}..{self.cap}"
            each = ("one of " + ", ".join(repr(c) for c in self.choices)) if self.choices is not None else what + rng
            return f"a list of {n} items, each {each}"
        return what + rng

    @property
    def cap(self) -> int:
        """Largest accepted list length."""
        return DEFAULT_MAX_LEN if self.max_len is None else self.max_len

    def check(self, name: str, value: Any) -> Any:
        """Return the value converted to the declared type, or raise ParameterError."""

        def fail(why: str, item: int | None = None):
            doc = f" ({self.doc})" if self.doc else ""
            shown = _short(value)
            if item is not None:
                why = f"item {item} ({_short(value[item])}) {why}"
            raise ParameterError(
                f"parameter {name!r}{doc}: {why}; received {shown} "
                f"(type {type(value).__name__}); allowed: {self.allowed()}"
            )

        if self.type in (list, tuple):
            if not isinstance(value, (list, tuple)):
                hint = f" (e.g. -p {name}=[{value!r}])" if not isinstance(value, dict) else ""
                fail(f"expected a list{hint}")
            if len(value) < self.min_len or len(value) > self.cap:
                fail(f"list has {len(value)} items")
            out = []
            for i, v in enumerate(value):
                out.append(self._scalar(name, v, self.item or float, lambda why, i=i: fail(why, i)))
            return out
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


def _short(value: Any, limit: int = 120) -> str:
    """repr of a value, cut to ``limit`` characters (a 20,000-item list is not echoed whole)."""
    r = repr(value)
    if len(r) <= limit:
        return r
    n = f", {len(value)} items" if isinstance(value, (list, tuple)) else ""
    return r[: limit - 20] + f"… ({len(r)} characters{n})"


class Schema:
    """The declared parameters of one page; ``key`` is the page's path under ``book/``
    without suffix (e.g. ``"sharpening/lemma1_rescaling"``), used by the claims ledger."""

    def __init__(self, key: str, *, requires: tuple = (), cost: tuple | None = None, **params: Param):
        """``requires``: cross-parameter rules as (predicate(cfg) -> bool, message) pairs,
        e.g. ``(lambda c: c.d_h <= c.d, "d_h ≤ d (balanced factors)")``.
        ``cost``: ``(estimate(cfg) -> seconds on 2 CPUs, "what it counts")``, evaluated after the
        rules; see :meth:`check_cost`."""
        if not params:
            raise ValueError(f"schema {key!r} declares no parameters")
        bad = [n for n in params if n.startswith("_")]
        if bad:
            raise ValueError(f"schema {key!r}: parameter names cannot start with '_' ({', '.join(bad)})")
        if cost is not None and (
            not isinstance(cost, tuple) or len(cost) != 2 or not callable(cost[0]) or not isinstance(cost[1], str)
        ):
            raise TypeError(f"schema {key!r}: cost= is (estimate(cfg) -> seconds, 'what it counts'); received {cost!r}")
        self.key = key
        self.params: dict[str, Param] = dict(params)
        self.requires = tuple(requires)
        self.cost = cost

    def extend(
        self, *, key: str | None = None, requires: tuple = (), cost: tuple | None = None, **params: Param
    ) -> "Schema":
        """A copy with more parameters (and rules): how a teacher adds a parameter in a page::

            SCHEMA = SCHEMA.extend(my_param=params.Param(float, lo=0, doc="..."))

        Declared names cannot be redefined (use a new name); ``cost`` replaces the estimate."""
        clash = sorted(set(params) & set(self.params))
        if clash:
            raise ValueError(f"schema {self.key!r} already declares {', '.join(clash)}")
        return Schema(
            key or self.key,
            requires=self.requires + tuple(requires),
            cost=cost if cost is not None else self.cost,
            **self.params,
            **params,
        )

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
        cfg = self.config_class()(page=self.key, **out)
        for rule, message in self.requires:
            try:
                ok = rule(cfg)
            except Exception as err:  # noqa: BLE001 - a rule that cannot be evaluated is not satisfied
                ok, message = False, f"{message} (the rule could not be evaluated: {type(err).__name__}: {err})"
            if not ok:
                named = [n for n in out if re.search(rf"(?<![\w.]){re.escape(n)}(?!\w)", message)]
                raise ParameterError(
                    f"parameters of page {self.key!r} violate the rule {message}; received "
                    + ", ".join(f"{n}={_short(out[n], 60)}" for n in (named or out))
                )
        self.check_cost(cfg)
        return cfg

    def config_class(self) -> type:
        """The page's typed, frozen config: a dataclass with one field per parameter (its declared type)
        plus ``page``; ``dataclasses.replace(cfg, seed=2)`` gives a changed copy, assignment is refused."""
        cls = self.__dict__.get("_config_class")
        if cls is None:
            name = "".join(w.capitalize() for w in re.split(r"[^0-9A-Za-z]+", self.key) if w) + "Config"
            fields = [("page", str)] + [(n, p.type) for n, p in self.params.items()]
            cls = dataclasses.make_dataclass(name, fields, frozen=True)
            cls.__doc__ = f"Validated parameters of page {self.key!r}:\n" + self.describe()
            self.__dict__["_config_class"] = cls
        return cls

    def estimate(self, cfg: SimpleNamespace) -> float | None:
        """Estimated seconds on 2 CPUs of a run with checked values ``cfg`` (None without ``cost``)."""
        if self.cost is None:
            return None
        return float(self.cost[0](cfg))

    def check_cost(self, cfg: SimpleNamespace) -> float | None:
        """Refuse (ParameterError) an estimate above the limit unless forced; warn above COST_WARN_S."""
        seconds = self.estimate(cfg)
        if seconds is None:
            return None
        what = self.cost[1]
        limit = cost_limit()
        if not math.isfinite(seconds) or seconds > limit:
            if not forced():
                raise ParameterError(
                    f"page {self.key!r}: these parameters would run about {_duration(seconds)} on 2 CPUs "
                    f"({what}), above the limit of {_duration(limit)}; reduce them, or run anyway with "
                    f"`attnflow run --force` (ATTNFLOW_FORCE=1), or raise ATTNFLOW_MAX_SECONDS"
                )
        if seconds > COST_WARN_S:
            print(
                f"attnflow: page {self.key!r} is estimated to run about {_duration(seconds)} on 2 CPUs ({what})",
                file=sys.stderr,
                flush=True,
            )
        return seconds


def cost_limit() -> float:
    """The cost ceiling in seconds: ``ATTNFLOW_MAX_SECONDS`` or :data:`COST_REFUSE_S`; a value that is
    not a positive number is refused by name (ParameterError: exit 2 from ``attnflow run``)."""
    raw = os.environ.get("ATTNFLOW_MAX_SECONDS")
    if raw is None:
        return float(COST_REFUSE_S)
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not (math.isfinite(value) and value > 0):
        raise ParameterError(
            f"ATTNFLOW_MAX_SECONDS={raw!r}: allowed: a number of seconds > 0 (the cost limit of a page)"
        )
    return value


def forced() -> bool:
    """Whether cost limits are lifted (``ATTNFLOW_FORCE=1``, set by ``attnflow run --force``)."""
    return os.environ.get("ATTNFLOW_FORCE", "").strip().lower() in {"1", "true", "yes", "on"}


def _duration(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "forever"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def literal_names(source: str) -> list[str] | None:
    """Names assigned by a cell made only of ``name = <literal>`` statements (comments and blank
    lines allowed), in order; None when the cell holds anything else (or does not parse).
    The parameters cell and papermill's injected cell are such cells."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
            targets = [t.id for t in node.targets]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            targets = [node.target.id]
        else:
            return None
        try:
            ast.literal_eval(node.value)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return None
        names.extend(t for t in targets if t not in names)
    return names


def _names_from_history(namespace: Mapping[str, Any]) -> list[str] | None:
    """In IPython: the names assigned by the literal-only cell run just before the current one
    (the parameters cell), and by papermill's injected cell if that is the one just before;
    None when not in IPython or that cell is not literal-only."""
    history = namespace.get("In")
    if not isinstance(history, list) or len(history) < 2 or "get_ipython" not in namespace:
        return None
    names: list[str] = []
    found = False
    for src in reversed(history[:-1]):  # history[-1] is the cell running validate
        if not isinstance(src, str) or not src.strip():
            continue  # In[0] is '' and empty cells say nothing
        got = literal_names(src)
        if got is None:
            break
        found = True
        names.extend(n for n in got if n not in names)
        if not src.lstrip().startswith(INJECTED_MARK):
            break  # the parameters cell: nothing before it counts
    return names if found else None


def _parameter_values(namespace: Mapping[str, Any], schema: Schema) -> dict[str, Any]:
    names = _names_from_history(namespace)
    if names is None and "get_ipython" in namespace and isinstance(namespace.get("In"), list):
        names = []  # IPython, but no literal cell just before: the schema's names
    if names is None:  # a plain namespace: every public literal is a parameter
        return {
            k: v
            for k, v in namespace.items()
            if not k.startswith("_") and k not in _KERNEL_NAMES and isinstance(v, _LITERAL_TYPES)
        }
    values = {n: namespace[n] for n in names if n in namespace}
    for n in schema.params:  # declared names set earlier (e.g. only cell 2 re-run)
        if n not in values and n in namespace:
            values[n] = namespace[n]
    return values


def validate(namespace: Mapping[str, Any], schema: Schema) -> SimpleNamespace:
    """Validate a page's parameters; call as ``cfg = params.validate(globals(), SCHEMA)``.

    In IPython the parameters are the names assigned by the literal-only cells run just before
    this one (the parameters cell and papermill's injected cell), plus declared names already
    set; other variables of a live kernel are ignored, so cells 1–2 can be re-run after a full
    run. With a plain namespace every public name holding a literal must be a declared
    parameter. The page key is registered with the claims ledger (in memory; nothing is written
    by validation) so that ``claims.check`` knows which page it is on.
    Returns a namespace holding the checked values (``cfg.n_classes``, ...).

    When the values are refused, a config of this page that an earlier run left in ``namespace``
    (``cfg``) is removed and the error says so: the cells after it then stop on the missing name
    instead of running on with the previous values.
    """
    try:
        cfg = schema.validate(_parameter_values(namespace, schema))
    except ParameterError as err:
        stale = _forget_configs(namespace, schema.key)
        if not stale:
            raise
        names = ", ".join(f"`{n}`" for n in stale)
        raise ParameterError(
            f"{err} (the previous run's {names} is removed: no later cell runs on the old values)"
        ) from None
    claims.begin_page(schema.key, {k: getattr(cfg, k) for k in schema.params})
    return cfg


def _forget_configs(namespace: Mapping[str, Any], key: str) -> list[str]:
    """Delete from ``namespace`` (when it can be changed) every validated config of page ``key``."""
    if not hasattr(namespace, "__delitem__"):
        return []
    stale = [
        name
        for name, v in list(namespace.items())
        if dataclasses.is_dataclass(v) and not isinstance(v, type) and getattr(v, "page", None) == key
    ]
    for name in stale:
        del namespace[name]
    return stale
