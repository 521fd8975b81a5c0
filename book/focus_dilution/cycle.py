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
n_samples = 4096        # N, training sequences
seq_len = 16384         # s, context length
optimizer = "gd"        # 'gd' (Euler scheme of the flow) or 'adam'
lr = 1.0                # η, learning rate (flow time per GD step)
steps = 6000            # training steps (flow time η · steps)
record_every = 10       # record every this many steps
data_seed = 0           # seed of the sampled sequences
device = "auto"         # 'auto', 'cpu' or 'cuda'

# %%
from attnflow import claims, params
from attnflow.focus_dilution.training import CYCLE
cfg = params.validate(globals(), CYCLE)

# %%
import numpy as np

from attnflow import display, plotting
from attnflow.focus_dilution import closed_forms, stages, training
from attnflow.focus_dilution.chain import hub_family
from attnflow.plotting import PALETTE

markov = training.start_page(cfg)       # seeds, plot style, the chain of the parameters
horizon = cfg.lr * cfg.steps
print(markov.name, "| π =", np.round(markov.pi, 4))

# %% [markdown]
# ## 1. One flow, one training run
#
# The flow integrates $\dot\theta=-\nabla L(\theta)$ of the population loss (BDF, float64). The
# training run samples $N$ sequences from the chain started at $\pi$ and runs full-batch GD in
# float32 from the **same** initial $\theta(0)$. GD with step $\eta$ for $k$ steps is the Euler
# scheme of the flow up to time $\eta k$; we use $\eta=$ {glue:text}`lr_used:.2g`, twenty times the
# spec's Euler step, which is stable as long as $\eta\,\lambda_{\max}(\nabla^2L)<2$ — checked
# along the flow below.

# %%
flow, trained = training.flow_and_trained(cfg, markov, dtype="float32")
st_flow, st_train = stages.detect_run(flow), stages.detect_run(trained)
lam_times = np.linspace(0.2 * horizon, horizon, 5)
lam_max = training.sharpness(flow, lam_times)
unstable = lam_times[cfg.lr * lam_max >= 2]
t_unstable = float(unstable[0]) if len(unstable) else float("nan")
display.number("lr_used", cfg.lr)
display.number("t_unstable", t_unstable)
display.number("lam_max_final", lam_max[-1])
display.number("flow_s", flow.wall_s)
display.number("train_s", trained.wall_s)
print(f"flow {flow.wall_s:.1f} s ({flow.nfev} gradient evaluations); training {trained.wall_s:.1f} s on "
      f"{trained.settings['device']} ({trained.settings['rows']} distinct training rows)")
print("η λ_max along the flow:", dict(zip(np.round(lam_times).astype(int), np.round(cfg.lr * lam_max, 2))))

# %% [markdown]
# Along the flow $\eta\lambda_{\max}$ first reaches 2 at $t\approx$ {glue:text}`t_unstable:.0f`
# (nan: never within the horizon): up to there GD is a faithful discretisation of the flow; after
# it GD runs at the edge of stability and its late trajectory may differ from the flow's even with
# infinite data ({doc}`robustness`).

# %% [markdown]
# ## 2. The cycle figure
#
# First the whole run on a logarithmic time axis, where the loss steps from $\log d$
# (uniform prediction) to $H(\pi)$ (unigram saddle $\theta_c^1$), to $L(\theta_c^2)$ (drawn: the
# closed form of the symmetric chain, $\delta=0$, spec R4) and on towards the bigram optimum.
# Shading: stages found by the detector (C condensation, P plateau, F focus, D dilution,
# E escape; the digit is the cycle).

# %%
symmetric = hub_family(cfg.n_low, cfg.a_h, cfg.b_h, cfg.c_cyc, 0.0) if cfg.chain == "hub" else None
refs = {r"$\log d$": np.log(markov.d), r"$H(\pi)$": markov.unigram_entropy(), "bigram optimum": markov.bigram_loss()}
if symmetric is not None:
    refs[r"$L(\theta_c^2)$, $\delta=0$"] = closed_forms.theta_c2_loss(symmetric)
