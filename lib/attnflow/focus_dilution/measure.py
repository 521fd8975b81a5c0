"""Stage quantities along a trajectory (spec focus_dilution.md §7, items 1–6) and stage detection.

    run = runs.population_flow(chain, ...)              # a Trajectory (runs.FlowRun, training.TrainRun)
    run.quantities["kappa"], run.quantities["A"][:, 0, 0], run.window("sigma2", 0.01, 0.1)

Every quantity is computed for all stored times at once (batched SVDs), in float64.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attnflow.focus_dilution import closed_forms, model
from attnflow.focus_dilution.model import PopulationLoss
from attnflow.record import Run

__all__ = [
    "quantities",
    "Trajectory",
    "fit_rate",
    "cos",
    "effective_rank",
    "first_time",
    "level_times",
    "condensation_times",
    "rel_error",
    "linear_window",
    "onset_gain",
    "sign_pattern_ok",
    "most_tilted_query",
    "KAPPA_EARLY",
    "above",
    "below",
    "entropy_rise",
    "Redistribution",
    "redistribution",
    "FlowState",
    "flow_state",
]


def cos(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """|cos| of the angle between x (…, n) and a fixed y (n,) — sign-free, as singular vectors are."""
    return np.abs(x @ y) / (np.linalg.norm(x, axis=-1) * np.linalg.norm(y))


def effective_rank(sv: np.ndarray) -> np.ndarray:
    """Entropy effective rank exp(H(σ/Σσ)) of singular values (…, r) (Roy & Vetterli 2007)."""
    p = sv / sv.sum(-1, keepdims=True)
    return np.exp(-(p * np.log(np.where(p > 0, p, 1.0))).sum(-1))


def quantities(states: dict[str, torch.Tensor], loss: PopulationLoss) -> dict[str, np.ndarray]:
    """Stage quantities for states name → (T, *shape) (``FlowResult.states()``).

    loss, sv_W0 (T, r), sv_W1, sigma1/sigma2 (of W0), eff_rank_W0/W1, cos_W0_pi (top left singular
    vector of W0 vs π), cos_W1_pic / cos_W1_ell (top right singular vector of W1 vs π − 1/d, ℓ),
    u (T, m) the rank-one direction, amp (T, d) a_k = ⟨h_k, u⟩ with a_hub > 0, kappa = uᵀWQWKᵀu,
    M_fro = ‖WQWKᵀ‖_F, A (T, d, d) attention rows, attn_entropy Σ_i π_i H(A_i·), hub_attention
    Σ_i π_i A_{i,hub}, M_perp_smax σ_max(M⊥), balance ‖W0‖² − ‖W1‖² − ‖WQ‖² − ‖WK‖² (conserved),
    mode0 = ‖W0ᵀπ̂ + W1 v̂‖ with v̂ = (π − 1/d)/‖π − 1/d‖: the amplitude of the unstable mode of the
    linearized flow at the origin (R1), exactly ∝ e^{σ0 t} there (the frozen directions drop out);
    qk_sym = ‖q + k‖², qk_anti = ‖q − k‖² with q = WQᵀu, k = WKᵀu: at θ_c¹ they grow exactly like
    e^{2gt} and e^{−2gt} (R2), while κ = qᵀk = ¼(qk_sym − qk_anti) mixes both.
    """
    chain = loss.chain
    pi, d, hub = chain.pi, chain.d, chain.hub
    with torch.no_grad():
        out = model.forward(states, loss.population, loss.score_scale)
        L = model.cross_entropy(out, loss.population)
        W0, W1 = states["W0"], states["W1"]
        M = states["WQ"] @ states["WK"].transpose(-1, -2)  # (T, m, m)
        U0, s0, V0t = torch.linalg.svd(W0, full_matrices=False)  # (T, d, r), (T, r), (T, r, m)
        _, s1, V1t = torch.linalg.svd(W1, full_matrices=False)  # V1t: (T, r, d)
        u = V0t[:, 0, :]  # (T, m)
        amp = (W0 @ u[..., None])[..., 0]  # (T, d)
        sign = torch.where(amp[:, hub] < 0, -1.0, 1.0).to(amp.dtype)
        amp, u = amp * sign[:, None], u * sign[:, None]
        kappa = torch.einsum("tm,tmn,tn->t", u, M, u)  # (T,)
        qv = (states["WQ"].transpose(-1, -2) @ u[..., None])[..., 0]  # (T, m): q = WQᵀu
        kv = (states["WK"].transpose(-1, -2) @ u[..., None])[..., 0]  # (T, m): k = WKᵀu
        norms = {n: (states[n] ** 2).sum((-1, -2)) for n in states}
        pi_hat = torch.as_tensor(pi / np.linalg.norm(pi), dtype=W0.dtype)
        v_hat = torch.as_tensor((pi - 1 / d) / np.linalg.norm(pi - 1 / d), dtype=W0.dtype)
        mode0 = torch.linalg.vector_norm(W0.transpose(-1, -2) @ pi_hat + W1 @ v_hat, dim=-1)  # (T,)
    A, P_hat = out.attention.numpy(), out.log_probs.exp().numpy()
    s0n = s0.numpy()
    ent = -(A * np.log(A)).sum(-1)  # (T, d) per query
    Mp = closed_forms.M_perp(A, P_hat, chain)  # (T, d, d)
    return {
        "loss": L.numpy(),
        "sv_W0": s0n,
        "sv_W1": s1.numpy(),
        "sigma1": s0n[:, 0],
        "sigma2": s0n[:, 1] if s0n.shape[1] > 1 else np.zeros(len(s0n)),
        "eff_rank_W0": effective_rank(s0n),
        "eff_rank_W1": effective_rank(s1.numpy()),
        "W0_fro": np.sqrt(norms["W0"].numpy()),
        "W1_fro": np.sqrt(norms["W1"].numpy()),
        "WQ_fro": np.sqrt(norms["WQ"].numpy()),
        "WK_fro": np.sqrt(norms["WK"].numpy()),
        "cos_W0_pi": cos(U0[:, :, 0].numpy(), pi),
        "cos_W1_pic": cos(V1t[:, 0, :].numpy(), pi - 1 / d),
        "cos_W1_ell": cos(V1t[:, 0, :].numpy(), chain.ell),
        "u": u.numpy(),
        "amp": amp.numpy(),
        "kappa": kappa.numpy(),
        "M_fro": torch.linalg.matrix_norm(M).numpy(),
        "A": A,
        "P_hat": P_hat,
        "attn_entropy": ent @ pi,
        "hub_attention": A[:, :, hub] @ pi,
        "M_perp_smax": np.linalg.svd(Mp, compute_uv=False)[:, 0],
        "balance": (norms["W0"] - norms["W1"] - norms["WQ"] - norms["WK"]).numpy(),
        "mode0": mode0.numpy(),
        "qk_sym": ((qv + kv) ** 2).sum(-1).numpy(),
        "qk_anti": ((qv - kv) ** 2).sum(-1).numpy(),
    }


def fit_rate(t: np.ndarray, y: np.ndarray, t0: float, t1: float) -> float:
    """Least-squares slope of log|y| on t0 ≤ t ≤ t1 (a growth rate); needs ≥ 3 points."""
    sel = (t >= t0) & (t <= t1)
    if sel.sum() < 3:
        raise ValueError(
            f"fit window [{t0:g}, {t1:g}] holds {int(sel.sum())} stored times; need ≥ 3 "
            "(store more times or widen the window)"
        )
    return float(np.polyfit(t[sel], np.log(np.abs(y[sel])), 1)[0])


def first_time(t: np.ndarray, mask: np.ndarray) -> float:
    """First stored time where mask holds (nan if never)."""
    idx = np.flatnonzero(mask)
    return float(t[idx[0]]) if len(idx) else float("nan")


def level_times(t: np.ndarray, loss: np.ndarray, upper: float, lower: float, frac: float = 0.01) -> tuple[float, float]:
    """Times at which the loss leaves ``upper`` and reaches ``lower``: first t with
    L < upper − frac·gap and first t with L < lower + frac·gap, gap = upper − lower."""
    gap = upper - lower
    return first_time(t, loss < upper - frac * gap), first_time(t, loss < lower + frac * gap)


def condensation_times(run, frac: float = closed_forms.CONDENSATION_LEVELS) -> tuple[float, float]:
    """Stage 1 of a population flow (a :class:`~attnflow.focus_dilution.runs.FlowRun`, which knows its
    chain): (t_leave, t_cond), the first stored times with the loss within ``frac`` of the gap below
    log d and within ``frac`` of it above H(π) (:func:`level_times`); nan when not reached."""
    chain = run.chain
    return level_times(run.t, run.quantities["loss"], float(np.log(chain.d)), chain.unigram_entropy(), frac)


@dataclass
class Trajectory(Run):
    """A flow or a training with its stage quantities: a :class:`~attnflow.record.Run` whose
    ``quantities`` are those of :func:`quantities` (name → (T, …) arrays); ``nfev`` counts the
    gradient evaluations of a flow. ``at``, ``quantity``, ``final`` … are the record's accessors."""

    nfev: int = 0

    def rate(self, key: str, t0: float, t1: float) -> float:
        """Fitted growth rate of ``key`` on [t0, t1] (see :func:`fit_rate`)."""
        return fit_rate(self.t, self.quantities[key], t0, t1)

    def times_in(self, t0: float, t1: float) -> np.ndarray:
        """The stored times t₀ ≤ t ≤ t₁ (those a fit on [t₀, t₁] uses)."""
        return self.t[(self.t >= t0) & (self.t <= t1)]

    def until(self, key: str, t1: float) -> np.ndarray:
        """``key`` from the start up to the stored time closest to ``t1`` (included)."""
        return self.quantities[key][: self.at(t1) + 1]

    def max_until(self, key: str, t1: float) -> float:
        """Largest value of ``key`` from the start up to t₁ (e.g. the best alignment reached in a stage)."""
        return float(self.until(key, t1).max())

    def max_rel_change(self, key: str, t1: float) -> float:
        """max |y(t)/y(0) − 1| over t ≤ t₁ for y = ``key``: how far it moved from its initial value."""
        y = self.until(key, t1)
        return float(np.abs(y / y[0] - 1).max())

    def max_deviation(self, key: str, target, t1: float) -> float:
        """max |y(t) − target| (every entry) over t ≤ t₁, e.g. attention rows against π."""
        return float(np.abs(self.until(key, t1) - np.asarray(target)).max())

    def window(self, key: str, lo: float, hi: float, after: float = 0.0) -> tuple[float, float]:
        """[first, last] stored time after ``after`` with lo ≤ quantities[key] ≤ hi (the linear window of
        a growing mode, e.g. σ₂(W0) ∈ [0.01, 0.1] in R5), taken up to the first exit above ``hi``."""
        t, y = self.t, self.quantities[key]
        above = np.flatnonzero((t > after) & (y > hi))
        end = t[above[0]] if len(above) else t[-1]
        sel = (t > after) & (t <= end) & (y >= lo) & (y <= hi)
        if sel.sum() < 3:
            raise ValueError(
                f"{key} spends fewer than 3 stored times in [{lo:g}, {hi:g}] after t = {after:g}; "
                "lengthen the horizon or store more times"
            )
        return float(t[sel].min()), float(t[sel].max())


