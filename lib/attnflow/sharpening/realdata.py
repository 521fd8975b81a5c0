"""The sharpening model on real data: learned token embeddings + the QK/OV circuits (spec §7.2–7.3;
claims A9–A11; open questions Q3–Q5).

The synthetic model (``sharpening.model``) has fixed one-hot embeddings, d ≥ V, which a real
vocabulary of thousands of words cannot afford. Here the embedding E (V, d) is learned and the
circuits are those of spec §4.2 on d-dimensional embeddings [reconstruction]:

    query      q_b   = mean of e_{x_t} over the query positions (every token up to the first <sep>)
    scores     s_bt  = σ_s · q_bᵀ W_QK e_{x_bt}          over the key positions (after <sep>)
    attention  p_b   = softmax(s_b)
    classes    z_b   = W_OV Σ_t p_bt e_{x_bt}                     ("classification": K classes)
    span       z_bt  = e_{x_bt}ᵀ W_OV Σ_u p_bu e_{x_bu}         ("span": a pointer over passage positions)

A classification example is ``[<sep>] + tokens``: the query is one learned [CLS]-like token, as
the spec's fixed query token x_T. A SQuAD-style example is ``question + [<sep>] + passage``: the
query is the mean question embedding and the output points at the answer's first position (the OV
circuit is then d×d, W_OV of the spec with a tied unembedding). No positional encoding, so a
``keep_mask`` that is False at a key *deletes* that token exactly (ERASER's x∖r and r); for spans
it deletes the token from the evidence, while the answer candidates stay all passage positions.

Parameters carry a leading model axis P: one function serves one model and a stacked sweep
(``attnflow.sweep``). η_QK = r·η_OV on W_QK (or W_Q, W_K); η_OV on W_OV (or W_O, W_V) and on E.
The page schemas are in ``sharpening.contracts``; the three dataset pages build the splits
(:func:`splits`), train (:func:`run`), evaluate (:func:`evaluate`) and compare the models paired by
seed (:class:`RealExperiment`); their figures are in ``sharpening.figures``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import torch

from attnflow import device as devices, seeding, sweep
from attnflow.data import ClassificationSet, WordTokenizer
from attnflow.params import ParameterError
from attnflow.record import fields_of
from attnflow.sharpening import metrics
from attnflow.sharpening.contracts import REAL_OPTIMIZERS
from attnflow.sharpening.model import QK_NAMES, Output, circuits, effective_circuits, parameter_names

PAD, SEP = WordTokenizer.pad_id, WordTokenizer.sep_id
TITLES = {"squad": "SQuAD", "hatexplain": "HateXplain", "sva": "SVA"}
SUBSET_SEED = 0  # fixed random subsets: training rows from its data stream, held-out rows from its eval stream
SHORT = {
    "entropy": "ent",
    "ac": "ac",
    "acmc": "acmc",
    "accuracy": "acc",
    "attn_relevant": "rel",
    "sufficiency": "suff",
    "comprehensiveness": "comp",
}  # test metric -> its short name in glue keys (RealExperiment.seed_means)


@dataclass(frozen=True)
class RealConfig:
    """One model family: the parametrization and sizes (spec §4.2 on learned embeddings)."""

    parametrization: str  # CACO, CAFO, FACO or FAFO (FAFO = a standard attention head)
    vocab_size: int  # V, rows of the embedding E
    n_out: int  # K classes ("classification"), or 0 for "span" (output = positions)
    d_model: int = 32  # d, embedding width
    d_head: int = 32  # d_h of the factorized circuits
    task: str = "classification"
    score_scale: float = 1.0  # σ_s
    init_scale: float = 0.1  # circuits: N(0, (init_scale/√d)²); embedding rows N(0, 1/d) (≈ unit norm)

    def __post_init__(self):
        circuits(self.parametrization)
        if self.task not in ("classification", "span"):
            raise ParameterError(f"parameter 'task': received {self.task!r}; allowed: 'classification' or 'span'")
        if self.task == "classification" and self.n_out < 2:
            raise ParameterError(f"parameter 'n_out': received {self.n_out!r}; allowed: K ≥ 2 classes")
        for name in ("vocab_size", "d_model", "d_head"):
            if getattr(self, name) < (4 if name == "vocab_size" else 1):
                raise ParameterError(
                    f"parameter {name!r}: received {getattr(self, name)!r}; allowed: a positive integer"
                )

    @property
    def out_rows(self) -> int:
        """Rows of W_OV: K classes, or d for the span pointer (logit = e_xᵀ W_OV o)."""
        return self.n_out if self.task == "classification" else self.d_model

    def shapes(self) -> dict[str, tuple[int, ...]]:
        fqk, fov = circuits(self.parametrization)
        qk_names, ov_names = parameter_names(self.parametrization)
        d, h, K = self.d_model, self.d_head, self.out_rows
        qk = dict(zip(qk_names, [(d, h), (d, h)] if fqk else [(d, d)]))
        ov = dict(zip(ov_names, [(K, h), (h, d)] if fov else [(K, d)]))
        return {"emb": (self.vocab_size, d), **qk, **ov}


@dataclass
class Encoded:
    """A split ready for the model: the query prefix added, rows without a key dropped."""

    ids: torch.Tensor  # (N, T) token ids, <pad> = 0 on the right
    relevant: torch.Tensor  # (N, T) bool, relevant keys (answer span, rationale, subject noun)
    labels: torch.Tensor  # (N,) class id, or the answer's first position (span)
    dropped: int  # examples lost to truncation (a relevant token would be cut)

    def __len__(self) -> int:
        return len(self.labels)

    def to(self, device) -> "Encoded":
        return Encoded(self.ids.to(device), self.relevant.to(device), self.labels.to(device), self.dropped)

    def with_relevant(self) -> torch.Tensor:
        """(N,) bool: rows with at least one relevant token (the rows AC/ACMC/DTAP are computed on)."""
        return self.relevant.any(-1)


def encode(
    ds: ClassificationSet, split: str, tok: WordTokenizer, max_len: int, n_max: int | None = None, seed: int = 0
) -> Encoded:
    """Encode ``split`` (cached by the data layer), keep at most ``n_max`` rows (a fixed random subset)."""
    e = ds.encode(split, tok, max_len)
    ids, rel, labels = e.ids, e.relevant, e.labels  # (N, T), (N, T), (N,)
    if ds.task == "classification":  # [<sep>] + tokens
        ids = torch.cat([torch.full((len(ids), 1), SEP, dtype=ids.dtype), ids], 1)  # (N, 1 + T)
        rel = torch.cat([torch.zeros(len(rel), 1, dtype=torch.bool), rel], 1)
    elif not bool(((ids == SEP).sum(-1) >= 1).all()):
        raise ParameterError(f"dataset {ds.name!r}: every span example needs a <sep> between question and passage")
    if n_max is not None and n_max < len(labels):
        pick = torch.from_numpy(np.sort(np.random.default_rng(seed).choice(len(labels), n_max, replace=False)))
        ids, rel, labels = ids[pick], rel[pick], labels[pick]
    return Encoded(ids.contiguous(), rel.contiguous(), labels.contiguous(), e.dropped)


def init_params(cfg: RealConfig, seed: int, dtype=torch.float32) -> dict[str, torch.Tensor]:
    """One model's parameters, each (1, ...): E ~ N(0, 1/d); circuit entries ~ N(0, (init_scale/√d)²)."""
    gen = seeding.generator(seeding.stream(seed, "real_init"))
    out = {}
    for name, shape in cfg.shapes().items():
        std = 1.0 if name == "emb" else cfg.init_scale
        out[name] = (std / cfg.d_model**0.5 * torch.randn(shape, generator=gen, dtype=torch.float64)).to(dtype)[None]
    return out


