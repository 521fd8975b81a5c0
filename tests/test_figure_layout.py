"""The layout check of the book's figures (issue 25 item 10): ``plotting.check_layout`` finds each
fault class on a deliberately broken figure and passes its repaired twin, and ``plotting.tidy`` repairs
what it can (a too-wide suptitle, crowded droppable labels, a legend moved below its axes). The pages'
own figures are checked where their records are made: tests/test_pages.py runs every page at smoke
with the check on (``ATTNFLOW_CHECK_LAYOUT``), and a faulty figure fails its page."""

import warnings

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from attnflow import plotting  # noqa: E402


@pytest.fixture(autouse=True)
def style():
    with matplotlib.rc_context():
        plotting.use_style()
        yield
        plt.close("all")


def _curves(ax, n=3):
    t = np.linspace(0, 1, 200)
    for k in range(n):
        ax.plot(t, (k + 1) * t, label=f"curve {k}")


# --- each fault class on a broken figure, and the same figure repaired ---------------------------------


def test_a_manual_suptitle_over_two_line_panel_titles_is_an_overlap():
    fig, ax = plotting.subplots(1, 3, width=3.5, height=3.0)
    for a in ax[0]:
        _curves(a)
        a.set_title("a panel title\non two lines")
    fig.suptitle("the figure's title", y=1.04)  # placed by hand, not by the layout
    report = plotting.check_layout(fig)
    assert any("suptitle" in a and "title" in b for a, b, _ in report.overlaps), report.faults
    fig._suptitle.set_y(0.98)
    fig._suptitle._autopos = True  # what fig.suptitle(text) without y does: the layout makes room
    assert not plotting.check_layout(fig).overlaps


def test_crowded_tick_labels_overlap_each_other():
    fig, ax = plotting.subplots(1, 1, width=3.0, height=2.5)
    ax = ax[0, 0]
    ax.plot(np.arange(30), np.arange(30))
    ax.set_xticks(np.arange(30), [f"{1000 * k}" for k in range(30)])
    report = plotting.check_layout(fig)
    assert any("xtick" in a and "xtick" in b for a, b, _ in report.overlaps), report.faults
    ax.set_xticks(np.arange(0, 30, 10), [f"{1000 * k}" for k in range(0, 30, 10)])
    assert not plotting.check_layout(fig).overlaps


def test_an_axis_label_runs_into_the_title_of_the_panel_below():
    fig, ax = plt.subplots(2, 1, figsize=(4, 3))  # no layout engine
    for a in ax:
        a.plot([0, 1], [0, 1])
        a.set(xlabel="time t", title="a panel title")
    report = plotting.check_layout(fig)
    pairs = {(a.split()[1], b.split()[1]) for a, b, _ in report.overlaps}
    assert ("0", "1") in pairs, report.faults  # something of the top panel over the bottom one's title
    assert any("axes 0" in a and "xtick" in a and "axes 1" in b and "title" in b for a, b, _ in report.overlaps)
    fig.set_layout_engine("constrained")
    assert not plotting.check_layout(fig).overlaps


def test_a_ylabel_runs_into_the_tick_labels_of_the_panel_beside():
    fig, ax = plt.subplots(1, 2, figsize=(5, 3))  # no layout engine
    for a in ax:
        a.plot([0, 1], [0, 1e5])
    ax[0].yaxis.tick_right()  # its tick labels in the gap between the panels
    ax[1].set_ylabel("a y label")
    ax[1].tick_params(labelleft=False)  # its label sits next to its spine, in the same gap
    report = plotting.check_layout(fig)
    assert any("axes 0" in a and "ytick" in a and "axes 1 ylabel" in b for a, b, _ in report.overlaps), report.faults
    fig.set_layout_engine("constrained")
    assert not plotting.check_layout(fig).overlaps


def test_a_legend_over_a_title_is_an_overlap():
    fig, ax = plotting.subplots(1, 1, width=4.0, height=3.0)
    _curves(ax[0, 0])
    ax[0, 0].set_title("title")
    ax[0, 0].legend(loc="lower center", bbox_to_anchor=(0.5, 0.9))
    report = plotting.check_layout(fig)
    assert any("legend" in a + b and "title" in a + b for a, b, _ in report.overlaps), report.faults


def test_a_legend_over_the_curves_is_found_and_best_placement_clears_it():
    fig, ax = plotting.subplots(1, 1, width=4.0, height=3.0)
    t = np.linspace(0, 1, 200)
    ax = ax[0, 0]
    ax.plot(t, t, label="rising")
    ax.plot(t, 1 - t, label="falling")
    ax.legend(loc="center")  # where the two lines cross
    report = plotting.check_layout(fig)
    assert {art for _, art, _ in report.covered} == {"line 'rising' of axes 0", "line 'falling' of axes 0"}
    assert all(s > plotting.LEGEND_COVER_MAX for *_, s in report.covered)
    ax.legend(loc="best")
    assert not plotting.check_layout(fig).covered


