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
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import yaml
from markdown_it import MarkdownIt, rules_inline
from markdown_it.helpers import parseLinkLabel
from mdit_py_plugins.amsmath import amsmath_plugin
from mdit_py_plugins.colon_fence import colon_fence_plugin
from mdit_py_plugins.deflist import deflist_plugin
from mdit_py_plugins.dollarmath import dollarmath_plugin
from mdit_py_plugins.myst_blocks import myst_block_plugin
from mdit_py_plugins.myst_role import myst_role_plugin
from mdit_py_plugins.myst_role.index import myst_role
from pybtex.database import BibliographyData
from pybtex.database.input import bibtex
from pybtex.richtext import Text

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
def _tex(s: str) -> str:
    """A BibTeX field's TeX as plain Unicode (pybtex's LaTeX parser, latexcodec: accents, ``{\\L}``,
    ``--``, braces), whitespace collapsed."""
    return " ".join(Text.from_latex(s).render_as("text").split())


class Bibliography:
    """BibTeX entries as pybtex reads them, cited author–year as sphinxcontrib-bibtex's
    ``author_year`` style writes them in the book."""

    def __init__(self, data: BibliographyData | None = None):
        self.data = data if data is not None else BibliographyData()
        self.entries = self.data.entries  # key -> pybtex Entry

    @classmethod
    def parse(cls, text: str) -> "Bibliography":
        return cls(bibtex.Parser().parse_string(text))

    @classmethod
    def from_file(cls, *paths: str | Path | None) -> "Bibliography":
        """The entries of the BibTeX files ``paths`` (missing ones and None skipped)."""
        found = [str(p) for p in paths if p is not None and Path(p).exists()]
        return cls(bibtex.Parser().parse_files(found))

    def _surnames(self, key: str) -> list[str]:
        e = self.entries[key]
        people = e.persons.get("author") or e.persons.get("editor")
        return [_tex(" ".join(p.prelast_names + p.last_names)) for p in people] if people else [key]

    def authors_short(self, key: str) -> str:
        n = self._surnames(key)
        if n and n[-1].lower() == "others":
            return f"{n[0]} et al."
        return n[0] if len(n) == 1 else (f"{n[0]} and {n[1]}" if len(n) == 2 else f"{n[0]} et al.")

    def year(self, key: str) -> str:
        return self.entries[key].fields.get("year", "n.d.")

    def cite_p(self, keys: Iterable[str]) -> str:
        cites = (f"{self.authors_short(k)}, {self.year(k)}" if k in self.entries else f"{k}?" for k in keys)
        return "(" + "; ".join(cites) + ")"

    def cite_t(self, keys: Iterable[str]) -> str:
        return ", ".join(f"{self.authors_short(k)} ({self.year(k)})" if k in self.entries else f"{k}?" for k in keys)

    def full(self, key: str) -> str:
        e, f = self.entries[key], self.entries[key].fields
        authors = _tex(" and ".join(str(p) for p in e.persons.get("author", [])))
        venue = f.get("booktitle") or f.get("journal") or f.get("publisher") or f.get("howpublished") or ""
        parts = [f"{authors} ({self.year(key)}). *{_tex(f.get('title', key))}*."]
        parts += [_tex(v) + "." for v in (venue, f.get("note")) if v]
        if f.get("url") or f.get("doi"):
            parts.append(f"<{f['url']}>" if f.get("url") else f"<https://doi.org/{f['doi']}>")
        return " ".join(parts)


# --------------------------------------------------------------------------- MyST parser
def _spanned(rule: Callable, kind: str) -> Callable:
    """markdown-it inline ``rule`` that records on its ``kind`` token where it starts and ends in the
    source (``meta["span"]``) and, for a link, where its text ends (``meta["text_end"]``): the
    converter rewrites those spans of the source and leaves every other character as it was."""

    def wrapped(state, silent: bool) -> bool:
        start, n = state.pos, len(state.tokens)
        if not rule(state, silent):
            return False
        if not silent:
            tok = next(t for t in state.tokens[n:] if t.type == kind)
            end = state.pos
            tok.meta["span"] = (start, end)
            if kind == "link_open":
                tok.meta["text_end"] = parseLinkLabel(state, start, True)
                state.pos = end
        return True

    return wrapped


