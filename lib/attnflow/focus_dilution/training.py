"""Finite-sample training of the focus–dilution model (spec focus_dilution.md §4.2, §5.2, Q7).

**Data** (``attnflow.focus_dilution.samples``, re-exported here): ``MarkovSequences`` /
``MarkovContexts`` of N sampled sequences, and the :class:`Examples` rows they reduce to.

**Training.** R runs of equal (d, m) are stacked on a leading axis and trained together by the
batched engine ``attnflow.sweep.train`` (one ``Stacked`` tensor per parameter, one learning rate
for every run): the summed loss has per-run gradients, and the engine's GD (θ ← θ − η∇L) and Adam
are torch.optim's updates bit for bit, so each run is updated exactly as if it were alone. For
GD, t = η·step is the flow time (Euler step η). Training runs in float32 on ``device="auto"``; pass
float64 where a run is compared with the float64 population flow.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch

from attnflow import device as devices
from attnflow import sweep
from attnflow.focus_dilution import fused as fused_loss
from attnflow.focus_dilution import measure
from attnflow.focus_dilution.chain import MarkovChain
from attnflow.focus_dilution.model import PARAM_NAMES, PopulationLoss, init_params, param_shapes
from attnflow.focus_dilution.samples import POSITIONS, Examples, MarkovContexts, MarkovSequences, population_examples

__all__ = [
    "MarkovSequences",
    "MarkovContexts",
    "Examples",
    "population_examples",
    "stack",
    "forward",
    "run_losses",
    "RunSpec",
    "TrainRun",
    "train_runs",
    "low_hub_attention",
    "sharpness",
    "step_sharpness",
    "first_unstable",
    "sweep_variants",
    "by_label",
    "variant_rows",
    "focus_slope",
    "slope_resolution",
    "condensation_growth",
    "after_condensation",
    "amplitude_spread",
    "growth_after_dilution",
    "first_move",
    "aligned_apart",
    "POSITIONS",
    "OPTIMIZERS",
    "DTYPES",
]

OPTIMIZERS = ("gd", "adam")
FUSED = True  # train_runs' default: the fused loss and gradient (``fused``); False: autograd of run_losses
DTYPES = {"float32": torch.float32, "float64": torch.float64}


def stack(sets: list[Examples], dtype=torch.float32, device="cpu") -> dict[str, torch.Tensor]:
    """Pad R example sets to a common row count (padding rows weigh 0): query one-hot (R, d, B),
    log counts (R, d, B) (−inf for absent tokens), weights (R, d, B)."""
    d, B = sets[0].counts.shape[0], max(e.rows for e in sets)
    out = {k: torch.zeros(len(sets), d, B, dtype=torch.float64) for k in ("query", "counts", "weights")}
    out["counts"][:, 0, :] = 1.0  # a valid histogram for padding rows
    for r, e in enumerate(sets):
        if e.counts.shape[0] != d:
            raise ValueError(
                f"example set {r} has vocabulary size {e.counts.shape[0]}, set 0 has {d}; stack one d at a time"
            )
        out["query"][r, :, : e.rows] = torch.nn.functional.one_hot(e.query, d).T.to(torch.float64)
        out["counts"][r, :, : e.rows] = e.counts
        out["weights"][r, :, : e.rows] = e.weights
    out["log_counts"] = torch.log(out.pop("counts"))  # log 0 = −inf: absent keys get no weight
    return {k: v.to(device=device, dtype=dtype) for k, v in out.items()}


def forward(theta: dict[str, torch.Tensor], batch: dict[str, torch.Tensor], score_scale: float = 1.0):
    """Attention A (R, d, B) over key tokens and log-predictions (R, d, B) for stacked θ (R, …): the
    training fast path of ``model.forward``'s counts form (R runs at once, each with its own rows;
    keys on the middle axis), equal to it entry by entry (tests/test_focus_training.py).

    A[r, k, b] = n_k e^{S_qk} / Σ_l n_l e^{S_ql} with S = c W0 WQ WKᵀ W0ᵀ and q the row's query;
    log P̂ = log_softmax(W1ᵀ W0ᵀ A) over the target token (spec §4.2, counts form)."""
    W0, WQ, WK, W1 = (theta[n] for n in PARAM_NAMES)
    S = score_scale * (W0 @ WQ) @ (W0 @ WK).transpose(-1, -2)  # (R, d, d): S[r, i, k]
    x = S.transpose(-1, -2) @ batch["query"] + batch["log_counts"]  # (R, d_key, B): S[r, q_b, k] + log n_k
    e = torch.exp(x - x.amax(1, keepdim=True).detach())  # (R, d, B) ∝ n_k e^{S_qk}
    A = e / e.sum(1, keepdim=True)  # (R, d, B)
    Z = (W0 @ W1).transpose(-1, -2) @ A  # (R, d_out, B): logits
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
    """A trained trajectory. ``t`` = lr·step (flow time for GD); ``quantities`` are the stage quantities
    of ``measure.quantities`` evaluated on the trained θ with the population model of ``chain``
    (``quantities["loss"]`` is the population loss); ``train_loss`` is the loss on the training rows;
    ``data_hub_attention`` / ``data_low_hub_attention`` the attention mass on hub positions in the
    training contexts (all queries / non-hub queries). ``meta`` (also read as ``settings``) holds
    the training settings; :meth:`parameters` gives θ over time as for a flow; ``examples`` the training rows."""

    step: np.ndarray = None  # (T,)
    train_loss: np.ndarray = None  # (T,)
    data_hub_attention: np.ndarray = None  # (T,)
    data_low_hub_attention: np.ndarray = None  # (T,)
    states: dict = field(default_factory=dict)  # name -> (T, *shape) float64
    chain: MarkovChain | None = None
    label: str = ""
    examples: Examples | None = None  # the rows it trained on (kept, not sampled again: issue 23)

    @property
    def settings(self) -> dict:
        """The training settings (optimizer, lr, steps, …): the record's ``meta``."""
        return self.meta

    def parameters(self) -> dict[str, torch.Tensor]:
        """θ at the recorded steps, name → (T, *shape) float64 (``states``)."""
        return self.states


