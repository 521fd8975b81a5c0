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
# # Where the sharpening claims break: initialization scale and step size
#
# The theory of this chapter is gradient *flow* from a small *balanced* initialization. The
# experiments use gradient *descent* from a random Gaussian one. This page asks how far that
# gap can be pushed: it trains the four parametrizations and a fast-QK FAFO on a grid of
# initialization scales and step sizes, checks the sharpening claims in every cell, and says
# plainly where they fail.
#
# ```{prf:remark} Initialization and discretization (spec Q6)
# :label: rem-where-it-breaks
#
# **[reconstruction]** The spec's full-model targets hold at init std $0.1/\sqrt d$ and GD step
# 0.1; its authors also saw FAFO with $\eta_{QK}\times10$ *stall* at attention mass 0.80 with
# init std $1/\sqrt d$, with a few sequences attending to the wrong token (spec §8.2). The
# claims tested per cell: all models reach the matched loss; FACO is the sharpest and CAFO the
# least sharp parametrization (A7); faster QK sharpens FAFO (A8) up to FACO's level (A14).
# ```

# %% tags=["parameters"]
init_scales = [0.01, 0.1, 1.0, 3.0]  # init std σ·√d of the grid rows (Gaussian, not balanced)
lrs = [0.1, 1.0, 10.0]  # GD steps η_OV of the grid columns (0.1: the spec's step)
fast_ratio = 10.0     # r of the fast-QK FAFO (η_QK over η_OV)
seeds = [0, 1, 2]     # data/init seeds per cell (≥ 3: the orderings are checked in every seed)
init_scale = 0.1      # init scale of the reference cell (one of init_scales)
target_loss = 0.1     # matched training loss L*
max_time = 200.0      # GD time budget η·steps per model (still above L* then: stalled)
n_classes = 5         # K classes
n_common = 20         # M common tokens
seq_len = 12          # T, sequence length with the query token
n_train = 1000        # N training sequences per seed
n_test = 500          # held-out sequences per seed
attend_self = False   # the query attends to its own position
device = "auto"       # auto, cpu or cuda

# %% tags=["hide-input"]
from attnflow import claims, params
from attnflow.sharpening.contracts import WHERE_IT_BREAKS
cfg = params.validate(globals(), WHERE_IT_BREAKS)

# %%
import numpy as np
from attnflow import display, plotting, seeding
from attnflow.plotting import MODEL_COLORS
from attnflow.sharpening import data, experiments, figures, targets
from attnflow.sharpening.model import PARAMETRIZATIONS

seeding.seed_everything(cfg.seeds[0])
plotting.use_style()

# %% [markdown]
# ## 1. One batched run for the whole grid
#
# Each of the {glue:text}`n_cells` cells trains CACO, CAFO, FACO and FAFO at $r=1$ and FAFO at
# $r=$ {glue:text}`fast_ratio:g` ($\eta_{QK}=r\eta_{OV}$), {glue:text}`n_seeds` seed(s) each, with
# full-batch GD on $N=$ {glue:text}`n_train` sequences, until the training loss first reaches
# $L^*=$ {glue:text}`target_loss:g` or its budget of gradient-flow time
# $\eta\cdot\text{steps}=$ {glue:text}`max_time:g` is spent ({glue:text}`budget_small` steps
# at the smallest step, {glue:text}`budget_large` at the largest; the spec's §8.2 runs reached
# $L^*$ within 1,260–1,975 steps of 0.1, i.e. by time 200). A model still above $L^*$
# then has *stalled*. Every model of every cell is trained in the same batched computation; a
# model whose loss becomes infinite is flagged as *diverged* instead of stopping the run. The
# models are then evaluated on held-out sequences and arranged as (parametrization × init
# scale × step × seed) arrays (`experiments.by_parametrization` with grid axes).

# %%
task = data.Task(cfg.n_classes, cfg.n_common, cfg.seq_len)
scales, steps = sorted(cfg.init_scales), sorted(cfg.lrs)  # grid rows (init std·√d) and columns (GD step η_OV)
specs = (experiments.grid(list(PARAMETRIZATIONS), [1.0], cfg.seeds, steps, scales)
         + experiments.grid(["FAFO"], [cfg.fast_ratio], cfg.seeds, steps, scales))
