"""Every parameter contract of the sharpening pages, in one module (DESIGN.md, principle 5).

One :class:`~attnflow.params.Schema` per page, named after the page (``book/sharpening/<page>.py``
validates with ``params.validate(globals(), contracts.<PAGE>)``; :data:`BY_PAGE` maps the page
key to its schema). The physical parameters share one definition each, so n, K, r, the initial
scalars, the horizon, seeds and devices are validated identically everywhere.

Every rule a page's computation would otherwise raise on in the middle of a run is a schema rule
here, so bad input exits with code 2 before anything runs:

- the horizon keeps e^a and e^b of the Theorem 4 growth laws in float64 (``HorizonError`` names
  ``horizon``, raised by ``reduced.ReducedSystem.check_horizon`` during validation);
- an exact population (scalar reduction, line theorem, the mechanism's full model) has at most
  :data:`attnflow.sharpening.data.POPULATION_MAX` compositions;
- a GD step h of the line theorem is at most 2·gd_time (at least one step, ``round(T/h) ≥ 1``);
- the growth-rate fit window starts after t = 1 (``fit_from > 1``);
- seeds, optimizers are distinct; minibatches fit in the training set; checkpoint levels lie above
  the matched loss; the real-data sweeps hold the baseline r = 1 and a faster r.
"""

from __future__ import annotations

import functools
import math

from attnflow import costs
from attnflow.data import tasks
from attnflow.params import Param, Schema
from attnflow.sharpening import data
from attnflow.sharpening.model import PARAMETRIZATIONS

NAMES = tuple(PARAMETRIZATIONS)
SYNTHETIC_OPTIMIZERS = (
    "adamw",
    "sgd",
    "gd",
)  # names of attnflow.train.OPTIMIZERS: the ratio sweep (spec §7.2 and full-batch GD)
REAL_OPTIMIZERS = ("adamw", "sgd")  # the real-data pages (spec §7.2)

# -- shared parameters of the theory pages ---------------------------------------------------------
n_classes = Param(int, 2, 50, "K, number of classes")
n_compete = Param(int, 1, 1000, "n, non-distinct positions competing with the distinct token in the softmax")
n_common = Param(int, 1, 50, "M, common tokens in the vocabulary of the full model")
lr_ratio = Param(float, 0.0, 1e4, "r = η_QK/η_OV, learning-rate ratio", lo_open=True)
lr_ratios = Param(list, 0.0, 1e4, "learning-rate ratios r = η_QK/η_OV", item=float, lo_open=True, max_len=12)
a0 = Param(float, 0.0, 10.0, "initial OV scalar a₀", lo_open=True)
b0 = Param(float, 0.0, 10.0, "initial QK scalar b₀ (> 0: Ψ of a factorized QK circuit has ln b)", lo_open=True)
horizon = Param(float, 1.0, 1e300, "gradient-flow horizon of the reduced ODE (model time)")
rtol = Param(float, 1e-13, 1e-4, "relative tolerance of the adaptive ODE solver (absolute: rtol/100)")
parametrizations = Param(list, doc="parametrizations to run", item=str, choices=NAMES, max_len=4)
# the reduced (a, b) flow's parameters, in this order, on the pages that integrate it over several ratios
REDUCED_FLOW = dict(
    n_classes=n_classes,
    n_compete=n_compete,
    lr_ratios=lr_ratios,
    a0=a0,
    b0=b0,
    horizon=horizon,
    rtol=rtol,
    parametrizations=parametrizations,
)


def _horizon_fits(c) -> bool:
    """Raise the reduced ODE's HorizonError (which names 'horizon') when the growth would overflow."""
    from attnflow.sharpening.reduced import ReducedSystem

    for name in getattr(c, "parametrizations", NAMES):
        for r in getattr(c, "lr_ratios", [getattr(c, "lr_ratio", 1.0)]):
            ReducedSystem(name, r, c.n_compete, c.n_classes).check_horizon(c.horizon)
    return True


