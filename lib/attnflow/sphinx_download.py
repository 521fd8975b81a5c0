"""Sphinx extension: behind each notebook page's download button, notebooks that open anywhere.

For every page myst-nb executed (``_build/jupyter_execute/<doc>.ipynb`` + ``.glue.json``) the
HTML build writes, next to the site, ``_notebooks/<doc>.ipynb``: the executed notebook exported
by :mod:`attnflow.export` (numbers written into the prose, theorem boxes, citations and
cross-references as plain Markdown/LaTeX, a guarded set-up cell). For a page with exercise cells
it also writes ``<doc>.student.ipynb`` (solutions stubbed, outputs cleared) and
``<doc>.solution.ipynb`` (nbgrader metadata). The theme's download menu gets one entry for each,
first, replacing its ``.ipynb`` entry (sphinx-book-theme offers the jupytext ``.py`` for these
pages, which Jupyter and Colab do not open as a notebook).

Config: ``attnflow_download_base_url`` (the published book, for links in the notebooks; default
none: cross-references become plain text), ``attnflow_download_install`` (what the set-up cell
installs; default ``attnflow==<version>``). An export problem (a glued name without a value,
MyST left in the prose) is a warning of type ``attnflow.export`` (fails a ``-W`` build).
"""
from __future__ import annotations

from pathlib import Path

from sphinx.util import logging

logger = logging.getLogger(__name__)

FOLDER = "_notebooks"


def executed_notebook(app, docname: str) -> Path:
    """Where myst-nb wrote the executed notebook of ``docname``."""
    return Path(app.outdir).parent / "jupyter_execute" / (docname + ".ipynb")


def _book(app):
    from attnflow import export

    cached = getattr(app, "_attnflow_book", None)
    if cached is None:
        src = Path(app.srcdir)
        bibs = [src / b for b in (getattr(app.config, "bibtex_bibfiles", None) or ["book/references.bib"])]
        bib = export.Bibliography()
        for b in bibs:
            bib.entries.update(export.Bibliography.from_file(b).entries)
        cached = (bib, export.BookIndex.scan(src))
        app._attnflow_book = cached
    return cached


def write_notebooks(app, docname: str) -> dict[str, Path]:
    """Write the portable (and exercise) notebooks of ``docname``; {variant: path}."""
    import nbformat

    from attnflow import exercises, export

    src = executed_notebook(app, docname)
    if not src.exists():
        return {}
    bib, index = _book(app)
    out = Path(app.outdir) / FOLDER
    portable = out / (docname + ".ipynb")
    export.export_file(src, portable, doc=docname, bib=bib, index=index,
                       base_url=app.config.attnflow_download_base_url,
                       install_spec=app.config.attnflow_download_install)
    nb = nbformat.read(portable, as_version=4)
    problems = export.exported_problems(nb)
    problems += [f"markdown cell {i}: {x}" for i, c in enumerate(nb.cells) if c.cell_type == "markdown"
                 for x in export.myst_leftovers(c.source)]
    for p in problems:
        logger.warning(f"notebook download of {docname}: {p}", type="attnflow", subtype="export", location=docname)
    files = {"ipynb": portable}
    if exercises.has_exercises(nb):
        key = docname[len("book/"):] if docname.startswith("book/") else docname
        files["student"] = out / (docname + ".student.ipynb")
        nbformat.write(exercises.student_notebook(nb, key), files["student"])
        files["solution"] = out / (docname + ".solution.ipynb")
        nbformat.write(exercises.solution_notebook(nb, key), files["solution"])
    return files


_LABELS = {
    "ipynb": (".ipynb", "Executed notebook: opens in Jupyter, JupyterLab, VS Code and Colab", "fas fa-code"),
    "student": ("exercises (student)", "Student notebook: exercise solutions replaced by stubs", "fas fa-pencil-alt"),
    "solution": ("exercises (solution)", "Solution notebook, with nbgrader metadata", "fas fa-check"),
}


def _add_downloads(app, pagename, templatename, context, doctree) -> None:
    if doctree is None or app.builder.format != "html":
        return
    try:
        files = write_notebooks(app, pagename)
    except Exception as err:            # never a crash of the build: a warning (fails -W) naming the page
        logger.warning(f"notebook download of {pagename} could not be written: {type(err).__name__}: {err}",
                       type="attnflow", subtype="export", location=pagename)
        return
    if not files:
        return
    pathto = context["pathto"]
    buttons = []
    for variant, path in files.items():
        text, tooltip, icon = _LABELS[variant]
        rel = path.relative_to(Path(app.outdir)).as_posix()
        buttons.append({"type": "link", "url": pathto(rel, 1), "text": text, "tooltip": tooltip, "icon": icon,
                        "label": f"download-{variant}-button"})
    for group in context.get("header_buttons", []):
        if group.get("label") == "download-buttons":
            kept = [b for b in group["buttons"] if b.get("label") != "download-notebook-button"]
            group["buttons"] = buttons + kept
            return


def setup(app):
    app.add_config_value("attnflow_download_base_url", None, "html")
    app.add_config_value("attnflow_download_install", None, "html")
    app.connect("html-page-context", _add_downloads, priority=510)   # after sphinx-book-theme's buttons (501)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
