"""Reports of the dilution and escape pages (claims B7–B9, B14–B16): the measurements on small
inputs, the domains of the claims, the schema rules, and (notebook marker) each page under the
smoke profile on chains far from the reference and with a second fixed seed set."""
import dataclasses
import json
import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from attnflow import claims, runner
from attnflow.focus_dilution import escape as fescape
from attnflow.focus_dilution.chain import hub_family
from attnflow.focus_dilution.reports import dilution, escape
from attnflow.focus_dilution.runs import FlowRun

from report_fakes import neutral_report


# ----------------------------------------------------------------------------- small fakes
def _fake_run(t, chain=None, states=None, **q):
    run = FlowRun(t=np.asarray(t, float), quantities={k: np.asarray(v, float) for k, v in q.items()}, chain=chain)
    if states is not None:
        run.result = SimpleNamespace(states=lambda: states)
    return run



# ----------------------------------------------------------------------------- dilution
def test_entropy_rise_from_the_minimum_after_a_time():
    t = np.arange(6.0)
    ent = np.array([1.0, 0.8, 0.5, 0.6, 0.7, 0.65])
    assert dilution.entropy_rise(t, ent, 0.0) == pytest.approx(0.15)
    assert dilution.entropy_rise(t, ent, 4.0) == pytest.approx(0.0)
    assert math.isnan(dilution.entropy_rise(t, ent, 10.0))


def test_cycle_stats_escape_peak_and_settling():
    chain = hub_family(4, 0.5, 0.3, 0.4, 0.1)
    bigram = chain.bigram_loss()
    t = np.arange(0.0, 100.0, 10.0)
    s2 = np.array([0.004] * 4 + [0.2] * 6)                                  # escape at t = 40
    hub = np.array([0.5, 0.5, 0.5, 0.5, 0.55, 0.7, 0.6, 0.52, 0.5, 0.5])
    ent = np.array([1.2, 1.2, 1.2, 1.2, 1.0, 0.5, 0.6, 0.7, 0.72, 0.72])
    loss = np.r_[np.full(4, bigram + 0.1), np.linspace(bigram + 0.05, bigram + 1e-3, 5), bigram + 1e-3]
    run = _fake_run(t, chain, sigma2=s2, hub_attention=hub, attn_entropy=ent, loss=loss)
    out = dilution.cycle_stats(run, chain, t_onset=5.0)
    assert out["escaped"] and out["t_esc"] == 40.0
    assert out["hub_peak"] == 0.7 and out["t_hub_peak"] == 50.0 and out["hub_min_after"] == 0.5
    assert out["ent_min"] == 0.5 and out["ent_final"] == 0.72
    assert out["cycle_settled"]                                             # flat over the last 10 %
    still = dilution.cycle_stats(_fake_run(t, chain, sigma2=s2, hub_attention=hub, attn_entropy=ent,
                                           loss=np.r_[loss[:-1], bigram]), chain, t_onset=5.0)
    assert not still["cycle_settled"]                                       # still falling at the horizon
    out = dilution.cycle_stats(_fake_run(t, chain, sigma2=np.full(10, 0.004), hub_attention=hub,
                                         attn_entropy=ent, loss=loss), chain, t_onset=5.0)
    assert not out["escaped"] and not out["cycle_settled"] and math.isnan(out["hub_peak"])


def test_dilution_domains_follow_the_theory(ledger):
    rep = neutral_report(dilution.DilutionReport, chain_name="hub family", hub_family=True, symmetric_family=True, g=0.003, sigma0=0.1,
                  early_reached=True, early_apart=True, early_sign_ok=False, opposite=False, amp_apart=True, cos_pi_hub=0.9, end_flat=0.0, sigma2_end=0.004, t_early=1500.0, t_c1=800.0,
                  A_low_hub_max=0.40, A_low_hub_end=0.38, A_low_hub_fall=0.02, pi_hub=0.375, a_low_end=0.05,
                  cos_v_pi=0.9, n_nonzero_deg=0, grad_end=1e-9, L_end=1.0, L_c2_closed=1.0, fit_err=0.0,
                  lambda_min_end=-1e-7, t_end=3000.0)
    rep.check_claims()
    by_what = {r["what"]: r for r in ledger()}
    assert all(r["verdict"] in ("pass", "outside") for r in ledger()), [r for r in ledger() if r["verdict"] == "fail"]
    assert by_what["sign of a(κ = 0.01) − a(θ_c¹) equals sign of v, componentwise"]["verdict"] == "outside"
    assert by_what["dilution: final rare-query attention to the hub minus π_hub"]["verdict"] == "outside"
    assert by_what["second cycle: attention-entropy rise after its minimum"]["verdict"] == "outside"
    assert by_what["dilution: fall of the rare-query attention to the hub from its peak to the end"]["verdict"] == "pass"
    # focus away from the hub (g < 0): the sign statements are outside their domain, not failures
    rep = dataclasses.replace(rep, g=-0.001, early_apart=False, amp_apart=False, A_low_hub_max=0.3)
    claims.begin_page("focus_dilution/test_reports", {})
    rep.check_claims()
    assert not [r for r in ledger() if r["verdict"] == "fail"]
    # inside the domain a wrong sign fails
    rep = dataclasses.replace(rep, g=0.003, early_apart=False)
    claims.begin_page("focus_dilution/test_reports", {})
    rep.check_claims()
    assert [r["what"] for r in ledger() if r["verdict"] == "fail"] == [
        "at κ = 0.01: frequent amplitude up, every rare amplitude down from θ_c¹",
        "from θ_c¹ to the end: frequent amplitude up, every rare amplitude down",
        "focus: max rare-query attention to the hub minus π_hub"]


