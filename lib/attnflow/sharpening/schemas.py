"""Parameter contracts of the sharpening theory pages (DESIGN.md, principle 5).

One :class:`~attnflow.params.Schema` per page, keyed by the page path under ``book/``. The
physical parameters share one definition each, so n, K, r, the initial scalars and the horizon
are validated identically everywhere (r ≤ 0 → error naming ``lr_ratio``; a horizon beyond the
float64 range of the Theorem 4 growth laws → error naming ``horizon``, raised by
``reduced.ReducedSystem.check_horizon`` during validation).
"""
from __future__ import annotations

from attnflow.params import Param, Schema

__all__ = ["LEMMA1_RESCALING", "SCALAR_REDUCTION", "LINE_THEOREM", "GROWTH_RATES", "SHARPENING_MECHANISM"]

PARAMETRIZATION_NAMES = ("CACO", "CAFO", "FACO", "FAFO")

n_classes = Param(int, 2, 50, "K, number of classes")
n_compete = Param(int, 1, 1000, "n, non-distinct positions competing with the distinct token in the softmax")
n_common = Param(int, 1, 50, "M, common tokens in the vocabulary of the full model")
lr_ratio = Param(float, 0.0, 1e4, "r = η_QK/η_OV, learning-rate ratio", lo_open=True)
lr_ratios = Param(list, 0.0, 1e4, "learning-rate ratios r = η_QK/η_OV", item=float, lo_open=True, max_len=12)
a0 = Param(float, 0.0, 10.0, "initial OV scalar a₀", lo_open=True)
b0 = Param(float, 0.0, 10.0, "initial QK scalar b₀ (> 0: Ψ of a factorized QK circuit has ln b)", lo_open=True)
horizon = Param(float, 1.0, 1e300, "gradient-flow horizon of the reduced ODE (model time)")
rtol = Param(float, 1e-13, 1e-4, "relative tolerance of the adaptive ODE solver (absolute: rtol/100)")
parametrizations = Param(list, doc="parametrizations to run", item=str, choices=PARAMETRIZATION_NAMES, max_len=4)


def _horizon_fits(c) -> bool:
    """Raise the reduced ODE's HorizonError (which names 'horizon') when the growth would overflow."""
    from attnflow.sharpening.reduced import ReducedSystem

    for name in getattr(c, "parametrizations", PARAMETRIZATION_NAMES):
        for r in getattr(c, "lr_ratios", [getattr(c, "lr_ratio", 1.0)]):
            ReducedSystem(name, r, c.n_compete, c.n_classes).check_horizon(c.horizon)
    return True


_HORIZON_RULE = (_horizon_fits, "the horizon keeps e^a and e^b within float64")

LEMMA1_RESCALING = Schema(
    "sharpening/lemma1_rescaling",
    requires=[(lambda c: c.d_h <= c.d, "d_h ≤ d: balanced factors W_Q = U S Vᵀ, W_K = U' S Vᵀ need d_h orthonormal "
                                      "columns in R^d (raise d or lower d_h)")],
    d=Param(int, 2, 32, "embedding dimension d (W_QK is d×d)"),
    d_h=Param(int, 1, 32, "head dimension d_h of the factors W_Q, W_K (d×d_h), at most d"),
    n_keys=Param(int, 2, 64, "keys per query T"),
    n_samples=Param(int, 1, 4096, "queries in the fixed batch that defines the loss"),
    init_scale=Param(float, 0.0, 10.0, "largest singular value of the balanced initial factors", lo_open=True),
    lr_qk=Param(float, 0.0, 100.0, "learning rate η_QK of the QK circuit", lo_open=True),
    t_max=Param(float, 0.0, 1e4, "gradient-flow horizon", lo_open=True),
    n_times=Param(int, 2, 5000, "stored times along each trajectory"),
    imbalances=Param(list, 0.0, 10.0, "imbalances δ = q² − k² of the scalar example", item=float, max_len=8),
    rtol=Param(float, 1e-13, 1e-3, "relative tolerance of the ODE solver (absolute: rtol/100)"),
    seed=Param(int, 0, 2**31 - 1, "seed of the task and of the initial factors"),
)

