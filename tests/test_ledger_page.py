"""The ledger page as Sphinx renders it (a one-page project with the book's extension): every
verdict kind shown as itself (inconclusive is not a failure), a summary by claim before the
folded table of every check, pages in book order."""

from __future__ import annotations

import textwrap

import pytest

pytest.importorskip("sphinx_proof")
from sphinx.cmd.build import build_main  # noqa: E402  (after the skip: Sphinx is the book extra)

CONF = """
extensions = ["attnflow_book.sphinx_ext"]
import json, pathlib
RECORDS = {records!r}
def _write(app):
    d = pathlib.Path(app.srcdir) / "_build" / "claims"
    d.mkdir(parents=True, exist_ok=True)
    for i, page in enumerate(RECORDS):
        (d / f"p{{i}}.json").write_text(json.dumps(page))
def setup(app):
    app.connect("builder-inited", _write, priority=900)      # after the extension empties the folder
"""


def rec(cid, verdict, **extra):
    return {
        "id": cid,
        "verdict": verdict,
        "statement": f"statement of {cid}",
        "what": f"quantity {cid}",
        "measured": 1.0,
        "expected": 1.0,
        "tolerance": "t",
        "provenance": "paper",
        "source": "paper",
        "errata": None,
        "reason": None,
        **extra,
    }


def test_the_ledger_page_shows_every_verdict_and_a_summary_by_claim(tmp_path):
    src = tmp_path / "src"
    (src / "book" / "zeta").mkdir(parents=True)
    (src / "book" / "alpha").mkdir(parents=True)
    for page in ("book/zeta/first", "book/alpha/second"):
        (src / f"{page}.py").write_text("x = 1\n")  # found as notebook sources; not in this project
    (src / "_toc.yml").write_text("root: index\nchapters:\n- file: book/zeta/first\n- file: book/alpha/second\n")
    records = [
        {
            "page": "alpha/second",
            "claims": [
                rec("A9", "inconclusive", interval=[-0.1, 0.2], n_seeds=3, seeds_to_decide=12),
                rec("A9", "contradicted", interval=[-0.3, -0.1], n_seeds=3),
            ],
        },
        {"page": "zeta/first", "claims": [rec("A2", "pass"), rec("A2", "outside", reason="n < 3"), rec("B3", "pass")]},
    ]
    (src / "book" / "power.yml").write_text(
        "- {claim: A9, page: alpha/second, overrides: {}, target: 'm:f', factor: 1.1, bug: a bug}\n", encoding="utf-8"
    )
    (src / "conf.py").write_text(CONF.format(records=records))
    (src / "index.rst").write_text(
        textwrap.dedent("""\
        Ledger
        ======

        .. claims-ledger::
        """)
    )
    out = tmp_path / "out"
    assert build_main(["-q", "-b", "html", str(src), str(out)]) == 0
    html = (out / "index.html").read_text(encoding="utf-8")
    assert "◐ inconclusive (≈ 12 seeds would decide)" in html and "⨯ contradicted" in html
    assert "✘ fail" not in html and "0 failed" in html
    assert "By claim" in html and "1 ✔ · 1 ○" in html and "50%" in html
    assert html.index("By claim") < html.index("Every check, in book order")
    assert html.index("quantity A2") < html.index("quantity A9")  # zeta/first comes first in _toc.yml
    assert 'class="toggle' in html
    # one table per paper, in the papers' order, each row with the bugs of power.yml its checks kill
    sharpening, focus = html.index("Sharpening (Vashisht &amp; Ramaswamy)"), html.index("Focus and dilution (Chen")
    assert html.index("By claim") < sharpening < html.index("statement of A9") < focus < html.index("statement of B3")
    assert html.count("1 killed") == 1 and html.index("1 killed") < focus


