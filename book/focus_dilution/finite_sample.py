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
n_samples = [1024, 4096, 16384]  # N values (each at the largest s)
seq_len = [64, 512, 4096]        # s values (each at the largest N)
optimizer = "gd"        # 'gd' (Euler scheme of the flow) or 'adam'
lr = 2.0                # η, learning rate (flow time per GD step)
steps = 1250            # training steps (flow time η · steps)
record_every = 5        # record every this many steps
data_seed = 0           # seed of the sampled sequences
device = "auto"         # 'auto', 'cpu' or 'cuda'

# %%
from attnflow import claims, params
from attnflow.focus_dilution.training import FINITE_SAMPLE
cfg = params.validate(globals(), FINITE_SAMPLE)

# %%
import numpy as np

from attnflow import display, plotting
from attnflow.focus_dilution import closed_forms, runs, stages, training
from attnflow.plotting import PALETTE

markov = training.start_page(cfg)       # seeds, plot style, the chain of the parameters
horizon = cfg.lr * cfg.steps
N_max, s_max = max(cfg.n_samples), max(cfg.seq_len)
grid = sorted({(N, s_max) for N in cfg.n_samples} | {(N_max, s) for s in cfg.seq_len})
print(markov.name, "| runs (N, s):", grid)

# %% [markdown]
# ## 1. The runs
#
# Every run starts from the same $\theta(0)$ (the spec's seed-1 draw) and takes the same GD steps
# ($\eta=$ {glue:text}`lr_used:.2g`, stable here since $\eta\lambda_{\max}<2$ up to $\theta_c^2$,
# see {doc}`cycle`); only the data differ. The **population run** is the same GD on the exact
# population loss, so the difference between a sampled run and it is the finite-sample effect
# alone; the exact flow (BDF) shows what the step $\eta$ itself changes.

# %%
kw = training.train_settings(cfg, dtype="float64")     # float64: compared with the float64 flow
sampled, train_s = {}, 0.0
with runs.single_threaded():
    population = training.train_runs([training.RunSpec(markov, training.population_examples(markov), "population")],
                                     **kw)[0]
    for N in sorted({N for N, _ in grid}):                      # runs with equal N train together
        specs = [training.RunSpec(markov, training.MarkovContexts(markov, N, s, seed=cfg.data_seed).examples(), (N, s))
                 for (n, s) in grid if n == N]
        group = training.train_runs(specs, **kw)
        sampled.update({r.label: r for r in group})
        train_s += group[0].wall_s
flow = training.page_flow(cfg, markov)
display.number("lr_used", cfg.lr)
print(f"training: {train_s + population.wall_s:.1f} s; flow {flow.wall_s:.1f} s")

# %% [markdown]
# ## 2. Stage times and plateau losses
#
# For each run the stage detector ({doc}`cycle`) reads the stages off its training loss and its
# attention on the training contexts. The table lists the first focus time, the plateau levels
# (population loss of the trained $\theta$, median over the stage) and two measures of the
# perturbations 2–3 above: the drift $\|a(t)-a_{\rm pop}(t)\|$ of the embedding amplitudes at the
# end of the first plateau, and the largest $\sigma_2(W_0)$ before the run's first focus (the
# transverse direction; it stays at its initial {glue:text}`s2_pop:.4f` in the population run).

# %%
H_pi = markov.unigram_entropy()
L_c2 = closed_forms.theta_c2_loss(markov) if cfg.chain == "hub" and cfg.delta == 0 else float("nan")


def summary(run, label):
    st = stages.detect_run(run)
    p1 = st.first("plateau", 1)
    f1 = st.first("focus", 1)
    sel = (run.t >= p1.start) & (run.t <= p1.end) if p1 else np.zeros(len(run.t), bool)
    i_end_p1 = population.at(p1.end) if p1 else 0
    before_focus = run.t <= (f1.start if f1 else run.t[-1])
    return dict(run=label, stages=" ".join(s.name[0].upper() for s in st.stages),
                t_focus=f1.start if f1 else np.nan,
                L1=float(np.median(run.q["loss"][sel])) if sel.any() else np.nan,
                L_end=float(run.q["loss"][-1]),
                drift=float(np.linalg.norm(run.q["amp"][run.at(population.t[i_end_p1])] - population.q["amp"][i_end_p1])),
                sigma2_max=float(run.q["sigma2"][before_focus].max()), st=st)


rows = [summary(population, "population")] + [summary(r, f"N={N}, s={s}") for (N, s), r in sampled.items()]
for r, key in zip(rows, [None, *sampled]):
    r["N"], r["s"] = (key if key else (np.inf, np.inf))
display.number("s2_pop", rows[0]["sigma2_max"])
display.table([{k: v for k, v in r.items() if k != "st"} for r in rows])

# %% [markdown]
# ## 3. The gap, run by run
#
# Loss and attention of each run against the population run (dashed) and the exact flow
# (dotted), on a linear time axis. The stage letters of the table are those of the detector
# (C condensation, P plateau, F focus, D dilution, E escape).

