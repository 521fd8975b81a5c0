# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # DTAP heatmaps: where each model puts its attention
#
# A mean attention mass hides the instances. The *distinct-token attention vs prediction*
# (DTAP) heatmap places every held-out sequence at
# $x=\sum_{i\in R}p_i$ (attention on the distinct token) and $y=\mathrm{softmax}(z)_y$
# (probability of the true class), and colours each cell by the fraction of sequences in it.
# A model that is right *because* it looks at the distinct token fills the top-right corner;
# a model that is right while looking elsewhere fills the top-left. This page draws the
# heatmaps of the four parametrizations and of FAFO trained with faster query-key learning.
#
# ```{prf:observation} DTAP at matched loss; faster QK makes FAFO FACO-like
# :label: obs-dtap
#
# **[paper]** {cite:p}`vashisht26a`: collapsed-OV models (CACO, FACO) concentrate their mass
# top-right; FAFO tends to put mass towards "correct prediction, weak attention"; raising
# $\eta_{QK}$ relative to $\eta_{OV}$ moves FAFO towards FACO-like behaviour (claims A7, A8).
# **[reconstruction]**: the DTAP axes and binning (spec §7.3; unknown in the paper, Q3), the
# matched-loss protocol, and the measure of "FACO-like" (total-variation distance between
# heatmaps).
# ```

# %% tags=["parameters"]
fafo_ratios = [1.0, 2.0, 5.0, 10.0]  # r of the FAFO runs (η_QK over η_OV)
seeds = [0, 1]        # data/init seeds, pooled in the heatmaps
lr = 0.1              # GD step η_OV (η_QK is r times larger)
init_scale = 0.1      # init std σ is init_scale/√d (Gaussian, not balanced)
target_loss = 0.1     # matched training loss L*
max_steps = 4000      # most GD steps per model
n_classes = 5         # K classes
n_common = 20         # M common tokens
seq_len = 12          # T, sequence length with the query token
n_train = 2000        # N training sequences per seed
n_test = 2000         # held-out sequences per seed (the heatmaps)
attend_self = False   # the query attends to its own position
bins = 10             # DTAP bins per axis
tau_attns = [0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.99]  # τ_a of the AC threshold sweep
device = "auto"       # auto, cpu or cuda

# %%
from attnflow import claims, params
from attnflow.sharpening.experiments import DTAP_SCHEMA
cfg = params.validate(globals(), DTAP_SCHEMA)

# %%
import matplotlib.colors as mcolors
import numpy as np
import seaborn as sns
import torch

from attnflow import device as devices, display, metrics, plotting, seeding
from attnflow.plotting import MODEL_COLORS
from attnflow.sharpening import data, experiments

seeding.seed_everything(cfg.seeds[0])
plotting.use_style()
task = data.Task(cfg.n_classes, cfg.n_common, cfg.seq_len)
names = ["CACO", "CAFO", "FACO", "FAFO"]
ratios = sorted(set(cfg.fafo_ratios) | {1.0})
r_max = max(ratios)
for key, value in dict(lr=cfg.lr, init_scale=cfg.init_scale, target_loss=cfg.target_loss, n_test=cfg.n_test,
                       n_seeds=len(cfg.seeds), r_max=r_max, bins=cfg.bins).items():
    display.number(key, value)

# %% [markdown]
# ## 1. Training
#
# Full-batch GD with $\eta_{OV}=$ {glue:text}`lr:g` and $\eta_{QK}=r\,\eta_{OV}$ from
# Gaussian initializations of std {glue:text}`init_scale:g`$/\sqrt d$, {glue:text}`n_seeds`
# seeds; every model is frozen when its training loss first reaches
# $L^*=$ {glue:text}`target_loss:g`. The four parametrizations at $r=1$ and FAFO at every $r$
# are trained together as one batched computation, then evaluated on
# {glue:text}`n_test` held-out sequences per seed.

# %%
specs = experiments.grid(names, [1.0], cfg.seeds, [cfg.lr], [cfg.init_scale])
specs += experiments.grid(["FAFO"], [r for r in ratios if r != 1.0], cfg.seeds, [cfg.lr], [cfg.init_scale])
exp = experiments.run(specs, task, n_train=cfg.n_train, n_test=cfg.n_test, steps=cfg.max_steps,
                      target_loss=cfg.target_loss, attend_self=cfg.attend_self, device=cfg.device)
ev = experiments.evaluate(exp)
print(f"{len(specs)} models, {exp.run.steps_run} GD steps, {exp.run.wall_s:.1f} s on {devices.describe()}")
x_each = torch.from_numpy(ev["attn_relevant_each"])                     # (P, n_test)
y_each = torch.from_numpy(ev["confidence_each"])                        # (P, n_test)
heat = metrics.dtap(x_each, y_each, cfg.bins).numpy()                   # (P, bins, bins)


def pooled(name: str, r: float = 1.0) -> np.ndarray:
    """The DTAP map of one model pooled over seeds (bins, bins)."""
    return heat[exp.select(parametrization=name, lr_ratio=r)].mean(0)


