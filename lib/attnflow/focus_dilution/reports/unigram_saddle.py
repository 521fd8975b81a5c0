"""Report of the page ``focus_dilution/unigram_saddle`` (spec R2; claims B4, B5, B13, B17).

    rep = unigram_saddle_report(cfg)
    rep.glue(); rep.figures(); rep.check_claims()

Measures the sympy saddle and attention block, the autograd Jacobian at the exact θ_c¹, the
plateau of the exact population flow (closest approach to θ_c¹, the growth of the unstable
attention mode on the window t_cond + ``kappa_window``/|g|, the rate g_eff of the mode at the
visited point, also from ε/10) and a random Dirichlet chain on which W1 turns from π − 1/d to ℓ.

Domains (issue 11), from the parameters and the state before measuring:

* **plateau reached** (B4 on the flow): θ_c¹ is approached only when the attention mode is slow
  against the contraction of the embedding block onto the unigram optimum: 2|g| ≤ λ_c/``SEPARATION``
  with λ_c the slowest contracting rate of the (W0, W1) block of the Jacobian at θ_c¹;
* **mode resolvable** (B5 on the flow): |g| ≥ 5εσ0 (the plateau point drifts at rates O(εσ0)),
  and the plateau reached;
* **ε-scaling** (B5, g_eff → g as ε → 0): the offset g_eff/g − 1 at ε must stand above the floor
  that the ε/10 run reaches, ``SCALING_FLOOR`` ≤ |g_eff/g − 1| at ε. On every probed draw the offset at
  ε/10 was 2·10⁻⁴–10⁻³ whatever it was at ε (a part that does not scale with ε), so an offset below
  5·10⁻³ at ε cannot shrink fivefold; this is decided on the state at ε, before the ε/10 value is compared.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from attnflow import claims
from attnflow.focus_dilution import closed_forms, measure, model, runs, spectrum, symbolic
from attnflow.focus_dilution.chain import MarkovChain, dirichlet_chain
from attnflow.focus_dilution.contracts import is_reference, make_chain
from attnflow.focus_dilution.targets import SPEC, half_unit
from attnflow.focus_dilution.reports import SpecGluedReport
from attnflow.report import PageReport  # noqa: F401

__all__ = ["UnigramSaddleReport", "unigram_saddle_report", "PlateauRun", "plateau_run", "SEPARATION",
           "SCALING_FLOOR"]

SEPARATION = 4.0         # 2|g| ≤ λ_c / SEPARATION: the flow settles on θ_c¹ before attention moves (probed: fails from 2|g|/λ_c ≈ 0.6)
SCALING_FLOOR = 5e-3     # |g_eff/g − 1| at ε below this cannot shrink fivefold: at ε/10 it stays at ~2e-4–1e-3 (probed)


@dataclass
class PlateauRun:
    """The flow through the θ_c¹ plateau, measured (what ``unigram_saddle_report`` and tests use)."""

    run: runs.FlowRun
    t_cond: float               # end of condensation (loss within 1 % of the gap to H(π))
    t_kappa: tuple              # the κ fit window
    kappa_rate: float           # fitted growth rate of κ
    mode_rate: float            # fitted growth rate of ‖q ± k‖² (the unstable mode, sign of g)
    mode_growth: float          # its log-growth over the window
    mode_growth_pred: float     # 2∫|g_eff| dt over the window
    g_eff: np.ndarray           # (T,) −uᵀ∂_M L u along the flow
    g_eff_start: float          # g_eff at the window's start
    t_c1: float                 # closest approach (min ‖∇L‖ on [t_cond, t_kappa[0]])
    grad_min: float             # ‖∇L‖ there


def window_rate(chain: MarkovChain, g: float, init_scale: float) -> float:
    """The rate that sets the κ window: |g|, floored at 5εσ0 (below it the mode is not resolved on the
    flow, its claims are outside their domain, and the window need not run to t ~ 1/|g|)."""
    return max(abs(g), 5 * init_scale * closed_forms.sigma0(chain))


def kappa_window_times(t_cond: float, g: float, kappa_window) -> tuple[float, float]:
    """t_cond + kappa_window/|g| (g: the window rate, see :func:`window_rate`)."""
    return t_cond + kappa_window[0] / abs(g), t_cond + kappa_window[1] / abs(g)


def plateau_end(chain: MarkovChain, horizon: float, init_scale: float, g: float, kappa_window) -> float:
    """End of the flow: the horizon, extended to cover the κ window predicted from t_cond ≈ 2.5 T₁,
    and cut 10 % after it (the later stages are other pages)."""
    t_cond_pred = 2.5 * closed_forms.escape_time_origin(chain, init_scale)
    t_win_end = kappa_window_times(t_cond_pred, g, kappa_window)[1]
    return min(max(horizon, t_win_end * 1.1), max(t_win_end * 1.1, 300.0))


def plateau_run(chain: MarkovChain, mc: model.ModelConfig, horizon: float, kappa_window) -> PlateauRun:
    """Integrate through condensation and the plateau and measure the attention mode there."""
    g = closed_forms.g_rate(chain, mc.score_scale)
    gw = window_rate(chain, g, mc.init_scale)
    loss = mc.population_loss(chain)
    t_end = plateau_end(chain, horizon, mc.init_scale, gw, kappa_window)
    run = runs.population_flow(chain, model=mc,
                               t_eval=runs.time_grid(t_end, fine_until=300.0, fine_dt=1.0, coarse_dt=max(1.0, t_end / 2000)))
    q, t = run.quantities, run.t
    _, t_cond = measure.level_times(t, q["loss"], np.log(chain.d), chain.unigram_entropy())
    t_kappa = kappa_window_times(t_cond, gw, kappa_window)
    mode_key = "qk_sym" if g > 0 else "qk_anti"                              # the unstable mode itself
    g_eff = measure.kappa_drive(run.result.states(), loss, q["u"])          # −uᵀ∂_M L u along the flow
    gnorm = measure.grad_norms(run.result.states(), loss)
    t_c1 = measure.saddle_time(t, gnorm, t_cond, min(t_kappa[0], t[-1]))
    idx = np.flatnonzero((t >= t_kappa[0]) & (t <= t_kappa[1]))
    if len(idx) < 3:            # condensation ended later than predicted: the window runs past the flow
        nan = float("nan")
        return PlateauRun(run=run, t_cond=t_cond, t_kappa=t_kappa, kappa_rate=nan, mode_rate=nan, mode_growth=nan,
                          mode_growth_pred=nan, g_eff=g_eff, g_eff_start=nan, t_c1=t_c1,
                          grad_min=float(gnorm[run.at(t_c1)]))
    i0, i1 = idx[[0, -1]]
    return PlateauRun(run=run, t_cond=t_cond, t_kappa=t_kappa, kappa_rate=run.rate("kappa", *t_kappa),
                      mode_rate=run.rate(mode_key, *t_kappa),
                      mode_growth=float(np.log(q[mode_key][i1] / q[mode_key][i0])),
                      mode_growth_pred=float(2 * np.trapezoid(np.abs(g_eff[i0:i1 + 1]), t[i0:i1 + 1])),
                      g_eff=g_eff, g_eff_start=float(g_eff[i0]), t_c1=t_c1, grad_min=float(gnorm[run.at(t_c1)]))


def g_eff_at_small_eps(chain: MarkovChain, mc: model.ModelConfig, kappa_window) -> float:
    """g_eff at the start of the κ window of the same flow from ε/10 (same seed)."""
    g = window_rate(chain, closed_forms.g_rate(chain, mc.score_scale), mc.init_scale)
    small = mc.with_(init_scale=mc.init_scale / 10)
    t_small = 2.5 * closed_forms.escape_time_origin(chain, small.init_scale) + kappa_window[0] / abs(g)
    run_s = runs.population_flow(chain, model=small, t_eval=np.linspace(0.0, t_small * 1.05, 400))
    _, t_cond_s = measure.level_times(run_s.t, run_s.quantities["loss"], np.log(chain.d), chain.unigram_entropy())
    g_eff_s = measure.kappa_drive(run_s.result.states(), small.population_loss(chain), run_s.quantities["u"])
    return float(g_eff_s[run_s.at(t_cond_s + kappa_window[0] / abs(g))])


def contraction_rate(embedding_eigs: np.ndarray, tol: float = 1e-10) -> float:
    """λ_c: the slowest contracting rate of the (W0, W1) block (smallest |eigenvalue| among the negative ones)."""
    neg = embedding_eigs[embedding_eigs < -tol]
    return float(np.abs(neg).min()) if len(neg) else float("inf")


@dataclass
class UnigramSaddleReport(SpecGluedReport):
    n_sym_nonzero: int
    symbolic_s: float
    # Jacobian at θ_c¹
    g: float
    two_g: float
    two_g_abs: float
    g_numeric: float
    att_err: float
    emb_max: float
    emb_min: float
    n_neutral: int
    n_emb: int
    n_unstable: int
    qk_res: float
    cross_max: float
    grad_c1: float
    W0_pred: float
    alpha: float
    H_pi: float
    lambda_c: float
    sigma0: float
    # the plateau
    t_cond: float
    t_c1: float
    loss_c1: float
    W0_c1: float
    amp_err: float
    cos_ell: float
    cos_W0: float
    kappa_rate: float
    mode_rate: float
    mode_rel: float
    g_eff: float
    g_eff_rel: float
    mode_growth: float
    mode_growth_pred: float
    mode_growth_rel: float
    g_eff_small: float
    g_eff_small_rel: float
    eps_small: float
    W0_tol: float
    tk0: float
    tk1: float
    balance: float
    balance_rel: float
    grad_min: float
    loss_dev: float
    kappa_rel: float
    flow_s: float
    flow_nfev: int
    t_end: float
    # random chain (B17)
    W0_rand: float
    W0_rand_pred: float
    L_rand: float
    H_rand: float
    cos_pic_max: float
    cos_pic_final: float
    cos_ell_final: float
    cos_pic_ell: float
    g_rand: float
    t_rand: float
    random_d_val: int
    W0_rand_tol: float
    W0_rand_H_pi_gap: float
    # configuration
    init_scale: float
    d_model: int
    reference_chain: bool
    reference: bool
    spec_random: bool
    chain_name: str
    saddle: object = field(default=None, repr=False)
    block: object = field(default=None, repr=False)
    _blocks: object = field(default=None, repr=False)
    _plateau: PlateauRun | None = field(default=None, repr=False)
    _amp_c1: np.ndarray = field(default=None, repr=False)
    _a_star: np.ndarray = field(default=None, repr=False)
    _chain: MarkovChain | None = field(default=None, repr=False)
    _rand: MarkovChain | None = field(default=None, repr=False)
    _run_r: object = field(default=None, repr=False)
    _W0_rand_pred: float = 0.0
    _rand_lambda_c: float = float("inf")
    _g_rand_separated: bool = True
    _rand_t_cond: float = 0.0
    _g_rand_c: float = 0.0

    # ---- exercise ------------------------------------------------------------------------------
    def matches_g(self, value) -> bool:
        """The exercise's criterion: ``|value|`` equals the largest eigenvalue of J to 1e-8 relative
        (the sign of g is the reader's to find, the Jacobian only gives |g|)."""
        return bool(abs(abs(float(value)) - self.g_numeric) <= 1e-8 * self.g_numeric)

    # ---- domains -----------------------------------------------------------------------------
    def plateau_reached(self) -> claims.Domain:
        return claims.domain((f"2|g| ≤ λ_c/{SEPARATION:g} (the flow settles on θ_c¹ before attention moves)",
                              2 * abs(self.g) <= self.lambda_c / SEPARATION,
                              f"2|g| = {2 * abs(self.g):.3g}, λ_c = {self.lambda_c:.3g}"))

    def mode_resolvable(self) -> claims.Domain:
        lim = 5 * self.init_scale * self.sigma0
        return self.plateau_reached() & claims.domain(
            ("the κ window lies within the flow (≥ 3 stored times)", bool(np.isfinite(self.kappa_rate)),
             f"window [{self.tk0:.4g}, {self.tk1:.4g}], flow to {self.t_end:.4g}"),
            ("|g| ≥ 5εσ0 (the mode is faster than the O(εσ0) drift of the plateau)", abs(self.g) >= lim,
             f"|g| = {abs(self.g):.3g}, 5εσ0 = {lim:.3g}"))

    def scaling_resolved(self) -> claims.Domain:
        return self.mode_resolvable() & claims.domain(
            (f"|g_eff/g − 1| at ε ≥ {SCALING_FLOOR:g} (an offset above the ε/10 floor)",
             abs(self.g_eff_rel) >= SCALING_FLOOR, f"|g_eff/g − 1| = {abs(self.g_eff_rel):.2g}"))

    def random_plateau(self) -> claims.Domain:
        return claims.domain((
            "random chain on θ_c¹ at the horizon t: t ≥ 2.5T₁, λ_c(t − 2.5T₁) ≥ 10 (contracted), 2|g|t ≤ log(1/ε) "
            "(attention still frozen)", self._g_rand_separated,
            f"t = {self.t_rand:g}, 2.5T₁ = {self._rand_t_cond:.0f}, λ_c = {self._rand_lambda_c:.3g}, "
            f"2|g|t = {2 * abs(self._g_rand_c) * self.t_rand:.3g}, log(1/ε) = {np.log(1 / self.init_scale):.3g}"))

    # ---- figure --------------------------------------------------------------------------------
    def figures(self) -> list:
        from attnflow import plotting
        from attnflow.plotting import shade_stages
        from attnflow.plotting import PALETTE

        pr, markov, g = self._plateau, self._chain, self.g
        q, t = pr.run.quantities, pr.run.t
        fig, axes = plotting.subplots(2, 3, width=3.6, height=2.9)
        ax = axes[0]
        for a_ in ax[:3]:
            shade_stages(a_, [("condensation", t[1], self.t_cond), ("plateau", self.t_cond, t[-1])])
        ax[0].semilogx(t[1:], q["loss"][1:], color="k")
        ax[0].axhline(self.H_pi, ls="--", color=PALETTE[1], label=r"$H(\pi)$")
        ax[0].axvline(self.t_c1, color=PALETTE[3], lw=1, label=r"$\theta_c^1$ read here")
        ax[0].set(xlabel="t", ylabel="loss", title="plateau at the unigram loss")
        ax[0].legend(fontsize="x-small")
        for k in range(markov.d):
            line, = ax[1].semilogx(t[1:], q["amp"][1:, k], lw=1.4, label=f"$a_{k}$" if k < 3 else None)
            ax[1].axhline(self._a_star[k], ls=":", color=line.get_color(), lw=1)
        ax[1].set(xlabel="t", title=r"amplitudes $a_k$ (dotted: $\alpha\pi_k$)")
        ax[1].legend(fontsize="x-small")
        ax[2].semilogy(t, np.abs(q["kappa"]), color=PALETTE[0], label=r"$|\kappa|$")
        ax[2].semilogy(t, q["M_fro"], color=PALETTE[4], lw=1, label=r"$\|W_QW_K^\top\|_F$")
        tt = np.array(pr.t_kappa)
        i0 = pr.run.at(pr.t_kappa[0])
        ax[2].semilogy(tt, np.abs(q["kappa"][i0]) * np.exp(2 * abs(g) * (tt - pr.t_kappa[0])) * 3, color="k", lw=1,
                       label=r"slope $2g$ (shifted)")
        ax[2].axvspan(*pr.t_kappa, color=PALETTE[0], alpha=0.08)
        ax[2].set(xlabel="t", title=r"attention grows at $2g$")
        ax[2].legend(fontsize="x-small")
        ax = axes[1]
        blocks = self._blocks
        n_emb = len(blocks.embedding_eigs)
        ax[0].plot(np.arange(n_emb), blocks.embedding_eigs, ".", color=PALETTE[0], label=r"$(W_0,W_1)$ block")
        ax[0].plot(n_emb + np.arange(len(blocks.attention_eigs)), blocks.attention_eigs, ".", color=PALETTE[3],
                   label=r"$(W_Q,W_K)$ block")
        ax[0].axhline(g, color=PALETTE[3], lw=0.8, ls=":")
        ax[0].set_yscale("symlog", linthresh=1e-3)
        ax[0].set(xlabel="eigenvalue index (sorted per block)", title=r"spectrum of $-\nabla^2L(\theta_c^1)$")
        ax[0].legend(fontsize="x-small")
        tr, qr = self._run_r.t, self._run_r.quantities
        ax[1].plot(tr, qr["cos_W1_pic"], color=PALETTE[2], label=r"$|\cos(v_1(W_1),\pi-\frac{1}{d})|$")
        ax[1].plot(tr, qr["cos_W1_ell"], color=PALETTE[1], ls="--", label=r"$|\cos(v_1(W_1),\ell)|$")
        ax[1].set(xlabel="t", ylim=(0.9, 1.002), title=f"random chain (d = {self._rand.d}): $W_1$ turns")
        ax[1].legend(fontsize="x-small", loc="lower right")
        ax[2].plot(tr, qr["loss"], color="k")
        ax[2].axhline(self.H_rand, ls="--", color=PALETTE[1], label=r"$H(\pi)$")
        ax2 = ax[2].twinx()
        ax2.plot(tr, qr["W0_fro"], color=PALETTE[0], lw=1.2)
        ax2.axhline(self.W0_rand_pred, ls=":", color=PALETTE[0])
        ax2.set_ylabel(r"$\|W_0\|_F$ (blue; dotted: predicted)", color=PALETTE[0], fontsize="small")
        ax2.grid(False)
        ax[2].set(xlabel="t", ylabel="loss", title="random chain: loss and $\\|W_0\\|_F$")
        ax[2].legend(fontsize="x-small", loc="center right")
        fig.suptitle(f"Unigram saddle on the {markov.name}, m = {self.d_model}", y=1.03)
        return [fig]

    # ---- claims --------------------------------------------------------------------------------
    def check_claims(self) -> None:
        g, eps = self.g, self.init_scale
        claims.check("B4", self.n_sym_nonzero, 0, atol=0,
                     what="sympy: nonzero residuals (P̂ − π, L − H(π), ∇L₁, balance, g)", source="reconstruction")
        claims.check("B5", self.att_err, 0.0, atol=1e-10,
                     what="autograd: attention block of J at θ_c¹ vs {±g (m each), 0}", source="reconstruction")
        claims.check("B5", self.emb_max, 0.0, atol=1e-10,
                     what="autograd: largest eigenvalue of the (W0, W1) block (≤ 0: neutral or contractive)",
                     source="paper + reconstruction")
        claims.check("B5", self.cross_max, 0.0, atol=1e-12,
                     what="autograd: largest cross term ∂²L/∂(WQ,WK)∂(W0,W1) at θ_c¹", source="reconstruction")
        claims.check("B5", self.n_unstable, self.d_model, atol=0,
                     what="number of positive eigenvalues of J (the m-dimensional q = k mode)", source="paper + reconstruction")
        claims.check("B5", self.qk_res, 0.0, atol=1e-8,
                     what="max ‖WQ part − sign(g)·WK part‖ of the unstable eigenvectors", source="reconstruction")
        claims.check("B5", self.g_numeric, abs(g), rtol=1e-8, what="largest eigenvalue of J vs closed-form |g|",
                     source="reconstruction")
        claims.check("B5", self.mode_growth, self.mode_growth_pred, rtol=2 * eps, domain=self.mode_resolvable(),
                     what="log-growth of the unstable mode ‖q ± k‖² over the window vs 2∫|g_eff|dt", source="reconstruction")
        claims.check("B5", abs(self.g_eff_small_rel), 0.0, atol=0.2 * abs(self.g_eff_rel) + 1e-4,
                     domain=self.scaling_resolved(),
                     what="|g_eff/g − 1| at ε/10 (must shrink ≥ 5× from its value at ε: an O(ε) offset)",
                     source="reconstruction")
        plateau = self.plateau_reached()
        claims.check("B4", self.loss_c1, self.H_pi, atol=1e-6, domain=plateau,
                     what="L at the closest approach to θ_c¹ vs H(π)", source="reconstruction")
        claims.check("B4", self.W0_c1, self.W0_pred, rtol=self.W0_tol, domain=plateau,
                     what="‖W0‖_F at θ_c¹ vs √(‖ℓ‖/‖π‖)", source="reconstruction")
        claims.check("B4", self.amp_err, 0.0, atol=5 * eps, domain=plateau, what="max |a_k − απ_k| at θ_c¹",
                     source="reconstruction")
        claims.check("B4", self.cos_ell, 1.0, atol=1e-4, domain=plateau,
                     what="|cos(top right sing. vector of W1, ℓ)| at θ_c¹", source="reconstruction")
        rp = self.random_plateau()
        claims.check("B17", self.W0_rand, self.W0_rand_pred, rtol=self.W0_rand_tol, domain=rp,
                     what="random chain: ‖W0‖_F at the horizon vs √(‖ℓ‖/‖π‖)", source="reconstruction")
        claims.check("B17", self.L_rand, self.H_rand, atol=1e-6, domain=rp, what="random chain: L at the horizon vs H(π)",
                     source="reconstruction")
        claims.check("B17", self.cos_pic_max, 1.0, atol=1e-4, domain=rp, what="random chain: max |cos(W1, π − 1/d)|",
                     source="reconstruction")
        claims.check("B17", self.cos_ell_final, 1.0, atol=1e-4, domain=rp, what="random chain: final |cos(W1, ℓ)|",
                     source="reconstruction")
        if self.reference_chain:
            claims.check("B13", self.H_pi, SPEC["H_pi"], atol=half_unit(5), what="H(π), reference chain")
            claims.check("B13", self.W0_pred, SPEC["W0_norm_c1"], atol=half_unit(5),
                         what="closed-form ‖W0‖ at θ_c¹, reference chain")
            claims.check("B13", g, SPEC["g"], atol=half_unit(5), what="closed-form g, reference chain")
        if self.reference:
            claims.check("B13", self.W0_c1, SPEC["W0_norm_c1_measured"], rtol=1e-4,
                         what="measured ‖W0‖_F at t = 200 vs the spec's 1.26655")
            claims.check("B13", self._amp_c1, np.array(SPEC["amp_c1_measured"]), atol=5 * eps,
                         what="measured amplitudes a at t = 200 vs the spec's")
            claims.check("B13", self.kappa_rate, SPEC["kappa_rate_measured"], rtol=2e-3,
                         what="κ growth rate vs the spec's measured 0.00569")
        if self.spec_random:
            claims.check("B17", self.W0_rand_pred, SPEC["W0_norm_c1_random"], atol=half_unit(5),
                         what="random chain: predicted ‖W0‖ vs spec")
            claims.check("B17", self.H_rand, SPEC["H_pi_random"], atol=half_unit(5), what="random chain: H(π) vs spec")
            claims.check("B17", self.cos_pic_final, SPEC["cos_W1_pic_final_random"], atol=half_unit(4),
                         what="random chain: final |cos(W1, π − 1/d)| vs the spec's 0.9816")


def unigram_saddle_report(cfg) -> UnigramSaddleReport:
    """Measure everything the unigram-saddle page shows (see the module docstring)."""
    markov = make_chain(cfg)
    mc = model.ModelConfig.from_cfg(cfg)
    m, eps = mc.d_model, mc.init_scale
    _start = time.perf_counter()
    saddle = symbolic.unigram_saddle(3)
    block = symbolic.attention_block(2)
    symbolic_s = time.perf_counter() - _start
    n_sym_nonzero = sum(int(not symbolic.is_zero(e)) for e in
                        [*saddle.P_hat_residual, saddle.loss_residual, *saddle.grad_a, *saddle.grad_b,
                         saddle.balance_residual, saddle.g_residual])

    c1 = closed_forms.theta_c1(markov)
    g = closed_forms.g_rate(markov, mc.score_scale)
    loss = mc.population_loss(markov)
    blocks = spectrum.jacobian_blocks(loss, spectrum.theta_c1_params(markov, m), sign=np.sign(g))
    att_pred = np.sort(np.r_[np.full(m, -g), np.zeros(2 * m * m - 2 * m), np.full(m, g)])
    with np.errstate(all="ignore"):
        grad_c1 = measure.grad_norms({n: v[None] for n, v in spectrum.theta_c1_params(markov, m).items()}, loss)[0]

    pr = plateau_run(markov, mc, cfg.horizon, cfg.kappa_window)
    q, t = pr.run.quantities, pr.run.t
    g_eff_small = g_eff_at_small_eps(markov, mc, cfg.kappa_window)
    i_c1 = pr.run.at(200.0) if is_reference(cfg) else pr.run.at(pr.t_c1)    # the spec reads θ_c¹ at t = 200
    loss_c1, W0_c1, amp_c1 = float(q["loss"][i_c1]), float(q["W0_fro"][i_c1]), q["amp"][i_c1]
    balance = float(np.abs(q["balance"]).max())

    rand = dirichlet_chain(cfg.random_d, seed=cfg.random_seed)
    c1_rand = closed_forms.theta_c1(rand)
    run_r = runs.population_flow(rand, model=mc, t_eval=runs.time_grid(cfg.random_horizon,
                                                                        fine_until=cfg.random_horizon, fine_dt=1.0))
    qr = run_r.quantities
    g_rand = closed_forms.g_rate(rand)
    g_rand_c = closed_forms.g_rate(rand, mc.score_scale)
    rand_blocks = spectrum.jacobian_blocks(mc.population_loss(rand), spectrum.theta_c1_params(rand, m),
                                           sign=np.sign(g_rand_c) or 1.0)
    lam_r = contraction_rate(rand_blocks.embedding_eigs)
    t_cond_r = 2.5 * closed_forms.escape_time_origin(rand, eps)
    # on θ_c¹ at the horizon: condensed (t ≥ 2.5 T₁), contracted (e^{−λ_c(t − 2.5T₁)} ≤ e^{−10}) and attention
    # still frozen (κ ≈ ε² e^{2|g|t} ≤ ε, i.e. 2|g| t ≤ log(1/ε))
    rand_ok = bool(cfg.random_horizon >= t_cond_r and lam_r * (cfg.random_horizon - t_cond_r) >= 10.0
                   and 2 * abs(g_rand_c) * cfg.random_horizon <= np.log(1 / eps))
    return UnigramSaddleReport(
        n_sym_nonzero=n_sym_nonzero, symbolic_s=symbolic_s,
        g=g, two_g=2 * g, two_g_abs=2 * abs(g), g_numeric=float(blocks.eigs.max()),
        att_err=float(np.abs(blocks.attention_eigs - att_pred).max()), emb_max=float(blocks.embedding_eigs.max()),
        emb_min=float(blocks.embedding_eigs.min()), n_neutral=int((np.abs(blocks.embedding_eigs) < 1e-10).sum()),
        n_emb=len(blocks.embedding_eigs), n_unstable=blocks.n_unstable, qk_res=blocks.unstable_qk_residual,
        cross_max=blocks.cross_max, grad_c1=float(grad_c1), W0_pred=c1.W0_norm, alpha=c1.alpha,
        H_pi=markov.unigram_entropy(), lambda_c=contraction_rate(blocks.embedding_eigs),
        sigma0=closed_forms.sigma0(markov),
        t_cond=pr.t_cond, t_c1=float(t[i_c1]), loss_c1=loss_c1, W0_c1=W0_c1,
        amp_err=float(np.abs(amp_c1 - c1.a).max()), cos_ell=float(q["cos_W1_ell"][i_c1]),
        cos_W0=float(q["cos_W0_pi"][i_c1]), kappa_rate=pr.kappa_rate, mode_rate=pr.mode_rate,
        mode_rel=pr.mode_rate / (2 * abs(g)) - 1, g_eff=pr.g_eff_start, g_eff_rel=pr.g_eff_start / g - 1,
        mode_growth=pr.mode_growth, mode_growth_pred=pr.mode_growth_pred,
        mode_growth_rel=pr.mode_growth / pr.mode_growth_pred - 1, g_eff_small=g_eff_small,
        g_eff_small_rel=g_eff_small / g - 1, eps_small=eps / 10,
        W0_tol=1e-4 + 2 * markov.d * m * eps**2 / c1.W0_norm**2, tk0=pr.t_kappa[0], tk1=pr.t_kappa[1],
        balance=balance, balance_rel=balance / c1.W0_norm**2, grad_min=pr.grad_min if not is_reference(cfg)
        else float(measure.grad_norms({n: v[i_c1:i_c1 + 1] for n, v in pr.run.result.states().items()}, loss)[0]),
        loss_dev=loss_c1 - markov.unigram_entropy(), kappa_rel=pr.kappa_rate / (2 * g) - 1,
        flow_s=pr.run.wall_s, flow_nfev=pr.run.nfev, t_end=float(t[-1]),
        W0_rand=float(qr["W0_fro"][-1]), W0_rand_pred=c1_rand.W0_norm, L_rand=float(qr["loss"][-1]),
        H_rand=rand.unigram_entropy(), cos_pic_max=float(qr["cos_W1_pic"].max()),
        cos_pic_final=float(qr["cos_W1_pic"][-1]), cos_ell_final=float(qr["cos_W1_ell"][-1]),
        cos_pic_ell=float(measure.cos(rand.pi - 1 / rand.d, rand.ell)), g_rand=g_rand, t_rand=cfg.random_horizon,
        random_d_val=cfg.random_d, W0_rand_tol=1e-4 + 2 * rand.d * m * eps**2 / c1_rand.W0_norm**2,
        W0_rand_H_pi_gap=float(qr["loss"][-1] - rand.unigram_entropy()),
        init_scale=eps, d_model=m, reference_chain=is_reference(cfg, model=False), reference=is_reference(cfg),
        spec_random=(cfg.random_d == 6 and cfg.random_seed == 0 and is_reference(cfg, model=True, delta=False)
                     and cfg.random_horizon == 600.0),
        chain_name=markov.name,
        saddle=saddle, block=block, _blocks=blocks, _plateau=pr, _amp_c1=amp_c1, _a_star=c1.a, _chain=markov,
        _rand=rand, _run_r=run_r, _rand_lambda_c=lam_r,
        _g_rand_separated=rand_ok, _rand_t_cond=t_cond_r, _g_rand_c=g_rand_c)
