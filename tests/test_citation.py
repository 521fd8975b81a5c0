"""Publishing files a reader of the book expects: CITATION.cff (CFF 1.2.0 fields), a changelog in
Keep a Changelog form whose current version is the package's, and a publish workflow that builds the
book with the README's own commands."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

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
