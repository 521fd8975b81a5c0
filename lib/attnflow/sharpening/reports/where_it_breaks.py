"""Report of ``book/sharpening/where_it_breaks``: the claims of the synthetic experiments over a
grid of init scales × GD steps (spec §8.2, Q2, Q6; claims A7, A8).

    rep = where_it_breaks.measure(cfg)
    rep.glue(); rep.grid_figure(); rep.table(); rep.histogram_figure(); rep.check_claims()

Every cell trains CACO, CAFO, FACO, FAFO at r = 1 and FAFO at ``fast_ratio`` with full-batch GD
until the training loss reaches L* or a budget of gradient-flow time η·steps is spent (then the
model has *stalled*); diverged models are marked, not raised. :func:`summarize` derives the
per-cell criteria and every number of the page from per-model arrays (unit-tested on a small
fake grid); :func:`measure` trains the whole grid as one batched run.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from attnflow.report import PageReport
from attnflow.sharpening import targets
from attnflow.sharpening.model import PARAMETRIZATIONS

__all__ = [
    "Cell",
    "WhereItBreaks",
    "summarize",
    "measure",
    "CRITERIA",
    "NAMES",
    "STALL_STEP",
    "STALL_SCALE",
    "STALL_N",
    "ERRATA_STALL",
]

NAMES = tuple(PARAMETRIZATIONS)
CRITERIA = {
    "L": "all reach L*",
    "M": "all stop within 5% of L*",
    "F": "FACO sharpest",
    "C": "CAFO least sharp",
    "A": "fast-QK FAFO > FAFO",
    "R": "fast-QK FAFO ≥ FACO",
}
STALL_SCALE = targets.STALL["init_scale"]  # spec §8.2: with init std 1.0/√d FAFO ×10 stalled at 0.80
STALL_STEP = targets.STALL["lr"]  # ... with the spec's GD step 0.1
STALL_N = targets.STALL["n_train"]  # ... and N = 2000 training sequences
STALL_MASS = targets.STALL["mass"]
ERRATA_STALL = "errata-sharpening-stall"  # the spec §8.2 stall at init 1/√d: A8 against the paper


@dataclass
class Cell:
    """One (init scale, GD step) cell: which criteria hold, and its per-seed masses."""

    scale: float
    lr: float
    held: dict  # criterion letter -> bool
    n_models: int
    n_reached: int
    n_diverged: int
    overshoot: float  # largest 1 − loss_stop/L* (NaN if none stopped)
    fafo: np.ndarray  # (n_seeds,) FAFO r = 1, mass at the stop
    fast: np.ndarray  # (n_seeds,) FAFO r = fast_ratio
    caco: np.ndarray  # (n_seeds,)
    seeds: list = field(default_factory=list)

    @property
    def done(self) -> bool:
        """A completed, matched cell: every model reached L* and stopped within 5% of it."""
        return self.held["L"] and self.held["M"]

    @property
    def failed(self) -> str:
        return "".join(k for k in CRITERIA if not self.held[k])


@dataclass
class WhereItBreaks(PageReport):
    fast_ratio: float
    n_seeds: int
    n_train: int
    max_time: float
    target_loss: float
    n_cells: int
    budget_small: int
    budget_large: int
    init_scale: float
    n_fail_A: int  # reached cells where A8 fails
    n_reached: int
    n_complete: int
    n_fail_order: int  # completed cells (any init) where FACO is not sharpest or CAFO not least sharp
    fail_A_min: float  # smallest init scale of those cells (NaN if none)
    fast_ref: float
    ref_lr: float
    ref_scale: float
    big_scale: float
    big_faco_stalled: int
    big_fast_stalled: int
    n_big_runs: int
    n_diverged: int
    max_overshoot: float
    worst_lr: float
    n_fafo_above: int
    n_fafo_below: int
    wrong_big: float
    wrong_ref: float
    weak_correct_big: float
    weak_correct_ref: float
    spec_task: bool
    n_models: int
    steps_run: int
    wall_s: float
    scales: list = field(default_factory=list)
    steps: list = field(default_factory=list)
    cells: dict = field(default_factory=dict)  # (scale, lr) -> Cell
    seeds: list = field(default_factory=list)
    stall_cell: tuple | None = None  # (1.0, smallest step): the stall shown on the page, if in the grid
    stall: dict = field(default_factory=dict)  # glued stall numbers (stall_lo, stall_hi, stall_fafo, n_stall)
    stall_seed0: tuple | None = None  # (fast, slow) masses of seed 0 in the stall cell
    spec_seed0: float | None = None  # FAFO ×10 mass of seed 0 in the spec's cell (1.0, 0.1)
    wrong_one: float | None = None
    hist: dict = field(default_factory=dict, repr=False)  # scale -> [(label, color, test masses)]

    def glue(self, prefix: str = "") -> dict:
        from attnflow import display

        values = super().glue(prefix)
        extra = dict(self.stall)  # wrong_one is a scalar field: PageReport.glue glues it when it is set
        for k, v in extra.items():
            display.number(prefix + k, v)
        return {**values, **extra}

    def describe(self) -> str:
        from attnflow import device as devices

        stalled = sum(c.n_models - c.n_reached - c.n_diverged for c in self.cells.values())
        return (
            f"{self.n_models} models, {self.steps_run} GD steps, {self.wall_s:.1f} s on {devices.describe()}; "
            f"diverged: {self.n_diverged}, stalled: {stalled}"
        )

    def rows(self) -> list[dict]:
        return [
            {
                "init std·√d": c.scale,
                "step η_OV": c.lr,
                "reached L*": f"{c.n_reached}/{c.n_models}",
                "diverged": c.n_diverged,
                "largest overshoot": c.overshoot,
                "FAFO r=1": float(c.fafo.mean()),
                f"FAFO r={self.fast_ratio:g}": float(c.fast.mean()),
                "CACO": float(c.caco.mean()),
                "failed": c.failed,
            }
            for c in self.cells.values()
        ]

    def table(self):
        from attnflow import display

        return display.table(self.rows(), floatfmt="{:.3f}")

    def grid(self, what: str) -> np.ndarray:
        """(n_scales, n_steps) of "held" (criteria holding), "fast" or "fafo_minus_caco"."""
        out = np.full((len(self.scales), len(self.steps)), np.nan)
        for i, s in enumerate(self.scales):
            for j, lr in enumerate(self.steps):
                c = self.cells[(s, lr)]
                out[i, j] = {
                    "held": lambda: sum(c.held[k] for k in CRITERIA),
                    "fast": lambda: c.fast.mean(),
                    "fafo_minus_caco": lambda: (c.fafo - c.caco).mean(),
                }[what]()
        return out

    def figures(self) -> list:
        return [self.grid_figure(), self.histogram_figure()]

    def grid_figure(self):
        import seaborn as sns

        from attnflow import plotting

        fig, axes = plotting.subplots(1, 3, width=3.6, height=3.2)
        axes = axes[0]
        labels = np.array([[self.cells[(s, lr)].failed or "✓" for lr in self.steps] for s in self.scales])
        kw = dict(
            xticklabels=[f"{lr:g}" for lr in self.steps],
            yticklabels=[f"{s:g}" for s in self.scales],
            cbar=False,
            square=True,
        )
        sns.heatmap(
            self.grid("held"), ax=axes[0], annot=labels, fmt="", cmap="RdYlGn", vmin=0, vmax=len(CRITERIA), **kw
        )
        axes[0].set_title("claims holding (letters: failed)")
        sns.heatmap(self.grid("fast"), ax=axes[1], annot=True, fmt=".2f", cmap="mako", vmin=0.5, vmax=1.0, **kw)
        axes[1].set_title(f"FAFO at r = {self.fast_ratio:g}: attention at L*")
        diff = self.grid("fafo_minus_caco")
        lim = float(np.nanmax(np.abs(diff))) or 1.0
        sns.heatmap(diff, ax=axes[2], annot=True, fmt="+.2f", cmap="vlag", vmin=-lim, vmax=lim, **kw)
        axes[2].set_title("FAFO − CACO at r = 1 (Q2)")
        for ax in axes:
            ax.grid(False)
            ax.set(xlabel=r"GD step $\eta_{OV}$", ylabel=r"init std $\times\sqrt{d}$")
        fig.suptitle("  ".join(f"{k}: {v}" for k, v in CRITERIA.items()), y=1.05, fontsize="small")
        return fig

    def histogram_figure(self):
        from attnflow import plotting

        shown = list(self.hist)
        fig, axes = plotting.subplots(1, len(shown), width=3.6, height=3.0)
        for ax, s in zip(axes[0], shown):
            for label, color, values in self.hist[s]:
                ax.hist(values, bins=np.linspace(0, 1, 41), histtype="step", lw=1.6, color=color, label=label)
            ax.set(
                yscale="log",
                xlabel="attention on the distinct token",
                ylabel="held-out sequences",
                title=f"init std {s:g}/√d, GD step {self.ref_lr:g}",
            )
            ax.legend(fontsize="x-small", loc="upper left")
        return fig

    def check_claims(self) -> None:
        """A7 (orderings in every completed cell), A8 (faster QK sharpens at small init), and the
        spec §8.2 stall at init 1.0/√d (direction, and its value with the spec's N and step)."""
        from attnflow import claims, stats

        seeds = stats.enough_seeds(self.n_seeds)
        complete = [c for c in self.cells.values() if c.done]
        small = [c for c in complete if c.scale <= self.init_scale]
        some = (
            f"a completed cell (every model reached L* within 5%) with init ≤ {self.init_scale:g}/√d "
            "(small initialization, as the theory assumes)",
            len(small) > 0,
            f"{len(small)} of {self.n_cells} cells",
        )
        claims.check(
            "A7",
            [((c.scale, c.lr), c.held["F"], c.held["C"]) for c in small],
            predicate=lambda x: all(f and c for _, f, c in x),
            tolerance="FACO sharpest and CAFO least sharp in every such cell and seed",
            what=f"completed cells with init ≤ {self.init_scale:g}: FACO sharpest, CAFO least sharp",
            source="reconstruction",
            domain=claims.domain(some, seeds),
        )
        claims.check(
            "A8",
            [(c.scale, c.lr) for c in small if not c.held["A"]],
            predicate=lambda x: not x,
            tolerance="no failing cell",
            what=f"completed cells with init ≤ {self.init_scale:g} where faster QK does not sharpen FAFO",
            source="paper",
            domain=claims.domain(
                (f"a completed cell with init ≤ {self.init_scale:g}", len(small) > 0, f"{len(small)} cells"), seeds
            ),
        )
        grid = f"seeds {self.seeds}, init scales {self.scales}, steps {self.steps}"
        where = (f"seed 0 and init {STALL_SCALE:g}/√d in the grid", self.stall_seed0 is not None, grid)
        near_flow = (
            f"smallest step ≤ {3 * STALL_STEP:g} (close to the flow)",
            self.steps[0] <= 3 * STALL_STEP + 1e-12,
            f"smallest step {self.steps[0]:g}",
        )
        faster = ("fast_ratio > 1 (faster QK)", self.fast_ratio > 1.0, f"fast_ratio = {self.fast_ratio:g}")
        fast, slow = self.stall_seed0 if self.stall_seed0 is not None else (float("nan"), float("nan"))
        # The paper's direction at large init; the spec's §8.2 stall (FAFO ×10 blunter) is a finding against it.
        claims.check(
            "A8",
            fast - slow,
            predicate=lambda x: x > 0,
            tolerance="> 0 (the paper's direction)",
            what=f"seed 0, init {STALL_SCALE:g}/√d, step {self.steps[0]:g}: FAFO ×{self.fast_ratio:g} minus FAFO "
            "attention at L*",
            source="paper",
            errata=ERRATA_STALL,
            domain=claims.domain(where, near_flow, faster),
        )


def summarize(
    cfg,
    task,
    specs,
    mass,
    reached,
    diverged,
    loss_final,
    test_mass,
    test_correct,
    wrong,
    *,
    n_models: int,
    steps_run: int,
    wall_s: float,
) -> WhereItBreaks:
    """The report from per-model arrays (P,): training ``mass`` at the stop, ``reached``, ``diverged``,
    ``loss_final``; held-out ``test_mass`` (P, B), ``test_correct`` (P, B) bool and ``wrong`` (P,), the
    fraction of held-out sequences whose largest attention weight is not on the distinct token."""
    from attnflow.plotting import MODEL_COLORS

    scales, steps = sorted(cfg.init_scales), sorted(cfg.lrs)
    mass, reached, diverged, loss_final = map(np.asarray, (mass, reached, diverged, loss_final))

    def pick(name, r, s, lr):
        return np.array(
            [
                i
                for i, sp in enumerate(specs)
                if sp.parametrization == name and sp.lr_ratio == r and sp.init_scale == s and sp.lr_ov == lr
            ]
        )

    cells = {}
    for s in scales:
        for lr in steps:
            four = np.stack([mass[pick(n, 1.0, s, lr)] for n in NAMES])  # (4, n_seeds)
            fast, fafo = mass[pick("FAFO", cfg.fast_ratio, s, lr)], mass[pick("FAFO", 1.0, s, lr)]
            cell = np.concatenate([pick(n, 1.0, s, lr) for n in NAMES] + [pick("FAFO", cfg.fast_ratio, s, lr)])
            over = 1 - loss_final[cell] / cfg.target_loss  # how far below L* each stopped
            over_max = float(np.nanmax(over)) if np.isfinite(over).any() else float("nan")
            held = {
                "L": bool(reached[cell].all()),
                "M": bool(over_max <= 0.05),
                "F": bool((four.argmax(0) == NAMES.index("FACO")).all()),
                "C": bool((four.argmin(0) == NAMES.index("CAFO")).all()),
                "A": bool((fast > fafo).all()),
                "R": bool((fast >= mass[pick("FACO", 1.0, s, lr)]).all()),
            }
            cells[(s, lr)] = Cell(
                s,
                lr,
                held,
                len(cell),
                int(reached[cell].sum()),
                int(diverged[cell].sum()),
                over_max,
                fafo,
                fast,
                mass[pick("CACO", 1.0, s, lr)],
                seeds=[specs[i].seed for i in pick("FAFO", 1.0, s, lr)],
            )
    ref = (cfg.init_scale, steps[0])
    big = max(scales)
    fails_A = sorted({c.scale for c in cells.values() if c.held["L"] and not c.held["A"]})
    overshoot = np.array([[cells[(s, lr)].overshoot for lr in steps] for s in scales])
    signs = np.sign(np.array([[(cells[(s, lr)].fafo - cells[(s, lr)].caco).mean() for lr in steps] for s in scales]))
    stalled = {
        n: int(sum((~reached[pick(n, r, big, lr)] & ~diverged[pick(n, r, big, lr)]).sum() for lr in steps))
        for n, r in (("FACO", 1.0), ("FAFO", cfg.fast_ratio))
    }
    weak_correct = ((np.asarray(test_mass) < 0.5) & np.asarray(test_correct)).mean(-1)  # (P,)
    stall_cell = (STALL_SCALE, steps[0]) if STALL_SCALE in scales else None
    stall, seed0, spec0 = {}, None, None
    if stall_cell is not None:
        c = cells[stall_cell]
        stall = {
            "stall_lo": float(c.fast.min()),
            "stall_hi": float(c.fast.max()),
            "stall_fafo": float(c.fafo.mean()),
            "n_stall": int((c.fast < c.fafo).sum()),
        }
        if 0 in c.seeds:
            k = c.seeds.index(0)
            seed0 = (float(c.fast[k]), float(c.fafo[k]))
    if (STALL_SCALE, STALL_STEP) in cells and 0 in cells[(STALL_SCALE, STALL_STEP)].seeds:
        c = cells[(STALL_SCALE, STALL_STEP)]
        spec0 = float(c.fast[c.seeds.index(0)])
    shown = list(dict.fromkeys([ref[0]] + [v for v in (STALL_SCALE, big) if v in scales]))
    hist = {}
    for s in shown:
        hist[s] = []
        for name, r, color in (
            ("FAFO", 1.0, MODEL_COLORS["FAFO"]),
            ("FAFO", cfg.fast_ratio, "k"),
            ("FACO", 1.0, MODEL_COLORS["FACO"]),
        ):
            k = pick(name, r, s, ref[1])
            hist[s].append(
                (
                    f"{name} r={r:g}: {100 * np.asarray(wrong)[k].mean():.1f}% look elsewhere",
                    color,
                    np.asarray(test_mass)[k].ravel(),
                )
            )
    spec_task = (task.n_classes, task.n_common, task.seq_len, cfg.target_loss) == (5, 20, 12, 0.1)
    w = np.asarray(wrong)
    return WhereItBreaks(
        fast_ratio=cfg.fast_ratio,
        n_seeds=len(cfg.seeds),
        n_train=cfg.n_train,
        max_time=cfg.max_time,
        target_loss=cfg.target_loss,
        n_cells=len(cells),
        budget_small=int(np.ceil(cfg.max_time / steps[0])),
        budget_large=int(np.ceil(cfg.max_time / steps[-1])),
        init_scale=cfg.init_scale,
        n_fail_A=sum(c.held["L"] and not c.held["A"] for c in cells.values()),
        n_reached=sum(c.held["L"] for c in cells.values()),
        n_complete=sum(c.done for c in cells.values()),
        n_fail_order=sum(c.done and not (c.held["F"] and c.held["C"]) for c in cells.values()),
        fail_A_min=min(fails_A) if fails_A else float("nan"),
        fast_ref=float(cells[ref].fast.mean()),
        ref_lr=ref[1],
        ref_scale=ref[0],
        big_scale=big,
        big_faco_stalled=stalled["FACO"],
        big_fast_stalled=stalled["FAFO"],
        n_big_runs=len(steps) * len(cfg.seeds),
        n_diverged=int(diverged.sum()),
        max_overshoot=float(np.nanmax(overshoot)) if np.isfinite(overshoot).any() else float("nan"),
        worst_lr=steps[int(np.nanargmax(np.nanmax(overshoot, axis=0)))]
        if np.isfinite(overshoot).any()
        else float("nan"),
        n_fafo_above=int((signs > 0).sum()),
        n_fafo_below=int((signs < 0).sum()),
        wrong_big=float(w[pick("FAFO", cfg.fast_ratio, big, ref[1])].mean()),
        wrong_ref=float(w[pick("FAFO", cfg.fast_ratio, ref[0], ref[1])].mean()),
        weak_correct_big=float(weak_correct[pick("FAFO", 1.0, big, ref[1])].mean()),
        weak_correct_ref=float(weak_correct[pick("FAFO", 1.0, ref[0], ref[1])].mean()),
        spec_task=bool(spec_task),
        n_models=n_models,
        steps_run=steps_run,
        wall_s=wall_s,
        scales=scales,
        steps=steps,
        cells=cells,
        seeds=list(cfg.seeds),
        stall_cell=stall_cell,
        stall=stall,
        stall_seed0=seed0,
        spec_seed0=spec0,
        wrong_one=float(w[pick("FAFO", cfg.fast_ratio, 1.0, ref[1])].mean()) if 1.0 in scales else None,
        hist=hist,
    )


def measure(cfg) -> WhereItBreaks:
    """Train the whole grid (every cell: the four parametrizations at r = 1 and FAFO at fast_ratio,
    every seed) as one batched run with a time budget per model, and summarize it."""
    import torch

    from attnflow.sharpening import data, experiments

    task = data.Task(cfg.n_classes, cfg.n_common, cfg.seq_len)
    specs = []
    for s in sorted(cfg.init_scales):
        for lr in sorted(cfg.lrs):
            specs += experiments.grid(list(NAMES), [1.0], cfg.seeds, [lr], [s])
            specs += experiments.grid(["FAFO"], [cfg.fast_ratio], cfg.seeds, [lr], [s])
    limits = [int(np.ceil(cfg.max_time / sp.lr_ov)) for sp in specs]
    exp = experiments.run(
        specs,
        task,
        n_train=cfg.n_train,
        n_test=cfg.n_test,
        steps=max(limits),
        step_limits=limits,
        target_loss=cfg.target_loss,
        attend_self=cfg.attend_self,
        on_diverge="mark",
        record_every=100,
        device=cfg.device,
    )
    run = exp.run
    with torch.no_grad():
        out = exp.stack.forward(run.params, exp.test.tokens)  # logits (P, B, K), attn (P, B, T)
    relevant_pos = exp.test.relevant_mask.float().argmax(-1)  # (P, B) the distinct token's position
    wrong = (out.attn.argmax(-1) != relevant_pos).float().mean(-1).cpu().numpy()  # (P,) attends most elsewhere
    test_mass = (out.attn * exp.test.relevant_mask).sum(-1).cpu().numpy()  # (P, B)
    correct = (out.logits.argmax(-1) == exp.test.targets).cpu().numpy()  # (P, B)
    return summarize(
        cfg,
        task,
        exp.specs,
        run.stats_final["attn_relevant"],
        run.reached,
        run.diverged,
        run.loss_final,
        test_mass,
        correct,
        wrong,
        n_models=len(specs),
        steps_run=int(run.steps_run),
        wall_s=float(run.wall_s),
    )
