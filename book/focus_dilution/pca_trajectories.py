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
# # Embedding trajectories on their principal components
#
# Each token $k$ has an embedding $h_k(t)\in\mathbb R^m$ (row $k$ of $W_0$). Following all of
# them through training gives $d$ curves in $\mathbb R^m$; projected on the principal directions
# of the **whole** trajectory they show the stages as three movements: out of the origin along
# one direction (condensation), a retraction of the rare tokens back through the origin while the
# frequent one moves out (dilution), and an expansion along a new direction (escape).
#
# ```{prf:observation} Retraction and expansion
# :label: obs-pca
#
# **[paper]** {cite:p}`chen2026focus`: PCA of the embedding trajectories on synthetic data shows
# the predicted retraction and expansion patterns. **[reconstruction]** (spec §7 item 7, R1, R4,
# R5): with principal directions of the uncentred samples $\{h_k(t)\}_{k,t}$ (the origin is the
# initialization, so centring would hide the movements),
#
# 1. *condensation*: after stage 1 the tokens sit on PC1 at coordinates $\propto\pi_k$;
# 2. *retraction*: during focus and dilution the hub moves out along PC1 and the low-frequency
#    tokens move back towards, and through, the origin (amplitudes $a_j$: $0.405\to-0.092$);
# 3. *expansion*: after the escape from $\theta_c^2$ the low-frequency tokens spread out along
#    PC2–PC3 — new embedding directions.
# ```

# %% tags=["parameters"]
chain = "hub"           # 'hub' (spec §5.2 family) or 'dirichlet' (random rows, n_low + 1 tokens)
n_low = 4               # n, low-frequency tokens (vocabulary d is n + 1)
a_h = 0.5               # P(hub → hub)
b_h = 0.3               # P(low → hub)
c_cyc = 0.4             # extra mass on the cyclic successor of a low token
delta = 0.1             # δ, asymmetry among the low tokens (> 0 for the escape)
chain_seed = 0          # seed of the Dirichlet chain (used when chain is 'dirichlet')
d_model = 8             # m, embedding width
init_scale = 1e-3       # ε, initialization std
score_scale = 1.0       # c, attention score scale
seed = 1                # initialization seed (1 is the spec's listing)
n_samples = 4096        # N, training sequences
seq_len = 16384         # s, context length
optimizer = "gd"        # 'gd' (Euler scheme of the flow) or 'adam'
lr = 1.0                # η, learning rate (flow time per GD step)
steps = 5000            # training steps (flow time η · steps)
record_every = 10       # record every this many steps
data_seed = 0           # seed of the sampled sequences
device = "auto"         # 'auto', 'cpu' or 'cuda'
n_components = 3        # principal components kept
centre = False          # centre the embeddings before PCA

# %%
from attnflow import claims, params
from attnflow.focus_dilution.pca import PCA_PAGE
cfg = params.validate(globals(), PCA_PAGE)

# %%
import numpy as np

from attnflow import display, plotting
from attnflow.focus_dilution import pca, stages, training
from attnflow.plotting import PALETTE

markov = training.start_page(cfg)       # seeds, plot style, the chain of the parameters
horizon = cfg.lr * cfg.steps

# %% [markdown]
# ## 1. Trajectories: the population flow and one trained model
#
# The same two runs as in {doc}`cycle` (here to $t=$ {glue:text}`horizon:.0f`): the exact flow and
# GD on $N$ sampled sequences, from the same $\theta(0)$. The stage detector supplies the times
# that split each trajectory into phases; nothing is placed by hand.

# %%
flow, trained = training.flow_and_trained(cfg, markov)
display.number("horizon", horizon)
hub = markov.hub
results = {}
for name, run in (("flow", flow), ("trained", trained)):
    W0 = run.result.states()["W0"] if name == "flow" else run.states["W0"]        # (T, d, m)
    st = stages.detect_run(run)
    p = pca.embedding_pca(W0, cfg.n_components, hub=hub, centre=cfg.centre)
    f1, d1, esc = st.first("focus", 1), st.first("dilution", 1), st.first("escape")
    cond_end = st.stages[0].end
    marks = dict(condensed=cond_end, focus=f1.start if f1 else cond_end, diluted=d1.end if d1 else run.t[-1],
                 end=run.t[-1])
    results[name] = dict(run=run, st=st, p=p, marks=marks, esc=esc,
                         mv=pca.phase_movements(p, run.t, markov.pi, hub, marks))
    print(name, "explained share of PC1..:", np.round(p.explained, 4), "| stage marks:",
          {k: round(v) for k, v in marks.items()})

# %% [markdown]
# ## 2. Three movements, three panels
#
# One row per run, one panel per phase (its time window from the detector), PC1 against PC2.
# Each token's path inside the window is coloured (○ start, ● end); the rest of its trajectory
# is grey. The last panel shows every token's PC coordinates against (linear) time, stages shaded.

