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
# integrates the reduced flow to $t$ = {glue:text}`horizon:.0e` with an adaptive solver in
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
from attnflow.sharpening import growth, reduced, symbolic, targets
from attnflow.sharpening.figures import growth_curves

plotting.use_style()
g = symbolic.growth_laws()  # the dominant-balance equations solved, integrated and taken to their limits

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
n_wrong_laws = symbolic.count_nonzero(g.residuals)  # sympy's offsets, ratios and odds against the stated laws
print(f"limits and integrals that differ from the laws: {n_wrong_laws}")

# %% [markdown]
# ## 2. Integrating to the horizon
#
# Reduced ODE (population loss of the full model, {prf:ref}`prop-reduced-ode`; spec
# normalization $n$ = {glue:text}`n_compete`, $K$ = {glue:text}`n_classes`,
# $\eta_{OV}=1$). The slow logarithmic growth is integrated in log time $\tau=\log(1+t)$ with
# LSODA (`reduced.solve_grid`: every parametrization, every ratio), so each decade costs about the
# same number of steps. The runs store the window start `fit_from` and, for A13, $t=10^5$ among
# their times. Every trajectory to $t$ = {glue:text}`horizon:.0e` took at most {glue:text}`nfev_max`
# right-hand-side evaluations ({glue:text}`nfev_total` for all of them; per trajectory in the
# table); a fixed-step integrator needs millions (see `benchmarks/bench_sharpening_longtime.py`).
# `growth.fit_growth` fits each run over the window (section 3); the table shows the attention
# $p$ at the window start, the end state, the fitted OV slope against the law's and the tolerance of
# A4 (section 4).

# %%
A13_T = targets.REDUCED_CONFIG["horizon"]  # the spec's time of odds/log² t (10⁵)
runs = reduced.solve_grid(cfg.parametrizations, cfg.lr_ratios, cfg.horizon, n_compete=cfg.n_compete,
                          n_classes=cfg.n_classes, a0=cfg.a0, b0=cfg.b0, times=[cfg.fit_from, A13_T], n_times=300,
                          rtol=cfg.rtol, atol=cfg.rtol * 1e-2, matched=None)
fits = {key: growth.fit_growth(run, cfg.fit_from) for key, run in runs.items()}
display.table(growth.fit_rows(runs, fits))

# %%
display.glue(horizon=cfg.horizon, fit_from=cfg.fit_from, n_compete=cfg.n_compete, n_classes=cfg.n_classes,
             nfev_max=max(run.nfev for run in runs.values()), nfev_total=sum(run.nfev for run in runs.values()))
fig = growth_curves(runs, title=f"Theorem 4: reduced flow to t = {cfg.horizon:.0e} (log-time LSODA), "
                                f"n={cfg.n_compete}, K={cfg.n_classes}")

# %% [markdown]
# ## 3. Fitting the constants
#
# Fits over the window from $t$ = {glue:text}`fit_from:.0e` to {glue:text}`horizon:.0e`
# (`growth.fit_growth`, least squares on log-spaced times). The QK laws are read on CACO at the
# smallest and the largest ratio $r$:

# %%
r_small, r_large = min(cfg.lr_ratios), max(cfg.lr_ratios)
caco_small = growth.fit_or_nan(fits, "CACO", r_small, cfg.fit_from)  # NaNs when CACO was not run
caco_large = growth.fit_or_nan(fits, "CACO", r_large, cfg.fit_from)
odds_ratio = caco_large.odds_slope / caco_small.odds_slope  # the two odds slopes, against r_large / r_small
# the names _r1, _r10 (at r_small, r_large) are the ones the errata page cites
display.glue(r_small=r_small, r_large=r_large, lr_ratio_ratio=r_large / r_small, odds_ratio=odds_ratio,
             odds_slope_r1=caco_small.odds_slope, odds_slope_r10=caco_large.odds_slope,
             odds_law_r1=caco_small.odds_slope_law, odds_law_r10=caco_large.odds_slope_law,
             b_slope_r1=caco_small.b_loglog_slope, b_slope_r10=caco_large.b_loglog_slope,
             b_slope_law=caco_small.b_loglog_slope_law,
             odds_l2_1e5_r1=growth.odds_per_log2(runs.get(("CACO", 1.0)), A13_T),
             odds_l2_1e5_r10=growth.odds_per_log2(runs.get(("CACO", 10.0)), A13_T))
