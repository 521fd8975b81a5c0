"""R5's linear transverse theory as a forecast from a named earlier state (spec focus_dilution.md R5; the robustness
page's claims B8, B9, B15).

At θ_c² the transverse part of (W0, W1) obeys ζ̇ = Mβ, β̇ = Mᵀζ with M the transverse drive of the rows the run
descends (:func:`drive`; M⊥ = AᵀΠ(P − P̂) on the population rows), whose growing mode has rate σ_max(M) and amplitude
|α| (:func:`growing_amplitude`). A :class:`TransverseForecast` made at the end of the first dilution
(:func:`forecast`: GD continued on 𝓜₁ to the horizon, ∫σ_max(M)dt) says whether σ₂(W0) grows tenfold, or reaches a
level, before the horizon — from a state *before* the escape is measured, so it can be a claim's domain (issue 21).
:func:`window_rate` fits the escape rate in the spec's window with the domain such a forecast gives; :func:`trapped`
is B8's rule at δ = 0. (This module imports ``escape``, not the reverse: no import cycle.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attnflow import claims
from attnflow.focus_dilution import escape, model, stages, training
from attnflow.focus_dilution.chain import MarkovChain
from attnflow.focus_dilution.closed_forms import M_perp
from attnflow.focus_dilution.runs import FlowRun, population_flow, project_rank_one

__all__ = [
    "GAIN_MARGIN",
    "FLOOR_RATIO",
    "TRAP_RATE",
    "trapped",
    "drive",
    "growing_amplitude",
    "TransverseForecast",
    "forecast",
    "forecast_population",
    "forecast_domain",
    "forecast_time",
    "window_rate",
    "EscapeForecast",
    "escape_forecast",
]

NAN = float("nan")


GAIN_MARGIN = float(np.log(2.0))  # B8, B9: an escape is predicted where the transverse gain to the horizon beats the
# gain a tenfold σ₂ needs by a factor 2 in amplitude (the prediction's error, linear and
# adiabatic transverse theory, was ≤ 30 time units, ≤ 0.6 in gain, on 9 probed runs)
FLOOR_RATIO = 0.5  # B15: the growing mode starts above the O(ε) transverse level: σ₂(t_D1) ≤ 0.5 × 0.01
TRAP_RATE = 1e-5  # B8: d log σ₂/dt on the θ_c² plateau at or below this is no growth (a numerical zero)


def trapped(rate: float) -> bool:
    """B8 at δ = 0: the degenerate point holds the run when log σ₂(W0) does not grow on the θ_c²
    plateau (rate ≤ ``TRAP_RATE``). A negative rate is trapped too: σ₂ there also carries leftover
    initialisation on θ_c²'s stable directions, which decays (−1.7·10⁻⁵ and −3.5·10⁻⁵ on two
    fresh-seed hub chains); an escape grows at 10⁻³ or more. NaN (no θ_c² plateau) is not trapped."""
    return bool(rate <= TRAP_RATE)


def drive(theta: dict, batch: dict, score_scale: float = 1.0) -> np.ndarray:
    """Transverse drive of the loss a run descends at one or more states θ (name → (T, …)): M = Σ_rows A (w − W P̂)ᵀ,
    (T, d_key, d_target), A the attention over key tokens of each row, w its target weights, W = Σ_j w_j. On the
    population rows this is M⊥ = AᵀΠ(P − P̂) (spec R5); on sampled rows, the drive of the training loss, whose
    singular values are the transverse rates of GD on those rows (±σᵢ(M))."""
    A, log_P = training.forward(theta, batch, score_scale)  # (T, d, B) each
    w = batch["weights"]  # (1, d, B)
    return (A @ (w - w.sum(1, keepdim=True) * log_P.exp()).transpose(-1, -2)).double().numpy()


def growing_amplitude(W0: np.ndarray, W1: np.ndarray, u: np.ndarray, M: np.ndarray) -> float:
    """|α| = ‖(p + q)/2‖, the part of the transverse state on the growing mode of [[0, M], [Mᵀ, 0]] (rate σ_max(M)):
    p = (I − uuᵀ)W0ᵀx, q = (I − uuᵀ)W1 y with x, y the top singular vectors of M (escape.slope_bias)."""
    U, _, Vt = np.linalg.svd(M)
    proj = np.eye(len(u)) - np.outer(u, u)
    return float(np.linalg.norm(proj @ (W0.T @ U[:, 0]) + proj @ (W1 @ Vt[0])) / 2)


@dataclass
class TransverseForecast:
    """Linear transverse theory (R5) from a run's state at t_start (its first dilution's end): σ₂(W0) there, the
    amplitude |α| of its growing mode and the gain ∫σ_max(M)dt to the horizon along the continuation on 𝓜₁."""

    t_start: float
    sigma2: float
    amplitude: float
    gain: float

    @property
    def need(self) -> float:
        """Gain for σ₂(W0) to reach ten times its value at t_start: log(10 σ₂ / |α|)."""
        return float(np.log(10 * self.sigma2 / self.amplitude)) if self.amplitude > 0 else float("inf")

    def need_level(self, level: float) -> float:
        """Gain for σ₂(W0) to reach ``level``: log(level / |α|)."""
        return float(np.log(level / self.amplitude)) if self.amplitude > 0 else float("inf")

    def reaches(self, level: float) -> bool:
        """σ₂(W0) predicted to reach ``level`` within the horizon, with the margin ``GAIN_MARGIN``."""
        return bool(self.gain >= self.need_level(level) + GAIN_MARGIN)

    @property
    def tenfold(self) -> bool:
        """A tenfold σ₂(W0) predicted within the horizon, with the margin ``GAIN_MARGIN``."""
        return bool(self.gain >= self.need + GAIN_MARGIN)

    def conditions(self) -> tuple:
        txt = f"t_D1 = {self.t_start:.0f}, σ₂ = {self.sigma2:.2g}, gain {self.gain:.2f}, needed {self.need:.2f}"
        return (
            (
                f"σ₂(W0) ≤ {escape.WINDOW[0]:g} at the first dilution's end (linear transverse regime)",
                bool(self.sigma2 <= escape.WINDOW[0]),
                f"σ₂ = {self.sigma2:.2g}",
            ),
            (
                "a tenfold σ₂(W0) predicted within the horizon: ∫σ_max(M)dt on 𝓜₁ from t_D1 ≥ log(10σ₂/|α|) + log 2",
                self.tenfold,
                txt,
            ),
        )

    @property
    def predicted(self) -> bool:
        """Every condition holds: linear regime at t_start and a tenfold σ₂(W0) predicted within the horizon."""
        return all(h for _, h, _ in self.conditions())


def forecast_domain(fc: TransverseForecast | None, observed: str = "") -> claims.Domain:
    """Domain of an escape predicted by R5 (B9): θ_c² reached (a forecast was made at the end of the first
    dilution; ``observed`` says what was detected) and :meth:`TransverseForecast.conditions`, all read from the
    state at the forecast's time."""
    at = claims.state("R5 forecast at the end of the first dilution", t=fc.t_start if fc is not None else NAN)
    dom = claims.domain(("θ_c² reached: first dilution detected", fc is not None, observed, at))
    return dom if fc is None else dom & claims.domain(*fc.conditions(), reads=at)


