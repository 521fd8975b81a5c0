"""The parameter contracts of every focus–dilution page (DESIGN.md principle 5) and the chain they build.

One schema per page: the theory pages (CONDENSATION, UNIGRAM_SADDLE, FOCUS, DILUTION, ESCAPE) and the
training pages (CYCLE, FINITE_SAMPLE, ROBUSTNESS, PCA_TRAJECTORIES), each with its cost estimate
(THEORY_COSTS, COSTS; REAL_TEXT_COST for realtext.SCHEMA; rates in attnflow.costs). Every
rule a page's parameters must satisfy is a rule of its schema, so a bad value stops the run before any
computation (exit 2) with the rule that failed. Every page shares the chain and model parameters
below; ``make_chain(cfg)`` builds the chain, ``is_reference(cfg)`` says whether the spec's regression
targets (claims B12–B17) apply:
they were computed for the §5.2 chain with n = 4, a_h = 0.5, b_h = 0.3, c_cyc = 0.4, m = 8,
c = 1, ε = 10⁻³ and init seed 1; for any other chain a page checks the closed forms against
the flow and reports (not checks) the spec's numbers.
"""

from __future__ import annotations

from attnflow import costs
from attnflow.device import DEVICES
from attnflow.focus_dilution.chain import REFERENCE, ChainError, MarkovChain, dirichlet_chain, hub_family
from attnflow.params import Param, ParameterError, Schema

__all__ = [
    "CONDENSATION",
    "UNIGRAM_SADDLE",
    "FOCUS",
    "DILUTION",
    "ESCAPE",
    "CYCLE",
    "FINITE_SAMPLE",
    "ROBUSTNESS",
    "PCA_TRAJECTORIES",
    "make_chain",
    "is_reference",
    "REFERENCE_MODEL",
    "COSTS",
    "THEORY_COSTS",
    "REAL_TEXT_COST",
    "MAX_TOKENS",
]

MAX_TOKENS = 10**11
"""Most sampled tokens a page may ask for (seeds × N × s): the sampler walks every token (about
10⁸ tokens per second here); the paper profiles use ≤ 3·10¹⁰."""

REFERENCE_MODEL = dict(d_model=8, init_scale=1e-3, score_scale=1.0, seed=1)


def _chain_params(delta_default_doc: str = "asymmetry δ among the low-frequency tokens (0: symmetric)") -> dict:
    return dict(
        chain=Param(
            str,
            doc="chain: 'hub' = the spec's hub + low-frequency family (§5.2); "
            "'dirichlet' = random rows Dirichlet(1) with d = n_low + 1 tokens",
            choices=("hub", "dirichlet"),
        ),
        n_low=Param(int, 2, 12, "n, number of low-frequency tokens (vocabulary d = n + 1)"),
        a_h=Param(float, 0.0, 1.0, "a_h = P(hub → hub), the stickiness of the hub", lo_open=True, hi_open=True),
        b_h=Param(float, 0.0, 1.0, "b_h = P(low → hub) before the asymmetry", lo_open=True, hi_open=True),
        c_cyc=Param(float, 0.0, 1.0, "c_cyc, extra mass on the cyclic successor σ(j) = j mod n + 1", hi_open=True),
        delta=Param(float, 0.0, 1.0, delta_default_doc),
        chain_seed=Param(int, 0, 2**31 - 1, "seed of the Dirichlet chain (chain='dirichlet' only)"),
    )


def _model_params() -> dict:
    return dict(
        d_model=Param(int, 1, 64, "m, embedding width (W0 is d×m)"),
        init_scale=Param(float, 0.0, 0.1, "ε, std of the i.i.d. Gaussian initialization", lo_open=True),
        score_scale=Param(
            float, 0.0, 10.0, "c, score scale (1 in the reference runs, 1/√m likely in the paper)", lo_open=True
        ),
        seed=Param(int, 0, 2**31 - 1, "seed of the initialization (1 in the spec's listing)"),
    )


