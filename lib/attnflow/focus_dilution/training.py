"""Finite-sample training of the focus–dilution model (spec focus_dilution.md §4.2, §5.2, Q7).

**Data.** ``MarkovSequences`` is a torch ``Dataset`` of N sequences x_1..x_{s+1} drawn from the
chain started at π (``chain.sample_sequences``); item n is (context x_1..x_s, target x_{s+1}).

**Which positions enter the loss.** ``positions="last"`` (default): one example per sequence —
the query is the last context token x_s, it attends over x_1..x_s and predicts x_{s+1}. This is
the model of §4.2, and the one whose N, s → ∞ limit is the population loss of §4.3: by
ergodicity the context histogram n/s → π, so the attention weights ∝ n_k e^{S_ik} tend to
π_k e^{S_ik}, and the empirical mean over N sequences tends to the expectation.
``positions="all"`` (GPT-style) makes every position t = 1..s a query over its prefix
x_1..x_t with target x_{t+1}: s times more targets, but short prefixes have histograms far from
π, so it reaches the same limit only up to boundary effects that vanish like O(log s / s).

**Counts are sufficient.** The model has no positional encoding, so a context enters only through
its token counts n ∈ ℕ^d: o = Σ_k n_k e^{S_qk} h_k / Σ_k n_k e^{S_qk}. An :class:`Examples` set
stores rows (query q, counts n (d,), target weights w (d,)), with identical (q, n) rows merged;
the population loss is the same form with n = π and w = π_q P_q· (d rows, ``population_examples``).
One code path serves finite samples and the limit; both are tested against
``model.sequence_loss`` and ``model.PopulationLoss``. Training runs on these rows (full batch)
instead of on (N, s, m) activations: cost O(rows · d²) instead of O(N s m).

**Training.** R runs of equal (d, m) are stacked on a leading axis and trained together by
``attnflow.train.train``: the summed loss has per-run gradients, so GD (θ ← θ − η∇L) and Adam
(elementwise) update each run exactly as if it were alone. For GD, t = η·step is the flow time
(Euler step η). Training runs in float32 on ``device="auto"``; pass float64 where a run is
compared with the float64 population flow.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch

from attnflow import device as devices
from attnflow import seeding, train
from attnflow.focus_dilution import measure, runs
from attnflow.focus_dilution.chain import MarkovChain, sample_sequences
from attnflow.focus_dilution.model import PARAM_NAMES, PopulationLoss, init_params, param_shapes

__all__ = ["MarkovSequences", "MarkovContexts", "Examples", "population_examples", "stack", "forward", "run_losses",
           "RunSpec", "TrainRun", "train_runs", "POSITIONS", "OPTIMIZERS", "DTYPES", "start_page", "train_settings",
           "page_flow", "flow_and_trained"]

POSITIONS = ("last", "all")
OPTIMIZERS = ("gd", "adam")
DTYPES = {"float32": torch.float32, "float64": torch.float64}


class MarkovSequences(torch.utils.data.Dataset):
    """N sequences of length s + 1 from ``chain`` started at π; tokens (N, s + 1) int64."""

    def __init__(self, chain: MarkovChain, n_samples: int, seq_len: int, seed: int = 0):
        for name, v, lo in (("n_samples", n_samples, 1), ("seq_len", seq_len, 1)):
            if isinstance(v, bool) or not isinstance(v, int) or v < lo:
                raise ValueError(f"{name} = {v!r}; allowed: an integer ≥ {lo}")
        self.chain, self.n_samples, self.seq_len, self.seed = chain, n_samples, seq_len, seed
        self.tokens = sample_sequences(chain, n_samples, seq_len, seeding.generator(seed))  # (N, s + 1)

    def __len__(self) -> int:
        return self.n_samples

    def __getitem__(self, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.tokens[n, :-1], self.tokens[n, -1]                # context (s,), target ()

    def transition_counts(self) -> np.ndarray:
        """Counts of every observed transition x_t → x_{t+1}, (d, d)."""
        d = self.chain.d
        pairs = self.tokens[:, :-1] * d + self.tokens[:, 1:]          # (N, s)
        return torch.bincount(pairs.reshape(-1), minlength=d * d).reshape(d, d).numpy()

    def empirical_P(self) -> np.ndarray:
        """Row-normalised transition counts P̂ (d, d); → P as N·s → ∞."""
        C = self.transition_counts().astype(float)
        return C / np.maximum(C.sum(1, keepdims=True), 1.0)

    def examples(self, positions: str = "last") -> "Examples":
        """Training rows for the chosen loss positions (see the module docstring)."""
        if positions not in POSITIONS:
            raise ValueError(f"positions = {positions!r}; allowed: one of {POSITIONS}")
        d, x = self.chain.d, self.tokens
        if positions == "last":
            counts = torch.zeros(len(x), d, dtype=torch.long).scatter_add_(1, x[:, :-1], torch.ones_like(x[:, :-1]))
            return Examples.from_rows(x[:, -2], counts, x[:, -1], d)                 # counts (N, d)
        prefix = torch.nn.functional.one_hot(x[:, :-1], d).cumsum(1)   # (N, s, d): counts of x_1..x_t
        return Examples.from_rows(x[:, :-1].reshape(-1), prefix.reshape(-1, d), x[:, 1:].reshape(-1), d)


class MarkovContexts(torch.utils.data.Dataset):
    """The same data as :class:`MarkovSequences`, kept as sufficient statistics only: item n is
    (counts of x_1..x_s (d,), query x_s, target x_{s+1}). The chain is walked position by
    position for all N sequences at once (inverse-CDF steps, numpy float64 uniforms) and only the
    counts are kept, so memory is O(N d) and long contexts (s ~ 10⁴) are cheap."""

    def __init__(self, chain: MarkovChain, n_samples: int, seq_len: int, seed: int = 0):
        for name, v in (("n_samples", n_samples), ("seq_len", seq_len)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} = {v!r}; allowed: an integer ≥ 1")
        self.chain, self.n_samples, self.seq_len, self.seed = chain, n_samples, seq_len, seed
        d, rng = chain.d, np.random.default_rng(seed)
        cum = np.cumsum(chain.P, 1).T.copy()                           # (d, d): cum[j, i] = P(next ≤ j | i)
        x = np.searchsorted(np.cumsum(chain.pi), rng.random(n_samples), side="right").clip(max=d - 1)  # (N,) x_1 ~ π
        flat, base = np.zeros(n_samples * d, np.int64), np.arange(n_samples) * d
        for _ in range(seq_len):                                       # x_1 .. x_s enter the counts
            flat += np.bincount(base + x, minlength=n_samples * d)
            query, u = x, rng.random(n_samples)
            x = sum((cum[j][x] <= u).astype(np.int64) for j in range(d - 1))    # (N,) next token
        self.counts = torch.from_numpy(flat.reshape(n_samples, d))     # (N, d)
        self.query, self.target = torch.from_numpy(query), torch.from_numpy(x)   # (N,), (N,)

    def __len__(self) -> int:
        return self.n_samples

    def __getitem__(self, n: int):
        return self.counts[n], self.query[n], self.target[n]

    def examples(self, positions: str = "last") -> "Examples":
        if positions != "last":
            raise ValueError(f"positions = {positions!r}: MarkovContexts keeps only the last position; "
                             "use MarkovSequences for positions='all'")
        return Examples.from_rows(self.query, self.counts, self.target, self.chain.d)


@dataclass
class Examples:
    """Rows of a loss −Σ_rows Σ_j w_j log P̂_j(q, n): query (B,), counts (d, B), weights (d, B)."""

    query: torch.Tensor          # (B,) int64 query token
    counts: torch.Tensor         # (d, B) float64 context histogram (counts, or π in the limit)
    weights: torch.Tensor        # (d, B) float64 target weights, summing to 1 over the set

    @classmethod
    def from_rows(cls, query: torch.Tensor, counts: torch.Tensor, target: torch.Tensor, d: int) -> "Examples":
        """Merge identical (query, counts) rows; each example gets weight 1/(number of examples)."""
        key = torch.cat([query[:, None], counts], 1)                  # (B0, 1 + d)
        uniq, inverse = torch.unique(key, dim=0, return_inverse=True)  # (B, 1 + d), (B0,)
        w = torch.zeros(len(uniq), d, dtype=torch.float64)
        w.index_put_((inverse, target), torch.ones(len(target), dtype=torch.float64), accumulate=True)
        return cls(uniq[:, 0].clone(), uniq[:, 1:].T.to(torch.float64).contiguous(), (w / len(target)).T.contiguous())

    @property
    def rows(self) -> int:
        return len(self.query)


def population_examples(chain: MarkovChain) -> Examples:
    """The exact population loss of §4.3 as d rows: query i, counts π, target weights π_i P_i·."""
    P, pi = chain.tensors()
    return Examples(torch.arange(chain.d), pi[:, None].expand(-1, chain.d).contiguous(), (pi[:, None] * P).T.contiguous())


def stack(sets: list[Examples], dtype=torch.float32, device="cpu") -> dict[str, torch.Tensor]:
    """Pad R example sets to a common row count (padding rows weigh 0): query one-hot (R, d, B),
    log counts (R, d, B) (−inf for absent tokens), weights (R, d, B)."""
    d, B = sets[0].counts.shape[0], max(e.rows for e in sets)
    out = {k: torch.zeros(len(sets), d, B, dtype=torch.float64) for k in ("query", "counts", "weights")}
    out["counts"][:, 0, :] = 1.0                                      # a valid histogram for padding rows
    for r, e in enumerate(sets):
        if e.counts.shape[0] != d:
            raise ValueError(f"example set {r} has vocabulary size {e.counts.shape[0]}, set 0 has {d}; stack one d at a time")
        out["query"][r, :, : e.rows] = torch.nn.functional.one_hot(e.query, d).T.to(torch.float64)
        out["counts"][r, :, : e.rows] = e.counts
        out["weights"][r, :, : e.rows] = e.weights
    out["log_counts"] = torch.log(out.pop("counts"))                 # log 0 = −inf: absent keys get no weight
    return {k: v.to(device=device, dtype=dtype) for k, v in out.items()}


def forward(theta: dict[str, torch.Tensor], batch: dict[str, torch.Tensor], score_scale: float = 1.0):
    """Attention A (R, d, B) over key tokens and log-predictions (R, d, B) for stacked θ (R, …).

    A[r, k, b] = n_k e^{S_qk} / Σ_l n_l e^{S_ql} with S = c W0 WQ WKᵀ W0ᵀ and q the row's query;
    log P̂ = log_softmax(W1ᵀ W0ᵀ A) over the target token (spec §4.2, counts form)."""
    W0, WQ, WK, W1 = (theta[n] for n in PARAM_NAMES)
    S = score_scale * (W0 @ WQ) @ (W0 @ WK).transpose(-1, -2)          # (R, d, d): S[r, i, k]
    x = S.transpose(-1, -2) @ batch["query"] + batch["log_counts"]    # (R, d_key, B): S[r, q_b, k] + log n_k
    e = torch.exp(x - x.amax(1, keepdim=True).detach())               # (R, d, B) ∝ n_k e^{S_qk}
    A = e / e.sum(1, keepdim=True)                                     # (R, d, B)
    Z = (W0 @ W1).transpose(-1, -2) @ A                                # (R, d_out, B): logits
    Z = Z - Z.amax(1, keepdim=True).detach()
    # written out instead of torch.log_softmax/logsumexp: a reduction over the short middle axis
    # of (R, d, B) is ~2× faster this way on CPU (measured)
    return A, Z - torch.log(torch.exp(Z).sum(1, keepdim=True))


def run_losses(theta, batch, score_scale: float = 1.0) -> torch.Tensor:
    """Per-run loss −Σ_b Σ_j w_jb log P̂_jb, (R,)."""
    return -(batch["weights"] * forward(theta, batch, score_scale)[1]).sum((1, 2))


@dataclass
class RunSpec:
    """One training run: the chain its data came from (for the population-side quantities), its rows."""

    chain: MarkovChain
    examples: Examples
    label: str = ""


@dataclass
class TrainRun(measure.Trajectory):
    """A trained trajectory. ``t`` = lr·step (flow time for GD); ``q`` are the stage quantities of
    ``measure.quantities`` evaluated on the trained θ with the population model of ``chain``
    (``q["loss"]`` is the population loss); ``train_loss`` is the loss on the training rows;
    ``data_hub_attention`` / ``data_low_hub_attention`` the attention mass on hub positions in the
    training contexts (all queries / non-hub queries)."""

    step: np.ndarray = None                     # (T,)
    train_loss: np.ndarray = None               # (T,)
    data_hub_attention: np.ndarray = None       # (T,)
    data_low_hub_attention: np.ndarray = None   # (T,)
    states: dict = field(default_factory=dict)  # name -> (T, *shape) float64
    chain: MarkovChain | None = None
    label: str = ""
    settings: dict = field(default_factory=dict)


def low_hub_attention(A: np.ndarray, pi: np.ndarray, hub: int) -> np.ndarray:
    """Σ_{i≠hub} π_i A_{i,hub} / Σ_{i≠hub} π_i for attention rows A (…, d, d): the attention that
    low-frequency queries pay to the hub. It rises in focus and falls in dilution in every cycle
    (spec R3–R4: A_10 0.375 → 0.3932 → 0.3485), so it is the stage detector's focus signal."""
    low = np.arange(len(pi)) != hub
    return (A[..., low, hub] * pi[low]).sum(-1) / pi[low].sum()