# The book's MyST (myst-parser's extensions in _config.yml) as markdown-it tokens.
_MD = (
    MarkdownIt("commonmark")
    .enable("table")
    .use(myst_role_plugin)
    .use(myst_block_plugin)
    .use(colon_fence_plugin)
    .use(dollarmath_plugin)
    .use(amsmath_plugin)
    .use(deflist_plugin)
)
_MD.inline.ruler.at("myst_role", _spanned(myst_role, "myst_role"))
_MD.inline.ruler.at("link", _spanned(rules_inline.link, "link_open"))
_DIRECTIVE_RE = re.compile(r"^\{([\w:.-]+)\}[ \t]*(.*)$")
_OPTION_RE = re.compile(r"^\s*:([\w-]+):\s*(.*)$")

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


def _apply(text: str, edits: Iterable[tuple[int, int, str]]) -> str:
    """``text`` with each span ``(start, end)`` replaced (spans do not overlap)."""
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    return text


def _plain_title(text: str) -> str:
    """A heading or directive title without MyST roles (a role shows its text)."""
    roles = [t for t in _MD.parseInline(text)[0].children or [] if t.type == "myst_role"]
    return _apply(text, [(*t.meta["span"], t.content.split("<")[0].strip()) for t in roles]).strip()


def _directive(info: str) -> tuple[str, str] | None:
    m = _DIRECTIVE_RE.match(info.strip())
    return (m.group(1), m.group(2)) if m else None


def _options(content: str) -> tuple[dict[str, str], list[str]]:
    """A directive's options (``:key: value`` lines or a ``---`` YAML block) and the body after them."""
    body = content.split("\n")
    if body and body[-1] == "":
        body = body[:-1]
    options: dict[str, str] = {}
    if body and body[0].strip() == "---":  # a YAML block of options
        end = next((k for k in range(1, len(body)) if body[k].strip() == "---"), len(body))
        options = {str(k): str(v) for k, v in (yaml.safe_load("\n".join(body[1:end])) or {}).items()}
        body = body[end + 1 :]
    while body and _OPTION_RE.match(body[0]):
        om = _OPTION_RE.match(body[0])
        options[om.group(1)] = om.group(2).strip()
        body = body[1:]
    while body and not body[0].strip():
        body = body[1:]
    return options, body


def _percent_markdown(text: str) -> str:
    """The markdown cells of a jupytext py:percent page, without their ``# `` comment marks."""
    out, markdown = [], False
    for ln in text.split("\n"):
        if ln.startswith("# %%"):
            markdown = "[markdown]" in ln
            out.append("")
        elif markdown:
            out.append(ln[2:] if ln.startswith("# ") else ("" if ln == "#" else ln))
    return "\n".join(out)


# --------------------------------------------------------------------------- book index
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
        tokens = _MD.parse(_percent_markdown(text) if python else text)
        target = None  # a (label)= waiting for the heading it names
        for i, t in enumerate(tokens):
            if t.type == "heading_open":
                title = _plain_title(tokens[i + 1].content)
                if t.tag == "h1":
                    self.titles.setdefault(doc, title)
                if target:
                    self.labels.setdefault(target, (doc, title))
                    target = None
            elif t.type == "myst_target":
                target = t.content
            elif t.type in ("fence", "colon_fence") and _directive(t.info):
                (name, arg), (options, body) = _directive(t.info), _options(t.content)
                if "label" in options:
                    self.labels.setdefault(options["label"], (doc, _directive_title(name, arg)))
                self.add_text(doc, "\n".join(body))  # nested directives

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
        """A link's or ``{doc}``'s target (relative to this page, or from the book root with a leading
        ``/``) as a docname; ``..`` never climbs above the root."""
        target = re.sub(r"\.(md|py|ipynb|html)$", "", target.strip())
        return posixpath.normpath(posixpath.join("/", posixpath.dirname(self.doc or ""), target)).lstrip("/")


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
        if kind in ("math", "any", "") and "text/latex" in bundle:
            return "$" + _strip_math(_text(bundle["text/latex"])) + "$"
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


