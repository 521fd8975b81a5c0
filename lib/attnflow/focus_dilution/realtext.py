"""The focus–dilution model on real text, and its Markov (bigram) approximation (spec
focus_dilution.md §7 item 8, Q6–Q7; claims B10–B11).

    text = realtext.load_stream("wikitext", vocab_size=64)      # prints the source line
    res = realtext.train(text, seq_len=64, n_train=1024, steps=2800, lr=0.1)
    runs = realtext.train_seeds(text, [1, 2, 3], steps=2800)  # one RealTextRun per seed, batched
    res.lift()[:, text.index("the")]      # attention lift of "the" over training
    realtext.milestones(res)              # stage markers, first attention move vs theory

**Vocabulary** [reconstruction]. Word-level pieces of ``attnflow.data`` (whitespace runs are
tokens of their own, so " " and "\\n" have ids); the ``vocab_size − 1`` most frequent pieces keep
an id and every other piece falls into one UNK bucket (the last id), so d stays small enough for
a CPU. **Model.** The one-layer transformer of spec §4.2 (``focus_dilution.model``): the last
context token queries the s context positions and predicts the next token. Contexts are windows
x_1..x_{s+1} cut at random offsets of the token stream; as the model has no positions, a window
enters only through its counts (``training.Examples``). **Markov approximation.** The bigram
chain fitted on the training stream (add-α smoothing) has a population loss (spec §4.3); the
same initial θ trained on it is the prediction of the theory for real data (spec: "the Markov
approximation holds well enough in early training"). Both runs are trained by
``training.train_runs`` from the same initialization (paired); over several seeds the real runs
are one batch and the Markov runs another.

**Attention per token id.** On held-out windows, A_kb = attention mass on the positions holding
token k in row b; its mean over rows divided by the mean count share n_kb/s is the *lift* of k
(1 under uniform attention; > 1 = focus on k). Entropy per row: −Σ_k A_kb log(A_kb / n_kb).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attnflow import data, seeding
from attnflow.focus_dilution import chain as chains, closed_forms, runs as runs_, training
from attnflow.focus_dilution.contracts import REAL_TEXT_COST
from attnflow.focus_dilution.model import PARAM_NAMES, init_params, rank_one_params
from attnflow.params import Param, ParameterError, Schema

__all__ = [
    "RealStream",
    "load_stream",
    "window_examples",
    "bigram_chain",
    "RealTextRun",
    "train",
    "token_attention",
    "group_lift",
    "lifts_at",
    "move_lifts",
    "escape_due",
    "seed_columns",
    "data_rows",
    "milestone_rows",
    "glue_values",
    "train_seeds",
    "paper_order",
    "markov_gap",
    "milestones",
    "AttentionMode",
    "attention_mode",
    "saddle_lift",
    "training_loss",
    "escape_forecast",
    "SCHEMA",
    "CORPORA",
]

CORPORA = ("wikitext", "tinystories")
SHOW = {" ": "␣", "\n": "\\n", "\n\n": "\\n\\n"}


@dataclass
class RealStream:
    """A corpus as compact token ids: the vocab_size − 1 most frequent pieces, then UNK (last id)."""

    name: str
    source: str  # the loader's announcement line
    standin: bool
    train: torch.Tensor  # (L,) int64 in [0, d)
    validation: torch.Tensor  # (L_val,)
    units: list[str]  # (d,) the piece of each id ("<unk>" last)

    @property
    def d(self) -> int:
        return len(self.units)

    @property
    def counts(self) -> np.ndarray:
        """(d,) training counts."""
        return torch.bincount(self.train, minlength=self.d).numpy()

    @property
    def pi(self) -> np.ndarray:
        """(d,) unigram frequencies of the training stream."""
        c = self.counts.astype(float)
        return c / c.sum()

    def index(self, unit: str) -> int:
        """Id of a piece; KeyError naming the kept pieces if it fell into UNK."""
        if unit not in self.units:
            raise KeyError(
                f"piece {unit!r} is not among the {self.d - 1} kept pieces of {self.name}; kept: {self.units[:20]}…"
            )
        return self.units.index(unit)

    def label(self, k: int) -> str:
        """Printable name of token k (␣ for a space, \\n for a newline)."""
        return SHOW.get(self.units[k], self.units[k])


def load_stream(
    name: str, vocab_size: int = 64, source: str = "auto", max_chars: int | None = None, scheme: str = "words"
) -> RealStream:
    """Load ``wikitext`` or ``tinystories`` (one source line printed) and keep vocab_size − 1 pieces + UNK.
    ``scheme``: "words" (whitespace runs are tokens) or "gpt2" (a space attaches to the next word)."""
    if name not in CORPORA:
        raise ParameterError(f"parameter 'corpus': received {name!r}; allowed: one of {CORPORA}")
    if not isinstance(vocab_size, int) or vocab_size < 3:
        raise ParameterError(f"parameter 'vocab_size': received {vocab_size!r}; allowed: an integer ≥ 3")
    corpus = data.load(name, source=source, max_chars=max_chars)
    stream = corpus.encode(
        vocab_size=vocab_size + 2, scheme=scheme
    )  # specials <pad>, <unk>, <sep> + vocab_size − 1 pieces
    tok = stream.tokenizer
    n_kept = len(tok) - 3
    remap = torch.full((len(tok),), n_kept, dtype=torch.long)  # <pad>, <unk>, <sep> -> UNK (pad/sep never occur)
    remap[3:] = torch.arange(n_kept)
    units = tok.vocab[3:] + ["<unk>"]
    return RealStream(name, corpus.source, corpus.standin, remap[stream.train], remap[stream.validation], units)


def window_examples(ids: torch.Tensor, d: int, n_samples: int, seq_len: int, seed: int) -> training.Examples:
    """n_samples windows x_1..x_{s+1} at random offsets of ``ids``: query x_s, counts of x_1..x_s, target."""
    if len(ids) < seq_len + 2:
        raise ParameterError(f"parameter 'seq_len': received {seq_len}; the stream holds only {len(ids)} tokens")
    gen = torch.Generator().manual_seed(int(seed))
    start = torch.randint(0, len(ids) - seq_len - 1, (n_samples,), generator=gen)
    win = ids[start[:, None] + torch.arange(seq_len + 1)]  # (N, s + 1)
    counts = torch.zeros(n_samples, d, dtype=torch.long).scatter_add_(1, win[:, :-1], torch.ones_like(win[:, :-1]))
    return training.Examples.from_rows(win[:, -2], counts, win[:, -1], d)  # counts (d, B)


def bigram_chain(ids: torch.Tensor, d: int, smoothing: float = 0.1) -> chains.MarkovChain:
    """The Markov approximation: row-normalised bigram counts + ``smoothing`` (keeps π unique and > 0)."""
    if not smoothing > 0:
        raise ParameterError(f"parameter 'smoothing': received {smoothing!r}; allowed: a number > 0")
    C = torch.bincount(ids[:-1] * d + ids[1:], minlength=d * d).reshape(d, d).double().numpy() + smoothing
    return chains.from_matrix(C / C.sum(1, keepdims=True), name="bigram", meta={"smoothing": smoothing})


def token_attention(theta: dict[str, torch.Tensor], ex: training.Examples, score_scale: float = 1.0, loss=False):
    """Attention mass per token id (T, d) averaged over the rows of ``ex``, count share (d,), and the
    mean attention entropy over positions (T,), for a trajectory θ (T, …); with ``loss`` also the
    loss on those rows (T,), from the same forward pass."""
    batch = training.stack([ex], dtype=theta["W0"].dtype)
    batch = {k: v.expand(len(theta["W0"]), -1, -1) for k, v in batch.items()}  # (T, d, B)
    with torch.no_grad():
        A, log_P = training.forward(theta, batch, score_scale)  # (T, d, B)
    if loss:
        return (*_per_token(A, ex), (-(batch["weights"] * log_P).sum((1, 2))).numpy())
    return _per_token(A, ex)


def _per_token(A: torch.Tensor, ex: training.Examples):
    """What :func:`token_attention` returns, from the attention A (T, d, B) on the rows of ``ex``."""
    w = ex.weights.sum(0).to(A.dtype)  # (B,) row weights, sum 1
    n = ex.counts.to(A.dtype)  # (d, B)
    share = ((n / n.sum(0)) * w).sum(-1)  # (d,)
    A, n = A.double(), n.double()
    per_pos = torch.where(n > 0, A / n.clamp_min(1), torch.ones_like(A))  # (T, d, B)
    entropy = -((A * torch.log(per_pos.clamp_min(1e-300))) * w).sum((1, 2))  # (T,)
    return (A * w).sum(-1).numpy(), share.numpy(), entropy.numpy()


@dataclass
class RealTextRun:
    """The real-text run and the Markov-approximation run from the same θ(0), measured on the same
    held-out windows. Dicts are keyed "real" and "markov"."""

    text: RealStream
    chain: chains.MarkovChain
    runs: dict[str, training.TrainRun]  # training.TrainRun per run (t = lr·step, states, population quantities)
    mass: dict[str, np.ndarray]  # (T, d) attention mass per token id on held-out windows
    share: np.ndarray  # (d,) count share of each token in those windows
    entropy: dict[str, np.ndarray]  # (T,) mean attention entropy over positions
    val_loss: dict[str, np.ndarray]  # (T,) loss on the held-out real windows
    plateau: float  # entropy of the training targets: the loss at the unigram saddle
    examples: training.Examples = None  # the real run's training windows (the loss it descends)
    eval_examples: training.Examples = None  # the held-out windows every attention measure is taken on

    @property
    def t(self) -> np.ndarray:
        return self.runs["real"].t

    def lift(self, run: str = "real") -> np.ndarray:
        """(T, d) attention lift mass/share (1 = uniform attention)."""
        return self.mass[run] / self.share

    def theory(self) -> dict[str, float]:
        """Markov-approximation constants: unstable rate g at θ_c¹ (its sign sets the focus direction,
        spec R2–R3), ‖π‖² (tokens above it gain attention when g > 0), H(π), bigram loss, log d."""
        pi = self.chain.pi
        return {
            "g": closed_forms.g_rate(self.chain),
            "pi_sq": float(pi @ pi),
            "H_pi": self.chain.unigram_entropy(),
            "bigram": self.chain.bigram_loss(),
            "log_d": float(np.log(self.text.d)),
        }

    def first_move(self, level: float = 0.1, run: str = "real", start: int = 0) -> tuple[int, np.ndarray]:
        """Index of the first record from ``start`` on where some token's lift is ≥ ``level`` away
        from 1, and the lift change (d,) there; the Markov theory predicts it ∝ sign(g)·(π_k − ‖π‖²)
        (spec R3)."""
        dev = np.abs(self.lift(run) - 1).max(-1)
        hit = start + np.flatnonzero(dev[start:] >= level)
        if not len(hit):
            raise ValueError(f"attention never moved by {level} in lift; train longer (raise steps or lr)")
        return int(hit[0]), self.lift(run)[hit[0]] - 1


def train(text: RealStream, *, seed: int = 1, **settings) -> RealTextRun:
    """One seed of :func:`train_seeds`."""
    return train_seeds(text, [seed], **settings)[0]


def train_seeds(
    text: RealStream,
    seeds,
    *,
    seq_len: int = 64,
    n_train: int = 1024,
    n_eval: int = 512,
    steps: int = 2800,
    lr: float = 0.1,
    optimizer: str = "gd",
    record_every: int = 10,
    init_scale: float = 1e-3,
    d_model: int = 16,
    smoothing: float = 0.1,
    device: str = "auto",
) -> list[RealTextRun]:
    """Per seed, train on real windows and on the fitted chain's population loss from the same θ(0)
    (seed k draws θ(0), the training and the held-out windows); measure both. The real runs of all
    seeds are one batched training, the Markov runs another (same chain, so the same d rows)."""
    seeds = [int(s) for s in seeds]
    real_ex = [window_examples(text.train, text.d, n_train, seq_len, s) for s in seeds]
    eval_ex = [window_examples(text.validation, text.d, n_eval, seq_len, seeding.stream(s, "eval")) for s in seeds]
    chain = bigram_chain(text.train, text.d, smoothing)
    theta0 = [init_params(text.d, d_model, init_scale, s) for s in seeds]
    population = training.population_examples(chain)
    specs = {
        "real": [training.RunSpec(chain, ex, f"real text, seed {s}") for ex, s in zip(real_ex, seeds)],
        "markov": [training.RunSpec(chain, population, f"Markov approximation, seed {s}") for s in seeds],
    }
    trained = {}
    with runs_.single_threaded():  # tiny matmuls: extra threads only contend on a shared CPU
        for name, group in specs.items():  # two batches: stacked together, the d population rows would pad to N
            trained[name] = training.train_runs(
                group,
                theta0=theta0,
                optimizer=optimizer,
                lr=lr,
                steps=steps,
                record_every=record_every,
                d_model=d_model,
                device=device,
                desc=f"{text.name}: {name}, {len(seeds)} seed(s)",
            )
    return [
        _measured(text, chain, {name: trained[name][k] for name in specs}, real_ex[k], eval_ex[k])
        for k in range(len(seeds))
    ]


def _measured(text, chain, trained: dict, real_ex: training.Examples, eval_ex: training.Examples) -> RealTextRun:
    """One seed's real and Markov runs measured on its held-out windows."""
    out = {"runs": trained, "mass": {}, "entropy": {}, "val_loss": {}}
    for name, run in trained.items():
        theta = {n: run.states[n] for n in PARAM_NAMES}  # (T, …) float64
        measured = token_attention(theta, eval_ex, loss=True)
        out["mass"][name], share, out["entropy"][name], out["val_loss"][name] = measured
    target_freq = real_ex.weights.sum(1).numpy()  # (d,) training target frequencies
    plateau = float(-(target_freq[target_freq > 0] * np.log(target_freq[target_freq > 0])).sum())
    return RealTextRun(text, chain, share=share, plateau=plateau, examples=real_ex, eval_examples=eval_ex, **out)


