"""Primitives of the finite-sample page (focus_dilution/finite_sample; claims B1, B4, B5, B6, B14):
the sweep grid, the per-run summary of a run that has not reached a stage (NaN, never an error),
the stage-sequence rules of B1, the drift slope, Wilks' units and the θ_c² units of B14, and the
sweep figure on a tiny sweep."""

import math

import numpy as np
import pytest

from attnflow.focus_dilution import finite, stages
from attnflow.focus_dilution.chain import hub_family


@pytest.fixture(scope="module")
def chain():
    return hub_family(4, 0.5, 0.3, 0.4, 0.0)


@pytest.fixture(scope="module")
def tiny_sweep(chain):
    """40 GD steps on two N, two s and two data seeds: condensation has not ended."""
    grid = finite.sweep_grid([32, 64], [8, 16])
    kw = dict(steps=40, record_every=4, lr=1.0, init_scale=0.03, dtype="float64")
    return grid, *finite.train_sweep(chain, grid, [0, 1], **kw)


def _row(N, s, seed, **kw):
    base = dict(
        label="", stages="C P", t_focus=math.nan, L1=math.nan, L_c2=math.nan, L_end=1.0, drift=0.1, sigma2_max=0.004
    )
    return finite.RunSummary(N=N, s=s, seed=seed, **{**base, **kw})


def test_sweep_grid_is_the_n_sweep_at_the_largest_s_and_the_s_sweep_at_the_largest_n():
    assert finite.sweep_grid([1024, 16384], [64, 4096]) == [(1024, 4096), (16384, 64), (16384, 4096)]


def test_train_sweep_and_summaries_of_a_short_sweep(tiny_sweep):
    grid, population, sampled = tiny_sweep
    assert set(sampled) == {(N, s, sd) for N, s in grid for sd in (0, 1)}
    assert all(np.array_equal(r.t, population.t) for r in sampled.values())
    assert finite.train_seconds(population, sampled) > 0
    rows = finite.summaries(population, sampled, finite.drift_time(population, sampled))
    assert rows[0].label == "population" and rows[0].drift == 0.0 and len(rows) == 1 + len(sampled)
    assert all(math.isnan(r.L_c2) and math.isnan(r.t_focus) for r in rows)  # no stage after condensation
    assert len(finite.table(rows)) == len(rows) and "sigma2_max" in finite.table(rows)[0]


def test_figure_of_a_short_sweep(chain, tiny_sweep):
    import matplotlib

    matplotlib.use("Agg")
    from attnflow.focus_dilution import figures

    _, population, sampled = tiny_sweep
    fig = figures.finite_sample_sweep(population, population, sampled, [32, 64], [8, 16], 0, 1.5, math.nan, chain.d)
    assert len(fig.axes) == 4


def test_selection_means_and_slopes():
    rows = [_row(np.inf, np.inf, -1, drift=0.0)]
    sizes = ((10, 100), (100, 100))
    rows += [_row(N, s, sd, drift=3 * (N * s) ** -0.5, L1=1.0 + sd) for N, s in sizes for sd in (0, 1)]
    assert len(finite.by(rows)) == 4 and len(finite.by(rows, N=10)) == 2 and len(finite.by(rows, Ns=10**4)) == 2
    assert finite.seed_mean(rows, "L1", N=10, minus=1.0) == pytest.approx(0.5)
    assert math.isnan(finite.seed_mean(rows, "L_c2"))
    assert finite.ns_values(rows) == [1000, 10**4]
    assert finite.seed_slopes(rows, [0, 1]) == pytest.approx([-0.5, -0.5])
    assert finite.negative([-0.5, 0.1, math.nan]) == [True, False, False]
    x = np.array([1e5, 1e6, 1e7])
    assert finite.loglog_slope(x, 3 * x**-0.5) == pytest.approx(-0.5)
    assert math.isnan(finite.loglog_slope([1e5, 1e5], [1.0, 2.0]))


def test_wilks_units_and_the_planned_runs():
    d, H = 5, 1.5
    rows = [_row(1000, 64, 0, L1=H + (d - 1) / 2000), _row(10, 64, 0, L1=H + 0.1), _row(1000, 64, 1)]
    assert finite.wilks_units(rows, H, d, pi_min=0.15) == pytest.approx([1.0])  # N π_min = 1.5 < 20 left out
    assert finite.wilks_units(rows, H, d) == pytest.approx([1.0, 0.5])
    assert finite.wilks_spread(d) == pytest.approx(math.sqrt(0.5))
    assert finite.wilks_runs([1024, 16384], 0.15625, 3) == 6 and finite.wilks_runs([64, 1024], 0.15625, 3) == 3


def test_c2_units_are_the_distance_in_wilks_units_of_k_parameters():
    rows = [_row(np.inf, np.inf, -1, L_c2=1.5), _row(1100, 64, 0, L_c2=1.51), _row(1100, 64, 1)]
    assert finite.c2_units(rows, 1.5, k=11, factor=2.0) == pytest.approx([0.01 / (2.0 * 11 / 2200)])


def _timed(stages_with_start, horizon):
    starts = [s for _, s in stages_with_start] + [horizon]
    return stages.Stages([stages.Stage(n, s, e, 1, 1.0) for (n, s), e in zip(stages_with_start, starts[1:])], [])


def test_b1_requires_the_early_stages_and_the_order():
    """B1: a seed must show the population stages through its first focus and every one that starts
    by T/(1 + ONSET_DELAY), and agree with the population's order as far as both go (plateaus after
    θ_c¹ are pauses, not compared) — a late seed still focusing at the horizon follows, one still on
    θ_c¹, one with another order or one missing an early stage does not."""
    T = 1500.0
    pop = _timed([("condensation", 0), ("plateau", 60), ("focus", 720), ("plateau", 1067)], T)
    assert finite.required_stages(pop, T) == "C P F"  # the plateau at 0.71 T has no room
    late = _timed([("condensation", 0), ("plateau", 60), ("focus", 1200)], T)
    assert finite.required_stages(late, T) == "C P F"  # the first focus always
    early = _timed([("condensation", 0), ("plateau", 60), ("focus", 150), ("plateau", 300), ("dilution", 400)], T)
    assert finite.required_stages(early, T) == "C P F D"  # every onset early; the pause dropped
    assert finite.movements("C P F P F D P E") == "C P F F D E"
    follows = finite.follows
    assert follows("C P F", "C P F P", "C P F") and follows("C P F P F D P", "C P F P", "C P F")
    assert follows("C P F D P", "C P F P D P", "C P F D")  # no pause at the top of the focus
    assert not follows("C P", "C P F P", "C P F")  # no focus: not following
    assert not follows("C P F E", "C P F D P", "C P F")  # another order after the focus
    assert not follows("C P F", "C P F D P E F", "C P F D")  # misses an early stage
    rows = [_row(10, 10, 0, stages="C P F D P"), _row(10, 10, 1, stages="C P"), _row(10, 10, 2, stages="C P F P D")]
    assert finite.following(rows, _row(np.inf, np.inf, -1, stages="C P F D P"), "C P F") == [True, False, True]
    assert finite.focus_then_dilution(rows) == [True, False, True]
