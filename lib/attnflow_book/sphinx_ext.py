"""Sphinx extension for the book: the claims ledger table and the environment table.

``{claims-ledger}`` renders every claim record written by the pages *of this build*
(``_build/claims/*.json``): the table is filled at write time (``doctree-resolved``), after
every notebook has executed, and the records folder is emptied when the build starts, so the
table is never stale. A notebook page of the table of contents that recorded no claim, or a
failed claim, is a Sphinx warning, which fails the strict (``-W``) build.

``{attnflow-environment}`` renders versions, git commit, device and the seed policy; every page's
footer names the version and commit the book was built from, its licence and citation.

``{attnflow-power}`` renders ``book/power.yml``, the kill table of ``tests/test_power.py``: the bugs
the pages' checks are shown to catch (claim, page, bug, parameters).

What a reader sees in a browser (issue 12):

- **Statement numbers.** sphinx-proof numbers every ``prf`` box in build order, which
  contradicts the page titles and runs the second paper on from the first. Here every box is
  unnumbered unless its label has a number in ``attnflow_statement_numbers`` (``_config.yml``),
  and a ``{prf:ref}`` reads "Theorem 3" (numbered) or "Proposition (The unigram saddle)".
- **Navigation titles** (sidebar, page contents, previous/next, tab title, search) get math
  rendered as Unicode text (:func:`tex_to_unicode`): navigation is not typeset by MathJax.
- **Glued numbers** that a format rounds to "-0.0000" lose the sign.
- **Scripts added twice.** Sphinx 7.4 emits an inline script registered after the builder
  started (sphinx-thebe's ``const THEBE_JS_URL``, sphinx-togglebutton's selector) twice, a
  console SyntaxError on every page; the duplicates are dropped per page.
- **MathJax** (sphinx-mathjax-offline copies its whole 24 MB distribution): the copy is pruned
  to the entry script, its fonts and the TeX extensions the pages' math can autoload.
"""

from __future__ import annotations

import json
import platform
import re
import shutil
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import Directive
from sphinx.util import logging

from attnflow import ledger, resources

logger = logging.getLogger(__name__)


class ledger_placeholder(nodes.General, nodes.Element):
    pass


class ClaimsLedger(Directive):
    has_content = False

    def run(self):
        return [ledger_placeholder()]


class findings_placeholder(nodes.General, nodes.Element):
    pass


class ErrataFindings(Directive):
    """``{errata-findings}``: the table of findings at the top of the errata page, generated from the
    ledger of this build, so the errata's verdicts cannot disagree with the claims page."""

    has_content = False

    def run(self):
        return [findings_placeholder()]


class power_placeholder(nodes.General, nodes.Element):
    pass


class PowerTable(Directive):
    """``{attnflow-power}``: the kill table of ``book/power.yml`` (or the file given as the directive's
    argument, relative to the source folder): one row per mutant that tests/test_power.py puts into a
    page run — the claim, the page (a link, resolved at write time), the bug, the parameters. A claim id
    that claims.yml does not define is a warning (fails the strict build)."""

    has_content = False
    optional_arguments = 1

    def run(self):
        import yaml

        env = self.state.document.settings.env
        path = Path(env.srcdir) / (self.arguments[0] if self.arguments else "book/power.yml")
        env.note_dependency(str(path))
        rows = yaml.safe_load(path.read_text(encoding="utf-8")) or []
        from attnflow import claims

        known = claims.registry()
        for m in rows:
            if m["claim"] not in known:
                logger.warning(
                    f"power table: claim {m['claim']!r} of {path.name} is not in claims.yml",
                    location=(env.docname, self.lineno),
                )
            if m.get("kill", "fail") not in POWER_KILLS:
                logger.warning(
                    f"power table: kill {m['kill']!r} of {path.name} ({m['claim']}) is not one of "
                    f"{', '.join(POWER_KILLS)}",
                    location=(env.docname, self.lineno),
                )
        return [power_placeholder(rows=rows)]


POWER_KILLS = {  # a row's ``kill`` (tests/test_power.py) -> what the verdict column adds to "killed in CI"
    "fail": "",  # the claim fails inside its domain (the default)
    "contradicted": "reproduced without the bug",  # a real-data check: reproduced without the bug, contradicted with it
}


def power_rows(rows: list[dict]) -> list[list]:
    """The cells of the kill table but the page link: claim, page, bug (target × factor), parameters,
    verdict (what counts as a kill: the claim fails, or ``kill: contradicted`` for real-data checks)."""
    out = []
    for m in rows:
        target = nodes.literal(m["target"], m["target"])
        bug = nodes.inline()
        bug.extend([*_inline(m["bug"]), nodes.Text(" ("), target, nodes.Text(f" × {m['factor']:g})")])
        params = ", ".join(f"{k} = {_fmt(v)}" for k, v in (m.get("overrides") or {}).items())
        how = POWER_KILLS.get(m.get("kill", "fail"), "")
        verdict = "killed in CI" + (f" — contradicted ({how})" if how else "")
        out.append([m["claim"], m["page"], bug, f"smoke profile{', ' if params else ''}{params}", verdict])
    return out


