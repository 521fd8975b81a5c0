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
# # The unigram saddle $\theta_c^1$ and its unstable attention mode
#
# Condensation ({doc}`condensation`) ends at a critical point where the model predicts the
# stationary distribution $\pi$ for every query: the **unigram** solution, with loss $H(\pi)$.
# It is a saddle. The embedding block of the Jacobian is neutral or contractive, but the
# attention block has one unstable mode, which grows slowly: the loss sits on a long plateau
# while $\kappa=u^\top W_QW_K^\top u$ grows exponentially at rate $2g$. This page derives
# $\theta_c^1$ and $g$ symbolically, checks the block structure of the Jacobian with autograd, and
# measures the growth of $\kappa$ on the exact population flow; a random chain then separates the
# two directions that $W_1$ passes through.
#
# ```{prf:proposition} The unigram saddle
# :label: prop-unigram-saddle
#
# **[paper]** {cite:p}`chen2026focus`: the flow reaches a critical point $\theta_c^1$, a saddle
# whose $(W_0,W_1)$ subsystem is contractive or neutrally stable while the attention subsystem
# has a single unstable mode. **[reconstruction]** (spec R2): on the rank-one manifold
# $W_0=au^\top$, $W_1=ub^\top$, $u^\top W_QW_K^\top u=\kappa$,
#
# $$\theta_c^1:\quad a^*=\alpha\pi,\quad b^*=\frac{\ell}{\alpha\|\pi\|^2},\quad\kappa=0,\qquad
#   \alpha^2=\frac{\|\ell\|}{\|\pi\|^3},\qquad \ell=\log\pi-\tfrac1d(\mathbf 1^\top\log\pi)\mathbf 1,$$
#
# so $\hat P_{i\cdot}=\pi$ for every query, $L(\theta_c^1)=H(\pi)$, $\|W_0\|_F=\sqrt{\|\ell\|/\|\pi\|}$ and
# $W_1\parallel\ell$. The Jacobian at $\theta_c^1$ is block-diagonal; the attention block, with
# $q=W_Q^\top u$, $k=W_K^\top u$, is $\dot q=gk$, $\dot k=gq$ with eigenvalues $+g$ on $\{q=k\}$,
# $-g$ on $\{q=-k\}$ and $0$ elsewhere, where
#
# $$g=-\partial_\kappa L(\theta_c^1)=c\,\frac{\|\ell\|}{\|\pi\|^5}\,\mathrm{Var}_\pi(\pi)\;
#   \ell^\top\big(P^\top(\pi\odot\pi)-\|\pi\|^2\pi\big),\qquad
#   \mathrm{Var}_\pi(\pi)=\textstyle\sum_k\pi_k^3-\big(\sum_k\pi_k^2\big)^2 .$$
#
# Hence $\kappa\approx\tfrac14\|q_0+k_0\|^2e^{2gt}$ on the plateau.
# ```

# %% tags=["parameters"]
chain = "hub"           # 'hub' (spec §5.2 family) or 'dirichlet' (random rows, d = n_low + 1)
n_low = 4               # n, low-frequency tokens (d = n + 1)
a_h = 0.5               # P(hub → hub)
b_h = 0.3               # P(low → hub)
c_cyc = 0.4             # extra mass on the cyclic successor of a low token
delta = 0.0             # asymmetry δ among the low tokens
chain_seed = 0          # seed of the Dirichlet chain (chain = 'dirichlet')
d_model = 8             # m, embedding width
init_scale = 1e-3       # ε, initialization std
score_scale = 1.0       # c, attention score scale
seed = 1                # initialization seed (1 = the spec's listing)
horizon = 1500.0        # end time of the flow through the plateau (extended to cover the κ window)
kappa_window = [2.0, 3.5]  # κ-rate fit window after condensation, in units of 1/|g| (≈ spec's [800, 1300])
random_d = 6            # vocabulary of the random Dirichlet chain of claim B17
random_seed = 0         # its seed (0 in the spec)
random_horizon = 600.0  # end time of its flow (600 in the spec)

# %%
from attnflow import claims, params
from attnflow.focus_dilution.schemas import UNIGRAM_SADDLE
cfg = params.validate(globals(), UNIGRAM_SADDLE)

# %%
import time

import numpy as np
import sympy as sp

from attnflow import display, plotting
from attnflow.focus_dilution import closed_forms, measure, model, runs, spectrum, symbolic
from attnflow.focus_dilution.chain import dirichlet_chain
from attnflow.focus_dilution.schemas import is_reference, start_page
from attnflow.focus_dilution.targets import SPEC, half_unit
from attnflow.plotting import PALETTE, STAGE_COLORS

