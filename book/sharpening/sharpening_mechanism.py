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
# # Corollary 5 — why faster query-key learning sharpens attention
#
# Compare models *at the same training loss*. The loss fixes the correct-class margin
# $u=a\,p$, i.e. the product of what the OV circuit has learned ($a$) and the attention mass on
# the relevant token ($p$). A model whose OV circuit is slow must make up for it with sharper
# attention — and it can, if its QK circuit is fast. This page measures the attention mass at
# matched loss for the four parametrizations and for increasing $r=\eta_{QK}/\eta_{OV}$ on three
# levels: the reduced ODE, the full model's exact gradient flow, and gradient descent on
# sampled data from a random initialization.
#
# ```{prf:corollary} Sharpening mechanism
# :label: cor-sharpening
#
# **[paper]** mechanism: "faster query-key learning relative to output-value learning thus
# produces sharper attention, as the model compensates for slower output-value learning by
# increasing attention mass on relevant tokens", with comparable predictive performance
# (sharpening is *decoupled* from accuracy) {cite:p}`vashisht26a`. **[reconstruction]**
# argument (spec Corollary 5): at a loss $-\log s_*$ the margin is
# $u_*=\log\frac{(K-1)s_*}{1-s_*}$, so $p=u_*/a$; softmax saturation $1-p\approx ne^{-b}$ lets a
# faster QK circuit (larger $r$, or the rescaling $2|b|$ of a factorized QK circuit) reach a
# larger $p$ by the time the loss gets there, while the prediction $\arg\max z$ is correct as
# soon as $u>0$. Predicted order at $r=1$: FACO > CACO > FAFO > CAFO.
# ```

# %% tags=["parameters"]
n_classes = 5         # K, classes
n_compete = 9         # n, positions competing with the distinct token (reduced ODE and population)
lr_ratios = [1.0, 2.0, 5.0, 10.0]  # ratios r, η_QK/η_OV
a0 = 0.1              # initial OV scalar a₀
b0 = 0.1              # initial QK scalar b₀
horizon = 1e5         # horizon of the reduced ODE (spec §8.1: 10⁵)
rtol = 1e-10          # relative tolerance of LSODA (absolute: rtol/100)
parametrizations = ["CACO", "CAFO", "FACO", "FAFO"]  # circuits to run
matched_prob = 0.9    # correct-class probability s at the matched loss, L is −log s
pop_n_common = 3      # M of the full model's exact population flow
n_common = 20         # M of the sampled task (spec §5.1)
seq_len = 12          # T of the sampled task
n_samples = 500       # N sampled sequences (spec: 2000, the paper profile; FACO and FAFO ×10 agree to 3 decimals)
gd_lr = 0.1           # GD learning rate η_OV of the sampled runs
init_std = 0.1        # Gaussian init std × √d of the sampled runs
loss_target = 0.1     # training loss at which the sampled runs are compared (spec §8.2)
max_steps = 6000      # maximum GD steps of a sampled run
seed = 0              # seed of the sampled data (and seed + 1 of the init)
device = "auto"       # device of the sampled runs

# %%
from attnflow import claims, params
from attnflow.sharpening.schemas import SHARPENING_MECHANISM
cfg = params.validate(globals(), SHARPENING_MECHANISM)

# %%
import numpy as np
import sympy as sp
import torch

from IPython.display import display as show

from attnflow import display, plotting, seeding
from attnflow.plotting import MODEL_COLORS
from attnflow.sharpening import data, mechanism, symbolic

torch.set_num_threads(1)   # tiny models: extra threads only add synchronisation overhead
seeding.seed_everything(cfg.seed)
plotting.use_style()
display.number("n_compete_used", cfg.n_compete)
display.number("n_classes_used", cfg.n_classes)
display.number("s_match", cfg.matched_prob)
display.number("horizon_used", cfg.horizon);

# %% [markdown]
# ## 1. The margin is fixed by the loss
#
# Sympy checks that the margin below solves $e^{u}/(e^{u}+K-1)=s_*$ (residual zero); the
# attention mass and odds a model needs at that loss then follow from $a$ alone:

