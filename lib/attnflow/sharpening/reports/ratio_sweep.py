"""Report of ``book/sharpening/ratio_sweep``: FAFO over the learning-rate ratio r with AdamW, SGD
or GD, compared at matched training losses (spec §7.1–7.2; claims A6, A11; open questions Q3, Q4).

    rep = ratio_sweep.measure(cfg)
    rep.glue(); rep.figures(); rep.table(); rep.check_claims()

:func:`measure` runs one batched sweep per optimizer (seeds × r), keeps every model's parameters
at its first evaluated step below each loss level and evaluates the held-out metrics there;
:class:`Level` holds them as (n_ratios, n_seeds) arrays. Everything else is derived from those
arrays (unit-tested on small inputs).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from attnflow.report import PageReport
from attnflow.sharpening import contracts
from attnflow.sharpening.reports.seedcheck import every_seed

__all__ = ["Level", "RatioSweep", "measure", "settings", "METRICS", "AC_MARGIN", "OPTIMIZER_NAMES"]

METRICS = (("attn_relevant", "attention mass on distinct token"), ("ac", r"AC($\tau_a$)"),
           ("acmc", r"ACMC($\tau_a,\tau_c$)"), ("sufficiency", "sufficiency ↓ (AOPC)"),
           ("comprehensiveness", "comprehensiveness ↑ (AOPC)"), ("accuracy", "test accuracy"))
AC_MARGIN = 0.02            # AC(1) must leave this much room below 1 for a rise of AC to be measurable
OPTIMIZER_NAMES = contracts.SYNTHETIC_OPTIMIZERS   # table order of the optimizers


@dataclass
class Level:
    """Held-out metrics of one optimizer at one matched loss level, each (n_ratios, n_seeds)."""

    attn_relevant: np.ndarray
    ac: np.ndarray
    acmc: np.ndarray
    sufficiency: np.ndarray
    comprehensiveness: np.ndarray
    accuracy: np.ndarray
    top1_relevant: np.ndarray

    def get(self, metric: str) -> np.ndarray:
        return getattr(self, metric)


def settings(cfg) -> dict[str, dict]:
    """Per optimizer: η_OV and the keyword arguments of ``experiments.run``."""
    return {"adamw": dict(lr=cfg.lr_adamw, batch_size=cfg.batch_size, weight_decay=cfg.weight_decay),
            "sgd": dict(lr=cfg.lr_sgd, batch_size=cfg.batch_size, momentum=cfg.momentum),
            "gd": dict(lr=cfg.lr_gd, batch_size=None)}


@dataclass
class RatioSweep(PageReport):
    parametrization: str
    lr_adamw: float
    lr_sgd: float
    lr_gd: float
    momentum: float
    batch_size: int
    init_scale: float
    target_loss: float
    n_seeds: int
    n_test: int
    tau_attn: float
    tau_conf: float
    r_max: float
    weight_decay: float
    eval_every: int
    level_hi: float
    suff_r1: float            # first optimizer of the sweep, at L*
    suff_rmax: float
    comp_r1: float
    comp_rmax: float
    dcomp_min: float          # comprehensiveness change r = 1 → r_max over optimizers and levels
    dcomp_max: float
    top1_min: float           # smallest fraction of sequences whose top-attention token is the distinct one
    ratios: list = field(default_factory=list)
    levels: list = field(default_factory=list)              # high loss first, L* last
    optimizers: list = field(default_factory=list)
    results: dict = field(default_factory=dict)             # (optimizer, level) -> Level
    runs: dict = field(default_factory=dict, repr=False)    # optimizer -> one-line description

    def glue(self, prefix: str = "") -> dict:
        """Scalars, plus per optimizer o (NaN when it did not run, so the errata page always resolves):
        ac_o_hi_r1, ac_o_hi_rmax (highest loss level), attn_o_r1, attn_o_rmax, ac_o_r1 (at L*)."""
        from attnflow import display

        values = super().glue(prefix)
        extra = {}
        for opt in OPTIMIZER_NAMES:
            hi, lo = self.results.get((opt, self.levels[0])), self.results.get((opt, self.target_loss))
            mean = lambda lv, m, k: float("nan") if lv is None else float(lv.get(m)[k].mean())   # noqa: E731
            extra.update({f"ac_{opt}_hi_r1": mean(hi, "ac", 0), f"ac_{opt}_hi_rmax": mean(hi, "ac", -1),
                          f"attn_{opt}_r1": mean(lo, "attn_relevant", 0), f"attn_{opt}_rmax": mean(lo, "attn_relevant", -1),
                          f"ac_{opt}_r1": mean(lo, "ac", 0)})
        for k, v in extra.items():
            display.number(prefix + k, v)
        return {**values, **extra}

    def rows(self) -> list[dict]:
        return [{"optimizer": opt, "L*": level, "r": r, **{m: float(self.results[(opt, level)].get(m)[k].mean())
                                                          for m, _ in METRICS}}
                for opt in self.optimizers for level in self.levels for k, r in enumerate(self.ratios)]

    def table(self):
        from attnflow import display

        return display.table(self.rows(), floatfmt="{:.3f}")

    def figures(self) -> list:
        return [self.figure(opt) for opt in self.optimizers]

    def figure(self, opt: str):
        """Six metrics over r at every loss level (mean and min–max over seeds) for one optimizer."""
        import seaborn as sns

        from attnflow import plotting

        level_colors = sns.color_palette("crest", len(self.levels))        # darker = lower loss
        fig, axes = plotting.subplots(2, 3, width=3.3, height=2.7)
        for ax, (m, label) in zip(axes.flat, METRICS):
            for level, color in zip(self.levels, level_colors):
                v = self.results[(opt, level)].get(m)                        # (n_ratios, n_seeds)
                ax.fill_between(self.ratios, v.min(1), v.max(1), color=color, alpha=0.2, lw=0)
                ax.plot(self.ratios, v.mean(1), "o-", color=color, label=f"L* = {level:g}")
            ax.set(xscale="log", xlabel=r"$r=\eta_{QK}/\eta_{OV}$", title=label)
            ax.set_xticks(self.ratios, [f"{r:g}" for r in self.ratios])
        axes[0, 0].legend(fontsize="small", title="matched loss")
        lr = {"adamw": self.lr_adamw, "sgd": self.lr_sgd, "gd": self.lr_gd}[opt]
        fig.suptitle(f"{self.parametrization}, {opt.upper()} (η_OV = {lr:g}, init σ = {self.init_scale:g}/√d): mean and "
                     f"min–max over {self.n_seeds} seeds; τ_a = {self.tau_attn:g}, τ_c = {self.tau_conf:g}; "
                     f"arrows: ERASER's better direction", y=1.04)
        return fig

    def check_claims(self) -> None:
        """Per optimizer and loss level: A6 (attention rises with r; AC rises where it is not
        saturated; accuracy unchanged), A11 (measured sufficiency direction; top-1 rationale)."""
        from attnflow import claims, stats

        seeds = stats.enough_seeds(self.n_seeds)
        two = ("at least two ratios r", len(self.ratios) >= 2, f"r = {self.ratios}")
        for opt in self.optimizers:
            for level in self.levels:
                res = self.results[(opt, level)]
                tag = f"{opt}, L* = {level:g}"
                mass = res.attn_relevant
                every_seed("A6", mass[-1] - mass[0], what=f"{tag}: attention mass at r_max minus at r = 1",
                           source="paper", domain=claims.domain(two, seeds))
                claims.check("A6", mass.mean(1).tolist(), predicate=lambda x: all(b >= a - 1e-3 for a, b in zip(x, x[1:])),
                             tolerance="non-decreasing in r (−1e-3 float32 slack)",
                             what=f"{tag}: seed-mean attention mass over r", source="paper", domain=claims.domain(two))
                free = res.ac[0] < 1 - AC_MARGIN                             # (n_seeds,) AC(1) can still rise
                room = (f"AC(r = 1) < 1 − {AC_MARGIN:g} in some seed (AC not saturated)", bool(free.any()),
                        f"AC(1) per seed = {np.round(res.ac[0], 4).tolist()}")
                claims.check("A6", [(res.ac[-1] - res.ac[0]).tolist(), free.tolist()],
                             predicate=lambda x: all(d >= 0 for d in x[0]) and all(d > 0 for d, f in zip(*x) if f),
                             tolerance=f"AC(r_max) − AC(1) ≥ 0 in every seed and > 0 in every seed with AC(1) < 1 − {AC_MARGIN:g}",
                             what=f"{tag}: AC(τ_a = {self.tau_attn:g}) at r_max minus at r = 1 per seed, and which seeds "
                                  "have room to rise", source="paper", domain=claims.domain(two, seeds, room))
                acc = res.accuracy.mean(1)
                claims.check("A6", float(np.abs(acc - acc[0]).max()), 0.0, atol=0.02,
                             what=f"{tag}: largest change of test accuracy over r", source="paper")
                claims.check("A11", [float(res.sufficiency[0].mean()), float(res.sufficiency[-1].mean())],
                             predicate=lambda x: abs(x[1]) < abs(x[0]), tolerance="|suff(r_max)| < |suff(1)|",
                             what=f"{tag}: AOPC sufficiency at r = 1 and r_max", source="reconstruction",
                             domain=claims.domain(two))
                claims.check("A11", float(res.top1_relevant.min()), predicate=lambda x: x >= 0.99, tolerance="≥ 0.99",
                             what=f"{tag}: smallest fraction of sequences whose top-attention token is the distinct token, "
                                  "over r and seeds", source="reconstruction")


def summarize(cfg, results: dict, runs: dict) -> RatioSweep:
    """The report from ``results[(optimizer, level)] = Level`` (every optimizer of ``cfg`` at every
    level of ``cfg.checkpoint_losses`` and at ``cfg.target_loss``)."""
    ratios = sorted(float(r) for r in cfg.lr_ratios)
    levels = sorted(cfg.checkpoint_losses, reverse=True) + [cfg.target_loss]
    first = results[(cfg.optimizers[0], cfg.target_loss)]
    dcomp = [float(v.comprehensiveness[-1].mean() - v.comprehensiveness[0].mean()) for v in results.values()]
    return RatioSweep(
        parametrization=cfg.parametrization, lr_adamw=cfg.lr_adamw, lr_sgd=cfg.lr_sgd, lr_gd=cfg.lr_gd,
        momentum=cfg.momentum, batch_size=cfg.batch_size, init_scale=cfg.init_scale, target_loss=cfg.target_loss,
        n_seeds=len(cfg.seeds), n_test=cfg.n_test, tau_attn=cfg.tau_attn, tau_conf=cfg.tau_conf, r_max=ratios[-1],
        weight_decay=cfg.weight_decay, eval_every=cfg.eval_every, level_hi=levels[0],
        suff_r1=float(first.sufficiency[0].mean()), suff_rmax=float(first.sufficiency[-1].mean()),
        comp_r1=float(first.comprehensiveness[0].mean()), comp_rmax=float(first.comprehensiveness[-1].mean()),
        dcomp_min=min(dcomp), dcomp_max=max(dcomp), top1_min=min(float(v.top1_relevant.min()) for v in results.values()),
        ratios=ratios, levels=levels, optimizers=list(cfg.optimizers), results=results, runs=runs)


def measure(cfg) -> RatioSweep:
    """One batched run per optimizer (seeds × r), evaluated at every loss level."""
    from attnflow import device as devices
    from attnflow.sharpening import data, experiments

    task = data.Task(cfg.n_classes, cfg.n_common, cfg.seq_len)
    ratios = sorted(cfg.lr_ratios)
    levels = sorted(cfg.checkpoint_losses, reverse=True) + [cfg.target_loss]
    results, runs = {}, {}
    for opt in cfg.optimizers:
        setting = dict(settings(cfg)[opt])
        specs = experiments.grid([cfg.parametrization], ratios, cfg.seeds, [setting.pop("lr")], [cfg.init_scale])
        exp = experiments.run(specs, task, n_train=cfg.n_train, n_test=cfg.n_test, optimizer=opt, steps=cfg.max_steps,
                              target_loss=cfg.target_loss, checkpoints=cfg.checkpoint_losses, attend_self=cfg.attend_self,
                              eval_every=1 if opt == "gd" else cfg.eval_every, record_every=100, device=cfg.device,
                              seed=cfg.seeds[0], **setting)
        for level in levels:
            ev = experiments.evaluate(exp, tau_attn=cfg.tau_attn, tau_conf=cfg.tau_conf, k_percents=cfg.k_percents,
                                      level=None if level == cfg.target_loss else level)
            results[(opt, level)] = Level(**{m: np.stack([ev[m][exp.select(lr_ratio=r)] for r in ratios])
                                             for m in ("attn_relevant", "ac", "acmc", "sufficiency", "comprehensiveness",
                                                       "accuracy", "top1_relevant")})
        runs[opt] = (f"{opt}: {len(specs)} models, {exp.run.steps_run} steps, {exp.run.wall_s:.1f} s on "
                     f"{devices.describe()}; all reached L*: {bool(exp.run.reached.all())}")
    return summarize(cfg, results, runs)
