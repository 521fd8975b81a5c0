"""The book as a reader sees it (issue 12): unit tests of the reader-facing helpers, and a
headless-Chromium check of a small built site at 1280 and 390 px.

The browser part builds a three-page mini-book in a temporary folder with the repository's own
``_config.yml``, stylesheet and Sphinx extension (a prose page, the claims ledger and one small
notebook page with math, statement boxes, a wide equation, glued numbers, claim lines, a pandas
table and a three-panel figure), serves it on 127.0.0.1 and renders each page in Debian's
``chromium`` (``apt-get install -y chromium``); it is skipped, with that message, when Chromium
is absent. A script injected at the top of every served page records console errors, failed
resource loads and uncaught exceptions, waits for MathJax, and measures the layout; Chromium's
``--dump-dom`` hands the result back. ``ATTNFLOW_BROWSER_SITE=_build/html`` checks a built book
instead of the mini-book (every page, or those in ``ATTNFLOW_BROWSER_PAGES``, comma-separated);
``ATTNFLOW_BROWSER_JOBS`` Chromiums run at once (default: half the cores, at most 4).
"""

from __future__ import annotations

import html
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from functools import partial
from pathlib import Path

import pytest
from docutils import nodes

from attnflow import display, plotting
from attnflow_book import sphinx_ext

ROOT = Path(__file__).resolve().parents[1]
WIDTHS = (1280, 390)
DARK = "1280-dark"  # the desktop width again, in dark mode


# --- unit tests: navigation titles, glued numbers, scripts, MathJax pruning --------------------


@pytest.mark.parametrize(
    "tex, text",
    [
        (r"\theta_c^1", "θ_c¹"),
        (r"\log t", "log t"),
        (r"\log^2 t", "log² t"),
        (r"\eta_{QK}/\eta_{OV}", "η_QK/η_OV"),
        (r"\Theta(\delta)", "Θ(δ)"),
        (r"\frac{a}{b+1}", "a/(b+1)"),
        (r"\mathbb{E}\left[x_1\right]", "𝔼[x₁]"),
        (r"e^{b}/n", "eᵇ/n"),
        (r"e^{q}", "e^q"),  # no Unicode modifier q: the caret stays
    ],
)
def test_tex_to_unicode(tex, text):
    assert sphinx_ext.tex_to_unicode(tex) == text


def test_titles_lose_math_but_keep_text():
    title = nodes.title(
        "", "", nodes.Text("The unigram saddle "), nodes.math(r"\theta_c^1", r"\theta_c^1"), nodes.Text(" and its mode")
    )
    sphinx_ext._math_to_text(title)
    assert not list(title.findall(nodes.math))
    assert title.astext() == "The unigram saddle θ_c¹ and its mode"


@pytest.mark.parametrize(
    "text, fixed",
    [
        ("-0.0000", "0.0000"),
        ("-0", "0"),
        ("-0%", "0%"),
        ("-0.00e+00", "0.00e+00"),
        ("\u22120.000", "0.000"),
        ("-0.0001", "-0.0001"),
        ("-1e-09", "-1e-09"),
        ("x-0", "x-0"),
        ("0.5", "0.5"),
        ("-", "-"),
    ],
)
def test_unsigned_zero_text(text, fixed):
    assert display.unsigned_zero_text(text) == fixed


def test_number_and_tables_never_show_negative_zero():
    assert str(display.unsigned_zero(-0.0)) == "0.0"
    assert display.unsigned_zero(-1e-9) == -1e-9  # values are kept, only "-0" text goes
    assert display.sentence({"a": -1e-9, "b": 2, "c": float("nan")}, "{:.3f}") == "a = 0.000, b = 2, c = —"
    out = display.table([{"x": -1e-9, "y": 1.5}], floatfmt="{:.3f}").to_html()
    assert "-0.000" not in out and "0.000" in out and "1.500" in out


def test_number_and_equation_are_not_echoed_as_a_cell_result():
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    shell = InteractiveShell.instance()
    shell.run_cell("from attnflow import display\nimport sympy as sp", store_history=True)
    for cell in (
        "display.number('q_echo', 1.25)",
        "display.equation('e_echo', sp.Symbol('a')**2, show=False)",
        "display.number('n_echo', 7)",
    ):
        with capture_output() as cap:
            result = shell.run_cell(cell, store_history=True)
        echoed = cap.stdout.split("]:", 1)[-1].strip()  # a plain shell prints the "Out[n]:" prompt only
        assert result.success and echoed == "", (cell, cap.stdout)
    value = display.number("v_echo", 1.25)
    assert value == 1.25 and isinstance(value, float) and json.dumps([value]) == "[1.25]" and value * 2 == 2.5
    assert display.number("b_echo", True) is True


