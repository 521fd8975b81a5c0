"""Finite-sample training against the population run (spec Q7; the finite-sample page, claims B1,
B4, B5, B6, B14): GD on N sampled sequences of length s, over an N- and an s-sweep and several data
seeds, against the same GD on the population loss, all from the same θ(0).

    grid = finite.sweep_grid(n_samples, seq_len)            # the N-sweep at the largest s, the s-sweep at the largest N
    population, sampled = finite.train_sweep(chain, grid, seeds, **train_kw)
    t_drift = finite.drift_time(population, sampled)        # late on plateau 1, before any run's first focus
    rows = finite.summaries(population, sampled, t_drift)   # one RunSummary per run, the population first
    finite.by(rows, N, s); finite.seed_mean(rows, "L1", N=N, s=s); finite.seed_slopes(rows, seeds)

**Wilks' units.** On θ_c¹ a trained model is (to first order) a maximum-likelihood fit of the d − 1
free unigram frequencies to N targets, so 2N times its excess population loss is asymptotically
χ²_{d−1}: :func:`wilks_units` gives the excess in units of (d − 1)/(2N) (mean 1, spread
√(2/(d − 1))), valid where every token has ≥ :data:`MIN_N_PI` expected targets.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from attnflow import device as devices
from attnflow.focus_dilution import stages, training
from attnflow.focus_dilution.chain import MarkovChain

__all__ = [
    "MIN_N_PI",
    "DRIFT_AT",
    "ONSET_DELAY",
    "movements",
    "required_stages",
    "follows",
    "following",
    "focus_then_dilution",
    "negative",
    "RunSummary",
    "sweep_grid",
    "train_sweep",
    "drift_time",
    "summarize",
    "summaries",
    "table",
    "by",
    "seed_mean",
    "loglog_slope",
    "seed_slopes",
    "wilks_units",
    "wilks_spread",
    "wilks_runs",
    "c2_units",
    "ns_values",
    "train_seconds",
]

MIN_N_PI = 20.0  # Wilks' χ² limit needs N π_min ≥ this (≥ 20 expected targets of the rarest token)
DRIFT_AT = 0.9  # the drift is measured at this fraction of the earliest first focus of any run
ONSET_DELAY = 1.0  # B1: a trained run must show a population stage if (1 + this)× its onset is within T
NAN = float("nan")


@dataclass
class RunSummary:
    """One run: its stages and the plateau measurements of the page's table."""

    label: str
    N: float
    s: float
    seed: int
    stages: str  # detected sequence as initials
    t_focus: float
    L1: float  # population loss, median over plateau 1
    L_c2: float  # population loss, median over the plateau after the first dilution (θ_c²)
    L_end: float
    drift: float  # ‖a(t) − a_pop(t)‖ at t_drift, while every run is still on plateau 1
    sigma2_max: float  # largest σ₂(W0) before the first focus


def sweep_grid(n_samples, seq_len) -> list[tuple[int, int]]:
    """The (N, s) runs of a finite-sample sweep: every N at the largest s and every s at the largest
    N (the largest run once), sorted."""
    N_max, s_max = max(n_samples), max(seq_len)
    return sorted({(N, s_max) for N in n_samples} | {(N_max, s) for s in seq_len})


def train_sweep(chain: MarkovChain, grid, seeds, **train_kw) -> tuple[training.TrainRun, dict]:
    """The population run (the same GD on the exact population rows) and one run per (N, s) of
    ``grid`` and data seed (``training.MarkovContexts``), all from the same θ(0) (``train_kw``: the
    keyword arguments of ``training.train_runs``). Runs of equal N train together as one batch,
    single-threaded (bit-for-bit reproducible). Returns (population, {(N, s, seed): run});
    ``train_s`` of the population run's record is not summed here: ``run.wall_s`` is per batch."""
    sampled = {}
    with devices.single_threaded():
        population = training.train_runs(
            [training.RunSpec(chain, training.population_examples(chain), "population")], **train_kw
        )[0]
        for N in sorted({N for N, _ in grid}):
            specs = [
                training.RunSpec(chain, training.MarkovContexts(chain, N, s, seed=sd).examples(), (N, s, sd))
                for (n, s) in grid
                if n == N
                for sd in seeds
            ]
            group = training.train_runs(specs, **train_kw)
            sampled.update({r.label: r for r in group})
    return population, sampled


def train_seconds(population, sampled: dict) -> float:
    """Wall time of a :func:`train_sweep`: the population run and each batch of equal N once."""
    per_batch = {key[0]: r.wall_s for key, r in sampled.items()}
    return float(population.wall_s + sum(per_batch.values()))