markov, reference = start_page(cfg)

# %% [markdown]
# ## 1. The saddle and its rate, symbolically
#
# Sympy works on a **general stationary chain on three tokens** (joint matrix $F=\Pi P$ with
# equal row and column sums, so $\pi^\top P=\pi^\top$ holds by construction) and on the rank-one
# reduced loss $L_1(a,b,\kappa)$, with $\alpha$ left free (the rescaling $a\to sa$, $b\to b/s$
# leaves $L$ unchanged; balancedness $\|a\|=\|b\|$, conserved from a small initialization, fixes
# it). Derivatives go through the logits by the chain rule, exactly as autograd does. Each
# identity below is the residual that sympy reduces to zero:

# %%
_start = time.perf_counter()
saddle = symbolic.unigram_saddle(3)
block = symbolic.attention_block(2)
symbolic_s = time.perf_counter() - _start
display.equation("eq_phat", saddle.P_hat_residual, lhs=r"\hat P(\theta_c^1)-\mathbf 1\pi^\top")
display.equation("eq_loss", saddle.loss_residual, lhs=r"L(\theta_c^1)-H(\pi)")
display.equation("eq_grad", sp.Matrix.hstack(saddle.grad_a, saddle.grad_b),
                 lhs=r"\big[\nabla_aL_1\ \ \nabla_bL_1\big]_{\theta_c^1}")
display.equation("eq_balance", saddle.balance_residual,
                 lhs=r"\|a^*\|^2-\|b^*\|^2\ \text{at}\ \alpha^2=\|\ell\|/\|\pi\|^3")
display.equation("eq_g", saddle.g_residual,
                 lhs=r"-\partial_\kappa L_1(\theta_c^1)-\frac{c\,\alpha^2\,\mathrm{Var}_\pi(\pi)\,"
                     r"\ell^\top\!\left(P^\top(\pi\odot\pi)-\|\pi\|^2\pi\right)}{\|\pi\|^2}")
display.equation("eq_block", sp.Dict({sp.Symbol("g"): block.eigenvalues[sp.Symbol("g", positive=True)],
                                      -sp.Symbol("g"): block.eigenvalues[-sp.Symbol("g", positive=True)],
                                      0: block.eigenvalues[0]}),
                 lhs=r"\text{eigenvalues of }-\nabla^2_{(W_Q,W_K)}L\ (m=2)\ \text{with multiplicities}")
n_nonzero_saddle = sum(int(not symbolic.is_zero(e)) for e in
                       [*saddle.P_hat_residual, saddle.loss_residual, *saddle.grad_a, *saddle.grad_b,
                        saddle.balance_residual, saddle.g_residual])
display.number("symbolic_s", symbolic_s)

# %% [markdown]
# With $\alpha^2=\|\ell\|/\|\pi\|^3$ the expression of $g$ becomes the boxed one. The attention
# block follows from $L$ depending on $(W_Q,W_K)$ only through $M=W_QW_K^\top$: at $M=0$ its
# Hessian is the bilinear form $\langle\partial_ML,\,\delta W_Q\,\delta W_K^\top\rangle$ with
# $\partial_ML=\partial_\kappa L\,uu^\top=-g\,uu^\top$; sympy diagonalizes it for $m=2$: $+g$ and
# $-g$ with multiplicity $m$ each, zero for the remaining $2m^2-2m$ directions (total symbolic time
# {glue:text}`symbolic_s:.1f` s).
#
# ## 2. The Jacobian at $\theta_c^1$, by autograd
#
# We build $\theta_c^1$ exactly for this page's chain ($W_0=a^*u^\top$, $W_1=ub^{*\top}$,
# $W_Q=W_K=0$, $u=e_1$) and diagonalize $J=-\nabla^2L(\theta_c^1)$ of the real model.

# %%
c1 = closed_forms.theta_c1(markov)
g = closed_forms.g_rate(markov, cfg.score_scale)
loss = model.PopulationLoss(markov, cfg.score_scale)
blocks = spectrum.jacobian_blocks(loss, spectrum.theta_c1_params(markov, cfg.d_model), sign=np.sign(g))
m = cfg.d_model
att_pred = np.sort(np.r_[np.full(m, -g), np.zeros(2 * m * m - 2 * m), np.full(m, g)])
att_err = float(np.abs(blocks.attention_eigs - att_pred).max())
emb_max = float(blocks.embedding_eigs.max())
n_neutral = int((np.abs(blocks.embedding_eigs) < 1e-10).sum())
g_numeric = float(blocks.eigs.max())     # = |g|: for g < 0 the unstable mode is q = −k
with np.errstate(all="ignore"):
    grad_c1 = measure.grad_norms({n: v[None] for n, v in spectrum.theta_c1_params(markov, m).items()}, loss)[0]
