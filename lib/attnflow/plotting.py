"""One plotting style for the whole book (seaborn on matplotlib), print-readable."""
from __future__ import annotations

import matplotlib

import matplotlib.pyplot as plt
import seaborn as sns

__all__ = ["use_style", "PALETTE", "MODEL_COLORS", "STAGE_COLORS", "subplots"]

PALETTE = sns.color_palette("colorblind")
# The four sharpening parametrizations keep one colour everywhere in the book.
MODEL_COLORS = {"CACO": PALETTE[0], "CAFO": PALETTE[1], "FACO": PALETTE[2], "FAFO": PALETTE[3]}
# Focus–dilution stages, shaded behind time series.
STAGE_COLORS = {"condensation": "#dbe9f6", "plateau": "#f2f2f2", "focus": "#fde0c5", "dilution": "#e5f5e0", "escape": "#efe3f6"}


def use_style() -> None:
    """Apply the book style (call once per page)."""
    sns.set_theme(context="notebook", style="whitegrid", palette=PALETTE, font_scale=0.95)
    matplotlib.rcParams.update({
        "figure.dpi": 110,
        "savefig.dpi": 150,
        "figure.figsize": (7.0, 3.6),
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.titlesize": "medium",
        "legend.frameon": False,
        "lines.linewidth": 1.8,
    })
    _inline_in_kernels()


def _inline_in_kernels() -> None:
    """Show figures in executed notebooks even when the environment sets MPLBACKEND=Agg (a
    common CI setting), which silently replaces a kernel's inline backend."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython is in the lock
        return
    shell = get_ipython()
    if shell is not None and "IPKernelApp" in shell.config:
        shell.run_line_magic("matplotlib", "inline")


def subplots(nrows: int = 1, ncols: int = 1, width: float = 3.5, height: float = 3.0, **kw):
    """plt.subplots sized per panel, constrained layout."""
    kw.setdefault("constrained_layout", True)
    kw.setdefault("squeeze", False)
    return plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), **kw)