def group_lift(lift: np.ndarray, ids) -> np.ndarray:
    """(T,) lift of a group of tokens: the mean of their lifts."""
    return lift[:, list(ids)].mean(-1)


def lifts_at(res: RealTextRun, t: float, units, group) -> dict[str, float]:
    """Lifts at the record nearest to time ``t``: of each piece in ``units`` (NaN for a piece that fell
    into UNK) and, under "group", the mean lift of the token ids in ``group``. At the first attention
    move this is what claim B11 compares: "the" and whitespace should lead, mid-frequency tokens follow."""
    i = int(np.argmin(np.abs(res.t - t)))
    lift = res.lift()[i]  # (d,)
    out = {u: float(lift[res.text.index(u)]) if u in res.text.units else float("nan") for u in units}
    out["group"] = float(lift[list(group)].mean())
    return out


def markov_gap(res: RealTextRun) -> np.ndarray:
    """(T,) |L_real − L_markov| on held-out windows, over the drop log d − L_real(end) (0 = same)."""
    drop = np.log(res.text.d) - res.val_loss["real"][-1]
    return np.abs(res.val_loss["real"] - res.val_loss["markov"]) / drop


MODE_RTOL = 1e-8  # eigenvalues of H within this relative distance of λ_min span one unstable eigenspace