def test_a_legend_over_scatter_points_is_found():
    fig, ax = plotting.subplots(1, 1, width=4.0, height=3.0)
    ax = ax[0, 0]
    x = np.linspace(0, 1, 20)
    ax.scatter(x, np.full(20, 0.5), label="points")
    ax.scatter([0, 1], [0, 1], label="corners")
    ax.legend(loc="center")
    report = plotting.check_layout(fig)
    assert [art for _, art, _ in report.covered] == ["scatter 'points' of axes 0"]
    ax.legend(loc="upper left")
    assert not plotting.check_layout(fig).covered


def test_small_legend_text_on_a_wide_figure_is_found_and_sized_for_both_columns():
    fig, ax = plotting.subplots(1, 3, width=3.5, height=3.0)
    for a in ax[0]:
        _curves(a)
    ax[0, 0].legend(fontsize="x-small")
    report = plotting.check_layout(fig)
    assert [name for name, _ in report.small] == ["legend of axes 0"]
    image_px = fig.get_size_inches()[0] * fig.dpi
    assert report.image_px == pytest.approx(image_px, rel=0.05)  # the tight box of a plain row of panels
    x_small = matplotlib.font_manager.FontProperties(size="x-small").get_size_in_points()
    expected = x_small * fig.dpi / 72 * plotting.COLUMN_PX / report.image_px
    assert report.min_text_px["desktop"] == pytest.approx(expected)
    assert report.min_text_px["phone"] == pytest.approx(expected * plotting.PHONE_COLUMN_PX / plotting.COLUMN_PX)
    ax[0, 0].legend()  # the style's legend size
    report = plotting.check_layout(fig)
    assert not report.small and report.min_text_px["desktop"] >= plotting.MIN_TEXT_PX


def test_a_narrow_figure_is_shown_at_its_own_size():
    fig, ax = plotting.subplots(1, 1, width=3.0, height=2.5)
    ax[0, 0].plot([0, 1], [0, 1])
    report = plotting.check_layout(fig)
    assert report.image_px < plotting.COLUMN_PX
    tick = plt.rcParams["xtick.labelsize"]
    assert report.min_text_px["desktop"] == pytest.approx(tick * fig.dpi / 72)  # 1 image px per CSS px


def test_tidy_wraps_a_suptitle_wider_than_its_figure():
    """A suptitle that overhangs the figure widens the saved image, so the browser shrinks every text."""
    fig, ax = plotting.subplots(1, 3, width=3.5, height=3.0)
    for a in ax[0]:
        _curves(a)
    title = "  ".join(f"{k}: a criterion of the grid, in words" for k in "LMFCAR")
    fig.suptitle(title)
    assert plotting.check_layout(fig).small  # the overhang shrinks the whole figure on the column
    plotting.tidy(fig, title)
    assert "\n" in fig.get_suptitle() and fig.get_suptitle().split() == title.split()  # wrapped, no word lost
    assert not plotting.check_layout(fig).faults


def test_tidy_hides_crowded_droppable_labels_in_the_order_they_were_drawn():
    fig, ax = plotting.subplots(1, 1, width=3.5, height=3.0)
    a = ax[0, 0]
    a.scatter([0.5, 0.51, 0.9], [0.5, 0.5, 0.9])
    fixed = a.text(0.9, 0.9, "fixed")  # not droppable: always kept
    first = plotting.droppable(a.annotate("frequent", (0.5, 0.5)))
    second = plotting.droppable(a.annotate("rare", (0.51, 0.5)))
    third = plotting.droppable(a.annotate("over fixed", (0.9, 0.9)))
    assert plotting.check_layout(fig).faults  # the labels run into each other
    plotting.tidy(fig)
    assert fixed.get_visible() and first.get_visible()
    assert not second.get_visible() and not third.get_visible()
    assert not plotting.check_layout(fig).faults


def test_a_long_legend_moved_below_does_not_collapse_the_layout():
    """tidy grows the figure for a legend it moves below before any layout pass: a draw with the legend
    but not yet the room for it collapsed the axes (matplotlib's warning fails the strict book build)."""
    fig, ax = plotting.subplots(1, 3, width=3.5, height=2.4)
    t = np.linspace(0, 1, 200)
    for a in ax[0]:
        for k in range(8):
            a.plot(t, np.full_like(t, 0.5) + 0.01 * k, label=f"a long label for curve number {k}")
        a.legend(loc="center")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plotting.tidy(fig)
        fig.savefig(__import__("io").BytesIO(), format="png", bbox_inches="tight")
    assert all(a.get_position().width > 0.15 for a in ax[0])