def _fill_power(app, doctree, fromdocname) -> None:
    for ph in list(doctree.findall(power_placeholder)):
        rows = []
        for m, cells in zip(ph["rows"], power_rows(ph["rows"])):
            docname = "book/" + m["page"]
            if docname in app.env.found_docs:
                link = nodes.reference("", "", internal=True, refuri=app.builder.get_relative_uri(fromdocname, docname))
            else:
                link = nodes.inline()
            link += nodes.Text(re.sub(r"([/_])", "\\1\u200b", m["page"]))  # break points in a narrow column
            verdict = nodes.inline()
            verdict += [nodes.Text("killed in CI by "), nodes.literal("tests/test_power.py", "tests/test_power.py")]
            how = POWER_KILLS.get(m.get("kill", "fail"), "")
            if how:  # a real-data check: contradicted, not failed
                verdict += [nodes.Text(" — "), nodes.strong("contradicted", "contradicted"), nodes.Text(f" ({how})")]
            rows.append([cells[0], link, cells[2], cells[3], verdict])
        table = _table(["claim", "page", "the bug", "parameters", "verdict"], rows, widths=[6, 16, 44, 22, 12])
        table["classes"].append("attnflow-power")
        ph.replace_self([table])


class domains_placeholder(nodes.General, nodes.Element):
    pass


class DomainTable(Directive):
    """``{attnflow-domains}``: every domain condition of this build's checks, once per claim, page and
    condition, with what it reads (the parameters or a named earlier state) and how often it held:
    generated from the records (``domain_conditions``), so it lists what the pages really decide on."""

    has_content = False

    def run(self):
        return [domains_placeholder()]


def _fill_domains(app, doctree, fromdocname) -> None:
    placeholders = list(doctree.findall(domains_placeholder))
    if not placeholders:
        return
    rows = ledger.domain_rows(_load_pages(app))
    cells = [
        [r.claim_id, re.sub(r"([/_])", "\\1\u200b", r.page), r.condition, r.reads, f"{r.held}/{r.n}"] for r in rows
    ]
    n_par = sum(r.reads == "parameters" for r in rows)
    intro = nodes.paragraph(
        text=f"{len(rows)} domain conditions in this build: {n_par} read the parameters (and closed forms of "
        f"them), {len(rows) - n_par} a named state before the measurement (a check refuses a timed state "
        "later than the start of what it measures). 'held' counts the checks whose condition held."
    )
    table = _table(["claim", "page", "condition", "reads", "held"], cells, widths=[6, 16, 46, 24, 8])
    table["classes"].append("attnflow-domains")
    for ph in placeholders:
        ph.replace_self([intro, table] if rows else [nodes.paragraph(text="No check of this build has a domain.")])


class verdict_placeholder(nodes.Inline, nodes.TextElement):
    pass


_VERDICT_REF = re.compile(r"^(?:(?P<label>.*?)\s*<(?P<sel>[^<>]+)>|(?P<bare>[^<>]+))$", re.S)


def verdict_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """The ``{attnflow-verdict}`` role, text ``PAGE CLAIM [WHAT]`` or ``LABEL <PAGE CLAIM [WHAT]>``: the verdict of
    the checks of CLAIM on PAGE whose quantity contains WHAT, from the records of this build (e.g.
    "✔ reproduced", or the mix where the checks differ), linked to the page. Summary sentences quote
    verdicts only through this role, so they cannot disagree with the pages; a selector that matches no
    record is a warning, which fails the strict build."""
    m = _VERDICT_REF.match(text.strip())
    sel = ((m.group("sel") or m.group("bare")) if m else "").split(None, 2)
    if len(sel) < 2:
        msg = inliner.reporter.error(
            f"attnflow-verdict: expected 'PAGE CLAIM [WHAT]' or 'LABEL <PAGE CLAIM [WHAT]>', got {text!r}", line=lineno
        )
        return [inliner.problematic(rawtext, rawtext, msg)], [msg]
    node = verdict_placeholder(
        rawtext, "", page=sel[0], claim=sel[1], what=sel[2] if len(sel) > 2 else "", label=(m.group("label") or "")
    )
    node.line = lineno
    return [node], []


def _fill_verdicts(app, doctree, fromdocname) -> None:
    placeholders = list(doctree.findall(verdict_placeholder))
    if not placeholders:
        return
    pages = _load_pages(app)
    for ph in placeholders:
        recs = ledger.select(pages, ph["page"], ph["claim"], ph["what"])
        out: list[nodes.Node] = [nodes.Text(ph["label"] + " ")] if ph["label"] else []
        if not recs:
            logger.warning(
                f"attnflow-verdict: no check of {ph['claim']} on {ph['page']} matches {ph['what']!r} in this build",
                location=(fromdocname, ph.line),
            )
            out.append(nodes.Text("(no such check in this build)"))
        else:
            docname = "book/" + ph["page"]
            words = re.sub(r"([✔✘≠○◐⨯]) ", "\\1\u00a0", ledger.reading(recs))  # a mark stays with its word
            if docname in app.env.found_docs:
                ref = nodes.reference("", "", internal=True, refuri=app.builder.get_relative_uri(fromdocname, docname))
                ref += nodes.Text(words)
                out.append(ref)
            else:
                out.append(nodes.Text(words))
        span = nodes.inline("", "", *out, classes=["attnflow-verdict"])
        ph.replace_self(span)


class totals_placeholder(nodes.Inline, nodes.TextElement):
    pass


def totals_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """The ``{attnflow-totals}`` role, text ``all`` (or a page prefix such as ``sharpening/``): the verdict counts of
    this build's checks on those pages, "351 checks on 33 pages: 293 passed, …, 0 failed"."""
    node = totals_placeholder(rawtext, "", prefix="" if text.strip() == "all" else text.strip())
    node.line = lineno
    return [node], []


