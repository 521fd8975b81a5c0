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
# # The focus–dilution cycle, in the flow and in training
#
# The theory pages follow the exact population gradient flow. Here the same story is told twice
# side by side: by the flow, and by a model **trained** with gradient descent on $N$ sampled
# Markov sequences of length $s$. The stages are not drawn by hand: a stage detector reads them
# off the loss, the attention and the singular values of $W_0$ (rules in
# `attnflow.focus_dilution.stages`), for the flow and for the trained model alike.
#
# ```{prf:theorem} The focus–dilution cycle
# :label: thm-cycle
#
# **[paper]** {cite:p}`chen2026focus`: from small initialization a one-layer transformer on
# Markov data goes through a recurrent focus–dilution cycle (claim B1): condensation, a plateau
# with frozen attention, **focus** of attention on frequent tokens (B6), **dilution** of that
# focus by mass redistribution in the embeddings (B7), and — once a small asymmetry $\delta$
# among rare tokens lifts a degenerate critical point — an **escape** along a new embedding
# direction that starts the next cycle (B9).
# **[reconstruction]** model, chain and data (spec §4–§5): the last token of each sequence
# queries its context $x_1,\dots,x_s$ and predicts $x_{s+1}$; training is full-batch GD on the
# cross-entropy of these $N$ predictions. As $N,s\to\infty$ this loss tends to the population
# loss of the flow (see {doc}`finite_sample`).
# ```

# %% tags=["parameters"]
chain = "hub"           # 'hub' (spec §5.2 family) or 'dirichlet' (random rows, n_low + 1 tokens)
n_low = 4               # n, low-frequency tokens (vocabulary d is n + 1)
a_h = 0.5               # P(hub → hub)
b_h = 0.3               # P(low → hub)
c_cyc = 0.4             # extra mass on the cyclic successor of a low token
delta = 0.1             # δ, asymmetry among the low tokens (> 0 lets the flow escape θ_c²)
chain_seed = 0          # seed of the Dirichlet chain (used when chain is 'dirichlet')
d_model = 8             # m, embedding width
init_scale = 1e-3       # ε, initialization std
score_scale = 1.0       # c, attention score scale
seed = 1                # initialization seed (1 is the spec's listing)
n_samples = 4096        # N, training sequences per data seed
seq_len = 16384         # s, context length
n_seeds = 3             # data seeds data_seed, data_seed + 1, … trained as one batch
optimizer = "gd"        # 'gd' (Euler scheme of the flow) or 'adam'
lr = 1.0                # η, learning rate (flow time per GD step)
steps = 6000            # training steps (flow time η · steps)
record_every = 10       # record every this many steps
data_seed = 0           # seed of the first data set
device = "auto"         # 'auto', 'cpu' or 'cuda'

# %% tags=["hide-input"]
from attnflow import claims, params
from attnflow.focus_dilution.contracts import CYCLE
cfg = params.validate(globals(), CYCLE)

# %%
import numpy as np

from attnflow import display
from attnflow.focus_dilution import closed_forms, escape, figures, pagesetup, stages, training, transverse
from attnflow.focus_dilution.chain import hub_family

markov = pagesetup.start_training_page(cfg)  # seeds everything; the chain of the parameters
horizon = lr * steps  # the flow time GD reaches
flow = pagesetup.page_flow(cfg, markov)  # the population gradient flow from θ(0) to the horizon (BDF, float64)
stages_flow = stages.detect_run(flow)  # its stages, read off the loss, the attention and σ(W0)
trained = pagesetup.trained_runs(cfg, markov, dtype="float32")  # one GD run per data seed, one batch, same θ(0)
stages_trained = [stages.detect_run(run) for run in trained]
eta_lam = training.step_sharpness(flow, lr, np.linspace(0.2 * horizon, horizon, 5))  # η λ_max(∇²L) along the flow
print(f"{markov.name}; flow {flow.wall_s:.1f} s ({flow.nfev} gradient evaluations); {n_seeds} training runs "
      f"{trained[0].wall_s:.1f} s on {trained[0].settings['device']}; η λ_max along the flow (t: value): {eta_lam}")