def gradient_scaling(loss: PopulationLoss, d_model: int, init_scales, seed: int = 1) -> dict[str, np.ndarray]:
    """‖∇_X L‖ at the small initialization θ = ε θ̄ for each ε (same θ̄), per parameter X.
    The slope of log‖∇_X L‖ against log ε is the order of the drive: 1 for W0, W1 (the linear
    flow of R1) and 5 for WQ, WK (scores are quartic and enter L through Y = W0W1)."""
    from attnflow.focus_dilution.model import init_params

    out: dict[str, list] = {}
    for eps in init_scales:
        theta = {n: v.requires_grad_(True) for n, v in init_params(loss.chain.d, d_model, eps, seed).items()}
        grads = torch.autograd.grad(loss(theta), list(theta.values()))
        for n, g in zip(theta, grads):
            out.setdefault(n, []).append(float(g.norm()))
    logs = np.log(np.asarray(init_scales, dtype=float))
    res = {n: np.asarray(v) for n, v in out.items()}
    res.update({f"order_{n}": float(np.polyfit(logs, np.log(v), 1)[0]) for n, v in out.items()})
    return res


def grad_norms(states: dict[str, torch.Tensor], loss: PopulationLoss) -> np.ndarray:
    """‖∇L(θ(t))‖ at every stored time, (T,): one batched backward pass (the per-time losses
    are independent, so the gradient of their sum holds each time's gradient)."""
    theta = {n: v.detach().clone().requires_grad_(True) for n, v in states.items()}
    grads = torch.autograd.grad(loss(theta).sum(), list(theta.values()))
    return torch.sqrt(sum((g**2).sum((-1, -2)) for g in grads)).numpy()


