"""Parallel page execution for `make book` vs the serial execution, as a ratio in one run.

    .venv/bin/python benchmarks/bench_book_exec.py [--workers 2] [--profile-pages N] [PAGE ...]

Both phases execute the same pages at their book defaults through ``attnflow.parallel.execute_pages``
into fresh jupyter-caches: once with 1 worker (what myst-nb's serial execution does: one kernel at a
time) and once with ``--workers`` worker processes. Prints the wall time of each and the ratio; the
pages' claims must pass in both. Default pages: the five sharpening theory pages (about 2–4 min serial).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

DEFAULT = [
    "sharpening/lemma1_rescaling",
    "sharpening/scalar_reduction",
    "sharpening/line_theorem",
    "sharpening/growth_rates",
    "sharpening/sharpening_mechanism",
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("pages", nargs="*", default=DEFAULT)
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    from attnflow import parallel

    times = {}
    for workers in (1, a.workers):
        with tempfile.TemporaryDirectory() as d:
            start = time.perf_counter()
            status = parallel.execute_pages(
                a.pages, workers=workers, cache=Path(d) / "cache", claims=Path(d) / "claims", quiet=True
            )
            times[workers] = time.perf_counter() - start
            bad = {p: s for p, s in status.items() if s != "ran"}
            if bad:
                raise SystemExit(f"pages did not run cleanly with {workers} workers: {bad}")
        print(f"{len(a.pages)} pages, {workers} worker(s): {times[workers]:.1f} s", flush=True)
    print(f"ratio serial / parallel ({a.workers} workers): {times[1] / times[a.workers]:.2f}×")


if __name__ == "__main__":
    main()