def _fill_totals(app, doctree, fromdocname) -> None:
    for ph in list(doctree.findall(totals_placeholder)):
        pages = [p for p in _load_pages(app) if p["page"].startswith(ph["prefix"])]
        if not pages:
            logger.warning(
                f"attnflow-totals: no page {ph['prefix'] or ''}… recorded a check in this build",
                location=(fromdocname, ph.line),
            )
        ph.replace_self(nodes.inline("", ledger.totals_sentence(pages), classes=["attnflow-totals"]))


class Environment(Directive):
    has_content = False

    def run(self):
        return [_table(["item", "value"], [[k, v] for k, v in environment_rows()], widths=[25, 75])]


def environment_rows() -> list[tuple[str, str]]:
    from importlib.metadata import version

    import torch

    from attnflow import device, seeding

    def v(pkg: str) -> str:
        try:
            return version(pkg)
        except Exception:  # pragma: no cover
            return "not installed"

    state = resources.git_state(Path(__file__).resolve().parents[2], short=True)
    commit = state[0] + (" (with uncommitted changes)" if state[1] else "") if state else "unknown (not a git checkout)"
    rows = [("python", platform.python_version()), ("platform", platform.platform())]
    rows += [
        (p, v(p))
        for p in (
            "torch",
            "numpy",
            "scipy",
            "sympy",
            "matplotlib",
            "seaborn",
            "datasets",
            "jupyter-book",
            "myst-nb",
            "jupytext",
            "papermill",
            "sphinx-proof",
        )
    ]
    rows += [
        ("torch build", f"CUDA {torch.version.cuda}" if torch.version.cuda else "CPU"),
        ("device used by pages", device.describe()),
        ("git commit", commit),
        ("seed policy", seeding.SEED_POLICY),
    ]
    return rows


def _inline(text: str) -> list[nodes.Node]:
    """Text with $...$ segments as inline math nodes and `...` segments as inline code."""
    out: list[nodes.Node] = []
    for j, chunk in enumerate(re.split(r"`([^`]*)`", str(text))):
        if j % 2:
            out.append(nodes.literal(chunk, chunk))
            continue
        parts = re.split(r"(?<!\\)\$", chunk)
        for i, p in enumerate(parts):
            if not p:
                continue
            out.append(nodes.math(p, p) if i % 2 else nodes.Text(p))
    return out


def _table(header: list[str], rows: list[list], widths: list[int] | None = None) -> nodes.table:
    table = nodes.table(classes=["attnflow-table"])
    group = nodes.tgroup(cols=len(header))
    table += group
    for w in widths or [1] * len(header):
        group += nodes.colspec(colwidth=w)
    thead = nodes.thead()
    group += thead
    hrow = nodes.row()
    for h in header:
        hrow += nodes.entry("", nodes.paragraph(text=h))
    thead += hrow
    tbody = nodes.tbody()
    group += tbody
    for r in rows:
        row = nodes.row()
        for cell in r:
            para = nodes.paragraph()
            if isinstance(cell, nodes.Node):
                para += cell
            else:
                para.extend(_inline(cell))
            row += nodes.entry("", para)
        tbody += row
    return table


def _fmt(x) -> str:
    if isinstance(x, float):
        return f"{x:.6g}"
    if isinstance(x, list):
        return "[" + ", ".join(_fmt(v) for v in x) + "]"
    return "—" if x is None else str(x)


def claims_folder(app) -> Path:
    return Path(app.srcdir) / "_build" / "claims"


def _clear_records(app) -> None:
    d = claims_folder(app)
    if d.exists():
        shutil.rmtree(d)


def _set_claims_folder(app) -> None:
    """Pages write claim records only to an explicit folder (``attnflow.claims.claims_dir``): the
    build names its own, inherited by the kernels that execute the notebooks."""
    import os

    os.environ["ATTNFLOW_CLAIMS_DIR"] = str(claims_folder(app))


def _toc_order(app) -> list[str]:
    """The notebook pages in the order of ``_toc.yml`` (book order), then any others alphabetically."""
    import yaml  # local: only the ledger page needs it

    docs = _notebook_docs(app)
    toc = Path(app.srcdir) / "_toc.yml"
    files: list[str] = []

    def walk(node) -> None:
        if isinstance(node, dict):
            for key in ("root", "file"):
                if isinstance(node.get(key), str):
                    files.append(node[key].rsplit(".", 1)[0] if node[key].endswith((".py", ".md")) else node[key])
            for v in node.values():
                if isinstance(v, (list, dict)):
                    walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    if toc.exists():
        walk(yaml.safe_load(toc.read_text(encoding="utf-8")))
    ordered = [f for f in files if f in docs]
    return ordered + [d for d in docs if d not in ordered]


def _notebook_docs(app) -> list[str]:
    src = Path(app.srcdir)
    return sorted(
        str(p.relative_to(src).with_suffix(""))
        for p in (src / "book").rglob("*.py")
        if not any(part.startswith((".", "_")) for part in p.relative_to(src).parts)
    )


FINDINGS = ("disagrees", "contradicted", "inconclusive")


def _load_pages(app) -> list[dict]:
    d = claims_folder(app)
    pages = [json.loads(f.read_text(encoding="utf-8")) for f in sorted(d.glob("*.json"))] if d.exists() else []
    order = {doc[len("book/") :]: i for i, doc in enumerate(_toc_order(app))}
    return sorted(pages, key=lambda p: order.get(p["page"], len(order)))


