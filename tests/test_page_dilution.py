"""The primitives the page focus_dilution/dilution (stage 3, R4; claims B7, B14) is written with, on small
inputs: the drive v at θ_c¹, the redistribution measures of a flow, the state a domain reads at a stored time
and its forecasts, the exact fit at θ_c², the second cycle of an escaping run, the predicates and the figure.
The page itself runs on far chains and a second seed in tests/test_focus_reports_dilution_escape.py."""

import math
from types import SimpleNamespace

import matplotlib
import numpy as np
import pytest
import torch

from attnflow.focus_dilution import chain as chains
from attnflow.focus_dilution import closed_forms, figures, measure, model, spectrum, stages, symbolic
from attnflow.focus_dilution.runs import FlowRun

SMALL = chains.hub_family(2, 0.5, 0.3, 0.4)  # d = 3


def _fake_run(t, chain=None, states=None, loss_fn=None, **q):
    run = FlowRun(
        t=np.asarray(t, float), quantities={k: np.asarray(v, float) for k, v in q.items()}, chain=chain, loss_fn=loss_fn
    )
    if states is not None:
        run.result = SimpleNamespace(states=lambda: states)
    return run


def _main_run(chain=SMALL):
    """A synthetic first cycle on a d = 3 hub chain: condensation to H(π) by t = 10, the θ_c¹ plateau, focus
    from t = 50 (κ grows, the rare queries' attention to the hub rises to π_hub + 0.05 at t = 70), then
    dilution below π_hub (−0.02 at the end) while the hub amplitude rises and the rare ones change sign."""
    pi, d = chain.pi, chain.d
    t = np.arange(0.0, 101.0)
    H = chain.unigram_entropy()
    loss = np.where(t < 10, np.log(d) - (np.log(d) - H) * t / 10, H - 1e-3 * np.clip(t - 50, 0, None) / 50)
    bump = np.where(t < 50, 0.0, np.where(t < 70, 0.05 * (t - 50) / 20, 0.05 - 0.07 * (t - 70) / 30))
    A = np.broadcast_to(pi, (len(t), d, d)).copy()
    A[:, 1:, 0] += bump[:, None]
    A[:, 1:, 1:] -= bump[:, None, None] / 2
    kappa = np.clip(t - 50, 0, None) / 100  # κ = 0.01 at t = 51
    amp = np.empty((len(t), d))
    amp[:, 0] = 1.0 + kappa
    amp[:, 1:] = (0.2 - kappa)[:, None]
    ent = -(A * np.log(A)).sum(-1) @ pi
    hub = A[:, :, 0] @ pi
    return _fake_run(t, chain, A=A, amp=amp, kappa=kappa, loss=loss, hub_attention=hub, attn_entropy=ent)


def test_predicates_state_their_bound():
    assert measure.above(1e-3)(2e-3) and not measure.above(1e-3)(1e-3)
    assert measure.below(-1e-3)(-2e-3) and not measure.below(-1e-3)(0.0)
    assert measure.above(0.01).__doc__ == "> 0.01" and measure.below(0.99).__doc__ == "< 0.99"


def test_entropy_rise_from_the_minimum_after_a_time():
    t = np.arange(6.0)
    ent = np.array([1.0, 0.8, 0.5, 0.6, 0.7, 0.65])
    assert measure.entropy_rise(t, ent, 0.0) == pytest.approx(0.15)
    assert measure.entropy_rise(t, ent, 4.0) == pytest.approx(0.0)
    assert math.isnan(measure.entropy_rise(t, ent, 10.0))


