"""Executed notebook → a notebook that opens anywhere (issue 12 item 2; DESIGN.md principle 11).

The book's pages are MyST notebooks: their prose cites numbers through ``{glue:text}`` roles,
states theorems in ``prf`` directives, cites with ``{cite:p}`` and links with ``{doc}``/``{ref}``.
Plain Jupyter, JupyterLab, VS Code and Colab render none of that. :func:`export_notebook` turns
an executed notebook (myst-nb's ``_build/jupyter_execute/**.ipynb`` with its ``.glue.json``, or a
papermill output that still holds the glue outputs) into plain Markdown + LaTeX:

- ``{glue:text}`key:fmt``` / ``{glue}`` / ``{glue:math}`` / ``{glue:md}`` → their values, formatted
  as myst-nb formats them; glue-only outputs are removed from the code cells;
- ``prf:*`` boxes and admonitions (backtick or colon fences) → a blockquote with a bold title;
- ``{cite:p}``/``{cite:t}`` → author–year text from ``book/references.bib`` and a references cell;
- ``{doc}``/``{ref}``/``{prf:ref}``/``{numref}``/``{eq}`` → plain text (a link when ``base_url`` is
  given); relative links to book sources likewise; ``{math}`` → ``$…$``; ``(label)=`` → an anchor;
- papermill's injected parameters (a run with a profile or ``-p``) folded into the parameters cell;
- a last cell with the licence and how to cite the book (version and commit);
- a set-up cell first among the code cells: ``import attnflow`` or ``%pip install attnflow==VERSION``,
  then :func:`attnflow.resources.activate` so the page finds its stand-in data in any folder.

:func:`myst_leftovers` lists any MyST syntax left in a markdown text (used by the tests and by
:func:`export_notebook` with ``strict=True``).
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from attnflow.display import format_plain_text

__all__ = [
    "Bibliography",
    "BookIndex",
    "export_notebook",
    "export_file",
    "convert_markdown",
    "load_glue",
    "myst_leftovers",
    "install_cell_source",
    "exported_problems",
    "ExportError",
    "SETUP_TAG",
    "TEXT_VALUES_TAG",
    "text_values_cell",
    "LICENCE_TAG",
    "TITLE",
    "AUTHORS",
    "LICENCE",
    "source_commit",
    "citation_text",
    "licence_cell",
    "fold_injected_parameters",
]

SETUP_TAG = "attnflow-setup"
TEXT_VALUES_TAG = "attnflow-text-values"
GLUE_PREFIX = "application/papermill.record/"
LICENCE_TAG = "attnflow-licence"
# How to cite the book and under which terms (CITATION.cff, LICENSE, LICENSE-TEXT; tests/test_citation.py
# checks these against CITATION.cff): the footer of every book page and the last cell of every export.
TITLE = "attnflow: how attention learns under gradient flow"
AUTHORS = "the attnflow authors"
LICENCE = "text and figures CC BY 4.0 (LICENSE-TEXT), code MIT (LICENSE)"


class ExportError(ValueError):
    """The notebook cannot be exported cleanly (a glue key is missing, MyST is left over)."""


# --------------------------------------------------------------------------- bibliography
def _strip_tex(s: str) -> str:
    s = re.sub(r"\\[`'^\"~=.uvHtcdb]\s*\{?(\w)\}?", r"\1", s)  # accents: \'e, \"{o} -> e, o
    s = re.sub(
        r"\\(L|l|O|o|ss|AE|ae|OE|oe|AA|aa|i|j)\b",
        lambda m: {
            "L": "Ł",
            "l": "ł",
            "O": "Ø",
            "o": "ø",
            "ss": "ß",
            "AE": "Æ",
            "ae": "æ",
            "OE": "Œ",
            "oe": "œ",
            "AA": "Å",
            "aa": "å",
            "i": "i",
            "j": "j",
        }[m.group(1)],
        s,
    )
    s = s.replace("--", "–").replace("~", " ")
    return re.sub(r"\s+", " ", s.replace("{", "").replace("}", "")).strip()


def _bib_value(text: str, i: int) -> tuple[str, int]:
    """The value starting at text[i] (``{…}`` with nesting, ``"…"`` or a bare word) and the end."""
    if text[i] == "{":
        depth, j = 0, i
        while j < len(text):
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            if depth == 0:
                return text[i + 1 : j], j + 1
            j += 1
        raise ValueError("unbalanced braces in bibliography")
    if text[i] == '"':
        j = text.index('"', i + 1)
        return text[i + 1 : j], j + 1
    m = re.match(r"[\w.:-]+", text[i:])
    return (m.group(0) if m else ""), i + (m.end() if m else 0)


@dataclass
class Bibliography:
    """A tiny BibTeX reader (the fields the book uses) and author–year citations as
    sphinxcontrib-bibtex's ``author_year`` style writes them."""

    entries: dict[str, dict[str, str]] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str) -> "Bibliography":
        entries: dict[str, dict[str, str]] = {}
        for m in re.finditer(r"@(\w+)\s*\{\s*([^,\s]+)\s*,", text):
            if m.group(1).lower() in ("comment", "string", "preamble"):
                continue
            fields: dict[str, str] = {"ENTRYTYPE": m.group(1).lower()}
            i = m.end()
            while True:
                fm = re.compile(r"\s*(\w[\w-]*)\s*=\s*").match(text, i)
                if not fm:
                    break
                value, i = _bib_value(text, fm.end())
                fields[fm.group(1).lower()] = value
                cm = re.compile(r"\s*,").match(text, i)
                if not cm:
                    break
                i = cm.end()
            entries[m.group(2)] = fields
        return cls(entries)

    @classmethod
    def from_file(cls, path: str | Path | None) -> "Bibliography":
        if path is None or not Path(path).exists():
            return cls()
        return cls.parse(Path(path).read_text(encoding="utf-8"))

    def _surnames(self, key: str) -> list[str]:
        authors = self.entries[key].get("author", self.entries[key].get("editor", key))
        names = []
        for a in re.split(r"\s+and\s+", authors):
            a = a.strip()
            names.append(_strip_tex(a.split(",")[0] if "," in a else a.split()[-1]))
        return names

    def authors_short(self, key: str) -> str:
        n = self._surnames(key)
        if n and n[-1].lower() == "others":
            return f"{n[0]} et al."
        return n[0] if len(n) == 1 else (f"{n[0]} and {n[1]}" if len(n) == 2 else f"{n[0]} et al.")

    def year(self, key: str) -> str:
        return self.entries[key].get("year", "n.d.")

    def cite_p(self, keys: Iterable[str]) -> str:
        return (
            "("
            + "; ".join(f"{self.authors_short(k)}, {self.year(k)}" if k in self.entries else f"{k}?" for k in keys)
            + ")"
        )

    def cite_t(self, keys: Iterable[str]) -> str:
        return ", ".join(f"{self.authors_short(k)} ({self.year(k)})" if k in self.entries else f"{k}?" for k in keys)

    def full(self, key: str) -> str:
        e = self.entries[key]
        venue = e.get("booktitle") or e.get("journal") or e.get("publisher") or e.get("howpublished") or ""
        parts = [f"{_strip_tex(e.get('author', ''))} ({self.year(key)}). *{_strip_tex(e.get('title', key))}*."]
        if venue:
            parts.append(_strip_tex(venue) + ".")
        if e.get("note"):
            parts.append(_strip_tex(e["note"]) + ".")
        if e.get("url"):
            parts.append(f"<{e['url']}>")
        elif e.get("doi"):
            parts.append(f"<https://doi.org/{e['doi']}>")
        return " ".join(parts)


