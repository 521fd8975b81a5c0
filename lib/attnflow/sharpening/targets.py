"""Every number of the sharpening spec that a page or a test compares with, in one module.

Source: ``shared/papers/sharpening.md`` §8 (numeric regression targets, [reconstruction]) and
§10 (claims). Pages and tests import from here; nobody types a spec number twice. Another
engineer may *append* entries (the synthetic and real-data experiments); do not rename.

- :data:`REDUCED_CONFIG`: the configuration of the §8.1 table (reduced ODE, Appendix listing).
- :data:`REDUCED`: the §8.1 table, (r, parametrization) -> :class:`ReducedRow`.
- :data:`P_ATOL`, :data:`DRIFT_MAX`, :data:`ORDER_R1`: the spec's suggested tolerances and
  the predicted ordering at r = 1.
- :data:`FULL_CONFIG`, :data:`FULL_MASS`, :data:`FULL_MASS_SECOND`: §8.2 (full matrix model).
- :func:`half_unit`: half a unit of the last printed decimal (the rounding of a printed target).
"""

from __future__ import annotations

from dataclasses import dataclass

from attnflow.claims import half_unit as half_unit  # re-exported: the pages read it next to the targets


@dataclass(frozen=True)
class ReducedRow:
    """One row of the §8.1 table (reduced ODE, horizon 10⁵)."""

    p_match: float  # attention mass p at the first time s reaches 0.9 (4 decimals)
    t_match: float  # that time (1 decimal)
    p_end: float  # p(10⁵) (4 decimals)
    odds_l2_end: float  # odds / log² t at 10⁵ (3 decimals)
    a_end: float  # a(10⁵) (2 decimals)
    drift: float  # max drift of Ψ − rΦ along LSODA (rtol 1e-10, atol 1e-12)


# §8.1: n = 9, K = 5, a0 = b0 = 0.1, η_OV = 1, η_QK = r, LSODA rtol 1e-10, atol 1e-12, horizon 1e5,
# matched loss at s = 0.9.
REDUCED_CONFIG = dict(
    n_compete=9, n_classes=5, a0=0.1, b0=0.1, lr_ov=1.0, rtol=1e-10, atol=1e-12, horizon=1e5, matched_prob=0.9
)

REDUCED = {
    (1.0, "CACO"): ReducedRow(0.8431, 27.7, 0.9875, 0.596, 13.06, 5.3e-08),
    (1.0, "CAFO"): ReducedRow(0.5373, 18.8, 0.8530, 0.044, 19.17, 3.1e-09),
    (1.0, "FACO"): ReducedRow(0.9770, 26.1, 0.9992, 10.029, 12.91, 6.5e-08),
    (1.0, "FAFO"): ReducedRow(0.7228, 19.4, 0.9839, 0.460, 16.60, 2.2e-09),
    (10.0, "CACO"): ReducedRow(0.9837, 16.3, 0.9988, 6.226, 12.91, 5.5e-07),
    (10.0, "CAFO"): ReducedRow(0.9337, 9.4, 0.9870, 0.572, 16.53, 3.1e-08),
    (10.0, "FACO"): ReducedRow(0.9990, 16.2, 0.9999, 136.144, 12.90, 3.8e-07),
    (10.0, "FAFO"): ReducedRow(0.9947, 9.8, 0.9992, 9.722, 16.33, 3.1e-08),
}

P_ATOL = 0.002  # §8.1 suggested tolerance on p
DRIFT_MAX = 1e-6  # §8.1: drift of Ψ − rΦ below 1e-6 with a tight solver
ORDER_R1 = ("FACO", "CACO", "FAFO", "CAFO")  # §8.1: exact ordering of p at r = 1 (sharpest first)

# §8.2: full matrix model, full-batch GD, one-hot embeddings.
FULL_CONFIG = dict(n_classes=5, n_common=20, seq_len=12, n_samples=2000, gd_lr=0.1, init_std=0.1, loss_target=0.1)
FULL_MASS = {
    ("FACO", 1.0): 0.99,
    ("FAFO", 1.0): 0.87,
    ("CACO", 1.0): 0.84,
    ("CAFO", 1.0): 0.55,
    ("FAFO", 10.0): 1.00,
}  # attention mass on the distinct token at loss 0.1 (2 decimals)
FULL_MASS_SECOND = {
    ("FACO", 1.0): (0.990, 0.991),
    ("FAFO", 1.0): (0.79, 0.88),
    ("CACO", 1.0): (0.842, 0.842),
    ("CAFO", 1.0): (0.53, 0.55),
    ("FAFO", 10.0): (0.998, 0.998),
}  # second implementation, 3 seeds
FULL_MASS_SEEDS = {("FAFO", 1.0): (0.79, 0.88, 0.82)}  # §8.2 second implementation: FAFO per seed (3 seeds)
FULL_ACCURACY = 1.00  # §8.2: training accuracy of every model at that point
# §8.2: with init std 1.0/√d, GD step 0.1 and N = 2000 training sequences, FAFO ×10 stalled at 0.80 (2 decimals)
STALL = dict(init_scale=1.0, lr=0.1, n_train=2000, mass=0.80)

SQUAD_AC = (0.12, 0.43)  # §10 A9 [paper]: SQuAD AC at r = 1 and with faster QK


def is_reduced_config(n_compete: int, n_classes: int, a0: float, b0: float) -> bool:
    """True when a reduced system is the one of the §8.1 table (n, K, a0, b0)."""
    c = REDUCED_CONFIG
    return (n_compete, n_classes, a0, b0) == (c["n_compete"], c["n_classes"], c["a0"], c["b0"])


def is_full_config(**values) -> bool:
    """True when every given §8.2 configuration value equals the spec's (names of FULL_CONFIG)."""
    return all(FULL_CONFIG[k] == v for k, v in values.items())