@dataclass(frozen=True)
class AttentionMode:
    """The unigram saddle's unstable attention mode at a state (see :func:`attention_mode`)."""

    rate: float  # r = −λ_min of the Hessian in (WQ, WK); 0 without a negative eigenvalue
    amplitude: float  # ‖P x‖: the state's (WQ, WK) projected on the unstable eigenspace
    multiplicity: int  # dimension of that eigenspace (m on a rank-one condensate: WQ, WK → WQ R, WK R)


def attention_mode(theta: dict[str, torch.Tensor], loss) -> AttentionMode:
    """The unigram saddle's unstable attention mode, read off a state ``theta`` (one run, unbatched).

    The scores S = c W0 WQ WKᵀ W0ᵀ depend on (WQ, WK) only through M = WQ WKᵀ, so with W0, W1 held at
    the state the loss is L(M) = L₀ + ⟨K, M⟩ + O(‖M‖²) with K = ∂L/∂M at M = 0, and in x = (WQ, WK)
    it is L₀ + ½ xᵀ H x + O(‖x‖⁴) with ½ xᵀ H x = ⟨K, WQ WKᵀ⟩: WQ = WK = 0 is the saddle of the
    attention block (spec R2: eigenvalues ±g on the modes q = ±k, g = ``closed_forms.g_rate`` at
    θ_c¹). H = [[0, K ⊗ I], [Kᵀ ⊗ I, 0]] (I over WQ's columns), so its eigenvalues are ±σᵢ(K), each
    as often as WQ has columns: the rate is r = σ₁(K) and the unstable eigenvectors are
    (u rᵀ, −v rᵀ)/√2 for the top singular pair (u, v) and any r. The eigenspace is that of the
    singular values within ``MODE_RTOL`` of σ₁ (S is unchanged by WQ → WQ R, WK → WK R for
    orthogonal R, so one basis vector of it, which LAPACK would pick arbitrarily, is not the mode):
    under the flow ẋ = −Hx the projection P x grows like e^{r t} and lowers the loss by ½ r ‖P x‖²,
    with ‖P x‖² = ½ Σ ‖uᵢᵀ WQ − vᵢᵀ WK‖². ``loss``: θ-dict → scalar.

    K costs one gradient (with WQ = M, WK = I, so that WQ WKᵀ = M) where the full Hessian of
    (WQ, WK) costs 2·m·k of them; tests/test_realtext.py checks the two agree (autograd Hessian)."""
    theta = {n: torch.as_tensor(theta[n], dtype=torch.float64) for n in PARAM_NAMES}
    m = theta["WQ"].shape[0]
    M = torch.zeros(m, m, dtype=torch.float64, requires_grad=True)
    with runs_.single_threaded():
        (K,) = torch.autograd.grad(loss(dict(theta, WQ=M, WK=torch.eye(m, dtype=torch.float64))), M)
    U, s, Vh = np.linalg.svd(K.numpy())
    top = np.abs(s - s[0]) <= MODE_RTOL * s[0]  # the singular values of the unstable eigenspace
    WQ, WK = theta["WQ"].numpy(), theta["WK"].numpy()
    proj = U[:, top].T @ WQ - Vh[top] @ WK  # (k_top, columns): uᵢᵀ WQ − vᵢᵀ WK
    return AttentionMode(
        rate=float(s[0]),
        amplitude=float(np.sqrt(0.5 * (proj**2).sum())) if s[0] > 0 else 0.0,
        multiplicity=int(top.sum()) * WQ.shape[1] if s[0] > 0 else 0,
    )


