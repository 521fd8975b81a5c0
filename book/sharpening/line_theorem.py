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
# # Theorem 3 — the two circuits move along a line
#
# Divide the two reduced equations of {prf:ref}`prop-reduced-ode` by each other: time drops
# out, and so does the shared factor $a\,p\,g$. What remains integrates in closed form, and
# says that two *effective* coordinates, an OV potential $\Phi(a)$ and a QK potential
# $\Psi(b)$, move on a straight line whose slope is the learning-rate ratio. This page proves
# the statement in sympy for the four parametrizations, checks it along adaptive ODE
# trajectories, and measures how discrete gradient descent on the full torch model breaks it.
#
# ```{prf:theorem} Move along a line
# :label: thm-line
#
# **[paper]** statement ("output-value and query-key parameters move along a line, with
# relative speeds determined by their learning rates" {cite:p}`vashisht26a`);
# **[reconstruction]** potentials and proof (spec Theorem 3). Under the reduced flow with
# $r=\eta_{QK}/\eta_{OV}$, let
#
# $$\Phi(a)=\int\frac{a}{\rho_{OV}(a)}\,da,\qquad \Psi(b)=\int\frac{db}{\rho_{QK}(b)\,(1-p(b))}.$$
#
# Then for all $t$: $\;\Psi(b(t))-\Psi(b_0)=r\,\big(\Phi(a(t))-\Phi(a_0)\big)$.
# Collapsed OV: $\Phi=a^2/2$; factorized (balanced): $\Phi=a/2$. Collapsed QK:
# $\Psi=b+e^b/n$; factorized (balanced): $\Psi=\tfrac12\big(\ln b+\mathrm{Ei}(b)/n\big)$.
# ```

# %% tags=["parameters"]
n_classes = 5         # K, classes
n_compete = 9         # n, positions competing with the distinct token
lr_ratios = [0.5, 1.0, 3.0, 10.0]  # ratios r, η_QK/η_OV of the reduced flows
a0 = 0.1              # initial OV scalar a₀
b0 = 0.1              # initial QK scalar b₀
horizon = 1e5         # horizon of the reduced ODE (spec §8.1: 10⁵)
rtol = 1e-10          # relative tolerance of LSODA (absolute: rtol/100)
parametrizations = ["CACO", "CAFO", "FACO", "FAFO"]  # circuits to run
n_common = 3          # M, common tokens of the full model used for GD
gd_lr_ratio = 1.0     # r of the full model trained by GD
gd_steps = [0.4, 0.2, 0.1, 0.05]  # step sizes h of GD (model time per step)
gd_time = 20.0        # model time T of each GD run (T/h steps)

# %% tags=["hide-input"]
from attnflow import claims, params
from attnflow.sharpening.contracts import LINE_THEOREM
cfg = params.validate(globals(), LINE_THEOREM)

# %%
from attnflow import device, display, exercises, plotting
from attnflow.sharpening import data, reduced, reduction, symbolic, targets
from attnflow.sharpening.figures import line_plane, step_order

plotting.use_style()

# %% [markdown]
# ## 1. Symbolic proof
#
# For each parametrization sympy *integrates* $a/\rho_{OV}$ and $1/(\rho_{QK}(1-p))$ (with
# $1/(1-p)=1+e^b/n$), then differentiates $\Psi(b)-r\Phi(a)$ along the reduced flow
# $\dot a=\eta_{OV}\rho_{OV}\,p\,g$, $\dot b=r\eta_{OV}\rho_{QK}\,a\,p(1-p)\,g$ and simplifies
# (`symbolic.line_invariant`):

# %%
invariants = {name: symbolic.line_invariant(name) for name in symbolic.PARAMETRIZATIONS}
unbalanced = symbolic.line_invariant("FAFO", imbalance_ov=True)  # ρ_OV = √(4a² + δ²): Lemma 1 off balance
for name, li in invariants.items():
    display.equation(f"eq_phi_{name}", li.phi, lhs=rf"\Phi_{{\mathrm{{{name}}}}}(a)")
    display.equation(f"eq_psi_{name}", li.psi, lhs=rf"\Psi_{{\mathrm{{{name}}}}}(b)")
    display.equation(f"eq_deriv_{name}", li.derivative,
                     lhs=rf"\tfrac{{d}}{{dt}}\big[\Psi-r\Phi\big]_{{\mathrm{{{name}}}}}")
