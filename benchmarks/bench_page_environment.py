"""A page kernel started from a Dask worker, with and without the worker's malloc setting, as a ratio.

    .venv/bin/python benchmarks/bench_page_environment.py [--profile smoke] [PAGE]

Dask's nanny gives every worker process ``MALLOC_TRIM_THRESHOLD_=65536``
(``distributed.nanny.pre-spawn-environ``): glibc then returns freed memory to the OS at every 64 KiB.
A page kernel started by the worker inherits it unless ``attnflow.parallel.page_process`` removes it
(``KERNEL_UNSET``). This runs the same page twice through ``runner.run_page`` in this process — once
with the variable set as a Dask worker has it (the baseline), once under ``page_process`` — and prints
wall and CPU (user, system) time of the kernel and the ratio. Default page: the finite-samples page at
book defaults (the book's longest page), where the measured ratio on the 2-core machine was 2.2×
(47.5 s against 105 s, system time 8.6 s against 66 s).
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time


def _run(page: str, profile: str | None, out: str) -> tuple[float, float, float]:
    from attnflow import runner

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    res = runner.run_page(page, profile=profile, output=out)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if res.failed:
        raise SystemExit(f"{page}: {res.failed} claims failed")
    return wall, after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("page", nargs="?", default="focus_dilution/finite_sample")
    ap.add_argument("--profile", default=None, help="smoke or paper (default: book defaults)")
    a = ap.parse_args()
    from attnflow import parallel
    from attnflow.device import single_threaded

    with tempfile.TemporaryDirectory() as d:
        os.environ["MALLOC_TRIM_THRESHOLD_"] = "65536"  # as a Dask worker has it
        with single_threaded():
            base = _run(a.page, a.profile, f"{d}/inherited")
        with parallel.page_process():
            fixed = _run(a.page, a.profile, f"{d}/page_process")
        os.environ.pop("MALLOC_TRIM_THRESHOLD_")
    for name, (wall, user, system) in (("inherited MALLOC_TRIM_THRESHOLD_", base), ("page_process", fixed)):
        print(
            f"{a.page} ({a.profile or 'book'}), {name:32s}: {wall:6.1f} s wall, "
            f"{user:6.1f} s user, {system:6.1f} s system"
        )
    print(
        f"ratio inherited / page_process: {base[0] / fixed[0]:.2f}× wall, "
        f"{(base[1] + base[2]) / (fixed[1] + fixed[2]):.2f}× CPU"
    )


if __name__ == "__main__":
    main()