def train_runs(specs: list[RunSpec], *, optimizer: str = "gd", lr: float = 1.0, steps: int = 1000,
               record_every: int = 10, init_scale: float = 1e-3, d_model: int = 8, seed: int = 1,
               score_scale: float = 1.0, device: str = "auto", dtype: str = "float32",
               theta0=None, desc: str = "train") -> list[TrainRun]:
    """Train every run of ``specs`` from the same small initialization (``model.init_params``:
    N(0, ε²) entries, the spec's seed-1 draw) with full-batch GD or Adam; one TrainRun per spec.

    theta0: one θ dict for every run, or a list with one per run (e.g. an ε or width sweep). A
        run of width m < d_model is zero-padded to d_model: the padded coordinates have zero
        gradient (every path to them passes through a zero block), so it trains exactly as the
        width-m model, and its states are returned at width m."""
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer = {optimizer!r}; allowed: one of {OPTIMIZERS}")
    if dtype not in DTYPES:
        raise ValueError(f"dtype = {dtype!r}; allowed: one of {tuple(DTYPES)}")
    if not specs:
        raise ValueError("specs is empty; give at least one RunSpec")
    d = specs[0].chain.d
    dev, dt = devices.resolve(device), DTYPES[dtype]
    batch = stack([s.examples for s in specs], dt, dev)
    if not isinstance(theta0, (list, tuple)):
        theta0 = [theta0 or init_params(d, d_model, init_scale, seed)] * len(specs)
    inits = theta0
    if len(inits) != len(specs):
        raise ValueError(f"theta0 holds {len(inits)} initial states for {len(specs)} runs; give one per run")
    widths = [int(th["W0"].shape[1]) for th in inits]
    if max(widths) > d_model:
        raise ValueError(f"an initial state has width m = {max(widths)} > d_model = {d_model}; allowed: m ≤ d_model")
    theta = {n: torch.zeros(len(specs), *shape, dtype=dt, device=dev) for n, shape in param_shapes(d, d_model).items()}
    for r, (th, m) in enumerate(zip(inits, widths)):
        theta["W0"][r, :, :m], theta["W1"][r, :m, :] = th["W0"], th["W1"]             # (d, m), (m, d)
        theta["WQ"][r, :m, :m], theta["WK"][r, :m, :m] = th["WQ"], th["WK"]           # (m, m)
    for v in theta.values():
        v.requires_grad_(True)
    runs_ix = torch.arange(len(specs), device=dev)
    hubs = torch.tensor([s.chain.hub for s in specs], device=dev)      # (R,) most frequent token of each chain
    is_low_query = 1.0 - batch["query"][runs_ix, hubs]               # (R, B)
    tiny = torch.finfo(dt).tiny
    last: dict[str, torch.Tensor] = {}

    def loss_fn(step: int) -> torch.Tensor:
        A, log_P = forward(theta, batch, score_scale)
        per_run = -(batch["weights"] * log_P).sum((1, 2))             # (R,)
        last.update(A=A.detach(), per_run=per_run.detach())
        return per_run.sum()

    def record(step: int) -> dict:
        mass = batch["weights"].sum(1)                                 # (R, B) example frequency
        hub_A = last["A"][runs_ix, hubs]                               # (R, B) attention on the hub
        low = mass * is_low_query
        return {"theta": {n: theta[n].detach().to("cpu", torch.float64).clone() for n in PARAM_NAMES},
                "train_loss": last["per_run"].to("cpu", torch.float64).numpy(),
                "hub": (mass * hub_A).sum(1).to("cpu", torch.float64).numpy(),
                "low_hub": ((low * hub_A).sum(1) / low.sum(1).clamp_min(tiny)).to("cpu", torch.float64).numpy()}

    start = time.perf_counter()
    traj = train.train(loss_fn, {"theta": (list(theta.values()), lr)}, optimizer=optimizer, steps=steps,
                       record_every=record_every, record=record, desc=desc)
    wall = time.perf_counter() - start
    snaps = traj.records["theta"]
    step = np.asarray(traj.steps)
    out = []
    for r, spec in enumerate(specs):
        m = widths[r]
        cut = {"W0": (slice(None), slice(0, m)), "WQ": (slice(0, m), slice(0, m)), "WK": (slice(0, m), slice(0, m)),
               "W1": (slice(0, m), slice(None))}
        states = {n: torch.stack([s[n][r][cut[n]] for s in snaps]) for n in PARAM_NAMES}  # (T, …) at width m
        loss = PopulationLoss(spec.chain, score_scale)
        out.append(TrainRun(
            t=lr * step.astype(float), q=measure.quantities(states, loss), wall_s=wall, step=step,
            train_loss=np.array([v[r] for v in traj.records["train_loss"]]),
            data_hub_attention=np.array([v[r] for v in traj.records["hub"]]),
            data_low_hub_attention=np.array([v[r] for v in traj.records["low_hub"]]),
            states=states, chain=spec.chain, label=spec.label,
            settings=dict(optimizer=optimizer, lr=lr, steps=steps, init_scale=init_scale, d_model=d_model, seed=seed,
                          score_scale=score_scale, device=str(dev), dtype=dtype, rows=spec.examples.rows, width=m)))
    return out


