"""The one training engine: many models trained at once as one computation (issue 5, spec §7.1).

Every training run of the book goes through :func:`train` (a single model is P = 1): the
sharpening experiments, the mechanism runs, the real-data runs, the scalar reduction's GD and
the focus–dilution training. ``attnflow.train`` keeps the optimizer names, the divergence error
and ``make_optimizer``, the torch optimizer the tests train a lone model with to check the engine.

A sweep over parametrization × learning-rate ratio r × seed is P independent models. Their
parameters are stacked along a leading model axis and one ``objective`` evaluates all P losses
with batched matmuls; the sum of the P losses has the per-model gradients (the models share no
parameter), so one backward pass serves every model. The optimizer is written out by hand
because each model has its *own* learning rates — η_QK = r·η_OV differs from model to model,
which torch's optimizers (one rate per parameter group) cannot express without one group per
model. The update rules are torch's, bit for bit (the elementwise operations of torch.optim's
single-tensor step, its CPU path, see :func:`_update`):

- ``"gd"``: θ ← θ − η ∇L (full batch; the Euler discretisation of the gradient flow), torch.optim.SGD
  without momentum;
- ``"sgd"``: torch.optim.SGD (momentum μ, dampening 0, coupled weight decay), minibatches;
- ``"adam"``: torch.optim.Adam (bias-corrected moments, weight decay added to the gradient);
- ``"adamw"``: torch.optim.AdamW (bias-corrected moments, decoupled weight decay).

Each model slice gets the bits torch's optimizer gives that model alone with its rate as a Python
float, provided ``Stacked.lr`` holds the rates in float64 (Adam's step size lr/(1 − β1^t) and
AdamW's factor 1 − lr·λ are computed in double from it; a float32 rate is the rate rounded, and
only these two then differ, by an ulp of the step size at some steps). GD and SGD use the rate
rounded to the parameters' dtype, as torch does, so their rates may be given in either.
``tests/test_sweep.py`` checks the bit equality slice by slice against torch.optim, and that a
stacked model equals the same model trained alone.

The optimizer names are ``attnflow.train.OPTIMIZERS``.

**Matched training loss** (spec §7.1: compare "at a similar training loss"): with
``target_loss`` each model is frozen at the first evaluated step where its full training loss is
≤ the target (< with ``strict_target=True``); its step, its statistics at that step and its
parameters are kept, and training goes on for the others until all are frozen or ``steps`` is
reached. The loss of step k is evaluated at the parameters *before* update k, so a model frozen
at step k has taken k updates (as a one-model loop with torch's optimizer that stops there).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import numpy as np
import torch

from attnflow import device as devices
from attnflow import seeding
from attnflow.progress import progress
from attnflow.record import Run
from attnflow.train import OPTIMIZERS, TrainingDiverged

ON_DIVERGE = ("raise", "mark")

# objective(params, sample_index or None, models) -> (loss (P_a,), stats {name: (P_a,)}) for the
# models of the index tensor ``models`` (the ones still training); sample_index None = full data.
Objective = Callable[[Mapping[str, torch.Tensor], "torch.Tensor | None", torch.Tensor], tuple]


@dataclass
class Stacked:
    """One parameter tensor of a group of models, stacked on a leading model axis."""

    value: torch.Tensor  # (P_g, ...) the parameter of each model of the group
    models: torch.Tensor  # (P_g,) long: index of each slice's model in 0..P−1
    lr: torch.Tensor  # (P_g,) learning rate of each slice (η_QK or η_OV of its model); float64 for torch's Adam bits


@dataclass
class SweepRun(Run):
    """What a batched run recorded: a :class:`~attnflow.record.Run` whose ``t`` are the recorded
    steps (R,) and whose ``quantities`` are the full training loss ``"loss"`` and the objective's
    statistics, each (R, P) (NaN once a model is frozen), models in sweep order; ``meta`` holds the
    training settings. ``steps``, ``loss`` and ``stats`` read them under their historical names;
    :meth:`final` is each model's value where it stopped (``loss_final``, ``stats_final``). The
    other arrays are (P,)."""

    stopped_at: np.ndarray  # (P,) step of the matched loss (−1: never reached)
    diverged: np.ndarray  # (P,) bool: loss became NaN/inf (on_diverge="mark")
    loss_final: np.ndarray  # (P,) loss at the stop step (or at the last step)
    stats_final: dict[str, np.ndarray]  # name -> (P,) statistics at the stop (or last) step
    params: dict[str, torch.Tensor]  # name -> (P_g, ...) final (frozen) parameters
    steps_run: int  # optimizer steps actually taken
    target_loss: float | None = None
    labels: list[str] = field(default_factory=list)
    checkpoints: dict[float, dict] = field(default_factory=dict)  # level -> {"step": (P,), "params": {...}}
    diverged_at: np.ndarray | None = None  # (P,) step at which the loss became NaN/inf (−1: never)
    records: dict[str, list] = field(default_factory=dict)  # key -> one value of ``record`` per recorded step

    @property
    def steps(self) -> np.ndarray:
        """(R,) the recorded steps (the time axis ``t``)."""
        return self.t

    @property
    def loss(self) -> np.ndarray:
        """(R, P) full training loss at the recorded steps (NaN once frozen)."""
        return self.quantities["loss"]

    @property
    def stats(self) -> dict[str, np.ndarray]:
        """name -> (R, P) objective statistics at the recorded steps (NaN once frozen)."""
        return {k: v for k, v in self.quantities.items() if k != "loss"}

    @property
    def reached(self) -> np.ndarray:
        """(P,) bool: the model reached the target loss."""
        return self.stopped_at >= 0

    def final(self, name: str) -> np.ndarray:
        """(P,) quantity ``name`` of each model where it stopped (at its matched loss, its step
        limit or the last step): ``loss_final``, or ``stats_final[name]``."""
        if name == "loss":
            return self.loss_final
        if name in self.stats_final:
            return self.stats_final[name]
        return super().final(name)


def minibatches(n_samples: int, batch_size: int, seed: int) -> "Callable[[], torch.Tensor]":
    """A stream of minibatch indices (without replacement within an epoch, reshuffled per
    epoch) from the ``minibatch`` stream of ``seed`` (``attnflow.seeding``); the same seed gives the
    same stream, so a looped run can replay it."""
    if not 1 <= batch_size <= n_samples:
        raise ValueError(f"parameter 'batch_size': received {batch_size!r}; allowed: an integer in [1, {n_samples}]")
    gen = seeding.generator(seeding.stream(seed, "minibatch"))
    state = {"perm": torch.randperm(n_samples, generator=gen), "pos": 0}

    def draw() -> torch.Tensor:
        if state["pos"] + batch_size > n_samples:
            state["perm"], state["pos"] = torch.randperm(n_samples, generator=gen), 0
        idx = state["perm"][state["pos"] : state["pos"] + batch_size]
        state["pos"] += batch_size
        return idx

    return draw


def _check(
    optimizer: str, steps: int, record_every: int, target_loss, on_diverge: str, tensors: Mapping[str, Stacked]
) -> None:
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"parameter 'optimizer': received {optimizer!r}; allowed: one of {', '.join(OPTIMIZERS)}")
    if not isinstance(steps, int) or steps < 0:
        raise ValueError(f"parameter 'steps': received {steps!r}; allowed: an integer ≥ 0")
    if not isinstance(record_every, int) or record_every < 1:
        raise ValueError(f"parameter 'record_every': received {record_every!r}; allowed: an integer ≥ 1")
    if target_loss is not None and not (math.isfinite(target_loss) and target_loss > 0):
        raise ValueError(f"parameter 'target_loss': received {target_loss!r}; allowed: a finite number > 0 or None")
    if on_diverge not in ON_DIVERGE:
        raise ValueError(f"parameter 'on_diverge': received {on_diverge!r}; allowed: one of {ON_DIVERGE}")
    for name, t in tensors.items():
        if not bool(torch.all(torch.isfinite(t.lr) & (t.lr > 0))):
            raise ValueError(f"learning rates of {name!r} must be finite and > 0; received {t.lr.tolist()}")


def train(
    objective: Objective,
    tensors: Mapping[str, Stacked],
    n_models: int,
    *,
    optimizer: str = "gd",
    steps: int,
    target_loss: float | None = None,
    batch_size: int | None = None,
    n_samples: int | None = None,
    eval_every: int = 1,
    record_every: int = 10,
    momentum: float = 0.0,
    weight_decay: float = 0.0,
    betas: tuple[float, float] = (0.9, 0.999),
    eps: float = 1e-8,
    seed: int = 0,
    on_diverge: str = "raise",
    labels: Sequence[str] | None = None,
    checkpoints: Sequence[float] = (),
    step_limits: Sequence[int] | None = None,
    cpu_threads: int | None = 1,
    strict_target: bool = False,
    record: "Callable[[int, Mapping[str, torch.Tensor]], Mapping] | None" = None,
    desc: str = "sweep",
) -> SweepRun:
    """Train P = ``n_models`` stacked models together for at most ``steps`` optimizer steps.

    ``batch_size=None`` is full-batch (the loss that is descended is the training loss, checked
    every step); otherwise minibatches of ``n_samples`` come from :func:`minibatches` and the full
    training loss is evaluated every ``eval_every`` steps (stop and record checks happen there).
    ``on_diverge="raise"`` raises :class:`TrainingDiverged` naming the model and step;
    ``"mark"`` freezes a diverged model and flags it (for grids that probe where training breaks).
    ``checkpoints``: loss levels above the target; each model's parameters are also kept at the
    first evaluated step where its loss is ≤ the level (matched comparisons at several losses
    from one run). ``strict_target``: freeze where the loss is strictly below ``target_loss`` (the
    stop rule ``loss < target`` of a single-model loop) instead of ≤. ``step_limits`` (P,): a
    model still above the target at its own limit is frozen there, unreached (e.g. a budget in
    gradient-flow time η·steps for models with different η; checked at evaluated steps).
    ``record(step, params) -> {key: value}``: called
    (without gradients) at each recorded step, after the objective's evaluation there and before
    that step's update, with the stacked parameters; its values are kept in ``SweepRun.records``,
    one per entry of ``SweepRun.steps`` (an objective may keep what it computed for the hook to
    read, as the focus–dilution runs keep their attention). ``cpu_threads``: torch intra-op threads
    during the run on CPU (None: leave as is). The batched ops are small (milliseconds); on a shared
    2-core machine two threads measured ~6×
    *slower* than one (spin-waiting under contention), so the default is 1.
    """
    with devices.cpu_threads(cpu_threads, blas=False):
        return _train(
            objective,
            tensors,
            n_models,
            optimizer=optimizer,
            steps=steps,
            target_loss=target_loss,
            batch_size=batch_size,
            n_samples=n_samples,
            eval_every=eval_every,
            record_every=record_every,
            momentum=momentum,
            weight_decay=weight_decay,
            betas=betas,
            eps=eps,
            seed=seed,
            on_diverge=on_diverge,
            labels=labels,
            checkpoints=checkpoints,
            step_limits=step_limits,
            strict_target=strict_target,
            record=record,
            desc=desc,
        )


def _train(
    objective,
    tensors,
    n_models,
    *,
    optimizer,
    steps,
    target_loss,
    batch_size,
    n_samples,
    eval_every,
    record_every,
    momentum,
    weight_decay,
    betas,
    eps,
    seed,
    on_diverge,
    labels,
    checkpoints,
    step_limits,
    strict_target,
    record,
    desc,
) -> SweepRun:
    _check(optimizer, steps, record_every, target_loss, on_diverge, tensors)
    if any(not (math.isfinite(c) and c > 0) or (target_loss is not None and c < target_loss) for c in checkpoints):
        raise ValueError(f"parameter 'checkpoints': received {list(checkpoints)}; allowed: finite levels ≥ target_loss")
    labels = list(labels) if labels is not None else [f"model {i}" for i in range(n_models)]
    limits = np.full(n_models, steps) if step_limits is None else np.minimum(np.asarray(step_limits), steps)
    if limits.shape != (n_models,) or (limits < 0).any():
        raise ValueError(f"parameter 'step_limits': expected {n_models} integers ≥ 0; received {step_limits!r}")
    if batch_size is not None and n_samples is None:
        raise ValueError("parameter 'n_samples' is needed with a minibatch size")
    draw = minibatches(n_samples, batch_size, seed) if batch_size is not None else None
    names = list(tensors)
    params = {n: tensors[n].value.detach().clone().requires_grad_(True) for n in names}
    slots = {n: tensors[n].models for n in names}
    rates = {n: tensors[n].lr.to(torch.float64) for n in names}  # (P_g,) as given (float64 keeps torch's bits)
    lrs = {n: rates[n].to(params[n].dtype) for n in names}
    device = params[names[0]].device
    bufs = {n: torch.zeros_like(params[n]) for n in names}  # momentum / first moment
    sq = {n: torch.zeros_like(params[n]) for n in names}  # AdamW second moment
    count = {n: torch.zeros(len(slots[n]), dtype=torch.float64, device=device) for n in names}  # updates taken
    active = torch.ones(n_models, dtype=torch.bool, device=device)
    stopped_at = np.full(n_models, -1)
    diverged = np.zeros(n_models, dtype=bool)
    diverged_at = np.full(n_models, -1)
    loss_final = np.full(n_models, np.nan)
    stats_final: dict[str, np.ndarray] = {}
    rec_steps, rec_loss, rec_stats, rec_hook = [], [], {}, {}
    snaps = {
        float(c): {"step": np.full(n_models, -1), "params": {n: p.detach().clone() for n, p in params.items()}}
        for c in checkpoints
    }
    t0, steps_run = time.perf_counter(), 0

    def shape(n: str, v: torch.Tensor) -> torch.Tensor:  # (P_g,) -> (P_g, 1, ..., 1)
        return v.reshape(-1, *([1] * (params[n].dim() - 1)))

    for step in progress(range(steps + 1), desc=desc):
        evaluate = batch_size is None or step % eval_every == 0 or step == steps
        idx = torch.nonzero(active).flatten()  # (P_a,) models still training
        on_np = idx.cpu().numpy()
        loss = None
        if evaluate:
            with torch.set_grad_enabled(batch_size is None):
                loss, stats = objective(params, None, idx)  # (P_a,), {k: (P_a,)}
            value = np.full(n_models, np.nan)
            value[on_np] = loss.detach().cpu().double().numpy()
            stats_np = {}
            for k, v in stats.items():
                stats_np[k] = np.full(n_models, np.nan)
                stats_np[k][on_np] = v.detach().cpu().double().numpy()
            now = np.zeros(n_models, dtype=bool)
            now[on_np] = True
            bad = now & ~np.isfinite(value)
            if bad.any():
                who = ", ".join(labels[i] for i in np.flatnonzero(bad))
                if on_diverge == "raise":
                    raise TrainingDiverged(
                        f"training diverged at step {step} for {who}: loss = "
                        f"{value[bad].tolist()}; lower the learning rates or the init scale"
                    )
                diverged |= bad
                diverged_at[bad] = step
                now &= ~bad
            if target_loss is None:
                newly = np.zeros_like(now)
            else:
                newly = now & ((value < target_loss) if strict_target else (value <= target_loss))
            at_limit = now & ~newly & (step >= limits)
            last = newly | at_limit
            for k, v in stats_np.items():
                stats_final.setdefault(k, np.full(n_models, np.nan))[last] = v[last]
            loss_final[last] = value[last]
            stopped_at[newly] = step
            for level, snap in snaps.items():  # first crossing of each level
                cross = now & (value <= level) & (snap["step"] < 0)
                if cross.any():
                    snap["step"][cross] = step
                    hit = torch.from_numpy(cross).to(device)
                    for n in names:
                        m = shape(n, hit[slots[n]])
                        snap["params"][n] = torch.where(m, params[n].detach(), snap["params"][n])
            if step % record_every == 0 or last.any() or step == steps:
                rec_steps.append(step)
                rec_loss.append(np.where(now, value, np.nan))
                for k, v in stats_np.items():
                    rec_stats.setdefault(k, []).append(np.where(now, v, np.nan))
                if record is not None:
                    with torch.no_grad():
                        for k, v in record(step, params).items():
                            rec_hook.setdefault(k, []).append(v)
            keep = torch.from_numpy(now[on_np] & ~newly[on_np] & ~at_limit[on_np]).to(device)  # (P_a,)
            active[idx[~keep]] = False
            if batch_size is None:
                loss, idx = loss[keep], idx[keep]
        if step == steps or not bool(active.any()):
            break
        if batch_size is not None:  # the loss to descend
            idx = torch.nonzero(active).flatten()
            loss, _ = objective(params, draw(), idx)
            finite = torch.isfinite(loss.detach())
            if not bool(finite.all()):
                who = ", ".join(labels[i] for i in idx[~finite].tolist())
                if on_diverge == "raise":
                    raise TrainingDiverged(f"training diverged at step {step} for {who} (minibatch loss not finite)")
                diverged[idx[~finite].cpu().numpy()] = True
                diverged_at[idx[~finite].cpu().numpy()] = step
                active[idx[~finite]] = False
                loss, idx = loss[finite], idx[finite]
        grads = torch.autograd.grad(loss.sum(), [params[n] for n in names], allow_unused=True)
        with torch.no_grad():
            for n, g in zip(names, grads):
                on = active[slots[n]]  # (P_g,) models still training
                g = torch.zeros_like(params[n]) if g is None else torch.nan_to_num(g)
                rest = (count[n], shape(n, lrs[n]), rates[n], momentum, weight_decay, betas, eps, lambda v: shape(n, v))
                if bool(on.all()):  # every model of the tensor moves: update in place, no copies
                    bufs[n], sq[n] = _update(optimizer, params[n], g, bufs[n], sq[n], *rest)
                    count[n] = count[n] + 1
                    continue
                new_p, new_b, new_s = params[n].clone(), bufs[n].clone(), sq[n].clone()
                new_b, new_s = _update(optimizer, new_p, g, new_b, new_s, *rest)
                m = shape(n, on)
                params[n].copy_(torch.where(m, new_p, params[n]))
                bufs[n] = torch.where(m, new_b, bufs[n])
                sq[n] = torch.where(m, new_s, sq[n])
                count[n] = count[n] + on.to(count[n].dtype)
        steps_run = step + 1
    if "loss" in rec_stats:
        raise ValueError(
            "the objective returned a statistic named 'loss'; that name is the training loss "
            "of the record, rename the statistic"
        )
    quantities = {"loss": np.asarray(rec_loss), **{k: np.asarray(v) for k, v in rec_stats.items()}}  # (R, P) each
    meta = dict(
        optimizer=optimizer,
        steps=steps,
        batch_size=batch_size,
        eval_every=eval_every,
        record_every=record_every,
        momentum=momentum,
        weight_decay=weight_decay,
        seed=seed,
        desc=desc,
    )
    return SweepRun(
        t=np.asarray(rec_steps),
        quantities=quantities,
        wall_s=time.perf_counter() - t0,
        meta=meta,
        stopped_at=stopped_at,
        diverged=diverged,
        loss_final=loss_final,
        stats_final=stats_final,
        params={n: p.detach() for n, p in params.items()},
        steps_run=steps_run,
        target_loss=target_loss,
        labels=labels,
        checkpoints=snaps,
        diverged_at=diverged_at,
        records=rec_hook,
    )


def _update(optimizer, p, g, buf, sq, taken, lr, lr64, momentum, weight_decay, betas, eps, shape):
    """One update of torch's GD / SGD / Adam / AdamW with a learning rate per model slice, written
    into ``p``, ``buf`` and ``sq``, in the elementwise operations of torch.optim's single-tensor step
    (the CPU path), so that each slice gets the bits torch would give it with its rate as a Python
    float. Returns the new (buf, sq); ``buf`` may be a new tensor (SGD without momentum keeps the
    gradient itself, as torch does). When only some slices move, the caller runs it on copies and
    merges the moved slices with ``torch.where`` (in place on the whole tensor avoids those copies:
    on a (P, V, d) embedding they were most of a step, issue 23).

    ``lr``: (P_g, 1, ...) the rates in the parameters' dtype; ``lr64``: (P_g,) the rates in float64
    (Adam's step size lr / (1 − β1^t) and AdamW's factor 1 − lr·λ are computed in double, as torch
    computes them from a Python float, then rounded once to the parameters' dtype); ``taken``:
    (P_g,) float64, the updates each slice has taken. torch's ``add_(x, alpha=−lr)`` is a fused
    multiply-add in its vectorized loop, so the per-slice form is ``addcmul(p, x, lr, value=−1)``
    (the same single rounding of p − lr·x), not ``p − lr * x`` (two roundings)."""
    if optimizer == "gd":
        p.addcmul_(g, lr, value=-1)
        return buf, sq
    if optimizer == "sgd":
        d_p = g.add(p, alpha=weight_decay) if weight_decay else g
        if not momentum:
            buf = d_p
        elif bool((taken == 0).all()):  # torch: buf = clone(d_p) at the first step
            buf = d_p.clone()
        elif bool((taken == 0).any()):
            buf = torch.where(shape(taken == 0), d_p, buf.mul(momentum).add_(d_p))
        else:
            buf.mul_(momentum).add_(d_p)
        p.addcmul_(buf, lr, value=-1)
        return buf, sq
    beta1, beta2 = betas
    if weight_decay:
        if optimizer == "adam":
            g = g.add(p, alpha=weight_decay)  # torch.optim.Adam: coupled decay
        else:  # AdamW: p.mul_(1 − lr·λ), the factor in double
            p.mul_(shape((1 - lr64 * weight_decay).to(p.dtype)))
    buf.lerp_(g, 1 - beta1)
    sq.mul_(beta2).addcmul_(g, g, value=1 - beta2)
    t = (taken + 1).tolist()  # torch: step_t.item(), Python-float powers
    bias1 = torch.tensor([1 - beta1**k for k in t], dtype=torch.float64, device=lr64.device)
    bias2_sqrt = torch.tensor([(1 - beta2**k) ** 0.5 for k in t], dtype=p.dtype, device=p.device)
    step_size = shape((-(lr64 / bias1)).to(p.dtype))  # torch: value=−step_size of addcdiv_
    denom = sq.sqrt().div_(shape(bias2_sqrt)).add_(eps)
    p.add_(torch.mul(step_size, buf).div_(denom))  # addcdiv_: p + (value·exp_avg) / denom
    return buf, sq
