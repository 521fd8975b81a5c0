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
# # Stage 2 — focus on frequent tokens
#
# At the unigram saddle ({doc}`unigram_saddle`) the only unstable direction is the attention
# amplitude $\kappa=u^\top W_QW_K^\top u$. When it grows, every score becomes
# $S_{ik}=c\,\kappa\,a_ia_k$ with $a\approx\alpha\pi$: the product of the two tokens' frequencies.
# Attention therefore tilts towards the most frequent token, and the more frequent the query,
# the stronger the tilt. This page derives the tilt symbolically, checks it on the exact flow,
# and shows what happens on a chain that violates the condition behind it: the attention then
# turns *away* from the frequent token.
#
# ```{prf:proposition} Frequency-driven focus
# :label: prop-focus
#
# **[paper]** {cite:p}`chen2026focus`: the attention parameters then begin to increase, inducing a
# frequency-driven focus toward high-frequency tokens. **[reconstruction]** (spec R3): on the
# rank-one manifold near $\theta_c^1$, $A_{ik}\propto\pi_k\exp(c\kappa\alpha^2\pi_i\pi_k)$ and
#
# $$\partial_\kappa A_{ik}\big|_{\kappa=0}=c\,\alpha^2\,\pi_i\,\pi_k\,\big(\pi_k-\|\pi\|^2\big).$$
#
# As $\kappa$ grows with the sign of $g$ ({prf:ref}`prop-unigram-saddle`), for $g>0$ only tokens with
# $\pi_k>\|\pi\|^2$ gain attention, and query $i$ tilts in proportion to $\pi_i$. The condition
# $g>0$ reads $\sum_i\pi_i^2\,\mathbb E[\ell_{x'}\mid x=i]>\|\pi\|^2\,\mathbb E_\pi[\ell]$: frequent
# tokens are followed by frequent tokens. When it fails ($g<0$), $\kappa$ grows negative and the
# frequent tokens *lose* attention.
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
horizon = 2500.0        # end time of the flow (extended to cover focus)
a_h_violating = 0.1     # counter-example chain: a_h < b_h, the hub is not followed by frequent tokens
b_h_violating = 0.5     # counter-example chain: b_h

# %% tags=["hide-input"]
from attnflow import claims, params
from attnflow.focus_dilution.contracts import FOCUS
cfg = params.validate(globals(), FOCUS)

# %%
import numpy as np

from attnflow import display, exercises
from attnflow.focus_dilution.reports.focus import focus_report
from attnflow.focus_dilution.pagesetup import start_page

markov, reference = start_page(cfg)
rep = focus_report(cfg)
rep.glue();

# %% [markdown]
# ## 1. The tilt, symbolically
#
# On a general stationary chain of three tokens (joint matrix $F=\Pi P$ with equal margins),
# sympy differentiates the attention rows $A_{ik}(\kappa)$ at $a=\alpha\pi$ and rewrites the factor
# of $g$ that decides its sign:

# %%
display.equation("eq_tilt_residual", rep.tilt.residual,
                 lhs=r"\partial_\kappa A_{ik}-c\,\alpha^2\pi_i\pi_k\left(\pi_k-\|\pi\|^2\right)")
display.equation("eq_tilt_rows", rep.tilt.row_sums.T, lhs=r"\Big[\textstyle\sum_k\partial_\kappa A_{ik}\Big]_i")
display.equation("eq_sign", rep.tilt.sign_residual,
                 lhs=r"\ell^\top\!\big(P^\top(\pi\odot\pi)-\|\pi\|^2\pi\big)-\Big(\sum_i\pi_i^2\,"
                     r"\mathbb E[\ell_{x'}\mid x=i]-\|\pi\|^2\,\mathbb E_\pi[\ell]\Big)");

