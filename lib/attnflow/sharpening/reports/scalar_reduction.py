"""Report of the page sharpening/scalar_reduction (Proposition 2, claim A2).

``scalar_reduction_report(cfg)`` builds the sympy reduction (the reduced gradients, the full model's
gradient on the manifold for an explicit K = 3, M = 2, T = 4 instance, the factorized rates), then
integrates the full model's population gradient flow from the manifold for each parametrization
and compares it with the reduced ODE at the mapped rates.

Domains (from the parameters, before integrating):

- full flow vs reduced ODE within 10³·rtol: informative only when 10³·rtol ≤ 1e-4;
- distance from the manifold at round-off, 1e-10 × max(1, scale/10) where scale is the largest
  |a|, |b| of the trajectory: every accepted parameter set (linear combinations of symmetric
  states stay symmetric); the 1e-10 was argued for entries of size ≲ 10, so it grows with them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sympy as sp

from attnflow import claims, device
from attnflow.report import PageReport
from attnflow.sharpening import data, reduction, symbolic, targets

__all__ = ["ScalarReductionReport", "scalar_reduction_report", "TRAJ_FACTOR", "TRAJ_TOL_MAX", "MANIFOLD_TOL",
           "SYMBOLIC_INSTANCE"]

TRAJ_FACTOR = 1e3          # two independent adaptive solutions at rtol: global error ≲ 10³·rtol of the scale
TRAJ_TOL_MAX = 1e-4        # above this the comparison shows nothing
MANIFOLD_TOL = 1e-10       # ~10⁴ solver steps of 1e-16 relative round-off on entries of size ≲ 10
SYMBOLIC_INSTANCE = dict(K=3, M=2, T=4)   # the explicit sympy instance of the full model


@dataclass
class ScalarReductionReport(PageReport):
    n_sequences: int              # compositions of the population
    seq_len: int
    n_classes_used: int
    n_common_used: int
    n_compete_used: int
    rtol_used: float
    embedding_used: str
    fm_entries: int               # gradient entries of the explicit sympy instance
    fm_sequences: int
    n_nonzero_reduced: int        # nonzero sympy residuals of ∂L/∂a, ∂L/∂b
    n_nonzero_full: int           # nonzero residuals of the full-model gradient on the manifold and the rates
    c_ov: float
    kappa: float
    ratio_ca: float               # κ²/c_OV with the spec's generator (K = 5, M = 20)
    ratio_fa: float               # κ/c_OV
    dev_max: float
    residual_max: float
    entry_scale: float            # largest |a|, |b| of the reduced trajectories
    dev_rel: dict = field(default_factory=dict)        # name -> max |Δ(a, b)| / scale
    residual_by: dict = field(default_factory=dict)    # name -> max distance from the manifold
    runs: dict = field(repr=False, default_factory=dict)   # name -> reduction.Comparison
    sym: Any = field(repr=False, default=None)   # (reduced gradients, full model, factorized rates)
    lr_ratio: float = 1.0

    def traj_domain(self) -> claims.Domain:
        tol = TRAJ_FACTOR * self.rtol_used
        return claims.domain((f"trajectory tolerance 10³·rtol ≤ {TRAJ_TOL_MAX:g}", tol <= TRAJ_TOL_MAX,
                              f"10³·rtol = {tol:.2g}"))

    @property
    def manifold_tol(self) -> float:
        return MANIFOLD_TOL * max(1.0, self.entry_scale / 10)

    def table(self):
        from attnflow import display

        return display.table([{"model": n, "r' (reduced)": c.lr_ratio_reduced, "a(t_max)": c.a_full[-1],
                               "b(t_max)": c.b_full[-1], "max |Δ|/scale": self.dev_rel[n],
                               "max residual": self.residual_by[n], "gradient evals": c.nfev, "seconds": c.wall_s}
                              for n, c in self.runs.items()])

    def figures(self) -> list:
        from attnflow import plotting
        from attnflow.plotting import MODEL_COLORS

        fig, ax = plotting.subplots(1, 3, width=3.6, height=3.1)
        ax = ax[0]
        for name, c in self.runs.items():
            col, k = MODEL_COLORS[name], max(1, len(c.t) // 12)
            ax[0].plot(c.t, c.a_full, color=col, alpha=0.6, lw=2.4, label=name)
            ax[0].plot(c.t[::k], c.a_reduced[::k], "o", ms=3.5, color=col)
            ax[1].plot(c.t, c.b_full, color=col, alpha=0.6, lw=2.4)
            ax[1].plot(c.t[::k], c.b_reduced[::k], "o", ms=3.5, color=col)
            ax[2].semilogy(c.t[1:], np.maximum(c.residual[1:], 1e-18), color=col)
        ax[0].set(xlabel="t", ylabel="a (OV scalar)", title="full model (lines)\nvs reduced ODE (dots)")
        ax[0].legend(fontsize="small")
        ax[1].set(xlabel="t", ylabel="b (QK scalar)", title="same, QK scalar")
        ax[2].set(xlabel="t", ylabel="distance from the manifold", title="the flow stays on the manifold",
                  ylim=(1e-18, 1e-6))
        fig.suptitle(f"Proposition 2: population gradient flow of the full model, K={self.n_classes_used}, "
                     f"M={self.n_common_used}, n={self.n_compete_used}, r={self.lr_ratio:g}", y=1.04)
        return [fig]

    def check_claims(self) -> None:
        claims.check("A2", self.n_nonzero_reduced, 0, atol=0,
                     what="Prop. 2, sympy: nonzero residuals of ∂L/∂a, ∂L/∂b (spec §5.2)")
        claims.check("A2", self.n_nonzero_full, 0, atol=0,
                     what="Prop. 2, sympy: nonzero residuals of the full-model gradient on the manifold and of the rates")
        for name in self.runs:
            claims.check("A2", self.dev_rel[name], 0.0, atol=TRAJ_FACTOR * self.rtol_used, domain=self.traj_domain(),
                         what=f"Prop. 2, {name}: full-model flow vs reduced ODE, max |Δ(a,b)| / scale")
            claims.check("A2", self.residual_by[name], 0.0, atol=self.manifold_tol,
                         what=f"Prop. 2, {name}: max distance from the manifold")


def symbolic_reduction():
    """The page's sympy objects: reduced gradients, the explicit full-model instance, factorized rates,
    and the number of residuals that do not simplify to zero (reduced; full + rates)."""
    rg = symbolic.reduced_gradients()
    fm = symbolic.full_model_reduction(**SYMBOLIC_INSTANCE)
    fr = symbolic.factorized_rates(K=SYMBOLIC_INSTANCE["K"])
    n_red = int(not symbolic.is_zero(rg.residual_a)) + int(not symbolic.is_zero(rg.residual_b))
    n_full = sum(int(not symbolic.is_zero(e)) for e in [*fm.residual, *fm.rate_residual])
    n_full += int(not symbolic.is_zero(fr.ov_sqrt_residual))
    return rg, fm, fr, n_red, n_full


def reduced_loss_gradients():
    """(∂L/∂a, ∂L/∂b) of the spec's forms in p, s, a (shown on the page)."""
    p, s, a = sp.symbols("p s a", positive=True)
    return -p * (1 - s), -a * p * (1 - p) * (1 - s)


