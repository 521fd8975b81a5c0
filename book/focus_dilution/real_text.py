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
# # Real text: WikiText and TinyStories
#
# The paper's last experiment leaves Markov chains: the same one-layer transformer, trained from a small
# initialization on real text, should go through the same stages, with attention drawn first to the most frequent
# tokens. This page trains the model of the chapter on two corpora and puts next to each run the theory's
# prediction for it: the **Markov approximation**, the same model trained on the population loss of the bigram
# chain fitted on the same text, from the same initial weights.
#
# ```{prf:observation} Focus and dilution on real text
# :label: obs-real-text
#
# **[paper]** {cite:p}`chen2026focus`: the stages appear on WikiText and TinyStories (claim B10); high-frequency
# tokens ("the", whitespace) attract attention first, a dilution phase follows, then mid-frequency tokens are
# learned (B11); the Markov approximation holds well enough in early training to serve as a proxy for real-data
# dynamics. **[reconstruction]**: the tokenization (word-level pieces with whitespace as tokens, the most frequent
# $d-1$ pieces plus one UNK bucket), the measure of attention per token id (the *lift*), the windows, every
# hyperparameter (spec Q6) and the quantitative test of the Markov approximation.
# ```

# %% tags=["parameters"]
corpora = ["wikitext", "tinystories"]  # corpora to train on
source = "auto"              # auto (real data if reachable, else stand-in), hub or standin
max_chars = 20000000         # characters kept per split (bounds tokenization of big corpora)
vocab_size = 64              # d, the most frequent pieces plus one UNK bucket
d_model = 16                 # m, embedding width
seq_len = 64                 # s, context length of a window
n_train = 1024               # N, training windows (random offsets of the training text)
n_eval = 512                 # held-out windows for every attention measure
optimizer = "gd"             # full-batch gd (the flow of the theory) or adam
lr = 0.1                     # GD step, the Euler step of the flow (time is lr × step; 0.15 already oscillates)
steps = 2800                 # optimizer steps
record_every = 10            # steps between recorded states
init_scale = 0.001           # ε, init std of every entry (small initialization)
smoothing = 0.1              # add-α smoothing of the fitted bigram chain
n_top = 5                    # the most frequent tokens form the "frequent" group
mid_ranks = [15, 40]         # frequency ranks (first, last) of the "mid-frequency" group
seed = 1                     # first seed of the initialization and of the windows
n_seeds = 3                  # seeds seed, seed + 1, …: each a real and a Markov run (paired)
device = "auto"              # auto, cpu or cuda

# %%
from attnflow import claims, params
from attnflow.focus_dilution.realtext import SCHEMA
cfg = params.validate(globals(), SCHEMA)

# %%
import numpy as np

from attnflow import display, plotting, seeding
from attnflow.focus_dilution import figures, realtext

seeding.seed_everything(cfg.seed)
plotting.use_style()
seeds = list(range(cfg.seed, cfg.seed + cfg.n_seeds))  # seed k draws θ(0) and the windows of its two runs
texts = {c: realtext.load_stream(c, cfg.vocab_size, source=cfg.source, max_chars=cfg.max_chars) for c in cfg.corpora}

# %% [markdown]
# ## 1. Data
#
# The lines printed above name the sources. Where the Hugging Face Hub is unreachable (as on the machines this book
# is built on) they are the **offline stand-ins** of `data/README.md`:
#
# - **WikiText** → the real Wikipedia excerpt that gensim ships as test data (106 articles, about 0.4M words,
#   markup stripped; WikiText-2 has about 2M words, WikiText-103 about 100M);
# - **TinyStories** → **Shakespeare's plays and poems, not children's stories**: no corpus like TinyStories
#   ships in a reachable package; this is a second real corpus in a very different register.
#
# Both are cut into word-level pieces that keep whitespace: a space and a line break are tokens of their own
# (focus_dilution.md §7 item 8 asks for the attention on whitespace). The most frequent $d-1$ pieces keep an id,
# every other piece goes to one UNK bucket. The table shows the most frequent tokens and their shares $\pi_k$.

# %%
display.table(realtext.data_rows(texts), floatfmt="{:.3f}")