def low_hub_attention(A: np.ndarray, pi: np.ndarray, hub: int) -> np.ndarray:
    """Σ_{i≠hub} π_i A_{i,hub} / Σ_{i≠hub} π_i for attention rows A (…, d, d): the attention that
    low-frequency queries pay to the hub. It rises in focus and falls in dilution in every cycle
    (spec R3–R4: A_10 0.375 → 0.3932 → 0.3485), so it is the stage detector's focus signal."""
    low = np.arange(len(pi)) != hub
    return (A[..., low, hub] * pi[low]).sum(-1) / pi[low].sum()


def train_runs(
    specs: list[RunSpec],
    *,
    optimizer: str = "gd",
    lr: float = 1.0,
    steps: int = 1000,
    record_every: int = 10,
    init_scale: float = 1e-3,
    d_model: int = 8,
    seed: int = 1,
    score_scale: float = 1.0,
    device: str = "auto",
    dtype: str = "float32",
    theta0=None,
    desc: str = "train",
    fused: bool | None = None,
) -> list[TrainRun]:
    """Train every run of ``specs`` from the same small initialization (``model.init_params``:
    N(0, ε²) entries, the spec's seed-1 draw) with full-batch GD or Adam; one TrainRun per spec.

    theta0: one θ dict for every run, or a list with one per run (e.g. an ε or width sweep). A
        run of width m < d_model is zero-padded to d_model: the padded coordinates have zero
        gradient (every path to them passes through a zero block), so it trains exactly as the
        width-m model, and its states are returned at width m.
    fused: the loss and its gradient from ``attnflow.focus_dilution.fused`` (one pass, no autograd graph;
        equal to autograd of :func:`run_losses` to round-off, tests/test_fused_markov.py) or, False, autograd
        of :func:`forward` (the reference); None: the module's ``FUSED``."""
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer = {optimizer!r}; allowed: one of {OPTIMIZERS}")
    if dtype not in DTYPES:
        raise ValueError(f"dtype = {dtype!r}; allowed: one of {tuple(DTYPES)}")
    if not specs:
        raise ValueError("specs is empty; give at least one RunSpec")
    d = specs[0].chain.d
    torch_device, torch_dtype = devices.resolve(device), DTYPES[dtype]
    batch = stack([spec.examples for spec in specs], torch_dtype, torch_device)
    if not isinstance(theta0, (list, tuple)):
        theta0 = [theta0 or init_params(d, d_model, init_scale, seed)] * len(specs)
    inits = theta0  # one initial θ per run
    if len(inits) != len(specs):
        raise ValueError(f"theta0 holds {len(inits)} initial states for {len(specs)} runs; give one per run")
    widths = [int(init["W0"].shape[1]) for init in inits]
    if max(widths) > d_model:
        raise ValueError(f"an initial state has width m = {max(widths)} > d_model = {d_model}; allowed: m ≤ d_model")
    theta = {
        n: torch.zeros(len(specs), *shape, dtype=torch_dtype, device=torch_device)
        for n, shape in param_shapes(d, d_model).items()
    }
    for r, (init, m) in enumerate(zip(inits, widths)):
        theta["W0"][r, :, :m], theta["W1"][r, :m, :] = init["W0"], init["W1"]  # (d, m), (m, d)
        theta["WQ"][r, :m, :m], theta["WK"][r, :m, :m] = init["WQ"], init["WK"]  # (m, m)
    run_index = torch.arange(len(specs), device=torch_device)
    hubs = torch.tensor(
        [spec.chain.hub for spec in specs], device=torch_device
    )  # (R,) most frequent token of each chain
    is_low_query = 1.0 - batch["query"][run_index, hubs]  # (R, B)
    tiny = torch.finfo(torch_dtype).tiny
    latest: dict[str, torch.Tensor] = {}

    rows = fused_loss.rows(batch) if (FUSED if fused is None else fused) else None

    def objective(params, _sample, models):  # full batch: one forward per step
        if rows is not None:
            per_run, A = fused_loss.run_losses(params, rows, score_scale)  # (R,), (R, d, B)
        else:
            A, log_P = forward(params, batch, score_scale)
            per_run = -(batch["weights"] * log_P).sum((1, 2))  # (R,)
        latest["A"] = A.detach()
        return per_run[models], {}

    def record(_step: int, params) -> dict:
        mass = batch["weights"].sum(1)  # (R, B) example frequency
        hub_A = latest["A"][run_index, hubs]  # (R, B) attention on the hub
        low = mass * is_low_query
        return {
            "theta": {n: params[n].detach().to("cpu", torch.float64).clone() for n in PARAM_NAMES},
            "hub": (mass * hub_A).sum(1).to("cpu", torch.float64).numpy(),
            "low_hub": ((low * hub_A).sum(1) / low.sum(1).clamp_min(tiny)).to("cpu", torch.float64).numpy(),
        }

    start = time.perf_counter()
    rates = torch.full((len(specs),), float(lr), dtype=torch.float64, device=torch_device)
    tensors = {n: sweep.Stacked(v, run_index, rates) for n, v in theta.items()}
    trained = sweep.train(
        objective,
        tensors,
        len(specs),
        optimizer=optimizer,
        steps=steps,
        record_every=record_every,
        record=record,
        labels=[spec.label or f"run {r}" for r, spec in enumerate(specs)],
        cpu_threads=None,
        desc=desc,
    )
    wall = time.perf_counter() - start
    snapshots = trained.records["theta"]
    step = np.asarray(trained.steps)
    runs = []
    for r, spec in enumerate(specs):
        m = widths[r]
        at_width = {
            "W0": (slice(None), slice(0, m)),
            "WQ": (slice(0, m), slice(0, m)),
            "WK": (slice(0, m), slice(0, m)),
            "W1": (slice(0, m), slice(None)),
        }  # the run's own width m
        states = {
            n: torch.stack([snapshot[n][r][at_width[n]] for snapshot in snapshots]) for n in PARAM_NAMES
        }  # (T, …) at width m
        loss = PopulationLoss(spec.chain, score_scale)
        runs.append(
            TrainRun(
                t=lr * step.astype(float),
                quantities=measure.quantities(states, loss),
                wall_s=wall,
                step=step,
                train_loss=trained.loss[:, r].copy(),
                data_hub_attention=np.array([v[r] for v in trained.records["hub"]]),
                data_low_hub_attention=np.array([v[r] for v in trained.records["low_hub"]]),
                states=states,
                chain=spec.chain,
                label=spec.label,
                examples=spec.examples,
                meta=dict(
                    optimizer=optimizer,
                    lr=lr,
                    steps=steps,
                    init_scale=init_scale,
                    d_model=d_model,
                    seed=seed,
                    score_scale=score_scale,
                    device=str(torch_device),
                    dtype=dtype,
                    rows=spec.examples.rows,
                    width=m,
                ),
            )
        )
    return runs


