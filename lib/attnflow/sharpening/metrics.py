"""Attention-interpretability metrics (spec §7.3; claims A6–A11; open questions Q3, Q4).

Generic: any model that exposes its attention probabilities and any dataset that marks the
relevant tokens (distinct tokens, answer spans, rationales, subject nouns). Shapes carry any
leading batch dimensions ``...`` (e.g. a model axis P for a batched sweep).

- relevant attention   x = Σ_{i∈R} p_i                                   per instance, in [0, 1]
- confidence           y = softmax(z)_y, the probability of the true class
- DTAP heatmap         2-D histogram of (x, y) over [0, 1]², fraction of instances per cell
- AC(τ_a)              fraction of instances with x ≥ τ_a
- ACMC(τ_a, τ_c)       fraction of instances with x ≥ τ_a and y ≥ τ_c
- sufficiency          m(x)_j − m(r)_j        (ERASER; lower is better)
- comprehensiveness    m(x)_j − m(x∖r)_j      (ERASER; higher is better)

[reconstruction] AC/ACMC/DTAP follow the spec's reading of the paper's names; the thresholds
and bins are parameters (Q3). Sufficiency and comprehensiveness are ERASER's [prior work]
(DeYoung et al. 2020), with j the class predicted on the full input and the rationale r the
top-k% tokens by attention; AOPC averages over k ∈ {1, 5, 10, 20, 50}% (Q4; ERASER's AOPC also
counts an empty k = 0 bin, which we leave out as the spec does).

**Re-running a model on masked inputs** goes through a ``predict`` callable,

    predict(tokens (..., B, T), keep_mask (..., B, T) bool) -> probs (..., B, K),

where ``keep_mask`` is False at the deleted tokens. A model without positional encoding deletes
a token exactly by removing it from the softmax; others may drop it and re-pack the sequence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import torch

AOPC_PERCENTS = (1, 5, 10, 20, 50)
Predictor = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def _unit(name: str, value: float) -> float:
    if not (isinstance(value, (int, float)) and 0.0 <= value <= 1.0):
        raise ValueError(f"parameter {name!r}: received {value!r}; allowed: a number in [0, 1]")
    return float(value)


def relevant_attention(attn: torch.Tensor, relevant_mask: torch.Tensor) -> torch.Tensor:
    """x = Σ_{i∈R} p_i: attention mass on the relevant tokens. (..., B, T) -> (..., B)."""
    if attn.shape[-relevant_mask.dim() :] != relevant_mask.shape and attn.shape != relevant_mask.shape:
        raise ValueError(f"attn {tuple(attn.shape)} and relevant_mask {tuple(relevant_mask.shape)} do not match")
    return (attn * relevant_mask.to(attn.dtype)).sum(-1)


def true_class_confidence(probs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """y = probability of the true class. probs (..., B, K), targets (..., B) -> (..., B)."""
    return probs.gather(-1, targets[..., None].expand(*probs.shape[:-1], 1)).squeeze(-1)


def dtap(attn_relevant: torch.Tensor, confidence: torch.Tensor, bins: int = 10) -> torch.Tensor:
    """DTAP heatmap: fraction of instances per (confidence bin, attention bin).

    (..., B), (..., B) -> (..., bins, bins); row i = confidence in [i/bins, (i+1)/bins), column j =
    relevant attention in [j/bins, (j+1)/bins); the value 1 falls in the last bin. Each map sums to 1.
    """
    if not (isinstance(bins, int) and bins >= 1):
        raise ValueError(f"parameter 'bins': received {bins!r}; allowed: an integer ≥ 1")
    col = (attn_relevant.clamp(0, 1) * bins).long().clamp(max=bins - 1)  # (..., B)
    row = (confidence.clamp(0, 1) * bins).long().clamp(max=bins - 1)  # (..., B)
    flat = row * bins + col  # (..., B)
    counts = torch.zeros(*flat.shape[:-1], bins * bins, dtype=torch.float64, device=flat.device)
    counts.scatter_add_(-1, flat, torch.ones_like(flat, dtype=torch.float64))
    return (counts / flat.shape[-1]).reshape(*flat.shape[:-1], bins, bins)


def attention_confidence(attn_relevant: torch.Tensor, tau_attn: float = 0.5) -> torch.Tensor:
    """AC(τ_a): fraction of instances whose relevant-token attention is ≥ τ_a. (..., B) -> (...)."""
    tau_attn = _unit("tau_attn", tau_attn)
    return (attn_relevant >= tau_attn).double().mean(-1)


def acmc(
    attn_relevant: torch.Tensor, confidence: torch.Tensor, tau_attn: float = 0.5, tau_conf: float = 0.5
) -> torch.Tensor:
    """ACMC(τ_a, τ_c): fraction with relevant attention ≥ τ_a *and* true-class confidence ≥ τ_c."""
    tau_attn, tau_conf = _unit("tau_attn", tau_attn), _unit("tau_conf", tau_conf)
    return ((attn_relevant >= tau_attn) & (confidence >= tau_conf)).double().mean(-1)


def threshold_sweep(
    attn_relevant: torch.Tensor, confidence: torch.Tensor, tau_attns: Sequence[float], tau_conf: float = 0.5
) -> dict[str, torch.Tensor]:
    """AC and ACMC over a list of τ_a (Q3): {"tau_attn": (n,), "ac": (n, ...), "acmc": (n, ...)}."""
    taus = [_unit("tau_attns[]", t) for t in tau_attns]
    return {
        "tau_attn": torch.tensor(taus),
        "ac": torch.stack([attention_confidence(attn_relevant, t) for t in taus]),
        "acmc": torch.stack([acmc(attn_relevant, confidence, t, tau_conf) for t in taus]),
    }


def rationale_mask(attn: torch.Tensor, k_percent: float, candidates: torch.Tensor) -> torch.Tensor:
    """The rationale: the top-k% candidate tokens by attention. (..., B, T) -> (..., B, T) bool.

    A row with n candidates keeps max(1, ⌈k·n/100⌉) of them; ties go to the earlier position.
    """
    if not (isinstance(k_percent, (int, float)) and 0 < k_percent <= 100):
        raise ValueError(f"parameter 'k_percent': received {k_percent!r}; allowed: a number in (0, 100]")
    n_cand = candidates.sum(-1, keepdim=True)  # (..., B, 1)
    if bool((n_cand == 0).any()):
        raise ValueError("every instance needs at least one candidate token for a rationale")
    size = torch.clamp(torch.ceil(n_cand.double() * k_percent / 100 - 1e-9), min=1).long()  # (..., B, 1)
    T = attn.shape[-1]
    position = torch.arange(T, device=attn.device, dtype=attn.dtype)
    key = torch.where(candidates, attn.detach() - 1e-12 * position, torch.full_like(attn, -math.inf))
    order = key.argsort(dim=-1, descending=True, stable=True)  # (..., B, T)
    rank = torch.empty_like(order).scatter_(-1, order, torch.arange(T, device=attn.device).expand_as(order))
    return (rank < size) & candidates


def _full_prediction(predict: Predictor, tokens: torch.Tensor):
    probs = predict(tokens, torch.ones_like(tokens, dtype=torch.bool))  # (..., B, K)
    j = probs.argmax(-1)  # (..., B) predicted class
    return probs.gather(-1, j[..., None]).squeeze(-1), j


def _prob_of(predict: Predictor, tokens, keep_mask, j) -> torch.Tensor:
    return predict(tokens, keep_mask).gather(-1, j[..., None]).squeeze(-1)


def sufficiency(
    predict: Predictor, tokens: torch.Tensor, attn: torch.Tensor, candidates: torch.Tensor, k_percent: float
) -> torch.Tensor:
    """m(x)_j − m(r)_j per instance (..., B): keep only the rationale (and the non-candidates,
    e.g. the query token); lower is better."""
    m_full, j = _full_prediction(predict, tokens)
    keep = rationale_mask(attn, k_percent, candidates) | ~candidates
    return m_full - _prob_of(predict, tokens, keep, j)


def comprehensiveness(
    predict: Predictor, tokens: torch.Tensor, attn: torch.Tensor, candidates: torch.Tensor, k_percent: float
) -> torch.Tensor:
    """m(x)_j − m(x∖r)_j per instance (..., B): delete the rationale; higher is better."""
    m_full, j = _full_prediction(predict, tokens)
    keep = ~rationale_mask(attn, k_percent, candidates)
    return m_full - _prob_of(predict, tokens, keep, j)


def aopc(
    predict: Predictor,
    tokens: torch.Tensor,
    attn: torch.Tensor,
    candidates: torch.Tensor,
    k_percents: Sequence[float] = AOPC_PERCENTS,
) -> dict[str, torch.Tensor]:
    """AOPC sufficiency and comprehensiveness: per-instance means over k (..., B), and the
    per-k values (n_k, ..., B) under "sufficiency_k" / "comprehensiveness_k"."""
    if not k_percents:
        raise ValueError("parameter 'k_percents': received an empty list; allowed: percentages in (0, 100]")
    m_full, j = _full_prediction(predict, tokens)
    suff, comp = [], []
    for k in k_percents:
        rationale = rationale_mask(attn, k, candidates)
        suff.append(m_full - _prob_of(predict, tokens, rationale | ~candidates, j))
        comp.append(m_full - _prob_of(predict, tokens, ~rationale, j))
    suff_k, comp_k = torch.stack(suff), torch.stack(comp)  # (n_k, ..., B)
    return {
        "sufficiency": suff_k.mean(0),
        "comprehensiveness": comp_k.mean(0),
        "sufficiency_k": suff_k,
        "comprehensiveness_k": comp_k,
        "k_percents": np.asarray(k_percents, float),
    }


# ----------------------------------------------------------------------------- per model type over seeds
def tv_distance(a, b) -> float:
    """Total-variation distance ½ Σ |a − b| of two normalized heatmaps (bins, bins)."""
    return 0.5 * float(np.abs(np.asarray(a) - np.asarray(b)).sum())


def separating_threshold(taus: Sequence[float]) -> float:
    """τ_a at which FAFO and FACO are compared: 0.9 when swept, else the middle of the sweep."""
    taus = list(taus)
    return 0.9 if 0.9 in taus else taus[len(taus) // 2]


@dataclass
class ModelType:
    """The held-out metrics of one model type (parametrization at one r) over its seeds."""

    name: str  # parametrization
    r: float  # η_QK/η_OV
    taus: list  # the τ_a of the threshold sweep
    mass: np.ndarray  # (n_seeds,) mean attention on the relevant tokens
    acmc: np.ndarray  # (n_seeds,) ACMC(0.5, 0.5)
    ac: np.ndarray  # (n_taus, n_seeds) AC over the threshold sweep
    heat: np.ndarray  # (bins, bins) DTAP map pooled over the seeds

    @property
    def label(self) -> str:
        return f"{self.name} r={self.r:g}"

    def ac_at(self, tau: float) -> np.ndarray:
        """(n_seeds,) AC at one threshold of the sweep."""
        return self.ac[self.taus.index(tau)]

    def ac_mean(self, tau: float) -> float:
        """Seed mean of AC at ``tau``; NaN when ``tau`` was not swept."""
        return float(self.ac_at(tau).mean()) if tau in self.taus else float("nan")

    def row(self, faco: "ModelType", tau_sep: float) -> dict:
        """One table row: mass, AC at 0.5 and at the separating threshold, TV distance to ``faco``."""
        return {
            "model": self.label,
            "mean mass": float(self.mass.mean()),
            "AC(τ_a=0.5)": self.ac_mean(0.5),
            f"AC(τ_a={tau_sep:g})": self.ac_mean(tau_sep),
            "TV to FACO": tv_distance(self.heat, faco.heat),
        }


def by_model_type(specs, evaluation: dict, *, bins: int, taus: Sequence[float]) -> dict:
    """{(parametrization, r): ModelType} from an experiment's specs and its
    ``experiments.evaluate`` output (per-sequence ``attn_relevant_each``/``confidence_each`` (P, B),
    per-model ``attn_relevant`` and ``acmc`` (P,)); the seeds of each type are pooled in its DTAP map."""
    x = torch.as_tensor(np.asarray(evaluation["attn_relevant_each"]))
    y = torch.as_tensor(np.asarray(evaluation["confidence_each"]))
    heat = dtap(x, y, bins).numpy()  # (P, bins, bins)
    mass, ac_mc = np.asarray(evaluation["attn_relevant"]), np.asarray(evaluation["acmc"])
    out = {}
    for kind in dict.fromkeys((sp.parametrization, float(sp.lr_ratio)) for sp in specs):
        sel = np.array([i for i, sp in enumerate(specs) if (sp.parametrization, float(sp.lr_ratio)) == kind])
        ac = threshold_sweep(x[sel], y[sel], list(taus))["ac"].numpy()  # (n_taus, n_seeds)
        out[kind] = ModelType(kind[0], kind[1], list(taus), mass[sel], ac_mc[sel], ac, heat[sel].mean(0))
    return out


def smallest_rise(per_ratio: Sequence) -> np.ndarray:
    """(n_seeds,) the smallest rise of a per-seed value between consecutive ratios, from
    ``per_ratio`` = [(n_seeds,) at each r, in increasing r]; NaN with fewer than two ratios."""
    stacked = np.stack([np.asarray(v, dtype=float) for v in per_ratio])  # (n_ratios, n_seeds)
    return np.diff(stacked, axis=0).min(0) if len(stacked) >= 2 else np.array([np.nan])


def mass_or_nan(models: dict, name: str, r: float) -> np.ndarray:
    """(n_seeds,) mean attention mass of the model type (name, r), or [NaN] when it was not trained."""
    m = models.get((name, float(r)))
    return m.mass if m is not None else np.array([np.nan])