def _fill_findings(app, doctree, fromdocname) -> None:
    """One row per (claim, page, errata entry) whose checks did not reproduce the paper in this build:
    the claim, what was measured, the verdicts, and the entry with the evidence."""
    placeholders = list(doctree.findall(findings_placeholder))
    if not placeholders:
        return
    std = app.env.get_domain("std")
    groups: dict[tuple, dict] = {}
    for p in _load_pages(app):
        for r in p["claims"]:
            if r["verdict"] not in FINDINGS:
                continue
            g = groups.setdefault((r["id"], p["page"], r.get("errata") or ""), {"what": [], "verdicts": []})
            g["what"].append(re.sub(r" \(per seed .*\)$", "", r["what"] or r["statement"]))
            g["verdicts"].append(r["verdict"])
    rows = []
    for (cid, page, label), g in groups.items():
        target = std.labels.get(label, std.anonlabels.get(label)) if label else None
        if target is not None:
            entry = nodes.reference(
                "", "", internal=True, refuri=app.builder.get_relative_uri(fromdocname, target[0]) + "#" + target[1]
            )
            entry += nodes.Text(label)
        else:
            entry = nodes.Text(label or "—")
        mix = ", ".join(f"{g['verdicts'].count(v)} {ledger.mark(v)}" for v in FINDINGS if v in g["verdicts"])
        rows.append([cid, "; ".join(dict.fromkeys(g["what"])), mix, page.rsplit("/", 1)[-1].replace("_", " "), entry])
    if not rows:
        para = nodes.paragraph(text="Every check of this build reproduced its statement: there are no findings.")
        for ph in placeholders:
            ph.replace_self([para])
        return
    intro = nodes.paragraph(
        text=f"{len(rows)} findings in this build, generated from the claims ledger: "
        "≠ a paper statement the book does not reproduce, ⨯ real-data evidence against it, "
        "◐ real-data evidence that does not decide. The entries below give the evidence."
    )
    table = _table(["claim", "what differs", "verdicts", "page", "entry"], rows, widths=[5, 45, 16, 14, 20])
    table["classes"].append("attnflow-findings")
    for ph in placeholders:
        ph.replace_self([intro, table])


def _power_counts(app) -> dict[str, int]:
    """Claim id -> number of mutants of ``book/power.yml`` that its checks kill (none without the file)."""
    import yaml

    path = Path(app.srcdir) / "book" / "power.yml"
    rows = yaml.safe_load(path.read_text(encoding="utf-8")) or [] if path.exists() else []
    out: dict[str, int] = {}
    for m in rows:
        out[m["claim"]] = out.get(m["claim"], 0) + 1
    return out