def forecast_time(fc: TransverseForecast | None) -> float | None:
    """When the forecast's state was read (a claim's ``measured_from``): ``t_start``, None without a forecast."""
    return None if fc is None else fc.t_start


def forecast(
    runs: list,
    starts: list,
    examples: list,
    *,
    lr: float,
    record_every: int,
    score_scale: float = 1.0,
    device: str = "auto",
) -> list:
    """:class:`TransverseForecast` of each trained run from its state at ``starts[i]`` (nan: no first dilution →
    None): GD at step ``lr`` continued from the rank-one projection of that state on the run's own rows
    ``examples[i]`` (𝓜₁ is invariant, so it follows θ_c² as the run would without its transverse part) to the run's
    horizon; σ_max of the drive M of those rows (:func:`drive`) integrated over it, |α| on the top singular pair of M
    at its end."""
    from attnflow import device as devices

    todo = [k for k, t in enumerate(starts) if np.isfinite(t)]
    out = [None] * len(runs)
    if not todo:
        return out
    idx = {k: runs[k].at(starts[k]) for k in todo}
    left = {k: int(round((runs[k].t[-1] - runs[k].t[idx[k]]) / lr)) for k in todo}
    steps = max(record_every, max(left.values()))
    theta0 = [project_rank_one({n: runs[k].states[n][idx[k]] for n in model.PARAM_NAMES}) for k in todo]
    with devices.single_threaded():
        cont = training.train_runs(
            [training.RunSpec(runs[k].chain, examples[k], f"on M1 from {starts[k]:.0f}") for k in todo],
            theta0=theta0,
            optimizer="gd",
            lr=lr,
            steps=steps,
            record_every=record_every,
            d_model=max(runs[k].states["W0"].shape[-1] for k in todo),
            score_scale=score_scale,
            device=device,
            dtype="float64",
            desc="on M1",
        )
    for k, c in zip(todo, cont):
        n_keep = int((c.t <= runs[k].t[-1] - runs[k].t[idx[k]] + 1e-9).sum())  # up to the run's own horizon
        batch = training.stack([examples[k]], torch.float64)
        chunk = max(1, 2**22 // batch["weights"][0].numel())  # records per forward (~32 MB a tensor)
        M = np.concatenate(
            [
                drive({n: c.states[n][j : min(j + chunk, n_keep)] for n in model.PARAM_NAMES}, batch, score_scale)
                for j in range(0, n_keep, chunk)
            ]
        )  # (T, d, d)
        smax = np.linalg.svd(M, compute_uv=False)[:, 0]
        r, i = runs[k], idx[k]
        amp = growing_amplitude(r.states["W0"][i].numpy(), r.states["W1"][i].numpy(), r.quantities["u"][i], M[-1])
        out[k] = TransverseForecast(
            t_start=float(r.t[i]),
            sigma2=float(r.quantities["sigma2"][i]),
            amplitude=amp,
            gain=float(np.trapezoid(smax, c.t[:n_keep])),
        )
    return out


def forecast_population(
    runs: dict, decided: dict, keys, *, lr: float, record_every: int, score_scale: float = 1.0, device: str = "auto"
) -> dict:
    """:func:`forecast` of the population runs ``runs[k]`` (k in ``keys``) from the time their first dilution is
    over (``decided[k]``: ``stages.end_of_dilution``, decided from the run up to then only), each on its own
    chain's population rows; k → forecast (None: no first dilution decided)."""
    keys = list(keys)
    out = forecast(
        [runs[k] for k in keys],
        [decided[k].t for k in keys],
        [training.population_examples(runs[k].chain) for k in keys],
        lr=lr,
        record_every=record_every,
        score_scale=score_scale,
        device=device,
    )
    return dict(zip(keys, out))


def window_rate(run, decided: stages.Decision, fc: TransverseForecast | None) -> tuple[float, claims.Domain, float]:
    """Escape rate of σ₂(W0) in the spec's window [0.01, 0.1] after the first dilution (B15), with the domain of the
    linear transverse regime read from states before the fit (issue 21): R5's forecast ``fc`` from the time the
    first dilution is over (``decided``: ``stages.end_of_dilution``, from the run up to then only; θ_c² reached;
    σ₂(W0) ≤ ``FLOOR_RATIO`` × 0.01 there: linear and above the O(ε) transverse level; σ₂ predicted to reach the
    window's top within the horizon) and the mode at the window start (predicted slope bias ≤
    ``escape.BIAS_MAX``). Where the forecast predicts the window and none is found, the rate is NaN and the check
    fails. Returns (rate, domain, measured_from: the window start, or the forecast's time without a window; None
    without a forecast)."""
    reached = decided.found and fc is not None
    s = escape.escape_stats(run, after=fc.t_start if reached else float(run.t[-1]), strict=False)
    at_d1 = claims.state("R5 forecast at the end of the first dilution", t=fc.t_start if reached else NAN)
    dom = claims.domain(("θ_c² reached: first dilution detected", reached, decided.letters(), at_d1))
    if not reached:
        return float(s.rate), dom, None
    top = escape.WINDOW[1]
    dom = dom & claims.domain(
        (
            f"σ₂(W0) at the first dilution's end ≤ {FLOOR_RATIO:g} × {escape.WINDOW[0]:g}: linear transverse regime, "
            "the growing mode above the O(ε) transverse level",
            bool(fc.sigma2 <= FLOOR_RATIO * escape.WINDOW[0]),
            f"σ₂ = {fc.sigma2:.2g}",
        ),
        (
            f"σ₂(W0) predicted to reach the window's top {top:g} within the horizon: ∫σ_max(M)dt on 𝓜₁ from t_D1 ≥ "
            f"log({top:g}/|α|) + log 2",
            fc.reaches(top),
            f"gain {fc.gain:.2f}, needed {fc.need_level(top):.2f}",
        ),
        reads=at_d1,
    )
    t0 = float(s.window[0]) if s.window_found else fc.t_start
    dom = dom & claims.domain(
        (
            f"σ₂(W0) is the growing mode from the window start: predicted slope bias ≤ {escape.BIAS_MAX:g}",
            (not s.window_found) or bool(abs(s.fit_bias) <= escape.BIAS_MAX),
            f"mode share {s.mode_share:.3f}, imbalance {s.mode_imbalance:+.3f}, bias {s.fit_bias:+.2%}"
            if s.window_found
            else "no window: the rate is NaN",
            claims.state("the run at its window start", t=t0),
        )
    )
    return float(s.rate), dom, t0


# ----------------------------------------------------------------------------- the cycle page's escape forecast
@dataclass
class EscapeForecast:
    """R5's escape forecast made from the flow's state at ``t_start`` (:func:`escape_forecast`)."""

    t_start: float  # the state it reads (the end of condensation on the cycle page)
    t_due: float  # forecast time of the tenfold σ₂(W0) (inf: not by the horizon)
    transverse: TransverseForecast  # σ₂, |α| and the gain to the horizon
    run: FlowRun  # the continuation on 𝓜₁ from the rank-one projection of the state

    def eta_lambda_max(self, lr: float) -> float:
        """η λ_max(∇²L) on the continuation at the forecast escape (NaN without one): GD with step η is a stable
        discretisation of the flow there when it is below 2."""
        from attnflow.focus_dilution import training

        if not np.isfinite(self.t_due):
            return NAN
        return float(lr * training.sharpness(self.run, [self.t_due - self.t_start])[0])


def escape_forecast(
    flow: FlowRun, chain: MarkovChain, t_start: float, horizon: float, score_scale: float = 1.0
) -> EscapeForecast:
    """R5's escape forecast from the flow's state at ``t_start``: the flow continued from the rank-one projection of
    that state (𝓜₁ is invariant: it crosses θ_c¹, the focus and the dilution to θ_c² as the flow would without its
    transverse part) to ``horizon``; the gain G(t) = ∫σ_max(M⊥)dt along it and the amplitude |α| of the state's
    transverse part on the growing mode of M⊥ at the end. ``t_due`` is the first time with
    G ≥ log(10σ₂/|α|) + GAIN_MARGIN (inf: none by ``horizon``)."""
    from scipy.integrate import cumulative_trapezoid

    i = flow.at(t_start)
    left = float(horizon - flow.t[i])
    states = flow.parameters()
    start = project_rank_one({n: s[i] for n, s in states.items()})
    cont = population_flow(
        chain, theta0=start, score_scale=score_scale, t_eval=np.linspace(0.0, left, max(2, int(np.ceil(left / 2)) + 1))
    )
    q = cont.quantities
    M = M_perp(q["A"][-1], q["P_hat"][-1], chain)
    amp = growing_amplitude(states["W0"][i].numpy(), states["W1"][i].numpy(), flow.quantities["u"][i], M)
    gain = cumulative_trapezoid(q["M_perp_smax"], cont.t, initial=0.0)
    fc = TransverseForecast(
        t_start=float(flow.t[i]), sigma2=float(flow.quantities["sigma2"][i]), amplitude=amp, gain=float(gain[-1])
    )
    hit = np.nonzero(gain >= fc.need + GAIN_MARGIN)[0]
    t_due = float(flow.t[i] + cont.t[hit[0]]) if len(hit) else float("inf")
    return EscapeForecast(float(t_start), t_due, fc, cont)