def test_redistribution_reads_focus_redistribution_and_dilution():
    run = _main_run()
    red = measure.redistribution(run, SMALL, g=0.003)
    pi_hub = SMALL.pi[0]
    assert red.t_cond == 10.0 and red.t_onset == 54.0 and red.t_early == 51.0 and red.t_peak == 70.0
    assert red.t_c1 == 32.0 and red.t_end == 100.0  # halfway between condensation and the onset (0.01 off π)
    assert red.focus_excess == pytest.approx(0.05) and red.fall == pytest.approx(0.07)
    assert red.final_excess == pytest.approx(-0.02) and red.A_low_hub_max == pytest.approx(pi_hub + 0.05)
    assert red.early_apart and red.amp_apart and red.a_low_end == pytest.approx(-0.3)
    assert red.early_signs_of(np.array([1.0, -1.0, -1.0])) and not red.early_signs_of(np.array([-1.0, -1.0, -1.0]))
    glued = red.glue_values(SMALL.pi)
    assert glued["a_hub_end"] == pytest.approx(1.5) and glued["r_c1"] == pytest.approx(SMALL.pi @ red.a_c1)
    # focus away from the hub (g < 0): κ never reaches −0.01 along sign(g), no early point
    away = measure.redistribution(run, SMALL, g=-0.003)
    assert not away.early_reached and math.isnan(away.t_early) and not away.early_apart
    assert math.isnan(away.glue_values(SMALL.pi)["r_early"])


def test_flow_state_reads_gradient_hessian_and_its_forecasts():
    loss = model.PopulationLoss(SMALL, 1.0)
    c1 = spectrum.theta_c1_params(SMALL, 2)
    rnd = model.init_params(SMALL.d, 2, 0.3, seed=0)
    states = {n: torch.stack([c1[n], rnd[n]]) for n in c1}
    run = _fake_run([0.0, 10.0], SMALL, states=states, loss_fn=loss, sigma2=[1e-3, 0.2], loss=[1.0, 1.1])
    at_c1 = measure.flow_state(run, 0.0)
    assert at_c1.grad_norm < 1e-9 and at_c1.sigma2 == 1e-3 and at_c1.loss == 1.0
    H, _ = model.hessian(loss, c1)
    assert at_c1.lambda_min == pytest.approx(np.linalg.eigvalsh(H)[0], abs=1e-12)
    away = measure.flow_state(run, 9.0, hessian=False)  # the stored time closest to 9
    assert away.t == 10.0 and math.isnan(away.lambda_min)
    assert away.grad_norm == pytest.approx(measure.grad_norms({n: s[1:] for n, s in states.items()}, loss)[0])
    # forecasts: the loss still to fall at −dL/dt = ‖∇L‖², the e-folds of an unstable direction
    st = measure.FlowState(t=3600.0, grad_norm=4.3e-6, lambda_min=-6.6e-4, sigma2=0.004, loss=1.5)
    assert st.loss_fall_until(4000.0) == pytest.approx(4.3e-6**2 * 400) and st.growth_until(3000.0) == pytest.approx(
        1.98
    )
    assert measure.FlowState(0.0, 0.0, 1e-3, 0.0, 0.0).growth_until(1e4) == 0.0


def test_drive_on_the_spec_chain_is_a_redistribution():
    dv = spectrum.drive(model.PopulationLoss(chains.hub_family(), 1.0), 8)
    assert dv.opposite and dv.v_hub > 0 > dv.v_low
    assert dv.cos_v_pi == pytest.approx(0.2496917, abs=1e-6)  # the book's value
    assert dv.cos_v_pi == pytest.approx(float(measure.cos(dv.v, chains.hub_family().pi)), rel=1e-14)
    assert dv.cos_pi_hub == pytest.approx(0.375 / np.linalg.norm(chains.hub_family().pi))


def test_exact_fit_at_theta_c2_and_the_settling_horizon():
    P = SMALL.P
    P_hat = np.vstack([P[0], P[1:].mean(0), P[1:].mean(0)])
    assert closed_forms.theta_c2_fit_error(SMALL, P_hat) == 0.0
    assert closed_forms.theta_c2_fit_error(SMALL, P) == pytest.approx(np.abs(P[1:] - P[1:].mean(0)).max())
    t_p = closed_forms.plateau_time(SMALL, 1e-3)
    assert closed_forms.settling_horizon(SMALL, 1.0, 1e-3) == pytest.approx(1.6 * t_p)
    assert closed_forms.settling_horizon(SMALL, 1e9, 1e-3) == 1e9


