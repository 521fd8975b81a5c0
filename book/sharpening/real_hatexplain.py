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
# # Real data: HateXplain (sentiment stand-in)
#
# The paper's intervention on real data is one number: train the query-key circuit $r$ times
# faster than the output-value circuit, everything else fixed, and watch the attention
# interpretability proxies. This page does it for HateXplain ({cite:t}`mathew2021hatexplain`):
# classify a post and compare the attention with the tokens human annotators marked as the
# rationale for their label.
#
# ```{prf:observation} Faster query-key learning on HateXplain
# :label: obs-real-hatexplain
#
# **[paper]** {cite:p}`vashisht26a`: with a larger $\eta_{QK}/\eta_{OV}$ the attention
# interpretability metrics (AC, ACMC) improve on HateXplain and SVA with AdamW and SGD, while
# accuracy stays roughly unchanged (claim A10); sufficiency and comprehensiveness of the
# top-attention tokens improve (A11, direction assumed by the spec).
# **[prior work]**: the dataset {cite:p}`mathew2021hatexplain`; sufficiency and comprehensiveness
# {cite:p}`deyoung2020eraser`.
# **[reconstruction]**: the model (a learned embedding and one FAFO head read at a [CLS]-like
# query), every hyperparameter (spec Q5), the thresholds (Q3) and the rationale protocol (Q4).
# ```

# %% tags=["parameters"]
source = "auto"              # auto (real data if reachable, else stand-in), hub or standin
n_train = 3000               # training examples (fixed random subset)
n_test = 1000                # held-out examples (from the test split)
max_len = 40                 # tokens kept per post
vocab_size = 3000            # V, word vocabulary fitted on the training split
d_model = 32                 # d, embedding width
d_head = 32                  # d_h, head width of W_Q, W_K, W_O, W_V
parametrization = "FAFO"     # a standard attention head
init_scale = 1.0             # circuit init std × √d (embedding rows have std 1/√d)
lr_ratios = [1.0, 3.0, 10.0]  # r, the ratio η_QK over η_OV
optimizers = ["adamw", "sgd"]  # the paper's two optimizers
lr_adamw = 0.001             # AdamW η_OV (spec §7.2)
lr_sgd = 0.1                 # SGD η_OV (spec §7.2)
momentum = 0.9               # SGD momentum μ (spec §7.2)
weight_decay = 0.01          # AdamW decoupled weight decay (spec §7.2)
epochs_adamw = 6.0           # AdamW passes over the training subset
epochs_sgd = 12.0            # SGD passes (SGD moves attention more slowly)
batch_size = 64              # minibatch size (spec §7.2: 32 to 64)
seeds = [0, 1, 2]            # init seeds, paired across r
tau_attn = 0.5               # AC threshold τ_a
tau_conf = 0.5               # ACMC confidence threshold τ_c
tau_attns = [0.3, 0.4, 0.5, 0.6, 0.7]  # τ_a of the threshold sweep (Q3)
device = "auto"              # auto, cpu or cuda

# %% tags=["hide-input"]
from attnflow import claims, params
from attnflow.sharpening.contracts import REAL_HATEXPLAIN
cfg = params.validate(globals(), REAL_HATEXPLAIN)

# %%
from attnflow import data, display, plotting, seeding
from attnflow.sharpening import figures, realdata, targets

seeding.seed_everything(cfg.seeds[0])
plotting.use_style()
ds = data.load("hatexplain", source=cfg.source)   # prints the source it used

# %% [markdown]
# ## 1. Data
#
# The line printed above names the source. Where the Hugging Face Hub is unreachable (as on the
# machines this book is built on) it is the **offline stand-in** of `data/README.md`, and
# **it is sentiment, not hate speech**: no hate-speech data with token rationales ships in a
# reachable package. The stand-in holds VADER's 23.6k human-rated tweets and review and
# editorial snippets (Hutto & Gilbert, ICWSM 2014):
#
# - **labels** negative / neutral / positive come from the mean of about 20 human ratings per
#   sentence (HateXplain: hate / offensive / normal by three annotators);
# - **rationales** are the tokens whose entry in VADER's human-rated *lexicon* has the sign of the
#   label — rated out of context, not marked on each sentence as HateXplain's annotators did;
#   neutral sentences have none, so AC, ACMC, DTAP and the ERASER metrics use only test
#   sentences with at least one rationale token (accuracy uses all).
#
# Rationales from a word lexicon are easier to find for a bag-of-words attention than
# HateXplain's contextual ones, so the sizes below are not comparable with the paper's.