def test_pasted_negative_zero_is_unsigned():
    tree = nodes.paragraph()
    tree += nodes.inline("-0.0000", "-0.0000", classes=["pasted-text"])
    tree += nodes.inline("-0.0002", "-0.0002", classes=["pasted-text"])
    sphinx_ext._unsigned_zeros(None, tree, "x")
    assert [n.astext() for n in tree.findall(nodes.inline)] == ["0.0000", "-0.0002"]


@pytest.mark.parametrize(
    "text, prose",
    [
        ("1e+06", "10⁶"),
        ("2.5e-07", "2.5 × 10⁻⁷"),
        ("-3e+00", "-3"),
        ("1.0E+12", "10¹²"),
        (" 4e+05 ", " 4 × 10⁵ "),
        ("1e6 steps", "1e6 steps"),
        ("0.25", "0.25"),
        ("x1e+06", "x1e+06"),
    ],
)
def test_prose_exponent(text, prose):
    assert display.prose_exponent(text) == prose


def test_glued_numbers_in_prose_have_no_e_notation():
    """``{glue:text}`n:g``` of a million read "1e+06" in the prose (issue 25, item 10): in the book's
    pages (the pasted text) and in exported notebooks (format_plain_text) it reads 10⁶."""
    assert display.format_plain_text("1000000.0", "g") == "10⁶"
    assert display.format_plain_text("2.5e-07", ".2g") == "2.5 × 10⁻⁷"
    assert display.format_plain_text("0.001", "g") == "0.001"
    tree = nodes.paragraph()
    tree += nodes.inline("1e+06", "1e+06", classes=["pasted-text"])
    tree += nodes.literal("1e+06", "1e+06")  # code stays as written
    sphinx_ext._unsigned_zeros(None, tree, "x")
    assert [n.astext() for n in tree.children] == ["10⁶", "1e+06"]


def test_execution_table_marks_are_plain_text_not_emoji():
    """myst-nb's {nb-exec-table} marks a run ✅/❌, emoji that show as empty boxes without an emoji
    font (issue 25, item 10); the book shows ✔/✘ (text fonts), code is left as written."""
    from myst_nb.ext.execution_tables import make_stat_table

    meta = {
        "a": {"exec_data": {"mtime": 0.0, "method": "cache", "runtime": 1.0, "succeeded": True, "error": None}},
        "b": {
            "exec_data": {
                "mtime": 0.0,
                "method": "cache",
                "runtime": 1.0,
                "succeeded": False,
                "error": "CellExecutionError",
            }
        },
    }
    doc = nodes.section()
    doc += make_stat_table("reproducibility", meta)
    doc += nodes.literal_block("✅", "✅")
    assert "✅" in doc.astext()
    sphinx_ext._plain_marks(None, doc, "reproducibility")
    table = doc.children[0].astext()
    assert "✅" not in table and "❌" not in table and "✔" in table and "✘" in table
    assert doc.children[1].astext() == "✅"


def test_duplicate_inline_scripts_are_dropped():
    from sphinx.builders.html._assets import _JavaScript

    body = 'const THEBE_JS_URL = "x"'
    scripts = [
        _JavaScript("_static/a.js"),
        _JavaScript(None, body=body),
        _JavaScript("", body=body),
        _JavaScript("_static/a.js", priority=500),
    ]
    ctx = {"script_files": scripts}
    sphinx_ext._dedupe_scripts(None, "p", "page.html", ctx, None)
    assert [(j.filename, j.attributes.get("body")) for j in ctx["script_files"]] == [
        ("_static/a.js", None),
        (None, body),
    ]


ENTRY_JS = (
    'x={autoload:(0,u.expandable)({cancel:["cancel","bcancel"],amscd:[[],["CD"]],'
    'boldsymbol:["boldsymbol"]})};deps={"[tex]/cancel":["input/tex-base","[tex]/enclose"],'
    '"[tex]/enclose":["input/tex-base"],"[tex]/amscd":["input/tex-base"]}'
)


def test_mathjax_needed_follows_autoload_and_dependencies():
    assert sphinx_ext.mathjax_needed(ENTRY_JS, r"\(a\)") == set()
    assert sphinx_ext.mathjax_needed(ENTRY_JS, r"\[\cancel{x}\]") == {"cancel", "enclose"}
    assert sphinx_ext.mathjax_needed(ENTRY_JS, r"\begin{CD} a \end{CD} \boldsymbol{x}") == {"amscd", "boldsymbol"}
    assert sphinx_ext.mathjax_needed(ENTRY_JS, r"\require{cancel}") == {"cancel", "enclose"}


