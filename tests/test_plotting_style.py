"""The book style without importing seaborn is seaborn's style: ``plotting.SEABORN_THEME`` and
``plotting.PALETTE`` against what seaborn itself sets (so the copy cannot drift when the lock moves)."""

import subprocess
import sys

import matplotlib
import pytest

from attnflow import plotting


def test_the_palette_is_seaborns_colorblind():
    sns = pytest.importorskip("seaborn")
    assert [tuple(c) for c in plotting.PALETTE] == [tuple(c) for c in sns.color_palette("colorblind")]


def test_the_theme_is_what_seaborn_sets(monkeypatch):
    sns = pytest.importorskip("seaborn")
    with matplotlib.rc_context():
        matplotlib.rcdefaults()
        before = dict(matplotlib.rcParams)
        sns.set_theme(context="notebook", style="whitegrid", palette=sns.color_palette("colorblind"), font_scale=1.0)
        seaborn_sets = {k: v for k, v in matplotlib.rcParams.items() if before.get(k) != v}
    with matplotlib.rc_context():
        matplotlib.rcdefaults()
        matplotlib.rcParams.update(plotting.SEABORN_THEME)
        ours = {k: matplotlib.rcParams[k] for k in seaborn_sets}
    assert set(seaborn_sets) - set(plotting.SEABORN_THEME) == {"image.cmap"}  # "rocket" needs seaborn
    assert {k: v for k, v in ours.items() if k != "image.cmap"} == {
        k: v for k, v in seaborn_sets.items() if k != "image.cmap"
    }


def test_a_page_style_does_not_import_seaborn():
    code = "import sys; from attnflow import plotting; plotting.use_style(); print('seaborn' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