# %%
ml = symbolic.matched_loss()
display.equation("eq_margin", ml.margin, lhs=r"u_*")
display.equation("eq_p_needed", ml.p_needed, lhs=r"p")
display.equation("eq_odds_needed", ml.odds_needed, lhs=r"\frac{p}{1-p}")
n_nonzero = int(not symbolic.is_zero(ml.residual))
a_sym, K_sym = symbolic.reduced_symbols()[0], symbolic.reduced_symbols()[3]
u_star = float(ml.margin.subs({K_sym: cfg.n_classes, sp.Symbol("s_*", positive=True): cfg.matched_prob}))
display.number("u_star", u_star);

# %% [markdown]
# With $K$ = {glue:text}`n_classes_used` and $s_*$ = {glue:text}`s_match`, $u_*$ =
# {glue:text}`u_star:.4f`: every model at this loss lies on the hyperbola $p=u_*/a$ in the
# $(a,p)$ plane, and *where* on it is decided by the relative speed of the two circuits.
#
# ## 2. Reduced ODE
#
# The reduced flow (spec normalization, $n$ = {glue:text}`n_compete_used`, $K$ =
# {glue:text}`n_classes_used`, $\eta_{OV}=1$; the population-loss flow of the full model by
# {prf:ref}`prop-reduced-ode`) is integrated with LSODA until $t$ = {glue:text}`horizon_used:.0e`,
# recording the first time $s$ reaches $s_*$ (an event of the solver, so the matched point is
# located to solver precision rather than to a grid).

# %%
runs = mechanism.reduced_at_matched_loss(cfg.parametrizations, cfg.lr_ratios, n_compete=cfg.n_compete,
                                         n_classes=cfg.n_classes, matched=cfg.matched_prob, horizon=cfg.horizon,
                                         a0=cfg.a0, b0=cfg.b0, rtol=cfg.rtol)
p_match = {key: run.matched_event()["p"] for key, run in runs.items()}
s_match = {key: run.matched_event()["s"] for key, run in runs.items()}
p_end = {key: float(run.p[-1]) for key, run in runs.items()}
show(display.table([{"model": name, "r": r, "t(s=s*)": run.matched_event()["t"], "a(s=s*)": run.matched_event()["a"],
                     "p(s=s*)": p_match[(name, r)], "p(horizon)": p_end[(name, r)]} for (name, r), run in runs.items()],
                   floatfmt="{:.4f}"))
r1 = cfg.lr_ratios[0]
order_match = sorted(cfg.parametrizations, key=lambda nm: -p_match[(nm, r1)])
order_end = sorted(cfg.parametrizations, key=lambda nm: -p_end[(nm, r1)])
display.number("order_match", " > ".join(order_match))
display.number("order_end", " > ".join(order_end))
display.number("r1", r1)
for name in cfg.parametrizations:
    display.number(f"p_{name}_r1", p_match[(name, r1)])
    for r in cfg.lr_ratios:
        display.number(f"p_{name}_at_r{r:g}", p_match[(name, r)])
p_range = [min(p_match.values()), max(p_match.values())]
display.number("p_min", p_range[0])
display.number("p_max", p_range[1]);

# %% [markdown]
# At $r$ = {glue:text}`r1:g` the attention mass at matched loss orders the parametrizations as
# {glue:text}`order_match` (FACO {glue:text}`p_FACO_r1:.4f`, CACO {glue:text}`p_CACO_r1:.4f`,
# FAFO {glue:text}`p_FAFO_r1:.4f`, CAFO {glue:text}`p_CAFO_r1:.4f`), and at the horizon as
# {glue:text}`order_end`. Factorizing QK sharpens (its rate $2|b|$ grows with $b$),
# factorizing OV blunts (a faster OV circuit reaches the margin with a larger $a$, hence a
# smaller $p=u_*/a$). Raising $r$ sharpens every parametrization.