# %% [markdown]
# ## 1. One flow, several training runs
#
# The flow integrates $\dot\theta=-\nabla L(\theta)$ of the population loss (BDF, float64). Each
# training run samples $N$ sequences from the chain started at $\pi$ (its own data seed;
# {glue:text}`n_seeds` seeds, trained together as one batch) and runs full-batch GD in float32
# from the **same** initial $\theta(0)$. GD with step $\eta$ for $k$ steps is the Euler scheme of
# the flow up to time $\eta k$; we use $\eta=$ {glue:text}`lr_used:.2g`, twenty times the spec's
# Euler step, which is stable as long as $\eta\,\lambda_{\max}(\nabla^2L)<2$ — checked along the
# flow: $\eta\lambda_{\max}$ first reaches 2 at $t\approx$ {glue:text}`t_unstable:.0f` (nan: never
# within the horizon) and is {glue:text}`lam_at_escape:.2f` at the flow's escape. Up to there GD is
# a faithful discretisation of the flow; after it GD runs at the edge of stability and its late
# trajectory may differ from the flow's even with infinite data ({doc}`robustness`).

# %% [markdown]
# ## 2. The cycle figure
#
# First the whole run on a logarithmic time axis (the flow, and the first data seed), where the
# loss steps from $\log d$ (uniform prediction) to $H(\pi)$ (unigram saddle $\theta_c^1$), to
# $L(\theta_c^2)$ (drawn: the closed form of the symmetric chain, $\delta=0$, spec R4) and on
# towards the bigram optimum. Shading: stages found by the detector (C condensation, P plateau,
# F focus, D dilution, E escape; the digit is the cycle).

# %%
L_c2_sym = closed_forms.theta_c2_loss(hub_family(n_low, a_h, b_h, c_cyc, 0.0)) if cfg.chain == "hub" else np.nan
refs = {r"$\log d$": np.log(markov.d), r"$H(\pi)$": markov.unigram_entropy(), "bigram optimum": markov.bigram_loss(),
        r"$L(\theta_c^2)$, $\delta=0$": L_c2_sym}
trained_title = f"trained ({trained[0].label}): N = {n_samples}, s = {seq_len}"
fig = figures.cycle_loss(flow, stages_flow, trained[0], stages_trained[0], refs, horizon, trained_title)

# %% [markdown]
# The cycle itself happens late and fast compared with the plateaus. Zoomed in, on a linear time
# axis from just before the first focus: attention mass on the hub (all queries, and the
# low-frequency queries alone), attention entropy $\sum_i\pi_iH(A_{i\cdot})$ and the singular
# values of $W_0$ (a new one rising is a new embedding direction).

# %%
fig = figures.cycle_zoom(flow, stages_flow, trained[0], stages_trained[0], horizon, trained_title)

# %% [markdown]
# The detected stages, with the median loss over each stage, and the measurements of each seed:

# %%
display.table(stages.stage_rows({"flow": stages_flow} | {f"trained ({run.label})": detected
                                                          for run, detected in zip(trained, stages_trained)}))

# %%
per_seed = [stages.cycle_measures(run, detected, markov, score_scale) for run, detected in zip(trained, stages_trained)]
flow_measures = stages.cycle_measures(flow, stages_flow, markov, score_scale)
means = stages.seed_means(per_seed)  # over the seeds where each is measured
display.glue(n_seeds=n_seeds, lr_used=lr, t_unstable=training.first_unstable(eta_lam), hub_token=markov.hub,
             b6_sign_frac=means["sign_frac"], b6_hub_before=means["hub_before"], b6_hub_after=means["hub_after"],
             b6_gainer=means["gainer"], b7_da_hub=means["da_hub"], b7_da_low_max=means["da_low_max"],
             b7_peak=means["peak"], b7_after=means["after"], b7_peak_flow=flow_measures.peak,
             b7_after_flow=flow_measures.after, b9_s2_growth=means["s2_growth"], b9_n_cycle2=means["n_cycle2"])
display.table(stages.measure_rows([run.label for run in trained], per_seed))