# %% [markdown]
# ## 2. Training, and the Markov approximation
#
# Each corpus gives $N$ windows $x_1\dots x_{s+1}$ at random offsets; the last context token queries the $s$
# positions and predicts $x_{s+1}$ (the model of {doc}`cycle`, no positions). Full-batch gradient descent with a
# step {glue:text}`lr:g` from entries $\mathcal N(0,\epsilon^2)$, $\epsilon=$ {glue:text}`eps:g`, $d=$
# {glue:text}`d:g`, $m=$ {glue:text}`m:g`. The **Markov run** trains the same initial weights on the population
# loss of the bigram chain fitted on the training text (add-{glue:text}`alpha:g` smoothing). Both are measured on
# the same held-out windows: the loss, and the **lift** of every token id — the attention mass on the positions
# holding it divided by their share of the window (1 under uniform attention, above 1 when it draws attention).
#
# Training on real text is random (the initial weights, the windows), so every corpus is trained from
# {glue:text}`n_seeds` seeds: seed $k$ draws $\theta(0)$ and the training and held-out windows of a real run and of
# its Markov run, so the two are paired. The table lists every seed; the figures and the numbers in the text are
# those of the first seed ({glue:text}`seed_first`), and the claims are decided over all seeds.

# %%
runs = {c: realtext.train_seeds(  # per corpus: the real runs of all seeds in one batch, the Markov runs in another
    text, seeds, seq_len=cfg.seq_len, n_train=cfg.n_train, n_eval=cfg.n_eval, steps=cfg.steps, lr=cfg.lr,
    optimizer=cfg.optimizer, record_every=cfg.record_every, init_scale=cfg.init_scale, d_model=cfg.d_model,
    smoothing=cfg.smoothing, device=cfg.device) for c, text in texts.items()}
mid = range(cfg.mid_ranks[0], cfg.mid_ranks[1] + 1)  # frequency ranks of the mid-frequency group
marks = {c: [realtext.milestones(r, n_top=cfg.n_top, mid=mid) for r in rs] for c, rs in runs.items()}
per_seed = {c: realtext.seed_columns(ms) for c, ms in marks.items()}  # milestone → one value per seed
display.glue(lr=cfg.lr, eps=cfg.init_scale, d=cfg.vocab_size, m=cfg.d_model, alpha=cfg.smoothing,
             mid_first=mid[0], mid_last=mid[-1], seed_first=seeds[0], n_seeds=len(seeds))
display.glue(**{f"{c}_{k}": v for c in runs for k, v in realtext.glue_values(runs[c][0], marks[c][0]).items()})
display.table(realtext.milestone_rows(marks, seeds), floatfmt="{:.3g}")

# %%
fig = figures.real_text_runs({c: rs[0] for c, rs in runs.items()}, {c: ms[0] for c, ms in marks.items()}, mid)

# %%
fig = figures.real_text_moves({c: rs[0] for c, rs in runs.items()}, {c: ms[0] for c, ms in marks.items()}, cfg.n_top)