# --------------------------------------------------------------------------- book index
_OPEN_RE = re.compile(r"^(\s*)(`{3,}|:{3,})\{([\w:.-]+)\}[ \t]*(.*)$")
_FENCE_RE = re.compile(r"^(\s*)(`{3,}|~{3,})(.*)$")
_OPTION_RE = re.compile(r"^\s*:([\w-]+):\s*(.*)$")
_TARGET_RE = re.compile(r"^\s*\(([\w:.-]+)\)=\s*$")

ADMONITIONS = (
    "note",
    "tip",
    "hint",
    "important",
    "warning",
    "caution",
    "attention",
    "danger",
    "error",
    "seealso",
    "admonition",
    "todo",
)


def _plain_title(text: str) -> str:
    """A heading or directive title without MyST roles and math delimiters."""
    text = re.sub(r"\{[\w:.-]+\}`([^`]*)`", lambda m: m.group(1).split("<")[0].strip(), text)
    return text.strip()


@dataclass
class BookIndex:
    """Titles of the book's documents and the labels they define (``docname`` → title,
    ``label`` → (docname, display text)), read from the sources under ``book/``."""

    titles: dict[str, str] = field(default_factory=dict)
    labels: dict[str, tuple[str, str]] = field(default_factory=dict)

    @classmethod
    def scan(cls, root: str | Path | None) -> "BookIndex":
        idx = cls()
        if root is None or not (Path(root) / "book").is_dir():
            return idx
        root = Path(root)
        for path in sorted((root / "book").rglob("*")):
            if path.suffix not in (".py", ".md") or any(p.startswith((".", "_")) for p in path.relative_to(root).parts):
                continue
            doc = str(path.relative_to(root).with_suffix(""))
            idx.add_text(doc, path.read_text(encoding="utf-8"), python=path.suffix == ".py")
        return idx

    def add_text(self, doc: str, text: str, python: bool = False) -> None:
        lines = text.splitlines()
        if python:  # py:percent: markdown lines are comments
            lines = [ln[2:] if ln.startswith("# ") else ("" if ln == "#" else "\x00") for ln in lines]
        pending_target = None
        for i, ln in enumerate(lines):
            if doc not in self.titles and ln.startswith("# "):
                self.titles[doc] = _plain_title(ln[2:])
            t = _TARGET_RE.match(ln)
            if t:
                pending_target = t.group(1)
                continue
            if pending_target and ln.startswith("#"):
                self.labels.setdefault(pending_target, (doc, _plain_title(ln.lstrip("#"))))
                pending_target = None
            m = _OPEN_RE.match(ln)
            if m:
                name, arg = m.group(3), m.group(4)
                for opt in lines[i + 1 : i + 8]:
                    om = _OPTION_RE.match(opt)
                    if not om:
                        break
                    if om.group(1) == "label":
                        self.labels.setdefault(om.group(2).strip(), (doc, _directive_title(name, arg)))

    def title(self, doc: str) -> str:
        return self.titles.get(doc, doc.rsplit("/", 1)[-1].replace("_", " "))