def make_chain(cfg) -> MarkovChain:
    """The chain a page's parameters describe; a ParameterError names the offending value."""
    try:
        if cfg.chain == "dirichlet":
            return dirichlet_chain(cfg.n_low + 1, seed=cfg.chain_seed)
        return hub_family(cfg.n_low, cfg.a_h, cfg.b_h, cfg.c_cyc, cfg.delta)
    except ChainError as e:
        raise ParameterError(f"the chain parameters do not define a valid chain: {e}") from None


def _valid_chain(cfg) -> bool:
    make_chain(cfg)  # raises a ParameterError with the reason
    return True


def is_reference(cfg, model: bool = True, delta: bool = True) -> bool:
    """True for the spec's reference chain (and, with ``model``, its model and init; with
    ``delta``, δ = 0 — the δ-sweep page checks its own δ values)."""
    keys = {k: v for k, v in REFERENCE.items() if delta or k != "delta"}
    same = cfg.chain == "hub" and all(getattr(cfg, k) == v for k, v in keys.items())
    if model:
        same = same and all(getattr(cfg, k) == v for k, v in REFERENCE_MODEL.items())
    return same


def _schema(key: str, *rules, **extra: Param) -> Schema:
    return Schema(
        f"focus_dilution/{key}",
        requires=[(_valid_chain, "the chain parameters define a valid chain"), *rules],
        **_chain_params(),
        **_model_params(),
        **extra,
    )


def _fit_window_ordered(cfg) -> bool:
    return cfg.fit_window[0] < cfg.fit_window[1]


def _fit_window_in_horizon(cfg) -> bool:
    """fit_window[1]/σ0 ≤ the flow's end max(horizon, 2.5 T₁) (the page extends short horizons)."""
    from attnflow.focus_dilution import closed_forms

    chain = make_chain(cfg)
    t_end = max(cfg.horizon, 2.5 * closed_forms.escape_time_origin(chain, cfg.init_scale))
    return cfg.fit_window[1] <= closed_forms.sigma0(chain) * t_end


CONDENSATION = _schema(
    "condensation",
    horizon=Param(float, 1.0, 1e5, "end time of the flow (extended to 2.5 T₁ = 2.5 log(1/ε)/σ0 if shorter)"),
    fit_window=Param(
        list,
        0.0,
        50.0,
        "window of the growth-rate fit, in units of 1/σ0 (spec: t ∈ [20, 40] ≈ [1.9, 3.8]/σ0)",
        item=float,
        min_len=2,
        max_len=2,
    ),
    euler_dt=Param(float, 1e-3, 0.5, "step of the explicit Euler comparison run (the spec's Δt = 0.05)"),
)
CONDENSATION.requires = CONDENSATION.requires + (
    (_fit_window_ordered, "fit_window[0] < fit_window[1] (the window [t₀, t₁] of the rate fit, in units of 1/σ0)"),
    (
        _fit_window_in_horizon,
        "fit_window[1] ≤ σ0 · max(horizon, 2.5 log(1/ε)/σ0) (the fit window ends within the flow)",
    ),
)

UNIGRAM_SADDLE = _schema(
    "unigram_saddle",
    horizon=Param(
        float,
        10.0,
        1e6,
        "end time of the flow through the θ_c¹ plateau (extended to cover the κ fit window if shorter)",
    ),
    kappa_window=Param(
        list,
        0.0,
        20.0,
        "window of the κ growth-rate fit after condensation, in units of "
        "1/|g| (spec: t ∈ [800, 1300] ≈ t_cond + [2.0, 3.5]/g)",
        item=float,
        min_len=2,
        max_len=2,
    ),
    random_horizon=Param(float, 10.0, 1e5, "end time of the random-chain flow (600 in the spec)"),
    random_d=Param(int, 3, 12, "vocabulary size of the random Dirichlet chain of claim B17 (6 in the spec)"),
    random_seed=Param(int, 0, 2**31 - 1, "seed of the random Dirichlet chain of claim B17 (0 in the spec)"),
)
UNIGRAM_SADDLE.requires = UNIGRAM_SADDLE.requires + (
    (
        lambda cfg: cfg.kappa_window[0] < cfg.kappa_window[1],
        "kappa_window[0] < kappa_window[1] (the window of the κ rate fit, in units of 1/|g| after condensation)",
    ),
)

