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
import os
from dataclasses import dataclass
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
    "check_layout",
    "LayoutReport",
    "PHONE_COLUMN_PX",
    "MIN_TEXT_PX",
    "LEGEND_COVER_MAX",
    "tidy",
    "legend_below",
    "droppable",
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
            droppable(
                ax.text(mid, 0.98, tag, transform=trans, ha="center", va="top", fontsize=SMALLEST_FONT_PT, color="0.3")
            )  # a narrow stage's tag gives way to the one before it (tidy)
    if clip:
        ax.set_xlim(x0, x1)


# --- layout check (issue 25 item 10) ------------------------------------------------------------------
#
# What a reader sees of a rendered figure: texts that run into each other, legends over the curves, and
# text too small once the browser fits the figure to the column. The inline PNG of a page is the figure's
# tight bounding box at ``figure.dpi`` (IPython's ``print_figure(bbox_inches="tight")``, 1 image px per CSS
# px), shown at ``min(its width, the column)`` (book/_static/attnflow.css: ``div.cell_output img
# {max-width: 100%}``).

PHONE_COLUMN_PX = 358  # CSS px of the text column on a 390 px phone (the browser test's narrow width)
MIN_TEXT_PX = 8 * 4 / 3  # smallest readable figure text on screen: 8 CSS pt, half of the theme's 16 px body
LEGEND_COVER_MAX = 0.05  # share of one line's drawn length (a scatter's points) a legend may hide
OVERLAP_MIN_PX = 1.0  # two texts overlap when their boxes share more than this in both directions (image px)
LAYOUT_CHECK_ENV = "ATTNFLOW_CHECK_LAYOUT"
"""Set (to anything non-empty), :func:`tidy` raises :class:`LayoutError` on a figure that still has a layout
fault after tidying; the page tests set it, so every figure of every page is checked where it is drawn."""


class LayoutError(AssertionError):
    """A book figure with overlapping texts, a legend over its data or text too small for the column."""


@dataclass(frozen=True)
class LayoutReport:
    """What :func:`check_layout` found on one figure.

    overlaps: (text, text, (width, height) of the shared box in image px) for every pair of texts (or a
        legend's box and a text) that run into each other.
    covered: (legend, artist, share) for every line or scatter a legend hides more than
        ``cover_max`` of.
    min_text_px: {"desktop": px, "phone": px}, the smallest text's font size in CSS px once the figure is
        shown at the column width; ``smallest``: that text.
    image_px: width of the inline PNG (the tight bounding box at the figure's dpi).
    small: texts below ``min_px`` on the desktop column, (text, CSS px).
    """

    overlaps: list
    covered: list
    small: list
    min_text_px: dict
    smallest: str
    image_px: float

    @property
    def faults(self) -> list[str]:
        out = [f"overlap: {a} × {b} ({w:.0f}×{h:.0f} px)" for a, b, (w, h) in self.overlaps]
        out += [f"legend over data: {leg} hides {100 * s:.0f}% of {art}" for leg, art, s in self.covered]
        out += [f"small text: {t} is {px:.1f} CSS px on the {COLUMN_PX} px column" for t, px in self.small]
        return out

    def counts(self) -> dict[str, int]:
        return {"overlap": len(self.overlaps), "legend": len(self.covered), "small": len(self.small)}


def _texts(fig, renderer):
    """(name, Text, group, size group) of every drawn, non-empty text of ``fig``; ``group`` keys texts whose
    mutual placement is not a fault, ``size group`` the texts reported together when too small (one axis's
    tick labels)."""
    out = []

    def add(name, t, group=None, size_group=None):
        if t is not None and t.get_visible() and t.get_text().strip():
            out.append((name, t, group, size_group or name))

    add("suptitle", getattr(fig, "_suptitle", None))
    add("supxlabel", getattr(fig, "_supxlabel", None))
    add("supylabel", getattr(fig, "_supylabel", None))
    for i, t in enumerate(fig.texts):
        if t not in (
            getattr(fig, "_suptitle", None),
            getattr(fig, "_supxlabel", None),
            getattr(fig, "_supylabel", None),
        ):
            add(f"figure text {i} {t.get_text()[:20]!r}", t)
    for i, ax in enumerate(fig.axes):
        if not ax.get_visible() or not ax.axison and not ax.get_title() and not ax.texts:
            continue
        tag = f"axes {i} ({ax.get_title()[:25]!r})" if ax.get_title() else f"axes {i}"
        for where, t in (("title", ax.title), ("left title", ax._left_title), ("right title", ax._right_title)):
            add(f"{tag} {where}", t)
        if ax.axison:
            for axis, name in ((ax.xaxis, "x"), (ax.yaxis, "y")):
                if not axis.get_visible():
                    continue
                add(f"{tag} {name}label", axis.label)
                add(f"{tag} {name} offset", axis.offsetText)
                for tick in axis._update_ticks():  # the ticks drawn: those in the view interval
                    for lab in (tick.label1, tick.label2):
                        add(f"{tag} {name}tick {lab.get_text()!r}", lab, size_group=f"{tag} {name}ticks")
        for t in ax.texts:
            add(f"{tag} text {t.get_text()[:20]!r}", t, size_group=f"{tag} texts")
    return out


