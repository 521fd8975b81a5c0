"""Report of ``book/sharpening/dtap_heatmaps``: DTAP heatmaps at matched loss and the AC threshold
sweep (spec §7.3; claims A7, A8, A14; open question Q3).

    rep = dtap_heatmaps.measure(cfg)
    rep.glue(); rep.heatmap_figure(); rep.threshold_figure(); rep.table(); rep.check_claims()

:func:`summarize` turns per-model held-out values (attention on the distinct token and true-class
probability per sequence) into everything the page shows: the DTAP maps pooled over seeds, the
AC threshold sweep per seed, the total-variation distances to FACO. It is unit-tested on small
arrays; :func:`measure` trains the models (the four parametrizations at r = 1 and FAFO at every
r, one batched run) and calls it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from attnflow.report import PageReport
from attnflow.sharpening import targets
from attnflow.sharpening.model import PARAMETRIZATIONS
from attnflow.sharpening.reports.seedcheck import every_seed

__all__ = ["Model", "DtapHeatmaps", "summarize", "measure", "NAMES", "tv_distance", "separating_threshold"]

NAMES = tuple(PARAMETRIZATIONS)


def tv_distance(a: np.ndarray, b: np.ndarray) -> float:
    """Total-variation distance ½ Σ |a − b| of two normalized heatmaps (bins, bins)."""
    return 0.5 * float(np.abs(np.asarray(a) - np.asarray(b)).sum())


def separating_threshold(taus: Sequence[float]) -> float:
    """τ_a at which FAFO and FACO are compared: 0.9 when swept, else the middle of the sweep."""
    taus = list(taus)
    return 0.9 if 0.9 in taus else taus[len(taus) // 2]


@dataclass
class Model:
    """One model type (parametrization at one r) over seeds."""

    name: str                 # parametrization
    r: float                  # η_QK/η_OV
    mass: np.ndarray          # (n_seeds,) mean attention on the distinct token (held-out)
    acmc: np.ndarray          # (n_seeds,) ACMC(0.5, 0.5)
    ac: np.ndarray            # (n_taus, n_seeds) AC over the threshold sweep
    heat: np.ndarray          # (bins, bins) DTAP map pooled over seeds

    @property
    def label(self) -> str:
        return f"{self.name} r={self.r:g}"


@dataclass
class DtapHeatmaps(PageReport):
    lr: float
    init_scale: float
    target_loss: float
    n_test: int
    n_seeds: int
    r_max: float
    bins: int
    tau_sep: float
    tv_r1: float              # TV(FAFO r=1, FACO)
    tv_rmax: float            # TV(FAFO r_max, FACO)
    tv_others: float          # smallest TV of another parametrization (r = 1) to FACO
    spec_setting: bool
    K: int
    M: int
    T: int
    n_models: int
    steps_run: int
    wall_s: float
    taus: list = field(default_factory=list)
    ratios: list = field(default_factory=list)
    models: dict = field(default_factory=dict)      # (name, r) -> Model

    @property
    def spec_task(self) -> bool:
        return targets.is_full_config(n_classes=self.K, n_common=self.M, seq_len=self.T)

    def model(self, name: str, r: float = 1.0) -> Model:
        return self.models[(name, float(r))]

    def ac_at(self, name: str, r: float, tau: float) -> np.ndarray:
        """(n_seeds,) AC of one model type at a threshold of the sweep."""
        return self.model(name, r).ac[self.taus.index(tau)]

    def glue(self, prefix: str = "") -> dict:
        """Scalars, plus ac05_n, acsep_n (r = 1; NaN when 0.5 is not swept) and acsep_FAFO_rmax."""
        from attnflow import display

        values = super().glue(prefix)
        extra = {}
        for n in NAMES:
            extra[f"ac05_{n}"] = float(self.ac_at(n, 1.0, 0.5).mean()) if 0.5 in self.taus else float("nan")
            extra[f"acsep_{n}"] = float(self.ac_at(n, 1.0, self.tau_sep).mean())
        extra["acsep_FAFO_rmax"] = float(self.ac_at("FAFO", self.r_max, self.tau_sep).mean())
        for k, v in extra.items():
            display.number(prefix + k, v)
        return {**values, **extra}

    def describe(self) -> str:
        from attnflow import device as devices

        return f"{self.n_models} models, {self.steps_run} GD steps, {self.wall_s:.1f} s on {devices.describe()}"

    def rows(self) -> list[dict]:
        i05 = self.taus.index(0.5) if 0.5 in self.taus else None
        faco = self.model("FACO").heat
        out = []
        for (n, r), m in self.models.items():
            if n != "FAFO" and r != 1.0:
                continue
            out.append({"model": m.label, "mean mass": float(m.mass.mean()),
                        "AC(τ_a=0.5)": float(m.ac[i05].mean()) if i05 is not None else float("nan"),
                        f"AC(τ_a={self.tau_sep:g})": float(m.ac[self.taus.index(self.tau_sep)].mean()),
                        "TV to FACO": tv_distance(m.heat, faco)})
        return out

    def table(self):
        from attnflow import display

        return display.table(self.rows(), floatfmt="{:.3f}")

    def figures(self) -> list:
        return [self.heatmap_figure(), self.threshold_figure()]

    def heatmap_figure(self):
        """DTAP maps: the four parametrizations at r = 1 (top row), FAFO at every r (bottom row)."""
        import matplotlib.colors as mcolors
        import seaborn as sns

        from attnflow import plotting

        cols = min(max(len(NAMES), len(self.ratios)), 4)
        rows_top = [(n, 1.0) for n in NAMES]
        rows_bottom = [("FAFO", r) for r in self.ratios]
        panels = [rows_top[i:i + cols] for i in range(0, len(rows_top), cols)] + \
                 [rows_bottom[i:i + cols] for i in range(0, len(rows_bottom), cols)]
        fig, axes = plotting.subplots(len(panels), cols, width=2.4, height=2.5)
        ticks = [0, self.bins // 2, self.bins]
        for i, row in enumerate(panels):
            for j in range(cols):
                ax = axes[i, j]
                if j >= len(row):
                    ax.axis("off")
                    continue
                m = self.model(*row[j])
                H = m.heat
                sns.heatmap(np.where(H > 0, H, np.nan)[::-1], ax=ax, cmap="rocket_r", cbar=False, square=True,
                            norm=mcolors.LogNorm(vmin=1e-3, vmax=1.0))
                ax.set_xticks(ticks, [0, 0.5, 1], rotation=0)
                ax.set_yticks(ticks, [1, 0.5, 0])
                ax.grid(False)
                ax.set(title=f"{m.name}, r = {m.r:g}\nmean mass {m.mass.mean():.3f}",
                       xlabel="attention on distinct token", ylabel="p(true class)")
        fig.colorbar(axes[0, 0].collections[0], ax=axes, shrink=0.6, label="fraction of sequences (log scale)")
        fig.suptitle(f"DTAP at L* = {self.target_loss:g} (GD η_OV = {self.lr:g}, init σ = {self.init_scale:g}/√d, "
                     f"seeds pooled: {self.n_seeds})", y=1.02)
        return fig

    def threshold_figure(self):
        """AC over τ_a: the four parametrizations at r = 1, and FAFO at every r against FACO."""
        import seaborn as sns

        from attnflow import plotting
        from attnflow.plotting import MODEL_COLORS

        fig, axes = plotting.subplots(1, 2, width=4.2, height=3.2)
        ax = axes[0]
        for n in NAMES:
            ax[0].plot(self.taus, self.model(n).ac.mean(1), "o-", color=MODEL_COLORS[n], label=n)
        shades = sns.light_palette(MODEL_COLORS["FAFO"], len(self.ratios) + 1)[1:]   # darker = larger r
        for k, r in enumerate(self.ratios):
            ax[1].plot(self.taus, self.model("FAFO", r).ac.mean(1), "o-", color=shades[k], label=f"FAFO r = {r:g}")
        ax[1].plot(self.taus, self.model("FACO").ac.mean(1), "k--", lw=1, label="FACO r = 1")
        for a, t in zip(ax, ("four parametrizations, r = 1", "FAFO with faster QK")):
            a.set(xlabel=r"threshold $\tau_a$", ylabel=r"AC = fraction with attention $\geq \tau_a$", title=t,
                  ylim=(-0.03, 1.03))
            a.legend(fontsize="small", loc="lower left")
        return fig

    def check_claims(self) -> None:
        from attnflow import claims, stats

        seeds = stats.enough_seeds(self.n_seeds)
        several = ("at least two ratios r", len(self.ratios) >= 2, f"r = {self.ratios}")
        per_seed = np.stack([self.model("FAFO", r).mass for r in self.ratios])           # (n_ratios, n_seeds)
        rise = np.diff(per_seed, axis=0).min(0) if len(self.ratios) >= 2 else np.array([np.nan])   # (n_seeds,)
        every_seed("A8", rise, what="FAFO: smallest rise of the attention mass at L* between consecutive r",
                   source="paper", domain=claims.domain(several, seeds))
        claims.check("A8", [self.tv_r1, self.tv_rmax, self.tv_others], predicate=lambda x: x[1] < x[0] and x[1] < x[2],
                     tolerance="TV(r_max) < TV(r = 1) and < TV of every other parametrization",
                     what="TV distance of FAFO's DTAP to FACO's: r = 1, r_max, closest other model", source="reconstruction",
                     domain=claims.domain(("r_max > 1", self.r_max > 1.0, f"r_max = {self.r_max:g}")))
        spec = ("configuration of spec §8.2 (K=5, M=20, T=12, η=0.1, σ=0.1/√d, L*=0.1)", self.spec_setting)
        has10 = ("r = 10 trained", 10.0 in self.ratios, f"r = {self.ratios}")
        fast = self.model("FAFO", 10.0).mass if 10.0 in self.ratios else np.array([np.nan])
        claims.check_mean("A14", fast, target=targets.FULL_MASS[("FAFO", 10.0)], atol=targets.half_unit(2),
                          what="FAFO, r = 10: attention mass at L* (spec §8.2)", source="reconstruction",
                          domain=claims.domain(spec, has10, seeds))
        every_seed("A14", fast - self.model("FACO").mass, what="FAFO r = 10 minus FACO r = 1, attention mass",
                   source="reconstruction", domain=claims.domain(spec, has10, seeds))
        loss_ok = ("L* ≤ 0.1 (p(true class) ≥ e^{−L*} > 0.5 on most sequences)", self.target_loss <= 0.1,
                   f"L* = {self.target_loss:g}")
        for n in ("CACO", "FACO"):
            claims.check_mean("A7", self.model(n).acmc, above=0.95,
                              what=f"{n}: ACMC(0.5, 0.5), fraction of sequences in the top-right quadrant",
                              source="paper", domain=claims.domain(seeds, loss_ok))
        gap = self.ac_at("FACO", 1.0, self.tau_sep) - self.ac_at("FAFO", 1.0, self.tau_sep)
        task = ("the task of spec §8.2 (K=5, M=20, T=12), where τ_a = 0.9 lies between FAFO's and FACO's "
                "attention (with fewer common tokens FAFO's attention passes 0.9 too)", self.spec_task,
                f"K={self.K}, M={self.M}, T={self.T}")
        every_seed("A7", gap, what=f"AC(τ_a = {self.tau_sep:g}) of FACO minus FAFO at r = 1",
                   source="reconstruction", domain=claims.domain(seeds, loss_ok, task))


def summarize(cfg, task, specs, attn_each: np.ndarray, conf_each: np.ndarray, mass: np.ndarray, acmc: np.ndarray, *,
              n_models: int, steps_run: int, wall_s: float) -> DtapHeatmaps:
    """The report from per-model held-out values: ``attn_each``/``conf_each`` (P, B) attention on the
    distinct token and true-class probability per sequence, ``mass`` (P,) their mean attention,
    ``acmc`` (P,) at (0.5, 0.5); ``specs`` (P,) the ``ModelSpec`` of each model (parametrization,
    lr_ratio, seed)."""
    import torch

    from attnflow.sharpening import metrics

    ratios = sorted(set(cfg.fafo_ratios) | {1.0})
    taus = list(cfg.tau_attns)
    x, y = torch.as_tensor(attn_each), torch.as_tensor(conf_each)            # (P, B)
    heat = metrics.dtap(x, y, cfg.bins).numpy()                               # (P, bins, bins)
    models = {}
    kinds = [(n, 1.0) for n in NAMES] + [("FAFO", r) for r in ratios if r != 1.0]
    for n, r in kinds:
        sel = np.array([i for i, sp in enumerate(specs) if sp.parametrization == n and sp.lr_ratio == r])
        ac = metrics.threshold_sweep(x[sel], y[sel], taus)["ac"].numpy()     # (n_taus, n_seeds)
        models[(n, float(r))] = Model(n, float(r), np.asarray(mass)[sel], np.asarray(acmc)[sel], ac, heat[sel].mean(0))
    faco = models[("FACO", 1.0)].heat
    tau_sep = separating_threshold(taus)
    spec = targets.is_full_config(n_classes=task.n_classes, n_common=task.n_common, seq_len=task.seq_len,
                                  gd_lr=cfg.lr, init_std=cfg.init_scale, loss_target=cfg.target_loss)
    return DtapHeatmaps(
        lr=cfg.lr, init_scale=cfg.init_scale, target_loss=cfg.target_loss, n_test=cfg.n_test, n_seeds=len(cfg.seeds),
        r_max=float(max(ratios)), bins=cfg.bins, tau_sep=float(tau_sep),
        tv_r1=tv_distance(models[("FAFO", 1.0)].heat, faco), tv_rmax=tv_distance(models[("FAFO", max(ratios))].heat, faco),
        tv_others=min(tv_distance(models[(n, 1.0)].heat, faco) for n in NAMES if n != "FACO"),
        spec_setting=bool(spec), K=task.n_classes, M=task.n_common, T=task.seq_len, n_models=n_models, steps_run=steps_run, wall_s=wall_s, taus=taus,
        ratios=[float(r) for r in ratios], models=models)


def measure(cfg) -> DtapHeatmaps:
    """Train the four parametrizations at r = 1 and FAFO at every r (one batched run), evaluate on
    the held-out sets and summarize."""
    from attnflow.sharpening import data, experiments

    task = data.Task(cfg.n_classes, cfg.n_common, cfg.seq_len)
    ratios = sorted(set(cfg.fafo_ratios) | {1.0})
    specs = experiments.grid(list(NAMES), [1.0], cfg.seeds, [cfg.lr], [cfg.init_scale])
    specs += experiments.grid(["FAFO"], [r for r in ratios if r != 1.0], cfg.seeds, [cfg.lr], [cfg.init_scale])
    exp = experiments.run(specs, task, n_train=cfg.n_train, n_test=cfg.n_test, steps=cfg.max_steps,
                          target_loss=cfg.target_loss, attend_self=cfg.attend_self, device=cfg.device)
    ev = experiments.evaluate(exp)
    return summarize(cfg, task, exp.specs, ev["attn_relevant_each"], ev["confidence_each"], ev["attn_relevant"], ev["acmc"],
                     n_models=len(specs), steps_run=int(exp.run.steps_run), wall_s=float(exp.run.wall_s))