def saddle_lift(chain: chains.MarkovChain, examples: training.Examples, m: int, dev: float = 1e-4) -> np.ndarray:
    """(d,) the attention lift − 1 per token that the unigram saddle's focus mode produces on the
    windows ``examples``: θ_c¹ of ``chain`` (spec R2) with κ of the sign of g (R3: the mode that
    grows), |κ| set so that the largest |lift − 1| is ``dev`` (the linear regime). This is the
    Markov theory's first attention move on those windows. R3's closed form
    sign(g)·(π_k − ‖π‖²) is the same move for contexts whose composition is π; real windows are
    not, and the lift averages over them."""
    c1, g = closed_forms.theta_c1(chain), closed_forms.g_rate(chain)

    def lift(kappa: float) -> np.ndarray:
        theta = {n: v[None] for n, v in rank_one_params(c1.a, c1.b, kappa, m).items()}
        mass, share, _ = token_attention(theta, examples)
        return mass[0] / share - 1

    k0 = float(np.sign(g) or 1.0) * 1e-6  # scores ~1e-6 α²: deep in the linear regime
    return lift(k0 * dev / float(np.abs(lift(k0)).max()))


def training_loss(res: RealTextRun, score_scale: float = 1.0):
    """The real run's training loss on its windows as a callable θ-dict (unbatched) → scalar."""
    batch = training.stack([res.examples], dtype=torch.float64)
    return lambda theta: training.run_losses({n: v[None] for n, v in theta.items()}, batch, score_scale)[0]