FOCUS = _schema(
    "focus",
    horizon=Param(float, 10.0, 1e6, "end time of the flow (extended to cover focus if shorter)"),
    a_h_violating=Param(
        float,
        0.0,
        1.0,
        "a_h of the counter-example chain (a_h < b_h: hub not followed by frequent tokens)",
        lo_open=True,
        hi_open=True,
    ),
    b_h_violating=Param(float, 0.0, 1.0, "b_h of the counter-example chain", lo_open=True, hi_open=True),
)


def _family_delta_ok(cfg, deltas) -> bool:
    """Every δ in ``deltas`` keeps the hub family valid (0 < b_h(1 + δξ_j) < 1), or the chain is not the family."""
    if cfg.chain != "hub":
        return True
    from attnflow.focus_dilution.chain import asymmetry_direction, max_delta

    return max(deltas) < max_delta(cfg.b_h, asymmetry_direction(cfg.n_low))


def _family_delta_rule(name: str, many: bool = False):
    def rule(cfg) -> bool:
        value = getattr(cfg, name)
        return _family_delta_ok(cfg, value if many else [value])

    return rule


DILUTION = Schema(
    "focus_dilution/dilution",
    requires=[
        (_valid_chain, "the chain parameters define a valid chain"),
        (
            _family_delta_rule("delta_cycle"),
            "delta_cycle keeps the hub family valid: 0 < b_h (1 + δ ξ_j) < 1 "
            "for every rare token j (δ below chain.max_delta(b_h, ξ))",
        ),
    ],
    **_chain_params(),
    **_model_params(),
    horizon=Param(float, 10.0, 1e6, "end time of the δ = `delta` flow (extended to reach θ_c² if shorter)"),
    delta_cycle=Param(float, 0.0, 1.0, "δ of the run that escapes θ_c² and shows the second cycle", lo_open=True),
    horizon_cycle=Param(float, 100.0, 1e6, "end time of the second-cycle run (10⁴ in the spec)"),
)

ESCAPE = Schema(
    "focus_dilution/escape",
    requires=[
        (_valid_chain, "the chain parameters define a valid chain"),
        (
            lambda c: c.chain == "hub",
            "chain = 'hub': the escape page sweeps the asymmetry δ of the hub family "
            "(spec §5.2); a Dirichlet chain has no δ",
        ),
        (
            _family_delta_rule("deltas", many=True),
            "every δ of deltas keeps the hub family valid: "
            "0 < b_h (1 + δ ξ_j) < 1 for every rare token j (δ below chain.max_delta(b_h, ξ))",
        ),
        (_family_delta_rule("deltas_ls", many=True), "every δ of deltas_ls keeps the hub family valid"),
    ],
    **_chain_params(),
    **_model_params(),
    horizon=Param(float, 100.0, 1e6, "end time of the δ-sweep runs (10⁴ in the spec)"),
    horizon_trapped=Param(float, 100.0, 1e6, "end time of the δ = 0 run that stays trapped (3·10⁴ in the spec)"),
    deltas=Param(list, 0.0, 1.0, "asymmetries δ of the sweep", item=float, lo_open=True, min_len=2, max_len=8),
    deltas_ls=Param(
        list,
        0.0,
        0.2,
        "small δ for the Lyapunov–Schmidt limit M⊥(θ_c²(δ))/δ",
        item=float,
        lo_open=True,
        min_len=2,
        max_len=6,
    ),
)