# %% [markdown]
# ## 3. The full model, exact population flow
#
# The torch model of spec §4 with $K$ = {glue:text}`n_classes_used`, $M$ =
# {glue:text}`pop_M` common tokens and $n$ = {glue:text}`n_compete_used` (query masked), on the
# **population loss**, started on the symmetric/balanced manifold, gradient flow integrated in
# float64 (LSODA with the autograd Hessian) until the loss reaches $-\log s_*$. Its circuit
# learning rates are set to $\eta_{OV}=1/c_{OV}$, $\eta_{QK}=r/\kappa^m$, so that it is exactly
# the normalized reduced system of the previous section. Attention mass, accuracy and $s$ are
# read off the torch forward pass.

# %%
display.number("pop_M", cfg.pop_n_common)
pop_task = data.Task(n_classes=cfg.n_classes, n_common=cfg.pop_n_common, seq_len=cfg.n_compete + 2)
full = {name: mechanism.full_model_at_matched_loss(name, pop_task, lr_ratio=r1, matched=cfg.matched_prob,
                                                   a0=cfg.a0, b0=cfg.b0, rtol=min(1e-9, cfg.rtol * 10))
        for name in cfg.parametrizations}
full_dev = max(abs(full[name]["p"] - p_match[(name, r1)]) for name in cfg.parametrizations)
display.number("full_dev", full_dev)
show(display.table([{"model": name, "p full model": f["p"], "p reduced": p_match[(name, r1)], "accuracy": f["accuracy"],
                     "s": f["s"], "t": f["t"], "gradient evals": f["nfev"]} for name, f in full.items()], floatfmt="{:.6g}"))

# %% [markdown]
# The full model's attention mass at matched loss equals the reduced prediction to
# {glue:text}`full_dev:.1e`, with accuracy 1 and $s=s_*$ for every parametrization.
#
# ## 4. The full model, sampled data, random initialization
#
# Now without any of the symmetry the theory assumes: the spec's §8.2 configuration ($K$ =
# {glue:text}`n_classes_used`, $M$ = {glue:text}`samp_M`, $T$ = {glue:text}`samp_T`, $N$ =
# {glue:text}`samp_N` sampled sequences, **sampled loss**, so $n=T-2$ =
# {glue:text}`samp_n` common positions), Gaussian initialization with std
# {glue:text}`samp_std:g`$/\sqrt d$ (not balanced), float32, full-batch GD with
# $\eta_{OV}$ = {glue:text}`samp_lr:g` and $\eta_{QK}=r\eta_{OV}$, stopped when the training loss
# first drops below {glue:text}`samp_target:g`. We compare FACO at $r=1$ with FAFO at $r=10$
# (claim A14), and FAFO with CACO at $r=1$ (open question Q2).

# %%
samp_task = data.Task(n_classes=cfg.n_classes, n_common=cfg.n_common, seq_len=cfg.seq_len)
for k, v in {"samp_M": cfg.n_common, "samp_T": cfg.seq_len, "samp_N": cfg.n_samples, "samp_n": cfg.seq_len - 2,
             "samp_std": cfg.init_std, "samp_lr": cfg.gd_lr, "samp_target": cfg.loss_target}.items():
    display.number(k, v)
sampled = {(name, r): mechanism.sampled_at_loss(name, samp_task, lr_ratio=r, n_samples=cfg.n_samples, lr_ov=cfg.gd_lr,
                                                init_std=cfg.init_std, loss_target=cfg.loss_target,
                                                max_steps=cfg.max_steps, seed=cfg.seed, device=cfg.device)
           for name, r in (("FACO", 1.0), ("FAFO", 10.0), ("FAFO", 1.0), ("CACO", 1.0))}
show(display.table([{"model": name, "r": r, **res} for (name, r), res in sampled.items()], floatfmt="{:.4f}"))
display.number("samp_faco", sampled[("FACO", 1.0)]["p"])
display.number("samp_fafo10", sampled[("FAFO", 10.0)]["p"])
display.number("samp_fafo1", sampled[("FAFO", 1.0)]["p"])
display.number("samp_caco1", sampled[("CACO", 1.0)]["p"]);


