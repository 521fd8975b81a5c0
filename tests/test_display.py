"""attnflow.display: glued values reach myst-nb exactly as ``myst_nb.glue`` sends them."""

import sympy as sp
from IPython.display import Math

from attnflow import display


def _capture(monkeypatch, module, attr):
    sent = []
    monkeypatch.setattr(module, attr, lambda obj, **kw: sent.append((obj, kw)))
    return sent


def test_glue_sends_the_same_display_message_as_myst_nb(monkeypatch):
    import myst_nb.ext.glue as mg

    ours, theirs = _capture(monkeypatch, display, "display"), _capture(monkeypatch, mg, "ipy_display")
    for name, value, shown in [
        ("x", 0.125, False),
        ("n", 7, True),
        ("s", "FAFO", False),
        ("eq", Math(sp.latex(sp.Symbol("a") ** 2)), True),
    ]:
        display._glue(name, value, shown)
        mg.glue(name, value, display=shown)
    assert ours == theirs and len(ours) == 4
    assert display.GLUE_PREFIX == mg.GLUE_PREFIX
    hidden = ours[0][0]
    assert all(k.startswith(mg.GLUE_PREFIX) for k in hidden) and ours[0][1]["metadata"]["scrapbook"]["name"] == "x"


def test_number_glues_an_unsigned_zero_and_returns_a_quiet_value(monkeypatch):
    sent = _capture(monkeypatch, display, "display")
    out = display.number("z", -0.0)
    assert out == 0.0 and str(out) == "0.0"
    assert sent[0][0][display.GLUE_PREFIX + "text/plain"] == "0.0"


def test_a_page_kernel_gluing_a_value_does_not_import_nbformat():
    import subprocess
    import sys

    code = (
        "import sys; from attnflow import display; display.number('x', 1.5); "
        "print('nbformat' in sys.modules, 'jsonschema' in sys.modules, 'sympy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False", "False"]  # sympy only when a page shows an equation


class _Handle:
    def __init__(self, obj):
        self.shown = [obj]

    def update(self, obj):
        self.shown.append(obj)


def test_text_values_shows_only_the_numbers_a_rerun_changed(monkeypatch):
    handles = []

    def fake_display(obj, **kw):
        if kw.get("display_id"):
            handles.append(_Handle(obj))
            return handles[-1]

    monkeypatch.setattr(display, "display", fake_display)
    monkeypatch.setattr(display, "_GLUED", {})
    monkeypatch.setattr(display, "_WAITING", [])
    display.glue(t_max=400.0, n=9, dev=-0.0)
    display.text_values({"t_max:.0f": "400", "n": "9", "dev:.2f": "0.00"})  # the book's own run: nothing shown
    assert handles == []
    display.glue(t_max=40.0)
    display.text_values({"t_max:.0f": "400", "n": "9"})
    (only,) = handles
    said = "*The text above quotes the book defaults' run; in this run:* `t_max` = **40** (the text: 400)."
    assert only.shown[0].data == said


def test_text_values_waits_for_a_value_glued_further_down(monkeypatch):
    handles = []
    monkeypatch.setattr(display, "display", lambda obj, **kw: handles.append(_Handle(obj)) or handles[-1])
    monkeypatch.setattr(display, "_GLUED", {})
    monkeypatch.setattr(display, "_WAITING", [])
    display.text_values({"later:.1f": "2.5"})  # the paragraph comes before the cell that computes it
    waiting = [h for h in handles if h.shown[0].data == ""]
    assert len(waiting) == 1 and len(display._WAITING) == 1
    display.glue(later=3.25)
    assert "`later` = **3.2** (the text: 2.5)" in waiting[0].shown[-1].data and display._WAITING == []
