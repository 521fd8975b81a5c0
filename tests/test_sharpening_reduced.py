"""The reduced (a, b) ODE: spec §8.1 regression targets (A12–A14), the line invariant (A3),
the full model against the reduced ODE, GD drift, and clear errors for bad input."""

import math

import numpy as np
import pytest
import torch

from attnflow import flow
from attnflow.params import ParameterError
from attnflow.sharpening import contracts, reduction, targets
from attnflow.sharpening.data import Task
from attnflow.sharpening.reduced import HorizonError, ReducedSystem, solve, time_grid


pytestmark = pytest.mark.usefixtures("one_cpu_thread")  # tiny float64 models: ~20× faster on one thread


# spec §8.1 (attnflow.sharpening.targets): (r, model) -> (p(s=0.9), t(s=0.9), p(1e5), odds/log² t at 1e5, a(1e5))
SPEC = {
    (int(r), name): (row.p_match, row.t_match, row.p_end, row.odds_l2_end, row.a_end)
    for (r, name), row in targets.REDUCED.items()
}


@pytest.fixture(scope="module")
def runs():
    return {key: solve(ReducedSystem(key[1], float(key[0])), 1e5, times=[1e5]) for key in SPEC}


@pytest.mark.parametrize("key", list(SPEC))
def test_spec_8_1_targets(runs, key):
    """A12/A13 and the table of §8.1 within the spec's tolerances: ±0.002 on p, drift < 1e-6,
    the other columns to half a unit of their printed digit."""
    p9, t9, p5, odds, a5 = SPEC[key]
    run = runs[key]
    ev, end = run.matched_event(), run.at(1e5)
    assert abs(ev["p"] - p9) <= 0.002, f"{key}: p(s=0.9) = {ev['p']:.4f}, spec {p9}"
    assert abs(ev["t"] - t9) <= 0.05, f"{key}: t(s=0.9) = {ev['t']:.2f}, spec {t9}"
    assert abs(end["p"] - p5) <= 0.002, f"{key}: p(1e5) = {end['p']:.4f}, spec {p5}"
    measured_odds = end["odds"] / math.log(1e5) ** 2
    assert abs(measured_odds - odds) <= 5e-4, f"{key}: odds/log² t = {measured_odds:.4f}, spec {odds} (3 decimals)"
    assert abs(end["a"] - a5) <= 0.005, f"{key}: a(1e5) = {end['a']:.3f}, spec {a5}"
    assert run.drift() < 1e-6, f"{key}: invariant drift {run.drift():.1e} ≥ 1e-6 (Theorem 3)"


def test_a12_exact_ordering(runs):
    for r in (1,):
        p9 = {m: runs[(r, m)].matched_event()["p"] for m in ("FACO", "CACO", "FAFO", "CAFO")}
        p5 = {m: runs[(r, m)].at(1e5)["p"] for m in p9}
        for p in (p9, p5):
            assert p["FACO"] > p["CACO"] > p["FAFO"] > p["CAFO"], p


def test_a14_fafo_at_r10_matches_faco_at_r1(runs):
    assert abs(runs[(10, "FAFO")].at(1e5)["p"] - runs[(1, "FACO")].at(1e5)["p"]) <= 0.002


def test_log_time_and_linear_time_agree():
    s = ReducedSystem("FAFO", 3.0)
    a = solve(s, 1e3, times=[1e3], log_time=True)
    b = solve(s, 1e3, times=[1e3], log_time=False)
    assert abs(a.at(1e3)["a"] - b.at(1e3)["a"]) < 1e-6 and abs(a.at(1e3)["b"] - b.at(1e3)["b"]) < 1e-6


@pytest.mark.parametrize("name", ["CACO", "CAFO", "FACO", "FAFO"])
def test_full_model_flow_follows_the_reduced_ode(name):
    """Prop. 2: population gradient flow of the torch model = reduced ODE with mapped rates."""
    c = reduction.compare_with_reduced(
        name, Task(5, 3, 11), lr_qk=2.0, t_max=30.0, n_times=7, embedding_seed=0, rtol=1e-9
    )
    scale = max(np.abs(c.a_reduced).max(), np.abs(c.b_reduced).max())
    assert np.abs(c.a_full - c.a_reduced).max() / scale < 1e-6
    assert np.abs(c.b_full - c.b_reduced).max() / scale < 1e-6
    assert c.residual.max() < 1e-10, "the flow left the two-scalar manifold"


def test_gd_invariant_drift_is_first_order_in_the_step():
    task = Task(5, 3, 11)
    d = [reduction.gd_on_manifold("FAFO", task, lr_qk=1.0, step=h, t_max=2.0).drift for h in (0.2, 0.1)]
    order = math.log(d[0] / d[1]) / math.log(2)
    assert abs(order - 1) < 0.05, f"Euler drift order {order:.3f}, expected 1"


def test_nonpositive_ratio_is_a_clear_error():
    for r in (0.0, -1.0, float("nan")):
        with pytest.raises(ParameterError, match="lr_ratio"):
            ReducedSystem("CACO", r)