# %%
fig, ax = plotting.subplots(1, 3, width=3.7, height=3.1)
for name in cfg.parametrizations:
    col = MODEL_COLORS[name]
    ax[0, 0].semilogx(cfg.lr_ratios, [p_match[(name, r)] for r in cfg.lr_ratios], "o-", color=col, label=name)
    run = runs[(name, r1)]
    stop = run.t <= run.matched_event()["t"] * 3
    ax[0, 1].plot(run.a[stop], run.p[stop], color=col, label=f"{name}, r={r1:g}")
    ev = run.matched_event()
    ax[0, 1].plot(ev["a"], ev["p"], "o", color=col)
a_grid = np.linspace(u_star / 0.999, 14, 200)
ax[0, 1].plot(a_grid, u_star / a_grid, "k--", lw=1, label=r"$p=u_*/a$ (matched loss)")
ax[0, 0].set(xlabel=r"$r=\eta_{QK}/\eta_{OV}$", ylabel=r"attention mass $p$ at $s=s_*$", title="faster QK → sharper attention")
ax[0, 0].legend(fontsize="small")
ax[0, 1].set(xlabel="a (OV scalar)", ylabel="p (attention on the distinct token)", xlim=(0, 14), ylim=(0, 1.02),
             title="every model crosses p = u*/a")
ax[0, 1].legend(fontsize="x-small")
labels = [f"{n} r={r:g}" for n, r in sampled]
ax[0, 2].bar(labels, [res["p"] for res in sampled.values()], color=[MODEL_COLORS[n] for n, _ in sampled])
for i, res in enumerate(sampled.values()):
    ax[0, 2].text(i, res["p"] + 0.01, f"{res['p']:.3f}\nacc {res['accuracy']:.2f}", ha="center", fontsize="x-small")
ax[0, 2].set(ylim=(0, 1.15), ylabel=f"attention mass at loss {cfg.loss_target:g}", title="full model, sampled, GD")
ax[0, 2].tick_params(axis="x", labelsize="x-small")
fig.suptitle(f"Corollary 5: attention mass at matched loss (reduced ODE n={cfg.n_compete}, K={cfg.n_classes}; "
             f"full model right)", y=1.04);

# %% [markdown]
# FAFO with a ten times faster QK circuit reaches an attention mass of
# {glue:text}`samp_fafo10:.3f`, above FACO's {glue:text}`samp_faco:.3f` at equal rates and far
# above FAFO's {glue:text}`samp_fafo1:.3f` at $r=1$ (CACO: {glue:text}`samp_caco1:.3f`), all at
# the same training loss and with
# training accuracy 1 (table): the attention pattern changes, the predictive performance
# does not. Across the reduced runs the attention mass at matched loss ranges from
# {glue:text}`p_min:.3f` to {glue:text}`p_max:.4f` while the correct-class probability is
# $s_*$ for all of them — sharpening is decoupled from the loss and the accuracy.
#
# ## 5. Claims
#
# Tolerances. The symbolic residual must be zero. The spec's §8.1 targets for $p$ are met within
# its stated $\pm0.002$ and the ordering must hold exactly. The monotonicity in $r$ is a strict
# inequality. The full model's population flow and the reduced ODE are independent adaptive
# solutions (relative tolerance $\le10^{-9}$) with event location, so we allow $10^{-6}$. The
# sampled-run targets of spec §8.2 are printed to two decimals (FAFO ×10 "1.00", FACO "0.99"),
# so they are met within half a unit of the last printed digit, 0.005; they, and the training
# accuracy of 1 at that loss, are checked only when the parameters are the spec's configuration
# (apart from $N$).

