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
installs; default ``attnflow==<version>``; with a Colab entry, point it at the published wheel),
``attnflow_colab_github`` (``OWNER/REPO/BRANCH``: the GitHub repository and branch the built site
is published from, e.g. a ``gh-pages`` branch; each page then also gets an "open in Colab" entry,
``https://colab.research.google.com/github/OWNER/REPO/blob/BRANCH/_notebooks/<doc>.ipynb``).
Default none: no Colab entry, since there is no address to point at. jupyter-book's own
Colab/Binder launch buttons cannot serve these pages: they open the page source, a jupytext
``.py`` that Colab does not read as a notebook. An export problem (a glued name without a
value, MyST left in the prose) is a warning of type ``attnflow.export`` (fails a ``-W`` build).
"""

from __future__ import annotations

import re
from pathlib import Path

from sphinx.util import logging

logger = logging.getLogger(__name__)

FOLDER = "_notebooks"


def executed_notebook(app, docname: str) -> Path:
    """Where myst-nb wrote the executed notebook of ``docname``."""
    return Path(app.outdir).parent / "jupyter_execute" / (docname + ".ipynb")


def with_cached_outputs(nb_path: Path, cache_path: Path) -> bool:
    """Give the notebook at ``nb_path`` the outputs of its executed twin in the jupyter-cache at
    ``cache_path`` (matched on its code, as myst-nb matches it). In ``execute_notebooks: cache`` mode
    myst-nb writes the parser's notebook, without outputs, to ``jupyter_execute``; the outputs live in
    the cache. True when the notebook has outputs afterwards."""
    import nbformat

    nb = nbformat.read(nb_path, as_version=4)
    if any(c.get("outputs") for c in nb.cells if c.cell_type == "code"):
        return True
    if not Path(cache_path).exists():
        return False
    from jupyter_cache import get_cache

    try:
        _, merged = get_cache(str(cache_path)).merge_match_into_notebook(nb)
    except KeyError:  # no cached execution of this code
        return False
    nbformat.write(merged, nb_path)
    return any(c.get("outputs") for c in merged.cells if c.cell_type == "code")


def _cache_path(app) -> Path:
    path = Path(getattr(app.config, "nb_execution_cache_path", "") or Path(app.outdir).parent / ".jupyter_cache")
    return path if path.is_absolute() else Path(app.srcdir) / path


def _book(app):
    from attnflow import export

    cached = getattr(app, "_attnflow_book", None)
    if cached is None:
        src = Path(app.srcdir)
        bibs = [src / b for b in (getattr(app.config, "bibtex_bibfiles", None) or ["book/references.bib"])]
        cached = (export.Bibliography.from_file(*bibs), export.BookIndex.scan(src))
        app._attnflow_book = cached
    return cached


def write_notebooks(app, docname: str) -> dict[str, Path]:
    """Write the portable (and exercise) notebooks of ``docname``; {variant: path}."""
    import nbformat

    from attnflow import exercises, export

    src = executed_notebook(app, docname)
    if not src.exists():
        return {}
    if not with_cached_outputs(src, _cache_path(app)):
        # every offered notebook carries its outputs (issue 25, item 1): a strict (-W) build fails here
        logger.warning(
            f"notebook download of {docname}: no executed twin in the jupyter cache; the download would have "
            "no outputs (figures, tables, claim lines)",
            type="attnflow",
            subtype="download",
            location=docname,
        )
    bib, index = _book(app)
    out = Path(app.outdir) / FOLDER
    portable = out / (docname + ".ipynb")
    export.export_file(
        src,
        portable,
        doc=docname,
        bib=bib,
        index=index,
        base_url=app.config.attnflow_download_base_url,
        install_spec=app.config.attnflow_download_install,
    )
    nb = nbformat.read(portable, as_version=4)
    problems = export.exported_problems(nb)
    problems += [
        f"markdown cell {i}: {x}"
        for i, c in enumerate(nb.cells)
        if c.cell_type == "markdown"
        for x in export.myst_leftovers(c.source)
    ]
    for p in problems:
        logger.warning(f"notebook download of {docname}: {p}", type="attnflow", subtype="export", location=docname)
    files = {"ipynb": portable}
    if exercises.has_exercises(nb):
        key = docname[len("book/") :] if docname.startswith("book/") else docname
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
COLAB = "https://colab.research.google.com/github/"
_GITHUB_RE = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+/[A-Za-z0-9_./-]+$")


def colab_url(github: str, notebook: str) -> str:
    """The Colab address of ``notebook`` (a path under the published site, ``_notebooks/…``) for
    a site published in GitHub repository/branch ``github`` (``OWNER/REPO/BRANCH``)."""
    github = github.strip().strip("/")
    if not _GITHUB_RE.match(github):
        raise ValueError(
            f"attnflow_colab_github must be OWNER/REPO/BRANCH (the repository and branch the built "
            f"site is published from), got {github!r}"
        )
    owner, repo, branch = github.split("/", 2)
    return f"{COLAB}{owner}/{repo}/blob/{branch}/{notebook.lstrip('/')}"


def _add_downloads(app, pagename, templatename, context, doctree) -> None:
    if doctree is None or app.builder.format != "html":
        return
    try:
        files = write_notebooks(app, pagename)
    except Exception as err:  # never a crash of the build: a warning (fails -W) naming the page
        logger.warning(
            f"notebook download of {pagename} could not be written: {type(err).__name__}: {err}",
            type="attnflow",
            subtype="export",
            location=pagename,
        )
        return
    if not files:
        return
    pathto = context["pathto"]
    buttons = []
    for variant, path in files.items():
        text, tooltip, icon = _LABELS[variant]
        rel = path.relative_to(Path(app.outdir)).as_posix()
        buttons.append(
            {
                "type": "link",
                "url": pathto(rel, 1),
                "text": text,
                "tooltip": tooltip,
                "icon": icon,
                "label": f"download-{variant}-button",
            }
        )
    github = app.config.attnflow_colab_github
    if github:
        rel = files["ipynb"].relative_to(Path(app.outdir)).as_posix()
        buttons.append(
            {
                "type": "link",
                "url": colab_url(github, rel),
                "text": "open in Colab",
                "tooltip": "Open the executed notebook in Google Colab",
                "icon": "fas fa-rocket",
                "label": "colab-notebook-button",
            }
        )
    for group in context.get("header_buttons", []):
        if group.get("label") == "download-buttons":
            kept = [b for b in group["buttons"] if b.get("label") != "download-notebook-button"]
            group["buttons"] = buttons + kept
            return


def _check_config(app, config) -> None:
    if config.attnflow_colab_github:
        colab_url(config.attnflow_colab_github, "x.ipynb")  # a malformed value stops the build, named


_DOWNLOAD_LINK = re.compile(r'(<a href="[^"]*")(\s+target="_blank")(\s+class="btn btn-sm btn-download-[a-z]+-button)')


def add_download_attributes(html: str) -> str:
    """Give the notebook download buttons a ``download`` attribute (and no new tab), so that a book
    opened from disk, or a host serving ``.ipynb`` as JSON, saves the file instead of showing it."""
    return _DOWNLOAD_LINK.sub(lambda m: m.group(1) + " download" + m.group(3), html)


def _download_attributes(app, exc) -> None:
    if exc is not None or app.builder.format != "html":
        return
    for page in Path(app.outdir).rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        new = add_download_attributes(text)
        if new != text:
            page.write_text(new, encoding="utf-8")


def setup(app):
    app.add_config_value("attnflow_download_base_url", None, "html")
    app.add_config_value("attnflow_download_install", None, "html")
    app.add_config_value("attnflow_colab_github", None, "html")
    app.connect("config-inited", _check_config)
    app.connect("html-page-context", _add_downloads, priority=510)  # after sphinx-book-theme's buttons (501)
    app.connect("build-finished", _download_attributes)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
