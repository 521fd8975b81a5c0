"""Corollary 5 — the sharpening mechanism, measured at matched loss on three levels.

Mechanism [paper]; argument [reconstruction] (claims A6, A12, A14). At a fixed loss −log s*
the margin u = a·p is fixed (``symbolic.matched_loss``), so whichever circuit is slower on the
OV side must be compensated by sharper attention p; faster QK learning (larger r, or the
growing rescaling 2|b| of a factorized QK circuit) supplies it. Three levels:

- :func:`reduced_at_matched_loss` — the reduced ODE with the matched-loss event (spec §8.1);
- :func:`full_model_at_matched_loss` — the full torch model's population gradient flow from the
  symmetric/balanced manifold, learning rates chosen so it *is* the normalized reduced system;
- :func:`sampled_runs` — discrete GD of the full model on a sampled dataset from a Gaussian
  (not balanced) initialization, stopped when the training loss first drops below a target
  (spec §8.2); all runs trained together by the batched engine ``attnflow.sweep.train``
  (:func:`sampled_at_loss`: one run).

What the page sharpening/sharpening_mechanism reads off them: :func:`matched_margin` (u* at K, s*);
:func:`matched_points` (:class:`MatchedPoints`: t, a, p at s = s* and p at the horizon of every reduced
run, the orderings, the glued names, the table rows); :func:`full_models_at_matched_loss` with
:func:`full_deviation` and :func:`full_rows`; :func:`sampled_models` (:class:`SampledModels`: per-seed
values, paired differences, the worst accuracy, the failures with their causes, the table rows); and the
claims predicate :func:`strictly_increasing`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from attnflow import device as devices
from attnflow import sweep
from attnflow.record import Run
from attnflow.sharpening import experiments
from attnflow.sharpening.data import Task, population
from attnflow.sharpening.model import ModelConfig, SelfAttention, circuits
from attnflow.sharpening.reduced import ReducedRun, ReducedSystem, solve
from attnflow.sharpening.reduction import constants, coordinates, init_on_manifold
from attnflow.sharpening.stack import ModelSpec, ModelStack


def reduced_at_matched_loss(
    parametrizations,
    lr_ratios,
    *,
    n_compete: int = 9,
    n_classes: int = 5,
    matched: float = 0.9,
    horizon: float = 1e5,
    a0: float = 0.1,
    b0: float = 0.1,
    rtol: float = 1e-10,
) -> dict[tuple[str, float], ReducedRun]:
    """Reduced runs (name, r) -> ReducedRun with the first time s reaches ``matched`` recorded."""
    return {
        (name, r): solve(
            ReducedSystem(name, r, n_compete, n_classes),
            horizon,
            a0=a0,
            b0=b0,
            times=[horizon],
            matched=matched,
            rtol=rtol,
            atol=rtol * 1e-2,
        )
        for name in parametrizations
        for r in lr_ratios
    }


def full_model_at_matched_loss(
    parametrization: str,
    task: Task,
    *,
    lr_ratio: float,
    matched: float = 0.9,
    a0: float = 0.1,
    b0: float = 0.1,
    t_max: float = 1e4,
    rtol: float = 1e-9,
) -> dict:
    """Integrate the full model's population flow until the loss reaches −log(matched) (Cor. 5).

    The circuit learning rates are chosen so that the full model is the *normalized* reduced
    system with ratio ``lr_ratio`` (η_QK' = r η_OV'): η_OV = 1/c_OV, η_QK = r/κ^m, so model time
    equals reduced time. Returns the model-level attention mass on the distinct token, the
    accuracy and the correct-class probability at that moment, all from the torch forward pass.
    """
    from attnflow import flow

    const = constants(task)
    fa, _ = circuits(parametrization)
    lr_ov, lr_qk = 1.0 / const.c_ov, lr_ratio / const.kappa ** (1 if fa else 2)
    model = init_on_manifold(SelfAttention(ModelConfig(parametrization, task.vocab_size, task.n_classes)), task, a0, b0)
    batch = population(task)
    loss = model.functional_loss(batch)
    target = -np.log(matched)

    def reached(t, theta):
        return float(loss(theta)) - target

    reached.terminal, reached.direction = True, -1
    res = flow.integrate(
        loss, model.state(), [0.0, t_max], lr=model.rates(lr_qk, lr_ov), rtol=rtol, atol=rtol * 1e-2, events=[reached]
    )
    if not len(res.t_events[0]):
        raise RuntimeError(f"{parametrization}: the loss did not reach −log({matched}) by t_max={t_max:g}")
    model.load(res.flattener.unflatten(torch.from_numpy(res.y_events[0][0])))
    with torch.no_grad():
        out = model(batch.tokens)  # logits (S, K), attn (S, T)
        w = batch.weights
        mass = float((w * (out.attn * batch.relevant_mask).sum(-1)).sum())
        acc = float((w * (out.logits.argmax(-1) == batch.targets)).sum())
        s = float((w * torch.softmax(out.logits, -1).gather(1, batch.targets[:, None])[:, 0]).sum())
    a, b, resid = coordinates(model, task)
    return {
        "t": float(res.t_events[0][0]),
        "p": mass,
        "accuracy": acc,
        "s": s,
        "a": float(a),
        "b": float(b),
        "nfev": res.nfev,
        "residual": float(resid),
    }


@dataclass
class SampledRun(Run):
    """One GD run of :func:`sampled_at_loss`: the measurements at the matched loss, or why there are none.

    ``status`` is ``"reached"`` (the training loss dropped below the target), ``"overshot"`` (it
    did, but one step jumped more than ``MATCH_RTOL`` of the target below it, so the run is not at
    the matched loss: the step is too large), ``"diverged"`` (a non-finite loss, or a loss that
    rose well above its minimum: the step is above the stability limit of GD) or ``"slow"``
    (still decreasing after ``max_steps``).

    It is a :class:`~attnflow.record.Run` of that model's training: ``t`` its recorded steps up to
    where it ended, ``quantities`` its training loss, accuracy and relevant attention there (the
    sweep record's columns); the fields are the measurements at the matched loss."""

    parametrization: str
    lr_ratio: float
    seed: int
    status: str
    p: float = float("nan")  # mean attention mass on the distinct tokens
    accuracy: float = float("nan")  # training accuracy
    steps: int | None = None  # step at which the loss first dropped below the target
    loss: float = float("nan")  # training loss there (or at the end)
    message: str = ""  # why the target was not reached

    @property
    def reached(self) -> bool:
        return self.status == "reached"


UNSTABLE_RISE = 1.5  # a loss this many times above its running minimum marks an unstable step
MATCH_RTOL = 0.2  # the loss at the stopping step must be within 20% of the target (matched loss)


def sampled_at_loss(
    parametrization: str,
    task: Task,
    *,
    lr_ratio: float,
    n_samples: int = 2000,
    lr_ov: float = 0.1,
    init_std: float = 0.1,
    loss_target: float = 0.1,
    max_steps: int = 8000,
    seed: int = 0,
    device: str = "auto",
) -> SampledRun:
    """One run of :func:`sampled_runs` (the same semantics, a stack of one model)."""
    return sampled_runs(
        [(parametrization, lr_ratio, seed)],
        task,
        n_samples=n_samples,
        lr_ov=lr_ov,
        init_std=init_std,
        loss_target=loss_target,
        max_steps=max_steps,
        device=device,
    )[0]


def sampled_runs(
    runs: Sequence[tuple[str, float, int]],
    task: Task,
    *,
    n_samples: int = 2000,
    lr_ov: float = 0.1,
    init_std: float = 0.1,
    loss_target: float = 0.1,
    max_steps: int = 8000,
    device: str = "auto",
) -> list[SampledRun]:
    """Full-batch GD of the full model (float32) on a sampled dataset from N(0, (init_std/√d)²),
    η_QK = r·η_OV, until the training loss first drops below ``loss_target`` (spec §8.2), for
    every (parametrization, r, seed) of ``runs``, trained together by ``attnflow.sweep.train``.

    Each model is independent: data from its seed's ``data`` stream (the models of a seed share
    it), init from its ``init`` stream (``seeding.stream``: seed and seed + 1); the stack only
    batches the arithmetic. A model stops at the first step whose training loss, evaluated
    before that step's update, is < the target
    (``strict_target``), as a single-model loop with torch's SGD that stops there would
    (``tests/test_mechanism_batched.py`` checks the two agree). Returns a :class:`SampledRun` per
    run, in order, with the mean attention mass on the distinct (relevant) tokens and the
    training accuracy at that step, read from the model's ``SelfAttention`` forward. A run that
    does not reach the target says why: a diverging or oscillating loss (the GD step above its
    stability limit: lower ``gd_lr`` or r) or a loss still falling (raise ``max_steps``).
    """
    specs = [ModelSpec(name, float(r), int(seed), lr_ov=lr_ov, init_scale=init_std) for name, r, seed in runs]
    stack = ModelStack(specs, task, dtype=devices.EXPERIMENT_DTYPE, device=device, init_stream="init")
    batch, _ = experiments.stack_batches(task, [sp.seed for sp in specs], n_samples, 1, stack.device)  # (P, N, ·)
    every = max(1, max_steps // 200)
    rec = sweep.train(
        experiments._objective(stack, batch),
        stack.tensors,
        len(specs),
        optimizer="gd",
        steps=max_steps,
        target_loss=loss_target,
        strict_target=True,
        record_every=every,
        on_diverge="mark",
        labels=stack.labels,
        desc=f"GD {len(specs)} sampled runs",
    )
    grid = (rec.steps % every == 0) | (rec.steps == max_steps)  # the records of a single-model loop
    return [_sampled_run(sp, rec, i, grid, stack, batch, loss_target, max_steps) for i, sp in enumerate(specs)]


def _sampled_run(sp, rec, i: int, grid: np.ndarray, stack, batch, loss_target: float, max_steps: int) -> SampledRun:
    """The :class:`SampledRun` of model i of a sweep record ``rec``."""
    name, r, seed = sp.parametrization, sp.lr_ratio, sp.seed
    rates = f"η_OV = {sp.lr_ov:g}, η_QK = {sp.lr_qk:g}"
    end = rec.stopped_at[i] if rec.reached[i] else rec.diverged_at[i] if rec.diverged[i] else max_steps
    rows = rec.steps <= end  # (R,) the records of this model's run
    curves = dict(
        t=rec.steps[rows],
        quantities={k: v[rows, i] for k, v in rec.quantities.items()},
        wall_s=rec.wall_s,
        meta=dict(
            label=rec.labels[i],
            lr_ov=sp.lr_ov,
            lr_qk=sp.lr_qk,
            init_scale=sp.init_scale,
            loss_target=loss_target,
            max_steps=max_steps,
        ),
    )
    if rec.diverged[i]:
        return SampledRun(
            name,
            r,
            seed,
            "diverged",
            **curves,
            message=(
                f"GD unstable ({rates}): the training loss is not finite at step {rec.diverged_at[i]}; the step is "
                f"above the stability limit, lower gd_lr"
            ),
        )
    if not rec.reached[i]:
        steps, loss = rec.steps[grid], rec.loss[grid, i]
        i_min = int(np.argmin(loss))
        if loss[-1] > UNSTABLE_RISE * loss[i_min]:
            return SampledRun(
                name,
                r,
                seed,
                "diverged",
                **curves,
                loss=float(loss[-1]),
                message=(
                    f"GD unstable ({rates}): the training loss rose from its minimum {loss[i_min]:.3g} (step "
                    f"{steps[i_min]}) to {loss[-1]:.3g} at step {steps[-1]}; the step is above the "
                    f"stability limit of GD, lower gd_lr"
                ),
            )
        return SampledRun(
            name,
            r,
            seed,
            "slow",
            **curves,
            loss=float(loss[-1]),
            message=(
                f"the training loss is still {loss[-1]:.3g} > {loss_target:g} after {max_steps} steps ({rates}); "
                f"raise max_steps"
            ),
        )
    model = stack.model(i, rec.params)  # float32 SelfAttention at the stop step
    tokens, relevant, targets = (x[i].cpu() for x in (batch.tokens, batch.relevant_mask, batch.targets))
    with torch.no_grad():
        out = model(tokens)  # logits (N, K), attn (N, T)
        mass = float((out.attn * relevant).sum(-1).mean())
        acc = float((out.logits.argmax(-1) == targets).float().mean())
    loss, step = float(rec.loss_final[i]), int(rec.stopped_at[i])
    if loss < (1 - MATCH_RTOL) * loss_target:
        return SampledRun(
            name,
            r,
            seed,
            "overshot",
            **curves,
            p=mass,
            accuracy=acc,
            steps=step,
            loss=loss,
            message=(
                f"one GD step ({rates}) took the training loss from above {loss_target:g} to {loss:.3g} "
                f"at step {step}: "
                f"not at the matched loss, the step is too large (lower gd_lr)"
            ),
        )
    return SampledRun(name, r, seed, "reached", **curves, p=mass, accuracy=acc, steps=step, loss=loss)


# -- what the page reads off the three levels ----------------------------------------------------------


def matched_margin(n_classes: int, matched: float) -> float:
    """u* = log((K − 1)s*/(1 − s*)), the margin a p at the loss −log s* (``symbolic.matched_loss``'s
    margin evaluated at K = ``n_classes``, s* = ``matched``)."""
    import sympy as sp

    from attnflow.sharpening import symbolic

    K = symbolic.reduced_symbols()[3]
    return float(symbolic.matched_loss().margin.subs({K: n_classes, sp.Symbol("s_*", positive=True): matched}))


@dataclass
class MatchedPoints:
    """The reduced runs of :func:`reduced_at_matched_loss` read at the matched loss (the solver's event
    s = s*) and at the horizon: each a dict (parametrization, r) -> value, NaN at s* for a run that
    does not reach it before the horizon. ``lr_ratios`` in the order given (the first is the page's r₁)."""

    parametrizations: list[str]
    lr_ratios: list[float]
    t_match: dict  # (name, r) -> first time s = s*
    a_match: dict  # (name, r) -> a there
    p_match: dict  # (name, r) -> p there
    p_end: dict  # (name, r) -> p at the horizon

    @property
    def reached(self) -> bool:
        """Every run reached s* before the horizon."""
        return not self.not_reached()

    def not_reached(self) -> list[str]:
        """The runs that did not reach s* before the horizon, as "name r=…"."""
        return [f"{n} r={r:g}" for (n, r), p in self.p_match.items() if math.isnan(p)]

    def describe(self) -> str:
        """Says that all N runs reached s*, or which did not."""
        missing = self.not_reached()
        return "not reached: " + ", ".join(missing) if missing else f"all {len(self.p_match)} runs reached s*"

    def order(self, values: dict, r: float) -> str:
        """The parametrizations sharpest first by ``values`` (p_match or p_end) at ratio r: "FACO > CACO > …"."""
        return " > ".join(sorted(self.parametrizations, key=lambda name: -values[(name, r)]))

    def at(self, values: dict, names, r: float) -> list[float]:
        """``values`` of the parametrizations ``names`` at ratio r, in that order (NaN where not run)."""
        return [values.get((name, r), float("nan")) for name in names]

    def over_ratios(self, name: str) -> list[float]:
        """p at s = s* of ``name`` for the distinct ratios, increasing r."""
        return [self.p_match[(name, r)] for r in sorted(set(self.lr_ratios))]

    def one_minus_p_end(self, name: str, r: float) -> float:
        """1 − p at the horizon, the attention left on the other tokens (NaN where not run)."""
        return float(1.0 - self.p_end.get((name, r), float("nan")))

    def p_range(self) -> tuple[float, float]:
        """Smallest and largest p at s = s* over the runs that reached it."""
        finite = [p for p in self.p_match.values() if math.isfinite(p)]
        return min(finite, default=float("nan")), max(finite, default=float("nan"))

    def named(self) -> dict[str, float]:
        """p at s = s* under the names the prose cites: ``p_<name>_r1`` (first ratio) and ``p_<name>_at_r<r>``."""
        r1 = self.lr_ratios[0]
        out = {}
        for name in self.parametrizations:
            out[f"p_{name}_r1"] = self.p_match[(name, r1)]
            out.update({f"p_{name}_at_r{r:g}": self.p_match[(name, r)] for r in self.lr_ratios})
        return out

    def rows(self) -> list[dict]:
        """One table row per run: t, a and p at s = s*, p at the horizon."""
        return [
            {
                "model": name,
                "r": r,
                "t(s=s*)": self.t_match[(name, r)],
                "a(s=s*)": self.a_match[(name, r)],
                "p(s=s*)": self.p_match[(name, r)],
                "p(horizon)": self.p_end[(name, r)],
            }
            for name, r in self.p_match
        ]


def matched_points(runs: dict) -> MatchedPoints:
    """The :class:`MatchedPoints` of the reduced runs ``runs`` = {(name, r): ReducedRun}."""
    nan = float("nan")
    ev = {k: run.event or {} for k, run in runs.items()}
    return MatchedPoints(
        parametrizations=list(dict.fromkeys(n for n, _ in runs)),
        lr_ratios=list(dict.fromkeys(r for _, r in runs)),
        t_match={k: e.get("t", nan) for k, e in ev.items()},
        a_match={k: e.get("a", nan) for k, e in ev.items()},
        p_match={k: e.get("p", nan) for k, e in ev.items()},
        p_end={k: float(run.p[-1]) for k, run in runs.items()},
    )


def strictly_increasing(values) -> bool:
    """Each value above the one before it (a predicate for ``claims.check``)."""
    values = list(values)
    return all(x < y for x, y in zip(values, values[1:]))


def full_models_at_matched_loss(
    points: MatchedPoints,
    task: Task,
    *,
    lr_ratio: float,
    matched: float = 0.9,
    a0: float = 0.1,
    b0: float = 0.1,
    rtol: float = 1e-9,
) -> dict[str, dict]:
    """:func:`full_model_at_matched_loss` for each parametrization of ``points`` at ``lr_ratio``, integrated
    up to t_max = max(10⁴, twice the reduced run's matched time); a parametrization whose reduced run
    never reaches s* gets NaN values (and no flow)."""
    nan = float("nan")
    out = {}
    for name in points.parametrizations:
        t = points.t_match[(name, lr_ratio)]
        if math.isnan(t):
            out[name] = {"p": nan, "accuracy": nan, "s": nan, "t": nan, "nfev": 0}
            continue
        out[name] = full_model_at_matched_loss(
            name, task, lr_ratio=lr_ratio, matched=matched, a0=a0, b0=b0, rtol=rtol, t_max=max(1e4, 2 * t)
        )
    return out


def full_deviation(full: dict[str, dict], points: MatchedPoints, lr_ratio: float) -> float:
    """Largest |p(full model) − p(reduced ODE)| at s = s* over the parametrizations."""
    return max(abs(f["p"] - points.p_match[(name, lr_ratio)]) for name, f in full.items())


def full_rows(full: dict[str, dict], points: MatchedPoints, lr_ratio: float) -> list[dict]:
    """One table row per parametrization: the full model at the matched loss next to the reduced p."""
    return [
        {
            "model": name,
            "p full model": f["p"],
            "p reduced": points.p_match[(name, lr_ratio)],
            "accuracy": f["accuracy"],
            "s": f["s"],
            "t": f["t"],
            "gradient evals": f["nfev"],
        }
        for name, f in full.items()
    ]


@dataclass
class SampledModels:
    """The sampled GD runs of :func:`sampled_models`: ``runs`` = {(name, r): [SampledRun per seed]}."""

    runs: dict
    seeds: list[int]

    def values(self, key: tuple[str, float], what: str = "p") -> np.ndarray:
        """Per-seed ``what`` (p, accuracy) of one model (NaN for a run not at the matched loss), (n_seeds,)."""
        return np.array([getattr(run, what) if run.reached else np.nan for run in self.runs[key]])

    def mean(self, key: tuple[str, float], what: str = "p") -> float:
        """Seed mean of :meth:`values` (NaN when a run is not at the matched loss)."""
        return float(np.mean(self.values(key, what)))

    def difference(self, key: tuple[str, float], baseline: tuple[str, float]) -> np.ndarray:
        """Per-seed p(key) − p(baseline): paired, the models of one seed share their data, (n_seeds,)."""
        return self.values(key) - self.values(baseline)

    def worst(self, what: str = "accuracy") -> float:
        """The smallest ``what`` over every model and seed."""
        return float(np.min(np.concatenate([self.values(k, what) for k in self.runs])))

    def failures(self) -> list[str]:
        """The runs not at the matched loss, each with its cause."""
        return [
            f"{run.parametrization} r={run.lr_ratio:g} seed {run.seed}: {run.message}"
            for runs in self.runs.values()
            for run in runs
            if not run.reached
        ]

    @property
    def reached(self) -> bool:
        """Every run reached the loss target with a stable step."""
        return not self.failures()

    def describe(self) -> str:
        """How many runs are at the loss target ("N/N runs ..."), then the failures with their causes."""
        runs = [run for rs in self.runs.values() for run in rs]
        return "; ".join([f"{sum(run.reached for run in runs)}/{len(runs)} runs at the loss target", *self.failures()])

    def rows(self) -> list[dict]:
        """One table row per model: seed mean, min and max of p, worst accuracy, steps, loss at the stop."""
        rows = []
        for key, runs in self.runs.items():
            p, acc = self.values(key), self.values(key, "accuracy")
            steps = [run.steps for run in runs if run.steps is not None]
            rows.append(
                {
                    "model": key[0],
                    "r": key[1],
                    "p (seed mean)": float(np.mean(p)),
                    "p min": float(np.min(p)),
                    "p max": float(np.max(p)),
                    "accuracy min": float(np.min(acc)),
                    "steps (mean)": float(np.mean(steps)) if steps else float("nan"),
                    "loss at stop (max)": float(np.max([run.loss for run in runs])),
                    "reached": f"{sum(run.reached for run in runs)}/{len(runs)}",
                }
            )
        return rows


def sampled_models(models, seeds, task: Task, **kw) -> SampledModels:
    """:func:`sampled_runs` of every (parametrization, r) of ``models`` on every seed, trained together
    (one batched GD run), grouped by model; ``kw`` as :func:`sampled_runs`."""
    flat = sampled_runs([(name, r, seed) for name, r in models for seed in seeds], task, **kw)
    return SampledModels(
        {(name, r): [run for run in flat if (run.parametrization, run.lr_ratio) == (name, r)] for name, r in models},
        list(seeds),
    )