def sharpness(run, times) -> np.ndarray:
    """λ_max of the population Hessian ∇²L at the stored states nearest to ``times`` (a flow or a
    trained run). GD with step η is stable along the flow while η λ_max < 2 (Euler on the
    linearisation); past that it runs at the edge of stability and leaves the flow."""
    from attnflow.focus_dilution.model import hessian

    loss = getattr(run, "loss_fn", None) or PopulationLoss(run.chain, run.settings.get("score_scale", 1.0))
    states = run.result.states() if hasattr(run, "result") and run.result is not None else run.states
    out = []
    for time_ in times:
        i = run.at(time_)
        H, _ = hessian(loss, {n: states[n][i].to(torch.float64) for n in PARAM_NAMES})
        out.append(float(np.linalg.eigvalsh(H)[-1]))
    return np.array(out)


# --------------------------------------------------------------------------- page setup
# The training pages (cycle, finite_sample, pca_trajectories) share their parameters (``_schema``
# below, ``pca.PCA_PAGE``) and hence their setup: the chain, the initial θ, the training settings,
# and the population flow they are compared with.
def start_page(cfg) -> MarkovChain:
    """Seed every generator with ``cfg.seed``, set the book's plot style, print and return the page's
    chain (:func:`attnflow.focus_dilution.schemas.start_page`, without the reference flag)."""
    from attnflow.focus_dilution.schemas import start_page as start_theory_page

    return start_theory_page(cfg)[0]


