"""attnflow.export: executed notebook → a notebook that renders in plain Jupyter (issue 12 item 2).

Fast tests convert MyST snippets and every book page (with stand-in glue values); the
``notebook`` tests execute two pages, export them, and run the exports with plain papermill in
an empty folder.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import nbformat
import pytest

from attnflow import display, export

ROOT = Path(__file__).resolve().parents[1]
BIB = export.Bibliography.from_file(ROOT / "book" / "references.bib")
INDEX = export.BookIndex.scan(ROOT)


def convert(text: str, glue: dict | None = None, doc: str = "book/sharpening/lemma1_rescaling", **kw) -> str:
    return export.convert_markdown(text, glue or {}, bib=BIB, index=INDEX, doc=doc, **kw)


def test_bibliography_author_year():
    bib = export.Bibliography.parse("""
@article{one, author = {Smith, Jane}, title = {A {B} c}, year = {2020}, journal = {J}}
@inproceedings{two, author = {Smith, Jane and Doe, J.}, title = "T", year = 2021}
@misc{three, author = {Kaiser, {\\L}ukasz and Roe, R. and Poe, P.}, title = {U}, year = {2019}}
""")
    assert bib.cite_p(["one"]) == "(Smith, 2020)"
    assert bib.cite_p(["two", "three"]) == "(Smith and Doe, 2021; Kaiser et al., 2019)"
    assert bib.cite_t(["three"]) == "Kaiser et al. (2019)"
    assert "*A B c*" in bib.full("one")
    assert "Łukasz" in bib.full("three")
    assert bib.cite_p(["nope"]) == "(nope?)"


def test_bibliography_tex_to_unicode():
    """pybtex + latexcodec: accents, {\\L}, dashes and braces as Unicode (the old reader dropped accents)."""
    bib = export.Bibliography.parse(r"""