def mass_of(name: str, r: float = 1.0) -> np.ndarray:
    """Mean attention mass on the distinct token per seed (n_seeds,)."""
    return ev["attn_relevant"][exp.select(parametrization=name, lr_ratio=r)]


def draw(ax, H, title):
    sns.heatmap(np.where(H > 0, H, np.nan)[::-1], ax=ax, cmap="rocket_r", cbar=False, square=True,
                norm=mcolors.LogNorm(vmin=1e-3, vmax=1.0))
    ticks = [0, cfg.bins // 2, cfg.bins]
    ax.set_xticks(ticks, [0, 0.5, 1], rotation=0)
    ax.set_yticks(ticks, [1, 0.5, 0])
    ax.grid(False)
    ax.set(title=title, xlabel="attention on distinct token", ylabel="p(true class)")


fig, axes = plotting.subplots(2, max(len(names), len(ratios)), width=2.7, height=2.8)
for j, n in enumerate(names):
    draw(axes[0, j], pooled(n), f"{n}, r = 1\nmean mass {mass_of(n).mean():.3f}")
for j, r in enumerate(ratios):
    draw(axes[1, j], pooled("FAFO", r), f"FAFO, r = {r:g}\nmean mass {mass_of('FAFO', r).mean():.3f}")
for ax in [*axes[0, len(names):], *axes[1, len(ratios):]]:
    ax.axis("off")
fig.colorbar(axes[0, 0].collections[0], ax=axes, shrink=0.6, label="fraction of sequences (log scale)")
fig.suptitle(f"DTAP at L* = {cfg.target_loss:g} (GD η_OV = {cfg.lr:g}, init σ = {cfg.init_scale:g}/√d, "
             f"seeds pooled: {len(cfg.seeds)})", y=1.03)

# %% [markdown]
# Every model predicts the true class with probability near $e^{-L^*}$ on most sequences —
# the heatmaps differ mainly along the horizontal axis, i.e. in *how much* of the prediction
# is carried by the distinct token. FACO sits in a narrow column at the far right, CACO and
# FAFO ($r=1$) one column to its left, and CAFO in the middle, with its less confident
# sequences lower down. Raising $r$ moves FAFO's column to the right until, at $r=$ {glue:text}`r_max:g`, its heatmap is closer to FACO's than FACO is to
# any other parametrization (total-variation distance {glue:text}`tv_rmax:.3f`, against
# {glue:text}`tv_r1:.3f` at $r=1$).
#
# ## 2. Thresholds decide what "weak attention" means (Q3)
#
# The paper's "correct prediction, weak attention" region and its AC/ACMC metrics need a
# threshold $\tau_a$ on the attention mass, which the paper's summary does not give. Sweeping
# it shows the problem: at $\tau_a=0.5$ every model but CAFO has AC = 1 — FAFO looks as
# sharp as FACO — and FAFO separates from FACO only for $\tau_a$ close to its own mean mass.

# %%
fig, ax = plotting.subplots(1, 2, width=4.2, height=3.2)
ax = ax[0]
taus = cfg.tau_attns
ac = {}
shades = sns.light_palette(MODEL_COLORS["FAFO"], len(ratios) + 1)[1:]   # darker = larger r
for n in names:
    ac[(n, 1.0)] = metrics.threshold_sweep(x_each[exp.select(parametrization=n, lr_ratio=1.0)],
                                           y_each[exp.select(parametrization=n, lr_ratio=1.0)], taus)["ac"].mean(1).numpy()
    ax[0].plot(taus, ac[(n, 1.0)], "o-", color=MODEL_COLORS[n], label=n)
for k, r in enumerate(ratios):
    sel = exp.select(parametrization="FAFO", lr_ratio=r)
    ac[("FAFO", r)] = metrics.threshold_sweep(x_each[sel], y_each[sel], taus)["ac"].mean(1).numpy()
    ax[1].plot(taus, ac[("FAFO", r)], "o-", color=shades[k], label=f"FAFO r = {r:g}")
ax[1].plot(taus, ac[("FACO", 1.0)], "k--", lw=1, label="FACO r = 1")
for a, t in zip(ax, ("four parametrizations, r = 1", "FAFO with faster QK")):
    a.set(xlabel=r"threshold $\tau_a$", ylabel=r"AC = fraction with attention $\geq \tau_a$", title=t, ylim=(-0.03, 1.03))
    a.legend(fontsize="small")

# %%
tau_sep = 0.9 if 0.9 in taus else taus[len(taus) // 2]
i_sep = taus.index(tau_sep)
tv = {r: 0.5 * float(np.abs(pooled("FAFO", r) - pooled("FACO")).sum()) for r in ratios}
tv_others = min(0.5 * float(np.abs(pooled(n) - pooled("FACO")).sum()) for n in names if n != "FACO")
display.number("tv_r1", tv[1.0])
display.number("tv_rmax", tv[r_max])
display.number("tv_others", tv_others)
display.number("tau_sep", tau_sep)
for n in names:
    display.number(f"ac05_{n}", float(ac[(n, 1.0)][taus.index(0.5)]) if 0.5 in taus else float("nan"))
    display.number(f"acsep_{n}", float(ac[(n, 1.0)][i_sep]))
display.number("acsep_FAFO_rmax", float(ac[("FAFO", r_max)][i_sep]))
rows = [{"model": f"{n} r=1", "mean mass": mass_of(n).mean(), "AC(τ_a=0.5)": ac[(n, 1.0)][taus.index(0.5)] if 0.5 in taus else np.nan,
         f"AC(τ_a={tau_sep:g})": ac[(n, 1.0)][i_sep], "TV to FACO": 0.5 * np.abs(pooled(n) - pooled("FACO")).sum()} for n in names]
rows += [{"model": f"FAFO r={r:g}", "mean mass": mass_of("FAFO", r).mean(),
          "AC(τ_a=0.5)": ac[("FAFO", r)][taus.index(0.5)] if 0.5 in taus else np.nan,
          f"AC(τ_a={tau_sep:g})": ac[("FAFO", r)][i_sep], "TV to FACO": tv[r]} for r in ratios if r != 1.0]
display.table(rows, floatfmt="{:.3f}")

# %% [markdown]
# At $\tau_a=0.5$ the AC of FAFO is {glue:text}`ac05_FAFO:.3f`, the same as FACO's
# {glue:text}`ac05_FACO:.3f`; at $\tau_a=$ {glue:text}`tau_sep:g` it is
# {glue:text}`acsep_FAFO:.3f` against FACO's {glue:text}`acsep_FACO:.3f`, and FAFO at
# $r=$ {glue:text}`r_max:g` reaches {glue:text}`acsep_FAFO_rmax:.3f`. In this synthetic task
# "weak attention" therefore means *less than FACO's near-total attention*, not attention
# below one half; a match to the paper's AC numbers is threshold-dependent, as logged on the
# {doc}`errata page <../errata>`.
#
# ## 3. Claims
#
# - *A8*: FAFO's mean attention mass at $L^*$ rises with every increase of $r$, in every seed
#   (a paired comparison: the runs of one seed share data and initial weights); and the DTAP
#   of FAFO at the largest $r$ is closer to FACO's than at $r=1$, and closer than any other
#   parametrization at $r=1$ is.
# - *A14, spec §8.2*: FAFO at $r=10$ reaches attention mass 1.00 (atol 0.005: finite test set
#   and seeds; the spec's second implementation gave 0.998) and exceeds FACO at $r=1$ in every
#   seed. Checked only at the spec's configuration.
# - *A7*: CACO and FACO put at least 95% of the sequences in the top-right quadrant
#   (ACMC at $\tau_a=\tau_c=0.5$); FAFO at $r=1$ is FACO's equal at $\tau_a=0.5$ but has a
#   smaller AC than FACO at $\tau_a=$ {glue:text}`tau_sep:g` — the reconstruction's reading of
#   "confident with weak attention".

# %%
per_seed = np.stack([mass_of("FAFO", r) for r in ratios])                 # (n_ratios, n_seeds)
claims.check("A8", per_seed.T.tolist(), predicate=lambda m: all(a < b for row in m for a, b in zip(row, row[1:])),
             tolerance="strictly increasing in r, every seed", what="FAFO attention mass at L* per seed over r",
             source="paper")
claims.check("A8", [tv[1.0], tv[r_max], tv_others], predicate=lambda x: x[1] < x[0] and x[1] < x[2],
             tolerance="TV(r_max) < TV(r = 1) and < TV of every other parametrization",
             what="TV distance of FAFO's DTAP to FACO's: r = 1, r_max, closest other model", source="reconstruction")
spec_setting = (cfg.lr, cfg.init_scale, cfg.target_loss, task.n_classes, task.n_common, task.seq_len) == (0.1, 0.1, 0.1, 5, 20, 12)
if spec_setting and 10.0 in ratios:
    claims.check("A14", float(mass_of("FAFO", 10.0).mean()), 1.00, atol=0.005,
                 what="FAFO, r = 10: attention mass at L* (spec §8.2)", source="reconstruction")
    claims.check("A14", (mass_of("FAFO", 10.0) - mass_of("FACO")).tolist(), predicate=lambda x: min(x) > 0,
                 tolerance="> 0 in every seed", what="FAFO r = 10 minus FACO r = 1, per seed", source="reconstruction")
for n in ("CACO", "FACO"):
    acmc = float(ev["acmc"][exp.select(parametrization=n, lr_ratio=1.0)].mean())
    claims.check("A7", acmc, predicate=lambda x: x >= 0.95, tolerance="≥ 0.95",
                 what=f"{n}: ACMC(0.5, 0.5), fraction of sequences in the top-right quadrant", source="paper")
claims.check("A7", [float(ac[("FAFO", 1.0)][i_sep]), float(ac[("FACO", 1.0)][i_sep])],
             predicate=lambda x: x[0] < x[1], tolerance=f"AC_FAFO < AC_FACO at τ_a = {tau_sep:g}",
             what=f"AC(τ_a = {tau_sep:g}) of FAFO and FACO at r = 1", source="reconstruction")
claims.finish()