# %% [markdown]
# ## 3. Reading the cycle on the trained model
#
# The numbers below are means over the {glue:text}`n_seeds` data seeds.
#
# **Focus (B6).** Near $\theta_c^1$ the attention rows move along
# $\partial_\kappa A_{ik}=c\alpha^2\pi_i\pi_k(\pi_k-\|\pi\|^2)$ (spec R3, closed form of
# `closed_forms.dkappa_A`): only tokens with $\pi_k>\|\pi\|^2$ — here the hub — gain attention.
# Over the first focus stage, {glue:text}`b6_sign_frac:.0%` of the entries of $\Delta A$ have the
# predicted sign (entries with $|\partial_\kappa A_{ik}|$ above 1 % of its largest; B6 asks that most
# seeds have every such entry with its predicted sign), and the hub
# attention rises from {glue:text}`b6_hub_before:.3f` to {glue:text}`b6_hub_after:.3f` within that
# stage. From $\theta_c^1$ to the end of the first dilution the token that gains the most attention,
# $\arg\max_k\sum_i\pi_i\Delta A_{ik}$, is token {glue:text}`b6_gainer` for most seeds (the hub is
# token {glue:text}`hub_token`).
#
# **Dilution (B7).** From the first plateau to the end of the first dilution the hub
# amplitude $a_0=\langle h_0,u\rangle$ moves by {glue:text}`b7_da_hub:+.3f` while the low-token
# amplitudes move by {glue:text}`b7_da_low_max:+.3f` at most: opposite directions (mass
# redistribution). The attention of low-frequency queries on the hub peaks at
# {glue:text}`b7_peak:.4f` and falls back to {glue:text}`b7_after:.4f` (flow:
# {glue:text}`b7_peak_flow:.4f` → {glue:text}`b7_after_flow:.4f`).
#
# **Escape and the next cycle (B9).** $\sigma_2(W_0)$ grows by a factor
# {glue:text}`b9_s2_growth:.0f` from the end of the first dilution to the horizon: a new embedding
# direction, and a second focus and dilution follow ({glue:text}`b9_n_cycle2:.1f` stages of cycle 2
# per seed).

# %% [markdown]
# ## 4. Claims
#
# **Domains.** The full cycle is predicted for the hub family with $\delta>0$ (the escape needs
# the asymmetry), $m\ge2$ (a direction to escape along) and $g>0$ (frequency-driven focus), within
# a horizon long enough: R2's plateau time puts the first focus within the horizon, and R5's
# forecast made at the end of condensation (the flow continued on $\mathcal M_1$ from that state,
# $\int\sigma_{\max}(M_\perp)dt$ against $\log(10\sigma_2/|\alpha|)+\log2$) puts the escape within it,
# at $t=$ {glue:text}`t_escape_due:.0f`. The end of condensation is the first stored time at which the
# stage detector, reading the flow *up to that time only*, finds condensation over
# (`stages.end_of_condensation`; $t=$ {glue:text}`t_cond:g`): its place does not depend on anything
# later. The domains read the state there, so B1 is measured from there on: the stages that end after
# $t_{\rm cond}$ must contain plateau → focus → dilution → escape → focus → dilution (condensation is what
# placed $t_{\rm cond}$). No domain reads the flow's later stages (they are B1's
# measurement) nor the stages found in the trained runs: inside the domain the theory predicts
# every stage, and a seed in which the detector misses the stage a claim is measured on counts
# against that claim. The claims on training need GD stable through the forecast escape
# ($\eta\lambda_{\max}<2$ there, on the forecast run). B1's order (the escape after the first
# dilution), the end of the first dilution that B6's gainer and B7 are read at, and the
# $\theta_c^2$ plateau of B14 also need the escape to be R5's growth from
# $\theta_c^2$: the transverse level condensation leaves untouched, $\sigma_2(W_0)$ at its end, at
# most 0.01 (the floor of R5's window; at $\epsilon=0.03$ it is $\approx0.12$ and the tenfold rise
# starts with the first focus, so that the detector can count the first dilution into cycle 2).
# Elsewhere they are recorded as outside their domain. The theory
# times the escape but not the next cycle, whose focus can be much slower than the first (ten
# times, on some chains). The claims that need the next cycle (B1, and B9's second focus and
# dilution) allow it as long as R2 predicts for the first cycle to reach its focus: the forecast
# end of cycle 2 is the forecast escape plus R2's plateau time, $t=$ {glue:text}`t_cycle2:.0f`,
# read from the state at the end of condensation. The claims on training need it within the
# horizon; B1 on the flow is measured on the flow integrated up to it where that lies past the
# horizon (here up to $t=$ {glue:text}`flow_cycle_t:.0f`). A second cycle slower than that fails
# them: the theory does not say more.
#
# **Statistics.** The stage checks are predicates on the detector's output. Their thresholds are
# amplitudes, not times: a focus swing must exceed 0.01 in attention (plateau wiggles are
# $\sim10^{-4}$), an escape a tenfold growth of $\sigma_2(W_0)$. Finite samples move the stage
# *times* (sampling noise in the transition counts acts like an extra asymmetry of size
# $\sim(N\pi_{\min})^{-1/2}$, {glue:text}`noise_delta:.3f` here, and tilts the neutral directions of
# $\theta_c^1$; {doc}`finite_sample`), so no time is compared, and a stage claim on training holds
# when most seeds show it, decided on the one-sided 95 % Wilson lower bound of the share (above ½:
# with three seeds, all three; a seed that loses a stage to sampling noise fails the claim). B6's
# signs are such a share too: a seed shows R3's prediction when every entry of $\Delta A$ with
# $|\partial_\kappa A_{ik}|$ above 1 % of the largest has its predicted sign. Measured quantities are
# compared through the mean over seeds with its 95 % Student-t interval, so the tolerance is the
# measured seed-to-seed spread: the growth of $\sigma_2(W_0)$ after the first dilution (interval
# above $10\times$) and the level of the second plateau. The level of the second plateau is compared with the
# flow's: a fit of the
# $k\approx2d+1$ rank-one parameters to $N$ samples has an expected excess population loss $k/(2N)$
# (Wilks), and we allow three times that, {glue:text}`tol_c2:.1e`, on top of the interval.
#
# First the state every domain reads (the flow at the end of condensation), the forecasts made
# from it and the domains; then the claims, each with its tolerance and domain.

