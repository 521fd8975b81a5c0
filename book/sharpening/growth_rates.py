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
# # Theorem 4 — growth rates: log t for OV, log² t for the attention odds
#
# Once the model predicts correctly, the loss keeps falling but ever more slowly, and the two
# scalars keep growing. How fast? The OV scalar grows like $\log t$; the QK side grows like
# $\log^2 t$ — but only if "the QK scalar" means the attention *odds*, not the raw score
# difference $b$ (open question Q1). This page derives the laws by dominant balance in sympy,
# integrates the reduced flow to $t$ = {glue:text}`horizon_used:.0e` with an adaptive solver in
# log time, and fits the constants.
#
# ```{prf:theorem} Growth rates under population gradient flow
# :label: thm-growth
#
# **[paper]** rates: "the OV scalar grows as $O(\log t)$ and the QK scalar as
# $O(\log^2 t)$, with constants controlled by $\eta_{QK}/\eta_{OV}$" {cite:p}`vashisht26a`;
# **[reconstruction]** derivation and constants (spec Theorem 4). With $r=\eta_{QK}/\eta_{OV}$,
# $L=\log t$ and $u=a\,p$ the correct-class margin:
#
# - OV, collapsed: $u=L+\log(\eta_{OV}(K-1))+o(1)$; factorized: $u=L+\log L+\log(2\eta_{OV}(K-1))+o(1)$.
#   Hence $a=\Theta(\log t)$.
# - QK, CACO: the attention odds $e^b/n=p/(1-p)\simeq\tfrac r2\log^2 t$, while
#   $b=2\log\log t+\log(rn/2)+o(1)$.
# - All four (from {prf:ref}`thm-line` at large $a,b$): odds $\approx r a^2/2$ (CACO),
#   $ra/2$ (CAFO), $ra^2b$ (FACO), $rab$ (FAFO).
# ```

# %% tags=["parameters"]
n_classes = 5         # K, classes
n_compete = 9         # n, positions competing with the distinct token
lr_ratios = [1.0, 10.0]  # ratios r, η_QK/η_OV
a0 = 0.1              # initial OV scalar a₀
b0 = 0.1              # initial QK scalar b₀
horizon = 1e6         # horizon of the reduced ODE (t ≥ 10⁶ for the growth laws)
rtol = 1e-10          # relative tolerance of LSODA (absolute: rtol/100)
parametrizations = ["CACO", "CAFO", "FACO", "FAFO"]  # circuits to run
fit_from = 1e4        # fit window [fit_from, horizon] (at least one decade)

# %% tags=["hide-input"]
from attnflow import claims, params
from attnflow.sharpening.contracts import GROWTH_RATES
cfg = params.validate(globals(), GROWTH_RATES)

# %%
from attnflow import display, exercises, plotting
from attnflow.sharpening.reports.growth_rates import growth_rates_report

plotting.use_style()
rep = growth_rates_report(cfg)   # sympy dominant balance, reduced flows to the horizon, fits over the window
glued = rep.glue()
g = rep.laws

# %% [markdown]
# ## 1. Dominant balance in sympy
#
# **OV.** Once $p\to1$, $1-s\approx(K-1)e^{-a}$ and the OV equation becomes
# $\dot a=\eta_{OV}\rho_{OV}(a)(K-1)e^{-a}$. For collapsed OV sympy solves it exactly, and the
# limit of $a-\log t$ is the offset:

# %%
display.equation("eq_a_collapsed", g.a_collapsed, lhs=r"a(t)")
display.equation("eq_a_offset", g.a_collapsed_offset, lhs=r"\lim_{t\to\infty}\big(a-\log t\big)")

# %% [markdown]
# For factorized OV ($\rho_{OV}=2a$) the equation separates into $e^a\,da/(2a)=\eta_{OV}(K-1)\,dt$,
# and sympy's integral is an exponential integral; since $\mathrm{Ei}(a)\,a\,e^{-a}\to1$, the
# solution is $e^a/a\simeq2\eta_{OV}(K-1)t$, and the proposed inverse
# $a=\log t+\log\log t+\log(2\eta_{OV}(K-1))$ satisfies it in the limit:

# %%
display.equation("eq_ei", g.ei_factorized, lhs=r"\int\frac{e^a}{2a}\,da")
display.equation("eq_ei_asym", g.ei_asymptotic, lhs=r"\lim_{b\to\infty}\mathrm{Ei}(b)\,b\,e^{-b}")
display.equation("eq_a_fact_ratio", g.a_factorized_ratio,
                 lhs=r"\lim_{t\to\infty}\frac{e^a/a}{2\eta_{OV}(K-1)t}\Big|_{a=\log t+\log\log t+\log 2\eta_{OV}(K-1)}")

# %% [markdown]
# **QK, CACO.** The OV equation gives $p(1-s)=\dot a\approx1/t$ and $1-p\approx ne^{-b}$, so
# $\dot b=r\,a\,p(1-p)(1-s)\approx r\log t\cdot ne^{-b}/t$, i.e. $\tfrac{d}{dt}e^b=rn\log t/t$.
# Sympy integrates:

# %%
display.equation("eq_odds_caco", g.odds_caco, lhs=r"e^b/n")
display.equation("eq_b_caco", g.b_caco, lhs=r"b")

# %% [markdown]
# **All four.** At large $a,b$ the QK potential is dominated by its exponential part,
# $\Psi\approx e^b/n$ (collapsed) or $\mathrm{Ei}(b)/2n\approx e^b/(2nb)$ (factorized), and
# {prf:ref}`thm-line` gives the odds in terms of $a$ and $b$; with $a\approx\log t$ and
# $b\approx\log(\text{odds})$ at leading order:

# %%
for name in cfg.parametrizations:
    display.equation(f"eq_odds_a_{name}", g.odds_in_a[name], lhs=rf"\mathrm{{odds}}_{{\mathrm{{{name}}}}}")
    display.equation(f"eq_odds_t_{name}", g.odds_in_t[name], lhs=rf"\mathrm{{odds}}_{{\mathrm{{{name}}}}}(t)")

# %% [markdown]
# ## 2. Integrating to the horizon
#
# Reduced ODE (population loss of the full model, {prf:ref}`prop-reduced-ode`; spec
# normalization $n$ = {glue:text}`n_compete_used`, $K$ = {glue:text}`n_classes_used`,
# $\eta_{OV}=1$). The slow logarithmic growth is integrated in log time $\tau=\log(1+t)$ with
# LSODA (`attnflow.sharpening.reduced.solve`), so each decade costs about the same number of
# steps. Every trajectory to $t$ = {glue:text}`horizon_used:.0e` took at most {glue:text}`nfev_max`
# right-hand-side evaluations ({glue:text}`nfev_total` for all of them; per trajectory in the
# table); a fixed-step integrator needs millions (see `benchmarks/bench_sharpening_longtime.py`).

# %%
rep.table()

# %%
fig, = rep.figures()

# %% [markdown]
# ## 3. Fitting the constants
#
# Fits over the window from $t$ = {glue:text}`fit_from_used:.0e` to {glue:text}`horizon_used:.0e`
# (`attnflow.sharpening.growth.fit_growth`, least squares on log-spaced times):
#
# - **OV.** The margin $u=ap$ grows with slope $du/d\log t$ equal to the law's slope on the same
#   window (→ 1 for collapsed OV, $\approx1+1/\log t$ for factorized OV), see the table. We fit $u$
#   rather than $a$: the laws are statements about $1-s\approx(K-1)e^{-u}$, and $a=u/p\to u$.
# - **QK, CACO.** The odds grow linearly in $\log^2t$ with fitted slope
#   {glue:text}`odds_slope_r1:.4f` at $r$ = {glue:text}`r_small:g` and {glue:text}`odds_slope_r10:.4f`
#   at $r$ = {glue:text}`r_large:g`, against $r/2$ asymptotically; on a finite window the law
#   $\tfrac r2u^2$ with $u=\log((K-1)t)$ predicts {glue:text}`odds_law_r1:.4f` and
#   {glue:text}`odds_law_r10:.4f`. The ratio of the two slopes is {glue:text}`odds_ratio:.3f`
#   for a ratio of learning rates of {glue:text}`lr_ratio_ratio:g`: the constant is proportional
#   to $\eta_{QK}/\eta_{OV}$.
# - **Q1.** The raw score difference grows only like $\log\log t$: the fitted slope of $b$
#   against $\log\log t$ is {glue:text}`b_slope_r1:.3f` ($r$ = {glue:text}`r_small:g`) and
#   {glue:text}`b_slope_r10:.3f` ($r$ = {glue:text}`r_large:g`), against 2 asymptotically
#   ({glue:text}`b_slope_law:.3f` for the finite-window law $\log(rn/2)+2\log u$).
#
# ```{admonition} Reading adopted for Q1
# :class: important
# The [paper] says the QK scalar grows as $O(\log^2t)$. In this reconstruction the quantity that
# grows as $\log^2t$ is the **attention odds** $e^b/n=p/(1-p)$ — equivalently the QK potential
# $\Psi(b)\approx e^b/n$ of {prf:ref}`thm-line` — with constant $r/2$; the score difference $b$
# itself grows as $2\log\log t$. We adopt reading (a) of the spec: the paper's "QK scalar" is
# the odds (or $\Psi$), because it is the only QK quantity that is $\Theta(\log^2t)$ with a
# constant proportional to $\eta_{QK}/\eta_{OV}$ (both plots above). See the
# [errata page](../errata.md), Q1.
# ```
#
# **Exercise.** Measure the growth exponent of the odds directly: over the fit window ($t\ge$
# `cfg.fit_from`) of the run `run = rep.runs[(name, r)]` below (arrays `run.t`, `run.odds`), fit a
# line to $\log(\text{odds})$ against $\log\log t$ and call its slope `exponent_mine`. For the
# CACO law $\tfrac r2\log^2t$ it tends to 2; on a finite window it is a little smaller.

