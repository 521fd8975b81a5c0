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
# # Lemma 1 — factorization rescales the learning rate
#
# A circuit can be learned as one matrix $W_{QK}$ (*collapsed*) or as a product
# $W_QW_K^\top$ (*factorized*). Gradient flow on the factors is not gradient flow on the
# product: it is gradient flow on the product **with a learning rate that depends on where
# the product is**. This page derives that statement symbolically, checks it against autograd
# on random matrices, and integrates both flows to show that they are the same trajectory.
#
# ```{prf:lemma} Factorization is a state-dependent learning-rate rescaling
# :label: lemma-rescaling
#
# **[paper]** claim {cite:p}`vashisht26a`; **[prior work]** proof
# {cite:p}`arora2018optimization,du2018algorithmic`. Let $W_{QK}=W_QW_K^\top$ with
# $W_Q,W_K\in\mathbb R^{d\times d_h}$, trained by $\dot W_Q=-\eta_{QK}\nabla_{W_Q}L$,
# $\dot W_K=-\eta_{QK}\nabla_{W_K}L$, and let $G=\nabla_{W_{QK}}L$. Then
#
# 1. $W_Q^\top W_Q-W_K^\top W_K$ is constant in time (balancedness is conserved);
# 2. $\dot W_{QK}=-\eta_{QK}\big(W_QW_Q^\top G+G\,W_KW_K^\top\big)$;
# 3. if $W_Q^\top W_Q=W_K^\top W_K$ at $t=0$, then
#    $\dot W_{QK}=-\eta_{QK}\big((W_{QK}W_{QK}^\top)^{1/2}G+G\,(W_{QK}^\top W_{QK})^{1/2}\big)$.
#
# In the scalar case $b=qk$ with imbalance $\delta=q^2-k^2$:
# $\dot b=-\eta_{QK}\sqrt{4b^2+\delta^2}\,\partial_bL$, i.e. $-2\eta_{QK}|b|\,\partial_bL$ when balanced.
# The same holds for the output-value pair $(W_O,W_V)$.
# ```

# %% tags=["parameters"]
d = 4                 # embedding dimension d (W_QK is d×d)
d_h = 3               # head dimension d_h of the factors (≤ d)
n_keys = 6            # keys per query T in the pointer loss
n_samples = 64        # queries in the fixed batch that defines the loss
init_scale = 1.0      # largest singular value of the balanced initial factors
lr_qk = 1.0           # learning rate η_QK
t_max = 20.0          # gradient-flow horizon
n_times = 200         # stored times along each trajectory
imbalances = [0.0, 0.5, 2.0]  # imbalances δ (q² − k²) for the scalar example (at most 8)
rtol = 1e-10          # relative tolerance of the ODE solver (absolute one: rtol/100)
seed = 0              # seed of the task and of the initial factors

# %% tags=["hide-input"]
from attnflow import claims, params
from attnflow.sharpening.contracts import LEMMA1_RESCALING
cfg = params.validate(globals(), LEMMA1_RESCALING)

# %%
import sympy as sp

from attnflow import display, exercises, plotting, seeding
from attnflow.sharpening.reports.lemma1_rescaling import lemma1_report

seeding.seed_everything(cfg.seed)
plotting.use_style()
rep = lemma1_report(cfg)   # sympy identities, autograd at t = 0, the three flows, the scalar example
glued = rep.glue()

# %% [markdown]
# ## 1. Symbolic derivation
#
# Write $\partial L/\partial q = k\,L'(qk)$ and $\partial L/\partial k = q\,L'(qk)$ (chain rule
# through $b=qk$). Sympy differentiates $b=qk$ and $q^2-k^2$ along the factor flow:

# %%
display.equation("eq_b_dot", sp.factor(rep.scalar.b_dot), lhs=r"\dot b")
display.equation("eq_imbalance_dot", rep.scalar.imbalance_dot, lhs=r"\tfrac{d}{dt}(q^2-k^2)")
display.equation("eq_rate_identity", rep.scalar.rate_identity, lhs=r"(q^2+k^2)-\sqrt{4(qk)^2+(q^2-k^2)^2}")

# %% [markdown]
# So $\dot b=-\eta\,(q^2+k^2)\,L'(b)$, the imbalance $\delta=q^2-k^2$ is constant, and
# $q^2+k^2=\sqrt{4b^2+\delta^2}$: the factorized scalar moves like a collapsed one whose
# learning rate is multiplied by $\rho(b)=\sqrt{4b^2+\delta^2}$ ($=2|b|$ when balanced). Small
# circuits learn slowly, large ones fast.
#
# For matrices the same computation is done entrywise with fully symbolic
# $2\times2$ factors and a symbolic gradient $G$ (any loss gives
# $\nabla_{W_Q}L=GW_K$, $\nabla_{W_K}L=G^\top W_Q$). The residuals of items 1 and 2 simplify to
# the zero matrix:

