"""One plotting style for the whole book (seaborn's, on matplotlib), readable at its displayed size.

Sizes are chosen for the book's text column (about 750 CSS px at a 1280 px window): a figure
is shown at ``min(its width, the column)``, so what a reader sees of a font is its size times
``column / figure width``. ``subplots`` caps the figure width at :data:`MAX_WIDTH` inches and the
style's smallest font (tick labels, legends) is 11 pt, which keeps every text at least 8 pt on
screen for a figure of full width (:func:`display_scale`).

The style is seaborn's ``set_theme(context="notebook", style="whitegrid", palette="colorblind")``
written out as matplotlib rcParams (:data:`SEABORN_THEME`), so that a page does not import seaborn —
and with it pandas and scipy.stats, about 1.5 s of every page's start-up — unless it draws a seaborn
plot; ``tests/test_plotting_style.py`` compares it with seaborn itself.

Every figure carries its provenance — page, parameters, commit, package version — in its file
metadata (PNG text chunks, PDF/SVG info fields), as showyourwork does for papers: the inline
PNGs of the executed pages get it from the display formatter that :func:`use_style` installs,
files written with :func:`savefig` get it directly; :func:`read_provenance` reads it back.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.pyplot as plt
from cycler import cycler
from matplotlib.colors import to_rgb

from attnflow import resources

__all__ = [
    "use_style",
    "PALETTE",
    "MODEL_COLORS",
    "STAGE_COLORS",
    "subplots",
    "savefig",
    "provenance",
    "read_provenance",
    "display_scale",
    "shade_stages",
    "MAX_WIDTH",
    "COLUMN_PX",
    "FIGURE_DPI",
    "SMALLEST_FONT_PT",
]

# seaborn's "colorblind" palette (as RGB triples, like ``seaborn.color_palette("colorblind")``)
PALETTE = [
    to_rgb(c)
    for c in (
        "#0173b2",
        "#de8f05",
        "#029e73",
        "#d55e00",
        "#cc78bc",
        "#ca9161",
        "#fbafe4",
        "#949494",
        "#ece133",
        "#56b4e9",
    )
]
# What seaborn.set_theme(context="notebook", style="whitegrid", palette=PALETTE, font_scale=1) sets, except
# its default colormap "rocket", which exists only once seaborn is imported (no figure of the book uses a
# default colormap).
SEABORN_THEME = {
    "axes.axisbelow": True,
    "axes.edgecolor": ".8",
    "axes.grid": True,
    "axes.labelcolor": ".15",
    "axes.labelsize": 12.0,
    "axes.linewidth": 1.25,
    "axes.prop_cycle": cycler("color", PALETTE),
    "axes.titlesize": 12.0,
    "font.sans-serif": ["Arial", "DejaVu Sans", "Liberation Sans", "Bitstream Vera Sans", "sans-serif"],
    "font.size": 12.0,
    "grid.color": ".8",
    "grid.linewidth": 1.0,
    "legend.fontsize": 11.0,
    "legend.title_fontsize": 12.0,
    "lines.solid_capstyle": "round",
    "patch.edgecolor": "w",
    "patch.force_edgecolor": True,
    "text.color": ".15",
    "xtick.bottom": False,
    "xtick.color": ".15",
    "xtick.labelsize": 11.0,
    "xtick.major.size": 6.0,
    "xtick.major.width": 1.25,
    "xtick.minor.size": 4.0,
    "xtick.minor.width": 1.0,
    "ytick.color": ".15",
    "ytick.labelsize": 11.0,
    "ytick.left": False,
    "ytick.major.size": 6.0,
    "ytick.major.width": 1.25,
    "ytick.minor.size": 4.0,
    "ytick.minor.width": 1.0,
}
# The four sharpening parametrizations keep one colour everywhere in the book.
MODEL_COLORS = {"CACO": PALETTE[0], "CAFO": PALETTE[1], "FACO": PALETTE[2], "FAFO": PALETTE[3]}
# Focus–dilution stages, shaded behind time series.
STAGE_COLORS = {
    "condensation": "#dbe9f6",
    "plateau": "#f2f2f2",
    "focus": "#fde0c5",
    "dilution": "#e5f5e0",
    "escape": "#efe3f6",
}

MAX_WIDTH = 10.5  # inches: the widest figure subplots makes (3 panels of 3.5 in)
COLUMN_PX = 752  # CSS px of the book's text column at a 1280 px window (sphinx-book-theme 1.3)
FIGURE_DPI = 110  # px per inch of the inline PNGs (1 CSS px per image px)
SMALLEST_FONT_PT = 11.0  # tick labels and legends (seaborn "notebook" context, font_scale 1)


def display_scale(width_in: float, column_px: float = COLUMN_PX, dpi: float = FIGURE_DPI) -> float:
    """How big a point of the figure is on screen, in CSS points (1 CSS pt = 4/3 CSS px).

    The image is ``width_in * dpi`` px wide and is shown at ``min(that, column_px)`` CSS px.
    """
    shown = min(width_in * dpi, column_px) / (width_in * dpi)
    return shown * dpi / 72 / (4 / 3)


def use_style() -> None:
    """Apply the book style (call once per page)."""
    matplotlib.rcParams.update(SEABORN_THEME)
    matplotlib.rcParams.update(
        {
            "figure.dpi": FIGURE_DPI,
            "savefig.dpi": 150,
            "figure.figsize": (7.0, 3.6),
            "axes.spines.top": False,
            "axes.spines.right": False,
            "axes.titlesize": "medium",
            "legend.frameon": True,  # legends may sit on data: a light frame keeps both readable
            "legend.framealpha": 0.85,
            "legend.edgecolor": "0.85",
            "legend.loc": "best",
            "lines.linewidth": 1.8,
        }
    )
    _inline_in_kernels()


def _inline_in_kernels() -> None:
    """Show figures in executed notebooks even when the environment sets MPLBACKEND=Agg (a
    common CI setting), which silently replaces a kernel's inline backend; and have every
    inline PNG carry the page's provenance in its text chunks."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython is in the lock
        return
    shell = get_ipython()
    if shell is not None and "IPKernelApp" in shell.config:
        shell.run_line_magic("matplotlib", "inline")
        install_provenance_formatter(shell)
        show_result_figure_once(shell)