def test_dilution_trap_needs_a_stable_end_point_and_arrival(ledger):
    """B14 (errata, atlas): an end point with an unstable Hessian direction is no trap, and the
    exact-fit claims need ‖∇L‖² t_end below a tenth of the closed-form tolerance; both are
    decided from the end state, before the fit."""
    base = neutral_report(dilution.DilutionReport, chain_name="hub family", hub_family=True, symmetric_family=True, g=0.003,
                   sigma0=0.1, end_flat=0.0, sigma2_end=0.004, t_end=3000.0, lambda_min_end=-1e-7, grad_end=1e-9,
                   L_end=1.0, L_c2_closed=1.0, fit_err=0.0)
    assert base.domain_trap() and base.domain_arrived()
    unstable = dataclasses.replace(base, lambda_min_end=-6.6e-4)        # the atlas chain: |λ_min| t_end = 2
    assert not unstable.domain_trap() and "stable" in unstable.domain_trap().reason
    assert unstable.domain_end()                                         # the B7 end-point claims keep their domain
    slow = dataclasses.replace(base, grad_end=4.3e-6)                    # ‖∇L‖² t_end = 5.5e-8 > 1e-9
    assert slow.domain_trap() and not slow.domain_arrived() and "arrived" in slow.domain_arrived().reason
    # inside the domain a loss off the closed form fails
    dataclasses.replace(base, L_end=1.0 + 1e-7).check_claims()
    failed = [r["what"] for r in ledger() if r["verdict"] == "fail" and r["id"] == "B14"]
    assert failed == ["L at the end vs closed form π_0H(P_0) + Σπ_jCE(P_j, P̄_low)"]


# ----------------------------------------------------------------------------- escape
def test_slope_bias_of_an_untouched_part_of_sigma2():
    """B16/B15: a constant part f of σ₂(W0) in quadrature with the growing mode biases the fitted
    slope downwards; the prediction agrees with a direct least-squares fit of such a signal."""
    assert fescape.slope_bias(1.0) == pytest.approx(0.0, abs=1e-12)
    values = [fescape.slope_bias(s) for s in (0.3, 0.9, 0.938, 0.985, 0.999)]
    assert all(a < b for a, b in zip(values, values[1:])) and values[-1] < 0
    assert fescape.slope_bias(0.938) == pytest.approx(-0.0206, abs=5e-4)    # the atlas point: measured −2.4 %
    assert fescape.slope_bias(0.985) > -fescape.BIAS_MAX > fescape.slope_bias(0.98)
    t = np.arange(0.0, 4000.0, 1.0)
    f, r = 0.004, 1e-3
    s2 = np.sqrt((0.00917 * np.exp(r * t)) ** 2 + f ** 2)
    sel = (s2 >= 0.01) & (s2 <= 0.1)
    fitted = np.polyfit(t[sel], np.log(s2[sel]), 1)[0]
    share = np.sqrt(1 - (f / s2[sel][0]) ** 2)
    assert fitted / r - 1 == pytest.approx(fescape.slope_bias(share), abs=2e-3)
    assert fescape.slope_bias(0.0) == -1.0
    # a shrinking part of the mode on the W0 side (|p| > |q|) lowers the slope, on the W1 side raises it
    assert fescape.slope_bias(1.0, 0.03) == pytest.approx(-0.0105, abs=1e-3)      # measured −1.1 %
    assert fescape.slope_bias(1.0, -0.015) > 0 > fescape.slope_bias(1.0, 0.015)
    s = np.linspace(0.0, 3.0, 3001)
    g = 0.01 * (np.exp(s) + 0.03 * np.exp(-s)) / 1.03
    keep = g <= 0.1
    assert np.polyfit(s[keep], np.log(g[keep]), 1)[0] - 1 == pytest.approx(fescape.slope_bias(1.0, 0.03), abs=1e-4)