columns = [(flow, st_flow, "population flow"), (trained, st_train, f"trained: N = {cfg.n_samples}, s = {cfg.seq_len}")]

fig, ax = plotting.subplots(1, 2, width=4.6, height=2.9, sharey=True)
for a, (run, st, title) in zip(ax[0], columns):
    t = np.maximum(run.t, 1.0)
    a.plot(t, stages.signals(run)["loss"], color="k", label="training loss" if run is trained else "loss")
    if run is trained:
        a.plot(t, run.q["loss"], color=PALETTE[0], ls="--", lw=1.2, label="population loss of θ")
    for (name, value), ls in zip(refs.items(), [":", "-.", "--", (0, (1, 3))]):
        a.axhline(value, color="0.45", ls=ls, lw=0.9, label=name)
    a.set(xscale="log", xlim=(1.0, horizon), title=title, xlabel="t (training: η · step)")
    stages.shade(a, st)
    a.legend(fontsize=7, loc="lower left")
ax[0, 0].set_ylabel("loss")
fig.legend(handles=stages.legend_handles(), loc="lower center", ncol=5, bbox_to_anchor=(0.5, -0.1), fontsize=8)
fig.suptitle("Claim B1: the loss through the stages", y=1.07)

# %% [markdown]
# The cycle itself happens late and fast compared with the plateaus. Zoomed in, on a linear time
# axis from just before the first focus: attention mass on the hub (all queries, and the
# low-frequency queries alone), attention entropy $\sum_i\pi_iH(A_{i\cdot})$ and the singular
# values of $W_0$ (a new one rising is a new embedding direction).

# %%
starts = [st.first("focus", 1).start for st in (st_flow, st_train) if st.first("focus", 1)]
t_zoom = 0.8 * min(starts) if starts else 0.0
fig, ax = plotting.subplots(3, 2, width=4.6, height=2.3, sharex=True)
for col, (run, st, title) in enumerate(columns):
    sig, a = stages.signals(run), ax[:, col]
    a[0].plot(run.t, sig["hub"], color=PALETTE[1], label="all queries")
    a[0].plot(run.t, sig["low_hub"], color=PALETTE[2], ls="--", label="low-frequency queries")
    a[1].plot(run.t, run.q["attn_entropy"], color=PALETTE[4])
    a[2].semilogy(run.t, run.q["sv_W0"], color=PALETTE[0], lw=1.2)
    a[0].set(title=title)
    a[2].set(xlabel="t (training: η · step)", xlim=(t_zoom, horizon))
    for x in a:
        stages.shade(x, st, labels=x is a[0])
ax[0, 0].set_ylabel("attention on hub")
ax[1, 0].set_ylabel("attention entropy")
ax[2, 0].set_ylabel(r"$\sigma_k(W_0)$")
ax[0, 0].legend(fontsize=7, loc="center left")
fig.legend(handles=stages.legend_handles(), loc="lower center", ncol=5, bbox_to_anchor=(0.5, -0.04), fontsize=8)
fig.suptitle("Claim B1: focus, dilution, escape and the next cycle (B6, B7, B9)", y=1.04)

# %% [markdown]
# The detected stages, with the median loss over each stage:

# %%
rows = [dict(run="flow", **r) for r in st_flow.table()] + [dict(run="trained", **r) for r in st_train.table()]
display.table(rows)

