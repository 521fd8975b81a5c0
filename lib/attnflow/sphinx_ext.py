"""Sphinx extension for the book: the claims ledger table and the environment table.

``{claims-ledger}`` renders every claim record written by the pages *of this build*
(``_build/claims/*.json``): the table is filled at write time (``doctree-resolved``), after
every notebook has executed, and the records folder is emptied when the build starts, so the
table is never stale. A notebook page of the table of contents that recorded no claim, or a
failed claim, is a Sphinx warning, which fails the strict (``-W``) build.

``{attnflow-environment}`` renders versions, git commit, device and the seed policy.
"""
from __future__ import annotations

import json
import platform
import re
import shutil
import subprocess
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import Directive
from sphinx.util import logging

logger = logging.getLogger(__name__)


class ledger_placeholder(nodes.General, nodes.Element):
    pass


class ClaimsLedger(Directive):
    has_content = False

    def run(self):
        return [ledger_placeholder()]


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

    root = Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root, capture_output=True, text=True).stdout.strip()
        commit += " (with uncommitted changes)" if dirty else ""
    except Exception:
        commit = "unknown (not a git checkout)"
    rows = [("python", platform.python_version()), ("platform", platform.platform())]
    rows += [(p, v(p)) for p in ("torch", "numpy", "scipy", "sympy", "matplotlib", "seaborn", "datasets",
                                  "jupyter-book", "myst-nb", "jupytext", "papermill", "sphinx-proof")]
    rows += [("torch build", f"CUDA {torch.version.cuda}" if torch.version.cuda else "CPU"),
             ("device used by pages", device.describe()), ("git commit", commit), ("seed policy", seeding.SEED_POLICY)]
    return rows


def _inline(text: str) -> list[nodes.Node]:
    """Text with $...$ segments as inline math nodes."""
    parts = re.split(r"(?<!\\)\$", str(text))
    out: list[nodes.Node] = []
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


def _notebook_docs(app) -> list[str]:
    src = Path(app.srcdir)
    return sorted(str(p.relative_to(src).with_suffix("")) for p in (src / "book").rglob("*.py")
                  if not any(part.startswith((".", "_")) for part in p.relative_to(src).parts))


def _fill_ledger(app, doctree, fromdocname) -> None:
    placeholders = list(doctree.findall(ledger_placeholder))
    if not placeholders:
        return
    pages = []
    d = claims_folder(app)
    for f in sorted(d.glob("*.json")) if d.exists() else []:
        pages.append(json.loads(f.read_text(encoding="utf-8")))
    recorded = {p["page"] for p in pages}
    in_toc = [doc for doc in _notebook_docs(app) if doc in app.env.found_docs]
    for doc in in_toc:
        key = doc[len("book/"):]
        if key not in recorded:
            logger.warning(f"claims ledger: page {doc} recorded no claim in this build", location=fromdocname)
    rows, n_pass, n_fail, n_dis, n_out = [], 0, 0, 0, 0
    std = app.env.get_domain("std")
    for p in pages:
        docname = "book/" + p["page"]
        for r in p["claims"]:
            verdict = r["verdict"]
            n_pass += verdict == "pass"
            n_fail += verdict == "fail"
            n_dis += verdict == "disagrees"
            n_out += verdict == "outside"
            if verdict == "fail":
                logger.warning(f"claims ledger: claim {r['id']} ({r['what']}) failed on {docname}", location=fromdocname)
            link = nodes.reference("", "", internal=True,
                                   refuri=app.builder.get_relative_uri(fromdocname, docname) if docname in app.env.found_docs else "#")
            link += nodes.Text(p["page"])
            if verdict == "disagrees":
                label = r.get("errata") or ""
                target = std.labels.get(label, std.anonlabels.get(label))
                if target is None:
                    logger.warning(f"claims ledger: claim {r['id']} on {docname} points to errata label {label!r}, "
                                   "which no page defines", location=fromdocname)
                    mark = nodes.Text("≠ disagrees (errata entry missing)")
                else:
                    mark = nodes.reference("", "", internal=True,
                                           refuri=app.builder.get_relative_uri(fromdocname, target[0]) + "#" + target[1])
                    mark += nodes.Text("≠ not reproduced: errata")
            elif verdict == "outside":
                mark = "○ outside domain: " + (r.get("reason") or "")
            else:
                mark = "✔ pass" if verdict == "pass" else "✘ fail"
            rows.append([r["id"], r["what"] or r["statement"], r["provenance"], r["source"], _fmt(r["expected"]),
                         _fmt(r["measured"]), r["tolerance"], mark, link])
    dis = f", {n_dis} do not reproduce the paper (each linked to its errata entry)" if n_dis else ""
    out = f", {n_out} outside their domain for the parameters of this build" if n_out else ""
    summary = nodes.paragraph(text=f"{n_pass + n_fail + n_dis + n_out} checks on {len(pages)} pages in this build: "
                                   f"{n_pass} passed{dis}{out}, {n_fail} failed.")
    table = _table(["id", "quantity checked", "claim provenance", "expected from", "expected", "measured",
                    "tolerance", "verdict", "page"], rows, widths=[5, 22, 10, 10, 10, 10, 15, 7, 11])
    for ph in placeholders:
        ph.replace_self([summary, table])


def setup(app):
    app.add_node(ledger_placeholder)
    app.add_directive("claims-ledger", ClaimsLedger)
    app.add_directive("attnflow-environment", Environment)
    app.connect("builder-inited", _clear_records)
    app.connect("doctree-resolved", _fill_ledger)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
