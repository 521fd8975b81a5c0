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
from attnflow import display, plotting, seeding, stats
from attnflow.sharpening import data, experiments, figures, reduced, reduction, targets

seeding.seed_everything(cfg.seeds[0])
plotting.use_style()

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
# reduced ODE is exact. All models are trained together, as one batched computation; then each
# is evaluated on {glue:text}`n_test` held-out sequences of its seed, and the models are arranged
# as (parametrization × seed) arrays at their stop (`experiments.by_parametrization`).

# %%
task = data.Task(cfg.n_classes, cfg.n_common, cfg.seq_len)
gaussian = experiments.grid(cfg.parametrizations, [1.0], cfg.seeds, [cfg.lr], [cfg.init_scale])  # every seed
manifold = experiments.grid(cfg.parametrizations, [1.0], [cfg.seeds[0]], [cfg.lr], [cfg.ode_init], init="manifold")
specs = gaussian + manifold  # the balanced models last
exp = experiments.run(
    specs, task, n_train=cfg.n_train, n_test=cfg.n_test, steps=cfg.max_steps, target_loss=cfg.target_loss,
    record_every=cfg.record_every, attend_self=cfg.attend_self, device=cfg.device,
)
print(exp.describe())
held_out = experiments.evaluate(exp)                            # test metrics (P,) at each model's stop
res = experiments.by_parametrization(exp, held_out)              # random inits: (parametrization, seed)
balanced = experiments.by_parametrization(exp, held_out, init="manifold")  # one balanced model each
display.glue(
    K=task.n_classes, M=task.n_common, T=task.seq_len, N=cfg.n_train, d=task.vocab_size,
    n_compete=task.n_compete(cfg.attend_self), init_scale=cfg.init_scale, lr=cfg.lr,
    target_loss=cfg.target_loss, n_seeds=len(cfg.seeds), ode_init=cfg.ode_init, n_test=cfg.n_test,
    mass_FACO=res.mean("FACO"), mass_CACO=res.mean("CACO"), mass_FAFO=res.mean("FAFO"),
    mass_CAFO=res.mean("CAFO"), mass_lo_FAFO=res.of("FAFO").min(), mass_hi_FAFO=res.of("FAFO").max(),
    balanced_FAFO=balanced.mean("FAFO"), fafo_above=res.count_above("FAFO", "CACO"),
)
fig = figures.training_at_matched_loss(
    exp, title=f"Four parametrizations, GD η={cfg.lr:g}, init σ={cfg.init_scale:g}/√d; "
    f"each line ends at L*={cfg.target_loss:g}",
)

# %% [markdown]
# Read the left panel at the dotted line: all models have the same training loss there, yet
# FACO attends to the distinct token with mass {glue:text}`mass_FACO:.3f`, CACO with
# {glue:text}`mass_CACO:.3f`, FAFO with {glue:text}`mass_FAFO:.3f` and CAFO with only
# {glue:text}`mass_CAFO:.3f` (means over seeds). Accuracy is already 1 long before the
# matched loss is reached: the parametrizations differ in *how* they reach the same loss, not
# in what they predict. The table lists the per-seed range and the held-out metrics.

# %%
display.table(res.rows(), floatfmt="{:.4f}")

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
# $L^*$ (correct-class probability $s=e^{-L^*}$, `reduced.attention_at_loss`) and compare with
# the full model from the balanced state and from the random initializations.

# %%
const = reduction.constants(task, cfg.attend_self)
r_exact = reduction.reduced_ratios(const, cfg.lr, cfg.lr)        # {parametrization: r'} at η_QK = η_OV
ode = {"n_compete": const.n_compete, "n_classes": task.n_classes, "a0": cfg.ode_init, "b0": cfg.ode_init}
ode_uniform = reduced.attention_at_loss(dict.fromkeys(r_exact, 1.0), cfg.target_loss, **ode)  # r' = 1, spec §8.1
ode_exact = reduced.attention_at_loss(r_exact, cfg.target_loss, **ode)  # the rates this model follows
gap_balanced = balanced.largest_gap(ode_exact)                    # max |balanced full model − exact ODE|
display.glue(
    r_eff_CA=r_exact["CACO"], r_eff_FA=r_exact["FACO"], gap_balanced=gap_balanced,
    ode_uniform_CACO=ode_uniform["CACO"], ode_uniform_FAFO=ode_uniform["FAFO"],
    ode_exact_CACO=ode_exact["CACO"], ode_exact_FAFO=ode_exact["FAFO"],
)
fig = figures.orderings_at_matched_loss(res, balanced, ode_uniform, ode_exact, cfg.target_loss)

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
# unresolved: it depends on the rate constants of the task and on the initialization. In one
# line, FAFO minus CACO under each variant:

# %%
print(
    f"FAFO > CACO in {res.count_above('FAFO', 'CACO')} of {len(res.seeds)} seeds (random init); "
    f"ODE r'=1: {ode_uniform['FAFO'] - ode_uniform['CACO']:+.3f}; "
    f"ODE exact: {ode_exact['FAFO'] - ode_exact['CACO']:+.3f}; "
    f"balanced full model: {balanced.mean('FAFO') - balanced.mean('CACO'):+.3f}"
)

# %% [markdown]
# ## 3. Claims
#
# Claims about random training are checked on the **mean over seeds with its 95% Student-t
# interval** (`claims.check_mean`; the width comes from the measured seed-to-seed spread), and
# need at least 3 seeds; with fewer they are recorded as outside their domain.
#
# - *Matched loss* (protocol, a precondition of every claim below, not a claim): every model
#   must reach $L^*$ and stops at the first step below it, so its loss is $L^*$ minus at most
#   one GD step's decrease. We require all stop losses within `MAX_OVERSHOOT` $=5\%$ of $L^*$:
#   along the left panel's curves a $5\%$ change of the loss moves the attention mass by far
#   less than the gaps between parametrizations. That requirement is made for steps
#   $\eta\le$ `LR_MATCHED` $=0.1$ — at $\eta=0.1$ the overshoot is well below $1\%$; at $0.3$ it
#   was measured at $5.6\%$, and steps of 1 or more overshoot by more ({doc}`where_it_breaks`).
# - *A1*: the parametrizations differ by more than `SPREAD_MIN` $=0.2$ in attention mass at the
#   same loss: the per-seed range (sharpest minus least sharp) has its interval above 0.2
#   (domain: FACO and CAFO both trained).
# - *A7, firm*: the margin of FACO over the next sharpest parametrization, and of the least
#   sharp other one over CAFO, is positive in most seeds (a paired sign claim: on a few seeds
#   the t-interval of a consistently signed but uneven margin can reach 0, so the statistic is
#   the share of seeds, decided on its one-sided 95% Wilson lower bound — on 3 or 4 seeds that
#   means every seed); the mean attention of both collapsed-OV models has its interval above
#   0.8 (domain: $L^*\le 0.1$, since attention keeps sharpening as the loss falls).
# - *A7, regression targets of spec §8.2* (full model, GD 0.1, init $0.1/\sqrt d$; domain: that
#   configuration): the seed mean must match FACO 0.99 (atol 0.005, the spec's seed range
#   0.990–0.991 plus finite-sample noise of the training set), CACO 0.84 (atol 0.01), CAFO 0.55
#   (atol 0.02; spec range 0.53–0.55) within its interval plus that atol (`SPEC_TOLERANCES`).
#   FAFO is the seed-sensitive entry: the spec's three seeds gave 0.79, 0.88 and 0.82, a range
#   and not a bound for each seed, so the seed mean is compared with their mean 0.83 within the
#   95% half-width of the spec's own 3-seed mean.
# - *Reduction*: the balanced full model matches the exact-rate ODE within 0.01 (GD step
#   $\eta$ against the flow, and a sampled training set of $N$ sequences against the
#   population; domain $\eta\le$ `LR_REDUCTION` $=0.1$, $N\ge 1000$: at $\eta=0.3$ the gap reached
#   0.016 with $L^*=0.2$, a discretization effect rather than a failure of the reduction).

# %%
MAX_OVERSHOOT = 0.05   # matched loss: every stop loss within 5% of L*
LR_MATCHED = 0.1       # largest GD step where the stop loss was measured within 5% of L* (0.3: 5.6%)
SPREAD_MIN = 0.2       # A1, "qualitatively different": a range of attention mass above 0.2 at the same loss
SPEC_TOLERANCES = {"FACO": 0.005, "CACO": 0.01, "CAFO": 0.02}  # atol on the seed mean against spec §8.2
LR_REDUCTION = 0.1     # GD step where the balanced model was measured within 0.01 of the ODE (0.3: 0.016)