def train_settings(cfg, dtype: str = "float32") -> dict:
    """The keyword arguments of :func:`train_runs` set by a training page's parameters: optimizer,
    η, steps, record_every and the initialization (ε, m, seed, c) shared with the flow."""
    return dict(optimizer=cfg.optimizer, lr=cfg.lr, steps=cfg.steps, record_every=cfg.record_every,
                init_scale=cfg.init_scale, d_model=cfg.d_model, seed=cfg.seed, score_scale=cfg.score_scale,
                device=cfg.device, dtype=dtype)


def page_flow(cfg, chain: MarkovChain) -> runs.FlowRun:
    """The population gradient flow from the page's θ(0) up to the training horizon t = η·steps, the
    time GD reaches (BDF, float64; ``runs.population_flow``)."""
    return runs.population_flow(chain, d_model=cfg.d_model, init_scale=cfg.init_scale, seed=cfg.seed,
                                score_scale=cfg.score_scale, t_eval=runs.time_grid(cfg.lr * cfg.steps))


def flow_and_trained(cfg, chain: MarkovChain, dtype: str = "float32") -> tuple[runs.FlowRun, TrainRun]:
    """The population flow and one full-batch run trained on ``cfg.n_samples`` sequences of length
    ``cfg.seq_len`` sampled from ``chain`` (seed ``cfg.data_seed``), from the same θ(0) (claims B1,
    B6–B9 on finite samples, spec Q7)."""
    flow = page_flow(cfg, chain)
    data = MarkovContexts(chain, cfg.n_samples, cfg.seq_len, seed=cfg.data_seed)
    with runs.single_threaded():
        trained = train_runs([RunSpec(chain, data.examples(), "trained")], **train_settings(cfg, dtype))[0]
    return flow, trained


