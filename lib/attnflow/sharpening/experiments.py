"""Synthetic sharpening experiments, batched (spec §7.1, §8.2; claims A1, A6–A8, A11).

A sweep is a list of :class:`ModelSpec` (parametrization, r = η_QK/η_OV, seed, η_OV, init
scale). Each model is built as the theory chapter's ``SelfAttention`` and initialised by its
``init_gaussian`` (i.i.d. N(0, σ²), σ = init_scale/√d: random, *not* balanced); the models are
then stacked per parametrization (:class:`ModelStack`) and trained together by
``attnflow.sweep.train``. Seed s draws the training/test data from its ``data`` stream and the
initial weights from its ``sweep_init`` stream (``seeding.stream(s, role)``: s and
s + INIT_SEED_OFFSET), so models that differ only in r start from the same weights on the same
data (paired comparisons). :func:`run` returns an :class:`Experiment`, the sweep record
(``attnflow.record.Run``) with its stack and data.

Training descends the mean cross-entropy through the exact bag-of-tokens forward
(``ModelStack.bag_forward``); evaluation (:func:`evaluate`) uses the per-position forward, which
also deletes tokens for ERASER's sufficiency and comprehensiveness (``attnflow.sharpening.metrics``).
:func:`evaluate_by_ratio` arranges a sweep over r at one loss level as (n_ratios, n_seeds) arrays
(:class:`ByRatio`: paired changes from r = 1 to r_max, seed means), the ratio sweep's comparisons;
:func:`by_parametrization` arranges the parametrizations at matched loss as (n_parametrizations, n_seeds)
arrays, or (n_parametrizations, *grid, n_seeds) over spec fields such as init scale × η_OV
(:class:`ByParametrization`: spread, lead and lag of one parametrization over the others, values at a grid point).
The page schemas are in ``sharpening.contracts``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import torch

from attnflow import record, seeding, sweep
from attnflow.sharpening import data, metrics
from attnflow.sharpening.stack import Bags, ModelSpec, ModelStack
from attnflow.sharpening.stack import INIT_SEED_OFFSET as INIT_SEED_OFFSET  # re-exported for test_sweep, bench


def grid(
    parametrizations: Sequence[str],
    lr_ratios: Sequence[float] = (1.0,),
    seeds: Sequence[int] = (0,),
    lr_ovs: Sequence[float] = (0.1,),
    init_scales: Sequence[float] = (0.1,),
    init: str = "gaussian",
) -> list[ModelSpec]:
    """Every combination, in the order parametrization × r × seed × η_OV × init scale; ``init`` is the
    initialization of every model ("gaussian", or "manifold": balanced with a₀ = b₀ = init scale)."""
    return [
        ModelSpec(p, float(r), int(s), float(lr), float(i), init=init)
        for p in parametrizations
        for r in lr_ratios
        for s in seeds
        for lr in lr_ovs
        for i in init_scales
    ]


def stack_batches(task: data.Task, seeds: Sequence[int], n_train: int, n_test: int, device) -> tuple:
    """Per-model training and test sets (P, N, ·), one dataset per seed (shared by its models)."""
    train, test = {}, {}
    for s in sorted(set(seeds)):
        gen = seeding.generator(seeding.stream(s, "data"))
        train[s], test[s] = data.sample(task, n_train, gen), data.sample(task, n_test, gen)

    def stack(batches):
        return data.Batch(
            *(
                torch.stack([getattr(batches[s], f) for s in seeds]).to(device)
                for f in ("tokens", "targets", "relevant_mask", "weights")
            )
        )

    return stack(train), stack(test)


@dataclass(kw_only=True)
class Experiment(sweep.SweepRun):
    """A trained sweep: the sweep record (a :class:`~attnflow.sweep.SweepRun`, so a
    :class:`~attnflow.record.Run`) with the stack and the data that produced it."""

    stack: ModelStack
    train: data.Batch  # tokens (P, N, T), targets (P, N), relevant_mask (P, N, T)
    test: data.Batch

    @property
    def run(self) -> sweep.SweepRun:
        """The sweep record: the experiment itself (``exp.run.params``, ``exp.run.reached`` …)."""
        return self

    @property
    def specs(self) -> list[ModelSpec]:
        return self.stack.specs

    def describe(self) -> str:
        """One line: models, steps, wall time, device, and whether every model reached the target loss."""
        from attnflow import device

        return (
            f"{len(self.specs)} models, {self.steps_run} steps, {self.wall_s:.1f} s on {device.describe()}; "
            f"all reached L*: {bool(self.reached.all())}"
        )

    def select(self, **match) -> np.ndarray:
        """Indices of the models whose spec fields equal ``match`` (e.g. parametrization="FAFO")."""
        return np.array([i for i, sp in enumerate(self.specs) if all(getattr(sp, k) == v for k, v in match.items())])

    def overshoot(self) -> float:
        """The largest L* − training loss at the stop over every model: how far one GD step carried a
        model below the matched loss (NaN without a target loss)."""
        if self.target_loss is None:
            return float("nan")
        return float(np.max(self.target_loss - self.loss_final))


def _objective(stack: ModelStack, batch: data.Batch):
    """Mean cross-entropy (P_a,) and training statistics of the models ``models``."""
    bags = Bags.of(batch, stack.task.vocab_size, stack.cfg.attend_self, stack.emb.dtype)
    cache: dict = {}

    def objective(params, index, models):
        if index is None:  # full data: reuse the rows
            key = tuple(models.tolist())  # while the active set holds
            if cache.get("key") != key:
                cache.update(key=key, rows=bags.rows(models, None), targets=batch.targets[models])
            sub, targets = cache["rows"], cache["targets"]  # (P_a, ...), (P_a, B)
        else:
            index = index.to(batch.tokens.device)
            sub, targets = bags.rows(models, index), batch.targets[models][:, index]
        logits, relevant = stack.bag_forward(params, sub, models)  # (P_a, K, B), (P_a, B)
        logp = torch.log_softmax(logits, dim=1)
        true = logp.gather(1, targets[:, None, :]).squeeze(1)  # (P_a, B) log-prob of y
        loss = -true.mean(-1)  # (P_a,)
        with torch.no_grad():  # (argmax over dim 1 is slow on CPU)
            correct = true >= logp.amax(1)
            stats = {"accuracy": correct.float().mean(-1), "attn_relevant": relevant.mean(-1)}
        return loss, stats

    return objective


def run(
    specs: Sequence[ModelSpec],
    task: data.Task = data.Task(),
    *,
    n_train: int = 2000,
    n_test: int = 2000,
    optimizer: str = "gd",
    steps: int = 4000,
    target_loss: float | None = 0.1,
    batch_size: int | None = None,
    eval_every: int = 1,
    record_every: int = 20,
    momentum: float = 0.0,
    weight_decay: float = 0.0,
    attend_self: bool = False,
    device: str = "auto",
    dtype=torch.float32,
    on_diverge: str = "raise",
    checkpoints: Sequence[float] = (),
    step_limits: Sequence[int] | None = None,
    seed: int = 0,
) -> Experiment:
    """Build, stack and train a sweep; models are compared at ``target_loss`` (spec §7.1)."""
    stack = ModelStack(specs, task, attend_self=attend_self, dtype=dtype, device=device)
    train, test = stack_batches(task, [sp.seed for sp in specs], n_train, n_test, stack.device)
    result = sweep.train(
        _objective(stack, train),
        stack.tensors,
        len(specs),
        optimizer=optimizer,
        steps=steps,
        target_loss=target_loss,
        batch_size=batch_size,
        n_samples=n_train,
        eval_every=eval_every,
        record_every=record_every,
        momentum=momentum,
        weight_decay=weight_decay,
        on_diverge=on_diverge,
        labels=stack.labels,
        checkpoints=checkpoints,
        step_limits=step_limits,
        seed=seed,
    )
    return Experiment(**record.fields_of(result), stack=stack, train=train, test=test)


def evaluate(
    exp: Experiment,
    *,
    tau_attn: float = 0.5,
    tau_conf: float = 0.5,
    k_percents=metrics.AOPC_PERCENTS,
    split: str = "test",
    level: float | None = None,
) -> dict[str, np.ndarray]:
    """Per-model metrics (P,) on the test set at the trained (matched-loss) parameters — or at the
    checkpoint of loss ``level``: relevant attention, accuracy, fraction whose top-attention token
    is relevant, AC, ACMC, AOPC sufficiency and comprehensiveness — plus the per-instance relevant
    attention, true-class confidence and correctness (P, B) for DTAP heatmaps."""
    batch = exp.test if split == "test" else exp.train
    params = exp.run.params if level is None else exp.run.checkpoints[float(level)]["params"]
    with torch.no_grad():
        out = exp.stack.forward(params, batch.tokens)
        probs = torch.softmax(out.logits, dim=-1)  # (P, B, K)
        attn_rel = metrics.relevant_attention(out.attn, batch.relevant_mask)  # (P, B)
        conf = metrics.true_class_confidence(probs, batch.targets)  # (P, B)
        candidates = torch.ones_like(batch.tokens, dtype=torch.bool)
        candidates[..., -1] = False  # the query is never a rationale

        def predict(tokens, keep_mask):
            return torch.softmax(exp.stack.forward(params, tokens, keep_mask).logits, dim=-1)

        eraser = metrics.aopc(predict, batch.tokens, out.attn, candidates, k_percents)
    top1 = batch.relevant_mask.gather(-1, out.attn.argmax(-1, keepdim=True)).squeeze(-1)  # (P, B) top token relevant
    res = {
        "attn_relevant": attn_rel.mean(-1),
        "accuracy": (probs.argmax(-1) == batch.targets).float().mean(-1),
        "top1_relevant": top1.float().mean(-1),
        "ac": metrics.attention_confidence(attn_rel, tau_attn),
        "acmc": metrics.acmc(attn_rel, conf, tau_attn, tau_conf),
        "sufficiency": eraser["sufficiency"].mean(-1),
        "comprehensiveness": eraser["comprehensiveness"].mean(-1),
    }
    res = {k: v.cpu().double().numpy() for k, v in res.items()}
    res["attn_relevant_each"], res["confidence_each"] = attn_rel.cpu().numpy(), conf.cpu().numpy()
    res["correct_each"] = (probs.argmax(-1) == batch.targets).cpu().numpy()  # (P, B) bool
    return res


# -- a sweep over r compared at matched loss (spec §7.1–7.2; claims A6, A11) --------------------------
SWEEP_METRICS = ("attn_relevant", "ac", "acmc", "sufficiency", "comprehensiveness", "accuracy", "top1_relevant")


@dataclass
class ByRatio:
    """Held-out metrics of a sweep over r at one loss level: ``values[metric]`` is (n_ratios, n_seeds),
    row k the models of r = ``ratios[k]`` (ascending), column j those of seed ``seeds[j]``. The models
    of one column share their data and initial weights, so a difference along a column is paired."""

    ratios: list[float]
    seeds: list[int]
    values: dict[str, np.ndarray]

    def __getitem__(self, metric: str) -> np.ndarray:
        return self.values[metric]

    def seed_mean(self, metric: str) -> np.ndarray:
        """(n_ratios,) the metric's mean over seeds at each r."""
        return self.values[metric].mean(1)

    def change(self, metric: str) -> np.ndarray:
        """(n_seeds,) the paired change of the metric from the first r (r = 1) to the last (r_max)."""
        v = self.values[metric]
        return v[-1] - v[0]

    def mean_change(self, metric: str) -> float:
        """Seed mean at r_max minus seed mean at the first r."""
        v = self.values[metric]
        return float(v[-1].mean() - v[0].mean())

    def changes_from_first(self, metric: str) -> dict[float, np.ndarray]:
        """{r: (n_seeds,) paired change metric(r) − metric(r_1)} for every r after the first (none with one r)."""
        v = self.values[metric]
        return {r: v[k] - v[0] for k, r in enumerate(self.ratios) if k > 0}

    def steps(self, metric: str) -> dict[tuple[float, float], np.ndarray]:
        """{(r_{k−1}, r_k): (n_seeds,) paired change metric(r_k) − metric(r_{k−1})} between neighbouring ratios
        (none with one r)."""
        v = self.values[metric]
        return {(self.ratios[k - 1], self.ratios[k]): v[k] - v[k - 1] for k in range(1, len(self.ratios))}

    def has_room(self, metric: str, margin: float) -> np.ndarray:
        """(n_seeds,) bool: the metric (a fraction) at the first r is below 1 − ``margin``, so it can still rise."""
        return self.values[metric][0] < 1 - margin