display.equation("eq_phi_unbalanced", unbalanced.phi,
                 lhs=r"\Phi(a)\ \text{for}\ \rho_{OV}=\sqrt{4a^2+\delta_{OV}^2}")
n_nonzero = symbolic.count_nonzero([li.derivative for li in invariants.values()], unbalanced.derivative)
print(f"derivatives that do not simplify to 0: {n_nonzero}")

# %% [markdown]
# All derivatives are identically zero, including for an unbalanced factorized OV pair
# ($\rho_{OV}=\sqrt{4a^2+\delta_{OV}^2}$, Lemma 1), whose potential is the last line. The reason
# is visible in the integrands: $\Psi'(b)\,\dot b=\eta_{QK}\,a\,p\,g$ and
# $r\,\Phi'(a)\,\dot a=r\,\eta_{OV}\,a\,p\,g$ — the rescalings $\rho$ cancel, whatever they are.
#
# ## 2. Along adaptive ODE trajectories
#
# The reduced ODE (spec normalization, $n$ = {glue:text}`n_compete`, $K$ =
# {glue:text}`n_classes`; it is the population-loss flow of the full model, see
# {prf:ref}`prop-reduced-ode`) is integrated with LSODA in log time up to
# $t$ = {glue:text}`horizon:.0e` for every parametrization and every ratio $r$
# (`reduced.solve_grid`). The table gives the drift of $\Psi-r\Phi$ (`run.drift()`) and the same
# drift relative to `rtol` times the size $S=\max_t(|\Psi|+r|\Phi|)$ of the potentials
# (`run.relative_drift()`).

# %%
with device.single_threaded():
    runs = reduced.solve_grid(cfg.parametrizations, cfg.lr_ratios, cfg.horizon, n_compete=cfg.n_compete,
                              n_classes=cfg.n_classes, a0=cfg.a0, b0=cfg.b0, rtol=cfg.rtol,
                              atol=cfg.rtol * 1e-2, matched=None)
display.table(reduced.drift_rows(runs))

# %% [markdown]
# How large may the relative drift be? LSODA at relative tolerance `rtol` keeps each state
# within about `rtol` of its size; $\Psi$ amplifies an error in $b$ by $\Psi'(b)\approx\Psi$, so
# the drift of $\Psi-r\Phi$ scales with `rtol` times the size $S$ of the potentials, and
# accumulates over the solver's steps. We allow a drift of `DRIFT_FACTOR` $\cdot$ `rtol` $\cdot S$
# with the factor below (the measured factor is at most about 5 on every run we made, $r$ up to 30
# and $t$ up to $10^6$). A fixed bound would fail for large $r$ or long horizons, where $\Psi$
# reaches $10^3$–$10^4$, without any loss of accuracy.

# %%
DRIFT_FACTOR = 50.0  # allowed drift / (rtol · S): the solver's error accumulated over its steps
display.glue(n_compete=cfg.n_compete, n_classes=cfg.n_classes, horizon=cfg.horizon, n_runs=len(runs),
             drift_max=reduced.largest_drift(runs), rel_drift_max=reduced.largest_drift(runs, relative=True))
fig = line_plane(runs, title=f"Theorem 3: trajectories in (Φ, Ψ) up to t = {cfg.horizon:.0e} are lines of "
                             "slope r (dotted)")

# %% [markdown]
# Every trajectory lies on its dotted line of slope $r$; over the {glue:text}`n_runs` runs the
# largest drift of $\Psi-r\Phi$ is {glue:text}`drift_max:.1e`, and at most
# {glue:text}`rel_drift_max:.2f` times `rtol`·$S$: the solver's tolerance times the size of
# $\Psi$, which grows to $\sim10^2$–$10^4$.
#
# **Exercise.** Read the slope of one trajectory in the $(\Phi,\Psi)$ plane: for the run
# `run = runs[(cfg.parametrizations[0], cfg.lr_ratios[-1])]` (arrays `run.a`, `run.b`; the
# potentials are `run.system.phi` and `run.system.psi`, the closed forms of the theorem box),
# compute `slope_mine` $=\big(\Psi(b_{\text{end}})-\Psi(b_0)\big)/\big(\Phi(a_{\text{end}})-\Phi(a_0)\big)$.
# Theorem 3 says it is the learning-rate ratio $r$.