def escape_forecast(rate: float, amplitude: float, drop: float, t_start: float) -> float:
    """The time the unstable mode takes the loss ``drop`` below the saddle, linearized at ``t_start``:
    the mode's amplitude a grows like e^{r t} and its loss drop is ½ r a², so the drop is reached
    at a = √(2·drop / r), t = t_start + log(√(2·drop / r) / a₀) / r (inf without an unstable mode).
    The linearization ignores the nonlinear end (attention saturating slows the last stretch)."""
    if not (rate > 0 and amplitude > 0):
        return float("inf")
    return float(t_start + max(0.0, np.log(np.sqrt(2 * drop / rate) / amplitude)) / rate)


def milestones(
    res: RealTextRun, cond_frac: float = 0.1, escape_frac: float = 0.1, move: float = 0.1, n_top: int = 5, mid=()
) -> dict:
    """The stage markers of one run, no hand-picked times (claims B10–B11):

    - end of condensation: first record with L_train ≤ plateau + cond_frac·(log d − plateau), where
      the embedding's effective rank and the largest |lift − 1| are read;
    - escape: first record with L_train ≤ plateau − escape_frac·(plateau − bigram loss), and the
      effective rank of W0 at the last record;
    - first attention move (``RealTextRun.first_move``, searched from the end of condensation on):
      the lifts there of the most frequent token (``hub_lift_move``), of ␣ and "the", of ranks 1 to
      ``n_top`` − 1 (``top``) and of the ``mid`` ranks, and B11's order on them (``paper_order``);
      its time and its agreement with the Markov
      theory's move, the lift of the fitted chain's saddle focus mode on the same windows
      (``saddle_lift``, scaled to the move's norm; Pearson correlation over tokens, sign
      agreement), and with R3's closed form sign(g)·(π_k − ‖π‖²) (``move_corr_r3``; ``mode_corr_r3``:
      the theory's move against it);
    - escape forecast: the unstable rate and amplitude of the attention mode at the end of
      condensation (``attention_mode``) and the time they take the loss below the escape level
      (``escape_forecast``), from the state on the plateau, before the escape is looked for;
    - the Markov run against the real run: the loss gap (``markov_gap``) on the plateau (end of
      condensation to escape, where the theory linearizes) and over the whole run; the times at
      which each run is halfway through condensation and escapes (same rules on its held-out loss).
    """
    th, t, loss = res.theory(), res.t, res.runs["real"].train_loss
    rank = res.runs["real"].quantities["eff_rank_W0"]
    i_c = int(np.argmax(loss <= res.plateau + cond_frac * (th["log_d"] - res.plateau)))
    below = np.flatnonzero(loss <= res.plateau - escape_frac * (res.plateau - th["bigram"]))
    i_e = int(below[0]) if len(below) else len(t) - 1
    i_m, change = res.first_move(move, start=i_c)
    r3 = np.sign(th["g"]) * (res.chain.pi - th["pi_sq"])  # R3's closed form of the move
    gap = markov_gap(res)

    def first(y, level):  # first t with y ≤ level, linear between the records around the crossing
        hit = np.flatnonzero(y <= level)
        if not len(hit) or hit[0] == 0:
            return float(t[hit[0]]) if len(hit) else float("nan")
        i = hit[0]
        return float(t[i - 1] + (y[i - 1] - level) / (y[i - 1] - y[i]) * (t[i] - t[i - 1]))

    state = {n: res.runs["real"].states[n][i_c] for n in PARAM_NAMES}
    mode = attention_mode(state, training_loss(res))  # the unstable mode at t_cond
    predicted = saddle_lift(res.chain, res.eval_examples, state["W0"].shape[-1])  # the theory's move, linear
    predicted *= np.linalg.norm(change) / np.linalg.norm(predicted)  # drawn at the move's size, sign kept
    corr = lambda a, b: float(np.corrcoef(a, b)[0, 1])  # noqa: E731
    drop = escape_frac * (res.plateau - th["bigram"])  # the escape criterion below the plateau
    val = res.val_loss
    v_plateau = float(np.median(val["real"][i_c : max(i_e, i_c + 1)]))  # held-out loss on the plateau
    half, esc = 0.5 * (th["log_d"] + v_plateau), v_plateau - escape_frac * (v_plateau - th["bigram"])
    return {
        "t_half": first(val["real"], half),
        "t_half_markov": first(val["markov"], half),
        "t_escape_val": first(val["real"], esc),
        "t_escape_markov": first(val["markov"], esc),
        "gap_plateau": float(gap[i_c : max(i_e, i_c + 1)].max()),
        "t_cond": float(t[i_c]),
        "rank_cond": float(rank[i_c]),
        "rank_init": float(rank[0]),
        "lift_dev_cond": float(np.abs(res.lift()[i_c] - 1).max()),
        "loss_cond": float(loss[i_c]),
        "t_escape": float(t[i_e]),
        "escaped": bool(len(below)),
        "rank_end": float(rank[-1]),
        "t_move": float(t[i_m]),
        "move_level": move,
        "move_corr": corr(change, predicted),
        "move_sign": float(np.mean(np.sign(change) == np.sign(predicted))),
        "move_change": change,
        "move_predicted": predicted,
        "move_corr_r3": corr(change, r3),
        "mode_corr_r3": corr(predicted, r3),
        "gap_all": float(gap.max()),
        "loss_end": float(loss[-1]),
        "t_end": float(t[-1]),
        "rate_cond": mode.rate,
        "amp_cond": mode.amplitude,
        "mode_multiplicity": mode.multiplicity,
        "t_forecast": escape_forecast(mode.rate, mode.amplitude, drop, float(t[i_c])),
        "plateau": res.plateau,
        **th,
        **move_lifts(res, float(t[i_m]), n_top, mid),
    }


