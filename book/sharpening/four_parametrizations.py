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
# # Four parametrizations at matched loss
#
# The same one-layer attention model, trained on the same data with the same step size, ends up
# with very different attention depending only on whether each circuit is one matrix or a
# product of two. This page trains the four parametrizations from random initializations over
# several seeds, **stops each model when its training loss first reaches the same value**, and
# compares where they attend. It then puts the reduced $(a,b)$ ODE next to the full model to
# see which orderings are robust (open question Q2 of the spec).
#
# ```{prf:observation} Attention at matched training loss
# :label: obs-four-parametrizations
#
# **[paper]** {cite:p}`vashisht26a`: collapsed and factorized parametrizations give
# qualitatively different attention patterns at a similar training loss (claim A1); CACO and
# FACO put their attention mass on the distinct tokens, while FAFO is confident with weaker
# attention (A7).
# **[reconstruction]**: the protocol (data of spec §5.1, full-batch gradient descent from a
# Gaussian initialization, each model frozen at the first step with training loss
# $\le L^*$) and the firm orderings *FACO is the sharpest, CAFO the least sharp*; the FAFO–CACO
# ordering is left open (Q2).
# ```

# %% tags=["parameters"]
parametrizations = ["CACO", "CAFO", "FACO", "FAFO"]  # circuits compared
seeds = [0, 1, 2, 3]  # data/init seeds (one training set and one initialization each)
lr = 0.1              # GD step η, the same on both circuits (r is 1)
init_scale = 0.1      # init std σ is init_scale/√d (Gaussian, not balanced)
target_loss = 0.1     # matched training loss L*
max_steps = 4000      # most GD steps per model
n_classes = 5         # K classes
n_common = 20         # M common tokens
seq_len = 12          # T, sequence length with the query token
n_train = 2000        # N training sequences per seed
n_test = 1000         # held-out sequences per seed
attend_self = False   # the query attends to its own position
ode_init = 0.1        # a₀ and b₀ of the reduced ODE and of the balanced full-model runs
record_every = 20     # GD steps between recorded points
device = "auto"       # auto, cpu or cuda

# %% tags=["hide-input"]
from attnflow import claims, params
from attnflow.sharpening.contracts import FOUR_PARAMETRIZATIONS
cfg = params.validate(globals(), FOUR_PARAMETRIZATIONS)

# %%
from attnflow import plotting, seeding
from attnflow.sharpening.reports import four_parametrizations

seeding.seed_everything(cfg.seeds[0])
plotting.use_style()
rep = four_parametrizations.measure(cfg)   # trains every model as one batched run, solves the reduced ODE
print(rep.describe())
glued = rep.glue()                          # every number cited in the prose below

# %% [markdown]
# ## 1. Training all models at once
#
# Task: $K=$ {glue:text}`K` classes, $M=$ {glue:text}`M` common tokens, sequences of
# $T=$ {glue:text}`T` tokens, $N=$ {glue:text}`N` training sequences per seed, one-hot
# embeddings ($d=d_h=$ {glue:text}`d`); the distinct token competes with
# $n=$ {glue:text}`n_compete` positions in the softmax. Every model starts from
# $W\sim\mathcal N(0,\sigma^2)$ entrywise with $\sigma=$ {glue:text}`init_scale:g`$/\sqrt d$ and
# takes full-batch GD steps of size $\eta=$ {glue:text}`lr:g` on both circuits; it is frozen at
# the first step where its training loss is $\le L^*=$ {glue:text}`target_loss:g`. A seed fixes
# both the training set and the initial weights, so the four parametrizations of one seed see
# the same data.
#
# Next to the {glue:text}`n_seeds` random initializations, each parametrization is also
# trained once from the *balanced, class-symmetric* state with $a_0=b_0=$
# {glue:text}`ode_init:g` (`reduction.init_on_manifold`, {doc}`scalar_reduction`), where the
# reduced ODE is exact. All models are trained together, as one batched computation.

# %%
fig = rep.training_figure()

# %% [markdown]
# Read the left panel at the dotted line: all models have the same training loss there, yet
# FACO attends to the distinct token with mass {glue:text}`mass_FACO:.3f`, CACO with
# {glue:text}`mass_CACO:.3f`, FAFO with {glue:text}`mass_FAFO:.3f` and CAFO with only
# {glue:text}`mass_CAFO:.3f` (means over seeds). Accuracy is already 1 long before the
# matched loss is reached: the parametrizations differ in *how* they reach the same loss, not
# in what they predict. The table lists the per-seed range and the held-out metrics.

# %%
rep.table()

# %% [markdown]
# ## 2. Open question Q2: the reduced ODE next to the full model
#
# The reduced ODE of {doc}`scalar_reduction` describes the full model *exactly* on the
# balanced, class-symmetric manifold, with learning rates rescaled by the embedding geometry:
# $\eta_{OV}'=c_{OV}\eta_{OV}$ and $\eta_{QK}'=\kappa^m\eta_{QK}$ (`reduction.reduced_rates`).
# With equal step sizes on both circuits the *effective* ratio is therefore
# $r'=\kappa^m(K-1)$ — here {glue:text}`r_eff_CA:.2f` for collapsed QK and
# {glue:text}`r_eff_FA:.2f` for factorized QK — not the $r=1$ that the spec's §8.1 table uses
# for every parametrization. We solve the reduced ODE both ways up to the matched loss
# $L^*$ (correct-class probability $s=e^{-L^*}$) and compare with the full model from the
# balanced state and from the random initializations.

