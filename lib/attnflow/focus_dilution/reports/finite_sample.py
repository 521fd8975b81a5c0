"""Report of the finite-sample page (spec Q7; claims B1, B4, B5, B6, B14): GD on N sampled
sequences of length s, over an N- and an s-sweep and ``n_seeds`` data seeds, against the same GD
on the population loss and the exact flow, all from the same θ(0).

    rep = finite_sample.measure(cfg)   # cfg: the page's validated parameters (contracts.FINITE_SAMPLE)
    rep.glue(); rep.figures(); rep.check_claims()

**Domains.** B4 (the θ_c¹ plateau of a fit to N samples exceeds H(π) by χ²_{d−1}/(2N)) is
asymptotic: it needs N π_min ≥ 20 and the run's first plateau detected, in ≥ 3 (N, seed) runs.
B14 compares a run's θ_c² plateau with the closed form L(θ_c²) of the symmetric hub chain
(δ = 0); it is measured *on* that plateau (the plateau after the run's own first dilution),
so a run that has already left θ_c² (sampling noise opens the escape, perturbation 3) is
measured where it was on the plateau, and the claim needs the plateau detected in ≥ 3 seeds.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from attnflow import claims, stats
from attnflow.stats import finite_mean
from attnflow.focus_dilution import closed_forms, pagesetup, stages, training
from attnflow.focus_dilution.chain import MarkovChain
from attnflow.focus_dilution.reports.cycle import MAJORITY, check_mean
from attnflow.report import PageReport

__all__ = ["FiniteSampleReport", "RunSummary", "summarize", "measure", "required_stages", "follows", "movements", "MIN_N_PI",
           "WILKS_FACTOR", "ONSET_DELAY"]

MIN_N_PI = 20.0        # B4: Wilks' χ² limit needs N π_min ≥ this (≥ 20 expected targets of the rarest token)
DRIFT_AT = 0.9        # the drift is measured at this fraction of the earliest first focus of any run
ONSET_DELAY = 1.0     # B1: a trained run must show a population stage if (1 + this)× its onset is within T
WILKS_FACTOR = 3.0     # B14: a fit of k = 2d + 1 parameters may miss L(θ_c²) by this many times k/(2N)
NAN = float("nan")


@dataclass
class RunSummary:
    """One run: its stages and the plateau measurements of the page's table."""

    label: str
    N: float
    s: float
    seed: int
    stages: str           # detected sequence as initials
    t_focus: float
    L1: float             # population loss, median over plateau 1
    L_c2: float           # population loss, median over the plateau after the first dilution (θ_c²)
    L_end: float
    drift: float          # ‖a(t) − a_pop(t)‖ at t_drift, while every run is still on plateau 1
    sigma2_max: float     # largest σ₂(W0) before the first focus


def summarize(run, population, label: str, N: float, s: float, seed: int, t_drift: float | None = None,
              detected: stages.Stages | None = None) -> RunSummary:
    """Stages and plateau measurements of ``run`` against the population run ``population``; the
    drift is taken at ``t_drift`` (default: the end of the population run's first plateau)."""
    detected = detected or stages.detect_run(run)
    p1, f1, d1 = detected.get("plateau", 1), detected.get("focus", 1), detected.get("dilution", 1)
    c2 = detected.get("plateau", 1, after=d1.start) if np.isfinite(d1.start) else stages.MISSING
    level = lambda sg: float(np.median(run.quantities["loss"][(run.t >= sg.start) & (run.t <= sg.end)])) \
        if np.isfinite(sg.start) and ((run.t >= sg.start) & (run.t <= sg.end)).any() else NAN  # noqa: E731
    if t_drift is None:
        t_drift = stages.detect_run(population).get("plateau", 1).end
    i_pop = population.at(t_drift) if np.isfinite(t_drift) else 0
    before_focus = run.t <= (f1.start if np.isfinite(f1.start) else run.t[-1])
    drift = np.linalg.norm(run.quantities["amp"][run.at(population.t[i_pop])] - population.quantities["amp"][i_pop])
    return RunSummary(label, N, s, seed, detected.letters(), f1.start, level(p1), level(c2),
                      float(run.quantities["loss"][-1]), float(drift),
                      float(run.quantities["sigma2"][before_focus].max()))


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
    return movements(stages.letters(names[:max(upto, early)]))


def follows(run_seq: str, population_seq: str, required: str) -> bool:
    """B1 for one run: its movements (:func:`movements`) begin with the ``required`` stages and
    agree in order with the population run's wherever both have stages (it may end earlier, being
    late, or add stages after the population's last, e.g. an escape opened by sampling noise:
    perturbation 3)."""
    run, pop = movements(run_seq), movements(population_seq)
    return run.startswith(required) and (run.startswith(pop) or pop.startswith(run))


