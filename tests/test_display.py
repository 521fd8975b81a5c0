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
    for name, value, shown in [("x", 0.125, False), ("n", 7, True), ("s", "FAFO", False),
                               ("eq", Math(sp.latex(sp.Symbol("a") ** 2)), True)]:
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

    code = ("import sys; from attnflow import display; display.number('x', 1.5); "
            "print('nbformat' in sys.modules, 'jsonschema' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]