limits = [int(np.ceil(cfg.max_time / sp.lr_ov)) for sp in specs]  # GD steps of each model: time η·steps
exp = experiments.run(specs, task, n_train=cfg.n_train, n_test=cfg.n_test, steps=max(limits), step_limits=limits,
                      target_loss=cfg.target_loss, attend_self=cfg.attend_self, on_diverge="mark",
                      record_every=100, device=cfg.device)
held_out = experiments.evaluate(exp)
four = experiments.by_parametrization(exp, held_out, axes=("init_scale", "lr_ov"), lr_ratio=1.0)
fast = experiments.by_parametrization(exp, held_out, axes=("init_scale", "lr_ov"), lr_ratio=cfg.fast_ratio)
print(f"{exp.describe()}; diverged: {exp.diverged.sum()}, stalled: {(~exp.reached & ~exp.diverged).sum()}")
print("arrays (parametrization, init scale, step, seed):", four["attn_relevant"].shape, fast["attn_relevant"].shape)

# %% [markdown]
# Per cell, six criteria, each in every seed: **L** every model reaches $L^*$; **M** every model
# stops within 5% of $L^*$ (the matched-loss tolerance of {doc}`four_parametrizations`); **F**
# FACO is the sharpest and **C** CAFO the least sharp of the four at $r=1$; **A** the fast-QK
# FAFO is sharper than FAFO; **R** it reaches FACO's level. The figure shows them with the
# fast-QK FAFO's attention and the FAFO − CACO gap (Q2); the table lists each cell.

# %%
CRITERIA = {"L": "all reach L*", "M": "all stop within 5% of L*", "F": "FACO sharpest", "C": "CAFO least sharp",
            "A": "fast-QK FAFO > FAFO", "R": "fast-QK FAFO ≥ FACO"}
stop_loss = np.concatenate([four["loss_final"], fast["loss_final"]])  # (5 models, scales, steps, seeds)
overshoot = np.nanmax(1 - stop_loss / cfg.target_loss, axis=(0, 3))  # how far below L* a cell's models stopped
n_reached = four["reached"].sum((0, 3)) + fast["reached"].sum((0, 3))  # (scales, steps)
n_diverged = four["diverged"].sum((0, 3)) + fast["diverged"].sum((0, 3))
fafo, fast_fafo, caco = four.of("FAFO"), fast.of("FAFO"), four.of("CACO")  # (scales, steps, seeds)
held = {"L": n_reached == 5 * len(cfg.seeds), "M": overshoot <= 0.05,
        "F": (four.lead("FACO") > 0).all(-1), "C": (four.lag("CAFO") > 0).all(-1),
        "A": (fast_fafo > fafo).all(-1), "R": (fast_fafo >= four.of("FACO")).all(-1)}
done = held["L"] & held["M"]  # matched cells: every model stopped within 5% of L*
fig = figures.criteria_grid(held, CRITERIA, fast_fafo.mean(-1), cfg.fast_ratio, (fafo - caco).mean(-1), scales, steps)

# %%
display.table([{"init std·√d": s, "step η_OV": lr, "reached L*": f"{n_reached[i, j]}/{5 * len(cfg.seeds)}",
                "diverged": n_diverged[i, j], "largest overshoot": overshoot[i, j], "FAFO r=1": fafo[i, j].mean(),
                f"FAFO r={cfg.fast_ratio:g}": fast_fafo[i, j].mean(), "CACO": caco[i, j].mean(),
                "failed": "".join(k for k in CRITERIA if not held[k][i, j])}
               for i, s in enumerate(scales) for j, lr in enumerate(steps)], floatfmt="{:.3f}")