for name, value in dict(g=g, two_g=2 * g, two_g_abs=2 * abs(g), g_numeric=g_numeric, att_err=att_err, emb_max=emb_max,
                        emb_min=blocks.embedding_eigs.min(), n_neutral=n_neutral, n_emb=len(blocks.embedding_eigs),
                        n_unstable=blocks.n_unstable, qk_res=blocks.unstable_qk_residual, cross_max=blocks.cross_max,
                        grad_c1=grad_c1, W0_pred=c1.W0_norm, alpha=c1.alpha, H_pi=markov.unigram_entropy()).items():
    display.number(name, value)
print(f"g = {g:.6g} (closed form), {g_numeric:.6g} (largest eigenvalue of J); attention block vs ±g: {att_err:.1e}; "
      f"embedding block eigenvalues in [{blocks.embedding_eigs.min():.3g}, {emb_max:.1e}] ({n_neutral} zero); "
      f"unstable eigenvalues: {blocks.n_unstable}, max |q − k| part {blocks.unstable_qk_residual:.1e}; "
      f"cross block {blocks.cross_max:.1e}; ‖∇L(θ_c¹)‖ = {grad_c1:.1e}")

# %% [markdown]
# $\theta_c^1$ is a critical point ($\|\nabla L\|=$ {glue:text}`grad_c1:.0e`). The embedding block's
# {glue:text}`n_emb` eigenvalues lie in $[$ {glue:text}`emb_min:.3f`, {glue:text}`emb_max:.0e` $]$:
# {glue:text}`n_neutral` are zero (neutral directions: the unigram optimum is a whole manifold of
# $(W_0,W_1)$, and transverse directions do not change the loss because $\pi^\top P=\pi^\top$),
# the others contractive. The cross block vanishes ({glue:text}`cross_max:.0e`). The attention
# block matches $\{\pm g^{(m)},0\}$ to {glue:text}`att_err:.0e`; the
# {glue:text}`n_unstable` unstable eigenvectors of the full $J$ all have equal $W_Q$ and $W_K$
# parts, up to the sign of $g$ (largest difference {glue:text}`qk_res:.0e`): the single unstable
# mode $q=k$ ($q=-k$ if $g<0$), with rate {glue:text}`g_numeric:.6f` $=|g|$ ($g=$ {glue:text}`g:.6f`
# from the closed form).
#
# ## 3. The plateau on the population flow
#
# The exact flow (BDF, autograd Hessian as Jacobian, tolerances $10^{-8}$ / $10^{-12}$) from the
# spec's initialization passes through condensation and then sits near $\theta_c^1$. We locate the
# closest approach as the time of smallest $\|\nabla L\|$ on the plateau, read off $L$,
# $\|W_0\|_F$, the rank-one amplitudes $a_k=\langle h_k,u\rangle$ and the direction of $W_1$, and fit
# the growth rate of $\kappa$ on the window $t_{\rm cond}+[2,3.5]/|g|$ (the spec's $[800,1300]$
# for its chain), after the decaying mode $e^{-2|g|t}$ has died and before $\kappa$ is large
# enough to change $\partial_\kappa L$.

# %%
t_cond_pred = 2.5 * closed_forms.escape_time_origin(markov, cfg.init_scale)
t_window_pred = (t_cond_pred + cfg.kappa_window[0] / abs(g), t_cond_pred + cfg.kappa_window[1] / abs(g))
t_end = max(cfg.horizon, t_window_pred[1] * 1.1)
t_end = min(t_end, max(t_window_pred[1] * 1.1, 300.0))   # the stages after the window are other pages
run = runs.population_flow(markov, d_model=m, init_scale=cfg.init_scale, seed=cfg.seed, score_scale=cfg.score_scale,
                           t_eval=runs.time_grid(t_end, fine_until=300.0, fine_dt=1.0, coarse_dt=max(1.0, t_end / 2000)))