def show_result_figure_once(shell) -> None:
    """A cell that ends with ``fig`` shows that figure once, not twice.

    The inline backend shows every open figure after a cell (``flush_figures``), also the one
    the cell just returned and IPython already displayed as its result. A ``post_execute``
    hook that runs before the backend's closes a figure that is this cell's result."""
    callbacks = shell.events.callbacks["post_execute"]
    if any(getattr(cb, "__name__", "") == "_close_result_figure" for cb in callbacks):
        return

    def _close_result_figure():
        from matplotlib.figure import Figure

        out = shell.user_ns.get("Out") or {}
        result = out.get(shell.execution_count - 1)  # the count is advanced before a cell runs
        if isinstance(result, Figure):
            plt.close(result)

    callbacks.insert(0, _close_result_figure)


def install_provenance_formatter(shell) -> None:
    """Replace the shell's ``image/png`` formatter for figures by one that writes provenance.

    Same arguments as IPython's inline backend (``bbox_inches="tight"``, figure dpi), plus
    ``metadata=provenance()`` evaluated when each figure is shown (the page and parameters are
    known by then: ``params.validate`` has run).
    """
    from IPython.core.pylabtools import print_figure
    from matplotlib.figure import Figure

    fmt = shell.display_formatter.formatters["image/png"]
    fmt.for_type(
        Figure, lambda fig: print_figure(fig, "png", bbox_inches="tight", base64=True, metadata=metadata("png"))
    )


@lru_cache(maxsize=1)
def _commit() -> str:
    state = resources.git_state(timeout=10)
    return state[0] + (" (with uncommitted changes)" if state[1] else "") if state else "unknown (not a git checkout)"


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("attnflow")
    except Exception:  # pragma: no cover
        return "unknown"


def provenance(page: str | None = None, parameters: dict[str, Any] | None = None) -> dict[str, str]:
    """Where a figure comes from: page, parameters (JSON), commit, package version.

    Defaults to the page and parameters the running page validated (``params.validate``)."""
    from attnflow import claims

    page = page or claims._state.get("page") or "unknown page"
    if parameters is None:
        parameters = claims._state.get("parameters") or {}
    return {
        "page": str(page),
        "parameters": json.dumps(
            claims._to_jsonable(dict(parameters)), sort_keys=True, default=str, ensure_ascii=False
        ),
        "commit": _commit(),
        "attnflow": _version(),
    }