SCALAR_REDUCTION = Schema(
    "sharpening/scalar_reduction",
    requires=[(lambda c: c.d_h >= c.n_classes, "d_h ≥ K (balanced factorized OV init)")],
    n_classes=n_classes, n_common=n_common, n_compete=n_compete, lr_ratio=lr_ratio, a0=a0, b0=b0,
    d_h=Param(int, 1, 256, "head dimension d_h of the factorized circuits (≥ K)"),
    embedding=Param(str, doc="token embedding: one-hot or a random orthogonal matrix", choices=("onehot", "random")),
    parametrizations=parametrizations,
    t_max=Param(float, 0.0, 1e5, "horizon of the full-model gradient flow (model time)", lo_open=True),
    n_times=Param(int, 2, 2000, "stored times along each trajectory"),
    rtol=rtol,
    seed=Param(int, 0, 2**31 - 1, "seed of the random orthogonal embedding"),
)

LINE_THEOREM = Schema(
    "sharpening/line_theorem",
    requires=[_HORIZON_RULE],
    n_classes=n_classes, n_compete=n_compete, lr_ratios=lr_ratios, a0=a0, b0=b0, horizon=horizon, rtol=rtol,
    parametrizations=parametrizations,
    n_common=n_common,
    gd_lr_ratio=lr_ratio,
    gd_steps=Param(list, 1e-4, 1.0, "step sizes h of discrete GD on the full model", item=float, min_len=2, max_len=8),
    gd_time=Param(float, 0.0, 1e4, "model time T of each GD run (steps = T/h)", lo_open=True),
)

GROWTH_RATES = Schema(
    "sharpening/growth_rates",
    requires=[_HORIZON_RULE,
              (lambda c: c.horizon >= 10 * c.fit_from, "horizon ≥ 10·fit_from: the fit window [fit_from, horizon] "
                                                        "must span at least one decade (lower fit_from or raise horizon)")],
    n_classes=n_classes, n_compete=n_compete, lr_ratios=lr_ratios, a0=a0, b0=b0, horizon=horizon, rtol=rtol,
    parametrizations=parametrizations,
    fit_from=Param(float, 1.0, 1e300, "start of the fit window [fit_from, horizon] of the growth laws"),
)

SHARPENING_MECHANISM = Schema(
    "sharpening/sharpening_mechanism",
    requires=[_HORIZON_RULE],
    n_classes=n_classes, n_compete=n_compete, lr_ratios=lr_ratios, a0=a0, b0=b0, horizon=horizon, rtol=rtol,
    parametrizations=parametrizations,
    matched_prob=Param(float, 0.0, 1.0, "correct-class probability s at the matched loss L = −log s", lo_open=True, hi_open=True),
    pop_n_common=Param(int, 1, 6, "M of the full model's exact population (its size grows like M^n)"),
    n_common=n_common,
    seq_len=Param(int, 3, 64, "T of the sampled task (query included)"),
    n_samples=Param(int, 10, 100_000, "N, sampled training sequences of the full model"),
    gd_lr=Param(float, 0.0, 10.0, "GD learning rate η_OV of the sampled run (η_QK = r·η_OV)", lo_open=True),
    init_std=Param(float, 0.0, 10.0, "Gaussian init std × √d of the sampled run", lo_open=True),
    loss_target=Param(float, 0.0, 2.0, "training loss at which the sampled runs are compared", lo_open=True),
    max_steps=Param(int, 1, 100_000, "maximum GD steps of a sampled run"),
    seeds=Param(list, 0, 2**31 - 1, "seeds of the sampled runs: data from seed, Gaussian init from seed + 1",
                item=int, max_len=20),
    device=Param(str, doc="device of the sampled runs", choices=("auto", "cpu", "cuda")),
)