# %% tags=["exercise"]
import numpy as np
name, r = ("CACO" if "CACO" in cfg.parametrizations else cfg.parametrizations[0]), min(cfg.lr_ratios)
run = rep.runs[(name, r)]
### BEGIN SOLUTION
window = run.t >= cfg.fit_from
exponent_mine = np.polyfit(np.log(np.log(run.t[window])), np.log(run.odds[window]), 1)[0]
### END SOLUTION

# %% tags=["exercise-check"]
exercises.check("exponent_mine", exponent_mine, expected=rep.odds_exponent, rtol=1e-6,
                hint="np.polyfit(x, y, 1)[0] is the slope of a least-squares line")

# %% [markdown]
# ## 4. Claims
#
# Each tolerance is the size of the terms the law neglects at the start of the fit window; a check
# is outside its domain when that size makes it uninformative or the law's assumptions do not hold
# there yet (why each term is needed: `attnflow.sharpening.reports.growth_rates`).
#
# - Symbolic limits and integrals must equal the stated laws exactly.
# - **A4** (OV slope): collapsed OV is compared with sympy's exact solution of the dominant-balance
#   equation, $u=\log(C+(K-1)t)$, $C$ fixed at the window start; the tolerance is the sum of the
#   neglected terms $1-p$ (attention not saturated) and $1-s$ (the law's $g\approx(K-1)e^{-u}$) at
#   the window start. Factorized OV adds the law's first neglected term, $(\log L+\log2(K-1))/L$
#   in $u$, of slope at most $(\log L+\log 2(K-1))/L^2$ (≈ 0.05 for $t\ge10^4$). Domain: a
#   tolerance $\le0.1$ (CAFO at $r=1$, $1-p\approx0.2$ at $t=10^4$, is outside).
# - **A5** (odds slope, CACO): Theorem 3 makes the odds $\tfrac r2a^2+C-b$ exactly; the law omits
#   $-b$, a relative slope error $2/(r\log^2 t)$ at the window start — the relative tolerance
#   (domain: at most 0.5, and $p\ge0.9$ there, where $1-p\approx ne^{-b}$); the ratio of the two
#   slopes equals the ratio of the $r$'s within the sum of the two. The table laws of all four
#   converge: odds / law$(a,b)$ rises towards 1 along each run (domain: odds $\ge b$ at the window
#   start; the laws keep the exponential part of $\Psi$, the odds, and drop the part of size $b$).
# - **A13** (spec §8.1): CACO odds$/\log^2t$ at $t=10^5$, printed to three decimals, so the
#   tolerance is half a unit of the last digit (the solver's error is $\sim10^{-8}$); only on the
#   spec's system ($n=9$, $K=5$, $a_0=b_0=0.1$, `rtol` $\le10^{-8}$) with a horizon $\ge10^5$.

# %% tags=["hide-input"]
rep.check_claims()
claims.finish()