def forward(
    params: Mapping[str, torch.Tensor], ids: torch.Tensor, cfg: RealConfig, keep_mask: torch.Tensor | None = None
) -> Output:
    """All P models on the same batch ids (B, T) (module docstring); ``keep_mask`` (B, T) or
    (P, B, T) bool deletes the keys where it is False."""
    emb = params["emb"]  # (P, V, d)
    x = emb[:, ids]  # (P, B, T, d)
    is_sep = (ids == SEP).long()
    query = (is_sep.cumsum(-1) - is_sep) == 0  # (B, T) up to the first <sep>
    passage = ~query & (ids != PAD)  # (B, T)
    keys = passage if keep_mask is None else passage & keep_mask  # (B, T) or (P, B, T)
    qf = query.to(x.dtype)[None, :, :, None]  # (1, B, T, 1)
    q = (x * qf).sum(-2) / qf.sum(-2)  # (P, B, d)
    W_qk, W_ov = effective_circuits(params)  # (P, d, d), (P, K, d)
    key_dir = q @ W_qk  # (P, B, d): q_bᵀ W_QK
    scores = cfg.score_scale * (x * key_dir[:, :, None, :]).sum(-1)  # (P, B, T)
    scores = scores.masked_fill(~keys, float("-inf"))
    attn = torch.softmax(scores, dim=-1).nan_to_num(0.0)  # (P, B, T); no key → 0
    o = (attn[..., None] * x).sum(-2)  # (P, B, d)
    out = o @ W_ov.transpose(-1, -2)  # (P, B, K)
    if cfg.task == "span":  # pointer: e_xᵀ W_OV o
        out = (x * out[:, :, None, :]).sum(-1).masked_fill(~passage, float("-inf"))  # (P, B, T)
    return Output(out, attn, scores)


