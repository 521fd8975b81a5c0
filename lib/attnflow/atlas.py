"""Where the claims hold: the atlas of random sweeps of the theory pages (issue 13).

    python -m attnflow.atlas --draws 20 --workers 2                 # regenerate data/atlas/ locally
    python -m attnflow.atlas --draws 20 --scheduler tcp://HOST:8786  # the same on a Dask cluster

runs ``attnflow.parallel.sweep`` over ``book/sweeps.yml``'s space of every theory page (smoke
profile, ``--draws`` random valid points each) and writes one tidy table ``data/atlas/atlas.parquet``
plus ``data/atlas/provenance.json`` (commit, profile, seeds, date, command, library hash). The
atlas page reads only those committed files: :func:`atlas_report` derives per-claim rates of pass /
outside domain / fail, per-point outcomes and figures of where in parameter space claims fail.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Sequence

__all__ = ["THEORY_PAGES", "AtlasReport", "atlas_report", "point_outcomes", "claim_rates", "regenerate"]

THEORY_PAGES = (
    "sharpening/lemma1_rescaling",
    "sharpening/scalar_reduction",
    "sharpening/line_theorem",
    "sharpening/growth_rates",
    "sharpening/sharpening_mechanism",
    "focus_dilution/condensation",
    "focus_dilution/unigram_saddle",
    "focus_dilution/focus",
    "focus_dilution/dilution",
    "focus_dilution/escape",
)
OUTCOMES = ("all pass", "some outside domain", "not reproduced", "failed", "page error")
OUTCOME_COLORS = {
    "all pass": "#4c9a2a",
    "some outside domain": "#9aa5b1",
    "not reproduced": "#e0a03a",
    "failed": "#c0392b",
    "page error": "#5b2c6f",
}
# Column heads of the page table (narrow enough for the book's column; the legend of the figures
# and the page's prose use the long names).
SHORT = {
    "all pass": "pass",
    "some outside domain": "outside",
    "not reproduced": "≠",
    "failed": "failed",
    "page error": "error",
}
# The two parameters shown against each other per paper (both are in every page's sweep space of that paper).
AXES = {"sharpening": ("a0", "b0"), "focus_dilution": ("a_h", "b_h")}


def default_dir(root: Path | None = None) -> Path:
    from attnflow import runner

    return (root or runner.book_root()) / "data" / "atlas"


def point_outcomes(table):
    """One row per point: page, key, outcome (OUTCOMES), counts of each verdict, and the p_* columns."""
    import pandas as pd

    rows = []
    for key, g in table.groupby("key", sort=False):
        v = g["verdict"].dropna()
        status = g["status"].iloc[0]
        if status in ("error", "crashed", "refused") and (v == "fail").sum() == 0:
            outcome = "page error"
        elif (v == "fail").any() or status in ("error", "crashed"):
            outcome = "failed"
        elif (v == "disagrees").any():
            outcome = "not reproduced"
        elif (v == "outside").any():
            outcome = "some outside domain"
        else:
            outcome = "all pass"
        row = dict(
            key=key,
            page=g["page"].iloc[0],
            outcome=outcome,
            status=status,
            wall_s=float(g["wall_s"].iloc[0]),
            error=g["error"].iloc[0] or "",
            n_pass=int((v == "pass").sum()),
            n_outside=int((v == "outside").sum()),
            n_fail=int((v == "fail").sum()),
            n_disagrees=int((v == "disagrees").sum()),
        )
        row.update({c: g[c].iloc[0] for c in g.columns if c.startswith("p_")})
        rows.append(row)
    return pd.DataFrame(rows)


def claim_rates(table):
    """Per page and claim id: the number of checks and the fraction pass / outside / fail / disagrees."""
    v = table.dropna(subset=["verdict"])
    counts = v.groupby(["page", "claim", "verdict"]).size().unstack(fill_value=0)
    for col in ("pass", "outside", "fail", "disagrees"):
        if col not in counts:
            counts[col] = 0
    counts = counts[["pass", "outside", "fail", "disagrees"]]
    total = counts.sum(axis=1)
    rates = counts.div(total, axis=0)
    rates["checks"] = total
    return rates.reset_index()


TABLES = ("provenance", "points", "rates")  # the AtlasReport fields that are not glued


@dataclass
class AtlasReport:
    """The atlas of one committed sweep (numbers glued into the atlas page)."""

    provenance: dict
    points: object = field(repr=False)  # pandas DataFrame, one row per point
    rates: object = field(repr=False)  # pandas DataFrame, one row per (page, claim)
    n_points: int = 0
    n_pages: int = 0
    min_draws: int = 0
    frac_clean: float = float("nan")  # points whose every claim passed or was outside its domain
    frac_clean_lo: float = float("nan")  # its 95% Wilson interval
    frac_clean_hi: float = float("nan")
    n_failed_points: int = 0
    n_error_points: int = 0
    commit: str = ""
    date: str = ""
    profile: str = ""

    def glue(self) -> dict:
        """Glue every scalar field (the numbers of the page's prose) under its own name; returns them."""
        from attnflow import display

        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values = {k: v.item() if hasattr(v, "item") else v for k, v in values.items() if k not in TABLES}
        display.glue(**values)
        return values

    def page_table(self):
        """Per page: points, outcome counts (pass / some outside domain / not reproduced / failed / page
        error), median wall time in seconds and the commit the page ran at."""
        from attnflow import display

        rows = []
        for page, g in self.points.groupby("page", sort=False):
            counts = g["outcome"].value_counts()
            run = self.provenance.get("per_page", {}).get(page, {})
            rows.append(
                {
                    "page": page.split("/", 1)[1].replace("_", " "),
                    "points": len(g),
                    **{SHORT[o]: int(counts.get(o, 0)) for o in OUTCOMES},
                    "s": float(g["wall_s"].median()),
                    "commit": str(run.get("commit", ""))[:7],
                }
            )
        return display.table(rows, floatfmt="{:.0f}")

    def failing_claims(self):
        """The claims that failed at least once, with their rates (empty table when none)."""
        from attnflow import display

        bad = self.rates[(self.rates["fail"] > 0) | (self.rates["disagrees"] > 0)]
        rows = [
            {
                "page": r["page"],
                "claim": r["claim"],
                "checks": int(r["checks"]),
                "pass": r["pass"],
                "outside": r["outside"],
                "fail": r["fail"],
                "not reproduced": r["disagrees"],
            }
            for _, r in bad.iterrows()
        ]
        return display.table(rows or [{"page": "—", "claim": "no claim failed", "checks": 0}], floatfmt="{:.2f}")

    def figures(self) -> list:
        """Per paper: the two parameters of AXES against each other, one marker per point, coloured by outcome."""
        from attnflow import plotting

        figs = []
        for paper, (x, y) in AXES.items():
            pts = self.points[self.points["page"].str.startswith(paper + "/")]
            if pts.empty or f"p_{x}" not in pts or f"p_{y}" not in pts:
                continue
            pages = [
                p
                for p in dict.fromkeys(pts["page"])  # pages whose space holds both parameters
                if pts.loc[pts["page"] == p, [f"p_{x}", f"p_{y}"]].notna().all(axis=None)
            ]
            if not pages:
                continue
            ncols = min(3, len(pages))  # ≤ 3 panels per row (readable size)
            nrows = -(-len(pages) // ncols)
            fig, grid = plotting.subplots(nrows, ncols, width=3.2, height=2.8, squeeze=False)
            flat = list(grid.ravel())
            for ax in flat[len(pages) :]:
                ax.set_visible(False)
            axes = [flat[: len(pages)]]
            for ax, page in zip(axes[0], pages):
                g = pts[pts["page"] == page]
                for outcome in OUTCOMES:
                    h = g[g["outcome"] == outcome]
                    xs, ys = h[f"p_{x}"].astype(float), h[f"p_{y}"].astype(float)
                    ax.scatter(xs, ys, s=18, color=OUTCOME_COLORS[outcome], label=outcome, edgecolor="none")
                ax.set(title=page.split("/")[1].replace("_", " "), xlabel=x)
                if x in ("a0", "b0"):
                    from matplotlib.ticker import LogLocator, NullFormatter

                    ax.set_xscale("log")
                    ax.set_yscale("log")
                    for axis in (ax.xaxis, ax.yaxis):  # decades only: minor labels overlap
                        axis.set_major_locator(LogLocator(base=10, numticks=4))
                        axis.set_minor_formatter(NullFormatter())
            axes[0][0].set_ylabel(y)
            handles, labels = axes[0][0].get_legend_handles_labels()
            seen = {}
            for ax in axes[0]:
                for h, l in zip(*ax.get_legend_handles_labels()):
                    seen.setdefault(l, h)
            fig.legend(
                list(seen.values()),
                list(seen),
                loc="lower center",
                ncol=len(seen),
                frameon=False,
                bbox_to_anchor=(0.5, -0.08),
                fontsize="small",
            )
            fig.suptitle(f"{paper.replace('_', '–')}: outcome of each random point")
            figs.append(fig)
        return figs

    def check_claims(self) -> None:
        """The sweep's own health: every drawn point was accepted and ran to its end (no page error)."""
        from attnflow import claims, stats

        dom = claims.domain(stats.enough_seeds(self.n_points, 20))
        claims.check(
            "ATLAS1",
            self.n_error_points,
            0,
            atol=0,
            what="sweep points that raised or were refused although drawn from the schema",
            domain=dom,
        )


def atlas_report(directory: str | Path | None = None) -> AtlasReport:
    """Read the committed sweep table and derive the atlas."""
    import pandas as pd

    from attnflow import stats

    d = Path(directory) if directory else default_dir()
    table = pd.read_parquet(d / "atlas.parquet")
    prov = json.loads((d / "provenance.json").read_text(encoding="utf-8"))
    points = point_outcomes(table)
    clean = points["outcome"].isin(["all pass", "some outside domain"])
    fr = stats.fraction(clean.to_numpy()) if len(points) else None
    per_page = points.groupby("page").size()
    return AtlasReport(
        provenance=prov,
        points=points,
        rates=claim_rates(table),
        n_points=len(points),
        n_pages=int(per_page.size),
        min_draws=int(per_page.min()) if len(per_page) else 0,
        frac_clean=fr.value if fr else float("nan"),
        frac_clean_lo=fr.lo if fr else float("nan"),
        frac_clean_hi=fr.hi if fr else float("nan"),
        n_failed_points=int((points["outcome"] == "failed").sum()),
        n_error_points=int((points["outcome"] == "page error").sum()),
        commit=str(prov.get("commit", ""))[:10],
        date=str(prov.get("date", "")),
        profile=str(prov.get("profile", "")),
    )


def regenerate(
    pages: Sequence[str] = THEORY_PAGES,
    *,
    draws: int = 20,
    seed: int = 0,
    profile: str = "smoke",
    workers: int = 2,
    scheduler: str | None = None,
    output: Path | None = None,
    collect: bool = False,
) -> Path:
    """Run the sweeps of ``pages`` and rewrite ``atlas.parquet`` + ``provenance.json``.

    Resumable (part files per point). Each page keeps its own table (``sweeps/<page>/atlas-points.parquet``,
    only the points of this draw, never stale parts of an earlier library) and its own provenance
    (commit, library hash, date), so pages may be regenerated one at a time — after a change to one
    page's domains, say — and the atlas is the union of every theory page's latest run."""
    import pandas as pd

    from attnflow import parallel, resources, runner

    root = runner.book_root()
    out = Path(output) if output else default_dir(root)
    prov_path = out / "provenance.json"
    old = json.loads(prov_path.read_text(encoding="utf-8")) if prov_path.exists() else {}
    per_page = dict(old.get("per_page", {}))
    state = resources.git_state(root)
    commit = state[0] if state else ""
    command = "python -m attnflow.atlas " + " ".join(sys.argv[1:])
    for page in pages:
        folder = out / "sweeps" / page.replace("/", "__")
        points = parallel.draw_points(page, draws, seed=seed, profile=profile)
        _, path = runner.resolve_page(page, root)
        lib = parallel.library_hash(root)
        if collect and (folder / "sweep.json").exists():  # the library the interrupted sweep ran with
            lib = json.loads((folder / "sweep.json").read_text(encoding="utf-8"))["library"]
        keys = {parallel.point_key(path.read_bytes(), lib, profile, p) for p in points}
        if collect:  # no new runs: the points of this draw that are done (after an interrupted sweep)
            table = parallel.load_table(folder)
        else:
            table = parallel.sweep(page, points, profile=profile, output=folder, workers=workers, scheduler=scheduler)
        table = table[table["key"].isin(keys)]
        if table.empty:
            continue
        parallel.atomic_write(folder / "atlas-points.parquet", lambda tmp: table.to_parquet(tmp, index=False))
        per_page[page] = dict(
            commit=commit,
            library=lib,
            draws=int(table["key"].nunique()),
            seed=seed,
            profile=profile,
            date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            command=command,
        )
    order = [p for p in THEORY_PAGES if p in per_page] + [p for p in per_page if p not in THEORY_PAGES]
    frames = [
        pd.read_parquet(out / "sweeps" / p.replace("/", "__") / "atlas-points.parquet")
        for p in order
        if (out / "sweeps" / p.replace("/", "__") / "atlas-points.parquet").exists()
    ]
    table = pd.concat(frames, ignore_index=True)
    table = table.astype({c: "object" for c in table.columns if c.startswith("p_")})
    for c in [c for c in table.columns if c.startswith("p_")]:
        table[c] = table[c].map(lambda v: json.dumps(v) if isinstance(v, (list, tuple, dict)) else v).astype(str)
    out.mkdir(parents=True, exist_ok=True)
    parallel.atomic_write(out / "atlas.parquet", lambda tmp: table.to_parquet(tmp, index=False))
    commits = sorted({v["commit"] for v in per_page.values()})
    prov = dict(
        commit=commit if len(commits) <= 1 else ", ".join(c[:10] for c in commits),
        profile=profile,
        draws=min(v["draws"] for v in per_page.values()),
        seed=seed,
        pages=order,
        date=max(v["date"] for v in per_page.values()),
        command=command,
        per_page=per_page,
    )
    parallel.atomic_write(prov_path, lambda tmp: tmp.write_text(json.dumps(prov, indent=1), encoding="utf-8"))
    return out


def check_arguments(a) -> None:
    """Every atlas argument, before any work (RunError naming the argument and what is allowed):
    draws, workers, profile, pages (a theory page, or any page with a sweep space), the scheduler
    (it answers, is Dask, has a worker), the output folder and ATTNFLOW_MAX_SECONDS."""
    from attnflow import parallel, runner

    parallel.check_points(a.draws, "--draws")
    parallel.check_workers(a.workers, "--workers")
    if not isinstance(a.seed, int) or not 0 <= a.seed < 2**63:
        raise runner.RunError(f"--seed {a.seed}: allowed: an integer from 0 to 2**63 - 1")
    parallel.check_environment()
    root = runner.book_root()
    for page in a.pages:
        key, _ = runner.resolve_page(page, root)
        parallel.load_space(key, root)
    if a.profile != "book":
        for page in a.pages or THEORY_PAGES:
            runner.load_profile(a.profile, runner.resolve_page(page, root)[0], root)
    if a.output is not None:
        out = Path(a.output)
        if out.exists() and not out.is_dir():
            raise runner.RunError(f"--output {out}: a file is in the way; allowed: a folder (created if absent)")
    if a.scheduler and not a.collect:
        parallel.probe_scheduler(a.scheduler)


def main(argv: Sequence[str] | None = None) -> int:
    """Exit 0 written; 2 bad arguments (one line, before any work); 1 a write failed; 130/143/129 a signal."""
    from attnflow import parallel, runner

    ap = argparse.ArgumentParser(prog="python -m attnflow.atlas", description="Regenerate the atlas sweep table.")
    ap.add_argument(
        "--draws",
        "--random",
        dest="draws",
        type=int,
        default=20,
        help=f"random points per page (1 to {parallel.MAX_POINTS})",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--profile", default="smoke")
    ap.add_argument("--workers", type=int, default=2, help=f"local worker processes (1 to {parallel.MAX_WORKERS})")
    ap.add_argument("--scheduler", default=None)
    ap.add_argument("--output", default=None)
    ap.add_argument(
        "--collect",
        action="store_true",
        help="run nothing: rebuild the table from the points already done (an interrupted sweep)",
    )
    ap.add_argument("pages", nargs="*", help="default: every theory page")
    a = ap.parse_args(argv)
    try:
        check_arguments(a)
        out = regenerate(
            a.pages or THEORY_PAGES,
            draws=a.draws,
            seed=a.seed,
            profile=a.profile,
            workers=a.workers,
            scheduler=a.scheduler,
            output=Path(a.output) if a.output else None,
            collect=a.collect,
        )
    except runner.RunError as e:
        print(f"atlas: error: {e}", file=sys.stderr)
        return 2
    except runner.Interrupted as e:  # a sweep's SweepInterrupted says what it kept
        print(
            f"atlas: {e}"
            if str(e) != str(e.signum)
            else f"atlas: interrupted by {e.name}; finished points are kept, re-run the same command to resume",
            file=sys.stderr,
        )
        return e.exit_code
    except KeyboardInterrupt:
        print("atlas: interrupted; finished points are kept, re-run the same command to resume", file=sys.stderr)
        return 130
    except OSError as e:
        print(
            f"atlas: error: {e.strerror or e} ({getattr(e, 'filename', None) or 'the atlas folder'}); finished "
            "points are kept, re-run the same command to resume",
            file=sys.stderr,
        )
        return 1
    print(f"atlas: {out / 'atlas.parquet'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())


def _schema():
    from attnflow.params import Param, Schema

    return Schema(
        "atlas",
        atlas_dir=Param(
            str,
            doc="folder of the committed sweep table (atlas.parquet, provenance.json), relative to the page's folder",
        ),
    )


ATLAS_SCHEMA = _schema()