def test_prune_mathjax_keeps_entry_fonts_and_needed_extensions(tmp_path):
    mj = tmp_path / "_static" / "mathjax"
    files = {
        "tex-chtml.js": ENTRY_JS,
        "tex-svg.js": "x" * 1000,
        "sre/mathmaps/en.json": "{}",
        "output/chtml/fonts/woff-v2/MathJax_Main-Regular.woff": "w",
        "input/tex/extensions/cancel.js": "c",
        "input/tex/extensions/enclose.js": "e",
        "input/tex/extensions/amscd.js": "a",
    }
    for rel, text in files.items():
        (mj / rel).parent.mkdir(parents=True, exist_ok=True)
        (mj / rel).write_text(text)
    (tmp_path / "index.html").write_text(r"<p>\(\cancel{x}\)</p>")
    before, after = sphinx_ext.prune_mathjax(tmp_path)
    left = sorted(p.relative_to(mj).as_posix() for p in mj.rglob("*") if p.is_file())
    assert left == [
        "input/tex/extensions/cancel.js",
        "input/tex/extensions/enclose.js",
        "output/chtml/fonts/woff-v2/MathJax_Main-Regular.woff",
        "tex-chtml.js",
    ]
    assert not (mj / "sre").exists() and after < before


def test_environment_table_renders_code_spans():
    cells = sphinx_ext._inline("takes a `seed` parameter, $x^2$")
    assert [type(c).__name__ for c in cells] == ["Text", "literal", "Text", "math"]
    assert "`" not in "".join(c.astext() for c in cells)


# --- unit tests: figures ----------------------------------------------------------------------


def test_subplots_width_is_capped_and_fonts_readable():
    import matplotlib.pyplot as plt

    plotting.use_style()
    fig, axes = plotting.subplots(1, 4, width=3.2, height=2.8)
    try:
        w, h = fig.get_size_inches()
        assert axes.shape == (1, 4) and w <= plotting.MAX_WIDTH + 1e-9 and h == pytest.approx(2.8)
        smallest = min(
            plt.rcParams[k]
            for k in ("xtick.labelsize", "ytick.labelsize", "legend.fontsize")
            if isinstance(plt.rcParams[k], float)
        )
        assert smallest >= plotting.SMALLEST_FONT_PT - 1e-9
        assert smallest * plotting.display_scale(w) >= 8.0
    finally:
        plt.close(fig)


def test_savefig_writes_provenance(tmp_path):
    import matplotlib.pyplot as plt

    fig, ax = plotting.subplots()
    ax[0, 0].plot([0, 1], [1, 0])
    try:
        out = plotting.savefig(fig, tmp_path / "f.png", page="sharpening/demo", parameters={"seed": 3, "lr": 0.5})
        prov = plotting.read_provenance(out)
        assert prov["page"] == "sharpening/demo"
        assert json.loads(prov["parameters"]) == {"lr": 0.5, "seed": 3}
        assert prov["commit"] and prov["attnflow"]
        for fmt in ("pdf", "svg"):
            plotting.savefig(fig, tmp_path / f"f.{fmt}", page="sharpening/demo", parameters={"seed": 3})
        assert b"sharpening/demo" in (tmp_path / "f.svg").read_bytes()
    finally:
        plt.close(fig)


def test_inline_formatter_writes_provenance():
    import base64

    import matplotlib.pyplot as plt
    from IPython.core.interactiveshell import InteractiveShell

    from attnflow import claims

    shell = InteractiveShell.instance()
    plotting.install_provenance_formatter(shell)
    saved = dict(claims._state)
    claims._state.update(page="focus_dilution/demo", parameters={"delta": 0.1})
    fig, ax = plotting.subplots()
    try:
        data, _ = shell.display_formatter.format(fig, include={"image/png"})
        prov = plotting.read_provenance(base64.b64decode(data["image/png"]))
        assert prov["page"] == "focus_dilution/demo" and json.loads(prov["parameters"]) == {"delta": 0.1}
    finally:
        claims._state.update(saved)
        plt.close(fig)