# ------------------------------------------------------------------------------ page schemas
def _schema(key: str, **extra):
    """A page schema: the theory pages' chain and model parameters (``schemas``) plus training ones."""
    from attnflow.focus_dilution import schemas
    from attnflow.params import Param, Schema

    train_params = dict(
        optimizer=Param(str, doc="optimizer: 'gd' (full-batch gradient descent, the Euler scheme of the flow) "
                                 "or 'adam'", choices=OPTIMIZERS),
        lr=Param(float, 0.0, 100.0, "η, learning rate (GD: flow time per step)", lo_open=True),
        steps=Param(int, 1, 10**7, "training steps (GD reaches flow time η·steps)"),
        record_every=Param(int, 1, 10**5, "record θ and the losses every this many steps"),
        data_seed=Param(int, 0, 2**31 - 1, "seed of the sampled sequences"),
        device=Param(str, doc="'auto' (CUDA when present), 'cpu' or 'cuda'", choices=devices.DEVICES),
    )
    return Schema(f"focus_dilution/{key}", requires=[
        (schemas._valid_chain, "the chain parameters define a valid chain"),
        (lambda c: c.record_every <= c.steps, "record_every ≤ steps"),
    ], **schemas._chain_params(), **schemas._model_params(), **train_params, **extra)