def evaluate_by_ratio(
    exp: Experiment, ratios: Sequence[float] | None = None, *, level: float | None = None, **kwargs
) -> ByRatio:
    """:func:`evaluate` at loss ``level`` (a checkpoint loss of the run; None or the run's target loss: the
    trained parameters), with the metrics of :data:`SWEEP_METRICS` arranged by r (:class:`ByRatio`).
    ``ratios`` defaults to every r of the sweep; the sweep holds one parametrization, η_OV and init scale."""
    ratios = sorted({sp.lr_ratio for sp in exp.specs}) if ratios is None else [float(r) for r in ratios]
    rows = [exp.select(lr_ratio=r) for r in ratios]  # (n_ratios,) index arrays, each (n_seeds,)
    if any(len(i) != len(rows[0]) or len(i) == 0 for i in rows):
        raise ValueError(
            f"evaluate_by_ratio: every r of {ratios} needs the same models; received {[len(i) for i in rows]}"
        )
    seeds = [exp.specs[i].seed for i in rows[0]]
    at = None if level is None or level == exp.run.target_loss else float(level)
    ev = evaluate(exp, level=at, **kwargs)
    return ByRatio(ratios, seeds, {m: np.stack([ev[m][i] for i in rows]) for m in SWEEP_METRICS})  # (n_ratios, n_seeds)