def move_lifts(res: RealTextRun, t: float, n_top: int, mid) -> dict:
    """Lifts at the record nearest to ``t`` (the first move): of the most frequent token, of ␣ and
    "the" (NaN where UNK), of ranks 1 … n_top − 1, of the ``mid`` ranks, and B11's order on them."""
    named = lifts_at(res, t, (" ", "the"), list(mid) or [0])
    out = {
        "hub_lift_move": lifts_at(res, t, (), [0])["group"],
        "space_lift_move": named[" "],
        "the_lift_move": named["the"],
        "mid_lift_move": named["group"] if len(mid) else float("nan"),
        "top_lift_move": lifts_at(res, t, (), range(1, n_top))["group"] if n_top > 1 else float("nan"),
    }
    out["paper_order"] = paper_order((out["space_lift_move"], out["the_lift_move"], out["mid_lift_move"]))
    return out


def escape_due(rate, t_forecast, factor: float = 1.0):
    """B10 "leaves the plateau": the time by which a run must have left, from its state at the end of
    condensation (``milestones``: rate r and forecast of the saddle's unstable attention mode); one
    value per seed for arrays.

    The forecast is R2's end of the θ_c¹ plateau, linear: the mode's loss drop ½ r a² grows tenfold
    every ln 10 / (2r), and its nonlinear end (attention saturating) delivers less, so the run must
    last ``factor`` decades of drop beyond the forecast (inf without an unstable mode)."""
    rate, t_forecast = np.asarray(rate, dtype=float), np.asarray(t_forecast, dtype=float)
    with np.errstate(divide="ignore"):
        return np.where(rate > 0, t_forecast + factor * np.log(10) / (2 * rate), np.inf)