def _legends(fig):
    legends = [(f"figure legend {i}", leg, None) for i, leg in enumerate(fig.legends)]
    for i, ax in enumerate(fig.axes):
        leg = ax.get_legend()
        if leg is not None and leg.get_visible():
            legends.append((f"legend of axes {i}", leg, ax))
    return legends


def _shared(a, b) -> tuple[float, float]:
    return min(a.x1, b.x1) - max(a.x0, b.x0), min(a.y1, b.y1) - max(a.y0, b.y0)


def _drawn_points(artist, ax, step_px: float = 1.0):
    """Display coordinates of what ``artist`` draws inside ``ax``: a line sampled every ``step_px`` along its
    segments (its markers only when it has no line), a scatter's points."""
    import numpy as np
    from matplotlib.collections import PathCollection
    from matplotlib.lines import Line2D

    if isinstance(artist, Line2D):
        xy = artist.get_transform().transform(np.asarray(artist.get_xydata(), dtype=float))
        xy = xy[np.isfinite(xy).all(1)]
        if artist.get_linestyle() not in ("None", "", " ", "none") and len(xy) > 1:
            seg = np.diff(xy, axis=0)  # (n-1, 2)
            n = np.maximum(1, np.ceil(np.hypot(*seg.T) / step_px).astype(int))
            n = np.minimum(n, 2000)
            parts = [xy[i] + np.linspace(0, 1, k, endpoint=False)[:, None] * seg[i] for i, k in enumerate(n)]
            xy = np.concatenate(parts + [xy[-1:]])
    elif isinstance(artist, PathCollection):
        off = np.asarray(artist.get_offsets(), dtype=float)
        if not len(off):
            return np.zeros((0, 2))
        xy = artist.get_offset_transform().transform(off)
    else:
        return np.zeros((0, 2))
    xy = xy[np.isfinite(xy).all(1)]
    box = ax.get_window_extent()
    inside = (xy[:, 0] >= box.x0) & (xy[:, 0] <= box.x1) & (xy[:, 1] >= box.y0) & (xy[:, 1] <= box.y1)
    return xy[inside]


def check_layout(
    fig,
    *,
    column_px: float = COLUMN_PX,
    phone_px: float = PHONE_COLUMN_PX,
    min_px: float = MIN_TEXT_PX,
    cover_max: float = LEGEND_COVER_MAX,
    overlap_px: float = OVERLAP_MIN_PX,
) -> LayoutReport:
    """The layout faults a reader sees on the rendered ``fig`` (drawn here, with its layout engine).

    Text–text overlaps (any two drawn texts: titles, suptitle, axis and tick labels, offsets, annotations,
    legends as one box each, whose own entries are not compared with each other), legends hiding more than
    ``cover_max`` of a line's drawn length or of a scatter's points, and the smallest font size in CSS px
    when the inline PNG is shown at ``column_px`` (desktop) and ``phone_px`` (phone), texts under ``min_px``
    on the desktop column listed. Uses the renderer's window extents (image px at the figure's dpi).
    """
    from matplotlib.collections import PathCollection
    from matplotlib.lines import Line2D

    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    texts = _texts(fig, renderer)
    legends = _legends(fig)
    boxes = [(name, t.get_window_extent(renderer), group) for name, t, group, _ in texts]
    boxes += [(name, leg.get_window_extent(renderer), name) for name, leg, _ in legends]
    overlaps = []
    for i in range(len(boxes)):
        for j in range(i + 1, len(boxes)):
            (na, a, ga), (nb, b, gb) = boxes[i], boxes[j]
            if ga is not None and ga == gb:
                continue
            w, h = _shared(a, b)
            if w > overlap_px and h > overlap_px:
                overlaps.append((na, nb, (w, h)))

    covered = []
    for name, leg, owner in legends:
        lb = leg.get_window_extent(renderer)
        axes = [owner] if owner is not None else fig.axes
        if owner is not None:  # twins share the legend's area
            axes += [ax for ax in fig.axes if ax is not owner and ax.bbox.bounds == owner.bbox.bounds]
        for ax in axes:
            if not ax.get_visible() or _shared(lb, ax.get_window_extent())[0] <= 0:
                continue
            for art in list(ax.lines) + [c for c in ax.collections if isinstance(c, PathCollection)]:
                if not art.get_visible() or (art.get_alpha() is not None and art.get_alpha() == 0):
                    continue
                xy = _drawn_points(art, ax)
                if not len(xy):
                    continue
                under = (xy[:, 0] >= lb.x0) & (xy[:, 0] <= lb.x1) & (xy[:, 1] >= lb.y0) & (xy[:, 1] <= lb.y1)
                share = float(under.mean())
                if share > cover_max:
                    kind = "line" if isinstance(art, Line2D) else "scatter"
                    label = art.get_label()
                    label = label if label and not label.startswith("_") else f"unlabelled {kind}"
                    covered.append((name, f"{kind} {label!r} of axes {fig.axes.index(ax)}", share))

    tight = fig.get_tightbbox(renderer)  # inches
    image_px = tight.width * fig.dpi

    def css(pt: float, col: float) -> float:
        return pt * fig.dpi / 72 * min(image_px, col) / image_px

    sized = {}  # size group -> smallest font size (pt)
    for _, t, _, size_group in texts:
        sized[size_group] = min(sized.get(size_group, float("inf")), t.get_fontsize())
    for name, leg, _ in legends:
        for t in leg.get_texts() + [leg.get_title()]:
            if t.get_text().strip():
                sized[name] = min(sized.get(name, float("inf")), t.get_fontsize())
    smallest, pt = min(sized.items(), key=lambda s: s[1]) if sized else ("", float("nan"))
    small = [(n, css(p, column_px)) for n, p in sized.items() if css(p, column_px) < min_px - 1e-9]
    return LayoutReport(
        overlaps=overlaps,
        covered=covered,
        small=small,
        min_text_px={"desktop": css(pt, column_px), "phone": css(pt, phone_px)},
        smallest=smallest,
        image_px=float(image_px),
    )