# %% [markdown]
# ## 3. What the runs show
#
# **Condensation, then a plateau at the unigram loss (B10).** On both corpora the loss falls from $\log d$ to the
# entropy of the training targets while the effective rank of the embedding $W_0$ drops from
# {glue:text}`wikitext_rank_init:.1f` to {glue:text}`wikitext_rank_cond:.2f` (WikiText; TinyStories stand-in
# {glue:text}`tinystories_rank_cond:.2f`) and attention stays uniform (largest lift change
# {glue:text}`wikitext_lift_dev_cond:.3f` and {glue:text}`tinystories_lift_dev_cond:.3f` at the end of
# condensation, $t=$ {glue:text}`wikitext_t_cond:g` and {glue:text}`tinystories_t_cond:g`): stage 1 of the
# chapter, on real text.
#
# **The first attention move is frequency-driven — but away from the most frequent token.** The most frequent
# token of both corpora is the space (share well above $\|\pi\|^2$). The Markov theory of the plateau (spec R2–R3)
# says that every token's lift moves in proportion to $\mathrm{sign}(g)\,(\pi_k-\|\pi\|^2)$, and the fitted bigram
# chains have $g<0$ ({glue:text}`wikitext_g:.3f` and {glue:text}`tinystories_g:.3f`): a space is followed by a
# word, a word by a space, so frequent tokens are *not* followed by frequent tokens. The theory therefore predicts
# that attention leaves the space and spreads over all rarer tokens — and that is what happens: at the first move
# ($t=$ {glue:text}`wikitext_t_move:g`) the lift of the space is {glue:text}`wikitext_hub_lift_move:.2f`, that of
# the next four tokens {glue:text}`wikitext_top_lift_move:.2f` (of "the" alone
# {glue:text}`wikitext_the_lift_move:.2f`) and that of the mid-frequency tokens
# {glue:text}`wikitext_mid_lift_move:.2f` (WikiText; TinyStories stand-in:
# {glue:text}`tinystories_hub_lift_move:.2f`, {glue:text}`tinystories_top_lift_move:.2f`,
# {glue:text}`tinystories_the_lift_move:.2f`, {glue:text}`tinystories_mid_lift_move:.2f`). The closed form assumes
# contexts distributed as $\pi$, and a real window repeats its own words: the same saddle mode on the held-out
# windows (figure above; nothing taken from the runs) correlates with the move at
# {glue:text}`wikitext_move_corr:.4f` and {glue:text}`tinystories_move_corr:.4f`, the closed form at only
# {glue:text}`wikitext_move_corr_r3:.3f` and {glue:text}`tinystories_move_corr_r3:.3f`
# ({ref}`errata <errata-real-text-move>`).
#
# **Dilution and the next stage.** The tilt then decays slowly while the embedding gains a second direction, and
# the loss leaves the plateau ($t=$ {glue:text}`wikitext_t_escape:g` and {glue:text}`tinystories_t_escape:g`): at
# that transition attention concentrates anew on other tokens (see the lift panel) and the effective rank of $W_0$
# ends at {glue:text}`wikitext_rank_end:.2f` and {glue:text}`tinystories_rank_end:.2f`.
#
# **How far the Markov approximation goes.** Trained on nothing but the fitted bigram chain, the same initial
# weights give a held-out loss on *real* windows within {glue:text}`wikitext_gap_plateau:.3f` (WikiText) and
# {glue:text}`tinystories_gap_plateau:.3f` (TinyStories stand-in) of the real run all along the plateau, as a
# fraction of the total drop (on Shakespeare the two drift apart late in the plateau), the same direction of the
# first move, and the same clock through condensation: halfway at $t=$ {glue:text}`wikitext_t_half:.1f` (real) and
# {glue:text}`wikitext_t_half_markov:.1f` (Markov) on WikiText, {glue:text}`tinystories_t_half:.1f` and
# {glue:text}`tinystories_t_half_markov:.1f` on the stand-in. Late in the plateau the runs part: the held-out loss
# leaves the plateau at {glue:text}`wikitext_t_escape_val_txt` (real) and {glue:text}`wikitext_t_escape_markov_txt`
# (Markov) on WikiText ({glue:text}`wikitext_escape_diff_txt`), at {glue:text}`tinystories_t_escape_val_txt` and
# {glue:text}`tinystories_t_escape_markov_txt` on the stand-in ({glue:text}`tinystories_escape_diff_txt`); these
# shifts on the steep parts of the curves give the largest loss gap, {glue:text}`wikitext_gap_all:.3f` and
# {glue:text}`tinystories_gap_all:.3f`. Beyond the plateau the text is not a bigram chain, and the real run also
# fits its finite sample of windows (its training loss leaves the plateau before its held-out loss).
#
# ```{admonition} The paper's ordering (B11) is not reproduced on the stand-ins with this tokenization
# :class: warning
# Here whitespace *loses* attention first, "the" and the punctuation gain it together with the mid-frequency
# tokens, and the next focus goes to the UNK bucket of rare words: the first move the reconstruction predicts for
# chains with $g<0$ (the paper's order needs $g>0$, which depends on the tokenizer; the paper's is unknown, spec
# Q6). The paper's ordering is still checked below, against its statement, over the seeds (the criterion
# {glue:text}`wikitext_order_verdict` on WikiText and {glue:text}`tinystories_order_verdict` on the stand-in); a
# check that does not pass is listed as **contradicted** or **inconclusive** with the evidence in the
# {ref}`errata <errata-real-text-order>`.
# ```
#
# ```{admonition} The Markov approximation, tested against the paper's statement
# :class: warning
# How the paper quantified "well enough to serve as a proxy" is unknown (Q6). We fixed two criteria before the runs
# (below): a loss gap of at most 3% of the drop along the plateau, and escape times within 10%. On the plateau the
# criterion {glue:text}`wikitext_gap_verdict` on WikiText and {glue:text}`tinystories_gap_verdict` on the stand-in;
# at the escape it {glue:text}`wikitext_escape_verdict` and {glue:text}`tinystories_escape_verdict` (decided over
# the seeds). A check that does not pass shows **contradicted** or **inconclusive** (evidence:
# {ref}`errata <errata-real-text-markov>`); no tolerance was changed after the runs.
# ```
#
# ## 4. Claims
#
# The stages on real text (B10), the paper's order of attention (B11) and the Markov approximation as a proxy for
# early training are **statements of the paper** measured on real data: each is decided on an interval over the
# seeds and gets one of three verdicts, **reproduced** (✔, the interval on the paper's side), **contradicted** (⨯,
# on the other side) or **inconclusive** (◐, it straddles the criterion; the ledger gives the number of seeds that
# would decide). The first move's direction and the condensation clock are **predictions of the reconstruction**
# and must pass. A property that each seed has or not is counted (`claims.check_share`: "most seeds", the
# one-sided 95% Wilson lower bound of the share above ½, so 3 of 3 seeds decide it); a number is judged on the 95%
# t interval of its mean over the seeds (`claims.check_mean`). With fewer than 3 seeds every claim is outside.
# The domains read the parameters or each seed's state at its end of condensation, before the first attention
# move and the escape are looked for; every tolerance was fixed before the runs.
#
# - *B10, stage 1 on real text* [paper]: most seeds end condensation (the first record within a tenth of the drop
#   $\log d-L_{\rm plateau}$ of the plateau) with the effective rank of $W_0$ below 1.5 (about $m$ at
#   initialization, 1 for a rank-one condensate) while no token's lift has moved by more than 0.02 (attention still
#   frozen). Domain: the parameters.
# - *B10, next stage* [paper]: most seeds then fall below the plateau by at least a tenth of the gap to the bigram
#   loss, with an embedding of a second direction (effective rank above 1.8). Domain, from each seed's state at its
#   end of condensation: the seeds counted are those whose run outlasts by $\ln 10/(2r)$ the escape forecast of
#   the saddle's unstable attention mode there (rate $r$ of the loss Hessian in $W_Q,W_K$, amplitude $a$, drop
#   $\tfrac12ra^2$), $t=$ {glue:text}`wikitext_t_forecast:.0f` on WikiText (first seed); fewer than 3 such seeds
#   leave the claim outside.
# - *B11, direction of the first move* [reconstruction]: the first move after condensation correlates with the
#   theory's move on the same windows at $\sqrt{1-\ell^2}=0.995$ or more (read at lift deviation $\ell=0.1$;
#   nonlinear terms $O(\ell)$): the t interval of the mean correlation lies above it. Domain, from each seed's
#   state at its end of condensation: rank $W_0<1.5$ there (near the rank-one saddle the theory linearizes at).
# - *B11, the paper's order* [paper]: in most seeds, at the first attention move (the first record where some lift
#   is 0.1 away from 1) the space and "the" have lift above 1 and above the mean lift of frequency ranks
#   {glue:text}`mid_first`–{glue:text}`mid_last`: strict inequalities without a margin, the most lenient reading of
#   "first". Domain: the parameters.
# - *B10, Markov approximation: condensation clock* [reconstruction]: in most seeds the two runs pass the middle of
#   condensation (read between records, linearly) at times within 10% of each other. A t interval of the mean
#   difference would need a seed-to-seed spread below 3.5% to fit within ±10% on 3 seeds; the smoke profile's
#   shorter runs spread by 4–5%, so each seed is held to the tolerance instead. Condensation depends on the data
#   only through π (rate $\sigma_0=\|\pi\|\|\pi-\mathbf 1/d\|$, spec R1),
#   shared by the text and its chain (estimated to a few percent). Domain: the parameters.
# - *B10, Markov approximation on the plateau* [paper]: from the end of condensation to the escape, the Markov
#   run's held-out loss stays within **3%** of the real run's drop $\log d-L_{\rm end}$: the t interval of the mean
#   largest gap lies below 3%. Set before the runs: the finite sample of windows moves the real run's plateau by
#   about 1% of the drop, and "well enough to serve as a proxy" should leave the loss curves indistinguishable at
#   the scale of a figure. Domain: the parameters.
# - *B10, Markov approximation at the escape* [paper]: in most seeds the two held-out losses leave the plateau (a
#   tenth of the gap to the bigram loss below it) at times within **10%** of each other, the condensation clock's
#   tolerance; a seed in which either run is still on the plateau at the end does not count as agreeing. Domain:
#   that of the next stage (the seeds whose escape is due within the run). Reading "early training" as the first
#   cycle, up to this escape, is ours (Q6).
# %%
GAP_TOL = 0.03     # B10 on the plateau: largest held-out loss gap / loss drop (set before the runs)
CLOCK_RTOL = 0.1   # B10 clocks (mid-condensation, leaving the plateau): relative, set before the runs
DUE_FACTOR = 1.0   # B10 escape: decades of loss drop the run must have time for beyond the linear forecast
MARKOV, ORDER = "errata-real-text-markov", "errata-real-text-order"  # the errata entries of the findings
WORDS = {"pass": "holds", "contradicted": "is contradicted", "inconclusive": "is inconclusive",
         "outside": "is outside its domain", "fail": "fails"}  # a verdict, as the text cites it