# %%
STALL_SCALE = targets.STALL["init_scale"]  # spec §8.2: from init std 1/√d, FAFO ×10 stalled at 0.80
stall_fast = fast.at("FAFO", init_scale=STALL_SCALE, lr_ov=steps[0])  # (seeds,); [NaN] when not on the grid
stall_slow = four.at("FAFO", init_scale=STALL_SCALE, lr_ov=steps[0])
i_ref, k_fafo = scales.index(cfg.init_scale), four.names.index("FAFO")
stalled = ~four["reached"] & ~four["diverged"]  # (4, scales, steps, seeds): still above L* at the budget
weak_correct = ((four["test_attn_relevant_each"] < 0.5) & four["test_correct_each"]).mean(-1)  # right, weak attention
fails_A = held["L"] & ~held["A"]  # cells where every model reached L* and faster QK did not sharpen FAFO
display.glue(
    n_cells=done.size, fast_ratio=cfg.fast_ratio, n_seeds=len(cfg.seeds), n_train=cfg.n_train,
    target_loss=cfg.target_loss, max_time=cfg.max_time, budget_small=int(np.ceil(cfg.max_time / steps[0])),
    budget_large=int(np.ceil(cfg.max_time / steps[-1])), n_complete=done.sum(), n_reached=held["L"].sum(),
    n_fail_order=(done & ~(held["F"] & held["C"])).sum(), n_fail_A=fails_A.sum(),
    fail_A_min=min(np.array(scales)[fails_A.any(1)], default=np.nan), ref_scale=cfg.init_scale, ref_lr=steps[0],
    big_scale=scales[-1], n_big_runs=len(steps) * len(cfg.seeds), n_diverged=exp.diverged.sum(),
    big_faco_stalled=stalled[four.names.index("FACO"), -1].sum(),
    big_fast_stalled=(~fast["reached"] & ~fast["diverged"])[0, -1].sum(),
    max_overshoot=np.nanmax(overshoot), worst_lr=steps[int(np.nanargmax(np.nanmax(overshoot, axis=0)))],
    n_fafo_above=((fafo - caco).mean(-1) > 0).sum(), n_fafo_below=((fafo - caco).mean(-1) < 0).sum(),
    stall_lo=stall_fast.min(), stall_hi=stall_fast.max(), stall_fafo=stall_slow.mean(),
    n_stall=(stall_fast < stall_slow).sum(),
    wrong_ref=1 - fast.at("FAFO", "test_top1_relevant", init_scale=cfg.init_scale, lr_ov=steps[0]).mean(),
    wrong_one=1 - fast.at("FAFO", "test_top1_relevant", init_scale=1.0, lr_ov=steps[0]).mean(),
    weak_correct_big=weak_correct[k_fafo, -1, 0].mean(), weak_correct_ref=weak_correct[k_fafo, i_ref, 0].mean(),
)

# %% [markdown]
# ## 2. What holds and what breaks
#
# - **FACO sharpest, CAFO least sharp: robust at small initialization.** Of the
#   {glue:text}`n_complete` cells where all models reach $L^*$ (and stop within 5% of it), the
#   orderings fail in some seed in {glue:text}`n_fail_order`. At init std up to
#   {glue:text}`ref_scale:g`$/\sqrt d$ they held in every seed of every run we tried; at
#   $1/\sqrt d$ FACO is not the sharpest in some seeds (seeds 3–5 of the `smoke` grid, for
#   instance), so the claim's domain is small initialization, as in the theory.
# - **Faster QK sharpens FAFO at small initialization, not at large.** Among the
#   {glue:text}`n_reached` cells where every model reaches $L^*$ it fails in
#   {glue:text}`n_fail_A`, all at init scales of {glue:text}`fail_A_min:g`$/\sqrt d$ and above. At std
#   $1/\sqrt d$ and step {glue:text}`ref_lr:g` the fast-QK FAFO ends between {glue:text}`stall_lo:.3f` and
#   {glue:text}`stall_hi:.3f` over seeds, against {glue:text}`stall_fafo:.3f` for FAFO at
#   $r=1$: in {glue:text}`n_stall` seed(s) it *stalls* below the slow model — the spec's 0.80 —
#   while in the others it still reaches FACO's level. The stall is a property of the seed, not
#   of the setting: the spec's single run could have gone either way.
# - **At std {glue:text}`big_scale:g`$/\sqrt d$ training itself breaks.** FACO fails to reach
#   $L^*$ within its time budget in {glue:text}`big_faco_stalled` of
#   {glue:text}`n_big_runs` runs and the fast-QK FAFO in {glue:text}`big_fast_stalled`: they
#   sit on a plateau where a sixth of the sequences attend to, and are predicted from, a common
#   token. The largest step diverges for the factorized models there
#   ({glue:text}`n_diverged` models diverged in the whole grid).
# - **Large steps blur "matched loss".** A model stops at the first step below $L^*$; with
#   large steps that step lands far below it — up to {glue:text}`max_overshoot:.0%` below at
#   step {glue:text}`worst_lr:g`. Attention keeps sharpening as the loss falls, so comparisons at
#   large steps are comparisons at different losses.
# - **The FAFO–CACO ordering depends on the initialization (Q2).** FAFO is sharper than CACO
#   in {glue:text}`n_fafo_above` cells and blunter in {glue:text}`n_fafo_below`; the sign
#   changes with the init scale, which moves FAFO and leaves CACO almost unchanged.

