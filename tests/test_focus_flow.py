"""The exact population flow: the fast (closed-form gradient) path equals ``flow.integrate`` on
the autograd loss, stays balanced, and reproduces the stage-1/plateau targets B12, B13, B17."""

import numpy as np
import pytest

from attnflow.focus_dilution import chain as chains
from attnflow.focus_dilution import closed_forms, escape, measure, runs
from attnflow.focus_dilution.targets import SPEC


def test_analytic_and_autograd_flows_agree():
    markov = chains.dirichlet_chain(4, seed=3)
    t = np.linspace(0, 150, 31)
    fast = runs.population_flow(markov, d_model=3, t_eval=t)
    slow = runs.population_flow(markov, d_model=3, t_eval=t, gradient="autograd")
    assert np.allclose(fast.result.y, slow.result.y, rtol=1e-6, atol=1e-9)
    assert fast.nfev < 2000
    with pytest.raises(ValueError, match="gradient must be"):
        runs.population_flow(markov, t_eval=t, gradient="euler")


def test_reference_flow_condensation_and_plateau_targets():
    """B12, B13 on the reference run: σ0 rate, L = H(π), ‖W0‖ at t = 200, conserved imbalance."""
    markov = chains.hub_family()
    run = runs.population_flow(markov, t_eval=np.arange(0.0, 300.5, 0.5))
    assert run.rate("mode0", 19.9, 39.8) == pytest.approx(closed_forms.sigma0(markov), rel=2e-3)
    i = run.at(200.0)
    assert run.quantities["loss"][i] == pytest.approx(SPEC["H_pi"], abs=5e-6)
    assert run.quantities["W0_fro"][i] == pytest.approx(SPEC["W0_norm_c1_measured"], rel=1e-4)
    assert np.ptp(run.quantities["balance"]) < 1e-9, "‖W0‖² − ‖W1‖² − ‖WQ‖² − ‖WK‖² is conserved"
    assert run.quantities["cos_W0_pi"][i] > 1 - 1e-4 and run.quantities["cos_W1_ell"][i] > 1 - 1e-4


def test_random_chain_w1_turns_from_pi_to_ell():
    """B17: random d = 6 chain to t = 600."""
    markov = chains.dirichlet_chain(6, 0)
    run = runs.population_flow(markov, t_eval=np.linspace(0, 600, 601))
    assert run.quantities["W0_fro"][-1] == pytest.approx(SPEC["W0_norm_c1_random"], rel=2e-4)
    assert run.quantities["loss"][-1] == pytest.approx(SPEC["H_pi_random"], abs=1e-5)
    assert run.quantities["cos_W1_pic"].max() > 1 - 1e-4
    assert run.quantities["cos_W1_pic"][-1] == pytest.approx(SPEC["cos_W1_pic_final_random"], abs=1e-4)
    assert run.quantities["cos_W1_ell"][-1] > 1 - 1e-4


def test_escape_rate_equals_transverse_drive():
    """B15–B16 for one δ: the escape rate equals σ_max(M⊥) in the window and the spec's value."""
    markov = chains.hub_family(delta=0.4)
    run = runs.population_flow(markov, t_eval=runs.time_grid(3000, 300, 1, 10))
    stats = escape.escape_stats(run, after=1940.0)
    assert stats.rate == pytest.approx(stats.M_perp_mean, rel=1e-2)
    assert stats.rate == pytest.approx(SPEC["escape_rate"][0.4], rel=1e-2)
    assert stats.t_escape == pytest.approx(SPEC["escape_time"][0.4], abs=20)


def test_measure_helpers():
    t = np.linspace(0, 10, 101)
    assert measure.fit_rate(t, 3 * np.exp(0.7 * t), 2, 8) == pytest.approx(0.7)
    with pytest.raises(ValueError, match="holds 0 stored times"):
        measure.fit_rate(t, t, 20, 30)
    assert measure.first_time(t, t > 5) == pytest.approx(5.1)
    assert np.isnan(measure.first_time(t, t > 50))
    assert measure.effective_rank(np.array([[1.0, 0, 0], [1, 1, 1]])) == pytest.approx([1.0, 3.0])