def saddle_time(t: np.ndarray, gnorm: np.ndarray, t0: float, t1: float) -> float:
    """The stored time in [t0, t1] where ‖∇L‖ is smallest: the closest approach to a saddle."""
    sel = (t >= t0) & (t <= t1)
    if not sel.any():
        raise ValueError(f"no stored time in [{t0:g}, {t1:g}]")
    return float(t[sel][np.argmin(gnorm[sel])])


def kappa_drive(states: dict[str, torch.Tensor], loss: PopulationLoss, u: np.ndarray) -> np.ndarray:
    """g_eff(t) = −uᵀ (∂L/∂M) u with M = WQ WKᵀ, at every stored time (T,): the rate of the
    attention mode at the point the flow actually visits (= g at θ_c¹ exactly, claim B5)."""
    from attnflow.focus_dilution.model import Population, loss as model_loss

    W0 = states["W0"]
    M = (states["WQ"] @ states["WK"].transpose(-1, -2)).detach().clone().requires_grad_(True)  # (T, m, m)
    eye = torch.eye(M.shape[-1], dtype=M.dtype).expand_as(M)  # WQ = M, WK = I: the same scores
    theta = {"W0": W0, "WQ": M, "WK": eye, "W1": states["W1"]}
    (G_M,) = torch.autograd.grad(model_loss(theta, Population(loss.P, loss.pi), loss.score_scale).sum(), M)
    uu = torch.as_tensor(u, dtype=G_M.dtype)  # (T, m)
    return -torch.einsum("tm,tmn,tn->t", uu, G_M, uu).numpy()


