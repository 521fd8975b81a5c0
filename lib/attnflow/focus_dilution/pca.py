"""PCA of the embedding trajectories h_k(t) (spec focus_dilution.md §7 item 7, figure F6).

    p = pca.embedding_pca(run.states["W0"], hub=chain.hub)      # W0 (T, d, m), all stored times
    p.coords[:, k, 0]        # token k on the first principal component, over time

The principal directions are those of the **whole trajectory**: every embedding h_k(t) of every
token at every stored time is one sample of ℝ^m, and the directions are the top right singular
vectors of that (T·d, m) matrix. By default the samples are **not centred**: the origin is where
training starts (θ ≈ 0 at small initialization), and the stages are movements relative to it —
condensation is a move *out* of the origin along π, retraction (dilution) a move of the
low-frequency tokens *back* through it, expansion (escape) a move *out* along a new direction.
Centring would move the origin to the trajectory's mean and hide exactly that.

``phase_movements`` turns the three movements into numbers checked by the PCA page.

Claim B3 ("in stage 1, W0 aligns with π") is *not* read off these components: the trajectory's
PC1 is the direction of its largest second moment, which a run that moves more after condensation
than during it puts elsewhere (seen on hub and Dirichlet chains, errata). B3 is W0's own top left
singular vector at the detected end of condensation (``measure.quantities``' ``cos_W0_pi``);
``frozen_angle`` and ``window_angle`` are R1's predictions of how far it may lie from π, from θ(0)
and the chain, computed before anything is measured.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

__all__ = [
    "EmbeddingPCA",
    "embedding_pca",
    "phase_movements",
    "plot_phases",
    "frozen_angle",
    "window_angle",
    "cos_deviation",
    "COND_FRAC",
    "unigram_level",
    "Phases",
    "first_focus_dilution",
    "run_phases",
    "seed_means",
    "earliest_window_start",
    "retracts",
    "tenfold",
    "expansion_forecast",
    "forecast_domain",
    "forecast_clears",
    "clear_text",
]


def frozen_angle(W0_init, W1_init, pi: np.ndarray, W0_norm: float) -> float:
    """R1's angle (radians, first order) between π and W0's top left singular vector once W0 has
    grown to ‖W0‖ = ``W0_norm`` (θ_c¹'s), from the initialization alone.

    Near the origin Ẇ0 = σ0 π̂ (W1 r̂)ᵀ and Ẇ1 = σ0 (W0ᵀπ̂) r̂ᵀ (π̂, r̂ unit π and π − 1/d): only
    W0's π̂-row grows, along b̂ ∝ W0(0)ᵀπ̂ + W1(0) r̂ (the growing mode), while the part
    (I − π̂π̂ᵀ) W0(0) off π stays frozen (uniform attention reads W0 only through W0ᵀπ). The top
    left singular vector is then π̂ + (I − π̂π̂ᵀ) W0(0) b̂ / ‖W0‖: the angle is that vector's norm."""
    W0, W1 = (
        np.asarray(x.detach().cpu() if isinstance(x, torch.Tensor) else x, dtype=float) for x in (W0_init, W1_init)
    )
    p = pi / np.linalg.norm(pi)
    r = pi - 1.0 / len(pi)
    r = r / np.linalg.norm(r)
    b = W0.T @ p + W1 @ r  # (m,) growing mode's direction
    b = b / np.linalg.norm(b)
    off = W0 - np.outer(p, p @ W0)  # (d, m) frozen part off π
    return float(np.linalg.norm(off @ b) / W0_norm)


def window_angle(P: np.ndarray, pi: np.ndarray, seq_len: int) -> float:
    """Angle between π and the left singular vector of the drive of s-token windows.

    A window's attended mean at uniform attention is its count share c = n/s, so the drive at the
    origin is E[c (e_y − 1/d)ᵀ] = π(π − 1/d)ᵀ + C_s, C_s = (1/s) Σ_{l=1..s} Π(P^l − 1πᵀ) (key at
    lag l from the target; Π = diag π, stationary windows): the population limit s → ∞ is R1's
    rank-one B, and C_s tilts its left vector by O(τ_mix / s)."""
    d = len(pi)
    Q = P - np.outer(np.ones(d), pi)  # Q^l = P^l − 1πᵀ for l ≥ 1
    S = Q @ (np.eye(d) - np.linalg.matrix_power(Q, int(seq_len))) @ np.linalg.inv(np.eye(d) - Q)  # Σ_{l=1..s} Q^l
    drive = np.outer(pi, pi - 1.0 / d) + (pi[:, None] * S) / seq_len
    u = np.linalg.svd(drive)[0][:, 0]
    p = pi / np.linalg.norm(pi)
    return float(np.arctan2(np.linalg.norm(u - (u @ p) * p), abs(u @ p)))  # stable near 0 (arccos is not)


def cos_deviation(*angles: float) -> float:
    """1 − cos of the sum of small angles (radians): the predicted deviation from alignment."""
    return float(1.0 - np.cos(min(np.pi / 2, sum(angles))))


@dataclass
class EmbeddingPCA:
    coords: np.ndarray  # (T, d, k) coordinates of h_k(t) on the principal directions
    components: np.ndarray  # (k, m) principal directions (unit rows)
    explained: np.ndarray  # (k,) share of Σ_t Σ_k ‖h_k(t)‖² along each direction
    centred: bool


def embedding_pca(W0, n_components: int = 3, *, hub: int = 0, centre: bool = False) -> EmbeddingPCA:
    """Principal directions of the stacked embeddings W0 (T, d, m); signs fixed so that the hub
    token ends on the positive side of every direction (directions are defined up to sign)."""
    W = W0.detach().cpu().numpy() if isinstance(W0, torch.Tensor) else np.asarray(W0, dtype=float)
    if W.ndim != 3:
        raise ValueError(f"W0 must have shape (T, d, m) (a trajectory of embeddings), received {W.shape}")
    T, d, m = W.shape
    if not 1 <= n_components <= m:
        raise ValueError(f"n_components = {n_components!r}; allowed: an integer in [1, m = {m}]")
    if not 0 <= hub < d:
        raise ValueError(f"hub = {hub!r}; allowed: a token index in [0, {d - 1}]")
    X = W.reshape(T * d, m)  # (T·d, m) one row per (time, token)
    mean = X.mean(0) if centre else np.zeros(m)
    _, S, Vt = np.linalg.svd(X - mean, full_matrices=False)
    comps = Vt[:n_components]  # (k, m)
    coords = (W - mean) @ comps.T  # (T, d, k)
    flip = np.where(coords[-1, hub] < 0, -1.0, 1.0)  # (k,)
    return EmbeddingPCA(coords * flip, comps * flip[:, None], (S[:n_components] ** 2) / (S**2).sum(), centre)


def phase_movements(p: EmbeddingPCA, t: np.ndarray, pi: np.ndarray, hub: int, marks: dict[str, float]) -> dict:
    """Numbers for the three movements, at times ``marks`` = {"condensed": end of condensation,
    "focus": start of the first focus, "diluted": end of the first dilution, "end": last time}.

    condensation: cos(PC1 coordinates of the tokens at "condensed", π) (→ 1: h_k ∝ π_k along PC1);
    retraction: change of the PC1 coordinate from "focus" to "diluted", hub vs low tokens
        (hub out, low tokens back towards and through the origin);
    expansion: spread (std) of the low tokens on PC2–PC3 at "diluted" and at "end".
    """
    i = {k: int(np.argmin(np.abs(t - v))) for k, v in marks.items()}
    low = np.arange(len(pi)) != hub
    pc1_condensed = p.coords[i["condensed"], :, 0]  # (d,) PC1 coordinates
    pc1_retraction = p.coords[i["diluted"], :, 0] - p.coords[i["focus"], :, 0]  # (d,) PC1 change

    def spread(j):
        x = p.coords[j][low][:, 1:]  # (n_low, k − 1)
        return float(np.sqrt(((x - x.mean(0)) ** 2).sum(1).mean()))

    return dict(
        cos_pi=float(abs(pc1_condensed @ pi) / (np.linalg.norm(pc1_condensed) * np.linalg.norm(pi))),
        retract_hub=float(pc1_retraction[hub]),
        retract_low=pc1_retraction[low],
        spread_before=spread(i["diluted"]),
        spread_after=spread(i["end"]),
    )


def plot_phases(axes, p: EmbeddingPCA, t: np.ndarray, windows: list[tuple[str, float, float]], labels, colors):
    """One PC1–PC2 panel per window (name, t0, t1): each token's path inside the window in colour
    (○ start, ● end), the rest of its trajectory in light grey — static, readable in print."""
    for ax, (name, t0, t1) in zip(axes, windows):
        sel = (t >= t0) & (t <= t1)
        for k in range(p.coords.shape[1]):
            x, y = p.coords[:, k, 0], p.coords[:, k, 1]
            ax.plot(x, y, color="0.85", lw=0.8, zorder=1)
            ax.plot(x[sel], y[sel], color=colors[k], lw=1.8, zorder=2, label=labels[k])
            if sel.any():
                j0, j1 = np.flatnonzero(sel)[[0, -1]]
                ax.plot(x[j0], y[j0], "o", mfc="white", mec=colors[k], ms=5, zorder=3)
                ax.plot(x[j1], y[j1], "o", color=colors[k], ms=5, zorder=3)
        ax.axhline(0, color="0.6", lw=0.6)
        ax.axvline(0, color="0.6", lw=0.6)
        ax.set(title=f"{name}\nt ∈ [{t0:.0f}, {t1:.0f}]", xlabel="PC1", ylabel="PC2")


# ----------------------------------------------------------------------------- the PCA page's measurements
COND_FRAC = 0.05  # B3: stage 1 has ended once the loss is within this share of the drop log d − H(π) of H(π)
NAN = float("nan")


def unigram_level(chain, frac: float = COND_FRAC) -> float:
    """B3's end of condensation: the population loss H(π) + frac·(log d − H(π)) (B4: stage 1 ends at
    θ_c¹, where L = H(π)). Not the detector's first loss transition: where the focus follows at once
    (π concentrated, g large) the detector merges it with condensation and ends both after the focus
    has turned W0 (hub n = 5, a_h = 0.694: cos 0.82 there, 0.9999 at this level); a seed whose later
    drop is larger can have its first transition detected there (t ≈ 1990 of 2000). At 5 % of the
    drop W0 has grown to within ~10 % of ‖W0(θ_c¹)‖ (the measured angle 1.1–1.2× R1's), and a
    trained run's plateau lies above H(π) only by the KL of its sampled targets, ≈ (d − 1)/(2N)."""
    H = chain.unigram_entropy()
    return float(H + frac * (np.log(chain.d) - H))


@dataclass
class Phases:
    """One run's PCA, stages, phase marks and movements (:func:`run_phases`). The movements of a phase the
    detector did not find are NaN (a claim on them then fails inside its domain, never passes on a stand-in
    window); ``marks`` keep the figure's stand-in windows (the condensation end, the run's end)."""

    name: str
    run: object
    detected: object  # stages.Stages
    p: EmbeddingPCA
    marks: dict
    found: bool  # first focus and dilution detected (the marks are stage times)
    condensed: bool  # the loss reaches the unigram level (:func:`unigram_level`): stage 1 ended
    cos_pi: float  # B3: cos(W0's top left singular vector there, π) (NaN: not reached)
    cos_pc1: float  # cos(PC1 coordinates of the tokens there, π): the figure's picture, not B3
    retract_hub: float  # PC1 change of the hub, first focus → end of the first dilution (NaN: not found)
    retract_low: float  # largest PC1 change of a low token (NaN: not found)
    spread_before: float  # low tokens' spread off PC1 at the expansion window's start (NaN: none)
    spread_after: float  # ... at the run's end
    decision: object = None  # stages.Decision: the window starts when the first dilution is over, decided causally

    @property
    def growth(self) -> float:
        """B9: spread off PC1 at the end / at the window start (:attr:`window_start`; NaN: none)."""
        return self.spread_after / self.spread_before

    @property
    def t_diluted(self) -> float:
        """End of the first dilution (the expansion window's start; NaN: not found)."""
        return float(self.marks["diluted"]) if self.found else NAN

    @property
    def retracted(self) -> bool:
        """B7 on this run: the hub out and every low token back on PC1 (False without a first focus and dilution)."""
        return retracts([self.retract_hub, self.retract_low])

    @property
    def window_start(self) -> float | None:
        """The stored time at which the expansion (B9) is measured from (None: none): with a :attr:`decision`
        (``run_phases(..., causal=True)``), the first stored time at which the detector, reading the run up to
        then only, finds the first dilution over — a domain may read the state there (issue 21); else the stored
        time closest to the end of the first dilution located on the whole run."""
        if self.decision is not None:
            return self.decision.time
        return float(self.run.t[self.run.at(self.marks["diluted"])]) if self.found else None

    @property
    def explained(self) -> float:
        """Share of the trajectory's second moment on the kept components."""
        return float(self.p.explained.sum())

    def row(self) -> dict:
        """The run's numbers as one table row (the stage marks, the movements, the explained share)."""
        return {
            "run": self.name,
            "stages": self.detected.letters(),
            "condensed": self.marks["condensed"],
            "focus 1": self.marks["focus"] if self.found else NAN,
            "diluted 1": self.t_diluted,
            "cos(W0, π)": self.cos_pi,
            "Δ hub": self.retract_hub,
            "max Δ low": self.retract_low,
            "spread before": self.spread_before,
            "spread after": self.spread_after,
            "PC1–PC3": self.explained,
        }


def first_focus_dilution(detected):
    """The first focus and the first dilution after it (``stages.MISSING`` where none), whatever cycle the detector
    numbers them in: an escape that starts within the first dilution makes it count that dilution in cycle 2."""
    from attnflow.focus_dilution import stages

    f1 = detected.get("focus")
    return f1, detected.get("dilution", after=f1.start) if np.isfinite(f1.start) else stages.MISSING


def run_phases(name: str, run, chain, n_components: int = 3, centre: bool = False, causal: bool = False) -> Phases:
    """PCA of one run's embeddings W0(t) (flow or trained), its detected stages, the phase marks (end of
    condensation, start of the first focus, end of the first dilution after it, end) and the movements there
    (:func:`phase_movements`); B3's cos(W0's top left singular vector, π) where the loss first reaches
    :func:`unigram_level`. ``causal``: the expansion window (B9) starts when the first dilution is over as decided
    from the run up to then only (``stages.end_of_dilution(run, after_focus=True)``), for a run whose state there
    a domain reads (the flow's R5 forecast); else at the end of the first dilution located on the whole run."""
    from attnflow.focus_dilution import stages

    W0 = run.result.states()["W0"] if getattr(run, "result", None) is not None else run.states["W0"]  # (T, d, m)
    detected = stages.detect_run(run)
    p = embedding_pca(W0, n_components, hub=chain.hub, centre=centre)
    f1, d1 = first_focus_dilution(detected)
    cond_end = detected.stages[0].end
    reached = np.flatnonzero(run.quantities["loss"] <= unigram_level(chain))  # B3: stage 1 ends at θ_c¹
    found = bool(np.isfinite(f1.start) and np.isfinite(d1.end))
    marks = dict(
        condensed=cond_end,
        focus=f1.start if found else cond_end,
        diluted=d1.end if found else float(run.t[-1]),
        end=float(run.t[-1]),
    )
    mv = phase_movements(p, run.t, chain.pi, chain.hub, marks)
    if not found:  # no first focus and dilution: no retraction or expansion window, nothing measured
        mv.update(retract_hub=NAN, retract_low=np.array([NAN]), spread_before=NAN, spread_after=NAN)
    decision = stages.end_of_dilution(run, after_focus=True) if causal else None
    if decision is not None:  # the expansion window is [decision, end]: none where never decided
        at = (
            phase_movements(p, run.t, chain.pi, chain.hub, {**marks, "diluted": decision.t})
            if decision.found
            else dict(spread_before=NAN, spread_after=NAN)
        )
        mv.update(spread_before=at["spread_before"], spread_after=at["spread_after"])
    return Phases(
        name=name,
        run=run,
        detected=detected,
        p=p,
        marks=marks,
        found=found,
        condensed=bool(len(reached)),
        cos_pi=float(run.quantities["cos_W0_pi"][reached[0]]) if len(reached) else NAN,
        cos_pc1=mv["cos_pi"],
        retract_hub=mv["retract_hub"],
        retract_low=float(mv["retract_low"].max()),
        spread_before=mv["spread_before"],
        spread_after=mv["spread_after"],
        decision=decision,
    )


def seed_means(phases: list[Phases]) -> dict[str, float]:
    """Means over the seeds of each movement, NaN left out (``stats.finite_mean``): the page's summary numbers."""
    from attnflow.stats import finite_mean

    keys = ("cos_pi", "cos_pc1", "retract_hub", "retract_low", "spread_before", "spread_after", "explained")
    return {k: finite_mean([getattr(p, k) for p in phases]) for k in keys}


def earliest_window_start(phases: list[Phases]) -> float | None:
    """The earliest time any of the runs ``phases`` starts its expansion window (None: no run has one)."""
    starts = [p.window_start for p in phases if p.window_start is not None]
    return min(starts) if starts else None


def retracts(movement) -> bool:
    """B7's criterion on [hub's PC1 change, largest low token's PC1 change]: the hub moves out (> 0), every
    low-frequency token back (< 0)."""
    return bool(movement[0] > 0 > movement[1])


def tenfold(growth: float) -> bool:
    """B9's criterion on the low tokens' spread off PC1, end / end of the first dilution: at least 10×."""
    return bool(growth >= 10)


def expansion_forecast(flow, chain, t_start: float, score_scale: float = 1.0):
    """R5's linear transverse theory from the flow's state at ``t_start`` (the end of its first dilution; nan →
    None): the flow continued from the rank-one projection of that state (𝓜₁ is invariant: it follows θ_c² as the
    flow would without its transverse part) to the flow's horizon, the gain ∫σ_max(M⊥)dt along it, and the amplitude
    |α| of the flow's transverse state on the top singular pair of M⊥ at its end (``transverse.TransverseForecast``)."""
    from attnflow.focus_dilution import closed_forms, runs
    from attnflow.focus_dilution.transverse import TransverseForecast, growing_amplitude

    if not np.isfinite(t_start):
        return None
    i = flow.at(t_start)
    left = float(flow.t[-1] - flow.t[i])
    states = flow.parameters()
    start = runs.project_rank_one({n: s[i] for n, s in states.items()})
    cont = runs.population_flow(
        chain, theta0=start, score_scale=score_scale, t_eval=np.linspace(0.0, left, max(2, int(np.ceil(left)) + 1))
    )
    q = cont.quantities
    M = closed_forms.M_perp(q["A"][-1], q["P_hat"][-1], chain)
    amp = growing_amplitude(states["W0"][i].numpy(), states["W1"][i].numpy(), flow.quantities["u"][i], M)
    return TransverseForecast(
        t_start=float(flow.t[i]),
        sigma2=float(flow.quantities["sigma2"][i]),
        amplitude=amp,
        gain=float(np.trapezoid(q["M_perp_smax"], cont.t)),
    )


def forecast_domain(fc, reads: str):
    """B9's domain from R5's forecast ``fc`` (:func:`expansion_forecast`): σ₂(W0) ≤ 0.01 at the window start and a
    tenfold σ₂ predicted within the horizon (``TransverseForecast.conditions``), read from the state ``reads``. No
    forecast (the flow has no detected first dilution, no window to start from): no condition is added here, and
    the claim, whose window does not exist, measures NaN and fails inside the parameters' domain."""
    from attnflow import claims

    return claims.domain() if fc is None else claims.domain(*fc.conditions(), reads=reads)


def forecast_clears(fc, margin: float) -> bool:
    """B9 on training: R5's forecast (:func:`expansion_forecast`) predicts at least 10^(1 + margin) growth of σ₂(W0)
    within the horizon: gain ≥ log(10σ₂/|α|) + margin·log 10 + ``GAIN_MARGIN`` (False without a forecast)."""
    from attnflow.focus_dilution.transverse import GAIN_MARGIN

    return bool(fc is not None and fc.gain >= fc.need + margin * np.log(10.0) + GAIN_MARGIN)


def clear_text(fc) -> str:
    """The observed values of :func:`forecast_clears`."""
    return "no forecast" if fc is None else f"gain {fc.gain:.2f}, tenfold needs {fc.need:.2f}"
