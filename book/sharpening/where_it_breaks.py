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
# # Where the sharpening claims break: initialization scale and step size
#
# The theory of this chapter is gradient *flow* from a small *balanced* initialization. The
# experiments use gradient *descent* from a random Gaussian one. This page asks how far that
# gap can be pushed: it trains the four parametrizations and a fast-QK FAFO on a grid of
# initialization scales and step sizes, checks the sharpening claims in every cell, and says
# plainly where they fail.
#
# ```{prf:remark} Initialization and discretization (spec Q6)
# :label: rem-where-it-breaks
#
# **[reconstruction]** The spec's full-model targets hold at init std $0.1/\sqrt d$ and GD step
# 0.1; its authors also saw FAFO with $\eta_{QK}\times10$ *stall* at attention mass 0.80 with
# init std $1/\sqrt d$, with a few sequences attending to the wrong token (spec §8.2). The
# claims tested per cell: all models reach the matched loss; FACO is the sharpest and CAFO the
# least sharp parametrization (A7); faster QK sharpens FAFO (A8) up to FACO's level (A14).
# ```

# %% tags=["parameters"]
init_scales = [0.01, 0.1, 1.0, 3.0]  # init std σ·√d of the grid rows (Gaussian, not balanced)
lrs = [0.1, 1.0, 10.0]  # GD steps η_OV of the grid columns (0.1: the spec's step)
fast_ratio = 10.0     # r of the fast-QK FAFO (η_QK over η_OV)
seeds = [0, 1, 2]     # data/init seeds per cell (≥ 3: the orderings are checked in every seed)
init_scale = 0.1      # init scale of the reference cell (one of init_scales)
target_loss = 0.1     # matched training loss L*
max_time = 200.0      # GD time budget η·steps per model (still above L* then: stalled)
n_classes = 5         # K classes
n_common = 20         # M common tokens
seq_len = 12          # T, sequence length with the query token
n_train = 1000        # N training sequences per seed
n_test = 500          # held-out sequences per seed
attend_self = False   # the query attends to its own position
device = "auto"       # auto, cpu or cuda

# %% tags=["hide-input"]
from attnflow import claims, params
from attnflow.sharpening.contracts import WHERE_IT_BREAKS
cfg = params.validate(globals(), WHERE_IT_BREAKS)

# %%
from attnflow import plotting, seeding
from attnflow.sharpening.reports import where_it_breaks

seeding.seed_everything(cfg.seeds[0])
plotting.use_style()

# %% [markdown]
# ## 1. One batched run for the whole grid
#
# Each of the {glue:text}`n_cells` cells trains CACO, CAFO, FACO and FAFO at $r=1$ and FAFO at
# $r=$ {glue:text}`fast_ratio:g` ($\eta_{QK}=r\eta_{OV}$), {glue:text}`n_seeds` seed(s) each, with
# full-batch GD on $N=$ {glue:text}`n_train` sequences, until the training loss first reaches
# $L^*=$ {glue:text}`target_loss:g` or its budget of gradient-flow time
# $\eta\cdot\text{steps}=$ {glue:text}`max_time:g` is spent ({glue:text}`budget_small` steps
# at the smallest step, {glue:text}`budget_large` at the largest; the spec's §8.2 runs reached
# $L^*$ within 1,260–1,975 steps of 0.1, i.e. by time 200). A model still above $L^*$
# then has *stalled*. Every model of every cell is trained in the same batched computation; a
# model whose loss becomes infinite is flagged as *diverged* instead of stopping the run.

# %%
rep = where_it_breaks.measure(cfg)
print(rep.describe())
glued = rep.glue()       # every number cited in the prose (and on the errata page)
fig = rep.grid_figure()

# %%
rep.table()