def attention_onset(t: np.ndarray, A: np.ndarray, pi: np.ndarray, threshold: float = 0.01) -> float:
    """First stored time at which some attention weight has left π by ``threshold``: the start of
    focus (during condensation and on the plateau A_ik = π_k + O(ε²))."""
    return first_time(t, np.abs(A - pi).max((-1, -2)) >= threshold)


def linear_response(
    A: np.ndarray, pi: np.ndarray, kappa: np.ndarray, kappa_max: float, after: np.ndarray | None = None
) -> np.ndarray:
    """Least-squares slope of A_ik − π_k against κ (with an intercept, which absorbs the O(ε²)
    attention offset of the plateau) over the stored times with |κ| ≤ kappa_max (and ``after``
    True; e.g. :func:`linear_window`), (d, d): the measured ∂_κA of claim B6 (R3); nan with fewer
    than 3 such times. Keep kappa_max ≲ |g|/4: beyond, the
    amplitudes themselves move by O(κ/g) (redistribution) and bend the response."""
    sel = np.abs(kappa) <= kappa_max
    if after is not None:
        sel &= after
    if sel.sum() < 3:  # nothing to fit (e.g. κ grew during condensation): nan, so a claim on it fails
        return np.full(A.shape[-2:], np.nan)
    X = np.stack([np.ones(int(sel.sum())), kappa[sel]], 1)  # (n, 2)
    Y = (A[sel] - pi).reshape(sel.sum(), -1)  # (n, d·d)
    slope = np.linalg.lstsq(X, Y, rcond=None)[0][1]
    return slope.reshape(A.shape[-2:])