def mean_at(results: dict, key, metric: str, index: int) -> float:
    """Seed mean of ``metric`` at ratio ``index`` of ``results[key]`` (a :class:`ByRatio`); NaN when the sweep
    has no such key (an optimizer that was not run), so that a cross-page reference still resolves."""
    lv = results.get(key)
    return float("nan") if lv is None else float(lv[metric][index].mean())


def rows_by_ratio(results: dict, keys: Sequence[str], metrics: Sequence[str] = SWEEP_METRICS[:-1]) -> list[dict]:
    """One table row per entry of ``results`` ({tuple key: :class:`ByRatio`}) and r: the key's parts named by
    ``keys``, r, and the seed mean of each metric."""
    return [
        {**dict(zip(keys, key)), "r": r, **{m: float(lv[m][k].mean()) for m in metrics}}
        for key, lv in results.items()
        for k, r in enumerate(lv.ratios)
    ]


def paired_steps(results: dict, metric: str) -> dict[tuple, np.ndarray]:
    """{(*key, r_{k−1}, r_k): (n_seeds,) paired change between neighbouring ratios} over ``results``
    ({key: ByRatio}), key by key (:meth:`ByRatio.steps`), flat so that a page checks one per line."""
    return {(*key, *pair): v for key, res in results.items() for pair, v in res.steps(metric).items()}


