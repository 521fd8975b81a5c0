"""Set-up and parameter contracts of the focus–dilution training pages (cycle, finite_sample,
pca_trajectories, robustness): the chain, the initial θ, the training settings, the population
flow they are compared with, the seeds they train, and each page's schema with its rules and
its cost estimate.

The pages share their parameters (``_schema``) and hence their set-up. Claims about random
training run ``n_seeds`` data seeds (``data_seed``, ``data_seed + 1``, …) as one batch.
"""
from __future__ import annotations

from attnflow import device as devices
from attnflow.focus_dilution import runs
from attnflow.focus_dilution.chain import MarkovChain
from attnflow.focus_dilution.samples import MarkovContexts
from attnflow.focus_dilution.training import OPTIMIZERS, RunSpec, TrainRun, train_runs

__all__ = ["start_page", "train_settings", "page_flow", "flow_and_trained", "data_seeds", "trained_runs",
           "CYCLE", "FINITE_SAMPLE", "ROBUSTNESS", "PCA_PAGE", "COSTS", "MAX_TOKENS"]

MAX_TOKENS = 10**11
"""Most sampled tokens a page may ask for (seeds × N × s): the sampler walks every token (about
10⁸ tokens per second here); the paper profiles use ≤ 3·10¹⁰."""


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
    return flow, trained_runs(cfg, chain, dtype, n_seeds=1)[0]


def data_seeds(cfg, n_seeds: int | None = None) -> list[int]:
    """The data seeds of a page: ``data_seed``, ``data_seed + 1``, … (``cfg.n_seeds`` of them)."""
    n = getattr(cfg, "n_seeds", 1) if n_seeds is None else n_seeds
    return [cfg.data_seed + k for k in range(n)]


def trained_runs(cfg, chain: MarkovChain, dtype: str = "float32", n_seeds: int | None = None) -> list[TrainRun]:
    """One full-batch run per data seed (:func:`data_seeds`), each on ``cfg.n_samples`` sequences of
    length ``cfg.seq_len``, all from the page's θ(0) and trained together as one batch."""
    specs = [RunSpec(chain, MarkovContexts(chain, cfg.n_samples, cfg.seq_len, seed=s).examples(), f"data seed {s}")
             for s in data_seeds(cfg, n_seeds)]
    with devices.single_threaded():
        return train_runs(specs, **train_settings(cfg, dtype))


# ------------------------------------------------------------------------------ page schemas
# Cost estimates, in seconds on 2 shared CPU cores, from timings of the book defaults: sampling
# ~1.5·10⁻⁸ s per token and token type, a GD step ~1 ms plus ~1.2·10⁻⁷ s per (run, row, token) entry,
# the BDF flow ~3 ms per unit of flow time. They go to ``params.Schema(cost=...)`` where it exists.
def _flow_s(c) -> float:
    return 3e-3 * c.lr * c.steps