print(f"CACO odds slopes in log² t: {caco_small.odds_slope:.4f} (r = {r_small:g}), "
      f"{caco_large.odds_slope:.4f} (r = {r_large:g}); ratio {odds_ratio:.3f}")

# %% [markdown]
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
# `cfg.fit_from`) of the run `run = runs[(name, r)]` below (arrays `run.t`, `run.odds`), fit a
# line to $\log(\text{odds})$ against $\log\log t$ and call its slope `exponent_mine`. For the
# CACO law $\tfrac r2\log^2t$ it tends to 2; on a finite window it is a little smaller.

# %% tags=["exercise"]
import numpy as np
name, r = ("CACO" if "CACO" in cfg.parametrizations else cfg.parametrizations[0]), min(cfg.lr_ratios)
run = runs[(name, r)]
### BEGIN SOLUTION
window = run.t >= cfg.fit_from
exponent_mine = np.polyfit(np.log(np.log(run.t[window])), np.log(run.odds[window]), 1)[0]
### END SOLUTION

# %% tags=["exercise-check"]
exercises.check("exponent_mine", exponent_mine, expected=growth.odds_exponent(run, cfg.fit_from), rtol=1e-6,
                hint="np.polyfit(x, y, 1)[0] is the slope of a least-squares line")

# %% [markdown]
# ## 4. Claims
#
# Each tolerance is the size of the terms the law neglects at the start of the fit window; a check
# is outside its domain when that size makes it uninformative or the law's assumptions do not hold
# there yet. The domains read the parameters and the state at the window start $t$ =
# {glue:text}`fit_from:.0e` (`fit.start`: the state before the fitted stretch, never the fitted
# slope); why each term is needed is in `attnflow.sharpening.growth`.
#
# - Symbolic limits and integrals must equal the stated laws exactly.
# - **A4** (OV slope): collapsed OV is compared with sympy's exact solution of the dominant-balance
#   equation, $u=\log(C+(K-1)t)$, $C$ fixed at the window start; the tolerance
#   (`growth.ov_slope_tolerance`) is the sum of the neglected terms $1-p$ (attention not saturated)
#   and $1-s$ (the law's $g\approx(K-1)e^{-u}$) at the window start. Factorized OV adds the law's
#   first neglected term, $(\log L+\log2(K-1))/L$ in $u$, of slope at most
#   $(\log L+\log 2(K-1))/L^2$ (≈ 0.05 for $t\ge10^4$). Domain (`growth.ov_slope_domain`): a
#   tolerance $\le$ `growth.INFORMATIVE_TOL` = 0.1 (CAFO at $r=1$, $1-p\approx0.2$ at $t=10^4$, is
#   outside).
# - **A5** (odds slope, CACO): Theorem 3 makes the odds $\tfrac r2a^2+C-b$ exactly; the law omits
#   $-b$, a relative slope error $2/(r\log^2 t)$ at the window start — the relative tolerance
#   (`growth.odds_slope_tolerance`; domain `growth.odds_slope_domain`: at most 0.5, and $p\ge0.9$
#   there, where $1-p\approx ne^{-b}$); the ratio of the two slopes equals the ratio of the $r$'s
#   within the sum of the two. The table laws of all four converge: odds / law$(a,b)$ rises towards 1
#   along each run (domain `growth.large_b_domain`: odds $\ge b$ at the window start; the laws keep
#   the exponential part of $\Psi$, the odds, and drop the part of size $b$).
# - **A13** (spec §8.1): CACO odds$/\log^2t$ at $t=10^5$, printed to `A13_DIGITS` = 3 decimals, so
#   the tolerance is half a unit of the last digit (the solver's error is $\sim10^{-8}$ at
#   `rtol` $\le$ `A13_RTOL_MAX`); only on the spec's system ($n=9$, $K=5$, $a_0=b_0=0.1$) with a
#   horizon $\ge10^5$.