def test_overflowing_horizon_is_a_clear_error():
    with pytest.raises(HorizonError, match="horizon.*Allowed: horizon ≤"):
        solve(ReducedSystem("FAFO", 10.0), 1e306)
    with pytest.raises(HorizonError, match="horizon"):
        solve(ReducedSystem("CACO", 1.0), float("inf"))
    with pytest.raises(ParameterError, match="horizon"):
        contracts.GROWTH_RATES.validate(
            dict(
                n_classes=5,
                n_compete=9,
                lr_ratios=[1.0],
                a0=0.1,
                b0=0.1,
                horizon=1e301,
                rtol=1e-10,
                parametrizations=["CACO"],
                fit_from=1e4,
            )
        )


def test_page_schemas_reject_bad_values_by_name():
    base = dict(
        n_classes=5,
        n_compete=9,
        lr_ratios=[1.0, 10.0],
        a0=0.1,
        b0=0.1,
        horizon=1e5,
        rtol=1e-10,
        parametrizations=["CACO"],
        fit_from=1e3,
    )
    contracts.GROWTH_RATES.validate(base)
    for bad, name in (
        (dict(lr_ratios=[1.0, 0.0]), "lr_ratios"),
        (dict(b0=-0.1), "b0"),
        (dict(n_compete=0), "n_compete"),
        (dict(parametrizations=["CAXO"]), "parametrizations"),
    ):
        with pytest.raises(ParameterError, match=name):
            contracts.GROWTH_RATES.validate({**base, **bad})


def test_factorized_qk_needs_positive_b0():
    with pytest.raises(ParameterError, match="b0"):
        solve(ReducedSystem("FACO", 1.0), 10.0, b0=0.0)


# -- the closed-form right-hand side against the torch/autograd one (issue 23) -------------------------
STATES = [(0.1, 0.1), (3.0, 2.0), (15.0, 7.0), (-0.5, 0.3), (40.0, -2.0), (0.2, -0.4)]


@pytest.mark.parametrize("name", ["CACO", "CAFO", "FACO", "FAFO"])
@pytest.mark.parametrize("imbalance", [0.0, 0.5])
def test_closed_form_rhs_and_jacobian_match_torch_and_jacfwd(name, imbalance):
    """ReducedSystem.rhs / jacobian (the solver's path) = rhs_torch and torch.func.jacfwd of it."""
    system = ReducedSystem(name, 3.0, 9, 5, lr_ov=0.7, imbalance_ov=imbalance)
    jac_fn = torch.func.jacfwd(system.rhs_torch)
    for a, b in STATES:
        y = torch.tensor([a, b], dtype=torch.float64)
        np.testing.assert_allclose(system.rhs(a, b), system.rhs_torch(y).numpy(), rtol=1e-13, atol=0)
        J = jac_fn(y).numpy()
        np.testing.assert_allclose(system.jacobian(a, b), J, rtol=1e-12, atol=1e-14 * np.abs(J).max())


def _solve_with_torch(system, horizon, a0, b0, matched, rtol=1e-10, atol=1e-12):
    """reduced.solve before issue 23: torch right-hand side, Jacobian from jacfwd, LSODA in log time."""
    jac_fn = torch.func.jacfwd(system.rhs_torch)

    def f(tau, y):
        return (1.0 + math.expm1(tau)) * system.rhs_torch(torch.from_numpy(y)).numpy()

    def jac(tau, y):
        return (1.0 + math.expm1(tau)) * jac_fn(torch.from_numpy(y)).numpy()

    def hit(tau, y):
        return float(system.p_correct(y[0], y[1])) - matched

    hit.direction = 1
    t_eval = time_grid(horizon, 60)
    res = flow.solve(f, np.array([a0, b0]), np.log1p(t_eval), jac=jac, rtol=rtol, atol=atol, events=[hit])
    return t_eval, res.y, float(np.expm1(res.t_events[0][0]))


@pytest.mark.parametrize(
    "name, a0, b0, r",
    [("CACO", 0.1, 0.1, 1.0), ("FAFO", 0.3, 0.05, 10.0), ("FACO", 0.05, 0.5, 0.3), ("CAFO", 1.0, 2.0, 3.0)],
)
def test_closed_form_solve_matches_the_torch_path(name, a0, b0, r):
    """The trajectory, its evaluation count and the matched-loss event of the closed-form solve = the
    torch/jacfwd path's, to a few ulps amplified by the solver (≤ 1e-11 relative, tolerance 1e-10)."""
    system = ReducedSystem(name, r)
    t_eval, y_old, t_hit = _solve_with_torch(system, 1e5, a0, b0, 0.9)
    run = solve(system, 1e5, a0=a0, b0=b0, t_eval=t_eval, matched=0.9)
    np.testing.assert_allclose(np.stack([run.a, run.b], 1), y_old, rtol=1e-11, atol=1e-13)
    assert abs(run.matched_event()["t"] - t_hit) <= 1e-11 * t_hit


def test_linear_time_closed_form_matches_the_torch_path():
    system = ReducedSystem("FAFO", 2.0)
    jac_fn = torch.func.jacfwd(system.rhs_torch)
    times = [0.0, 5.0, 50.0]
    run = solve(system, 50.0, a0=0.2, b0=0.3, t_eval=times, log_time=False, matched=None)
    res = flow.solve(
        lambda t, y: system.rhs_torch(torch.from_numpy(y)).numpy(),
        np.array([0.2, 0.3]),
        times,
        jac=lambda t, y: jac_fn(torch.from_numpy(y)).numpy(),
        rtol=1e-10,
        atol=1e-12,
    )
    np.testing.assert_allclose(np.stack([run.a, run.b], 1), res.y, rtol=1e-11)