def _directive_title(name: str, arg: str) -> str:
    kind = name.split(":", 1)[1] if name.startswith("prf:") else name
    label = kind.capitalize()
    return f"{label} ({_plain_title(arg)})" if arg and name.startswith("prf:") else (_plain_title(arg) or label)


# --------------------------------------------------------------------------- glue
def load_glue(nb, glue_json: str | Path | None = None) -> dict[str, dict[str, Any]]:
    """Glued values by name: ``{name: mimebundle}`` from the notebook's outputs (papermill /
    scrapbook metadata) and from myst-nb's ``<page>.glue.json`` (myst-nb removes the glue-only
    outputs from the notebook it writes)."""
    glue: dict[str, dict[str, Any]] = {}
    if glue_json is not None and Path(glue_json).exists():
        for k, out in json.loads(Path(glue_json).read_text(encoding="utf-8")).items():
            glue[k] = dict(out.get("data", {}))
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for out in cell.get("outputs", []):
            meta = out.get("metadata", {}) or {}
            if "scrapbook" not in meta:
                continue
            prefix = meta["scrapbook"].get("mime_prefix", "") or ""
            glue[meta["scrapbook"]["name"]] = {
                k[len(prefix) :] if k.startswith(prefix) else k: v for k, v in out.get("data", {}).items()
            }
    return glue


def _text(v: Any) -> str:
    return "".join(v) if isinstance(v, list) else str(v)


def _strip_math(tex: str) -> str:
    tex = tex.strip()
    for a, b in (("$$", "$$"), ("$", "$"), (r"\[", r"\]"), (r"\(", r"\)")):
        if tex.startswith(a) and tex.endswith(b) and len(tex) >= len(a) + len(b):
            return tex[len(a) : len(tex) - len(b)].strip()
    return tex


# --------------------------------------------------------------------------- markdown
@dataclass
class _Context:
    glue: dict[str, dict[str, Any]]
    bib: Bibliography
    index: BookIndex
    doc: str | None  # this notebook's docname, e.g. book/sharpening/lemma1_rescaling
    base_url: str | None
    cited: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    quoted: dict[str, str] = field(default_factory=dict)  # "key:fmt" -> text, of the cell being converted

    def url(self, doc: str, anchor: str | None = None) -> str | None:
        if not self.base_url:
            return None
        u = self.base_url.rstrip("/") + "/" + doc + ".html"
        return u + ("#" + anchor if anchor else "")

    def resolve_doc(self, target: str) -> str:
        target = target.strip()
        for suf in (".md", ".py", ".ipynb", ".html"):
            if target.endswith(suf):
                target = target[: -len(suf)]
        if target.startswith("/"):
            return target.lstrip("/")
        base = self.doc.rsplit("/", 1)[0] if self.doc and "/" in self.doc else ""
        parts = [p for p in (base.split("/") if base else [])]
        for p in target.split("/"):
            if p == "..":
                parts = parts[:-1]
            elif p not in (".", ""):
                parts.append(p)
        return "/".join(parts)