def test_cell_ending_with_fig_shows_it_once():
    import matplotlib
    import matplotlib.pyplot as plt
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    backend, interactive = matplotlib.get_backend(), matplotlib.is_interactive()
    shell = InteractiveShell.instance()
    try:
        from matplotlib_inline.backend_inline import configure_inline_support

        plt.switch_backend("module://matplotlib_inline.backend_inline")
        configure_inline_support(shell, "inline")
        plt.ion()  # as %matplotlib inline does in a kernel
        plotting.show_result_figure_once(shell)
        plotting.show_result_figure_once(shell)  # idempotent: one hook
        hooks = [cb for cb in shell.events.callbacks["post_execute"] if cb.__name__ == "_close_result_figure"]
        assert len(hooks) == 1
        shell.run_cell("import matplotlib.pyplot as plt", store_history=True)
        with capture_output() as cap:
            shell.run_cell("fig, ax = plt.subplots()\nax.plot([0, 1])\nfig", store_history=True)
        assert len(cap.outputs) == 0 and not plt.get_fignums()  # shown as the result, not again
        with capture_output() as cap:
            shell.run_cell("fig, ax = plt.subplots()\nax.plot([0, 1]);", store_history=True)
        assert len(cap.outputs) == 1  # still shown once by the backend
    finally:
        plt.close("all")
        configure_inline_support(shell, "agg")
        plt.switch_backend(backend)
        matplotlib.interactive(interactive)


# --- the browser check ------------------------------------------------------------------------

DEMO_PAGE = r"""# %% [markdown]
# # Demo page: the saddle $\theta_c^1$ and $\log t$
#
# A numbered statement and an unnumbered one, each linked: {prf:ref}`thm-line` and
# {prf:ref}`prop-demo`. A glued number that rounds to zero: {glue:text}`tiny:.4f`; a small
# negative one: {glue:text}`neg:.4f`.
#
# ```{prf:theorem} Move along a line
# :label: thm-line
# The two scalars satisfy $\Psi - r\Phi = \mathrm{const}$.
# ```
#
# ```{prf:proposition} An unnumbered statement
# :label: prop-demo
# A display equation much wider than the column:
#
# $$
# \mathcal{L}(\theta)=\sum_{i=1}^{n}\pi_i\log\frac{\pi_i}{p_\theta(i)}+\frac{\lambda}{2}\|W_QW_K^\top\|_F^2
# +\frac{\mu}{2}\|W_OW_V\|_F^2+\sum_{j=1}^{m}\sum_{k=1}^{m}\kappa_{jk}\,e^{\langle q_j,k_k\rangle}
# $$
#
# and inline math $\operatorname{tr}(W_QW_K^\top)$.
# ```
#
# Inline math longer than a phone's line breaks like text:
# $\dot\zeta=M_\perp\beta,\qquad\dot\beta=M_\perp^\top\zeta,\qquad M_\perp=A^\top\Pi\,(P-\hat P)+\big(\Psi(b_{\text{end}})-\Psi(b_0)\big)/\big(\Phi(a_{\text{end}})-\Phi(a_0)\big)$,
# and the text goes on after it.
#
# A wide matrix outside a box:
#
# $$
# M=\begin{pmatrix}m_{11}&m_{12}&m_{13}&m_{14}&m_{15}&m_{16}&m_{17}&m_{18}&m_{19}&m_{1,10}&m_{1,11}&m_{1,12}&m_{1,13}&m_{1,14}\\
# m_{21}&m_{22}&m_{23}&m_{24}&m_{25}&m_{26}&m_{27}&m_{28}&m_{29}&m_{2,10}&m_{2,11}&m_{2,12}&m_{2,13}&m_{2,14}\end{pmatrix}
# $$

# %% tags=["hide-input"]
from attnflow import claims, display, plotting

claims.begin_page("demo/page", {"seed": 0, "width": 3})
plotting.use_style()
display.number("tiny", -1.0e-7)
display.number("neg", -0.25)

# %%
claims.check("A2", 1.0000000001, 1.0, rtol=1e-8, what="a deliberately long description of the quantity that is measured here, so that the claim line is much wider than the output box",
             tolerance="solver tolerance scaled to the quantity, explained next to the check", source="reconstruction")
display.table([{"quantity": "validation", "value": 381.0, "spread": -1e-9}, {"quantity": "test", "value": 12.5, "spread": 0.25}])

# %%
fig, axes = plotting.subplots(1, 3)
for k, ax in enumerate(axes[0]):
    ax.plot([0, 1, 2], [0, k, 2 * k], label=f"panel {k}")
    ax.set_xlabel("time $t$")
    ax.legend()
fig

# %% tags=["hide-input"]
claims.finish()
"""  # noqa: E501 (the demo page is wide on purpose: long math and claim lines)

DEMO_INTRO = r"""# A mini-book

A prose page in the book's settings: a citation {cite:p}`vashisht26a`, inline math
$\eta_{QK}/\eta_{OV}$, a code span `make book`, and a link to the [demo page](demo/page).
"""

DEMO_TOC = """format: jb-book
root: book/intro
chapters:
- file: book/demo/page
- file: book/claims
- file: book/bibliography
"""


