"""Report of the dilution page (spec focus_dilution.md R4; claims B7, B14).

    rep = dilution.measure(cfg)     # cfg: the page's validated parameters (contracts.DILUTION)
    rep.glue(); rep.figures(); rep.check_claims()

Three measurements: the next-order drive v = −∂_κ∇_aL₁ at θ_c¹ (autograd), the exact flow of the
page's chain through focus and redistribution to its end point (θ_c² for the symmetric family), and
a run with asymmetry ``delta_cycle`` that escapes θ_c² and shows the second focus–dilution cycle.

**Domains** (found by running the page on random hub-family and Dirichlet chains; see the page):

* the sign statements of R4 (v and the amplitudes: the frequent token up, the rare ones down) are
  made for the hub family with focus *on* the hub, g > 0 (one frequent token and n rare ones);
* "the flow has reached its end point" needs the symmetric family (δ = 0: θ_c² traps the flow for
  ever; for δ > 0 or a Dirichlet chain the end of the run is not a critical point);
* "the rare queries' attention to the hub ends below π_hub" needs the rare amplitudes to change sign,
  and by enough to be resolved at the margin: to first order (the tilt of B6 at the end state,
  A_jk − π_k ≈ cκ π_k a_j(a_k − πᵀa)), the mean rare query's attention to the hub ends at
  d = cκ π_hub ā_low (a_hub − πᵀa) from π_hub; the claim needs d ≤ −``DIP_FACTOR`` × ``FOCUS_MARGIN`` (the
  factor leaves half of the predicted dip to the higher orders). Atlas (errata): n = 3, a_h = 0.523,
  b_h = 0.424, c_cyc = 0.469, init seed 402722 ended with ā_low = −0.0018, d = −3.2·10⁻⁴ (measured
  −3.2·10⁻⁴): the amplitudes barely crossed zero; the spec's chain has d = −0.027 (measured −0.0265);
* the fall from the peak ("dilution") is checked on every hub chain with g > 0 that ends on θ_c². Where
  the rare amplitudes change sign it follows from the focus and the sign change; where they keep it,
  the first-order attention cκ π_hub ā_low(a_hub − πᵀa) falls only if ā_low falls faster than κ rises
  late in the run, which R4 does not decide. Three hub chains whose rare amplitudes keep their sign
  fall by less than the margin (1.8·10⁻⁴, 4.6·10⁻⁴, 7.6·10⁻⁵ at 2|g|/σ0 = 0.25, 0.007, 0.24): a finding
  of the errata ("Findings of the atlas sweep"), kept failing, not a domain condition;
* the second-cycle statements need the escape (σ₂(W0) > 0.1) within ``horizon_cycle``, the second
  cycle to start from θ_c²(δ) — the stage detector (``stages.detect_run``) puts a plateau after the
  first focus right before the escape, so the first cycle ended before σ₂ grew (at δ = 0.4 on the atlas
  chain n = 3 above σ₂ grew during the first focus: no θ_c²(δ) plateau, the hub attention at the escape
  was still that of the first cycle and its "rise after the escape" is 0) — and the second cycle to
  have run its course: the loss at ``horizon_cycle`` within 1 % of the gap L(escape) − bigram of the
  bigram optimum (otherwise the run stops in the middle of a stage). Each is read off the loss, σ₂ and
  the stages up to the escape, not off the swings it gates.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnflow import claims
from attnflow.focus_dilution import closed_forms, measure as fmeasure, model, runs, spectrum, stages, symbolic
from attnflow.focus_dilution.chain import MarkovChain, hub_family
from attnflow.focus_dilution.contracts import is_reference, make_chain
from attnflow.focus_dilution.targets import EULER_CYCLE, EULER_T3000, SPEC, half_unit
from attnflow.report import PageReport

__all__ = ["DilutionReport", "measure", "drive", "main_stats", "cycle_stats", "entropy_rise",
           "escape_start", "CYCLE_SWING", "SEPARATION", "FOCUS_MARGIN", "SETTLED_FRACTION", "KAPPA_EARLY", "DIP_FACTOR"]

CYCLE_SWING = 1e-3       # a second-cycle swing (hub attention, entropy) must exceed this: the statement is qualitative
                         # (a rise, then a fall); 10⁵ × the solver tolerance. The spec's chain swings by 0.1–0.3 and
                         # its values are checked separately; other chains swing by as little as 0.02 (n = 2)
FOCUS_MARGIN = 1e-3      # rare-query attention to the hub must go this far above / below π_hub
DIP_FACTOR = 2.0         # "ends below π_hub" needs the first-order dip at the end state ≥ this × FOCUS_MARGIN
SEPARATION = 0.25        # a θ_c¹ plateau needs the attention mode slower than condensation: 2|g| ≤ this × σ0
SETTLED_FRACTION = 0.01  # the second cycle has run its course: the loss fell by ≤ 1 % of its drop since the escape
                         # over the last 10 % of the run (a plateau: the bigram optimum or an intermediate one)
KAPPA_EARLY = 0.01       # "early focus": the amplitudes are compared with v when κ reaches this
L_C2_ATOL = 1e-8         # the loss at the end of the trapped run must equal the closed form L(θ_c²) to this
ARRIVED_FRACTION = 0.1   # "arrived": at its end rate −dL/dt = ‖∇L‖² the loss would fall by ≤ this × L_C2_ATOL in
                         # another run length (a chain that approaches θ_c² along a flat direction had ‖∇L‖ = 4.3e-6,
                         # a loss still falling by 5e-9 per 300 time units and a fit residual of 7.8e-4; errata)
STABLE_GROWTH = 0.1      # θ_c² traps the flow only where it is stable: an unstable direction of the Hessian at the end,
                         # rate |λ_min|, would grow by e^{|λ_min| t_end}; the trap needs |λ_min| t_end ≤ this
NAN = float("nan")


def entropy_rise(t: np.ndarray, entropy: np.ndarray, after: float) -> float:
    """Rise of the attention entropy from its minimum over t ≥ ``after`` to the last stored time
    (the exercise of the page; nan when no stored time is ≥ ``after``)."""
    sel = t >= after
    if not sel.any():
        return NAN
    return float(entropy[-1] - entropy[sel].min())


def drive(loss: model.PopulationLoss, d_model: int, hub: int) -> dict[str, Any]:
    """The next-order drive v (d,) at θ_c¹ and its summary: |cos(v, π)|, v_hub, mean v over the
    rare tokens, and whether v pushes the hub and every rare token in opposite directions."""
    v = spectrum.redistribution_drive(loss, d_model)
    pi = loss.chain.pi
    low = [i for i in range(len(pi)) if i != hub]
    opposite = bool(np.sign(v[hub]) != 0 and all(np.sign(v[j]) == -np.sign(v[hub]) for j in low))
    return dict(v=v, cos_v_pi=float(fmeasure.cos(v, pi)), v_hub=float(v[hub]), v_low=float(np.mean(v[low])),
                opposite=opposite)


def main_stats(run: runs.FlowRun, chain: MarkovChain, v: np.ndarray, g: float, t_end: float,
               symmetric_family: bool, score_scale: float = 1.0) -> dict[str, Any]:
    """Focus, redistribution and dilution on the main run (claims B7, B14): times, amplitudes,
    attention of the rare queries to the hub, the end point. Times that the run does not reach
    (no early focus with κ = 0.01 within the horizon) give nan and ``early_reached`` False."""
    q, t, pi, hub = run.quantities, run.t, chain.pi, chain.hub
    low = [i for i in range(chain.d) if i != hub]
    A, amp, kappa = q["A"], q["amp"], q["kappa"]
    _, t_cond = fmeasure.level_times(t, q["loss"], np.log(chain.d), chain.unigram_entropy())
    t_onset = fmeasure.attention_onset(t, A, pi, 0.01)
    A_low_hub = A[:, low, hub].mean(1)                                    # (T,) rare queries' attention to the hub
    i_peak = int(np.argmax(A_low_hub))
    i_c1 = run.at(0.5 * (t_cond + t_onset))                               # on the θ_c¹ plateau
    early = np.flatnonzero(np.sign(g) * kappa >= KAPPA_EARLY)
    early_reached = bool(len(early)) and g != 0
    i_early = int(early[0]) if early_reached else len(t) - 1              # early focus: κ = 0.01
    d_amp = amp[-1] - amp[i_c1]
    d_amp_early = amp[i_early] - amp[i_c1]
    states_end = {n: s[-1:] for n, s in run.result.states().items()}
    out = dict(t_cond=t_cond, t_onset=t_onset, t_peak=float(t[i_peak]), A_low_hub_max=float(A_low_hub[i_peak]),
               A_low_hub_end=float(A_low_hub[-1]), pi_hub=float(pi[hub]), a_hub_c1=float(amp[i_c1, hub]),
               a_low_c1=float(amp[i_c1, low].mean()), a_hub_end=float(amp[-1, hub]), a_low_end=float(amp[-1, low].mean()),
               kappa_end=float(kappa[-1]), A00_end=float(A[-1, hub, hub]), A10_end=float(A[-1, low[0], hub]),
               hub_att_end=float(q["hub_attention"][-1]), ent_end=float(q["attn_entropy"][-1]),
               L_end=float(q["loss"][-1]), grad_end=float(fmeasure.grad_norms(states_end, run.loss_fn)[0]),
               t_end=t_end, flow_s=run.wall_s, flow_nfev=run.nfev, t_c1=float(t[i_c1]),
               r_c1=float(pi @ amp[i_c1]), r_early=float(pi @ amp[i_early]) if early_reached else NAN,
               t_early=float(t[i_early]) if early_reached else NAN, early_reached=early_reached,
               early_sign_ok=bool(np.all(np.sign(d_amp_early) == np.sign(v))) if early_reached else False,
               early_apart=bool(d_amp_early[hub] > 0 and np.all(d_amp_early[low] < 0)) if early_reached else False,
               amp_apart=bool(d_amp[hub] > 0 and np.all(d_amp[low] < 0)),
               A_low_hub_fall=float(A_low_hub[i_peak] - A_low_hub[-1]),
               ent_rise_main=entropy_rise(t, q["attn_entropy"], 0.0),
               cos_pi_hub=float(pi[hub] / np.linalg.norm(pi)),
               end_flat=float(abs(q["loss"][run.at(0.9 * t[-1])] - q["loss"][-1])
                              / max(chain.unigram_entropy() - q["loss"][-1], 1e-300)),
               sigma2_end=float(q["sigma2"][-1]),
               # first-order end value of the mean rare query's attention to the hub minus π_hub (module docstring)
               dip_pred=float(score_scale * kappa[-1] * amp[-1, low].mean() * pi[hub] * (amp[-1, hub] - pi @ amp[-1])))
    if symmetric_family:     # the trap's preconditions, from the end state before any fit: stability and arrival
        H, _ = model.hessian(run.loss_fn, {n: s[-1] for n, s in run.result.states().items()})
        out["lambda_min_end"] = float(np.linalg.eigvalsh(H)[0])
    else:
        out["lambda_min_end"] = NAN
    if symmetric_family:
        P_hat_end = q["P_hat"][-1]
        P_low = chain.P[low].mean(0)
        out["L_c2_closed"] = closed_forms.theta_c2_loss(chain)
        out["fit_err"] = float(max(np.abs(P_hat_end[hub] - chain.P[hub]).max(), np.abs(P_hat_end[low] - P_low).max()))
    else:                    # the exact fit is a property of the symmetric family only
        out["L_c2_closed"] = out["fit_err"] = NAN
    return out


def cycle_stats(run_c: runs.FlowRun, chain_cycle: MarkovChain, t_onset: float) -> dict[str, Any]:
    """The second cycle of the ``delta_cycle`` run: escape time (first σ₂(W0) > 0.1 after the onset
    of focus), hub-attention peak and fall after it, attention-entropy minimum and final value,
    and whether the loss at the horizon has reached the bigram optimum (the cycle ran its course)."""
    qc, tc = run_c.quantities, run_c.t
    s2 = qc["sigma2"]
    escaped = bool(((tc > t_onset) & (s2 > 0.1)).any())
    t_esc = fmeasure.first_time(tc, (tc > t_onset) & (s2 > 0.1)) if escaped else NAN
    hub_c, ent_c = qc["hub_attention"], qc["attn_entropy"]
    bigram = chain_cycle.bigram_loss()
    out = dict(escaped=escaped, t_esc=t_esc, cycle_s=run_c.wall_s, cycle_nfev=run_c.nfev,
               L_cycle_end=float(qc["loss"][-1]), bigram_cycle=bigram)
    out.update({k: NAN for k in ("hub_at_esc", "hub_c1_value", "hub_peak", "t_hub_peak", "hub_min_after",
                                 "ent_min", "ent_final", "L_at_esc", "cycle_settled_frac")})
    if escaped:
        after = tc >= t_esc
        k_peak = int(np.argmax(np.where(after, hub_c, -1)))
        L_esc = float(qc["loss"][run_c.at(t_esc)])
        out.update(hub_at_esc=float(hub_c[run_c.at(t_esc)]), hub_c1_value=float(hub_c[run_c.at(min(3000.0, t_esc))]),
                   hub_peak=float(hub_c[k_peak]), t_hub_peak=float(tc[k_peak]), hub_min_after=float(hub_c[k_peak:].min()),
                   ent_min=float(ent_c[after].min()), ent_final=float(ent_c[-1]), L_at_esc=L_esc,
                   cycle_settled_frac=float((qc["loss"][run_c.at(0.9 * tc[-1])] - qc["loss"][-1])
                                            / max(L_esc - qc["loss"][-1], 1e-300)))
    out["cycle_settled"] = bool(escaped and out["cycle_settled_frac"] <= SETTLED_FRACTION)
    return out


def escape_start(run_c: runs.FlowRun, t_onset: float) -> dict[str, Any]:
    """Where the second cycle starts: the first escape stage of the stage detector ending after ``t_onset``
    (the main run's onset of focus), the stage just before it, and whether that is a plateau after the
    first focus (the flow rested on θ_c²(δ) before σ₂(W0) grew)."""
    st = stages.detect_run(run_c)
    for i, s in enumerate(st.stages):
        if s.name == "escape" and s.end > t_onset:
            before = st.stages[i - 1].name if i else "none"
            focused = any(p.name == "focus" for p in st.stages[:i])
            return dict(t_esc_start=s.start, pre_escape=before, esc_from_plateau=bool(before == "plateau" and focused))
    return dict(t_esc_start=NAN, pre_escape="no escape detected", esc_from_plateau=False)


@dataclass
class DilutionReport(PageReport):
    """Everything the dilution page shows; scalar fields are glued under their names."""

    chain_name: str
    g: float
    sigma0: float
    symmetric_family: bool
    hub_family: bool
    reference: bool
    reference_chain: bool
    # §1 symbolic exact fit at θ_c²
    n_nonzero_deg: int
    symbolic_s: float
    # §2 next-order drive
    cos_v_pi: float
    v_hub: float
    v_low: float
    opposite: bool
    # §3 main run
    t_cond: float
    t_onset: float
    t_peak: float
    A_low_hub_max: float
    A_low_hub_end: float
    pi_hub: float
    a_hub_c1: float
    a_low_c1: float
    a_hub_end: float
    a_low_end: float
    kappa_end: float
    A00_end: float
    A10_end: float
    hub_att_end: float
    ent_end: float
    L_end: float
    grad_end: float
    t_end: float
    t_c1: float
    flow_s: float
    flow_nfev: int
    r_c1: float
    r_early: float
    t_early: float
    early_reached: bool
    early_sign_ok: bool
    early_apart: bool
    amp_apart: bool
    A_low_hub_fall: float
    ent_rise_main: float
    cos_pi_hub: float
    end_flat: float
    sigma2_end: float
    dip_pred: float
    lambda_min_end: float
    L_c2_closed: float
    fit_err: float
    # §4 second cycle
    delta_cycle_val: float
    horizon_cycle_val: float
    spec_cycle: bool
    escaped: bool
    cycle_settled: bool
    t_esc: float
    cycle_s: float
    cycle_nfev: int
    L_cycle_end: float
    bigram_cycle: float
    hub_at_esc: float
    hub_c1_value: float
    hub_peak: float
    t_hub_peak: float
    hub_min_after: float
    ent_min: float
    ent_final: float
    L_at_esc: float
    cycle_settled_frac: float
    t_esc_start: float
    pre_escape: str
    esc_from_plateau: bool
    # the spec's Euler values cited in the prose
    euler_kappa: float = EULER_T3000["kappa"]
    euler_A00: float = EULER_T3000["A00"]
    euler_hub_min: float = EULER_CYCLE["hub_min_after"]
    euler_ent_final: float = EULER_CYCLE["ent_final"]
    # not glued
    chain: MarkovChain | None = None
    chain_cycle: MarkovChain | None = None
    deg: Any = None
    v: np.ndarray = field(default_factory=lambda: np.zeros(0))
    run: runs.FlowRun | None = None
    run_c: runs.FlowRun | None = None

    # ------------------------------------------------------------------ domains
    def _focus_on_hub(self):
        return (("hub family (one frequent token, n rare ones)", self.hub_family, self.chain_name),
                ("focus on the hub, g > 0", self.g > 0, f"g = {self.g:.3g}"))

    def domain_signs(self):
        """R4's sign statements: hub family with focus on the hub."""
        return claims.domain(*self._focus_on_hub())

    def _plateau(self):
        return ((f"time-scale separation, a θ_c¹ plateau before focus: 2|g| ≤ {SEPARATION:g} σ0",
                 bool(2 * abs(self.g) <= SEPARATION * self.sigma0), f"2|g|/σ0 = {2 * abs(self.g) / self.sigma0:.2g}"),)

    def domain_early(self):
        return claims.domain(*self._focus_on_hub(), *self._plateau(),
                             (f"focus entered: κ reaches {KAPPA_EARLY:g} within the horizon",
                                                     self.early_reached, f"κ(end) = {self.kappa_end:.3g}"),
                             (f"a θ_c¹ plateau before focus: κ reaches {KAPPA_EARLY:g} after the reference point on it "
                              "(|g| ≪ σ0)", bool(self.t_early > self.t_c1),
                              f"t(κ = {KAPPA_EARLY:g}) = {self.t_early:.0f}, plateau point t = {self.t_c1:.0f}"))

    def domain_end(self):
        """The run ends on the θ_c² plateau: symmetric hub family (δ = 0) and the loss flat over the last
        10 % of the run (≤ 10⁻³ (H(π) − L)) on 𝓜₁ (σ₂(W0) < 0.01)."""
        return claims.domain(("symmetric hub family (δ = 0): θ_c² traps the flow", self.symmetric_family,
                              self.chain_name),
                             ("the run ends on a plateau on 𝓜₁: |ΔL| over the last 10 % ≤ 10⁻³ (H(π) − L), σ₂(W0) < 0.01",
                              bool(self.end_flat <= 1e-3 and self.sigma2_end < 0.01),
                              f"{self.end_flat:.2g}, σ₂ = {self.sigma2_end:.2g}"))

    def domain_trap(self):
        """θ_c² traps the flow: the run ends on its plateau (:meth:`domain_end`) at a stable point — the most
        negative eigenvalue of the Hessian at the end state, λ_min, would grow a perturbation by e^{|λ_min| t_end}."""
        growth = abs(min(self.lambda_min_end, 0.0)) * self.t_end
        return self.domain_end() & claims.domain(
            (f"the end point is stable (a trap): |λ_min(∇²L)| t_end ≤ {STABLE_GROWTH:g}", bool(growth <= STABLE_GROWTH),
             f"λ_min = {self.lambda_min_end:.2g}, |λ_min| t_end = {growth:.2g}"))

    def domain_arrived(self):
        """The exact-fit claims also need the run to have arrived at θ_c² to within their tolerance: at its
        end rate −dL/dt = ‖∇L‖², the loss would fall by ≤ ARRIVED_FRACTION × L_C2_ATOL in another run length."""
        fall = self.grad_end ** 2 * self.t_end
        return self.domain_trap() & claims.domain(
            (f"arrived at θ_c²: ‖∇L‖² t_end ≤ {ARRIVED_FRACTION:g} × {L_C2_ATOL:g} (the loss still falling at the "
             "end would move by less than the closed-form tolerance)", bool(fall <= ARRIVED_FRACTION * L_C2_ATOL),
             f"‖∇L‖ = {self.grad_end:.2g}, ‖∇L‖² t_end = {fall:.2g}"))

    def domain_cycle(self):
        return claims.domain(*self._focus_on_hub(),
                             ("escape from θ_c² within horizon_cycle (σ₂(W0) > 0.1)", self.escaped,
                              f"t_esc = {self.t_esc:.0f}"),
                             ("the second cycle starts from θ_c²(δ): the stage detector puts a plateau after the first "
                              "focus right before the escape", self.esc_from_plateau,
                              f"before the escape (t = {self.t_esc_start:.0f}): {self.pre_escape}"),
                             ("second cycle ran its course: the loss on a plateau at the horizon (fall over the last 10 % "
                              f"of the run ≤ {SETTLED_FRACTION:g} × its fall since the escape)",
                              self.cycle_settled, f"ratio {self.cycle_settled_frac:.3g}"))

    def domain_reference(self, model: bool = True):
        ok = self.reference if model else self.reference_chain
        return claims.domain(("the spec's reference chain" + (", model and initialization" if model else ""), ok,
                              self.chain_name))

    # ------------------------------------------------------------------ claims
    def check_claims(self) -> None:
        claims.check("B14", self.n_nonzero_deg, 0, atol=0,
                     what="sympy: stationarity residual and minors of [ℓ(P_0); ℓ(P̄_low)] (exact fit)")
        claims.check("B7", self.cos_v_pi, predicate=lambda x: x < 0.99, tolerance="|cos(v, π)| < 0.99 (not a rescaling)",
                     what="next-order drive v vs π", source="reconstruction",
                     domain=claims.domain(("π not concentrated on one token: cos(π, e_hub) < 0.99 (else every "
                                           "hub-dominated vector has |cos| > 0.99 with π)", self.cos_pi_hub < 0.99,
                                           f"cos(π, e_hub) = {self.cos_pi_hub:.3f}")))
        # R4's reconstruction: the drive v at θ_c¹ (b frozen at b*) is a redistribution. Reported, and used as
        # the domain of the sign comparison below: on about half of the hub-family chains with g > 0, v lowers
        # every amplitude (errata Q3) while the flow still moves the hub up and the rare tokens down.
        claims.check("B7", self.early_apart, True, atol=0, domain=self.domain_early(),
                     what=f"at κ = {KAPPA_EARLY:g}: frequent amplitude up, every rare amplitude down from θ_c¹", source="paper")
        claims.check("B7", self.early_sign_ok, True, atol=0,
                     domain=self.domain_early() & claims.domain(("v is a redistribution (hub and rare components of "
                                                                 "opposite signs)", self.opposite,
                                                                 f"v_hub = {self.v_hub:.3g}, mean v_low = {self.v_low:.3g}")),
                     what=f"sign of a(κ = {KAPPA_EARLY:g}) − a(θ_c¹) equals sign of v, componentwise",
                     source="paper + reconstruction")
        dom_end = self.domain_signs() & self.domain_end()
        claims.check("B7", self.amp_apart, True, atol=0, domain=dom_end & claims.domain(*self._plateau()),
                     what="from θ_c¹ to the end: frequent amplitude up, every rare amplitude down", source="paper")
        claims.check("B7", self.A_low_hub_max - self.pi_hub, predicate=lambda x: x > FOCUS_MARGIN,
                     tolerance=f"> {FOCUS_MARGIN:g}", domain=self.domain_signs(),
                     what="focus: max rare-query attention to the hub minus π_hub", source="paper")
        claims.check("B7", self.A_low_hub_fall, predicate=lambda x: x > FOCUS_MARGIN,
                     tolerance=f"> {FOCUS_MARGIN:g}", domain=dom_end,
                     what="dilution: fall of the rare-query attention to the hub from its peak to the end", source="paper")
        claims.check("B7", self.A_low_hub_end - self.pi_hub, predicate=lambda x: x < -FOCUS_MARGIN,
                     tolerance=f"< −{FOCUS_MARGIN:g}",
                     domain=dom_end & claims.domain(("the rare amplitudes change sign (a_low < 0 at the end): "
                                                     "c κ a_j a_0 < 0", self.a_low_end < 0, f"a_low = {self.a_low_end:.3g}"),
                                                    (f"by enough: first-order dip cκπ_hub ā_low(a_hub − πᵀa) ≤ −{DIP_FACTOR:g} × "
                                                     f"{FOCUS_MARGIN:g}", bool(self.dip_pred <= -DIP_FACTOR * FOCUS_MARGIN),
                                                     f"dip {self.dip_pred:.2g}")),
                     what="dilution: final rare-query attention to the hub minus π_hub", source="paper")
        claims.check("B14", self.grad_end, 0.0, atol=1e-6, domain=self.domain_trap(),
                     what="‖∇L‖ at the end of the main run (a critical point)")
        claims.check("B14", self.L_end, self.L_c2_closed, atol=L_C2_ATOL, domain=self.domain_arrived(),
                     what="L at the end vs closed form π_0H(P_0) + Σπ_jCE(P_j, P̄_low)")
        claims.check("B14", self.fit_err, 0.0, atol=1e-5, domain=self.domain_arrived(),
                     what="max |P̂ − (P_0, P̄_low)| at θ_c² (exact fit)")
        dc = self.domain_cycle()
        swing = f"> {CYCLE_SWING:g}"
        claims.check("B7", self.hub_peak - self.hub_at_esc, predicate=lambda x: x > CYCLE_SWING, tolerance=swing,
                     domain=dc, what="second cycle: hub-attention rise after the escape (focus 2)", source="paper")
        claims.check("B7", self.hub_peak - self.hub_min_after, predicate=lambda x: x > CYCLE_SWING, tolerance=swing,
                     domain=dc, what="second cycle: hub-attention fall after its peak (dilution 2)", source="paper")
        claims.check("B7", self.ent_final - self.ent_min, predicate=lambda x: x > CYCLE_SWING, tolerance=swing,
                     domain=dc, what="second cycle: attention-entropy rise after its minimum", source="paper")
        claims.check("B14", self.L_c2_closed, SPEC["L_c2"], atol=half_unit(5), domain=self.domain_reference(False),
                     what="closed-form L(θ_c²) vs the spec's 1.50815")
        ref = self.domain_reference()
        tol4 = half_unit(4) + 2e-4
        claims.check("B14", self.L_end, SPEC["L_c2"], atol=half_unit(5), domain=ref,
                     what="L at t = 3000 vs the spec's 1.50815")
        claims.check("B14", self.kappa_end, SPEC["kappa_c2"], atol=tol4, domain=ref,
                     what="κ at θ_c² vs the spec's 0.7522 (Euler)")
        claims.check("B14", [self.a_hub_end, self.a_low_end], list(SPEC["amp_c2"]), atol=half_unit(3) + 2e-4,
                     domain=ref, what="amplitudes (hub, rare) at θ_c² vs the spec's (1.567, −0.092)")
        claims.check("B14", self.A00_end, SPEC["A00_c2"], atol=tol4, domain=ref, what="A00 at θ_c² vs the spec's 0.8091 (Euler)")
        claims.check("B14", self.A10_end, SPEC["A10_c2"], atol=tol4, domain=ref, what="A10 at θ_c² vs the spec's 0.3485 (Euler)")
        claims.check("B14", self.hub_att_end, SPEC["hub_attention_c2"], atol=tol4, domain=ref,
                     what="hub attention at θ_c² vs the spec's 0.5212")
        ref_cycle = ref & claims.domain(("the spec's second-cycle run: δ = 0.1 to t = 10⁴", self.spec_cycle,
                                         f"δ = {self.delta_cycle_val:g}, horizon {self.horizon_cycle_val:g}"),
                                        ("escape within the horizon", self.escaped, f"t_esc = {self.t_esc:.0f}"))
        tol3 = half_unit(3) + 2e-4
        claims.check("B7", [self.hub_c1_value, self.hub_peak], list(SPEC["hub_cycle2"][:2]), atol=tol3, domain=ref_cycle,
                     what="second cycle: hub attention at t = 3000 and at its peak vs the spec's (0.523, 0.675)")
        claims.check("B7", self.t_hub_peak, SPEC["t_hub_peak_cycle2"], atol=50.0, domain=ref_cycle,
                     what="time of the second-cycle peak vs 5470")
        claims.check("B7", self.ent_min, SPEC["entropy_cycle2"][0], atol=tol3, domain=ref_cycle,
                     what="second cycle: minimum attention entropy vs the spec's 0.516")

    # ------------------------------------------------------------------ figures
    def figures(self) -> list:
        """Top row: amplitudes, the rare queries' attention to the hub, the loss (main run, stage
        spans shaded); bottom row: v against π, the second cycle's hub attention and entropy, its loss."""
        from attnflow import plotting
        from attnflow.plotting import PALETTE

        chain, q, t = self.chain, self.run.quantities, self.run.t
        pi, hub = chain.pi, chain.hub
        low = [i for i in range(chain.d) if i != hub]
        A, amp = q["A"], q["amp"]
        A_low_hub = A[:, low, hub].mean(1)
        H_pi = chain.unigram_entropy()
        close = np.abs(q["loss"] - self.L_end) < 1e-4 * (H_pi - self.L_end + 1e-12)
        t_settle = float(t[np.flatnonzero(close)[0]])
        fig, axes = plotting.subplots(2, 3, width=3.6, height=2.9)
        spans = [("condensation", 0, self.t_cond), ("plateau", self.t_cond, self.t_onset),
                 ("focus", self.t_onset, self.t_peak), ("dilution", self.t_peak, t_settle), ("plateau", t_settle, t[-1])]
        ax = axes[0]
        for a_ in ax:
            plotting.shade_stages(a_, spans)
        ax[0].plot(t, amp[:, hub], color=PALETTE[0], label="frequent token")
        ax[0].plot(t, amp[:, low].mean(1), color=PALETTE[1], label="rare tokens (mean)")
        ax[0].axhline(0, color="k", lw=0.6)
        ax[0].set(xlabel="t", ylabel=r"$a_k=\langle h_k,u\rangle$", title="amplitudes move apart")
        ax[0].legend(fontsize=8)
        ax[1].plot(t, A[:, hub, hub], color=PALETTE[0], label="frequent query")
        ax[1].plot(t, A_low_hub, color=PALETTE[1], label="rare queries")
        ax[1].axhline(pi[hub], ls=":", color="k", lw=1, label=r"$\pi_{\rm hub}$")
        ax[1].set(xlabel="t", ylabel=r"$A_{i,\rm hub}$", ylim=(pi[hub] - 0.06, None), title="focus, then dilution")
        ax[1].legend(fontsize=8)
        ax[2].plot(t, q["loss"], color="k")
        ax[2].axhline(H_pi, ls="--", color=PALETTE[1], label=r"$H(\pi)$")
        if self.symmetric_family:
            ax[2].axhline(self.L_c2_closed, ls="--", color=PALETTE[2], label=r"$L(\theta_c^2)$ closed form")
        ax[2].set(xlabel="t", ylabel="loss", ylim=(self.L_end - 0.01, H_pi + 0.01), title="second plateau")
        ax[2].legend(fontsize=8)
        ax = axes[1]
        keys = np.arange(chain.d)
        ax[0].bar(keys - 0.2, self.v / np.abs(self.v).max(), 0.4, color=PALETTE[3], label=r"$v/\max|v|$")
        ax[0].bar(keys + 0.2, pi / pi.max(), 0.4, color=PALETTE[0], label=r"$\pi/\max\pi$")
        ax[0].axhline(0, color="k", lw=0.6)
        ax[0].set(xlabel="token k", title=r"next-order drive $v$ vs $\pi$")
        ax[0].legend(fontsize=8)
        qc, tc = self.run_c.quantities, self.run_c.t
        ax[1].plot(tc, qc["hub_attention"], color=PALETTE[4], label=r"hub attention $\sum_i\pi_iA_{i,\rm hub}$")
        ax[1].plot(tc, qc["attn_entropy"], color=PALETTE[2], label="attention entropy")
        if self.escaped:
            ax[1].axvline(self.t_esc, color="k", lw=0.8, ls=":")
        ax[1].set(xlabel="t", title=f"δ = {self.delta_cycle_val:g}: the second cycle")
        ax[1].legend(fontsize=8, loc="center right")
        ax[2].plot(tc, qc["loss"], color="k")
        for level, lab, col in [(self.chain_cycle.unigram_entropy(), r"$H(\pi)$", PALETTE[1]),
                                (self.bigram_cycle, "bigram optimum", PALETTE[3])]:
            ax[2].axhline(level, ls="--", color=col, label=lab)
        ax[2].set(xlabel="t", ylabel="loss", title=f"δ = {self.delta_cycle_val:g}: loss")
        ax[2].legend(fontsize=8)
        fig.suptitle(f"Dilution on the {chain.name}", y=1.03)
        return [fig]


def measure(cfg) -> DilutionReport:
    """Run the page's measurements for its validated parameters ``cfg`` (contracts.DILUTION)."""
    chain = make_chain(cfg)
    is_hub = cfg.chain == "hub"
    symmetric_family = is_hub and cfg.delta == 0.0
    g = closed_forms.g_rate(chain, cfg.score_scale)
    start = time.perf_counter()
    deg = symbolic.degenerate_point(3)
    n_nonzero_deg = sum(int(not symbolic.is_zero(e)) for e in [*deg.stationarity_residual, *deg.collinearity_minors])
    symbolic_s = time.perf_counter() - start
    loss = model.PopulationLoss(chain, cfg.score_scale)
    dv = drive(loss, cfg.d_model, chain.hub)
    t_end = max(cfg.horizon, 1.6 * closed_forms.plateau_time(chain, cfg.init_scale, cfg.score_scale))
    run = runs.population_flow(chain, d_model=cfg.d_model, init_scale=cfg.init_scale, seed=cfg.seed,
                               score_scale=cfg.score_scale,
                               t_eval=runs.time_grid(t_end, 300.0, 1.0, max(1.0, t_end / 2500)))
    st = main_stats(run, chain, dv["v"], g, t_end, symmetric_family, cfg.score_scale)
    chain_cycle = hub_family(cfg.n_low, cfg.a_h, cfg.b_h, cfg.c_cyc, cfg.delta_cycle) if is_hub else chain
    run_c = runs.population_flow(chain_cycle, d_model=cfg.d_model, init_scale=cfg.init_scale, seed=cfg.seed,
                                 score_scale=cfg.score_scale, t_eval=runs.time_grid(cfg.horizon_cycle, 300.0, 1.0, 10.0))
    cyc = cycle_stats(run_c, chain_cycle, st["t_onset"]) | escape_start(run_c, st["t_onset"])
    return DilutionReport(chain_name=chain.name, g=g, sigma0=closed_forms.sigma0(chain), symmetric_family=symmetric_family, hub_family=is_hub,
                          reference=is_reference(cfg), reference_chain=is_reference(cfg, model=False),
                          n_nonzero_deg=n_nonzero_deg, symbolic_s=symbolic_s,
                          **{k: dv[k] for k in ("cos_v_pi", "v_hub", "v_low", "opposite")}, **st,
                          delta_cycle_val=cfg.delta_cycle, horizon_cycle_val=cfg.horizon_cycle,
                          spec_cycle=cfg.delta_cycle == 0.1 and cfg.horizon_cycle == 1e4, **cyc,
                          chain=chain, chain_cycle=chain_cycle, deg=deg, v=dv["v"], run=run, run_c=run_c)
