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
# # Corollary 5 — why faster query-key learning sharpens attention
#
# Compare models *at the same training loss*. The loss fixes the correct-class margin
# $u=a\,p$, i.e. the product of what the OV circuit has learned ($a$) and the attention mass on
# the relevant token ($p$). A model whose OV circuit is slow must make up for it with sharper
# attention — and it can, if its QK circuit is fast. This page measures the attention mass at
# matched loss for the four parametrizations and for increasing $r=\eta_{QK}/\eta_{OV}$ on three
# levels: the reduced ODE, the full model's exact gradient flow, and gradient descent on
# sampled data from a random initialization.
#
# ```{prf:corollary} Sharpening mechanism
# :label: cor-sharpening
#
# **[paper]** mechanism: "faster query-key learning relative to output-value learning thus
# produces sharper attention, as the model compensates for slower output-value learning by
# increasing attention mass on relevant tokens", with comparable predictive performance
# (sharpening is *decoupled* from accuracy) {cite:p}`vashisht26a`. **[reconstruction]**
# argument (spec Corollary 5): at a loss $-\log s_*$ the margin is
# $u_*=\log\frac{(K-1)s_*}{1-s_*}$, so $p=u_*/a$; softmax saturation $1-p\approx ne^{-b}$ lets a
# faster QK circuit (larger $r$, or the rescaling $2|b|$ of a factorized QK circuit) reach a
# larger $p$ by the time the loss gets there, while the prediction $\arg\max z$ is correct as
# soon as $u>0$. Predicted order at $r=1$: FACO > CACO > FAFO > CAFO.
# ```

# %% tags=["parameters"]
n_classes = 5         # K, classes
n_compete = 9         # n, positions competing with the distinct token (reduced ODE and population)
lr_ratios = [1.0, 2.0, 5.0, 10.0]  # ratios r, η_QK/η_OV
a0 = 0.1              # initial OV scalar a₀
b0 = 0.1              # initial QK scalar b₀
horizon = 1e5         # horizon of the reduced ODE (spec §8.1: 10⁵)
rtol = 1e-10          # relative tolerance of LSODA (absolute: rtol/100)
parametrizations = ["CACO", "CAFO", "FACO", "FAFO"]  # circuits to run
matched_prob = 0.9    # correct-class probability s at the matched loss, L is −log s
pop_n_common = 3      # M of the full model's exact population flow
n_common = 20         # M of the sampled task (spec §5.1)
seq_len = 12          # T of the sampled task
n_samples = 500       # N sampled sequences (spec: 2000, the paper profile)
gd_lr = 0.1           # GD learning rate η_OV of the sampled runs
init_std = 0.1        # Gaussian init std × √d of the sampled runs
loss_target = 0.1     # training loss at which the sampled runs are compared (spec §8.2)
max_steps = 6000      # maximum GD steps of a sampled run
seeds = [0, 1, 2]     # seeds of the sampled runs (data from seed, init from seed + 1)
device = "auto"       # device of the sampled runs

# %% tags=["hide-input"]
from attnflow import claims, params
from attnflow.sharpening.contracts import SHARPENING_MECHANISM
cfg = params.validate(globals(), SHARPENING_MECHANISM)

# %%
from attnflow import display, exercises, plotting, seeding
from attnflow.sharpening.reports.sharpening_mechanism import mechanism_report

seeding.seed_everything(cfg.seeds[0] if cfg.seeds else 0)
plotting.use_style()
rep = mechanism_report(cfg)   # reduced ODE, full-model population flow, sampled GD over seeds
glued = rep.glue()

# %% [markdown]
# ## 1. The margin is fixed by the loss
#
# Sympy checks that the margin below solves $e^{u}/(e^{u}+K-1)=s_*$ (residual zero); the
# attention mass and odds a model needs at that loss then follow from $a$ alone:

# %%
display.equation("eq_margin", rep.matched_loss.margin, lhs=r"u_*")
display.equation("eq_p_needed", rep.matched_loss.p_needed, lhs=r"p")
display.equation("eq_odds_needed", rep.matched_loss.odds_needed, lhs=r"\frac{p}{1-p}")

# %% [markdown]
# With $K$ = {glue:text}`n_classes_used` and $s_*$ = {glue:text}`s_match`, $u_*$ =
# {glue:text}`u_star:.4f`: every model at this loss lies on the hyperbola $p=u_*/a$ in the
# $(a,p)$ plane, and *where* on it is decided by the relative speed of the two circuits.
#
# ## 2. Reduced ODE
#
# The reduced flow (spec normalization, $n$ = {glue:text}`n_compete_used`, $K$ =
# {glue:text}`n_classes_used`, $\eta_{OV}=1$; the population-loss flow of the full model by
# {prf:ref}`prop-reduced-ode`) is integrated with LSODA until $t$ = {glue:text}`horizon_used:.0e`,
# recording the first time $s$ reaches $s_*$ (an event of the solver, so the matched point is
# located to solver precision rather than to a grid).

# %%
rep.reduced_table()

# %% [markdown]
# At $r$ = {glue:text}`r1:g` the attention mass at matched loss orders the parametrizations as
# {glue:text}`order_match` (FACO {glue:text}`p_FACO_r1:.4f`, CACO {glue:text}`p_CACO_r1:.4f`,
# FAFO {glue:text}`p_FAFO_r1:.4f`, CAFO {glue:text}`p_CAFO_r1:.4f`), and at the horizon as
# {glue:text}`order_end`. Factorizing QK sharpens (its rate $2|b|$ grows with $b$),
# factorizing OV blunts (a faster OV circuit reaches the margin with a larger $a$, hence a
# smaller $p=u_*/a$). Raising $r$ sharpens every parametrization.
#
# **Exercise.** Compute the margin $u_*=\log\frac{(K-1)s_*}{1-s_*}$ from `cfg.n_classes` and
# `cfg.matched_prob`, and from it the attention mass that the first parametrization needs at
# matched loss, `p_mine` $=u_*/a$, with $a$ its OV scalar at that moment,
# `rep.a_match[(cfg.parametrizations[0], rep.r1)]`. It is checked against the attention mass
# the solver measured there.

# %% tags=["exercise"]
import math
### BEGIN SOLUTION
u_mine = math.log((cfg.n_classes - 1) * cfg.matched_prob / (1 - cfg.matched_prob))
p_mine = u_mine / rep.a_match[(cfg.parametrizations[0], rep.r1)]
### END SOLUTION

# %% tags=["exercise-check"]
exercises.check("p_mine", p_mine, expected=rep.p_match[(cfg.parametrizations[0], rep.r1)], rtol=1e-6,
                hint="the loss −log s* fixes the margin u = a·p; divide it by a")

# %% [markdown]
# ## 3. The full model, exact population flow
#
# The torch model of spec §4 with $K$ = {glue:text}`n_classes_used`, $M$ =
# {glue:text}`pop_M` common tokens and $n$ = {glue:text}`n_compete_used` (query masked), on the
# **population loss**, started on the symmetric/balanced manifold, gradient flow integrated in
# float64 (LSODA with the autograd Hessian) until the loss reaches $-\log s_*$. Its circuit
# learning rates are set to $\eta_{OV}=1/c_{OV}$, $\eta_{QK}=r/\kappa^m$, so that it is exactly
# the normalized reduced system of the previous section. Attention mass, accuracy and $s$ are
# read off the torch forward pass.

# %%
rep.full_table()