# %% [markdown]
# The rows of $\partial_\kappa A$ sum to zero (attention stays normalized): mass moves from the
# tokens with $\pi_k<\|\pi\|^2$ to those with $\pi_k>\|\pi\|^2$, with the query's own frequency
# $\pi_i$ as a factor ({glue:text}`symbolic_s:.1f` s of sympy).
#
# ## 2. The tilt on the real model, by autograd
#
# At the exact $\theta_c^1$ of this page's chain we set $\kappa$ to $\pm10^{-6}$ (rank-one
# $W_Q=W_K\propto uu^\top$) and difference the model's attention rows. The model's attention responds
# as the closed form says (relative difference {glue:text}`dA_err:.0e`, the $O(h^2)$ of a central
# difference). Here $g=$ {glue:text}`g:.5f`.
#
# **Exercise.** Which key tokens gain attention when focus starts? Using only the chain
# (`markov.pi`) and the sign of $g$ (`rep.g`), compute `gainers_mine`, the sorted array of the keys
# $k$ whose weight $A_{ik}$ grows as $\kappa$ grows with the sign of $g$. It is checked against
# the sign of the library's closed form of $\partial_\kappa A$ at $\theta_c^1$, which the flow's
# onset follows where it is linear (claim B6 below).

# %% tags=["exercise"]
### BEGIN SOLUTION
pi = markov.pi
gainers_mine = np.flatnonzero(np.sign(rep.g) * (pi - pi @ pi) > 0)
### END SOLUTION

# %% tags=["exercise-check"]
exercises.check("gainers_mine", gainers_mine, expected=rep.gainers, atol=0,
                hint="∂κA_ik has the sign of π_k − ‖π‖², and κ grows with the sign of g")

# %% [markdown]
# ## 3. Focus along the exact flow
#
# The population flow (BDF with the autograd Hessian, tolerances $10^{-8}$/$10^{-12}$) from the
# spec's initialization crosses condensation and the plateau, then focuses. We mark the **onset of
# focus** as the first time some attention weight leaves $\pi$ by 0.01, and regress
# $A_{ik}(t)-\pi_k$ on $\kappa(t)$ while $|\kappa|\le|g|/4$ to measure $\partial_\kappa A$ on the flow
# itself (beyond that the amplitudes start to move by $O(\kappa/g)$, the next stage).
#
# Focus starts at $t\approx$ {glue:text}`t_onset:.0f` (condensation ended at
# {glue:text}`t_cond:.0f`). While $|\kappa|\le$ {glue:text}`kappa_fit:.1e` the measured
# $\partial_\kappa A$ matches the formula evaluated at the amplitudes the flow actually has,
# $c\,\pi_ka_i(a_k-\pi^\top a)$, to {glue:text}`dA_visited_err:.1e` of its largest entry, and the closed
# form at $a=\alpha\pi$ to {glue:text}`dA_flow_err:.1e` (the visited point is $\theta_c^1$ up to
# $O(\epsilon)$ offsets, {doc}`unigram_saddle`). At the onset every attention weight moves in the
# predicted direction — towards the keys with $\pi_k>\|\pi\|^2=$ {glue:text}`npi2:.4f` when $g>0$ —
# and the frequent key gains {glue:text}`gain_hub_query:.4f` from the frequent query against
# {glue:text}`gain_low_query:.4f` from a rare one. In the linear regime the ratio of the two slopes is
# {glue:text}`gain_ratio:.3f`, the $\pi_{\rm hub}/\pi_{\rm low}=$ {glue:text}`pi_ratio:.3f` of the
# formula. Later, the frequent query's attention to the frequent key rises to {glue:text}`A00_max:.4f`
# (from $\pi_{\rm hub}=$ {glue:text}`pi_hub:.4f`), a rare query's peaks at {glue:text}`A10_max:.4f` at
# $t\approx$ {glue:text}`t_peak:.0f`, and the attention entropy $\sum_i\pi_iH(A_{i\cdot})$ falls from
# $H(\pi)=$ {glue:text}`H_pi:.4f` to {glue:text}`ent_min:.4f`. What happens after the peak — the rare
# queries turning away from the hub — is the next stage, {doc}`dilution`.
#
# ## 4. A chain that violates the condition
#
# Keep the family but make the hub rarely follow itself ($a_h<b_h$): the hub is still the most
# frequent token, but it is followed mostly by rare tokens, so $g<0$. The unstable mode is then
# $q=-k$, $\kappa$ grows **negative**, and the same formula sends attention away from the frequent
# token. Here $g=$ {glue:text}`g_v:.5f` and $\kappa$ ends at {glue:text}`kappa_v_end:.3f`. From the
# onset ($t\approx$ {glue:text}`t_onset_v:.0f`) every weight moves as the formula predicts with the
# sign of $g$ flipped, and the frequent query ends up attending to the frequent token with weight
# {glue:text}`A_hubhub_v_end:.3f` — far *below* its frequency {glue:text}`pi_hub_v:.3f` — while its
# attention to the rare token {glue:text}`top_key_v_val` rises to {glue:text}`A_hub_to_top_v:.3f`
# (frequency {glue:text}`pi_top_v:.3f`). Focus is frequency-driven only when frequent tokens follow
# frequent tokens.

