"""Showing checked results in a page: equations from sympy, numbers glued into the prose.

``equation(name, expr)`` displays ``sympy.latex(expr)`` (the expression that was checked, not
a retyped copy) and glues it under ``name`` for ``{glue:math}`` in the text; ``number(name, x)``
glues a value for ``{glue:text}`name`:.4f``` so prose never carries hand-typed numbers (a
negative zero is glued as 0.0; a tiny negative value that a format rounds to "-0.0000" is
unsigned by the book's Sphinx extension, ``attnflow_book.sphinx_ext``); ``table(rows)`` and
``sentence(mapping)`` show a result without printing a raw dict. ``equation`` and ``number``
return their value in a form that is not echoed when a cell ends with the call.

``text_values(cited)`` keeps a downloaded notebook's prose honest after a re-run: the export writes
the book defaults' numbers into the markdown and puts, after each paragraph that quotes glued
numbers, a hidden cell calling it with what the text says; when this run's values differ it shows
them right there (and it updates itself when a quoted value is glued only further down).
"""

from __future__ import annotations

import ast
import re
from typing import Any

from IPython.display import Math, display


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

_GLUED: dict[str, str] = {}  # name -> the text/plain of the value glued last in this kernel
_WAITING: list[tuple[Any, dict[str, str]]] = []  # text_values outputs that quote values not glued yet


def _glue(name: str, value: Any, display_it: bool) -> None:
    from IPython.core.formatters import format_display_data

    bundle, metadata = format_display_data(value)
    prefix = "" if display_it else GLUE_PREFIX
    metadata["scrapbook"] = dict(name=name, mime_prefix=prefix)
    display({prefix + k: v for k, v in bundle.items()}, raw=True, metadata=metadata)
    _GLUED[name] = str(bundle.get("text/plain", ""))
    for entry in list(_WAITING):
        handle, cited = entry
        if name in _cited_keys(cited):
            handle.update(_text_markdown(cited))
            if all(k in _GLUED for k in _cited_keys(cited)):
                _WAITING.remove(entry)


def format_plain_text(text: str, fmt_spec: str) -> str:
    """myst-nb's formatting of ``{glue:text}`key:fmt``` (literal_eval of the glued text, then
    ``format``), with a number that reads as zero unsigned as the book shows it."""
    try:
        value = ast.literal_eval(text)
    except (SyntaxError, ValueError):
        value = text
    if fmt_spec == "":
        return str(value)
    t = fmt_spec[-1]
    if t == "s":
        value = str(value)
    elif t in "bcdoxX":
        value = int(value)
    elif t in "eEfFgGn%":
        value = float(value)
    return prose_exponent(unsigned_zero_text(format(value, fmt_spec)))


def _cited_keys(cited: dict[str, str]) -> list[str]:
    return [ref.split(":", 1)[0] for ref in cited]


def _text_markdown(cited: dict[str, str]):
    from IPython.display import Markdown

    changed = []
    for ref, shown in cited.items():
        key, _, fmt = ref.partition(":")
        if key in _GLUED:
            live = format_plain_text(_GLUED[key], fmt)
            if live != shown:
                changed.append(f"`{key}` = **{live}** (the text: {shown})")
    if not changed:
        return Markdown("")
    return Markdown("*The text above quotes the book defaults' run; in this run:* " + "; ".join(changed) + ".")


def text_values(cited: dict[str, str]) -> None:
    """Compare the numbers a paragraph quotes with this run's glued values and show those that differ.

    ``cited``: ``{"key:fmt": "what the text shows"}`` (the export writes this call after each
    paragraph with ``{glue:text}`` numbers). Shows nothing when every value agrees; a value glued
    further down the notebook updates this output when it is glued."""
    waiting = any(k not in _GLUED for k in _cited_keys(cited))
    markdown = _text_markdown(cited)
    if not markdown.data and not waiting:
        return
    handle = display(markdown, display_id=True)
    if waiting:
        _WAITING.append((handle, dict(cited)))


def equation(name: str, expr: Any, lhs: str | None = None, show: bool = True) -> str:
    """Display and glue the LaTeX of a sympy expression (or an already-built string)."""
    if isinstance(expr, str):
        tex = expr
    else:
        import sympy as sp  # here, not at the top: pages that show no equation skip its ≈ 0.8 s import

        tex = sp.latex(expr)
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


def glue(**values: Any) -> None:
    """Glue several named values for the prose at once: ``display.glue(t_cond=t_cond, T1=T1)``.

    The names are the page's own variables, so a reader sees where each number in the text comes
    from; numpy scalars are glued as Python numbers, -0.0 as 0.0. Shows nothing."""
    for name, value in values.items():
        if isinstance(value, (bool, int, float, str)) or hasattr(value, "item"):
            number(name, value)
        else:
            raise TypeError(
                f"display.glue: {name} is a {type(value).__name__}; glue numbers and strings "
                "(a table or figure is shown, not glued)"
            )


def unsigned_zero(value: Any) -> Any:
    """-0.0 -> 0.0 (other values unchanged), so no glued number reads "-0"."""
    if isinstance(value, float) and value == 0.0:
        return 0.0
    return value


_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")
_E_NUMBER = re.compile(r"([-\u2212]?)(\d+(?:\.\d*)?)[eE]([-+]?)(\d+)")


def prose_exponent(text: str) -> str:
    """A number formatted in e-notation, as prose writes it: "1e+06" -> "10⁶", "2.5e-07" -> "2.5 × 10⁻⁷",
    "-3e+00" -> "-3"; any other text ("1e6 steps", "0.25", "x1e+06") is unchanged."""
    t = text.strip()
    m = _E_NUMBER.fullmatch(t)
    if not m:
        return text
    sign, mantissa, esign, digits = m.groups()
    exponent = int(digits) * (-1 if esign == "-" else 1)
    if exponent == 0:
        shown = sign + mantissa
    elif mantissa in ("1", "1.", "1.0"):
        shown = f"{sign}10{str(exponent).translate(_SUPERSCRIPT)}"
    else:
        shown = f"{sign}{mantissa} × 10{str(exponent).translate(_SUPERSCRIPT)}"
    return text.replace(t, shown, 1)


def unsigned_zero_text(text: str) -> str:
    """A formatted number that reads as zero loses its sign: "-0.0000" -> "0.0000", "-0%" -> "0%",
    "-0.00e+00" -> "0.00e+00"; anything else ("-0.0001", "-1e-09", "x-0") is unchanged."""
    t = text.strip()
    if (
        t[:1] in ("-", "\u2212")
        and re.fullmatch(r"0*\.?0*(?:[eE][-+]?\d+)?%?", t[1:])
        and "0" in t[1:].split("e")[0].split("E")[0]
    ):
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
