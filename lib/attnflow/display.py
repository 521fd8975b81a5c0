"""Showing checked results in a page: equations from sympy, numbers glued into the prose.

``equation(name, expr)`` displays ``sympy.latex(expr)`` (the expression that was checked, not
a retyped copy) and glues it under ``name`` for ``{glue:math}`` in the text; ``number(name, x)``
glues a value for ``{glue:text}`name`:.4f``` so prose never carries hand-typed numbers (a
negative zero is glued as 0.0; a tiny negative value that a format rounds to "-0.0000" is
unsigned by the book's Sphinx extension, ``attnflow.sphinx_ext``); ``table(rows)`` and
``sentence(mapping)`` show a result without printing a raw dict. ``equation`` and ``number``
return their value in a form that is not echoed when a cell ends with the call.
"""
from __future__ import annotations

import re
from typing import Any

import sympy as sp
from IPython.display import Math, display

__all__ = ["equation", "number", "table", "sentence", "unsigned_zero"]


class _QuietStr(str):
    """A str that a cell ending with ``display.equation(...)`` does not print as its result."""

    def _ipython_display_(self) -> None:
        pass


class _QuietFloat(float):
    """A float that a cell ending with ``display.number(...)`` does not print as its result."""

    def _ipython_display_(self) -> None:
        pass


class _QuietInt(int):
    def _ipython_display_(self) -> None:
        pass


def _quiet(value: Any) -> Any:
    """The same value, not echoed when it is a cell's last expression (str, float, int; not bool)."""
    if isinstance(value, bool):
        return value
    for base, cls in ((str, _QuietStr), (float, _QuietFloat), (int, _QuietInt)):
        if type(value) is base:
            return cls(value)
    return value


# myst-nb's glue protocol (``myst_nb.glue``, myst-nb 1.x): the value's display bundle goes out with
# ``metadata["scrapbook"] = {name, mime_prefix}``, its mime keys prefixed by GLUE_PREFIX when the value
# is not shown. Written here rather than imported: importing ``myst_nb.ext.glue`` pulls in nbformat →
# jsonschema → rfc3987-syntax, whose 38 grammars take ~1.8 s to build in every page kernel (measured;
# ≈ 40 s of CPU per `make book`, ≈ 2 min per `make test`). tests/test_display.py checks that both emit
# the same display message, so a change of the protocol in myst-nb fails a test, not a build.
GLUE_PREFIX = "application/papermill.record/"


def _glue(name: str, value: Any, display_it: bool) -> None:
    from IPython.core.formatters import format_display_data

    bundle, metadata = format_display_data(value)
    prefix = "" if display_it else GLUE_PREFIX
    metadata["scrapbook"] = dict(name=name, mime_prefix=prefix)
    display({prefix + k: v for k, v in bundle.items()}, raw=True, metadata=metadata)


def equation(name: str, expr: Any, lhs: str | None = None, show: bool = True) -> str:
    """Display and glue the LaTeX of a sympy expression (or an already-built string)."""
    tex = expr if isinstance(expr, str) else sp.latex(expr)
    if lhs:
        tex = f"{lhs} = {tex}"
    _glue(name, Math(tex), display_it=show)
    return _quiet(tex)


def number(name: str, value: Any, show: bool = False) -> Any:
    """Glue a number (float/int/str) for use in the prose."""
    if hasattr(value, "item"):
        value = value.item()
    value = unsigned_zero(value)
    _glue(name, value, display_it=show)
    return _quiet(value)


def unsigned_zero(value: Any) -> Any:
    """-0.0 -> 0.0 (other values unchanged), so no glued number reads "-0"."""
    if isinstance(value, float) and value == 0.0:
        return 0.0
    return value


def unsigned_zero_text(text: str) -> str:
    """A formatted number that reads as zero loses its sign: "-0.0000" -> "0.0000", "-0%" -> "0%",
    "-0.00e+00" -> "0.00e+00"; anything else ("-0.0001", "-1e-09", "x-0") is unchanged."""
    t = text.strip()
    if t[:1] in ("-", "\u2212") and re.fullmatch(r"0*\.?0*(?:[eE][-+]?\d+)?%?", t[1:]) and "0" in t[1:].split("e")[0].split("E")[0]:
        return text.replace(t, t[1:], 1)
    return text


def _fmt_float(floatfmt: str, v: Any) -> str:
    if v != v:
        return "—"
    return unsigned_zero_text(floatfmt.format(unsigned_zero(float(v))))


def table(rows: list[dict[str, Any]], floatfmt: str = "{:.4g}"):
    """A small pandas table for display (numbers formatted, no index)."""
    import pandas as pd  # deferred: pandas takes about a second to import, and only tables need it

    df = pd.DataFrame(rows)
    fmt = {c: (lambda v, f=floatfmt: _fmt_float(f, v)) for c in df.columns if df[c].dtype.kind == "f"}
    return df.style.format(fmt).hide(axis="index")


def sentence(values: dict[str, Any], floatfmt: str = "{:.4g}") -> str:
    """``{"a": 1.0, "b": 2}`` -> ``"a = 1, b = 2"``: a result dict as one readable line."""
    def f(v):
        return _fmt_float(floatfmt, v) if isinstance(v, float) else str(v)
    return ", ".join(f"{k} = {f(v)}" for k, v in values.items())
