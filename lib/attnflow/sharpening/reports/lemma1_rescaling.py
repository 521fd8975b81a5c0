"""Report of the page sharpening/lemma1_rescaling (Lemma 1, claim A2).

``lemma1_report(cfg)`` measures everything the page shows: the sympy residuals of the scalar and
matrix identities, autograd against items 2 and 3 at the initial state, the three integrated
flows (factorized, rescaled collapsed, plain collapsed) and the scalar example for each imbalance.

Domains (computed from the parameters and the initial state, before any flow is integrated):

- item 3 needs balanced initial factors: ‖W_QᵀW_Q − W_KᵀW_K‖ ≤ 1e-12‖W_Q‖² at t = 0;
- trajectory comparisons are informative only when their tolerance 10³·rtol is small,
  ≤ 1e-4 (rtol ≤ 1e-7); with a looser solver they are outside their domain;
- "the plain collapsed flow differs" is predicted when the first-order separation at t = 0,
  t_max·‖Ẇ_rescaled(0) − Ẇ_plain(0)‖_max / ‖W(0)‖_max, is at least 0.1 (ten times the 0.01
  threshold): for shorter horizons or rates close to η the two flows need not separate.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from attnflow import claims, device
from attnflow.report import PageReport
from attnflow.sharpening import rescaling, symbolic

__all__ = ["Lemma1Report", "lemma1_report", "TRAJ_FACTOR", "TRAJ_TOL_MAX", "SEPARATION_MIN", "ROUNDOFF"]

TRAJ_FACTOR = 1e3        # trajectory tolerance = TRAJ_FACTOR × rtol (global error of two adaptive solutions)
TRAJ_TOL_MAX = 1e-4      # largest trajectory tolerance for which the comparison says something
SEPARATION_MIN = 0.1     # first-order predicted separation above which the plain flow must differ by > 0.01
SEPARATION_THRESHOLD = 1e-2
ROUNDOFF = 1e-12         # float64 evaluations of one quantity in two orders (eigh in the square root)


@dataclass
class Lemma1Report(PageReport):
    """Measurements of Lemma 1 (relative errors are relative to the largest entry)."""

    n_nonzero_symbolic: int       # sympy residuals of items 1–2 and the scalar identities that are not zero
    err_item2: float              # autograd vs item 2 at t = 0
    err_item3: float              # autograd vs item 3 (balanced) at t = 0
    imbalance0: float             # ‖W_QᵀW_Q − W_KᵀW_K‖_max / ‖W_Q‖²_max at t = 0 (domain of item 3)
    separation_predicted: float   # t_max ‖Ẇ_resc(0) − Ẇ_plain(0)‖ / ‖W(0)‖ (first order)
    dev_rescaled: float           # factorized vs rescaled collapsed flow, over the whole trajectory
    dev_collapsed: float          # factorized vs plain collapsed flow
    balance_drift: float          # max drift of ‖W_QᵀW_Q − W_KᵀW_K‖_F
    dev_scalar: float             # scalar: max |qk − b_rescaled| over δ
    drift_scalar: float           # scalar: max drift of δ = q² − k²
    rtol_used: float
    tol_traj: float               # TRAJ_FACTOR × rtol
    lr_qk: float
    # non-scalar results (not glued)
    W_q0: torch.Tensor = field(repr=False, default=None)   # (d, d_h)
    W_k0: torch.Tensor = field(repr=False, default=None)   # (d, d_h)
    G: torch.Tensor = field(repr=False, default=None)      # (d, d) ∇_W L at W(0)
    W_dot: torch.Tensor = field(repr=False, default=None)  # (d, d) autograd dW/dt at t = 0
    flows: Any = field(repr=False, default=None)           # rescaling.FlowComparison
    scalar_runs: dict = field(repr=False, default_factory=dict)   # δ -> scalar_flows dict
    scalar: Any = field(repr=False, default=None)          # symbolic.lemma1_scalar()
    matrix: Any = field(repr=False, default=None)          # symbolic.lemma1_matrix(2, 2)

    # -- domains -----------------------------------------------------------------------------
    def traj_domain(self) -> claims.Domain:
        return claims.domain((f"trajectory tolerance 10³·rtol ≤ {TRAJ_TOL_MAX:g}", self.tol_traj <= TRAJ_TOL_MAX,
                              f"10³·rtol = {self.tol_traj:.2g}"))

    def balanced_domain(self) -> claims.Domain:
        return claims.domain(("factors balanced at t = 0 (relative imbalance ≤ 1e-12)", self.imbalance0 <= ROUNDOFF,
                              f"imbalance {self.imbalance0:.2g}"))

    def separation_domain(self) -> claims.Domain:
        return self.traj_domain() & claims.domain(
            (f"predicted first-order separation t_max‖ΔẆ(0)‖/‖W(0)‖ ≥ {SEPARATION_MIN:g}",
             self.separation_predicted >= SEPARATION_MIN, f"{self.separation_predicted:.3g}"))

    # -- figures -----------------------------------------------------------------------------
    def figures(self) -> list:
        from attnflow import plotting
        from attnflow.plotting import MODEL_COLORS

        c = self.flows
        fig, ax = plotting.subplots(1, 3, width=3.6, height=3.1)
        ax, t = ax[0], c.t
        k = max(1, len(t) // 20)
        d = c.W_factorized.shape[1]
        for (i, j) in [(0, 0), (0, 1), (1, 0), (2, 2)][:d]:
            line, = ax[0].plot(t, c.W_factorized[:, i, j], lw=2.2, alpha=0.55)
            ax[0].plot(t[::k], c.W_rescaled[::k, i, j], "o", ms=3.5, color=line.get_color())
            ax[0].plot(t, c.W_collapsed[:, i, j], "--", lw=1.0, color=line.get_color())
        ax[0].set(xlabel="t", ylabel=r"entries of $W_{QK}(t)$",
                  title="factorized (line) = rescaled (dots)\nplain collapsed (dashed) differs")
        ax[1].plot(t, c.loss["factorized"], color=MODEL_COLORS["FAFO"], lw=2.4, alpha=0.6, label="factorized")
        ax[1].plot(t, c.loss["rescaled"], ":", color="k", label="rescaled collapsed")
        ax[1].plot(t, c.loss["collapsed"], "--", color=MODEL_COLORS["CACO"], label=r"collapsed, same $\eta$")
        ax[1].set(xlabel="t", ylabel="loss", title="loss along the three flows")
        ax[1].legend(fontsize="small")
        for delta, r in self.scalar_runs.items():
            line, = ax[2].plot(r["t"], r["b_factorized"], lw=2.2, alpha=0.55, label=fr"$\delta={delta:g}$")
            kk = max(1, len(r["t"]) // 20)
            ax[2].plot(r["t"][::kk], r["b_rescaled"][::kk], "o", ms=3.5, color=line.get_color())
        ax[2].set(xlabel="t", ylabel=r"$b=qk$", title="scalar: $(q,k)$ flow (line)\nvs rescaled ODE for $b$ (dots)")
        ax[2].legend(title=r"$L=-\log p(b)$, $n=9$", fontsize="small")
        fig.suptitle("Lemma 1: gradient flow on factors = collapsed flow at a state-dependent rate", y=1.04)
        return [fig]

    # -- claims ------------------------------------------------------------------------------
    def check_claims(self) -> None:
        tol, traj = self.tol_traj, self.traj_domain()
        claims.check("A2", self.n_nonzero_symbolic, 0, atol=0, source="prior work",
                     what="sympy: nonzero residuals of items 1–2 and the scalar identities")
        claims.check("A2", self.err_item2, 0.0, atol=ROUNDOFF, source="prior work",
                     what="autograd vs item 2, relative max error")
        claims.check("A2", self.err_item3, 0.0, atol=ROUNDOFF, source="prior work", domain=self.balanced_domain(),
                     what="autograd vs item 3 (balanced), relative max error")
        claims.check("A2", self.dev_rescaled, 0.0, atol=tol, source="prior work", domain=traj & self.balanced_domain(),
                     what="factorized flow vs rescaled collapsed flow, relative max deviation")
        claims.check("A2", self.balance_drift, 0.0, atol=tol, source="prior work", domain=traj,
                     what="max drift of ‖W_QᵀW_Q − W_KᵀW_K‖_F along the factor flow")
        claims.check("A2", self.dev_scalar, 0.0, atol=tol, source="prior work", domain=traj,
                     what="scalar: max |qk − b_rescaled| over δ")
        claims.check("A2", self.drift_scalar, 0.0, atol=tol, source="prior work", domain=traj,
                     what="scalar: max drift of δ = q² − k²")
        claims.check("A2", self.dev_collapsed, predicate=lambda x: x > SEPARATION_THRESHOLD,
                     tolerance="> 0.01 (the rescaling changes the trajectory)", domain=self.separation_domain(),
                     what="plain collapsed flow vs factorized flow, relative max deviation", source="reconstruction")


def lemma1_report(cfg) -> Lemma1Report:
    """Measure Lemma 1 for the page parameters ``cfg`` (``contracts.LEMMA1_RESCALING``)."""
    scalar = symbolic.lemma1_scalar()
    matrix = symbolic.lemma1_matrix(d=2, d_h=2)
    n_nonzero = sum(int(not symbolic.is_zero(e)) for e in
                    [scalar.imbalance_dot, scalar.rate_identity, *matrix.residual, *matrix.balancedness_dot])
    with device.single_threaded():
        task = rescaling.PointerTask.sample(cfg.d, cfg.n_keys, cfg.n_samples, cfg.seed)
        W_q0, W_k0 = rescaling.balanced_factors(cfg.d, cfg.d_h, cfg.init_scale, cfg.seed)
        W_dot, G = rescaling.autograd_rate(task, W_q0, W_k0, cfg.lr_qk)
        forms = rescaling.lemma_rate(W_q0, W_k0, G, cfg.lr_qk)
        scale = float(W_dot.abs().max())
        err2 = float((W_dot - forms["factor_form"]).abs().max()) / scale
        err3 = float((W_dot - forms["balanced_form"]).abs().max()) / scale
        imb = float((W_q0.T @ W_q0 - W_k0.T @ W_k0).abs().max()) / float((W_q0.T @ W_q0).abs().max())
        W0 = W_q0 @ W_k0.T
        sep = cfg.t_max * float((forms["balanced_form"] + cfg.lr_qk * G).abs().max()) / float(W0.abs().max())
        cmp = rescaling.compare_flows(task, W_q0, W_k0, cfg.lr_qk, cfg.t_max, cfg.n_times, rtol=cfg.rtol)
        W_norm = float(np.abs(cmp.W_factorized).max())
        runs = {delta: rescaling.scalar_flows(delta, cfg.lr_qk, cfg.t_max, cfg.n_times, rtol=cfg.rtol)
                for delta in cfg.imbalances}
    return Lemma1Report(
        n_nonzero_symbolic=n_nonzero, err_item2=err2, err_item3=err3, imbalance0=imb, separation_predicted=sep,
        dev_rescaled=float(np.abs(cmp.W_factorized - cmp.W_rescaled).max()) / W_norm,
        dev_collapsed=float(np.abs(cmp.W_factorized - cmp.W_collapsed).max()) / W_norm,
        balance_drift=float(cmp.balancedness.max()),
        dev_scalar=max(float(np.abs(r["b_factorized"] - r["b_rescaled"]).max()) for r in runs.values()),
        drift_scalar=max(float(np.abs(r["imbalance_drift"]).max()) for r in runs.values()),
        rtol_used=cfg.rtol, tol_traj=TRAJ_FACTOR * cfg.rtol, lr_qk=cfg.lr_qk,
        W_q0=W_q0, W_k0=W_k0, G=G, W_dot=W_dot, flows=cmp, scalar_runs=runs, scalar=scalar, matrix=matrix,
    )