# %%
WILKS_FACTOR = 3.0  # B14: the θ_c² level may differ from the flow's by this many times k/(2N) (Statistics, above)
cond = stages.end_of_condensation(flow)  # condensation over, decided from the flow up to then only (issue 21)
t_cond = float(f"{cond.t if cond.found else flow.t[-1]:.6g}")  # at the ledger's precision (claims.state)
at_cond = claims.state("the flow at the end of condensation, located from t ≤ t_cond only (R5 forecast from it)",
                       t=t_cond)
forecast = transverse.escape_forecast(flow, markov, t_cond, horizon, score_scale)  # R5 from the state at t_cond
t_focus_due = closed_forms.plateau_time(markov, init_scale, score_scale)  # R2: T₁ + log(1/ε²)/(2|g|)
t_cycle2 = forecast.t_due + t_focus_due  # the forecast end of cycle 2
g = closed_forms.g_rate(markov, score_scale)
s2_cond = flow.value("sigma2", t_cond)  # the transverse level condensation leaves untouched
lam_esc = forecast.eta_lambda_max(lr)  # η λ_max on the forecast run at the forecast escape
k_eff = 2 * markov.d + 1  # rank-one parameters fitted on θ_c²
tol_c2 = WILKS_FACTOR * k_eff / (2 * n_samples)  # B14: WILKS_FACTOR · k/(2N)
display.glue(t_cond=t_cond, t_escape_due=forecast.t_due, t_cycle2=t_cycle2, lam_at_escape=lam_esc, tol_c2=tol_c2,
             noise_delta=1 / np.sqrt(n_samples * markov.pi.min()))

theory = claims.domain(
    ("hub-family chain (spec §5.2)", cfg.chain == "hub", cfg.chain),
    ("δ > 0 (the escape needs an asymmetry, R5)", delta > 0, f"δ = {delta:g}"),
    ("m ≥ 2 (a transverse direction)", d_model >= 2, f"m = {d_model}"),
    ("g > 0 (frequency-driven focus, R2)", g > 0, f"g = {g:.3g}"),
    ("the first focus is due within the horizon: R2's end of the θ_c¹ plateau T₁ + log(1/ε²)/(2|g|) ≤ the horizon",
     t_focus_due <= horizon, f"{t_focus_due:.0f} vs {horizon:g}"),
) & claims.domain(
    ("R5's forecast from the end of condensation puts the escape (tenfold σ₂(W0)) within the horizon",
     forecast.t_due <= horizon, f"forecast t = {forecast.t_due:.0f} vs {horizon:g}"), reads=at_cond)
b1_regime = claims.domain(
    (f"the escape starts from θ_c² in R5's linear regime: σ₂(W0) ≤ {escape.WINDOW[0]:g} at the end of condensation "
     "(the untouched transverse level, frozen until the escape)", s2_cond <= escape.WINDOW[0],
     f"σ₂ = {s2_cond:.2g} at t = {t_cond:.0f}"), reads=at_cond)
cycle2_due = claims.domain(
    ("the next cycle is due within the horizon: R5's forecast escape + R2's plateau time T₁ + log(1/ε²)/(2|g|) "
     "(the first cycle's time to its focus, allowed again) ≤ the horizon", t_cycle2 <= horizon,
     f"{forecast.t_due:.0f} + {t_focus_due:.0f} = {t_cycle2:.0f} vs {horizon:g}"), reads=at_cond)
