"""Run-cost estimates of the pages, in seconds on this project's 2 shared CPU cores.

Each page's schema carries ``cost=(estimate(cfg), "what it counts")`` (:class:`attnflow.params.Schema`);
``params.validate`` refuses an estimate above ``params.COST_REFUSE_S`` unless forced and warns above
``params.COST_WARN_S``. An estimate is :data:`PAGE_S` (what ``attnflow run`` spends on a page that computes
almost nothing) plus the page's dominant work, counted from its parameters with the per-unit rates below.
The rates were measured on the project's 2-core machine, shared (load average 2–7), from whole
``attnflow run`` wall times (``/usr/bin/time``) at the book defaults and at one scaled point per page,
December 2026 (issue 26); ``tests/test_costs.py`` holds the per-page reference times. They are
rates of that machine, which ran the same page 2–4× faster at load average 2 than at 4–6 (the other
agents' work), so an estimate is good to a factor of about 2–3, enough to warn before a run of hours —
not a benchmark. Where both were measured, a rate is the geometric middle. The estimates are upper
bounds where a run may stop early (models that reach the target loss stop; the estimate counts every
step allowed).
"""

from __future__ import annotations

import math

PAGE_S = 15.0
"""Seconds of a page run that computes almost nothing: CLI pre-validation, kernel start, imports,
figures (measured wall: 12–20 s for lemma1_rescaling, condensation, focus, growth_rates at book defaults
and at 10× their horizons)."""

# -- per-unit rates (seconds); see the module docstring for how they were measured -------------------
STACKED_STEP_S = 5e-3
"""Sharpening synthetic pages (``experiments.run``): per optimizer step of the stacked models, plus ..."""
STACKED_MODEL_STEP_S = 4e-5
"""... this per model and step, plus ..."""
STACKED_ENTRY_S = ((1.6e5, 5.2e-9), (1.28e6, 1.1e-8))
"""... plus this per model × step × row × position, at (models × rows, rate) points: the rate grows when
the stacked rows leave the caches, interpolated in log between the points and held beyond them (no
measurement further out). Fitted on four_parametrizations (20 models, 1814 steps of 2000 rows: 14.9 s of
GD; 1820 steps of 8000 rows: 28.6 s; 400 steps of 64000 rows: 67.4 s, load 4.5) and where_it_breaks
(180 models, 2000 steps: 31.9 s)."""
SEPARATE_STEP_S = 8e-5
"""Overhead of one step of a sharpening model trained alone (sharpening_mechanism's sampled runs:
12 runs of at most 6000 steps in 12.0 s at load ≈ 4, 3.1 s at load ≈ 2)."""
EVAL_ENTRY_S = 2.6e-6
"""Held-out evaluation with AOPC at a loss level: per model × held-out sequence × position × (1 + rationale
sizes) (ratio_sweep: 2 optimizers × 3 levels × 12 models in 13.5 s, × 36 models in 40.1 s)."""
STEPS_TO_TARGET = {"adamw": 0.33, "sgd": 19.2, "gd": 181.0}
"""Steps × effective step (η_OV; SGD: 0.1 η_OV/(1 − μ), which is η_OV at μ = 0.9) that a synthetic
model took to reach the matched loss at the book defaults (ratio_sweep: AdamW 330 steps at η 0.001,
SGD 960 at 0.02 with μ 0.9; four_parametrizations: GD 1814 at 0.1)."""
POPULATION_ENTRY_S = 9e-7
"""Sharpening exact population (line theorem GD, scalar reduction flow): per step × composition × position
(line_theorem: 3000 GD steps on 275 compositions of 11 positions in 12.9 s and 12000 in 48.2 s at load
≈ 3.5; 3000 in 5.2 s and 4050 in 8.5 s at load ≈ 2: the geometric middle)."""
POPULATION_RHS_PER_DECADE = 80.0
"""Right-hand sides of an exact-population gradient flow (LSODA) per decade of its horizon
(scalar_reduction: 4 flows to t = 1600 in 4.0 s; the adaptive steps grow as the flow settles)."""
REDUCED_RUN_S = 0.05
"""One reduced (a, b) ODE run (LSODA), per decade of its horizon."""
FLOW_RUN_S = 2.0
"""One focus–dilution population flow (BDF): a fixed part (escape: 4 flows to t = 10⁴ in 8.7 s) ..."""
FLOW_TIME_S = 1.0e-4
"""... plus this per unit of flow time (the adaptive steps grow once the flow settles: focus at 8× its
horizon ran 4 s longer, dilution at 4× its horizon_cycle no longer)."""
EULER_STEP_S = 1e-3
"""One explicit Euler step of the population loss (condensation's comparison run)."""
TOKEN_S = 5.6e-9
"""The Markov sampler: per sampled token and token type. This and the two GD rates below are a
least-squares fit of the cycle (19.2 s), finite_sample (32.6 s) and robustness (16.7 s) training cells."""
MARKOV_STEP_S = 1e-3
"""Focus–dilution GD on sampled data: per step ..."""
MARKOV_ENTRY_S = 2.1e-8
"""... plus this per step × (run, row, token type) entry and 8 embedding columns."""
REALTEXT_STEP_S = 4e-3
"""real_text: per full-batch GD step of a corpus, what does not grow with the windows (the Markov runs on the
chain's d population rows, the update, the records) ..."""
REALTEXT_ENTRY_S = 1e-9
"""... plus this per step × real run × window × vocabulary · width: the fused loss's wide pass
(``fused.wide``) measured 5.1e-10 s per entry at real_text's paper size (benchmarks/bench_markov_step.py
--real-text: 201 ms a step for 3 × 16,163 windows, d 256, m 32, one thread, load ≈ 4), doubled for the
held-out measures of the recorded states and the load (book defaults: 65.1 s measured, 55 s estimated)."""
MINIBATCH_ENTRY_S = 1.0e-8
"""Real-data minibatch training: per step × model × (batch × length + vocabulary) × width (real_sva: the
experiment cell 11.9 s at the book defaults; 4× the epochs: 109.4 s wall, 47.6 s CPU at load 3.4)."""


