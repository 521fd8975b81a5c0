"""Primitives of the page focus_dilution/unigram_saddle (R2; claims B4, B5, B13, B17) on small inputs: the
spectrum at θ_c¹ (contraction rate, neutral count, predicted attention block, ‖∇L‖), the domain predicates
(plateau reached, a random chain on θ_c¹ at its horizon), the κ window, the plateau run with its g_eff read
before κ grows, the figure, and the schema's rule on the window."""

import numpy as np
import pytest

from attnflow import claims
from attnflow.focus_dilution import chain as chains
from attnflow.focus_dilution import closed_forms, contracts, figures, model, runs, spectrum
from attnflow.params import ParameterError

pytestmark = pytest.mark.usefixtures("one_cpu_thread")

# a small hub chain whose attention mode is inside every flow domain (2|g| = 0.011 ≤ λ_c/4, probed)
GOOD = chains.hub_family(5, 0.495, 0.271, 0.275)
SMALL_MODEL = model.ModelConfig(d_model=2, init_scale=1e-3, score_scale=1.0, seed=1)


@pytest.fixture(scope="module")
def plateaus():
    """The flow through the plateau of GOOD from ε and from ε/10 (m = 2), shared by the tests below."""
    with runs.single_threaded():
        return (
            runs.plateau_run(GOOD, SMALL_MODEL, 300.0, [2.0, 3.5]),
            runs.plateau_run(GOOD, SMALL_MODEL.with_(init_scale=1e-4), 300.0, [2.0, 3.5]),
        )


def test_contraction_rate_neutral_count_and_attention_spectrum():
    eigs = np.array([-0.3, -0.02, 0.0, 1e-12])
    assert spectrum.contraction_rate(eigs) == pytest.approx(0.02)
    assert spectrum.contraction_rate(np.zeros(3)) == np.inf
    assert spectrum.count_neutral(eigs) == 2
    pred = spectrum.attention_spectrum(0.1, 3)
    assert len(pred) == 2 * 3 * 3 and list(pred[:3]) == [-0.1] * 3 and list(pred[-3:]) == [0.1] * 3
    assert (pred[3:-3] == 0).all()
    assert list(spectrum.attention_spectrum(-0.1, 1)) == [-0.1, 0.1]  # sorted whatever the sign of g


def test_the_jacobian_at_theta_c1_matches_the_predicted_blocks():
    m = 2
    g = closed_forms.g_rate(GOOD)
    loss = SMALL_MODEL.population_loss(GOOD)
    theta = spectrum.theta_c1_params(GOOD, m)
    blocks = spectrum.jacobian_blocks(loss, theta, sign=np.sign(g))
    assert np.abs(blocks.attention_eigs - spectrum.attention_spectrum(g, m)).max() < 1e-10
    assert spectrum.gradient_norm(loss, theta) < 1e-12
    assert 0 < spectrum.contraction_rate(blocks.embedding_eigs) < np.inf
    off = {n: v + 1e-2 for n, v in theta.items()}
    assert spectrum.gradient_norm(loss, off) > 1e-4  # away from θ_c¹ the gradient does not vanish


def test_plateau_domain_reads_the_parameters_only():
    inside, outside = spectrum.plateau_domain(0.01, 0.1), spectrum.plateau_domain(0.02, 0.1)
    assert inside and not outside and "λ_c/4" in outside.reason
    assert inside.reads == outside.reads == (claims.PARAMETERS,)
    assert spectrum.SEPARATION == 4.0


def test_unigram_plateau_domain_needs_condensation_before_the_horizon():
    rand = chains.dirichlet_chain(3, seed=0)
    mc = model.ModelConfig(d_model=2, init_scale=1e-3, score_scale=1.0, seed=1)
    t_cond = 2.5 * closed_forms.escape_time_origin(rand, 1e-3)
    early = spectrum.unigram_plateau_domain(rand, mc, 0.5 * t_cond)
    assert not early and "2.5T₁" in early.reason and early.reads == (claims.PARAMETERS,)
    late = spectrum.unigram_plateau_domain(rand, mc, 1e9)  # attention has long left the plateau
    assert not late and "log(1/ε)" in late.text


