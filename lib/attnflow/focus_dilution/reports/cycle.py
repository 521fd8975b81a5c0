"""Report of the cycle page (spec focus_dilution.md §6 time-line; claims B1, B6, B7, B9, B14).

    rep = cycle.measure(cfg)        # cfg: the page's validated parameters (contracts.CYCLE)
    rep.glue(); rep.figures(); rep.check_claims()

The population flow and ``n_seeds`` runs of full-batch GD on sampled sequences (data seeds
``data_seed``, ``data_seed + 1``, …, one batch), all from the same θ(0); the stage detector reads
every run. Per trained run a :class:`RunMeasures` (NaN where a stage is missing); the claims on
training are statistics over the seeds (``claims.check_mean``, ``stats.fraction``).

**Domains.** The full cycle (condensation → … → escape → focus → dilution) is the theory's
prediction for the hub family (spec §5.2) with δ > 0 (the escape needs the asymmetry, R5), m ≥ 2
(a transverse direction to escape along) and g > 0 (frequency-driven focus, R2); B1's order (the escape
after the first dilution) also needs the transverse level after condensation inside R5's linear
regime (σ₂(W0) ≤ 0.01 there: the escape is a growth from θ_c², not of an O(ε) part already at the
window's top, ε = 0.03: σ₂ ≈ 0.12). The claims on
training compare it with the flow from the same θ(0); they are predicted where the flow itself
completes the cycle within the horizon and GD is a stable discretisation of the flow through its
escape (η λ_max < 2 at the flow's escape). Claims measured on a stage need that stage detected
in at least 3 seeds (its occurrence is B1's claim).

**The flow's B1 is measured past the horizon when needed.** B1 on the flow says that the flow goes
through the full cycle. The theory times the escape (R5) but not the second cycle, whose focus can
be far slower than the first (an atlas chain: focus 1 lasts 100, focus 2 1250 time units, still
running at the horizon 2000). The flow is cheap next to the training, so where the horizon flow is
inside the flow domain (it has left θ_c² by LATE × the horizon) but the detector does not find the
cycle within the horizon, the same flow is integrated again up to ``FLOW_CAP`` × the horizon and
the claim is measured there: the stated cap leaves, after the latest escape the domain allows
(LATE × horizon), 3.2 horizons = 4 × that time for the second focus and dilution. The claim fails
when the cycle is not complete by the cap. The claims on training and their domain ("the flow
completes the cycle within the horizon") keep the flow restricted to the training horizon.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from attnflow import claims, stats
from attnflow.stats import finite_mean
from attnflow.focus_dilution import closed_forms, pagesetup, runs, stages, training
from attnflow.focus_dilution import escape as escape_
from attnflow.focus_dilution.chain import MarkovChain, hub_family
from attnflow.report import PageReport

__all__ = ["CycleReport", "RunMeasures", "run_measures", "measure", "check_mean", "check_fraction", "MAJORITY",
           "WILKS_FACTOR"]

MAJORITY = 2 / 3        # a stage claim on training holds when at least this share of the seeds shows it
WILKS_FACTOR = 3.0      # B14: the θ_c² level may differ from the flow's by this many times k/(2N)
LATE = 0.8              # the flow must have left θ_c² by this fraction of the horizon (room for cycle 2)
LEFT = 0.005            # ... i.e. its loss lies this far below L(θ_c²) of the symmetric chain
FLOW_CAP = 4.0          # B1 on the flow: measured up to this multiple of the horizon when the cycle is unfinished there
NAN = float("nan")


def _assert_some(claim_id: str, values: list, domain: claims.Domain) -> None:
    """Inside its domain a seed statistic has values by construction (the domain counts the seeds
    it runs over); none there is a bug of the report, not an outcome."""
    if not values:
        raise AssertionError(f"claim {claim_id}: no per-seed values inside the domain ({domain.text}); the domain "
                             "must require the seeds the statistic is computed over")


def check_mean(claim_id: str, values, *, domain: claims.Domain, what: str, **kw) -> None:
    """``claims.check_mean`` on ``values`` (the seeds where the measured stage exists). Outside its
    ``domain`` (which counts those seeds) the claim is recorded outside and no statistic is computed,
    so ``values`` may be empty there; inside it they cannot be (asserted)."""
    values = [float(v) for v in values]
    if domain:
        _assert_some(claim_id, values, domain)
    claims.check_mean(claim_id, values, domain=domain, what=what, **kw)


def check_fraction(claim_id: str, flags, *, domain: claims.Domain, what: str, criterion: str,
                   source: str = "paper") -> None:
    """The share of ``flags`` (one per seed that has the measured stage) checked against
    :data:`MAJORITY`. Outside ``domain`` the claim is recorded outside before any statistic is
    computed (the flags of a missing stage are an empty list); inside it they cannot be empty."""
    if not domain:
        claims.outside(claim_id, what=what, domain=domain, source=source)
        return
    flags = [bool(f) for f in flags]
    _assert_some(claim_id, flags, domain)
    fr = stats.fraction(flags)
    claims.check(claim_id, fr.value, predicate=lambda v: v >= MAJORITY - 1e-12,
                 tolerance=f"≥ {MAJORITY:.2f} of the seeds ({criterion}); {fr}", what=what, source=source,
                 domain=domain)


@dataclass
class RunMeasures:
    """The stage measurements of one run (claims B6, B7, B9, B14); NaN where a stage is missing."""

    has_cycle: bool          # the detected sequence contains stages.CYCLE_ORDER
    letters: str             # the detected sequence as initials
    sign_frac: float         # B6: share of ΔA_ik over focus 1 with the sign of ∂κA_ik
    hub_before: float        # hub attention at the start / end of focus 1
    hub_after: float
    gainer: int              # B6: token gaining most attention θ_c¹ → end of dilution 1 (−1: missing)
    da_hub: float            # B7: amplitude change of the hub, θ_c¹ → end of dilution 1
    da_low_max: float        # ... largest amplitude change of a low token
    peak: float              # B7: peak of the low-query hub attention over focus 1 + dilution 1
    after: float             # ... its value at the end of dilution 1
    s2_growth: float         # B9: σ₂(W0) at the horizon / at the end of dilution 1
    n_cycle2: int            # B9: focus/dilution stages of cycle 2
    L_c2: float              # B14: population loss at the end of the θ_c² plateau (after dilution 1)

    @property
    def fall(self) -> float:
        return self.peak - self.after


def _value(run, key_or_array, time: float) -> float:
    y = run.quantities[key_or_array] if isinstance(key_or_array, str) else key_or_array
    return float(y[run.at(time)]) if np.isfinite(time) else NAN


def run_measures(run, detected: stages.Stages, chain: MarkovChain, score_scale: float = 1.0) -> RunMeasures:
    """Measure one run (flow or trained) at the stages ``detected`` in it by the detector."""
    focus1, dil1, plat1 = detected.get("focus", 1), detected.get("dilution", 1), detected.get("plateau", 1)
    plat2 = detected.get("plateau", 1, after=focus1.start) if np.isfinite(focus1.start) else stages.MISSING
    signals = stages.signals(run)
    quantities, hub = run.quantities, chain.hub
    low = np.arange(chain.d) != hub
    sign_frac = hub_before = hub_after = NAN
    if np.isfinite(focus1.start):
        dA = quantities["A"][run.at(focus1.end)] - quantities["A"][run.at(focus1.start)]   # (d, d)
        pred = closed_forms.dkappa_A(chain, score_scale)
        big = np.abs(pred) > 0.01 * np.abs(pred).max()
        sign_frac = float(np.mean(np.sign(dA[big]) == np.sign(pred[big])))
        hub_before, hub_after = _value(run, signals["hub"], focus1.start), _value(run, signals["hub"], focus1.end)
    gainer, da_hub, da_low, peak, after, growth, L_c2 = -1, NAN, NAN, NAN, NAN, NAN, NAN
    if np.isfinite(plat1.end) and np.isfinite(dil1.end):
        i1, i2 = run.at(plat1.end), run.at(dil1.end)                                 # θ_c¹ → end of dilution 1
        gainer = int(np.argmax(chain.pi @ (quantities["A"][i2] - quantities["A"][i1])))  # (d,) attention gained per key
        da = quantities["amp"][i2] - quantities["amp"][i1]
        da_hub, da_low = float(da[hub]), float(da[low].max())
        growth = float(quantities["sigma2"][-1] / quantities["sigma2"][i2])
    if np.isfinite(focus1.start) and np.isfinite(dil1.end):
        sel = (run.t >= focus1.start) & (run.t <= dil1.end)
        peak, after = float(signals["low_hub"][sel].max()), _value(run, signals["low_hub"], dil1.end)
    if np.isfinite(plat2.end):
        L_c2 = _value(run, "loss", plat2.end)
    n2 = len([s for s in detected.stages if s.cycle == 2 and s.name in ("focus", "dilution")])
    return RunMeasures(detected.has_cycle(), detected.letters(), sign_frac, hub_before, hub_after, gainer, da_hub,
                       da_low, peak, after, growth, n2, L_c2)



@dataclass
class CycleReport(PageReport):
    """Everything the cycle page shows; scalar fields are glued under their names."""

    lr_used: float
    horizon: float
    t_unstable: float        # first of the probed flow times with η λ_max ≥ 2 (nan: none)
    lam_max_final: float
    lam_at_escape: float     # η λ_max at the flow's first escape (nan: no escape)
    flow_s: float
    train_s: float
    n_seeds: int
    hub_token: int
    noise_delta: float       # (N π_min)^{-1/2}: the asymmetry sampling noise acts like
    k_eff: int               # rank-one parameters fitted on θ_c² (Wilks)
    tol_c2: float            # B14: WILKS_FACTOR · k/(2N), k/(2N) the Wilks excess of a fit to N samples
    L_c2_flow: float
    L_c2_trained: float      # seed mean
    cycle_frac: float        # share of seeds whose stages contain the full cycle
    # seed means of the per-run measures (glue names of the page's prose)
    b6_sign_frac: float
    b6_hub_before: float
    b6_hub_after: float
    b6_gainer: int           # the token most seeds name (−1: none)
    b7_da_hub: float
    b7_da_low_max: float
    b7_peak: float
    b7_after: float
    b7_peak_flow: float
    b7_after_flow: float
    b9_s2_growth: float
    b9_n_cycle2: float
    flow_cycle_t: float = NAN   # end of the flow B1 is measured on: the horizon, or FLOW_CAP × it (continued)
    chain: MarkovChain = field(repr=False, default=None)
    flow: object = field(repr=False, default=None)
    trained: list = field(repr=False, default_factory=list)
    stages_flow: stages.Stages = field(repr=False, default=None)
    flow_continued: object = field(repr=False, default=None)          # the flow to flow_cycle_t (None: not needed)
    stages_continued: stages.Stages = field(repr=False, default=None)
    stages_trained: list = field(repr=False, default_factory=list)
    per_seed: list = field(repr=False, default_factory=list)         # RunMeasures per trained run
    flow_measures: RunMeasures = field(repr=False, default=None)
    flow_domain: claims.Domain = field(repr=False, default=None)
    train_domain: claims.Domain = field(repr=False, default=None)
    b1_regime: claims.Domain = field(repr=False, default_factory=claims.domain)   # B1 only: R5's regime at θ_c¹
    refs: dict = field(repr=False, default_factory=dict)              # loss levels drawn on the figure
    lam: dict = field(repr=False, default_factory=dict)               # flow time -> η λ_max
    cfg: object = field(repr=False, default=None)

    # ------------------------------------------------------------------ tables and figures
    def stage_rows(self) -> list[dict]:
        rows = [dict(run="flow", **r) for r in self.stages_flow.table()]
        if self.stages_continued is not None:
            rows += [dict(run=f"flow continued to t = {self.flow_cycle_t:g} (B1)", **r)
                     for r in self.stages_continued.table()]
        return rows + [dict(run=f"trained ({run.label})", **r)
                       for run, detected in zip(self.trained, self.stages_trained) for r in detected.table()]

    def seed_rows(self) -> list[dict]:
        return [dict(run=run.label, stages=m.letters, full_cycle=m.has_cycle, sign_frac=m.sign_frac,
                     gainer=m.gainer, da_hub=m.da_hub, da_low_max=m.da_low_max, fall=m.fall, s2_growth=m.s2_growth,
                     L_c2=m.L_c2) for run, m in zip(self.trained, self.per_seed)]

    def figures(self) -> list:
        return [self.loss_figure(), self.zoom_figure()]

    def _columns(self):
        run0 = self.trained[0]
        return [(self.flow, self.stages_flow, "population flow"),
                (run0, self.stages_trained[0],
                 f"trained ({run0.label}): N = {self.cfg.n_samples}, s = {self.cfg.seq_len}")]

    def loss_figure(self):
        from attnflow import plotting
        from attnflow.plotting import PALETTE

        fig, ax = plotting.subplots(1, 2, width=4.6, height=2.9, sharey=True)
        for a, (run, detected, title) in zip(ax[0], self._columns()):
            t = np.maximum(run.t, 1.0)
            trained = run is not self.flow
            a.plot(t, stages.signals(run)["loss"], color="k", label="training loss" if trained else "loss")
            if trained:
                a.plot(t, run.quantities["loss"], color=PALETTE[0], ls="--", lw=1.2, label="population loss of θ")
            for (name, value), ls in zip(self.refs.items(), [":", "-.", "--", (0, (1, 3))]):
                a.axhline(value, color="0.45", ls=ls, lw=0.9, label=name)
            a.set(xscale="log", xlim=(1.0, self.horizon), title=title, xlabel="t (training: η · step)")
            stages.shade(a, detected)
            a.legend(fontsize=7, loc="lower left")
        ax[0, 0].set_ylabel("loss")
        fig.legend(handles=stages.legend_handles(), loc="lower center", ncol=5, bbox_to_anchor=(0.5, -0.1), fontsize=8)
        fig.suptitle("Claim B1: the loss through the stages", y=1.07)
        return fig

    def zoom_figure(self):
        from attnflow import plotting
        from attnflow.plotting import PALETTE

        starts = [detected.get("focus", 1).start for detected in (self.stages_flow, self.stages_trained[0])]
        starts = [x for x in starts if np.isfinite(x)]
        t_zoom = 0.8 * min(starts) if starts else 0.0
        fig, ax = plotting.subplots(3, 2, width=4.6, height=2.3, sharex=True)
        for col, (run, detected, title) in enumerate(self._columns()):
            signals, a = stages.signals(run), ax[:, col]
            a[0].plot(run.t, signals["hub"], color=PALETTE[1], label="all queries")
            a[0].plot(run.t, signals["low_hub"], color=PALETTE[2], ls="--", label="low-frequency queries")
            a[1].plot(run.t, run.quantities["attn_entropy"], color=PALETTE[4])
            a[2].semilogy(run.t, run.quantities["sv_W0"], color=PALETTE[0], lw=1.2)
            a[0].set(title=title)
            a[2].set(xlabel="t (training: η · step)", xlim=(t_zoom, self.horizon))
            for x in a:
                stages.shade(x, detected, labels=x is a[0])
        ax[0, 0].set_ylabel("attention on hub")
        ax[1, 0].set_ylabel("attention entropy")
        ax[2, 0].set_ylabel(r"$\sigma_k(W_0)$")
        ax[0, 0].legend(fontsize=7, loc="center left")
        fig.legend(handles=stages.legend_handles(), loc="lower center", ncol=5, bbox_to_anchor=(0.5, -0.04), fontsize=8)
        fig.suptitle("Claim B1: focus, dilution, escape and the next cycle (B6, B7, B9)", y=1.04)
        return fig

    # ------------------------------------------------------------------ claims
    def _stage_domain(self, name: str, ok: list[bool]) -> claims.Domain:
        n = int(sum(ok))
        return self.train_domain & claims.domain(
            (f"{name} detected in at least {stats.MIN_SEEDS} seeds", n >= stats.MIN_SEEDS, f"{n} of {len(ok)}"))

    def _fraction(self, claim_id: str, flags, what: str, criterion: str, domain: claims.Domain, source="paper"):
        check_fraction(claim_id, flags, domain=domain, what=what, criterion=criterion, source=source)

    def check_claims(self) -> None:
        order = " → ".join(stages.CYCLE_ORDER)
        detected, past = self.stages_flow, ""
        if self.stages_continued is not None:
            detected = self.stages_continued
            past = (f" (the cycle is unfinished at the horizon {self.horizon:g}, {self.stages_flow.letters()}: the flow "
                    f"continued to t = {self.flow_cycle_t:g} = {FLOW_CAP:g} × the horizon)")
        claims.check("B1", detected.names(), predicate=stages.has_subsequence,
                     tolerance="stage sequence contains " + order + (f" by t = {self.flow_cycle_t:g}" if past else ""),
                     what="population flow: detected stages" + past, source="paper",
                     domain=self.flow_domain & self.b1_regime)
        ms, n = self.per_seed, len(self.per_seed)
        tag = f"trained (GD, N={self.cfg.n_samples}, s={self.cfg.seq_len}, {n} data seeds)"
        self._fraction("B1", [m.has_cycle for m in ms], f"{tag}: share of seeds whose stages contain the cycle",
                       "stage sequence contains " + order,
                       self.train_domain & self.b1_regime & claims.domain(stats.enough_seeds(n)))
        # a share cannot exceed 1, so a two-sided |mean − 1| ≤ half-width would pass the more easily the
        # more the seeds disagree; R3 predicts every sign (first order in κ, entries above 1 % of the
        # largest), so each seed either follows it entry by entry or not, and the seeds that do are
        # counted against MAJORITY, as every stage claim on training here (one seed in three may lose it)
        focus = [np.isfinite(m.sign_frac) for m in ms]
        self._fraction("B6", [m.sign_frac >= 1.0 for m in ms if np.isfinite(m.sign_frac)],
                       f"{tag}, first focus: share of seeds whose every ΔA_ik has the sign of ∂κA_ik",
                       "every entry with |∂κA_ik| above 1 % of the largest has its sign; shares per seed "
                       + ", ".join(f"{m.sign_frac:.3g}" for m in ms if np.isfinite(m.sign_frac)),
                       self._stage_domain("first focus", focus), source="reconstruction")
        through = [m.gainer >= 0 for m in ms]
        self._fraction("B6", [m.gainer == self.hub_token for m in ms if m.gainer >= 0],
                       f"{tag}: share of seeds whose most-gaining token θ_c¹ → end of dilution 1 is the hub",
                       "the most frequent token gains (frequency-driven focus)",
                       self._stage_domain("plateau 1 and dilution 1", through))
        self._fraction("B7", [m.da_hub > 0 > m.da_low_max for m in ms if m.gainer >= 0],
                       f"{tag}: share of seeds with Δa_hub > 0 > every Δa_low from θ_c¹ to the end of dilution 1",
                       "mass redistribution", self._stage_domain("plateau 1 and dilution 1", through))
        falls = [m.fall for m in ms if np.isfinite(m.fall)]
        check_mean("B7", falls, above=0.01, tolerance="the detector's min_swing: a fall, not a wiggle",
                          what=f"{tag}: fall of the low-query hub attention from its peak to the end of dilution 1",
                          source="paper", domain=self._stage_domain("focus 1 and dilution 1", [np.isfinite(x) for x in
                                                                                                 [m.fall for m in ms]]))
        L = [m.L_c2 for m in ms if np.isfinite(m.L_c2)]
        check_mean("B14", L, target=self.L_c2_flow, atol=self.tol_c2,
                          tolerance=f"atol = {WILKS_FACTOR:g} k/(2N), k = {self.k_eff} rank-one parameters (Wilks)",
                          what=f"{tag}: population loss at the end of the θ_c² plateau", source="reconstruction",
                          domain=self._stage_domain("the θ_c² plateau", [np.isfinite(m.L_c2) for m in ms])
                          & claims.domain(("the flow's θ_c² plateau detected", bool(np.isfinite(self.L_c2_flow)),
                                           f"L = {self.L_c2_flow:.5f}")))
        growth = [np.log10(m.s2_growth) for m in ms if np.isfinite(m.s2_growth)]
        check_mean("B9", growth, above=1.0, tolerance="σ₂(W0) grows ≥ 10× from the end of dilution 1 to the horizon",
                          what=f"{tag}: log10 growth of σ₂(W0) after the first dilution (a new direction)",
                          source="paper", domain=self._stage_domain("dilution 1", [np.isfinite(m.s2_growth) for m in ms]))
        self._fraction("B9", [m.n_cycle2 >= 2 for m in ms], f"{tag}: share of seeds with a focus and a dilution "
                       "after the escape (cycle 2)", "≥ 2 stages of cycle 2",
                       self.train_domain & claims.domain(stats.enough_seeds(n)))


def _mode(values: list[int]) -> int:
    values = [v for v in values if v >= 0]
    return int(max(set(values), key=values.count)) if values else -1


def measure(cfg) -> CycleReport:
    """Run the page: the flow, the seeds' training, the stages and every measurement."""
    chain = pagesetup.start_training_page(cfg)
    horizon = cfg.lr * cfg.steps
    flow = pagesetup.page_flow(cfg, chain)
    stages_flow = stages.detect_run(flow)
    lam_times = np.linspace(0.2 * horizon, horizon, 5)
    escape = stages_flow.get("escape")
    probe = np.append(lam_times, escape.start) if np.isfinite(escape.start) else lam_times
    lam_max = training.sharpness(flow, probe)
    unstable = lam_times[cfg.lr * lam_max[:5] >= 2]
    lam_esc = float(cfg.lr * lam_max[5]) if np.isfinite(escape.start) else NAN
    g = closed_forms.g_rate(chain, cfg.score_scale)
    # B1's sequence opens with the focus R2 times; a chain whose focus is due after the horizon leaves θ_c¹
    # (if at all) by slower, neutral-direction drift first (seen: an escape at t = 880, focus due at 5187)
    t_focus_due = closed_forms.plateau_time(chain, cfg.init_scale, cfg.score_scale)
    L_c2_sym = (closed_forms.theta_c2_loss(hub_family(cfg.n_low, cfg.a_h, cfg.b_h, cfg.c_cyc, 0.0))
                if cfg.chain == "hub" else NAN)
    L_late = float(flow.quantities["loss"][flow.at(LATE * horizon)])
    # B1's order puts the escape after the first dilution: R5's growth of σ₂(W0) from θ_c², through the window
    # [0.01, 0.1], out of the O(ε) transverse level that condensation leaves untouched. Where that level is already
    # above the window (ε = 0.03: σ₂ ≈ 0.12 after condensation) the tenfold rise starts at or before the first
    # focus (sweep: hub n = 3, a_h = 0.68, t = 229 vs focus 233; n = 4, a_h = 0.66: two seeds from t = 300 and 370,
    # inside focus 1 or a focus that runs through it), and the detector's order is not the theory's
    t_cond = float(stages_flow.stages[0].end)
    s2_cond = float(flow.quantities["sigma2"][flow.at(t_cond)])
    flow_domain = claims.domain(
        ("hub-family chain (spec §5.2)", cfg.chain == "hub", cfg.chain),
        ("δ > 0 (the escape needs an asymmetry, R5)", cfg.delta > 0, f"δ = {cfg.delta:g}"),
        ("m ≥ 2 (a transverse direction)", cfg.d_model >= 2, f"m = {cfg.d_model}"),
        ("g > 0 (frequency-driven focus, R2)", g > 0, f"g = {g:.3g}"),
        ("the first focus is due within the horizon: R2's end of the θ_c¹ plateau T₁ + log(1/ε²)/(2|g|) ≤ the horizon",
         bool(t_focus_due <= horizon), f"{t_focus_due:.0f} vs {horizon:g}"),
        (f"the flow has left θ_c² by {LATE:g} × the horizon (time for the next cycle): L < L(θ_c², δ = 0) − {LEFT:g}",
         bool(L_late < L_c2_sym - LEFT), f"L = {L_late:.4f}, L(θ_c²) = {L_c2_sym:.4f}"))
    b1_regime = claims.domain(
        (f"the escape starts from θ_c² in R5's linear regime: σ₂(W0) ≤ {escape_.WINDOW[0]:g} at the end of condensation "
         "(the untouched transverse level, frozen until the escape)", bool(s2_cond <= escape_.WINDOW[0]),
         f"σ₂ = {s2_cond:.2g} at t = {t_cond:.0f}"))
    train_domain = flow_domain & claims.domain(
        ("the flow from the same θ(0) completes the cycle within the horizon", stages_flow.has_cycle(),
         stages_flow.letters()),
        ("GD stable through the flow's escape: η λ_max < 2 there", bool(lam_esc < 2), f"η λ_max = {lam_esc:.3g}"))
    flow_continued = stages_continued = None
    if flow_domain & b1_regime and not stages_flow.has_cycle():     # B1 on the flow: the same flow, up to the stated cap
        flow_continued = runs.population_flow(chain, d_model=cfg.d_model, init_scale=cfg.init_scale, seed=cfg.seed,
                                              score_scale=cfg.score_scale, t_eval=runs.time_grid(FLOW_CAP * horizon))
        stages_continued = stages.detect_run(flow_continued)
    trained = pagesetup.trained_runs(cfg, chain, dtype="float32")
    stages_trained = [stages.detect_run(r) for r in trained]
    per_seed = [run_measures(r, detected, chain, cfg.score_scale) for r, detected in zip(trained, stages_trained)]
    flow_measures = run_measures(flow, stages_flow, chain, cfg.score_scale)
    flow_plat2 = stages_flow.get("plateau", 1, after=stages_flow.get("focus", 1).start)
    L_c2_flow = float(flow_plat2.level) if np.isfinite(flow_plat2.start) else NAN
    refs = {r"$\log d$": np.log(chain.d), r"$H(\pi)$": chain.unigram_entropy(), "bigram optimum": chain.bigram_loss()}
    if cfg.chain == "hub":
        refs[r"$L(\theta_c^2)$, $\delta=0$"] = L_c2_sym
    k = 2 * chain.d + 1
    mean = lambda key: finite_mean([getattr(m, key) for m in per_seed])  # noqa: E731
    return CycleReport(
        lr_used=cfg.lr, horizon=horizon, t_unstable=float(unstable[0]) if len(unstable) else NAN,
        lam_max_final=float(lam_max[4]), lam_at_escape=lam_esc, flow_s=flow.wall_s, train_s=trained[0].wall_s,
        n_seeds=len(trained), hub_token=chain.hub, noise_delta=float(1 / np.sqrt(cfg.n_samples * chain.pi.min())),
        k_eff=k, tol_c2=WILKS_FACTOR * k / (2 * cfg.n_samples),
        L_c2_flow=L_c2_flow, L_c2_trained=mean("L_c2"), cycle_frac=float(np.mean([m.has_cycle for m in per_seed])),
        b6_sign_frac=mean("sign_frac"), b6_hub_before=mean("hub_before"), b6_hub_after=mean("hub_after"),
        b6_gainer=_mode([m.gainer for m in per_seed]), b7_da_hub=mean("da_hub"), b7_da_low_max=mean("da_low_max"),
        b7_peak=mean("peak"), b7_after=mean("after"), b7_peak_flow=flow_measures.peak,
        b7_after_flow=flow_measures.after,
        b9_s2_growth=mean("s2_growth"), b9_n_cycle2=float(np.mean([m.n_cycle2 for m in per_seed])),
        flow_cycle_t=float(flow_continued.t[-1]) if flow_continued is not None else horizon,
        chain=chain, flow=flow, trained=trained, stages_flow=stages_flow, stages_trained=stages_trained,
        flow_continued=flow_continued, stages_continued=stages_continued,
        per_seed=per_seed,
        flow_measures=flow_measures, flow_domain=flow_domain, train_domain=train_domain, b1_regime=b1_regime, refs=refs,
        lam=dict(zip(np.round(lam_times).astype(int).tolist(), np.round(cfg.lr * lam_max[:5], 2).tolist())), cfg=cfg)
