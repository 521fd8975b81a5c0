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
# # From samples to the population flow
#
# The theory is stated for the population limit: infinitely many sequences ($N\to\infty$) of
# infinite length ($s\to\infty$). A real model sees $N$ finite sequences. This page trains the
# model on sampled data for several $N$ and $s$, runs the same training on the exact population
# loss, and measures how far the stages move: stage times, plateau losses, and the two ways in
# which finite samples break the story.
#
# ```{prf:proposition} Finite-sample training and its population limit
# :label: prop-finite-sample
#
# **[paper]** {cite:p}`chen2026focus`: the analysis is of the population gradient flow, the
# limit of large sample size $N$ and long context $s$, in which the dynamics are deterministic.
# **[reconstruction]** data and loss (spec §4.2, §5.2, Q7). $N$ sequences $x_1,\dots,x_{s+1}$
# are drawn from the chain started at $\pi$. **Only the last position enters the loss**: the
# query $x_s$ attends over $x_1,\dots,x_s$ and predicts $x_{s+1}$. Because the model has no
# positional encoding, a context acts only through its token counts $n\in\mathbb N^d$, with
# attention weights $\propto n_ke^{S_{x_sk}}$; by ergodicity $n/s\to\pi$, which gives the
# population weights $\propto\pi_ke^{S_{ik}}$, and the mean over $N$ sequences tends to the
# expectation $-\sum_i\pi_i\sum_jP_{ij}\log\hat P_{ij}$. (A GPT-style loss on every position
# reaches the same limit only up to $O(\log s/s)$ effects of the short prefixes.)
# Finite samples perturb this at three places:
#
# 1. the fit on $\theta_c^1$ has the empirical target frequencies: its population loss exceeds
#    $H(\pi)$ by $(d-1)/(2N)$ on average (Wilks; the training loss lies below by as much);
# 2. $\theta_c^1$ has **neutral directions** — the embedding amplitudes $a\perp\pi$, on which the
#    population loss does not depend while attention is uniform. A finite context makes
#    $a\cdot n/s$ vary from sequence to sequence, so finite $N$ and $s$ tilt these directions and
#    the trajectory drifts along them during the long plateau, by roughly
#    $T_{\rm plateau}/\sqrt{Ns}$;
# 3. sampling noise breaks the exchangeability of the rare tokens like an asymmetry $\delta$ of
#    size $\sim(N\pi_{\min})^{-1/2}$, which opens transverse directions (R5) early.
# ```

# %% tags=["parameters"]
chain = "hub"           # 'hub' (spec §5.2 family) or 'dirichlet' (random rows, n_low + 1 tokens)
n_low = 4               # n, low-frequency tokens (vocabulary d is n + 1)
a_h = 0.5               # P(hub → hub)
b_h = 0.3               # P(low → hub)
c_cyc = 0.4             # extra mass on the cyclic successor of a low token
delta = 0.0             # δ, asymmetry among the low tokens (0: the reference chain)
chain_seed = 0          # seed of the Dirichlet chain (used when chain is 'dirichlet')
d_model = 8             # m, embedding width
init_scale = 1e-3       # ε, initialization std
score_scale = 1.0       # c, attention score scale
seed = 1                # initialization seed (1 is the spec's listing)
n_samples = [1024, 16384]        # N values (each at the largest s)
seq_len = [64, 4096]             # s values (each at the largest N)
optimizer = "gd"        # 'gd' (Euler scheme of the flow) or 'adam'
lr = 2.0                # η, learning rate (flow time per GD step)
steps = 1250            # training steps (flow time η · steps)
record_every = 5        # record every this many steps
data_seed = 0           # seed of the first data set
n_seeds = 3             # data seeds data_seed, data_seed + 1, … of every (N, s)
device = "auto"         # 'auto', 'cpu' or 'cuda'

# %% tags=["hide-input"]
from attnflow import claims, params
from attnflow.focus_dilution.contracts import FINITE_SAMPLE
cfg = params.validate(globals(), FINITE_SAMPLE)

# %%
from attnflow import display
from attnflow.focus_dilution.reports import finite_sample

rep = finite_sample.measure(cfg)     # the population run, every (N, s, seed) run, the flow; stages, plateaus
rep.glue()
print(f"{rep.chain.name}; {len(rep.sampled)} sampled runs (N, s, data seed); training {rep.train_s:.1f} s, "
      f"flow {rep.flow_s:.1f} s")

# %% [markdown]
# ## 1. The runs
#
# Every run starts from the same $\theta(0)$ (the spec's seed-1 draw) and takes the same GD steps
# ($\eta=$ {glue:text}`lr_used:.2g`, stable here since $\eta\lambda_{\max}<2$ up to $\theta_c^2$,
# see {doc}`cycle`); only the data differ. The **population run** is the same GD on the exact
# population loss, so the difference between a sampled run and it is the finite-sample effect
# alone; the exact flow (BDF) shows what the step $\eta$ itself changes.

# %% [markdown]
# ## 2. Stage times and plateau losses
#
# For each run the stage detector ({doc}`cycle`) reads the stages off its training loss and its
# attention on the training contexts. The table lists the first focus time, the plateau levels
# (population loss of the trained $\theta$, median over the stage) and two measures of the
# perturbations 2–3 above: the drift $\|a(t)-a_{\rm pop}(t)\|$ of the embedding amplitudes at
# $t=$ {glue:text}`t_drift:.0f`, late on the first plateau but before any run's first focus (so that
# every run is still on the plateau and the drift is along its neutral directions only), and the largest $\sigma_2(W_0)$ before the run's first focus (the
# transverse direction; it stays at its initial {glue:text}`s2_pop:.4f` in the population run).

