"""What the three sharpening real-data pages share (SQuAD, HateXplain, SVA; claims A6, A9–A11):
the data table, the glued numbers (``report``), the figures (``plot_metrics``, ``plot_dtap``)
and the checks of the paper's statements (``check_claims``), for an
:class:`attnflow.sharpening.realdata.RealExperiment`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from attnflow.data import ClassificationSet
from attnflow.params import ParameterError
from attnflow.sharpening import contracts, targets
from attnflow.sharpening.realdata import TITLES, RealExperiment

__all__ = [
    "data_table",
    "report",
    "plot_metrics",
    "plot_dtap",
    "check_claims",
    "OPTIMIZERS",
    "RealPage",
    "PAGES",
    "AC_RISE",
    "ERRATA",
]

OPTIMIZERS = contracts.REAL_OPTIMIZERS  # glue and table order of the optimizers
GLUED = {
    "entropy": "ent",
    "ac": "ac",
    "acmc": "acmc",
    "accuracy": "acc",
    "attn_relevant": "rel",
    "sufficiency": "suff",
    "comprehensiveness": "comp",
}  # metric -> short name of its glue keys
CLAIM_PARTS = {
    "A9": ("entropy", "ac", "accuracy", "eraser"),  # SQuAD: AC and accuracy (A9)
    "A10": ("entropy", "ac", "acmc", "accuracy", "eraser"),
}  # HateXplain, SVA: AC, ACMC, accuracy

# The smallest AC (and ACMC) change counted as a rise, fixed before the runs: a sixth of the paper's
# SQuAD rise (targets.SQUAD_AC: 0.12 → 0.43, a rise of 0.31), about twice the sampling error of a
# paired AC difference on a few hundred test examples. AC sizes on the stand-ins are not comparable
# with the paper's (Q3, Q5), so only the direction is tested.
AC_RISE = 0.05
ERRATA = "errata-sharpening-real-data"  # the errata entry every real-data check links to


@dataclass(frozen=True)
class RealPage:
    """What one dataset page checks and how its figures name the data."""

    claim: str  # the paper's claim for the dataset: A9 (SQuAD) or A10 (HateXplain, SVA)
    accuracy_atol: float  # equivalence band of the paired accuracy change: ~2 standard errors of it
    relevant: str  # the relevant tokens (DTAP axis)
    unit: str  # one test example (DTAP colour)
    rise: float = AC_RISE
    errata: str = ERRATA


PAGES = {  # dataset name -> its page; accuracy bands: two standard errors of a paired accuracy difference
    "squad": RealPage("A9", 0.04, "the answer span", "questions"),  # near 0.15 on the test questions
    "hatexplain": RealPage("A10", 0.05, "the rationale", "sentences"),  # near 0.5 on the test sentences
    "sva": RealPage("A10", 0.05, "the subject noun", "prefixes"),  # near 0.5 on the test prefixes
}


def data_table(ds: ClassificationSet):
    """Sizes, label balance and relevant-token share of every split (the page's data section)."""
    from attnflow import display

    return display.table(
        [
            {"split": s, **{k: v for k, v in row.items() if k != "labels"}, **row.get("labels", {})}
            for s, row in ds.summary().items()
        ],
        floatfmt="{:.3f}",
    )


def _signed(x) -> str:
    return "[" + ", ".join(f"{v:+.3f}" for v in x) + "]"


def _seed_mean(m: Mapping[str, np.ndarray], key: str, r: float, tau_index: int | None = None) -> float:
    values = m[key] if tau_index is None else m[key][tau_index]  # (P,); sweeps are (n_tau, P)
    return float(values[m["lr_ratio"] == r].mean())


def report(ex: RealExperiment):
    """Print each run's size and the paired per-seed changes r = 1 → r_max, glue the numbers that
    the page and the errata page cite, and return the results table (one row per optimizer and r).

    Glue keys: ``n_train_used``, ``n_test_used``, ``r_max``, ``tau`` (τ_a), ``tau_hi`` (largest τ_a
    of the sweep); per optimizer o of ``OPTIMIZERS`` the seed means ``{ent, ac, acmc, acc, rel, suff,
    comp}_o_{r1, rmax}``, AC at ``tau_hi`` as ``achi_o_{r1, rmax}`` and the per-seed AC changes
    ``dac_o`` — nan / "n/a" for an optimizer that did not run, so that the prose always resolves."""
    from attnflow import display

    r_max, first = ex.r_max, next(iter(ex.metrics.values()))
    for opt, result in ex.runs.items():
        ratios, loss = np.asarray(result.lr_ratios), np.asarray(result.record.loss_final)  # (P,), (P,)
        final = ", ".join(f"r = {r:g}: {loss[ratios == r].mean():.3f}" for r in sorted(set(result.lr_ratios)))
        print(
            f"{opt}: {len(ratios)} models, {result.record.steps_run} steps, {result.record.wall_s:.1f} s; "
            f"final training loss (seed mean) {final}"
        )
    ac_1, ac_fast = targets.SQUAD_AC
    page = PAGES.get(ex.dataset.name)
    for name, value in [
        ("n_train_used", len(ex.train)),
        ("n_test_used", len(ex.test)),
        ("r_max", r_max),
        ("tau", first["tau_attn"]),
        ("tau_hi", float(max(first["tau_attns"]))),
        ("paper_ac_r1", ac_1),
        ("paper_ac_fast", ac_fast),
        ("paper_ac_rise", ac_fast - ac_1),
        ("rise", AC_RISE),
        ("acc_atol", float("nan") if page is None else page.accuracy_atol),
    ]:
        display.number(name, value)
    for opt in OPTIMIZERS:
        m = ex.metrics.get(opt)
        for r, tag in ((1.0, "r1"), (r_max, "rmax")):
            for key, short in GLUED.items():
                display.number(f"{short}_{opt}_{tag}", float("nan") if m is None else _seed_mean(m, key, r))
            display.number(
                f"achi_{opt}_{tag}",
                float("nan") if m is None else _seed_mean(m, "ac_sweep", r, int(np.argmax(m["tau_attns"]))),
            )
        display.number(f"dac_{opt}", "n/a" if m is None else _signed(ex.change(opt, "ac", r_max)))
        if m is not None:
            print(
                f"{opt}, paired change r = 1 → {r_max:g} per seed: "
                + "; ".join(f"{key} {_signed(ex.change(opt, key, r_max))}" for key in GLUED if key != "attn_relevant")
            )
    return display.table(ex.rows(), floatfmt="{:.3f}")


def plot_metrics(ex: RealExperiment):
    """AC and ACMC over the threshold τ_a (Q3), attention entropy and accuracy over r: seed means
    (lines; AdamW solid, SGD dashed) and single seeds (dots)."""
    from attnflow import plotting

    ratios = sorted({float(r) for m in ex.metrics.values() for r in m["lr_ratio"]})
    colors = dict(zip(ratios, plotting.PALETTE))
    fig, grid = plotting.subplots(2, 2, width=4.0, height=2.9)
    axes = grid.reshape(1, 4)  # panels in reading order
    for opt, m in ex.metrics.items():
        ls = "-" if opt == "adamw" else "--"
        for r in ratios:
            sel = m["lr_ratio"] == r
            axes[0, 0].plot(
                m["tau_attns"],
                m["ac_sweep"][:, sel].mean(1),
                ls,
                marker="o",
                color=colors[r],
                label=f"{opt}, r = {r:g}",
            )
            axes[0, 1].plot(m["tau_attns"], m["acmc_sweep"][:, sel].mean(1), ls, marker="o", color=colors[r])
        for ax, key in zip(axes[0, 2:], ["entropy", "accuracy"]):
            ax.plot(ratios, [_seed_mean(m, key, r) for r in ratios], ls, marker="o", color="0.3", label=opt)
            for r in ratios:
                ax.scatter(
                    m["lr_ratio"][m["lr_ratio"] == r], m[key][m["lr_ratio"] == r], s=12, color=colors[r], zorder=3
                )
    tau_conf = next(iter(ex.metrics.values()))["tau_conf"]
    axes[0, 0].set(xlabel=r"$\tau_a$", ylabel="AC", title="AC over the threshold")
    axes[0, 1].set(xlabel=r"$\tau_a$", ylabel=f"ACMC (τ_c = {tau_conf:g})", title="ACMC over the threshold")
    axes[0, 2].set(xscale="log", xlabel=r"$r=\eta_{QK}/\eta_{OV}$", ylabel="nats", title="attention entropy")
    axes[0, 3].set(xscale="log", xlabel=r"$r=\eta_{QK}/\eta_{OV}$", ylabel="test accuracy", title="accuracy")
    axes[0, 0].legend(
        fontsize="x-small", handlelength=3.2, frameon=True, framealpha=0.9
    )  # long handles show the dashes
    axes[0, 2].legend(fontsize="small", handlelength=3.2, frameon=True, framealpha=0.9)
    real = "stand-in" if ex.dataset.standin else "real data"
    fig.suptitle(
        f"{TITLES.get(ex.dataset.name, ex.dataset.name)} ({real}): means over seeds (dots: single seeds)", y=1.03
    )
    return fig


def plot_dtap(ex: RealExperiment, relevant: str | None = None, unit: str | None = None):
    """DTAP heatmaps (spec §7.3) of the first optimizer and seed at r = 1 and r_max: x = attention on
    the ``relevant`` tokens, y = true-class probability, colour = fraction of test ``unit`` (both
    default to the dataset's :data:`PAGES` entry)."""
    from attnflow import plotting

    page = PAGES.get(ex.dataset.name)
    relevant = page.relevant if relevant is None else relevant
    unit = page.unit if unit is None else unit

    opt, m = next(iter(ex.metrics.items()))
    seed = int(m["seed"][0])
    fig, axes = plotting.subplots(1, 2, width=3.4, height=3.1)
    for ax, r in zip(axes[0], [1.0, ex.r_max]):
        model = np.flatnonzero((m["lr_ratio"] == r) & (m["seed"] == seed))[0]
        H, _, _ = np.histogram2d(m["conf_each"][model], m["attn_each"][model], bins=10, range=[[0, 1], [0, 1]])
        image = ax.imshow(H / max(H.sum(), 1), origin="lower", extent=[0, 1, 0, 1], cmap="viridis", vmin=0)
        ax.grid(False)
        ax.set(xlabel=f"attention on {relevant}", ylabel="true-class probability", title=f"{opt}, r = {r:g}")
    fig.colorbar(image, ax=axes[0, -1], label=f"fraction of test {unit}")
    fig.suptitle(f"DTAP heatmaps, seed {seed}", y=1.03)
    return fig


def check_claims(
    ex: RealExperiment,
    claim: str | None = None,
    *,
    rise: float | None = None,
    accuracy_atol: float | None = None,
    errata: str | None = None,
    level: float = 0.95,
) -> dict[tuple[str, str], bool | None]:
    """Check the paper's real-data statements on every optimizer that ran, on the paired change
    from r = 1 to r_max (same seed, same data and minibatches, only r differs). Every part is a
    statement of the paper checked on the **mean over seeds with its Student-t interval**
    (``claims.check_mean(..., real_data=True)``, ``level``), with one of three verdicts: "pass"
    (reproduced: the interval is on the paper's side), "contradicted" (the whole interval is on
    the other side) or "inconclusive" (it straddles; the record gives the seeds that would decide).

    - ``entropy`` (claim A6): the interval of the entropy change lies below 0 (sharper attention);
    - ``ac`` (``claim``, A9 or A10): the interval of the AC change at τ_a lies above ``rise``;
    - ``acmc`` (A10 only): the interval of the ACMC change at (τ_a, τ_c) lies above ``rise``;
    - ``accuracy`` (A9, A10): the whole interval of the accuracy change lies within
      ±``accuracy_atol`` (an equivalence test: "unchanged" is supported only when the seeds rule
      out a change larger than the band; contradicted when the whole interval is outside it);
    - ``eraser`` (A11): the interval of the sufficiency change lies below 0 and that of the
      comprehensiveness change above 0 — ERASER's better directions, the spec's reading of
      "improve" (two records).

    Nothing is declared in advance as reproduced or not; every record carries the ``errata``
    label of the entry with the evidence. A non-finite measurement always fails the page. Domain
    of every part: at least 3 seeds (added by ``check_mean``), else "outside domain".
    ``claim``, ``rise``, ``accuracy_atol``, ``errata`` default to the dataset's :data:`PAGES` entry.
    Returns {(part, optimizer): the verdict string ("pass", "inconclusive", "contradicted",
    "outside" or "fail"; for ``eraser`` the worse of its two records)}."""
    page = PAGES.get(getattr(ex.dataset, "name", None))
    if page is not None:
        claim = page.claim if claim is None else claim
        rise = page.rise if rise is None else rise
        accuracy_atol = page.accuracy_atol if accuracy_atol is None else accuracy_atol
        errata = page.errata if errata is None else errata
    if rise is None or accuracy_atol is None:
        raise ParameterError("parameters 'rise' and 'accuracy_atol' are needed for a dataset without a page")
    if claim not in CLAIM_PARTS:
        raise ParameterError(f"parameter 'claim': received {claim!r}; allowed: {', '.join(CLAIM_PARTS)}")
    if not errata:
        raise ParameterError("parameter 'errata': the label of the errata entry of these paper claims is needed")

    parts = CLAIM_PARTS[claim]
    r_max, held = ex.r_max, {}
    for opt, m in ex.metrics.items():

        def change(key):
            return ex.change(opt, key, r_max)  # (n_seeds,) paired

        head = f"{ex.label} {opt}: "
        span = f"r = {r_max:g} minus r = 1"
        tau = f"τ_a = {m['tau_attn']:g}"
        common = dict(level=level, errata=errata, real_data=True)
        ac_1, ac_fast = targets.SQUAD_AC
        paper_ac = (
            f" (paper, SQuAD: AC {ac_1:.2f} → {ac_fast:.2f}, a rise of {ac_fast - ac_1:.2f})" if claim == "A9" else ""
        )
        checks = {
            "entropy": [("A6", change("entropy"), dict(below=0.0, source="paper", what=f"attention entropy, {span}"))],
            "ac": [
                (
                    claim,
                    change("ac"),
                    dict(
                        above=rise,
                        source="paper",
                        tolerance=f"a rise of at least {rise:g}{paper_ac}",
                        what=f"AC at {tau}, {span}",
                    ),
                )
            ],
            "acmc": [
                (
                    claim,
                    change("acmc"),
                    dict(
                        above=rise,
                        source="paper",
                        tolerance=f"a rise of at least {rise:g}",
                        what=f"ACMC at {tau}, τ_c = {m['tau_conf']:g}, {span}",
                    ),
                )
            ],
            "accuracy": [
                (claim, change("accuracy"), dict(band=accuracy_atol, source="paper", what=f"test accuracy, {span}"))
            ],
            "eraser": [
                (
                    "A11",
                    change("sufficiency"),
                    dict(
                        below=0.0, source="paper + reconstruction", what=f"AOPC sufficiency (lower is better), {span}"
                    ),
                ),
                (
                    "A11",
                    change("comprehensiveness"),
                    dict(
                        above=0.0,
                        source="paper + reconstruction",
                        what=f"AOPC comprehensiveness (higher is better), {span}",
                    ),
                ),
            ],
        }
        for part in parts:
            results = []
            for claim_id, values, kw in checks[part]:
                kw["what"] = head + kw["what"]
                if "band" in kw:
                    band = kw.pop("band")
                    kw.update(target=0.0, margin=band, tolerance=f"unchanged within ±{band:g}")
                results.append(_check(claim_id, values, **common, **kw))
            held[part, opt] = min((r.verdict for r in results), key=_WORST.index)
    return held


_WORST = ("fail", "contradicted", "inconclusive", "outside", "pass")  # the verdict of a part: its worst record


def _check(claim_id: str, values, **kw):
    """``claims.check_mean(..., real_data=True)``; a non-finite per-seed value (with enough seeds to
    decide) fails the page instead of reading as "inconclusive"."""
    from attnflow import claims, stats

    v = np.asarray(values, dtype=float).ravel()
    if v.size >= stats.MIN_SEEDS and not np.all(np.isfinite(v)):
        return claims.check(
            claim_id,
            v.tolist(),
            predicate=lambda x: bool(np.all(np.isfinite(x))),
            tolerance="finite per-seed values (a non-finite measurement fails)",
            what=kw["what"] + " (per seed)",
            source=kw["source"],
            errata=kw.get("errata"),
        )
    return claims.check_mean(claim_id, v, **kw)