def test_restricted_flow_domain_from_the_transverse_gain(ledger):
    """B9 (errata, atlas): a restricted flow is on 𝓜₁ only while σ₂(start)·e^{∫σ_max(M⊥)dt} stays below
    10⁻² × the tolerance; each δ has its own checks, and B15 needs every δ inside."""
    ls = fescape.LSLimit(deltas=np.array([0.025, 0.05]), M_perp=np.zeros((2, 3, 3)), sigma_max=np.array([1e-3, 2e-3]),
                         grad_norm=np.array([1e-14, 1e-14]), off_manifold=np.array([1e-14, 3.4]),
                         sigma2_start=np.array([1e-16, 1e-16]), transverse_gain=np.array([6.0, 134.0]),
                         lambda1=0.03, M1=np.zeros((3, 3)))
    rep = neutral_report(escape.EscapeReport, chain_name="hub family", reached_c2=True, settled=True, ls=ls, sweep=[])
    assert rep.domain_restricted(0) and not rep.domain_restricted(1)
    assert "stays on 𝓜₁" in rep.domain_restricted(1).reason and not rep.domain_all_restricted()
    rep.ls.off_manifold[0] = 1e-3                                           # inside its domain, off 𝓜₁: a failure
    for i, d_ in enumerate(ls.deltas):
        claims.check("B9", float(ls.off_manifold[i]), 0.0, atol=escape.OFF_TOL, domain=rep.domain_restricted(i),
                     what=f"δ = {d_:g}")
    assert [r["verdict"] for r in ledger()] == ["fail", "outside"]


def test_trap_stats_without_settling_is_outside_not_an_error():
    chain = hub_family(4, 0.5, 0.3, 0.4, 0.0)
    t = np.arange(0.0, 101.0, 1.0)
    loss = np.linspace(np.log(5), chain.unigram_entropy() + 0.01, len(t))     # still condensing at t = 100
    run = _fake_run(t, chain, loss=loss, sigma2=np.full(len(t), 1e-3), M_perp_smax=np.full(len(t), 1e-2))
    run.wall_s = 0.0
    out = escape.trap_stats(run, chain)
    assert not out["settled"] and math.isnan(out["t_settle"])
    loss = np.r_[np.linspace(1.6, 1.51, 20), np.full(len(t) - 20, 1.50)]
    out = escape.trap_stats(_fake_run(t, chain, loss=loss, sigma2=np.full(len(t), 4e-3),
                                      M_perp_smax=np.full(len(t), 1e-8)), chain)
    assert out["settled"] and out["t_settle"] == 20.0 and not out["reached_c2"]
    loss[20:] = out["L_c2"]                                                   # the flow sits at θ_c²
    out = escape.trap_stats(_fake_run(t, chain, loss=loss, sigma2=np.full(len(t), 4e-3),
                                      M_perp_smax=np.full(len(t), 1e-8)), chain)
    assert out["reached_c2"] and out["settled"]


def test_escape_stats_tolerates_a_horizon_without_escape():
    t = np.arange(0.0, 100.0, 1.0)
    run = _fake_run(t, sigma2=np.full(len(t), 0.004), M_perp_smax=np.full(len(t), 1e-3), loss=np.ones(len(t)))
    with pytest.raises(ValueError):
        fescape.escape_stats(run, after=10.0)
    st = fescape.escape_stats(run, after=10.0, strict=False)
    assert not st.window_found and math.isnan(st.rate) and math.isnan(st.t_escape)