def test_the_errata_findings_table_is_the_ledgers(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    records = [
        {
            "page": "alpha/second",
            "claims": [
                rec("A9", "inconclusive", errata="errata-x", n_seeds=3, what="AC rise (per seed [0.1, 0.2, 0.3])"),
                rec("A9", "contradicted", errata="errata-x", n_seeds=3, what="AC rise (per seed [0.1, 0.2, 0.3])"),
                rec("A2", "pass"),
                rec("A7", "disagrees", errata="errata-y"),
            ],
        }
    ]
    (src / "conf.py").write_text(CONF.format(records=records))
    (src / "index.rst").write_text(
        textwrap.dedent("""\
        Errata
        ======

        .. errata-findings::

        .. _errata-x:

        Entry x
        -------

        Evidence.
        """)
    )
    out = tmp_path / "out"
    assert build_main(["-q", "-b", "html", str(src), str(out)]) == 0
    html = (out / "index.html").read_text(encoding="utf-8")
    assert "2 findings in this build" in html
    assert "1 ⨯ contradicted, 1 ◐ inconclusive" in html and "AC rise" in html and "per seed" not in html
    assert 'href="#errata-x"' in html and "quantity A2" not in html  # a pass is not a finding


def test_statements_in_the_summary_show_their_math_as_text():
    from attnflow_book.sphinx_ext import _plain_math

    assert _plain_math(r"slope \(\eta_{QK}/\eta_{OV}\) and $\log^2 t$") == "slope η_QK/η_OV and log² t"


def test_the_power_table_renders_every_mutant_of_power_yml(tmp_path):
    import shutil
    from pathlib import Path

    import yaml

    from attnflow import claims

    power = Path(__file__).resolve().parents[1] / "book" / "power.yml"
    rows = yaml.safe_load(power.read_text(encoding="utf-8"))
    assert rows and set(rows[0]) == {"claim", "page", "overrides", "target", "factor", "bug"}
    assert all(set(m) <= set(rows[0]) | {"kill"} for m in rows)
    assert {m["claim"] for m in rows} <= set(claims.registry()), "a claim id of power.yml is not in claims.yml"
    src = tmp_path / "src"
    (src / "book" / "sharpening").mkdir(parents=True)
    shutil.copy(power, src / "book" / "power.yml")
    (src / "book" / "sharpening" / "line_theorem.rst").write_text("Line\n====\n")  # one page to link to
    (src / "conf.py").write_text(CONF.format(records=[]))
    (src / "index.rst").write_text(
        textwrap.dedent("""\
        Power
        =====

        .. attnflow-power::

        .. toctree::

           book/sharpening/line_theorem
        """)
    )
    out = tmp_path / "out"
    assert build_main(["-q", "-W", "-b", "html", str(src), str(out)]) == 0
    html = (out / "index.html").read_text(encoding="utf-8")
    body = html[html.index('class="attnflow-table attnflow-power') :]
    assert body.count("<tr") == len(rows) + 1  # the header and one row per mutant
    for m in rows:
        assert m["target"] in body and f"× {m['factor']:g}" in body
    assert body.count("killed in CI by") == len(rows)
    # a real-data row (kill: contradicted) says so in its verdict; the others do not
    assert body.count("<strong>contradicted</strong>") == sum(m.get("kill") == "contradicted" for m in rows)
    assert 'href="book/sharpening/line_theorem.html"' in body  # a page of the project is a link


def test_a_power_row_with_an_unknown_claim_id_fails_the_strict_build(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "power.yml").write_text(
        "- {claim: Z99, page: x/y, overrides: {}, target: 'm:f', factor: 1.1, bug: a bug}\n", encoding="utf-8"
    )
    (src / "conf.py").write_text(CONF.format(records=[]))
    (src / "index.rst").write_text("Power\n=====\n\n.. attnflow-power:: power.yml\n")
    assert build_main(["-q", "-W", "-b", "html", str(src), str(tmp_path / "out")]) != 0


def test_the_domain_table_lists_each_condition_with_what_it_reads(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "_toc.yml").write_text("root: index\n")
    cond = [["$d \\\\ge 2$", "parameters", True], ["settled by t_pred", "state: plateau (t = 3)", False]]
    records = [{"page": "zeta/first", "claims": [rec("A2", "outside", domain_conditions=cond), rec("A2", "pass")]}]
    (src / "conf.py").write_text(CONF.format(records=records))
    (src / "index.rst").write_text("Domains\n=======\n\n.. attnflow-domains::\n")
    out = tmp_path / "out"
    assert build_main(["-q", "-b", "html", str(src), str(out)]) == 0
    html = (out / "index.html").read_text(encoding="utf-8")
    assert "2 domain conditions in this build: 1 read the parameters" in html
    assert "state: plateau (t = 3)" in html and "settled by t_pred" in html and "0/1" in html
    assert 'class="math' in html  # $...$ in a condition is typeset


VERDICT_PAGE = """\
Index
=====

With AdamW faster QK sharpens attention: :attnflow-verdict:`HateXplain <alpha/second A6 adamw: attention entropy>`,
:attnflow-verdict:`alpha/second A6 sgd`; the AC gain :attnflow-verdict:`alpha/second A9`.
In this build: :attnflow-totals:`all`.
"""


def _verdict_build(tmp_path, records, page=VERDICT_PAGE, strict=False):
    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    (src / "conf.py").write_text(CONF.format(records=records))
    (src / "index.rst").write_text(page)
    out = tmp_path / "out"
    rc = build_main(["-q", *(["-W"] if strict else []), "-b", "html", str(src), str(out)])
    html = (out / "index.html").read_text(encoding="utf-8") if (out / "index.html").exists() else ""
    return rc, html.replace("\u00a0", " ")  # a verdict's mark is joined to its word by a no-break space


def _real(entropy_adamw, ac=("contradicted", "inconclusive")):
    return [
        {
            "page": "alpha/second",
            "claims": [
                rec("A6", entropy_adamw, what="HateXplain adamw: attention entropy, r = 10 minus r = 1"),
                rec("A6", "inconclusive", what="HateXplain sgd: attention entropy, r = 10 minus r = 1"),
                rec("A9", ac[0], what="HateXplain adamw: AC"),
                rec("A9", ac[1], what="HateXplain sgd: AC"),
            ],
        }
    ]


def test_a_summary_sentence_quotes_the_verdict_of_its_page_and_follows_it(tmp_path):
    """Issue 25 item 7: the index pages' summary sentences name verdicts only through
    ``{attnflow-verdict}``, rendered from the build's records — when a page's verdict changes, the
    sentence changes with it (here reproduced → contradicted)."""
    rc, html = _verdict_build(tmp_path, _real("pass"), strict=True)
    assert rc == 0
    assert "HateXplain ✔ reproduced" in html and "◐ inconclusive" in html
    assert "1 ◐ inconclusive, 1 ⨯ contradicted" in html  # a mix of two checks is spelled out
    assert "4 checks on 1 pages: 1 passed, 2 inconclusive (real data), 1 contradicted (real data), 0 failed" in html
    rc, html = _verdict_build(tmp_path, _real("contradicted", ac=("pass", "pass")), strict=True)
    assert rc == 0
    assert "HateXplain ⨯ contradicted" in html and "✔ reproduced" in html and "HateXplain ✔" not in html


def test_a_verdict_quoted_from_a_check_the_build_does_not_have_fails_the_strict_build(tmp_path):
    """A sentence whose check was renamed, removed or moved (its selector matches no record) cannot
    keep a stale verdict: the strict build fails."""
    page = VERDICT_PAGE.replace("A6 adamw: attention entropy", "A6 adamw: attention entropy at r = 3")
    rc, _ = _verdict_build(tmp_path, _real("pass"), page=page, strict=True)
    assert rc != 0
    rc, html = _verdict_build(tmp_path, _real("pass"), page=page)
    assert "(no such check in this build)" in html


def test_the_summary_pages_name_verdicts_only_through_the_ledger():
    """The chapter indexes and the intro state no verdict in free prose: a verdict word (reproduced,
    contradicted, inconclusive, not reproduced, a verdict mark) outside an ``{attnflow-verdict}`` role
    is a sentence that can disagree with its page."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "book"
    pages = ("sharpening/index.md", "focus_dilution/index.md", "intro.md")
    verdict_words = re.compile(r"\b(?:reproduced|contradicted|inconclusive|reproduces|contradicts)\b|[✔⨯◐≠✘]")
    for page in pages:
        text = (root / page).read_text(encoding="utf-8")
        free = re.sub(r"\{attnflow-(?:verdict|totals)\}`[^`]*`", "", text)
        free = re.sub(r"```\{admonition\}.*?```", "", free, flags=re.S)  # the provenance box defines the words
        hits = verdict_words.findall(free)
        assert not hits, f"book/{page} states a verdict in free prose ({hits}); quote it with {{attnflow-verdict}}"


def test_ledger_select_and_reading():
    from attnflow import ledger

    pages = _real("pass")
    assert [r["what"][:15] for r in ledger.select(pages, "alpha/second", "A6", "ADAMW")] == ["HateXplain adam"]
    assert len(ledger.select(pages, "alpha/second", "A6")) == 2 and not ledger.select(pages, "zeta", "A6")
    assert ledger.reading(ledger.select(pages, "alpha/second", "A6", "adamw")) == "✔ reproduced"
    assert ledger.reading(ledger.select(pages, "alpha/second", "A6")) == "1 ✔ reproduced, 1 ◐ inconclusive"
    with pytest.raises(ValueError):
        ledger.reading([])