# -- run-cost estimates of the theory pages (attnflow.costs: population flows to their horizons) -------
def _flow_size(c) -> float:
    """Work of one population flow per unit time relative to the reference (d = 5 tokens, m = 8)."""
    return (c.n_low + 1) * c.d_model / 40.0


def _condensation_cost(c) -> float:
    from attnflow.focus_dilution import closed_forms

    chain = make_chain(c)
    t_end = closed_forms.condensation_horizon(chain, c.horizon, c.init_scale)
    t_euler = c.fit_window[1] / closed_forms.sigma0(chain) + 1.0
    return costs.page(costs.markov_flow_s(t_end, 1, _flow_size(c)), costs.EULER_STEP_S * t_euler / c.euler_dt)


_SADDLE_S = 10.0  # the page's symbolic saddle analysis (d = 3), independent of the parameters (10.5 s measured)

THEORY_COSTS = {
    "condensation": (
        _condensation_cost,
        "the flow to max(horizon, 2.5 T₁) and the Euler run, (fit_window[1]/σ0)/euler_dt steps",
    ),
    "unigram_saddle": (
        lambda c: costs.page(costs.markov_flow_s(2 * c.horizon + c.random_horizon, 3, _flow_size(c)), _SADDLE_S),
        "two flows to horizon, one to random_horizon, the symbolic saddle",
    ),
    "focus": (
        lambda c: costs.page(costs.markov_flow_s(2 * c.horizon, 2, _flow_size(c))),
        "the flows of the chain and of the counter-example to horizon",
    ),
    "dilution": (
        lambda c: costs.page(costs.markov_flow_s(c.horizon + c.horizon_cycle, 2, _flow_size(c))),
        "the flows to horizon and to horizon_cycle",
    ),
    "escape": (
        lambda c: costs.page(
            costs.markov_flow_s(c.horizon_trapped + len(c.deltas) * c.horizon, 1 + len(c.deltas), _flow_size(c)),
            costs.FLOW_RUN_S * len(c.deltas_ls),
        ),
        "the δ = 0 flow to horizon_trapped and len(deltas) flows to horizon",
    ),
}
CONDENSATION.cost = THEORY_COSTS["condensation"]
UNIGRAM_SADDLE.cost = THEORY_COSTS["unigram_saddle"]
FOCUS.cost = THEORY_COSTS["focus"]
DILUTION.cost = THEORY_COSTS["dilution"]
ESCAPE.cost = THEORY_COSTS["escape"]


# ------------------------------------------------------------------------------ page schemas
# Cost estimates of the training pages (attnflow.costs: seconds on 2 shared CPU cores): the flow, the
# sampler walking every token, and batched full-batch GD on the sampled rows.
def _flow_s(c) -> float:
    return costs.markov_flow_s(c.lr * c.steps, 1, _flow_size(c))


def _train_s(c, runs_: int, rows: float, steps: int | None = None) -> float:
    return costs.markov_gd_s(steps or c.steps, runs_, rows, c.n_low + 1, c.d_model)


def _tokens(c) -> float:
    ns, ss = (c.n_samples, c.seq_len) if isinstance(c.n_samples, int) else (sum(c.n_samples), max(c.seq_len))
    return getattr(c, "n_seeds", 1) * ns * ss


def _sample_s(c) -> float:
    return costs.sampled_tokens_s(_tokens(c), c.n_low + 1)


def _cycle_cost(c) -> float:
    return costs.page(_flow_s(c), _sample_s(c), _train_s(c, getattr(c, "n_seeds", 1), c.n_samples))


def _finite_cost(c) -> float:
    runs_ = c.n_seeds * (len(c.n_samples) + len(c.seq_len))
    return costs.page(_flow_s(c), _sample_s(c), _train_s(c, runs_, max(c.n_samples)))