def _covered_legends(fig, cover_max: float = LEGEND_COVER_MAX):
    """The axes whose own legend hides more than ``cover_max`` of one of their lines or scatters."""
    report = check_layout(fig, cover_max=cover_max)
    names = {leg for leg, _, _ in report.covered}
    return [ax for i, ax in enumerate(fig.axes) if f"legend of axes {i}" in names]


def legend_below(ax, **kw):
    """A legend of ``ax`` under its x label, centred, as many columns as fit the axes' width.

    The anchor sits the depth of the tick and axis labels below the axes (in points, so it stays there when
    the layout engine resizes the axes); constrained layout then makes room for it."""
    import matplotlib.transforms as mtransforms

    fig = ax.figure
    old = ax.get_legend()
    handles, labels = (old.legend_handles, [t.get_text() for t in old.get_texts()]) if old else (None, None)
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    if old is not None:
        kw.setdefault("title", old.get_title().get_text() or None)
        old.remove()
    renderer = fig.canvas.get_renderer()
    depth = (ax.bbox.y0 - ax.get_tightbbox(renderer).y0) / fig.dpi  # inches of ticks and x label
    shift = mtransforms.ScaledTranslation(0, -depth - 0.04, fig.dpi_scale_trans)
    ncol = len(labels)
    while True:
        leg = ax.legend(
            handles,
            labels,
            loc="upper center",
            bbox_to_anchor=(0.5, 0.0),
            bbox_transform=ax.transAxes + shift,
            ncol=ncol,
            **kw,
        )
        if ncol == 1 or leg.get_window_extent(renderer).width <= 1.15 * ax.bbox.width:
            return leg
        ncol -= 1