def seed_columns(marks: list[dict]) -> dict[str, np.ndarray]:
    """The scalar milestones of several seeds as columns: name → (n_seeds,) array."""
    return {k: np.array([m[k] for m in marks]) for k, v in marks[0].items() if np.ndim(v) == 0}


def data_rows(texts: dict[str, RealStream], n_show: int = 5) -> list[dict]:
    """One table row per corpus: source, size, UNK share and the most frequent tokens with π_k."""
    return [
        {
            "corpus": c,
            "source": "stand-in" if text.standin else "real",
            "train tokens": len(text.train),
            "d": text.d,
            "UNK share": text.pi[-1],
            **{f"#{k + 1}": f"{text.label(k)} ({text.pi[k]:.3f})" for k in range(n_show)},
        }
        for c, text in texts.items()
    ]


TABLE_KEYS = ("t_cond", "rank_cond", "lift_dev_cond", "t_move", "move_corr", "t_escape", "rank_end", "gap_plateau")
TABLE_KEYS += ("t_half", "t_half_markov", "t_escape_val", "t_escape_markov", "t_forecast", "rate_cond")


def milestone_rows(marks: dict[str, list[dict]], seeds) -> list[dict]:
    """One table row per corpus and seed: the milestones of ``TABLE_KEYS``."""
    return [
        {"corpus": c, "seed": s, **{k: m[k] for k in TABLE_KEYS}} for c, ms in marks.items() for s, m in zip(seeds, ms)
    ]