q, t = run.q, run.t
_, t_cond = measure.level_times(t, q["loss"], np.log(markov.d), markov.unigram_entropy())
t_kappa = (t_cond + cfg.kappa_window[0] / abs(g), t_cond + cfg.kappa_window[1] / abs(g))
kappa_rate = run.rate("kappa", *t_kappa)
mode_rate = run.rate("qk_sym" if g > 0 else "qk_anti", *t_kappa)   # the unstable mode itself
g_eff = measure.kappa_drive(run.result.states(), loss, q["u"])         # −uᵀ∂_M L u along the flow
i0, i1 = np.flatnonzero((t >= t_kappa[0]) & (t <= t_kappa[1]))[[0, -1]]
mode_key = "qk_sym" if g > 0 else "qk_anti"
mode_growth = float(np.log(q[mode_key][i1] / q[mode_key][i0]))                 # log-growth over the window
mode_growth_pred = float(2 * np.trapezoid(np.abs(g_eff[i0:i1 + 1]), t[i0:i1 + 1]))   # 2∫|g_eff| dt
g_eff_start = float(g_eff[i0])
# The same at ε/10 (same seed): the offset of g_eff from the closed form is O(ε) and must shrink.
eps_small = cfg.init_scale / 10
t_small = 2.5 * closed_forms.escape_time_origin(markov, eps_small) + cfg.kappa_window[0] / abs(g)
run_s = runs.population_flow(markov, d_model=m, init_scale=eps_small, seed=cfg.seed, score_scale=cfg.score_scale,
                             t_eval=np.linspace(0.0, t_small * 1.05, 400))
_, t_cond_s = measure.level_times(run_s.t, run_s.q["loss"], np.log(markov.d), markov.unigram_entropy())
g_eff_s = measure.kappa_drive(run_s.result.states(), loss, run_s.q["u"])
g_eff_small = float(g_eff_s[run_s.at(t_cond_s + cfg.kappa_window[0] / abs(g))])
W0_tol = 1e-4 + 2 * markov.d * m * cfg.init_scale**2 / c1.W0_norm**2
gnorm = measure.grad_norms(run.result.states(), loss)
t_c1 = measure.saddle_time(t, gnorm, t_cond, t_kappa[0])
i_c1 = run.at(t_c1)
if reference:
    i_c1 = run.at(200.0)     # the spec reads θ_c¹ at t = 200
loss_c1 = float(q["loss"][i_c1])
W0_c1 = float(q["W0_fro"][i_c1])
amp_c1 = q["amp"][i_c1]
amp_err = float(np.abs(amp_c1 - c1.a).max())
cos_ell = float(q["cos_W1_ell"][i_c1])
cos_W0 = float(q["cos_W0_pi"][i_c1])
balance = float(np.abs(q["balance"]).max())
for name, value in dict(t_cond=t_cond, t_c1=float(t[i_c1]), loss_c1=loss_c1, W0_c1=W0_c1, amp_err=amp_err,
                        cos_ell=cos_ell, cos_W0=cos_W0, kappa_rate=kappa_rate, mode_rate=mode_rate,
                        mode_rel=mode_rate / (2 * abs(g)) - 1, g_eff=g_eff_start, g_eff_rel=g_eff_start / g - 1,
                        mode_growth=mode_growth, mode_growth_pred=mode_growth_pred,
                        mode_growth_rel=mode_growth / mode_growth_pred - 1, g_eff_small=g_eff_small,
                        g_eff_small_rel=g_eff_small / g - 1, eps_small=eps_small, W0_tol=W0_tol, tk0=t_kappa[0], tk1=t_kappa[1],
                        balance=balance, balance_rel=balance / c1.W0_norm**2, grad_min=float(gnorm[i_c1]),
                        loss_dev=loss_c1 - markov.unigram_entropy(), kappa_rel=kappa_rate / (2 * g) - 1,
                        flow_s=run.wall_s, flow_nfev=run.nfev, t_end=t_end).items():
    display.number(name, value)
for name, value in SPEC.items():
    if isinstance(value, float):
        display.number(f"spec_{name}", value)
print(f"flow to t = {t_end:.0f}: {run.nfev} evaluations, {run.wall_s:.1f} s; θ_c¹ read at t = {t[i_c1]:.0f}: "
      f"L = {loss_c1:.6f} (H(π) = {markov.unigram_entropy():.6f}), ‖W0‖ = {W0_c1:.6f} (predicted {c1.W0_norm:.6f}), "
      f"a = {np.round(amp_c1, 4)} (απ = {np.round(c1.a, 4)}); κ rate on [{t_kappa[0]:.0f}, {t_kappa[1]:.0f}] = "
      f"{kappa_rate:.6f} (2g = {2 * g:.6f})")