# %%
display.table(realdata.data_rows(ds), floatfmt="{:.3f}")

# %% [markdown]
# **Model** [reconstruction] (`attnflow.sharpening.realdata`): the post, preceded by one
# query token `<sep>` (a [CLS]), is embedded by a learned $E\in\mathbb R^{V\times d}$; the query
# attends over the post through $W_QW_K^\top$ and the attended embedding is mapped to the three
# classes by $W_OW_V$ — spec §4 with learned instead of one-hot embeddings. No positional
# encoding: deleting a token is exact (ERASER). $\eta_{QK}=r\,\eta_{OV}$ on $W_Q,W_K$;
# $\eta_{OV}$ on $W_O,W_V$ *and* on $E$. Models with the same seed start from the same weights
# and see the same minibatches, so every comparison over $r$ is paired.

# %%
tok = ds.tokenizer(cfg.vocab_size, lowercase=True)
train, test = realdata.splits(ds, tok, cfg.max_len, cfg.n_train, cfg.n_test)  # fixed random subsets
model = realdata.RealConfig(
    cfg.parametrization, len(tok), len(ds.label_names), cfg.d_model, cfg.d_head, init_scale=cfg.init_scale
)  # n_out: one logit per class of the set
print(f"{len(train)} training and {len(test)} test sentences; V = {len(tok)} words; {model}")

# %% [markdown]
# One batched run per optimizer trains every $r$ × seed together: AdamW with decoupled weight
# decay, SGD with momentum, both on minibatches of `batch_size`; the training loss is read at the
# start and at the end only. Each model is then measured on the held-out sentences.

# %%
settings = {  # η_OV, passes over the training subset and the optimizer's own settings (spec §7.2)
    "adamw": dict(lr=cfg.lr_adamw, epochs=cfg.epochs_adamw, momentum=0.0, weight_decay=cfg.weight_decay),
    "sgd": dict(lr=cfg.lr_sgd, epochs=cfg.epochs_sgd, momentum=cfg.momentum, weight_decay=0.0),
}
runs = {
    opt: realdata.run(
        model, train, cfg.lr_ratios, cfg.seeds, optimizer=opt, batch_size=cfg.batch_size, device=cfg.device,
        evals=1, **settings[opt],
    )
    for opt in cfg.optimizers
}
for run in runs.values():
    print(run.describe())
held_out = {
    opt: realdata.evaluate(run, test, tau_attn=cfg.tau_attn, tau_conf=cfg.tau_conf, tau_attns=cfg.tau_attns)
    for opt, run in runs.items()
}  # per model: accuracy, entropy, AC, ACMC, the τ_a sweep, ERASER, the DTAP points
ex = realdata.RealExperiment(ds, tok, train, test, runs, held_out)

# %% [markdown]
# ## 2. Results
#
# {glue:text}`n_train_used` training and {glue:text}`n_test_used` test sentences; one row per
# optimizer and $r$ (means over seeds, `_sd` their spread). *AC* and *ACMC* count test
# sentences whose attention on the rationale is $\ge\tau_a$ (and, for ACMC, whose
# true-class probability is $\ge\tau_c$); *entropy* is the attention entropy (nats) over the
# sentence; sufficiency and comprehensiveness are AOPC over rationales of the top
# $\{1,5,10,20,50\}\%$ tokens by attention.

# %%
display.table(ex.rows(), floatfmt="{:.3f}")

# %% [markdown]
# The comparison that decides the claims is paired: the model trained at $r_{\max}$ against the
# model of the same seed at $r=1$ (same initial weights, same minibatches). One row per optimizer
# and metric: the change of every seed, its mean, and in how many seeds it is positive.

