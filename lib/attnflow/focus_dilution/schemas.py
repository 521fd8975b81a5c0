"""Parameter schemas of the focus–dilution pages (DESIGN.md principle 5) and the chain they build.

Every page shares the chain and model parameters below; ``make_chain(cfg)`` builds the chain,
``is_reference(cfg)`` says whether the spec's regression targets (claims B12–B17) apply:
they were computed for the §5.2 chain with n = 4, a_h = 0.5, b_h = 0.3, c_cyc = 0.4, m = 8,
c = 1, ε = 10⁻³ and init seed 1; for any other chain a page checks the closed forms against
the flow and reports (not checks) the spec's numbers.
"""
from __future__ import annotations

from attnflow.focus_dilution.chain import REFERENCE, ChainError, MarkovChain, dirichlet_chain, hub_family
from attnflow.params import Param, ParameterError, Schema

__all__ = ["CONDENSATION", "UNIGRAM_SADDLE", "FOCUS", "DILUTION", "ESCAPE", "make_chain", "is_reference",
           "start_page", "REFERENCE_MODEL"]

REFERENCE_MODEL = dict(d_model=8, init_scale=1e-3, score_scale=1.0, seed=1)


def _chain_params(delta_default_doc: str = "asymmetry δ among the low-frequency tokens (0: symmetric)") -> dict:
    return dict(
        chain=Param(str, doc="chain: 'hub' = the spec's hub + low-frequency family (§5.2); "
                             "'dirichlet' = random rows Dirichlet(1) with d = n_low + 1 tokens",
                    choices=("hub", "dirichlet")),
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
        score_scale=Param(float, 0.0, 10.0, "c, score scale (1 in the reference runs, 1/√m likely in the paper)",
                          lo_open=True),
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


def start_page(cfg) -> tuple[MarkovChain, bool]:
    """Set-up cell of a theory page: seed everything, the book's plot style, the chain of the
    parameters and whether the spec's reference targets apply; prints the chain and π."""
    import numpy as np

    from attnflow import plotting, seeding

    seeding.seed_everything(cfg.seed)
    plotting.use_style()
    markov, reference = make_chain(cfg), is_reference(cfg)
    print(markov.name, "| π =", np.round(markov.pi, 5), "| reference configuration:", reference)
    return markov, reference


def _valid_chain(cfg) -> bool:
    make_chain(cfg)          # raises a ParameterError with the reason
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
    return Schema(f"focus_dilution/{key}", requires=[(_valid_chain, "the chain parameters define a valid chain"), *rules],
                  **_chain_params(), **_model_params(), **extra)


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
    fit_window=Param(list, 0.0, 50.0, "window of the growth-rate fit, in units of 1/σ0 "
                     "(spec: t ∈ [20, 40] ≈ [1.9, 3.8]/σ0)", item=float, min_len=2, max_len=2),
    euler_dt=Param(float, 1e-3, 0.5, "step of the explicit Euler comparison run (the spec's Δt = 0.05)"),
)
CONDENSATION.requires = CONDENSATION.requires + (
    (_fit_window_ordered, "fit_window[0] < fit_window[1] (the window [t₀, t₁] of the rate fit, in units of 1/σ0)"),
    (_fit_window_in_horizon, "fit_window[1] ≤ σ0 · max(horizon, 2.5 log(1/ε)/σ0) (the fit window ends within the flow)"),
)

UNIGRAM_SADDLE = _schema(
    "unigram_saddle",
    horizon=Param(float, 10.0, 1e6, "end time of the flow through the θ_c¹ plateau (extended to cover "
                  "the κ fit window if shorter)"),
    kappa_window=Param(list, 0.0, 20.0, "window of the κ growth-rate fit after condensation, in units of "
                       "1/|g| (spec: t ∈ [800, 1300] ≈ t_cond + [2.0, 3.5]/g)", item=float, min_len=2, max_len=2),
    random_horizon=Param(float, 10.0, 1e5, "end time of the random-chain flow (600 in the spec)"),
    random_d=Param(int, 3, 12, "vocabulary size of the random Dirichlet chain of claim B17 (6 in the spec)"),
    random_seed=Param(int, 0, 2**31 - 1, "seed of the random Dirichlet chain of claim B17 (0 in the spec)"),
)
UNIGRAM_SADDLE.requires = UNIGRAM_SADDLE.requires + (
    (lambda cfg: cfg.kappa_window[0] < cfg.kappa_window[1],
     "kappa_window[0] < kappa_window[1] (the window of the κ rate fit, in units of 1/|g| after condensation)"),
)

FOCUS = _schema(
    "focus",
    horizon=Param(float, 10.0, 1e6, "end time of the flow (extended to cover focus if shorter)"),
    a_h_violating=Param(float, 0.0, 1.0, "a_h of the counter-example chain (a_h < b_h: hub not followed by "
                        "frequent tokens)", lo_open=True, hi_open=True),
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
    requires=[(_valid_chain, "the chain parameters define a valid chain"),
              (_family_delta_rule("delta_cycle"), "delta_cycle keeps the hub family valid: 0 < b_h (1 + δ ξ_j) < 1 "
                                                   "for every rare token j (δ below chain.max_delta(b_h, ξ))")],
    **_chain_params(), **_model_params(),
    horizon=Param(float, 10.0, 1e6, "end time of the δ = `delta` flow (extended to reach θ_c² if shorter)"),
    delta_cycle=Param(float, 0.0, 1.0, "δ of the run that escapes θ_c² and shows the second cycle", lo_open=True),
    horizon_cycle=Param(float, 100.0, 1e6, "end time of the second-cycle run (10⁴ in the spec)"),
)

ESCAPE = Schema(
    "focus_dilution/escape",
    requires=[(_valid_chain, "the chain parameters define a valid chain"),
              (lambda c: c.chain == "hub", "chain = 'hub': the escape page sweeps the asymmetry δ of the hub family "
                                           "(spec §5.2); a Dirichlet chain has no δ"),
              (_family_delta_rule("deltas", many=True), "every δ of deltas keeps the hub family valid: "
               "0 < b_h (1 + δ ξ_j) < 1 for every rare token j (δ below chain.max_delta(b_h, ξ))"),
              (_family_delta_rule("deltas_ls", many=True), "every δ of deltas_ls keeps the hub family valid")],
    **_chain_params(), **_model_params(),
    horizon=Param(float, 100.0, 1e6, "end time of the δ-sweep runs (10⁴ in the spec)"),
    horizon_trapped=Param(float, 100.0, 1e6, "end time of the δ = 0 run that stays trapped (3·10⁴ in the spec)"),
    deltas=Param(list, 0.0, 1.0, "asymmetries δ of the sweep", item=float, lo_open=True, min_len=2, max_len=8),
    deltas_ls=Param(list, 0.0, 0.2, "small δ for the Lyapunov–Schmidt limit M⊥(θ_c²(δ))/δ", item=float,
                    lo_open=True, min_len=2, max_len=6),
)