# %%
fig = figures.attention_histograms(
    {("FAFO r=1", MODEL_COLORS["FAFO"]): (four, "FAFO"), (f"FAFO r={cfg.fast_ratio:g}", "k"): (fast, "FAFO"),
     ("FACO r=1", MODEL_COLORS["FACO"]): (four, "FACO")},
    list(dict.fromkeys([cfg.init_scale] + [s for s in (STALL_SCALE, scales[-1]) if s in scales])), steps[0])

# %% [markdown]
# "Look elsewhere" counts the held-out sequences whose largest attention weight is on a
# common token. At the reference scale the fast-QK FAFO does so for a fraction
# {glue:text}`wrong_ref:.4f` of them; at std $1/\sqrt d$ for {glue:text}`wrong_one:.4f` (seeds
# pooled: the stalled seed carries them) — the spec's "few instances attended to the wrong
# token". At std {glue:text}`big_scale:g`$/\sqrt d$ something else appears: FAFO at $r=1$
# reaches $L^*$ while a fraction {glue:text}`weak_correct_big:.3f` of the held-out sequences
# are predicted *correctly with less than half of the attention on the distinct token*
# ({glue:text}`weak_correct_ref:.3f` at the reference scale): a large OV weight reads the
# class off a distinct token that gets only a few percent of the attention. This is the
# paper's "confident with weak attention" DTAP region for FAFO, which the reconstruction
# produces only from large initializations (logged on the {doc}`errata page <../errata>`).
#
# ## 3. Claims
#
# Every domain reads the **parameters** only (the grid, the budget, the task, the seeds): where a
# claim is predicted is decided before any model is trained. Seed statements are decided on the
# one-sided 95% Wilson lower bound of the share of seeds (`claims.check_share`; on 3 seeds it needs
# all three).
#
# - *A7* and *A8 where it holds*, in each cell of the reference init std
#   {glue:text}`ref_scale:g`$/\sqrt d$: FACO sharpest and CAFO least sharp of the four (A7), and the
#   fast-QK FAFO sharper than FAFO (A8), in most seeds. Domain (parameters): the spec's §8.2
#   setting, where the theory's small initialization and flow are approximated and the spec's runs
#   reached $L^*$ within time 197.5 — init std $0.1/\sqrt d$, the §8.2 task, a time budget of at
#   least 197.5 and a step of at most the spec's 0.1, close to the flow. Smaller inits escape the
#   saddle later by a time the page cannot forecast (at $0.01/\sqrt d$ the factorized models do not
#   reach $L^*$ within the budget), larger ones are where the claims break (section 2), and larger
#   steps overshoot the matched loss: all outside. That every model of such a cell reached $L^*$
#   within 5% is the protocol of the comparison: a precondition, which fails the page if it does not
#   hold.
# - *A8 at init $1/\sqrt d$, the paper's direction*: at the smallest step of the grid (at most 0.3,
#   close to the flow) the fast-QK FAFO should end sharper than FAFO at $r=1$ in most seeds. The
#   spec's §8.2 run *stalled* there (at 0.80, blunter than FAFO), and so do some seeds here: where
#   the share does not clear ½ the check is recorded as a finding against the paper (≠), linked to
#   the {ref}`errata entry <errata-sharpening-stall>`, never as a pass. Domain (parameters): init
#   std $1/\sqrt d$ in the grid and a smallest step of at most 0.3.