train_domain = theory & claims.domain(
    ("GD stable through the forecast escape: η λ_max < 2 there (on R5's forecast run)", lam_esc < 2,
     f"η λ_max = {lam_esc:.3g}"), reads=at_cond)

# B1 on the flow: up to the forecast end of cycle 2 where that lies past the horizon (the same flow, integrated on)
flow_b1 = pagesetup.page_flow_until(cfg, markov, flow, t_cycle2 if theory & b1_regime else horizon)
stages_b1 = stages.detect_run(flow_b1)
display.glue(flow_cycle_t=flow_b1.t[-1])
print(f"t_cond = {t_cond:g}, σ₂(W0) there {s2_cond:.2g}; forecast escape {forecast.t_due:.0f}, end of cycle 2 "
      f"{t_cycle2:.0f} (horizon {horizon:g}); B1 on the flow read on t ≤ {flow_b1.t[-1]:g}: {stages_b1.letters()}")

# %%
order = " → ".join(stages.AFTER_CONDENSATION)  # B1 from the end of condensation on, where its domains read
past = "" if flow_b1 is flow else (f" (the flow continued past the horizon {horizon:g} to the forecast end of "
                                   f"cycle 2, t = {flow_b1.t[-1]:g})")
tag = f"trained (GD, N={n_samples}, s={seq_len}, {n_seeds} data seeds)"
claims.check("B1", stages_b1.names(after=t_cond), predicate=stages.contains(stages.AFTER_CONDENSATION),
             tolerance=f"the stages from t_cond = {t_cond:g} on contain " + order
             + (f" by t = {flow_b1.t[-1]:g}" if past else ""),
             what="population flow: detected stages after condensation" + past, source="paper",
             domain=theory & b1_regime, measured_from=t_cond)
claims.check_share("B1", [d.has_cycle(stages.AFTER_CONDENSATION, after=t_cond) for d in stages_trained],
                   what=f"{tag}: share of seeds whose stages after condensation contain the cycle",
                   tolerance=f"the stages from t_cond = {t_cond:g} on contain " + order, source="paper",
                   domain=train_domain & cycle2_due & b1_regime, measured_from=t_cond)
claims.check_share("B6", [bool(m.sign_frac >= 1.0) for m in per_seed],
                   what=f"{tag}, first focus: share of seeds whose every ΔA_ik has the sign of ∂κA_ik",
                   tolerance="every entry with |∂κA_ik| above 1 % of the largest has its sign; shares per seed "
                   + ", ".join(f"{m.sign_frac:.3g}" for m in per_seed),
                   source="reconstruction", domain=train_domain, measured_from=t_cond)
claims.check_share("B6", [m.gainer == markov.hub for m in per_seed],
                   what=f"{tag}: share of seeds whose most-gaining token θ_c¹ → end of dilution 1 is the hub",
                   tolerance="the most frequent token gains (frequency-driven focus)", source="paper",
                   domain=train_domain & b1_regime, measured_from=t_cond)
claims.check_share("B7", [bool(m.da_hub > 0 > m.da_low_max) for m in per_seed],
                   what=f"{tag}: share of seeds with Δa_hub > 0 > every Δa_low from θ_c¹ to the end of dilution 1",
                   tolerance="mass redistribution", source="paper", domain=train_domain & b1_regime,
                   measured_from=t_cond)
claims.check_mean("B14", [m.L_c2 for m in per_seed],
                  target=stages_flow.get("plateau", 1, after=stages_flow.get("focus", 1).start).level,
                  margin=tol_c2, tolerance=f"atol = {WILKS_FACTOR:g} k/(2N), k = {k_eff} rank-one parameters (Wilks)",
                  what=f"{tag}: population loss at the end of the θ_c² plateau", source="reconstruction",
                  domain=train_domain & b1_regime, measured_from=t_cond)
claims.check_mean("B9", [np.log10(m.s2_growth) for m in per_seed], above=1.0,
                  tolerance="σ₂(W0) grows ≥ 10× from the end of dilution 1 to the horizon",
                  what=f"{tag}: log10 growth of σ₂(W0) after the first dilution (a new direction)", source="paper",
                  domain=train_domain & b1_regime, measured_from=t_cond)
claims.check_share("B9", [m.n_cycle2 >= 2 for m in per_seed],
                   what=f"{tag}: share of seeds with a focus and a dilution after the escape (cycle 2)",
                   tolerance="≥ 2 stages of cycle 2", source="paper", domain=train_domain & cycle2_due & b1_regime,
                   measured_from=t_cond)
claims.finish()
