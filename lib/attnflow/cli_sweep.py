"""``attnflow sweep``: run a page at many parameter points on Dask (see :mod:`attnflow.parallel`).

    attnflow sweep PAGE (--grid key=v1,v2,… … | --random N [--seed S]) [--profile P]
                   [--scheduler ADDRESS | --workers W] [--output DIR] [--quiet]

Exit 0 when every point ran with no failed claim, 1 when some point failed or crashed (all are
recorded in the table), 2 for bad input (unknown page, a grid point the schema refuses, an
unwritable output folder) before any work.
"""

from __future__ import annotations

import argparse
import sys


def add_parser(sub) -> None:
    s = sub.add_parser("sweep", help="run a page at many parameter points in parallel (Dask)")
    s.add_argument("page", help="page key, e.g. sharpening/line_theorem")
    how = s.add_mutually_exclusive_group(required=True)
    how.add_argument("--grid", action="append", metavar="KEY=V1,V2", help="a grid axis (repeat for a product)")
    how.add_argument("--random", type=int, metavar="N", help="N random valid points of book/sweeps.yml's space")
    s.add_argument("--seed", type=int, default=0, help="seed of the random draws (default 0)")
    s.add_argument("--profile", default="smoke", help="base profile of every point (default smoke)")
    s.add_argument("--workers", type=int, default=2, help="worker processes of the local Dask cluster")
    s.add_argument("--scheduler", default=None, help="address of a running Dask scheduler (tcp://host:port)")
    s.add_argument("--output", default=None, help="folder of the table and notebooks (default sweeps/PAGE)")
    s.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args) -> int:
    from pathlib import Path

    from attnflow import parallel, runner

    try:
        if args.random is not None:
            parallel.check_points(args.random, "--random")
        parallel.check_workers(args.workers, "--workers")
        parallel.check_environment()
        if args.scheduler:
            parallel.probe_scheduler(args.scheduler)
        key, _ = runner.resolve_page(args.page)
        profile = None if args.profile == "book" else args.profile
        points = (
            parallel.draw_points(key, args.random, seed=args.seed, profile=profile)
            if args.random
            else parallel.grid_points(key, args.grid, profile=profile)
        )
        out = Path(args.output) if args.output else Path("sweeps") / key.replace("/", "__")
        table = parallel.sweep(
            key, points, profile=profile, output=out, workers=args.workers, scheduler=args.scheduler, quiet=args.quiet
        )
    except runner.RunError as e:
        print(f"attnflow sweep: error: {e}", file=sys.stderr)
        return 2
    except parallel.SweepInterrupted as e:
        print(f"attnflow sweep: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print(
            "attnflow sweep: interrupted; finished points are kept, re-run the same command to resume", file=sys.stderr
        )
        return 130
    except OSError as e:  # a full disk or a folder gone while writing: what was finished is kept
        print(
            f"attnflow sweep: error: {e.strerror or e} ({getattr(e, 'filename', None) or 'the sweep folder'}); "
            "finished points are kept, re-run the same command to resume",
            file=sys.stderr,
        )
        return 1
    print(parallel.summarize(table))
    print(f"table: {out / 'sweep.parquet'}")
    bad = (
        table.drop_duplicates("key")["status"].isin(["failed", "error", "crashed"]).any() if not table.empty else False
    )
    return 1 if bad else 0


if __name__ == "__main__":  # pragma: no cover
    ap = argparse.ArgumentParser(prog="attnflow")
    add_parser(ap.add_subparsers(dest="cmd", required=True))
    sys.exit(run(ap.parse_args()))
