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
seeds = [0, 1, 2]     # data/init seeds, pooled in the heatmaps (≥ 3 for the seed statistics)
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

# %% tags=["hide-input"]
from attnflow import claims, params
from attnflow.sharpening.contracts import DTAP_HEATMAPS
cfg = params.validate(globals(), DTAP_HEATMAPS)

# %%
from attnflow import plotting, seeding
from attnflow.sharpening.reports import dtap_heatmaps

seeding.seed_everything(cfg.seeds[0])
plotting.use_style()

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
rep = dtap_heatmaps.measure(cfg)
print(rep.describe())
glued = rep.glue()       # every number cited in the prose
fig = rep.heatmap_figure()

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
fig = rep.threshold_figure()

# %%
rep.table()

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
# Statements about random training are checked on the **mean over seeds with its 95%
# Student-t interval** (`claims.check_mean`), so the measured seed-to-seed spread sets the
# width; with fewer than 3 seeds they are recorded as outside their domain. Comparisons across
# $r$ are paired: the runs of one seed share data and initial weights.
#
# - *A8*: the smallest rise of FAFO's mean attention mass at $L^*$ between consecutive $r$ is
#   positive in every seed (every increase of $r$ sharpens; a paired sign claim, checked on the
#   fraction of seeds, which must be all); and the DTAP of FAFO at the largest
#   $r$ is closer to FACO's than at $r=1$, and closer than any other parametrization at $r=1$
#   is (maps pooled over seeds).
# - *A14, spec §8.2* (domain: the spec's configuration with $r=10$ trained): FAFO at $r=10$
#   reaches attention mass 1.00 (atol 0.005, the rounding of the spec's two decimals, on top
#   of the interval; the spec's second implementation gave 0.998), and its margin over FACO at
#   $r=1$ is positive in every seed.
# - *A7* (domain: $L^*\le 0.1$, so that the true-class probability exceeds 0.5 on most
#   sequences): the ACMC at $\tau_a=\tau_c=0.5$ of CACO and FACO has its interval above 0.95;
#   FAFO at $r=1$ is FACO's equal at $\tau_a=0.5$, but FACO's AC minus FAFO's at
#   $\tau_a=$ {glue:text}`tau_sep:g` is positive in every seed — the reconstruction's reading of
#   "confident with weak attention". This last part is checked on the spec's task ($K=5$,
#   $M=20$, $T=12$) only: with fewer common tokens (e.g. $M=10$) FAFO's attention also passes
#   0.9 in some seeds, and the separating threshold would have to be chosen for that task.

# %% tags=["hide-input"]
rep.check_claims()
claims.finish()