def drift_time(population, sampled: dict, at: float = DRIFT_AT) -> float:
    """Where the plateau drift is read: ``at`` × the earliest first focus of any run (the population
    run's or a sampled one's), so that every run is still on plateau 1; the end of the population
    run's plateau 1 when no run focuses."""
    pop = stages.detect_run(population)
    focus = [x.get("focus", 1).start for x in [pop, *(stages.detect_run(r) for r in sampled.values())]]
    focus = [x for x in focus if np.isfinite(x)]
    return float(at * min(focus) if focus else pop.get("plateau", 1).end)


def _level(run, sg) -> float:
    if not np.isfinite(sg.start):
        return NAN
    inside = (run.t >= sg.start) & (run.t <= sg.end)
    return float(np.median(run.quantities["loss"][inside])) if inside.any() else NAN


def _rest_after(detected: stages.Stages, d1: stages.Stage) -> stages.Stage:
    """The θ_c² rest: the plateau of the same cycle that directly follows the first dilution ``d1``, or
    :data:`stages.MISSING` where the next stage is another movement (a run whose attention keeps swinging,
    or escapes, after its first dilution has no θ_c² rest; a plateau after later swings is not θ_c²'s)."""
    if not np.isfinite(d1.start):
        return stages.MISSING
    nxt = [s for s in detected.stages if s.start >= d1.end]
    ok = nxt and nxt[0].name == "plateau" and nxt[0].cycle == d1.cycle
    return nxt[0] if ok else stages.MISSING


def summarize(
    run,
    population,
    label: str,
    N: float,
    s: float,
    seed: int,
    t_drift: float | None = None,
    detected: stages.Stages | None = None,
) -> RunSummary:
    """Stages and plateau measurements of ``run`` against the population run ``population``; the
    drift is taken at ``t_drift`` (default: the end of the population run's first plateau). A stage
    the run does not reach gives NaN, never an error."""
    detected = detected or stages.detect_run(run)
    p1, f1, d1 = detected.get("plateau", 1), detected.get("focus", 1), detected.get("dilution", 1)
    c2 = _rest_after(detected, d1)
    if t_drift is None:
        t_drift = stages.detect_run(population).get("plateau", 1).end
    i_pop = population.at(t_drift) if np.isfinite(t_drift) else 0
    before_focus = run.t <= (f1.start if np.isfinite(f1.start) else run.t[-1])
    drift = np.linalg.norm(run.quantities["amp"][run.at(population.t[i_pop])] - population.quantities["amp"][i_pop])
    return RunSummary(
        label,
        N,
        s,
        seed,
        detected.letters(),
        f1.start,
        _level(run, p1),
        _level(run, c2),
        float(run.quantities["loss"][-1]),
        float(drift),
        float(run.quantities["sigma2"][before_focus].max()),
    )


def summaries(population, sampled: dict, t_drift: float) -> list[RunSummary]:
    """:func:`summarize` of the population run (N = s = ∞, seed −1) and of every sampled run."""
    rows = [summarize(population, population, "population", np.inf, np.inf, -1, t_drift)]
    rows += [
        summarize(r, population, f"N={N}, s={s}, seed {sd}", N, s, sd, t_drift) for (N, s, sd), r in sampled.items()
    ]
    return rows


def table(rows: list[RunSummary]) -> list[dict]:
    """The summaries as table rows (one dict per run)."""
    return [dict(vars(r)) for r in rows]


def by(rows: list[RunSummary], N=None, s=None, Ns=None) -> list[RunSummary]:
    """The sampled runs (population excluded) with this N, s and/or product N·s."""
    return [
        r
        for r in rows
        if np.isfinite(r.N) and (N is None or r.N == N) and (s is None or r.s == s) and (Ns is None or r.N * r.s == Ns)
    ]


def seed_mean(rows: list[RunSummary], field: str, N=None, s=None, Ns=None, minus: float = 0.0) -> float:
    """Mean of ``field`` − ``minus`` over the finite values of the runs :func:`by` selects (NaN if none)."""
    v = np.array([getattr(r, field) - minus for r in by(rows, N, s, Ns)], float)
    v = v[np.isfinite(v)]
    return float(v.mean()) if v.size else NAN


