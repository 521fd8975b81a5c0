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

__all__ = ["EmbeddingPCA", "embedding_pca", "phase_movements", "plot_phases", "frozen_angle", "window_angle",
           "cos_deviation"]


def frozen_angle(W0_init, W1_init, pi: np.ndarray, W0_norm: float) -> float:
    """R1's angle (radians, first order) between π and W0's top left singular vector once W0 has
    grown to ‖W0‖ = ``W0_norm`` (θ_c¹'s), from the initialization alone.

    Near the origin Ẇ0 = σ0 π̂ (W1 r̂)ᵀ and Ẇ1 = σ0 (W0ᵀπ̂) r̂ᵀ (π̂, r̂ unit π and π − 1/d): only
    W0's π̂-row grows, along b̂ ∝ W0(0)ᵀπ̂ + W1(0) r̂ (the growing mode), while the part
    (I − π̂π̂ᵀ) W0(0) off π stays frozen (uniform attention reads W0 only through W0ᵀπ). The top
    left singular vector is then π̂ + (I − π̂π̂ᵀ) W0(0) b̂ / ‖W0‖: the angle is that vector's norm."""
    W0, W1 = (np.asarray(x.detach().cpu() if isinstance(x, torch.Tensor) else x, dtype=float) for x in (W0_init, W1_init))
    p = pi / np.linalg.norm(pi)
    r = pi - 1.0 / len(pi)
    r = r / np.linalg.norm(r)
    b = W0.T @ p + W1 @ r                                              # (m,) growing mode's direction
    b = b / np.linalg.norm(b)
    off = W0 - np.outer(p, p @ W0)                                     # (d, m) frozen part off π
    return float(np.linalg.norm(off @ b) / W0_norm)


def window_angle(P: np.ndarray, pi: np.ndarray, seq_len: int) -> float:
    """Angle between π and the left singular vector of the drive of s-token windows.

    A window's attended mean at uniform attention is its count share c = n/s, so the drive at the
    origin is E[c (e_y − 1/d)ᵀ] = π(π − 1/d)ᵀ + C_s, C_s = (1/s) Σ_{l=1..s} Π(P^l − 1πᵀ) (key at
    lag l from the target; Π = diag π, stationary windows): the population limit s → ∞ is R1's
    rank-one B, and C_s tilts its left vector by O(τ_mix / s)."""
    d = len(pi)
    Q = P - np.outer(np.ones(d), pi)                                   # Q^l = P^l − 1πᵀ for l ≥ 1
    S = Q @ (np.eye(d) - np.linalg.matrix_power(Q, int(seq_len))) @ np.linalg.inv(np.eye(d) - Q)   # Σ_{l=1..s} Q^l
    drive = np.outer(pi, pi - 1.0 / d) + (pi[:, None] * S) / seq_len
    u = np.linalg.svd(drive)[0][:, 0]
    p = pi / np.linalg.norm(pi)
    return float(np.arctan2(np.linalg.norm(u - (u @ p) * p), abs(u @ p)))      # stable near 0 (arccos is not)


def cos_deviation(*angles: float) -> float:
    """1 − cos of the sum of small angles (radians): the predicted deviation from alignment."""
    return float(1.0 - np.cos(min(np.pi / 2, sum(angles))))


@dataclass
class EmbeddingPCA:
    coords: np.ndarray        # (T, d, k) coordinates of h_k(t) on the principal directions
    components: np.ndarray    # (k, m) principal directions (unit rows)
    explained: np.ndarray     # (k,) share of Σ_t Σ_k ‖h_k(t)‖² along each direction
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
    X = W.reshape(T * d, m)                                            # (T·d, m) one row per (time, token)
    mean = X.mean(0) if centre else np.zeros(m)
    _, S, Vt = np.linalg.svd(X - mean, full_matrices=False)
    comps = Vt[:n_components]                                          # (k, m)
    coords = (W - mean) @ comps.T                                      # (T, d, k)
    flip = np.where(coords[-1, hub] < 0, -1.0, 1.0)                    # (k,)
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
    pc1_condensed = p.coords[i["condensed"], :, 0]                                    # (d,) PC1 coordinates
    pc1_retraction = p.coords[i["diluted"], :, 0] - p.coords[i["focus"], :, 0]        # (d,) PC1 change

    def spread(j):
        x = p.coords[j][low][:, 1:]                                    # (n_low, k − 1)
        return float(np.sqrt(((x - x.mean(0)) ** 2).sum(1).mean()))

    return dict(cos_pi=float(abs(pc1_condensed @ pi) / (np.linalg.norm(pc1_condensed) * np.linalg.norm(pi))),
                retract_hub=float(pc1_retraction[hub]), retract_low=pc1_retraction[low],
                spread_before=spread(i["diluted"]), spread_after=spread(i["end"]))


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