def _robustness_cost(c) -> float:
    runs_ = len(c.init_scales) + len(c.widths) + len(c.deltas) + len(c.a_h_variants)
    return costs.page(
        _sample_s(c),
        _train_s(c, runs_, c.n_low + 1),
        _train_s(c, 1, c.n_low + 1, c.adam_steps),
        _train_s(c, c.n_seeds, c.n_samples),
    )


COSTS = {
    "cycle": (
        _cycle_cost,
        "flow + sampling n_seeds·n_samples·seq_len tokens + GD on n_seeds·n_samples rows, steps steps",
    ),
    "finite_sample": (
        _finite_cost,
        "flow + sampling n_seeds·Σn_samples·max(seq_len) tokens + GD on every (n_samples, seq_len, seed) run, "
        "steps steps",
    ),
    "pca_trajectories": (_cycle_cost, "flow + sampling n_seeds·n_samples·seq_len tokens + GD for steps steps"),
    "robustness": (
        _robustness_cost,
        "the population sweep (init_scales, widths, deltas, a_h_variants) for steps steps, adam_steps of Adam "
        "and n_seeds sampled runs of n_samples·seq_len tokens",
    ),
}


def _real_text_cost(c) -> float:
    windows = c.n_train + c.n_eval / c.record_every  # training windows, and the held-out ones at every record
    return costs.page(len(c.corpora) * costs.realtext_gd_s(c.steps, c.n_seeds, windows, c.vocab_size, c.d_model))


REAL_TEXT_COST = (
    _real_text_cost,
    "full-batch GD, corpora × steps × n_seeds × (n_train + n_eval/record_every) × vocab_size · d_model",
)
"""The real_text page's estimate (``realtext.SCHEMA``, cost=REAL_TEXT_COST)."""


def _make_schema(key: str, requires: list, **params):
    return Schema(f"focus_dilution/{key}", requires=requires, cost=COSTS[key], **params)


def _schema(key: str, *, rules: tuple = (), **extra):
    """A training page's schema: the theory pages' chain and model parameters plus training ones."""
    from attnflow.focus_dilution.training import OPTIMIZERS

    train_params = dict(
        optimizer=Param(
            str,
            doc="optimizer: 'gd' (full-batch gradient descent, the Euler scheme of the flow) or 'adam'",
            choices=OPTIMIZERS,
        ),
        lr=Param(float, 0.0, 100.0, "η, learning rate (GD: flow time per step)", lo_open=True),
        steps=Param(int, 1, 10**7, "training steps (GD reaches flow time η·steps)"),
        record_every=Param(int, 1, 10**5, "record θ and the losses every this many steps"),
        data_seed=Param(int, 0, 2**31 - 1, "seed of the sampled sequences (the first of n_seeds)"),
        device=Param(str, doc="'auto' (CUDA when present), 'cpu' or 'cuda'", choices=DEVICES),
    )
    return _make_schema(
        key,
        [
            (_valid_chain, "the chain parameters define a valid chain"),
            (
                lambda c: c.steps >= 5 * c.record_every,
                "steps ≥ 5 · record_every (the stage detector needs at least 5 stored times after t = 0)",
            ),
            *rules,
        ],
        **_chain_params(),
        **_model_params(),
        **train_params,
        **extra,
    )


def _seeds(default_doc: str = "number of data seeds trained as one batch (≥ 3 for the seed statistics)"):
    return dict(n_seeds=Param(int, 1, 64, default_doc))


_TOKENS_RULE = (
    lambda c: _tokens(c) <= MAX_TOKENS,
    f"n_seeds · N · s ≤ {MAX_TOKENS:.0e} sampled tokens (the sampler walks every token)",
)


def _sizes(**docs):
    return dict(
        n_samples=Param(int, 1, 10**7, docs.get("n_samples", "N, number of training sequences")),
        seq_len=Param(int, 1, 10**6, docs.get("seq_len", "s, context length (tokens before the target)")),
    )