def sharpness(run, times) -> np.ndarray:
    """λ_max of the population Hessian ∇²L at the stored states nearest to ``times`` (a flow or a
    trained run). GD with step η is stable along the flow while η λ_max < 2 (Euler on the
    linearisation); past that it runs at the edge of stability and leaves the flow."""
    from attnflow.focus_dilution.model import hessian

    loss = getattr(run, "loss_fn", None) or PopulationLoss(run.chain, run.meta.get("score_scale", 1.0))
    states = run.parameters()
    out = []
    for time_ in times:
        i = run.at(time_)
        H, _ = hessian(loss, {n: states[n][i].to(torch.float64) for n in PARAM_NAMES})
        out.append(float(np.linalg.eigvalsh(H)[-1]))
    return np.array(out)


def step_sharpness(run, lr: float, times) -> dict[float, float]:
    """η λ_max(∇²L) at ``times`` along ``run`` (:func:`sharpness`), keyed by time: GD with step ``lr`` follows the
    flow while it is below 2."""
    return dict(zip([float(t) for t in times], (lr * sharpness(run, times)).tolist()))


def first_unstable(profile: dict[float, float]) -> float:
    """The first time of a :func:`step_sharpness` profile with η λ_max ≥ 2 (NaN: none)."""
    return next((t for t, v in profile.items() if v >= 2), float("nan"))