def _population_fits(n_common_of):
    """Rule: the exact population of the task (K, M, T = n + 2) has at most POPULATION_MAX sequences."""

    def rule(c) -> bool:
        task = data.Task(n_classes=c.n_classes, n_common=n_common_of(c), seq_len=c.n_compete + 2)
        return data.n_compositions(task) <= data.POPULATION_MAX

    return (
        rule,
        f"the exact population (K, M, T = n + 2) has at most {data.POPULATION_MAX:,} compositions "
        f"(lower n_common or n_compete)",
    )


_HORIZON_RULE = (_horizon_fits, "the horizon keeps e^a and e^b within float64")
_DISTINCT_SEEDS = (lambda c: len(set(c.seeds)) == len(c.seeds), "seeds are distinct")


# -- run-cost estimates (attnflow.costs: seconds on 2 shared CPU cores, from each page's dominant work) ----
def _compositions(c, n_common: int, seq_len: int) -> int:
    return data.n_compositions(data.Task(n_classes=c.n_classes, n_common=n_common, seq_len=seq_len))


def _reduced_runs(c) -> int:
    return len(getattr(c, "parametrizations", NAMES)) * len(getattr(c, "lr_ratios", [1.0]))


def _lemma1_cost(c) -> float:
    return costs.page(costs.population_gd_s(c.t_max * c.lr_qk * c.d * c.d_h, c.n_samples, c.n_keys))


def _scalar_cost(c) -> float:
    pop = _compositions(c, c.n_common, c.n_compete + 2)
    return costs.page(costs.population_flow_s(c.t_max, pop, c.n_compete + 2, len(c.parametrizations)))


def _line_cost(c) -> float:
    steps = sum(max(1, round(c.gd_time / h)) for h in c.gd_steps)
    pop = _compositions(c, c.n_common, c.n_compete + 2)
    return costs.page(
        costs.reduced_ode_s(_reduced_runs(c), c.horizon),
        costs.population_gd_s(steps, pop, c.n_compete + 2, len(c.parametrizations)),
    )


def _growth_cost(c) -> float:
    return costs.page(costs.reduced_ode_s(_reduced_runs(c), c.horizon))


def _mechanism_cost(c) -> float:
    pop = _compositions(c, c.pop_n_common, c.n_compete + 2)
    return costs.page(
        costs.reduced_ode_s(_reduced_runs(c), c.horizon),
        costs.population_flow_s(c.horizon, pop, c.n_compete + 2, len(c.parametrizations)),
        costs.stacked_gd_s(c.max_steps, 4 * len(c.seeds), c.n_samples, c.seq_len, separate=True),
    )


def _four_cost(c) -> float:
    n_runs = len(c.seeds)
    models = len(c.parametrizations) * (n_runs + 1)  # every seed, plus one balanced model each
    steps = costs.steps_to_target("gd", c.lr, c.max_steps)
    return costs.page(costs.stacked_gd_s(steps, models, c.n_train + c.n_test / c.record_every, c.seq_len))


def _dtap_cost(c) -> float:
    models = (len(NAMES) + len([r for r in c.fafo_ratios if r != 1.0])) * len(c.seeds)
    steps = costs.steps_to_target("gd", c.lr, c.max_steps)
    return costs.page(costs.stacked_gd_s(steps, models, c.n_train, c.seq_len))


def _ratio_cost(c) -> float:
    models = len(c.lr_ratios) * len(c.seeds)
    rows = {"gd": c.n_train, "adamw": c.batch_size + c.n_train / c.eval_every}
    rows["sgd"] = rows["adamw"]
    lr = {"adamw": c.lr_adamw, "sgd": c.lr_sgd, "gd": c.lr_gd}
    steps = {o: costs.steps_to_target(o, lr[o], c.max_steps, c.momentum if o == "sgd" else 0.0) for o in c.optimizers}
    levels = len(c.checkpoint_losses) + 1
    evals = len(c.optimizers) * levels * costs.evaluation_s(models, c.n_test, c.seq_len, len(c.k_percents))
    return costs.page(evals, *(costs.stacked_gd_s(steps[o], models, rows[o], c.seq_len) for o in c.optimizers))


def _breaks_cost(c) -> float:
    model_steps = 5 * len(c.seeds) * len(c.init_scales) * sum(math.ceil(c.max_time / lr) for lr in c.lrs)
    steps = math.ceil(c.max_time / min(c.lrs))  # the batch runs until its slowest model's budget
    return costs.page(costs.stacked_gd_s(steps, None, c.n_train, c.seq_len, model_steps=model_steps))


