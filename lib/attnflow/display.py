"""Showing checked results in a page: equations from sympy, numbers glued into the prose.

``equation(name, expr)`` displays ``sympy.latex(expr)`` (the expression that was checked, not
a retyped copy) and glues it under ``name`` for ``{glue:math}`` in the text; ``number(name, x)``
glues a value for ``{glue:text}`name`:.4f``` so prose never carries hand-typed numbers.
"""
from __future__ import annotations

from typing import Any

import sympy as sp
from IPython.display import Math, display

__all__ = ["equation", "number", "table"]


def _glue(name: str, value: Any, display_it: bool) -> None:
    try:
        from myst_nb import glue
    except ImportError:  # pragma: no cover - myst-nb is in the lock
        if display_it:
            display(value)
        return
    glue(name, value, display=display_it)


def equation(name: str, expr: Any, lhs: str | None = None, show: bool = True) -> str:
    """Display and glue the LaTeX of a sympy expression (or an already-built string)."""
    tex = expr if isinstance(expr, str) else sp.latex(expr)
    if lhs:
        tex = f"{lhs} = {tex}"
    _glue(name, Math(tex), display_it=show)
    return tex


def number(name: str, value: Any, show: bool = False) -> Any:
    """Glue a number (float/int/str) for use in the prose."""
    if hasattr(value, "item"):
        value = value.item()
    _glue(name, value, display_it=show)
    return value


def table(rows: list[dict[str, Any]], floatfmt: str = "{:.4g}"):
    """A small pandas table for display (numbers formatted, no index)."""
    import pandas as pd

    df = pd.DataFrame(rows)
    return df.style.format({c: floatfmt.format for c in df.columns if df[c].dtype.kind == "f"}).hide(axis="index")