# %% [markdown]
# At $t=$ {glue:text}`t_c1:.0f` the loss is {glue:text}`loss_c1:.6f` against
# $H(\pi)=$ {glue:text}`H_pi:.6f` (difference {glue:text}`loss_dev:.1e`), $\|W_0\|_F=$
# {glue:text}`W0_c1:.6f` against $\sqrt{\|\ell\|/\|\pi\|}=$ {glue:text}`W0_pred:.6f`, the amplitudes
# are within {glue:text}`amp_err:.1e` of $\alpha\pi$ ($\alpha=$ {glue:text}`alpha:.5f`), the top
# left singular vector of $W_0$ has $|\cos|$ {glue:text}`cos_W0:.6f` with $\pi$ and the top right
# singular vector of $W_1$ has $|\cos|$ {glue:text}`cos_ell:.6f` with $\ell$. On
# $t\in[$ {glue:text}`tk0:.0f`, {glue:text}`tk1:.0f` $]$ the unstable mode $\|q\pm k\|^2$
# (with $q=W_Q^\top u$, $k=W_K^\top u$, sign of $g$) grows at {glue:text}`mode_rate:.6f` against
# $2|g|=$ {glue:text}`two_g_abs:.6f` (relative {glue:text}`mode_rel:.1e`), and the spec's measure,
# $\kappa=q^\top k=\tfrac14(\|q+k\|^2-\|q-k\|^2)$, at {glue:text}`kappa_rate:.6f` (relative to
# $2g$: {glue:text}`kappa_rel:.1e`): $\kappa$ also carries the decaying mode, whose weight on the
# window depends on the random initial $q,k$.
#
# **Why not exactly $2g$.** The flow does not visit $\theta_c^1$ itself but a point of the plateau
# offset by the $O(\epsilon)$ entries that the drive never touched (the amplitudes deviate from
# $\alpha\pi$ by {glue:text}`amp_err:.1e`), and $g$ depends on the embedding at first order; later
# in the window $\kappa$ itself starts to change $\partial_\kappa L$. The rate of the attention mode
# *at the visited point*, $g_{\rm eff}(t)=-u^\top(\partial L/\partial M)u$ computed by autograd
# along the flow, is {glue:text}`g_eff:.6f` at the start of the window
# ({glue:text}`g_eff_rel:.1e` from the closed form), and over the window the mode's log-growth
# {glue:text}`mode_growth:.5f` equals $2\int|g_{\rm eff}|\,dt=$ {glue:text}`mode_growth_pred:.5f`
# (relative {glue:text}`mode_growth_rel:.1e`): the linearization holds where the flow is. The
# closed form is its $\epsilon\to0$ limit: from $\epsilon=$ {glue:text}`eps_small:.0e` (same seed)
# $g_{\rm eff}$ at the same place is {glue:text}`g_eff_small:.6f`, an offset
# {glue:text}`g_eff_small_rel:.1e`, shrinking with $\epsilon$ as a first-order effect should. The flow took {glue:text}`flow_nfev` gradient evaluations
# ({glue:text}`flow_s:.1f` s) to $t=$ {glue:text}`t_end:.0f`.
#
# The small offsets are the initialization's: $\|W_0\|^2-\|W_1\|^2-\|W_Q\|^2-\|W_K\|^2$ is exactly
# conserved by the flow (the model is invariant under $W_0\to W_0G$, $W_1\to G^{-1}W_1$,
# $W_{Q,K}\to G^{-1}W_{Q,K}$) and equals {glue:text}`balance:.1e` instead of the $0$ assumed by
# the closed form — a relative shift {glue:text}`balance_rel:.0e` of $\|W_0\|^2$ — and the
# $O(\epsilon)$ initial entries of $W_0$ that the drive never touched add noise of size
# $\epsilon$ to each $a_k$.
#
# ## 4. A random chain: $W_1$ turns from $\pi-\tfrac1d\mathbf 1$ to $\ell$
#
# For the spec's chain $\pi-\tfrac1d\mathbf 1$ and $\ell$ point the same way, so the turn of $W_1$
# is invisible. On a random chain (rows Dirichlet(1), the spec's claim B17) $W_1$ first aligns
# with $\pi-\tfrac1d\mathbf 1$ (condensation) and then turns to $\ell$ (the saddle).

# %%
rand = dirichlet_chain(cfg.random_d, seed=cfg.random_seed)
c1_rand = closed_forms.theta_c1(rand)
run_r = runs.population_flow(rand, d_model=m, init_scale=cfg.init_scale, seed=cfg.seed, score_scale=cfg.score_scale,
                             t_eval=runs.time_grid(cfg.random_horizon, fine_until=cfg.random_horizon, fine_dt=1.0))
qr = run_r.q
rand_stats = dict(W0_rand=float(qr["W0_fro"][-1]), W0_rand_pred=c1_rand.W0_norm, L_rand=float(qr["loss"][-1]),
                  H_rand=rand.unigram_entropy(), cos_pic_max=float(qr["cos_W1_pic"].max()),
                  cos_pic_final=float(qr["cos_W1_pic"][-1]), cos_ell_final=float(qr["cos_W1_ell"][-1]),
                  cos_pic_ell=float(measure.cos(rand.pi - 1 / rand.d, rand.ell)), g_rand=closed_forms.g_rate(rand),
                  t_rand=cfg.random_horizon)
