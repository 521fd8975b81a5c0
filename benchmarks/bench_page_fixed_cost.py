"""The fixed cost of one page run (issue 24): what `attnflow run` spends on a page that computes nothing.

Three trivial pages, in a throw-away book, each run through ``runner.run_page`` exactly as a smoke
test runs a book page (pre-validation, papermill, a fresh kernel, the executed notebook and the
claims record written into place):

- ``bare``: parameters cell, validation cell, one claim — kernel start, papermill/nbclient,
  conversion and writing the notebook (the runner's own cost);
- ``imports``: + the imports every book page makes (torch, sympy, scipy, pandas, matplotlib,
  seaborn, attnflow.display/plotting/seeding) — ``imports − bare`` is the import cost;
- ``figure``: + ``plotting.use_style()`` and one three-panel figure shown inline —
  ``figure − imports`` is the cost of rendering one figure (the PNG and its provenance).

Also printed: the same imports in a plain ``python -c`` (no kernel), and the pre-validation alone.
Each run is repeated ``--repeat`` times (default 3); the medians are printed with the load average,
because on the project's shared 2-core machines every number scales with the load.

    .venv/bin/python benchmarks/bench_page_fixed_cost.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from attnflow import runner

HEAD = """# %% tags=["parameters"]
n = 1  # a number

# %%
from attnflow import claims
from attnflow.params import Param, Schema, validate
cfg = validate(globals(), Schema("bench/{name}", n=Param(int, 0, 5, "a number")))
"""
IMPORTS = """
# %%
import numpy as np
import pandas as pd
import scipy.integrate
import sympy as sp
import torch

from attnflow import display, exercises, plotting, seeding
seeding.seed_everything(0)
"""
FIGURE = """
# %%
plotting.use_style()
fig, axes = plotting.subplots(1, 3)
for i, ax in enumerate(axes[0]):
    ax.plot(np.arange(50), np.sin(np.arange(50) / (i + 3)))
    ax.set_title(f"panel {i}")
"""
TAIL = """
# %%
claims.check("A1", 1.0, 1.0, atol=0.1, what="a trivial claim")
claims.finish()
"""
PAGES = {"bare": HEAD + TAIL, "imports": HEAD + IMPORTS + TAIL, "figure": HEAD + IMPORTS + FIGURE + TAIL}
IMPORT_LINE = (
    "import numpy, pandas, scipy.integrate, sympy, torch; from attnflow import display, exercises, plotting, seeding"
)


def tiny_book(root: Path) -> Path:
    (root / "book" / "bench").mkdir(parents=True)
    toc = "format: jb-book\nroot: book/bench/bare\nchapters:\n" + "".join(
        f"- file: book/bench/{name}\n" for name in PAGES if name != "bare"
    )
    (root / "_toc.yml").write_text(toc)
    (root / "_config.yml").write_text("title: bench\n")
    (root / "book" / "profiles.yml").write_text("smoke: {}\n")
    for name, src in PAGES.items():
        (root / "book" / "bench" / f"{name}.py").write_text(src.replace("{name}", name))
    return root


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory(prefix="bench-fixed-") as tmp:
        root = tiny_book(Path(tmp) / "book_root")
        out = Path(tmp) / "out"
        # warm-up: the runner's own imports (jupytext, papermill, nbclient) happen once per process
        runner.run_page("bench/bare", profile="smoke", output=out / "warm", root=root)
        plain = [
            timed(lambda: subprocess.run([sys.executable, "-c", IMPORT_LINE], check=True)) for _ in range(args.repeat)
        ]
        import jupytext

        nb = jupytext.read(root / "book" / "bench" / "figure.py")
        pre = [
            timed(lambda: runner.prevalidate(nb, {}, root / "book" / "bench", "bench/figure"))
            for _ in range(args.repeat)
        ]
        med: dict[str, float] = {}
        runs: dict[str, list[float]] = {name: [] for name in PAGES}
        for i in range(args.repeat):  # interleaved, so a load change hits every page alike
            for name in PAGES:
                runs[name].append(
                    timed(
                        lambda: runner.run_page(f"bench/{name}", profile="smoke", output=out / f"{name}-{i}", root=root)
                    )
                )
        for name, ts in runs.items():
            med[name] = statistics.median(ts)
    print(f"{'part':<44}{'median s':>10}   runs")
    rows = [
        ("run_page, bare page (kernel+papermill+write)", med["bare"], runs["bare"]),
        ("run_page, + page imports", med["imports"], runs["imports"]),
        ("run_page, + style and one 3-panel figure", med["figure"], runs["figure"]),
        ("  = imports in the kernel (imports − bare)", med["imports"] - med["bare"], None),
        ("  = one figure (figure − imports)", med["figure"] - med["imports"], None),
        ("same imports, plain `python -c`", statistics.median(plain), plain),
        ("pre-validation in the test process", statistics.median(pre), pre),
    ]
    for label, m, ts in rows:
        print(f"{label:<44}{m:>10.2f}   {' '.join(f'{t:.2f}' for t in ts) if ts else ''}")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