def test_window_rate_window_times_and_flow_end():
    hub = chains.hub_family()
    floor = 5 * 1e-3 * closed_forms.sigma0(hub)
    assert runs.window_rate(hub, 1e-7, 1e-3) == pytest.approx(floor)
    assert runs.window_rate(hub, -0.01, 1e-3) == 0.01
    assert runs.kappa_window_times(100.0, -0.01, [2.0, 3.5]) == pytest.approx((300.0, 450.0))
    t_win_end = runs.kappa_window_times(2.5 * closed_forms.escape_time_origin(hub, 1e-3), 0.01, [2.0, 3.5])[1]
    assert runs.plateau_end(hub, 10.0, 1e-3, 0.01, [2.0, 3.5]) == pytest.approx(max(1.1 * t_win_end, 300.0))


def test_plateau_run_reads_g_eff_before_kappa_grows(plateaus):
    big, small = plateaus
    g = closed_forms.g_rate(GOOD)
    for pr in plateaus:
        assert pr.window_points >= 3 and pr.t_cond < pr.t_c1 <= pr.t_kappa[0]
        assert pr.t_settled == pytest.approx(pr.t_cond + runs.SETTLED / abs(g))
        assert pr.g_eff_settled == pr.g_eff[pr.run.at(pr.t_settled)]
        assert pr.mode_growth == pytest.approx(pr.mode_growth_pred, rel=1e-2)
    assert small.t_cond > big.t_cond  # a smaller ε escapes the origin later
    # the claim of the page: the rate from ε/10 is the closed-form 2|g| within √(2dm)·ε
    assert small.mode_rate == pytest.approx(2 * abs(g), rel=np.sqrt(2 * GOOD.d * 2) * 1e-3)
    assert abs(small.g_eff_settled / g - 1) <= 0.2 * abs(big.g_eff_settled / g - 1) + 1e-4


def test_plateau_run_past_its_flow_has_no_rates(monkeypatch):
    """A κ window beyond the flow's end (condensation later than forecast) gives nan rates, not an error."""
    monkeypatch.setattr(runs, "plateau_end", lambda *a: 150.0)
    with runs.single_threaded():
        pr = runs.plateau_run(GOOD, SMALL_MODEL, 150.0, [2.0, 3.5])
    assert pr.window_points < 3 and np.isnan(pr.mode_rate) and np.isnan(pr.kappa_rate)


def test_figure_takes_the_run_records(plateaus):
    big, _ = plateaus
    g = closed_forms.g_rate(GOOD)
    blocks = spectrum.jacobian_blocks(SMALL_MODEL.population_loss(GOOD), spectrum.theta_c1_params(GOOD, 2))
    rand = chains.dirichlet_chain(3, seed=0)
    run_r = runs.population_flow(rand, model=SMALL_MODEL, t_eval=np.linspace(0.0, 50.0, 26))
    fig = figures.unigram_saddle(big, blocks, g, run_r, big.t_c1, title="test")
    assert len(fig.axes) >= 6


def test_schema_refuses_an_unordered_kappa_window():
    values = dict(chain="hub", n_low=4, a_h=0.5, b_h=0.3, c_cyc=0.4, delta=0.0, chain_seed=0, d_model=8,
                  init_scale=1e-3, score_scale=1.0, seed=1, horizon=1500.0, kappa_window=[3.5, 2.0], random_d=6,
                  random_seed=0, random_horizon=600.0)  # fmt: skip
    with pytest.raises(ParameterError, match=r"kappa_window\[0\] < kappa_window\[1\]"):
        contracts.UNIGRAM_SADDLE.validate(values)