def _link(ctx: _Context, text: str, doc: str | None, anchor: str | None = None) -> str:
    url = ctx.url(doc, anchor) if doc else None
    return f"[{text}]({url})" if url else text


def _split_explicit(content: str) -> tuple[str | None, str]:
    m = re.match(r"^(.*?)\s*<([^<>]+)>\s*$", content, re.S)
    return (m.group(1).strip(), m.group(2).strip()) if m else (None, content.strip())


def _role(ctx: _Context, name: str, content: str) -> str:
    if name.startswith("glue"):
        kind = name.split(":", 1)[1] if ":" in name else "any"
        key, fmt = content, ""
        if kind == "text" and ":" in content.replace("::", "\x00"):
            key, fmt = content.rsplit(":", 1)
        key = key.split("::", 1)[-1]  # cross-page glue: take the key (the value must be glued here too)
        bundle = ctx.glue.get(key)
        if bundle is None:
            ctx.problems.append(f"glue key {key!r} has no value in this notebook")
            return f"**[{key}: not computed]**"
        if kind == "text":
            try:
                shown = format_plain_text(_text(bundle.get("text/plain", "")), fmt)
                ctx.quoted[f"{key}:{fmt}" if fmt else key] = shown
                return shown
            except (ValueError, TypeError) as e:
                ctx.problems.append(f"glue {key!r} cannot be formatted with {fmt!r}: {e}")
                return _text(bundle.get("text/plain", ""))
        if kind == "math" or (kind in ("any", "") and "text/latex" in bundle):
            if "text/latex" in bundle:
                return "$" + _strip_math(_text(bundle["text/latex"])) + "$"
        if kind == "md" and "text/markdown" in bundle:
            return _text(bundle["text/markdown"])
        if "text/markdown" in bundle:
            return _text(bundle["text/markdown"])
        return format_plain_text(_text(bundle.get("text/plain", "")), "")
    if name.startswith("cite"):
        keys = [k.strip() for k in content.split(",") if k.strip()]
        ctx.cited.extend(k for k in keys if k not in ctx.cited)
        return ctx.bib.cite_t(keys) if name in ("cite:t", "cite:ts", "cite:ct") else ctx.bib.cite_p(keys)
    if name == "doc":
        text, target = _split_explicit(content)
        doc = ctx.resolve_doc(target)
        return _link(ctx, text or ctx.index.title(doc), doc)
    if name in ("ref", "prf:ref", "numref", "eq", "any"):
        text, label = _split_explicit(content)
        doc, title = ctx.index.labels.get(label, (None, None))
        if text is None:
            text = title or label.replace("-", " ")
            if name == "eq":
                text = f"({label})"
        text = re.sub(r"\{(?:number|name)\}", title or label, text) if name == "numref" else text
        return _link(ctx, text, doc, label)
    if name == "math":
        return f"${content}$"
    if name in ("sub", "subscript"):
        return f"<sub>{content}</sub>"
    if name in ("sup", "superscript"):
        return f"<sup>{content}</sup>"
    if name in ("code", "literal", "kbd", "file", "samp", "command", "program"):
        return f"`{content}`"
    text, _ = _split_explicit(content)
    return text if text is not None else content  # term, abbr, download, …: the text


_ROLE_RE = re.compile(r"\{([\w:.-]+)\}`([^`]*)`")
_MDLINK_RE = re.compile(r"(?<!!)\[([^\]]+)\]\(([^)\s]+)\)")


_TOKEN_RE = re.compile(r"(\{[\w:.-]+\}`[^`]*`)|(``.+?``|`[^`]+`)|((?<!!)\[[^\]]+\]\([^)\s]+\))")