# %%
labels = ["hub" if k == hub else f"low {k}" for k in range(markov.d)]
colors = [PALETTE[k % len(PALETTE)] for k in range(markov.d)]
fig, ax = plotting.subplots(2, 4, width=3.3, height=3.1)
for row, (name, res) in enumerate(results.items()):
    mk, run, p = res["marks"], res["run"], res["p"]
    windows = [("condensation", 0.0, mk["condensed"]), ("retraction (focus → dilution)", mk["focus"], mk["diluted"]),
               ("expansion (escape → next cycle)", mk["diluted"], mk["end"])]
    pca.plot_phases(ax[row, :3], p, run.t, windows, labels, colors)
    a = ax[row, 3]
    for k in range(markov.d):
        a.plot(run.t, p.coords[:, k, 0], color=colors[k], lw=1.5)
        a.plot(run.t, p.coords[:, k, 1], color=colors[k], lw=1.0, ls="--")
    a.set(xlim=(0, horizon), xlabel="t", title=f"{name}: PC1 (solid), PC2 (dashed)")
    stages.shade(a, res["st"])
    ax[row, 0].set_ylabel(f"{name}\nPC2")
ax[0, 0].legend(fontsize=7, loc="upper left")
fig.suptitle("Embeddings h_k(t) on the principal components of the whole trajectory", y=1.02)

# %% [markdown]
# **Condensation.** At the end of stage 1 the PC1 coordinates are proportional to $\pi$: cosine
# {glue:text}`cos_pi_trained:.4f` for the trained model ({glue:text}`cos_pi_flow:.4f` for the flow).
#
# **Retraction.** From the first focus to the end of the first dilution the hub moves by
# {glue:text}`retract_hub_trained:+.3f` on PC1 and the low-frequency tokens by
# {glue:text}`retract_low_trained:+.3f` at most (flow: {glue:text}`retract_hub_flow:+.3f`,
# {glue:text}`retract_low_flow:+.3f`).
#
# **Expansion.** The spread of the low-frequency tokens off PC1 (PC2–PC3) grows from
# {glue:text}`spread_before_trained:.3f` at the end of the first dilution to
# {glue:text}`spread_after_trained:.3f` at $t=$ {glue:text}`horizon:.0f` (flow:
# {glue:text}`spread_before_flow:.3f` → {glue:text}`spread_after_flow:.3f`).
# PC1–PC3 hold {glue:text}`explained_trained:.1%` of the trajectory's second moment.

# %%
for name, res in results.items():
    mv = res["mv"]
    display.number(f"cos_pi_{name}", mv["cos_pi"])
    display.number(f"retract_hub_{name}", mv["retract_hub"])
    display.number(f"retract_low_{name}", float(mv["retract_low"].max()))
    display.number(f"spread_before_{name}", mv["spread_before"])
    display.number(f"spread_after_{name}", mv["spread_after"])
    display.number(f"explained_{name}", float(res["p"].explained.sum()))

# %% [markdown]
# ## 3. Claims
#
# *Condensation (B3).* The PC1 coordinates after stage 1 must be parallel to $\pi$ to within
# $10^{-2}$ in cosine: the rank-one structure is exact up to $O(\epsilon)$ terms in the flow, and in
# training the drive $\pi(\pi-\mathbf 1/d)^\top$ is replaced by its empirical version, off by
# $O(N^{-1/2})\approx$ {glue:text}`noise_N:.3f` in each entry.
# *Retraction (B7).* The hub must move out (> 0) and every low-frequency token back (< 0) on PC1.
# *Expansion (B9).* The low-token spread off PC1 must grow at least tenfold between the end of the
# first dilution and the horizon (the escape is a ≥ 10× growth of $\sigma_2(W_0)$).

# %%
display.number("noise_N", 1 / np.sqrt(cfg.n_samples))
for name, res in results.items():
    mv = res["mv"]
    claims.check("B3", mv["cos_pi"], 1.0, atol=1e-2, what=f"{name}: cos(PC1 coordinates after condensation, π)",
                 source="paper")
    claims.check("B7", [mv["retract_hub"], float(mv["retract_low"].max())], predicate=lambda x: x[0] > 0 > x[1],
                 tolerance="hub moves out (> 0), every low token back (< 0) on PC1",
                 what=f"{name}: PC1 movement from the first focus to the end of the first dilution", source="paper")
    claims.check("B9", mv["spread_after"] / mv["spread_before"], predicate=lambda x: x >= 10,
                 tolerance="≥ 10× growth of the low tokens' spread off PC1",
                 what=f"{name}: expansion after the escape", source="paper")

# %%
claims.finish()
