"""Size of the library, as issue 22 measures it: Python lines of ``attnflow`` (science, claims,
parameters, runner, data) and of the book's build tooling, plus the hygiene counters the issue
tracks (modules over 300 lines, lines over 120 characters, function-local imports, ``# noqa``).

    .venv/bin/python benchmarks/line_count.py            # table
    .venv/bin/python benchmarks/line_count.py --json     # one JSON object

Physical lines, blank and comment lines included (what ``wc -l`` counts), so the numbers compare
with the issue's 8,450 (0a68d1b) and 20,104 (392bc3b).
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIB = ROOT / "lib"
# The book's build tooling: the package attnflow_book (Sphinx extensions, the download menu) and, still
# inside attnflow, the export to plain notebooks and the atlas page (both also commands of the package).
TOOLING = ("export.py", "atlas.py")
TOOLING_PACKAGES = ("attnflow_book",)


def _local_imports(tree: ast.AST) -> int:
    n = 0
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            n += sum(isinstance(c, (ast.Import, ast.ImportFrom)) for c in ast.walk(node))
    return n


def measure() -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for path in sorted(LIB.rglob("*.py")):
        rel = path.relative_to(LIB)
        top = rel.parts[0]
        if top in TOOLING_PACKAGES or (top == "attnflow" and len(rel.parts) == 2 and rel.name in TOOLING):
            group = "book tooling"
        elif top == "attnflow" and len(rel.parts) > 2 and rel.parts[2] == "reports":
            group = "attnflow (reports)"
        elif top == "attnflow":
            group = "attnflow"
        else:
            group = top
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        g = out.setdefault(
            group, {"files": 0, "lines": 0, "modules_over_300": 0, "lines_over_120": 0, "local_imports": 0, "noqa": 0}
        )
        g["files"] += 1
        g["lines"] += len(lines)
        g["modules_over_300"] += len(lines) > 300
        g["lines_over_120"] += sum(len(line) > 120 for line in lines)
        g["local_imports"] += _local_imports(ast.parse(text))
        g["noqa"] += text.count("# noqa")
    return out


def main(argv: list[str]) -> int:
    res = measure()
    if "--json" in argv:
        print(json.dumps(res, indent=1))
        return 0
    cols = ("files", "lines", "modules_over_300", "lines_over_120", "local_imports", "noqa")
    print(f"{'group':22s}" + "".join(f"{c:>18s}" for c in cols))
    for group, g in res.items():
        print(f"{group:22s}" + "".join(f"{g[c]:>18d}" for c in cols))
    science = sum(g["lines"] for k, g in res.items() if k.startswith("attnflow"))
    print(
        f"\nattnflow in all (reports included): {science} lines (issue 22 target ≤ 11,000); "
        f"book tooling: {res.get('book tooling', {}).get('lines', 0)} (target ≤ 2,000)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
