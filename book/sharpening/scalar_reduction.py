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
# # Proposition 2 — the model reduces to two scalars
#
# The full model has matrices $W_{QK}$ (or $W_Q,W_K$) and $W_{OV}$ (or $W_O,W_V$) with hundreds
# of entries. On the synthetic distinct/common-token task, symmetry leaves only two numbers
# that matter: $a$, the logit the distinct token of class $c$ adds to class $c$, and $b$, the
# attention score of the distinct token minus that of a common token. This page derives the
# two-scalar dynamics *from the full model* in sympy, and then integrates the full model's
# gradient flow to show that it never leaves the two-scalar manifold and follows the reduced
# ODE to solver precision, for all four parametrizations.
#
# ```{prf:proposition} Reduced dynamics of the four parametrizations
# :label: prop-reduced-ode
#
# **[reconstruction]** (the reduced form is the spec's Proposition 2; the constants $c_{OV}$,
# $\kappa$ are derived on this page). Take orthonormal token embeddings, one distinct token per
# class, the query not attending to itself, and a class-symmetric initialization
# (balanced for factorized circuits, $W_O^\top W_O=W_VW_V^\top$, $W_Q^\top W_Q=W_K^\top W_K$).
# Then gradient flow of the population loss keeps the state on a manifold described by $(a,b)$,
# and with $p=e^b/(e^b+n)$, $s=e^{ap}/(e^{ap}+K-1)$, $g=1-s$,
#
# $$\dot a=\eta_{OV}\,c_{OV}\,\rho_{OV}(a)\,p\,g,\qquad
#   \dot b=\eta_{QK}\,\kappa^{m}\,\rho_{QK}(b)\,a\,p(1-p)\,g,$$
#
# with $c_{OV}=1/(K-1)$, $\kappa=\sqrt{1/K+1/M}$; $\rho_{OV}=1$ (collapsed OV) or $2|a|$
# (factorized); $\rho_{QK}=1$, $m=2$ (collapsed QK) or $\rho_{QK}=2|b|$, $m=1$ (factorized).
# The spec's reduced ODE is the case $c_{OV}=\kappa=1$; the full model follows it with
# $\eta_{OV}'=c_{OV}\eta_{OV}$ and $\eta_{QK}'=\kappa^m\eta_{QK}$.
# ```

# %% tags=["parameters"]
n_classes = 5         # K, classes (one distinct token each)
n_common = 3          # M, common tokens in the vocabulary (population size grows like M^n)
n_compete = 9         # n (T − 2), common positions competing with the distinct token
lr_ratio = 1.0        # r, η_QK/η_OV of the full model
a0 = 0.1              # initial OV scalar a₀
b0 = 0.1              # initial QK scalar b₀
d_h = 8               # head dimension of the factorized circuits (≥ K)
embedding = "random"  # "onehot" or "random" (a random orthogonal embedding)
parametrizations = ["CACO", "CAFO", "FACO", "FAFO"]  # circuits to integrate
t_max = 400.0         # horizon of the full-model gradient flow (model time, with η_OV 1)
n_times = 41          # stored times along each trajectory
rtol = 1e-9           # relative tolerance of LSODA (absolute: rtol/100)
seed = 0              # seed of the random orthogonal embedding

# %% tags=["hide-input"]
from attnflow import claims, params
from attnflow.sharpening.contracts import SCALAR_REDUCTION
cfg = params.validate(globals(), SCALAR_REDUCTION)

# %%
from attnflow import device, display, exercises, flow, plotting, seeding
from attnflow.sharpening import data, reduction, symbolic, targets
from attnflow.sharpening.figures import full_model_vs_reduced

seeding.seed_everything(cfg.seed)
plotting.use_style()
task = data.Task(n_classes=cfg.n_classes, n_common=cfg.n_common, seq_len=cfg.n_compete + 2)
const = reduction.constants(task)  # c_OV and κ of this task
display.glue(n_classes_used=cfg.n_classes, n_common_used=cfg.n_common, n_compete_used=cfg.n_compete,
             seq_len=task.seq_len, n_sequences=data.n_compositions(task), rtol_used=cfg.rtol)