def loglog_slope(x, y) -> float:
    """Least-squares slope of log y against log x over the finite positive y (NaN with < 2 distinct x)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(y) & (y > 0)
    return float(np.polyfit(np.log(x[ok]), np.log(y[ok]), 1)[0]) if len(set(x[ok])) >= 2 else NAN


def seed_slopes(rows: list[RunSummary], seeds) -> list[float]:
    """Per data seed, the log–log slope of the plateau drift against N·s (claim B5)."""
    out = []
    for seed in seeds:
        rs = [r for r in by(rows) if r.seed == seed]
        out.append(loglog_slope([r.N * r.s for r in rs], [r.drift for r in rs]))
    return out


def wilks_units(rows: list[RunSummary], H_pi: float, d: int, pi_min: float = 0.0) -> list[float]:
    """2N(L₁ − H(π))/(d − 1) of every run with a finite plateau-1 level and N π_min ≥ :data:`MIN_N_PI`
    (pass ``pi_min = 0`` to keep every N): Wilks' χ²_{d−1}/(d − 1), mean 1."""
    return [
        2 * r.N * (r.L1 - H_pi) / (d - 1)
        for r in rows
        if np.isfinite(r.N) and np.isfinite(r.L1) and (pi_min == 0.0 or r.N * pi_min >= MIN_N_PI)
    ]


def wilks_spread(d: int) -> float:
    """Standard deviation √(2/(d − 1)) of χ²_{d−1}/(d − 1): the spread of one run's :func:`wilks_units`."""
    return math.sqrt(2 / (d - 1))


def wilks_runs(n_samples, pi_min: float, n_seeds: int) -> int:
    """Planned runs in Wilks' regime: seeds × the values of N with N π_min ≥ :data:`MIN_N_PI`."""
    return n_seeds * sum(N * pi_min >= MIN_N_PI for N in n_samples)


def c2_units(rows: list[RunSummary], L_c2: float, k: int, factor: float) -> list[float]:
    """Claim B14: (L_c2 − L(θ_c²)) / (``factor`` · k/(2N)) of every sampled run of ``rows`` with a θ_c²
    plateau — the distance of its plateau level from the closed form in units of Wilks' excess
    k/(2N) of a fit of k parameters to N samples (mean k/(2N), so a run of the fit lies near
    1/``factor`` in these units)."""
    return [(r.L_c2 - L_c2) / (factor * k / (2 * r.N)) for r in by(rows) if np.isfinite(r.L_c2)]


def ns_values(rows: list[RunSummary]) -> list[float]:
    """The values of N·s of the sampled runs, sorted (each once)."""
    return sorted({r.N * r.s for r in by(rows)})


def movements(seq: str) -> str:
    """A stage sequence (initials) without the plateaus after the first: as in the cycle page's
    order (``stages.CYCLE_ORDER``) only θ_c¹ is a plateau stage; a later plateau is a pause between
    two movements (e.g. at the top of a focus), detected or not as the loss pauses long enough."""
    out, seen = [], False
    for x in seq.split():
        if x == "P" and seen:
            continue
        seen |= x == "P"
        out.append(x)
    return " ".join(out)


def required_stages(detected: stages.Stages, horizon: float, delay: float = ONSET_DELAY) -> str:
    """B1: the population stages (initials, in order, as :func:`movements`) a trained run must
    show: every stage that starts by ``horizon / (1 + delay)``, and at least those up to the
    first focus.

    Finite samples perturb the plateau state (the empirical fit, the drift along the neutral
    directions, the noise that acts like an asymmetry: perturbations 1–3, spec Q7) and so the
    amplitude of the unstable mode the next stage grows from; its onset (the logarithm of that
    amplitude over the growth rate) and the stages after it move by a share of the time spent,
    earlier or later. A population stage is required where a delay of up to ``delay`` × its
    onset still lies within the horizon; the first focus always (a run still on θ_c¹ has followed
    nothing). Decided from the population run alone, before any trained sequence is read."""
    names = [sg.name for sg in detected.stages]
    upto = names.index("focus") + 1 if "focus" in names else 0
    early = sum(sg.start <= horizon / (1 + delay) for sg in detected.stages)
    return movements(stages.letters(names[: max(upto, early)]))


def follows(run_seq: str, population_seq: str, required: str) -> bool:
    """B1 for one run: its movements (:func:`movements`) begin with the ``required`` stages and
    agree in order with the population run's wherever both have stages (it may end earlier, being
    late, or add stages after the population's last, e.g. an escape opened by sampling noise:
    perturbation 3)."""
    run, pop = movements(run_seq), movements(population_seq)
    return run.startswith(required) and (run.startswith(pop) or pop.startswith(run))


def following(rows: list[RunSummary], population: RunSummary, required: str) -> list[bool]:
    """B1 per run of ``rows``: :func:`follows` the population run's sequence."""
    return [follows(r.stages, population.stages, required) for r in rows]


def focus_then_dilution(rows: list[RunSummary]) -> list[bool]:
    """B6 per run: a focus followed by a dilution in its :func:`movements` (a plateau between them is
    a pause at the top of the focus, not compared)."""
    return ["F D" in movements(r.stages) for r in rows]


def negative(values) -> list[bool]:
    """B5 per seed: the slope is negative (a NaN slope is not)."""
    return [bool(x < 0) for x in values]