def _real_cost(name: str, c) -> float:
    models = len(c.lr_ratios) * len(c.seeds)
    epochs = {"adamw": c.epochs_adamw, "sgd": c.epochs_sgd}
    # an epoch is over the rows the loader offers: the stand-in's training split caps n_train
    n_train = min(c.n_train, tasks.train_rows(name, c.source) or c.n_train)
    return costs.page(
        *(
            costs.minibatch_s(
                math.ceil(epochs[o] * n_train / c.batch_size),
                models,
                c.batch_size,
                c.max_len,
                c.vocab_size,
                c.d_model,
            )
            for o in c.optimizers
        )
    )


COSTS = {
    "lemma1_rescaling": (_lemma1_cost, "the factor flow, t_max · lr_qk · d · d_h × n_samples × n_keys"),
    "scalar_reduction": (
        _scalar_cost,
        "the population flow, log10(t_max) × the (n_common, n_compete) population",
    ),
    "line_theorem": (
        _line_cost,
        "GD on the exact population, Σ gd_time/h over gd_steps × the (n_common, n_compete) population",
    ),
    "growth_rates": (_growth_cost, "reduced ODEs, parametrizations × lr_ratios × log10(horizon)"),
    "sharpening_mechanism": (
        _mechanism_cost,
        "the sampled GD runs, max_steps × 4 models × seeds × n_samples × seq_len, and the ODEs",
    ),
    "four_parametrizations": (
        _four_cost,
        "batched GD, steps to target_loss (forecast from lr, at most max_steps) × parametrizations × (seeds + 1) "
        "× n_train × seq_len",
    ),
    "dtap_heatmaps": (
        _dtap_cost,
        "batched GD, steps to target_loss (forecast from lr, at most max_steps) × models (fafo_ratios, seeds) "
        "× n_train × seq_len",
    ),
    "ratio_sweep": (
        _ratio_cost,
        "per optimizer, steps to target_loss (forecast from lr_*, at most max_steps) × lr_ratios × seeds "
        "× (batch_size + n_train/eval_every) × seq_len, and the evaluation at every checkpoint loss",
    ),
    "where_it_breaks": (
        _breaks_cost,
        "batched GD, Σ max_time/lr over lrs × init_scales × seeds × 5 models × n_train × seq_len",
    ),
    "real": (
        _real_cost,  # with the dataset's name first (functools.partial in _real)
        "minibatch training, epochs · min(n_train, the stand-in's training rows)/batch_size × lr_ratios × seeds × "
        "(batch_size · max_len + vocab_size) × d_model, per optimizer",
    ),
}


LEMMA1_RESCALING = Schema(
    "sharpening/lemma1_rescaling",
    cost=COSTS["lemma1_rescaling"],
    requires=[
        (
            lambda c: c.d_h <= c.d,
            "d_h ≤ d: balanced factors W_Q = U S Vᵀ, W_K = U' S Vᵀ need d_h orthonormal "
            "columns in R^d (raise d or lower d_h)",
        )
    ],
    d=Param(int, 2, 32, "embedding dimension d (W_QK is d×d)"),
    d_h=Param(int, 1, 32, "head dimension d_h of the factors W_Q, W_K (d×d_h), at most d"),
    n_keys=Param(int, 2, 64, "keys per query T"),
    n_samples=Param(int, 1, 4096, "queries in the fixed batch that defines the loss"),
    init_scale=Param(float, 0.0, 10.0, "largest singular value of the balanced initial factors", lo_open=True),
    lr_qk=Param(float, 0.0, 100.0, "learning rate η_QK of the QK circuit", lo_open=True),
    t_max=Param(float, 0.0, 1e4, "gradient-flow horizon", lo_open=True),
    n_times=Param(int, 2, 5000, "stored times along each trajectory"),
    imbalances=Param(list, 0.0, 10.0, "imbalances δ = q² − k² of the scalar example", item=float, max_len=8),
    rtol=Param(float, 1e-13, 1e-3, "relative tolerance of the ODE solver (absolute: rtol/100)"),
    seed=Param(int, 0, 2**31 - 1, "seed of the task and of the initial factors"),
)