def _fill_ledger(app, doctree, fromdocname) -> None:
    placeholders = list(doctree.findall(ledger_placeholder))
    if not placeholders:
        return
    pages = []
    d = claims_folder(app)
    for f in sorted(d.glob("*.json")) if d.exists() else []:
        pages.append(json.loads(f.read_text(encoding="utf-8")))
    recorded = {p["page"] for p in pages}
    in_toc = [doc for doc in _toc_order(app) if doc in app.env.found_docs]
    for doc in in_toc:
        key = doc[len("book/") :]
        if key not in recorded:
            logger.warning(f"claims ledger: page {doc} recorded no claim in this build", location=fromdocname)
    rows = []
    std = app.env.get_domain("std")
    order = {doc[len("book/") :]: i for i, doc in enumerate(_toc_order(app))}
    pages.sort(key=lambda p: order.get(p["page"], len(order)))  # book order, not alphabetical
    for p in pages:
        docname = "book/" + p["page"]
        for r in p["claims"]:
            verdict = r["verdict"]
            if verdict == "fail":
                logger.warning(
                    f"claims ledger: claim {r['id']} ({r['what']}) failed on {docname}", location=fromdocname
                )
            link = nodes.reference(
                "",
                "",
                internal=True,
                refuri=app.builder.get_relative_uri(fromdocname, docname) if docname in app.env.found_docs else "#",
            )
            link += nodes.Text(re.sub(r"([/_])", "\\1\u200b", p["page"]))  # break points in a narrow column
            if verdict == "disagrees":
                label = r.get("errata") or ""
                target = std.labels.get(label, std.anonlabels.get(label))
                if target is None:
                    logger.warning(
                        f"claims ledger: claim {r['id']} on {docname} points to errata label {label!r}, "
                        "which no page defines",
                        location=fromdocname,
                    )
                    mark = nodes.Text("≠ disagrees (errata entry missing)")
                else:
                    mark = nodes.reference(
                        "",
                        "",
                        internal=True,
                        refuri=app.builder.get_relative_uri(fromdocname, target[0]) + "#" + target[1],
                    )
                    mark += nodes.Text("≠ not reproduced: errata")
            elif verdict == "outside":
                mark = "○ outside domain: " + (r.get("reason") or "")
            elif verdict == "inconclusive" and r.get("seeds_to_decide"):
                mark = f"{ledger.mark(verdict)} (≈ {r['seeds_to_decide']} seeds would decide)"
            else:
                mark = ledger.mark(verdict)
            rows.append(
                [
                    mark,
                    r["id"],
                    r["what"] or r["statement"],
                    _fmt(r["measured"]),
                    _fmt(r["expected"]),
                    r["tolerance"],
                    link,
                    r["provenance"],
                    r["source"],
                ]
            )
    t = ledger.totals(pages)
    parts = [f"{t['pass']} passed"]
    parts += (
        [f"{t['disagrees']} do not reproduce the paper (each linked to its errata entry)"] if t["disagrees"] else []
    )
    parts += [f"{t[v]} {v} (real data)" for v in ("inconclusive", "contradicted") if t[v]]
    parts += [f"{t['outside']} outside their domain for the parameters of this build"] if t["outside"] else []
    summary = nodes.paragraph(
        text=f"{sum(t.values())} checks on {len(pages)} pages in this build: "
        + ", ".join(parts)
        + f", {t['fail']} failed."
    )
    killed = _power_counts(app)
    groups: dict[str, list[list]] = {}
    for r in ledger.summary(pages):
        groups.setdefault(ledger.paper(r.claim_id), []).append(
            [
                r.claim_id,
                _plain_math(r.statement),
                r.mix,
                f"{r.inside:.0%}",
                ", ".join(r.statistics),
                f"{killed[r.claim_id]} killed" if killed.get(r.claim_id) else "—",
                ", ".join(p.rsplit("/", 1)[-1].replace("_", " ") for p in r.pages),
            ]
        )
    claim_tables: list[nodes.Node] = []
    for paper_name, cells in groups.items():  # papers in the order of their first claim (A…, then B…)
        claim_tables.append(nodes.rubric(text=paper_name))
        t = _table(
            ["id", "statement", "verdicts", "inside domain", "statistic", "power", "pages"],
            cells,
            widths=[4, 36, 12, 8, 14, 8, 18],
        )
        t["classes"].append("attnflow-ledger-summary")
        claim_tables.append(t)
    # Verdict first: on a narrow screen the table scrolls sideways and the verdict stays in view.
    table = _table(
        [
            "verdict",
            "id",
            "quantity checked",
            "measured",
            "expected",
            "tolerance",
            "page",
            "claim provenance",
            "expected from",
        ],
        rows,
        widths=[9, 4, 22, 10, 10, 15, 10, 10, 10],
    )
    table["classes"].append("attnflow-ledger")
    details = nodes.container(classes=["toggle"])  # folded (sphinx-togglebutton): every check, book order
    details += nodes.paragraph(text="Every check, in book order:")
    details += table
    by_claim_intro = nodes.paragraph(
        text="By claim, paper by paper (one row per claim id; the verdicts of all its checks, the share of "
        "them inside their domain, the statistic that decided them, the bugs of the power table below "
        "that its checks kill):"
    )
    for ph in placeholders:
        ph.replace_self([summary, by_claim_intro, *claim_tables, details])


# --- math in navigation titles -------------------------------------------------------------