def build_minibook(dest: Path) -> Path:
    """Build the mini-book in ``dest`` with the repository's config, stylesheet and extension."""
    book = dest / "book"
    (book / "demo").mkdir(parents=True)
    shutil.copy(ROOT / "_config.yml", dest / "_config.yml")
    (dest / "_toc.yml").write_text(DEMO_TOC, encoding="utf-8")
    for name in ("claims.md", "power.yml", "bibliography.md", "references.bib"):
        shutil.copy(ROOT / "book" / name, book / name)
    (book / "intro.md").write_text(DEMO_INTRO, encoding="utf-8")
    shutil.copytree(ROOT / "book" / "_static", book / "_static")
    (book / "demo" / "page.py").write_text(DEMO_PAGE, encoding="utf-8")
    jb = Path(sys.executable).with_name("jupyter-book")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "lib") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("ATTNFLOW_CLAIMS_DIR", None)
    run = subprocess.run(
        [str(jb), "build", str(dest), "-W", "-n", "--keep-going"],
        cwd=dest,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, f"mini-book build failed:\n{run.stdout[-4000:]}\n{run.stderr[-4000:]}"
    return dest / "_build" / "html"


PROBE = r"""<script>
(function () {
  var R = window.__attnflow = {errors: []};
  window.addEventListener('error', function (e) {
    var t = e.target;
    if (t && t !== window && (t.src || t.href)) R.errors.push('failed to load ' + (t.src || t.href));
    else R.errors.push(String(e.message || e.error || e));
  }, true);
  window.addEventListener('unhandledrejection', function (e) { R.errors.push('unhandled rejection: ' + e.reason); });
  var ce = console.error;
  console.error = function () {
    R.errors.push(Array.prototype.join.call(arguments, ' '));
    return ce.apply(console, arguments);
  };
  function label(el) {
    var c = (typeof el.className === 'string' && el.className)
      ? '.' + el.className.trim().split(/\s+/).slice(0, 2).join('.') : '';
    return el.tagName.toLowerCase() + c;
  }
  function scrolls(el, stop) {
    for (var a = el.parentElement; a && a !== stop; a = a.parentElement) {
      var o = getComputedStyle(a).overflowX;
      if (o === 'auto' || o === 'scroll') return a;
    }
    return null;
  }
  // Inside MathJax's assistive MathML (the copy a screen reader reads): not seen only when that
  // copy is genuinely invisible, a box of at most 1 px that hides its overflow, inside the
  // column. MathJax's own style (clipped, but as wide as the formula) does not count as hidden:
  // its box still widens the page, which then pans sideways into blank space.
  function hidden(el, stop, right) {
    var a = el.closest('mjx-assistive-mml');
    if (!a || !stop.contains(a) || a === el) return false;
    var s = getComputedStyle(a), r = a.getBoundingClientRect();
    return (s.overflowX === 'hidden' || s.overflowX === 'clip') && (s.overflowY === 'hidden' || s.overflowY === 'clip')
      && r.width <= 1.5 && r.height <= 1.5 && r.right <= right;
  }
  function measure() {
    var col = document.querySelector('article.bd-article') || document.querySelector('main') || document.body;
    var right = col.getBoundingClientRect().right + 1, wide = [], outs = [];
    col.querySelectorAll('*').forEach(function (el) {
      var r = el.getBoundingClientRect();
      if (!r.width || r.right <= right) return;
      if (hidden(el, col, right)) return;
      var box = scrolls(el, col);
      if (box && box.getBoundingClientRect().right <= right) return;   // scrolls inside a box that fits
      wide.push(label(el) + ' ' + Math.round(r.width) + 'px');
    });
    var clipped = [];                            // math cut by a box that hides its overflow
    col.querySelectorAll('mjx-container > mjx-math').forEach(function (el) {
      var right = el.getBoundingClientRect().right;
      for (var a = el.parentElement; a && a !== col; a = a.parentElement) {
        var o = getComputedStyle(a).overflowX, ar = a.getBoundingClientRect().right;
        if (o === 'visible') continue;
        // scrolls: its box is what shows
        if (o === 'auto' || o === 'scroll') { right = Math.min(right, ar); continue; }
        if (right > ar + 1) { clipped.push(label(a) + ' ' + Math.round(right - ar) + 'px cut'); break; }
      }
    });
    col.querySelectorAll('div.cell_output pre').forEach(function (el) {
      if (el.scrollWidth > el.clientWidth + 1) outs.push(el.textContent.slice(0, 80));
    });
    var text = col.innerText;
    var prose = Array.prototype.filter.call(col.querySelectorAll('p, li, h1, h2, h3, td, th, div.math, span.math'),
      function (el) { return !el.closest('pre, code, .cell_input, .highlight'); })
      .map(function (el) { return el.textContent; }).join('\n');
    var nav = Array.prototype.map.call(document.querySelectorAll('nav, .bd-toc, .prev-next-area'),
      function (el) { return el.innerText; }).join('\n');
    var doc = document.scrollingElement || document.documentElement;
    // Text a reader cannot read: its colour against the background it sits on (the first opaque
    // ancestor's) below a contrast of 3:1 (WCAG's floor for large text); dark mode included.
    function rgba(str) {
      var m = /rgba?\(([^)]*)\)/.exec(str || '');
      if (!m) return null;
      var v = m[1].split(/[\s,\/]+/).filter(Boolean).map(parseFloat);
      return [v[0], v[1], v[2], v.length > 3 ? v[3] : 1];
    }
    function lum(c) {
      var a = c.slice(0, 3).map(function (x) {
        x /= 255;
        return x <= 0.03928 ? x / 12.92 : Math.pow((x + 0.055) / 1.055, 2.4);
      });
      return 0.2126 * a[0] + 0.7152 * a[1] + 0.0722 * a[2];
    }
    function under(el) {
      for (var a = el; a; a = a.parentElement) {
        var c = rgba(getComputedStyle(a).backgroundColor);
        if (c && c[3] > 0.5) return c;
      }
      return [255, 255, 255, 1];
    }
    var faint = [], seenEl = new Set();
    var tw = document.createTreeWalker(col, NodeFilter.SHOW_TEXT, null);
    for (var t = tw.nextNode(); t; t = tw.nextNode()) {
      var el = t.parentElement;
      if (!el || seenEl.has(el) || !t.data.trim() || el.closest('mjx-assistive-mml, script, style')) continue;
      seenEl.add(el);
      var box = el.getBoundingClientRect(), st = getComputedStyle(el);
      if (!box.width || !box.height || st.visibility === 'hidden' || parseFloat(st.opacity) === 0) continue;
      var fg = rgba(st.color), b = under(el);
      if (!fg || fg[3] < 0.05) continue;
      var l1 = lum(fg), l2 = lum(b), ratio = (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05);
      if (ratio < 3) faint.push(label(el) + ' "' + t.data.trim().slice(0, 30) + '" ' + ratio.toFixed(2));
    }
    // Words of the book's tables (ledger, errata findings, environment) laid over two lines, folded
    // parts unfolded first (after every other measure): "reconstr | uction" reads as two words.
    document.querySelectorAll('.toggle-hidden').forEach(function (el) { el.classList.remove('toggle-hidden'); });
    document.querySelectorAll('details').forEach(function (el) { el.open = true; });
    var broken = [];
    col.querySelectorAll('table.attnflow-table td, table.attnflow-table th').forEach(function (cell) {
      var walk = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT, null);
      for (var n = walk.nextNode(); n; n = walk.nextNode()) {
        if (n.parentElement.closest('code, pre, mjx-container')) continue;
        var rx = /[A-Za-z\u00C0-\u024F]{3,}/g, m;
        while ((m = rx.exec(n.data))) {
          var rg = document.createRange();
          rg.setStart(n, m.index);
          rg.setEnd(n, m.index + m[0].length);
          var rs = Array.prototype.filter.call(rg.getClientRects(), function (r) { return r.width > 0; });
          if (rs.length > 1 && Math.abs(rs[rs.length - 1].top - rs[0].top) > 2) broken.push(m[0]);
        }
      }
    });
    R.result = {
      dark: document.documentElement.dataset.theme === 'dark',
      faint_text: faint.slice(0, 20),
      broken_words: broken.slice(0, 20),
      column: Math.round(col.getBoundingClientRect().width),
      page_pan: Math.max(0, doc.scrollWidth - doc.clientWidth),   // how far the page itself scrolls sideways
      wide: wide.slice(0, 20), n_wide: wide.length, unwrapped_outputs: outs, clipped_math: clipped.slice(0, 20),
      mjx: document.querySelectorAll('mjx-container').length,
      inline_broken: Array.prototype.filter.call(col.querySelectorAll('mjx-container:not([display="true"]) > mjx-math'),
        function (el) { return el.getClientRects().length > 1; }).length,   // inline formulas laid over 2+ lines
      mjx_errors: document.querySelectorAll('mjx-merror').length,
      raw_roles: (text.match(/\{(glue|prf|cite|numref|ref|eq)[:}][^\n]{0,40}/g) || []),
      raw_tex: (prose.match(/\\\(|\\\[|\$\$/g) || []).length,
      nav_tex: (nav.match(/\\[A-Za-z]+|\\\(/g) || []).concat(document.title.match(/\\[A-Za-z]+/g) || []),
      statements: Array.prototype.map.call(document.querySelectorAll('div.proof > p.admonition-title'),
        function (el) { return el.textContent.trim(); }),
      title: document.title,
      errors: R.errors
    };
    var top = window.parent && window.parent !== window ? window.parent.document : document;
    var pre = top.createElement('pre');
    pre.id = 'attnflow-probe';
    pre.textContent = JSON.stringify(R.result);
    top.body.appendChild(pre);
  }
  window.addEventListener('load', function () {
    if (location.hash === '#attnflow-dark') {  // the reader's dark mode (pydata-sphinx-theme's switch)
      document.documentElement.dataset.mode = 'dark';
      document.documentElement.dataset.theme = 'dark';
    }
    var done = function () { setTimeout(measure, 300); };
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) MathJax.startup.promise.then(done, done);
    else setTimeout(function () {
      if (window.MathJax && MathJax.startup && MathJax.startup.promise) MathJax.startup.promise.then(done, done);
      else done();
    }, 500);
  });
})();
</script>"""


# Chromium's windows are at least 500 px wide, so a 390 px phone is emulated by an iframe of
# that width (its media queries and layout see a 390 px viewport); the probe inside it reports
# to the top document, which --dump-dom prints.
FRAME = """<!DOCTYPE html><html><head><meta charset="utf-8"><style>body{{margin:0}}</style></head>
<body><iframe src="/{page}" style="width:{width}px;height:900px;border:0"></iframe></body></html>"""


class _ProbeHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path.startswith("/__frame/"):  # a phone-wide viewport: the page in an iframe
            width, page = self.path[len("/__frame/") :].split("/", 1)
            return self._send(FRAME.format(width=int(width), page=html.escape(page)).encode("utf-8"))
        path = Path(self.translate_path(self.path))
        if path.is_dir():
            path = path / "index.html"
        if path.suffix != ".html" or not path.is_file():
            return super().do_GET()
        body = path.read_text(encoding="utf-8")
        self._send(body.replace("<head>", "<head>" + PROBE, 1).encode("utf-8"))

    def _send(self, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        exe = shutil.which(name)
        if exe:
            return exe
    return None


def render(exe: str, base: str, page: str, width: int) -> dict:
    """Load ``page`` of the site at ``base`` with a ``width`` px viewport in headless Chromium;
    the probe's measurements. Each run has its own profile folder, so runs can go in parallel."""
    import tempfile

    dark = width == DARK
    width = 1280 if dark else width
    window = max(width, 1280)
    url = base + (page if width >= 500 else f"__frame/{width}/{page}") + ("#attnflow-dark" if dark else "")
    for attempt in range(2):  # one retry: a loaded machine may drop a page load
        with tempfile.TemporaryDirectory(prefix="attnflow-chromium-") as profile:
            run = subprocess.run(
                [
                    exe,
                    "--headless=new",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--hide-scrollbars",
                    "--no-first-run",
                    "--disable-extensions",
                    f"--user-data-dir={profile}",
                    f"--window-size={window},900",
                    "--virtual-time-budget=20000",
                    "--dump-dom",
                    url,
                ],
                capture_output=True,
                text=True,
                timeout=180,
            )
        m = re.search(r'<pre id="attnflow-probe">(.*?)</pre>', run.stdout, re.S)
        if m:
            break
    assert m, f"the probe did not report for {url} at {width}px:\n{run.stderr[-2000:]}"
    return json.loads(html.unescape(m.group(1)))


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    exe = chromium()
    if exe is None:
        pytest.skip(
            "headless Chromium not found: install Debian's chromium (apt-get install -y chromium) "
            "to run the browser check of the built book"
        )
    given = os.environ.get("ATTNFLOW_BROWSER_SITE")
    if given:
        html_dir = Path(given).resolve()
        if not (html_dir / "index.html").exists():
            pytest.skip(f"ATTNFLOW_BROWSER_SITE={given} has no index.html")
        wanted = os.environ.get("ATTNFLOW_BROWSER_PAGES")
        pages = (
            [p.strip() for p in wanted.split(",") if p.strip()]
            if wanted
            else sorted(p.relative_to(html_dir).as_posix() for p in (html_dir / "book").rglob("*.html"))
        )
    else:
        html_dir = build_minibook(tmp_path_factory.mktemp("minibook"))
        pages = ["book/intro.html", "book/demo/page.html", "book/claims.html"]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(_ProbeHandler, directory=str(html_dir)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    results = {}
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}/"
        from concurrent.futures import ThreadPoolExecutor

        jobs = int(os.environ.get("ATTNFLOW_BROWSER_JOBS") or min(4, max(1, (os.cpu_count() or 2) // 2)))
        todo = [(page, width) for page in pages for width in (*WIDTHS, DARK)]
        with ThreadPoolExecutor(max_workers=jobs) as pool:  # one Chromium per (page, width)
            for key, res in zip(todo, pool.map(lambda pw: render(exe, base, *pw), todo)):
                results[key] = res
    finally:
        server.shutdown()
        server.server_close()
    return {"pages": pages, "results": results, "minibook": not given, "html": html_dir}


def _each(site):
    return sorted(site["results"].items(), key=lambda kv: (kv[0][0], str(kv[0][1])))


def test_no_console_errors(site):
    bad = {f"{p} @{w}px": r["errors"] for (p, w), r in _each(site) if r["errors"]}
    assert not bad, bad


def test_nothing_wider_than_its_column(site):
    bad = {f"{p} @{w}px (column {r['column']}px)": r["wide"] for (p, w), r in _each(site) if r["n_wide"]}
    assert not bad, bad


def test_page_never_pans_sideways(site):
    """What a reader sees: the page itself has no horizontal scroll (a formula, a table or an
    invisible box sticking out would let a phone pan into blank space)."""
    bad = {f"{p} @{w}px": f"{r['page_pan']}px" for (p, w), r in _each(site) if r["page_pan"] > 1}
    assert not bad, bad


def test_no_word_of_a_book_table_is_broken_across_lines(site):
    """The ledger's cells broke words mid-word ("reconstr uction") on a narrow column (issue 25, item 8)."""
    bad = {f"{p} @{w}px": r["broken_words"] for (p, w), r in _each(site) if r["broken_words"]}
    assert not bad, bad


def test_text_is_readable_in_light_and_dark_mode(site):
    """Dark mode was never looked at (issue 25, item 4): every text's contrast with its background
    is at least 3:1, in both modes."""
    assert all(r["dark"] == (w == DARK) for (_, w), r in _each(site)), "dark mode did not switch"
    bad = {f"{p} @{w}": r["faint_text"] for (p, w), r in _each(site) if r["faint_text"]}
    assert not bad, bad


def test_math_is_never_clipped(site):
    bad = {f"{p} @{w}px": r["clipped_math"] for (p, w), r in _each(site) if r["clipped_math"]}
    assert not bad, bad


def test_printed_output_wraps(site):
    bad = {f"{p} @{w}px": r["unwrapped_outputs"] for (p, w), r in _each(site) if r["unwrapped_outputs"]}
    assert not bad, bad


def test_math_typeset_and_no_raw_markup(site):
    for (p, w), r in _each(site):
        assert not r["raw_roles"], (p, w, r["raw_roles"])
        assert r["raw_tex"] == 0 and r["mjx_errors"] == 0, (p, w, r["raw_tex"], r["mjx_errors"])
        assert not r["nav_tex"], (p, w, "raw TeX in navigation or tab title", r["nav_tex"])
    if site["minibook"]:
        assert site["results"]["book/demo/page.html", 1280]["mjx"] > 0


def test_minibook_statement_numbers_and_glue(site):
    if not site["minibook"]:
        pytest.skip("mini-book only")
    r = site["results"]["book/demo/page.html", 1280]
    assert r["statements"] == ["Theorem 3 (Move along a line)", "Proposition (An unnumbered statement)"]
    assert "θ_c¹" in r["title"] and "\\" not in r["title"]
    assert site["results"]["book/demo/page.html", 390]["inline_broken"] >= 1  # the long inline formula wraps
    page = (site["html"] / "book" / "demo" / "page.html").read_text(encoding="utf-8")
    assert ">Theorem 3<" in page and ">Proposition (An unnumbered statement)<" in page
    assert "-0.0000" not in page and "-0.2500" in page
    assert page.count("const THEBE_JS_URL") <= 1
    ledger = (site["html"] / "book" / "claims.html").read_text(encoding="utf-8")
    heads = re.findall(r"<th\b[^>]*>\s*(?:<p>)?([^<]+)", ledger)
    assert heads[:3] == ["id", "statement", "verdicts"], heads  # the summary by claim comes first
    i = heads.index("verdict")  # then every check, verdict first: in view on a phone
    assert heads[i : i + 3] == ["verdict", "id", "quantity checked"], heads
    assert "By claim" in ledger and 'class="toggle' in ledger
    assert "✔ pass" in ledger and "1 checks on 1 pages in this build: 1 passed, 0 failed." in ledger
    mathjax = site["html"] / "_static" / "mathjax"
    size = sum(f.stat().st_size for f in mathjax.rglob("*") if f.is_file())
    assert size < 3e6, f"MathJax copy is {size / 1e6:.1f} MB"