def _inline(ctx: _Context, line: str) -> str:
    """Roles and relative links of one line; inline code spans stay verbatim."""

    def token(m: re.Match) -> str:
        if m.group(1):
            r = _ROLE_RE.fullmatch(m.group(1))
            return _role(ctx, r.group(1), r.group(2))
        if m.group(2):
            return m.group(2)
        lm = _MDLINK_RE.fullmatch(m.group(3))
        text, target = lm.group(1), lm.group(2)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            return m.group(0)
        path, _, anchor = target.partition("#")
        if not path or not re.search(r"\.(md|py|ipynb)$", path):
            return m.group(0)
        return _link(ctx, _inline(ctx, text), ctx.resolve_doc(path), anchor or None)

    return _TOKEN_RE.sub(token, line)


def _quote(lines: list[str]) -> list[str]:
    return [("> " + ln) if ln.strip() else ">" for ln in lines]


def _render_directive(ctx: _Context, name: str, arg: str, options: dict[str, str], body: list[str]) -> list[str]:
    arg = _inline(ctx, arg)
    label = options.get("label")
    anchor = [f'<a id="{label}"></a>', ""] if label else []
    kind = name.split(":", 1)[1] if name.startswith("prf:") else name
    if name.startswith("prf:"):
        if kind == "proof":
            return anchor + _quote(["*Proof.* " + (body[0] if body else "")] + body[1:] + ["", "∎"])
        title = f"**{kind.capitalize()}" + (f" ({arg})" if arg else "") + ".**"
        return anchor + _quote([title, ""] + body)
    if name in ("math", "equation"):
        return anchor + ["$$"] + body + ["$$"]
    if name in ADMONITIONS:
        title = arg if name == "admonition" and arg else kind.capitalize()
        body = ([arg, ""] if name != "admonition" and arg else []) + body
        return anchor + _quote([f"**{title}**", ""] + body)
    if name == "dropdown":
        return anchor + ["<details>", f"<summary>{arg or 'Details'}</summary>", ""] + body + ["", "</details>"]
    if name in ("figure", "image"):
        cap = " ".join(b for b in body if b.strip())
        return anchor + [f"![{cap or options.get('alt', '')}]({arg})"] + ([f"*{cap}*"] if cap else [])
    if name in ("glue", "glue:any", "glue:math", "glue:figure", "glue:md"):
        value = _role(ctx, "glue:math" if name == "glue:math" else "glue:any", arg.strip())
        if name == "glue:math":
            return anchor + ["$$", value.strip("$"), "$$"]
        return anchor + [value] + body
    if name in ("code-block", "code", "sourcecode", "code-cell"):
        return ["```" + arg] + body + ["```"]
    return anchor + _quote([f"**{(arg or kind).strip()}**", ""] + body)


def _render(ctx: _Context, lines: list[str]) -> list[str]:
    out: list[str] = []
    para: list[str] = []  # plain lines, converted together (a role may span lines)

    def flush() -> None:
        if para:
            out.extend(_inline(ctx, "\n".join(para)).split("\n"))
            para.clear()

    i, n = 0, len(lines)
    while i < n:
        ln = lines[i]
        m = _OPEN_RE.match(ln)
        if m or _FENCE_RE.match(ln) or _TARGET_RE.match(ln):
            flush()
        if m:
            indent, fence, name, arg = m.group(1), m.group(2), m.group(3), m.group(4)
            close = re.compile(r"^\s*" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}\s*$")
            j = i + 1
            while j < n and not close.match(lines[j]):
                j += 1
            body = [b[len(indent) :] if b.startswith(indent) else b.lstrip() for b in lines[i + 1 : j]]
            options: dict[str, str] = {}
            if body and body[0].strip() == "---":  # YAML options block
                k = 1
                while k < len(body) and body[k].strip() != "---":
                    if ":" in body[k]:
                        a, b = body[k].split(":", 1)
                        options[a.strip()] = b.strip()
                    k += 1
                body = body[k + 1 :]
            while body and _OPTION_RE.match(body[0]):
                om = _OPTION_RE.match(body[0])
                options[om.group(1)] = om.group(2).strip()
                body = body[1:]
            while body and not body[0].strip():
                body = body[1:]
            if name in ("code-block", "code", "sourcecode", "code-cell", "math", "equation"):
                inner = body
            else:
                inner = _render(ctx, body)
            out.extend(indent + r for r in _render_directive(ctx, name, arg, options, inner))
            i = j + 1
            continue
        f = _FENCE_RE.match(ln)
        if f:
            fence = f.group(2)
            close = re.compile(r"^\s*" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}\s*$")
            j = i + 1
            while j < n and not close.match(lines[j]):
                j += 1
            out.extend(lines[i : j + 1])
            i = j + 1
            continue
        t = _TARGET_RE.match(ln)
        if t:
            out.append(f'<a id="{t.group(1)}"></a>')
            i += 1
            continue
        if re.match(r"^\s*%", ln) and not re.match(r"^\s*%%", ln):  # MyST comment line
            i += 1
            continue
        para.append(ln)
        i += 1
    flush()
    return out