# ----------------------------------------------------------------------------- sweeps of one parameter at a time
def sweep_variants(
    chain: MarkovChain,
    *,
    n_low: int,
    a_h: float,
    b_h: float,
    c_cyc: float,
    delta: float,
    init_scales,
    widths,
    deltas,
    a_h_variants,
    b_h_variants,
    d_model: int,
    init_scale: float,
    seed: int,
) -> tuple[list[RunSpec], list[dict]]:
    """The population runs of a one-at-a-time sweep (the robustness page): ε over ``init_scales`` and m over
    ``widths`` on ``chain``, δ over ``deltas`` and (a_h, b_h) over the pairs of ``a_h_variants`` and ``b_h_variants``
    (at ``delta``) on the hub family (``chain.hub_family``); every other parameter at its base value and every θ(0)
    the draw of ``seed`` (``model.init_params``). Returns the run specs, labelled (sweep, value) with sweep ∈ ε, m,
    δ, chain, each on its chain's population rows, and their θ(0)."""
    from attnflow.focus_dilution.chain import hub_family

    base = dict(n_low=n_low, a_h=a_h, b_h=b_h, c_cyc=c_cyc)
    out = [("ε", e, chain, init_params(chain.d, d_model, e, seed)) for e in init_scales]
    out += [("m", m, chain, init_params(chain.d, m, init_scale, seed)) for m in widths]
    out += [("δ", dl, hub_family(**base, delta=dl), init_params(chain.d, d_model, init_scale, seed)) for dl in deltas]
    out += [
        (
            "chain",
            (ah, bh),
            hub_family(**{**base, "a_h": ah, "b_h": bh}, delta=delta),
            init_params(chain.d, d_model, init_scale, seed),
        )
        for ah, bh in zip(a_h_variants, b_h_variants)
    ]
    specs = [RunSpec(ch, population_examples(ch), (kind, value)) for kind, value, ch, _ in out]
    return specs, [th for *_, th in out]