# %%
fig, = rep.figures()
fig

# %% [markdown]
# Shading: condensation (blue), plateau (grey), focus (orange, from the onset to the peak of a rare
# query's attention to the hub), dilution (green, next page).
#
# ## 5. Claims
#
# Tolerances. Symbolic identities must simplify to zero. The central difference of the model's
# attention at $\kappa=\pm10^{-6}$ has an $O(h^2)$ error: $10^{-6}$ relative. On the flow, the
# regression of $A-\pi$ on $\kappa$ (with an intercept, which absorbs the $O(\epsilon^2)$ attention
# offset of the plateau) is compared with the formula at the visited amplitudes and is then biased by
# the motion of the amplitudes, $O(\kappa/g)$ relative, which the window $|\kappa|\le|g|/4$ keeps below
# $10^{-2}$ of the largest entry; against the closed form at $\alpha\pi$ we add the $O(\epsilon)$ offset
# of the visited point ({doc}`unigram_saddle`): $2\times10^{-2}$. Signs and orderings are exact
# predicates (entries whose predicted tilt is below $10^{-3}$ of the largest are not sign-tested). The
# spec's reference numbers come from its Euler trajectory with $\Delta t=0.05$; they are compared with
# our exact flow at half a unit of their last digit plus $2\times10^{-4}$ for the Euler-vs-exact
# difference (our own torch Euler run reproduces the spec's digits: $\max A_{00}$ Euler
# {glue:text}`euler_A00:.6f`, exact {glue:text}`A00_max:.6f`).
#
# **Domains** (found by running this page on random hub-family and Dirichlet chains). The linear
# response is a statement about the neighbourhood of $\theta_c^1$: the flow is there only if focus
# starts within the integrated time (at most $2\times10^5$; chains with $g\approx0$ focus later) and the
# attention mode is slow against the contraction onto the unigram optimum, $2|g|\le\lambda_c/4$ (as
# on {doc}`unigram_saddle`; a chain with a fast mode leaves the plateau while its amplitudes still
# move, and the regression mixes the two). The slopes also need the terms the first-order response
# neglects (scores not carried by $\kappa$, the drift of the amplitudes across the window) to bias the fit
# by at most half its tolerance, a Cauchy–Schwarz bound from the window's states ({glue:text}`bias_visited:.1e`
# here, {ref}`errata-atlas`). The sign pattern and the most tilted query are read at the
# onset, which still shows the tilt of $\theta_c^1$ only while the amplitudes have not yet been
# redistributed: we require them within 15 % of $\alpha\pi$ there (here they have moved by a fraction
# {glue:text}`amp_drift_onset:.2f`; on eight probed chains and seeds the pattern held at drifts 0.07–0.11
# and failed at 0.20 and 0.58, on Dirichlet chains with a slow mode), and the sign pattern needs the
# drift to flip no checked sign of the tilt $\kappa a_i(a_k-\pi^\top a)$. "Focus rises above $\pi_{\rm hub}$" and "the attention entropy
# falls" are checked against the plateau offset $10^{-3}+100c\epsilon^2$, not a fixed size: how far focus
# goes before dilution takes over depends on the chain (by 0.027 only on a probed chain with $a_h\approx b_h$). The focus on the *frequent* token needs $g>0$; the violating
# chain's claims need its $g<0$.

# %% tags=["hide-input"]
rep.check_claims()
claims.finish()