def convert_markdown(
    text: str,
    glue: dict[str, dict[str, Any]] | None = None,
    *,
    bib: Bibliography | None = None,
    index: BookIndex | None = None,
    doc: str | None = None,
    base_url: str | None = None,
    _ctx: _Context | None = None,
) -> str:
    """One markdown cell's MyST as plain Markdown + LaTeX (see the module docstring)."""
    ctx = _ctx or _Context(glue or {}, bib or Bibliography(), index or BookIndex(), doc, base_url)
    return "\n".join(_render(ctx, text.split("\n")))


_LEFTOVER_PATTERNS = (
    (re.compile(r"\{[\w:.-]+\}`"), "role"),
    (re.compile(r"^\s*(`{3,}|:{3,})\{[\w:.-]+\}", re.M), "directive"),
    (re.compile(r"^\s*\([\w:.-]+\)=\s*$", re.M), "target"),
    (re.compile(r"^\s*:(label|class|nonumber|name):", re.M), "directive option"),
)


def myst_leftovers(text: str) -> list[str]:
    """MyST syntax left in a markdown text: roles, directive fences, targets, options."""
    found = []
    for rx, what in _LEFTOVER_PATTERNS:
        for m in rx.finditer(text):
            found.append(f"{what}: {text[max(0, m.start() - 20) : m.end() + 30]!r}")
    return found


# --------------------------------------------------------------------------- notebook
def install_cell_source(version: str | None = None, spec: str | None = None) -> str:
    """The set-up cell: the installed package, else ``%pip install`` of the book's version.

    ``--find-links .`` lets pip take a wheel lying next to the notebook (``make wheel``; on
    Colab: uploaded into the session's folder) before asking the index, so a course can hand
    out notebook + wheel without a package index; when neither has it the cell stops with an
    error that says so (not a later ``ModuleNotFoundError`` in the middle of the page)."""
    if spec is None:
        from attnflow import __version__ as v

        spec = f"attnflow=={version or v}"
    missing = spec + " could not be installed: put its wheel (make wheel in the repository)"
    return "\n".join(
        [
            "# Set-up for running this notebook outside the attnflow repository (Colab, a course folder):",
            "# installs the package at the book's version (a wheel next to this notebook first, else the",
            "# package index); the package carries the pages' stand-in data.",
            "try:",
            "    import attnflow",
            "except ImportError:",
            f'    %pip install -q --find-links . "{spec}"',
            "    import importlib",
            "    importlib.invalidate_caches()",
            "    try:",
            "        import attnflow",
            "    except ImportError:",
            f"        raise ImportError({missing!r}",
            '                          " next to this notebook (on Colab: Files, Upload) and run this cell again")'
            " from None",
            "from attnflow import resources",
            "# stand-in data and caches found from any folder; assigned, so the cell shows nothing",
            "data_folders = resources.activate()",
        ]
    )


def source_commit(root: str | Path | None = None) -> str | None:
    """The short git commit of the checkout at ``root`` (the repository of this module when None),
    ``"<hash>, with uncommitted changes"`` for a dirty tree; None outside a git checkout (a wheel)."""
    from attnflow import resources

    root = Path(root) if root is not None else Path(__file__).resolve().parents[2]
    state = resources.git_state(root, short=True) if (root / ".git").exists() else None
    if not (state and state[0]):
        return None
    return state[0] + (", with uncommitted changes" if state[1] else "")


def citation_text(version: str | None = None, commit: str | None = None, year: str | None = None) -> str:
    """``the attnflow authors (YEAR). attnflow: … Version V (commit C).`` as CITATION.cff cites it."""
    import datetime

    from attnflow import __version__

    year = year or str(datetime.date.today().year)
    built = f" (commit {commit})" if commit else ""
    return f"{AUTHORS} ({year}). *{TITLE}*. Version {version or __version__}{built}."