def by_label(runs: list) -> dict:
    """The runs keyed by their labels (``RunSpec.label``, e.g. (sweep, value))."""
    return {r.label: r for r in runs}


def variant_rows(runs: dict, detected: dict) -> list[dict]:
    """One table row per run (keys (sweep, value)): the detected stage letters, the start of the first focus and
    of the first escape, the final population loss and the chain's bigram optimum."""
    return [
        dict(
            sweep=kind,
            value=str(value),
            stages=detected[kind, value].letters(),
            t_focus=detected[kind, value].get("focus", 1).start,
            t_escape=detected[kind, value].get("escape").start,
            final_loss=float(run.quantities["loss"][-1]),
            bigram=run.chain.bigram_loss(),
        )
        for (kind, value), run in runs.items()
    ]


def focus_slope(focus_times: dict, eps_max: float = float("inf")) -> float:
    """Least-squares slope of the first focus time against log(1/ε) over the ε ≤ ``eps_max`` of ``focus_times``
    (ε → t_focus; NaN times left out); NaN with fewer than 2 finite points."""
    pts = [(np.log(1 / e), t) for e, t in focus_times.items() if e <= eps_max and np.isfinite(t)]
    return float(np.polyfit(*np.array(pts).T, 1)[0]) if len(pts) >= 2 else float("nan")


def slope_resolution(eps, dt: float) -> float:
    """Largest error of :func:`focus_slope` over ``eps`` when every focus time is known only to within one
    stored interval ``dt`` (the detector's edge is found on the stored samples): dt·Σ|xᵢ − x̄| / (2Σ(xᵢ − x̄)²),
    x = log(1/ε) (the errors share an offset, which the slope ignores; nan with fewer than 2 values)."""
    x = np.log(1 / np.asarray(eps, dtype=float))
    if len(x) < 2 or np.ptp(x) == 0:
        return float("nan")
    dev = x - x.mean()
    return float(dt * np.abs(dev).sum() / (2 * (dev**2).sum()))


def condensation_growth(run, detected) -> float:
    """‖W_QW_Kᵀ‖_F at the end of the detected condensation over its value at t = 0: about 1 where attention is
    frozen while W0 condenses (small ε), larger where the stages overlap."""
    q = run.quantities["M_fro"]
    return float(q[run.at(detected.stages[0].end)] / q[0])


def after_condensation(run, detected, key: str, delay: float = 20.0):
    """``run.quantities[key]`` at ``delay`` time units after the end of the detected condensation (the rank-one
    point it condensed to: amplitudes a_k, cos(W0, π))."""
    return run.quantities[key][run.at(detected.stages[0].end + delay)]


def amplitude_spread(run, detected) -> float:
    """Relative spread std/mean of the rank-one amplitudes a_k just after condensation (:func:`after_condensation`):
    GD condenses to a ∝ π, Adam to a ≈ 𝟙 (spread ≈ 0)."""
    a = after_condensation(run, detected, "amp")
    return float(a.std() / abs(a.mean()))


def growth_after_dilution(run, decided) -> float:
    """max σ₂(W0) from the time the first dilution is over (``decided``: ``stages.end_of_dilution``, from the run
    up to then only) over σ₂(W0) then (NaN: no first dilution decided)."""
    if not decided.found:
        return float("nan")
    s2 = run.quantities["sigma2"]
    return float(s2[run.t >= decided.t].max() / s2[run.at(decided.t)])


def first_move(run, detected) -> float:
    """Change of the hub attention Σπ_iA_i,hub over the first detected attention move (0 when there is none)."""
    moves = detected.focus_swings
    a0, a1 = (moves[0][0], moves[0][1]) if moves else (run.t[-1], run.t[-1])
    hub = run.quantities["hub_attention"]
    return float(hub[run.at(a1)] - hub[run.at(a0)])


def aligned_apart(cosines) -> bool:
    """B3's criterion on (cos(W0, π) for GD, for Adam) after condensation: GD aligned with π (> 0.999), Adam not
    (< 0.99, the page's threshold where π is far from uniform)."""
    gd, adam = cosines
    return bool(gd > 0.999 > 0.99 > adam)