# %%
r_max = max(cfg.lr_ratios)
ac_1, ac_fast = targets.SQUAD_AC  # the paper's AC on SQuAD at r = 1 and with fast QK
display.glue(
    n_train_used=len(train), n_test_used=len(test), r_max=r_max, tau=cfg.tau_attn,
    paper_ac_r1=ac_1, paper_ac_fast=ac_fast, paper_ac_rise=ac_fast - ac_1,
    dac_adamw=ex.change_text("adamw", "ac", r_max), dac_sgd=ex.change_text("sgd", "ac", r_max),
    **ex.seed_means({"r1": 1.0, "rmax": r_max}),  # ent_adamw_r1, ac_sgd_rmax, …; NaN for an optimizer not run
)
display.table(ex.changes(r_max), floatfmt="{:+.4f}")  # the paired-change summary

# %%
fig = figures.real_data_metrics(ex)

# %%
fig = figures.real_data_dtap(ex, relevant="the rationale", unit="sentences")

# %% [markdown]
# **AdamW: sharper attention, some AC gain, lower accuracy.** With AdamW the attention entropy
# falls from {glue:text}`ent_adamw_r1:.2f` nats at $r=1$ to {glue:text}`ent_adamw_rmax:.2f` at
# $r=$ {glue:text}`r_max:g`. AC at $\tau_a=$ {glue:text}`tau:g` goes from
# {glue:text}`ac_adamw_r1:.3f` to {glue:text}`ac_adamw_rmax:.3f` (paired per-seed changes
# {glue:text}`dac_adamw`); the table shows a larger and more regular gain at the intermediate
# $r$. This is the direction of the paper, but it comes with a loss of accuracy,
# {glue:text}`acc_adamw_r1:.3f` → {glue:text}`acc_adamw_rmax:.3f`: the fast-QK models reach a
# higher training loss in the same number of epochs (a plausible reason: an attention that
# concentrates early passes little gradient to the tokens it ignores). Sufficiency moves from
# {glue:text}`suff_adamw_r1:.3f` to {glue:text}`suff_adamw_rmax:.3f` and comprehensiveness from
# {glue:text}`comp_adamw_r1:.3f` to {glue:text}`comp_adamw_rmax:.3f` — both the ERASER-worse way.
#
# **SGD: no sharpening at this length.** The entropy goes from {glue:text}`ent_sgd_r1:.2f` to
# {glue:text}`ent_sgd_rmax:.2f`, AC from {glue:text}`ac_sgd_r1:.3f` to
# {glue:text}`ac_sgd_rmax:.3f` (per seed {glue:text}`dac_sgd`), ACMC from
# {glue:text}`acmc_sgd_r1:.3f` to {glue:text}`acmc_sgd_rmax:.3f`, while accuracy stays
# ({glue:text}`acc_sgd_r1:.3f` → {glue:text}`acc_sgd_rmax:.3f`). Sufficiency falls
# ({glue:text}`suff_sgd_r1:.3f` → {glue:text}`suff_sgd_rmax:.3f`) but comprehensiveness falls too
# ({glue:text}`comp_sgd_r1:.3f` → {glue:text}`comp_sgd_rmax:.3f`).
#
# ```{admonition} What the book defaults show on the stand-in
# :class: warning
# The paper's AC/ACMC gain *at unchanged accuracy* (claim A10) does not appear: with AdamW AC
# rises in some seeds and ACMC ({glue:text}`acmc_adamw_r1:.3f` → {glue:text}`acmc_adamw_rmax:.3f`)
# hardly moves, while accuracy falls; with SGD attention does not sharpen and AC and ACMC fall.
# Sufficiency and comprehensiveness do not both improve with either optimizer (A11). The verdicts
# are not written here: the checks below decide each one from the seed interval, and the claims
# ledger marks every statement that the interval does not support as contradicted or inconclusive, linked to the
# {ref}`errata entry <errata-sharpening-real-data>` that holds the evidence and the differences
# between stand-in and paper setup.
# ```