_SYMBOLS = {
    **{
        g: c
        for g, c in zip(
            (
                "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi pi rho sigma tau upsilon "
                "phi chi psi omega"
            ).split(),
            "αβγδϵζηθικλμνξπρστυϕχψω",
        )
    },
    **{g: c for g, c in zip("Gamma Delta Theta Lambda Xi Pi Sigma Upsilon Phi Psi Omega".split(), "ΓΔΘΛΞΠΣΥΦΨΩ")},
    "varepsilon": "ε",
    "vartheta": "ϑ",
    "varphi": "φ",
    "varrho": "ϱ",
    "varsigma": "ς",
    "ell": "ℓ",
    "cdot": "·",
    "times": "×",
    "approx": "≈",
    "le": "≤",
    "leq": "≤",
    "ge": "≥",
    "geq": "≥",
    "neq": "≠",
    "ne": "≠",
    "to": "→",
    "rightarrow": "→",
    "leftarrow": "←",
    "mapsto": "↦",
    "infty": "∞",
    "sim": "∼",
    "propto": "∝",
    "pm": "±",
    "partial": "∂",
    "nabla": "∇",
    "in": "∈",
    "sum": "∑",
    "prod": "∏",
    "top": "⊤",
    "ll": "≪",
    "gg": "≫",
    "ldots": "…",
    "dots": "…",
    "cdots": "⋯",
    "langle": "⟨",
    "rangle": "⟩",
    "|": "‖",
    "{": "{",
    "}": "}",
    "%": "%",
    "$": "$",
    "_": "_",
    "&": "&",
    "#": "#",
    "equiv": "≡",
    "circ": "∘",
    "star": "⋆",
    "log": "log",
    "exp": "exp",
    "ln": "ln",
    "max": "max",
    "min": "min",
    "arg": "arg",
    "sin": "sin",
    "cos": "cos",
    "tanh": "tanh",
    "det": "det",
    "lim": "lim",
    "sup": "sup",
    "inf": "inf",
    "Pr": "Pr",
    "quad": " ",
    "qquad": " ",
    ",": " ",
    ";": " ",
    ":": " ",
    " ": " ",
    "!": "",
    "prime": "′",
    "hat": "",
    "tilde": "",
    "bar": "",
    "vec": "",
}
_SPACING = {
    "left",
    "right",
    "big",
    "Big",
    "bigg",
    "Bigg",
    "bigl",
    "bigr",
    "Bigl",
    "Bigr",
    "displaystyle",
    "textstyle",
    "limits",
    "nolimits",
}
_FONTS = {
    "mathrm",
    "text",
    "textrm",
    "textit",
    "textbf",
    "mathbf",
    "mathit",
    "mathsf",
    "mathtt",
    "mathcal",
    "operatorname",
    "boldsymbol",
    "bm",
    "mathbb",
    "emph",
}
_BLACKBOARD = {"R": "ℝ", "N": "ℕ", "Z": "ℤ", "Q": "ℚ", "C": "ℂ", "E": "𝔼", "P": "ℙ"}
_SUP = dict(zip("0123456789+-=()abdeghijklmnoprstuvwxyz", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ᵃᵇᵈᵉᵍʰⁱʲᵏˡᵐⁿᵒᵖʳˢᵗᵘᵛʷˣʸᶻ"))
_SUB = dict(zip("0123456789+-=()aehijklmnoprstuvx", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓ"))


def _plain_math(text: str) -> str:
    r"""A claim statement with its inline ``\(...\)`` / ``$...$`` math as plain text (table cells)."""
    text = re.sub(r"\\\((.+?)\\\)", lambda m: tex_to_unicode(m.group(1)), text)
    return re.sub(r"\$([^$]+)\$", lambda m: tex_to_unicode(m.group(1)), text)


def tex_to_unicode(tex: str) -> str:
    r"""Plain-text rendering of simple TeX, for places MathJax does not reach (titles, tabs).

    ``\theta_c^1`` -> ``θ_c¹``, ``\log^2 t`` -> ``log² t``, ``\eta_{QK}/\eta_{OV}`` -> ``η_QK/η_OV``.
    """
    text, _ = _tex(tex, 0, closing=None)
    return re.sub(r"\s+", " ", text).strip()


def _tex(s: str, i: int, closing: str | None) -> tuple[str, int]:
    out = []
    while i < len(s):
        c = s[i]
        if closing is not None and c == closing:
            return "".join(out), i + 1
        if c == "\\":
            name, i = _command(s, i)
            if name in ("frac", "dfrac", "tfrac"):
                a, i = _group(s, i)
                b, i = _group(s, i)
                out.append(f"{_paren(a)}/{_paren(b)}")
            elif name == "sqrt":
                a, i = _group(s, i)
                out.append("√" + _paren(a))
            elif name in _FONTS:
                a, i = _group(s, i)
                out.append("".join(_BLACKBOARD.get(ch, ch) for ch in a) if name == "mathbb" else a)
            elif name in _SPACING:
                pass
            else:
                sym = _SYMBOLS.get(name, name)
                if sym[-1:].isalpha() and i < len(s) and s[i].isalnum():
                    sym += " "  # "\log t" -> "log t", not "logt"
                out.append(sym)
        elif c in "^_":
            arg, i = _group(s, i + 1)
            table = _SUP if c == "^" else _SUB
            if arg and all(ch in table for ch in arg):
                out.append("".join(table[ch] for ch in arg))
            elif c == "^" and arg == "′":
                out.append("′")
            else:
                out.append(c + (arg if len(arg) <= 1 or arg.isalnum() else f"({arg})"))
        elif c == "{":
            inner, i = _tex(s, i + 1, closing="}")
            out.append(inner)
        elif c == "~":
            out.append(" ")
            i += 1
        elif c == "}":
            i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out), i


def _command(s: str, i: int) -> tuple[str, int]:
    m = re.match(r"\\([A-Za-z]+)\s*|\\(.)", s[i:])
    if m is None:
        return "", i + 1
    return (m.group(1) or m.group(2)), i + m.end()


def _group(s: str, i: int) -> tuple[str, int]:
    while i < len(s) and s[i] == " ":
        i += 1
    if i >= len(s):
        return "", i
    if s[i] == "{":
        return _tex(s, i + 1, closing="}")
    if s[i] == "\\":
        name, j = _command(s, i)
        return _SYMBOLS.get(name, name), j
    return s[i], i + 1


def _paren(a: str) -> str:
    return a if re.fullmatch(r"[\w.′⁰-⁹₀-₉]+", a) else f"({a})"


def _math_to_text(node: nodes.Node) -> None:
    for m in list(node.findall(nodes.math)):
        m.replace_self(nodes.Text(tex_to_unicode(m.astext())))


def _plain_titles(app, doctree) -> None:
    """Navigation titles of this document (sidebar, contents, prev/next, tab) without TeX."""
    env, doc = app.env, app.env.docname
    for store in (env.titles, env.longtitles, env.tocs):
        if doc in store:
            _math_to_text(store[doc])


def plain_search_titles(index: dict) -> dict:
    """Section titles of the search index (``alltitles``) with their TeX as Unicode text.

    Sphinx indexes a heading by ``astext()``, so a title with math reads "saddle \\theta_c^1" in
    search results; only titles holding a TeX command are touched."""
    titles = index.get("alltitles")
    if isinstance(titles, dict):
        index["alltitles"] = {(tex_to_unicode(k) if re.search(r"\\[A-Za-z]", k) else k): v for k, v in titles.items()}
    return index


def _plain_search(app, exc) -> None:
    if exc is not None or app.builder.format != "html":
        return
    path = Path(app.outdir) / "searchindex.js"
    if not path.is_file():
        return
    text = path.read_text(encoding="utf-8")
    head, tail = "Search.setIndex(", ")"
    if not (text.startswith(head) and text.rstrip().endswith(tail)):
        return
    index = plain_search_titles(json.loads(text[len(head) : text.rstrip().rindex(tail)]))
    path.write_text(head + json.dumps(index, separators=(",", ":"), ensure_ascii=False) + tail, encoding="utf-8")


# --- glued numbers ----------------------------------------------------------------------------


def _unsigned_zeros(app, doctree, fromdocname) -> None:
    """Glued numbers as prose writes them: no sign on a zero, no e-notation ("1e+06" -> "10⁶")."""
    from attnflow.display import prose_exponent, unsigned_zero_text

    for node in list(doctree.findall(nodes.inline)):
        if "pasted-text" in node.get("classes", []):
            text = node.astext()
            fixed = prose_exponent(unsigned_zero_text(text))
            if fixed != text:
                node.children = []
                node += nodes.Text(fixed)


# Marks drawn from an emoji font (myst-nb's {nb-exec-table} status column): without one installed
# they are empty boxes ("tofu"); the ledger's own marks are in the common text fonts.
PLAIN_MARKS = {"✅": "✔", "❌": "✘"}


def _plain_marks(app, doctree, fromdocname) -> None:
    for node in list(doctree.findall(nodes.Text)):
        if isinstance(node.parent, (nodes.literal_block, nodes.literal)):
            continue
        text = str(node)
        fixed = "".join(PLAIN_MARKS.get(ch, ch) for ch in text)
        if fixed != text:
            node.parent.replace(node, nodes.Text(fixed))


# --- scripts emitted twice --------------------------------------------------------------------


def footer_html(version: str | None = None, commit: str | None = None, year: str | None = None) -> str:
    """The line under every page: the package version and source commit the book was built from,
    its licence and how to cite it (:mod:`attnflow.export`'s citation, as in CITATION.cff)."""
    import datetime
    import html

    from attnflow import __version__, export

    version = version or __version__
    year = year or str(datetime.date.today().year)
    built = f" · commit {html.escape(commit)}" if commit else " · commit unknown (not built from a git checkout)"
    return (
        f'<p class="attnflow-footer">attnflow {html.escape(version)}{built} · '
        f"{html.escape(export.LICENCE)} · cite as: {html.escape(export.AUTHORS)} ({year}), "
        f"<em>{html.escape(export.TITLE)}</em>, version {html.escape(version)} (CITATION.cff)</p>"
    )


def _set_footer(app) -> None:
    from attnflow import export

    app.env.attnflow_footer = footer_html(commit=export.source_commit(app.confdir) or export.source_commit())


def _footer(app, pagename, templatename, context, doctree) -> None:
    """Every page's footer (sphinx-book-theme's ``extra_footer``) names the version and commit, after
    any ``html: extra_footer`` of _config.yml."""
    ours = getattr(app.env, "attnflow_footer", None) or footer_html()
    mine = context.get("theme_extra_footer") or ""
    if ours not in mine:
        context["theme_extra_footer"] = mine + ours


def _dedupe_scripts(app, pagename, templatename, context, doctree) -> None:
    """Drop the second copy of an inline script (Sphinx 7.4 keeps one with ``filename=None`` and
    one with ``''`` for scripts added after the builder's init): two ``const`` declarations of
    the same name are a SyntaxError in every page's console."""
    scripts = context.get("script_files")
    if not isinstance(scripts, list):
        return
    seen, keep = set(), []
    for js in scripts:
        key = (
            getattr(js, "filename", js) or "",
            getattr(js, "priority", None),
            tuple(sorted((getattr(js, "attributes", {}) or {}).items())),
        )
        if key not in seen:
            seen.add(key)
            keep.append(js)
    scripts[:] = keep


# --- statement numbers ------------------------------------------------------------------------


def _proof_domain():
    from sphinx_proof.domain import ProofDomain
    from sphinx_proof.proof_type import PROOF_TYPES

    def unnumbered(cls):
        class Statement(cls):
            def run(self):
                self.options["nonumber"] = None
                result = super().run()
                node = result[0]
                label = node["label"]
                number = str(self.config.attnflow_statement_numbers.get(label, "") or "")
                title = next(iter(node.findall(nodes.title)))
                if number:  # "Theorem " + "3" + " (Move along a line)"
                    title.insert(0, nodes.Text(number))
                elif title.children and isinstance(title[0], nodes.Text):
                    title[0] = nodes.Text(title[0].astext().lstrip())  # "Proposition " + "(…)"
                info = self.env.proof_list[label]
                info["attnflow_number"] = number
                info["attnflow_title"] = self.arguments[0] if self.arguments else ""
                return result

        Statement.__name__ = cls.__name__
        Statement.__qualname__ = cls.__qualname__
        return Statement

    class AttnflowProofDomain(ProofDomain):
        """sphinx-proof's domain; boxes numbered only as ``attnflow_statement_numbers`` says."""

        directives = {**ProofDomain.directives, **{k: unnumbered(v) for k, v in PROOF_TYPES.items()}}

        def resolve_xref(self, env, fromdocname, builder, typ, target, node, contnode):
            ref = super().resolve_xref(env, fromdocname, builder, typ, target, node, contnode)
            info = getattr(env, "proof_list", {}).get(target)
            if ref is None or info is None or not ref.children:
                return ref
            text = ref.astext()
            if text != text.rstrip():  # sphinx-proof's default text "Theorem " (no number)
                kind = text.strip()
                if info.get("attnflow_number"):
                    new = f"{kind} {info['attnflow_number']}"
                elif info.get("attnflow_title"):
                    new = f"{kind} ({info['attnflow_title']})"
                else:
                    new = kind
                ref.children = []
                ref += nodes.Text(new)
            return ref

    return AttnflowProofDomain


# --- MathJax: ship what the pages load --------------------------------------------------------

MATHJAX_KEEP = ("output/chtml/fonts/woff-v2",)  # web fonts (CHTML output) are fetched on use


def mathjax_needed(entry_js: str, pages_text: str) -> set[str]:
    """TeX extensions (``[tex]/name``) the pages' math may autoload from the entry bundle.

    ``entry_js``: the MathJax combined component (e.g. tex-chtml.js), which holds the autoload
    table (macro -> extension) and the dependency table; ``pages_text``: the HTML of the site.
    A superset is fine (a stray backslash in code only keeps a small file); missing one is not.
    """
    m = re.search(r"autoload:\(0,\w+\.expandable\)\((\{.*?\})\)", entry_js)
    table: dict[str, list] = {}
    if m:
        table = json.loads(re.sub(r"([{,])([A-Za-z]\w*):", r'\1"\2":', m.group(1)))
    deps = {
        k: re.findall(r'"\[tex\]/(\w+)"', v) for k, v in re.findall(r'"\[tex\]/(\w+)":\[((?:"[^"]*",?)*)\]', entry_js)
    }
    macros = set(re.findall(r"\\([A-Za-z]+)", pages_text))
    envs = set(re.findall(r"\\begin\{(\w+\*?)\}", pages_text))
    need = set(re.findall(r"\\require\{(\w+)\}", pages_text)) | set(re.findall(r"\[tex\]/(\w+)", pages_text))
    for ext, spec in table.items():
        cmds, environments = (spec, []) if spec and isinstance(spec[0], str) else (spec + [[], []])[:2]
        if macros & set(cmds) or envs & set(environments):
            need.add(ext)
    todo = list(need)
    while todo:
        for d in deps.get(todo.pop(), []):
            if d not in need:
                need.add(d)
                todo.append(d)
    return need


def prune_mathjax(outdir: Path, entry: str = "tex-chtml.js") -> tuple[int, int]:
    """Delete every file of ``outdir/_static/mathjax`` the site cannot load; (bytes before, after)."""
    root = Path(outdir) / "_static" / "mathjax"
    entry_path = root / entry
    if not entry_path.is_file():
        return 0, 0
    pages = "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in Path(outdir).rglob("*.html"))
    exts = mathjax_needed(entry_path.read_text(encoding="utf-8", errors="replace"), pages)
    keep = {entry_path.resolve()}
    keep |= {(root / "input" / "tex" / "extensions" / f"{e}.js").resolve() for e in exts}
    before = after = 0
    for f in sorted(root.rglob("*")):
        if not f.is_file():
            continue
        size = f.stat().st_size
        before += size
        rel = f.relative_to(root).as_posix()
        if f.resolve() in keep or any(rel.startswith(k + "/") for k in MATHJAX_KEEP):
            after += size
        else:
            f.unlink()
    for d in sorted((d for d in root.rglob("*") if d.is_dir()), key=lambda d: -len(d.parts)):
        if not any(d.iterdir()):
            d.rmdir()
    return before, after


def _prune_mathjax(app, exc) -> None:
    if exc is not None or app.builder.format != "html":
        return
    path = str(app.config.mathjax_path or "")
    if "://" in path or not path.startswith("mathjax/"):
        return
    before, after = prune_mathjax(Path(app.outdir), entry=path[len("mathjax/") :])
    if before:
        logger.info(
            f"attnflow: MathJax copy pruned to the files the pages load: {before / 1e6:.1f} MB -> {after / 1e6:.1f} MB"
        )


def setup(app):
    app.setup_extension("sphinx_proof")
    app.add_config_value("attnflow_statement_numbers", {}, "env")
    app.add_domain(_proof_domain(), override=True)
    app.add_node(ledger_placeholder)
    app.add_directive("claims-ledger", ClaimsLedger)
    app.add_node(findings_placeholder)
    app.add_directive("errata-findings", ErrataFindings)
    app.add_directive("attnflow-environment", Environment)
    app.add_node(power_placeholder)
    app.add_directive("attnflow-power", PowerTable)
    app.add_node(domains_placeholder)
    app.add_directive("attnflow-domains", DomainTable)
    app.add_node(verdict_placeholder)
    app.add_role("attnflow-verdict", verdict_role)
    app.add_node(totals_placeholder)
    app.add_role("attnflow-totals", totals_role)
    app.connect("builder-inited", _clear_records)
    app.connect("builder-inited", _set_claims_folder)
    app.connect("doctree-resolved", _fill_ledger)
    app.connect("doctree-resolved", _fill_findings)
    app.connect("doctree-resolved", _fill_power)
    app.connect("doctree-resolved", _fill_domains)
    app.connect("doctree-resolved", _fill_verdicts)
    app.connect("doctree-resolved", _fill_totals)
    app.connect("doctree-resolved", _unsigned_zeros)
    app.connect("doctree-resolved", _plain_marks)
    app.connect("doctree-read", _plain_titles, priority=900)  # after Sphinx's title/toc collectors
    app.connect("html-page-context", _dedupe_scripts, priority=900)
    app.connect("builder-inited", _set_footer)
    app.connect("html-page-context", _footer)
    app.connect("build-finished", _prune_mathjax, priority=900)  # after sphinx-mathjax-offline's copy
    app.connect("build-finished", _plain_search, priority=900)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