# %%
fig = rep.q2_figure()

# %% [markdown]
# Three things happen at once:
#
# - **The exact reduction is exact.** From the balanced state the full model (sampled data, GD)
#   lands within {glue:text}`gap_balanced:.4f` of the reduced ODE with the exact rates, for all
#   four parametrizations.
# - **The FAFO–CACO ordering flips with the rate constants.** With $r'=1$ for everyone (spec
#   §8.1) the ODE gives CACO {glue:text}`ode_uniform_CACO:.3f` > FAFO
#   {glue:text}`ode_uniform_FAFO:.3f`; with the exact rates of this model, where factorized QK
#   learns {glue:text}`r_eff_FA:.0f`× faster in reduced units, FAFO
#   {glue:text}`ode_exact_FAFO:.3f` > CACO {glue:text}`ode_exact_CACO:.3f`. The constants depend
#   on $K$ and $M$ through $\kappa=\sqrt{1/K+1/M}$, so the ordering is a property of the task,
#   not of the parametrizations alone.
# - **Random initialization moves FAFO again.** From Gaussian initializations FAFO ends at
#   {glue:text}`mass_lo_FAFO:.3f`–{glue:text}`mass_hi_FAFO:.3f` over seeds — below its
#   balanced value {glue:text}`balanced_FAFO:.3f` and close to CACO
#   ({glue:text}`mass_CACO:.3f`), whose value barely depends on the seed. The unbalanced
#   factors ($W_O^\top W_O\ne W_VW_V^\top$) speed up the OV circuit
#   ($\rho_{OV}=\sqrt{4a^2+\delta^2}>2a$, {doc}`lemma1_rescaling`), which blunts attention.
#
# FACO stays the sharpest and CAFO the least sharp under every variant; those are the firm
# claims. The FAFO–CACO comparison is logged on the {doc}`errata page <../errata>` as
# unresolved: it depends on the rate constants of the task and on the initialization.

# %%
print(rep.comparison())

# %% [markdown]
# ## 3. Claims
#
# Claims about random training are checked on the **mean over seeds with its 95% Student-t
# interval** (`claims.check_mean`; the width comes from the measured seed-to-seed spread), and
# need at least 3 seeds; with fewer they are recorded as outside their domain.
#
# - *Matched loss* (protocol): every model must reach $L^*$ and stops at the first step
#   below it, so its loss is $L^*$ minus at most one GD step's decrease. We require all stop
#   losses within $5\%$ of $L^*$: along the left panel's curves a $5\%$ change of the loss
#   moves the attention mass by far less than the gaps between parametrizations. Domain: steps
#   $\eta\le 0.1$ — at $\eta=0.1$ the overshoot is well below $1\%$; at $0.3$ it was measured
#   at $5.6\%$, and steps of 1 or more overshoot by more ({doc}`where_it_breaks`).
# - *A1*: the parametrizations differ by more than 0.2 in attention mass at the same loss: the
#   per-seed range (sharpest minus least sharp) has its interval above 0.2 (domain: FACO and
#   CAFO both trained).
# - *A7, firm*: the margin of FACO over the next sharpest parametrization, and of the least
#   sharp other one over CAFO, is positive **in every seed** (a paired sign claim: on a few seeds
#   the t-interval of a consistently signed but uneven margin can reach 0, so the statistic is
#   the fraction of seeds, and it must be all of them); the mean attention of both
#   collapsed-OV models has its interval above 0.8 (domain: $L^*\le 0.1$, since attention keeps
#   sharpening as the loss falls).
# - *A7, regression targets of spec §8.2* (full model, GD 0.1, init $0.1/\sqrt d$; domain: that
#   configuration): the seed mean must match FACO 0.99 (atol 0.005, the spec's seed range
#   0.990–0.991 plus finite-sample noise of the training set), CACO 0.84 (atol 0.01), CAFO 0.55
#   (atol 0.02; spec range 0.53–0.55) within its interval plus that atol. FAFO is the
#   seed-sensitive entry: the spec's three seeds gave 0.79, 0.88 and 0.82, a range and not a
#   bound for each seed, so the seed mean is compared with their mean 0.83 (atol 0.005, the
#   rounding of the spec's values) within its interval.
# - *Reduction*: the balanced full model matches the exact-rate ODE within 0.01 (GD step
#   $\eta$ against the flow, and a sampled training set of $N$ sequences against the
#   population; domain $\eta\le 0.1$, $N\ge 1000$: at $\eta=0.3$ the gap reached 0.016 with
#   $L^*=0.2$, a discretization effect rather than a failure of the reduction).

# %% tags=["hide-input"]
rep.check_claims()
claims.finish()