# %% [markdown]
# ## 2. What holds and what breaks
#
# - **FACO sharpest, CAFO least sharp: robust at small initialization.** Of the
#   {glue:text}`n_complete` cells where all models reach $L^*$ (and stop within 5% of it), the
#   orderings fail in some seed in {glue:text}`n_fail_order`. At init std up to
#   {glue:text}`ref_scale:g`$/\sqrt d$ they held in every seed of every run we tried; at
#   $1/\sqrt d$ FACO is not the sharpest in some seeds (seeds 3–5 of the `smoke` grid, for
#   instance), so the claim's domain is small initialization, as in the theory.
# - **Faster QK sharpens FAFO at small initialization, not at large.** Claim A8 holds in every
#   matched cell with init std up to {glue:text}`ref_scale:g`$/\sqrt d$; among the
#   {glue:text}`n_reached` cells where every model reaches $L^*$ it fails in
#   {glue:text}`n_fail_A`, all at init scales of {glue:text}`fail_A_min:g`$/\sqrt d$ and above. At std $1/\sqrt d$
#   and step {glue:text}`ref_lr:g` the fast-QK FAFO ends between {glue:text}`stall_lo:.3f` and
#   {glue:text}`stall_hi:.3f` over seeds, against {glue:text}`stall_fafo:.3f` for FAFO at
#   $r=1$: in {glue:text}`n_stall` seed(s) it *stalls* below the slow model — the spec's 0.80 —
#   while in the others it still reaches FACO's level. The stall is a property of the seed, not
#   of the setting: the spec's single run could have gone either way.
# - **At std {glue:text}`big_scale:g`$/\sqrt d$ training itself breaks.** FACO fails to reach
#   $L^*$ within its time budget in {glue:text}`big_faco_stalled` of
#   {glue:text}`n_big_runs` runs and the fast-QK FAFO in {glue:text}`big_fast_stalled`: they
#   sit on a plateau where a sixth of the sequences attend to, and are predicted from, a common
#   token. The largest step diverges for the factorized models there
#   ({glue:text}`n_diverged` models diverged in the whole grid).
# - **Large steps blur "matched loss".** A model stops at the first step below $L^*$; with
#   large steps that step lands far below it — up to {glue:text}`max_overshoot:.0%` below at
#   step {glue:text}`worst_lr:g`. Attention keeps sharpening as the loss falls, so comparisons at
#   large steps are comparisons at different losses.
# - **The FAFO–CACO ordering depends on the initialization (Q2).** FAFO is sharper than CACO
#   in {glue:text}`n_fafo_above` cells and blunter in {glue:text}`n_fafo_below`; the sign
#   changes with the init scale, which moves FAFO and leaves CACO almost unchanged.

# %%
fig = rep.histogram_figure()

# %% [markdown]
# "Look elsewhere" counts the held-out sequences whose largest attention weight is on a
# common token. At the reference scale the fast-QK FAFO does so for a fraction
# {glue:text}`wrong_ref:.4f` of them; at std $1/\sqrt d$ for {glue:text}`wrong_one:.4f` (seeds
# pooled: the stalled seed carries them) — the spec's "few instances attended to the wrong
# token". At std {glue:text}`big_scale:g`$/\sqrt d$ something else appears: FAFO at $r=1$
# reaches $L^*$ while a fraction {glue:text}`weak_correct_big:.3f` of the held-out sequences
# are predicted *correctly with less than half of the attention on the distinct token*
# ({glue:text}`weak_correct_ref:.3f` at the reference scale): a large OV weight reads the
# class off a distinct token that gets only a few percent of the attention. This is the
# paper's "confident with weak attention" DTAP region for FAFO, which the reconstruction
# produces only from large initializations (logged on the {doc}`errata page <../errata>`).
#
# ## 3. Claims
#
# The per-cell claims hold "in every seed" of every completed cell and need at least 3 seeds
# (else: outside domain).
#
# - *A7*: FACO sharpest and CAFO least sharp in every cell (and seed) with init std at most
#   {glue:text}`ref_scale:g`$/\sqrt d$ where all models reach $L^*$ within the matched-loss
#   tolerance of {doc}`four_parametrizations` (stop loss at most 5% below $L^*$) — no tolerance
#   on the orderings themselves; larger initializations are outside the domain (see above).
# - *A8 where it holds*: in every completed cell with init std at most the reference
#   {glue:text}`ref_scale:g`$/\sqrt d$, the fast-QK FAFO is sharper than FAFO in every seed.
# - *A8 at init $1/\sqrt d$, the paper's direction* (seed 0; the spec does not give its seed):
#   at the smallest step of the grid (at most 0.3, close to the flow) the fast-QK FAFO should end
#   sharper than FAFO at $r=1$. The spec's §8.2 run *stalled* there (at 0.80, blunter than FAFO),
#   and so may seed 0 here: then the check is recorded as a finding against the paper, linked to
#   the {ref}`errata entry <errata-sharpening-stall>`, not as a pass. Where that cell or seed is
#   not in the run, the check is outside its domain. One seed, as in the spec; the table above
#   shows how the other seeds behave.

# %% tags=["hide-input"]
rep.check_claims()
claims.finish()