def groups(names: Sequence[str]) -> dict[str, str]:
    """Circuit of each parameter name: "qk" (η_QK = r·η_OV) or "ov" (η_OV; the embedding too)."""
    qk = {n for names in QK_NAMES.values() for n in names}
    return {n: "qk" if n in qk else "ov" for n in names}


def qk_rate(lr: float, r: float) -> float:
    """η_QK = r·η_OV: the learning rate of the query-key circuit (W_QK, or W_Q and W_K) at ratio r."""
    return lr * r


def _loss_stats(out: Output, data: Encoded, cfg: RealConfig) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-model summed cross-entropy, correct count and relevant attention sum (each (P,))."""
    logp = torch.log_softmax(out.logits, dim=-1)  # (P, B, K)
    true = logp.gather(-1, data.labels.expand(logp.shape[0], -1)[..., None]).squeeze(-1)  # (P, B)
    correct = (logp.argmax(-1) == data.labels).float().sum(-1)
    rel = metrics.relevant_attention(out.attn, data.relevant).sum(-1)
    return -true.sum(-1), correct, rel


@dataclass(kw_only=True)
class RealRun(sweep.SweepRun):
    """A trained sweep over r × seed (one optimizer): the sweep record (a
    :class:`~attnflow.sweep.SweepRun`, so a :class:`~attnflow.record.Run`) with its configuration
    and data; ``record`` is the record itself, ``params`` its trained parameters."""

    cfg: RealConfig
    lr_ratios: list[float]  # (P,) r of each model
    seeds: list[int]  # (P,) init seed of each model (paired across r)
    optimizer: str
    train: Encoded

    @property
    def record(self) -> sweep.SweepRun:
        """The sweep record: the run itself (``result.record.loss_final`` …)."""
        return self

    def describe(self) -> str:
        """One line: models, steps, wall time and the final training loss (seed mean) at each r."""
        ratios, loss = np.asarray(self.lr_ratios), np.asarray(self.loss_final)  # (P,), (P,)
        final = ", ".join(f"r = {r:g}: {loss[ratios == r].mean():.3f}" for r in sorted(set(self.lr_ratios)))
        return (
            f"{self.optimizer}: {len(ratios)} models, {self.steps_run} steps, {self.wall_s:.1f} s; "
            f"final training loss (seed mean) {final}"
        )


def run(
    cfg: RealConfig,
    train: Encoded,
    lr_ratios: Sequence[float],
    seeds: Sequence[int],
    *,
    optimizer: str,
    lr: float,
    epochs: float,
    batch_size: int,
    momentum: float = 0.9,
    weight_decay: float = 0.0,
    evals: int = 10,
    device: str = "auto",
    eval_chunk: int = 256,
) -> RealRun:
    """Train the P = |r|·|seeds| models of one optimizer together (``attnflow.sweep.train``); models
    with the same seed start from the same weights and see the same minibatches (paired in r)."""
    if optimizer not in REAL_OPTIMIZERS:
        raise ParameterError(
            f"parameter 'optimizer': received {optimizer!r}; allowed: one of {', '.join(REAL_OPTIMIZERS)}"
        )
    if any(not (np.isfinite(r) and r > 0) for r in lr_ratios):
        raise ParameterError(f"parameter 'lr_ratios': received {list(lr_ratios)}; allowed: numbers > 0")
    dev = devices.resolve(device)
    specs = [(float(r), int(s)) for r in lr_ratios for s in seeds]
    inits = {s: init_params(cfg, s) for s in seeds}
    circuit = groups(cfg.shapes())
    rates = {"qk": [qk_rate(lr, r) for r, _ in specs], "ov": [lr for _ in specs]}  # (P,) per circuit
    tensors = {
        n: sweep.Stacked(
            torch.cat([inits[s][n] for _, s in specs]).to(dev),
            torch.arange(len(specs), device=dev),
            torch.tensor(rates[circuit[n]], dtype=torch.float64, device=dev),
        )  # float64: torch's Adam bits (sweep)
        for n in cfg.shapes()
    }
    data = train.to(dev)
    n = len(data)
    steps = max(1, int(round(epochs * n / batch_size)))

    def objective(params, index, models):
        sub = params if len(models) == len(specs) else {k: v[models] for k, v in params.items()}
        if index is not None:  # a minibatch: mean CE
            rows = Encoded(data.ids[index], data.relevant[index], data.labels[index], 0)
            ce, correct, rel = _loss_stats(forward(sub, rows.ids, cfg), rows, cfg)
            return ce / len(index), {
                "accuracy": correct.detach() / len(index),
                "attn_relevant": rel.detach() / len(index),
            }
        totals = torch.zeros(3, len(models), device=dev)
        for a in range(0, n, eval_chunk):  # full training set, chunked
            rows = Encoded(
                data.ids[a : a + eval_chunk], data.relevant[a : a + eval_chunk], data.labels[a : a + eval_chunk], 0
            )
            totals = totals + torch.stack(_loss_stats(forward(sub, rows.ids, cfg), rows, cfg))
        n_rel = max(int(data.with_relevant().sum()), 1)
        return totals[0] / n, {"accuracy": totals[1] / n, "attn_relevant": totals[2] / n_rel}

    labels = [f"{cfg.parametrization} r={r:g} seed={s}" for r, s in specs]
    record = sweep.train(
        objective,
        tensors,
        len(specs),
        optimizer=optimizer,
        steps=steps,
        batch_size=batch_size,
        n_samples=n,
        eval_every=max(1, steps // evals),
        record_every=1,
        momentum=momentum,
        weight_decay=weight_decay,
        seed=min(seeds),
        labels=labels,
        desc=f"{optimizer} sweep",
    )
    return RealRun(
        **fields_of(record),
        cfg=cfg,
        lr_ratios=[r for r, _ in specs],
        seeds=[s for _, s in specs],
        optimizer=optimizer,
        train=train,
    )


def evaluate(
    result: RealRun,
    test: Encoded,
    *,
    tau_attn: float = 0.5,
    tau_conf: float = 0.5,
    tau_attns: Sequence[float] = (0.3, 0.4, 0.5, 0.6, 0.7),
    k_percents=metrics.AOPC_PERCENTS,
    chunk: int = 512,
) -> dict[str, np.ndarray]:
    """Test metrics per model (P,): accuracy and attention entropy (all rows); AC, ACMC, the τ_a sweep, mean relevant
    attention, AOPC sufficiency/comprehensiveness and the DTAP points (rows with a relevant token)."""
    cfg, params = result.cfg, result.params
    dev = next(iter(params.values())).device
    test = test.to(dev)
    keep = test.with_relevant()
    parts: dict[str, list] = {}
    with torch.no_grad(), devices.cpu_threads(1, blas=False):  # as sweep.train trains
        for a in range(0, len(test), chunk):
            ids, rel, y = test.ids[a : a + chunk], test.relevant[a : a + chunk], test.labels[a : a + chunk]
            out = forward(params, ids, cfg)
            probs = torch.softmax(out.logits, dim=-1)  # (P, b, K)
            rows = keep[a : a + chunk]
            parts.setdefault("correct", []).append((probs.argmax(-1) == y).float())
            p = out.attn
            parts.setdefault("entropy", []).append(-(p * torch.log(p.clamp_min(1e-30))).sum(-1))  # (P, b)
            parts.setdefault("attn", []).append(metrics.relevant_attention(out.attn, rel)[:, rows])
            parts.setdefault("conf", []).append(metrics.true_class_confidence(probs, y.expand(len(probs), -1))[:, rows])
            if rows.any():
                cand = out.scores[0] > float("-inf")  # (b, T) the keys of each row
                eraser = metrics.aopc(
                    lambda t, m: torch.softmax(forward(params, t[0] if t.dim() == 3 else t, cfg, m).logits, -1),
                    ids[rows].expand(len(probs), -1, -1),
                    out.attn[:, rows],
                    cand[rows].expand(len(probs), -1, -1),
                    k_percents,
                )
                parts.setdefault("suff", []).append(eraser["sufficiency"])
                parts.setdefault("comp", []).append(eraser["comprehensiveness"])
    cat = {k: torch.cat(v, -1) for k, v in parts.items()}
    x, y = cat["attn"], cat["conf"]  # (P, B_rel)
    sweep_t = metrics.threshold_sweep(x, y, list(tau_attns), tau_conf)
    res = {
        "accuracy": cat["correct"].mean(-1),
        "attn_relevant": x.mean(-1),
        "entropy": cat["entropy"].mean(-1),
        "ac": metrics.attention_confidence(x, tau_attn),
        "acmc": metrics.acmc(x, y, tau_attn, tau_conf),
        "sufficiency": cat["suff"].mean(-1),
        "comprehensiveness": cat["comp"].mean(-1),
    }
    res = {k: v.double().cpu().numpy() for k, v in res.items()}
    res.update(
        ac_sweep=sweep_t["ac"].cpu().numpy(),
        acmc_sweep=sweep_t["acmc"].cpu().numpy(),
        tau_attns=np.asarray(tau_attns, float),
        tau_attn=float(tau_attn),
        tau_conf=float(tau_conf),
        attn_each=x.cpu().numpy(),
        conf_each=y.cpu().numpy(),
        lr_ratio=np.asarray(result.lr_ratios),
        seed=np.asarray(result.seeds),
    )
    return res


@dataclass
class RealExperiment:
    """One dataset: its source line, the encoded splits and, per optimizer, the run and its test metrics."""

    dataset: ClassificationSet
    tokenizer: WordTokenizer
    train: Encoded
    test: Encoded
    runs: dict[str, RealRun]
    metrics: dict[str, dict[str, np.ndarray]]

    def rows(self) -> list[dict]:
        """One row per (optimizer, r): means and spreads over seeds, for the page's table."""
        out = []
        for opt, m in self.metrics.items():
            for r in sorted(set(m["lr_ratio"].tolist())):
                sel = m["lr_ratio"] == r
                row = {"optimizer": opt, "r": r, "seeds": int(sel.sum())}
                for k in ("accuracy", "ac", "acmc", "attn_relevant", "entropy", "sufficiency", "comprehensiveness"):
                    row[k] = float(m[k][sel].mean())
                    row[k + "_sd"] = float(m[k][sel].std())
                out.append(row)
        return out

    @property
    def label(self) -> str:
        """How claims and figures name the data: "SQuAD stand-in", or "SQuAD" on the real set."""
        return TITLES.get(self.dataset.name, self.dataset.name) + (" stand-in" if self.dataset.standin else "")

    @property
    def title(self) -> str:
        """How figure titles name the data: "SQuAD (stand-in)", or "SQuAD (real data)"."""
        real = "stand-in" if self.dataset.standin else "real data"
        return f"{TITLES.get(self.dataset.name, self.dataset.name)} ({real})"

    @property
    def r_max(self) -> float:
        """The fastest query-key ratio of the sweep, compared with the baseline r = 1."""
        return float(max(max(m["lr_ratio"]) for m in self.metrics.values()))

    def change(self, optimizer: str, key: str, r_fast: float, r_base: float = 1.0) -> np.ndarray:
        """Paired change key(r_fast) − key(r_base) per seed, (n_seeds,)."""
        m = self.metrics[optimizer]
        seeds = sorted(set(m["seed"].tolist()))

        def pick(r):
            return np.array([m[key][(m["lr_ratio"] == r) & (m["seed"] == s)][0] for s in seeds])

        return pick(r_fast) - pick(r_base)

    def changes(self, r_fast: float, keys: Sequence[str] = tuple(SHORT), r_base: float = 1.0) -> list[dict]:
        """The paired-change summary: one row per optimizer and metric, the change key(r_fast) −
        key(r_base) of every seed, their mean, and in how many seeds it is positive."""
        out = []
        for opt in self.metrics:
            for key in keys:
                d = self.change(opt, key, r_fast, r_base)
                row = {"optimizer": opt, "metric": key, "per seed": signed(d), "mean": float(d.mean())}
                out.append({**row, "seeds > 0": f"{int((d > 0).sum())} of {d.size}"})
        return out

    def seed_mean(self, optimizer: str, key: str, r: float, tau: float | None = None) -> float:
        """Mean over seeds of ``key`` at ratio r (NaN for an optimizer that did not run); with ``tau``,
        of the threshold sweep ``key + "_sweep"`` at τ_a = tau."""
        m = self.metrics.get(optimizer)
        if m is None:
            return float("nan")
        values = m[key] if tau is None else m[key + "_sweep"][int(np.flatnonzero(m["tau_attns"] == tau)[0])]
        return float(values[m["lr_ratio"] == r].mean())

    def seed_means(self, ratios: Mapping[str, float], optimizers: Sequence[str] = REAL_OPTIMIZERS) -> dict:
        """Seed means of every metric of :data:`SHORT`, named ``<short>_<optimizer>_<tag>`` for
        ``ratios`` = {tag: r} (e.g. ``ent_adamw_r1``), NaN for an optimizer that did not run, so
        that a page's prose resolves whichever optimizers ran."""
        return {
            f"{short}_{opt}_{tag}": self.seed_mean(opt, key, r)
            for opt in optimizers
            for tag, r in ratios.items()
            for key, short in SHORT.items()
        }

    def change_text(self, optimizer: str, key: str, r_fast: float) -> str:
        """The paired per-seed changes as signed text ("[+0.010, -0.003, ...]"), "n/a" if not run."""
        return signed(self.change(optimizer, key, r_fast)) if optimizer in self.metrics else "n/a"


def signed(values) -> str:
    """Numbers as signed text with three decimals: "[+0.010, -0.003]"."""
    return "[" + ", ".join(f"{v:+.3f}" for v in values) + "]"


def splits(
    ds: ClassificationSet, tok: WordTokenizer, max_len: int, n_train: int, n_test: int
) -> tuple[Encoded, Encoded]:
    """The training split and the held-out one (``test``, else ``validation``) of a loaded set,
    encoded with ``tok`` and cut to fixed random subsets of ``n_train`` and ``n_test`` rows."""
    train = encode(ds, "train", tok, max_len, n_train, seed=seeding.stream(SUBSET_SEED, "data"))
    held_out = "test" if "test" in ds.splits else "validation"
    return train, encode(ds, held_out, tok, max_len, n_test, seed=seeding.stream(SUBSET_SEED, "eval"))


def data_rows(ds: ClassificationSet) -> list[dict]:
    """One row per split: its size, label balance and relevant-token share (``ds.summary()``)."""
    return [
        {"split": s, **{k: v for k, v in row.items() if k != "labels"}, **row.get("labels", {})}
        for s, row in ds.summary().items()
    ]