def rel_error(x: np.ndarray, ref: np.ndarray) -> float:
    """max |x − ref| / max |ref| (every entry): an error relative to the reference's largest entry."""
    return float(np.abs(np.asarray(x) - np.asarray(ref)).max() / np.abs(np.asarray(ref)).max())


def linear_window(t: np.ndarray, kappa: np.ndarray, kappa_max: float, after: float) -> np.ndarray:
    """The stored times of the linear regime of focus (R3), bool (T,): after ``after`` (the end of
    condensation) and before |κ| first exceeds ``kappa_max`` — one contiguous stretch, so that a κ passing
    back through the window later, off 𝓜₁, is not fitted (an atlas Dirichlet chain did)."""
    late = t > after
    t_exit = first_time(t, late & (np.abs(kappa) > kappa_max))
    return late & (np.abs(kappa) <= kappa_max) & (t < t_exit if np.isfinite(t_exit) else True)


def onset_gain(run, t_onset: float) -> np.ndarray:
    """A − π (d, d) at the stored time of the onset of focus on a flow ``run`` (nan when it never came)."""
    pi = run.chain.pi
    if not np.isfinite(t_onset):
        return np.full((len(pi), len(pi)), np.nan)
    return run.value("A", t_onset) - pi


def sign_pattern_ok(gain: np.ndarray, chain, g: float, dA: np.ndarray) -> bool:
    """Claim B6: every attention weight whose predicted tilt is ≥ 10⁻³ of the largest (``dA`` the closed
    form ∂κA) moved with sign(g)·sign(π_k − ‖π‖²) (``gain`` = A − π, (d, d); False for a nan gain)."""
    pi = chain.pi
    predicted = np.sign(g) * np.sign(pi - (pi**2).sum())  # per key k
    relevant = np.abs(dA) > 1e-3 * np.abs(dA).max()
    return bool(np.all((np.sign(gain) == predicted[None, :])[relevant]))


def most_tilted_query(gain: np.ndarray, hub: int, g: float) -> float:
    """The query whose attention to the key ``hub`` moved most with the sign of g (``gain`` = A − π, (d, d));
    nan for a nan gain (no onset), so that a claim on it fails."""
    column = np.sign(g) * gain[:, hub]
    return float(np.argmax(column)) if np.all(np.isfinite(column)) else float("nan")


# ----------------------------------------------------------------------------- R4: redistribution and θ_c²
KAPPA_EARLY = 0.01  # "early focus" (R4): the amplitudes are compared with the drive v when κ reaches this


def above(bound: float):
    """Predicate ``x > bound`` for :func:`attnflow.claims.check` (its ``__doc__`` says so)."""

    def pred(x) -> bool:
        return bool(x > bound)

    pred.__doc__ = f"> {bound:g}"
    return pred


def below(bound: float):
    """Predicate ``x < bound`` for :func:`attnflow.claims.check` (its ``__doc__`` says so)."""

    def pred(x) -> bool:
        return bool(x < bound)

    pred.__doc__ = f"< {bound:g}"
    return pred


def entropy_rise(t: np.ndarray, entropy: np.ndarray, after: float = 0.0) -> float:
    """Rise of the attention entropy from its minimum over t ≥ ``after`` to the last stored time
    (nan when no stored time is ≥ ``after``)."""
    sel = t >= after
    if not sel.any():
        return float("nan")
    return float(entropy[-1] - entropy[sel].min())