# %% tags=["hide-input"]
SPEC_STEP, SPEC_TIME = targets.FULL_CONFIG["gd_lr"], 197.5  # spec §8.2: step 0.1, L* reached within 1,975 of them
spec_cell = claims.domain(
    (f"reference init std {cfg.init_scale:g}/√d is the spec's {targets.FULL_CONFIG['init_std']:g}/√d (parameters)",
     targets.is_full_config(init_std=cfg.init_scale), f"init_scale = {cfg.init_scale:g}"),
    ("the spec §8.2 task: K = 5, M = 20, T = 12, L* = 0.1 (parameters)",
     targets.is_full_config(n_classes=cfg.n_classes, n_common=cfg.n_common, seq_len=cfg.seq_len,
                            loss_target=cfg.target_loss),
     f"K = {cfg.n_classes}, M = {cfg.n_common}, T = {cfg.seq_len}, L* = {cfg.target_loss:g}"),
    (f"time budget ≥ {SPEC_TIME:g}, the spec's slowest run to L* (parameters)", cfg.max_time >= SPEC_TIME,
     f"max_time = {cfg.max_time:g}"))
for j, lr in enumerate(steps):
    claims.precondition(
        f"init {cfg.init_scale:g}, step {lr:g}: every model reached L* and stopped within 5% of it (required where "
        "A7/A8 are in their domain)", bool(done[i_ref, j]) or not spec_cell or lr > SPEC_STEP,
        f"{n_reached[i_ref, j]} of {5 * len(cfg.seeds)} reached, largest overshoot {overshoot[i_ref, j]:.3f}"
        + ("" if spec_cell and lr <= SPEC_STEP else "; not required here: A7/A8 are outside their domain"))
    claims.check_share(
        "A7", (four.lead("FACO") > 0)[i_ref, j] & (four.lag("CAFO") > 0)[i_ref, j], source="reconstruction",
        what=f"init {cfg.init_scale:g}, step {lr:g}: FACO sharpest and CAFO least sharp at L* in most seeds",
        domain=spec_cell & claims.domain((f"step ≤ the spec's {SPEC_STEP:g} (parameters)", lr <= SPEC_STEP,
                                          f"η_OV = {lr:g}")))
    claims.check_share(
        "A8", (fast_fafo > fafo)[i_ref, j], source="paper",
        what=f"init {cfg.init_scale:g}, step {lr:g}: FAFO ×{cfg.fast_ratio:g} sharper than FAFO at L* in most seeds "
        f"(per seed {np.round(fast_fafo - fafo, 4)[i_ref, j].tolist()})",
        domain=spec_cell & claims.domain((f"step ≤ the spec's {SPEC_STEP:g} (parameters)", lr <= SPEC_STEP,
                                          f"η_OV = {lr:g}")))
claims.check_share(
    "A8", stall_fast > stall_slow, source="paper", errata="errata-sharpening-stall",
    what=f"init {STALL_SCALE:g}/√d, step {steps[0]:g}: FAFO ×{cfg.fast_ratio:g} sharper than FAFO at L* in most "
    f"seeds (per seed {np.round(stall_fast - stall_slow, 4).tolist()})",
    domain=claims.domain(
        (f"init {STALL_SCALE:g}/√d in the grid (parameters)", STALL_SCALE in scales, f"init scales {scales}"),
        (f"smallest step ≤ {3 * SPEC_STEP:g}, close to the flow (parameters)", steps[0] <= 3 * SPEC_STEP + 1e-12,
         f"smallest step {steps[0]:g}")))
claims.finish()