for name, value in rand_stats.items():
    display.number(name, value)
print(rand.name, "π =", np.round(rand.pi, 4), {k: round(v, 6) for k, v in rand_stats.items()})

# %% [markdown]
# On the random chain ({glue:text}`random_d_val` tokens; $|\cos(\pi-\tfrac1d\mathbf 1,\ell)|=$
# {glue:text}`cos_pic_ell:.4f`) $W_1$ reaches $|\cos|=$ {glue:text}`cos_pic_max:.5f` with
# $\pi-\tfrac1d\mathbf 1$ and ends at {glue:text}`cos_pic_final:.4f`, while its $|\cos|$ with $\ell$
# ends at {glue:text}`cos_ell_final:.6f`. At $t=$ {glue:text}`t_rand:.0f`, $\|W_0\|_F=$
# {glue:text}`W0_rand:.6f` (predicted {glue:text}`W0_rand_pred:.6f`) and $L=$
# {glue:text}`L_rand:.6f` $=H(\pi)=$ {glue:text}`H_rand:.6f`; this chain's $g=$
# {glue:text}`g_rand:.1e` keeps attention frozen that long.

# %%
display.number("random_d_val", cfg.random_d)
fig, axes = plotting.subplots(2, 3, width=3.6, height=2.9)
ax = axes[0]
t_focus = t_kappa[1]
for a_ in ax[:3]:
    a_.axvspan(t[1], t_cond, color=STAGE_COLORS["condensation"], zorder=0)
    a_.axvspan(t_cond, t[-1], color=STAGE_COLORS["plateau"], zorder=0)
ax[0].semilogx(t[1:], q["loss"][1:], color="k")
ax[0].axhline(markov.unigram_entropy(), ls="--", color=PALETTE[1], label=r"$H(\pi)$")
ax[0].axvline(t[i_c1], color=PALETTE[3], lw=1, label=r"$\theta_c^1$ read here")
ax[0].set(xlabel="t", ylabel="loss", title="plateau at the unigram loss")
ax[0].legend(fontsize="x-small")
for k in range(markov.d):
    line, = ax[1].semilogx(t[1:], q["amp"][1:, k], lw=1.4, label=f"$a_{k}$" if k < 3 else None)
    ax[1].axhline(c1.a[k], ls=":", color=line.get_color(), lw=1)
ax[1].set(xlabel="t", title=r"amplitudes $a_k$ (dotted: $\alpha\pi_k$)")
ax[1].legend(fontsize="x-small")
ax[2].semilogy(t, np.abs(q["kappa"]), color=PALETTE[0], label=r"$|\kappa|$")
ax[2].semilogy(t, q["M_fro"], color=PALETTE[4], lw=1, label=r"$\|W_QW_K^\top\|_F$")
tt = np.array(t_kappa)
i0 = run.at(t_kappa[0])
ax[2].semilogy(tt, np.abs(q["kappa"][i0]) * np.exp(2 * abs(g) * (tt - t_kappa[0])) * 3, color="k", lw=1,
               label=r"slope $2g$ (shifted)")
ax[2].axvspan(*t_kappa, color=PALETTE[0], alpha=0.08)
ax[2].set(xlabel="t", title=r"attention grows at $2g$")
ax[2].legend(fontsize="x-small")
ax = axes[1]
n_emb = len(blocks.embedding_eigs)
ax[0].plot(np.arange(n_emb), blocks.embedding_eigs, ".", color=PALETTE[0], label=r"$(W_0,W_1)$ block")
ax[0].plot(n_emb + np.arange(len(blocks.attention_eigs)), blocks.attention_eigs, ".", color=PALETTE[3],
           label=r"$(W_Q,W_K)$ block")