def test_escape_rate_of_a_clean_exponential_and_its_diagnostics():
    chain = hub_family(2, 0.5, 0.3, 0.4, 0.1)
    t = np.arange(0.0, 400.0, 1.0)
    s2 = 0.004 * np.exp(0.02 * t)
    d, m = chain.d, 3
    # W0 = a uᵀ + (unstable mode x) s2 wᵀ with u = e1, w = e2: σ₂(W0) is the mode, share 1
    A = np.tile(np.eye(d)[None] * 0.0 + chain.pi[None, None, :], (len(t), 1, 1))     # (T, d, d)
    P_hat = np.tile(chain.P[None] * 0.9 + 0.1 / d, (len(t), 1, 1))
    Mp = np.swapaxes(A, -1, -2) @ (chain.pi[:, None] * (chain.P - P_hat))
    x = np.linalg.svd(Mp[0])[0][:, 0]
    a = np.array([1.0, 0.2, 0.2])
    W0 = np.zeros((len(t), d, m))
    W0[:, :, 0] = a
    W0[:, :, 1] = x[None] * s2[:, None]
    u = np.tile(np.eye(m)[0], (len(t), 1))
    run = _fake_run(t, chain, states={"W0": torch.as_tensor(W0)}, sigma2=s2, M_perp_smax=np.full(len(t), 0.02),
                    loss=np.ones(len(t)), A=A, P_hat=P_hat, u=u)
    st = fescape.escape_stats(run, after=0.0)
    assert st.rate == pytest.approx(0.02, rel=1e-9) and st.M_perp_drift == pytest.approx(0.0)
    assert st.window_found and st.sigma2_floor == pytest.approx(0.004)
    assert st.mode_share == pytest.approx(1.0, rel=1e-9) and st.mode_imbalance == 0.0 and abs(st.fit_bias) < 1e-9


def test_b16_domain_names_each_failing_condition():
    st = fescape.EscapeStats(rate=1e-3, window=(1.0, 2.0), M_perp_mean=1e-3, t_escape=50.0, loss_end=1.0,
                             window_sensitivity=0.0, window_found=True, M_perp_drift=0.5, sigma2_floor=0.004,
                             mode_share=0.999)
    row = escape.SweepRow(delta=0.1, run=None, stats=dataclasses.replace(st, M_perp_drift=0.9, sigma2_floor=0.006),
                          bigram=1.0, plateau_drop=0.001, sigma2_at_settle=0.004)
    dom = row.domain(settled=True)
    assert not dom
    assert "M⊥ about constant" in dom.reason and "O(ε) transverse level" in dom.reason
    assert "escape within" not in dom.reason and "still at θ_c²" not in dom.reason and "slope bias" not in dom.reason
    mixed = escape.SweepRow(delta=0.4, run=None, stats=dataclasses.replace(st, mode_share=0.938), bigram=1.0,
                            plateau_drop=0.001, sigma2_at_settle=0.004)      # the atlas point: −2.1 % predicted
    assert not mixed.domain(settled=True) and "slope bias" in mixed.domain(settled=True).reason
    ok = escape.SweepRow(delta=0.1, run=None, stats=st, bigram=1.0, plateau_drop=0.001, sigma2_at_settle=0.004)
    assert ok.domain(settled=True) and not ok.domain(settled=False)


# ----------------------------------------------------------------------------- schema rules (exit 2)
@pytest.mark.parametrize("page, bad, words", [
    ("focus_dilution/escape", dict(chain="dirichlet"), ["chain = 'hub'"]),
    ("focus_dilution/escape", dict(b_h=0.8, deltas=[0.1, 0.9]), ["every δ of deltas"]),
    ("focus_dilution/dilution", dict(b_h=0.8, delta_cycle=0.9), ["delta_cycle keeps the hub family valid"]),
])
def test_parameter_rules_refuse_before_running(page, bad, words, tmp_path):
    with pytest.raises(runner.RunError) as e:
        runner.run_page(page, profile="smoke", parameters=bad, output=tmp_path)
    for w in words:
        assert w in str(e.value)
    assert not any(tmp_path.iterdir())


# ----------------------------------------------------------------------------- pages on other chains
FAR = [dict(n_low=2, a_h=0.785, b_h=0.544, c_cyc=0.883), dict(n_low=6, a_h=0.3, b_h=0.15, c_cyc=0.1)]
RUNS = [("focus_dilution/dilution", p) for p in FAR + [dict(chain="dirichlet", n_low=4, chain_seed=7)]]
RUNS += [("focus_dilution/escape", p) for p in FAR + [dict(n_low=3, a_h=0.7, b_h=0.2, c_cyc=0.2)]]
RUNS += [("focus_dilution/dilution", dict(seed=7)), ("focus_dilution/escape", dict(seed=7))]   # second seed set


@pytest.mark.notebook
@pytest.mark.parametrize("page, parameters", RUNS)
def test_page_on_other_chains_and_seeds(page, parameters, tmp_path):
    res = runner.run_page(page, profile="smoke", parameters=parameters, output=tmp_path)
    recs = json.loads(res.claims_file.read_text())["claims"]
    failed = [r for r in recs if r["verdict"] == "fail"]
    assert recs and not failed, f"{page} with {parameters}: failed claims {failed}"