def page(*work_s: float) -> float:
    """The estimate of a page: :data:`PAGE_S` plus its parts of work (seconds)."""
    return PAGE_S + float(sum(work_s))


def stacked_gd_s(
    steps: float, models: float, rows: float, seq_len: float, *, model_steps: float | None = None, separate=False
) -> float:
    """GD of ``models`` stacked sharpening models for ``steps`` steps on ``rows`` sequences of ``seq_len``
    positions; ``model_steps``: the steps summed over models when they stop at different steps (default
    steps × models); ``separate``: the models run one after another (each step pays the overhead)."""
    model_steps = steps * models if model_steps is None else model_steps
    if separate:
        overhead = SEPARATE_STEP_S * model_steps
    else:
        overhead = STACKED_STEP_S * steps + STACKED_MODEL_STEP_S * model_steps
    return overhead + _entry_rate(model_steps / max(steps, 1.0) * rows) * model_steps * rows * seq_len


def _entry_rate(model_rows: float) -> float:
    """:data:`STACKED_ENTRY_S` at ``model_rows`` stacked rows."""
    (x0, r0), (x1, r1) = STACKED_ENTRY_S
    w = min(1.0, max(0.0, math.log(max(model_rows, 1.0) / x0) / math.log(x1 / x0)))
    return r0 * (r1 / r0) ** w


def evaluation_s(models: float, rows: float, seq_len: float, k_sizes: int = 0) -> float:
    """Held-out metrics of ``models`` models at one loss level (AOPC over ``k_sizes`` rationale sizes)."""
    return EVAL_ENTRY_S * models * rows * seq_len * (1 + k_sizes)


def steps_to_target(optimizer: str, lr: float, max_steps: int, momentum: float = 0.0) -> float:
    """Forecast steps of a synthetic model to the matched loss: :data:`STEPS_TO_TARGET` / η (SGD: the
    effective step η/(1 − μ), scaled to μ = 0.9), at most ``max_steps``."""
    eff = lr / (1.0 - momentum) * 0.1 if optimizer == "sgd" else lr
    return min(float(max_steps), STEPS_TO_TARGET[optimizer] / eff)


def population_gd_s(steps: float, compositions: float, seq_len: float, runs: float = 1) -> float:
    """GD steps (or flow right-hand sides) on an exact population of ``compositions`` sequences."""
    return POPULATION_ENTRY_S * steps * compositions * seq_len * runs


def population_flow_s(horizon: float, compositions: float, seq_len: float, runs: float = 1) -> float:
    """``runs`` gradient flows of an exact population of ``compositions`` sequences to ``horizon``."""
    rhs = POPULATION_RHS_PER_DECADE * max(1.0, math.log10(max(horizon, 1.0)))
    return population_gd_s(rhs, compositions, seq_len, runs)


def reduced_ode_s(runs: float, horizon: float) -> float:
    """``runs`` reduced (a, b) ODE integrations to ``horizon`` (the stiff solver's steps grow with log t)."""
    return REDUCED_RUN_S * runs * max(1.0, math.log10(max(horizon, 1.0)))


def markov_flow_s(time: float, runs: float = 1, size: float = 1.0) -> float:
    """``runs`` focus–dilution population flows of total flow time ``time``; ``size``: the work per unit
    time relative to the reference model (d = 5 tokens, m = 8: 1)."""
    return size * (runs * FLOW_RUN_S + FLOW_TIME_S * time)


def sampled_tokens_s(tokens: float, vocab: int) -> float:
    """Sampling ``tokens`` tokens of a chain with ``vocab`` token types."""
    return TOKEN_S * tokens * vocab


def markov_gd_s(steps: float, runs: float, rows: float, vocab: int, width: int = 8) -> float:
    """Full-batch GD of ``runs`` batched focus–dilution models on ``rows`` sampled rows."""
    return steps * (MARKOV_STEP_S + MARKOV_ENTRY_S * runs * rows * vocab * max(1, width // 8))


def minibatch_s(steps: float, models: float, batch: float, length: float, vocab: float, width: float) -> float:
    """Minibatch training of ``models`` stacked real-data heads (the optimizer touches the whole embedding)."""
    return MINIBATCH_ENTRY_S * steps * models * (batch * length + vocab) * width


def realtext_gd_s(steps: float, runs: float, rows: float, vocab: float, width: float) -> float:
    """Full-batch GD of ``runs`` batched one-layer models on ``rows`` windows (in counts form: the context
    length does not enter) of a ``vocab``-token vocabulary, width ``width``, with their Markov runs."""
    return steps * (REALTEXT_STEP_S + REALTEXT_ENTRY_S * runs * rows * vocab * width)
