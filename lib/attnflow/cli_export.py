"""``attnflow export PAGE``: a page as a notebook that opens anywhere, and its exercise versions.

    attnflow export sharpening/lemma1_rescaling                  # run (book defaults), export
    attnflow export sharpening/lemma1_rescaling --profile smoke --student --solution --output nb/
    attnflow export sharpening/lemma1_rescaling --from _build/jupyter_execute/book/sharpening/lemma1_rescaling.ipynb

Without ``--from`` the page is executed first through the runner (``--profile``/``-p`` as for
``attnflow run``). Writes ``PAGE.ipynb`` (the portable executed notebook, :mod:`attnflow.export`)
and, for a page with exercises, ``PAGE.student.ipynb`` / ``PAGE.solution.ipynb`` on request.

This module is also the console entry point (``pyproject.toml``): ``export`` is handled here and
every other command goes to :func:`attnflow.cli.main`, after :func:`prepare_installed` made an
installed package (no checkout) find its packaged book and data.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
from pathlib import Path

__all__ = ["main", "export_main", "export_page", "prepare_installed"]


def prepare_installed() -> Path | None:
    """Outside a checkout: stand-in data and cache from :func:`attnflow.resources.activate`, and
    the runner's book root falling back to the packaged book (older runners). Returns the
    packaged root when that is the book in use (run outputs must then not go into it)."""
    from attnflow import resources, runner

    if resources.checkout_root() is not None:
        return None
    resources.activate()
    packaged = resources.packaged_root()
    try:
        root = runner.book_root()
    except Exception:
        if packaged is None:
            return None
        runner.book_root = resources.book_root  # type: ignore[assignment]
        root = packaged
    return root if packaged is not None and Path(root).resolve() == packaged.resolve() else None


def _check_source(source: str | Path, page_path: Path, key: str):
    """``--from``: an existing notebook of this page (its title is the page's), read before anything
    runs or is written."""
    import jupytext
    import nbformat

    from attnflow.runner import RunError

    src = Path(source)
    if not src.is_file():
        raise RunError(f"--from {src}: {'a folder, not a notebook' if src.is_dir() else 'no such file'}")
    try:
        nb = nbformat.read(src, as_version=4)
    except Exception as e:  # nbformat raises JSON, validation and Unicode errors of several kinds
        raise RunError(f"--from {src} is not a Jupyter notebook ({type(e).__name__})") from None

    def title(cells) -> str:
        md = next((c.source for c in cells if c.cell_type == "markdown" and c.source.strip()), "")
        return md.strip().splitlines()[0] if md.strip() else ""

    mine, theirs = title(jupytext.read(page_path).cells), title(nb.cells)
    if mine != theirs:
        raise RunError(f"--from {src} is not a notebook of {key}: its title is {theirs!r}, the page's {mine!r}")
    return src


def export_page(
    page: str,
    output: str | Path = ".",
    *,
    source: str | Path | None = None,
    profile: str | None = None,
    parameters: dict | None = None,
    student: bool = False,
    solution: bool = False,
    base_url: str | None = None,
    install_spec: str | None = None,
) -> list[Path]:
    """Export one page (see the module docstring); returns the files written.

    Everything that can be checked is checked before the page runs: the page, ``--from`` (a
    notebook of this page) and the output folder (created and test-written). The notebooks are
    written into a temporary folder inside the output folder and renamed into place together at
    the end, so a full disk or a signal leaves the folder as it was."""
    import nbformat

    from attnflow import exercises, export, runner
    from attnflow.runner.output import prepare_output, remove_created

    root = runner.book_root()
    key, path = runner.resolve_page(page, root)
    if source is not None:
        source = _check_source(source, path, key)
    out_dir = Path(os.path.abspath(Path(output).expanduser()))
    stem = path.stem
    names = [f"{stem}.ipynb", f"{stem}.solution.ipynb", f"{stem}.student.ipynb"]
    stage, created = prepare_output(out_dir, names)
    written: list[Path] = []
    try:
        with runner.signals_raise():
            if source is None:
                res = runner.run_page(
                    key, profile=profile, parameters=parameters or {}, output=stage / "run", root=root
                )
                source = res.notebook
            portable = export.export_file(
                source,
                stage / names[0],
                root=root,
                doc=f"book/{key}",
                base_url=base_url,
                install_spec=install_spec,
            )
            staged = [portable]
            nb = nbformat.read(portable, as_version=4)
            for p in export.exported_problems(nb):
                print(f"attnflow export: warning: {p}", file=sys.stderr)
            if (student or solution) and not exercises.has_exercises(nb):
                print(f"attnflow export: {key} has no exercise cells; no student/solution versions", file=sys.stderr)
            elif student or solution:
                if solution:
                    staged.append(stage / names[1])
                    nbformat.write(exercises.solution_notebook(nb, key), staged[-1])
                if student:
                    staged.append(stage / names[2])
                    nbformat.write(exercises.student_notebook(nb, key), staged[-1])
            for f in staged:
                os.replace(f, out_dir / f.name)
                written.append(out_dir / f.name)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
        if not written:
            remove_created(created)
    return written


def export_main(argv: list[str]) -> int:
    from attnflow.runner import Interrupted, PageFailed, RunError, parse_assignments

    ap = argparse.ArgumentParser(
        prog="attnflow export",
        description="Export a page as a portable notebook "
        "(numbers written into the prose, no MyST), optionally its exercise versions.",
    )
    ap.add_argument("page", help="page key, e.g. sharpening/lemma1_rescaling")
    ap.add_argument(
        "--from",
        dest="source",
        default=None,
        help="an executed notebook of the page (skip running it), e.g. from _build/jupyter_execute",
    )
    ap.add_argument("--profile", default=None, help="book (page defaults), smoke or paper")
    ap.add_argument("-p", "--param", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--student", action="store_true", help="also write PAGE.student.ipynb (solutions stubbed)")
    ap.add_argument("--solution", action="store_true", help="also write PAGE.solution.ipynb (nbgrader metadata)")
    ap.add_argument("--output", default=".", help="folder for the notebooks (default: current folder)")
    ap.add_argument("--base-url", default=None, help="URL of the published book, for cross-reference links")
    ap.add_argument(
        "--install-spec",
        default=None,
        help="what the set-up cell pip-installs outside a checkout (default attnflow==VERSION)",
    )
    args = ap.parse_args(argv)
    try:
        files = export_page(
            args.page,
            args.output,
            source=args.source,
            profile=args.profile,
            parameters=parse_assignments(args.param),
            student=args.student,
            solution=args.solution,
            base_url=args.base_url,
            install_spec=args.install_spec,
        )
    except RunError as e:
        print(f"attnflow export: error: {e}", file=sys.stderr)
        return 2
    except PageFailed as e:
        print(f"attnflow export: page failed: {e}", file=sys.stderr)
        return 1
    except Interrupted as e:
        name = signal.Signals(e.signum).name
        print(f"attnflow export: interrupted by {name}; nothing was written to {args.output}", file=sys.stderr)
        return e.exit_code
    except OSError as e:  # the disk filled up, the folder went away while the page ran
        print(
            f"attnflow export: cannot write into {args.output} ({e.strerror or e}); nothing was kept", file=sys.stderr
        )
        return 1
    for f in files:
        print(f)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "export":
        prepare_installed()
        return export_main(argv[1:])
    # No --output here: the runner's own default (runner.output.output_folder) is already in the
    # current folder, never in site-packages: runs/<page with / as __> for the book defaults,
    # runs/<page>-<8-hex hash of the profile's and -p values> otherwise, so variants do not
    # overwrite each other (it once named the folder after the first non-option word here).
    prepare_installed()
    from attnflow import cli

    if argv in (["-h"], ["--help"]):
        print("attnflow export PAGE [--student] [--solution] [--from NB] [--output DIR]   portable notebooks")
    return cli.main(argv)


if __name__ == "__main__":
    sys.exit(main())