def _sweep_sizes():
    return dict(
        n_samples=Param(list, 1, 10**7, "N values of the sweep (each run at the largest s)", item=int, max_len=6),
        seq_len=Param(list, 1, 10**6, "s values of the sweep (each run at the largest N)", item=int, max_len=6),
    )


def _variants_valid(cfg) -> bool:
    """Every chain variant of the robustness page, (a_h, b_h) from the two lists with the page's δ, is a valid chain."""
    for a_h, b_h in zip(cfg.a_h_variants, cfg.b_h_variants):
        try:
            hub_family(cfg.n_low, a_h, b_h, cfg.c_cyc, cfg.delta)
        except ChainError as e:
            raise ParameterError(f"the chain variant a_h = {a_h:g}, b_h = {b_h:g} is not a valid chain: {e}") from None
    return True


def _robustness_schema():
    return _schema(
        "robustness",
        rules=(
            _TOKENS_RULE,
            (
                lambda c: len(c.a_h_variants) == len(c.b_h_variants),
                "a_h_variants and b_h_variants have the same length (one chain per pair)",
            ),
            (lambda c: 0.0 in c.deltas, "deltas contains 0.0 (the trapped reference)"),
            (lambda c: c.chain == "hub", "chain = 'hub' (the δ and (a_h, b_h) sweeps vary the hub family)"),
            (
                lambda c: c.adam_steps >= 25,
                "adam_steps ≥ 25 (recorded every 5 steps: the detector needs 5 stored times)",
            ),
            (
                _family_delta_rule("deltas", many=True),
                "every δ of deltas keeps the hub family valid: "
                "0 < b_h (1 + δ ξ_j) < 1 for every rare token j (δ below chain.max_delta(b_h, ξ))",
            ),
            (
                _variants_valid,
                "every (a_h_variants[i], b_h_variants[i]) with the page's n_low, c_cyc and δ defines a "
                "valid hub-family chain",
            ),
        ),
        **_sizes(n_samples="N of the finite-sample runs at δ = 0", seq_len="s of the finite-sample runs"),
        **_seeds("number of data seeds of the finite-sample runs at δ = 0 (≥ 3 for the seed statistic)"),
        init_scales=Param(
            list, 0.0, 0.1, "ε values of the init-scale sweep", item=float, lo_open=True, min_len=3, max_len=6
        ),
        widths=Param(list, 1, 64, "widths m of the width sweep", item=int, min_len=2, max_len=6),
        deltas=Param(list, 0.0, 1.0, "asymmetries δ of the δ sweep (include 0)", item=float, min_len=2, max_len=6),
        a_h_variants=Param(
            list,
            0.0,
            1.0,
            "a_h of the chain variants (paired with b_h_variants)",
            item=float,
            lo_open=True,
            hi_open=True,
            max_len=4,
        ),
        b_h_variants=Param(
            list, 0.0, 1.0, "b_h of the chain variants", item=float, lo_open=True, hi_open=True, max_len=4
        ),
        adam_lr=Param(float, 0.0, 1.0, "learning rate of the Adam run", lo_open=True),
        adam_steps=Param(int, 5, 10**6, "steps of the Adam run"),
    )


def _pca_schema():
    return _schema(
        "pca_trajectories",
        rules=(_TOKENS_RULE,),
        **_sizes(),
        **_seeds(),
        n_components=Param(int, 2, 8, "principal components kept (≥ 2 for the PC1–PC2 panels)"),
        centre=Param(bool, doc="centre the embeddings before PCA (False: keep the origin, see pca.py)"),
    )


CYCLE = _schema("cycle", rules=(_TOKENS_RULE,), **_sizes(), **_seeds())
FINITE_SAMPLE = _schema("finite_sample", rules=(_TOKENS_RULE,), **_sweep_sizes(), **_seeds())
ROBUSTNESS = _robustness_schema()
PCA_TRAJECTORIES = _pca_schema()
