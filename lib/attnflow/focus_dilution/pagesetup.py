"""Set-up of the focus–dilution pages from their validated parameters (``contracts``).

``start_page(cfg)`` is the one seeding policy of every page: it seeds every generator with
``cfg.seed`` and sets the book's plot style, then returns the chain (and, for the theory pages,
whether the spec's reference targets apply). The training pages (cycle, finite_sample,
pca_trajectories, robustness) also take their training settings, the population flow they are
compared with and the runs on their data seeds from here. Claims about random training run
``n_seeds`` data seeds (``data_seed``, ``data_seed + 1``, …) as one batch.
"""

from __future__ import annotations

from attnflow import device as devices
from attnflow.focus_dilution import runs
from attnflow.focus_dilution.chain import MarkovChain
from attnflow.focus_dilution.contracts import is_reference, make_chain
from attnflow.focus_dilution.samples import MarkovContexts
from attnflow.focus_dilution.training import RunSpec, TrainRun, train_runs

__all__ = [
    "start_page",
    "start_training_page",
    "train_settings",
    "page_flow",
    "data_seeds",
    "trained_runs",
    "page_flow_until",
]


def start_page(cfg) -> tuple[MarkovChain, bool]:
    """Set-up cell of a theory page: seed everything, the book's plot style, the chain of the
    parameters and whether the spec's reference targets apply; prints the chain and π."""
    import numpy as np

    from attnflow import plotting, seeding

    seeding.seed_everything(cfg.seed)
    plotting.use_style()
    chain, reference = make_chain(cfg), is_reference(cfg)
    print(chain.name, "| π =", np.round(chain.pi, 5), "| reference configuration:", reference)
    return chain, reference


def start_training_page(cfg) -> MarkovChain:
    """:func:`start_page` for a training page: seed, plot style, and the page's chain (printed)."""
    return start_page(cfg)[0]


def train_settings(cfg, dtype: str = "float32") -> dict:
    """The keyword arguments of :func:`train_runs` set by a training page's parameters: optimizer,
    η, steps, record_every and the initialization (ε, m, seed, c) shared with the flow."""
    return dict(
        optimizer=cfg.optimizer,
        lr=cfg.lr,
        steps=cfg.steps,
        record_every=cfg.record_every,
        init_scale=cfg.init_scale,
        d_model=cfg.d_model,
        seed=cfg.seed,
        score_scale=cfg.score_scale,
        device=cfg.device,
        dtype=dtype,
    )


def page_flow(cfg, chain: MarkovChain, horizon: float | None = None) -> runs.FlowRun:
    """The population gradient flow from the page's θ(0) up to ``horizon``, by default the training horizon
    t = η·steps, the time GD reaches (BDF, float64; ``runs.population_flow``)."""
    return runs.population_flow(
        chain,
        d_model=cfg.d_model,
        init_scale=cfg.init_scale,
        seed=cfg.seed,
        score_scale=cfg.score_scale,
        t_eval=runs.time_grid(cfg.lr * cfg.steps if horizon is None else horizon),
    )


def data_seeds(cfg, n_seeds: int | None = None) -> list[int]:
    """The data seeds of a page: ``data_seed``, ``data_seed + 1``, … (``cfg.n_seeds`` of them)."""
    n = getattr(cfg, "n_seeds", 1) if n_seeds is None else n_seeds
    return [cfg.data_seed + k for k in range(n)]


def trained_runs(cfg, chain: MarkovChain, dtype: str = "float32", n_seeds: int | None = None) -> list[TrainRun]:
    """One full-batch run per data seed (:func:`data_seeds`), each on ``cfg.n_samples`` sequences of
    length ``cfg.seq_len``, all from the page's θ(0) and trained together as one batch."""
    specs = [
        RunSpec(chain, MarkovContexts(chain, cfg.n_samples, cfg.seq_len, seed=s).examples(), f"data seed {s}")
        for s in data_seeds(cfg, n_seeds)
    ]
    with devices.single_threaded():
        return train_runs(specs, **train_settings(cfg, dtype))


def page_flow_until(cfg, chain: MarkovChain, flow: runs.FlowRun, t_end: float) -> runs.FlowRun:
    """The page's flow up to ``t_end``: ``flow`` itself where ``t_end`` is within it (or not finite), else the same
    flow from the page's θ(0) integrated anew on ``runs.time_grid(⌈t_end⌉)``."""
    import math

    if not (math.isfinite(t_end) and t_end > flow.t[-1]):
        return flow
    return page_flow(cfg, chain, float(math.ceil(t_end)))


def sampled_forecasts(cfg, chain: MarkovChain, runs: list, decided: list) -> list:
    """R5's forecast (``transverse.forecast``) of each sampled run (:func:`trained_runs` on ``chain``) from the time
    its first dilution is over (``decided``: ``stages.end_of_dilution`` of each run, from the run up to then only),
    on the rows that run trained on (its ``examples``, not sampled again): a list with None where no first dilution
    was decided — and None for every run when fewer than ``stats.MIN_SEEDS`` reach one (a share over them cannot
    be decided, so nothing is forecast)."""
    import numpy as np

    from attnflow import stats
    from attnflow.focus_dilution import transverse

    starts = [d.t for d in decided]
    if np.isfinite(starts).sum() < stats.MIN_SEEDS:
        return [None] * len(runs)
    rows = [r.examples if np.isfinite(t) else None for r, t in zip(runs, starts)]
    return transverse.forecast(
        runs, starts, rows, lr=cfg.lr, record_every=cfg.record_every, score_scale=cfg.score_scale, device=cfg.device
    )