def scalar_reduction_report(cfg) -> ScalarReductionReport:
    """Measure Proposition 2 for the page parameters ``cfg`` (``contracts.SCALAR_REDUCTION``)."""
    task = data.Task(n_classes=cfg.n_classes, n_common=cfg.n_common, seq_len=cfg.n_compete + 2)
    const = reduction.constants(task)
    spec_const = reduction.constants(data.Task(**{k: targets.FULL_CONFIG[k] for k in ("n_classes", "n_common", "seq_len")}))   # the spec's generator
    rg, fm, fr, n_red, n_full = symbolic_reduction()
    emb_seed = cfg.seed if cfg.embedding == "random" else None
    with device.single_threaded():
        runs = {name: reduction.compare_with_reduced(name, task, lr_qk=cfg.lr_ratio, lr_ov=1.0, a0=cfg.a0, b0=cfg.b0,
                                                     t_max=cfg.t_max, n_times=cfg.n_times, d_h=cfg.d_h,
                                                     embedding_seed=emb_seed, rtol=cfg.rtol)
                for name in cfg.parametrizations}
    dev, res = {}, {}
    for name, c in runs.items():
        scale = max(np.abs(c.a_reduced).max(), np.abs(c.b_reduced).max())
        dev[name] = float(max(np.abs(c.a_full - c.a_reduced).max(), np.abs(c.b_full - c.b_reduced).max()) / scale)
        res[name] = float(c.residual.max())
    entry_scale = max([float(max(np.abs(c.a_reduced).max(), np.abs(c.b_reduced).max())) for c in runs.values()])
    return ScalarReductionReport(
        n_sequences=data.n_compositions(task), seq_len=task.seq_len, n_classes_used=cfg.n_classes,
        n_common_used=cfg.n_common, n_compete_used=cfg.n_compete, rtol_used=cfg.rtol,
        embedding_used="a random orthogonal matrix" if cfg.embedding == "random" else "one-hot",
        fm_entries=len(fm.residual), fm_sequences=fm.n_sequences, n_nonzero_reduced=n_red, n_nonzero_full=n_full,
        c_ov=const.c_ov, kappa=const.kappa, ratio_ca=spec_const.kappa**2 / spec_const.c_ov,
        ratio_fa=spec_const.kappa / spec_const.c_ov, dev_max=max(dev.values()), residual_max=max(res.values()),
        entry_scale=entry_scale, dev_rel=dev, residual_by=res, runs=runs, sym=(rg, fm, fr), lr_ratio=cfg.lr_ratio,
    )
