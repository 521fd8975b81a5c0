"""Every page of the table of contents runs under papermill with the smoke profile, and its
claims pass. Parametrized over _toc.yml, so a new page is covered as soon as it is listed."""
import json

import pytest

from attnflow import runner

PAGES = runner.list_pages()


def test_every_page_has_smoke_and_paper_profiles():
    import yaml

    profiles = yaml.safe_load((runner.book_root() / "book" / "profiles.yml").read_text())
    for name in ("smoke", "paper"):
        missing = [p for p in PAGES if p not in (profiles.get(name) or {})]
        assert not missing, f"pages without a {name!r} profile in book/profiles.yml: {missing}"


@pytest.mark.notebook
@pytest.mark.parametrize("page", PAGES)
def test_page_smoke_runs_and_its_claims_pass(page, tmp_path):
    res = runner.run_page(page, profile="smoke", output=tmp_path)
    assert res.claims_file is not None, f"{page} recorded no claims"
    recs = json.loads(res.claims_file.read_text())["claims"]
    failed = [r for r in recs if r["verdict"] == "fail"]
    assert recs and not failed, f"{page}: failed claims {failed}"