# %%
fig, ax = plotting.subplots(2, 2, width=4.6, height=2.8, sharex=True)
sweeps = [("N", [k for k in sampled if k[1] == s_max]), ("s", [k for k in sampled if k[0] == N_max])]
for col, (name, keys) in enumerate(sweeps):
    for j, key in enumerate(sorted(keys)):
        r = sampled[key]
        c = PALETTE[j]
        lab = f"N = {key[0]}" if name == "N" else f"s = {key[1]}"
        ax[0, col].plot(r.t, r.q["loss"], color=c, label=lab)
        ax[1, col].plot(r.t, stages.signals(r)["low_hub"], color=c)
    for a, key in ((ax[0, col], "loss"), (ax[1, col], "low_hub")):
        a.plot(population.t, population.q["loss"] if key == "loss" else stages.signals(population)["low_hub"],
               "k--", lw=1.2, label="population (same GD)")
        a.plot(flow.t, flow.q["loss"] if key == "loss" else stages.signals(flow)["low_hub"],
               "k:", lw=1.2, label="population flow")
    ax[0, col].axhline(H_pi, color="0.5", lw=0.8)
    ax[0, col].set(title=f"sweep over {name} ({'s' if name == 'N' else 'N'} = {s_max if name == 'N' else N_max})",
                   ylabel="population loss of θ" if col == 0 else "", ylim=(min(L_c2, H_pi) - 0.01, np.log(markov.d) + 0.005))
    ax[1, col].set(xlabel="t = η · step", ylabel="low-query attention on hub" if col == 0 else "")
    ax[0, col].legend(fontsize=7)
fig.suptitle("Finite-sample training approaches the population dynamics as N and s grow", y=1.02)

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
# **θ_c².** At the end the largest run's population loss is {glue:text}`L_end_large:.5f`, against
# $L(\theta_c^2)=$ {glue:text}`L_c2:.5f` (closed form, δ = 0).

# %%
by_key = {(r["N"], r["s"]): r for r in rows}
pop_row = rows[0]
smallest_N = by_key[(min(cfg.n_samples), s_max)]
largest = by_key[(N_max, s_max)]
excess_small, excess_large = smallest_N["L1"] - H_pi, largest["L1"] - H_pi
pred = lambda N: (markov.d - 1) / (2 * N)
Ns = np.array([r["N"] * r["s"] for r in rows[1:]], dtype=float)
drift = np.array([r["drift"] for r in rows[1:]])
drift_slope = float(np.polyfit(np.log(Ns), np.log(drift), 1)[0]) if len(rows) > 2 else float("nan")
order = np.argsort(Ns)
dt_focus_large = float(largest["t_focus"] - pop_row["t_focus"])
short, long_ = by_key[(N_max, min(cfg.seq_len))], by_key[(N_max, s_max)]
for k, v in dict(s2_short=short["sigma2_max"], s_short=min(cfg.seq_len), s2_long=long_["sigma2_max"], s_long=s_max,
                 H_pi=H_pi, excess_small=excess_small, excess_small_pred=pred(min(cfg.n_samples)),
                 excess_large=excess_large, excess_large_pred=pred(N_max), drift_small=drift[order[0]],
                 drift_large=drift[order[-1]], drift_slope=drift_slope, dt_focus_large=dt_focus_large,
                 L_end_large=largest["L_end"], L_c2=L_c2).items():
    display.number(k, v)

# %% [markdown]
# ## 4. Claims
#
# *Plateau 1 (B4 on trained models).* $2N$ times the excess population loss of a maximum-likelihood
# fit of $d-1$ free frequencies is asymptotically $\chi^2_{d-1}$: mean $(d-1)/(2N)$, standard
# deviation $\sqrt{2(d-1)}/(2N)$. Each run at the largest $s$ must lie within three standard
# deviations of the mean (one data seed per $N$, so the check is per run, not of the average).
# *θ_c² (B14).* The largest run's final population loss must match $L(\theta_c^2)$ within
# $3k/(2N)$, $k=2d+1$ rank-one parameters fitted to $N$ samples (Wilks), plus the
# population run's own distance from it at this horizon.
# *Stages (B1, B6) and drift (B5: the neutral directions of $\theta_c^1$).* The largest run must go through the population run's stage sequence (it
# may add an escape at the end: at $\delta=0$ only sampling noise can open that direction,
# perturbation 3). The drift must shrink as $Ns$ grows (fitted slope < 0).

# %%
for N in cfg.n_samples:
    r = by_key[(N, s_max)]
    sd = np.sqrt(2 * (markov.d - 1)) / (2 * N)
    claims.check("B4", r["L1"] - H_pi, pred(N), atol=3 * sd,
                 what=f"trained N={N}, s={s_max}: population loss on plateau 1 minus H(π)", source="reconstruction")
tol_c2 = 3 * (2 * markov.d + 1) / (2 * N_max) + abs(pop_row["L_end"] - L_c2)
if np.isfinite(L_c2):
    claims.check("B14", largest["L_end"], L_c2, atol=tol_c2,
                 what=f"trained N={N_max}, s={s_max}: final population loss vs L(θ_c²)", source="reconstruction")
claims.check("B1", largest["stages"], pop_row["stages"], predicate=lambda x: x.startswith(pop_row["stages"]),
             tolerance=f"begins with the population run's sequence {pop_row['stages']} (a later escape is perturbation 3)",
             what=f"trained N={N_max}, s={s_max}: stage sequence", source="paper")
claims.check("B6", largest["stages"], predicate=lambda x: "F D" in x, tolerance="a focus followed by a dilution",
             what=f"trained N={N_max}, s={s_max}: focus then dilution", source="paper")
claims.check("B5", drift_slope, predicate=lambda x: x < 0, tolerance="< 0 (drift shrinks as N·s grows)",
             what="log–log slope of the drift along the neutral directions of θ_c¹ against N·s", source="reconstruction")

# %%
claims.finish()