# %% [markdown]
# ## 3. Claims
#
# Paired comparisons (same seed, same data and minibatches, only $r$ differs), $r=1$ against
# $r_{\max}$, for each optimizer. Each statement of the paper is checked on the **mean over
# the seeds with its 95% Student-t interval** (`claims.check_mean`): the measured seed-to-seed
# spread sets the width and the interval decides the verdict. With fewer than 3 seeds (the
# `smoke` profile) every part is recorded as outside its domain. The thresholds were fixed
# before the runs; they are the first lines of the cell below:
#
# - *A6, sharper attention*: the interval of the attention-entropy change lies below 0.
# - *A10, AC and ACMC*: the interval of each change lies above +{glue:text}`rise:g`
#   ($\tau_a=\tau_c=$ {glue:text}`tau:g`). The paper gives no size on HateXplain ("similar gains" to
#   SQuAD's {glue:text}`paper_ac_rise:.2f`); {glue:text}`rise:g` — a sixth of the SQuAD rise, about
#   twice the sampling error of a paired AC difference on a few hundred sentences — is the smallest
#   change counted as a gain.
# - *A10, accuracy*: the interval of the accuracy change lies inside ±{glue:text}`acc_atol:g` — an
#   equivalence test: "unchanged" is supported only when the seeds rule out a larger change;
#   {glue:text}`acc_atol:g` is about two standard errors of a paired accuracy difference near 0.5 on
#   {glue:text}`n_test_used` sentences.
# - *A11, ERASER*: the interval of the AOPC sufficiency change lies below 0 and that of the
#   comprehensiveness change above 0 — the better directions of ERASER
#   (`attnflow.sharpening.metrics`: sufficiency $m(x)_j-m(r)_j$, lower is better; comprehensiveness
#   $m(x)_j-m(x\setminus r)_j$, higher is better), the spec's reading of "improve" (Q4).
#
# No part is declared in advance as reproduced or not; every check carries the label of the
# {ref}`errata entry <errata-sharpening-real-data>`. The interval gives one of three verdicts
# (`real_data=True`): **reproduced** (✔, the whole interval on the paper's side),
# **contradicted** (⨯, the whole interval on the other side) or **inconclusive** (◐, it
# straddles the criterion; the ledger gives the number of seeds that would decide at the measured
# spread). The last two are findings listed on the claims page, not build failures. A non-finite
# measurement fails the page.

# %%
rise = 0.05  # the smallest AC (ACMC) change counted as a gain: a sixth of the paper's SQuAD rise
acc_atol = 0.05  # "accuracy unchanged": ±2 standard errors of a paired accuracy difference near 0.5
errata = "errata-sharpening-real-data"  # the entry with the evidence, on every check
real = dict(real_data=True, errata=errata)  # verdicts: pass, contradicted or inconclusive
span = f"r = {r_max:g} minus r = 1"
display.glue(rise=rise, acc_atol=acc_atol)
for opt in ex.metrics:
    claims.check_mean("A6", ex.change(opt, "entropy", r_max), below=0.0, source="paper", **real,
                      what=f"{ex.label} {opt}: attention entropy, {span}")
    claims.check_mean("A10", ex.change(opt, "ac", r_max), above=rise, source="paper", **real,
                      tolerance=f"a rise of at least {rise:g}",
                      what=f"{ex.label} {opt}: AC at τ_a = {cfg.tau_attn:g}, {span}")
    claims.check_mean("A10", ex.change(opt, "acmc", r_max), above=rise, source="paper", **real,
                      tolerance=f"a rise of at least {rise:g}",
                      what=f"{ex.label} {opt}: ACMC at τ_a = {cfg.tau_attn:g}, τ_c = {cfg.tau_conf:g}, {span}")
    claims.check_mean("A10", ex.change(opt, "accuracy", r_max), target=0.0, margin=acc_atol, source="paper",
                      **real, tolerance=f"unchanged within ±{acc_atol:g}",
                      what=f"{ex.label} {opt}: test accuracy, {span}")
    claims.check_mean("A11", ex.change(opt, "sufficiency", r_max), below=0.0, source="paper + reconstruction",
                      **real, what=f"{ex.label} {opt}: AOPC sufficiency (lower is better), {span}")
    claims.check_mean("A11", ex.change(opt, "comprehensiveness", r_max), above=0.0, source="paper + reconstruction",
                      **real, what=f"{ex.label} {opt}: AOPC comprehensiveness (higher is better), {span}")
claims.finish()