ax[0].axhline(g, color=PALETTE[3], lw=0.8, ls=":")
ax[0].set_yscale("symlog", linthresh=1e-3)
ax[0].set(xlabel="eigenvalue index (sorted per block)", title=r"spectrum of $-\nabla^2L(\theta_c^1)$")
ax[0].legend(fontsize="x-small")
tr = run_r.t
ax[1].plot(tr, qr["cos_W1_pic"], color=PALETTE[2], label=r"$|\cos(v_1(W_1),\pi-\frac{1}{d})|$")
ax[1].plot(tr, qr["cos_W1_ell"], color=PALETTE[1], ls="--", label=r"$|\cos(v_1(W_1),\ell)|$")
ax[1].set(xlabel="t", ylim=(0.9, 1.002), title=f"random chain (d = {rand.d}): $W_1$ turns")
ax[1].legend(fontsize="x-small", loc="lower right")
ax[2].plot(tr, qr["loss"], color="k")
ax[2].axhline(rand.unigram_entropy(), ls="--", color=PALETTE[1], label=r"$H(\pi)$")
ax2 = ax[2].twinx()
ax2.plot(tr, qr["W0_fro"], color=PALETTE[0], lw=1.2)
ax2.axhline(c1_rand.W0_norm, ls=":", color=PALETTE[0])
ax2.set_ylabel(r"$\|W_0\|_F$ (blue; dotted: predicted)", color=PALETTE[0], fontsize="small")
ax2.grid(False)
ax[2].set(xlabel="t", ylabel="loss", title="random chain: loss and $\\|W_0\\|_F$")
ax[2].legend(fontsize="x-small", loc="center right")
fig.suptitle(f"Unigram saddle on the {markov.name}, m = {m}", y=1.03)

# %% [markdown]
# ## 5. Claims
#
# Tolerances. Symbolic identities must simplify to exactly zero. Autograd spectra at the exact
# $\theta_c^1$ are float64 eigendecompositions of an exact Hessian: $10^{-10}$ absolute, and the
# eigenvalue $g$ must agree with the closed form to $10^{-8}$ relative. On the flow the loss at the
# plateau must be within $10^{-6}$ of $H(\pi)$ (the closest approach leaves $O(\kappa)\approx10^{-8}$
# and the solver's relative tolerance $10^{-8}$); $\|W_0\|_F$ within
# $10^{-4}+2dm\epsilon^2/\|W_0^*\|^2=$ {glue:text}`W0_tol:.1e` relative (the conserved imbalance,
# here {glue:text}`balance_rel:.0e` relative, and the untouched initial entries, both of order
# $dm\epsilon^2$); each amplitude within
# $5\epsilon$ of $\alpha\pi_k$ (untouched initial entries of size $\epsilon$ along $u$; $5\epsilon$ is
# a five-standard-deviation bound); alignments within $10^{-4}$ of 1. The rate of the unstable
# mode must match $2\int|g_{\rm eff}|dt$ within $2\epsilon$ relative (the mode is not exactly the
# eigenvector of the visited point: it couples to the $O(\epsilon)$ rows of $W_Q,W_K$ off $u$). The
# closed-form $g$ is the $\epsilon\to0$ limit of $g_{\rm eff}$: the visited point is offset from
# $\theta_c^1$ by $\delta a\sim2\epsilon$, so $g_{\rm eff}/g-1$ is $O(\epsilon)$ with a
# chain-dependent constant (here {glue:text}`g_eff_rel:.1e`); we require it to shrink at least
# fivefold when $\epsilon$ is divided by ten (first order predicts tenfold). Both flow checks need the
# attention mode to be resolvable at this $\epsilon$, $|g|\ge5\epsilon\sigma_0$ (the plateau point
# drifts at rates of order $\epsilon\sigma_0$); for chains with a slower mode they are reported only. The spec's printed numbers are compared at half a unit of their last
# digit when they are closed forms, and at the same tolerances as above when they were measured
# (its Euler trajectory carries the same offsets); the spec's $\kappa$ rate, measured on the same
# window from the same initialization, is compared with ours at $2\times10^{-3}$.

# %%
claims.check("B4", n_nonzero_saddle, 0, atol=0, what="sympy: nonzero residuals (P̂ − π, L − H(π), ∇L₁, balance, g)",
             source="reconstruction")
claims.check("B5", att_err, 0.0, atol=1e-10, what="autograd: attention block of J at θ_c¹ vs {±g (m each), 0}",
             source="reconstruction")
claims.check("B5", emb_max, 0.0, atol=1e-10, what="autograd: largest eigenvalue of the (W0, W1) block (≤ 0: neutral or contractive)",
             source="paper + reconstruction")
claims.check("B5", blocks.cross_max, 0.0, atol=1e-12, what="autograd: largest cross term ∂²L/∂(WQ,WK)∂(W0,W1) at θ_c¹",
             source="reconstruction")
claims.check("B5", blocks.n_unstable, m, atol=0, what="number of positive eigenvalues of J (the m-dimensional q = k mode)",
             source="paper + reconstruction")
claims.check("B5", blocks.unstable_qk_residual, 0.0, atol=1e-8, what="max ‖WQ part − sign(g)·WK part‖ of the unstable eigenvectors",
             source="reconstruction")