# %%
display.equation("eq_matrix_residual", rep.matrix.residual, lhs=r"\dot W_{QK}+\eta\,(W_QW_Q^\top G+G\,W_KW_K^\top)")
display.equation("eq_balancedness", rep.matrix.balancedness_dot, lhs=r"\tfrac{d}{dt}(W_Q^\top W_Q-W_K^\top W_K)")

# %% [markdown]
# ## 2. Autograd on random matrices
#
# Item 3 involves matrix square roots, which sympy cannot simplify in general; we check it,
# together with item 2, against autograd. The loss is a generic query–key loss (a query points
# at one of $T$ keys through $\mathrm{softmax}_i(x_q^\top W_{QK}x_{k,i})$), because the lemma
# holds for any loss of $W_{QK}$. The balanced initial factors are $W_Q=USV^\top$,
# $W_K=U'SV^\top$ with orthonormal $U,U'$.
#
# Both forms agree with autograd to {glue:text}`err_item2:.1e` and
# {glue:text}`err_item3:.1e` (relative to the largest entry of $\dot W_{QK}$): float64
# round-off.
#
# **Exercise.** Compute the rate of item 2, $\dot W_{QK}=-\eta_{QK}(W_QW_Q^\top G+G\,W_KW_K^\top)$,
# from the initial factors `rep.W_q0`, `rep.W_k0` (torch tensors, $d\times d_h$), the gradient
# `rep.G` $=\nabla_{W_{QK}}L$ and `cfg.lr_qk`, and call it `rate_mine`. It is checked against
# the autograd rate `rep.W_dot` of the factor flow.

# %% tags=["exercise"]
### BEGIN SOLUTION
rate_mine = -cfg.lr_qk * (rep.W_q0 @ rep.W_q0.T @ rep.G + rep.G @ rep.W_k0 @ rep.W_k0.T)
### END SOLUTION

# %% tags=["exercise-check"]
exercises.check("rate_mine", rate_mine, expected=rep.W_dot.numpy(), rtol=1e-10, atol=1e-14,
                hint="matrix products with @; W_Q W_Qᵀ multiplies G from the left, W_K W_Kᵀ from the right")

# %% [markdown]
# ## 3. Integrating the flows
#
# Three trajectories from the same $W_{QK}(0)=W_Q(0)W_K(0)^\top$, each integrated in float64
# with LSODA at relative tolerance {glue:text}`rtol_used:.0e`:
#
# - **factorized**: gradient flow on $(W_Q,W_K)$, reported as $W_QW_K^\top$;
# - **rescaled collapsed**: the collapsed ODE of item 3, with the state-dependent rate;
# - **plain collapsed**: gradient flow on $W_{QK}$ at the same $\eta_{QK}$, for contrast.

# %%
fig, = rep.figures()

# %% [markdown]
# The factorized trajectory and the rescaled collapsed ODE coincide to
# {glue:text}`dev_rescaled:.1e` (largest entry difference over the whole trajectory, relative
# to the largest entry), while the plain collapsed flow at the same learning rate ends up
# {glue:text}`dev_collapsed:.2f` away: factorization genuinely changes the speed. The
# balancedness $W_Q^\top W_Q-W_K^\top W_K$ drifts by at most {glue:text}`balance_drift:.1e`
# and, in the scalar example, $b=qk$ matches the rescaled ODE to {glue:text}`dev_scalar:.1e`
# for every imbalance $\delta$ — the larger $\delta$, the faster the early growth, exactly as
# $\sqrt{4b^2+\delta^2}$ predicts.
#
# ## 4. Claims
#
# Tolerances. Symbolic identities must simplify to *exactly* zero. Autograd comparisons are
# float64 evaluations of the same quantity in different orders, so they agree to round-off
# ($10^{-12}$ relative leaves room for the eigendecomposition in the matrix square root); item 3
# needs balanced factors at $t=0$ (checked: relative imbalance {glue:text}`imbalance0:.0e`).
# Trajectory comparisons compare two independent adaptive solutions at relative tolerance
# `rtol`; their global error grows at most like the loss-Lipschitz constant times the horizon,
# so we allow $10^3\times$`rtol` $=$ {glue:text}`tol_traj:.0e`. They are outside their domain
# when that tolerance exceeds $10^{-4}$ (a loose solver shows nothing).
# The plain collapsed flow must differ by more than $10^{-2}$; this is predicted when the
# first-order separation of the two flows, $t_{\max}\,\|\dot W_{\text{rescaled}}(0)-\dot
# W_{\text{plain}}(0)\|/\|W(0)\|$ = {glue:text}`separation_predicted:.2f`, is at least 0.1
# (a short horizon, or singular values near $1/\sqrt2$ where the two rates almost coincide,
# leave the flows together).

# %% tags=["hide-input"]
rep.check_claims()
claims.finish()