# %% [markdown]
# ## 3. Reading the cycle on the trained model
#
# **Focus (B6).** Near $\theta_c^1$ the attention rows move along
# $\partial_\kappa A_{ik}=c\alpha^2\pi_i\pi_k(\pi_k-\|\pi\|^2)$ (spec R3, closed form of
# `closed_forms.dkappa_A`): only tokens with $\pi_k>\|\pi\|^2$ — here the hub — gain attention.
# Over the first focus stage of the trained model, {glue:text}`b6_sign_frac:.0%` of the entries
# of $\Delta A$ have the predicted sign (entries with $|\partial_\kappa A_{ik}|$ above 1 % of its
# largest), and the hub attention rises from {glue:text}`b6_hub_before:.3f` to
# {glue:text}`b6_hub_after:.3f` within that stage. From $\theta_c^1$ to the end of the first
# dilution the token that gains the most attention, $\arg\max_k\sum_i\pi_i\Delta A_{ik}$, is token
# {glue:text}`b6_gainer` (the hub is token {glue:text}`hub_token`).
#
# **Dilution (B7).** From the first plateau to the end of the first dilution the hub
# amplitude $a_0=\langle h_0,u\rangle$ moves by {glue:text}`b7_da_hub:+.3f` while the low-token
# amplitudes move by {glue:text}`b7_da_low_max:+.3f` at most: opposite directions (mass
# redistribution). The attention of low-frequency queries on the hub peaks at
# {glue:text}`b7_peak:.4f` and falls back to {glue:text}`b7_after:.4f` (flow:
# {glue:text}`b7_peak_flow:.4f` → {glue:text}`b7_after_flow:.4f`).
#
# **Escape and the next cycle (B9).** $\sigma_2(W_0)$ grows from {glue:text}`b9_s2_before:.4f` at the
# start of the escape to {glue:text}`b9_s2_after:.3f`, the rank of $W_0$ rises, and a second
# focus and dilution follow: {glue:text}`b9_n_cycle2` stages of cycle 2 are detected.

# %%
NONE = stages.Stage("none", np.nan, np.nan, 0, np.nan)     # stands in for a stage the detector did not find


def at(run, time):
    """Index of the stored time nearest to ``time`` (the last one for a missing stage)."""
    return run.at(time) if np.isfinite(time) else len(run.t) - 1


focus1 = st_train.first("focus", 1) or NONE
dA = trained.q["A"][at(trained, focus1.end)] - trained.q["A"][at(trained, focus1.start)]
pred = closed_forms.dkappa_A(markov, cfg.score_scale)
big = np.abs(pred) > 0.01 * np.abs(pred).max()
b6_sign_frac = float(np.mean(np.sign(dA[big]) == np.sign(pred[big])))
sig_t = stages.signals(trained)
b6_hub_before, b6_hub_after = (float(sig_t["hub"][at(trained, x)]) for x in (focus1.start, focus1.end))

plateau1 = st_train.first("plateau", 1) or NONE
dilution1 = st_train.first("dilution", 1) or NONE
plateau2 = ([s for s in st_train.find("plateau", 1) if s.start > focus1.start] or [NONE])[0]
hub = markov.hub
low = np.arange(markov.d) != hub
i1, i2 = at(trained, plateau1.end), at(trained, dilution1.end)      # θ_c¹ → end of the first dilution
da = trained.q["amp"][i2] - trained.q["amp"][i1]
b7_da_hub, b7_da_low_max = float(da[hub]), float(da[low].max())
b6_gainer = int(np.argmax(markov.pi @ (trained.q["A"][i2] - trained.q["A"][i1])))    # (d,) attention gained per key


def dilution_drop(run, st):
    """Peak of the low-query hub attention in cycle 1 and its value at the end of dilution 1."""
    s = stages.signals(run)["low_hub"]
    f, dl = st.first("focus", 1), st.first("dilution", 1)
    if f is None or dl is None:
        return np.nan, np.nan
    sel = (run.t >= f.start) & (run.t <= dl.end)
    return float(s[sel].max()), float(s[run.at(dl.end)])


b7_peak, b7_after = dilution_drop(trained, st_train)
b7_peak_flow, b7_after_flow = dilution_drop(flow, st_flow)

esc = st_train.first("escape") or NONE
s2 = trained.q["sigma2"]
b9_s2_before = float(s2[at(trained, esc.start)]) if np.isfinite(esc.start) else np.nan
b9_s2_after = float(s2[trained.t >= esc.start].max()) if np.isfinite(esc.start) else np.nan
b9_n_cycle2 = len([s for s in st_train.stages if s.cycle == 2 and s.name in ("focus", "dilution")])
for k, v in dict(b6_gainer=b6_gainer, hub_token=markov.hub, b6_sign_frac=b6_sign_frac, b6_hub_before=b6_hub_before,
                 b6_hub_after=b6_hub_after,
                 b7_da_hub=b7_da_hub, b7_da_low_max=b7_da_low_max, b7_peak=b7_peak, b7_after=b7_after,
                 b7_peak_flow=b7_peak_flow, b7_after_flow=b7_after_flow, b9_s2_before=b9_s2_before,
                 b9_s2_after=b9_s2_after, b9_n_cycle2=b9_n_cycle2).items():
    display.number(k, v)