@dataclass
class Redistribution:
    """Focus, mass redistribution and dilution on one flow of a chain with a hub (spec R4, claim B7).

    Times: ``t_cond`` (end of condensation), ``t_onset`` (attention leaves π by 0.01), ``t_c1`` (the
    reference point on the θ_c¹ plateau, halfway between them), ``t_early`` (κ reaches ``KAPPA_EARLY``
    along sign(g); nan when not reached), ``t_peak`` (the rare queries' attention to the hub at its
    largest). Amplitudes a_k = ⟨h_k, u⟩ at t_c1, t_early and the end; ``A_low_hub`` (T,) the mean rare
    query's attention to the hub."""

    t_cond: float
    t_onset: float
    t_c1: float
    t_early: float
    t_peak: float
    t_end: float
    pi_hub: float
    A_low_hub: np.ndarray
    a_c1: np.ndarray
    a_early: np.ndarray
    a_end: np.ndarray
    hub: int
    kappa_end: float
    A00_end: float
    A10_end: float
    hub_att_end: float
    ent_end: float
    L_end: float
    ent_rise: float

    @property
    def low(self) -> list[int]:
        return [k for k in range(len(self.a_end)) if k != self.hub]

    @property
    def early_reached(self) -> bool:
        return bool(np.isfinite(self.t_early))

    @property
    def A_low_hub_max(self) -> float:
        return float(self.A_low_hub.max())

    @property
    def A_low_hub_end(self) -> float:
        return float(self.A_low_hub[-1])

    @property
    def a_hub_end(self) -> float:
        return float(self.a_end[self.hub])

    @property
    def a_low_end(self) -> float:
        """Mean rare amplitude at the end."""
        return float(self.a_end[self.low].mean())

    @property
    def focus_excess(self) -> float:
        """max_t A_low,hub − π_hub: focus of the rare queries on the hub."""
        return self.A_low_hub_max - self.pi_hub

    @property
    def final_excess(self) -> float:
        """A_low,hub(end) − π_hub (< 0: diluted below the hub's frequency)."""
        return self.A_low_hub_end - self.pi_hub

    @property
    def fall(self) -> float:
        """Fall of A_low,hub from its peak to the end (dilution)."""
        return self.A_low_hub_max - self.A_low_hub_end

    def apart(self, a: np.ndarray) -> bool:
        """Whether a − a(θ_c¹) raises the hub's amplitude and lowers every rare one (False for nan)."""
        d = a - self.a_c1
        return bool(d[self.hub] > 0 and np.all(d[self.low] < 0))

    @property
    def early_apart(self) -> bool:
        return self.early_reached and self.apart(self.a_early)

    @property
    def amp_apart(self) -> bool:
        return self.apart(self.a_end)

    def early_signs_of(self, v: np.ndarray) -> bool:
        """Whether sign(a(κ = KAPPA_EARLY) − a(θ_c¹)) equals sign(v) componentwise."""
        return self.early_reached and bool(np.all(np.sign(self.a_early - self.a_c1) == np.sign(v)))

    def glue_values(self, pi: np.ndarray) -> dict[str, float]:
        """The scalars the dilution page cites, under their glue names."""
        low = self.low
        return dict(
            t_cond=self.t_cond,
            t_onset=self.t_onset,
            t_early=self.t_early,
            t_peak=self.t_peak,
            t_end=self.t_end,
            r_c1=float(pi @ self.a_c1),
            r_early=float(pi @ self.a_early),
            a_hub_c1=float(self.a_c1[self.hub]),
            a_low_c1=float(self.a_c1[low].mean()),
            a_hub_end=self.a_hub_end,
            a_low_end=self.a_low_end,
            A_low_hub_max=self.A_low_hub_max,
            A_low_hub_end=self.A_low_hub_end,
            pi_hub=self.pi_hub,
            kappa_end=self.kappa_end,
            A00_end=self.A00_end,
            A10_end=self.A10_end,
            hub_att_end=self.hub_att_end,
            ent_end=self.ent_end,
            L_end=self.L_end,
            ent_rise_main=self.ent_rise,
        )