def _slope(x, y) -> float:
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(y) & (y > 0)
    return float(np.polyfit(np.log(x[ok]), np.log(y[ok]), 1)[0]) if len(set(x[ok])) >= 2 else NAN


@dataclass
class FiniteSampleReport(PageReport):
    lr_used: float
    n_seeds: int
    H_pi: float
    L_c2: float               # closed form (hub chain, δ = 0), nan elsewhere
    s2_pop: float
    s2_short: float
    s_short: int
    s2_long: float
    s_long: int
    excess_small: float       # seed means of L1 − H(π) at the smallest / largest N
    excess_small_pred: float
    excess_large: float
    excess_large_pred: float
    wilks_ratio: float        # mean of 2N(L1 − H(π))/(d − 1) over the N-sweep and seeds (→ 1)
    drift_small: float
    drift_large: float
    drift_slope: float        # mean over seeds
    dt_focus_large: float
    t_drift: float            # time of the drift measurement
    L_end_large: float
    L_c2_large: float         # seed mean of the largest run's θ_c² plateau level
    tol_c2: float
    train_s: float
    flow_s: float
    chain: MarkovChain = field(repr=False, default=None)
    population: object = field(repr=False, default=None)
    population_stages: stages.Stages = field(repr=False, default=None)
    flow: object = field(repr=False, default=None)
    sampled: dict = field(repr=False, default_factory=dict)      # (N, s, seed) -> TrainRun
    rows: list = field(repr=False, default_factory=list)         # RunSummary, population first
    cfg: object = field(repr=False, default=None)

    def by(self, N, s) -> list[RunSummary]:
        return [r for r in self.rows[1:] if (r.N, r.s) == (N, s)]

    def table(self) -> list[dict]:
        return [{k: v for k, v in vars(r).items()} for r in self.rows]

    def figures(self) -> list:
        return [self.sweep_figure()]

    def sweep_figure(self):
        from attnflow import plotting
        from attnflow.plotting import PALETTE

        cfg, N_max, s_max = self.cfg, max(self.cfg.n_samples), max(self.cfg.seq_len)
        seed0 = cfg.data_seed
        fig, ax = plotting.subplots(2, 2, width=4.6, height=2.8, sharex=True)
        sweeps = [("N", sorted({(N, s_max) for N in cfg.n_samples})), ("s", sorted({(N_max, s) for s in cfg.seq_len}))]
        pop = self.population
        for col, (name, keys) in enumerate(sweeps):
            for j, (N, s) in enumerate(keys):
                r = self.sampled[(N, s, seed0)]
                ax[0, col].plot(r.t, r.quantities["loss"], color=PALETTE[j],
                                label=f"N = {N}" if name == "N" else f"s = {s}")
                ax[1, col].plot(r.t, stages.signals(r)["low_hub"], color=PALETTE[j])
            for a, key in ((ax[0, col], "loss"), (ax[1, col], "low_hub")):
                a.plot(pop.t, pop.quantities["loss"] if key == "loss" else stages.signals(pop)["low_hub"], "k--",
                       lw=1.2, label="population (same GD)")
                a.plot(self.flow.t,
                       self.flow.quantities["loss"] if key == "loss" else stages.signals(self.flow)["low_hub"],
                       "k:", lw=1.2, label="population flow")
            ax[0, col].axhline(self.H_pi, color="0.5", lw=0.8)
            lo = np.nanmin([self.L_c2, self.H_pi, float(pop.quantities["loss"].min())]) - 0.01
            ax[0, col].set(title=f"sweep over {name} ({'s' if name == 'N' else 'N'} = {s_max if name == 'N' else N_max})",
                           ylabel="population loss of θ" if col == 0 else "", ylim=(lo, np.log(self.chain.d) + 0.005))
            ax[1, col].set(xlabel="t = η · step", ylabel="low-query attention on hub" if col == 0 else "")
            ax[0, col].legend(fontsize=7)
        fig.suptitle(f"Finite-sample training approaches the population dynamics as N and s grow (data seed {seed0})",
                     y=1.02)
        return fig

    def check_claims(self) -> None:
        cfg, chain = self.cfg, self.chain
        N_max, s_max = max(cfg.n_samples), max(cfg.seq_len)
        d, pi_min = chain.d, float(chain.pi.min())
        z = [2 * r.N * (r.L1 - self.H_pi) / (d - 1) for N in cfg.n_samples for r in self.by(N, s_max)
             if np.isfinite(r.L1) and r.N * pi_min >= MIN_N_PI]
        n_small = sum(N * pi_min < MIN_N_PI for N in cfg.n_samples)
        check_mean("B4", z, target=1.0,
                          tolerance="2N(L₁ − H(π))/(d − 1) ~ χ²_{d−1}/(d − 1), mean 1 (Wilks)",
                          what=f"trained, s={s_max}, N ∈ {sorted(set(cfg.n_samples))}, {cfg.n_seeds} data seeds: "
                               "excess population loss on plateau 1 in units of (d − 1)/(2N)",
                          source="reconstruction",
                          domain=claims.domain(stats.enough_seeds(len(z)),
                                               (f"N π_min ≥ {MIN_N_PI:g} (Wilks' χ² limit)", n_small == 0,
                                                f"{n_small} value(s) of N below")))
        largest = self.by(N_max, s_max)
        pop_c2 = self.rows[0].L_c2
        offset = abs(pop_c2 - self.L_c2) if np.isfinite(pop_c2) else 0.0
        at_c2 = [r for N in cfg.n_samples for r in self.by(N, s_max) if np.isfinite(r.L_c2)]
        units = [(r.L_c2 - self.L_c2) / (WILKS_FACTOR * (2 * d + 1) / (2 * r.N) + offset) for r in at_c2]
        check_mean("B14", units, target=0.0, atol=1.0,
                          tolerance=f"in units of {WILKS_FACTOR:g}·k/(2N) + the population run's own distance, k = 2d + 1 "
                                    "(Wilks): |mean| ≤ 1 + interval",
                          what=f"trained, s={s_max}, every N and seed on its own θ_c² plateau: population loss minus "
                               "L(θ_c²)", source="reconstruction",
                          domain=claims.domain(("hub chain with δ = 0 (closed form of θ_c²)", bool(np.isfinite(self.L_c2)),
                                                f"{cfg.chain}, δ = {cfg.delta:g}"),
                                               ("the population run reached θ_c²", bool(np.isfinite(pop_c2)),
                                                self.rows[0].stages),
                                               (f"a θ_c² plateau detected in at least {stats.MIN_SEEDS} runs",
                                                len(at_c2) >= stats.MIN_SEEDS,
                                                f"{len(at_c2)} of {cfg.n_seeds * len(cfg.n_samples)}")))
        pop_seq = self.rows[0].stages
        seeds = claims.domain(stats.enough_seeds(len(largest)))
        # the stage time-line B1 compares (condensation, plateau, focus, dilution, escape, …) is the hub
        # family's (spec §5.2), as on the cycle page; on a random chain the detector reads many small swings
        timeline = claims.domain(("hub-family chain (spec §5.2: the stage time-line of B1)", cfg.chain == "hub",
                                  cfg.chain))
        horizon = float(self.population.t[-1])
        required = required_stages(self.population_stages, horizon)
        fr = stats.fraction([follows(r.stages, pop_seq, required) for r in largest])
        claims.check("B1", fr.value, predicate=lambda v: v >= MAJORITY - 1e-12,
                     tolerance=f"≥ {MAJORITY:.2f} of the seeds show {required} (the population stages through its "
                               f"first focus and those starting by T/{1 + ONSET_DELAY:g} = {horizon / (1 + ONSET_DELAY):g})"
                               f" and agree in order with {movements(pop_seq)} (of {pop_seq}: plateaus after θ_c¹ are "
                               "pauses) as far as both go (a late run may end earlier; a later escape is perturbation 3)"
                               f"; {fr}",
                     what=f"trained N={N_max}, s={s_max}: share of seeds following the population stages",
                     source="paper", domain=seeds & timeline & claims.domain(("the population run focuses within the "
                                                                              "horizon", "F" in pop_seq, pop_seq)))
        # a plateau between focus and dilution is a pause at the top of the focus (as for B1): not compared
        fr = stats.fraction(["F D" in movements(r.stages) for r in largest])
        claims.check("B6", fr.value, predicate=lambda v: v >= MAJORITY - 1e-12,
                     tolerance=f"≥ {MAJORITY:.2f} of the seeds show a focus followed by a dilution; {fr}",
                     what=f"trained N={N_max}, s={s_max}: share of seeds with focus then dilution", source="paper",
                     domain=seeds & claims.domain(("the population run focuses and dilutes within the horizon",
                                                   "F D" in movements(pop_seq), pop_seq)))
        slopes = self._seed_slopes()
        n_ns = len({r.N * r.s for r in self.rows[1:]})
        fr = stats.fraction([x < 0 for x in slopes])
        claims.check("B5", fr.value, predicate=lambda v: v >= MAJORITY - 1e-12,
                     tolerance=f"≥ {MAJORITY:.2f} of the seeds have a negative slope (the drift shrinks as N·s grows); "
                               f"{fr}; slopes {', '.join(f'{x:.2f}' for x in slopes)}",
                     what="log–log slope of the drift along the neutral directions of θ_c¹ against N·s, per seed",
                     source="reconstruction",
                     domain=claims.domain(stats.enough_seeds(len(slopes)),
                                          ("at least 2 values of N·s", n_ns >= 2, f"{n_ns}")))

    def _seed_slopes(self) -> list[float]:
        out = []
        for seed in pagesetup.data_seeds(self.cfg):
            rs = [r for r in self.rows[1:] if r.seed == seed]
            out.append(_slope([r.N * r.s for r in rs], [r.drift for r in rs]))
        return out