# %% [markdown]
# The full model's attention mass at matched loss equals the reduced prediction to
# {glue:text}`full_dev:.1e`, with $s=s_*$ for every parametrization (accuracy is 1 by symmetry
# as soon as the margin is positive, so it is shown but not checked).
#
# ## 4. The full model, sampled data, random initialization
#
# Now without any of the symmetry the theory assumes: the spec's §8.2 configuration ($K$ =
# {glue:text}`n_classes_used`, $M$ = {glue:text}`samp_M`, $T$ = {glue:text}`samp_T`, $N$ =
# {glue:text}`samp_N` sampled sequences, **sampled loss**, so $n=T-2$ =
# {glue:text}`samp_n` common positions), Gaussian initialization with std
# {glue:text}`samp_std:g`$/\sqrt d$ (not balanced), float32, full-batch GD with
# $\eta_{OV}$ = {glue:text}`samp_lr:g` and $\eta_{QK}=r\eta_{OV}$, stopped when the training loss
# first drops below {glue:text}`samp_target:g`, for {glue:text}`n_seeds` seeds (each seed draws
# its own data and initialization). We compare FACO at $r=1$ with FAFO at $r=10$ (claim A14),
# and FAFO with CACO at $r=1$ (open question Q2). A run whose loss diverges or oscillates (a GD
# step above its stability limit) or stalls is reported with its cause instead of a number.

# %%
rep.sampled_table()

# %%
fig, = rep.figures()

# %% [markdown]
# FAFO with a ten times faster QK circuit reaches a mean attention mass of
# {glue:text}`samp_fafo10:.3f`, above FACO's {glue:text}`samp_faco:.3f` at equal rates and far
# above FAFO's {glue:text}`samp_fafo1:.3f` at $r=1$ (CACO: {glue:text}`samp_caco1:.3f`), all at
# the same training loss (table: the worst training accuracy of each model at that point).
# The attention pattern changes, the predictive performance does not. Across the reduced runs
# the attention mass at matched loss ranges from {glue:text}`p_min:.3f` to {glue:text}`p_max:.4f`
# while the correct-class probability is $s_*$ for all of them — sharpening is decoupled from
# the loss and the accuracy.
#
# ## 5. Claims
#
# Tolerances and domains.
#
# - The symbolic residual must be zero.
# - The spec's §8.1 targets for $p$ are met within its stated $\pm0.002$ and the ordering must
#   hold exactly, on the spec's system ($n=9$, $K=5$, $a_0=b_0=0.1$, $s_*=0.9$; $p(10^5)$ needs
#   the horizon $10^5$); elsewhere they are outside their domain.
# - The monotonicity in $r$ is a strict inequality, for at least two ratios whose runs reach
#   $s_*$ before the horizon.
# - The full model's population flow and the reduced ODE are independent adaptive solutions
#   (relative tolerance $\le10^{-9}$) with event location, so we allow $10^{-6}$.
# - **A14, reduced.** At $p\approx0.999$ a tolerance of 0.002 on $p$ would accept any
#   $1-p$ between 0 and 0.003. The check is on $1-p(10^5)$, the attention left on the other
#   tokens: FAFO at $r=10$ has {glue:text}`one_minus_p_fafo10:.3e` and FACO at $r=1$
#   {glue:text}`one_minus_p_faco1:.3e`; their ratio must be 1 within 0.13 (both printed 0.9992:
#   $1-p\in[7.5,8.5]\cdot10^{-4}$), and FAFO's value must match $1-0.9992$ within half a unit
#   of the printed digit ($5\cdot10^{-5}$).
# - **Sampled GD** (random data and initialization) is checked on statistics over the
#   {glue:text}`n_seeds` seeds, and only when there are at least 3 and every run reached the
#   loss target with a stable step: FAFO ×10 must be sharper than FACO (the 95% t interval of
#   the paired per-seed difference above 0). On the spec's §8.2 configuration (apart from $N$)
#   the seed means must match the spec's 1.00 and 0.99 within the t interval plus half a unit
#   of the printed digit (0.005), and every run must have training accuracy 1 at loss 0.1.

# %% tags=["hide-input"]
rep.check_claims()
claims.finish()