# %%
spec_p_match = {"FACO": 0.9770, "CACO": 0.8431, "FAFO": 0.7228, "CAFO": 0.5373}
spec_p_end = {"FACO": 0.9992, "CACO": 0.9875, "FAFO": 0.9839, "CAFO": 0.8530}
spec_reduced = (cfg.n_compete, cfg.n_classes, cfg.a0, cfg.b0, cfg.matched_prob) == (9, 5, 0.1, 0.1, 0.9)
claims.check("A6", n_nonzero, 0, atol=0, what="sympy: residual of the matched-loss margin u*", source="reconstruction")
if spec_reduced and 1.0 in cfg.lr_ratios:
    for name in cfg.parametrizations:
        claims.check("A12", p_match[(name, 1.0)], spec_p_match[name], atol=0.002, what=f"{name}, r=1: p at s = 0.9")
        if cfg.horizon == 1e5:
            claims.check("A12", p_end[(name, 1.0)], spec_p_end[name], atol=0.002, what=f"{name}, r=1: p at t = 1e5")
if set(cfg.parametrizations) == set(spec_p_match) and 1.0 in cfg.lr_ratios:
    want = ["FACO", "CACO", "FAFO", "CAFO"]
    claims.check("A12", [p_match[(n, 1.0)] for n in want], predicate=lambda x: x[0] > x[1] > x[2] > x[3],
                 tolerance="exact ordering FACO > CACO > FAFO > CAFO", what="p at s = 0.9, r=1 (FACO, CACO, FAFO, CAFO)")
    claims.check("A12", [p_end[(n, 1.0)] for n in want], predicate=lambda x: x[0] > x[1] > x[2] > x[3],
                 tolerance="exact ordering FACO > CACO > FAFO > CAFO", what="p at the horizon, r=1 (FACO, CACO, FAFO, CAFO)")
for name in cfg.parametrizations:
    seq = [p_match[(name, r)] for r in sorted(cfg.lr_ratios)]
    claims.check("A6", seq, predicate=lambda x: all(u < v for u, v in zip(x, x[1:])),
                 tolerance="strictly increasing in r", what=f"{name}: p at s = s* for r = {sorted(cfg.lr_ratios)}")
claims.check("A6", max(abs(v - cfg.matched_prob) for v in s_match.values()), 0.0, atol=1e-8,
             what="decoupling: max |s − s*| over all reduced runs at the matched point")
claims.check("A6", min(f["accuracy"] for f in full.values()), 1.0, atol=1e-12,
             what="decoupling: full-model accuracy at matched loss (population), worst parametrization")
for name in cfg.parametrizations:
    claims.check("A12", full[name]["p"], p_match[(name, r1)], atol=1e-6,
                 what=f"{name}, r={r1:g}: full-model population flow vs reduced ODE, p at s = s*")
if spec_reduced and 1.0 in cfg.lr_ratios and 10.0 in cfg.lr_ratios and cfg.horizon == 1e5:
    claims.check("A14", p_end[("FAFO", 10.0)], p_end[("FACO", 1.0)], atol=0.002,
                 what="reduced: p(1e5) of FAFO at r=10 vs FACO at r=1")
    claims.check("A14", p_end[("FAFO", 10.0)], 0.9992, atol=0.002, what="reduced: p(1e5) of FAFO at r=10")
claims.check("A14", [sampled[("FAFO", 10.0)]["p"], sampled[("FACO", 1.0)]["p"]], predicate=lambda x: x[0] > x[1],
             tolerance="FAFO ×10 sharper than FACO", what="full model, sampled GD: attention mass (FAFO r=10, FACO r=1)",
             source="paper + reconstruction")
spec_sampled = (cfg.n_classes, cfg.n_common, cfg.seq_len, cfg.gd_lr, cfg.init_std, cfg.loss_target) == (5, 20, 12, 0.1, 0.1, 0.1)
if spec_sampled:   # spec §8.2: "training accuracy was 1.00 for every model at that point"
    claims.check("A6", min(res["accuracy"] for res in sampled.values()), 1.0, atol=0.0,
                 what="decoupling: training accuracy of the sampled runs at loss 0.1, worst run")
    claims.check("A14", sampled[("FAFO", 10.0)]["p"], 1.00, atol=0.005, what="full model, sampled GD: FAFO r=10 attention mass")
    claims.check("A14", sampled[("FACO", 1.0)]["p"], 0.99, atol=0.005, what="full model, sampled GD: FACO r=1 attention mass")
claims.finish()
