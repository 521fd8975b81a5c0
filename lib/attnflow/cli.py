"""Command line: ``attnflow run PAGE [--profile NAME] [-p key=value ...] [--output DIR]``,
``attnflow pages`` (list pages and their parameters)."""
from __future__ import annotations

import argparse
import sys

from attnflow.runner import PageFailed, RunError, list_pages, parse_assignments, run_page


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="attnflow", description="Run pages of the attnflow book.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="execute one page through papermill with new parameters")
    r.add_argument("page", help="page key, e.g. sharpening/lemma1_rescaling, or its .py path")
    r.add_argument("--profile", default=None, help="book (page defaults), smoke or paper")
    r.add_argument("-p", "--param", action="append", default=[], metavar="KEY=VALUE",
                   help="override a parameter (Python literal, e.g. -p lr_ratio=3 -p models=\"['FAFO']\")")
    r.add_argument("--output", default=None, help="folder for the executed notebook and claims (default runs/PAGE)")
    r.add_argument("--timeout", type=int, default=1800, help="per-cell timeout in seconds")
    sub.add_parser("pages", help="list the pages of the book")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "pages":
            print("\n".join(list_pages()))
            return 0
        res = run_page(args.page, profile=args.profile, parameters=parse_assignments(args.param),
                       output=args.output, timeout=args.timeout)
    except RunError as e:
        print(f"attnflow run: error: {e}", file=sys.stderr)
        return 2
    except PageFailed as e:
        print(f"attnflow run: page failed: {e}", file=sys.stderr)
        return 1
    print(res.summary())
    return 0 if res.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