def metadata(fmt: str, page: str | None = None, parameters: dict[str, Any] | None = None) -> dict[str, str]:
    """``savefig(metadata=...)`` for one file format (PNG takes free keys; PDF and SVG fixed ones)."""
    p = provenance(page, parameters)
    title = f"attnflow figure — page {p['page']}"
    source = f"attnflow {p['attnflow']}, commit {p['commit']}"
    fmt = fmt.lower()
    if fmt == "png":
        return {
            "Title": title,
            "Source": source,
            "Description": "parameters: " + p["parameters"],
            **{f"attnflow:{k}": v for k, v in p.items()},
        }
    if fmt == "pdf":
        return {"Title": title, "Subject": "parameters: " + p["parameters"], "Keywords": source}
    if fmt == "svg":
        return {"Title": title, "Description": "parameters: " + p["parameters"], "Source": source}
    return {}


def savefig(fig, path, *, page: str | None = None, parameters: dict[str, Any] | None = None, **kw) -> Path:
    """``fig.savefig`` with the figure's provenance in the file's metadata (png, pdf, svg)."""
    path = Path(path)
    fmt = kw.get("format") or path.suffix.lstrip(".") or matplotlib.rcParams["savefig.format"]
    kw.setdefault("bbox_inches", "tight")
    meta = metadata(fmt, page, parameters)
    if meta:
        kw["metadata"] = {**meta, **kw.get("metadata", {})}
    fig.savefig(path, **kw)
    return path


def read_provenance(png: bytes | str | Path) -> dict[str, str]:
    """The ``attnflow:*`` text chunks of a PNG (bytes or a file), keys without the prefix."""
    import io

    from PIL import Image

    data = png if isinstance(png, bytes) else Path(png).read_bytes()
    with Image.open(io.BytesIO(data)) as im:
        im.load()
        text = dict(getattr(im, "text", {}) or im.info)
    return {k[len("attnflow:") :]: str(v) for k, v in text.items() if k.startswith("attnflow:")}


def subplots(nrows: int = 1, ncols: int = 1, width: float = 3.5, height: float = 3.0, **kw):
    """plt.subplots sized per panel, constrained layout, at most :data:`MAX_WIDTH` inches wide.

    A row wider than ``MAX_WIDTH`` is narrowed (panel heights kept), so that its text stays
    readable once the browser fits it to the column.
    """
    kw.setdefault("constrained_layout", True)
    kw.setdefault("squeeze", False)
    total = width * ncols
    if total > MAX_WIDTH:
        width = MAX_WIDTH / ncols
    return plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), **kw)


def shade_stages(
    ax, spans, *, clip: bool = False, labels: bool = False, min_label_width: float = 0.03, alpha: float = 1.0
) -> None:
    """Shade focus–dilution stages behind the curves of ``ax`` (the one stage-shading helper of the book).

    spans: (stage, t0, t1) or (stage, t0, t1, tag) with stage a key of ``STAGE_COLORS``; empty,
        reversed or non-finite intervals are skipped. clip: shade only the part in the current x-limits
        and keep them (call after plotting). labels: write each span's ``tag`` (default: the stage's
        initial) at the top where the span covers at least ``min_label_width`` of the axis.
    """
    import math

    import matplotlib.transforms as mtransforms

    if clip or labels:
        x0, x1 = ax.get_xlim()
        log = ax.get_xscale() == "log"
        scale = (lambda x: math.log(max(x, 1e-300))) if log else (lambda x: x)
        trans = mtransforms.blended_transform_factory(ax.transData, ax.transAxes)
    for span in spans:
        stage, a, b = span[:3]
        if stage not in STAGE_COLORS:
            raise ValueError(f"unknown stage {stage!r}; known: {', '.join(STAGE_COLORS)}")
        if clip:
            a, b = max(a, x0), min(b, x1)
        if not (math.isfinite(a) and math.isfinite(b) and b > a):
            continue
        ax.axvspan(a, b, color=STAGE_COLORS[stage], alpha=alpha, zorder=0, lw=0)
        if labels and (scale(b) - scale(a)) / (scale(x1) - scale(x0)) >= min_label_width:
            tag = span[3] if len(span) > 3 else stage[0].upper()
            mid = math.exp(0.5 * (scale(a) + scale(b))) if log else 0.5 * (a + b)
            ax.text(mid, 0.98, tag, transform=trans, ha="center", va="top", fontsize=8, color="0.3")
    if clip:
        ax.set_xlim(x0, x1)