def licence_cell(doc: str | None = None, version: str | None = None, commit: str | None = None):
    """The last cell of an exported notebook: where it comes from, its licence, how to cite it."""
    import nbformat

    page = f" (page `{doc}`)" if doc else ""
    text = "\n".join(
        [
            "---",
            "",
            f"**Licence and citation.** This notebook{page} is part of the attnflow book, {LICENCE}: "
            "you may share and adapt it with attribution.",
            f"Cite it as: {citation_text(version, commit)} See `CITATION.cff` in the repository, and cite "
            "the paper this page reproduces (its references).",
        ]
    )
    return nbformat.v4.new_markdown_cell(text, metadata={"tags": [LICENCE_TAG]})


def text_values_cell(quoted: dict[str, str]):
    """The hidden cell after a paragraph that quotes glued numbers: on a re-run it shows this run's
    values where they differ from the book defaults' the text carries (:func:`attnflow.display.text_values`)."""
    import nbformat

    source = (
        "import attnflow.display  # the text above quotes the book defaults' run; this run's values if they differ\n"
        f"attnflow.display.text_values({quoted!r})"
    )
    meta = {"tags": [TEXT_VALUES_TAG, "remove-input"], "jupyter": {"source_hidden": True}}
    return nbformat.v4.new_code_cell(source, metadata=meta)


INJECTED_TAG = "injected-parameters"  # papermill's cell of a run's parameters, after the page's own