def glue_values(res: RealTextRun, marks: dict) -> dict:
    """The scalars of one run's milestones that the text cites, the most frequent token's label, and
    the plateau-leaving times as text (a run may not leave the plateau within the run)."""
    out = {k: v for k, v in marks.items() if np.ndim(v) == 0}
    out["hub"] = res.text.label(0)
    for key in ("t_escape_val", "t_escape_markov"):
        out[f"{key}_txt"] = f"t = {marks[key]:.1f}" if np.isfinite(marks[key]) else "not within the run"
    diff = abs(marks["t_escape_val"] - marks["t_escape_markov"]) / marks["t_escape_markov"]
    out["escape_diff_txt"] = f"{diff:.1%} apart" if np.isfinite(diff) else "no common time"
    return out


# -- page parameters (DESIGN.md, principle 5) ----------------------------------------------------
SCHEMA = Schema(
    "focus_dilution/real_text",
    cost=REAL_TEXT_COST,
    requires=[
        (lambda c: len(set(c.corpora)) == len(c.corpora), "corpora are distinct"),
        (
            lambda c: c.n_top < c.vocab_size - 1 and c.mid_ranks[1] < c.vocab_size - 1,
            "n_top and mid_ranks lie inside the kept vocabulary",
        ),
        (lambda c: c.mid_ranks[0] <= c.mid_ranks[1], "mid_ranks = [first, last] with first ≤ last"),
        (
            lambda c: c.n_top <= c.mid_ranks[0],
            "the mid-frequency group starts at or after the frequent group: n_top ≤ mid_ranks[0]",
        ),
        (lambda c: c.steps >= 5 * c.record_every, "steps ≥ 5 · record_every (at least 5 recorded states)"),
    ],
    corpora=Param(list, doc="corpora", item=str, choices=CORPORA, max_len=2),
    source=Param(str, doc="data source", choices=("auto", "hub", "standin")),
    max_chars=Param(int, 10**4, 10**10, "characters kept per split (bounds tokenization time)"),
    vocab_size=Param(int, 8, 4096, "d: most frequent pieces + one UNK bucket"),
    d_model=Param(int, 2, 1024, "m, embedding width"),
    seq_len=Param(int, 2, 4096, "s, context length of a window"),
    n_train=Param(int, 16, 10**7, "N, training windows"),
    n_eval=Param(int, 16, 10**6, "held-out windows for the attention measures"),
    optimizer=Param(str, doc="full-batch optimizer", choices=training.OPTIMIZERS),
    lr=Param(float, 0, 100, "learning rate (GD: Euler step of the flow)", lo_open=True),
    steps=Param(int, 1, 10**7, "optimizer steps"),
    record_every=Param(int, 1, 10**6, "steps between recorded states"),
    init_scale=Param(float, 0, 1, "ε, init std of every entry", lo_open=True),
    smoothing=Param(float, 0, 100, "add-α smoothing of the bigram chain", lo_open=True),
    n_top=Param(int, 1, 100, "most frequent tokens of the 'frequent' group"),
    mid_ranks=Param(
        list, 0, 4096, "frequency ranks [first, last] of the mid-frequency group", item=int, min_len=2, max_len=2
    ),
    seed=Param(int, 0, 2**31 - 1, "first seed of the init and of the windows"),
    n_seeds=Param(int, 1, 100, "seeds seed, seed + 1, …, each a paired real and Markov run"),
    device=Param(str, doc="where to train", choices=("auto", "cpu", "cuda")),
)


def paper_order(lifts) -> bool:
    """B11's order at the first attention move: the space and "the" gain attention (lift > 1), and
    more than the mid-frequency tokens. ``lifts`` = (lift of ␣, lift of "the", mean mid-rank lift)."""
    space, the, mid = lifts
    return bool(space > 1 and the > 1 and min(space, the) > mid)