claims.check("B5", g_numeric, abs(g), rtol=1e-8, what="largest eigenvalue of J vs closed-form |g|", source="reconstruction")
# The plateau point drifts at rates O(ε σ0) (neutral directions, untouched initial entries); the
# attention mode is only resolved on the flow when it is clearly faster than that.
resolvable = abs(g) >= 5 * cfg.init_scale * closed_forms.sigma0(markov)
if not resolvable:
    print(f"|g| = {abs(g):.2e} < 5 ε σ0 = {5 * cfg.init_scale * closed_forms.sigma0(markov):.2e}: the attention mode of this "
          "chain is too slow to separate from the O(ε) drift of the plateau at this ε; its growth on the flow is "
          "reported, not checked (the Jacobian checks above still apply)")
if resolvable:
    claims.check("B5", mode_growth, mode_growth_pred, rtol=2 * cfg.init_scale,
                 what="log-growth of the unstable mode ‖q ± k‖² over the window vs 2∫|g_eff|dt", source="reconstruction")
    claims.check("B5", abs(g_eff_small / g - 1), 0.0, atol=0.2 * abs(g_eff_start / g - 1) + 1e-4,
                 what="|g_eff/g − 1| at ε/10 (must shrink ≥ 5× from its value at ε: an O(ε) offset)", source="reconstruction")
claims.check("B4", loss_c1, markov.unigram_entropy(), atol=1e-6, what="L at the closest approach to θ_c¹ vs H(π)",
             source="reconstruction")
claims.check("B4", W0_c1, c1.W0_norm, rtol=W0_tol, what="‖W0‖_F at θ_c¹ vs √(‖ℓ‖/‖π‖)", source="reconstruction")
claims.check("B4", amp_err, 0.0, atol=5 * cfg.init_scale, what="max |a_k − απ_k| at θ_c¹", source="reconstruction")
claims.check("B4", cos_ell, 1.0, atol=1e-4, what="|cos(top right sing. vector of W1, ℓ)| at θ_c¹", source="reconstruction")
claims.check("B17", rand_stats["W0_rand"], c1_rand.W0_norm, rtol=1e-4 + 2 * rand.d * m * cfg.init_scale**2 / c1_rand.W0_norm**2, what="random chain: ‖W0‖_F at the horizon vs √(‖ℓ‖/‖π‖)",
             source="reconstruction")
claims.check("B17", rand_stats["L_rand"], rand.unigram_entropy(), atol=1e-6, what="random chain: L at the horizon vs H(π)",
             source="reconstruction")
claims.check("B17", rand_stats["cos_pic_max"], 1.0, atol=1e-4, what="random chain: max |cos(W1, π − 1/d)|", source="reconstruction")
claims.check("B17", rand_stats["cos_ell_final"], 1.0, atol=1e-4, what="random chain: final |cos(W1, ℓ)|", source="reconstruction")
if is_reference(cfg, model=False):
    claims.check("B13", markov.unigram_entropy(), SPEC["H_pi"], atol=half_unit(0, 5), what="H(π), reference chain")
    claims.check("B13", c1.W0_norm, SPEC["W0_norm_c1"], atol=half_unit(0, 5), what="closed-form ‖W0‖ at θ_c¹, reference chain")
    claims.check("B13", g, SPEC["g"], atol=half_unit(0, 5), what="closed-form g, reference chain")
if reference:
    claims.check("B13", W0_c1, SPEC["W0_norm_c1_measured"], rtol=1e-4, what="measured ‖W0‖_F at t = 200 vs the spec's 1.26655")
    claims.check("B13", amp_c1, np.array(SPEC["amp_c1_measured"]), atol=5 * cfg.init_scale,
                 what="measured amplitudes a at t = 200 vs the spec's")
    claims.check("B13", kappa_rate, SPEC["kappa_rate_measured"], rtol=2e-3, what="κ growth rate vs the spec's measured 0.00569")
if cfg.random_d == 6 and cfg.random_seed == 0 and is_reference(cfg, model=True, delta=False) and cfg.random_horizon == 600.0:
    claims.check("B17", c1_rand.W0_norm, SPEC["W0_norm_c1_random"], atol=half_unit(0, 5), what="random chain: predicted ‖W0‖ vs spec")
    claims.check("B17", rand.unigram_entropy(), SPEC["H_pi_random"], atol=half_unit(0, 5), what="random chain: H(π) vs spec")
    claims.check("B17", rand_stats["cos_pic_final"], SPEC["cos_W1_pic_final_random"], atol=half_unit(0, 4),
                 what="random chain: final |cos(W1, π − 1/d)| vs the spec's 0.9816")
claims.finish()