# %%
A13_DIGITS = 3  # printed decimals of the spec's odds/log² t
A13_RTOL_MAX = 1e-8  # solver tolerance for which the solver's error is far below half a unit
claims.check("A4", n_wrong_laws, 0, atol=0, source="reconstruction",
             what="sympy: dominant-balance limits and integrals differ from the laws")
for (name, r), fit in fits.items():
    claims.check("A4", fit.u_slope, fit.u_slope_law, atol=growth.ov_slope_tolerance(fit),
                 domain=growth.ov_slope_domain(fit), measured_from=cfg.fit_from,
                 what=f"{name}, r={r:g}: du/dlog t over the fit window", source="reconstruction")
caco_run = claims.domain(("CACO among the parametrizations", "CACO" in cfg.parametrizations,
                          f"{cfg.parametrizations}"))
for fit in (caco_small, caco_large):
    claims.check("A5", fit.odds_slope, fit.odds_slope_law, rtol=growth.odds_slope_tolerance(fit.lr_ratio, cfg.fit_from),
                 domain=caco_run & growth.odds_slope_domain(fit), measured_from=cfg.fit_from,
                 what=f"CACO, r={fit.lr_ratio:g}: d(odds)/d(log² t) vs (r/2)·d(u_law²)/d(log² t)",
                 source="paper + reconstruction")
claims.check("A5", odds_ratio, r_large / r_small,  # within the sum of the two slopes' relative errors
             rtol=growth.odds_slope_tolerance(r_small, cfg.fit_from)
             + growth.odds_slope_tolerance(r_large, cfg.fit_from),
             domain=caco_run & claims.domain(("two distinct ratios", r_large > r_small, f"r ∈ {cfg.lr_ratios}"))
             & growth.odds_slope_domain(caco_small) & growth.odds_slope_domain(caco_large),
             measured_from=cfg.fit_from, what="CACO: ratio of the odds slopes vs ratio of the learning-rate ratios",
             source="paper + reconstruction")
for (name, r), fit in fits.items():
    claims.check("A5", fit.odds_over_law_in_a.tolist(), predicate=growth.rises_towards_one,
                 tolerance="increasing towards 1 over the window", domain=growth.large_b_domain(fit),
                 measured_from=cfg.fit_from, what=f"{name}, r={r:g}: odds / law in (a, b)", source="reconstruction")
for r in (1.0, 10.0):  # the spec's two ratios
    claims.check("A13", growth.odds_per_log2(runs.get(("CACO", r)), A13_T), targets.REDUCED[(r, "CACO")].odds_l2_end,
                 atol=targets.half_unit(A13_DIGITS), what=f"CACO odds/log² t at t = 1e5, r={r:g}",
                 source="reconstruction",
                 domain=claims.domain(
                     ("spec §8.1 system: n = 9, K = 5, a0 = b0 = 0.1",
                      targets.is_reduced_config(cfg.n_compete, cfg.n_classes, cfg.a0, cfg.b0),
                      f"n = {cfg.n_compete}, K = {cfg.n_classes}, a0 = {cfg.a0:g}, b0 = {cfg.b0:g}"),
                     ("CACO run with this r", ("CACO", r) in runs, f"r ∈ {cfg.lr_ratios}"),
                     (f"horizon ≥ {A13_T:g}", cfg.horizon >= A13_T, f"horizon = {cfg.horizon:g}"),
                     (f"rtol ≤ {A13_RTOL_MAX:g}", cfg.rtol <= A13_RTOL_MAX, f"rtol = {cfg.rtol:g}")))
claims.finish()