def redistribution(run: Trajectory, chain, g: float, kappa_early: float = KAPPA_EARLY) -> Redistribution:
    """:class:`Redistribution` of a flow or training ``run`` of ``chain`` (with a hub); ``g`` the focus
    rate of R2 (its sign says which way κ grows)."""
    q, t, pi, hub = run.quantities, run.t, chain.pi, chain.hub
    low = [k for k in range(chain.d) if k != hub]
    A, amp, kappa = q["A"], q["amp"], q["kappa"]
    _, t_cond = level_times(t, q["loss"], np.log(chain.d), chain.unigram_entropy())
    t_onset = attention_onset(t, A, pi, 0.01)
    A_low_hub = A[:, low, hub].mean(1)
    i_c1 = run.at(0.5 * (t_cond + t_onset))
    early = np.flatnonzero(np.sign(g) * kappa >= kappa_early) if g != 0 else np.zeros(0, int)
    return Redistribution(
        t_cond=float(t_cond),
        t_onset=float(t_onset),
        t_c1=float(t[i_c1]),
        t_early=float(t[early[0]]) if len(early) else float("nan"),
        t_peak=float(t[int(np.argmax(A_low_hub))]),
        t_end=float(t[-1]),
        pi_hub=float(pi[hub]),
        A_low_hub=A_low_hub,
        a_c1=amp[i_c1],
        a_early=amp[early[0]] if len(early) else np.full(chain.d, np.nan),
        a_end=amp[-1],
        hub=hub,
        kappa_end=float(kappa[-1]),
        A00_end=float(A[-1, hub, hub]),
        A10_end=float(A[-1, low[0], hub]),
        hub_att_end=float(q["hub_attention"][-1]),
        ent_end=float(q["attn_entropy"][-1]),
        L_end=float(q["loss"][-1]),
        ent_rise=entropy_rise(t, q["attn_entropy"], 0.0),
    )


@dataclass
class FlowState:
    """A flow's state at one stored time ``t``: ‖∇L‖, the smallest eigenvalue of ∇²L (nan unless asked
    for), σ₂(W0) and L — what says, at t, whether the flow rests on a stable critical point on 𝓜₁."""

    t: float
    grad_norm: float
    lambda_min: float
    sigma2: float
    loss: float

    def loss_fall_until(self, t_end: float) -> float:
        """Forecast made at t of the loss still to fall by ``t_end`` at the present rate −dL/dt = ‖∇L‖²
        (an upper bound where ∇²L ⪰ 0 along the path, so that ‖∇L‖ does not grow)."""
        return self.grad_norm**2 * (t_end - self.t)

    def growth_until(self, t_end: float) -> float:
        """|λ_min| t_end with λ_min < 0: the e-folds an unstable Hessian direction at t would grow by t_end."""
        return abs(min(self.lambda_min, 0.0)) * t_end


def flow_state(run, t: float, hessian: bool = True) -> FlowState:
    """:class:`FlowState` of a population flow (a :class:`~attnflow.focus_dilution.runs.FlowRun`) at the
    stored time closest to ``t`` (one autograd gradient; one ``torch.func.hessian`` when ``hessian``)."""
    i = run.at(t)
    states = {n: s[i : i + 1] for n, s in run.parameters().items()}
    lam = float("nan")
    if hessian:
        H, _ = model.hessian(run.loss_fn, {n: s[0] for n, s in states.items()})
        lam = float(np.linalg.eigvalsh(H)[0])
    return FlowState(
        t=float(run.t[i]),
        grad_norm=float(grad_norms(states, run.loss_fn)[0]),
        lambda_min=lam,
        sigma2=float(run.quantities["sigma2"][i]),
        loss=float(run.quantities["loss"][i]),
    )