# %% tags=["exercise"]
run = runs[(cfg.parametrizations[0], cfg.lr_ratios[-1])]
### BEGIN SOLUTION
s = run.system
slope_mine = (s.psi(run.b[-1]) - s.psi(run.b[0])) / (s.phi(run.a[-1]) - s.phi(run.a[0]))
### END SOLUTION

# %% tags=["exercise-check"]
exercises.check("slope_mine", slope_mine, expected=cfg.lr_ratios[-1], rtol=1e-5,
                hint="differences of the potentials between the last and the first stored time")

# %% [markdown]
# ## 3. Discrete gradient descent on the full model
#
# Gradient *descent* is the explicit Euler discretisation of the flow, so the invariant is no
# longer exact. We train the torch model (`reduction.gd_on_manifold`, through `attnflow.sweep.train`,
# population loss, $K$ = {glue:text}`n_classes`, $M$ = {glue:text}`n_common`, $n$ =
# {glue:text}`n_compete`) from the manifold with steps $h$, $\theta\leftarrow\theta-h\,\eta\odot\nabla L$,
# for model time $T$ = {glue:text}`gd_time`, read $(a,b)$ off the matrices at every step
# and evaluate $\Psi-r'\Phi$ of the equivalent reduced system. Euler's global error is $O(h)$,
# so the drift should halve with the step — as long as the step is stable. The table gives
# $\lambda_{\max}$, the largest eigenvalue of $D^{1/2}HD^{1/2}$ (the loss Hessian $H$ scaled by
# the learning rates $D$) along the flow that GD discretizes: the reduced ODE forecasts that flow
# from $(a_0,b_0)$, and $\lambda_{\max}$ is the largest at $t=0$, $T/2$ and $T$
# (`reduction.flow_curvature`). GD is stable for $h\lambda_{\max}<2$. `reduction.gd_step_study`
# runs GD at every step and reads the local order $\Delta\log(\text{drift})/\Delta\log h$
# between consecutive steps.

# %%
task = data.Task(n_classes=cfg.n_classes, n_common=cfg.n_common, seq_len=cfg.n_compete + 2)  # query + distinct
with device.single_threaded():
    studies = {name: reduction.gd_step_study(name, task, lr_qk=cfg.gd_lr_ratio, steps=cfg.gd_steps,
                                             t_max=cfg.gd_time, a0=cfg.a0, b0=cfg.b0)
               for name in cfg.parametrizations}
display.table([st.row() for st in studies.values()], floatfmt="{:.3g}")

# %%
display.glue(n_common=cfg.n_common, gd_time=cfg.gd_time, h_max=max(cfg.gd_steps),
             curvature_max=max(st.curvature for st in studies.values()),
             order_min=min(st.finest_order for st in studies.values()),
             order_max=max(st.finest_order for st in studies.values()))
fig = step_order(studies, runs, DRIFT_FACTOR,
                 title="Theorem 3 is exact for the flow and first-order broken by discrete steps")

# %% [markdown]
# The local order between the two finest steps lies between {glue:text}`order_min:.3f` and
# {glue:text}`order_max:.3f`: the invariant drifts exactly at Euler's first order, so the line
# of {prf:ref}`thm-line` holds for gradient descent up to an error proportional to the
# learning rate. Here $h_{\max}$ = {glue:text}`h_max:g` and $\lambda_{\max}$ =
# {glue:text}`curvature_max:.3f`; GD is a discretisation of the flow only while their product
# stays below the stability limit 2.
#
# ## 4. Claims
#
# Tolerances and domains.
#
# - The symbolic derivatives must simplify to exactly zero.
# - **Adaptive ODE, relative drift.** drift $\le$ `DRIFT_FACTOR` $\cdot$ `rtol` $\cdot S$
#   (section 2), for every parametrization over all its ratios.
# - **The spec's target** (drift below $10^{-6}$, §8.1) is checked on its own configuration:
#   $n=9$, $K=5$, $a_0=b_0=0.1$, $r\in\{1,10\}$, `rtol` $\le10^{-10}$, read over the spec's horizon
#   $t\le10^5$ (`run.drift_until(1e5)`: a longer run, as the paper profile's $10^6$, is read up to
#   there; a shorter one is outside).
# - **GD.** The expected local order is 1; between steps $h$ and $h/2$ it deviates from 1 by
#   the relative size of the $O(h^2)$ term, a few percent when $h_{\min}\lambda_{\max}\le0.1$
#   (`ASYMPTOTIC_HL`), so we allow $|\text{order}-1|\le0.05$ (`ORDER_ATOL`) there, and require the
#   drift to shrink monotonically with $h$. Both need a stable step, $h_{\max}\lambda_{\max}<2$
#   (`STABLE_HL`); above it GD is not a discretisation of the flow and the checks are outside their
#   domain. $\lambda_{\max}$ is read off the flow forecast from $(a_0,b_0)$, the state at the start
#   of the GD runs, never off the GD runs the checks measure.