SCALAR_REDUCTION = Schema(
    "sharpening/scalar_reduction",
    cost=COSTS["scalar_reduction"],
    requires=[
        (lambda c: c.d_h >= c.n_classes, "d_h ≥ K (balanced factorized OV init)"),
        _population_fits(lambda c: c.n_common),
    ],
    n_classes=n_classes,
    n_common=n_common,
    n_compete=n_compete,
    lr_ratio=lr_ratio,
    a0=a0,
    b0=b0,
    d_h=Param(int, 1, 256, "head dimension d_h of the factorized circuits (≥ K)"),
    embedding=Param(str, doc="token embedding: one-hot or a random orthogonal matrix", choices=("onehot", "random")),
    parametrizations=parametrizations,
    t_max=Param(float, 0.0, 1e5, "horizon of the full-model gradient flow (model time)", lo_open=True),
    n_times=Param(int, 2, 2000, "stored times along each trajectory"),
    rtol=rtol,
    seed=Param(int, 0, 2**31 - 1, "seed of the random orthogonal embedding"),
)

LINE_THEOREM = Schema(
    "sharpening/line_theorem",
    cost=COSTS["line_theorem"],
    requires=[
        _HORIZON_RULE,
        _population_fits(lambda c: c.n_common),
        (
            lambda c: all(round(c.gd_time / h) >= 1 for h in c.gd_steps),
            "every GD step h takes at least one step in gd_time (round(gd_time/h) ≥ 1)",
        ),
    ],
    **REDUCED_FLOW,
    n_common=n_common,
    gd_lr_ratio=lr_ratio,
    gd_steps=Param(list, 1e-4, 1.0, "step sizes h of discrete GD on the full model", item=float, min_len=2, max_len=8),
    gd_time=Param(float, 0.0, 1e4, "model time T of each GD run (steps = T/h)", lo_open=True),
)

GROWTH_RATES = Schema(
    "sharpening/growth_rates",
    cost=COSTS["growth_rates"],
    requires=[
        _HORIZON_RULE,
        (
            lambda c: c.horizon >= 10 * c.fit_from,
            "horizon ≥ 10·fit_from: the fit window [fit_from, horizon] "
            "must span at least one decade (lower fit_from or raise horizon)",
        ),
    ],
    **REDUCED_FLOW,
    fit_from=Param(
        float, 1.0, 1e300, "start of the fit window [fit_from, horizon] of the growth laws (> 1)", lo_open=True
    ),
)

SHARPENING_MECHANISM = Schema(
    "sharpening/sharpening_mechanism",
    cost=COSTS["sharpening_mechanism"],
    requires=[_HORIZON_RULE, _population_fits(lambda c: c.pop_n_common), _DISTINCT_SEEDS],
    **REDUCED_FLOW,
    matched_prob=Param(
        float, 0.0, 1.0, "correct-class probability s at the matched loss L = −log s", lo_open=True, hi_open=True
    ),
    pop_n_common=Param(int, 1, 6, "M of the full model's exact population (its size grows like M^n)"),
    n_common=n_common,
    seq_len=Param(int, 3, 64, "T of the sampled task (query included)"),
    n_samples=Param(int, 10, 100_000, "N, sampled training sequences of the full model"),
    gd_lr=Param(float, 0.0, 10.0, "GD learning rate η_OV of the sampled run (η_QK = r·η_OV)", lo_open=True),
    init_std=Param(float, 0.0, 10.0, "Gaussian init std × √d of the sampled run", lo_open=True),
    loss_target=Param(float, 0.0, 2.0, "training loss at which the sampled runs are compared", lo_open=True),
    max_steps=Param(int, 1, 100_000, "maximum GD steps of a sampled run"),
    seeds=Param(
        list,
        0,
        2**31 - 1,
        "seeds of the sampled runs: data from seed, Gaussian init from seed + 1",
        item=int,
        max_len=20,
    ),
    device=Param(str, doc="device of the sampled runs", choices=("auto", "cpu", "cuda")),
)

