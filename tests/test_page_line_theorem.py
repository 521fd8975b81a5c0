"""Primitives of the page sharpening/line_theorem (Theorem 3, claim A3) on small inputs: the reduced
flows over a grid of ratios and the drift of Ψ − rΦ (absolute, over a window, relative to rtol·S),
GD at several step sizes with its local order and the curvature of the forecast flow (the stability
domain, read before any step), and the figures (the schema's rules: tests/test_sharpening_contracts.py)."""

import math

import matplotlib
import numpy as np
import pytest

from attnflow.sharpening import data, reduced, reduction
from attnflow.sharpening.figures import line_plane, step_order

matplotlib.use("Agg")

pytestmark = pytest.mark.usefixtures("one_cpu_thread")

TASK = data.Task(n_classes=5, n_common=2, seq_len=11)


@pytest.fixture(scope="module")
def runs():
    return reduced.solve_grid(["CACO", "FAFO"], [1.0, 10.0], 1e3, n_compete=9, n_classes=5, a0=0.1, b0=0.1,
                              rtol=1e-10, atol=1e-12, matched=None)  # fmt: skip


@pytest.fixture(scope="module")
def study():
    return reduction.gd_step_study("CACO", TASK, lr_qk=1.0, steps=[0.1, 0.2], t_max=2.0, a0=0.1, b0=0.1)


def test_solve_grid_runs_every_parametrization_and_ratio(runs):
    assert list(runs) == [("CACO", 1.0), ("CACO", 10.0), ("FAFO", 1.0), ("FAFO", 10.0)]
    run = runs[("FAFO", 10.0)]
    assert run.system.parametrization == "FAFO" and run.system.lr_ratio == 10.0
    assert run.t[-1] == pytest.approx(1e3, rel=1e-12) and run.meta["rtol"] == 1e-10 and run.matched is None


def test_drift_over_a_window_and_relative_to_the_solver_tolerance(runs):
    run = runs[("CACO", 10.0)]
    # the window reaches past the horizon: the whole run; a shorter one reads less of it
    assert run.drift_until(1e5) == run.drift() and run.drift_until(1e1) <= run.drift()
    s = run.system
    scale = np.max(np.abs(s.psi(run.b)) + 10.0 * np.abs(s.phi(run.a)))
    assert run.potential_scale() == pytest.approx(scale, rel=1e-15)
    assert run.relative_drift() == pytest.approx(run.drift() / (1e-10 * scale), rel=1e-15)
    assert 0 < run.relative_drift() < 50 and run.drift() < 1e-6


def test_largest_drift_selects_parametrization_ratios_and_window(runs):
    assert reduced.largest_drift(runs) == max(r.drift() for r in runs.values())
    assert reduced.largest_drift(runs, "FAFO") == max(runs[("FAFO", r)].drift() for r in (1.0, 10.0))
    assert reduced.largest_drift(runs, "CACO", ratios=[10.0]) == runs[("CACO", 10.0)].drift()
    assert reduced.largest_drift(runs, "CACO", until=1e1) == max(runs[("CACO", r)].drift_until(1e1) for r in (1, 10))
    assert reduced.largest_drift(runs, "CACO", relative=True) == max(
        runs[("CACO", r)].relative_drift() for r in (1.0, 10.0)
    )
    assert math.isnan(reduced.largest_drift(runs, "CACO", ratios=[3.0]))  # no such run: nothing measured
    with pytest.raises(ValueError, match="whole run"):
        reduced.largest_drift(runs, relative=True, until=1e2)


def test_drift_rows(runs):
    rows = reduced.drift_rows(runs)
    assert [(r["model"], r["r"]) for r in rows] == list(runs)
    assert rows[0]["max |drift|"] == runs[("CACO", 1.0)].drift()
    assert rows[0]["drift/(rtol·S)"] == runs[("CACO", 1.0)].relative_drift()


def test_gd_step_study_drifts_at_first_order(study):
    assert study.steps.tolist() == [0.2, 0.1] and (study.h_max, study.h_min) == (0.2, 0.1)
    assert study.drift.tolist() == [r.drift for r in study.runs] and reduction.strictly_decreasing(study.drift)
    assert study.local_order.shape == (1,) and study.finest_order == pytest.approx(1.0, abs=0.05)
    row = study.row()
    assert row["model"] == "CACO" and row["λ_max"] == study.curvature and row["order 0.2→0.1"] == study.finest_order
    assert row["drift h=0.1"] == study.drift[-1]


def test_flow_curvature_reads_the_forecast_flow_from_the_initial_state(study):
    at_start = reduction.curvature_on_manifold("CACO", TASK, lr_qk=1.0, a=0.1, b=0.1)
    one = reduction.flow_curvature("CACO", TASK, lr_qk=1.0, t_max=2.0, a0=0.1, b0=0.1, n_points=1)
    assert one == at_start  # t = 0 only: the initial state itself
    assert study.curvature >= at_start and study.h_max * study.curvature < 2  # stable at these steps
    # the forecast follows the flow GD discretizes: λ_max at its end is close to that at GD's end
    end = study.runs[-1]
    at_gd_end = reduction.curvature_on_manifold("CACO", TASK, lr_qk=1.0, a=float(end.a[-1]), b=float(end.b[-1]))
    system = reduction.reduced_system("CACO", TASK, lr_qk=1.0)
    path = reduced.solve(system, 2.0, a0=0.1, b0=0.1, t_eval=[0.0, 2.0], log_time=False, matched=None)
    at_flow_end = reduction.curvature_on_manifold("CACO", TASK, lr_qk=1.0, a=float(path.a[-1]), b=float(path.b[-1]))
    assert at_flow_end == pytest.approx(at_gd_end, rel=1e-2)


def test_reduced_system_maps_the_rates():
    const = reduction.constants(TASK)
    s = reduction.reduced_system("FACO", TASK, lr_qk=2.0, lr_ov=1.0)
    qk, ov = reduction.reduced_rates("FACO", const, 2.0, 1.0)
    assert (s.lr_ov, s.lr_ratio, s.n_compete, s.n_classes) == (ov, qk / ov, const.n_compete, const.n_classes)


def test_strictly_decreasing():
    assert reduction.strictly_decreasing([3.0, 2.0, 1.0]) and reduction.strictly_decreasing(np.array([1.0]))
    assert not reduction.strictly_decreasing([3.0, 3.0, 1.0]) and not reduction.strictly_decreasing([1.0, 2.0])


def test_figures_take_the_run_records(runs, study):
    fig = line_plane(runs, title="t")
    assert len([a for a in fig.axes if a.get_visible()]) == 2
    fig = step_order({"CACO": study}, runs, 50.0)
    assert len(fig.axes) == 2 and fig.axes[1].get_lines()[-1].get_ydata()[0] == 50.0
