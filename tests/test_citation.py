"""Publishing files a reader of the book expects: CITATION.cff (CFF 1.2.0 fields), a changelog in
Keep a Changelog form whose current version is the package's, and a publish workflow that builds the
book with the README's own commands."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def test_citation_cff_has_the_required_fields_and_the_package_version():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    for key in ("cff-version", "message", "title", "authors", "version", "date-released", "license"):
        assert key in cff, f"CITATION.cff lacks {key!r}"
    assert cff["cff-version"] == "1.2.0" and str(cff["version"]) == VERSION
    assert all("name" in a or "family-names" in a for a in cff["authors"])
    titles = {r["title"] for r in cff["references"]}
    bib = (ROOT / "book" / "references.bib").read_text(encoding="utf-8")
    assert titles and all(t in bib for t in titles), "the cited papers are the book's references"


def test_citation_cff_is_valid_against_the_cff_1_2_0_schema():
    """The Citation File Format's own JSON schema (citation-file-format.github.io/1.2.0/schema.json,
    as cffconvert 2.0.0 ships it; cffconvert itself pins jsonschema < 4, which nbformat outgrew)."""
    import json

    import jsonschema

    schema = json.loads((ROOT / "tests" / "citation_cff_1.2.0.schema.json").read_text(encoding="utf-8"))
    assert schema["$id"] == "https://citation-file-format.github.io/1.2.0/schema.json"
    validator = jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker())
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    errors = [f"{'/'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(cff)]
    assert not errors, errors
    assert list(validator.iter_errors({**cff, "authors": [{"nme": "x"}]}))  # the schema does refuse


def test_changelog_lists_the_package_version():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "## [Unreleased]" in text
    assert re.search(rf"^## \[{re.escape(VERSION)}\] - \d{{4}}-\d{{2}}-\d{{2}}$", text, flags=re.M)


def test_the_publish_workflow_runs_the_readmes_commands_on_a_tag():
    wf = yaml.safe_load((ROOT / ".github" / "workflows" / "publish.yml").read_text(encoding="utf-8"))
    on = wf.get("on", wf.get(True))  # YAML 1.1 reads the key `on` as True
    assert on["push"]["tags"] == ["v*"]
    runs = [s.get("run", "") for s in wf["jobs"]["build"]["steps"]]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for command in ("make test", "make book"):
        assert command in runs and command in readme, f"{command!r} must be the README's and the workflow's"
    assert any("deploy-pages" in s.get("uses", "") for s in wf["jobs"]["deploy"]["steps"])


def test_the_footer_and_export_citation_is_citation_cffs():
    """The citation every page footer and every exported notebook carries (attnflow.export) names
    CITATION.cff's title, authors and licence."""
    from attnflow import export

    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert export.TITLE == cff["title"]
    assert export.AUTHORS == ", ".join(a.get("name") or a["family-names"] for a in cff["authors"])
    assert cff["license"] in export.LICENCE and "CC BY 4.0" in export.LICENCE
    assert (ROOT / "LICENSE").exists() and (ROOT / "LICENSE-TEXT").exists()
    assert f"Version {VERSION}" in export.citation_text()


FOOTER_CONF = """
extensions = ["attnflow_book.sphinx_ext"]
html_theme = "sphinx_book_theme"
html_theme_options = {"extra_footer": "<p>my course</p>"}
"""


def test_every_page_footer_names_version_commit_licence_and_citation(tmp_path):
    """Built with the book's theme and extension, each page's footer carries the version and the
    commit (issue 25: until now only the reproducibility page had them), after _config.yml's own."""
    pytest.importorskip("sphinx_book_theme")
    from sphinx.cmd.build import build_main

    from attnflow import __version__, export
    from attnflow_book import sphinx_ext

    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text(FOOTER_CONF)
    (src / "index.rst").write_text("Home\\n====\\n\\n.. toctree::\\n\\n   other\\n")
    (src / "other.rst").write_text("Other\\n=====\\n\\ntext\\n")
    assert build_main(["-q", "-b", "html", str(src), str(tmp_path / "out")]) == 0
    for name in ("index.html", "other.html"):
        html = (tmp_path / "out" / name).read_text(encoding="utf-8")
        assert html.count('class="attnflow-footer"') == 1, name
        line = html[html.index('class="attnflow-footer"') :].split("</p>", 1)[0]
        assert f"attnflow {__version__} · commit " in line and "CC BY 4.0" in line and "CITATION.cff" in line
        assert html.index("my course") < html.index('class="attnflow-footer"')
    assert "commit unknown" in sphinx_ext.footer_html(commit=None)
    assert "commit abc1234, with uncommitted changes" in sphinx_ext.footer_html(
        commit="abc1234, with uncommitted changes"
    )
    assert export.TITLE in sphinx_ext.footer_html()