# -- the synthetic experiment pages (spec §7.1, §8.2) -----------------------------------------------
_UNIT = dict(lo=0.0, hi=1.0)
_TASK = dict(
    n_classes=Param(int, 2, 50, "K classes"),
    n_common=Param(int, 1, 500, "M common tokens"),
    seq_len=Param(int, 3, 256, "T, sequence length including the query"),
    n_train=Param(int, 10, 10**6, "N training sequences per seed"),
    n_test=Param(int, 10, 10**6, "held-out sequences per seed (metrics, DTAP)"),
    seeds=Param(list, 0, 2**31 - 1, "data/init seeds", item=int),
    init_scale=Param(float, 0, 100, "init std σ·√d (Gaussian, not balanced)", lo_open=True),
    target_loss=Param(float, 0, 10, "matched training loss L*", lo_open=True),
    attend_self=Param(bool, doc="the query attends to its own position (sets n)"),
    device=Param(str, doc="where to train", choices=("auto", "cpu", "cuda")),
)
_RATIOS = Param(list, 0, 1e4, "learning-rate ratios r = η_QK/η_OV", item=float, lo_open=True)
_MAX_STEPS = Param(int, 1, 10**7, "most optimizer steps per model")

FOUR_PARAMETRIZATIONS = Schema(
    "sharpening/four_parametrizations",
    cost=COSTS["four_parametrizations"],
    requires=[_DISTINCT_SEEDS],
    **_TASK,
    parametrizations=Param(list, doc="parametrizations", item=str, choices=NAMES),
    max_steps=_MAX_STEPS,
    lr=Param(float, 0, 10, "GD step η = η_QK = η_OV", lo_open=True),
    ode_init=Param(float, 0, 10, "a₀ = b₀ of the reduced ODE", lo_open=True),
    record_every=Param(int, 1, 10**6, "steps between recorded points"),
)

DTAP_HEATMAPS = Schema(
    "sharpening/dtap_heatmaps",
    cost=COSTS["dtap_heatmaps"],
    requires=[_DISTINCT_SEEDS],
    **_TASK,
    fafo_ratios=_RATIOS,
    max_steps=_MAX_STEPS,
    lr=Param(float, 0, 10, "GD step η_OV", lo_open=True),
    bins=Param(int, 2, 100, "DTAP bins per axis"),
    tau_attns=Param(list, doc="τ_a of the threshold sweep", item=float, **_UNIT),
)

RATIO_SWEEP = Schema(
    "sharpening/ratio_sweep",
    cost=COSTS["ratio_sweep"],
    **_TASK,
    requires=[
        _DISTINCT_SEEDS,
        (lambda c: all(v > c.target_loss for v in c.checkpoint_losses), "every checkpoint loss > target_loss"),
        (
            lambda c: c.batch_size <= c.n_train or set(c.optimizers) <= {"gd"},
            "batch_size ≤ n_train (minibatches are drawn from the training set)",
        ),
    ],
    parametrization=Param(str, doc="parametrization", choices=NAMES),
    lr_ratios=_RATIOS,
    max_steps=_MAX_STEPS,
    optimizers=Param(list, doc="optimizers", item=str, choices=SYNTHETIC_OPTIMIZERS),
    lr_adamw=Param(float, 0, 1, "AdamW η_OV", lo_open=True),
    lr_sgd=Param(float, 0, 10, "SGD η_OV", lo_open=True),
    lr_gd=Param(float, 0, 10, "full-batch GD η_OV", lo_open=True),
    momentum=Param(float, 0, 0.999, "SGD momentum μ"),
    weight_decay=Param(float, 0, 1, "AdamW decoupled weight decay"),
    checkpoint_losses=Param(list, 0, 10, "loss levels above L* also compared", item=float, lo_open=True, min_len=0),
    batch_size=Param(int, 1, 10**5, "minibatch size"),
    eval_every=Param(int, 1, 10**4, "steps between full training-loss checks"),
    tau_attn=Param(float, doc="AC threshold τ_a", **_UNIT),
    tau_conf=Param(float, doc="ACMC confidence threshold τ_c", **_UNIT),
    k_percents=Param(list, 0, 100, "rationale sizes k% for AOPC", item=float, lo_open=True),
)