def _sizes(**docs):
    from attnflow.params import Param

    return dict(
        n_samples=Param(int, 1, 10**7, docs.get("n_samples", "N, number of training sequences")),
        seq_len=Param(int, 1, 10**6, docs.get("seq_len", "s, context length (tokens before the target)")),
    )


CYCLE = _schema("cycle", **_sizes())


def _sweep_sizes():
    from attnflow.params import Param

    return dict(
        n_samples=Param(list, 1, 10**7, "N values of the sweep (each run at the largest s)", item=int, max_len=6),
        seq_len=Param(list, 1, 10**6, "s values of the sweep (each run at the largest N)", item=int, max_len=6),
    )


FINITE_SAMPLE = _schema("finite_sample", **_sweep_sizes())


def _robustness_schema():
    from attnflow.params import Param

    return _schema(
        "robustness", **_sizes(n_samples="N of the finite-sample run at δ = 0", seq_len="s of the finite-sample run"),
        init_scales=Param(list, 0.0, 0.1, "ε values of the init-scale sweep", item=float, lo_open=True, min_len=3,
                          max_len=6),
        widths=Param(list, 1, 64, "widths m of the width sweep", item=int, min_len=2, max_len=6),
        deltas=Param(list, 0.0, 1.0, "asymmetries δ of the δ sweep (include 0)", item=float, min_len=2, max_len=6),
        a_h_variants=Param(list, 0.0, 1.0, "a_h of the chain variants (paired with b_h_variants)", item=float,
                           lo_open=True, hi_open=True, max_len=4),
        b_h_variants=Param(list, 0.0, 1.0, "b_h of the chain variants", item=float, lo_open=True, hi_open=True,
                           max_len=4),
        adam_lr=Param(float, 0.0, 1.0, "learning rate of the Adam run", lo_open=True),
        adam_steps=Param(int, 1, 10**6, "steps of the Adam run"),
    )


ROBUSTNESS = _robustness_schema()