# %%
ORDER_ATOL = 0.05  # |order − 1| at the finest pair of steps
ASYMPTOTIC_HL = 0.1  # h_min λ_max: O(h²) term small against O(h)
STABLE_HL = 2.0  # h_max λ_max: stability limit of the explicit Euler step
SPEC_HORIZON = targets.REDUCED_CONFIG["horizon"]  # 1e5: the spec's drift is read over t ≤ 1e5
spec = claims.domain(
    ("spec §8.1 system: n = 9, K = 5, a0 = b0 = 0.1",
     targets.is_reduced_config(cfg.n_compete, cfg.n_classes, cfg.a0, cfg.b0),
     f"n = {cfg.n_compete}, K = {cfg.n_classes}, a0 = {cfg.a0:g}, b0 = {cfg.b0:g}"),
    ("r = 1 and r = 10 among the ratios", {1.0, 10.0} <= set(cfg.lr_ratios), f"r ∈ {cfg.lr_ratios}"),
    ("rtol ≤ 1e-10 (the spec's tight solver)", cfg.rtol <= targets.REDUCED_CONFIG["rtol"], f"rtol = {cfg.rtol:g}"),
    ("horizon ≥ 1e5: the run covers the spec's horizon (its drift is read over t ≤ 1e5)",
     cfg.horizon >= SPEC_HORIZON, f"horizon = {cfg.horizon:g}"),
)
forecast = claims.state("λ_max along the flow from (a0, b0), forecast by the reduced ODE", t=0.0)

claims.check("A3", n_nonzero, 0, atol=0, source="reconstruction",
             what="sympy: nonzero d/dt[Ψ − rΦ] over the four parametrizations and unbalanced FO")
for name in cfg.parametrizations:
    claims.check("A3", reduced.largest_drift(runs, name, relative=True), 0.0, atol=DRIFT_FACTOR,
                 tolerance="drift / (rtol · max_t(|Ψ| + r|Φ|)): solver tolerance scaled by the potentials",
                 what=f"{name}: max relative drift of Ψ − rΦ along LSODA trajectories, r ∈ {cfg.lr_ratios}")
for name in cfg.parametrizations:
    claims.check("A3", reduced.largest_drift(runs, name, ratios=[1.0, 10.0], until=SPEC_HORIZON), 0.0,
                 atol=targets.DRIFT_MAX, source="paper + reconstruction", domain=spec,
                 what=f"{name}: max |drift of Ψ − rΦ| at the spec's configuration, r ∈ {{1, 10}} (§8.1)")
for name, st in studies.items():
    claims.check("A3", st.finest_order, 1.0, atol=ORDER_ATOL, measured_from=0.0,
                 domain=claims.domain(
                     (f"GD stable: h_max·λ_max < {STABLE_HL:g}", st.h_max * st.curvature < STABLE_HL,
                      f"h_max = {st.h_max:g}, λ_max = {st.curvature:.3g}"),
                     (f"finest pair asymptotic: h_min·λ_max ≤ {ASYMPTOTIC_HL:g}",
                      st.h_min * st.curvature <= ASYMPTOTIC_HL, f"h_min·λ_max = {st.h_min * st.curvature:.3g}"),
                     reads=forecast),
                 what=f"{name}: GD local order of the invariant drift, finest steps")
    claims.check("A3", st.drift.tolist(), predicate=reduction.strictly_decreasing, measured_from=0.0,
                 tolerance="drift decreases strictly as h decreases",
                 domain=claims.domain(
                     (f"GD stable: h_max·λ_max < {STABLE_HL:g}", st.h_max * st.curvature < STABLE_HL,
                      f"h_max = {st.h_max:g}, λ_max = {st.curvature:.3g}"), reads=forecast),
                 what=f"{name}: GD drift for h = {st.steps.tolist()}")
claims.finish()