def fold_injected_parameters(nb) -> list[str]:
    """Move papermill's injected parameters into the page's parameters cell and drop the injected
    cell; returns the names changed. In a run with a profile or ``-p`` values the injected cell
    came after the parameters cell, so a student's edit there was silently replaced on re-run;
    now the parameters cell holds this run's values (its comments kept) and is the only one."""
    import ast

    tags = [list(c.metadata.get("tags", []) or []) for c in nb.cells]
    inj = [i for i, t in enumerate(tags) if INJECTED_TAG in t and nb.cells[i].cell_type == "code"]
    par = next((i for i, t in enumerate(tags) if "parameters" in t and nb.cells[i].cell_type == "code"), None)
    if not inj or par is None:
        return []
    values: dict[str, str] = {}
    for i in inj:
        src = nb.cells[i].source
        for node in ast.parse(src).body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                values[node.targets[0].id] = ast.get_source_segment(src, node.value)
    lines = nb.cells[par].source.split("\n")
    spans = []  # (first line, first col, last line, end col, name) of each top-level assignment's value
    for node in ast.parse(nb.cells[par].source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            v = node.value
            spans.append((v.lineno - 1, v.col_offset, v.end_lineno - 1, v.end_col_offset, node.targets[0].id))
    changed, seen = [], set()
    for a, ca, b, cb, name in sorted(spans, reverse=True):  # from the bottom: earlier offsets stay valid
        seen.add(name)
        if name not in values:
            continue
        # ast's columns count UTF-8 bytes
        head = lines[a].encode()[:ca].decode()
        tail = lines[b].encode()[cb:].decode()
        old = "\n".join(lines[a : b + 1]).encode()
        old_text = old[ca : len(old) - (len(lines[b].encode()) - cb)].decode()
        if old_text != values[name]:
            changed.append(name)
        lines[a : b + 1] = (head + values[name] + tail).split("\n")
    extra = [n for n in values if n not in seen]
    lines += [f"{n} = {values[n]}  # set by this run" for n in extra]
    nb.cells[par].source = "\n".join(lines)
    for i in reversed(inj):
        del nb.cells[i]
    return sorted(changed) + extra


def _clean_outputs(cell) -> None:
    keep = []
    for out in cell.get("outputs", []):
        meta = out.get("metadata", {}) or {}
        sb = meta.get("scrapbook")
        if sb is not None and (sb.get("mime_prefix") or "") != "":
            continue  # glue-only output: no display
        if "data" in out:
            out["data"] = {k: v for k, v in out["data"].items() if not k.startswith(GLUE_PREFIX)}
            if not out["data"]:
                continue
        if sb is not None:
            meta.pop("scrapbook", None)
        keep.append(out)
    cell["outputs"] = keep


def _ensure_ids(nb) -> None:
    """Cell ids (nbformat ≥ 4.5): keep existing ones, give new or old cells a fresh one."""
    import uuid

    nb.nbformat, nb.nbformat_minor = 4, max(int(nb.get("nbformat_minor", 5)), 5)
    seen: set[str] = set()
    for c in nb.cells:
        cid = c.get("id")
        if not cid or cid in seen:
            cid = uuid.uuid4().hex[:8]
            c["id"] = cid
        seen.add(cid)


def export_notebook(
    nb,
    *,
    glue_json: str | Path | None = None,
    doc: str | None = None,
    bib: Bibliography | None = None,
    index: BookIndex | None = None,
    base_url: str | None = None,
    install: bool = True,
    install_spec: str | None = None,
    version: str | None = None,
    commit: str | None = None,
    strict: bool = False,
):
    """A copy of executed notebook ``nb`` that renders in plain Jupyter (module docstring).

    ``doc``: the page's docname (``book/sharpening/lemma1_rescaling``) for relative links;
    ``bib``/``index``: the book's bibliography and labels (:meth:`Bibliography.from_file`,
    :meth:`BookIndex.scan`); ``base_url``: the published book, for links (else plain text);
    ``install_spec``: what the set-up cell installs (default ``attnflow==<version>``);
    ``commit``: the source commit named in the licence and citation cell (default: this checkout's,
    none outside a git checkout; ``""`` for none);
    ``strict``: raise :class:`ExportError` on a missing glue value or leftover MyST."""
    import nbformat

    nb = copy.deepcopy(nb)
    fold_injected_parameters(nb)
    ctx = _Context(load_glue(nb, glue_json), bib or Bibliography(), index or BookIndex(), doc, base_url)
    cells = []
    for cell in nb.cells:
        cells.append(cell)
        if cell.cell_type == "markdown":
            ctx.quoted = {}
            cell.source = convert_markdown(cell.source, _ctx=ctx)
            for k in list(cell.metadata):
                if k not in ("tags",):
                    cell.metadata.pop(k)
            if ctx.quoted:
                cells.append(text_values_cell(ctx.quoted))
        elif cell.cell_type == "code":
            _clean_outputs(cell)
            cell.metadata.pop("papermill", None)
            cell.metadata.pop("execution", None)
            tags = cell.metadata.get("tags", [])
            if "hide-input" in tags or "remove-input" in tags or "remove-cell" in tags:
                cell.metadata.setdefault("jupyter", {})["source_hidden"] = True
    nb.cells = cells
    if ctx.cited and ctx.bib.entries:
        refs = ["## References", ""] + [f"- {ctx.bib.full(k)}" for k in ctx.cited if k in ctx.bib.entries]
        nb.cells.append(nbformat.v4.new_markdown_cell("\n".join(refs)))
    commit = source_commit() if commit is None else (commit or None)
    nb.cells = [c for c in nb.cells if LICENCE_TAG not in (c.metadata.get("tags") or [])]  # re-exported
    nb.cells.append(licence_cell(doc, version, commit))
    if install:
        cell = nbformat.v4.new_code_cell(install_cell_source(version, install_spec), metadata={"tags": [SETUP_TAG]})
        first_code = next((i for i, c in enumerate(nb.cells) if c.cell_type == "code"), len(nb.cells))
        nb.cells.insert(first_code, cell)
    for k in ("jupytext", "papermill"):
        nb.metadata.pop(k, None)
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    from attnflow import __version__

    nb.metadata["attnflow"] = {"page": doc, "version": version or __version__, "exported_by": "attnflow.export"}
    if commit:
        nb.metadata["attnflow"]["commit"] = commit
    _ensure_ids(nb)
    if strict:
        left = [
            f"cell {i}: {x}"
            for i, c in enumerate(nb.cells)
            if c.cell_type == "markdown"
            for x in myst_leftovers(c.source)
        ]
        if ctx.problems or left:
            raise ExportError("; ".join(ctx.problems + left))
    nb.metadata["attnflow"]["problems"] = ctx.problems
    return nb


def export_file(src: str | Path, dest: str | Path, *, root: str | Path | None = None, **kw) -> Path:
    """Export executed notebook ``src`` (its sibling ``.glue.json`` is read when present) to
    ``dest``; ``root``: the book root (for the bibliography and labels)."""
    import nbformat

    src, dest = Path(src), Path(dest)
    nb = nbformat.read(src, as_version=4)
    glue_json = src.with_name(src.stem + ".glue.json")
    if root is not None:
        kw.setdefault("bib", Bibliography.from_file(Path(root) / "book" / "references.bib"))
        kw.setdefault("index", BookIndex.scan(root))
    out = export_notebook(nb, glue_json=glue_json if glue_json.exists() else None, **kw)
    dest.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(out, dest)
    return dest


def exported_problems(nb) -> list[str]:
    """Problems recorded while exporting (missing glue values …)."""
    return list((nb.metadata.get("attnflow") or {}).get("problems", []))
