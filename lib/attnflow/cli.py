"""Command line: ``attnflow run PAGE [--profile NAME] [-p key=value ...] [--device D] [--output DIR]``,
``attnflow pages`` (list pages and their parameters), ``attnflow params PAGE`` (a page's parameters: types,
ranges, defaults and the profiles' overrides), ``attnflow sweep PAGE (--grid k=v1,v2 | --random N)``
(many points on Dask, :mod:`attnflow.cli_sweep`).

Exit status: 0 every claim passed (or is outside its domain, or documented in the errata);
1 the page raised, a claim failed, a cell timed out or the results could not be saved (the
executed notebook is kept); 2 bad input (nothing is written); 128 + N on signal N (130 Ctrl-C,
143 SIGTERM, 129 SIGHUP). Every error is one line on stderr starting with ``attnflow run:``.
"""

from __future__ import annotations

import argparse
import os
import sys

from attnflow import cli_sweep
from attnflow.runner import Interrupted, PageFailed, RunError, list_pages, parse_assignments, run_page


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="attnflow", description="Run pages of the attnflow book.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="execute one page through papermill with new parameters")
    r.add_argument("page", help="page key, e.g. sharpening/lemma1_rescaling, or its .py path")
    r.add_argument("--profile", default=None, help="book (page defaults), smoke or paper")
    r.add_argument(
        "-p",
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a parameter (Python literal, e.g. -p lr_ratio=3 -p models=\"['FAFO']\")",
    )
    r.add_argument(
        "--device",
        default=None,
        metavar="DEVICE",
        help="auto, cpu or cuda: sets the page's `device` parameter (-p device=...); a page without one "
        "runs on the CPU only and accepts only cpu or auto",
    )
    r.add_argument(
        "--output",
        default=None,
        help="folder for the executed notebook and claims (default ./runs/PAGE, "
        "./runs/PAGE-HASH with -p/--profile values)",
    )
    r.add_argument("--timeout", type=int, default=1800, help="per-cell time limit in seconds (default 1800)")
    r.add_argument("--quiet", action="store_true", help="no progress lines while the page runs")
    r.add_argument(
        "--force",
        action="store_true",
        help="run even when the page's cost estimate is above the limit (ATTNFLOW_FORCE=1)",
    )
    sub.add_parser("pages", help="list the pages of the book")
    pp = sub.add_parser("params", help="a page's parameters: types, ranges, defaults and profile overrides")
    pp.add_argument("page", help="page key, e.g. sharpening/lemma1_rescaling, or its .py path")
    cli_sweep.add_parser(sub)  # attnflow sweep PAGE (--grid ... | --random N): many points on Dask
    return ap


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.cmd == "sweep":
        return cli_sweep.run(args)
    if args.cmd == "pages":
        try:
            print("\n".join(list_pages()))
        except (RunError, OSError) as e:
            print(f"attnflow pages: error: {e}", file=sys.stderr)
            return 2
        return 0
    if args.cmd == "params":
        try:
            print(describe_page(args.page))
        except (RunError, OSError) as e:
            first = str(e).splitlines()[0] if str(e) else type(e).__name__
            if first.endswith("; pages are:"):
                first = first[: -len("; pages are:")] + " (attnflow pages lists the pages)"
            print(f"attnflow params: error: {first}", file=sys.stderr)
            return 2
        return 0
    return _run(args)


def page_schema(page: str, root=None):
    """(key, schema, defaults) of a page: its parameters cell and validation cell run in a scratch
    namespace as in the runner's pre-validation (nothing is written); the schema is the
    ``params.Schema`` the validation cell leaves, the defaults are the parameters cell's values."""
    import jupytext

    from attnflow import claims, params
    from attnflow.runner import book_root, resolve_page
    from attnflow.runner.checks import code_cells, cwd, env, parameter_names

    root = root or book_root()
    key, path = resolve_page(page, root)
    try:
        nb = jupytext.read(path)
    except (OSError, ValueError) as err:
        raise RunError(f"cannot read the page {path}: {err}") from None
    names = parameter_names(nb)
    cells = code_cells(nb)
    ns: dict = {"__name__": "__attnflow_params__"}
    saved = dict(claims._state)
    try:
        with env(ATTNFLOW_CLAIMS_DIR=None), cwd(path.parent):
            exec(compile(cells[0].source, "<parameters cell>", "exec"), ns)
            defaults = {n: ns[n] for n in names if n in ns}
            try:
                exec(compile(cells[1].source, "<validation cell>", "exec"), ns)
            except params.ParameterError as e:
                raise RunError(f"the page's defaults do not validate: {e}") from None
    finally:
        claims._state.clear()
        claims._state.update(saved)
    schemas = [v for v in ns.values() if isinstance(v, params.Schema)]
    schema = next((s for s in reversed(schemas) if s.key == key), schemas[-1] if schemas else None)
    if schema is None:
        raise RunError(f"the validation cell of {key} defines no params.Schema")
    return key, schema, defaults


def describe_page(page: str, root=None) -> str:
    """The text of ``attnflow params PAGE``: per parameter its type, allowed values and meaning
    (``Schema.describe``), its default and each profile's override."""
    import yaml

    from attnflow.runner import book_root

    root = root or book_root()
    key, schema, defaults = page_schema(page, root)
    try:
        profiles = yaml.safe_load((root / "book" / "profiles.yml").read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        profiles = {}
    overrides = {name: dict((p or {}).get(key) or {}) for name, p in profiles.items()}
    lines = [f"{key}: {len(schema.params)} parameters (attnflow run {key} -p NAME=VALUE)"]
    for (n, p), text in zip(schema.params.items(), schema.describe().split("\n")):
        typ = p.type.__name__ + (f" of {p.item.__name__}" if p.type in (list, tuple) and p.item else "")
        lines.append(f"{text}")
        extra = [f"type {typ}", f"default {defaults.get(n, '(not set)')!r}"]
        extra += [f"{name} {o[n]!r}" for name, o in overrides.items() if n in o]
        lines.append("      " + "; ".join(extra))
    for name, o in overrides.items():
        lines.append(f"profile {name}: " + (", ".join(f"{k}={v!r}" for k, v in o.items()) or "(book defaults)"))
    return "\n".join(lines)


def device_parameters(
    page: str, device: str | None, parameters: dict | None = None, root=None, *, check_cuda: bool = True
) -> dict:
    """``parameters`` with the page's ``device`` parameter set to ``device`` (``--device``); ``None``
    leaves them as they are. The value itself is checked by the page's own schema (the runner's
    pre-validation), and ``cuda`` where torch sees no CUDA device is refused here, before any kernel
    starts (the cause named by :func:`attnflow.device.resolve`). A page whose parameters cell sets no
    ``device`` runs on the CPU only: ``cpu`` and ``auto`` leave it as it is, any other value is a
    RunError naming the page. ``check_cuda=False`` skips the CUDA check (a dry run planned elsewhere)."""
    import jupytext

    from attnflow.runner import book_root, resolve_page
    from attnflow.runner.checks import parameter_names

    out = dict(parameters or {})
    if device is None:
        return out
    root = root or book_root()
    key, path = resolve_page(page, root)
    try:
        names = parameter_names(jupytext.read(path))
    except (OSError, ValueError) as err:
        raise RunError(f"cannot read the page {path}: {err}") from None
    if "device" not in names:
        if device in ("cpu", "auto"):
            return out
        raise RunError(
            f"page {key!r} has no device parameter: it runs on the CPU only; drop --device {device} or use --device cpu"
        )
    if "device" in out and out["device"] != device:
        raise RunError(f"--device {device} and -p device={out['device']!r} disagree; give one of them")
    out["device"] = device
    if device == "cuda" and check_cuda:
        from attnflow import device as devices

        try:
            devices.resolve("cuda")
        except RuntimeError as err:
            raise RunError(f"page {key!r}: {err}") from None
    return out


def _run(args) -> int:
    try:
        res = run_page(
            args.page,
            profile=args.profile,
            parameters=device_parameters(args.page, args.device, parse_assignments(args.param)),
            output=args.output,
            timeout=args.timeout,
            quiet=args.quiet,
            force=args.force,
        )
    except RunError as e:
        print(f"attnflow run: error: {e}", file=sys.stderr)
        return 2
    except PageFailed as e:
        print(f"attnflow run: page failed: {e}", file=sys.stderr)
        return 1
    except Interrupted as e:
        print(f"attnflow run: interrupted by {e.name}; the kernel was stopped and no files were left", file=sys.stderr)
        return e.exit_code
    except OSError as e:
        print(f"attnflow run: error: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001 - a bug of the runner: one line, the traceback on request
        if os.environ.get("ATTNFLOW_DEBUG") == "1":
            raise
        print(
            f"attnflow run: internal error: {type(e).__name__}: {e} (ATTNFLOW_DEBUG=1 shows the traceback)",
            file=sys.stderr,
        )
        return 1
    print(res.summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