# %% [markdown]
# ## 1. Which loss, which n
#
# Everything on this page uses the **population loss**: the exact expectation over the data
# distribution of spec §5.1, with $K$ = {glue:text}`n_classes_used`, $M$ =
# {glue:text}`n_common_used` common tokens, sequences of length $T$ = {glue:text}`seq_len`
# (one distinct token, $n$ = {glue:text}`n_compete_used` common positions, the query last and
# masked out of its own softmax, so $n=T-2$). A model without positional encoding sees a
# sequence as a multiset, so the expectation is a finite sum over the
# {glue:text}`n_sequences` compositions (class × multiset of common tokens), and gradient flow
# is deterministic. The reduced dynamics depend on $M$ only through $\kappa$, which is why a
# small $M$ loses nothing.
#
# ## 2. Symbolic derivation
#
# **The reduced loss.** With $p$ and $s$ as above and $L=-\log s$, sympy differentiates
# $L(a,b)$ and checks the spec's forms (the residuals simplify to zero):

# %%
rg = symbolic.reduced_gradients()  # L(a, b) = −log s, sympy's ∂L/∂a, ∂L/∂b and their residuals
dLda, dLdb = symbolic.reduced_gradient_forms()
display.equation("eq_dLda", dLda, lhs=r"\partial_a L")
display.equation("eq_dLdb", dLdb, lhs=r"\partial_b L")
n_nonzero_reduced = symbolic.count_nonzero(rg.residual_a, rg.residual_b)
n_nonzero_reduced

# %% [markdown]
# **From the full model.** Sympy builds the exact population loss of a small explicit instance
# (one-hot embeddings, symbolic $W_{OV}$ and query row of $W_{QK}$, every composition of the
# context), differentiates it with respect to every entry, and evaluates the gradient on the
# manifold $W_{OV}[:,\mathcal D]=\alpha I+\alpha'(\mathbf 1\mathbf 1^\top-I)$, other columns
# $0$, scores $\beta$ on distinct and $\gamma$ on common tokens. Every entry equals the
# prediction $\partial_\alpha L/K$, $\partial_{\alpha'}L/(K(K-1))$, $\partial_\beta L/K$,
# $\partial_\gamma L/M$ (entry counts of each direction), with $a=\alpha-\alpha'$ and
# $b=\beta-\gamma$: the gradient is tangent to the manifold. Each coordinate then moves at
# $-\eta\,\partial L/\partial\theta\,/\,\|E_\theta\|^2$, which gives, for general $K$ and $M$:

# %%
fm = symbolic.full_model_reduction(K=3, M=2, T=4)  # the explicit instance, every composition of the context
display.glue(fm_sequences=fm.n_sequences, fm_entries=len(fm.residual))
display.equation("eq_c_ov", fm.c_ov, lhs=r"c_{OV}=\frac1{\|E_\alpha\|^2}+\frac1{\|E_{\alpha'}\|^2}")
display.equation("eq_kappa2", fm.kappa2, lhs=r"\kappa^2=\frac1{\|E_\beta\|^2}+\frac1{\|E_\gamma\|^2}")
display.equation("eq_a_dot_collapsed", fm.a_dot, lhs=r"\dot a")
display.equation("eq_b_dot_collapsed", fm.b_dot, lhs=r"\dot b")

# %% [markdown]
# The explicit instance ($K=3$, $M=2$, $T=4$: {glue:text}`fm_sequences` compositions,
# {glue:text}`fm_entries` gradient entries) has every residual equal to zero.
#
# **Factorized circuits.** On the manifold the OV block is $aP$ with $P=I-\mathbf 1\mathbf 1^\top/K$:
# $K-1$ equal singular values $|a|$, so $(WW^\top)^{1/2}=|a|P$ and Lemma 1 (item 3,
# {prf:ref}`lemma-rescaling`) doubles the rate by $|a|$. The QK score row is rank one,
# $W_{QK}=\theta\hat E$ with $b=\kappa\theta$, so the scalar Lemma 1 gives $2|\theta|=2|b|/\kappa$:

# %%
fr = symbolic.factorized_rates(K=3)
display.equation("eq_a_dot_fo", fr.a_dot, lhs=r"\dot a_{\text{FO}}")
display.equation("eq_b_dot_fa", fr.b_dot, lhs=r"\dot b_{\text{FA}}")
n_nonzero_full = symbolic.count_nonzero(fm.residual, fm.rate_residual, fr.ov_sqrt_residual)
n_nonzero_full  # residuals of the full-model gradient on the manifold, of its rates and of (WWᵀ)^½ = |a|P

# %% [markdown]
# Relative to its collapsed counterpart ($-\eta c_{OV}\partial_aL$, $-\eta\kappa^2\partial_bL$) the
# factorized OV circuit moves $2|a|$ times faster and the factorized QK circuit $2|b|/\kappa$
# times faster: $\rho_{OV}=2|a|$ exactly, but on the full model $\rho_{QK}$ carries the extra
# factor $1/\kappa$, which the spec's normalized ODE ($\kappa=1$) hides.
#
# **Exercise.** Evaluate the two constants of the reduction for this page's $K$ =
# {glue:text}`n_classes_used` and $M$ = {glue:text}`n_common_used` (`cfg.n_classes`,
# `cfg.n_common`) from the general formulas above: `c_ov_mine` $=c_{OV}$ and
# `kappa_mine` $=\kappa$. They are checked against the constants the full-model experiment
# below uses (`attnflow.sharpening.reduction.constants`).

# %% tags=["exercise"]
### BEGIN SOLUTION
c_ov_mine = 1 / (cfg.n_classes - 1)
kappa_mine = (1 / cfg.n_classes + 1 / cfg.n_common) ** 0.5
### END SOLUTION

# %% tags=["exercise-check"]
exercises.check("c_ov_mine", c_ov_mine, expected=const.c_ov, rtol=1e-12, hint="c_OV = 1/(K − 1)")
exercises.check("kappa_mine", kappa_mine, expected=const.kappa, rtol=1e-12, hint="κ² = 1/K + 1/M")

# %% [markdown]
# ## 3. The full model follows the reduced ODE
#
# For each parametrization we build the torch model (`attnflow.sharpening.model`), put it on the
# manifold at $(a_0,b_0)$ (`reduction.init_on_manifold`: symmetric collapsed matrices, balanced
# factors), integrate its gradient flow with `attnflow.flow.integrate` (float64, LSODA with the
# autograd Hessian as Jacobian, relative tolerance {glue:text}`rtol_used:.0e`), read $a(t)$,
# $b(t)$ and the distance from the manifold off the matrices, and integrate the reduced ODE
# with $\eta_{OV}'=c_{OV}\eta_{OV}$, $\eta_{QK}'=\kappa^m\eta_{QK}$. The embedding is
# {glue:text}`embedding_used` (a random orthogonal embedding makes every matrix dense, so the
# reduction is not an artefact of one-hot coordinates).

# %%
embedding_seed = cfg.seed if cfg.embedding == "random" else None  # None: one-hot tokens
with device.single_threaded():
    runs = {name: reduction.compare_with_reduced(name, task, lr_qk=cfg.lr_ratio, lr_ov=1.0, a0=cfg.a0, b0=cfg.b0,
                                                 t_max=cfg.t_max, n_times=cfg.n_times, d_h=cfg.d_h,
                                                 embedding_seed=embedding_seed, rtol=cfg.rtol)
            for name in cfg.parametrizations}
display.table([c.row() for c in runs.values()])