def _thin_ticks(fig, overlap_px: float = OVERLAP_MIN_PX) -> bool:
    """Fewer tick labels on every axis whose own labels run into each other: no minor labels, else about half
    as many major ones (a fixed list of labels, such as category names, is left alone). True if any changed."""
    from matplotlib import ticker

    renderer = fig.canvas.get_renderer()
    changed = False
    for ax in fig.axes:
        if not ax.get_visible() or not ax.axison:
            continue
        for axis in (ax.xaxis, ax.yaxis):
            labels = [
                lab
                for tick in axis._update_ticks()
                for lab in (tick.label1, tick.label2)
                if lab.get_visible() and lab.get_text().strip()
            ]
            boxes = [lab.get_window_extent(renderer) for lab in labels]
            if not any(min(_shared(a, b)) > overlap_px for i, a in enumerate(boxes) for b in boxes[i + 1 :]):
                continue
            minor = [t for t in axis.get_minor_ticks() if t.label1.get_visible() and t.label1.get_text()]
            if minor and not isinstance(axis.get_minor_formatter(), ticker.NullFormatter):
                axis.set_minor_formatter(ticker.NullFormatter())
            elif isinstance(axis.get_major_locator(), ticker.FixedLocator):
                continue
            elif axis.get_scale() == "log":
                n = len(axis.get_majorticklocs())
                axis.set_major_locator(ticker.LogLocator(numticks=max(2, n // 2)))
            else:
                n = len(axis.get_majorticklocs())
                axis.set_major_locator(ticker.MaxNLocator(nbins=max(2, n // 2)))
            changed = True
    if changed:
        fig.canvas.draw()
    return changed


DROPPABLE = "attnflow:droppable"  # gid of a text label that tidy may hide where it runs into another


def droppable(text):
    """Mark ``text`` (an axes text or annotation) as a label :func:`tidy` hides where, once the figure is laid
    out, it runs into a text of its axes drawn before it: draw the labels in the order of their importance
    (the most frequent token first, say). Returns ``text``."""
    text.set_gid(DROPPABLE)
    return text


def _drop_crowded_labels(fig, overlap_px: float = OVERLAP_MIN_PX) -> bool:
    """Hide each droppable label that overlaps a text of its axes kept before it (every text that is not
    droppable is kept). True if any was hidden."""
    renderer = fig.canvas.get_renderer()
    changed = False
    for ax in fig.axes:
        texts = [t for t in ax.texts if t.get_visible() and t.get_text().strip()]
        kept = [t.get_window_extent(renderer) for t in texts if t.get_gid() != DROPPABLE]
        for t in texts:
            if t.get_gid() != DROPPABLE:
                continue
            box = t.get_window_extent(renderer)
            if any(min(_shared(box, k)) > overlap_px for k in kept):
                t.set_visible(False)
                changed = True
            else:
                kept.append(box)
    if changed:
        fig.canvas.draw()
    return changed


def _fit_suptitle(fig) -> None:
    """Wrap a suptitle wider than the figure onto more lines (at word boundaries): a title that overhangs
    the figure widens the saved image, and the browser then shrinks every text of the figure with it."""
    import textwrap

    title = fig._suptitle
    if title is None or not title.get_text():
        return
    renderer = fig.canvas.get_renderer()
    room = 0.96 * fig.bbox.width
    text = " ".join(title.get_text().split("\n"))
    for _ in range(6):
        if title.get_window_extent(renderer).width <= room:
            return
        longest = max(title.get_text().split("\n"), key=len)
        chars = max(10, int(len(longest) * room / title.get_window_extent(renderer).width))
        title.set_text(textwrap.fill(text, width=chars, break_long_words=False))
        fig.canvas.draw()


def tidy(fig, title: str = "", cover_max: float = LEGEND_COVER_MAX):
    """The book's figure layout, applied last by every figure function: ``title`` as a suptitle placed by
    the layout engine (never at a hand-set height, which ran into two-line panel titles) and wrapped to the
    figure's width, labels marked :func:`droppable` hidden where they run into a label before them, and each axes
    legend that hides more than ``cover_max`` of a curve (see :func:`check_layout`) moved below its axes
    (:func:`legend_below`) unless ``loc="best"`` clears it, and fewer tick labels where an axis's own labels
    run into each other. Returns ``fig``."""
    if title:
        fig.suptitle(title)
    tried_best, grow, grown = set(), {}, {}
    fig.canvas.draw()
    _fit_suptitle(fig)
    for _ in range(4):  # each move changes the layout: look again
        thinned = _thin_ticks(fig)
        dropped = _drop_crowded_labels(fig)
        covered = _covered_legends(fig, cover_max)
        if not covered and not thinned and not dropped:
            break
        for ax in covered:
            leg = ax.get_legend()
            if id(ax) not in tried_best and leg._loc not in (0, "best") and leg._bbox_to_anchor is None:
                leg.set_loc("best")  # first matplotlib's own search for the emptiest corner
                tried_best.add(id(ax))
            else:
                leg = legend_below(ax)
                spec = ax.get_subplotspec()
                row = spec.rowspan.start if spec is not None else id(ax)
                # measured before any layout pass: a draw with the legend but not yet the room for it
                # collapses the axes under constrained layout (the book's strict build fails on that warning)
                height = leg.get_window_extent(fig.canvas.get_renderer()).height / fig.dpi + 0.1  # inches
                grow[row] = max(grow.get(row, 0.0), height)
        extra = sum(grow.values()) - sum(grown.values())
        if extra > 0:  # the panels keep their height: the figure grows by the legends moved under them
            w, h = fig.get_size_inches()
            fig.set_size_inches(w, h + extra)
            grown = dict(grow)
        fig.canvas.draw()
    if os.environ.get(LAYOUT_CHECK_ENV):
        faults = check_layout(fig, cover_max=cover_max).faults
        if faults:
            raise LayoutError(f"figure {fig.get_suptitle() or '(untitled)'!r}: " + "; ".join(faults))
    return fig