claims.precondition(
    "every model reaches the matched training loss L*", exp.reached.all(), f"all reached: {exp.reached.all()}"
)
if exp.reached.all() and cfg.lr <= LR_MATCHED:  # the stop step lands within 5% of L*
    claims.precondition(
        f"every model stops within {MAX_OVERSHOOT:.0%} below L* (GD step η ≤ {LR_MATCHED:g})",
        exp.overshoot() <= MAX_OVERSHOOT * cfg.target_loss,
        f"largest L* − loss at the stop step {exp.overshoot():.3g}",
    )
seeds = stats.enough_seeds(len(cfg.seeds))
trained = ", ".join(res.names)
both = claims.domain(("FACO and CAFO both trained", {"FACO", "CAFO"} <= set(res.names), trained), seeds)
claims.check_mean(
    "A1", res.spread(), above=SPREAD_MIN, what="range of attention mass across parametrizations at L*",
    source="paper", domain=both,
)
claims.check_share(
    "A7", res.lead("FACO") > 0, above=0.5, source="reconstruction", domain=both,
    what="FACO minus the next sharpest parametrization, attention mass at L*, > 0 in most seeds "
    f"(per seed {res.lead('FACO').round(4).tolist()})",
)
claims.check_share(
    "A7", res.lag("CAFO") > 0, above=0.5, source="reconstruction", domain=both,
    what="least sharp other parametrization minus CAFO, attention mass at L*, > 0 in most seeds "
    f"(per seed {res.lag('CAFO').round(4).tolist()})",
)
loss_ok = ("L* ≤ 0.1 (attention sharpens as the loss falls)", cfg.target_loss <= 0.1, f"L* = {cfg.target_loss:g}")
for n in ("CACO", "FACO"):
    claims.check_mean(
        "A7", res.of(n), above=0.8, what=f"{n}: attention mass at L*", source="paper",
        domain=claims.domain((f"{n} trained", n in res.names, trained), seeds, loss_ok),
    )
spec = (
    "configuration of spec §8.2 (K=5, M=20, T=12, η=0.1, σ=0.1/√d, L*=0.1)",
    targets.is_full_config(
        n_classes=task.n_classes, n_common=task.n_common, seq_len=task.seq_len, gd_lr=cfg.lr,
        init_std=cfg.init_scale, loss_target=cfg.target_loss,
    ),
    f"K={task.n_classes}, M={task.n_common}, T={task.seq_len}, η={cfg.lr:g}, σ={cfg.init_scale:g}, "
    f"L*={cfg.target_loss:g}",
)
for n, tol in SPEC_TOLERANCES.items():
    claims.check_mean(
        "A7", res.of(n), target=targets.FULL_MASS[(n, 1.0)], margin=tol, what=f"{n}: attention mass at L* (spec §8.2)",
        source="reconstruction", domain=claims.domain((f"{n} trained", n in res.names, trained), seeds, spec),
    )
fafo_spec = stats.mean_interval(targets.FULL_MASS_SEEDS[("FAFO", 1.0)])  # the spec's 3 FAFO seeds
claims.check_mean(
    "A7", res.of("FAFO"), target=fafo_spec.mean, margin=fafo_spec.half_width,
    what="FAFO: attention mass at L* (spec §8.2: mean of the seeds 0.79, 0.88, 0.82)",
    tolerance="seed-sensitive entry: equivalence within the 95 % half-width of the spec's own "
    f"3-seed mean, ±{fafo_spec.half_width:.3f}",
    source="reconstruction",
    domain=claims.domain(("FAFO trained", "FAFO" in res.names, trained), seeds, spec),
)
claims.check(
    "A7", gap_balanced, 0.0, atol=0.01, what="balanced full model vs exact-rate reduced ODE, max |Δp| at L*",
    source="reconstruction",
    domain=claims.domain(
        (f"GD step η ≤ {LR_REDUCTION:g} (Euler steps close to the flow)", cfg.lr <= LR_REDUCTION, f"η = {cfg.lr:g}"),
        ("N ≥ 1000 training sequences (sampling error of the population)", cfg.n_train >= 1000, f"N = {cfg.n_train}"),
    ),
)
claims.finish()