def _train_s(c, runs_: int, rows: float, steps: int | None = None) -> float:
    return (steps or c.steps) * (1e-3 + 1.2e-7 * runs_ * rows * (c.n_low + 1) * max(1, c.d_model // 8))


def _tokens(c) -> float:
    ns, ss = (c.n_samples, c.seq_len) if isinstance(c.n_samples, int) else (sum(c.n_samples), max(c.seq_len))
    return getattr(c, "n_seeds", 1) * ns * ss


def _sample_s(c) -> float:
    return 1.5e-8 * _tokens(c) * (c.n_low + 1)


def _cycle_cost(c) -> float:
    return _flow_s(c) + _sample_s(c) + _train_s(c, getattr(c, "n_seeds", 1), c.n_samples)


def _finite_cost(c) -> float:
    runs_ = c.n_seeds * (len(c.n_samples) + len(c.seq_len))
    return _flow_s(c) + _sample_s(c) + _train_s(c, runs_, max(c.n_samples))


def _robustness_cost(c) -> float:
    runs_ = len(c.init_scales) + len(c.widths) + len(c.deltas) + len(c.a_h_variants)
    return (_sample_s(c) + _train_s(c, runs_, c.n_low + 1) + _train_s(c, 1, c.n_low + 1, c.adam_steps)
            + _train_s(c, c.n_seeds, c.n_samples))


COSTS = {"cycle": (_cycle_cost, "seconds on 2 CPU cores: flow + sampling n_seeds·N·s tokens + GD on n_seeds·N rows"),
         "finite_sample": (_finite_cost, "seconds on 2 CPU cores: flow + sampling + GD on every (N, s, seed) run"),
         "pca_trajectories": (_cycle_cost, "seconds on 2 CPU cores: flow + sampling N·s tokens + GD"),
         "robustness": (_robustness_cost, "seconds on 2 CPU cores: the batched population sweep, Adam and the "
                                          "sampled runs")}


def _make_schema(key: str, requires: list, **params):
    from attnflow.params import Schema

    try:
        return Schema(f"focus_dilution/{key}", requires=requires, cost=COSTS[key], **params)
    except TypeError:                       # a params.Schema without the cost keyword yet
        return Schema(f"focus_dilution/{key}", requires=requires, **params)


def _schema(key: str, *, rules: tuple = (), **extra):
    """A page schema: the theory pages' chain and model parameters (``schemas``) plus training ones."""
    from attnflow.focus_dilution import schemas
    from attnflow.params import Param

    train_params = dict(
        optimizer=Param(str, doc="optimizer: 'gd' (full-batch gradient descent, the Euler scheme of the flow) "
                                 "or 'adam'", choices=OPTIMIZERS),
        lr=Param(float, 0.0, 100.0, "η, learning rate (GD: flow time per step)", lo_open=True),
        steps=Param(int, 1, 10**7, "training steps (GD reaches flow time η·steps)"),
        record_every=Param(int, 1, 10**5, "record θ and the losses every this many steps"),
        data_seed=Param(int, 0, 2**31 - 1, "seed of the sampled sequences (the first of n_seeds)"),
        device=Param(str, doc="'auto' (CUDA when present), 'cpu' or 'cuda'", choices=devices.DEVICES),
    )
    return _make_schema(key, [
        (schemas._valid_chain, "the chain parameters define a valid chain"),
        (lambda c: c.steps >= 5 * c.record_every,
         "steps ≥ 5 · record_every (the stage detector needs at least 5 stored times after t = 0)"),
        *rules,
    ], **schemas._chain_params(), **schemas._model_params(), **train_params, **extra)


def _seeds(default_doc: str = "number of data seeds trained as one batch (≥ 3 for the seed statistics)"):
    from attnflow.params import Param

    return dict(n_seeds=Param(int, 1, 64, default_doc))


_TOKENS_RULE = (lambda c: _tokens(c) <= MAX_TOKENS,
                f"n_seeds · N · s ≤ {MAX_TOKENS:.0e} sampled tokens (the sampler walks every token)")


def _sizes(**docs):
    from attnflow.params import Param

    return dict(
        n_samples=Param(int, 1, 10**7, docs.get("n_samples", "N, number of training sequences")),
        seq_len=Param(int, 1, 10**6, docs.get("seq_len", "s, context length (tokens before the target)")),
    )


def _sweep_sizes():
    from attnflow.params import Param

    return dict(
        n_samples=Param(list, 1, 10**7, "N values of the sweep (each run at the largest s)", item=int, max_len=6),
        seq_len=Param(list, 1, 10**6, "s values of the sweep (each run at the largest N)", item=int, max_len=6),
    )


def _robustness_schema():
    from attnflow.params import Param

    return _schema(
        "robustness", rules=(
            _TOKENS_RULE,
            (lambda c: len(c.a_h_variants) == len(c.b_h_variants),
             "a_h_variants and b_h_variants have the same length (one chain per pair)"),
            (lambda c: 0.0 in c.deltas, "deltas contains 0.0 (the trapped reference)"),
            (lambda c: c.chain == "hub", "chain = 'hub' (the δ and (a_h, b_h) sweeps vary the hub family)"),
            (lambda c: c.adam_steps >= 25, "adam_steps ≥ 25 (recorded every 5 steps: the detector needs 5 stored times)"),
        ),
        **_sizes(n_samples="N of the finite-sample runs at δ = 0", seq_len="s of the finite-sample runs"),
        **_seeds("number of data seeds of the finite-sample runs at δ = 0 (≥ 3 for the seed statistic)"),
        init_scales=Param(list, 0.0, 0.1, "ε values of the init-scale sweep", item=float, lo_open=True, min_len=3,
                          max_len=6),
        widths=Param(list, 1, 64, "widths m of the width sweep", item=int, min_len=2, max_len=6),
        deltas=Param(list, 0.0, 1.0, "asymmetries δ of the δ sweep (include 0)", item=float, min_len=2, max_len=6),
        a_h_variants=Param(list, 0.0, 1.0, "a_h of the chain variants (paired with b_h_variants)", item=float,
                           lo_open=True, hi_open=True, max_len=4),
        b_h_variants=Param(list, 0.0, 1.0, "b_h of the chain variants", item=float, lo_open=True, hi_open=True,
                           max_len=4),
        adam_lr=Param(float, 0.0, 1.0, "learning rate of the Adam run", lo_open=True),
        adam_steps=Param(int, 5, 10**6, "steps of the Adam run"),
    )


def _pca_schema():
    from attnflow.params import Param

    return _schema("pca_trajectories", rules=(_TOKENS_RULE,), **_sizes(), **_seeds(),
                   n_components=Param(int, 2, 8, "principal components kept (≥ 2 for the PC1–PC2 panels)"),
                   centre=Param(bool, doc="centre the embeddings before PCA (False: keep the origin, see pca.py)"))


CYCLE = _schema("cycle", rules=(_TOKENS_RULE,), **_sizes(), **_seeds())
FINITE_SAMPLE = _schema("finite_sample", rules=(_TOKENS_RULE,), **_sweep_sizes(), **_seeds())
ROBUSTNESS = _robustness_schema()
PCA_PAGE = _pca_schema()