def measure(cfg) -> FiniteSampleReport:
    """Train the population run and every (N, s, seed) run, run the flow, summarise."""
    from attnflow import device

    chain = pagesetup.start_training_page(cfg)
    N_max, s_max = max(cfg.n_samples), max(cfg.seq_len)
    grid = sorted({(N, s_max) for N in cfg.n_samples} | {(N_max, s) for s in cfg.seq_len})
    seeds = pagesetup.data_seeds(cfg)
    kw = pagesetup.train_settings(cfg, dtype="float64")     # float64: compared with the float64 flow
    sampled, train_s = {}, 0.0
    with device.single_threaded():
        population = training.train_runs([training.RunSpec(chain, training.population_examples(chain), "population")],
                                         **kw)[0]
        for N in sorted({N for N, _ in grid}):                   # runs with equal N train together
            specs = [training.RunSpec(chain, training.MarkovContexts(chain, N, s, seed=sd).examples(), (N, s, sd))
                     for (n, s) in grid if n == N for sd in seeds]
            group = training.train_runs(specs, **kw)
            sampled.update({r.label: r for r in group})
            train_s += group[0].wall_s
    flow = pagesetup.page_flow(cfg, chain)
    detected = {key: stages.detect_run(r) for key, r in sampled.items()}
    stages_population = stages.detect_run(population)
    focus = [x.get("focus", 1).start for x in [stages_population, *detected.values()]]
    focus = [x for x in focus if np.isfinite(x)]
    t_drift = DRIFT_AT * min(focus) if focus else stages_population.get("plateau", 1).end  # every run still on plateau 1
    rows = [summarize(population, population, "population", np.inf, np.inf, -1, t_drift, stages_population)]
    rows += [summarize(r, population, f"N={N}, s={s}, seed {sd}", N, s, sd, t_drift, detected[(N, s, sd)])
             for (N, s, sd), r in sampled.items()]
    H_pi = chain.unigram_entropy()
    L_c2 = closed_forms.theta_c2_loss(chain) if cfg.chain == "hub" and cfg.delta == 0 else NAN
    rep = FiniteSampleReport(
        lr_used=cfg.lr, n_seeds=len(seeds), H_pi=H_pi, L_c2=L_c2, s2_pop=rows[0].sigma2_max,
        s2_short=NAN, s_short=min(cfg.seq_len), s2_long=NAN, s_long=s_max, excess_small=NAN,
        excess_small_pred=(chain.d - 1) / (2 * min(cfg.n_samples)), excess_large=NAN,
        excess_large_pred=(chain.d - 1) / (2 * N_max), wilks_ratio=NAN, drift_small=NAN, drift_large=NAN,
        drift_slope=NAN, dt_focus_large=NAN, L_end_large=NAN, L_c2_large=NAN,
        t_drift=float(t_drift), tol_c2=WILKS_FACTOR * (2 * chain.d + 1) / (2 * N_max) + (abs(rows[0].L_c2 - L_c2) if np.isfinite(rows[0].L_c2)
                                                                else 0.0),
        train_s=train_s + population.wall_s, flow_s=flow.wall_s, chain=chain, population=population,
        population_stages=stages_population, flow=flow,
        sampled=sampled, rows=rows, cfg=cfg)
    largest, smallest = rep.by(N_max, s_max), rep.by(min(cfg.n_samples), s_max)
    ns = sorted({r.N * r.s for r in rows[1:]})
    rep.s2_short = finite_mean([r.sigma2_max for r in rep.by(N_max, min(cfg.seq_len))])
    rep.s2_long = finite_mean([r.sigma2_max for r in largest])
    rep.excess_small, rep.excess_large = finite_mean([r.L1 - H_pi for r in smallest]), finite_mean([r.L1 - H_pi for r in largest])
    rep.wilks_ratio = finite_mean([2 * r.N * (r.L1 - H_pi) / (chain.d - 1) for N in cfg.n_samples for r in rep.by(N, s_max)])
    rep.drift_small = finite_mean([r.drift for r in rows[1:] if r.N * r.s == ns[0]])
    rep.drift_large = finite_mean([r.drift for r in rows[1:] if r.N * r.s == ns[-1]])
    rep.drift_slope = finite_mean(rep._seed_slopes())
    rep.dt_focus_large = finite_mean([r.t_focus - rows[0].t_focus for r in largest])
    rep.L_end_large, rep.L_c2_large = finite_mean([r.L_end for r in largest]), finite_mean([r.L_c2 for r in largest])
    return rep