# %%
display.table(rep.table())

# %% [markdown]
# ## 3. The gap, run by run
#
# Loss and attention of each run against the population run (dashed) and the exact flow
# (dotted), on a linear time axis. The stage letters of the table are those of the detector
# (C condensation, P plateau, F focus, D dilution, E escape).

# %%
fig = rep.sweep_figure()

# %% [markdown]
# **Plateau 1.** The population loss on the first plateau exceeds $H(\pi)=$ {glue:text}`H_pi:.5f`
# by about $(d-1)/(2N)$: {glue:text}`excess_small:.1e` measured for the smallest $N$
# ({glue:text}`excess_small_pred:.1e` expected), {glue:text}`excess_large:.1e` for the largest
# ({glue:text}`excess_large_pred:.1e` expected).
#
# **Plateau drift.** During the long first plateau the amplitudes drift along the neutral
# directions of $\theta_c^1$; the drift at its end falls from {glue:text}`drift_small:.3f`
# (smallest $Ns$) to {glue:text}`drift_large:.3f` (largest), a log–log slope of
# {glue:text}`drift_slope:.2f` against $Ns$ (the estimate $T/\sqrt{Ns}$ has slope $-1/2$). A large
# drift changes what attention focuses on: the focus time moves by
# {glue:text}`dt_focus_large:.0f` time units at the largest $Ns$ and the stage sequence changes at
# the smallest.
#
# **Short contexts.** The query is part of its own context, with weight $1/s$: a short context
# gives the model a bag-of-tokens path from the query to the prediction that needs no attention,
# like a residual connection of strength $1/s$ — exactly what the reconstruction excludes to keep
# condensation rank-one (spec §4.2). It opens a second embedding direction on the first plateau:
# before any focus, $\sigma_2(W_0)$ reaches {glue:text}`s2_short:.4f` at $s=$ {glue:text}`s_short`
# against {glue:text}`s2_long:.4f` at $s=$ {glue:text}`s_long`.
#
# **θ_c².** At the end the largest run's population loss is {glue:text}`L_end_large:.5f` (seed
# mean), against
# $L(\theta_c^2)=$ {glue:text}`L_c2:.5f` (closed form, δ = 0).

# %% [markdown]
# ## 4. Claims
#
# Every claim on training is a statistic over the {glue:text}`n_seeds` data seeds of each $(N, s)$.
#
# *Plateau 1 (B4 on trained models).* $2N$ times the excess population loss of a maximum-likelihood
# fit of $d-1$ free frequencies is asymptotically $\chi^2_{d-1}$: in units of $(d-1)/(2N)$ the
# excess has mean 1 and standard deviation $\sqrt{2/(d-1)}$ for every $N$. The check pools the runs
# at the largest $s$ over $N$ and seeds (mean {glue:text}`wilks_ratio:.2f`) and asks the 95 % t
# interval of the mean to contain 1 — a fit that ignored the data (0) or over-fitted (≫ 1) fails.
# Its domain is the asymptotic regime, $N\pi_{\min}\ge20$.
# *θ_c² (B14).* Measured **on** each run's own $\theta_c^2$ plateau (the plateau after its first
# dilution; median population loss {glue:text}`L_c2_large:.5f` at the largest $N$, seed mean), not
# at the horizon: at $\delta=0$ sampling noise opens the escape (perturbation 3) and a run may have
# left $\theta_c^2$ by then, or may not have reached it yet (its focus moved by the plateau drift).
# Every run at the largest $s$ that reached the plateau enters, its distance from $L(\theta_c^2)$ in
# units of $3k/(2N)$ ($k=2d+1$ rank-one parameters fitted to $N$ samples, Wilks) plus the
# population run's own distance; the mean must lie within 1 of 0, on top of its t interval. Fewer
# than 3 such runs: outside the domain.
# *Stages (B1, B6) and drift (B5: the neutral directions of $\theta_c^1$).* At least two thirds of the
# seeds of the largest run must go through the population run's stage sequence (a run may add an
# escape at the end: at $\delta=0$ only sampling noise can open that direction, perturbation 3), and
# show a focus followed by a dilution. Finite samples move the onsets (the perturbed plateau state
# sets the amplitude the next stage grows from), so a seed may end the horizon earlier in the
# sequence: it must show the population stages through the first focus and every one starting by
# $T/2$ (room for a delay of 100 %), and agree with the population's order as far as both go
# (plateaus after $\theta_c^1$ are pauses between movements, as in the cycle page's order, and are
# not compared: one run may pause at the top of its focus where another does not). The sequence is
# compared on the hub family only, whose stage time-line the theory gives (as on the cycle page).
# The drift must shrink as $Ns$ grows: the log–log slope of the drift against $Ns$, fitted per
# seed, is negative for at least two thirds of the seeds (with three $Ns$ values per seed the slope
# of one seed scatters by ±0.3, too much for a t interval of three seeds to exclude 0 while every
# seed's slope is negative).

# %% tags=["hide-input"]
rep.check_claims()
claims.finish()