# %%
dev_max = max(c.deviation for c in runs.values())  # |Δ(a, b)| relative to each trajectory's scale
residual_max = max(c.off_manifold for c in runs.values())
entry_scale = max(c.scale for c in runs.values())  # the largest |a|, |b| of the reduced trajectories
spec = reduction.constants(data.Task(n_classes=targets.FULL_CONFIG["n_classes"],
                                     n_common=targets.FULL_CONFIG["n_common"], seq_len=targets.FULL_CONFIG["seq_len"]))
display.glue(dev_max=dev_max, residual_max=residual_max, entry_scale=entry_scale, c_ov=const.c_ov,
             kappa=const.kappa, ratio_ca=spec.kappa**2 / spec.c_ov, ratio_fa=spec.kappa / spec.c_ov,
             embedding_used="a random orthogonal matrix" if cfg.embedding == "random" else "one-hot")
fig = full_model_vs_reduced(runs, title=f"Proposition 2: population gradient flow of the full model, "
                                        f"K={cfg.n_classes}, "
                                        f"M={cfg.n_common}, n={cfg.n_compete}, r={cfg.lr_ratio:g}")

# %% [markdown]
# The full model's $(a,b)$ and the reduced ODE agree to {glue:text}`dev_max:.1e` of the
# trajectory's scale, and the state's largest distance from the manifold is
# {glue:text}`residual_max:.1e` — float64 round-off: the two-scalar manifold is invariant. Here
# $c_{OV}$ = {glue:text}`c_ov:.4f` and $\kappa$ = {glue:text}`kappa:.4f`.
#
# ```{admonition} What this means for the spec's full-model experiments
# :class: note
# With the spec's generator ($K=5$, $M=20$) the full model is the normalized reduced ODE with
# ratio $r'=\eta_{QK}'/\eta_{OV}'=\kappa^m(K-1)\,r$: {glue:text}`ratio_ca:.3g`$\,r$ for a
# collapsed QK circuit but {glue:text}`ratio_fa:.3g`$\,r$ for a factorized one. At equal
# learning rates a full FAFO model therefore behaves like the reduced FAFO at twice the ratio,
# which sharpens it towards CACO. This is recorded as evidence for open questions Q2 and Q7 on
# the [errata page](../errata.md).
# ```
#
# ## 4. Claims
#
# Tolerances. Symbolic residuals must simplify to exactly zero. The full-model flow and the
# reduced ODE are two independent adaptive solutions at relative tolerance `rtol`; their global
# error may accumulate to a few hundred times `rtol` over the horizon, so we allow
# $10^3\times$`rtol` relative to the trajectory's scale (as on {prf:ref}`lemma-rescaling`), and
# call the comparison outside its domain when that exceeds $10^{-4}$. The distance from the
# manifold is not a solver error at all — the solver's linear combinations of symmetric states
# are symmetric — so it must stay at round-off level, $10^{-10}$ (ten thousand solver steps of
# $10^{-16}$ relative error on entries of size $\lesssim 10$; for larger entries the bound
# grows with them: here the largest $|a|,|b|$ is {glue:text}`entry_scale:.3g`).

# %%
claims.check("A2", n_nonzero_reduced, 0, atol=0, what="Prop. 2, sympy: nonzero residuals of ∂L/∂a, ∂L/∂b (spec §5.2)")
claims.check("A2", n_nonzero_full, 0, atol=0,
             what="Prop. 2, sympy: nonzero residuals of the full-model gradient on the manifold and of the rates")
manifold_tol = 1e-10 * max(1.0, entry_scale / 10)  # round-off on entries of size ≲ 10, growing with them
for name, c in runs.items():
    claims.check("A2", c.deviation, 0.0, atol=flow.agreement_tolerance(cfg.rtol),
                 domain=flow.agreement_domain(cfg.rtol),
                 what=f"Prop. 2, {name}: full-model flow vs reduced ODE, max |Δ(a,b)| / scale")
    claims.check("A2", c.off_manifold, 0.0, atol=manifold_tol, what=f"Prop. 2, {name}: max distance from the manifold")
claims.finish()