def paired_changes(results: dict, metric: str) -> dict[tuple, np.ndarray]:
    """{(*key, r): (n_seeds,) paired change metric(r) − metric(r_1)} over ``results``, key by key
    (:meth:`ByRatio.changes_from_first`), flat."""
    return {(*key, r): v for key, res in results.items() for r, v in res.changes_from_first(metric).items()}


def rises_where_free(x) -> bool:
    """A claims predicate on ``[changes, free]`` (per seed): no change is negative, and every change of a seed
    with room to rise (``free``) is positive."""
    changes, free = x
    return all(d >= 0 for d in changes) and all(d > 0 for d, f in zip(changes, free) if f)


# -- the parametrizations compared at matched loss (spec §7.1, §8.2; claims A1, A7) --------------------
MATCHED_METRICS = ("attn_relevant", "steps", "loss_final", "test_attn_relevant", "test_accuracy")


@dataclass
class ByParametrization:
    """Per-seed values of a sweep over parametrizations at matched loss: ``values[metric]`` is
    (n_parametrizations, n_seeds), row k the models of ``names[k]``, column j those of seed ``seeds[j]``
    (:data:`MATCHED_METRICS`: attention mass on the distinct token at the stop, its GD step, the training
    loss there, and the held-out attention mass and accuracy; also ``reached``, ``diverged`` and every
    held-out metric as ``test_<name>``). The models of one column share their data, so a difference along
    a column is paired. A parametrization that was not trained reads as NaN. On a grid (``levels``: spec
    field -> its sorted values) every array has one axis per field between the two: (n_parametrizations,
    *grid, n_seeds); :meth:`lead`, :meth:`lag` and :meth:`of` then keep the grid axes."""

    names: list[str]
    seeds: list[int]
    values: dict[str, np.ndarray]
    levels: dict[str, list[float]] = field(default_factory=dict)

    def __getitem__(self, metric: str) -> np.ndarray:
        return self.values[metric]

    def of(self, name: str, metric: str = "attn_relevant") -> np.ndarray:
        """(n_seeds,) the metric of parametrization ``name``; [NaN] when it was not trained."""
        if name not in self.names:
            return np.array([np.nan])
        return self.values[metric][self.names.index(name)]

    def at(self, name: str, metric: str = "attn_relevant", **point) -> np.ndarray:
        """(n_seeds,) the metric of ``name`` at one grid point (``init_scale=1.0, lr_ov=0.1``); [NaN] when
        ``name`` was not trained or the point is not on the grid."""
        if name not in self.names or any(point.get(k) not in v for k, v in self.levels.items()):
            return np.array([np.nan])
        return self.of(name, metric)[tuple(v.index(point[k]) for k, v in self.levels.items())]

    def mean(self, name: str, metric: str = "attn_relevant") -> float:
        """Seed mean of the metric of ``name`` (NaN when it was not trained)."""
        return float(self.of(name, metric).mean())

    def spread(self, metric: str = "attn_relevant") -> np.ndarray:
        """(n_seeds,) per seed, the largest minus the smallest value over the parametrizations."""
        v = self.values[metric]
        return v.max(0) - v.min(0)

    def lead(self, name: str, metric: str = "attn_relevant") -> np.ndarray:
        """(n_seeds,) per seed, ``name`` minus the largest of the other parametrizations ([NaN] without
        ``name`` or another one): > 0 where ``name`` is the largest."""
        if name not in self.names or len(self.names) < 2:
            return np.array([np.nan])
        v, k = self.values[metric], self.names.index(name)
        return v[k] - np.delete(v, k, axis=0).max(0)

    def lag(self, name: str, metric: str = "attn_relevant") -> np.ndarray:
        """(n_seeds,) per seed, the smallest of the other parametrizations minus ``name``: > 0 where
        ``name`` is the smallest ([NaN] without ``name`` or another one)."""
        if name not in self.names or len(self.names) < 2:
            return np.array([np.nan])
        v, k = self.values[metric], self.names.index(name)
        return np.delete(v, k, axis=0).min(0) - v[k]

    def count_above(self, name: str, other: str, metric: str = "attn_relevant") -> int:
        """In how many seeds ``name`` is above ``other`` (0 when either was not trained)."""
        if name not in self.names or other not in self.names:
            return 0
        return int(np.sum(self.of(name, metric) > self.of(other, metric)))

    def largest_gap(self, reference: Mapping[str, float], metric: str = "attn_relevant") -> float:
        """max over the parametrizations of |seed mean − ``reference[name]``| (float64): e.g. the balanced
        full model against the reduced ODE's attention at the same loss."""
        means = np.asarray(self.values[metric], dtype=float).mean(1)  # (n_parametrizations,)
        return float(max(abs(float(m) - float(reference[n])) for n, m in zip(self.names, means)))

    def rows(self) -> list[dict]:
        """One table row per parametrization: steps to L*, the training attention mass (mean, min and max
        over seeds), the held-out attention mass and accuracy, and the loss at the stop (seed means)."""
        return [
            {
                "model": n,
                "steps to L*": f"{self.of(n, 'steps').mean():.0f}",
                "attention mass (train)": self.mean(n),
                "min over seeds": float(self.of(n).min()),
                "max over seeds": float(self.of(n).max()),
                "attention mass (test)": self.mean(n, "test_attn_relevant"),
                "test accuracy": self.mean(n, "test_accuracy"),
                "loss at stop": self.mean(n, "loss_final"),
            }
            for n in self.names
        ]