def test_degenerate_point_counts_its_nonzero_entries():
    deg = symbolic.degenerate_point(2)
    assert deg.n_nonzero_fit == 0
    deg.collinearity_minors = [*deg.collinearity_minors, deg.loss]  # L(θ_c²) > 0 does not simplify to 0
    assert deg.n_nonzero_fit == 1


def _cycle_run():
    chain = chains.hub_family(4, 0.5, 0.3, 0.4, 0.1)
    t = np.arange(0.0, 100.0, 10.0)
    s2 = np.array([0.004] * 4 + [0.2] * 6)  # escape at t = 40
    hub = np.array([0.5, 0.5, 0.5, 0.5, 0.55, 0.7, 0.6, 0.52, 0.5, 0.5])
    ent = np.array([1.2, 1.2, 1.2, 1.2, 1.0, 0.5, 0.6, 0.7, 0.72, 0.72])
    loss = np.linspace(1.5, 1.2, 10)
    return _fake_run(t, chain, sigma2=s2, hub_attention=hub, attn_entropy=ent, loss=loss)


def _stages(*names_starts):
    st = [stages.Stage(n, s, e, 1, 0.0) for n, s, e in names_starts]
    return stages.Stages(stages=st, transitions=[])


def test_second_cycle_escape_peak_fall_and_start():
    st = _stages(("condensation", 0, 5), ("plateau", 5, 10), ("focus", 10, 20), ("plateau", 20, 30), ("escape", 30, 45))
    cyc = stages.second_cycle(_cycle_run(), after=5.0, at=(20.0, 3000.0), st=st)
    assert cyc.escaped and cyc.t_esc == 40.0 and cyc.hub_at_esc == 0.55
    assert cyc.hub_peak == 0.7 and cyc.t_hub_peak == 50.0 and cyc.hub_min_after == 0.5
    assert cyc.rise == pytest.approx(0.15) and cyc.fall == pytest.approx(0.2) and cyc.ent_rise == pytest.approx(0.22)
    assert cyc.hub_at == {20.0: 0.5, 3000.0: 0.55}  # read at min(t, t_esc)
    assert (cyc.pre_escape, cyc.t_esc_start, cyc.from_plateau) == ("plateau", 30.0, True)
    # σ₂ grew during the first focus: no plateau of θ_c²(δ) before the escape
    during = _stages(("condensation", 0, 5), ("plateau", 5, 10), ("focus", 10, 30), ("escape", 30, 45))
    assert stages.escape_start(during, 5.0) == ("focus", 30.0, False)
    no_focus = _stages(("condensation", 0, 5), ("plateau", 5, 30), ("escape", 30, 45))
    assert not stages.escape_start(no_focus, 5.0)[2]
    # no escape within the horizon
    run = _cycle_run()
    run.quantities["sigma2"] = np.full(10, 0.004)
    none = stages.second_cycle(run, after=5.0, at=(3000.0,), st=_stages(("condensation", 0, 5)))
    assert not none.escaped and math.isnan(none.rise) and math.isnan(none.hub_at[3000.0])
    assert none.pre_escape == "no escape detected" and not none.from_plateau
    assert stages.MIN_SWING == 0.01


def test_dilution_figure_from_the_run_records():
    matplotlib.use("Agg")
    run = _main_run()
    red = measure.redistribution(run, SMALL, g=0.003)
    run_c = _cycle_run()
    st = _stages(("plateau", 0, 30), ("escape", 30, 45))
    cyc = stages.second_cycle(run_c, after=5.0, st=st)
    fig = figures.dilution(
        run, run_c, red, np.array([1.0, -0.5, -0.5]), cyc, 0.1, L_c2=float(run.quantities["loss"][-1])
    )
    assert len(fig.axes) == 6 and "δ = 0.1" in fig.axes[4].get_title()
    matplotlib.pyplot.close(fig)