floor = float(np.sqrt(1 - marks[cfg.corpora[0]][0]["move_level"] ** 2))  # B11: √(1 − ℓ²)
due = {c: realtext.escape_due(S["rate_cond"], S["t_forecast"], DUE_FACTOR) for c, S in per_seed.items()}  # per seed
at_cond = claims.state("each seed's end of condensation (its saddle mode and rank, before the move and the escape)")
for c, S in per_seed.items():
    claims.check_share(
        "B10", (S["rank_cond"] < 1.5) & (S["lift_dev_cond"] <= 0.02), real_data=True, source="paper",
        tolerance="each seed: eff. rank < 1.5 and max |lift − 1| ≤ 0.02",
        what=f"{c}: effective rank of W0 and attention change at the end of condensation")
    claims.check_share(
        "B10", (S["escaped"] & (S["rank_end"] > 1.8))[due[c] <= S["t_end"]], real_data=True, source="paper",
        tolerance="each seed the escape is due in: escapes the plateau and eff. rank > 1.8",
        what=f"{c}: loss leaves the unigram plateau, final effective rank of W0",
        domain=claims.domain((
            "the seeds counted are those whose escape is due within the run: the saddle's unstable attention mode "
            "at the end of condensation (rate r, amplitude a) takes the loss a tenth of the gap to the bigram loss "
            f"below the plateau by the linear forecast, + {DUE_FACTOR:g}·ln 10/(2r) for a nonlinear end, ≤ the end",
            bool(np.any(due[c] <= S["t_end"])), f"t_cond {S['t_cond']}, r {np.round(S['rate_cond'], 4)}, due "
            f"{np.round(due[c], 1)}, end {S['t_end'][0]:g}"), reads=at_cond))
    claims.check_mean(
        "B11", S["move_corr"], above=floor, source="reconstruction",
        tolerance=f"√(1 − ℓ²) = {floor:.4f}: read at lift deviation ℓ = {S['move_level'][0]:g}, the move differs "
        "from the linear prediction by terms of relative order ℓ",
        what=f"{c}: first attention move vs the Markov theory's: the lift of the fitted chain's saddle focus mode "
        "(θ_c¹, κ of the sign of g) on the same windows",
        domain=claims.domain((
            "condensation ends near the rank-one saddle the theory linearizes at: effective rank of W0 below 1.5 "
            "there in every seed", bool(np.all(S["rank_cond"] < 1.5)),
            f"effective ranks {np.round(S['rank_cond'], 3)}"), reads=at_cond))
    display.number(f"{c}_order_verdict", WORDS[claims.check_share(
        "B11", S["paper_order"], real_data=True, source="paper", errata=ORDER,
        tolerance="each seed: lift(␣) > 1, lift(the) > 1, both > mean lift of the mid-frequency ranks",
        what=f"{c}: lifts of ␣, 'the' and the mid-frequency tokens at the first attention move").verdict])
    claims.check_share(
        "B10", np.abs(S["t_half"] / S["t_half_markov"] - 1) <= CLOCK_RTOL, source="reconstruction",
        tolerance=f"each seed: within {CLOCK_RTOL:.0%} of the Markov run's time, set before the runs; relative "
        f"differences {np.round(S['t_half'] / S['t_half_markov'] - 1, 4)}",
        what=f"{c}: time of mid-condensation, real run vs Markov run")
    display.number(f"{c}_gap_verdict", WORDS[claims.check_mean(
        "B10", S["gap_plateau"], below=GAP_TOL, real_data=True, source="paper", errata=MARKOV,
        tolerance="set before the runs",
        what=f"{c}: Markov approximation, largest held-out loss gap on the plateau / loss drop").verdict])
    display.number(f"{c}_escape_verdict", WORDS[claims.check_share(
        "B10", (np.abs(S["t_escape_val"] - S["t_escape_markov"]) <= CLOCK_RTOL * S["t_escape_markov"])[
            due[c] <= S["t_end"]], real_data=True, source="paper", errata=MARKOV,
        tolerance=f"each seed: the two times within {CLOCK_RTOL:.0%} of the Markov time, set before the runs; a "
        "run still on the plateau at the end does not agree",
        what=f"{c}: Markov approximation, time the held-out loss leaves the plateau, real vs Markov",
        domain=claims.domain(("the seeds counted are those whose escape is due within the run (as for the "
                              "next stage)", bool(np.any(due[c] <= S["t_end"])), f"due {np.round(due[c], 1)}"),
                             reads=at_cond)).verdict])
claims.finish()