def by_parametrization(
    exp: Experiment, held_out: Mapping[str, np.ndarray], init: str = "gaussian", axes: Sequence[str] = (), **match
) -> ByParametrization:
    """The models of ``exp`` with initialization ``init`` (and the spec fields ``match``, e.g. ``lr_ratio=1.0``),
    arranged by parametrization (in sweep order), by the sorted values of each spec field of ``axes`` (a grid,
    e.g. ``("init_scale", "lr_ov")``) and by seed (:class:`ByParametrization`): the training statistics at each
    model's stop (the matched loss) and the held-out metrics ``held_out`` of :func:`evaluate`. Every
    parametrization and grid point needs the same seeds."""
    chosen = [sp for sp in exp.specs if sp.init == init and all(getattr(sp, k) == v for k, v in match.items())]
    names = list(dict.fromkeys(sp.parametrization for sp in chosen))
    levels = {a: sorted({getattr(sp, a) for sp in chosen}) for a in axes}
    points = list(itertools.product(*levels.values()))  # [()] without axes
    rows = [[exp.select(parametrization=n, init=init, **match, **dict(zip(axes, pt))) for pt in points] for n in names]
    seeds = [exp.specs[i].seed for i in rows[0][0]] if rows else []
    if any([exp.specs[i].seed for i in ix] != seeds for r in rows for ix in r):
        raise ValueError(f"by_parametrization: every parametrization and grid point needs the seeds {seeds}")
    index = np.array(rows, dtype=int).reshape(len(names), *(len(v) for v in levels.values()), len(seeds))
    per_model = {
        "attn_relevant": exp.stats_final["attn_relevant"],
        "steps": exp.stopped_at.astype(float),
        "loss_final": exp.loss_final,
        "reached": exp.reached,
        "diverged": exp.diverged,
        **{f"test_{k}": np.asarray(v) for k, v in held_out.items()},
    }  # (P,) or (P, B) each
    return ByParametrization(names, seeds, {m: v[index] for m, v in per_model.items()}, levels)