WHERE_IT_BREAKS = Schema(
    "sharpening/where_it_breaks",
    cost=COSTS["where_it_breaks"],
    **_TASK,
    requires=[_DISTINCT_SEEDS, (lambda c: c.init_scale in c.init_scales, "init_scale is one of init_scales")],
    init_scales=Param(list, 0, 100, "init scales σ·√d of the grid", item=float, lo_open=True),
    lrs=Param(list, 0, 100, "GD steps η_OV of the grid", item=float, lo_open=True),
    fast_ratio=Param(float, 1, 1e4, "r of the fast-QK FAFO", lo_open=True),
    max_time=Param(float, 0, 1e7, "GD time budget η·steps per model", lo_open=True),
)


# -- the real-data pages (spec §7.2–7.3): one schema per dataset -----------------------------------
def _real(name: str) -> Schema:
    ratios = Param(
        list, 0, 1e4, "learning-rate ratios r = η_QK/η_OV (1 = baseline)", item=float, lo_open=True, min_len=2
    )
    return Schema(
        f"sharpening/real_{name}",
        cost=(functools.partial(COSTS["real"][0], name), COSTS["real"][1]),
        requires=[
            _DISTINCT_SEEDS,
            (lambda c: 1.0 in c.lr_ratios and max(c.lr_ratios) > 1.0, "lr_ratios hold the baseline 1 and some r > 1"),
            (lambda c: len(set(c.optimizers)) == len(c.optimizers), "optimizers are distinct"),
            (
                lambda c: c.batch_size <= c.n_train,
                "batch_size ≤ n_train (a minibatch is drawn from the training subset)",
            ),
        ],
        source=Param(
            str,
            doc="data source: real data when reachable, hub only, or the offline stand-in",
            choices=("auto", "hub", "standin"),
        ),
        n_train=Param(int, 32, 10**7, "training examples (a fixed random subset of the training split)"),
        n_test=Param(int, 32, 10**7, "held-out examples"),
        max_len=Param(int, 4, 1024, "tokens kept per example"),
        vocab_size=Param(int, 16, 10**6, "V, word vocabulary fitted on the training split"),
        d_model=Param(int, 2, 1024, "d, embedding width"),
        d_head=Param(int, 1, 1024, "d_h, head width of the factorized circuits"),
        parametrization=Param(str, doc="QK/OV parametrization (FAFO = a standard head)", choices=NAMES),
        init_scale=Param(float, 0, 10, "circuit init std × √d", lo_open=True),
        lr_ratios=ratios,
        optimizers=Param(list, doc="optimizers", item=str, choices=REAL_OPTIMIZERS, max_len=2),
        lr_adamw=Param(float, 0, 1, "AdamW η_OV (η_QK = r·η_OV)", lo_open=True),
        lr_sgd=Param(float, 0, 10, "SGD η_OV (η_QK = r·η_OV)", lo_open=True),
        momentum=Param(float, 0, 0.999, "SGD momentum μ"),
        weight_decay=Param(float, 0, 1, "AdamW decoupled weight decay"),
        epochs_adamw=Param(float, 0, 1000, "AdamW passes over the training subset", lo_open=True),
        epochs_sgd=Param(float, 0, 1000, "SGD passes over the training subset", lo_open=True),
        batch_size=Param(int, 1, 10**5, "minibatch size"),
        seeds=Param(list, 0, 2**31 - 1, "init seeds (paired across r)", item=int),
        tau_attn=Param(float, 0, 1, "AC threshold τ_a"),
        tau_conf=Param(float, 0, 1, "ACMC confidence threshold τ_c"),
        tau_attns=Param(list, 0, 1, "τ_a of the threshold sweep", item=float),
        device=Param(str, doc="where to train", choices=("auto", "cpu", "cuda")),
    )


REAL_SQUAD, REAL_HATEXPLAIN, REAL_SVA = _real("squad"), _real("hatexplain"), _real("sva")

BY_PAGE = {
    s.key: s
    for s in (
        LEMMA1_RESCALING,
        SCALAR_REDUCTION,
        LINE_THEOREM,
        GROWTH_RATES,
        SHARPENING_MECHANISM,
        FOUR_PARAMETRIZATIONS,
        DTAP_HEATMAPS,
        RATIO_SWEEP,
        WHERE_IT_BREAKS,
        REAL_SQUAD,
        REAL_HATEXPLAIN,
        REAL_SVA,
    )
}