# %% [markdown]
# ## 4. Claims
#
# The stage checks are predicates on the detector's output, for the flow and for the trained
# model. Their thresholds are amplitudes, not times: a focus swing must exceed 0.01 in attention
# (plateau wiggles are $\sim10^{-4}$), an escape a tenfold growth of $\sigma_2(W_0)$. Finite
# samples move the stage *times* (sampling noise in the transition counts acts like an extra
# asymmetry of size $\sim(N\pi_{\min})^{-1/2}$, {glue:text}`noise_delta:.3f` here, and tilts the
# neutral directions of $\theta_c^1$; {doc}`finite_sample`), so no time is compared. The level of
# the second plateau is compared with the flow's: a fit of the $k\approx2d+1$ rank-one
# parameters to $N$ samples has an expected excess population loss $k/(2N)$ (Wilks), and we
# allow three times that, {glue:text}`tol_c2:.1e`.

# %%
order = ["condensation", "plateau", "focus", "dilution", "escape", "focus", "dilution"]


def has_subsequence(names, wanted=order):
    it = iter(names)
    return all(any(n == w for n in it) for w in wanted)


noise_delta = float(1 / np.sqrt(cfg.n_samples * markov.pi.min()))
k_eff = 2 * markov.d + 1
tol_c2 = 3 * k_eff / (2 * cfg.n_samples)
flow_focus1 = st_flow.first("focus", 1) or NONE
flow_c2 = [s for s in st_flow.find("plateau", 1) if s.start > flow_focus1.start]
L_c2_flow = flow_c2[0].level if flow_c2 else float("nan")
L_c2_trained = float(trained.q["loss"][at(trained, plateau2.end if np.isfinite(plateau2.end) else dilution1.end)])
display.number("noise_delta", noise_delta)
display.number("tol_c2", tol_c2)

claims.check("B1", st_flow.names(), predicate=has_subsequence, tolerance="stage sequence contains " + " → ".join(order),
             what="population flow: detected stages", source="paper")
claims.check("B1", st_train.names(), predicate=has_subsequence, tolerance="stage sequence contains " + " → ".join(order),
             what=f"trained model (GD, N={cfg.n_samples}, s={cfg.seq_len}): detected stages", source="paper")
claims.check("B6", b6_sign_frac, 1.0, atol=0.0, what="trained model, first focus: fraction of ΔA_ik with the sign of ∂κA_ik",
             source="reconstruction")
claims.check("B6", b6_gainer, markov.hub, predicate=lambda k: k == markov.hub,
             tolerance="the most frequent token (frequency-driven focus)",
             what="trained model: token whose attention Σ_i π_i A_ik grows most from θ_c¹ to the end of dilution 1", source="paper")
claims.check("B7", [b7_da_hub, b7_da_low_max], predicate=lambda x: x[0] > 0 > x[1],
             tolerance="Δa_hub > 0 > every Δa_low", what="trained model: amplitude change from θ_c¹ to the end of dilution 1", source="paper")
claims.check("B7", b7_peak - b7_after, predicate=lambda x: x > 0.01,
             tolerance="> 0.01 (min_swing of the detector)", what="trained model: fall of the low-query hub attention after its peak",
             source="paper")
claims.check("B14", L_c2_trained, L_c2_flow, atol=tol_c2, what="trained model: population loss on the θ_c² plateau vs the flow's",
             source="reconstruction")
claims.check("B9", b9_s2_after / b9_s2_before, predicate=lambda x: x >= 10,
             tolerance="σ₂(W0) grows ≥ 10× from the escape on", what="trained model: growth of σ₂(W0) after the escape",
             source="paper")
claims.check("B9", b9_n_cycle2, predicate=lambda x: x >= 2, tolerance="≥ 2 (a focus and a dilution after the escape)",
             what="trained model: focus/dilution stages of cycle 2", source="paper")

# %%
claims.finish()