@misc{acc, author = {J{\'e}gou, Herv{\'e} and Y{\"u}ce, Gizem and van der Berg, Jan}, year = 2023,
  title = {{T}ransformers -- a {\L}{\'o}d{\'z} view}, howpublished = {arXiv}, doi = {10.1/x}}
""")
    assert bib.cite_t(["acc"]) == "Jégou et al. (2023)"
    assert bib.full("acc") == (
        "Jégou, Hervé and Yüce, Gizem and van der Berg, Jan (2023). *Transformers – a Łódź view*. arXiv. "
        "<https://doi.org/10.1/x>"
    )
    two = export.Bibliography.parse("@book{vb, author = {van der Berg, Jan and Roe, R.}, title = {B}, year = 1999}")
    assert two.cite_p(["vb"]) == "(van der Berg and Roe, 1999)"  # the von part belongs to the surname
    both = export.Bibliography.from_file(ROOT / "book" / "references.bib", None, ROOT / "missing.bib")
    assert set(both.entries) == set(BIB.entries)


def test_markdown_it_reads_what_myst_reads():
    """Nested directives, colon fences inside backtick fences, roles in code spans or escaped, a target
    inside a list: converted where MyST sees them, kept verbatim where it does not."""
    text = "\n".join(
        [
            "`````{prf:theorem} Outer",
            "````{admonition} Middle",
            ":::{note}",
            "Inner {math}`x`, code ``{math}`y` `` and escaped \\{math}`y`.",
            ":::",
            "````",
            "`````",
            "",
            "- item",
            "  ```{tip}",
            "  in a list",
            "  ```",
            "",
            "~~~markdown",
            "{cite:p}`vashisht26a`",
            "~~~",
            "",
            "| a | b |",
            "|---|---|",
            "| {cite:t}`vashisht26a` | [the errata](../errata.md) |",
        ]
    )
    out = convert(text).split("\n")
    assert out[:8] == [
        "> **Theorem (Outer).**",
        ">",
        "> > **Middle**",
        "> >",
        "> > > **Note**",
        "> > >",
        "> > > Inner $x$, code ``{math}`y` `` and escaped \\{math}`y`.",
        "",
    ]
    assert out[9:13] == ["  > **Tip**", "  >", "  > in a list", ""]
    assert "{cite:p}`vashisht26a`" in out  # a code block stays verbatim
    yaml_options = convert("```{figure} fig.png\n---\nname: f1\nlabel: fig-x\n---\nThe caption.\n```")
    assert yaml_options == '<a id="fig-x"></a>\n\n![The caption.](fig.png)\n*The caption.*'
    assert out[-1] == "| Vashisht and Ramaswamy (2026) | the errata |"


def test_glue_roles_are_formatted_like_myst_nb():
    glue = {
        "x": {"text/plain": "0.123456"},
        "n": {"text/plain": "7"},
        "s": {"text/plain": "'CACO'"},
        "eq": {"text/latex": "$$a+b$$", "text/plain": "<Math>"},
        "neg": {"text/plain": "-3.0"},
    }
    out = convert(
        "x={glue:text}`x:.2f`, n={glue:text}`n:d`, s={glue:text}`s`, "
        "e={glue:math}`eq`, any={glue}`eq`, p={glue:text}`x:.0%`, g={glue:text}`neg:.1e`",
        glue,
    )
    # e-notation as prose writes it, as the book's pages show it (sphinx_ext._unsigned_zeros; issue 25)
    assert out == "x=0.12, n=7, s=CACO, e=$a+b$, any=$a+b$, p=12%, g=-3.0"
    assert convert("{glue:text}`big:g`", {"big": {"text/plain": "1000000.0"}}) == "10⁶"


def test_missing_glue_value_is_a_problem_not_a_crash():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("v = {glue:text}`absent:.3f`")])
    out = export.export_notebook(nb, install=False)
    assert "absent: not computed" in out.cells[0].source
    assert export.exported_problems(out) == ["glue key 'absent' has no value in this notebook"]
    with pytest.raises(export.ExportError, match="absent"):
        export.export_notebook(nb, install=False, strict=True)


def test_prf_box_and_admonitions_become_blockquotes():
    text = "\n".join(
        [
            "Intro.",
            "",
            # a title with a role needs a colon fence: CommonMark allows no backtick in a backtick fence's info
            ":::{prf:theorem} Line theorem {cite:p}`vashisht26a`",
            ":label: thm-x",
            ":nonumber:",
            "",
            "Let $a$ hold, see {prf:ref}`lemma-rescaling`.",
            ":::",
            "",
            ":::{note}",
            "A colon note.",
            ":::",
            "",
            "````{admonition} Outer",
            ":class: warning",
            "Text",
            "```{math}",
            "a=b",
            "```",
            "````",
            "",
            "```python",
            "x = {glue:text}`not_a_role_in_code`",
            "```",
        ]
    )
    out = convert(text)
    assert '<a id="thm-x"></a>' in out
    assert "> **Theorem (Line theorem (Vashisht and Ramaswamy, 2026)).**" in out
    assert "> Let $a$ hold, see Lemma (Factorization is a state-dependent learning-rate rescaling)." in out
    assert "> **Note**" in out and "> A colon note." in out
    assert "> **Outer**" in out and "> $$" in out and "> a=b" in out
    assert "x = {glue:text}`not_a_role_in_code`" in out  # code blocks stay verbatim
    assert export.myst_leftovers(out.replace("{glue:text}`not_a_role_in_code`", "")) == []


def test_cross_references_and_links():
    out = convert(
        "See {doc}`the intro <index>`, {doc}`../intro`, {ref}`errata <errata-sharpening-real-data>`, "
        "[the errata](../errata.md), [web](https://example.org), {math}`x^2`, {term}`word`.\n"
        "(my-target)=\n% a comment"
    )
    assert out.startswith("See the intro, ")
    assert "[the errata](../errata.md)" not in out and "the errata" in out
    assert "[web](https://example.org)" in out and "$x^2$" in out and "word" in out
    assert '<a id="my-target"></a>' in out and "a comment" not in out
    linked = convert("{doc}`focus`", doc="book/focus_dilution/dilution", base_url="https://book.example/")
    assert re.fullmatch(r"\[.+\]\(https://book\.example/book/focus_dilution/focus\.html\)", linked)


def test_leftovers_detector():
    assert export.myst_leftovers("plain $x$ text") == []
    for bad in ("{glue:text}`a`", "```{prf:lemma}\nx\n```", "(lab)=", ":label: x"):
        assert export.myst_leftovers(bad), bad


def _fake_executed(nb):
    """A page notebook with a glue output for every name its prose cites (values 1.0)."""
    keys = set()
    for c in nb.cells:
        if c.cell_type == "markdown":
            keys |= {m.split(":")[0] for m in re.findall(r"\{glue(?::\w+)?\}`([^`]+)`", c.source)}
    out = nbformat.v4.new_output("display_data", data={export.GLUE_PREFIX + "text/plain": "1.0"})
    cell = nbformat.v4.new_code_cell("", outputs=[])
    for k in sorted(keys):
        o = nbformat.from_dict(json.loads(json.dumps(out)))
        o.metadata = {"scrapbook": {"name": k, "mime_prefix": export.GLUE_PREFIX}}
        cell.outputs.append(o)
    nb.cells.append(cell)
    return nb


@pytest.mark.parametrize(
    "page", sorted(str(p.relative_to(ROOT / "book").with_suffix("")) for p in (ROOT / "book").glob("*/*.py"))
)
def test_every_page_converts_without_myst_left(page):
    import jupytext

    nb = _fake_executed(jupytext.read(ROOT / "book" / f"{page}.py"))
    out = export.export_notebook(nb, doc=f"book/{page}", bib=BIB, index=INDEX)
    nbformat.validate(out)
    left = [
        f"cell {i}: {x}"
        for i, c in enumerate(out.cells)
        if c.cell_type == "markdown"
        for x in export.myst_leftovers(c.source)
    ]
    assert left == []
    assert export.exported_problems(out) == []
    first_code = next(c for c in out.cells if c.cell_type == "code")
    assert export.SETUP_TAG in first_code.metadata["tags"] and "%pip install" in first_code.source
    last = out.cells[-1]  # the licence and citation cell (issue 25: every exported notebook)
    assert last.cell_type == "markdown" and export.LICENCE_TAG in last.metadata["tags"]
    assert f"page `book/{page}`" in last.source and "CC BY 4.0" in last.source and "CITATION.cff" in last.source
    assert all(
        not any(k.startswith(export.GLUE_PREFIX) for k in o.get("data", {}))
        for c in out.cells
        if c.cell_type == "code"
        for o in c.outputs
    )


def test_glue_from_myst_nb_json_and_outputs(tmp_path):
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell("a={glue:text}`a:.1f` b={glue:text}`b`"),
            nbformat.v4.new_code_cell(
                "glue",
                outputs=[
                    nbformat.v4.new_output(
                        "display_data",
                        data={export.GLUE_PREFIX + "text/plain": "'B'"},
                        metadata={"scrapbook": {"name": "b", "mime_prefix": export.GLUE_PREFIX}},
                    ),
                    nbformat.v4.new_output(
                        "display_data",
                        data={"text/plain": "shown"},
                        metadata={"scrapbook": {"name": "c", "mime_prefix": ""}},
                    ),
                    nbformat.v4.new_output("stream", name="stdout", text="hello\n"),
                ],
            ),
        ]
    )
    src = tmp_path / "page.ipynb"
    nbformat.write(nb, src)
    (tmp_path / "page.glue.json").write_text(json.dumps({"a": {"data": {"text/plain": "2.25"}}}))
    dest = export.export_file(src, tmp_path / "out" / "page.ipynb", root=ROOT)
    out = nbformat.read(dest, as_version=4)
    nbformat.validate(out)
    assert out.cells[0].source == "a=2.2 b=B"
    code = [c for c in out.cells if c.cell_type == "code"]
    assert export.SETUP_TAG in code[0].metadata["tags"]
    text_values = code.pop(1)  # after the paragraph that quotes a: checks it against a re-run's value
    assert export.TEXT_VALUES_TAG in text_values.metadata["tags"] and text_values.metadata.jupyter.source_hidden
    assert "text_values({'a:.1f': '2.2', 'b': 'B'})" in text_values.source and not text_values.outputs
    assert [o.output_type for o in code[1].outputs] == ["display_data", "stream"]  # glue-only output gone
    assert "scrapbook" not in code[1].outputs[0].metadata


# ----------------------------------------------------------------------------- executed pages
PAGES = [  # the re-run's parameters differ from the exported smoke run's, so quoted numbers change
    ("sharpening/lemma1_rescaling", {"t_max": 3.0, "n_times": 20, "seed": 5}),
    ("sharpening/scalar_reduction", {"t_max": 30.0, "n_times": 9}),
]


@pytest.mark.notebook
@pytest.mark.parametrize("page,params", PAGES, ids=[p for p, _ in PAGES])
def test_exported_page_runs_with_plain_papermill_in_an_empty_folder(page, params, tmp_path, monkeypatch):
    import papermill

    from attnflow import runner

    res = runner.run_page(page, profile="smoke", output=tmp_path / "run")
    assert res.failed == 0
    dest = export.export_file(
        res.notebook,
        tmp_path / "export" / Path(page).with_suffix(".ipynb").name,
        root=ROOT,
        doc=f"book/{page}",
        strict=True,
    )
    nb = nbformat.read(dest, as_version=4)
    assert not any(export.myst_leftovers(c.source) for c in nb.cells if c.cell_type == "markdown")
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.delenv("ATTNFLOW_CLAIMS_DIR", raising=False)
    out = empty / "out.ipynb"
    papermill.execute_notebook(
        str(dest),
        str(out),
        parameters=params,
        cwd=str(empty),
        kernel_name="python3",
        progress_bar=False,
        log_output=False,
    )
    ran = nbformat.read(out, as_version=4)
    text = "".join(o.get("text", "") for c in ran.cells if c.cell_type == "code" for o in c.outputs)
    assert re.search(r"claims on \S+: \d+ passed.*, 0 failed", text), text[-2000:]
    assert sorted(p.name for p in empty.iterdir()) == ["out.ipynb"]  # the page wrote nothing else
    # the prose follows the re-run: under each paragraph, the quoted numbers this run changed, with its values
    live = export.load_glue(ran)
    changed = 0
    for cell in (c for c in ran.cells if export.TEXT_VALUES_TAG in c.metadata.get("tags", [])):
        quoted = ast.literal_eval(cell.source.split("text_values(", 1)[1].rstrip(")"))
        shown = "".join(str(o.get("data", {}).get("text/markdown", "")) for o in cell.outputs)
        for ref, said in quoted.items():
            key, _, fmt = ref.partition(":")
            now = display.format_plain_text(str(live[key]["text/plain"]), fmt)
            assert (f"`{key}` = **{now}** (the text: {said})" in shown) == (now != said), (ref, said, now, shown)
            changed += now != said
    assert changed > 0  # these parameters change some quoted number, so the check above has something to see


def test_sphinx_download_writes_notebooks_and_buttons(tmp_path, caplog):
    """The extension on a fake Sphinx app: exported notebook, exercise versions, download menu."""
    from types import SimpleNamespace

    from attnflow import exercises
    from attnflow_book import sphinx_download

    outdir = tmp_path / "_build" / "html"
    src = tmp_path / "_build" / "jupyter_execute" / "book" / "ch" / "page.ipynb"
    src.parent.mkdir(parents=True)
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell("# Page\n\nValue {glue:text}`v:.1f`, {cite:t}`vashisht26a`."),
            nbformat.v4.new_code_cell("a = 1", metadata={"tags": ["parameters"]}),
            nbformat.v4.new_code_cell(
                f"{exercises.BEGIN}\nb = 2 * a\n{exercises.END}", metadata={"tags": ["exercise"]}
            ),
            nbformat.v4.new_code_cell('exercises.check("b", b, 2, rtol=0)', metadata={"tags": ["exercise-check"]}),
        ]
    )
    nbformat.write(nb, src)
    src.with_name("page.glue.json").write_text(json.dumps({"v": {"data": {"text/plain": "0.25"}}}))
    app = SimpleNamespace(
        outdir=str(outdir),
        srcdir=str(ROOT),
        builder=SimpleNamespace(format="html"),
        config=SimpleNamespace(
            attnflow_download_base_url=None,
            attnflow_download_install=None,
            attnflow_colab_github=None,
            bibtex_bibfiles=["book/references.bib"],
        ),
    )
    theme = [{"type": "link", "label": "download-notebook-button"}, {"type": "link", "label": "download-source-button"}]
    context = {
        "pathto": lambda p, flag=0: "../../" + p,
        "header_buttons": [{"type": "group", "label": "download-buttons", "buttons": list(theme)}],
    }
    with caplog.at_level("WARNING"):
        sphinx_download._add_downloads(app, "book/ch/page", "page.html", context, doctree=object())
    # this notebook has no outputs and no cached execution: a warning, which fails the strict build
    assert "the download would have no outputs" in caplog.text
    labels = [b["label"] for b in context["header_buttons"][0]["buttons"]]
    assert labels == [
        "download-ipynb-button",
        "download-student-button",
        "download-solution-button",
        "download-source-button",
    ]
    assert context["header_buttons"][0]["buttons"][0]["url"] == "../../_notebooks/book/ch/page.ipynb"
    out = nbformat.read(outdir / "_notebooks" / "book" / "ch" / "page.ipynb", as_version=4)
    assert out.cells[0].source == "# Page\n\nValue 0.2, Vashisht and Ramaswamy (2026)."
    stu = nbformat.read(outdir / "_notebooks" / "book" / "ch" / "page.student.ipynb", as_version=4)
    assert "b = ...  # YOUR CODE HERE" in [c.source for c in stu.cells]
    assert (outdir / "_notebooks" / "book" / "ch" / "page.solution.ipynb").exists()
    # a page that myst-nb did not execute (a .md page) gets no notebook and keeps the theme's menu
    context2 = {"pathto": context["pathto"], "header_buttons": [{"label": "download-buttons", "buttons": list(theme)}]}
    sphinx_download._add_downloads(app, "book/intro", "page.html", context2, doctree=object())
    assert context2["header_buttons"][0]["buttons"] == theme
    # with the published repository configured, an "open in Colab" entry for the exported notebook
    app.config.attnflow_colab_github = "someone/attnflow-site/gh-pages"
    context3 = {"pathto": context["pathto"], "header_buttons": [{"label": "download-buttons", "buttons": list(theme)}]}
    sphinx_download._add_downloads(app, "book/ch/page", "page.html", context3, doctree=object())
    colab = [b for b in context3["header_buttons"][0]["buttons"] if b["label"] == "colab-notebook-button"]
    assert [b["url"] for b in colab] == [
        "https://colab.research.google.com/github/someone/attnflow-site/blob/gh-pages/_notebooks/book/ch/page.ipynb"
    ]


@pytest.mark.parametrize("value", ["https://github.com/someone/attnflow", "someone/attnflow", "a b/c/d"])
def test_colab_setting_must_name_repository_and_branch(value):
    from types import SimpleNamespace

    from attnflow_book import sphinx_download

    with pytest.raises(ValueError, match="attnflow_colab_github must be OWNER/REPO/BRANCH"):
        sphinx_download._check_config(None, SimpleNamespace(attnflow_colab_github=value))


def test_setup_cell_is_valid_ipython_and_says_what_to_do():
    from IPython.core.inputtransformer2 import TransformerManager

    src = export.install_cell_source(version="9.9.9")
    compile(TransformerManager().transform_cell(src), "setup-cell", "exec")
    assert '%pip install -q --find-links . "attnflow==9.9.9"' in src  # a wheel next to the notebook first
    assert "attnflow==9.9.9 could not be installed: put its wheel" in src
    assert src.index("import attnflow") < src.index("%pip")  # inside the repository: no install


def test_attnflow_export_command_from_an_executed_notebook(tmp_path, capsys):
    """``attnflow export PAGE --from NB --student --solution`` (no execution: stand-in glue values)."""
    import jupytext

    from attnflow import cli_export, exercises

    page = "sharpening/lemma1_rescaling"
    src = tmp_path / "ran.ipynb"
    nbformat.write(_fake_executed(jupytext.read(ROOT / "book" / f"{page}.py")), src)
    assert (
        cli_export.main(
            ["export", page, "--from", str(src), "--student", "--solution", "--output", str(tmp_path / "nb")]
        )
        == 0
    )
    written = capsys.readouterr().out.split()
    assert [Path(w).name for w in written] == [
        "lemma1_rescaling.ipynb",
        "lemma1_rescaling.solution.ipynb",
        "lemma1_rescaling.student.ipynb",
    ]
    stu = nbformat.read(tmp_path / "nb" / "lemma1_rescaling.student.ipynb", as_version=4)
    assert any("# YOUR CODE HERE" in c.source for c in stu.cells) and exercises.has_exercises(stu)
    assert cli_export.main(["export", "no/such_page", "--from", str(src)]) == 2


@pytest.mark.parametrize(
    "case, expect",
    [
        ("missing", "no such file"),
        ("folder", "a folder, not a notebook"),
        ("not_json", "is not a Jupyter notebook"),
        ("other_page", "is not a notebook of sharpening/lemma1_rescaling"),
        ("output_is_a_file", "is a file, not a folder"),
    ],
)
def test_export_checks_its_input_and_output_before_running(case, expect, tmp_path, capsys):
    """Bad --from or --output: one line naming the cause, exit 2, nothing written, no page run."""
    import jupytext

    from attnflow import cli_export

    page = "sharpening/lemma1_rescaling"
    good = tmp_path / "ran.ipynb"
    nbformat.write(_fake_executed(jupytext.read(ROOT / "book" / f"{page}.py")), good)
    other = tmp_path / "other.ipynb"
    nbformat.write(_fake_executed(jupytext.read(ROOT / "book" / "sharpening" / "scalar_reduction.py")), other)
    (tmp_path / "a_folder").mkdir()
    (tmp_path / "bad.ipynb").write_text("{not json")
    (tmp_path / "a_file").write_text("x")
    source = {"missing": tmp_path / "nope.ipynb", "folder": tmp_path / "a_folder", "not_json": tmp_path / "bad.ipynb",
              "other_page": other}.get(case, good)  # fmt: skip
    out = tmp_path / ("a_file" if case == "output_is_a_file" else "nb")
    before = sorted(p.name for p in tmp_path.iterdir())
    assert cli_export.main(["export", page, "--from", str(source), "--output", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expect in err[0] and "Traceback" not in err[0], err
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written, no folder created


def test_export_writes_nothing_when_it_fails_half_way(tmp_path, capsys, monkeypatch):
    """A failure after the first notebook (here the student version) leaves no partial export."""
    import jupytext

    from attnflow import cli_export, exercises

    page = "sharpening/lemma1_rescaling"
    src = tmp_path / "ran.ipynb"
    nbformat.write(_fake_executed(jupytext.read(ROOT / "book" / f"{page}.py")), src)

    def full_disk(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(exercises, "student_notebook", full_disk)
    out = tmp_path / "nb"
    assert cli_export.main(["export", page, "--from", str(src), "--student", "--output", str(out)]) == 1
    assert "No space left on device" in capsys.readouterr().err
    assert not out.exists() or list(out.iterdir()) == []


def test_a_signal_during_export_is_one_line_and_leaves_nothing(tmp_path, capsys, monkeypatch):
    import signal

    import jupytext

    from attnflow import cli_export, runner

    page = "sharpening/lemma1_rescaling"
    src = tmp_path / "ran.ipynb"
    nbformat.write(_fake_executed(jupytext.read(ROOT / "book" / f"{page}.py")), src)

    def terminated(*a, **k):
        raise runner.Interrupted(signal.SIGTERM)

    monkeypatch.setattr(export, "export_file", terminated)
    out = tmp_path / "nb"
    assert cli_export.main(["export", page, "--from", str(src), "--output", str(out)]) == 143
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "interrupted by SIGTERM" in err[0] and not out.exists()


@pytest.mark.parametrize("installed", [False, True])
def test_setup_cell_shows_nothing(installed, tmp_path, monkeypatch):
    """The set-up cell run in IPython displays no result: not the ``{}`` of a checkout, not the dict
    of local data and cache folders that ``resources.activate`` sets after a wheel install (issue 25,
    item 9)."""
    from IPython.core.interactiveshell import InteractiveShell

    from attnflow import resources

    for name in ("ATTNFLOW_DATA_DIR", "ATTNFLOW_CACHE_DIR"):  # resources.activate sets them in os.environ:
        monkeypatch.setenv(name, "")  # recorded first, so that teardown restores them (or removes them)
        monkeypatch.delenv(name)
    if installed:  # as after a wheel install: no checkout, a packaged book with its data
        (tmp_path / "data").mkdir()
        (tmp_path / "data" / "MANIFEST.json").write_text("{}")
        monkeypatch.setattr(resources, "checkout_root", lambda: None)
        monkeypatch.setattr(resources, "book_root", lambda: tmp_path)
        monkeypatch.setattr(resources, "user_cache_dir", lambda: tmp_path / "cache")
    shell = InteractiveShell.instance()
    try:
        result = shell.run_cell(export.install_cell_source(version="9.9.9"), store_history=False)
        assert result.success, result.error_in_exec
        assert result.result is None, f"the set-up cell displays {result.result!r}"
        assert bool(shell.user_ns["data_folders"]) is installed  # it did set the folders after an install
    finally:
        InteractiveShell.clear_instance()


def test_exported_notebook_ends_with_licence_and_citation():
    """Every export says its licence and how to cite it, with the version and source commit, once
    even when an export is exported again (issue 25: a licence/citation cell in exported notebooks)."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# A page"), nbformat.v4.new_code_cell("1")])
    out = export.export_notebook(nb, doc="book/demo/page", version="9.9.9", commit="abc1234")
    again = export.export_notebook(out, doc="book/demo/page", version="9.9.9", commit="")
    for o in (out, again):
        tagged = [c for c in o.cells if export.LICENCE_TAG in c.metadata.get("tags", [])]
        assert len(tagged) == 1 and o.cells[-1] is tagged[0]
    text = out.cells[-1].source
    assert "Version 9.9.9 (commit abc1234)" in text and export.TITLE in text and export.AUTHORS in text
    assert "CC BY 4.0" in text and "MIT" in text and export.myst_leftovers(text) == []
    assert out.metadata["attnflow"]["commit"] == "abc1234" and "commit" not in again.metadata["attnflow"]
    assert "(commit" not in again.cells[-1].source
    here = export.source_commit(ROOT)
    assert here is None or re.fullmatch(r"[0-9a-f]{7,}(, with uncommitted changes)?", here)
    assert export.source_commit(ROOT / "book") is None  # not the top of a checkout


def test_a_runs_injected_parameters_become_the_parameters_cell():
    """A profile export held papermill's injected cell after the parameters cell, so a student's
    edit of the parameters cell was silently replaced on re-run (issue 25, item 10). The export
    writes the run's values into the parameters cell (comments kept) and drops the injected cell."""
    from attnflow.runner.kernel import prepare  # the runner's papermill injection

    src = 'd = 4                 # dimension d (≤ 8)\nlrs = [0.5,\n       1.0]  # rates\nname = "a"  # label'
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell("# A page"),
            nbformat.v4.new_code_cell(src, metadata={"tags": ["parameters"]}),
            nbformat.v4.new_code_cell("print(d, lrs, name)"),
        ]
    )
    nb.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "Python 3"}
    run = prepare(nb, {"d": 2, "lrs": [0.25], "seed": 3})
    assert any("injected-parameters" in c.metadata["tags"] for c in run.cells)
    out = export.export_notebook(run, doc="book/demo/page", commit="")
    assert not any("injected-parameters" in c.metadata.get("tags", []) for c in out.cells)
    (par,) = [c for c in out.cells if "parameters" in c.metadata.get("tags", [])]
    assert par.source.splitlines() == [
        "d = 2                 # dimension d (≤ 8)",
        "lrs = [0.25]  # rates",
        'name = "a"  # label',
        "seed = 3  # set by this run",
    ]
    # a student's edit of the parameters cell is what the page then runs with: nothing re-assigns it
    code = [c.source for c in out.cells if c.cell_type == "code" and export.SETUP_TAG not in c.metadata["tags"]]
    ns: dict = {}
    exec(code[0].replace("d = 2", "d = 6"), ns)
    assigned = {t.id for s in code[1:] for n in ast.walk(ast.parse(s)) if isinstance(n, ast.Assign) for t in n.targets}
    assert ns["d"] == 6 and "d" not in assigned
    assert export.fold_injected_parameters(out) == []  # nothing left to fold