def _inline(ctx: _Context, text: str, env: dict | None = None, base: int = 0) -> list[tuple[int, int, str]]:
    """Edits ``(start, end, new)`` (offsets from ``base``) of inline Markdown ``text``: roles, and
    links to book sources; code spans and math stay verbatim."""
    edits, in_link = [], False
    for t in _MD.parseInline(text, env or {})[0].children or []:
        if in_link:  # inside a link rewritten as a whole
            in_link = t.type != "link_close"
        elif t.type == "myst_role":
            edits.append((base + t.meta["span"][0], base + t.meta["span"][1], _role(ctx, t.meta["name"], t.content)))
        elif t.type == "link_open":
            (start, end), text_end = t.meta["span"], t.meta["text_end"]
            m = re.fullmatch(r"\(\s*([^)\s]+)\s*\)", text[text_end + 1 : end])
            target = m.group(1) if m else ""
            path, _, anchor = target.partition("#")
            if re.search(r"\.(md|py|ipynb)$", path) and not re.match(r"^[a-z][a-z0-9+.-]*:", target):
                label = _apply(text[start + 1 : text_end], _inline(ctx, text[start + 1 : text_end]))
                edits.append((base + start, base + end, _link(ctx, label, ctx.resolve_doc(path), anchor or None)))
                in_link = True
    return edits


def _quote(lines: list[str]) -> list[str]:
    return [("> " + ln) if ln.strip() else ">" for ln in lines]


def _render_directive(ctx: _Context, name: str, arg: str, content: str) -> list[str]:
    arg = _apply(arg, _inline(ctx, arg))
    options, body = _options(content)
    if name not in ("code-block", "code", "sourcecode", "code-cell", "math", "equation"):
        body = _render(ctx, "\n".join(body)).split("\n") if body else []
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


def _render(ctx: _Context, text: str) -> str:
    """MyST ``text`` as plain Markdown: markdown-it finds the directives, targets, comments, roles
    and links; their source lines or spans are rewritten, every other character is kept."""
    env: dict = {}
    tokens = _MD.parse(text, env)
    lines = text.split("\n")
    starts = [0]
    for ln in lines:
        starts.append(starts[-1] + len(ln) + 1)
    edits, seen = [], set()
    for t in tokens:
        if t.map is None:
            continue
        a, b = t.map
        start, end = starts[a], starts[b] - 1  # lines a … b-1, without the last newline
        if t.type in ("fence", "colon_fence") and _directive(t.info):
            prefix = lines[a][: lines[a].index(t.markup)]  # the indent (or container marks) of the fence
            rest = re.sub(r"[^>\s]", " ", prefix)
            new = _render_directive(ctx, *_directive(t.info), t.content)
            edits.append((start, end, "\n".join((rest if i else prefix) + ln for i, ln in enumerate(new))))
        elif t.type == "myst_target":
            edits.append((start, end, f'<a id="{t.content}"></a>'))
        elif t.type == "myst_line_comment":  # dropped with its line break
            edits.append((start, end + 1, "") if end < len(text) else (max(start - 1, 0), end, ""))
        elif t.type == "inline" and (a, b) not in seen:  # a paragraph, heading or table row
            seen.add((a, b))
            edits += _inline(ctx, text[start:end], env, start)
    return _apply(text, edits)


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
    return _render(ctx, text)


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
